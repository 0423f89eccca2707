// The live sink on the network thread of the two-thread pipeline: each
// datagram goes through the protocol's front (FrontOf: the channel table,
// then the A/B arbiter and decoder, or MoldUDP64's stream) and its Events are published to the ring, a whole packet at a
// time. An event is written once, straight into its ring slot, whenever the
// ring has room for the largest packet's events; only when it has not are a
// packet's events collected aside first, to be published or dropped whole.
// Never blocks: a packet that does not fit is dropped and counted, and its
// instruments are marked suspect (a DataLost event) as soon as the ring has
// room again. Network thread only; counters readable anywhere.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tickgate/counter.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/arbitrated_decoder.hpp"
#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/protocol.hpp"
#include "tickgate/spsc_ring.hpp"

namespace tickgate {

struct PublisherCounters {
    RelaxedCounter ring_overflow_packets;  // datagrams dropped because the ring was full
    RelaxedCounter ring_overflow_events;
    RelaxedCounter data_lost_marks;        // DataLost events delivered after an overflow
};

template <VenueProtocol P>
class RingPublisher {
public:
    using Key = typename P::Key;

    // The front is the protocol's (FrontOf: its channels, lines and hole policy from `cfg`).
    RingPublisher(SpscRing<Event>& ring, std::uint32_t max_instruments, const Config& cfg)
        : ring_(ring),
          front_(cfg),
          scratch_(kMaxPacketEvents),
          pending_flag_(max_instruments, 0) {
        pending_ids_.reserve(max_instruments);
        pending_sessions_.reserve(kPendingSessions);
    }
    // What the constructor allocates (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t max_instruments, const Config& cfg) noexcept {
        return FrontOf<P>::bytes_for(cfg) + kMaxPacketEvents * sizeof(Event) +
               std::size_t{max_instruments} * 2 * sizeof(std::uint32_t) + kPendingSessions * sizeof(Event);
    }

    // One received datagram and its key (Receiver::poll_once<P>).
    void operator()(const RawDatagram& d, const Key& key) noexcept { front_.offer(d, key, *this); }
    // A datagram larger than the receive slot was dropped by the receiver.
    void oversized() noexcept { front_.oversized(); }
    // Releases arbitration holds whose time is up; call when idle.
    void expire(std::int64_t now_ns) noexcept { front_.expire(now_ns, *this); }
    // Earliest arbitration deadline (INT64_MAX: nothing held).
    [[nodiscard]] std::int64_t next_deadline() const noexcept { return front_.next_deadline(); }

    // Start-up (ArbitratedDecoder::configure).
    void configure(const Config& cfg) { front_.configure(cfg); }
    // Network thread, or once it has stopped.
    [[nodiscard]] decltype(auto) protocol_decoder() const noexcept { return front_.protocol_decoder(); }

    [[nodiscard]] const ArbiterCounters& arbiter_counters() const noexcept { return front_.arbiter_counters(); }
    [[nodiscard]] const DecoderCounters& decoder_counters() const noexcept { return front_.decoder_counters(); }
    [[nodiscard]] const PublisherCounters& counters() const noexcept { return counters_; }

    // PacketEventSink of the front: a packet's events are staged in the ring
    // and published whole at its end; when the ring may not hold them all,
    // collected aside and published or dropped whole.
    void on_event(const Event& ev) noexcept {
        if (packet_events_ == 0) [[unlikely]]
            direct_ = pending_ids_.empty() && pending_sessions_.empty() && ring_.writable(kMaxPacketEvents) >= kMaxPacketEvents;
        if (direct_) [[likely]]
            ring_.stage(ev);
        else
            scratch_[packet_events_] = ev;
        ++packet_events_;
    }
    void on_packet_end() noexcept {
        if (direct_)
            ring_.publish();
        else
            publish(packet_events_);
        packet_events_ = 0;
        direct_ = false;
    }

private:
    static constexpr std::size_t kPendingSessions = 64;
    // The most events one received datagram can decode into.
    static constexpr std::size_t kMaxPacketEvents = P::max_events_for(Receiver::kSlotBytes);

    // Delivers the DataLost marks and session changes owed after an
    // overflow; false if the ring has no room for them yet.
    bool flush_pending() noexcept {
        const std::size_t owed = pending_sessions_.size() + pending_ids_.size();
        if (ring_.writable(owed) < owed) return false;
        for (const Event& ev : pending_sessions_) ring_.stage(ev);
        Event lost{};
        lost.kind = EventKind::kDataLost;
        lost.recv_ns = realtime_ns();
        for (const std::uint32_t id : pending_ids_) {
            lost.instrument_id = id;
            lost.channel_id = static_cast<std::uint16_t>(pending_flag_[id] - 1);
            ring_.stage(lost);
            pending_flag_[id] = 0;
        }
        counters_.data_lost_marks.add(pending_ids_.size());
        pending_sessions_.clear();
        pending_ids_.clear();
        ring_.publish();
        return true;
    }

    // Publishes the first `n` events of scratch_ (one packet's).
    void publish(std::size_t n) noexcept {
        if (n == 0) return;
        if ((pending_ids_.empty() && pending_sessions_.empty()) || flush_pending()) {
            if (ring_.writable(n) >= n) {
                for (std::size_t i = 0; i < n; ++i) ring_.stage(scratch_[i]);
                ring_.publish();
                return;
            }
        }
        // The engine is behind: drop the packet, remember whom it concerned.
        counters_.ring_overflow_packets.add();
        counters_.ring_overflow_events.add(n);
        for (std::size_t i = 0; i < n; ++i) {
            const Event& ev = scratch_[i];
            if (ev.kind == EventKind::kSessionChange) {
                if (pending_sessions_.size() < pending_sessions_.capacity()) pending_sessions_.push_back(ev);
                continue;
            }
            if (ev.kind == EventKind::kSnapshotLevels || ev.instrument_id >= pending_flag_.size()) continue;
            if (pending_flag_[ev.instrument_id] == 0) pending_ids_.push_back(ev.instrument_id);
            pending_flag_[ev.instrument_id] = std::uint32_t{ev.channel_id} + 1;
        }
    }

    SpscRing<Event>& ring_;
    FrontOf<P> front_;
    std::vector<Event> scratch_;                  // one packet's events, when the ring may not hold them
    std::size_t packet_events_ = 0;               // of the packet being decoded
    bool direct_ = false;                         // its events are staged in the ring
    std::vector<std::uint32_t> pending_flag_;     // [instrument]: channel + 1 when a DataLost is owed
    std::vector<std::uint32_t> pending_ids_;
    std::vector<Event> pending_sessions_;         // session changes of dropped packets
    PublisherCounters counters_;
};

}  // namespace tickgate
