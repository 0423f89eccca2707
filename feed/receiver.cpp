#include "tickgate/feed/receiver.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/multicast.hpp>
#include <boost/asio/ip/udp.hpp>
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "tickgate/feed/af_xdp.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/udp_frame.hpp"

namespace tickgate {

namespace asio = boost::asio;

namespace {
constexpr std::size_t kMaxBatch = 1024;
constexpr std::size_t kSlotBytes = Receiver::kSlotBytes;  // larger datagrams are dropped (MSG_TRUNC)
constexpr std::size_t kControlBytes = 128;
constexpr std::int64_t kArrivalStampsBudgetNs = 2'000'000'000;

// A received message's SCM_TIMESTAMPNS (realtime ns), or 0 if it has none.
std::int64_t stamp_ns(const msghdr& h) noexcept {
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&h), c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            timespec ts;
            std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
            return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
        }
    return 0;
}

// Linux stamps a datagram on arrival only once a host-wide switch is on, and
// the first socket of the host to ask for stamps has it turned on later, by
// a workqueue (net_enable_timestamp): until then each datagram is stamped
// when it is read, and a pass would merge the lines in the order it read
// their sockets. Sends itself a datagram on 127.0.0.1 until one comes back
// stamped before it was read; false if none has within `budget_ns`.
bool wait_for_arrival_stamps(std::int64_t budget_ns) noexcept {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in self{};
    self.sin_family = AF_INET;
    self.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof self;
    const int one = 1;
    const timeval read_timeout{0, 100'000};
    bool live = false;
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&self), sizeof self) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0 &&
        ::connect(fd, reinterpret_cast<const sockaddr*>(&self), sizeof self) == 0 &&
        ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) == 0 &&
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &read_timeout, sizeof read_timeout) == 0) {
        const std::int64_t until = realtime_ns() + budget_ns;
        do {
            const std::byte probe{0x5A};
            if (::send(fd, &probe, 1, 0) != 1) break;
            const std::int64_t sent = realtime_ns();
            std::byte got{};
            iovec iov{&got, 1};
            alignas(cmsghdr) std::byte control[kControlBytes];
            msghdr h{};
            h.msg_iov = &iov;
            h.msg_iovlen = 1;
            h.msg_control = control;
            h.msg_controllen = sizeof control;
            if (::recvmsg(fd, &h, 0) == 1) {
                const std::int64_t stamp = stamp_ns(h);
                live = stamp != 0 && stamp <= sent;
            }
            if (!live) {
                const timespec pause{0, 1'000'000};
                ::nanosleep(&pause, nullptr);
            }
        } while (!live && realtime_ns() < until);
    }
    ::close(fd);
    return live;
}
}  // namespace

struct Receiver::Socket {
    explicit Socket(asio::io_context& io) : socket(io) {}
    asio::ip::udp::socket socket;
    int fd = -1;
    std::uint8_t line = 0;
    std::uint16_t channel_id = 0;
    std::uint32_t group = 0;
    std::uint32_t interface = 0;
    std::uint16_t port = 0;
    bool joined = false;  // a member of its group (snapshot lines: only while wanted)
    std::vector<std::uint32_t> sources;  // allowed, host order; empty = any
    std::uint32_t last_ovfl = 0;
};

// One set of receive slots per socket: every socket of a pass is received
// into its own, then all are handed on merged by kernel timestamp.
struct Receiver::Batch {
    struct Slots {
        std::vector<mmsghdr> msgs;
        std::vector<iovec> iov;
        std::vector<sockaddr_in> from;
        std::vector<std::byte> data;
        std::vector<std::byte> control;
    };
    std::size_t size = 0;
    std::vector<Slots> slots;  // two sets per socket: [2 * socket + half] (Receiver::Pass)
    asio::io_context io;
};

Receiver::Receiver(const Config& cfg) : batch_(std::make_unique<Batch>()) {
    if (cfg.channels.empty()) throw std::runtime_error("no [[channel]] configured: nothing to receive");
    Batch& b = *batch_;
    b.size = std::min<std::size_t>(std::max<std::uint32_t>(cfg.receiver.batch, 1), kMaxBatch);
    batch_size_ = b.size;

    for (const ChannelConfig& ch : cfg.channels) {
        const auto lines = ch.lines();
        if (ch.snapshot_a) snapshot_sockets_.push_back({sockets_.size() + 2, sockets_.size() + 3});
        for (std::uint8_t l = 0; l < std::size(lines); ++l) {
            if (!lines[l]) continue;
            const LineConfig& lc = *lines[l];
            const std::string name = "channel " + std::to_string(ch.id) + " line " + std::string(line_name(l)) + " (" +
                                     lc.group + ":" + std::to_string(lc.port) + " on " + lc.interface + ")";
            try {
                auto s = std::make_unique<Socket>(b.io);
                const auto group = asio::ip::make_address_v4(lc.group);
                const auto iface = asio::ip::make_address_v4(lc.interface);
                s->socket.open(asio::ip::udp::v4());
                s->socket.set_option(asio::socket_base::reuse_address(true));
                s->socket.set_option(asio::socket_base::receive_buffer_size(cfg.receiver.rcvbuf_bytes));
                // Binding to the group (not INADDR_ANY) keeps other groups on the same port out.
                s->socket.bind(asio::ip::udp::endpoint(group, lc.port));
                s->fd = s->socket.native_handle();
                s->socket.non_blocking(true);
                const int one = 1;
                if (::setsockopt(s->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) != 0 ||
                    ::setsockopt(s->fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one) != 0)
                    throw std::runtime_error(std::string("setsockopt timestamps/drop counter: ") + std::strerror(errno));
                // Only this socket's own memberships: by default Linux hands a
                // socket bound to a group the group's datagrams whenever any
                // socket of the host joined it, which would make leaving the
                // snapshot feed (or never joining it) a no-op next to a capture.
                const int zero = 0;
                if (::setsockopt(s->fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof zero) != 0)
                    throw std::runtime_error(std::string("setsockopt IP_MULTICAST_ALL: ") + std::strerror(errno));
                // The line's own sources, else the channel's (config.cpp
                // resolves this when it reads a file; a Config built in code
                // may set only the channel's).
                for (const std::string& src : lc.sources.empty() ? ch.sources : lc.sources) {
                    const auto src_ip = parse_ipv4(src);
                    if (!src_ip) throw std::runtime_error("bad source address " + src);
                    s->sources.push_back(*src_ip);
                }
                s->line = l;
                s->channel_id = ch.id;
                s->group = group.to_uint();
                s->interface = iface.to_uint();
                s->port = lc.port;
                // The snapshot feed is joined only while wanted (follow_snapshot_wants).
                if (!is_snapshot_line(l)) {
                    if (const char* failed = set_membership(*s, true))
                        throw std::runtime_error(std::string(failed) + ": " + std::strerror(errno));
                    s->joined = true;
                }
                auto st = std::make_unique<LineStats>();
                st->channel_id = ch.id;
                st->line = l;
                st->group = lc.group;
                st->port = lc.port;
                sockets_.push_back(std::move(s));
                stats_.push_back(std::move(st));
            } catch (const std::exception& e) {
                throw std::runtime_error(name + ": " + e.what());
            }
        }
    }
    b.slots.resize(2 * sockets_.size());
    for (Batch::Slots& sl : b.slots) {
        sl.msgs.resize(b.size);
        sl.iov.resize(b.size);
        sl.from.resize(b.size);
        sl.data.resize(b.size * kSlotBytes);
        sl.control.resize(b.size * kControlBytes);
    }
    pass_.resize(sockets_.size());
    pending_.reserve(sockets_.size());
    pollfds_ = std::make_unique<pollfd[]>(sockets_.size());
    for (std::size_t i = 0; i < sockets_.size(); ++i) pollfds_[i] = {sockets_[i]->fd, POLLIN, 0};
    if (cfg.receiver.backend == ReceiveBackend::kAfXdp) start_af_xdp(cfg);
    if (!xdp_ && !wait_for_arrival_stamps(kArrivalStampsBudgetNs))
        stamps_warning_ =
            "the kernel did not stamp datagrams on arrival within 2 s of start-up: until it does, lines A and B "
            "are merged in the order their sockets are read";
}

// The line's allowed senders (empty: any), for both receive paths.
bool Receiver::source_allowed(const Socket& s, std::uint32_t src) noexcept {
    if (s.sources.empty()) return true;
    bool allowed = false;
    for (const std::uint32_t a : s.sources) allowed |= a == src;
    return allowed;
}

namespace {
std::uint64_t line_key(std::uint32_t group, std::uint16_t port) noexcept {
    return (std::uint64_t{group} << 16) | port;
}
std::size_t line_slot(std::uint64_t key, std::size_t mask) noexcept {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & mask;
}
constexpr std::uint64_t kNoLine = ~std::uint64_t{0};
}  // namespace

// The sockets keep the memberships (IGMP, the switch); the XDP program
// takes their frames. A line is found from its frame's group:port.
void Receiver::start_af_xdp(const Config& cfg) {
    std::vector<XdpPort::Line> lines;
    const std::size_t size = std::bit_ceil(std::max<std::size_t>(2 * sockets_.size(), 8));
    line_keys_.assign(size, kNoLine);
    line_sockets_.assign(size, 0);
    for (std::size_t i = 0; i < sockets_.size(); ++i) {
        const Socket& s = *sockets_[i];
        lines.push_back({s.group, s.port});
        const std::uint64_t key = line_key(s.group, s.port);
        std::size_t at = line_slot(key, size - 1);
        while (line_keys_[at] != kNoLine && line_keys_[at] != key) at = (at + 1) & (size - 1);
        if (line_keys_[at] == key)  // config.cpp refuses a group:port used twice
            throw std::runtime_error("two lines on one group:port: AF_XDP cannot tell them apart");
        line_keys_[at] = key;
        line_sockets_[at] = static_cast<std::uint32_t>(i);
    }
    try {
        xdp_ = std::make_unique<XdpPort>(cfg.receiver.af_xdp, lines, static_cast<std::uint32_t>(batch_size_));
    } catch (const XdpUnavailable& e) {
        if (!cfg.receiver.af_xdp.fallback_to_sockets) throw;
        xdp_fallback_reason_ = e.what();  // `run` says it once
        line_keys_.clear();
        line_sockets_.clear();
    }
}

int Receiver::xdp_receive() noexcept {
    const int n = xdp_->receive();
    // One CPU-clock timestamp per batch: when its frames were seen (no
    // kernel timestamp on this path).
    xdp_batch_ns_ = realtime_ns();
    return n;
}

void Receiver::xdp_release() noexcept { xdp_->release(); }

const RawDatagram* Receiver::xdp_datagram(int i, bool& oversized) noexcept {
    const XdpFrame& f = xdp_->frames()[static_cast<std::size_t>(i)];
    UdpFrame u;
    if (parse_udp_frame(f.bytes, u) != FrameVerdict::kUdp) {
        xdp_->count_bad_frame();
        return nullptr;
    }
    const std::uint64_t key = line_key(u.dst_ip, u.dst_port);
    const std::size_t mask = line_keys_.size() - 1;
    std::size_t at = line_slot(key, mask);
    while (line_keys_[at] != key) {
        if (line_keys_[at] == kNoLine) {
            xdp_->count_unmatched_frame();
            return nullptr;
        }
        at = (at + 1) & mask;
    }
    const std::size_t si = line_sockets_[at];
    Socket& s = *sockets_[si];
    LineStats& st = *stats_[si];
    if (!s.joined) {  // a snapshot line left: the kernel would not deliver it either
        xdp_->count_unmatched_frame();
        return nullptr;
    }
    if (!source_allowed(s, u.src_ip)) {
        st.rejected_source.add();
        return nullptr;
    }
    oversized = u.payload.size() > kSlotBytes;  // as a socket's slot would have cut it
    if (oversized) {
        st.oversized.add();
        return nullptr;
    }
    st.packets.add();
    st.bytes.add(u.payload.size());
    current_ = {u.payload, xdp_batch_ns_, u.src_ip, u.src_port, s.group, s.port, s.line, s.channel_id, &st};
    return &current_;
}

// Joins (IP_ADD_MEMBERSHIP, or source-specific for each allowed source) or
// leaves the socket's group on its interface. nullptr, or what failed.
const char* Receiver::set_membership(Socket& s, bool join) noexcept {
    if (s.sources.empty()) {
        ip_mreq m{};
        m.imr_multiaddr.s_addr = htonl(s.group);
        m.imr_interface.s_addr = htonl(s.interface);
        if (::setsockopt(s.fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m, sizeof m) != 0)
            return join ? "IP_ADD_MEMBERSHIP failed" : "IP_DROP_MEMBERSHIP failed";
        return nullptr;
    }
    // Source-specific membership: the kernel delivers only these senders.
    for (const std::uint32_t src : s.sources) {
        ip_mreq_source m{};
        m.imr_multiaddr.s_addr = htonl(s.group);
        m.imr_interface.s_addr = htonl(s.interface);
        m.imr_sourceaddr.s_addr = htonl(src);
        if (::setsockopt(s.fd, IPPROTO_IP, join ? IP_ADD_SOURCE_MEMBERSHIP : IP_DROP_SOURCE_MEMBERSHIP, &m, sizeof m) != 0)
            return join ? "IP_ADD_SOURCE_MEMBERSHIP failed" : "IP_DROP_SOURCE_MEMBERSHIP failed";
    }
    return nullptr;
}

void Receiver::follow_snapshot_wants(std::span<const std::atomic<bool>> wanted) noexcept {
    const std::size_t n = std::min(wanted.size(), snapshot_sockets_.size());
    for (std::size_t slot = 0; slot < n; ++slot) {
        const bool want = wanted[slot].load(std::memory_order_relaxed);
        for (const std::size_t si : snapshot_sockets_[slot]) {
            Socket& s = *sockets_[si];
            if (s.joined == want) continue;
            LineStats& st = *stats_[si];
            if (set_membership(s, want) != nullptr) {  // retried on the next call
                st.membership_errors.add();
                continue;
            }
            s.joined = want;
            (want ? st.snapshot_joins : st.snapshot_leaves).add();
        }
    }
}

std::size_t Receiver::batch_bytes(const Config& cfg) noexcept {
    std::size_t sockets = 0;
    for (const ChannelConfig& ch : cfg.channels)
        for (const LineConfig* l : ch.lines()) sockets += l != nullptr;
    const std::size_t n = std::min<std::size_t>(std::max<std::uint32_t>(cfg.receiver.batch, 1), kMaxBatch);
    return sockets * (2 * n * (sizeof(mmsghdr) + sizeof(iovec) + sizeof(sockaddr_in) + kSlotBytes + kControlBytes) +
                      sizeof(Pass) + sizeof(std::uint32_t));
}

// Members go in reverse order: the XDP program first (its frames reference
// the sockets' lines), the io_context (batch_) last.
Receiver::~Receiver() = default;

int Receiver::wait(std::int64_t timeout_ns) noexcept {
    if (xdp_) return xdp_->wait(timeout_ns);
    const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    return ::ppoll(pollfds_.get(), sockets_.size(), &ts, nullptr);
}

int Receiver::receive(std::size_t si, std::uint8_t half) noexcept {
    Batch& b = *batch_;
    Batch::Slots& sl = b.slots[2 * si + half];
    for (std::size_t i = 0; i < b.size; ++i) {
        sl.iov[i] = {sl.data.data() + i * kSlotBytes, kSlotBytes};
        msghdr& h = sl.msgs[i].msg_hdr;
        h.msg_name = &sl.from[i];
        h.msg_namelen = sizeof(sockaddr_in);
        h.msg_iov = &sl.iov[i];
        h.msg_iovlen = 1;
        h.msg_control = sl.control.data() + i * kControlBytes;
        h.msg_controllen = kControlBytes;
        h.msg_flags = 0;
    }
    const int n = ::recvmmsg(sockets_[si]->fd, sl.msgs.data(), static_cast<unsigned>(b.size), MSG_DONTWAIT, nullptr);
    if (n >= 0) return n;
    // Nothing queued, or a signal: normal. Anything else (a closed or
    // broken socket, ENOMEM, ...) must not pass for a quiet line.
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) stats_[si]->recv_errors.add();
    return 0;
}

std::int64_t Receiver::kernel_ns(std::size_t si, std::uint8_t half, int i) const noexcept {
    return stamp_ns(batch_->slots[2 * si + half].msgs[static_cast<std::size_t>(i)].msg_hdr);
}

const RawDatagram* Receiver::datagram(std::size_t si, std::uint8_t half, int i, bool& oversized) noexcept {
    Batch::Slots& b = batch_->slots[2 * si + half];
    Socket& s = *sockets_[si];
    LineStats& st = *stats_[si];
    const mmsghdr& m = b.msgs[static_cast<std::size_t>(i)];
    const std::uint32_t src = ntohl(b.from[static_cast<std::size_t>(i)].sin_addr.s_addr);

    std::int64_t recv_ns = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m.msg_hdr); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&m.msg_hdr), c)) {
        if (c->cmsg_level != SOL_SOCKET) continue;
        if (c->cmsg_type == SCM_TIMESTAMPNS) {
            timespec ts;
            std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
            recv_ns = std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
        } else if (c->cmsg_type == SO_RXQ_OVFL) {
            std::uint32_t drops;
            std::memcpy(&drops, CMSG_DATA(c), sizeof drops);
            if (drops != s.last_ovfl) {
                st.kernel_drops.add(drops - s.last_ovfl);  // cumulative per socket; wraps safely
                s.last_ovfl = drops;
            }
        }
    }
    if (recv_ns == 0) recv_ns = realtime_ns();

    if (!source_allowed(s, src)) {
        st.rejected_source.add();
        return nullptr;
    }
    // Larger than the slot: the kernel kept only its first kSlotBytes. A
    // prefix of a packet is not the packet: drop it whole, count it.
    oversized = (m.msg_hdr.msg_flags & MSG_TRUNC) != 0;
    if (oversized) {
        st.oversized.add();
        return nullptr;
    }
    const std::size_t len = std::min<std::size_t>(m.msg_len, kSlotBytes);
    const std::span<const std::byte> payload(b.data.data() + static_cast<std::size_t>(i) * kSlotBytes, len);
    st.packets.add();
    st.bytes.add(len);
    current_ = {payload, recv_ns, src, ntohs(b.from[static_cast<std::size_t>(i)].sin_port), s.group, s.port,
                s.line, s.channel_id, &st};
    return &current_;
}

}  // namespace tickgate
