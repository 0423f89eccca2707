// `tickgate sim`: the venue simulator's command line (see simulator.hpp).
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/config.hpp"
#include "tickgate/simulator.hpp"

namespace tickgate {

namespace {

struct SimUsage {
    std::string message;
};

std::string help_text() {
    const SimOptions d;
    return fmt::format(R"(usage: tickgate sim [options]

Publishes QFB/1 for N instruments on both lines (A, B) of one channel on
loopback multicast (IP_MULTICAST_IF 127.x, TTL 0, loop on), paced on a fixed
schedule, deterministic from --seed; then prints the ground truth as JSON on
stdout. Odd ids send full quotes (Q), even ids depth deltas (D) with
snapshots (S); all get definitions (I) and heartbeats (H).

channel:
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

std::int64_t to_int(std::string_view opt, std::string_view text, std::int64_t lo, std::int64_t hi) {
    const std::string s(text);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || v < lo || v > hi)
        throw SimUsage{fmt::format("{}: expected an integer in {}..{}, got '{}'", opt, lo, hi, text)};
    return v;
}

double to_double(std::string_view opt, std::string_view text, double lo, double hi) {
    const std::string s(text);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || errno != 0 || !(v >= lo && v <= hi))
        throw SimUsage{fmt::format("{}: expected a number in [{}, {}], got '{}'", opt, lo, hi, text)};
    return v;
}

int run(const std::vector<std::string_view>& args) {
    SimOptions o;
    std::optional<std::string> config_path, pcap, group_a, group_b, iface;
    std::optional<std::uint16_t> channel, port_a, port_b;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= args.size()) throw SimUsage{fmt::format("{}: missing value", a)};
            return args[++i];
        };
        auto u32 = [&](std::int64_t lo, std::int64_t hi) { return static_cast<std::uint32_t>(to_int(a, value(), lo, hi)); };
        auto prob = [&] { return to_double(a, value(), 0, 1); };
        if (a == "-h" || a == "--help") {
            fmt::print("{}", help_text());
            return 0;
        } else if (a == "--config") config_path = std::string(value());
        else if (a == "--channel") channel = static_cast<std::uint16_t>(u32(0, 65535));
        else if (a == "--group-a") group_a = std::string(value());
        else if (a == "--group-b") group_b = std::string(value());
        else if (a == "--port-a") port_a = static_cast<std::uint16_t>(u32(1, 65535));
        else if (a == "--port-b") port_b = static_cast<std::uint16_t>(u32(1, 65535));
        else if (a == "--interface") iface = std::string(value());
        else if (a == "--instruments") o.instruments = u32(1, 65535);
        else if (a == "--rate") o.rate = to_double(a, value(), 1e-3, 1e8);
        else if (a == "--duration") o.duration_s = to_double(a, value(), 1e-3, 86400);
        else if (a == "--messages") o.messages = static_cast<std::uint64_t>(to_int(a, value(), 1, std::int64_t{1} << 40));
        else if (a == "--batch") o.batch = u32(1, 28);
        else if (a == "--heartbeat-ms") o.heartbeat_ms = u32(1, 3'600'000);
        else if (a == "--snapshot-ms") o.snapshot_ms = u32(1, 3'600'000);
        else if (a == "--definition-ms") o.definition_ms = u32(1, 3'600'000);
        else if (a == "--seed") o.seed = static_cast<std::uint64_t>(to_int(a, value(), 0, INT64_MAX));
        else if (a == "--session") o.session = u32(0, 0xFFFFFFF0);
        else if (a == "--loss-a") o.loss_a = prob();
        else if (a == "--loss-b") o.loss_b = prob();
        else if (a == "--burst-loss") {
            const std::string_view v = value();
            const auto colon = v.find(':');
            if (colon == std::string_view::npos) throw SimUsage{fmt::format("--burst-loss: expected P:LEN, got '{}'", v)};
            o.burst_p = to_double(a, v.substr(0, colon), 0, 1);
            o.burst_len = static_cast<std::uint32_t>(to_int(a, v.substr(colon + 1), 1, 1'000'000));
        } else if (a == "--outage-a" || a == "--outage-b") {
            const std::string_view v = value();
            const auto colon = v.find(':');
            if (colon == std::string_view::npos) throw SimUsage{fmt::format("{}: expected FROM:TO, got '{}'", a, v)};
            const SimOptions::Outage w{to_double(a, v.substr(0, colon), 0, 1), to_double(a, v.substr(colon + 1), 0, 1)};
            if (!(w.from < w.to)) throw SimUsage{fmt::format("{}: expected FROM < TO, got '{}'", a, v)};
            (a == "--outage-a" ? o.outage_a : o.outage_b).push_back(w);
        } else if (a == "--surge") {
            const std::string_view v = value();
            const auto c1 = v.find(':'), c2 = v.find(':', c1 == std::string_view::npos ? c1 : c1 + 1);
            if (c1 == std::string_view::npos || c2 == std::string_view::npos)
                throw SimUsage{fmt::format("--surge: expected FROM:TO:FACTOR, got '{}'", v)};
            o.surge = SimOptions::Surge{to_double(a, v.substr(0, c1), 0, 1), to_double(a, v.substr(c1 + 1, c2 - c1 - 1), 0, 1),
                                        to_double(a, v.substr(c2 + 1), 1, 1e6)};
            if (!(o.surge->from < o.surge->to)) throw SimUsage{fmt::format("--surge: expected FROM < TO, got '{}'", v)};
        } else if (a == "--dup") o.dup = prob();
        else if (a == "--reorder") o.reorder = prob();
        else if (a == "--restart-at") {
            o.restart_at = to_double(a, value(), 0, 1);
            if (*o.restart_at <= 0 || *o.restart_at >= 1) throw SimUsage{"--restart-at: expected a fraction in (0, 1)"};
        } else if (a == "--lagging-snapshots") o.lagging_snapshots = true;
        else if (a == "--quiet") o.quiet.push_back(u32(1, 65535));
        else if (a == "--silence") o.silence.push_back(u32(1, 65535));
        else if (a == "--pcap") pcap = std::string(value());
        else if (a == "--epoch-ns") o.epoch_ns = to_int(a, value(), 0, INT64_MAX / 2);
        else throw SimUsage{fmt::format("unknown argument '{}' (see tickgate sim --help)", a)};
    }

    if (config_path) {
        const Config cfg = load_config(*config_path);
        const ChannelConfig* ch = nullptr;
        for (const auto& c : cfg.channels)
            if (!channel || c.id == *channel) {
                ch = &c;
                break;
            }
        if (!ch)
            throw SimUsage{channel ? fmt::format("{}: no channel {}", *config_path, *channel)
                                   : fmt::format("{}: no [[channel]]", *config_path)};
        o.channel = ch->id;
        o.group_a = ch->a.group, o.port_a = ch->a.port, o.interface_a = ch->a.interface;
        o.group_b = ch->b.group, o.port_b = ch->b.port, o.interface_b = ch->b.interface;
    }
    if (channel) o.channel = *channel;
    if (group_a) o.group_a = *group_a;
    if (group_b) o.group_b = *group_b;
    if (port_a) o.port_a = *port_a;
    if (port_b) o.port_b = *port_b;
    if (iface) o.interface_a = o.interface_b = *iface;
    try {
        o.validate();
    } catch (const std::invalid_argument& e) {
        throw SimUsage{e.what()};
    }

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

int cmd_sim(const std::vector<std::string_view>& args) {
    try {
        return run(args);
    } catch (const SimUsage& e) {
        fmt::print(stderr, "tickgate sim: {}\n", e.message);
        return 2;
    } catch (const ConfigError& e) {
        fmt::print(stderr, "tickgate sim: config error: {}\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        fmt::print(stderr, "tickgate sim: {}\n", e.what());
        return 1;
    }
}

}  // namespace tickgate
