// ITCH 5.0 live, end to end over loopback (multicast on 127.0.0.1, TTL 0;
// requests to the simulator's re-request server on 127.0.0.1): the
// simulator publishes on both lines while its server answers, the
// LiveHandler receives, requests and books; checked against the
// simulator's ground truth. Each test has its own groups/ports.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../support/itch50_live.hpp"
#include "../support/json.hpp"
#include "tickgate/book/book.hpp"
#include "tickgate/feed/itch50/glimpse_server.hpp"
#include "tickgate/feed/itch50/live.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/itch50/simulator.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed/state_log.hpp"

namespace {

using namespace tickgate;
using namespace tickgate::itch50;

using Lines = test::ItchLines;
SimOptions sim_for(const Lines& l) { return test::itch_sim_for(l); }

Config handler_config(const Lines& l, std::uint16_t server_port, const std::string& extra = "") {
    return parse_config(test::itch_config_text(l, 1, server_port, extra), "e2e.toml");
}

// Runs the simulator (its server answering) against a LiveHandler made from
// `config(server port)`, and returns the ground truth once the handler has
// seen the server linger out.
struct LiveRun {
    SimTruth truth;
    std::unique_ptr<LiveHandler> handler;
};
// `meanwhile()` runs on a thread of its own while the simulator publishes
// (from 150 ms after the first packet is due), its datagrams mixed into the lines'.
// With `glimpse`, the simulator's GLIMPSE server serves too, and the config
// is made as config(server port, GLIMPSE port). `poll(handler)` is the
// engine thread's duty cycle (default: handler.poll).
struct PlainPoll {
    void operator()(LiveHandler& h) const { h.poll(LiveHandler::kMaxWaitNs); }
};
template <class MakeConfig, class Meanwhile, class Poll = PlainPoll>
LiveRun run_live_with(SimOptions o, MakeConfig&& config, Meanwhile&& meanwhile, const GlimpseServerOptions* glimpse,
                      Poll&& poll = Poll{}) {
    o.epoch_ns = realtime_ns();
    const SimSchedule s = simulate(o);
    RerequestServer server(o, s);
    std::unique_ptr<GlimpseServer> g;
    if (glimpse != nullptr)
        g = std::make_unique<GlimpseServer>(*glimpse, [&s, &server] {
            const auto [session, last] = server.latest();
            return glimpse_spin(s, session, last);
        });
    LiveRun r;
    r.handler = std::make_unique<LiveHandler>(config(server.port(), g ? g->port() : std::uint16_t{0}));
    std::atomic<bool> done{false}, polling{false};
    std::thread publisher([&] {
        // The first packet decides a late join: the handler must be polling by
        // then, or line A's later packets could be read before line B's first.
        while (!polling.load()) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        r.truth = publish(o, s, server, g.get());
        done.store(true);
    });
    std::thread side([&] {
        while (!polling.load()) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(170));
        meanwhile();
    });
    while (!done.load()) {
        poll(*r.handler);
        polling.store(true);
    }
    publisher.join();
    side.join();
    for (int i = 0; i < 50; ++i) poll(*r.handler);  // what the sockets still hold
    return r;
}

template <class MakeConfig, class Meanwhile>
LiveRun run_live(SimOptions o, MakeConfig&& config, Meanwhile&& meanwhile) {
    return run_live_with(o, [&](std::uint16_t port, std::uint16_t) { return config(port); },
                         std::forward<Meanwhile>(meanwhile), nullptr);
}

template <class MakeConfig>
LiveRun run_live(SimOptions o, MakeConfig&& config) {
    return run_live(o, std::forward<MakeConfig>(config), [] {});
}

void expect_books_equal(const SimTruth& t, const Replay& core) {
    test::expect_itch_books_equal(t, core.book(), core.instruments());
}

TEST(ItchLive, LossOnBothLinesIsFilledByTheServerAndBooksEqualTheSimulators) {
    const Lines l{"239.255.33.1", "239.255.33.2", 31601, 31602};
    SimOptions o = sim_for(l);
    o.loss_a = o.loss_b = 0.08;
    o.burst_p = 0.01;
    o.burst_len = 3;
    o.dup = o.reorder = 0.01;
    // recover_from_start: should the session's first packets be lost on both
    // lines, the first packet seen would otherwise be a late join.
    const LiveRun r = run_live(o, [&](std::uint16_t port) { return handler_config(l, port, "recover_from_start = true"); });
    const auto ch = r.handler->core().channel(0);
    ASSERT_GT(r.truth.sessions[0].dropped_both, 0u);  // the lines alone could not have done it
    EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
    EXPECT_EQ(ch.counters.late_join_messages.get(), 0u);
    EXPECT_EQ(ch.counters.holes_given_up.get(), 0u);
    EXPECT_GT(ch.counters.holes_filled.get(), 0u);
    EXPECT_EQ(ch.next_seq, r.truth.sessions[0].messages + 1);
    const auto& rc = r.handler->client().counters(0);
    EXPECT_GT(rc.requests_sent.get(), 0u);
    EXPECT_GE(ch.counters.recovered_messages.get(), r.truth.sessions[0].dropped_both);
    EXPECT_EQ(rc.foreign_answers.get(), 0u);
    expect_books_equal(r.truth, r.handler->core());
}

TEST(ItchLive, SilentServerHolesAreGivenUpAsTheGroundTruthSaysAndInstrumentsSuspect) {
    const Lines l{"239.255.33.3", "239.255.33.4", 31603, 31604};
    SimOptions o = sim_for(l);
    o.loss_a = o.loss_b = 0.08;
    o.server_silent = true;
    const LiveRun r = run_live(o, [&](std::uint16_t port) { return handler_config(l, port); });
    const auto ch = r.handler->core().channel(0);
    ASSERT_GT(r.truth.sessions[0].dropped_both, 0u);
    EXPECT_EQ(ch.counters.lost_messages.get(), r.truth.sessions[0].dropped_both);
    EXPECT_GT(ch.counters.holes_given_up.get(), 0u);
    // Without answers, a start lost on both lines is a late join (the server was asked nothing for it).
    EXPECT_EQ(ch.counters.late_join_messages.get(), r.truth.sessions[0].late_join);
    EXPECT_GT(r.truth.requests, 0u);  // asked, never answered
    EXPECT_EQ(r.handler->client().counters(0).answers.get(), 0u);
    for (const SimStockTruth& st : r.truth.stocks)
        EXPECT_TRUE(r.handler->core().instruments().state(st.locate).suspect) << st.symbol;
}

// Both lines silent for the first 30% of the flow: the handler's first
// packet starts far beyond 1; with recover_from_start it asks the session
// from 1 and its books are clean.
TEST(ItchLive, LateJoinWithRecoverFromStartGivesCleanBooks) {
    const Lines l{"239.255.33.5", "239.255.33.6", 31605, 31606};
    SimOptions o = sim_for(l);
    o.outage_a = o.outage_b = {{0.0, 0.3}};
    const LiveRun r = run_live(o, [&](std::uint16_t port) { return handler_config(l, port, "recover_from_start = true"); });
    const auto ch = r.handler->core().channel(0);
    ASSERT_GT(r.truth.sessions[0].late_join, 1000u);
    EXPECT_EQ(ch.counters.late_join_messages.get(), 0u);
    EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
    EXPECT_EQ(ch.next_seq, r.truth.sessions[0].messages + 1);
    EXPECT_GE(ch.counters.recovered_messages.get(), r.truth.sessions[0].late_join);
    expect_books_equal(r.truth, r.handler->core());
}

// The same join without recover_from_start: counted as a late join, suspect.
TEST(ItchLive, LateJoinWithoutRecoverFromStartIsCountedAndSuspect) {
    const Lines l{"239.255.33.7", "239.255.33.8", 31607, 31608};
    SimOptions o = sim_for(l);
    o.outage_a = o.outage_b = {{0.0, 0.3}};
    const LiveRun r = run_live(o, [&](std::uint16_t port) { return handler_config(l, port); });
    const auto ch = r.handler->core().channel(0);
    EXPECT_EQ(ch.counters.late_join_messages.get(), r.truth.sessions[0].late_join);
    EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
    EXPECT_TRUE(r.handler->core().instruments().state(1).suspect);
}

// ITCH50.md "Implausible positions", live: one forged heartbeat of the
// current session at position 10^12, from the allowed source, in the middle
// of the flow. It made every instrument suspect for the day (a hole of
// 10^12 given up); now it is counted and nothing changes.
TEST(ItchLive, ImplausiblePositionForgedHeartbeatMidSessionMovesNothing) {
    const Lines l{"239.255.33.9", "239.255.33.10", 31609, 31610};
    SimOptions o = sim_for(l);
    const LiveRun r = run_live(
        o, [&](std::uint16_t port) { return handler_config(l, port); },
        [&] {
            MulticastSender forger("127.0.0.1");
            const Bytes hb = mold_heartbeat(o.session, 1'000'000'000'000);
            ASSERT_TRUE(forger.send(0xEFFF2109, l.port_a, hb));  // 239.255.33.9
        });
    const auto ch = r.handler->core().channel(0);
    EXPECT_EQ(ch.counters.implausible_positions.get(), 1u);
    EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
    EXPECT_EQ(ch.counters.holes_given_up.get(), 0u);
    EXPECT_EQ(ch.next_seq, r.truth.sessions[0].messages + 1);
    expect_books_equal(r.truth, r.handler->core());
    // The summary, metrics and run --json read the one counter table.
    const test::Json summary = test::Json::parse(r.handler->summary_json(realtime_ns()));
    EXPECT_EQ(summary["channels"][0]["implausible_positions"].as_int(), 1);
    // The state log says it once per change, at warn.
    const std::filesystem::path log_path =
        std::filesystem::temp_directory_path() / ("tickgate_itch_implausible_" + std::to_string(::getpid()) + ".log");
    {
        StateLog log(LoggingConfig{"info", log_path.string()}, StateLogOptions{});
        r.handler->log_state(log, realtime_ns());
        r.handler->log_state(log, realtime_ns());  // nothing new
        ASSERT_TRUE(log.flush());
    }
    std::ifstream in(log_path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(log_path);
    EXPECT_NE(text.find("implausible_positions: channel 1: 1 datagram(s)"), std::string::npos) << text;
    EXPECT_EQ(text.find("implausible_positions", text.find("implausible_positions") + 1), std::string::npos) << text;
}

// ---- GLIMPSE 5.0 snapshots over SoupBinTCP (ITCH50.md "Snapshot recovery"), 127.0.0.1 only.

constexpr const char* kGlimpsePassword = "e2e-pw-9c4";

Config glimpse_config(const Lines& l, std::uint16_t server_port, std::uint16_t glimpse_port,
                      const std::string& glimpse_keys = "") {
    ::setenv("TICKGATE_E2E_GLIMPSE_PW", kGlimpsePassword, 1);
    return parse_config(test::itch_config_text(l, 1, server_port,
                                               "[glimpse]\nusername = \"e2e\"\npassword_env = \"TICKGATE_E2E_GLIMPSE_PW\"\n" +
                                                   glimpse_keys,
                                               "glimpse = \"127.0.0.1:" + std::to_string(glimpse_port) + "\"\n"),
                        "e2e.toml");
}
// The server expects the config's credentials: the password reaches it from the environment variable.
GlimpseServerOptions glimpse_server() {
    GlimpseServerOptions g;
    g.username = "e2e";
    g.password = kGlimpsePassword;
    return g;
}
std::uint64_t failures(const LiveHandler& h, SnapshotFailure f) {
    return h.snapshot_counters(0).snapshot_failures[static_cast<std::size_t>(f)].get();
}
std::uint64_t all_failures(const LiveHandler& h) {
    std::uint64_t n = 0;
    for (const RelaxedCounter& c : h.snapshot_counters(0).snapshot_failures) n += c.get();
    return n;
}
std::string state_log_text(LiveHandler& h, const std::string& name) {
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("tickgate_glimpse_" + name + "_" + std::to_string(::getpid()) + ".log");
    {
        StateLog log(LoggingConfig{"info", path.string()}, StateLogOptions{});
        h.log_state(log, realtime_ns());
        EXPECT_TRUE(log.flush());
    }
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
    return text;
}

// Both lines silent for the first 30% of the flow: a late join, repaired by one snapshot.
TEST(ItchLiveGlimpse, LateJoinIsRepairedThroughGlimpseAndBooksEqualTheSimulators) {
    const Lines l{"239.255.36.1", "239.255.36.2", 31651, 31652};
    SimOptions o = sim_for(l);
    o.outage_a = o.outage_b = {{0.0, 0.3}};
    const GlimpseServerOptions g = glimpse_server();
    LiveRun r = run_live_with(
        o, [&](std::uint16_t port, std::uint16_t gport) { return glimpse_config(l, port, gport); }, [] {}, &g);
    const auto ch = r.handler->core().channel(0);
    ASSERT_GT(r.truth.sessions[0].late_join, 1000u);
    EXPECT_EQ(ch.counters.late_join_messages.get(), r.truth.sessions[0].late_join);  // still never ours
    EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
    EXPECT_EQ(ch.next_seq, r.truth.sessions[0].messages + 1);
    const SnapshotCounters& k = r.handler->snapshot_counters(0);
    EXPECT_EQ(k.snapshots_requested.get(), 1u);
    EXPECT_EQ(k.snapshots_applied.get(), 1u);
    EXPECT_EQ(all_failures(*r.handler), 0u);
    EXPECT_GT(k.snapshot_orders.get(), 0u);
    EXPECT_EQ(r.truth.glimpse_served, 1u);
    expect_books_equal(r.truth, r.handler->core());
    // run --json and the state log.
    const test::Json summary = test::Json::parse(r.handler->summary_json(realtime_ns()));
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
    const std::string view = r.handler->live_view(realtime_ns(), {}, "e2e.toml", 1.0, false);
    EXPECT_NE(view.find("ch   glimpse snapshot           requested   applied  last orders  failures\n"), std::string::npos)
        << view;
    const std::string orders = std::to_string(k.snapshot_orders.get());
    EXPECT_NE(view.find("1    applied                            1         1 " + std::string(12 - orders.size(), ' ') +
                        orders + "  none\n"),
              std::string::npos)
        << view;
}

// Both lines silent for 40..50% of the flow and a silent re-request
// server: the hole is given up (its messages counted lost), the instruments
// suspect, then clean again through a snapshot.
TEST(ItchLiveGlimpse, GivenUpHoleIsRepairedThroughGlimpseWithTheLostMessagesCounted) {
    const Lines l{"239.255.36.3", "239.255.36.4", 31653, 31654};
    SimOptions o = sim_for(l);
    o.outage_a = o.outage_b = {{0.4, 0.5}};
    o.server_silent = true;
    const GlimpseServerOptions g = glimpse_server();
    LiveRun r = run_live_with(
        o, [&](std::uint16_t port, std::uint16_t gport) { return glimpse_config(l, port, gport, "min_interval_ms = 100"); },
        [] {}, &g);
    const auto ch = r.handler->core().channel(0);
    ASSERT_GT(r.truth.sessions[0].dropped_both, 0u);
    EXPECT_EQ(ch.counters.lost_messages.get(), r.truth.sessions[0].dropped_both);
    EXPECT_GE(ch.counters.holes_given_up.get(), 1u);
    EXPECT_GE(r.handler->snapshot_counters(0).snapshots_applied.get(), 1u);
    EXPECT_EQ(all_failures(*r.handler), 0u);
    EXPECT_FALSE(ch.gave_up);
    expect_books_equal(r.truth, r.handler->core());
}

// The first connection drops mid-spin: nothing changes, one failure; the
// retry after min_interval_ms repairs the late join.
TEST(ItchLiveGlimpse, ConnectionDroppedMidSpinIsOneFailureAndTheRetryRepairs) {
    const Lines l{"239.255.36.5", "239.255.36.6", 31655, 31656};
    SimOptions o = sim_for(l);
    o.outage_a = o.outage_b = {{0.0, 0.3}};
    GlimpseServerOptions g = glimpse_server();
    g.drop_after = 20;
    LiveRun r = run_live_with(
        o, [&](std::uint16_t port, std::uint16_t gport) { return glimpse_config(l, port, gport, "min_interval_ms = 100"); },
        [] {}, &g);
    EXPECT_EQ(failures(*r.handler, SnapshotFailure::kDropped), 1u);
    EXPECT_EQ(all_failures(*r.handler), 1u);
    EXPECT_EQ(r.handler->snapshot_counters(0).snapshots_requested.get(), 2u);
    EXPECT_EQ(r.handler->snapshot_counters(0).snapshots_applied.get(), 1u);
    EXPECT_EQ(r.truth.glimpse_connections, 2u);
    EXPECT_EQ(r.handler->core().channel(0).counters.lost_messages.get(), 0u);
    expect_books_equal(r.truth, r.handler->core());
    const std::string text = state_log_text(*r.handler, "drop");
    EXPECT_NE(text.find("snapshot_failed: channel 1: connection dropped, retried after"), std::string::npos) << text;
}

// Login rejected: suspect stays, one failure, no retry, one log line with the reason, no password anywhere.
TEST(ItchLiveGlimpse, LoginRejectedIsOneFailureNotRetriedAndNoPasswordAnywhere) {
    const Lines l{"239.255.36.7", "239.255.36.8", 31657, 31658};
    SimOptions o = sim_for(l);
    o.outage_a = o.outage_b = {{0.0, 0.3}};
    GlimpseServerOptions g = glimpse_server();
    g.reject = true;
    LiveRun r = run_live_with(
        o, [&](std::uint16_t port, std::uint16_t gport) { return glimpse_config(l, port, gport, "min_interval_ms = 50"); },
        [] {}, &g);
    EXPECT_EQ(r.handler->snapshot_counters(0).snapshots_requested.get(), 1u);
    EXPECT_EQ(failures(*r.handler, SnapshotFailure::kLoginRejected), 1u);
    EXPECT_EQ(all_failures(*r.handler), 1u);
    EXPECT_EQ(r.handler->snapshot_counters(0).snapshots_applied.get(), 0u);
    EXPECT_EQ(r.truth.glimpse_rejected, 1u);
    for (const SimStockTruth& st : r.truth.stocks)
        EXPECT_TRUE(r.handler->core().instruments().state(st.locate).suspect) << st.symbol;
    const std::string text = state_log_text(*r.handler, "reject");
    EXPECT_NE(text.find("snapshot_failed: channel 1: login rejected (A), not retried"), std::string::npos) << text;
    const std::string view = r.handler->live_view(realtime_ns(), {}, "e2e.toml", 1.0, false);
    EXPECT_NE(view.find("1    given up (login rejected)          1         0            0  login_rejected 1\n"),
              std::string::npos)
        << view;
    const std::string summary = r.handler->summary_json(realtime_ns());
    EXPECT_EQ(text.find(kGlimpsePassword), std::string::npos);
    EXPECT_EQ(summary.find(kGlimpsePassword), std::string::npos);
    EXPECT_EQ(r.truth.to_json(o).find(kGlimpsePassword), std::string::npos);
}

// The engine API (issue 23 item 6): an update tells the engine a snapshot
// replaced a book (Verdict::kSnapshotApplied, book_changed: re-read it),
// once per instrument of the channel per applied snapshot; safe_quote
// answers suspect before it and ok after.
TEST(ItchLiveGlimpse, EngineIsToldOncePerInstrumentThatASnapshotReplacedItsBookAndSafeQuoteTurnsOk) {
    const Lines l{"239.255.36.9", "239.255.36.10", 31659, 31660};
    SimOptions o = sim_for(l);
    o.outage_a = o.outage_b = {{0.0, 0.3}};
    const GlimpseServerOptions g = glimpse_server();
    std::vector<std::uint32_t> told(kMaxLocates, 0);
    std::uint64_t updates = 0, other_verdicts = 0, suspect_in_update = 0, not_ok_after = 0;
    std::uint64_t quoted_before = 0, suspect_before = 0, applied_at_update = 0;
    const auto engine = [&](LiveHandler& h) {
        const Replay& core = h.core();
        if (h.snapshot_counters(0).snapshots_applied.get() == 0) {
            // Before the snapshot: every instrument seen since the late join is suspect.
            core.sequencer().venue().each_instrument(0, [&](std::uint32_t id) {
                const InstrumentHandle handle{id, core.instruments().state(id).generation};
                ++quoted_before;
                if (core.safe_quote(handle, realtime_ns()).verdict.reason == GateReason::kSuspect) ++suspect_before;
            });
        }
        h.poll(LiveHandler::kMaxWaitNs, [&](const Update& u) {
            ++updates;
            applied_at_update = h.snapshot_counters(0).snapshots_applied.get();
            if (u.verdict != Verdict::kSnapshotApplied || !u.book_changed) ++other_verdicts;
            if (u.suspect) ++suspect_in_update;
            ++told[u.instrument_id];
            // Re-read through the engine's own path: find the symbol, ask the gate.
            const auto handle = core.find(core.instruments().state(u.instrument_id).symbol);
            if (!handle || !core.safe_quote(*handle, realtime_ns()).ok()) ++not_ok_after;
        });
    };
    LiveRun r = run_live_with(
        o, [&](std::uint16_t port, std::uint16_t gport) { return glimpse_config(l, port, gport); }, [] {}, &g, engine);
    ASSERT_EQ(r.handler->snapshot_counters(0).snapshots_applied.get(), 1u);
    EXPECT_EQ(applied_at_update, 1u);  // told in the duty cycle that applied it
    EXPECT_GT(quoted_before, 0u);
    EXPECT_EQ(suspect_before, quoted_before);
    std::uint64_t instruments = 0;
    r.handler->core().sequencer().venue().each_instrument(0, [&](std::uint32_t id) {
        ++instruments;
        EXPECT_EQ(told[id], 1u) << "instrument " << id;
    });
    for (const SimStockTruth& st : r.truth.stocks) EXPECT_EQ(told[st.locate], 1u) << st.symbol;
    EXPECT_EQ(updates, instruments);
    EXPECT_EQ(other_verdicts, 0u);
    EXPECT_EQ(suspect_in_update, 0u);
    EXPECT_EQ(not_ok_after, 0u);
    expect_books_equal(r.truth, r.handler->core());
}

// Acceptance (e): the snapshot buffer ([glimpse] buffer_mb = 1) fills
// during a slow spin: one buffer_full failure, and what it had kept is
// applied in order, once. A second handler without GLIMPSE listens to the
// same lines from the same instant: both see the same late join, so any
// buffered message lost, applied twice or out of order would leave their
// books or counters different.
TEST(ItchLiveGlimpse, SnapshotBufferTooSmallForTheSpinIsOneFailureAndTheBufferedDatagramsApplyInOrderOnce) {
    const Lines l{"239.255.36.11", "239.255.36.12", 31661, 31662};
    SimOptions o = sim_for(l);
    o.messages = 48000;  // 2.4 s at 20,000/s: ~30,000 messages (~2 MB kept) arrive during the 1.5 s spin
    o.outage_a = o.outage_b = {{0.0, 0.05}};
    GlimpseServerOptions g = glimpse_server();
    g.delay_ms = 1500;
    Config plain_cfg = parse_config(
        "[itch]\nmax_orders = 262144\nmax_levels = 65536\n[moldudp64]\ngap_timeout_ms = 200\n[[channel]]\nid = 1\n"
        "protocol = \"itch50\"\na = { group = \"" + std::string(l.group_a) + "\", port = " + std::to_string(l.port_a) +
            " }\nb = { group = \"" + l.group_b + "\", port = " + std::to_string(l.port_b) + " }\n",
        "plain.toml");
    LiveHandler plain(plain_cfg);
    LiveRun r = run_live_with(
        o,
        [&](std::uint16_t port, std::uint16_t gport) {
            return glimpse_config(l, port, gport, "buffer_mb = 1\nmin_interval_ms = 3600000");  // one attempt
        },
        [] {}, &g,
        [&](LiveHandler& h) {
            h.poll(LiveHandler::kMaxWaitNs);
            plain.poll(0);
        });
    for (int i = 0; i < 50; ++i) plain.poll(LiveHandler::kMaxWaitNs);
    const SnapshotCounters& k = r.handler->snapshot_counters(0);
    EXPECT_EQ(k.snapshots_requested.get(), 1u);
    EXPECT_EQ(failures(*r.handler, SnapshotFailure::kBufferFull), 1u);
    EXPECT_EQ(all_failures(*r.handler), 1u);
    EXPECT_EQ(k.snapshots_applied.get(), 0u);
    const auto a = r.handler->core().channel(0);
    const auto b = plain.core().channel(0);
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
        const InstrumentState& x = r.handler->core().instruments().state(st.locate);
        const InstrumentState& y = plain.core().instruments().state(st.locate);
        EXPECT_EQ(x.counters.accepted, y.counters.accepted);
        EXPECT_EQ(x.last_seq, y.last_seq);
        EXPECT_TRUE(x.suspect);  // still the late join: the snapshot was not applied
        EXPECT_EQ(r.handler->core().sequencer().venue().counters(st.locate).unknown_orders,
                  plain.core().sequencer().venue().counters(st.locate).unknown_orders);
        EXPECT_EQ(r.handler->core().book().open_orders(st.locate), plain.core().book().open_orders(st.locate));
        for (const Side side : {Side::kBid, Side::kAsk}) {
            std::vector<std::pair<std::uint64_t, std::uint64_t>> got, want;
            for (const Level lv : r.handler->core().book().side(st.locate, side)) got.emplace_back(lv.price, lv.qty);
            for (const Level lv : plain.core().book().side(st.locate, side)) want.emplace_back(lv.price, lv.qty);
            EXPECT_EQ(got, want);
        }
        accepted += x.counters.accepted;
    }
    EXPECT_GT(accepted, 0u);
    const std::string text = state_log_text(*r.handler, "buffer");
    EXPECT_NE(text.find("snapshot_failed: channel 1: buffer full"), std::string::npos) << text;
}

}  // namespace

// ITCH50.md "Locates and order references are a channel's own", live: two
// configured channels carry locate 5 and order reference 1 each; they are
// two instruments (ids 5 and 65,541) and two orders. Then a new session on
// the second channel empties only its books and shows its locate, not an
// empty symbol (issue 21 item 12). Loopback multicast, TTL 0.
TEST(ItchLiveRule, LocatesAndOrderReferencesAreAChannelsOwnAndANewSessionShowsTheLocate) {
    const Config cfg = parse_config(
        "[itch]\nmax_orders = 4096\nmax_levels = 4096\n"
        "[[channel]]\nid = 1\nprotocol = \"itch50\"\n"
        "a = { group = \"239.255.33.9\", port = 31609 }\nb = { group = \"239.255.33.10\", port = 31610 }\n"
        "[[channel]]\nid = 2\nprotocol = \"itch50\"\n"
        "a = { group = \"239.255.33.11\", port = 31611 }\nb = { group = \"239.255.33.12\", port = 31612 }\n",
        "e2e.toml");
    LiveHandler h(cfg);
    MulticastSender tx;
    const auto send = [&](std::uint32_t group, std::uint16_t port, const Bytes& d) {
        ASSERT_TRUE(tx.send(group, port, {d.data(), d.size()}));
    };
    const auto poll_until = [&](auto&& done) {
        for (int i = 0; i < 2000 && !done(); ++i) h.poll(LiveHandler::kMaxWaitNs);
    };
    send(0xEFFF2109, 31609, mold_packet("SESSION001", 1, std::vector<Bytes>{stock_directory(5, "AAPL"), add_order(5, 1, 'B', 100, 1000)}));
    send(0xEFFF210B, 31611, mold_packet("SESSION002", 1, std::vector<Bytes>{stock_directory(5, "MSFT"), add_order(5, 1, 'S', 200, 2000),
                                                                      delete_order(5, 1), add_order(5, 2, 'S', 300, 3000)}));
    poll_until([&] { return h.core().channel(0).next_seq == 3 && h.core().channel(1).next_seq == 5; });
    const OrderBook& book = h.core().book();
    EXPECT_EQ(book.open_orders(5), 1u);
    EXPECT_EQ(book.open_orders(65536 + 5), 1u);
    EXPECT_STREQ(h.core().instruments().state(5).symbol, "AAPL");
    EXPECT_STREQ(h.core().instruments().state(65536 + 5).symbol, "MSFT");
    EXPECT_NE(h.summary_json(realtime_ns()).find("\"locate\": 5"), std::string::npos);

    send(0xEFFF210B, 31611, mold_packet("SESSION003", 1, std::vector<Bytes>{add_order(5, 9, 'B', 10, 900)}));
    poll_until([&] { return h.core().channel(1).counters.session_changes.get() == 1 && h.core().channel(1).next_seq == 2; });
    EXPECT_STREQ(h.core().instruments().state(65536 + 5).symbol, "5");
    EXPECT_EQ(book.open_orders(65536 + 5), 1u);  // the new session's only
    EXPECT_EQ(book.open_orders(5), 1u);          // the other channel untouched
    EXPECT_STREQ(h.core().instruments().state(5).symbol, "AAPL");
}
