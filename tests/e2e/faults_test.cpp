// Line faults, overload and source filtering, end to end over loopback
// multicast (interface 127.0.0.1, TTL 0), checked against the simulator's
// ground truth. Each test has its own groups/ports.
#include <cstdio>

#include "live_harness.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/capture.hpp"

namespace {

using namespace tickgate;
using namespace tickgate::e2e;

// The tests that hold for both pipelines; Overload is the ring's (inline, an
// engine stall overflows the sockets instead: Live.EngineStall...).
class LineFaults : public ::testing::TestWithParam<PipelineMode> {};
class SourceFilter : public ::testing::TestWithParam<PipelineMode> {};
class ChannelBinding : public ::testing::TestWithParam<PipelineMode> {};
class OversizedDatagram : public ::testing::TestWithParam<PipelineMode> {};
TICKGATE_BOTH_PIPELINES(LineFaults);
TICKGATE_BOTH_PIPELINES(SourceFilter);
TICKGATE_BOTH_PIPELINES(ChannelBinding);
TICKGATE_BOTH_PIPELINES(OversizedDatagram);

template <class H>
std::uint64_t line_gaps(const H& h, std::uint8_t line) {
    std::uint64_t n = 0;
    for (const auto& l : h.line_stats())
        if (l->line == line) n += l->seq_gaps.get();
    return n;
}

// A goes silent, then B, then both, both return; then the publisher restarts.
TEST_P(LineFaults, OutagesOnEachLineThenBothThenRestartMatchGroundTruth) {
    const Lines l{"239.255.85.1", "239.255.85.2", 39351, 39352};
    SimOptions o = sim_for(l);
    o.duration_s = 2.0;
    o.outage_a = {{0.10, 0.25}, {0.55, 0.60}};
    o.outage_b = {{0.30, 0.45}, {0.55, 0.60}};  // 0.55..0.60: both lines down
    o.restart_at = 0.8;
    with_handler(config_for(l, GetParam()), [&](auto& h) {
        const LiveRun run = run_live(h, o);
        ASSERT_NO_TRANSPORT_LOSS(h);
        ASSERT_TRUE(run.truth.exact_lost);
        EXPECT_GT(run.truth.dropped_both, 0u);
        EXPECT_EQ(line_gaps(h, 0), run.truth.dropped_a) << "line A's outages show on line A";
        EXPECT_EQ(line_gaps(h, 1), run.truth.dropped_b) << "line B's outages show on line B";
        EXPECT_EQ(h.decoder_counters().session_changes.get(), 1u);
        std::uint64_t lost = 0;
        for (const auto& t : run.truth.instruments) {
            const InstrumentState& st = h.instruments().state(t.id);
            EXPECT_EQ(st.counters.lost, t.expected_lost) << "instrument " << t.id;
            lost += st.counters.lost;
            EXPECT_FALSE(st.suspect) << "instrument " << t.id << " did not end clean";
            EXPECT_EQ(st.last_seq, t.last_seq) << "instrument " << t.id;
            expect_book_equals_truth(h, t);
        }
        EXPECT_GT(lost, 0u) << "the double outage loses messages";
    });
}

// Heavy reordering on both lines loses nothing: the arbiter puts packets
// back in order before the sequencer sees them.
TEST_P(LineFaults, BurstOfReorderingLosesNothing) {
    const Lines l{"239.255.86.1", "239.255.86.2", 39361, 39362};
    SimOptions o = sim_for(l);
    o.reorder = 0.3;
    o.dup = 0.05;
    with_handler(config_for(l, GetParam()), [&](auto& h) {
        const LiveRun run = run_live(h, o);
        ASSERT_NO_TRANSPORT_LOSS(h);
        EXPECT_GT(run.truth.reordered_a + run.truth.reordered_b, 100u);
        expect_every_instrument_whole(h, run.truth);
    });
}

// The simulator offers more than the handler takes while the engine thread
// stalls: the network thread keeps running, counts ring overflows (and
// kernel drops, if the socket buffer overflows), the affected instruments go
// suspect, and the handler returns to a clean state by itself.
TEST(Overload, EngineStallAndOfferedRateAboveCapacityRecoverByThemselves) {
    const Lines l{"239.255.87.1", "239.255.87.2", 39371, 39372};
    Config cfg = config_for(l, PipelineMode::kTwoThread, /*ring_size=*/1024);
    cfg.receiver.rcvbuf_bytes = 65536;
    SimOptions o = sim_for(l);
    o.instruments = 16;
    o.rate = 20'000;
    o.messages = 60'000;
    o.surge = SimOptions::Surge{0.1, 0.6, 20.0};  // 400k ticks/s for 30k ticks, then back to 20k/s
    o.batch = 16;
    FeedHandler h(cfg);
    h.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::atomic<bool> done{false};
    GroundTruth truth;
    std::thread sim([&] {
        truth = simulate_to_sockets(o);
        done.store(true);
    });
    // Dirty as soon as any update leaves an instrument suspect (a DataLost
    // mark and its repair can fall in the same poll batch).
    bool was_dirty = false;
    Clock::time_point clean_at{};
    auto on_update = [&](const Update& u, const Event&) {
        if (u.suspect && u.instrument_id >= 1 && u.instrument_id <= o.instruments) {
            was_dirty = true;
            clean_at = {};
        }
    };
    auto count_suspects = [&] {
        std::size_t n = 0;
        for (std::uint32_t id = 1; id <= o.instruments; ++id) n += h.instruments().state(id).suspect;
        return n;
    };
    const auto t0 = Clock::now();
    while (Clock::now() - t0 < std::chrono::milliseconds(300)) h.poll(on_update, 1024);
    const auto stall_start = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the engine thread stalls
    const auto stall_end = Clock::now();
    while (!done.load() || Clock::now() - stall_end < std::chrono::milliseconds(2500)) {
        h.poll(on_update, 1024);
        if (was_dirty && clean_at == Clock::time_point{} && count_suspects() == 0) clean_at = Clock::now();
        if (done.load() && clean_at != Clock::time_point{}) break;
    }
    sim.join();
    h.stop();
    while (h.poll(on_update, 4096) != 0) {
    }
    const auto& pc = h.publisher_counters();
    const double offered = double(truth.sent_a + truth.sent_b);
    std::uint64_t received = 0;
    for (const auto& line : h.line_stats()) received += line->packets.get();
    std::printf("overload: offered %.0f datagrams (%.0f ticks/s, surge x%.0f) in %.2f s; received %llu; "
                "kernel drops %llu; ring overflow packets %llu; stall %.0f ms; clean again %.0f ms after the stall\n",
                offered, o.rate, o.surge->factor, double(truth.duration_ns) / 1e9, static_cast<unsigned long long>(received),
                static_cast<unsigned long long>(kernel_drops(h)),
                static_cast<unsigned long long>(pc.ring_overflow_packets.get()),
                std::chrono::duration<double, std::milli>(stall_end - stall_start).count(),
                clean_at == Clock::time_point{}
                    ? -1.0
                    : std::chrono::duration<double, std::milli>(clean_at - stall_end).count());
    EXPECT_GT(pc.ring_overflow_packets.get(), 0u) << "the stall must overflow the ring";
    EXPECT_GT(pc.data_lost_marks.get(), 0u) << "instruments of dropped packets are marked suspect";
    EXPECT_TRUE(was_dirty);
    EXPECT_NE(clean_at, Clock::time_point{}) << "the handler did not return to a clean state";
    EXPECT_EQ(count_suspects(), 0u);
    for (const auto& t : truth.instruments) {
        EXPECT_FALSE(h.instruments().state(t.id).suspect) << "instrument " << t.id;
        EXPECT_GT(h.instruments().state(t.id).counters.recovered, 1u) << "instrument " << t.id;
        expect_book_equals_truth(h, t);
    }
}

// With `sources` configured, the lines are joined source-specifically: a
// sender on 127.0.0.2 never reaches the handler, 127.0.0.1 does.
TEST_P(SourceFilter, DatagramsFromOtherSourcesAreRejected) {
    const Lines l{"239.255.88.1", "239.255.88.2", 39381, 39382};
    Config cfg = config_for(l, GetParam());
    cfg.channels[0].sources = {"127.0.0.1"};
    with_handler(cfg, [&](auto& h) {
        start(h);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        MulticastSender good("127.0.0.1", "127.0.0.1");
        MulticastSender stranger("127.0.0.1", "127.0.0.2");
        const std::uint32_t ga = *parse_ipv4(l.group_a);
        for (std::uint64_t i = 1; i <= 50; ++i) {
            PacketBuilder legit(1, 1, i, 0), forged(1, 1, 1000 + i, 0);
            legit.quote(1, i, 0, 100, 1, 101, 1);
            forged.quote(2, i, 0, 1, 1, 2, 1);  // the stranger's instrument 2 must never appear
            ASSERT_TRUE(good.send(ga, l.port_a, legit.bytes()));
            ASSERT_TRUE(stranger.send(ga, l.port_a, forged.bytes()));
        }
        poll_until_then_stop(h, [&] { return h.instruments().state(1).last_seq >= 50; }, std::chrono::milliseconds(100));
        EXPECT_EQ(h.instruments().state(1).counters.accepted, 50u);
        EXPECT_FALSE(h.instruments().state(2).seen) << "a datagram from 127.0.0.2 reached the handler";
        std::uint64_t received = 0, rejected = 0;
        for (const auto& line : h.line_stats()) {
            received += line->packets.get();
            rejected += line->rejected_source.get();
        }
        EXPECT_EQ(received, 50u);
        // The kernel's source-specific membership drops them before the socket;
        // the user-space check (rejected_source) only sees what slips past it.
        EXPECT_EQ(rejected, 0u);
    });
}

// Issue 12, finding 1, live: a channel is where a packet arrived (rule 7).
// (a) On channel 2's line, a packet whose header says channel 1, session
// 0xFFFFFFFF, used to empty channel 1's book and make every genuine channel-1
// packet after it an older session. (b) On channel 1's line, a channel_id = 7
// quote for instrument 1 at 999 used to move instrument 1 to channel 7 with
// the forged price. (c) One stray channel_id = 7 datagram before the venue
// started took the arbiter's only slot, so channel 1 ran unarbitrated.
TEST_P(ChannelBinding, PacketsNamingAnotherChannelThanTheirLinesAreDroppedAndCounted) {
    const Lines l1{"239.255.94.1", "239.255.94.2", 39401, 39402};
    const Lines l2{"239.255.94.3", "239.255.94.4", 39403, 39404};
    Config cfg = config_for(l1, GetParam());
    ChannelConfig ch2;
    ch2.id = 2;
    ch2.a = {l2.group_a, l2.port_a, "127.0.0.1"};
    ch2.b = {l2.group_b, l2.port_b, "127.0.0.1"};
    cfg.channels.push_back(ch2);
    with_handler(cfg, [&](auto& h) {
        start(h);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        MulticastSender tx;
        const std::uint32_t g1a = *parse_ipv4(l1.group_a), g1b = *parse_ipv4(l1.group_b), g2a = *parse_ipv4(l2.group_a);

        PacketBuilder stray(7, 1, 1, 0);  // (c): before the venue starts, on channel 1's line A
        stray.quote(9, 1, 0, 5, 1, 6, 1);
        ASSERT_TRUE(tx.send(g1a, l1.port_a, stray.bytes()));
        constexpr std::uint64_t kPackets = 52;
        for (std::uint64_t i = 1; i <= kPackets; ++i) {
            PacketBuilder genuine(1, 1, i, 0);
            genuine.quote(1, i, 0, 100, 1, 101, 1);
            ASSERT_TRUE(tx.send(g1a, l1.port_a, genuine.bytes()));
            ASSERT_TRUE(tx.send(g1b, l1.port_b, genuine.bytes()));
            if (i == 2) {
                PacketBuilder reset(1, 0xFFFFFFFF, 1, 0);  // (a): on channel 2's line A
                reset.quote(1, 1, 0, 1, 1, 2, 1);
                ASSERT_TRUE(tx.send(g2a, l2.port_a, reset.bytes()));
                PacketBuilder moved(7, 1, 2, 0);  // (b): on channel 1's line A
                moved.quote(1, i + 1, 0, 999, 1, 1000, 1);
                ASSERT_TRUE(tx.send(g1a, l1.port_a, moved.bytes()));
            }
        }
        poll_until_then_stop(h, [&] { return h.instruments().state(1).last_seq >= kPackets; }, std::chrono::milliseconds(100));
        const InstrumentState& st = h.instruments().state(1);
        EXPECT_EQ(st.counters.accepted, kPackets) << "every genuine quote applied";
        EXPECT_EQ(st.counters.duplicates, 0u) << "B's copies dropped whole by the arbiter";
        EXPECT_EQ(st.channel_id, 1);
        EXPECT_EQ(h.book().side(1, Side::kBid)[0].price, 100);
        EXPECT_EQ(h.decoder_counters().session_changes.get(), 0u);
        EXPECT_EQ(h.decoder_counters().stale_session_packets.get(), 0u);
        EXPECT_FALSE(h.instruments().state(9).seen) << "the stray packet reached the sequencer";
        EXPECT_EQ(h.arbiter_counters().duplicate_packets.get(), kPackets) << "channel 1 is arbitrated";
        EXPECT_EQ(h.arbiter_counters().unarbitrated.get(), 0u);
        std::uint64_t foreign[2][2] = {};
        for (const auto& line : h.line_stats()) foreign[line->channel_id - 1][line->line] = line->foreign_channel_packets.get();
        EXPECT_EQ(foreign[0][0], 2u) << "channel 1 line A: the stray and the channel-7 quote";
        EXPECT_EQ(foreign[0][1], 0u);
        EXPECT_EQ(foreign[1][0], 1u) << "channel 2 line A: the forged channel-1 session";
        EXPECT_EQ(foreign[1][1], 0u);
    });
}

// A datagram larger than the 2,048-byte receive slot arrives cut to the slot
// (MSG_TRUNC). Its first bytes here are a valid packet quoting instrument 1:
// the prefix must not be applied; the datagram is dropped whole and counted
// as oversized (malformed) on its line. A normal packet after it still is.
TEST_P(OversizedDatagram, IsDroppedWholeAndCountedNotDecodedFromItsPrefix) {
    const Lines l{"239.255.89.3", "239.255.89.4", 39393, 39394};
    with_handler(config_for(l, GetParam()), [&](auto& h) {
        start(h);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        MulticastSender sender("127.0.0.1");
        const std::uint32_t ga = *parse_ipv4(l.group_a);

        PacketBuilder big(1, 1, 1, 0);
        big.quote(1, 1, 0, 100, 1, 101, 1);
        std::vector<std::byte> datagram(big.bytes().begin(), big.bytes().end());
        datagram.resize(65'000, std::byte{0x5a});
        ASSERT_TRUE(sender.send(ga, l.port_a, datagram));
        PacketBuilder normal(1, 1, 2, 0);
        normal.quote(2, 1, 0, 200, 1, 201, 1);
        ASSERT_TRUE(sender.send(ga, l.port_a, normal.bytes()));

        poll_until_then_stop(h, [&] { return h.instruments().state(2).seen; });
        ASSERT_TRUE(h.instruments().state(2).seen) << "the normal packet after it never arrived";
        EXPECT_FALSE(h.instruments().state(1).seen) << "the first 2,048 bytes of the oversized datagram were applied";
        std::uint64_t oversized = 0, packets = 0;
        for (const auto& line : h.line_stats()) {
            oversized += line->oversized.get();
            packets += line->packets.get();
        }
        EXPECT_EQ(oversized, 1u);
        EXPECT_EQ(packets, 1u) << "only the normal packet is a packet of the line";
        EXPECT_EQ(h.decoder_counters().packets.get(), 2u) << "the normal packet and the oversized one";
        EXPECT_EQ(h.decoder_counters().malformed_packets.get(), 1u) << "an oversized datagram is a malformed packet";
    });
}

}  // namespace
