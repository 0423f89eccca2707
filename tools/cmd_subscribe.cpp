// `tickgate subscribe SUBJECT...`: a fan-out consumer (issue 27) on the command line.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "feed/json_writer.hpp"
#include "tickgate/fanout/consumer.hpp"
#include "tickgate/text.hpp"

#include "command.hpp"
#include "fanout_options.hpp"

namespace tickgate::cli {

namespace {

constexpr std::string_view kSubscribeHelp = R"(usage: tickgate subscribe [options] SUBJECT...

A consumer of `tickgate run --fanout`: subscribes to the subjects (NATS
wildcards allowed, e.g. tickgate.qfb1.>), reads the last record of each from
the JetStream stream (the snapshot), then prints each instrument's book top
and gate verdict as records arrive. Duplicates are dropped, gaps counted and
repaired by a snapshot (the instrument is suspect meanwhile), a publisher
restart is a new stream; a consumer that falls behind is told (stderr) and
reads every instrument again. A publisher whose heartbeats (PREFIX.VENUE.heartbeat,
covered by PREFIX.>) stop for 3 intervals is silent: its instruments are not
tradeable until it is heard again and they are read again (stderr says both).
At exit, the final state of every instrument.

options:
  --config FILE        take servers, stream and credentials from its [fanout] table
  --servers URL,...    NATS servers (default: the config's, else nats://127.0.0.1:4222)
  --stream NAME        the JetStream stream (default: the config's, else TICKGATE)
  --duration S         stop after S seconds (default: until a signal)
  --pending-limit N    messages the client library queues before it drops (slow consumer)
  --delay-us N         spend N µs per message (tests: a slow, lossy consumer)
  --json               print the final state as JSON on stdout
  --quiet              no line per record
  -h, --help           this text
)";

std::string side_text(const Level* ls, std::uint8_t n) {
    return n == 0 ? std::string("-") : fmt::format("{}x{}", ls[0].price, ls[0].qty);
}

json::Value view_json(const std::string& subject, const fanout::InstrumentView& v) {
    const fanout::Record& r = v.record;
    json::Value bids = json::Value::array(), asks = json::Value::array();
    for (std::size_t i = 0; i < r.n_bids; ++i) bids.push_back(json::Value::array({r.bids[i].price, r.bids[i].qty}));
    for (std::size_t i = 0; i < r.n_asks; ++i) asks.push_back(json::Value::array({r.asks[i].price, r.asks[i].qty}));
    return {{"subject", subject},
            {"symbol", std::string(r.symbol_view())},
            {"id", r.instrument},
            {"channel", r.channel},
            {"session", r.session},
            {"seq", r.seq},
            {"gate", std::string(to_string(r.verdict))},
            {"suspect_reason", std::string(to_string(r.suspect_why))},
            {"consumer_suspect", v.suspect},
            {"publisher_silent", v.publisher_silent},
            {"bids", bids},
            {"asks", asks},
            {"received", v.received},
            {"duplicates", v.duplicates},
            {"gaps", v.gaps},
            {"lost", v.lost},
            {"snapshots", v.snapshots}};
}

}  // namespace

int cmd_subscribe(const std::vector<std::string_view>& args) {
    const cli::Options a(args, {"--json", "--quiet"},
                         {"--config", "--servers", "--stream", "--duration", "--pending-limit", "--delay-us"}, "subscribe");
    if (a.help()) {
        fmt::print("{}", kSubscribeHelp);
        return kExitOk;
    }
    if (a.positional().empty()) throw UsageError{"subscribe needs at least one SUBJECT (e.g. tickgate.qfb1.>)"};
    fanout::ConsumerOptions o;
    if (a.text("--config")) o = consumer_options(config_from(a, true).fanout);
    if (const auto list = a.text("--servers")) {
        o.servers.clear();
        std::string_view rest = *list;
        while (!rest.empty()) {
            const std::string_view s = rest.substr(0, rest.find(','));
            if (!s.empty()) o.servers.emplace_back(s);
            rest.remove_prefix(std::min(rest.size(), s.size() + 1));
        }
        if (o.servers.empty()) throw UsageError{"--servers: at least one nats://HOST:PORT"};
    }
    if (const auto s = a.text("--stream")) o.stream = *s;
    o.pending_limit = static_cast<int>(a.integer("--pending-limit", -1, 1, 10'000'000));
    const double duration = a.decimal("--duration", 0, 0, 1e9);
    const bool json_out = a.has("--json");
    const bool quiet = a.has("--quiet");
    std::vector<std::string> subjects;
    for (const std::string_view s : a.positional()) subjects.emplace_back(s);

    install_signal_handlers();
    fanout::Consumer consumer(o, subjects);
    consumer.set_processing_delay_us(static_cast<int>(a.integer("--delay-us", 0, 0, 1'000'000)));
    consumer.on_notice([](std::string_view what) { fmt::print(stderr, "tickgate: subscribe: {}\n", what); });
    std::FILE* lines = json_out ? stderr : stdout;
    if (!quiet)
        consumer.on_update([lines](const std::string& subject, const fanout::InstrumentView& v) {
            const fanout::Record& r = v.record;
            fmt::print(lines, "{} seq {} bid {} ask {} gate {}{}\n", printable(subject), r.seq,
                       side_text(r.bids, r.n_bids), side_text(r.asks, r.n_asks), to_string(r.verdict),
                       v.suspect ? " (suspect: gap, reading snapshot)" : "");
        });
    const auto t0 = std::chrono::steady_clock::now();
    while (!g_stop.load(std::memory_order_relaxed)) {
        if (duration > 0 && std::chrono::steady_clock::now() - t0 >= std::chrono::duration<double>(duration)) break;
        consumer.poll(50);
    }
    consumer.poll(0);  // snapshots still wanted

    const auto views = consumer.views();
    const fanout::TrackerCounters t = consumer.tracker_counters();
    const fanout::ConsumerCounters c = consumer.counters();
    if (json_out) {
        json::Value out;
        json::Value& list = out["instruments"] = json::Value::array();
        for (const auto& [subject, v] : views) list.push_back(view_json(subject, v));
        out["counters"] = {{"records", t.records},          {"duplicates", t.duplicates},
                           {"gaps", t.gaps},                {"lost", t.lost},
                           {"stale_session", t.stale_session}, {"session_changes", t.session_changes},
                           {"snapshots", t.snapshots},      {"malformed", t.malformed},
                           {"resyncs", t.resyncs},          {"renamed", t.renamed},
                           {"heartbeats", t.heartbeats},    {"publisher_silences", t.publisher_silences},
                           {"publisher_returns", t.publisher_returns},
                           {"slow_consumer", c.slow_consumer},
                           {"dropped", c.dropped},          {"reconnects", c.reconnects},
                           {"disconnects", c.disconnects},  {"snapshot_errors", c.snapshot_errors}};
        fmt::print("{}", json::dump(out));
    } else {
        fmt::print("{:<40} {:>8} {:>20} {:>20} {:<16} {}\n", "subject", "seq", "bid", "ask", "gate", "here");
        for (const auto& [subject, v] : views)
            fmt::print("{:<40} {:>8} {:>20} {:>20} {:<16} {}\n", printable(subject), v.record.seq,
                       side_text(v.record.bids, v.record.n_bids), side_text(v.record.asks, v.record.n_asks),
                       to_string(v.record.verdict), v.suspect ? "suspect" : "clean");
        fmt::print("records {}  duplicates {}  gaps {}  lost {}  snapshots {}  session_changes {}  slow_consumer {}  "
                   "dropped {}  reconnects {}  malformed {}\n",
                   t.records, t.duplicates, t.gaps, t.lost, t.snapshots, t.session_changes, c.slow_consumer, c.dropped,
                   c.reconnects, t.malformed);
    }
    return kExitOk;
}

}  // namespace tickgate::cli
