// Venue simulator: the deterministic QFB/1 schedule and the handler model
// that yields expected_lost; the shared driver applies the line faults and
// sends or writes it.
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/qfb1/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>

#include "../json_writer.hpp"
#include "../sim_random.hpp"
#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/qfb1/wire.hpp"

namespace tickgate {

namespace {

constexpr std::int64_t kTick = 1000;          // price increment: 1e-5 at exponent -8
constexpr std::size_t kDepth = 5;             // max levels per side of a delta book
constexpr std::size_t kMinDepth = 2;
constexpr std::size_t kLagHistory = 3;        // lagging snapshots: up to 3 deltas behind
constexpr std::int8_t kExponent = -8;
constexpr std::uint32_t kMaxBatch = (qfb1::kMaxDatagram - qfb1::kPacketHeaderSize) / qfb1::kQuoteSize;

struct MsgRef {
    char type;
    std::uint32_t id;
    std::uint64_t seq;  // Q/D/S: seq, H: next_seq
};

// A datagram for the driver and the messages the model reads of it.
struct RawPacket {
    SimDatagram d;
    std::vector<MsgRef> msgs;
};

}  // namespace

void SimOptions::validate() const {
    auto fail = [](const std::string& m) { throw std::invalid_argument(m); };
    if (instruments < 1 || instruments > 65535) fail("--instruments: expected 1..65535");
    if (!(rate > 0 && rate <= 1e8)) fail("--rate: expected a rate in (0, 1e8] messages/s");
    if (messages == 0 && !(duration_s > 0 && duration_s <= 86400)) fail("--duration: expected (0, 86400] seconds");
    if (batch < 1 || batch > kMaxBatch) fail(fmt::format("--batch: expected 1..{}", kMaxBatch));
    if (heartbeat_ms < 1 || snapshot_ms < 1 || definition_ms < 1) fail("timer periods must be >= 1 ms");
    SimLineFaults::validate();
    if (surge && !(surge->from >= 0 && surge->from < surge->to && surge->to <= 1 && surge->factor >= 1))
        fail("--surge: expected FROM:TO:FACTOR with 0 <= FROM < TO <= 1 and FACTOR >= 1");
    if (restart_at && !(*restart_at > 0 && *restart_at < 1)) fail("--restart-at: expected a fraction in (0, 1)");
    for (const auto* ids : {&quiet, &silence})
        for (const auto id : *ids)
            if (id < 1 || id > instruments) fail(fmt::format("instrument {} is not in 1..{}", id, instruments));
    lines().validate();
}

SimLinePair SimOptions::lines() const { return {{group_a, port_a, interface_a}, {group_b, port_b, interface_b}}; }

// ------------------------------------------------------------------ generator

struct Simulator::Impl {
    struct Past {
        std::uint64_t seq;
        std::int64_t src;
        std::vector<SimLevel> bids, asks;
    };
    struct Instr {
        InstrumentTruth* truth;
        std::uint64_t seq = 0;  // last seq sent in this session
        std::int64_t src = 0;   // source time of the last tick
        std::deque<Past> history;  // states before the last deltas (lagging snapshots)
        std::uint32_t deltas_since_snapshot = 0;
        bool known = false;     // model of the handler: last_seq meaningful
        std::uint64_t last_seq = 0;
    };

    const SimOptions o;
    GroundTruth& truth;
    Rng content;
    std::vector<Instr> ins;  // [id - 1]
    std::vector<std::uint32_t> ticking;  // indices that may tick now
    std::uint64_t total_ticks, ticks_done = 0, slot = 0, nslots;
    std::uint64_t restart_slot = 0;  // 0: none
    std::int64_t half_ns, next_def, next_hb, next_snap;
    bool past_half = false, done = false, finished = false;

    // Packing.
    std::uint32_t session;
    std::uint64_t packet_seq = 0;
    std::int64_t now = 0;
    std::optional<PacketBuilder> pb;
    RawPacket cur;
    SimDatagram last_closed;
    bool exempt_next = false, exempt_all = false;
    std::optional<SimDatagram> pending_late;

    // Faults and output (the driver's).
    std::optional<SimFaultStage> faults;
    std::deque<SimCopy> out;
    std::uint32_t model_session = 0;

    Impl(const SimOptions& opt, GroundTruth& gt) : o(opt), truth(gt), content(opt.seed), session(opt.session) {
        total_ticks = o.messages ? o.messages : static_cast<std::uint64_t>(std::llround(o.rate * o.duration_s));
        total_ticks = std::max<std::uint64_t>(total_ticks, 1);
        nslots = (total_ticks + o.batch - 1) / o.batch;
        half_ns = slot_time(nslots) / 2;
        if (o.restart_at)
            restart_slot = std::clamp<std::uint64_t>(static_cast<std::uint64_t>(*o.restart_at * double(nslots)), 1,
                                                     std::max<std::uint64_t>(nslots - 1, 1));
        next_def = std::int64_t{o.definition_ms} * 1'000'000;
        next_hb = std::int64_t{o.heartbeat_ms} * 1'000'000;
        next_snap = std::int64_t{o.snapshot_ms} * 1'000'000;
        faults.emplace(o, o.seed ^ 0xFA017ED5EEDULL, 2 * half_ns, truth);

        truth.options = o;
        truth.exact_lost = o.reorder == 0;
        truth.instruments.resize(o.instruments);
        ins.resize(o.instruments);
        for (std::uint32_t i = 0; i < o.instruments; ++i) {
            InstrumentTruth& t = truth.instruments[i];
            t.id = i + 1;
            t.symbol = fmt::format("SIM{:03}", t.id);
            t.delta = (t.id % 2) == 0;  // odd ids quote, even ids depth
            t.quiet = std::find(o.quiet.begin(), o.quiet.end(), t.id) != o.quiet.end();
            t.silenced = std::find(o.silence.begin(), o.silence.end(), t.id) != o.silence.end();
            const std::int64_t base = 100'000'000 + std::int64_t{t.id % 1000} * 1'000'000;  // 1.00 + 0.01 * id
            if (t.delta) {
                for (std::size_t k = 1; k <= kDepth; ++k) {
                    t.bids.push_back({base - std::int64_t(k) * kTick, qty()});
                    t.asks.push_back({base + std::int64_t(k) * kTick, qty()});
                }
            } else {
                t.bids = {{base - kTick, qty()}};
                t.asks = {{base + kTick, qty()}};
            }
            ins[i].truth = &t;
            ins[i].src = o.epoch_ns;
        }
        update_ticking();
    }

    // Schedule time of packet slot k: `rate`, times `surge.factor` inside the surge window.
    std::int64_t slot_time(std::uint64_t k) const {
        const double per_slot = o.batch * 1e9 / o.rate;
        double in_surge = 0;
        if (o.surge) {
            const double a = o.surge->from * double(nslots), b = o.surge->to * double(nslots);
            in_surge = std::clamp(double(k), a, b) - a;
        }
        return static_cast<std::int64_t>(
            std::llround((double(k) - in_surge) * per_slot + in_surge * per_slot / (o.surge ? o.surge->factor : 1.0)));
    }
    std::uint32_t qty() { return static_cast<std::uint32_t>(1 + content.below(100)) * 100; }
    bool active(const Instr& in) const { return !(past_half && in.truth->silenced); }
    bool ticks(const Instr& in) const { return !(past_half && (in.truth->silenced || in.truth->quiet)); }
    void update_ticking() {
        ticking.clear();
        for (std::uint32_t i = 0; i < ins.size(); ++i)
            if (ticks(ins[i])) ticking.push_back(i);
    }

    // ---- packing
    PacketBuilder& room(std::size_t n, char type, std::uint32_t id, std::uint64_t seq) {
        if (pb && pb->size() + n > qfb1::kMaxDatagram) close();
        if (!pb) {
            pb.emplace(o.channel, session, ++packet_seq, o.epoch_ns + now);
            cur = RawPacket{};
            cur.d.time_ns = now;
            cur.d.session = session;
            cur.d.exempt = exempt_next || exempt_all;
            exempt_next = false;
        }
        cur.msgs.push_back({type, id, seq});
        ++truth.messages;
        if (type == 'Q' || type == 'D') ++truth.sequenced;
        return *pb;
    }
    void close() {
        if (!pb) return;
        cur.d.bytes.assign(pb->bytes().begin(), pb->bytes().end());
        pb.reset();
        last_closed = cur.d;
        const bool exempt = cur.d.exempt;
        model(cur, faults->push(std::move(cur.d), out));
        if (pending_late && exempt) {  // right after the first packet of the new session
            (void)faults->push(std::move(*pending_late), out);
            pending_late.reset();
        }
    }

    // ---- messages
    void definition(Instr& in) { room(qfb1::kDefinitionSize, 'I', in.truth->id, 0).definition(in.truth->id, in.truth->symbol, kExponent); }
    void heartbeat(Instr& in) {
        room(qfb1::kHeartbeatSize, 'H', in.truth->id, in.seq + 1).heartbeat(in.truth->id, in.seq + 1, o.epoch_ns + now);
    }
    void quote(Instr& in) {
        const InstrumentTruth& t = *in.truth;
        ++in.seq;
        ++in.truth->messages;
        in.src = o.epoch_ns + now;
        room(qfb1::kQuoteSize, 'Q', t.id, in.seq)
            .quote(t.id, in.seq, in.src, t.bids[0].price, t.bids[0].qty, t.asks[0].price, t.asks[0].qty);
    }
    void snapshot(Instr& in) {
        const InstrumentTruth& t = *in.truth;
        std::uint64_t seq = in.seq;
        std::int64_t src = in.src;
        std::span<const SimLevel> bids = t.bids, asks = t.asks;
        if (o.lagging_snapshots) {
            const std::size_t lag = std::min<std::size_t>({1 + content.below(kLagHistory), in.deltas_since_snapshot,
                                                           in.history.size()});
            if (lag > 0) {
                const Past& p = in.history[in.history.size() - lag];
                seq = p.seq, src = p.src, bids = p.bids, asks = p.asks;
            }
        }
        in.deltas_since_snapshot = 0;
        room(qfb1::kSnapshotHeaderSize + qfb1::kSnapshotLevelSize * (bids.size() + asks.size()), 'S', t.id, seq)
            .snapshot(t.id, seq, src, bids, asks);
    }
    void tick(Instr& in) {
        InstrumentTruth& t = *in.truth;
        if (!t.delta) {
            const std::int64_t bid = std::max<std::int64_t>(t.bids[0].price + (std::int64_t(content.below(5)) - 2) * kTick, 10 * kTick);
            const std::int64_t ask = bid + std::int64_t(1 + content.below(3)) * kTick;
            t.bids[0] = {bid, qty()};
            t.asks[0] = {ask, qty()};
            quote(in);
            return;
        }
        if (o.lagging_snapshots) {
            in.history.push_back({in.seq, in.src, t.bids, t.asks});
            if (in.history.size() > kLagHistory) in.history.pop_front();
        }
        const std::uint8_t side = static_cast<std::uint8_t>(content.below(2));
        auto& lv = side == 0 ? t.bids : t.asks;
        const auto& other = side == 0 ? t.asks : t.bids;
        const std::int64_t better = side == 0 ? kTick : -kTick;  // price step towards the top
        const double r = content.uniform();
        std::uint8_t action = 0;
        SimLevel level{};
        if (r >= 0.5 && r < 0.75 && lv.size() < kDepth) {  // insert: improve the top if there is room
            std::int64_t px = lv.front().price + better;
            if (side == 0 ? px >= other.front().price : px <= other.front().price) px = lv.back().price - better;
            level = {px, qty()};
            const auto pos = std::find_if(lv.begin(), lv.end(), [&](const SimLevel& l) {
                return side == 0 ? l.price < px : l.price > px;
            });
            lv.insert(pos, level);
        } else if (r >= 0.75 && lv.size() > kMinDepth) {  // delete the top or the bottom
            const auto it = content.below(2) ? lv.begin() : lv.end() - 1;
            level = {it->price, 0};
            lv.erase(it);
            action = 1;
        } else {  // change the quantity of a level
            SimLevel& l = lv[content.below(lv.size())];
            l.qty = qty();
            level = l;
        }
        ++in.seq;
        ++t.messages;
        ++in.deltas_since_snapshot;
        in.src = o.epoch_ns + now;
        room(qfb1::kDeltaSize, 'D', t.id, in.seq).delta(t.id, in.seq, in.src, level.price, level.qty, side, action);
    }

    // Definitions, then the whole state: snapshots (seq 0) and quotes.
    void session_start() {
        for (auto& in : ins)
            if (active(in)) definition(in);
        for (auto& in : ins) {
            if (in.truth->delta && active(in)) snapshot(in);
            if (!in.truth->delta && ticks(in)) quote(in);
        }
    }

    void restart() {
        pending_late = last_closed;  // keeps its old send_time_ns: it was sent then, arrives now
        pending_late->time_ns = now;
        pending_late->late = true;
        pending_late->exempt = true;
        ++session;
        packet_seq = 0;
        for (auto& in : ins) {
            in.seq = 0;
            in.history.clear();
            in.deltas_since_snapshot = 0;
        }
        exempt_next = true;
        session_start();
    }

    void gen_slot() {
        now = slot_time(slot);
        if (!past_half && now >= half_ns) {
            past_half = true;
            update_ticking();
        }
        if (slot == 0) session_start();
        if (restart_slot && slot == restart_slot) restart();
        if (now >= next_def) {
            for (auto& in : ins)
                if (active(in)) definition(in);
            while (next_def <= now) next_def += std::int64_t{o.definition_ms} * 1'000'000;
        }
        if (now >= next_hb) {
            for (auto& in : ins)
                if (active(in)) heartbeat(in);
            while (next_hb <= now) next_hb += std::int64_t{o.heartbeat_ms} * 1'000'000;
        }
        if (now >= next_snap) {
            for (auto& in : ins)
                if (in.truth->delta && active(in)) snapshot(in);
            while (next_snap <= now) next_snap += std::int64_t{o.snapshot_ms} * 1'000'000;
        }
        const std::uint64_t n = std::min<std::uint64_t>(o.batch, total_ticks - ticks_done);
        for (std::uint64_t k = 0; k < n && !ticking.empty(); ++k) tick(ins[ticking[content.below(ticking.size())]]);
        ticks_done += n;
        close();
        pending_late.reset();  // no packet of the new session: no late packet either
        if (++slot < nslots) return;
        // Final round: heartbeats for every instrument still alive, never lost.
        now = slot_time(nslots);
        exempt_all = true;
        for (auto& in : ins)
            if (active(in)) heartbeat(in);
        close();
        done = true;
    }

    // ---- the handler model, applied to packets in generation order (exact unless reordered).
    // Per instrument: `last_seq` = highest seq the handler has been told about
    // (Q/D seq, H next_seq - 1, S seq). A delivered Q, D or H beyond
    // last_seq + 1 counts the hole as lost; a snapshot moves last_seq up without
    // counting (it contains those messages) and never moves it down (an older
    // snapshot is stale, or leaves the handler's last_seq where it was). Nothing
    // is counted before the first delivered message of a session (cold start).
    // This refines "pending since the last delivered information": a lagging
    // snapshot contains only the drops up to its own seq, and drops before the
    // first delivery are never counted.
    void model(const RawPacket& p, bool delivered) {
        if (!delivered) {
            for (const MsgRef& m : p.msgs)
                if (m.type == 'Q' || m.type == 'D') ++ins[m.id - 1].truth->dropped_both;
            return;
        }
        if (p.d.session > model_session) {  // a session change resets every instrument
            for (auto& in : ins) in.known = false, in.last_seq = 0;
            model_session = p.d.session;
        }
        for (const MsgRef& m : p.msgs) {
            Instr& in = ins[m.id - 1];
            switch (m.type) {
                case 'Q':
                case 'D':
                    if (in.known && m.seq > in.last_seq + 1) in.truth->expected_lost += m.seq - in.last_seq - 1;
                    in.last_seq = in.known ? std::max(in.last_seq, m.seq) : m.seq;
                    break;
                case 'H':
                    if (in.known && m.seq > in.last_seq + 1) in.truth->expected_lost += m.seq - in.last_seq - 1;
                    in.last_seq = in.known ? std::max(in.last_seq, m.seq - 1) : m.seq - 1;
                    break;
                case 'S':  // contains every message up to its seq: those are never counted
                    in.last_seq = in.known ? std::max(in.last_seq, m.seq) : m.seq;
                    break;
                default: continue;
            }
            in.known = true;
        }
    }

    void finish() {
        if (finished) return;
        finished = true;
        faults->finish(out);
        truth.final_session = session;
        truth.duration_ns = slot_time(nslots);
        for (auto& in : ins) in.truth->last_seq = in.seq;
    }
};

Simulator::Simulator(const SimOptions& options) {
    options.validate();
    impl_ = std::make_unique<Impl>(options, truth_);
}

Simulator::~Simulator() = default;

bool Simulator::next(SimPacket& p) {
    Impl& m = *impl_;
    while (m.out.empty()) {
        if (m.done) {
            m.finish();
            if (m.out.empty()) return false;
        } else {
            m.gen_slot();
        }
    }
    p = std::move(m.out.front());
    m.out.pop_front();
    return true;
}

// ------------------------------------------------------------------ JSON

namespace {

json::Value outage_list(const std::vector<SimWindow>& ws) {
    json::Value out = json::Value::array();
    for (const auto& w : ws) out.push_back(json::Value::array({w.from, w.to}));
    return out;
}

}  // namespace

std::string GroundTruth::to_json() const {
    const SimOptions& o = options;
    json::Value doc = json::Value::object();
    doc["options"] = {{"instruments", o.instruments},
                      {"rate", o.rate},
                      {"duration_s", o.duration_s},
                      {"messages", o.messages},
                      {"batch", o.batch},
                      {"heartbeat_ms", o.heartbeat_ms},
                      {"snapshot_ms", o.snapshot_ms},
                      {"definition_ms", o.definition_ms},
                      {"seed", o.seed},
                      {"session", o.session},
                      {"epoch_ns", o.epoch_ns},
                      {"channel", o.channel},
                      {"line_a", fmt::format("{}:{}", o.group_a, o.port_a)},
                      {"line_b", fmt::format("{}:{}", o.group_b, o.port_b)},
                      {"interface_a", o.interface_a},
                      {"interface_b", o.interface_b},
                      {"loss_a", o.loss_a},
                      {"loss_b", o.loss_b},
                      {"burst_loss", o.burst_p},
                      {"burst_len", o.burst_len},
                      {"dup", o.dup},
                      {"reorder", o.reorder},
                      {"restart_at", o.restart_at ? json::Value(*o.restart_at) : json::Value()},
                      {"lagging_snapshots", o.lagging_snapshots},
                      {"quiet", o.quiet},
                      {"silence", o.silence},
                      {"outage_a", outage_list(o.outage_a)},
                      {"outage_b", outage_list(o.outage_b)}};
    doc["protocol"] = protocol;
    doc["final_session"] = final_session;
    doc["exact_lost"] = exact_lost;
    doc["duration_ns"] = duration_ns;
    doc["messages"] = messages;
    doc["sequenced"] = sequenced;
    doc["packets"] = {{"generated", packets},         {"sent_a", sent_a},
                      {"sent_b", sent_b},             {"dropped_a", dropped_a},
                      {"dropped_b", dropped_b},       {"dropped_both", dropped_both},
                      {"duplicated_a", duplicated_a}, {"duplicated_b", duplicated_b},
                      {"reordered_a", reordered_a},   {"reordered_b", reordered_b},
                      {"late_old_session", late_old_session},
                      {"snapshot", snapshot_packets},         {"definition", definition_packets}};
    doc["output"] = output;
    doc["send"] = {{"errors", send_errors}, {"max_late_ns", max_late_ns}};
    json::Value& list = doc["instruments"] = json::Value::array();
    for (const InstrumentTruth& t : instruments)
        list.push_back({{"id", t.id},
                        {"symbol", t.symbol},
                        {"kind", t.delta ? "delta" : "quote"},
                        {"quiet", t.quiet},
                        {"silenced", t.silenced},
                        {"messages", t.messages},
                        {"last_seq", t.last_seq},
                        {"dropped_both", t.dropped_both},
                        {"expected_lost", t.expected_lost},
                        {"bids", json::levels(t.bids)},
                        {"asks", json::levels(t.asks)}});
    return json::dump(doc);
}

// ------------------------------------------------------------------ sinks

GroundTruth run_simulator(const SimOptions& options, const SimSink& sink) {
    Simulator sim(options);
    return run_to_end(sim, sink);
}

GroundTruth simulate_to_sockets(SimOptions options) {
    options.validate();
    options.epoch_ns = realtime_ns();
    Simulator sim(options);
    return drive_simulator(sim, {options.lines()}, options.epoch_ns, nullptr);
}

GroundTruth simulate_to_capture(const SimOptions& options, const std::string& path) {
    Simulator sim(options);
    return drive_simulator(sim, {options.lines()}, options.epoch_ns, &path);
}

}  // namespace tickgate
