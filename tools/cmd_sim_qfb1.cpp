// `tickgate sim` for QFB/1 (feed/qfb1/simulator.hpp): its command line,
// registered as qfb1's simulator (command.hpp). `cmd_sim.cpp` dispatches to
// it, by --protocol qfb1, a --config of qfb1 channels, or neither (QFB/1 is
// the reference protocol).
#include <fmt/format.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/qfb1/simulator.hpp"

#include "command.hpp"
#include "sim_options.hpp"

namespace tickgate {

namespace {

// --protocol's line: this one, then the other simulators registered and where their help is.
std::string protocol_line() {
    std::string names, see;
    for (const std::string_view p : cli::simulated_protocols()) {
        if (p == qfb1::Protocol::kName) continue;
        names += (names.empty() ? "" : ", ") + std::string(p);
        see += fmt::format("{}`tickgate sim --protocol {} --help`", see.empty() ? "" : ", ", p);
    }
    const std::string self = fmt::format("{}, the protocol it simulates (the default)", qfb1::Protocol::kName);
    return names.empty() ? self : fmt::format("{}; {}: see\n                         {}", self, names, see);
}

std::string help_text() {
    const SimOptions d;
    return fmt::format(R"(usage: tickgate sim [options]

Publishes QFB/1 for N instruments on both lines (A, B) of one channel on
loopback multicast (IP_MULTICAST_IF 127.x, TTL 0, loop on), paced on a fixed
schedule, deterministic from --seed; then prints the ground truth as JSON on
stdout. Odd ids send full quotes (Q), even ids depth deltas (D) with
snapshots (S); all get definitions (I) and heartbeats (H).

channel:
  --protocol NAME        {}
  --config FILE          take the lines from a tickgate TOML config (default: none)
  --channel ID           channel id; with --config, the channel to use (default {} / the first)
  --group-a ADDR         line A group (default {})
  --port-a N             line A port (default {})
  --group-b ADDR         line B group (default {})
  --port-b N             line B port (default {})
  --interface ADDR       sending interface of both lines, 127.x only (default {})
traffic:
  --instruments N        instruments 1..N, symbols SIM001.. (default {})
  --rate R               ticks (Q/D) per second (default {})
  --duration S           seconds of traffic (default {})
  --messages N           total ticks instead of --duration (default: rate * duration)
  --batch N              ticks per packet, 1..28 (default {})
  --heartbeat-ms N       heartbeat period (default {})
  --snapshot-ms N        snapshot period of delta instruments (default {})
  --definition-ms N      definition period (default {})
  --seed N               random seed (default {})
  --session N            first session number (default {})
faults (all off by default):
  --loss-a P             per-packet loss probability on line A (default 0)
  --loss-b P             per-packet loss probability on line B (default 0)
  --burst-loss P:LEN     with probability P per packet, LEN packets lost on both lines (default off)
  --outage-a FROM:TO     line A carries nothing from fraction FROM to TO of the run (repeatable; default none)
  --outage-b FROM:TO     the same for line B
  --surge F:T:X          overload: ticks between fractions F and T of the run go out X times faster (default off)
  --dup P                a line sends the packet twice (default 0)
  --reorder P            a line sends the packet after the next one (default 0)
  --restart-at F         publisher restart at fraction F of the run: session + 1, seqs restart
                         at 1, one late old-session packet on line B (default off)
  --lagging-snapshots    snapshots lag the deltas by 1..3 messages (default off)
  --quiet ID             instrument ID stops ticking halfway, keeps heartbeats (repeatable; default none)
  --silence ID           instrument ID stops everything halfway (repeatable; default none)
output:
  --pcap FILE            write both lines to a ns pcap instead of sending (no pacing; default: send)
  --epoch-ns N           with --pcap: Unix ns of time 0 (default {})
  -h, --help             this text

exit codes: 0 ok, 1 runtime failure, 2 bad usage
)",
                       protocol_line(), d.channel, d.group_a, d.port_a, d.group_b, d.port_b, d.interface_a, d.instruments, d.rate,
                       d.duration_s, d.batch, d.heartbeat_ms, d.snapshot_ms, d.definition_ms, d.seed, d.session,
                       d.epoch_ns);
}

// The channel and its lines: --config's channel (--channel, else the
// first), then each line option given on top of it.
void read_lines(const cli::Options& opt, SimOptions& o) {
    if (const std::optional<ChannelConfig> ch = cli::sim_config_channel(opt, qfb1::Protocol::kName)) {
        o.channel = ch->id;
        o.group_a = ch->a.group, o.port_a = ch->a.port, o.interface_a = ch->a.interface;
        o.group_b = ch->b.group, o.port_b = ch->b.port, o.interface_b = ch->b.interface;
    }
    cli::read_sim_line_options(opt, o);
}

int run(const std::vector<std::string_view>& args) {
    const cli::Options opt(args, {"--lagging-snapshots"},
                           {"--config", "--channel", "--group-a", "--port-a", "--group-b", "--port-b", "--interface",
                            "--instruments", "--rate", "--duration", "--messages", "--batch", "--heartbeat-ms",
                            "--snapshot-ms", "--definition-ms", "--seed", "--session", "--loss-a", "--loss-b",
                            "--burst-loss", "--outage-a", "--outage-b", "--surge", "--dup", "--reorder",
                            "--restart-at", "--quiet", "--silence", "--pcap", "--epoch-ns", "--protocol"},
                           "sim");
    if (opt.help()) {
        fmt::print("{}", help_text());
        return 0;
    }
    cli::require_no_positional(opt, "sim");
    SimOptions o;
    cli::read_sim_traffic(opt, o);
    cli::read_sim_faults(opt, o);
    read_lines(opt, o);
    cli::as_usage_error([&] { o.validate(); });

    const std::optional<std::string> pcap = opt.text("--pcap");
    const GroundTruth gt = pcap ? simulate_to_capture(o, *pcap) : simulate_to_sockets(o);
    fmt::print(stderr,
               "sim: session {}, {} packets ({} msgs) in {:.3f} s scheduled; line A sent {} dropped {}, line B sent {} "
               "dropped {}, both dropped {}{}\n",
               gt.final_session, gt.packets, gt.messages, static_cast<double>(gt.duration_ns) / 1e9, gt.sent_a,
               gt.dropped_a, gt.sent_b, gt.dropped_b, gt.dropped_both,
               pcap ? fmt::format("; wrote {}", *pcap)
                    : fmt::format("; send errors {}, max late {:.1f} us", gt.send_errors, gt.max_late_ns / 1e3));
    fmt::print("{}", gt.to_json());
    return 0;
}

// The protocol `tickgate sim` runs without --protocol or --config (its help says "the default").
static_assert(ReferenceProtocol::kName == qfb1::Protocol::kName);

const cli::RegisterProtocolCli kRegistered{{.protocol = qfb1::Protocol::kName, .sim = run}};

}  // namespace

}  // namespace tickgate
