// fanout_bench: the fan-out (issue 27) on loopback, against a nats-server
// with JetStream it starts on a free 127.0.0.1 port (PATH: nats-server).
//
//   1. throughput: an engine thread offers records as fast as it can for
//      --seconds over --instruments instruments; offered/s, published/s and
//      the share conflated (what the publisher thread and the NATS client sustain);
//   2. latency at a fixed rate (--rate offers/s, spread over the instruments):
//      offer on the engine thread -> the consumer's view handed out
//      (Consumer::on_update on its poll thread), p50 / p90 / p99 / max, and
//      publish (encoded on the publisher thread) -> the same;
//   3. a slow consumer (--slow-us per message, a pending limit of 64) at
//      the same rate: what it was told, dropped and repaired by snapshots.
// Prints one JSON document. Not a test: figures depend on the machine.
// usage: fanout_bench [--seconds S] [--instruments N] [--rate R] [--slow-us U]
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../feed/json_writer.hpp"
#include "tickgate/fanout/consumer.hpp"
#include "tickgate/fanout/publisher.hpp"
#include "tickgate/feed/clock.hpp"

namespace {

using namespace tickgate;
using namespace tickgate::fanout;
using Clock = std::chrono::steady_clock;

struct Server {
    pid_t pid = 0;
    std::uint16_t port = 0;
    std::string dir;
    Server() {
        const int s = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0)
            throw std::runtime_error("no free port");
        port = ntohs(a.sin_port);
        ::close(s);
        dir = (std::filesystem::temp_directory_path() / ("tickgate-fanout-bench-" + std::to_string(::getpid()))).string();
        const std::string p = std::to_string(port);
        const char* argv[] = {"nats-server", "-a", "127.0.0.1", "-p", p.c_str(), "-js", "-sd", dir.c_str(), nullptr};
        posix_spawn_file_actions_t quiet;  // its log is not ours to print
        posix_spawn_file_actions_init(&quiet);
        posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
        const int spawned = ::posix_spawnp(&pid, "nats-server", &quiet, nullptr, const_cast<char* const*>(argv), environ);
        posix_spawn_file_actions_destroy(&quiet);
        if (spawned != 0)
            throw std::runtime_error("cannot start nats-server (apt-get install nats-server)");
        std::this_thread::sleep_for(std::chrono::milliseconds(700));
    }
    ~Server() {
        ::kill(pid, SIGTERM);
        ::waitpid(pid, nullptr, 0);
        std::filesystem::remove_all(dir);
    }
    [[nodiscard]] std::string url() const { return "nats://127.0.0.1:" + std::to_string(port); }
};

Record make(std::uint32_t id, std::int64_t px, std::uint32_t depth) {
    Record r;
    r.instrument = id;
    r.verdict = GateReason::kOk;
    std::snprintf(r.symbol, sizeof r.symbol, "SYM%03u", id);
    r.n_bids = r.n_asks = static_cast<std::uint8_t>(depth);
    for (std::uint32_t l = 0; l < depth; ++l) {
        r.bids[l] = {px - l, 100 + l};
        r.asks[l] = {px + 1 + l, 100 + l};
    }
    return r;
}

double pct(std::vector<std::int64_t>& v, double p) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return static_cast<double>(v[k]) / 1000.0;  // µs
}

json::Value latency_json(std::vector<std::int64_t> v) {
    return {{"samples", v.size()}, {"p50_us", pct(v, 0.5)}, {"p90_us", pct(v, 0.9)}, {"p99_us", pct(v, 0.99)},
            {"max_us", pct(v, 1.0)}};
}

// Offers at `rate` per second (0: as fast as possible) for `seconds`;
// returns the offers made.
std::uint64_t engine(ConflatingRing& ring, std::uint32_t instruments, std::uint32_t depth, double rate, double seconds) {
    const auto t0 = Clock::now();
    const auto end = t0 + std::chrono::duration<double>(seconds);
    std::uint64_t n = 0;
    for (;; ++n) {
        if (rate > 0) {  // what is due by now, then sleep: the other threads need the cores
            const auto due = t0 + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(static_cast<double>(n) / rate));
            if (Clock::now() < due) std::this_thread::sleep_until(due);
        }
        if ((n & 255) == 0 && Clock::now() >= end) break;
        Record r = make(static_cast<std::uint32_t>(n % instruments), 1'000'000 + static_cast<std::int64_t>(n % 1000), depth);
        r.recv_ns = realtime_ns();  // the engine's offer time
        ring.offer(r);
    }
    return n;
}

struct Run {
    json::Value out;
};

json::Value phase(const Server& server, const std::string& stream, const std::string& prefix, std::uint32_t instruments, std::uint32_t depth,
                  double rate, double seconds, int slow_us) {
    FanoutConfig fc;
    fc.servers = {server.url()};
    fc.stream = stream;
    fc.prefix = prefix;
    fc.depth = depth;
    ConflatingRing ring(instruments, depth);
    Publisher pub(fc, "bench", ring);
    pub.start();
    while (!pub.connected()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the stream declared
    ConsumerOptions co;
    co.servers = fc.servers;
    co.stream = stream;
    if (slow_us > 0) co.pending_limit = 64;
    Consumer consumer(co, {prefix + ".>"});
    consumer.set_processing_delay_us(slow_us);
    std::vector<std::int64_t> from_offer, from_publish;
    from_offer.reserve(1 << 20);
    from_publish.reserve(1 << 20);
    consumer.on_update([&](const std::string&, const InstrumentView& v) {
        const std::int64_t now = realtime_ns();
        from_offer.push_back(now - v.record.recv_ns);
        from_publish.push_back(now - v.record.publish_ns);
    });
    std::atomic<bool> done{false};
    std::uint64_t offered = 0;
    std::thread eng([&] {
        offered = engine(ring, instruments, depth, rate, seconds);
        done.store(true);
    });
    while (!done.load()) consumer.poll(5);
    eng.join();
    const auto settle = Clock::now() + std::chrono::seconds(2);
    while (Clock::now() < settle) consumer.poll(20);
    pub.stop();
    const auto t = consumer.tracker_counters();
    const auto c = consumer.counters();
    json::Value out = {{"rate_per_s", rate},
                       {"seconds", seconds},
                       {"instruments", instruments},
                       {"depth", depth},
                       {"offered", offered},
                       {"offered_per_s", static_cast<double>(offered) / seconds},
                       {"conflated", ring.counters().conflated.get()},
                       {"published", pub.counters().published.get()},
                       {"published_per_s", static_cast<double>(pub.counters().published.get()) / seconds},
                       {"dropped", pub.counters().dropped.get()},
                       {"consumer_records", t.records},
                       {"consumer_gaps", t.gaps},
                       {"consumer_lost", t.lost},
                       {"consumer_snapshots", t.snapshots},
                       {"slow_consumer_notices", c.slow_consumer},
                       {"client_dropped", c.dropped}};
    if (slow_us == 0) {
        out["offer_to_view"] = latency_json(from_offer);
        out["publish_to_view"] = latency_json(from_publish);
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    double seconds = 3, rate = 20'000;
    std::uint32_t instruments = 100;
    int slow_us = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        if (k == "--seconds") seconds = std::atof(argv[i + 1]);
        else if (k == "--instruments") instruments = static_cast<std::uint32_t>(std::atoi(argv[i + 1]));
        else if (k == "--rate") rate = std::atof(argv[i + 1]);
        else if (k == "--slow-us") slow_us = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: fanout_bench [--seconds S] [--instruments N] [--rate R] [--slow-us U]\n");
            return 2;
        }
    }
    try {
        Server server;
        json::Value out;
        out["throughput"] = phase(server, "BENCH1", "b1", instruments, 5, 0, seconds, 0);
        out["latency"] = phase(server, "BENCH2", "b2", instruments, 5, rate, seconds, 0);
        out["slow_consumer"] = phase(server, "BENCH3", "b3", instruments, 5, rate, seconds, slow_us);
        std::printf("%s", json::dump(out).c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fanout_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
