// The channel table: the one place a channel's session lives. Every
// datagram's key (read once) is observed here before anything else uses
// it; the arbiter and the decoder act on the SessionMark it returns, and
// each line's own sequence gaps are counted here too.
// Fixed capacity; no allocation after construction; one thread.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "tickgate/counter.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate {

template <VenueProtocol P>
class ChannelStreams {
public:
    static constexpr std::uint32_t kUntracked = std::numeric_limits<std::uint32_t>::max();
    static constexpr std::size_t kChannelIds = 65536;

    // The configured channels own the slots, in the order given (live, and
    // replay with a config); another channel id is untracked.
    explicit ChannelStreams(std::span<const std::uint16_t> channel_ids)
        : index_(kChannelIds, kNoSlot), fixed_(true) {
        channels_.reserve(channel_ids.size());
        for (const std::uint16_t id : channel_ids)
            if (index_[id] == kNoSlot) {
                index_[id] = static_cast<std::uint16_t>(channels_.size());
                channels_.emplace_back();
            }
    }
    // Offline without a config: any channel id takes a slot when first seen
    // (room for every id is reserved: untouched until used).
    ChannelStreams() : index_(kChannelIds, kNoSlot), fixed_(false) { channels_.reserve(kChannelIds); }

    // What a configured table allocates (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t bytes_for(std::size_t channels) noexcept {
        return kChannelIds * sizeof(std::uint16_t) + channels * sizeof(Channel);
    }

    struct Observed {
        std::uint32_t slot;  // dense channel index, kUntracked if none
        SessionMark mark;
    };
    // Classifies `key`'s session on its channel and, given `line_gaps`, for
    // line 0 (A) or 1 (B), counts the packets that line skipped into it.
    // An invalid key, or an untracked channel, gets {kUntracked, kCurrent}.
    [[gnu::always_inline]] Observed observe(const typename P::Key& key, std::uint8_t line,
                                            RelaxedCounter* line_gaps) noexcept {
        if (!key.valid()) return {kUntracked, SessionMark::kCurrent};
        std::uint16_t& idx = index_[key.channel];
        if (idx == kNoSlot) {
            if (fixed_ || channels_.size() >= kNoSlot) return {kUntracked, SessionMark::kCurrent};
            idx = static_cast<std::uint16_t>(channels_.size());
            channels_.emplace_back();
        }
        Channel& ch = channels_[idx];
        const SessionMark mark = ch.session.observe(key);
        if (mark == SessionMark::kFirst || mark == SessionMark::kNewer) ch.line_started[0] = ch.line_started[1] = false;
        if (line_gaps != nullptr && mark != SessionMark::kStale && line < 2) count_line_gap(ch, key, line, *line_gaps);
        return {idx, mark};
    }

    [[nodiscard]] std::size_t size() const noexcept { return channels_.size(); }
    // The slot of channel id `channel`, kUntracked if it has none.
    [[nodiscard]] std::uint32_t slot_of(std::uint16_t channel) const noexcept {
        return index_[channel] == kNoSlot ? kUntracked : index_[channel];
    }

private:
    static constexpr std::uint16_t kNoSlot = 0xFFFF;
    struct Channel {
        typename P::SessionState session{};
        std::uint64_t line_last[2] = {0, 0};  // per line: the highest seq it carried this session
        bool line_started[2] = {false, false};
    };

    static void count_line_gap(Channel& ch, const typename P::Key& key, std::uint8_t line,
                               RelaxedCounter& gaps) noexcept {
        std::uint64_t& last = ch.line_last[line];
        const std::uint64_t seq = key.seq;
        if (!ch.line_started[line]) {
            ch.line_started[line] = true;
        } else if (seq > last) {
            if (seq - last > 1) gaps.add(seq - last - 1);
        } else {
            return;  // an older packet: the line's gap was counted when it was skipped
        }
        last = key.next_seq() - 1;  // the last position the packet holds
    }

    std::vector<std::uint16_t> index_;  // channel id -> slot (the only such table)
    std::vector<Channel> channels_;
    bool fixed_;
};

// A protocol whose channels have lines outside A/B arbitration (MDP3's
// snapshot and definition lines, config.hpp is_unarbitrated_line): its
// decoder takes their datagrams as they come, outside the channel's session.
template <class P>
concept HasUnarbitratedLines =
    requires(typename P::Decoder& d, std::span<const std::byte> b, const typename P::Key& k) {
        d.decode_unarbitrated(b, k, std::int64_t{}, std::uint8_t{}, detail::EventSinkArchetype{});
    };

// Decodes datagrams of any channel, keeping each channel's session: the
// key read once, observed by a ChannelStreams, then P's decoder. What the
// offline handler and tests use; the live path splits the same steps
// across the receiver, the arbiter and the ring. One thread.
template <VenueProtocol P>
class SessionDecoder {
public:
    // Decodes `d` (arrived at `recv_ns` on `line`, channel `line_channel` if
    // the transport knows it) into sink(const Event&).
    template <class Sink>
    DecodeResult decode(std::span<const std::byte> d, std::int64_t recv_ns, std::uint8_t line, Sink&& sink,
                        std::uint16_t line_channel = 0) noexcept {
        const typename P::Key key = P::read_key(d, line_channel);
        return decode(d, key, streams_.observe(key, line, nullptr).mark, recv_ns, line, sink);
    }
    // The same for a datagram whose key the caller has read and observed.
    template <class Sink>
    DecodeResult decode(std::span<const std::byte> d, const typename P::Key& key, SessionMark mark,
                        std::int64_t recv_ns, std::uint8_t line, Sink&& sink) noexcept {
        return decoder_.decode(d, key, mark, recv_ns, line, sink);
    }

    // A datagram of a line outside arbitration (HasUnarbitratedLines).
    template <class Sink>
        requires HasUnarbitratedLines<P>
    DecodeResult decode_unarbitrated(std::span<const std::byte> d, const typename P::Key& key, std::int64_t recv_ns,
                                     std::uint8_t line, Sink&& sink) noexcept {
        return decoder_.decode_unarbitrated(d, key, recv_ns, line, sink);
    }

    // Start-up: the protocol decoder's own capacities from the config (P::configure, if it has one).
    void configure(const Config& cfg) {
        if constexpr (requires { P::configure(decoder_, cfg); }) P::configure(decoder_, cfg);
    }

    [[nodiscard]] const DecoderCounters& counters() const noexcept { return decoder_.counters(); }
    // The protocol's own decoder (its own figures: MDP3's channels and SecurityIDs).
    [[nodiscard]] const typename P::Decoder& protocol_decoder() const noexcept { return decoder_; }
    // Start-up only (its own capacities, as configure() sets them).
    [[nodiscard]] typename P::Decoder& protocol_decoder() noexcept { return decoder_; }
    void count_malformed_unread() noexcept { decoder_.count_malformed_unread(); }
    [[nodiscard]] ChannelStreams<P>& streams() noexcept { return streams_; }

private:
    ChannelStreams<P> streams_;
    typename P::Decoder decoder_;
};

}  // namespace tickgate
