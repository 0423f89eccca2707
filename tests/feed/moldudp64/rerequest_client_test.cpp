// The live re-request client (ITCH50.md "The stream", live with a server),
// against a server socket of the test's own on 127.0.0.1: what is asked
// (range, parts of max_request_messages), re-sent after the timeout at most
// max_requests times, the per-server rate, answers accepted only from the
// configured address and for the current session, recovered positions
// counted, and a late join recovered from position 1.
#include "tickgate/feed/moldudp64/rerequest_client.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tickgate/endian.hpp"
#include "tickgate/feed/itch50/decoder.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/moldudp64/stream.hpp"

namespace tickgate::moldudp64 {
namespace {

using itch50::Bytes;
constexpr std::int64_t kMs = 1'000'000;
constexpr std::string_view kSession = "SESSION001";

struct Sink {
    std::vector<std::uint64_t> applied;
    std::vector<std::string> events;
    void message(std::uint32_t, std::span<const std::byte>, std::uint64_t pos, std::int64_t) { applied.push_back(pos); }
    void session_started(std::uint32_t, bool) {}
    void late_join(std::uint32_t, std::uint64_t n) { events.push_back("late_join " + std::to_string(n)); }
    void gave_up(std::uint32_t, std::uint64_t n) { events.push_back("gave_up " + std::to_string(n)); }
    void alive(std::uint32_t, std::int64_t) {}
};

Bytes packet(std::uint64_t seq, int n, std::string_view session = kSession) {
    std::vector<Bytes> msgs;
    for (int i = 0; i < n; ++i) msgs.push_back(itch50::delete_order(1, seq + static_cast<std::uint64_t>(i)));
    return itch50::mold_packet(session, seq, msgs);
}

// A UDP socket on 127.0.0.1 (a port of the kernel's choice): the fake server, or a stranger.
struct Udp {
    int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    std::uint16_t port = 0;
    Udp() {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(0x7F000001);
        socklen_t len = sizeof a;
        EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
        port = ntohs(a.sin_port);
    }
    ~Udp() { ::close(fd); }
    struct Request {
        std::uint64_t seq;
        std::uint16_t count;
        std::string session;
    };
    // The requests received within `ms`; `from` is where to answer.
    std::vector<Request> requests(int ms = 50) {
        std::vector<Request> out;
        std::byte b[64];
        pollfd p{fd, POLLIN, 0};
        while (::poll(&p, 1, ms) > 0) {
            socklen_t len = sizeof from;
            const ssize_t n = ::recvfrom(fd, b, sizeof b, 0, reinterpret_cast<sockaddr*>(&from), &len);
            EXPECT_EQ(n, 20);
            out.push_back({load_be<std::uint64_t>(b + 10), load_be<std::uint16_t>(b + 18),
                           std::string(reinterpret_cast<const char*>(b), 10)});
            ms = 5;
        }
        return out;
    }
    void send_to(const sockaddr_in& to, const Bytes& d) {
        ASSERT_EQ(::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
                  static_cast<ssize_t>(d.size()));
    }
    sockaddr_in from{};
};

Config client_config(std::uint16_t server_port, std::uint32_t max_messages = 1000, std::uint32_t per_s = 200) {
    Config c;
    ChannelConfig ch;
    ch.id = 1;
    ch.protocol = "itch50";
    ch.a = {"239.255.30.1", 31301, "127.0.0.1"};
    ch.b = {"239.255.30.2", 31302, "127.0.0.1"};
    ch.rerequest = "127.0.0.1:" + std::to_string(server_port);
    ch.rerequest_ip = 0x7F000001;
    ch.rerequest_port = server_port;
    c.channels.push_back(ch);
    c.moldudp64.max_request_messages = max_messages;
    c.moldudp64.max_requests_per_s = per_s;
    return c;
}

class Rerequest : public ::testing::Test {
protected:
    explicit Rerequest(std::uint32_t max_messages = 1000, std::uint32_t per_s = 200)
        : cfg_(client_config(server_.port, max_messages, per_s)), client_(cfg_), stream_(stream_config(), 1, {&client_}) {}
    static StreamConfig stream_config() {
        StreamConfig s;
        s.max_held_packets = 64;
        return s;
    }
    void feed(const Bytes& d, std::int64_t t) {
        const std::span<const std::byte> s(d.data(), d.size());
        stream_.on_datagram(0, s, read_key(s, 0), t, sink_);
    }
    // Waits for the client's socket to hold an answer, then reads it.
    int answers() {
        for (int i = 0; i < 100; ++i) {
            if (const int n = client_.poll_answers(stream_, sink_); n > 0) return n;
            ::usleep(1000);
        }
        return 0;
    }
    const RerequestCounters& counters() const { return client_.counters(0); }

    Udp server_;
    Config cfg_;
    RerequestClient client_;
    Stream<itch50::MoldPayload, ClientRecovery> stream_;
    Sink sink_;
};

TEST_F(Rerequest, HoleIsRequestedAndTheAnswerFillsItAndIsCounted) {
    feed(packet(1, 2), 0);
    feed(packet(6, 2), 1 * kMs);  // hole 3..5
    EXPECT_EQ(client_.tick(1 * kMs, stream_), 1);
    const auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].seq, 3u);
    EXPECT_EQ(reqs[0].count, 3u);
    EXPECT_EQ(reqs[0].session, kSession);
    server_.send_to(server_.from, packet(3, 3));
    ASSERT_EQ(answers(), 1);
    EXPECT_EQ(sink_.applied, (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(counters().requests_sent.get(), 1u);
    EXPECT_EQ(stream_.channel(0).counters.recovered_messages.get(), 3u);
    EXPECT_EQ(stream_.channel(0).counters.holes_filled.get(), 1u);
    EXPECT_EQ(client_.tick(100 * kMs, stream_), 0);  // filled: nothing more asked
}

// A later hole that the other line has filled meanwhile (its packet held
// behind the older hole) is not asked for.
TEST_F(Rerequest, HoleFilledByTheOtherLineWhileHeldIsNotAsked) {
    feed(packet(1, 1), 0);
    feed(packet(5, 1), 0);  // hole 2..4
    feed(packet(9, 1), 0);  // hole 6..8
    feed(packet(6, 3), 0);  // line B: 6..8, held behind hole 2..4
    EXPECT_EQ(client_.tick(0, stream_), 1);
    const auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].seq, 2u);
    EXPECT_EQ(reqs[0].count, 3u);
}

// An answer for a later hole, held behind an older one, counts as
// recovered when its positions are applied, not when it arrives.
TEST_F(Rerequest, HeldAnswerCountsAsRecoveredWhenApplied) {
    feed(packet(1, 1), 0);
    feed(packet(5, 1), 0);  // hole 2..4
    feed(packet(9, 1), 0);  // hole 6..8
    client_.tick(0, stream_);
    ASSERT_EQ(server_.requests().size(), 2u);
    server_.send_to(server_.from, packet(6, 3));
    ASSERT_EQ(answers(), 1);
    EXPECT_EQ(stream_.channel(0).counters.recovered_messages.get(), 0u);  // held
    feed(packet(2, 3), 1 * kMs);  // the older hole, from a line
    EXPECT_EQ(stream_.channel(0).next_seq, 10u);
    EXPECT_EQ(stream_.channel(0).counters.recovered_messages.get(), 3u);
}

TEST_F(Rerequest, UnansweredRequestIsSentAgainAfterTheTimeoutAtMostMaxRequestsTimes) {
    feed(packet(1, 1), 0);
    feed(packet(5, 1), 0);  // hole 2..4
    EXPECT_EQ(client_.tick(0, stream_), 1);
    EXPECT_EQ(client_.tick(19 * kMs, stream_), 0);  // request_timeout_ms = 20
    int sends = 1;
    for (std::int64_t t = 20 * kMs; t < 400 * kMs; t += 20 * kMs) sends += client_.tick(t, stream_);
    EXPECT_EQ(sends, 5);  // max_requests
    EXPECT_EQ(server_.requests(20).size(), 5u);
    EXPECT_EQ(counters().requests_exhausted.get(), 1u);
}

TEST_F(Rerequest, PartialAnswerIsFollowedByARequestForTheRest) {
    feed(packet(1, 1), 0);
    feed(packet(11, 1), 0);  // hole 2..10
    client_.tick(0, stream_);
    (void)server_.requests();
    server_.send_to(server_.from, packet(2, 4));  // 2..5 only
    ASSERT_EQ(answers(), 1);
    EXPECT_EQ(client_.tick(5 * kMs, stream_), 0);  // not yet timed out
    EXPECT_EQ(client_.tick(20 * kMs, stream_), 1);
    const auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].seq, 6u);
    EXPECT_EQ(reqs[0].count, 5u);
}

TEST_F(Rerequest, AnswersFromAnotherAddressOrForAnotherSessionAreDropped) {
    feed(packet(1, 1), 0);
    feed(packet(5, 1), 0);
    client_.tick(0, stream_);
    (void)server_.requests();
    Udp stranger;
    stranger.send_to(server_.from, packet(2, 3));  // the right bytes from the wrong port
    server_.send_to(server_.from, packet(2, 3, "SESSION002"));
    for (int i = 0; i < 50 && counters().foreign_answers.get() + counters().stale_answers.get() < 2; ++i) {
        client_.poll_answers(stream_, sink_);
        ::usleep(1000);
    }
    EXPECT_EQ(counters().foreign_answers.get(), 1u);
    EXPECT_EQ(counters().stale_answers.get(), 1u);
    EXPECT_EQ(stream_.channel(0).next_seq, 2u);  // nothing applied
    EXPECT_EQ(stream_.channel(0).counters.session_changes.get(), 0u);
}

class RerequestSmallParts : public Rerequest {
protected:
    RerequestSmallParts() : Rerequest(10, 1) {}
};

// A hole larger than max_request_messages is asked for in parts, the next
// part when the last has arrived; max_requests_per_s bounds all of it.
TEST_F(RerequestSmallParts, LargeHoleIsAskedInPartsWithinTheRate) {
    feed(packet(1, 1), 0);
    feed(packet(26, 1), 0);  // hole 2..25
    EXPECT_EQ(client_.tick(0, stream_), 1);
    auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].seq, 2u);
    EXPECT_EQ(reqs[0].count, 10u);
    server_.send_to(server_.from, packet(2, 10));
    ASSERT_EQ(answers(), 1);
    EXPECT_EQ(client_.tick(1 * kMs, stream_), 0);  // one request a second: the next part waits
    EXPECT_GE(counters().rate_limited.get(), 1u);
    EXPECT_EQ(client_.tick(1001 * kMs, stream_), 1);
    reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].seq, 12u);
    EXPECT_EQ(reqs[0].count, 10u);
}

// ITCH50.md "Re-request answers": only the positions asked for and still
// missing are taken from an answer; a hole not yet asked for (here: waiting
// for the rate) takes nothing.
TEST_F(RerequestSmallParts, ReRequestAnswerForAHoleNotYetAskedIsNotApplied) {
    feed(packet(1, 1), 0);
    feed(packet(5, 1), 0);  // hole 2..4
    feed(packet(9, 1), 0);  // hole 6..8
    EXPECT_EQ(client_.tick(0, stream_), 1);  // one a second: 6..8 waits
    ASSERT_EQ(server_.requests().size(), 1u);
    server_.send_to(server_.from, packet(6, 3));
    ASSERT_EQ(answers(), 1);
    EXPECT_EQ(stream_.channel(0).counters.unrequested_answer_messages.get(), 3u);
    EXPECT_EQ(stream_.channel(0).held, 2u);  // 5 and 9 only
    server_.send_to(server_.from, packet(2, 3));
    ASSERT_EQ(answers(), 1);
    EXPECT_EQ(sink_.applied, (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(stream_.channel(0).open_holes, 1u);
}

// The reproduction: an answer far beyond the requested range moved next_seq
// by 10^9. From the right server, for the right session, it moves nothing.
TEST_F(Rerequest, ReRequestAnswerFarBeyondTheRequestedRangeMovesNothing) {
    feed(packet(1, 1), 0);
    feed(packet(5, 1), 0);  // hole 2..4
    client_.tick(0, stream_);
    ASSERT_EQ(server_.requests().size(), 1u);
    server_.send_to(server_.from, packet(1'000'000'000, 3));
    ASSERT_EQ(answers(), 1);
    const auto v = stream_.channel(0);
    EXPECT_EQ(v.next_seq, 2u);
    EXPECT_EQ(v.seen_end, 6u);
    EXPECT_EQ(v.open_holes, 1u);
    EXPECT_EQ(v.counters.unrequested_answer_messages.get(), 3u);
    EXPECT_EQ(v.counters.lost_messages.get(), 0u);
    server_.send_to(server_.from, packet(2, 3));
    ASSERT_EQ(answers(), 1);
    EXPECT_EQ(sink_.applied, (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(stream_.channel(0).counters.recovered_messages.get(), 3u);
}

// max_requests_per_s holds in every one-second window, the first one
// included (a token bucket starting full let 399 through in the first
// second at a limit of 200). 256 one-position holes, re-sent every 1 ms up
// to 1000 times, ask far more than the limit; a fake clock ticks every ms.
TEST(RerequestRate, MaxRequestsPerSecondHoldsInEverySlidingOneSecondWindow) {
    Udp server;
    Config cfg = client_config(server.port, 1000, 200);
    cfg.moldudp64.request_timeout_ms = 1;
    cfg.moldudp64.max_requests = 1000;
    RerequestClient client(cfg);
    StreamConfig sc;
    sc.max_held_packets = 8;
    Stream<itch50::MoldPayload, ClientRecovery> stream(sc, 1, {&client});
    Sink sink;
    const Bytes first = packet(1, 1);
    stream.on_datagram(0, first, read_key(first, 0), 0, sink);
    for (std::uint64_t next = 3; next < 3 + 2 * 256; next += 2) {  // each heartbeat reveals one more hole
        const Bytes hb = itch50::mold_heartbeat(kSession, next);
        stream.on_datagram(0, hb, read_key(hb, 0), 0, sink);
    }
    ASSERT_EQ(stream.channel(0).open_holes, 256u);
    std::vector<std::int64_t> sent;  // one entry per request, its send time
    for (std::int64_t t = 0; t < 3500 * kMs; t += kMs)
        for (int n = client.tick(t, stream); n > 0; --n) sent.push_back(t);
    ASSERT_FALSE(sent.empty());
    std::size_t worst = 0;
    for (std::size_t i = 0, j = 0; i < sent.size(); ++i) {  // the window [sent[i], sent[i] + 1 s)
        while (j < sent.size() && sent[j] < sent[i] + 1000 * kMs) ++j;
        worst = std::max(worst, j - i);
    }
    EXPECT_EQ(worst, 200u);
    EXPECT_EQ(sent.size(), 800u);  // the limit is also reached: 200 at 0, 1, 2 and 3 s
    EXPECT_EQ(client.counters(0).requests_sent.get(), sent.size());
    EXPECT_GT(client.counters(0).rate_limited.get(), 0u);
}

// Late join with recover_from_start: the session is asked from 1 and
// applied before the held packet; no late join, nothing suspect.
TEST(RerequestLateJoin, RecoverFromStartRequestsTheSessionFromOne) {
    Udp server;
    Config cfg = client_config(server.port);
    cfg.moldudp64.recover_from_start = true;
    RerequestClient client(cfg);
    StreamConfig sc;
    sc.max_held_packets = 8;
    Stream<itch50::MoldPayload, ClientRecovery> stream(sc, 1, {&client});
    Sink sink;
    const Bytes late = packet(40, 2);
    stream.on_datagram(0, late, read_key(late, 0), 0, sink);
    EXPECT_TRUE(sink.events.empty());  // not a late join
    EXPECT_EQ(stream.channel(0).counters.late_join_messages.get(), 0u);
    EXPECT_EQ(client.tick(0, stream), 1);
    const auto reqs = server.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].seq, 1u);
    EXPECT_EQ(reqs[0].count, 39u);
    server.send_to(server.from, packet(1, 39));
    for (int i = 0; i < 100 && client.poll_answers(stream, sink) == 0; ++i) ::usleep(1000);
    ASSERT_EQ(sink.applied.size(), 41u);
    EXPECT_EQ(sink.applied.front(), 1u);
    EXPECT_EQ(sink.applied.back(), 41u);
    EXPECT_FALSE(stream.channel(0).late_joined);
    EXPECT_FALSE(stream.channel(0).gave_up);
}

// Without recover_from_start the same join is a late join, and nothing is asked.
TEST(RerequestLateJoin, WithoutRecoverFromStartALateJoinIsCountedAndNotAsked) {
    Udp server;
    RerequestClient client(client_config(server.port));
    Stream<itch50::MoldPayload, ClientRecovery> stream(StreamConfig{}, 1, {&client});
    Sink sink;
    const Bytes late = packet(40, 2);
    stream.on_datagram(0, late, read_key(late, 0), 0, sink);
    EXPECT_EQ(sink.events, std::vector<std::string>{"late_join 39"});
    EXPECT_EQ(client.tick(0, stream), 0);
}

}  // namespace
}  // namespace tickgate::moldudp64
