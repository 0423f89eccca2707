// The engine's calls on a handler, the same for every protocol and handler
// type (BasicFeedHandler, BasicInlineFeedHandler, the offline BasicHandler,
// and a protocol's own offline replay): instruments by symbol, the one safe-price read,
// subscriptions. A CRTP base: the handler has members instruments_, gate_,
// book_, sequencer_ (with apply_subscriptions()) and befriends it.
// Engine thread only, like everything that reads the books.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "tickgate/book/safe_quote.hpp"
#include "tickgate/feed/instruments.hpp"

namespace tickgate {

template <class Handler>
class EngineApi {
public:
    // The instrument currently defined as `symbol`, or nothing yet (resolve
    // again after a Verdict::kDefinition update). O(1), no allocation.
    [[nodiscard]] std::optional<InstrumentHandle> find(std::string_view symbol) const noexcept {
        return self().instruments_.find(symbol);
    }
    // Best bid and ask (and, into `bids` / `asks`, up to their size in levels)
    // with the gate's verdict at `now_ns`; trade only if the result is ok().
    [[nodiscard]] SafeQuote safe_quote(InstrumentHandle h, std::int64_t now_ns, std::span<Level> bids = {},
                                       std::span<Level> asks = {}) const noexcept {
        return read_safe_quote(self().instruments_, self().gate_, self().book_, h, now_ns, bids, asks);
    }
    // Book only the subscribed symbols (all are booked until the first
    // subscribe). False when the symbol is not 1..16 bytes or max_instruments
    // symbols are subscribed. A newly booked instrument is suspect until its
    // book is rebuilt (snapshot, full quote). O(max_instruments).
    bool subscribe(std::string_view symbol) noexcept {
        if (!self().instruments_.subscribe(symbol)) return false;
        self().sequencer_.apply_subscriptions();
        return true;
    }
    // Stops booking `symbol` (its book is dropped; it is still sequenced).
    // Filtering stays on: with every symbol unsubscribed nothing is booked.
    void unsubscribe(std::string_view symbol) noexcept {
        self().instruments_.unsubscribe(symbol);
        self().sequencer_.apply_subscriptions();
    }

private:
    const Handler& self() const noexcept { return static_cast<const Handler&>(*this); }
    Handler& self() noexcept { return static_cast<Handler&>(*this); }
};

}  // namespace tickgate
