// Sending multicast, loopback only (simulator, `tickgate send`, tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tickgate {

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

// One UDP datagram on an open socket to ip:port (host order); true if the
// kernel took it whole. The senders' one sendto; any thread owning `fd`.
bool send_datagram(int fd, std::uint32_t ip, std::uint16_t port, std::span<const std::byte> payload) noexcept;

// A fixed send schedule (the simulators' pacing): wait_until(offset) sleeps
// while far ahead of start + offset, spins when close, returns at once when
// late (never skips) and keeps the worst lateness. One thread.
class SendSchedule {
public:
    SendSchedule() noexcept;
    void wait_until(std::int64_t offset_ns) noexcept;
    [[nodiscard]] std::int64_t max_late_ns() const noexcept { return max_late_ns_; }

private:
    std::int64_t start_ns_;  // steady clock
    std::int64_t max_late_ns_ = 0;
};

}  // namespace tickgate
