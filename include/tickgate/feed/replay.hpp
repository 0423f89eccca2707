// Offline replay of captures through a handler of any protocol, and the
// summary (JSON and table) that `tickgate replay` and `tickgate run` print.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/book/book.hpp"
#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/feed_stats.hpp"
#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/venue_summary.hpp"

namespace tickgate {

// apply_config (config.hpp) for a whole handler.
template <class Handler>
void apply_config(Handler& handler, const Config& cfg) {
    using P = typename Handler::Protocol;
    if constexpr (requires(typename P::Decoder& d) { P::configure(d, cfg); }) handler.decoder().configure(cfg);
    apply_config(handler.instruments(), handler.sequencer(), cfg);
    configure_book(handler.book(), cfg);
}

struct ChannelPacketCount {
    std::uint16_t channel_id;
    std::uint64_t packets;
};
// The packets of every channel together.
[[nodiscard]] inline std::uint64_t total_packets(std::span<const ChannelPacketCount> counts) noexcept {
    std::uint64_t n = 0;
    for (const ChannelPacketCount& c : counts) n += c.packets;
    return n;
}

struct ReplayResult {
    FrameCounters frames;
    std::uint64_t filtered_out = 0;   // UDP datagrams not addressed to a configured line
    std::int64_t last_ts_ns = 0;      // capture time of the last record (the gate's `now`)
    std::uint64_t duplicate_packets = 0;  // dropped by arbitration (second copies)
    std::vector<ChannelPacketCount> foreign_channel_packets;  // per configured channel (rule 7), if any
    bool any_records = false;
    double wall_seconds = 0;

    void count_foreign_channel_packet(std::uint16_t channel_id) {
        for (ChannelPacketCount& c : foreign_channel_packets)
            if (c.channel_id == channel_id) {
                ++c.packets;
                return;
            }
        foreign_channel_packets.push_back({channel_id, 1});
    }
    // Set when the capture was cut short: every intact record was replayed.
    std::optional<CaptureTruncation> truncation;
    // Without a config, a protocol whose header names no channel (MDP3):
    // each destination group:port is a channel, numbered from 1.
    ChannelNames channel_names;
    // The same by destination (group << 16 | port): a datagram's channel is
    // found without building its name (a string, allocated, per datagram).
    std::unordered_map<std::uint64_t, std::uint16_t> channel_of_destination;
};

struct ReplayOptions {
    bool progress = false;   // a progress line on stderr (only if it is a terminal)
    // Merge lines A/B by packet_seq as the live handler does (config's
    // receiver.arbitration_* settings; capture time is the clock). Off: every
    // datagram in capture order, the venue reference handler's semantics.
    bool arbitrate = false;
};

// What a replay feeds a capture's datagrams to: on_datagram(datagram,
// capture time, result) decides its channel and stream (and counts what it
// drops into the result), finish(result) ends the capture (holds released,
// holes given up), decoder_counters() are its packets and messages (the
// summary's top level, the progress line). The shared
// one is LineFront (below); a protocol whose hole policy holds and
// re-requests brings its own (P::ReplayFront, which BasicReplay picks).
template <class F>
concept CaptureFront = requires(F& f, const UdpDatagram& d, std::int64_t t, ReplayResult& r) {
    f.on_datagram(d, t, r);
    f.finish(r);
    { std::as_const(f).decoder_counters() } -> std::same_as<const DecoderCounters&>;
};

// Every record of the capture at `path`, framing removed, each UDP/IPv4
// datagram to `front` with its capture time as its arrival time; then
// front.finish(). A capture cut short mid-record is replayed up to the cut
// (`truncation` says where). Throws CaptureError on unreadable or corrupt
// files (after applying what was read before the bad record). Defined below.
template <CaptureFront Front>
ReplayResult replay_through(const std::string& path, Front& front, const ReplayOptions& options = {});
// The same through the shared front: only the configured lines'
// groups/ports when `cfg` names channels, into `handler`.
template <class Handler>
ReplayResult replay_capture(const std::string& path, const Config& cfg, Handler& handler,
                            const ReplayOptions& options = {});

struct SummaryContext {
    std::int64_t now_ns;           // the gate is evaluated at this time
    std::string capture = {};      // optional, echoed as "capture"
    const FrameCounters* frames = nullptr;  // optional: frame counters of a replay
    // A replay's capture was cut short (with `frames` only): the JSON says
    // "capture_truncated": true and where, the table adds a line.
    const CaptureTruncation* truncation = nullptr;
    // Packets dropped because their header named another channel than the
    // line they arrived on (rule 7), per channel.
    std::vector<ChannelPacketCount> foreign_channel_packets = {};
    // Optional: what the protocol adds (venue_summary.hpp).
    const VenueSummary* venue = nullptr;
    // The table's rows (the JSON has every instrument): only the
    // instruments these symbols name (as the table shows them), if any;
    // at most `max_rows` of them, the most active (0: all), with a line
    // saying how many more there are.
    std::vector<std::string> symbols = {};
    std::size_t max_rows = 0;
};

// What a summary is made of, whatever the protocol and book: the
// decoder's counters and the engine's state.
struct SummarySource {
    const DecoderCounters& decoder;
    const InstrumentTable& instruments;
    const SequencerCounters& sequencer;
    BookReader book;
    const Gate& gate;
    const GateConfig& gate_config;
};
// `decoder`: the packet and message counters where the handler's decoder
// does not count them (a replay front's own streams).
template <class Handler>
[[nodiscard]] SummarySource summary_source(const Handler& h, const DecoderCounters& decoder) noexcept {
    return {decoder, h.instruments(), h.sequencer().counters(), BookReader(h.book()), h.gate(), h.gate_config()};
}
template <class Handler>
[[nodiscard]] SummarySource summary_source(const Handler& h) noexcept {
    return summary_source(h, h.decoder().counters());
}

// What the protocol adds to the summary (P::venue_summary), for replay and
// run alike: nothing for a protocol without it. `names`: a replay's
// destination channels (none live).
template <class Handler>
[[nodiscard]] std::optional<VenueSummary> venue_summary_of(const Handler& h, const ChannelNames& names = {}) {
    using P = typename Handler::Protocol;
    if constexpr (requires { P::venue_summary(h, names); }) return P::venue_summary(h, names);
    return std::nullopt;
}

// The JSON summary (field names fixed by the spec of `replay --json`; the
// counters' names are those of counter_fields.hpp). With `live` (run
// --json), a "live" object: its per-line, A/B arbitration and ring counters.
// Strings (symbols, the capture's name) are bytes: each is written as the
// code point of its value, \u00HH beyond printable ASCII, so the summary is
// ASCII and reads back to the original bytes (U+0000..U+00FF).
std::string summary_json(const SummarySource& src, const SummaryContext& ctx, const FeedStats* live = nullptr);
// A readable table: symbol, bid/ask in real units, last seq, lost, dups, state, gate reason, age.
std::string summary_table(const SummarySource& src, const SummaryContext& ctx);

// Pairs of destinations ("group:port") among the first `max_datagrams` UDP
// datagrams of the capture at `path` that carry byte-identical payloads:
// lines A and B of one channel (each pair once, in order of first sight).
// Throws CaptureError as replay does.
std::vector<std::pair<std::string, std::string>> identical_destinations(const std::string& path,
                                                                        std::uint64_t max_datagrams = 1000);

// `replay --stats`' line (every protocol): records, datagrams and
// `messages` of `r`, its wall time and the rate.
std::string replay_stats_line(const ReplayResult& r, std::uint64_t messages);

// `replay --book SYMBOL`: the instrument the table shows as `symbol`, its
// state and gate at ctx.now_ns, and up to `depth` levels a side (quantity
// and price, bids and asks side by side, best first); nullopt if no
// instrument shows as `symbol`.
std::optional<std::string> book_view(const SummarySource& src, const SummaryContext& ctx, std::string_view symbol,
                                     std::size_t depth);

// One refresh of `tickgate run`'s live view: the summary table of `ctx`
// (its time, rows: run --symbols) and `line_table` (per-line statistics)
// under a title naming `config_path` and the seconds since start. On a
// terminal it starts by homing the cursor and clearing the screen: the only
// control sequence in it, since every string that came off the wire (or
// from the command line) is printable().
std::string live_view(const SummarySource& src, const SummaryContext& ctx, std::string_view config_path,
                      double elapsed_s, std::string_view line_table, bool terminal);

// ---- replay_capture

namespace detail {

struct ReplayLine {
    std::uint32_t group;
    std::uint16_t port;
    std::uint8_t line;
    std::uint16_t channel_id;
};
// The configured lines of `cfg` (empty: every datagram is the feed's).
std::vector<ReplayLine> replay_lines(const Config& cfg);
// A progress line on stderr: `fraction` of the file read, `messages` decoded.
void report_replay_progress(double fraction, std::uint64_t messages);
void clear_replay_progress();

// The progress line of every protocol's replay (only on a terminal: a
// pipe or a file gets nothing): at most every 250 ms, looked at every
// 65,536 records; `messages()` is asked only then.
class ReplayProgress {
public:
    ReplayProgress(bool enabled, std::chrono::steady_clock::time_point start) : enabled_(enabled), last_(start) {}
    template <class Messages>
    void tick(std::uint64_t records, const CaptureReader& reader, Messages&& messages) {
        if (!enabled_ || (records & 0xFFFF) != 0) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_ < std::chrono::milliseconds(250)) return;
        last_ = now;
        report_replay_progress(static_cast<double>(reader.bytes_read()) / static_cast<double>(reader.file_size()),
                               messages());
    }
    void clear() const {
        if (enabled_) clear_replay_progress();
    }

private:
    bool enabled_;
    std::chrono::steady_clock::time_point last_;
};

// The channel of a datagram's destination group:port (numbered from 1 in
// order of first appearance, named in r.channel_names). Allocates only for
// a destination not seen before.
std::uint16_t destination_channel(ReplayResult& r, const UdpDatagram& d);

// Where a capture's datagram goes (without configured lines, every
// datagram is the feed's): passed to `emit(payload, key, ts_ns, line)` with
// its key read once, or counted into `r` (filtered_out,
// foreign_channel_packets). With configured lines, the line a datagram was
// addressed to decides its channel (rule 7), as the live receiver does.
template <VenueProtocol P, class Emit>
void route_datagram(const std::vector<ReplayLine>& lines, const UdpDatagram& dgram, std::int64_t ts_ns,
                    ReplayResult& r, Emit&& emit) {
    if (lines.empty()) {
        std::uint16_t channel = 0;
        if constexpr (!P::kHeaderNamesChannel) channel = destination_channel(r, dgram);
        emit(dgram.payload, P::read_key(dgram.payload, channel), ts_ns, std::uint8_t{0xFF});
        return;
    }
    const auto it = std::find_if(lines.begin(), lines.end(), [&](const ReplayLine& k) {
        return k.group == dgram.dst_ip && k.port == dgram.dst_port;
    });
    if (it == lines.end()) {
        ++r.filtered_out;
        return;
    }
    const typename P::Key key = P::read_key(dgram.payload, it->channel_id);
    if (P::kHeaderNamesChannel && key.valid() && key.channel != it->channel_id) {
        r.count_foreign_channel_packet(it->channel_id);
        return;
    }
    emit(dgram.payload, key, ts_ns, it->line);
}

}  // namespace detail

// The shared replay front (a CaptureFront): the configured lines decide
// each datagram's channel (route_datagram), then the datagrams go in
// capture order into the handler, directly or through the A/B arbiter. The
// handler's channel table observes each key once.
template <class Handler>
class LineFront {
    using P = typename Handler::Protocol;
    using Key = typename P::Key;

public:
    LineFront(const Config& cfg, Handler& handler, bool arbitrate)
        : lines_(detail::replay_lines(cfg)), handler_(handler), arbitrate_(arbitrate),
          arbiter_(make_arbiter(cfg, arbitrate)) {}

    void on_datagram(const UdpDatagram& d, std::int64_t ts_ns, ReplayResult& r) {
        detail::route_datagram<P>(lines_, d, ts_ns, r,
                                  [&](std::span<const std::byte> p, const Key& k, std::int64_t t, std::uint8_t l) {
                                      take(p, k, t, l);
                                  });
    }
    // End of the capture: flush the sort window and release every hold.
    void finish(ReplayResult& r) {
        while (!window_.empty()) offer_oldest();
        arbiter_.expire(INT64_MAX, Deliver{handler_});
        r.duplicate_packets = arbiter_.counters().duplicate_packets.get();
    }
    [[nodiscard]] const DecoderCounters& decoder_counters() const noexcept { return handler_.decoder().counters(); }

private:
    void take(std::span<const std::byte> payload, const Key& key, std::int64_t ts_ns, std::uint8_t line) {
        if (!arbitrate_ && is_unarbitrated_line(line)) return deliver_unarbitrated(payload, key, ts_ns, line);
        if (!arbitrate_) {
            const auto seen = handler_.streams().observe(key, line, nullptr);
            handler_.on_packet(payload, key, seen.mark, ts_ns, line);
            return;
        }
        window_.push(Pending{ts_ns, order_++, line, key, std::vector<std::byte>(payload.begin(), payload.end())});
        if (window_.size() > kSortWindow) offer_oldest();
    }

    // Arbitration needs arrival order: a capture lists each receive batch of
    // one line before the next line's, so records are re-sorted by
    // timestamp through a small window before they are offered.
    struct Pending {
        std::int64_t ts;
        std::uint64_t order;
        std::uint8_t line;
        Key key;
        std::vector<std::byte> bytes;
        bool operator>(const Pending& o) const { return ts != o.ts ? ts > o.ts : order > o.order; }
    };
    static constexpr std::size_t kSortWindow = 1024;

    struct Deliver {
        Handler& handler;
        void operator()(std::span<const std::byte> p, const Key& k, SessionMark m, std::int64_t t,
                        std::uint8_t l) const {
            handler.on_packet(p, k, m, t, l);
        }
    };
    // MDP3's snapshot and definition lines: decoded as they come (the live
    // receiver's order), never arbitrated.
    void deliver_unarbitrated(std::span<const std::byte> payload, const Key& key, std::int64_t ts_ns,
                              std::uint8_t line) {
        if constexpr (HasUnarbitratedLines<P>) handler_.on_unarbitrated_packet(payload, key, ts_ns, line);
    }
    void offer_oldest() {
        const Pending& p = window_.top();
        arbiter_.expire(p.ts, Deliver{handler_});  // everything before p.ts has been offered
        if (is_unarbitrated_line(p.line)) {
            deliver_unarbitrated(p.bytes, p.key, p.ts, p.line);
            window_.pop();
            return;
        }
        const auto seen = handler_.streams().observe(p.key, p.line, nullptr);
        arbiter_.offer(p.bytes, p.key, seen, p.ts, p.line, Deliver{handler_});
        window_.pop();
    }

    static PacketArbiter<P> make_arbiter(const Config& cfg, bool arbitrate) {
        const std::uint32_t window = cfg.receiver.arbitration_window;
        const std::int64_t hold_ns = std::int64_t{cfg.receiver.arbitration_hold_us} * 1000;
        if (!arbitrate) return PacketArbiter<P>(0, window, hold_ns);
        // Without configured channels any channel id may appear: the first 256 are arbitrated.
        if (cfg.channels.empty()) return PacketArbiter<P>(256, window, hold_ns);
        return PacketArbiter<P>(static_cast<std::uint32_t>(cfg.channels.size()), window, hold_ns);
    }

    std::vector<detail::ReplayLine> lines_;
    Handler& handler_;
    bool arbitrate_;
    PacketArbiter<P> arbiter_;
    std::priority_queue<Pending, std::vector<Pending>, std::greater<>> window_;
    std::uint64_t order_ = 0;
};

template <CaptureFront Front>
ReplayResult replay_through(const std::string& path, Front& front, const ReplayOptions& options) {
    CaptureReader reader(path);
    ReplayResult r;
    const auto start = std::chrono::steady_clock::now();
    detail::ReplayProgress progress(options.progress, start);
    while (auto rec = reader.next()) {
        r.any_records = true;
        r.last_ts_ns = rec->ts_ns;
        ++r.frames.records;
        if (const auto d = extract_udp(reader.link_type(), rec->frame, r.frames)) front.on_datagram(*d, rec->ts_ns, r);
        progress.tick(r.frames.records, reader, [&] { return front.decoder_counters().messages.get(); });
    }
    front.finish(r);
    r.truncation = reader.truncation();
    progress.clear();
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

template <class Handler>
ReplayResult replay_capture(const std::string& path, const Config& cfg, Handler& handler,
                            const ReplayOptions& options) {
    LineFront<Handler> front(cfg, handler, options.arbitrate);
    return replay_through(path, front, options);
}

namespace detail {
template <class P, class Handler>
struct ReplayFrontOf {
    using type = LineFront<Handler>;
};
template <class P, class Handler>
    requires requires { typename P::template ReplayFront<Handler>; }
struct ReplayFrontOf<P, Handler> {
    using type = typename P::template ReplayFront<Handler>;
};
}  // namespace detail

// The capacities a replay of protocol P is built with when it has no
// capture to look at: P::replay_capacity where the protocol sizes them
// itself (ITCH: instrument ids per configured channel, or one channel's),
// else capacity_for<P>(cfg). Throws std::invalid_argument if they exceed
// capacity.max_memory_mb (checked before anything is allocated).
template <VenueProtocol P>
[[nodiscard]] Capacity replay_capacity(const Config& cfg) {
    if constexpr (requires { P::replay_capacity(cfg); }) return P::replay_capacity(cfg);
    else return capacity_for<P>(cfg);
}

// The same for a replay of the capture at `capture`, where P may size them
// by the capture and lower `cfg`'s sizes to what it can need (P::fit_replay:
// ITCH's instrument ids for the capture's channels, its order store to the
// capture's adds), so a small capture reserves little. Never raises a size:
// what the config would refuse, the fitted replay refuses.
template <VenueProtocol P>
[[nodiscard]] Capacity fit_replay(Config& cfg, const std::string& capture) {
    if constexpr (requires { P::fit_replay(cfg, capture); }) return P::fit_replay(cfg, capture);
    else return replay_capacity<P>(cfg);
}

// A capture through a handler of protocol P, and the summary of it: what
// `tickgate replay` runs for every protocol, and the offline harness of
// tests and benchmarks. The back end is BasicHandler<P>; the front is the
// protocol's own where its hole policy needs one (P::ReplayFront: ITCH's
// MoldUDP64 stream, its channels by destination), else LineFront (the
// configured lines, the A/B arbiter with `arbitrate`). One thread;
// start-up allocates.
template <VenueProtocol P>
class BasicReplay {
public:
    using Handler = BasicHandler<P>;
    using Front = typename detail::ReplayFrontOf<P, Handler>::type;

    // Sized by replay_capacity<P>(cfg) (without a capture to look at).
    explicit BasicReplay(const Config& cfg, const ReplayOptions& options = {})
        : BasicReplay(cfg, replay_capacity<P>(cfg), options) {}
    BasicReplay(const Config& cfg, const Capacity& capacity, const ReplayOptions& options = {})
        : cfg_(cfg), options_(options), handler_(cfg_, capacity), front_(make_front()) {
        if constexpr (std::is_same_v<Front, LineFront<Handler>>) apply_config(handler_, cfg_);  // P's front applies its own
    }
    // Sized for the capture at `path` (fit_replay may read it).
    [[nodiscard]] static std::unique_ptr<BasicReplay> for_capture(const Config& cfg, const std::string& path,
                                                                  const ReplayOptions& options = {}) {
        Config fitted = cfg;
        const Capacity capacity = fit_replay<P>(fitted, path);
        return std::make_unique<BasicReplay>(fitted, capacity, options);
    }
    BasicReplay(const BasicReplay&) = delete;
    BasicReplay& operator=(const BasicReplay&) = delete;

    // Replays the capture at `path` (replay_through: errors, truncation).
    ReplayResult run(const std::string& path) {
        ReplayResult r = replay_through(path, front_, options_);
        channel_names_ = r.channel_names;
        return r;
    }

    // The summary's sources: the front's packet and message counters, the handler's state.
    [[nodiscard]] SummarySource source() const noexcept { return summary_source(handler_, front_.decoder_counters()); }
    // The JSON summary: the front's own where it has one (ITCH's "channels"), else the shared one.
    [[nodiscard]] std::string summary_json(const SummaryContext& ctx) const {
        return with_venue(ctx, [&](const SummaryContext& c) {
            if constexpr (requires { front_.summary_json(source(), c); }) return front_.summary_json(source(), c);
            else return tickgate::summary_json(source(), c);
        });
    }
    [[nodiscard]] std::string summary_table(const SummaryContext& ctx) const {
        return with_venue(ctx, [&](const SummaryContext& c) { return tickgate::summary_table(source(), c); });
    }
    // `replay --book SYMBOL` (book_view).
    [[nodiscard]] std::optional<std::string> book_view(const SummaryContext& ctx, std::string_view symbol,
                                                       std::size_t depth) const {
        return with_venue(ctx, [&](const SummaryContext& c) { return tickgate::book_view(source(), c, symbol, depth); });
    }
    // Messages read so far (`replay --stats`).
    [[nodiscard]] std::uint64_t messages() const noexcept { return front_.decoder_counters().messages.get(); }

    [[nodiscard]] Handler& handler() noexcept { return handler_; }
    [[nodiscard]] const Handler& handler() const noexcept { return handler_; }
    [[nodiscard]] Front& front() noexcept { return front_; }
    [[nodiscard]] const Front& front() const noexcept { return front_; }
    [[nodiscard]] const Config& cfg() const noexcept { return cfg_; }

private:
    Front make_front() {
        if constexpr (std::is_constructible_v<Front, const Config&, Handler&, bool>)
            return Front(cfg_, handler_, options_.arbitrate);
        else
            return Front(cfg_, handler_);
    }
    // f(ctx) with ctx.venue set to what the protocol adds (venue_summary_of), unless the caller gave one.
    template <class F>
    decltype(auto) with_venue(const SummaryContext& ctx, F&& f) const {
        if (ctx.venue != nullptr) return f(ctx);
        const std::optional<VenueSummary> venue = venue_summary_of(handler_, channel_names_);
        SummaryContext c = ctx;
        if (venue) c.venue = &*venue;
        return f(c);
    }

    Config cfg_;
    ReplayOptions options_;
    Handler handler_;
    Front front_;
    ChannelNames channel_names_;  // the last run's destination channels (a header that names none)
};

}  // namespace tickgate
