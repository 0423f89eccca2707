// Nasdaq TotalView-ITCH 5.0 message layouts (Nasdaq, "Nasdaq TotalView-ITCH
// 5.0" specification, the revision that adds the 'O' Direct Listing with
// Capital Raise message; section 1.x, "Message Formats"): the fixed size of
// every type and the offsets tickgate reads, as views over one message.
// Big-endian, memcpy loads only. A view is valid once the message's length
// is at least size_of(type) (moldudp64::walk checks that); nothing here
// allocates or throws.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "tickgate/endian.hpp"

namespace tickgate::itch50 {

// Every message starts with these (offsets 0, 1, 3, 5).
inline constexpr std::size_t kTypeOffset = 0;
inline constexpr std::size_t kLocateOffset = 1;
inline constexpr std::size_t kTrackingOffset = 3;
inline constexpr std::size_t kTimestampOffset = 5;  // u48, ns since midnight (venue time)
inline constexpr std::size_t kCommonSize = 11;
inline constexpr std::size_t kSymbolSize = 8;
inline constexpr std::int8_t kPriceExponent = -4;  // Price(4): 4 implied decimals

// The message types of ITCH 5.0 and their sizes (bytes, type byte included).
struct TypeSize {
    char type;
    std::uint8_t size;
};
inline constexpr std::array<TypeSize, 23> kMessageSizes = {{
    {'S', 12},  // System Event
    {'R', 39},  // Stock Directory
    {'H', 25},  // Stock Trading Action
    {'Y', 20},  // Reg SHO Short Sale Price Test Restricted Indicator
    {'L', 26},  // Market Participant Position
    {'V', 35},  // MWCB Decline Level
    {'W', 12},  // MWCB Status
    {'K', 28},  // IPO Quoting Period Update
    {'J', 35},  // LULD Auction Collar
    {'h', 21},  // Operational Halt
    {'A', 36},  // Add Order, no MPID attribution
    {'F', 40},  // Add Order with MPID attribution
    {'E', 31},  // Order Executed
    {'C', 36},  // Order Executed With Price
    {'X', 23},  // Order Cancel
    {'D', 19},  // Order Delete
    {'U', 35},  // Order Replace
    {'P', 44},  // Trade (non-cross)
    {'Q', 40},  // Cross Trade
    {'B', 19},  // Broken Trade
    {'I', 50},  // Net Order Imbalance Indicator (NOII)
    {'N', 20},  // Retail Price Improvement Indicator (RPII)
    {'O', 48},  // Direct Listing with Capital Raise Price Discovery
}};

namespace detail {
[[nodiscard]] consteval std::array<std::uint8_t, 256> make_size_table() {
    std::array<std::uint8_t, 256> t{};
    for (const TypeSize& ts : kMessageSizes) t[static_cast<unsigned char>(ts.type)] = ts.size;
    return t;
}
inline constexpr std::array<std::uint8_t, 256> kSizeByType = make_size_table();
}  // namespace detail

// The size of ITCH 5.0 message `type`; 0 for a type ITCH 5.0 does not define.
[[nodiscard]] constexpr std::size_t size_of(std::uint8_t type) noexcept { return detail::kSizeByType[type]; }
[[nodiscard]] constexpr bool is_known(std::uint8_t type) noexcept { return size_of(type) != 0; }
// The smallest length moldudp64::walk accepts for `type`: its size, or 1
// (the type byte) for an unknown type, which is skipped by its length.
[[nodiscard]] constexpr std::size_t min_length(std::uint8_t type) noexcept {
    const std::size_t s = size_of(type);
    return s != 0 ? s : 1;
}

// A u48 big-endian timestamp at `p`.
[[nodiscard]] inline std::int64_t load_timestamp(const std::byte* p) noexcept {
    return static_cast<std::int64_t>((std::uint64_t{load_be<std::uint16_t>(p)} << 32) | load_be<std::uint32_t>(p + 2));
}

// The fields common to every message. `m` holds at least kCommonSize bytes
// for a known type (every known size is larger).
class MessageView {
public:
    explicit MessageView(std::span<const std::byte> m) noexcept : m_(m.data()) {}
    [[nodiscard]] char type() const noexcept { return static_cast<char>(m_[kTypeOffset]); }
    [[nodiscard]] std::uint16_t stock_locate() const noexcept { return load_be<std::uint16_t>(m_ + kLocateOffset); }
    [[nodiscard]] std::uint16_t tracking_number() const noexcept { return load_be<std::uint16_t>(m_ + kTrackingOffset); }
    [[nodiscard]] std::int64_t timestamp_ns() const noexcept { return load_timestamp(m_ + kTimestampOffset); }

protected:
    [[nodiscard]] std::uint8_t u8(std::size_t o) const noexcept { return static_cast<std::uint8_t>(m_[o]); }
    [[nodiscard]] std::uint32_t u32(std::size_t o) const noexcept { return load_be<std::uint32_t>(m_ + o); }
    [[nodiscard]] std::uint64_t u64(std::size_t o) const noexcept { return load_be<std::uint64_t>(m_ + o); }
    [[nodiscard]] std::string_view alpha(std::size_t o, std::size_t n) const noexcept {
        return {reinterpret_cast<const char*>(m_ + o), n};
    }
    const std::byte* m_;
};

// 'S': event code O, S, Q, M, E, C.
struct SystemEventView : MessageView {
    using MessageView::MessageView;
    [[nodiscard]] char event_code() const noexcept { return static_cast<char>(u8(11)); }
};
// 'R': the locate's symbol (8 bytes, space padded).
struct StockDirectoryView : MessageView {
    using MessageView::MessageView;
    [[nodiscard]] std::string_view stock() const noexcept { return alpha(11, kSymbolSize); }
};
// 'H': trading state H (halted), P (paused), Q (quotation only), T (trading).
struct TradingActionView : MessageView {
    using MessageView::MessageView;
    [[nodiscard]] std::string_view stock() const noexcept { return alpha(11, kSymbolSize); }
    [[nodiscard]] char trading_state() const noexcept { return static_cast<char>(u8(19)); }
};
// 'A' and 'F' (F appends a 4-byte attribution at 36, not read).
struct AddOrderView : MessageView {
    using MessageView::MessageView;
    [[nodiscard]] std::uint64_t order_ref() const noexcept { return u64(11); }
    [[nodiscard]] char side() const noexcept { return static_cast<char>(u8(19)); }  // 'B' or 'S'
    [[nodiscard]] std::uint32_t shares() const noexcept { return u32(20); }
    [[nodiscard]] std::string_view stock() const noexcept { return alpha(24, kSymbolSize); }
    [[nodiscard]] std::uint32_t price() const noexcept { return u32(32); }  // 4 implied decimals
};
// 'E' and 'C' (C appends printable at 31 and the execution price at 32: no book change).
struct ExecutedView : MessageView {
    using MessageView::MessageView;
    [[nodiscard]] std::uint64_t order_ref() const noexcept { return u64(11); }
    [[nodiscard]] std::uint32_t executed_shares() const noexcept { return u32(19); }
    [[nodiscard]] std::uint64_t match_number() const noexcept { return u64(23); }
};
struct ExecutedWithPriceView : ExecutedView {
    using ExecutedView::ExecutedView;
    [[nodiscard]] char printable() const noexcept { return static_cast<char>(u8(31)); }
    [[nodiscard]] std::uint32_t execution_price() const noexcept { return u32(32); }
};
// 'X'
struct CancelView : MessageView {
    using MessageView::MessageView;
    [[nodiscard]] std::uint64_t order_ref() const noexcept { return u64(11); }
    [[nodiscard]] std::uint32_t cancelled_shares() const noexcept { return u32(19); }
};
// 'D'
struct DeleteView : MessageView {
    using MessageView::MessageView;
    [[nodiscard]] std::uint64_t order_ref() const noexcept { return u64(11); }
};
// 'U'
struct ReplaceView : MessageView {
    using MessageView::MessageView;
    [[nodiscard]] std::uint64_t original_order_ref() const noexcept { return u64(11); }
    [[nodiscard]] std::uint64_t new_order_ref() const noexcept { return u64(19); }
    [[nodiscard]] std::uint32_t shares() const noexcept { return u32(27); }
    [[nodiscard]] std::uint32_t price() const noexcept { return u32(31); }
};

}  // namespace tickgate::itch50
