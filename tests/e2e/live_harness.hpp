// Helpers of the end-to-end tests: a live run of the simulator against a
// handler of either threading pipeline (FeedHandler: network thread + ring
// + engine thread; InlineFeedHandler: run to completion on one thread) on
// loopback multicast, and checks against the ground truth.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <type_traits>

#include "tickgate/feed_handler.hpp"
#include "tickgate/feed/qfb1/simulator.hpp"
#include "tickgate/inline_feed_handler.hpp"

namespace tickgate::e2e {
using Clock = std::chrono::steady_clock;

// The tests that must behave the same in both pipelines are TEST_Ps over this.
inline std::string pipeline_name(const ::testing::TestParamInfo<PipelineMode>& info) {
    return info.param == PipelineMode::kInline ? "inline" : "two_thread";
}
#define TICKGATE_BOTH_PIPELINES(suite) \
    INSTANTIATE_TEST_SUITE_P(Pipelines, suite,  \
                             ::testing::Values(PipelineMode::kTwoThread, PipelineMode::kInline), pipeline_name)

// Runs body(handler) with a handler of `cfg` for cfg.threading.pipeline.
template <class Body>
void with_handler(const Config& cfg, Body&& body) {
    if (cfg.threading.pipeline == PipelineMode::kInline) {
        InlineFeedHandler h(cfg);
        body(h);
    } else {
        FeedHandler h(cfg);
        body(h);
    }
}
template <class H>
inline constexpr bool kInline = std::is_same_v<H, InlineFeedHandler>;

struct Lines {
    std::string group_a, group_b;
    std::uint16_t port_a, port_b;
};

inline Config config_for(const Lines& l, PipelineMode pipeline = PipelineMode::kTwoThread,
                         std::uint32_t ring_size = 65536) {
    Config cfg;
    cfg.threading.pipeline = pipeline;
    ChannelConfig ch;
    ch.id = 1;
    ch.a = {l.group_a, l.port_a, "127.0.0.1"};
    ch.b = {l.group_b, l.port_b, "127.0.0.1"};
    cfg.channels.push_back(ch);
    cfg.receiver.ring_size = ring_size;
    return cfg;
}

inline SimOptions sim_for(const Lines& l) {
    SimOptions o;
    o.group_a = l.group_a;
    o.group_b = l.group_b;
    o.port_a = l.port_a;
    o.port_b = l.port_b;
    o.instruments = 8;
    o.rate = 20000;
    o.duration_s = 1.5;
    return o;
}

struct LiveRun {
    GroundTruth truth;
    std::map<std::uint32_t, std::int64_t> last_suspect_ns;  // arrival time of what last made it suspect
    std::int64_t last_recv_ns = 0;
};

inline std::uint64_t received_packets(std::span<const std::unique_ptr<LineStats>> lines) {
    std::uint64_t n = 0;
    for (const auto& l : lines) n += l->packets.get();
    return n;
}

// What the engine of a live run records of each update.
inline auto recorder(LiveRun& run) {
    return [&run](const Update& u, const Event& ev) {
        run.last_recv_ns = std::max(run.last_recv_ns, ev.recv_ns);
        if (u.suspect && (u.verdict == Verdict::kGap || u.verdict == Verdict::kHeartbeatGap ||
                          u.verdict == Verdict::kDataLost))
            run.last_suspect_ns[u.instrument_id] = ev.recv_ns;
    };
}

// Two-thread: runs the simulator on its own thread while this thread polls
// the handler; `stall` pauses polling for a while in the middle (to overflow
// the ring).
inline LiveRun run_live(FeedHandler& handler, const SimOptions& opts, std::chrono::milliseconds stall = {}) {
    LiveRun run;
    handler.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // joined before the first packet
    std::atomic<bool> done{false};
    std::thread sim([&] {
        run.truth = simulate_to_sockets(opts);
        done.store(true);
    });
    auto on_update = recorder(run);
    const auto t0 = Clock::now();
    bool stalled = stall.count() == 0;
    while (!done.load()) {
        if (!stalled && Clock::now() - t0 > std::chrono::milliseconds(400)) {
            std::this_thread::sleep_for(stall);
            stalled = true;
        }
        if (handler.poll(on_update, 1024) == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    sim.join();
    // Drain: wait until nothing more arrives for 200 ms.
    auto quiet_since = Clock::now();
    while (Clock::now() - quiet_since < std::chrono::milliseconds(200)) {
        if (handler.poll(on_update, 4096) != 0) quiet_since = Clock::now();
        else std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    handler.stop();
    while (handler.poll(on_update, 4096) != 0) {
    }
    return run;
}

// Inline: the handler runs to completion (InlineFeedHandler::run, the
// config's idle strategy) on a thread of its own while this thread runs the
// simulator; `stall` stalls the engine's callback for a while in the middle
// (to overflow the socket buffers: there is no ring).
inline LiveRun run_live(InlineFeedHandler& handler, const SimOptions& opts, std::chrono::milliseconds stall = {}) {
    LiveRun run;
    std::atomic<bool> stop{false};
    auto record = recorder(run);
    const auto t0 = Clock::now();
    bool stalled = stall.count() == 0;
    auto on_update = [&](const Update& u, const Event& ev) {
        record(u, ev);
        if (!stalled && Clock::now() - t0 > std::chrono::milliseconds(450)) {  // 400 ms into the run
            std::this_thread::sleep_for(stall);
            stalled = true;
        }
    };
    std::thread handler_thread([&] { handler.run(on_update, stop); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // joined before the first packet
    run.truth = simulate_to_sockets(opts);
    // Drain: wait until nothing more arrives for 200 ms.
    std::uint64_t seen = received_packets(handler.line_stats());
    auto quiet_since = Clock::now();
    while (Clock::now() - quiet_since < std::chrono::milliseconds(200)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (const std::uint64_t now = received_packets(handler.line_stats()); now != seen) {
            seen = now;
            quiet_since = Clock::now();
        }
    }
    stop.store(true);
    handler_thread.join();
    return run;
}

inline std::vector<Level> levels(const std::vector<SimLevel>& v) {
    std::vector<Level> out;
    for (const auto& l : v) out.push_back({l.price, l.qty});
    return out;
}

template <class H>
void expect_book_equals_truth(const H& h, const InstrumentTruth& t) {
    const auto bids = h.book().side(t.id, Side::kBid);
    const auto asks = h.book().side(t.id, Side::kAsk);
    const auto want_b = levels(t.bids), want_a = levels(t.asks);
    ASSERT_EQ(bids.size(), want_b.size()) << "instrument " << t.id << " bids";
    ASSERT_EQ(asks.size(), want_a.size()) << "instrument " << t.id << " asks";
    for (std::size_t i = 0; i < bids.size(); ++i) {
        EXPECT_EQ(bids[i].price, want_b[i].price) << "instrument " << t.id << " bid " << i;
        EXPECT_EQ(bids[i].qty, want_b[i].qty) << "instrument " << t.id << " bid " << i;
    }
    for (std::size_t i = 0; i < asks.size(); ++i) {
        EXPECT_EQ(asks[i].price, want_a[i].price) << "instrument " << t.id << " ask " << i;
        EXPECT_EQ(asks[i].qty, want_a[i].qty) << "instrument " << t.id << " ask " << i;
    }
}

// Every instrument of the run arrived whole: nothing lost, not suspect, at
// the simulator's last seq, with the simulator's book.
template <class H>
void expect_every_instrument_whole(const H& h, const GroundTruth& truth) {
    for (const auto& t : truth.instruments) {
        const InstrumentState& st = h.instruments().state(t.id);
        EXPECT_EQ(st.counters.lost, 0u) << "instrument " << t.id;
        EXPECT_FALSE(st.suspect) << "instrument " << t.id;
        EXPECT_EQ(st.last_seq, t.last_seq) << "instrument " << t.id;
        expect_book_equals_truth(h, t);
    }
}

// Two-thread: starts `h`. Inline: nothing (this thread will poll it).
template <class H>
void start(H& h) {
    if constexpr (!kInline<H>) h.start();
}

// Polls `h` until `done()` holds or 5 s have passed, waits `settle` for
// stragglers (datagrams that must *not* arrive), then stops the network
// thread and drains the ring (inline: polls on through `settle`): the
// handler's state is final afterwards.
template <class H, class Done>
void poll_until_then_stop(H& h, Done&& done, std::chrono::milliseconds settle = {}) {
    const auto end = Clock::now() + std::chrono::seconds(5);
    const auto ignore = [](const Update&, const Event&) {};
    if constexpr (kInline<H>) {
        while (!done() && Clock::now() < end) h.poll(ignore, 1'000'000);
        const auto settled = Clock::now() + settle;
        while (Clock::now() < settled) h.poll(ignore, 1'000'000);
    } else {
        while (!done() && Clock::now() < end) h.poll();
        std::this_thread::sleep_for(settle);
        h.stop();
        while (h.poll() != 0) {
        }
    }
}

// Whether the transport itself lost data (socket buffer or ring overflow):
// then the ground truth cannot hold and the machine was too loaded to judge.
#define ASSERT_NO_TRANSPORT_LOSS(h)                                                          \
    do {                                                                                     \
        ASSERT_EQ(kernel_drops(h), 0u) << "socket buffer overflow: the machine is overloaded"; \
        ASSERT_EQ(ring_overflow_packets(h), 0u) << "ring overflow: the engine thread was starved"; \
    } while (0)

// Datagrams the ring dropped (inline: there is no ring).
template <class H>
std::uint64_t ring_overflow_packets(const H& h) {
    if constexpr (kInline<H>) return 0;
    else return h.publisher_counters().ring_overflow_packets.get();
}

template <class H>
std::uint64_t kernel_drops(const H& h) {
    std::uint64_t n = 0;
    for (const auto& l : h.line_stats()) n += l->kernel_drops.get();
    return n;
}

}  // namespace tickgate::e2e
