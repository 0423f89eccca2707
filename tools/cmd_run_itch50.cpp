// `tickgate run` on an itch50 config: the live ITCH 5.0 handler
// (feed/itch50/live.hpp), its live view, metrics, state log and the
// ITCH50.md summary at exit.
#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/itch50/live.hpp"
#include "tickgate/feed/state_log.hpp"

#include "command.hpp"

namespace tickgate::cli {

namespace {

// Publishes what the ITCH handler counts: its lines, instruments and
// decoder totals through FeedStats (no A/B arbiter and no ring: the stream
// takes their place), the stream and re-request counters per channel and
// the receive -> book histograms. No gate rejections: they are counted
// where an engine asks the gate, and this loop has no engine.
class ItchMetrics {
public:
    ItchMetrics(const Config& cfg, const itch50::LiveHandler& handler)
        : registry_(handler.core().instruments().max_instruments(), handler.receiver().lines().size(),
                    cfg.channels.size(),
                    {.protocol = protocol_bit(itch50::Protocol::kName), .instruments = cfg.metrics.instruments,
                     .channels = cfg.channels.size()}),
          streams_(cfg.channels.size()) {
        for (std::size_t ch = 0; ch < cfg.channels.size(); ++ch) streams_[ch].channel = cfg.channels[ch].id;
    }
    MetricsRegistry& registry() noexcept { return registry_; }

    // Run's thread, every few hundred ms; no allocation.
    void publish(const itch50::LiveHandler& handler) noexcept {
        DecoderCounters decoder;
        handler.core().totals(decoder);
        const SequencerCounters sequencer = handler.core().sequencer_totals();
        const FeedStats stats{handler.receiver().lines(), decoder,  no_arbiter_, no_publisher_,
                              handler.core().instruments(), sequencer, nullptr, false, handler.receiver()};
        for (std::uint32_t ch = 0; ch < streams_.size(); ++ch) {
            MetricsRegistry::StreamSample& s = streams_[ch];
            s.stream.load(handler.core().channel(ch).counters);
            s.has_rerequest = handler.client().enabled(ch);
            if (s.has_rerequest) s.rerequest.load(handler.client().counters(ch));
            s.has_glimpse = handler.has_glimpse(ch);
            if (s.has_glimpse) {
                const itch50::SnapshotCounters& k = handler.snapshot_counters(ch);
                s.snapshot.load(k);
                for (std::size_t r = 0; r < std::size(s.snapshot_failures); ++r) s.snapshot_failures[r] = k.snapshot_failures[r].get();
                s.snapshot_orders = k.snapshot_orders.get();
            }
        }
        registry_.publish(stats, {.streams = streams_, .latency = &handler.latency()});
    }

private:
    MetricsRegistry registry_;
    std::vector<MetricsRegistry::StreamSample> streams_;
    const ArbiterCounters no_arbiter_{};
    const PublisherCounters no_publisher_{};
};

}  // namespace

int run_itch50(const Config& cfg, const ItchRunOptions& o) {
    itch50::LiveHandler handler(cfg);
    ItchMetrics metrics(cfg, handler);
    std::optional<MetricsServer> server;
    serve_metrics(server, metrics.registry(), o.metrics_listen, o.metrics_option);
    say_af_xdp_fallback(handler.receiver(), "tickgate");
    StateLog state_log(cfg.logging, {.max_instruments = handler.core().instruments().max_instruments()});
    install_signal_handlers();
    std::FILE* view = o.json ? stderr : stdout;  // stdout stays machine-readable with --json
    const bool tty = ::isatty(::fileno(view)) != 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto next_view = t0 + o.refresh;
    auto next_log = t0;
    // Blocking: ppoll waits at most LiveHandler::kMaxWaitNs; busy-poll spins.
    const std::int64_t wait_ns = cfg.threading.mode == ThreadMode::kBusyPoll ? 0 : itch50::LiveHandler::kMaxWaitNs;
    while (!g_stop.load(std::memory_order_relaxed)) {
        handler.poll(wait_ns);
        const auto now = std::chrono::steady_clock::now();
        if (o.duration_s > 0 && now - t0 >= std::chrono::duration<double>(o.duration_s)) break;
        if (now >= next_log) {
            next_log = now + std::chrono::milliseconds(250);
            handler.log_state(state_log, realtime_ns());
            state_log.on_line_activity(handler.receiver().lines(), realtime_ns());
            if (server) metrics.publish(handler);
        }
        if (!o.quiet && now >= next_view) {
            next_view = now + (tty ? o.refresh : std::chrono::milliseconds(1000));
            fmt::print(view, "{}", handler.live_view(realtime_ns(), o.symbols, cfg.source, std::chrono::duration<double>(now - t0).count(), tty));
            std::fflush(view);
        }
    }
    handler.log_state(state_log, realtime_ns());
    state_log.stop();
    if (o.json)
        fmt::print("{}", handler.summary_json(realtime_ns()));
    else
        fmt::print("{}", handler.core().summary_table({.now_ns = realtime_ns()}));
    return kExitOk;
}

}  // namespace tickgate::cli
