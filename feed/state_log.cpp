#include "tickgate/feed/state_log.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "tickgate/feed/receiver.hpp"
#include "tickgate/text.hpp"

namespace tickgate {

std::string_view to_string(StateChangeKind k) noexcept {
    switch (k) {
        case StateChangeKind::kGapOpened: return "gap_opened";
        case StateChangeKind::kSuspect: return "suspect";
        case StateChangeKind::kRecovered: return "recovered";
        case StateChangeKind::kSessionChange: return "session_change";
        case StateChangeKind::kStaleSnapshot: return "stale_snapshot";
        case StateChangeKind::kLineDown: return "line_down";
        case StateChangeKind::kLineUp: return "line_up";
        case StateChangeKind::kOverload: return "overload";
    }
    return "unknown";
}

namespace {

using spdlog::level::level_enum;

spdlog::level::level_enum parse_level(const std::string& s) {
    if (s == "trace") return level_enum::trace;
    if (s == "debug") return level_enum::debug;
    if (s == "info") return level_enum::info;
    if (s == "warn" || s == "warning") return level_enum::warn;
    if (s == "error" || s == "err") return level_enum::err;
    if (s == "critical") return level_enum::critical;
    if (s == "off") return level_enum::off;
    throw std::invalid_argument("logging.level: expected trace, debug, info, warn, error or off, got '" + s + "'");
}

level_enum level_of(StateChangeKind k) noexcept {
    switch (k) {
        case StateChangeKind::kGapOpened:
        case StateChangeKind::kSuspect:
        case StateChangeKind::kSessionChange:
            return level_enum::warn;
        case StateChangeKind::kLineDown:
        case StateChangeKind::kOverload:
            return level_enum::err;
        case StateChangeKind::kRecovered:
        case StateChangeKind::kStaleSnapshot:
        case StateChangeKind::kLineUp:
            return level_enum::info;
    }
    return level_enum::info;
}

char line_name(std::uint8_t line) noexcept { return line == 0 ? 'A' : line == 1 ? 'B' : '?'; }

// "instrument 7 ESZ5 channel 1" / "channel 1 line B" / "channel 1".
std::string subject(const StateChange& c) {
    std::string s;
    if (c.instrument_id != StateChange::kNoInstrument) {
        s = fmt::format("instrument {}", c.instrument_id);
        std::size_t n = 0;
        while (n < sizeof c.symbol && c.symbol[n] != '\0') ++n;
        if (n > 0) {
            s += ' ';
            append_printable(s, std::string_view(c.symbol, n));  // off the wire: no escape sequences
        }
        s += fmt::format(" channel {}", c.channel);
    } else if (c.line != 0xFF) {
        s = fmt::format("channel {} line {}", c.channel, line_name(c.line));
    } else {
        s = fmt::format("channel {}", c.channel);
    }
    return s;
}

std::string describe(const StateChange& c) {
    const std::string who = subject(c);
    switch (c.kind) {
        case StateChangeKind::kGapOpened:
            return fmt::format("gap opened: {}: {} message(s) lost", who, c.value);
        case StateChangeKind::kSuspect:
            return fmt::format("suspect: {}: book unreliable until repaired", who);
        case StateChangeKind::kRecovered:
            return fmt::format("recovered: {}: book clean again", who);
        case StateChangeKind::kSessionChange:
            return fmt::format("session change: {}: new session {}, its instruments reset", who, c.value);
        case StateChangeKind::kStaleSnapshot:
            return fmt::format("stale snapshot: {}: snapshot seq {} is behind the book, ignored", who, c.value);
        case StateChangeKind::kLineDown:
            return fmt::format("line down: {}: no packets for {} ms while line {} has traffic", who, c.value,
                               line_name(c.line ^ 1u));
        case StateChangeKind::kLineUp:
            return fmt::format("line up: {}: packets again after {} ms of silence", who, c.value);
        case StateChangeKind::kOverload:
            if (c.instrument_id == StateChange::kNoInstrument)
                return fmt::format("overload: {}: the socket buffer dropped {} datagram(s)", who, c.value);
            return fmt::format("overload: {}: the transport dropped its data (ring full); suspect", who);
    }
    return fmt::format("{}: {}: {}", to_string(c.kind), who, c.value);
}

std::int64_t steady_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

spdlog::log_clock::time_point time_of(std::int64_t realtime_ns) noexcept {
    if (realtime_ns == 0) return spdlog::log_clock::now();
    return spdlog::log_clock::time_point(
        std::chrono::duration_cast<spdlog::log_clock::duration>(std::chrono::nanoseconds(realtime_ns)));
}

}  // namespace

// Logger thread only.
struct StateLog::Limiter {
    struct Bucket {
        std::int64_t window_start = 0;
        std::uint32_t count = 0;
        std::uint64_t suppressed = 0;
        bool pending = false;
        StateChange last{};
    };
    std::unordered_map<std::uint64_t, Bucket> buckets;
    std::vector<std::uint64_t> pending;
    std::uint64_t reported_drops = 0;
    std::int64_t last_drop_report = 0;
    bool drop_reported_once = false;

    static std::uint64_t key(const StateChange& c) noexcept {
        const std::uint64_t k = static_cast<std::uint64_t>(c.kind) << 40;
        if (c.instrument_id != StateChange::kNoInstrument) return k | c.instrument_id;
        return k | (std::uint64_t{1} << 32) | (std::uint64_t{c.channel} << 8) | c.line;
    }
};

StateLog::StateLog(const LoggingConfig& cfg, StateLogOptions opts, const InstrumentTable* instruments)
    : instruments_(instruments),
      max_instruments_(opts.max_instruments),
      bits_((std::size_t{opts.max_instruments} + 63) / 64, 0),
      lines_(opts.max_lines),
      line_silence_ns_(opts.line_silence_ms * 1'000'000),
      ring_(opts.ring_capacity),
      opts_(std::move(opts)),
      limiter_(std::make_unique<Limiter>()) {
    const level_enum level = parse_level(cfg.level);
    spdlog::sink_ptr sink;
    try {
        if (cfg.sink == "stderr") sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
        else sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(cfg.sink, false);
    } catch (const std::exception& e) {
        throw std::runtime_error("logging.sink: cannot open '" + cfg.sink + "': " + e.what());
    }
    logger_ = std::make_shared<spdlog::logger>(opts_.logger_name, std::move(sink));
    logger_->set_level(level);
    logger_->set_pattern("%Y-%m-%dT%H:%M:%S.%f%z [%n] [%l] %v");
    if (opts_.autostart) start();
}

StateLog::~StateLog() { stop(); }

void StateLog::start() {
    if (thread_.joinable() || stop_.load(std::memory_order_relaxed)) return;
    thread_ = std::thread([this] { run(); });
}

void StateLog::stop() {
    if (!thread_.joinable()) {
        stop_.store(true, std::memory_order_release);
        return;
    }
    stop_.store(true, std::memory_order_release);
    thread_.join();
}

bool StateLog::flush(std::int64_t timeout_ms) {
    const std::uint64_t target = pushed_.get();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (processed_.load(std::memory_order_acquire) < target) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

bool StateLog::push(const StateChange& c) noexcept {
    if (!ring_.try_push(c)) {
        dropped_.add();
        return false;
    }
    pushed_.add();
    return true;
}

void StateLog::emit(StateChangeKind kind, std::uint32_t id, const Event& ev, std::uint64_t value) noexcept {
    StateChange c;
    c.time_ns = ev.recv_ns;
    c.value = value;
    c.instrument_id = id;
    c.channel = ev.channel_id;
    c.kind = kind;
    c.line = ev.line;
    if (instruments_ != nullptr && id < instruments_->max_instruments()) std::memcpy(c.symbol, instruments_->state(id).symbol, sizeof c.symbol);
    push(c);
}

void StateLog::recovered(const Update& u, const Event& ev) noexcept {
    set_suspect(u.instrument_id, false);
    emit(StateChangeKind::kRecovered, u.instrument_id, ev, 0);
}

void StateLog::slow_update(const Update& u, const Event& ev) noexcept {
    const std::uint32_t id = u.instrument_id;
    switch (u.verdict) {
        case Verdict::kGap:
        case Verdict::kHeartbeatGap:
            emit(StateChangeKind::kGapOpened, id, ev, u.lost);
            if (u.suspect && !was_suspect(id)) {
                set_suspect(id, true);
                emit(StateChangeKind::kSuspect, id, ev, 0);
            } else if (!u.suspect && was_suspect(id)) {
                recovered(u, ev);  // a full quote after the gap: current again
            }
            return;
        case Verdict::kSnapshotStale:
            emit(StateChangeKind::kStaleSnapshot, id, ev,
                 ev.kind == EventKind::kSnapshotBegin ? ev.u.snapshot.seq : 0);
            return;
        case Verdict::kSessionReset: {
            StateChange c;
            c.time_ns = ev.recv_ns;
            c.value = ev.kind == EventKind::kSessionChange ? ev.u.session.session : 0;
            c.channel = ev.channel_id;
            c.kind = StateChangeKind::kSessionChange;
            push(c);
            return;
        }
        case Verdict::kDataLost:
            set_suspect(id, true);  // its recovery is logged
            emit(StateChangeKind::kOverload, id, ev, 0);
            return;
        default:
            return;
    }
}

void StateLog::on_line_activity(std::span<const std::unique_ptr<LineStats>> lines, std::int64_t now_ns) noexcept {
    const std::size_t n = std::min(lines.size(), lines_.size());
    auto line_event = [&](StateChangeKind kind, const LineStats& ls, std::uint64_t value) {
        StateChange c;
        c.time_ns = now_ns;
        c.value = value;
        c.channel = ls.channel_id;
        c.kind = kind;
        c.line = ls.line;
        push(c);
    };
    // Pass 1: who moved.
    for (std::size_t i = 0; i < n; ++i) {
        const LineStats& ls = *lines[i];
        LineTrack& t = lines_[i];
        const std::uint64_t packets = ls.packets.get();
        const std::uint64_t drops = ls.kernel_drops.get();
        if (!t.init) {
            t = {packets, drops, now_ns, true, false};
            continue;
        }
        if (drops > t.kernel_drops) line_event(StateChangeKind::kOverload, ls, drops - t.kernel_drops);
        t.kernel_drops = drops;
        if (packets != t.packets) {
            if (t.down) {
                t.down = false;
                line_event(StateChangeKind::kLineUp, ls, static_cast<std::uint64_t>((now_ns - t.last_change_ns) / 1'000'000));
            }
            t.packets = packets;
            t.last_change_ns = now_ns;
        }
    }
    // Pass 2: silent lines whose partner is not.
    for (std::size_t i = 0; i < n; ++i) {
        LineTrack& t = lines_[i];
        if (!t.init || t.down || now_ns - t.last_change_ns <= line_silence_ns_) continue;
        const LineStats& ls = *lines[i];
        for (std::size_t j = 0; j < n; ++j) {
            if (j == i || lines[j]->channel_id != ls.channel_id || lines[j]->line == ls.line) continue;
            if (lines_[j].init && now_ns - lines_[j].last_change_ns <= line_silence_ns_) {
                t.down = true;
                line_event(StateChangeKind::kLineDown, ls, static_cast<std::uint64_t>((now_ns - t.last_change_ns) / 1'000'000));
            }
            break;
        }
    }
}

void StateLog::run() noexcept {
    Limiter& lim = *limiter_;
    const std::int64_t window = opts_.window_ms * 1'000'000;
    const std::uint32_t max_lines = opts_.max_lines_per_window;

    auto write = [&](level_enum lvl, std::int64_t time_ns, const std::string& msg) {
        logger_->log(time_of(time_ns), spdlog::source_loc{}, lvl, msg);
        logged_.fetch_add(1, std::memory_order_relaxed);
    };
    auto write_suppressed = [&](const Limiter::Bucket& b) {
        write(level_of(b.last.kind), 0,
              fmt::format("{}: {}: suppressed {} similar in the last {} ms", to_string(b.last.kind),
                          subject(b.last), b.suppressed, opts_.window_ms));
    };
    auto handle = [&](const StateChange& c, std::int64_t now) {
        try {
            auto [it, fresh] = lim.buckets.try_emplace(Limiter::key(c));
            Limiter::Bucket& b = it->second;
            if (fresh) b.window_start = now;
            if (now - b.window_start >= window) {
                if (b.suppressed > 0) write_suppressed(b);
                b.window_start = now;
                b.count = 0;
                b.suppressed = 0;
            }
            if (b.count < max_lines) {
                ++b.count;
                write(level_of(c.kind), c.time_ns, describe(c));
            } else {
                if (b.suppressed++ == 0 && !b.pending) {
                    b.pending = true;
                    lim.pending.push_back(it->first);
                }
                b.last = c;
                suppressed_.fetch_add(1, std::memory_order_relaxed);
            }
        } catch (...) {
            // Out of memory or a formatting failure: lose the line, not the thread.
        }
    };
    // Writes "suppressed" lines of windows that have ended (all with `force`).
    auto expire = [&](std::int64_t now, bool force) {
        bool wrote = false;
        for (std::size_t i = 0; i < lim.pending.size();) {
            const auto it = lim.buckets.find(lim.pending[i]);
            if (it == lim.buckets.end()) {
                lim.pending[i] = lim.pending.back();
                lim.pending.pop_back();
                continue;
            }
            Limiter::Bucket& b = it->second;
            if (b.suppressed == 0 || force || now - b.window_start >= window) {
                if (b.suppressed > 0) {
                    try {
                        write_suppressed(b);
                    } catch (...) {
                    }
                    wrote = true;
                    b.window_start = now;
                    b.count = 0;
                    b.suppressed = 0;
                }
                b.pending = false;
                lim.pending[i] = lim.pending.back();
                lim.pending.pop_back();
                continue;
            }
            ++i;
        }
        return wrote;
    };
    auto report_drops = [&](std::int64_t now, bool force) {
        const std::uint64_t d = dropped_.get();
        if (d == lim.reported_drops) return false;
        if (!force && lim.drop_reported_once && now - lim.last_drop_report < window) return false;
        try {
            write(level_enum::err, 0,
                  fmt::format("state log overflow: {} state change(s) dropped, ring full ({} in total)",
                              d - lim.reported_drops, d));
        } catch (...) {
        }
        lim.reported_drops = d;
        lim.last_drop_report = now;
        lim.drop_reported_once = true;
        return true;
    };

    std::uint64_t processed = 0;
    for (;;) {
        const bool stopping = stop_.load(std::memory_order_acquire);
        const std::int64_t now = steady_ns();
        const std::size_t n = ring_.consume([&](const StateChange& c) { handle(c, now); }, 256);
        bool wrote = n > 0;
        wrote |= expire(now, false);
        wrote |= report_drops(now, false);
        if (wrote) {
            try {
                logger_->flush();
            } catch (...) {
            }
        }
        processed += n;
        processed_.store(processed, std::memory_order_release);
        if (n == 0) {
            if (stopping) break;
            std::this_thread::sleep_for(std::chrono::microseconds(opts_.idle_sleep_us));
        }
    }
    const std::int64_t now = steady_ns();
    expire(now, true);
    report_drops(now, true);
    try {
        logger_->flush();
    } catch (...) {
    }
}

}  // namespace tickgate
