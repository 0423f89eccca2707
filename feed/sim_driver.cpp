// The simulators' driver: line faults, pacing to loopback multicast, pcap.
#include "tickgate/feed/sim_driver.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "sim_random.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/sender.hpp"

namespace tickgate {

namespace {

bool is_prob(double p) { return p >= 0 && p <= 1; }

// One packet's fault draws, made whatever faults are on (so turning one on
// does not shift the others' numbers), and the lines that carry it.
struct PacketDraws {
    double u[7];  // 0 burst, 1-2 loss on A/B, 3-4 a duplicate and its line, 5-6 a reorder and its line
    bool a = true, b = true;
};

// Loss per packet: a burst of `burst_len` packets lost on both lines starts
// with probability `burst_p`, else each line loses the packet on its own.
class LineLoss {
public:
    PacketDraws next(Rng& rng, bool exempt, double loss_a, double loss_b, double burst_p, std::uint32_t burst_len) noexcept {
        PacketDraws d;
        for (double& x : d.u) x = rng.uniform();
        if (exempt) return d;
        if (burst_left_ > 0) {
            d.a = d.b = false;
            --burst_left_;
        } else if (burst_p > 0 && d.u[0] < burst_p) {
            d.a = d.b = false;
            burst_left_ = burst_len - 1;
        } else {
            d.a = !(d.u[1] < loss_a);
            d.b = !(d.u[2] < loss_b);
        }
        return d;
    }

private:
    std::uint32_t burst_left_ = 0;
};

// Whether `fraction` of the run falls in one of the [from, to) windows (outages).
[[nodiscard]] bool in_window(const std::vector<SimWindow>& ws, double fraction) noexcept {
    for (const auto& w : ws)
        if (fraction >= w.from && fraction < w.to) return true;
    return false;
}

}  // namespace

void SimLineFaults::validate() const {
    const auto fail = [](const std::string& m) { throw std::invalid_argument(m); };
    if (!is_prob(loss_a) || !is_prob(loss_b) || !is_prob(burst_p) || !is_prob(dup) || !is_prob(reorder))
        fail("probabilities must be in [0, 1]");
    if (burst_p > 0 && burst_len < 1) fail("--burst-loss: LEN must be >= 1");
    for (const auto* outages : {&outage_a, &outage_b})
        for (const SimWindow& w : *outages)
            if (!(w.from >= 0 && w.from < w.to && w.to <= 1)) fail("--outage-a/-b: expected FROM:TO with 0 <= FROM < TO <= 1");
}

void SimEndpoint::validate() const {
    // Loopback only: 239.x groups sent through a 127.x interface.
    if (const auto ip = parse_ipv4(group); !ip || (*ip >> 24) != 239)
        throw std::invalid_argument(fmt::format("group '{}' is not a 239.x.x.x multicast address", group));
    if (const auto ip = parse_ipv4(interface); !ip || (*ip >> 24) != 127)
        throw std::invalid_argument(fmt::format(
            "interface '{}' is not a loopback address (127.x.x.x); the simulator only publishes on loopback", interface));
    if (port == 0) throw std::invalid_argument("ports must be 1..65535");
}

void SimLinePair::validate() const {
    a.validate();
    b.validate();
}

// ------------------------------------------------------------------ faults

struct SimFaultStage::Impl {
    SimLineFaults f;
    Rng rng;
    LineLoss loss;
    std::int64_t run_ns;
    SimLineCounts& c;
    // A packet that may be reordered: whether it is waits for the next
    // datagram of feed 0 (never past another session's, an exempt or a late one).
    struct Pending {
        SimDatagram d;
        int copies_a, copies_b;
        bool defer_a, defer_b;
    };
    std::optional<Pending> pending;
    // The copies held back on one line: they go out after the next packet's.
    struct Deferred {
        SimCopy copy;
        int copies;
    };
    std::optional<Deferred> deferred;

    Impl(const SimLineFaults& faults, std::uint64_t seed, std::int64_t run, SimLineCounts& counts)
        : f(faults), rng(seed), run_ns(std::max<std::int64_t>(run, 1)), c(counts) {}

    void emit(const SimDatagram& d, bool a, bool b, std::deque<SimCopy>& out) {
        if (!a && !b) return;
        out.push_back({d.bytes, d.time_ns, d.feed, a, b, d.guard_ns, d.guarded, d.tag});
        c.sent_a += a;
        c.sent_b += b;
    }
    void emit_copies(const SimDatagram& d, int copies_a, int copies_b, bool defer_a, bool defer_b,
                     std::deque<SimCopy>& out) {
        emit(d, copies_a >= 1 && !defer_a, copies_b >= 1 && !defer_b, out);
        emit(d, copies_a == 2 && !defer_a, copies_b == 2 && !defer_b, out);
    }
    // Decides the pending packet: reordered (`reorder`) or sent whole now.
    void settle(bool reorder, std::deque<SimCopy>& out) {
        Pending p = std::move(*pending);
        pending.reset();
        if (!reorder) p.defer_a = p.defer_b = false;
        c.reordered_a += p.defer_a;
        c.reordered_b += p.defer_b;
        emit_copies(p.d, p.copies_a, p.copies_b, p.defer_a, p.defer_b, out);
        if (p.defer_a || p.defer_b)
            deferred = Deferred{SimCopy{std::move(p.d.bytes), p.d.time_ns, p.d.feed, p.defer_a, p.defer_b, p.d.guard_ns,
                                        p.d.guarded, p.d.tag},
                                p.defer_a ? p.copies_a : p.copies_b};
    }
    void release(std::int64_t t, std::deque<SimCopy>& out) {
        if (!deferred) return;
        deferred->copy.time_ns = t;
        for (int k = 0; k < deferred->copies; ++k) {
            out.push_back(deferred->copy);
            c.sent_a += deferred->copy.line_a;
            c.sent_b += deferred->copy.line_b;
        }
        deferred.reset();
    }

    bool push(SimDatagram d, std::deque<SimCopy>& out) {
        if (d.feed != 0) {
            if (pending) settle(true, out);
            out.push_back({std::move(d.bytes), d.time_ns, d.feed, true, true, d.guard_ns, d.guarded, d.tag});
            return true;
        }
        if (pending) settle(d.session == pending->d.session && !d.exempt && !d.late, out);
        if (d.late) {
            emit(d, false, true, out);
            ++c.late_old_session;
            return true;
        }
        ++c.packets;
        const PacketDraws draws = loss.next(rng, d.exempt, f.loss_a, f.loss_b, f.burst_p, f.burst_len);
        const double* u = draws.u;
        bool a = draws.a, b = draws.b;
        if (!d.exempt) {
            const double fraction = static_cast<double>(d.time_ns) / static_cast<double>(run_ns);
            a = a && !in_window(f.outage_a, fraction);
            b = b && !in_window(f.outage_b, fraction);
        }
        c.dropped_a += !a;
        c.dropped_b += !b;
        c.dropped_both += !a && !b;

        int copies_a = a, copies_b = b;
        if (!d.exempt && u[3] < f.dup) {
            if (u[4] < 0.5 && a) copies_a = 2, ++c.duplicated_a;
            if (u[4] >= 0.5 && b) copies_b = 2, ++c.duplicated_b;
        }
        if (!d.exempt && !deferred && u[5] < f.reorder) {
            const bool defer_a = u[6] < 0.5 && a, defer_b = u[6] >= 0.5 && b;
            if (defer_a || defer_b) {
                pending = Pending{std::move(d), copies_a, copies_b, defer_a, defer_b};
                return a || b;
            }
        }
        emit_copies(d, copies_a, copies_b, false, false, out);
        release(d.time_ns, out);
        return a || b;
    }
};

SimFaultStage::SimFaultStage(const SimLineFaults& faults, std::uint64_t seed, std::int64_t run_ns, SimLineCounts& counts)
    : impl_(std::make_unique<Impl>(faults, seed, run_ns, counts)) {}

SimFaultStage::~SimFaultStage() = default;

bool SimFaultStage::push(SimDatagram d, std::deque<SimCopy>& out) { return impl_->push(std::move(d), out); }

void SimFaultStage::finish(std::deque<SimCopy>& out) {
    if (impl_->pending) impl_->settle(false, out);
    if (impl_->deferred) impl_->release(impl_->deferred->copy.time_ns, out);
}

// ------------------------------------------------------------------ output

SimSendReport send_paced(const std::vector<SimLinePair>& lines, const SimSource& next,
                         const std::function<void(const SimCopy&)>& on_send) {
    // One sender per line; MulticastSender refuses a non-127.x interface and sets TTL 0.
    struct Out {
        std::unique_ptr<MulticastSender> sender;
        std::uint32_t group;
        std::uint16_t port;
    };
    std::vector<Out> outs;  // [feed * 2 + line]
    for (const SimLinePair& pair : lines)
        for (const SimEndpoint* l : {&pair.a, &pair.b}) {
            l->validate();  // loopback only, whatever the caller checked
            outs.push_back({std::make_unique<MulticastSender>(l->interface), *parse_ipv4(l->group), l->port});
        }
    using Clock = std::chrono::steady_clock;
    Clock::time_point guarded_from{};
    SendSchedule schedule;
    SimSendReport report;
    SimCopy p;
    while (next(p)) {
        schedule.wait_until(p.time_ns);
        // A guard holds in real time too: a late sender catching up must not squeeze it.
        if (p.guarded)
            while (Clock::now() < guarded_from) std::this_thread::sleep_for(std::chrono::microseconds(50));
        const std::size_t at = std::size_t{p.feed} * 2;
        if (at + 1 >= outs.size()) throw std::logic_error("simulator copy of an unknown feed");
        if (on_send) on_send(p);
        // The bytes are the packet's as built: every copy of it (lines A
        // and B, a duplicate, one held back) is byte-identical, as a venue's are.
        if (p.line_a && !outs[at].sender->send(outs[at].group, outs[at].port, p.bytes)) ++report.errors;
        if (p.line_b && !outs[at + 1].sender->send(outs[at + 1].group, outs[at + 1].port, p.bytes)) ++report.errors;
        if (p.guard_ns > 0) guarded_from = Clock::now() + std::chrono::nanoseconds(p.guard_ns);
    }
    report.max_late_ns = schedule.max_late_ns();
    return report;
}

void write_pcap(const std::string& path, std::int64_t epoch_ns, const std::vector<SimLinePair>& lines,
                const SimSource& next) {
    const std::uint32_t src = 0x7F000001;  // 127.0.0.1
    CaptureWriter w(path, CaptureFormat::kPcapNano, LinkType::kEthernet);
    SimCopy p;
    while (next(p)) {
        if (p.feed >= lines.size()) throw std::logic_error("simulator copy of an unknown feed");
        const SimLinePair& l = lines[p.feed];
        const std::int64_t ts = epoch_ns + p.time_ns;
        if (p.line_a) w.write_udp(ts, src, 40001, *parse_ipv4(l.a.group), l.a.port, p.bytes);
        if (p.line_b) w.write_udp(ts, src, 40002, *parse_ipv4(l.b.group), l.b.port, p.bytes);
    }
    w.flush();
}

}  // namespace tickgate
