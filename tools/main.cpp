// tickgate: the command-line front end; one file per command (cmd_NAME.cpp).
// Exit codes: 0 ok, 1 runtime failure, 2 bad usage, bad config or
// unreadable input, 3 the capture was cut short (replay, send: everything
// intact was processed, the output is whole).
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/af_xdp.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/protocols.hpp"

#include "command.hpp"

namespace cli = tickgate::cli;

namespace {

using namespace tickgate::cli;

constexpr std::string_view kVersion = "0.1.0";

// The protocols from their list, the simulators from the registry (command.hpp).
std::string top_help() {
    std::string simulated;
    for (const std::string_view p : simulated_protocols()) simulated += (simulated.empty() ? "" : ", ") + std::string(p);
    return fmt::format(R"(tickgate — market-data feed handler (protocols: {})

usage: tickgate <command> [options]

commands:
  run      the live handler: join the configured lines, show the live book and gate
  sim      a venue simulator ({}) publishing on loopback multicast (A and B lines)
  replay   replay a pcap/pcapng capture through the handler and print the summary
  capture  write the live datagrams with kernel timestamps to a pcap/pcapng file
  send     re-publish a capture's multicast datagrams on loopback
  config   `config check FILE`: validate a config and print the memory it needs
  subscribe  a consumer of `run --fanout`: books and gate verdicts from NATS JetStream
  help     this text

  tickgate <command> --help   lists the options of a command
  tickgate --version          prints the version

exit codes: 0 ok, 1 runtime failure, 2 bad usage, bad config or unreadable input,
            3 the capture was cut short mid-record (replay, send): what is intact was
            processed and the summary printed, a warning on stderr says where it was cut
)",
                       tickgate::protocol_list(), simulated);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    if (args.empty()) {
        fmt::print(stderr, "{}", top_help());
        return kExitUsage;
    }
    const std::string_view cmd = args.front();
    args.erase(args.begin());
    try {
        if (cmd == "-h" || cmd == "--help" || cmd == "help") {
            fmt::print("{}", top_help());
            return kExitOk;
        }
        if (cmd == "--version") {
            fmt::print("tickgate {}\n", kVersion);
            return kExitOk;
        }
        if (cmd == "replay") return cli::cmd_replay(args);
        if (cmd == "run") return cli::cmd_run(args);
        if (cmd == "sim") return cli::cmd_sim(args);
        if (cmd == "capture") return cli::cmd_capture(args);
        if (cmd == "send") return cli::cmd_send(args);
        if (cmd == "config") return cli::cmd_config(args);
        if (cmd == "subscribe") return cli::cmd_subscribe(args);
        fmt::print(stderr, "tickgate: unknown command '{}'\n{}", cmd, top_help());
        return kExitUsage;
    } catch (const UsageError& e) {
        fmt::print(stderr, "tickgate: {}\n", e.message);
        return kExitUsage;
    } catch (const tickgate::ConfigError& e) {
        fmt::print(stderr, "tickgate: config error: {}\n", e.what());
        return kExitUsage;
    } catch (const tickgate::XdpUnavailable& e) {
        // The config asks for what this machine cannot give: say what to change.
        fmt::print(stderr, "tickgate: {}\n(or set receiver.af_xdp.fallback = \"sockets\")\n", e.what());
        return kExitUsage;
    } catch (const tickgate::CaptureWriteError& e) {
        fmt::print(stderr, "tickgate: {}\n", e.what());
        return kExitFailure;
    } catch (const tickgate::CaptureError& e) {
        fmt::print(stderr, "tickgate: {}\n", e.what());
        return kExitUsage;
    } catch (const std::exception& e) {
        fmt::print(stderr, "tickgate: {}\n", e.what());
        return kExitFailure;
    }
}
