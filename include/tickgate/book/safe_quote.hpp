// The engine's one safe-price read: the best bid and ask (and depth on
// request) together with the gate's verdict for them, taken in one call on
// the engine thread, so a price is never handed out without its verdict.
#pragma once

#include <cstdint>
#include <span>

#include "tickgate/book/book.hpp"
#include "tickgate/book/gate.hpp"
#include "tickgate/feed/instruments.hpp"

namespace tickgate {

struct SafeQuote {
    GateDecision verdict;         // trade on these prices only if verdict.ok()
    Level bid{0, 0};              // best bid; qty 0: no bid
    Level ask{0, 0};              // best ask; qty 0: no ask
    std::int8_t price_exponent = 0;  // price = wire integer × 10^price_exponent
    std::uint32_t bid_levels = 0;    // levels copied into the caller's depth spans
    std::uint32_t ask_levels = 0;
    [[nodiscard]] bool ok() const noexcept { return verdict.ok(); }
};

// Reads `h`'s book and asks the gate at `now_ns` (our clock). A handle that
// no longer names its instrument (redefined since find) or an instrument not
// booked gets its verdict and no prices. Up to bids.size() / asks.size()
// levels are copied, best first. Engine thread; no allocation.
template <ReadableBook Book>
[[nodiscard]] SafeQuote read_safe_quote(const InstrumentTable& instruments, const Gate& gate, const Book& book,
                                        InstrumentHandle h, std::int64_t now_ns, std::span<Level> bids = {},
                                        std::span<Level> asks = {}) noexcept {
    SafeQuote q;
    if (!instruments.current(h)) {
        q.verdict = {GateReason::kUnknown, 0};
        return q;
    }
    q.verdict = gate.check(h.id, now_ns);
    q.price_exponent = instruments.state(h.id).price_exponent;
    if (q.verdict.reason == GateReason::kUnknown || q.verdict.reason == GateReason::kNotSubscribed) return q;
    const auto copy = [&](Side side, Level& best, std::span<Level> out, std::uint32_t& copied) {
        const auto levels = book.side(h.id, side);
        auto it = levels.begin();
        if (it == levels.end()) return;
        best = *it;
        for (; it != levels.end() && copied < out.size(); ++it) out[copied++] = *it;
    };
    copy(Side::kBid, q.bid, bids, q.bid_levels);
    copy(Side::kAsk, q.ask, asks, q.ask_levels);
    return q;
}

}  // namespace tickgate
