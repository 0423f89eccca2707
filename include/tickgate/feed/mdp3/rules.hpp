// MDP3's sequencing rules (MDP3.md "Per instrument" and "Per channel"),
// where CME's feed differs from QFB/1's model: an instrument is a member of
// the channel it is first seen on and sequenced by RptSeq whatever channel
// carries it; a MsgSeqNum gap on both lines makes the channel's instruments
// unconfirmed (the next RptSeq says whether they lost anything); channel
// heartbeats refresh liveness; a ChannelReset empties every book; every
// applied snapshot empties the recovery buffer.
#pragma once

#include <span>

#include "tickgate/event.hpp"
#include "tickgate/feed/mdp3/event.hpp"
#include "tickgate/feed/mdp3/indexed_book.hpp"
#include "tickgate/feed/sequencer.hpp"

namespace tickgate::mdp3 {

struct Rules {
    using Book = IndexedBook;
    static constexpr ChannelBinding kBinding = ChannelBinding::kFirstCarrier;
    static constexpr bool kDefinitionsBindInstrument = false;  // the definition feed carries every channel's
    static constexpr bool kSnapshotHoleEmptiesBuffer = true;

    // Book entries (MDPriceLevel) and sequenced-only entries (trades, statistics, ...).
    [[nodiscard]] static constexpr bool is_hot(EventKind k) noexcept {
        return k == kLevelEntry || k == kSequencedEntry;
    }
    // An entry with RptSeq: a QFB/1 delta's rules; on an unconfirmed
    // instrument the next RptSeq says whether it lost anything.
    template <class Seq>
    [[gnu::always_inline]] static Update on_hot(Seq& seq, InstrumentState& st, const Event& ev) noexcept {
        const std::uint32_t id = ev.instrument_id;
        std::uint64_t lost = 0;
        const Verdict v = seq.take_tick(st, ev.u.venue.seq, ev, ev.u.venue.source_ns, lost);
        if (v == Verdict::kDuplicate || v == Verdict::kImplausible) return {id, v, false, st.suspect, 0};
        // Without a definition the instrument's prices still read right (the
        // live view, the table): the template's exponent, not the default -8.
        st.price_exponent = entry_fields(ev).price_exponent;
        if (st.unconfirmed) [[unlikely]] {
            st.unconfirmed = false;
            if (!lost && st.unconfirmed_clean) st.suspect = false;  // nothing lost: clean again
        }
        if (lost) {
            st.suspect = true;
            st.lost_suspect = true;
        }
        if (st.suspect && st.booked) [[unlikely]] seq.buffer_event(st, ev);
        const bool changed = st.booked && seq.book_.apply(id, ev).changed;  // not subscribed: sequenced only
        return {id, v, changed, st.suspect, lost};
    }

    [[nodiscard]] static constexpr bool is_channel_event(EventKind k) noexcept {
        return k == kChannelGap || k == kChannelHeartbeat || k == kChannelReset;
    }
    // On the instruments of the event's channel (those first seen on it). O(instruments seen): these are rare.
    template <class Seq>
    static Update on_channel_event(Seq& seq, const Event& ev) noexcept {
        const std::span<const std::uint32_t> ids = seq.instruments_.seen_ids();
        const auto member = [&](const InstrumentState& st) { return st.bound && st.channel_id == ev.channel_id; };
        if (ev.kind == kChannelGap) {  // the known ones become unconfirmed
            for (const std::uint32_t id : ids) {
                InstrumentState& st = seq.state(id);
                if (!member(st) || !st.known || st.unconfirmed) continue;
                st.unconfirmed = true;
                st.unconfirmed_clean = !st.suspect;
                st.suspect = true;
            }
            return {0, Verdict::kChannelEvent, false, true, 0};
        }
        if (ev.kind == kChannelHeartbeat) {  // liveness, unless one is unconfirmed or lost RptSeq
            for (const std::uint32_t id : ids) {
                const InstrumentState& st = seq.state(id);
                if (member(st) && (st.unconfirmed || st.lost_suspect)) return {0, Verdict::kChannelEvent, false, true, 0};
            }
            for (const std::uint32_t id : ids) {
                InstrumentState& st = seq.state(id);
                if (!member(st)) continue;
                ++st.counters.heartbeats;
                st.last_alive_ns = ev.recv_ns;
                st.alive = true;
            }
            return {0, Verdict::kChannelEvent, false, false, 0};
        }
        // kChannelReset: every book empty, RptSeq restarts, nothing suspect
        for (const std::uint32_t id : ids) {
            InstrumentState& st = seq.state(id);
            if (!member(st)) continue;
            st.known = false;
            st.last_seq = 0;
            st.suspect = false;
            st.unconfirmed = false;
            st.lost_suspect = false;
            seq.release_block(st);
            seq.book_.clear(id);
        }
        return {0, Verdict::kChannelEvent, true, false, 0};
    }

    // The snapshot's template exponent (v6 -7, v9 -9); the definition's book depth (GBX MarketDepth).
    static void on_snapshot_begin(InstrumentState& st, const Event& ev) noexcept {
        st.price_exponent = ev.u.snapshot.price_exponent;
    }
    static void on_definition(Book& book, std::uint32_t id, const Event& ev) noexcept {
        book.set_depth(id, ev.u.definition.book_depth);
    }
};

static_assert(SequencingRules<Rules>);

}  // namespace tickgate::mdp3
