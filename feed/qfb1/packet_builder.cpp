#include "tickgate/feed/qfb1/packet_builder.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "tickgate/feed/qfb1/wire.hpp"

namespace tickgate {

using qfb1::store_le;

PacketBuilder::PacketBuilder(std::uint16_t channel, std::uint32_t session, std::uint64_t packet_seq,
                             std::int64_t send_ns)
    : buf_(qfb1::kPacketHeaderSize) {
    std::byte* h = buf_.data();
    store_le<std::uint16_t>(h + 0, qfb1::kMagic);
    store_le<std::uint8_t>(h + 2, qfb1::kVersion);
    store_le<std::uint8_t>(h + 3, 0);
    store_le<std::uint16_t>(h + 4, 0);
    store_le<std::uint16_t>(h + 6, channel);
    store_le<std::uint32_t>(h + 8, session);
    store_le<std::uint64_t>(h + 12, packet_seq);
    store_le<std::int64_t>(h + 20, send_ns);
}

std::byte* PacketBuilder::grow(std::size_t n, char type) {
    if (n < qfb1::kMessageHeaderSize || n > std::numeric_limits<std::uint16_t>::max())
        throw std::length_error("PacketBuilder: message length " + std::to_string(n) +
                                " does not fit the 16-bit length field");
    if (count_ == std::numeric_limits<std::uint16_t>::max())
        throw std::length_error("PacketBuilder: msg_count would overflow");
    const std::size_t off = buf_.size();
    buf_.resize(off + n);  // value-initialised: pads and reserved bytes are 0
    std::byte* m = buf_.data() + off;
    store_le<std::uint16_t>(m + 0, static_cast<std::uint16_t>(n));
    store_le<std::uint8_t>(m + 2, static_cast<std::uint8_t>(type));
    store_le<std::uint8_t>(m + 3, 0);
    ++count_;
    store_le<std::uint16_t>(buf_.data() + 4, count_);
    return m;
}

PacketBuilder& PacketBuilder::definition(std::uint32_t id, std::string_view symbol,
                                         std::int8_t price_exponent) {
    constexpr std::size_t kSymbol = 16;
    if (symbol.size() > kSymbol)
        throw std::length_error("PacketBuilder: symbol longer than 16 bytes: " + std::string(symbol));
    std::byte* m = grow(qfb1::kDefinitionSize, 'I');
    store_le<std::uint32_t>(m + 4, id);
    if (!symbol.empty()) std::memcpy(m + 8, symbol.data(), symbol.size());  // rest stays NUL
    store_le<std::int8_t>(m + 24, price_exponent);
    return *this;
}

PacketBuilder& PacketBuilder::quote(std::uint32_t id, std::uint64_t seq, std::int64_t source_ns,
                                    std::int64_t bid_px, std::uint32_t bid_qty, std::int64_t ask_px,
                                    std::uint32_t ask_qty) {
    std::byte* m = grow(qfb1::kQuoteSize, 'Q');
    store_le<std::uint32_t>(m + 4, id);
    store_le<std::uint64_t>(m + 8, seq);
    store_le<std::int64_t>(m + 16, source_ns);
    store_le<std::int64_t>(m + 24, bid_px);
    store_le<std::int64_t>(m + 32, ask_px);
    store_le<std::uint32_t>(m + 40, bid_qty);
    store_le<std::uint32_t>(m + 44, ask_qty);
    return *this;
}

PacketBuilder& PacketBuilder::delta(std::uint32_t id, std::uint64_t seq, std::int64_t source_ns,
                                    std::int64_t price, std::uint32_t qty, std::uint8_t side,
                                    std::uint8_t action) {
    std::byte* m = grow(qfb1::kDeltaSize, 'D');
    store_le<std::uint32_t>(m + 4, id);
    store_le<std::uint64_t>(m + 8, seq);
    store_le<std::int64_t>(m + 16, source_ns);
    store_le<std::int64_t>(m + 24, price);
    store_le<std::uint32_t>(m + 32, qty);
    store_le<std::uint8_t>(m + 36, side);
    store_le<std::uint8_t>(m + 37, action);
    return *this;
}

PacketBuilder& PacketBuilder::snapshot(std::uint32_t id, std::uint64_t seq, std::int64_t source_ns,
                                       std::span<const SnapLevel> bids,
                                       std::span<const SnapLevel> asks) {
    constexpr std::size_t kMaxSide = std::numeric_limits<std::uint8_t>::max();
    if (bids.size() > kMaxSide || asks.size() > kMaxSide)
        throw std::length_error("PacketBuilder: more than 255 levels on one side of a snapshot");
    const std::size_t n = bids.size() + asks.size();
    std::byte* m = grow(qfb1::kSnapshotHeaderSize + qfb1::kSnapshotLevelSize * n, 'S');
    store_le<std::uint32_t>(m + 4, id);
    store_le<std::uint64_t>(m + 8, seq);
    store_le<std::int64_t>(m + 16, source_ns);
    store_le<std::uint8_t>(m + 24, static_cast<std::uint8_t>(bids.size()));
    store_le<std::uint8_t>(m + 25, static_cast<std::uint8_t>(asks.size()));
    std::byte* lv = m + qfb1::kSnapshotHeaderSize;
    for (const auto side : {bids, asks}) {
        for (const SnapLevel& l : side) {
            store_le<std::int64_t>(lv, l.price);
            store_le<std::uint32_t>(lv + 8, l.qty);
            lv += qfb1::kSnapshotLevelSize;  // 4 pad bytes stay 0
        }
    }
    return *this;
}

PacketBuilder& PacketBuilder::heartbeat(std::uint32_t id, std::uint64_t next_seq, std::int64_t source_ns) {
    std::byte* m = grow(qfb1::kHeartbeatSize, 'H');
    store_le<std::uint32_t>(m + 4, id);
    store_le<std::uint64_t>(m + 8, next_seq);
    store_le<std::int64_t>(m + 16, source_ns);
    return *this;
}

PacketBuilder& PacketBuilder::raw_message(char type, std::span<const std::byte> body) {
    std::byte* m = grow(qfb1::kMessageHeaderSize + body.size(), type);
    if (!body.empty()) std::memcpy(m + qfb1::kMessageHeaderSize, body.data(), body.size());
    return *this;
}

}  // namespace tickgate
