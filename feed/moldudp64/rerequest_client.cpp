#include "tickgate/feed/moldudp64/rerequest_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tickgate/endian.hpp"

namespace tickgate::moldudp64 {

RerequestClient::RerequestClient(const Config& cfg)
    : max_request_messages_(cfg.moldudp64.max_request_messages),
      timeout_ns_(std::int64_t{cfg.moldudp64.request_timeout_ms} * 1'000'000),
      max_requests_(cfg.moldudp64.max_requests),
      per_s_(std::max<std::uint32_t>(cfg.moldudp64.max_requests_per_s, 1)),  // config.cpp: 1..1e6
      recover_from_start_(cfg.moldudp64.recover_from_start),
      channels_(cfg.channels.size()) {
    for (std::size_t i = 0; i < cfg.channels.size(); ++i) {
        const ChannelConfig& ch = cfg.channels[i];
        if (ch.rerequest.empty()) continue;
        Channel& c = channels_[i];
        c.server_ip = ch.rerequest_ip;
        c.server_port = ch.rerequest_port;
        const auto b = std::find_if(buckets_.begin(), buckets_.end(),
                                    [&](const Bucket& k) { return k.ip == c.server_ip && k.port == c.server_port; });
        c.bucket = static_cast<std::uint32_t>(b - buckets_.begin());
        if (b == buckets_.end())
            buckets_.push_back({c.server_ip, c.server_port, std::make_unique_for_overwrite<std::int64_t[]>(per_s_)});
        c.socket = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
        if (c.socket < 0)
            throw std::runtime_error("channel " + std::to_string(ch.id) + " rerequest socket: " + std::strerror(errno));
        // A loopback server is answered on loopback only; another, from any interface.
        sockaddr_in local{};
        local.sin_family = AF_INET;
        local.sin_addr.s_addr = htonl((c.server_ip >> 24) == 127 ? 0x7F000001u : INADDR_ANY);
        if (::bind(c.socket, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0)
            throw std::runtime_error("channel " + std::to_string(ch.id) + " rerequest socket bind: " + std::strerror(errno));
    }
}

RerequestClient::~RerequestClient() {
    for (const Channel& c : channels_)
        if (c.socket >= 0) ::close(c.socket);
}

void RerequestClient::hole_opened(std::uint32_t ch, const Session& session, std::uint64_t first, std::uint64_t count,
                                  std::int64_t /*recv_ns: tick() keeps time on its own clock*/) noexcept {
    Channel& c = channels_[ch];
    if (c.socket < 0 || count == 0) return;
    if (c.n > 0 && c.session != session) c.n = 0;
    c.session = session;
    if (c.n == kMaxPending) {  // the stream gives up its oldest hole at the same point
        c.head = (c.head + 1) % kMaxPending;
        --c.n;
    }
    at(c, c.n) = {first, first + count, first, 0, 0, false};  // asked for nothing yet
    ++c.n;
}

bool RerequestClient::within_rate(std::uint32_t bucket, std::int64_t now_ns) noexcept {
    // The ring holds the last per_s_ send times: a send is allowed when the
    // oldest of them is at least a second old, so no half-open window of one
    // second ever holds more than per_s_ (a token bucket that starts full
    // lets nearly twice as many through in the first second).
    constexpr std::int64_t kSecond = 1'000'000'000;
    Bucket& b = buckets_[bucket];
    if (b.n < per_s_) {
        b.sent[(b.head + b.n) % per_s_] = now_ns;
        ++b.n;
        return true;
    }
    if (now_ns - b.sent[b.head] < kSecond) return false;
    b.sent[b.head] = now_ns;
    b.head = (b.head + 1) % per_s_;
    return true;
}

bool RerequestClient::send_request(Channel& c, std::uint64_t first, std::uint64_t count) noexcept {
    std::array<std::byte, kRequestSize> req{};
    std::memcpy(req.data() + kSessionOffset, c.session.data(), kSessionSize);
    store_be<std::uint64_t>(req.data() + kSequenceOffset, first);
    store_be<std::uint16_t>(req.data() + kCountOffset, static_cast<std::uint16_t>(count));
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(c.server_ip);
    to.sin_port = htons(c.server_port);
    c.counters.requests_sent.add();
    const bool ok = ::sendto(c.socket, req.data(), req.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) ==
                    static_cast<ssize_t>(req.size());
    if (!ok) c.counters.send_errors.add();
    return ok;
}

std::ptrdiff_t RerequestClient::receive(std::uint32_t ch, std::uint32_t& src_ip, std::uint16_t& src_port) noexcept {
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t n = ::recvfrom(channels_[ch].socket, buf_.data(), buf_.size(), MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) return -1;
    src_ip = ntohl(from.sin_addr.s_addr);
    src_port = ntohs(from.sin_port);
    return n;
}

}  // namespace tickgate::moldudp64
