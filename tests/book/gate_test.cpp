// Pre-trade gate rules (shared/spec/QFB1.md, "Pre-trade gate"): silence,
// then source age (clock offset subtracted), then suspect; unknown ids.
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/book/gate.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/handler.hpp"

namespace tickgate {
namespace {

constexpr std::uint32_t kId = 2;
constexpr std::uint16_t kCh = 1;
constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kT0 = 1'700'000'000'000 * kMs;  // a Unix time in ns
constexpr GateConfig kCfg{/*stale_ms=*/250, /*source_age_ms=*/2000};
constexpr Capacity kCap{8, 4, 16, 2};

// A handler fed QFB/1 datagrams; every datagram is one packet on channel kCh.
class GateRule : public testing::Test {
protected:
    Handler h_{kCap, kCfg};
    std::uint64_t packet_seq_ = 0;

    PacketBuilder packet() { return PacketBuilder(kCh, 1, ++packet_seq_, 0); }
    void feed(const PacketBuilder& p, std::int64_t recv_ns) {
        ASSERT_EQ(h_.on_datagram(p.bytes(), recv_ns).verdict, qfb1::PacketVerdict::kDecoded);
    }
    // A quote received at `recv_ns` whose price is from `source_ns` (provider clock).
    void quote(std::uint64_t seq, std::int64_t recv_ns, std::int64_t source_ns) {
        feed(packet().quote(kId, seq, source_ns, 100, 1, 101, 1), recv_ns);
    }
    void delta(std::uint64_t seq, std::int64_t recv_ns, std::int64_t source_ns) {
        feed(packet().delta(kId, seq, source_ns, 99, 1, 0, 0), recv_ns);
    }
    void heartbeat(std::uint64_t next_seq, std::int64_t recv_ns) {
        feed(packet().heartbeat(kId, next_seq, recv_ns), recv_ns);
    }
    GateDecision check(std::int64_t now_ns, std::uint32_t id = kId) const { return h_.gate().check(id, now_ns); }
};

TEST_F(GateRule, FreshCleanQuoteIsOk) {
    quote(1, kT0, kT0);
    const GateDecision d = check(kT0 + 10 * kMs);
    EXPECT_TRUE(d.ok());
    EXPECT_EQ(d.reason, GateReason::kOk);
    EXPECT_EQ(d.silence_ms, 10);
}

TEST_F(GateRule, NeverSeenInstrumentIsUnknown) {
    quote(1, kT0, kT0);
    EXPECT_EQ(check(kT0, 3).reason, GateReason::kUnknown);          // in range, never seen
    EXPECT_EQ(check(kT0, kCap.max_instruments).reason, GateReason::kUnknown);
    EXPECT_EQ(check(kT0, 0xFFFFFFFF).reason, GateReason::kUnknown);
}

TEST_F(GateRule, InstrumentWithNoPriceYetIsSuspect) {
    heartbeat(5, kT0);  // seen and alive, but no price
    EXPECT_EQ(check(kT0 + kMs).reason, GateReason::kSuspect);
    feed(packet().definition(3, "EURUSD"), kT0);  // seen through its definition only
    EXPECT_EQ(check(kT0, 3).reason, GateReason::kSuspect);
}

TEST_F(GateRule, SilenceLongerThanStaleMsIsStaleWithSilenceReported) {
    quote(1, kT0, kT0);
    EXPECT_TRUE(check(kT0 + 250 * kMs).ok());  // exactly at the threshold: not stale
    const GateDecision d = check(kT0 + 250 * kMs + 1);
    EXPECT_EQ(d.reason, GateReason::kStale);
    EXPECT_EQ(d.silence_ms, 250);
    EXPECT_EQ(check(kT0 + 1234 * kMs).silence_ms, 1234);  // "stale quote: 1234 ms"
}

TEST_F(GateRule, SourceAgeLongerThanSourceAgeMsIsStaleAtSource) {
    quote(1, kT0, kT0 - 2000 * kMs);
    EXPECT_TRUE(check(kT0).ok());  // exactly 2000 ms old: not stale
    quote(2, kT0, kT0 - 2000 * kMs - 1);
    const GateDecision d = check(kT0);
    EXPECT_EQ(d.reason, GateReason::kStaleAtSource);
    EXPECT_EQ(d.silence_ms, 0);
}

// Issue 12, finding 2: a forged source time of 2^62 made the gate say `ok`
// on a forged price. A price stamped further in the future than the
// tolerance is rejected (the source clock, or the price, is wrong).
TEST_F(GateRule, SourceTimeFurtherInTheFutureThanTheToleranceIsStaleAtSource) {
    quote(1, kT0, kT0 + 2000 * kMs);  // exactly at the tolerance: ok
    EXPECT_TRUE(check(kT0).ok());
    quote(2, kT0, kT0 + 2000 * kMs + 1);
    EXPECT_EQ(check(kT0).reason, GateReason::kStaleAtSource);
    quote(3, kT0, std::int64_t{1} << 62);
    EXPECT_EQ(check(kT0 + 2600 * kMs).reason, GateReason::kStale);  // silent by then as well
    EXPECT_EQ(check(kT0 + 10 * kMs).reason, GateReason::kStaleAtSource);
    h_.instruments().set_clock_offset(kCh, -1000 * kMs);  // the provider's clock is 1 s ahead of ours
    quote(4, kT0, kT0 + 2500 * kMs);  // 2500 - 1000 = 1500 ahead: within tolerance
    EXPECT_TRUE(check(kT0).ok());
}

TEST_F(GateRule, ClockOffsetIsSubtractedFromSourceAge) {
    // now - last_source_time - clock_offset > source_age_ms
    h_.instruments().set_clock_offset(kCh, 500 * kMs);
    quote(1, kT0, kT0 - 2500 * kMs);  // 2500 - 500 = 2000: ok
    EXPECT_TRUE(check(kT0).ok());
    EXPECT_EQ(check(kT0 + 1).reason, GateReason::kStaleAtSource);

    h_.instruments().set_clock_offset(kCh, -500 * kMs);  // applies to instruments already seen
    quote(2, kT0, kT0 - 1500 * kMs);  // 1500 + 500 = 2000: ok
    EXPECT_TRUE(check(kT0).ok());
    EXPECT_EQ(check(kT0 + 1).reason, GateReason::kStaleAtSource);
}

TEST_F(GateRule, SuspectInstrumentIsRejected) {
    quote(1, kT0, kT0);
    delta(3, kT0, kT0);  // gap on a delta
    EXPECT_EQ(check(kT0).reason, GateReason::kSuspect);
}

TEST_F(GateRule, ChecksRunInOrderSilenceThenSourceAgeThenSuspect) {
    quote(1, kT0, kT0);
    delta(3, kT0, kT0);  // suspect from here on
    const std::int64_t now = kT0 + 3000 * kMs;
    EXPECT_EQ(check(now).reason, GateReason::kStale);  // silent, old at source and suspect
    heartbeat(4, now);                                  // gap-free: alive again
    EXPECT_EQ(check(now).reason, GateReason::kStaleAtSource);
    delta(4, now, now);                                 // fresh price, still suspect
    EXPECT_EQ(check(now).reason, GateReason::kSuspect);
}

TEST_F(GateRule, GapHeartbeatsDoNotKeepAQuoteFresh) {
    quote(1, kT0, kT0);
    heartbeat(5, kT0 + 100 * kMs);  // 3 lost
    heartbeat(9, kT0 + 200 * kMs);  // 3 more lost
    const GateDecision d = check(kT0 + 300 * kMs);
    EXPECT_EQ(d.reason, GateReason::kStale);
    EXPECT_EQ(d.silence_ms, 300);

    // An instrument fed only heartbeats, all but the cold-start one with a gap.
    feed(packet().heartbeat(3, 1, 0), kT0);
    feed(packet().heartbeat(3, 5, 0), kT0 + 100 * kMs);
    feed(packet().heartbeat(3, 9, 0), kT0 + 200 * kMs);
    EXPECT_EQ(check(kT0 + 300 * kMs, 3).reason, GateReason::kStale);
}

TEST_F(GateRule, GapFreeHeartbeatsKeepAQuoteAlive) {
    quote(1, kT0, kT0);
    heartbeat(2, kT0 + 200 * kMs);
    heartbeat(2, kT0 + 400 * kMs);
    const GateDecision d = check(kT0 + 500 * kMs);
    EXPECT_TRUE(d.ok());
    EXPECT_EQ(d.silence_ms, 100);
}

TEST(GateReasonNames, AreTheDocumentedJsonNames) {
    EXPECT_EQ(to_string(GateReason::kOk), "ok");
    EXPECT_EQ(to_string(GateReason::kUnknown), "unknown");
    EXPECT_EQ(to_string(GateReason::kStale), "stale");
    EXPECT_EQ(to_string(GateReason::kStaleAtSource), "stale_at_source");
    EXPECT_EQ(to_string(GateReason::kSuspect), "suspect");
}

}  // namespace
}  // namespace tickgate
