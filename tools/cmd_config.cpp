// `tickgate config check FILE`: validation and the memory a config needs;
// and the `config` subcommands protocols register (command.hpp), each in its
// protocol's file of tools/.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tickgate/feed/protocols.hpp"
#include "tickgate/text.hpp"

#include "command.hpp"

namespace tickgate::cli {

namespace {

constexpr std::string_view kCheckHelp = R"(Reads and validates FILE as `tickgate run` would, then prints the memory it
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
)";

// check's own, then each registered subcommand's usage, text and options.
std::string config_help() {
    std::string usage = "usage: tickgate config check FILE [--protocol NAME]\n";
    std::string text = fmt::format("\ncheck:\n\n{}", kCheckHelp);
    std::string options = fmt::format(
        "\ncheck options:\n  --protocol NAME        the protocol a channel-less FILE runs as ({})\n", protocol_list());
    for (const ProtocolCli& p : protocol_clis())
        for (const ConfigSubcommand& c : p.config) {
            usage += fmt::format("       tickgate config {}\n", c.synopsis);
            text += fmt::format("\n{}:\n{}", c.name, c.help);
            options += fmt::format("\n{} options:\n{}", c.name, c.options_help);
        }
    return usage + text + options + "  -h, --help             this text\n";
}

const std::vector<std::string_view> kCheckValued = {"--protocol"};

// Whether any of `all` (every option `config` takes) was given that is not
// among the allowed ones: an option of another subcommand than the one named.
bool given_any_but(const Options& a, const std::vector<std::string_view>& all,
                   const std::vector<std::string_view>& allowed_flags, const std::vector<std::string_view>& allowed_valued) {
    return std::any_of(all.begin(), all.end(), [&](std::string_view o) {
        return a.has(o) && std::find(allowed_flags.begin(), allowed_flags.end(), o) == allowed_flags.end() &&
               std::find(allowed_valued.begin(), allowed_valued.end(), o) == allowed_valued.end();
    });
}

}  // namespace

int cmd_config(const std::vector<std::string_view>& args) {
    // check's options and every registered subcommand's.
    std::vector<std::string_view> flags, valued = kCheckValued;
    std::vector<std::string> forms = {"`config check FILE`"};
    for (const ProtocolCli& p : protocol_clis())
        for (const ConfigSubcommand& c : p.config) {
            flags.insert(flags.end(), c.flags.begin(), c.flags.end());
            valued.insert(valued.end(), c.valued.begin(), c.valued.end());
            forms.push_back(fmt::format("`config {}`", c.brief));
        }
    std::vector<std::string_view> all = flags;
    all.insert(all.end(), valued.begin(), valued.end());
    const cli::Options a(args, flags, valued, "config");
    if (a.help()) {
        fmt::print("{}", config_help());
        return kExitOk;
    }
    for (const ProtocolCli& p : protocol_clis())
        for (const ConfigSubcommand& c : p.config)
            if (a.positional().size() == 1 + c.operands && a.positional()[0] == c.name &&
                !given_any_but(a, all, c.flags, c.valued))
                return c.run(a);
    if (a.positional().size() != 2 || a.positional()[0] != "check" || given_any_but(a, all, {}, kCheckValued))
        throw UsageError{fmt::format("expected {} (see tickgate config --help)", or_list(forms))};
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
