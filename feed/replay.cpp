#include "tickgate/feed/replay.hpp"

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
        const LineConfig* lines[2] = {&ch.a, &ch.b};
        for (std::uint8_t l = 0; l < 2; ++l)
            if (auto g = parse_ipv4(lines[l]->group)) keys.push_back({*g, lines[l]->port, l, ch.id});
    }
    return keys;
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

void append_levels(std::string& out, const std::vector<Level>& levels) {
    out += '[';
    for (std::size_t i = 0; i < levels.size(); ++i)
        out += fmt::format("{}[{}, {}]", i ? ", " : "", levels[i].price, levels[i].qty);
    out += ']';
}

std::string real_price(std::int64_t px, int exponent) {
    if (exponent >= 0) return fmt::format("{}", static_cast<double>(px) * std::pow(10.0, exponent));
    const int decimals = std::min(-exponent, 18);
    return fmt::format("{:.{}f}", static_cast<double>(px) * std::pow(10.0, exponent), std::min(decimals, 10));
}

}  // namespace

std::string summary_json(const SummarySource& h, const SummaryContext& ctx, std::string_view live) {
    const auto& dc = h.decoder;
    const InstrumentTable& instruments = h.instruments;
    std::vector<Level> levels;
    std::string out = fmt::format(
        "{{\n  \"packets\": {},\n  \"malformed_packets\": {},\n  \"unknown_messages\": {},\n"
        "  \"stale_session_packets\": {},\n  \"messages\": {},\n  \"session_changes\": {},\n"
        "  \"out_of_range_instruments\": {},\n  \"stale_ms\": {},\n  \"source_age_ms\": {},\n  \"now_ns\": {},\n",
        dc.packets.get(), dc.malformed_packets.get(), dc.unknown_messages.get(), dc.stale_session_packets.get(),
        dc.messages.get(), dc.session_changes.get(), h.sequencer.out_of_range, h.gate_config.stale_ms,
        h.gate_config.source_age_ms, ctx.now_ns);
    if (!ctx.capture.empty()) out += fmt::format("  \"capture\": \"{}\",\n", json_escape(ctx.capture));
    std::string foreign_by_channel;
    for (const ChannelPacketCount& c : ctx.foreign_channel_packets)
        foreign_by_channel += fmt::format("{}\"{}\": {}", foreign_by_channel.empty() ? "" : ", ", c.channel_id, c.packets);
    out += fmt::format("  \"foreign_channel_packets\": {},\n  \"foreign_channel_packets_by_channel\": {{{}}},\n",
                       total_packets(ctx.foreign_channel_packets), foreign_by_channel);
    if (ctx.frames)
        out += fmt::format(
            "  \"frames\": {{\"records\": {}, \"udp_datagrams\": {}, \"non_ip\": {}, \"non_udp\": {}, "
            "\"ipv4_fragments\": {}, \"truncated\": {}}},\n",
            ctx.frames->records, ctx.frames->udp_datagrams, ctx.frames->non_ip, ctx.frames->non_udp,
            ctx.frames->fragments, ctx.frames->truncated);
    // Only a replay reads a capture; frames.records counts what was read of it.
    if (ctx.frames && !ctx.truncation) out += "  \"capture_truncated\": false,\n";
    if (ctx.frames && ctx.truncation)
        out += fmt::format("  \"capture_truncated\": true,\n  \"capture_intact_bytes\": {},\n"
                           "  \"capture_file_bytes\": {},\n",
                           ctx.truncation->intact_bytes, ctx.truncation->file_bytes);
    out += "  \"instruments\": [";
    bool first = true;
    for (const std::uint32_t id : sorted_ids(instruments)) {
        const InstrumentState& st = instruments.state(id);
        const auto& c = st.counters;
        out += first ? "\n" : ",\n";
        first = false;
        out += fmt::format(
            "    {{\"id\": {}, \"symbol\": \"{}\", \"last_seq\": {}, \"accepted\": {}, \"duplicates\": {}, "
            "\"lost\": {}, \"heartbeats\": {}, \"snapshots_applied\": {}, \"stale_snapshots\": {}, "
            "\"gap_events\": {}, \"implausible_seq\": {}, \"foreign_channel_messages\": {}, \"suspect\": {}, "
            "\"bids\": ",
            id, json_escape(st.symbol), st.last_seq, c.accepted, c.duplicates, c.lost, c.heartbeats,
            c.snapshots_applied, c.stale_snapshots, c.gap_events, c.implausible_seq, c.foreign_channel,
            st.suspect ? "true" : "false");
        h.book.levels(id, Side::kBid, levels);
        append_levels(out, levels);
        out += ", \"asks\": ";
        h.book.levels(id, Side::kAsk, levels);
        append_levels(out, levels);
        out += fmt::format(", \"gate\": \"{}\"}}", to_string(h.gate.check(id, ctx.now_ns).reason));
    }
    out += first ? "]" : "\n  ]";
    if (!live.empty()) out += fmt::format(",\n  \"live\": {}", live);
    out += "\n}\n";
    return out;
}

std::string summary_table(const SummarySource& h, const SummaryContext& ctx) {
    const auto& dc = h.decoder;
    const InstrumentTable& instruments = h.instruments;
    std::vector<Level> bids, asks;
    std::string out = fmt::format("{:<8} {:>6} {:>16} {:>16} {:>10} {:>7} {:>7}  {:<8} {:>9}  {}\n", "symbol", "id",
                                  "bid", "ask", "last_seq", "lost", "dups", "state", "age_ms", "gate");
    for (const std::uint32_t id : sorted_ids(instruments)) {
        const InstrumentState& st = instruments.state(id);
        h.book.levels(id, Side::kBid, bids);
        h.book.levels(id, Side::kAsk, asks);
        const GateDecision g = h.gate.check(id, ctx.now_ns);
        std::string reason(to_string(g.reason));
        if (g.reason == GateReason::kStale) reason = fmt::format("stale quote: {} ms", g.silence_ms);
        std::int64_t age_ns = 0;
        const bool age_known = st.has_source && !__builtin_sub_overflow(ctx.now_ns, st.last_source_ns, &age_ns) &&
                               !__builtin_sub_overflow(age_ns, st.clock_offset_ns, &age_ns);
        const std::string age = age_known ? fmt::format("{}", age_ns / 1'000'000) : "-";
        out += fmt::format("{:<8} {:>6} {:>16} {:>16} {:>10} {:>7} {:>7}  {:<8} {:>9}  {}\n",
                           st.symbol[0] ? printable(st.symbol) : "?", id,
                           bids.empty() ? "-" : real_price(bids[0].price, st.price_exponent),
                           asks.empty() ? "-" : real_price(asks[0].price, st.price_exponent), st.last_seq,
                           st.counters.lost, st.counters.duplicates, st.suspect ? "SUSPECT" : "clean", age, reason);
    }
    out += fmt::format("packets {}  messages {}  malformed {}  unknown {}  stale-session {}\n", dc.packets.get(),
                       dc.messages.get(), dc.malformed_packets.get(), dc.unknown_messages.get(),
                       dc.stale_session_packets.get());
    const std::uint64_t foreign = total_packets(ctx.foreign_channel_packets);
    std::uint64_t implausible = 0, foreign_messages = 0;
    for (const std::uint32_t id : instruments.seen_ids()) {
        implausible += instruments.state(id).counters.implausible_seq;
        foreign_messages += instruments.state(id).counters.foreign_channel;
    }
    if (foreign + implausible + foreign_messages > 0)  // rules 6 and 7: worth a look
        out += fmt::format("dropped: foreign-channel packets {}  foreign-channel messages {}  implausible seq {}\n",
                           foreign, foreign_messages, implausible);
    if (ctx.truncation)
        out += fmt::format("capture cut short: {} intact records replayed, the rest ({} of {} bytes) is incomplete\n",
                           ctx.truncation->intact_records,
                           ctx.truncation->file_bytes - ctx.truncation->intact_bytes, ctx.truncation->file_bytes);
    return out;
}

std::string live_view(const SummarySource& src, std::int64_t now_ns, std::string_view config_path,
                      double elapsed_s, std::string_view line_table, bool terminal) {
    const std::string table = summary_table(src, {.now_ns = now_ns});
    if (!terminal) return fmt::format("t={:.1f}s\n{}{}\n", elapsed_s, table, line_table);
    return fmt::format("\x1b[H\x1b[2Jtickgate run — {}  t={:.1f}s\n\n{}\n{}", printable(config_path), elapsed_s, table,
                       line_table);
}

}  // namespace tickgate
