// Live multicast receive: joins lines A and B of every configured channel on
// loopback-safe sockets (Boost.Asio for set-up, recvmmsg on the native
// handles for the hot loop), kernel receive timestamps and drop counters,
// source filtering and per-line statistics. One network thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/counter.hpp"
#include "tickgate/event.hpp"
#include "tickgate/spsc_ring.hpp"
#include "tickgate/feed/qfb1/wire.hpp"

struct pollfd;

namespace tickgate {

// Wall-clock time in Unix ns (the clock kernel receive timestamps use).
[[nodiscard]] std::int64_t realtime_ns() noexcept;

struct LineStats {
    std::uint16_t channel_id = 0;
    std::uint8_t line = 0;  // 0 = A, 1 = B
    std::string group;
    std::uint16_t port = 0;
    RelaxedCounter packets;
    RelaxedCounter bytes;
    RelaxedCounter seq_gaps;         // packets missing on this line (packet_seq gaps)
    RelaxedCounter kernel_drops;     // SO_RXQ_OVFL: datagrams the socket buffer dropped
    RelaxedCounter rejected_source;  // datagrams from a source not in the channel's list
    RelaxedCounter foreign_channel_packets;  // header names another channel: dropped (QFB1.md rule 7)
    RelaxedCounter oversized;        // malformed: larger than the 2,048-byte receive slot, dropped whole
    RelaxedCounter recv_errors;      // recvmmsg failures other than EAGAIN/EWOULDBLOCK/EINTR
};

struct RawDatagram {
    std::span<const std::byte> payload;
    std::int64_t recv_ns;   // kernel timestamp (SO_TIMESTAMPNS) or realtime at receive
    std::uint32_t src_ip;   // host order
    std::uint16_t src_port;
    std::uint32_t dst_ip;   // the line's group
    std::uint16_t dst_port;
    std::uint8_t line;
    std::uint16_t channel_id;  // configured channel of the socket
};

// Opens, binds and joins every line's socket at construction (throws
// std::runtime_error naming the line on failure). poll_once() then runs on
// the network thread only; statistics are readable from any thread.
// A datagram whose header names another channel than its socket's is
// dropped here and counted (rule 7: a channel is where a packet arrived).
class Receiver {
public:
    explicit Receiver(const Config& cfg);
    ~Receiver();
    Receiver(const Receiver&) = delete;
    Receiver& operator=(const Receiver&) = delete;
    // What the receive batch of `batch` datagrams takes (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t batch_bytes(std::uint32_t batch) noexcept;

    // Receives up to one batch per socket and calls sink(const RawDatagram&)
    // for each accepted datagram (not for a rejected source, nor for a
    // datagram larger than the receive slot: each is counted per line). Waits up to `timeout_ns` for data
    // (0 = do not wait: busy-poll). Returns the number of datagrams handed on.
    template <class Sink>
    int poll_once(std::int64_t timeout_ns, Sink&& sink);

    [[nodiscard]] std::span<const std::unique_ptr<LineStats>> lines() const noexcept { return stats_; }
    // After poll_once(): a time (realtime ns) before which every datagram
    // that reached the sockets has been handed on (all sockets came back
    // short of a full batch), or 0 if some socket may hold more. Holds
    // waiting for the other line may be given up only up to this time.
    [[nodiscard]] std::int64_t drained_until() const noexcept { return drained_until_; }

private:
    struct Socket;
    struct Batch;
    int wait(std::int64_t timeout_ns) noexcept;              // ppoll(2) on all sockets
    int receive(std::size_t socket_index) noexcept;          // recvmmsg into the batch
    const RawDatagram* datagram(std::size_t socket_index, int i) noexcept;  // nullptr: rejected

    std::vector<std::unique_ptr<Socket>> sockets_;
    std::size_t batch_size_ = 1;
    std::vector<std::unique_ptr<LineStats>> stats_;
    std::unique_ptr<Batch> batch_;
    std::unique_ptr<::pollfd[]> pollfds_;
    RawDatagram current_{};
    bool oversized_ = false;  // datagram() returned nullptr for an oversized datagram
    std::int64_t drained_until_ = 0;
};

template <class Sink>
int Receiver::poll_once(std::int64_t timeout_ns, Sink&& sink) {
    const std::int64_t before = realtime_ns();
    drained_until_ = before;
    if (timeout_ns > 0 && wait(timeout_ns) <= 0) return 0;
    const std::int64_t start = realtime_ns();
    bool drained = true;
    int handed = 0;
    for (std::size_t s = 0; s < sockets_.size(); ++s) {
        const int n = receive(s);
        drained &= static_cast<std::size_t>(n) < batch_size_;
        for (int i = 0; i < n; ++i) {
            if (const RawDatagram* d = datagram(s, i)) {
                sink(*d);
                ++handed;
            } else if (oversized_) {
                // A sink that decodes counts it as malformed too; one that
                // only records (capture) has nothing to do with it.
                if constexpr (requires { sink.oversized(); }) sink.oversized();
            }
        }
    }
    drained_until_ = drained ? start : 0;
    return handed;
}

struct PublisherCounters {
    RelaxedCounter ring_overflow_packets;  // datagrams dropped because the ring was full
    RelaxedCounter ring_overflow_events;
    RelaxedCounter data_lost_marks;        // DataLost events delivered after an overflow
};

// The live sink on the network thread: decodes each datagram into Events
// and publishes them to the ring, a whole packet at a time. Never blocks: a
// packet that does not fit is dropped and counted, and its instruments are
// marked suspect (a DataLost event) as soon as the ring has room again.
class RingPublisher {
public:
    // With `arbitrate`, lines A and B of each of `channel_ids` (the
    // configured channels) are merged by packet_seq first (see arbiter.hpp);
    // hold and window from the receiver config.
    RingPublisher(SpscRing<Event>& ring, std::uint32_t max_instruments, const ReceiverConfig& rc,
                  std::span<const std::uint16_t> channel_ids);
    // What the constructor allocates, arbiter and decoder included
    // (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t max_instruments, const ReceiverConfig& rc,
                                               std::uint32_t channels) noexcept;

    void operator()(const RawDatagram& d) noexcept;
    // A datagram larger than the receive slot was dropped by the receiver:
    // malformed, as the spec counts a datagram it cannot read whole.
    void oversized() noexcept { decoder_.count_malformed_unread(); }
    // Releases arbitration holds whose time is up; call when idle.
    void expire(std::int64_t now_ns) noexcept;
    // Earliest arbitration deadline (INT64_MAX: nothing held).
    [[nodiscard]] std::int64_t next_deadline() const noexcept {
        return arbitrate_ ? arbiter_.next_deadline() : INT64_MAX;
    }
    [[nodiscard]] const ArbiterCounters& arbiter_counters() const noexcept { return arbiter_.counters(); }

    [[nodiscard]] const wire::DecoderCounters& decoder_counters() const noexcept { return decoder_.counters(); }
    [[nodiscard]] const PublisherCounters& counters() const noexcept { return counters_; }

private:
    bool flush_pending() noexcept;
    void publish(std::span<const std::byte> payload, std::int64_t recv_ns, std::uint8_t line) noexcept;

    SpscRing<Event>& ring_;
    bool arbitrate_;
    PacketArbiter arbiter_;
    wire::PacketDecoder decoder_;
    std::vector<Event> scratch_;                  // one packet's events
    std::vector<std::uint32_t> pending_flag_;     // [instrument]: channel + 1 when a DataLost is owed
    std::vector<std::uint32_t> pending_ids_;
    std::vector<Event> pending_sessions_;         // session changes of dropped packets
    PublisherCounters counters_;
};

// A loopback-only multicast sender (simulator, `tickgate send`, tests):
// IP_MULTICAST_IF = the interface (must be a 127.x address), TTL 0, loop on,
// so nothing ever leaves the host. Throws std::runtime_error at set-up.
class MulticastSender {
public:
    explicit MulticastSender(const std::string& interface = "127.0.0.1", const std::string& bind_ip = "");
    ~MulticastSender();
    MulticastSender(const MulticastSender&) = delete;
    MulticastSender& operator=(const MulticastSender&) = delete;
    // Sends one datagram to group:port (host order); the group must be
    // multicast (224.0.0.0/4). Returns false if the kernel refused it.
    bool send(std::uint32_t group, std::uint16_t port, std::span<const std::byte> payload) noexcept;

private:
    int fd_ = -1;
};

}  // namespace tickgate
