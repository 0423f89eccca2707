// GLIMPSE snapshots on the live front (ITCH50.md "Snapshot recovery"): the
// course of each channel's snapshots, driven by itch50::StreamFront on the
// receiving thread. A channel that wants one (late join, a given-up hole:
// the SnapshotRouter says so) gets a SoupBinTCP session on the GLIMPSE
// client's thread while the router keeps its stream output; on `M` the
// router splices the spin in (one kSnapshotReplace event carrying it: the
// engine applies it and marks it applied; the client's storage is reused
// only after that). At most one session at a time, per channel at most one
// every min_interval_ms; a failure changes nothing (the kept output goes
// down as it would have) and is retried after min_interval_ms, except a
// rejected login. What other threads read (counters, the view's state) is
// relaxed atomics. No allocation after construction.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/itch50/glimpse_client.hpp"
#include "tickgate/feed/itch50/snapshot.hpp"

namespace tickgate::itch50 {

// A channel's snapshot state as the live view says it.
enum class SnapshotView : std::uint8_t { kNotNeeded, kWantedLateJoin, kWantedHole, kLoading, kGivenUp, kApplied };
inline constexpr const char* kSnapshotViewText[] = {"not needed", "wanted: late join", "wanted: hole given up",
                                                    "loading",    "given up (login rejected)", "applied"};

class SnapshotCourse {
public:
    // `glimpse_silence_ms`: SoupBinTCP's silence timeout (tests shorten it).
    SnapshotCourse(const Config& cfg, std::int64_t glimpse_silence_ms = soupbintcp::kSilenceTimeoutMs)
        : router_(cfg, static_cast<std::uint32_t>(cfg.channels.size())),
          client_(cfg, glimpse_silence_ms),
          channels_(std::make_unique<Channel[]>(cfg.channels.size())),
          n_channels_(static_cast<std::uint32_t>(cfg.channels.size())),
          min_interval_ns_(std::int64_t{cfg.glimpse.min_interval_ms} * 1'000'000),
          timeout_ns_(std::int64_t{cfg.glimpse.timeout_ms} * 1'000'000) {}
    // What the constructor allocates (estimate_memory): the buffer and the
    // storage (zero pages until a snapshot loads) and the per-channel state.
    [[nodiscard]] static std::size_t bytes_for(const Config& cfg) noexcept {
        const std::size_t glimpse = cfg.any_glimpse() ? std::size_t{cfg.glimpse.buffer_bytes} +
                                                           SnapshotStorage::bytes_for(cfg.itch.max_orders)
                                                     : 0;
        return glimpse + cfg.channels.size() * sizeof(Channel);
    }

    // The stream's sink: what the stream decides goes to `down` through the router.
    template <class Down, class Stream>
    [[nodiscard]] auto sink(Down& down, const Stream& stream) noexcept {
        return router_.sink(down, stream);
    }

    // One step of the course (receiving thread, after each receive pass):
    // watches the running session, applies a ready spin or counts a failure,
    // releases the client once the engine has applied the spin, or starts
    // the session a channel wants. `mono_ns`: monotonic; `now_ns`: realtime.
    template <class Stream, class Down>
    void tick(Stream& stream, Down& down, std::int64_t mono_ns, std::int64_t now_ns) noexcept {
        if (!client_.any()) return;
        if (applying_ != kNoChannel) {
            // The spin is the engine's until it has replaced the books from it.
            if (!client_.storage().applied()) {
                if (mono_ns < ack_deadline_ns_) return;
                // Never applied (a full ring dropped the event): the books
                // are not what the spin says; given up, wanted again.
                const std::uint32_t ch = applying_;
                stream.mark_given_up(ch);
                auto through = sink(down, stream);
                through.gave_up(ch, 0);
                failed(ch, SnapshotFailure::kTimeout, 0, mono_ns);
            }
            applying_ = kNoChannel;
            client_.release();
            refresh_views();
            return;
        }
        switch (client_.state()) {
            case GlimpseClient::State::kRequested:
            case GlimpseClient::State::kRunning:
                if (router_.overflowed() && !channels_[client_.channel()].overflowed) {
                    // The buffer filled: its output went down already, the session is of no use.
                    channels_[client_.channel()].overflowed = true;
                    client_.cancel(SnapshotFailure::kBufferFull);
                } else if (router_.cancelled()) {
                    client_.cancel(SnapshotFailure::kDropped);
                }
                return;
            case GlimpseClient::State::kReady:
            case GlimpseClient::State::kFailed: {
                const std::uint32_t ch = client_.channel();
                Channel& c = channels_[ch];
                const bool ready = client_.state() == GlimpseClient::State::kReady;
                bool release = true;
                if (router_.cancelled()) {
                    // A new session began meanwhile: the spin was of the old one; nothing is counted.
                    router_.flush(down);
                } else if (c.overflowed || router_.overflowed()) {
                    router_.flush(down);
                    failed(ch, SnapshotFailure::kBufferFull, 0, mono_ns);
                } else if (ready) {
                    const SnapshotApplied a = router_.apply(stream, down, ch, client_.storage(), now_ns);
                    c.counters.snapshots_applied.add();
                    c.counters.snapshot_orders.set(a.orders);
                    c.last_position.store(a.continue_at, std::memory_order_relaxed);
                    c.applied_once = true;
                    applying_ = ch;
                    ack_deadline_ns_ = mono_ns + timeout_ns_;
                    release = false;
                } else {
                    router_.flush(down);
                    const GlimpseClient::Outcome o = client_.outcome();
                    failed(ch, o.failure, o.reject_reason, mono_ns);
                }
                c.overflowed = false;
                if (release) client_.release();
                refresh_views();
                return;
            }
            case GlimpseClient::State::kStopping: return;  // only in the destructor
            case GlimpseClient::State::kIdle: break;
        }
        for (std::uint32_t ch = 0; ch < n_channels_; ++ch) {
            Channel& c = channels_[ch];
            const SnapshotWant want = router_.wanted(ch);
            if (want == SnapshotWant::kNone || c.no_retry || !client_.enabled(ch) || mono_ns < c.next_allowed_ns) continue;
            // Buffering begins before the login is sent.
            router_.begin(ch, stream.channel(ch).next_seq);
            client_.start(ch, mono_ns + timeout_ns_);
            c.counters.snapshots_requested.add();
            c.reason = want;
            c.last_request.store(static_cast<std::uint8_t>(want), std::memory_order_relaxed);
            c.next_allowed_ns = mono_ns + min_interval_ns_;
            router_.clear_wanted(ch);
            break;
        }
        refresh_views();
    }

    // Whether the course has work soon (a channel wants a snapshot, one
    // loads, or the engine has not yet applied one): the front is then
    // serviced without waiting for a datagram.
    [[nodiscard]] bool active() const noexcept {
        if (!client_.any()) return false;
        if (applying_ != kNoChannel || client_.state() != GlimpseClient::State::kIdle) return true;
        for (std::uint32_t ch = 0; ch < n_channels_; ++ch)
            if (router_.wanted(ch) != SnapshotWant::kNone && !channels_[ch].no_retry && client_.enabled(ch)) return true;
        return false;
    }

    // ---- any thread (relaxed)
    [[nodiscard]] bool enabled(std::uint32_t ch) const noexcept { return client_.enabled(ch); }
    [[nodiscard]] const SnapshotCounters& counters(std::uint32_t ch) const noexcept { return channels_[ch].counters; }
    [[nodiscard]] SnapshotView view(std::uint32_t ch) const noexcept {
        return static_cast<SnapshotView>(channels_[ch].view.load(std::memory_order_relaxed));
    }
    // The position the last applied snapshot continued at; the last rejected login's reason code.
    [[nodiscard]] std::uint64_t last_position(std::uint32_t ch) const noexcept {
        return channels_[ch].last_position.load(std::memory_order_relaxed);
    }
    [[nodiscard]] char last_reject_reason(std::uint32_t ch) const noexcept {
        return channels_[ch].last_reject.load(std::memory_order_relaxed);
    }
    // Why the last snapshot was asked for (SnapshotWant).
    [[nodiscard]] SnapshotWant last_request(std::uint32_t ch) const noexcept {
        return static_cast<SnapshotWant>(channels_[ch].last_request.load(std::memory_order_relaxed));
    }
    [[nodiscard]] const SnapshotRouter& router() const noexcept { return router_; }

private:
    static constexpr std::uint32_t kNoChannel = UINT32_MAX;
    struct Channel {
        SnapshotCounters counters;
        std::atomic<std::uint8_t> view{0};          // SnapshotView
        std::atomic<std::uint64_t> last_position{0};
        std::atomic<char> last_reject{0};
        std::atomic<std::uint8_t> last_request{0};  // SnapshotWant
        // receiving thread only
        std::int64_t next_allowed_ns = 0;  // monotonic: no request before
        bool no_retry = false;             // a rejected login: not retried
        bool overflowed = false;           // the buffer filled during the running session
        bool applied_once = false;
        SnapshotWant reason = SnapshotWant::kNone;  // of the last request: a failure wants it again
    };
    void failed(std::uint32_t ch, SnapshotFailure why, char reject_reason, std::int64_t mono_ns) noexcept {
        Channel& c = channels_[ch];
        c.counters.snapshot_failures[static_cast<std::size_t>(why)].add();
        if (why == SnapshotFailure::kLoginRejected) {
            c.no_retry = true;  // it will not get better
            c.last_reject.store(reject_reason, std::memory_order_relaxed);
        } else {
            router_.want(ch, c.reason == SnapshotWant::kNone ? SnapshotWant::kHoleGivenUp : c.reason);
        }
        c.next_allowed_ns = mono_ns + min_interval_ns_;
    }
    void refresh_views() noexcept {
        const bool busy = client_.state() != GlimpseClient::State::kIdle && client_.state() != GlimpseClient::State::kStopping;
        for (std::uint32_t ch = 0; ch < n_channels_; ++ch) {
            Channel& c = channels_[ch];
            SnapshotView v = c.applied_once ? SnapshotView::kApplied : SnapshotView::kNotNeeded;
            if ((busy && client_.channel() == ch) || applying_ == ch) v = SnapshotView::kLoading;
            else if (c.no_retry) v = SnapshotView::kGivenUp;
            else if (router_.wanted(ch) == SnapshotWant::kLateJoin) v = SnapshotView::kWantedLateJoin;
            else if (router_.wanted(ch) == SnapshotWant::kHoleGivenUp) v = SnapshotView::kWantedHole;
            c.view.store(static_cast<std::uint8_t>(v), std::memory_order_relaxed);
        }
    }

    SnapshotRouter router_;
    GlimpseClient client_;
    std::unique_ptr<Channel[]> channels_;
    std::uint32_t n_channels_;
    std::int64_t min_interval_ns_, timeout_ns_;
    std::uint32_t applying_ = kNoChannel;  // whose spin the engine has yet to apply
    std::int64_t ack_deadline_ns_ = 0;
};

// The live view's rows of the channels with GLIMPSE (empty without any):
// each one's snapshot state, requested, applied, the last one's orders and
// failures by reason; `ids`: the configured channel ids by slot. Any thread.
[[nodiscard]] std::string snapshots_text(const SnapshotCourse& course, std::span<const std::uint16_t> ids);

}  // namespace tickgate::itch50
