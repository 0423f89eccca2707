// SecurityMap: SecurityID -> dense instrument index (security_map.hpp), and
// its Finder, the decoder's per-entry lookup: found wherever the id sits in
// its probe run, never found when absent, whatever the id (0 and negative
// ones included: an empty slot's bytes are zero).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tickgate/feed/mdp3/security_map.hpp"

namespace tickgate::mdp3 {
namespace {

// `n` ids, from `from` up, whose home slot in a map of `slots` slots is `home`.
std::vector<std::int32_t> ids_at_home(std::size_t slots, std::size_t home, std::size_t n, std::int32_t from) {
    std::vector<std::int32_t> ids;
    for (std::int32_t id = from; ids.size() < n; ++id)
        if (home_slot(id, slots - 1) == home) ids.push_back(id);
    return ids;
}

TEST(SecurityMap, AnEmptyMapFindsNothingNotEvenIdZero) {
    const SecurityMap map(8);
    for (const std::int32_t id : {0, 1, -1, 2147483647, -2147483647 - 1}) {
        EXPECT_EQ(map.find(id), SecurityMap::kNone) << id;
        EXPECT_EQ(map.finder().find(id), SecurityMap::kNone) << id;
    }
}

TEST(SecurityMap, IdsSharingAHomeSlotAreEachFoundAfterTheProbeAcrossTheTablesEnd) {
    SecurityMap map(8);  // 16 slots
    // Five ids of home slot 14 fill 14, 15, 0, 1, 2: the run wraps.
    const std::vector<std::int32_t> ids = ids_at_home(16, 14, 5, -3);
    const SecurityMap::Finder finder = map.finder();
    for (std::uint32_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(finder.find(ids[i]), SecurityMap::kNone) << "not yet given an index: " << ids[i];
        EXPECT_EQ(map.index_of(ids[i]), i);
    }
    // Id 0's home is slot 0, taken by the run: it goes past it, to slot 3.
    ASSERT_EQ(home_slot(0, 15), 0u);
    EXPECT_EQ(map.index_of(0), 5u);
    for (std::uint32_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(finder.find(ids[i]), i) << "a finder made before the inserts sees them: " << ids[i];
        EXPECT_EQ(map.index_of(ids[i]), i) << "asked again: the same index";
    }
    EXPECT_EQ(finder.find(0), 5u) << "found past its home slot";
    // Absent ids of the run's home slots walk it to its empty end.
    EXPECT_EQ(finder.find(ids_at_home(16, 14, 6, -3).back()), SecurityMap::kNone);
    EXPECT_EQ(finder.find(ids_at_home(16, 1, 1, 1).front()), SecurityMap::kNone);
}

TEST(SecurityMap, IdZeroIsAnOrdinaryId) {
    SecurityMap map(4);
    EXPECT_EQ(map.index_of(7), 0u);
    EXPECT_EQ(map.find(0), SecurityMap::kNone);
    EXPECT_EQ(map.index_of(0), 1u);
    EXPECT_EQ(map.find(0), 1u);
    EXPECT_EQ(map.security_id(1), 0);
}

TEST(SecurityMap, AFullMapGivesNoMoreIndicesAndStillFindsItsOwn) {
    SecurityMap map(3);
    for (std::int32_t id = 100; id < 103; ++id) EXPECT_NE(map.index_of(id), SecurityMap::kNone);
    EXPECT_EQ(map.index_of(103), SecurityMap::kNone) << "max_instruments taken: the caller counts it";
    EXPECT_EQ(map.find(103), SecurityMap::kNone);
    for (std::int32_t id = 100; id < 103; ++id) EXPECT_EQ(map.finder().find(id), static_cast<std::uint32_t>(id - 100));
    EXPECT_EQ(map.size(), 3u);
}

}  // namespace
}  // namespace tickgate::mdp3
