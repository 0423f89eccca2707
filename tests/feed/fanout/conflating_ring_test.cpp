// The engine -> publisher hand-off (include/tickgate/fanout/conflating_ring.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tickgate/fanout/conflating_ring.hpp"

namespace {

using namespace tickgate;
using namespace tickgate::fanout;

Record rec(std::uint32_t id, std::int64_t px) {
    Record r;
    r.instrument = id;
    r.n_bids = 2;
    r.bids[0] = {px, 1};
    r.bids[1] = {px - 1, 2};
    r.n_asks = 1;
    r.asks[0] = {px + 1, 3};
    return r;
}

TEST(FanoutRing, ANewerUpdateOfAPendingInstrumentOverwritesItAndIsCounted) {
    ConflatingRing ring(8, 2);
    ring.offer(rec(3, 100));
    ring.offer(rec(5, 200));
    ring.offer(rec(3, 101));  // 3 still pending: conflated
    std::vector<std::pair<std::uint32_t, std::int64_t>> got;
    ring.drain([&](const Record& r, std::uint64_t) { got.emplace_back(r.instrument, r.bids[0].price); }, 100);
    EXPECT_EQ(got, (std::vector<std::pair<std::uint32_t, std::int64_t>>{{3, 101}, {5, 200}}));
    EXPECT_EQ(ring.counters().offered.get(), 3u);
    EXPECT_EQ(ring.counters().conflated.get(), 1u);
    ring.offer(rec(3, 102));  // drained: queued again, not conflated
    got.clear();
    ring.drain([&](const Record& r, std::uint64_t) { got.emplace_back(r.instrument, r.bids[0].price); }, 100);
    EXPECT_EQ(got, (std::vector<std::pair<std::uint32_t, std::int64_t>>{{3, 102}}));
    EXPECT_EQ(ring.counters().conflated.get(), 1u);
}

// Every instrument updated far more often than the ring holds: it never
// fills, never blocks, and the newest of each is what is read.
TEST(FanoutRing, NeverFullTheNewestWinsAndLevelsBeyondDepthAreNotKept) {
    ConflatingRing ring(4, 1);
    for (int round = 0; round < 1000; ++round)
        for (std::uint32_t id = 0; id < 4; ++id) ring.offer(rec(id, round));
    std::size_t n = 0;
    ring.drain(
        [&](const Record& r, std::uint64_t) {
            ++n;
            EXPECT_EQ(r.bids[0].price, 999);
            EXPECT_EQ(r.bids[1].price, 0) << "depth 1: the second level is not carried";
        },
        100);
    EXPECT_EQ(n, 4u);
    EXPECT_EQ(ring.counters().conflated.get(), 4000u - 4);
    Record r;
    EXPECT_EQ(ring.read(2, r), 1000u) << "the version counts offers";
}

// One engine thread, one publisher thread: whatever is read is a record
// that was offered whole (the seqlock never hands out a torn one), and the
// last read of each instrument is its last offer.
TEST(FanoutRing, ConcurrentReadsAreNeverTorn) {
    ConflatingRing ring(16, 4);
    std::atomic<bool> done{false};
    std::thread engine([&] {
        for (std::int64_t i = 1; i <= 200'000; ++i) {
            Record r = rec(static_cast<std::uint32_t>(i % 16), i);
            r.n_bids = 4;
            for (int l = 0; l < 4; ++l) r.bids[l] = {i, static_cast<std::uint32_t>(i)};
            ring.offer(r);
        }
        done.store(true);
    });
    std::int64_t last[16] = {};
    std::uint64_t torn = 0;
    const auto check = [&](const Record& r, std::uint64_t) {
        for (int l = 0; l < 4; ++l)
            torn += r.bids[l].price != r.bids[0].price || r.bids[l].qty != static_cast<std::uint32_t>(r.bids[0].price);
        last[r.instrument] = r.bids[0].price;
    };
    while (!done.load()) ring.drain(check, 64);
    engine.join();
    ring.drain(check, 64);
    EXPECT_EQ(torn, 0u);
    for (std::uint32_t id = 0; id < 16; ++id) EXPECT_EQ(last[id] % 16, id);
    EXPECT_EQ(last[0], 200'000);
}

}  // namespace
