// Per-instrument sequencing and state (spec "What a conforming handler
// does"): duplicates, gaps, suspect/repair, heartbeats, snapshots with
// replay of buffered deltas, session change; drives the BookStore.
// Engine thread only; no allocation, locks or exceptions after construction.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "tickgate/book/level_book.hpp"
#include "tickgate/event.hpp"

namespace tickgate {

// Capacities fixed at start-up.
struct Capacity {
    std::uint32_t max_instruments = 4096;     // instrument ids 0 .. max_instruments-1
    std::uint32_t book_depth = 32;            // levels per side
    std::uint32_t recovery_depth = 256;       // deltas kept per suspect instrument
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
    InstrumentCounters counters;
};

enum class Verdict : std::uint8_t {
    kAccepted,          // in sequence (or cold start)
    kGap,               // accepted after a forward gap (lost > 0)
    kDuplicate,         // dropped
    kHeartbeat,         // liveness refreshed
    kHeartbeatGap,      // heartbeat revealed lost messages: suspect
    kSnapshotApplied,   // book replaced; suspect may remain if a hole is left
    kSnapshotStale,     // ignored
    kSnapshotLevels,    // continuation of a snapshot (no verdict of its own)
    kDefinition,
    kSessionReset,      // a channel's instruments went back to nothing known
    kDataLost,          // the transport dropped data: suspect
    kOutOfRange,        // instrument id >= max_instruments: ignored, counted
    kImplausible,       // rule 6: seq too far ahead, dropped, counted
    kForeignChannel,    // rule 7: the instrument belongs to another channel, dropped, counted
};

struct Update {
    std::uint32_t instrument_id;
    Verdict verdict;
    bool book_changed;
    bool suspect;       // the instrument's state after the event
    std::uint64_t lost; // newly counted lost messages
};

struct SequencerCounters {
    std::uint64_t out_of_range = 0;
    std::uint64_t session_resets = 0;
};

class Sequencer {
public:
    explicit Sequencer(const Capacity& capacity = {});

    // What the constructor allocates besides the books (BookStore::bytes_for),
    // so a config can be refused before it is tried (estimate_memory).
    // Per instrument: its state and its slot in seen_ids; plus the per-channel
    // clock offsets.
    [[nodiscard]] static std::size_t state_bytes(const Capacity& c) noexcept {
        return std::size_t{c.max_instruments} * (sizeof(InstrumentState) + sizeof(std::uint32_t)) +
               kChannelIds * sizeof(std::int64_t);
    }
    // The recovery pool: recovery_instruments blocks of recovery_depth deltas.
    [[nodiscard]] static std::size_t recovery_bytes(const Capacity& c) noexcept {
        return std::size_t{c.recovery_instruments} *
               (std::size_t{c.recovery_depth} * sizeof(BufferedDelta) + sizeof(RecoveryBlock) + sizeof(std::uint32_t));
    }

    // Applies one event. Engine thread only; O(1) except snapshots (levels)
    // and session changes (instruments of the channel).
    Update apply(const Event& ev) noexcept;

    // Clock offset (our clock minus the provider's, ns) used by the gate for instruments
    // of `channel`. Set before traffic starts.
    void set_clock_offset(std::uint16_t channel, std::int64_t offset_ns);

    // Start-up: symbol and exponent of `id` from the config. With `learn`
    // false, `I` messages no longer change them.
    void define(std::uint32_t id, std::string_view symbol, std::int8_t price_exponent);
    void set_learn_definitions(bool learn) noexcept { learn_definitions_ = learn; }
    // Rule 7 (on by default): an instrument belongs to the first channel that
    // carries it in the session. Off only where the channel is nothing but a
    // header claim (offline replay without configured channels, whose
    // certification reference lets an instrument follow the header).
    void set_bind_instruments_to_channels(bool bind) noexcept { bind_instruments_ = bind; }

    [[nodiscard]] std::uint32_t max_instruments() const noexcept { return capacity_.max_instruments; }
    [[nodiscard]] const InstrumentState& state(std::uint32_t id) const noexcept { return states_[id]; }
    [[nodiscard]] const BookStore& books() const noexcept { return books_; }
    // Ids of every instrument seen, in order of first appearance.
    [[nodiscard]] std::span<const std::uint32_t> seen_ids() const noexcept { return seen_ids_; }
    [[nodiscard]] const SequencerCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] const Capacity& capacity() const noexcept { return capacity_; }

private:
    static constexpr std::size_t kChannelIds = 65536;
    struct BufferedDelta {
        std::uint64_t seq;
        std::int64_t source_ns;
        std::int64_t price;
        std::uint32_t qty;
        std::uint8_t side;
        std::uint8_t action;
    };
    struct RecoveryBlock {
        std::uint32_t head = 0;   // index of the oldest delta
        std::uint32_t count = 0;
    };
    struct PendingSnapshot {
        std::uint32_t id = 0;
        std::uint32_t bids_left = 0;
        std::uint32_t asks_left = 0;
        bool active = false;
        bool apply = false;       // false: stale or out of range, levels skipped
        std::uint64_t seq = 0;
        std::uint64_t saved_last_seq = 0;
        bool saved_known = false;
    };

    Update apply_other(const Event& ev) noexcept;  // everything but in-range Q and D
    InstrumentState* touch(const Event& ev) noexcept;
    InstrumentState* bind(InstrumentState& st, const Event& ev) noexcept;
    void recover_on_quote(InstrumentState& st) noexcept;
    Verdict take_tick(InstrumentState& st, std::uint64_t seq, const Event& ev, std::int64_t source_ns,
                      std::uint64_t& lost) noexcept;
    Update on_quote(InstrumentState& st, const Event& ev) noexcept;
    Update on_delta(InstrumentState& st, const Event& ev) noexcept;
    Update on_heartbeat(InstrumentState& st, const Event& ev) noexcept;
    Update on_snapshot_begin(const Event& ev) noexcept;
    Update on_snapshot_levels(const Event& ev) noexcept;
    Update on_definition(InstrumentState& st, const Event& ev) noexcept;
    Update on_session_change(const Event& ev) noexcept;
    Update finish_snapshot() noexcept;
    void apply_delta_to_book(std::uint32_t id, std::uint8_t side, std::uint8_t action,
                             std::int64_t price, std::uint32_t qty) noexcept;
    void buffer_delta(InstrumentState& st, const Event& ev) noexcept;
    void release_block(InstrumentState& st) noexcept;
    void reset(InstrumentState& st, std::uint32_t id) noexcept;

    Capacity capacity_;
    std::vector<InstrumentState> states_;
    BookStore books_;
    std::vector<std::uint32_t> seen_ids_;
    std::vector<BufferedDelta> recovery_;        // [block][recovery_depth]
    std::vector<RecoveryBlock> blocks_;
    std::vector<std::uint32_t> free_blocks_;     // stack of free block indices
    std::vector<std::int64_t> channel_offsets_;  // [channel]
    PendingSnapshot pending_;
    SequencerCounters counters_;
    bool learn_definitions_ = true;
    bool bind_instruments_ = true;
};

// ---- hot path, inline so that decode -> sequence -> book compiles into one loop

inline Update Sequencer::apply(const Event& ev) noexcept {
    // Q and D of a known-range instrument outside a snapshot: the common case.
    if ((ev.kind == EventKind::kDelta || ev.kind == EventKind::kQuote) && !pending_.active &&
        ev.instrument_id < capacity_.max_instruments) [[likely]] {
        InstrumentState* st = touch(ev);
        if (!st) [[unlikely]] return {ev.instrument_id, Verdict::kForeignChannel, false, states_[ev.instrument_id].suspect, 0};
        return ev.kind == EventKind::kDelta ? on_delta(*st, ev) : on_quote(*st, ev);
    }
    return apply_other(ev);
}

// Rule 7: the state of the event's instrument, or nullptr when the
// instrument belongs to another channel in this session (counted).
inline InstrumentState* Sequencer::touch(const Event& ev) noexcept {
    InstrumentState& st = states_[ev.instrument_id];
    if (!st.bound || st.channel_id != ev.channel_id) [[unlikely]] return bind(st, ev);
    return &st;
}

// Rules 1 and 6, common to Q and D: kDuplicate or kImplausible for a tick
// that is dropped (counted, nothing else changes); otherwise the tick is
// taken (gap counted, last_seq, liveness, source time), `lost` holds the
// messages the gap says are missing and the result is kAccepted or kGap.
inline Verdict Sequencer::take_tick(InstrumentState& st, std::uint64_t seq, const Event& ev,
                                    std::int64_t source_ns, std::uint64_t& lost) noexcept {
    if (st.known && seq <= st.last_seq) {
        ++st.counters.duplicates;
        return Verdict::kDuplicate;
    }
    if (st.known && seq - st.last_seq > kImplausibleSeqJump) [[unlikely]] {
        ++st.counters.implausible_seq;
        return Verdict::kImplausible;
    }
    lost = st.known && seq > st.last_seq + 1 ? seq - st.last_seq - 1 : 0;
    if (lost) {
        st.counters.lost += lost;
        ++st.counters.gap_events;
    }
    st.known = true;
    st.last_seq = seq;
    st.last_alive_ns = ev.recv_ns;
    st.alive = true;
    st.last_source_ns = source_ns;
    st.has_source = true;
    ++st.counters.accepted;
    return lost ? Verdict::kGap : Verdict::kAccepted;
}

inline Update Sequencer::on_quote(InstrumentState& st, const Event& ev) noexcept {
    const std::uint32_t id = ev.instrument_id;
    std::uint64_t lost = 0;
    const Verdict v = take_tick(st, ev.u.quote.seq, ev, ev.u.quote.source_ns, lost);
    if (v == Verdict::kDuplicate || v == Verdict::kImplausible) return {id, v, false, st.suspect, 0};
    if (st.suspect) [[unlikely]] recover_on_quote(st);
    books_.set_top(id, ev.u.quote.bid_px, ev.u.quote.bid_qty, ev.u.quote.ask_px, ev.u.quote.ask_qty);
    return {id, v, true, false, lost};
}

inline void Sequencer::apply_delta_to_book(std::uint32_t id, std::uint8_t side, std::uint8_t action,
                                           std::int64_t price, std::uint32_t qty) noexcept {
    const Side s = side == 0 ? Side::kBid : Side::kAsk;
    const LevelResult r = action == 0 ? books_.set_level(id, s, price, qty)
                                      : books_.delete_level(id, s, price);
    if (r == LevelResult::kDroppedDeep) ++states_[id].counters.book_overflows;
}

inline Update Sequencer::on_delta(InstrumentState& st, const Event& ev) noexcept {
    const std::uint32_t id = ev.instrument_id;
    std::uint64_t lost = 0;
    const Verdict v = take_tick(st, ev.u.delta.seq, ev, ev.u.delta.source_ns, lost);
    if (v == Verdict::kDuplicate || v == Verdict::kImplausible) return {id, v, false, st.suspect, 0};
    if (lost) st.suspect = true;  // a delta after a gap: the book is wrong until a snapshot
    if (st.suspect) [[unlikely]] buffer_delta(st, ev);
    apply_delta_to_book(id, ev.u.delta.side, ev.u.delta.action, ev.u.delta.price, ev.u.delta.qty);
    return {id, v, true, st.suspect, lost};
}

}  // namespace tickgate
