// fuzz_datagram: arbitrary datagrams through Handler::on_datagram (decode ->
// sequencer -> book -> gate), optionally through a PacketArbiter first.
//
// Input format (see README.md):
//   byte 0            flags: bit0 arbiter on, bit1 learn definitions off,
//                     bit2 static definitions for ids 1..3, bit3 clock offsets
//                     on channels 1 and 2, bit4 instruments not bound to
//                     channels (offline replay without a config)
//   then records:     u16 LE header, then the datagram bytes
//                     header bits 0..10  length (values > 1400 wrap: len % 1401;
//                                         cut short by the end of the input)
//                     header bits 11..14 arrival-time step (index in kSteps)
//                     header bit  15     line (0 = A, 1 = B)
//
// After every datagram: books sorted strictly with no qty 0 and counts within
// depth, decoder counters monotonic and consistent with the DecodeResult,
// events per datagram within qfb1::max_events_for, seen_ids consistent,
// the gate consistent with the state, and per event the spec's rules for the
// verdict (a duplicate changes nothing, a heartbeat gap does not refresh
// liveness and moves last_seq forward, an implausible jump or another
// channel's message changes nothing, ...), and a packet never changes an
// instrument of another channel than its header's (rule 7). With the
// arbiter: every packet delivered once or counted as a duplicate, per-channel
// delivery in packet_seq order (but for the packets it passes on unordered,
// counted), no hold left past its deadline after expire().
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "fuzz_common.hpp"
#include "../support/arbiter_rig.hpp"
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/replay.hpp"

namespace {

using namespace tickgate;
using fuzz::check_books;

constexpr std::int64_t kBase = 1'700'000'000'000'000'000;  // 2023-11-14, Unix ns
constexpr std::int64_t kSteps[16] = {
    0,          1,           1'000,       50'000,        100'000,       249'000,       250'000,       1'000'000,
    10'000'000, 100'000'000, 249'000'000, 251'000'000, 1'000'000'000, 2'001'000'000, 5'000'000'000, 60'000'000'000};
constexpr std::uint32_t kArbChannels = 4;
constexpr std::uint32_t kArbWindow = 8;
constexpr std::int64_t kArbHold = 250'000;
// Delivery order is not checked across a packet_seq wrap of 2^64.
constexpr std::uint64_t kWrapZone = std::numeric_limits<std::uint64_t>::max() - 4 * kArbWindow;

bool same_except_counters(const InstrumentState& a, const InstrumentState& b) {
    return a.last_alive_ns == b.last_alive_ns && a.last_source_ns == b.last_source_ns && a.last_seq == b.last_seq &&
           a.alive == b.alive && a.has_source == b.has_source && a.known == b.known && a.suspect == b.suspect &&
           a.price_exponent == b.price_exponent && a.recovery_block == b.recovery_block &&
           std::memcmp(a.symbol, b.symbol, sizeof a.symbol) == 0;
}

bool same(const InstrumentState& a, const InstrumentState& b) {
    const auto& x = a.counters;
    const auto& y = b.counters;
    return same_except_counters(a, b) && a.seen == b.seen && a.bound == b.bound && a.channel_id == b.channel_id &&
           a.clock_offset_ns == b.clock_offset_ns && x.accepted == y.accepted && x.duplicates == y.duplicates &&
           x.lost == y.lost && x.gap_events == y.gap_events && x.heartbeats == y.heartbeats &&
           x.snapshots_applied == y.snapshots_applied && x.stale_snapshots == y.stale_snapshots &&
           x.recovered == y.recovered && x.unbuffered_deltas == y.unbuffered_deltas &&
           x.book_overflows == y.book_overflows && x.implausible_seq == y.implausible_seq &&
           x.foreign_channel == y.foreign_channel;
}

void check_counters_monotonic(const InstrumentCounters& b, const InstrumentCounters& a) {
    FUZZ_CHECK(a.accepted >= b.accepted);
    FUZZ_CHECK(a.duplicates >= b.duplicates);
    FUZZ_CHECK(a.lost >= b.lost);
    FUZZ_CHECK(a.gap_events >= b.gap_events);
    FUZZ_CHECK(a.heartbeats >= b.heartbeats);
    FUZZ_CHECK(a.snapshots_applied >= b.snapshots_applied);
    FUZZ_CHECK(a.stale_snapshots >= b.stale_snapshots);
    FUZZ_CHECK(a.recovered >= b.recovered);
    FUZZ_CHECK(a.unbuffered_deltas >= b.unbuffered_deltas);
    FUZZ_CHECK(a.book_overflows >= b.book_overflows);
    FUZZ_CHECK(a.implausible_seq >= b.implausible_seq);
    FUZZ_CHECK(a.foreign_channel >= b.foreign_channel);
}

// Checks one Update against the instrument's state before (`prev`) and after
// (`cur`) the event, per the spec's rules.
void check_update(const Update& u, const InstrumentState& prev, const InstrumentState& cur) {
    check_counters_monotonic(prev.counters, cur.counters);
    FUZZ_CHECK(u.suspect == cur.suspect || u.verdict == Verdict::kSnapshotLevels);
    switch (u.verdict) {
        case Verdict::kDuplicate:
            // Dropped: changes nothing, liveness included; counted once.
            FUZZ_CHECK(prev.known);
            FUZZ_CHECK(same_except_counters(prev, cur));
            FUZZ_CHECK(cur.counters.duplicates == prev.counters.duplicates + 1);
            FUZZ_CHECK(cur.counters.accepted == prev.counters.accepted);
            FUZZ_CHECK(cur.counters.lost == prev.counters.lost);
            FUZZ_CHECK(u.lost == 0 && !u.book_changed);
            break;
        case Verdict::kAccepted:
            FUZZ_CHECK(u.lost == 0);
            FUZZ_CHECK(cur.known && cur.alive && cur.has_source);
            FUZZ_CHECK(!prev.known || cur.last_seq == prev.last_seq + 1);
            FUZZ_CHECK(cur.counters.accepted == prev.counters.accepted + 1);
            FUZZ_CHECK(cur.counters.lost == prev.counters.lost);
            break;
        case Verdict::kGap:
            FUZZ_CHECK(prev.known && u.lost > 0);
            FUZZ_CHECK(cur.last_seq > prev.last_seq);
            FUZZ_CHECK(u.lost == cur.last_seq - prev.last_seq - 1);
            FUZZ_CHECK(cur.counters.lost == prev.counters.lost + u.lost);
            FUZZ_CHECK(cur.counters.gap_events == prev.counters.gap_events + 1);
            FUZZ_CHECK(cur.counters.accepted == prev.counters.accepted + 1);
            break;
        case Verdict::kHeartbeat:
            FUZZ_CHECK(u.lost == 0 && cur.known && cur.alive);
            FUZZ_CHECK(cur.counters.lost == prev.counters.lost);
            FUZZ_CHECK(cur.counters.heartbeats == prev.counters.heartbeats + 1);
            if (prev.known) FUZZ_CHECK(cur.last_seq == prev.last_seq);
            break;
        case Verdict::kHeartbeatGap:
            // Messages were lost: counted once, last_seq moves forward to
            // next_seq - 1, suspect, and no liveness refresh.
            FUZZ_CHECK(prev.known && cur.known && cur.suspect);
            FUZZ_CHECK(u.lost > 0);
            FUZZ_CHECK(cur.last_seq > prev.last_seq);
            FUZZ_CHECK(u.lost == cur.last_seq - prev.last_seq);
            FUZZ_CHECK(cur.counters.lost == prev.counters.lost + u.lost);
            FUZZ_CHECK(cur.last_alive_ns == prev.last_alive_ns && cur.alive == prev.alive);
            break;
        case Verdict::kImplausible:
            // Rule 6: more than 10^9 ahead of a known last_seq; dropped, nothing changes.
            FUZZ_CHECK(prev.known);
            FUZZ_CHECK(same_except_counters(prev, cur));
            FUZZ_CHECK(cur.counters.implausible_seq == prev.counters.implausible_seq + 1);
            FUZZ_CHECK(cur.counters.accepted == prev.counters.accepted && cur.counters.lost == prev.counters.lost);
            FUZZ_CHECK(u.lost == 0 && !u.book_changed);
            break;
        case Verdict::kForeignChannel:
            // Rule 7: the instrument belongs to another channel; dropped, nothing changes.
            FUZZ_CHECK(prev.bound && cur.bound && cur.channel_id == prev.channel_id);
            FUZZ_CHECK(same_except_counters(prev, cur));
            FUZZ_CHECK(cur.counters.foreign_channel == prev.counters.foreign_channel + 1);
            FUZZ_CHECK(u.lost == 0 && !u.book_changed);
            break;
        case Verdict::kSnapshotStale:
            FUZZ_CHECK(prev.known && !prev.suspect);
            FUZZ_CHECK(same_except_counters(prev, cur));
            FUZZ_CHECK(cur.counters.stale_snapshots == prev.counters.stale_snapshots + 1);
            break;
        case Verdict::kSnapshotApplied:
            FUZZ_CHECK(cur.known && cur.alive && cur.has_source);
            FUZZ_CHECK(cur.counters.lost == prev.counters.lost);  // a snapshot counts no loss
            // last_seq never goes back on a known instrument (a hole restores it).
            if (prev.known) FUZZ_CHECK(cur.last_seq >= prev.last_seq);
            break;
        case Verdict::kSnapshotLevels:
        case Verdict::kDefinition:
            FUZZ_CHECK(cur.counters.lost == prev.counters.lost);
            FUZZ_CHECK(cur.last_seq == prev.last_seq || u.verdict == Verdict::kSnapshotLevels);
            break;
        default:
            break;
    }
    if (prev.known && cur.known) FUZZ_CHECK(cur.last_seq >= prev.last_seq);
    if (!cur.suspect) FUZZ_CHECK(cur.recovery_block == std::numeric_limits<std::uint32_t>::max());
}

struct ChannelOrder {
    std::uint16_t channel = 0;
    bool has = false;
    std::uint32_t session = 0;
    std::uint64_t seq = 0;
};

class Harness {
public:
    Harness(std::uint8_t flags)
        : handler_(std::make_unique<Handler>(fuzz::small_capacity(), fuzz::gate_config())),
          arbiter_((flags & 1) ? std::make_unique<ArbiterRig>(kArbChannels, kArbWindow, kArbHold) : nullptr) {
        Handler& seq = *handler_;
        if (flags & 2) seq.sequencer().set_learn_definitions(false);
        if (flags & 4) {
            seq.instruments().define(1, "EURUSD", -8);
            seq.instruments().define(2, "GBPUSD", -5);
            seq.instruments().define(3, "USDJPY", -3);
        }
        if (flags & 8) {
            seq.instruments().set_clock_offset(1, 1'500'000'000);
            seq.instruments().set_clock_offset(2, -700'000'000);
        }
        bind_channels_ = (flags & 16) == 0;
        seq.sequencer().set_bind_instruments_to_channels(bind_channels_);
        const std::uint32_t n = seq.instruments().max_instruments();
        shadow_.resize(n);
        for (std::uint32_t id = 0; id < n; ++id) shadow_[id] = seq.instruments().state(id);
    }

    void datagram(std::span<const std::byte> d, std::int64_t t, std::uint8_t line) {
        ++offered_;
        if (!arbiter_) {
            deliver(d, t, line);
            return;
        }
        auto cb = [this](std::span<const std::byte> p, std::int64_t ts, std::uint8_t l) { deliver(p, ts, l); };
        arbiter_->expire(t, cb);
        FUZZ_CHECK(arbiter_->next_deadline() > t);
        note_arbitrated(d);
        arbiter_->offer(d, t, line, cb);
    }

    void finish(std::int64_t t) {
        if (arbiter_) {
            auto cb = [this](std::span<const std::byte> p, std::int64_t ts, std::uint8_t l) { deliver(p, ts, l); };
            arbiter_->expire(std::numeric_limits<std::int64_t>::max(), cb);
            FUZZ_CHECK(arbiter_->next_deadline() == std::numeric_limits<std::int64_t>::max());
            // Every packet offered was delivered once or dropped as a duplicate.
            FUZZ_CHECK(offered_ == delivered_ + arbiter_->counters().duplicate_packets.get());
        } else {
            FUZZ_CHECK(offered_ == delivered_);
        }
        FUZZ_CHECK(handler_->decoder().counters().packets.get() == delivered_);
        // The summaries read every instrument's state.
        SummaryContext ctx{.now_ns = t, .capture = "fuzz"};
        const std::string json = summary_json(summary_source(*handler_), ctx);
        const std::string table = summary_table(summary_source(*handler_), ctx);
        FUZZ_CHECK(!json.empty() && !table.empty());
    }

private:
    // Mirrors the arbiter's channel -> state assignment (first kArbChannels
    // channels with a valid header) so delivery order can be checked.
    void note_arbitrated(std::span<const std::byte> d) {
        const qfb1::PacketHeaderView hdr(d);
        if (!hdr.valid() || d.size() > qfb1::kMaxDatagram) return;
        for (const auto& c : order_)
            if (c.channel == hdr.channel_id()) return;
        if (order_.size() < kArbChannels) order_.push_back({hdr.channel_id()});
    }

    void check_order(std::span<const std::byte> d) {
        const qfb1::PacketHeaderView hdr(d);
        if (!hdr.valid() || d.size() > qfb1::kMaxDatagram) return;
        // A lone packet beyond the window is passed on out of order (counted
        // just before it is delivered) and leaves the channel where it was.
        if (const std::uint64_t u = arbiter_->counters().unconfirmed_jumps.get(); u != unconfirmed_seen_) {
            unconfirmed_seen_ = u;
            return;
        }
        // So is a packet below the next expected one that was never delivered
        // (given up, or before the channel's start): the sequencer decides.
        if (const std::uint64_t l = arbiter_->counters().late_packets.get(); l != late_seen_) {
            late_seen_ = l;
            return;
        }
        for (auto& c : order_) {
            if (c.channel != hdr.channel_id()) continue;
            const std::uint32_t session = hdr.session();
            const std::uint64_t seq = hdr.packet_seq();
            if (!c.has || session > c.session) {
                c = {c.channel, true, session, seq};
            } else if (session == c.session) {
                if (c.seq < kWrapZone && seq < kWrapZone) FUZZ_CHECK(seq > c.seq);  // packet_seq order
                c.seq = seq;
            }
            return;
        }
    }

    void deliver(std::span<const std::byte> d, std::int64_t t, std::uint8_t line) {
        ++delivered_;
        FUZZ_CHECK(d.size() <= 65535);
        if (arbiter_) check_order(d);
        Handler& h = *handler_;
        const Handler& seq = h;
        const std::uint32_t n = seq.instruments().max_instruments();
        const auto before = fuzz::snapshot(h.decoder().counters());
        const std::vector<InstrumentState> states_before = shadow_;
        std::size_t events = 0;
        bool reset = false;
        const qfb1::DecodeResult r = h.on_datagram(d, t, line, [&](const Update& u) {
            ++events;
            if (u.verdict == Verdict::kSessionReset) {
                reset = true;
                for (std::uint32_t id = 0; id < n; ++id) {
                    const InstrumentState& st = seq.instruments().state(id);
                    if (st.seen && !st.known) {
                        FUZZ_CHECK(st.suspect && !st.has_source && st.last_seq == 0);
                        FUZZ_CHECK(seq.book().side(id, Side::kBid).empty());
                        FUZZ_CHECK(seq.book().side(id, Side::kAsk).empty());
                    }
                    check_counters_monotonic(shadow_[id].counters, st.counters);
                    shadow_[id] = st;
                }
                return;
            }
            if (u.verdict == Verdict::kOutOfRange) {
                FUZZ_CHECK(u.instrument_id >= n);
                return;
            }
            if (u.instrument_id >= n) {
                FUZZ_CHECK(u.verdict == Verdict::kSnapshotLevels);  // levels of a skipped snapshot
                return;
            }
            const InstrumentState& cur = seq.instruments().state(u.instrument_id);
            check_update(u, shadow_[u.instrument_id], cur);
            shadow_[u.instrument_id] = cur;
        });
        (void)reset;
        FUZZ_CHECK(events <= qfb1::max_events_for(d.size()));
        fuzz::check_decoder_step(before, fuzz::snapshot(h.decoder().counters()), r, d);
        // Each event touched only the instrument it reported (or a channel's on reset).
        for (std::uint32_t id = 0; id < n; ++id) FUZZ_CHECK(same(shadow_[id], seq.instruments().state(id)));
        // Rule 7: a packet changes only instruments of the channel its header
        // names (one it binds, or one already bound to that channel), apart
        // from the count of its own dropped messages. The one exception (the
        // README's reading, cert_two_channels): another channel's snapshot
        // that lags a suspect instrument's own stream repairs it, never
        // rebinding it or moving its last_seq back.
        const qfb1::PacketHeaderView hdr(d);
        if (bind_channels_ && hdr.valid()) {
            for (std::uint32_t id = 0; id < n; ++id) {
                const InstrumentState& was = states_before[id];
                const InstrumentState& now = seq.instruments().state(id);
                if (same_except_counters(was, now) && was.bound == now.bound && was.channel_id == now.channel_id)
                    continue;
                if (was.bound && was.channel_id != hdr.channel_id()) {
                    FUZZ_CHECK(now.bound && now.channel_id == was.channel_id);
                    FUZZ_CHECK(was.known && was.suspect);
                    FUZZ_CHECK(now.counters.snapshots_applied > was.counters.snapshots_applied);
                    FUZZ_CHECK(now.last_seq >= was.last_seq);
                    continue;
                }
                FUZZ_CHECK(now.channel_id == hdr.channel_id());
            }
        }
        check_books(seq);
        fuzz::check_seen(seq);
        for (const std::int64_t dt : {std::int64_t{0}, std::int64_t{251'000'000}, std::int64_t{2'100'000'000}}) {
            for (const std::uint32_t id : {0u, 1u, 2u, 3u, 63u, 64u, 0xFFFFFFFFu}) fuzz::check_gate(h, id, t + dt);
            for (const std::uint32_t id : seq.instruments().seen_ids()) fuzz::check_gate(h, id, t + dt);
        }
    }

    std::unique_ptr<Handler> handler_;
    std::unique_ptr<ArbiterRig> arbiter_;
    std::vector<InstrumentState> shadow_;
    std::vector<ChannelOrder> order_;
    std::uint64_t offered_ = 0;
    std::uint64_t delivered_ = 0;
    std::uint64_t unconfirmed_seen_ = 0;  // arbiter's unconfirmed_jumps at the last delivery
    std::uint64_t late_seen_ = 0;         // arbiter's late_packets at the last delivery
    bool bind_channels_ = true;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    Harness h(data[0]);
    std::size_t pos = 1;
    std::int64_t t = kBase;
    while (pos + 2 <= size) {
        const unsigned hdr = data[pos] | unsigned{data[pos + 1]} << 8;
        pos += 2;
        std::size_t len = hdr & 0x7FF;
        if (len > qfb1::kMaxDatagram) len %= qfb1::kMaxDatagram + 1;
        if (len > size - pos) len = size - pos;
        t += kSteps[(hdr >> 11) & 0xF];
        const auto line = static_cast<std::uint8_t>(hdr >> 15);
        // A copy of exactly `len` bytes, so ASan sees any read past the datagram.
        std::vector<std::byte> copy(reinterpret_cast<const std::byte*>(data + pos),
                                    reinterpret_cast<const std::byte*>(data + pos + len));
        h.datagram(copy, t, line);
        pos += len;
    }
    h.finish(t);
    return 0;
}
