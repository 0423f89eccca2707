// `tickgate sim --protocol itch50`: the ITCH 5.0 simulator's command line
// (feed/itch50/simulator.hpp), registered as itch50's simulator (command.hpp).
#include <fmt/format.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/itch50/protocol.hpp"
#include "tickgate/feed/itch50/simulator.hpp"

#include "command.hpp"
#include "sim_options.hpp"

namespace tickgate {

namespace {

std::string help_text() {
    const itch50::SimOptions d;
    return fmt::format(R"(usage: tickgate sim --protocol itch50 [options]

Publishes one ITCH 5.0 session over MoldUDP64 on lines A and B on loopback
multicast (IP_MULTICAST_IF 127.x, TTL 0, loop on), paced, deterministic from
--seed: S start of day and the R stock directory first, then an order flow
over the stocks (adds with and without MPID, executions with and without
price, cancels, deletes, replaces), heartbeats when idle, end of session.
Meanwhile a MoldUDP64 re-request server on 127.0.0.1 answers 20-byte
requests from the session's message store. Then prints the ground truth as
JSON on stdout: each stock's final L2 book (price, shares, orders) and what
a conforming handler must count.

channel:
  --config FILE          lines (and the server's port, from rerequest = "127.0.0.1:PORT") of a
                         config's itch50 channel (--channel ID, else the first)
  --channel ID           with --config: the channel to use
  --group-a ADDR         line A group (default {})
  --port-a N             line A port (default {})
  --group-b ADDR         line B group (default {})
  --port-b N             line B port (default {})
  --interface ADDR       sending interface, 127.x only (default {})
  --server-port N        re-request server port on 127.0.0.1, 0: any free one (default {})
traffic:
  --stocks N             stock locates 1..N (default {})
  --rate R               order-flow messages per second (default {})
  --duration S           seconds of order flow (default {})
  --messages N           order-flow messages instead of --duration
  --batch N              messages per packet, 1..32 (default {})
  --heartbeat-ms N       a heartbeat after this long without a packet (default {})
  --seed N               random seed (default {})
  --session S            the session, 10 characters (default {})
line faults (all off by default):
  --loss-a P, --loss-b P per-packet loss on one line
  --burst-loss P:LEN     with probability P per packet, LEN packets lost on both lines
  --outage-a FROM:TO     line A carries nothing from fraction FROM to TO of the flow (repeatable)
  --outage-b FROM:TO     the same for line B
  --dup P                a line sends the packet twice
  --reorder P            a line sends the packet after the next one
  --restart-at F         end of session at fraction F, then a new session from 1 (one late
                         old-session packet on line B)
server faults:
  --server-delay-ms N    each answer waits N ms (default 0)
  --server-silent        requests are counted, never answered
  --server-partial P     with probability P an answer carries only the first half asked
  --server-linger-ms N   the server keeps answering N ms after the last packet (default {})
GLIMPSE 5.0 snapshot server (SoupBinTCP on 127.0.0.1; any credentials accepted):
  --glimpse-port N       its port, 0: any free one (default {}; --config: the channel's glimpse)
  --glimpse-delay-ms N   `M` waits N ms after the spin (a slow spin; heartbeats continue)
  --glimpse-drop-after N the first connection drops after N spin messages (a retry is served whole)
  --glimpse-reject       every login rejected (reason 'A')
  --glimpse-off          no GLIMPSE server
output:
  --pcap FILE            write both lines to a ns pcap instead of sending (no pacing, no server)
  --epoch-ns N           with --pcap: Unix ns of time 0 (default {})
  -h, --help             this text

exit codes: 0 ok, 1 runtime failure, 2 bad usage
)",
                       d.group_a, d.port_a, d.group_b, d.port_b, d.interface, d.server_port, d.stocks, d.rate,
                       d.duration_s, d.batch, d.heartbeat_ms, d.seed, d.session, d.server_linger_ms, d.glimpse_port, d.epoch_ns);
}

// The lines and server port of --config's itch50 channel.
void read_config(const cli::Options& opt, itch50::SimOptions& o) {
    const std::optional<std::string> path = opt.text("--config");
    if (!path) {
        if (opt.has("--channel")) throw cli::UsageError{"--channel: only with --config"};
        return;
    }
    std::optional<std::uint16_t> id;
    if (opt.has("--channel")) id = static_cast<std::uint16_t>(opt.integer("--channel", 0, 0, 65535));
    const Config cfg = load_config(*path);
    const ChannelConfig* ch = nullptr;
    for (const ChannelConfig& c : cfg.channels)
        if (!id || c.id == *id) {
            ch = &c;
            break;
        }
    if (!ch) throw cli::UsageError{id ? fmt::format("{}: no channel {}", *path, *id) : fmt::format("{}: no [[channel]]", *path)};
    if (ch->protocol != "itch50")
        throw cli::UsageError{fmt::format("{}: channel {} speaks {}; --protocol itch50 simulates itch50", *path, ch->id, ch->protocol)};
    o.group_a = ch->a.group, o.port_a = ch->a.port;
    o.group_b = ch->b.group, o.port_b = ch->b.port;
    if (!ch->rerequest.empty()) {
        if (ch->rerequest_ip != 0x7F000001)
            throw cli::UsageError{fmt::format("{}: channel {}: rerequest {}: the simulator serves on 127.0.0.1 only",
                                              *path, ch->id, ch->rerequest)};
        o.server_port = ch->rerequest_port;
    }
    if (!ch->glimpse.empty()) {
        if (ch->glimpse_ip != 0x7F000001)
            throw cli::UsageError{fmt::format("{}: channel {}: glimpse {}: the simulator serves on 127.0.0.1 only",
                                              *path, ch->id, ch->glimpse)};
        o.glimpse_port = ch->glimpse_port;
    }
}

void read_options(const cli::Options& opt, itch50::SimOptions& o) {
    const auto u32 = [&](std::string_view name, std::uint32_t fallback, std::int64_t lo, std::int64_t hi) {
        return static_cast<std::uint32_t>(opt.integer(name, fallback, lo, hi));
    };
    read_config(opt, o);
    if (const auto g = opt.text("--group-a")) o.group_a = *g;
    if (const auto g = opt.text("--group-b")) o.group_b = *g;
    o.port_a = static_cast<std::uint16_t>(u32("--port-a", o.port_a, 1, 65535));
    o.port_b = static_cast<std::uint16_t>(u32("--port-b", o.port_b, 1, 65535));
    if (opt.has("--interface")) o.interface = opt.loopback_address("--interface", "");
    o.server_port = static_cast<std::uint16_t>(u32("--server-port", o.server_port, 0, 65535));
    o.stocks = u32("--stocks", o.stocks, 1, 65535);
    o.rate = opt.decimal("--rate", o.rate, 1e-3, 1e8);
    o.duration_s = opt.decimal("--duration", o.duration_s, 1e-3, 86400);
    if (opt.has("--messages")) o.messages = static_cast<std::uint64_t>(opt.integer("--messages", 0, 1, std::int64_t{1} << 32));
    o.batch = u32("--batch", o.batch, 1, 32);
    o.heartbeat_ms = u32("--heartbeat-ms", o.heartbeat_ms, 1, 3'600'000);
    o.seed = static_cast<std::uint64_t>(opt.integer("--seed", static_cast<std::int64_t>(o.seed), 0, INT64_MAX));
    if (const auto s = opt.text("--session")) o.session = *s;
    o.epoch_ns = opt.integer("--epoch-ns", o.epoch_ns, 0, INT64_MAX / 2);
    cli::read_sim_line_faults(opt, o);
    if (opt.has("--restart-at")) o.restart_at = opt.decimal("--restart-at", 0, 0, 1);
    o.server_delay_ms = u32("--server-delay-ms", 0, 0, 60'000);
    o.server_silent = opt.has("--server-silent");
    o.server_partial = opt.decimal("--server-partial", 0, 0, 1);
    o.server_linger_ms = u32("--server-linger-ms", o.server_linger_ms, 0, 600'000);
    o.glimpse_port = static_cast<std::uint16_t>(u32("--glimpse-port", o.glimpse_port, 0, 65535));
    o.glimpse_delay_ms = u32("--glimpse-delay-ms", 0, 0, 600'000);
    if (opt.has("--glimpse-drop-after"))
        o.glimpse_drop_after = static_cast<std::uint64_t>(opt.integer("--glimpse-drop-after", 0, 0, INT64_MAX));
    o.glimpse_reject = opt.has("--glimpse-reject");
    o.glimpse_off = opt.has("--glimpse-off");
}

int sim_itch50(const std::vector<std::string_view>& args) {
    const cli::Options opt(args, {"--server-silent", "--glimpse-reject", "--glimpse-off"},
                           {"--protocol", "--config", "--channel", "--group-a", "--port-a", "--group-b", "--port-b",
                            "--interface", "--server-port", "--stocks", "--rate", "--duration", "--messages", "--batch",
                            "--heartbeat-ms", "--seed", "--session", "--epoch-ns", "--loss-a", "--loss-b",
                            "--burst-loss", "--outage-a", "--outage-b", "--dup", "--reorder", "--restart-at",
                            "--server-delay-ms", "--server-partial", "--server-linger-ms", "--pcap", "--glimpse-port",
                            "--glimpse-delay-ms", "--glimpse-drop-after"},
                           "sim");
    if (opt.help()) {
        fmt::print("{}", help_text());
        return cli::kExitOk;
    }
    cli::require_no_positional(opt, "sim");
    itch50::SimOptions o;
    read_options(opt, o);
    cli::as_usage_error([&] { o.validate(); });
    const std::optional<std::string> pcap = opt.text("--pcap");
    const itch50::SimTruth t = pcap ? itch50::simulate_to_capture(o, *pcap) : itch50::simulate_to_sockets(o);
    fmt::print(stderr,
               "sim: itch50, {} sessions, {} packets in {:.3f} s scheduled; line A sent {} dropped {}, line B sent {} "
               "dropped {}, both dropped {}; server requests {}, answers {} ({} messages); GLIMPSE snapshots served {}{}\n",
               t.sessions.size(), t.packets, static_cast<double>(t.duration_ns) / 1e9, t.sent_a, t.dropped_a, t.sent_b,
               t.dropped_b, t.dropped_both, t.requests, t.answers, t.answered_messages,
               t.glimpse_served, pcap ? fmt::format("; wrote {}", *pcap) : std::string());
    fmt::print("{}", t.to_json(o));
    return cli::kExitOk;
}

const cli::RegisterProtocolCli kRegistered{{.protocol = itch50::Protocol::kName, .sim = sim_itch50}};

}  // namespace

}  // namespace tickgate
