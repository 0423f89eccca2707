// `tickgate sim`: picks the protocol's simulator (each in its file,
// cmd_sim_NAME.cpp), and the option readers simulators share (sim_options.hpp).
#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/text.hpp"

#include "command.hpp"
#include "sim_options.hpp"

namespace tickgate {

namespace {

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

// Errors go to main like every command's: a cli::UsageError or ConfigError
// exits 2, any other failure (sockets, writing --pcap) 1. Each protocol's
// simulator has options of its own and is its file's (cmd_sim_NAME.cpp,
// registered with RegisterProtocolCli); this picks one and names none.
int cli::cmd_sim(const std::vector<std::string_view>& args) {
    // Chosen by --protocol, or without it by a --config whose channels speak
    // one, or else the reference protocol's.
    std::optional<std::string_view> protocol, config;
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "--protocol") protocol = args[i + 1];
        if (args[i] == "--config") config = args[i + 1];
    }
    std::string name(ReferenceProtocol::kName);
    if (protocol) name = *protocol;
    else if (config) name = load_config(std::string(*config)).protocol();
    if (const ProtocolCli* entry = protocol_cli(name); entry != nullptr && entry->sim != nullptr) return entry->sim(args);
    const std::vector<std::string_view> simulated = simulated_protocols();
    throw UsageError{fmt::format("--protocol: expected {} (the protocols simulated), got '{}'",
                                 or_list(std::vector<std::string>(simulated.begin(), simulated.end())), printable(name))};
}

}  // namespace tickgate
