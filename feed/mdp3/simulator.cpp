// The MDP 3.0 simulator: the schedule of four streams (incremental packets,
// heartbeats, the snapshot loop, the definition loop), the MBP-10 books it
// publishes, and the handler model that yields expected_lost; the shared
// driver (sim_driver.hpp) applies the incremental lines' faults and sends.
//
// Why a loss is always revealed before a snapshot can hide it: MDP3.md
// counts an instrument's loss when its next RptSeq arrives, but a snapshot
// applied first (the instrument is unconfirmed after the channel gap) moves
// `last` past the hole and the loss is never counted. So after a packet
// lost on both lines the simulator (1) puts an entry of every instrument
// that lost entries into the next incremental packets, and (2) sends no
// snapshot until those have gone out and kRevealGuardNs more (longer than
// the A/B arbitration hold, receiver.arbitration_hold_us, during which the
// packet after a hole waits for the other line) — in the schedule, and in
// real time when sending (a late sender catching up would squeeze it: the
// socket sink waits for it before a snapshot). Losses that no later
// packet of the session can reveal (a restart, the end of the run) are not
// counted by a handler, nor expected here.
#include "tickgate/feed/mdp3/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include "../sim_random.hpp"
#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/mdp3/indexed_book.hpp"
#include "tickgate/feed/mdp3/packet_builder.hpp"

namespace tickgate::mdp3 {

namespace {

constexpr std::size_t kDepth = 10;                  // MBP-10 (the definitions' GBX MarketDepth)
constexpr std::int32_t kFirstSecurityId = 100001;
constexpr std::int64_t kTick = 250'000'000;         // 0.25 at PRICE9's exponent -9
constexpr std::size_t kDefinitionsPerPacket = 8;
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

}  // namespace

tickgate::SimOptions SimOptions::defaults() {
    tickgate::SimOptions o;
    o.instruments = 30;
    o.rate = 4000;
    o.batch = 8;
    o.snapshot_ms = 100;
    o.definition_ms = 500;
    o.channel = 310;
    o.group_a = "239.255.20.1";
    o.port_a = 14310;
    o.group_b = "239.255.20.2";
    o.port_b = 15310;
    return o;
}

void SimOptions::validate() const {
    feed.validate();
    const auto fail = [](const std::string& m) { throw std::invalid_argument(m); };
    if (feed.session != tickgate::SimOptions{}.session) fail("--session: QFB/1's; MDP3 numbers no sessions");
    if (feed.lagging_snapshots) fail("--lagging-snapshots: QFB/1's; the MDP3 snapshot loop is always current");
    if (!feed.quiet.empty() || !feed.silence.empty()) fail("--quiet/--silence: QFB/1's, not simulated for MDP3");
    if (feed.surge) fail("--surge: QFB/1's, not simulated for MDP3");
    for (const SimLine* l : {&snapshot_a, &snapshot_b, &definition_a, &definition_b}) l->validate();
    if (tail_cycles > 1000) fail("tail cycles: expected 0..1000");
}

void SimOptions::use_channel(const ChannelConfig& ch) {
    if (!ch.snapshot_a || !ch.definition_a)
        throw std::invalid_argument(fmt::format(
            "channel {} has no snapshot_a/snapshot_b or definition_a/definition_b: the simulator publishes both", ch.id));
    const auto line = [](const LineConfig& l) { return SimLine{l.group, l.port, l.interface}; };
    feed.channel = ch.id;
    feed.group_a = ch.a.group, feed.port_a = ch.a.port, feed.interface_a = ch.a.interface;
    feed.group_b = ch.b.group, feed.port_b = ch.b.port, feed.interface_b = ch.b.interface;
    snapshot_a = line(*ch.snapshot_a), snapshot_b = line(*ch.snapshot_b);
    definition_a = line(*ch.definition_a), definition_b = line(*ch.definition_b);
}

std::vector<SimLinePair> SimOptions::lines() const {
    return {feed.lines(), {snapshot_a, snapshot_b}, {definition_a, definition_b}};
}

// ------------------------------------------------------------------ generator

struct Simulator::Impl {
    struct Level {
        std::int64_t px;
        std::int32_t qty;
        std::int32_t orders;
    };
    struct Instr {
        std::int32_t security_id;
        InstrumentTruth* truth;
        std::uint32_t rpt = 0;           // last RptSeq sent
        std::int64_t base_px;
        std::vector<Level> side[2];      // [0] bids, [1] offers, level 1 first
        std::uint64_t transact = 0;      // TransactTime of its last entry
        // The handler's model (the session's entries that reached it).
        bool known = false;              // an entry of the session or a snapshot reached it
        std::uint32_t unrevealed = 0;    // entries lost on both lines since the last that reached it
    };
    enum class Kind : std::uint8_t { kBook, kTrade, kStatistics };

    const SimOptions o;
    GroundTruth& truth;
    Rng content;
    std::vector<Instr> ins;
    std::set<std::uint32_t> owed;        // instruments whose loss the next packets must reveal

    std::uint64_t total_entries, entries_done = 0, inc_packets, inc_done = 0;
    std::int64_t inc_dt, end_ns, final_ns;
    std::int64_t next_inc = 0, next_hb, next_snap = 0, next_def = 0;
    std::int64_t snap_dt, def_dt, snapshots_blocked_until = 0;
    std::uint64_t restart_packet = 0;    // 0: no restart
    bool restarted = false;
    std::uint32_t msg_seq = 0, snap_seq = 0, def_seq = 0, trade_id = 0;
    std::size_t snap_cursor = 0, def_cursor = 0;
    std::optional<SimFaultStage> faults;  // the driver's, on the incremental lines
    std::deque<SimPacket> out;

    Impl(const SimOptions& opt, GroundTruth& gt) : o(opt), truth(gt), content(opt.feed.seed) {
        const tickgate::SimOptions& f = o.feed;
        total_entries = f.messages ? f.messages : static_cast<std::uint64_t>(std::llround(f.rate * f.duration_s));
        total_entries = std::max<std::uint64_t>(total_entries, 1);
        inc_packets = (total_entries + f.batch - 1) / f.batch;
        inc_dt = std::max<std::int64_t>(static_cast<std::int64_t>(1e9 * f.batch / f.rate), 1);
        end_ns = static_cast<std::int64_t>(inc_packets) * inc_dt;
        snap_dt = std::max<std::int64_t>(std::int64_t{f.snapshot_ms} * 1'000'000 / f.instruments, 1);
        const std::size_t def_packets = (f.instruments + kDefinitionsPerPacket - 1) / kDefinitionsPerPacket;
        def_dt = std::max<std::int64_t>(std::int64_t{f.definition_ms} * 1'000'000 / static_cast<std::int64_t>(def_packets), 1);
        final_ns = end_ns + std::int64_t{o.tail_cycles} * f.snapshot_ms * 1'000'000;
        next_hb = std::int64_t{f.heartbeat_ms} * 1'000'000;
        faults.emplace(f, f.seed ^ 0xFA017ED5EEDULL, end_ns, truth);
        if (f.restart_at)
            restart_packet = std::clamp<std::uint64_t>(static_cast<std::uint64_t>(*f.restart_at * double(inc_packets)),
                                                       1, std::max<std::uint64_t>(inc_packets - 1, 1));
        truth.protocol = "mdp3";
        truth.options = f;
        truth.final_session = 1;
        truth.exact_lost = f.reorder == 0;  // the model assumes a reordered copy never outlives the A/B hold
        truth.instruments.resize(f.instruments);
        ins.resize(f.instruments);
        for (std::uint32_t i = 0; i < f.instruments; ++i) {
            Instr& in = ins[i];
            in.security_id = kFirstSecurityId + static_cast<std::int32_t>(i);
            in.truth = &truth.instruments[i];
            in.base_px = (100 + std::int64_t{i} * 7) * 1'000'000'000;
            in.truth->id = static_cast<std::uint32_t>(in.security_id);
            in.truth->symbol = fmt::format("SIM{:03}", i + 1);
            in.truth->delta = true;
        }
    }

    [[nodiscard]] std::uint64_t transact(std::int64_t t) const {
        return static_cast<std::uint64_t>(o.feed.epoch_ns + t);
    }

    // ---- the next datagram(s) of the earliest stream into `out`
    bool step() {
        const bool inc_left = inc_done < inc_packets;
        if (!inc_left && !owed.empty()) owed.clear();  // nothing left to reveal them: never counted
        const std::int64_t t_inc = inc_left ? next_inc : kNever;
        const std::int64_t t_hb = next_hb <= final_ns ? next_hb : kNever;
        const std::int64_t t_snap =
            owed.empty() && std::max(next_snap, snapshots_blocked_until) <= final_ns ? std::max(next_snap, snapshots_blocked_until)
                                                                                        : kNever;
        const std::int64_t t_def = next_def <= final_ns ? next_def : kNever;
        const std::int64_t t = std::min({t_inc, t_hb, t_snap, t_def});
        if (t == kNever) return false;
        if (t == t_inc) {
            incremental(t);
            next_inc += inc_dt;
        } else if (t == t_hb) {
            heartbeat(t);
            next_hb += std::int64_t{o.feed.heartbeat_ms} * 1'000'000;
        } else if (t == t_snap) {
            snapshot(t);
            next_snap = t + snap_dt;
        } else {
            definitions(t);
            next_def += def_dt;
        }
        return true;
    }

    // ---- incremental feed
    void maybe_restart() {
        if (restart_packet == 0 || restarted || inc_done < restart_packet) return;
        restarted = true;
        ++truth.final_session;
        msg_seq = 0;
        owed.clear();  // lost in the old session, never revealed
        for (Instr& in : ins) {
            in.known = false;
            in.unrevealed = 0;
        }
    }

    void incremental(std::int64_t t) {
        maybe_restart();
        const std::uint32_t batch = o.feed.batch;
        const std::uint64_t left = total_entries > entries_done ? total_entries - entries_done : 0;
        const std::uint64_t n = std::clamp<std::uint64_t>(left, 1, batch);
        // Owed instruments first (a book entry each), then random picks.
        std::vector<std::pair<std::uint32_t, Kind>> picks;
        for (auto it = owed.begin(); it != owed.end() && picks.size() < batch;) {
            picks.emplace_back(*it, Kind::kBook);
            it = owed.erase(it);
        }
        const bool reveals = !picks.empty();
        while (picks.size() < n) {
            const auto i = static_cast<std::uint32_t>(content.below(ins.size()));
            const double r = content.uniform();
            picks.emplace_back(i, r < 0.8 ? Kind::kBook : r < 0.9 ? Kind::kTrade : Kind::kStatistics);
        }
        entries_done += picks.size();
        ++inc_done;

        std::vector<build::BookEntry> book;
        std::vector<build::TradeEntry> trades;
        std::vector<build::StatisticsEntry> stats;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> sent;  // (instrument, RptSeq) in wire order
        const std::uint64_t tx = transact(t);
        for (const auto& [i, kind] : picks)
            if (kind == Kind::kBook) book.push_back(book_update(ins[i]));
        // RptSeq in wire order: the trade summary message, then the statistics one.
        for (const auto& [i, kind] : picks) {
            Instr& in = ins[i];
            if (kind == Kind::kTrade) {
                const auto& bids = in.side[0];
                trades.push_back({bids.empty() ? in.base_px : bids.front().px,
                                  static_cast<std::int32_t>(1 + content.below(50)), in.security_id, ++in.rpt,
                                  static_cast<std::uint8_t>(1 + content.below(2)), ++trade_id});
            }
        }
        for (const auto& [i, kind] : picks) {
            Instr& in = ins[i];
            if (kind == Kind::kStatistics)
                stats.push_back({in.base_px + static_cast<std::int64_t>(content.below(9)) * kTick, 0, in.security_id,
                                 ++in.rpt, '6'});
        }
        for (const auto& e : book) sent.emplace_back(index_of(e.security_id), e.rpt_seq);
        for (const auto& e : trades) sent.emplace_back(index_of(e.security_id), e.rpt_seq);
        for (const auto& e : stats) sent.emplace_back(index_of(e.security_id), e.rpt_seq);
        for (const auto& [i, rpt] : sent) {
            ins[i].transact = tx;
            ++ins[i].truth->messages;
            ins[i].truth->last_seq = rpt;
        }
        truth.messages += sent.size();
        truth.sequenced += sent.size();

        build::Writer p = build::packet(++msg_seq, tx);
        if (!book.empty()) p.append(build::book_message(tx, book));
        if (!trades.empty()) p.append(build::trade_summary_message(tx, trades));
        if (!stats.empty()) p.append(build::statistics_message(tx, stats));
        const bool delivered = send_incremental(std::move(p.bytes()), t, reveals);
        for (const auto& [i, rpt] : sent) model(ins[i], delivered);
        if (reveals) snapshots_blocked_until = t + kRevealGuardNs;
    }

    std::uint32_t index_of(std::int32_t security_id) const {
        return static_cast<std::uint32_t>(security_id - kFirstSecurityId);
    }

    // What the handler sees of one entry (delivered or lost on both lines).
    void model(Instr& in, bool delivered) {
        if (!delivered) {
            ++in.truth->dropped_both;
            ++in.unrevealed;
            owed.insert(index_of(in.security_id));
            return;
        }
        if (in.known) in.truth->expected_lost += in.unrevealed;
        in.unrevealed = 0;
        in.known = true;
    }

    // One MBP-10 update of `in` (its next RptSeq), applied to the
    // simulator's book as MDP3.md's table says the handler applies it.
    build::BookEntry book_update(Instr& in) {
        const int s = static_cast<int>(content.below(2));
        std::vector<Level>& lv = in.side[s];
        const char type = s == 0 ? '0' : '1';
        const std::int64_t away = s == 0 ? -kTick : kTick;  // one level further from the touch
        const auto n = static_cast<std::uint32_t>(lv.size());
        const auto qty = static_cast<std::int32_t>(1 + content.below(500));
        const auto orders = static_cast<std::int32_t>(1 + content.below(20));
        const double r = content.uniform();
        UpdateAction action;
        std::uint32_t level;  // 1-based
        if (n == 0 || (r >= 0.45 && r < 0.80)) {
            action = UpdateAction::kNew;
            level = 1 + static_cast<std::uint32_t>(content.below(std::min<std::uint32_t>(n + 1, kDepth)));
        } else if (r < 0.45) {
            action = UpdateAction::kChange;
            level = 1 + static_cast<std::uint32_t>(content.below(n));
        } else if (r < 0.985) {
            action = UpdateAction::kDelete;
            level = 1 + static_cast<std::uint32_t>(content.below(n));
        } else if (r < 0.997) {
            action = UpdateAction::kDeleteFrom;
            level = 1 + static_cast<std::uint32_t>(content.below(std::min<std::uint32_t>(n, 3)));
        } else {
            action = UpdateAction::kDeleteThru;
            level = 1;
        }
        build::BookEntry e{0, qty, in.security_id, ++in.rpt, static_cast<std::uint8_t>(level),
                           static_cast<std::uint8_t>(action), type, orders};
        switch (action) {
            case UpdateAction::kNew: {
                // Bids stay below base_px, offers above: the book never crosses;
                // and a new level's price lies strictly between its neighbours
                // (issue 26: levels repeated and out of order). Where there is no
                // tick between them, the level goes after the last one instead,
                // or, with the book full, becomes a Change.
                const std::int64_t inside = in.base_px + away;
                const auto beyond = [&](std::int64_t a, std::int64_t b) { return s == 0 ? a < b : a > b; };
                std::int64_t px = 0;
                bool room = true;
                if (n == 0) {
                    px = inside;
                } else if (level == 1) {
                    px = lv.front().px - away;  // one tick nearer the touch
                    room = !beyond(inside, px);
                } else if (level <= n) {
                    px = lv[level - 2].px + away;
                    room = beyond(lv[level - 1].px, px);
                } else {
                    px = lv[n - 1].px + away;
                }
                if (!room && n < kDepth) {
                    level = n + 1;
                    px = lv[n - 1].px + away;
                } else if (!room) {
                    e.action = static_cast<std::uint8_t>(UpdateAction::kChange);
                    lv[level - 1].qty = qty;
                    lv[level - 1].orders = orders;
                    e.px = lv[level - 1].px;
                    break;
                }
                e.level = static_cast<std::uint8_t>(level);
                lv.insert(lv.begin() + (level - 1), Level{px, qty, orders});
                if (lv.size() > kDepth) lv.pop_back();
                e.px = px;
                break;
            }
            case UpdateAction::kChange:
                lv[level - 1].qty = qty;
                lv[level - 1].orders = orders;
                e.px = lv[level - 1].px;
                break;
            case UpdateAction::kDelete:
                e.px = lv[level - 1].px;
                e.size = lv[level - 1].qty;
                lv.erase(lv.begin() + (level - 1));
                break;
            case UpdateAction::kDeleteFrom:
                e.px = lv[level - 1].px;
                lv.erase(lv.begin(), lv.begin() + level);
                break;
            case UpdateAction::kDeleteThru:
                e.px = 0;
                e.size = 0;
                lv.clear();
                break;
            case UpdateAction::kOverlay: break;  // not generated
        }
        return e;
    }

    void heartbeat(std::int64_t t) {
        maybe_restart();
        build::Writer p = build::packet(++msg_seq, transact(t));
        p.append(build::heartbeat_message());
        ++truth.messages;
        (void)send_incremental(std::move(p.bytes()), t, false);
    }

    // Through the incremental lines' faults; true if a line carried the packet.
    bool send_incremental(std::vector<std::byte> bytes, std::int64_t t, bool reveals) {
        SimDatagram d{std::move(bytes), t, static_cast<std::uint8_t>(SimFeed::kIncremental), truth.final_session};
        if (reveals) d.guard_ns = kRevealGuardNs;
        return faults->push(std::move(d), out);
    }

    // ---- snapshot loop: the next instrument that has published something
    void snapshot(std::int64_t t) {
        for (std::size_t tries = 0; tries < ins.size(); ++tries) {
            Instr& in = ins[snap_cursor++ % ins.size()];
            if (in.rpt == 0) continue;
            std::vector<build::SnapshotLevel> sides[2];
            for (int s = 0; s < 2; ++s)
                for (const Level& l : in.side[s]) sides[s].push_back({l.px, l.qty, l.orders});
            build::Writer p = build::packet(++snap_seq, transact(t));
            p.append(build::snapshot_message(in.security_id, in.rpt, in.transact, msg_seq,
                                             static_cast<std::uint32_t>(ins.size()), sides[0], sides[1]));
            SimDatagram d{std::move(p.bytes()), t, static_cast<std::uint8_t>(SimFeed::kSnapshot)};
            d.guarded = true;
            (void)faults->push(std::move(d), out);
            // The handler's model: a snapshot tells it the instrument's
            // RptSeq (never lost: both lines, no faults), also right after a
            // new session reset it; it contains whatever was lost before.
            in.known = true;
            in.unrevealed = 0;
            ++truth.snapshot_packets;
            return;
        }
    }

    // ---- definition loop: up to kDefinitionsPerPacket instruments per packet
    void definitions(std::int64_t t) {
        build::Writer p = build::packet(++def_seq, transact(t));
        for (std::size_t k = 0; k < kDefinitionsPerPacket && k < ins.size(); ++k) {
            const Instr& in = ins[def_cursor++ % ins.size()];
            p.append(build::definition_message(in.security_id, in.truth->symbol, static_cast<std::uint32_t>(ins.size()),
                                               static_cast<std::uint64_t>(o.feed.epoch_ns),
                                               static_cast<std::int8_t>(kDepth)));
            if (def_cursor % ins.size() == 0) break;  // one cycle ends a packet
        }
        (void)faults->push({std::move(p.bytes()), t, static_cast<std::uint8_t>(SimFeed::kDefinition)}, out);
        ++truth.definition_packets;
    }

    void finish() {
        faults->finish(out);
        truth.duration_ns = final_ns;
        for (Instr& in : ins) {
            in.truth->bids.clear();
            in.truth->asks.clear();
            for (const Level& l : in.side[0]) in.truth->bids.push_back({l.px, static_cast<std::uint32_t>(l.qty)});
            for (const Level& l : in.side[1]) in.truth->asks.push_back({l.px, static_cast<std::uint32_t>(l.qty)});
        }
    }
};

Simulator::Simulator(const SimOptions& options) {
    options.validate();
    impl_ = std::make_unique<Impl>(options, truth_);
}

Simulator::~Simulator() = default;

bool Simulator::next(SimPacket& p) {
    while (impl_->out.empty()) {
        if (!impl_->step()) {
            impl_->finish();
            if (impl_->out.empty()) return false;
        }
    }
    p = std::move(impl_->out.front());
    impl_->out.pop_front();
    return true;
}

// ------------------------------------------------------------------ sinks

GroundTruth run_simulator(const SimOptions& options, const std::function<void(SimPacket&)>& sink) {
    Simulator sim(options);
    return run_to_end(sim, sink);
}

GroundTruth simulate_to_sockets(SimOptions options) {
    options.validate();
    options.feed.epoch_ns = realtime_ns();
    Simulator sim(options);
    return drive_simulator(sim, options.lines(), options.feed.epoch_ns, nullptr);
}

GroundTruth simulate_to_capture(const SimOptions& options, const std::string& path) {
    Simulator sim(options);
    return drive_simulator(sim, options.lines(), options.feed.epoch_ns, &path);
}

}  // namespace tickgate::mdp3
