// The fan-out record layout (include/tickgate/fanout/record.hpp): what is
// written reads back, the documented offsets hold, and every malformed
// shape is refused with its reason.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "tickgate/fanout/record.hpp"

namespace {

using namespace tickgate;
using namespace tickgate::fanout;

Record sample() {
    Record r;
    r.flags = kFlagBookChanged;
    r.verdict = GateReason::kSuspect;
    r.suspect_why = SuspectReason::kGap;
    r.session = 0x0102030405060708;
    r.seq = 42;
    r.instrument = 7;
    r.channel = 3;
    r.exponent = -8;
    r.source_ns = 1'700'000'000'000'000'001;
    r.recv_ns = 1'700'000'000'000'000'002;
    r.publish_ns = 1'700'000'000'000'000'003;
    std::memcpy(r.symbol, "EURUSD", 6);
    r.n_bids = 2;
    r.n_asks = 1;
    r.bids[0] = {101, 5};
    r.bids[1] = {100, 6};
    r.asks[0] = {-103, 7};
    return r;
}

TEST(FanoutRecord, WrittenRecordReadsBackFieldForField) {
    const Record r = sample();
    std::array<std::byte, kMaxRecordBytes> buf{};
    const std::size_t n = write_record(r, buf);
    EXPECT_EQ(n, 76u + 3 * 12);
    Record back;
    ASSERT_EQ(read_record(std::span(buf.data(), n), back), ReadError::kNone);
    EXPECT_EQ(back.flags, r.flags);
    EXPECT_EQ(back.verdict, r.verdict);
    EXPECT_EQ(back.suspect_why, r.suspect_why);
    EXPECT_EQ(back.session, r.session);
    EXPECT_EQ(back.seq, r.seq);
    EXPECT_EQ(back.instrument, r.instrument);
    EXPECT_EQ(back.channel, r.channel);
    EXPECT_EQ(back.exponent, r.exponent);
    EXPECT_EQ(back.source_ns, r.source_ns);
    EXPECT_EQ(back.recv_ns, r.recv_ns);
    EXPECT_EQ(back.publish_ns, r.publish_ns);
    EXPECT_EQ(back.symbol_view(), "EURUSD");
    ASSERT_EQ(back.n_bids, 2);
    ASSERT_EQ(back.n_asks, 1);
    EXPECT_EQ(back.bids[1].price, 100);
    EXPECT_EQ(back.asks[0].price, -103);
    EXPECT_EQ(back.asks[0].qty, 7u);
}

// The offsets the header comment documents (a consumer in another language reads by them).
TEST(FanoutRecord, LayoutIsTheDocumentedOne) {
    std::array<std::byte, kMaxRecordBytes> buf{};
    (void)write_record(sample(), buf);
    EXPECT_EQ(std::memcmp(buf.data(), "TGFO", 4), 0);
    EXPECT_EQ(buf[4], std::byte{1});
    EXPECT_EQ(buf[6], std::byte{4});  // suspect
    EXPECT_EQ(buf[7], std::byte{2});  // gap
    EXPECT_EQ(buf[8], std::byte{0x08});
    EXPECT_EQ(buf[16], std::byte{42});
    EXPECT_EQ(buf[24], std::byte{7});
    EXPECT_EQ(buf[28], std::byte{3});
    EXPECT_EQ(buf[30], std::byte{0xF8});
    EXPECT_EQ(buf[32], std::byte{0x01});
    EXPECT_EQ(std::memcmp(buf.data() + 56, "EURUSD", 6), 0);
    EXPECT_EQ(buf[72], std::byte{2});
    EXPECT_EQ(buf[73], std::byte{1});
    EXPECT_EQ(buf[76], std::byte{101});
    EXPECT_EQ(buf[84], std::byte{5});
}

TEST(FanoutRecord, MalformedRecordsAreRefusedWithTheirReason) {
    std::array<std::byte, kMaxRecordBytes> good{};
    const std::size_t n = write_record(sample(), good);
    Record out;
    const auto read = [&](auto mutate, std::size_t len) {
        auto b = good;
        mutate(b);
        return read_record(std::span(b.data(), len), out);
    };
    const auto same = [](auto&) {};
    EXPECT_EQ(read(same, 75), ReadError::kShort);
    EXPECT_EQ(read(same, n - 1), ReadError::kBadLength);
    EXPECT_EQ(read(same, n + 1), ReadError::kBadLength);
    EXPECT_EQ(read([](auto& b) { b[0] = std::byte{'X'}; }, n), ReadError::kBadMagic);
    EXPECT_EQ(read([](auto& b) { b[4] = std::byte{2}; }, n), ReadError::kBadVersion);
    EXPECT_EQ(read([](auto& b) { b[5] = std::byte{8}; }, n), ReadError::kBadField);  // bit 3: no such flag
    EXPECT_EQ(read([](auto& b) { b[6] = std::byte{6}; }, n), ReadError::kBadField);
    EXPECT_EQ(read([](auto& b) { b[7] = std::byte{6}; }, n), ReadError::kBadField);
    EXPECT_EQ(read([](auto& b) { b[31] = std::byte{1}; }, n), ReadError::kBadField);
    EXPECT_EQ(read([](auto& b) { b[72] = std::byte{33}; }, n), ReadError::kBadDepth);
    EXPECT_EQ(read(same, n), ReadError::kNone);
}

TEST(FanoutRecord, SubjectTokensAreEscapedSoAnySymbolIsOneToken) {
    EXPECT_EQ(subject_for("tickgate", "qfb1", 1, "EURUSD", 1), "tickgate.qfb1.1.EURUSD");
    EXPECT_EQ(subject_for("md.x", "mdp3", 310, "ES H6", 9), "md.x.mdp3.310.ES%20H6");
    EXPECT_EQ(subject_for("t", "itch50", 2, "BRK.A", 3), "t.itch50.2.BRK%2EA");
    EXPECT_EQ(subject_for("t", "q", 2, "a*b>c%", 3), "t.q.2.a%2Ab%3Ec%25");
    EXPECT_EQ(subject_for("t", "q", 2, "", 17), "t.q.2.%2317");  // no symbol yet
}

}  // namespace
