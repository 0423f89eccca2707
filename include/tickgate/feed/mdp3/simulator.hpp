// CME MDP 3.0 venue simulator (`tickgate sim --protocol mdp3`): one
// CME-like channel — instrument definitions looping on the definition
// lines, incremental lines A/B carrying MBP-10 book updates (New, Change,
// Delete, DeleteFrom, DeleteThru), trade summaries, daily statistics and
// heartbeats, and a snapshot loop (every instrument's current book and
// RptSeq) on the snapshot lines — with QFB/1's simulator's faults on the
// incremental lines, and the ground truth a conforming handler must
// reproduce. Deterministic from the seed; the generator is pure (no clock,
// no socket); the shared driver (sim_driver.hpp) applies the incremental
// lines' faults and sends it on loopback multicast or writes a capture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/qfb1/simulator.hpp"

namespace tickgate::mdp3 {

using SimLine = SimEndpoint;

struct SimOptions {
    // The channel, its incremental lines A/B, the traffic and the faults, as
    // QFB/1's simulator reads them, with these meanings: `instruments`
    // SecurityIDs 100001.., symbols SIM001..; `rate` sequenced entries per
    // second; `messages` entries (0: rate × duration); `batch` entries per
    // incremental packet (1..28); `snapshot_ms` one cycle of the snapshot
    // loop over every instrument; `definition_ms` one cycle of the
    // definition loop. Loss, bursts, outages, duplicates, reordering and the
    // restart (MsgSeqNum back to 1) act on the incremental lines only.
    // `session`, `lagging_snapshots`, `quiet`, `silence` and `surge` are
    // QFB/1's: validate() refuses them.
    tickgate::SimOptions feed = defaults();
    SimLine snapshot_a{"239.255.20.3", 14311}, snapshot_b{"239.255.20.4", 15311};
    SimLine definition_a{"239.255.20.5", 14312}, definition_b{"239.255.20.6", 15312};
    // Snapshot cycles sent after the last incremental packet (heartbeats go
    // on meanwhile), so that a handler can repair what the end lost.
    std::uint32_t tail_cycles = 2;

    // The defaults of `feed` for MDP3: configs/mdp3-demo.toml's channel 310
    // and lines, 30 instruments, 4,000 entries/s, 8 per packet.
    [[nodiscard]] static tickgate::SimOptions defaults();
    // Throws std::invalid_argument naming the bad option.
    void validate() const;
    // Publishes `ch`'s lines (a config's MDP3 channel): its id, incremental,
    // snapshot and definition lines. Throws std::invalid_argument if it has
    // no snapshot or no definition lines.
    void use_channel(const ChannelConfig& ch);
    // The driver's feeds: [SimFeed] = its lines A and B.
    [[nodiscard]] std::vector<SimLinePair> lines() const;
};

// Which feed a datagram belongs to (SimCopy::feed; the faulted one first).
enum class SimFeed : std::uint8_t { kIncremental, kSnapshot, kDefinition };

// One datagram copy to send, in send order. An incremental packet carrying
// the entries that reveal a loss on both lines has guard_ns =
// kRevealGuardNs: no snapshot (guarded) follows it sooner, in real time too
// (a late sender catching up must not squeeze the gap; see simulator.cpp).
using SimPacket = SimCopy;

// Longer than the A/B hold (receiver.arbitration_hold_us, 250 µs by default)
// during which the packet after a hole waits for the other line.
inline constexpr std::int64_t kRevealGuardNs = 2'000'000;

// The packet schedule and its ground truth (tickgate::GroundTruth with
// protocol "mdp3": per instrument `id` = SecurityID, `last_seq` = its last
// RptSeq, `dropped_both` the entries lost on both lines, `expected_lost`
// what a conforming handler counts, and the final book). Not thread-safe.
class Simulator {
public:
    explicit Simulator(const SimOptions& options);  // validates
    ~Simulator();
    Simulator(const Simulator&) = delete;
    Simulator& operator=(const Simulator&) = delete;

    // Next datagram copy in send order; false when the run is over.
    bool next(SimPacket& out);
    // Complete once next() returned false.
    [[nodiscard]] const GroundTruth& truth() const noexcept { return truth_; }

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    GroundTruth truth_;
};

// Runs the generator to the end through `sink`; returns the ground truth.
GroundTruth run_simulator(const SimOptions& options, const std::function<void(SimPacket&)>& sink);
// Paced publishing on loopback multicast (sets feed.epoch_ns to now).
// Throws std::runtime_error on socket problems or a non-loopback interface.
GroundTruth simulate_to_sockets(SimOptions options);
// Every line's copies as a ns pcap (Ethernet), dst = the line's group:port, src 127.0.0.1.
GroundTruth simulate_to_capture(const SimOptions& options, const std::string& path);

}  // namespace tickgate::mdp3
