// Two network namespaces joined by a veth pair, for tests and benchmarks
// that need a real wire (the AF_XDP backend: tests/feed/hot_path_test.cpp,
// bench/latency_bench.cpp --backend). Root and iproute2 required.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "tickgate/feed/capture.hpp"  // parse_ipv4
#include "tickgate/feed/sender.hpp"

namespace tickgate::test {

// Two network namespaces joined by a veth pair, made by the constructor and
// deleted by the destructor: the sender's (10.213.1.1 on vtx) and the handler's
// (10.213.1.2 on vrx). Nothing else exists in either: multicast leaves the
// sender's namespace on its veth (TTL 1: the one hop into the peer) and
// ends in the handler's. Threads enter a namespace with setns(2), which
// moves only the calling thread (and the threads it creates after).
class VethPair {
public:
    static constexpr const char* kTxAddress = "10.213.1.1";
    static constexpr const char* kRxAddress = "10.213.1.2";
    static constexpr const char* kRxInterface = "vrx";

    VethPair() {
        const std::string id = std::to_string(::getpid());
        tx_ = "tgveth-tx-" + id;
        rx_ = "tgveth-rx-" + id;
        home_fd_ = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        const std::string commands[] = {
            "ip netns add " + tx_,
            "ip netns add " + rx_,
            "ip link add vtx netns " + tx_ + " type veth peer name vrx netns " + rx_,
            "ip -n " + tx_ + " addr add 10.213.1.1/30 dev vtx",
            "ip -n " + rx_ + " addr add 10.213.1.2/30 dev vrx",
            "ip -n " + tx_ + " link set lo up",
            "ip -n " + rx_ + " link set lo up",
            "ip -n " + tx_ + " link set vtx up",
            "ip -n " + rx_ + " link set vrx up",
            "ip -n " + tx_ + " route add 224.0.0.0/4 dev vtx"};
        for (const std::string& c : commands) {
            if (std::system((c + " 2>/dev/null").c_str()) != 0) {
                remove();
                throw std::runtime_error("veth topology: '" + c + "' failed (needs root and iproute2)");
            }
        }
        tx_fd_ = ::open(("/run/netns/" + tx_).c_str(), O_RDONLY | O_CLOEXEC);
        rx_fd_ = ::open(("/run/netns/" + rx_).c_str(), O_RDONLY | O_CLOEXEC);
        if (home_fd_ < 0 || tx_fd_ < 0 || rx_fd_ < 0) {
            remove();
            throw std::runtime_error("veth topology: cannot open the namespaces");
        }
    }
    ~VethPair() { remove(); }
    VethPair(const VethPair&) = delete;
    VethPair& operator=(const VethPair&) = delete;

    void enter_sender() const { enter(tx_fd_, tx_); }
    void enter_handler() const { enter(rx_fd_, rx_); }
    void leave() const { enter(home_fd_, "the bench's own"); }

private:
    static void enter(int fd, const std::string& name) {
        if (::setns(fd, CLONE_NEWNET) != 0)
            throw std::runtime_error("setns into " + name + " namespace: " + std::strerror(errno));
    }
    void remove() noexcept {
        for (int* fd : {&tx_fd_, &rx_fd_, &home_fd_})
            if (*fd >= 0) ::close(std::exchange(*fd, -1));
        for (const std::string* ns : {&tx_, &rx_})
            if (!ns->empty()) (void)std::system(("ip netns del " + *ns + " 2>/dev/null").c_str());
    }

    std::string tx_, rx_;
    int tx_fd_ = -1, rx_fd_ = -1, home_fd_ = -1;
};

// The sender on the veth (its namespace only): IP_MULTICAST_IF the veth's
// address, TTL 1, loop off. MulticastSender stays loopback-only.
class VethSender {
public:
    VethSender() : fd_(::socket(AF_INET, SOCK_DGRAM, 0)) {
        in_addr ifaddr{htonl(*parse_ipv4(VethPair::kTxAddress))};
        const unsigned char ttl = 1, loop = 0;
        if (fd_ < 0 || ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_IF, &ifaddr, sizeof ifaddr) != 0 ||
            ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) != 0 ||
            ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0)
            throw std::runtime_error(std::string("veth sender: ") + std::strerror(errno));
    }
    ~VethSender() { ::close(fd_); }
    VethSender(const VethSender&) = delete;
    VethSender& operator=(const VethSender&) = delete;
    bool send(std::uint32_t group, std::uint16_t port, std::span<const std::byte> payload) noexcept {
        return send_datagram(fd_, group, port, payload);
    }

private:
    int fd_;
};

}  // namespace tickgate::test
