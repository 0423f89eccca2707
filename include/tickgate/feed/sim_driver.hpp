// The simulators' driver, shared by every protocol's venue simulator: a
// protocol's generator makes datagrams (schedule time, bytes, which feed of
// the channel, whether faults may touch it); the driver applies the line
// faults of the channel's faulted feed (loss per line, bursts on both,
// outages, duplicates, reordering, a restart's late packet), then paces the
// copies to loopback multicast or writes them to a pcap. The generator
// learns from push() whether a line carried each datagram: its ground-truth
// model (what a conforming handler counts) needs nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tickgate/bytes.hpp"

namespace tickgate {

// A fraction of the run [from, to): a line outage's window.
struct SimWindow {
    double from, to;
};

// The faults of the faulted feed's lines A and B (all off by default).
struct SimLineFaults {
    double loss_a = 0, loss_b = 0;      // per packet, per line, independent
    double burst_p = 0;                 // start of a burst lost on both lines, per packet
    std::uint32_t burst_len = 0;
    double dup = 0;                     // one line sends the packet twice
    double reorder = 0;                 // one line sends the packet after the next one
    std::vector<SimWindow> outage_a, outage_b;  // the line carries nothing then (a dead switch port)

    // Throws std::invalid_argument naming the bad option.
    void validate() const;
};

// One line a simulator publishes on: a 239.x group through a 127.x interface.
struct SimEndpoint {
    std::string group;
    std::uint16_t port = 0;
    std::string interface = "127.0.0.1";

    // Throws std::invalid_argument unless group is 239.x, interface 127.x, port > 0.
    void validate() const;
};
// A feed's two lines; a simulator's feeds are indexed from 0 (the faulted one).
struct SimLinePair {
    SimEndpoint a, b;

    void validate() const;  // both lines' SimEndpoint::validate()
};

// What the driver counts of the faulted feed (feed 0) and its lines.
struct SimLineCounts {
    std::uint64_t packets = 0;          // distinct datagrams (a late copy is not one)
    std::uint64_t sent_a = 0, sent_b = 0;        // copies put on each line (duplicates included)
    std::uint64_t dropped_a = 0, dropped_b = 0;  // datagrams a line did not carry
    std::uint64_t dropped_both = 0;
    std::uint64_t duplicated_a = 0, duplicated_b = 0, reordered_a = 0, reordered_b = 0;
    std::uint64_t late_old_session = 0;
};

// One datagram as a generator makes it.
struct SimDatagram {
    Bytes bytes;
    std::int64_t time_ns = 0;           // schedule time after time 0
    std::uint8_t feed = 0;              // feed 0 is faulted; the others go on both lines untouched
    std::uint32_t session = 0;          // a copy is never held back past another session's packet
    bool exempt = false;                // feed 0: never lost, duplicated or reordered (its draws are made)
    bool late = false;                  // feed 0: line B only, no draws (an old session's packet after a restart)
    std::int64_t guard_ns = 0;          // socket output: `guarded` copies wait this long after this one went out
    bool guarded = false;
    std::uint32_t tag = 0;              // the generator's own reference, carried to the copies
};

// One copy to send, in send order, with the lines of its feed that carry it.
struct SimCopy {
    Bytes bytes;
    std::int64_t time_ns = 0;
    std::uint8_t feed = 0;
    bool line_a = false;
    bool line_b = false;
    std::int64_t guard_ns = 0;
    bool guarded = false;
    std::uint32_t tag = 0;
};

// The fault stage. Every datagram of feed 0 that is not late draws seven
// numbers whatever faults are on (so turning one on does not shift the
// others'), from an Rng seeded by `seed`. Not thread-safe.
class SimFaultStage {
public:
    // `run_ns`: the schedule time outage windows are fractions of (>= 1).
    SimFaultStage(const SimLineFaults& faults, std::uint64_t seed, std::int64_t run_ns, SimLineCounts& counts);
    ~SimFaultStage();
    SimFaultStage(const SimFaultStage&) = delete;
    SimFaultStage& operator=(const SimFaultStage&) = delete;

    // Appends `d`'s copies to `out` in send order (a copy may wait for the
    // next datagram of feed 0); returns whether a line carries it.
    bool push(SimDatagram d, std::deque<SimCopy>& out);
    // At the end of the run: what is still held back.
    void finish(std::deque<SimCopy>& out);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The next copy in send order; false when the run is over.
using SimSource = std::function<bool(SimCopy&)>;

struct SimSendReport {
    std::uint64_t errors = 0;           // datagrams the kernel refused
    std::int64_t max_late_ns = 0;       // worst lateness against the schedule
};

// Paced publishing: each copy at its schedule time after the call, on
// `lines[copy.feed]`, loopback only (MulticastSender: 127.x interface, TTL
// 0, loop on). `on_send` (optional) runs when a copy is due, before it
// goes out. Throws std::runtime_error on socket set-up problems.
SimSendReport send_paced(const std::vector<SimLinePair>& lines, const SimSource& next,
                         const std::function<void(const SimCopy&)>& on_send = {});
// Every copy to a ns pcap (Ethernet) at epoch_ns + its time, dst = its
// line's group:port, src 127.0.0.1 (port 40001 on line A, 40002 on B).
void write_pcap(const std::string& path, std::int64_t epoch_ns, const std::vector<SimLinePair>& lines,
                const SimSource& next);

}  // namespace tickgate
