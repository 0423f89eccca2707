// Member definitions of BasicSequencer<Rules, Book> (sequencer.hpp). Included
// only where a protocol's sequencer is instantiated (feed/<protocol>/instantiate.cpp).
#pragma once

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "tickgate/feed/sequencer.hpp"

namespace tickgate {

namespace detail {
inline constexpr std::uint32_t kNoRecoveryBlock = std::numeric_limits<std::uint32_t>::max();
}  // namespace detail

template <SequencingRules Rules, SequencedBook Book>
BasicSequencer<Rules, Book>::BasicSequencer(InstrumentTable& instruments, Book& book, const Capacity& capacity)
    : capacity_(capacity),
      instruments_(instruments),
      states_(&instruments.state(0)),
      book_(book),
      recovery_(std::size_t{capacity.recovery_instruments} * capacity.recovery_depth),
      blocks_(capacity.recovery_instruments),
      venue_(instruments, capacity) {
    if (capacity.max_instruments == 0 || capacity.book_depth == 0)
        throw std::invalid_argument("capacity: max_instruments and book_depth must be > 0");
    if (instruments.max_instruments() != capacity.max_instruments)
        throw std::invalid_argument("sequencer: the instrument table is not sized for capacity.max_instruments");
    free_blocks_.reserve(capacity.recovery_instruments);
    for (std::uint32_t b = capacity.recovery_instruments; b-- > 0;) free_blocks_.push_back(b);
}

template <SequencingRules Rules, SequencedBook Book>
Update BasicSequencer<Rules, Book>::apply_other(const Event& ev) noexcept {
    if (pending_.active) {
        // Cannot happen with a decoder feeding whole packets; never leave a
        // snapshot half-open.
        (void)finish_snapshot();
    }
    switch (ev.kind) {
        case EventKind::kSessionChange: return on_session_change(ev);
        case EventKind::kSnapshotBegin: return on_snapshot_begin(ev);  // also skips the levels of an out-of-range id
        default: break;
    }
    if constexpr (requires { Rules::on_channel_event(*this, ev); })
        if (Rules::is_channel_event(ev.kind)) return Rules::on_channel_event(*this, ev);
    if (ev.instrument_id >= capacity_.max_instruments) [[unlikely]] {
        ++counters_.out_of_range;
        return {ev.instrument_id, Verdict::kOutOfRange, false, false, 0};
    }
    if (ev.kind == EventKind::kDataLost) {
        // From the transport, not the wire: the instrument's data was lost
        // whichever channel the dropped packet named, and it binds nothing.
        InstrumentState& st = state(ev.instrument_id);
        instruments_.mark_seen(ev.instrument_id);
        st.suspect = true;
        return {ev.instrument_id, Verdict::kDataLost, false, true, 0};
    }
    if (!Rules::kDefinitionsBindInstrument && ev.kind == EventKind::kDefinition)
        return on_definition(state(ev.instrument_id), ev);  // creates no instrument
    InstrumentState* const touched = touch(ev);
    if (!touched) [[unlikely]] return {ev.instrument_id, Verdict::kForeignChannel, false, state(ev.instrument_id).suspect, 0};
    InstrumentState& st = *touched;
    if (Rules::is_hot(ev.kind)) return Rules::on_hot(*this, st, ev);  // during a snapshot's levels (finished above)
    switch (ev.kind) {
        case EventKind::kQuote: return on_quote(st, ev);
        case EventKind::kDelta: return on_delta(st, ev);
        case EventKind::kHeartbeat: return on_heartbeat(st, ev);
        case EventKind::kDefinition: return on_definition(st, ev);
        default: return {ev.instrument_id, Verdict::kOutOfRange, false, false, 0};  // unreachable
    }
}

template <SequencingRules Rules, SequencedBook Book>
InstrumentState* BasicSequencer<Rules, Book>::bind(InstrumentState& st, const Event& ev) noexcept {
    instruments_.mark_seen(ev.instrument_id);
    if (st.bound && bind_instruments_) {  // another channel's: a stray or forged message must not move it
        ++st.counters.foreign_channel;
        return nullptr;
    }
    st.bound = true;  // the first channel to carry it in the session owns it
    st.channel_id = ev.channel_id;
    st.clock_offset_ns = instruments_.clock_offset(ev.channel_id);
    return &st;
}

template <SequencingRules Rules, SequencedBook Book>
void BasicSequencer<Rules, Book>::recover_on_quote(InstrumentState& st) noexcept {
    // A full quote is the current price whatever was lost.
    st.suspect = false;
    ++st.counters.recovered;
    release_block(st);
}

template <SequencingRules Rules, SequencedBook Book>
void BasicSequencer<Rules, Book>::buffer_event(InstrumentState& st, const Event& ev) noexcept {
    if (st.recovery_block == detail::kNoRecoveryBlock) {
        if (free_blocks_.empty()) {
            ++st.counters.unbuffered_deltas;  // replay will see the hole
            return;
        }
        st.recovery_block = free_blocks_.back();
        free_blocks_.pop_back();
        blocks_[st.recovery_block] = {};
    }
    RecoveryBlock& b = blocks_[st.recovery_block];
    const std::uint32_t depth = capacity_.recovery_depth;
    if (depth == 0) {
        ++st.counters.unbuffered_deltas;
        return;
    }
    Event* ring = recovery_.data() + std::size_t{st.recovery_block} * depth;
    // head < depth and count <= depth: a wrap is one subtraction, not a
    // division per buffered event (a suspect instrument buffers every one).
    std::uint32_t pos;
    if (b.count < depth) {
        pos = b.head + b.count;
        if (pos >= depth) pos -= depth;
        ++b.count;
    } else {
        // Full: keep the newest; a lagging snapshot is likelier to cover the oldest.
        pos = b.head;
        b.head = b.head + 1 == depth ? 0 : b.head + 1;
        ++st.counters.unbuffered_deltas;
    }
    ring[pos] = ev;
}

template <SequencingRules Rules, SequencedBook Book>
void BasicSequencer<Rules, Book>::release_block(InstrumentState& st) noexcept {
    if (st.recovery_block == detail::kNoRecoveryBlock) return;
    free_blocks_.push_back(st.recovery_block);
    st.recovery_block = detail::kNoRecoveryBlock;
}

template <SequencingRules Rules, SequencedBook Book>
Update BasicSequencer<Rules, Book>::on_heartbeat(InstrumentState& st, const Event& ev) noexcept {
    const std::uint32_t id = ev.instrument_id;
    const std::uint64_t next = ev.u.heartbeat.next_seq;
    if (st.known && next > 0 && next - 1 > st.last_seq && next - 1 - st.last_seq > kImplausibleSeqJump) [[unlikely]] {
        ++st.counters.implausible_seq;  // rule 6: no gap, no liveness, nothing changes
        return {id, Verdict::kImplausible, false, st.suspect, 0};
    }
    ++st.counters.heartbeats;
    if (!st.known) {
        st.known = true;
        st.last_seq = next ? next - 1 : 0;
        st.last_alive_ns = ev.recv_ns;
        st.alive = true;
        return {id, Verdict::kHeartbeat, false, st.suspect, 0};
    }
    if (next > 0 && next - 1 > st.last_seq) {  // not `next > last_seq + 1`: last_seq may be 2^64-1
        const std::uint64_t lost = next - st.last_seq - 1;
        st.counters.lost += lost;
        ++st.counters.gap_events;
        st.last_seq = next - 1;
        st.suspect = true;  // and no liveness: a price missing ticks must not look fresh
        return {id, Verdict::kHeartbeatGap, false, true, lost};
    }
    st.last_alive_ns = ev.recv_ns;
    st.alive = true;
    return {id, Verdict::kHeartbeat, false, st.suspect, 0};
}

template <SequencingRules Rules, SequencedBook Book>
Update BasicSequencer<Rules, Book>::on_snapshot_begin(const Event& ev) noexcept {
    const std::uint32_t id = ev.instrument_id;
    pending_ = {};
    pending_.active = true;
    pending_.id = id;
    pending_.bids_left = ev.u.snapshot.n_bids;
    pending_.asks_left = ev.u.snapshot.n_asks;
    pending_.seq = ev.u.snapshot.seq;
    if (id >= capacity_.max_instruments) [[unlikely]] {
        ++counters_.out_of_range;
        pending_.apply = false;
        if (pending_.bids_left + pending_.asks_left == 0) pending_.active = false;
        return {id, Verdict::kOutOfRange, false, false, 0};
    }
    InstrumentState& st = state(id);
    const std::uint64_t seq = ev.u.snapshot.seq;
    if (foreign_snapshot_moves(st, ev)) [[unlikely]] {  // rule 7: counted, levels skipped
        (void)bind(st, ev);
        pending_.apply = false;
        if (pending_.bids_left + pending_.asks_left == 0) pending_.active = false;
        return {id, Verdict::kForeignChannel, false, st.suspect, 0};
    }
    if (!st.bound) [[unlikely]] (void)bind(st, ev);
    if (st.known && seq > st.last_seq && seq - st.last_seq > kImplausibleSeqJump) [[unlikely]] {
        ++st.counters.implausible_seq;  // rule 6: only a session change moves an instrument that far
        pending_.apply = false;
        if (pending_.bids_left + pending_.asks_left == 0) pending_.active = false;
        return {id, Verdict::kImplausible, false, st.suspect, 0};
    }
    if constexpr (requires { Rules::on_snapshot_begin(st, ev); }) Rules::on_snapshot_begin(st, ev);
    // Stale: older than last_seq on a clean or unconfirmed (and clean before) instrument.
    if (st.known && (!st.suspect || (st.unconfirmed && st.unconfirmed_clean)) && seq < st.last_seq) {
        ++st.counters.stale_snapshots;
        pending_.apply = false;
        if (pending_.bids_left + pending_.asks_left == 0) pending_.active = false;
        return {id, Verdict::kSnapshotStale, false, false, 0};
    }
    pending_.apply = true;
    st.unconfirmed = false;
    pending_.saved_last_seq = st.last_seq;
    pending_.saved_known = st.known;
    ++st.counters.snapshots_applied;
    st.last_alive_ns = ev.recv_ns;
    st.alive = true;
    st.last_source_ns = ev.u.snapshot.source_ns;  // rule 4: an applied S sets it; replayed deltas then do
    st.has_source = true;
    if (st.booked) book_.clear(id);
    if (pending_.bids_left + pending_.asks_left == 0) return finish_snapshot();
    return {id, Verdict::kSnapshotLevels, false, st.suspect, 0};
}

// Rule 7 for a snapshot carried by a channel other than its instrument's:
// it must not move the instrument. One that lags the instrument's own
// stream (seq <= last_seq) moves nothing: on a clean instrument it is stale,
// on a suspect one it is the repair rule 3 describes, valid only if the
// instrument's own buffered deltas continue it. shared/cert/cert_two_channels
// publishes channel 8's lagging snapshots on channel 7's lines, and the
// reference applies them. Any other (ahead, or at last_seq on a clean book)
// would replace the book with another channel's word: dropped.
template <SequencingRules Rules, SequencedBook Book>
bool BasicSequencer<Rules, Book>::foreign_snapshot_moves(const InstrumentState& st, const Event& ev) const noexcept {
    if (Rules::kBinding == ChannelBinding::kFirstCarrier || !bind_instruments_ || !st.bound ||
        st.channel_id == ev.channel_id)
        return false;
    const std::uint64_t seq = ev.u.snapshot.seq;
    if (!st.known) return true;
    return st.suspect ? seq > st.last_seq : seq >= st.last_seq;
}

template <SequencingRules Rules, SequencedBook Book>
Update BasicSequencer<Rules, Book>::on_snapshot_levels(const Event& ev) noexcept {
    if (!pending_.active) return {ev.instrument_id, Verdict::kSnapshotLevels, false, false, 0};
    const std::uint32_t id = pending_.id;
    // The event's levels continue the bids, then the asks (spec order).
    const std::uint32_t count = std::min<std::uint32_t>(ev.u.levels.count, kLevelsPerEvent);
    const std::uint32_t bids = std::min(count, pending_.bids_left);
    const std::uint32_t asks = std::min(count - bids, pending_.asks_left);
    pending_.bids_left -= bids;
    pending_.asks_left -= asks;
    if (pending_.apply && state(id).booked) {
        // Levels come bids first, kLevelsPerEvent to an event, so most events
        // hold one side: a side with none is not set up at all.
        std::uint32_t dropped = 0;
        if (bids != 0) dropped += book_.append_levels(id, Side::kBid, ev.u.levels.price, ev.u.levels.qty, bids);
        if (asks != 0)
            dropped += book_.append_levels(id, Side::kAsk, ev.u.levels.price + bids, ev.u.levels.qty + bids, asks);
        if (dropped != 0) [[unlikely]] state(id).counters.book_overflows += dropped;
    }
    if (pending_.bids_left + pending_.asks_left == 0) {
        if (pending_.apply) return finish_snapshot();
        pending_.active = false;
    }
    return {id, Verdict::kSnapshotLevels, false, id < capacity_.max_instruments && state(id).suspect, 0};
}

template <SequencingRules Rules, SequencedBook Book>
Update BasicSequencer<Rules, Book>::finish_snapshot() noexcept {
    const PendingSnapshot p = pending_;
    pending_.active = false;
    if (!p.apply) return {p.id, Verdict::kSnapshotLevels, false, false, 0};
    InstrumentState& st = state(p.id);
    // Replay events kept while suspect that continue the snapshot.
    std::uint64_t reached = p.seq;
    bool hole = false;
    if (st.recovery_block != detail::kNoRecoveryBlock) {
        const RecoveryBlock& b = blocks_[st.recovery_block];
        const std::uint32_t depth = capacity_.recovery_depth;
        const Event* ring = recovery_.data() + std::size_t{st.recovery_block} * depth;
        for (std::uint32_t i = 0; i < b.count; ++i) {
            const Event& d = ring[(b.head + i) % depth];
            const std::uint64_t seq = sequenced_seq(d);
            if (seq <= reached) continue;
            if (seq != reached + 1) {
                hole = true;
                break;
            }
            apply_to_book(p.id, d);
            st.last_source_ns = sequenced_source_ns(d);
            reached = seq;
        }
    }
    if (!hole && p.saved_known && reached < p.saved_last_seq) hole = true;  // ticks neither kept nor in the snapshot
    st.known = true;
    if (hole) {
        st.last_seq = p.saved_last_seq;
        st.suspect = true;
        if (Rules::kSnapshotHoleEmptiesBuffer) release_block(st);
    } else {
        st.last_seq = reached;
        if (st.suspect) ++st.counters.recovered;
        st.suspect = false;
        st.lost_suspect = false;
        release_block(st);
    }
    return {p.id, Verdict::kSnapshotApplied, st.booked, st.suspect, 0};
}

template <SequencingRules Rules, SequencedBook Book>
Update BasicSequencer<Rules, Book>::on_definition(InstrumentState& st, const Event& ev) noexcept {
    const std::uint32_t id = ev.instrument_id;
    st.deleted = ev.u.definition.removed;  // configured symbols or not: the venue no longer lists it
    if (learn_definitions_) {
        // A deleted instrument loses its symbol: find() no longer answers
        // it and handles taken before read `unknown` (its generation moves).
        const char* sym = ev.u.definition.symbol;
        const std::string_view symbol =
            ev.u.definition.removed ? std::string_view{} : std::string_view{sym, strnlen(sym, sizeof ev.u.definition.symbol)};
        if (instruments_.set_symbol(id, symbol)) on_booking_changed(st, id);
        st.price_exponent = ev.u.definition.price_exponent;
        if constexpr (requires { Rules::on_definition(book_, id, ev); }) Rules::on_definition(book_, id, ev);
    }
    return {id, Verdict::kDefinition, false, st.suspect, 0};
}

template <SequencingRules Rules, SequencedBook Book>
void BasicSequencer<Rules, Book>::on_booking_changed(InstrumentState& st, std::uint32_t id) noexcept {
    if constexpr (requires { Rules::on_booking_changed(*this, st, id); }) {
        Rules::on_booking_changed(*this, st, id);
        return;
    }
    // Either way the book starts empty: unbooked it is not kept; booked again
    // it missed what came while unbooked, so it is suspect until rebuilt.
    book_.clear(id);
    release_block(st);
    if (st.booked) st.suspect = true;
}

template <SequencingRules Rules, SequencedBook Book>
void BasicSequencer<Rules, Book>::apply_subscriptions() noexcept {
    for (std::uint32_t id = 0; id < capacity_.max_instruments; ++id) {
        InstrumentState& st = state(id);
        const bool booked = instruments_.wanted(st.symbol);
        if (booked == st.booked) continue;
        st.booked = booked;
        on_booking_changed(st, id);
    }
}

template <SequencingRules Rules, SequencedBook Book>
void BasicSequencer<Rules, Book>::reset(InstrumentState& st, std::uint32_t id) noexcept {
    st.bound = false;  // rule 7: "first carried it in the session" starts again
    st.known = false;
    st.last_seq = 0;
    st.suspect = true;
    st.unconfirmed = false;
    st.lost_suspect = false;
    st.has_source = false;
    release_block(st);
    book_.clear(id);
}

template <SequencingRules Rules, SequencedBook Book>
Update BasicSequencer<Rules, Book>::on_session_change(const Event& ev) noexcept {
    ++counters_.session_resets;
    for (const std::uint32_t id : instruments_.seen_ids()) {
        InstrumentState& st = state(id);
        if (st.channel_id == ev.channel_id) reset(st, id);
    }
    return {0, Verdict::kSessionReset, true, true, 0};
}

}  // namespace tickgate
