// Two-thread SPSC harness: tickgate::SpscRing<Event> vs
// boost::lockfree::spsc_queue<Event, capacity<N>>, producer pinned to core 0
// and consumer to core 1. (a) throughput, 16M events, 5 runs, median;
// (b) round-trip latency through two rings (ping-pong), 1M round trips,
// rdtsc calibrated against steady_clock.
//   ring_bench [--events N] [--runs N] [--roundtrips N] [--json FILE]
#include <x86intrin.h>

#include <atomic>
#include <boost/lockfree/spsc_queue.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "common.hpp"
#include "tickgate/spsc_ring.hpp"

using tickgate::Event;
using Clock = std::chrono::steady_clock;

namespace {

inline void cpu_relax() { _mm_pause(); }

double thread_cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

template <std::size_t N>
struct Tickgate {
    static constexpr const char* kName = "tickgate";
    tickgate::SpscRing<Event> r{N};
    bool push(const Event& e) { return r.try_push(e); }
    void push_batch(const Event* e, std::size_t n) {
        while (r.writable(n) < n) cpu_relax();
        for (std::size_t i = 0; i < n; ++i) r.stage(e[i]);
        r.publish();
    }
    template <class F>
    std::size_t consume(F& f) { return r.consume(f, N); }
    bool pop(Event& out) {
        return r.consume([&](const Event& e) { out = e; }, 1) == 1;
    }
};

template <std::size_t N>
struct Boost {
    static constexpr const char* kName = "boost";
    boost::lockfree::spsc_queue<Event, boost::lockfree::capacity<N>> q;
    bool push(const Event& e) { return q.push(e); }
    void push_batch(const Event* e, std::size_t n) {
        std::size_t done = 0;
        while ((done += q.push(e + done, n - done)) < n) cpu_relax();
    }
    template <class F>
    std::size_t consume(F& f) { return q.consume_all(f); }
    bool pop(Event& out) { return q.pop(out); }
};

struct Sync {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    void arrive_and_wait() {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) cpu_relax();
    }
    Clock::time_point start() {
        while (ready.load() < 2) cpu_relax();
        const auto t = Clock::now();
        go.store(true, std::memory_order_release);
        return t;
    }
};

Event make_event() {
    Event e{};
    e.kind = tickgate::EventKind::kDelta;
    e.channel_id = 1;
    e.instrument_id = 7;
    e.u.delta.price = 110'000'000;
    e.u.delta.qty = 100;
    return e;
}

struct Tput {
    double rate;  // events/s
    double share; // min over both threads of thread CPU time / wall time (< ~0.95: descheduled)
};

// Events per second; `batch` 1 = try_push/push per event, else batches of `batch`.
template <class Q>
Tput throughput(std::uint64_t total, std::size_t batch) {
    auto q = std::make_unique<Q>();
    Sync sync;
    std::uint64_t bad = 0;
    Clock::time_point end, pend;
    double ccpu = 0, pcpu = 0;
    std::thread consumer([&] {
        bench::pin_to(1);
        std::uint64_t expected = 0;
        auto f = [&](const Event& e) { bad += e.u.delta.seq != expected++; };
        sync.arrive_and_wait();
        const double c0 = thread_cpu_s();
        while (expected < total)
            if (q->consume(f) == 0) cpu_relax();
        end = Clock::now();
        ccpu = thread_cpu_s() - c0;
    });
    std::thread producer([&] {
        bench::pin_to(0);
        Event ev[64];
        for (auto& e : ev) e = make_event();
        sync.arrive_and_wait();
        const double c0 = thread_cpu_s();
        struct Done {
            double c0;
            double& out;
            Clock::time_point& t;
            ~Done() {
                out = thread_cpu_s() - c0;
                t = Clock::now();
            }
        } done{c0, pcpu, pend};
        if (batch == 1) {
            for (std::uint64_t i = 0; i < total; ++i) {
                ev[0].u.delta.seq = i;
                while (!q->push(ev[0])) cpu_relax();
            }
        } else {
            for (std::uint64_t i = 0; i < total; i += batch) {
                for (std::size_t k = 0; k < batch; ++k) ev[k].u.delta.seq = i + k;
                q->push_batch(ev, batch);
            }
        }
    });
    const auto start = sync.start();
    producer.join();
    consumer.join();
    if (bad) {
        std::fprintf(stderr, "%s: %llu events out of order\n", Q::kName, static_cast<unsigned long long>(bad));
        std::exit(1);
    }
    const double wall = std::chrono::duration<double>(end - start).count();
    const double pwall = std::chrono::duration<double>(pend - start).count();
    return {static_cast<double>(total) / wall, std::min(ccpu / wall, pcpu / pwall)};
}

double tsc_ghz() {
    const auto t0 = Clock::now();
    const auto c0 = __rdtsc();
    while (Clock::now() - t0 < std::chrono::milliseconds(200)) {}
    const auto c1 = __rdtsc();
    const auto t1 = Clock::now();
    return static_cast<double>(c1 - c0) / static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
}

struct Latency {
    double p50, p90, p99, p999, max;
};

// Round trip: core 0 pushes into ring A; core 1 pops it and pushes it into
// ring B; core 0 pops it. rdtsc around the whole trip.
template <class Q>
Latency round_trip(std::size_t n, double ghz) {
    auto a = std::make_unique<Q>();
    auto b = std::make_unique<Q>();
    const std::size_t warm = 20'000;
    std::vector<std::uint64_t> cycles(n);
    Sync sync;
    std::thread echo([&] {
        bench::pin_to(1);
        sync.arrive_and_wait();
        Event e;
        for (std::size_t i = 0; i < n + warm; ++i) {
            while (!a->pop(e)) cpu_relax();
            while (!b->push(e)) cpu_relax();
        }
    });
    std::thread ping([&] {
        bench::pin_to(0);
        sync.arrive_and_wait();
        Event e = make_event(), back;
        for (std::size_t i = 0; i < n + warm; ++i) {
            e.u.delta.seq = i;
            const auto c0 = __rdtsc();
            while (!a->push(e)) cpu_relax();
            while (!b->pop(back)) cpu_relax();
            const auto c1 = __rdtsc();
            if (back.u.delta.seq != i) std::abort();
            if (i >= warm) cycles[i - warm] = c1 - c0;
        }
    });
    (void)sync.start();
    ping.join();
    echo.join();
    std::sort(cycles.begin(), cycles.end());
    auto pct = [&](double p) {
        const auto k = std::min(n - 1, static_cast<std::size_t>(p * static_cast<double>(n)));
        return static_cast<double>(cycles[k]) / ghz;
    };
    return {pct(0.50), pct(0.90), pct(0.99), pct(0.999), static_cast<double>(cycles.back()) / ghz};
}

struct TputResult {
    std::string mode;
    std::size_t capacity, batch;
    std::vector<double> tg, bo;
    double share = 1;  // worst CPU share seen by a thread in these runs
};

template <std::size_t N>
TputResult tput_pair(const char* mode, std::size_t batch, std::uint64_t events, int runs) {
    TputResult r{mode, N, batch, {}, {}};
    for (int i = 0; i < runs; ++i) {  // interleaved so drift hits both alike
        for (int k = 0; k < 2; ++k) {
            const Tput t = k == 0 ? throughput<Tickgate<N>>(events, batch) : throughput<Boost<N>>(events, batch);
            (k == 0 ? r.tg : r.bo).push_back(t.rate);
            r.share = std::min(r.share, t.share);
        }
    }
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t events = 16'000'000;
    int runs = 5;
    std::size_t roundtrips = 1'000'000;
    std::string json;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--events") events = std::stoull(argv[i + 1]);
        else if (a == "--runs") runs = std::stoi(argv[i + 1]);
        else if (a == "--roundtrips") roundtrips = std::stoull(argv[i + 1]);
        else if (a == "--json") json = argv[i + 1];
        else {
            std::fprintf(stderr, "usage: ring_bench [--events N] [--runs N] [--roundtrips N] [--json FILE]\n");
            return 2;
        }
    }
    events -= events % 64;
    const auto m = bench::machine_info();
    std::printf("CPU: %s | cores: %u | kernel: %s | governor: %s\n", m.cpu.c_str(), m.cores, m.kernel.c_str(), m.governor.c_str());
    if (m.cores < 2) std::printf("warning: fewer than 2 cores, threads share a core\n");
    const double ghz = tsc_ghz();
    std::printf("TSC: %.3f GHz; Event: %zu bytes; %llu events x %d runs (median)\n\n", ghz, sizeof(Event),
                static_cast<unsigned long long>(events), runs);

    std::vector<TputResult> tp;
    tp.push_back(tput_pair<4096>("single", 1, events, runs));
    tp.push_back(tput_pair<4096>("batch8", 8, events, runs));
    tp.push_back(tput_pair<65536>("single", 1, events, runs));
    std::printf("%-8s %8s %16s %16s %8s %10s\n", "mode", "capacity", "tickgate Mev/s", "boost Mev/s", "ratio", "cpu share");
    for (auto& r : tp)
        std::printf("%-8s %8zu %16.1f %16.1f %8.2f %10.2f\n", r.mode.c_str(), r.capacity, bench::median(r.tg) / 1e6,
                    bench::median(r.bo) / 1e6, bench::median(r.tg) / bench::median(r.bo), r.share);
    std::printf("(cpu share: worst thread CPU time / wall time over the runs; below ~0.95 the run was disturbed)\n");

    const Latency lt = round_trip<Tickgate<4096>>(roundtrips, ghz);
    const Latency lb = round_trip<Boost<4096>>(roundtrips, ghz);
    std::printf("\nround trip (ns), %zu trips   p50     p90     p99   p99.9      max\n", roundtrips);
    for (auto [name, l] : {std::pair{"tickgate", lt}, std::pair{"boost", lb}})
        std::printf("%-27s %7.0f %7.0f %7.0f %7.0f %8.0f\n", name, l.p50, l.p90, l.p99, l.p999, l.max);

    if (!json.empty()) {
        using tickgate::json::Value;
        Value doc = {{"machine", bench::machine_json(m)}, {"tsc_ghz", ghz}, {"events", events}, {"runs", runs}};
        Value& throughput = doc["throughput"] = Value::array();
        for (const auto& r : tp)
            throughput.push_back({{"mode", r.mode},
                                  {"capacity", r.capacity},
                                  {"batch", r.batch},
                                  {"tickgate_median", bench::median(r.tg)},
                                  {"boost_median", bench::median(r.bo)},
                                  {"ratio", bench::median(r.tg) / bench::median(r.bo)},
                                  {"cpu_share", r.share},
                                  {"tickgate_runs", r.tg},
                                  {"boost_runs", r.bo}});
        Value& roundtrip = doc["roundtrip_ns"] = {{"trips", roundtrips}};
        for (auto [name, l] : {std::pair{"tickgate", lt}, std::pair{"boost", lb}})
            roundtrip[name] = {{"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}, {"p99_9", l.p999}, {"max", l.max}};
        if (!bench::write_json(json, doc)) return 1;
    }
    return 0;
}
