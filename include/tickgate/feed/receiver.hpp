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
    // What the receive slots of `cfg` take: two batches per socket (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t batch_bytes(const Config& cfg) noexcept;

    // Receive slot per datagram: larger datagrams are dropped (oversized).
    static constexpr std::size_t kSlotBytes = 2048;

    // Receives up to one batch per socket and calls sink(const RawDatagram&)
    // — with a protocol P, sink(const RawDatagram&, const P::Key&), the
    // datagram's header read once — for each accepted datagram (not for a
    // rejected source, a datagram larger than the receive slot, or one of
    // another channel: each is counted per line). Waits up to `timeout_ns`
    // for data (0 = do not wait: busy-poll; nor does it wait while datagrams
    // of the last pass are left). Sockets backend: every socket's datagrams
    // are handed on in kernel-timestamp order across sockets and passes
    // (equal stamps: config order, line A before B): one stamped after the
    // pass began, on another socket than the first read, may have been
    // overtaken by a datagram sent before it to a socket already read, so it
    // and everything stamped after it wait in their slots for the next pass.
    // AF_XDP: ring order. Returns the number handed on.
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
    // Sockets backend: why the merge by kernel timestamp may not hold at
    // first (the construction waited for arrival stamps in vain), else empty.
    [[nodiscard]] const std::string& timestamp_warning() const noexcept { return stamps_warning_; }

private:
    struct Socket;
    struct Batch;
    // A socket's datagrams not yet handed on: [next, end) of its slot set
    // `half`, then the first `more` of the other set (a pass receives into
    // the set that holds none), and the kernel stamp of the next one.
    struct Pass {
        int next = 0, end = 0, more = 0;
        std::uint8_t half = 0;
        std::int64_t head_ns = 0;
    };
    static const char* set_membership(Socket& s, bool join) noexcept;
    static bool source_allowed(const Socket& s, std::uint32_t src) noexcept;
    int wait(std::int64_t timeout_ns) noexcept;              // ppoll(2) on all sockets
    int receive(std::size_t socket_index, std::uint8_t half) noexcept;  // recvmmsg into the socket's slot set
    // The kernel receive time of datagram i of the socket's slot set `half` (0: none stamped).
    [[nodiscard]] std::int64_t kernel_ns(std::size_t socket_index, std::uint8_t half, int i) const noexcept;
    int xdp_receive() noexcept;                              // the AF_XDP rings' frames into the batch
    void xdp_release() noexcept;                             // ... given back
    // The i-th datagram of the batch, or nullptr: rejected source, or
    // `oversized` (larger than the slot). Counted per line either way.
    const RawDatagram* datagram(std::size_t socket_index, std::uint8_t half, int i, bool& oversized) noexcept;
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
    std::vector<Pass> pass_;                // per socket: its datagrams not yet handed on
    std::vector<std::uint32_t> pending_;    // sockets with datagrams left to hand on
    bool left_over_ = false;                // the last pass left datagrams in their slots
    std::size_t batch_size_ = 1;
    std::vector<std::unique_ptr<LineStats>> stats_;
    std::unique_ptr<::pollfd[]> pollfds_;
    RawDatagram current_{};
    std::int64_t drained_until_ = 0;
    std::unique_ptr<XdpPort> xdp_;
    std::string xdp_fallback_reason_;
    std::string stamps_warning_;
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
    if (timeout_ns > 0 && !left_over_ && wait(timeout_ns) <= 0) return 0;
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
    // would otherwise hand one channel's whole batch on first). A datagram
    // stamped before `start` was queued before any socket was read, so the
    // pass has read everything sent before it; one stamped later, on a
    // socket read after the first, may have been sent after a datagram that
    // reached an already-read socket too late for this pass: the merge stops
    // there, and it waits (with all later) in its slots. The same for what
    // follows the last datagram of a socket that filled its batch.
    const std::int64_t cut_ns = start;
    std::int64_t full_cut_ns = INT64_MAX;  // the earliest last stamp of a full batch
    pending_.clear();
    for (std::size_t s = 0; s < sockets_.size(); ++s) {
        Pass& p = pass_[s];
        if (p.more != 0) {
            // Both slot sets hold datagrams left (a full batch elsewhere held
            // them back): none is read until one set is handed on, and what
            // the socket queues meanwhile comes after its last one held.
            drained = false;
            full_cut_ns = std::min(full_cut_ns, kernel_ns(s, static_cast<std::uint8_t>(p.half ^ 1u), p.more - 1));
            pending_.push_back(static_cast<std::uint32_t>(s));
            continue;
        }
        const bool left = p.next < p.end;
        const std::uint8_t into = left ? static_cast<std::uint8_t>(p.half ^ 1u) : p.half;
        const int n = receive(s, into);
        if (left) {
            p.more = n;
        } else {
            p.next = 0, p.end = n, p.more = 0;
        }
        if (static_cast<std::size_t>(n) == batch_size_) {
            drained = false;
            if (sockets_.size() > 1) full_cut_ns = std::min(full_cut_ns, kernel_ns(s, into, n - 1));
        }
        if (p.next < p.end) pending_.push_back(static_cast<std::uint32_t>(s));
    }
    const auto advance = [&](std::size_t s) {  // hands on the socket's next datagram; false when it has none left
        Pass& p = pass_[s];
        bool oversized = false;
        const RawDatagram* d = datagram(s, p.half, p.next++, oversized);
        if (p.next == p.end && p.more != 0) {
            p.half ^= 1u;
            p.next = 0, p.end = p.more, p.more = 0;
        }
        offer(d, oversized);
        return p.next < p.end;
    };
    // In time to go: the first socket read cannot have been overtaken.
    const auto in_time = [&](std::size_t s, std::int64_t stamp) {
        return (s == 0 || stamp < cut_ns) && stamp <= full_cut_ns;
    };
    left_over_ = false;
    if (pending_.size() == 1 && pending_[0] == 0 && full_cut_ns == INT64_MAX) {
        // One socket holds data and nothing can have overtaken it: no stamps to read.
        while (advance(pending_[0])) {
        }
        pending_.clear();
    }
    for (const std::uint32_t s : pending_) pass_[s].head_ns = kernel_ns(s, pass_[s].half, pass_[s].next);
    while (!pending_.empty()) {
        std::size_t at = 0;  // the earliest head; equal stamps: the lower socket (config order, A first)
        for (std::size_t k = 1; k < pending_.size(); ++k) {
            const Pass& a = pass_[pending_[k]];
            const Pass& b = pass_[pending_[at]];
            if (a.head_ns < b.head_ns || (a.head_ns == b.head_ns && pending_[k] < pending_[at])) at = k;
        }
        const std::uint32_t s = pending_[at];
        if (!in_time(s, pass_[s].head_ns)) {
            left_over_ = true;  // it and every later head: the next pass
            break;
        }
        if (advance(s)) {
            pass_[s].head_ns = kernel_ns(s, pass_[s].half, pass_[s].next);
        } else {
            pending_[at] = pending_.back();
            pending_.pop_back();
        }
    }
    drained_until_ = drained ? start : 0;
    return handed;
}

}  // namespace tickgate
