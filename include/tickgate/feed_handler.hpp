// The embedding API: a live feed handler for one venue protocol.
//
// Threading contract: the constructor opens and joins the sockets (throws on
// any problem); start() launches the one network thread (receive -> key ->
// channel session -> arbitrate -> decode -> ring); everything else — poll(),
// gate(), instruments(), book() — belongs to the engine's own thread, which
// must be a single thread. Statistics (stats(), line_stats(), counters) may
// be read from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>

#include "tickgate/book/gate.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/feed_stats.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/ring_publisher.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/protocol.hpp"
#include "tickgate/spsc_ring.hpp"

namespace tickgate {

// Pins the calling thread to `cpu` (no-op for -1). Returns false on failure.
bool pin_current_thread(int cpu) noexcept;

template <VenueProtocol P, SequencedBook Book = typename P::Book>
class BasicFeedHandler {
public:
    using Protocol = P;

    // Throws std::invalid_argument if the config's channels speak another protocol.
    explicit BasicFeedHandler(const Config& cfg)
        : cfg_(checked(cfg)),
          receiver_(cfg_),
          ring_(cfg_.receiver.ring_size),
          publisher_(ring_, cfg_.capacity.max_instruments, cfg_.receiver, cfg_.channel_ids()),
          instruments_(cfg_.capacity.max_instruments),
          book_(cfg_.capacity.max_instruments, cfg_.capacity.book_depth),
          sequencer_(instruments_, book_, cfg_.capacity),
          gate_(instruments_, cfg_.gate) {
        apply_config(instruments_, sequencer_, cfg_);
    }
    ~BasicFeedHandler() { stop(); }
    BasicFeedHandler(const BasicFeedHandler&) = delete;
    BasicFeedHandler& operator=(const BasicFeedHandler&) = delete;

    // Launches the network thread (pinned if configured).
    void start() {
        if (thread_.joinable()) return;
        stop_.store(false, std::memory_order_relaxed);
        thread_ = std::thread([this] { run_network(); });
    }
    // Joins it; idempotent.
    void stop() {
        stop_.store(true, std::memory_order_relaxed);
        if (thread_.joinable()) thread_.join();
    }

    // Engine thread: applies up to `limit` queued events and calls
    // on_update(const Update&, const Event&) for each. Returns the number
    // applied (0: nothing queued). Never blocks, never allocates.
    template <class F>
        requires std::invocable<F&, const Update&, const Event&>
    std::size_t poll(F&& on_update, std::size_t limit = 256) noexcept {
        return ring_.consume([&](const Event& ev) { on_update(sequencer_.apply(ev), ev); }, limit);
    }
    std::size_t poll(std::size_t limit = 256) noexcept {
        return poll([](const Update&, const Event&) {}, limit);
    }

    // Engine thread.
    [[nodiscard]] const Gate& gate() const noexcept { return gate_; }
    [[nodiscard]] const GateConfig& gate_config() const noexcept { return cfg_.gate; }
    [[nodiscard]] const InstrumentTable& instruments() const noexcept { return instruments_; }
    [[nodiscard]] const Book& book() const noexcept { return book_; }
    [[nodiscard]] const BasicSequencer<Book>& sequencer() const noexcept { return sequencer_; }
    [[nodiscard]] const Config& config() const noexcept { return cfg_; }

    // Any thread.
    [[nodiscard]] FeedStats stats() const noexcept {
        return {receiver_.lines(), publisher_.decoder_counters(), publisher_.arbiter_counters(),
                publisher_.counters(), instruments_, sequencer_.counters(), ring_};
    }
    [[nodiscard]] std::span<const std::unique_ptr<LineStats>> line_stats() const noexcept { return receiver_.lines(); }
    [[nodiscard]] const DecoderCounters& decoder_counters() const noexcept { return publisher_.decoder_counters(); }
    [[nodiscard]] const PublisherCounters& publisher_counters() const noexcept { return publisher_.counters(); }
    [[nodiscard]] const ArbiterCounters& arbiter_counters() const noexcept { return publisher_.arbiter_counters(); }
    [[nodiscard]] std::size_t ring_fill() const noexcept { return ring_.size_approx(); }

private:
    static const Config& checked(const Config& cfg) {
        if (cfg.protocol() != P::kName)
            throw std::invalid_argument("the config's channels speak " + std::string(cfg.protocol()) +
                                        ", this handler " + std::string(P::kName));
        return cfg;
    }

    void run_network() noexcept {
        pin_current_thread(cfg_.threading.receiver_cpu);
        // Blocking mode sleeps in ppoll(2) until data, an arbitration deadline
        // or 50 ms (so stop() is noticed); busy-poll spins on recvmmsg (yielding
        // the core between empty polls if threading.busy_poll_idle = "yield").
        const bool busy = cfg_.threading.mode == ThreadMode::kBusyPoll;
        constexpr std::int64_t kIdleNs = 50'000'000;
        while (!stop_.load(std::memory_order_relaxed)) {
            std::int64_t timeout = 0;
            if (!busy) {
                const std::int64_t deadline = publisher_.next_deadline();
                timeout = deadline == INT64_MAX ? kIdleNs
                                                : std::clamp<std::int64_t>(deadline - realtime_ns(), 1, kIdleNs);
            }
            const int got = receiver_.template poll_once<P>(timeout, publisher_);
            if (busy && got == 0 && cfg_.threading.busy_poll_yield) std::this_thread::yield();
            // Give up on a hole only once every copy that arrived in time has been read.
            if (const std::int64_t t = receiver_.drained_until(); t != 0) publisher_.expire(t);
        }
    }

    Config cfg_;
    Receiver receiver_;
    SpscRing<Event> ring_;
    RingPublisher<P> publisher_;
    InstrumentTable instruments_;
    Book book_;
    BasicSequencer<Book> sequencer_;
    Gate gate_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// The QFB/1 feed handler.
using FeedHandler = BasicFeedHandler<qfb1::Protocol>;

}  // namespace tickgate
