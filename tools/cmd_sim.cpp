// `tickgate sim`: the venue simulator's command line (see simulator.hpp).
#include <fmt/format.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/qfb1/simulator.hpp"
#include "tickgate/text.hpp"

#include "command.hpp"
#include "sim_options.hpp"

namespace tickgate {

namespace {

std::string help_text() {
    const SimOptions d;
    return fmt::format(R"(usage: tickgate sim [options]

Publishes QFB/1 for N instruments on both lines (A, B) of one channel on
loopback multicast (IP_MULTICAST_IF 127.x, TTL 0, loop on), paced on a fixed
schedule, deterministic from --seed; then prints the ground truth as JSON on
stdout. Odd ids send full quotes (Q), even ids depth deltas (D) with
snapshots (S); all get definitions (I) and heartbeats (H).

channel:
  --protocol NAME        qfb1, the protocol it simulates (the default); mdp3, itch50: see
                         `tickgate sim --protocol mdp3 --help`, `tickgate sim --protocol itch50 --help`
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
                       d.channel, d.group_a, d.port_a, d.group_b, d.port_b, d.interface_a, d.instruments, d.rate,
                       d.duration_s, d.batch, d.heartbeat_ms, d.snapshot_ms, d.definition_ms, d.seed, d.session,
                       d.epoch_ns);
}

std::uint32_t u32(const cli::Options& opt, std::string_view name, std::uint32_t fallback, std::int64_t lo,
                  std::int64_t hi) {
    return static_cast<std::uint32_t>(opt.integer(name, fallback, lo, hi));
}

}  // namespace

void cli::read_sim_line_faults(const cli::Options& opt, SimLineFaults& o) {
    o.loss_a = opt.decimal("--loss-a", o.loss_a, 0, 1);
    o.loss_b = opt.decimal("--loss-b", o.loss_b, 0, 1);
    if (const auto v = opt.text("--burst-loss")) {
        const auto p = cli::parse_parts("--burst-loss", *v, 2, "P:LEN");
        o.burst_p = cli::parse_decimal("--burst-loss", p[0], 0, 1);
        o.burst_len = static_cast<std::uint32_t>(cli::parse_integer("--burst-loss", p[1], 1, 1'000'000));
    }
    for (const std::string_view name : {"--outage-a", "--outage-b"})
        for (const std::string& v : opt.all(name)) {
            const auto p = cli::parse_parts(name, v, 2, "FROM:TO");
            const SimWindow w{cli::parse_decimal(name, p[0], 0, 1), cli::parse_decimal(name, p[1], 0, 1)};
            if (!(w.from < w.to)) throw cli::UsageError{fmt::format("{}: expected FROM < TO, got '{}'", name, v)};
            (name == "--outage-a" ? o.outage_a : o.outage_b).push_back(w);
        }
    o.dup = opt.decimal("--dup", o.dup, 0, 1);
    o.reorder = opt.decimal("--reorder", o.reorder, 0, 1);
}

// Instruments, pacing, message kinds, session, seed.
void cli::read_sim_traffic(const cli::Options& opt, SimOptions& o) {
    o.instruments = u32(opt, "--instruments", o.instruments, 1, 65535);
    o.rate = opt.decimal("--rate", o.rate, 1e-3, 1e8);
    o.duration_s = opt.decimal("--duration", o.duration_s, 1e-3, 86400);
    if (opt.has("--messages")) o.messages = static_cast<std::uint64_t>(opt.integer("--messages", 0, 1, std::int64_t{1} << 40));
    o.batch = u32(opt, "--batch", o.batch, 1, 28);
    o.heartbeat_ms = u32(opt, "--heartbeat-ms", o.heartbeat_ms, 1, 3'600'000);
    o.snapshot_ms = u32(opt, "--snapshot-ms", o.snapshot_ms, 1, 3'600'000);
    o.definition_ms = u32(opt, "--definition-ms", o.definition_ms, 1, 3'600'000);
    o.seed = static_cast<std::uint64_t>(opt.integer("--seed", static_cast<std::int64_t>(o.seed), 0, INT64_MAX));
    o.session = u32(opt, "--session", o.session, 0, 0xFFFFFFF0);
    o.epoch_ns = opt.integer("--epoch-ns", o.epoch_ns, 0, INT64_MAX / 2);
}

// Loss, outages, surges, duplicates, reordering, restarts, lagging snapshots, silenced instruments.
void cli::read_sim_faults(const cli::Options& opt, SimOptions& o) {
    const auto ids = [&](std::string_view name) {
        std::vector<std::uint32_t> out;
        for (const std::string& v : opt.all(name)) out.push_back(static_cast<std::uint32_t>(cli::parse_integer(name, v, 1, 65535)));
        return out;
    };
    cli::read_sim_line_faults(opt, o);
    if (const auto v = opt.text("--surge")) {
        const auto p = cli::parse_parts("--surge", *v, 3, "FROM:TO:FACTOR");
        o.surge = SimOptions::Surge{cli::parse_decimal("--surge", p[0], 0, 1), cli::parse_decimal("--surge", p[1], 0, 1),
                                    cli::parse_decimal("--surge", p[2], 1, 1e6)};
        if (!(o.surge->from < o.surge->to))
            throw cli::UsageError{fmt::format("--surge: expected FROM < TO, got '{}'", *v)};
    }
    if (opt.has("--restart-at")) {
        o.restart_at = opt.decimal("--restart-at", 0, 0, 1);
        if (*o.restart_at <= 0 || *o.restart_at >= 1)
            throw cli::UsageError{"--restart-at: expected a fraction in (0, 1)"};
    }
    o.lagging_snapshots = opt.has("--lagging-snapshots");
    o.quiet = ids("--quiet");
    o.silence = ids("--silence");
}

std::optional<ChannelConfig> cli::sim_config_channel(const cli::Options& opt, std::string_view protocol) {
    const std::optional<std::string> config_path = opt.text("--config");
    if (!config_path) return std::nullopt;
    std::optional<std::uint16_t> channel;
    if (opt.has("--channel")) channel = static_cast<std::uint16_t>(opt.integer("--channel", 0, 0, 65535));
    const Config cfg = load_config(*config_path);
    for (const ChannelConfig& c : cfg.channels) {
        if (channel && c.id != *channel) continue;
        if (c.protocol != protocol)
            throw cli::UsageError{fmt::format("{}: channel {} speaks {}; this simulator speaks {}", *config_path, c.id,
                                              c.protocol, protocol)};
        return c;
    }
    throw cli::UsageError{channel ? fmt::format("{}: no channel {}", *config_path, *channel)
                                  : fmt::format("{}: no [[channel]]", *config_path)};
}

void cli::read_sim_line_options(const cli::Options& opt, SimOptions& o) {
    if (opt.has("--channel")) o.channel = static_cast<std::uint16_t>(opt.integer("--channel", 0, 0, 65535));
    if (const auto g = opt.text("--group-a")) o.group_a = *g;
    if (const auto g = opt.text("--group-b")) o.group_b = *g;
    if (opt.has("--port-a")) o.port_a = static_cast<std::uint16_t>(opt.integer("--port-a", 0, 1, 65535));
    if (opt.has("--port-b")) o.port_b = static_cast<std::uint16_t>(opt.integer("--port-b", 0, 1, 65535));
    if (opt.has("--interface")) o.interface_a = o.interface_b = opt.loopback_address("--interface", "");
}

namespace {

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
    if (!opt.positional().empty())
        throw cli::UsageError{fmt::format("sim takes no positional argument, got '{}'", opt.positional().front())};
    // The simulator is QFB/1's (feed/qfb1/simulator.cpp); a venue protocol brings its own.
    if (const auto p = opt.text("--protocol"); p && *p != qfb1::Protocol::kName)
        throw cli::UsageError{fmt::format("--protocol: expected qfb1, mdp3 or itch50 (the protocols simulated), got '{}'",
                                          printable(*p))};
    SimOptions o;
    cli::read_sim_traffic(opt, o);
    cli::read_sim_faults(opt, o);
    read_lines(opt, o);
    try {
        o.validate();
    } catch (const std::invalid_argument& e) {
        throw cli::UsageError{e.what()};
    }

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

}  // namespace

// Errors go to main like every command's: a cli::UsageError or ConfigError
// exits 2, any other failure (sockets, writing --pcap) 1.
// `--protocol mdp3` and `--protocol itch50` have simulators of their own
// (cmd_sim_mdp3.cpp, cmd_sim_itch50.cpp), with other options.
int cli::cmd_sim(const std::vector<std::string_view>& args) {
    // Chosen by --protocol, or without it by a --config whose channels speak one.
    std::optional<std::string_view> protocol, config;
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "--protocol") protocol = args[i + 1];
        if (args[i] == "--config") config = args[i + 1];
    }
    if (!protocol && config) {
        const std::string configured(load_config(std::string(*config)).protocol());
        if (configured == "itch50") return cmd_sim_itch50(args);
        if (configured == "mdp3") return sim_mdp3(args);
    }
    if (protocol == "mdp3") return sim_mdp3(args);
    if (protocol == "itch50") return cmd_sim_itch50(args);
    return run(args);
}

}  // namespace tickgate
