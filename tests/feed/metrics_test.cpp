// Metrics: a live FeedHandler on loopback multicast is published into the
// registry by the engine (test) thread, served by MetricsServer on an
// ephemeral loopback port and scraped over a real TCP socket; the values are
// checked and the text is validated with `promtool check metrics` (package
// `prometheus`). Each test uses its own groups/ports.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "../support/http.hpp"
#include "tickgate/capture.hpp"
#include "tickgate/feed_handler.hpp"
#include "tickgate/metrics.hpp"

namespace tickgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using test::has_line;
using test::http_get;
using test::HttpResponse;

Config loopback_config(std::uint16_t channel, const std::string& ga, std::uint16_t pa, const std::string& gb,
                       std::uint16_t pb) {
    Config cfg;
    ChannelConfig ch;
    ch.id = channel;
    ch.a = {ga, pa, "127.0.0.1"};
    ch.b = {gb, pb, "127.0.0.1"};
    cfg.channels.push_back(ch);
    cfg.receiver.ring_size = 4096;
    cfg.capacity.max_instruments = 256;
    cfg.gate.stale_ms = 60'000;  // gate verdicts must not depend on how fast the test runs
    cfg.gate.source_age_ms = 60'000;
    return cfg;
}

// Polls `h` until `done()` or 5 s.
bool poll_until(FeedHandler& h, const std::function<bool()>& done) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < deadline) {
        h.poll(1024);
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    h.poll(1024);
    return done();
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

struct Promtool {
    bool available = false;
    int status = -1;
    std::string output;
};

// `promtool check metrics < file`; not available -> available = false.
Promtool promtool_check(const std::string& text, const std::string& tag) {
    Promtool p;
    if (std::system("command -v promtool >/dev/null 2>&1") != 0) return p;
    p.available = true;
    const fs::path in = fs::temp_directory_path() / ("tickgate_metrics_" + std::to_string(::getpid()) + "_" + tag + ".prom");
    const fs::path out = fs::path(in).replace_extension(".out");
    std::ofstream(in, std::ios::binary) << text;
    const std::string cmd = "promtool check metrics < '" + in.string() + "' > '" + out.string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    p.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    std::ifstream f(out);
    p.output.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    fs::remove(in);
    fs::remove(out);
    return p;
}

TEST(Metrics, LiveFeedScrapedOverTcpHasTheRightValuesAndPassesPromtool) {
    const Config cfg = loopback_config(5, "239.255.90.1", 39501, "239.255.90.2", 39502);
    FeedHandler h(cfg);
    MetricsRegistry registry(h);
    MetricsServer server(registry, {"127.0.0.1", 0, false});
    server.start();
    ASSERT_NE(server.port(), 0);

    // Before any publish: a valid, empty exposition.
    HttpResponse empty = http_get(server.port(), "/metrics");
    EXPECT_EQ(empty.status, 200);
    EXPECT_TRUE(has_line(empty.body, "tickgate_metrics_publish_generation 0")) << empty.body;

    h.start();
    MulticastSender sender;
    const std::uint32_t ga = *parse_ipv4("239.255.90.1"), gb = *parse_ipv4("239.255.90.2");
    const std::int64_t t = realtime_ns();
    std::vector<std::vector<std::byte>> packets;
    {
        PacketBuilder p(5, 1, 1, t);
        p.definition(7, "ESZ5").definition(9, "NQ\"Z5\\x");  // a symbol that needs escaping
        p.quote(7, 1, t, 100, 1, 101, 1).quote(9, 1, t, 200, 1, 201, 1);
        packets.emplace_back(p.bytes().begin(), p.bytes().end());
    }
    {
        PacketBuilder p(5, 1, 2, t);
        p.quote(7, 2, t, 100, 2, 101, 2).delta(9, 5, t, 199, 3, 0, 0);  // 9: 3 lost, suspect
        packets.emplace_back(p.bytes().begin(), p.bytes().end());
    }
    {
        PacketBuilder p(5, 1, 3, t);
        p.heartbeat(7, 3, t);
        packets.emplace_back(p.bytes().begin(), p.bytes().end());
    }
    for (const auto& d : packets) {
        ASSERT_TRUE(sender.send(ga, 39501, d));
        ASSERT_TRUE(sender.send(gb, 39502, d));
    }
    const Sequencer& seq = h.sequencer();
    ASSERT_TRUE(poll_until(h, [&] {
        return seq.state(7).counters.heartbeats == 1 && seq.state(9).counters.lost == 3 &&
               h.arbiter_counters().duplicate_packets.get() == 3;
    })) << "the datagrams did not all arrive";

    GateRejections rejections;
    const std::int64_t now = realtime_ns();
    for (const std::uint32_t id : {7u, 9u, 100u}) rejections.count(h.gate().check(id, now).reason);
    const LatencySummary latency{12'000, 250'000, 1'500'000};
    const auto storage_before = registry.storage();
    registry.publish(h, rejections, &latency);
    EXPECT_EQ(registry.storage(), storage_before) << "publish() must not reallocate";
    EXPECT_EQ(registry.generation(), 1u);

    const HttpResponse r = http_get(server.port(), "/metrics");
    ASSERT_EQ(r.status, 200) << r.headers;
    EXPECT_NE(lower(r.headers).find("content-type: text/plain; version=0.0.4"), std::string::npos) << r.headers;
    const std::string& m = r.body;
    const std::string i7 = R"({instrument="7",symbol="ESZ5"})";
    const std::string i9 = R"({instrument="9",symbol="NQ\"Z5\\x"})";
    EXPECT_TRUE(has_line(m, "tickgate_instrument_accepted_total" + i7 + " 2")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_accepted_total" + i9 + " 2")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_lost_messages_total" + i9 + " 3")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_lost_messages_total" + i7 + " 0")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_gap_events_total" + i9 + " 1")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_heartbeats_total" + i7 + " 1")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_suspect" + i9 + " 1")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_suspect" + i7 + " 0")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_last_seq" + i9 + " 5")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_last_seq" + i7 + " 2")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_packets_total 3")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_messages_total 7")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_malformed_packets_total 0")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_ab_duplicate_packets_total 3")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_ab_lost_both_total 0")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_line_packets_total{channel="5",line="A"} 3)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_line_packets_total{channel="5",line="B"} 3)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_line_kernel_drops_total{channel="5",line="A"} 0)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_gate_rejections_total{reason="suspect"} 1)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_gate_rejections_total{reason="unknown"} 1)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_gate_rejections_total{reason="stale"} 0)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_latency_seconds{quantile="0.99"} 0.00025)")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_ring_overflow_packets_total 0")) << m;
    EXPECT_TRUE(has_line(m, "# TYPE tickgate_instrument_suspect gauge")) << m;
    EXPECT_TRUE(has_line(m, "# TYPE tickgate_instrument_accepted_total counter")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instruments_seen 2")) << m;

    // Anything else: 404.
    EXPECT_EQ(http_get(server.port(), "/").status, 404);
    EXPECT_EQ(http_get(server.port(), "/metricsx").status, 404);
    EXPECT_EQ(http_get(server.port(), "/metrics", "POST").status, 404);
    const HttpResponse head = http_get(server.port(), "/metrics", "HEAD");
    EXPECT_EQ(head.status, 200);
    EXPECT_EQ(head.body, "");
    EXPECT_GE(server.requests(), 6u);

    h.stop();
    server.stop();
    server.stop();  // idempotent

    const Promtool p = promtool_check(m, "live");
    if (!p.available) GTEST_SKIP() << "promtool not installed (apt-get install -y prometheus)";
    EXPECT_EQ(p.status, 0) << p.output;
    EXPECT_EQ(p.output, "") << "promtool lint findings";
}

TEST(Metrics, PublishReusesItsBuffersAndReadersNeverSeeATornSnapshot) {
    const Config cfg = loopback_config(6, "239.255.90.3", 39503, "239.255.90.4", 39504);
    FeedHandler h(cfg);
    MetricsRegistry registry(h);
    const auto storage = registry.storage();
    EXPECT_EQ(storage[0].instrument_capacity, 256u);
    EXPECT_EQ(storage[1].instrument_capacity, 256u);
    EXPECT_EQ(storage[0].line_capacity, 2u);
    h.start();
    MulticastSender sender;
    const std::uint32_t ga = *parse_ipv4("239.255.90.3");
    const std::int64_t t = realtime_ns();
    for (std::uint64_t s = 1; s <= 40; ++s) {
        PacketBuilder p(6, 1, s, t);
        for (std::uint32_t id = 1; id <= 25; ++id) p.quote(id, s, t, 100, 1, 101, 1);  // 28 + 25 * 48 <= 1400 bytes
        ASSERT_TRUE(sender.send(ga, 39503, p.bytes()));
    }

    // A reader renders concurrently while the engine polls and publishes.
    std::atomic<bool> done{false};
    std::atomic<int> renders{0};
    std::atomic<bool> torn{false};
    std::thread reader([&] {
        std::uint64_t last_gen = 0;
        while (!done.load()) {
            const MetricsRegistry::Snapshot s = registry.snapshot();
            if (s.generation < last_gen) torn = true;
            last_gen = s.generation;
            // Within one snapshot every instrument has taken the same number
            // of quotes (they come in whole packets).
            for (std::size_t i = 1; i < s.instrument_count; ++i)
                if (s.instruments[i].counters.accepted != s.instruments[0].counters.accepted) torn = true;
            (void)registry.render();
            renders.fetch_add(1);
        }
    });
    GateRejections g;
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < deadline && (h.sequencer().seen_ids().size() < 25 ||
                                       h.sequencer().state(25).counters.accepted < 40 || renders.load() < 20)) {
        h.poll(25);  // whole packets (25 events each), so every snapshot is consistent across instruments
        registry.publish(h, g);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    // Let the reader take a few more while publishes continue.
    for (int i = 0; i < 200; ++i) registry.publish(h, g);
    done = true;
    reader.join();
    h.stop();
    EXPECT_EQ(registry.storage(), storage) << "publish() must never reallocate its buffers";
    EXPECT_FALSE(torn.load());
    EXPECT_GT(renders.load(), 0);
    const MetricsRegistry::Snapshot s = registry.snapshot();
    EXPECT_EQ(s.instrument_count, 25u);
    EXPECT_EQ(s.instruments[24].counters.accepted, 40u);
    EXPECT_EQ(s.generation, registry.generation());
}

TEST(Metrics, SyntheticSnapshotWithOddSymbolsPassesPromtool) {
    MetricsRegistry::Snapshot s;
    s.generation = 3;
    s.published_ns = 1'700'000'000'123'456'789;
    s.packets = 10;
    s.messages = 30;
    s.instrument_count = 3;
    s.instruments.resize(3);
    const char* symbols[] = {"A\nB", "\xff\xfe", ""};
    for (std::uint32_t i = 0; i < 3; ++i) {
        s.instruments[i].id = i;
        std::snprintf(s.instruments[i].symbol, sizeof s.instruments[i].symbol, "%s", symbols[i]);
        s.instruments[i].counters.accepted = 10 + i;
        s.instruments[i].suspect = i == 1;
    }
    s.line_count = 2;
    s.lines = {{1, 0, 5, 500, 0, 0, 0}, {1, 1, 4, 400, 1, 0, 0}};
    s.has_latency = true;
    s.latency = {1, 2, 3};
    const std::string text = render_prometheus(s);
    EXPECT_TRUE(has_line(text, R"(tickgate_instrument_accepted_total{instrument="0",symbol="A\nB"} 10)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_instrument_suspect{instrument="1",symbol="??"} 1)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_instrument_accepted_total{instrument="2",symbol=""} 12)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_line_seq_gaps_total{channel="1",line="B"} 1)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_latency_seconds{quantile="0.999"} 3e-09)")) << text;
    // Every family has HELP and TYPE right before its samples.
    std::size_t helps = 0, types = 0;
    for (std::size_t pos = 0; (pos = text.find("# HELP ", pos)) != std::string::npos; ++pos) ++helps;
    for (std::size_t pos = 0; (pos = text.find("# TYPE ", pos)) != std::string::npos; ++pos) ++types;
    EXPECT_EQ(helps, types);
    EXPECT_GE(helps, 35u);
    const Promtool p = promtool_check(text, "synthetic");
    if (!p.available) GTEST_SKIP() << "promtool not installed (apt-get install -y prometheus)";
    EXPECT_EQ(p.status, 0) << p.output;
    EXPECT_EQ(p.output, "") << "promtool lint findings";
}

TEST(MetricsServer, RefusesNonLoopbackUnlessAllowedAndParsesListenAddresses) {
    MetricsRegistry registry(4, 0);
    MetricsServer wide(registry, {"10.1.2.3", 0, false});
    EXPECT_THROW(wide.start(), std::invalid_argument);
    MetricsServer any(registry, {"0.0.0.0", 0, false});
    EXPECT_THROW(any.start(), std::invalid_argument);
    MetricsServer bad(registry, {"not-an-address", 0, false});
    EXPECT_THROW(bad.start(), std::invalid_argument);

    MetricsServer other_loopback(registry, {"127.0.0.2", 0, false});
    ASSERT_NO_THROW(other_loopback.start());
    EXPECT_NE(other_loopback.port(), 0);

    // A port in use: a clear runtime_error.
    MetricsServer clash(registry, {"127.0.0.2", other_loopback.port(), false});
    EXPECT_THROW(clash.start(), std::runtime_error);
    other_loopback.stop();

    EXPECT_EQ(parse_metrics_listen("127.0.0.1:9108").port, 9108);
    EXPECT_EQ(parse_metrics_listen("127.0.0.5:0").address, "127.0.0.5");
    EXPECT_EQ(parse_metrics_listen(":9200").address, "127.0.0.1");
    EXPECT_EQ(parse_metrics_listen("9300").port, 9300);
    EXPECT_THROW((void)parse_metrics_listen("127.0.0.1:"), std::invalid_argument);
    EXPECT_THROW((void)parse_metrics_listen("127.0.0.1:70000"), std::invalid_argument);
    EXPECT_THROW((void)parse_metrics_listen("127.0.0.1:9x"), std::invalid_argument);
}

}  // namespace
}  // namespace tickgate
