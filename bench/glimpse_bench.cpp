// GLIMPSE 5.0 snapshot recovery (issue 23), over SoupBinTCP on loopback:
// a spin of ORDERS orders over 1,000 stocks, served by the simulator's
// GlimpseServer on 127.0.0.1, loaded by the GlimpseClient's thread into its
// fixed storage, then applied on this (the engine's) thread by
// ReplayFront::apply_snapshot: the snapshot router and the rules the live
// pipelines run (the front's router sends the spin down, the engine's
// rules book it). Per round:
//   load rate  = orders / (engine asks -> the client has `M`), orders/s;
//   M -> clean = the engine seeing `M` -> the books replaced and the first
//                safe_quote answering ok (the engine thread's stall).
// Median and percentiles over ROUNDS rounds (not a test: speed is shown here).
//
// usage: glimpse_bench [ORDERS] [ROUNDS]   (default 1000000, 9)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common.hpp"
#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/itch50/glimpse_client.hpp"
#include "tickgate/feed/itch50/glimpse_server.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/itch50/replay.hpp"

using namespace tickgate;
using namespace tickgate::itch50;

namespace {

constexpr std::uint16_t kStocks = 1000;
constexpr const char* kSession = "BENCH00001";

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0;
    const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

std::string symbol(std::uint16_t locate) { return fmt::format("S{}", locate); }

// The spin: S, one R per stock, then `orders` adds spread over the stocks
// and 50 price levels a side, stamped with the venue time of day now (UTC).
GlimpseSpin make_spin(std::uint64_t orders, std::int64_t tod_ns) {
    GlimpseSpin s;
    s.messages.reserve(orders + kStocks + 1);
    s.messages.push_back(system_event('Q', tod_ns));
    for (std::uint16_t l = 1; l <= kStocks; ++l) s.messages.push_back(stock_directory(l, symbol(l), tod_ns));
    for (std::uint64_t r = 1; r <= orders; ++r) {
        const auto locate = static_cast<std::uint16_t>(1 + r % kStocks);
        const bool bid = (r / kStocks) % 2 == 0;
        const auto level = static_cast<std::uint32_t>((r / (2 * kStocks)) % 50);
        s.messages.push_back(add_order(locate, r, bid ? 'B' : 'S', 100, bid ? 100'000 - level * 100 : 100'100 + level * 100, tod_ns));
    }
    s.next_position = 2;  // the stream's position 1 (below) is reflected
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    const std::uint64_t orders = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
    if (orders == 0 || rounds <= 0) {
        std::fprintf(stderr, "usage: %s [ORDERS] [ROUNDS]\n", argv[0]);
        return 2;
    }
    const bench::MachineInfo m = bench::machine_info();
    std::printf("glimpse_bench: %llu orders over %u stocks, %d rounds; %s, %u cores, %s\n",
                static_cast<unsigned long long>(orders), kStocks, rounds, m.cpu.c_str(), m.cores, m.kernel.c_str());

    const std::int64_t tod = realtime_ns() % kNsPerDay;
    const GlimpseSpin spin = make_spin(orders, tod);
    GlimpseSpin pending;  // the next round's copy, made off the clock
    GlimpseServerOptions so;
    so.username = "bench";
    so.password = "bench-pw";
    GlimpseServer server(so, [&pending] { return std::move(pending); });

    ::setenv("TICKGATE_BENCH_GLIMPSE_PW", "bench-pw", 1);
    std::uint64_t max_orders = 1;
    while (max_orders < orders + 1024) max_orders <<= 1;
    const Config cfg = parse_config(
        fmt::format("[itch]\nmax_orders = {}\nmax_levels = 262144\nutc_offset_minutes = 0\n"
                    "[gate]\nstale_ms = 60000\nsource_age_ms = 600000\n"
                    "[glimpse]\nusername = \"bench\"\npassword_env = \"TICKGATE_BENCH_GLIMPSE_PW\"\n"
                    "[[channel]]\nid = 1\nprotocol = \"itch50\"\nglimpse = \"127.0.0.1:{}\"\n"
                    "a = {{ group = \"239.255.44.1\", port = 31441 }}\nb = {{ group = \"239.255.44.2\", port = 31442 }}\n",
                    max_orders, server.port()),
        "glimpse_bench.toml");
    Replay replay(cfg);
    GlimpseClient client(cfg);
    // The stream's session: position 1 seen, so the snapshot continues a known stream at 2.
    const std::vector<Bytes> first{system_event('O', tod)};
    replay.front().deliver(mold_packet(kSession, 1, first), 0xEFFF2C01, 31441, realtime_ns());

    std::vector<double> rate, load_ms, clean_ms;
    std::uint64_t loaded = 0;
    for (int r = 0; r < rounds; ++r) {
        pending = spin;
        replay.front().begin_snapshot(0);
        const std::int64_t t0 = bench::mono_ns();
        client.start(0, t0 + 120'000'000'000);
        GlimpseClient::State st;
        while ((st = client.state()) != GlimpseClient::State::kReady && st != GlimpseClient::State::kFailed) {
        }
        const std::int64_t t_m = bench::mono_ns();
        if (st == GlimpseClient::State::kFailed) {
            std::fprintf(stderr, "glimpse_bench: round %d: the snapshot failed (%s)\n", r,
                         kSnapshotFailureText[static_cast<std::size_t>(client.outcome().failure)]);
            return 1;
        }
        const SnapshotApplied a = replay.front().apply_snapshot(0, client.storage(), realtime_ns());
        const auto h = replay.handler().find(symbol(1));
        const bool ok = h && replay.handler().safe_quote(*h, realtime_ns()).ok();
        const std::int64_t t_clean = bench::mono_ns();
        client.release();
        if (!ok || a.orders != orders || a.still_suspect) {
            std::fprintf(stderr, "glimpse_bench: round %d: %llu orders applied, quote %s\n", r,
                         static_cast<unsigned long long>(a.orders), ok ? "ok" : "not ok");
            return 1;
        }
        loaded = a.orders;
        load_ms.push_back(static_cast<double>(t_m - t0) / 1e6);
        rate.push_back(static_cast<double>(orders) / (static_cast<double>(t_m - t0) / 1e9));
        clean_ms.push_back(static_cast<double>(t_clean - t_m) / 1e6);
        std::printf("  round %d: load %.1f ms (%.2f M orders/s), M -> clean %.1f ms\n", r, load_ms.back(),
                    rate.back() / 1e6, clean_ms.back());
    }
    std::printf("orders per snapshot: %llu (open in the book after each: %zu)\n", static_cast<unsigned long long>(loaded),
                replay.handler().book().open_orders());
    std::printf("%-28s %10s %10s %10s %10s\n", "figure", "median", "p10", "p90", "max");
    std::printf("%-28s %10.2f %10.2f %10.2f %10.2f\n", "load rate (M orders/s)", bench::median(rate) / 1e6,
                percentile(rate, 10) / 1e6, percentile(rate, 90) / 1e6, percentile(rate, 100) / 1e6);
    std::printf("%-28s %10.1f %10.1f %10.1f %10.1f\n", "spin load (ms)", bench::median(load_ms), percentile(load_ms, 10),
                percentile(load_ms, 90), percentile(load_ms, 100));
    std::printf("%-28s %10.1f %10.1f %10.1f %10.1f\n", "M -> first clean (ms)", bench::median(clean_ms),
                percentile(clean_ms, 10), percentile(clean_ms, 90), percentile(clean_ms, 100));
    return 0;
}
