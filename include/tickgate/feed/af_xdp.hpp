// The AF_XDP receive backend (receiver.backend = "af_xdp"): tickgate's XDP
// program diverts the configured lines' UDP frames to one AF_XDP socket per
// RX queue, whose rings user space reads with no syscall per packet. The
// Receiver turns those frames into the same RawDatagrams a socket gives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "tickgate/counter.hpp"
#include "tickgate/feed/config.hpp"

namespace tickgate {

// Why AF_XDP could not start, with what to change (exit 2 in `run`).
class XdpUnavailable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The counters of the backend: user space's (network thread writes, any
// thread reads) and the kernel's (read on demand by counters()).
struct AfXdpCounters {
    std::uint64_t frames = 0;             // frames taken off the RX rings
    std::uint64_t bytes = 0;              // their bytes, Ethernet headers included
    std::uint64_t bad_frames = 0;         // frames that do not read as a whole IPv4/UDP datagram (udp_frame.hpp)
    std::uint64_t unmatched_frames = 0;   // diverted, but to no line being received (a snapshot line left)
    std::uint64_t redirected = 0;         // the XDP program: frames sent to a socket
    std::uint64_t passed_to_kernel = 0;   // the XDP program: everything else (ARP, other ports, ...)
    std::uint64_t rx_ring_full = 0;       // the kernel dropped: RX ring full (user space too slow)
    std::uint64_t fill_ring_empty = 0;    // the kernel found no free frame (fill ring empty)
    std::uint64_t rx_dropped = 0;         // the kernel dropped for other reasons
};

// One frame on an RX ring: valid until XdpPort::release().
struct XdpFrame {
    std::span<const std::byte> bytes;
    std::uint64_t addr;  // UMEM address, returned to the fill ring on release
    std::uint32_t queue;
};

// Attaches the XDP program to the interface (a bpf_link: it goes when the
// process does, even on kill -9) and binds one AF_XDP socket per queue.
// Throws XdpUnavailable with the reason at construction. receive/release/
// wait: the network thread only; counters(): any thread.
class XdpPort {
public:
    struct Line {
        std::uint32_t group;  // host order
        std::uint16_t port;
    };
    XdpPort(const AfXdpConfig& cfg, std::span<const Line> lines, std::uint32_t batch);
    ~XdpPort();
    XdpPort(const XdpPort&) = delete;
    XdpPort& operator=(const XdpPort&) = delete;

    // UMEM bytes a config registers (all queues): the memory estimate's part.
    [[nodiscard]] static std::size_t umem_bytes(const AfXdpConfig& cfg) noexcept;
    static constexpr std::size_t kFrameBytes = 4096;

    // Takes up to `batch` frames off the RX rings into frames(); returns how many.
    int receive() noexcept;
    [[nodiscard]] std::span<const XdpFrame> frames() const noexcept;
    // Gives the frames of the last receive() back to the fill rings.
    void release() noexcept;
    // Waits up to timeout_ns for a frame (poll(2) on the sockets); > 0 when one is there.
    int wait(std::int64_t timeout_ns) noexcept;

    [[nodiscard]] AfXdpCounters counters() const noexcept;
    void count_bad_frame() noexcept { bad_frames_.add(); }
    void count_unmatched_frame() noexcept { unmatched_.add(); }
    [[nodiscard]] const std::string& mode() const noexcept { return mode_; }  // "native" or "generic"
    [[nodiscard]] bool zero_copy() const noexcept { return zero_copy_; }
    [[nodiscard]] const std::string& interface() const noexcept { return interface_; }

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string mode_;
    std::string interface_;
    bool zero_copy_ = false;
    RelaxedCounter frames_;
    RelaxedCounter bytes_;
    RelaxedCounter bad_frames_;
    RelaxedCounter unmatched_;
};

}  // namespace tickgate
