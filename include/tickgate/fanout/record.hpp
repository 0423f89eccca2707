// The fan-out's wire record (issue 27), version 1: one instrument's state as
// the handler published it — book top levels, the pre-trade gate's verdict,
// times and a per-instrument publication sequence. Every record is the whole
// published state of its instrument (not a delta), so the newest one
// received is the instrument's state and a lost one is repaired by any later
// one or by the stream's last value (the snapshot).
//
// Layout (little-endian, no padding; README "Fan-out" repeats it):
//
//   off size field
//     0   4  magic        "TGFO" (0x54 0x47 0x46 0x4F)
//     4   1  version      1; a reader refuses other versions (counted)
//     5   1  flags        bit 0: resync (republished after a (re)connect, not a change)
//                         bit 1: book_changed (this update changed the book)
//                         bit 2: heartbeat (the publisher is alive; no instrument:
//                                instrument 0xFFFFFFFF, no levels, seq counts the
//                                session's heartbeats, source_ns = the interval in ns)
//                         other bits 0
//     6   1  verdict      GateReason (gate.hpp) at publication: 0 ok, 1 unknown,
//                         2 stale, 3 stale_at_source, 4 suspect, 5 not_subscribed
//     7   1  suspect_why  SuspectReason (instruments.hpp): 0 none .. 5 incomplete
//     8   8  session      the publisher's session id (its start time, Unix ns):
//                         a larger one is a new stream, a smaller one a stale publisher
//    16   8  seq          per instrument and session, from 1, +1 per publication
//    24   4  instrument   the handler's dense instrument id
//    28   2  channel      its channel id
//    30   1  exponent     price exponent (int8): price = raw * 10^exponent
//    31   1  reserved     0
//    32   8  source_ns    venue time of the instrument's last price (0: none)
//    40   8  recv_ns      arrival time of the last event applied (handler clock)
//    48   8  publish_ns   when the publisher encoded this record (handler clock)
//    56  16  symbol       NUL-padded ASCII
//    72   1  n_bids       0..kMaxDepth
//    73   1  n_asks       0..kMaxDepth
//    74   2  reserved     0
//    76  12  levels[]     n_bids bids, best first, then n_asks asks, best first:
//                         {int64 price (raw), uint32 qty}
//
// Size = 76 + 12 * (n_bids + n_asks) exactly; anything else is malformed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "tickgate/book/book.hpp"
#include "tickgate/book/gate.hpp"
#include "tickgate/endian.hpp"
#include "tickgate/feed/instruments.hpp"

namespace tickgate::fanout {

inline constexpr std::uint32_t kMagic = 0x4F464754;  // "TGFO" read little-endian
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 76;
inline constexpr std::size_t kLevelBytes = 12;
inline constexpr std::uint32_t kMaxDepth = 32;  // levels per side ([fanout] depth)
inline constexpr std::size_t kMaxRecordBytes = kHeaderBytes + 2 * kMaxDepth * kLevelBytes;

inline constexpr std::uint8_t kFlagResync = 1;
inline constexpr std::uint8_t kFlagBookChanged = 2;
inline constexpr std::uint8_t kFlagHeartbeat = 4;
// A heartbeat's subject is PREFIX.VENUE.heartbeat: three tokens, an
// instrument's four (PREFIX.VENUE.CHANNEL.SYMBOL), so none can collide.
inline constexpr std::string_view kHeartbeatToken = "heartbeat";
inline constexpr std::uint32_t kNoInstrument = 0xFFFFFFFF;

// A decoded (or to-be-encoded) record. Trivially copyable: the publisher's
// per-instrument cells hold one.
struct Record {
    std::uint8_t flags = 0;
    GateReason verdict = GateReason::kUnknown;
    SuspectReason suspect_why = SuspectReason::kNone;
    std::uint64_t session = 0;
    std::uint64_t seq = 0;
    std::uint32_t instrument = 0;
    std::uint16_t channel = 0;
    std::int8_t exponent = 0;
    std::int64_t source_ns = 0;
    std::int64_t recv_ns = 0;
    std::int64_t publish_ns = 0;
    char symbol[16] = {};
    std::uint8_t n_bids = 0;
    std::uint8_t n_asks = 0;
    Level bids[kMaxDepth] = {};
    Level asks[kMaxDepth] = {};

    [[nodiscard]] std::string_view symbol_view() const noexcept {
        return {symbol, static_cast<std::size_t>(std::find(symbol, symbol + sizeof symbol, '\0') - symbol)};
    }
    [[nodiscard]] bool heartbeat() const noexcept { return (flags & kFlagHeartbeat) != 0; }
    [[nodiscard]] std::size_t wire_bytes() const noexcept {
        return kHeaderBytes + kLevelBytes * (std::size_t{n_bids} + n_asks);
    }
};

enum class ReadError : std::uint8_t {
    kNone,
    kShort,        // shorter than the header
    kBadMagic,
    kBadVersion,   // another version of the layout
    kBadField,     // a flag, verdict, reason or reserved byte out of range
    kBadDepth,     // n_bids or n_asks above kMaxDepth
    kBadLength,    // size is not 76 + 12 * (n_bids + n_asks)
};
// "short", "bad_magic", "bad_version", "bad_field", "bad_depth", "bad_length"; "" for kNone.
[[nodiscard]] constexpr std::string_view to_string(ReadError e) noexcept {
    constexpr std::string_view kNames[] = {"", "short", "bad_magic", "bad_version", "bad_field", "bad_depth", "bad_length"};
    return kNames[static_cast<std::size_t>(e)];
}

// Writes `r` into `out` (at least r.wire_bytes(), n_bids/n_asks <= kMaxDepth);
// returns the bytes written. Any thread; no allocation.
inline std::size_t write_record(const Record& r, std::span<std::byte> out) noexcept {
    std::byte* p = out.data();
    store_le<std::uint32_t>(p + 0, kMagic);
    p[4] = std::byte{kVersion};
    p[5] = std::byte{r.flags};
    p[6] = static_cast<std::byte>(r.verdict);
    p[7] = static_cast<std::byte>(r.suspect_why);
    store_le<std::uint64_t>(p + 8, r.session);
    store_le<std::uint64_t>(p + 16, r.seq);
    store_le<std::uint32_t>(p + 24, r.instrument);
    store_le<std::uint16_t>(p + 28, r.channel);
    p[30] = static_cast<std::byte>(r.exponent);
    p[31] = std::byte{0};
    store_le<std::int64_t>(p + 32, r.source_ns);
    store_le<std::int64_t>(p + 40, r.recv_ns);
    store_le<std::int64_t>(p + 48, r.publish_ns);
    std::memcpy(p + 56, r.symbol, 16);
    p[72] = std::byte{r.n_bids};
    p[73] = std::byte{r.n_asks};
    p[74] = p[75] = std::byte{0};
    std::byte* l = p + kHeaderBytes;
    for (std::size_t i = 0; i < r.n_bids; ++i, l += kLevelBytes) {
        store_le<std::int64_t>(l, r.bids[i].price);
        store_le<std::uint32_t>(l + 8, r.bids[i].qty);
    }
    for (std::size_t i = 0; i < r.n_asks; ++i, l += kLevelBytes) {
        store_le<std::int64_t>(l, r.asks[i].price);
        store_le<std::uint32_t>(l + 8, r.asks[i].qty);
    }
    return static_cast<std::size_t>(l - p);
}

// Reads a record from `in` into `out`; kNone when well formed (then every
// field of `out` is set), otherwise why not (`out` partly written). Any
// bytes are safe to give it. Any thread; no allocation.
[[nodiscard]] inline ReadError read_record(std::span<const std::byte> in, Record& out) noexcept {
    if (in.size() < kHeaderBytes) return ReadError::kShort;
    const std::byte* p = in.data();
    if (load_le<std::uint32_t>(p) != kMagic) return ReadError::kBadMagic;
    if (std::to_integer<std::uint8_t>(p[4]) != kVersion) return ReadError::kBadVersion;
    const auto flags = std::to_integer<std::uint8_t>(p[5]);
    const auto verdict = std::to_integer<std::uint8_t>(p[6]);
    const auto why = std::to_integer<std::uint8_t>(p[7]);
    if ((flags & ~(kFlagResync | kFlagBookChanged | kFlagHeartbeat)) != 0 ||
        verdict > static_cast<std::uint8_t>(GateReason::kNotSubscribed) ||
        why > static_cast<std::uint8_t>(SuspectReason::kIncomplete) || p[31] != std::byte{0} || p[74] != std::byte{0} ||
        p[75] != std::byte{0})
        return ReadError::kBadField;
    const auto n_bids = std::to_integer<std::uint8_t>(p[72]);
    const auto n_asks = std::to_integer<std::uint8_t>(p[73]);
    if (n_bids > kMaxDepth || n_asks > kMaxDepth) return ReadError::kBadDepth;
    if (in.size() != kHeaderBytes + kLevelBytes * (std::size_t{n_bids} + n_asks)) return ReadError::kBadLength;
    out.flags = flags;
    out.verdict = static_cast<GateReason>(verdict);
    out.suspect_why = static_cast<SuspectReason>(why);
    out.session = load_le<std::uint64_t>(p + 8);
    out.seq = load_le<std::uint64_t>(p + 16);
    out.instrument = load_le<std::uint32_t>(p + 24);
    out.channel = load_le<std::uint16_t>(p + 28);
    out.exponent = static_cast<std::int8_t>(std::to_integer<std::uint8_t>(p[30]));
    out.source_ns = load_le<std::int64_t>(p + 32);
    out.recv_ns = load_le<std::int64_t>(p + 40);
    out.publish_ns = load_le<std::int64_t>(p + 48);
    std::memcpy(out.symbol, p + 56, 16);
    out.n_bids = n_bids;
    out.n_asks = n_asks;
    const std::byte* l = p + kHeaderBytes;
    for (std::size_t i = 0; i < n_bids; ++i, l += kLevelBytes)
        out.bids[i] = {load_le<std::int64_t>(l), load_le<std::uint32_t>(l + 8)};
    for (std::size_t i = 0; i < n_asks; ++i, l += kLevelBytes)
        out.asks[i] = {load_le<std::int64_t>(l), load_le<std::uint32_t>(l + 8)};
    return ReadError::kNone;
}

// Appends `token` to `subject` as one NATS subject token: bytes outside
// [A-Za-z0-9_-] (the separators '.', the wildcards '*' '>', spaces, '%')
// become %XX (upper-case hex), so any symbol is one token and the mapping is
// reversible. Publisher and consumer threads (allocates: not for the engine).
inline void append_subject_token(std::string& subject, std::string_view token) {
    constexpr char kHex[] = "0123456789ABCDEF";
    for (const char c : token) {
        const auto u = static_cast<unsigned char>(c);
        if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '_' || u == '-') {
            subject += c;
        } else {
            subject += '%';
            subject += kHex[u >> 4];
            subject += kHex[u & 15];
        }
    }
}

// PREFIX.VENUE.CHANNEL.SYMBOL for an instrument: `prefix` as configured
// (already dot-separated valid tokens), the others escaped; an instrument
// without a symbol is "#ID" (escaped "%23ID", which no symbol escapes to).
[[nodiscard]] inline std::string subject_for(std::string_view prefix, std::string_view venue, std::uint16_t channel,
                                             std::string_view symbol, std::uint32_t instrument) {
    std::string s(prefix);
    s += '.';
    append_subject_token(s, venue);
    s += '.';
    s += std::to_string(channel);
    s += '.';
    if (symbol.empty()) {
        s += "%23";  // '#', escaped
        s += std::to_string(instrument);
    } else {
        append_subject_token(s, symbol);
    }
    return s;
}

}  // namespace tickgate::fanout
