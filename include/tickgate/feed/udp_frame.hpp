// Reading one Ethernet frame as an IPv4/UDP datagram (the AF_XDP receive
// path, which gets whole frames where a socket gets payloads). Pure
// function over bytes: every length is checked before it is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tickgate {

enum class FrameVerdict : std::uint8_t {
    kUdp,         // a whole IPv4/UDP datagram: `UdpFrame` filled
    kTruncated,   // shorter than its headers or than the lengths they state
    kNotIpv4,     // another EtherType (ARP, IPv6, ...) or IP version
    kBadHeader,   // IPv4 header length < 20, or a UDP length < 8
    kFragment,    // an IPv4 fragment (MF set or a fragment offset): not one datagram
    kNotUdp,      // another IP protocol
};

struct UdpFrame {
    std::span<const std::byte> payload;  // the UDP payload, as long as the UDP header says
    std::uint32_t src_ip = 0;            // host order
    std::uint32_t dst_ip = 0;
    std::uint16_t src_port = 0;
    std::uint16_t dst_port = 0;
};

// At most this many stacked VLAN tags (802.1Q / 802.1ad) are read; a frame
// with more reads as kNotIpv4. Any thread.
inline constexpr int kMaxVlanTags = 4;

[[nodiscard]] inline FrameVerdict parse_udp_frame(std::span<const std::byte> frame, UdpFrame& out) noexcept {
    const auto u8 = [&](std::size_t at) { return static_cast<std::uint32_t>(frame[at]); };
    const auto be16 = [&](std::size_t at) { return (u8(at) << 8) | u8(at + 1); };
    const auto be32 = [&](std::size_t at) { return (be16(at) << 16) | be16(at + 2); };
    constexpr std::size_t kEthernet = 14, kVlanTag = 4, kUdpHeader = 8;
    if (frame.size() < kEthernet) return FrameVerdict::kTruncated;
    std::size_t at = 12;  // EtherType, after the two MAC addresses
    std::uint32_t ethertype = be16(at);
    for (int tags = 0; ethertype == 0x8100 || ethertype == 0x88A8; ++tags) {
        if (tags == kMaxVlanTags) return FrameVerdict::kNotIpv4;
        at += kVlanTag;
        if (frame.size() < at + 2) return FrameVerdict::kTruncated;
        ethertype = be16(at);
    }
    if (ethertype != 0x0800) return FrameVerdict::kNotIpv4;
    const std::size_t ip = at + 2;
    if (frame.size() < ip + 20) return FrameVerdict::kTruncated;
    if ((u8(ip) >> 4) != 4) return FrameVerdict::kNotIpv4;
    const std::size_t ihl = (u8(ip) & 0x0F) * std::size_t{4};
    if (ihl < 20) return FrameVerdict::kBadHeader;
    const std::size_t total = be16(ip + 2);
    // The frame may be longer (Ethernet padding), never shorter.
    if (total < ihl || frame.size() < ip + total || frame.size() < ip + ihl) return FrameVerdict::kTruncated;
    if ((be16(ip + 6) & 0x3FFF) != 0) return FrameVerdict::kFragment;
    if (u8(ip + 9) != 17) return FrameVerdict::kNotUdp;
    const std::size_t udp = ip + ihl;
    if (total < ihl + kUdpHeader) return FrameVerdict::kTruncated;
    const std::size_t udp_len = be16(udp + 4);
    if (udp_len < kUdpHeader) return FrameVerdict::kBadHeader;
    if (udp_len > total - ihl) return FrameVerdict::kTruncated;
    out.src_ip = be32(ip + 12);
    out.dst_ip = be32(ip + 16);
    out.src_port = static_cast<std::uint16_t>(be16(udp));
    out.dst_port = static_cast<std::uint16_t>(be16(udp + 2));
    out.payload = frame.subspan(udp + kUdpHeader, udp_len - kUdpHeader);
    return FrameVerdict::kUdp;
}

}  // namespace tickgate
