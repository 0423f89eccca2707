// A counter with one writer thread and any number of reader threads.
#pragma once

#include <atomic>
#include <cstdint>

namespace tickgate {

// Written by exactly one thread (load + store, no locked RMW: a plain `mov` on
// x86), read by any thread, e.g. a metrics or display thread.
class RelaxedCounter {
public:
    void add(std::uint64_t n = 1) noexcept {
        value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    void set(std::uint64_t v) noexcept { value_.store(v, std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> value_{0};
};

}  // namespace tickgate
