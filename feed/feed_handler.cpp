#include "tickgate/feed_handler.hpp"

#include <pthread.h>
#include <sched.h>

namespace tickgate {

bool pin_current_thread(int cpu) noexcept {
    if (cpu < 0) return true;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
}

}  // namespace tickgate
