// Tests of the QFB/1 packet builder, parse_ipv4 and the capture writer: the
// bytes written are checked against the formats by hand, then read back by
// libpcap itself.
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/qfb1/wire.hpp"

namespace tickgate {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// ------------------------------------------------------------------ helpers

Bytes to_bytes(std::span<const std::byte> s) {
    Bytes out(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) out[i] = std::to_integer<std::uint8_t>(s[i]);
    return out;
}

std::vector<std::byte> make_payload(std::size_t n, std::uint8_t seed) {
    std::vector<std::byte> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>(seed + i * 7);
    return p;
}

// Own little-endian / big-endian readers, independent of qfb1::load_le.
std::uint64_t le(const Bytes& b, std::size_t off, std::size_t n) {
    EXPECT_LE(off + n, b.size()) << "read past the end at " << off;
    if (off + n > b.size()) return 0;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{b[off + i]} << (8 * i);
    return v;
}
std::uint16_t le16(const Bytes& b, std::size_t off) { return static_cast<std::uint16_t>(le(b, off, 2)); }
std::uint32_t le32(const Bytes& b, std::size_t off) { return static_cast<std::uint32_t>(le(b, off, 4)); }
std::uint64_t le64(const Bytes& b, std::size_t off) { return le(b, off, 8); }

std::uint64_t be(const Bytes& b, std::size_t off, std::size_t n) {
    EXPECT_LE(off + n, b.size()) << "read past the end at " << off;
    if (off + n > b.size()) return 0;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | b[off + i];
    return v;
}
std::uint16_t be16(const Bytes& b, std::size_t off) { return static_cast<std::uint16_t>(be(b, off, 2)); }
std::uint32_t be32(const Bytes& b, std::size_t off) { return static_cast<std::uint32_t>(be(b, off, 4)); }

Bytes slice(const Bytes& b, std::size_t off, std::size_t n) {
    EXPECT_LE(off + n, b.size());
    if (off + n > b.size()) return {};
    return Bytes(b.begin() + static_cast<std::ptrdiff_t>(off), b.begin() + static_cast<std::ptrdiff_t>(off + n));
}

Bytes read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    EXPECT_TRUE(in.good()) << "cannot open " << p;
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Verifies an IPv4 header checksum: the one's-complement sum of all 16-bit
// words of the header (checksum included) is 0xFFFF.
bool ipv4_checksum_ok(const Bytes& b, std::size_t off) {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < 20; i += 2) sum += be16(b, off + i);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return sum == 0xffff;
}

constexpr std::uint32_t ip(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    return (std::uint32_t{a} << 24) | (std::uint32_t{b} << 16) | (std::uint32_t{c} << 8) | d;
}

// A temp directory per test, removed afterwards.
class TempDir {
public:
    TempDir() {
        static std::atomic<unsigned> counter{0};
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        std::string name = "tickgate-capture-test-" + std::to_string(::getpid()) + "-" +
                           std::to_string(counter++);
        if (info != nullptr) name += std::string("-") + info->name();
        for (char& c : name) {
            if (c == '/') c = '_';
        }
        dir_ = fs::temp_directory_path() / name;
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    [[nodiscard]] std::string file(const std::string& name) const { return (dir_ / name).string(); }
    [[nodiscard]] const fs::path& path() const { return dir_; }

private:
    fs::path dir_;
};

// Expected link-layer header length of a frame written by write_udp.
std::size_t link_header_len(LinkType link, std::uint16_t vlan) {
    switch (link) {
        case LinkType::kEthernet: return vlan != 0 ? 18 : 14;
        case LinkType::kLinuxSll: return 16;
        case LinkType::kLinuxSll2: return 20;
        case LinkType::kRaw:
        case LinkType::kIpv4: return 0;
        case LinkType::kNull: return 4;
    }
    return 0;
}

// Offset of the first record / EPB: after the pcap header or SHB + IDB.
std::size_t first_record(CaptureFormat f) { return f == CaptureFormat::kPcapng ? 28 + 32 : 24; }

// Frame of the first record of a file (pcap or pcapng).
Bytes first_frame(const Bytes& file, CaptureFormat f) {
    const std::size_t off = first_record(f);
    if (f == CaptureFormat::kPcapng) return slice(file, off + 28, le32(file, off + 20));
    return slice(file, off + 16, le32(file, off + 8));
}

// Writes one UDP datagram and returns the file's first frame.
Bytes one_frame(const TempDir& tmp, LinkType link, std::uint16_t vlan, std::uint32_t src,
                std::uint32_t dst, const std::vector<std::byte>& payload,
                CaptureFormat format = CaptureFormat::kPcapNano) {
    const std::string path = tmp.file("one.cap");
    {
        CaptureWriter w(path, format, link, vlan);
        w.write_udp(1'000'000'000, src, 40000, dst, 31001, payload);
    }
    return first_frame(read_file(path), format);
}

// Checks the IPv4 + UDP headers and payload of a written frame.
void expect_ipv4_udp(const Bytes& frame, std::size_t off, std::uint32_t src, std::uint16_t sport,
                     std::uint32_t dst, std::uint16_t dport, const std::vector<std::byte>& payload) {
    ASSERT_EQ(frame.size(), off + 28 + payload.size());
    EXPECT_EQ(frame[off + 0], 0x45);                       // version 4, IHL 5
    EXPECT_EQ(be16(frame, off + 2), 28 + payload.size());  // total length
    EXPECT_EQ(be16(frame, off + 6) & 0x4000, 0);           // DF not set
    EXPECT_EQ(be16(frame, off + 6) & 0x3fff, 0);           // not a fragment
    EXPECT_EQ(frame[off + 8], 1);                          // TTL
    EXPECT_EQ(frame[off + 9], 17);                         // UDP
    EXPECT_TRUE(ipv4_checksum_ok(frame, off));
    EXPECT_EQ(be32(frame, off + 12), src);
    EXPECT_EQ(be32(frame, off + 16), dst);
    EXPECT_EQ(be16(frame, off + 20), sport);
    EXPECT_EQ(be16(frame, off + 22), dport);
    EXPECT_EQ(be16(frame, off + 24), 8 + payload.size());
    EXPECT_EQ(be16(frame, off + 26), 0);  // UDP checksum not computed
    EXPECT_EQ(slice(frame, off + 28, payload.size()), to_bytes(payload));
}

constexpr std::uint32_t kGroup = ip(239, 255, 2, 3);
constexpr std::uint32_t kSrc = ip(10, 1, 2, 3);
constexpr std::uint32_t kUnicast = ip(10, 9, 8, 7);

// ============================================================ PacketBuilder

TEST(PacketBuilderTest, HeaderFields) {
    PacketBuilder b(0x1234, 0xA1B2C3D4u, 0x0102030405060708ull, 1'700'000'000'123'456'789);
    const Bytes p = to_bytes(b.bytes());
    ASSERT_EQ(p.size(), 28u);
    ASSERT_EQ(b.size(), 28u);
    EXPECT_EQ(p[0], 0x46);
    EXPECT_EQ(p[1], 0x51);
    EXPECT_EQ(le16(p, 0), qfb1::kMagic);
    EXPECT_EQ(p[2], 1);  // version
    EXPECT_EQ(p[3], 0);  // flags
    EXPECT_EQ(le16(p, 4), 0);
    EXPECT_EQ(b.msg_count(), 0);
    EXPECT_EQ(le16(p, 6), 0x1234);
    EXPECT_EQ(le32(p, 8), 0xA1B2C3D4u);
    EXPECT_EQ(le64(p, 12), 0x0102030405060708ull);
    EXPECT_EQ(static_cast<std::int64_t>(le64(p, 20)), 1'700'000'000'123'456'789);
    // Exact byte order of a multi-byte field.
    EXPECT_EQ(p[12], 0x08);
    EXPECT_EQ(p[19], 0x01);
}

TEST(PacketBuilderTest, Definition) {
    PacketBuilder b(1, 1, 1, 0);
    b.definition(77, "EURUSD").definition(78, "0123456789ABCDEF", -5);
    const Bytes p = to_bytes(b.bytes());
    ASSERT_EQ(p.size(), 28u + 2 * 32);
    std::size_t m = 28;
    EXPECT_EQ(le16(p, m + 0), 32);
    EXPECT_EQ(p[m + 2], 'I');
    EXPECT_EQ(p[m + 3], 0);
    EXPECT_EQ(le32(p, m + 4), 77u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(&p[m + 8]), 6), "EURUSD");
    for (std::size_t i = 14; i < 24; ++i) EXPECT_EQ(p[m + i], 0) << "symbol not NUL-padded at " << i;
    EXPECT_EQ(static_cast<std::int8_t>(p[m + 24]), -8);  // default exponent
    for (std::size_t i = 25; i < 32; ++i) EXPECT_EQ(p[m + i], 0) << "pad at " << i;
    m += 32;
    EXPECT_EQ(le32(p, m + 4), 78u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(&p[m + 8]), 16), "0123456789ABCDEF");
    EXPECT_EQ(static_cast<std::int8_t>(p[m + 24]), -5);
    EXPECT_EQ(le16(p, 4), 2);
}

TEST(PacketBuilderTest, DefinitionSymbolTooLongThrows) {
    PacketBuilder b(1, 1, 1, 0);
    EXPECT_THROW(b.definition(1, "0123456789ABCDEFG"), std::length_error);
    EXPECT_EQ(b.msg_count(), 0);
    EXPECT_EQ(b.size(), 28u);
}

TEST(PacketBuilderTest, Quote) {
    PacketBuilder b(1, 1, 1, 0);
    b.quote(0xCAFE, 0x1122334455667788ull, -3, -108'500'000, 1'000'000, 108'510'000, 0xFFFFFFFFu);
    const Bytes p = to_bytes(b.bytes());
    ASSERT_EQ(p.size(), 28u + 48);
    const std::size_t m = 28;
    EXPECT_EQ(le16(p, m), 48);
    EXPECT_EQ(p[m + 2], 'Q');
    EXPECT_EQ(p[m + 3], 0);
    EXPECT_EQ(le32(p, m + 4), 0xCAFEu);
    EXPECT_EQ(le64(p, m + 8), 0x1122334455667788ull);
    EXPECT_EQ(static_cast<std::int64_t>(le64(p, m + 16)), -3);
    EXPECT_EQ(static_cast<std::int64_t>(le64(p, m + 24)), -108'500'000);  // bid_px
    EXPECT_EQ(static_cast<std::int64_t>(le64(p, m + 32)), 108'510'000);   // ask_px
    EXPECT_EQ(le32(p, m + 40), 1'000'000u);                               // bid_qty
    EXPECT_EQ(le32(p, m + 44), 0xFFFFFFFFu);                              // ask_qty
    EXPECT_EQ(b.msg_count(), 1);
    EXPECT_EQ(le16(p, 4), 1);
}

TEST(PacketBuilderTest, Delta) {
    PacketBuilder b(1, 1, 1, 0);
    b.delta(9, 42, 1'700'000'000'000'000'001, 123'456'789, 500, 1, 1);
    const Bytes p = to_bytes(b.bytes());
    ASSERT_EQ(p.size(), 28u + 40);
    const std::size_t m = 28;
    EXPECT_EQ(le16(p, m), 40);
    EXPECT_EQ(p[m + 2], 'D');
    EXPECT_EQ(le32(p, m + 4), 9u);
    EXPECT_EQ(le64(p, m + 8), 42u);
    EXPECT_EQ(static_cast<std::int64_t>(le64(p, m + 16)), 1'700'000'000'000'000'001);
    EXPECT_EQ(static_cast<std::int64_t>(le64(p, m + 24)), 123'456'789);
    EXPECT_EQ(le32(p, m + 32), 500u);
    EXPECT_EQ(p[m + 36], 1);  // side ask
    EXPECT_EQ(p[m + 37], 1);  // action delete
    EXPECT_EQ(p[m + 38], 0);
    EXPECT_EQ(p[m + 39], 0);
}

TEST(PacketBuilderTest, Snapshot) {
    const std::array<PacketBuilder::SnapLevel, 2> bids{{{100, 1}, {99, 2}}};
    const std::array<PacketBuilder::SnapLevel, 1> asks{{{-101, 0xABCDEF01u}}};
    PacketBuilder b(1, 1, 1, 0);
    b.snapshot(5, 77, 888, bids, asks);
    const Bytes p = to_bytes(b.bytes());
    ASSERT_EQ(p.size(), 28u + 32 + 3 * 16);
    const std::size_t m = 28;
    EXPECT_EQ(le16(p, m), 32 + 3 * 16);
    EXPECT_EQ(p[m + 2], 'S');
    EXPECT_EQ(le32(p, m + 4), 5u);
    EXPECT_EQ(le64(p, m + 8), 77u);
    EXPECT_EQ(le64(p, m + 16), 888u);
    EXPECT_EQ(p[m + 24], 2);  // n_bids
    EXPECT_EQ(p[m + 25], 1);  // n_asks
    for (std::size_t i = 26; i < 32; ++i) EXPECT_EQ(p[m + i], 0);
    // bids best-first, then asks
    EXPECT_EQ(static_cast<std::int64_t>(le64(p, m + 32)), 100);
    EXPECT_EQ(le32(p, m + 40), 1u);
    EXPECT_EQ(le32(p, m + 44), 0u);  // pad
    EXPECT_EQ(static_cast<std::int64_t>(le64(p, m + 48)), 99);
    EXPECT_EQ(le32(p, m + 56), 2u);
    EXPECT_EQ(static_cast<std::int64_t>(le64(p, m + 64)), -101);
    EXPECT_EQ(le32(p, m + 72), 0xABCDEF01u);
    EXPECT_EQ(le32(p, m + 76), 0u);
}

TEST(PacketBuilderTest, EmptySnapshotAndTooManyLevels) {
    PacketBuilder b(1, 1, 1, 0);
    b.snapshot(5, 0, 0, {}, {});
    const Bytes p = to_bytes(b.bytes());
    ASSERT_EQ(p.size(), 28u + 32);
    EXPECT_EQ(le16(p, 28), 32);
    EXPECT_EQ(p[28 + 24], 0);
    EXPECT_EQ(p[28 + 25], 0);
    const std::vector<PacketBuilder::SnapLevel> many(256, {1, 1});
    EXPECT_THROW(b.snapshot(5, 0, 0, many, {}), std::length_error);
    EXPECT_EQ(b.msg_count(), 1);
}

TEST(PacketBuilderTest, Heartbeat) {
    PacketBuilder b(1, 1, 1, 0);
    b.heartbeat(3, 1001, 5'000);
    const Bytes p = to_bytes(b.bytes());
    ASSERT_EQ(p.size(), 28u + 24);
    EXPECT_EQ(le16(p, 28), 24);
    EXPECT_EQ(p[30], 'H');
    EXPECT_EQ(le32(p, 32), 3u);
    EXPECT_EQ(le64(p, 36), 1001u);
    EXPECT_EQ(le64(p, 44), 5'000u);
}

TEST(PacketBuilderTest, RawMessage) {
    const std::vector<std::byte> body = make_payload(13, 0x20);
    PacketBuilder b(1, 1, 1, 0);
    b.raw_message('Z', body).raw_message('Q', {});
    const Bytes p = to_bytes(b.bytes());
    ASSERT_EQ(p.size(), 28u + 17 + 4);
    EXPECT_EQ(le16(p, 28), 17);  // 4 + body
    EXPECT_EQ(p[30], 'Z');
    EXPECT_EQ(p[31], 0);
    EXPECT_EQ(slice(p, 32, 13), to_bytes(body));
    EXPECT_EQ(le16(p, 45), 4);  // header only
    EXPECT_EQ(p[47], 'Q');
    EXPECT_EQ(b.msg_count(), 2);
    EXPECT_EQ(le16(p, 4), 2);
}

TEST(PacketBuilderTest, MsgCountAndLayoutOfAMixedPacket) {
    const std::array<PacketBuilder::SnapLevel, 1> lv{{{10, 20}}};
    PacketBuilder b(7, 2, 3, 4);
    b.definition(1, "A");
    EXPECT_EQ(b.msg_count(), 1);
    b.quote(1, 1, 0, 1, 1, 2, 1);
    b.delta(1, 2, 0, 1, 1, 0, 0);
    b.snapshot(1, 2, 0, lv, lv);
    b.heartbeat(1, 3, 0);
    EXPECT_EQ(b.msg_count(), 5);
    const Bytes p = to_bytes(b.bytes());
    EXPECT_EQ(le16(p, 4), 5);
    // Walk the messages by length.
    const std::string types = "IQDSH";
    const std::array<std::size_t, 5> sizes{32, 48, 40, 64, 24};
    std::size_t off = 28;
    for (std::size_t i = 0; i < types.size(); ++i) {
        EXPECT_EQ(le16(p, off), sizes[i]) << i;
        EXPECT_EQ(p[off + 2], static_cast<std::uint8_t>(types[i])) << i;
        off += le16(p, off);
    }
    EXPECT_EQ(off, p.size());

    // mutable_bytes() is the same buffer.
    b.mutable_bytes()[2] = std::byte{2};
    EXPECT_EQ(std::to_integer<int>(b.bytes()[2]), 2);
}

TEST(PacketBuilderTest, DecodesCleanlyWithThePacketDecoder) {
    const std::array<PacketBuilder::SnapLevel, 2> bids{{{100, 1}, {99, 2}}};
    const std::array<PacketBuilder::SnapLevel, 2> asks{{{101, 3}, {102, 4}}};
    PacketBuilder b(7, 2, 3, 4);
    b.definition(1, "EURUSD", -5).quote(1, 1, 10, 100, 1, 101, 2).delta(1, 2, 11, 99, 5, 0, 0);
    b.snapshot(1, 2, 12, bids, asks).heartbeat(1, 3, 13);
    SessionDecoder<qfb1::Protocol> dec;
    std::vector<EventKind> kinds;
    const auto r = dec.decode(b.bytes(), 0, 0, [&](const Event& e) { kinds.push_back(e.kind); });
    EXPECT_EQ(r.verdict, qfb1::PacketVerdict::kDecoded);
    EXPECT_EQ(r.fault, qfb1::Fault::kNone);
    EXPECT_EQ(r.messages, 5);
    EXPECT_EQ(kinds.size(), 7u);  // I Q D S(begin + 2 level events) H
}

// =============================================================== parse_ipv4

TEST(ParseIpv4Test, GoodInputs) {
    EXPECT_EQ(parse_ipv4("0.0.0.0"), 0u);
    EXPECT_EQ(parse_ipv4("255.255.255.255"), 0xFFFFFFFFu);
    EXPECT_EQ(parse_ipv4("239.1.2.3"), 0xEF010203u);
    EXPECT_EQ(parse_ipv4("10.0.0.1"), 0x0A000001u);
    EXPECT_EQ(parse_ipv4("192.168.100.200"), ip(192, 168, 100, 200));
    EXPECT_EQ(parse_ipv4("1.22.0.99"), ip(1, 22, 0, 99));
}

TEST(ParseIpv4Test, BadInputs) {
    const std::vector<std::string_view> bad{
        "",
        "1.2.3",
        "1.2.3.4.5",
        "256.1.1.1",
        "1.2.3.256",
        "1..3.4",
        ".1.2.3",
        "1.2.3.",
        "+1.2.3.4",
        "1.+2.3.4",
        "-1.2.3.4",
        " 1.2.3.4",
        "1.2.3.4 ",
        "1. 2.3.4",
        "1.2.3.a",
        "0x1.2.3.4",
        "01.2.3.4",  // leading zero: octal in inet_aton, refused
        "1.2.3.0004",
        "99999999999.1.1.1",
        "4294967296.0.0.0",
        "1.2.3.4\n",
        "1,2,3,4",
        "localhost",
        "...",
        std::string_view("1.2.3.4\0", 8),
    };
    for (const std::string_view s : bad)
        EXPECT_FALSE(parse_ipv4(s).has_value()) << "accepted '" << std::string(s) << "'";
}

// ======================================================= CaptureWriter bytes

TEST(CaptureWriterTest, PcapMicroHeaderAndTimestamps) {
    TempDir tmp;
    const std::string path = tmp.file("micro.pcap");
    const std::vector<std::byte> payload = make_payload(40, 1);
    {
        CaptureWriter w(path, CaptureFormat::kPcapMicro, LinkType::kEthernet);
        w.write_udp(1'700'000'000'123'456'789, kSrc, 1, kGroup, 2, payload);
        w.write_udp(5'000'000'999, kSrc, 1, kGroup, 2, payload);
    }
    const Bytes f = read_file(path);
    const std::size_t frame = 14 + 28 + 40;
    ASSERT_EQ(f.size(), 24 + 2 * (16 + frame));
    EXPECT_EQ(slice(f, 0, 4), (Bytes{0xd4, 0xc3, 0xb2, 0xa1}));
    EXPECT_EQ(le32(f, 0), 0xa1b2c3d4u);
    EXPECT_EQ(le16(f, 4), 2);
    EXPECT_EQ(le16(f, 6), 4);
    EXPECT_EQ(le32(f, 8), 0u);   // thiszone
    EXPECT_EQ(le32(f, 12), 0u);  // sigfigs
    EXPECT_EQ(le32(f, 16), 65535u);
    EXPECT_EQ(le32(f, 20), 1u);  // LINKTYPE_ETHERNET
    EXPECT_EQ(le32(f, 24), 1'700'000'000u);
    EXPECT_EQ(le32(f, 28), 123'456u);  // µs, truncated
    EXPECT_EQ(le32(f, 32), frame);
    EXPECT_EQ(le32(f, 36), frame);
    const std::size_t r2 = 24 + 16 + frame;
    EXPECT_EQ(le32(f, r2), 5u);
    EXPECT_EQ(le32(f, r2 + 4), 0u);  // 999 ns -> 0 µs
}

TEST(CaptureWriterTest, PcapNanoHeaderAndTimestamps) {
    TempDir tmp;
    const std::string path = tmp.file("nano.pcap");
    const std::vector<std::byte> payload = make_payload(3, 9);
    {
        CaptureWriter w(path, CaptureFormat::kPcapNano, LinkType::kLinuxSll2);
        w.write_udp(1'700'000'000'123'456'789, kSrc, 1, kGroup, 2, payload);
        w.write_udp(999'999'999, kSrc, 1, kGroup, 2, payload);
    }
    const Bytes f = read_file(path);
    const std::size_t frame = 20 + 28 + 3;
    ASSERT_EQ(f.size(), 24 + 2 * (16 + frame));
    EXPECT_EQ(slice(f, 0, 4), (Bytes{0x4d, 0x3c, 0xb2, 0xa1}));
    EXPECT_EQ(le16(f, 4), 2);
    EXPECT_EQ(le16(f, 6), 4);
    EXPECT_EQ(le32(f, 16), 65535u);
    EXPECT_EQ(le32(f, 20), 276u);  // LINKTYPE_LINUX_SLL2
    EXPECT_EQ(le32(f, 24), 1'700'000'000u);
    EXPECT_EQ(le32(f, 28), 123'456'789u);
    EXPECT_EQ(le32(f, 32), frame);
    EXPECT_EQ(le32(f, 36), frame);
    const std::size_t r2 = 24 + 16 + frame;
    EXPECT_EQ(le32(f, r2), 0u);
    EXPECT_EQ(le32(f, r2 + 4), 999'999'999u);
}

TEST(CaptureWriterTest, PcapngBlockStructure) {
    TempDir tmp;
    const std::string path = tmp.file("blocks.pcapng");
    // Frame lengths 42+n cover every padding remainder.
    const std::vector<std::size_t> sizes{0, 1, 2, 3, 4, 5, 1400};
    std::vector<std::int64_t> ts;
    {
        CaptureWriter w(path, CaptureFormat::kPcapng, LinkType::kEthernet);
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            ts.push_back(1'700'000'000'000'000'000 + static_cast<std::int64_t>(i) * 1'234'567'891 + 7);
            w.write_udp(ts.back(), kSrc, 1000, kGroup, 2000,
                        make_payload(sizes[i], static_cast<std::uint8_t>(i)));
        }
    }
    const Bytes f = read_file(path);

    // Section Header Block.
    ASSERT_GE(f.size(), 28u);
    EXPECT_EQ(le32(f, 0), 0x0A0D0D0Au);
    const std::uint32_t shb_len = le32(f, 4);
    EXPECT_EQ(shb_len % 4, 0u);
    EXPECT_EQ(le32(f, 8), 0x1A2B3C4Du);
    EXPECT_EQ(slice(f, 8, 4), (Bytes{0x4D, 0x3C, 0x2B, 0x1A}));
    EXPECT_EQ(le16(f, 12), 1);  // major
    EXPECT_EQ(le16(f, 14), 0);  // minor
    EXPECT_EQ(le64(f, 16), 0xFFFFFFFFFFFFFFFFull);
    ASSERT_LE(shb_len, f.size());
    EXPECT_EQ(le32(f, shb_len - 4), shb_len);

    // Interface Description Block.
    std::size_t off = shb_len;
    EXPECT_EQ(le32(f, off), 1u);
    const std::uint32_t idb_len = le32(f, off + 4);
    EXPECT_EQ(idb_len % 4, 0u);
    EXPECT_EQ(le16(f, off + 8), 1);  // LINKTYPE_ETHERNET
    EXPECT_EQ(le16(f, off + 10), 0);
    EXPECT_EQ(le32(f, off + 12), 65535u);
    EXPECT_EQ(le32(f, off + idb_len - 4), idb_len);
    // Options: find if_tsresol (code 9) = 9, ended by opt_endofopt.
    bool tsresol = false;
    bool ended = false;
    for (std::size_t o = off + 16; o + 4 <= off + idb_len - 4;) {
        const std::uint16_t code = le16(f, o);
        const std::uint16_t len = le16(f, o + 2);
        if (code == 0) {
            ended = true;
            break;
        }
        if (code == 9) {
            EXPECT_EQ(len, 1);
            EXPECT_EQ(f[o + 4], 9);
            tsresol = true;
        }
        o += 4 + ((len + 3u) & ~3u);
    }
    EXPECT_TRUE(tsresol);
    EXPECT_TRUE(ended);

    // Enhanced Packet Blocks.
    off += idb_len;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        ASSERT_LE(off + 32, f.size()) << i;
        EXPECT_EQ(le32(f, off), 6u) << i;
        const std::uint32_t len = le32(f, off + 4);
        EXPECT_EQ(len % 4, 0u) << i;
        ASSERT_LE(off + len, f.size()) << i;
        EXPECT_EQ(le32(f, off + len - 4), len) << "trailing length " << i;
        EXPECT_EQ(le32(f, off + 8), 0u);  // interface 0
        const std::uint64_t t = (std::uint64_t{le32(f, off + 12)} << 32) | le32(f, off + 16);
        EXPECT_EQ(t, static_cast<std::uint64_t>(ts[i])) << i;
        const std::uint32_t cap = le32(f, off + 20);
        EXPECT_EQ(cap, 14 + 28 + sizes[i]) << i;
        EXPECT_EQ(le32(f, off + 24), cap) << i;
        EXPECT_EQ(len, 32 + ((cap + 3u) & ~3u)) << i;
        for (std::size_t k = 28 + cap; k < len - 4; ++k) EXPECT_EQ(f[off + k], 0) << "pad " << i;
        const Bytes frame = slice(f, off + 28, cap);
        expect_ipv4_udp(frame, 14, kSrc, 1000, kGroup, 2000,
                        make_payload(sizes[i], static_cast<std::uint8_t>(i)));
        off += len;
    }
    EXPECT_EQ(off, f.size());
}

TEST(CaptureWriterTest, EthernetMulticastFrame) {
    TempDir tmp;
    const std::vector<std::byte> payload = make_payload(64, 3);
    // 239.255.2.3: low 23 bits -> 7f:02:03.
    const Bytes fr = one_frame(tmp, LinkType::kEthernet, 0, kSrc, kGroup, payload);
    ASSERT_EQ(fr.size(), 14 + 28 + payload.size());
    EXPECT_EQ(slice(fr, 0, 6), (Bytes{0x01, 0x00, 0x5e, 0x7f, 0x02, 0x03}));
    EXPECT_EQ(fr[6] & 0x01, 0);  // source MAC is unicast
    EXPECT_EQ(be16(fr, 12), 0x0800);
    expect_ipv4_udp(fr, 14, kSrc, 40000, kGroup, 31001, payload);

    // 224.128.0.1: the top bit of the second octet is not mapped.
    const Bytes fr2 = one_frame(tmp, LinkType::kEthernet, 0, kSrc, ip(224, 128, 0, 1), payload);
    EXPECT_EQ(slice(fr2, 0, 6), (Bytes{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}));
}

TEST(CaptureWriterTest, EthernetUnicastFrame) {
    TempDir tmp;
    const std::vector<std::byte> payload = make_payload(10, 3);
    const Bytes fr = one_frame(tmp, LinkType::kEthernet, 0, kSrc, kUnicast, payload);
    EXPECT_EQ(fr[0] & 0x01, 0);  // not a group MAC
    EXPECT_NE(slice(fr, 0, 3), (Bytes{0x01, 0x00, 0x5e}));
    EXPECT_EQ(be16(fr, 12), 0x0800);
    expect_ipv4_udp(fr, 14, kSrc, 40000, kUnicast, 31001, payload);
}

TEST(CaptureWriterTest, EthernetVlanFrame) {
    TempDir tmp;
    const std::vector<std::byte> payload = make_payload(33, 5);
    const Bytes fr = one_frame(tmp, LinkType::kEthernet, 141, kSrc, kGroup, payload);
    ASSERT_EQ(fr.size(), 18 + 28 + payload.size());
    EXPECT_EQ(slice(fr, 0, 6), (Bytes{0x01, 0x00, 0x5e, 0x7f, 0x02, 0x03}));
    EXPECT_EQ(be16(fr, 12), 0x8100);  // TPID
    EXPECT_EQ(be16(fr, 14), 141);     // TCI: PCP 0, DEI 0, VID 141
    EXPECT_EQ(be16(fr, 16), 0x0800);
    expect_ipv4_udp(fr, 18, kSrc, 40000, kGroup, 31001, payload);
}

TEST(CaptureWriterTest, LinuxSllFrame) {
    TempDir tmp;
    const std::vector<std::byte> payload = make_payload(20, 7);
    const Bytes fr = one_frame(tmp, LinkType::kLinuxSll, 0, kSrc, kGroup, payload);
    ASSERT_EQ(fr.size(), 16 + 28 + payload.size());
    EXPECT_EQ(be16(fr, 0), 2);   // PACKET_MULTICAST
    EXPECT_EQ(be16(fr, 2), 1);   // ARPHRD_ETHER
    EXPECT_EQ(be16(fr, 4), 6);   // address length
    EXPECT_EQ(be16(fr, 14), 0x0800);
    expect_ipv4_udp(fr, 16, kSrc, 40000, kGroup, 31001, payload);

    const Bytes uni = one_frame(tmp, LinkType::kLinuxSll, 0, kSrc, kUnicast, payload);
    EXPECT_EQ(be16(uni, 0), 0);  // PACKET_HOST
    expect_ipv4_udp(uni, 16, kSrc, 40000, kUnicast, 31001, payload);
}

TEST(CaptureWriterTest, LinuxSll2Frame) {
    TempDir tmp;
    const std::vector<std::byte> payload = make_payload(21, 8);
    const Bytes fr = one_frame(tmp, LinkType::kLinuxSll2, 0, kSrc, kGroup, payload);
    ASSERT_EQ(fr.size(), 20 + 28 + payload.size());
    EXPECT_EQ(be16(fr, 0), 0x0800);  // protocol
    EXPECT_EQ(be16(fr, 2), 0);       // reserved
    EXPECT_NE(be32(fr, 4), 0u);      // interface index
    EXPECT_EQ(be16(fr, 8), 1);       // ARPHRD_ETHER
    EXPECT_EQ(fr[10], 2);            // PACKET_MULTICAST
    EXPECT_EQ(fr[11], 6);            // address length
    expect_ipv4_udp(fr, 20, kSrc, 40000, kGroup, 31001, payload);
}

TEST(CaptureWriterTest, RawAndIpv4Frames) {
    TempDir tmp;
    const std::vector<std::byte> payload = make_payload(15, 9);
    for (const LinkType link : {LinkType::kRaw, LinkType::kIpv4}) {
        const std::string path = tmp.file("raw.pcap");
        {
            CaptureWriter w(path, CaptureFormat::kPcapMicro, link);
            w.write_udp(1, kSrc, 40000, kGroup, 31001, payload);
        }
        const Bytes f = read_file(path);
        EXPECT_EQ(le32(f, 20), static_cast<std::uint32_t>(link));
        const Bytes fr = first_frame(f, CaptureFormat::kPcapMicro);
        expect_ipv4_udp(fr, 0, kSrc, 40000, kGroup, 31001, payload);
    }
}

TEST(CaptureWriterTest, NullFrame) {
    TempDir tmp;
    const std::vector<std::byte> payload = make_payload(15, 9);
    const Bytes fr = one_frame(tmp, LinkType::kNull, 0, kSrc, kGroup, payload);
    std::uint32_t af = 0;
    std::memcpy(&af, fr.data(), 4);  // host byte order
    EXPECT_EQ(af, 2u);               // AF_INET
    expect_ipv4_udp(fr, 4, kSrc, 40000, kGroup, 31001, payload);
}

TEST(CaptureWriterTest, IpIdIncrementsAndChecksumsStayValid) {
    TempDir tmp;
    const std::string path = tmp.file("ids.pcap");
    {
        CaptureWriter w(path, CaptureFormat::kPcapNano, LinkType::kRaw);
        for (int i = 0; i < 5; ++i)
            w.write_udp(i, ip(192, 168, 1, static_cast<std::uint8_t>(i)), 1, kGroup, 2,
                        make_payload(static_cast<std::size_t>(i) * 3, 1));
    }
    const Bytes f = read_file(path);
    std::size_t off = 24;
    std::uint16_t prev = 0;
    for (int i = 0; i < 5; ++i) {
        const std::uint32_t cap = le32(f, off + 8);
        const Bytes fr = slice(f, off + 16, cap);
        EXPECT_TRUE(ipv4_checksum_ok(fr, 0)) << i;
        const std::uint16_t id = be16(fr, 4);
        if (i > 0) {
            EXPECT_EQ(id, static_cast<std::uint16_t>(prev + 1)) << i;
        }
        prev = id;
        off += 16 + cap;
    }
    EXPECT_EQ(off, f.size());
}

TEST(CaptureWriterTest, WriteFrameIsVerbatim) {
    TempDir tmp;
    // An ARP frame: not UDP, written as given.
    Bytes arp(42, 0);
    for (std::size_t i = 0; i < 6; ++i) arp[i] = 0xff;
    arp[12] = 0x08;
    arp[13] = 0x06;
    arp[41] = 0x5a;
    std::vector<std::byte> frame(arp.size());
    for (std::size_t i = 0; i < arp.size(); ++i) frame[i] = static_cast<std::byte>(arp[i]);
    for (const CaptureFormat fmt : {CaptureFormat::kPcapMicro, CaptureFormat::kPcapNano, CaptureFormat::kPcapng}) {
        const std::string path = tmp.file("arp.cap");
        {
            CaptureWriter w(path, fmt, LinkType::kEthernet);
            w.write_frame(42, frame);
            w.write_frame(43, {});  // empty frame is still a record
        }
        const Bytes f = read_file(path);
        EXPECT_EQ(first_frame(f, fmt), arp);
        const std::size_t rec = fmt == CaptureFormat::kPcapng ? 32 + 44 : 16 + 42;
        EXPECT_EQ(f.size(), first_record(fmt) + rec + (fmt == CaptureFormat::kPcapng ? 32 : 16));
    }
}

TEST(CaptureWriterTest, OpenFailureNamesThePathAndReason) {
    TempDir tmp;
    const std::string missing = tmp.file("no/such/dir/x.pcap");
    try {
        CaptureWriter w(missing);
        FAIL() << "no exception";
    } catch (const CaptureError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(missing), std::string::npos) << what;
        EXPECT_NE(what.find(std::strerror(ENOENT)), std::string::npos) << what;
    }
    try {
        CaptureWriter w(tmp.path().string());  // a directory
        FAIL() << "no exception";
    } catch (const CaptureError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(tmp.path().string()), std::string::npos) << what;
        EXPECT_NE(what.find(std::strerror(EISDIR)), std::string::npos) << what;
    }
}

TEST(CaptureWriterTest, WriteFailureNamesThePathAndReason) {
    if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
    const std::vector<std::byte> payload = make_payload(1000, 1);
    try {
        CaptureWriter w("/dev/full", CaptureFormat::kPcapng);
        for (int i = 0; i < 100; ++i) w.write_udp(i, kSrc, 1, kGroup, 2, payload);
        w.flush();
        FAIL() << "no exception";
    } catch (const CaptureError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("/dev/full"), std::string::npos) << what;
        EXPECT_NE(what.find(std::strerror(ENOSPC)), std::string::npos) << what;
    }
    // The destructor of a writer with unflushable data does not throw.
    EXPECT_NO_THROW({
        CaptureWriter w("/dev/full", CaptureFormat::kPcapNano);
        w.write_udp(1, kSrc, 1, kGroup, 2, payload);
    });
}

TEST(CaptureWriterTest, RejectsWhatCannotBeWritten) {
    TempDir tmp;
    CaptureWriter w(tmp.file("bad.pcap"), CaptureFormat::kPcapNano);
    EXPECT_THROW(w.write_udp(-1, kSrc, 1, kGroup, 2, make_payload(1, 1)), CaptureError);
    EXPECT_THROW(w.write_udp(1, kSrc, 1, kGroup, 2, make_payload(65508, 1)), CaptureError);
    EXPECT_NO_THROW(w.write_udp(1, kSrc, 1, kGroup, 2, make_payload(1400, 1)));
    CaptureWriter odd(tmp.file("odd.pcap"), CaptureFormat::kPcapNano, static_cast<LinkType>(147));
    EXPECT_THROW(odd.write_udp(1, kSrc, 1, kGroup, 2, make_payload(1, 1)), CaptureError);
    EXPECT_NO_THROW(odd.write_frame(1, make_payload(10, 1)));
}

// ================================================ read back through libpcap

struct Combo {
    CaptureFormat format;
    LinkType link;
    std::uint16_t vlan;
};

std::string combo_name(const ::testing::TestParamInfo<Combo>& info) {
    std::string n;
    switch (info.param.format) {
        case CaptureFormat::kPcapMicro: n = "PcapMicro"; break;
        case CaptureFormat::kPcapNano: n = "PcapNano"; break;
        case CaptureFormat::kPcapng: n = "Pcapng"; break;
    }
    switch (info.param.link) {
        case LinkType::kEthernet: n += info.param.vlan != 0 ? "_EthernetVlan" : "_Ethernet"; break;
        case LinkType::kLinuxSll: n += "_Sll"; break;
        case LinkType::kLinuxSll2: n += "_Sll2"; break;
        case LinkType::kRaw: n += "_Raw"; break;
        case LinkType::kIpv4: n += "_Ipv4"; break;
        case LinkType::kNull: n += "_Null"; break;
    }
    return n;
}

std::vector<Combo> all_combos(bool with_null_and_ipv4) {
    std::vector<Combo> out;
    for (const CaptureFormat f : {CaptureFormat::kPcapMicro, CaptureFormat::kPcapNano, CaptureFormat::kPcapng}) {
        out.push_back({f, LinkType::kEthernet, 0});
        out.push_back({f, LinkType::kEthernet, 141});
        out.push_back({f, LinkType::kLinuxSll, 0});
        out.push_back({f, LinkType::kLinuxSll2, 0});
        out.push_back({f, LinkType::kRaw, 0});
        if (with_null_and_ipv4) {
            out.push_back({f, LinkType::kIpv4, 0});
            out.push_back({f, LinkType::kNull, 0});
        }
    }
    return out;
}

struct Sent {
    std::int64_t ts_ns;
    std::uint32_t src, dst;
    std::uint16_t sport, dport;
    std::vector<std::byte> payload;
};

// N datagrams with varied sizes, addresses and sub-second timestamps,
// including QFB/1 packets from the builder.
std::vector<Sent> sample_datagrams() {
    std::vector<Sent> out;
    for (int i = 0; i < 12; ++i) {
        Sent s;
        s.ts_ns = 1'700'000'000'000'000'000 + std::int64_t{i} * 987'654'321 + i;
        s.src = ip(10, 0, 0, static_cast<std::uint8_t>(1 + i));
        s.dst = (i % 3 == 2) ? ip(10, 20, 30, static_cast<std::uint8_t>(i)) : ip(239, 1, 1, static_cast<std::uint8_t>(i % 2));
        s.sport = static_cast<std::uint16_t>(50000 + i);
        s.dport = static_cast<std::uint16_t>(31000 + i % 2);
        if (i % 2 == 0) {
            PacketBuilder b(1, 1, static_cast<std::uint64_t>(i + 1), s.ts_ns);
            b.quote(7, static_cast<std::uint64_t>(i + 1), s.ts_ns - 5, 100 + i, 1, 101 + i, 2);
            if (i % 4 == 0) b.heartbeat(8, 3, s.ts_ns);
            s.payload.assign(b.bytes().begin(), b.bytes().end());
        } else {
            s.payload = make_payload(static_cast<std::size_t>(i) * 97 % 1401, static_cast<std::uint8_t>(i));
        }
        out.push_back(std::move(s));
    }
    return out;
}

std::int64_t expected_ts(CaptureFormat f, std::int64_t ts) {
    return f == CaptureFormat::kPcapMicro ? ts / 1000 * 1000 : ts;
}

void write_samples(const std::string& path, const Combo& c, const std::vector<Sent>& sent) {
    CaptureWriter w(path, c.format, c.link, c.vlan);
    for (const Sent& s : sent) w.write_udp(s.ts_ns, s.src, s.sport, s.dst, s.dport, s.payload);
}

class CaptureLibpcapTest : public ::testing::TestWithParam<Combo> {};

TEST_P(CaptureLibpcapTest, LibpcapReadsWhatWeWrite) {
    const Combo c = GetParam();
    TempDir tmp;
    const std::string path = tmp.file("libpcap.cap");
    const std::vector<Sent> sent = sample_datagrams();
    write_samples(path, c, sent);

    std::array<char, PCAP_ERRBUF_SIZE> err{};
    pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err.data());
    ASSERT_NE(p, nullptr) << err.data();
    // libpcap reports DLT_ values: LINKTYPE_RAW (101) is DLT_RAW (12 on Linux).
    const int expected_dlt = c.link == LinkType::kRaw ? DLT_RAW : static_cast<int>(c.link);
    EXPECT_EQ(pcap_datalink(p), expected_dlt);
    EXPECT_EQ(pcap_snapshot(p), 65535);
    EXPECT_EQ(pcap_get_tstamp_precision(p), PCAP_TSTAMP_PRECISION_NANO);

    const std::size_t hdr = link_header_len(c.link, c.vlan);
    std::size_t n = 0;
    pcap_pkthdr* h = nullptr;
    const u_char* data = nullptr;
    int rc = 0;
    while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
        ASSERT_LT(n, sent.size());
        const Sent& s = sent[n];
        const std::size_t frame_len = hdr + 28 + s.payload.size();
        EXPECT_EQ(h->caplen, frame_len) << n;
        EXPECT_EQ(h->len, frame_len) << n;
        const std::int64_t ts = expected_ts(c.format, s.ts_ns);
        EXPECT_EQ(static_cast<std::int64_t>(h->ts.tv_sec), ts / 1'000'000'000) << n;
        EXPECT_EQ(static_cast<std::int64_t>(h->ts.tv_usec), ts % 1'000'000'000) << n;  // ns here
        const Bytes frame(data, data + h->caplen);
        expect_ipv4_udp(frame, hdr, s.src, s.sport, s.dst, s.dport, s.payload);
        ++n;
    }
    EXPECT_EQ(rc, PCAP_ERROR_BREAK) << pcap_geterr(p);  // clean end of file
    EXPECT_EQ(n, sent.size());
    pcap_close(p);
}

INSTANTIATE_TEST_SUITE_P(CaptureAll, CaptureLibpcapTest, ::testing::ValuesIn(all_combos(true)), combo_name);

// ======================================= round trip through CaptureReader

class CaptureRoundTripTest : public ::testing::TestWithParam<Combo> {};

TEST_P(CaptureRoundTripTest, ReaderAndExtractUdpGiveBackWhatWasWritten) {
    const Combo c = GetParam();
    TempDir tmp;
    const std::string path = tmp.file("roundtrip.cap");
    const std::vector<Sent> sent = sample_datagrams();
    write_samples(path, c, sent);

    CaptureReader r(path);
    EXPECT_EQ(r.link_type(), c.link);
    EXPECT_EQ(r.file_size(), fs::file_size(path));
    FrameCounters counters;
    std::size_t n = 0;
    while (const auto rec = r.next()) {
        ASSERT_LT(n, sent.size());
        const Sent& s = sent[n];
        ++counters.records;
        EXPECT_EQ(rec->ts_ns, expected_ts(c.format, s.ts_ns)) << n;
        const auto d = extract_udp(r.link_type(), rec->frame, counters);
        ASSERT_TRUE(d.has_value()) << n;
        EXPECT_EQ(d->src_ip, s.src) << n;
        EXPECT_EQ(d->dst_ip, s.dst) << n;
        EXPECT_EQ(d->src_port, s.sport) << n;
        EXPECT_EQ(d->dst_port, s.dport) << n;
        EXPECT_EQ(to_bytes(d->payload), to_bytes(s.payload)) << n;
        ++n;
    }
    EXPECT_EQ(n, sent.size());
    EXPECT_FALSE(r.next().has_value());  // stays at the end
    EXPECT_EQ(counters.records, sent.size());
    EXPECT_EQ(counters.udp_datagrams, sent.size());
    EXPECT_EQ(counters.non_ip + counters.non_udp + counters.fragments + counters.truncated, 0u);
}

INSTANTIATE_TEST_SUITE_P(CaptureAll, CaptureRoundTripTest, ::testing::ValuesIn(all_combos(true)), combo_name);

TEST(CaptureReaderTest, NonUdpFramesWrittenVerbatimAreCountedAndSkipped) {
    TempDir tmp;
    const std::string path = tmp.file("mixed.pcapng");
    const std::vector<std::byte> payload = make_payload(30, 4);
    // A UDP frame from the writer, then altered copies of it.
    const Bytes udp = one_frame(tmp, LinkType::kEthernet, 0, kSrc, kGroup, payload, CaptureFormat::kPcapng);
    auto as_frame = [](const Bytes& b) {
        std::vector<std::byte> f(b.size());
        for (std::size_t i = 0; i < b.size(); ++i) f[i] = static_cast<std::byte>(b[i]);
        return f;
    };
    Bytes arp = udp;
    arp[12] = 0x08;
    arp[13] = 0x06;
    Bytes tcp = udp;
    tcp[14 + 9] = 6;
    Bytes frag = udp;
    frag[14 + 6] = 0x20;  // MF
    Bytes cut(udp.begin(), udp.begin() + 14 + 10);
    {
        CaptureWriter w(path, CaptureFormat::kPcapng, LinkType::kEthernet);
        w.write_frame(1, as_frame(udp));
        w.write_frame(2, as_frame(arp));
        w.write_frame(3, as_frame(tcp));
        w.write_frame(4, as_frame(frag));
        w.write_frame(5, as_frame(cut));
        w.write_udp(6, kSrc, 1, kGroup, 2, payload);
    }
    CaptureReader r(path);
    FrameCounters counters;
    std::size_t good = 0;
    std::size_t records = 0;
    while (const auto rec = r.next()) {
        ++records;
        ++counters.records;
        if (const auto d = extract_udp(r.link_type(), rec->frame, counters)) {
            ++good;
            EXPECT_EQ(to_bytes(d->payload), to_bytes(payload));
        }
    }
    EXPECT_EQ(records, 6u);
    EXPECT_EQ(good, 2u);
    EXPECT_EQ(counters.udp_datagrams, 2u);
    EXPECT_EQ(counters.non_ip, 1u);
    EXPECT_EQ(counters.non_udp, 1u);
    EXPECT_EQ(counters.fragments, 1u);
    EXPECT_EQ(counters.truncated, 1u);
}

// ================================= classic pcap: our block reader vs libpcap

struct ReadRecord {
    std::int64_t ts_ns;
    Bytes frame;
    bool operator==(const ReadRecord&) const = default;
};

std::vector<ReadRecord> read_with_libpcap(const std::string& path) {
    std::array<char, PCAP_ERRBUF_SIZE> err{};
    pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err.data());
    EXPECT_NE(p, nullptr) << err.data();
    std::vector<ReadRecord> out;
    if (!p) return out;
    pcap_pkthdr* h = nullptr;
    const u_char* data = nullptr;
    while (pcap_next_ex(p, &h, &data) == 1)
        out.push_back({std::int64_t{h->ts.tv_sec} * 1'000'000'000 + h->ts.tv_usec, Bytes(data, data + h->caplen)});
    pcap_close(p);
    return out;
}

std::vector<ReadRecord> read_with_tickgate(const std::string& path) {
    CaptureReader r(path);
    std::vector<ReadRecord> out;
    while (const auto rec = r.next()) out.push_back({rec->ts_ns, to_bytes(rec->frame)});
    return out;
}

// The file with every header field byte-swapped: a capture from a big-endian host.
void byte_swap_pcap(const std::string& from, const std::string& to) {
    std::ifstream in(from, std::ios::binary);
    std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto swap = [&](std::size_t off, std::size_t n) { std::reverse(b.begin() + static_cast<std::ptrdiff_t>(off), b.begin() + static_cast<std::ptrdiff_t>(off + n)); };
    swap(0, 4), swap(4, 2), swap(6, 2), swap(8, 4), swap(12, 4), swap(16, 4), swap(20, 4);
    for (std::size_t off = 24; off + 16 <= b.size();) {
        std::uint32_t caplen;
        std::memcpy(&caplen, b.data() + off + 8, 4);
        for (std::size_t k = 0; k < 4; ++k) swap(off + 4 * k, 4);
        off += 16 + caplen;
    }
    std::ofstream(to, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
}

// Records across many 1 MiB blocks (so records straddle block ends), a 60 kB
// one, µs and ns, both byte orders: the same records and timestamps as libpcap.
TEST(CaptureReaderTest, ClassicPcapBlockReaderReadsWhatLibpcapReads) {
    TempDir tmp;
    for (const CaptureFormat f : {CaptureFormat::kPcapNano, CaptureFormat::kPcapMicro}) {
        SCOPED_TRACE(f == CaptureFormat::kPcapNano ? "ns" : "us");
        const std::string path = tmp.file("blocks.pcap");
        {
            CaptureWriter w(path, f, LinkType::kEthernet);
            for (int i = 0; i < 5000; ++i) {
                const std::size_t size = i == 2500 ? 60000 : static_cast<std::size_t>(i * 131 % 1400);
                w.write_udp(1'700'000'000'123'456'789 + std::int64_t{i} * 1'000'003, kSrc, 1, kGroup, 2,
                            make_payload(size, static_cast<std::uint8_t>(i)));
            }
        }
        ASSERT_GT(fs::file_size(path), 3u << 20);
        const auto want = read_with_libpcap(path);
        ASSERT_EQ(want.size(), 5000u);
        EXPECT_TRUE(read_with_tickgate(path) == want);
        const std::string swapped = tmp.file("swapped.pcap");
        byte_swap_pcap(path, swapped);
        EXPECT_TRUE(read_with_libpcap(swapped) == want);  // the swap itself is right
        EXPECT_TRUE(read_with_tickgate(swapped) == want);
    }
}

// Three records of 100-byte payloads; returns the file offset where each
// record (pcapng: Enhanced Packet Block) starts, and the file's size last.
std::vector<std::size_t> write_three_records(const std::string& path, CaptureFormat format) {
    {
        CaptureWriter w(path, format, LinkType::kEthernet);
        for (int i = 0; i < 3; ++i) w.write_udp(1'000 + i, kSrc, 1, kGroup, 2, make_payload(100, 1));
    }
    const auto size = static_cast<std::size_t>(fs::file_size(path));
    const std::size_t first = first_record(format);
    const std::size_t record = (size - first) / 3;
    return {first, first + record, first + 2 * record, size};
}

const char* format_name(CaptureFormat f) {
    return f == CaptureFormat::kPcapNano ? "pcap-ns" : f == CaptureFormat::kPcapMicro ? "pcap-us" : "pcapng";
}

// A capture cut short (a killed `tickgate capture`, a full disk, a file still
// being written) ends inside its last record: the block reader (classic pcap,
// µs and ns) and libpcap (pcapng) give every intact record, then the end,
// and truncation() says where the cut record starts. Cuts at several offsets
// inside the record header / block header, the frame and (pcapng) the
// trailing length; and a cut in the second of three records.
TEST(CaptureReaderTest, CutCaptureGivesItsIntactRecordsAndSaysWhereItWasCut) {
    TempDir tmp;
    for (const CaptureFormat f : {CaptureFormat::kPcapNano, CaptureFormat::kPcapMicro, CaptureFormat::kPcapng}) {
        const std::string path = tmp.file(std::string("whole-") + format_name(f));
        const auto at = write_three_records(path, f);
        const std::size_t record = at[1] - at[0];
        for (const std::size_t intact : {std::size_t{1}, std::size_t{2}}) {
            for (const std::size_t into : {std::size_t{1}, std::size_t{7}, std::size_t{15}, std::size_t{16},
                                           std::size_t{30}, record / 2, record - 1}) {
                SCOPED_TRACE(std::string(format_name(f)) + ": " + std::to_string(intact) + " intact, cut " +
                             std::to_string(into) + " bytes into the next record");
                const std::string cut = tmp.file("cut");
                fs::copy_file(path, cut, fs::copy_options::overwrite_existing);
                fs::resize_file(cut, at[intact] + into);
                CaptureReader r(cut);
                std::size_t read = 0;
                while (r.next()) ++read;
                EXPECT_EQ(read, intact);
                ASSERT_TRUE(r.truncation().has_value());
                EXPECT_EQ(r.truncation()->intact_records, intact);
                EXPECT_EQ(r.truncation()->intact_bytes, at[intact]);
                EXPECT_EQ(r.truncation()->file_bytes, at[intact] + into);
                EXPECT_FALSE(r.truncation()->detail.empty());
                EXPECT_FALSE(r.next().has_value()) << "the end stays the end";
            }
        }
        CaptureReader whole(path);
        std::size_t read = 0;
        while (whole.next()) ++read;
        EXPECT_EQ(read, 3u);
        EXPECT_FALSE(whole.truncation().has_value()) << format_name(f);
    }
}

// Not a cut but a lie: a record claiming more than libpcap's maximum length
// (classic pcap), a block whose length is not a multiple of 4 (pcapng). The
// records before are read, then a CaptureError names the file and record.
TEST(CaptureReaderTest, LyingRecordIsAnErrorNotACut) {
    TempDir tmp;
    struct Case {
        CaptureFormat format;
        std::size_t field;  // offset of the length field inside the second record
        std::uint32_t value;
        const char* message;
    };
    for (const Case& c : {Case{CaptureFormat::kPcapNano, 8, 300000, "record 2: invalid packet capture length 300000"},
                          Case{CaptureFormat::kPcapng, 4, 0x7f, "record 2: "}}) {
        SCOPED_TRACE(format_name(c.format));
        const std::string lying = tmp.file(std::string("lying-") + format_name(c.format));
        const auto at = write_three_records(lying, c.format);
        {
            std::fstream f(lying, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(static_cast<std::streamoff>(at[1] + c.field));
            f.write(reinterpret_cast<const char*>(&c.value), 4);
        }
        CaptureReader r(lying);
        EXPECT_TRUE(r.next().has_value());
        try {
            (void)r.next();
            ADD_FAILURE() << "no error";
        } catch (const CaptureError& e) {
            EXPECT_NE(std::string(e.what()).find(lying + ": " + c.message), std::string::npos) << e.what();
        }
        EXPECT_FALSE(r.truncation().has_value());
    }
}

}  // namespace
}  // namespace tickgate
