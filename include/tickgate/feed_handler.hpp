// The embedding API: a live QFB/1 feed handler.
//
// Threading contract: the constructor opens and joins the sockets (throws on
// any problem); start() launches the one network thread (receive -> decode
// -> ring); everything else — poll(), gate(), sequencer(), books — belongs to
// the engine's own thread, which must be a single thread. Statistics
// (line_stats(), publisher counters) may be read from any thread.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <memory>
#include <string_view>
#include <thread>

#include "tickgate/feed/config.hpp"
#include "tickgate/book/gate.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/spsc_ring.hpp"

namespace tickgate {

class FeedHandler {
public:
    explicit FeedHandler(const Config& cfg);
    ~FeedHandler();  // stops the network thread
    FeedHandler(const FeedHandler&) = delete;
    FeedHandler& operator=(const FeedHandler&) = delete;

    // Launches the network thread, pinned to threading.receiver_cpu if set;
    // throws std::runtime_error naming the CPU if it cannot be pinned.
    void start();
    void stop();   // joins it; idempotent

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

    [[nodiscard]] const Gate& gate() const noexcept { return gate_; }
    [[nodiscard]] const GateConfig& gate_config() const noexcept { return cfg_.gate; }
    [[nodiscard]] const Sequencer& sequencer() const noexcept { return sequencer_; }
    [[nodiscard]] const Config& config() const noexcept { return cfg_; }

    // Any thread.
    [[nodiscard]] std::span<const std::unique_ptr<LineStats>> line_stats() const noexcept { return receiver_.lines(); }
    [[nodiscard]] const wire::DecoderCounters& decoder_counters() const noexcept { return publisher_.decoder_counters(); }
    [[nodiscard]] const PublisherCounters& publisher_counters() const noexcept { return publisher_.counters(); }
    [[nodiscard]] const ArbiterCounters& arbiter_counters() const noexcept { return publisher_.arbiter_counters(); }
    [[nodiscard]] std::size_t ring_fill() const noexcept { return ring_.size_approx(); }

private:
    template <class Idle>  // an IdleStrategy (idle.hpp), chosen once by start()
    void run_network(Idle idle) noexcept;

    Config cfg_;
    Receiver receiver_;
    SpscRing<Event> ring_;
    RingPublisher publisher_;
    Sequencer sequencer_;
    Gate gate_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Pins the calling thread to `cpu` (no-op for -1). Returns false on failure
// (errno says why).
bool pin_current_thread(int cpu) noexcept;
// The same, or throws std::runtime_error naming `key` (the config key), the
// CPU, the reason and the CPUs this process may run on.
void pin_current_thread_or_throw(int cpu, std::string_view key);

}  // namespace tickgate
