// `tickgate send`: a capture's multicast datagrams re-published on loopback, paced.
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/moldudp64/wire.hpp"
#include "tickgate/feed/sender.hpp"

#include "command.hpp"

namespace tickgate::cli {

namespace {

constexpr std::string_view kSendHelp = R"(usage: tickgate send [options] CAPTURE

Re-publishes the capture's UDP datagrams addressed to multicast groups on
loopback (interface 127.0.0.1, TTL 0), to the same group:port, with the
original pacing. SIGINT/SIGTERM stop it at once, even in a long wait between
two records (exit 0). A capture cut short mid-record is sent up to the cut,
then a warning and exit code 3.

options:
  --speed X            pacing multiplier, a decimal number (default 1.0: original pacing; 2 = twice as fast)
  --max-speed          as fast as possible
  --interface ADDR     loopback address to send from (default 127.0.0.1; only 127.x allowed)
  --protocol NAME      the capture's protocol (%PROTOCOLS%; default %REFERENCE%): datagrams without a readable
                       header are still sent, and counted in the closing line
  -h, --help           this text
)";


}  // namespace

int cmd_send(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--max-speed"}, {"--speed", "--interface", "--protocol"}, "send");
    if (a.help()) {
        fmt::print("{}", help_text(kSendHelp));
        return kExitOk;
    }
    if (a.positional().size() != 1) throw UsageError{"send takes exactly one CAPTURE"};
    const double speed = a.decimal("--speed", 1.0, 0.000001, 1e9);
    const bool max_speed = a.has("--max-speed");
    MulticastSender sender(a.loopback_address("--interface", "127.0.0.1"));
    const Config cfg = config_from(a, false);  // its protocol: what `unreadable` counts against
    // Chosen once: whether a datagram's header reads as the protocol's.
    bool (*const readable)(std::span<const std::byte>) = with_protocol(cfg.protocol(), []<VenueProtocol P>() {
        return +[](std::span<const std::byte> d) { return P::read_key(d, 0).valid(); };
    });
    CaptureReader reader(a.positional().front());
    install_signal_handlers();
    FrameCounters frames;
    std::uint64_t sent = 0, skipped = 0, unreadable = 0;
    std::int64_t first_ts = 0;
    bool started = false;
    const auto t0 = std::chrono::steady_clock::now();
    while (!g_stop.load(std::memory_order_relaxed)) {
        const auto rec = reader.next();
        if (!rec) break;
        const auto d = extract_udp(reader.link_type(), rec->frame, frames);
        if (!d) continue;
        if (!is_multicast(d->dst_ip)) {  // only multicast groups are re-published
            ++skipped;
            continue;
        }
        if (!started) {
            first_ts = rec->ts_ns;
            started = true;
        }
        if (!max_speed) {
            const auto due = t0 + std::chrono::nanoseconds(
                                      static_cast<std::int64_t>(static_cast<double>(rec->ts_ns - first_ts) / speed));
            if (!sleep_until_or_signal(due)) break;
        }
        // Sent as captured, readable or not (a test feed may be hostile on purpose); counted.
        unreadable += !readable(d->payload);
        sent += sender.send(d->dst_ip, d->dst_port, d->payload) ? 1 : 0;
    }
    fmt::print(stderr,
               "send: {} datagrams sent ({} without a readable {} header), {} not multicast skipped, {} frames not "
               "UDP/IPv4\n",
               sent, unreadable, cfg.protocol(), skipped, frames.non_ip + frames.non_udp + frames.fragments + frames.truncated);
    if (reader.truncation()) {
        warn_cut_short(a.positional().front(), *reader.truncation(), "sent");
        return kExitCaptureCut;
    }
    return kExitOk;
}

}  // namespace tickgate::cli
