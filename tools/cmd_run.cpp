// `tickgate run`: the live handler of the config's protocol, its live view, metrics and state log.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tickgate/feed/af_xdp.hpp"
#include "tickgate/feed/counter_fields.hpp"
#include "tickgate/feed/metrics.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/replay.hpp"
#include "tickgate/feed/state_log.hpp"
#include "tickgate/feed_handler.hpp"
#include "tickgate/inline_feed_handler.hpp"
#include "tickgate/idle.hpp"
#include "tickgate/text.hpp"

#include "command.hpp"
#include "fanout_run.hpp"

namespace tickgate::cli {

namespace {

constexpr std::string_view kRunHelp = R"(usage: tickgate run --config FILE [options]

The live handler: joins lines A and B of every configured channel, shows the
live view (instrument, bid/ask, last seq, lost, dups, state, age, gate)
a few times a second (plain periodic blocks when not a terminal), and prints
the summary at exit. Stops cleanly on SIGINT/SIGTERM.

options:
  --config FILE        TOML config (required; `tickgate config check FILE` prints the memory
                       it makes run allocate, refused above capacity.max_memory_mb)
  --protocol NAME      must match the config's channels' protocol (%PROTOCOLS%)
  --duration S         stop after S seconds, a decimal number (default: run until a signal)
  --json               print the JSON summary on stdout at exit, with a "live" object: per line
                       (packets, seq gaps, kernel drops, ...), A/B arbitration (duplicates, lost
                       on both, ...) and ring (overflows) counters; the live view goes to stderr
  --refresh-ms N       live view refresh period on a terminal (default 250)
  --symbols A,B        the live view shows only these instruments (as its symbol column names
                       them); ITCH's shows at most the 20 most active without it
  --quiet              no live view
  --metrics ADDR:PORT  serve Prometheus metrics at http://ADDR:PORT/metrics (127.x only, e.g.
                       127.0.0.1:9108; port 0: a free one, printed on stderr). Takes precedence
                       over the config's [metrics] table; without it, the endpoint is on when
                       [metrics] enabled = true, at its listen address (default: off)
  --fanout             publish every instrument's book top and gate verdict to NATS JetStream
                       as the config's [fanout] table says (README "Fan-out")
  -h, --help           this text
)";


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
std::string line_table(const FeedStats& h, bool has_arbiter) {
    std::size_t width = 4;  // "line"; MDP3's "snapshot_a", "definition_b" are wider
    for (const auto& l : h.lines) width = std::max(width, line_name(l->line).size());
    std::string out = fmt::format("{:<4} {:<{}} {:>21}", "ch", "line", width, "group:port");
    for (const auto& f : kLineCounterFields)
        if (!f.title.empty()) out += fmt::format(" {:>10}", f.title);
    out += '\n';
    for (const auto& l : h.lines) {
        out += fmt::format("{:<4} {:<{}} {:>21}", l->channel_id, line_name(l->line), width,
                           fmt::format("{}:{}", l->group, l->port));
        for (const auto& f : kLineCounterFields)
            if (!f.title.empty()) out += fmt::format(" {:>10}", f.get(*l));
        out += '\n';
    }
    if (has_arbiter) out += fmt::format("A/B: {}\n", titled_counters(h.arbiter, kArbiterCounterFields));
    if (h.ring)
        out += fmt::format("ring: fill {}  {}\n", h.ring->size_approx(), titled_counters(h.publisher, kRingCounterFields));
    if (const XdpPort* x = h.receiver.af_xdp()) {
        const AfXdpCounters c = x->counters();
        out += fmt::format("AF_XDP {} ({}{}): frames {}  bad {}  passed {}  ring full {}  fill empty {}\n",
                           x->interface(), x->mode(), x->zero_copy() ? ", zero-copy" : ", copy", c.frames,
                           c.bad_frames, c.passed_to_kernel, c.rx_ring_full, c.fill_ring_empty);
    }
    return out;
}

// What cmd_run read from its command line and config.
struct RunOptions {
    std::optional<MetricsServerOptions> metrics_listen;  // where to serve metrics, if at all
    std::string metrics_option;                           // --metrics as given, for messages
    double duration = 0;                                  // seconds; 0: until a signal
    std::chrono::milliseconds refresh{250};
    std::vector<std::string> symbols;  // --symbols: the live view's rows
    bool json = false;
    bool quiet = false;
    bool fanout = false;  // --fanout
    std::FILE* view = stdout;  // the live view's stream (stderr with --json)
    bool tty = false;
};

// One live run: the handler (BasicFeedHandler or, threading.pipeline =
// "inline", BasicInlineFeedHandler of the config's protocol), its state log
// and metrics, the engine thread's duty cycle and the summary at the end.
template <class Handler>
class LiveRun {
    using P = typename Handler::Protocol;
    static constexpr bool kInline = std::is_same_v<Handler, BasicInlineFeedHandler<P>>;
    // What a protocol counts per channel of its own (metrics.hpp MetricsOptions::channel_groups).
    static constexpr bool kChannelCounters = requires(const Handler& h, std::span<ChannelCounterSample> out) {
        P::sample_channel_counters(h, out);
    };
    static constexpr bool kArbiter = P::kHolePolicy == HolePolicy::kGiveUpAfterHold;

public:
    LiveRun(const Config& cfg, const RunOptions& o)
        : cfg_(cfg),
          o_(o),
          handler_(cfg),
          state_log_(cfg.logging, {.max_instruments = handler_.instruments().max_instruments()}, &handler_.instruments()),
          metrics_(handler_.instruments().max_instruments(), handler_.line_stats().size(), metrics_options<P>(cfg)),
          latency_(cfg.channel_ids()),
          channel_counters_(kChannelCounters ? cfg.channels.size() : 0) {
        // What the protocol adds to the metrics per instrument (MDP3: SecurityIDs, book errors).
        if constexpr (requires(MetricsRegistry::InstrumentSample& out) {
                          P::venue_instrument(handler_, out.id, out.venue_id, out.book_errors);
                      }) {
            venue_.handler = &handler_;
            venue_.instrument = [](const void* h, MetricsRegistry::InstrumentSample& out) noexcept {
                P::venue_instrument(*static_cast<const Handler*>(h), out.id, out.venue_id, out.book_errors);
            };
        }
        serve_metrics(server_, metrics_, o.metrics_listen, o.metrics_option);
        if (o.fanout) fanout_.emplace(handler_, cfg);
        // Said once: the config asked for AF_XDP and got sockets; the kernel's arrival stamps were late.
        say_receiver_warnings(handler_.stats().receiver, "tickgate");
    }

    int run() {
        install_signal_handlers();
        if constexpr (kInline) {
            // One thread receives and runs the engine: the receiving thread's
            // CPU and idle strategy (ppoll when blocking; the view and the
            // metrics still refresh, ppoll returns at least every 50 ms).
            pin_current_thread_or_throw(cfg_.threading.receiver_cpu, "threading.receiver_cpu");
            detail::with_network_idle(cfg_.threading, [this](auto idle) { engine_loop(idle); });
        } else {
            pin_current_thread_or_throw(cfg_.threading.engine_cpu, "threading.engine_cpu");
            handler_.start();
            // Busy-poll: the engine spins like the network thread. Blocking: the
            // network thread sleeps in ppoll, so an empty ring means a quiet feed:
            // spin and yield briefly, then sleep 50 µs doubling up to 200 µs.
            if (cfg_.threading.mode == ThreadMode::kBusyPoll)
                engine_loop(BusySpinIdle<>{});
            else
                engine_loop(BackoffIdle<>{64, 16, std::chrono::microseconds(50), std::chrono::microseconds(200)});
            handler_.stop();
            while (handler_.poll(Apply{*this}, 4096) != 0) {
            }
        }
        publish_metrics();
        if (server_) server_->stop();
        log_front_state();
        state_log_.stop();
        if (fanout_) {
            fanout_->finish();
            fmt::print(stderr, "{}\n", fanout_->counters_line());
        }
        print_summary();
        return kExitOk;
    }

private:
    // State changes go to the state log's ring (nothing formatted here).
    // The engine acts as a consumer that would price one order per book
    // change: each update that changed a book asks the gate about its
    // instrument now, and every refusal is counted by reason
    // (tickgate_gate_rejections_total); the same clock reading, less the
    // datagram's kernel receive stamp, goes to the channel's latency
    // histogram. One clock read, a few loads and compares per update.
    struct Apply {
        LiveRun& run;
        void operator()(const Update& u, const Event& ev) const noexcept {
            run.state_log_.on_update(u, ev);
            if (run.fanout_) run.fanout_->on_update(u, ev, realtime_ns());
            if (!u.book_changed) return;
            const std::int64_t now = realtime_ns();
            run.latency_.record(ev.channel_id, now - ev.recv_ns);
            const GateDecision d = run.handler_.gate().check(u.instrument_id, now);
            if (!d.ok()) run.rejections_.count(d.reason);
        }
    };

    void publish_metrics() noexcept {
        std::size_t channels = 0;
        if constexpr (kChannelCounters) channels = P::sample_channel_counters(handler_, std::span(channel_counters_));
        metrics_.publish(handler_.stats(), {.gate = &rejections_,
                                            .venue = venue_.handler ? &venue_ : nullptr,
                                            .channel_counters = std::span(channel_counters_).first(channels),
                                            .latency = &latency_});
    }
    void log_front_state() noexcept {
        if constexpr (requires { handler_.protocol_decoder().log_state(state_log_, realtime_ns()); })
            handler_.protocol_decoder().log_state(state_log_, realtime_ns());
    }
    // What the front adds to the live view (ITCH: its GLIMPSE snapshots' rows).
    // Its counters and state are relaxed atomics: read here, on the engine thread.
    [[nodiscard]] std::string front_text() const {
        if constexpr (requires { handler_.protocol_decoder().snapshots_text(); })
            return handler_.protocol_decoder().snapshots_text();
        return {};
    }
    // The live view's rows at most (0: every instrument).
    static constexpr std::size_t live_view_rows() noexcept {
        if constexpr (requires { P::kLiveViewRows; }) return P::kLiveViewRows;
        return 0;
    }

    // The duty cycle, instantiated once per idle strategy (idle.hpp).
    template <IdleStrategy Idle>
    void engine_loop(Idle idle) {
        const auto t0 = std::chrono::steady_clock::now();
        auto next_view = t0 + o_.refresh;
        auto next_publish = t0;
        while (!g_stop.load(std::memory_order_relaxed)) {
            std::size_t n = 0;
            if constexpr (kInline)
                n = static_cast<std::size_t>(handler_.poll(Apply{*this}, idle.max_block_ns()));
            else
                n = handler_.poll(Apply{*this}, 1024);
            const auto now = std::chrono::steady_clock::now();
            if (fanout_) fanout_->tick(now);
            if (o_.duration > 0 && now - t0 >= std::chrono::duration<double>(o_.duration)) return;
            if (now >= next_publish) {
                next_publish = now + std::chrono::milliseconds(250);
                publish_metrics();
                log_front_state();
                state_log_.on_line_activity(handler_.line_stats(), realtime_ns());
            }
            if (!o_.quiet && now >= next_view) {
                next_view = now + (o_.tty ? o_.refresh : std::chrono::milliseconds(1000));
                const double t = std::chrono::duration<double>(now - t0).count();
                fmt::print(o_.view, "{}",
                           live_view(summary(), {.now_ns = realtime_ns(), .symbols = o_.symbols, .max_rows = live_view_rows()},
                                     cfg_.source, t,
                                     line_table(handler_.stats(), kArbiter) + front_text() +
                                         (fanout_ ? fanout_->counters_line() + '\n' : ""),
                                     o_.tty));
                std::fflush(o_.view);
            }
            idle.idle(static_cast<int>(n));
        }
    }

    [[nodiscard]] SummarySource summary() const {
        return {handler_.decoder_counters(), handler_.instruments(), handler_.sequencer().counters(),
                BookReader(handler_.book()), handler_.gate(), handler_.gate_config()};
    }

    void print_summary() const {
        const FeedStats stats = handler_.stats();
        SummaryContext ctx{.now_ns = realtime_ns(), .foreign_channel_packets = foreign_channel_packets(stats)};
        // The venue's part as replay renders it (MDP3: SecurityIDs, channels,
        // book_errors); the network thread has stopped.
        const std::optional<VenueSummary> venue = venue_summary_of(handler_);
        if (venue) ctx.venue = &*venue;
        if (!o_.json)
            fmt::print("{}\n{}", summary_table(summary(), ctx), line_table(handler_.stats(), kArbiter));
        else if constexpr (requires { P::summary_json(handler_, cfg_, summary(), ctx, stats); })
            fmt::print("{}", P::summary_json(handler_, cfg_, summary(), ctx, stats));  // the protocol's own schema
        else
            fmt::print("{}", summary_json(summary(), ctx, &stats));
    }

    const Config& cfg_;
    const RunOptions& o_;
    Handler handler_;
    StateLog state_log_;
    MetricsRegistry metrics_;
    MetricsRegistry::Venue venue_;
    LatencyHistograms latency_;
    std::vector<ChannelCounterSample> channel_counters_;  // kChannelCounters: per channel slot
    std::optional<MetricsServer> server_;
    GateRejections rejections_;
    std::optional<FanoutRun<Handler>> fanout_;  // --fanout
};

}  // namespace

int cmd_run(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--json", "--quiet", "--fanout"},
                         {"--config", "--protocol", "--duration", "--refresh-ms", "--metrics", "--symbols"}, "run");
    if (a.help()) {
        fmt::print("{}", help_text(kRunHelp));
        return kExitOk;
    }
    require_no_positional(a, "run");
    const Config cfg = config_from(a, true);
    require_channels(cfg, "run");
    RunOptions o;
    // Where to serve metrics, if at all: --metrics, else the config's [metrics].
    if (const auto listen = a.text("--metrics")) {
        o.metrics_option = *listen;
        try {
            o.metrics_listen = parse_metrics_listen(*listen);
        } catch (const std::invalid_argument& e) {
            throw UsageError{fmt::format("--metrics: {}", e.what())};
        }
    } else if (cfg.metrics.enabled) {
        o.metrics_listen = MetricsServerOptions{.address = cfg.metrics.address, .port = cfg.metrics.port};
    }
    o.duration = a.decimal("--duration", 0, 0, 1e9);
    o.refresh = std::chrono::milliseconds(a.integer("--refresh-ms", 250, 10, 60000));
    o.json = a.has("--json");
    o.quiet = a.has("--quiet");
    o.fanout = a.has("--fanout");
    if (const auto list = a.text("--symbols")) o.symbols = parse_symbols("--symbols", *list);
    o.view = o.json ? stderr : stdout;  // stdout stays machine-readable with --json
    o.tty = ::isatty(::fileno(o.view)) != 0;
    return with_protocol(cfg.protocol(), [&]<VenueProtocol P>() {
        if (cfg.threading.pipeline == PipelineMode::kInline) return LiveRun<BasicInlineFeedHandler<P>>(cfg, o).run();
        return LiveRun<BasicFeedHandler<P>>(cfg, o).run();
    });
}

}  // namespace tickgate::cli
