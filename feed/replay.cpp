#include "tickgate/feed/replay.hpp"

#include "json_writer.hpp"
#include "summary_fields.hpp"
#include "tickgate/feed/af_xdp.hpp"
#include "tickgate/feed/counter_fields.hpp"
#include "tickgate/text.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <queue>
#include <vector>

namespace tickgate {

namespace detail {

std::vector<ReplayLine> replay_lines(const Config& cfg) {
    std::vector<ReplayLine> keys;
    for (const auto& ch : cfg.channels) {
        const auto lines = ch.lines();
        for (std::uint8_t l = 0; l < std::size(lines); ++l)
            if (lines[l])
                if (auto g = parse_ipv4(lines[l]->group)) keys.push_back({*g, lines[l]->port, l, ch.id});
    }
    return keys;
}

std::uint16_t destination_channel(ReplayResult& r, const UdpDatagram& d) {
    const std::uint64_t destination = std::uint64_t{d.dst_ip} << 16 | d.dst_port;
    if (const auto it = r.channel_of_destination.find(destination); it != r.channel_of_destination.end())
        return it->second;
    const auto id = static_cast<std::uint16_t>(r.channel_names.size() + 1);
    r.channel_names.emplace_back(id, endpoint_text(d.dst_ip, d.dst_port));
    r.channel_of_destination.emplace(destination, id);
    return id;
}

// Only on a terminal: a pipe or a file gets the summary alone.
void report_replay_progress(double fraction, std::uint64_t messages) {
    if (::isatty(STDERR_FILENO) != 0) fmt::print(stderr, "\rreplay: {:5.1f}%  {} messages", 100.0 * fraction, messages);
}
void clear_replay_progress() {
    if (::isatty(STDERR_FILENO) != 0) fmt::print(stderr, "\r{:60}\r", "");
}

}  // namespace detail

namespace {

std::vector<std::uint32_t> sorted_ids(const InstrumentTable& instruments) {
    std::vector<std::uint32_t> ids(instruments.seen_ids().begin(), instruments.seen_ids().end());
    std::sort(ids.begin(), ids.end());
    return ids;
}

std::string real_price(std::int64_t px, int exponent) {
    if (exponent >= 0) return fmt::format("{}", static_cast<double>(px) * std::pow(10.0, exponent));
    const int decimals = std::min(-exponent, 18);
    return fmt::format("{:.{}f}", static_cast<double>(px) * std::pow(10.0, exponent), std::min(decimals, 10));
}

}  // namespace

namespace {

// {"channels": [{"id": N, "lines": [{"line": "A", "group": ..., "port": ..., counters...}, B]}, ...],
//  "arbitration": {"enabled": bool, counters...}, "ring": {"capacity": N, "fill": N, counters...}}
// The receive backend: sockets, or AF_XDP with its mode and counters.
json::Value receiver_json(const Receiver& r) {
    const XdpPort* x = r.af_xdp();
    json::Value out = {{"backend", x ? "af_xdp" : "sockets"}};
    if (!r.af_xdp_fallback_reason().empty()) out["af_xdp_fallback_reason"] = r.af_xdp_fallback_reason();
    if (!x) return out;
    const AfXdpCounters c = x->counters();
    out["af_xdp"] = {{"interface", x->interface()},
                     {"mode", x->mode()},
                     {"zero_copy", x->zero_copy()},
                     {"frames", c.frames},
                     {"bytes", c.bytes},
                     {"bad_frames", c.bad_frames},
                     {"unmatched_frames", c.unmatched_frames},
                     {"redirected", c.redirected},
                     {"passed_to_kernel", c.passed_to_kernel},
                     {"rx_ring_full", c.rx_ring_full},
                     {"fill_ring_empty", c.fill_ring_empty},
                     {"rx_dropped", c.rx_dropped}};
    return out;
}

}  // namespace

void put_live(json::Value& summary, const FeedStats& h) {
    json::Value channels = json::Value::array();
    for (const auto& l : h.lines) {
        if (channels.empty() || channels.back()["id"] != l->channel_id)
            channels.push_back({{"id", l->channel_id}, {"lines", json::Value::array()}});
        json::Value line = {{"line", line_name(l->line)}, {"group", l->group}, {"port", l->port}};
        json::put_counters(line, *l, kLineCounterFields);
        channels.back()["lines"].push_back(std::move(line));
    }
    json::Value arbitration = {{"enabled", h.arbitration}};
    json::put_counters(arbitration, h.arbiter, kArbiterCounterFields);
    json::Value ring = {{"capacity", h.ring ? h.ring->capacity() : 0}, {"fill", h.ring ? h.ring->size_approx() : 0}};
    json::put_counters(ring, h.publisher, kRingCounterFields);
    json::Value out = {{"channels", std::move(channels)}, {"arbitration", std::move(arbitration)}, {"ring", std::move(ring)}};
    out["receiver"] = receiver_json(h.receiver);
    summary["live"] = std::move(out);
}


void put_capture_fields(json::Value& out, const SummaryContext& ctx) {
    if (const FrameCounters* f = ctx.frames) {
        out["frames"] = {{"records", f->records},       {"udp_datagrams", f->udp_datagrams},
                         {"non_ip", f->non_ip},         {"non_udp", f->non_udp},
                         {"ipv4_fragments", f->fragments}, {"truncated", f->truncated}};
        // Only a replay reads a capture; frames.records counts what was read of it.
        out["capture_truncated"] = ctx.truncation != nullptr;
        if (ctx.truncation) {
            out["capture_intact_bytes"] = ctx.truncation->intact_bytes;
            out["capture_file_bytes"] = ctx.truncation->file_bytes;
        }
    }
}

std::string summary_json(const SummarySource& h, const SummaryContext& ctx, const FeedStats* live) {
    const InstrumentTable& instruments = h.instruments;
    std::vector<Level> levels;
    json::Value out = json::Value::object();
    json::put_counters(out, h.decoder, kDecoderCounterFields);
    json::put_counters(out, h.sequencer, kSequencerCounterFields);
    out["stale_ms"] = h.gate_config.stale_ms;
    out["source_age_ms"] = h.gate_config.source_age_ms;
    out["now_ns"] = ctx.now_ns;
    if (!ctx.capture.empty()) out["capture"] = ctx.capture;
    out["foreign_channel_packets"] = total_packets(ctx.foreign_channel_packets);
    json::Value& by_channel = out["foreign_channel_packets_by_channel"] = json::Value::object();
    for (const ChannelPacketCount& c : ctx.foreign_channel_packets) by_channel[std::to_string(c.channel_id)] = c.packets;
    put_capture_fields(out, ctx);
    const VenueSummary* venue = ctx.venue;
    if (venue) {
        json::Value& channels = out["channels"] = json::Value::array();
        for (const VenueChannelSummary& c : venue->channels) {
            json::Value ch = json::Value::object();
            if (c.id) ch["channel"] = *c.id;
            else ch["channel"] = c.name;
            ch["packets"] = c.packets;
            ch["duplicate_packets"] = c.duplicate_packets;
            ch["gaps"] = c.gaps;
            ch["lost_packets"] = c.lost_packets;
            ch["resets"] = c.resets;
            ch["unknown_templates"] = c.unknown_templates;
            channels.push_back(std::move(ch));
        }
        if (const auto& d = venue->definitions)
            out["definitions"] = {{"stored", d->stored}, {"capacity", d->capacity}, {"dropped", d->dropped}};
    }
    json::Value& records = out["instruments"] = json::Value::array();
    for (const std::uint32_t id : sorted_ids(instruments)) {
        const InstrumentState& st = instruments.state(id);
        json::Value i = {{"id", id}, {"symbol", std::string(st.symbol)}, {"last_seq", st.last_seq}};
        if (venue && id < venue->venue_ids.size()) {
            i["id"] = venue->venue_ids[id];
            if (st.symbol[0] == '\0') i["symbol"] = std::to_string(venue->venue_ids[id]);  // no definition seen
        }
        if (venue && id < venue->book_errors.size()) i["book_errors"] = venue->book_errors[id];
        json::put_counters(i, st.counters, kInstrumentCounterFields);
        i["suspect"] = st.suspect;
        i["suspect_reason"] = std::string(to_string(suspect_reason(st)));
        h.book.levels(id, Side::kBid, levels);
        i["bids"] = json::levels(levels);
        h.book.levels(id, Side::kAsk, levels);
        i["asks"] = json::levels(levels);
        i["gate"] = to_string(h.gate.check(id, ctx.now_ns).reason);
        records.push_back(std::move(i));
    }
    if (live) put_live(out, *live);
    return json::dump(out);
}

namespace {

// The symbol column: the instrument's symbol, else (MDP3 without a
// definition) the venue's id, else its own id; never "?".
std::string shown_symbol(const InstrumentState& st, const VenueSummary* venue, std::uint32_t id) {
    if (st.symbol[0] != '\0') return printable(st.symbol);
    if (venue && id < venue->venue_ids.size()) return std::to_string(venue->venue_ids[id]);
    return std::to_string(id);
}

// The rows a table shows: every instrument seen, by id; only ctx.symbols'
// if any; at most ctx.max_rows of the most active (messages taken). Sets
// `hidden` to how many the row limit left out.
std::vector<std::uint32_t> table_rows(const InstrumentTable& instruments, const SummaryContext& ctx,
                                      std::size_t& hidden) {
    std::vector<std::uint32_t> ids = sorted_ids(instruments);
    if (!ctx.symbols.empty())
        std::erase_if(ids, [&](std::uint32_t id) {
            const std::string shown = shown_symbol(instruments.state(id), ctx.venue, id);
            return std::find(ctx.symbols.begin(), ctx.symbols.end(), shown) == ctx.symbols.end();
        });
    hidden = 0;
    if (ctx.max_rows == 0 || ids.size() <= ctx.max_rows) return ids;
    hidden = ids.size() - ctx.max_rows;
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(ctx.max_rows), ids.end(),
                      [&](std::uint32_t a, std::uint32_t b) {
                          const std::uint64_t x = instruments.state(a).counters.accepted;
                          const std::uint64_t y = instruments.state(b).counters.accepted;
                          return x != y ? x > y : a < b;
                      });
    ids.resize(ctx.max_rows);
    std::sort(ids.begin(), ids.end());
    return ids;
}

// What the gate says of `id` at `now`, and the age the row shows: the
// gate's own silence from the same check (one clock per row), "-" before
// the instrument was ever alive.
struct RowGate {
    std::string reason;
    std::string age;
};
RowGate row_gate(const SummarySource& h, const InstrumentState& st, std::uint32_t id, std::int64_t now_ns) {
    const GateDecision g = h.gate.check(id, now_ns);
    RowGate r{std::string(to_string(g.reason)), st.alive ? fmt::format("{}", g.silence_ms) : "-"};
    if (g.reason == GateReason::kStale) r.reason = fmt::format("stale quote: {} ms", g.silence_ms);
    if (g.reason == GateReason::kStaleAtSource) {
        std::int64_t age_ns = 0;
        if (!__builtin_sub_overflow(now_ns, st.last_source_ns, &age_ns) &&
            !__builtin_sub_overflow(age_ns, st.clock_offset_ns, &age_ns))
            r.reason = fmt::format("stale at source: {} ms", age_ns / 1'000'000);
    }
    return r;
}

}  // namespace

std::string summary_table(const SummarySource& h, const SummaryContext& ctx) {
    const auto& dc = h.decoder;
    const InstrumentTable& instruments = h.instruments;
    std::vector<Level> bids, asks;
    std::string out = fmt::format("{:<8} {:>6} {:>16} {:>16} {:>10} {:>7} {:>7}  {:<8} {:<11} {:>9}  {}\n", "symbol",
                                  "id", "bid", "ask", "last_seq", "lost", "dups", "state", "why", "age_ms", "gate");
    const VenueSummary* venue = ctx.venue;
    std::size_t hidden = 0;
    for (const std::uint32_t id : table_rows(instruments, ctx, hidden)) {
        const InstrumentState& st = instruments.state(id);
        // The venue's own id (MDP3: SecurityID), and as the symbol when no definition gave one.
        const bool venue_id = venue && id < venue->venue_ids.size();
        const std::string shown_id = venue_id ? std::to_string(venue->venue_ids[id]) : std::to_string(id);
        h.book.levels(id, Side::kBid, bids);
        h.book.levels(id, Side::kAsk, asks);
        const RowGate g = row_gate(h, st, id, ctx.now_ns);
        const std::string_view why = to_string(suspect_reason(st));
        out += fmt::format("{:<8} {:>6} {:>16} {:>16} {:>10} {:>7} {:>7}  {:<8} {:<11} {:>9}  {}\n",
                           shown_symbol(st, venue, id), shown_id,
                           bids.empty() ? "-" : real_price(bids[0].price, st.price_exponent),
                           asks.empty() ? "-" : real_price(asks[0].price, st.price_exponent), st.last_seq,
                           st.counters.lost, st.counters.duplicates, st.suspect ? "SUSPECT" : "clean",
                           why.empty() ? "-" : why, g.age, g.reason);
    }
    if (hidden > 0)
        out += fmt::format("({} more instruments not shown: the {} most active are; --symbols A,B names others)\n",
                           hidden, ctx.max_rows);
    out += fmt::format("packets {}  messages {}  malformed {}  unknown {}  stale-session {}\n", dc.packets.get(),
                       dc.messages.get(), dc.malformed_packets.get(), dc.unknown_messages.get(),
                       dc.stale_session_packets.get());
    const std::uint64_t foreign = total_packets(ctx.foreign_channel_packets);
    std::uint64_t implausible = 0, foreign_messages = 0;
    for (const std::uint32_t id : instruments.seen_ids()) {
        implausible += instruments.state(id).counters.implausible_seq;
        foreign_messages += instruments.state(id).counters.foreign_channel;
    }
    const std::uint64_t out_of_range = h.sequencer.out_of_range;
    if (foreign + implausible + foreign_messages + out_of_range > 0)  // rules 6 and 7, capacity: worth a look
        out += fmt::format(
            "dropped: foreign-channel packets {}  foreign-channel messages {}  implausible seq {}  "
            "beyond capacity {} (capacity.max_instruments {})\n",
            foreign, foreign_messages, implausible, out_of_range, instruments.max_instruments());
    if (venue && venue->definitions && venue->definitions->dropped > 0)
        out += fmt::format("definitions: {} stored, {} dropped ([mdp3] max_definitions {})\n",
                           venue->definitions->stored, venue->definitions->dropped, venue->definitions->capacity);
    if (ctx.truncation)
        out += fmt::format("capture cut short: {} intact records replayed, the rest ({} of {} bytes) is incomplete\n",
                           ctx.truncation->intact_records,
                           ctx.truncation->file_bytes - ctx.truncation->intact_bytes, ctx.truncation->file_bytes);
    return out;
}

std::optional<std::string> book_view(const SummarySource& h, const SummaryContext& ctx, std::string_view symbol,
                                     std::size_t depth) {
    const InstrumentTable& instruments = h.instruments;
    for (const std::uint32_t id : sorted_ids(instruments)) {
        const InstrumentState& st = instruments.state(id);
        if (shown_symbol(st, ctx.venue, id) != symbol) continue;
        std::vector<Level> bids, asks;
        h.book.levels(id, Side::kBid, bids);
        h.book.levels(id, Side::kAsk, asks);
        const RowGate g = row_gate(h, st, id, ctx.now_ns);
        const std::string_view why = to_string(suspect_reason(st));
        std::string out = fmt::format("{} (id {}): {}{}{}, last_seq {}, age_ms {}, gate {}\n", printable(symbol), id,
                                      st.suspect ? "SUSPECT" : "clean", why.empty() ? "" : " ", why, st.last_seq,
                                      g.age, g.reason);
        out += fmt::format("{:>10} {:>16}  {:<16} {:>10}\n", "bid_qty", "bid", "ask", "ask_qty");
        const std::size_t rows = std::min(depth, std::max(bids.size(), asks.size()));
        for (std::size_t r = 0; r < rows; ++r) {
            const bool b = r < bids.size(), a = r < asks.size();
            out += fmt::format("{:>10} {:>16}  {:<16} {:>10}\n", b ? std::to_string(bids[r].qty) : "",
                               b ? real_price(bids[r].price, st.price_exponent) : "",
                               a ? real_price(asks[r].price, st.price_exponent) : "",
                               a ? std::to_string(asks[r].qty) : "");
        }
        if (rows == 0) out += "(empty book)\n";
        return out;
    }
    return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> identical_destinations(const std::string& path,
                                                                        std::uint64_t max_datagrams) {
    struct Seen {
        std::uint64_t hash;
        std::size_t len;
        std::uint64_t destination;  // group << 16 | port
    };
    CaptureReader reader(path);
    FrameCounters frames;
    std::vector<Seen> seen;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
    while (seen.size() < max_datagrams) {
        const auto rec = reader.next();
        if (!rec) break;
        const auto d = extract_udp(reader.link_type(), rec->frame, frames);
        if (!d || d->payload.empty()) continue;
        std::uint64_t h = 14695981039346656037ull;  // FNV-1a
        for (const std::byte b : d->payload) h = (h ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
        const std::uint64_t dst = std::uint64_t{d->dst_ip} << 16 | d->dst_port;
        for (const Seen& s : seen) {
            if (s.hash != h || s.len != d->payload.size() || s.destination == dst) continue;
            const std::pair<std::uint64_t, std::uint64_t> pair = std::minmax(s.destination, dst);
            if (std::find(pairs.begin(), pairs.end(), pair) == pairs.end()) pairs.emplace_back(pair);
        }
        seen.push_back({h, d->payload.size(), dst});
    }
    const auto name = [](std::uint64_t dst) {
        const auto ip = static_cast<std::uint32_t>(dst >> 16);
        return endpoint_text(ip, static_cast<std::uint16_t>(dst & 0xFFFF));
    };
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [a, b] : pairs) out.emplace_back(name(a), name(b));
    return out;
}

std::string replay_stats_line(const ReplayResult& r, std::uint64_t messages) {
    return fmt::format("replay: {} records, {} datagrams, {} messages in {:.3f} s = {:.2f} M messages/s\n",
                       r.frames.records, r.frames.udp_datagrams, messages, r.wall_seconds,
                       r.wall_seconds > 0 ? static_cast<double>(messages) / r.wall_seconds / 1e6 : 0.0);
}

std::string live_view(const SummarySource& src, const SummaryContext& ctx, std::string_view config_path,
                      double elapsed_s, std::string_view line_table, bool terminal) {
    const std::string table = summary_table(src, ctx);
    if (!terminal) return fmt::format("t={:.1f}s\n{}{}\n", elapsed_s, table, line_table);
    return fmt::format("\x1b[H\x1b[2Jtickgate run — {}  t={:.1f}s\n\n{}\n{}", printable(config_path), elapsed_s, table,
                       line_table);
}

}  // namespace tickgate
