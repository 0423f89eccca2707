// Receive path: tickgate's batched recvmmsg receive (Receiver::poll_once,
// batch 64) against a plain one-datagram-per-call Boost.Asio
// udp::socket::receive_from loop. Same loopback multicast group/port joined
// on 127.0.0.1, same SO_RCVBUF, same sender thread (tickgate::MulticastSender,
// core 0), same datagrams (valid QFB/1 header, packet_seq counting up, padded
// to the size); the receiver runs on core 1 and only counts and checks
// packet_seq (no decoding), so both sides do the same work per datagram.
//
// Two measurements per datagram size:
//  1. live: the sender paces at increasing rates (or flat out); a point
//     passes when every datagram sent was received (no packet_seq gap, no
//     kernel drop). Reports the highest zero-loss rate of each receiver, the
//     receiver's CPU time per datagram (CLOCK_THREAD_CPUTIME_ID) and the
//     syscalls it made per datagram.
//  2. drain: with the receiver paused, the sender queues K datagrams (as many
//     as the socket buffer takes without a drop); then the receiver empties
//     the buffer, timed. Receive cost alone, independent of the sender.
//
//   rx_bench [--sizes 200,1400] [--rates 50k,100k,...,flat] [--seconds S]
//            [--mode blocking|busy|both] [--rounds N] [--nice N] [--json FILE]
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <sys/socket.h>
#include <time.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/multicast.hpp>
#include <boost/asio/ip/udp.hpp>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/qfb1/wire.hpp"

namespace {

namespace asio = boost::asio;
using tickgate::qfb1::load_le;
using tickgate::qfb1::store_le;

std::int64_t thread_cpu_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}
using bench::mono_ns;
using bench::wait_until;

struct Options {
    std::vector<std::size_t> sizes{200, 1400};
    std::vector<double> rates{50'000, 100'000, 200'000, 300'000, 400'000, 600'000, 800'000, 0};  // 0 = flat out
    double seconds = 2;
    bool blocking = true, busy = true;
    int rounds = 300;
    std::string json;
    std::string group = "239.255.43.1", idle_group = "239.255.43.2";
    std::uint16_t port = 42501;
    std::optional<int> nice;
    std::int32_t rcvbuf = 8 << 20;  // tickgate's default receiver.rcvbuf_bytes
    std::string argv_line;
};

[[noreturn]] void usage(const char* msg) {
    std::fprintf(stderr,
                 "rx_bench: %s\nusage: rx_bench [--sizes 200,1400] [--rates 50k,100k,...,flat] [--seconds S]\n"
                 "                [--mode blocking|busy|both] [--rounds N] [--nice N] [--json FILE]\n",
                 msg);
    std::exit(2);
}

double parse_rate(const std::string& t) {
    if (t == "flat" || t == "0") return 0;
    const auto v = bench::parse_rate(t);
    if (!v) usage(("bad rate " + t).c_str());
    return *v;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 0; i < argc; ++i) o.argv_line += (i ? " " : "") + std::string(argv[i]);
    auto need = [&](int& i) -> std::string {
        if (i + 1 >= argc) usage((std::string(argv[i]) + " needs a value").c_str());
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--sizes") {
            o.sizes.clear();
            std::stringstream ss(need(i));
            for (std::string t; std::getline(ss, t, ',');) o.sizes.push_back(std::stoul(t));
        } else if (a == "--rates") {
            o.rates.clear();
            std::stringstream ss(need(i));
            for (std::string t; std::getline(ss, t, ',');) o.rates.push_back(parse_rate(t));
        } else if (a == "--seconds") o.seconds = std::stod(need(i));
        else if (a == "--mode") {
            const std::string m = need(i);
            o.blocking = m == "blocking" || m == "both";
            o.busy = m == "busy" || m == "busy_poll" || m == "both";
            if (!o.blocking && !o.busy) usage("--mode: blocking, busy or both");
        } else if (a == "--rounds") o.rounds = std::stoi(need(i));
        else if (a == "--json") o.json = need(i);
        else if (a == "--nice") o.nice = std::stoi(need(i));
        else if (a == "--port") o.port = static_cast<std::uint16_t>(std::stoul(need(i)));
        else usage(("unknown option " + a).c_str());
    }
    for (auto s : o.sizes)
        if (s < tickgate::qfb1::kPacketHeaderSize || s > tickgate::qfb1::kMaxDatagram) usage("sizes: 28..1400");
    return o;
}

// ------------------------------------------------------------------ receivers
// Both receivers: non-blocking drain of everything queued (`wait_ns` 0) or
// wait up to wait_ns for data first. Each counts datagrams and checks
// packet_seq; returns datagrams taken.
struct Counter {
    static constexpr std::uint64_t kSentinel = ~std::uint64_t{0};  // "the run is over" (never counted)
    std::uint64_t received = 0, gaps = 0, bytes = 0, last_seq = 0, syscalls = 0;
    bool stop = false;
    void take(std::span<const std::byte> d) noexcept {
        const std::uint64_t seq = load_le<std::uint64_t>(d.data() + 12);
        if (seq == kSentinel) {
            stop = true;
            return;
        }
        if (seq != last_seq + 1) gaps += seq > last_seq ? seq - last_seq - 1 : 0;
        last_seq = seq;
        ++received;
        bytes += d.size();
    }
};

class TickgateRx {
public:
    static constexpr const char* kName = "tickgate recvmmsg(64)";
    explicit TickgateRx(const Options& o) : rx_(config(o)) {}
    static tickgate::Config config(const Options& o) {
        tickgate::Config cfg;
        tickgate::ChannelConfig ch;
        ch.id = 43;
        ch.a = {o.group, o.port, "127.0.0.1"};
        ch.b = {o.idle_group, static_cast<std::uint16_t>(o.port + 1), "127.0.0.1"};  // no traffic
        cfg.channels.push_back(ch);
        cfg.receiver.batch = 64;
        cfg.receiver.rcvbuf_bytes = o.rcvbuf;
        return cfg;
    }
    std::size_t poll(std::int64_t wait_ns, Counter& c) {
        c.syscalls += (wait_ns > 0 ? 1 : 0) + 2;  // ppoll + recvmmsg on line A and on the idle line B
        return static_cast<std::size_t>(rx_.poll_once(wait_ns, [&](const tickgate::RawDatagram& d) { c.take(d.payload); }));
    }
    std::uint64_t kernel_drops() const {
        std::uint64_t n = 0;
        for (const auto& l : rx_.lines()) n += l->kernel_drops.get();
        return n;
    }

private:
    tickgate::Receiver rx_;
};

class AsioRx {
public:
    static constexpr const char* kName = "asio receive_from";
    explicit AsioRx(const Options& o) : sock_(io_) {
        const auto group = asio::ip::make_address_v4(o.group);
        sock_.open(asio::ip::udp::v4());
        sock_.set_option(asio::socket_base::reuse_address(true));
        sock_.set_option(asio::socket_base::receive_buffer_size(o.rcvbuf));
        sock_.bind(asio::ip::udp::endpoint(group, o.port));
        sock_.set_option(asio::ip::multicast::join_group(group, asio::ip::make_address_v4("127.0.0.1")));
        // No SO_RXQ_OVFL here (receive_from has no control data): loss is
        // counted from packet_seq and sent - received instead.
    }
    // wait_ns > 0: one blocking receive_from (one datagram per call; the
    // run ends with a sentinel datagram). wait_ns == 0: non-blocking
    // receive_from until the socket is empty.
    std::size_t poll(std::int64_t wait_ns, Counter& c) {
        boost::system::error_code ec;
        if (wait_ns > 0) {
            set_non_blocking(false);
            ++c.syscalls;
            const std::size_t len = sock_.receive_from(asio::buffer(buf_), from_, 0, ec);
            if (ec) return 0;
            c.take({buf_, len});
            return 1;
        }
        set_non_blocking(true);
        std::size_t n = 0;
        for (;;) {
            ++c.syscalls;
            const std::size_t len = sock_.receive_from(asio::buffer(buf_), from_, 0, ec);
            if (ec) break;
            c.take({buf_, len});
            ++n;
        }
        return n;
    }
    std::uint64_t kernel_drops() const { return 0; }

private:
    void set_non_blocking(bool nb) {
        if (nb != non_blocking_) {
            sock_.non_blocking(nb);
            non_blocking_ = nb;
        }
    }
    asio::io_context io_;
    asio::ip::udp::socket sock_;
    asio::ip::udp::endpoint from_;
    bool non_blocking_ = false;
    alignas(64) std::byte buf_[2048];
};

int effective_rcvbuf(const Options& o) {
    asio::io_context io;
    asio::ip::udp::socket s(io);
    s.open(asio::ip::udp::v4());
    s.set_option(asio::socket_base::receive_buffer_size(o.rcvbuf));
    asio::socket_base::receive_buffer_size got;
    s.get_option(got);
    return got.value();
}

// ------------------------------------------------------------------ sender
class Sender {
public:
    Sender(const Options& o, std::size_t size) : tx_("127.0.0.1"), group_(*tickgate::parse_ipv4(o.group)), port_(o.port), buf_(size) {
        store_le<std::uint16_t>(buf_.data(), tickgate::qfb1::kMagic);
        store_le<std::uint8_t>(buf_.data() + 2, tickgate::qfb1::kVersion);
        store_le<std::uint16_t>(buf_.data() + 6, 43);
        store_le<std::uint32_t>(buf_.data() + 8, 1);
    }
    bool send() noexcept { return send_seq(++seq_); }
    bool send_sentinel() noexcept { return send_seq(Counter::kSentinel); }
    bool send_seq(std::uint64_t seq) noexcept {
        store_le<std::uint64_t>(buf_.data() + 12, seq);
        store_le<std::int64_t>(buf_.data() + 20, tickgate::realtime_ns());
        return tx_.send(group_, port_, buf_);
    }
    [[nodiscard]] std::uint64_t seq() const noexcept { return seq_; }

private:
    tickgate::MulticastSender tx_;
    std::uint32_t group_;
    std::uint16_t port_;
    std::vector<std::byte> buf_;
    std::uint64_t seq_ = 0;
};

struct LivePoint {
    std::string receiver;
    bool blocking = false;
    std::size_t size = 0;
    double offered = 0;  // 0 = flat out
    double sent_rate = 0, recv_rate = 0;
    std::uint64_t sent = 0, send_errors = 0, received = 0, gaps = 0, kernel_drops = 0, syscalls = 0;
    double cpu_ns_per_pkt = 0, cpu_util = 0;
    [[nodiscard]] bool zero_loss() const { return send_errors == 0 && received == sent && gaps == 0 && kernel_drops == 0; }
};

template <class Rx>
LivePoint run_live(const Options& o, std::size_t size, double rate, bool blocking) {
    LivePoint p;
    p.receiver = Rx::kName;
    p.blocking = blocking;
    p.size = size;
    p.offered = rate;
    Rx rx(o);
    Counter c;
    std::atomic<bool> done{false}, finished{false};
    std::atomic<std::uint64_t> sent{0};
    std::int64_t t_first = 0, t_last = 0;
    const double target = rate > 0 ? rate : 0;
    const auto total = static_cast<std::uint64_t>(rate > 0 ? rate * o.seconds : 2e6 * o.seconds);
    std::uint64_t errors = 0;
    std::thread sender([&] {
        bench::pin_to(0);
        ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        Sender s(o, size);
        const std::int64_t base = mono_ns() + 20'000'000;
        const std::int64_t flat_end = base + static_cast<std::int64_t>(o.seconds * 1e9);
        wait_until(base, 0);
        t_first = mono_ns();
        for (std::uint64_t k = 0; k < total; ++k) {
            if (target > 0) wait_until(base + static_cast<std::int64_t>(static_cast<long double>(k) * 1e9L / target), 2000);
            else if ((k & 255) == 0 && mono_ns() >= flat_end) break;
            if (!s.send()) ++errors;
        }
        t_last = mono_ns();
        sent.store(s.seq());
        done.store(true, std::memory_order_release);
        // A receiver blocked in receive_from for datagrams that were lost
        // is released by a sentinel after 300 ms.
        for (int i = 0; i < 100 && !finished.load(); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(i < 6 ? 50 : 20));
            if (i >= 5 && !finished.load()) s.send_sentinel();
        }
    });
    bench::pin_to(1);
    const std::int64_t wait = blocking ? 50'000'000 : 0;
    std::int64_t idle_since = 0, first_rx = 0, last_rx = 0;
    const std::int64_t cpu0 = thread_cpu_ns();
    std::int64_t cpu1 = 0;
    for (;;) {
        const std::size_t n = rx.poll(wait, c);
        if (n != 0 && c.received) {
            last_rx = mono_ns();
            if (!first_rx) first_rx = last_rx;
            idle_since = 0;
        }
        const bool all = done.load(std::memory_order_acquire) && c.received >= sent.load();
        if (all || c.stop) break;
        if (n != 0 || !done.load(std::memory_order_acquire)) continue;
        const std::int64_t now = mono_ns();
        if (!idle_since) idle_since = now;
        else if (now - idle_since > 200'000'000) break;
    }
    cpu1 = thread_cpu_ns();
    finished.store(true);
    sender.join();
    p.sent = sent.load();
    p.send_errors = errors;
    p.received = c.received;
    p.gaps = c.gaps + (p.sent > c.last_seq ? p.sent - c.last_seq : 0);  // tail loss too
    p.kernel_drops = rx.kernel_drops();
    p.syscalls = c.syscalls;
    p.sent_rate = t_last > t_first ? static_cast<double>(p.sent) * 1e9 / static_cast<double>(t_last - t_first) : 0;
    p.recv_rate = last_rx > first_rx ? static_cast<double>(c.received) * 1e9 / static_cast<double>(last_rx - first_rx) : 0;
    // CPU per datagram means something only for a blocking receiver (a busy
    // one burns its core whatever arrives): reported as 0 for busy.
    if (blocking) {
        p.cpu_ns_per_pkt = c.received ? static_cast<double>(cpu1 - cpu0) / static_cast<double>(c.received) : 0;
        p.cpu_util = last_rx > first_rx ? static_cast<double>(cpu1 - cpu0) / static_cast<double>(last_rx - first_rx) : 0;
    }
    return p;
}

struct DrainPoint {
    std::string receiver;
    std::size_t size = 0;
    std::uint64_t queued = 0;  // datagrams per round
    int rounds = 0;
    double pps = 0, ns_per_pkt = 0, syscalls_per_pkt = 0;
    std::uint64_t lost = 0;
};

// Queue `queued` datagrams with the receiver idle, then time the drain.
template <class Rx>
DrainPoint run_drain(const Options& o, std::size_t size, std::uint64_t queued) {
    DrainPoint d;
    d.receiver = Rx::kName;
    d.size = size;
    d.queued = queued;
    d.rounds = o.rounds;
    Rx rx(o);
    Sender s(o, size);
    bench::pin_to(0);  // the sender part runs here, on core 0, while nothing reads
    Counter c;
    std::int64_t busy_ns = 0;
    std::uint64_t taken = 0, sys0 = 0;
    for (int r = 0; r < o.rounds; ++r) {
        bench::pin_to(0);
        for (std::uint64_t i = 0; i < queued; ++i) s.send();
        bench::pin_to(1);
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // settle on core 1
        const std::uint64_t before = c.received;
        sys0 = c.syscalls;
        const std::int64_t t0 = mono_ns();
        while (c.received - before < queued) {
            if (rx.poll(0, c) == 0 && mono_ns() - t0 > 50'000'000) break;  // some were dropped
        }
        const std::int64_t t1 = mono_ns();
        busy_ns += t1 - t0;
        taken += c.received - before;
        d.syscalls_per_pkt += static_cast<double>(c.syscalls - sys0);
        if (c.received - before < queued) busy_ns -= 50'000'000;  // do not count the give-up wait
    }
    d.lost = static_cast<std::uint64_t>(o.rounds) * queued - taken;
    d.pps = busy_ns > 0 ? static_cast<double>(taken) * 1e9 / static_cast<double>(busy_ns) : 0;
    d.ns_per_pkt = taken ? static_cast<double>(busy_ns) / static_cast<double>(taken) : 0;
    d.syscalls_per_pkt = taken ? d.syscalls_per_pkt / static_cast<double>(taken) : 0;
    return d;
}

std::string fmt_rate(double r) {
    if (r == 0) return "flat";
    char b[32];
    if (r >= 1e6) std::snprintf(b, sizeof b, "%.2fM", r / 1e6);
    else std::snprintf(b, sizeof b, "%.0fk", r / 1e3);
    return b;
}

void print_live(const LivePoint& p) {
    std::printf("  %-22s %-8s %5zu %8s %9s %9s %10" PRIu64 " %10" PRIu64 " %6" PRIu64 " %8.0f %7.0f%% %7.2f  %s\n",
                p.receiver.c_str(), p.blocking ? "blocking" : "busy", p.size, fmt_rate(p.offered).c_str(),
                fmt_rate(p.sent_rate).c_str(), fmt_rate(p.recv_rate).c_str(), p.sent, p.received,
                p.sent - std::min(p.sent, p.received), p.cpu_ns_per_pkt, 100 * p.cpu_util,
                p.received ? static_cast<double>(p.syscalls) / static_cast<double>(p.received) : 0.0,
                p.zero_loss() ? "ok" : "LOSS");
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    if (o.nice) bench::set_priority(*o.nice, "rx_bench");
    try {
        const auto mi = bench::machine_info();
        std::ifstream la("/proc/loadavg");
        std::string l1, l5, l15;
        la >> l1 >> l5 >> l15;
        std::printf("== machine: %s, %u cores, %s, load %s %s %s\n", mi.cpu.c_str(), mi.cores, mi.kernel.c_str(),
                    l1.c_str(), l5.c_str(), l15.c_str());
        std::ifstream agf("/proc/self/autogroup");
        std::string ag;
        std::getline(agf, ag);
        std::printf("== nice %d (inherited by the sender thread), %s\n", ::getpriority(PRIO_PROCESS, 0),
                    ag.empty() ? "no autogroup" : ag.c_str());
        std::printf("== SO_RCVBUF asked %d, effective %d (both receivers); sender core 0, receiver core 1\n", o.rcvbuf,
                    effective_rcvbuf(o));
        std::printf("== tickgate's Receiver always opens both lines of a channel: each poll_once does recvmmsg on "
                    "line A (traffic) and line B (idle)\n");

        std::vector<LivePoint> live;
        std::vector<DrainPoint> drains;
        struct Best {
            std::size_t size;
            bool blocking;
            double tg = 0, asio = 0;
        };
        std::vector<Best> best;

        for (const std::size_t size : o.sizes) {
            std::printf("\n== live, %zu-byte datagrams, %.1f s per point\n", size, o.seconds);
            std::printf("  %-22s %-8s %5s %8s %9s %9s %10s %10s %6s %8s %8s %7s\n", "receiver", "mode", "size", "offered",
                        "sent/s", "recv/s", "sent", "received", "lost", "cpu ns/p", "rx cpu", "sys/pkt");
            for (const bool blocking : {true, false}) {
                if ((blocking && !o.blocking) || (!blocking && !o.busy)) continue;
                Best b{size, blocking};
                for (const double rate : o.rates) {
                    // Interleave the two receivers at each rate so drift in machine load hits both alike.
                    const LivePoint t = run_live<TickgateRx>(o, size, rate, blocking);
                    print_live(t);
                    const LivePoint a = run_live<AsioRx>(o, size, rate, blocking);
                    print_live(a);
                    if (t.zero_loss()) b.tg = std::max(b.tg, t.sent_rate);
                    if (a.zero_loss()) b.asio = std::max(b.asio, a.sent_rate);
                    live.push_back(t);
                    live.push_back(a);
                }
                best.push_back(b);
            }

            // Drain: how many fit without a drop? Start from the buffer estimate, halve on loss.
            std::uint64_t queued = static_cast<std::uint64_t>(effective_rcvbuf(o)) / (size + 900);
            for (int tries = 0; tries < 6; ++tries) {
                Options probe = o;
                probe.rounds = 3;
                const DrainPoint t = run_drain<TickgateRx>(probe, size, queued);
                const DrainPoint a = run_drain<AsioRx>(probe, size, queued);
                if (t.lost == 0 && a.lost == 0) break;
                queued = queued * 3 / 4;
            }
            std::printf("\n== drain, %zu-byte datagrams: %" PRIu64 " queued per round, %d rounds (receiver alone on core 1)\n",
                        size, queued, o.rounds);
            std::printf("  %-22s %12s %10s %10s %8s\n", "receiver", "pkts/s", "ns/pkt", "sys/pkt", "lost");
            for (int rep = 0; rep < 2; ++rep) {  // A B A B: drift shows as a spread between repeats
                for (int which = 0; which < 2; ++which) {
                    const DrainPoint d = which == 0 ? run_drain<TickgateRx>(o, size, queued) : run_drain<AsioRx>(o, size, queued);
                    std::printf("  %-22s %12.0f %10.1f %10.3f %8" PRIu64 "\n", d.receiver.c_str(), d.pps, d.ns_per_pkt,
                                d.syscalls_per_pkt, d.lost);
                    std::fflush(stdout);
                    drains.push_back(d);
                }
            }
        }

        std::printf("\n== summary: highest zero-loss receive rate (datagrams/s actually sent and all received)\n");
        std::printf("  %5s %-8s %14s %14s %8s\n", "size", "mode", "tickgate", "asio", "ratio");
        for (const auto& b : best)
            std::printf("  %5zu %-8s %14.0f %14.0f %8.2f\n", b.size, b.blocking ? "blocking" : "busy", b.tg, b.asio,
                        b.asio > 0 ? b.tg / b.asio : 0.0);
        std::printf("\n== summary: drain throughput (median of repeats), datagrams/s\n");
        std::printf("  %5s %14s %14s %8s\n", "size", "tickgate", "asio", "ratio");
        for (const std::size_t size : o.sizes) {
            std::vector<double> t, a;
            for (const auto& d : drains)
                if (d.size == size) (d.receiver == TickgateRx::kName ? t : a).push_back(d.pps);
            const double mt = bench::median(t), ma = bench::median(a);
            std::printf("  %5zu %14.0f %14.0f %8.2f\n", size, mt, ma, ma > 0 ? mt / ma : 0.0);
        }

        if (!o.json.empty()) {
            using tickgate::json::Value;
            Value doc = {{"tool", "rx_bench"}, {"command", o.argv_line}, {"machine", bench::machine_json(mi)},
                         {"rcvbuf_effective", effective_rcvbuf(o)}};
            Value& live_rows = doc["live"] = Value::array();
            for (const auto& p : live)
                live_rows.push_back({{"receiver", p.receiver},
                                     {"mode", p.blocking ? "blocking" : "busy"},
                                     {"size", p.size},
                                     {"offered", p.offered},
                                     {"sent_rate", std::llround(p.sent_rate)},
                                     {"recv_rate", std::llround(p.recv_rate)},
                                     {"sent", p.sent},
                                     {"received", p.received},
                                     {"send_errors", p.send_errors},
                                     {"gaps", p.gaps},
                                     {"kernel_drops", p.kernel_drops},
                                     {"cpu_ns_per_pkt", p.cpu_ns_per_pkt},
                                     {"cpu_util", p.cpu_util},
                                     {"syscalls", p.syscalls},
                                     {"zero_loss", p.zero_loss()}});
            Value& drain_rows = doc["drain"] = Value::array();
            for (const auto& d : drains)
                drain_rows.push_back({{"receiver", d.receiver},
                                      {"size", d.size},
                                      {"queued", d.queued},
                                      {"rounds", d.rounds},
                                      {"pps", std::llround(d.pps)},
                                      {"ns_per_pkt", d.ns_per_pkt},
                                      {"syscalls_per_pkt", d.syscalls_per_pkt},
                                      {"lost", d.lost}});
            Value& best_rows = doc["max_zero_loss"] = Value::array();
            for (const auto& b : best)
                best_rows.push_back({{"size", b.size},
                                     {"mode", b.blocking ? "blocking" : "busy"},
                                     {"tickgate", std::llround(b.tg)},
                                     {"asio", std::llround(b.asio)}});
            if (!bench::write_json(o.json, doc)) return 1;
            std::printf("\n== wrote %s\n", o.json.c_str());
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rx_bench: %s\n", e.what());
        return 1;
    }
}
