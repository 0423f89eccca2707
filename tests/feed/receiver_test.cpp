// Receiver and FeedHandler set-up failures that must not pass silently: a
// failing recvmmsg is counted per line (not taken for a quiet line), and a
// CPU the network or engine thread cannot be pinned to fails start-up; and
// the order a receive pass hands the lines and channels on. Sockets on loopback
// multicast groups of their own (TTL 0, interface 127.0.0.1).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>
#include <string>

#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed_handler.hpp"

namespace tickgate {
namespace {

// One-byte datagrams tagged for the order checks below, `gap` apart.
struct TaggedSender {
    std::chrono::milliseconds gap;
    MulticastSender tx{"127.0.0.1"};
    void operator()(std::uint32_t group, std::uint16_t port, std::uint8_t tag) {
        const std::byte payload[] = {std::byte{tag}};
        ASSERT_TRUE(tx.send(group, port, payload));
        std::this_thread::sleep_for(gap);
    }
};
// What `passes` receive passes hand on: "A1 B7 ..." (line, tag).
std::string handed_on(Receiver& r, int passes) {
    std::string order;
    for (int pass = 0; pass < passes; ++pass)
        (void)r.poll_once(0, [&](const RawDatagram& d) {
            order += std::string(line_name(d.line)) + std::to_string(std::to_integer<int>(d.payload[0])) + " ";
        });
    return order;
}

Config loopback_config(std::uint16_t channel, const char* group_a, const char* group_b, std::uint16_t port) {
    Config cfg;
    ChannelConfig ch;
    ch.id = channel;
    ch.a = {group_a, port, "127.0.0.1"};
    ch.b = {group_b, static_cast<std::uint16_t>(port + 1), "127.0.0.1"};
    cfg.channels.push_back(ch);
    return cfg;
}

// The descriptor of this process's UDP socket bound to group:port, or -1.
int socket_bound_to(const char* group, std::uint16_t port) {
    const std::uint32_t g = *parse_ipv4(group);
    for (int fd = 3; fd < 4096; ++fd) {
        sockaddr_in a{};
        socklen_t len = sizeof a;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.sin_family != AF_INET) continue;
        if (ntohl(a.sin_addr.s_addr) == g && ntohs(a.sin_port) == port) return fd;
    }
    return -1;
}

TEST(Receiver, FailingReceiveIsCountedOnItsLine) {
    Receiver r(loopback_config(11, "239.255.95.1", "239.255.95.2", 39551));
    int handed = 0;
    auto sink = [&](const RawDatagram&) { ++handed; };
    // Nothing queued (EAGAIN) is normal: no error.
    EXPECT_EQ(r.poll_once(0, sink), 0);
    for (const auto& l : r.lines()) EXPECT_EQ(l->recv_errors.get(), 0u);

    // Line B's descriptor now names a file, not a socket: recvmmsg fails
    // (ENOTSOCK) on every poll, which must show on line B alone.
    const int fd = socket_bound_to("239.255.95.2", 39552);
    ASSERT_GE(fd, 0);
    const int not_a_socket = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(not_a_socket, 0);
    ASSERT_EQ(::dup2(not_a_socket, fd), fd);
    ::close(not_a_socket);
    EXPECT_EQ(r.poll_once(0, sink), 0);
    EXPECT_EQ(r.poll_once(0, sink), 0);
    EXPECT_EQ(handed, 0);
    ASSERT_EQ(r.lines().size(), 2u);
    EXPECT_EQ(r.lines()[0]->recv_errors.get(), 0u);
    EXPECT_EQ(r.lines()[1]->recv_errors.get(), 2u);
}

// The datagrams of every socket of a receive pass are handed on in
// kernel-timestamp order, not socket by socket: lines A and B of one
// channel (read socket by socket, B's copy of an old session's last packet
// came after A's new session's first and was taken for the current
// session: the MDP3 restart flake), and two channels (a snapshot sent on
// one after the other's packet overtook it when the receiver drained one
// channel's socket first: the cert_two_channels live flake).
TEST(Receiver, DatagramsOfAllLinesAndChannelsAreHandedOnInArrivalOrder) {
    Config cfg = loopback_config(12, "239.255.95.5", "239.255.95.6", 39561);
    cfg.channels.push_back(loopback_config(14, "239.255.95.7", "239.255.95.8", 39563).channels[0]);
    Receiver r(cfg);
    TaggedSender send{std::chrono::milliseconds(2)};
    send(0xEFFF5F06, 39562, 1);  // channel 12 line B
    send(0xEFFF5F07, 39563, 2);  // channel 14 line A
    send(0xEFFF5F05, 39561, 3);  // channel 12 line A
    send(0xEFFF5F08, 39564, 4);  // channel 14 line B
    send(0xEFFF5F06, 39562, 5);  // channel 12 line B
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    struct Got {
        std::uint16_t channel;
        std::uint8_t line, tag;
        bool operator==(const Got&) const = default;
    };
    std::vector<Got> got;
    std::int64_t last_ns = 0;
    bool ordered = true;
    EXPECT_EQ(r.poll_once(0, [&](const RawDatagram& d) {
        got.push_back({d.channel_id, d.line, std::to_integer<std::uint8_t>(d.payload[0])});
        ordered = ordered && d.recv_ns >= last_ns;
        last_ns = d.recv_ns;
    }), 5);
    const std::vector<Got> want{{12, kLineB, 1}, {14, kLineA, 2}, {12, kLineA, 3}, {14, kLineB, 4}, {12, kLineB, 5}};
    std::string order;  // channel/line:tag, as handed on
    for (const Got& g : got) order += std::to_string(g.channel) + "/" + std::string(line_name(g.line)) + ":" + std::to_string(g.tag) + " ";
    EXPECT_TRUE(got == want) << order;
    EXPECT_TRUE(ordered);
}

// Datagrams sent at once after construction are merged by arrival too: the
// Receiver waits until the kernel stamps datagrams on arrival (the first
// socket of a host to ask for stamps has them turned on later, by a
// workqueue; till then a datagram is stamped when read, and line A's socket,
// read first, would hand all its datagrams on before B's). On a host where
// no other socket asked for stamps this is the state a handler starts in.
TEST(Receiver, DatagramsSentRightAfterConstructionAreMergedByArrival) {
    Config cfg = loopback_config(12, "239.255.95.13", "239.255.95.14", 39569);
    Receiver r(cfg);
    EXPECT_EQ(r.timestamp_warning(), "");
    TaggedSender send{std::chrono::milliseconds(0)};
    send(0xEFFF5F0E, 39570, 1);  // line B first
    send(0xEFFF5F0D, 39569, 2);
    send(0xEFFF5F0E, 39570, 3);
    send(0xEFFF5F0D, 39569, 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(handed_on(r, 2), "B1 A2 B3 A4 ");
}

// Across passes too: a socket that fills its batch still holds what was
// sent next, so a later datagram of another socket read in the same pass
// waits for the next pass instead of overtaking it (the receiver used to hand
// each pass's merge on whole, so B's datagram came before A's last two).
TEST(Receiver, ALaterDatagramOfAnotherSocketDoesNotOvertakeWhatAFullBatchLeftQueued) {
    Config cfg = loopback_config(12, "239.255.95.9", "239.255.95.10", 39565);
    cfg.receiver.batch = 4;
    Receiver r(cfg);
    TaggedSender send{std::chrono::milliseconds(1)};
    for (std::uint8_t tag = 1; tag <= 6; ++tag) send(0xEFFF5F09, 39565, tag);  // line A: six, a batch holds four
    send(0xEFFF5F0A, 39566, 7);                                                 // line B, after them
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(handed_on(r, 4), "A1 A2 A3 A4 A5 A6 B7 ");
}

// A socket whose datagrams were held back twice (two full batches of
// another socket older than them) is not read into a slot set that still
// holds some: nothing is overwritten, nothing handed on twice.
TEST(Receiver, DatagramsHeldBackTwoPassesAreNeitherOverwrittenNorReordered) {
    Config cfg = loopback_config(12, "239.255.95.11", "239.255.95.12", 39567);
    cfg.receiver.batch = 2;
    Receiver r(cfg);
    TaggedSender send{std::chrono::milliseconds(1)};
    const std::uint32_t a = 0xEFFF5F0B, b = 0xEFFF5F0C;
    // A1..A6 B7 B8 A9 B10: line A fills its batch of two for three passes,
    // each older than B7, so B7 waits twice while B8 and B10 queue behind it.
    std::string sent;
    for (const auto& [group, port, tag] : {std::tuple{a, 39567, 1}, {a, 39567, 2}, {a, 39567, 3}, {a, 39567, 4},
                                           {a, 39567, 5}, {a, 39567, 6}, {b, 39568, 7}, {b, 39568, 8},
                                           {a, 39567, 9}, {b, 39568, 10}}) {
        send(group, static_cast<std::uint16_t>(port), static_cast<std::uint8_t>(tag));
        sent += std::string(group == a ? "A" : "B") + std::to_string(tag) + " ";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(handed_on(r, 12), sent);
}

TEST(FeedHandler, CpuBeyondTheMachineFailsStartWithTheCpuNamed) {
    for (const int cpu : {4095, 1023}) {
        SCOPED_TRACE(cpu);
        Config cfg = loopback_config(12, "239.255.95.3", "239.255.95.4", 39553);
        cfg.threading.receiver_cpu = cpu;
        FeedHandler h(cfg);
        try {
            h.start();
            ADD_FAILURE() << "start() pinned the network thread to CPU " << cpu;
        } catch (const std::runtime_error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("threading.receiver_cpu = " + std::to_string(cpu)), std::string::npos) << what;
            EXPECT_NE(what.find("cannot pin the thread to CPU " + std::to_string(cpu)), std::string::npos) << what;
            EXPECT_NE(what.find("this process may run on CPUs "), std::string::npos) << what;
        }
        h.stop();  // nothing to join: the thread ended with the failed pin
    }
}

TEST(FeedHandler, PinningToAnAllowedCpuStarts) {
    Config cfg = loopback_config(13, "239.255.95.5", "239.255.95.6", 39555);
    cpu_set_t set;
    ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
    int cpu = 0;
    while (!CPU_ISSET(cpu, &set)) ++cpu;
    cfg.threading.receiver_cpu = cpu;
    FeedHandler h(cfg);
    EXPECT_NO_THROW(h.start());
    h.stop();
}

TEST(PinCurrentThread, RefusesACpuBeyondTheMachineWithoutMovingTheThread) {
    cpu_set_t before;
    ASSERT_EQ(::sched_getaffinity(0, sizeof before, &before), 0);
    EXPECT_TRUE(pin_current_thread(-1));
    EXPECT_FALSE(pin_current_thread(4095));
    EXPECT_FALSE(pin_current_thread(1 << 20));
    EXPECT_THROW(pin_current_thread_or_throw(4095, "threading.engine_cpu"), std::runtime_error);
    try {
        pin_current_thread_or_throw(4095, "threading.engine_cpu");
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("threading.engine_cpu = 4095: cannot pin the thread to CPU 4095", 0), 0u)
            << e.what();
    }
    cpu_set_t after;
    ASSERT_EQ(::sched_getaffinity(0, sizeof after, &after), 0);
    EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

}  // namespace
}  // namespace tickgate
