// Sequencer rules (shared/spec/QFB1.md, "What a conforming handler does"):
// one test per rule, named after it. Events are built directly; the last
// tests go through the Handler with real QFB/1 datagrams.
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/sequencer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "tickgate/feed/capture.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/handler.hpp"

namespace tickgate {
namespace {

constexpr std::uint32_t kId = 3;
constexpr std::uint16_t kCh = 1;

struct Px {
    std::int64_t px;
    std::uint32_t qty;
};
using Book = std::vector<std::pair<std::int64_t, std::uint32_t>>;

// ------------------------------------------------------ event factories
// recv_ns = t; source_ns = t unless given.

Event event(EventKind kind, std::int64_t t, std::uint32_t id = kId, std::uint16_t ch = kCh) {
    Event e{};
    e.kind = kind;
    e.recv_ns = t;
    e.send_ns = t;
    e.instrument_id = id;
    e.channel_id = ch;
    e.line = 0;
    return e;
}

Event quote(std::uint64_t seq, std::int64_t t, Px bid = {100, 10}, Px ask = {101, 20}) {
    Event e = event(EventKind::kQuote, t);
    e.u.quote = {seq, t, bid.px, ask.px, bid.qty, ask.qty};
    return e;
}

enum : std::uint8_t { kBid = 0, kAsk = 1 };
enum : std::uint8_t { kSet = 0, kDelete = 1 };

Event delta(std::uint64_t seq, std::int64_t t, std::uint8_t side = kBid, Px lv = {99, 5},
            std::uint8_t action = kSet) {
    Event e = event(EventKind::kDelta, t);
    e.u.delta = {seq, t, lv.px, lv.qty, side, action};
    return e;
}

Event heartbeat(std::uint64_t next_seq, std::int64_t t) {
    Event e = event(EventKind::kHeartbeat, t);
    e.u.heartbeat = {next_seq, t};
    return e;
}

// A snapshot as the decoder delivers it: begin, then levels by threes.
std::vector<Event> snapshot(std::uint64_t seq, std::int64_t t, std::vector<Px> bids = {{100, 10}},
                            std::vector<Px> asks = {{101, 20}}) {
    std::vector<Event> out{event(EventKind::kSnapshotBegin, t)};
    out[0].u.snapshot = {seq, t, static_cast<std::uint8_t>(bids.size()), static_cast<std::uint8_t>(asks.size()), 0};
    std::vector<Px> all = bids;
    all.insert(all.end(), asks.begin(), asks.end());
    for (std::size_t i = 0; i < all.size(); i += kLevelsPerEvent) {
        Event l = event(EventKind::kSnapshotLevels, t);
        l.u.levels.count = 0;
        for (std::size_t k = i; k < all.size() && k < i + kLevelsPerEvent; ++k, ++l.u.levels.count) {
            l.u.levels.price[l.u.levels.count] = all[k].px;
            l.u.levels.qty[l.u.levels.count] = all[k].qty;
        }
        out.push_back(l);
    }
    return out;
}

Event session_change(std::uint16_t ch, std::uint32_t session) {
    Event e = event(EventKind::kSessionChange, 0, 0, ch);
    e.u.session.session = session;
    return e;
}

// Same event for another instrument / channel, or with another source time.
template <class E>
E on(std::uint32_t id, const E& in, std::uint16_t ch = kCh) {
    E e = in;
    if constexpr (std::is_same_v<E, Event>) {
        e.instrument_id = id;
        e.channel_id = ch;
    } else {
        for (Event& x : e) {
            x.instrument_id = id;
            x.channel_id = ch;
        }
    }
    return e;
}
Event src(std::int64_t source_ns, const Event& in) {
    Event e = in;
    switch (e.kind) {
        case EventKind::kQuote: e.u.quote.source_ns = source_ns; break;
        case EventKind::kDelta: e.u.delta.source_ns = source_ns; break;
        case EventKind::kHeartbeat: e.u.heartbeat.source_ns = source_ns; break;
        case EventKind::kSnapshotBegin: e.u.snapshot.source_ns = source_ns; break;
        default: break;
    }
    return e;
}
std::vector<Event> src(std::int64_t source_ns, std::vector<Event> s) {
    s[0] = src(source_ns, s[0]);
    return s;
}

class SequencerRule : public testing::Test {
protected:
    Handler seq_{Capacity{16, 8, 256, 4}, GateConfig{}};

    Update apply(const Event& e) { return seq_.apply(e); }
    // Applies a whole snapshot; returns the Update of its begin event and of its last event.
    std::pair<Update, Update> apply(const std::vector<Event>& s) {
        const Update first = seq_.apply(s.front());
        Update last = first;
        for (std::size_t i = 1; i < s.size(); ++i) last = seq_.apply(s[i]);
        return {first, last};
    }
    const InstrumentState& st(std::uint32_t id = kId) const { return seq_.instruments().state(id); }
    Book side(std::uint32_t id, Side s) const {
        Book b;
        for (const Level& l : seq_.book().side(id, s)) b.emplace_back(l.price, l.qty);
        return b;
    }
    Book bids(std::uint32_t id = kId) const { return side(id, Side::kBid); }
    Book asks(std::uint32_t id = kId) const { return side(id, Side::kAsk); }
};

// ------------------------------------------------------ sequenced messages

TEST_F(SequencerRule, ColdStartAcceptsFirstSeqWithoutLoss) {
    const Update u = apply(quote(42, 100));
    EXPECT_EQ(u.verdict, Verdict::kAccepted);
    EXPECT_EQ(u.lost, 0u);
    EXPECT_EQ(st().last_seq, 42u);
    EXPECT_EQ(st().counters.lost, 0u);
    EXPECT_EQ(st().counters.gap_events, 0u);
    EXPECT_EQ(st().counters.accepted, 1u);
    EXPECT_FALSE(st().suspect);

    const Update d = apply(on(4, delta(7, 100)));
    EXPECT_EQ(d.verdict, Verdict::kAccepted);
    EXPECT_EQ(d.lost, 0u);
    EXPECT_EQ(st(4).last_seq, 7u);
    EXPECT_EQ(st(4).counters.lost, 0u);
    EXPECT_TRUE(st(4).suspect);  // a delta alone proves nothing about the book
}

TEST_F(SequencerRule, InOrderSequencedMessagesAreAccepted) {
    EXPECT_EQ(apply(quote(1, 100)).verdict, Verdict::kAccepted);
    EXPECT_EQ(apply(delta(2, 200, kBid, {99, 5})).verdict, Verdict::kAccepted);
    EXPECT_EQ(apply(delta(3, 300, kAsk, {102, 6})).verdict, Verdict::kAccepted);
    EXPECT_EQ(st().last_seq, 3u);
    EXPECT_EQ(st().counters.accepted, 3u);
    EXPECT_EQ(st().counters.lost, 0u);
    EXPECT_EQ(st().last_alive_ns, 300);
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(bids(), (Book{{100, 10}, {99, 5}}));
    EXPECT_EQ(asks(), (Book{{101, 20}, {102, 6}}));
}

TEST_F(SequencerRule, DuplicateSeqIsDroppedCountedAndDoesNotRefreshLiveness) {
    apply(quote(1, 100));
    apply(delta(2, 200, kBid, {99, 5}));
    const Update dup = apply(delta(2, 300, kBid, {98, 7}));  // the other line's copy
    EXPECT_EQ(dup.verdict, Verdict::kDuplicate);
    EXPECT_FALSE(dup.book_changed);
    EXPECT_EQ(apply(delta(1, 400, kAsk, {101, 0}, kDelete)).verdict, Verdict::kDuplicate);  // late old tick
    EXPECT_EQ(apply(quote(2, 500, {90, 1}, {91, 1})).verdict, Verdict::kDuplicate);  // seq == last_seq
    EXPECT_EQ(st().counters.duplicates, 3u);
    EXPECT_EQ(st().counters.accepted, 2u);
    EXPECT_EQ(st().last_seq, 2u);
    EXPECT_EQ(st().last_alive_ns, 200);
    EXPECT_EQ(st().last_source_ns, 200);
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(bids(), (Book{{100, 10}, {99, 5}}));
    EXPECT_EQ(asks(), (Book{{101, 20}}));
}

TEST_F(SequencerRule, ForwardGapCountsSeqMinusLastSeqMinusOneOnce) {
    apply(quote(1, 100));
    const Update g = apply(quote(5, 200));
    EXPECT_EQ(g.verdict, Verdict::kGap);
    EXPECT_EQ(g.lost, 3u);
    EXPECT_EQ(st().counters.lost, 3u);
    EXPECT_EQ(st().counters.gap_events, 1u);
    EXPECT_EQ(st().last_seq, 5u);

    EXPECT_EQ(apply(quote(6, 300)).lost, 0u);
    EXPECT_EQ(st().counters.lost, 3u);
    EXPECT_EQ(apply(delta(9, 400)).lost, 2u);
    EXPECT_EQ(st().counters.lost, 5u);
    EXPECT_EQ(st().counters.gap_events, 2u);
}

TEST_F(SequencerRule, QuoteAfterGapClearsSuspect) {
    apply(quote(1, 100));
    apply(delta(3, 200));
    ASSERT_TRUE(st().suspect);
    const std::uint64_t recovered = st().counters.recovered;
    const Update u = apply(quote(4, 300, {105, 1}, {106, 2}));
    EXPECT_FALSE(u.suspect);
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(st().counters.recovered, recovered + 1);
    EXPECT_EQ(bids(), (Book{{105, 1}}));
    EXPECT_EQ(asks(), (Book{{106, 2}}));

    const Update g = apply(quote(9, 400));  // a gap seen by a quote itself
    EXPECT_EQ(g.verdict, Verdict::kGap);
    EXPECT_FALSE(st().suspect);
}

TEST_F(SequencerRule, DeltaAfterGapMakesInstrumentSuspectUntilSnapshot) {
    apply(quote(1, 100));
    const Update g = apply(delta(3, 200));
    EXPECT_EQ(g.verdict, Verdict::kGap);
    EXPECT_EQ(g.lost, 1u);
    EXPECT_TRUE(g.suspect);
    EXPECT_TRUE(apply(delta(4, 300)).suspect);
    EXPECT_TRUE(st().suspect);
    apply(snapshot(4, 400));
    EXPECT_FALSE(st().suspect);
}

TEST_F(SequencerRule, DeltaNeverClearsSuspect) {
    for (std::uint64_t s = 1; s <= 3; ++s) {
        EXPECT_TRUE(apply(delta(s, 100 * static_cast<std::int64_t>(s))).suspect);
        EXPECT_TRUE(st().suspect);
    }
    apply(on(4, quote(1, 100)));
    apply(on(4, heartbeat(5, 200)));  // gap: suspect
    EXPECT_TRUE(apply(on(4, delta(5, 300))).suspect);
    EXPECT_TRUE(st(4).suspect);
}

// ---------------------------------------------------------------- heartbeats

TEST_F(SequencerRule, HeartbeatGapCountsLostSetsLastSeqMarksSuspectAndDoesNotRefreshLiveness) {
    apply(quote(1, 100));
    const Update u = apply(heartbeat(6, 200));
    EXPECT_EQ(u.verdict, Verdict::kHeartbeatGap);
    EXPECT_EQ(u.lost, 4u);
    EXPECT_TRUE(u.suspect);
    EXPECT_EQ(st().counters.lost, 4u);
    EXPECT_EQ(st().counters.gap_events, 1u);
    EXPECT_EQ(st().counters.heartbeats, 1u);
    EXPECT_EQ(st().last_seq, 5u);
    EXPECT_TRUE(st().suspect);
    EXPECT_EQ(st().last_alive_ns, 100);
}

TEST_F(SequencerRule, HeartbeatGapIsNeverCountedAgainByTheLaterTick) {
    apply(quote(1, 100));
    apply(heartbeat(6, 200));
    EXPECT_EQ(apply(heartbeat(6, 250)).verdict, Verdict::kHeartbeat);  // repeated: nothing new lost
    const Update d = apply(delta(6, 300));
    EXPECT_EQ(d.verdict, Verdict::kAccepted);
    EXPECT_EQ(d.lost, 0u);
    EXPECT_EQ(st().counters.lost, 4u);
    EXPECT_EQ(st().counters.gap_events, 1u);
    EXPECT_EQ(st().last_seq, 6u);
}

TEST_F(SequencerRule, HeartbeatGapSuspectClearsOnNextQuoteOrSnapshot) {
    apply(quote(1, 100));
    apply(heartbeat(6, 200));
    EXPECT_FALSE(apply(quote(6, 300)).suspect);
    EXPECT_FALSE(st().suspect);

    apply(on(4, quote(1, 100)));
    apply(on(4, heartbeat(6, 200)));
    apply(on(4, snapshot(5, 300)));
    EXPECT_FALSE(st(4).suspect);
    EXPECT_EQ(st(4).last_seq, 5u);
}

TEST_F(SequencerRule, HeartbeatWithoutGapRefreshesLiveness) {
    apply(src(90, quote(1, 100)));
    const Update u = apply(heartbeat(2, 500));
    EXPECT_EQ(u.verdict, Verdict::kHeartbeat);
    EXPECT_EQ(u.lost, 0u);
    EXPECT_EQ(st().last_alive_ns, 500);
    EXPECT_EQ(st().last_seq, 1u);
    EXPECT_EQ(st().last_source_ns, 90);  // liveness only: the price is not newer
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(apply(heartbeat(1, 600)).verdict, Verdict::kHeartbeat);  // behind: no gap either
    EXPECT_EQ(st().last_alive_ns, 600);
    EXPECT_EQ(st().last_seq, 1u);
    EXPECT_EQ(st().counters.lost, 0u);
}

TEST_F(SequencerRule, HeartbeatOnColdStartSetsLastSeqCountsNoLossRefreshesLivenessStaysSuspect) {
    const Update u = apply(heartbeat(10, 100));
    EXPECT_EQ(u.verdict, Verdict::kHeartbeat);
    EXPECT_EQ(u.lost, 0u);
    EXPECT_EQ(st().last_seq, 9u);
    EXPECT_EQ(st().counters.lost, 0u);
    EXPECT_TRUE(st().alive);
    EXPECT_EQ(st().last_alive_ns, 100);
    EXPECT_TRUE(st().suspect);
    EXPECT_FALSE(st().has_source);
    const Update d = apply(delta(10, 200));
    EXPECT_EQ(d.verdict, Verdict::kAccepted);
    EXPECT_EQ(st().counters.lost, 0u);
}

// ----------------------------------------------------------------- snapshots

TEST_F(SequencerRule, SnapshotWhenSuspectReplacesBookSetsLastSeqClearsSuspectRefreshesLiveness) {
    apply(quote(1, 100));
    apply(delta(3, 200, kBid, {99, 5}));
    ASSERT_TRUE(st().suspect);
    const std::uint64_t recovered = st().counters.recovered;
    const auto [begin, end] = apply(snapshot(3, 300, {{98, 1}, {97, 2}}, {{103, 3}}));
    EXPECT_EQ(end.verdict, Verdict::kSnapshotApplied);
    EXPECT_TRUE(end.book_changed);
    EXPECT_FALSE(end.suspect);
    EXPECT_EQ(bids(), (Book{{98, 1}, {97, 2}}));
    EXPECT_EQ(asks(), (Book{{103, 3}}));
    EXPECT_EQ(st().last_seq, 3u);
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(st().last_alive_ns, 300);
    EXPECT_EQ(st().counters.snapshots_applied, 1u);
    EXPECT_EQ(st().counters.recovered, recovered + 1);
    EXPECT_EQ(st().counters.lost, 1u);
}

// A snapshot deeper than the book: each level event's levels go to the
// side they continue (an event can end the bids and start the asks), and
// the levels past the depth are counted in book_overflows, not kept.
TEST_F(SequencerRule, SnapshotLevelsPastTheBookDepthAreCountedAsOverflowsOnEachSide) {
    std::vector<Px> bids_in, asks_in;
    for (std::int64_t k = 0; k < 10; ++k) bids_in.push_back({100 - k, static_cast<std::uint32_t>(1 + k)});
    for (std::int64_t k = 0; k < 4; ++k) asks_in.push_back({101 + k, static_cast<std::uint32_t>(20 + k)});
    const std::vector<Event> s = snapshot(0, 100, bids_in, asks_in);
    ASSERT_EQ(s.size(), 6u);  // begin, then 3 + 3 + 3 + (1 bid, 2 asks) + 2
    const auto [begin, end] = apply(s);
    EXPECT_EQ(end.verdict, Verdict::kSnapshotApplied);
    Book want_bids, want_asks;
    for (std::size_t k = 0; k < 8; ++k) want_bids.emplace_back(bids_in[k].px, bids_in[k].qty);  // depth 8
    for (const Px& a : asks_in) want_asks.emplace_back(a.px, a.qty);
    EXPECT_EQ(bids(), want_bids);
    EXPECT_EQ(asks(), want_asks);
    EXPECT_EQ(st().counters.book_overflows, 2u);
    // The same on the ask side, the bids now the short one.
    std::vector<Px> deep_asks;
    for (std::int64_t k = 0; k < 9; ++k) deep_asks.push_back({101 + k, 1});
    apply(snapshot(1, 200, {{100, 1}}, deep_asks));
    EXPECT_EQ(bids(), (Book{{100, 1}}));
    EXPECT_EQ(asks().size(), 8u);
    EXPECT_EQ(asks().back(), (std::pair<std::int64_t, std::uint32_t>{108, 1}));
    EXPECT_EQ(st().counters.book_overflows, 3u);
}

TEST_F(SequencerRule, SnapshotAtOrAfterLastSeqIsAppliedOnCleanInstrument) {
    apply(quote(1, 100));
    apply(quote(2, 200));
    const auto [begin, end] = apply(snapshot(2, 300, {{100, 1}, {99, 2}}, {{101, 3}, {102, 4}}));
    EXPECT_EQ(end.verdict, Verdict::kSnapshotApplied);
    EXPECT_EQ(bids(), (Book{{100, 1}, {99, 2}}));
    EXPECT_EQ(asks(), (Book{{101, 3}, {102, 4}}));
    EXPECT_EQ(st().last_seq, 2u);
    EXPECT_EQ(st().last_alive_ns, 300);
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(st().counters.snapshots_applied, 1u);
}

TEST_F(SequencerRule, SnapshotWithSeqZeroOnColdStartIsCleanAndSeqOneFollowsWithoutLoss) {
    const auto [begin, end] = apply(snapshot(0, 100));  // nothing sequenced yet
    EXPECT_EQ(end.verdict, Verdict::kSnapshotApplied);
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(st().last_seq, 0u);
    const Update d = apply(delta(1, 200));
    EXPECT_EQ(d.verdict, Verdict::kAccepted);
    EXPECT_EQ(st().counters.lost, 0u);
    EXPECT_FALSE(st().suspect);
}

TEST_F(SequencerRule, StaleSnapshotOnCleanInstrumentIsIgnoredAndCounted) {
    apply(quote(1, 100));
    apply(quote(2, 200));
    apply(quote(3, 300, {110, 1}, {111, 1}));
    const auto [begin, end] = apply(snapshot(2, 400, {{90, 9}, {89, 9}, {88, 9}}, {{91, 9}}));
    EXPECT_EQ(begin.verdict, Verdict::kSnapshotStale);
    EXPECT_FALSE(end.book_changed);
    EXPECT_EQ(st().counters.stale_snapshots, 1u);
    EXPECT_EQ(st().counters.snapshots_applied, 0u);
    EXPECT_EQ(bids(), (Book{{110, 1}}));
    EXPECT_EQ(asks(), (Book{{111, 1}}));
    EXPECT_EQ(st().last_seq, 3u);
    EXPECT_EQ(st().last_alive_ns, 300);
    EXPECT_EQ(st().last_source_ns, 300);
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(apply(delta(4, 500)).verdict, Verdict::kAccepted);
}

TEST_F(SequencerRule, SnapshotJumpingAheadOfLastSeqCountsNoLoss) {
    apply(quote(1, 100));
    apply(snapshot(10, 200));
    EXPECT_EQ(st().last_seq, 10u);
    EXPECT_EQ(st().counters.lost, 0u);
    EXPECT_EQ(apply(delta(11, 300)).verdict, Verdict::kAccepted);
    EXPECT_EQ(st().counters.lost, 0u);

    apply(on(4, quote(1, 100)));
    apply(on(4, delta(3, 200)));  // lost 1, suspect
    apply(on(4, snapshot(10, 300)));
    EXPECT_EQ(st(4).last_seq, 10u);
    EXPECT_EQ(st(4).counters.lost, 1u);
    EXPECT_FALSE(st(4).suspect);
}

TEST_F(SequencerRule, LaggingSnapshotWithBufferedDeltasThatContinueItIsClean) {
    apply(quote(1, 100));                              // 100x10 / 101x20
    apply(delta(2, 200, kBid, {99, 5}));
    apply(delta(4, 400, kBid, {98, 4}));               // seq 3 lost: suspect, kept from here
    apply(delta(5, 500, kAsk, {101, 0}, kDelete));
    apply(delta(6, 600, kAsk, {103, 9}));
    ASSERT_TRUE(st().suspect);
    const std::uint64_t recovered = st().counters.recovered;
    // As of seq 4: includes the kept delta 4, which must be skipped, then 5 and 6 replayed.
    const auto [begin, end] = apply(snapshot(4, 700, {{100, 10}, {99, 5}, {98, 4}, {97, 7}}, {{101, 20}, {102, 8}}));
    EXPECT_EQ(end.verdict, Verdict::kSnapshotApplied);
    EXPECT_FALSE(end.suspect);
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(st().last_seq, 6u);  // the last buffered delta
    EXPECT_EQ(bids(), (Book{{100, 10}, {99, 5}, {98, 4}, {97, 7}}));
    EXPECT_EQ(asks(), (Book{{102, 8}, {103, 9}}));
    EXPECT_EQ(st().counters.lost, 1u);
    EXPECT_EQ(st().counters.recovered, recovered + 1);
    const Update next = apply(delta(7, 800));
    EXPECT_EQ(next.verdict, Verdict::kAccepted);
    EXPECT_FALSE(next.suspect);
}

TEST_F(SequencerRule, LaggingSnapshotWithHoleRemainingStaysSuspectWithLastSeqWhereItWas) {
    apply(quote(1, 100));
    apply(delta(3, 300));  // 2 lost
    apply(delta(5, 500));  // 4 lost: a hole no snapshot at 2 can fill
    ASSERT_EQ(st().last_seq, 5u);
    const auto [begin, end] = apply(snapshot(2, 600));
    EXPECT_EQ(end.verdict, Verdict::kSnapshotApplied);
    EXPECT_TRUE(end.suspect);
    EXPECT_TRUE(st().suspect);
    EXPECT_EQ(st().last_seq, 5u);
    EXPECT_EQ(st().counters.lost, 2u);
    EXPECT_EQ(apply(delta(6, 700)).lost, 0u);
    apply(snapshot(6, 800));
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(st().last_seq, 6u);

    apply(on(4, quote(1, 100)));  // a hole made by a heartbeat: nothing buffered
    apply(on(4, heartbeat(10, 200)));
    apply(on(4, snapshot(5, 300)));
    EXPECT_TRUE(st(4).suspect);
    EXPECT_EQ(st(4).last_seq, 9u);
    EXPECT_EQ(st(4).counters.lost, 8u);
}

TEST_F(SequencerRule, LossIsNeverCountedTwiceAcrossSnapshotReplay) {
    std::uint64_t lost = 0;
    auto count = [&](const Update& u) { lost += u.lost; };
    count(apply(quote(1, 100)));
    count(apply(delta(4, 400)));  // 2 lost
    count(apply(delta(5, 500)));
    count(apply(snapshot(2, 600)).second);  // hole at 3 remains
    ASSERT_TRUE(st().suspect);
    count(apply(delta(6, 700)));
    count(apply(delta(7, 800)));
    count(apply(snapshot(3, 900)).second);  // replays 4..7
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(st().last_seq, 7u);
    count(apply(delta(8, 1000)));
    EXPECT_EQ(lost, 2u);
    EXPECT_EQ(st().counters.lost, 2u);
    EXPECT_EQ(st().counters.gap_events, 1u);
}

TEST(SequencerDefaults, RecoveryBufferHoldsAtLeast256DeltasPerInstrument) {
    EXPECT_GE(Capacity{}.recovery_depth, 256u);
    Handler seq{Capacity{}, GateConfig{}};  // default capacity
    seq.apply(quote(1, 100));
    for (std::uint64_t s = 3; s <= 258; ++s)  // seq 2 lost; 256 deltas kept
        seq.apply(delta(s, static_cast<std::int64_t>(s), kBid, {99, static_cast<std::uint32_t>(s)}));
    for (const Event& e : snapshot(2, 1000, {{99, 1}}, {{101, 1}})) seq.apply(e);
    const InstrumentState& st = seq.instruments().state(kId);
    EXPECT_FALSE(st.suspect);
    EXPECT_EQ(st.last_seq, 258u);
    EXPECT_EQ(st.counters.unbuffered_deltas, 0u);
    ASSERT_EQ(seq.book().side(kId, Side::kBid).size(), 1u);
    EXPECT_EQ(seq.book().side(kId, Side::kBid)[0].qty, 258u);
}

// ----------------------------------------------------------- session change

TEST_F(SequencerRule, SessionChangeResetsThatChannelsInstrumentsOnlyCountersStayCumulative) {
    apply(quote(1, 100));
    apply(quote(3, 200));                      // 1 lost
    apply(on(5, delta(1, 100)));               // channel 1 too
    apply(on(4, quote(1, 100), /*ch=*/2));     // another channel
    const Update u = apply(session_change(kCh, 2));
    EXPECT_EQ(u.verdict, Verdict::kSessionReset);
    EXPECT_EQ(seq_.sequencer().counters().session_resets, 1u);
    for (const std::uint32_t id : {kId, 5u}) {
        SCOPED_TRACE(id);
        EXPECT_FALSE(st(id).known);
        EXPECT_EQ(st(id).last_seq, 0u);
        EXPECT_TRUE(st(id).suspect);
        EXPECT_FALSE(st(id).has_source);
        EXPECT_TRUE(bids(id).empty());
        EXPECT_TRUE(asks(id).empty());
    }
    EXPECT_EQ(st().counters.lost, 1u);
    EXPECT_EQ(st().counters.accepted, 2u);
    EXPECT_TRUE(st(4).known);  // channel 2 untouched
    EXPECT_EQ(st(4).last_seq, 1u);
    EXPECT_FALSE(st(4).suspect);
    EXPECT_EQ(bids(4), (Book{{100, 10}}));

    const Update first = apply(quote(1, 300));  // below the old last_seq: not a duplicate
    EXPECT_EQ(first.verdict, Verdict::kAccepted);
    EXPECT_EQ(first.lost, 0u);
    EXPECT_EQ(st().counters.lost, 1u);
    EXPECT_EQ(st().counters.duplicates, 0u);
    EXPECT_EQ(st().counters.accepted, 3u);
    EXPECT_EQ(apply(on(5, delta(50, 300))).lost, 0u);  // any first seq is the starting point
    EXPECT_EQ(st(5).counters.lost, 0u);
}

// ------------------------------------------------------------ rule 6: implausible jumps

// Issue 12, finding 2: one Q with seq 2^63 took over the instrument (118
// genuine quotes dropped as duplicates after it). A seq more than 10^9 ahead
// of a known last_seq is dropped and counted; nothing changes, liveness included.
TEST_F(SequencerRule, ImplausibleJumpOfQuoteOrDeltaIsDroppedCountedAndChangesNothing) {
    apply(quote(10, 100));
    apply(on(5, delta(10, 100)));
    const InstrumentState before = st();
    for (const std::uint64_t forged : {std::uint64_t{1} << 63, 10 + kImplausibleSeqJump + 1}) {
        SCOPED_TRACE(forged);
        const Update u = apply(src(std::int64_t{1} << 62, quote(forged, 200, {1, 1}, {999999, 1})));
        EXPECT_EQ(u.verdict, Verdict::kImplausible);
        EXPECT_FALSE(u.book_changed);
        EXPECT_EQ(apply(on(5, delta(forged, 200))).verdict, Verdict::kImplausible);
    }
    EXPECT_EQ(st().counters.implausible_seq, 2u);
    EXPECT_EQ(st(5).counters.implausible_seq, 2u);
    EXPECT_EQ(st().last_seq, 10u);
    EXPECT_EQ(st().last_alive_ns, before.last_alive_ns);
    EXPECT_EQ(st().last_source_ns, before.last_source_ns);
    EXPECT_EQ(st().counters.lost, 0u);
    EXPECT_EQ(st().counters.accepted, before.counters.accepted);
    EXPECT_EQ(bids(), (Book{{100, 10}}));
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(apply(quote(11, 300)).verdict, Verdict::kAccepted) << "the genuine stream goes on";
}

TEST_F(SequencerRule, JumpOfExactlyTheBoundIsAGap) {
    apply(quote(10, 100));
    const Update u = apply(quote(10 + kImplausibleSeqJump, 200));
    EXPECT_EQ(u.verdict, Verdict::kGap);
    EXPECT_EQ(u.lost, kImplausibleSeqJump - 1);
}

TEST_F(SequencerRule, ImplausibleHeartbeatIsDroppedWithoutGapOrLiveness) {
    apply(quote(10, 100));
    const Update u = apply(heartbeat(11 + kImplausibleSeqJump + 1, 200));  // next_seq - 1 is 10^9 + 1 ahead
    EXPECT_EQ(u.verdict, Verdict::kImplausible);
    EXPECT_EQ(st().counters.implausible_seq, 1u);
    EXPECT_EQ(st().counters.heartbeats, 0u);
    EXPECT_EQ(st().counters.lost, 0u);
    EXPECT_EQ(st().last_seq, 10u);
    EXPECT_EQ(st().last_alive_ns, 100);
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(apply(heartbeat(11 + kImplausibleSeqJump, 300)).verdict, Verdict::kHeartbeatGap) << "at the bound";
}

TEST_F(SequencerRule, SnapshotOrColdStartMayStartAnywhere) {
    EXPECT_EQ(apply(quote(std::uint64_t{1} << 62, 100)).verdict, Verdict::kAccepted);  // nothing known yet
    const auto [first, last] = apply(on(5, snapshot(std::uint64_t{1} << 62, 200)));
    EXPECT_EQ(last.verdict, Verdict::kSnapshotApplied) << "nothing known of instrument 5 yet";
    EXPECT_EQ(st(5).last_seq, std::uint64_t{1} << 62);
}

// Rule 6 covers snapshots: one far ahead of a known last_seq is dropped,
// counted, and changes nothing (issue 21 item 4: it froze the book).
TEST_F(SequencerRule, ImplausibleSnapshotIsDroppedCountedAndChangesNothing) {
    apply(quote(10, 100));
    const InstrumentState before = st();
    const auto [first, last] = apply(snapshot(10 + kImplausibleSeqJump + 1, 200, {{999, 1}}));
    EXPECT_EQ(first.verdict, Verdict::kImplausible);
    EXPECT_EQ(st().counters.implausible_seq, 1u);
    EXPECT_EQ(st().counters.snapshots_applied, 0u);
    EXPECT_EQ(st().last_seq, 10u);
    EXPECT_EQ(st().last_alive_ns, before.last_alive_ns);
    EXPECT_EQ(bids(), (Book{{100, 10}}));
    EXPECT_EQ(apply(delta(11, 300)).verdict, Verdict::kAccepted) << "the genuine stream goes on";
    // Suspect, the same bound holds; at the bound it applies.
    apply(delta(20, 400));
    ASSERT_TRUE(st().suspect);
    EXPECT_EQ(apply(snapshot(20 + kImplausibleSeqJump + 1, 500)).first.verdict, Verdict::kImplausible);
    EXPECT_EQ(apply(snapshot(20 + kImplausibleSeqJump, 600)).second.verdict, Verdict::kSnapshotApplied);
}

// ------------------------------------------------------------ rule 7: an instrument's channel

// Issue 12, finding 1(b): a message for instrument 1 on channel 7 moved it to
// channel 7 with the forged price, and channel 1's restart no longer reset it.
TEST_F(SequencerRule, MessageForAnInstrumentOnAnotherChannelIsDroppedAndCounted) {
    apply(quote(1, 100));
    const Update u = apply(on(kId, quote(2, 200, {999, 1}, {1000, 1}), /*ch=*/7));
    EXPECT_EQ(u.verdict, Verdict::kForeignChannel);
    EXPECT_FALSE(u.book_changed);
    EXPECT_EQ(apply(on(kId, heartbeat(50, 200), 7)).verdict, Verdict::kForeignChannel);
    EXPECT_EQ(apply(on(kId, snapshot(60, 200), 7)).first.verdict, Verdict::kForeignChannel);
    EXPECT_EQ(st().counters.foreign_channel, 3u);
    EXPECT_EQ(st().channel_id, kCh);
    EXPECT_EQ(st().last_seq, 1u);
    EXPECT_EQ(bids(), (Book{{100, 10}}));
    EXPECT_EQ(apply(quote(2, 300)).verdict, Verdict::kAccepted) << "the genuine quote is not a duplicate";
    apply(session_change(kCh, 2));
    EXPECT_FALSE(st().known) << "channel 1's restart still resets it";
    EXPECT_TRUE(bids().empty());
}

// Rule 7 and rule 3 together (shared/cert/cert_two_channels): a snapshot
// that another channel carries for an instrument never moves it. One that
// lags the instrument's own stream repairs a suspect instrument (its own
// buffered deltas must continue it) or is stale on a clean one; ahead of
// last_seq, or at it on a clean book, it is dropped as foreign.
TEST_F(SequencerRule, SnapshotOnAnotherChannelRepairsALaggingInstrumentButNeverMovesIt) {
    apply(quote(1, 100));
    apply(delta(2, 110));
    apply(delta(5, 120, kBid, {130, 5}));  // lost 3..4: suspect, kept
    ASSERT_TRUE(st().suspect);
    EXPECT_EQ(apply(on(kId, snapshot(6, 200), 7)).first.verdict, Verdict::kForeignChannel) << "ahead: would move it";
    const auto [first, last] = apply(on(kId, snapshot(4, 210, {{120, 10}}), 7));
    EXPECT_EQ(last.verdict, Verdict::kSnapshotApplied) << "lagging: the repair of rule 3";
    EXPECT_FALSE(st().suspect);
    EXPECT_EQ(st().last_seq, 5u);
    EXPECT_EQ(st().channel_id, kCh) << "still channel 1's";
    EXPECT_EQ(apply(on(kId, snapshot(3, 220), 7)).first.verdict, Verdict::kSnapshotStale);
    EXPECT_EQ(apply(on(kId, snapshot(5, 230, {{1, 1}}), 7)).first.verdict, Verdict::kForeignChannel)
        << "at last_seq on a clean book: would replace it";
    EXPECT_EQ(st().counters.foreign_channel, 2u);
    EXPECT_EQ(st().counters.snapshots_applied, 1u);
    EXPECT_EQ(st().counters.stale_snapshots, 1u);
}

TEST_F(SequencerRule, AfterItsChannelsSessionChangeAnInstrumentBelongsToTheNextCarrier) {
    apply(quote(1, 100));
    apply(session_change(kCh, 2));
    EXPECT_EQ(apply(on(kId, quote(1, 200), 2)).verdict, Verdict::kAccepted);
    EXPECT_EQ(st().channel_id, 2);
    EXPECT_EQ(apply(quote(2, 300)).verdict, Verdict::kForeignChannel);
}

// A DataLost mark comes from the ring, not the wire: it marks the instrument
// suspect whichever channel the dropped packet named, and binds nothing.
TEST_F(SequencerRule, DataLostNamingAnotherChannelStillMarksSuspectAndBindsNothing) {
    apply(quote(1, 100));
    const Update u = apply(on(kId, event(EventKind::kDataLost, 200), /*ch=*/2));
    EXPECT_EQ(u.verdict, Verdict::kDataLost);
    EXPECT_TRUE(st().suspect);
    EXPECT_EQ(st().channel_id, kCh);
    EXPECT_EQ(st().counters.foreign_channel, 0u);
    apply(on(5, event(EventKind::kDataLost, 200), 2));  // never seen: seen, suspect, not bound
    EXPECT_TRUE(st(5).seen && st(5).suspect && !st(5).bound);
    EXPECT_EQ(apply(on(5, quote(1, 300))).verdict, Verdict::kAccepted) << "channel 1 may still carry it";
}

TEST_F(SequencerRule, WithoutChannelBindingAnInstrumentFollowsTheHeader) {
    seq_.sequencer().set_bind_instruments_to_channels(false);  // offline replay without configured channels
    apply(quote(1, 100));
    EXPECT_EQ(apply(on(kId, quote(2, 200), 7)).verdict, Verdict::kAccepted);
    EXPECT_EQ(st().channel_id, 7);
    EXPECT_EQ(st().counters.foreign_channel, 0u);
}

// ------------------------------------------------------------ book & times

TEST_F(SequencerRule, LastSourceTimeIsSetByAcceptedQuoteDeltaAndAppliedSnapshot) {
    apply(src(1000, quote(1, 100)));
    EXPECT_EQ(st().last_source_ns, 1000);
    apply(src(2000, delta(2, 200)));
    EXPECT_EQ(st().last_source_ns, 2000);
    apply(src(3000, snapshot(2, 300)));
    EXPECT_EQ(st().last_source_ns, 3000);
    apply(src(9000, delta(2, 400)));  // duplicate
    apply(src(8000, snapshot(1, 500)));  // stale
    apply(src(7000, heartbeat(3, 600)));
    EXPECT_EQ(st().last_source_ns, 3000);
    apply(src(4000, delta(3, 700)));
    EXPECT_EQ(st().last_source_ns, 4000);
}

TEST_F(SequencerRule, AppliedSnapshotSetsLastSourceTimeEvenWhenOlder) {
    apply(src(5000, quote(1, 100)));
    apply(src(4000, snapshot(1, 200)));  // seq >= last_seq: applied
    EXPECT_EQ(st().counters.snapshots_applied, 1u);
    EXPECT_EQ(st().last_source_ns, 4000);
}

TEST_F(SequencerRule, QuoteReplacesBookWithOneLevelPerSideAndQtyZeroSideIsEmpty) {
    apply(snapshot(1, 100, {{100, 1}, {99, 2}, {98, 3}}, {{101, 1}, {102, 2}}));
    apply(quote(2, 200, {97, 10}, {103, 0}));
    EXPECT_EQ(bids(), (Book{{97, 10}}));
    EXPECT_TRUE(asks().empty());
    apply(quote(3, 300, {97, 0}, {104, 5}));
    EXPECT_TRUE(bids().empty());
    EXPECT_EQ(asks(), (Book{{104, 5}}));
}

// ------------------------------------------------------------- robustness

TEST_F(SequencerRule, InstrumentIdAtOrBeyondMaxInstrumentsIsIgnoredAndCounted) {
    constexpr std::uint32_t kBad = 16;  // max_instruments
    EXPECT_EQ(apply(on(kBad, quote(1, 100))).verdict, Verdict::kOutOfRange);
    EXPECT_EQ(apply(on(0xFFFFFFFF, delta(1, 100))).verdict, Verdict::kOutOfRange);
    EXPECT_EQ(apply(on(kBad, heartbeat(1, 100))).verdict, Verdict::kOutOfRange);
    EXPECT_EQ(apply(on(kBad, snapshot(1, 100, {{1, 1}, {2, 2}}, {{3, 3}, {4, 4}}))).first.verdict,
              Verdict::kOutOfRange);
    EXPECT_EQ(apply(on(kBad, event(EventKind::kDefinition, 100))).verdict, Verdict::kOutOfRange);
    EXPECT_EQ(apply(on(kBad, event(EventKind::kDataLost, 100))).verdict, Verdict::kOutOfRange);
    EXPECT_EQ(seq_.sequencer().counters().out_of_range, 6u);
    EXPECT_TRUE(seq_.instruments().seen_ids().empty());

    apply(on(15, snapshot(1, 200, {{100, 1}}, {{101, 1}})));  // the highest valid id still works
    EXPECT_EQ(bids(15), (Book{{100, 1}}));
    EXPECT_FALSE(st(15).suspect);
}

TEST_F(SequencerRule, DataLostEventMarksInstrumentSuspect) {
    apply(quote(1, 100));
    ASSERT_FALSE(st().suspect);
    const Update u = apply(event(EventKind::kDataLost, 200));
    EXPECT_EQ(u.verdict, Verdict::kDataLost);
    EXPECT_TRUE(u.suspect);
    EXPECT_TRUE(st().suspect);
    EXPECT_EQ(st().last_alive_ns, 100);
    apply(quote(2, 300));
    EXPECT_FALSE(st().suspect);
}

// ------------------------------------------- through the Handler (datagrams)

constexpr Capacity kHandlerCapacity{16, 8, 256, 4};

void feed(Handler& h, const PacketBuilder& p, std::int64_t recv_ns, std::uint8_t line = 0) {
    const auto r = h.on_datagram(p.bytes(), recv_ns, line);
    ASSERT_NE(r.verdict, qfb1::PacketVerdict::kMalformed);
}

TEST(SequencerHandlerRule, SamePacketOnLinesAAndBIsAppliedOnceAndCountedAsDuplicates) {
    Handler h(kHandlerCapacity, GateConfig{});
    PacketBuilder p(kCh, 1, 1, 0);
    p.quote(kId, 1, 90, 100, 10, 101, 20).delta(kId, 2, 95, 99, 5, kBid, kSet);
    feed(h, p, 100, 0);
    feed(h, p, 150, 1);
    const InstrumentState& st = h.instruments().state(kId);
    EXPECT_EQ(st.counters.accepted, 2u);
    EXPECT_EQ(st.counters.duplicates, 2u);
    EXPECT_EQ(st.last_seq, 2u);
    EXPECT_EQ(st.last_alive_ns, 100);
    EXPECT_EQ(h.book().side(kId, Side::kBid).size(), 2u);
}

TEST(SequencerHandlerRule, NewSessionResetsTheChannelAndItsFirstSeqCountsNoLoss) {
    Handler h(kHandlerCapacity, GateConfig{});
    PacketBuilder s1(kCh, 1, 1, 0);
    s1.quote(kId, 1, 0, 100, 1, 101, 1).quote(kId, 5, 0, 100, 1, 101, 1);  // 3 lost
    feed(h, s1, 100);
    PacketBuilder other(2, 1, 1, 0);
    other.quote(4, 7, 0, 100, 1, 101, 1);
    feed(h, other, 100);

    PacketBuilder s2(kCh, 2, 1, 0);
    s2.heartbeat(kId, 1, 0);
    feed(h, s2, 200);
    const InstrumentState& st = h.instruments().state(kId);
    EXPECT_EQ(h.decoder().counters().session_changes.get(), 1u);
    EXPECT_TRUE(st.suspect);
    EXPECT_EQ(st.last_seq, 0u);
    EXPECT_TRUE(h.book().side(kId, Side::kBid).empty());
    EXPECT_EQ(h.instruments().state(4).last_seq, 7u);  // channel 2 untouched

    PacketBuilder q(kCh, 2, 2, 0);
    q.quote(kId, 1, 0, 100, 1, 101, 1);
    feed(h, q, 300);
    EXPECT_EQ(st.last_seq, 1u);
    EXPECT_EQ(st.counters.lost, 3u);  // cumulative, nothing new
    EXPECT_EQ(st.counters.duplicates, 0u);
    EXPECT_FALSE(st.suspect);

    PacketBuilder late(kCh, 1, 3, 0);  // the finished session: discarded unread
    late.quote(kId, 6, 0, 90, 1, 91, 1);
    EXPECT_EQ(h.on_datagram(late.bytes(), 400).verdict, qfb1::PacketVerdict::kStaleSession);
    EXPECT_EQ(st.last_seq, 1u);
    EXPECT_EQ(st.last_alive_ns, 300);
}

}  // namespace
}  // namespace tickgate
