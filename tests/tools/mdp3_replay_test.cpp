// MDP3.md acceptance: both real captures through `tickgate replay --protocol
// mdp3 --json` (no config: a channel per destination group:port).
//
// Every expected figure comes from an independent Python replay of the
// capture's bytes written from MDP3.md (not from tickgate): struct.unpack
// over the pcap/pcapng records (Ethernet -> IPv4 -> UDP), per destination
// the MsgSeqNum dedup/gap rule, per SecurityID the RptSeq rule (duplicates,
// loss, first RptSeq accepted), and the level-indexed book (depth 10, the six
// MDUpdateActions with padding, `J`, implied entries ignored) applied to
// every accepted entry of templates 32 / 46; book_errors counted by its table.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "../support/json.hpp"

namespace tickgate {
namespace {

using test::Json;

Json replay_mdp3(const std::string& capture, const std::string& options = "--protocol mdp3") {
    const std::string cmd = std::string("'") + TICKGATE_BINARY + "' replay " + options + " --json '" + capture + "' </dev/null 2>/dev/null";
    std::string out;
    if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
        std::array<char, 65536> buf;
        for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
        EXPECT_EQ(::pclose(p), 0) << cmd;
    }
    return Json::parse(out);
}

const Json& instrument(const Json& s, std::int64_t security_id) {
    const Json& all = s["instruments"];
    for (std::size_t i = 0; i < all.size(); ++i)
        if (all[i]["id"].as_int() == security_id) return all[i];
    throw test::JsonError("no instrument " + std::to_string(security_id));
}

const Json& channel(const Json& s, const std::string& name) {
    const Json& all = s["channels"];
    for (std::size_t i = 0; i < all.size(); ++i)
        if (all[i]["channel"].as_string() == name) return all[i];
    throw test::JsonError("no channel " + name);
}

struct Want {
    std::int64_t id;
    std::uint64_t last_seq, accepted, duplicates, lost, book_errors;
    std::int64_t bid_px;  // 0: no bid
    std::uint64_t bid_qty;
    std::int64_t ask_px;  // 0: no ask
    std::uint64_t ask_qty;
    std::size_t n_bids, n_asks;
};

void expect_instrument(const Json& s, const Want& w) {
    SCOPED_TRACE("SecurityID " + std::to_string(w.id));
    const Json& i = instrument(s, w.id);
    EXPECT_EQ(i["last_seq"].as_uint(), w.last_seq);
    EXPECT_EQ(i["accepted"].as_uint(), w.accepted);
    EXPECT_EQ(i["duplicates"].as_uint(), w.duplicates);
    EXPECT_EQ(i["lost"].as_uint(), w.lost);
    EXPECT_EQ(i["book_errors"].as_uint(), w.book_errors);
    EXPECT_TRUE(i["suspect"].as_bool()) << "no snapshot in the capture: joined mid-stream";
    EXPECT_EQ(i["symbol"].as_string(), std::to_string(w.id)) << "no definition: the id in decimal";
    ASSERT_EQ(i["bids"].size(), w.n_bids);
    ASSERT_EQ(i["asks"].size(), w.n_asks);
    if (w.n_bids) {
        EXPECT_EQ(i["bids"][0][0].as_int(), w.bid_px);
        EXPECT_EQ(i["bids"][0][1].as_uint(), w.bid_qty);
    }
    if (w.n_asks) {
        EXPECT_EQ(i["asks"][0][0].as_int(), w.ask_px);
        EXPECT_EQ(i["asks"][0][1].as_uint(), w.ask_qty);
    }
}

std::uint64_t sum(const Json& s, const char* key) {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < s["instruments"].size(); ++i) n += s["instruments"][i][key].as_uint();
    return n;
}

// The capture-wide figures: packets, nothing malformed or unknown, and the
// per-instrument counters summed.
struct Totals {
    std::uint64_t packets, instruments, accepted, duplicates, lost, book_errors;
};
void expect_totals(const Json& s, const Totals& t) {
    EXPECT_EQ(s["packets"].as_uint(), t.packets);
    EXPECT_EQ(s["malformed_packets"].as_uint(), 0u);
    EXPECT_EQ(s["unknown_messages"].as_uint(), 0u);
    EXPECT_EQ(s["instruments"].size(), t.instruments);
    EXPECT_EQ(sum(s, "accepted"), t.accepted);
    EXPECT_EQ(sum(s, "duplicates"), t.duplicates);
    EXPECT_EQ(sum(s, "lost"), t.lost);
    EXPECT_EQ(sum(s, "book_errors"), t.book_errors);
}

TEST(Mdp3Replay, Version6CaptureLinesAAndB) {
    const Json s = replay_mdp3(TICKGATE_TEST_DATA_DIR "/captures/cme-mdp3-v6.1-ab.pcapng");
    // B is another channel without a config: each of its entries is an RptSeq duplicate.
    expect_totals(s, {10000, 127, 15731, 15731, 0, 4});
    for (const char* line : {"224.0.31.64:14340", "224.0.32.64:15340"}) {
        const Json& c = channel(s, line);
        EXPECT_EQ(c["packets"].as_uint(), 5000u) << line;
        EXPECT_EQ(c["duplicate_packets"].as_uint(), 0u) << line;
        EXPECT_EQ(c["gaps"].as_uint(), 0u) << line;
        EXPECT_EQ(c["lost_packets"].as_uint(), 0u) << line;
        EXPECT_EQ(c["resets"].as_uint(), 0u) << line;
        EXPECT_EQ(c["unknown_templates"].as_uint(), 0u) << line;
    }
    expect_instrument(s, {363272, 797, 789, 789, 0, 0, 3465000000, 6, 3467500000, 3, 2, 10});
    expect_instrument(s, {133990, 778, 776, 776, 0, 0, -87500000, 995, -85000000, 17140, 10, 10});
    expect_instrument(s, {411873, 748, 638, 638, 0, 4, 4120000000, 2, 4127500000, 1, 5, 8});
    expect_instrument(s, {366000, 577, 575, 575, 0, 0, 0, 0, 3577500000, 1, 0, 2});
}

// With a config the two lines are one channel (its id): B's packets are
// MsgSeqNum copies, dropped whole, so no entry is an RptSeq duplicate
// (figures: the same Python replay with both destinations as one channel).
TEST(Mdp3Replay, Version6CaptureWithAConfigIsOneChannel) {
    char path[] = "/tmp/tickgate-mdp3-XXXXXX.toml";
    const int fd = ::mkstemps(path, 5);
    ASSERT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << "[[channel]]\nid = 310\nprotocol = \"mdp3\"\n"
                           "a = { group = \"224.0.31.64\", port = 14340 }\n"
                           "b = { group = \"224.0.32.64\", port = 15340 }\n";
    const Json s = replay_mdp3(TICKGATE_TEST_DATA_DIR "/captures/cme-mdp3-v6.1-ab.pcapng", std::string("--config ") + path);
    std::remove(path);
    expect_totals(s, {10000, 127, 15731, 0, 0, 4});
    ASSERT_EQ(s["channels"].size(), 1u);
    const Json& c = s["channels"][0];
    EXPECT_EQ(c["channel"].as_uint(), 310u);
    EXPECT_EQ(c["packets"].as_uint(), 10000u);
    EXPECT_EQ(c["duplicate_packets"].as_uint(), 5000u);
    EXPECT_EQ(c["gaps"].as_uint(), 0u);
    expect_instrument(s, {363272, 797, 789, 0, 0, 0, 3465000000, 6, 3467500000, 3, 2, 10});
}

TEST(Mdp3Replay, Version9ExampleNineChannelsAB) {
    const Json s = replay_mdp3(TICKGATE_TEST_DATA_DIR "/captures/cme-mdp3-v9.1-ab-example.pcap");
    expect_totals(s, {99, 242, 457, 419, 0, 139});
    EXPECT_EQ(s["channels"].size(), 18u);
    const Json& a = channel(s, "224.0.28.19:14360");
    EXPECT_EQ(a["packets"].as_uint(), 8u);
    EXPECT_EQ(a["gaps"].as_uint(), 1u);
    EXPECT_EQ(a["lost_packets"].as_uint(), 1u);
    const Json& b = channel(s, "224.0.28.146:15360");
    EXPECT_EQ(b["packets"].as_uint(), 9u);
    EXPECT_EQ(b["gaps"].as_uint(), 0u);
    expect_instrument(s, {170506, 20192, 8, 8, 0, 2, 0, 0, 12952000000000, 2, 0, 2});
    expect_instrument(s, {553987, 102, 6, 6, 0, 0, 6875000000000, 6, 7150000000000, 6, 1, 1});
    expect_instrument(s, {5893, 19538, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0});
}

}  // namespace
}  // namespace tickgate
