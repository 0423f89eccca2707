// GLIMPSE 5.0's Snapshot message `M` (ITCH50.md "Snapshot recovery").
#include "tickgate/feed/itch50/glimpse.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tickgate::itch50 {
namespace {

SnapshotEnd parse(const std::string& s) {
    return parse_snapshot_end({reinterpret_cast<const std::byte*>(s.data()), s.size()});
}

TEST(GlimpseSnapshotEnd, TwentyAsciiDigits) {
    const SnapshotEnd e = parse("M00000000000001204551");
    ASSERT_EQ(e.result, SnapshotParse::kOk);
    EXPECT_EQ(e.position, 1204551u);
    EXPECT_EQ(parse("M18446744073709551615").position, UINT64_MAX);
}

TEST(GlimpseSnapshotEnd, SpacePaddingEitherSide) {
    EXPECT_EQ(parse("M             1204551").position, 1204551u);  // SoupBinTCP numeric: left padded
    EXPECT_EQ(parse("M1204551             ").position, 1204551u);  // GLIMPSE alpha: right padded
    EXPECT_EQ(parse("M      1204551       ").position, 1204551u);
}

TEST(GlimpseSnapshotEnd, GarbageIsRefused) {
    EXPECT_EQ(parse("M                    ").result, SnapshotParse::kGarbage);  // blank
    EXPECT_EQ(parse("M1204 551            ").result, SnapshotParse::kGarbage);  // embedded space
    EXPECT_EQ(parse("M-0000000000001204551").result, SnapshotParse::kGarbage);  // a sign
    EXPECT_EQ(parse("M0000000000000120455x").result, SnapshotParse::kGarbage);
    EXPECT_EQ(parse("M18446744073709551616").result, SnapshotParse::kGarbage);  // 2^64: overflow
    std::string nul = "M00000000000001204551";
    nul[5] = '\0';
    EXPECT_EQ(parse(nul).result, SnapshotParse::kGarbage);
}

TEST(GlimpseSnapshotEnd, ShortAndZeroAreRefusedLongerAccepted) {
    EXPECT_EQ(parse("M0000000000000120455").result, SnapshotParse::kShort);
    EXPECT_EQ(parse("M").result, SnapshotParse::kShort);
    EXPECT_EQ(parse("").result, SnapshotParse::kShort);
    EXPECT_EQ(parse("M00000000000000000000").result, SnapshotParse::kZero);
    EXPECT_EQ(parse("M00000000000000000007XYZ").position, 7u);  // appended fields, as ITCH allows
}

}  // namespace
}  // namespace tickgate::itch50
