// The consumer's rules (include/tickgate/fanout/tracker.hpp), one per test.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "tickgate/fanout/tracker.hpp"

namespace {

using namespace tickgate;
using namespace tickgate::fanout;

std::vector<std::byte> rec(std::uint64_t session, std::uint64_t seq, std::int64_t bid = 100) {
    Record r;
    r.session = session;
    r.seq = seq;
    r.verdict = GateReason::kOk;
    r.n_bids = 1;
    r.bids[0] = {bid, 1};
    std::vector<std::byte> out(r.wire_bytes());
    write_record(r, out);
    return out;
}
constexpr std::string_view kS = "t.q.1.X";

TEST(FanoutTracker, FirstRecordOfASessionIsCleanOtherwiseSuspectUntilSnapshot) {
    Tracker t;
    EXPECT_EQ(t.on_live(kS, rec(5, 1)), Applied::kTaken);
    EXPECT_FALSE(t.find(kS)->suspect);
    EXPECT_TRUE(t.find(kS)->tradeable());
    EXPECT_EQ(t.on_live("t.q.1.Y", rec(5, 9)), Applied::kTaken);  // joined late
    EXPECT_TRUE(t.find("t.q.1.Y")->suspect);
    EXPECT_EQ(t.take_wanted(), std::vector<std::string>{"t.q.1.Y"});
    EXPECT_EQ(t.counters().gaps, 0u) << "a late join is not a loss";
    EXPECT_EQ(t.on_snapshot("t.q.1.Y", rec(5, 9)), Applied::kDuplicate);
    EXPECT_FALSE(t.find("t.q.1.Y")->suspect);
}

TEST(FanoutTracker, DuplicatesAreDroppedAndCounted) {
    Tracker t;
    (void)t.on_live(kS, rec(5, 1));
    (void)t.on_live(kS, rec(5, 2, 101));
    EXPECT_EQ(t.on_live(kS, rec(5, 2, 999)), Applied::kDuplicate);
    EXPECT_EQ(t.on_live(kS, rec(5, 1, 999)), Applied::kDuplicate);
    EXPECT_EQ(t.find(kS)->record.bids[0].price, 101);
    EXPECT_EQ(t.counters().duplicates, 2u);
}

TEST(FanoutTracker, AGapIsCountedTakenAndSuspectUntilTheSnapshotIsRead) {
    Tracker t;
    (void)t.on_live(kS, rec(5, 1));
    EXPECT_EQ(t.on_live(kS, rec(5, 5, 105)), Applied::kTaken);
    const InstrumentView& v = *t.find(kS);
    EXPECT_TRUE(v.suspect);
    EXPECT_FALSE(v.tradeable());
    EXPECT_EQ(v.record.bids[0].price, 105) << "every record is the whole state: the newest is taken";
    EXPECT_EQ(t.counters().gaps, 1u);
    EXPECT_EQ(t.counters().lost, 3u);
    EXPECT_EQ(t.take_wanted(), std::vector<std::string>{std::string(kS)});
    EXPECT_TRUE(t.take_wanted().empty()) << "wanted once";
    EXPECT_EQ(t.on_snapshot(kS, rec(5, 7, 107)), Applied::kTaken);  // the stream is ahead of live
    EXPECT_FALSE(t.find(kS)->suspect);
    EXPECT_EQ(t.find(kS)->record.seq, 7u);
    EXPECT_EQ(t.on_live(kS, rec(5, 6)), Applied::kDuplicate) << "older than the snapshot";
    EXPECT_EQ(t.on_live(kS, rec(5, 8)), Applied::kTaken);
    EXPECT_FALSE(t.find(kS)->suspect);
}

TEST(FanoutTracker, ANewerSessionIsANewStreamAnOlderOneIsStale) {
    Tracker t;
    (void)t.on_live(kS, rec(5, 10));
    (void)t.on_snapshot(kS, {});
    EXPECT_EQ(t.on_live(kS, rec(6, 1, 200)), Applied::kTaken);
    EXPECT_FALSE(t.find(kS)->suspect) << "the new session's first record: nothing missed";
    EXPECT_EQ(t.counters().session_changes, 1u);
    EXPECT_EQ(t.on_live(kS, rec(5, 11)), Applied::kStale);
    EXPECT_EQ(t.counters().stale_session, 1u);
    EXPECT_EQ(t.on_live("t.q.1.Z", rec(6, 3)), Applied::kTaken);
    EXPECT_EQ(t.on_live("t.q.1.Z", rec(7, 4)), Applied::kTaken);  // restart, its first record missed
    EXPECT_TRUE(t.find("t.q.1.Z")->suspect);
    EXPECT_EQ(t.on_snapshot(kS, rec(5, 99)), Applied::kDuplicate) << "a snapshot of the old session is older";
}

TEST(FanoutTracker, MarkAllSuspectWantsEveryInstrumentOnce) {
    Tracker t;
    (void)t.on_live("a", rec(1, 1));
    (void)t.on_live("b", rec(1, 1));
    t.mark_all_suspect();
    t.mark_all_suspect();
    auto w = t.take_wanted();
    EXPECT_EQ(w.size(), 2u);
    EXPECT_TRUE(t.find("a")->suspect);
    (void)t.on_snapshot("a", {});
    EXPECT_FALSE(t.find("a")->suspect);
    EXPECT_EQ(t.counters().resyncs, 2u);
}

TEST(FanoutTracker, MalformedRecordsAreCountedByReason) {
    Tracker t;
    auto bad = rec(1, 1);
    bad[4] = std::byte{9};
    EXPECT_EQ(t.on_live(kS, bad), Applied::kMalformed);
    EXPECT_EQ(t.on_live(kS, std::span(bad.data(), 10)), Applied::kMalformed);
    EXPECT_EQ(t.counters().malformed, 2u);
    EXPECT_EQ(t.counters().malformed_by[static_cast<int>(ReadError::kBadVersion)], 1u);
    EXPECT_EQ(t.counters().malformed_by[static_cast<int>(ReadError::kShort)], 1u);
    EXPECT_EQ(t.find(kS), nullptr);
}

}  // namespace

namespace {

std::vector<std::byte> named_rec(std::uint64_t seq, std::uint32_t instrument, std::string_view symbol) {
    Record r;
    r.session = 5;
    r.seq = seq;
    r.instrument = instrument;
    r.verdict = GateReason::kOk;
    std::copy(symbol.begin(), symbol.end(), r.symbol);
    std::vector<std::byte> out(r.wire_bytes());
    write_record(r, out);
    return out;
}

// An instrument published before it had a symbol (MDP3: entries before the
// definition), then under its symbol, is one instrument: its first record
// under the symbol, live or from the stream, drops the unnamed view and its
// pending snapshot; another instrument's unnamed view stays.
TEST(FanoutTracker, AnInstrumentNamedLaterReplacesItsUnnamedSubject) {
    Tracker t;
    (void)t.on_live("t.mdp3.1.%237", named_rec(1, 7, ""));
    (void)t.on_live("t.mdp3.1.%238", named_rec(3, 8, ""));  // joined late: wants a snapshot
    (void)t.on_live("t.mdp3.1.%239", named_rec(1, 9, ""));
    EXPECT_EQ(t.on_live("t.mdp3.1.SIM007", named_rec(2, 7, "SIM007")), Applied::kTaken);
    EXPECT_EQ(t.find("t.mdp3.1.%237"), nullptr);
    ASSERT_NE(t.find("t.mdp3.1.SIM007"), nullptr);
    EXPECT_EQ(t.on_snapshot("t.mdp3.1.SIM008", named_rec(4, 8, "SIM008")), Applied::kTaken);
    EXPECT_EQ(t.find("t.mdp3.1.%238"), nullptr);
    EXPECT_EQ(t.take_wanted(), std::vector<std::string>{"t.mdp3.1.SIM007"}) << "%238's snapshot is no longer wanted";
    EXPECT_NE(t.find("t.mdp3.1.%239"), nullptr) << "instrument 9 was not renamed";
    EXPECT_EQ(t.counters().renamed, 2u);
    EXPECT_EQ(t.instruments().size(), 3u);
}

}  // namespace

namespace {

std::vector<std::byte> heartbeat(std::uint64_t seq, std::int64_t interval_ns = 100) {
    Record r;
    r.flags = kFlagHeartbeat;
    r.verdict = GateReason::kOk;
    r.session = 5;
    r.seq = seq;
    r.instrument = kNoInstrument;
    r.source_ns = interval_ns;
    std::vector<std::byte> out(r.wire_bytes());
    write_record(r, out);
    return out;
}

// A publisher's heartbeat is no instrument; one unheard for 3 intervals is
// silent and its instruments (only its own) are not tradeable, however
// clean they were; heard again, each wants a snapshot before it is.
TEST(FanoutTracker, ASilentPublishersInstrumentsAreNotTradeableUntilHeardAndReadAgain) {
    Tracker t;
    EXPECT_EQ(t.on_live("t.q.heartbeat", heartbeat(1)), Applied::kHeartbeat);
    EXPECT_TRUE(t.instruments().empty()) << "a heartbeat is no instrument";
    (void)t.on_live("t.q.1.X", rec(5, 1));
    (void)t.on_live("t.other.1.X", rec(5, 1));  // another publisher, never heard: not watched
    t.check_publishers(1000);
    t.check_publishers(1300);
    EXPECT_TRUE(t.find("t.q.1.X")->tradeable()) << "3 intervals unheard are not yet silence";
    t.check_publishers(1301);
    EXPECT_TRUE(t.find("t.q.1.X")->publisher_silent);
    EXPECT_FALSE(t.find("t.q.1.X")->tradeable());
    EXPECT_TRUE(t.find("t.other.1.X")->tradeable());
    EXPECT_EQ(t.counters().publisher_silences, 1u);
    (void)t.on_snapshot("t.q.1.Y", rec(5, 3));  // a view made while its publisher is silent
    EXPECT_TRUE(t.find("t.q.1.Y")->publisher_silent);
    (void)t.take_wanted();

    EXPECT_EQ(t.on_live("t.q.heartbeat", heartbeat(2)), Applied::kHeartbeat);
    t.check_publishers(1400);
    EXPECT_FALSE(t.find("t.q.1.X")->publisher_silent);
    EXPECT_FALSE(t.find("t.q.1.X")->tradeable()) << "what it published meanwhile may be lost";
    EXPECT_EQ(t.take_wanted(), (std::vector<std::string>{"t.q.1.X", "t.q.1.Y"}));
    (void)t.on_snapshot("t.q.1.X", rec(5, 1));
    EXPECT_TRUE(t.find("t.q.1.X")->tradeable());
    EXPECT_EQ(t.counters().publisher_returns, 1u);
    EXPECT_EQ(t.counters().heartbeats, 2u);
}

// The stream's last heartbeat read as a snapshot watches the publisher too
// (a consumer started after it died learns so); a heartbeat on an
// instrument's subject, or without its interval, is malformed.
TEST(FanoutTracker, AStoredHeartbeatWatchesThePublisherAndAMisplacedOneIsMalformed) {
    Tracker t;
    EXPECT_EQ(t.on_snapshot("t.q.heartbeat", heartbeat(9)), Applied::kHeartbeat);
    (void)t.on_snapshot("t.q.1.X", rec(5, 4));
    t.check_publishers(0 + 1);
    t.check_publishers(302);
    EXPECT_FALSE(t.find("t.q.1.X")->tradeable());
    EXPECT_EQ(t.on_live("t.q.1.heartbeat_not", heartbeat(1)), Applied::kMalformed);
    EXPECT_EQ(t.on_live("t.q.heartbeat", heartbeat(1, 0)), Applied::kMalformed);
    EXPECT_EQ(t.counters().malformed, 2u);
}

}  // namespace
