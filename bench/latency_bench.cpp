// Tick-to-book latency of the live path, on loopback multicast.
//
// A sender thread (core 0) publishes QFB/1 datagrams (Q and D messages for
// instruments 1..64, every seq in order) on a fixed schedule at --rate
// messages/s; send_time_ns is patched with CLOCK_REALTIME just before each
// sendto. A FeedHandler (network thread + this engine thread, core 1, which
// spins on poll()) applies them; for every applied Q/D message the engine
// takes realtime_ns() inside the update callback and records
//   tick-to-book = book time - send_time_ns      (sender -> book, one host clock)
//   own share    = book time - Event::recv_ns    (kernel receive stamp -> book)
//   kernel tx    = recv_ns  - send_time_ns       (sendto -> kernel stamp)
//   from schedule= book time - scheduled send time (carried in source_ns)
// in log-linear histograms (1 ns .. 10 s, 3 significant digits). The
// coordinated-omission corrected histograms (HdrHistogram's
// recordValueWithExpectedInterval, applied after the run as Hdr's
// copyCorrectedForCoordinatedOmission does) use the expected interval between
// datagrams (batch / rate).
//
// --protocol (default qfb1, as above): what the sender publishes and which
// handlers receive it, BasicFeedHandler<P> / BasicInlineFeedHandler<P>; the
// same schedule, sockets, modes and rows. A "workload" per protocol (below)
// is all that differs: the config keys, datagrams sent once before the
// schedule, the schedule's datagrams, where the send time is patched, which
// updates are timed.
//   mdp3:   one MDIncrementalRefreshBook46 of --batch MBP entries per packet,
//           64 SecurityIDs learnt from the entries (no definition or
//           snapshot feed; 10 levels a side, New/Change/Delete); send time in
//           the packet header's SendingTime (ns since epoch, Event::send_ns),
//           schedule in TransactTime; timed: every applied book entry.
//   itch50: a MoldUDP64 session; system events and a stock directory (R)
//           for locates 1..64 first (untimed), then --batch order messages
//           (A/E/X/D/U) per packet; send time in every message's timestamp
//           (ns since midnight, [itch] utc_offset_minutes = 0 so venue time is
//           UTC; the reader takes the day from its book time: exact while a
//           message is younger than 12 h), schedule from the message's stream
//           position (--batch consecutive positions per packet); timed:
//           every applied order message.
// So each protocol's tick-to-book row is sender CLOCK_REALTIME at sendto ->
// book, carried in the protocol's own fields. --stages is QFB/1's only.
//
//   latency_bench [--protocol qfb1|mdp3|itch50]
//                 [--rate N | --rates A,B,C] [--seconds S] [--warmup S]
//                 [--mode blocking|busy_poll|inline|both|all|A,B] [--stages]
//                 [--batch N] [--lines a|ab]
//                 [--json FILE] [--hist-out PREFIX]
//                 [--max-rate [--start-rate N] [--confirm-seconds S] [--tolerance F]]
//                 [--sender-cpu N] [--engine-cpu N] [--net-cpu N]
//                 [--spin-us N] [--nice N] [--engine-idle spin|yield]
//                 [--tag NAME] [--group-a G] [--group-b G] [--port P]
//
// --mode inline: run to completion (InlineFeedHandler): the main thread,
// pinned to --engine-cpu, receives, arbitrates, decodes, sequences, books
// and times each update in the callback, spinning on recvmmsg (it always
// spins: --engine-idle and --net-cpu do not apply; there is no network
// thread and no ring). --mode takes a comma list (blocking,busy_poll,inline)
// or both (blocking,busy_poll) or all: the modes run one after the other in
// one invocation, on the same schedule, so the summary compares them.
//
// --stages (inline only): a per-stage breakdown of each applied Q/D
// message's path, from clock_gettime(CLOCK_REALTIME) stamps taken in the
// process (a probe of the inline handler and a book wrapper, compiled into
// this harness only) against the kernel receive stamp:
//   kernel stamp -> recvmmsg returned -> decoded -> sequenced (book entered)
//   -> book updated -> callback
// The cost of one stamp (the median of back-to-back clock reads) is printed
// with it: each stage after the first includes one.
//
// --engine-idle yield: the engine calls sched_yield() whenever poll() finds
// nothing, so a network thread pinned to the engine's core (--net-cpu 1)
// runs as soon as it is woken (blocking mode: core 0 is left to the sender);
// in busy-poll mode the network thread yields too (threading.busy_poll_idle).
//
// Threads: sender on --sender-cpu (0); engine = main thread on --engine-cpu
// (1), spinning on poll(); network thread on --net-cpu (default: the
// sender's core; -1 = unpinned). --spin-us: the sender sleeps until that
// long before each scheduled send, then spins (VM timer wake-ups are ~50 us
// late; a large value gives exact pacing but burns the sender's core).
//
// --nice N: the process starts its own session (so sched_autogroup weighs it
// against the rest of the machine; run it under `setsid` from an interactive
// shell), sets that autogroup's nice and its own; every thread inherits it.
// On a shared, loaded machine -20 keeps other work from time-slicing the
// measured threads.
//
// --max-rate: doubling from --start-rate until a point fails, then geometric
// bisection to --tolerance; a point passes with zero loss (every message
// sent was applied, no kernel drop, no packet_seq gap, no ring overflow, no
// sequencer loss) AND the sender really offered >= 98% of the rate. The
// found rate is confirmed for --confirm-seconds (10% lower on failure).
//
// Safety: every datagram goes through tickgate::MulticastSender (loopback
// interface, TTL 0) to 239.255.x.x groups joined on 127.0.0.1 only.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <time.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common.hpp"
#include "../tests/support/veth_pair.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed_handler.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/sequencer_impl.hpp"  // BasicSequencer<qfb1::Rules, StampedBook>
#include "tickgate/inline_feed_handler.hpp"
#include "tickgate/feed/qfb1/wire.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/itch50/protocol.hpp"
#include "tickgate/feed/mdp3/event.hpp"
#include "tickgate/feed/mdp3/packet_builder.hpp"
#include "tickgate/feed/mdp3/protocol.hpp"

namespace {

using tickgate::qfb1::store_le;

// ------------------------------------------------------------------ histogram
// Log-linear histogram with HdrHistogram's bucket layout: values 1 ns .. 10 s
// at 3 significant digits (sub-buckets of 2048, relative error < 0.1%).
class Histogram {
public:
    explicit Histogram(std::int64_t highest = 10'000'000'000LL, int digits = 3) : highest_(highest) {
        const std::int64_t largest_single_unit = 2 * static_cast<std::int64_t>(std::pow(10, digits));
        const int sub_bucket_count_mag = static_cast<int>(std::ceil(std::log2(static_cast<double>(largest_single_unit))));
        half_mag_ = sub_bucket_count_mag - 1;
        sub_count_ = std::int64_t{1} << sub_bucket_count_mag;
        half_count_ = sub_count_ / 2;
        mask_ = sub_count_ - 1;
        std::int64_t untrackable = sub_count_;
        int buckets = 1;
        while (untrackable <= highest) {
            untrackable <<= 1;
            ++buckets;
        }
        buckets_ = buckets;
        counts_.assign(static_cast<std::size_t>((buckets + 1) * half_count_), 0);
    }

    void record(std::int64_t v, std::uint64_t n = 1) noexcept {
        if (v < 0) {
            negatives_ += n;
            v = 0;
        }
        if (v > highest_) {
            clipped_ += n;
            v = highest_;
        }
        counts_[index(v)] += n;
        total_ += n;
        sum_ += static_cast<double>(v) * static_cast<double>(n);
        if (v > max_) max_ = v;
        if (v < min_) min_ = v;
    }

    // HdrHistogram recordValueWithExpectedInterval: also the values the
    // samples that "should" have been taken while this one was stuck would
    // have shown.
    void record_corrected(std::int64_t v, std::uint64_t n, std::int64_t interval) noexcept {
        record(v, n);
        if (interval <= 0 || v <= interval) return;
        for (std::int64_t missing = v - interval; missing >= interval; missing -= interval) record(missing, n);
    }

    // Hdr copyCorrectedForCoordinatedOmission: done after the run so the
    // engine thread only ever pays for one record() per sample.
    [[nodiscard]] Histogram corrected(std::int64_t interval) const {
        Histogram h(highest_);
        for (std::size_t i = 0; i < counts_.size(); ++i)
            if (counts_[i]) h.record_corrected(std::min(highest_equivalent(value_from_index(i)), max_), counts_[i], interval);
        h.negatives_ = negatives_;
        h.clipped_ = clipped_;
        return h;
    }

    [[nodiscard]] std::uint64_t count() const noexcept { return total_; }
    [[nodiscard]] std::int64_t max() const noexcept { return total_ ? max_ : 0; }
    [[nodiscard]] std::int64_t min() const noexcept { return total_ ? min_ : 0; }
    [[nodiscard]] double mean() const noexcept { return total_ ? sum_ / static_cast<double>(total_) : 0; }
    [[nodiscard]] std::uint64_t negatives() const noexcept { return negatives_; }

    // Value at percentile p (0..100): the highest value equivalent to the
    // bucket that holds the ceil(p% * count)-th sample (Hdr's definition),
    // never above the exact maximum.
    [[nodiscard]] std::int64_t at(double p) const noexcept {
        if (total_ == 0) return 0;
        const std::uint64_t want = rank(p);
        std::uint64_t acc = 0;
        for (std::size_t i = 0; i < counts_.size(); ++i) {
            acc += counts_[i];
            if (acc >= want) return std::min(highest_equivalent(value_from_index(i)), max_);
        }
        return max_;
    }

    [[nodiscard]] std::uint64_t rank(double p) const noexcept {
        const double r = std::ceil(std::min(100.0, std::max(0.0, p)) / 100.0 * static_cast<double>(total_));
        return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(r), 1, total_);
    }

    // HdrHistogram "percentile distribution" (5 ticks per half distance):
    // columns percentile, 1/(1-percentile), latency_us, total count. The
    // 100% line has no finite 1/(1-p) and is written as a comment.
    void write_distribution(std::FILE* f, const std::string& title) const {
        std::fprintf(f, "# %s\n", title.c_str());
        std::fprintf(f, "# percentile  inv_one_minus_p  latency_us  total_count\n");
        if (total_ == 0) return;
        double p = 0;
        for (;;) {
            const std::uint64_t r = rank(p);
            if (r >= total_ || p >= 100.0) break;
            std::fprintf(f, "%.12f %14.2f %12.3f %12" PRIu64 "\n", p / 100.0, 1.0 / (1.0 - p / 100.0),
                         static_cast<double>(at(p)) / 1000.0, r);
            const double half_distance = std::floor(std::log2(100.0 / (100.0 - p))) + 1;
            p += 100.0 / (5.0 * std::pow(2.0, half_distance));
        }
        // Last finite tick: the percentile of the last sample, 1 - 1/count.
        const double plast = 1.0 - 1.0 / static_cast<double>(total_);
        std::fprintf(f, "%.12f %14.2f %12.3f %12" PRIu64 "\n", plast, 1.0 / (1.0 - plast),
                     static_cast<double>(max()) / 1000.0, total_);
        std::fprintf(f, "#[Mean = %.3f us, Max = %.3f us, Total count = %" PRIu64 "]\n", mean() / 1000.0,
                     static_cast<double>(max()) / 1000.0, total_);
        std::fprintf(f, "#[Buckets = %d, SubBuckets = %lld]\n", buckets_, static_cast<long long>(sub_count_));
    }

private:
    [[nodiscard]] std::size_t index(std::int64_t v) const noexcept {
        const int pow2ceiling = 64 - std::countl_zero(static_cast<std::uint64_t>(v | mask_));
        const int bucket = pow2ceiling - (half_mag_ + 1);
        const std::int64_t sub = v >> bucket;
        return static_cast<std::size_t>(((std::int64_t{bucket} + 1) << half_mag_) + (sub - half_count_));
    }
    [[nodiscard]] std::int64_t value_from_index(std::size_t i) const noexcept {
        std::int64_t bucket = (static_cast<std::int64_t>(i) >> half_mag_) - 1;
        std::int64_t sub = (static_cast<std::int64_t>(i) & (half_count_ - 1)) + half_count_;
        if (bucket < 0) {
            sub -= half_count_;
            bucket = 0;
        }
        return sub << bucket;
    }
    [[nodiscard]] std::int64_t highest_equivalent(std::int64_t v) const noexcept {
        const int pow2ceiling = 64 - std::countl_zero(static_cast<std::uint64_t>(v | mask_));
        const int bucket = pow2ceiling - (half_mag_ + 1);
        const std::int64_t sub = v >> bucket;
        const int adjusted = sub >= sub_count_ ? bucket + 1 : bucket;
        const std::int64_t lowest = sub << bucket;
        return lowest + (std::int64_t{1} << adjusted) - 1;
    }

    std::int64_t highest_;
    int half_mag_ = 0, buckets_ = 0;
    std::int64_t sub_count_ = 0, half_count_ = 0, mask_ = 0;
    std::vector<std::uint64_t> counts_;
    std::uint64_t total_ = 0, negatives_ = 0, clipped_ = 0;
    double sum_ = 0;
    std::int64_t max_ = 0, min_ = INT64_MAX;
};

constexpr double kPcts[] = {50, 90, 99, 99.9, 99.99};

// ------------------------------------------------------------------ clocks
using bench::mono_ns;
using bench::wait_until;

// ------------------------------------------------------------------ options
enum class Mode { kBlocking, kBusy, kInline };
// --protocol: what the sender publishes and which handler receives it (a
// workload each, below: the only per-protocol part of the harness).
enum class Proto { kQfb1, kMdp3, kItch50 };
const char* proto_name(Proto p) { return p == Proto::kMdp3 ? "mdp3" : p == Proto::kItch50 ? "itch50" : "qfb1"; }
// Where datagrams travel and what receives them. kLoopback: sockets on
// loopback multicast (the default). With --backend af_xdp every point runs
// through a veth pair between two network namespaces the bench creates
// (sender in one, handler in the other), kVethSockets beside kAfXdp, so
// the two receive paths are compared on the same wire and schedule.
enum class Backend { kLoopback, kVethSockets, kAfXdp };
const char* backend_name(Backend b) {
    return b == Backend::kAfXdp ? "af_xdp" : b == Backend::kVethSockets ? "veth-sockets" : "sockets";
}
const char* mode_name(Mode m) {
    return m == Mode::kInline ? "inline" : m == Mode::kBusy ? "busy_poll" : "blocking";
}

struct Options {
    Proto protocol = Proto::kQfb1;
    std::vector<double> rates{10'000, 100'000};
    double seconds = 5;
    double warmup = 0.5;
    std::vector<Mode> modes{Mode::kBlocking, Mode::kBusy};
    std::uint32_t batch = 1;
    bool both_lines = false;
    std::string json, hist_out;
    bool max_rate = false;
    double start_rate = 50'000;
    double confirm_seconds = 30;
    double tolerance = 0.05;  // binary search stops when hi/lo <= 1 + tolerance
    double max_search_rate = 8'000'000;
    int sender_cpu = 0, engine_cpu = 1;
    std::optional<int> net_cpu;  // default: see net_cpu_for()
    double spin_us = 2;
    std::string tag;  // --tag: appended to .dat names and shown with each result (e.g. a thread placement)
    bool engine_yield = false;  // --engine-idle yield: sched_yield() when poll() finds nothing
    std::optional<int> nice;  // applied to every thread of the run (they inherit it)
    std::string group_a = "239.255.42.1", group_b = "239.255.42.2";
    std::uint16_t port = 42401;  // line A; B = port + 1
    std::uint16_t channel = 42;
    std::uint32_t instruments = 64;
    std::uint32_t ring_size = 65536;
    bool stages = false;  // --stages: per-stage stamps on the inline path
    std::vector<Backend> backends{Backend::kLoopback};
    std::string xdp_mode = "native";  // --xdp-mode: the XDP attach mode on the veth
    std::string argv_line;
};

[[noreturn]] void usage(const char* msg) {
    std::fprintf(stderr,
                 "latency_bench: %s\n"
                 "usage: latency_bench [--protocol qfb1|mdp3|itch50]\n"
                 "                     [--rate N | --rates A,B,C] [--seconds S] [--warmup S]\n"
                 "                     [--mode blocking|busy_poll|inline|both|all|A,B] [--stages]\n"
                 "                     [--batch N] [--lines a|ab]\n"
                 "                     [--json FILE] [--hist-out PREFIX]\n"
                 "                     [--max-rate [--start-rate N] [--confirm-seconds S] [--tolerance F]]\n"
                 "                     [--sender-cpu N] [--engine-cpu N] [--net-cpu N|-1]\n"
                 "                     [--spin-us N] [--nice N] [--engine-idle spin|yield]\n"
                 "                     [--tag NAME] [--group-a G] [--group-b G] [--port P]\n"
                 "                     [--backend sockets|af_xdp|both] [--xdp-mode native|generic]\n",
                 msg);
    std::exit(2);
}

double parse_rate(const std::string& t) {
    const auto v = bench::parse_rate(t);
    if (!v) usage(("bad rate: " + t).c_str());
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
        if (a == "--protocol") {
            const std::string p = need(i);
            if (p == "qfb1") o.protocol = Proto::kQfb1;
            else if (p == "mdp3") o.protocol = Proto::kMdp3;
            else if (p == "itch50") o.protocol = Proto::kItch50;
            else usage("--protocol: qfb1, mdp3 or itch50");
        } else if (a == "--rate") o.rates = {parse_rate(need(i))};
        else if (a == "--rates") {
            o.rates.clear();
            std::stringstream ss(need(i));
            for (std::string t; std::getline(ss, t, ',');) o.rates.push_back(parse_rate(t));
        } else if (a == "--seconds") o.seconds = std::stod(need(i));
        else if (a == "--warmup") o.warmup = std::stod(need(i));
        else if (a == "--mode") {
            o.modes.clear();
            std::stringstream ss(need(i));
            for (std::string m; std::getline(ss, m, ',');) {
                if (m == "blocking") o.modes.push_back(Mode::kBlocking);
                else if (m == "busy_poll" || m == "busy") o.modes.push_back(Mode::kBusy);
                else if (m == "inline") o.modes.push_back(Mode::kInline);
                else if (m == "both") o.modes.insert(o.modes.end(), {Mode::kBlocking, Mode::kBusy});
                else if (m == "all") o.modes.insert(o.modes.end(), {Mode::kBlocking, Mode::kBusy, Mode::kInline});
                else usage("--mode: blocking, busy_poll, inline, both, all, or a comma list");
            }
            if (o.modes.empty()) usage("--mode: none given");
        } else if (a == "--stages") o.stages = true; else if (a == "--batch") o.batch = static_cast<std::uint32_t>(std::stoul(need(i)));
        else if (a == "--lines") {
            const std::string l = need(i);
            if (l != "a" && l != "ab") usage("--lines: a or ab");
            o.both_lines = l == "ab";
        } else if (a == "--json") o.json = need(i);
        else if (a == "--hist-out") o.hist_out = need(i);
        else if (a == "--max-rate") o.max_rate = true;
        else if (a == "--start-rate") o.start_rate = parse_rate(need(i));
        else if (a == "--max-search-rate") o.max_search_rate = parse_rate(need(i));
        else if (a == "--confirm-seconds") o.confirm_seconds = std::stod(need(i));
        else if (a == "--tolerance") o.tolerance = std::stod(need(i));
        else if (a == "--sender-cpu") o.sender_cpu = std::stoi(need(i));
        else if (a == "--engine-cpu") o.engine_cpu = std::stoi(need(i));
        else if (a == "--net-cpu") o.net_cpu = std::stoi(need(i));
        else if (a == "--spin-us") o.spin_us = std::stod(need(i));
        else if (a == "--nice") o.nice = std::stoi(need(i));
        else if (a == "--tag") o.tag = need(i);
        else if (a == "--engine-idle") {
            const std::string e = need(i);
            if (e != "spin" && e != "yield") usage("--engine-idle: spin or yield");
            o.engine_yield = e == "yield";
        }
        else if (a == "--group-a") o.group_a = need(i);
        else if (a == "--group-b") o.group_b = need(i);
        else if (a == "--port") o.port = static_cast<std::uint16_t>(std::stoul(need(i)));
        else if (a == "--ring-size") o.ring_size = static_cast<std::uint32_t>(std::stoul(need(i)));
        else if (a == "--backend") {
            const std::string b = need(i);
            if (b == "sockets") o.backends = {Backend::kLoopback};
            else if (b == "af_xdp") o.backends = {Backend::kAfXdp};
            else if (b == "both") o.backends = {Backend::kVethSockets, Backend::kAfXdp};
            else usage("--backend: sockets, af_xdp or both (sockets and AF_XDP over one veth pair)");
        } else if (a == "--xdp-mode") {
            o.xdp_mode = need(i);
            if (o.xdp_mode != "native" && o.xdp_mode != "generic") usage("--xdp-mode: native or generic");
        }
        else if (a == "-h" || a == "--help") usage("help");
        else usage(("unknown option " + a).c_str());
    }
    if (o.batch < 1 || o.batch > 28) usage("--batch: 1..28 (28 quotes fill 1400 bytes)");
    if (o.seconds <= 0) usage("--seconds must be > 0");
    if (o.stages && o.protocol != Proto::kQfb1) usage("--stages: QFB/1 only (its probe wraps QFB/1's book)");
    for (const auto* g : {&o.group_a, &o.group_b}) {
        const auto ip = tickgate::parse_ipv4(*g);
        if (!ip || (*ip >> 16) != 0xEFFF) usage("groups must be 239.255.x.x (loopback-only test traffic)");
    }
    const unsigned cores = std::thread::hardware_concurrency();
    if (static_cast<unsigned>(std::max(o.sender_cpu, o.engine_cpu)) >= cores) {
        o.sender_cpu = 0;
        o.engine_cpu = cores > 1 ? 1 : 0;
    }
    return o;
}

// Where the network thread goes (default: next to the sender, core 0; the
// engine owns core 1). Blocking: it sleeps in ppoll and is woken by the
// sender's sendto on core 0, running as soon as the sender sleeps again —
// measured much better than leaving it to the scheduler (which often queued
// it behind the spinning engine). Busy-poll: it spins there and the sender
// preempts it for each send: 3 threads on 2 cores.
int net_cpu_for(const Options& o, Mode m) {
    if (m == Mode::kInline) return -1;  // no network thread
    if (o.net_cpu) return *o.net_cpu;
    return o.sender_cpu;
}

// ------------------------------------------------------------------ traffic
// One QFB/1 datagram of `batch` messages, written in place (same layout as
// tickgate::PacketBuilder, checked against it at start-up). Instruments
// 1..32 publish Q, 33..64 D (set/delete on a 10-level grid per side).
class Traffic {
public:
    Traffic(std::uint16_t channel, std::uint32_t instruments, std::uint32_t batch)
        : channel_(channel), n_(instruments), batch_(batch), seq_(instruments + 1, 0), rng_(7) {}

    // Next datagram; scheduled time (realtime ns) goes into each message's source_ns.
    std::span<const std::byte> next(std::int64_t sched_rt_ns) {
        std::byte* h = buf_;
        std::size_t off = tickgate::qfb1::kPacketHeaderSize;
        store_le<std::uint16_t>(h + 0, tickgate::qfb1::kMagic);
        store_le<std::uint8_t>(h + 2, tickgate::qfb1::kVersion);
        store_le<std::uint8_t>(h + 3, 0);
        store_le<std::uint16_t>(h + 4, static_cast<std::uint16_t>(batch_));
        store_le<std::uint16_t>(h + 6, channel_);
        store_le<std::uint32_t>(h + 8, 1);
        store_le<std::uint64_t>(h + 12, ++packet_seq_);
        store_le<std::int64_t>(h + 20, 0);  // send_time_ns: patched just before sendto
        for (std::uint32_t k = 0; k < batch_; ++k) {
            const std::uint32_t id = 1 + rng_.below(n_);
            const std::uint64_t seq = ++seq_[id];
            std::byte* m = buf_ + off;
            const std::int64_t mid = 100'000'000 + std::int64_t{id} * 1'000'000;
            if (id <= n_ / 2) {
                std::memset(m, 0, tickgate::qfb1::kQuoteSize);
                store_le<std::uint16_t>(m + 0, static_cast<std::uint16_t>(tickgate::qfb1::kQuoteSize));
                store_le<std::uint8_t>(m + 2, 'Q');
                store_le<std::uint32_t>(m + 4, id);
                store_le<std::uint64_t>(m + 8, seq);
                store_le<std::int64_t>(m + 16, sched_rt_ns);
                const std::int64_t drift = (static_cast<std::int64_t>(rng_.below(5)) - 2) * 1000;
                store_le<std::int64_t>(m + 24, mid - 1000 + drift);
                store_le<std::int64_t>(m + 32, mid + 1000 + drift);
                store_le<std::uint32_t>(m + 40, 100 * (1 + rng_.below(100)));
                store_le<std::uint32_t>(m + 44, 100 * (1 + rng_.below(100)));
                off += tickgate::qfb1::kQuoteSize;
            } else {
                std::memset(m, 0, tickgate::qfb1::kDeltaSize);
                const std::uint8_t side = static_cast<std::uint8_t>(rng_.below(2));
                const std::int64_t lvl = 1 + rng_.below(10);
                const std::uint8_t action = rng_.below(5) == 0 ? 1 : 0;
                store_le<std::uint16_t>(m + 0, static_cast<std::uint16_t>(tickgate::qfb1::kDeltaSize));
                store_le<std::uint8_t>(m + 2, 'D');
                store_le<std::uint32_t>(m + 4, id);
                store_le<std::uint64_t>(m + 8, seq);
                store_le<std::int64_t>(m + 16, sched_rt_ns);
                store_le<std::int64_t>(m + 24, side == 0 ? mid - lvl * 1000 : mid + lvl * 1000);
                store_le<std::uint32_t>(m + 32, action ? 0 : 100 * (1 + rng_.below(100)));
                store_le<std::uint8_t>(m + 36, side);
                store_le<std::uint8_t>(m + 37, action);
                off += tickgate::qfb1::kDeltaSize;
            }
        }
        return {buf_, off};
    }
    std::byte* data() noexcept { return buf_; }

private:
    std::uint16_t channel_;
    std::uint32_t n_, batch_;
    std::vector<std::uint64_t> seq_;
    bench::Rng rng_;
    std::uint64_t packet_seq_ = 0;
    alignas(64) std::byte buf_[tickgate::qfb1::kMaxDatagram]{};
};

// The hand-written layout must equal PacketBuilder's.
void self_check_layout() {
    Traffic t(9, 64, 1);
    for (int i = 0; i < 200; ++i) {
        const auto d = t.next(123456789);
        const tickgate::qfb1::PacketHeaderView h(d);
        const std::byte* m = d.data() + tickgate::qfb1::kPacketHeaderSize;
        tickgate::PacketBuilder b(9, 1, h.packet_seq(), 0);
        const auto id = tickgate::qfb1::load_le<std::uint32_t>(m + 4);
        const auto seq = tickgate::qfb1::load_le<std::uint64_t>(m + 8);
        if (static_cast<char>(m[2]) == 'Q')
            b.quote(id, seq, 123456789, tickgate::qfb1::load_le<std::int64_t>(m + 24),
                    tickgate::qfb1::load_le<std::uint32_t>(m + 40), tickgate::qfb1::load_le<std::int64_t>(m + 32),
                    tickgate::qfb1::load_le<std::uint32_t>(m + 44));
        else
            b.delta(id, seq, 123456789, tickgate::qfb1::load_le<std::int64_t>(m + 24),
                    tickgate::qfb1::load_le<std::uint32_t>(m + 32), tickgate::qfb1::load_le<std::uint8_t>(m + 36),
                    tickgate::qfb1::load_le<std::uint8_t>(m + 37));
        if (b.bytes().size() != d.size() || std::memcmp(b.bytes().data(), d.data(), d.size()) != 0)
            throw std::runtime_error("latency_bench: datagram layout differs from tickgate::PacketBuilder");
    }
}

// ------------------------------------------------------------------ workloads
// The per-protocol part of the harness. A workload W says
//   W::Protocol             the venue protocol the handlers are instantiated with
//   W::configure(cfg)       the protocol's config keys (the harness has made one
//                           channel, lines A/B on the loopback groups)
//   W::Sender               on the sender thread: preamble() datagrams sent once
//                           before the schedule (not timed), next(sched_rt) the
//                           schedule's next datagram of --batch measured messages,
//                           stamp(now) the send time written into it just before sendto
//   W::Reader::tick()       on the engine, in the update callback: whether an
//                           update is a measured message, and its send time and
//                           scheduled send time
// Everything else (schedule, sockets, handlers, histograms, output) is shared.

// The schedule: datagram k at base + k * 1e9 / dgram_rate (CLOCK_MONOTONIC), rt_of(k) its realtime twin.
struct Schedule {
    std::int64_t mono0 = 0, rt0 = 0, base = 0;
    double dgram_rate = 1;
    [[nodiscard]] std::int64_t mono_of(std::uint64_t k) const noexcept {
        return base + static_cast<std::int64_t>(static_cast<long double>(k) * 1e9L / dgram_rate);
    }
    [[nodiscard]] std::int64_t rt_of(std::uint64_t k) const noexcept { return rt0 + (mono_of(k) - mono0); }
};

// A measured message: its send time (the sender's CLOCK_REALTIME at sendto)
// and its scheduled send time (realtime).
struct Tick {
    std::int64_t send_ns = 0, sched_ns = 0;
};

[[nodiscard]] bool applied_verdict(const tickgate::Update& u) noexcept {
    return u.verdict == tickgate::Verdict::kAccepted || u.verdict == tickgate::Verdict::kGap;
}

// QFB/1: the harness's hand-written datagrams (Traffic); send time in the
// packet header's send_time_ns (Event::send_ns), schedule in each message's source_ns.
struct Qfb1Workload {
    using Protocol = tickgate::qfb1::Protocol;
    static constexpr Proto kProto = Proto::kQfb1;
    static void configure(tickgate::Config&) {}
    class Sender {
    public:
        explicit Sender(const Options& o) : t_(o.channel, o.instruments, o.batch) {}
        std::vector<tickgate::Bytes> preamble() { return {}; }
        std::span<const std::byte> next(std::int64_t sched_rt_ns) { return t_.next(sched_rt_ns); }
        void stamp(std::int64_t now) noexcept { store_le<std::int64_t>(t_.data() + 20, now); }

    private:
        Traffic t_;
    };
    struct Reader {
        std::uint16_t channel;
        explicit Reader(const Options& o) : channel(o.channel) {}
        bool tick(const tickgate::Update& u, const tickgate::Event& ev, std::int64_t, const Schedule&,
                  Tick& t) const noexcept {
            if (ev.channel_id != channel) return false;
            if (ev.kind != tickgate::EventKind::kQuote && ev.kind != tickgate::EventKind::kDelta) return false;
            if (!applied_verdict(u)) return false;
            t.send_ns = ev.send_ns;
            t.sched_ns = ev.kind == tickgate::EventKind::kQuote ? ev.u.quote.source_ns : ev.u.delta.source_ns;
            return true;
        }
    };
};

// CME MDP 3.0: one MDIncrementalRefreshBook46 of --batch MBP entries per
// packet (the library's packet builder), SecurityIDs 1001.. learnt from the
// entries (no definition feed: every book has [mdp3] book_depth = 10
// levels); send time in the packet header's SendingTime (Event::send_ns),
// schedule in the message's TransactTime. Each side is filled to 10 levels
// by New, then 70% Change of a random level, 30% Delete of one, whose
// level and price the side's next entry adds back (New): bounded, never
// crossed, and every entry valid by MDP3.md's table.
struct Mdp3Workload {
    using Protocol = tickgate::mdp3::Protocol;
    static constexpr Proto kProto = Proto::kMdp3;
    static void configure(tickgate::Config& cfg) { cfg.channels.front().protocol = "mdp3"; }
    class Sender {
    public:
        explicit Sender(const Options& o) : batch_(o.batch), rng_(7), ins_(o.instruments) {
            for (std::size_t i = 0; i < ins_.size(); ++i) ins_[i].base = (100 + static_cast<std::int64_t>(i)) * 1'000'000'000;
        }
        std::vector<tickgate::Bytes> preamble() { return {}; }
        std::span<const std::byte> next(std::int64_t sched_rt_ns) {
            entries_.clear();
            for (std::uint32_t k = 0; k < batch_; ++k) {
                const auto i = static_cast<std::uint32_t>(rng_.below(ins_.size()));
                entries_.push_back(entry(i, static_cast<int>(rng_.below(2))));
            }
            namespace build = tickgate::mdp3::build;
            build::Writer p = build::packet(++msg_seq_, 0);  // SendingTime: stamp()
            p.append(build::book_message(static_cast<std::uint64_t>(sched_rt_ns), entries_));
            cur_ = std::move(p.bytes());
            return cur_;
        }
        void stamp(std::int64_t now) noexcept { store_le<std::uint64_t>(cur_.data() + 4, static_cast<std::uint64_t>(now)); }

    private:
        static constexpr std::int64_t kTick = 250'000'000;  // 0.25 at PRICE9's exponent -9
        static constexpr std::uint32_t kDepth = 10;
        struct Side {
            std::vector<std::int64_t> px;  // level 1 first
            std::uint32_t readd_level = 0;  // a deleted level to add back (0: none)
            std::int64_t readd_px = 0;
        };
        struct Instr {
            std::int64_t base = 0;
            std::uint32_t rpt = 0;
            Side side[2];
        };
        tickgate::mdp3::build::BookEntry entry(std::uint32_t i, int s) {
            Instr& in = ins_[i];
            Side& sd = in.side[s];
            const auto qty = static_cast<std::int32_t>(1 + rng_.below(500));
            tickgate::mdp3::build::BookEntry e{0, qty, 1001 + static_cast<std::int32_t>(i), ++in.rpt, 0, 0,
                                               s == 0 ? '0' : '1', static_cast<std::int32_t>(1 + rng_.below(20))};
            const auto n = static_cast<std::uint32_t>(sd.px.size());
            if (sd.readd_level != 0 || n < kDepth) {  // New: the deleted level back, or the next one out
                const std::uint32_t level = sd.readd_level ? sd.readd_level : n + 1;
                const std::int64_t px = sd.readd_level ? sd.readd_px : in.base + (s == 0 ? -kTick : kTick) * (n + 1);
                sd.px.insert(sd.px.begin() + (level - 1), px);
                sd.readd_level = 0;
                e.level = static_cast<std::uint8_t>(level), e.action = 0, e.px = px;
            } else {
                const auto level = static_cast<std::uint32_t>(1 + rng_.below(n));
                e.level = static_cast<std::uint8_t>(level);
                e.px = sd.px[level - 1];
                if (rng_.below(10) < 7) {
                    e.action = 1;  // Change
                } else {
                    e.action = 2;  // Delete
                    sd.readd_level = level, sd.readd_px = sd.px[level - 1];
                    sd.px.erase(sd.px.begin() + (level - 1));
                }
            }
            return e;
        }
        std::uint32_t batch_;
        bench::Rng rng_;
        std::vector<Instr> ins_;
        std::vector<tickgate::mdp3::build::BookEntry> entries_;
        std::uint32_t msg_seq_ = 0;
        tickgate::Bytes cur_;
    };
    struct Reader {
        std::uint16_t channel;
        explicit Reader(const Options& o) : channel(o.channel) {}
        bool tick(const tickgate::Update& u, const tickgate::Event& ev, std::int64_t, const Schedule&,
                  Tick& t) const noexcept {
            if (ev.channel_id != channel || ev.kind != tickgate::mdp3::kLevelEntry || !applied_verdict(u)) return false;
            t.send_ns = ev.send_ns;
            t.sched_ns = ev.u.venue.source_ns;
            return true;
        }
    };
};

// Nasdaq TotalView-ITCH 5.0 over MoldUDP64 (the library's builders): a
// preamble of system events and one stock directory (R) per locate 1..N
// (positions 1..N+3, before the schedule), then --batch order messages per
// packet: adds (A), executions (E), cancels (X), deletes (D), replaces (U),
// at most 32 open orders per stock, bids below and asks above a fixed mid.
// Send time: every message's timestamp (u48, ns since midnight; [itch]
// utc_offset_minutes = 0, so venue time is UTC) is written with the send
// time just before sendto; the reader takes the day from the book time
// (exact while tick-to-book is under 12 hours). ITCH carries no scheduled
// time: it is the schedule's time of the packet that the message's stream
// position falls in (positions are consecutive, --batch per packet).
struct Itch50Workload {
    using Protocol = tickgate::itch50::Protocol;
    static constexpr Proto kProto = Proto::kItch50;
    static constexpr std::int64_t kNsPerDay = 86'400'000'000'000;
    static constexpr std::string_view kSession = "LATBENCH01";
    static void configure(tickgate::Config& cfg) {
        cfg.channels.front().protocol = "itch50";
        cfg.itch.max_orders = 262'144;
        cfg.itch.max_levels = 65'536;
        cfg.itch.utc_offset_minutes = 0;
    }
    [[nodiscard]] static std::int64_t time_of_day(std::int64_t rt) noexcept { return rt % kNsPerDay; }
    // The preamble is 'O', a directory per locate 1..n, 'S', 'Q': the schedule starts at position n + 4.
    [[nodiscard]] static constexpr std::uint64_t first_timed_position(std::uint32_t n) noexcept {
        return std::uint64_t{n} + 4;
    }
    class Sender {
    public:
        explicit Sender(const Options& o) : n_(o.instruments), batch_(o.batch), rng_(7), stocks_(o.instruments + 1) {}
        std::vector<tickgate::Bytes> preamble() {
            namespace it = tickgate::itch50;
            const std::int64_t ts = time_of_day(tickgate::realtime_ns());
            std::vector<tickgate::Bytes> msgs{it::system_event('O', ts)};
            for (std::uint32_t i = 1; i <= n_; ++i) {
                char sym[9];
                std::snprintf(sym, sizeof sym, "LB%04u", i);
                msgs.push_back(it::stock_directory(static_cast<std::uint16_t>(i), sym, ts));
            }
            msgs.push_back(it::system_event('S', ts));
            msgs.push_back(it::system_event('Q', ts));
            std::vector<tickgate::Bytes> out;
            for (std::size_t at = 0; at < msgs.size(); at += 16) {
                const std::size_t k = std::min<std::size_t>(16, msgs.size() - at);
                out.push_back(it::mold_packet(kSession, pos_, std::span(msgs).subspan(at, k)));
                pos_ += k;
            }
            if (pos_ != first_timed_position(n_)) throw std::logic_error("latency_bench: ITCH preamble length");
            return out;
        }
        std::span<const std::byte> next(std::int64_t) {
            msgs_.clear();
            for (std::uint32_t k = 0; k < batch_; ++k) msgs_.push_back(flow(static_cast<std::uint16_t>(1 + rng_.below(n_))));
            cur_ = tickgate::itch50::mold_packet(kSession, pos_, msgs_);
            pos_ += batch_;
            stamps_.clear();
            std::size_t off = tickgate::moldudp64::kHeaderSize;
            for (const tickgate::Bytes& m : msgs_) {
                stamps_.push_back(off + tickgate::moldudp64::kBlockHeaderSize + tickgate::itch50::kTimestampOffset);
                off += tickgate::moldudp64::kBlockHeaderSize + m.size();
            }
            return cur_;
        }
        void stamp(std::int64_t now) noexcept {
            const auto ts = static_cast<std::uint64_t>(time_of_day(now));
            for (const std::size_t at : stamps_)
                for (int b = 0; b < 6; ++b) cur_[at + static_cast<std::size_t>(b)] = static_cast<std::byte>(ts >> (8 * (5 - b)));
        }

    private:
        struct Order {
            std::uint64_t ref;
            std::uint32_t shares, price;
            char side;
        };
        std::uint32_t price_for(std::uint16_t locate, char side) {
            const std::uint32_t mid = (100 + std::uint32_t{locate}) * 10'000, away = static_cast<std::uint32_t>(1 + rng_.below(10)) * 100;
            return side == 'B' ? mid - away : mid + away;
        }
        tickgate::Bytes flow(std::uint16_t locate) {
            namespace it = tickgate::itch50;
            std::vector<Order>& orders = stocks_[locate];
            if (orders.size() < 8 || (orders.size() < 32 && rng_.below(100) < 45)) {
                const char side = rng_.below(2) ? 'B' : 'S';
                const Order o{next_ref_++, static_cast<std::uint32_t>(1 + rng_.below(10)) * 100, price_for(locate, side), side};
                orders.push_back(o);
                return it::add_order(locate, o.ref, side, o.shares, o.price);
            }
            Order& o = orders[rng_.below(orders.size())];
            const auto r = rng_.below(100);
            tickgate::Bytes m;
            if (r < 15) {
                const std::uint32_t n = std::min<std::uint32_t>(o.shares, static_cast<std::uint32_t>(1 + rng_.below(5)) * 100);
                m = it::executed(locate, o.ref, n);
                o.shares -= n;
            } else if (r < 30) {
                const std::uint32_t cut = o.shares > 100 ? static_cast<std::uint32_t>(1 + rng_.below(o.shares / 100 - 1)) * 100 : o.shares;
                m = it::cancel(locate, o.ref, cut);
                o.shares -= cut;
            } else if (r < 70) {
                m = it::delete_order(locate, o.ref);
                o.shares = 0;
            } else {
                const Order u{next_ref_++, static_cast<std::uint32_t>(1 + rng_.below(10)) * 100, price_for(locate, o.side), o.side};
                m = it::replace(locate, o.ref, u.ref, u.shares, u.price);
                o = u;
            }
            if (o.shares == 0) {
                o = orders.back();
                orders.pop_back();
            }
            return m;
        }
        std::uint32_t n_, batch_;
        bench::Rng rng_;
        std::vector<std::vector<Order>> stocks_;  // open orders by locate
        std::uint64_t next_ref_ = 1, pos_ = 1;
        std::vector<tickgate::Bytes> msgs_;
        std::vector<std::size_t> stamps_;  // where each message's timestamp is in cur_
        tickgate::Bytes cur_;
    };
    struct Reader {
        std::uint16_t channel;
        std::uint64_t first_pos;  // the schedule's first position
        std::uint32_t batch;
        explicit Reader(const Options& o)
            : channel(o.channel), first_pos(first_timed_position(o.instruments)), batch(o.batch) {}
        bool tick(const tickgate::Update& u, const tickgate::Event& ev, std::int64_t book, const Schedule& s,
                  Tick& t) const noexcept {
            if (ev.channel_id != channel || ev.kind < tickgate::itch50::kAddBid || ev.kind > tickgate::itch50::kReplace) return false;
            if (!applied_verdict(u) || ev.u.venue.seq < first_pos) return false;
            std::int64_t back = time_of_day(book) - ev.u.venue.source_ns;  // book - send, mod one day
            if (back < -kNsPerDay / 2) back += kNsPerDay;
            else if (back >= kNsPerDay / 2) back -= kNsPerDay;
            t.send_ns = book - back;
            t.sched_ns = s.rt_of((ev.u.venue.seq - first_pos) / batch);
            return true;
        }
    };
};

// ------------------------------------------------------------------ one run
struct Result {
    Mode mode{};
    Backend backend = Backend::kLoopback;
    double rate = 0, seconds = 0, achieved_rate = 0;
    std::uint32_t batch = 1;
    bool both_lines = false;
    int sender_cpu = -1, engine_cpu = -1, net_cpu = -1;
    bool engine_yield = false;
    std::string tag;
    Proto protocol = Proto::kQfb1;
    std::uint64_t sent_msgs = 0, sent_dgrams = 0, send_errors = 0, applied = 0, timed = 0;
    std::uint64_t unchanged = 0;  // measured messages that changed no book (a workload check)
    std::uint64_t kernel_drops = 0, seq_gaps = 0, ring_overflow = 0, seq_lost = 0, arb_gaps = 0, negatives = 0;
    std::int64_t interval_ns = 0;
    Histogram t2b, t2b_co, own, own_co, sched, ktx, late;
    // --stages: kernel stamp -> recvmmsg returned -> decoded -> sequenced ->
    // book updated -> callback, and the whole (kernel stamp -> callback).
    bool has_stages = false;
    Histogram st_recv, st_decode, st_seq, st_book, st_callback, st_total;
    Histogram st_empty_poll;  // one inline poll() that found nothing: the spin loop's period
    std::int64_t stamp_cost_ns = 0;
    std::string load_before, load_after;
    [[nodiscard]] std::uint64_t missing() const { return sent_msgs > applied ? sent_msgs - applied : 0; }
    [[nodiscard]] bool zero_loss() const {
        return send_errors == 0 && missing() == 0 && kernel_drops == 0 && seq_gaps == 0 && ring_overflow == 0 &&
               seq_lost == 0 && arb_gaps == 0;
    }
    // The sender really offered the rate (it never skips; a slow sender stretches the run).
    [[nodiscard]] bool rate_held() const { return achieved_rate >= 0.98 * rate; }
};

// The --stages histograms, in path order: printed title, JSON key.
struct StageRow {
    const char* title;
    const char* key;
    Histogram Result::*hist;
};
constexpr StageRow kStageRows[] = {
    {"  kernel stamp->recvmmsg ret", "kernel_to_recvmmsg_returned", &Result::st_recv},
    {"  recvmmsg ret->decoded", "recvmmsg_returned_to_decoded", &Result::st_decode},
    {"  decoded->sequenced", "decoded_to_sequenced", &Result::st_seq},
    {"  sequenced->book updated", "sequenced_to_book_updated", &Result::st_book},
    {"  book updated->callback", "book_updated_to_callback", &Result::st_callback},
    {"  kernel stamp->callback", "kernel_to_callback", &Result::st_total},
    {"  empty poll (loop period)", "empty_poll", &Result::st_empty_poll},
};

std::string loadavg() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    f >> a >> b >> c;
    return a + " " + b + " " + c;
}

// --stages: the inline path's stamps of the message being applied
// (realtime ns; the handler thread's only).
struct StageStamps {
    std::int64_t recv_returned = 0, decoded = 0, book_in = 0, book_out = 0;
};
StageStamps g_stamps;

// The inline handler's probe: when recvmmsg has returned a datagram, when an event leaves the decoder.
struct StageProbe {
    static void datagram(const tickgate::RawDatagram&) noexcept { g_stamps.recv_returned = tickgate::realtime_ns(); }
    static void decoded(const tickgate::Event&) noexcept { g_stamps.decoded = tickgate::realtime_ns(); }
};

// QFB/1's book, stamped on entry to and exit from apply(): the sequencer
// has sequenced the message when it enters, the book is updated when it
// returns. The sequencer calls it statically (BasicSequencer<qfb1::Rules, StampedBook>).
class StampedBook : public tickgate::L2Book {
public:
    using L2Book::L2Book;
    tickgate::BookEffect apply(std::uint32_t id, const tickgate::Event& ev) noexcept {
        g_stamps.book_in = tickgate::realtime_ns();
        const tickgate::BookEffect e = L2Book::apply(id, ev);
        g_stamps.book_out = tickgate::realtime_ns();
        return e;
    }
};
static_assert(tickgate::SequencedBook<StampedBook>);

using tickgate::test::VethPair;
using tickgate::test::VethSender;
std::optional<VethPair> g_veth;  // made in main() when a point runs over veth

// What one stamp costs: the median of back-to-back CLOCK_REALTIME reads.
std::int64_t stamp_cost_ns() {
    std::vector<std::int64_t> d(10'001);
    for (auto& x : d) {
        const std::int64_t a = tickgate::realtime_ns();
        x = tickgate::realtime_ns() - a;
    }
    std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
    return d[d.size() / 2];
}

// One measured point: `feed` (a FeedHandler whose network thread is not
// started yet, or an inline handler), the sender on its core, this thread
// the engine (two-thread) or the whole handler (inline) on its core.
template <class W, class Feed, class Probe = tickgate::NoProbe>
void measure(const Options& o, Result& r, Feed& feed, double rate, double seconds) {
    constexpr bool kInline = !requires { feed.start(); };
    constexpr bool kStages = !std::is_same_v<Probe, tickgate::NoProbe>;
    tickgate::pin_current_thread(o.engine_cpu);
    if constexpr (!kInline) feed.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // joined before the first packet

    const double dgram_rate = rate / o.batch;
    const auto total_dgrams = static_cast<std::uint64_t>(std::llround(dgram_rate * (o.warmup + seconds)));
    const auto warm_dgrams = static_cast<std::uint64_t>(std::llround(dgram_rate * o.warmup));
    r.interval_ns = static_cast<std::int64_t>(std::llround(1e9 / dgram_rate));

    // Schedule: datagram k at base + k * 1e9 / dgram_rate (CLOCK_MONOTONIC),
    // its realtime twin carried as the workload says (QFB/1: source_ns).
    Schedule sch;
    sch.mono0 = mono_ns(), sch.rt0 = tickgate::realtime_ns();
    sch.base = sch.mono0 + 20'000'000;
    sch.dgram_rate = dgram_rate;
    const std::int64_t measure_from_rt = sch.rt_of(warm_dgrams);

    std::atomic<bool> sender_done{false};
    std::atomic<std::uint64_t> sent_msgs{0};
    std::int64_t send_first = 0, send_last = 0;
    const std::int64_t spin_ns = static_cast<std::int64_t>(o.spin_us * 1000);
    const auto send_all = [&](auto& tx) {
        const std::uint32_t ga = *tickgate::parse_ipv4(o.group_a), gb = *tickgate::parse_ipv4(o.group_b);
        const std::uint16_t pa = o.port, pb = static_cast<std::uint16_t>(o.port + 1);
        typename W::Sender traffic(o);
        std::uint64_t msgs = 0, errors = 0;
        // The workload's untimed start (ITCH's stock directory), before the schedule's first datagram.
        for (const tickgate::Bytes& p : traffic.preamble()) {
            if (!tx.send(ga, pa, p)) ++errors;
            if (o.both_lines) tx.send(gb, pb, p);
        }
        for (std::uint64_t k = 0; k < total_dgrams; ++k) {
            const std::int64_t t = sch.mono_of(k);
            const std::int64_t t_rt = sch.rt_of(k);
            const auto d = traffic.next(t_rt);
            wait_until(t, spin_ns);  // late: no wait, send now; the schedule itself never moves
            const std::int64_t now = tickgate::realtime_ns();
            traffic.stamp(now);
            const bool ok = tx.send(ga, pa, d);
            if (o.both_lines) tx.send(gb, pb, d);
            if (k == 0) send_first = now;
            send_last = now;
            if (ok) msgs += o.batch;
            else ++errors;
            if (k >= warm_dgrams) r.late.record(now - t_rt);
            if ((k & 63) == 0) sent_msgs.store(msgs, std::memory_order_relaxed);
        }
        sent_msgs.store(msgs, std::memory_order_relaxed);
        r.sent_dgrams = total_dgrams;
        r.send_errors = errors;
        sender_done.store(true, std::memory_order_release);
    };
    std::thread sender([&] {
        bench::pin_to(o.sender_cpu);
        ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        if (r.backend == Backend::kLoopback) {
            tickgate::MulticastSender tx("127.0.0.1");
            send_all(tx);
        } else {
            g_veth->enter_sender();
            VethSender tx;
            send_all(tx);
        }
    });

    // Engine: spin on poll(); time each applied Q/D message inside the callback.
    // Inline, the callback runs on the receiving thread, right after the book.
    const typename W::Reader reader(o);
    std::uint64_t applied = 0, timed = 0, unchanged = 0;
    auto on_update = [&](const tickgate::Update& u, const tickgate::Event& ev) {
        const std::int64_t book = tickgate::realtime_ns();
        Tick tk;
        if (!reader.tick(u, ev, book, sch, tk)) return;  // not a measured message
        ++applied;
        unchanged += !u.book_changed;
        if (tk.sched_ns < measure_from_rt) return;  // warm-up
        ++timed;
        r.t2b.record(book - tk.send_ns);
        r.own.record(book - ev.recv_ns);
        r.ktx.record(ev.recv_ns - tk.send_ns);
        r.sched.record(book - tk.sched_ns);
        if constexpr (kStages) {
            if (u.verdict != tickgate::Verdict::kAccepted) return;  // buffered or repaired: no single book apply
            const StageStamps& st = g_stamps;
            r.st_recv.record(st.recv_returned - ev.recv_ns);
            r.st_decode.record(st.decoded - st.recv_returned);
            r.st_seq.record(st.book_in - st.decoded);
            r.st_book.record(st.book_out - st.book_in);
            r.st_callback.record(book - st.book_out);
            r.st_total.record(book - ev.recv_ns);
        }
    };
    auto poll = [&](std::size_t limit) -> std::size_t {
        if constexpr (kStages) {
            const std::int64_t t0 = tickgate::realtime_ns();
            const int n = feed.poll(on_update, 0, Probe{});
            if (n == 0) r.st_empty_poll.record(tickgate::realtime_ns() - t0);
            return static_cast<std::size_t>(n);
        } else if constexpr (kInline) {
            return static_cast<std::size_t>(feed.poll(on_update, 0, Probe{}));
        } else {
            return feed.poll(on_update, limit);
        }
    };
    std::int64_t idle_since = 0;
    for (;;) {
        if (poll(256) != 0) {
            idle_since = 0;
            continue;
        }
        if (!kInline && o.engine_yield) ::sched_yield();
        if (!sender_done.load(std::memory_order_acquire)) continue;
        if (applied >= sent_msgs.load(std::memory_order_relaxed)) break;
        const std::int64_t now = mono_ns();
        if (idle_since == 0) idle_since = now;
        else if (now - idle_since > 300'000'000) break;  // 300 ms without anything: the rest is lost
    }
    sender.join();
    if constexpr (!kInline) feed.stop();
    while (poll(4096) != 0) {
    }

    r.sent_msgs = sent_msgs.load();
    r.applied = applied;
    r.timed = timed;
    r.unchanged = unchanged;
    r.achieved_rate = send_last > send_first
                          ? static_cast<double>(r.sent_dgrams - 1) * o.batch * 1e9 / static_cast<double>(send_last - send_first)
                          : 0;
    for (const auto& l : feed.line_stats()) {
        r.kernel_drops += l->kernel_drops.get();
        r.seq_gaps += l->seq_gaps.get();
    }
    if constexpr (!kInline) r.ring_overflow = feed.publisher_counters().ring_overflow_packets.get();
    r.has_stages = kStages;
    if constexpr (kStages) r.stamp_cost_ns = stamp_cost_ns();
    r.arb_gaps = feed.arbiter_counters().released_gaps.get();
    r.seq_lost = bench::health_of(feed.instruments()).lost;
    r.t2b_co = r.t2b.corrected(r.interval_ns);
    r.own_co = r.own.corrected(r.interval_ns);
    r.negatives = r.t2b.negatives() + r.own.negatives() + r.ktx.negatives();
    r.load_after = loadavg();
}


template <class W>
Result run_point_for(const Options& o, Backend backend, Mode mode, double rate, double seconds) {
    Result r;
    r.protocol = W::kProto;
    r.mode = mode;
    r.backend = backend;
    r.rate = rate;
    r.seconds = seconds;
    r.batch = o.batch;
    r.both_lines = o.both_lines;
    r.sender_cpu = o.sender_cpu;
    r.engine_cpu = o.engine_cpu;
    r.net_cpu = net_cpu_for(o, mode);
    r.engine_yield = o.engine_yield && mode != Mode::kInline;  // inline always spins
    r.tag = o.tag;
    r.load_before = loadavg();

    tickgate::Config cfg;
    tickgate::ChannelConfig ch;
    ch.id = o.channel;
    const char* interface = backend == Backend::kLoopback ? "127.0.0.1" : VethPair::kRxAddress;
    ch.a = {o.group_a, o.port, interface};
    ch.b = {o.group_b, static_cast<std::uint16_t>(o.port + 1), interface};
    cfg.channels.push_back(ch);
    W::configure(cfg);
    cfg.receiver.ring_size = o.ring_size;
    if (backend == Backend::kAfXdp) {
        cfg.receiver.backend = tickgate::ReceiveBackend::kAfXdp;
        cfg.receiver.af_xdp.interface = VethPair::kRxInterface;
        cfg.receiver.af_xdp.mode = o.xdp_mode;
    }
    // The handler (its sockets, and the network thread it starts) in the
    // receiving namespace; back home once it is gone.
    if (backend != Backend::kLoopback) g_veth->enter_handler();
    struct Home {
        bool away;
        ~Home() {
            if (away) g_veth->leave();
        }
    } home{backend != Backend::kLoopback};
    cfg.threading.mode = mode == Mode::kBusy ? tickgate::ThreadMode::kBusyPoll : tickgate::ThreadMode::kBlocking;
    cfg.threading.busy_poll_yield = o.engine_yield;
    cfg.threading.pipeline = mode == Mode::kInline ? tickgate::PipelineMode::kInline : tickgate::PipelineMode::kTwoThread;
    cfg.threading.receiver_cpu = r.net_cpu;
    cfg.threading.engine_cpu = o.engine_cpu;

    using P = typename W::Protocol;
    if (mode != Mode::kInline) {
        tickgate::BasicFeedHandler<P> feed(cfg);
        measure<W>(o, r, feed, rate, seconds);
        return r;
    }
    if constexpr (W::kProto == Proto::kQfb1) {
        if (o.stages) {
            tickgate::BasicInlineFeedHandler<P, StampedBook> feed(cfg);
            measure<W, decltype(feed), StageProbe>(o, r, feed, rate, seconds);
            return r;
        }
    }
    tickgate::BasicInlineFeedHandler<P> feed(cfg);
    measure<W>(o, r, feed, rate, seconds);
    return r;
}

Result run_point(const Options& o, Backend backend, Mode mode, double rate, double seconds) {
    switch (o.protocol) {
        case Proto::kMdp3: return run_point_for<Mdp3Workload>(o, backend, mode, rate, seconds);
        case Proto::kItch50: return run_point_for<Itch50Workload>(o, backend, mode, rate, seconds);
        case Proto::kQfb1: break;
    }
    return run_point_for<Qfb1Workload>(o, backend, mode, rate, seconds);
}

// ------------------------------------------------------------------ output
std::string fmt_rate(double r) {
    char b[32];
    if (r >= 1e6 && std::fmod(r, 1e5) == 0) std::snprintf(b, sizeof b, "%gM", r / 1e6);
    else if (r >= 1e3 && std::fmod(r, 1e2) == 0) std::snprintf(b, sizeof b, "%gk", r / 1e3);
    else std::snprintf(b, sizeof b, "%.0f", r);
    return b;
}

std::string us(std::int64_t ns) {
    char b[32];
    std::snprintf(b, sizeof b, ns < 10'000 ? "%.2f" : ns < 1'000'000 ? "%.1f" : "%.0f", static_cast<double>(ns) / 1000.0);
    return b;
}

void print_hist_row(const char* what, const Histogram& h) {
    std::printf("    %-28s", what);
    for (double p : kPcts) std::printf(" %9s", us(h.at(p)).c_str());
    std::printf(" %9s %11" PRIu64 "\n", us(h.max()).c_str(), h.count());
}

// A point's name in the summaries: its mode, over veth its backend, its tag.
// QFB/1's points keep their old names; another protocol's are prefixed with it.
std::string proto_mode(const Result& r) {
    return r.protocol == Proto::kQfb1 ? std::string(mode_name(r.mode))
                                      : std::string(proto_name(r.protocol)) + "/" + mode_name(r.mode);
}

std::string label(const Result& r) {
    std::string l = proto_mode(r);
    if (r.backend != Backend::kLoopback) l += std::string("/") + backend_name(r.backend);
    if (!r.tag.empty()) l += "/" + r.tag;
    return l;
}

void print_result(const Result& r) {
    if (!r.tag.empty()) std::printf("\n== [%s]", r.tag.c_str());
    if (r.backend != Backend::kLoopback)
        std::printf("\n== backend %s: a veth pair between two namespaces of this run (sender %s, handler %s)%s",
                    backend_name(r.backend), VethPair::kTxAddress, VethPair::kRxAddress,
                    r.backend == Backend::kAfXdp ? "; recv stamp = CPU clock when the RX ring batch is seen" : "");
    std::printf("\n== %s  rate %s msg/s  (%s dgram/s, batch %u, line%s)  %.1f s  [sender cpu %d, engine cpu %d%s, net cpu %s]\n",
                proto_mode(r).c_str(), fmt_rate(r.rate).c_str(), fmt_rate(r.rate / r.batch).c_str(), r.batch,
                r.both_lines ? "s A+B" : " A", r.seconds, r.sender_cpu, r.engine_cpu,
                r.engine_yield ? " (yields when idle)" : "",
                r.mode == Mode::kInline ? "none (inline)" : r.net_cpu < 0 ? "unpinned" : std::to_string(r.net_cpu).c_str());
    std::printf("    %-28s %9s %9s %9s %9s %9s %9s %11s\n", "latency (us)", "p50", "p90", "p99", "p99.9", "p99.99",
                "max", "count");
    print_hist_row("tick-to-book (CO-corrected)", r.t2b_co);
    print_hist_row("tick-to-book (raw)", r.t2b);
    print_hist_row("from schedule (raw)", r.sched);
    print_hist_row("recv stamp->book (CO-corr)", r.own_co);
    print_hist_row("recv stamp->book (raw)", r.own);
    print_hist_row("sendto->recv stamp (raw)", r.ktx);
    print_hist_row("sender lateness (raw)", r.late);
    if (r.has_stages) {
        std::printf("    stages of accepted Q/D messages (raw; each stamp costs ~%" PRId64 " ns, included in the stage after it)\n",
                    r.stamp_cost_ns);
        for (const StageRow& s : kStageRows) print_hist_row(s.title, r.*s.hist);
    }
    std::printf("    sent %" PRIu64 " msgs (%" PRIu64 " dgrams, %" PRIu64 " send errors), applied %" PRIu64
                ", missing %" PRIu64 "; kernel drops %" PRIu64 ", seq gaps %" PRIu64 ", ring overflows %" PRIu64
                ", sequencer lost %" PRIu64 "; achieved %s msg/s%s -> %s\n",
                r.sent_msgs, r.sent_dgrams, r.send_errors, r.applied, r.missing(), r.kernel_drops, r.seq_gaps,
                r.ring_overflow, r.seq_lost, fmt_rate(std::round(r.achieved_rate)).c_str(),
                r.rate_held() ? "" : " (SENDER COULD NOT HOLD THE RATE)", r.zero_loss() ? "zero loss" : "LOSS");
    if (r.protocol != Proto::kQfb1)
        std::printf("    measured messages that changed no book: %" PRIu64 " of %" PRIu64 "\n", r.unchanged, r.applied);
    if (r.negatives) std::printf("    note: %" PRIu64 " negative intervals clamped to 0 (clock step?)\n", r.negatives);
    std::printf("    load avg before/after: %s / %s\n", r.load_before.c_str(), r.load_after.c_str());
    std::fflush(stdout);
}

tickgate::json::Value hist_json(const Histogram& h) {
    tickgate::json::Value o = {{"count", h.count()}, {"mean_ns", std::llround(h.mean())}, {"min_ns", h.min()}};
    const char* names[] = {"p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "p99_99_ns"};
    for (std::size_t i = 0; i < std::size(kPcts); ++i) o[names[i]] = h.at(kPcts[i]);
    o["max_ns"] = h.max();
    return o;
}

tickgate::json::Value stages_json(const Result& r) {
    if (!r.has_stages) return {};
    tickgate::json::Value o = {{"stamp_cost_ns", r.stamp_cost_ns}};
    for (const StageRow& s : kStageRows) o[s.key] = hist_json(r.*s.hist);
    return o;
}

tickgate::json::Value result_json(const Result& r) {
    return {{"mode", mode_name(r.mode)},
            {"protocol", proto_name(r.protocol)},
            {"backend", backend_name(r.backend)},
            {"rate", r.rate},
            {"batch", r.batch},
            {"lines", r.both_lines ? "ab" : "a"},
            {"seconds", r.seconds},
            {"sender_cpu", r.sender_cpu},
            {"engine_cpu", r.engine_cpu},
            {"net_cpu", r.net_cpu},
            {"engine_idle", r.engine_yield ? "yield" : "spin"},
            {"tag", r.tag},
            {"expected_interval_ns", r.interval_ns},
            {"achieved_rate", std::llround(r.achieved_rate)},
            {"rate_held", r.rate_held()},
            {"sent_msgs", r.sent_msgs},
            {"sent_dgrams", r.sent_dgrams},
            {"send_errors", r.send_errors},
            {"applied", r.applied},
            {"timed", r.timed},
            {"unchanged_books", r.unchanged},
            {"missing", r.missing()},
            {"kernel_drops", r.kernel_drops},
            {"seq_gaps", r.seq_gaps},
            {"ring_overflow_packets", r.ring_overflow},
            {"sequencer_lost", r.seq_lost},
            {"zero_loss", r.zero_loss()},
            {"load_before", r.load_before},
            {"load_after", r.load_after},
            {"tick_to_book_corrected", hist_json(r.t2b_co)},
            {"tick_to_book_raw", hist_json(r.t2b)},
            {"from_schedule_raw", hist_json(r.sched)},
            {"recv_to_book_corrected", hist_json(r.own_co)},
            {"recv_to_book_raw", hist_json(r.own)},
            {"send_to_recv_raw", hist_json(r.ktx)},
            {"sender_lateness", hist_json(r.late)},
            {"stages", stages_json(r)}};
}

void write_dat(const Options& o, const Result& r) {
    if (o.hist_out.empty()) return;
    std::string suffix = std::string(mode_name(r.mode)) + "-" + fmt_rate(r.rate);
    if (r.protocol != Proto::kQfb1) suffix = std::string(proto_name(r.protocol)) + "-" + suffix;
    if (r.backend != Backend::kLoopback) suffix += std::string("-") + backend_name(r.backend);
    if (r.batch != 1) suffix += "-b" + std::to_string(r.batch);
    if (r.both_lines) suffix += "-ab";
    if (!o.tag.empty()) suffix += "-" + o.tag;
    const struct {
        const char* tag;
        const Histogram* h;
        const char* what;
    } files[] = {{"", &r.t2b_co, "tick-to-book, CO-corrected"}, {"-own", &r.own_co, "kernel recv stamp -> book, CO-corrected"}};
    for (const auto& f : files) {
        const std::string path = o.hist_out + "-" + suffix + f.tag + ".dat";
        std::FILE* fp = std::fopen(path.c_str(), "w");
        if (!fp) {
            std::fprintf(stderr, "cannot write %s\n", path.c_str());
            continue;
        }
        f.h->write_distribution(fp, std::string(f.what) + ": " + proto_mode(r) + " " + fmt_rate(r.rate) +
                                        " msg/s, batch " + std::to_string(r.batch));
        std::fclose(fp);
        std::printf("    wrote %s\n", path.c_str());
    }
}

std::string command_for(const Options& o, Mode m, double rate, double seconds) {
    std::ostringstream c;
    c << "latency_bench";
    if (o.protocol != Proto::kQfb1) c << " --protocol " << proto_name(o.protocol);
    c << " --mode " << mode_name(m) << " --rate " << std::llround(rate) << " --seconds " << seconds
      << " --batch " << o.batch << " --lines " << (o.both_lines ? "ab" : "a")
      << " --engine-cpu " << o.engine_cpu;
    if (m != Mode::kInline) c << " --net-cpu " << net_cpu_for(o, m) << (o.engine_yield ? " --engine-idle yield" : "");
    if (o.nice) c << " --nice " << *o.nice;
    if (o.spin_us != 2) c << " --spin-us " << o.spin_us;
    return c.str();
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    if (o.nice) bench::set_priority(*o.nice, "latency_bench");
    try {
        self_check_layout();
        const auto mi = bench::machine_info();
        std::printf("== machine: %s, %u cores, %s, governor %s, load %s\n", mi.cpu.c_str(), mi.cores,
                    mi.kernel.c_str(), mi.governor.c_str(), loadavg().c_str());
        std::ifstream agf("/proc/self/autogroup");
        std::string ag;
        std::getline(agf, ag);
        std::printf("== nice %d (inherited by every thread of the run), %s\n", ::getpriority(PRIO_PROCESS, 0),
                    ag.empty() ? "no autogroup" : ag.c_str());
        std::printf("== threads: sender pinned to core %d (sleeps to %.1f us before each send, then spins), "
                    "engine = main thread pinned to core %d (spins on FeedHandler::poll), network thread: "
                    "blocking -> %s, busy_poll -> %s; inline: the main thread on core %d is the whole handler "
                    "(spins on recvmmsg; no network thread, no ring)\n",
                    o.sender_cpu, o.spin_us, o.engine_cpu,
                    net_cpu_for(o, Mode::kBlocking) < 0 ? "unpinned (sleeps in ppoll)" : ("core " + std::to_string(net_cpu_for(o, Mode::kBlocking)) + " (sleeps in ppoll)").c_str(),
                    ("core " + std::to_string(net_cpu_for(o, Mode::kBusy)) + " (spins on recvmmsg)").c_str(), o.engine_cpu);
        if (mi.cores <= 2)
            std::printf("== note: %u cores. busy_poll means 3 runnable threads (sender + spinning network thread + "
                        "spinning engine) on %u cores: the sender and the network thread share core %d and "
                        "time-slice; only rates whose sends leave the network thread enough of that core hold.\n",
                        mi.cores, mi.cores, o.sender_cpu);
        if (o.protocol == Proto::kMdp3)
            std::printf("== protocol mdp3: BasicFeedHandler / BasicInlineFeedHandler<mdp3::Protocol>; one "
                        "MDIncrementalRefreshBook46 of --batch MBP entries per packet, 64 SecurityIDs (no definition "
                        "feed); send time = packet SendingTime (patched just before sendto), schedule = TransactTime. "
                        "Timed: every applied book entry.\n");
        else if (o.protocol == Proto::kItch50)
            std::printf("== protocol itch50: BasicFeedHandler / BasicInlineFeedHandler<itch50::Protocol>; MoldUDP64 "
                        "session, stock directory first (untimed), then --batch A/E/X/D/U messages per packet; send "
                        "time = every message's timestamp (ns since midnight, utc_offset_minutes = 0, patched just "
                        "before sendto; the day from the book time), schedule = from the stream position. Timed: every "
                        "applied order message.\n");
        std::printf("== CO correction: HdrHistogram recordValueWithExpectedInterval with the datagram interval "
                    "(batch/rate); 'from schedule' = book time - scheduled send time (open-loop, CO-free).\n");
        std::fflush(stdout);

        if (std::any_of(o.backends.begin(), o.backends.end(), [](Backend b) { return b != Backend::kLoopback; }))
            g_veth.emplace();
        std::vector<Result> results;
        struct Search {
            Mode mode;
            double max_rate;
            bool confirmed;
            std::string command;
            std::vector<std::pair<double, bool>> steps;
        };
        std::vector<Search> searches;

        if (!o.max_rate) {
            for (const Backend b : o.backends)
                for (const Mode m : o.modes)
                    for (const double rate : o.rates) {
                        Result r = run_point(o, b, m, rate, o.seconds);
                        print_result(r);
                        write_dat(o, r);
                        results.push_back(std::move(r));
                    }
        } else {
            for (const Backend b : o.backends)
            for (const Mode m : o.modes) {
                Search s{m, 0, false, "", {}};
                auto pass = [&](double rate, double secs) {
                    Result r = run_point(o, b, m, rate, secs);
                    print_result(r);
                    const bool ok = r.zero_loss() && r.rate_held();
                    std::printf("    -> %s at %s msg/s: %s\n", mode_name(m), fmt_rate(rate).c_str(),
                                ok ? "PASS" : r.rate_held() ? "FAIL (loss)" : "FAIL (sender could not offer the rate)");
                    s.steps.emplace_back(rate, ok);
                    results.push_back(std::move(r));
                    return ok;
                };
                double lo = 0, hi = 0, rate = o.start_rate;
                while (rate <= o.max_search_rate) {  // doubling until the first failure
                    if (pass(rate, o.seconds)) {
                        lo = rate;
                        rate *= 2;
                    } else {
                        hi = rate;
                        break;
                    }
                }
                if (hi == 0) hi = rate;
                if (lo == 0) {  // even the start rate fails: search below it
                    lo = o.start_rate / 64;
                }
                while (hi / lo > 1 + o.tolerance) {  // geometric bisection
                    double mid = std::sqrt(lo * hi);
                    const double unit = mid >= 1e5 ? 1000 : 100;
                    mid = std::round(mid / unit) * unit;
                    if (mid <= lo || mid >= hi) break;
                    (pass(mid, o.seconds) ? lo : hi) = mid;
                }
                // Confirmation at the found rate; step down 10% on failure (3 tries).
                double found = lo;
                for (int t = 0; t < 3 && o.confirm_seconds > 0; ++t) {
                    std::printf("\n== confirmation: %s at %s msg/s for %.0f s\n", mode_name(m), fmt_rate(found).c_str(),
                                o.confirm_seconds);
                    if (pass(found, o.confirm_seconds)) {
                        s.confirmed = true;
                        break;
                    }
                    found = std::round(found * 0.9 / 100) * 100;
                }
                s.max_rate = found;
                s.command = command_for(o, m, found, o.confirm_seconds > 0 ? o.confirm_seconds : o.seconds);
                searches.push_back(s);
            }
        }

        // Summary tables.
        std::printf("\n== summary: tick-to-book (CO-corrected), us\n");
        std::printf("%-22s %9s %5s %9s %9s %9s %9s %9s %9s %11s %9s %8s %8s\n", "mode", "rate", "batch", "p50", "p90",
                    "p99", "p99.9", "p99.99", "max", "count", "missing", "kdrops", "ok");
        for (const auto& r : results) {
            std::printf("%-22s %9s %5u", label(r).c_str(),
                        fmt_rate(r.rate).c_str(), r.batch);
            for (double p : kPcts) std::printf(" %9s", us(r.t2b_co.at(p)).c_str());
            std::printf(" %9s %11" PRIu64 " %9" PRIu64 " %8" PRIu64 " %8s\n", us(r.t2b_co.max()).c_str(), r.t2b_co.count(),
                        r.missing(), r.kernel_drops, r.zero_loss() && r.rate_held() ? "yes" : "NO");
        }
        std::printf("\n== summary: raw (uncorrected) p50 / p99 / p99.9 / max, us\n");
        std::printf("%-22s %9s %5s %31s %31s %31s\n", "mode", "rate", "batch", "tick-to-book", "recv stamp->book",
                    "from schedule");
        for (const auto& r : results) {
            auto cell = [](const Histogram& h) {
                return us(h.at(50)) + "/" + us(h.at(99)) + "/" + us(h.at(99.9)) + "/" + us(h.max());
            };
            std::printf("%-22s %9s %5u %31s %31s %31s\n",
                        label(r).c_str(), fmt_rate(r.rate).c_str(), r.batch,
                        cell(r.t2b).c_str(), cell(r.own).c_str(), cell(r.sched).c_str());
        }
        for (const auto& s : searches) {
            std::printf("\n== max zero-loss rate, %s, batch %u, line%s: %s msg/s (%s dgram/s) %s\n   steps:",
                        o.protocol == Proto::kQfb1 ? mode_name(s.mode)
                                                   : (std::string(proto_name(o.protocol)) + "/" + mode_name(s.mode)).c_str(), o.batch, o.both_lines ? "s A+B" : " A", fmt_rate(s.max_rate).c_str(),
                        fmt_rate(std::round(s.max_rate / o.batch)).c_str(),
                        s.confirmed ? "(confirmed)" : "(NOT confirmed)");
            for (const auto& [rate, ok] : s.steps) std::printf(" %s:%s", fmt_rate(rate).c_str(), ok ? "ok" : "fail");
            std::printf("\n   command: %s\n", s.command.c_str());
        }

        if (!o.json.empty()) {
            tickgate::json::Value doc = {{"tool", "latency_bench"}, {"protocol", proto_name(o.protocol)}, {"command", o.argv_line},
                                         {"machine", bench::machine_json(mi)}, {"results", tickgate::json::Value::array()}};
            for (const Result& r : results) doc["results"].push_back(result_json(r));
            if (!searches.empty()) {
                tickgate::json::Value& max_rate = doc["max_rate"] = tickgate::json::Value::array();
                for (const auto& s : searches) {
                    tickgate::json::Value steps = tickgate::json::Value::array();
                    for (const auto& [rate, pass] : s.steps) steps.push_back({{"rate", rate}, {"pass", pass}});
                    max_rate.push_back({{"mode", mode_name(s.mode)},
                                        {"batch", o.batch},
                                        {"max_rate", s.max_rate},
                                        {"confirmed", s.confirmed},
                                        {"confirm_seconds", o.confirm_seconds},
                                        {"command", s.command},
                                        {"steps", std::move(steps)}});
                }
            }
            if (!bench::write_json(o.json, doc)) return 1;
            std::printf("\n== wrote %s\n", o.json.c_str());
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "latency_bench: %s\n", e.what());
        return 1;
    }
}
