// The live ITCH 5.0 handler (`tickgate run` on an itch50 config): the
// configured lines A and B received on loopback-safe multicast sockets
// (Receiver), the re-request client (one unicast socket per channel with
// `rerequest`), and the offline pipeline's core (itch50::Replay: stream ->
// sequencer -> order book -> gate) fed by both. The datagrams of one
// receive round (up to a batch per socket) are applied in the order of
// their kernel timestamps, not socket by socket: the first packet seen of a
// session decides a late join, and reading line A's burst before line B's
// earlier packet would make B's first packet look late. Holes are given up
// on the sockets' clock: only up to the time every socket has been
// drained, so a fill waiting in the other line's socket is never overtaken.
//
// Sockets open at construction (std::runtime_error naming what failed).
// poll() is the whole duty cycle and runs on one thread; it allocates
// nothing, takes no lock and does not log.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/itch50/glimpse_client.hpp"
#include "tickgate/feed/itch50/replay.hpp"
#include "tickgate/feed/latency_histogram.hpp"
#include "tickgate/feed/moldudp64/rerequest_client.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/state_log.hpp"

namespace tickgate::itch50 {

class LiveHandler {
public:
    // How long poll() waits for a datagram at most: the re-request client's
    // answers and timers, and the A/B hold, are served at least this often.
    static constexpr std::int64_t kMaxWaitNs = 1'000'000;

    // `glimpse_silence_ms`: SoupBinTCP's silence timeout (tests shorten it).
    explicit LiveHandler(const Config& cfg, std::int64_t glimpse_silence_ms = soupbintcp::kSilenceTimeoutMs);

    // One duty cycle: receives what the lines hold (waiting up to
    // min(timeout_ns, kMaxWaitNs); 0 = busy-poll), reads the re-request
    // answers, gives up the holes due, sends the requests due. Returns the
    // datagrams handled.
    int poll(std::int64_t timeout_ns);
    // The same duty cycle, then, when it applied a GLIMPSE snapshot,
    // on_update(const Update&) once per instrument of that channel
    // (Verdict::kSnapshotApplied, book_changed: the book was replaced, so
    // re-read it rather than patch a copy; suspect: its state after). ITCH
    // reports no other per-update callback. Same thread as poll(); no allocation.
    template <class F>
    int poll(std::int64_t timeout_ns, F&& on_update) {
        const int n = poll(timeout_ns);
        if (replaced_channel_ != kNoChannel) {
            const InstrumentTable& t = core_.instruments();
            core_.sequencer().venue().each_instrument(replaced_channel_, [&](std::uint32_t id) {
                on_update(Update{id, Verdict::kSnapshotApplied, true, t.state(id).suspect, 0});
            });
            replaced_channel_ = kNoChannel;
        }
        return n;
    }

    [[nodiscard]] const Replay& core() const noexcept { return core_; }
    [[nodiscard]] const moldudp64::RerequestClient& client() const noexcept { return client_; }
    [[nodiscard]] const Receiver& receiver() const noexcept { return receiver_; }
    [[nodiscard]] bool has_glimpse(std::uint32_t ch) const noexcept { return glimpse_.enabled(ch); }
    [[nodiscard]] const SnapshotCounters& snapshot_counters(std::uint32_t ch) const noexcept { return snapshots_[ch].counters; }
    // Kernel receive -> book per channel: each datagram that moved its
    // channel's stream on (its messages applied to the books), timed after it.
    [[nodiscard]] const LatencyHistograms& latency() const noexcept { return latency_; }
    // The ITCH50.md summary (replay's, with each channel's "rerequest"
    // counters and a "lines" array of per-line receive counters).
    [[nodiscard]] std::string summary_json(std::int64_t now_ns) const;
    // Pushes to `log` what changed per channel since the last call: holes
    // given up (hole_given_up, messages lost), holes filled by the
    // re-request server (rerequested, messages recovered), datagrams dropped
    // as implausible positions and answer messages dropped as unrequested
    // (implausible_positions, unrequested_answers). Same thread as
    // poll(), every few hundred ms; a few compares per channel.
    void log_state(StateLog& log, std::int64_t now_ns) noexcept;
    // The live view's rows at most: a day's directory names thousands of
    // stocks, a refresh shows the most active (run --symbols names others).
    static constexpr std::size_t kLiveViewRows = 20;
    // One refresh of the live view (the shared table, the lines and, per
    // channel with `glimpse`, its snapshot state and counters): the
    // instruments `symbols` names if any, at most kLiveViewRows of them.
    [[nodiscard]] std::string live_view(std::int64_t now_ns, const std::vector<std::string>& symbols,
                                        std::string_view config_path, double elapsed_s, bool terminal) const;

    // Channel `ch`'s snapshot state in the live view's words: "loading",
    // "wanted: late join", "wanted: hole given up", "given up (login
    // rejected)", "applied" (the last one repaired it), "not needed".
    [[nodiscard]] std::string snapshot_state(std::uint32_t ch) const;

private:
    [[nodiscard]] std::string snapshots_text() const;
    // A datagram of the current round, copied out of the receive batch.
    struct Stashed {
        std::int64_t recv_ns;
        std::uint32_t dst_ip;
        std::uint16_t dst_port;
        std::uint32_t len;
        std::uint32_t slot;     // in stash_bytes_
        std::uint32_t channel;  // config index of the line's channel
    };
    // A line's own MoldUDP64 positions, before the stream merges A and B:
    // the positions it skipped are its LineStats::seq_gaps.
    struct LineSeq {
        moldudp64::Session session{};
        std::uint64_t next = 0;  // the position after the highest the line carried this session
        bool started = false;
    };
    static void count_line_gap(LineSeq& l, std::span<const std::byte> payload, LineStats& stats) noexcept;

    // The GLIMPSE snapshots' course (ITCH50.md "Snapshot recovery"): at most
    // one session at a time (one storage, one buffer), per channel at most
    // one every min_interval_ms; on the monotonic clock.
    void tick_snapshots(std::int64_t mono_ns, std::int64_t now_ns) noexcept;
    void snapshot_failed(std::uint32_t ch, SnapshotFailure why, char reject_reason, std::int64_t mono_ns) noexcept;

    moldudp64::RerequestClient client_;  // before core_: the stream points at it
    Replay core_;
    GlimpseClient glimpse_;
    struct ChannelSnapshots {
        SnapshotCounters counters;
        std::int64_t next_allowed_ns = 0;  // monotonic: no request before
        bool no_retry = false;             // a rejected login: not retried
        bool overflowed = false;           // the buffer filled during the running session
        SnapshotWant reason = SnapshotWant::kNone;  // of the last request: a failure wants it again
    };
    std::vector<ChannelSnapshots> snapshots_;
    static constexpr std::uint32_t kNoChannel = UINT32_MAX;
    std::uint32_t replaced_channel_ = kNoChannel;  // whose books the current duty cycle's snapshot replaced
    std::int64_t min_interval_ns_, timeout_ns_;
    // Engine-thread records of what tick_snapshots() did, for log_state().
    struct SnapshotEvent {
        StateChangeKind kind;
        std::uint32_t channel;
        std::uint64_t value, position;
        char reason;
    };
    std::array<SnapshotEvent, 64> events_{};
    std::size_t n_events_ = 0;
    void note(const SnapshotEvent& e) noexcept {
        if (n_events_ < events_.size()) events_[n_events_++] = e;
    }
    Receiver receiver_;
    std::vector<LineSeq> line_seq_;  // by channel index * 2 + line
    LatencyHistograms latency_;
    std::vector<std::byte> stash_bytes_;  // one receive slot per datagram of a round
    std::vector<Stashed> stash_;          // capacity fixed at start-up: a round's datagrams
    struct Logged {
        std::uint64_t lost = 0, recovered = 0, implausible = 0, unrequested = 0;
    };
    std::vector<Logged> logged_;  // per channel: what log_state() has reported
    std::vector<std::uint16_t> channel_ids_;
};

}  // namespace tickgate::itch50
