// `tickgate replay`: a capture through the handler of its protocol, then the summary.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tickgate/feed/counter_fields.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/replay.hpp"
#include "tickgate/text.hpp"

#include "command.hpp"

namespace tickgate::cli {

namespace {

constexpr std::string_view kReplayHelp = R"(usage: tickgate replay [options] CAPTURE

Replays a pcap (µs or ns) or pcapng capture through decode -> sequencer ->
book -> gate. Each record's capture time is the arrival time; the gate is
evaluated at the time of the last record. A capture cut short mid-record (a
killed capture, a full disk, a file still being written) is replayed up to
the cut: the summary says "capture_truncated": true, a warning on stderr
says where, and the exit code is 3.

options:
  --config FILE        TOML config (instruments, channels to filter on, capacities, gate);
                       default: built-in defaults, every UDP/IPv4 datagram taken
  --protocol NAME      the capture's protocol: %PROTOCOLS%, or auto (the default without a
                       config: the protocol that reads the first 1,000 datagrams cleanly, said on
                       stderr); with --config, its channels' protocol, which this must match.
                       A protocol that finds most datagrams malformed while another reads them
                       cleanly says so on stderr
  --json               print the JSON summary on stdout (default: a readable table)
  --book SYMBOL        print that instrument's book (as the table's symbol column names it)
                       instead of the table
  --depth N            levels a side --book prints (default 10)
  --stale-ms N         gate: max silence in ms (default 250, or the config's)
  --source-age-ms N    gate: max age at source in ms (default 2000, or the config's)
  --arbitrate          merge lines A/B by packet_seq first, as `tickgate run` does (duplicate
                       packets dropped whole); default: every datagram in capture order, the
                       venue reference handler's semantics (certification)
  --stats              print replay throughput on stderr
  -h, --help           this text

On a terminal, a progress line on stderr while a long capture replays
(nothing when stderr is a pipe or a file).
)";

// What `replay` prints, whatever the protocol.
struct ReplayOutput {
    bool json = false;
    std::optional<std::string> book;  // --book SYMBOL
    std::size_t depth = 10;
};

// The summary, or --book's view; false if --book names no instrument.
template <class Table, class Book, class Json>
bool print_output(const ReplayOutput& o, const SummaryContext& ctx, Table&& table, Book&& book, Json&& json) {
    if (o.json) {
        fmt::print("{}", json(ctx));
    } else if (o.book) {
        const std::optional<std::string> view = book(ctx, *o.book, o.depth);
        if (!view) {
            fmt::print(stderr, "tickgate: --book {}: no instrument shows as that symbol in this capture\n",
                       printable(*o.book));
            return false;
        }
        fmt::print("{}", *view);
    } else {
        fmt::print("{}", table(ctx));
    }
    return true;
}

// Most of the first datagrams unreadable as the chosen protocol, while
// another reads them cleanly: say which (on stderr; the summary stays as
// it is). Not the replay's counters: a foreign header can read as a
// duplicate, never as malformed (MDP3's MsgSeqNum of an ITCH datagram).
void hint_if_foreign(const std::string& capture, std::string_view chosen) {
    const ProtocolProbe probe = probe_capture(capture);
    const ProtocolProbe::Fit* best = probe.best();
    const std::uint64_t clean = probe.fit(chosen).clean;
    if (best == nullptr || best->name == chosen || clean * 2 >= probe.datagrams() ||
        best->clean * 2 <= probe.datagrams())
        return;
    fmt::print(stderr, "tickgate: hint: {} of {} datagrams are not {}; they read as {}: use --protocol {}\n",
               probe.datagrams() - clean, probe.datagrams(), protocol_title(chosen), best->title, best->name);
}

// Destinations that carry byte-identical datagrams are lines A and B of
// one channel; without a config a protocol whose header names no channel
// replays each as a channel of its own: say how to pair them.
void hint_unpaired_lines(const std::string& capture) {
    const auto pairs = identical_destinations(capture);
    if (pairs.empty()) return;
    std::string list;
    for (const auto& [a, b] : pairs) list += fmt::format("{}{} and {}", list.empty() ? "" : ", ", a, b);
    fmt::print(stderr,
               "tickgate: hint: {} carry identical packets: lines A and B of a channel, replayed here as separate "
               "channels (each one's lost_packets the other line carried); pair them in a config's [[channel]] a "
               "and b (CME: `tickgate config import-cme`) and replay with --config\n",
               list);
}

template <VenueProtocol P>
int replay_as(const Options& a, const std::string& capture, const Config& cfg, const ReplayOutput& o, bool detected) {
    constexpr bool kArbitrated = (features_of<P>() & kPacketArbitration) != 0;
    const bool arbitrate = a.has("--arbitrate");
    if (arbitrate && !kArbitrated)
        throw UsageError{fmt::format("--arbitrate: {} merges its lines by stream position always (no packet arbitration)",
                                     P::kTitle)};
    const auto replay = BasicReplay<P>::for_capture(cfg, capture, {.progress = true, .arbitrate = arbitrate});
    const ReplayResult r = replay->run(capture);

    const SummaryContext ctx{.now_ns = r.last_ts_ns,
                             .capture = capture,
                             .frames = &r.frames,
                             .truncation = r.truncation ? &*r.truncation : nullptr,
                             .foreign_channel_packets = r.foreign_channel_packets};
    const bool found = print_output(
        o, ctx, [&](const SummaryContext& c) { return replay->summary_table(c); },
        [&](const SummaryContext& c, std::string_view symbol, std::size_t depth) {
            return replay->book_view(c, symbol, depth);
        },
        [&](const SummaryContext& c) { return replay->summary_json(c); });
    if (r.truncation) warn_cut_short(capture, *r.truncation, "replayed");
    if (a.has("--stats")) fmt::print(stderr, "{}", replay_stats_line(r, replay->messages()));
    if (!detected) hint_if_foreign(capture, P::kName);
    // Lines A and B replayed apart lose what the other carried: only where packets are arbitrated.
    if (!P::kHeaderNamesChannel && kArbitrated && cfg.channels.empty())
        hint_unpaired_lines(capture);
    if (!found) return kExitFailure;
    return r.truncation ? kExitCaptureCut : kExitOk;
}

// --protocol auto: the protocol that reads the capture's first datagrams
// cleanly (the first known one when none does), said on stderr.
std::string detect_protocol(const std::string& capture) {
    const ProtocolProbe probe = probe_capture(capture);
    if (const ProtocolProbe::Fit* best = probe.best()) {
        fmt::print(stderr, "protocol: {} (auto: {} of {} datagrams read as {})\n", best->name, best->clean,
                   probe.datagrams(), best->title);
        return std::string(best->name);
    }
    std::string titles;
    for (const ProtocolProbe::Fit& f : probe.fits()) titles += (titles.empty() ? "" : ", ") + std::string(f.title);
    fmt::print(stderr, "protocol: {} (auto: none of {} datagrams read as {})\n", kProtocolNames.front(),
               probe.datagrams(), titles);
    return std::string(kProtocolNames.front());
}

}  // namespace

int cmd_replay(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--json", "--stats", "--arbitrate"},
                         {"--config", "--protocol", "--stale-ms", "--source-age-ms", "--book", "--depth"}, "replay");
    if (a.help()) {
        fmt::print("{}", help_text(kReplayHelp));
        return kExitOk;
    }
    if (a.positional().size() != 1) throw UsageError{"replay takes exactly one CAPTURE (see tickgate replay --help)"};
    const std::string& capture = a.positional().front();
    Config cfg = config_from(a, false, true);
    cfg.gate.stale_ms = a.integer("--stale-ms", cfg.gate.stale_ms, 1, 86'400'000);
    cfg.gate.source_age_ms = a.integer("--source-age-ms", cfg.gate.source_age_ms, 1, 86'400'000);
    const ReplayOutput o{.json = a.has("--json"),
                         .book = a.text("--book"),
                         .depth = static_cast<std::size_t>(a.integer("--depth", 10, 1, 1'000'000))};
    if (o.json && o.book) throw UsageError{"--book: prints a book instead of the table; --json has every book already"};
    if (a.has("--depth") && !o.book) throw UsageError{"--depth: only with --book SYMBOL"};
    // Auto: asked for, or neither --protocol nor a config's channels name one.
    const bool detect = cfg.channels.empty() && (a.text("--protocol") == kAutoProtocol || !a.has("--protocol"));
    if (detect) cfg.default_protocol = detect_protocol(capture);

    return with_protocol(cfg.protocol(), [&]<VenueProtocol P>() { return replay_as<P>(a, capture, cfg, o, detect); });
}

}  // namespace tickgate::cli
