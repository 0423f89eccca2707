// `tickgate run --fanout` (issue 27): the fan-out beside a live handler —
// the engine thread's Source, the ring, the publisher thread — for any
// handler type of the shared pipeline, protocol-neutral (the venue is
// Handler::Protocol::kName, channel and symbol come from the instrument table).
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "tickgate/fanout/conflating_ring.hpp"
#include "tickgate/fanout/publisher.hpp"
#include "tickgate/fanout/source.hpp"
#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/config.hpp"

namespace tickgate::cli {

template <class Handler>
class FanoutRun {
public:
    // Start-up: allocates the ring and the publisher's tables, connects in
    // the background and starts the publisher thread.
    FanoutRun(const Handler& h, const Config& cfg)
        : ring_(h.instruments().max_instruments(), cfg.fanout.depth),  // ITCH: 65,536 locates a channel
          source_(h, ring_),
          publisher_(cfg.fanout, Handler::Protocol::kName, ring_) {
        publisher_.start();
    }

    // Engine thread, per delivered update; `now_ns` the engine's clock.
    void on_update(const Update& u, const Event& ev, std::int64_t now_ns) noexcept { source_.on_update(u, ev, now_ns); }
    // Engine thread, every loop iteration: gate-state changes every 10 ms.
    void tick(std::chrono::steady_clock::time_point now) noexcept {
        if (now < next_sweep_) return;
        next_sweep_ = now + std::chrono::milliseconds(10);
        source_.sweep(realtime_ns());
    }
    // At exit, once the engine is done: the last gate states, published and flushed.
    void finish() {
        source_.sweep(realtime_ns());
        publisher_.stop();
        finished_ = true;
    }

    // "fanout: published N  conflated N  dropped N ..." (the live view, the exit line).
    [[nodiscard]] std::string counters_line() const {
        const auto& p = publisher_.counters();
        const auto& r = ring_.counters();
        return fmt::format("fanout: {}  session {}  offered {}  conflated {}  published {}  dropped {}  resynced {}  "
                           "connects {}  disconnects {}  stream_errors {}  renamed {}  purge_errors {}",
                           finished_ ? "closed" : publisher_.connected() ? "connected" : "not connected", publisher_.session(),
                           r.offered.get(), r.conflated.get(), p.published.get(), p.dropped.get(), p.resynced.get(),
                           p.connects.get(), p.disconnects.get(), p.stream_errors.get(), p.renamed.get(),
                           p.purge_errors.get());
    }

private:
    fanout::ConflatingRing ring_;
    fanout::Source<Handler> source_;
    fanout::Publisher publisher_;
    std::chrono::steady_clock::time_point next_sweep_{};
    bool finished_ = false;
};

}  // namespace tickgate::cli
