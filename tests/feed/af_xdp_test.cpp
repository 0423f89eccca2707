// The AF_XDP backend's parts that need no privilege: the frame parser
// (udp_frame.hpp) against stacked VLANs, IPv4 options, fragments and every
// truncation; the config keys; the memory estimate; and start-up failures
// that must be an error with its reason, or a said fallback to sockets.
// The backend itself runs in tests/e2e/af_xdp_netns_test.sh (namespaces).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "tickgate/feed/af_xdp.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/udp_frame.hpp"

namespace tickgate {
namespace {

// An Ethernet frame: `vlans` tags, IPv4 with `ip_options` 4-byte words, UDP, payload.
std::vector<std::byte> frame(std::size_t payload, int vlans = 0, int ip_options = 0, std::uint16_t frag = 0,
                             std::uint8_t proto = 17) {
    std::vector<std::uint8_t> f(12, 0xAA);  // MAC addresses
    for (int i = 0; i < vlans; ++i) f.insert(f.end(), {static_cast<std::uint8_t>(i ? 0x81 : 0x88), static_cast<std::uint8_t>(i ? 0x00 : 0xA8), 0x00, 0x07});
    f.insert(f.end(), {0x08, 0x00});
    const std::size_t ihl = 5 + static_cast<std::size_t>(ip_options);
    const std::size_t total = ihl * 4 + 8 + payload;
    f.insert(f.end(), {static_cast<std::uint8_t>(0x40 | ihl), 0, static_cast<std::uint8_t>(total >> 8),
                       static_cast<std::uint8_t>(total), 0, 1, static_cast<std::uint8_t>(frag >> 8),
                       static_cast<std::uint8_t>(frag), 1, proto, 0, 0, 10, 213, 0, 1, 239, 255, 10, 1});
    f.insert(f.end(), static_cast<std::size_t>(ip_options) * 4, 0x01);  // NOP options
    const std::size_t udp_len = 8 + payload;
    f.insert(f.end(), {0x30, 0x39, 0x79, 0x19, static_cast<std::uint8_t>(udp_len >> 8),
                       static_cast<std::uint8_t>(udp_len), 0, 0});
    for (std::size_t i = 0; i < payload; ++i) f.push_back(static_cast<std::uint8_t>(i));
    std::vector<std::byte> out(f.size());
    std::memcpy(out.data(), f.data(), f.size());
    return out;
}

TEST(UdpFrame, ReadsAddressesPortsAndPayloadThroughVlanStacksAndIpOptions) {
    for (int vlans = 0; vlans <= kMaxVlanTags; ++vlans) {
        for (int options = 0; options <= 10; options += 5) {
            const auto f = frame(100, vlans, options);
            UdpFrame u;
            ASSERT_EQ(parse_udp_frame(f, u), FrameVerdict::kUdp) << vlans << " tags, " << options << " option words";
            EXPECT_EQ(u.src_ip, 0x0AD50001u);
            EXPECT_EQ(u.dst_ip, 0xEFFF0A01u);
            EXPECT_EQ(u.src_port, 12345);
            EXPECT_EQ(u.dst_port, 31001);
            ASSERT_EQ(u.payload.size(), 100u);
            EXPECT_EQ(u.payload.data(), f.data() + f.size() - 100);
        }
    }
}

TEST(UdpFrame, MoreVlanTagsThanReadAreNotIpv4) {
    const auto f = frame(10, kMaxVlanTags + 1);
    UdpFrame u;
    EXPECT_EQ(parse_udp_frame(f, u), FrameVerdict::kNotIpv4);
}

TEST(UdpFrame, EthernetPaddingIsNotPayload) {
    auto f = frame(2);
    f.resize(60, std::byte{0xEE});  // the minimum Ethernet frame
    UdpFrame u;
    ASSERT_EQ(parse_udp_frame(f, u), FrameVerdict::kUdp);
    EXPECT_EQ(u.payload.size(), 2u);
}

TEST(UdpFrame, EveryTruncationIsRefusedNeverReadPast) {
    const auto whole = frame(64, 2, 3);
    for (std::size_t n = 0; n < whole.size(); ++n) {
        // A copy of exactly n bytes, so a read past it is a sanitizer report.
        const std::vector<std::byte> cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
        UdpFrame u;
        EXPECT_NE(parse_udp_frame(cut, u), FrameVerdict::kUdp) << n << " bytes";
    }
}

TEST(UdpFrame, FragmentsOtherProtocolsAndBadHeadersAreRefused) {
    UdpFrame u;
    EXPECT_EQ(parse_udp_frame(frame(8, 0, 0, 0x2000), u), FrameVerdict::kFragment);  // more fragments
    EXPECT_EQ(parse_udp_frame(frame(8, 0, 0, 0x0010), u), FrameVerdict::kFragment);  // an offset
    EXPECT_EQ(parse_udp_frame(frame(8, 0, 0, 0x4000), u), FrameVerdict::kUdp);       // don't fragment
    EXPECT_EQ(parse_udp_frame(frame(8, 0, 0, 0, 6), u), FrameVerdict::kNotUdp);
    auto short_ihl = frame(8);
    short_ihl[14] = std::byte{0x44};
    EXPECT_EQ(parse_udp_frame(short_ihl, u), FrameVerdict::kBadHeader);
    auto ipv6 = frame(8);
    ipv6[12] = std::byte{0x86};
    ipv6[13] = std::byte{0xDD};
    EXPECT_EQ(parse_udp_frame(ipv6, u), FrameVerdict::kNotIpv4);
    auto udp_short = frame(8);
    udp_short[14 + 20 + 5] = std::byte{7};  // UDP length 7
    EXPECT_EQ(parse_udp_frame(udp_short, u), FrameVerdict::kBadHeader);
    auto udp_long = frame(8);
    udp_long[14 + 20 + 5] = std::byte{17};  // past the IP total length
    EXPECT_EQ(parse_udp_frame(udp_long, u), FrameVerdict::kTruncated);
    auto total_long = frame(8);
    total_long[14 + 3] = std::byte{200};  // the IP total length past the frame
    EXPECT_EQ(parse_udp_frame(total_long, u), FrameVerdict::kTruncated);
}

TEST(UdpFrame, RandomBytesAndMutationsStayInBounds) {
    std::mt19937 rng(7);
    const auto base = frame(40, 1, 1);
    for (int i = 0; i < 20000; ++i) {
        std::vector<std::byte> f = base;
        f.resize(rng() % (base.size() + 8));
        for (int k = 0; k < 3; ++k)
            if (!f.empty()) f[rng() % f.size()] = static_cast<std::byte>(rng());
        UdpFrame u;
        if (parse_udp_frame(f, u) == FrameVerdict::kUdp) {
            ASSERT_GE(u.payload.data(), f.data());
            ASSERT_LE(u.payload.data() + u.payload.size(), f.data() + f.size());
        }
    }
}

TEST(AfXdpConfig, KeysAreReadAndTheUmemIsInTheMemoryEstimate) {
    const Config c = parse_config(R"(
[receiver]
backend = "af_xdp"
af_xdp = { interface = "veth1", queues = [0, 2], mode = "generic", zero_copy = "false", frames = 1024, fallback = "sockets" }
)",
                                  "x.toml");
    EXPECT_EQ(c.receiver.backend, ReceiveBackend::kAfXdp);
    EXPECT_EQ(c.receiver.af_xdp.interface, "veth1");
    EXPECT_EQ(c.receiver.af_xdp.queues, (std::vector<std::uint32_t>{0, 2}));
    EXPECT_EQ(c.receiver.af_xdp.mode, "generic");
    EXPECT_EQ(c.receiver.af_xdp.zero_copy, "false");
    EXPECT_EQ(c.receiver.af_xdp.frames, 1024u);
    EXPECT_TRUE(c.receiver.af_xdp.fallback_to_sockets);
    EXPECT_EQ(XdpPort::umem_bytes(c.receiver.af_xdp), 2u * 1024 * 4096);
    const MemoryEstimate e = estimate_memory(c, "qfb1");
    const auto umem = std::find_if(e.parts.begin(), e.parts.end(), [](const MemoryPart& p) { return p.what == "AF_XDP UMEM"; });
    ASSERT_NE(umem, e.parts.end());
    EXPECT_EQ(umem->bytes, 2u * 1024 * 4096);
    const MemoryEstimate sockets = estimate_memory(parse_config("", "s.toml"), "qfb1");
    EXPECT_EQ(e.total_bytes - sockets.total_bytes, 2u * 1024 * 4096);
}

Config af_xdp_config(bool fallback) {
    Config cfg;
    ChannelConfig ch;
    ch.id = 21;
    ch.a = {"239.255.96.1", 39601, "127.0.0.1"};
    ch.b = {"239.255.96.2", 39602, "127.0.0.1"};
    cfg.channels.push_back(ch);
    cfg.receiver.backend = ReceiveBackend::kAfXdp;
    cfg.receiver.af_xdp.interface = "tgnosuchif0";
    cfg.receiver.af_xdp.fallback_to_sockets = fallback;
    return cfg;
}

TEST(AfXdpBackend, CannotStartIsAnErrorWithTheReason) {
    try {
        Receiver r(af_xdp_config(false));
        FAIL() << "started AF_XDP on an interface that does not exist";
    } catch (const XdpUnavailable& e) {
        EXPECT_NE(std::string(e.what()).find("tgnosuchif0: no such interface"), std::string::npos) << e.what();
    }
}

TEST(AfXdpBackend, FallbackToSocketsKeepsTheReasonAndReceivesOnSockets) {
    Receiver r(af_xdp_config(true));
    EXPECT_EQ(r.af_xdp(), nullptr);
    EXPECT_NE(r.af_xdp_fallback_reason().find("no such interface"), std::string::npos);
    EXPECT_EQ(r.lines().size(), 2u);
    EXPECT_EQ(r.poll_once(0, [](const RawDatagram&) {}), 0);  // the sockets answer: nothing queued
}

}  // namespace
}  // namespace tickgate
