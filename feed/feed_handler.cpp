#include "tickgate/feed_handler.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>

#include "tickgate/feed/replay.hpp"

namespace tickgate {

bool pin_current_thread(int cpu) noexcept {
    if (cpu < 0) return true;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
}

FeedHandler::FeedHandler(const Config& cfg)
    : cfg_(cfg),
      receiver_(cfg_),
      ring_(cfg_.receiver.ring_size),
      publisher_(ring_, cfg_.capacity.max_instruments, cfg_.receiver, cfg_.channel_ids()),
      sequencer_(cfg_.capacity),
      gate_(sequencer_, cfg_.gate) {
    apply_config(sequencer_, cfg_);
}

FeedHandler::~FeedHandler() { stop(); }

void FeedHandler::start() {
    if (thread_.joinable()) return;
    stop_.store(false, std::memory_order_relaxed);
    thread_ = std::thread([this] { run_network(); });
}

void FeedHandler::stop() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
}

void FeedHandler::run_network() noexcept {
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
            timeout = deadline == INT64_MAX ? kIdleNs : std::clamp<std::int64_t>(deadline - realtime_ns(), 1, kIdleNs);
        }
        const int got = receiver_.poll_once(timeout, publisher_);
        if (busy && got == 0 && cfg_.threading.busy_poll_yield) std::this_thread::yield();
        // Give up on a hole only once every copy that arrived in time has been read.
        if (const std::int64_t t = receiver_.drained_until(); t != 0) publisher_.expire(t);
    }
}

}  // namespace tickgate
