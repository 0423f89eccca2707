// Nasdaq TotalView-ITCH 5.0 over MoldUDP64 as a tickgate protocol
// (protocol.hpp): what the shared pipelines are instantiated with to speak
// it. Its hole policy is kHoldAndRerequest, so its front is the MoldUDP64
// stream (front.hpp) rather than the A/B arbiter; its rules (rules.hpp)
// and order book are its own. Everything ITCH-specific is in this folder.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/itch50/decoder.hpp"
#include "tickgate/feed/itch50/front.hpp"
#include "tickgate/feed/itch50/rules.hpp"
#include "tickgate/feed/itch50/summary.hpp"
#include "tickgate/feed/moldudp64/stream.hpp"
#include "tickgate/feed/moldudp64/wire.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate::itch50 {

// A channel's MoldUDP64 session as the channel table sees it: the
// stream's rule (moldudp64::SessionMemory: names, not numbers; one of the
// last 16 replaced is stale), one implementation for both homes until the
// stream takes its sessions from the channel table.
class SessionState {
public:
    [[nodiscard]] SessionMark observe(const moldudp64::Key& key) noexcept { return sessions_.observe(key.session); }

private:
    moldudp64::SessionMemory sessions_;
};

// One datagram's messages as Events, outside any stream (protocol
// detection, tests): every message received, in order, on channel slot 0,
// nothing held or merged; types ITCH 5.0 does not define counted in
// unknown_messages. The live and offline pipelines read datagrams through
// the stream instead (front.hpp, replay.hpp). Out of a stream, a
// re-request (upstream) or a session of non-printable bytes is no ITCH
// downstream packet: malformed (kBadMagic), nothing delivered.
class Decoder {
public:
    template <class Sink>
    DecodeResult decode(std::span<const std::byte> d, const moldudp64::Key& key, SessionMark, std::int64_t recv_ns,
                        std::uint8_t, Sink&& sink) noexcept {
        if (key.valid() && !downstream(key)) {
            count_malformed_unread();
            return {PacketVerdict::kMalformed, Fault::kBadMagic, 0};
        }
        const PacketDecode r = packets_.decode(d, key, [&](const OrderMessage& o) { sink(to_event(0, o, recv_ns)); });
        return {r.malformed ? PacketVerdict::kMalformed : PacketVerdict::kDecoded, r.walk.fault, r.walk.received};
    }
    [[nodiscard]] const DecoderCounters& counters() const noexcept { return packets_.counters(); }
    void count_malformed_unread() noexcept { packets_.count_malformed_unread(); }

private:
    static bool downstream(const moldudp64::Key& key) noexcept {
        if (key.kind == moldudp64::PacketKind::kRequest) return false;
        for (const char c : key.session)
            if (c < 0x20 || c > 0x7E) return false;
        return true;
    }
    PacketDecoder packets_;
};


// The order books and levels, the MoldUDP64 held-packet pool, the
// instrument table and per-instrument state for `id_channels` channels'
// locates (0: one), the receive slots of the configured lines, the AF_XDP
// UMEM, and live (a config with channels) the two-thread pipeline's event
// ring, GLIMPSE's snapshot buffer and storage and the fan-out. A replay
// without channels sizes them from its capture (Replay checks this
// estimate before it allocates).
[[nodiscard]] MemoryEstimate estimate_memory(const Config& c, std::uint32_t id_channels);

struct Protocol {
    static constexpr std::string_view kName = "itch50";
    static constexpr std::string_view kTitle = "ITCH 5.0";  // in messages
    static constexpr std::size_t kMaxDatagram = Receiver::kSlotBytes;  // the stream holds whole receive slots
    static constexpr HolePolicy kHolePolicy = HolePolicy::kHoldAndRerequest;
    static constexpr bool kHeaderNamesChannel = false;  // the line decides the channel
    using Key = moldudp64::Key;
    using SessionState = itch50::SessionState;
    using Decoder = itch50::Decoder;
    using Rules = itch50::Rules;
    using Book = Rules::Book;
    using Front = StreamFront<Protocol>;
    // Offline (BasicReplay), the same stream on the capture's clock (front.hpp).
    template <class Handler>
    using ReplayFront = itch50::ReplayFront<Handler>;

    [[nodiscard]] static Key read_key(std::span<const std::byte> d, std::uint16_t line_channel) noexcept {
        return moldudp64::read_key(d, line_channel);
    }
    [[nodiscard]] static constexpr std::size_t max_events_for(std::size_t len) noexcept {
        return itch50::max_events_for(len);
    }
    // Instrument ids are the channels' locates (65,536 per channel:
    // capacity.max_instruments does not apply); no recovery pool (the
    // stream holds and re-requests; nothing is buffered per instrument).
    [[nodiscard]] static Capacity capacity(const Config& cfg) noexcept {
        return sequencer_capacity(instrument_ids(cfg.channels.size()), cfg.capacity);
    }
    // A replay's capacities without a capture (replay.hpp's replay_capacity):
    // ids for every configured channel, or one channel's, checked against
    // capacity.max_memory_mb first (std::invalid_argument).
    [[nodiscard]] static Capacity replay_capacity(const Config& cfg);
    // A replay of `capture` (replay.hpp's fit_replay), from one read of it
    // (census_of): without channels, ids for those the capture holds (up to
    // kMaxUnconfiguredIdChannels); and [itch] max_orders lowered to its adds.
    [[nodiscard]] static Capacity fit_replay(Config& cfg, const std::string& capture);
    // config.hpp's estimate_memory for this protocol: its own parts, not the shared pipelines'.
    [[nodiscard]] static MemoryEstimate estimate_memory(const Config& cfg) {
        return itch50::estimate_memory(cfg, static_cast<std::uint32_t>(cfg.channels.size()));
    }

    // ---- what `tickgate run` shows of a shared handler over this protocol
    // The metrics' per-channel families: the stream, re-request and GLIMPSE counters (front.hpp).
    static constexpr std::span<const ChannelCounterGroup> kChannelCounterGroups = itch50::kChannelCounterGroups;
    template <class Handler>
    static std::size_t sample_channel_counters(const Handler& h, std::span<ChannelCounterSample> out) noexcept {
        return h.protocol_decoder().sample_channel_counters(out);
    }
    // The live view's rows at most: a day's directory names thousands of
    // stocks, a refresh shows the most active (run --symbols names others).
    static constexpr std::size_t kLiveViewRows = 20;
    // The JSON summary (ITCH50.md's, with "channels" of the streams and
    // the shared "live" object), once the network thread has stopped.
    template <class Handler>
    [[nodiscard]] static std::string summary_json(const Handler& h, const Config& cfg, const SummarySource& src,
                                                  const SummaryContext& ctx, const FeedStats& live) {
        const Front& front = h.protocol_decoder();
        std::vector<std::string> names;
        for (std::uint32_t ch = 0; ch < front.channels(); ++ch) names.push_back(std::to_string(front.channel_id(ch)));
        const Rules::State& venue = h.sequencer().venue();
        std::vector<SummaryChannel> channels = summary_channels(front.stream(), names, venue, &front.client(), cfg);
        for (std::uint32_t ch = 0; ch < channels.size(); ++ch)
            if (front.snapshots().enabled(ch)) {
                channels[ch].snapshot = &front.snapshots().counters(ch);
                channels[ch].glimpse_server = front.glimpse_server(ch);
            }
        return itch50::summary_json(src, {h.book(), venue, channels, front.untracked_datagrams()}, ctx, &live);
    }
};

static_assert(VenueProtocol<Protocol>);

}  // namespace tickgate::itch50
