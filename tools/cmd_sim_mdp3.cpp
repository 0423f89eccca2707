// MDP3's additions to the command line, registered for mdp3 (command.hpp):
// `tickgate sim --protocol mdp3`, the MDP 3.0 simulator's command line
// (feed/mdp3/simulator.hpp), and `tickgate config import-cme`, channels from
// CME's config.xml (feed/mdp3/cme_config.hpp). Both are here, not in two
// files, because a protocol's CLI entry is one registration: one file of
// tools/ holds all that the shared commands take from a protocol.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "feed/mdp3/cme_config.hpp"
#include "tickgate/feed/capture.hpp"  // parse_ipv4
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/mdp3/protocol.hpp"
#include "tickgate/feed/mdp3/simulator.hpp"
#include "tickgate/text.hpp"

#include "command.hpp"
#include "sim_options.hpp"

namespace tickgate {

namespace {

std::string help_text() {
    const mdp3::SimOptions d;
    const SimOptions& f = d.feed;
    const auto line = [](const mdp3::SimLine& l) { return fmt::format("{}:{}", l.group, l.port); };
    return fmt::format(R"(usage: tickgate sim --protocol mdp3 [options]

Publishes one CME MDP 3.0 channel (schema version 9) on loopback multicast
(IP_MULTICAST_IF 127.x, TTL 0, loop on), paced on a fixed schedule,
deterministic from --seed; then prints the ground truth as JSON on stdout:
instrument definitions (54) looping on the definition lines, MBP-10 book
updates (46: New, Change, Delete, DeleteFrom, DeleteThru), trade summaries
(48), daily statistics (49) and heartbeats (12) on the incremental lines A
and B, and a snapshot loop (52: every instrument's current book and RptSeq)
on the snapshot lines. After a packet lost on both lines, the next packets
carry an entry of every instrument that lost one and no snapshot goes out
for 2 ms more, so that the loss is countable (see feed/mdp3/simulator.cpp).

channel:
  --config FILE          take the lines from a tickgate TOML config's mdp3 channel (default: none)
  --channel ID           with --config, the channel to use (default: the first)
  --group-a ADDR --port-a N   incremental line A (default {})
  --group-b ADDR --port-b N   incremental line B (default {})
  --snapshot-a GROUP:PORT     snapshot line A (default {})
  --snapshot-b GROUP:PORT     snapshot line B (default {})
  --definition-a GROUP:PORT   definition line A (default {})
  --definition-b GROUP:PORT   definition line B (default {})
  --interface ADDR       sending interface of every line, 127.x only (default {})
traffic:
  --instruments N        SecurityIDs 100001.., symbols SIM001.. (default {})
  --rate R               sequenced entries per second (default {})
  --duration S           seconds of incremental traffic (default {})
  --messages N           total entries instead of --duration (default: rate * duration)
  --batch N              entries per incremental packet, 1..28 (default {})
  --heartbeat-ms N       heartbeat period (default {})
  --snapshot-ms N        one cycle of the snapshot loop over every instrument (default {})
  --definition-ms N      one cycle of the definition loop (default {})
  --tail-cycles N        snapshot cycles sent after the last incremental packet (default {})
  --seed N               random seed (default {})
faults, incremental lines only (all off by default):
  --loss-a P, --loss-b P, --burst-loss P:LEN, --outage-a FROM:TO, --outage-b FROM:TO,
  --dup P, --reorder P   as for QFB/1 (tickgate sim --help)
  --restart-at F         publisher restart at fraction F of the run: MsgSeqNum back to 1 (a new
                         session); books and RptSeq go on
output:
  --pcap FILE            write every line to a ns pcap instead of sending (no pacing; default: send)
  --epoch-ns N           with --pcap: Unix ns of time 0 (default {})
  -h, --help             this text

exit codes: 0 ok, 1 runtime failure, 2 bad usage
)",
                       f.group_a + ":" + std::to_string(f.port_a), f.group_b + ":" + std::to_string(f.port_b),
                       line(d.snapshot_a), line(d.snapshot_b), line(d.definition_a), line(d.definition_b),
                       f.interface_a, f.instruments, f.rate, f.duration_s, f.batch, f.heartbeat_ms, f.snapshot_ms,
                       f.definition_ms, d.tail_cycles, f.seed, f.epoch_ns);
}

// The config's channel (with its snapshot and definition lines), then each line option on top.
void read_lines(const cli::Options& opt, mdp3::SimOptions& o) {
    if (const std::optional<ChannelConfig> ch = cli::sim_config_channel(opt, mdp3::Protocol::kName)) o.use_channel(*ch);
    cli::read_sim_line_options(opt, o.feed);
    const std::pair<std::string_view, mdp3::SimLine*> lines[] = {{"--snapshot-a", &o.snapshot_a},
                                                                  {"--snapshot-b", &o.snapshot_b},
                                                                  {"--definition-a", &o.definition_a},
                                                                  {"--definition-b", &o.definition_b}};
    for (const auto& [name, line] : lines) {
        if (const auto v = opt.text(name)) {
            const auto p = cli::parse_parts(name, *v, 2, "GROUP:PORT");
            line->group = std::string(p[0]);
            line->port = static_cast<std::uint16_t>(cli::parse_integer(name, p[1], 1, 65535));
        }
        if (opt.has("--interface")) line->interface = o.feed.interface_a;
    }
}

int sim_mdp3(const std::vector<std::string_view>& args) {
    const cli::Options opt(args, {"--lagging-snapshots"},
                           {"--config", "--channel", "--group-a", "--port-a", "--group-b", "--port-b", "--snapshot-a",
                            "--snapshot-b", "--definition-a", "--definition-b", "--interface", "--instruments", "--rate",
                            "--duration", "--messages", "--batch", "--heartbeat-ms", "--snapshot-ms", "--definition-ms",
                            "--tail-cycles", "--seed", "--session", "--loss-a", "--loss-b", "--burst-loss", "--outage-a",
                            "--outage-b", "--surge", "--dup", "--reorder", "--restart-at", "--quiet", "--silence",
                            "--pcap", "--epoch-ns", "--protocol"},
                           "sim");
    if (opt.help()) {
        fmt::print("{}", help_text());
        return 0;
    }
    cli::require_no_positional(opt, "sim");
    mdp3::SimOptions o;
    // QFB/1-only options are read too, so that validate() names them.
    cli::read_sim_traffic(opt, o.feed);
    cli::read_sim_faults(opt, o.feed);
    cli::as_usage_error([&] { read_lines(opt, o); });  // a config channel without snapshot or definition lines
    o.tail_cycles = static_cast<std::uint32_t>(opt.integer("--tail-cycles", o.tail_cycles, 0, 1000));
    cli::as_usage_error([&] { o.validate(); });
    const std::optional<std::string> pcap = opt.text("--pcap");
    const GroundTruth gt = pcap ? mdp3::simulate_to_capture(o, *pcap) : mdp3::simulate_to_sockets(o);
    fmt::print(stderr,
               "sim mdp3: {} sessions, {} incremental packets ({} msgs), {} snapshot and {} definition packets in "
               "{:.3f} s scheduled; line A sent {} dropped {}, line B sent {} dropped {}, both dropped {}{}\n",
               gt.final_session, gt.packets, gt.messages, gt.snapshot_packets, gt.definition_packets,
               static_cast<double>(gt.duration_ns) / 1e9, gt.sent_a, gt.dropped_a, gt.sent_b, gt.dropped_b,
               gt.dropped_both,
               pcap ? fmt::format("; wrote {}", *pcap)
                    : fmt::format("; send errors {}, max late {:.1f} us", gt.send_errors, gt.max_late_ns / 1e3));
    fmt::print("{}", gt.to_json());
    return 0;
}

// ---- `tickgate config import-cme CONFIG.XML --channels ...`

constexpr std::string_view kImportCmeHelp = R"(Writes a tickgate [[channel]] table (protocol "mdp3") for each CME channel
named, from CME Globex's published config.xml: incremental feeds as lines
a/b, snapshot feeds as snapshot_a/b, instrument replay as definition_a/b,
each line with its own connection's host-ip as its `sources`. TCP
historical replay and MBO snapshot feeds are left out (not implemented).
Writes only what `config check` and `run` accept: exit 2 with FILE:LINE: ...
for a file that is not CME's layout, a channel it lacks or asked twice, a
host-ip that is no unicast host (0.0.0.0, 224.0.0.0 and up) or listed twice,
more host-ips on a connection than the kernel lets a socket join
(net.ipv4.igmp_max_msf, read now; --any-source joins without them), or a
group:port that two imported feeds share.
)";

constexpr std::string_view kImportCmeOptionsHelp = R"(  --channels ID[,ID...]  CME channel ids, e.g. 310,344 (required)
  --interface ADDR       local IPv4 address that joins every line (default 127.0.0.1)
  --any-source           leave `sources` out (accept the groups from any sender)
  --output FILE          write the TOML there instead of stdout
)";

int import_cme(const cli::Options& a) {
    using cli::UsageError;
    const std::string& path = a.positional()[1];
    const auto channels = a.text("--channels");
    if (!channels) throw UsageError{"config import-cme: --channels ID[,ID...] is required"};
    mdp3::CmeImportOptions options;
    for (std::size_t from = 0; from <= channels->size();) {
        const std::size_t comma = std::min(channels->find(',', from), channels->size());
        const auto id = cli::parse_integer("--channels", std::string_view(*channels).substr(from, comma - from), 0, 65535);
        options.channels.push_back(static_cast<std::uint16_t>(id));
        from = comma + 1;
    }
    if (const auto interface = a.text("--interface")) {
        // What config.cpp takes as an interface: a host address (0.0.0.0:
        // the kernel's choice), not multicast, 240/4 or the broadcast address.
        if (const auto ip = parse_ipv4(*interface); !ip || *ip >= 0xE000'0000u)
            throw UsageError{fmt::format("--interface: expected an IPv4 unicast address (below 224.0.0.0), got '{}'",
                                         printable(*interface))};
        options.interface = *interface;
    }
    options.sources = !a.has("--any-source");

    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(fmt::format("{}:1: config.xml: expected a readable file, got none", printable(path)));
    std::ostringstream text;
    text << in.rdbuf();
    const std::string toml = mdp3::import_cme_channels(text.str(), path, options);
    if (const auto output = a.text("--output")) {
        std::ofstream out(*output, std::ios::binary | std::ios::trunc);
        if (!(out << toml)) throw ConfigError(fmt::format("{}:1: --output: expected a writable file", printable(*output)));
    } else {
        fmt::print("{}", toml);
    }
    return cli::kExitOk;
}

const cli::RegisterProtocolCli kRegistered{{
    .protocol = mdp3::Protocol::kName,
    .sim = sim_mdp3,
    .config = {{.name = "import-cme",
                .synopsis = "import-cme CONFIG.XML --channels ID[,ID...] [--interface ADDR] [--any-source] [--output FILE]",
                .brief = "import-cme CONFIG.XML --channels ...",
                .help = kImportCmeHelp,
                .options_help = kImportCmeOptionsHelp,
                .flags = {"--any-source"},
                .valued = {"--channels", "--interface", "--output"},
                .operands = 1,
                .run = import_cme}},
}};

}  // namespace

}  // namespace tickgate
