// Offline replay of ITCH 5.0 over MoldUDP64 captures (`tickgate replay
// --protocol itch50`) and its summary (ITCH50.md "Summary and replay"):
// capture -> channel (configured line, else multicast group:port) ->
// moldudp64::Stream -> BasicSequencer<itch50::Rules> -> order book, the gate over the
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

// Why a channel wants a snapshot (0: it does not).
enum class SnapshotWant : std::uint8_t { kNone, kLateJoin, kHoleGivenUp };

// The stream's sink (moldudp64::Stream): what it applies goes to the
// sequencer, except for the one channel whose snapshot loads, whose
// messages and given-up holes are kept in the snapshot buffer, in order
// (ITCH50.md "Snapshot recovery"). A late join or a given-up hole on a
// channel with a snapshot service marks the channel as wanting one.
class SnapshotRouter {
public:
    using Stream = moldudp64::Stream<MoldPayload, moldudp64::ClientRecovery>;
    static constexpr std::uint32_t kNone = UINT32_MAX;

    SnapshotRouter(Sequencer& seq, const Config& cfg, std::uint32_t channels)
        : seq_(seq), events_{{seq}}, buffer_(cfg.any_glimpse() ? cfg.glimpse.buffer_bytes : 0), wanted_(channels), glimpse_(channels) {
        for (std::size_t ch = 0; ch < cfg.channels.size() && ch < channels; ++ch)
            glimpse_[ch] = !cfg.channels[ch].glimpse.empty();
    }
    void set_stream(const Stream* s) noexcept { stream_ = s; }

    // ---- moldudp64::Stream's sink
    void message(std::uint32_t ch, std::span<const std::byte> m, std::uint64_t position, std::int64_t recv_ns) noexcept {
        if (ch == buffering_) [[unlikely]] {
            if (buffer_.push(SnapshotBuffer::Kind::kMessage, position, recv_ns, m)) return;
            overflow();
        }
        events_.message(ch, m, position, recv_ns);
    }
    void session_started(std::uint32_t ch, bool replaces_another) noexcept {
        if (ch == buffering_) {  // a new stream: the snapshot was of the old one
            flush();
            cancelled_ = true;
        }
        wanted_[ch] = SnapshotWant::kNone;
        events_.session_started(ch, replaces_another);
    }
    void late_join(std::uint32_t ch, std::uint64_t n) noexcept {
        events_.late_join(ch, n);
        if (glimpse_[ch]) wanted_[ch] = SnapshotWant::kLateJoin;
    }
    void gave_up(std::uint32_t ch, std::uint64_t lost) noexcept {
        if (ch == buffering_) {
            if (buffer_.push(SnapshotBuffer::Kind::kGaveUp, stream_->channel(ch).next_seq, 0, {})) return;
            overflow();
        }
        events_.gave_up(ch, lost);
        if (glimpse_[ch] && wanted_[ch] == SnapshotWant::kNone) wanted_[ch] = SnapshotWant::kHoleGivenUp;
    }
    void alive(std::uint32_t ch, std::int64_t recv_ns) noexcept { events_.alive(ch, recv_ns); }

    // ---- the snapshot's course (engine thread)
    void begin(std::uint32_t ch, std::uint64_t next_seq) noexcept {
        buffer_.clear();
        buffering_ = ch;
        wanted_[ch] = SnapshotWant::kNone;  // being served
        first_ = next_seq;
        overflowed_ = cancelled_ = false;
    }
    // The snapshot failed: what was kept is applied as it would have been.
    void flush() noexcept {
        const std::uint32_t ch = buffering_;
        buffering_ = kNone;
        if (ch == kNone) return;
        buffer_.each([&](const SnapshotBuffer::Entry& e) {
            if (e.kind == SnapshotBuffer::Kind::kMessage) events_.message(ch, e.bytes, e.position, e.recv_ns);
            else events_.gave_up(ch, 0);
        });
        buffer_.clear();
    }
    // Stops buffering and hands the kept entries to `f` (the snapshot was applied).
    template <class F>
    void take(F&& f) noexcept {
        buffering_ = kNone;
        buffer_.each(f);
        buffer_.clear();
    }
    [[nodiscard]] std::uint32_t buffering() const noexcept { return buffering_; }
    [[nodiscard]] std::uint64_t first_buffered() const noexcept { return first_; }
    // The buffer filled (its entries were applied, buffering stopped) / a session change cancelled the snapshot.
    [[nodiscard]] bool overflowed() const noexcept { return overflowed_; }
    [[nodiscard]] bool cancelled() const noexcept { return cancelled_; }
    [[nodiscard]] SnapshotWant wanted(std::uint32_t ch) const noexcept { return wanted_[ch]; }
    void clear_wanted(std::uint32_t ch) noexcept { wanted_[ch] = SnapshotWant::kNone; }
    void want(std::uint32_t ch, SnapshotWant w) noexcept { wanted_[ch] = w; }
    [[nodiscard]] bool has_glimpse(std::uint32_t ch) const noexcept { return glimpse_[ch]; }
    [[nodiscard]] const SnapshotBuffer& buffer() const noexcept { return buffer_; }
    [[nodiscard]] Sequencer& sequencer() noexcept { return seq_; }
    // What the stream decided for channel `ch`, as it would reach the sequencer (snapshot application).
    [[nodiscard]] StreamEvents<ApplyToSequencer>& events() noexcept { return events_; }

private:
    void overflow() noexcept {
        flush();
        overflowed_ = true;
    }

    Sequencer& seq_;
    StreamEvents<ApplyToSequencer> events_;  // the stream's decisions as events, applied at once
    const Stream* stream_ = nullptr;
    SnapshotBuffer buffer_;
    std::vector<SnapshotWant> wanted_;
    std::vector<bool> glimpse_;
    std::uint32_t buffering_ = kNone;
    std::uint64_t first_ = 0;  // the stream's next position when buffering began
    bool overflowed_ = false, cancelled_ = false;
};

// What applying a snapshot did.
struct SnapshotApplied {
    std::uint64_t orders = 0;       // orders loaded from the spin
    std::uint64_t continue_at = 0;  // N: the first stream position applied after it
    bool still_suspect = false;     // positions at or after N were lost meanwhile: another snapshot is wanted
};

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
    void expire(std::int64_t now_ns) { stream_.expire(now_ns, router_); }
    // The stream and its sink, for the live re-request client's answers.
    [[nodiscard]] Stream& stream() noexcept { return stream_; }
    [[nodiscard]] SnapshotRouter& sink() noexcept { return router_; }

    // ---- GLIMPSE snapshots (live; ITCH50.md "Snapshot recovery")
    // Channel `ch`'s stream output is kept in the snapshot buffer from now on.
    void begin_snapshot(std::uint32_t ch) noexcept { router_.begin(ch, stream_.channel(ch).next_seq); }
    // The snapshot failed: the kept output is applied as it would have been.
    void abort_snapshot() noexcept { router_.flush(); }
    // The snapshot in `s` (its spin and `M`'s position N) replaces channel
    // `ch`'s books and orders; the kept output at positions >= N follows,
    // those below are duplicates; the stream continues at N (or where it
    // is, if beyond). The instruments are clean unless positions from N on
    // were lost meanwhile. O(spin + kept output).
    SnapshotApplied apply_snapshot(std::uint32_t ch, const SnapshotStorage& s, std::int64_t now_ns) noexcept;
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
    Gate gate_;
    const moldudp64::RerequestClient* client_;
    std::uint64_t unmatched_ = 0;
};

}  // namespace tickgate::itch50
