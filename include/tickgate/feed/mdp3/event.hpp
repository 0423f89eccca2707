// MDP3's own event kinds and fields (event.hpp's u.venue): what its decoder
// emits beyond the shared kinds, for its rules (rules.hpp) and its book
// (indexed_book.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tickgate/event.hpp"

namespace tickgate::mdp3 {

inline constexpr EventKind kLevelEntry = venue_kind(0);        // book entry (MDPriceLevel): entry_fields()
inline constexpr EventKind kSequencedEntry = venue_kind(1);    // trade / statistics / volume / limits: sequenced only
inline constexpr EventKind kChannelReset = venue_kind(2);      // ChannelReset (4) on `channel`
inline constexpr EventKind kChannelHeartbeat = venue_kind(3);  // heartbeat (12) on `channel`
inline constexpr EventKind kChannelGap = venue_kind(4);        // MsgSeqNum gap on both lines of `channel`

// An entry's fields; u.venue.seq is its RptSeq, u.venue.source_ns its TransactTime.
struct EntryFields {
    std::int64_t price;          // wire mantissa
    std::int32_t qty;            // MDEntrySize (0 when null)
    std::int32_t orders;         // NumberOfOrders (0 when null)
    std::uint8_t level;          // MDPriceLevel, 1-based
    std::uint8_t action;         // MDUpdateAction 0..5
    char entry_type;             // MDEntryType: '0' bid, '1' offer, 'J' empty book, ...
    std::int8_t price_exponent;  // of the template's prices (v6 PRICE -7, v9 PRICE9 -9)
};

// Field by field (venue_field): as one 24-byte copy (venue_fields) the
// fields came in 16- and 8-byte loads, each spanning several of the
// decoder's narrower stores made just before, which the store buffer cannot
// forward: a stall on every entry the rules and the book read.
[[nodiscard]] inline EntryFields entry_fields(const Event& ev) noexcept {
    using E = EntryFields;
    return {.price = venue_field<decltype(E::price), offsetof(E, price)>(ev),
            .qty = venue_field<decltype(E::qty), offsetof(E, qty)>(ev),
            .orders = venue_field<decltype(E::orders), offsetof(E, orders)>(ev),
            .level = venue_field<decltype(E::level), offsetof(E, level)>(ev),
            .action = venue_field<decltype(E::action), offsetof(E, action)>(ev),
            .entry_type = venue_field<decltype(E::entry_type), offsetof(E, entry_type)>(ev),
            .price_exponent = venue_field<decltype(E::price_exponent), offsetof(E, price_exponent)>(ev)};
}
inline void set_entry_fields(Event& ev, const EntryFields& f) noexcept { set_venue_fields(ev, f); }

}  // namespace tickgate::mdp3
