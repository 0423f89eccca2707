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
// The channels a replay without a config will see in the capture at
// `path` (distinct multicast group:port, at most kMaxUnconfiguredIdChannels;
// at least 1). Throws CaptureError as a replay does.
[[nodiscard]] std::uint32_t channels_in(const std::string& path);

}  // namespace tickgate::itch50
