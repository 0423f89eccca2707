#include "tickgate/feed/sender.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <cstring>
#include <stdexcept>

#include "tickgate/feed/capture.hpp"

namespace tickgate {

MulticastSender::MulticastSender(const std::string& interface, const std::string& bind_ip) {
    const auto iface = parse_ipv4(interface);
    if (!iface || (*iface >> 24) != 127)
        throw std::runtime_error("multicast interface " + interface + ": only loopback (127.x.x.x) is allowed");
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    in_addr ifaddr{htonl(*iface)};
    const unsigned char ttl = 0, loop = 1;
    if (::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_IF, &ifaddr, sizeof ifaddr) != 0 ||
        ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) != 0 ||
        ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0) {
        const std::string err = std::strerror(errno);
        ::close(fd_);
        throw std::runtime_error("multicast sender options: " + err);
    }
    const int sndbuf = 4 << 20;
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    if (!bind_ip.empty()) {
        const auto src = parse_ipv4(bind_ip);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(src.value_or(0));
        if (!src || (*src >> 24) != 127 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            ::close(fd_);
            throw std::runtime_error("bind sender to " + bind_ip + ": expected a usable 127.x address");
        }
    }
}

MulticastSender::~MulticastSender() {
    if (fd_ >= 0) ::close(fd_);
}

bool MulticastSender::send(std::uint32_t group, std::uint16_t port, std::span<const std::byte> payload) noexcept {
    if (!is_multicast(group)) return false;  // never unicast: loopback multicast only
    return send_datagram(fd_, group, port, payload);
}

bool send_datagram(int fd, std::uint32_t ip, std::uint16_t port, std::span<const std::byte> payload) noexcept {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(ip);
    to.sin_port = htons(port);
    return ::sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) ==
           static_cast<ssize_t>(payload.size());
}

namespace {
std::int64_t steady_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
}  // namespace

SendSchedule::SendSchedule() noexcept : start_ns_(steady_ns()) {}

void SendSchedule::wait_until(std::int64_t offset_ns) noexcept {
    const std::int64_t due = start_ns_ + offset_ns;
    std::int64_t now;
    while ((now = steady_ns()) < due) {
        if (due - now > 200'000) std::this_thread::sleep_for(std::chrono::nanoseconds(due - now - 100'000));
    }
    max_late_ns_ = std::max(max_late_ns_, now - due);
}

}  // namespace tickgate
