#include "tickgate/feed/mdp3/snapshot_feed.hpp"

#include <algorithm>

#include "tickgate/feed/clock.hpp"

namespace tickgate::mdp3 {

SnapshotFeedControl::SnapshotFeedControl(const Config& cfg, std::span<const std::unique_ptr<LineStats>> lines) {
    for (const ChannelConfig& ch : cfg.channels)
        if (ch.snapshot_a) channels_.push_back(ch.id);
    wanted_ = std::make_unique<std::atomic<bool>[]>(channels_.size());
    scan_.assign(channels_.size(), 0);
    snapshot_lines_.assign(channels_.size() * 2, nullptr);
    for (const auto& l : lines) {
        if (!is_snapshot_line(l->line)) continue;
        const auto slot = std::find(channels_.begin(), channels_.end(), l->channel_id) - channels_.begin();
        if (static_cast<std::size_t>(slot) < channels_.size())
            snapshot_lines_[static_cast<std::size_t>(slot) * 2 + (l->line - kSnapshotLineA)] = l.get();
    }
}

void SnapshotFeedControl::refresh(const InstrumentTable& instruments) noexcept {
    if (!dirty_ || channels_.empty()) return;
    // While joined nearly every batch is dirty: the clock is read on one
    // call in kClockEvery (mdp3_bench: a clock read per packet cost ~20 ns).
    if (any_wanted_ && ++calls_since_clock_ < kClockEvery) return;
    calls_since_clock_ = 0;
    const std::int64_t now_ns = realtime_ns();
    if (any_wanted_ && now_ns - last_scan_ns_ < kRescanNs) return;
    std::fill(scan_.begin(), scan_.end(), 0);
    for (const std::uint32_t id : instruments.seen_ids()) {
        const InstrumentState& st = instruments.state(id);
        if (!st.suspect || !st.booked) continue;  // unconfirmed is suspect too; an unbooked book is nobody's
        for (std::size_t s = 0; s < channels_.size(); ++s) scan_[s] |= channels_[s] == st.channel_id;
    }
    any_wanted_ = false;
    for (std::size_t s = 0; s < channels_.size(); ++s) {
        wanted_[s].store(scan_[s] != 0, std::memory_order_relaxed);
        any_wanted_ |= scan_[s] != 0;
    }
    dirty_ = false;
    last_scan_ns_ = now_ns;
}

void SnapshotFeedControl::count_recovery(const Event& ev) noexcept {
    for (std::size_t s = 0; s < channels_.size(); ++s)
        if (channels_[s] == ev.channel_id) {
            if (LineStats* l = snapshot_lines_[s * 2 + (ev.line - kSnapshotLineA)]) l->snapshot_recoveries.add();
            return;
        }
}

}  // namespace tickgate::mdp3
