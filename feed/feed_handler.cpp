#include "tickgate/feed_handler.hpp"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

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

}  // namespace tickgate
