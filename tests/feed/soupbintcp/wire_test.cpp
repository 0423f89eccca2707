// SoupBinTCP 4.0 framing (ITCH50.md "Snapshot recovery: GLIMPSE 5.0 over SoupBinTCP").
#include "tickgate/feed/soupbintcp/wire.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tickgate::soupbintcp {
namespace {

using Bytes = std::vector<std::byte>;

Bytes packet(char t, std::string_view payload) {
    Bytes b(packet_size(payload.size()));
    (void)write_packet(b.data(), t, {reinterpret_cast<const std::byte*>(payload.data()), payload.size()});
    return b;
}
std::string text(std::span<const std::byte> s) { return {reinterpret_cast<const char*>(s.data()), s.size()}; }

TEST(SoupBinTcpFrame, LengthIsBigEndianAndCountsTypeAndPayload) {
    const Bytes p = packet(type::kSequencedData, "hello");
    ASSERT_EQ(p.size(), 8u);
    EXPECT_EQ(p[0], std::byte{0});
    EXPECT_EQ(p[1], std::byte{6});
    const Frame f = read_frame(p, 64);
    ASSERT_EQ(f.status, FrameStatus::kPacket);
    EXPECT_EQ(f.type, 'S');
    EXPECT_EQ(text(f.payload), "hello");
    EXPECT_EQ(f.size, 8u);
}

TEST(SoupBinTcpFrame, SplitReadsNeedMoreUntilWhole) {
    const Bytes p = packet(type::kSequencedData, "abcdefgh");
    for (std::size_t n = 0; n < p.size(); ++n)
        EXPECT_EQ(read_frame({p.data(), n}, 64).status, FrameStatus::kNeedMore) << n;
    EXPECT_EQ(read_frame(p, 64).status, FrameStatus::kPacket);
}

TEST(SoupBinTcpFrame, MergedReadsGiveOnePacketAtATime) {
    Bytes s = packet(type::kSequencedData, "one");
    const Bytes h = packet(type::kServerHeartbeat, "");
    const Bytes z = packet(type::kEndOfSession, "");
    s.insert(s.end(), h.begin(), h.end());
    s.insert(s.end(), z.begin(), z.end());
    std::span<const std::byte> rest(s);
    std::string types;
    while (true) {
        const Frame f = read_frame(rest, 64);
        if (f.status != FrameStatus::kPacket) {
            EXPECT_EQ(f.status, FrameStatus::kNeedMore);
            break;
        }
        types += f.type;
        rest = rest.subspan(f.size);
    }
    EXPECT_EQ(types, "SHZ");
    EXPECT_TRUE(rest.empty());
}

TEST(SoupBinTcpFrame, HeartbeatsHaveNoPayload) {
    const Bytes h = packet(type::kServerHeartbeat, "");
    ASSERT_EQ(h.size(), 3u);
    const Frame f = read_frame(h, 64);
    ASSERT_EQ(f.status, FrameStatus::kPacket);
    EXPECT_EQ(f.type, 'H');
    EXPECT_TRUE(f.payload.empty());
    Bytes r(3);
    EXPECT_EQ(write_empty(r.data(), type::kClientHeartbeat), 3u);
    EXPECT_EQ(read_frame(r, 64).type, 'R');
}

TEST(SoupBinTcpFrame, LengthPastTheBufferIsRefusedBeforeWaiting) {
    // 0xFFFF announced, 2 bytes present: waiting would never end in a 64-byte buffer.
    const Bytes b = {std::byte{0xFF}, std::byte{0xFF}};
    EXPECT_EQ(read_frame(b, 64).status, FrameStatus::kTooLong);
    const Bytes p = packet(type::kSequencedData, std::string(62, 'x'));  // 65 bytes
    EXPECT_EQ(read_frame(p, 64).status, FrameStatus::kTooLong);
    EXPECT_EQ(read_frame(p, 65).status, FrameStatus::kPacket);
}

TEST(SoupBinTcpFrame, ZeroLengthIsUnusable) {
    const Bytes b = {std::byte{0}, std::byte{0}, std::byte{'S'}};
    EXPECT_EQ(read_frame(b, 64).status, FrameStatus::kEmpty);
}

TEST(SoupBinTcpFrame, UnknownPacketTypeIsFramedButNotAServerType) {
    const Bytes p = packet('Q', "zz");
    const Frame f = read_frame(p, 64);
    ASSERT_EQ(f.status, FrameStatus::kPacket);
    EXPECT_EQ(f.type, 'Q');
    EXPECT_FALSE(is_server_type('Q'));
    EXPECT_FALSE(is_server_type(type::kLoginRequest));
    for (const char t : {'+', 'A', 'J', 'S', 'H', 'Z'}) EXPECT_TRUE(is_server_type(t)) << t;
}

TEST(SoupBinTcpLogin, RequestFieldsArePaddedAndParseBack) {
    Bytes b(packet_size(kLoginRequestPayload));
    ASSERT_EQ(write_login_request(b.data(), "user", "secret", "", 1), 49u);
    const Frame f = read_frame(b, 64);
    ASSERT_EQ(f.status, FrameStatus::kPacket);
    EXPECT_EQ(f.type, 'L');
    // username 6, password 10 (right padded), session 10 blank, sequence 20 (left padded).
    EXPECT_EQ(text(f.payload), "user  " "secret    " + std::string(10, ' ') + std::string(19, ' ') + "1");
    LoginRequest r;
    ASSERT_TRUE(parse_login_request(f.payload, r));
    EXPECT_EQ(r.username, "user");
    EXPECT_EQ(r.password, "secret");
    EXPECT_EQ(r.session, "");
    EXPECT_EQ(r.sequence, 1u);
    EXPECT_FALSE(parse_login_request(f.payload.subspan(1), r));
}

TEST(SoupBinTcpLogin, AcceptedCarriesSessionAndSequence) {
    Bytes b(packet_size(kLoginAcceptedPayload));
    (void)write_login_accepted(b.data(), "S1", 42);
    const Frame f = read_frame(b, 64);
    ASSERT_EQ(f.type, 'A');
    EXPECT_EQ(trimmed(f.payload.subspan(0, kSessionSize)), "S1");
    std::uint64_t seq = 0;
    ASSERT_TRUE(parse_numeric(f.payload.subspan(kSessionSize), seq));
    EXPECT_EQ(seq, 42u);
    Bytes j(4);
    (void)write_login_rejected(j.data(), kRejectNotAuthorized);
    const Frame r = read_frame(j, 64);
    EXPECT_EQ(r.type, 'J');
    EXPECT_EQ(text(r.payload), "A");
}

}  // namespace
}  // namespace tickgate::soupbintcp
