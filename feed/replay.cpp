#include "tickgate/feed/replay.hpp"

#include "json_writer.hpp"
#include "tickgate/feed/counter_fields.hpp"
#include "tickgate/feed_handler.hpp"
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

void apply_config(Sequencer& seq, const Config& cfg) {
    seq.set_learn_definitions(cfg.learn_instruments);
    // Rule 7 needs channels that the transport establishes (sockets, or the
    // configured lines of a capture); without them the header is all there is.
    seq.set_bind_instruments_to_channels(!cfg.channels.empty());
    for (const auto& ins : cfg.instruments) seq.define(ins.id, ins.symbol, ins.price_exponent);
    for (const auto& ch : cfg.channels) seq.set_clock_offset(ch.id, ch.clock_offset_ns);
}

namespace {

struct LineKey {
    std::uint32_t group;
    std::uint16_t port;
    std::uint8_t line;
    std::uint16_t channel_id;
};

std::vector<LineKey> configured_lines(const Config& cfg) {
    std::vector<LineKey> keys;
    for (const auto& ch : cfg.channels) {
        const LineConfig* lines[2] = {&ch.a, &ch.b};
        for (std::uint8_t l = 0; l < 2; ++l)
            if (auto g = parse_ipv4(lines[l]->group)) keys.push_back({*g, lines[l]->port, l, ch.id});
    }
    return keys;
}

// Every record of the capture, framing removed; the
// configured lines' datagrams passed to `emit(payload, ts_ns, line)`; counts
// into `r` (records, frames, filtered_out, foreign_channel_packets,
// last_ts_ns, any_records). With configured lines, the line a datagram was
// addressed to decides its channel (rule 7), as the live receiver does.
template <class Emit>
void read_datagrams(CaptureReader& reader, const std::vector<LineKey>& lines, ReplayResult& r, Emit&& emit) {
    while (auto rec = reader.next()) {
        r.any_records = true;
        r.last_ts_ns = rec->ts_ns;
        ++r.frames.records;
        auto dgram = extract_udp(reader.link_type(), rec->frame, r.frames);
        if (!dgram) continue;
        std::uint8_t line = 0xFF;
        if (!lines.empty()) {
            const auto it = std::find_if(lines.begin(), lines.end(), [&](const LineKey& k) {
                return k.group == dgram->dst_ip && k.port == dgram->dst_port;
            });
            if (it == lines.end()) {
                ++r.filtered_out;
                continue;
            }
            line = it->line;
            const wire::PacketHeaderView hdr(dgram->payload);
            if (hdr.valid() && hdr.channel_id() != it->channel_id) {
                r.count_foreign_channel_packet(it->channel_id);
                continue;
            }
        }
        emit(dgram->payload, rec->ts_ns, line);
    }
}

// Datagrams in capture order into the handler, directly or
// through the A/B arbiter.
class DatagramSink {
public:
    DatagramSink(const Config& cfg, Handler& handler, bool arbitrate)
        : handler_(handler),
          arbitrate_(arbitrate),
          arbiter_(make_arbiter(cfg, arbitrate)) {}

    void operator()(std::span<const std::byte> payload, std::int64_t ts_ns, std::uint8_t line) {
        if (!arbitrate_) {
            handler_.on_datagram(payload, ts_ns, line);
            return;
        }
        window_.push(Pending{ts_ns, order_++, line, std::vector<std::byte>(payload.begin(), payload.end())});
        if (window_.size() > kSortWindow) offer_oldest();
    }

    // End of the capture: flush the sort window and release every hold.
    void finish() {
        while (!window_.empty()) offer_oldest();
        arbiter_.expire(INT64_MAX, deliver());
    }
    [[nodiscard]] std::uint64_t duplicate_packets() const noexcept {
        return arbiter_.counters().duplicate_packets.get();
    }

private:
    // Arbitration needs arrival order: a capture lists each receive batch of
    // one line before the next line's, so records are re-sorted by
    // timestamp through a small window before they are offered.
    struct Pending {
        std::int64_t ts;
        std::uint64_t order;
        std::uint8_t line;
        std::vector<std::byte> bytes;
        bool operator>(const Pending& o) const { return ts != o.ts ? ts > o.ts : order > o.order; }
    };
    static constexpr std::size_t kSortWindow = 1024;

    struct Deliver {
        Handler& handler;
        void operator()(std::span<const std::byte> p, std::int64_t t, std::uint8_t l) const {
            handler.on_datagram(p, t, l);
        }
    };
    [[nodiscard]] Deliver deliver() const noexcept { return {handler_}; }
    void offer_oldest() {
        const Pending& p = window_.top();
        arbiter_.expire(p.ts, deliver());  // everything before p.ts has been offered
        arbiter_.offer(p.bytes, p.ts, p.line, deliver());
        window_.pop();
    }

    static PacketArbiter make_arbiter(const Config& cfg, bool arbitrate) {
        const std::uint32_t window = cfg.receiver.arbitration_window;
        const std::int64_t hold_ns = std::int64_t{cfg.receiver.arbitration_hold_us} * 1000;
        if (!arbitrate) return PacketArbiter(0, window, hold_ns);
        // Without configured channels any channel id may appear: track up to 256.
        if (cfg.channels.empty()) return PacketArbiter(256, window, hold_ns);
        return PacketArbiter(cfg.channel_ids(), window, hold_ns);
    }

    Handler& handler_;
    bool arbitrate_;
    PacketArbiter arbiter_;
    std::priority_queue<Pending, std::vector<Pending>, std::greater<>> window_;
    std::uint64_t order_ = 0;
};

}  // namespace

ReplayResult replay_capture(const std::string& path, const Config& cfg, Handler& handler,
                            const ReplayOptions& options) {
    CaptureReader reader(path);
    const std::vector<LineKey> lines = configured_lines(cfg);
    const bool progress = options.progress && ::isatty(STDERR_FILENO) != 0;
    DatagramSink sink(cfg, handler, options.arbitrate);
    ReplayResult r;
    const auto start = std::chrono::steady_clock::now();
    auto last_report = start;
    auto report = [&](std::uint64_t file_bytes) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last_report < std::chrono::milliseconds(250)) return;
        last_report = now;
        fmt::print(stderr, "\rreplay: {:5.1f}%  {} messages",
                   100.0 * static_cast<double>(file_bytes) / static_cast<double>(reader.file_size()),
                   handler.decoder().counters().messages.get());
    };

    read_datagrams(reader, lines, r, [&](std::span<const std::byte> p, std::int64_t t, std::uint8_t l) {
        sink(p, t, l);
        if (progress && (r.frames.records & 0xFFFF) == 0) report(reader.bytes_read());
    });
    sink.finish();
    r.truncation = reader.truncation();
    r.duplicate_packets = sink.duplicate_packets();
    if (progress) fmt::print(stderr, "\r{:60}\r", "");
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

namespace {

std::vector<std::uint32_t> sorted_ids(const Sequencer& seq) {
    std::vector<std::uint32_t> ids(seq.seen_ids().begin(), seq.seen_ids().end());
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
json::Value live_json(const FeedHandler& h) {
    json::Value channels = json::Value::array();
    for (const auto& l : h.line_stats()) {
        if (channels.empty() || channels.back()["id"] != l->channel_id)
            channels.push_back({{"id", l->channel_id}, {"lines", json::Value::array()}});
        json::Value line = {{"line", l->line ? "B" : "A"}, {"group", l->group}, {"port", l->port}};
        json::put_counters(line, *l, kLineCounterFields);
        channels.back()["lines"].push_back(std::move(line));
    }
    json::Value arbitration = {{"enabled", h.config().receiver.arbitration}};
    json::put_counters(arbitration, h.arbiter_counters(), kArbiterCounterFields);
    json::Value ring = {{"capacity", h.config().receiver.ring_size}, {"fill", h.ring_fill()}};
    json::put_counters(ring, h.publisher_counters(), kRingCounterFields);
    return {{"channels", std::move(channels)}, {"arbitration", std::move(arbitration)}, {"ring", std::move(ring)}};
}

}  // namespace

std::string summary_json(const SummarySource& h, const SummaryContext& ctx, const FeedHandler* live) {
    const Sequencer& seq = h.sequencer;
    json::Value out = json::Value::object();
    json::put_counters(out, h.decoder, kDecoderCounterFields);
    json::put_counters(out, seq.counters(), kSequencerCounterFields);
    out["stale_ms"] = h.gate_config.stale_ms;
    out["source_age_ms"] = h.gate_config.source_age_ms;
    out["now_ns"] = ctx.now_ns;
    if (!ctx.capture.empty()) out["capture"] = ctx.capture;
    out["foreign_channel_packets"] = total_packets(ctx.foreign_channel_packets);
    json::Value& by_channel = out["foreign_channel_packets_by_channel"] = json::Value::object();
    for (const ChannelPacketCount& c : ctx.foreign_channel_packets) by_channel[std::to_string(c.channel_id)] = c.packets;
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
    json::Value& instruments = out["instruments"] = json::Value::array();
    for (const std::uint32_t id : sorted_ids(seq)) {
        const InstrumentState& st = seq.state(id);
        json::Value i = {{"id", id}, {"symbol", std::string(st.symbol)}, {"last_seq", st.last_seq}};
        json::put_counters(i, st.counters, kInstrumentCounterFields);
        i["suspect"] = st.suspect;
        i["bids"] = json::levels(seq.books().side(id, Side::kBid));
        i["asks"] = json::levels(seq.books().side(id, Side::kAsk));
        i["gate"] = to_string(h.gate.check(id, ctx.now_ns).reason);
        instruments.push_back(std::move(i));
    }
    if (live) out["live"] = live_json(*live);
    return json::dump(out);
}

std::string summary_table(const SummarySource& h, const SummaryContext& ctx) {
    const auto& dc = h.decoder;
    const Sequencer& seq = h.sequencer;
    std::string out = fmt::format("{:<8} {:>6} {:>16} {:>16} {:>10} {:>7} {:>7}  {:<8} {:>9}  {}\n", "symbol", "id",
                                  "bid", "ask", "last_seq", "lost", "dups", "state", "age_ms", "gate");
    for (const std::uint32_t id : sorted_ids(seq)) {
        const InstrumentState& st = seq.state(id);
        const auto bids = seq.books().side(id, Side::kBid);
        const auto asks = seq.books().side(id, Side::kAsk);
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
    for (const std::uint32_t id : seq.seen_ids()) {
        implausible += seq.state(id).counters.implausible_seq;
        foreign_messages += seq.state(id).counters.foreign_channel;
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
