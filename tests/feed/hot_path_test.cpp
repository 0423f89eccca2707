// The hot path allocates nothing: this binary replaces the global operator
// new with a counting one and drives decode -> sequence -> book -> gate, and
// over loopback multicast the live receive -> ring -> poll path and the
// inline receive -> decode -> sequence -> book -> callback path.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <thread>
#include <type_traits>
#include <vector>

#include "tickgate/feed/sender.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed_handler.hpp"
#include "tickgate/feed/handler.hpp"
#include "tickgate/inline_feed_handler.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/itch50/glimpse_server.hpp"
#include "tickgate/feed/itch50/protocol.hpp"
#include "tickgate/feed/itch50/replay.hpp"
#include "tickgate/feed/itch50/snapshot.hpp"
#include "tickgate/feed/mdp3/protocol.hpp"
#include "tickgate/feed/mdp3/simulator.hpp"
#include "mdp3/mdp3_builder.hpp"
#include "../support/mdp3_channel.hpp"
#include "../support/veth_pair.hpp"
#include "tickgate/feed/af_xdp.hpp"
#include "tickgate/feed/metrics.hpp"
#include "tickgate/fanout/conflating_ring.hpp"
#include "tickgate/fanout/publisher.hpp"
#include "tickgate/fanout/source.hpp"

#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>

namespace {
std::atomic<std::uint64_t> g_allocations{0};
// This thread's: the fan-out test counts the engine thread alone, beside
// the NATS client's and the publisher's threads, which may allocate.
thread_local std::uint64_t t_allocations = 0;
}  // namespace

// The replacements allocate with malloc and free with free, on purpose. GCC
// 12 inlines them into gtest's `new TestClass` and, where a test's fixture
// can throw (std::bad_alloc from a decoder's constructor), reports the
// free() on the unwinding path as mismatched with operator new: it is not.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    ++t_allocations;
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    ++t_allocations;
    const std::size_t al = static_cast<std::size_t>(a);
    if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

using namespace tickgate;

// A stream that exercises every path: definitions, quotes, deltas with gaps
// (suspect + buffering), lagging snapshots, heartbeats with gaps,
// duplicates, unknown and malformed messages, and a session change.
std::vector<std::vector<std::byte>> build_stream(std::uint16_t channel) {
    std::vector<std::vector<std::byte>> out;
    std::uint64_t pseq = 1;
    const std::int64_t t = 1'700'000'000'000'000'000;
    for (std::uint32_t session = 1; session <= 2; ++session) {
        PacketBuilder defs(channel, session, pseq++, t);
        for (std::uint32_t id = 1; id <= 20; ++id) defs.definition(id, "SYM" + std::to_string(id));
        out.emplace_back(defs.bytes().begin(), defs.bytes().end());
        std::uint64_t seq = 1;
        for (int round = 0; round < 400; ++round, ++seq) {
            if (round % 50 == 7) seq += 2;  // a gap on every instrument
            PacketBuilder p(channel, session, pseq++, t + round);
            for (std::uint32_t id = 1; id <= 20; ++id) {
                if (id % 2)
                    p.quote(id, seq, t, 100 + round, 5, 101 + round, 6);
                else
                    p.delta(id, seq, t, 100 + round % 7, static_cast<std::uint32_t>(round), round % 2, round % 5 == 4);
            }
            out.emplace_back(p.bytes().begin(), p.bytes().end());
            if (round % 25 == 10) {
                PacketBuilder s(channel, session, pseq++, t + round);
                const PacketBuilder::SnapLevel bids[] = {{99, 1}, {98, 2}}, asks[] = {{101, 1}};
                for (std::uint32_t id = 2; id <= 20; id += 2) s.snapshot(id, seq - 1, t, bids, asks);  // lags by one
                for (std::uint32_t id = 1; id <= 20; ++id) s.heartbeat(id, seq + 1 + (round % 100 == 10), t);
                const std::byte body[8] = {};
                s.raw_message('Z', body);
                out.emplace_back(s.bytes().begin(), s.bytes().end());
                out.push_back(out.back());  // the same packet again (a B-line copy)
                auto bad = out.back();
                bad.resize(bad.size() - 3);  // truncated: malformed
                out.push_back(bad);
            }
        }
    }
    return out;
}

TEST(HotPath, DecodeSequenceBookGateAllocateNothing) {
    const auto stream = build_stream(1);
    Handler handler(Capacity{}, GateConfig{});
    std::uint64_t ok = 0;
    const std::uint64_t before = g_allocations.load();
    for (const auto& d : stream) handler.on_datagram(d, 1'700'000'000'000'000'000);
    for (std::uint32_t id = 0; id < 64; ++id) ok += handler.gate().check(id, 1'700'000'000'100'000'000).ok();
    const std::uint64_t after = g_allocations.load();
    EXPECT_EQ(after - before, 0u) << "allocations on the hot path";
    EXPECT_GT(handler.decoder().counters().messages.get(), 16'000u);
    EXPECT_GT(handler.decoder().counters().malformed_packets.get(), 0u);
    EXPECT_EQ(handler.decoder().counters().session_changes.get(), 1u);
    (void)ok;
}

// ITCH 5.0 over MoldUDP64: stream (holes, held packets, give-up, a new
// session) -> sequencer -> order book -> gate, every message type.
TEST(HotPath, ItchStreamOrderBookGateAllocateNothing) {
    using namespace tickgate::itch50;
    std::vector<Bytes> datagrams;
    std::uint64_t ref = 1;
    for (std::uint64_t seq = 1; seq < 4000; seq += 8) {
        std::vector<Bytes> m;
        for (int i = 0; i < 8; i += 4, ref += 2) {
            const auto locate = static_cast<std::uint16_t>(1 + ref % 50);
            m.push_back(add_order(locate, ref, 'B', 100, static_cast<std::uint32_t>(1000 + ref % 20)));
            m.push_back(add_order(locate, ref + 1, 'S', 100, static_cast<std::uint32_t>(2000 + ref % 20), 0, true));
            m.push_back(ref % 3 ? executed(locate, ref, 10) : cancel(locate, ref, 10));
            m.push_back(ref % 2 ? replace(locate, ref + 1, ref + 1'000'000, 50, 2100) : delete_order(locate, ref + 1));
        }
        datagrams.push_back(mold_packet("SESSION001", seq, m));
    }
    datagrams.push_back(mold_heartbeat("SESSION001", 5000));  // a hole, given up below
    datagrams.push_back(mold_packet("SESSION002", 1, std::vector<Bytes>{stock_directory(3, "AAPL")}));
    const Config cfg = parse_config(
        "[itch]\nmax_orders = 65536\nmax_levels = 65536\n[moldudp64]\ngap_timeout_ms = 1\n"
        "[[channel]]\nid = 7\nprotocol = \"itch50\"\n"
        "a = { group = \"239.255.10.1\", port = 31001 }\nb = { group = \"239.255.10.2\", port = 31002 }\n",
        "hot.toml");
    Replay replay(cfg);
    const std::uint64_t before = g_allocations.load();
    std::int64_t t = 1'700'000'000'000'000'000;
    const std::size_t n = datagrams.size() - 1;  // the new session's packet comes last
    for (std::size_t i = 0; i < n; ++i) {
        if (i % 7 == 3) continue;  // line A lost it: what follows is held until line B's copy
        replay.front().on_datagram(datagrams[i], 0xEFFF0A01, 31001, t += 1000);
    }
    for (std::size_t i = 3; i < n; i += 7) replay.front().on_datagram(datagrams[i], 0xEFFF0A02, 31002, t += 1000);
    replay.front().on_datagram(datagrams.back(), 0xEFFF0A01, 31001, t += 10'000'000);
    replay.front().finish();
    std::uint64_t ok = 0;
    for (std::uint32_t id = 0; id < 64; ++id) ok += replay.handler().gate().check(id, t).ok();
    const std::uint64_t after = g_allocations.load();
    EXPECT_EQ(after - before, 0u) << "allocations on the ITCH path";
    EXPECT_GT(replay.front().channel(0).counters.messages.get(), 3'900u);
    EXPECT_GT(replay.front().channel(0).counters.held_max, 0u);
    EXPECT_EQ(replay.front().channel(0).counters.session_changes.get(), 1u);
    (void)ok;
}

// GLIMPSE, the engine's half (ITCH50.md "Snapshot recovery"): a late join,
// the stream's output kept while the snapshot loads, the books replaced on
// `M` and the kept positions applied; then a second snapshot whose buffer
// fills (the kept output applied at once). No allocation on the engine thread.
TEST(HotPath, ItchGlimpseSnapshotBufferingAndApplyAllocateNothing) {
    using namespace tickgate::itch50;
    Config cfg = parse_config(
        "[itch]\nmax_orders = 65536\nmax_levels = 65536\n"
        "[[channel]]\nid = 7\nprotocol = \"itch50\"\n"
        "a = { group = \"239.255.10.1\", port = 31001 }\nb = { group = \"239.255.10.2\", port = 31002 }\n",
        "hot.toml");
    cfg.channels[0].glimpse = "127.0.0.1:1";  // the engine side only: no session is run
    cfg.glimpse.buffer_bytes = 64 * 1024;
    std::vector<Bytes> datagrams;
    for (std::uint64_t seq = 100; seq < 2100; seq += 4) {
        std::vector<Bytes> m;
        for (std::uint64_t i = 0; i < 4; ++i)
            m.push_back(add_order(static_cast<std::uint16_t>(1 + (seq + i) % 50), seq + i, 'B', 100,
                                  static_cast<std::uint32_t>(1000 + (seq + i) % 20)));
        datagrams.push_back(mold_packet("SESSION001", seq, m));
    }
    SnapshotStorage storage(65536);
    Bytes end(kSnapshotSize);
    end[0] = std::byte{'M'};
    soupbintcp::detail::numeric(end.data() + 1, 150, soupbintcp::kSequenceSize);
    std::vector<Bytes> spin;
    for (std::uint16_t l = 1; l <= 50; ++l) spin.push_back(stock_directory(l, "S" + std::to_string(l)));
    for (std::uint64_t r = 100; r < 150; ++r) spin.push_back(add_order(static_cast<std::uint16_t>(1 + r % 50), r, 'B', 100, 1000));
    Replay replay(cfg);
    const std::int64_t t = 1'700'000'000'000'000'000;
    const std::uint64_t before = g_allocations.load();
    replay.front().deliver(datagrams[0], 0xEFFF0A01, 31001, t);  // a late join at 100
    replay.front().begin_snapshot(0);
    for (std::size_t i = 1; i < 200; ++i) replay.front().deliver(datagrams[i], 0xEFFF0A01, 31001, t + static_cast<std::int64_t>(i));
    storage.reset();  // the GLIMPSE thread's part, here on this one
    for (const Bytes& m : spin) (void)storage.take(m);
    (void)storage.take(end);
    const SnapshotApplied a = replay.front().apply_snapshot(0, storage, t + 1000);
    replay.front().begin_snapshot(0);  // again: this time the buffer fills
    for (std::size_t i = 200; i < datagrams.size(); ++i)
        replay.front().deliver(datagrams[i], 0xEFFF0A01, 31001, t + static_cast<std::int64_t>(i));
    replay.front().abort_snapshot();
    std::uint64_t ok = 0;
    for (std::uint32_t id = 0; id < 64; ++id) ok += replay.handler().gate().check(id, t + 2000).ok();
    const std::uint64_t after = g_allocations.load();
    EXPECT_EQ(after - before, 0u) << "allocations while a snapshot is kept and applied";
    EXPECT_EQ(a.orders, 50u);
    EXPECT_FALSE(a.still_suspect);
    EXPECT_TRUE(replay.front().router().overflowed());
    EXPECT_EQ(replay.front().channel(0).next_seq, 2100u);
    (void)ok;
}

// ITCH live: lines received on loopback multicast, holes asked of a
// re-request server (the test's socket on 127.0.0.1) and its answers
// applied: receive -> stream -> request -> answer -> book, no allocation.
// ITCH's live hot path with a re-request server of the test's own on
// 127.0.0.1: 200 packets of 4 adds on line A, every 5th lost and kept for
// the server, which answers each request with the packet holding its first
// position (each hole is one lost packet). Start-up allocates; serve() does not.
class ItchHotFeed {
public:
    ItchHotFeed() : server_(::socket(AF_INET, SOCK_DGRAM, 0)) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(0x7F000001);
        socklen_t len = sizeof addr;
        EXPECT_EQ(::bind(server_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
        EXPECT_EQ(::getsockname(server_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
        port_ = ntohs(addr.sin_port);
        std::uint64_t ref = 1;
        for (std::uint64_t seq = 1; seq <= 800; seq += 4) {
            std::vector<tickgate::Bytes> m;
            for (int i = 0; i < 4; ++i, ++ref)
                m.push_back(tickgate::itch50::add_order(static_cast<std::uint16_t>(1 + ref % 40), ref, ref % 2 ? 'B' : 'S', 100,
                                                        static_cast<std::uint32_t>(10'000 + ref % 30)));
            packets_.push_back(tickgate::itch50::mold_packet("SESSION001", seq, m));
        }
    }
    ~ItchHotFeed() { ::close(server_); }
    ItchHotFeed(const ItchHotFeed&) = delete;
    ItchHotFeed& operator=(const ItchHotFeed&) = delete;

    // Channel 3 on `group_a`:`port` and `group_b`:`port + 1`, asking this server.
    [[nodiscard]] tickgate::Config config(const std::string& group_a, const std::string& group_b, std::uint16_t port) const {
        return tickgate::parse_config(
            "[itch]\nmax_orders = 65536\nmax_levels = 65536\n[[channel]]\nid = 3\nprotocol = \"itch50\"\n"
            "rerequest = \"127.0.0.1:" + std::to_string(port_) + "\"\n"
            "a = { group = \"" + group_a + "\", port = " + std::to_string(port) + " }\nb = { group = \"" + group_b +
                "\", port = " + std::to_string(port + 1) + " }\n",
            "hot.toml");
    }
    // Sends the packets on line A (`group`:`port`), all but every 5th, calling poll() after each.
    template <class Poll>
    void send(std::uint32_t group, std::uint16_t port, Poll&& poll) {
        for (std::size_t i = 0; i < packets_.size(); ++i) {
            if (i % 5 != 2) (void)sender_.send(group, port, packets_[i]);
            poll();
        }
    }
    // Answers the request waiting, if any.
    void serve() {
        sockaddr_in from{};
        socklen_t from_len = sizeof from;
        const ssize_t n = ::recvfrom(server_, request_.data(), request_.size(), MSG_DONTWAIT,
                                     reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n != 20) return;
        const std::uint64_t seq = tickgate::load_be<std::uint64_t>(request_.data() + 10);
        const tickgate::Bytes& answer = packets_[(seq - 1) / 4];
        (void)::sendto(server_, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from), sizeof from);
    }

private:
    int server_;
    std::uint16_t port_ = 0;
    std::vector<tickgate::Bytes> packets_;
    tickgate::MulticastSender sender_{"127.0.0.1"};
    std::array<std::byte, 64> request_{};
};

// The engine's calls: subscriptions (books skipped, definitions moving the
// symbol index), find by symbol and the safe-price read with depth.
TEST(HotPath, SubscriptionsFindAndSafeQuoteAllocateNothing) {
    const auto stream = build_stream(1);
    Handler handler(Capacity{}, GateConfig{});
    std::array<Level, 8> bids{}, asks{};
    std::uint64_t priced = 0;
    const std::uint64_t before = g_allocations.load();
    for (const char* symbol : {"SYM1", "SYM2", "SYM3"}) ASSERT_TRUE(handler.subscribe(symbol));
    for (const auto& d : stream) {
        handler.on_datagram(d, 1'700'000'000'000'000'000, 0, [&](const Update& u) {
            if (!u.book_changed) return;
            const char* symbol = handler.instruments().state(u.instrument_id).symbol;
            if (const auto h = handler.find(symbol))
                priced += handler.safe_quote(*h, 1'700'000'000'000'000'000, bids, asks).bid_levels;
        });
    }
    handler.unsubscribe("SYM2");
    const std::uint64_t after = g_allocations.load();
    EXPECT_EQ(after - before, 0u) << "allocations in the engine's calls";
    EXPECT_GT(priced, 0u);
    EXPECT_TRUE(handler.book().side(5, Side::kBid).empty());  // SYM5: not subscribed
}

// Datagrams the handler's lines received.
template <class H>
std::uint64_t received_packets(const H& handler) {
    std::uint64_t n = 0;
    for (const auto& l : handler.line_stats()) n += l->packets.get();
    return n;
}

// One channel (id 3) on loopback multicast for the live paths.
Config live_config(PipelineMode pipeline) {
    Config cfg;
    ChannelConfig ch;
    ch.id = 3;
    ch.a = {"239.255.77.1", 39101, "127.0.0.1"};
    ch.b = {"239.255.77.2", 39102, "127.0.0.1"};
    cfg.channels.push_back(ch);
    cfg.threading.pipeline = pipeline;
    return cfg;
}

TEST(HotPath, LiveReceiveRingPollAllocateNothing) {
    const Config cfg = live_config(PipelineMode::kTwoThread);
    const ChannelConfig& ch = cfg.channels.front();
    const auto stream = build_stream(3);
    FeedHandler handler(cfg);
    MulticastSender sender;
    handler.start();
    const std::uint32_t ga = *parse_ipv4(ch.a.group), gb = *parse_ipv4(ch.b.group);

    // Warm up until the network thread is receiving.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (handler.decoder_counters().packets.get() == 0 && std::chrono::steady_clock::now() < deadline) {
        sender.send(ga, ch.a.port, stream.front());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        handler.poll(1024);
    }
    ASSERT_GT(handler.decoder_counters().packets.get(), 0u);
    while (handler.poll(4096) != 0) {
    }

    // Received datagrams are counted per line (arbitration drops second copies before decoding).
    auto received = [&] { return received_packets(handler); };
    const std::uint64_t packets_before = received();
    const std::uint64_t before = g_allocations.load();
    std::size_t sent = 0;
    for (const auto& d : stream) {
        sent += sender.send(ga, ch.a.port, d);
        sent += sender.send(gb, ch.b.port, d);
        handler.poll(4096);
        if (sent % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // stay under SO_RCVBUF
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (received() - packets_before < sent && std::chrono::steady_clock::now() < end)
        handler.poll(4096);
    while (handler.poll(4096) != 0) {
    }
    const std::uint64_t after = g_allocations.load();
    handler.stop();
    EXPECT_EQ(after - before, 0u) << "allocations on the live hot path";
    EXPECT_EQ(received() - packets_before, sent);
    EXPECT_GT(handler.arbiter_counters().duplicate_packets.get(), 0u);
}

// A nats-server with JetStream on a free 127.0.0.1 port for the test's
// life (none if it is not installed: the publisher then retries in the
// background, which the engine must not notice either).
class NatsServer {
public:
    NatsServer() {
        const int s = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
            port_ = ntohs(a.sin_port);
        ::close(s);
        dir_ = ::testing::TempDir() + "tickgate-hotpath-js-" + std::to_string(::getpid());
        const std::string port = std::to_string(port_);
        const char* argv[] = {"nats-server", "-a", "127.0.0.1", "-p", port.c_str(), "-js", "-sd", dir_.c_str(), nullptr};
        posix_spawn_file_actions_t quiet;  // its log is not ours to print
        posix_spawn_file_actions_init(&quiet);
        posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
        const int spawned = ::posix_spawnp(&pid_, "nats-server", &quiet, nullptr, const_cast<char* const*>(argv), environ);
        posix_spawn_file_actions_destroy(&quiet);
        if (spawned != 0) pid_ = 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    ~NatsServer() {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            ::waitpid(pid_, nullptr, 0);
        }
        std::filesystem::remove_all(dir_);
    }
    [[nodiscard]] std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
    [[nodiscard]] bool running() const noexcept { return pid_ > 0; }

private:
    pid_t pid_ = 0;
    std::uint16_t port_ = 0;
    std::string dir_;
};

// `run --fanout` on the engine thread (issue 27): each update handed to the
// fan-out's Source (gate check, levels copied, one cell written) and the
// gate sweep, with the publisher thread publishing to a real server
// meanwhile. The engine thread allocates nothing.
TEST(HotPath, FanoutSourceOnTheEngineThreadAllocatesNothing) {
    const Config cfg = live_config(PipelineMode::kTwoThread);
    const ChannelConfig& ch = cfg.channels.front();
    const auto stream = build_stream(3);
    FeedHandler handler(cfg);
    NatsServer nats;
    FanoutConfig fc;
    fc.servers = {nats.url()};
    fc.depth = 5;
    fanout::ConflatingRing ring(cfg.capacity.max_instruments, fc.depth);
    fanout::Source<FeedHandler> source(handler, ring);
    fanout::Publisher publisher(fc, "qfb1", ring);
    publisher.start();
    auto apply = [&](const Update& u, const Event& ev) { source.on_update(u, ev, realtime_ns()); };
    MulticastSender sender;
    handler.start();
    const std::uint32_t ga = *parse_ipv4(ch.a.group);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (handler.decoder_counters().packets.get() == 0 && std::chrono::steady_clock::now() < deadline) {
        sender.send(ga, ch.a.port, stream.front());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        handler.poll(apply, 1024);
    }
    ASSERT_GT(handler.decoder_counters().packets.get(), 0u);
    source.sweep(realtime_ns());

    const std::uint64_t before = t_allocations;
    std::size_t sent = 0;
    for (const auto& d : stream) {
        sent += sender.send(ga, ch.a.port, d);
        handler.poll(apply, 4096);
        if (sent % 64 == 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));  // stay under SO_RCVBUF
            source.sweep(realtime_ns());
        }
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (received_packets(handler) < sent && std::chrono::steady_clock::now() < end) handler.poll(apply, 4096);
    while (handler.poll(apply, 4096) != 0) {
    }
    source.sweep(realtime_ns() + 10'000'000'000);  // every instrument stale: a gate change each
    const std::uint64_t after = t_allocations;
    handler.stop();
    publisher.stop();
    EXPECT_EQ(after - before, 0u) << "allocations on the engine thread with the fan-out on";
    EXPECT_GT(ring.counters().offered.get(), 1000u);
    if (nats.running()) {
        EXPECT_GT(publisher.counters().published.get(), 0u) << "the publisher published meanwhile";
    }
}

// What `tickgate run`'s engine adds per update and per publish (issue 26
// item 8): the receive -> book histogram (one clock read, a bucket add),
// the gate refusals, and MetricsRegistry::publish with every source (a
// venue hook, the histograms): nothing allocates.
TEST(HotPath, MetricsLatencyRecordAndPublishAllocateNothing) {
    const Config cfg = live_config(PipelineMode::kTwoThread);
    const ChannelConfig& ch = cfg.channels.front();
    const auto stream = build_stream(3);
    FeedHandler handler(cfg);
    const std::vector<std::uint16_t> ids = cfg.channel_ids();
    LatencyHistograms latency(ids);
    GateRejections rejections;
    static constexpr ChannelCounterRow kRows[] = {{"tickgate_test_channel_total", "A protocol's own channel counter."}};
    static constexpr ChannelCounterGroup kGroups[] = {kRows};
    MetricsRegistry registry(handler.stats(), {.channels = ids.size(), .channel_groups = kGroups});
    struct Venue {
        static void instrument(const void*, MetricsRegistry::InstrumentSample& out) noexcept { out.venue_id = out.id; }
    };
    const MetricsRegistry::Venue venue{&handler, &Venue::instrument};
    std::array<ChannelCounterSample, 1> channel_counters{};
    channel_counters[0] = {.channel = ch.id, .groups = 1u, .values = {1}};
    const MetricsRegistry::Sources sources{
        .gate = &rejections, .venue = &venue, .channel_counters = channel_counters, .latency = &latency};
    std::uint64_t timed = 0;
    auto apply = [&](const Update& u, const Event& ev) {
        if (!u.book_changed) return;
        const std::int64_t now = realtime_ns();
        latency.record(ev.channel_id, now - ev.recv_ns);
        ++timed;
        const GateDecision d = handler.gate().check(u.instrument_id, now);
        if (!d.ok()) rejections.count(d.reason);
    };
    MulticastSender sender;
    handler.start();
    const std::uint32_t ga = *parse_ipv4(ch.a.group);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (handler.decoder_counters().packets.get() == 0 && std::chrono::steady_clock::now() < deadline) {
        sender.send(ga, ch.a.port, stream.front());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        handler.poll(apply, 1024);
    }
    ASSERT_GT(handler.decoder_counters().packets.get(), 0u);
    registry.publish(handler.stats(), sources);  // both buffers touched once before counting
    registry.publish(handler.stats(), sources);

    const std::uint64_t before = g_allocations.load();
    std::size_t sent = 0;
    for (const auto& d : stream) {
        sent += sender.send(ga, ch.a.port, d);
        handler.poll(apply, 4096);
        if (sent % 64 == 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));  // stay under SO_RCVBUF
            registry.publish(handler.stats(), sources);
        }
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (received_packets(handler) < sent && std::chrono::steady_clock::now() < end) handler.poll(apply, 4096);
    while (handler.poll(apply, 4096) != 0) {
    }
    registry.publish(handler.stats(), sources);
    const std::uint64_t after = g_allocations.load();
    handler.stop();
    EXPECT_EQ(after - before, 0u) << "allocations recording latency or publishing metrics";
    EXPECT_GT(timed, 0u);
    EXPECT_EQ(registry.snapshot().histogram_count, 1u);
    EXPECT_GT(registry.snapshot().instrument_count, 0u);
}

// Inline: every datagram, both lines, through receive -> arbiter -> decode
// -> sequencer -> book -> the engine's callback (which asks the gate) on
// this one thread, with arbitration holds released by poll() too. SYM20 is
// not subscribed: sequenced, never booked, never called back.
TEST(HotPath, InlineReceiveToCallbackAllocatesNothing) {
    const Config cfg = live_config(PipelineMode::kInline);
    const ChannelConfig& ch = cfg.channels.front();
    const auto stream = build_stream(3);
    InlineFeedHandler handler(cfg);
    MulticastSender sender;
    const std::uint32_t ga = *parse_ipv4(ch.a.group), gb = *parse_ipv4(ch.b.group);
    for (std::uint32_t id = 1; id < 20; ++id) ASSERT_TRUE(handler.subscribe("SYM" + std::to_string(id)));
    std::uint64_t updates = 0, gate_ok = 0, unsubscribed = 0;
    auto engine = [&](const Update& u, const Event&) {
        ++updates;
        unsubscribed += u.instrument_id == 20;
        gate_ok += handler.gate().check(u.instrument_id, 1'700'000'000'100'000'000).ok();
    };

    // Warm up until the sockets receive (the first poll of each kind may
    // touch lazily mapped pages, none of which allocate, but be fair).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (handler.decoder_counters().packets.get() == 0 && std::chrono::steady_clock::now() < deadline) {
        sender.send(ga, ch.a.port, stream.front());
        handler.poll(engine, 5'000'000);
    }
    ASSERT_GT(handler.decoder_counters().packets.get(), 0u);
    while (handler.poll(engine, 1'000'000) != 0) {
    }

    const std::uint64_t packets_before = received_packets(handler);
    const std::uint64_t updates_before = updates;
    const std::uint64_t before = g_allocations.load();
    std::size_t sent = 0;
    for (const auto& d : stream) {
        sent += sender.send(ga, ch.a.port, d);
        sent += sender.send(gb, ch.b.port, d);
        handler.poll(engine);  // busy-poll
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (received_packets(handler) - packets_before < sent && std::chrono::steady_clock::now() < end)
        handler.poll(engine, 1'000'000);  // blocking, bounded by the arbitration deadline
    while (handler.poll(engine, 1'000'000) != 0) {
    }
    const std::uint64_t after = g_allocations.load();
    EXPECT_EQ(after - before, 0u) << "allocations on the inline hot path";
    EXPECT_EQ(received_packets(handler) - packets_before, sent);
    EXPECT_GT(updates - updates_before, 15'000u) << "the engine was called back for every subscribed message";
    EXPECT_EQ(unsubscribed, 0u) << "an update of an instrument not subscribed reached the engine";
    EXPECT_TRUE(handler.book().side(20, Side::kBid).empty());
    EXPECT_GT(handler.instruments().state(20).last_seq, 0u) << "SYM20 is still sequenced";
    EXPECT_GT(handler.arbiter_counters().duplicate_packets.get(), 0u);
    EXPECT_GT(handler.decoder_counters().malformed_packets.get(), 0u);
    EXPECT_EQ(handler.decoder_counters().session_changes.get(), 1u);
    EXPECT_GT(gate_ok, 0u);
}

// AF_XDP (receiver.backend = "af_xdp"): the same inline path, the frames
// coming off the RX ring of a veth in a namespace the test makes, sent from
// its peer's namespace. Skipped, saying why, where AF_XDP cannot start.
TEST(HotPath, AfXdpInlineReceiveToCallbackAllocatesNothing) {
    if (::geteuid() != 0) GTEST_SKIP() << "AF_XDP and network namespaces need root";
    std::optional<test::VethPair> veth;
    try {
        veth.emplace();
    } catch (const std::exception& e) {
        GTEST_SKIP() << e.what();
    }
    Config cfg = live_config(PipelineMode::kInline);
    for (LineConfig* l : {&cfg.channels.front().a, &cfg.channels.front().b}) l->interface = test::VethPair::kRxAddress;
    cfg.channels.front().sources.clear();
    cfg.receiver.backend = ReceiveBackend::kAfXdp;
    cfg.receiver.af_xdp.interface = test::VethPair::kRxInterface;
    cfg.receiver.af_xdp.mode = "generic";
    const ChannelConfig& ch = cfg.channels.front();
    const auto stream = build_stream(3);
    veth->enter_handler();
    struct Home {
        test::VethPair& v;
        ~Home() { v.leave(); }
    } home{*veth};
    std::optional<InlineFeedHandler> made;
    try {
        made.emplace(cfg);
    } catch (const XdpUnavailable& e) {
        GTEST_SKIP() << "AF_XDP cannot start here: " << e.what();
    }
    InlineFeedHandler& handler = *made;
    ASSERT_NE(handler.stats().receiver.af_xdp(), nullptr);
    std::uint64_t updates = 0;
    auto engine = [&](const Update& u, const Event&) {
        ++updates;
        (void)handler.gate().check(u.instrument_id, 1'700'000'000'100'000'000);
    };
    // The sender: its own thread in the other namespace, made before counting.
    std::atomic<int> phase{0};  // 0 warm-up, 1 send the stream, 2 done
    std::atomic<std::size_t> sent{0};
    const std::uint32_t ga = *parse_ipv4(ch.a.group), gb = *parse_ipv4(ch.b.group);
    std::thread sender([&] {
        veth->enter_sender();
        test::VethSender tx;
        while (phase.load() == 0) {
            tx.send(ga, ch.a.port, stream.front());
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        std::size_t n = 0;
        for (const auto& d : stream) {
            n += tx.send(ga, ch.a.port, d);
            n += tx.send(gb, ch.b.port, d);
            if (n % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // within the ring
        }
        sent.store(n);
        phase.store(2);
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (handler.decoder_counters().packets.get() == 0 && std::chrono::steady_clock::now() < deadline)
        handler.poll(engine, 5'000'000);
    const bool warmed = handler.decoder_counters().packets.get() > 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    while (handler.poll(engine, 1'000'000) != 0) {
    }
    const std::uint64_t packets_before = received_packets(handler);
    const std::uint64_t updates_before = updates;
    const std::uint64_t before = g_allocations.load();
    phase.store(1);
    while (phase.load() != 2) handler.poll(engine);  // busy-poll while the stream comes
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (received_packets(handler) - packets_before < sent.load() && std::chrono::steady_clock::now() < end)
        handler.poll(engine, 1'000'000);
    while (handler.poll(engine, 1'000'000) != 0) {
    }
    const std::uint64_t after = g_allocations.load();
    sender.join();
    ASSERT_TRUE(warmed) << "nothing arrived through AF_XDP";
    EXPECT_EQ(after - before, 0u) << "allocations on the AF_XDP inline hot path";
    EXPECT_EQ(received_packets(handler) - packets_before, sent.load());
    EXPECT_GT(updates - updates_before, 15'000u);
    EXPECT_GT(handler.stats().receiver.af_xdp()->counters().frames, sent.load());
}

}  // namespace

// MDP3: the v6.1 capture (lines A and B as one channel, so B's copies are
// dropped by MsgSeqNum), then a snapshot with buffered replay, a channel gap
// (unconfirmed), a ChannelReset, a heartbeat and a truncated packet.
TEST(HotPath, Mdp3DecodeSequenceBookGateAllocateNothing) {
    std::vector<std::vector<std::byte>> stream;
    {
        CaptureReader reader(TICKGATE_TEST_DATA_DIR "/captures/cme-mdp3-v6.1-ab.pcapng");
        FrameCounters fc;
        while (auto rec = reader.next())
            if (auto d = extract_udp(reader.link_type(), rec->frame, fc)) stream.emplace_back(d->payload.begin(), d->payload.end());
    }
    using mdp3::test::Writer;
    std::uint32_t seq = 10615;
    const auto packet = [&](const Writer& message) {
        Writer p = mdp3::test::packet(seq++, 0);
        p.append(message);
        stream.push_back(p.bytes());
    };
    Writer groups = mdp3::test::group_header(22, 2);
    groups.append(mdp3::test::snapshot_entry(3465000000, 5, 1, '0')).append(mdp3::test::snapshot_entry(3467500000, 5, 1, '1'));
    packet(mdp3::test::message(mdp3::tid::kSnapshot38, 6, mdp3::test::snapshot_root(363272, 790, 1), groups));
    seq += 3;  // a channel gap
    packet(mdp3::test::message(mdp3::tid::kHeartbeat, 6, Writer(), Writer()));
    Writer reset_root;
    reset_root.put<std::uint64_t>(5).put<std::uint8_t>(0);
    packet(mdp3::test::message(mdp3::tid::kChannelReset, 6, reset_root, mdp3::test::group_header(2, 1).put<std::int16_t>(1)));
    stream.push_back(stream[100]);
    std::memcpy(stream.back().data(), &seq, 4);  // a new MsgSeqNum (little-endian host) ...
    stream.back().resize(stream.back().size() - 5);  // ... cut short

    Capacity cap;
    cap.book_depth = 10;
    BasicHandler<mdp3::Protocol> handler(cap, GateConfig{});
    std::uint64_t ok = 0;
    const std::uint64_t before = g_allocations.load();
    for (const auto& d : stream)
        handler.decoder().decode(d, 1'700'000'000'000'000'000, 0, [&](const Event& ev) { (void)handler.apply(ev); }, 1);
    for (std::uint32_t id = 0; id < 200; ++id) ok += handler.gate().check(id, 1'700'000'000'100'000'000).ok();
    const std::uint64_t after = g_allocations.load();
    EXPECT_EQ(after - before, 0u) << "allocations on the MDP3 hot path";
    const auto& dec = handler.decoder().protocol_decoder();
    EXPECT_EQ(dec.channel_counters(0).duplicate_packets.get(), 5000u);
    EXPECT_EQ(dec.channel_counters(0).gaps.get(), 1u);
    EXPECT_EQ(dec.channel_counters(0).resets.get(), 1u);
    EXPECT_EQ(handler.decoder().counters().malformed_packets.get(), 1u);
    (void)ok;
}

// MDP3 live, both pipelines: the simulator's channel (incremental lines with
// a burst lost on both, the snapshot loop, the definitions), sent on
// loopback, through receive -> arbiter (incremental) or straight to the
// decoder (snapshot, definition) -> sequencer -> book, with the snapshot
// feed joined at the cold start and after the gap and left once clean: the
// decision per update and the rescans after batches allocate nothing (the
// membership syscalls are the kernel's).
template <class Handler>
void mdp3_live_allocates_nothing(PipelineMode pipeline) {
    Config cfg;
    cfg.threading.pipeline = pipeline;
    cfg.channels.push_back(test::mdp3_loopback_channel("239.255.22.", 26310));
    mdp3::SimOptions o;
    o.use_channel(cfg.channels.front());
    o.feed.messages = 4000;
    o.feed.burst_p = 0.02;
    o.feed.burst_len = 3;
    struct Copy {
        std::vector<std::byte> bytes;
        std::uint32_t group;
        std::uint16_t port;
    };
    std::vector<Copy> copies;  // built before anything is measured
    (void)mdp3::run_simulator(o, [&](mdp3::SimPacket& p) {
        const auto lines = cfg.channels.front().lines();  // incremental, snapshot, definition: A, B each
        const LineConfig& a = *lines[static_cast<std::size_t>(p.feed) * 2];
        const LineConfig& b = *lines[static_cast<std::size_t>(p.feed) * 2 + 1];
        if (p.line_a) copies.push_back({p.bytes, *parse_ipv4(a.group), a.port});
        if (p.line_b) copies.push_back({p.bytes, *parse_ipv4(b.group), b.port});
    });

    Handler handler(cfg);
    MulticastSender sender;
    const auto poll = [&] {
        if constexpr (std::is_same_v<Handler, BasicInlineFeedHandler<mdp3::Protocol>>) {
            return static_cast<std::size_t>(handler.poll([](const Update&, const Event&) {}, 200'000));
        } else {
            return handler.poll(4096);
        }
    };
    if constexpr (!std::is_same_v<Handler, BasicInlineFeedHandler<mdp3::Protocol>>) handler.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)poll();
    const std::uint64_t before = g_allocations.load();
    std::size_t sent = 0;
    for (const Copy& c : copies) {
        sent += sender.send(c.group, c.port, c.bytes);
        (void)poll();
        if (sent % 32 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));  // the snapshot loop's pace
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < end) (void)poll();
    const std::uint64_t after = g_allocations.load();
    if constexpr (!std::is_same_v<Handler, BasicInlineFeedHandler<mdp3::Protocol>>) handler.stop();
    EXPECT_EQ(after - before, 0u) << "allocations on the MDP3 live path";
    std::uint64_t joins = 0, leaves = 0, recoveries = 0;
    for (const auto& l : handler.line_stats()) {
        joins += l->snapshot_joins.get();
        leaves += l->snapshot_leaves.get();
        recoveries += l->snapshot_recoveries.get();
    }
    // Sent unpaced, the snapshot loop may run out before every instrument is
    // repaired (tests/e2e/mdp3_live_test.cpp checks the rule paced): here the
    // point is that joins, leaves and recoveries happened while measured.
    EXPECT_GE(joins, 2u) << "snapshot A and B joined";
    EXPECT_GE(leaves, 2u) << "and left once clean";
    EXPECT_GT(recoveries, 0u);
}

TEST(HotPath, Mdp3LiveWithSnapshotFeedAllocatesNothingTwoThread) {
    mdp3_live_allocates_nothing<BasicFeedHandler<mdp3::Protocol>>(PipelineMode::kTwoThread);
}
TEST(HotPath, Mdp3LiveWithSnapshotFeedAllocatesNothingInline) {
    mdp3_live_allocates_nothing<BasicInlineFeedHandler<mdp3::Protocol>>(PipelineMode::kInline);
}

// ITCH 5.0 through the shared pipelines (itch50::Protocol's front: the
// MoldUDP64 stream, re-request client, ring or inline sequencer, order
// book): receive, a hole per fifth packet, the request, the answer, the
// release of what was held, the engine's callback.
template <class Handler>
void itch_shared_allocates_nothing(PipelineMode pipeline, std::uint16_t port) {
    using namespace tickgate::itch50;
    ItchHotFeed feed;
    Config cfg = feed.config("239.255.34.11", "239.255.34.12", port);
    cfg.threading.pipeline = pipeline;
    Handler handler(cfg);
    constexpr bool kInline = std::is_same_v<Handler, BasicInlineFeedHandler<Protocol>>;
    std::uint64_t updates = 0;
    const auto on_update = [&](const Update&, const Event&) { ++updates; };
    const auto poll = [&] {
        if constexpr (kInline) (void)handler.poll(on_update, 0);
        else (void)handler.poll(on_update, 4096);
    };
    if constexpr (!kInline) handler.start();
    const std::uint64_t before = g_allocations.load();
    feed.send(0xEFFF220B, port, poll);  // 239.255.34.11
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (updates < 800 && std::chrono::steady_clock::now() < deadline) {
        poll();
        feed.serve();
    }
    const std::uint64_t after = g_allocations.load();
    if constexpr (!kInline) handler.stop();
    EXPECT_EQ(after - before, 0u) << "allocations on ITCH's shared live path";
    EXPECT_EQ(handler.protocol_decoder().channel(0).next_seq, 801u);
    EXPECT_EQ(handler.protocol_decoder().channel(0).counters.recovered_messages.get(), 160u);
    EXPECT_GE(updates, 800u) << "every add reached the engine";
}

TEST(HotPath, ItchSharedTwoThreadReceiveRerequestRingPollAllocateNothing) {
    itch_shared_allocates_nothing<BasicFeedHandler<tickgate::itch50::Protocol>>(PipelineMode::kTwoThread, 31721);
}
TEST(HotPath, ItchSharedInlineReceiveRerequestCallbackAllocateNothing) {
    itch_shared_allocates_nothing<BasicInlineFeedHandler<tickgate::itch50::Protocol>>(PipelineMode::kInline, 31723);
}

// GLIMPSE on the inline pipeline (one thread receives, runs the front's
// snapshot course and the engine): a late join wants a snapshot, the
// client's thread loads it from a GlimpseServer on 127.0.0.1 while the
// stream's output is kept, the spin replaces the books (the rules, on the
// kSnapshotReplace event) and the kept output follows. The polling
// thread's allocations are counted alone: the client's thread connects
// through Boost.Asio, the server's is the test's.
TEST(HotPath, ItchSharedInlineGlimpseSnapshotAppliedAllocatesNothingOnTheEngineThread) {
    using namespace tickgate::itch50;
    GlimpseServerOptions go;
    go.username = "hot";
    go.password = "hot-pw";
    // `M` is the next position sent when the client connects (the handler
    // keeps its stream output from before that): the spin reflects what came before.
    std::atomic<std::uint64_t> next_sent{101}, spin_at{0};
    GlimpseServer server(go, [&] {
        GlimpseSpin spin;
        for (std::uint16_t locate = 1; locate <= 10; ++locate) spin.messages.push_back(stock_directory(locate, "HOT" + std::to_string(locate)));
        for (std::uint64_t ref = 1; ref <= 50; ++ref)
            spin.messages.push_back(add_order(static_cast<std::uint16_t>(1 + ref % 10), ref, 'S', 100, 2000));
        spin.next_position = next_sent.load();
        spin_at.store(spin.next_position);
        return spin;
    });
    ::setenv("TICKGATE_HOT_GLIMPSE_PW", "hot-pw", 1);
    const Config cfg = parse_config(
        "[itch]\nmax_orders = 65536\nmax_levels = 65536\n[threading]\npipeline = \"inline\"\n"
        "[glimpse]\nusername = \"hot\"\npassword_env = \"TICKGATE_HOT_GLIMPSE_PW\"\nmin_interval_ms = 10\n"
        "[[channel]]\nid = 3\nprotocol = \"itch50\"\nglimpse = \"127.0.0.1:" + std::to_string(server.port()) + "\"\n"
        "a = { group = \"239.255.34.21\", port = 31731 }\nb = { group = \"239.255.34.22\", port = 31732 }\n",
        "hot.toml");
    BasicInlineFeedHandler<Protocol> handler(cfg);
    std::uint64_t replaced = 0;
    const auto on_update = [&](const Update&, const Event& ev) { replaced += ev.kind == kSnapshotReplace ? 1 : 0; };
    tickgate::MulticastSender sender("127.0.0.1");
    std::vector<tickgate::Bytes> packets;  // positions 101.. (a late join), bids on the spin's stocks
    for (std::uint64_t seq = 101; seq < 901; seq += 4) {
        std::vector<tickgate::Bytes> m;
        for (std::uint64_t i = 0; i < 4; ++i)
            m.push_back(add_order(static_cast<std::uint16_t>(1 + (seq + i) % 10), 1000 + seq + i, 'B', 100, 1000));
        packets.push_back(mold_packet("SESSION001", seq, m));
    }
    const auto& course = handler.protocol_decoder().snapshots();
    const std::uint64_t before = t_allocations;
    std::size_t sent = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while ((course.counters(0).snapshots_applied.get() == 0 || sent < packets.size() || replaced == 0) &&
           std::chrono::steady_clock::now() < deadline) {
        if (sent < packets.size()) {
            const tickgate::Bytes& p = packets[sent++];
            (void)sender.send(0xEFFF2215, 31731, {p.data(), p.size()});  // 239.255.34.21
            next_sent.store(101 + 4 * sent);
        }
        (void)handler.poll(on_update, 1'000'000);
    }
    for (int i = 0; i < 50; ++i) (void)handler.poll(on_update, 1'000'000);
    const std::uint64_t after = t_allocations;
    EXPECT_EQ(after - before, 0u) << "allocations on the receiving and engine thread";
    EXPECT_EQ(course.counters(0).snapshots_requested.get(), 1u);
    EXPECT_EQ(course.counters(0).snapshots_applied.get(), 1u);
    EXPECT_EQ(replaced, 1u);
    EXPECT_EQ(course.counters(0).snapshot_orders.get(), 50u);
    const auto ch = handler.protocol_decoder().channel(0);
    EXPECT_EQ(ch.next_seq, 901u);
    // Locate 1: the spin's 5 orders, then the bids at positions from `M` on (every tenth).
    std::uint32_t after_m = 0;
    for (std::uint64_t pos = spin_at.load(); pos < 901; ++pos) after_m += pos % 10 == 0 ? 1 : 0;
    EXPECT_EQ(handler.book().open_orders(1), 5u + after_m);
    EXPECT_FALSE(handler.instruments().state(1).suspect);
}
