// What a protocol adds to the JSON summary (replay.hpp) beyond the QFB/1
// schema: per-channel packet figures, the venue's own instrument ids and
// per-instrument book errors. Built once at the end of a replay; cold path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tickgate {

// A channel's packet figures as the venue's decoder counts them (MDP3:
// MsgSeqNum gaps, unknown templates); copied without allocation for the
// metrics, and the summary's per-channel object.
struct VenueChannelCounts {
    std::uint16_t channel = 0;  // the decoder's channel id
    std::uint64_t packets = 0;
    std::uint64_t duplicate_packets = 0;
    std::uint64_t gaps = 0;
    std::uint64_t lost_packets = 0;
    std::uint64_t resets = 0;
    std::uint64_t unknown_templates = 0;
};

struct VenueChannelSummary : VenueChannelCounts {
    std::optional<std::uint16_t> id;  // the config's channel id; without a config...
    std::string name;                 // ... the channel's "group:port"
};

// MDP3: the definitions kept by SecurityID ([mdp3] max_definitions).
struct VenueDefinitions {
    std::uint32_t stored = 0;
    std::uint32_t capacity = 0;
    std::uint64_t dropped = 0;  // definitions of a new SecurityID with the store full
};

struct VenueSummary {
    std::vector<VenueChannelSummary> channels;
    std::optional<VenueDefinitions> definitions;
    std::vector<std::int64_t> venue_ids;     // by instrument index: the venue's id (MDP3 SecurityID)
    std::vector<std::uint64_t> book_errors;  // by instrument index
};

// Channel ids a replay gave the destinations of a capture read without a
// config, for a protocol whose header names no channel: id -> "group:port".
using ChannelNames = std::vector<std::pair<std::uint16_t, std::string>>;

}  // namespace tickgate
