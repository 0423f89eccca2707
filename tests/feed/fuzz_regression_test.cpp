// Findings of the fuzzers (tests/fuzz/regressions/), each pinned as a test:
// 64-bit edge values from the wire must neither overflow nor stall.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>

#include "../support/arbiter_rig.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/handler.hpp"

namespace {

using namespace tickgate;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kNow = 1'700'000'000'000'000'000;

TEST(FuzzRegression, GateSourceAgeWithExtremeSourceTimesDoesNotOverflow) {
    Handler h(Capacity{}, GateConfig{});
    PacketBuilder old_px(1, 1, 1, 0), future_px(1, 1, 2, 0);
    old_px.quote(1, 1, std::numeric_limits<std::int64_t>::min(), 100, 1, 101, 1);
    future_px.quote(2, 1, std::numeric_limits<std::int64_t>::max(), 100, 1, 101, 1);
    h.on_datagram(old_px.bytes(), kNow);
    h.on_datagram(future_px.bytes(), kNow);
    EXPECT_EQ(h.gate().check(1, kNow).reason, GateReason::kStaleAtSource) << "a price from the far past is old";
    // QFB1.md gate rule 2: a price stamped further in the future than the tolerance is rejected too.
    EXPECT_EQ(h.gate().check(2, kNow).reason, GateReason::kStaleAtSource) << "a price from the far future";
    // A `now` as far in the past as the price: age 0, silence negative (saturated), no overflow.
    EXPECT_EQ(h.gate().check(1, std::numeric_limits<std::int64_t>::min()).reason, GateReason::kOk);
}

TEST(FuzzRegression, HeartbeatAfterTheLastPossibleSeqDoesNotMoveLastSeqBack) {
    Handler h(Capacity{}, GateConfig{});
    PacketBuilder q(1, 1, 1, 0), hb(1, 1, 2, 0);
    q.quote(1, kMax, kNow, 100, 1, 101, 1);
    hb.heartbeat(1, 5, kNow);
    h.on_datagram(q.bytes(), kNow);
    h.on_datagram(hb.bytes(), kNow + 1);
    const InstrumentState& st = h.instruments().state(1);
    EXPECT_EQ(st.last_seq, kMax);
    EXPECT_EQ(st.counters.lost, 0u);
    EXPECT_FALSE(st.suspect);
}

TEST(FuzzRegression, ArbiterNearPacketSeqWrapNeitherHangsNorLoses) {
    ArbiterRig arb(4, 64, 250'000);
    std::vector<std::uint64_t> out;
    auto deliver = [&](std::span<const std::byte> d, std::int64_t, std::uint8_t) {
        out.push_back(qfb1::PacketHeaderView(d).packet_seq());
    };
    for (const std::uint64_t seq : {kMax - 10, kMax - 2, kMax - 9}) {
        PacketBuilder p(1, 1, seq, 0);
        arb.offer(p.bytes(), kNow, 0, deliver);
    }
    const auto t0 = std::chrono::steady_clock::now();
    arb.expire(std::numeric_limits<std::int64_t>::max(), deliver);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
    EXPECT_EQ(out, (std::vector<std::uint64_t>{kMax - 10, kMax - 9, kMax - 2}));
}

TEST(FuzzRegression, ArbiterDeadlineNearInt64MaxSaturates) {
    ArbiterRig arb(4, 64, 250'000);
    int delivered = 0;
    auto deliver = [&](std::span<const std::byte>, std::int64_t, std::uint8_t) { ++delivered; };
    const std::int64_t late = std::numeric_limits<std::int64_t>::max() - 1000;
    PacketBuilder p1(1, 1, 1, 0), p3(1, 1, 3, 0);
    arb.offer(p1.bytes(), late, 0, deliver);
    arb.offer(p3.bytes(), late, 0, deliver);  // held: its deadline would overflow
    EXPECT_EQ(arb.next_deadline(), std::numeric_limits<std::int64_t>::max());
    arb.expire(std::numeric_limits<std::int64_t>::max(), deliver);
    EXPECT_EQ(delivered, 2);
}

TEST(FuzzRegression, CaptureTimestampBeyond2262IsAClearError) {
    const auto path = std::filesystem::path(TICKGATE_SOURCE_DIR) / "tests/fuzz/regressions/fuzz_capture/pcapng_timestamp_2262.pcapng";
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    CaptureReader reader(path.string());
    try {
        while (reader.next()) {
        }
        FAIL() << "expected a CaptureError";
    } catch (const CaptureError& e) {
        EXPECT_NE(std::string(e.what()).find("timestamp out of range"), std::string::npos) << e.what();
    }
}

}  // namespace
