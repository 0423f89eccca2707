#include "tickgate/feed_handler.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <future>
#include <stdexcept>
#include <string>

#include "tickgate/feed/replay.hpp"
#include "tickgate/idle.hpp"

namespace tickgate {

namespace {

// The CPUs this thread may run on, e.g. "0-1" or "0,2-3" (sched_getaffinity).
std::string allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0) return "unknown";
    std::string out;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &set)) continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
        out += (out.empty() ? "" : ",") + std::to_string(cpu) + (last > cpu ? "-" + std::to_string(last) : "");
        cpu = last;
    }
    return out.empty() ? "none" : out;
}

// How long the network thread may wait in ppoll: the idle strategy's budget
// (0 for a strategy that never blocks: a compile-time 0 for those), cut
// short by the earliest arbitration deadline (at least 1 ns: 0 would mean
// "do not wait").
template <class Idle>
std::int64_t wait_budget_ns(const Idle& idle, const RingPublisher& publisher) noexcept {
    const std::int64_t max_block = idle.max_block_ns();
    if (max_block == 0) return 0;
    const std::int64_t deadline = publisher.next_deadline();
    if (deadline == INT64_MAX) return max_block;
    return std::clamp<std::int64_t>(deadline - realtime_ns(), 1, max_block);
}

// Chosen once, from threading.mode and threading.busy_poll_idle: blocking
// mode waits in ppoll(2) until data, an arbitration deadline or 50 ms (so
// stop() is noticed); busy-poll spins on recvmmsg, or yields the core
// between empty polls.
template <class F>
void with_network_idle(const ThreadingConfig& t, F&& loop) {
    constexpr std::chrono::milliseconds kMaxBlock{50};
    if (t.mode == ThreadMode::kBlocking) return loop(BlockingIdle{kMaxBlock});
    if (t.busy_poll_yield) return loop(YieldingIdle<>{});
    return loop(BusySpinIdle<>{});
}

}  // namespace

bool pin_current_thread(int cpu) noexcept {
    if (cpu < 0) return true;
    if (cpu >= CPU_SETSIZE) {
        errno = EINVAL;
        return false;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    const int rc = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
    if (rc != 0) errno = rc;
    return rc == 0;
}

void pin_current_thread_or_throw(int cpu, std::string_view key) {
    if (pin_current_thread(cpu)) return;
    const int err = errno;
    throw std::runtime_error(std::string(key) + " = " + std::to_string(cpu) + ": cannot pin the thread to CPU " +
                             std::to_string(cpu) + " (" + std::strerror(err) + "); this process may run on CPUs " +
                             allowed_cpus());
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
    // The network thread pins itself before its first receive; start()
    // returns only once that worked, and throws if it did not: an unpinned
    // latency-critical thread is a misconfiguration, not a detail.
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
        with_network_idle(cfg_.threading, [this](auto idle) { run_network(idle); });
    });
    try {
        result.get();
    } catch (...) {
        thread_.join();
        throw;
    }
}

void FeedHandler::stop() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
}

template <class Idle>
void FeedHandler::run_network(Idle idle) noexcept {
    while (!stop_.load(std::memory_order_relaxed)) {
        const int got = receiver_.poll_once(wait_budget_ns(idle, publisher_), publisher_);
        // Give up on a hole only once every copy that arrived in time has been read.
        if (const std::int64_t t = receiver_.drained_until(); t != 0) publisher_.expire(t);
        idle.idle(got);
    }
}

}  // namespace tickgate
