// Venue simulator (`tickgate sim`): a deterministic QFB/1 publisher for one
// channel (lines A and B) with injectable faults, and the ground truth a
// conforming handler must reproduce. The generator is pure (no clock, no
// sockets); the shared driver (sim_driver.hpp) applies the line faults and
// sends it on loopback multicast or writes a capture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/sim_driver.hpp"

namespace tickgate {

// The line faults (loss_a/b, burst_p/len, dup, reorder, outage_a/b) are
// the driver's (sim_driver.hpp).
struct SimOptions : SimLineFaults {
    std::uint32_t instruments = 8;      // ids 1..N, symbols SIM001..
    double rate = 20000;                // ticks (Q/D) per second
    double duration_s = 5;              // used when messages == 0
    std::uint64_t messages = 0;         // total ticks; 0 = rate * duration
    std::uint32_t batch = 8;            // ticks per packet (1..28: 28 quotes fill 1400 bytes)
    std::uint32_t heartbeat_ms = 100;
    std::uint32_t snapshot_ms = 200;
    std::uint32_t definition_ms = 1000;
    std::uint64_t seed = 1;
    std::uint32_t session = 1;          // first session number
    std::int64_t epoch_ns = 1'704'067'200'000'000'000;  // Unix ns of schedule time 0 (2024-01-01)

    std::uint16_t channel = 1;
    std::string group_a = "239.255.10.1";
    std::uint16_t port_a = 31001;
    std::string group_b = "239.255.10.2";
    std::uint16_t port_b = 31002;
    std::string interface_a = "127.0.0.1";
    std::string interface_b = "127.0.0.1";

    // Faults beyond the lines' (all off by default).
    std::optional<double> restart_at;   // fraction of the run: new session, seqs restart at 1
    bool lagging_snapshots = false;     // snapshots lag the deltas by 1..3 messages
    std::vector<std::uint32_t> quiet;   // stop ticking halfway, keep heartbeats
    std::vector<std::uint32_t> silence; // stop everything halfway
    // Overload: between fractions `from` and `to` of the ticks, the rate is
    // multiplied by `factor`.
    struct Surge {
        double from, to, factor;
    };
    std::optional<Surge> surge;

    // Throws std::invalid_argument naming the bad option.
    void validate() const;
    // Lines A and B as the driver takes them.
    [[nodiscard]] SimLinePair lines() const;
};

// One datagram copy to send, in send order (feed 0: lines A and B).
using SimPacket = SimCopy;

using SimLevel = PacketBuilder::SnapLevel;  // raw price, qty

struct InstrumentTruth {
    std::uint32_t id = 0;
    std::string symbol;
    bool delta = false;                 // kind "delta" (D + S) or "quote" (Q)
    bool quiet = false, silenced = false;
    std::uint64_t messages = 0;         // sequenced messages sent, all sessions
    std::uint64_t last_seq = 0;         // in the final session
    std::uint64_t dropped_both = 0;     // sequenced messages lost on both lines
    std::uint64_t expected_lost = 0;    // what a conforming handler counts as lost (see simulator.cpp)
    std::vector<SimLevel> bids, asks;   // publisher's final book, best first
};

// The line counts (packets, sent_a, ... late_old_session) are the driver's.
struct GroundTruth : SimLineCounts {
    std::string protocol = "qfb1";      // the simulated venue protocol ("mdp3": feed/mdp3/simulator.hpp)
    SimOptions options;
    std::uint32_t final_session = 0;
    bool exact_lost = true;             // false with reordering (the model assumes order)
    std::int64_t duration_ns = 0;       // scheduled time of the last packet
    std::uint64_t snapshot_packets = 0, definition_packets = 0;  // MDP3: datagrams of those feeds (per line)
    std::uint64_t messages = 0, sequenced = 0;
    std::string output;                 // "sockets", "pcap:FILE" or "" (run_simulator)
    // Socket sink only.
    std::uint64_t send_errors = 0;
    std::int64_t max_late_ns = 0;       // worst lateness against the schedule
    std::vector<InstrumentTruth> instruments;

    [[nodiscard]] std::string to_json() const;
};

// The deterministic packet schedule. Not thread-safe.
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

using SimSink = std::function<void(SimPacket&)>;

// Runs `sim` to the end through `sink` (called with each SimCopy&); returns
// its ground truth (QFB/1's and MDP3's run_simulator).
template <class Sim, class Sink>
[[nodiscard]] GroundTruth run_to_end(Sim& sim, const Sink& sink) {
    SimCopy p;
    while (sim.next(p)) sink(p);
    return sim.truth();
}

// Publishes `sim`'s copies to the end, to `pcap` (no pacing) or else paced
// on `lines` (the driver's output), and returns its ground truth with the
// output fields filled: QFB/1's and MDP3's simulate_to_sockets/_capture.
template <class Sim>
[[nodiscard]] GroundTruth drive_simulator(Sim& sim, const std::vector<SimLinePair>& lines, std::int64_t epoch_ns,
                                          const std::string* pcap) {
    const SimSource next = [&](SimCopy& c) { return sim.next(c); };
    if (pcap) {
        write_pcap(*pcap, epoch_ns, lines, next);
        GroundTruth gt = sim.truth();
        gt.output = "pcap:" + *pcap;
        return gt;
    }
    const SimSendReport r = send_paced(lines, next);
    GroundTruth gt = sim.truth();
    gt.output = "sockets";
    gt.send_errors = r.errors;
    gt.max_late_ns = r.max_late_ns;
    return gt;
}

// Runs the generator to the end through `sink`; returns the ground truth.
GroundTruth run_simulator(const SimOptions& options, const SimSink& sink);
// Paced publishing on loopback multicast (sets epoch_ns to now). Throws
// std::runtime_error on socket problems or a non-loopback interface.
GroundTruth simulate_to_sockets(SimOptions options);
// Both lines' copies as a ns pcap (Ethernet), dst = line group:port, src 127.0.0.1.
GroundTruth simulate_to_capture(const SimOptions& options, const std::string& path);

}  // namespace tickgate
