// State-change logging off the hot path.
//
// The engine thread turns sequencer updates (and, optionally, line
// statistics) into small POD StateChange records and pushes them into an
// SPSC ring with try_push: never blocks, never formats, never allocates; a
// full ring drops the record and counts it. A logger thread pops them,
// rate-limits per kind and instrument (at most N lines per window, then one
// "suppressed K similar" line when the window ends) and writes through an
// spdlog logger whose level and sink ("stderr" or a file path) come from
// LoggingConfig. Only changes are logged: gap_opened, suspect (and why),
// recovered, session_change, stale_snapshot, line_down/up, overload, ...;
// each line starts with its kind's name as to_string spells it.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/counter.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/spsc_ring.hpp"

namespace spdlog {
class logger;
}

namespace tickgate {

struct LineStats;

enum class StateChangeKind : std::uint8_t {
    kGapOpened,      // value: messages lost
    kSuspect,        // the instrument's book became unreliable; value: its SuspectReason (instruments.hpp)
    kRecovered,      // suspect -> clean
    kSessionChange,  // channel; value: the new session
    kStaleSnapshot,  // value: the snapshot's seq
    kLineDown,       // channel, line; value: silence in ms
    kLineUp,         // channel, line; value: how long it was silent, ms
    kOverload,       // instrument: the transport dropped its data (ring full);
                     // no instrument: kernel drops on a line (value: datagrams)
    kHoleGivenUp,    // channel (MoldUDP64): holes given up; value: messages lost
    kRerequested,    // channel (MoldUDP64): holes filled by the re-request server; value: messages recovered
    kSnapshotJoin,   // MDP3: channel, snapshot line joined; value: its joins so far
    kSnapshotLeave,  // MDP3: channel, snapshot line left; value: its leaves so far
    kCapacity,       // channel, line: a message for an instrument beyond capacity dropped;
                     // value: its instrument id (kNoInstrument: MDP3, no slot or definition room)
    kImplausiblePositions,  // channel (MoldUDP64): datagrams far beyond the stream dropped; value: how many
    kUnrequestedAnswers,    // channel (MoldUDP64): answer messages not asked for dropped; value: how many
    // ITCH GLIMPSE (channel): a snapshot asked for (value: 1 late join, 2 a
    // given-up hole), applied (value: orders; symbol: the u64 position it
    // continues at), failed (value: SnapshotFailure; symbol[0]: a
    // rejected login's reason code).
    kSnapshotRequested,
    kSnapshotApplied,
    kSnapshotFailed,
};
inline constexpr std::size_t kStateChangeKinds = 18;

[[nodiscard]] std::string_view to_string(StateChangeKind k) noexcept;

struct StateChange {
    static constexpr std::uint32_t kNoInstrument = std::numeric_limits<std::uint32_t>::max();
    std::int64_t time_ns = 0;  // event arrival (realtime ns); 0 = when logged
    std::uint64_t value = 0;
    std::uint32_t instrument_id = kNoInstrument;
    std::uint16_t channel = 0;
    StateChangeKind kind = StateChangeKind::kGapOpened;
    std::uint8_t line = 0xFF;  // kLineA, kLineB, ... (config.hpp line_name), 0xFF = n/a
    char symbol[16] = {};      // not NUL-terminated when all 16 are used
};
static_assert(std::is_trivially_copyable_v<StateChange>);
static_assert(sizeof(StateChange) == 40);

struct StateLogOptions {
    std::uint32_t max_instruments = 4096;    // size of the was-suspect bitmap (Capacity::max_instruments)
    std::size_t ring_capacity = 4096;        // records, power of two
    std::uint32_t max_lines_per_window = 5;  // per kind + instrument (or channel/line)
    std::int64_t window_ms = 1000;           // rate-limit window
    std::int64_t line_silence_ms = 1000;     // line_down after this much silence while the other line has traffic
    std::size_t max_lines = 64;              // lines tracked by on_line_activity
    std::int64_t idle_sleep_us = 5000;       // logger thread sleep when the ring is empty
    bool autostart = true;                   // start the logger thread in the constructor
    std::string logger_name = "tickgate.state";
};

class StateLog {
public:
    // Opens the sink (throws std::runtime_error if the file cannot be
    // opened, std::invalid_argument for an unknown level). With `instruments`, the
    // engine-side hooks copy the instrument's symbol into each record.
    explicit StateLog(const LoggingConfig& cfg, StateLogOptions opts = {}, const InstrumentTable* instruments = nullptr);
    ~StateLog();  // stop()
    StateLog(const StateLog&) = delete;
    StateLog& operator=(const StateLog&) = delete;

    // Starts the logger thread (if not autostarted). Idempotent.
    void start();
    // Drains the ring, writes pending "suppressed" lines and drop counts,
    // flushes and joins the logger thread. Call from the engine thread or
    // after it is done pushing. Idempotent.
    void stop();
    // Any thread: waits (up to `timeout_ms`) until every record pushed
    // before the call is logged and the sink flushed. True if it was.
    bool flush(std::int64_t timeout_ms = 5000);

    // ---- engine thread (the single producer) ----

    // Pushes one record; false (and counted) if the ring is full.
    bool push(const StateChange& c) noexcept;

    // Maps a sequencer update to state changes. Common case (no change):
    // a switch, a bit test and a compare.
    void on_update(const Update& u, const Event& ev) noexcept {
        switch (u.verdict) {
            case Verdict::kAccepted:
            case Verdict::kHeartbeat:
            case Verdict::kSnapshotApplied:
            case Verdict::kDuplicate:
            case Verdict::kDefinition:
                if (!u.suspect && was_suspect(u.instrument_id)) [[unlikely]]
                    recovered(u, ev);
                return;
            case Verdict::kSnapshotLevels:  // intermediate: suspect not meaningful
                return;
            default:
                slow_update(u, ev);
        }
    }

    // Optional, engine thread, every ~100 ms-1 s: a line with no packets
    // for more than line_silence_ms while the other line of its channel had
    // traffic in that time -> line_down; its first packets after that ->
    // line_up. A rise of a line's kernel drops -> overload; of an MDP3
    // snapshot line's joins or leaves -> snapshot_join / snapshot_leave
    // (the partner of a line is the other line of its pair: A/B, snapshot
    // A/B, definition A/B). Allocation-free.
    void on_line_activity(std::span<const std::unique_ptr<LineStats>> lines, std::int64_t now_ns) noexcept;

    // ---- any thread ----
    [[nodiscard]] std::uint64_t pushed() const noexcept { return pushed_.get(); }
    [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_.get(); }
    [[nodiscard]] std::uint64_t logged() const noexcept { return logged_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t suppressed() const noexcept { return suppressed_.load(std::memory_order_relaxed); }
    // Lines lost because formatting or the sink failed (out of memory, disk
    // full, ...); the first one is reported on stderr.
    [[nodiscard]] std::uint64_t failures() const noexcept { return failures_.load(std::memory_order_relaxed); }

private:
    struct LineTrack {
        std::uint64_t packets = 0;
        std::uint64_t kernel_drops = 0;
        std::uint64_t snapshot_joins = 0, snapshot_leaves = 0;
        std::int64_t last_change_ns = 0;
        bool init = false;
        bool down = false;
    };
    struct Limiter;

    [[nodiscard]] bool was_suspect(std::uint32_t id) const noexcept {
        return id < max_instruments_ && (bits_[id >> 6] >> (id & 63) & 1u) != 0;
    }
    void set_suspect(std::uint32_t id, bool v) noexcept {
        if (id >= max_instruments_) return;
        const std::uint64_t m = std::uint64_t{1} << (id & 63);
        if (v) bits_[id >> 6] |= m;
        else bits_[id >> 6] &= ~m;
    }
    void recovered(const Update& u, const Event& ev) noexcept;
    void slow_update(const Update& u, const Event& ev) noexcept;
    void emit(StateChangeKind kind, std::uint32_t id, const Event& ev, std::uint64_t value) noexcept;
    void run() noexcept;
    void failed(const char* step, const char* what) noexcept;  // counts; reports the first on stderr

    // Engine side.
    const InstrumentTable* instruments_;
    std::uint32_t max_instruments_;
    std::vector<std::uint64_t> bits_;  // was_suspect, one bit per instrument
    std::vector<LineTrack> lines_;
    std::int64_t line_silence_ns_;
    RelaxedCounter pushed_;
    RelaxedCounter dropped_;

    SpscRing<StateChange> ring_;

    // Logger side.
    StateLogOptions opts_;
    std::shared_ptr<spdlog::logger> logger_;
    std::unique_ptr<Limiter> limiter_;
    std::atomic<std::uint64_t> processed_{0};
    std::atomic<std::uint64_t> logged_{0};
    std::atomic<std::uint64_t> suppressed_{0};
    std::atomic<std::uint64_t> failures_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace tickgate
