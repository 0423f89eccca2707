// Per-instrument sequencing rules (QFB1.md "What a conforming handler
// does"): duplicates, gaps, suspect/repair, heartbeats, snapshots with
// replay of buffered events, session change. The rule engine only: it
// writes the instrument table (instruments.hpp) and drives a book of any
// SequencedBook type (book/book.hpp), and owns the recovery pool.
// Engine thread only; no allocation, locks or exceptions after construction.
// Member definitions: sequencer_impl.hpp, instantiated once per book type
// (L2Book: feed/qfb1/instantiate.cpp); `Sequencer` is the L2 one.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tickgate/book/book.hpp"
#include "tickgate/book/indexed_book.hpp"
#include "tickgate/book/l2_book.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/zeroed_array.hpp"

namespace tickgate {

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
    kChannelEvent,      // MDP3: a channel gap, heartbeat or ChannelReset acted on the channel's instruments
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

template <SequencedBook Book>
class BasicSequencer {
public:
    // MDP3's rules (MDP3.md) are those of the level-indexed book's sequencer,
    // chosen at compile time: RptSeq has no plausibility bound, an instrument
    // stays in the channel it was first seen on whatever carries it, channel
    // gaps / heartbeats / resets act on the channel's instruments.
    static constexpr bool kMdp3 = std::is_same_v<Book, IndexedBook>;

    // Writes `instruments` and `book` (which outlive it); both sized for
    // capacity.max_instruments. Throws std::invalid_argument if they are not.
    BasicSequencer(InstrumentTable& instruments, Book& book, const Capacity& capacity);

    // The recovery pool: recovery_instruments blocks of recovery_depth events
    // (what the constructor allocates; estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t recovery_bytes(const Capacity& c) noexcept {
        return std::size_t{c.recovery_instruments} *
               (std::size_t{c.recovery_depth} * sizeof(Event) + sizeof(RecoveryBlock) + sizeof(std::uint32_t));
    }
    // What of it is resident once constructed: the block bookkeeping (the
    // events are zero pages, resident only in blocks that were used).
    [[nodiscard]] static std::size_t recovery_resident_bytes(const Capacity& c) noexcept {
        return std::size_t{c.recovery_instruments} * (sizeof(RecoveryBlock) + sizeof(std::uint32_t));
    }

    // Applies one event. Engine thread only; O(1) except snapshots (levels)
    // and session changes (instruments of the channel).
    Update apply(const Event& ev) noexcept;

    // With `learn` false, definition messages no longer change the symbols
    // and exponents configured at start-up.
    void set_learn_definitions(bool learn) noexcept { learn_definitions_ = learn; }
    // Rule 7 (on by default): an instrument belongs to the first channel that
    // carries it in the session. Off only where the channel is nothing but a
    // header claim (offline replay without configured channels, whose
    // certification reference lets an instrument follow the header).
    void set_bind_instruments_to_channels(bool bind) noexcept { bind_instruments_ = bind; }

    // Acts on the instrument table's subscriptions (InstrumentTable::subscribe):
    // an instrument no longer booked loses its book and buffered events; one
    // booked again is suspect until a snapshot or full quote rebuilds its book.
    // Sequencing goes on for all. Engine thread; O(max_instruments).
    void apply_subscriptions() noexcept;

    // Whether the engine is told of `u`: not for an instrument that is not
    // booked (subscriptions); always for channel-wide and out-of-range ones.
    [[nodiscard]] bool delivers(const Update& u) const noexcept {
        return u.instrument_id >= capacity_.max_instruments || u.verdict == Verdict::kSessionReset ||
               u.verdict == Verdict::kChannelEvent || states_[u.instrument_id].booked;
    }

    [[nodiscard]] const SequencerCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] const Capacity& capacity() const noexcept { return capacity_; }

private:
    struct RecoveryBlock {
        std::uint32_t head = 0;   // index of the oldest event
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

    // The instrument table's states, by id: its storage never moves (fixed
    // capacity), so the hot path reads it through one pointer, not through
    // the table.
    [[nodiscard]] InstrumentState& state(std::uint32_t id) noexcept { return states_[id]; }

    Update apply_other(const Event& ev) noexcept;  // everything but in-range Q and D
    InstrumentState* touch(const Event& ev) noexcept;
    InstrumentState* bind(InstrumentState& st, const Event& ev) noexcept;
    [[nodiscard]] bool foreign_snapshot_moves(const InstrumentState& st, const Event& ev) const noexcept;
    void recover_on_quote(InstrumentState& st) noexcept;
    Verdict take_tick(InstrumentState& st, std::uint64_t seq, const Event& ev, std::int64_t source_ns,
                      std::uint64_t& lost) noexcept;
    Update on_quote(InstrumentState& st, const Event& ev) noexcept;
    Update on_delta(InstrumentState& st, const Event& ev) noexcept;
    Update on_heartbeat(InstrumentState& st, const Event& ev) noexcept;
    Update on_snapshot_begin(const Event& ev) noexcept;
    Update on_snapshot_levels(const Event& ev) noexcept;
    Update on_definition(InstrumentState& st, const Event& ev) noexcept;
    void on_booking_changed(InstrumentState& st, std::uint32_t id) noexcept;
    Update on_session_change(const Event& ev) noexcept;
    Update on_entry(InstrumentState& st, const Event& ev) noexcept;
    Update on_channel_event(const Event& ev) noexcept;
    Update finish_snapshot() noexcept;
    void apply_to_book(std::uint32_t id, const Event& ev) noexcept;
    void buffer_event(InstrumentState& st, const Event& ev) noexcept;
    void release_block(InstrumentState& st) noexcept;
    void reset(InstrumentState& st, std::uint32_t id) noexcept;

    Capacity capacity_;
    InstrumentTable& instruments_;
    InstrumentState* const states_;  // instruments_'s storage
    Book& book_;
    ZeroedArray<Event> recovery_;                // [block][recovery_depth]: events kept while suspect (zero pages)
    std::vector<RecoveryBlock> blocks_;
    std::vector<std::uint32_t> free_blocks_;     // stack of free block indices
    PendingSnapshot pending_;
    SequencerCounters counters_;
    bool learn_definitions_ = true;
    bool bind_instruments_ = true;
};

// The sequencer of QFB/1's L2 book. Its out-of-line members (sequencer_impl.hpp)
// are instantiated once in the library (feed/qfb1/instantiate.cpp); the
// inline hot path below is instantiated where it is used, so that it
// inlines into the decoder's loop (an `extern template` here stops GCC from
// inlining it: measured, a call per message).
using Sequencer = BasicSequencer<L2Book>;

// ---- hot path, inline so that decode -> sequence -> book compiles into one
// loop. always_inline: with the seam's extra layers GCC's size heuristics
// otherwise leave calls per message (measured: set_only_level, on_quote).

template <SequencedBook Book>
inline Update BasicSequencer<Book>::apply(const Event& ev) noexcept {
    if constexpr (kMdp3) {
        // MDP3 entries of a known-range instrument outside a snapshot: the common case.
        if ((ev.kind == EventKind::kLevelEntry || ev.kind == EventKind::kSequencedEntry) && !pending_.active &&
            ev.instrument_id < capacity_.max_instruments) [[likely]]
            return on_entry(*touch(ev), ev);
        return apply_other(ev);
    }
    // Q and D of a known-range instrument outside a snapshot: the common case.
    if ((ev.kind == EventKind::kDelta || ev.kind == EventKind::kQuote) && !pending_.active &&
        ev.instrument_id < capacity_.max_instruments) [[likely]] {
        InstrumentState* st = touch(ev);
        if (!st) [[unlikely]]
            return {ev.instrument_id, Verdict::kForeignChannel, false, state(ev.instrument_id).suspect, 0};
        return ev.kind == EventKind::kDelta ? on_delta(*st, ev) : on_quote(*st, ev);
    }
    return apply_other(ev);
}

// Rule 7: the state of the event's instrument, or nullptr when the
// instrument belongs to another channel in this session (counted).
template <SequencedBook Book>
[[gnu::always_inline]] inline InstrumentState* BasicSequencer<Book>::touch(const Event& ev) noexcept {
    InstrumentState& st = state(ev.instrument_id);
    if constexpr (kMdp3) {
        // Sequenced by RptSeq whatever channel carried it; a member of the first.
        if (!st.bound) [[unlikely]] return bind(st, ev);
        return &st;
    }
    if (!st.bound || st.channel_id != ev.channel_id) [[unlikely]] return bind(st, ev);
    return &st;
}

// Rules 1 and 6, common to Q and D: kDuplicate or kImplausible for a tick
// that is dropped (counted, nothing else changes); otherwise the tick is
// taken (gap counted, last_seq, liveness, source time), `lost` holds the
// messages the gap says are missing and the result is kAccepted or kGap.
template <SequencedBook Book>
[[gnu::always_inline]] inline Verdict BasicSequencer<Book>::take_tick(InstrumentState& st, std::uint64_t seq, const Event& ev,
                                               std::int64_t source_ns, std::uint64_t& lost) noexcept {
    if (st.known && seq <= st.last_seq) {
        ++st.counters.duplicates;
        return Verdict::kDuplicate;
    }
    if (st.known && seq - st.last_seq > kImplausibleSeqJump) [[unlikely]] {  // MDP3.md: RptSeq too
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

template <SequencedBook Book>
[[gnu::always_inline]] inline Update BasicSequencer<Book>::on_quote(InstrumentState& st, const Event& ev) noexcept {
    const std::uint32_t id = ev.instrument_id;
    std::uint64_t lost = 0;
    const Verdict v = take_tick(st, ev.u.quote.seq, ev, ev.u.quote.source_ns, lost);
    if (v == Verdict::kDuplicate || v == Verdict::kImplausible) return {id, v, false, st.suspect, 0};
    if (st.suspect) [[unlikely]] recover_on_quote(st);
    apply_to_book(id, ev);
    return {id, v, st.booked, false, lost};
}

template <SequencedBook Book>
[[gnu::always_inline]] inline void BasicSequencer<Book>::apply_to_book(std::uint32_t id, const Event& ev) noexcept {
    if (!state(id).booked) [[unlikely]] return;  // not subscribed: sequenced, not booked
    const BookEffect e = book_.apply(id, ev);
    if (e.dropped_levels != 0) [[unlikely]] state(id).counters.book_overflows += e.dropped_levels;
}

template <SequencedBook Book>
[[gnu::always_inline]] inline Update BasicSequencer<Book>::on_delta(InstrumentState& st, const Event& ev) noexcept {
    const std::uint32_t id = ev.instrument_id;
    std::uint64_t lost = 0;
    const Verdict v = take_tick(st, ev.u.delta.seq, ev, ev.u.delta.source_ns, lost);
    if (v == Verdict::kDuplicate || v == Verdict::kImplausible) return {id, v, false, st.suspect, 0};
    if (lost) st.suspect = true;  // a delta after a gap: the book is wrong until a snapshot
    if (st.suspect && st.booked) [[unlikely]] buffer_event(st, ev);
    apply_to_book(id, ev);
    return {id, v, st.booked, st.suspect, lost};
}

// MDP3.md "Per instrument": an entry with RptSeq, a QFB/1 delta's rules; on
// an unconfirmed instrument the next RptSeq says whether it lost anything.
template <SequencedBook Book>
[[gnu::always_inline]] inline Update BasicSequencer<Book>::on_entry(InstrumentState& st, const Event& ev) noexcept {
    const std::uint32_t id = ev.instrument_id;
    std::uint64_t lost = 0;
    const Verdict v = take_tick(st, ev.u.entry.seq, ev, ev.u.entry.source_ns, lost);
    if (v == Verdict::kDuplicate || v == Verdict::kImplausible) return {id, v, false, st.suspect, 0};
    // Without a definition the instrument's prices still read right (the
    // live view, the table): the template's exponent, not the default -8.
    st.price_exponent = ev.u.entry.price_exponent;
    if (st.unconfirmed) [[unlikely]] {
        st.unconfirmed = false;
        if (!lost && st.unconfirmed_clean) st.suspect = false;  // nothing lost: clean again
    }
    if (lost) {
        st.suspect = true;
        st.lost_suspect = true;
    }
    if (st.suspect && st.booked) [[unlikely]] buffer_event(st, ev);
    const bool changed = st.booked && book_.apply(id, ev).changed;  // not subscribed: sequenced only
    return {id, v, changed, st.suspect, lost};
}

}  // namespace tickgate
