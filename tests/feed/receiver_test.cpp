// Receiver failures that must not pass silently: a failing recvmmsg is
// counted per line (not taken for a quiet line).
// Sockets on loopback multicast groups of their own; nothing is sent.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/receiver.hpp"

namespace tickgate {
namespace {

Config loopback_config(std::uint16_t channel, const char* group_a, const char* group_b, std::uint16_t port) {
    Config cfg;
    ChannelConfig ch;
    ch.id = channel;
    ch.a = {group_a, port, "127.0.0.1"};
    ch.b = {group_b, static_cast<std::uint16_t>(port + 1), "127.0.0.1"};
    cfg.channels.push_back(ch);
    return cfg;
}

// The descriptor of this process's UDP socket bound to group:port, or -1.
int socket_bound_to(const char* group, std::uint16_t port) {
    const std::uint32_t g = *parse_ipv4(group);
    for (int fd = 3; fd < 4096; ++fd) {
        sockaddr_in a{};
        socklen_t len = sizeof a;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.sin_family != AF_INET) continue;
        if (ntohl(a.sin_addr.s_addr) == g && ntohs(a.sin_port) == port) return fd;
    }
    return -1;
}

TEST(Receiver, FailingReceiveIsCountedOnItsLine) {
    Receiver r(loopback_config(11, "239.255.95.1", "239.255.95.2", 39551));
    int handed = 0;
    auto sink = [&](const RawDatagram&) { ++handed; };
    // Nothing queued (EAGAIN) is normal: no error.
    EXPECT_EQ(r.poll_once(0, sink), 0);
    for (const auto& l : r.lines()) EXPECT_EQ(l->recv_errors.get(), 0u);

    // Line B's descriptor now names a file, not a socket: recvmmsg fails
    // (ENOTSOCK) on every poll, which must show on line B alone.
    const int fd = socket_bound_to("239.255.95.2", 39552);
    ASSERT_GE(fd, 0);
    const int not_a_socket = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(not_a_socket, 0);
    ASSERT_EQ(::dup2(not_a_socket, fd), fd);
    ::close(not_a_socket);
    EXPECT_EQ(r.poll_once(0, sink), 0);
    EXPECT_EQ(r.poll_once(0, sink), 0);
    EXPECT_EQ(handed, 0);
    ASSERT_EQ(r.lines().size(), 2u);
    EXPECT_EQ(r.lines()[0]->recv_errors.get(), 0u);
    EXPECT_EQ(r.lines()[1]->recv_errors.get(), 2u);
}

}  // namespace
}  // namespace tickgate
