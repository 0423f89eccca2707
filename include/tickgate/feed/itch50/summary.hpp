// ITCH 5.0's JSON summary (ITCH50.md "Summary and replay"): the QFB/1
// schema with ITCH's per-instrument fields and a "channels" array of the
// MoldUDP64 streams, for the offline replay (ReplayFront) and for a
// shared live handler over itch50::Protocol (`run --json`). Cold path: built
// once at the end, after the network thread has stopped.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/feed_stats.hpp"
#include "tickgate/feed/itch50/rules.hpp"
#include "tickgate/feed/itch50/snapshot.hpp"
#include "tickgate/feed/moldudp64/rerequest_client.hpp"
#include "tickgate/feed/moldudp64/stream.hpp"

namespace tickgate {
struct SummarySource;   // feed/replay.hpp, which a protocol header cannot include (it includes the protocol list)
struct SummaryContext;
}  // namespace tickgate

namespace tickgate::itch50 {

// One channel's stream as the summary shows it.
struct SummaryChannel {
    std::string name;     // the config's channel id, or without a config "group:port"
    std::string session;  // the current MoldUDP64 session; empty before the first
    std::uint64_t next_seq = 0;
    const moldudp64::StreamCounters* stream = nullptr;
    std::uint64_t unknown_messages = 0;                        // the sequencer's, per channel
    const moldudp64::RerequestCounters* rerequest = nullptr;  // live, with a re-request server
    std::string rerequest_server;
    const SnapshotCounters* snapshot = nullptr;  // live, with a GLIMPSE server
    std::string glimpse_server;
};

// What the summary is made of beyond the shared SummarySource (whose
// decoder counters hold the streams' totals; unknown_messages is the sum
// of the channels').
struct SummaryParts {
    const Book& book;
    const Rules::State& venue;
    std::span<const SummaryChannel> channels;
    std::uint64_t unmatched_datagrams = 0;
};

// The summary; with `live` (run --json) the shared "live" object too.
[[nodiscard]] std::string summary_json(const SummarySource& src, const SummaryParts& parts, const SummaryContext& ctx,
                                       const FeedStats* live = nullptr);

// The channels of `stream` (slots in config order, named by `names`), with
// their re-request client where one is configured (`client`, may be null).
template <class Stream>
[[nodiscard]] std::vector<SummaryChannel> summary_channels(const Stream& stream, const std::vector<std::string>& names,
                                                           const Rules::State& venue,
                                                           const moldudp64::RerequestClient* client, const Config& cfg) {
    std::vector<SummaryChannel> out;
    out.reserve(names.size());
    for (std::uint32_t ch = 0; ch < names.size(); ++ch) {
        const auto v = stream.channel(ch);
        SummaryChannel c;
        c.name = names[ch];
        if (v.has_session) c.session.assign(v.session.data(), v.session.size());
        c.next_seq = v.next_seq;
        c.stream = &v.counters;
        c.unknown_messages = venue.channel_counters(ch).unknown_messages.get();
        if (client != nullptr && client->enabled(ch)) {
            c.rerequest = &client->counters(ch);
            c.rerequest_server = cfg.channels[ch].rerequest;
        }
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace tickgate::itch50
