// The live sink on the network thread: each datagram's key (read once by
// the receiver) is observed by the channel table, merged across lines A/B
// by the arbiter, decoded into Events and published to the ring, a whole
// packet at a time. Never blocks: a packet that does not fit is dropped and
// counted, and its instruments are marked suspect (a DataLost event) as
// soon as the ring has room again. Network thread only; counters readable anywhere.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tickgate/counter.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/channels.hpp"
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

    // `channel_ids`: the configured channels (they own the channel table's
    // slots). With rc.arbitration, their lines A and B are merged first
    // (arbiter.hpp); hold and window from the receiver config.
    RingPublisher(SpscRing<Event>& ring, std::uint32_t max_instruments, const ReceiverConfig& rc,
                  std::span<const std::uint16_t> channel_ids)
        : ring_(ring),
          arbitrate_(rc.arbitration),
          streams_(channel_ids),
          arbiter_(rc.arbitration ? static_cast<std::uint32_t>(streams_.size()) : 0, rc.arbitration_window,
                   std::int64_t{rc.arbitration_hold_us} * 1000),
          scratch_(P::max_events_for(Receiver::kSlotBytes)),
          pending_flag_(max_instruments, 0) {
        pending_ids_.reserve(max_instruments);
        pending_sessions_.reserve(kPendingSessions);
    }
    // What the constructor allocates (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t max_instruments, const ReceiverConfig& rc,
                                               std::uint32_t channels) noexcept {
        return (rc.arbitration ? PacketArbiter<P>::bytes_for(channels, rc.arbitration_window) : 0) +
               ChannelStreams<P>::bytes_for(channels) + P::max_events_for(Receiver::kSlotBytes) * sizeof(Event) +
               std::size_t{max_instruments} * 2 * sizeof(std::uint32_t) + kPendingSessions * sizeof(Event);
    }

    // One received datagram and its key (Receiver::poll_once<P>).
    void operator()(const RawDatagram& d, const Key& key) noexcept {
        const auto seen = streams_.observe(key, d.line, &d.stats->seq_gaps);
        if (!arbitrate_) return publish(d.payload, key, seen.mark, d.recv_ns, d.line);
        arbiter_.offer(d.payload, key, seen, d.recv_ns, d.line, Publish{*this});
    }
    // A datagram larger than the receive slot was dropped by the receiver:
    // malformed, as the spec counts a datagram it cannot read whole.
    void oversized() noexcept { decoder_.count_malformed_unread(); }
    // Releases arbitration holds whose time is up; call when idle.
    void expire(std::int64_t now_ns) noexcept {
        if (arbitrate_) arbiter_.expire(now_ns, Publish{*this});
    }
    // Earliest arbitration deadline (INT64_MAX: nothing held).
    [[nodiscard]] std::int64_t next_deadline() const noexcept {
        return arbitrate_ ? arbiter_.next_deadline() : INT64_MAX;
    }

    [[nodiscard]] const ArbiterCounters& arbiter_counters() const noexcept { return arbiter_.counters(); }
    [[nodiscard]] const DecoderCounters& decoder_counters() const noexcept { return decoder_.counters(); }
    [[nodiscard]] const PublisherCounters& counters() const noexcept { return counters_; }

private:
    static constexpr std::size_t kPendingSessions = 64;
    struct Publish {
        RingPublisher& self;
        void operator()(std::span<const std::byte> p, const Key& k, SessionMark m, std::int64_t t,
                        std::uint8_t l) const noexcept {
            self.publish(p, k, m, t, l);
        }
    };

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

    void publish(std::span<const std::byte> payload, const Key& key, SessionMark mark, std::int64_t recv_ns,
                 std::uint8_t line) noexcept {
        std::size_t n = 0;
        decoder_.decode(payload, key, mark, recv_ns, line, [&](const Event& ev) { scratch_[n++] = ev; });
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
    bool arbitrate_;
    ChannelStreams<P> streams_;  // the one session state per channel
    PacketArbiter<P> arbiter_;
    typename P::Decoder decoder_;
    std::vector<Event> scratch_;                  // one packet's events
    std::vector<std::uint32_t> pending_flag_;     // [instrument]: channel + 1 when a DataLost is owed
    std::vector<std::uint32_t> pending_ids_;
    std::vector<Event> pending_sessions_;         // session changes of dropped packets
    PublisherCounters counters_;
};

}  // namespace tickgate
