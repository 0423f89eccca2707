#include "command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <thread>
#include <utility>

#include "tickgate/feed/protocols.hpp"
#include "tickgate/text.hpp"

namespace tickgate::cli {

Config config_from(const cli::Options& a, bool required, bool auto_allowed) {
    auto name = a.text("--protocol");
    if (auto_allowed && name == kAutoProtocol) name.reset();  // the caller detects it
    if (name && std::find(kProtocolNames.begin(), kProtocolNames.end(), *name) == kProtocolNames.end())
        throw UsageError{fmt::format("--protocol: expected one of {}, got '{}'", protocol_list(), printable(*name))};
    Config cfg;
    // The estimate checked is the protocol's that will run: a channel-less
    // config takes --protocol's (the reference protocol's without it).
    if (const auto path = a.text("--config")) cfg = name ? load_config(*path, *name) : load_config(*path);
    else if (required) throw UsageError{"--config FILE is required"};
    if (name) {
        if (!cfg.channels.empty() && cfg.protocol() != *name)
            throw UsageError{fmt::format("--protocol {}: the config's channels speak {}", *name, cfg.protocol())};
        cfg.default_protocol = *name;
    }
    return cfg;
}

std::string help_text(std::string_view text) {
    std::string out(text);
    const auto replace = [&](std::string_view token, const std::string& with) {
        for (std::size_t at = out.find(token); at != std::string::npos; at = out.find(token, at + with.size()))
            out.replace(at, token.size(), with);
    };
    replace("%PROTOCOLS%", protocol_list());
    replace("%REFERENCE%", std::string(ReferenceProtocol::kName));
    return out;
}

void require_no_positional(const Options& opt, std::string_view command) {
    if (!opt.positional().empty())
        throw UsageError{fmt::format("{} takes no positional argument, got '{}'", command, opt.positional().front())};
}

void warn_cut_short(const std::string& path, const CaptureTruncation& t, std::string_view done) {
    fmt::print(stderr, "tickgate: warning: {}: cut short at byte {} of {} (record {}: {}); the {} intact records were {}\n",
               printable(path), t.intact_bytes, t.file_bytes, t.intact_records + 1, t.detail, t.intact_records, done);
}

void require_channels(const Config& cfg, std::string_view command) {
    if (cfg.channels.empty())
        throw ConfigError(fmt::format("{}:1: channel: expected at least one [[channel]] ({} receives on its lines A "
                                      "and B), got none",
                                      cfg.source, command));
}

std::atomic<bool> g_stop{false};

namespace {
extern "C" void on_signal(int) { g_stop.store(true); }
}  // namespace

// In slices of at most 20 ms, because the signal handler only sets g_stop and a plain
// sleep_until would sit out the whole wait (a capture with a 300 s gap kept
// `send` alive for minutes after Ctrl-C). Returns false if a signal came.
bool sleep_until_or_signal(std::chrono::steady_clock::time_point due) {
    constexpr auto kSlice = std::chrono::milliseconds(20);
    while (!g_stop.load(std::memory_order_relaxed)) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= due) return true;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(due - now, kSlice));
    }
    return false;
}

void serve_metrics(std::optional<MetricsServer>& server, MetricsRegistry& metrics,
                   const std::optional<MetricsServerOptions>& listen, std::string_view option_text) {
    if (!listen) return;
    server.emplace(metrics, *listen);
    try {
        server->start();
    } catch (const std::invalid_argument& e) {
        // A non-loopback or malformed address, which only --metrics can
        // give (the config's metrics.listen is checked when it is read).
        throw UsageError{fmt::format("--metrics {}: {}", option_text, e.what())};
    }
    fmt::print(stderr, "metrics: http://{}:{}/metrics\n", listen->address, server->port());
}

void say_receiver_warnings(const Receiver& receiver, std::string_view command) {
    if (const std::string& why = receiver.af_xdp_fallback_reason(); !why.empty())
        fmt::print(stderr, "{}: receiving on sockets (receiver.af_xdp.fallback = \"sockets\"): {}\n", command, why);
    if (const std::string& why = receiver.timestamp_warning(); !why.empty())
        fmt::print(stderr, "{}: warning: {}\n", command, why);
}

void install_signal_handlers() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
}

namespace {

// Function-local, so that it exists before the first registration object
// (in another file, constructed in an unspecified order) adds to it.
std::vector<ProtocolCli>& registry() {
    static std::vector<ProtocolCli> entries;
    return entries;
}

// Where `protocol` sorts: its place in kProtocolNames, after them if none.
std::size_t rank(std::string_view protocol) {
    return static_cast<std::size_t>(std::find(kProtocolNames.begin(), kProtocolNames.end(), protocol) -
                                    kProtocolNames.begin());
}

}  // namespace

RegisterProtocolCli::RegisterProtocolCli(ProtocolCli entry) {
    std::vector<ProtocolCli>& entries = registry();
    const auto at = std::find_if(entries.begin(), entries.end(), [&](const ProtocolCli& e) {
        return std::pair(rank(entry.protocol), entry.protocol) < std::pair(rank(e.protocol), e.protocol);
    });
    entries.insert(at, std::move(entry));
}

const std::vector<ProtocolCli>& protocol_clis() { return registry(); }

const ProtocolCli* protocol_cli(std::string_view protocol) {
    for (const ProtocolCli& e : registry())
        if (e.protocol == protocol) return &e;
    return nullptr;
}

std::vector<std::string_view> simulated_protocols() {
    std::vector<std::string_view> names;
    for (const ProtocolCli& e : registry())
        if (e.sim != nullptr) names.push_back(e.protocol);
    return names;
}

std::string or_list(const std::vector<std::string>& items) {
    std::string s;
    for (std::size_t i = 0; i < items.size(); ++i)
        s += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
    return s;
}

}  // namespace tickgate::cli
