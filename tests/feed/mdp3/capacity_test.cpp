// Issue 21 items 7 and 12 through the offline MDP3 pipeline (BasicHandler,
// configured as `tickgate replay` configures it): definitions take no
// instrument slot, overflow is counted where a user sees it, and a deleted
// instrument is not tradeable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../support/json.hpp"
#include "mdp3_builder.hpp"
#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/mdp3/protocol.hpp"
#include "tickgate/feed/replay.hpp"

namespace tickgate::mdp3 {
namespace {

using test::Writer;
using Mdp3Handler = BasicHandler<Protocol>;

class Mdp3Pipeline {
public:
    explicit Mdp3Pipeline(const Config& cfg) : cfg_(cfg), h_(cfg.capacity, cfg.gate) { apply_config(h_, cfg_); }

    // Definitions of `ids` (symbol "S<id>"), several to a packet.
    void define(const std::vector<std::int32_t>& ids, char action = 'A') {
        for (std::size_t i = 0; i < ids.size();) {
            Writer p = test::packet(next_seq_++, 0);
            for (std::size_t k = 0; k < 6 && i < ids.size(); ++k, ++i) {
                Writer m = test::definition_message(ids[i], "S" + std::to_string(ids[i]), 1, 0, 5);
                m.bytes()[10 + 5] = static_cast<std::byte>(action);  // root: MatchEventIndicator, TotNumReports, action
                p.append(m);
            }
            send(p);
        }
    }
    // A book entry New at level 1 on the bid for `id`.
    void trade(std::int32_t id, std::uint32_t rpt_seq, std::int64_t px = 100) {
        const test::BookEntry e{px, 1, id, rpt_seq, 1, 0, '0', 1};
        Writer p = test::packet(next_seq_++, 0);
        p.append(test::book_message(now_, std::span(&e, 1)));
        send(p);
    }
    void snapshot(std::int32_t id, std::uint32_t rpt_seq) {
        const test::SnapshotLevel bid{100, 1, 1};
        Writer p = test::packet(next_seq_++, 0);
        p.append(test::snapshot_message(id, rpt_seq, now_, 1, 1, std::span(&bid, 1), {}));
        send(p);
    }
    tickgate::test::Json json() { return tickgate::test::Json::parse(json_text()); }
    std::string json_text() {
        const std::optional<VenueSummary> venue = venue_summary_of(h_);
        SummaryContext ctx{.now_ns = now_};
        ctx.venue = &*venue;
        return summary_json(summary_source(h_), ctx);
    }
    std::string table() {
        const std::optional<VenueSummary> venue = venue_summary_of(h_);
        SummaryContext ctx{.now_ns = now_};
        ctx.venue = &*venue;
        return summary_table(summary_source(h_), ctx);
    }
    // The instrument id of `security_id`, if it has a slot.
    [[nodiscard]] std::uint32_t id_of(std::int32_t security_id) const {
        return h_.protocol_decoder().securities().find(security_id);
    }
    Mdp3Handler& h() { return h_; }
    std::int64_t now() const { return now_; }

private:
    void send(const Writer& p) {
        now_ += 1000;
        (void)h_.on_datagram(p.bytes(), now_, 0);
    }
    Config cfg_;
    Mdp3Handler h_;
    std::uint32_t next_seq_ = 1;
    std::int64_t now_ = 1'700'000'000'000'000'000;
};

std::vector<std::int32_t> ids(std::int32_t first, std::int32_t n) {
    std::vector<std::int32_t> out;
    for (std::int32_t i = 0; i < n; ++i) out.push_back(first + i);
    return out;
}

// Item 7: 5,000 definitions with the default max_instruments (4,096) took
// every slot and the traded instruments were dropped (out_of_range).
TEST(Mdp3Capacity, DefinitionsTakeNoInstrumentSlotOnlyTradedInstrumentsDo) {
    const Config cfg;
    Mdp3Pipeline p{cfg};
    p.define(ids(1000, 5000));
    for (const std::int32_t id : {5990, 5995, 5999}) p.trade(id, 1);
    EXPECT_EQ(p.h().sequencer().counters().out_of_range, 0u);
    EXPECT_EQ(p.h().protocol_decoder().securities().size(), 3u) << "three traded: three slots";
    EXPECT_EQ(p.h().protocol_decoder().definitions().size(), 5000u);
    for (const std::int32_t id : {5990, 5995, 5999}) {
        SCOPED_TRACE(id);
        const std::uint32_t index = p.id_of(id);
        ASSERT_LT(index, 3u);
        EXPECT_STREQ(p.h().instruments().state(index).symbol, ("S" + std::to_string(id)).c_str())
            << "its stored definition came with its first entry";
        EXPECT_EQ(p.h().book().side(index, Side::kBid).size(), 1u);
    }
    const tickgate::test::Json json = p.json();
    ASSERT_EQ(json["instruments"].size(), 3u);
    EXPECT_EQ(json["instruments"][2]["id"].as_int(), 5999) << "the SecurityID";
    EXPECT_EQ(json["instruments"][2]["symbol"].as_string(), "S5999");
    EXPECT_EQ(json["definitions"]["stored"].as_uint(), 5000u);
    EXPECT_EQ(json["definitions"]["capacity"].as_uint(), 200'000u);
    EXPECT_EQ(json["definitions"]["dropped"].as_uint(), 0u);
}

// Item 7: 70,000 definitions with max_instruments = 200000 left
// "instruments": [] (the decoder's fixed 65,536-id table).
TEST(Mdp3Capacity, InstrumentSlotsAreCapacityMaxInstrumentsNotAFixedTable) {
    Config cfg;
    cfg.capacity.max_instruments = 200'000;
    Mdp3Pipeline p{cfg};
    p.define(ids(1, 70'000));
    std::vector<std::int32_t> traded = ids(1, 70'000);
    for (const std::int32_t id : traded) p.trade(id, 1);
    EXPECT_EQ(p.h().sequencer().counters().out_of_range, 0u);
    EXPECT_EQ(p.h().instruments().seen_ids().size(), 70'000u);
    EXPECT_STREQ(p.h().instruments().state(p.id_of(69'999)).symbol, "S69999");
}

// Item 7: what does not fit is counted where a user sees it: the summary's
// out_of_range_instruments and "definitions", the table, the state log
// (StateLog tests), the metrics (tickgate_out_of_range_messages_total).
TEST(Mdp3Capacity, OverflowOfSlotsAndDefinitionsIsCountedInTheSummaryAndTable) {
    Config cfg;
    cfg.capacity.max_instruments = 2;
    cfg.mdp3.max_definitions = 3;
    Mdp3Pipeline p{cfg};
    p.define(ids(1, 4));  // the 4th does not fit
    for (const std::int32_t id : {1, 2, 3}) p.trade(id, 1);  // the 3rd has no slot
    p.snapshot(3, 1);                                        // neither has its snapshot
    EXPECT_EQ(p.id_of(3), SecurityMap::kNone);
    EXPECT_EQ(p.h().protocol_decoder().mdp3_counters().dropped_definitions.get(), 1u);
    EXPECT_EQ(p.h().sequencer().counters().out_of_range, 3u) << "a definition, an entry and a snapshot dropped";
    const tickgate::test::Json json = p.json();
    EXPECT_EQ(json["out_of_range_instruments"].as_uint(), 3u);
    EXPECT_EQ(json["definitions"]["stored"].as_uint(), 3u);
    EXPECT_EQ(json["definitions"]["dropped"].as_uint(), 1u);
    const std::string table = p.table();
    EXPECT_NE(table.find("beyond capacity 3 (capacity.max_instruments 2)"), std::string::npos) << table;
    EXPECT_NE(table.find("definitions: 3 stored, 1 dropped ([mdp3] max_definitions 3)"), std::string::npos) << table;
}

// Item 7: "or subscribed": a subscribed symbol's definition takes a slot at
// once, so the engine finds it before it trades.
TEST(Mdp3Capacity, ASubscribedSymbolsDefinitionTakesASlotBeforeItTrades) {
    Config cfg;
    cfg.subscribe = {"S42"};
    Mdp3Pipeline p{cfg};
    p.define(ids(40, 5));
    EXPECT_EQ(p.h().protocol_decoder().securities().size(), 1u);
    const auto handle = p.h().find("S42");
    ASSERT_TRUE(handle.has_value());
    EXPECT_EQ(handle->id, p.id_of(42));
    EXPECT_FALSE(p.h().find("S41").has_value()) << "not subscribed, not traded: no slot";
}

// Item 12: a deleted instrument is not tradeable — the gate says unknown —
// offline and live alike (the sequencer's rule), until it is defined again.
TEST(Mdp3Capacity, ADeletedInstrumentIsNotTradeableUntilDefinedAgain) {
    const Config cfg;
    Mdp3Pipeline p{cfg};
    p.define({7});
    p.trade(7, 1);
    p.snapshot(7, 1);
    const std::uint32_t id = p.id_of(7);
    ASSERT_EQ(p.h().gate().check(id, p.now()).reason, GateReason::kOk);
    p.define({7}, 'D');
    EXPECT_EQ(p.h().gate().check(id, p.now()).reason, GateReason::kUnknown);
    EXPECT_EQ(p.json()["instruments"][0]["gate"].as_string(), "unknown");
    p.trade(7, 2);
    EXPECT_EQ(p.h().gate().check(id, p.now()).reason, GateReason::kUnknown) << "entries do not undelete it";
    p.define({7});
    EXPECT_EQ(p.h().gate().check(id, p.now()).reason, GateReason::kOk);
}

// Item 12: an instrument deleted before it trades starts deleted.
TEST(Mdp3Capacity, AnInstrumentDeletedBeforeItTradesStartsDeleted) {
    const Config cfg;
    Mdp3Pipeline p{cfg};
    p.define({9});
    p.define({9}, 'D');
    p.trade(9, 1);
    p.snapshot(9, 1);
    EXPECT_EQ(p.h().gate().check(p.id_of(9), p.now()).reason, GateReason::kUnknown);
}

}  // namespace
}  // namespace tickgate::mdp3
