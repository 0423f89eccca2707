// MDP3's recovery service (recovery.hpp, mdp3::Protocol::Recovery).
// MDP3.md "Snapshot": live, a channel's snapshot feed is joined only while
// some instrument of the channel is suspect or unconfirmed, and left when
// all are clean (the venue asks for this: the feed is heavy).
//
// The decision is made on the thread that owns the sequencer state (the
// engine thread of the two-thread pipeline, the handler thread inline):
// on_update() per sequencer update is a compare and a store; refresh()
// after a batch rescans the channels' instruments only when an update may
// have changed the answer, at most once per kRescanNs (checked on one
// call in kClockEvery) while a feed is joined. The answer is one atomic flag per channel with snapshot lines,
// which the receiving thread reads once per loop iteration (steer():
// Receiver::follow_snapshot_wants) to join or leave — the membership
// syscall is made on a change, never per message. No allocation after
// construction, no lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tickgate/event.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/recovery.hpp"
#include "tickgate/feed/sequencer.hpp"

namespace tickgate::mdp3 {

class SnapshotFeedControl {
public:
    // While a feed is joined, the instruments are rescanned at most this often.
    static constexpr std::int64_t kRescanNs = 1'000'000;
    // ... and the clock read on one refresh() in this many.
    static constexpr std::uint32_t kClockEvery = 16;

    // The channels of `cfg` with snapshot lines, in config order (the order
    // of Receiver::follow_snapshot_wants' flags); `lines`: the receiver's,
    // whose snapshot lines count the recoveries their snapshots make.
    SnapshotFeedControl(const Config& cfg, std::span<const std::unique_ptr<LineStats>> lines);

    // Sequencer thread, before the sequencer applies `ev`: notes whether a
    // snapshot's instrument is suspect (to tell a recovery from a refresh).
    void before(const InstrumentTable& instruments, const Event& ev) noexcept {
        if (ev.kind == EventKind::kSnapshotBegin) [[unlikely]]
            snapshot_of_suspect_ = ev.instrument_id < instruments.max_instruments() &&
                                   instruments.state(ev.instrument_id).suspect;
    }
    // Sequencer thread, for each update: a suspect instrument may need a
    // join; while joined, any update may be the last recovery.
    void on_update(const Update& u, const Event& ev) noexcept {
        if (u.verdict == Verdict::kSnapshotApplied && !u.suspect && snapshot_of_suspect_ && is_snapshot_line(ev.line))
            [[unlikely]] count_recovery(ev);
        dirty_ |= u.suspect || any_wanted_;
    }
    // Sequencer thread, after a batch of updates: recomputes the wanted
    // flags if an update may have changed them (reads the clock only then);
    // O(instruments seen) when it does.
    void refresh(const InstrumentTable& instruments) noexcept;

    // Receiving thread, once per loop iteration: joins or leaves the snapshot lines as wanted.
    void steer(Receiver& receiver) noexcept { receiver.follow_snapshot_wants(wanted()); }

    // Any thread: per channel with snapshot lines (config order), whether its feed is wanted.
    [[nodiscard]] std::span<const std::atomic<bool>> wanted() const noexcept { return {wanted_.get(), channels_.size()}; }
    [[nodiscard]] std::span<const std::uint16_t> channels() const noexcept { return channels_; }

private:
    void count_recovery(const Event& ev) noexcept;

    std::vector<std::uint16_t> channels_;                 // with snapshot lines, config order
    std::unique_ptr<std::atomic<bool>[]> wanted_;         // [slot]
    std::vector<std::uint8_t> scan_;                      // [slot]: the rescan's answer
    std::vector<LineStats*> snapshot_lines_;              // [slot * 2 + (line - kSnapshotLineA)]
    bool dirty_ = true;
    bool any_wanted_ = false;
    bool snapshot_of_suspect_ = false;
    std::int64_t last_scan_ns_ = 0;
    std::uint32_t calls_since_clock_ = 0;
};

static_assert(RecoveryService<SnapshotFeedControl>);

}  // namespace tickgate::mdp3
