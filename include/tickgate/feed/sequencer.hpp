// Per-instrument sequencing (QFB1.md "What a conforming handler does", the
// model every venue's rules follow): duplicates, gaps, suspect/repair,
// heartbeats, snapshots with replay of buffered events, session change.
// The rule engine only: it writes the instrument table (instruments.hpp),
// drives a book of any SequencedBook type (book/book.hpp) and owns the
// recovery pool. What differs between venues is the protocol's Rules
// policy (SequencingRules below; each protocol folder's rules.hpp), which
// the sequencer is instantiated with: no protocol is named here.
// Engine thread only; no allocation, locks or exceptions after construction.
// Member definitions: sequencer_impl.hpp, instantiated once per protocol
// in its folder (feed/<protocol>/instantiate.cpp).
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tickgate/book/book.hpp"
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
    kChannelEvent,      // a channel-wide event (the rules' is_channel_event) acted on the channel's instruments
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

// Which channel an instrument belongs to (QFB1.md rule 7 and its variants).
enum class ChannelBinding : std::uint8_t {
    // The first channel that carries it in the session owns it; another
    // channel's events for it are dropped and counted (kForeignChannel).
    kCarryingChannel,
    // A member of the first channel that carries it, sequenced whatever
    // channel carries it later (its own sequence number decides).
    kFirstCarrier,
};

namespace detail {
struct RecoveryBlock {
    std::uint32_t head = 0;   // index of the oldest event
    std::uint32_t count = 0;
};
}  // namespace detail

// The recovery pool: recovery_instruments blocks of recovery_depth events
// (what a sequencer allocates; estimate_memory in config.hpp).
[[nodiscard]] constexpr std::size_t recovery_pool_bytes(const Capacity& c) noexcept {
    return std::size_t{c.recovery_instruments} *
           (std::size_t{c.recovery_depth} * sizeof(Event) + sizeof(detail::RecoveryBlock) + sizeof(std::uint32_t));
}
// What of it is resident once constructed: the block bookkeeping (the
// events are zero pages, resident only in blocks that were used).
[[nodiscard]] constexpr std::size_t recovery_pool_resident_bytes(const Capacity& c) noexcept {
    return std::size_t{c.recovery_instruments} * (sizeof(detail::RecoveryBlock) + sizeof(std::uint32_t));
}

// A protocol's sequencing rules: what its venue page says where QFB/1's
// model leaves a choice. A stateless policy type (static members only); the
// sequencer befriends it, so its hooks use the sequencer's primitives
// (take_tick, on_quote, on_delta, buffer_event, release_block, book(), ...).
//   Book                       the book its events build
//   kBinding                   ChannelBinding of its instruments
//   kDefinitionsBindInstrument a definition binds (and so creates) the instrument
//   kSnapshotHoleEmptiesBuffer a snapshot that leaves a hole drops the events kept while suspect
//   is_hot(kind) / on_hot      the per-message kinds, applied on the inline fast path
//   is_channel_event(kind)     kinds acting on a whole channel's instruments (none: false)
//   optional: on_channel_event(seq, ev)        what those do
//   optional: on_snapshot_begin(st, ev), on_definition(book, id, ev)  what an applied snapshot / a learned definition adds
//   optional: State                            what the rules keep beyond InstrumentState (RulesState)
//   optional: on_booking_changed(seq, st, id)  subscriptions and renames, where the shared rule does not fit
template <class R>
concept SequencingRules = SequencedBook<typename R::Book> && requires(EventKind k) {
    { R::kBinding } -> std::convertible_to<ChannelBinding>;
    { R::kDefinitionsBindInstrument } -> std::convertible_to<bool>;
    { R::kSnapshotHoleEmptiesBuffer } -> std::convertible_to<bool>;
    { R::is_hot(k) } noexcept -> std::same_as<bool>;
    { R::is_channel_event(k) } noexcept -> std::same_as<bool>;
};

namespace detail {
// The state of rules that keep none of their own.
struct NoRulesState {
    NoRulesState(const InstrumentTable&, const Capacity&) noexcept {}
};
template <class R>
struct RulesStateOf {
    using type = NoRulesState;
};
template <class R>
    requires requires { typename R::State; }
struct RulesStateOf<R> {
    using type = typename R::State;
};
}  // namespace detail

// What a protocol's rules keep beyond InstrumentState (R::State, built from
// the instrument table and capacity at start-up), or nothing.
template <class R>
using RulesState = typename detail::RulesStateOf<R>::type;

template <SequencingRules Rules, SequencedBook Book = typename Rules::Book>
class BasicSequencer {
    friend Rules;

public:
    // Writes `instruments` and `book` (which outlive it); both sized for
    // capacity.max_instruments. Throws std::invalid_argument if they are not.
    BasicSequencer(InstrumentTable& instruments, Book& book, const Capacity& capacity);

    // Applies one event. Engine thread only; O(1) except snapshots (levels)
    // and session changes (instruments of the channel).
    Update apply(const Event& ev) noexcept;
    // The same, forced inline into the caller: for a decoder's sink, whose
    // per-type sites then know the event's kind (below; BasicHandler's).
    [[gnu::always_inline]] Update apply_inlined(const Event& ev) noexcept;

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
    // The rules' own state (RulesState): their figures, and their start-up settings. Engine thread.
    [[nodiscard]] const RulesState<Rules>& venue() const noexcept { return venue_; }
    [[nodiscard]] RulesState<Rules>& venue() noexcept { return venue_; }

private:
    using RecoveryBlock = detail::RecoveryBlock;
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

    // The rules' per-message kinds of a known-range instrument outside a snapshot: the common case.
    [[nodiscard]] bool is_hot_event(const Event& ev) const noexcept {
        return Rules::is_hot(ev.kind) && !pending_.active && ev.instrument_id < capacity_.max_instruments;
    }
    Update apply_hot(const Event& ev) noexcept;    // an is_hot_event
    [[gnu::noinline]] Update apply_hot_out_of_line(const Event& ev) noexcept;  // the same, for apply (below)
    Update apply_other(const Event& ev) noexcept;  // everything else but kSnapshotLevels
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
    [[no_unique_address]] RulesState<Rules> venue_;
    bool learn_definitions_ = true;
    bool bind_instruments_ = true;
};

// ---- hot path, inline so that decode -> sequence -> book compiles into one
// loop. The out-of-line members (sequencer_impl.hpp) are instantiated once
// per protocol in the library; these are instantiated where they are used,
// so that they inline into the decoder's loop (an `extern template` stops
// GCC from inlining them: measured, a call per message). always_inline: with
// the seam's extra layers GCC's size heuristics otherwise leave calls per
// message (measured: set_only_level, on_quote). apply_inlined, with the
// sinks that call it: inlined into each of a decoder's per-type sites, the
// kind is a constant there and the checks on it fold away (QFB/1 mix: 326 ->
// 297 instructions a message, bench/instructions.sh).

// apply and apply_inlined take the same steps. apply written as a call of
// apply_inlined (or made always_inline itself) lost GCC's shrink-wrapping of
// its out-of-line copy: every event, a heartbeat too, saved six registers
// (3.6 -> 5.5 ns a heartbeat in BM_SequencerVerdict_H). So apply only
// dispatches, by tail calls; its hot kinds' body (with the L2 book's set and
// delete forced inline) is a function of its own, whose prologue only they pay.
template <SequencingRules Rules, SequencedBook Book>
inline Update BasicSequencer<Rules, Book>::apply(const Event& ev) noexcept {
    if (is_hot_event(ev)) [[likely]] return apply_hot_out_of_line(ev);
    if (ev.kind == EventKind::kSnapshotLevels) return on_snapshot_levels(ev);  // a snapshot's body: nothing else applies
    return apply_other(ev);
}
template <SequencingRules Rules, SequencedBook Book>
[[gnu::noinline]] Update BasicSequencer<Rules, Book>::apply_hot_out_of_line(const Event& ev) noexcept {
    return apply_hot(ev);
}
template <SequencingRules Rules, SequencedBook Book>
[[gnu::always_inline]] inline Update BasicSequencer<Rules, Book>::apply_inlined(const Event& ev) noexcept {
    if (is_hot_event(ev)) [[likely]] return apply_hot(ev);
    if (ev.kind == EventKind::kSnapshotLevels) return on_snapshot_levels(ev);  // a snapshot's body: nothing else applies
    return apply_other(ev);
}
template <SequencingRules Rules, SequencedBook Book>
[[gnu::always_inline]] inline Update BasicSequencer<Rules, Book>::apply_hot(const Event& ev) noexcept {
    InstrumentState* st = touch(ev);
    if (!st) [[unlikely]] return {ev.instrument_id, Verdict::kForeignChannel, false, state(ev.instrument_id).suspect, 0};
    return Rules::on_hot(*this, *st, ev);
}

// Rule 7: the state of the event's instrument, or nullptr when the
// instrument belongs to another channel in this session (counted).
template <SequencingRules Rules, SequencedBook Book>
[[gnu::always_inline]] inline InstrumentState* BasicSequencer<Rules, Book>::touch(const Event& ev) noexcept {
    InstrumentState& st = state(ev.instrument_id);
    if constexpr (Rules::kBinding == ChannelBinding::kFirstCarrier) {
        if (!st.bound) [[unlikely]] return bind(st, ev);
        return &st;
    } else {
        if (!st.bound || st.channel_id != ev.channel_id) [[unlikely]] return bind(st, ev);
        return &st;
    }
}

// Rules 1 and 6, common to Q and D: kDuplicate or kImplausible for a tick
// that is dropped (counted, nothing else changes); otherwise the tick is
// taken (gap counted, last_seq, liveness, source time), `lost` holds the
// messages the gap says are missing and the result is kAccepted or kGap.
template <SequencingRules Rules, SequencedBook Book>
[[gnu::always_inline]] inline Verdict BasicSequencer<Rules, Book>::take_tick(InstrumentState& st, std::uint64_t seq,
                                                                            const Event& ev, std::int64_t source_ns,
                                                                            std::uint64_t& lost) noexcept {
    if (st.known && seq <= st.last_seq) {
        ++st.counters.duplicates;
        return Verdict::kDuplicate;
    }
    if (st.known && seq - st.last_seq > kImplausibleSeqJump) [[unlikely]] {  // every venue's sequence numbers
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

template <SequencingRules Rules, SequencedBook Book>
[[gnu::always_inline]] inline Update BasicSequencer<Rules, Book>::on_quote(InstrumentState& st, const Event& ev) noexcept {
    const std::uint32_t id = ev.instrument_id;
    std::uint64_t lost = 0;
    const Verdict v = take_tick(st, ev.u.quote.seq, ev, ev.u.quote.source_ns, lost);
    if (v == Verdict::kDuplicate || v == Verdict::kImplausible) return {id, v, false, st.suspect, 0};
    if (st.suspect) [[unlikely]] recover_on_quote(st);
    apply_to_book(id, ev);
    return {id, v, st.booked, false, lost};
}

template <SequencingRules Rules, SequencedBook Book>
[[gnu::always_inline]] inline void BasicSequencer<Rules, Book>::apply_to_book(std::uint32_t id, const Event& ev) noexcept {
    if (!state(id).booked) [[unlikely]] return;  // not subscribed: sequenced, not booked
    const BookEffect e = book_.apply(id, ev);
    if (e.dropped_levels != 0) [[unlikely]] state(id).counters.book_overflows += e.dropped_levels;
}

template <SequencingRules Rules, SequencedBook Book>
[[gnu::always_inline]] inline Update BasicSequencer<Rules, Book>::on_delta(InstrumentState& st, const Event& ev) noexcept {
    const std::uint32_t id = ev.instrument_id;
    std::uint64_t lost = 0;
    const Verdict v = take_tick(st, ev.u.delta.seq, ev, ev.u.delta.source_ns, lost);
    if (v == Verdict::kDuplicate || v == Verdict::kImplausible) return {id, v, false, st.suspect, 0};
    if (lost) st.suspect = true;  // a delta after a gap: the book is wrong until a snapshot
    if (st.suspect && st.booked) [[unlikely]] buffer_event(st, ev);
    apply_to_book(id, ev);
    return {id, v, st.booked, st.suspect, lost};
}

}  // namespace tickgate
