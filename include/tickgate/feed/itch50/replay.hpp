// Offline replay of ITCH 5.0 over MoldUDP64 captures (`tickgate replay
// --protocol itch50`) and its summary (ITCH50.md "Summary and replay"):
// the shared BasicReplay (feed/replay.hpp) with ITCH's offline front
// (front.hpp: ReplayFront, the MoldUDP64 stream on the capture's clock) in
// front of BasicHandler<Protocol> (BasicSequencer<Rules> -> order book,
// the gate over the instrument table). Live, the shared pipelines run the
// same stream, snapshot router, rules and book (StreamFront).
#pragma once

#include <cstdint>
#include <string>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/itch50/protocol.hpp"
#include "tickgate/feed/replay.hpp"

namespace tickgate::itch50 {

using Replay = BasicReplay<Protocol>;

// A replay's capacities with instrument ids for every configured channel,
// or without channels for `unconfigured_channels` (clamped to
// 1..kMaxUnconfiguredIdChannels), checked against capacity.max_memory_mb
// before anything is allocated (std::invalid_argument saying what to raise).
[[nodiscard]] Capacity replay_capacity(const Config& cfg, std::uint32_t unconfigured_channels);
// What a replay can learn of the capture at `path` before it starts, in one
// read: the channels it will see without a config (distinct multicast
// group:port, at most kMaxUnconfiguredIdChannels; at least 1) and its adds
// (`A` and `F` messages, every line's copy counted: at least as many as
// the orders it can ever hold at once). Throws CaptureError as a replay does.
struct CaptureCensus {
    std::uint32_t channels = 1;
    std::uint64_t adds = 0;
};
[[nodiscard]] CaptureCensus census_of(const std::string& path);
// The order store a replay of a capture with `adds` adds needs: `configured`,
// or fewer (never under kMinReplayOrders) when the capture cannot fill it.
inline constexpr std::uint32_t kMinReplayOrders = 4096;
[[nodiscard]] constexpr std::uint32_t replay_max_orders(std::uint32_t configured, std::uint64_t adds) noexcept {
    const std::uint64_t need = adds < kMinReplayOrders ? kMinReplayOrders : adds;
    return need < configured ? static_cast<std::uint32_t>(need) : configured;
}

}  // namespace tickgate::itch50
