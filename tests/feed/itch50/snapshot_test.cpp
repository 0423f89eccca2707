// GLIMPSE snapshot application (ITCH50.md "Snapshot recovery"): the
// channel's stream output kept while the snapshot loads, the books and
// orders replaced on `M`, the kept positions >= N applied, at every edge
// of N against the kept positions; failures change nothing.
#include <gtest/gtest.h>

#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/itch50/replay.hpp"
#include "tickgate/feed/itch50/snapshot.hpp"

namespace tickgate::itch50 {
namespace {

constexpr std::uint32_t kGroupA = 0xEFFF0A01;  // 239.255.10.1
constexpr std::uint16_t kPortA = 31001;
constexpr std::uint16_t kLocate = 5;
constexpr std::int64_t kT0 = 1'719'835'200'000'000'000;

Config glimpse_config(std::uint64_t buffer_bytes = 1 << 20) {
    Config c = parse_config(
        "[itch]\nmax_orders = 4096\nmax_levels = 4096\n"
        "[[channel]]\nid = 7\nprotocol = \"itch50\"\n"
        "a = { group = \"239.255.10.1\", port = 31001 }\n"
        "b = { group = \"239.255.10.2\", port = 31002 }\n",
        "itch.toml");
    c.channels[0].glimpse = "127.0.0.1:1";  // not connected to: the engine side alone is tested here
    c.glimpse.buffer_bytes = buffer_bytes;
    return c;
}

// A packet at `seq` of `n` adds on kLocate, order reference = position.
Bytes adds(std::uint64_t seq, int n, std::string_view session = "SESSION001") {
    std::vector<Bytes> msgs;
    for (int i = 0; i < n; ++i) msgs.push_back(add_order(kLocate, seq + static_cast<std::uint64_t>(i), 'B', 100, 1000));
    return mold_packet(session, seq, msgs);
}
void deliver(Replay& r, const Bytes& d, std::int64_t t = kT0) { r.front().deliver({d.data(), d.size()}, kGroupA, kPortA, t); }

Bytes snapshot_end(std::uint64_t n) {
    Bytes m(kSnapshotSize);
    m[0] = std::byte{'M'};
    soupbintcp::detail::numeric(m.data() + 1, n, soupbintcp::kSequenceSize);
    return m;
}
// The venue's state before position `n`: orders with references `refs` on kLocate, then `M` n.
void fill(SnapshotStorage& s, std::initializer_list<std::uint64_t> refs, std::uint64_t n) {
    s.reset();
    ASSERT_EQ(s.take(system_event('Q', 1)), SnapshotStorage::Take::kMore);
    ASSERT_EQ(s.take(stock_directory(kLocate, "AAPL")), SnapshotStorage::Take::kMore);
    ASSERT_EQ(s.take(trading_action(kLocate, "AAPL", 'T')), SnapshotStorage::Take::kMore);
    for (const std::uint64_t ref : refs) ASSERT_EQ(s.take(add_order(kLocate, ref, 'B', 100, 1000)), SnapshotStorage::Take::kMore);
    ASSERT_EQ(s.take(snapshot_end(n)), SnapshotStorage::Take::kEnd);
}

const InstrumentState& st(const Replay& r, std::uint16_t locate = kLocate) { return r.handler().instruments().state(instrument_id(0, locate)); }

// A late join at 100 (positions 100, 101), then buffering from 102 with 102..105 arriving.
struct LateJoined {
    Replay r{glimpse_config()};
    SnapshotStorage s{4096};
    LateJoined() {
        deliver(r, adds(100, 2));
        EXPECT_EQ(r.front().router().wanted(0), SnapshotWant::kLateJoin);
        EXPECT_TRUE(st(r).suspect);
        r.front().begin_snapshot(0);
        deliver(r, adds(102, 4));
    }
};

TEST(GlimpseSnapshot, KeptOutputIsNotAppliedWhileTheSnapshotLoads) {
    LateJoined f;
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 2u);
    EXPECT_EQ(f.r.front().channel(0).next_seq, 106u);  // the stream moved on: positions are kept in order
    EXPECT_GT(f.r.front().router().buffer().used(), 0u);
    EXPECT_TRUE(st(f.r).suspect);
}

TEST(GlimpseSnapshot, NInsideTheKeptPositionsAppliesThoseFromN) {
    LateJoined f;
    fill(f.s, {100, 101, 102, 103}, 104);
    const std::uint64_t dup0 = f.r.front().channel(0).counters.duplicate_messages.get();
    const SnapshotApplied a = f.r.front().apply_snapshot(0, f.s, kT0);
    EXPECT_EQ(a.orders, 4u);
    EXPECT_EQ(a.continue_at, 104u);
    EXPECT_FALSE(a.still_suspect);
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 6u);  // 4 from the spin + 104, 105
    EXPECT_EQ(f.r.front().channel(0).counters.duplicate_messages.get() - dup0, 2u);  // 102, 103: in the snapshot
    EXPECT_FALSE(st(f.r).suspect);
    EXPECT_EQ(std::string(st(f.r).symbol), "AAPL");
    EXPECT_EQ(f.r.front().router().wanted(0), SnapshotWant::kNone);
    deliver(f.r, adds(106, 1));
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 7u);
    EXPECT_FALSE(st(f.r).suspect);
}

TEST(GlimpseSnapshot, NAtTheFirstKeptPositionAppliesThemAll) {
    LateJoined f;
    fill(f.s, {100, 101}, 102);
    const SnapshotApplied a = f.r.front().apply_snapshot(0, f.s, kT0);
    EXPECT_FALSE(a.still_suspect);
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 6u);
    EXPECT_FALSE(st(f.r).suspect);
}

TEST(GlimpseSnapshot, NBelowTheKeptPositionsLeavesTheMissingOnesLostAndWantsAnother) {
    LateJoined f;
    fill(f.s, {100}, 101);  // position 101 was applied to the old book, never kept
    const std::uint64_t lost0 = f.r.front().channel(0).counters.lost_messages.get();
    const SnapshotApplied a = f.r.front().apply_snapshot(0, f.s, kT0);
    EXPECT_TRUE(a.still_suspect);
    EXPECT_EQ(f.r.front().channel(0).counters.lost_messages.get() - lost0, 1u);
    EXPECT_TRUE(st(f.r).suspect);
    EXPECT_EQ(f.r.front().router().wanted(0), SnapshotWant::kHoleGivenUp);
    EXPECT_TRUE(f.r.front().channel(0).gave_up);
}

TEST(GlimpseSnapshot, NBeyondTheKeptPositionsSkipsTheStreamToN) {
    LateJoined f;
    fill(f.s, {100, 101, 102, 103, 104, 105, 106, 107, 108, 109}, 110);
    const std::uint64_t dup0 = f.r.front().channel(0).counters.duplicate_messages.get();
    const SnapshotApplied a = f.r.front().apply_snapshot(0, f.s, kT0);
    EXPECT_FALSE(a.still_suspect);
    EXPECT_EQ(f.r.front().channel(0).next_seq, 110u);
    EXPECT_EQ(f.r.front().channel(0).counters.duplicate_messages.get() - dup0, 4u);  // 102..105, all in the snapshot
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 10u);
    deliver(f.r, adds(106, 4));  // reflected in the snapshot: duplicates, no hole
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 10u);
    EXPECT_EQ(f.r.front().channel(0).open_holes, 0u);
    deliver(f.r, adds(110, 1));
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 11u);
    EXPECT_FALSE(st(f.r).suspect);
}

TEST(GlimpseSnapshot, NBeyondWithAHeldPacketAppliesItFromN) {
    LateJoined f;
    deliver(f.r, adds(108, 4));  // a hole 106..107 opens; 108..111 held
    EXPECT_EQ(f.r.front().channel(0).open_holes, 1u);
    fill(f.s, {100, 101, 102, 103, 104, 105, 106, 107, 108}, 109);
    f.r.front().apply_snapshot(0, f.s, kT0);
    EXPECT_EQ(f.r.front().channel(0).open_holes, 0u);  // moot: in the snapshot, neither filled nor lost
    EXPECT_EQ(f.r.front().channel(0).next_seq, 112u);
    EXPECT_EQ(f.r.front().channel(0).counters.lost_messages.get(), 0u);
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 12u);  // 9 + 109..111
    EXPECT_FALSE(st(f.r).suspect);
}

TEST(GlimpseSnapshot, InstrumentTheSnapshotDoesNotNameIsEmptyAndClean) {
    Replay r(glimpse_config());
    std::vector<Bytes> msgs = {add_order(6, 1, 'S', 10, 2000), add_order(kLocate, 2, 'B', 10, 1000)};
    deliver(r, mold_packet("SESSION001", 50, msgs));
    r.front().begin_snapshot(0);
    SnapshotStorage s(4096);
    fill(s, {2}, 52);
    r.front().apply_snapshot(0, s, kT0);
    EXPECT_EQ(r.handler().book().open_orders(instrument_id(0, 6)), 0u);
    EXPECT_FALSE(st(r, 6).suspect);
    EXPECT_EQ(r.handler().book().open_orders(instrument_id(0, kLocate)), 1u);
}

TEST(GlimpseSnapshot, AFailedSnapshotAppliesTheKeptOutputAsItWouldHaveBeen) {
    LateJoined f;
    f.r.front().abort_snapshot();
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 6u);
    EXPECT_EQ(f.r.front().router().buffering(), SnapshotRouter::kNone);
    EXPECT_TRUE(st(f.r).suspect);  // nothing repaired
    deliver(f.r, adds(106, 1));
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 7u);
}

TEST(GlimpseSnapshot, BufferTooSmallIsAFailureWithTheKeptOutputAppliedInOrder) {
    // One kept add costs 24 + 40 bytes: three fit in 200.
    Replay r(glimpse_config(200));
    deliver(r, adds(100, 1));
    r.front().begin_snapshot(0);
    for (std::uint64_t p = 101; p < 106; ++p) deliver(r, adds(p, 1));
    EXPECT_TRUE(r.front().router().overflowed());
    EXPECT_EQ(r.front().router().buffering(), SnapshotRouter::kNone);
    // Every position applied once, in order: 6 orders, 6 accepted, nothing lost or duplicated.
    EXPECT_EQ(r.handler().book().open_orders(instrument_id(0, kLocate)), 6u);
    EXPECT_EQ(st(r).counters.accepted, 6u);
    EXPECT_EQ(st(r).last_seq, 105u);
    EXPECT_EQ(r.front().channel(0).counters.duplicate_messages.get(), 0u);
    EXPECT_EQ(r.front().channel(0).counters.lost_messages.get(), 0u);
    deliver(r, adds(106, 1));
    EXPECT_EQ(r.handler().book().open_orders(instrument_id(0, kLocate)), 7u);
    EXPECT_EQ(st(r).last_seq, 106u);
}

TEST(GlimpseSnapshot, HoleGivenUpWhileLoadingAtOrAfterNKeepsTheChannelSuspect) {
    LateJoined f;
    deliver(f.r, adds(110, 1), kT0);  // hole 106..109
    f.r.front().expire(kT0 + 10'000'000'000);  // given up: kept as a mark, not applied
    EXPECT_EQ(f.r.front().router().wanted(0), SnapshotWant::kNone);  // the running snapshot is asked first
    fill(f.s, {100, 101, 102, 103}, 104);
    const SnapshotApplied a = f.r.front().apply_snapshot(0, f.s, kT0);
    EXPECT_TRUE(a.still_suspect);
    EXPECT_TRUE(st(f.r).suspect);
    EXPECT_EQ(f.r.front().router().wanted(0), SnapshotWant::kHoleGivenUp);
}

TEST(GlimpseSnapshot, HoleGivenUpWhileLoadingBelowNIsRepairedByIt) {
    LateJoined f;
    deliver(f.r, adds(110, 1), kT0);
    f.r.front().expire(kT0 + 10'000'000'000);
    fill(f.s, {100, 101, 102, 103, 104, 105, 110}, 111);
    const SnapshotApplied a = f.r.front().apply_snapshot(0, f.s, kT0);
    EXPECT_FALSE(a.still_suspect);
    EXPECT_FALSE(st(f.r).suspect);
    EXPECT_FALSE(f.r.front().channel(0).gave_up);
    EXPECT_EQ(f.r.handler().book().open_orders(instrument_id(0, kLocate)), 7u);
}

TEST(GlimpseSnapshot, NewSessionWhileLoadingCancelsIt) {
    LateJoined f;
    deliver(f.r, adds(1, 1, "SESSION002"));
    EXPECT_TRUE(f.r.front().router().cancelled());
    EXPECT_EQ(f.r.front().router().buffering(), SnapshotRouter::kNone);
    EXPECT_EQ(f.r.front().router().wanted(0), SnapshotWant::kNone);  // read from 1: complete, nothing to repair
    EXPECT_FALSE(st(f.r).suspect);
}

TEST(GlimpseSnapshot, GivenUpHoleOnAGlimpseChannelWantsASnapshot) {
    Replay r(glimpse_config());
    deliver(r, adds(1, 2));
    EXPECT_EQ(r.front().router().wanted(0), SnapshotWant::kNone);
    deliver(r, adds(5, 1), kT0);
    EXPECT_EQ(r.front().channel(0).open_holes, 1u);
    r.front().expire(kT0 + 10'000'000'000);
    EXPECT_EQ(r.front().channel(0).open_holes, 0u);
    EXPECT_EQ(r.front().channel(0).counters.lost_messages.get(), 2u);
    EXPECT_EQ(r.front().router().wanted(0), SnapshotWant::kHoleGivenUp);
}

TEST(GlimpseSnapshotStorage, OrdersBeyondTheStoreAreFullChangesInASpinMalformed) {
    SnapshotStorage s(2);
    EXPECT_EQ(s.take(add_order(1, 1, 'B', 1, 1)), SnapshotStorage::Take::kMore);
    EXPECT_EQ(s.take(add_order(1, 2, 'B', 1, 1, 0, true)), SnapshotStorage::Take::kMore);  // F
    EXPECT_EQ(s.take(add_order(1, 3, 'B', 1, 1)), SnapshotStorage::Take::kFull);
    EXPECT_EQ(s.take(delete_order(1, 1)), SnapshotStorage::Take::kMalformed);
    EXPECT_EQ(s.take(message('Y', 1, 0)), SnapshotStorage::Take::kMore);  // book-neutral: skipped
    EXPECT_EQ(s.take(message('z', 1, 0)), SnapshotStorage::Take::kMore);  // unknown: skipped, counted
    EXPECT_EQ(s.unknown_messages(), 1u);
    const Bytes a = add_order(1, 4, 'B', 1, 1);
    EXPECT_EQ(s.take({a.data(), 20}), SnapshotStorage::Take::kMalformed);  // shorter than its type
    EXPECT_EQ(s.take({}), SnapshotStorage::Take::kMalformed);
    const Bytes m = snapshot_end(9);
    EXPECT_EQ(s.take({m.data(), 10}), SnapshotStorage::Take::kMalformed);
    EXPECT_EQ(s.take(m), SnapshotStorage::Take::kEnd);
    EXPECT_EQ(s.position(), 9u);
    EXPECT_EQ(s.orders().size(), 2u);
}

}  // namespace
}  // namespace tickgate::itch50
