#include "tickgate/feed/itch50/replay.hpp"

#include "tickgate/feed/itch50/front.hpp"
#include "tickgate/feed/itch50/protocol.hpp"
#include "tickgate/feed/itch50/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "../json_writer.hpp"
#include "../summary_fields.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/moldudp64/counter_fields.hpp"

namespace tickgate::itch50 {

Capacity replay_capacity(const Config& cfg, std::uint32_t unconfigured) {
    // Without channels the config's own memory check could count only one
    // (it cannot know the capture): the channels found in it are checked
    // here, before anything is allocated, against the same limit.
    std::uint32_t n = static_cast<std::uint32_t>(cfg.channels.size());
    if (cfg.channels.empty()) {
        n = std::clamp<std::uint32_t>(unconfigured, 1, kMaxUnconfiguredIdChannels);
        const std::uint64_t mib = mib_ceil(itch50::estimate_memory(cfg, n).total_bytes);
        if (mib > cfg.max_memory_mb)
            throw std::invalid_argument(fmt::format(
                "replay: the capture's {} channels need an estimated {} MiB reserved (65,536 instrument ids each), "
                "above capacity.max_memory_mb = {} MiB: raise it, or give a config with the capture's channels",
                n, mib, cfg.max_memory_mb));
    }
    return sequencer_capacity(instrument_ids(n), cfg.capacity);
}

Capacity Protocol::replay_capacity(const Config& cfg) { return itch50::replay_capacity(cfg, 1); }

Capacity Protocol::fit_replay(Config& cfg, const std::string& capture) {
    const CaptureCensus census = census_of(capture);
    // The order store is sized whole at start-up (its table on huge pages):
    // the default 16 M orders made the replay of a 17 KB sample 300 MB resident.
    cfg.itch.max_orders = replay_max_orders(cfg.itch.max_orders, census.adds);
    return itch50::replay_capacity(cfg, cfg.channels.empty() ? census.channels : 1);
}

CaptureCensus census_of(const std::string& path) {
    CaptureReader reader(path);
    FrameCounters frames;
    std::vector<std::pair<std::uint32_t, std::uint16_t>> seen;
    CaptureCensus census;
    while (auto rec = reader.next()) {
        const auto d = extract_udp(reader.link_type(), rec->frame, frames);
        if (!d || !is_multicast(d->dst_ip)) continue;
        const std::pair<std::uint32_t, std::uint16_t> dst{d->dst_ip, d->dst_port};
        if (seen.size() < kMaxUnconfiguredIdChannels && std::find(seen.begin(), seen.end(), dst) == seen.end())
            seen.push_back(dst);
        const moldudp64::Key key = moldudp64::read_key(d->payload, 0);
        (void)moldudp64::walk(d->payload, key, [](std::uint8_t type) noexcept { return min_length(type); },
                              [&](std::uint16_t, std::span<const std::byte> m) {
                                  const auto type = std::to_integer<char>(m[0]);
                                  census.adds += type == 'A' || type == 'F';
                              });
    }
    census.channels = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(seen.size()));
    return census;
}

std::string summary_json(const SummarySource& src, const SummaryParts& parts, const SummaryContext& ctx,
                         const FeedStats* live) {
    json::Value out = json::Value::object();
    json::put_counters(out, src.decoder, kDecoderCounterFields);
    std::uint64_t unknown = 0;
    for (const SummaryChannel& c : parts.channels) unknown += c.unknown_messages;
    out["unknown_messages"] = unknown;  // the sequencer's: the streams do not read types
    json::put_counters(out, src.sequencer, kSequencerCounterFields);
    out["unmatched_datagrams"] = parts.unmatched_datagrams;
    out["stale_ms"] = src.gate_config.stale_ms;
    out["source_age_ms"] = src.gate_config.source_age_ms;
    out["now_ns"] = ctx.now_ns;
    if (!ctx.capture.empty()) out["capture"] = ctx.capture;
    put_capture_fields(out, ctx);
    json::Value& channels = out["channels"] = json::Value::array();
    for (const SummaryChannel& c : parts.channels) {
        json::Value channel = {{"channel", c.name}, {"session", c.session}, {"next_seq", c.next_seq}};
        json::put_counters(channel, *c.stream, moldudp64::kStreamCounterFields);
        channel["held_max"] = c.stream->held_max;
        channel["unknown_messages"] = c.unknown_messages;
        if (c.rerequest != nullptr) {  // live, with a re-request server
            json::Value& r = channel["rerequest"] = {{"server", c.rerequest_server}};
            json::put_counters(r, *c.rerequest, moldudp64::kRerequestCounterFields);
        }
        if (c.snapshot != nullptr) {  // live, with a GLIMPSE service (ITCH50.md "Snapshot recovery")
            json::Value g = {{"server", c.glimpse_server}};
            json::put_counters(g, *c.snapshot, kSnapshotCounterFields);
            json::Value& failures = g["snapshot_failures"] = json::Value::object();
            for (std::size_t r = 0; r < std::size(kSnapshotFailureNames); ++r)
                failures[kSnapshotFailureNames[r]] = c.snapshot->snapshot_failures[r].get();
            g["snapshot_orders"] = c.snapshot->snapshot_orders.get();
            channel["glimpse"] = std::move(g);
        }
        channels.push_back(std::move(channel));
    }
    const InstrumentTable& instruments = src.instruments;
    std::vector<std::uint32_t> ids(instruments.seen_ids().begin(), instruments.seen_ids().end());
    std::sort(ids.begin(), ids.end());
    json::Value& records = out["instruments"] = json::Value::array();
    for (const std::uint32_t id : ids) {
        const InstrumentState& st = instruments.state(id);
        const ItchInstrumentCounters& ic = parts.venue.counters(id);
        json::Value i = {{"id", id}, {"locate", locate_of(id)}, {"symbol", std::string(st.symbol)}, {"last_seq", st.last_seq}};
        json::put_counters(i, st.counters, kInstrumentCounterFields);
        i["suspect"] = st.suspect;
        i["suspect_reason"] = std::string(to_string(suspect_reason(st)));
        i["unknown_orders"] = ic.unknown_orders;
        i["over_executions"] = ic.over_executions;
        i["refused_adds"] = ic.refused_adds;
        i["orders"] = parts.book.open_orders(id);
        const auto side = [&](Side s) {
            json::Value levels = json::Value::array();
            for (const Level l : parts.book.side(id, s)) levels.push_back(json::Value::array({l.price, l.qty}));
            return levels;
        };
        i["bids"] = side(Side::kBid);
        i["asks"] = side(Side::kAsk);
        i["gate"] = to_string(src.gate.check(id, ctx.now_ns).reason);
        records.push_back(std::move(i));
    }
    if (live) put_live(out, *live);
    return json::dump(out);
}

}  // namespace tickgate::itch50
