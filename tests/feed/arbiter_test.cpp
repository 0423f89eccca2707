// A/B packet arbitration (include/tickgate/feed/arbiter.hpp): one test per rule,
// named after it. Datagrams are real QFB/1 packets from PacketBuilder; a
// recorder captures what the arbiter delivers, in order.
#include "../support/arbiter_rig.hpp"
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/arbiter.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <vector>

#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/qfb1/wire.hpp"

namespace tickgate {
namespace {

constexpr std::uint8_t kA = 0;
constexpr std::uint8_t kB = 1;
constexpr std::uint16_t kCh = 1;
constexpr std::uint16_t kCh2 = 2;
constexpr std::uint32_t kSession = 3;
constexpr std::uint32_t kWindow = 8;
constexpr std::int64_t kHold = 1'000;
constexpr std::uint64_t kNoSeq = UINT64_MAX;  // recorded for datagrams without a valid header
using Bytes = std::vector<std::byte>;

Bytes to_bytes(const PacketBuilder& b) {
    const std::span<const std::byte> v = b.bytes();
    return {v.begin(), v.end()};
}

// One QFB/1 datagram whose message body depends on (channel, session, seq),
// so two different packets never have the same bytes.
Bytes packet(std::uint16_t ch, std::uint32_t session, std::uint64_t seq) {
    PacketBuilder b(ch, session, seq, static_cast<std::int64_t>(seq) * 10);
    b.quote(ch, seq, static_cast<std::int64_t>(seq) * 10, 100 + static_cast<std::int64_t>(seq),
            session, 200 + static_cast<std::int64_t>(seq), ch);
    return to_bytes(b);
}

struct Delivered {
    std::uint64_t seq;
    std::uint32_t session;
    std::uint16_t channel;
    std::uint8_t line;
    std::int64_t recv_ns;
    Bytes bytes;
};

// Captures every delivery in order.
struct Recorder {
    std::vector<Delivered> out;
    void operator()(std::span<const std::byte> d, std::int64_t recv_ns, std::uint8_t line) {
        const qfb1::PacketHeaderView h(d);
        const bool ok = h.valid();
        out.push_back({ok ? h.packet_seq() : kNoSeq, ok ? h.session() : 0u, ok ? h.channel_id() : std::uint16_t{0},
                       line, recv_ns, Bytes(d.begin(), d.end())});
    }
    [[nodiscard]] std::vector<std::uint64_t> seqs() const {
        std::vector<std::uint64_t> s;
        for (const auto& d : out) s.push_back(d.seq);
        return s;
    }
    [[nodiscard]] std::vector<std::uint64_t> seqs_of(std::uint16_t ch) const {
        std::vector<std::uint64_t> s;
        for (const auto& d : out)
            if (d.channel == ch) s.push_back(d.seq);
        return s;
    }
};

struct Counts {
    std::uint64_t duplicate, held, filled, released, unarbitrated;
    bool operator==(const Counts&) const = default;
};
void PrintTo(const Counts& c, std::ostream* os) {
    *os << "{duplicate " << c.duplicate << ", held " << c.held << ", filled " << c.filled << ", released "
        << c.released << ", unarbitrated " << c.unarbitrated << "}";
}

class ArbiterTest : public ::testing::Test {
protected:
    explicit ArbiterTest(std::uint32_t channels = 4) : arb_(channels, kWindow, kHold) {}

    void offer(std::uint64_t seq, std::int64_t t, std::uint8_t line, std::uint16_t ch = kCh,
               std::uint32_t session = kSession) {
        const Bytes d = packet(ch, session, seq);
        arb_.offer(d, t, line, rec_);
    }
    void offer_raw(std::span<const std::byte> d, std::int64_t t, std::uint8_t line) { arb_.offer(d, t, line, rec_); }
    // A packet with `seq` that the publisher never sent: other bytes (send
    // time) than packet(ch, session, seq), as a forger or a corruption makes.
    void offer_forged(std::uint64_t seq, std::int64_t t, std::uint8_t line, std::uint16_t ch = kCh) {
        PacketBuilder b(ch, kSession, seq, 999'999);
        b.quote(ch, seq, 999'999, 1, 1, 2, 1);
        const Bytes d = to_bytes(b);
        arb_.offer(d, t, line, rec_);
    }
    void expire(std::int64_t now) { arb_.expire(now, rec_); }

    [[nodiscard]] Counts counts() const {
        const auto& c = arb_.counters();
        return {c.duplicate_packets.get(), c.held_packets.get(), c.filled_holes.get(), c.released_gaps.get(),
                c.unarbitrated.get()};
    }
    using Seqs = std::vector<std::uint64_t>;

    ArbiterRig arb_;
    Recorder rec_;
};

// ------------------------------------------------------------ pass-through

TEST_F(ArbiterTest, InOrderSingleLinePassesThroughImmediately) {
    for (std::uint64_t s = 1; s <= 5; ++s) {
        offer(s, static_cast<std::int64_t>(s) * 100, kA);
        ASSERT_EQ(rec_.out.size(), s) << "packet " << s << " was not delivered at once";
        const Delivered& d = rec_.out.back();
        EXPECT_EQ(d.seq, s);
        EXPECT_EQ(d.session, kSession);
        EXPECT_EQ(d.line, kA);
        EXPECT_EQ(d.recv_ns, static_cast<std::int64_t>(s) * 100);
        EXPECT_EQ(d.bytes, packet(kCh, kSession, s));
    }
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    EXPECT_EQ(counts(), (Counts{0, 0, 0, 0, 0}));
}

TEST_F(ArbiterTest, FirstSeqOfChannelIsTheStartingPoint) {
    offer(1000, 1, kA);  // not 1: nothing before it is a hole
    offer(1001, 2, kA);
    EXPECT_EQ(rec_.seqs(), (Seqs{1000, 1001}));
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    EXPECT_EQ(counts(), (Counts{0, 0, 0, 0, 0}));
}

// ------------------------------------------------------------ duplicates

TEST_F(ArbiterTest, InterleavedCopiesDeliveredOnceSecondCopyCountedDuplicate) {
    offer(1, 10, kA);
    offer(1, 11, kB);
    offer(2, 20, kB);  // B wins this one
    offer(2, 21, kA);
    offer(3, 30, kA);
    offer(3, 31, kB);
    offer(4, 40, kB);
    offer(4, 41, kA);
    ASSERT_EQ(rec_.seqs(), (Seqs{1, 2, 3, 4}));
    // The first copy wins: its line and receive time are the ones delivered.
    EXPECT_EQ(rec_.out[0].line, kA);
    EXPECT_EQ(rec_.out[0].recv_ns, 10);
    EXPECT_EQ(rec_.out[1].line, kB);
    EXPECT_EQ(rec_.out[1].recv_ns, 20);
    EXPECT_EQ(rec_.out[2].line, kA);
    EXPECT_EQ(rec_.out[3].line, kB);
    EXPECT_EQ(counts(), (Counts{4, 0, 0, 0, 0}));
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
}

TEST_F(ArbiterTest, SecondCopyOfHeldPacketDroppedAsDuplicate) {
    offer(1, 0, kA);
    offer(3, 10, kA);  // held
    offer(3, 11, kB);  // its copy, while held
    EXPECT_EQ(rec_.seqs(), (Seqs{1}));
    EXPECT_EQ(counts(), (Counts{1, 1, 0, 0, 0}));
    offer(2, 12, kB);
    ASSERT_EQ(rec_.seqs(), (Seqs{1, 2, 3}));
    EXPECT_EQ(rec_.out[2].line, kA);  // the first copy of 3 is the one kept
    EXPECT_EQ(rec_.out[2].recv_ns, 10);
}

// ------------------------------------------------------------ holes

TEST_F(ArbiterTest, HoleOnAFilledByBDeliveredInOrderWithoutGap) {
    offer(10, 100, kA);
    offer(12, 110, kA);  // 11 lost on A: 12 is held
    EXPECT_EQ(rec_.seqs(), (Seqs{10}));
    EXPECT_EQ(arb_.next_deadline(), 110 + kHold);
    offer(10, 120, kB);  // duplicate
    offer(11, 130, kB);  // fills the hole
    offer(12, 140, kB);  // duplicate
    offer(13, 150, kA);
    offer(13, 160, kB);
    ASSERT_EQ(rec_.seqs(), (Seqs{10, 11, 12, 13}));
    EXPECT_EQ(rec_.out[1].line, kB);
    EXPECT_EQ(rec_.out[1].recv_ns, 130);
    EXPECT_EQ(rec_.out[2].line, kA);  // the held copy, with its own receive time
    EXPECT_EQ(rec_.out[2].recv_ns, 110);
    EXPECT_EQ(counts(), (Counts{3, 1, 1, 0, 0}));
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    // Nothing is left to release.
    expire(INT64_MAX);
    EXPECT_EQ(rec_.out.size(), 4u);
    EXPECT_EQ(arb_.counters().released_gaps.get(), 0u);
}

TEST_F(ArbiterTest, HoleOnBothLinesHeldUntilDeadlineThenReleasedInOrder) {
    offer(1, 0, kA);
    offer(1, 5, kB);
    offer(4, 100, kA);  // 2 and 3 lost on both lines
    offer(5, 150, kA);
    offer(4, 160, kB);
    offer(6, 200, kB);
    offer(5, 210, kB);
    EXPECT_EQ(rec_.seqs(), (Seqs{1})) << "nothing past the hole before the deadline";
    const std::int64_t deadline = 100 + kHold;
    EXPECT_EQ(arb_.next_deadline(), deadline);

    expire(deadline - 1);
    EXPECT_EQ(rec_.seqs(), (Seqs{1})) << "released one ns before the deadline";
    EXPECT_EQ(arb_.counters().released_gaps.get(), 0u);

    expire(deadline);
    ASSERT_EQ(rec_.seqs(), (Seqs{1, 4, 5, 6}));
    EXPECT_EQ(rec_.out[1].recv_ns, 100);
    EXPECT_EQ(rec_.out[2].recv_ns, 150);
    EXPECT_EQ(rec_.out[3].recv_ns, 200);
    EXPECT_EQ(rec_.out[3].line, kB);
    EXPECT_EQ(counts(), (Counts{3, 3, 0, 2, 0}));
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);

    offer(7, deadline + 1, kA);  // flows again at once
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 4, 5, 6, 7}));
}

TEST_F(ArbiterTest, TwoHolesExpireReleasesOnlyUpToHoleWhoseDeadlineHasNotPassed) {
    offer(1, 0, kA);
    offer(3, 10, kA);  // hole at 2, held since 10
    offer(4, 20, kA);
    offer(6, 50, kA);  // hole at 5, 6 held since 50
    EXPECT_EQ(rec_.seqs(), (Seqs{1}));
    EXPECT_EQ(arb_.next_deadline(), 10 + kHold);

    expire(10 + kHold);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 4})) << "6 has not waited hold_ns yet";
    EXPECT_EQ(arb_.counters().released_gaps.get(), 1u);
    EXPECT_EQ(arb_.next_deadline(), 50 + kHold);

    expire(50 + kHold - 1);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 4}));

    expire(50 + kHold);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 4, 6}));
    EXPECT_EQ(counts(), (Counts{0, 3, 0, 2, 0}));
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
}

TEST_F(ArbiterTest, ExpireLongAfterEveryDeadlineReleasesEveryHole) {
    offer(1, 0, kA);
    offer(3, 10, kA);  // hole at 2
    offer(6, 50, kA);  // hole at 4..5
    offer(8, 60, kA);  // hole at 7
    expire(60 + kHold + 500);  // one call: every hold has waited long enough
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 6, 8}));
    EXPECT_EQ(counts(), (Counts{0, 3, 0, 4, 0}));
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
}

TEST_F(ArbiterTest, TwoHolesSecondFilledWhileFirstStillOpen) {
    offer(1, 0, kA);
    offer(3, 10, kA);  // hole at 2
    offer(5, 20, kA);  // hole at 4
    offer(4, 30, kB);  // fills the second hole: still held behind the first
    EXPECT_EQ(rec_.seqs(), (Seqs{1}));
    offer(2, 40, kB);  // fills the first: everything flows
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 2, 3, 4, 5}));
    EXPECT_EQ(arb_.counters().released_gaps.get(), 0u);
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
}

// Only a packet_seq the arbiter delivered is known to be a copy; one it gave
// up on was never delivered, so a late arrival goes to the sequencer, whose
// per-message rule decides (issue 12, finding 3).
TEST_F(ArbiterTest, LateArrivalOfGivenUpPacketGoesToTheSequencer) {
    offer(1, 0, kA);
    offer(3, 10, kA);
    expire(10 + kHold);
    ASSERT_EQ(rec_.seqs(), (Seqs{1, 3}));
    offer(2, 10 + kHold + 5, kB);  // too late to be in order: passed on, not dropped
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 2}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 0u);
    EXPECT_EQ(arb_.counters().late_packets.get(), 1u);
    EXPECT_EQ(arb_.counters().released_gaps.get(), 1u);
    offer(3, 10 + kHold + 6, kB);  // delivered before: a duplicate
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 2}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 1u);
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
}

// ------------------------------------------------------------ window

TEST_F(ArbiterTest, PacketAtLastWindowSlotIsHeld) {
    offer(1, 0, kA);                   // expected 2
    offer(2 + kWindow - 1, 10, kA);    // 9: the last seq the window can hold
    EXPECT_EQ(rec_.seqs(), (Seqs{1}));
    EXPECT_EQ(arb_.counters().held_packets.get(), 1u);
}

TEST_F(ArbiterTest, PacketBeyondWindowFlushesHeldFirstThenIsDelivered) {
    offer(1, 0, kA);   // expected 2
    offer(3, 10, kA);  // held
    offer(4, 20, kA);  // held
    offer(2 + kWindow, 30, kA);  // 10 >= expected + window: cannot be held
    ASSERT_EQ(rec_.seqs(), (Seqs{1, 3, 4, 10}));
    EXPECT_EQ(rec_.out[1].recv_ns, 10);
    EXPECT_EQ(rec_.out[3].recv_ns, 30);
    // Lost: 2. The channel has not jumped yet: 10 is unconfirmed.
    EXPECT_EQ(counts(), (Counts{0, 2, 0, 1, 0}));
    EXPECT_EQ(arb_.counters().unconfirmed_jumps.get(), 1u);
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    offer(10, 35, kB);  // the other line's copy of 10: a duplicate
    offer(11, 40, kA);  // follows 10: the jump is confirmed, 5..9 lost
    EXPECT_EQ(counts(), (Counts{1, 2, 0, 6, 0}));
    offer(12, 41, kA);  // continues from 11
    offer(7, 42, kB);   // given up on, never delivered: the sequencer decides
    offer(12, 43, kB);  // delivered: a duplicate
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 4, 10, 11, 12, 7}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 2u);
    EXPECT_EQ(arb_.counters().late_packets.get(), 1u);
}

// A packet passed on ahead of the window stays delivered: when the holes
// below it are given up, the channel moves over it (not counted lost, not
// delivered again), and the packets held above it follow in order. One
// line's packets alone never confirm a jump: 11 after 10 on line A waits.
TEST_F(ArbiterTest, PacketPassedOnAheadIsSkippedNotLostWhenHolesBelowItAreGivenUp) {
    offer(1, 0, kA);                   // expected 2
    offer(2 + kWindow, 10, kA);        // 10: lone, passed on
    for (std::uint64_t s = 2; s <= 4; ++s) offer(s, 10 + static_cast<std::int64_t>(s), kA);  // in order
    offer(6, 20, kA);                  // held (5 missing)
    offer(12, 21, kA);                 // held: 12 - 5 < window
    offer(11, 22, kA);                 // held: same line as 10, no confirmation
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 10, 2, 3, 4}));
    expire(22 + kHold);
    ASSERT_EQ(rec_.seqs(), (Seqs{1, 10, 2, 3, 4, 6, 11, 12}));
    // Given up: 5 and 7..9; 10 went already.
    EXPECT_EQ(counts(), (Counts{0, 3, 0, 4, 0}));
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    offer(13, 23, kA);
    offer(12, 24, kB);                 // a late copy: duplicate
    EXPECT_EQ(rec_.seqs().back(), 13u);
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 1u);
}

// A single packet_seq far ahead (forged or corrupt) is passed on, but the
// channel's genuine packets keep flowing: it is not taken for a jump.
TEST_F(ArbiterTest, LonePacketFarAheadDoesNotSilenceTheChannel) {
    offer(1, 0, kA);
    offer(2, 1, kA);
    offer(1'000'000, 2, kA);  // forged
    offer(3, 3, kA);
    offer(3, 4, kB);
    offer(5'000'000, 5, kB);  // another, not following the first: no jump either
    offer(4, 6, kB);
    offer(5, 7, kA);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 2, 1'000'000, 3, 5'000'000, 4, 5}));
    EXPECT_EQ(counts(), (Counts{1, 0, 0, 0, 0}));
    EXPECT_EQ(arb_.counters().unconfirmed_jumps.get(), 2u);
}

// Issue 12, finding 3: two consecutive forged packets far ahead (2^40,
// 2^40 + 1) used to confirm a jump; every genuine packet after them was then
// dropped as an old duplicate and `lost on both` read 1.1e12. A jump beyond
// the spec's plausible bound is never confirmed.
TEST_F(ArbiterTest, ForgedConsecutivePairFarAheadDoesNotMoveTheChannel) {
    constexpr std::uint64_t kForged = std::uint64_t{1} << 40;
    offer(1, 0, kA);
    offer(2, 1, kA);
    offer(kForged, 2, kA);
    offer(kForged + 1, 3, kA);
    for (std::uint64_t s = 3; s <= 6; ++s) {
        offer(s, 10 + static_cast<std::int64_t>(s), kA);
        offer(s, 20 + static_cast<std::int64_t>(s), kB);  // the other line's copy
    }
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 2, kForged, kForged + 1, 3, 4, 5, 6}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 4u);  // B's genuine copies only
    EXPECT_EQ(arb_.counters().released_gaps.get(), 0u);
    EXPECT_EQ(arb_.counters().unconfirmed_jumps.get(), 2u);
}

// A forged pair within the plausible bound on one line (packets the venue
// never sent: other bytes than the genuine 100 and 101) confirms nothing:
// the genuine stream goes on arbitrated, and the genuine 100 and 101, when
// they come, are not taken for copies of the forged ones.
TEST_F(ArbiterTest, ForgedPairOnOneLineConfirmsNothingAndGenuineSameSeqsAreNotDuplicates) {
    offer(1, 0, kA);
    offer_forged(100, 1, kA);
    offer_forged(101, 2, kA);
    for (std::uint64_t s = 2; s <= 4; ++s) {
        offer(s, 10 + static_cast<std::int64_t>(s), kB);
        offer(s, 20 + static_cast<std::int64_t>(s), kA);  // copies: dropped
    }
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 100, 101, 2, 3, 4}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 3u);
    EXPECT_EQ(arb_.counters().released_gaps.get(), 0u);
    for (std::uint64_t s = 5; s <= 101; ++s) offer(s, 100 + static_cast<std::int64_t>(s), kB);
    ASSERT_EQ(rec_.out.size(), 6u + 97u) << "every genuine packet delivered once";
    EXPECT_EQ(rec_.seqs().back(), 101u);
    // The channel moved over the seqs passed on ahead (100, 101) when it
    // reached them; the genuine ones, other bytes, still went on (late).
    EXPECT_EQ(arb_.counters().late_packets.get(), 2u);
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 3u);
    EXPECT_EQ(arb_.counters().released_gaps.get(), 0u);
}

// Review finding: a corrupt packet_seq beyond the window, then the genuine
// stream with one packet lost on line A and line B a little behind. The
// genuine 200 must not be taken for the corrupt one, and the hole the other
// line fills must not be given up.
TEST_F(ArbiterTest, CorruptPacketAheadLeavesNoTrapForTheGenuineStream) {
    for (std::uint64_t s = 1; s <= 99; ++s) offer(s, static_cast<std::int64_t>(s), kA);
    offer_forged(200, 100, kA);  // corrupt: 200 with another packet's bytes
    for (std::uint64_t s = 100; s <= 202; ++s) {
        const auto t = 100 + static_cast<std::int64_t>(s);
        if (s != 199) offer(s, t, kA);   // A loses 199
        if (s >= 102) offer(s - 2, t, kB);  // B two packets behind
    }
    offer(201, 400, kB);
    offer(202, 401, kB);
    Seqs want;
    for (std::uint64_t s = 1; s <= 99; ++s) want.push_back(s);
    want.push_back(200);  // the corrupt one, passed on
    for (std::uint64_t s = 100; s <= 202; ++s) want.push_back(s);
    EXPECT_EQ(rec_.seqs(), want);
    EXPECT_EQ(arb_.counters().released_gaps.get(), 0u);
    EXPECT_GT(arb_.counters().filled_holes.get(), 0u) << "B filled 199";
}

// A real jump with the lines skewed: both lost 10..4999, A runs ahead of B
// by a few packets. B's copy of a packet A passed on confirms the jump; no
// packet is delivered twice and the lost ones are counted once.
TEST_F(ArbiterTest, JumpConfirmedByTheOtherLineWithLinesSkewedDeliversEachPacketOnce) {
    for (std::uint64_t s = 1; s <= 9; ++s) {
        offer(s, static_cast<std::int64_t>(s), kA);
        offer(s, static_cast<std::int64_t>(s), kB);
    }
    for (std::uint64_t s = 5000; s <= 5010; ++s) {
        const auto t = static_cast<std::int64_t>(s);
        offer(s, t, kA);
        if (s >= 5003) offer(s - 3, t, kB);
    }
    for (std::uint64_t s = 5008; s <= 5010; ++s) offer(s, 6000, kB);
    Seqs want;
    for (std::uint64_t s = 1; s <= 9; ++s) want.push_back(s);
    for (std::uint64_t s = 5000; s <= 5010; ++s) want.push_back(s);
    EXPECT_EQ(rec_.seqs(), want);
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 9u + 11u);
    EXPECT_EQ(arb_.counters().released_gaps.get(), 4990u);  // 10..4999
    offer(5011, 7000, kA);
    EXPECT_EQ(rec_.seqs().back(), 5011u) << "arbitrated in order again";
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
}

// A packet beyond the plausible bound arrives on both lines: the second copy
// is a duplicate (the sequencer sees it once), and it moves nothing.
TEST_F(ArbiterTest, ImplausiblyFarPacketOnBothLinesIsPassedOnOnce) {
    constexpr std::uint64_t kFar = std::uint64_t{1} << 40;
    offer(1, 0, kA);
    offer(kFar, 1, kA);
    offer(kFar, 2, kB);
    offer(2, 3, kA);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, kFar, 2}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 1u);
    EXPECT_EQ(arb_.counters().released_gaps.get(), 0u);
}

// A packet given up as lost that then arrives late on both lines reaches the
// sequencer once: the late copy is remembered like any delivered packet.
TEST_F(ArbiterTest, LatePacketOnBothLinesIsPassedOnOnce) {
    offer(1, 0, kA);
    offer(3, 10, kA);
    expire(10 + kHold);
    offer(2, 20 + kHold, kA);
    offer(2, 21 + kHold, kB);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 2}));
    EXPECT_EQ(arb_.counters().late_packets.get(), 1u);
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 1u);
}

// Another packet with the seq of one that is held (forged or corrupt) is not
// its copy: it goes on to the sequencer, and the held one is still delivered.
TEST_F(ArbiterTest, OtherBytesWithAHeldSeqAreNotADuplicate) {
    offer(1, 0, kA);
    offer(3, 10, kA);         // held
    offer_forged(3, 11, kB);  // not a copy of the held 3
    offer(2, 12, kB);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 2, 3}));
    EXPECT_EQ(rec_.out[1].recv_ns, 11) << "the forged one, passed on";
    EXPECT_EQ(rec_.out[3].recv_ns, 10) << "the held genuine one, in order";
    EXPECT_EQ(arb_.counters().late_packets.get(), 1u);
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 0u);
}

// The channel starts at the first packet_seq seen; the other line's earlier
// packets were never delivered, so they are not duplicates.
TEST_F(ArbiterTest, PacketsBeforeTheStartingPointAreNotDuplicates) {
    offer(5, 0, kA);
    offer(4, 1, kB);
    offer(5, 2, kB);
    EXPECT_EQ(rec_.seqs(), (Seqs{5, 4}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 1u);
    EXPECT_EQ(arb_.counters().late_packets.get(), 1u);
}

// A new session's packet_seq starts again: what was delivered in the old
// session says nothing about the new one's packets.
TEST_F(ArbiterTest, NewSessionForgetsWhatTheOldOneDelivered) {
    offer(1, 0, kA, kCh, 1);
    offer(2, 1, kA, kCh, 1);
    offer(3, 2, kA, kCh, 1);
    offer(3, 3, kA, kCh, 2);  // new session, starts at 3
    offer(2, 4, kB, kCh, 2);  // below the start, never delivered in session 2
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 2, 3, 3, 2}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 0u);
}

// Issue 12, finding 1(c): the configured channels own the slots, so a stray
// packet of another channel id arriving first cannot take the only slot and
// silently switch arbitration off for the real channel.
TEST(ArbiterConfiguredChannels, StrayChannelCannotTakeTheConfiguredSlot) {
    const std::uint16_t configured[] = {kCh};
    ArbiterRig arb(std::span<const std::uint16_t>(configured), kWindow, kHold);
    Recorder rec;
    const Bytes stray = packet(7, kSession, 1);
    arb.offer(stray, 0, kA, rec);
    for (std::uint64_t s = 1; s <= 3; ++s) {
        const Bytes d = packet(kCh, kSession, s);
        arb.offer(d, 10 + static_cast<std::int64_t>(s), kA, rec);
        arb.offer(d, 20 + static_cast<std::int64_t>(s), kB, rec);
    }
    EXPECT_EQ(rec.seqs_of(kCh), (std::vector<std::uint64_t>{1, 2, 3}));
    EXPECT_EQ(arb.counters().duplicate_packets.get(), 3u) << "channel 1 is arbitrated";
    EXPECT_EQ(arb.counters().unarbitrated.get(), 1u) << "only the stray packet";
}

// ------------------------------------------------------------ sessions

TEST_F(ArbiterTest, NewSessionFlushesOldHeldInOrderThenStartsAtItsFirstSeq) {
    offer(1, 0, kA, kCh, 1);
    offer(3, 10, kA, kCh, 1);  // held (2 missing)
    offer(4, 20, kA, kCh, 1);  // held
    offer(500, 30, kA, kCh, 2);  // new session: any first seq
    ASSERT_EQ(rec_.out.size(), 4u);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 4, 500}));
    EXPECT_EQ(rec_.out[1].session, 1u);
    EXPECT_EQ(rec_.out[2].session, 1u);
    EXPECT_EQ(rec_.out[3].session, 2u);
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    EXPECT_EQ(arb_.counters().released_gaps.get(), 1u);  // seq 2 of session 1 only

    offer(501, 40, kA, kCh, 2);
    offer(500, 41, kB, kCh, 2);  // B's copy: duplicate
    offer(503, 42, kA, kCh, 2);  // a hole in the new session is held as usual
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 4, 500, 501}));
    EXPECT_EQ(arb_.next_deadline(), 42 + kHold);
    offer(502, 43, kB, kCh, 2);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 3, 4, 500, 501, 502, 503}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 1u);
}

TEST_F(ArbiterTest, NewSessionWithLowerSeqIsNotTakenForDuplicate) {
    for (std::uint64_t s = 1000; s < 1003; ++s) offer(s, static_cast<std::int64_t>(s), kA, kCh, 1);
    offer(1, 2000, kA, kCh, 2);
    offer(2, 2001, kA, kCh, 2);
    EXPECT_EQ(rec_.seqs(), (Seqs{1000, 1001, 1002, 1, 2}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 0u);
}

TEST_F(ArbiterTest, OlderSessionPacketPassesStraightThrough) {
    offer(10, 0, kA, kCh, 5);
    offer(12, 10, kA, kCh, 5);  // held
    offer(11, 20, kB, kCh, 4);  // older session: straight through, not arbitrated
    offer(10, 21, kB, kCh, 4);  // same seq as a delivered one, still through
    ASSERT_EQ(rec_.seqs(), (Seqs{10, 11, 10}));
    EXPECT_EQ(rec_.out[1].session, 4u);
    EXPECT_EQ(rec_.out[1].line, kB);
    EXPECT_EQ(rec_.out[1].recv_ns, 20);
    EXPECT_EQ(rec_.out[2].session, 4u);
    // Counted by the decoder, not here; the session-5 state is untouched.
    EXPECT_EQ(counts(), (Counts{0, 1, 0, 0, 0}));
    EXPECT_EQ(arb_.next_deadline(), 10 + kHold);
    offer(11, 30, kA, kCh, 5);
    EXPECT_EQ(rec_.seqs(), (Seqs{10, 11, 10, 11, 12}));
    EXPECT_EQ(rec_.out[3].session, 5u);
    EXPECT_EQ(rec_.out[4].session, 5u);
}

// ------------------------------------------------------------ invalid input

TEST_F(ArbiterTest, InvalidHeadersPassThroughAndAreCounted) {
    offer(1, 0, kA);
    offer(3, 10, kA);  // held: invalid datagrams must not wait behind it

    const Bytes good = packet(kCh, kSession, 2);
    const Bytes shorter(good.begin(), good.begin() + qfb1::kPacketHeaderSize - 1);
    Bytes bad_magic = good;
    bad_magic[0] = std::byte{0x00};
    Bytes bad_version = good;
    bad_version[2] = std::byte{2};

    offer_raw(shorter, 20, kA);
    offer_raw(bad_magic, 21, kB);
    offer_raw(bad_version, 22, kA);
    offer_raw({}, 23, kB);  // empty datagram

    ASSERT_EQ(rec_.out.size(), 5u);
    EXPECT_EQ(rec_.out[1].bytes, shorter);
    EXPECT_EQ(rec_.out[1].recv_ns, 20);
    EXPECT_EQ(rec_.out[2].bytes, bad_magic);
    EXPECT_EQ(rec_.out[2].line, kB);
    EXPECT_EQ(rec_.out[3].bytes, bad_version);
    EXPECT_TRUE(rec_.out[4].bytes.empty());
    EXPECT_EQ(counts(), (Counts{0, 1, 0, 0, 4}));
    // The hole at 2 is still open: none of those filled it.
    EXPECT_EQ(arb_.next_deadline(), 10 + kHold);
    offer(2, 30, kB);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, kNoSeq, kNoSeq, kNoSeq, kNoSeq, 2, 3}));
}

TEST_F(ArbiterTest, OversizedDatagramPassesThroughAndIsCounted) {
    offer(1, 0, kA);
    PacketBuilder b(kCh, kSession, 2, 0);
    const Bytes body(qfb1::kMaxDatagram - qfb1::kPacketHeaderSize - qfb1::kMessageHeaderSize + 1, std::byte{7});
    b.raw_message('Z', body);
    ASSERT_EQ(b.size(), qfb1::kMaxDatagram + 1);
    const std::span<const std::byte> oversized = b.bytes();
    offer_raw(oversized, 5, kA);
    ASSERT_EQ(rec_.out.size(), 2u);
    EXPECT_EQ(rec_.out[1].bytes, Bytes(oversized.begin(), oversized.end()));
    EXPECT_EQ(arb_.counters().unarbitrated.get(), 1u);
    // It took no part in arbitration: 2 is still expected.
    offer(2, 6, kB);
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 2, 2}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 0u);
}

// ------------------------------------------------------------ channels

TEST_F(ArbiterTest, ChannelsAreIndependent) {
    offer(1, 0, kA, kCh);
    offer(3, 10, kA, kCh);  // channel 1 holds 3
    offer(1, 20, kA, kCh2);
    offer(2, 30, kA, kCh2);
    offer(3, 40, kB, kCh2);
    EXPECT_EQ(rec_.seqs_of(kCh), (Seqs{1}));
    EXPECT_EQ(rec_.seqs_of(kCh2), (Seqs{1, 2, 3})) << "channel 2 waited behind channel 1's hole";
    offer(3, 41, kA, kCh2);  // a duplicate on channel 2 ...
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 1u);
    EXPECT_EQ(rec_.seqs_of(kCh), (Seqs{1}));  // ... is not channel 1's 3

    offer(5, 50, kA, kCh2);  // a hole on channel 2, later deadline
    EXPECT_EQ(arb_.next_deadline(), 10 + kHold);
    expire(10 + kHold);
    EXPECT_EQ(rec_.seqs_of(kCh), (Seqs{1, 3}));
    EXPECT_EQ(rec_.seqs_of(kCh2), (Seqs{1, 2, 3})) << "channel 2 released on channel 1's deadline";
    EXPECT_EQ(arb_.next_deadline(), 50 + kHold);
    offer(3, 60, kB, kCh);   // delivered on channel 1: a duplicate
    offer(4, 61, kB, kCh2);  // fills channel 2's hole
    EXPECT_EQ(rec_.seqs_of(kCh), (Seqs{1, 3}));
    EXPECT_EQ(rec_.seqs_of(kCh2), (Seqs{1, 2, 3, 4, 5}));
    EXPECT_EQ(counts(), (Counts{2, 2, 1, 1, 0}));
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
}

TEST_F(ArbiterTest, ExpireReleasesHoldsOfEveryChannel) {
    offer(1, 0, kA, kCh);  // channel 1 first, no hole
    offer(1, 1, kA, kCh2);
    offer(3, 10, kA, kCh2);  // hole on the second channel only
    offer(2, 11, kA, kCh);
    EXPECT_EQ(arb_.next_deadline(), 10 + kHold);
    expire(10 + kHold - 1);
    EXPECT_EQ(rec_.seqs_of(kCh2), (Seqs{1}));
    expire(10 + kHold);
    EXPECT_EQ(rec_.seqs_of(kCh2), (Seqs{1, 3}));
    EXPECT_EQ(rec_.seqs_of(kCh), (Seqs{1, 2}));
    EXPECT_EQ(arb_.counters().released_gaps.get(), 1u);
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
}

class ArbiterTwoChannelsTest : public ArbiterTest {
protected:
    ArbiterTwoChannelsTest() : ArbiterTest(2) {}
};

TEST_F(ArbiterTwoChannelsTest, MoreChannelsThanConfiguredPassThroughAndAreCounted) {
    offer(1, 0, kA, 7);
    offer(1, 1, kA, 8);
    offer(5, 2, kA, 9);  // third channel: no state left
    offer(5, 3, kB, 9);  // its copy is not arbitrated either
    offer(7, 4, kA, 9);  // nor held behind a hole
    EXPECT_EQ(rec_.seqs_of(9), (Seqs{5, 5, 7}));
    EXPECT_EQ(counts(), (Counts{0, 0, 0, 0, 3}));
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    // The two tracked channels still arbitrate.
    offer(1, 5, kB, 7);
    offer(3, 6, kA, 8);
    EXPECT_EQ(rec_.seqs_of(7), (Seqs{1}));
    EXPECT_EQ(rec_.seqs_of(8), (Seqs{1}));
    EXPECT_EQ(arb_.counters().duplicate_packets.get(), 1u);
    EXPECT_EQ(arb_.next_deadline(), 6 + kHold);
}

TEST(ArbiterDisabled, ZeroChannelsPassesEverythingThrough) {
    ArbiterRig arb(0, kWindow, kHold);
    Recorder rec;
    const Bytes p1 = packet(kCh, kSession, 1);
    const Bytes p3 = packet(kCh, kSession, 3);
    arb.offer(p1, 0, kA, rec);
    arb.offer(p1, 1, kB, rec);
    arb.offer(p3, 2, kA, rec);
    EXPECT_EQ(rec.seqs(), (std::vector<std::uint64_t>{1, 1, 3}));
    EXPECT_EQ(arb.counters().unarbitrated.get(), 3u);
    EXPECT_EQ(arb.next_deadline(), INT64_MAX);
}

// ------------------------------------------------------------ deadline

TEST_F(ArbiterTest, NextDeadlineReflectsOldestHold) {
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    offer(1, 0, kA);
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    offer(3, 100, kA);  // first hold
    EXPECT_EQ(arb_.next_deadline(), 100 + kHold);
    offer(5, 300, kA);  // a later hold does not move it
    EXPECT_EQ(arb_.next_deadline(), 100 + kHold);
    offer(3, 310, kB);  // a duplicate of a held packet does not move it
    EXPECT_EQ(arb_.next_deadline(), 100 + kHold);
    offer(2, 400, kB);  // fills the first hole: 5 is now the oldest hold
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 2, 3}));
    EXPECT_EQ(arb_.next_deadline(), 300 + kHold);
    offer(4, 500, kB);  // fills the last one
    EXPECT_EQ(rec_.seqs(), (Seqs{1, 2, 3, 4, 5}));
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    EXPECT_EQ(counts(), (Counts{1, 2, 2, 0, 0}));
}

TEST_F(ArbiterTest, ExpireWithNothingHeldDeliversNothing) {
    offer(1, 0, kA);
    expire(INT64_MAX);
    EXPECT_EQ(rec_.seqs(), (Seqs{1}));
    EXPECT_EQ(counts(), (Counts{0, 0, 0, 0, 0}));
}

// ------------------------------------------------------------ payload

TEST_F(ArbiterTest, HeldPayloadsDeliveredIntact) {
    offer(1, 0, kA);
    // A full-size datagram (exactly kMaxDatagram) and a snapshot, both held.
    PacketBuilder big(kCh, kSession, 3, 33);
    Bytes body(qfb1::kMaxDatagram - qfb1::kPacketHeaderSize - qfb1::kMessageHeaderSize);
    for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<std::byte>((i * 31 + 7) & 0xFF);
    big.raw_message('Z', body);
    ASSERT_EQ(big.size(), qfb1::kMaxDatagram);
    const Bytes big_bytes = to_bytes(big);

    PacketBuilder snap(kCh, kSession, 4, 44);
    const PacketBuilder::SnapLevel bids[] = {{100, 1}, {99, 2}, {98, 3}};
    const PacketBuilder::SnapLevel asks[] = {{101, 4}, {102, 5}};
    snap.snapshot(42, 17, 4400, bids, asks).heartbeat(42, 18, 4401);
    const Bytes snap_bytes = to_bytes(snap);

    offer_raw(big_bytes, 10, kB);
    offer_raw(snap_bytes, 20, kA);
    offer(6, 25, kA);  // held behind another hole, released by expire
    ASSERT_EQ(rec_.out.size(), 1u);
    // Packets delivered in between must not disturb the held copies.
    offer(1, 26, kB);
    offer(2, 30, kB);
    ASSERT_EQ(rec_.seqs(), (Seqs{1, 2, 3, 4}));
    EXPECT_EQ(rec_.out[2].bytes, big_bytes);
    EXPECT_EQ(rec_.out[2].line, kB);
    EXPECT_EQ(rec_.out[2].recv_ns, 10);
    EXPECT_EQ(rec_.out[3].bytes, snap_bytes);
    EXPECT_EQ(rec_.out[3].line, kA);
    EXPECT_EQ(rec_.out[3].recv_ns, 20);
    expire(25 + kHold);
    ASSERT_EQ(rec_.seqs(), (Seqs{1, 2, 3, 4, 6}));
    EXPECT_EQ(rec_.out[4].bytes, packet(kCh, kSession, 6));
    EXPECT_EQ(rec_.out[4].recv_ns, 25);
}

TEST_F(ArbiterTest, SlotReuseAcrossWindowKeepsPayloadsApart) {
    // Seqs that share a slot (seq & (window-1)) are held one after another.
    std::uint64_t next = 1;
    offer(next++, 0, kA);
    std::int64_t t = 1;
    for (int round = 0; round < 3; ++round) {
        const std::uint64_t hole = next;
        for (std::uint64_t s = hole + 1; s < hole + kWindow; ++s) offer(s, t++, kA);  // fills every other slot
        offer(hole, t++, kB);
        next = hole + kWindow;
    }
    ASSERT_EQ(rec_.out.size(), next - 1);
    for (std::size_t i = 0; i < rec_.out.size(); ++i) {
        EXPECT_EQ(rec_.out[i].seq, i + 1);
        EXPECT_EQ(rec_.out[i].bytes, packet(kCh, kSession, i + 1)) << "seq " << i + 1;
    }
    EXPECT_EQ(arb_.next_deadline(), INT64_MAX);
    EXPECT_EQ(arb_.counters().released_gaps.get(), 0u);
}

}  // namespace
}  // namespace tickgate
