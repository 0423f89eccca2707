// What every `tickgate` command shares: exit codes, the config a command
// runs with, signals, and one entry point per command (tools/cmd_NAME.cpp;
// tools/main.cpp dispatches). Every command parses its arguments with
// cli::Options (options.hpp) and throws cli::UsageError for bad usage.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
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
// and agree with the config's channels. `auto_allowed`: --protocol auto is taken as no
// --protocol (the caller detects the protocol).
Config config_from(const Options& a, bool required, bool auto_allowed = false);
// `--protocol auto` (replay): the protocol read off the capture's first datagrams.
inline constexpr std::string_view kAutoProtocol = "auto";
// A command's --help text with "%PROTOCOLS%" replaced by the known
// protocols' names ("qfb1, mdp3, ...") and "%REFERENCE%" by the reference
// protocol's, so that no help lists them by hand.
[[nodiscard]] std::string help_text(std::string_view text);
// f(), a std::invalid_argument it throws (a simulator's options refused by
// their validate()) turned into a UsageError with the same text.
template <class F>
decltype(auto) as_usage_error(F&& f) {
    try {
        return f();
    } catch (const std::invalid_argument& e) {
        throw UsageError{e.what()};
    }
}
// A command that takes no positional argument: a UsageError if `opt` has one.
void require_no_positional(const Options& opt, std::string_view command);
// The one stderr line of a capture cut short mid-record.
void warn_cut_short(const std::string& path, const CaptureTruncation& t, std::string_view done);
// run and capture receive on the configured lines: a config without any is a
// bad config (exit 2), said before sockets are touched.
void require_channels(const Config& cfg, std::string_view command);

// Set by SIGINT/SIGTERM once install_signal_handlers() ran.
extern std::atomic<bool> g_stop;
void install_signal_handlers();
// Says once, on stderr, what the receiver found at start-up that the user should know: a config
// asking for AF_XDP runs on sockets (its fallback), and why; arrival timestamps not yet on.
void say_receiver_warnings(const Receiver& receiver, std::string_view command);
// Sleeps until `due` or a SIGINT/SIGTERM, whichever comes first; false if a signal came.
bool sleep_until_or_signal(std::chrono::steady_clock::time_point due);

int cmd_replay(const std::vector<std::string_view>& args);
int cmd_run(const std::vector<std::string_view>& args);
// `tickgate sim`: the simulator registered for --protocol, else for the
// --config's channels' protocol, else for the reference protocol's.
int cmd_sim(const std::vector<std::string_view>& args);
// Starts `server` serving `metrics` on `listen`, if set (a bad address,
// which only --metrics can give, is a UsageError quoting `option_text`).
void serve_metrics(std::optional<MetricsServer>& server, MetricsRegistry& metrics,
                   const std::optional<MetricsServerOptions>& listen, std::string_view option_text);
int cmd_capture(const std::vector<std::string_view>& args);
int cmd_send(const std::vector<std::string_view>& args);
int cmd_config(const std::vector<std::string_view>& args);
int cmd_subscribe(const std::vector<std::string_view>& args);  // tools/cmd_subscribe.cpp

// ---- what a protocol adds to the command line
//
// The shared commands name no protocol: each protocol's additions live in
// its one file of tools/ (cmd_sim_NAME.cpp), which registers them with a
// namespace-scope RegisterProtocolCli. Those files are sources of the
// `tickgate` executable itself (CMakeLists.txt, add_executable(tickgate
// ...)), not members of a static library, so their registration objects are
// always linked and constructed before main() runs.

// `tickgate config NAME FILE ...`: a subcommand of `config` a protocol adds.
struct ConfigSubcommand {
    std::string_view name;      // "NAME", the first operand of `config`
    std::string_view synopsis;  // its usage line after `tickgate config `
    std::string_view brief;     // how the usage error names it, after `config `
    std::string_view help;      // its section of `config --help` (after "NAME:")
    std::string_view options_help;  // its "NAME options:" lines
    // Its options (-h/--help aside); any other option given is bad usage.
    std::vector<std::string_view> flags, valued;
    // Operands after NAME (FILE...); any other count is bad usage.
    std::size_t operands = 1;
    // Called with positional() = {NAME, operands...}; returns the exit code.
    int (*run)(const Options& a) = nullptr;
};

struct ProtocolCli {
    std::string_view protocol;  // its kName, as configs and --protocol say it
    // `tickgate sim` for this protocol (nullptr: none), called with sim's arguments.
    int (*sim)(const std::vector<std::string_view>& args) = nullptr;
    std::vector<ConfigSubcommand> config = {};
};

struct RegisterProtocolCli {
    explicit RegisterProtocolCli(ProtocolCli entry);
};

// Every registered entry, in kProtocolNames' order (names outside it last):
// the order static initialisation runs the files in is not the list's.
[[nodiscard]] const std::vector<ProtocolCli>& protocol_clis();
// The entry of `protocol`, or nullptr.
[[nodiscard]] const ProtocolCli* protocol_cli(std::string_view protocol);
// The names of the protocols with a simulator, in that order.
[[nodiscard]] std::vector<std::string_view> simulated_protocols();
// "a", "a or b", "a, b or c": `items` for a message.
[[nodiscard]] std::string or_list(const std::vector<std::string>& items);

}  // namespace tickgate::cli
