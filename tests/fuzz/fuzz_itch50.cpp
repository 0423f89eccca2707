// fuzz_itch50: arbitrary datagrams as ITCH 5.0 over MoldUDP64 through the
// replay pipeline: channel -> moldudp64::Stream -> BasicSequencer<itch50::Rules> ->
// OrderBook -> gate, then the summary.
//
// Input format (see README.md): records of
//   u16 BE header     bits 0..10  datagram length (cut short by the end of the input)
//                     bits 11..13 arrival-time step (index in kSteps)
//                     bit  14     line (0: A 239.255.10.1:31001, 1: B 239.255.10.2:31002)
//                     bit  15     unicast to 127.0.0.1 (a re-request server's answer)
//   then the datagram bytes.
// A tiny order store (64 orders, 32 levels), a pool of 4 held packets and a
// 1 ms gap timeout make the full store, the full pool and the give-ups reachable.
//
// After every datagram: each channel's next_seq never goes back within a
// session, the held packets within the pool, the stream counters
// monotonic, every L2 level with shares and orders > 0 and strictly sorted
// best first, the per-instrument open orders adding up to the store's;
// and (#21 items 4-5) a datagram beyond the implausible-position bound
// moves no stream state, an answer never reveals a position.
//
// Work budget (issue 21 item 6, check_work_budget below): the same input
// through a replay with a store of 65,536 orders, where a walk of the store
// shows; after every datagram the store has visited at most
// kProbesPerMessage slots per message received and per datagram so far (a
// held message is applied by a later datagram; a new session costs no
// slot), and the whole input stays within a wall-time budget.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "fuzz_common.hpp"
#include "tickgate/feed/itch50/replay.hpp"

namespace {

using namespace tickgate;

constexpr std::int64_t kBase = 1'692'711'000'000'000'000;  // 13:30 UTC, as the real capture
constexpr std::int64_t kSteps[8] = {0, 1, 1'000, 999'999, 1'000'000, 1'000'001, 100'000'000, 60'000'000'000};

const Config& config() {
    static const Config cfg = parse_config(
        "[itch]\nmax_orders = 64\nmax_levels = 32\n[moldudp64]\ngap_timeout_ms = 1\nmax_held_packets = 4\n"
        "[[channel]]\nid = 1\nprotocol = \"itch50\"\n"
        "a = { group = \"239.255.10.1\", port = 31001 }\nb = { group = \"239.255.10.2\", port = 31002 }\n",
        "fuzz_itch50.toml");
    return cfg;
}

void check_levels(const itch50::Replay& r, std::uint32_t id, Side s) {
    const OrderBookSide side = r.handler().book().side(id, s);
    std::int64_t prev = 0;
    bool first = true;
    for (const OrderLevel& l : side) {
        FUZZ_CHECK(l.shares > 0 && l.orders > 0);
        if (!first) FUZZ_CHECK(s == Side::kBid ? l.price < prev : l.price > prev);
        prev = l.price;
        first = false;
    }
}

// ---- #21 items 4 and 5 (ITCH50.md "Implausible positions", "Re-request
// answers"): a datagram of the current session more than the bound beyond
// the highest position seen moves no stream state; an answer (unicast)
// never reveals a position nor starts a session, and applies nothing
// beyond what was seen.
struct StreamState {
    std::uint64_t next_seq, seen_end, holes, held, lost, filled, late_join, recovered, given_up, sessions;
    bool gave_up;
    bool operator==(const StreamState&) const = default;
};
StreamState stream_state(const itch50::Replay& r) {
    const auto v = r.front().channel(0);
    const moldudp64::StreamCounters& c = v.counters;
    return {v.next_seq, v.seen_end, v.open_holes, v.held, c.lost_messages.get(), c.holes_filled.get(),
            c.late_join_messages.get(), c.recovered_messages.get(), c.holes_given_up.get(), c.session_changes.get(),
            v.gave_up};
}
bool beyond_the_bound(const itch50::Replay& r, std::span<const std::byte> d) {
    const auto v = r.front().channel(0);
    const moldudp64::Key k = moldudp64::read_key(d, 0);
    const std::uint64_t highest = v.seen_end - 1;
    return k.valid() && k.kind != moldudp64::PacketKind::kRequest && v.has_session && v.positioned &&
           k.session == v.session && k.seq > highest && k.seq - highest > kImplausibleSeqJump;
}
// Called with the state before the datagram (holes due already given up) and after it.
void check_stream_moves(const itch50::Replay& r, const StreamState& before, std::uint64_t implausible_before,
                        bool beyond, bool unicast) {
    const StreamState after = stream_state(r);
    const std::uint64_t implausible = r.front().channel(0).counters.implausible_positions.get();
    FUZZ_CHECK(implausible <= implausible_before + 1);
    if (beyond) FUZZ_CHECK(after == before);
    if (unicast) {
        FUZZ_CHECK(after.seen_end == before.seen_end);
        FUZZ_CHECK(after.sessions == before.sessions);
        FUZZ_CHECK(after.next_seq <= std::max(before.next_seq, before.seen_end));
        FUZZ_CHECK(after.late_join == before.late_join);
    }
}

// ---- work budget (issue 21 item 6): work grows with the input, not the store.
// Slots and level nodes a datagram may make the store visit per message
// received (+1): linear probing at the load a 65,536-order store reaches
// within a fuzz input visits a few, a level insert a few times log2 of the
// side's levels; a walk of the store visits 81,921.
constexpr std::uint64_t kProbesPerMessage = 512;
// Wall time for one input (at most 16 KB, run.sh's max_len): the pipeline
// takes well under 50 ms for one, ASan and UBSan included; a path whose
// work grows with the store (a walk per new session, one probe run for
// every reference, a quadratic level insert) takes seconds.
constexpr std::chrono::milliseconds kInputBudget{2000};

const Config& big_store_config() {
    static const Config cfg = parse_config(
        "[itch]\nmax_orders = 65536\nmax_levels = 65536\n[moldudp64]\ngap_timeout_ms = 1\nmax_held_packets = 4\n"
        "[[channel]]\nid = 1\nprotocol = \"itch50\"\n"
        "a = { group = \"239.255.10.1\", port = 31001 }\nb = { group = \"239.255.10.2\", port = 31002 }\n",
        "fuzz_itch50_budget.toml");
    return cfg;
}

// One record of the input format (header comment): its datagram, where it
// was sent, and the arrival time `t` advanced by its step; none at the end.
struct Record {
    std::span<const std::byte> bytes;
    std::uint32_t dst;
    std::uint16_t port;
    bool unicast;
};
std::optional<Record> next_record(std::span<const std::byte>& in, std::int64_t& t) {
    if (in.size() < 2) return std::nullopt;
    const auto h = static_cast<std::uint16_t>((std::to_integer<unsigned>(in[0]) << 8) | std::to_integer<unsigned>(in[1]));
    in = in.subspan(2);
    const std::size_t len = std::min<std::size_t>(h & 0x7FF, in.size());
    t += kSteps[(h >> 11) & 7];
    const bool b = (h >> 14) & 1;
    const bool unicast = (h >> 15) & 1;
    const Record r{in.first(len), unicast ? 0x7F000001u : (b ? 0xEFFF0A02u : 0xEFFF0A01u),
                   static_cast<std::uint16_t>(b ? 31002 : 31001), unicast};
    in = in.subspan(len);
    return r;
}

void check_work_budget(std::span<const std::byte> in) {
    const auto start = std::chrono::steady_clock::now();
    itch50::Replay replay(big_store_config());
    std::int64_t t = kBase;
    std::uint64_t datagrams = 0;
    while (const auto r = next_record(in, t)) {
        replay.front().on_datagram(r->bytes, r->dst, r->port, t);
        ++datagrams;
        FUZZ_CHECK(replay.handler().book().probes() <= kProbesPerMessage * (replay.front().channel(0).counters.messages.get() + datagrams));
    }
    replay.front().finish();
    FUZZ_CHECK(std::chrono::steady_clock::now() - start <= kInputBudget);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    itch50::Replay replay(config());
    std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
    std::int64_t t = kBase;
    std::uint64_t last_next = 0, last_changes = 0, last_packets = 0, last_lost = 0;
    while (const auto r = next_record(in, t)) {
        replay.front().expire(t);  // what on_datagram gives up first, so that `before` is the datagram's own
        const StreamState before = stream_state(replay);
        const std::uint64_t implausible_before = replay.front().channel(0).counters.implausible_positions.get();
        const bool beyond = beyond_the_bound(replay, r->bytes);
        replay.front().on_datagram(r->bytes, r->dst, r->port, t);
        check_stream_moves(replay, before, implausible_before, beyond, r->unicast);

        const auto ch = replay.front().channel(0);
        const std::uint64_t changes = ch.counters.session_changes.get();
        if (changes == last_changes) FUZZ_CHECK(ch.next_seq >= last_next);  // within a session, never back
        FUZZ_CHECK(ch.counters.packets.get() >= last_packets);
        FUZZ_CHECK(ch.counters.lost_messages.get() >= last_lost);
        FUZZ_CHECK(ch.held <= 4);
        last_next = ch.next_seq;
        last_changes = changes;
        last_packets = ch.counters.packets.get();
        last_lost = ch.counters.lost_messages.get();
    }
    replay.front().finish();
    FUZZ_CHECK(replay.front().channel(0).open_holes == 0);
    FUZZ_CHECK(replay.front().channel(0).held == 0);
    std::size_t orders = 0;
    for (const std::uint32_t id : replay.handler().instruments().seen_ids()) {
        orders += replay.handler().book().open_orders(id);
        check_levels(replay, id, Side::kBid);
        check_levels(replay, id, Side::kAsk);
    }
    FUZZ_CHECK(orders == replay.handler().book().open_orders());
    (void)replay.summary_json({.now_ns = t});
    check_work_budget({reinterpret_cast<const std::byte*>(data), size});
    return 0;
}
