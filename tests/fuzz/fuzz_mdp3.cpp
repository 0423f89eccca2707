// fuzz_mdp3: arbitrary datagrams through the MDP 3.0 pipeline (decode ->
// BasicSequencer<mdp3::Rules> -> gate), as a replay without a config sees
// them: a channel per destination, both lines, any order.
//
// Input format (see README.md): records of a u16 LE header, then the
// datagram bytes:
//   header bits 0..10   length (values > 1500 wrap: len % 1501; cut short by the end of the input)
//   header bits 11..12  channel (1..3; 4: channel 3's snapshot line, decoded outside
//                       A/B arbitration and the channel's MsgSeqNum, as live)
//   header bits 13..14  arrival-time step (0, 1 µs, 1 ms, 1 s)
//   header bit  15      line (0 = A, 1 = B)
//
// After every datagram: each side of every book within the book's depth and
// empty for an instrument never seen; an unconfirmed or loss-suspect
// instrument suspect; the decoder's figures consistent (malformed <=
// packets, every datagram counted on one channel); the events of a datagram
// within mdp3::max_events_for; the gate consistent with the state.
// Per event (issue 21 item 4): an entry or snapshot whose RptSeq is more
// than kImplausibleSeqJump ahead of its instrument's known last_seq is
// dropped as implausible and moves neither last_seq nor the book. Per
// datagram: at most kDatagramBudgetNs of this thread's CPU time (decode,
// sequence, book; the harness's own checks not included) — work bounded
// by the bytes, whatever they hold.
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_common.hpp"
#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/mdp3/protocol.hpp"

namespace {

using namespace tickgate;
using Mdp3Handler = BasicHandler<mdp3::Protocol>;

constexpr std::int64_t kBase = 1'700'000'000'000'000'000;
// 50 ms of CPU time for one datagram of at most 1,500 bytes: a healthy one
// takes microseconds even under ASan + UBSan; the thread's CPU clock, not
// the wall clock, so a loaded machine does not trip it.
constexpr std::int64_t kDatagramBudgetNs = 50'000'000;

std::int64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Rule 6 on one event: a far-ahead RptSeq on a known instrument moves nothing.
void apply_checked(Mdp3Handler& h, const Event& ev) {
    const bool entry = ev.kind == mdp3::kLevelEntry || ev.kind == mdp3::kSequencedEntry;
    const bool snapshot = ev.kind == EventKind::kSnapshotBegin;
    const std::uint32_t id = ev.instrument_id;
    if ((!entry && !snapshot) || id >= h.instruments().max_instruments()) {
        (void)h.apply(ev);
        return;
    }
    const InstrumentState& st = h.instruments().state(id);
    const std::uint64_t seq = entry ? ev.u.venue.seq : ev.u.snapshot.seq;
    const bool far = st.known && seq > st.last_seq && seq - st.last_seq > kImplausibleSeqJump;
    const std::uint64_t last = st.last_seq;
    const std::size_t bids = h.book().side(id, Side::kBid).size();
    const std::size_t asks = h.book().side(id, Side::kAsk).size();
    const Update u = h.apply(ev);
    if (!far) return;
    FUZZ_CHECK(u.verdict == Verdict::kImplausible);
    FUZZ_CHECK(st.last_seq == last);
    FUZZ_CHECK(h.book().side(id, Side::kBid).size() == bids && h.book().side(id, Side::kAsk).size() == asks);
}
constexpr std::int64_t kSteps[4] = {0, 1'000, 1'000'000, 1'000'000'000};

void check(const Mdp3Handler& h, std::int64_t now) {
    const mdp3::IndexedBook& book = h.book();
    const InstrumentTable& table = h.instruments();
    for (std::uint32_t id = 0; id < table.max_instruments(); ++id) {
        const InstrumentState& st = table.state(id);
        const std::size_t bids = book.side(id, Side::kBid).size();
        const std::size_t asks = book.side(id, Side::kAsk).size();
        FUZZ_CHECK(bids <= book.depth());
        FUZZ_CHECK(asks <= book.depth());
        if (!st.seen) FUZZ_CHECK(bids == 0 && asks == 0);
        if (st.unconfirmed) FUZZ_CHECK(st.suspect);
        if (st.lost_suspect) FUZZ_CHECK(st.suspect);
        const GateDecision g = h.gate().check(id, now);
        if (!st.seen) FUZZ_CHECK(g.reason == GateReason::kUnknown);
        if (g.ok()) FUZZ_CHECK(!st.suspect && st.has_source);
    }
    const mdp3::PacketDecoder& dec = h.decoder().protocol_decoder();
    const DecoderCounters& c = dec.counters();
    FUZZ_CHECK(c.malformed_packets.get() <= c.packets.get());
    std::uint64_t packets = 0;
    for (std::uint32_t s = 0; s < dec.channel_count(); ++s) packets += dec.channel_counters(s).packets.get();
    FUZZ_CHECK(packets == c.packets.get());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Mdp3Handler h(fuzz::small_capacity(), fuzz::gate_config());
    // The decoder's instrument slots (the table's) and definitions, as a
    // config gives them (mdp3::Protocol::configure): small, so that both
    // overflow (out of range) within an input.
    h.decoder().protocol_decoder().set_capacity(fuzz::small_capacity().max_instruments, 32);
    std::int64_t now = kBase;
    std::size_t pos = 0;
    while (size - pos >= 2) {
        const unsigned header = data[pos] | (unsigned{data[pos + 1]} << 8);
        pos += 2;
        std::size_t len = (header & 0x7FF) % (mdp3::kMaxDatagram + 1);
        if (len > size - pos) len = size - pos;
        const std::uint16_t channel = static_cast<std::uint16_t>(1 + ((header >> 11) & 3));
        now += kSteps[(header >> 13) & 3];
        const std::uint8_t line = static_cast<std::uint8_t>(header >> 15);
        const std::span<const std::byte> d(reinterpret_cast<const std::byte*>(data + pos), len);
        pos += len;
        std::size_t events = 0;
        const auto apply = [&](const Event& ev) {
            ++events;
            apply_checked(h, ev);
        };
        const std::int64_t started = thread_cpu_ns();
        if (channel == 4)
            h.decoder().decode_unarbitrated(d, mdp3::Protocol::read_key(d, 3), now,
                                            static_cast<std::uint8_t>(kSnapshotLineA + line), apply);
        else
            h.decoder().decode(d, now, line, apply, channel);
        FUZZ_CHECK(thread_cpu_ns() - started <= kDatagramBudgetNs);
        FUZZ_CHECK(events <= mdp3::max_events_for(len));
        check(h, now);
    }
    return 0;
}
