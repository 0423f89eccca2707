// A minimal trading engine embedding tickgate: one engine thread polls the
// handler, resolves the symbols it trades as their definitions arrive, and
// prices an "order" only off a safe quote (the book's top with the gate's
// verdict, read together). Works on every protocol the config names (the
// shared handler), or, with --fanout, on a host that has only the fan-out: no feed, no
// multicast, the normalized books and verdicts from NATS JetStream.
// usage: example_engine [--fanout] CONFIG [SECONDS] [SYMBOL ...]
//   SYMBOLs default to the config's instruments.subscribe, else its [[instrument]]s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "tickgate/fanout/consumer.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed_handler.hpp"

#include "fanout_options.hpp"

namespace {

struct Traded {
    std::string symbol;
    std::optional<tickgate::InstrumentHandle> handle;  // none until defined (the embedded handler's)
    bool defined = false;                              // a handle, or (--fanout) a record of the symbol
    std::uint64_t priced = 0;
    std::uint64_t refused = 0;
    tickgate::GateReason last_refusal = tickgate::GateReason::kOk;
};

std::vector<Traded> symbols_to_trade(const tickgate::Config& cfg, int first, int argc, char** argv) {
    std::vector<Traded> out;
    const auto add = [&](std::string symbol) { out.emplace_back().symbol = std::move(symbol); };
    for (int i = first; i < argc; ++i) add(argv[i]);
    if (out.empty())
        for (const std::string& s : cfg.subscribe) add(s);
    if (out.empty())
        for (const tickgate::InstrumentConfig& ins : cfg.instruments) add(ins.symbol);
    return out;
}

// Prices an order off a safe quote, or counts the gate's refusal.
void price(Traded& t, const tickgate::SafeQuote& q) {
    if (q.ok() && q.bid.qty != 0) {
        ++t.priced;  // an order would be priced off q.bid.price here
    } else if (!q.ok()) {
        ++t.refused;
        t.last_refusal = q.verdict.reason;
    }
}

template <tickgate::VenueProtocol P>
void trade(const tickgate::Config& cfg, std::vector<Traded>& traded, std::chrono::seconds duration) {
    tickgate::BasicFeedHandler<P> feed(cfg);  // opens and joins the lines
    bool all_resolved = false;
    const auto resolve = [&] {
        all_resolved = true;
        for (Traded& t : traded) {
            t.handle = feed.find(t.symbol);
            t.defined = t.defined || t.handle.has_value();
            all_resolved = all_resolved && t.handle.has_value();
        }
    };
    resolve();  // configured instruments are known before any packet
    feed.start();  // network thread: receive -> decode -> ring
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
        // Engine thread: apply queued events; a definition may move a symbol
        // (a new day's id), so resolve again; on a book change, "trade".
        // (ITCH names its stocks in the day's directory, not by definition
        // updates: while a symbol is unresolved it is looked up after each
        // poll, O(1) a symbol; a new session, a channel event, renumbers them.)
        // A channel event that changed books (a new session, an ITCH GLIMPSE
        // snapshot) replaced the channel's books: whatever was derived from
        // the old ones is void, so every traded quote is read again, not patched.
        if (!all_resolved) resolve();
        feed.poll([&](const tickgate::Update& u, const tickgate::Event&) {
            const bool channel_wide = u.verdict == tickgate::Verdict::kChannelEvent;
            if (u.verdict == tickgate::Verdict::kDefinition || u.verdict == tickgate::Verdict::kSessionReset ||
                channel_wide)
                resolve();
            if (!u.book_changed) return;
            for (Traded& t : traded)
                if (t.handle && (channel_wide || t.handle->id == u.instrument_id))
                    price(t, feed.safe_quote(*t.handle, tickgate::realtime_ns()));
        });
    }
    feed.stop();
}

// A host with only the fan-out: the consumer reads the stream's last
// record of every instrument under the config's [fanout] prefix, then what
// is published live; each record of a traded symbol is its whole book top
// with the publisher's gate verdict. An order is priced only off a view
// that is tradeable(): the publisher said ok and nothing is missing here
// (a gap or a publisher restart is suspect until the snapshot is read).
void trade_fanout(const tickgate::Config& cfg, std::vector<Traded>& traded, std::chrono::seconds duration) {
    tickgate::fanout::Consumer consumer(tickgate::cli::consumer_options(cfg.fanout), {cfg.fanout.prefix + ".>"});
    consumer.on_update([&](const std::string&, const tickgate::fanout::InstrumentView& v) {
        const std::string_view symbol = v.record.symbol_view();
        for (Traded& t : traded) {
            if (t.symbol != symbol) continue;
            t.defined = true;
            if (v.tradeable() && v.record.n_bids != 0) {
                ++t.priced;  // an order would be priced off v.record.bids[0] here
            } else if (!v.tradeable()) {
                ++t.refused;
                t.last_refusal = v.suspect ? tickgate::GateReason::kSuspect : v.record.verdict;
            }
        }
    });
    consumer.on_notice([](std::string_view what) {
        std::fprintf(stderr, "example_engine: fanout: %.*s\n", static_cast<int>(what.size()), what.data());
    });
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) consumer.poll(50);
}

}  // namespace

int main(int argc, char** argv) {
    const bool fanout = argc > 1 && std::strcmp(argv[1], "--fanout") == 0;
    const int at = fanout ? 2 : 1;  // CONFIG's position
    if (argc <= at) {
        std::fprintf(stderr, "usage: %s [--fanout] CONFIG [SECONDS] [SYMBOL ...]\n", argv[0]);
        return 2;
    }
    try {
        const tickgate::Config cfg = tickgate::load_config(argv[at]);
        std::vector<Traded> traded = symbols_to_trade(cfg, at + 2, argc, argv);
        const std::chrono::seconds duration(argc > at + 1 ? std::atoi(argv[at + 1]) : 5);
        if (fanout)
            trade_fanout(cfg, traded, duration);
        else
            tickgate::with_protocol(cfg.protocol(), [&]<tickgate::VenueProtocol P>() { trade<P>(cfg, traded, duration); });
        std::uint64_t orders = 0, refused = 0;
        for (const Traded& t : traded) {
            orders += t.priced;
            refused += t.refused;
            std::printf("%-16s %s  orders priced %llu, refused %llu%s%s\n", t.symbol.c_str(),
                        t.defined ? "defined  " : "undefined", static_cast<unsigned long long>(t.priced),
                        static_cast<unsigned long long>(t.refused), t.refused ? " (last: " : "",
                        t.refused ? (std::string(tickgate::to_string(t.last_refusal)) + ")").c_str() : "");
        }
        std::printf("orders priced: %llu, refused by the gate: %llu\n", static_cast<unsigned long long>(orders),
                    static_cast<unsigned long long>(refused));
        return 0;
    } catch (const tickgate::ConfigError& e) {
        std::fprintf(stderr, "config error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
