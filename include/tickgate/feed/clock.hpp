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

}  // namespace tickgate
