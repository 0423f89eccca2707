// CME MDP 3.0 as a tickgate protocol (protocol.hpp): what the shared pipeline
// is instantiated with to speak it. Everything MDP3-specific is in this folder.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/counter_fields.hpp"
#include "tickgate/feed/mdp3/decoder.hpp"
#include "tickgate/feed/mdp3/rules.hpp"
#include "tickgate/feed/mdp3/snapshot_feed.hpp"
#include "tickgate/feed/mdp3/wire.hpp"
#include "tickgate/feed/venue_summary.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate::mdp3 {

// A channel's packet figures as the metrics export them, labelled {channel}.
inline constexpr CounterField<VenueChannelCounts, std::uint64_t> kChannelCounterFields[] = {
    {&VenueChannelCounts::packets, "", "tickgate_channel_packets_total",
     "Datagrams decoded for the channel (after A/B arbitration; its snapshot and definition lines too)."},
    {&VenueChannelCounts::duplicate_packets, "", "tickgate_channel_duplicate_packets_total",
     "Packets at a MsgSeqNum already taken, not parsed."},
    {&VenueChannelCounts::gaps, "", "tickgate_channel_seq_gaps_total",
     "Channel sequence gaps (MsgSeqNum jumps after A/B arbitration)."},
    {&VenueChannelCounts::lost_packets, "", "tickgate_channel_lost_packets_total",
     "MsgSeqNums the channel's gaps skipped."},
    {&VenueChannelCounts::resets, "", "tickgate_channel_resets_total", "ChannelReset messages."},
    {&VenueChannelCounts::unknown_templates, "", "tickgate_channel_unknown_templates_total",
     "Messages of an unknown template, skipped."},
};
using ChannelRows = MetricRows<kChannelCounterFields>;
inline constexpr ChannelCounterGroup kChannelCounterGroups[] = {ChannelRows::rows};

struct Protocol {
    static constexpr std::string_view kName = "mdp3";
    static constexpr std::string_view kTitle = "MDP3";  // in messages
    static constexpr std::size_t kMaxDatagram = mdp3::kMaxDatagram;
    static constexpr HolePolicy kHolePolicy = HolePolicy::kGiveUpAfterHold;
    static constexpr bool kHeaderNamesChannel = false;  // the line decides the channel
    using Key = mdp3::Key;
    using SessionState = mdp3::SessionState;
    using Decoder = PacketDecoder;
    using Rules = mdp3::Rules;  // its sequencing rules (rules.hpp)
    using Book = Rules::Book;
    using Recovery = SnapshotFeedControl;  // joins the snapshot feed while an instrument needs it

    [[nodiscard]] static Key read_key(std::span<const std::byte> d, std::uint16_t line_channel) noexcept {
        return mdp3::read_key(d, line_channel);
    }
    [[nodiscard]] static constexpr std::size_t max_events_for(std::size_t len) noexcept {
        return mdp3::max_events_for(len);
    }

    // Start-up: the decoder's capacities from the config — instrument
    // slots (capacity.max_instruments), stored definitions ([mdp3]
    // max_definitions) and the subscribed symbols, whose definitions take a
    // slot before they trade (instruments.subscribe).
    // What configure() makes the decoder reserve, and what of it is
    // resident at start-up: the memory estimate's part (config.hpp).
    [[nodiscard]] static MemoryPart decoder_memory(const Config& cfg) {
        return {"decoder tables", {"mdp3.max_definitions", "capacity.max_instruments"},
                PacketDecoder::bytes_for(cfg.capacity.max_instruments, cfg.mdp3.max_definitions),
                PacketDecoder::resident_bytes_for(cfg.capacity.max_instruments)};
    }
    static void configure(PacketDecoder& dec, const Config& cfg) {
        dec.set_capacity(cfg.capacity.max_instruments, cfg.mdp3.max_definitions);
        for (const std::string& symbol : cfg.subscribe)
            (void)dec.subscribe_symbol(symbol, static_cast<std::uint32_t>(cfg.subscribe.size()));  // validated: fits
    }

    // The summary's MDP3 part (MDP3.md "Summary and replay") of a handler
    // that has finished (offline or live: its protocol_decoder()): per
    // channel its packet figures (named by `names` where a replay without
    // config numbered the destinations), per instrument its SecurityID and
    // book_errors, and the definitions stored. Cold path.
    // A channel's figures as the decoder counts them now (any thread: relaxed counters).
    [[nodiscard]] static VenueChannelCounts channel_counts(const PacketDecoder& dec, std::uint32_t slot) noexcept {
        const ChannelCounters& c = dec.channel_counters(slot);
        return {dec.channel_id(slot), c.packets.get(), c.duplicate_packets.get(), c.gaps.get(),
                c.lost_packets.get(), c.resets.get(), c.unknown_templates.get()};
    }

    template <class Handler>
    [[nodiscard]] static VenueSummary venue_summary(const Handler& h, const ChannelNames& names) {
        const PacketDecoder& dec = h.protocol_decoder();
        VenueSummary v;
        for (std::uint32_t slot = 0; slot < dec.channel_count(); ++slot) {
            VenueChannelSummary ch;
            static_cast<VenueChannelCounts&>(ch) = channel_counts(dec, slot);
            const std::uint16_t id = dec.channel_id(slot);
            ch.id = id;
            for (const auto& [named, name] : names)
                if (named == id) {
                    ch.id.reset();
                    ch.name = name;
                }
            v.channels.push_back(std::move(ch));
        }
        const std::uint32_t n = std::min(dec.securities().size(), h.instruments().max_instruments());
        for (std::uint32_t i = 0; i < n; ++i) {
            v.venue_ids.push_back(dec.securities().security_id(i));
            v.book_errors.push_back(h.book().book_errors(i));
        }
        v.definitions = VenueDefinitions{dec.definitions().size(), dec.definitions().capacity(),
                                         dec.mdp3_counters().dropped_definitions.get()};
        return v;
    }

    // The metrics' MDP3 part, on the engine thread every publish, no
    // allocation: the channels' figures (kChannelCounterFields; the
    // decoder's thread writes them, relaxed counters), and for an
    // instrument the engine has seen (MetricsRegistry::Venue) its SecurityID
    // (its slot was written before its first event crossed the ring) and book errors.
    static constexpr std::span<const ChannelCounterGroup> kChannelCounterGroups = mdp3::kChannelCounterGroups;
    template <class Handler>
    static std::size_t sample_channel_counters(const Handler& h, std::span<ChannelCounterSample> out) noexcept {
        const PacketDecoder& dec = h.protocol_decoder();
        const std::size_t n = std::min<std::size_t>(dec.channel_count(), out.size());
        for (std::uint32_t slot = 0; slot < n; ++slot) {
            const VenueChannelCounts c = channel_counts(dec, slot);
            out[slot].channel = c.channel;
            out[slot].groups = 1u;
            ChannelRows::load(c, out[slot].values);
        }
        return n;
    }
    template <class Handler>
    static void venue_instrument(const Handler& h, std::uint32_t id, std::int64_t& venue_id,
                                 std::uint64_t& book_errors) noexcept {
        venue_id = h.protocol_decoder().securities().security_id(id);
        book_errors = h.book().book_errors(id);
    }
};

static_assert(VenueProtocol<Protocol>);

}  // namespace tickgate::mdp3
