// The protocol seam (include/tickgate/protocol.hpp): the shared pipeline runs
// any VenueProtocol. (1) On the live path each datagram's header is read
// once. (2) A protocol that is not QFB/1 — here a toy whose channel comes
// from the line and whose session restarts when its sequence does, as
// MDP3's does — plugs into the shared handler, channel table, arbiter,
// sequencer, book and gate without any QFB/1 code.
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

// "TOY": u32 seq, u16 count, then per message instrument u32, rpt_seq u64,
// bid i64, ask i64 (28 bytes): each a full quote. No channel and no session
// in the header: the line says the channel, and a sequence number more than
// 100 below the highest seen on the channel starts a new session.
struct Toy {
    static constexpr std::size_t kHeader = 6, kMessage = 28;
    struct Key {
        std::uint64_t seq = 0;
        std::uint32_t len = 0;
        std::uint16_t channel = 0;
        std::uint16_t count = 0;
        bool ok = false;
        [[nodiscard]] bool valid() const noexcept { return ok; }
        [[nodiscard]] std::uint64_t next_seq() const noexcept { return seq + 1; }
        [[nodiscard]] PacketFingerprint fingerprint() const noexcept { return {0, len}; }
    };
    class SessionState {
    public:
        [[nodiscard]] SessionMark observe(const Key& k) noexcept {
            const bool first = !started_, restart = started_ && k.seq + 100 < highest_;
            started_ = true;
            if (first || restart || k.seq > highest_) highest_ = k.seq;
            return first ? SessionMark::kFirst : restart ? SessionMark::kNewer : SessionMark::kCurrent;
        }

    private:
        bool started_ = false;
        std::uint64_t highest_ = 0;
    };
    class Decoder {
    public:
        template <class Sink>
        DecodeResult decode(std::span<const std::byte> d, const Key& key, SessionMark mark, std::int64_t recv_ns,
                            std::uint8_t line, Sink&& sink) noexcept {
            counters_.packets.add();
            if (!key.valid() || d.size() != kHeader + kMessage * key.count) {
                counters_.malformed_packets.add();
                return {PacketVerdict::kMalformed, Fault::kBadLength, 0};
            }
            Event ev{};
            ev.recv_ns = recv_ns;
            ev.channel_id = key.channel;
            ev.line = line;
            if (mark == SessionMark::kNewer) {
                counters_.session_changes.add();
                ev.kind = EventKind::kSessionChange;
                sink(static_cast<const Event&>(ev));
            }
            for (std::uint16_t i = 0; i < key.count; ++i) {
                const std::byte* m = d.data() + kHeader + kMessage * i;
                ev.kind = EventKind::kQuote;
                ev.instrument_id = load_le<std::uint32_t>(m);
                ev.u.quote = {load_le<std::uint64_t>(m + 4), recv_ns, load_le<std::int64_t>(m + 12),
                              load_le<std::int64_t>(m + 20), 1, 1};
                sink(static_cast<const Event&>(ev));
            }
            counters_.messages.add(key.count);
            return {PacketVerdict::kDecoded, Fault::kNone, key.count};
        }
        [[nodiscard]] const DecoderCounters& counters() const noexcept { return counters_; }
        void count_malformed_unread() noexcept { counters_.malformed_packets.add(); }

    private:
        DecoderCounters counters_;
    };

    static constexpr std::string_view kName = "toy";
    static constexpr std::size_t kMaxDatagram = 1400;
    static constexpr HolePolicy kHolePolicy = HolePolicy::kGiveUpAfterHold;
    static constexpr bool kHeaderNamesChannel = false;
    using Rules = qfb1::Rules;  // the reference rules, over its L2 book
    using Book = Rules::Book;

    [[nodiscard]] static Key read_key(std::span<const std::byte> d, std::uint16_t line_channel) noexcept {
        Key k;
        k.len = static_cast<std::uint32_t>(d.size());
        k.channel = line_channel;
        if (d.size() < kHeader) return k;
        k.seq = load_le<std::uint32_t>(d.data());
        k.count = load_le<std::uint16_t>(d.data() + 4);
        k.ok = true;
        return k;
    }
    [[nodiscard]] static constexpr std::size_t max_events_for(std::size_t len) noexcept { return 1 + len / kMessage; }
};
static_assert(VenueProtocol<Toy>);

std::vector<std::byte> toy_packet(std::uint32_t seq, std::uint32_t instrument, std::uint64_t rpt, std::int64_t bid) {
    std::vector<std::byte> b(Toy::kHeader + Toy::kMessage);
    store_le<std::uint32_t>(b.data(), seq);
    store_le<std::uint16_t>(b.data() + 4, 1);
    store_le<std::uint32_t>(b.data() + 6, instrument);
    store_le<std::uint64_t>(b.data() + 10, rpt);
    store_le<std::int64_t>(b.data() + 18, bid);
    store_le<std::int64_t>(b.data() + 26, bid + 1);
    return b;
}

TEST(ProtocolSeam, AProtocolWithoutChannelOrSessionInItsHeaderRunsTheSharedPipeline) {
    BasicHandler<Toy> h(Capacity{.max_instruments = 16, .book_depth = 4}, GateConfig{});
    const std::int64_t t = 1'000'000;
    ChannelStreams<Toy>& streams = h.streams();
    auto feed = [&](const std::vector<std::byte>& d, std::uint16_t channel, std::int64_t at) {
        const Toy::Key key = Toy::read_key(d, channel);
        h.on_packet(d, key, streams.observe(key, 0, nullptr).mark, at, 0);
    };
    feed(toy_packet(500, 5, 1, 100), 9, t);
    feed(toy_packet(501, 5, 3, 102), 9, t + 1);  // rpt 2 lost: a gap, then a full quote repairs it
    feed(toy_packet(502, 5, 3, 103), 9, t + 2);  // duplicate rpt
    EXPECT_EQ(h.instruments().state(5).counters.lost, 1u);
    EXPECT_EQ(h.instruments().state(5).counters.duplicates, 1u);
    EXPECT_EQ(h.instruments().state(5).channel_id, 9);  // the line's channel
    ASSERT_EQ(h.book().side(5, Side::kBid).size(), 1u);
    EXPECT_EQ(h.book().side(5, Side::kBid)[0].price, 102);
    EXPECT_TRUE(h.gate().check(5, t + 3).ok());

    feed(toy_packet(1, 5, 1, 200), 9, t + 4);  // seq far back: a new session resets the channel
    EXPECT_EQ(h.decoder().counters().session_changes.get(), 1u);
    EXPECT_EQ(h.sequencer().counters().session_resets, 1u);
    EXPECT_EQ(h.instruments().state(5).last_seq, 1u);  // accepted afresh, no loss counted
    EXPECT_EQ(h.instruments().state(5).counters.lost, 1u);
}

TEST(ProtocolSeam, TheSharedArbiterMergesAnyProtocolsLinesByItsKey) {
    ChannelStreams<Toy> streams;
    PacketArbiter<Toy> arb(4, 64, 1'000);
    std::vector<std::uint64_t> delivered;
    auto deliver = [&](std::span<const std::byte>, const Toy::Key& k, SessionMark, std::int64_t, std::uint8_t) {
        delivered.push_back(k.seq);
    };
    auto offer = [&](std::uint32_t seq, std::uint8_t line, std::int64_t at) {
        const auto d = toy_packet(seq, 1, seq, 100);
        const Toy::Key k = Toy::read_key(d, 2);
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
