// The fan-out publisher (issue 27): a thread of its own takes the newest
// Record of each instrument from the ConflatingRing, numbers it (per
// instrument and session), and publishes it with core NATS on
// PREFIX.VENUE.CHANNEL.SYMBOL; a JetStream stream over PREFIX.> keeps the
// last record of every subject (max_msgs_per_subject = 1, `replicas`
// copies) as the snapshot store consumers read after a gap.
//
// Failures never reach the engine: its side only writes the ring. While no
// server is reachable a record is not sent but still takes its sequence
// number (dropped, counted: consumers see the gap); the client reconnects to
// any server of the list (or the cluster's others), and after every
// (re)connect the current state of every instrument is published again
// (resync flag) and the stream is (re)declared.
//
// Threading: construct, start() and stop() on one thread; the publisher's
// own thread does the rest; counters from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tickgate/counter.hpp"
#include "tickgate/fanout/conflating_ring.hpp"
#include "tickgate/feed/config.hpp"

namespace tickgate::fanout {

struct PublisherCounters {
    RelaxedCounter published;        // records handed to the NATS client
    RelaxedCounter dropped;          // records not sent (no connection, client error): a gap at consumers
    RelaxedCounter resynced;         // records republished after a (re)connect
    RelaxedCounter connects;         // (re)connections, the first included
    RelaxedCounter disconnects;
    RelaxedCounter stream_errors;    // the stream could not be declared (said on stderr)
    RelaxedCounter async_errors;     // errors the client reported asynchronously (slow consumer, permissions)
    RelaxedCounter renamed;          // instruments published unnamed, then under their symbol: old subject purged
    RelaxedCounter purge_errors;     // such a purge that failed (the old subject's last record stays)
    RelaxedCounter heartbeats;       // PREFIX.VENUE.heartbeat records sent ([fanout] heartbeat_ms)
};

class Publisher {
public:
    // Per instrument, the publisher thread's own state (estimate_memory).
    static constexpr std::size_t kPerInstrumentBytes = 16 + 32 + 24;  // seq + version, subject, cached symbol/channel

    // `venue`: the protocol's name (P::kName), the subject's second token.
    // Connects in the background (never fails for an unreachable server);
    // throws std::runtime_error for what a retry cannot fix (bad options,
    // unreadable credentials).
    Publisher(const FanoutConfig& cfg, std::string_view venue, ConflatingRing& ring);
    ~Publisher();
    Publisher(const Publisher&) = delete;
    Publisher& operator=(const Publisher&) = delete;

    // Launches the publisher thread (idempotent).
    void start();
    // Publishes what is pending, flushes (up to `flush_ms`), joins, closes the connection.
    void stop(int flush_ms = 2000);

    // This run's session id (its start time, Unix ns): in every record.
    [[nodiscard]] std::uint64_t session() const noexcept;
    // Whether the client is connected now.
    [[nodiscard]] bool connected() const noexcept;
    [[nodiscard]] const PublisherCounters& counters() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tickgate::fanout
