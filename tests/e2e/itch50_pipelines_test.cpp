// ITCH 5.0 through the shared pipelines (BasicFeedHandler and
// BasicInlineFeedHandler over itch50::Protocol), end to end over loopback:
// multicast on 127.0.0.1 (TTL 0), requests to the simulator's re-request
// server on 127.0.0.1, on both pipelines: loss on both lines filled by the server
// (books equal the ground truth, clean), a silent server (holes given up
// as the truth says, suspect), a late join with and without
// recover_from_start. Each test has its own groups/ports.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tickgate/feed/itch50/protocol.hpp"
#include "tickgate/feed/itch50/simulator.hpp"
#include "tickgate/feed_handler.hpp"
#include "tickgate/inline_feed_handler.hpp"

#include "../support/itch50_live.hpp"

namespace tickgate::itch50 {
namespace {

using Clock = std::chrono::steady_clock;
using ItchFeedHandler = BasicFeedHandler<Protocol>;
using ItchInlineFeedHandler = BasicInlineFeedHandler<Protocol>;

using Lines = test::ItchLines;
SimOptions sim_for(const Lines& l) { return test::itch_sim_for(l); }

Config handler_config(const Lines& l, std::uint16_t server_port, PipelineMode pipeline, const std::string& extra = "") {
    Config cfg = parse_config(test::itch_config_text(l, 7, server_port, extra), "e2e.toml");
    cfg.threading.pipeline = pipeline;
    return cfg;
}

// What the engine saw through poll(on_update).
struct Seen {
    std::uint64_t updates = 0, book_changes = 0, channel_events = 0;
};

struct Result {
    SimTruth truth;
    Seen seen;
};

// Publishes the simulator's flow (its server answering) while the engine
// loop polls `h`; returns once the server has lingered out and the sockets are drained.
template <class Handler, class Poll>
Result run(const SimOptions& o, const SimSchedule& s, RerequestServer& server, Handler&, Poll&& poll) {
    Result r;
    const auto on_update = [&](const Update& u, const Event&) {
        ++r.seen.updates;
        r.seen.book_changes += u.book_changed ? 1 : 0;
        r.seen.channel_events += u.verdict == Verdict::kChannelEvent ? 1 : 0;
    };
    std::atomic<bool> done{false}, polling{false};
    std::thread publisher([&] {
        while (!polling.load()) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // joined and polling before the first packet
        r.truth = publish(o, s, server);
        done.store(true);
    });
    while (!done.load()) {
        poll(on_update);
        polling.store(true);
    }
    publisher.join();
    const auto until = Clock::now() + std::chrono::milliseconds(300);  // what the sockets and the ring still hold
    while (Clock::now() < until) poll(on_update);
    return r;
}

// Runs scenario `o` (extra config keys `extra`) on the pipeline of the test's
// parameter; `check(handler, result)` once the handler has stopped.
template <class Check>
void run_on(PipelineMode pipeline, SimOptions o, const Lines& l, const std::string& extra, Check&& check) {
    o.epoch_ns = realtime_ns();
    const SimSchedule s = simulate(o);
    RerequestServer server(o, s);
    const Config cfg = handler_config(l, server.port(), pipeline, extra);
    if (pipeline == PipelineMode::kInline) {
        ItchInlineFeedHandler h(cfg);
        const Result r = run(o, s, server, h, [&](auto& f) { (void)h.poll(f, 1'000'000); });
        check(h, r);
    } else {
        ItchFeedHandler h(cfg);
        h.start();
        const Result r = run(o, s, server, h, [&](auto& f) {
            if (h.poll(f, 4096) == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
        });
        h.stop();
        while (h.poll(4096) != 0) {
        }
        check(h, r);
    }
}

template <class Handler>
void expect_books_equal(const SimTruth& t, const Handler& h) {
    test::expect_itch_books_equal(t, h.book(), h.instruments());
    // The engine's read of the book: by the directory's symbol, in the configured channel.
    for (const SimStockTruth& st : t.stocks) {
        const auto handle = h.find(st.symbol);
        ASSERT_TRUE(handle.has_value()) << st.symbol;
        EXPECT_EQ(h.instruments().state(handle->id).channel_id, 7u) << "the configured channel id, not the slot";
    }
}

class ItchPipelines : public ::testing::TestWithParam<PipelineMode> {};

TEST_P(ItchPipelines, LossOnBothLinesIsFilledByTheServerAndBooksEqualTheSimulators) {
    const Lines l{"239.255.34.1", "239.255.34.2", 31701, 31702};
    SimOptions o = sim_for(l);
    o.loss_a = o.loss_b = 0.08;
    o.burst_p = 0.01;
    o.burst_len = 3;
    o.dup = o.reorder = 0.01;
    run_on(GetParam(), o, l, "recover_from_start = true", [](const auto& h, const Result& r) {
        const auto ch = h.protocol_decoder().channel(0);
        ASSERT_GT(r.truth.sessions[0].dropped_both, 0u);  // the lines alone could not have done it
        EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
        EXPECT_EQ(ch.counters.late_join_messages.get(), 0u);
        EXPECT_EQ(ch.counters.holes_given_up.get(), 0u);
        EXPECT_GT(ch.counters.holes_filled.get(), 0u);
        EXPECT_EQ(ch.next_seq, r.truth.sessions[0].messages + 1);
        EXPECT_GT(h.protocol_decoder().client().counters(0).requests_sent.get(), 0u);
        EXPECT_GE(ch.counters.recovered_messages.get(), r.truth.sessions[0].dropped_both);
        expect_books_equal(r.truth, h);
        // Each line's own skipped positions are counted on its line (the one channel table).
        std::uint64_t line_gaps = 0;
        for (const auto& line : h.line_stats()) line_gaps += line->seq_gaps.get();
        EXPECT_GT(line_gaps, 0u);
        // The engine was told of every message applied, through the same poll(on_update) as every protocol.
        EXPECT_GE(r.seen.updates, r.truth.sessions[0].messages);
        EXPECT_GT(r.seen.book_changes, r.truth.sessions[0].messages / 2);
        EXPECT_EQ(h.decoder_counters().malformed_packets.get(), 0u);
        EXPECT_EQ(h.sequencer().counters().out_of_range, 0u);
    });
}

TEST_P(ItchPipelines, SilentServerHolesAreGivenUpAsTheGroundTruthSaysAndInstrumentsSuspect) {
    const Lines l{"239.255.34.3", "239.255.34.4", 31703, 31704};
    SimOptions o = sim_for(l);
    o.loss_a = o.loss_b = 0.08;
    o.server_silent = true;
    run_on(GetParam(), o, l, "", [](const auto& h, const Result& r) {
        const auto ch = h.protocol_decoder().channel(0);
        ASSERT_GT(r.truth.sessions[0].dropped_both, 0u);
        EXPECT_EQ(ch.counters.lost_messages.get(), r.truth.sessions[0].dropped_both);
        EXPECT_GT(ch.counters.holes_given_up.get(), 0u);
        // The first packet read decides a late join: a receive pass hands
        // lines A and B on in kernel-timestamp order, so it is the first
        // that arrived on either line.
        EXPECT_EQ(ch.counters.late_join_messages.get(), r.truth.sessions[0].late_join);
        EXPECT_EQ(h.protocol_decoder().client().counters(0).answers.get(), 0u);
        for (const SimStockTruth& st : r.truth.stocks) {
            EXPECT_TRUE(h.instruments().state(st.locate).suspect) << st.symbol;
            const SuspectReason why = suspect_reason(h.instruments().state(st.locate));
            EXPECT_TRUE(why == SuspectReason::kGap || why == SuspectReason::kLateJoin) << st.symbol;
            EXPECT_FALSE(h.gate().check(st.locate, realtime_ns()).ok()) << st.symbol;
        }
    });
}

TEST_P(ItchPipelines, LateJoinWithRecoverFromStartGivesCleanBooks) {
    const Lines l{"239.255.34.5", "239.255.34.6", 31705, 31706};
    SimOptions o = sim_for(l);
    o.outage_a = o.outage_b = {{0.0, 0.3}};
    run_on(GetParam(), o, l, "recover_from_start = true", [](const auto& h, const Result& r) {
        const auto ch = h.protocol_decoder().channel(0);
        ASSERT_GT(r.truth.sessions[0].late_join, 1000u);
        EXPECT_EQ(ch.counters.late_join_messages.get(), 0u);
        EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
        EXPECT_EQ(ch.next_seq, r.truth.sessions[0].messages + 1);
        expect_books_equal(r.truth, h);
    });
}

TEST_P(ItchPipelines, LateJoinWithoutRecoverFromStartIsCountedAndSuspect) {
    const Lines l{"239.255.34.7", "239.255.34.8", 31707, 31708};
    SimOptions o = sim_for(l);
    o.outage_a = o.outage_b = {{0.0, 0.3}};
    run_on(GetParam(), o, l, "", [](const auto& h, const Result& r) {
        const auto ch = h.protocol_decoder().channel(0);
        EXPECT_EQ(ch.counters.late_join_messages.get(), r.truth.sessions[0].late_join);
        EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
        EXPECT_TRUE(h.instruments().state(1).suspect);
        EXPECT_EQ(suspect_reason(h.instruments().state(1)), SuspectReason::kLateJoin);
        EXPECT_GT(r.seen.channel_events, 0u);  // the late join reached the engine as a channel event
    });
}

INSTANTIATE_TEST_SUITE_P(Pipelines, ItchPipelines, ::testing::Values(PipelineMode::kTwoThread, PipelineMode::kInline),
                         [](const auto& info) { return info.param == PipelineMode::kInline ? "inline" : "two_thread"; });

}  // namespace
}  // namespace tickgate::itch50
