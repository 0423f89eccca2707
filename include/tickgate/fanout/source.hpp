// The engine thread's side of the fan-out (issue 27): turns the handler's
// updates and gate-state changes into Records offered to the
// ConflatingRing, for any handler type that offers instruments(), book()
// and gate() (BasicFeedHandler, BasicInlineFeedHandler, whatever the protocol).
//
// Threading: engine thread only (it reads the books). No allocation, lock,
// syscall or virtual call after construction: a few loads, the levels up to
// `depth` copied, one cell written.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "tickgate/book/book.hpp"
#include "tickgate/book/gate.hpp"
#include "tickgate/fanout/conflating_ring.hpp"
#include "tickgate/fanout/record.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/sequencer.hpp"

namespace tickgate::fanout {

namespace detail {
// What a Source last offered for one instrument.
struct SourceState {
    std::int64_t recv_ns = 0;  // of the last update applied
    GateReason verdict = GateReason::kUnknown;
    SuspectReason why = SuspectReason::kNone;
    bool offered = false;
};
}  // namespace detail

// What a Source allocates for `max_instruments` (estimate_memory).
[[nodiscard]] constexpr std::size_t source_bytes_for(std::uint32_t max_instruments) noexcept {
    return std::size_t{max_instruments} * sizeof(detail::SourceState);
}

template <class Handler>
class Source {
public:
    // `handler` and `ring` outlive this; the ring's capacity covers the handler's instruments.
    Source(const Handler& handler, ConflatingRing& ring)
        : h_(handler),
          ring_(ring),
          max_(std::min(ring.max_instruments(), handler.instruments().max_instruments())),
          last_(std::make_unique<State[]>(max_)) {}

    // An update the handler delivered (poll's on_update): offered when it
    // changed the book, or the gate's answer for the instrument changed, or
    // it is the instrument's first. `now_ns`: the engine's clock reading.
    void on_update(const Update& u, const Event& ev, std::int64_t now_ns) noexcept {
        // A channel-wide event names no instrument of its own (ITCH: the
        // channel's locate 0); the gate changes it causes reach sweep().
        if (u.instrument_id >= max_ || u.verdict == Verdict::kChannelEvent) [[unlikely]] return;
        const GateDecision d = h_.gate().check(u.instrument_id, now_ns);
        const SuspectReason why = suspect_reason(h_.instruments().state(u.instrument_id));
        State& s = last_[u.instrument_id];
        if (!u.book_changed && s.offered && s.verdict == d.reason && s.why == why) return;
        s.recv_ns = ev.recv_ns;
        offer(u.instrument_id, d.reason, why, u.book_changed ? kFlagBookChanged : 0);
    }

    // Gate-state changes without an update (silence makes a price stale,
    // a source clock drifts): asks the gate about every instrument seen and
    // offers those whose answer changed. Call every few milliseconds; cost
    // O(instruments seen).
    void sweep(std::int64_t now_ns) noexcept {
        for (const std::uint32_t id : h_.instruments().seen_ids()) {
            if (id >= max_) continue;
            State& s = last_[id];
            const GateDecision d = h_.gate().check(id, now_ns);
            const SuspectReason why = suspect_reason(h_.instruments().state(id));
            if (s.offered && s.verdict == d.reason && s.why == why) continue;
            offer(id, d.reason, why, 0);
        }
    }

private:
    using State = detail::SourceState;

    void offer(std::uint32_t id, GateReason verdict, SuspectReason why, std::uint8_t flags) noexcept {
        State& s = last_[id];
        s.verdict = verdict;
        s.why = why;
        s.offered = true;
        const InstrumentState& st = h_.instruments().state(id);
        rec_.flags = flags;
        rec_.verdict = verdict;
        rec_.suspect_why = why;
        rec_.instrument = id;
        rec_.channel = st.channel_id;
        rec_.exponent = st.price_exponent;
        rec_.source_ns = st.has_source ? st.last_source_ns : 0;
        rec_.recv_ns = s.recv_ns;
        std::memcpy(rec_.symbol, st.symbol, sizeof rec_.symbol);
        rec_.n_bids = copy_side(id, Side::kBid, rec_.bids);
        rec_.n_asks = copy_side(id, Side::kAsk, rec_.asks);
        ring_.offer(rec_);
    }

    std::uint8_t copy_side(std::uint32_t id, Side side, Level* out) const noexcept {
        std::uint8_t n = 0;
        for (const Level l : h_.book().side(id, side)) {
            if (n == ring_.depth()) break;
            out[n++] = l;
        }
        return n;
    }

    const Handler& h_;
    ConflatingRing& ring_;
    std::uint32_t max_;
    std::unique_ptr<State[]> last_;  // what was last offered, per instrument
    Record rec_;                     // scratch (1.1 KB: not on the stack per update)
};

}  // namespace tickgate::fanout
