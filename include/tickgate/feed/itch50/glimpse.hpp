// GLIMPSE 5.0 (Nasdaq's snapshot of the TotalView-ITCH 5.0 book, over
// SoupBinTCP; ITCH50.md "Snapshot recovery"): a spin of ITCH 5.0
// messages, one per Sequenced Data packet, ended by the Snapshot message
// `M`, whose 20-byte ASCII field is an ITCH sequence number. tickgate reads
// it as the stream position of the first multicast message *not*
// reflected in the snapshot, the position to begin processing the
// real-time feed at (README "ITCH recovery"). Pure functions; no
// allocation, throw or read outside the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tickgate/feed/soupbintcp/wire.hpp"

namespace tickgate::itch50 {

inline constexpr char kSnapshotType = 'M';
inline constexpr std::size_t kSnapshotSize = 1 + soupbintcp::kSequenceSize;  // 21

// What `M`'s sequence field says.
enum class SnapshotParse : std::uint8_t {
    kOk,        // `position` set
    kShort,     // fewer than 21 bytes
    kGarbage,   // not digits padded with spaces, or an overflow
    kZero,      // position 0: no stream position is 0
};

struct SnapshotEnd {
    SnapshotParse result;
    std::uint64_t position = 0;  // the first stream position not reflected in the snapshot
};

// Reads message `m` (type byte `M` first). Longer messages are accepted,
// as ITCH accepts appended fields.
[[nodiscard]] inline SnapshotEnd parse_snapshot_end(std::span<const std::byte> m) noexcept {
    if (m.size() < kSnapshotSize) return {SnapshotParse::kShort};
    std::uint64_t v = 0;
    if (!soupbintcp::parse_numeric(m.subspan(1, soupbintcp::kSequenceSize), v)) return {SnapshotParse::kGarbage};
    if (v == 0) return {SnapshotParse::kZero};
    return {SnapshotParse::kOk, v};
}

}  // namespace tickgate::itch50
