// The MoldUDP64 stream stage, one test per rule of ITCH50.md "The stream:
// exactly-once by position".
#include "tickgate/feed/moldudp64/stream.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tickgate/feed/itch50/decoder.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"

namespace tickgate::moldudp64 {
namespace {

using itch50::Bytes;
constexpr std::int64_t kMs = 1'000'000;

// Records what the stage decided, in order.
struct Recorder {
    std::vector<std::uint64_t> applied;  // positions, in the order applied
    std::vector<std::uint64_t> refs;     // the D messages' order refs (position p carries ref p)
    std::vector<std::string> events;
    std::vector<std::int64_t> alive_at;
    void message(std::uint32_t, std::span<const std::byte> m, std::uint64_t pos, std::int64_t) {
        applied.push_back(pos);
        refs.push_back(itch50::DeleteView(m).order_ref());
    }
    void session_started(std::uint32_t, bool replaces) { events.push_back(replaces ? "new_session" : "first_session"); }
    void late_join(std::uint32_t, std::uint64_t n) { events.push_back("late_join " + std::to_string(n)); }
    void gave_up(std::uint32_t, std::uint64_t lost) { events.push_back("gave_up " + std::to_string(lost)); }
    void alive(std::uint32_t, std::int64_t t) { alive_at.push_back(t); }
};

// A packet of `n` D messages from position `seq`, message p carrying order ref p.
Bytes packet(std::uint64_t seq, int n, std::string_view session = "SESSION001") {
    std::vector<Bytes> msgs;
    for (int i = 0; i < n; ++i) msgs.push_back(itch50::delete_order(1, seq + static_cast<std::uint64_t>(i)));
    return itch50::mold_packet(session, seq, msgs);
}

class StreamRule : public ::testing::Test {
protected:
    explicit StreamRule(std::uint32_t max_held = 64) : stream_(config(max_held), 2) {}
    static StreamConfig config(std::uint32_t max_held) {
        StreamConfig c;
        c.gap_timeout_ns = 500 * kMs;
        c.max_held_packets = max_held;
        return c;
    }
    void feed(const Bytes& d, std::int64_t t = 0, std::uint32_t ch = 0) {
        const std::span<const std::byte> s(d.data(), d.size());
        stream_.on_datagram(ch, s, read_key(s, static_cast<std::uint16_t>(ch)), t, rec_);
    }
    // A re-request server's answer, for a client that asked for [lo, hi).
    void answer(const Bytes& d, std::uint64_t lo, std::uint64_t hi, std::int64_t t = 0, std::uint32_t ch = 0) {
        const std::span<const std::byte> s(d.data(), d.size());
        stream_.on_answer(ch, s, read_key(s, static_cast<std::uint16_t>(ch)), t, rec_, [&](std::uint64_t at) {
            return hi > at ? std::pair<std::uint64_t, std::uint64_t>{lo, hi} : std::pair<std::uint64_t, std::uint64_t>{0, 0};
        });
    }
    std::vector<std::uint64_t> range(std::uint64_t from, std::uint64_t to) {
        std::vector<std::uint64_t> v;
        for (std::uint64_t p = from; p < to; ++p) v.push_back(p);
        return v;
    }
    [[nodiscard]] const StreamCounters& counters(std::uint32_t ch = 0) const { return stream_.channel(ch).counters; }

    Stream<itch50::MoldPayload> stream_;
    Recorder rec_;
};

TEST_F(StreamRule, MessagesBelowNextSeqAreDuplicatesDroppedAndCounted) {
    feed(packet(1, 3));
    feed(packet(1, 3));  // the other line's copy
    EXPECT_EQ(rec_.applied, range(1, 4));
    EXPECT_EQ(counters().duplicate_messages.get(), 3u);
    EXPECT_EQ(stream_.channel(0).next_seq, 4u);
    EXPECT_EQ(rec_.alive_at.size(), 1u);  // a duplicate does not refresh liveness
}

// may_apply: the hint ITCH's prefetch pass takes before on_datagram. False
// only for a packet whose every position lies below next_seq in the current
// session (a duplicate on_datagram would drop).
TEST_F(StreamRule, MayApplyIsFalseOnlyForPositionsBelowNextSeqOfTheSession) {
    const auto key = [](const Bytes& d) { return read_key(std::span<const std::byte>(d.data(), d.size()), 0); };
    EXPECT_TRUE(stream_.may_apply(0, key(packet(1, 3))));  // no session yet
    feed(packet(1, 3));
    EXPECT_FALSE(stream_.may_apply(0, key(packet(1, 3))));  // the other line's copy
    EXPECT_FALSE(stream_.may_apply(0, key(packet(2, 2))));  // inside what was applied
    EXPECT_TRUE(stream_.may_apply(0, key(packet(2, 3))));   // position 4 is new
    EXPECT_TRUE(stream_.may_apply(0, key(packet(4, 1))));
    EXPECT_TRUE(stream_.may_apply(0, key(packet(1, 3, "SESSION002"))));  // another session
    EXPECT_TRUE(stream_.may_apply(1, key(packet(1, 3))));                  // another channel
    const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max() - 1;
    EXPECT_TRUE(stream_.may_apply(0, key(packet(huge, 3))));  // no wrap past 2^64 reads as applied
}

TEST_F(StreamRule, PacketOverlappingNextSeqHasItsNewMessagesApplied) {
    feed(packet(1, 3));
    feed(packet(2, 4));  // 2, 3 again; 4, 5 new
    EXPECT_EQ(rec_.applied, range(1, 6));
    EXPECT_EQ(rec_.refs, range(1, 6));  // each position's own message
    EXPECT_EQ(counters().duplicate_messages.get(), 2u);
}

TEST_F(StreamRule, HoleFilledByTheOtherLineAppliesInOrderThenTheHeld) {
    feed(packet(1, 2), 0);
    feed(packet(5, 2), 1 * kMs);  // hole 3..4
    EXPECT_EQ(rec_.applied, range(1, 3));
    EXPECT_EQ(stream_.channel(0).held, 1u);
    EXPECT_EQ(stream_.channel(0).open_holes, 1u);
    feed(packet(3, 2), 2 * kMs);  // line B's copy
    EXPECT_EQ(rec_.applied, range(1, 7));
    EXPECT_EQ(counters().holes_filled.get(), 1u);
    EXPECT_EQ(counters().lost_messages.get(), 0u);
    EXPECT_EQ(counters().held_max, 1u);
    EXPECT_EQ(stream_.held_packets(), 0u);
    EXPECT_TRUE(rec_.events == std::vector<std::string>{"first_session"});
}

TEST_F(StreamRule, HoleOpenStrictlyLongerThanGapTimeoutIsGivenUpAndLateArrivalIsADuplicate) {
    feed(packet(1, 2), 0);
    feed(packet(5, 2), 10 * kMs);  // hole 3..4 opened at 10 ms
    stream_.expire(510 * kMs, rec_);  // exactly gap_timeout: not yet
    EXPECT_EQ(stream_.channel(0).open_holes, 1u);
    stream_.expire(510 * kMs + 1, rec_);
    EXPECT_EQ(stream_.channel(0).open_holes, 0u);
    EXPECT_EQ(counters().lost_messages.get(), 2u);
    EXPECT_EQ(rec_.applied, (std::vector<std::uint64_t>{1, 2, 5, 6}));
    EXPECT_TRUE(stream_.channel(0).gave_up);
    feed(packet(3, 2), 600 * kMs);
    EXPECT_EQ(counters().duplicate_messages.get(), 2u);
    EXPECT_EQ(counters().holes_filled.get(), 0u);
    EXPECT_EQ(rec_.events.back(), "gave_up 2");
}

TEST_F(StreamRule, EachHoleHasItsOwnTimer) {
    feed(packet(1, 1), 0);
    feed(packet(3, 1), 100 * kMs);  // hole 2 at 100 ms
    feed(packet(5, 1), 300 * kMs);  // hole 4 at 300 ms
    stream_.expire(700 * kMs, rec_);
    EXPECT_EQ(counters().lost_messages.get(), 1u);
    EXPECT_EQ(rec_.applied, (std::vector<std::uint64_t>{1, 3}));
    feed(packet(4, 1), 750 * kMs);  // the second hole filled in time
    EXPECT_EQ(rec_.applied, (std::vector<std::uint64_t>{1, 3, 4, 5}));
    EXPECT_EQ(counters().holes_filled.get(), 1u);
}

TEST_F(StreamRule, FinishGivesUpEveryOpenHole) {
    feed(packet(1, 1), 0);
    feed(packet(3, 1), 1);
    feed(packet(6, 1), 2);
    stream_.finish(rec_);
    EXPECT_EQ(counters().lost_messages.get(), 3u);
    EXPECT_EQ(rec_.applied, (std::vector<std::uint64_t>{1, 3, 6}));
}

class SmallPoolStreamRule : public StreamRule {
protected:
    SmallPoolStreamRule() : StreamRule(2) {}
};

TEST_F(SmallPoolStreamRule, PoolFullGivesUpTheOldestHoleFirst) {
    feed(packet(1, 1), 0);
    feed(packet(3, 1), 1);  // hole 2, held 3
    feed(packet(4, 1), 2);  // held 4: the pool is full
    feed(packet(6, 1), 3);  // hole 5, needs a slot: hole 2 is given up
    EXPECT_EQ(counters().lost_messages.get(), 1u);
    EXPECT_EQ(rec_.applied, (std::vector<std::uint64_t>{1, 3, 4}));
    EXPECT_EQ(stream_.channel(0).held, 1u);
    feed(packet(5, 1), 4);
    EXPECT_EQ(rec_.applied, (std::vector<std::uint64_t>{1, 3, 4, 5, 6}));
    EXPECT_EQ(counters().holes_filled.get(), 1u);
}

TEST_F(SmallPoolStreamRule, ExtraCopiesOfAHeldPacketDoNotTakeASlot) {
    feed(packet(1, 1), 0);
    feed(packet(3, 1), 1);
    feed(packet(3, 1), 2);  // line B's copy of the held packet
    EXPECT_EQ(stream_.held_packets(), 1u);
    EXPECT_EQ(counters().duplicate_messages.get(), 1u);
    feed(packet(2, 1), 3);
    EXPECT_EQ(rec_.applied, range(1, 4));
    EXPECT_EQ(counters().lost_messages.get(), 0u);
}

TEST_F(StreamRule, HeartbeatBeyondTheHighestPositionRevealsAHole) {
    feed(packet(1, 2), 0);
    feed(itch50::mold_heartbeat("SESSION001", 3), 1);  // nothing missing: alive
    EXPECT_EQ(stream_.channel(0).open_holes, 0u);
    EXPECT_EQ(rec_.alive_at.back(), 1);
    feed(itch50::mold_heartbeat("SESSION001", 5), 2);  // 3 and 4 were sent
    EXPECT_EQ(stream_.channel(0).open_holes, 1u);
    EXPECT_EQ(rec_.alive_at.back(), 1);  // a heartbeat revealing a hole does not refresh
    stream_.finish(rec_);
    EXPECT_EQ(counters().lost_messages.get(), 2u);
}

TEST_F(StreamRule, EndOfSessionBeyondTheHighestPositionRevealsAHole) {
    feed(packet(1, 2), 0);
    feed(itch50::mold_heartbeat("SESSION001", 6, true), 1);
    stream_.finish(rec_);
    EXPECT_EQ(counters().lost_messages.get(), 3u);
}

TEST_F(StreamRule, LateJoinCountsTheMessagesBeforeTheFirstPacketNotLost) {
    feed(packet(14757701, 2), 0);
    EXPECT_EQ(counters().late_join_messages.get(), 14757700u);
    EXPECT_EQ(counters().lost_messages.get(), 0u);
    EXPECT_TRUE(stream_.channel(0).late_joined);
    EXPECT_EQ(rec_.events, (std::vector<std::string>{"first_session", "late_join 14757700"}));
    EXPECT_EQ(rec_.applied, range(14757701, 14757703));
}

TEST_F(StreamRule, LateJoinOnAHeartbeat) {
    feed(itch50::mold_heartbeat("SESSION001", 10), 0);
    EXPECT_EQ(counters().late_join_messages.get(), 9u);
    feed(packet(10, 1), 1);
    EXPECT_EQ(rec_.applied, range(10, 11));
    EXPECT_EQ(counters().lost_messages.get(), 0u);
}

TEST_F(StreamRule, SessionReadFromOneIsNoLateJoin) {
    feed(packet(1, 1), 0);
    EXPECT_EQ(counters().late_join_messages.get(), 0u);
    EXPECT_FALSE(stream_.channel(0).late_joined);
}

TEST_F(StreamRule, NewSessionLosesTheOpenHoleDiscardsHeldAndOldSessionPacketsAreStale) {
    feed(packet(1, 1, "OLD"), 0);
    feed(packet(3, 2, "OLD"), 1);  // hole 2, held 3..4
    feed(packet(1, 2, "NEW"), 2);
    EXPECT_EQ(counters().lost_messages.get(), 1u);
    EXPECT_EQ(counters().session_changes.get(), 1u);
    EXPECT_EQ(stream_.held_packets(), 0u);
    EXPECT_EQ(rec_.applied, (std::vector<std::uint64_t>{1, 1, 2}));  // old 1, then new 1, 2
    EXPECT_EQ(rec_.events, (std::vector<std::string>{"first_session", "new_session"}));
    feed(packet(2, 1, "OLD"), 3);  // a late packet of the old session
    EXPECT_EQ(counters().stale_session_packets.get(), 1u);
    EXPECT_EQ(counters().packets.get(), 4u);
    EXPECT_EQ(rec_.applied.size(), 3u);
    EXPECT_FALSE(stream_.channel(0).gave_up);
}

// "A channel remembers its last 16" sessions: the ring keeps the newest 16
// replaced ones. The stream used to overwrite one slot for good once it had
// replaced 16, so after 19 sessions the 18th was forgotten and a late packet
// of it was taken for a new session (the books emptied again).
TEST_F(StreamRule, TheLastSixteenReplacedSessionsAreStaleAndAnOlderOneIsNewAgain) {
    const auto name = [](int n) {
        char s[16];  // 10 characters; room for any int, so -Wformat-truncation has nothing to say
        std::snprintf(s, sizeof s, "S%09d", n);
        return std::string(s);
    };
    for (int n = 1; n <= 19; ++n) feed(packet(1, 1, name(n)), n);  // S19 current; S3..S18 remembered
    EXPECT_EQ(counters().session_changes.get(), 18u);
    for (const int stale : {18, 17, 3}) {
        const std::uint64_t before = counters().stale_session_packets.get();
        feed(packet(2, 1, name(stale)), 100 + stale);
        EXPECT_EQ(counters().stale_session_packets.get(), before + 1) << name(stale) << " was replaced among the last 16";
    }
    EXPECT_EQ(counters().session_changes.get(), 18u);
    feed(packet(1, 1, name(2)), 200);  // replaced 17 sessions ago: forgotten, so a new session
    EXPECT_EQ(counters().session_changes.get(), 19u);
    moldudp64::Session current{};
    std::memcpy(current.data(), name(2).data(), current.size());
    EXPECT_EQ(stream_.channel(0).session, current);
}

TEST_F(StreamRule, MalformedPacketsMessagesFromTheFaultOnAreNotReceived) {
    feed(packet(1, 1), 0);
    Bytes d = packet(2, 3);
    d.resize(d.size() - 10);  // the third message is cut
    feed(d, 1);
    EXPECT_EQ(rec_.applied, range(1, 4));
    EXPECT_EQ(counters().malformed_packets.get(), 1u);
    EXPECT_EQ(stream_.channel(0).open_holes, 0u);  // position 4 was not revealed
    feed(packet(4, 1), 2);  // the other line's whole copy
    EXPECT_EQ(rec_.applied, range(1, 5));
    EXPECT_EQ(counters().holes_filled.get(), 0u);
}

TEST_F(StreamRule, ShortDatagramIsMalformedAndReRequestIsSkipped) {
    Bytes tiny(7);
    feed(tiny);
    feed(itch50::mold_request("SESSION001", 1, 5));
    EXPECT_EQ(counters().malformed_packets.get(), 1u);
    EXPECT_EQ(counters().request_packets.get(), 1u);
    EXPECT_FALSE(stream_.channel(0).has_session);
}

TEST_F(StreamRule, AfterAGiveUpNothingRefreshesLivenessUntilTheSessionEnds) {
    feed(packet(1, 1), 0);
    feed(packet(3, 1), 1);
    stream_.finish(rec_);
    const std::size_t n = rec_.alive_at.size();
    feed(packet(4, 1), 2);
    feed(itch50::mold_heartbeat("SESSION001", 5), 3);
    EXPECT_EQ(rec_.alive_at.size(), n);
    feed(packet(1, 1, "NEXT"), 4);
    EXPECT_EQ(rec_.alive_at.back(), 4);
}

TEST_F(StreamRule, ChannelsAreIndependentStreams) {
    feed(packet(1, 1), 0, 0);
    feed(packet(3, 1), 0, 1);  // channel 1 late-joins at 3
    EXPECT_EQ(counters(0).late_join_messages.get(), 0u);
    EXPECT_EQ(counters(1).late_join_messages.get(), 2u);
    EXPECT_EQ(stream_.channel(1).open_holes, 0u);
}

// ---- ITCH50.md "Implausible positions"

// The reproduction: one heartbeat at 10^12 counted 999,999,999,948 lost and
// dropped the real stream after it as duplicates.
TEST_F(StreamRule, ImplausiblePositionHeartbeatFarBeyondIsDroppedAndMovesNothing) {
    feed(packet(1, 50), 0);
    const std::size_t alive = rec_.alive_at.size();
    feed(itch50::mold_heartbeat("SESSION001", 1'000'000'000'000), 1);
    EXPECT_EQ(counters().implausible_positions.get(), 1u);
    const auto v = stream_.channel(0);
    EXPECT_EQ(v.next_seq, 51u);
    EXPECT_EQ(v.seen_end, 51u);
    EXPECT_EQ(v.open_holes, 0u);
    EXPECT_EQ(rec_.alive_at.size(), alive);  // no liveness
    feed(packet(51, 3), 2);  // the real stream goes on
    stream_.finish(rec_);
    EXPECT_EQ(rec_.applied, range(1, 54));
    EXPECT_EQ(counters().lost_messages.get(), 0u);
    EXPECT_EQ(counters().duplicate_messages.get(), 0u);
    EXPECT_FALSE(stream_.channel(0).gave_up);
}

// More than 1,000,000,000 beyond the highest position seen (not next_seq: a
// hole may be open) is implausible; exactly that far is a hole like any other.
TEST_F(StreamRule, ImplausiblePositionBoundIsMoreThanABillionBeyondTheHighestSeen) {
    feed(packet(1, 1), 0, 0);
    feed(packet(10, 1), 0, 0);  // hole 2..9: highest seen 10
    feed(packet(10 + kImplausibleSeqJump + 1, 1), 1, 0);
    EXPECT_EQ(counters(0).implausible_positions.get(), 1u);
    EXPECT_EQ(stream_.channel(0).open_holes, 1u);
    EXPECT_EQ(stream_.channel(0).held, 1u);
    feed(packet(10 + kImplausibleSeqJump, 1), 2, 0);  // exactly the bound: a second hole
    EXPECT_EQ(counters(0).implausible_positions.get(), 1u);
    EXPECT_EQ(stream_.channel(0).open_holes, 2u);
    // A packet, a heartbeat and an end of session alike.
    feed(packet(1, 1), 0, 1);
    feed(itch50::mold_heartbeat("SESSION001", 2 + kImplausibleSeqJump, true), 1, 1);
    EXPECT_EQ(counters(1).implausible_positions.get(), 1u);
    EXPECT_EQ(stream_.channel(1).open_holes, 0u);
    stream_.finish(rec_);
    EXPECT_EQ(counters(1).lost_messages.get(), 0u);
}

// Nothing seen of a session yet: nothing to measure against. The first
// datagram is placed by the late-join rule, and only a new session moves a
// stream that far.
TEST_F(StreamRule, ImplausiblePositionFirstDatagramOfASessionIsALateJoin) {
    feed(itch50::mold_heartbeat("SESSION001", 1'000'000'000'000), 0);
    EXPECT_EQ(counters().implausible_positions.get(), 0u);
    EXPECT_EQ(counters().late_join_messages.get(), 999'999'999'999u);
    feed(packet(1, 1), 1);
    feed(packet(5'000'000'000'000, 1, "SESSION002"), 2);  // a new session's first packet
    EXPECT_EQ(counters().implausible_positions.get(), 0u);
    EXPECT_EQ(stream_.channel(0).next_seq, 5'000'000'000'001u);
}

TEST_F(StreamRule, ImplausiblePositionPositionsPastTheLargestAreMalformed) {
    feed(packet(1, 1), 0);
    const std::uint64_t last = std::numeric_limits<std::uint64_t>::max();
    feed(packet(last - 1, 3, "SESSION002"), 1);  // positions last - 1, last, and one past the end
    EXPECT_EQ(counters().malformed_packets.get(), 1u);
    EXPECT_EQ(counters().session_changes.get(), 0u);  // dropped whole
    EXPECT_EQ(rec_.applied, range(1, 2));
}

// ---- ITCH50.md "Re-request answers"

TEST_F(StreamRule, ReRequestAnswerAppliesOnlyPositionsRequestedAndStillMissing) {
    feed(packet(1, 1), 0);
    feed(packet(5, 1), 1);   // hole 2..4, 5 held
    answer(packet(3, 5), 2, 5);  // asked 2..4: 3, 4 taken (held behind 2); 5 held already; 6, 7 never revealed
    EXPECT_EQ(counters().unrequested_answer_messages.get(), 3u);
    EXPECT_EQ(stream_.channel(0).next_seq, 2u);
    EXPECT_EQ(stream_.channel(0).seen_end, 6u);
    answer(packet(2, 1), 2, 5);
    EXPECT_EQ(rec_.applied, range(1, 6));
    EXPECT_EQ(stream_.channel(0).next_seq, 6u);  // not 8
    EXPECT_EQ(counters().recovered_messages.get(), 3u);
    EXPECT_EQ(counters().holes_filled.get(), 1u);
    answer(packet(2, 2), 2, 5);  // a second answer to a re-sent request: nothing missing any more
    EXPECT_EQ(counters().unrequested_answer_messages.get(), 5u);
    EXPECT_EQ(counters().duplicate_messages.get(), 0u);
}

// The reproduction: an answer far beyond the requested range moved next_seq by 10^9.
TEST_F(StreamRule, ReRequestAnswerFarBeyondTheRequestedRangeMovesNothing) {
    feed(packet(1, 1), 0);
    feed(packet(5, 1), 1);  // hole 2..4
    answer(packet(1'000'000'000, 3), 2, 5);
    EXPECT_EQ(counters().unrequested_answer_messages.get(), 3u);
    EXPECT_EQ(counters().implausible_positions.get(), 0u);  // within the bound: unrequested
    answer(packet(2'000'000'000, 3), 2, 5);
    EXPECT_EQ(counters().implausible_positions.get(), 1u);  // beyond it: dropped whole first
    const auto v = stream_.channel(0);
    EXPECT_EQ(v.next_seq, 2u);
    EXPECT_EQ(v.seen_end, 6u);
    EXPECT_EQ(v.open_holes, 1u);
    EXPECT_EQ(rec_.applied, range(1, 2));
    answer(packet(2, 3), 2, 5);  // the real answer still fills the hole
    EXPECT_EQ(rec_.applied, range(1, 6));
}

// A position missing but not asked for (the request not yet sent, or only
// a first part asked) is not taken from an answer.
TEST_F(StreamRule, ReRequestAnswerOutsideWhatWasAskedIsNotApplied) {
    feed(packet(1, 1), 0);
    feed(packet(11, 1), 1);  // hole 2..10, the first part 2..5 asked
    answer(packet(2, 9), 2, 6);
    EXPECT_EQ(rec_.applied, range(1, 6));
    EXPECT_EQ(counters().unrequested_answer_messages.get(), 5u);
    EXPECT_EQ(stream_.channel(0).open_holes, 1u);
}

// An answer never starts a session nor reveals a position.
TEST_F(StreamRule, ReRequestAnswerForAnotherSessionOrAHeartbeatMovesNothing) {
    feed(packet(1, 1), 0);
    feed(packet(5, 1), 1);
    answer(packet(2, 3, "SESSION002"), 2, 5);
    EXPECT_EQ(counters().session_changes.get(), 0u);
    EXPECT_EQ(counters().unrequested_answer_messages.get(), 3u);
    const std::size_t alive = rec_.alive_at.size();
    answer(itch50::mold_heartbeat("SESSION001", 9), 2, 5);
    EXPECT_EQ(stream_.channel(0).seen_end, 6u);
    EXPECT_EQ(stream_.channel(0).open_holes, 1u);
    EXPECT_EQ(rec_.alive_at.size(), alive);
}

}  // namespace
}  // namespace tickgate::moldudp64
