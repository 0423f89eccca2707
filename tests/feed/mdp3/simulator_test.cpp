// The MDP3 simulator's own consistency (as tests/feed/simulator_test.cpp for
// QFB/1): its capture (--pcap), replayed with its channel's config —
// incremental, snapshot and definition lines — must give, per instrument,
// the ground truth's lost, last RptSeq and final book, every instrument
// clean again through the snapshot loop, and its symbol from the
// definition loop.
#include "tickgate/feed/mdp3/simulator.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/mdp3/protocol.hpp"
#include "tickgate/feed/replay.hpp"

#include "../../support/mdp3_channel.hpp"

namespace tickgate {
namespace {

namespace fs = std::filesystem;
using Mdp3Handler = BasicHandler<mdp3::Protocol>;

struct Scenario {
    const char* name;
    void (*faults)(tickgate::SimOptions&);
};

class Mdp3SimulatorVsReplay : public ::testing::TestWithParam<Scenario> {};

TEST_P(Mdp3SimulatorVsReplay, LostLastRptSeqAndBooksAreTheGroundTruthsAndAllEndClean) {
    Config cfg;
    cfg.channels.push_back(test::mdp3_loopback_channel("239.255.23.", 28310));
    mdp3::SimOptions o;
    o.use_channel(cfg.channels.front());
    o.feed.duration_s = 1;
    GetParam().faults(o.feed);
    const fs::path pcap = fs::temp_directory_path() / (std::string("tickgate-mdp3-sim-") + GetParam().name + ".pcap");
    const GroundTruth t = mdp3::simulate_to_capture(o, pcap.string());
    ASSERT_TRUE(t.exact_lost);

    Mdp3Handler h(cfg.capacity, cfg.gate);
    apply_config(h, cfg);
    const ReplayResult r = replay_capture(pcap.string(), cfg, h);
    fs::remove(pcap);
    EXPECT_EQ(r.frames.udp_datagrams, t.sent_a + t.sent_b + 2 * (t.snapshot_packets + t.definition_packets));
    EXPECT_EQ(r.filtered_out, 0u);
    EXPECT_EQ(h.decoder().counters().malformed_packets.get(), 0u);
    EXPECT_EQ(h.decoder().counters().unknown_messages.get(), 0u);

    const mdp3::SecurityMap& ids = h.decoder().protocol_decoder().securities();
    std::uint64_t dropped = 0;
    for (const InstrumentTruth& in : t.instruments) {
        SCOPED_TRACE(in.symbol);
        const std::uint32_t index = ids.find(static_cast<std::int32_t>(in.id));
        ASSERT_NE(index, mdp3::SecurityMap::kNone);
        const InstrumentState& st = h.instruments().state(index);
        EXPECT_STREQ(st.symbol, in.symbol.c_str());  // from the definition loop
        EXPECT_EQ(st.counters.lost, in.expected_lost);
        EXPECT_LE(in.expected_lost, in.dropped_both);
        EXPECT_EQ(st.last_seq, in.last_seq);
        EXPECT_FALSE(st.suspect) << "the snapshot loop repairs every instrument";
        EXPECT_GT(st.counters.snapshots_applied, 0u);
        const auto same = [](mdp3::IndexedSide got, const std::vector<SimLevel>& want) {
            std::vector<SimLevel> have;
            for (const Level l : got) have.push_back({l.price, l.qty});
            return have.size() == want.size() &&
                   std::equal(have.begin(), have.end(), want.begin(),
                              [](const SimLevel& a, const SimLevel& b) { return a.price == b.price && a.qty == b.qty; });
        };
        EXPECT_TRUE(same(h.book().side(index, Side::kBid), in.bids));
        EXPECT_TRUE(same(h.book().side(index, Side::kAsk), in.asks));
        dropped += in.dropped_both;
    }
    if (t.dropped_both > 0) {
        EXPECT_GT(dropped, 0u) << "packets lost on both lines carried entries";
    }
    EXPECT_EQ(t.final_session, o.feed.restart_at ? 2u : 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, Mdp3SimulatorVsReplay,
    ::testing::Values(Scenario{"clean", [](tickgate::SimOptions&) {}},
                      Scenario{"loss_each_line",
                               [](tickgate::SimOptions& f) {
                                   f.loss_a = 0.05;
                                   f.loss_b = 0.05;
                               }},
                      Scenario{"burst_on_both",
                               [](tickgate::SimOptions& f) {
                                   f.burst_p = 0.02;
                                   f.burst_len = 20;
                               }},
                      Scenario{"outage_and_dup",
                               [](tickgate::SimOptions& f) {
                                   f.outage_a.push_back({0.2, 0.4});
                                   f.outage_b.push_back({0.3, 0.35});
                                   f.dup = 0.05;
                               }},
                      Scenario{"restart",
                               [](tickgate::SimOptions& f) {
                                   f.restart_at = 0.5;
                                   f.loss_a = 0.1;
                                   f.loss_b = 0.1;
                               }}),
    [](const ::testing::TestParamInfo<Scenario>& i) { return std::string(i.param.name); });

// The JSON ground truth names the protocol and the snapshot and definition feeds' packets.
TEST(Mdp3Simulator, GroundTruthIsDeterministicAndSaysMdp3) {
    mdp3::SimOptions o;
    o.feed.messages = 400;
    std::vector<std::vector<std::byte>> first, second;
    const GroundTruth a = mdp3::run_simulator(o, [&](mdp3::SimPacket& p) { first.push_back(p.bytes); });
    const GroundTruth b = mdp3::run_simulator(o, [&](mdp3::SimPacket& p) { second.push_back(p.bytes); });
    EXPECT_EQ(first, second);
    EXPECT_EQ(a.to_json(), b.to_json());
    EXPECT_EQ(a.protocol, "mdp3");
    EXPECT_GT(a.snapshot_packets, 0u);
    EXPECT_GT(a.definition_packets, 0u);
    EXPECT_NE(a.to_json().find("\"mdp3\""), std::string::npos);
}

TEST(Mdp3Simulator, RefusesQfb1OnlyOptionsAndNonLoopbackLines) {
    mdp3::SimOptions o;
    o.feed.lagging_snapshots = true;
    EXPECT_THROW(o.validate(), std::invalid_argument);
    o = {};
    o.feed.quiet = {1};
    EXPECT_THROW(o.validate(), std::invalid_argument);
    o = {};
    o.snapshot_a.interface = "10.0.0.1";
    EXPECT_THROW(o.validate(), std::invalid_argument);
    o = {};
    o.definition_b.group = "10.1.1.1";
    EXPECT_THROW(o.validate(), std::invalid_argument);
    EXPECT_NO_THROW(mdp3::SimOptions{}.validate());
}

}  // namespace
}  // namespace tickgate

namespace tickgate {
namespace {

// Issue 26: a book a venue could publish. Over a long run every final book
// has bids strictly descending, offers strictly ascending, and the best bid
// below the best offer (the generator used to repeat levels out of order:
// 99.75, 99.50, 99.50, 99.25, 99.50).
TEST(Mdp3Simulator, GroundTruthBooksAreStrictlyOrderedAndNeverCrossed) {
    mdp3::SimOptions o;
    o.feed.instruments = 8;
    o.feed.messages = 200'000;
    const GroundTruth t = mdp3::run_simulator(o, [](mdp3::SimPacket&) {});
    ASSERT_EQ(t.instruments.size(), 8u);
    for (const InstrumentTruth& in : t.instruments) {
        SCOPED_TRACE(in.symbol);
        EXPECT_FALSE(in.bids.empty() && in.asks.empty());
        for (std::size_t i = 1; i < in.bids.size(); ++i) EXPECT_GT(in.bids[i - 1].price, in.bids[i].price);
        for (std::size_t i = 1; i < in.asks.size(); ++i) EXPECT_LT(in.asks[i - 1].price, in.asks[i].price);
        if (!in.bids.empty() && !in.asks.empty()) {
            EXPECT_LT(in.bids.front().price, in.asks.front().price);
        }
    }
}

}  // namespace
}  // namespace tickgate
