// `tickgate config check FILE`: validation and the memory a config needs.
// `tickgate config import-cme CONFIG.XML --channels ...`: channels from CME's config.xml.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "feed/mdp3/cme_config.hpp"
#include "tickgate/feed/capture.hpp"  // parse_ipv4
#include "tickgate/feed/protocols.hpp"
#include "tickgate/text.hpp"

#include "command.hpp"

namespace tickgate::cli {

namespace {

constexpr std::string_view kConfigHelp = R"(usage: tickgate config check FILE [--protocol NAME]
       tickgate config import-cme CONFIG.XML --channels ID[,ID...] [--interface ADDR] [--any-source] [--output FILE]

check:

Reads and validates FILE as `tickgate run` would, then prints the memory it
makes the handler allocate at start-up, part by part (QFB/1 and MDP3: books,
recovery pool, event ring, per-instrument state, receiver and arbiter; ITCH:
order books, held packets, per-instrument state, receiver), as two figures:
reserved (address space; what it would all take with every table full) and
resident at start-up (tables of zero pages become resident only as they
fill), and the limit capacity.max_memory_mb on the reserved figure (default:
half of this machine's physical memory). The protocol is the channels'; a
config without channels is checked for --protocol NAME, or without it for
every protocol (replay --protocol may run it as any). Exit 0 if the config
is valid and within the limit, 2 if not (one line on stderr: FILE:LINE: KEY:
expected ..., got ...).

import-cme:
Writes a tickgate [[channel]] table (protocol "mdp3") for each CME channel
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

check options:
  --protocol NAME        the protocol a channel-less FILE runs as (qfb1, mdp3, itch50)

import-cme options:
  --channels ID[,ID...]  CME channel ids, e.g. 310,344 (required)
  --interface ADDR       local IPv4 address that joins every line (default 127.0.0.1)
  --any-source           leave `sources` out (accept the groups from any sender)
  --output FILE          write the TOML there instead of stdout
  -h, --help             this text
)";

int import_cme(const cli::Options& a) {
    const std::string& path = a.positional()[1];
    const auto channels = a.text("--channels");
    if (!channels) throw UsageError{"config import-cme: --channels ID[,ID...] is required"};
    mdp3::CmeImportOptions options;
    for (std::size_t from = 0; from <= channels->size();) {
        const std::size_t comma = std::min(channels->find(',', from), channels->size());
        const auto id = parse_integer("--channels", std::string_view(*channels).substr(from, comma - from), 0, 65535);
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
    return kExitOk;
}


}  // namespace

int cmd_config(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--any-source"}, {"--channels", "--interface", "--output", "--protocol"}, "config");
    if (a.help()) {
        fmt::print("{}", kConfigHelp);
        return kExitOk;
    }
    if (a.positional().size() == 2 && a.positional()[0] == "import-cme" && !a.has("--protocol")) return import_cme(a);
    if (a.positional().size() != 2 || a.positional()[0] != "check" || a.has("--channels") || a.has("--interface") ||
        a.has("--output") || a.has("--any-source"))
        throw UsageError{"expected `config check FILE` or `config import-cme CONFIG.XML --channels ...` (see tickgate "
                         "config --help)"};
    const auto protocol = a.text("--protocol");
    if (protocol && std::find(kProtocolNames.begin(), kProtocolNames.end(), *protocol) == kProtocolNames.end())
        throw UsageError{fmt::format("--protocol: expected one of {}, got '{}'", protocol_list(), printable(*protocol))};
    const Config cfg = load_config(a.positional()[1], protocol ? std::string_view(*protocol) : kAnyProtocol);  // refuses a config above the limit
    if (protocol && !cfg.channels.empty() && cfg.protocol() != *protocol)
        throw UsageError{fmt::format("--protocol {}: the config's channels speak {}", *protocol, cfg.protocol())};
    fmt::print("{}: ok\n", cfg.source);
    // A channel-less config runs as whatever --protocol says: without one
    // here, every protocol's estimate was checked and is shown.
    std::vector<std::string_view> shown;
    if (!cfg.channels.empty() || protocol) shown.push_back(cfg.protocol());
    else shown.assign(kProtocolNames.begin(), kProtocolNames.end());
    for (const std::string_view p : shown) {
        const MemoryEstimate e = estimate_memory(cfg, p);
        fmt::print("protocol {}{}:\n  {:<22} {:>12} {:>12}\n", p,
                   cfg.channels.empty() ? (protocol ? " (--protocol)" : " (no channels: as replay --protocol " + std::string(p) + ")")
                                        : std::string(" (the channels')"),
                   "part", "reserved MiB", "resident MiB");
        for (const MemoryPart& part : e.parts) {
            std::string keys;
            for (const std::string_view k : part.keys) keys += (keys.empty() ? "" : ", ") + std::string(k);
            fmt::print("  {:<22} {:>12} {:>12}{}\n", part.what, mib_ceil(part.bytes), mib_ceil(part.resident_bytes),
                       keys.empty() ? "" : "  (" + keys + ")");
        }
        fmt::print("memory: {} MiB reserved (every table full), {} MiB resident at start-up; limit {} MiB on the "
                   "reserved figure (capacity.max_memory_mb; default here: {} MiB, half of physical memory)\n",
                   mib_ceil(e.total_bytes), mib_ceil(e.resident_bytes), cfg.max_memory_mb, default_max_memory_mb());
    }
    return kExitOk;
}

}  // namespace tickgate::cli
