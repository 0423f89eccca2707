// `tickgate config check FILE`: validation and the memory a config needs.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "command.hpp"

namespace tickgate::cli {

namespace {

constexpr std::string_view kConfigHelp = R"(usage: tickgate config check FILE

Reads and validates FILE as `tickgate run` would, then prints the memory it
makes the live handler allocate at start-up, part by part (books, recovery
pool, event ring, per-instrument state, receiver and arbiter), and the limit
capacity.max_memory_mb (default: half of this machine's physical memory).
Exit 0 if the config is valid and within the limit, 2 if not (one line on
stderr: FILE:LINE: KEY: expected ..., got ...).

options:
  -h, --help           this text
)";


}  // namespace

int cmd_config(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {}, {}, "config");
    if (a.help()) {
        fmt::print("{}", kConfigHelp);
        return kExitOk;
    }
    if (a.positional().size() != 2 || a.positional()[0] != "check")
        throw UsageError{"expected `config check FILE` (see tickgate config --help)"};
    const Config cfg = load_config(a.positional()[1]);  // refuses a config above the limit
    const MemoryEstimate e = estimate_memory(cfg);
    fmt::print("{}: ok\n", cfg.source);
    for (const MemoryPart& p : e.parts) {
        std::string keys;
        for (const std::string_view k : p.keys) keys += (keys.empty() ? "" : ", ") + std::string(k);
        fmt::print("  {:<22} {:>9} MiB  ({})\n", p.what, mib_ceil(p.bytes), keys);
    }
    fmt::print("memory: {} MiB estimated, limit {} MiB (capacity.max_memory_mb; default here: {} MiB, half of "
               "physical memory)\n",
               mib_ceil(e.total_bytes), cfg.max_memory_mb, default_max_memory_mb());
    return kExitOk;
}

}  // namespace tickgate::cli
