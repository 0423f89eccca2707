// tickgate: the command-line front end. Exit codes: 0 ok, 1 runtime
// failure, 2 bad usage, bad config or unreadable input, 3 the capture was cut
// short (replay, send: everything intact was processed, the output is whole).
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <map>
#include <thread>

#include "tickgate/feed_handler.hpp"
#include "tickgate/idle.hpp"
#include "tickgate/feed/metrics.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed/state_log.hpp"
#include "tickgate/feed/replay.hpp"
#include "tickgate/feed/qfb1/simulator.hpp"
#include "tickgate/text.hpp"

#include "options.hpp"



namespace {

using namespace tickgate;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
// Distinct from 0 so that tooling checking only the exit code learns that the
// input was incomplete, and from 2 because the summary is there and valid
// for every intact record: a cut capture is the normal state of a file
// still being written or of a capture killed with its machine.
constexpr int kExitCaptureCut = 3;

constexpr std::string_view kVersion = "0.1.0";

constexpr std::string_view kTopHelp = R"(tickgate — market-data feed handler (protocols: qfb1)

usage: tickgate <command> [options]

commands:
  run      the live handler: join the configured lines, show the live book and gate
  sim      a venue simulator publishing QFB/1 on loopback multicast (A and B lines)
  replay   replay a pcap/pcapng capture through the handler and print the summary
  capture  write the live datagrams with kernel timestamps to a pcap/pcapng file
  send     re-publish a capture's multicast datagrams on loopback
  config   `config check FILE`: validate a config and print the memory it needs
  help     this text

  tickgate <command> --help   lists the options of a command
  tickgate --version          prints the version

exit codes: 0 ok, 1 runtime failure, 2 bad usage, bad config or unreadable input,
            3 the capture was cut short mid-record (replay, send): what is intact was
            processed and the summary printed, a warning on stderr says where it was cut
)";

constexpr std::string_view kReplayHelp = R"(usage: tickgate replay [options] CAPTURE

Replays a pcap (µs or ns) or pcapng capture through decode -> sequencer ->
book -> gate. Each record's capture time is the arrival time; the gate is
evaluated at the time of the last record. A capture cut short mid-record (a
killed capture, a full disk, a file still being written) is replayed up to
the cut: the summary says "capture_truncated": true, a warning on stderr
says where, and the exit code is 3.

options:
  --config FILE        TOML config (instruments, channels to filter on, capacities, gate);
                       default: built-in defaults, every UDP/IPv4 datagram taken
  --protocol NAME      the capture's protocol (qfb1, the default); with --config, its
                       channels' protocol, which this must match
  --json               print the JSON summary on stdout (default: a readable table)
  --stale-ms N         gate: max silence in ms (default 250, or the config's)
  --source-age-ms N    gate: max age at source in ms (default 2000, or the config's)
  --arbitrate          merge lines A/B by packet_seq first, as `tickgate run` does (duplicate
                       packets dropped whole); default: every datagram in capture order, the
                       venue reference handler's semantics (certification)
  --stats              print replay throughput on stderr
  -h, --help           this text
)";

constexpr std::string_view kRunHelp = R"(usage: tickgate run --config FILE [options]

The live handler: joins lines A and B of every configured channel, shows the
live view (instrument, bid/ask, last seq, lost, dups, state, age, gate)
a few times a second (plain periodic blocks when not a terminal), and prints
the summary at exit. Stops cleanly on SIGINT/SIGTERM.

options:
  --config FILE        TOML config (required; `tickgate config check FILE` prints the memory
                       it makes run allocate, refused above capacity.max_memory_mb)
  --protocol NAME      must match the config's channels' protocol (qfb1)
  --duration S         stop after S seconds, a decimal number (default: run until a signal)
  --json               print the JSON summary on stdout at exit, with a "live" object: per line
                       (packets, seq gaps, kernel drops, ...), A/B arbitration (duplicates, lost
                       on both, ...) and ring (overflows) counters; the live view goes to stderr
  --refresh-ms N       live view refresh period on a terminal (default 250)
  --quiet              no live view
  --metrics ADDR:PORT  serve Prometheus metrics at http://ADDR:PORT/metrics (127.x only, e.g.
                       127.0.0.1:9108; port 0: a free one, printed on stderr). Takes precedence
                       over the config's [metrics] table; without it, the endpoint is on when
                       [metrics] enabled = true, at its listen address (default: off)
  -h, --help           this text
)";

constexpr std::string_view kCaptureHelp = R"(usage: tickgate capture --config FILE --out FILE [options]

Writes every datagram received on the configured lines, with its kernel
receive timestamp, to a capture that `tickgate replay` reads back. The file
is flushed at least once a second, so it can be read while the capture runs
and a crash loses at most the last second.

options:
  --config FILE        TOML config (required)
  --protocol NAME      must match the config's channels' protocol (qfb1); its header tells a
                       datagram naming another channel than its line's, which is not recorded
  --out FILE           output capture (required)
  --format F           pcap (nanosecond, default) or pcapng
  --duration S         stop after S seconds, a decimal number (default: until SIGINT/SIGTERM)
  -h, --help           this text

A file that cannot be created or written is a runtime failure (exit 1).
)";

constexpr std::string_view kConfigHelp = R"(usage: tickgate config check FILE

Reads and validates FILE as `tickgate run` would, then prints the memory it
makes the live handler allocate at start-up, part by part (books, recovery
pool, event ring, per-instrument state, receiver and arbiter), and the limit
capacity.max_memory_mb (default: half of this machine's physical memory).
Exit 0 if the config is valid and within the limit, 2 if not (one line on
stderr: FILE:LINE: KEY: expected ..., got ...).

options:
  -h, --help           this text
)";

constexpr std::string_view kSendHelp = R"(usage: tickgate send [options] CAPTURE

Re-publishes the capture's UDP datagrams addressed to multicast groups on
loopback (interface 127.0.0.1, TTL 0), to the same group:port, with the
original pacing. SIGINT/SIGTERM stop it at once, even in a long wait between
two records (exit 0). A capture cut short mid-record is sent up to the cut,
then a warning and exit code 3.

options:
  --speed X            pacing multiplier, a decimal number (default 1.0: original pacing; 2 = twice as fast)
  --max-speed          as fast as possible
  --interface ADDR     loopback address to send from (default 127.0.0.1; only 127.x allowed)
  --protocol NAME      the capture's protocol (qfb1, the default): datagrams without a readable
                       header are still sent, and counted in the closing line
  -h, --help           this text
)";

using cli::UsageError;

// The config of --config (or the defaults), its protocol set by --protocol:
// the config's channels name theirs, and a --protocol must agree with it.
Config config_from(const cli::Options& a, bool required) {
    const auto name = a.text("--protocol");
    if (name && std::find(kProtocolNames.begin(), kProtocolNames.end(), *name) == kProtocolNames.end())
        throw UsageError{fmt::format("--protocol: expected one of {}, got '{}'", protocol_list(), printable(*name))};
    Config cfg;
    if (const auto path = a.text("--config")) cfg = load_config(*path);
    else if (required) throw UsageError{"--config FILE is required"};
    if (name) {
        if (!cfg.channels.empty() && cfg.protocol() != *name)
            throw UsageError{fmt::format("--protocol {}: the config's channels speak {}", *name, cfg.protocol())};
        cfg.default_protocol = *name;
    }
    return cfg;
}

// The one stderr line of a capture cut short mid-record.
void warn_cut_short(const std::string& path, const CaptureTruncation& t, std::string_view done) {
    fmt::print(stderr, "tickgate: warning: {}: cut short at byte {} of {} (record {}: {}); the {} intact records were {}\n",
               printable(path), t.intact_bytes, t.file_bytes, t.intact_records + 1, t.detail, t.intact_records, done);
}

// run and capture receive on the configured lines: a config without any is a
// bad config (exit 2), said before sockets are touched.
void require_channels(const Config& cfg, std::string_view command) {
    if (cfg.channels.empty())
        throw ConfigError(fmt::format("{}:1: channel: expected at least one [[channel]] ({} receives on its lines A "
                                      "and B), got none",
                                      cfg.source, command));
}

template <VenueProtocol P>
int replay_as(const cli::Options& a, const std::string& capture, const Config& cfg);

int cmd_replay(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--json", "--stats", "--arbitrate"},
                         {"--config", "--protocol", "--stale-ms", "--source-age-ms"}, "replay");
    if (a.help()) {
        fmt::print("{}", kReplayHelp);
        return kExitOk;
    }
    if (a.positional().size() != 1) throw UsageError{"replay takes exactly one CAPTURE (see tickgate replay --help)"};
    const std::string& capture = a.positional().front();
    Config cfg = config_from(a, false);
    cfg.gate.stale_ms = a.integer("--stale-ms", cfg.gate.stale_ms, 1, 86'400'000);
    cfg.gate.source_age_ms = a.integer("--source-age-ms", cfg.gate.source_age_ms, 1, 86'400'000);

    return with_protocol(cfg.protocol(), [&]<VenueProtocol P>() { return replay_as<P>(a, capture, cfg); });
}

template <VenueProtocol P>
int replay_as(const cli::Options& a, const std::string& capture, const Config& cfg) {
    BasicHandler<P> handler(cfg.capacity, cfg.gate);
    apply_config(handler, cfg);
    const ReplayResult r = replay_capture(capture, cfg, handler, {.progress = true, .arbitrate = a.has("--arbitrate")});

    const SummaryContext ctx{.now_ns = r.last_ts_ns,
                             .capture = capture,
                             .frames = &r.frames,
                             .truncation = r.truncation ? &*r.truncation : nullptr,
                             .foreign_channel_packets = r.foreign_channel_packets};
    fmt::print("{}", a.has("--json") ? summary_json(summary_source(handler), ctx)
                                     : summary_table(summary_source(handler), ctx));
    if (r.truncation) warn_cut_short(capture, *r.truncation, "replayed");
    if (a.has("--stats")) {
        const auto msgs = handler.decoder().counters().messages.get();
        fmt::print(stderr, "replay: {} records, {} datagrams, {} messages in {:.3f} s = {:.2f} M messages/s\n",
                   r.frames.records, r.frames.udp_datagrams, msgs, r.wall_seconds,
                   r.wall_seconds > 0 ? static_cast<double>(msgs) / r.wall_seconds / 1e6 : 0.0);
    }
    return r.truncation ? kExitCaptureCut : kExitOk;
}

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop.store(true); }

// Sleeps until `due` or a SIGINT/SIGTERM, whichever comes first: in slices
// of at most 20 ms, because the signal handler only sets g_stop and a plain
// sleep_until would sit out the whole wait (a capture with a 300 s gap kept
// `send` alive for minutes after Ctrl-C). Returns false if a signal came.
bool sleep_until_or_signal(std::chrono::steady_clock::time_point due) {
    constexpr auto kSlice = std::chrono::milliseconds(20);
    while (!g_stop.load(std::memory_order_relaxed)) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= due) return true;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(due - now, kSlice));
    }
    return false;
}

void install_signal_handlers() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
}

// Rule 7 drops per configured channel, both lines together, for the summary.
std::vector<ChannelPacketCount> foreign_channel_packets(const FeedStats& h) {
    std::vector<ChannelPacketCount> out;
    for (const auto& l : h.lines) {
        auto it = std::find_if(out.begin(), out.end(), [&](const auto& c) { return c.channel_id == l->channel_id; });
        if (it == out.end()) it = out.insert(out.end(), {l->channel_id, 0});
        it->packets += l->foreign_channel_packets.get();
    }
    return out;
}

// The live counters, each written once here and shown by `run --json`'s
// "live" object (its JSON name) and, for a line, by the live view's line
// table (its column title; none: JSON only). A script sees overload (kernel
// drops, ring overflows) and odd traffic (rejected sources, foreign
// channels, unconfirmed jumps) without scraping metrics.
template <class Counters>
struct CounterField {
    std::string_view name;
    RelaxedCounter Counters::*counter;
    std::string_view title = {};
};
constexpr CounterField<LineStats> kLineCounters[] = {
    {"packets", &LineStats::packets, "packets"},
    {"bytes", &LineStats::bytes},
    {"seq_gaps", &LineStats::seq_gaps, "gaps"},
    {"kernel_drops", &LineStats::kernel_drops, "k-drops"},
    {"rejected_source", &LineStats::rejected_source, "rejected"},
    {"foreign_channel_packets", &LineStats::foreign_channel_packets, "foreign"},
    {"oversized", &LineStats::oversized, "oversized"},
    {"recv_errors", &LineStats::recv_errors, "rcv-errors"},
};
constexpr CounterField<ArbiterCounters> kArbiterCounters[] = {
    {"duplicate_packets", &ArbiterCounters::duplicate_packets},
    {"held_packets", &ArbiterCounters::held_packets},
    {"filled_holes", &ArbiterCounters::filled_holes},
    {"lost_on_both", &ArbiterCounters::released_gaps},
    {"unarbitrated", &ArbiterCounters::unarbitrated},
    {"unconfirmed_jumps", &ArbiterCounters::unconfirmed_jumps},
    {"late_packets", &ArbiterCounters::late_packets},
};
constexpr CounterField<PublisherCounters> kRingCounters[] = {
    {"overflow_packets", &PublisherCounters::ring_overflow_packets},
    {"overflow_events", &PublisherCounters::ring_overflow_events},
    {"data_lost_marks", &PublisherCounters::data_lost_marks},
};

template <class Counters, std::size_t N>
std::string json_counters(const Counters& c, const CounterField<Counters> (&table)[N]) {
    std::string out;
    for (const auto& f : table) out += fmt::format(", \"{}\": {}", f.name, (c.*f.counter).get());
    return out;
}

// The live view's per-line statistics (the titled line counters), then A/B and ring.
std::string line_table(const FeedStats& h) {
    std::string out = fmt::format("{:<4} {:<4} {:>21}", "ch", "line", "group:port");
    for (const auto& f : kLineCounters)
        if (!f.title.empty()) out += fmt::format(" {:>10}", f.title);
    out += '\n';
    for (const auto& l : h.lines) {
        out += fmt::format("{:<4} {:<4} {:>21}", l->channel_id, l->line ? "B" : "A", fmt::format("{}:{}", l->group, l->port));
        for (const auto& f : kLineCounters)
            if (!f.title.empty()) out += fmt::format(" {:>10}", ((*l).*f.counter).get());
        out += '\n';
    }
    const auto& pc = h.publisher;
    const auto& ac = h.arbiter;
    out += fmt::format("A/B: duplicate packets {}  held {}  holes filled {}  lost on both {}\n",
                       ac.duplicate_packets.get(), ac.held_packets.get(), ac.filled_holes.get(),
                       ac.released_gaps.get());
    out += fmt::format("ring: fill {}  overflow packets {}  overflow events {}\n", h.ring.size_approx(),
                       pc.ring_overflow_packets.get(), pc.ring_overflow_events.get());
    return out;
}

// {"channels": [{"id": N, "lines": [{"line": "A", "group": ..., "port": ..., counters...}, B]}, ...],
//  "arbitration": {"enabled": bool, counters...}, "ring": {"capacity": N, "fill": N, counters...}}
std::string live_json(const FeedStats& h, bool arbitration) {
    std::string out = "{\n    \"channels\": [";
    const auto lines = h.lines;
    for (std::size_t i = 0; i < lines.size();) {
        const std::uint16_t channel = lines[i]->channel_id;
        out += fmt::format("{}\n      {{\"id\": {}, \"lines\": [", i == 0 ? "" : ",", channel);
        for (bool first = true; i < lines.size() && lines[i]->channel_id == channel; ++i, first = false) {
            const LineStats& l = *lines[i];
            out += fmt::format("{}{{\"line\": \"{}\", \"group\": \"{}\", \"port\": {}{}}}", first ? "" : ", ",
                               l.line ? "B" : "A", l.group, l.port, json_counters(l, kLineCounters));
        }
        out += "]}";
    }
    out += lines.empty() ? "],\n" : "\n    ],\n";
    out += fmt::format("    \"arbitration\": {{\"enabled\": {}{}}},\n", arbitration,
                       json_counters(h.arbiter, kArbiterCounters));
    out += fmt::format("    \"ring\": {{\"capacity\": {}, \"fill\": {}{}}}\n  }}", h.ring.capacity(),
                       h.ring.size_approx(), json_counters(h.publisher, kRingCounters));
    return out;
}

template <VenueProtocol P>
int run_as(const cli::Options& a, const Config& cfg, const std::optional<MetricsServerOptions>& metrics_listen,
           double duration, std::chrono::milliseconds refresh, bool json, bool quiet, std::FILE* view, bool tty);

int cmd_run(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--json", "--quiet"},
                         {"--config", "--protocol", "--duration", "--refresh-ms", "--metrics"}, "run");
    if (a.help()) {
        fmt::print("{}", kRunHelp);
        return kExitOk;
    }
    if (!a.positional().empty()) throw UsageError{"run takes no positional argument"};
    const Config cfg = config_from(a, true);
    require_channels(cfg, "run");
    // Where to serve metrics, if at all: --metrics, else the config's [metrics].
    std::optional<MetricsServerOptions> metrics_listen;
    if (const auto listen = a.text("--metrics")) {
        try {
            metrics_listen = parse_metrics_listen(*listen);
        } catch (const std::invalid_argument& e) {
            throw UsageError{fmt::format("--metrics: {}", e.what())};
        }
    } else if (cfg.metrics.enabled) {
        metrics_listen = MetricsServerOptions{.address = cfg.metrics.address, .port = cfg.metrics.port};
    }
    const double duration = a.decimal("--duration", 0, 0, 1e9);
    const auto refresh = std::chrono::milliseconds(a.integer("--refresh-ms", 250, 10, 60000));
    const bool json = a.has("--json");
    const bool quiet = a.has("--quiet");
    std::FILE* view = json ? stderr : stdout;  // stdout stays machine-readable with --json
    const bool tty = ::isatty(::fileno(view)) != 0;

    return with_protocol(cfg.protocol(), [&]<VenueProtocol P>() {
        return run_as<P>(a, cfg, metrics_listen, duration, refresh, json, quiet, view, tty);
    });
}

template <VenueProtocol P>
int run_as(const cli::Options& a, const Config& cfg, const std::optional<MetricsServerOptions>& metrics_listen,
           double duration, std::chrono::milliseconds refresh, bool json, bool quiet, std::FILE* view, bool tty) {
    BasicFeedHandler<P> handler(cfg);
    // State changes (gaps, suspect, recovered, session change, line down/up,
    // overload) go through a ring to the logger thread: nothing is formatted here.
    StateLog state_log(cfg.logging, {.max_instruments = cfg.capacity.max_instruments}, &handler.instruments());
    MetricsRegistry metrics(handler.stats());
    std::optional<MetricsServer> server;
    if (metrics_listen) {
        server.emplace(metrics, *metrics_listen);
        try {
            server->start();
        } catch (const std::invalid_argument& e) {
            // A non-loopback or malformed address, which only --metrics can
            // give (the config's metrics.listen is checked when it is read).
            throw UsageError{fmt::format("--metrics {}: {}", a.text("--metrics").value_or(""), e.what())};
        }
        fmt::print(stderr, "metrics: http://{}:{}/metrics\n", metrics_listen->address, server->port());
    }
    // The engine acts as a consumer that would price one order per book
    // change: each update that changed a book asks the gate about its
    // instrument now, and every refusal is counted by reason
    // (tickgate_gate_rejections_total). A few loads and compares per update.
    GateRejections rejections;
    auto on_update = [&](const Update& u, const Event& ev) {
        state_log.on_update(u, ev);
        if (u.book_changed) {
            const GateDecision d = handler.gate().check(u.instrument_id, realtime_ns());
            if (!d.ok()) rejections.count(d.reason);
        }
    };
    install_signal_handlers();
    pin_current_thread_or_throw(cfg.threading.engine_cpu, "threading.engine_cpu");
    handler.start();
    const auto t0 = std::chrono::steady_clock::now();
    auto next_view = t0 + refresh;
    auto next_publish = t0;
    auto summary = [&] {
        return SummarySource{handler.decoder_counters(), handler.instruments(), handler.sequencer().counters(),
                             BookReader(handler.book()), handler.gate(), handler.gate_config()};
    };
    // The duty cycle, instantiated once per idle strategy (idle.hpp).
    auto engine_loop = [&](auto idle) {
        while (!g_stop.load(std::memory_order_relaxed)) {
            const std::size_t n = handler.poll(on_update, 1024);
            const auto now = std::chrono::steady_clock::now();
            if (duration > 0 && now - t0 >= std::chrono::duration<double>(duration)) return;
            if (now >= next_publish) {
                next_publish = now + std::chrono::milliseconds(250);
                metrics.publish(handler.stats(), rejections);
                state_log.on_line_activity(handler.line_stats(), realtime_ns());
            }
            if (!quiet && now >= next_view) {
                next_view = now + (tty ? refresh : std::chrono::milliseconds(1000));
                const std::int64_t wall = realtime_ns();
                const double t = std::chrono::duration<double>(now - t0).count();
                fmt::print(view, "{}", live_view(summary(), wall, cfg.source, t, line_table(handler.stats()), tty));
                std::fflush(view);
            }
            idle.idle(static_cast<int>(n));
        }
    };
    // Busy-poll: the engine spins like the network thread. Blocking: the
    // network thread sleeps in ppoll, so an empty ring means a quiet feed:
    // spin and yield briefly, then sleep 50 µs doubling up to 200 µs.
    if (cfg.threading.mode == ThreadMode::kBusyPoll)
        engine_loop(BusySpinIdle<>{});
    else
        engine_loop(BackoffIdle<>{64, 16, std::chrono::microseconds(50), std::chrono::microseconds(200)});
    handler.stop();
    while (handler.poll(on_update, 4096) != 0) {
    }
    metrics.publish(handler.stats(), rejections);
    if (server) server->stop();
    state_log.stop();
    const std::int64_t wall = realtime_ns();
    if (json) {
        fmt::print("{}", summary_json(summary(), {.now_ns = wall, .foreign_channel_packets = foreign_channel_packets(handler.stats())},
                                      live_json(handler.stats(), cfg.receiver.arbitration)));
    } else {
        fmt::print("{}\n{}", summary_table(summary(), {.now_ns = wall, .foreign_channel_packets = foreign_channel_packets(handler.stats())}), line_table(handler.stats()));
    }
    return kExitOk;
}

int cmd_config(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {}, {}, "config");
    if (a.help()) {
        fmt::print("{}", kConfigHelp);
        return kExitOk;
    }
    if (a.positional().size() != 2 || a.positional()[0] != "check")
        throw UsageError{"expected `config check FILE` (see tickgate config --help)"};
    const Config cfg = load_config(a.positional()[1]);  // refuses a config above the limit
    const MemoryEstimate e = estimate_memory(cfg);
    fmt::print("{}: ok\n", cfg.source);
    for (const MemoryPart& p : e.parts) {
        std::string keys;
        for (const std::string_view k : p.keys) keys += (keys.empty() ? "" : ", ") + std::string(k);
        fmt::print("  {:<22} {:>9} MiB  ({})\n", p.what, mib_ceil(p.bytes), keys);
    }
    fmt::print("memory: {} MiB estimated, limit {} MiB (capacity.max_memory_mb; default here: {} MiB, half of "
               "physical memory)\n",
               mib_ceil(e.total_bytes), cfg.max_memory_mb, default_max_memory_mb());
    return kExitOk;
}

int cmd_capture(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {}, {"--config", "--protocol", "--out", "--duration", "--format"}, "capture");
    if (a.help()) {
        fmt::print("{}", kCaptureHelp);
        return kExitOk;
    }
    if (!a.positional().empty()) throw UsageError{"capture takes no positional argument"};
    const Config cfg = config_from(a, true);
    require_channels(cfg, "capture");
    const auto out = a.text("--out");
    if (!out) throw UsageError{"capture: --out FILE is required"};
    const std::string fmt_name = a.text("--format").value_or("pcap");
    CaptureFormat format;
    if (fmt_name == "pcap") format = CaptureFormat::kPcapNano;
    else if (fmt_name == "pcapng") format = CaptureFormat::kPcapng;
    else throw UsageError{"--format: expected pcap or pcapng, got '" + fmt_name + "'"};
    const double duration = a.decimal("--duration", 0, 0, 1e9);

    Receiver receiver(cfg);
    CaptureWriter writer(*out, format);
    install_signal_handlers();
    std::uint64_t written = 0;
    // stdio's buffer alone would hold the last few KiB until exit: a reader of
    // the running capture saw nothing, a crash lost it. One flush a second,
    // from this loop (polls wake at least every 50 ms), not one per datagram.
    constexpr auto kFlushEvery = std::chrono::seconds(1);
    const auto t0 = std::chrono::steady_clock::now();
    auto next_flush = t0 + kFlushEvery;
    while (!g_stop.load(std::memory_order_relaxed)) {
        const auto now = std::chrono::steady_clock::now();
        if (duration > 0 && now - t0 >= std::chrono::duration<double>(duration)) break;
        if (now >= next_flush) {
            writer.flush();
            next_flush = now + kFlushEvery;
        }
        // With the protocol's key: a datagram naming another channel than its line's is not recorded (rule 7).
        with_protocol(cfg.protocol(), [&]<VenueProtocol P>() {
            receiver.poll_once<P>(50'000'000, [&](const RawDatagram& d, const typename P::Key&) {
                writer.write_udp(d.recv_ns, d.src_ip, d.src_port, d.dst_ip, d.dst_port, d.payload);
                ++written;
            });
        });
    }
    writer.flush();
    fmt::print(stderr, "capture: {} datagrams written to {}\n", written, *out);
    return kExitOk;
}

int cmd_send(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--max-speed"}, {"--speed", "--interface", "--protocol"}, "send");
    if (a.help()) {
        fmt::print("{}", kSendHelp);
        return kExitOk;
    }
    if (a.positional().size() != 1) throw UsageError{"send takes exactly one CAPTURE"};
    const double speed = a.decimal("--speed", 1.0, 0.000001, 1e9);
    const bool max_speed = a.has("--max-speed");
    MulticastSender sender(a.loopback_address("--interface", "127.0.0.1"));
    const Config cfg = config_from(a, false);  // its protocol: what `unreadable` counts against
    CaptureReader reader(a.positional().front());
    install_signal_handlers();
    FrameCounters frames;
    std::uint64_t sent = 0, skipped = 0, unreadable = 0;
    std::int64_t first_ts = 0;
    bool started = false;
    const auto t0 = std::chrono::steady_clock::now();
    while (!g_stop.load(std::memory_order_relaxed)) {
        const auto rec = reader.next();
        if (!rec) break;
        const auto d = extract_udp(reader.link_type(), rec->frame, frames);
        if (!d) continue;
        if (!is_multicast(d->dst_ip)) {  // only multicast groups are re-published
            ++skipped;
            continue;
        }
        if (!started) {
            first_ts = rec->ts_ns;
            started = true;
        }
        if (!max_speed) {
            const auto due = t0 + std::chrono::nanoseconds(
                                      static_cast<std::int64_t>(static_cast<double>(rec->ts_ns - first_ts) / speed));
            if (!sleep_until_or_signal(due)) break;
        }
        // Sent as captured, readable or not (a test feed may be hostile on purpose); counted.
        unreadable += with_protocol(cfg.protocol(),
                                    [&]<VenueProtocol P>() { return !P::read_key(d->payload, 0).valid(); });
        sent += sender.send(d->dst_ip, d->dst_port, d->payload) ? 1 : 0;
    }
    fmt::print(stderr,
               "send: {} datagrams sent ({} without a readable {} header), {} not multicast skipped, {} frames not "
               "UDP/IPv4\n",
               sent, unreadable, cfg.protocol(), skipped, frames.non_ip + frames.non_udp + frames.fragments + frames.truncated);
    if (reader.truncation()) {
        warn_cut_short(a.positional().front(), *reader.truncation(), "sent");
        return kExitCaptureCut;
    }
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    if (args.empty()) {
        fmt::print(stderr, "{}", kTopHelp);
        return kExitUsage;
    }
    const std::string_view cmd = args.front();
    args.erase(args.begin());
    try {
        if (cmd == "-h" || cmd == "--help" || cmd == "help") {
            fmt::print("{}", kTopHelp);
            return kExitOk;
        }
        if (cmd == "--version") {
            fmt::print("tickgate {}\n", kVersion);
            return kExitOk;
        }
        if (cmd == "replay") return cmd_replay(args);
        if (cmd == "run") return cmd_run(args);
        if (cmd == "sim") return cmd_sim(args);
        if (cmd == "capture") return cmd_capture(args);
        if (cmd == "send") return cmd_send(args);
        if (cmd == "config") return cmd_config(args);
        fmt::print(stderr, "tickgate: unknown command '{}'\n{}", cmd, kTopHelp);
        return kExitUsage;
    } catch (const UsageError& e) {
        fmt::print(stderr, "tickgate: {}\n", e.message);
        return kExitUsage;
    } catch (const ConfigError& e) {
        fmt::print(stderr, "tickgate: config error: {}\n", e.what());
        return kExitUsage;
    } catch (const CaptureWriteError& e) {
        fmt::print(stderr, "tickgate: {}\n", e.what());
        return kExitFailure;
    } catch (const CaptureError& e) {
        fmt::print(stderr, "tickgate: {}\n", e.what());
        return kExitUsage;
    } catch (const std::exception& e) {
        fmt::print(stderr, "tickgate: {}\n", e.what());
        return kExitFailure;
    }
}
