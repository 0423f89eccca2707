// The fan-out consumer (issue 27): subscribes to subjects of a tickgate
// publisher (wildcards allowed: "tickgate.qfb1.>"), reads the stream's last
// record of every matching subject (the snapshot), then applies what
// arrives live by the Tracker's rules (tracker.hpp): duplicates dropped,
// gaps counted and repaired by a snapshot, a publisher restart a new stream.
// When the client library drops messages because this consumer fell behind
// (its pending limit), or the connection was lost and re-made, it is told
// (counters, and on_notice) and every instrument is read again from the stream.
//
// Threading: one thread owns a Consumer and calls everything; the NATS
// client's delivery thread applies live records under a mutex (a
// consumer-side lock, never the handler's) and sets flags for poll().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/fanout/tracker.hpp"

namespace tickgate::fanout {

struct ConsumerOptions {
    std::vector<std::string> servers{"nats://127.0.0.1:4222"};
    std::string stream = "TICKGATE";
    std::string credentials_file;  // as [fanout]'s keys
    std::string user;
    std::string password_file;
    // Messages the client library queues for this consumer before it drops
    // (a slow consumer); -1: the library's default (65536).
    int pending_limit = -1;
    std::uint32_t reconnect_wait_ms = 100;
};

struct ConsumerCounters {
    std::uint64_t slow_consumer = 0;   // times the client library reported dropping for us
    std::uint64_t dropped = 0;         // messages it dropped (natsSubscription_GetDropped)
    std::uint64_t reconnects = 0;
    std::uint64_t disconnects = 0;
    std::uint64_t snapshot_errors = 0; // snapshot reads that failed (retried on the next poll)
};

class Consumer {
public:
    using UpdateFn = std::function<void(const std::string& subject, const InstrumentView& view)>;
    using NoticeFn = std::function<void(std::string_view what)>;

    // Connects (throws std::runtime_error if no server answers within the
    // client's timeout, or the options are bad), subscribes to `subjects`,
    // then reads the snapshot of every subject the stream holds for them.
    Consumer(const ConsumerOptions& opts, std::vector<std::string> subjects);
    ~Consumer();
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;

    // Called on the poll() thread: each instrument whose view took a record,
    // and what the consumer tells its owner ("slow consumer: ...", "reconnected").
    void on_update(UpdateFn f);
    void on_notice(NoticeFn f);
    // Tests and benchmarks: the delivery thread spends `us` per message, so
    // a low pending_limit makes the client library drop (a lossy consumer).
    void set_processing_delay_us(int us) noexcept;

    // Waits up to `timeout_ms` for records, reads the snapshots wanted, says
    // what happened (on_notice) and hands out the changed views (on_update).
    // Returns the records taken since the last call.
    std::size_t poll(int timeout_ms);

    // Copies, consistent at the time of the call.
    [[nodiscard]] std::map<std::string, InstrumentView, std::less<>> views() const;
    [[nodiscard]] TrackerCounters tracker_counters() const;
    [[nodiscard]] ConsumerCounters counters() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tickgate::fanout
