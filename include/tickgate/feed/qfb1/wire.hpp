// QFB/1 wire format (shared/spec/QFB1.md): sizes, every field's offset by
// name (as MDP3's SBE layouts are named), and the packet header view.
// Little-endian, memcpy loads only; nothing here allocates or throws. The
// decoder (decoder.hpp) checks a message's length against its size once,
// then reads its fields by these names; the builder is packet_builder.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tickgate/endian.hpp"

namespace tickgate::qfb1 {

inline constexpr std::uint16_t kMagic = 0x5146;
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kPacketHeaderSize = 28;
inline constexpr std::size_t kMessageHeaderSize = 4;
inline constexpr std::size_t kMaxDatagram = 1400;

inline constexpr std::size_t kDefinitionSize = 32;
inline constexpr std::size_t kQuoteSize = 48;
inline constexpr std::size_t kDeltaSize = 40;
inline constexpr std::size_t kHeartbeatSize = 24;
inline constexpr std::size_t kSnapshotHeaderSize = 32;
inline constexpr std::size_t kSnapshotLevelSize = 16;

// Field offsets, from the start of the packet header or of a message.
namespace header {
inline constexpr std::size_t kMagic = 0;        // u16 0x5146
inline constexpr std::size_t kVersion = 2;      // u8
inline constexpr std::size_t kMsgCount = 4;     // u16
inline constexpr std::size_t kChannelId = 6;    // u16
inline constexpr std::size_t kSession = 8;      // u32
inline constexpr std::size_t kPacketSeq = 12;   // u64
inline constexpr std::size_t kSendTimeNs = 20;  // i64
}  // namespace header
namespace msg {  // every message: its length, type, then the instrument
inline constexpr std::size_t kLength = 0;        // u16, the whole message
inline constexpr std::size_t kType = 2;          // u8: 'Q', 'D', 'S', 'H', 'I'
inline constexpr std::size_t kInstrumentId = 4;  // u32
inline constexpr std::size_t kSeq = 8;           // u64 (H: next_seq)
inline constexpr std::size_t kSourceTimeNs = 16; // i64 (Q, D, S, H)
}  // namespace msg
namespace quote {
inline constexpr std::size_t kBidPx = 24;   // i64
inline constexpr std::size_t kAskPx = 32;   // i64
inline constexpr std::size_t kBidQty = 40;  // u32
inline constexpr std::size_t kAskQty = 44;  // u32
}  // namespace quote
namespace delta {
inline constexpr std::size_t kPrice = 24;   // i64
inline constexpr std::size_t kQty = 32;     // u32
inline constexpr std::size_t kSide = 36;    // u8: 0 bid, 1 ask
inline constexpr std::size_t kAction = 37;  // u8: 0 set, 1 delete
}  // namespace delta
namespace definition {
inline constexpr std::size_t kSymbol = 8;          // char[16]
inline constexpr std::size_t kPriceExponent = 24;  // i8
}  // namespace definition
namespace snapshot {
inline constexpr std::size_t kNBids = 24;  // u8
inline constexpr std::size_t kNAsks = 25;  // u8
// Levels follow the 32-byte header, bids then asks, kSnapshotLevelSize each:
inline constexpr std::size_t kLevelPrice = 0;  // i64
inline constexpr std::size_t kLevelQty = 8;    // u32
}  // namespace snapshot

// Byte-order loads/stores are shared by every protocol (endian.hpp).
using tickgate::load_le;
using tickgate::store_le;

// View over the 28-byte packet header. Valid only if `valid()`.
class PacketHeaderView {
public:
    explicit PacketHeaderView(std::span<const std::byte> d) noexcept : d_(d) {}
    [[nodiscard]] bool valid() const noexcept {
        return d_.size() >= kPacketHeaderSize && magic() == kMagic && version() == kVersion;
    }
    [[nodiscard]] std::uint16_t magic() const noexcept { return load_le<std::uint16_t>(d_.data() + header::kMagic); }
    [[nodiscard]] std::uint8_t version() const noexcept { return load_le<std::uint8_t>(d_.data() + header::kVersion); }
    [[nodiscard]] std::uint16_t msg_count() const noexcept { return load_le<std::uint16_t>(d_.data() + header::kMsgCount); }
    [[nodiscard]] std::uint16_t channel_id() const noexcept { return load_le<std::uint16_t>(d_.data() + header::kChannelId); }
    [[nodiscard]] std::uint32_t session() const noexcept { return load_le<std::uint32_t>(d_.data() + header::kSession); }
    [[nodiscard]] std::uint64_t packet_seq() const noexcept { return load_le<std::uint64_t>(d_.data() + header::kPacketSeq); }
    [[nodiscard]] std::int64_t send_time_ns() const noexcept {
        return load_le<std::int64_t>(d_.data() + header::kSendTimeNs);
    }

private:
    std::span<const std::byte> d_;
};

static_assert(header::kSendTimeNs + 8 == kPacketHeaderSize);
static_assert(quote::kAskQty + 4 == kQuoteSize);
static_assert(delta::kAction + 1 <= kDeltaSize);
static_assert(msg::kSourceTimeNs + 8 == kHeartbeatSize);
static_assert(definition::kPriceExponent < kDefinitionSize && definition::kSymbol + 16 == definition::kPriceExponent);
static_assert(snapshot::kNAsks < kSnapshotHeaderSize && snapshot::kLevelQty + 4 <= kSnapshotLevelSize);

}  // namespace tickgate::qfb1
