// `tickgate run` on an itch50 config: the live ITCH 5.0 handler
// (feed/itch50/live.hpp), its live view and the ITCH50.md summary at exit.
#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/itch50/live.hpp"
#include "tickgate/feed/state_log.hpp"

#include "command.hpp"

namespace tickgate::cli {

int run_itch50(const Config& cfg, const ItchRunOptions& o) {
    itch50::LiveHandler handler(cfg);
    StateLog state_log(cfg.logging, {.max_instruments = itch50::kMaxLocates});
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
        }
        if (!o.quiet && now >= next_view) {
            next_view = now + (tty ? o.refresh : std::chrono::milliseconds(1000));
            fmt::print(view, "{}", handler.live_view(realtime_ns(), cfg.source, std::chrono::duration<double>(now - t0).count(), tty));
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
