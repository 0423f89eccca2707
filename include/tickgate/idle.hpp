// Idle strategies: what a thread's duty cycle does when an iteration found
// no work (Aeron's IdleStrategy shape). A loop calls idle(work_count) once
// per iteration; with work_count > 0 the strategy resets and returns at
// once, otherwise it spins, yields, parks with backoff, or — for a loop
// whose work call can wait by itself (ppoll in Receiver::poll_once) —
// leaves the waiting to that call, which asks max_block_ns() how long it may
// block. Strategies are template parameters of the loop: it is instantiated
// once per strategy, so nothing is decided per iteration but the strategy's
// own step.
//
//   BusySpinIdle    spin (cpu pause); never gives the core away
//   YieldingIdle    sched_yield: for a thread sharing its core with another
//   BackoffIdle     `spins` spins, then `yields` yields, then parks from
//                   min_park to max_park, doubling; work resets it
//   BlockingIdle    nothing: the work call itself blocks up to max_block_ns()
//
// Every strategy takes an Ops (default ThreadIdleOps) that performs the
// spin, yield and park, so tests can count them instead of timing them.
// Standard library only.
#pragma once

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <thread>

namespace tickgate {

// The real thread operations.
struct ThreadIdleOps {
    static void spin() noexcept {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield" ::: "memory");
#endif
    }
    static void yield() noexcept { std::this_thread::yield(); }
    static void park(std::int64_t ns) noexcept { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }
};

// idle(work_count): once per duty-cycle iteration. reset(): work was found
// (idle(n > 0) calls it). max_block_ns(): how long the loop's own work call
// may wait for work (0: it must not wait; the strategy idles instead).
template <class S>
concept IdleStrategy = requires(S& s, const S& cs, int work) {
    s.idle(work);
    s.reset();
    { cs.max_block_ns() } -> std::convertible_to<std::int64_t>;
};

// One spin (BusySpinIdle) or one yield (YieldingIdle) per empty iteration.
enum class IdleStep : std::uint8_t { kSpin, kYield };
template <IdleStep Step, class Ops = ThreadIdleOps>
class OneStepIdle {
public:
    explicit OneStepIdle(Ops ops = {}) noexcept : ops_(ops) {}
    void idle(int work_count) noexcept {
        if (work_count > 0) return;
        if constexpr (Step == IdleStep::kSpin) ops_.spin();
        else ops_.yield();
    }
    void reset() noexcept {}
    [[nodiscard]] static constexpr std::int64_t max_block_ns() noexcept { return 0; }

private:
    [[no_unique_address]] Ops ops_;
};
template <class Ops = ThreadIdleOps>
using BusySpinIdle = OneStepIdle<IdleStep::kSpin, Ops>;
template <class Ops = ThreadIdleOps>
using YieldingIdle = OneStepIdle<IdleStep::kYield, Ops>;

// After work: exactly `spins` spinning idles, then `yields` yielding ones,
// then parks of min_park, 2 * min_park, ... up to max_park, which repeats.
// spins = yields = 0 and min_park = max_park: a plain sleeping strategy.
template <class Ops = ThreadIdleOps>
class BackoffIdle {
public:
    BackoffIdle(std::uint32_t spins, std::uint32_t yields, std::chrono::nanoseconds min_park,
                std::chrono::nanoseconds max_park, Ops ops = {}) noexcept
        : max_spins_(spins),
          max_yields_(yields),
          min_park_ns_(std::max<std::int64_t>(min_park.count(), 1)),
          max_park_ns_(std::max<std::int64_t>(max_park.count(), min_park_ns_)),
          park_ns_(min_park_ns_),
          ops_(ops) {}

    void idle(int work_count) noexcept {
        if (work_count > 0) return reset();
        if (spins_ < max_spins_) {
            ++spins_;
            ops_.spin();
        } else if (yields_ < max_yields_) {
            ++yields_;
            ops_.yield();
        } else {
            ops_.park(park_ns_);
            park_ns_ = std::min(park_ns_ * 2, max_park_ns_);
        }
    }
    void reset() noexcept {
        spins_ = 0;
        yields_ = 0;
        park_ns_ = min_park_ns_;
    }
    [[nodiscard]] static constexpr std::int64_t max_block_ns() noexcept { return 0; }
    // The park the next idle would take once spins and yields are used up.
    [[nodiscard]] std::int64_t next_park_ns() const noexcept { return park_ns_; }

private:
    std::uint32_t max_spins_;
    std::uint32_t max_yields_;
    std::int64_t min_park_ns_;
    std::int64_t max_park_ns_;
    std::uint32_t spins_ = 0;
    std::uint32_t yields_ = 0;
    std::int64_t park_ns_;
    [[no_unique_address]] Ops ops_;
};

// For a loop whose work call waits for work itself (ppoll, epoll, a
// condition variable): idle() does nothing, and the loop passes
// max_block_ns() (at least 1 ns) to the work call as its timeout — bounded,
// so the loop still checks its stop flag and its timers that often.
class BlockingIdle {
public:
    explicit BlockingIdle(std::chrono::nanoseconds max_block) noexcept
        : max_block_ns_(std::max<std::int64_t>(max_block.count(), 1)) {}
    void idle(int) noexcept {}
    void reset() noexcept {}
    [[nodiscard]] std::int64_t max_block_ns() const noexcept { return max_block_ns_; }

private:
    std::int64_t max_block_ns_;
};

static_assert(IdleStrategy<BusySpinIdle<>> && IdleStrategy<YieldingIdle<>> && IdleStrategy<BackoffIdle<>> &&
              IdleStrategy<BlockingIdle>);

}  // namespace tickgate
