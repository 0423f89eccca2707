// `tickgate capture`: the configured lines' datagrams, kernel-timestamped, to pcap/pcapng.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/receiver.hpp"

#include "command.hpp"

namespace tickgate::cli {

namespace {

constexpr std::string_view kCaptureHelp = R"(usage: tickgate capture --config FILE --out FILE [options]

Writes every datagram received on the configured lines, with its kernel
receive timestamp, to a capture that `tickgate replay` reads back. The file
is flushed at least once a second, so it can be read while the capture runs
and a crash loses at most the last second.

options:
  --config FILE        TOML config (required)
  --protocol NAME      must match the config's channels' protocol (%PROTOCOLS%); a header
                       that names its channel (QFB/1's) tells a datagram naming another channel
                       than its line's, which is not recorded; itch50: every datagram of the lines
  --out FILE           output capture (required)
  --format F           pcap (nanosecond, default) or pcapng
  --duration S         stop after S seconds, a decimal number (default: until SIGINT/SIGTERM)
  -h, --help           this text

A file that cannot be created or written is a runtime failure (exit 1).
)";


}  // namespace

int cmd_capture(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {}, {"--config", "--protocol", "--out", "--duration", "--format"}, "capture");
    if (a.help()) {
        fmt::print("{}", help_text(kCaptureHelp));
        return kExitOk;
    }
    require_no_positional(a, "capture");
    const Config cfg = config_from(a, true);
    require_channels(cfg, "capture");
    const auto out = a.text("--out");
    if (!out) throw UsageError{"capture: --out FILE is required"};
    const std::string fmt_name = a.text("--format").value_or("pcap");
    CaptureFormat format;
    if (fmt_name == "pcap") format = CaptureFormat::kPcapNano;
    else if (fmt_name == "pcapng") format = CaptureFormat::kPcapng;
    else throw UsageError{"--format: expected pcap or pcapng, got '" + fmt_name + "'"};
    const double duration = a.decimal("--duration", 0, 0, 1e9);

    Receiver receiver(cfg);
    say_receiver_warnings(receiver, "capture");
    // A capture records the venue as it is, MDP3's snapshot feed included
    // (the live handler joins it only while an instrument needs it).
    const auto every_snapshot_feed = std::make_unique<std::atomic<bool>[]>(cfg.channels.size());
    for (std::size_t i = 0; i < cfg.channels.size(); ++i) every_snapshot_feed[i].store(true);
    receiver.follow_snapshot_wants({every_snapshot_feed.get(), cfg.channels.size()});
    CaptureWriter writer(*out, format);
    install_signal_handlers();
    std::uint64_t written = 0;
    // stdio's buffer alone would hold the last few KiB until exit: a reader of
    // the running capture saw nothing, a crash lost it. One flush a second,
    // from this loop (polls wake at least every 50 ms), not one per datagram.
    constexpr auto kFlushEvery = std::chrono::seconds(1);
    const auto t0 = std::chrono::steady_clock::now();
    auto next_flush = t0 + kFlushEvery;
    // The protocol's key, read once per datagram: one naming another channel
    // than its line's is not recorded (rule 7). Chosen once, outside the loop.
    // P = void (ITCH: MoldUDP64 names no channel): every datagram of the lines.
    const auto record = [&]<class P>() {
        while (!g_stop.load(std::memory_order_relaxed)) {
            const auto now = std::chrono::steady_clock::now();
            if (duration > 0 && now - t0 >= std::chrono::duration<double>(duration)) break;
            if (now >= next_flush) {
                writer.flush();
                next_flush = now + kFlushEvery;
            }
            receiver.poll_once<P>(50'000'000, [&](const RawDatagram& d, const auto&...) {
                writer.write_udp(d.recv_ns, d.src_ip, d.src_port, d.dst_ip, d.dst_port, d.payload);
                ++written;
            });
        }
    };
    with_protocol(cfg.protocol(), [&]<VenueProtocol P>() { record.operator()<P>(); });
    writer.flush();
    fmt::print(stderr, "capture: {} datagrams written to {}\n", written, *out);
    return kExitOk;
}

}  // namespace tickgate::cli
