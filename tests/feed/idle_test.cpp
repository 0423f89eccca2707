// Idle strategies (idle.hpp): what each does per idle(work_count), counted
// through a recording Ops instead of timed, so every assertion is exact.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "tickgate/idle.hpp"

namespace tickgate {
namespace {

using namespace std::chrono_literals;

// Every spin, yield and park, in order: 's', 'y', or the park in ns.
struct Tally {
    std::uint64_t spins = 0, yields = 0;
    std::vector<std::int64_t> parks;
};
struct RecordingOps {
    Tally* t;
    void spin() const noexcept { ++t->spins; }
    void yield() const noexcept { ++t->yields; }
    void park(std::int64_t ns) const noexcept { t->parks.push_back(ns); }
};

TEST(Idle, WorkDoneMeansNoIdling) {
    Tally t;
    BusySpinIdle<RecordingOps> spin({&t});
    YieldingIdle<RecordingOps> yield({&t});
    BackoffIdle<RecordingOps> backoff(2, 2, 1us, 8us, {&t});
    BlockingIdle block(50ms);
    for (int work : {1, 5, 1000}) {
        spin.idle(work);
        yield.idle(work);
        backoff.idle(work);
        block.idle(work);
    }
    EXPECT_EQ(t.spins, 0u);
    EXPECT_EQ(t.yields, 0u);
    EXPECT_TRUE(t.parks.empty());
}

TEST(Idle, BusySpinSpinsAndYieldingYieldsOncePerEmptyIteration) {
    Tally t;
    BusySpinIdle<RecordingOps> spin({&t});
    for (int i = 0; i < 7; ++i) spin.idle(0);
    EXPECT_EQ(t.spins, 7u);
    EXPECT_EQ(t.yields, 0u);
    YieldingIdle<RecordingOps> yield({&t});
    for (int i = 0; i < 3; ++i) yield.idle(0);
    EXPECT_EQ(t.spins, 7u);
    EXPECT_EQ(t.yields, 3u);
    EXPECT_TRUE(t.parks.empty());
    // Neither lets the loop's work call block.
    EXPECT_EQ(spin.max_block_ns(), 0);
    EXPECT_EQ(yield.max_block_ns(), 0);
}

TEST(Idle, BackoffSpinsThenYieldsThenParksDoublingUpToTheMaximum) {
    Tally t;
    BackoffIdle<RecordingOps> idle(3, 2, 1us, 10us, {&t});
    EXPECT_EQ(idle.max_block_ns(), 0);
    for (int i = 0; i < 3; ++i) idle.idle(0);
    EXPECT_EQ(t.spins, 3u);
    EXPECT_EQ(t.yields, 0u);
    for (int i = 0; i < 2; ++i) idle.idle(0);
    EXPECT_EQ(t.spins, 3u);
    EXPECT_EQ(t.yields, 2u);
    EXPECT_TRUE(t.parks.empty());
    for (int i = 0; i < 6; ++i) idle.idle(0);
    EXPECT_EQ(t.parks, (std::vector<std::int64_t>{1000, 2000, 4000, 8000, 10000, 10000}));
    EXPECT_EQ(t.spins, 3u);
    EXPECT_EQ(t.yields, 2u);
}

TEST(Idle, BackoffStartsOverAfterWork) {
    Tally t;
    BackoffIdle<RecordingOps> idle(1, 1, 1us, 4us, {&t});
    for (int i = 0; i < 5; ++i) idle.idle(0);  // spin, yield, park 1, 2, 4 µs
    EXPECT_EQ(idle.next_park_ns(), 4000);
    idle.idle(1);
    EXPECT_EQ(idle.next_park_ns(), 1000);
    for (int i = 0; i < 3; ++i) idle.idle(0);  // spin, yield, park 1 µs again
    EXPECT_EQ(t.spins, 2u);
    EXPECT_EQ(t.yields, 2u);
    EXPECT_EQ(t.parks, (std::vector<std::int64_t>{1000, 2000, 4000, 1000}));
}

TEST(Idle, BackoffWithoutSpinsOrYieldsIsAPlainSleep) {
    Tally t;
    BackoffIdle<RecordingOps> idle(0, 0, 5ms, 5ms, {&t});
    for (int i = 0; i < 4; ++i) idle.idle(0);
    EXPECT_EQ(t.parks, (std::vector<std::int64_t>(4, 5'000'000)));
    EXPECT_EQ(t.spins + t.yields, 0u);
}

TEST(Idle, BackoffKeepsItsBoundsSane) {
    Tally t;
    BackoffIdle<RecordingOps> idle(0, 0, 0ns, -5ns, {&t});  // a 0 park would be a spin: at least 1 ns, max >= min
    idle.idle(0);
    idle.idle(0);
    EXPECT_EQ(t.parks, (std::vector<std::int64_t>{1, 1}));
}

TEST(Idle, BlockingLeavesTheWaitToTheWorkCall) {
    BlockingIdle idle(50ms);
    EXPECT_EQ(idle.max_block_ns(), 50'000'000);
    idle.idle(0);  // nothing to count: it does nothing
    EXPECT_EQ(BlockingIdle(0ns).max_block_ns(), 1) << "0 would mean do not wait";
}

}  // namespace
}  // namespace tickgate
