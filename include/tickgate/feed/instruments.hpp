// The instrument table: each instrument's sequencing state, liveness and
// counters, its symbol, and the ids seen in order of first appearance. The
// sequencer writes it, the gate, the summary and the engine read it. Fixed
// capacity; engine thread only.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace tickgate {

// Capacities fixed at start-up.
struct Capacity {
    std::uint32_t max_instruments = 4096;     // instrument ids 0 .. max_instruments-1
    std::uint32_t book_depth = 32;            // levels per side
    std::uint32_t recovery_depth = 256;       // events kept per suspect instrument
    std::uint32_t recovery_instruments = 1024;  // suspect instruments buffering at once
};

struct InstrumentCounters {
    std::uint64_t accepted = 0;        // sequenced messages taken
    std::uint64_t duplicates = 0;      // seq <= last_seq, dropped
    std::uint64_t lost = 0;            // messages known missing (gaps), never counted twice
    std::uint64_t gap_events = 0;      // times a gap was opened
    std::uint64_t heartbeats = 0;
    std::uint64_t snapshots_applied = 0;
    std::uint64_t stale_snapshots = 0;
    std::uint64_t recovered = 0;       // suspect -> clean transitions
    std::uint64_t unbuffered_deltas = 0;  // deltas not kept while suspect (pool empty / ring full)
    std::uint64_t book_overflows = 0;  // levels dropped beyond book depth
    std::uint64_t implausible_seq = 0;   // rule 6: seq / next_seq too far ahead, dropped
    std::uint64_t foreign_channel = 0;   // rule 7: messages for it on another channel, dropped
};

struct InstrumentState {
    // Gate-hot fields first: one cache line for check().
    std::int64_t last_alive_ns = 0;
    std::int64_t last_source_ns = 0;
    std::int64_t clock_offset_ns = 0;
    std::uint64_t last_seq = 0;
    bool seen = false;        // appeared in any message
    bool bound = false;       // channel_id is its channel for the session (rule 7)
    bool alive = false;       // last_alive_ns is meaningful
    bool has_source = false;  // last_source_ns is meaningful (a price was taken)
    bool known = false;       // last_seq is meaningful
    bool suspect = true;
    std::int8_t price_exponent = -8;
    std::uint16_t channel_id = 0;
    std::uint32_t recovery_block = std::numeric_limits<std::uint32_t>::max();
    char symbol[17] = {};
    // MDP3 (MDP3.md "Per channel"): `unconfirmed` — an instrument of a
    // channel that had a gap, until its next RptSeq or a snapshot (suspect
    // meanwhile; `unconfirmed_clean`: it was clean before, so a next RptSeq
    // without loss makes it clean again); `lost_suspect` — suspect after an
    // RptSeq loss (not a cold start).
    bool unconfirmed = false;
    bool unconfirmed_clean = false;
    bool lost_suspect = false;
    InstrumentCounters counters;
};

class InstrumentTable {
public:
    // Throws std::invalid_argument for max_instruments 0.
    explicit InstrumentTable(std::uint32_t max_instruments);
    // What the constructor allocates: per instrument its state and its slot in seen_ids.
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t max_instruments) noexcept {
        return std::size_t{max_instruments} * (sizeof(InstrumentState) + sizeof(std::uint32_t));
    }

    // Start-up: symbol and exponent of `id` (throws std::out_of_range beyond capacity).
    void define(std::uint32_t id, std::string_view symbol, std::int8_t price_exponent);
    // Start-up: our clock minus the provider's (ns) for instruments of
    // `channel`, used by the gate. At most one entry per channel.
    void set_clock_offset(std::uint16_t channel, std::int64_t offset_ns);
    [[nodiscard]] std::int64_t clock_offset(std::uint16_t channel) const noexcept {
        for (const auto& [ch, off] : offsets_)
            if (ch == channel) return off;
        return 0;
    }

    [[nodiscard]] std::uint32_t max_instruments() const noexcept { return static_cast<std::uint32_t>(states_.size()); }
    [[nodiscard]] const InstrumentState& state(std::uint32_t id) const noexcept { return states_[id]; }
    [[nodiscard]] InstrumentState& state(std::uint32_t id) noexcept { return states_[id]; }
    // Ids of every instrument seen, in order of first appearance.
    [[nodiscard]] std::span<const std::uint32_t> seen_ids() const noexcept { return seen_ids_; }
    // Marks `id` seen (the first time: appended to seen_ids). No allocation:
    // seen_ids has room for every id.
    void mark_seen(std::uint32_t id) noexcept {
        InstrumentState& st = states_[id];
        if (!st.seen) seen_ids_.push_back(id);
        st.seen = true;
    }

private:
    std::vector<InstrumentState> states_;
    std::vector<std::uint32_t> seen_ids_;
    std::vector<std::pair<std::uint16_t, std::int64_t>> offsets_;  // configured channels only
};

}  // namespace tickgate
