// Normalized event: the one record that crosses from the decoder (network
// thread) to the sequencer (engine thread). Trivially copyable, one cache line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tickgate {

// QFB1.md rule 6: a sequence number this far ahead of the last known one is
// corrupt or forged, not a gap. Only a snapshot or a session change moves an
// instrument that far; the arbiter applies the same bound to packet_seq.
inline constexpr std::uint64_t kImplausibleSeqJump = 1'000'000'000;

enum class EventKind : std::uint8_t {
    kQuote = 1,          // Q: full top of book
    kDelta,              // D: one price level
    kSnapshotBegin,      // S header; followed by ceil((n_bids+n_asks)/3) kSnapshotLevels
    kSnapshotLevels,     // up to kLevelsPerEvent snapshot levels
    kHeartbeat,          // H
    kDefinition,         // I
    kSessionChange,      // a newer session started on `channel`: reset its instruments
    kDataLost,           // the transport dropped this instrument's data (ring overflow)
    // From here on, kinds a protocol defines for itself (venue_kind(n), in
    // its folder), carried in u.venue and handled by its rules
    // (SequencingRules::is_hot / is_channel_event) and its book.
    kVenue = 32,
};
inline constexpr int kVenueKinds = 32;
// A protocol's own kind number `n` (0 <= n < kVenueKinds).
[[nodiscard]] constexpr EventKind venue_kind(int n) noexcept {
    return static_cast<EventKind>(static_cast<int>(EventKind::kVenue) + n);
}

struct SnapshotLevel {
    std::int64_t price;
    std::uint32_t qty;
};

inline constexpr int kLevelsPerEvent = 3;

struct alignas(64) Event {
    std::int64_t recv_ns;        // arrival time (kernel timestamp or capture time)
    std::int64_t send_ns;        // packet send_time_ns (publisher clock)
    std::uint32_t instrument_id;
    std::uint16_t channel_id;
    EventKind kind;
    std::uint8_t line;           // 0 = A, 1 = B, 0xFF = unknown
    union {
        struct {
            std::uint64_t seq;
            std::int64_t source_ns;
            std::int64_t bid_px;
            std::int64_t ask_px;
            std::uint32_t bid_qty;
            std::uint32_t ask_qty;
        } quote;
        struct {
            std::uint64_t seq;
            std::int64_t source_ns;
            std::int64_t price;
            std::uint32_t qty;
            std::uint8_t side;    // 0 bid, 1 ask
            std::uint8_t action;  // 0 set, 1 delete
        } delta;
        struct {
            std::uint64_t seq;
            std::int64_t source_ns;
            std::uint8_t n_bids;
            std::uint8_t n_asks;
            std::int8_t price_exponent;  // of the snapshot's prices, where its protocol's rules take it (on_snapshot_begin)
        } snapshot;
        struct {
            std::int64_t price[kLevelsPerEvent];
            std::uint32_t qty[kLevelsPerEvent];
            std::uint8_t count;
        } levels;
        struct {
            std::uint64_t next_seq;
            std::int64_t source_ns;
        } heartbeat;
        struct {
            char symbol[16];
            std::int8_t price_exponent;
            std::uint8_t book_depth;  // the depth the venue publishes, where it says (rules' on_definition); 0 = not given
            bool removed;             // the venue deleted the instrument
        } definition;
        // A protocol's own kind: a sequenced one's sequence number and source
        // time where every sequenced kind has them (the recovery pool replays
        // by them), then the protocol's fields (its folder reads and writes them).
        struct {
            std::uint64_t seq;
            std::int64_t source_ns;
            alignas(8) std::byte data[24];
        } venue;
        struct {
            std::uint32_t session;
        } session;
    } u;
};

// Sequence number and source time of a sequenced event (the kinds the
// recovery pool keeps and replays): the same fields whatever the kind.
[[nodiscard]] inline std::uint64_t sequenced_seq(const Event& ev) noexcept {
    switch (ev.kind) {
        case EventKind::kQuote: return ev.u.quote.seq;
        case EventKind::kSnapshotBegin: return ev.u.snapshot.seq;
        default: return ev.u.delta.seq;
    }
}
[[nodiscard]] inline std::int64_t sequenced_source_ns(const Event& ev) noexcept {
    switch (ev.kind) {
        case EventKind::kQuote: return ev.u.quote.source_ns;
        case EventKind::kSnapshotBegin: return ev.u.snapshot.source_ns;
        default: return ev.u.delta.source_ns;
    }
}

static_assert(sizeof(Event) == 64, "an event is one cache line");
static_assert(alignof(Event) == 64);
static_assert(std::is_trivially_copyable_v<Event>);
// sequenced_seq / sequenced_source_ns read a protocol's own kinds through u.delta.
static_assert(offsetof(Event, u.venue.seq) == offsetof(Event, u.delta.seq));
static_assert(offsetof(Event, u.venue.source_ns) == offsetof(Event, u.delta.source_ns));

// A protocol's fields in u.venue.data: P a trivially copyable struct of at
// most 24 bytes. Copies (compiled to plain loads and stores), so no
// aliasing rule is bent.
template <class P>
[[nodiscard]] inline P venue_fields(const Event& ev) noexcept {
    static_assert(std::is_trivially_copyable_v<P> && sizeof(P) <= sizeof ev.u.venue.data);
    P p;
    std::memcpy(&p, ev.u.venue.data, sizeof p);
    return p;
}
// One field of them, `T` at byte `Offset` (offsetof(P, field)), read alone.
// Read right after the decoder wrote the fields, a whole-struct copy comes in
// loads wider than its stores, which the store buffer cannot forward.
template <class T, std::size_t Offset>
[[nodiscard]] inline T venue_field(const Event& ev) noexcept {
    static_assert(std::is_trivially_copyable_v<T> && Offset + sizeof(T) <= sizeof ev.u.venue.data);
    T v;
    std::memcpy(&v, ev.u.venue.data + Offset, sizeof v);
    return v;
}
// One field of them written alone: what a decoder sets once for many
// events (a message's constants) is not written again with each.
template <class T, std::size_t Offset>
inline void set_venue_field(Event& ev, T v) noexcept {
    static_assert(std::is_trivially_copyable_v<T> && Offset + sizeof(T) <= sizeof ev.u.venue.data);
    std::memcpy(ev.u.venue.data + Offset, &v, sizeof v);
}
template <class P>
inline void set_venue_fields(Event& ev, const P& p) noexcept {
    static_assert(std::is_trivially_copyable_v<P> && sizeof(P) <= sizeof ev.u.venue.data);
    std::memcpy(ev.u.venue.data, &p, sizeof p);
}

}  // namespace tickgate
