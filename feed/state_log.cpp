#include "tickgate/feed/state_log.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "tickgate/feed/snapshot_service.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/idle.hpp"
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
        case StateChangeKind::kHoleGivenUp: return "hole_given_up";
        case StateChangeKind::kRerequested: return "rerequested";
        case StateChangeKind::kSnapshotJoin: return "snapshot_join";
        case StateChangeKind::kSnapshotLeave: return "snapshot_leave";
        case StateChangeKind::kCapacity: return "capacity";
        case StateChangeKind::kImplausiblePositions: return "implausible_positions";
        case StateChangeKind::kUnrequestedAnswers: return "unrequested_answers";
        case StateChangeKind::kSnapshotRequested: return "snapshot_requested";
        case StateChangeKind::kSnapshotApplied: return "snapshot_applied";
        case StateChangeKind::kSnapshotFailed: return "snapshot_failed";
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
        case StateChangeKind::kHoleGivenUp:
        case StateChangeKind::kImplausiblePositions:
        case StateChangeKind::kUnrequestedAnswers:
        case StateChangeKind::kSnapshotRequested:
        case StateChangeKind::kSnapshotFailed:
            return level_enum::warn;
        case StateChangeKind::kLineDown:
        case StateChangeKind::kOverload:
        case StateChangeKind::kCapacity:
            return level_enum::err;
        case StateChangeKind::kRecovered:
        case StateChangeKind::kStaleSnapshot:
        case StateChangeKind::kLineUp:
        case StateChangeKind::kRerequested:
        case StateChangeKind::kSnapshotJoin:
        case StateChangeKind::kSnapshotLeave:
        case StateChangeKind::kSnapshotApplied:
            return level_enum::info;
    }
    return level_enum::info;
}

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

// 1204551 as "1,204,551".
std::string grouped(std::uint64_t v) {
    std::string d = std::to_string(v), out;
    for (std::size_t i = 0; i < d.size(); ++i) {
        if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
        out += d[i];
    }
    return out;
}

std::string describe(const StateChange& c) {
    // Every line starts with the kind's name (to_string: the JSON's, the
    // metrics' and the "suppressed" lines' spelling), then the subject.
    const std::string who = subject(c);
    const std::string_view kind = to_string(c.kind);
    switch (c.kind) {
        case StateChangeKind::kGapOpened:
            return fmt::format("{}: {}: {} message(s) lost", kind, who, c.value);
        case StateChangeKind::kSuspect:
            return fmt::format("{}: {}: {}, book unreliable until repaired", kind, who,
                               to_string(static_cast<SuspectReason>(c.value)));
        case StateChangeKind::kRecovered:
            return fmt::format("{}: {}: book clean again", kind, who);
        case StateChangeKind::kSessionChange:
            return fmt::format("{}: {}: new session {}, its instruments reset", kind, who, c.value);
        case StateChangeKind::kStaleSnapshot:
            return fmt::format("{}: {}: snapshot seq {} is behind the book, ignored", kind, who, c.value);
        case StateChangeKind::kLineDown:
            return fmt::format("{}: {}: no packets for {} ms while line {} has traffic", kind, who, c.value,
                               line_name(static_cast<std::uint8_t>(c.line ^ 1u)));
        case StateChangeKind::kLineUp:
            return fmt::format("{}: {}: packets again after {} ms of silence", kind, who, c.value);
        case StateChangeKind::kOverload:
            if (c.instrument_id == StateChange::kNoInstrument)
                return fmt::format("{}: {}: the socket buffer dropped {} datagram(s)", kind, who, c.value);
            return fmt::format("{}: {}: the transport dropped its data (ring full); suspect", kind, who);
        case StateChangeKind::kHoleGivenUp:
            return fmt::format("{}: {}: {} message(s) lost, its instruments suspect", kind, who, c.value);
        case StateChangeKind::kRerequested:
            return fmt::format("{}: {}: {} message(s) recovered from the re-request server", kind, who, c.value);
        case StateChangeKind::kSnapshotJoin:
            return fmt::format("{}: {}: joined (an instrument is suspect or unconfirmed), join {}", kind, who,
                               c.value);
        case StateChangeKind::kSnapshotLeave:
            return fmt::format("{}: {}: left (every instrument clean), leave {}", kind, who, c.value);
        case StateChangeKind::kCapacity:
            if (c.value == StateChange::kNoInstrument)
                return fmt::format("{}: {}: a message dropped, no instrument slot (capacity.max_instruments) "
                                   "or definition room ([mdp3] max_definitions) left",
                                   kind, who);
            return fmt::format("{}: {}: a message for instrument {} dropped, beyond capacity.max_instruments", kind, who,
                               c.value);
        case StateChangeKind::kImplausiblePositions:
            return fmt::format(
                "{}: {}: {} datagram(s) more than 1e9 positions beyond the stream dropped, "
                "nothing changed (corrupt or forged)", kind, who, c.value);
        case StateChangeKind::kUnrequestedAnswers:
            return fmt::format("{}: {}: {} re-request answer message(s) not asked for or no "
                               "longer missing dropped", kind, who, c.value);
        case StateChangeKind::kSnapshotRequested:
            return fmt::format("{}: {}: {}", kind, who, c.value == 1 ? "late join" : "hole given up");
        case StateChangeKind::kSnapshotApplied: {
            std::uint64_t at = 0;
            std::memcpy(&at, c.symbol, sizeof at);
            return fmt::format("{}: {}: {} orders, continuing at {}", kind, who, grouped(c.value), grouped(at));
        }
        case StateChangeKind::kSnapshotFailed: {
            const auto& text = kSnapshotFailureText;
            const char* why = c.value < std::size(text) ? text[c.value] : "unknown";
            if (c.value == 1 && c.symbol[0] != 0)
                return fmt::format("{}: {}: {} ({}), not retried", kind, who, why, c.symbol[0]);
            return fmt::format("{}: {}: {}, retried after [glimpse] min_interval_ms", kind, who, why);
        }
    }
    return fmt::format("{}: {}: {}", kind, who, c.value);
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

// Logger thread only: rate limiting per kind and subject, the drop
// reports, and every write to the logger. Each step that can throw (a
// bucket's allocation, formatting, the sink) runs in guarded(): a failure
// loses that line, is counted (failures()) and reported once on stderr.
struct StateLog::Limiter {
    struct Bucket {
        std::int64_t window_start = 0;
        std::uint32_t count = 0;
        std::uint64_t suppressed = 0;
        bool pending = false;
        StateChange last{};
    };

    explicit Limiter(StateLog& log) noexcept
        : log(log), window_ns(log.opts_.window_ms * 1'000'000), max_lines(log.opts_.max_lines_per_window) {}

    static std::uint64_t key(const StateChange& c) noexcept {
        const std::uint64_t k = static_cast<std::uint64_t>(c.kind) << 40;
        if (c.instrument_id != StateChange::kNoInstrument) return k | c.instrument_id;
        return k | (std::uint64_t{1} << 32) | (std::uint64_t{c.channel} << 8) | c.line;
    }

    template <class F>
    void guarded(const char* step, F&& f) noexcept {
        try {
            f();
        } catch (const std::exception& e) {
            log.failed(step, e.what());
        } catch (...) {
            log.failed(step, "unknown exception");
        }
    }

    void write(level_enum lvl, std::int64_t time_ns, const std::string& msg) {
        log.logger_->log(time_of(time_ns), spdlog::source_loc{}, lvl, msg);
        log.logged_.fetch_add(1, std::memory_order_relaxed);
    }
    void write_suppressed(const Bucket& b) {
        write(level_of(b.last.kind), 0,
              fmt::format("{}: {}: suppressed {} similar in the last {} ms", to_string(b.last.kind), subject(b.last),
                          b.suppressed, log.opts_.window_ms));
    }

    // One record: written, or counted as suppressed if its bucket has had
    // max_lines in the current window (a bucket whose window ended first
    // writes its "suppressed" line and starts a new one).
    void handle(const StateChange& c, std::int64_t now) {
        auto [it, fresh] = buckets.try_emplace(key(c));
        Bucket& b = it->second;
        if (fresh) b.window_start = now;
        if (now - b.window_start >= window_ns) {
            if (b.suppressed > 0) write_suppressed(b);
            b.window_start = now;
            b.count = 0;
            b.suppressed = 0;
        }
        if (b.count < max_lines) {
            ++b.count;
            write(level_of(c.kind), c.time_ns, describe(c));
            return;
        }
        if (b.suppressed++ == 0 && !b.pending) {
            b.pending = true;
            pending.push_back(it->first);
        }
        b.last = c;
        log.suppressed_.fetch_add(1, std::memory_order_relaxed);
    }

    // Up to 256 queued records; how many were taken.
    std::size_t drain(std::int64_t now) {
        return log.ring_.consume([&](const StateChange& c) { guarded("format", [&] { handle(c, now); }); }, 256);
    }

    // Writes the "suppressed" lines of windows that have ended (all of them
    // with `force`). True if it wrote.
    bool end_windows(std::int64_t now, bool force) {
        bool wrote = false;
        for (std::size_t i = 0; i < pending.size();) {
            const auto it = buckets.find(pending[i]);
            if (it != buckets.end()) {
                Bucket& b = it->second;
                if (b.suppressed != 0 && !force && now - b.window_start < window_ns) {
                    ++i;
                    continue;
                }
                if (b.suppressed > 0) {
                    guarded("format", [&] { write_suppressed(b); });
                    wrote = true;
                    b.window_start = now;
                    b.count = 0;
                    b.suppressed = 0;
                }
                b.pending = false;
            }
            pending[i] = pending.back();
            pending.pop_back();
        }
        return wrote;
    }

    // Records the engine dropped on a full ring: one line per window (at
    // once with `force`). True if it wrote.
    bool report_drops(std::int64_t now, bool force) {
        const std::uint64_t d = log.dropped_.get();
        if (d == reported_drops) return false;
        if (!force && drop_reported_once && now - last_drop_report < window_ns) return false;
        guarded("format", [&] {
            write(level_enum::err, 0,
                  fmt::format("state log overflow: {} state change(s) dropped, ring full ({} in total)",
                              d - reported_drops, d));
        });
        reported_drops = d;
        last_drop_report = now;
        drop_reported_once = true;
        return true;
    }

    void flush() {
        guarded("flush", [&] { log.logger_->flush(); });
    }

    StateLog& log;
    const std::int64_t window_ns;
    const std::uint32_t max_lines;
    std::unordered_map<std::uint64_t, Bucket> buckets;
    std::vector<std::uint64_t> pending;
    std::uint64_t reported_drops = 0;
    std::int64_t last_drop_report = 0;
    bool drop_reported_once = false;
};

StateLog::StateLog(const LoggingConfig& cfg, StateLogOptions opts, const InstrumentTable* instruments)
    : instruments_(instruments),
      max_instruments_(opts.max_instruments),
      bits_((std::size_t{opts.max_instruments} + 63) / 64, 0),
      lines_(opts.max_lines),
      line_silence_ns_(opts.line_silence_ms * 1'000'000),
      ring_(opts.ring_capacity),
      opts_(std::move(opts)),
      limiter_(std::make_unique<Limiter>(*this)) {
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
    // spdlog catches what its sinks throw (a full disk, a closed file) and
    // hands it here, on the logger thread: counted and reported like ours.
    logger_->set_error_handler([this](const std::string& msg) { failed("write", msg.c_str()); });
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
                const bool named = instruments_ != nullptr && id < instruments_->max_instruments();
                const SuspectReason why = named ? suspect_reason(instruments_->state(id)) : SuspectReason::kGap;
                emit(StateChangeKind::kSuspect, id, ev, static_cast<std::uint64_t>(why));
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
        case Verdict::kOutOfRange: {  // no instrument to name: the channel and line that carried it
            StateChange c;
            c.time_ns = ev.recv_ns;
            c.value = id;
            c.channel = ev.channel_id;
            c.line = ev.line;
            c.kind = StateChangeKind::kCapacity;
            push(c);
            return;
        }
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
        const std::uint64_t joins = ls.snapshot_joins.get(), leaves = ls.snapshot_leaves.get();
        // Joins and leaves since the last call (from the start on the first:
        // a join is logged however early it came); a join before its leave.
        if (joins > t.snapshot_joins) line_event(StateChangeKind::kSnapshotJoin, ls, joins);
        if (leaves > t.snapshot_leaves) line_event(StateChangeKind::kSnapshotLeave, ls, leaves);
        t.snapshot_joins = joins;
        t.snapshot_leaves = leaves;
        if (!t.init) {
            t = {packets, drops, joins, leaves, now_ns, true, false};
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
            if (j == i || lines[j]->channel_id != ls.channel_id || lines[j]->line != (ls.line ^ 1u)) continue;
            if (lines_[j].init && now_ns - lines_[j].last_change_ns <= line_silence_ns_) {
                t.down = true;
                line_event(StateChangeKind::kLineDown, ls, static_cast<std::uint64_t>((now_ns - t.last_change_ns) / 1'000'000));
            }
            break;
        }
    }
}

void StateLog::failed(const char* step, const char* what) noexcept {
    if (failures_.fetch_add(1, std::memory_order_relaxed) == 0)
        std::fprintf(stderr, "tickgate: state log: %s failed: %s; the line is lost, later failures are only counted\n",
                     step, what);
}

void StateLog::run() noexcept {
    Limiter& lim = *limiter_;
    // An empty ring sleeps idle_sleep_us at a time: state changes are not latency-critical.
    const auto park = std::chrono::microseconds(opts_.idle_sleep_us);
    BackoffIdle<> idle(0, 0, park, park);
    std::uint64_t processed = 0;
    for (;;) {
        const bool stopping = stop_.load(std::memory_order_acquire);
        const std::int64_t now = steady_ns();
        const std::size_t n = lim.drain(now);
        const bool ended = lim.end_windows(now, false);
        const bool reported = lim.report_drops(now, false);
        if (n > 0 || ended || reported) lim.flush();
        processed += n;
        processed_.store(processed, std::memory_order_release);
        if (n == 0 && stopping) break;
        idle.idle(static_cast<int>(n));
    }
    // Stopped and drained: what is still pending goes out now.
    const std::int64_t now = steady_ns();
    lim.end_windows(now, true);
    lim.report_drops(now, true);
    lim.flush();
}

}  // namespace tickgate
