// `tickgate replay --protocol itch50` (ITCH50.md "Summary and replay", and
// the offline timer rule of "The stream"), and the [moldudp64]/[itch] config keys.
#include "tickgate/feed/itch50/replay.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../support/json.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/itch50/protocol.hpp"

namespace tickgate::itch50 {
namespace {

using test::Json;

constexpr std::uint32_t kGroupA = 0xEFFF0A01;  // 239.255.10.1
constexpr std::uint32_t kGroupB = 0xEFFF0A02;  // 239.255.10.2
constexpr std::uint32_t kGroupOther = 0xEFFF0B01;
constexpr std::int64_t kMs = 1'000'000;

Config small_config(std::string_view extra = "") {
    return parse_config(std::string("[itch]\nmax_orders = 4096\nmax_levels = 4096\n") + std::string(extra), "itch.toml");
}
constexpr std::string_view two_line_config_text() {
    return "[[channel]]\nid = 7\nprotocol = \"itch50\"\n"
           "a = { group = \"239.255.10.1\", port = 31001 }\n"
           "b = { group = \"239.255.10.2\", port = 31002 }\n";
}
Config two_line_config() { return small_config(two_line_config_text()); }
Config two_channel_config() {
    return small_config(
        "[[channel]]\nid = 7\nprotocol = \"itch50\"\n"
        "a = { group = \"239.255.10.1\", port = 31001 }\n"
        "b = { group = \"239.255.20.1\", port = 31011 }\n"
        "[[channel]]\nid = 8\nprotocol = \"itch50\"\n"
        "a = { group = \"239.255.10.2\", port = 31002 }\n"
        "b = { group = \"239.255.20.2\", port = 31012 }\n");
}
const Json* instrument(const Json& summary, std::int64_t id) {
    for (std::size_t i = 0; i < summary["instruments"].size(); ++i)
        if (summary["instruments"][i]["id"].as_int() == id) return &summary["instruments"][i];
    return nullptr;
}
Bytes adds(std::uint64_t seq, int n, std::string_view session = "SESSION001") {
    std::vector<Bytes> msgs;
    for (int i = 0; i < n; ++i) msgs.push_back(add_order(5, seq + static_cast<std::uint64_t>(i), 'B', 100, 1000));
    return mold_packet(session, seq, msgs);
}
void feed(Replay& r, const Bytes& d, std::uint32_t group, std::uint16_t port, std::int64_t t) {
    r.front().on_datagram({d.data(), d.size()}, group, port, t);
}

// Figures derived from the bytes (decoder_test.cpp and sequencer_test.cpp say how).
TEST(ItchReplay, NasdaqCaptureSummary) {
    Replay replay(small_config());
    const ReplayResult r = replay.run(TICKGATE_TEST_DATA_DIR "/captures/nasdaq-totalview-itch50-moldudp64-vlan.pcap");
    const Json s = Json::parse(replay.summary_json({.now_ns = r.last_ts_ns, .frames = &r.frames}));
    EXPECT_EQ(s["packets"].as_int(), 100);
    EXPECT_EQ(s["messages"].as_int(), 269);
    EXPECT_EQ(s["malformed_packets"].as_int(), 0);
    ASSERT_EQ(s["channels"].size(), 1u);
    const Json& ch = s["channels"][0];
    EXPECT_EQ(ch["channel"].as_string(), "233.54.12.111:26477");
    EXPECT_EQ(ch["session"].as_string(), "000010059B");
    EXPECT_EQ(ch["next_seq"].as_int(), 14757970);
    EXPECT_EQ(ch["late_join_messages"].as_int(), 14757700);
    EXPECT_EQ(ch["lost_messages"].as_int(), 0);
    EXPECT_EQ(ch["duplicate_messages"].as_int(), 0);
    EXPECT_EQ(s["instruments"].size(), 113u);
    bool found = false;
    for (std::size_t i = 0; i < s["instruments"].size(); ++i) {
        const Json& ins = s["instruments"][i];
        EXPECT_EQ(ins["gate"].as_string(), "suspect");  // a late join: every book unknown
        EXPECT_EQ(ins["lost"].as_int(), 0);             // loss belongs to the stream
        if (ins["id"].as_int() != 4670) continue;
        found = true;
        EXPECT_EQ(ins["symbol"].as_string(), "HALO");  // no R in the capture: its adds' stock
        EXPECT_EQ(ins["locate"].as_int(), 4670);
        EXPECT_EQ(ins["suspect_reason"].as_string(), "late_join");
        EXPECT_EQ(ins["accepted"].as_int(), 17);
        EXPECT_EQ(ins["last_seq"].as_int(), 14757855);
        EXPECT_EQ(ins["unknown_orders"].as_int(), 15);
        EXPECT_EQ(ins["orders"].as_int(), 2);
        EXPECT_EQ(ins["bids"].dump(), "[[402600,100]]");
        EXPECT_EQ(ins["asks"].dump(), "[[439000,100]]");
    }
    EXPECT_TRUE(found);
}

TEST(ItchReplay, AsxHeartbeatCaptureReplays) {
    Replay replay(small_config());
    const ReplayResult r = replay.run(TICKGATE_TEST_DATA_DIR "/captures/asx-itch-moldudp64-heartbeat.pcap");
    const Json s = Json::parse(replay.summary_json({.now_ns = r.last_ts_ns, .frames = &r.frames}));
    EXPECT_EQ(s["malformed_packets"].as_int(), 0);
    EXPECT_EQ(s["channels"][0]["session"].as_string(), "1567326030");
    EXPECT_EQ(s["channels"][0]["next_seq"].as_int(), 3466217);
    EXPECT_EQ(s["channels"][0]["late_join_messages"].as_int(), 3466216);
}

TEST(ItchReplay, LinesAAndBOfAConfiguredChannelAreOneStream) {
    Replay replay(two_line_config());
    feed(replay, adds(1, 3), kGroupA, 31001, 0);
    feed(replay, adds(1, 3), kGroupB, 31002, 1);
    const auto ch = replay.front().channel(0);
    EXPECT_EQ(ch.counters.duplicate_messages.get(), 3u);
    EXPECT_EQ(ch.next_seq, 4u);
    EXPECT_EQ(replay.handler().book().open_orders(5), 3u);
    EXPECT_EQ(replay.front().channels()[0].name, "7");
    feed(replay, adds(1, 1), kGroupOther, 31001, 2);  // no configured line
    EXPECT_EQ(replay.front().unmatched_datagrams(), 1u);
}

TEST(ItchReplay, WithoutAConfigEachMulticastDestinationIsAChannel) {
    Replay replay(small_config());
    feed(replay, adds(1, 2), kGroupA, 31001, 0);
    feed(replay, adds(1, 2), kGroupB, 31002, 1);
    ASSERT_EQ(replay.front().channels().size(), 2u);
    EXPECT_EQ(replay.front().channels()[1].name, "239.255.10.2:31002");
    EXPECT_EQ(replay.front().channel(1).counters.duplicate_messages.get(), 0u);
}

TEST(ItchReplay, UnicastAnswerBelongsToTheChannelWhoseSessionItCarries) {
    Replay replay(small_config());
    feed(replay, adds(1, 1), kGroupA, 31001, 0);
    feed(replay, adds(3, 1), kGroupA, 31001, 1);       // hole 2
    feed(replay, adds(2, 1), 0x7F000001, 40000, 2);    // the server's answer, unicast to 127.0.0.1
    EXPECT_EQ(replay.front().channel(0).counters.holes_filled.get(), 1u);
    feed(replay, adds(1, 1, "OTHER"), 0x7F000001, 40000, 3);  // no channel has that session
    EXPECT_EQ(replay.front().unmatched_datagrams(), 1u);
}

// ITCH50.md "Implausible positions", through the replay and its summary:
// the channel object counts it, and the real stream after it is applied.
TEST(ItchReplay, ImplausiblePositionIsCountedInTheChannelAndMovesNothing) {
    Replay replay(small_config());
    feed(replay, adds(1, 2), kGroupA, 31001, 0);
    const Bytes forged = mold_heartbeat("SESSION001", 1'000'000'000'000);
    feed(replay, forged, kGroupA, 31001, 1);
    feed(replay, adds(3, 2), kGroupA, 31001, 2);
    replay.front().finish();
    const Json s = Json::parse(replay.summary_json({.now_ns = 2}));
    const Json& ch = s["channels"][0];
    EXPECT_EQ(ch["implausible_positions"].as_int(), 1);
    EXPECT_EQ(ch["lost_messages"].as_int(), 0);
    EXPECT_EQ(ch["duplicate_messages"].as_int(), 0);
    EXPECT_EQ(ch["next_seq"].as_int(), 5);
    EXPECT_EQ(ch["unrequested_answer_messages"].as_int(), 0);
    EXPECT_EQ(replay.handler().book().open_orders(5), 4u);
    EXPECT_FALSE(replay.handler().instruments().state(5).suspect);
}

// ITCH50.md "Offline replay": a captured answer (unicast) answered the
// capturing handler's requests, which the capture does not hold; it asked
// for every hole it had open, so an answer fills open holes only. The rest
// of it is unrequested; far beyond the stream it is implausible.
TEST(ItchReplay, CapturedAnswerFillsOnlyOpenHoles) {
    Replay replay(small_config());
    feed(replay, adds(1, 1), kGroupA, 31001, 0);
    feed(replay, adds(4, 1), kGroupA, 31001, 1);            // hole 2..3
    feed(replay, adds(2, 6), 0x7F000001, 40000, 2);         // 2, 3 fill it; 4 applied; 5..7 never revealed
    feed(replay, adds(1'000'000'000, 2), 0x7F000001, 40000, 3);  // beyond everything seen
    feed(replay, adds(3'000'000'000, 2), 0x7F000001, 40000, 4);  // beyond the bound
    const auto ch = replay.front().channel(0);
    EXPECT_EQ(ch.next_seq, 5u);
    EXPECT_EQ(ch.counters.holes_filled.get(), 1u);
    EXPECT_EQ(ch.counters.recovered_messages.get(), 2u);
    EXPECT_EQ(ch.counters.unrequested_answer_messages.get(), 6u);
    EXPECT_EQ(ch.counters.implausible_positions.get(), 1u);
    EXPECT_EQ(replay.handler().book().open_orders(5), 4u);
    feed(replay, adds(5, 1), kGroupA, 31001, 5);  // the line goes on from where it was
    EXPECT_EQ(replay.front().channel(0).next_seq, 6u);
    EXPECT_EQ(replay.front().channel(0).counters.duplicate_messages.get(), 0u);
}

TEST(ItchReplay, BeforeEachDatagramOfAnyChannelOldHolesAreGivenUp) {
    Replay replay(small_config("[moldudp64]\ngap_timeout_ms = 100\n"));
    feed(replay, adds(1, 1), kGroupA, 31001, 0);
    feed(replay, adds(3, 1), kGroupA, 31001, 10 * kMs);  // hole 2 opened at 10 ms
    Bytes garbage(3);
    feed(replay, garbage, kGroupB, 31002, 110 * kMs);    // another channel, not even valid: exactly 100 ms
    EXPECT_EQ(replay.front().channel(0).counters.lost_messages.get(), 0u);
    feed(replay, garbage, kGroupB, 31002, 110 * kMs + 1);
    EXPECT_EQ(replay.front().channel(0).counters.lost_messages.get(), 1u);
    EXPECT_EQ(replay.front().channel(0).next_seq, 4u);
}

TEST(ItchReplay, EndOfCaptureGivesUpEveryOpenHole) {
    Replay replay(small_config());
    feed(replay, adds(1, 1), kGroupA, 31001, 0);
    feed(replay, adds(5, 1), kGroupA, 31001, 1);
    replay.front().finish();
    EXPECT_EQ(replay.front().channel(0).counters.lost_messages.get(), 3u);
    EXPECT_TRUE(replay.handler().instruments().state(5).suspect);
}

// ITCH50.md "Locates and order references are a channel's own": locate 5 and
// order reference 1 on two channels are two stocks and two orders; ids are
// 65,536 × the channel's position + locate, with the locate in the summary.
void expect_channels_own_locates_and_references(Replay& replay) {
    const std::vector<Bytes> first{stock_directory(5, "AAPL"), add_order(5, 1, 'B', 100, 1000)};
    const std::vector<Bytes> second{stock_directory(5, "MSFT"), add_order(5, 1, 'S', 200, 2000), delete_order(5, 1),
                                    add_order(5, 2, 'S', 300, 3000)};
    feed(replay, mold_packet("SESSION001", 1, first), kGroupA, 31001, 0);
    feed(replay, mold_packet("SESSION002", 1, second), kGroupB, 31002, 1);
    const Json s = Json::parse(replay.summary_json({.now_ns = 2}));
    const Json* a = instrument(s, 5);
    const Json* b = instrument(s, 65536 + 5);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ((*a)["locate"].as_int(), 5);
    EXPECT_EQ((*b)["locate"].as_int(), 5);
    EXPECT_EQ((*a)["symbol"].as_string(), "AAPL");
    EXPECT_EQ((*b)["symbol"].as_string(), "MSFT");
    EXPECT_EQ((*a)["orders"].as_int(), 1);  // channel 8's add and delete of reference 1 left it alone
    EXPECT_EQ((*a)["bids"].dump(), "[[1000,100]]");
    EXPECT_EQ((*b)["orders"].as_int(), 1);
    EXPECT_EQ((*b)["asks"].dump(), "[[3000,300]]");
    EXPECT_EQ((*b)["unknown_orders"].as_int(), 0);
    EXPECT_EQ(s["out_of_range_instruments"].as_int(), 0);
}

TEST(ItchReplayRule, LocatesAndOrderReferencesAreAChannelsOwnWithAConfig) {
    Replay replay(two_channel_config());
    expect_channels_own_locates_and_references(replay);
    EXPECT_EQ(replay.handler().instruments().max_instruments(), 2u * 65536);  // ids for both channels
}

TEST(ItchReplayRule, LocatesAndOrderReferencesAreAChannelsOwnWithoutAConfigByFirstAppearance) {
    Replay replay(small_config(), replay_capacity(small_config(), 2));
    expect_channels_own_locates_and_references(replay);
    EXPECT_EQ(replay.front().channels()[1].name, "239.255.10.2:31002");
}

TEST(ItchReplayRule, OneChannelHasOneChannelsIds) {
    EXPECT_EQ(Replay(small_config()).handler().instruments().max_instruments(), 65536u);
    EXPECT_EQ(Replay(two_line_config()).handler().instruments().max_instruments(), 65536u);
    // config check's estimate counts the second channel's ids too
    EXPECT_GE(estimate_memory(two_channel_config()).total_bytes,
              estimate_memory(two_line_config()).total_bytes + InstrumentTable::bytes_for(65536));
}

// #21 item 9: a replay without channels sizes instrument ids for the
// channels of its capture (up to 16, 65,536 ids each), but the config's
// memory check could count one only. The replay checks the estimate for the
// channels it will allocate before it allocates: a limit that fits one
// channel's and not 16 channels' refuses the 16, with the figures.
TEST(ItchReplayRule, MemoryRuleAChannelLessReplayIsCheckedForTheChannelsOfItsCapture) {
    const std::uint64_t one = mib_ceil(itch50::estimate_memory(small_config(), 1).total_bytes);
    const std::uint64_t sixteen = mib_ceil(itch50::estimate_memory(small_config(), 16).total_bytes);
    ASSERT_GT(sixteen, one + 100);  // the per-instrument arrays and tables, 15 times more
    EXPECT_EQ(estimate_memory(small_config(), "itch50").total_bytes, itch50::estimate_memory(small_config(), 1).total_bytes);
    const Config cfg = small_config("[capacity]\nmax_memory_mb = " + std::to_string(one + 8) + "\n");
    EXPECT_EQ(Replay(cfg, replay_capacity(cfg, 1)).handler().instruments().max_instruments(), 65536u);
    try {
        Replay replay(cfg, replay_capacity(cfg, 16));
        ADD_FAILURE() << "16 channels' ids allocated past capacity.max_memory_mb";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("16 channels need an estimated " + std::to_string(sixteen) + " MiB"), std::string::npos)
            << e.what();
    }
    // Within the limit, the same capture's 16 channels are sized as before.
    const Config roomy = small_config("[capacity]\nmax_memory_mb = " + std::to_string(sixteen) + "\n");
    EXPECT_EQ(Replay(roomy, replay_capacity(roomy, 16)).handler().instruments().max_instruments(), 16u * 65536);
}

// The same symbol on two channels is two instruments; find() answers the one
// a directory named it on last (README, "Engine API"), subscriptions take both.
TEST(ItchReplayRule, SameSymbolOnTwoChannelsIsTwoInstruments) {
    Replay replay(two_channel_config());
    feed(replay, mold_packet("SESSION001", 1, std::vector<Bytes>{stock_directory(5, "AAPL")}), kGroupA, 31001, 0);
    EXPECT_EQ(replay.handler().find("AAPL")->id, 5u);
    feed(replay, mold_packet("SESSION002", 1, std::vector<Bytes>{stock_directory(9, "AAPL")}), kGroupB, 31002, 1);
    EXPECT_EQ(replay.handler().find("AAPL")->id, 65536u + 9);
    EXPECT_STREQ(replay.handler().instruments().state(5).symbol, "AAPL");
    ASSERT_TRUE(replay.handler().subscribe("AAPL"));
    EXPECT_TRUE(replay.handler().instruments().state(5).booked);
    EXPECT_TRUE(replay.handler().instruments().state(65536 + 9).booked);
}

// ITCH50.md "Summary and replay" (pinned): a unicast datagram of no channel,
// one too short for a header included, is unmatched, not a channel's packet.
TEST(ItchReplayRule, UnicastDatagramOfNoChannelIsUnmatchedNotAPacket) {
    Replay replay(small_config());
    feed(replay, adds(1, 1), kGroupA, 31001, 0);
    feed(replay, adds(2, 1, "NOBODY"), 0x7F000001, 40000, 1);  // a session no channel has
    Bytes short_one(5);
    feed(replay, short_one, 0x7F000001, 40000, 2);
    const Json s = Json::parse(replay.summary_json({.now_ns = 3}));
    EXPECT_EQ(s["unmatched_datagrams"].as_int(), 2);
    EXPECT_EQ(s["packets"].as_int(), 1);
    EXPECT_EQ(s["malformed_packets"].as_int(), 0);
    EXPECT_EQ(s["channels"][0]["packets"].as_int(), 1);
}

// Issue 21 item 12: after a session change the symbols printed empty. The
// new session empties books and orders and unnames the locates (find()
// answers none until the new session names them), and the summary shows
// the locate in decimal meanwhile, as before any directory; never "?"
// (issue 26 item 10).
TEST(ItchReplayRule, NewSessionShowsTheLocateAsSymbolUntilItsDirectoryNamesIt) {
    Replay replay(two_line_config());
    feed(replay, mold_packet("SESSION001", 1, std::vector<Bytes>{stock_directory(5, "AAPL"), add_order(5, 1, 'B', 100, 1000)}),
         kGroupA, 31001, 0);
    feed(replay, mold_packet("SESSION002", 1, std::vector<Bytes>{executed(5, 1, 10)}), kGroupA, 31001, 1);
    Json s = Json::parse(replay.summary_json({.now_ns = 2}));
    EXPECT_EQ((*instrument(s, 5))["symbol"].as_string(), "5");
    EXPECT_EQ((*instrument(s, 5))["orders"].as_int(), 0);  // the old session's order is gone
    EXPECT_EQ((*instrument(s, 5))["bids"].dump(), "[]");
    EXPECT_FALSE(replay.handler().find("AAPL").has_value());
    EXPECT_FALSE(replay.handler().find("5").has_value());  // a placeholder, not a symbol
    const std::string table = replay.summary_table({.now_ns = 2});
    EXPECT_NE(table.find("\n5 "), std::string::npos) << table;
    EXPECT_EQ(table.find('?'), std::string::npos) << table;
    feed(replay, mold_packet("SESSION002", 2, std::vector<Bytes>{stock_directory(5, "AAPL")}), kGroupA, 31001, 3);
    s = Json::parse(replay.summary_json({.now_ns = 4}));
    EXPECT_EQ((*instrument(s, 5))["symbol"].as_string(), "AAPL");
    EXPECT_EQ(replay.handler().find("AAPL")->id, 5u);
}

// Issue 26 item 6: a capture joined after the Stock Directory showed bare
// locates. An Add Order carries its stock: it names a locate no directory
// named in the session (find() answers it), once; a directory still
// decides, and a blank stock names nothing (a later add may).
TEST(ItchReplayRule, Rule6AddOrderNamesALocateNoDirectoryNamed) {
    Replay replay(two_line_config());
    feed(replay, mold_packet("SESSION001", 1, std::vector<Bytes>{add_order(5, 1, 'B', 100, 1000, 0, false, "MSFT"),
                                                                 add_order(5, 2, 'B', 100, 1000, 0, false, "OTHER"),
                                                                 add_order(6, 3, 'S', 100, 1000, 0, false, ""),
                                                                 add_order(7, 4, 'S', 100, 1000, 0, false, ""),
                                                                 add_order(7, 5, 'S', 100, 1000, 0, false, "IBM")}),
         kGroupA, 31001, 0);
    Json s = Json::parse(replay.summary_json({.now_ns = 1}));
    EXPECT_EQ((*instrument(s, 5))["symbol"].as_string(), "MSFT");  // the first add's
    EXPECT_EQ((*instrument(s, 6))["symbol"].as_string(), "6");     // blank: the locate
    EXPECT_EQ((*instrument(s, 7))["symbol"].as_string(), "IBM");   // the first add that names one
    ASSERT_TRUE(replay.handler().find("MSFT").has_value());
    EXPECT_EQ(replay.handler().find("MSFT")->id, 5u);
    feed(replay, mold_packet("SESSION001", 6, std::vector<Bytes>{stock_directory(5, "MSFT.X")}), kGroupA, 31001, 2);
    s = Json::parse(replay.summary_json({.now_ns = 3}));
    EXPECT_EQ((*instrument(s, 5))["symbol"].as_string(), "MSFT.X");
    EXPECT_FALSE(replay.handler().find("MSFT").has_value());
}

// Issue 21 item 6: every new session walked the whole order store (1,500
// heartbeats with new session strings: 30 s). A new session costs only the
// channel's own instruments: the store is not visited at all.
TEST(ItchReplayRule, NewSessionCostsOnlyTheChannelsOwnOrders) {
    Replay replay(parse_config("[itch]\nmax_orders = 1000000\nmax_levels = 4096\n", "itch.toml"));
    std::vector<Bytes> msgs;
    for (std::uint64_t r = 1; r <= 50; ++r) msgs.push_back(add_order(5, r, 'B', 100, 1000));
    feed(replay, mold_packet("SESSION000", 1, msgs), kGroupA, 31001, 0);
    const std::uint64_t before = replay.handler().book().probes();
    for (int i = 0; i < 1500; ++i) {
        char session[16];  // 10 characters; room for any int, so -Wformat-truncation has nothing to say
        std::snprintf(session, sizeof session, "S%09d", i);
        const Bytes hb = mold_heartbeat(session, 1);
        feed(replay, hb, kGroupA, 31001, 1 + i);
    }
    EXPECT_EQ(replay.front().channel(0).counters.session_changes.get(), 1500u);
    EXPECT_EQ(replay.handler().book().open_orders(), 0u);
    EXPECT_EQ(replay.handler().book().probes(), before);
}

// A replay of a capture reserves the order store its adds can fill, not the
// config's 16 M orders (the default replay of the 17 KB Nasdaq sample was
// 300 MB resident): census_of counts `A` and `F` of every line and the
// channels in one read; max_orders is lowered to the adds (at least
// kMinReplayOrders), never raised, and the replay reads the same.
TEST(ItchReplayRule, AReplayReservesTheOrdersItsCaptureCanHoldNoMoreThanTheConfigSays) {
    const std::string path = ::testing::TempDir() + "itch-census.pcap";
    {
        CaptureWriter w(path);
        std::int64_t t = 1'700'000'000'000'000'000;
        for (std::uint64_t k = 0; k < 250; ++k) {  // 250 packets of 20 adds on A (8 'A', 12 'F'), copied on B
            std::vector<Bytes> msgs;
            for (std::uint64_t i = 0; i < 20; ++i)
                msgs.push_back(add_order(5, 1 + k * 20 + i, 'B', 100, 1000 + static_cast<std::uint32_t>(i), 0, i >= 8));
            const Bytes d = mold_packet("SESSION001", 1 + k * 20, msgs);
            w.write_udp(t += 1000, 0x0A000001, 40000, kGroupA, 31001, d);
            w.write_udp(t += 1000, 0x0A000001, 40000, kGroupB, 31002, d);
        }
        w.write_udp(t += 1000, 0x0A000001, 40000, kGroupOther, 31003, mold_heartbeat("SESSION001", 1));
    }
    const CaptureCensus census = census_of(path);
    EXPECT_EQ(census.adds, 10'000u);  // both lines' copies
    EXPECT_EQ(census.channels, 3u);
    EXPECT_EQ(replay_max_orders(16'777'216, 10), kMinReplayOrders);
    EXPECT_EQ(replay_max_orders(16'777'216, 10'000), 10'000u);
    EXPECT_EQ(replay_max_orders(4096, 10'000), 4096u);

    const Config defaults = parse_config(std::string(two_line_config_text()), "itch.toml");
    const auto fitted = Replay::for_capture(defaults, path);
    EXPECT_EQ(fitted->cfg().itch.max_orders, 10'000u);
    const ReplayResult r = fitted->run(path);
    EXPECT_EQ(r.frames.udp_datagrams, 501u);
    EXPECT_EQ(fitted->messages(), 10'000u);
    EXPECT_EQ(fitted->handler().book().open_orders(5), 5000u);  // A and B are one channel: each order once
    EXPECT_EQ(fitted->handler().instruments().state(5).counters.accepted, 5000u);

    const auto configured = Replay::for_capture(two_line_config(), path);  // max_orders = 4096: kept, not raised
    EXPECT_EQ(configured->cfg().itch.max_orders, 4096u);
    (void)configured->run(path);
    EXPECT_EQ(configured->handler().book().open_orders(5), 4096u);
    EXPECT_EQ(configured->handler().sequencer().venue().counters(5).refused_adds, 904u);
    std::remove(path.c_str());
}

TEST(ItchConfig, KeysAndDefaults) {
    const Config d = parse_config("", "d.toml");
    EXPECT_EQ(d.moldudp64.gap_timeout_ms, 500u);
    EXPECT_EQ(d.moldudp64.max_held_packets, 4096u);
    EXPECT_EQ(d.itch.max_orders, 16'777'216u);
    EXPECT_FALSE(d.itch.utc_offset_minutes.has_value());
    const Config c = parse_config(
        "[moldudp64]\ngap_timeout_ms = 20\nmax_held_packets = 8\n[itch]\nmax_orders = 100\nmax_levels = 50\n"
        "utc_offset_minutes = -240\n",
        "c.toml");
    EXPECT_EQ(c.moldudp64.gap_timeout_ms, 20u);
    EXPECT_EQ(c.moldudp64.max_held_packets, 8u);
    EXPECT_EQ(c.itch.max_orders, 100u);
    EXPECT_EQ(c.itch.max_levels, 50u);
    EXPECT_EQ(c.itch.utc_offset_minutes, -240);
    EXPECT_FALSE(parse_config("[itch]\nutc_offset_minutes = \"auto\"\n", "a.toml").itch.utc_offset_minutes.has_value());
    EXPECT_EQ(two_line_config().protocol(), "itch50");
}

TEST(ItchConfig, BadValuesAreOneLineErrorsNamingTheKey) {
    const auto error = [](std::string_view text) {
        try {
            (void)parse_config(text, "bad.toml");
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error("[itch]\nutc_offset_minutes = \"summer\"\n"),
              "bad.toml:2: itch.utc_offset_minutes: expected integer in -720..720 or \"auto\", got string \"summer\"");
    EXPECT_NE(error("[itch]\nutc_offset_minutes = 721\n").find("bad.toml:2: itch.utc_offset_minutes: expected"), std::string::npos);
    EXPECT_NE(error("[itch]\nmax_orders = 0\n").find("bad.toml:2: itch.max_orders: expected"), std::string::npos);
    EXPECT_NE(error("[moldudp64]\nmax_held_packets = 0\n").find("moldudp64.max_held_packets: expected"), std::string::npos);
    EXPECT_NE(error("[moldudp64]\nrequest_server = 1\n").find("moldudp64.request_server"), std::string::npos);  // unknown key
}

}  // namespace
}  // namespace tickgate::itch50
