// ITCH 5.0 live on the shared pipelines (BasicFeedHandler and
// BasicInlineFeedHandler over itch50::Protocol), end to end over loopback
// (multicast on 127.0.0.1, TTL 0; the re-request and GLIMPSE servers on
// 127.0.0.1): a forged implausible position, GLIMPSE 5.0 snapshots over
// SoupBinTCP (ITCH50.md "Snapshot recovery": late join, given-up hole,
// a dropped spin, a rejected login, the engine told, a full buffer) and
// channels' own locates. Checked against the simulator's ground truth;
// each test has its own groups/ports. The plain loss / silent-server /
// late-join scenarios are in itch50_pipelines_test.cpp.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../support/itch50_live.hpp"
#include "../support/json.hpp"
#include "tickgate/book/book.hpp"
#include "tickgate/feed/itch50/glimpse_server.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/itch50/protocol.hpp"
#include "tickgate/feed/itch50/simulator.hpp"
#include "tickgate/feed/replay.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed/state_log.hpp"
#include "tickgate/feed_handler.hpp"
#include "tickgate/inline_feed_handler.hpp"

namespace {

using namespace tickgate;
using namespace tickgate::itch50;

using Lines = test::ItchLines;
using TwoThread = BasicFeedHandler<Protocol>;
using Inline = BasicInlineFeedHandler<Protocol>;
SimOptions sim_for(const Lines& l) { return test::itch_sim_for(l); }

// f.template operator()<Handler>() for the pipeline of the test's parameter.
template <class F>
void with_pipeline(PipelineMode p, F&& f) {
    if (p == PipelineMode::kInline) f.template operator()<Inline>();
    else f.template operator()<TwoThread>();
}

Config handler_config(const Lines& l, std::uint16_t server_port, const std::string& extra = "",
                      const std::string& channel_extra = "") {
    return parse_config(test::itch_config_text(l, 1, server_port, extra, channel_extra), "e2e.toml");
}

// One duty cycle of the engine thread: poll(on_update) (the two-thread
// handler sleeps 100 µs when its ring was empty).
template <class H, class F>
void poll_once(H& h, F&& on_update) {
    if constexpr (std::is_same_v<H, Inline>) {
        (void)h.poll(on_update, 1'000'000);
    } else if (h.poll(on_update, 4096) == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}
const auto kIgnore = [](const Update&, const Event&) {};

// A handler of the pipeline `H` from `cfg`, started (two-thread).
template <class H>
std::unique_ptr<H> make_handler(const Config& cfg) {
    auto h = std::make_unique<H>(cfg);
    if constexpr (std::is_same_v<H, TwoThread>) h->start();
    return h;
}
// Stops the network thread (two-thread) and drains the ring: after it the front may be read whole.
template <class H, class F>
void finish(H& h, F&& on_update) {
    if constexpr (std::is_same_v<H, TwoThread>) {
        h.stop();
        while (h.poll(on_update, 4096) != 0) {
        }
    } else {
        for (int i = 0; i < 20; ++i) (void)h.poll(on_update, 1'000'000);
    }
}

template <class H>
struct LiveRun {
    SimTruth truth;
    std::unique_ptr<H> handler;
};

// Runs the simulator (its re-request server answering; with `glimpse` its
// GLIMPSE server serving too, the config made as config(server port,
// GLIMPSE port)) against a handler of pipeline `H`, and returns the ground
// truth once the handler has seen the server linger out and has stopped.
// `meanwhile()` runs on a thread of its own from 170 ms after the first
// packet is due; `engine(handler)` is the engine thread's duty cycle.
template <class H, class MakeConfig, class Meanwhile, class Engine>
LiveRun<H> run_live(SimOptions o, MakeConfig&& config, Meanwhile&& meanwhile, const GlimpseServerOptions* glimpse,
                    Engine&& engine) {
    o.epoch_ns = realtime_ns();
    const SimSchedule s = simulate(o);
    RerequestServer server(o, s);
    std::unique_ptr<GlimpseServer> g;
    if (glimpse != nullptr)
        g = std::make_unique<GlimpseServer>(*glimpse, [&s, &server] {
            const auto [session, last] = server.latest();
            return glimpse_spin(s, session, last);
        });
    LiveRun<H> r;
    r.handler = make_handler<H>(config(server.port(), g ? g->port() : std::uint16_t{0}));
    std::atomic<bool> done{false}, polling{false};
    std::thread publisher([&] {
        // The first packet decides a late join: the handler must be polling by then.
        while (!polling.load()) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        r.truth = publish(o, s, server, g.get());
        done.store(true);
    });
    std::thread side([&] {
        while (!polling.load()) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(180));
        meanwhile();
    });
    while (!done.load()) {
        engine(*r.handler);
        polling.store(true);
    }
    publisher.join();
    side.join();
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);  // what the sockets hold
    while (std::chrono::steady_clock::now() < until) engine(*r.handler);
    finish(*r.handler, kIgnore);
    return r;
}
template <class H, class MakeConfig, class Meanwhile>
LiveRun<H> run_live(SimOptions o, MakeConfig&& config, Meanwhile&& meanwhile, const GlimpseServerOptions* glimpse) {
    return run_live<H>(o, std::forward<MakeConfig>(config), std::forward<Meanwhile>(meanwhile), glimpse,
                       [](H& h) { poll_once(h, kIgnore); });
}

template <class H>
void expect_books_equal(const SimTruth& t, const H& h) {
    test::expect_itch_books_equal(t, h.book(), h.instruments());
}
// What `run --json` prints (itch50::Protocol::summary_json).
template <class H>
test::Json summary_of(const H& h, const Config& cfg) {
    const SummarySource src{h.decoder_counters(), h.instruments(), h.sequencer().counters(), BookReader(h.book()),
                            h.gate(), h.gate_config()};
    return test::Json::parse(Protocol::summary_json(h, cfg, src, SummaryContext{.now_ns = realtime_ns()}, h.stats()));
}
// What the state log says of the front's channels (holes, positions, snapshots).
template <class H>
std::string state_log_text(const H& h, const std::string& name, int calls = 1) {
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("tickgate_itch_" + name + "_" + std::to_string(::getpid()) + ".log");
    {
        StateLog log(LoggingConfig{"info", path.string()}, StateLogOptions{});
        for (int i = 0; i < calls; ++i) h.protocol_decoder().log_state(log, realtime_ns());
        EXPECT_TRUE(log.flush());
    }
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
    return text;
}

class ItchLive : public ::testing::TestWithParam<PipelineMode> {};

// ITCH50.md "Implausible positions", live: one forged heartbeat of the
// current session at position 10^12, from the allowed source, in the middle
// of the flow. It made every instrument suspect for the day (a hole of
// 10^12 given up); now it is counted and nothing changes.
TEST_P(ItchLive, ImplausiblePositionForgedHeartbeatMidSessionMovesNothing) {
    with_pipeline(GetParam(), [&]<class H>() {
        const Lines l{"239.255.33.9", "239.255.33.10", 31609, 31610};
        SimOptions o = sim_for(l);
        Config cfg;
        const LiveRun<H> r = run_live<H>(
            o, [&](std::uint16_t port, std::uint16_t) { return cfg = handler_config(l, port); },
            [&] {
                MulticastSender forger("127.0.0.1");
                const Bytes hb = mold_heartbeat(o.session, 1'000'000'000'000);
                ASSERT_TRUE(forger.send(0xEFFF2109, l.port_a, hb));  // 239.255.33.9
            },
            nullptr);
        const auto ch = r.handler->protocol_decoder().channel(0);
        EXPECT_EQ(ch.counters.implausible_positions.get(), 1u);
        EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
        EXPECT_EQ(ch.counters.holes_given_up.get(), 0u);
        EXPECT_EQ(ch.next_seq, r.truth.sessions[0].messages + 1);
        expect_books_equal(r.truth, *r.handler);
        // The summary, metrics and run --json read the one counter table.
        EXPECT_EQ(summary_of(*r.handler, cfg)["channels"][0]["implausible_positions"].as_int(), 1);
        // The state log says it once per change, at warn.
        const std::string text = state_log_text(*r.handler, "implausible", 2);
        EXPECT_NE(text.find("implausible_positions: channel 1: 1 datagram(s)"), std::string::npos) << text;
        EXPECT_EQ(text.find("implausible_positions", text.find("implausible_positions") + 1), std::string::npos) << text;
    });
}

// ---- GLIMPSE 5.0 snapshots over SoupBinTCP (ITCH50.md "Snapshot recovery"), 127.0.0.1 only.

constexpr const char* kGlimpsePassword = "e2e-pw-9c4";

Config glimpse_config(const Lines& l, std::uint16_t server_port, std::uint16_t glimpse_port,
                      const std::string& glimpse_keys = "") {
    ::setenv("TICKGATE_E2E_GLIMPSE_PW", kGlimpsePassword, 1);
    return handler_config(l, server_port,
                          "[glimpse]\nusername = \"e2e\"\npassword_env = \"TICKGATE_E2E_GLIMPSE_PW\"\n" + glimpse_keys,
                          "glimpse = \"127.0.0.1:" + std::to_string(glimpse_port) + "\"\n");
}
// The server expects the config's credentials: the password reaches it from the environment variable.
GlimpseServerOptions glimpse_server() {
    GlimpseServerOptions g;
    g.username = "e2e";
    g.password = kGlimpsePassword;
    return g;
}
template <class H>
const SnapshotCounters& snapshot_counters(const H& h) {
    return h.protocol_decoder().snapshots().counters(0);
}
template <class H>
std::uint64_t failures(const H& h, SnapshotFailure f) {
    return snapshot_counters(h).snapshot_failures[static_cast<std::size_t>(f)].get();
}
template <class H>
std::uint64_t all_failures(const H& h) {
    std::uint64_t n = 0;
    for (const RelaxedCounter& c : snapshot_counters(h).snapshot_failures) n += c.get();
    return n;
}

// Both lines silent for the first 30% of the flow: a late join, repaired by one snapshot.
TEST_P(ItchLive, GlimpseRepairsALateJoinAndBooksEqualTheSimulators) {
    with_pipeline(GetParam(), [&]<class H>() {
        const Lines l{"239.255.36.1", "239.255.36.2", 31651, 31652};
        SimOptions o = sim_for(l);
        o.outage_a = o.outage_b = {{0.0, 0.3}};
        const GlimpseServerOptions g = glimpse_server();
        Config cfg;
        const LiveRun<H> r = run_live<H>(
            o, [&](std::uint16_t port, std::uint16_t gport) { return cfg = glimpse_config(l, port, gport); }, [] {}, &g);
        const auto ch = r.handler->protocol_decoder().channel(0);
        ASSERT_GT(r.truth.sessions[0].late_join, 1000u);
        EXPECT_EQ(ch.counters.late_join_messages.get(), r.truth.sessions[0].late_join);  // still never ours
        EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
        EXPECT_EQ(ch.next_seq, r.truth.sessions[0].messages + 1);
        const SnapshotCounters& k = snapshot_counters(*r.handler);
        EXPECT_EQ(k.snapshots_requested.get(), 1u);
        EXPECT_EQ(k.snapshots_applied.get(), 1u);
        EXPECT_EQ(all_failures(*r.handler), 0u);
        EXPECT_GT(k.snapshot_orders.get(), 0u);
        EXPECT_EQ(r.truth.glimpse_served, 1u);
        expect_books_equal(r.truth, *r.handler);
        // run --json and the state log.
        const test::Json summary = summary_of(*r.handler, cfg);
        const test::Json& j = summary["channels"][0]["glimpse"];
        EXPECT_EQ(j["snapshots_requested"].as_int(), 1);
        EXPECT_EQ(j["snapshots_applied"].as_int(), 1);
        EXPECT_EQ(j["snapshot_failures"]["login_rejected"].as_int(), 0);
        EXPECT_EQ(j["snapshot_orders"].as_int(), static_cast<std::int64_t>(k.snapshot_orders.get()));
        const std::string text = state_log_text(*r.handler, "late");
        EXPECT_NE(text.find("snapshot_requested: channel 1: late join"), std::string::npos) << text;
        EXPECT_NE(text.find("snapshot_applied: channel 1: "), std::string::npos) << text;
        EXPECT_NE(text.find(" orders, continuing at "), std::string::npos) << text;
        // The live view: the channel's snapshot state and counters under the lines.
        const std::string view = r.handler->protocol_decoder().snapshots_text();
        EXPECT_NE(view.find("ch   glimpse snapshot           requested   applied  last orders  failures\n"),
                  std::string::npos)
            << view;
        const std::string orders = std::to_string(k.snapshot_orders.get());
        EXPECT_NE(view.find("1    applied                            1         1 " + std::string(12 - orders.size(), ' ') +
                            orders + "  none\n"),
                  std::string::npos)
            << view;
    });
}

// Both lines silent for 40..50% of the flow and a silent re-request
// server: the hole is given up (its messages counted lost), the instruments
// suspect, then clean again through a snapshot.
TEST_P(ItchLive, GlimpseRepairsAGivenUpHoleWithTheLostMessagesCounted) {
    with_pipeline(GetParam(), [&]<class H>() {
        const Lines l{"239.255.36.3", "239.255.36.4", 31653, 31654};
        SimOptions o = sim_for(l);
        o.outage_a = o.outage_b = {{0.4, 0.5}};
        o.server_silent = true;
        const GlimpseServerOptions g = glimpse_server();
        const LiveRun<H> r = run_live<H>(
            o,
            [&](std::uint16_t port, std::uint16_t gport) { return glimpse_config(l, port, gport, "min_interval_ms = 100"); },
            [] {}, &g);
        const auto ch = r.handler->protocol_decoder().channel(0);
        ASSERT_GT(r.truth.sessions[0].dropped_both, 0u);
        EXPECT_EQ(ch.counters.lost_messages.get(), r.truth.sessions[0].dropped_both);
        EXPECT_GE(ch.counters.holes_given_up.get(), 1u);
        EXPECT_GE(snapshot_counters(*r.handler).snapshots_applied.get(), 1u);
        EXPECT_EQ(all_failures(*r.handler), 0u);
        EXPECT_FALSE(ch.gave_up);
        expect_books_equal(r.truth, *r.handler);
    });
}

// The first connection drops mid-spin: nothing changes, one failure; the
// retry after min_interval_ms repairs the late join.
TEST_P(ItchLive, GlimpseConnectionDroppedMidSpinIsOneFailureAndTheRetryRepairs) {
    with_pipeline(GetParam(), [&]<class H>() {
        const Lines l{"239.255.36.5", "239.255.36.6", 31655, 31656};
        SimOptions o = sim_for(l);
        o.outage_a = o.outage_b = {{0.0, 0.3}};
        GlimpseServerOptions g = glimpse_server();
        g.drop_after = 20;
        const LiveRun<H> r = run_live<H>(
            o,
            [&](std::uint16_t port, std::uint16_t gport) { return glimpse_config(l, port, gport, "min_interval_ms = 100"); },
            [] {}, &g);
        EXPECT_EQ(failures(*r.handler, SnapshotFailure::kDropped), 1u);
        EXPECT_EQ(all_failures(*r.handler), 1u);
        EXPECT_EQ(snapshot_counters(*r.handler).snapshots_requested.get(), 2u);
        EXPECT_EQ(snapshot_counters(*r.handler).snapshots_applied.get(), 1u);
        EXPECT_EQ(r.truth.glimpse_connections, 2u);
        EXPECT_EQ(r.handler->protocol_decoder().channel(0).counters.lost_messages.get(), 0u);
        expect_books_equal(r.truth, *r.handler);
        const std::string text = state_log_text(*r.handler, "drop");
        EXPECT_NE(text.find("snapshot_failed: channel 1: connection dropped, retried after"), std::string::npos) << text;
    });
}

// Login rejected: suspect stays, one failure, no retry, one log line with the reason, no password anywhere.
TEST_P(ItchLive, GlimpseLoginRejectedIsOneFailureNotRetriedAndNoPasswordAnywhere) {
    with_pipeline(GetParam(), [&]<class H>() {
        const Lines l{"239.255.36.7", "239.255.36.8", 31657, 31658};
        SimOptions o = sim_for(l);
        o.outage_a = o.outage_b = {{0.0, 0.3}};
        GlimpseServerOptions g = glimpse_server();
        g.reject = true;
        Config cfg;
        const LiveRun<H> r = run_live<H>(
            o,
            [&](std::uint16_t port, std::uint16_t gport) {
                return cfg = glimpse_config(l, port, gport, "min_interval_ms = 50");
            },
            [] {}, &g);
        EXPECT_EQ(snapshot_counters(*r.handler).snapshots_requested.get(), 1u);
        EXPECT_EQ(failures(*r.handler, SnapshotFailure::kLoginRejected), 1u);
        EXPECT_EQ(all_failures(*r.handler), 1u);
        EXPECT_EQ(snapshot_counters(*r.handler).snapshots_applied.get(), 0u);
        EXPECT_EQ(r.truth.glimpse_rejected, 1u);
        for (const SimStockTruth& st : r.truth.stocks)
            EXPECT_TRUE(r.handler->instruments().state(st.locate).suspect) << st.symbol;
        const std::string text = state_log_text(*r.handler, "reject");
        EXPECT_NE(text.find("snapshot_failed: channel 1: login rejected (A), not retried"), std::string::npos) << text;
        const std::string view = r.handler->protocol_decoder().snapshots_text();
        EXPECT_NE(view.find("1    given up (login rejected)          1         0            0  login_rejected 1\n"),
                  std::string::npos)
            << view;
        const std::string summary = test::Json(summary_of(*r.handler, cfg)).dump();
        EXPECT_EQ(text.find(kGlimpsePassword), std::string::npos);
        EXPECT_EQ(summary.find(kGlimpsePassword), std::string::npos);
        EXPECT_EQ(r.truth.to_json(o).find(kGlimpsePassword), std::string::npos);
    });
}

// The engine API (issue 23 item 6): the update of the kSnapshotReplace
// event (a channel event, book_changed: every book of the channel was
// replaced, so the engine re-reads rather than patches) comes once per
// applied snapshot; safe_quote answers suspect before it and, for every
// instrument of the channel, ok once the kept output after it is applied.
TEST_P(ItchLive, GlimpseTheEngineIsToldThatTheChannelsBooksWereReplacedAndSafeQuoteTurnsOk) {
    with_pipeline(GetParam(), [&]<class H>() {
        const Lines l{"239.255.36.9", "239.255.36.10", 31659, 31660};
        SimOptions o = sim_for(l);
        o.outage_a = o.outage_b = {{0.0, 0.3}};
        const GlimpseServerOptions g = glimpse_server();
        std::uint64_t replaced = 0, replaced_not_book_changed = 0, replaced_suspect = 0;
        std::uint64_t quoted_before = 0, suspect_before = 0;
        const auto engine = [&](H& h) {
            if (replaced == 0) {
                // Before the snapshot: every instrument seen since the late join is suspect.
                h.sequencer().venue().each_instrument(0, [&](std::uint32_t id) {
                    const InstrumentHandle handle{id, h.instruments().state(id).generation};
                    ++quoted_before;
                    if (h.safe_quote(handle, realtime_ns()).verdict.reason == GateReason::kSuspect) ++suspect_before;
                });
            }
            poll_once(h, [&](const Update& u, const Event& ev) {
                if (ev.kind != kSnapshotReplace) return;
                ++replaced;
                if (!u.book_changed || u.verdict != Verdict::kChannelEvent) ++replaced_not_book_changed;
                if (u.suspect) ++replaced_suspect;
            });
        };
        const LiveRun<H> r = run_live<H>(
            o, [&](std::uint16_t port, std::uint16_t gport) { return glimpse_config(l, port, gport); }, [] {}, &g,
            engine);
        ASSERT_EQ(snapshot_counters(*r.handler).snapshots_applied.get(), 1u);
        EXPECT_EQ(replaced, 1u);
        EXPECT_EQ(replaced_not_book_changed, 0u);
        EXPECT_EQ(replaced_suspect, 0u);
        EXPECT_GT(quoted_before, 0u);
        EXPECT_EQ(suspect_before, quoted_before);
        // Re-read through the engine's own path: find the symbol, ask the gate.
        std::uint64_t not_ok = 0;
        for (const SimStockTruth& st : r.truth.stocks) {
            const auto handle = r.handler->find(st.symbol);
            if (!handle || r.handler->safe_quote(*handle, realtime_ns()).verdict.reason == GateReason::kSuspect) ++not_ok;
        }
        EXPECT_EQ(not_ok, 0u);
        expect_books_equal(r.truth, *r.handler);
    });
}

// Acceptance (e): the snapshot buffer ([glimpse] buffer_mb = 1) fills
// during a slow spin: one buffer_full failure, and what it had kept is
// applied in order, once. A second handler without GLIMPSE listens to the
// same lines from the same instant: both see the same late join, so any
// buffered message lost, applied twice or out of order would leave their
// books or counters different.
TEST_P(ItchLive, GlimpseBufferTooSmallForTheSpinIsOneFailureAndTheKeptOutputIsAppliedInOrderOnce) {
    with_pipeline(GetParam(), [&]<class H>() {
        const Lines l{"239.255.36.11", "239.255.36.12", 31661, 31662};
        SimOptions o = sim_for(l);
        o.messages = 48000;  // 2.4 s at 20,000/s: ~30,000 messages (~2 MB kept) arrive during the 1.5 s spin
        o.outage_a = o.outage_b = {{0.0, 0.05}};
        GlimpseServerOptions g = glimpse_server();
        g.delay_ms = 1500;
        const Config plain_cfg = parse_config(
            "[itch]\nmax_orders = 262144\nmax_levels = 65536\n[moldudp64]\ngap_timeout_ms = 200\n[[channel]]\nid = 1\n"
            "protocol = \"itch50\"\na = { group = \"" + std::string(l.group_a) + "\", port = " + std::to_string(l.port_a) +
                " }\nb = { group = \"" + l.group_b + "\", port = " + std::to_string(l.port_b) + " }\n",
            "plain.toml");
        const std::unique_ptr<H> plain = make_handler<H>(plain_cfg);
        const LiveRun<H> r = run_live<H>(
            o,
            [&](std::uint16_t port, std::uint16_t gport) {
                return glimpse_config(l, port, gport, "buffer_mb = 1\nmin_interval_ms = 3600000");  // one attempt
            },
            [] {}, &g,
            [&](H& h) {
                poll_once(h, kIgnore);
                poll_once(*plain, kIgnore);
            });
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
        while (std::chrono::steady_clock::now() < until) poll_once(*plain, kIgnore);
        finish(*plain, kIgnore);
        const SnapshotCounters& k = snapshot_counters(*r.handler);
        EXPECT_EQ(k.snapshots_requested.get(), 1u);
        EXPECT_EQ(failures(*r.handler, SnapshotFailure::kBufferFull), 1u);
        EXPECT_EQ(all_failures(*r.handler), 1u);
        EXPECT_EQ(k.snapshots_applied.get(), 0u);
        const auto a = r.handler->protocol_decoder().channel(0);
        const auto b = plain->protocol_decoder().channel(0);
        ASSERT_GT(a.counters.late_join_messages.get(), 0u);
        EXPECT_EQ(a.counters.late_join_messages.get(), b.counters.late_join_messages.get());
        EXPECT_EQ(a.counters.messages.get(), b.counters.messages.get());
        EXPECT_EQ(a.counters.lost_messages.get(), 0u);
        EXPECT_EQ(b.counters.lost_messages.get(), 0u);
        EXPECT_EQ(a.next_seq, r.truth.sessions[0].messages + 1);
        EXPECT_EQ(b.next_seq, a.next_seq);
        std::uint64_t accepted = 0;
        for (const SimStockTruth& st : r.truth.stocks) {
            SCOPED_TRACE(st.symbol);
            const InstrumentState& x = r.handler->instruments().state(st.locate);
            const InstrumentState& y = plain->instruments().state(st.locate);
            EXPECT_EQ(x.counters.accepted, y.counters.accepted);
            EXPECT_EQ(x.last_seq, y.last_seq);
            EXPECT_TRUE(x.suspect);  // still the late join: the snapshot was not applied
            EXPECT_EQ(r.handler->sequencer().venue().counters(st.locate).unknown_orders,
                      plain->sequencer().venue().counters(st.locate).unknown_orders);
            EXPECT_EQ(r.handler->book().open_orders(st.locate), plain->book().open_orders(st.locate));
            for (const Side side : {Side::kBid, Side::kAsk}) {
                std::vector<std::pair<std::uint64_t, std::uint64_t>> got, want;
                for (const Level lv : r.handler->book().side(st.locate, side)) got.emplace_back(lv.price, lv.qty);
                for (const Level lv : plain->book().side(st.locate, side)) want.emplace_back(lv.price, lv.qty);
                EXPECT_EQ(got, want);
            }
            accepted += x.counters.accepted;
        }
        EXPECT_GT(accepted, 0u);
        const std::string text = state_log_text(*r.handler, "buffer");
        EXPECT_NE(text.find("snapshot_failed: channel 1: buffer full"), std::string::npos) << text;
    });
}

// ITCH50.md "Locates and order references are a channel's own", live: two
// configured channels carry locate 5 and order reference 1 each; they are
// two instruments (ids 5 and 65,541) and two orders. Then a new session on
// the second channel empties only its books and shows its locate, not an
// empty symbol (issue 21 item 12). Loopback multicast, TTL 0.
TEST_P(ItchLive, LocatesAndOrderReferencesAreAChannelsOwnAndANewSessionShowsTheLocate) {
    with_pipeline(GetParam(), [&]<class H>() {
        const Config cfg = parse_config(
            "[itch]\nmax_orders = 4096\nmax_levels = 4096\n"
            "[[channel]]\nid = 1\nprotocol = \"itch50\"\n"
            "a = { group = \"239.255.33.13\", port = 31613 }\nb = { group = \"239.255.33.14\", port = 31614 }\n"
            "[[channel]]\nid = 2\nprotocol = \"itch50\"\n"
            "a = { group = \"239.255.33.11\", port = 31611 }\nb = { group = \"239.255.33.12\", port = 31612 }\n",
            "e2e.toml");
        const std::unique_ptr<H> h = make_handler<H>(cfg);
        MulticastSender tx;
        const auto send = [&](std::uint32_t group, std::uint16_t port, const Bytes& d) {
            ASSERT_TRUE(tx.send(group, port, {d.data(), d.size()}));
        };
        const auto poll_until = [&](auto&& done) {
            for (int i = 0; i < 20000 && !done(); ++i) poll_once(*h, kIgnore);
        };
        const OrderBook& book = h->book();
        send(0xEFFF210D, 31613,
             mold_packet("SESSION001", 1, std::vector<Bytes>{stock_directory(5, "AAPL"), add_order(5, 1, 'B', 100, 1000)}));
        send(0xEFFF210B, 31611,
             mold_packet("SESSION002", 1,
                         std::vector<Bytes>{stock_directory(5, "MSFT"), add_order(5, 1, 'S', 200, 2000),
                                            delete_order(5, 1), add_order(5, 2, 'S', 300, 3000)}));
        poll_until([&] { return book.open_orders(5) == 1 && book.open_orders(65536 + 5) == 1; });
        EXPECT_EQ(book.open_orders(5), 1u);
        EXPECT_EQ(book.open_orders(65536 + 5), 1u);
        EXPECT_STREQ(h->instruments().state(5).symbol, "AAPL");
        EXPECT_STREQ(h->instruments().state(65536 + 5).symbol, "MSFT");
        send(0xEFFF210B, 31611, mold_packet("SESSION003", 1, std::vector<Bytes>{add_order(5, 9, 'B', 10, 900)}));
        poll_until([&] { return std::string(h->instruments().state(65536 + 5).symbol) == "5"; });
        EXPECT_STREQ(h->instruments().state(65536 + 5).symbol, "5");
        EXPECT_EQ(book.open_orders(65536 + 5), 1u);  // the new session's only
        EXPECT_EQ(book.open_orders(5), 1u);          // the other channel untouched
        EXPECT_STREQ(h->instruments().state(5).symbol, "AAPL");
        finish(*h, kIgnore);
        const test::Json summary = summary_of(*h, cfg);
        std::size_t with_locate_5 = 0;
        for (std::size_t i = 0; i < summary["instruments"].size(); ++i)
            with_locate_5 += summary["instruments"][i]["locate"].as_uint() == 5 ? 1 : 0;
        EXPECT_EQ(with_locate_5, 2u) << "one per channel";
    });
}

INSTANTIATE_TEST_SUITE_P(Pipelines, ItchLive, ::testing::Values(PipelineMode::kTwoThread, PipelineMode::kInline),
                         [](const auto& info) { return info.param == PipelineMode::kInline ? "inline" : "two_thread"; });

}  // namespace
