// The live front of both threading pipelines: each received datagram's key
// (read once by the receiver) is observed by the channel table, lines A/B
// are merged by the arbiter, and each packet that comes out is decoded into
// Events. Where the Events go is the caller's: the ring (RingPublisher, the
// two-thread pipeline) or the sequencer on the same thread
// (BasicInlineFeedHandler). One thread (the one that receives); no
// allocation after construction; counters readable from any thread.
#pragma once

#include <cstdint>
#include <span>

#include "tickgate/event.hpp"
#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate {

// What ArbitratedDecoder hands its packets' events to: on_event(ev) for
// each event of a packet, then on_packet_end() once the packet is decoded.
template <class S>
concept PacketEventSink = requires(S& s, const Event& ev) {
    s.on_event(ev);
    s.on_packet_end();
};

template <VenueProtocol P>
class ArbitratedDecoder {
public:
    using Key = typename P::Key;

    // `channel_ids`: the configured channels (they own the channel table's
    // slots). With rc.arbitration, their lines A and B are merged first
    // (arbiter.hpp); hold and window from the receiver config.
    explicit ArbitratedDecoder(const Config& cfg) : ArbitratedDecoder(cfg.receiver, cfg.channel_ids()) {}
    ArbitratedDecoder(const ReceiverConfig& rc, std::span<const std::uint16_t> channel_ids)
        : arbitrate_(rc.arbitration),
          streams_(channel_ids),
          arbiter_(rc.arbitration ? static_cast<std::uint32_t>(streams_.size()) : 0, rc.arbitration_window,
                   std::int64_t{rc.arbitration_hold_us} * 1000) {}
    // What the constructor allocates (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t bytes_for(const ReceiverConfig& rc, std::uint32_t channels) noexcept {
        return (rc.arbitration ? PacketArbiter<P>::bytes_for(channels, rc.arbitration_window) : 0) +
               ChannelStreams<P>::bytes_for(channels);
    }
    [[nodiscard]] static std::size_t bytes_for(const Config& cfg) noexcept {
        return bytes_for(cfg.receiver, static_cast<std::uint32_t>(cfg.channels.size()));
    }

    // One received datagram and its key (Receiver::poll_once<P>): its events,
    // and those of every held packet it releases, in order, go to `sink`.
    template <PacketEventSink Sink>
    void offer(const RawDatagram& d, const Key& key, Sink& sink) noexcept {
        if constexpr (HasUnarbitratedLines<P>) {
            if (is_unarbitrated_line(d.line)) {  // a snapshot or definition line: its own MsgSeqNum, no A/B
                decoder_.decode_unarbitrated(d.payload, key, d.recv_ns, d.line,
                                             [&](const Event& ev) __attribute__((always_inline)) { sink.on_event(ev); });
                sink.on_packet_end();
                return;
            }
        }
        const auto seen = streams_.observe(key, d.line, &d.stats->seq_gaps);
        if (!arbitrate_) return decode(d.payload, key, seen.mark, d.recv_ns, d.line, sink);
        arbiter_.offer(d.payload, key, seen, d.recv_ns, d.line, Decode<Sink>{*this, sink});
    }
    // A datagram larger than the receive slot was dropped by the receiver:
    // malformed, as the spec counts a datagram it cannot read whole.
    void oversized() noexcept { decoder_.count_malformed_unread(); }
    // Releases arbitration holds whose time is up (see PacketArbiter::expire
    // for which `now_ns` is safe: Receiver::drained_until()).
    template <PacketEventSink Sink>
    void expire(std::int64_t now_ns, Sink& sink) noexcept {
        if (arbitrate_) arbiter_.expire(now_ns, Decode<Sink>{*this, sink});
    }
    // Earliest arbitration deadline (INT64_MAX: nothing held).
    [[nodiscard]] std::int64_t next_deadline() const noexcept {
        return arbitrate_ ? arbiter_.next_deadline() : INT64_MAX;
    }

    // Start-up: the protocol decoder's own capacities from the config (P::configure, if it has one).
    void configure(const Config& cfg) {
        if constexpr (requires { P::configure(decoder_, cfg); }) P::configure(decoder_, cfg);
    }

    [[nodiscard]] const ArbiterCounters& arbiter_counters() const noexcept { return arbiter_.counters(); }
    [[nodiscard]] const DecoderCounters& decoder_counters() const noexcept { return decoder_.counters(); }
    // The protocol's own decoder (its own figures). Network thread, or once it has stopped.
    [[nodiscard]] const typename P::Decoder& protocol_decoder() const noexcept { return decoder_; }

private:
    template <class Sink>
    struct Decode {
        ArbitratedDecoder& self;
        Sink& sink;
        void operator()(std::span<const std::byte> p, const Key& k, SessionMark m, std::int64_t t,
                        std::uint8_t l) const noexcept {
            self.decode(p, k, m, t, l, sink);
        }
    };

    template <class Sink>
    void decode(std::span<const std::byte> payload, const Key& key, SessionMark mark, std::int64_t recv_ns,
                std::uint8_t line, Sink& sink) noexcept {
        // Forced inline: the sink's on_event then inlines at each of the
        // decoder's sites (inline_feed_handler.hpp Apply).
        decoder_.decode(payload, key, mark, recv_ns, line,
                        [&](const Event& ev) __attribute__((always_inline)) { sink.on_event(ev); });
        sink.on_packet_end();
    }

    bool arbitrate_;
    ChannelStreams<P> streams_;  // the one session state per channel
    PacketArbiter<P> arbiter_;
    typename P::Decoder decoder_;
};

namespace detail {
template <class P>
struct FrontOf {
    using type = ArbitratedDecoder<P>;
};
template <class P>
    requires requires { typename P::Front; }
struct FrontOf<P> {
    using type = typename P::Front;
};
}  // namespace detail

// The live front a protocol's hole policy needs: P::Front where it has its
// own (MoldUDP64's stream: hold and re-request), else the A/B
// ArbitratedDecoder (give up after the hold). Both are built from the
// Config and offer the same calls: offer, oversized, expire, next_deadline,
// configure, the counters and protocol_decoder(); bytes_for(cfg).
template <VenueProtocol P>
using FrontOf = typename detail::FrontOf<P>::type;

}  // namespace tickgate
