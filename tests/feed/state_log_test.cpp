// State logging: sequencer updates become the right log lines (file sink),
// non-changes log nothing, rate limiting (N lines, then "suppressed K
// similar"), a full ring drops and counts, line down/up from line stats.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/state_log.hpp"

namespace tickgate {
namespace {

namespace fs = std::filesystem;

class StateLogTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        path_ = fs::temp_directory_path() /
                ("tickgate_state_log_" + std::to_string(::getpid()) + "_" + info->name() + ".log");
        fs::remove(path_);
    }
    void TearDown() override { fs::remove(path_); }

    LoggingConfig config(const std::string& level = "info") const { return {level, path_.string()}; }

    std::vector<std::string> lines() const {
        std::ifstream f(path_);
        std::vector<std::string> out;
        for (std::string l; std::getline(f, l);) out.push_back(l);
        return out;
    }
    std::string text() const {
        std::ostringstream s;
        for (const auto& l : lines()) s << l << '\n';
        return s.str();
    }
    static bool contains(const std::string& line, const std::string& part) {
        return line.find(part) != std::string::npos;
    }

    fs::path path_;
};

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;

Event quote(std::uint32_t id, std::uint64_t seq, std::int64_t t = kT0) {
    Event e{};
    e.kind = EventKind::kQuote;
    e.instrument_id = id;
    e.channel_id = 1;
    e.line = 0;
    e.recv_ns = t;
    e.u.quote = {seq, t, 100, 101, 1, 1};
    return e;
}
Event delta(std::uint32_t id, std::uint64_t seq) {
    Event e{};
    e.kind = EventKind::kDelta;
    e.instrument_id = id;
    e.channel_id = 1;
    e.line = 1;
    e.recv_ns = kT0;
    e.u.delta = {seq, kT0, 100, 5, 0, 0};
    return e;
}
Event snapshot(std::uint32_t id, std::uint64_t seq) {
    Event e{};
    e.kind = EventKind::kSnapshotBegin;
    e.instrument_id = id;
    e.channel_id = 1;
    e.recv_ns = kT0;
    e.u.snapshot = {seq, kT0, 0, 0, 0};
    return e;
}
Event heartbeat(std::uint32_t id, std::uint64_t next) {
    Event e{};
    e.kind = EventKind::kHeartbeat;
    e.instrument_id = id;
    e.channel_id = 1;
    e.recv_ns = kT0;
    e.u.heartbeat = {next, kT0};
    return e;
}
Event session_change(std::uint16_t channel, std::uint32_t session) {
    Event e{};
    e.kind = EventKind::kSessionChange;
    e.channel_id = channel;
    e.recv_ns = kT0;
    e.u.session.session = session;
    return e;
}
Event data_lost(std::uint32_t id) {
    Event e{};
    e.kind = EventKind::kDataLost;
    e.instrument_id = id;
    e.channel_id = 1;
    e.recv_ns = kT0;
    return e;
}

// Issue 26 item 10: lines said "gap opened: ..." while the "suppressed"
// lines, the JSON and the metrics said "gap_opened". Every kind's line
// starts with its to_string name, whatever the record.
TEST_F(StateLogTest, KindNamesAreSpelledOneWayInEveryLine) {
    StateLog log(config("trace"), {.max_instruments = 64, .max_lines_per_window = 100});
    for (std::size_t k = 0; k < kStateChangeKinds; ++k) {
        StateChange c;
        c.time_ns = kT0;
        c.kind = static_cast<StateChangeKind>(k);
        c.channel = 3;
        c.line = 0;
        c.value = 1;
        ASSERT_TRUE(log.push(c));
    }
    log.stop();
    const auto l = lines();
    ASSERT_EQ(l.size(), kStateChangeKinds) << text();
    for (std::size_t k = 0; k < kStateChangeKinds; ++k) {
        const std::string_view name = to_string(static_cast<StateChangeKind>(k));
        EXPECT_EQ(name.find(' '), std::string_view::npos) << name;
        EXPECT_TRUE(contains(l[k], "] " + std::string(name) + ": channel 3")) << l[k];
    }
}

TEST_F(StateLogTest, SequencerUpdatesBecomeTheRightLinesInOrder) {
    Capacity cap;
    cap.max_instruments = 64;
    Handler seq(cap, GateConfig{});
    seq.instruments().define(7, "ESZ5", -2);
    StateLog log(config(), {.max_instruments = 64}, &seq.instruments());
    auto apply = [&](const Event& e) { log.on_update(seq.apply(e), e); };

    apply(quote(7, 1));       // cold start: nothing
    apply(quote(7, 2));       // in sequence: nothing
    apply(delta(7, 5));       // gap of 2, suspect
    apply(delta(7, 6));       // still suspect: nothing
    apply(snapshot(7, 6));    // repaired: recovered
    apply(snapshot(7, 3));    // behind the book: stale snapshot
    apply(heartbeat(7, 10));  // heartbeat reveals 3 lost: gap + suspect
    apply(quote(7, 10));      // a full quote: recovered
    apply(session_change(1, 2));
    apply(data_lost(7));      // overload
    apply(quote(7, 1));       // after the reset: clean again -> recovered
    log.stop();

    const auto l = lines();
    ASSERT_EQ(l.size(), 10u) << text();
    EXPECT_TRUE(contains(l[0], "[warning] gap_opened: instrument 7 ESZ5 channel 1: 2 message(s) lost")) << l[0];
    EXPECT_TRUE(contains(l[1], "[warning] suspect: instrument 7 ESZ5 channel 1: gap, book unreliable")) << l[1];
    EXPECT_TRUE(contains(l[2], "[info] recovered: instrument 7 ESZ5 channel 1")) << l[2];
    EXPECT_TRUE(contains(l[3], "[info] stale_snapshot: instrument 7 ESZ5 channel 1: snapshot seq 3")) << l[3];
    EXPECT_TRUE(contains(l[4], "[warning] gap_opened: instrument 7 ESZ5 channel 1: 3 message(s) lost")) << l[4];
    EXPECT_TRUE(contains(l[5], "[warning] suspect: instrument 7")) << l[5];
    EXPECT_TRUE(contains(l[6], "[info] recovered: instrument 7")) << l[6];
    EXPECT_TRUE(contains(l[7], "[warning] session_change: channel 1: new session 2")) << l[7];
    EXPECT_TRUE(contains(l[8], "[error] overload: instrument 7 ESZ5 channel 1")) << l[8];
    EXPECT_TRUE(contains(l[9], "[info] recovered: instrument 7 ESZ5 channel 1")) << l[9];
    // The time stamp of a line is the event's arrival time.
    EXPECT_TRUE(contains(l[0], "2023-11-1")) << l[0];
    EXPECT_EQ(log.pushed(), 10u);
    EXPECT_EQ(log.dropped(), 0u);
}

// A symbol learned off the wire reaches the log as text: ESC, BEL, DEL and
// the 8-bit CSI 0x9b are written as \xHH, so `tail -f` on the log cannot
// clear a screen or move a cursor.
TEST_F(StateLogTest, HostileSymbolIsLoggedAsText) {
    Capacity cap;
    cap.max_instruments = 64;
    Handler seq(cap, GateConfig{});
    seq.instruments().define(7, "\x1b[2J\x1b[HOK\x07\x7f\x9b", -2);
    StateLog log(config(), {.max_instruments = 64}, &seq.instruments());
    auto apply = [&](const Event& e) { log.on_update(seq.apply(e), e); };
    apply(quote(7, 1));
    apply(delta(7, 5));  // gap of 3, suspect
    log.stop();

    const auto l = lines();
    ASSERT_EQ(l.size(), 2u) << text();
    EXPECT_TRUE(contains(l[0], R"(gap_opened: instrument 7 \x1b[2J\x1b[HOK\x07\x7f\x9b channel 1: 3 message(s) lost)"))
        << l[0];
    for (const char ch : text()) {
        const auto c = static_cast<unsigned char>(ch);
        EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << "raw byte " << int{c} << " in the log";
    }
}

TEST_F(StateLogTest, NonChangesLogNothing) {
    Capacity cap;
    cap.max_instruments = 16;
    Handler seq(cap, GateConfig{});
    StateLog log(config("trace"), {.max_instruments = 16}, &seq.instruments());
    auto apply = [&](const Event& e) { log.on_update(seq.apply(e), e); };
    for (std::uint64_t s = 1; s <= 100; ++s) apply(quote(3, s));
    apply(quote(3, 50));      // duplicate
    apply(heartbeat(3, 101));  // in step
    apply(snapshot(3, 100));  // at the book: applied, was clean
    for (std::uint64_t s = 1; s <= 10; ++s) apply(delta(4, s));
    EXPECT_TRUE(log.flush());
    log.stop();
    EXPECT_EQ(log.pushed(), 0u);
    EXPECT_EQ(lines().size(), 0u) << text();
}

// Issue 21 item 7: a message dropped for want of capacity (an instrument id
// beyond max_instruments; MDP3: no slot or definition room) is logged, by channel.
TEST_F(StateLogTest, AMessageBeyondCapacityIsLogged) {
    Capacity cap;
    cap.max_instruments = 16;
    Handler seq(cap, GateConfig{});
    StateLog log(config("trace"), {.max_instruments = 16}, &seq.instruments());
    const Event e = quote(99, 1);
    log.on_update(seq.apply(e), e);
    EXPECT_TRUE(log.flush());
    log.stop();
    ASSERT_EQ(lines().size(), 1u) << text();
    EXPECT_NE(text().find("capacity: channel"), std::string::npos) << text();
    EXPECT_NE(text().find("instrument 99 dropped, beyond capacity.max_instruments"), std::string::npos) << text();
}

TEST_F(StateLogTest, RateLimitAllowsNLinesThenOneSuppressionLine) {
    StateLogOptions o;
    o.max_lines_per_window = 3;
    o.window_ms = 60'000;  // nothing expires during the test: the suppression line comes at stop()
    StateLog log(config(), o);
    StateChange c;
    c.kind = StateChangeKind::kGapOpened;
    c.instrument_id = 7;
    c.channel = 1;
    c.value = 1;
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(log.push(c));
    c.instrument_id = 8;  // another instrument has a window of its own
    EXPECT_TRUE(log.push(c));
    ASSERT_TRUE(log.flush());
    {
        const auto l = lines();
        ASSERT_EQ(l.size(), 4u) << text();
        for (int i = 0; i < 3; ++i) EXPECT_TRUE(contains(l[i], "gap_opened: instrument 7 channel 1")) << l[i];
        EXPECT_TRUE(contains(l[3], "gap_opened: instrument 8 channel 1")) << l[3];
    }
    log.stop();
    const auto l = lines();
    ASSERT_EQ(l.size(), 5u) << text();
    EXPECT_TRUE(contains(l[4], "gap_opened: instrument 7 channel 1: suppressed 7 similar in the last 60000 ms")) << l[4];
    EXPECT_EQ(log.suppressed(), 7u);
    EXPECT_EQ(log.logged(), 5u);
}

TEST_F(StateLogTest, SuppressionLineComesWhenTheWindowEnds) {
    StateLogOptions o;
    o.max_lines_per_window = 2;
    o.window_ms = 150;
    StateLog log(config(), o);
    StateChange c;
    c.kind = StateChangeKind::kOverload;
    c.instrument_id = 3;
    for (int i = 0; i < 6; ++i) log.push(c);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (lines().size() < 3 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto l = lines();
    ASSERT_EQ(l.size(), 3u) << text();
    EXPECT_TRUE(contains(l[2], "overload: instrument 3 channel 0: suppressed 4 similar in the last 150 ms")) << l[2];
    // A new window: logged again.
    log.push(c);
    ASSERT_TRUE(log.flush());
    EXPECT_EQ(lines().size(), 4u) << text();
    log.stop();
}

TEST_F(StateLogTest, FullRingDropsAndCountsWithoutBlocking) {
    StateLogOptions o;
    o.ring_capacity = 4;
    o.autostart = false;  // nobody consumes yet
    StateLog log(config(), o);
    StateChange c;
    c.kind = StateChangeKind::kSuspect;
    for (std::uint32_t i = 0; i < 4; ++i) {
        c.instrument_id = i;
        EXPECT_TRUE(log.push(c));
    }
    c.instrument_id = 4;
    EXPECT_FALSE(log.push(c));
    EXPECT_FALSE(log.push(c));
    EXPECT_EQ(log.pushed(), 4u);
    EXPECT_EQ(log.dropped(), 2u);
    log.start();
    ASSERT_TRUE(log.flush());
    log.stop();
    const auto l = lines();
    ASSERT_EQ(l.size(), 5u) << text();
    for (std::uint32_t i = 0; i < 4; ++i)
        EXPECT_TRUE(contains(l[i], "suspect: instrument " + std::to_string(i))) << l[i];
    EXPECT_TRUE(contains(l[4], "[error] state log overflow: 2 state change(s) dropped, ring full (2 in total)")) << l[4];
}

TEST_F(StateLogTest, LevelFiltersAndBadLevelOrSinkThrow) {
    {
        StateLog log(config("warn"));
        StateChange c;
        c.kind = StateChangeKind::kRecovered;  // info: filtered
        c.instrument_id = 1;
        log.push(c);
        c.kind = StateChangeKind::kSuspect;    // warning: kept
        log.push(c);
        ASSERT_TRUE(log.flush());
        log.stop();
    }
    const auto l = lines();
    ASSERT_EQ(l.size(), 1u) << text();
    EXPECT_TRUE(contains(l[0], "suspect: instrument 1"));
    EXPECT_THROW(StateLog(LoggingConfig{"loud", path_.string()}), std::invalid_argument);
    // A sink under a regular file cannot be created.
    EXPECT_THROW(StateLog(LoggingConfig{"info", (path_ / "sub" / "state.log").string()}), std::runtime_error);
    StateLog to_stderr(LoggingConfig{"info", "stderr"});
}

// A sink that cannot be written (a full disk: /dev/full) loses its lines,
// but not silently: each failure is counted and the first is reported once
// on stderr; the logger thread goes on.
TEST_F(StateLogTest, SinkFailuresAreCountedAndReportedOnce) {
    ::testing::internal::CaptureStderr();
    {
        StateLog log(LoggingConfig{"info", "/dev/full"});
        StateChange c;
        c.kind = StateChangeKind::kSuspect;
        for (std::uint32_t i = 0; i < 3; ++i) {
            c.instrument_id = i;
            ASSERT_TRUE(log.push(c));
            ASSERT_TRUE(log.flush());  // one write and flush per record
        }
        log.stop();
        EXPECT_EQ(log.pushed(), 3u);
        EXPECT_GE(log.failures(), 3u);
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    const std::string report = "tickgate: state log: write failed: ";
    const auto at = err.find(report);
    ASSERT_NE(at, std::string::npos) << err;
    EXPECT_EQ(err.find(report, at + 1), std::string::npos) << "reported more than once:\n" << err;
    EXPECT_NE(err.find("later failures are only counted"), std::string::npos) << err;
}

TEST_F(StateLogTest, LineDownWhileTheOtherLineHasTrafficThenLineUp) {
    std::vector<std::unique_ptr<LineStats>> stats;
    for (std::uint8_t line = 0; line < 2; ++line) {
        auto s = std::make_unique<LineStats>();
        s->channel_id = 4;
        s->line = line;
        stats.push_back(std::move(s));
    }
    LineStats& a = *stats[0];
    LineStats& b = *stats[1];
    StateLog log(config());
    constexpr std::int64_t ms = 1'000'000;
    const std::int64_t t = kT0;
    log.on_line_activity(stats, t);  // initial view
    a.packets.add(10);
    b.packets.add(10);
    log.on_line_activity(stats, t + 500 * ms);
    a.packets.add(10);                            // only A moves
    log.on_line_activity(stats, t + 1200 * ms);   // B silent 700 ms: not yet
    a.packets.add(10);
    log.on_line_activity(stats, t + 1600 * ms);   // B silent 1100 ms, A active: down
    a.packets.add(10);
    log.on_line_activity(stats, t + 1800 * ms);   // still down: no repeat
    b.packets.add(1);
    log.on_line_activity(stats, t + 2500 * ms);   // B back: up
    // Both silent (a quiet market): nothing.
    log.on_line_activity(stats, t + 9000 * ms);
    // Kernel drops on A: overload.
    a.kernel_drops.add(3);
    log.on_line_activity(stats, t + 9100 * ms);
    ASSERT_TRUE(log.flush());
    log.stop();
    const auto l = lines();
    ASSERT_EQ(l.size(), 3u) << text();
    EXPECT_TRUE(contains(l[0], "[error] line_down: channel 4 line B: no packets for 1100 ms while line A has traffic"))
        << l[0];
    EXPECT_TRUE(contains(l[1], "[info] line_up: channel 4 line B: packets again after 2000 ms")) << l[1];
    EXPECT_TRUE(contains(l[2], "[error] overload: channel 4 line A: the socket buffer dropped 3 datagram(s)")) << l[2];
}

// MDP3.md "Snapshot": joins and leaves of the snapshot feed are logged
// (the receiving thread counts them per snapshot line; the engine thread's
// periodic on_line_activity turns a rise into a line), and a snapshot line
// silent while it is left is not "down" because the incremental lines have
// traffic: a line's partner is the other line of its pair.
TEST_F(StateLogTest, SnapshotFeedJoinsAndLeavesAreLoggedAndALeftSnapshotLineIsNotDown) {
    std::vector<std::unique_ptr<LineStats>> stats;
    for (const std::uint8_t line : {kLineA, kLineB, kSnapshotLineA, kSnapshotLineB}) {
        auto s = std::make_unique<LineStats>();
        s->channel_id = 310;
        s->line = line;
        stats.push_back(std::move(s));
    }
    StateLog log(config());
    constexpr std::int64_t ms = 1'000'000;
    stats[2]->snapshot_joins.add();  // joined before the first look: still logged
    log.on_line_activity(stats, kT0);
    stats[2]->snapshot_leaves.add();
    for (int step = 1; step <= 4; ++step) {  // A and B busy for 2 s, the snapshot lines silent
        stats[0]->packets.add(10);
        stats[1]->packets.add(10);
        log.on_line_activity(stats, kT0 + step * 500 * ms);
    }
    ASSERT_TRUE(log.flush());
    log.stop();
    const auto l = lines();
    ASSERT_EQ(l.size(), 2u) << text();
    EXPECT_TRUE(contains(l[0], "[info] snapshot_join: channel 310 line snapshot_a: joined")) << l[0];
    EXPECT_TRUE(contains(l[1], "[info] snapshot_leave: channel 310 line snapshot_a: left (every instrument clean)"))
        << l[1];
}

}  // namespace
}  // namespace tickgate
