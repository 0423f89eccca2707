// The instrument table: each instrument's sequencing state, liveness and
// counters, its symbol, and the ids seen in order of first appearance. The
// sequencer writes it, the gate, the summary and the engine read it. Fixed
// capacity; engine thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
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

// Why an instrument is SUSPECT (the table's "why", the JSON's
// "suspect_reason", the state log's suspect lines): suspect_reason() below.
enum class SuspectReason : std::uint8_t {
    kNone,         // not suspect
    kColdStart,    // never repaired since first seen: no snapshot or full quote yet (ITCH: not yet alive)
    kGap,          // messages were lost (a gap, a hole given up)
    kUnconfirmed,  // MDP3: its channel had a gap; its next RptSeq or a snapshot says whether it lost any
    kLateJoin,     // ITCH: its channel was joined mid-session (orders added before are unknown)
    kIncomplete,   // ITCH: its book missed orders (a full store refused an add, or it was booked mid-session)
};
// "cold_start", "gap", "unconfirmed", "late_join", "incomplete"; "" for kNone.
[[nodiscard]] std::string_view to_string(SuspectReason r) noexcept;

// One 64-byte line holds what every message and the gate touch (the fields
// up to and including counters.accepted); the symbol and the rarer counters
// follow. Aligned, so an instrument's hot fields never straddle two lines:
// a sequencer over thousands of instruments misses one line a message, not two.
struct alignas(64) InstrumentState {
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
    bool booked = true;       // its book is built and its updates delivered (subscriptions)
    // MDP3: the venue deleted its definition (SecurityUpdateAction 'D'): not
    // tradeable, the gate answers unknown, until a definition adds it again.
    bool deleted = false;
    std::int8_t price_exponent = -8;
    std::uint16_t channel_id = 0;
    std::uint32_t recovery_block = std::numeric_limits<std::uint32_t>::max();
    // Bumped when the id is given another symbol: a handle of the old one
    // no longer reads this instrument (InstrumentHandle).
    std::uint32_t generation = 0;
    // MDP3 (MDP3.md "Per channel"): `unconfirmed` — an instrument of a
    // channel that had a gap, until its next RptSeq or a snapshot (suspect
    // meanwhile; `unconfirmed_clean`: it was clean before, so a next RptSeq
    // without loss makes it clean again); `lost_suspect` — suspect after an
    // RptSeq loss (not a cold start).
    bool unconfirmed = false;
    bool unconfirmed_clean = false;
    bool lost_suspect = false;
    // Written by a sequencer that knows a cause the counters below do not
    // show (ITCH: its channel's late join or given-up hole, an incomplete
    // book); suspect_reason() reads it first.
    SuspectReason cause = SuspectReason::kNone;
    InstrumentCounters counters;  // `accepted` first: on the hot line
    char symbol[17] = {};
};
static_assert(offsetof(InstrumentState, counters) + sizeof(InstrumentCounters::accepted) <= 64,
              "InstrumentState: the per-message fields must fit its first cache line");

// Why `st` is suspect (kNone when it is not): its cause when one was
// written, else unconfirmed, a gap (counted), or a cold start.
[[nodiscard]] inline SuspectReason suspect_reason(const InstrumentState& st) noexcept {
    if (!st.suspect) return SuspectReason::kNone;
    if (st.unconfirmed) return SuspectReason::kUnconfirmed;
    if (st.cause != SuspectReason::kNone) return st.cause;
    if (st.lost_suspect || st.counters.gap_events > 0) return SuspectReason::kGap;
    return SuspectReason::kColdStart;
}

// How an engine names an instrument: its dense id and the generation of the
// definition it was found under. Stable for as long as the id keeps its
// symbol; after a redefinition (a new day's locate) it reads as unknown.
struct InstrumentHandle {
    std::uint32_t id = 0;
    std::uint32_t generation = 0;
    bool operator==(const InstrumentHandle&) const = default;
};

// A fixed-capacity set of symbols (up to 16 bytes), each with an id: open
// addressing, linear probing, deletion by backward shift (no tombstones).
// Never allocates after construction.
class SymbolIndex {
public:
    static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
    // Room for `capacity` symbols (the table is twice that, a power of two).
    explicit SymbolIndex(std::uint32_t capacity);
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t capacity) noexcept;

    [[nodiscard]] std::uint32_t find(std::string_view symbol) const noexcept;
    // Maps `symbol` to `id` (replacing its old id). False when the index is
    // full (capacity symbols) or the symbol is empty or longer than 16 bytes.
    bool insert(std::string_view symbol, std::uint32_t id) noexcept;
    // Removes `symbol` if it maps to `id` (kNone: whatever it maps to).
    void erase(std::string_view symbol, std::uint32_t id = kNone) noexcept;
    [[nodiscard]] std::uint32_t size() const noexcept { return size_; }

private:
    struct Slot {
        char symbol[16];
        std::uint32_t id;
        std::uint8_t length;  // 0: empty slot
    };
    [[nodiscard]] std::size_t home(std::string_view symbol) const noexcept;
    [[nodiscard]] std::size_t slot_of(std::string_view symbol) const noexcept;  // its slot, or an empty one
    std::vector<Slot> slots_;
    std::size_t mask_ = 0;
    std::uint32_t capacity_ = 0;
    std::uint32_t size_ = 0;
};

class InstrumentTable {
public:
    // Throws std::invalid_argument for max_instruments 0.
    explicit InstrumentTable(std::uint32_t max_instruments);
    // What the constructor allocates: per instrument its state and its slot in
    // seen_ids, the symbol index and the subscription set.
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t max_instruments) noexcept {
        return std::size_t{max_instruments} * (sizeof(InstrumentState) + sizeof(std::uint32_t)) +
               2 * SymbolIndex::bytes_for(max_instruments);
    }

    // Start-up: symbol and exponent of `id` (throws std::out_of_range beyond capacity).
    void define(std::uint32_t id, std::string_view symbol, std::int8_t price_exponent);
    // Gives `id` the symbol `symbol` (cut to 16 bytes); a different symbol than
    // before bumps the id's generation and moves the index. Returns true when
    // that changed whether the id is booked (the caller clears or distrusts
    // its book). Engine thread; no allocation.
    bool set_symbol(std::uint32_t id, std::string_view symbol) noexcept;

    // The instrument defined with `symbol` (the latest id given it), or
    // nothing yet. Engine thread; O(1), no allocation.
    [[nodiscard]] std::optional<InstrumentHandle> find(std::string_view symbol) const noexcept {
        const std::uint32_t id = symbols_.find(symbol);
        if (id == SymbolIndex::kNone) return std::nullopt;
        return InstrumentHandle{id, states_[id].generation};
    }
    // Whether `h` still names the instrument it was found as.
    [[nodiscard]] bool current(InstrumentHandle h) const noexcept {
        return h.id < states_.size() && states_[h.id].generation == h.generation && states_[h.id].symbol[0] != '\0';
    }

    // Subscriptions: once any symbol is subscribed, only instruments whose
    // symbol is subscribed are booked. Returns false when the set is full
    // (max_instruments symbols) or the symbol is not 1..16 bytes. Only the
    // `booked` flags of defined instruments change; the sequencer's
    // apply_subscriptions() acts on them. Engine thread.
    bool subscribe(std::string_view symbol) noexcept;
    void unsubscribe(std::string_view symbol) noexcept;
    [[nodiscard]] bool filtering() const noexcept { return filtering_; }
    // Whether an instrument with `symbol` is to be booked.
    [[nodiscard]] bool wanted(std::string_view symbol) const noexcept {
        return !filtering_ || subscriptions_.find(symbol) != SymbolIndex::kNone;
    }
    // Start-up: our clock minus the provider's (ns) for instruments of
    // `channel`, used by the gate. At most one entry per channel.
    void set_clock_offset(std::uint16_t channel, std::int64_t offset_ns);
    [[nodiscard]] std::int64_t clock_offset(std::uint16_t channel) const noexcept {
        for (const auto& [ch, off] : offsets_)
            if (ch == channel) return off;
        return 0;
    }

    // Venues whose liveness is a channel's, not an instrument's (ITCH: any
    // packet of a channel with no hole open): start-up, one clock per block
    // of 2^id_shift ids (a channel's ids). The rules then set_block_alive()
    // once a packet, O(1) however many instruments the channel has, and
    // last_alive_ns() answers the later of the instrument's and its block's.
    void share_liveness_by_block(unsigned id_shift) {
        block_shift_ = id_shift;
        block_alive_ns_.assign((states_.size() - 1) / (std::size_t{1} << id_shift) + 1, 0);
    }
    // Engine thread; a block beyond the ids is ignored.
    void set_block_alive(std::uint32_t block, std::int64_t ns) noexcept {
        if (block < block_alive_ns_.size()) block_alive_ns_[block] = ns;
    }
    // When `id` was last known alive (meaningful once state(id).alive): the gate's silence.
    [[nodiscard]] std::int64_t last_alive_ns(std::uint32_t id) const noexcept {
        const std::int64_t own = states_[id].last_alive_ns;
        if (block_alive_ns_.empty()) [[likely]] return own;  // a test for the venues without
        return std::max(own, block_alive_ns_[id >> block_shift_]);
    }

    [[nodiscard]] std::uint32_t max_instruments() const noexcept { return static_cast<std::uint32_t>(states_.size()); }
    [[nodiscard]] const InstrumentState& state(std::uint32_t id) const noexcept { return states_[id]; }
    // A hint that a message of `id` (< max_instruments) comes soon: its hot line fetched for writing.
    void prefetch(std::uint32_t id) const noexcept { __builtin_prefetch(&states_[id], 1); }
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
    SymbolIndex symbols_;
    SymbolIndex subscriptions_;
    bool filtering_ = false;
    std::vector<std::pair<std::uint16_t, std::int64_t>> offsets_;  // configured channels only
    std::vector<std::int64_t> block_alive_ns_;  // share_liveness_by_block(): per block of ids, else empty
    unsigned block_shift_ = 0;
};

}  // namespace tickgate
