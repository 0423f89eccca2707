// Shared pieces of the tickgate fuzz targets: an always-on CHECK (an
// invariant failure aborts, so libFuzzer keeps the input), the small
// capacities that make pools and overflows reachable, and the book/counter
// invariants every target asserts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/handler.hpp"

#define FUZZ_CHECK(cond)                                                                     \
    do {                                                                                     \
        if (!(cond)) [[unlikely]] {                                                          \
            std::fprintf(stderr, "INVARIANT FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            std::abort();                                                                    \
        }                                                                                    \
    } while (0)

namespace tickgate::fuzz {

// Small on purpose: 64 ids (so out-of-range ids are easy to hit), 8 levels
// per side (book overflow), 16 buffered deltas per suspect instrument and 4
// such instruments at once (recovery ring wrap, pool exhaustion).
inline Capacity small_capacity() {
    Capacity c;
    c.max_instruments = 64;
    c.book_depth = 8;
    c.recovery_depth = 16;
    c.recovery_instruments = 4;
    return c;
}

inline GateConfig gate_config() {
    GateConfig g;
    g.stale_ms = 250;
    g.source_age_ms = 2000;
    return g;
}

// Books sorted strictly (bids descending, asks ascending), no qty 0, counts
// within depth; instruments never seen have empty books.
inline void check_books(const Handler& seq) {
    const L2Book& books = seq.book();
    for (std::uint32_t id = 0; id < seq.instruments().max_instruments(); ++id) {
        const auto bids = books.side(id, Side::kBid);
        const auto asks = books.side(id, Side::kAsk);
        FUZZ_CHECK(bids.size() <= books.depth());
        FUZZ_CHECK(asks.size() <= books.depth());
        if (!seq.instruments().state(id).seen) {
            FUZZ_CHECK(bids.empty());
            FUZZ_CHECK(asks.empty());
        }
        for (std::size_t i = 0; i < bids.size(); ++i) {
            FUZZ_CHECK(bids[i].qty != 0);
            if (i > 0) FUZZ_CHECK(bids[i - 1].price > bids[i].price);
        }
        for (std::size_t i = 0; i < asks.size(); ++i) {
            FUZZ_CHECK(asks[i].qty != 0);
            if (i > 0) FUZZ_CHECK(asks[i - 1].price < asks[i].price);
        }
    }
}

// seen_ids: unique, in range, each marked seen; every seen id listed.
inline void check_seen(const Handler& seq) {
    const auto ids = seq.instruments().seen_ids();
    FUZZ_CHECK(ids.size() <= seq.instruments().max_instruments());
    std::uint64_t mask[64] = {};  // max_instruments <= 4096 in the fuzz targets
    FUZZ_CHECK(seq.instruments().max_instruments() <= 4096);
    for (const std::uint32_t id : ids) {
        FUZZ_CHECK(id < seq.instruments().max_instruments());
        FUZZ_CHECK(seq.instruments().state(id).seen);
        FUZZ_CHECK((mask[id / 64] >> (id % 64) & 1) == 0);
        mask[id / 64] |= std::uint64_t{1} << (id % 64);
    }
    for (std::uint32_t id = 0; id < seq.instruments().max_instruments(); ++id)
        if (seq.instruments().state(id).seen) FUZZ_CHECK((mask[id / 64] >> (id % 64) & 1) != 0);
}

// The gate's answer agrees with the state it reads.
inline void check_gate(const Handler& h, std::uint32_t id, std::int64_t now_ns) {
    const GateDecision d = h.gate().check(id, now_ns);
    if (id >= h.instruments().max_instruments() || !h.instruments().state(id).seen) {
        FUZZ_CHECK(d.reason == GateReason::kUnknown);
        return;
    }
    const InstrumentState& st = h.instruments().state(id);
    if (d.ok()) {
        FUZZ_CHECK(!st.suspect);
        FUZZ_CHECK(st.has_source);
    }
    if (st.suspect) FUZZ_CHECK(!d.ok());
    FUZZ_CHECK(d.reason != GateReason::kUnknown);
}

struct DecoderSnapshot {
    std::uint64_t packets, messages, malformed, unknown, stale_session, session_changes;
};

inline DecoderSnapshot snapshot(const qfb1::DecoderCounters& c) {
    return {c.packets.get(),        c.messages.get(),      c.malformed_packets.get(),
            c.unknown_messages.get(), c.stale_session_packets.get(), c.session_changes.get()};
}

// Counters are monotonic and move as the DecodeResult says.
inline void check_decoder_step(const DecoderSnapshot& b, const DecoderSnapshot& a, const qfb1::DecodeResult& r,
                               std::span<const std::byte> d) {
    FUZZ_CHECK(a.packets == b.packets + 1);
    FUZZ_CHECK(a.messages >= b.messages);
    FUZZ_CHECK(a.malformed >= b.malformed);
    FUZZ_CHECK(a.unknown >= b.unknown);
    FUZZ_CHECK(a.stale_session >= b.stale_session);
    FUZZ_CHECK(a.session_changes >= b.session_changes);
    FUZZ_CHECK(a.messages - b.messages == r.messages);
    FUZZ_CHECK(a.unknown - b.unknown <= r.messages);
    FUZZ_CHECK(a.session_changes - b.session_changes <= 1);
    switch (r.verdict) {
        case qfb1::PacketVerdict::kDecoded:
            FUZZ_CHECK(r.fault == qfb1::Fault::kNone);
            FUZZ_CHECK(a.malformed == b.malformed && a.stale_session == b.stale_session);
            FUZZ_CHECK(d.size() >= qfb1::kPacketHeaderSize);
            FUZZ_CHECK(r.messages == qfb1::PacketHeaderView(d).msg_count());
            break;
        case qfb1::PacketVerdict::kMalformed:
            FUZZ_CHECK(r.fault != qfb1::Fault::kNone);
            FUZZ_CHECK(a.malformed == b.malformed + 1 && a.stale_session == b.stale_session);
            if (d.size() >= qfb1::kPacketHeaderSize)
                FUZZ_CHECK(r.messages <= qfb1::PacketHeaderView(d).msg_count());
            else
                FUZZ_CHECK(r.fault == qfb1::Fault::kShortHeader && r.messages == 0);
            break;
        case qfb1::PacketVerdict::kStaleSession:
            FUZZ_CHECK(r.fault == qfb1::Fault::kNone && r.messages == 0);
            FUZZ_CHECK(a.stale_session == b.stale_session + 1 && a.malformed == b.malformed);
            break;
        default:
            FUZZ_CHECK(false);
    }
}

}  // namespace tickgate::fuzz
