// Normalized event: the one record that crosses from the decoder (network
// thread) to the sequencer (engine thread). Trivially copyable, one cache line.
#pragma once

#include <cstddef>
#include <cstdint>
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
    kLevelEntry,         // MDP3 book entry: u.entry (price level L, update action, entry type)
    kSequencedEntry,     // MDP3 trade / statistics / volume / limits entry: sequenced only (u.entry's seq, source_ns)
    kChannelReset,       // MDP3 ChannelReset (4) on `channel`
    kChannelHeartbeat,   // MDP3 heartbeat (12) on `channel`
    kChannelGap,         // MDP3 MsgSeqNum gap on both lines of `channel`: its instruments unconfirmed
};

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
            std::int8_t price_exponent;  // MDP3: of the template's prices (v6 -7, v9 -9)
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
            std::uint8_t book_depth;  // MDP3: the definition's GBX MarketDepth; 0 = not given
            bool removed;             // MDP3: SecurityUpdateAction 'D', the venue deleted the instrument
        } definition;
        struct {
            std::uint64_t seq;        // RptSeq
            std::int64_t source_ns;   // TransactTime
            std::int64_t price;       // wire mantissa
            std::int32_t qty;         // MDEntrySize (0 when null)
            std::int32_t orders;      // NumberOfOrders (0 when null)
            std::uint8_t level;       // MDPriceLevel, 1-based
            std::uint8_t action;      // MDUpdateAction 0..5
            char entry_type;          // MDEntryType: '0' bid, '1' offer, 'J' empty book, ...
            std::int8_t price_exponent;  // of the template's prices (v6 PRICE -7, v9 PRICE9 -9)
        } entry;
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
// sequenced_seq / sequenced_source_ns read an MDP3 entry through u.delta.
static_assert(offsetof(Event, u.entry.seq) == offsetof(Event, u.delta.seq));
static_assert(offsetof(Event, u.entry.source_ns) == offsetof(Event, u.delta.source_ns));

}  // namespace tickgate
