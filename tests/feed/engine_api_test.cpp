// The engine's API (include/tickgate/feed/engine_api.hpp, instruments.hpp,
// book/safe_quote.hpp): instruments by symbol and their handles across
// redefinitions, the one safe-price read against the gate and the book under
// every verdict, and subscriptions (books skipped, sequencing intact).
#include "tickgate/feed/engine_api.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"

namespace tickgate {
namespace {

constexpr std::uint16_t kCh = 1;
constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kT0 = 1'700'000'000'000 * kMs;
constexpr GateConfig kGateCfg{/*stale_ms=*/250, /*source_age_ms=*/2000};
constexpr Capacity kCap{16, 8, 16, 4};

TEST(SymbolIndex, FindsEveryKeptSymbolAfterEraseShiftsItsRun) {
    // 64 symbols in a 128-slot table: runs of colliding probes are certain;
    // erasing every third one must leave each remaining symbol reachable.
    SymbolIndex index(64);
    const auto name = [](int i) { return "SYM" + std::to_string(i); };
    for (int i = 0; i < 64; ++i) ASSERT_TRUE(index.insert(name(i), static_cast<std::uint32_t>(i)));
    EXPECT_FALSE(index.insert("ONE-TOO-MANY", 99));  // full at its capacity
    EXPECT_TRUE(index.insert(name(5), 500));          // an existing symbol takes a new id
    EXPECT_EQ(index.find(name(5)), 500u);
    for (int i = 0; i < 64; i += 3) index.erase(name(i));
    EXPECT_EQ(index.size(), 64u - 22u);
    for (int i = 0; i < 64; ++i)
        EXPECT_EQ(index.find(name(i)), i % 3 == 0 ? SymbolIndex::kNone : (i == 5 ? 500u : static_cast<std::uint32_t>(i)))
            << name(i);
    index.erase(name(7), 8);  // names id 7, not 8: kept
    EXPECT_EQ(index.find(name(7)), 7u);
    EXPECT_FALSE(index.insert("", 1));
    EXPECT_FALSE(index.insert("SEVENTEEN-BYTES-X", 1));
    EXPECT_EQ(index.find("SEVENTEEN-BYTES-X"), SymbolIndex::kNone);
}

// A QFB/1 handler fed one packet per call on channel kCh.
class EngineApiTest : public testing::Test {
protected:
    Handler h_{kCap, kGateCfg};
    std::uint64_t packet_seq_ = 0;
    std::vector<Update> delivered_;

    PacketBuilder packet() { return PacketBuilder(kCh, 1, ++packet_seq_, 0); }
    void feed(const PacketBuilder& p, std::int64_t recv_ns = kT0) {
        const DecodeResult r = h_.on_datagram(p.bytes(), recv_ns, 0, [&](const Update& u) { delivered_.push_back(u); });
        ASSERT_EQ(r.verdict, PacketVerdict::kDecoded);
    }
    void define(std::uint32_t id, std::string_view symbol) { feed(packet().definition(id, symbol)); }
    void quote(std::uint32_t id, std::uint64_t seq, std::int64_t px, std::int64_t t = kT0) {
        feed(packet().quote(id, seq, t, px, 10, px + 2, 20), t);
    }
    void delta(std::uint32_t id, std::uint64_t seq, std::int64_t px, std::int64_t t = kT0) {
        feed(packet().delta(id, seq, t, px, 5, 0, 0), t);
    }
    std::size_t delivered_for(std::uint32_t id) const {
        std::size_t n = 0;
        for (const Update& u : delivered_) n += u.instrument_id == id;
        return n;
    }
};

TEST_F(EngineApiTest, FindIsEmptyBeforeTheDefinitionAndNamesTheInstrumentAfter) {
    EXPECT_FALSE(h_.find("EURUSD"));
    quote(2, 1, 100);
    EXPECT_FALSE(h_.find("EURUSD"));  // seen, but no symbol yet
    define(2, "EURUSD");
    const auto found = h_.find("EURUSD");
    ASSERT_TRUE(found);
    EXPECT_EQ(found->id, 2u);
    EXPECT_TRUE(h_.instruments().current(*found));
    EXPECT_FALSE(h_.find("EURUSD "));  // exact bytes
}

TEST_F(EngineApiTest, ARedefinitionRetiresTheOldHandleAndTheSymbolFollowsItsNewId) {
    define(2, "EURUSD");
    quote(2, 1, 100);
    const InstrumentHandle old = *h_.find("EURUSD");
    EXPECT_TRUE(h_.safe_quote(old, kT0).ok());

    define(2, "EURUSD");  // the same definition again: the handle stays good
    EXPECT_EQ(*h_.find("EURUSD"), old);

    // A new day's directory: id 2 is now GBPUSD, EURUSD moved to id 5.
    define(2, "GBPUSD");
    define(5, "EURUSD");
    const SafeQuote stale_handle = h_.safe_quote(old, kT0);
    EXPECT_EQ(stale_handle.verdict.reason, GateReason::kUnknown);  // never GBPUSD's price under EURUSD's handle
    EXPECT_EQ(stale_handle.bid.qty, 0u);
    EXPECT_EQ(h_.find("EURUSD")->id, 5u);
    EXPECT_EQ(h_.find("GBPUSD")->id, 2u);
    EXPECT_NE(h_.find("GBPUSD")->generation, old.generation);
}

TEST_F(EngineApiTest, SafeQuoteCarriesTheGatesVerdictAndTheBooksTopUnderEveryVerdict) {
    define(2, "EURUSD");
    define(3, "GBPUSD");
    define(4, "USDJPY");
    const InstrumentHandle eur = *h_.find("EURUSD"), gbp = *h_.find("GBPUSD"), jpy = *h_.find("USDJPY");
    const auto agrees = [&](InstrumentHandle h, std::int64_t now, GateReason expected) {
        const SafeQuote q = h_.safe_quote(h, now);
        EXPECT_EQ(q.verdict.reason, expected);
        EXPECT_EQ(q.verdict.reason, h_.gate().check(h.id, now).reason);
        EXPECT_EQ(q.verdict.silence_ms, h_.gate().check(h.id, now).silence_ms);
        const auto bids = h_.book().side(h.id, Side::kBid);
        const auto asks = h_.book().side(h.id, Side::kAsk);
        EXPECT_EQ(q.bid.price, bids.empty() ? 0 : Level(*bids.begin()).price);
        EXPECT_EQ(q.bid.qty, bids.empty() ? 0u : Level(*bids.begin()).qty);
        EXPECT_EQ(q.ask.price, asks.empty() ? 0 : Level(*asks.begin()).price);
        EXPECT_EQ(q.price_exponent, -8);
    };
    agrees(jpy, kT0, GateReason::kSuspect);  // defined on the feed (so seen), no price yet
    EXPECT_EQ(h_.safe_quote({9, 0}, kT0).verdict.reason, GateReason::kUnknown);  // no such handle

    quote(2, 1, 100);
    agrees(eur, kT0 + 10 * kMs, GateReason::kOk);
    agrees(eur, kT0 + 300 * kMs, GateReason::kStale);
    quote(3, 1, 200, kT0);
    feed(packet().delta(3, 2, kT0 - 5000 * kMs, 199, 1, 0, 0), kT0);  // priced 5 s ago at source
    agrees(gbp, kT0, GateReason::kStaleAtSource);
    quote(4, 1, 300);
    delta(4, 3, 299);  // seq 2 lost: suspect
    agrees(jpy, kT0, GateReason::kSuspect);
    EXPECT_EQ(h_.safe_quote(jpy, kT0).bid.price, 300);  // the price is handed out with its verdict

    h_.subscribe("EURUSD");
    agrees(gbp, kT0, GateReason::kNotSubscribed);
    EXPECT_EQ(h_.safe_quote(gbp, kT0).bid.qty, 0u);
}

TEST_F(EngineApiTest, SafeQuoteCopiesDepthOnRequestBestFirst) {
    define(2, "EURUSD");
    quote(2, 1, 100);
    delta(2, 2, 99);
    delta(2, 3, 98);
    std::array<Level, 2> bids{}, asks{};
    const SafeQuote q = h_.safe_quote(*h_.find("EURUSD"), kT0, bids, asks);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q.bid_levels, 2u);  // three bid levels, room for two
    EXPECT_EQ(bids[0].price, 100);
    EXPECT_EQ(bids[1].price, 99);
    EXPECT_EQ(q.ask_levels, 1u);
    EXPECT_EQ(asks[0].price, 102);
}

TEST_F(EngineApiTest, ASubscriptionSkipsOtherBooksButKeepsTheirSequencingAndLoss) {
    define(2, "EURUSD");
    define(3, "GBPUSD");
    ASSERT_TRUE(h_.subscribe("EURUSD"));
    delivered_.clear();
    quote(2, 1, 100);
    quote(3, 1, 200);
    delta(3, 4, 199);  // seqs 2 and 3 lost
    delta(3, 5, 198);

    EXPECT_TRUE(h_.book().side(3, Side::kBid).empty());  // no book built
    EXPECT_TRUE(h_.book().side(3, Side::kAsk).empty());
    const InstrumentState& gbp = h_.instruments().state(3);
    EXPECT_EQ(gbp.last_seq, 5u);
    EXPECT_EQ(gbp.counters.accepted, 3u);
    EXPECT_EQ(gbp.counters.lost, 2u);
    EXPECT_TRUE(gbp.suspect);
    EXPECT_EQ(delivered_for(3), 0u);  // its updates are not delivered
    EXPECT_EQ(delivered_for(2), 1u);
    EXPECT_EQ(Level(*h_.book().side(2, Side::kBid).begin()).price, 100);
}

TEST_F(EngineApiTest, SubscribingLaterDropsOtherBooksAndARebookedInstrumentIsSuspectUntilRebuilt) {
    define(2, "EURUSD");
    define(3, "GBPUSD");
    quote(2, 1, 100);
    quote(3, 1, 200);
    ASSERT_TRUE(h_.subscribe("EURUSD"));
    EXPECT_TRUE(h_.book().side(3, Side::kBid).empty());  // dropped at once
    EXPECT_FALSE(h_.book().side(2, Side::kBid).empty());
    EXPECT_FALSE(h_.instruments().state(2).suspect);

    delta(3, 2, 201);  // while unsubscribed: sequenced only
    ASSERT_TRUE(h_.subscribe("GBPUSD"));
    const InstrumentHandle gbp = *h_.find("GBPUSD");
    EXPECT_EQ(h_.safe_quote(gbp, kT0).verdict.reason, GateReason::kSuspect);  // its book missed delta 2
    quote(3, 3, 210);  // a full quote rebuilds it
    const SafeQuote q = h_.safe_quote(gbp, kT0);
    EXPECT_TRUE(q.ok());
    EXPECT_EQ(q.bid.price, 210);

    h_.unsubscribe("EURUSD");
    EXPECT_EQ(h_.safe_quote(*h_.find("EURUSD"), kT0).verdict.reason, GateReason::kNotSubscribed);
    EXPECT_TRUE(h_.book().side(2, Side::kBid).empty());
}

TEST_F(EngineApiTest, AnInstrumentDefinedAfterTheSubscriptionIsBookedOnlyIfSubscribed) {
    ASSERT_TRUE(h_.subscribe("USDJPY"));
    quote(4, 1, 300);  // no symbol yet: not booked
    EXPECT_TRUE(h_.book().side(4, Side::kBid).empty());
    define(4, "USDJPY");  // now booked, suspect until rebuilt
    EXPECT_TRUE(h_.instruments().state(4).booked);
    EXPECT_EQ(h_.safe_quote(*h_.find("USDJPY"), kT0).verdict.reason, GateReason::kSuspect);
    quote(4, 2, 301);
    EXPECT_TRUE(h_.safe_quote(*h_.find("USDJPY"), kT0).ok());
    define(5, "AUDUSD");
    quote(5, 1, 400);
    EXPECT_FALSE(h_.instruments().state(5).booked);
    EXPECT_TRUE(h_.book().side(5, Side::kBid).empty());
}

}  // namespace
}  // namespace tickgate
