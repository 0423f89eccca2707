// Prometheus metrics without touching the hot path.
//
// The engine thread calls MetricsRegistry::publish() every few hundred ms:
// it copies counters and per-instrument state into the back one of two
// snapshot buffers (pre-sized at construction: no allocation, no lock, no
// formatting) and flips the front index with a store. Any thread may call
// render(), which copies the front buffer out and formats the Prometheus
// text exposition (format 0.0.4). A reader pins the front buffer while it
// copies it; if the engine finds the back buffer still pinned by a slow
// reader, that publish is skipped (counted), never waited for.
//
// MetricsServer serves render() as `GET /metrics` over HTTP/1.1 (Boost.Beast)
// on a thread of its own, on a loopback address unless told otherwise; idle
// or slow clients cannot lock a scraper out (see MetricsServer).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/af_xdp.hpp"
#include "tickgate/book/gate.hpp"
#include "tickgate/feed/feed_stats.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/counter_fields.hpp"
#include "tickgate/feed/latency_histogram.hpp"
#include "tickgate/feed/sequencer.hpp"

namespace tickgate {


// Gate decisions that were not ok, counted by the engine where it calls the
// gate: `rejections.count(gate.check(id, now).reason)`. Engine thread only.
struct GateRejections {
    static constexpr std::size_t kReasons = 6;  // GateReason kOk .. kNotSubscribed
    std::array<std::uint64_t, kReasons> by_reason{};

    void count(GateReason r) noexcept {
        const auto i = static_cast<std::size_t>(r);
        if (i < kReasons) ++by_reason[i];
    }
    [[nodiscard]] std::uint64_t get(GateReason r) const noexcept {
        const auto i = static_cast<std::size_t>(r);
        return i < kReasons ? by_reason[i] : 0;
    }
};

// What one configuration makes a metrics snapshot hold (MetricsRegistry's sizes).
struct MetricsOptions {
    PipelineFeatures features = kEveryFeature;  // the families exported: the protocol's (counter_fields.hpp)
    MetricsInstruments instruments = MetricsInstruments::kAll;
    std::size_t channels = 0;  // latency histograms and the protocol's channel counters (the config's channels)
    // The protocol's own per-channel counter groups (P::kChannelCounterGroups, static storage); none: empty.
    std::span<const ChannelCounterGroup> channel_groups = {};
};

// What protocol P's metrics export under `cfg`: its features and channel
// counter groups, for the config's channels and metrics.instruments.
template <VenueProtocol P>
[[nodiscard]] MetricsOptions metrics_options(const Config& cfg) noexcept {
    return {.features = features_of<P>(),
            .instruments = cfg.metrics.instruments,
            .channels = cfg.channels.size(),
            .channel_groups = channel_counter_groups<P>()};
}

class MetricsRegistry {
public:
    struct InstrumentSample {
        std::uint32_t id = 0;
        std::int64_t venue_id = 0;  // the `instrument` label: the venue's id (MDP3 SecurityID), else `id`
        std::uint64_t book_errors = 0;  // with Snapshot::has_book_errors (MDP3)
        char symbol[17] = {};
        bool suspect = false;
        std::uint64_t last_seq = 0;
        InstrumentCounters counters;
    };
    struct LineSample {
        std::uint16_t channel = 0;
        std::uint8_t line = 0;  // 0 = A, 1 = B
        CounterValues<kLineCounterFields> counters;  // by row of kLineCounterFields
    };
    struct HistogramSample {
        std::uint16_t channel = 0;
        std::uint64_t buckets[LatencyHistograms::kBuckets] = {};  // as LatencyHistograms: not cumulative
        std::uint64_t sum_ns = 0;
    };
    struct Snapshot {
        std::uint64_t generation = 0;  // 0: nothing published yet
        std::int64_t published_ns = 0; // realtime of the publish
        // The families exported: those of this protocol's features (counter_fields.hpp).
        PipelineFeatures features = kEveryFeature;
        // Each by row of its table in counter_fields.hpp.
        CounterValues<kDecoderCounterFields> decoder;
        CounterValues<kSequencerCounterFields> sequencer;
        CounterValues<kArbiterCounterFields> arbiter;
        CounterValues<kRingCounterFields> ring;
        std::uint64_t ring_fill = 0, ring_capacity = 0;
        // The AF_XDP backend, when the receiver runs on it (receiver.backend).
        bool has_af_xdp = false;
        bool af_xdp_native = false, af_xdp_zero_copy = false;
        AfXdpCounters af_xdp;
        bool has_gate = false;  // an engine that asks the gate counts its refusals
        GateRejections gate;
        bool has_book_errors = false;    // InstrumentSample::book_errors (MDP3)
        std::uint64_t instruments_seen = 0;  // all of them, exported per instrument or not (metrics.instruments)
        // Pre-sized at construction; the first *_count entries are valid.
        std::size_t instrument_count = 0;
        std::vector<InstrumentSample> instruments;
        std::size_t line_count = 0;
        std::vector<LineSample> lines;
        std::span<const ChannelCounterGroup> channel_groups;  // what channel_counters hold (MetricsOptions)
        std::size_t channel_counter_count = 0;
        std::vector<ChannelCounterSample> channel_counters;
        std::size_t histogram_count = 0;
        std::vector<HistogramSample> histograms;
    };

    // What a protocol adds per instrument beyond FeedStats (MDP3: its
    // SecurityIDs and book errors), read by publish() on the engine thread:
    // a function pointer to the handler's protocol, no allocation.
    struct Venue {
        const void* handler = nullptr;
        // Sets out.venue_id and out.book_errors of instrument out.id.
        void (*instrument)(const void* handler, InstrumentSample& out) noexcept = nullptr;
    };
    // What publish() copies beside the FeedStats; each may be absent.
    struct Sources {
        const GateRejections* gate = nullptr;
        const Venue* venue = nullptr;
        // The protocol's channel counters (MetricsOptions::channel_groups), one per channel.
        std::span<const ChannelCounterSample> channel_counters = {};
        const LatencyHistograms* latency = nullptr;
    };

    // Sized for `h`: every instrument id its capacity allows (none with
    // metrics.instruments = "none") and its lines.
    explicit MetricsRegistry(const FeedStats& h, const MetricsOptions& o = {});
    // Sized explicitly (instruments beyond `max_instruments` seen, lines
    // beyond `max_lines` or channels beyond o.channels are left out of the snapshot).
    MetricsRegistry(std::uint32_t max_instruments, std::size_t max_lines, const MetricsOptions& o = {});
    MetricsRegistry(const MetricsRegistry&) = delete;
    MetricsRegistry& operator=(const MetricsRegistry&) = delete;

    // What the registry allocates for these sizes (both buffers; the memory estimate).
    // Inline: the memory estimate links without the metrics server.
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t max_instruments, std::size_t max_lines,
                                               const MetricsOptions& o) noexcept {
        const std::size_t instruments = o.instruments == MetricsInstruments::kNone ? 0 : max_instruments;
        const std::size_t channel_counters = o.channel_groups.empty() ? 0 : o.channels;
        return 2 * (instruments * sizeof(InstrumentSample) + max_lines * sizeof(LineSample) +
                    channel_counters * sizeof(ChannelCounterSample) + o.channels * sizeof(HistogramSample));
    }

    // Engine thread (the one that polls `h`). Copies counters and the state
    // of every instrument seen (metrics.instruments says which), then makes
    // the copy current. No allocation, no lock, no formatting; O(instruments
    // seen + lines + channels).
    void publish(const FeedStats& h, const Sources& sources) noexcept;
    void publish(const FeedStats& h) noexcept { publish(h, Sources{}); }

    // Any thread: the latest published snapshot as Prometheus text 0.0.4.
    [[nodiscard]] std::string render() const;
    // Any thread: a copy of the latest published snapshot.
    [[nodiscard]] Snapshot snapshot() const;

    // Publishes skipped because a reader still held the back buffer.
    [[nodiscard]] std::uint64_t skipped_publishes() const noexcept {
        return skipped_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_relaxed); }

    // For tests: where each buffer's per-instrument/per-line storage lives
    // and how large it is (publish() must never change them).
    struct Storage {
        const void* instruments;
        std::size_t instrument_capacity;
        const void* lines;
        std::size_t line_capacity;
        friend bool operator==(const Storage&, const Storage&) = default;
    };
    [[nodiscard]] std::array<Storage, 2> storage() const noexcept;

private:
    MetricsOptions options_;
    std::array<Snapshot, 2> buffers_;
    std::atomic<std::uint32_t> front_{0};
    mutable std::array<std::atomic<std::uint32_t>, 2> readers_{};
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<std::uint64_t> skipped_{0};
};

// Formats a snapshot as Prometheus text 0.0.4 (render() = this on the latest).
[[nodiscard]] std::string render_prometheus(const MetricsRegistry::Snapshot& s);

struct MetricsServerOptions {
    std::string address = "127.0.0.1";  // IPv4 literal; 127.0.0.0/8 unless allow_non_loopback
    std::uint16_t port = 9108;          // 0: ephemeral, see MetricsServer::port()
    bool allow_non_loopback = false;
};

// Parses "ADDRESS:PORT" or ":PORT" (address 127.0.0.1) or "PORT", e.g. for
// a --metrics option. Throws std::invalid_argument with the reason.
[[nodiscard]] MetricsServerOptions parse_metrics_listen(std::string_view text);

// HTTP/1.1 on a thread of its own: `GET /metrics` (and HEAD) answers
// render() with Content-Type "text/plain; version=0.0.4"; another path gets
// 404, another method 405.
//
// Every connection is asynchronous on that one thread, so a client that
// connects and sends nothing, or a byte now and then, costs a socket and a
// few KB, not a thread, and the server keeps answering everyone else. Such
// clients are also bounded: a request must arrive whole within
// kRequestDeadline, and a connection beyond kMaxConnections closes the one
// that has waited longest in its current read or write rather than being
// refused, so holding connections open cannot lock a scraper out.
class MetricsServer {
public:
    // Far more than the one or two Prometheus servers that scrape a handler.
    static constexpr std::size_t kMaxConnections = 64;
    // From the accept, or from the previous response on a kept-alive
    // connection. A scraper sends its few hundred bytes at once.
    static constexpr std::chrono::milliseconds kRequestDeadline{3000};

    MetricsServer(const MetricsRegistry& registry, MetricsServerOptions options = {});
    ~MetricsServer();  // stop()
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    // Binds and listens (synchronously, so errors surface here), then
    // launches the server thread. Throws std::invalid_argument for a
    // non-loopback address without allow_non_loopback or a bad address,
    // std::runtime_error if the bind fails. No-op if already started.
    void start();
    // Closes the listener and every connection, joins the thread. Idempotent.
    void stop();

    // The bound port (the ephemeral one for port 0); valid after start().
    [[nodiscard]] std::uint16_t port() const noexcept { return port_.load(std::memory_order_relaxed); }
    // Requests answered (any path).
    [[nodiscard]] std::uint64_t requests() const noexcept { return requests_.load(std::memory_order_relaxed); }

private:
    struct Impl;
    const MetricsRegistry& registry_;
    MetricsServerOptions options_;
    std::unique_ptr<Impl> impl_;
    std::atomic<std::uint16_t> port_{0};
    std::atomic<std::uint64_t> requests_{0};
};

}  // namespace tickgate
