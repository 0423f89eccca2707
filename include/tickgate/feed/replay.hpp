// Offline replay of captures through the Handler, and the summary (JSON and
// table) that `tickgate replay` and `tickgate run` print.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <string_view>

#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/handler.hpp"

namespace tickgate {

class FeedHandler;

// Applies the start-up parts of `cfg` to a sequencer: configured
// instruments, learn flag, per-channel clock offsets.
void apply_config(Sequencer& seq, const Config& cfg);

struct ChannelPacketCount {
    std::uint16_t channel_id;
    std::uint64_t packets;
};
// The packets of every channel together.
[[nodiscard]] inline std::uint64_t total_packets(std::span<const ChannelPacketCount> counts) noexcept {
    std::uint64_t n = 0;
    for (const ChannelPacketCount& c : counts) n += c.packets;
    return n;
}

struct ReplayResult {
    FrameCounters frames;
    std::uint64_t filtered_out = 0;   // UDP datagrams not addressed to a configured line
    std::int64_t last_ts_ns = 0;      // capture time of the last record (the gate's `now`)
    std::uint64_t duplicate_packets = 0;  // dropped by arbitration (second copies)
    std::vector<ChannelPacketCount> foreign_channel_packets;  // per configured channel (rule 7), if any
    bool any_records = false;
    double wall_seconds = 0;

    void count_foreign_channel_packet(std::uint16_t channel_id) {
        for (ChannelPacketCount& c : foreign_channel_packets)
            if (c.channel_id == channel_id) {
                ++c.packets;
                return;
            }
        foreign_channel_packets.push_back({channel_id, 1});
    }
    // Set when the capture was cut short: every intact record was replayed.
    std::optional<CaptureTruncation> truncation;
};

struct ReplayOptions {
    bool progress = false;   // a progress line on stderr (only if it is a terminal)
    // Merge lines A/B by packet_seq as the live handler does (config's
    // receiver.arbitration_* settings; capture time is the clock). Off: every
    // datagram in capture order, the venue reference handler's semantics.
    bool arbitrate = false;
};

// Feeds every UDP/IPv4 datagram of the capture (only the configured lines'
// groups/ports when `cfg` names channels) to `handler`, each record's
// capture time as its arrival time. A capture cut short mid-record is
// replayed up to the cut (`truncation` says where). Throws CaptureError on
// unreadable or corrupt files (after applying what was read before the bad
// record).
ReplayResult replay_capture(const std::string& path, const Config& cfg, Handler& handler,
                            const ReplayOptions& options = {});

struct SummaryContext {
    std::int64_t now_ns;           // the gate is evaluated at this time
    std::string capture = {};      // optional, echoed as "capture"
    const FrameCounters* frames = nullptr;  // optional: frame counters of a replay
    // A replay's capture was cut short (with `frames` only): the JSON says
    // "capture_truncated": true and where, the table adds a line.
    const CaptureTruncation* truncation = nullptr;
    // Packets dropped because their header named another channel than the
    // line they arrived on (rule 7), per channel.
    std::vector<ChannelPacketCount> foreign_channel_packets = {};
};

// What a summary is made of: the decoder's counters and the engine's state.
struct SummarySource {
    const wire::DecoderCounters& decoder;
    const Sequencer& sequencer;
    const Gate& gate;
    const GateConfig& gate_config;
};
[[nodiscard]] inline SummarySource summary_source(const Handler& h) noexcept {
    return {h.decoder().counters(), h.sequencer(), h.gate(), h.gate_config()};
}

// The JSON summary (field names fixed by the spec of `replay --json`; the
// counters' names are those of counter_fields.hpp). With `live` (run
// --json), a "live" object: its per-line, A/B arbitration and ring counters.
// Strings (symbols, the capture's name) are bytes: each is written as the
// code point of its value, \u00HH beyond printable ASCII, so the summary is
// ASCII and reads back to the original bytes (U+0000..U+00FF).
std::string summary_json(const SummarySource& src, const SummaryContext& ctx, const FeedHandler* live = nullptr);
// A readable table: symbol, bid/ask in real units, last seq, lost, dups, state, gate reason, age.
std::string summary_table(const SummarySource& src, const SummaryContext& ctx);

// One refresh of `tickgate run`'s live view: the summary table at `now_ns`
// and `line_table` (per-line statistics) under a title naming `config_path`
// and the seconds since start. On a terminal it starts by homing the cursor
// and clearing the screen: the only control sequence in it, since every
// string that came off the wire (or from the command line) is printable().
std::string live_view(const SummarySource& src, std::int64_t now_ns, std::string_view config_path,
                      double elapsed_s, std::string_view line_table, bool terminal);

}  // namespace tickgate
