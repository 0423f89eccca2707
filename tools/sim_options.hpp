// `tickgate sim`'s option readers shared by its simulators (cmd_sim.cpp):
// QFB/1's (cmd_sim_qfb1.cpp), MDP3's (cmd_sim_mdp3.cpp) and, for the line
// faults, ITCH's (cmd_sim_itch50.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/qfb1/simulator.hpp"

#include "options.hpp"

namespace tickgate::cli {

// The driver's line faults (sim_driver.hpp), every simulator's options:
// --loss-a/-b, --burst-loss, --outage-a/-b, --dup, --reorder, over `f`'s values.
void read_sim_line_faults(const Options& opt, SimLineFaults& f);

// Instruments, pacing, message kinds, session, seed: into `o`, over its values.
void read_sim_traffic(const Options& opt, SimOptions& o);
// Loss, outages, surges, duplicates, reordering, restarts, lagging snapshots, silenced instruments.
void read_sim_faults(const Options& opt, SimOptions& o);
// --config's channel (--channel's, else the first), which must speak
// `protocol`; nullopt without --config. UsageError if there is none.
std::optional<ChannelConfig> sim_config_channel(const Options& opt, std::string_view protocol);
// --channel, --group-a/-b, --port-a/-b, --interface on top of `o`.
void read_sim_line_options(const Options& opt, SimOptions& o);

}  // namespace tickgate::cli
