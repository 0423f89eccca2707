// Metrics: a live FeedHandler on loopback multicast is published into the
// registry by the engine (test) thread, served by MetricsServer on an
// ephemeral loopback port and scraped over a real TCP socket; the values are
// checked and the text is validated with `promtool check metrics` (package
// `prometheus`). Each test uses its own groups/ports.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "../support/http.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed_handler.hpp"
#include "tickgate/feed/metrics.hpp"
#include "tickgate/feed/protocols.hpp"

namespace tickgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using test::connect_loopback;
using test::has_line;
using test::http_get;
using test::HttpResponse;

// Where family `metric` of group `g` is in a ChannelCounterSample's values.
std::size_t channel_row(std::span<const ChannelCounterGroup> groups, std::size_t g, std::string_view metric) {
    for (std::size_t i = 0; i < groups[g].size(); ++i)
        if (groups[g][i].metric == metric) return channel_group_offset(groups, g) + i;
    ADD_FAILURE() << "no " << metric << " in group " << g;
    return 0;
}

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

// Expects promtool to accept `text` with no lint finding; false when
// promtool is not installed (the caller skips).
bool expect_promtool_clean(const std::string& text, const std::string& tag) {
    const Promtool p = promtool_check(text, tag);
    if (!p.available) return false;
    EXPECT_EQ(p.status, 0) << tag << ": " << p.output;
    EXPECT_EQ(p.output, "") << tag << ": promtool lint findings";
    return true;
}
constexpr const char* kNoPromtool = "promtool not installed (apt-get install -y prometheus)";

// Connections to 127.0.0.1:port that never send anything, closed on destruction.
class IdleConnections {
public:
    IdleConnections(std::uint16_t port, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            if (const int fd = connect_loopback(port); fd >= 0) fds_.push_back(fd);
    }
    ~IdleConnections() {
        for (const int fd : fds_) ::close(fd);
    }
    IdleConnections(const IdleConnections&) = delete;
    IdleConnections& operator=(const IdleConnections&) = delete;
    [[nodiscard]] std::size_t size() const { return fds_.size(); }
    // How many of connections [first, last) in opening order the server has
    // closed (EOF or reset waiting to be read).
    [[nodiscard]] std::size_t closed_by_server(std::size_t first, std::size_t last) const {
        std::size_t n = 0;
        for (std::size_t i = first; i < last && i < fds_.size(); ++i)
            if (closed_by_peer(fds_[i])) ++n;
        return n;
    }

    static bool closed_by_peer(int fd) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 0) != 1) return false;
        char c;
        return ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;  // the server never sends unasked
    }

private:
    std::vector<int> fds_;
};

// GET /metrics; how long it took goes to `elapsed`.
HttpResponse timed_scrape(std::uint16_t port, Clock::duration& elapsed) {
    const auto t0 = Clock::now();
    HttpResponse r = http_get(port, "/metrics");
    elapsed = Clock::now() - t0;
    return r;
}

TEST(Metrics, LiveFeedScrapedOverTcpHasTheRightValuesAndPassesPromtool) {
    const Config cfg = loopback_config(5, "239.255.90.1", 39501, "239.255.90.2", 39502);
    FeedHandler h(cfg);
    MetricsRegistry registry(h.stats(), {.channels = 1});
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
    PacketBuilder foreign(6, 1, 1, t);  // channel 6's header on channel 5's line A: dropped (rule 7)
    foreign.quote(7, 3, t, 1, 1, 2, 1);
    ASSERT_TRUE(sender.send(ga, 39501, foreign.bytes()));
    const FeedHandler& seq = h;
    ASSERT_TRUE(poll_until(h, [&] {
        return seq.instruments().state(7).counters.heartbeats == 1 && seq.instruments().state(9).counters.lost == 3 &&
               h.arbiter_counters().duplicate_packets.get() == 3 &&
               h.line_stats()[0]->foreign_channel_packets.get() == 1;
    })) << "the datagrams did not all arrive";

    GateRejections rejections;
    const std::int64_t now = realtime_ns();
    for (const std::uint32_t id : {7u, 9u, 100u}) rejections.count(h.gate().check(id, now).reason);
    const std::uint16_t channels[] = {5};
    LatencyHistograms latency(channels);
    latency.record(5, 12'000);
    latency.record(5, 250'000);
    latency.record(5, 1'500'000);
    const auto storage_before = registry.storage();
    registry.publish(h.stats(), {.gate = &rejections, .latency = &latency});
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
    EXPECT_TRUE(has_line(m, R"(tickgate_line_packets_total{channel="5",line="A"} 4)")) << m;  // the foreign one too
    EXPECT_TRUE(has_line(m, R"(tickgate_line_foreign_channel_packets_total{channel="5",line="A"} 1)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_line_foreign_channel_packets_total{channel="5",line="B"} 0)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_line_oversized_total{channel="5",line="A"} 0)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_line_recv_errors_total{channel="5",line="B"} 0)")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_ab_late_packets_total 0")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_implausible_seq_total" + i7 + " 0")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instrument_foreign_channel_messages_total" + i7 + " 0")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_line_packets_total{channel="5",line="B"} 3)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_line_kernel_drops_total{channel="5",line="A"} 0)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_gate_rejections_total{reason="suspect"} 1)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_gate_rejections_total{reason="unknown"} 1)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_gate_rejections_total{reason="stale"} 0)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_receive_to_book_seconds_bucket{channel="5",le="0.0002"} 1)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_receive_to_book_seconds_bucket{channel="5",le="0.0005"} 2)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_receive_to_book_seconds_count{channel="5"} 3)")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_ring_overflow_packets_total 0")) << m;
    EXPECT_TRUE(has_line(m, "# TYPE tickgate_instrument_suspect gauge")) << m;
    EXPECT_TRUE(has_line(m, "# TYPE tickgate_instrument_accepted_total counter")) << m;
    EXPECT_TRUE(has_line(m, "tickgate_instruments_seen 2")) << m;

    // Anything else: 404.
    EXPECT_EQ(http_get(server.port(), "/").status, 404);
    EXPECT_EQ(http_get(server.port(), "/metricsx").status, 404);
    EXPECT_EQ(http_get(server.port(), "/metrics", "POST").status, 405);
    const HttpResponse head = http_get(server.port(), "/metrics", "HEAD");
    EXPECT_EQ(head.status, 200);
    EXPECT_EQ(head.body, "");
    EXPECT_GE(server.requests(), 6u);

    h.stop();
    server.stop();
    server.stop();  // idempotent

    if (!expect_promtool_clean(m, "live")) GTEST_SKIP() << kNoPromtool;
}

TEST(Metrics, PublishReusesItsBuffersAndReadersNeverSeeATornSnapshot) {
    const Config cfg = loopback_config(6, "239.255.90.3", 39503, "239.255.90.4", 39504);
    FeedHandler h(cfg);
    MetricsRegistry registry(h.stats());
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
    while (Clock::now() < deadline && (h.instruments().seen_ids().size() < 25 ||
                                       h.instruments().state(25).counters.accepted < 40 || renders.load() < 20)) {
        h.poll(25);  // whole packets (25 events each), so every snapshot is consistent across instruments
        registry.publish(h.stats(), {.gate = &g});
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    // Let the reader take a few more while publishes continue.
    for (int i = 0; i < 200; ++i) registry.publish(h.stats(), {.gate = &g});
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
    s.decoder.at("packets") = 10;
    s.decoder.at("messages") = 30;
    s.instrument_count = 3;
    s.instruments.resize(3);
    const char* symbols[] = {"A\nB", "\xff\xfe", ""};
    for (std::uint32_t i = 0; i < 3; ++i) {
        s.instruments[i].id = i;
        s.instruments[i].venue_id = i;
        std::snprintf(s.instruments[i].symbol, sizeof s.instruments[i].symbol, "%s", symbols[i]);
        s.instruments[i].counters.accepted = 10 + i;
        s.instruments[i].suspect = i == 1;
    }
    s.line_count = 2;
    s.lines = {{1, 0, 5, 500, 0, 0, 0}, {1, 1, 4, 400, 1, 0, 0}};
    s.histogram_count = 1;
    s.histograms.resize(1);
    s.histograms[0].channel = 1;
    s.histograms[0].buckets[0] = 2;
    s.histograms[0].buckets[LatencyHistograms::kBuckets - 1] = 1;
    s.histograms[0].sum_ns = 2'000'001'000;
    // ITCH: two MoldUDP64 channels, the second without a re-request server.
    s.channel_groups = itch50::kChannelCounterGroups;
    s.channel_counter_count = 2;
    s.channel_counters.resize(2);
    s.channel_counters[0] = {.channel = 30, .groups = 0b011};
    s.channel_counters[0].values[channel_row(s.channel_groups, 0, "tickgate_stream_recovered_messages_total")] = 744;
    s.channel_counters[0].values[channel_row(s.channel_groups, 1, "tickgate_rerequest_requests_sent_total")] = 51;
    s.channel_counters[1] = {.channel = 31, .groups = 0b001};
    s.channel_counters[1].values[channel_row(s.channel_groups, 0, "tickgate_stream_lost_messages_total")] = 7;
    const std::string text = render_prometheus(s);
    EXPECT_TRUE(has_line(text, R"(tickgate_stream_recovered_messages_total{channel="30"} 744)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_stream_lost_messages_total{channel="31"} 7)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_rerequest_requests_sent_total{channel="30"} 51)")) << text;
    EXPECT_EQ(text.find(R"(tickgate_rerequest_requests_sent_total{channel="31"})"), std::string::npos)
        << "no server, no client counters";
    EXPECT_TRUE(has_line(text, R"(tickgate_instrument_accepted_total{instrument="0",symbol="A\nB"} 10)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_instrument_suspect{instrument="1",symbol="??"} 1)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_instrument_accepted_total{instrument="2",symbol=""} 12)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_line_seq_gaps_total{channel="1",line="B"} 1)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_bucket{channel="1",le="1e-06"} 2)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_bucket{channel="1",le="1"} 2)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_bucket{channel="1",le="+Inf"} 3)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_sum{channel="1"} 2.000001)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_count{channel="1"} 3)")) << text;
    // Every family has HELP and TYPE right before its samples.
    std::size_t helps = 0, types = 0;
    for (std::size_t pos = 0; (pos = text.find("# HELP ", pos)) != std::string::npos; ++pos) ++helps;
    for (std::size_t pos = 0; (pos = text.find("# TYPE ", pos)) != std::string::npos; ++pos) ++types;
    EXPECT_EQ(helps, types);
    EXPECT_GE(helps, 35u);
    if (!expect_promtool_clean(text, "synthetic")) GTEST_SKIP() << kNoPromtool;
}

// Every counter of counter_fields.hpp with a metric name is exported, with
// its help text, whatever its table: a new row is a new metric.
TEST(Metrics, EveryCounterFieldWithAMetricNameIsRendered) {
    MetricsRegistry::Snapshot s;
    s.instrument_count = 1;
    s.instruments.resize(1);
    s.line_count = 2;
    s.lines.resize(2);
    s.lines[1].line = kSnapshotLineA;  // the snapshot-line families
    s.ring_capacity = 1;               // a ring: its families
    // Every protocol's own channel counter groups, one channel having them all.
    static constexpr ChannelCounterGroup kEveryGroup[] = {itch50::kChannelCounterGroups[0], itch50::kChannelCounterGroups[1],
                                                          itch50::kChannelCounterGroups[2], mdp3::kChannelCounterGroups[0]};
    static_assert(fits_channel_sample(kEveryGroup));
    s.channel_groups = kEveryGroup;
    s.channel_counter_count = 1;
    s.channel_counters = {{.channel = 1, .groups = 0b1111}};
    const std::string text = render_prometheus(s);  // features kEveryFeature: every family
    std::size_t rows = 0;
    auto check = [&](const auto& table) {
        for (const auto& f : table) {
            if (f.metric.empty()) continue;
            ++rows;
            const std::string metric(f.metric), help(f.help);
            EXPECT_TRUE(has_line(text, "# HELP " + metric + " " + help)) << metric;
            EXPECT_TRUE(has_line(text, "# TYPE " + metric + " counter")) << metric;
        }
    };
    check(kDecoderCounterFields);
    check(kSequencerCounterFields);
    check(kInstrumentCounterFields);
    check(kLineCounterFields);
    check(kArbiterCounterFields);
    check(kRingCounterFields);
    check(moldudp64::kStreamCounterFields);
    check(moldudp64::kRerequestCounterFields);
    check(kSnapshotCounterFields);
    check(mdp3::kChannelCounterFields);
    EXPECT_EQ(rows, 70u);  // every table row with a metric: a row added without a test shows here
}

// Issue 26 item 8: a family that is always 0 for a protocol is not
// exported for it (ITCH has no A/B arbiter, ring, gate engine or
// per-instrument sequencing; only QFB/1's header names a channel; snapshot
// joins happen on MDP3 snapshot lines, seq gaps on lines A and B).
TEST(Metrics, FamiliesAreExportedOnlyForTheProtocolsTheyCanMoveFor) {
    MetricsRegistry::Snapshot s;
    s.instrument_count = 1;
    s.instruments.resize(1);
    s.line_count = 3;
    s.lines.resize(3);
    s.lines[0].line = kLineA;
    s.lines[1].line = kLineB;
    s.lines[2].line = kSnapshotLineA;
    const auto render_for = [&](PipelineFeatures f) {
        s.features = f;
        s.has_gate = true;  // what run gives every pipeline
        s.ring_capacity = (f & kPacketArbitration) != 0 ? 64 : 0;
        return render_prometheus(s);
    };
    const auto has_family = [](const std::string& text, const std::string& name) {
        return text.find("# TYPE " + name + " ") != std::string::npos;
    };
    const std::string itch = render_for(features_of<itch50::Protocol>());
    for (const char* gone : {"tickgate_ab_duplicate_packets_total", "tickgate_ab_lost_both_total",
                             "tickgate_ring_overflow_packets_total", "tickgate_ring_fill", "tickgate_ring_capacity",
                             "tickgate_line_foreign_channel_packets_total",
                             "tickgate_line_snapshot_joins_total", "tickgate_instrument_lost_messages_total",
                             "tickgate_instrument_heartbeats_total", "tickgate_instrument_snapshots_applied_total",
                             "tickgate_instrument_last_seq"})
        EXPECT_FALSE(has_family(itch, gone)) << gone << " exported for ITCH";
    for (const char* kept : {"tickgate_line_seq_gaps_total", "tickgate_line_packets_total",
                             "tickgate_instrument_accepted_total", "tickgate_instrument_suspect"})
        EXPECT_TRUE(has_family(itch, kept)) << kept;
    EXPECT_TRUE(has_line(itch, R"(tickgate_line_seq_gaps_total{channel="0",line="B"} 0)")) << itch;

    const std::string qfb1 = render_for(features_of<qfb1::Protocol>());
    EXPECT_TRUE(has_family(qfb1, "tickgate_line_foreign_channel_packets_total"));
    EXPECT_TRUE(has_family(qfb1, "tickgate_ab_duplicate_packets_total"));
    EXPECT_FALSE(has_family(qfb1, "tickgate_line_snapshot_joins_total"));

    const std::string mdp3 = render_for(features_of<mdp3::Protocol>());
    EXPECT_FALSE(has_family(mdp3, "tickgate_line_foreign_channel_packets_total"));
    EXPECT_TRUE(has_line(mdp3, R"(tickgate_line_snapshot_joins_total{channel="0",line="snapshot_a"} 0)")) << mdp3;
    EXPECT_EQ(mdp3.find(R"(tickgate_line_snapshot_joins_total{channel="0",line="A"})"), std::string::npos);
    EXPECT_EQ(mdp3.find(R"(tickgate_line_seq_gaps_total{channel="0",line="snapshot_a"})"), std::string::npos);
    EXPECT_TRUE(has_line(mdp3, R"(tickgate_line_packets_total{channel="0",line="snapshot_a"} 0)")) << mdp3;
    for (const std::string* text : {&itch, &qfb1, &mdp3}) {
        if (!expect_promtool_clean(*text, "protocols")) GTEST_SKIP() << kNoPromtool;
    }
}

// Issue 26 item 8: line label values had spaces ("snapshot A"); the one
// spelling (config.hpp line_name) is the config keys', for every consumer.
TEST(Metrics, LineLabelsAreTheLineNamesWithoutSpaces) {
    MetricsRegistry::Snapshot s;
    s.features = features_of<mdp3::Protocol>();
    s.line_count = 6;
    s.lines.resize(6);
    for (std::uint8_t l = 0; l < 6; ++l) {
        s.lines[l].channel = 310;
        s.lines[l].line = l;
        EXPECT_EQ(line_name(l).find(' '), std::string_view::npos) << line_name(l);
    }
    const std::string text = render_prometheus(s);
    for (const char* name : {"A", "B", "snapshot_a", "snapshot_b", "definition_a", "definition_b"})
        EXPECT_TRUE(has_line(text, std::string(R"(tickgate_line_packets_total{channel="310",line=")") + name + "\"} 0"))
            << name << "\n" << text;
}

// Each observation lands in the first bucket whose bound is >= it (a
// bound is inclusive, as Prometheus' le), the rest in +Inf; another
// channel's is ignored; the rendered buckets are cumulative.
TEST(Metrics, LatencyHistogramPutsEachObservationInItsBucketAndRendersCumulatively) {
    const std::uint16_t ids[] = {310, 311};
    LatencyHistograms h(ids);
    h.record(310, 1'000);          // le 1e-06 (inclusive)
    h.record(310, 1'001);          // le 2e-06
    h.record(310, -5);             // clocks apart: 0
    h.record(311, 5'000'000'000);  // beyond the last bound: +Inf
    h.record(999, 1'000);          // not a configured channel
    const auto& c = h.channels();
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].buckets[0].get(), 2u);
    EXPECT_EQ(c[0].buckets[1].get(), 1u);
    EXPECT_EQ(c[0].sum_ns.get(), 2'001u);
    EXPECT_EQ(c[1].buckets[LatencyHistograms::kBuckets - 1].get(), 1u);

    MetricsRegistry registry(4, 0, {.channels = 2});
    const auto storage = registry.storage();
    registry.publish(FeedHandler(loopback_config(1, "239.255.90.9", 39509, "239.255.90.10", 39510)).stats(),
                     {.latency = &h});
    EXPECT_EQ(registry.storage(), storage);
    const std::string text = registry.render();
    EXPECT_TRUE(has_line(text, "# TYPE tickgate_receive_to_book_seconds histogram")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_bucket{channel="310",le="1e-06"} 2)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_bucket{channel="310",le="2e-06"} 3)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_bucket{channel="310",le="+Inf"} 3)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_count{channel="310"} 3)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_bucket{channel="311",le="1"} 0)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_bucket{channel="311",le="+Inf"} 1)")) << text;
    EXPECT_TRUE(has_line(text, R"(tickgate_receive_to_book_seconds_sum{channel="311"} 5)")) << text;
    if (!expect_promtool_clean(text, "histogram")) GTEST_SKIP() << kNoPromtool;
}

// metrics.instruments = "none" keeps no per-instrument room and exports no
// per-instrument series; "subscribed" lists only the booked instruments; a
// protocol's venue hook labels them with the venue's id (MDP3: SecurityID,
// not the dense index) and adds book errors and its channels' figures.
TEST(Metrics, InstrumentSelectionAndVenueIdsAndChannelFigures) {
    Config cfg = loopback_config(7, "239.255.90.5", 39505, "239.255.90.6", 39506);
    cfg.subscribe = {"ESZ5"};
    FeedHandler h(cfg);
    h.start();
    MulticastSender sender;
    const std::int64_t t = realtime_ns();
    PacketBuilder p(7, 1, 1, t);
    p.definition(7, "ESZ5").definition(9, "NQZ5").quote(7, 1, t, 100, 1, 101, 1).quote(9, 1, t, 200, 1, 201, 1);
    ASSERT_TRUE(sender.send(*parse_ipv4("239.255.90.5"), 39505, p.bytes()));
    ASSERT_TRUE(poll_until(h, [&] { return h.instruments().seen_ids().size() == 2; }));

    MetricsRegistry none(h.stats(), {.instruments = MetricsInstruments::kNone});
    EXPECT_EQ(none.storage()[0].instrument_capacity, 0u);
    none.publish(h.stats());
    const std::string n = none.render();
    EXPECT_EQ(n.find("tickgate_instrument_"), std::string::npos) << n;
    EXPECT_TRUE(has_line(n, "tickgate_instruments_seen 2")) << n;

    struct FakeVenue {
        static void instrument(const void*, MetricsRegistry::InstrumentSample& out) noexcept {
            out.venue_id = 100'000 + out.id;
            out.book_errors = out.id;
        }
    };
    const MetricsRegistry::Venue venue{&h, &FakeVenue::instrument};
    // MDP3's channel figures (its channel counter group).
    std::array<ChannelCounterSample, 1> channels{};
    channels[0] = {.channel = 7, .groups = 1u};
    mdp3::ChannelRows::load(VenueChannelCounts{.channel = 7, .packets = 5, .gaps = 2, .lost_packets = 3, .unknown_templates = 4},
                            channels[0].values);
    MetricsRegistry subscribed(h.stats(), {.instruments = MetricsInstruments::kSubscribed,
                                           .channels = 1,
                                           .channel_groups = mdp3::kChannelCounterGroups});
    subscribed.publish(h.stats(), {.venue = &venue, .channel_counters = channels});
    h.stop();
    const std::string m = subscribed.render();
    EXPECT_TRUE(has_line(m, R"(tickgate_instrument_accepted_total{instrument="100007",symbol="ESZ5"} 1)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_instrument_book_errors_total{instrument="100007",symbol="ESZ5"} 7)")) << m;
    EXPECT_EQ(m.find("NQZ5"), std::string::npos) << "not subscribed, not listed:\n" << m;
    EXPECT_EQ(m.find(R"(instrument="7")"), std::string::npos) << "the dense id is not the label:\n" << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_channel_seq_gaps_total{channel="7"} 2)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_channel_lost_packets_total{channel="7"} 3)")) << m;
    EXPECT_TRUE(has_line(m, R"(tickgate_channel_unknown_templates_total{channel="7"} 4)")) << m;
    if (!expect_promtool_clean(m, "venue")) GTEST_SKIP() << kNoPromtool;
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

// Issue 12, finding 8: 32 idle connections used to fill the connection cap
// (the 33rd was closed on accept) for the 10 s read timeout, again on every
// reconnect. Now they only cost sockets, and beyond the cap the oldest go.
TEST(MetricsServer, IdleConnectionsDoNotLockAScraperOut) {
    MetricsRegistry registry(4, 0);
    MetricsServer server(registry, {"127.0.0.1", 0, false});
    server.start();
    for (const std::size_t n : {std::size_t{32}, std::size_t{200}}) {
        IdleConnections idle(server.port(), n);
        ASSERT_EQ(idle.size(), n);
        // Let the server accept them all, so the scrapes really come after them.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        for (int i = 0; i < 3; ++i) {
            Clock::duration took{};
            const HttpResponse r = timed_scrape(server.port(), took);
            EXPECT_EQ(r.status, 200) << n << " idle connections, scrape " << i;
            EXPECT_TRUE(has_line(r.body, "tickgate_metrics_publish_generation 0")) << r.body;
            EXPECT_LT(took, std::chrono::seconds(1)) << n << " idle connections, scrape " << i;
        }
        if (n > MetricsServer::kMaxConnections) {
            // The cap holds by closing the oldest; the first scrape took the
            // place of one more, the later ones found the room it left.
            const std::size_t evicted = n - MetricsServer::kMaxConnections + 1;
            EXPECT_EQ(idle.closed_by_server(0, evicted), evicted);
            EXPECT_EQ(idle.closed_by_server(evicted, n), 0u);
        } else {
            EXPECT_EQ(idle.closed_by_server(0, n), 0u) << "closed before the request deadline";
        }
    }
    EXPECT_EQ(server.requests(), 6u);
}

// Clients trickling a request a byte every 500 ms neither delay a scrape
// nor stay past the request deadline (a per-byte timeout would keep them).
TEST(MetricsServer, SlowLorisClientsDoNotBlockOthersAndAreClosedAtTheRequestDeadline) {
    MetricsRegistry registry(4, 0);
    MetricsServer server(registry, {"127.0.0.1", 0, false});
    server.start();
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + std::string(100, 'x');
    constexpr int kLorises = 8;
    std::vector<int> lorises;
    for (int i = 0; i < kLorises; ++i)
        if (const int fd = connect_loopback(server.port()); fd >= 0) lorises.push_back(fd);
    ASSERT_EQ(lorises.size(), std::size_t{kLorises});
    const auto start = Clock::now();
    std::vector<Clock::duration> closed_after(lorises.size(), Clock::duration::zero());
    const auto limit = start + MetricsServer::kRequestDeadline + std::chrono::seconds(2);
    for (std::size_t byte = 0; byte < request.size() && Clock::now() < limit; ++byte) {
        for (std::size_t i = 0; i < lorises.size(); ++i) {
            if (closed_after[i] != Clock::duration::zero()) continue;
            if (IdleConnections::closed_by_peer(lorises[i])) {
                closed_after[i] = Clock::now() - start;
                continue;
            }
            (void)::send(lorises[i], &request[byte], 1, MSG_NOSIGNAL);
        }
        Clock::duration took{};
        EXPECT_EQ(timed_scrape(server.port(), took).status, 200) << "while the slow clients were at byte " << byte;
        EXPECT_LT(took, std::chrono::seconds(1));
        if (std::all_of(closed_after.begin(), closed_after.end(),
                        [](Clock::duration d) { return d != Clock::duration::zero(); }))
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    for (std::size_t i = 0; i < lorises.size(); ++i) {
        ::close(lorises[i]);
        EXPECT_NE(closed_after[i], Clock::duration::zero()) << "slow client " << i << " still open";
        // Noticed at a 500 ms step, hence the margin.
        EXPECT_GE(closed_after[i], MetricsServer::kRequestDeadline - std::chrono::milliseconds(100));
        EXPECT_LE(closed_after[i], MetricsServer::kRequestDeadline + std::chrono::milliseconds(1000));
    }
}

TEST(MetricsServer, OnlyGetAndHeadAreAllowedAndOnlyMetricsIsFound) {
    MetricsRegistry registry(4, 0);
    MetricsServer server(registry, {"127.0.0.1", 0, false});
    server.start();
    for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
        const HttpResponse r = http_get(server.port(), "/metrics", method);
        EXPECT_EQ(r.status, 405) << method;
        EXPECT_NE(lower(r.headers).find("\r\nallow: get, head"), std::string::npos) << method << "\n" << r.headers;
    }
    EXPECT_EQ(http_get(server.port(), "/metrics").status, 200);
    EXPECT_EQ(http_get(server.port(), "/metrics?x=1").status, 200);
    EXPECT_EQ(http_get(server.port(), "/metrics", "HEAD").status, 200);
    EXPECT_EQ(http_get(server.port(), "/nope").status, 404);
    EXPECT_EQ(http_get(server.port(), "/").status, 404);
    EXPECT_EQ(server.requests(), 10u);
}

}  // namespace
}  // namespace tickgate
