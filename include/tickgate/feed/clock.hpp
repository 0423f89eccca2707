// The clock arrival times use.
#pragma once

#include <time.h>

#include <cstdint>

namespace tickgate {

// Wall-clock time in Unix ns (the clock kernel receive timestamps use).
[[nodiscard]] inline std::int64_t realtime_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Monotonic time in ns (intervals that a wall-clock step must not stretch or
// shrink: the re-request client's timeouts and rate window).
[[nodiscard]] inline std::int64_t monotonic_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace tickgate
