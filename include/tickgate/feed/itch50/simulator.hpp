// ITCH 5.0 venue simulator (`tickgate sim --protocol itch50`): one MoldUDP64
// session on lines A and B with an order flow over a few hundred stocks, the
// QFB/1 simulator's line faults, a MoldUDP64 re-request server answering
// from the session's message store (with faults of its own), and the ground
// truth a conforming handler must reach. The schedule is generated whole up
// front and is deterministic from the seed (no clock); the shared driver
// (sim_driver.hpp) applies the line faults and sends it on loopback
// multicast (serving requests on 127.0.0.1) or writes a capture.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tickgate/feed/itch50/glimpse_server.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/sim_driver.hpp"

namespace tickgate::itch50 {

// The line faults (loss_a/b, burst_p/len, dup, reorder, outage_a/b: the
// order flow's fractions) are the driver's, as QFB/1's simulator's.
struct SimOptions : SimLineFaults {
    std::uint32_t stocks = 300;         // stock locates 1..N
    double rate = 20000;                // order-flow messages per second
    double duration_s = 2;              // used when messages == 0
    std::uint64_t messages = 0;         // order-flow messages; 0 = rate * duration
    std::uint32_t batch = 8;            // messages per packet, 1..32
    std::uint32_t heartbeat_ms = 100;   // a heartbeat after this long without a packet
    std::uint64_t seed = 1;
    std::string session = "SIM0000001"; // 10 characters; a restart counts its last digits up
    std::int64_t epoch_ns = 1'719'835'200'000'000'000;  // Unix ns of time 0 (2024-07-01 12:00 UTC)
    std::int32_t utc_offset_minutes = -240;  // the venue's clock (New York in summer) for timestamps

    std::string group_a = "239.255.30.1";
    std::uint16_t port_a = 31301;
    std::string group_b = "239.255.30.2";
    std::uint16_t port_b = 31302;
    std::string interface = "127.0.0.1";
    std::uint16_t server_port = 31300;  // the re-request server on 127.0.0.1 (0: any free port)

    std::optional<double> restart_at;   // end of session, then a new session from 1 (and one late old packet on B)
    // Re-request server faults.
    std::uint32_t server_delay_ms = 0;  // each answer waits this long
    bool server_silent = false;         // requests are read and counted, never answered
    double server_partial = 0;          // an answer carries only the first half of the range asked
    std::uint32_t server_linger_ms = 1000;  // the server keeps answering this long after the last packet
    // The GLIMPSE 5.0 server (SoupBinTCP on 127.0.0.1): a snapshot of the
    // book as published so far, then `M`; any credentials are accepted.
    bool glimpse_off = false;
    std::uint16_t glimpse_port = 0;               // 0: any free port (printed on stderr)
    std::uint32_t glimpse_delay_ms = 0;           // `M` waits this long (a slow spin)
    std::uint64_t glimpse_drop_after = UINT64_MAX;  // the connection drops after this many spin messages
    bool glimpse_reject = false;                  // every login rejected

    // Throws std::invalid_argument naming the bad option.
    void validate() const;
    // Lines A and B as the driver takes them.
    [[nodiscard]] SimLinePair lines() const;
};

// One copy of a datagram on one line, in send order.
struct SimSend {
    std::uint32_t packet = 0;  // index into SimSchedule::packets
    std::int64_t time_ns = 0;  // after time 0
    bool line_b = false;
};

// A stock's final book in the last session, as the publisher holds it.
struct SimLevel {
    std::uint32_t price = 0;   // 4 implied decimals
    std::uint64_t shares = 0;
    std::uint32_t orders = 0;
};
struct SimStockTruth {
    std::uint16_t locate = 0;
    std::string symbol;
    std::uint64_t messages = 0;        // messages of this locate, all sessions
    std::uint64_t open_orders = 0;     // at the end of the last session
    std::vector<SimLevel> bids, asks;  // best first
};

// What the publisher did and what a conforming handler must count. The
// "handler" figures are for a handler listening from before time 0 on
// both lines, with `gap_timeout_ms` long enough for the server to answer.
// The line counts (sent_a, ... late_old_session) are the driver's.
struct SimTruth : SimLineCounts {
    struct SessionTruth {
        std::string session;
        std::uint64_t messages = 0;         // positions 1..messages
        std::uint64_t late_join = 0;        // positions before the first packet either line carried
        std::uint64_t dropped_both = 0;     // later positions neither line carried
    };
    std::vector<SessionTruth> sessions;
    std::uint64_t heartbeats = 0;
    std::int64_t duration_ns = 0;
    std::vector<SimStockTruth> stocks;
    // Filled by the socket sink: what the re-request server saw and did.
    std::uint64_t requests = 0, rejected_requests = 0, answers = 0, answered_messages = 0;
    std::uint16_t server_port = 0;
    // Filled by the socket sink: what the GLIMPSE server did.
    std::uint64_t glimpse_connections = 0, glimpse_served = 0, glimpse_rejected = 0;
    std::uint16_t glimpse_port = 0;
    std::string output;

    [[nodiscard]] std::string to_json(const SimOptions& o) const;
};

struct SimSchedule {
    std::vector<Bytes> packets;
    std::vector<SimSend> sends;
    std::vector<std::vector<Bytes>> store;  // per session, message of position i + 1
    std::vector<std::string> sessions;
    // Per send: the session index and the highest position published by then.
    std::vector<std::uint32_t> send_session;
    std::vector<std::uint64_t> send_published;
    SimTruth truth;
};

// Generates the whole schedule (validates `o`).
[[nodiscard]] SimSchedule simulate(const SimOptions& o);

// A MoldUDP64 re-request server on 127.0.0.1 answering from `schedule`'s
// store with the options' faults: a 20-byte request (session, first
// position, count) is answered by downstream packets, unicast to the
// requester (only a 127.x one), of at most 1400 bytes each, up to the
// positions published so far. Runs its own thread from start() to stop();
// published() is set by the sending thread. Throws std::runtime_error at
// start-up if the port cannot be bound.
class RerequestServer {
public:
    RerequestServer(const SimOptions& o, const SimSchedule& schedule);
    ~RerequestServer();
    RerequestServer(const RerequestServer&) = delete;
    RerequestServer& operator=(const RerequestServer&) = delete;
    [[nodiscard]] std::uint16_t port() const noexcept;
    // Positions up to `seq` of session index `session` may be answered.
    void publish(std::uint32_t session, std::uint64_t seq) noexcept;
    // The latest session index with a position published, and its highest position (0, 0: none yet).
    [[nodiscard]] std::pair<std::uint32_t, std::uint64_t> latest() const noexcept;
    void stop();
    // Counters (after stop()).
    void add_to(SimTruth& t) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The GLIMPSE spin of session index `session` after positions 1..`last`
// of the store: S (the last system event), R and H of every stock seen,
// A for every open order with its remaining shares (by reference), and
// `M` = last + 1.
[[nodiscard]] GlimpseSpin glimpse_spin(const SimSchedule& s, std::uint32_t session, std::uint64_t last);

// Sends `s` paced on loopback multicast while `server` (made from the same
// schedule) answers, then lingers server_linger_ms and stops it. Throws
// std::runtime_error on socket problems.
SimTruth publish(const SimOptions& o, const SimSchedule& s, RerequestServer& server, GlimpseServer* glimpse = nullptr);
// simulate() and publish() with a server of its own (sets epoch_ns to now).
SimTruth simulate_to_sockets(SimOptions o);
// Both lines' copies as a ns pcap (Ethernet), dst = line group:port, src 127.0.0.1; no server.
SimTruth simulate_to_capture(const SimOptions& o, const std::string& path);

}  // namespace tickgate::itch50
