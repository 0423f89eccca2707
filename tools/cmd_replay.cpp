// `tickgate replay`: a capture through the handler of its protocol, then the summary.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/itch50/replay.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/replay.hpp"

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
  --protocol NAME      the capture's protocol (qfb1, the default; mdp3, itch50); with --config, its
                       channels' protocol, which this must match
  --json               print the JSON summary on stdout (default: a readable table)
  --stale-ms N         gate: max silence in ms (default 250, or the config's)
  --source-age-ms N    gate: max age at source in ms (default 2000, or the config's)
  --arbitrate          merge lines A/B by packet_seq first, as `tickgate run` does (duplicate
                       packets dropped whole); default: every datagram in capture order, the
                       venue reference handler's semantics (certification)
  --stats              print replay throughput on stderr
  -h, --help           this text
)";


template <VenueProtocol P>
int replay_as(const Options& a, const std::string& capture, const Config& cfg) {
    BasicHandler<P> handler(cfg.capacity, cfg.gate);
    apply_config(handler, cfg);
    const ReplayResult r = replay_capture(capture, cfg, handler, {.progress = true, .arbitrate = a.has("--arbitrate")});

    SummaryContext ctx{.now_ns = r.last_ts_ns,
                       .capture = capture,
                       .frames = &r.frames,
                       .truncation = r.truncation ? &*r.truncation : nullptr,
                       .foreign_channel_packets = r.foreign_channel_packets};
    const std::optional<VenueSummary> venue = venue_summary_of(handler, r.channel_names);
    if (venue) ctx.venue = &*venue;
    fmt::print("{}", a.has("--json") ? summary_json(summary_source(handler), ctx)
                                     : summary_table(summary_source(handler), ctx));
    if (r.truncation) warn_cut_short(capture, *r.truncation, "replayed");
    if (a.has("--stats")) {
        const auto msgs = handler.decoder().counters().messages.get();
        fmt::print(stderr, "replay: {} records, {} datagrams, {} messages in {:.3f} s = {:.2f} M messages/s\n",
                   r.frames.records, r.frames.udp_datagrams, msgs, r.wall_seconds,
                   r.wall_seconds > 0 ? static_cast<double>(msgs) / r.wall_seconds / 1e6 : 0.0);
    }
    return r.truncation ? kExitCaptureCut : kExitOk;
}

// ITCH 5.0 over MoldUDP64: its own pipeline (feed/itch50/replay.hpp).
int replay_itch50(const Options& a, const std::string& capture, const Config& cfg) {
    if (a.has("--arbitrate"))
        throw UsageError{"--arbitrate: ITCH 5.0 merges its lines by stream position always (no packet arbitration)"};
    // Without a config, instrument ids for the channels the capture holds (ITCH50.md: 65,536 per channel).
    auto replay = std::make_unique<itch50::Replay>(cfg, nullptr,
                                                   cfg.channels.empty() ? itch50::Replay::channels_in(capture) : 1);
    const ReplayResult r = replay->run(capture);
    const SummaryContext ctx{.now_ns = r.last_ts_ns,
                             .capture = capture,
                             .frames = &r.frames,
                             .truncation = r.truncation ? &*r.truncation : nullptr};
    fmt::print("{}", a.has("--json") ? replay->summary_json(ctx) : replay->summary_table(ctx));
    if (r.truncation) warn_cut_short(capture, *r.truncation, "replayed");
    if (a.has("--stats")) {
        DecoderCounters totals;
        replay->totals(totals);
        fmt::print(stderr, "replay: {} records, {} datagrams, {} messages in {:.3f} s\n", r.frames.records,
                   r.frames.udp_datagrams, totals.messages.get(), r.wall_seconds);
    }
    return r.truncation ? kExitCaptureCut : kExitOk;
}

}  // namespace

int cmd_replay(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--json", "--stats", "--arbitrate"},
                         {"--config", "--protocol", "--stale-ms", "--source-age-ms"}, "replay");
    if (a.help()) {
        fmt::print("{}", kReplayHelp);
        return kExitOk;
    }
    if (a.positional().size() != 1) throw UsageError{"replay takes exactly one CAPTURE (see tickgate replay --help)"};
    const std::string& capture = a.positional().front();
    Config cfg = config_from(a, false);
    cfg.gate.stale_ms = a.integer("--stale-ms", cfg.gate.stale_ms, 1, 86'400'000);
    cfg.gate.source_age_ms = a.integer("--source-age-ms", cfg.gate.source_age_ms, 1, 86'400'000);

    if (cfg.protocol() == kItch50Name) return replay_itch50(a, capture, cfg);
    return with_protocol(cfg.protocol(), [&]<VenueProtocol P>() { return replay_as<P>(a, capture, cfg); });
}

}  // namespace tickgate::cli
