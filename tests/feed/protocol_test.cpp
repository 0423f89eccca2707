// The protocol seam (include/tickgate/protocol.hpp): the shared pipeline runs
// any VenueProtocol. (1) On the live path each datagram's header is read
// once. (2) A protocol that is not QFB/1 — here a toy whose channel comes
// from the line and whose session restarts when its sequence does, as
// MDP3's does — plugs into the shared handler, channel table, arbiter,
// sequencer, book and gate with none of QFB/1's wire or decoder
// (tests/toy/ runs it through replay and both live pipelines).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tickgate/endian.hpp"
#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed_handler.hpp"
#include "../toy/protocol.hpp"

namespace tickgate {
namespace {

// ------------------------------------------------ (1) one header read per datagram

std::atomic<std::uint64_t> g_key_reads{0};

// QFB/1 with read_key counted.
struct CountingQfb1 : qfb1::Protocol {
    [[nodiscard]] static qfb1::Key read_key(std::span<const std::byte> d, std::uint16_t ch) noexcept {
        g_key_reads.fetch_add(1, std::memory_order_relaxed);
        return qfb1::Protocol::read_key(d, ch);
    }
};
static_assert(VenueProtocol<CountingQfb1>);

TEST(ProtocolSeam, TheHeaderOfADatagramIsReadOnceOnTheLivePath) {
    Config cfg;
    ChannelConfig ch;
    ch.id = 3;
    ch.a = {"239.255.41.1", 39601, "127.0.0.1"};
    ch.b = {"239.255.41.2", 39602, "127.0.0.1"};
    cfg.channels.push_back(ch);
    BasicFeedHandler<CountingQfb1> h(cfg);
    h.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // joined
    const std::uint64_t reads_before = g_key_reads.load();

    MulticastSender sender("127.0.0.1");
    const std::uint32_t ga = *parse_ipv4(ch.a.group), gb = *parse_ipv4(ch.b.group);
    const std::int64_t t = realtime_ns();
    for (std::uint64_t seq = 1; seq <= 10; ++seq) {
        PacketBuilder p(3, 1, seq, t);
        p.quote(7, seq, t, 100, 1, 101, 1);
        ASSERT_TRUE(sender.send(ga, ch.a.port, p.bytes()));  // both lines: arbitrated
        ASSERT_TRUE(sender.send(gb, ch.b.port, p.bytes()));
    }
    PacketBuilder foreign(4, 1, 11, t);  // another channel's header on line A: dropped (rule 7)
    ASSERT_TRUE(sender.send(ga, ch.a.port, foreign.bytes()));
    const std::byte runt[5]{};
    ASSERT_TRUE(sender.send(ga, ch.a.port, runt));  // no header at all: malformed

    std::uint64_t datagrams = 0;
    for (int i = 0; i < 400 && datagrams < 22; ++i) {
        h.poll();
        datagrams = 0;
        for (const auto& l : h.line_stats()) datagrams += l->packets.get();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    h.stop();
    while (h.poll() != 0) {
    }
    ASSERT_EQ(datagrams, 22u);
    EXPECT_EQ(g_key_reads.load() - reads_before, datagrams) << "each datagram's key is read exactly once";
    EXPECT_EQ(h.instruments().state(7).counters.accepted, 10u);
    EXPECT_EQ(h.arbiter_counters().duplicate_packets.get(), 10u);
    EXPECT_EQ(h.decoder_counters().malformed_packets.get(), 1u);
    EXPECT_EQ(h.line_stats()[0]->foreign_channel_packets.get(), 1u);
}

// ------------------------------------------------ (2) a protocol of another shape

TEST(ProtocolSeam, AProtocolWithoutChannelOrSessionInItsHeaderRunsTheSharedPipeline) {
    BasicHandler<toy::Protocol> h(Capacity{.max_instruments = 16, .book_depth = 4}, GateConfig{});
    const std::int64_t t = 1'000'000;
    ChannelStreams<toy::Protocol>& streams = h.streams();
    auto feed = [&](const std::vector<std::byte>& d, std::uint16_t channel, std::int64_t at) {
        const toy::Protocol::Key key = toy::Protocol::read_key(d, channel);
        h.on_packet(d, key, streams.observe(key, 0, nullptr).mark, at, 0);
    };
    feed(toy::packet(500, 5, 1, 100), 9, t);
    feed(toy::packet(501, 5, 3, 102), 9, t + 1);  // rpt 2 lost: a gap, then a full quote repairs it
    feed(toy::packet(502, 5, 3, 103), 9, t + 2);  // duplicate rpt
    EXPECT_EQ(h.instruments().state(5).counters.lost, 1u);
    EXPECT_EQ(h.instruments().state(5).counters.duplicates, 1u);
    EXPECT_EQ(h.instruments().state(5).channel_id, 9);  // the line's channel
    ASSERT_EQ(h.book().side(5, Side::kBid).size(), 1u);
    EXPECT_EQ(h.book().side(5, Side::kBid)[0].price, 102);
    EXPECT_TRUE(h.gate().check(5, t + 3).ok());

    feed(toy::packet(1, 5, 1, 200), 9, t + 4);  // seq far back: a new session resets the channel
    EXPECT_EQ(h.decoder().counters().session_changes.get(), 1u);
    EXPECT_EQ(h.sequencer().counters().session_resets, 1u);
    EXPECT_EQ(h.instruments().state(5).last_seq, 1u);  // accepted afresh, no loss counted
    EXPECT_EQ(h.instruments().state(5).counters.lost, 1u);
}

TEST(ProtocolSeam, TheSharedArbiterMergesAnyProtocolsLinesByItsKey) {
    ChannelStreams<toy::Protocol> streams;
    PacketArbiter<toy::Protocol> arb(4, 64, 1'000);
    std::vector<std::uint64_t> delivered;
    auto deliver = [&](std::span<const std::byte>, const toy::Protocol::Key& k, SessionMark, std::int64_t, std::uint8_t) {
        delivered.push_back(k.seq);
    };
    auto offer = [&](std::uint32_t seq, std::uint8_t line, std::int64_t at) {
        const auto d = toy::packet(seq, 1, seq, 100);
        const toy::Protocol::Key k = toy::Protocol::read_key(d, 2);
        arb.offer(d, k, streams.observe(k, line, nullptr), at, line, deliver);
    };
    offer(1, 0, 0);
    offer(3, 0, 1);  // held: 2 is missing on A
    offer(1, 1, 2);  // B's copy of 1: duplicate
    offer(2, 1, 3);  // B fills the hole
    offer(3, 1, 4);  // duplicate
    EXPECT_EQ(delivered, (std::vector<std::uint64_t>{1, 2, 3}));
    EXPECT_EQ(arb.counters().duplicate_packets.get(), 2u);
    EXPECT_EQ(arb.counters().filled_holes.get(), 1u);
}

TEST(ProtocolSeam, ProtocolsAreChosenByNameOnceAndUnknownNamesAreRefused) {
    EXPECT_EQ(with_protocol("qfb1", []<VenueProtocol P>() { return std::string(P::kName); }), "qfb1");
    try {
        (void)with_protocol("fix44", []<VenueProtocol P>() { return 0; });
        FAIL() << "an unknown protocol was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("unknown protocol \"fix44\" (known: qfb1, mdp3, itch50)"), std::string::npos) << e.what();
    }
    Config cfg;
    cfg.default_protocol = "toy";  // a handler refuses a config of another protocol
    ChannelConfig ch;
    ch.id = 1;
    ch.protocol = "toy";
    ch.a = {"239.255.41.3", 39603, "127.0.0.1"};
    ch.b = {"239.255.41.4", 39604, "127.0.0.1"};
    cfg.channels.push_back(ch);
    EXPECT_THROW(FeedHandler{cfg}, std::invalid_argument);
}

}  // namespace
}  // namespace tickgate
