#include "tickgate/feed/itch50/replay.hpp"

#include "tickgate/feed/itch50/front.hpp"
#include "tickgate/feed/itch50/protocol.hpp"
#include "tickgate/feed/itch50/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "../json_writer.hpp"
#include "../summary_fields.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/moldudp64/counter_fields.hpp"

namespace tickgate::itch50 {

namespace {

std::uint32_t channel_slots(const Config& cfg) {
    return cfg.channels.empty() ? kMaxUnconfiguredChannels : static_cast<std::uint32_t>(cfg.channels.size());
}

bool is_multicast(std::uint32_t ip) noexcept { return (ip >> 28) == 0xE; }

// The channels instrument ids are allocated for. Without channels the
// config's own memory check could count only one (it cannot know the
// capture): the channels found in it are checked here, before anything is
// allocated, against the same limit.
std::uint32_t id_channels(const Config& cfg, std::uint32_t unconfigured) {
    if (!cfg.channels.empty()) return static_cast<std::uint32_t>(cfg.channels.size());
    const std::uint32_t n = std::clamp<std::uint32_t>(unconfigured, 1, kMaxUnconfiguredIdChannels);
    const std::uint64_t mib = mib_ceil(itch50::estimate_memory(cfg, n).total_bytes);
    if (mib > cfg.max_memory_mb)
        throw std::invalid_argument(fmt::format(
            "replay: the capture's {} channels need an estimated {} MiB reserved (65,536 instrument ids each), above "
            "capacity.max_memory_mb = {} MiB: raise it, or give a config with the capture's channels",
            n, mib, cfg.max_memory_mb));
    return n;
}

std::string ipv4_text(std::uint32_t ip) {
    return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xFF, (ip >> 8) & 0xFF, ip & 0xFF);
}

}  // namespace

Replay::Replay(const Config& cfg, moldudp64::RerequestClient* live_client, std::uint32_t unconfigured_channels)
    : cfg_(cfg), configured_(!cfg.channels.empty()), instruments_(instrument_ids(id_channels(cfg, unconfigured_channels))),
      book_(instruments_.max_instruments(), cfg.itch.max_orders, cfg.itch.max_levels, kLocateBits),
      sequencer_(instruments_, book_, sequencer_capacity(instruments_.max_instruments())),
      router_(cfg, channel_slots(cfg)),
      stream_(stream_config(cfg), channel_slots(cfg), moldudp64::ClientRecovery{live_client}),
      events_{ApplyToSequencer{sequencer_}},
      sink_(router_.sink(events_, stream_)),
      gate_(instruments_, cfg.gate), client_(live_client) {
    sequencer_.venue().configure(channel_slots(cfg), cfg.itch.utc_offset_minutes);
    if (live_client != nullptr) hold_only_for_the_other_line(stream_, *live_client, cfg);
    channels_.reserve(channel_slots(cfg));
    for (const ChannelConfig& ch : cfg.channels)
        for (const LineConfig* line : {&ch.a, &ch.b})  // config.cpp has checked the groups
            lines_.push_back({parse_ipv4(line->group).value_or(0), line->port, static_cast<std::uint32_t>(&ch - cfg.channels.data())});
    for (const ChannelConfig& ch : cfg.channels) channels_.push_back({std::to_string(ch.id), 0, 0});
    for (const ChannelConfig& ch : cfg.channels) instruments_.set_clock_offset(static_cast<std::uint16_t>(&ch - cfg.channels.data()), ch.clock_offset_ns);
    for (const std::string& symbol : cfg.subscribe) (void)instruments_.subscribe(symbol);  // validated: fits
    sequencer_.apply_subscriptions();
}

std::uint32_t Replay::slot_of(std::span<const std::byte> payload, std::uint32_t dst_ip, std::uint16_t dst_port) {
    if (!is_multicast(dst_ip)) {  // a re-request server's answer: the channel whose session it carries
        const moldudp64::Key key = moldudp64::read_key(payload, 0);
        return key.valid() ? stream_.channel_of_session(key.session) : UINT32_MAX;
    }
    if (configured_) {
        for (const Line& line : lines_)
            if (line.group == dst_ip && line.port == dst_port) return line.slot;
        return UINT32_MAX;
    }
    for (std::uint32_t i = 0; i < channels_.size(); ++i)
        if (channels_[i].group == dst_ip && channels_[i].port == dst_port) return i;
    if (channels_.size() == kMaxUnconfiguredChannels) return UINT32_MAX;
    channels_.push_back({fmt::format("{}:{}", ipv4_text(dst_ip), dst_port), dst_ip, dst_port});
    return static_cast<std::uint32_t>(channels_.size() - 1);
}

std::uint32_t Replay::channels_in(const std::string& path) {
    CaptureReader reader(path);
    FrameCounters frames;
    std::vector<std::pair<std::uint32_t, std::uint16_t>> seen;
    while (auto rec = reader.next()) {
        const auto d = extract_udp(reader.link_type(), rec->frame, frames);
        if (!d || !is_multicast(d->dst_ip)) continue;
        const std::pair<std::uint32_t, std::uint16_t> dst{d->dst_ip, d->dst_port};
        if (std::find(seen.begin(), seen.end(), dst) != seen.end()) continue;
        seen.push_back(dst);
        if (seen.size() == kMaxUnconfiguredIdChannels) break;
    }
    return std::max<std::uint32_t>(1, static_cast<std::uint32_t>(seen.size()));
}

void Replay::on_datagram(std::span<const std::byte> payload, std::uint32_t dst_ip, std::uint16_t dst_port,
                         std::int64_t ts_ns) {
    stream_.expire(ts_ns, sink_);  // before each datagram, whatever its channel
    deliver(payload, dst_ip, dst_port, ts_ns);
}

void Replay::deliver(std::span<const std::byte> payload, std::uint32_t dst_ip, std::uint16_t dst_port,
                     std::int64_t recv_ns) {
    const std::uint32_t slot = slot_of(payload, dst_ip, dst_port);
    if (slot == UINT32_MAX) {
        ++unmatched_;
        return;
    }
    const moldudp64::Key key = moldudp64::read_key(payload, static_cast<std::uint16_t>(slot));
    if (is_multicast(dst_ip)) {
        stream_.on_datagram(slot, payload, key, recv_ns, sink_);
        return;
    }
    // A unicast datagram is a re-request server's answer to the capturing
    // handler's requests (a live capture holds them). Which positions it
    // asked for is not in the capture: every hole it had open it would have
    // asked for, so an answer fills open holes only (ITCH50.md "Offline
    // replay"; README "Captured answers").
    stream_.on_answer(slot, payload, key, recv_ns, sink_,
                      [](std::uint64_t at) { return std::pair<std::uint64_t, std::uint64_t>{at, UINT64_MAX}; });
}

void Replay::finish() { stream_.finish(sink_); }

ReplayResult Replay::run(const std::string& path, const ReplayOptions& options) {
    CaptureReader reader(path);
    ReplayResult r;
    const auto start = std::chrono::steady_clock::now();
    tickgate::detail::ReplayProgress progress(options.progress, start);
    while (auto rec = reader.next()) {
        r.any_records = true;
        r.last_ts_ns = rec->ts_ns;
        ++r.frames.records;
        if (const auto d = extract_udp(reader.link_type(), rec->frame, r.frames))
            on_datagram(d->payload, d->dst_ip, d->dst_port, rec->ts_ns);
        progress.tick(r.frames.records, reader, [&] {
            DecoderCounters t;
            totals(t);
            return t.messages.get();
        });
    }
    finish();
    progress.clear();
    r.filtered_out = unmatched_;
    r.truncation = reader.truncation();
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

void Replay::totals(DecoderCounters& t) const {
    for (std::uint32_t ch = 0; ch < channels_.size(); ++ch) {
        add_stream_counters(t, stream_.channel(ch).counters);
        t.unknown_messages.add(sequencer_.venue().channel_counters(ch).unknown_messages.get());
    }
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

std::string Replay::summary_json(const SummaryContext& ctx) const {
    std::vector<std::string> names;
    for (const ChannelInfo& c : channels_) names.push_back(c.name);
    const std::vector<SummaryChannel> channels = summary_channels(stream_, names, sequencer_.venue(), client_, cfg_);
    return with_summary_source([&](const SummarySource& src) {
        return itch50::summary_json(src, {book_, sequencer_.venue(), channels, unmatched_}, ctx);
    });
}

std::string Replay::summary_table(const SummaryContext& ctx) const {
    return with_summary_source([&](const SummarySource& src) { return tickgate::summary_table(src, ctx); });
}

std::optional<std::string> Replay::book_view(const SummaryContext& ctx, std::string_view symbol,
                                             std::size_t depth) const {
    return with_summary_source([&](const SummarySource& src) { return tickgate::book_view(src, ctx, symbol, depth); });
}

std::string Replay::live_view(const SummaryContext& ctx, std::string_view config_path, double elapsed_s,
                              std::string_view line_table, bool terminal) const {
    return with_summary_source([&](const SummarySource& src) {
        return tickgate::live_view(src, ctx, config_path, elapsed_s, line_table, terminal);
    });
}

}  // namespace tickgate::itch50
