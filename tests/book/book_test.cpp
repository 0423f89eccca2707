// Depth book rules (include/tickgate/book/l2_book.hpp): sorted sides, set/delete,
// fixed depth, full-quote top, snapshot appends. One test per rule.
#include "tickgate/book/l2_book.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tickgate {
namespace {

constexpr std::uint32_t kId = 1;
constexpr std::uint32_t kDepth = 4;

using Book = std::vector<std::pair<std::int64_t, std::uint32_t>>;

class BookRule : public testing::Test {
protected:
    L2Book books_{3, kDepth};

    LevelResult set(Side s, std::int64_t px, std::uint32_t qty, std::uint32_t id = kId) {
        return books_.set_level(id, s, px, qty);
    }
    LevelResult del(Side s, std::int64_t px) { return books_.delete_level(kId, s, px); }
    Book side(Side s, std::uint32_t id = kId) const {
        Book b;
        for (const Level& l : books_.side(id, s)) b.emplace_back(l.price, l.qty);
        return b;
    }
    Book bids(std::uint32_t id = kId) const { return side(Side::kBid, id); }
    Book asks(std::uint32_t id = kId) const { return side(Side::kAsk, id); }
    void fill_bids() {  // 100, 99, 98, 97: full
        for (std::int64_t px : {98, 100, 97, 99}) set(Side::kBid, px, static_cast<std::uint32_t>(px));
    }
};

TEST_F(BookRule, SetInsertsBidsDescendingAndAsksAscending) {
    for (std::int64_t px : {99, 101, 98, 100}) EXPECT_EQ(set(Side::kBid, px, 1), LevelResult::kInserted);
    for (std::int64_t px : {-3, 5, -7, 0}) EXPECT_EQ(set(Side::kAsk, px, 2), LevelResult::kInserted);
    EXPECT_EQ(bids(), (Book{{101, 1}, {100, 1}, {99, 1}, {98, 1}}));
    EXPECT_EQ(asks(), (Book{{-7, 2}, {-3, 2}, {0, 2}, {5, 2}}));
}

TEST_F(BookRule, SetOnExistingPriceReplacesQty) {
    set(Side::kBid, 100, 1);
    set(Side::kBid, 99, 2);
    EXPECT_EQ(set(Side::kBid, 99, 7), LevelResult::kReplaced);
    EXPECT_EQ(bids(), (Book{{100, 1}, {99, 7}}));
}

TEST_F(BookRule, DeleteRemovesTheLevel) {
    set(Side::kAsk, 101, 1);
    set(Side::kAsk, 102, 2);
    set(Side::kAsk, 103, 3);
    EXPECT_EQ(del(Side::kAsk, 102), LevelResult::kDeleted);
    EXPECT_EQ(asks(), (Book{{101, 1}, {103, 3}}));
    EXPECT_EQ(del(Side::kAsk, 101), LevelResult::kDeleted);
    EXPECT_EQ(del(Side::kAsk, 103), LevelResult::kDeleted);
    EXPECT_TRUE(asks().empty());
}

TEST_F(BookRule, DeleteOfMissingPriceIsMissingAndChangesNothing) {
    fill_bids();
    for (std::int64_t px : {101, 96, 0}) EXPECT_EQ(del(Side::kBid, px), LevelResult::kMissing) << px;
    set(Side::kAsk, 105, 1);
    EXPECT_EQ(del(Side::kAsk, 100), LevelResult::kMissing);  // a bid price, on the ask side
    EXPECT_EQ(del(Side::kBid, 105), LevelResult::kMissing);
    EXPECT_EQ(bids(), (Book{{100, 100}, {99, 99}, {98, 98}, {97, 97}}));
    EXPECT_EQ(asks(), (Book{{105, 1}}));
}

TEST_F(BookRule, FullBookDropsAWorseLevel) {
    fill_bids();
    EXPECT_EQ(set(Side::kBid, 96, 1), LevelResult::kDroppedDeep);
    EXPECT_EQ(bids(), (Book{{100, 100}, {99, 99}, {98, 98}, {97, 97}}));
}

TEST_F(BookRule, FullBookBetterLevelPushesOutTheWorst) {
    fill_bids();
    EXPECT_EQ(set(Side::kBid, 101, 1), LevelResult::kInserted);
    EXPECT_EQ(bids(), (Book{{101, 1}, {100, 100}, {99, 99}, {98, 98}}));
    EXPECT_EQ(set(Side::kBid, 99, 5), LevelResult::kReplaced);  // full, existing price: a replace
    EXPECT_EQ(set(Side::kBid, 98, 0), LevelResult::kDeleted);
    EXPECT_EQ(set(Side::kBid, 98, 2), LevelResult::kInserted);
    for (std::int64_t px : {-1, 1, 0}) set(Side::kAsk, px, 1);  // asks: lower is better
    set(Side::kAsk, 2, 1);
    EXPECT_EQ(set(Side::kAsk, -2, 9), LevelResult::kInserted);
    EXPECT_EQ(asks(), (Book{{-2, 9}, {-1, 1}, {0, 1}, {1, 1}}));
}

TEST_F(BookRule, SetWithQtyZeroDeletesTheLevel) {
    set(Side::kBid, 100, 1);
    set(Side::kBid, 99, 2);
    EXPECT_EQ(set(Side::kBid, 100, 0), LevelResult::kDeleted);
    EXPECT_EQ(bids(), (Book{{99, 2}}));
    EXPECT_EQ(set(Side::kBid, 50, 0), LevelResult::kMissing);  // never inserted
    EXPECT_EQ(bids(), (Book{{99, 2}}));
}

TEST_F(BookRule, SetTopReplacesTheBookWithOneLevelPerSideQtyZeroSideEmpty) {
    fill_bids();
    for (std::int64_t px : {101, 102, 103}) set(Side::kAsk, px, 1);
    books_.set_top(kId, 95, 10, 96, 20);
    EXPECT_EQ(bids(), (Book{{95, 10}}));
    EXPECT_EQ(asks(), (Book{{96, 20}}));
    books_.set_top(kId, 95, 0, 96, 21);
    EXPECT_TRUE(bids().empty());
    EXPECT_EQ(asks(), (Book{{96, 21}}));
    books_.set_top(kId, 94, 3, 96, 0);
    EXPECT_EQ(bids(), (Book{{94, 3}}));
    EXPECT_TRUE(asks().empty());
}

TEST_F(BookRule, AppendLevelOutOfOrderStillSorted) {
    for (std::int64_t px : {100, 98, 99, 101}) EXPECT_TRUE(books_.append_level(kId, Side::kBid, px, 1));
    EXPECT_EQ(bids(), (Book{{101, 1}, {100, 1}, {99, 1}, {98, 1}}));
    for (std::int64_t px : {5, 3, 3, 4}) EXPECT_TRUE(books_.append_level(kId, Side::kAsk, px, 2));
    EXPECT_EQ(asks(), (Book{{3, 2}, {4, 2}, {5, 2}}));  // an equal price replaces
}

// A snapshot event's levels in one call: in order they are appended; from an
// out-of-order or equal price, or a full side, on, each goes through a sorted
// insert, which leaves the same book as an append would; an empty level is
// none; past a full side a better level pushes the worst out, a worse one is
// dropped, and the return counts those dropped.
TEST_F(BookRule, AppendLevelsTakesABatchAndCountsWhatItDropped) {
    const std::int64_t bid_px[] = {100, 98, 99, 99, 97, 96};
    const std::uint32_t bid_qty[] = {1, 2, 3, 4, 5, 6};
    EXPECT_EQ(books_.append_levels(kId, Side::kBid, bid_px, bid_qty, 6), 1u);
    EXPECT_EQ(bids(), (Book{{100, 1}, {99, 4}, {98, 2}, {97, 5}}));
    const std::int64_t ask_px[] = {5, 6, 7, 8, 9, 4, 10};
    const std::uint32_t ask_qty[] = {1, 0, 1, 1, 1, 1, 1};
    EXPECT_EQ(books_.append_levels(kId, Side::kAsk, ask_px, ask_qty, 7), 1u);
    EXPECT_EQ(asks(), (Book{{4, 1}, {5, 1}, {7, 1}, {8, 1}}));
    EXPECT_EQ(books_.append_levels(kId, Side::kAsk, ask_px, ask_qty, 0), 0u);
    EXPECT_EQ(asks().size(), kDepth);
}

// The append's own test of order: the level before is held, not read back,
// so an equal price right after it in an ordered run must still replace it;
// the extreme prices keep their places, whether the loop appends them (key
// UINT64_MAX, the empty slots' key: an ask at INT64_MAX, a bid at INT64_MIN)
// or, as a first level of key 0 on an empty side, the sorted insert takes
// the batch from there.
TEST_F(BookRule, AppendLevelsAnEqualPriceInOrderReplacesAndExtremePricesKeepTheirPlaces) {
    const std::int64_t bid_px[] = {100, 99, 99, 98};
    const std::uint32_t bid_qty[] = {1, 2, 3, 4};
    EXPECT_EQ(books_.append_levels(kId, Side::kBid, bid_px, bid_qty, 4), 0u);
    EXPECT_EQ(bids(), (Book{{100, 1}, {99, 3}, {98, 4}}));
    const std::int64_t ask_px[] = {7, 7};
    const std::uint32_t ask_qty[] = {1, 2};
    EXPECT_EQ(books_.append_levels(kId, Side::kAsk, ask_px, ask_qty, 2), 0u);
    EXPECT_EQ(asks(), (Book{{7, 2}}));

    constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    const std::int64_t extreme_bids[] = {kMax, 5, kMin};
    const std::int64_t extreme_asks[] = {kMin, 5, kMax};
    const std::uint32_t ones[] = {1, 1, 1};
    EXPECT_EQ(books_.append_levels(kId + 1, Side::kBid, extreme_bids, ones, 3), 0u);
    EXPECT_EQ(books_.append_levels(kId + 1, Side::kAsk, extreme_asks, ones, 3), 0u);
    EXPECT_EQ(bids(kId + 1), (Book{{kMax, 1}, {5, 1}, {kMin, 1}}));
    EXPECT_EQ(asks(kId + 1), (Book{{kMin, 1}, {5, 1}, {kMax, 1}}));

    // Appended by the loop itself: key UINT64_MAX stored, then an equal one replaces it.
    const std::int64_t high_asks[] = {5, kMax, kMax};
    const std::uint32_t high_qty[] = {1, 2, 3};
    const std::int64_t low_bids[] = {5, kMin};
    EXPECT_EQ(books_.append_levels(0, Side::kAsk, high_asks, high_qty, 3), 0u);
    EXPECT_EQ(books_.append_levels(0, Side::kBid, low_bids, ones, 2), 0u);
    EXPECT_EQ(asks(0), (Book{{5, 1}, {kMax, 3}}));
    EXPECT_EQ(bids(0), (Book{{5, 1}, {kMin, 1}}));
}

TEST_F(BookRule, DepthIsRespected) {
    for (std::int64_t px = 110; px > 100; --px) books_.append_level(kId, Side::kBid, px, 1);
    EXPECT_EQ(bids(), (Book{{110, 1}, {109, 1}, {108, 1}, {107, 1}}));
    EXPECT_FALSE(books_.append_level(kId, Side::kBid, 100, 1));  // beyond depth: dropped, reported
    for (std::int64_t px = 1; px <= 10; ++px) set(Side::kAsk, px, 1);
    EXPECT_EQ(asks().size(), kDepth);
    EXPECT_EQ(asks().back(), (std::pair<std::int64_t, std::uint32_t>{4, 1}));
    EXPECT_EQ(books_.depth(), kDepth);
}

TEST_F(BookRule, BooksOfInstrumentsAndSidesAreIndependent) {
    set(Side::kBid, 100, 1, 0);
    set(Side::kBid, 200, 2, 1);
    set(Side::kAsk, 201, 3, 1);
    set(Side::kBid, 300, 3, 2);
    books_.clear(1);
    EXPECT_TRUE(bids(1).empty());
    EXPECT_TRUE(asks(1).empty());
    EXPECT_EQ(bids(0), (Book{{100, 1}}));
    EXPECT_EQ(bids(2), (Book{{300, 3}}));
    EXPECT_TRUE(asks(0).empty());
}

// The extreme prices map to the extreme internal keys (a bid at INT64_MIN and
// an ask at INT64_MAX are stored as UINT64_MAX, the empty slot's key); they
// must still be ordinary levels.
TEST_F(BookRule, ExtremePricesAreOrdinaryLevels) {
    constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(set(Side::kBid, kMin, 1), LevelResult::kInserted);
    EXPECT_EQ(set(Side::kBid, kMin, 2), LevelResult::kReplaced);
    EXPECT_EQ(set(Side::kBid, 5, 3), LevelResult::kInserted);
    EXPECT_EQ(bids(), (Book{{5, 3}, {kMin, 2}}));
    EXPECT_EQ(set(Side::kAsk, kMax, 1), LevelResult::kInserted);
    EXPECT_EQ(set(Side::kAsk, kMin, 4), LevelResult::kInserted);
    EXPECT_EQ(asks(), (Book{{kMin, 4}, {kMax, 1}}));
    EXPECT_EQ(del(Side::kBid, kMin), LevelResult::kDeleted);
    EXPECT_EQ(del(Side::kBid, kMin), LevelResult::kMissing);
    EXPECT_EQ(del(Side::kAsk, kMax), LevelResult::kDeleted);
    EXPECT_EQ(bids(), (Book{{5, 3}}));
    EXPECT_EQ(asks(), (Book{{kMin, 4}}));
}

TEST(BookStoreTest, ZeroDepthIsRejected) {
    EXPECT_THROW(L2Book(1, 0), std::invalid_argument);
}

// Differential check against a std::map model for depths around the 8-slot
// search runs (1, 7, 8, 9, 16, 17, 33): random sets, deletes, tops, snapshots.
TEST(BookStoreTest, MatchesAMapModelAtEveryDepth) {
    for (const std::uint32_t depth : {1u, 7u, 8u, 9u, 16u, 17u, 33u}) {
        L2Book books(2, depth);
        std::map<std::int64_t, std::uint32_t, std::greater<>> bid_model;
        std::map<std::int64_t, std::uint32_t> ask_model;
        std::mt19937_64 rng(depth);
        auto trim = [&](auto& m) {
            while (m.size() > depth) m.erase(std::prev(m.end()));
        };
        for (int step = 0; step < 20000; ++step) {
            const bool bid = rng() % 2 == 0;
            const Side s = bid ? Side::kBid : Side::kAsk;
            const std::int64_t px = static_cast<std::int64_t>(rng() % (3 * depth + 3)) - 1;
            const auto qty = static_cast<std::uint32_t>(rng() % 4);  // 0 deletes
            const unsigned op = static_cast<unsigned>(rng() % 100);
            if (op < 2) {  // full quote
                books.set_top(1, px, qty, px + 1, qty);
                bid_model.clear();
                ask_model.clear();
                if (qty) bid_model[px] = qty, ask_model[px + 1] = qty;
            } else if (op < 4) {  // snapshot, best first
                books.clear(1);
                bid_model.clear();
                ask_model.clear();
                for (std::int64_t k = 0; k < static_cast<std::int64_t>(depth) + 2; ++k) {
                    books.append_level(1, Side::kBid, 100 - 2 * k, 1);
                    books.append_level(1, Side::kAsk, 101 + 2 * k, 1);
                    bid_model[100 - 2 * k] = 1;
                    ask_model[101 + 2 * k] = 1;
                }
                trim(bid_model);
                trim(ask_model);
            } else if (op < 30) {
                const LevelResult r = books.delete_level(1, s, px);
                const bool had = bid ? bid_model.erase(px) : ask_model.erase(px);
                ASSERT_EQ(r, had ? LevelResult::kDeleted : LevelResult::kMissing);
            } else {
                books.set_level(1, s, px, qty);
                if (bid) {
                    if (qty) bid_model[px] = qty; else bid_model.erase(px);
                    trim(bid_model);
                } else {
                    if (qty) ask_model[px] = qty; else ask_model.erase(px);
                    trim(ask_model);
                }
            }
            Book want_bids(bid_model.begin(), bid_model.end());
            Book want_asks(ask_model.begin(), ask_model.end());
            Book got_bids, got_asks;
            for (const Level& l : books.side(1, Side::kBid)) got_bids.emplace_back(l.price, l.qty);
            for (const Level& l : books.side(1, Side::kAsk)) got_asks.emplace_back(l.price, l.qty);
            ASSERT_EQ(got_bids, want_bids) << "depth " << depth << " step " << step;
            ASSERT_EQ(got_asks, want_asks) << "depth " << depth << " step " << step;
            ASSERT_TRUE(books.side(0, Side::kBid).empty());  // the neighbour is never touched
        }
    }
}

}  // namespace
}  // namespace tickgate
