// The embedding API: a live feed handler for one venue protocol.
//
// Threading contract: the constructor opens and joins the sockets (throws on
// any problem); start() launches the one network thread (receive -> key ->
// channel session -> arbitrate -> decode -> ring); everything else — poll(),
// gate(), instruments(), book(), and find(), safe_quote(), subscribe() of
// EngineApi (feed/engine_api.hpp) — belongs to the engine's own thread, which
// must be a single thread. Statistics (stats(), line_stats(), counters) may
// be read from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "tickgate/book/gate.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/engine_api.hpp"
#include "tickgate/feed/feed_stats.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/ring_publisher.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/feed/recovery.hpp"
#include "tickgate/idle.hpp"
#include "tickgate/protocol.hpp"
#include "tickgate/spsc_ring.hpp"

namespace tickgate {

// Pins the calling thread to `cpu` (no-op for -1). Returns false on failure
// (errno says why).
bool pin_current_thread(int cpu) noexcept;
// The same, or throws std::runtime_error naming `key` (the config key), the
// CPU, the reason and the CPUs this process may run on.
void pin_current_thread_or_throw(int cpu, std::string_view key);

namespace detail {
// The network thread's idle strategy, chosen once from threading.mode and
// threading.busy_poll_idle: blocking mode waits in ppoll(2) until data, an
// arbitration deadline or 50 ms (so stop() is noticed); busy-poll spins on
// recvmmsg, or yields the core between empty polls.
template <class F>
void with_network_idle(const ThreadingConfig& t, F&& loop) {
    constexpr std::chrono::milliseconds kMaxBlock{50};
    if (t.mode == ThreadMode::kBlocking) return loop(BlockingIdle{kMaxBlock});
    if (t.busy_poll_yield) return loop(YieldingIdle<>{});
    return loop(BusySpinIdle<>{});
}

// `cfg`, or std::invalid_argument if its channels speak another protocol than P.
template <VenueProtocol P>
const Config& speaking(const Config& cfg) {
    if (cfg.protocol() != P::kName)
        throw std::invalid_argument("the config's channels speak " + std::string(cfg.protocol()) + ", this handler " +
                                    std::string(P::kName));
    return cfg;
}

// How long a receive loop may wait in ppoll: `max_block_ns` (0: it must
// not wait), cut short by the earliest arbitration deadline `deadline`
// (INT64_MAX: none; at least 1 ns, as 0 would mean "do not wait").
inline std::int64_t wait_budget_ns(std::int64_t max_block_ns, std::int64_t deadline) noexcept {
    if (max_block_ns <= 0) return 0;
    if (deadline == INT64_MAX) return max_block_ns;
    return std::clamp<std::int64_t>(deadline - realtime_ns(), 1, max_block_ns);
}
}  // namespace detail

template <VenueProtocol P, SequencedBook Book = typename P::Book>
class BasicFeedHandler : public EngineApi<BasicFeedHandler<P, Book>> {
    friend class EngineApi<BasicFeedHandler>;

public:
    using Protocol = P;

    // Throws std::invalid_argument if the config's channels speak another protocol.
    explicit BasicFeedHandler(const Config& cfg)
        : cfg_(detail::speaking<P>(cfg)),
          capacity_(capacity_for<P>(cfg_)),
          receiver_(cfg_),
          ring_(cfg_.receiver.ring_size),
          publisher_(ring_, capacity_.max_instruments, cfg_),
          instruments_(capacity_.max_instruments),
          book_(make_book<Book>(cfg_, capacity_)),
          sequencer_(instruments_, book_, capacity_),
          gate_(instruments_, cfg_.gate),
          recovery_(cfg_, receiver_.lines()) {
        publisher_.configure(cfg_);
        apply_config(instruments_, sequencer_, cfg_);
        configure_book(book_, cfg_);
    }
    ~BasicFeedHandler() { stop(); }
    BasicFeedHandler(const BasicFeedHandler&) = delete;
    BasicFeedHandler& operator=(const BasicFeedHandler&) = delete;

    // Launches the network thread, pinned to threading.receiver_cpu if set;
    // throws std::runtime_error naming the CPU if it cannot be pinned (an
    // unpinned latency-critical thread is a misconfiguration, not a detail).
    void start() {
        if (thread_.joinable()) return;
        stop_.store(false, std::memory_order_relaxed);
        std::promise<void> pinned;
        std::future<void> result = pinned.get_future();
        thread_ = std::thread([this, pinned = std::move(pinned)]() mutable {
            try {
                pin_current_thread_or_throw(cfg_.threading.receiver_cpu, "threading.receiver_cpu");
            } catch (...) {
                pinned.set_exception(std::current_exception());
                return;
            }
            pinned.set_value();
            detail::with_network_idle(cfg_.threading, [this](auto idle) { run_network(idle); });
        });
        try {
            result.get();
        } catch (...) {
            thread_.join();
            throw;
        }
    }
    // Joins it; idempotent.
    void stop() {
        stop_.store(true, std::memory_order_relaxed);
        if (thread_.joinable()) thread_.join();
    }

    // Engine thread: applies up to `limit` queued events and calls
    // on_update(const Update&, const Event&) for each (but those of
    // instruments not subscribed). Returns the number applied (0: nothing
    // queued). Never blocks, never allocates.
    template <class F>
        requires std::invocable<F&, const Update&, const Event&>
    std::size_t poll(F&& on_update, std::size_t limit = 256) noexcept {
        const std::size_t n = ring_.consume(
            [&](const Event& ev) {
                recovery_.before(instruments_, ev);
                const Update u = sequencer_.apply(ev);
                recovery_.on_update(u, ev);
                if (sequencer_.delivers(u)) on_update(u, ev);
            },
            limit);
        recovery_.refresh(instruments_);
        return n;
    }
    std::size_t poll(std::size_t limit = 256) noexcept {
        return poll([](const Update&, const Event&) {}, limit);
    }

    // Engine thread.
    [[nodiscard]] const Gate& gate() const noexcept { return gate_; }
    [[nodiscard]] const GateConfig& gate_config() const noexcept { return cfg_.gate; }
    [[nodiscard]] const InstrumentTable& instruments() const noexcept { return instruments_; }
    [[nodiscard]] const Book& book() const noexcept { return book_; }
    [[nodiscard]] const BasicSequencer<typename P::Rules, Book>& sequencer() const noexcept { return sequencer_; }
    [[nodiscard]] const Config& config() const noexcept { return cfg_; }

    // Any thread.
    // MDP3: which channels' snapshot feeds are wanted (joined by the network thread).
    // The protocol's recovery service (recovery.hpp), e.g. MDP3's snapshot-feed control.
    [[nodiscard]] const RecoveryOf<P>& recovery() const noexcept { return recovery_; }
    [[nodiscard]] FeedStats stats() const noexcept {
        return {receiver_.lines(), publisher_.decoder_counters(), publisher_.arbiter_counters(),
                publisher_.counters(), instruments_, sequencer_.counters(), &ring_,   cfg_.receiver.arbitration,
                receiver_};
    }
    [[nodiscard]] std::span<const std::unique_ptr<LineStats>> line_stats() const noexcept { return receiver_.lines(); }
    [[nodiscard]] const DecoderCounters& decoder_counters() const noexcept { return publisher_.decoder_counters(); }
    [[nodiscard]] const PublisherCounters& publisher_counters() const noexcept { return publisher_.counters(); }
    [[nodiscard]] const ArbiterCounters& arbiter_counters() const noexcept { return publisher_.arbiter_counters(); }
    [[nodiscard]] std::size_t ring_fill() const noexcept { return ring_.size_approx(); }
    // The protocol's decoder or front (its own figures: MDP3's channels and
    // SecurityIDs, ITCH's streams). Only once stop() has returned: the network thread writes it.
    [[nodiscard]] decltype(auto) protocol_decoder() const noexcept { return publisher_.protocol_decoder(); }

private:
    template <class Idle>  // an idle strategy (idle.hpp), chosen once by start()
    void run_network(Idle idle) noexcept {
        while (!stop_.load(std::memory_order_relaxed)) {
            const std::int64_t wait_ns = detail::wait_budget_ns(idle.max_block_ns(), publisher_.next_deadline());
            recovery_.steer(receiver_);
            const int got = receiver_.template poll_once<P>(wait_ns, publisher_);
            // Give up on a hole only once every copy that arrived in time has been read.
            if (const std::int64_t t = receiver_.drained_until(); t != 0) publisher_.expire(t);
            idle.idle(got);
        }
    }

    Config cfg_;
    Capacity capacity_;  // the protocol's (capacity_for)
    Receiver receiver_;
    SpscRing<Event> ring_;
    RingPublisher<P> publisher_;
    InstrumentTable instruments_;
    Book book_;
    BasicSequencer<typename P::Rules, Book> sequencer_;
    Gate gate_;
    RecoveryOf<P> recovery_;  // decided on the engine thread, followed by the network thread
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// The reference venue's feed handler (protocols.hpp: QFB/1).
using FeedHandler = BasicFeedHandler<ReferenceProtocol>;

}  // namespace tickgate
