// MDP 3.0 live, end to end on loopback multicast (TTL 0, interface
// 127.0.0.1): the MDP3 simulator (in-process, paced) publishes a channel's
// incremental lines A/B with faults, its snapshot loop and its definitions;
// the live handler of either pipeline must end with, per instrument, the
// ground truth's lost, last RptSeq and book, every instrument clean again
// through the snapshot feed — which it joined only while an instrument was
// suspect or unconfirmed (MDP3.md "Snapshot") and left once all were clean.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tickgate/feed/mdp3/protocol.hpp"
#include "tickgate/feed/mdp3/simulator.hpp"
#include "tickgate/feed/replay.hpp"
#include "tickgate/feed_handler.hpp"
#include "tickgate/inline_feed_handler.hpp"

#include "../support/mdp3_channel.hpp"

namespace tickgate {
namespace {

using Clock = std::chrono::steady_clock;
using Mdp3FeedHandler = BasicFeedHandler<mdp3::Protocol>;
using Mdp3InlineFeedHandler = BasicInlineFeedHandler<mdp3::Protocol>;

// Groups of their own (239.255.21.x: not the demo's), every line on 127.0.0.1.
Config mdp3_config(PipelineMode pipeline) {
    Config cfg;
    cfg.threading.pipeline = pipeline;
    cfg.channels.push_back(test::mdp3_loopback_channel("239.255.21.", 24310));
    cfg.channels.back().sources = {"127.0.0.1"};
    return cfg;
}

mdp3::SimOptions sim_for(const Config& cfg) {
    mdp3::SimOptions o;
    o.use_channel(cfg.channels.front());
    o.feed.duration_s = 1.2;
    o.tail_cycles = 4;  // 400 ms of snapshots after the last incremental packet
    return o;
}

std::uint64_t received(std::span<const std::unique_ptr<LineStats>> lines) {
    std::uint64_t n = 0;
    for (const auto& l : lines) n += l->packets.get();
    return n;
}

// Waits until the lines have been quiet for 200 ms (the simulator is done).
void drain(std::span<const std::unique_ptr<LineStats>> lines, auto&& poll) {
    std::uint64_t seen = received(lines);
    auto quiet_since = Clock::now();
    while (Clock::now() - quiet_since < std::chrono::milliseconds(200)) {
        if (poll() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (const std::uint64_t now = received(lines); now != seen) {
            seen = now;
            quiet_since = Clock::now();
        }
    }
}

GroundTruth run_live(Mdp3FeedHandler& h, const mdp3::SimOptions& o) {
    h.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // joined before the first packet
    std::atomic<bool> done{false};
    GroundTruth truth;
    std::thread sim([&] {
        truth = mdp3::simulate_to_sockets(o);
        done.store(true);
    });
    while (!done.load())
        if (h.poll(1024) == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    sim.join();
    drain(h.line_stats(), [&] { return h.poll(4096); });
    while (h.poll(4096) != 0) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the network thread follows the last want
    h.stop();
    return truth;
}

GroundTruth run_live(Mdp3InlineFeedHandler& h, const mdp3::SimOptions& o) {
    std::atomic<bool> stop{false};
    std::thread handler_thread([&] { h.run([](const Update&, const Event&) {}, stop); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const GroundTruth truth = mdp3::simulate_to_sockets(o);
    drain(h.line_stats(), [] { return 0; });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a poll follows the last want
    stop.store(true);
    handler_thread.join();
    return truth;
}

struct Scenario {
    const char* name;
    void (*faults)(tickgate::SimOptions&);
    bool loses_on_both = false;  // the handler must join again after the cold start's leave
};

const Scenario kScenarios[] = {
    {"clean", [](tickgate::SimOptions&) {}},
    // Loss on each line, bursts lost on both, and an outage of A overlapping one of B.
    {"loss_burst_outage",
     [](tickgate::SimOptions& f) {
         f.loss_a = 0.03;
         f.loss_b = 0.03;
         f.burst_p = 0.01;
         f.burst_len = 4;
         f.outage_a.push_back({0.2, 0.4});
         f.outage_b.push_back({0.3, 0.33});
     },
     true},
    {"restart",
     [](tickgate::SimOptions& f) {
         f.restart_at = 0.5;
         f.loss_a = 0.05;
         f.loss_b = 0.05;
     },
     true},
};

struct Case {
    PipelineMode pipeline;
    Scenario scenario;
};

class Mdp3Live : public ::testing::TestWithParam<Case> {};

template <class Handler>
void check(const Handler& h, const GroundTruth& t, const Scenario& scenario) {
    ASSERT_TRUE(t.exact_lost);
    ASSERT_EQ(t.send_errors, 0u);
    std::uint64_t lost = 0;
    // The summary's MDP3 part live is replay's (run --json): per channel its
    // figures, per instrument its SecurityID (not the dense index) and book_errors.
    const std::optional<VenueSummary> venue = venue_summary_of(h);
    ASSERT_TRUE(venue.has_value());
    ASSERT_EQ(venue->channels.size(), 1u);
    EXPECT_EQ(venue->channels[0].id, h.config().channels.front().id);
    EXPECT_GT(venue->channels[0].packets, 0u);
    for (const InstrumentTruth& in : t.instruments) {
        SCOPED_TRACE(in.symbol);
        const auto handle = h.instruments().find(in.symbol);  // the definition feed's symbol
        ASSERT_TRUE(handle.has_value());
        ASSERT_LT(handle->id, venue->venue_ids.size());
        EXPECT_EQ(venue->venue_ids[handle->id], static_cast<std::int64_t>(in.id));
        EXPECT_EQ(venue->book_errors[handle->id], h.book().book_errors(handle->id));
        const InstrumentState& st = h.instruments().state(handle->id);
        EXPECT_EQ(st.counters.lost, in.expected_lost);
        EXPECT_EQ(st.last_seq, in.last_seq);
        EXPECT_FALSE(st.suspect) << "clean again through the snapshot feed";
        std::vector<SimLevel> bids, asks;
        for (const Level l : h.book().side(handle->id, Side::kBid)) bids.push_back({l.price, l.qty});
        for (const Level l : h.book().side(handle->id, Side::kAsk)) asks.push_back({l.price, l.qty});
        const auto same = [](const std::vector<SimLevel>& a, const std::vector<SimLevel>& b) {
            return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
                       return x.price == y.price && x.qty == y.qty;
                   });
        };
        EXPECT_TRUE(same(bids, in.bids));
        EXPECT_TRUE(same(asks, in.asks));
        lost += in.expected_lost;
    }
    // The snapshot feed: joined at the cold start (and after each gap), left once all were clean.
    std::uint64_t recoveries = 0;
    for (const auto& l : h.line_stats()) {
        if (!is_snapshot_line(l->line)) {
            EXPECT_EQ(l->snapshot_joins.get(), 0u);
            continue;
        }
        SCOPED_TRACE(std::string(line_name(l->line)));
        EXPECT_GE(l->snapshot_joins.get(), scenario.loses_on_both ? 2u : 1u);
        EXPECT_EQ(l->snapshot_leaves.get(), l->snapshot_joins.get()) << "left once clean";
        EXPECT_EQ(l->membership_errors.get(), 0u);
        recoveries += l->snapshot_recoveries.get();
    }
    EXPECT_GE(recoveries, t.instruments.size()) << "every instrument was suspect at the cold start";
    EXPECT_FALSE(h.recovery().wanted()[0].load());
    if (scenario.loses_on_both) {
        EXPECT_GT(t.dropped_both, 0u);
        EXPECT_GT(lost, 0u) << "entries lost on both lines, counted";
    }
}

TEST_P(Mdp3Live, LostBooksAndCleanThroughTheSnapshotFeedWhichIsLeftOnceClean) {
    Config cfg = mdp3_config(GetParam().pipeline);
    mdp3::SimOptions o = sim_for(cfg);
    GetParam().scenario.faults(o.feed);
    if (GetParam().pipeline == PipelineMode::kInline) {
        Mdp3InlineFeedHandler h(cfg);
        const GroundTruth t = run_live(h, o);
        check(h, t, GetParam().scenario);
    } else {
        Mdp3FeedHandler h(cfg);
        const GroundTruth t = run_live(h, o);
        check(h, t, GetParam().scenario);
    }
}

std::vector<Case> cases() {
    std::vector<Case> out;
    for (const PipelineMode p : {PipelineMode::kTwoThread, PipelineMode::kInline})
        for (const Scenario& s : kScenarios) out.push_back({p, s});
    return out;
}

INSTANTIATE_TEST_SUITE_P(Pipelines, Mdp3Live, ::testing::ValuesIn(cases()), [](const auto& info) {
    return std::string(info.param.pipeline == PipelineMode::kInline ? "inline_" : "two_thread_") +
           info.param.scenario.name;
});

}  // namespace
}  // namespace tickgate
