// Builds ITCH 5.0 messages and MoldUDP64 datagrams (tests, fuzz seeds,
// benchmarks). Allocates: not for the hot path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tickgate/bytes.hpp"
#include "tickgate/feed/moldudp64/wire.hpp"

namespace tickgate::itch50 {

using tickgate::Bytes;  // the builders' one buffer type (tickgate/bytes.hpp)

// A message of `type` at its ITCH 5.0 size (zero fields), header filled.
// For a type ITCH 5.0 does not define, `unknown_size` bytes.
[[nodiscard]] Bytes message(char type, std::uint16_t locate, std::int64_t timestamp_ns, std::size_t unknown_size = 11);
[[nodiscard]] Bytes system_event(char code, std::int64_t timestamp_ns);
[[nodiscard]] Bytes stock_directory(std::uint16_t locate, std::string_view symbol, std::int64_t timestamp_ns = 0);
[[nodiscard]] Bytes trading_action(std::uint16_t locate, std::string_view symbol, char state, std::int64_t timestamp_ns = 0);
// 'A' (or 'F' with an attribution "MPID"), naming `stock` (blank by
// default: such an add names no locate, only a directory does).
[[nodiscard]] Bytes add_order(std::uint16_t locate, std::uint64_t ref, char side, std::uint32_t shares,
                              std::uint32_t price, std::int64_t timestamp_ns = 0, bool with_mpid = false,
                              std::string_view stock = "");
[[nodiscard]] Bytes executed(std::uint16_t locate, std::uint64_t ref, std::uint32_t shares, std::int64_t timestamp_ns = 0);
[[nodiscard]] Bytes executed_with_price(std::uint16_t locate, std::uint64_t ref, std::uint32_t shares,
                                        std::uint32_t price, std::int64_t timestamp_ns = 0);
[[nodiscard]] Bytes cancel(std::uint16_t locate, std::uint64_t ref, std::uint32_t shares, std::int64_t timestamp_ns = 0);
[[nodiscard]] Bytes delete_order(std::uint16_t locate, std::uint64_t ref, std::int64_t timestamp_ns = 0);
[[nodiscard]] Bytes replace(std::uint16_t locate, std::uint64_t original_ref, std::uint64_t new_ref,
                            std::uint32_t shares, std::uint32_t price, std::int64_t timestamp_ns = 0);

// A MoldUDP64 downstream datagram: `session` (padded or cut to 10 bytes),
// first position `seq`, each message as a length-prefixed block.
[[nodiscard]] Bytes mold_packet(std::string_view session, std::uint64_t seq, std::span<const Bytes> messages);
// A heartbeat (count 0) or end of session (count 0xFFFF) carrying `next_seq`.
[[nodiscard]] Bytes mold_heartbeat(std::string_view session, std::uint64_t next_seq, bool end_of_session = false);
// A re-request: `count` messages from `seq`.
[[nodiscard]] Bytes mold_request(std::string_view session, std::uint64_t seq, std::uint16_t count);

}  // namespace tickgate::itch50
