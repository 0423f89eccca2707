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

// `n` ids whose home slot in a map of `slots` slots is the same.
std::vector<std::int32_t> colliding_ids(std::size_t slots, std::size_t n, std::int32_t from) {
    std::vector<std::int32_t> ids;
    const std::size_t home = home_slot(from, slots - 1);
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

TEST(SecurityMap, IdsSharingAHomeSlotAreEachFoundAfterTheProbe) {
    SecurityMap map(8);  // 16 slots
    const std::vector<std::int32_t> ids = colliding_ids(16, 5, -3);
    const SecurityMap::Finder finder = map.finder();
    for (std::uint32_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(finder.find(ids[i]), SecurityMap::kNone) << "not yet given an index: " << ids[i];
        EXPECT_EQ(map.index_of(ids[i]), i);
    }
    for (std::uint32_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(finder.find(ids[i]), i) << "a finder made before the inserts sees them: " << ids[i];
        EXPECT_EQ(map.index_of(ids[i]), i) << "asked again: the same index";
    }
    // An absent id of the same home slot walks the whole run to its empty end.
    const std::vector<std::int32_t> more = colliding_ids(16, 6, -3);
    EXPECT_EQ(finder.find(more.back()), SecurityMap::kNone);
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
