// The test-only fourth protocol (tests/toy/protocol.hpp, issue 22 item 5)
// through the shared code a venue gets from one line in KnownProtocols:
// offline replay of a pcap (with and without A/B arbitration) and both live
// pipelines on loopback multicast (TTL 0, interface 127.0.0.1), the same
// flow each time: loss on one line that the other fills, a loss on both
// lines (a hole given up, the instrument suspect until its next full quote
// repairs it), then a session restart. No production file names it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../toy/protocol.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/replay.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed_handler.hpp"
#include "tickgate/inline_feed_handler.hpp"

namespace tickgate {
namespace {

constexpr std::uint16_t kChannel = 5;
constexpr std::uint16_t kPortA = 39711, kPortB = 39712;
constexpr std::uint32_t kGroupA = 0xEFFF6101, kGroupB = 0xEFFF6102;  // 239.255.97.1, .2
constexpr std::uint32_t kInstruments = 4;

Config toy_config(PipelineMode pipeline = PipelineMode::kTwoThread) {
    Config cfg;
    cfg.default_protocol = std::string(toy::Protocol::kName);
    cfg.threading.pipeline = pipeline;
    cfg.capacity.max_instruments = 16;
    cfg.capacity.book_depth = 4;
    ChannelConfig ch;
    ch.id = kChannel;
    ch.protocol = std::string(toy::Protocol::kName);
    ch.a = {"239.255.97.1", kPortA, "127.0.0.1"};
    ch.b = {"239.255.97.2", kPortB, "127.0.0.1"};
    cfg.channels.push_back(ch);
    return cfg;
}

// One datagram of the flow and the lines that carry it.
struct Sent {
    std::vector<std::byte> bytes;
    bool on_a, on_b;
};

// Packet k = 1..40 (seq 1000 + k), one quote each: instrument k % 4 + 1
// with its own rpt_seq counting up, bid 100 + k; k = 7 only on B, 9 only on
// A, 22 (instrument 3's sixth quote) on neither; then the venue restarts
// (seq 1, more than 100 below: a new session): seq 1 and 2 quote
// instruments 2 and 3 afresh (rpt_seq 1, bids 500 and 501).
std::vector<Sent> flow() {
    std::vector<Sent> out;
    std::uint64_t rpt[kInstruments + 1] = {};
    for (std::uint32_t k = 1; k <= 40; ++k) {
        const std::uint32_t id = k % kInstruments + 1;
        out.push_back({toy::packet(1000 + k, id, ++rpt[id], 100 + k), k != 7 && k != 22, k != 9 && k != 22});
    }
    out.push_back({toy::packet(1, 2, 1, 500), true, true});
    out.push_back({toy::packet(2, 3, 1, 501), true, true});
    return out;
}

// What every path must end with, per instrument: the last rpt_seq, rpt_seqs
// lost, suspect, best bid. Instrument 3 lost its sixth quote (k = 22) and
// was repaired by its seventh (a full quote); the new session emptied the
// channel's books (suspect, nothing known) and re-quoted 2 and 3 only.
struct Final {
    std::uint64_t last_seq, lost;
    bool suspect;
    std::int64_t bid;
    bool operator==(const Final&) const = default;
};
std::vector<Final> expected() {
    return {{0, 0, true, 0}, {1, 0, false, 500}, {1, 1, false, 501}, {0, 0, true, 0}};
}

template <class H>
std::vector<Final> finals(const H& h) {
    std::vector<Final> out;
    for (std::uint32_t id = 1; id <= kInstruments; ++id) {
        const InstrumentState& st = h.instruments().state(id);
        const auto bids = h.book().side(id, Side::kBid);
        out.push_back({st.last_seq, st.counters.lost, st.suspect, bids.empty() ? 0 : bids[0].price});
    }
    return out;
}
std::string show(const std::vector<Final>& v) {
    std::string s;
    for (const Final& f : v)
        s += "{" + std::to_string(f.last_seq) + "," + std::to_string(f.lost) + "," + (f.suspect ? "suspect" : "clean") +
             "," + std::to_string(f.bid) + "} ";
    return s;
}

TEST(ToyProtocol, ReplayOfACaptureRunsTheSharedPipeline) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tickgate-toy-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "toy.pcap").string();
    {
        CaptureWriter w(path);
        std::int64_t t = 1'700'000'000'000'000'000;
        for (const Sent& s : flow()) {
            if (s.on_a) w.write_udp(t += 1'000, 0x7F000001, 40000, kGroupA, kPortA, s.bytes);
            if (s.on_b) w.write_udp(t += 1'000, 0x7F000001, 40000, kGroupB, kPortB, s.bytes);
        }
        w.flush();
    }
    for (const bool arbitrate : {false, true}) {
        SCOPED_TRACE(arbitrate ? "arbitrated" : "capture order");
        const Config cfg = toy_config();
        BasicHandler<toy::Protocol> h(cfg.capacity, cfg.gate);
        apply_config(h, cfg);
        const ReplayResult r = replay_capture(path, cfg, h, {.arbitrate = arbitrate});
        EXPECT_EQ(r.frames.udp_datagrams, 80u);  // 38 + 38 of the first session, 2 + 2 after the restart
        EXPECT_EQ(finals(h), expected()) << show(finals(h));
        EXPECT_EQ(h.decoder().counters().session_changes.get(), 1u);
        EXPECT_EQ(h.sequencer().counters().session_resets, 1u);
        EXPECT_EQ(h.instruments().state(3).channel_id, kChannel);  // the line's channel
        const std::string json = summary_json(summary_source(h), {.now_ns = r.last_ts_ns});
        EXPECT_NE(json.find("\"instruments\""), std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

class ToyLive : public ::testing::TestWithParam<PipelineMode> {};

// Sends the flow on loopback, then polls `h` until every instrument shows
// its final state and line B's last copy has been dropped as a duplicate
// (or 5 s pass).
template <class H, class Poll>
void run_flow(H& h, Poll&& poll) {
    MulticastSender tx("127.0.0.1");
    for (const Sent& s : flow()) {
        if (s.on_a) {
            ASSERT_TRUE(tx.send(kGroupA, kPortA, s.bytes));
        }
        if (s.on_b) {
            ASSERT_TRUE(tx.send(kGroupB, kPortB, s.bytes));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until &&
           (finals(h) != expected() || h.arbiter_counters().duplicate_packets.get() < 39))
        poll();
}

TEST_P(ToyLive, BothLivePipelinesRunTheSharedCode) {
    const Config cfg = toy_config(GetParam());
    std::size_t quotes = 0, session_changes = 0;
    const auto on_update = [&](const Update&, const Event& ev) {
        quotes += ev.kind == EventKind::kQuote;
        session_changes += ev.kind == EventKind::kSessionChange;
    };
    if (GetParam() == PipelineMode::kInline) {
        BasicInlineFeedHandler<toy::Protocol> h(cfg);
        run_flow(h, [&] { h.poll(on_update, 1'000'000); });
        EXPECT_EQ(finals(h), expected()) << show(finals(h));
        EXPECT_EQ(h.arbiter_counters().duplicate_packets.get(), 39u);  // the copies of the 39 packets both lines carried
        EXPECT_TRUE(h.gate().check(3, realtime_ns()).ok());
    } else {
        BasicFeedHandler<toy::Protocol> h(cfg);
        h.start();
        run_flow(h, [&] {
            if (h.poll(on_update) == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
        });
        EXPECT_TRUE(h.gate().check(3, realtime_ns()).ok());  // before stop(): it may wait out a receive block
        h.stop();
        EXPECT_EQ(finals(h), expected()) << show(finals(h));
        EXPECT_EQ(h.arbiter_counters().duplicate_packets.get(), 39u);
    }
    EXPECT_EQ(quotes, 41u);  // 42 packets sent, one lost on both lines
    EXPECT_EQ(session_changes, 1u);
}

INSTANTIATE_TEST_SUITE_P(Pipelines, ToyLive, ::testing::Values(PipelineMode::kTwoThread, PipelineMode::kInline),
                         [](const auto& info) { return info.param == PipelineMode::kInline ? "inline" : "two_thread"; });

}  // namespace
}  // namespace tickgate
