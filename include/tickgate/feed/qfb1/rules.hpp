// QFB/1's sequencing rules (QFB1.md "What a conforming handler does"): the
// model the shared sequencer implements, so this policy only names its
// per-message kinds. Rule 7: an instrument belongs to the channel that
// first carries it; another channel's messages for it are dropped, counted.
#pragma once

#include "tickgate/book/l2_book.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/sequencer.hpp"

namespace tickgate::qfb1 {

struct Rules {
    using Book = L2Book;
    static constexpr ChannelBinding kBinding = ChannelBinding::kCarryingChannel;
    static constexpr bool kDefinitionsBindInstrument = true;   // an I message is the channel's word
    static constexpr bool kSnapshotHoleEmptiesBuffer = false;  // rule 3: the kept deltas may meet a later snapshot

    // Q and D: a full quote repairs, a delta after a gap makes suspect (rules 1-3).
    [[nodiscard]] static constexpr bool is_hot(EventKind k) noexcept { return k == EventKind::kDelta || k == EventKind::kQuote; }
    template <class Seq>
    [[gnu::always_inline]] static Update on_hot(Seq& seq, InstrumentState& st, const Event& ev) noexcept {
        return ev.kind == EventKind::kDelta ? seq.on_delta(st, ev) : seq.on_quote(st, ev);
    }

    // QFB/1 has no channel-wide message (sessions are its only channel state),
    // and an S or I carries nothing beyond the shared rules: no other hook.
    [[nodiscard]] static constexpr bool is_channel_event(EventKind) noexcept { return false; }
};

static_assert(SequencingRules<Rules>);

// The QFB/1 sequencer (the shared one with QFB/1's rules, over its L2 book).
using Sequencer = BasicSequencer<Rules>;

}  // namespace tickgate::qfb1
