// Offline replay of ITCH 5.0 over MoldUDP64 captures (`tickgate replay
// --protocol itch50`) and its summary (ITCH50.md "Summary and replay"):
// capture -> channel (configured line, else multicast group:port) ->
// moldudp64::Stream -> BasicSequencer<itch50::Rules> -> order book, the gate over the
// instrument table. Offline the stream's only timer is the capture's clock:
// before each UDP datagram, holes older than gap_timeout are given up; at
// the end, all. No requests are sent. Start-up allocates; the per-datagram
// path does not. One thread.
//
// Live, the shared pipelines run the same stream, snapshot router, rules
// and book (itch50::StreamFront, BasicSequencer<itch50::Rules>); given a
// re-request client, and fed through deliver() and expire(), this core
// runs them on one thread, as the unit and hot-path tests of the
// snapshot's splice and the re-request answers do.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tickgate/book/gate.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/engine_api.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/itch50/rules.hpp"
#include "tickgate/feed/itch50/snapshot.hpp"
#include "tickgate/feed/moldudp64/rerequest_client.hpp"
#include "tickgate/feed/moldudp64/stream.hpp"
#include "tickgate/feed/replay.hpp"

namespace tickgate::itch50 {

// Channels a replay without a config tells apart (multicast group:port); more are counted and dropped.
inline constexpr std::uint32_t kMaxUnconfiguredChannels = 256;
// Without a config, instrument ids (65,536 per channel, ~20 MB) for at most
// this many channels; a later channel's stocks count in out_of_range.
inline constexpr std::uint32_t kMaxUnconfiguredIdChannels = 16;

// The engine's calls (find, safe_quote, subscribe: feed/engine_api.hpp) read
// its instruments by the day's directory.
class Replay : public EngineApi<Replay> {
    friend class EngineApi<Replay>;

public:
    using Stream = moldudp64::Stream<MoldPayload, moldudp64::ClientRecovery>;

    // Sizes everything from `cfg` ([moldudp64], [itch], [gate], channels):
    // instrument ids for every configured channel, or without channels for
    // `unconfigured_channels` (what channels_in() counts in the capture;
    // at most kMaxUnconfiguredIdChannels). With `live_client` (live:
    // channels in config order), holes are requested through it, and a
    // channel without a re-request server gives a hole up after
    // receiver.arbitration_hold_us instead of gap_timeout.
    explicit Replay(const Config& cfg, moldudp64::RerequestClient* live_client = nullptr,
                    std::uint32_t unconfigured_channels = 1);
    // The channels a replay without a config will see in the capture at
    // `path` (distinct multicast group:port, at most
    // kMaxUnconfiguredIdChannels; at least 1). Throws as run() does.
    [[nodiscard]] static std::uint32_t channels_in(const std::string& path);

    // Feeds the capture at `path` (see replay_capture in replay.hpp for the
    // errors thrown and the truncation rule) and gives up the holes left
    // open. `options.progress`: the shared progress line (replay.hpp);
    // `arbitrate` does not apply (the stream merges lines by position).
    ReplayResult run(const std::string& path, const ReplayOptions& options = {});
    // One UDP datagram sent to dst_ip:dst_port (host order), captured at `ts_ns`.
    void on_datagram(std::span<const std::byte> payload, std::uint32_t dst_ip, std::uint16_t dst_port, std::int64_t ts_ns);
    // The end of the capture: every open hole given up.
    void finish();
    // One datagram to dst_ip:dst_port received at `recv_ns`, without the
    // offline timer (live: expire() follows the sockets' clock).
    void deliver(std::span<const std::byte> payload, std::uint32_t dst_ip, std::uint16_t dst_port, std::int64_t recv_ns);
    // Gives up the holes older than their channel's timeout at `now_ns`.
    void expire(std::int64_t now_ns) { stream_.expire(now_ns, sink_); }
    // The stream and its sink, for the live re-request client's answers.
    using Sink = SnapshotRouter::Sink<StreamEvents<ApplyToSequencer>, Stream>;
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
    [[nodiscard]] const Config& cfg() const noexcept { return cfg_; }
    [[nodiscard]] SnapshotRouter& router() noexcept { return router_; }

    // The summary: the QFB/1 schema, ITCH's per-instrument fields and "channels".
    [[nodiscard]] std::string summary_json(const SummaryContext& ctx) const;
    // The readable table (the shared one).
    [[nodiscard]] std::string summary_table(const SummaryContext& ctx) const;
    // `replay --book SYMBOL` (the shared book_view, replay.hpp).
    [[nodiscard]] std::optional<std::string> book_view(const SummaryContext& ctx, std::string_view symbol,
                                                       std::size_t depth) const;
    // One refresh of `tickgate run`'s live view (the shared one, see replay.hpp).
    [[nodiscard]] std::string live_view(const SummaryContext& ctx, std::string_view config_path, double elapsed_s,
                                        std::string_view line_table, bool terminal) const;

    struct ChannelInfo {
        std::string name;  // the config's channel id, or "group:port"
        std::uint32_t group;
        std::uint16_t port;
    };
    [[nodiscard]] Stream::ChannelView channel(std::uint32_t slot) const { return stream_.channel(slot); }
    [[nodiscard]] const std::vector<ChannelInfo>& channels() const noexcept { return channels_; }
    [[nodiscard]] const InstrumentTable& instruments() const noexcept { return instruments_; }
    [[nodiscard]] const Book& book() const noexcept { return book_; }
    [[nodiscard]] const Sequencer& sequencer() const noexcept { return sequencer_; }
    [[nodiscard]] const Gate& gate() const noexcept { return gate_; }
    // Datagrams no channel took: unicast carrying no channel's current
    // session, multicast beyond kMaxUnconfiguredChannels, or (with a
    // config) addressed to no configured line.
    [[nodiscard]] std::uint64_t unmatched_datagrams() const noexcept { return unmatched_; }
    // The decoder-level totals of every channel (the summary's top level), added into `t`.
    void totals(DecoderCounters& t) const;
    // The sequencer-level totals (locates past max_instruments, every channel).
    [[nodiscard]] const SequencerCounters& sequencer_totals() const noexcept { return sequencer_.counters(); }

private:
    // f(SummarySource): the shared summary's sources (totals over the channels).
    template <class F>
    decltype(auto) with_summary_source(F&& f) const {
        DecoderCounters decoder;
        totals(decoder);
        return f(SummarySource{decoder, instruments_, sequencer_.counters(), BookReader(book_), gate_, cfg_.gate});
    }
    // The channel slot of a datagram; UINT32_MAX: none.
    std::uint32_t slot_of(std::span<const std::byte> payload, std::uint32_t dst_ip, std::uint16_t dst_port);

    struct Line {
        std::uint32_t group;
        std::uint16_t port;
        std::uint32_t slot;
    };
    Config cfg_;
    bool configured_;
    std::vector<Line> lines_;  // the configured lines A and B
    std::vector<ChannelInfo> channels_;
    InstrumentTable instruments_;
    Book book_;
    Sequencer sequencer_;
    SnapshotRouter router_;
    Stream stream_;
    StreamEvents<ApplyToSequencer> events_;  // the stream's decisions as events, applied at once
    Sink sink_;                              // the stream's sink: router_ in front of events_
    Gate gate_;
    const moldudp64::RerequestClient* client_;
    std::uint64_t unmatched_ = 0;
};

}  // namespace tickgate::itch50
