// Live multicast receive: joins lines A and B of every configured channel on
// loopback-safe sockets (Boost.Asio for set-up, recvmmsg on the native
// handles for the hot loop), kernel receive timestamps and drop counters,
// source filtering and per-line statistics; with a protocol, each
// datagram's key is read here, once. One network thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <type_traits>

#include "tickgate/counter.hpp"
#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/protocol.hpp"

struct pollfd;

namespace tickgate {

class XdpPort;

struct LineStats {
    std::uint16_t channel_id = 0;
    std::uint8_t line = 0;  // kLineA, kLineB, MDP3's snapshot and definition lines (config.hpp)
    std::string group;
    std::uint16_t port = 0;
    RelaxedCounter packets;
    RelaxedCounter bytes;
    RelaxedCounter seq_gaps;         // packets missing on this line (sequence gaps; counted by the channel table)
    RelaxedCounter kernel_drops;     // SO_RXQ_OVFL: datagrams the socket buffer dropped
    RelaxedCounter rejected_source;  // datagrams from a source not in the channel's list
    RelaxedCounter foreign_channel_packets;  // header names another channel: dropped (QFB1.md rule 7)
    RelaxedCounter oversized;        // malformed: larger than the 2,048-byte receive slot, dropped whole
    RelaxedCounter recv_errors;      // recvmmsg failures other than EAGAIN/EWOULDBLOCK/EINTR
    // MDP3's snapshot lines (MDP3.md "Snapshot"): joins and leaves of the
    // line's group (receiving thread), the suspect or unconfirmed
    // instruments its snapshots made clean (the sequencer's thread), and
    // failed joins/leaves (retried).
    RelaxedCounter snapshot_joins;
    RelaxedCounter snapshot_leaves;
    RelaxedCounter snapshot_recoveries;
    RelaxedCounter membership_errors;
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
    LineStats* stats;          // the line's statistics (network thread writes)
};

// Opens, binds and joins every line's socket at construction (MDP3's
// snapshot lines: opened and bound, joined only while wanted) (throws
// std::runtime_error naming the line on failure). poll_once() then runs on
// the network thread only; statistics are readable from any thread.
// With a protocol P whose header names its channel, a datagram naming
// another channel than its socket's is dropped here and counted (QFB1.md
// rule 7: a channel is where a packet arrived).
class Receiver {
public:
    explicit Receiver(const Config& cfg);
    ~Receiver();
    Receiver(const Receiver&) = delete;
    Receiver& operator=(const Receiver&) = delete;
    // What the receive slots of `cfg` take: one batch per socket (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t batch_bytes(const Config& cfg) noexcept;

    // Receive slot per datagram: larger datagrams are dropped (oversized).
    static constexpr std::size_t kSlotBytes = 2048;

    // Receives up to one batch per socket and calls sink(const RawDatagram&)
    // — with a protocol P, sink(const RawDatagram&, const P::Key&), the
    // datagram's header read once — for each accepted datagram (not for a
    // rejected source, a datagram larger than the receive slot, or one of
    // another channel: each is counted per line). Waits up to `timeout_ns`
    // for data (0 = do not wait: busy-poll). Sockets backend: the datagrams
    // one pass read from all sockets are handed on in kernel-timestamp order
    // (equal stamps: config order, line A before B); one that reached a
    // socket after the pass read it waits for the next pass. AF_XDP: ring
    // order. Returns the number handed on.
    template <class P = void, class Sink>
    int poll_once(std::int64_t timeout_ns, Sink&& sink);

    [[nodiscard]] std::span<const std::unique_ptr<LineStats>> lines() const noexcept { return stats_; }
    // Receiving thread, once per loop iteration: joins the snapshot lines of
    // the channels whose flag is set and leaves those of the others
    // (`wanted`: per channel with snapshot lines, in config order; see
    // a protocol recovery service's steer(), recovery.hpp). A syscall only on a change; counted per line.
    void follow_snapshot_wants(std::span<const std::atomic<bool>> wanted) noexcept;
    // After poll_once(): a time (realtime ns) before which every datagram
    // that reached the sockets has been handed on (all sockets came back
    // short of a full batch), or 0 if some socket may hold more. Holds
    // waiting for the other line may be given up only up to this time.
    [[nodiscard]] std::int64_t drained_until() const noexcept { return drained_until_; }

    // The AF_XDP backend in use (receiver.backend = "af_xdp"), else nullptr;
    // its counters() may be read from any thread.
    [[nodiscard]] const XdpPort* af_xdp() const noexcept { return xdp_.get(); }
    // Why a config asking for AF_XDP runs on sockets (fallback = "sockets"), else empty.
    [[nodiscard]] const std::string& af_xdp_fallback_reason() const noexcept { return xdp_fallback_reason_; }

private:
    struct Socket;
    struct Batch;
    // A socket's share of one receive pass: datagrams received, the next to
    // hand on and its kernel stamp.
    struct Pass {
        int received = 0;
        int next = 0;
        std::int64_t head_ns = 0;
    };
    static const char* set_membership(Socket& s, bool join) noexcept;
    static bool source_allowed(const Socket& s, std::uint32_t src) noexcept;
    int wait(std::int64_t timeout_ns) noexcept;              // ppoll(2) on all sockets
    int receive(std::size_t socket_index) noexcept;          // recvmmsg into the socket's slots
    // The kernel receive time of the socket's datagram i (0: none stamped).
    [[nodiscard]] std::int64_t kernel_ns(std::size_t socket_index, int i) const noexcept;
    int xdp_receive() noexcept;                              // the AF_XDP rings' frames into the batch
    void xdp_release() noexcept;                             // ... given back
    // The i-th datagram of the batch, or nullptr: rejected source, or
    // `oversized` (larger than the slot). Counted per line either way.
    const RawDatagram* datagram(std::size_t socket_index, int i, bool& oversized) noexcept;
    // The i-th frame of the AF_XDP batch as a datagram of its line, or
    // nullptr (not a whole UDP datagram, no line received, rejected source,
    // oversized: each counted).
    const RawDatagram* xdp_datagram(int i, bool& oversized) noexcept;
    void start_af_xdp(const Config& cfg);
    // Hands one accepted datagram on (the rule 7 check with a protocol); true if handed.
    template <class P, class Sink>
    bool hand_on(const RawDatagram& d, Sink& sink);

    // First, so it goes last: the sockets were opened on its io_context,
    // and must go before it, also when the constructor throws.
    std::unique_ptr<Batch> batch_;
    std::vector<std::unique_ptr<Socket>> sockets_;
    std::vector<std::array<std::size_t, 2>> snapshot_sockets_;  // per channel with snapshot lines: A's and B's index
    std::vector<Pass> pass_;                // per socket, this receive pass
    std::vector<std::uint32_t> pending_;    // sockets of this pass with datagrams left to hand on
    std::size_t batch_size_ = 1;
    std::vector<std::unique_ptr<LineStats>> stats_;
    std::unique_ptr<::pollfd[]> pollfds_;
    RawDatagram current_{};
    std::int64_t drained_until_ = 0;
    std::unique_ptr<XdpPort> xdp_;
    std::string xdp_fallback_reason_;
    std::int64_t xdp_batch_ns_ = 0;
    // (group, port) -> socket index for AF_XDP frames: open addressing, a power of two.
    std::vector<std::uint64_t> line_keys_;
    std::vector<std::uint32_t> line_sockets_;
};

template <class P, class Sink>
bool Receiver::hand_on(const RawDatagram& d, Sink& sink) {
    if constexpr (std::is_void_v<P>) {
        sink(d);
    } else {
        const typename P::Key key = P::read_key(d.payload, d.channel_id);
        if constexpr (P::kHeaderNamesChannel) {
            if (key.valid() && key.channel != d.channel_id) {
                // Rule 7: the socket decides the channel. Another channel's header
                // must not reset, move or feed this one's (or any other's) state.
                d.stats->foreign_channel_packets.add();
                return false;
            }
        }
        sink(d, key);
    }
    return true;
}

template <class P, class Sink>
int Receiver::poll_once(std::int64_t timeout_ns, Sink&& sink) {
    const std::int64_t before = realtime_ns();
    drained_until_ = before;
    if (timeout_ns > 0 && wait(timeout_ns) <= 0) return 0;
    const std::int64_t start = realtime_ns();
    bool drained = true;
    int handed = 0;
    const auto offer = [&](const RawDatagram* d, bool oversized) {
        if (d) {
            handed += hand_on<P>(*d, sink);
        } else if (oversized) {
            // A sink that decodes counts it as malformed too; one that
            // only records (capture) has nothing to do with it.
            if constexpr (requires { sink.oversized(); }) sink.oversized();
        }
    };
    if (xdp_) {
        // AF_XDP: the frames of every queue's RX ring, no syscall; the
        // sockets only hold the memberships (the XDP program diverts their traffic).
        const int n = xdp_receive();
        drained = static_cast<std::size_t>(n) < batch_size_;
        for (int i = 0; i < n; ++i) {
            bool oversized = false;
            const RawDatagram* d = xdp_datagram(i, oversized);
            offer(d, oversized);
        }
        xdp_release();
        drained_until_ = drained ? start : 0;
        return handed;
    }
    // Every socket's batch first, then one merge by kernel timestamp: the
    // first packet read of a session decides a late join or a new session,
    // a copy on line B read after A's batch would look like an old one, and
    // a snapshot sent on one channel after another channel's packet must
    // not overtake it (a receiver descheduled between two sockets' reads
    // would otherwise hand one channel's whole batch on first).
    pending_.clear();
    for (std::size_t s = 0; s < sockets_.size(); ++s) {
        Pass& p = pass_[s];
        p.received = receive(s);
        p.next = 0;
        drained &= static_cast<std::size_t>(p.received) < batch_size_;
        if (p.received != 0) pending_.push_back(static_cast<std::uint32_t>(s));
    }
    if (pending_.size() > 1)
        for (const std::uint32_t s : pending_) pass_[s].head_ns = kernel_ns(s, 0);
    while (pending_.size() > 1) {
        std::size_t at = 0;  // the earliest head; equal stamps: the lower socket (config order, A first)
        for (std::size_t k = 1; k < pending_.size(); ++k) {
            const Pass& a = pass_[pending_[k]];
            const Pass& b = pass_[pending_[at]];
            if (a.head_ns < b.head_ns || (a.head_ns == b.head_ns && pending_[k] < pending_[at])) at = k;
        }
        const std::uint32_t s = pending_[at];
        Pass& p = pass_[s];
        bool oversized = false;
        const RawDatagram* d = datagram(s, p.next++, oversized);
        if (p.next < p.received) {
            p.head_ns = kernel_ns(s, p.next);
        } else {
            pending_[at] = pending_.back();
            pending_.pop_back();
        }
        offer(d, oversized);
    }
    if (!pending_.empty()) {  // the last socket with datagrams left: no other to merge with
        const std::uint32_t s = pending_[0];
        for (Pass& p = pass_[s]; p.next < p.received;) {
            bool oversized = false;
            const RawDatagram* d = datagram(s, p.next++, oversized);
            offer(d, oversized);
        }
    }
    drained_until_ = drained ? start : 0;
    return handed;
}

}  // namespace tickgate
