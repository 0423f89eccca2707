// `tickgate sim`'s option readers shared by its simulators: QFB/1's
// (cmd_sim.cpp), MDP3's (cmd_sim_mdp3.cpp) and, for the line faults, ITCH's
// (cmd_sim_itch50.cpp).
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/qfb1/simulator.hpp"

#include "options.hpp"

namespace tickgate::cli {

// The driver's line faults (sim_driver.hpp): --loss-a/-b, --burst-loss,
// --outage-a/-b, --dup, --reorder into `o`'s fields of the same names.
template <class SimOptionsT>
void read_sim_line_faults(const Options& opt, SimOptionsT& o) {
    o.loss_a = opt.decimal("--loss-a", o.loss_a, 0, 1);
    o.loss_b = opt.decimal("--loss-b", o.loss_b, 0, 1);
    if (const auto v = opt.text("--burst-loss")) {
        const auto p = parse_parts("--burst-loss", *v, 2, "P:LEN");
        o.burst_p = parse_decimal("--burst-loss", p[0], 0, 1);
        o.burst_len = static_cast<std::uint32_t>(parse_integer("--burst-loss", p[1], 1, 1'000'000));
    }
    for (const std::string_view name : {"--outage-a", "--outage-b"})
        for (const std::string& v : opt.all(name)) {
            const auto p = parse_parts(name, v, 2, "FROM:TO");
            const SimWindow w{parse_decimal(name, p[0], 0, 1), parse_decimal(name, p[1], 0, 1)};
            if (!(w.from < w.to)) throw UsageError{fmt::format("{}: expected FROM < TO, got '{}'", name, v)};
            (name == "--outage-a" ? o.outage_a : o.outage_b).push_back(w);
        }
    o.dup = opt.decimal("--dup", o.dup, 0, 1);
    o.reorder = opt.decimal("--reorder", o.reorder, 0, 1);
}

// Instruments, pacing, message kinds, session, seed: into `o`, over its values.
void read_sim_traffic(const Options& opt, SimOptions& o);
// Loss, outages, surges, duplicates, reordering, restarts, lagging snapshots, silenced instruments.
void read_sim_faults(const Options& opt, SimOptions& o);
// --config's channel (--channel's, else the first), which must speak
// `protocol`; nullopt without --config. UsageError if there is none.
std::optional<ChannelConfig> sim_config_channel(const Options& opt, std::string_view protocol);
// --channel, --group-a/-b, --port-a/-b, --interface on top of `o`.
void read_sim_line_options(const Options& opt, SimOptions& o);
// `tickgate sim --protocol mdp3 ...` (cmd_sim_mdp3.cpp).
int sim_mdp3(const std::vector<std::string_view>& args);

}  // namespace tickgate::cli
