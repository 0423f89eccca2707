// tickgate: the command-line front end. Exit codes: 0 ok, 1 runtime
// failure, 2 bad usage, bad config or unreadable input.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/replay.hpp"

namespace {

using namespace tickgate;

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

constexpr std::string_view kVersion = "0.1.0";

constexpr std::string_view kTopHelp = R"(tickgate — QFB/1 market-data feed handler

usage: tickgate <command> [options]

commands:
  replay   replay a pcap/pcapng capture through the handler and print the summary
  help     this text

  tickgate <command> --help   lists the options of a command
  tickgate --version          prints the version

exit codes: 0 ok, 1 runtime failure, 2 bad usage, bad config or unreadable input
)";

constexpr std::string_view kReplayHelp = R"(usage: tickgate replay [options] CAPTURE

Replays a pcap (µs or ns) or pcapng capture through decode -> sequencer ->
book -> gate. Each record's capture time is the arrival time; the gate is
evaluated at the time of the last record.

options:
  --config FILE        TOML config (instruments, channels to filter on, capacities, gate);
                       default: built-in defaults, every UDP/IPv4 datagram taken
  --json               print the JSON summary on stdout (default: a readable table)
  --stale-ms N         gate: max silence in ms (default 250, or the config's)
  --source-age-ms N    gate: max age at source in ms (default 2000, or the config's)
  --stats              print replay throughput on stderr
  -h, --help           this text
)";

struct UsageError {
    std::string message;
};

std::int64_t parse_positive(std::string_view opt, std::string_view text) {
    char* end = nullptr;
    const std::string s(text);
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || v <= 0)
        throw UsageError{fmt::format("{}: expected a positive integer, got '{}'", opt, text)};
    return v;
}

int cmd_replay(const std::vector<std::string_view>& args) {
    std::optional<std::string> config_path, capture;
    std::optional<std::int64_t> stale_ms, source_age_ms;
    bool json = false, stats = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= args.size()) throw UsageError{fmt::format("{}: missing value", a)};
            return args[++i];
        };
        if (a == "-h" || a == "--help") {
            fmt::print("{}", kReplayHelp);
            return kExitOk;
        } else if (a == "--config") {
            config_path = std::string(value());
        } else if (a == "--json") {
            json = true;
        } else if (a == "--stats") {
            stats = true;
        } else if (a == "--stale-ms") {
            stale_ms = parse_positive(a, value());
        } else if (a == "--source-age-ms") {
            source_age_ms = parse_positive(a, value());
        } else if (a.starts_with("-") && a.size() > 1) {
            throw UsageError{fmt::format("unknown option '{}' (see tickgate replay --help)", a)};
        } else if (!capture) {
            capture = std::string(a);
        } else {
            throw UsageError{"replay takes one capture file"};
        }
    }
    if (!capture) throw UsageError{"replay: missing CAPTURE (see tickgate replay --help)"};

    Config cfg = config_path ? load_config(*config_path) : Config{};
    if (stale_ms) cfg.gate.stale_ms = *stale_ms;
    if (source_age_ms) cfg.gate.source_age_ms = *source_age_ms;

    Handler handler(cfg.capacity, cfg.gate);
    apply_config(handler, cfg);
    const ReplayResult r = replay_capture(*capture, cfg, handler, /*progress=*/true);

    SummaryContext ctx{r.last_ts_ns, *capture, &r.frames};
    if (json) {
        fmt::print("{}", summary_json(handler, ctx));
    } else {
        fmt::print("{}", summary_table(handler, ctx));
    }
    if (stats) {
        const auto msgs = handler.decoder().counters().messages.get();
        fmt::print(stderr, "replay: {} records, {} datagrams, {} messages in {:.3f} s = {:.2f} M messages/s\n",
                   r.frames.records, r.frames.udp_datagrams, msgs, r.wall_seconds,
                   r.wall_seconds > 0 ? static_cast<double>(msgs) / r.wall_seconds / 1e6 : 0.0);
    }
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    if (args.empty()) {
        fmt::print(stderr, "{}", kTopHelp);
        return kExitUsage;
    }
    const std::string_view cmd = args.front();
    args.erase(args.begin());
    try {
        if (cmd == "-h" || cmd == "--help" || cmd == "help") {
            fmt::print("{}", kTopHelp);
            return kExitOk;
        }
        if (cmd == "--version") {
            fmt::print("tickgate {}\n", kVersion);
            return kExitOk;
        }
        if (cmd == "replay") return cmd_replay(args);
        fmt::print(stderr, "tickgate: unknown command '{}'\n{}", cmd, kTopHelp);
        return kExitUsage;
    } catch (const UsageError& e) {
        fmt::print(stderr, "tickgate: {}\n", e.message);
        return kExitUsage;
    } catch (const ConfigError& e) {
        fmt::print(stderr, "tickgate: config error: {}\n", e.what());
        return kExitUsage;
    } catch (const CaptureError& e) {
        fmt::print(stderr, "tickgate: {}\n", e.what());
        return kExitUsage;
    } catch (const std::exception& e) {
        fmt::print(stderr, "tickgate: {}\n", e.what());
        return 1;
    }
}
