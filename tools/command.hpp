// What every `tickgate` command shares: exit codes, the config a command
// runs with, signals, and one entry point per command (tools/cmd_NAME.cpp;
// tools/main.cpp dispatches). Every command parses its arguments with
// cli::Options (options.hpp) and throws cli::UsageError for bad usage.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/metrics.hpp"
#include "tickgate/feed/receiver.hpp"

#include "options.hpp"

namespace tickgate::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
// Distinct from 0 so that tooling checking only the exit code learns that the
// input was incomplete, and from 2 because the summary is there and valid
// for every intact record: a cut capture is the normal state of a file
// still being written or of a capture killed with its machine.
inline constexpr int kExitCaptureCut = 3;

// The config of --config (or the defaults; `required`: --config must be
// given), its protocol set by --protocol, which must name a known protocol
// and agree with the config's channels. A protocol with a pipeline of its
// own (itch50) is the caller's to dispatch. `auto_allowed`: --protocol
// auto is taken as no --protocol (the caller detects the protocol).
Config config_from(const Options& a, bool required, bool auto_allowed = false);
// `--protocol auto` (replay): the protocol read off the capture's first datagrams.
inline constexpr std::string_view kAutoProtocol = "auto";
// The one stderr line of a capture cut short mid-record.
void warn_cut_short(const std::string& path, const CaptureTruncation& t, std::string_view done);
// run and capture receive on the configured lines: a config without any is a
// bad config (exit 2), said before sockets are touched.
void require_channels(const Config& cfg, std::string_view command);

// Set by SIGINT/SIGTERM once install_signal_handlers() ran.
extern std::atomic<bool> g_stop;
void install_signal_handlers();
// Says once, on stderr, that a config asking for AF_XDP runs on sockets (its fallback), and why.
void say_af_xdp_fallback(const Receiver& receiver, std::string_view command);
// Sleeps until `due` or a SIGINT/SIGTERM, whichever comes first; false if a signal came.
bool sleep_until_or_signal(std::chrono::steady_clock::time_point due);

int cmd_replay(const std::vector<std::string_view>& args);
int cmd_run(const std::vector<std::string_view>& args);
int cmd_sim(const std::vector<std::string_view>& args);
int cmd_sim_itch50(const std::vector<std::string_view>& args);  // sim --protocol itch50
// Starts `server` serving `metrics` on `listen`, if set (a bad address,
// which only --metrics can give, is a UsageError quoting `option_text`).
void serve_metrics(std::optional<MetricsServer>& server, MetricsRegistry& metrics,
                   const std::optional<MetricsServerOptions>& listen, std::string_view option_text);
int cmd_capture(const std::vector<std::string_view>& args);
int cmd_send(const std::vector<std::string_view>& args);
int cmd_config(const std::vector<std::string_view>& args);
int cmd_subscribe(const std::vector<std::string_view>& args);  // tools/cmd_subscribe.cpp

}  // namespace tickgate::cli
