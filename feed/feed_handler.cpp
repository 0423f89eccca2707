#include "tickgate/feed_handler.hpp"

#include <pthread.h>
#include <sched.h>

#include "tickgate/replay.hpp"

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
      publisher_(ring_, cfg_.capacity.max_instruments),
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
    // Blocking mode sleeps in poll(2) up to 50 ms so stop() is noticed;
    // busy-poll spins on non-blocking recvmmsg.
    const int timeout_ms = cfg_.threading.mode == ThreadMode::kBusyPoll ? 0 : 50;
    while (!stop_.load(std::memory_order_relaxed)) receiver_.poll_once(timeout_ms, publisher_);
}

}  // namespace tickgate
