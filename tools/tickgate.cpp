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
#include "tickgate/feed/counter_fields.hpp"
#include "tickgate/feed/metrics.hpp"
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

constexpr std::string_view kTopHelp = R"(tickgate — QFB/1 market-data feed handler

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
  -h, --help           this text
)";

using cli::UsageError;

Config config_from(const cli::Options& a, bool required) {
    if (const auto path = a.text("--config")) return load_config(*path);
    if (required) throw UsageError{"--config FILE is required"};
    return Config{};
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

int cmd_replay(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--json", "--stats", "--arbitrate"}, {"--config", "--stale-ms", "--source-age-ms"},
                         "replay");
    if (a.help()) {
        fmt::print("{}", kReplayHelp);
        return kExitOk;
    }
    if (a.positional().size() != 1) throw UsageError{"replay takes exactly one CAPTURE (see tickgate replay --help)"};
    const std::string& capture = a.positional().front();
    Config cfg = config_from(a, false);
    cfg.gate.stale_ms = a.integer("--stale-ms", cfg.gate.stale_ms, 1, 86'400'000);
    cfg.gate.source_age_ms = a.integer("--source-age-ms", cfg.gate.source_age_ms, 1, 86'400'000);

    Handler handler(cfg.capacity, cfg.gate);
    apply_config(handler.sequencer(), cfg);
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
std::vector<ChannelPacketCount> foreign_channel_packets(const FeedHandler& h) {
    std::vector<ChannelPacketCount> out;
    for (const auto& l : h.line_stats()) {
        auto it = std::find_if(out.begin(), out.end(), [&](const auto& c) { return c.channel_id == l->channel_id; });
        if (it == out.end()) it = out.insert(out.end(), {l->channel_id, 0});
        it->packets += l->foreign_channel_packets.get();
    }
    return out;
}

// The titled counters of a counter_fields.hpp table: "title value  title value ...".
template <class S, std::size_t N>
std::string titled_counters(const S& s, const CounterField<S> (&table)[N]) {
    std::string out;
    for (const auto& f : table)
        if (!f.title.empty()) out += fmt::format("{}{} {}", out.empty() ? "" : "  ", f.title, f.get(s));
    return out;
}

// The live view's per-line statistics (a column per titled line counter of
// counter_fields.hpp), then the titled A/B and ring counters.
std::string line_table(const FeedHandler& h) {
    std::string out = fmt::format("{:<4} {:<4} {:>21}", "ch", "line", "group:port");
    for (const auto& f : kLineCounterFields)
        if (!f.title.empty()) out += fmt::format(" {:>10}", f.title);
    out += '\n';
    for (const auto& l : h.line_stats()) {
        out += fmt::format("{:<4} {:<4} {:>21}", l->channel_id, l->line ? "B" : "A", fmt::format("{}:{}", l->group, l->port));
        for (const auto& f : kLineCounterFields)
            if (!f.title.empty()) out += fmt::format(" {:>10}", f.get(*l));
        out += '\n';
    }
    out += fmt::format("A/B: {}\n", titled_counters(h.arbiter_counters(), kArbiterCounterFields));
    out += fmt::format("ring: fill {}  {}\n", h.ring_fill(), titled_counters(h.publisher_counters(), kRingCounterFields));
    return out;
}

int cmd_run(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--json", "--quiet"}, {"--config", "--duration", "--refresh-ms", "--metrics"}, "run");
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

    FeedHandler handler(cfg);
    // State changes (gaps, suspect, recovered, session change, line down/up,
    // overload) go through a ring to the logger thread: nothing is formatted here.
    StateLog state_log(cfg.logging, {.max_instruments = cfg.capacity.max_instruments}, &handler.sequencer());
    MetricsRegistry metrics(handler);
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
    const GateRejections rejections;  // the run loop prices no orders: it only displays the gate
    auto on_update = [&](const Update& u, const Event& ev) { state_log.on_update(u, ev); };
    install_signal_handlers();
    pin_current_thread(cfg.threading.engine_cpu);
    handler.start();
    const auto t0 = std::chrono::steady_clock::now();
    auto next_view = t0 + refresh;
    auto next_publish = t0;
    auto summary = [&] {
        return SummarySource{handler.decoder_counters(), handler.sequencer(), handler.gate(), handler.gate_config()};
    };
    while (!g_stop.load(std::memory_order_relaxed)) {
        const std::size_t n = handler.poll(on_update, 1024);
        const auto now = std::chrono::steady_clock::now();
        if (duration > 0 && now - t0 >= std::chrono::duration<double>(duration)) break;
        if (now >= next_publish) {
            next_publish = now + std::chrono::milliseconds(250);
            metrics.publish(handler, rejections);
            state_log.on_line_activity(handler.line_stats(), realtime_ns());
        }
        if (!quiet && now >= next_view) {
            next_view = now + (tty ? refresh : std::chrono::milliseconds(1000));
            const std::int64_t wall = realtime_ns();
            const double t = std::chrono::duration<double>(now - t0).count();
            fmt::print(view, "{}", live_view(summary(), wall, cfg.source, t, line_table(handler), tty));
            std::fflush(view);
        }
        if (n == 0 && cfg.threading.mode == ThreadMode::kBlocking)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    handler.stop();
    while (handler.poll(on_update, 4096) != 0) {
    }
    metrics.publish(handler, rejections);
    if (server) server->stop();
    state_log.stop();
    const std::int64_t wall = realtime_ns();
    if (json) {
        fmt::print("{}", summary_json(summary(), {.now_ns = wall, .foreign_channel_packets = foreign_channel_packets(handler)},
                                      &handler));
    } else {
        fmt::print("{}\n{}", summary_table(summary(), {.now_ns = wall, .foreign_channel_packets = foreign_channel_packets(handler)}), line_table(handler));
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
    const cli::Options a(args, {}, {"--config", "--out", "--duration", "--format"}, "capture");
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
        receiver.poll_once(50'000'000, [&](const RawDatagram& d) {
            writer.write_udp(d.recv_ns, d.src_ip, d.src_port, d.dst_ip, d.dst_port, d.payload);
            ++written;
        });
    }
    writer.flush();
    fmt::print(stderr, "capture: {} datagrams written to {}\n", written, *out);
    return kExitOk;
}

int cmd_send(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--max-speed"}, {"--speed", "--interface"}, "send");
    if (a.help()) {
        fmt::print("{}", kSendHelp);
        return kExitOk;
    }
    if (a.positional().size() != 1) throw UsageError{"send takes exactly one CAPTURE"};
    const double speed = a.decimal("--speed", 1.0, 0.000001, 1e9);
    const bool max_speed = a.has("--max-speed");
    MulticastSender sender(a.loopback_address("--interface", "127.0.0.1"));
    CaptureReader reader(a.positional().front());
    install_signal_handlers();
    FrameCounters frames;
    std::uint64_t sent = 0, skipped = 0;
    std::int64_t first_ts = 0;
    bool started = false;
    const auto t0 = std::chrono::steady_clock::now();
    while (!g_stop.load(std::memory_order_relaxed)) {
        const auto rec = reader.next();
        if (!rec) break;
        const auto d = extract_udp(reader.link_type(), rec->frame, frames);
        if (!d) continue;
        if ((d->dst_ip >> 28) != 0xE) {  // only multicast groups are re-published
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
        sent += sender.send(d->dst_ip, d->dst_port, d->payload) ? 1 : 0;
    }
    fmt::print(stderr, "send: {} datagrams sent, {} not multicast skipped, {} frames not UDP/IPv4\n", sent, skipped,
               frames.non_ip + frames.non_udp + frames.fragments + frames.truncated);
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
