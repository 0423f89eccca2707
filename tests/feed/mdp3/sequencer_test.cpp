// MDP3.md's channel and instrument rules through BasicSequencer<mdp3::Rules>,
// one test per rule, each named after it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tickgate/feed/mdp3/rules.hpp"
#include "tickgate/feed/sequencer.hpp"

namespace tickgate {
namespace {

constexpr std::uint16_t kChannel = 7;

class Mdp3Rules : public ::testing::Test {
protected:
    Capacity cap{16, 10, 8, 4};
    InstrumentTable table{16};
    mdp3::IndexedBook book{16, 10};
    BasicSequencer<mdp3::Rules> seq{table, book, cap};
    std::int64_t now = 1'000;

    Event base(EventKind kind, std::uint32_t id, std::uint16_t channel = kChannel) {
        Event ev{};
        ev.kind = kind;
        ev.instrument_id = id;
        ev.channel_id = channel;
        ev.recv_ns = ++now;
        ev.line = 0;
        return ev;
    }
    // A book entry: New at `level` on the bid ('0') unless told otherwise.
    Update entry(std::uint32_t id, std::uint64_t rpt, std::int64_t px, std::uint8_t level = 1, char type = '0',
                 std::uint8_t action = 0, std::uint16_t channel = kChannel) {
        Event ev = base(mdp3::kLevelEntry, id, channel);
        ev.u.venue.seq = rpt;
        ev.u.venue.source_ns = now;
        mdp3::set_entry_fields(ev, {.price = px, .qty = 1, .orders = 0, .level = level, .action = action, .entry_type = type,
                                    .price_exponent = 0});
        return seq.apply(ev);
    }
    Update trade(std::uint32_t id, std::uint64_t rpt) {
        Event ev = base(mdp3::kSequencedEntry, id);
        ev.u.venue.seq = rpt;
        ev.u.venue.source_ns = now;
        return seq.apply(ev);
    }
    Update channel(EventKind kind, std::uint16_t ch = kChannel) { return seq.apply(base(kind, 0, ch)); }
    // A snapshot of `bids` (best first) at RptSeq `rpt`: its verdict (the
    // begin's when stale, else the last level's).
    Update snapshot(std::uint32_t id, std::uint64_t rpt, std::vector<std::int64_t> bids) {
        Event b = base(EventKind::kSnapshotBegin, id);
        b.u.snapshot.seq = rpt;
        b.u.snapshot.source_ns = now;
        b.u.snapshot.n_bids = static_cast<std::uint8_t>(bids.size());
        b.u.snapshot.n_asks = 0;
        const Update begin = seq.apply(b);
        if (begin.verdict == Verdict::kSnapshotStale || begin.verdict == Verdict::kImplausible) return begin;
        Update u = begin;
        for (std::size_t i = 0; i < bids.size(); i += kLevelsPerEvent) {
            Event l = base(EventKind::kSnapshotLevels, id);
            l.u.levels.count = 0;
            for (std::size_t k = i; k < bids.size() && k < i + kLevelsPerEvent; ++k) {
                l.u.levels.price[l.u.levels.count] = bids[k];
                l.u.levels.qty[l.u.levels.count++] = 1;
            }
            u = seq.apply(l);
        }
        return u;
    }
    std::vector<std::int64_t> bids(std::uint32_t id) {
        std::vector<std::int64_t> out;
        for (const Level l : book.side(id, Side::kBid)) out.push_back(l.price);
        return out;
    }
    const InstrumentState& st(std::uint32_t id) { return table.state(id); }
    // Instrument `id` clean at RptSeq `rpt` (a snapshot), as after recovery.
    void clean(std::uint32_t id, std::uint64_t rpt) {
        entry(id, rpt, 100);
        snapshot(id, rpt, {100});
        ASSERT_FALSE(st(id).suspect);
    }
};

TEST_F(Mdp3Rules, FirstRptSeqIsAcceptedWithoutLossAndStaysSuspectUntilASnapshot) {
    const Update u = entry(1, 500, 100);
    EXPECT_EQ(u.verdict, Verdict::kAccepted);
    EXPECT_EQ(u.lost, 0u);
    EXPECT_TRUE(st(1).suspect);
    EXPECT_EQ(bids(1), (std::vector<std::int64_t>{100})) << "a suspect book keeps converging";
    snapshot(1, 500, {100});
    EXPECT_FALSE(st(1).suspect);
}

TEST_F(Mdp3Rules, RptSeqDuplicateDroppedGapCountedSuspect) {
    clean(1, 10);
    EXPECT_EQ(entry(1, 10, 99).verdict, Verdict::kDuplicate);
    EXPECT_EQ(st(1).counters.duplicates, 1u);
    const Update u = entry(1, 14, 98, 2);
    EXPECT_EQ(u.verdict, Verdict::kGap);
    EXPECT_EQ(u.lost, 3u);
    EXPECT_TRUE(st(1).suspect);
    EXPECT_EQ(st(1).counters.lost, 3u);
}

// MDP3.md: QFB1.md rule 6 with RptSeq as seq, entries and snapshots alike.
// Issue 21 item 4: one forged entry left the instrument suspect for the
// session; a forged snapshot froze the book on its price with the gate ok.
TEST_F(Mdp3Rules, Rule6EntryWithRptSeqFarAheadIsImplausibleAndChangesNothing) {
    clean(1, 10);
    const InstrumentState before = st(1);
    for (const std::uint64_t forged : {std::uint64_t{0xFFFFFFFF}, 10 + kImplausibleSeqJump + 1}) {
        const Update u = entry(1, forged, 99);
        EXPECT_EQ(u.verdict, Verdict::kImplausible);
        EXPECT_FALSE(u.book_changed);
    }
    EXPECT_EQ(st(1).counters.implausible_seq, 2u);
    EXPECT_EQ(st(1).counters.lost, 0u);
    EXPECT_EQ(st(1).last_seq, 10u);
    EXPECT_EQ(st(1).last_alive_ns, before.last_alive_ns);
    EXPECT_FALSE(st(1).suspect) << "not suspect for the session";
    EXPECT_EQ(bids(1), (std::vector<std::int64_t>{100}));
    EXPECT_EQ(entry(1, 11, 101, 1, '0', 1).verdict, Verdict::kAccepted) << "the real stream goes on";
    EXPECT_EQ(entry(1, 11 + kImplausibleSeqJump, 102, 1, '0', 1).verdict, Verdict::kGap) << "at the bound: a gap";
}

TEST_F(Mdp3Rules, Rule6SnapshotWithRptSeqFarAheadIsImplausibleAndTheBookStays) {
    clean(1, 10);
    const Update u = snapshot(1, 0xFFFFFFFF, {999});
    EXPECT_EQ(u.verdict, Verdict::kImplausible);
    EXPECT_EQ(st(1).counters.implausible_seq, 1u);
    EXPECT_EQ(st(1).counters.snapshots_applied, 1u) << "only clean()'s";
    EXPECT_EQ(st(1).last_seq, 10u);
    EXPECT_EQ(bids(1), (std::vector<std::int64_t>{100})) << "not frozen on the forged price";
    EXPECT_EQ(entry(1, 11, 101, 1, '0', 1).verdict, Verdict::kAccepted) << "not a duplicate";
    EXPECT_EQ(bids(1), (std::vector<std::int64_t>{101}));
    // On a suspect instrument too: only a new session moves it that far.
    entry(1, 20, 102);
    ASSERT_TRUE(st(1).suspect);
    EXPECT_EQ(snapshot(1, 20 + kImplausibleSeqJump + 1, {999}).verdict, Verdict::kImplausible);
    EXPECT_EQ(st(1).last_seq, 20u);
}

TEST_F(Mdp3Rules, ChannelGapMakesCleanInstrumentsUnconfirmedThenNextRptSeqConfirms) {
    clean(1, 10);
    clean(2, 20);
    channel(mdp3::kChannelGap);
    EXPECT_TRUE(st(1).suspect) << "the gate answers suspect for an unconfirmed instrument";
    EXPECT_TRUE(st(1).unconfirmed);
    const Update u = entry(1, 11, 101, 1, '0', 1);
    EXPECT_EQ(u.verdict, Verdict::kAccepted);
    EXPECT_FALSE(u.suspect);
    EXPECT_FALSE(st(1).suspect) << "RptSeq == last + 1: nothing lost";
    EXPECT_TRUE(st(2).suspect) << "still unconfirmed";
}

TEST_F(Mdp3Rules, UnconfirmedThenARptSeqJumpIsSuspectWithTheLossCounted) {
    clean(1, 10);
    channel(mdp3::kChannelGap);
    const Update u = entry(1, 13, 101);
    EXPECT_EQ(u.lost, 2u);
    EXPECT_TRUE(st(1).suspect);
    EXPECT_FALSE(st(1).unconfirmed);
    EXPECT_TRUE(st(1).lost_suspect);
}

TEST_F(Mdp3Rules, UnconfirmedTakesASnapshotNotOlderAndCountsAnOlderOneStale) {
    clean(1, 10);
    channel(mdp3::kChannelGap);
    EXPECT_EQ(snapshot(1, 9, {90}).verdict, Verdict::kSnapshotStale);
    EXPECT_EQ(st(1).counters.stale_snapshots, 1u);
    EXPECT_TRUE(st(1).suspect);
    EXPECT_EQ(snapshot(1, 10, {95}).verdict, Verdict::kSnapshotApplied);
    EXPECT_FALSE(st(1).suspect);
    EXPECT_FALSE(st(1).unconfirmed);
    EXPECT_EQ(bids(1), (std::vector<std::int64_t>{95}));
}

TEST_F(Mdp3Rules, AChannelGapLeavesOtherChannelsAlone) {
    clean(1, 10);
    channel(mdp3::kChannelGap, kChannel + 1);
    EXPECT_FALSE(st(1).suspect);
}

TEST_F(Mdp3Rules, HeartbeatDuringAChannelGapRefreshesNothing) {
    clean(1, 10);
    clean(2, 20);
    channel(mdp3::kChannelGap);
    const std::int64_t alive = st(2).last_alive_ns;
    channel(mdp3::kChannelHeartbeat);
    EXPECT_EQ(st(2).last_alive_ns, alive);
    entry(1, 11, 100, 1, '0', 1);
    entry(2, 21, 100, 1, '0', 1);
    channel(mdp3::kChannelHeartbeat);
    EXPECT_EQ(st(2).last_alive_ns, now) << "all confirmed: the heartbeat refreshes";
}

TEST_F(Mdp3Rules, AChannelGapLeavesAColdStartInstrumentUnconfirmedAndSuspectUntilASnapshot) {
    entry(1, 5, 100);  // cold start: suspect
    clean(2, 20);
    channel(mdp3::kChannelGap);
    EXPECT_TRUE(st(1).unconfirmed);
    const std::int64_t alive = st(2).last_alive_ns;
    channel(mdp3::kChannelHeartbeat);
    EXPECT_EQ(st(2).last_alive_ns, alive) << "an unconfirmed instrument blocks the heartbeat";
    entry(2, 21, 100, 1, '0', 1);
    entry(1, 6, 100, 1, '0', 1);
    EXPECT_FALSE(st(1).unconfirmed);
    EXPECT_TRUE(st(1).suspect) << "confirmed, but its book is still unknown";
    EXPECT_FALSE(st(2).suspect);
    channel(mdp3::kChannelHeartbeat);
    EXPECT_EQ(st(2).last_alive_ns, now);
    EXPECT_EQ(snapshot(1, 3, {90}).verdict, Verdict::kSnapshotApplied) << "suspect: any snapshot applies";
}

TEST_F(Mdp3Rules, HeartbeatAfterAnRptSeqLossRefreshesNothingButAColdStartDoesNotBlock) {
    entry(1, 5, 100);  // cold start: suspect, not after a loss
    clean(2, 20);
    channel(mdp3::kChannelHeartbeat);
    EXPECT_EQ(st(2).last_alive_ns, now);
    entry(2, 25, 100);  // loss
    const std::int64_t alive = st(1).last_alive_ns;
    channel(mdp3::kChannelHeartbeat);
    EXPECT_EQ(st(1).last_alive_ns, alive);
}

TEST_F(Mdp3Rules, ChannelResetEmptiesBooksWithoutSuspectAndRestartsRptSeq) {
    clean(1, 10);
    entry(2, 20, 100);  // suspect (cold start)
    const std::int64_t alive = st(1).last_alive_ns;
    channel(mdp3::kChannelReset);
    EXPECT_TRUE(bids(1).empty());
    EXPECT_TRUE(bids(2).empty());
    EXPECT_FALSE(st(1).suspect);
    EXPECT_FALSE(st(2).suspect);
    EXPECT_EQ(st(1).last_alive_ns, alive) << "a reset refreshes no liveness";
    const Update u = entry(1, 1, 50);
    EXPECT_EQ(u.verdict, Verdict::kAccepted);
    EXPECT_EQ(u.lost, 0u) << "the next entry is accepted as the first";
    EXPECT_FALSE(st(1).suspect);
}

TEST_F(Mdp3Rules, SessionResetMakesTheChannelsInstrumentsNothingKnown) {
    clean(1, 10);
    Event ev = base(EventKind::kSessionChange, 0);
    EXPECT_EQ(seq.apply(ev).verdict, Verdict::kSessionReset);
    EXPECT_TRUE(st(1).suspect);
    EXPECT_FALSE(st(1).known);
    EXPECT_TRUE(bids(1).empty());
    EXPECT_EQ(entry(1, 3, 100).lost, 0u);
    EXPECT_EQ(st(1).counters.lost, 0u);
}

TEST_F(Mdp3Rules, SnapshotAppliesWithBufferedReplayUntilTheFirstHole) {
    clean(1, 10);
    entry(1, 13, 90, 3);  // gap: suspect, buffered
    entry(1, 14, 91, 4);
    entry(1, 16, 92, 5);  // a second hole after 14
    EXPECT_EQ(snapshot(1, 12, {100, 99}).verdict, Verdict::kSnapshotApplied);
    EXPECT_EQ(bids(1), (std::vector<std::int64_t>{100, 99, 90, 91})) << "snapshot + 13, 14 replayed";
    EXPECT_TRUE(st(1).suspect) << "the hole at 15 remains";
    EXPECT_EQ(st(1).last_seq, 16u) << "the highest RptSeq accepted before";
    // The buffer was emptied: a snapshot at 16 is clean with nothing replayed.
    EXPECT_EQ(snapshot(1, 16, {80}).verdict, Verdict::kSnapshotApplied);
    EXPECT_FALSE(st(1).suspect);
    EXPECT_EQ(bids(1), (std::vector<std::int64_t>{80}));
}

TEST_F(Mdp3Rules, SnapshotReplayTakesEveryBufferedKindOnlyBookEntriesTouchTheBook) {
    clean(1, 10);
    entry(1, 12, 90, 2);  // gap: suspect
    trade(1, 13);
    entry(1, 14, 91, 3);
    snapshot(1, 11, {100});
    EXPECT_FALSE(st(1).suspect);
    EXPECT_EQ(st(1).last_seq, 14u);
    EXPECT_EQ(bids(1), (std::vector<std::int64_t>{100, 90, 91}));
}

TEST_F(Mdp3Rules, ImpliedEntriesAreSequencedButNeverTouchTheBook) {
    clean(1, 10);
    const Update u = entry(1, 11, 77, 1, 'E');
    EXPECT_EQ(u.verdict, Verdict::kAccepted);
    EXPECT_FALSE(u.book_changed);
    EXPECT_EQ(st(1).last_seq, 11u);
    EXPECT_EQ(bids(1), (std::vector<std::int64_t>{100}));
    EXPECT_EQ(book.book_errors(1), 0u);
}

TEST_F(Mdp3Rules, AnEntryIsSequencedByRptSeqWhateverChannelCarriedIt) {
    clean(1, 10);
    EXPECT_EQ(entry(1, 10, 100, 1, '0', 1, kChannel + 1).verdict, Verdict::kDuplicate);
    EXPECT_EQ(entry(1, 11, 100, 1, '0', 1, kChannel + 1).verdict, Verdict::kAccepted) << "only the other channel had it";
    channel(mdp3::kChannelGap, kChannel + 1);
    EXPECT_FALSE(st(1).suspect) << "membership stays with the first channel";
    channel(mdp3::kChannelGap);
    EXPECT_TRUE(st(1).suspect);
}

TEST_F(Mdp3Rules, DefinitionsSetSymbolAndDepthAndCreateNoInstrument) {
    Event ev = base(EventKind::kDefinition, 3);
    std::memcpy(ev.u.definition.symbol, "ESZ6\0\0\0\0\0\0\0\0\0\0\0\0", 16);
    ev.u.definition.price_exponent = -9;
    ev.u.definition.book_depth = 2;
    seq.apply(ev);
    EXPECT_FALSE(st(3).seen);
    EXPECT_STREQ(st(3).symbol, "ESZ6");
    EXPECT_EQ(book.depth_of(3), 2u);
    entry(3, 1, 100);
    entry(3, 2, 101);
    entry(3, 3, 102);
    EXPECT_EQ(bids(3), (std::vector<std::int64_t>{102, 101}));
}

TEST_F(Mdp3Rules, WithoutADefinitionPricesTakeTheTemplatesExponent) {
    Event ev = base(mdp3::kLevelEntry, 4);
    ev.u.venue.seq = 1;
    mdp3::set_entry_fields(ev, {.price = 0, .qty = 0, .orders = 0, .level = 1, .action = 0, .entry_type = '0',
                                .price_exponent = -7});  // a schema-6 template (PRICE)
    seq.apply(ev);
    EXPECT_EQ(st(4).price_exponent, -7);
    Event snap = base(EventKind::kSnapshotBegin, 5);
    snap.u.snapshot.seq = 1;
    snap.u.snapshot.price_exponent = -9;
    seq.apply(snap);
    EXPECT_EQ(st(5).price_exponent, -9);
}

TEST_F(Mdp3Rules, ADeletingDefinitionRemovesTheSymbolAndRetiresHandles) {
    Event ev = base(EventKind::kDefinition, 3);
    std::memcpy(ev.u.definition.symbol, "ESZ6\0\0\0\0\0\0\0\0\0\0\0\0", 16);
    ev.u.definition.price_exponent = -9;
    ev.u.definition.book_depth = 0;
    ev.u.definition.removed = false;
    seq.apply(ev);
    const auto handle = table.find("ESZ6");
    ASSERT_TRUE(handle);
    ev.u.definition.removed = true;  // SecurityUpdateAction 'D'
    EXPECT_EQ(seq.apply(ev).verdict, Verdict::kDefinition) << "the engine's cue to resolve again";
    EXPECT_FALSE(table.find("ESZ6"));
    EXPECT_FALSE(table.current(*handle));
    EXPECT_STREQ(st(3).symbol, "");
}

}  // namespace
}  // namespace tickgate
