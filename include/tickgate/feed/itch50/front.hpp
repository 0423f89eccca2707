// ITCH 5.0's live front (itch50::Protocol::Front), in place of the A/B
// ArbitratedDecoder for a protocol whose hole policy is kHoldAndRerequest:
// each received datagram's key (read once by the receiver) is observed by
// the channel table (its slot, the line's own position gaps), then the
// MoldUDP64 stream applies every message exactly once and in position
// order, holding what follows a hole and asking the channel's re-request
// server for it (moldudp64::RerequestClient); what the stream decides is
// normalized into Events (StreamEvents) for the caller's sink: the ring on
// the two-thread path, the sequencer on the inline one. Filling a hole can
// release many held datagrams at once: their events reach the sink in
// chunks of at most one datagram's worth (max_events_for), each closed by
// on_packet_end(), so a ring publishes or drops them whole as it does a
// packet. Holes are given up on the sockets' clock (expire), which also
// reads the re-request answers and sends the requests due.
//
// A channel with `glimpse` is repaired by GLIMPSE snapshots
// (snapshot_course.hpp): its stream output is kept while a spin loads,
// then the spin replaces its books (one event the engine applies) and the
// kept output follows from `M`'s position.
//
// Re-request sockets open, and the GLIMPSE client's thread starts, at
// construction (std::runtime_error). One thread, the receiving one; no
// allocation after construction; counters readable from any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tickgate/counter.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/arbitrated_decoder.hpp"
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/itch50/decoder.hpp"
#include "tickgate/feed/itch50/snapshot_course.hpp"
#include "tickgate/feed/itch50/summary.hpp"
#include "tickgate/feed/moldudp64/counter_fields.hpp"
#include "tickgate/feed/moldudp64/rerequest_client.hpp"
#include "tickgate/feed/moldudp64/stream.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/state_log.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate::itch50 {

// The `[moldudp64]` keys as the stream takes them.
[[nodiscard]] inline moldudp64::StreamConfig stream_config(const Config& cfg) noexcept {
    moldudp64::StreamConfig s;
    s.gap_timeout_ns = std::int64_t{cfg.moldudp64.gap_timeout_ms} * 1'000'000;
    s.max_held_packets = cfg.moldudp64.max_held_packets;
    return s;
}

// Live, a channel without a re-request server gives a hole up after the
// A/B hold (receiver.arbitration_hold_us) instead of gap_timeout: it waits
// only for the other line (ITCH50.md "The stream"). Start-up.
template <class Stream>
void hold_only_for_the_other_line(Stream& stream, const moldudp64::RerequestClient& client, const Config& cfg) {
    for (std::uint32_t ch = 0; ch < cfg.channels.size(); ++ch)
        if (!client.enabled(ch)) stream.set_gap_timeout(ch, std::int64_t{cfg.receiver.arbitration_hold_us} * 1'000);
}

// Adds one channel's stream figures to the decoder totals the summary, the
// metrics and FeedStats read (unknown types are the sequencer's).
inline void add_stream_counters(DecoderCounters& t, const moldudp64::StreamCounters& c) noexcept {
    t.packets.add(c.packets.get());
    t.messages.add(c.messages.get());
    t.malformed_packets.add(c.malformed_packets.get());
    t.stale_session_packets.add(c.stale_session_packets.get());
    t.session_changes.add(c.session_changes.get());
}

// `to` takes `from`'s values, each with one store (a reader on another
// thread sees each counter whole, never a partial sum).
inline void store_counters(DecoderCounters& to, const DecoderCounters& from) noexcept {
    to.packets.set(from.packets.get());
    to.messages.set(from.messages.get());
    to.malformed_packets.set(from.malformed_packets.get());
    to.unknown_messages.set(from.unknown_messages.get());
    to.stale_session_packets.set(from.stale_session_packets.get());
    to.session_changes.set(from.session_changes.get());
}

using StreamRows = MetricRows<moldudp64::kStreamCounterFields>;
using RerequestRows = MetricRows<moldudp64::kRerequestCounterFields>;
// The channel counters a live channel exports (metrics, labelled
// {channel}): its stream's, its re-request client's where it has a server,
// its GLIMPSE snapshots' where it has a service.
inline constexpr ChannelCounterGroup kChannelCounterGroups[] = {StreamRows::rows, RerequestRows::rows,
                                                                kSnapshotServiceRows};
static_assert(fits_channel_sample(kChannelCounterGroups));

// Before a datagram's messages are applied, one pass over it fetches what
// each order message will write first: its instrument's hot line, the store
// slot of its order reference, an add's side. The misses of a datagram's
// messages then overlap instead of following one another (a day-like flow
// touches thousands of stocks and a million orders). Hints only: nothing
// changes; a malformed datagram ends the pass where the stream's walk ends;
// ids beyond the handler's instruments are skipped. No pass while a
// subscription list filters the stocks: most messages are then dropped
// before the book, and the pass cost more than it saved (bench/README.md,
// "Prefetching a datagram's orders"); nor, at the callers, for the other
// line's copy of what the stream applied (Stream::may_apply). `slot`: the
// datagram's channel slot.
// The engine's thread, inline only: hints for another core's data would
// fetch lines that core must then take back.
template <class Handler>
void prefetch_orders(const Handler& handler, std::uint32_t slot, std::span<const std::byte> payload,
                     const moldudp64::Key& key) noexcept {
    const auto& instruments = handler.instruments();
    const auto& book = handler.book();
    if (instruments.filtering()) return;
    (void)moldudp64::walk(payload, key, MoldPayload::min_length, [&](std::uint16_t, std::span<const std::byte> m) {
        const char type = MessageView(m).type();
        const bool add = type == 'A' || type == 'F';
        if (!add && type != 'E' && type != 'C' && type != 'X' && type != 'D' && type != 'U') return;
        const std::uint32_t id = instrument_id(slot, MessageView(m).stock_locate());
        if (id >= instruments.max_instruments() || id >= book.max_instruments()) return;
        instruments.prefetch(id);
        const AddOrderView order(m);  // every order message has its reference (U: the original) at offset 11
        if (!add) {
            book.prefetch(id, order.order_ref(), nullptr);
            return;
        }
        const Side side = order.side() == 'S' ? Side::kAsk : Side::kBid;  // only an add has its side (D ends before)
        book.prefetch(id, order.order_ref(), &side, order.price());
    });
}

template <class P>
class StreamFront {
public:
    using Key = moldudp64::Key;
    using Stream = moldudp64::Stream<MoldPayload, moldudp64::ClientRecovery>;
    // How often, at most, a channel with an open hole is looked at while no
    // datagram comes: the re-request answers, their timers, the hole's timeout.
    static constexpr std::int64_t kServiceNs = 1'000'000;

    // `glimpse_silence_ms`: SoupBinTCP's silence timeout (tests shorten it).
    explicit StreamFront(const Config& cfg, std::int64_t glimpse_silence_ms = soupbintcp::kSilenceTimeoutMs)
        : ids_(cfg.channel_ids()),
          streams_(ids_),
          client_(cfg),
          stream_(stream_config(cfg), static_cast<std::uint32_t>(ids_.size()), moldudp64::ClientRecovery{&client_}),
          snapshots_(cfg, glimpse_silence_ms) {
        hold_only_for_the_other_line(stream_, client_, cfg);
        for (const ChannelConfig& ch : cfg.channels) glimpse_servers_.push_back(ch.glimpse);
    }
    // What the constructor allocates (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t bytes_for(const Config& cfg) noexcept {
        const auto channels = static_cast<std::uint32_t>(cfg.channels.size());
        return ChannelStreams<P>::bytes_for(channels) + Stream::bytes_for(stream_config(cfg), channels) +
               moldudp64::RerequestClient::bytes_for(cfg) + channels * (sizeof(std::uint16_t) + sizeof(Logged)) +
               SnapshotCourse::bytes_for(cfg);
    }

    // One received datagram and its key (Receiver::poll_once<P>): its
    // channel from the line that received it, then the stream.
    template <PacketEventSink Sink>
    void offer(const RawDatagram& d, const Key& key, Sink& sink) noexcept {
        const std::uint32_t slot = key.valid() ? streams_.observe(key, d.line, d.stats ? &d.stats->seq_gaps : nullptr).slot
                                               : streams_.slot_of(d.channel_id);
        if (slot == ChannelStreams<P>::kUntracked) [[unlikely]] {  // a line of no configured channel: cannot happen live
            untracked_.add();
            return;
        }
        // A sink that applies on this thread names what it applies to (prefetch_orders); a ring does not.
        // The other line's copy of what was applied fetches nothing.
        if constexpr (requires { sink.prefetch_target(); })
            if (stream_.may_apply(slot, key)) prefetch_orders(sink.prefetch_target(), slot, d.payload, key);
        Chunked<Sink> out{sink};
        StreamEvents<Chunked<Sink>&> events{out, ids_};
        auto routed = snapshots_.sink(events, stream_);
        stream_.on_datagram(slot, d.payload, key, d.recv_ns, routed);
        sink.on_packet_end();
    }
    // A datagram larger than the receive slot was dropped by the receiver:
    // malformed, as the spec counts a datagram it cannot read whole.
    void oversized() noexcept { oversized_.add(); }
    // Gives up the holes older than their channel's timeout at `now_ns`
    // (Receiver::drained_until()), reads the re-request answers, sends the
    // requests due (on the monotonic clock), and takes the GLIMPSE
    // snapshots' next step.
    template <PacketEventSink Sink>
    void expire(std::int64_t now_ns, Sink& sink) noexcept {
        Chunked<Sink> out{sink};
        StreamEvents<Chunked<Sink>&> events{out, ids_};
        auto routed = snapshots_.sink(events, stream_);
        stream_.expire(now_ns, routed);
        (void)client_.poll_answers(stream_, routed);
        const std::int64_t mono = monotonic_ns();
        (void)client_.tick(mono, stream_);
        snapshots_.tick(stream_, events, mono, realtime_ns());
        sink.on_packet_end();
    }
    // While a hole is open or a snapshot is wanted or loading: soon
    // (kServiceNs), so that answers, timers and the snapshot are served
    // without a datagram; INT64_MAX otherwise.
    [[nodiscard]] std::int64_t next_deadline() const noexcept {
        if (snapshots_.active()) return realtime_ns() + kServiceNs;
        for (std::uint32_t ch = 0; ch < stream_.channels(); ++ch)
            if (stream_.channel(ch).open_holes != 0) return realtime_ns() + kServiceNs;
        return INT64_MAX;
    }
    void configure(const Config&) noexcept {}

    // No A/B arbiter: the stream merges the lines by position.
    [[nodiscard]] const ArbiterCounters& arbiter_counters() const noexcept { return no_arbiter_; }
    // The stream's per-channel figures added up (packets, messages,
    // malformed, stale sessions, session changes), and the oversized
    // datagrams. Any thread (relaxed counters); unknown types are the
    // sequencer's (Rules::State::channel_counters).
    [[nodiscard]] const DecoderCounters& decoder_counters() const noexcept {
        // Summed aside, then stored: a reader on another thread never sees a partial sum.
        DecoderCounters sum;
        for (std::uint32_t ch = 0; ch < stream_.channels(); ++ch) add_stream_counters(sum, stream_.channel(ch).counters);
        sum.packets.add(oversized_.get());
        sum.malformed_packets.add(oversized_.get());
        store_counters(totals_, sum);
        return totals_;
    }
    // Its own figures: per channel slot (config order) the stream's view and the re-request client.
    [[nodiscard]] const StreamFront& protocol_decoder() const noexcept { return *this; }
    [[nodiscard]] typename Stream::ChannelView channel(std::uint32_t slot) const noexcept { return stream_.channel(slot); }
    [[nodiscard]] const Stream& stream() const noexcept { return stream_; }
    [[nodiscard]] const moldudp64::RerequestClient& client() const noexcept { return client_; }
    [[nodiscard]] std::uint64_t untracked_datagrams() const noexcept { return untracked_.get(); }
    // The configured channel id of slot `slot` (config order).
    [[nodiscard]] std::uint16_t channel_id(std::uint32_t slot) const noexcept { return ids_[slot]; }
    [[nodiscard]] std::uint32_t channels() const noexcept { return stream_.channels(); }

    // Pushes to `log` what changed per channel since the last call: holes
    // given up (messages lost), holes filled by the re-request server
    // (messages recovered), datagrams dropped as implausible positions and
    // answer messages dropped as unrequested. Relaxed counters, so any one
    // thread (the one that owns `log`), every few hundred ms; no allocation.
    void log_state(StateLog& log, std::int64_t now_ns) const noexcept {
        for (std::uint32_t ch = 0; ch < stream_.channels(); ++ch) {
            const moldudp64::StreamCounters& k = stream_.channel(ch).counters;
            const Logged now{k.lost_messages.get(), k.recovered_messages.get(), k.implausible_positions.get(),
                             k.unrequested_answer_messages.get()};
            Logged& before = logged_[ch];
            StateChange c;
            c.time_ns = now_ns;
            c.channel = ids_[ch];
            const auto report = [&](StateChangeKind kind, std::uint64_t value, std::uint64_t was) {
                if (value == was) return;
                c.kind = kind;
                c.value = value - was;
                (void)log.push(c);
            };
            report(StateChangeKind::kHoleGivenUp, now.lost, before.lost);
            report(StateChangeKind::kRerequested, now.recovered, before.recovered);
            report(StateChangeKind::kImplausiblePositions, now.implausible, before.implausible);
            report(StateChangeKind::kUnrequestedAnswers, now.unrequested, before.unrequested);
            if (snapshots_.enabled(ch)) log_snapshots(log, c, ch, before);
            before.lost = now.lost, before.recovered = now.recovered, before.implausible = now.implausible,
            before.unrequested = now.unrequested;
        }
    }
    // Per channel slot, its stream's, re-request client's and GLIMPSE
    // snapshots' counters (kChannelCounterGroups) into out[slot]; returns
    // how many slots were written. Any thread; no allocation.
    std::size_t sample_channel_counters(std::span<ChannelCounterSample> out) const noexcept {
        constexpr std::size_t kRerequestAt = channel_group_offset(kChannelCounterGroups, 1);
        constexpr std::size_t kSnapshotAt = channel_group_offset(kChannelCounterGroups, 2);
        const std::size_t n = std::min<std::size_t>(stream_.channels(), out.size());
        for (std::uint32_t ch = 0; ch < n; ++ch) {
            ChannelCounterSample& s = out[ch];
            s.channel = ids_[ch];
            s.groups = 1u;
            StreamRows::load(stream_.channel(ch).counters, s.values);
            if (client_.enabled(ch)) {
                s.groups |= 2u;
                RerequestRows::load(client_.counters(ch), s.values + kRerequestAt);
            }
            if (snapshots_.enabled(ch)) {
                s.groups |= 4u;
                load_snapshot_service(snapshots_.counters(ch), s.values + kSnapshotAt);
            }
        }
        return n;
    }
    // The GLIMPSE snapshots (any thread: their counters and view state).
    [[nodiscard]] const SnapshotCourse& snapshots() const noexcept { return snapshots_; }
    // The configured GLIMPSE server of slot `ch` ("" without).
    [[nodiscard]] const std::string& glimpse_server(std::uint32_t ch) const noexcept { return glimpse_servers_[ch]; }
    // The live view's rows of the channels with GLIMPSE (empty without any):
    // each one's snapshot state, requested, applied, the last one's orders, failures by reason.
    [[nodiscard]] std::string snapshots_text() const { return itch50::snapshots_text(snapshots_, ids_); }

private:
    // The sink's events in chunks of at most one datagram's worth.
    template <class Sink>
    struct Chunked {
        static constexpr std::size_t kChunk = max_events_for(Receiver::kSlotBytes);
        Sink& sink;
        std::size_t n = 0;
        void operator()(const Event& ev) noexcept {
            sink.on_event(ev);
            if (++n == kChunk) {
                sink.on_packet_end();
                n = 0;
            }
        }
    };
    std::vector<std::uint16_t> ids_;  // slot -> configured channel id
    ChannelStreams<P> streams_;       // the one channel table: slot by channel id, each line's own gaps
    moldudp64::RerequestClient client_;
    Stream stream_;
    SnapshotCourse snapshots_;
    std::vector<std::string> glimpse_servers_;  // per slot ("" without)
    RelaxedCounter oversized_, untracked_;
    // What log_state() has reported, per channel: only its caller's thread touches it.
    struct Logged {
        std::uint64_t lost = 0, recovered = 0, implausible = 0, unrequested = 0;
        std::uint64_t requested = 0, applied = 0;
        std::uint64_t failures[static_cast<std::size_t>(SnapshotFailure::kCount)] = {};
    };
    // The snapshots asked for, applied and failed since the last call: one
    // record each (at most 4 of a kind a call), with the last one's figures.
    void log_snapshots(StateLog& log, StateChange c, std::uint32_t ch, Logged& before) const noexcept {
        const SnapshotCounters& k = snapshots_.counters(ch);
        const auto some = [](std::uint64_t now, std::uint64_t was) { return std::min<std::uint64_t>(now - was, 4); };
        for (std::uint64_t i = some(k.snapshots_requested.get(), before.requested); i != 0; --i) {
            c.kind = StateChangeKind::kSnapshotRequested;
            c.value = snapshots_.last_request(ch) == SnapshotWant::kLateJoin ? 1 : 2;
            (void)log.push(c);
        }
        for (std::uint64_t i = some(k.snapshots_applied.get(), before.applied); i != 0; --i) {
            c.kind = StateChangeKind::kSnapshotApplied;
            c.value = k.snapshot_orders.get();
            const std::uint64_t at = snapshots_.last_position(ch);
            std::memcpy(c.symbol, &at, sizeof at);
            (void)log.push(c);
        }
        std::memset(c.symbol, 0, sizeof c.symbol);
        for (std::size_t r = 0; r < std::size(before.failures); ++r) {
            const std::uint64_t now = k.snapshot_failures[r].get();
            for (std::uint64_t i = some(now, before.failures[r]); i != 0; --i) {
                c.kind = StateChangeKind::kSnapshotFailed;
                c.value = r;
                c.symbol[0] = r == static_cast<std::size_t>(SnapshotFailure::kLoginRejected) ? snapshots_.last_reject_reason(ch) : 0;
                (void)log.push(c);
            }
            before.failures[r] = now;
        }
        before.requested = k.snapshots_requested.get();
        before.applied = k.snapshots_applied.get();
    }
    mutable std::vector<Logged> logged_ = std::vector<Logged>(ids_.size());
    const ArbiterCounters no_arbiter_{};
    mutable DecoderCounters totals_;
};

// Channels a replay without a config tells apart (multicast group:port); more are counted and dropped.
inline constexpr std::uint32_t kMaxUnconfiguredChannels = 256;
// Without a config, instrument ids (65,536 per channel, ~20 MB) for at most
// this many channels; a later channel's stocks count in out_of_range.
inline constexpr std::uint32_t kMaxUnconfiguredIdChannels = 16;

// ITCH 5.0's offline front (Protocol::ReplayFront: a CaptureFront of
// feed/replay.hpp, which BasicReplay drives with a capture's datagrams and
// their capture times): each datagram's channel is the configured line it
// was sent to, or without a config its multicast group:port (up to
// kMaxUnconfiguredChannels), or for a unicast datagram (a re-request
// server's answer) the channel whose session it carries; then the same
// MoldUDP64 stream and snapshot router as live, its decisions applied to
// `handler`'s sequencer at once. The stream's only timer is the capture's
// clock: before each datagram, holes older than gap_timeout are given up;
// at the end, all. No requests are sent. Start-up (the constructor, which
// also applies the config's start-up parts to `handler`) allocates; the
// per-datagram path does not. One thread.
template <class Handler>
class ReplayFront {
public:
    using Stream = moldudp64::Stream<MoldPayload, moldudp64::ClientRecovery>;
    using Sequencer = std::remove_cvref_t<decltype(std::declval<Handler&>().sequencer())>;
    struct Apply {
        Sequencer& seq;
        void operator()(const Event& ev) const noexcept { (void)seq.apply(ev); }
    };
    using Sink = SnapshotRouter::Sink<StreamEvents<Apply>, Stream>;
    struct ChannelInfo {
        std::string name;  // the config's channel id, or "group:port"
        std::uint32_t group;
        std::uint16_t port;
    };

    // `cfg` must outlive the front. `handler` was sized by
    // Protocol::replay_capacity or fit_replay: its rules get one slot per channel, its
    // instruments the channels' clock offsets and the subscriptions.
    ReplayFront(const Config& cfg, Handler& handler)
        : cfg_(cfg), handler_(handler), configured_(!cfg.channels.empty()), router_(cfg, slots(cfg)),
          stream_(stream_config(cfg), slots(cfg), moldudp64::ClientRecovery{nullptr}),
          events_{Apply{handler.sequencer()}}, sink_(router_.sink(events_, stream_)) {
        handler.sequencer().venue().configure(slots(cfg), cfg.itch.utc_offset_minutes);
        channels_.reserve(slots(cfg));
        for (std::uint32_t slot = 0; slot < cfg.channels.size(); ++slot) {
            const ChannelConfig& ch = cfg.channels[slot];
            for (const LineConfig* line : {&ch.a, &ch.b})  // config.cpp has checked the groups
                lines_.push_back({parse_ipv4(line->group).value_or(0), line->port, slot});
            channels_.push_back({std::to_string(ch.id), 0, 0});
            handler.instruments().set_clock_offset(static_cast<std::uint16_t>(slot), ch.clock_offset_ns);
        }
        for (const std::string& symbol : cfg.subscribe) (void)handler.instruments().subscribe(symbol);  // validated: fits
        handler.sequencer().apply_subscriptions();
    }
    ReplayFront(const ReplayFront&) = delete;
    ReplayFront& operator=(const ReplayFront&) = delete;

    // ---- CaptureFront
    template <class Result>
    void on_datagram(const UdpDatagram& d, std::int64_t ts_ns, Result&) {
        on_datagram(d.payload, d.dst_ip, d.dst_port, ts_ns);
    }
    // The end of the capture: every open hole given up; what no channel took is the result's filtered_out.
    template <class Result>
    void finish(Result& r) noexcept {
        finish();
        r.filtered_out = unmatched_;
    }
    // The decoder-level totals of every channel (the summary's top level),
    // unknown types (the sequencer's) included.
    [[nodiscard]] const DecoderCounters& decoder_counters() const noexcept {
        DecoderCounters sum;
        for (std::uint32_t ch = 0; ch < channels_.size(); ++ch) {
            add_stream_counters(sum, stream_.channel(ch).counters);
            sum.unknown_messages.add(handler_.sequencer().venue().channel_counters(ch).unknown_messages.get());
        }
        store_counters(totals_, sum);
        return totals_;
    }
    // The summary (ITCH50.md "Summary and replay"): the QFB/1 schema, ITCH's
    // per-instrument fields and "channels".
    template <class Source, class Context>
    [[nodiscard]] std::string summary_json(const Source& src, const Context& ctx) const {
        std::vector<std::string> names;
        for (const ChannelInfo& c : channels_) names.push_back(c.name);
        const Rules::State& venue = handler_.sequencer().venue();
        const std::vector<SummaryChannel> channels = summary_channels(stream_, names, venue, nullptr, cfg_);
        return itch50::summary_json(src, {handler_.book(), venue, channels, unmatched_}, ctx);
    }

    // ---- one datagram at a time (tests, benchmarks)
    // One UDP datagram sent to dst_ip:dst_port (host order), captured at
    // `ts_ns`. Allocates only a new channel's name (without a config).
    void on_datagram(std::span<const std::byte> payload, std::uint32_t dst_ip, std::uint16_t dst_port,
                     std::int64_t ts_ns) {
        stream_.expire(ts_ns, sink_);  // before each datagram, whatever its channel
        deliver(payload, dst_ip, dst_port, ts_ns);
    }
    // The same without the capture-clock timer (expire() is the caller's).
    void deliver(std::span<const std::byte> payload, std::uint32_t dst_ip, std::uint16_t dst_port,
                 std::int64_t recv_ns) {
        moldudp64::Key key = moldudp64::read_key(payload, 0);  // the header, read once
        const std::uint32_t slot = slot_of(key, dst_ip, dst_port);
        if (slot == UINT32_MAX) {
            ++unmatched_;
            return;
        }
        key.channel = static_cast<std::uint16_t>(slot);
        if (is_multicast(dst_ip)) {
            if (stream_.may_apply(slot, key)) prefetch_orders(handler_, slot, payload, key);  // not for the other line's copy
            stream_.on_datagram(slot, payload, key, recv_ns, sink_);
            return;
        }
        // A unicast datagram is a re-request server's answer to the capturing
        // handler's requests (a live capture holds them). Which positions it
        // asked for is not in the capture: every hole it had open it would
        // have asked for, so an answer fills open holes only (ITCH50.md
        // "Offline replay"; README "Captured answers").
        stream_.on_answer(slot, payload, key, recv_ns, sink_,
                          [](std::uint64_t at) { return std::pair<std::uint64_t, std::uint64_t>{at, UINT64_MAX}; });
    }
    // Gives up the holes older than their channel's timeout at `now_ns`.
    void expire(std::int64_t now_ns) noexcept { stream_.expire(now_ns, sink_); }
    // The end of the capture: every open hole given up.
    void finish() noexcept { stream_.finish(sink_); }
    [[nodiscard]] Stream& stream() noexcept { return stream_; }
    [[nodiscard]] Sink& sink() noexcept { return sink_; }

    // ---- GLIMPSE snapshots (ITCH50.md "Snapshot recovery"; live the front's SnapshotCourse drives the router)
    // Channel `ch`'s stream output is kept in the snapshot buffer from now on.
    void begin_snapshot(std::uint32_t ch) noexcept { router_.begin(ch, stream_.channel(ch).next_seq); }
    // The snapshot failed: the kept output is applied as it would have been.
    void abort_snapshot() noexcept { router_.flush(events_); }
    // The snapshot in `s` (its spin and `M`'s position N) replaces channel
    // `ch`'s books and orders; the kept output at positions >= N follows,
    // those below are duplicates; the stream continues at N (or where it
    // is, if beyond). The instruments are clean unless positions from N on
    // were lost meanwhile. O(spin + kept output).
    SnapshotApplied apply_snapshot(std::uint32_t ch, const SnapshotStorage& s, std::int64_t now_ns) noexcept {
        return router_.apply(stream_, events_, ch, s, now_ns);
    }
    [[nodiscard]] const SnapshotRouter& router() const noexcept { return router_; }
    [[nodiscard]] SnapshotRouter& router() noexcept { return router_; }

    [[nodiscard]] typename Stream::ChannelView channel(std::uint32_t slot) const { return stream_.channel(slot); }
    [[nodiscard]] const std::vector<ChannelInfo>& channels() const noexcept { return channels_; }
    // Datagrams no channel took: unicast carrying no channel's current
    // session, multicast beyond kMaxUnconfiguredChannels, or (with a
    // config) addressed to no configured line.
    [[nodiscard]] std::uint64_t unmatched_datagrams() const noexcept { return unmatched_; }

private:
    static std::uint32_t slots(const Config& cfg) noexcept {
        return cfg.channels.empty() ? kMaxUnconfiguredChannels : static_cast<std::uint32_t>(cfg.channels.size());
    }
    // The channel slot of a datagram; UINT32_MAX: none. Without a config,
    // a new multicast destination names a channel (the name's allocation
    // is start-up of that channel, at most kMaxUnconfiguredChannels times).
    std::uint32_t slot_of(const moldudp64::Key& key, std::uint32_t dst_ip, std::uint16_t dst_port) {
        if (!is_multicast(dst_ip))  // a re-request server's answer: the channel whose session it carries
            return key.valid() ? stream_.channel_of_session(key.session) : UINT32_MAX;
        if (configured_) {
            for (const Line& line : lines_)
                if (line.group == dst_ip && line.port == dst_port) return line.slot;
            return UINT32_MAX;
        }
        for (std::uint32_t i = 0; i < channels_.size(); ++i)
            if (channels_[i].group == dst_ip && channels_[i].port == dst_port) return i;
        if (channels_.size() == kMaxUnconfiguredChannels) return UINT32_MAX;
        channels_.push_back({endpoint_text(dst_ip, dst_port), dst_ip, dst_port});
        return static_cast<std::uint32_t>(channels_.size() - 1);
    }

    struct Line {
        std::uint32_t group;
        std::uint16_t port;
        std::uint32_t slot;
    };
    const Config& cfg_;
    Handler& handler_;
    bool configured_;
    std::vector<Line> lines_;  // the configured lines A and B
    std::vector<ChannelInfo> channels_;
    SnapshotRouter router_;
    Stream stream_;
    StreamEvents<Apply> events_;  // the stream's decisions as events, applied at once
    Sink sink_;                   // the stream's sink: router_ in front of events_
    std::uint64_t unmatched_ = 0;
    mutable DecoderCounters totals_;
};

}  // namespace tickgate::itch50
