// Tests of the venue simulator: determinism, fault rates, well-formed QFB/1,
// restarts, and the ground truth checked end to end against the handler
// (generate -> pcap -> replay_capture -> per-instrument lost and books).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/replay.hpp"
#include "tickgate/feed/qfb1/simulator.hpp"
#include "tickgate/feed/qfb1/wire.hpp"

namespace tickgate {
namespace {

namespace fs = std::filesystem;

std::vector<SimPacket> generate(const SimOptions& o, GroundTruth* truth = nullptr) {
    Simulator sim(o);
    std::vector<SimPacket> out;
    SimPacket p;
    while (sim.next(p)) out.push_back(p);
    if (truth) *truth = sim.truth();
    return out;
}

SimOptions small(std::uint64_t messages = 20000) {
    SimOptions o;
    o.instruments = 6;
    o.messages = messages;
    return o;
}

fs::path temp_file(const std::string& name) {
    return fs::temp_directory_path() / ("tickgate_sim_" + std::to_string(::getpid()) + "_" + name);
}

TEST(Simulator, SameSeedSameBytesOtherSeedOtherBytes) {
    SimOptions o = small();
    o.loss_a = o.loss_b = 0.05;
    o.dup = o.reorder = 0.02;
    o.restart_at = 0.5;
    const auto a = generate(o), b = generate(o);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].bytes, b[i].bytes) << i;
        EXPECT_EQ(a[i].time_ns, b[i].time_ns) << i;
        EXPECT_EQ(a[i].line_a, b[i].line_a) << i;
        EXPECT_EQ(a[i].line_b, b[i].line_b) << i;
    }
    o.seed = 2;
    const auto c = generate(o);
    bool differs = c.size() != a.size();
    for (std::size_t i = 0; !differs && i < a.size(); ++i) differs = a[i].bytes != c[i].bytes;
    EXPECT_TRUE(differs);
}

TEST(Simulator, ScheduleFollowsRateAndIsMonotonic) {
    SimOptions o = small();
    o.rate = 10000;
    o.restart_at = 0.5;
    o.reorder = o.dup = 0.05;
    GroundTruth t;
    const auto pk = generate(o, &t);
    EXPECT_EQ(t.duration_ns, 2'000'000'000);  // 20000 ticks at 10000/s
    for (std::size_t i = 1; i < pk.size(); ++i) ASSERT_GE(pk[i].time_ns, pk[i - 1].time_ns);
    EXPECT_EQ(pk.back().time_ns, t.duration_ns);  // final heartbeats
    std::uint64_t seqd = 0;
    for (const auto& in : t.instruments) seqd += in.messages;
    EXPECT_EQ(seqd, t.sequenced);
    EXPECT_GE(t.sequenced, 20000u);  // ticks + session-start quotes
}

TEST(Simulator, LossRatesAreRoughlyAsAsked) {
    SimOptions o = small(200000);
    o.loss_a = 0.1;
    o.loss_b = 0.3;
    GroundTruth t;
    generate(o, &t);
    const double n = static_cast<double>(t.packets);
    EXPECT_NEAR(t.dropped_a / n, 0.1, 0.01);
    EXPECT_NEAR(t.dropped_b / n, 0.3, 0.015);
    EXPECT_NEAR(t.dropped_both / n, 0.03, 0.005);
    EXPECT_EQ(t.sent_a + t.dropped_a, t.packets);
    EXPECT_EQ(t.sent_b + t.dropped_b, t.packets);

    SimOptions b = small(200000);
    b.burst_p = 0.01;
    b.burst_len = 5;
    generate(b, &t);
    // Fraction of packets inside bursts: p*L / (1 + p*(L-1)) ~ 0.048.
    EXPECT_NEAR(t.dropped_both / static_cast<double>(t.packets), 0.048, 0.01);
    EXPECT_EQ(t.dropped_a, t.dropped_both);
    EXPECT_EQ(t.dropped_b, t.dropped_both);
}

TEST(Simulator, EveryDatagramIsWellFormedQfb1) {
    SimOptions o = small();
    o.instruments = 300;  // definition / heartbeat rounds span several packets
    o.lagging_snapshots = true;
    o.batch = 28;
    o.restart_at = 0.3;
    GroundTruth t;
    const auto pk = generate(o, &t);
    SessionDecoder<qfb1::Protocol> dec;
    std::map<char, std::uint64_t> types;
    std::map<std::uint32_t, std::uint64_t> last_seq;  // per instrument, no loss: contiguous
    std::uint32_t session = 0;
    std::uint64_t stale = 0;
    for (const auto& p : pk) {
        ASSERT_LE(p.bytes.size(), qfb1::kMaxDatagram);
        ASSERT_TRUE(p.line_a || p.line_b);
        const qfb1::PacketHeaderView h(p.bytes);
        ASSERT_TRUE(h.valid());
        EXPECT_EQ(h.channel_id(), o.channel);
        if (h.session() > session) session = h.session(), last_seq.clear();
        if (h.session() == session) {  // not the late old-session copy
            EXPECT_EQ(h.send_time_ns(), o.epoch_ns + p.time_ns);
        }
        const auto r = dec.decode(p.bytes, p.time_ns, 0, [&](const Event& ev) {
            switch (ev.kind) {
                case EventKind::kQuote:
                    ++types['Q'];
                    EXPECT_EQ(ev.instrument_id % 2, 1u);
                    EXPECT_EQ(ev.u.quote.seq, ++last_seq[ev.instrument_id]);
                    EXPECT_LT(ev.u.quote.bid_px, ev.u.quote.ask_px);
                    break;
                case EventKind::kDelta:
                    ++types['D'];
                    EXPECT_EQ(ev.instrument_id % 2, 0u);
                    EXPECT_EQ(ev.u.delta.seq, ++last_seq[ev.instrument_id]);
                    break;
                case EventKind::kSnapshotBegin:
                    ++types['S'];
                    EXPECT_EQ(ev.instrument_id % 2, 0u);
                    EXPECT_LE(ev.u.snapshot.seq, last_seq[ev.instrument_id]);
                    EXPECT_GE(ev.u.snapshot.seq + 3, last_seq[ev.instrument_id]);
                    EXPECT_LE(ev.u.snapshot.n_bids, 5);
                    EXPECT_LE(ev.u.snapshot.n_asks, 5);
                    break;
                case EventKind::kHeartbeat:
                    ++types['H'];
                    EXPECT_EQ(ev.u.heartbeat.next_seq, last_seq[ev.instrument_id] + 1);
                    break;
                case EventKind::kDefinition: ++types['I']; break;
                default: break;
            }
        });
        if (r.verdict == qfb1::PacketVerdict::kStaleSession) {
            ++stale;
            continue;
        }
        ASSERT_EQ(r.verdict, qfb1::PacketVerdict::kDecoded) << "fault " << int(r.fault);
    }
    EXPECT_EQ(dec.counters().malformed_packets.get(), 0u);
    EXPECT_EQ(dec.counters().unknown_messages.get(), 0u);
    EXPECT_EQ(stale, 1u);  // the late packet of the old session
    for (const char c : {'Q', 'D', 'S', 'H', 'I'}) EXPECT_GT(types[c], 0u) << c;
    EXPECT_EQ(dec.counters().messages.get(), t.messages);  // the late packet repeats one already read
}

TEST(Simulator, RestartStartsANewSessionWithOneLateOldPacketOnB) {
    SimOptions o = small();
    o.session = 7;
    o.restart_at = 0.5;
    GroundTruth t;
    const auto pk = generate(o, &t);
    EXPECT_EQ(t.final_session, 8u);
    EXPECT_EQ(t.late_old_session, 1u);
    std::size_t first_new = pk.size();
    for (std::size_t i = 0; i < pk.size(); ++i)
        if (qfb1::PacketHeaderView(pk[i].bytes).session() == 8) {
            first_new = i;
            break;
        }
    ASSERT_LT(first_new + 1, pk.size());
    EXPECT_EQ(qfb1::PacketHeaderView(pk[first_new].bytes).packet_seq(), 1u);
    const SimPacket& late = pk[first_new + 1];
    EXPECT_EQ(qfb1::PacketHeaderView(late.bytes).session(), 7u);
    EXPECT_FALSE(late.line_a);
    EXPECT_TRUE(late.line_b);
    for (std::size_t i = first_new + 2; i < pk.size(); ++i)
        ASSERT_EQ(qfb1::PacketHeaderView(pk[i].bytes).session(), 8u);
    // Every instrument restarted its seqs: last_seq counts only the new session.
    for (const auto& in : t.instruments) EXPECT_LT(in.last_seq, in.messages);
}

TEST(Simulator, OptionsAreValidated) {
    SimOptions o;
    o.interface_a = "10.0.0.1";
    EXPECT_THROW(Simulator{o}, std::invalid_argument);
    o = {};
    o.group_b = "224.0.0.1";
    EXPECT_THROW(Simulator{o}, std::invalid_argument);
    o = {};
    o.batch = 29;
    EXPECT_THROW(Simulator{o}, std::invalid_argument);
    o = {};
    o.quiet = {9};
    EXPECT_THROW(Simulator{o}, std::invalid_argument);
    o = {};
    o.restart_at = 1.0;
    EXPECT_THROW(Simulator{o}, std::invalid_argument);
}

TEST(Simulator, GroundTruthJsonHasTheSchema) {
    SimOptions o = small(2000);
    o.quiet = {3};
    GroundTruth t;
    generate(o, &t);
    const std::string j = t.to_json();
    for (const char* key : {"\"options\"", "\"final_session\": 1", "\"exact_lost\": true", "\"packets\"", "\"sent_a\"",
                            "\"dropped_both\"", "\"instruments\"", "\"symbol\": \"SIM001\"", "\"kind\": \"quote\"",
                            "\"kind\": \"delta\"", "\"expected_lost\"", "\"bids\": [[", "\"quiet\": [3]"})
        EXPECT_NE(j.find(key), std::string::npos) << key;
}

// The ground truth goes through the project's one JSON writer: a file name
// with any bytes is written byte for byte as code points, in plain ASCII.
TEST(Simulator, GroundTruthJsonEscapesEveryByteOfItsStrings) {
    GroundTruth t;
    t.output = "pcap:\xff\x1b]0;x\x07\".pcap";
    const std::string j = t.to_json();
    for (const char ch : j) {
        const auto c = static_cast<unsigned char>(ch);
        EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << "raw byte " << int{c} << " in " << j;
    }
    EXPECT_NE(j.find(R"("output": "pcap:\u00ff\u001b]0;x\u0007\".pcap")"), std::string::npos) << j;
    EXPECT_NE(j.find("\"restart_at\": null"), std::string::npos) << j;
    EXPECT_NE(j.find("\"instruments\": []"), std::string::npos) << j;
}

// ------------------------------------------------------- end to end with the handler

Config channel_config(const SimOptions& o) {
    Config cfg;
    ChannelConfig ch;
    ch.id = o.channel;
    ch.a = {o.group_a, o.port_a, "127.0.0.1"};
    ch.b = {o.group_b, o.port_b, "127.0.0.1"};
    cfg.channels.push_back(ch);
    return cfg;
}

struct Scenario {
    const char* name;
    SimOptions o;
    bool expect_clean_delta = false;  // some depth books must end clean (and are compared)
    bool expect_uncounted = false;    // some drops are never counted (snapshots, cold start)
};

class SimulatorVsHandler : public ::testing::TestWithParam<Scenario> {};

TEST_P(SimulatorVsHandler, LostMatchesTheModelAndCleanBooksMatchThePublisher) {
    const SimOptions& o = GetParam().o;
    const fs::path pcap = temp_file(std::string(GetParam().name) + ".pcap");
    const GroundTruth t = simulate_to_capture(o, pcap.string());

    const Config cfg = channel_config(o);
    Handler h(cfg.capacity, cfg.gate);
    apply_config(h, cfg);
    const ReplayResult r = replay_capture(pcap.string(), cfg, h);
    fs::remove(pcap);
    EXPECT_EQ(r.frames.udp_datagrams, t.sent_a + t.sent_b);
    EXPECT_EQ(r.filtered_out, 0u);
    EXPECT_EQ(h.decoder().counters().malformed_packets.get(), 0u);
    EXPECT_EQ(h.decoder().counters().stale_session_packets.get(), t.late_old_session);

    const Handler& seq = h;
    std::uint64_t total_lost = 0, clean = 0, clean_delta = 0, dropped = 0, expected = 0;
    for (const InstrumentTruth& in : t.instruments) {
        SCOPED_TRACE(in.symbol);
        const InstrumentState& st = seq.instruments().state(in.id);
        ASSERT_TRUE(st.seen);
        EXPECT_STREQ(st.symbol, in.symbol.c_str());
        if (t.exact_lost) {
            EXPECT_EQ(st.counters.lost, in.expected_lost);
        }
        EXPECT_LE(in.expected_lost, in.dropped_both);
        dropped += in.dropped_both;
        expected += in.expected_lost;
        total_lost += st.counters.lost;
        if (!in.silenced) {
            EXPECT_EQ(st.last_seq, in.last_seq);  // final heartbeats reveal every gap
        }
        if (st.suspect || in.silenced) continue;  // a silenced instrument may miss its last ticks unknowingly
        ++clean;
        clean_delta += in.delta;
        const auto same = [](BookSide got, const std::vector<SimLevel>& want) {
            if (got.size() != want.size()) return false;
            for (std::size_t i = 0; i < got.size(); ++i)
                if (got[i].price != want[i].price || got[i].qty != want[i].qty) return false;
            return true;
        };
        EXPECT_TRUE(same(seq.book().side(in.id, Side::kBid), in.bids));
        EXPECT_TRUE(same(seq.book().side(in.id, Side::kAsk), in.asks));
    }
    EXPECT_GT(clean, 0u);
    if (GetParam().expect_clean_delta) {
        EXPECT_GT(clean_delta, 0u);
    }
    if (GetParam().expect_uncounted) {
        EXPECT_LT(expected, dropped);
    }
    if (o.loss_a > 0 && o.loss_b > 0) {
        EXPECT_GT(total_lost, 0u);
    }
}

SimOptions scenario(std::uint64_t seed, double loss_a, double loss_b) {
    SimOptions o;
    o.instruments = 10;
    o.messages = 60000;
    o.seed = seed;
    o.loss_a = loss_a;
    o.loss_b = loss_b;
    return o;
}

std::vector<Scenario> scenarios() {
    std::vector<Scenario> v;
    v.push_back({"light_loss", scenario(1, 0.03, 0.03), true});
    SimOptions o = scenario(9, 0.03, 0.03);
    o.lagging_snapshots = true;
    v.push_back({"light_loss_lagging", o, true});
    v.push_back({"loss", scenario(1, 0.2, 0.2)});
    v.push_back({"heavy_loss", scenario(2, 0.5, 0.5)});
    o = scenario(3, 0.1, 0.15);
    o.burst_p = 0.005;
    o.burst_len = 6;
    o.dup = 0.05;
    v.push_back({"burst_dup", o});
    o = scenario(4, 0.2, 0.2);
    o.lagging_snapshots = true;
    v.push_back({"lagging", o});
    o = scenario(5, 0.2, 0.1);
    o.restart_at = 0.6;
    o.lagging_snapshots = true;
    o.dup = 0.02;
    o.quiet = {2, 3};
    o.silence = {4, 5};
    v.push_back({"restart_quiet_silence", o});
    o = scenario(6, 0.3, 0.3);
    o.instruments = 400;  // instruments rarely tick: long gaps revealed by heartbeats
    o.snapshot_ms = 50;
    o.lagging_snapshots = true;
    v.push_back({"many_instruments", o, true, true});
    o.lagging_snapshots = false;
    o.seed = 8;
    v.push_back({"many_instruments_in_step", o, true, true});
    o = scenario(7, 0.1, 0.1);
    o.reorder = 0.05;
    v.push_back({"reorder", o});
    for (std::uint64_t s = 10; s < 16; ++s) {
        o = scenario(s, 0.25, 0.25);
        o.burst_p = 0.002;
        o.burst_len = 3;
        o.lagging_snapshots = s % 2 == 0;
        o.restart_at = 0.1 * double(s - 9);
        o.dup = 0.01;
        v.push_back({"mixed", o});
    }
    return v;
}

INSTANTIATE_TEST_SUITE_P(Faults, SimulatorVsHandler, ::testing::ValuesIn(scenarios()),
                         [](const ::testing::TestParamInfo<Scenario>& i) {
                             return std::string(i.param.name) + "_" + std::to_string(i.index);
                         });

TEST(SimulatorVsHandler, ReorderingMakesTheModelInexact) {
    SimOptions o = small();
    o.reorder = 0.1;
    GroundTruth t;
    generate(o, &t);
    EXPECT_FALSE(t.exact_lost);
    EXPECT_GT(t.reordered_a + t.reordered_b, 0u);
    EXPECT_NE(t.to_json().find("\"exact_lost\": false"), std::string::npos);
}

}  // namespace
}  // namespace tickgate
