// Offline replay of ITCH 5.0 over MoldUDP64 captures (`tickgate replay
// --protocol itch50`) and its summary (ITCH50.md "Summary and replay"):
// capture -> channel (configured line, else multicast group:port) ->
// moldudp64::Stream -> itch50::Sequencer -> OrderBook, the gate over the
// instrument table. Offline the stream's only timer is the capture's clock:
// before each UDP datagram, holes older than gap_timeout are given up; at
// the end, all. No requests are sent. Start-up allocates; the per-datagram
// path does not. One thread.
//
// The same core runs live (itch50::LiveHandler, live.hpp): given a
// re-request client it is the stream's Recovery, datagrams come from the
// sockets through deliver(), and the live handler calls expire() on its
// own clock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tickgate/book/gate.hpp"
#include "tickgate/book/order_book.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/engine_api.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/itch50/sequencer.hpp"
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
    void expire(std::int64_t now_ns) { stream_.expire(now_ns, sequencer_); }
    // The stream and its sink, for the live re-request client's answers.
    [[nodiscard]] Stream& stream() noexcept { return stream_; }
    [[nodiscard]] Sequencer& sink() noexcept { return sequencer_; }

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
    [[nodiscard]] const OrderBook& book() const noexcept { return book_; }
    [[nodiscard]] const Sequencer& sequencer() const noexcept { return sequencer_; }
    [[nodiscard]] const Gate& gate() const noexcept { return gate_; }
    // Datagrams no channel took: unicast carrying no channel's current
    // session, multicast beyond kMaxUnconfiguredChannels, or (with a
    // config) addressed to no configured line.
    [[nodiscard]] std::uint64_t unmatched_datagrams() const noexcept { return unmatched_; }
    // The decoder-level totals of every channel (the summary's top level), added into `t`.
    void totals(DecoderCounters& t) const;
    // The sequencer-level totals (locates past max_instruments, every channel).
    [[nodiscard]] SequencerCounters sequencer_totals() const noexcept;

private:
    // f(SummarySource): the shared summary's sources (totals over the channels).
    template <class F>
    decltype(auto) with_summary_source(F&& f) const {
        DecoderCounters decoder;
        totals(decoder);
        const SequencerCounters seq;  // ITCH's sequencer counters are per channel and instrument, not these
        return f(SummarySource{decoder, instruments_, seq, BookReader(book_), gate_, cfg_.gate});
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
    OrderBook book_;
    Sequencer sequencer_;
    Stream stream_;
    Gate gate_;
    const moldudp64::RerequestClient* client_;
    std::uint64_t unmatched_ = 0;
};

}  // namespace tickgate::itch50
