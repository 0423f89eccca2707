// The NATS client options the fan-out's publisher and consumer share:
// servers, credentials, reconnect policy. Private to feed/fanout/ (the
// installed headers do not include nats.h).
#pragma once

#include <nats/nats.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

namespace tickgate::fanout {

struct NatsAuth {
    std::string credentials_file;  // a NATS .creds file, or empty
    std::string user;              // with password_file, or empty
    std::string password_file;     // its first line is the password
    std::uint32_t reconnect_wait_ms = 100;
};

// Options for `servers` (nats://HOST:PORT): reconnect forever, `reconnect_wait_ms`
// apart, pings every 2 s (a silent node is noticed in 6 s; a killed one at
// once), the credentials read now. Throws std::runtime_error saying what
// failed (an unreadable password file names the file, never its content).
// The caller owns the result (natsOptions_Destroy).
natsOptions* make_nats_options(const std::vector<std::string>& servers, const NatsAuth& auth);

// Counts down the client's last callbacks (the connection's closed callback,
// each async subscription's completion) so that an owner destroys the
// closure they point at only after the last has run.
class CallbackFence {
public:
    explicit CallbackFence(int expected = 1) : pending_(expected) {}
    void expect_more(int n) {
        const std::lock_guard lock(mu_);
        pending_ += n;
    }
    // Notifies under the lock: a waiter that sees the count reach zero may
    // destroy the fence at once, so nothing here may touch it after unlocking.
    static void done(void* self) {
        auto* me = static_cast<CallbackFence*>(self);
        const std::lock_guard lock(me->mu_);
        --me->pending_;
        me->cv_.notify_all();
    }
    static void done_conn(natsConnection*, void* self) { done(self); }
    // Waits until every expected callback ran, or `timeout`.
    void wait(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, timeout, [&] { return pending_ <= 0; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int pending_;
};

}  // namespace tickgate::fanout
