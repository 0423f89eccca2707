// QFB/1 wire format (shared/spec/QFB1.md): sizes, offsets and the packet
// header view. Little-endian, memcpy loads only; nothing here allocates or
// throws. The decoder is decoder.hpp, the builder packet_builder.hpp.
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
    [[nodiscard]] std::uint16_t magic() const noexcept { return load_le<std::uint16_t>(d_.data()); }
    [[nodiscard]] std::uint8_t version() const noexcept { return load_le<std::uint8_t>(d_.data() + 2); }
    [[nodiscard]] std::uint16_t msg_count() const noexcept { return load_le<std::uint16_t>(d_.data() + 4); }
    [[nodiscard]] std::uint16_t channel_id() const noexcept { return load_le<std::uint16_t>(d_.data() + 6); }
    [[nodiscard]] std::uint32_t session() const noexcept { return load_le<std::uint32_t>(d_.data() + 8); }
    [[nodiscard]] std::uint64_t packet_seq() const noexcept { return load_le<std::uint64_t>(d_.data() + 12); }
    [[nodiscard]] std::int64_t send_time_ns() const noexcept { return load_le<std::int64_t>(d_.data() + 20); }

private:
    std::span<const std::byte> d_;
};

}  // namespace tickgate::qfb1
