// End-to-end over real loopback multicast sockets: the simulator publishes
// lines A and B (interface 127.0.0.1, TTL 0), the FeedHandler receives,
// sequences and books; results are checked against the simulator's ground
// truth. Each test uses its own groups/ports so ctest can run them in parallel.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "live_harness.hpp"
#include "tickgate/feed/replay.hpp"

namespace {

using namespace tickgate;
using namespace tickgate::e2e;

class Live : public ::testing::TestWithParam<PipelineMode> {};

// The first seed whose independent per-line loss never hits both lines.
SimOptions seed_without_double_loss(SimOptions o) {
    for (o.seed = 1; o.seed < 500; ++o.seed) {
        const GroundTruth t = run_simulator(o, [](SimPacket&) {});
        if (t.dropped_both == 0 && t.dropped_a > 0 && t.dropped_b > 0) return o;
    }
    ADD_FAILURE() << "no seed without double loss";
    return o;
}

TEST_P(Live, IndependentLossOnEachLineLosesNothingAndBooksMatch) {
    const Lines l{"239.255.80.1", "239.255.80.2", 39301, 39302};
    SimOptions o = sim_for(l);
    o.loss_a = 0.02;
    o.loss_b = 0.02;
    o = seed_without_double_loss(o);
    with_handler(config_for(l, GetParam()), [&](auto& h) {
        const LiveRun run = run_live(h, o);
        ASSERT_NO_TRANSPORT_LOSS(h);
        EXPECT_GT(run.truth.dropped_a, 0u);
        EXPECT_GT(run.truth.dropped_b, 0u);
        std::uint64_t gaps_a = 0, gaps_b = 0;
        for (const auto& s : h.line_stats()) (s->line ? gaps_b : gaps_a) += s->seq_gaps.get();
        EXPECT_EQ(gaps_a, run.truth.dropped_a) << "per-line packet gaps show which line is losing";
        EXPECT_EQ(gaps_b, run.truth.dropped_b);
        expect_every_instrument_whole(h, run.truth);
    });
}

// Busy-poll, spinning and yielding between empty polls: the same traffic
// arrives whole and the books match, only the waiting differs. (The other
// tests run the default, blocking in ppoll.)
TEST_P(Live, BusyPollSpinningOrYieldingLosesNothing) {
    for (const bool yield : {false, true}) {
        SCOPED_TRACE(yield ? "busy_poll_idle = yield" : "busy_poll_idle = spin");
        const Lines l{"239.255.89.1", "239.255.89.2", 39391, 39392};
        SimOptions o = sim_for(l);
        o.duration_s = 1.0;
        Config cfg = config_for(l, GetParam());
        cfg.threading.mode = ThreadMode::kBusyPoll;
        cfg.threading.busy_poll_yield = yield;
        with_handler(cfg, [&](auto& h) {
            const LiveRun run = run_live(h, o);
            ASSERT_NO_TRANSPORT_LOSS(h);
            expect_every_instrument_whole(h, run.truth);
        });
    }
}

TEST_P(Live, LossOnBothLinesCountsExactlyTheGroundTruthAndRepairs) {
    const Lines l{"239.255.81.1", "239.255.81.2", 39311, 39312};
    SimOptions o = sim_for(l);
    o.loss_a = 0.05;
    o.loss_b = 0.05;
    o.burst_p = 0.01;
    o.burst_len = 3;
    with_handler(config_for(l, GetParam()), [&](auto& h) {
        const LiveRun run = run_live(h, o);
        ASSERT_NO_TRANSPORT_LOSS(h);
        ASSERT_TRUE(run.truth.exact_lost);
        ASSERT_GT(run.truth.dropped_both, 0u);
        std::uint64_t lost = 0;
        for (const auto& t : run.truth.instruments) {
            const InstrumentState& st = h.instruments().state(t.id);
            EXPECT_EQ(st.counters.lost, t.expected_lost) << "instrument " << t.id;
            lost += st.counters.lost;
            if (st.counters.gap_events > 0) {
                EXPECT_GT(st.counters.recovered, 0u) << "instrument " << t.id;
            }
            if (st.suspect) {
                // Only a gap in the last snapshot period (no snapshot or full quote
                // came after it) may be left unrepaired.
                const auto it = run.last_suspect_ns.find(t.id);
                ASSERT_NE(it, run.last_suspect_ns.end());
                const std::int64_t repair_window_ns = (std::int64_t{o.snapshot_ms} + 100) * 1'000'000;
                EXPECT_GT(it->second, run.last_recv_ns - repair_window_ns) << "instrument " << t.id << " never repaired";
            } else {
                expect_book_equals_truth(h, t);
            }
        }
        EXPECT_GT(lost, 0u);
    });
}

TEST_P(Live, PublisherRestartIsASessionChange) {
    const Lines l{"239.255.82.1", "239.255.82.2", 39321, 39322};
    SimOptions o = sim_for(l);
    o.restart_at = 0.5;
    with_handler(config_for(l, GetParam()), [&](auto& h) {
        const LiveRun run = run_live(h, o);
        ASSERT_NO_TRANSPORT_LOSS(h);
        EXPECT_EQ(run.truth.final_session, o.session + 1);
        EXPECT_EQ(h.decoder_counters().session_changes.get(), 1u);
        // At least the publisher's late packet; line B's copies of the last old
        // packets may also land after line A's first new one: they are a finished
        // epoch's packets too, and the spec counts them the same way.
        EXPECT_GE(h.decoder_counters().stale_session_packets.get(), run.truth.late_old_session);
        EXPECT_GT(run.truth.late_old_session, 0u);
        for (const auto& t : run.truth.instruments) {
            const InstrumentState& st = h.instruments().state(t.id);
            EXPECT_EQ(st.counters.lost, 0u) << "a restart is not a loss: instrument " << t.id;
            EXPECT_FALSE(st.suspect) << "instrument " << t.id;
            EXPECT_EQ(st.last_seq, t.last_seq) << "instrument " << t.id;
            EXPECT_EQ(st.counters.accepted, t.messages) << "counters are cumulative: instrument " << t.id;
            expect_book_equals_truth(h, t);
        }
    });
}

// A 300 ms engine stall loses data where the pipeline buffers it: the ring
// (two-thread: 256 events) or, inline, the sockets (64 KiB each). Either
// loss is counted, the instruments go suspect, and they repair by
// themselves from the snapshots that follow.
TEST_P(Live, EngineStallLossIsCountedMarksSuspectThenRecovers) {
    const Lines l{"239.255.83.1", "239.255.83.2", 39331, 39332};
    SimOptions o = sim_for(l);
    o.duration_s = 2.5;
    Config cfg = config_for(l, GetParam(), /*ring_size=*/256);
    if (GetParam() == PipelineMode::kInline) cfg.receiver.rcvbuf_bytes = 65536;
    with_handler(cfg, [&](auto& h) {
        const LiveRun run = run_live(h, o, std::chrono::milliseconds(300));
        if constexpr (kInline<std::remove_cvref_t<decltype(h)>>) {
            EXPECT_GT(kernel_drops(h), 0u) << "the stalled callback must overflow the socket buffers";
        } else {
            EXPECT_GT(h.publisher_counters().ring_overflow_packets.get(), 0u);
            EXPECT_GT(h.publisher_counters().data_lost_marks.get(), 0u);
        }
        for (const auto& t : run.truth.instruments) {
            const InstrumentState& st = h.instruments().state(t.id);
            // Two-thread, a DataLost mark makes every instrument suspect until
            // repaired; inline, the sequencer sees the sockets' loss as a gap
            // (which the next quote of a quoted instrument repairs at once).
            if constexpr (kInline<std::remove_cvref_t<decltype(h)>>)
                EXPECT_GT(st.counters.gap_events, 0u) << "instrument " << t.id << " never saw the loss";
            else
                EXPECT_GT(st.counters.recovered, 1u) << "instrument " << t.id << " was never made suspect and repaired";
            EXPECT_FALSE(st.suspect) << "instrument " << t.id << " did not recover";
            expect_book_equals_truth(h, t);
        }
    });
}

TICKGATE_BOTH_PIPELINES(Live);

// A single receiver tees every datagram into a capture and into a handler;
// replaying the capture must give the identical summary.
TEST(LiveCapture, CaptureReplaysToTheSameSummaryAsTheLiveRun) {
    const Lines l{"239.255.84.1", "239.255.84.2", 39341, 39342};
    SimOptions o = sim_for(l);
    o.loss_a = 0.03;
    o.loss_b = 0.03;
    o.restart_at = 0.7;
    o.lagging_snapshots = true;
    const Config cfg = config_for(l);
    const std::string path =
        (std::filesystem::temp_directory_path() / ("tickgate-live-" + std::to_string(::getpid()) + ".pcap")).string();
    Handler live(cfg.capacity, cfg.gate);
    {
        Receiver rx(cfg);
        CaptureWriter writer(path);
        std::atomic<bool> done{false};
        std::thread sim([&] {
            simulate_to_sockets(o);
            done.store(true);
        });
        auto tee = [&](const RawDatagram& d) {
            writer.write_udp(d.recv_ns, d.src_ip, d.src_port, d.dst_ip, d.dst_port, d.payload);
            live.on_datagram(d.payload, d.recv_ns, d.line);
        };
        while (!done.load()) rx.poll_once(20'000'000, tee);
        sim.join();
        for (int i = 0; i < 10; ++i) rx.poll_once(20'000'000, tee);
    }
    Handler replayed(cfg.capacity, cfg.gate);
    const ReplayResult r = replay_capture(path, cfg, replayed);
    std::filesystem::remove(path);
    ASSERT_GT(live.decoder().counters().packets.get(), 1000u);
    const SummaryContext ctx{.now_ns = r.last_ts_ns};
    EXPECT_EQ(summary_json(summary_source(live), ctx), summary_json(summary_source(replayed), ctx));
}

}  // namespace
