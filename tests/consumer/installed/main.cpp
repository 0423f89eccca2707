// Installed-package consumer: builds a QFB/1 datagram with PacketBuilder,
// feeds it to a Handler and checks decode, book and gate. Also touches code
// that pulls tickgate_feed's private dependencies into the link (toml++ via
// parse_config, libpcap via CaptureReader). Exit 0 on success, 1 otherwise.
#include <tickgate/feed/capture.hpp>
#include <tickgate/feed/qfb1/packet_builder.hpp>
#include <tickgate/feed/config.hpp>
#include <tickgate/book/gate.hpp>
#include <tickgate/feed/handler.hpp>
#include <tickgate/fanout/consumer.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok) ++failures;
}

}  // namespace

int main() {
    constexpr std::int64_t kMs = 1'000'000;
    constexpr std::int64_t kT0 = 1'700'000'000'000 * kMs;
    constexpr std::uint32_t kId = 2;

    // Config from TOML text (tomlplusplus, private to tickgate_feed).
    const tickgate::Config cfg = tickgate::parse_config(
        "[gate]\nstale_ms = 100\nsource_age_ms = 1000\n"
        "[capacity]\nmax_instruments = 8\nbook_depth = 4\nrecovery_depth = 16\nrecovery_instruments = 2\n",
        "consumer.toml");
    expect(cfg.gate.stale_ms == 100 && cfg.capacity.max_instruments == 8, "parse_config");

    tickgate::Handler h(cfg.capacity, cfg.gate);
    tickgate::PacketBuilder pb(/*channel=*/1, /*session=*/1, /*packet_seq=*/1, /*send_ns=*/kT0);
    pb.definition(kId, "EURUSD").quote(kId, /*seq=*/1, /*source_ns=*/kT0, 100, 5, 101, 7);

    const tickgate::qfb1::DecodeResult r = h.on_datagram(pb.bytes(), kT0);
    expect(r.verdict == tickgate::qfb1::PacketVerdict::kDecoded && r.messages == 2, "datagram decoded");

    const auto bids = h.book().side(kId, tickgate::Side::kBid);
    const auto asks = h.book().side(kId, tickgate::Side::kAsk);
    expect(bids.size() == 1 && bids[0].price == 100 && bids[0].qty == 5, "bid 100 x 5");
    expect(asks.size() == 1 && asks[0].price == 101 && asks[0].qty == 7, "ask 101 x 7");

    const tickgate::GateDecision fresh = h.gate().check(kId, kT0 + 10 * kMs);
    expect(fresh.ok() && fresh.silence_ms == 10, "gate ok after 10 ms");
    expect(tickgate::to_string(fresh.reason) == "ok", "to_string(kOk)");
    expect(h.gate().check(kId, kT0 + 500 * kMs).reason == tickgate::GateReason::kStale, "gate stale after 500 ms");
    expect(h.gate().check(kId + 1, kT0).reason == tickgate::GateReason::kUnknown, "unknown id");

    // libpcap (private to tickgate_feed): a missing file is a CaptureError.
    bool threw = false;
    try {
        tickgate::CaptureReader reader((std::filesystem::temp_directory_path() /
                                        "tickgate-consumer-no-such-file.pcap").string());
    } catch (const tickgate::CaptureError&) {
        threw = true;
    }
    expect(threw, "CaptureReader rejects a missing file");

    // tickgate::fanout (libnats, private to it): a record through the consumer's rules,
    // and a Consumer that finds no server is a clear error, not a hang.
    tickgate::fanout::Record rec;
    rec.session = 1;
    rec.seq = 1;
    rec.verdict = tickgate::GateReason::kOk;
    std::byte wire[tickgate::fanout::kMaxRecordBytes];
    tickgate::fanout::Tracker tracker;
    const auto n = tickgate::fanout::write_record(rec, wire);
    expect(tracker.on_live("tickgate.qfb1.1.X", std::span(wire, n)) == tickgate::fanout::Applied::kTaken &&
               tracker.find("tickgate.qfb1.1.X")->tradeable(),
           "fan-out record taken, tradeable");
    bool refused = false;
    try {
        tickgate::fanout::ConsumerOptions o;
        o.servers = {"nats://127.0.0.1:1"};
        tickgate::fanout::Consumer c(o, {"tickgate.>"});
    } catch (const std::runtime_error&) {
        refused = true;
    }
    expect(refused, "fan-out consumer without a server throws");

    std::printf("%s\n", failures == 0 ? "installed consumer: PASS" : "installed consumer: FAIL");
    return failures == 0 ? 0 : 1;
}
