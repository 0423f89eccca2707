// The ITCH order book (ITCH50.md "ITCH 5.0 messages and the book"): one
// test per order rule, and a differential test against a std::map model.
#include "tickgate/book/order_book.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tickgate {
namespace {

struct L {
    std::int64_t price;
    std::uint64_t shares;
    std::uint32_t orders;
    bool operator==(const L&) const = default;
};
std::vector<L> levels(const OrderBook& b, std::uint32_t id, Side s) {
    std::vector<L> v;
    for (const OrderLevel& l : b.side(id, s)) v.push_back({l.price, l.shares, l.orders});
    return v;
}

// Instruments 0 .. n-1.
std::vector<std::uint32_t> first_ids(std::uint32_t n) {
    std::vector<std::uint32_t> v(n);
    std::iota(v.begin(), v.end(), 0u);
    return v;
}

// Every side of instruments `ids` against the orders of `model` (a map
// whose values have id, side, shares and price): levels best first, exact.
template <class Model>
void expect_sides_match(const OrderBook& b, const Model& model, std::span<const std::uint32_t> ids, int step) {
    for (const std::uint32_t id : ids)
        for (const Side s : {Side::kBid, Side::kAsk}) {
            std::map<std::int64_t, L> agg;
            for (const auto& [ref, o] : model)
                if (o.id == id && o.side == s) {
                    L& l = agg[o.price];
                    l.price = o.price;
                    l.shares += o.shares;
                    ++l.orders;
                }
            std::vector<L> expected;
            for (const auto& [p, l] : agg) expected.push_back(l);
            if (s == Side::kBid) std::reverse(expected.begin(), expected.end());
            ASSERT_EQ(levels(b, id, s), expected) << "step " << step << ", instrument " << id;
            ASSERT_EQ(b.side(id, s).size(), expected.size());
        }
    ASSERT_EQ(b.open_orders(), model.size());
}

// Empties instrument `id` in the book and in its model.
template <class Model>
void clear_both(OrderBook& b, Model& model, std::uint32_t id) {
    b.clear(id);
    std::erase_if(model, [&](const auto& kv) { return kv.second.id == id; });
}

// One of `refs` at random, taken out of it.
std::uint64_t take_any(std::vector<std::uint64_t>& refs, std::mt19937_64& rng) {
    const std::size_t k = rng() % refs.size();
    const std::uint64_t ref = refs[k];
    refs[k] = refs.back();
    refs.pop_back();
    return ref;
}

// Takes `n` shares from the order at `it` in the book and in its model; a
// reference still live goes back into `refs`.
template <class Model>
void reduce_both(OrderBook& b, Model& model, typename Model::iterator it, std::vector<std::uint64_t>& refs,
                 std::uint32_t n) {
    auto& o = it->second;
    const OrderResult r = b.reduce(o.id, it->first, n);
    if (n < o.shares) {
        ASSERT_EQ(r, OrderResult::kApplied);
        o.shares -= n;
        refs.push_back(it->first);
    } else {
        ASSERT_EQ(r, n == o.shares ? OrderResult::kRemoved : OrderResult::kOverExecution);
        model.erase(it);
    }
}

TEST(OrderBookRule, AddBuildsLevelsBestFirstWithSharesAndOrderCount) {
    OrderBook b(8, 64, 64);
    EXPECT_EQ(b.add(3, 1, Side::kBid, 100, 10000), OrderResult::kApplied);
    EXPECT_EQ(b.add(3, 2, Side::kBid, 50, 10100), OrderResult::kApplied);
    EXPECT_EQ(b.add(3, 3, Side::kBid, 25, 10000), OrderResult::kApplied);
    EXPECT_EQ(b.add(3, 4, Side::kAsk, 10, 10300), OrderResult::kApplied);
    EXPECT_EQ(b.add(3, 5, Side::kAsk, 20, 10200), OrderResult::kApplied);
    EXPECT_EQ(levels(b, 3, Side::kBid), (std::vector<L>{{10100, 50, 1}, {10000, 125, 2}}));
    EXPECT_EQ(levels(b, 3, Side::kAsk), (std::vector<L>{{10200, 20, 1}, {10300, 10, 1}}));
    EXPECT_EQ(b.open_orders(3), 5u);
    const Level best = *b.side(3, Side::kBid).begin();  // read as a Level, like every book
    EXPECT_EQ(best.price, 10100);
    EXPECT_EQ(best.qty, 50u);
}

TEST(OrderBookRule, ExecuteAndCancelReduceSharesAndAtZeroTheOrderIsGone) {
    OrderBook b(8, 64, 64);
    b.add(1, 7, Side::kBid, 100, 500);
    EXPECT_EQ(b.reduce(1, 7, 30), OrderResult::kApplied);
    EXPECT_EQ(levels(b, 1, Side::kBid), (std::vector<L>{{500, 70, 1}}));
    EXPECT_EQ(b.reduce(1, 7, 70), OrderResult::kRemoved);
    EXPECT_TRUE(levels(b, 1, Side::kBid).empty());
    EXPECT_EQ(b.open_orders(1), 0u);
}

TEST(OrderBookRule, OverExecutionRemovesTheOrderAndSaysSo) {
    OrderBook b(8, 64, 64);
    b.add(1, 7, Side::kAsk, 100, 500);
    b.add(1, 8, Side::kAsk, 10, 500);
    EXPECT_EQ(b.reduce(1, 7, 101), OrderResult::kOverExecution);
    EXPECT_EQ(levels(b, 1, Side::kAsk), (std::vector<L>{{500, 10, 1}}));
}

TEST(OrderBookRule, DeleteRemovesTheOrder) {
    OrderBook b(8, 64, 64);
    b.add(1, 7, Side::kAsk, 100, 500);
    EXPECT_EQ(b.remove(1, 7), OrderResult::kRemoved);
    EXPECT_TRUE(levels(b, 1, Side::kAsk).empty());
    EXPECT_EQ(b.remove(1, 7), OrderResult::kUnknownOrder);
}

TEST(OrderBookRule, ReplaceKeepsSideAndInstrumentWithNewReferenceSharesAndPrice) {
    OrderBook b(8, 64, 64);
    b.add(1, 7, Side::kAsk, 100, 500);
    EXPECT_EQ(b.replace(1, 7, 9, 40, 490), OrderResult::kApplied);
    EXPECT_EQ(levels(b, 1, Side::kAsk), (std::vector<L>{{490, 40, 1}}));
    EXPECT_EQ(b.reduce(1, 7, 1), OrderResult::kUnknownOrder);  // the original is gone
    EXPECT_EQ(b.reduce(1, 9, 40), OrderResult::kRemoved);
}

TEST(OrderBookRule, UnknownReferenceChangesNothing) {
    OrderBook b(8, 64, 64);
    b.add(1, 7, Side::kBid, 100, 500);
    EXPECT_EQ(b.reduce(1, 99, 5), OrderResult::kUnknownOrder);
    EXPECT_EQ(b.remove(1, 99), OrderResult::kUnknownOrder);
    EXPECT_EQ(b.replace(1, 99, 100, 5, 5), OrderResult::kUnknownOrder);
    EXPECT_EQ(b.reduce(2, 7, 5), OrderResult::kUnknownOrder);  // another instrument's order
    EXPECT_EQ(levels(b, 1, Side::kBid), (std::vector<L>{{500, 100, 1}}));
}

TEST(OrderBookRule, AddReusingALiveReferenceReplacesThatOrder) {
    OrderBook b(8, 64, 64);
    b.add(1, 7, Side::kBid, 100, 500);
    EXPECT_EQ(b.add(1, 7, Side::kAsk, 5, 600), OrderResult::kApplied);
    EXPECT_TRUE(levels(b, 1, Side::kBid).empty());
    EXPECT_EQ(levels(b, 1, Side::kAsk), (std::vector<L>{{600, 5, 1}}));
    EXPECT_EQ(b.open_orders(), 1u);
}

TEST(OrderBookRule, FullStoreRefusesTheAdd) {
    OrderBook b(8, 2, 64);
    EXPECT_EQ(b.add(1, 1, Side::kBid, 1, 1), OrderResult::kApplied);
    EXPECT_EQ(b.add(1, 2, Side::kBid, 1, 2), OrderResult::kApplied);
    EXPECT_EQ(b.add(1, 3, Side::kBid, 1, 3), OrderResult::kStoreFull);
    EXPECT_EQ(levels(b, 1, Side::kBid), (std::vector<L>{{2, 1, 1}, {1, 1, 1}}));
    b.remove(1, 1);
    EXPECT_EQ(b.add(1, 3, Side::kBid, 1, 3), OrderResult::kApplied);
}

TEST(OrderBookRule, ClearEmptiesOneInstrumentOnly) {
    OrderBook b(8, 64, 64);
    for (std::uint64_t r = 1; r <= 20; ++r) b.add(static_cast<std::uint32_t>(r % 2), r, Side::kBid, 1, static_cast<std::uint32_t>(r));
    b.clear(0);
    EXPECT_EQ(b.open_orders(0), 0u);
    EXPECT_EQ(b.open_orders(1), 10u);
    EXPECT_TRUE(levels(b, 0, Side::kBid).empty());
    for (std::uint64_t r = 1; r <= 19; r += 2) EXPECT_EQ(b.remove(1, r), OrderResult::kRemoved) << r;
}

// Random adds, executions, cancels, deletes and replaces on a few
// instruments against a model (orders in a std::map, levels recomputed),
// with a store small enough to be crowded (many probe collisions and
// backward shifts) and an arena that blocks move in.
TEST(OrderBookDifferential, MatchesAMapModel) {
    struct O {
        std::uint32_t id;
        Side side;
        std::uint32_t shares, price;
    };
    std::map<std::uint64_t, O> model;
    OrderBook b(4, 600, 2048);
    std::mt19937_64 rng(42);
    std::uint64_t next_ref = 1;
    // References dense, then sparse (steps of 1-40: the store's sparse
    // scope, straight to the table), then dense again...: orders added in
    // either mode are found, changed and removed in the other.
    auto take_ref = [&](int step) {
        const std::uint64_t r = next_ref;
        next_ref += (step / 7000) % 2 == 0 ? 1 : 1 + rng() % 40;
        return r;
    };
    auto pick = [&]() -> std::uint64_t {
        if (model.empty()) return 0;
        auto it = model.begin();
        std::advance(it, static_cast<long>(rng() % model.size()));
        return it->first;
    };
    for (int step = 0; step < 60000; ++step) {
        const int op = static_cast<int>(rng() % 10);
        if (op < 4 && model.size() < 590) {
            const O o{static_cast<std::uint32_t>(rng() % 4), rng() % 2 ? Side::kBid : Side::kAsk,
                      static_cast<std::uint32_t>(1 + rng() % 500), static_cast<std::uint32_t>(1000 + rng() % 60)};
            const std::uint64_t ref = take_ref(step);
            ASSERT_EQ(b.add(o.id, ref, o.side, o.shares, o.price), OrderResult::kApplied);
            model[ref] = o;
        } else if (const std::uint64_t ref = pick(); ref != 0) {
            O& o = model[ref];
            if (op < 7) {
                const auto n = static_cast<std::uint32_t>(1 + rng() % 600);
                const OrderResult r = b.reduce(o.id, ref, n);
                if (n < o.shares) {
                    ASSERT_EQ(r, OrderResult::kApplied);
                    o.shares -= n;
                } else {
                    ASSERT_EQ(r, n == o.shares ? OrderResult::kRemoved : OrderResult::kOverExecution);
                    model.erase(ref);
                }
            } else if (op < 8) {
                ASSERT_EQ(b.remove(o.id, ref), OrderResult::kRemoved);
                model.erase(ref);
            } else {
                const O n{o.id, o.side, static_cast<std::uint32_t>(1 + rng() % 500), static_cast<std::uint32_t>(1000 + rng() % 60)};
                const std::uint64_t new_ref = take_ref(step);
                ASSERT_EQ(b.replace(o.id, ref, new_ref, n.shares, n.price), OrderResult::kApplied);
                model.erase(ref);
                model[new_ref] = n;
            }
        }
        if (step % 997 != 0) continue;
        ASSERT_NO_FATAL_FAILURE(expect_sides_match(b, model, first_ids(4), step));
    }
}

// ITCH50.md "Locates and order references are a channel's own": a reference
// names an order within its scope (ids sharing id >> 16, a channel) only.
TEST(OrderBookRule, SameReferenceInTwoScopesNamesTwoOrders) {
    OrderBook b(2 * 65536, 64, 64);
    const std::uint32_t a = 5, other = 65536 + 5;  // locate 5 of channels 0 and 1
    EXPECT_EQ(b.add(a, 1, Side::kBid, 100, 1000), OrderResult::kApplied);
    EXPECT_EQ(b.add(other, 1, Side::kAsk, 200, 2000), OrderResult::kApplied);  // replaces nothing
    EXPECT_EQ(b.open_orders(), 2u);
    EXPECT_EQ(b.remove(other, 1), OrderResult::kRemoved);
    EXPECT_EQ(levels(b, a, Side::kBid), (std::vector<L>{{1000, 100, 1}}));
    EXPECT_EQ(b.reduce(other, 1, 10), OrderResult::kUnknownOrder);
    EXPECT_EQ(b.reduce(a, 1, 10), OrderResult::kApplied);
}

// Item 6 of issue 21: `ref % size` put references that are multiples of the
// table size on one slot (160,000 adds: 26 s). The home mixes the key:
// the store's work per add stays a few slots whatever the references.
TEST(OrderBookRule, ReferencesChosenToCollideCostAFewProbesEach) {
    constexpr std::uint32_t kOrders = 160'000;
    const std::uint64_t table = std::uint64_t{kOrders} + kOrders / 4 + 1;  // the store's size
    for (const std::uint64_t stride : {table, std::uint64_t{1} << 20, std::uint64_t{8}}) {
        OrderBook b(1, kOrders, 16);
        for (std::uint64_t k = 1; k <= kOrders; ++k) ASSERT_EQ(b.add(0, k * stride, Side::kBid, 1, 100), OrderResult::kApplied);
        for (std::uint64_t k = 1; k <= kOrders; k += 2) ASSERT_EQ(b.remove(0, k * stride), OrderResult::kRemoved);
        EXPECT_EQ(b.open_orders(0), kOrders / 2);
        EXPECT_LT(b.probes(), std::uint64_t{40} * kOrders) << "stride " << stride;
    }
}

// Item 6 of issue 21: emptying an instrument walked the whole store (a new
// session per heartbeat: 30 s). It is O(1); its entries are reused or swept
// at a bounded cost per add, and the store stays exact.
TEST(OrderBookRule, ClearingAnInstrumentCostsNoWalkOfTheStoreAndItsEntriesComeBack) {
    constexpr std::uint32_t kOrders = 4096;
    OrderBook b(4, kOrders, 64);
    std::uint64_t ref = 1;
    for (int round = 0; round < 200; ++round) {
        const std::uint32_t id = static_cast<std::uint32_t>(round % 3);
        const std::uint64_t first = ref;
        for (std::uint32_t i = 0; i < kOrders - 10; ++i) ASSERT_EQ(b.add(id, ref++, Side::kAsk, 5, 100 + i % 50), OrderResult::kApplied);
        EXPECT_EQ(b.add(3, first, Side::kBid, 7, 90), OrderResult::kApplied);  // another instrument (same scope) may reuse the reference
        EXPECT_EQ(b.remove(3, first), OrderResult::kRemoved);
        const std::uint64_t before = b.probes();
        b.clear(id);
        EXPECT_EQ(b.probes(), before);  // no store walk
        EXPECT_EQ(b.open_orders(id), 0u);
        EXPECT_EQ(b.open_orders(), 0u);
        EXPECT_TRUE(levels(b, id, Side::kAsk).empty());
        EXPECT_EQ(b.reduce(id, first, 1), OrderResult::kUnknownOrder);  // gone with its instrument
    }
    // 200 rounds of ~4,086 adds at the highest load the store allows (live
    // orders at 4/5 of it), the removed entries swept or reused on the way:
    // a bounded number of slots per add (the old store walk: 5,121 per clear).
    EXPECT_LT(b.probes(), std::uint64_t{100} * 200 * kOrders);
}

// An order a newer reference moved out of its window slot waits in a
// stash of 8 before it enters the table (its table line fetched
// meanwhile): there it is found, changed and removed like any other, it
// counts as open, and it is gone with its instrument when that is cleared
// (a later order with its reference is a new one).
TEST(OrderBookRule, AnOrderOnItsWayToTheTableIsFoundChangedAndCleared) {
    OrderBook b(2, 4096, 1024);  // a window of 4,096 slots: references r and r + 4,096 share one
    std::set<std::pair<std::uint32_t, std::uint64_t>> live;
    std::uint64_t next = 1;  // dense references, as a venue assigns them (sparse ones go straight to the table)
    auto add = [&](std::uint32_t id, std::uint32_t price) {
        ASSERT_EQ(b.add(id, next, Side::kBid, 10, price), OrderResult::kApplied) << next;
        live.insert({id, next++});
    };
    auto pass = [&](std::uint64_t until) {  // orders that come and go on instrument 0, up to reference `until`
        for (; next <= until; ++next) {
            ASSERT_EQ(b.add(0, next, Side::kBid, 10, 900), OrderResult::kApplied) << next;
            ASSERT_EQ(b.remove(0, next), OrderResult::kRemoved) << next;
        }
    };
    for (int i = 0; i < 5; ++i) add(0, 1000);  // 1 .. 5
    ASSERT_NO_FATAL_FAILURE(pass(4096));
    for (int i = 0; i < 4; ++i) add(0, 1000);  // 4,097 .. 4,100 move 1 .. 4 out of their slots: into the stash
    EXPECT_EQ(b.open_orders(), 9u);
    EXPECT_EQ(b.reduce(0, 1, 4), OrderResult::kApplied);
    EXPECT_EQ(b.remove(0, 2), OrderResult::kRemoved);
    EXPECT_EQ(b.replace(0, 3, next, 5, 1100), OrderResult::kApplied);  // 4,101 moves 5 out
    live.insert({0, next++});
    EXPECT_EQ(b.reduce(0, 4, 10), OrderResult::kRemoved);
    EXPECT_EQ(b.remove(0, 2), OrderResult::kUnknownOrder);
    for (const std::uint64_t gone : {2, 3, 4}) live.erase({0, gone});
    EXPECT_EQ(levels(b, 0, Side::kBid), (std::vector<L>{{1100, 5, 1}, {1000, 56, 6}}));
    // Instrument 1's orders moved out by instrument 0's (12 on to the table, 8 in the stash), then cleared.
    const std::uint64_t first1 = next;
    for (int i = 0; i < 20; ++i) add(1, 2000);
    ASSERT_NO_FATAL_FAILURE(pass(first1 + 4096 - 1));
    for (int i = 0; i < 20; ++i) add(0, 1000);
    b.clear(1);
    for (std::uint64_t ref = first1; ref < first1 + 20; ++ref) {
        ASSERT_EQ(b.remove(1, ref), OrderResult::kUnknownOrder) << ref;
        live.erase({1, ref});
    }
    EXPECT_EQ(b.open_orders(), live.size());
    // The stale entries leave the stash as new ones come, counted nowhere.
    const std::uint64_t first0 = next - 20;
    ASSERT_NO_FATAL_FAILURE(pass(first0 + 4096 - 1));
    for (int i = 0; i < 20; ++i) add(1, 3000);  // instrument 0's last 20 moved out
    EXPECT_EQ(b.open_orders(), live.size());
    EXPECT_EQ(levels(b, 1, Side::kBid), (std::vector<L>{{3000, 200, 20}}));
    for (const auto& [id, ref] : live) ASSERT_EQ(b.remove(id, ref), OrderResult::kRemoved) << id << " " << ref;
    EXPECT_EQ(b.open_orders(), 0u);
    EXPECT_TRUE(b.side(0, Side::kBid).empty());
    EXPECT_TRUE(b.side(1, Side::kBid).empty());
}

// prefetch() (ITCH's pass before a datagram is applied) is a hint: for any
// instrument, reference and side, in the window, the table or a sparse
// scope, it reads no order and changes nothing, not even the probe count.
TEST(OrderBookRule, APrefetchHintChangesNothing) {
    constexpr std::uint32_t kOrders = 4096;
    OrderBook b(2 * 65536, kOrders, 256);
    for (std::uint64_t ref = 1; ref <= 3000; ++ref)  // dense: the window, the oldest moved to the table
        ASSERT_EQ(b.add(7, ref, ref % 2 ? Side::kBid : Side::kAsk, 10, 1000 + ref % 40), OrderResult::kApplied);
    for (std::uint64_t ref = 100; ref <= 100 * 200; ref += 100)  // sparse: the table
        ASSERT_EQ(b.add(65536 + 3, ref, Side::kAsk, 5, 2000), OrderResult::kApplied);
    const auto bids = levels(b, 7, Side::kBid), asks = levels(b, 65536 + 3, Side::kAsk);
    const std::uint64_t probes = b.probes();
    const Side sides[] = {Side::kBid, Side::kAsk};
    for (const std::uint32_t id : {0u, 7u, 65536u + 3, 2 * 65536u - 1})
        for (const std::uint64_t ref : {std::uint64_t{1}, std::uint64_t{2999}, std::uint64_t{5000}, std::uint64_t{100 * 150}, UINT64_MAX}) {
            b.prefetch(id, ref, nullptr);
            for (const Side& s : sides) b.prefetch(id, ref, &s);
        }
    EXPECT_EQ(b.probes(), probes);
    EXPECT_EQ(b.open_orders(), 3000u + 200u);
    EXPECT_EQ(levels(b, 7, Side::kBid), bids);
    EXPECT_EQ(levels(b, 65536 + 3, Side::kAsk), asks);
    EXPECT_EQ(b.remove(7, 1), OrderResult::kRemoved);  // the oldest, in the table, still found
    EXPECT_EQ(b.remove(65536 + 3, 100 * 150), OrderResult::kRemoved);
}

// The generation of an emptied instrument wraps after 65,535 clears with
// orders: an entry stale since then (in the window or the stash) must not
// come back to life, nor one of the generation the wrap leaves (found in
// review: swept before the wrap it was still live, so it came back 65,536
// clears later).
TEST(OrderBookRule, AnOrderOfAnEmptiedInstrumentNeverComesBack) {
    auto rounds = [](OrderBook& b, std::uint64_t ref, int n) {
        for (int round = 0; round < n; ++round) {
            ASSERT_EQ(b.add(0, ref, Side::kBid, 5, 100), OrderResult::kApplied);
            b.clear(0);
            b.clear(1);  // no orders: nothing to retire
        }
    };
    OrderBook b(2, 64, 64);  // a window of 64 slots
    for (std::uint64_t ref = 1; ref <= 65; ++ref) {  // dense references: 65 moves 1 out of its slot, into the stash
        ASSERT_EQ(b.add(0, ref, Side::kBid, 5, 100), OrderResult::kApplied);
        if (ref >= 2 && ref <= 64) {
            ASSERT_EQ(b.remove(0, ref), OrderResult::kRemoved);
        }
    }
    b.clear(0);  // generation 1; the stale entries are of generation 0
    ASSERT_NO_FATAL_FAILURE(rounds(b, 500, 65'535));  // back at generation 0
    EXPECT_EQ(b.reduce(0, 1, 1), OrderResult::kUnknownOrder);
    EXPECT_EQ(b.reduce(0, 65, 1), OrderResult::kUnknownOrder);
    EXPECT_EQ(b.open_orders(), 0u);
    EXPECT_TRUE(levels(b, 0, Side::kBid).empty());

    OrderBook c(2, 64, 64);
    ASSERT_NO_FATAL_FAILURE(rounds(c, 1, 65'535));  // generation 65,535
    ASSERT_EQ(c.add(0, 5, Side::kBid, 5, 100), OrderResult::kApplied);  // in its window slot
    c.clear(0);                                     // the wrap, to generation 0
    ASSERT_NO_FATAL_FAILURE(rounds(c, 1, 65'535));  // back at generation 65,535
    EXPECT_EQ(c.reduce(0, 5, 1), OrderResult::kUnknownOrder);
    EXPECT_EQ(c.open_orders(), 0u);
    EXPECT_TRUE(levels(c, 0, Side::kBid).empty());
}

// Found by fuzz_itch50: an add (or replace) of 0 shares made a level of 0
// shares. Such an order would be gone at once, as an execution to 0: none is
// kept, and a live order it reuses the reference of is gone too.
TEST(OrderBookRule, AnOrderOfNoSharesIsNotKept) {
    OrderBook b(2, 64, 64);
    EXPECT_EQ(b.add(1, 7, Side::kBid, 0, 500), OrderResult::kRemoved);
    EXPECT_EQ(b.open_orders(1), 0u);
    EXPECT_TRUE(levels(b, 1, Side::kBid).empty());
    b.add(1, 8, Side::kAsk, 10, 600);
    EXPECT_EQ(b.replace(1, 8, 9, 0, 610), OrderResult::kRemoved);
    EXPECT_TRUE(levels(b, 1, Side::kAsk).empty());
    EXPECT_EQ(b.open_orders(), 0u);
}

// Item 6 of issue 21: levels lived in a sorted flat array per side, so
// 300,000 distinct prices, each a new level at the far end, moved the whole
// array per add (12 MB of ITCH: 15 s). Level inserts, lookups and erases
// are at most logarithmic: the book's work per add (store slots plus level
// nodes visited, probes()) stays within a few times log2 of the levels,
// wherever the price lands. The old array moved 150,000 levels per add on
// average here.
TEST(OrderBookRule, LevelInsertsStayLogarithmicWith300kDistinctPrices) {
    constexpr std::uint32_t kLevels = 300'000;
    constexpr std::uint64_t kPerAdd = 3 * 19 + 8;  // 3 log2(300,000), and the store's few slots
    OrderBook b(2, 4 * kLevels, 2 * kLevels + 4096);  // the store at 1/2 load: its share of probes() small
    std::uint64_t ref = 1;
    // Bids each below the others and asks each above (the far end), then
    // bids in between the levels already there (one sixth of the way down).
    for (std::uint32_t i = 0; i < kLevels; ++i) {
        ASSERT_EQ(b.add(0, ref++, Side::kBid, 10, 2'000'000 - 2 * i), OrderResult::kApplied);
        ASSERT_EQ(b.add(1, ref++, Side::kAsk, 10, 1'000'000 + i), OrderResult::kApplied);
    }
    EXPECT_LT(b.probes(), kPerAdd * 2 * kLevels);
    const std::uint64_t before_middle = b.probes();
    for (std::uint32_t i = 0; i < 1000; ++i)
        ASSERT_EQ(b.add(0, ref++, Side::kBid, 10, 1'900'001 - 2 * i), OrderResult::kApplied);
    EXPECT_LT(b.probes() - before_middle, kPerAdd * 1000);
    // Deep levels emptied (each order its level's last): logarithmic too.
    const std::uint64_t before_erase = b.probes();
    for (std::uint64_t r = 1; r <= 2 * 1000; r += 2) ASSERT_EQ(b.remove(0, r), OrderResult::kRemoved);
    EXPECT_LT(b.probes() - before_erase, kPerAdd * 1000);

    EXPECT_EQ(b.side(0, Side::kBid).size(), kLevels - 1000 + 1000);
    EXPECT_EQ(b.side(1, Side::kAsk).size(), kLevels);
    std::int64_t prev = INT64_MAX;
    std::size_t n = 0;
    for (const OrderLevel& l : b.side(0, Side::kBid)) {  // best first, strictly descending
        ASSERT_LT(l.price, prev);
        ASSERT_EQ(l.orders, 1u);
        prev = l.price;
        ++n;
    }
    EXPECT_EQ(n, b.side(0, Side::kBid).size());
    EXPECT_EQ((*b.side(0, Side::kBid).begin()).price, 2'000'000 - 2 * 1000);  // the first 1,000 bids removed
    EXPECT_EQ((*b.side(1, Side::kAsk).begin()).price, 1'000'000);
}

// The common case: an update at or near the touch costs a node or two,
// however deep the book (the add searches from the best level).
TEST(OrderBookRule, AnAddNearTheTouchVisitsAFewLevelsWhateverTheDepth) {
    OrderBook b(1, 2'000'000, 200'000);  // the store at 1/20 load: a slot or two of probes() per add
    std::uint64_t ref = 1;
    for (std::uint32_t i = 0; i < 100'000; ++i) ASSERT_EQ(b.add(0, ref++, Side::kBid, 1, 1'000'000 + 4 * i), OrderResult::kApplied);
    const std::uint32_t best = 1'000'000 + 4 * 99'999;
    for (const std::uint32_t price : {best + 4, best + 4, best + 1, best - 3, best - 4}) {  // new best, join it, then just below
        const std::uint64_t before = b.probes();
        ASSERT_EQ(b.add(0, ref++, Side::kBid, 1, price), OrderResult::kApplied);
        EXPECT_LE(b.probes() - before, 16u) << price;
    }
    EXPECT_EQ((*b.side(0, Side::kBid).begin()).price, best + 4);
    EXPECT_EQ((*b.side(0, Side::kBid).begin()).orders, 2u);
}

// Capacity is fixed at start-up: a side of up to 64 levels is a flat block
// of the arena (2 × max_levels), a deeper one a tree of the pool
// (max_levels nodes). A new level neither has room for is refused
// (kStoreFull); an order on an existing level is not. A tree emptied order
// by order gives its nodes back and its side is flat again; a side emptied
// at once (clear) gives its whole tree back: every node usable again.
TEST(OrderBookRule, TheLevelPoolIsFixedAndEmptiedSidesGiveTheirLevelsBack) {
    OrderBook b(4, 1024, 100);
    std::uint64_t ref = 1;
    const auto fill = [&](std::uint32_t id, Side s) {
        const std::uint64_t first = ref;
        for (std::uint32_t p = 1; p <= 100; ++p) EXPECT_EQ(b.add(id, ref++, s, 1, 1000 + p), OrderResult::kApplied) << p;
        return first;
    };
    const std::uint64_t first = fill(0, Side::kBid);  // 64 flat, then a tree of 65 .. 100
    EXPECT_EQ(b.side(0, Side::kBid).size(), 100u);
    EXPECT_EQ(b.add(0, ref++, Side::kBid, 1, 5000), OrderResult::kStoreFull);  // the pool is full
    EXPECT_EQ(b.add(0, ref++, Side::kBid, 1, 1050), OrderResult::kApplied);    // an existing level
    for (std::uint32_t p = 1; p <= 64; ++p) EXPECT_EQ(b.add(1, ref++, Side::kAsk, 1, p), OrderResult::kApplied);  // flat
    EXPECT_EQ(b.add(1, ref++, Side::kAsk, 1, 65), OrderResult::kStoreFull);  // no node for a 65-level tree
    for (std::uint64_t r = first; r < first + 100; ++r) ASSERT_EQ(b.remove(0, r), OrderResult::kRemoved);
    EXPECT_EQ(levels(b, 0, Side::kBid), (std::vector<L>{{1050, 1, 1}}));  // flat again, one level
    b.clear(0);
    for (int round = 0; round < 20; ++round) {
        const auto id = static_cast<std::uint32_t>(2 + round % 2);
        fill(id, Side::kBid);
        b.clear(id);
    }
    fill(3, Side::kAsk);
    std::vector<L> want;
    for (std::uint32_t p = 1; p <= 100; ++p) want.push_back({1000 + p, 1, 1});
    EXPECT_EQ(levels(b, 3, Side::kAsk), want);
    EXPECT_EQ(levels(b, 1, Side::kAsk).size(), 64u);
}

// The window (issue 24): a new order takes its reference's slot; an order
// still live there moves to the table. References that all share one slot
// (multiples of the window's size) each move on once, found and removed
// exactly, at a few probes each.
TEST(OrderBookRule, OrdersSharingAWindowSlotMoveToTheTableAndStayExact) {
    constexpr std::uint32_t kOrders = 4096;  // the window: 4,096 slots
    OrderBook b(1, kOrders, 64);
    for (std::uint64_t k = 1; k < kOrders; ++k)
        ASSERT_EQ(b.add(0, k * kOrders, Side::kBid, 2, 100 + k % 8), OrderResult::kApplied);
    for (std::uint64_t k = 1; k < kOrders; k += 2) ASSERT_EQ(b.reduce(0, k * kOrders, 1), OrderResult::kApplied);
    for (std::uint64_t k = 1; k < kOrders; ++k)
        ASSERT_EQ(b.remove(0, k * kOrders), OrderResult::kRemoved) << k;
    EXPECT_EQ(b.open_orders(), 0u);
    EXPECT_TRUE(levels(b, 0, Side::kBid).empty());
    EXPECT_LT(b.probes(), std::uint64_t{40} * kOrders);
}

// A reference below the scope's highest is looked up (only a higher one
// can skip that): reused while live, it replaces that order.
TEST(OrderBookRule, AnAddReusingAnOlderLiveReferenceReplacesIt) {
    OrderBook b(8, 64, 64);
    b.add(1, 7, Side::kBid, 100, 500);
    b.add(1, 9, Side::kBid, 10, 500);
    EXPECT_EQ(b.add(1, 7, Side::kAsk, 5, 600), OrderResult::kApplied);
    EXPECT_EQ(levels(b, 1, Side::kBid), (std::vector<L>{{500, 10, 1}}));
    EXPECT_EQ(levels(b, 1, Side::kAsk), (std::vector<L>{{600, 5, 1}}));
    EXPECT_EQ(b.open_orders(), 2u);
}

// Two channels' references land in one window slot: each scope's order is its own.
TEST(OrderBookRule, ReferencesOfTwoScopesSharingAWindowSlotNameTwoOrders) {
    OrderBook b(2 * 65536, 256, 64);  // a window of 256 slots
    const std::uint32_t a = 5, other = 65536 + 5;
    for (std::uint64_t r = 1; r <= 128; ++r) {  // half the window each, at their own offsets: most slots shared
        ASSERT_EQ(b.add(a, r, Side::kBid, 1, 1000), OrderResult::kApplied);
        ASSERT_EQ(b.add(other, r, Side::kAsk, 2, 2000), OrderResult::kApplied);
    }
    for (std::uint64_t r = 1; r <= 128; r += 2) ASSERT_EQ(b.remove(other, r), OrderResult::kRemoved);
    EXPECT_EQ(levels(b, a, Side::kBid), (std::vector<L>{{1000, 128, 128}}));
    EXPECT_EQ(levels(b, other, Side::kAsk), (std::vector<L>{{2000, 128, 64}}));
    for (std::uint64_t r = 1; r <= 128; ++r) ASSERT_EQ(b.reduce(a, r, 1), OrderResult::kRemoved);
    EXPECT_EQ(b.open_orders(), 64u);
}

// An order added to a tree side keeps its level's node: its executions,
// cancels and delete go straight to the level, however deep the side.
TEST(OrderBookRule, AnOrderOnADeepSideChangesWithoutASearch) {
    OrderBook b(1, 400'000, 200'000);
    std::uint64_t ref = 1;
    for (std::uint32_t i = 0; i < 100'000; ++i) ASSERT_EQ(b.add(0, ref++, Side::kAsk, 10, 1'000'000 + 2 * i), OrderResult::kApplied);
    for (std::uint64_t r = 50'000; r < 50'100; ++r) {
        const std::uint64_t before = b.probes();
        ASSERT_EQ(b.reduce(0, r, 1), OrderResult::kApplied);
        EXPECT_LE(b.probes() - before, 2u) << r;  // its slot and its node
    }
    EXPECT_EQ(b.side(0, Side::kAsk).size(), 100'000u);
}

// References reused at random (not increasing), two scopes, a window and a
// table small enough to be crowded, against a model.
TEST(OrderBookDifferential, MatchesAMapModelWithReusedReferencesInTwoScopes) {
    struct O {
        std::uint32_t id;
        Side side;
        std::uint32_t shares, price;
    };
    std::map<std::pair<std::uint32_t, std::uint64_t>, O> model;  // (scope, ref)
    OrderBook b(2 * 65536, 512, 2048);  // a window of 512 slots
    std::mt19937_64 rng(24);
    const std::uint32_t ids[] = {1, 2, 65536 + 1};
    for (int step = 0; step < 80'000; ++step) {
        const std::uint32_t id = ids[rng() % 3];
        const std::uint32_t scope = id >> 16;
        const std::uint64_t ref = rng() % 2 ? rng() % 700 : 512 * (rng() % 8);  // many share a slot
        const auto key = std::make_pair(scope, ref);
        const auto it = model.find(key);
        const int op = static_cast<int>(rng() % 4);
        if (op == 0 && (it != model.end() || model.size() < 500)) {
            const O o{id, rng() % 2 ? Side::kBid : Side::kAsk, static_cast<std::uint32_t>(1 + rng() % 50),
                      static_cast<std::uint32_t>(1000 + rng() % 40)};
            ASSERT_EQ(b.add(id, ref, o.side, o.shares, o.price), OrderResult::kApplied);
            model[key] = o;
        } else if (op == 1) {
            const auto n = static_cast<std::uint32_t>(1 + rng() % 60);
            const OrderResult r = b.reduce(id, ref, n);
            if (it == model.end() || it->second.id != id) {
                ASSERT_EQ(r, OrderResult::kUnknownOrder);
            } else if (n < it->second.shares) {
                ASSERT_EQ(r, OrderResult::kApplied);
                it->second.shares -= n;
            } else {
                ASSERT_EQ(r, n == it->second.shares ? OrderResult::kRemoved : OrderResult::kOverExecution);
                model.erase(it);
            }
        } else if (op == 2) {
            const OrderResult r = b.remove(id, ref);
            if (it == model.end() || it->second.id != id) {
                ASSERT_EQ(r, OrderResult::kUnknownOrder);
            } else {
                ASSERT_EQ(r, OrderResult::kRemoved);
                model.erase(it);
            }
        } else if (it != model.end() && it->second.id == id && model.size() < 500) {
            const std::uint64_t new_ref = rng() % 700;
            const O n{id, it->second.side, static_cast<std::uint32_t>(1 + rng() % 50), static_cast<std::uint32_t>(1000 + rng() % 40)};
            ASSERT_EQ(b.replace(id, ref, new_ref, n.shares, n.price), OrderResult::kApplied);
            model.erase(it);
            model[std::make_pair(scope, new_ref)] = n;  // a live new_ref is replaced, as by an add
        }
        if (step % 1999 != 0) continue;
        ASSERT_NO_FATAL_FAILURE(expect_sides_match(b, model, ids, step));
    }
}

// The level trees against a model over wide price ranges (thousands of
// levels a side, so rotations and erases of inner nodes happen), with
// instruments emptied now and then (trees given back and taken apart).
TEST(OrderBookDifferential, MatchesAMapModelWithDeepBooksAndClears) {
    struct O {
        std::uint32_t id;
        Side side;
        std::uint32_t shares, price;
    };
    std::map<std::uint64_t, O> model;
    OrderBook b(3, 8192, 6000);
    std::mt19937_64 rng(7);
    std::uint64_t next_ref = 1;
    std::vector<std::uint64_t> refs;
    for (int step = 0; step < 120'000; ++step) {
        const int op = static_cast<int>(rng() % 100);
        if (op < 50 && model.size() < 5000) {
            const O o{static_cast<std::uint32_t>(rng() % 3), rng() % 2 ? Side::kBid : Side::kAsk,
                      static_cast<std::uint32_t>(1 + rng() % 50), static_cast<std::uint32_t>(10'000 + rng() % 3000)};
            ASSERT_EQ(b.add(o.id, next_ref, o.side, o.shares, o.price), OrderResult::kApplied);
            model[next_ref] = o;
            refs.push_back(next_ref++);
        } else if (op == 50) {
            clear_both(b, model, static_cast<std::uint32_t>(rng() % 3));
        } else if (!refs.empty()) {
            const std::uint64_t ref = take_any(refs, rng);
            const auto it = model.find(ref);
            if (it == model.end()) continue;  // emptied with its instrument
            if (op < 80) {
                ASSERT_EQ(b.remove(it->second.id, ref), OrderResult::kRemoved);
                model.erase(it);
            } else {
                ASSERT_NO_FATAL_FAILURE(reduce_both(b, model, it, refs, static_cast<std::uint32_t>(1 + rng() % 40)));
            }
        }
        if (step % 4999 != 0) continue;
        ASSERT_NO_FATAL_FAILURE(expect_sides_match(b, model, first_ids(3), step));
    }
}

// Ladders (a side's levels on the tick grid, base + tick x 0..63): a level
// is found from its price alone, one probe an add or a removal however
// many levels the side holds; the side reads best first like any other.
TEST(OrderBookRule, ALadderFindsALevelByItsPriceInOneProbe) {
    OrderBook b(1, 1024, 1024);  // ladders_for(1, 1024): both sides
    std::uint64_t ref = 1;
    for (std::uint32_t t = 0; t < 40; ++t) {
        const std::uint64_t before = b.probes();
        ASSERT_EQ(b.add(0, ref++, Side::kBid, 10, 500'000 - 100 * t), OrderResult::kApplied);
        ASSERT_EQ(b.add(0, ref++, Side::kAsk, 20, 500'100 + 100 * t), OrderResult::kApplied);
        if (t > 33) {  // past the one move of each side (t = 32 asks, 33 bids)
            EXPECT_LE(b.probes() - before, 4u) << t;  // two adds: a window slot and a level each
        }
    }
    ASSERT_EQ(b.side(0, Side::kBid).size(), 40u);
    std::int64_t bid = 500'000, ask = 500'100;
    for (const OrderLevel& l : b.side(0, Side::kBid)) EXPECT_EQ(l.price, std::exchange(bid, bid - 100));
    for (const OrderLevel& l : b.side(0, Side::kAsk)) EXPECT_EQ(l.price, std::exchange(ask, ask + 100));
    const std::uint64_t before = b.probes();
    ASSERT_EQ(b.remove(0, 41), OrderResult::kRemoved);  // a bid 20 ticks down: its level gone
    EXPECT_LE(b.probes() - before, 2u);
    EXPECT_EQ(b.side(0, Side::kBid).size(), 39u);
}

// A ladder moves along the grid while its levels and the new price span
// its slots, else takes a larger one (64, then 256, then 1,024 slots),
// every level kept and each later add one probe again; beyond 1,024 ticks,
// or off the grid (a sub-penny price), the side becomes a sorted flat side
// with every level kept (a tree past 64 levels); emptied, it starts a
// ladder again where the prices are.
TEST(OrderBookRule, ALadderMovesAlongTheGridWidensAndOtherwiseBecomesFlatWithEveryLevelKept) {
    OrderBook b(2, 4096, 4096);  // ladders_for(2, 4096): 64 units, room for a 16-word ladder
    std::uint64_t ref = 1;
    std::vector<std::int64_t> asks;
    auto prices = [&](std::uint32_t id, Side s) {
        std::vector<std::int64_t> v;
        for (const OrderLevel& l : b.side(id, s)) v.push_back(l.price);
        return v;
    };
    auto add_ask = [&](std::uint32_t t) {  // the cost of adding an ask t ticks up
        const std::uint64_t before = b.probes();
        asks.push_back(1'000'000 + 100 * t);
        EXPECT_EQ(b.add(0, ref++, Side::kAsk, 1, static_cast<std::uint32_t>(asks.back())), OrderResult::kApplied);
        return b.probes() - before;
    };
    for (std::uint32_t t = 0; t < 64; ++t) add_ask(t);  // 64 slots up from the first: the ladder moves twice
    EXPECT_EQ(prices(0, Side::kAsk), asks);
    EXPECT_EQ(add_ask(64), 2u + 64);  // a 65th slot: 256 slots centred on the 65 levels, which it copies
    for (std::uint32_t t = 65; t <= 160; ++t) ASSERT_EQ(add_ask(t), 2u) << t;  // each its slot, no move
    EXPECT_EQ(prices(0, Side::kAsk), asks);
    // Past its last slot with 97 levels added since it started, fewer than
    // the 161 it would move: 1,024 slots instead, centred on ticks 0 .. 161.
    EXPECT_EQ(add_ask(161), 2u + 161);
    for (std::uint32_t t = 162; t <= 592; t += 7) ASSERT_EQ(add_ask(t), 2u) << t;
    EXPECT_EQ(prices(0, Side::kAsk), asks);
    const std::size_t n = asks.size();
    EXPECT_GT(add_ask(1024), 2u + n);  // 1,025 ticks: a tree of every level
    EXPECT_EQ(prices(0, Side::kAsk), asks);
    EXPECT_EQ(levels(b, 0, Side::kAsk).front(), (L{1'000'000, 1, 1}));
    std::vector<std::int64_t> left;  // the tree keeps working: every other level gone, one more
    for (std::uint64_t r = 1; r < ref; ++r) {
        if (r % 2 == 0) left.push_back(asks[r - 1]);
        else ASSERT_EQ(b.remove(0, r), OrderResult::kRemoved) << r;
    }
    asks = left;
    add_ask(2000);
    EXPECT_EQ(prices(0, Side::kAsk), asks);
    for (std::uint64_t r = 2; r < ref; r += r + 1 < ref ? 2 : 1) ASSERT_EQ(b.remove(0, r), OrderResult::kRemoved) << r;
    EXPECT_TRUE(b.side(0, Side::kAsk).empty());

    // Bids walking down across a 256-slot ladder's words read best first.
    b.clear(0);
    std::vector<std::int64_t> bids;
    for (std::uint32_t t = 0; t < 200; t += 3) {
        bids.push_back(2'000'000 - 100 * t);
        ASSERT_EQ(b.add(0, ref++, Side::kBid, 1 + t, static_cast<std::uint32_t>(bids.back())), OrderResult::kApplied);
    }
    EXPECT_EQ(prices(0, Side::kBid), bids);

    // Off the grid: flat, exact, and the bids of instrument 1 untouched.
    b.clear(0);
    ASSERT_EQ(b.add(1, ref++, Side::kBid, 5, 700'000), OrderResult::kApplied);
    ASSERT_EQ(b.add(0, ref++, Side::kBid, 1, 20'000), OrderResult::kApplied);
    ASSERT_EQ(b.add(0, ref++, Side::kBid, 2, 20'050), OrderResult::kApplied);  // half a cent
    ASSERT_EQ(b.add(0, ref++, Side::kBid, 3, 19'900), OrderResult::kApplied);
    ASSERT_EQ(b.add(0, ref++, Side::kBid, 4, 20'050), OrderResult::kApplied);
    EXPECT_EQ(levels(b, 0, Side::kBid), (std::vector<L>{{20'050, 6, 2}, {20'000, 1, 1}, {19'900, 3, 1}}));
    EXPECT_EQ(levels(b, 1, Side::kBid), (std::vector<L>{{700'000, 5, 1}}));
    EXPECT_THROW(OrderBook(1, 1, 1, 16, 0), std::invalid_argument);
}

// A ladder larger than one word moves along the grid only once as many
// levels were added since its last move as it holds. 128 levels on a
// 256-slot ladder, and a level 100 ticks beyond each end in turn, each
// removed at once: without that budget each of those adds moves the 128
// levels (12,800 moved over the 100 round trips); with it, the first takes
// 1,024 slots (the 128 copied once) and the others fit. Every level is kept.
TEST(OrderBookRule, ALargeLadderMovesOnlyOnTheLevelsAddedSinceItsLastMove) {
    OrderBook b(1, 4096, 4096);
    std::uint64_t ref = 1;
    std::vector<L> expected;
    for (std::uint32_t t = 0; t < 128; ++t) {  // the 65th level takes 256 slots
        ASSERT_EQ(b.add(0, ref++, Side::kAsk, 1, 1'000'000 + 100 * t), OrderResult::kApplied);
        expected.push_back({1'000'000 + 100 * static_cast<std::int64_t>(t), 1, 1});
    }
    const std::uint64_t before = b.probes();
    for (int trip = 0; trip < 100; ++trip) {
        const std::uint32_t price = trip % 2 == 0 ? 1'000'000 + 100 * (127 + 100) : 1'000'000 - 100 * 100;
        ASSERT_EQ(b.add(0, ref, Side::kAsk, 1, price), OrderResult::kApplied) << trip;
        ASSERT_EQ(b.remove(0, ref++), OrderResult::kRemoved) << trip;
    }
    EXPECT_LT(b.probes() - before, 1'000u);  // 128 copied, 2 probes a message
    EXPECT_EQ(levels(b, 0, Side::kAsk), expected);
}

// A side whose prices outgrew its ladder once stays flat, emptied or not,
// until it is cleared (a new session): restarting a ladder on each emptied
// side and giving it up again copied the levels each time. Seen in the
// work: 40 bids each below the others cost a level moved per level there
// already on a flat side, one slot each on a ladder.
TEST(OrderBookRule, ASideThatOutgrewItsLadderStaysFlatUntilCleared) {
    OrderBook b(1, 4096, 4096);
    std::uint64_t ref = 1;
    auto forty_bids_down = [&] {
        const std::uint64_t before = b.probes();
        const std::uint64_t first = ref;
        for (std::uint32_t t = 0; t < 40; ++t) EXPECT_EQ(b.add(0, ref++, Side::kBid, 1, 900'000 - 100 * t), OrderResult::kApplied);
        const std::uint64_t cost = b.probes() - before;
        for (std::uint64_t r = first; r < ref; ++r) EXPECT_EQ(b.remove(0, r), OrderResult::kRemoved);
        return cost;
    };
    const std::uint64_t ladder = forty_bids_down();
    ASSERT_EQ(b.add(0, ref++, Side::kBid, 1, 500'000), OrderResult::kApplied);
    ASSERT_EQ(b.add(0, ref++, Side::kBid, 1, 500'001), OrderResult::kApplied);  // off the grid: flat
    ASSERT_EQ(b.remove(0, ref - 1), OrderResult::kRemoved);
    ASSERT_EQ(b.remove(0, ref - 2), OrderResult::kRemoved);
    const std::uint64_t flat = forty_bids_down();
    EXPECT_LT(ladder, 40u * 4);
    EXPECT_GE(flat, 39u * 40 / 2);  // 0 + 1 + ... + 39 levels moved
    b.clear(0);
    EXPECT_EQ(forty_bids_down(), ladder);
}

// Prices on the grid around a touch that walks (spans beyond 64 slots
// now and then), a few off it, clears, and more sides than ladders: every
// shape (ladder, moving ladder, flat, tree) and every change between them
// against a model.
// `max_levels` sizes the ladder pool; orders land up to `near_ticks` from
// the touch, one in eight up to `far_ticks`.
void ladders_against_a_model(std::uint32_t max_levels, std::uint32_t near_ticks, std::uint32_t far_ticks) {
    struct O {
        std::uint32_t id;
        Side side;
        std::uint32_t shares, price;
    };
    constexpr std::uint32_t kIds = 6;
    std::map<std::uint64_t, O> model;
    OrderBook b(kIds, 8192, max_levels);
    std::mt19937_64 rng(11);
    std::uint64_t next_ref = 1;
    std::vector<std::uint64_t> refs;
    std::vector<std::uint32_t> touch(kIds, 1'000'000);
    for (int step = 0; step < 200'000; ++step) {
        const int op = static_cast<int>(rng() % 100);
        if (op < 48 && model.size() < 3000) {
            const auto id = static_cast<std::uint32_t>(rng() % kIds);
            if (rng() % 50 == 0) touch[id] += rng() % 2 ? 100 : -100;
            const Side side = rng() % 2 ? Side::kBid : Side::kAsk;
            const auto ticks = static_cast<std::uint32_t>(rng() % 8 == 0 ? rng() % far_ticks : rng() % near_ticks);
            std::uint32_t price = side == Side::kBid ? touch[id] - 100 * ticks : touch[id] + 100 + 100 * ticks;
            if (rng() % 500 == 0) price += 1 + static_cast<std::uint32_t>(rng() % 99);  // off the grid
            const O o{id, side, static_cast<std::uint32_t>(1 + rng() % 50), price};
            ASSERT_EQ(b.add(o.id, next_ref, o.side, o.shares, o.price), OrderResult::kApplied);
            model[next_ref] = o;
            refs.push_back(next_ref++);
        } else if (op == 48) {
            clear_both(b, model, static_cast<std::uint32_t>(rng() % kIds));
        } else if (!refs.empty()) {
            const std::uint64_t ref = take_any(refs, rng);
            const auto it = model.find(ref);
            if (it == model.end()) continue;  // emptied with its instrument
            O& o = it->second;
            if (op < 75) {
                ASSERT_EQ(b.remove(o.id, ref), OrderResult::kRemoved);
                model.erase(it);
            } else if (op < 90) {
                ASSERT_NO_FATAL_FAILURE(reduce_both(b, model, it, refs, static_cast<std::uint32_t>(1 + rng() % 40)));
            } else {  // a replace one tick either way
                const O n{o.id, o.side, o.shares, rng() % 2 ? o.price + 100 : o.price - 100};
                ASSERT_EQ(b.replace(o.id, ref, next_ref, n.shares, n.price), OrderResult::kApplied);
                model.erase(it);
                model[next_ref] = n;
                refs.push_back(next_ref++);
            }
        }
        if (step % 3001 != 0) continue;
        ASSERT_NO_FATAL_FAILURE(expect_sides_match(b, model, first_ids(kIds), step));
    }
}

TEST(OrderBookDifferential, MatchesAMapModelWithLaddersMovingWideningAndGivingWay) {
    // ladders_for: 10 units for 12 sides (most sides flat, few widen); 120
    // (ladders of 256 slots, some moving in place); then 200 for prices
    // beyond 1,024 slots (ladders widened, moved and given up: for flat
    // sides, and with prices spread near the touch too, for trees).
    ASSERT_NO_FATAL_FAILURE(ladders_against_a_model(64 * 5, 6, 90));
    ASSERT_NO_FATAL_FAILURE(ladders_against_a_model(64 * 60, 6, 200));
    ASSERT_NO_FATAL_FAILURE(ladders_against_a_model(64 * 100, 6, 1500));
    ASSERT_NO_FATAL_FAILURE(ladders_against_a_model(64 * 100, 90, 1500));
}


}  // namespace
}  // namespace tickgate
