// The ITCH 5.0 simulator: a deterministic, well-formed MoldUDP64 session
// (S and R first, every order message type, heartbeats, end of session),
// its ground truth checked against the handler offline (sim --pcap ->
// Replay -> books and counts), and the re-request server's answers.
#include "tickgate/feed/itch50/simulator.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "tickgate/feed/itch50/replay.hpp"
#include "tickgate/feed/itch50/wire.hpp"

namespace tickgate::itch50 {
namespace {

namespace fs = std::filesystem;

SimOptions small(std::uint64_t messages = 6000) {
    SimOptions o;
    o.stocks = 40;
    o.messages = messages;
    return o;
}

fs::path temp_file(const std::string& name) {
    return fs::temp_directory_path() / ("tickgate_itchsim_" + std::to_string(::getpid()) + "_" + name);
}

// Every message of every distinct packet, in position order of the first session.
std::vector<std::vector<std::byte>> messages_of(const SimSchedule& s) { return s.store.front(); }

TEST(ItchSimulator, SameSeedSameScheduleOtherSeedOtherFlow) {
    SimOptions o = small();
    o.loss_a = o.loss_b = 0.05;
    o.dup = o.reorder = 0.02;
    o.restart_at = 0.5;
    const SimSchedule a = simulate(o), b = simulate(o);
    ASSERT_EQ(a.sends.size(), b.sends.size());
    for (std::size_t i = 0; i < a.sends.size(); ++i) {
        EXPECT_EQ(a.packets[a.sends[i].packet], b.packets[b.sends[i].packet]) << i;
        EXPECT_EQ(a.sends[i].time_ns, b.sends[i].time_ns) << i;
        EXPECT_EQ(a.sends[i].line_b, b.sends[i].line_b) << i;
    }
    o.seed = 2;
    EXPECT_NE(simulate(o).store.front(), a.store.front());
}

// S start of messages and the R directory first, then every order message
// type of the flow, the end-of-day S events, and the last datagram an end of
// session carrying the next position.
TEST(ItchSimulator, SessionStartsWithDirectoryHasEveryOrderTypeAndEnds) {
    const SimOptions o = small();
    const SimSchedule s = simulate(o);
    const auto msgs = messages_of(s);
    ASSERT_GT(msgs.size(), o.stocks + 1);
    EXPECT_EQ(static_cast<char>(msgs[0][0]), 'S');
    EXPECT_EQ(static_cast<char>(msgs[0][11]), 'O');
    for (std::uint32_t i = 1; i <= o.stocks; ++i) EXPECT_EQ(static_cast<char>(msgs[i][0]), 'R') << i;
    std::map<char, int> types;
    for (const auto& m : msgs) ++types[static_cast<char>(m[0])];
    for (const char t : {'A', 'F', 'E', 'C', 'X', 'D', 'U'}) EXPECT_GT(types[t], 0) << t;
    EXPECT_EQ(static_cast<char>(msgs.back()[11]), 'C');  // end of messages
    const moldudp64::Key last = moldudp64::read_key(s.packets[s.sends.back().packet], 0);
    EXPECT_EQ(last.kind, moldudp64::PacketKind::kEndOfSession);
    EXPECT_EQ(last.seq, msgs.size() + 1);
    EXPECT_GT(s.truth.heartbeats, 0u);
    // Every message is at least its type's ITCH 5.0 size (the decoder's bounds).
    for (const auto& m : msgs) EXPECT_GE(m.size(), size_of(static_cast<std::uint8_t>(m[0])));
}

Config replay_config() {
    Config c;
    c.itch.max_orders = 1 << 16;
    c.itch.max_levels = 1 << 14;
    return c;
}

void expect_books_equal(const SimTruth& t, const Replay& r) {
    for (const SimStockTruth& st : t.stocks) {
        SCOPED_TRACE(st.symbol);
        EXPECT_EQ(r.handler().book().open_orders(st.locate), st.open_orders);
        for (const Side side : {Side::kBid, Side::kAsk}) {
            const std::vector<SimLevel>& want = side == Side::kBid ? st.bids : st.asks;
            std::vector<std::pair<std::uint64_t, std::uint64_t>> got, exp;
            for (const Level l : r.handler().book().side(st.locate, side)) got.emplace_back(l.price, l.qty);
            for (const SimLevel& l : want) exp.emplace_back(l.price, l.shares);
            EXPECT_EQ(got, exp);
        }
        EXPECT_EQ(std::string(r.handler().instruments().state(st.locate).symbol), st.symbol);
    }
}

TEST(ItchSimulator, PcapWithoutLossReplaysToTheGroundTruth) {
    const fs::path pcap = temp_file("clean.pcap");
    const SimTruth t = simulate_to_capture(small(), pcap.string());
    Replay r(replay_config());
    (void)r.run(pcap.string());
    fs::remove(pcap);
    ASSERT_EQ(t.sessions.size(), 1u);
    expect_books_equal(t, r);
    // Two channels without a config (one per group:port), each the whole session.
    ASSERT_EQ(r.front().channels().size(), 2u);
    for (std::uint32_t ch = 0; ch < 2; ++ch) {
        EXPECT_EQ(r.front().channel(ch).next_seq, t.sessions[0].messages + 1);
        EXPECT_EQ(r.front().channel(ch).counters.lost_messages.get(), 0u);
    }
    for (const SimStockTruth& st : t.stocks) EXPECT_FALSE(r.handler().instruments().state(st.locate).suspect) << st.symbol;
}

Config two_line_config() {
    Config c = replay_config();
    ChannelConfig ch;
    ch.id = 30;
    ch.protocol = "itch50";
    ch.a = {"239.255.30.1", 31301, "127.0.0.1"};
    ch.b = {"239.255.30.2", 31302, "127.0.0.1"};
    c.channels.push_back(ch);
    return c;
}

// Offline there is no server: what neither line carried is lost, exactly
// as the ground truth's "without_server" says, and the instruments suspect.
TEST(ItchSimulator, LossOnBothLinesIsLostAsTheGroundTruthSays) {
    SimOptions o = small();
    o.loss_a = o.loss_b = 0.1;
    o.burst_p = 0.01;
    o.burst_len = 3;
    const fs::path pcap = temp_file("lossy.pcap");
    const SimTruth t = simulate_to_capture(o, pcap.string());
    Replay r(two_line_config());
    (void)r.run(pcap.string());
    fs::remove(pcap);
    ASSERT_GT(t.sessions[0].dropped_both, 0u);
    EXPECT_EQ(r.front().channel(0).counters.lost_messages.get(), t.sessions[0].dropped_both);
    EXPECT_EQ(r.front().channel(0).counters.late_join_messages.get(), 0u);
    EXPECT_TRUE(r.handler().instruments().state(1).suspect);
}

// A restart: the end of session, then a new session read from 1 (books of
// the new session only, not suspect), and one late old-session packet.
TEST(ItchSimulator, RestartIsANewCompleteSessionAndALateOldPacketIsStale) {
    SimOptions o = small();
    o.restart_at = 0.5;
    const fs::path pcap = temp_file("restart.pcap");
    const SimTruth t = simulate_to_capture(o, pcap.string());
    Replay r(two_line_config());
    (void)r.run(pcap.string());
    fs::remove(pcap);
    ASSERT_EQ(t.sessions.size(), 2u);
    EXPECT_EQ(t.sessions[1].session, "SIM0000002");
    EXPECT_EQ(t.late_old_session, 1u);
    EXPECT_EQ(r.front().channel(0).counters.session_changes.get(), 1u);
    EXPECT_EQ(r.front().channel(0).counters.stale_session_packets.get(), 1u);
    EXPECT_EQ(r.front().channel(0).next_seq, t.sessions[1].messages + 1);
    expect_books_equal(t, r);
    EXPECT_FALSE(r.handler().instruments().state(1).suspect);
}

// ---- the re-request server

struct Requester {
    int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in server{};
    explicit Requester(std::uint16_t port) {
        sockaddr_in local{};
        local.sin_family = AF_INET;
        local.sin_addr.s_addr = htonl(0x7F000001);
        EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local), 0);
        server.sin_family = AF_INET;
        server.sin_addr.s_addr = htonl(0x7F000001);
        server.sin_port = htons(port);
    }
    ~Requester() { ::close(fd); }
    void ask(std::string_view session, std::uint64_t seq, std::uint16_t count) {
        const Bytes r = mold_request(session, seq, count);
        ASSERT_EQ(::sendto(fd, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&server), sizeof server), 20);
    }
    // Positions answered within `ms`, each message's bytes by position.
    std::map<std::uint64_t, Bytes> answers(int ms) {
        std::map<std::uint64_t, Bytes> out;
        std::byte buf[2048];
        pollfd p{fd, POLLIN, 0};
        while (::poll(&p, 1, ms) > 0) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            const std::span<const std::byte> d(buf, static_cast<std::size_t>(n));
            const moldudp64::Key k = moldudp64::read_key(d, 0);
            EXPECT_LE(d.size(), 1400u);
            (void)moldudp64::walk(d, k, [](std::uint8_t) { return std::size_t{1}; },
                                  [&](std::uint16_t i, std::span<const std::byte> m) {
                                      out[k.seq + i] = Bytes(m.begin(), m.end());
                                  });
        }
        return out;
    }
};

TEST(ItchSimulator, ServerAnswersARangeFromItsStoreUpToWhatIsPublished) {
    SimOptions o = small(2000);
    o.server_port = 0;
    const SimSchedule s = simulate(o);
    RerequestServer server(o, s);
    server.publish(0, 500);
    Requester q(server.port());
    q.ask("SIM0000001", 100, 300);
    const auto got = q.answers(200);
    ASSERT_EQ(got.size(), 300u);
    for (const auto& [seq, m] : got) EXPECT_EQ(m, s.store[0][seq - 1]) << seq;
    q.ask("SIM0000001", 450, 100);  // only 450..500 published
    EXPECT_EQ(q.answers(200).size(), 51u);
    q.ask("SIM0000009", 1, 10);  // a session it never had
    EXPECT_TRUE(q.answers(100).empty());
    server.stop();
    SimTruth t;
    server.add_to(t);
    EXPECT_EQ(t.requests, 3u);
    EXPECT_EQ(t.answered_messages, 351u);
}

TEST(ItchSimulator, ServerFaultsSilentAndPartial) {
    SimOptions o = small(2000);
    o.server_port = 0;
    const SimSchedule s = simulate(o);
    {
        SimOptions silent = o;
        silent.server_silent = true;
        RerequestServer server(silent, s);
        server.publish(0, 1000);
        Requester q(server.port());
        q.ask("SIM0000001", 1, 100);
        EXPECT_TRUE(q.answers(100).empty());
    }
    SimOptions partial = o;
    partial.server_partial = 1;
    RerequestServer server(partial, s);
    server.publish(0, 1000);
    Requester q(server.port());
    q.ask("SIM0000001", 1, 100);
    const auto got = q.answers(200);
    ASSERT_EQ(got.size(), 50u);  // the first half
    EXPECT_EQ(got.begin()->first, 1u);
}

}  // namespace
}  // namespace tickgate::itch50

namespace tickgate::itch50 {
namespace {

// Issue 26: after 2 M messages every book of the simulator was crossed (the
// mid wanders while resting orders stay). A new order never crosses or
// locks its stock's book: over a long run on few stocks, every final book
// has its best bid strictly below its best ask, and levels strictly ordered.
TEST(ItchSimulator, GroundTruthBooksAreNeverCrossedOrLocked) {
    SimOptions o;
    o.stocks = 10;
    o.messages = 100'000;
    const SimSchedule s = simulate(o);
    ASSERT_EQ(s.truth.stocks.size(), 10u);
    for (const SimStockTruth& st : s.truth.stocks) {
        SCOPED_TRACE(st.symbol);
        for (std::size_t i = 1; i < st.bids.size(); ++i) EXPECT_GT(st.bids[i - 1].price, st.bids[i].price);
        for (std::size_t i = 1; i < st.asks.size(); ++i) EXPECT_LT(st.asks[i - 1].price, st.asks[i].price);
        ASSERT_FALSE(st.bids.empty() || st.asks.empty());
        EXPECT_LT(st.bids.front().price, st.asks.front().price);
    }
}

}  // namespace
}  // namespace tickgate::itch50
