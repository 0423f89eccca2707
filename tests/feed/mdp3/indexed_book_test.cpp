// MDP3.md's level-indexed book: the six update actions at the depth edges,
// padding, `J`, implied entries, snapshot levels. One test per rule.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "tickgate/feed/mdp3/indexed_book.hpp"

namespace tickgate::mdp3 {
namespace {

using A = UpdateAction;

std::vector<std::pair<std::int64_t, std::uint32_t>> levels(const IndexedBook& b, std::uint32_t id, Side s) {
    std::vector<std::pair<std::int64_t, std::uint32_t>> out;
    for (const Level l : b.side(id, s)) out.emplace_back(l.price, l.qty);
    return out;
}
using L = std::vector<std::pair<std::int64_t, std::uint32_t>>;

Event entry(std::uint8_t level, A action, char type, std::int64_t px, std::int32_t qty) {
    Event ev{};
    ev.kind = kLevelEntry;
    set_entry_fields(ev, {.price = px, .qty = qty, .orders = 0, .level = level,
                          .action = static_cast<std::uint8_t>(action), .entry_type = type, .price_exponent = 0});
    return ev;
}

// A bid side of `depth` filled with prices 100, 99, ... (qty = level).
IndexedBook filled(std::uint32_t depth, std::uint32_t n) {
    IndexedBook b(2, depth);
    for (std::uint32_t l = 1; l <= n; ++l) b.update(0, Side::kBid, A::kNew, l, 101 - l, l);
    return b;
}

TEST(IndexedBookRule, NewInsertsAndShiftsDownDroppingPastTheDepth) {
    IndexedBook b = filled(3, 3);
    EXPECT_TRUE(b.update(0, Side::kBid, A::kNew, 1, 200, 9));
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{200, 9}, {100, 1}, {99, 2}})) << "level 3 pushed past depth 3 is dropped";
    EXPECT_TRUE(b.update(0, Side::kBid, A::kNew, 3, 50, 5));
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{200, 9}, {100, 1}, {50, 5}}));
    EXPECT_EQ(b.book_errors(0), 0u);
}

TEST(IndexedBookRule, ChangeAndOverlaySetTheLevel) {
    for (const A a : {A::kChange, A::kOverlay}) {
        IndexedBook b = filled(4, 2);
        EXPECT_TRUE(b.update(0, Side::kBid, a, 2, 77, 7));
        EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 1}, {77, 7}}));
        EXPECT_EQ(b.book_errors(0), 0u);
    }
}

TEST(IndexedBookRule, ChangeOrOverlayAtAMissingLevelIsCountedAndPadsAndSets) {
    for (const A a : {A::kChange, A::kOverlay}) {
        IndexedBook b = filled(5, 1);
        EXPECT_TRUE(b.update(0, Side::kBid, a, 4, 70, 4));
        EXPECT_EQ(b.book_errors(0), 1u);
        EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 1}, {70, 4}})) << "levels 2 and 3 padded: not published";
        // a Change at a padded level is counted and fills it
        EXPECT_TRUE(b.update(0, Side::kBid, a, 2, 90, 2));
        EXPECT_EQ(b.book_errors(0), 2u);
        EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 1}, {90, 2}, {70, 4}}));
    }
}

TEST(IndexedBookRule, NewPastTheLastLevelPadsNotCounted) {
    IndexedBook b = filled(5, 1);
    EXPECT_TRUE(b.update(0, Side::kBid, A::kNew, 3, 80, 3));
    EXPECT_EQ(b.book_errors(0), 0u);
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 1}, {80, 3}}));
    // a New at the padded level 2 inserts in front of it and shifts it: 80 goes to level 4
    EXPECT_TRUE(b.update(0, Side::kBid, A::kNew, 2, 90, 2));
    EXPECT_TRUE(b.update(0, Side::kBid, A::kChange, 4, 81, 3));
    EXPECT_EQ(b.book_errors(0), 0u) << "level 4 exists after the shift";
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 1}, {90, 2}, {81, 3}}));
}

TEST(IndexedBookRule, DeleteRemovesAndShiftsUp) {
    IndexedBook b = filled(4, 4);
    EXPECT_TRUE(b.update(0, Side::kBid, A::kDelete, 2, 0, 0));
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 1}, {98, 3}, {97, 4}}));
    EXPECT_TRUE(b.update(0, Side::kBid, A::kDelete, 3, 0, 0));
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 1}, {98, 3}}));
    EXPECT_EQ(b.book_errors(0), 0u);
}

TEST(IndexedBookRule, DeleteAtAMissingOrPaddedLevelIsCountedAndChangesNothing) {
    IndexedBook b = filled(5, 1);
    EXPECT_FALSE(b.update(0, Side::kBid, A::kDelete, 2, 0, 0));
    EXPECT_EQ(b.book_errors(0), 1u);
    b.update(0, Side::kBid, A::kNew, 3, 80, 3);  // level 2 padded
    EXPECT_FALSE(b.update(0, Side::kBid, A::kDelete, 2, 0, 0));
    EXPECT_EQ(b.book_errors(0), 2u);
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 1}, {80, 3}}));
    EXPECT_TRUE(b.update(0, Side::kBid, A::kChange, 3, 81, 3)) << "80 is still at level 3";
    EXPECT_EQ(b.book_errors(0), 2u);
}

TEST(IndexedBookRule, DeleteThruEmptiesTheSideWhateverTheLevel) {
    IndexedBook b = filled(3, 3);
    b.update(0, Side::kAsk, A::kNew, 1, 101, 1);
    EXPECT_TRUE(b.update(0, Side::kBid, A::kDeleteThru, 0, 0, 0));
    EXPECT_TRUE(levels(b, 0, Side::kBid).empty());
    EXPECT_EQ(levels(b, 0, Side::kAsk), (L{{101, 1}}));
    EXPECT_EQ(b.book_errors(0), 0u) << "DeleteThru ignores MDPriceLevel";
}

TEST(IndexedBookRule, DeleteFromRemovesTheTopLevelsNeverCounted) {
    IndexedBook b = filled(5, 4);
    EXPECT_TRUE(b.update(0, Side::kBid, A::kDeleteFrom, 2, 0, 0));
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{98, 3}, {97, 4}}));
    EXPECT_TRUE(b.update(0, Side::kBid, A::kDeleteFrom, 5, 0, 0)) << "more than exist: those that exist";
    EXPECT_TRUE(levels(b, 0, Side::kBid).empty());
    EXPECT_EQ(b.book_errors(0), 0u);
}

TEST(IndexedBookRule, ALevelOutsideOneToDepthIsCountedAndIgnored) {
    IndexedBook b = filled(3, 2);
    for (const A a : {A::kNew, A::kChange, A::kDelete, A::kDeleteFrom, A::kOverlay}) {
        EXPECT_FALSE(b.update(0, Side::kBid, a, 0, 1, 1));
        EXPECT_FALSE(b.update(0, Side::kBid, a, 4, 1, 1));
    }
    EXPECT_EQ(b.book_errors(0), 10u);
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 1}, {99, 2}}));
}

TEST(IndexedBookRule, DepthIsPerInstrumentAndALowerOneDoesNotTrim) {
    IndexedBook b = filled(10, 5);
    b.set_depth(0, 3);
    EXPECT_EQ(levels(b, 0, Side::kBid).size(), 5u) << "a later change of depth does not trim";
    EXPECT_FALSE(b.update(0, Side::kBid, A::kChange, 4, 1, 1));
    EXPECT_EQ(b.book_errors(0), 1u);
    b.set_depth(1, 2);
    b.update(1, Side::kAsk, A::kNew, 1, 10, 1);
    b.update(1, Side::kAsk, A::kNew, 1, 9, 1);
    b.update(1, Side::kAsk, A::kNew, 1, 8, 1);
    EXPECT_EQ(levels(b, 1, Side::kAsk), (L{{8, 1}, {9, 1}}));
}

TEST(IndexedBookRule, DefaultDepthIsTenAndNoBookIsDeeperThanALevelByte) {
    IndexedBook b(1, 1000);
    EXPECT_EQ(b.depth(), 255u);
    EXPECT_EQ(b.depth_of(0), 10u) << "no definition: MDP3.md's default";
    EXPECT_FALSE(b.update(0, Side::kBid, A::kNew, 11, 1, 1));
    EXPECT_EQ(b.book_errors(0), 1u);
    b.set_depth(0, 255);
    EXPECT_TRUE(b.update(0, Side::kBid, A::kNew, 255, 1, 1));
}

TEST(IndexedBookRule, EntryTypeJEmptiesBothSides) {
    IndexedBook b = filled(3, 3);
    b.update(0, Side::kAsk, A::kNew, 1, 101, 1);
    const BookEffect e = b.apply(0, entry(0, A::kNew, 'J', 0, 0));
    EXPECT_TRUE(e.changed);
    EXPECT_TRUE(levels(b, 0, Side::kBid).empty());
    EXPECT_TRUE(levels(b, 0, Side::kAsk).empty());
    EXPECT_EQ(b.book_errors(0), 0u);
}

TEST(IndexedBookRule, ImpliedAndOtherEntryTypesNeverTouchTheBook) {
    IndexedBook b = filled(3, 1);
    for (const char t : {'E', 'F', '2', '6'}) {
        EXPECT_FALSE(b.apply(0, entry(9, A::kDelete, t, 5, 5)).changed);
    }
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 1}}));
    EXPECT_EQ(b.book_errors(0), 0u) << "level 9 of an implied entry is not counted";
}

TEST(IndexedBookRule, ApplyMapsEntryTypeToSide) {
    IndexedBook b(1, 3);
    b.apply(0, entry(1, A::kNew, '0', 100, 5));
    b.apply(0, entry(1, A::kNew, '1', 101, 6));
    EXPECT_EQ(levels(b, 0, Side::kBid), (L{{100, 5}}));
    EXPECT_EQ(levels(b, 0, Side::kAsk), (L{{101, 6}}));
}

TEST(IndexedBookRule, SnapshotLevelsPastTheDepthAreDroppedNotCounted) {
    IndexedBook b(1, 4);
    b.set_depth(0, 2);
    EXPECT_TRUE(b.append_level(0, Side::kAsk, 10, 1));
    EXPECT_TRUE(b.append_level(0, Side::kAsk, 11, 1));
    EXPECT_TRUE(b.append_level(0, Side::kAsk, 12, 1));
    EXPECT_EQ(levels(b, 0, Side::kAsk), (L{{10, 1}, {11, 1}}));
    EXPECT_EQ(b.book_errors(0), 0u);
}

}  // namespace
}  // namespace tickgate::mdp3
