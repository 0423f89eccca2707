// QFB/1 packet builder: the write side of wire.hpp, used by the simulator,
// `tickgate send`, tests and benchmarks. Allocates (it is not hot-path code).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tickgate/bytes.hpp"

namespace tickgate {

// Builds one QFB/1 datagram (shared/spec/QFB1.md). msg_count is kept in step
// with the messages added. Tests may corrupt bytes() to make malformed input.
class PacketBuilder {
public:
    PacketBuilder(std::uint16_t channel, std::uint32_t session, std::uint64_t packet_seq,
                  std::int64_t send_ns);

    PacketBuilder& definition(std::uint32_t id, std::string_view symbol, std::int8_t price_exponent = -8);
    PacketBuilder& quote(std::uint32_t id, std::uint64_t seq, std::int64_t source_ns,
                         std::int64_t bid_px, std::uint32_t bid_qty, std::int64_t ask_px, std::uint32_t ask_qty);
    PacketBuilder& delta(std::uint32_t id, std::uint64_t seq, std::int64_t source_ns, std::int64_t price,
                         std::uint32_t qty, std::uint8_t side, std::uint8_t action);
    struct SnapLevel { std::int64_t price; std::uint32_t qty; };
    PacketBuilder& snapshot(std::uint32_t id, std::uint64_t seq, std::int64_t source_ns,
                            std::span<const SnapLevel> bids, std::span<const SnapLevel> asks);
    PacketBuilder& heartbeat(std::uint32_t id, std::uint64_t next_seq, std::int64_t source_ns);
    // A message of an arbitrary type and body (unknown types, bad lengths).
    PacketBuilder& raw_message(char type, std::span<const std::byte> body);

    [[nodiscard]] std::size_t size() const noexcept { return buf_.size(); }
    [[nodiscard]] std::uint16_t msg_count() const noexcept { return count_; }
    [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return buf_; }
    [[nodiscard]] Bytes& mutable_bytes() noexcept { return buf_; }

private:
    std::byte* grow(std::size_t n, char type);
    Bytes buf_;
    std::uint16_t count_ = 0;
};

}  // namespace tickgate
