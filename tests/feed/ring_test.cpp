#include "tickgate/spsc_ring.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "tickgate/event.hpp"

namespace {

using tickgate::Event;
using tickgate::SpscRing;

TEST(SpscRing, RejectsCapacityThatIsNotAPowerOfTwo) {
    EXPECT_THROW(SpscRing<Event>(0), std::invalid_argument);
    EXPECT_THROW(SpscRing<Event>(1), std::invalid_argument);
    EXPECT_THROW(SpscRing<Event>(1000), std::invalid_argument);
    EXPECT_NO_THROW(SpscRing<Event>(1024));
}

TEST(SpscRing, FillsToCapacityThenRefusesWithoutOverwriting) {
    SpscRing<std::uint64_t> ring(8);
    for (std::uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(ring.try_push(i));
    EXPECT_FALSE(ring.try_push(99));
    EXPECT_EQ(ring.writable(1), 0u);
    std::uint64_t expect = 0;
    EXPECT_EQ(ring.consume([&](std::uint64_t v) { EXPECT_EQ(v, expect++); }, 3), 3u);
    EXPECT_EQ(ring.writable(3), 3u);
    EXPECT_EQ(ring.consume([&](std::uint64_t v) { EXPECT_EQ(v, expect++); }, 100), 5u);
    EXPECT_EQ(ring.consume([](std::uint64_t) { FAIL(); }, 100), 0u);
}

TEST(SpscRing, StagedRecordsAreInvisibleUntilPublished) {
    SpscRing<std::uint64_t> ring(8);
    ASSERT_GE(ring.writable(3), 3u);
    ring.stage(1);
    ring.stage(2);
    EXPECT_EQ(ring.consume([](std::uint64_t) {}, 10), 0u);
    ring.publish();
    EXPECT_EQ(ring.consume([](std::uint64_t) {}, 10), 2u);
}

TEST(SpscRing, SlotsAreCacheLineAlignedEvents) {
    static_assert(alignof(Event) == 64 && sizeof(Event) == 64);
    SpscRing<Event> ring(4);
    Event e{};
    e.instrument_id = 7;
    ASSERT_TRUE(ring.try_push(e));
    ring.consume([](const Event& ev) {
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&ev) % 64, 0u);
        EXPECT_EQ(ev.instrument_id, 7u);
    }, 1);
}

// Two threads, millions of records through a small ring (so it wraps and
// fills constantly): every record arrives once, in order, intact.
TEST(SpscRing, TwoThreadsDeliverMillionsInOrderAndIntact) {
    constexpr std::uint64_t kCount = 4'000'000;
    SpscRing<Event> ring(1024);
    std::thread producer([&] {
        Event e{};
        for (std::uint64_t i = 0; i < kCount;) {
            const std::size_t room = ring.writable(1);
            for (std::size_t k = 0; k < room && i < kCount; ++k, ++i) {
                e.u.quote.seq = i;
                e.u.quote.bid_px = static_cast<std::int64_t>(i * 3);
                e.u.quote.ask_px = static_cast<std::int64_t>(~i);
                e.instrument_id = static_cast<std::uint32_t>(i);
                ring.stage(e);
            }
            ring.publish();
        }
    });
    std::uint64_t next = 0, bad = 0;
    while (next < kCount) {
        ring.consume(
            [&](const Event& e) {
                bad += e.u.quote.seq != next || e.u.quote.bid_px != static_cast<std::int64_t>(next * 3) ||
                       e.u.quote.ask_px != static_cast<std::int64_t>(~next) ||
                       e.instrument_id != static_cast<std::uint32_t>(next);
                ++next;
            },
            256);
    }
    producer.join();
    EXPECT_EQ(next, kCount);
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(ring.consume([](const Event&) {}, 1), 0u);
}

}  // namespace
