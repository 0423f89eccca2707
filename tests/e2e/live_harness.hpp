// Helpers of the end-to-end tests: a live run of the simulator against a
// FeedHandler on loopback multicast, and checks against the ground truth.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "tickgate/feed_handler.hpp"
#include "tickgate/feed/qfb1/simulator.hpp"

namespace tickgate::e2e {
using Clock = std::chrono::steady_clock;

struct Lines {
    std::string group_a, group_b;
    std::uint16_t port_a, port_b;
};

inline Config config_for(const Lines& l, std::uint32_t ring_size = 65536) {
    Config cfg;
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

// Runs the simulator on its own thread while this thread polls the handler;
// `stall` pauses polling for a while in the middle (to overflow the ring).
inline LiveRun run_live(FeedHandler& handler, const SimOptions& opts, std::chrono::milliseconds stall = {}) {
    LiveRun run;
    handler.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // joined before the first packet
    std::atomic<bool> done{false};
    std::thread sim([&] {
        run.truth = simulate_to_sockets(opts);
        done.store(true);
    });
    auto on_update = [&](const Update& u, const Event& ev) {
        run.last_recv_ns = std::max(run.last_recv_ns, ev.recv_ns);
        if (u.suspect && (u.verdict == Verdict::kGap || u.verdict == Verdict::kHeartbeatGap ||
                          u.verdict == Verdict::kDataLost))
            run.last_suspect_ns[u.instrument_id] = ev.recv_ns;
    };
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

inline std::vector<Level> levels(const std::vector<SimLevel>& v) {
    std::vector<Level> out;
    for (const auto& l : v) out.push_back({l.price, l.qty});
    return out;
}

inline void expect_book_equals_truth(const FeedHandler& h, const InstrumentTruth& t) {
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
inline void expect_every_instrument_whole(const FeedHandler& h, const GroundTruth& truth) {
    for (const auto& t : truth.instruments) {
        const InstrumentState& st = h.instruments().state(t.id);
        EXPECT_EQ(st.counters.lost, 0u) << "instrument " << t.id;
        EXPECT_FALSE(st.suspect) << "instrument " << t.id;
        EXPECT_EQ(st.last_seq, t.last_seq) << "instrument " << t.id;
        expect_book_equals_truth(h, t);
    }
}

// Polls `h` until `done()` holds or 5 s have passed, waits `settle` for
// stragglers (datagrams that must *not* arrive), then stops the network
// thread and drains the ring: the handler's state is final afterwards.
template <class Done>
void poll_until_then_stop(FeedHandler& h, Done&& done, std::chrono::milliseconds settle = {}) {
    const auto end = Clock::now() + std::chrono::seconds(5);
    while (!done() && Clock::now() < end) h.poll();
    std::this_thread::sleep_for(settle);
    h.stop();
    while (h.poll() != 0) {
    }
}

// Whether the transport itself lost data (socket buffer or ring overflow):
// then the ground truth cannot hold and the machine was too loaded to judge.
#define ASSERT_NO_TRANSPORT_LOSS(h)                                                          \
    do {                                                                                     \
        ASSERT_EQ(kernel_drops(h), 0u) << "socket buffer overflow: the machine is overloaded"; \
        ASSERT_EQ((h).publisher_counters().ring_overflow_packets.get(), 0u)                   \
            << "ring overflow: the engine thread was starved";                               \
    } while (0)

inline std::uint64_t kernel_drops(const FeedHandler& h) {
    std::uint64_t n = 0;
    for (const auto& l : h.line_stats()) n += l->kernel_drops.get();
    return n;
}

}  // namespace tickgate::e2e
