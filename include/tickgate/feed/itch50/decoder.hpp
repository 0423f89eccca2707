// ITCH 5.0 over MoldUDP64: one datagram (its header read once into a
// moldudp64::Key) into normalized order messages, one per received message
// with its stream position. Unlike QFB/1 the book is order by order and the
// sequence numbers belong to the stream, so what leaves the decoder is an
// OrderMessage (the order book's input), not an Event. Never reads outside
// the datagram, never allocates or throws. One instance per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "tickgate/feed/itch50/wire.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/moldudp64/wire.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate::itch50 {

// What a message does (ITCH50.md "ITCH 5.0 messages and the book").
enum class Action : std::uint8_t {
    kNoBookChange,    // a known type that changes no book (P, Q, B, I, N, O, Y, L, V, W, K, J, h)
    kUnknownType,     // not an ITCH 5.0 type: skipped by length, counted when applied
    kSystemEvent,     // S: `code` is the event code
    kStockDirectory,  // R: `symbol`
    kTradingAction,   // H: `code` is the trading state
    kAdd,             // A, F: order_ref, side, shares, price
    kExecute,         // E, C: order_ref, shares (executed)
    kCancel,          // X: order_ref, shares (cancelled)
    kDelete,          // D: order_ref
    kReplace,         // U: order_ref (original), new_order_ref, shares, price
};

// One received message, normalized; `position` is its stream sequence number.
struct OrderMessage {
    std::uint64_t position;
    std::uint64_t order_ref;
    std::uint64_t new_order_ref;
    std::int64_t timestamp_ns;  // ns since midnight, venue time
    std::uint32_t shares;
    std::uint32_t price;        // 4 implied decimals
    std::uint16_t stock_locate;
    Action action;
    char type;
    char side;                  // 'B' or 'S' (adds only)
    char code;                  // S event code, H trading state
    char symbol[kSymbolSize];   // R, A and F (the stock), space padded as on the wire
};

// Normalizes message `m` (at least min_length(m[0]) bytes: moldudp64::walk's check).
[[nodiscard]] inline OrderMessage decode_message(std::span<const std::byte> m, std::uint64_t position) noexcept {
    OrderMessage o{};
    o.position = position;
    o.type = static_cast<char>(m[0]);
    if (!is_known(static_cast<std::uint8_t>(m[0]))) {
        o.action = Action::kUnknownType;
        return o;
    }
    const MessageView v(m);
    o.stock_locate = v.stock_locate();
    o.timestamp_ns = v.timestamp_ns();
    switch (o.type) {
        case 'S':
            o.action = Action::kSystemEvent;
            o.code = SystemEventView(m).event_code();
            break;
        case 'R':
            o.action = Action::kStockDirectory;
            std::memcpy(o.symbol, StockDirectoryView(m).stock().data(), kSymbolSize);
            break;
        case 'H':
            o.action = Action::kTradingAction;
            o.code = TradingActionView(m).trading_state();
            break;
        case 'A':
        case 'F': {
            const AddOrderView a(m);
            o.action = Action::kAdd;
            std::memcpy(o.symbol, a.stock().data(), kSymbolSize);
            o.order_ref = a.order_ref();
            o.side = a.side();
            o.shares = a.shares();
            o.price = a.price();
            break;
        }
        case 'E':
        case 'C': {
            const ExecutedView e(m);
            o.action = Action::kExecute;
            o.order_ref = e.order_ref();
            o.shares = e.executed_shares();
            break;
        }
        case 'X': {
            const CancelView x(m);
            o.action = Action::kCancel;
            o.order_ref = x.order_ref();
            o.shares = x.cancelled_shares();
            break;
        }
        case 'D':
            o.action = Action::kDelete;
            o.order_ref = DeleteView(m).order_ref();
            break;
        case 'U': {
            const ReplaceView u(m);
            o.action = Action::kReplace;
            o.order_ref = u.original_order_ref();
            o.new_order_ref = u.new_order_ref();
            o.shares = u.shares();
            o.price = u.price();
            break;
        }
        default:
            o.action = Action::kNoBookChange;
            break;
    }
    return o;
}

// ---- normalized events (event.hpp's u.venue): what the stream stage hands
// the sequencer, whose ITCH rules (rules.hpp) apply them. u.venue.seq is the
// stream position, u.venue.source_ns the message's timestamp (ns since
// midnight, venue time); instrument_id is instrument_id(channel slot,
// locate) and channel_id the channel slot.

enum class Kind : std::uint8_t {
    // Per instrument (a nonzero locate): the order actions and what names or states a stock.
    kAddBid,          // A, F buying: AddFields
    kAddAsk,          // A, F selling: AddFields
    kReduce,          // E, C, X: ReduceFields (shares executed or cancelled)
    kDelete,          // D: ReduceFields (shares 0)
    kReplace,         // U: ReplaceFields
    kDirectory,       // R: AddFields' symbol
    kTradingAction,   // H: CodeFields (the trading state)
    kStockMessage,    // any other known type with a locate: CodeFields (S: its code)
    // Per channel (instrument_id: instrument_id(slot, 0)).
    kChannelMessage,  // a known type with locate 0: CodeFields (S: its code)
    kUnknownMessage,  // not an ITCH 5.0 type: counted once per position
    kSessionStarted,  // CodeFields: code 1 when it replaces another session
    kLateJoin,        // positions before the first were never ours
    kGaveUp,          // a hole given up: the channel is suspect
    kAlive,           // a packet applied or a heartbeat, no hole open or given up
    kSnapshotReplace, // a GLIMPSE snapshot replaces the channel's books (its messages follow)
};
[[nodiscard]] constexpr EventKind event_kind(Kind k) noexcept { return venue_kind(static_cast<int>(k)); }
// An ITCH event's Kind (only for the kinds event_kind() makes).
[[nodiscard]] constexpr Kind kind_of(EventKind k) noexcept {
    return static_cast<Kind>(static_cast<int>(k) - static_cast<int>(EventKind::kVenue));
}
inline constexpr EventKind kAddBid = event_kind(Kind::kAddBid);
inline constexpr EventKind kAddAsk = event_kind(Kind::kAddAsk);
inline constexpr EventKind kReduce = event_kind(Kind::kReduce);
inline constexpr EventKind kDelete = event_kind(Kind::kDelete);
inline constexpr EventKind kReplace = event_kind(Kind::kReplace);
inline constexpr EventKind kDirectory = event_kind(Kind::kDirectory);
inline constexpr EventKind kTradingAction = event_kind(Kind::kTradingAction);
inline constexpr EventKind kStockMessage = event_kind(Kind::kStockMessage);
inline constexpr EventKind kChannelMessage = event_kind(Kind::kChannelMessage);
inline constexpr EventKind kUnknownMessage = event_kind(Kind::kUnknownMessage);
inline constexpr EventKind kSessionStarted = event_kind(Kind::kSessionStarted);
inline constexpr EventKind kLateJoin = event_kind(Kind::kLateJoin);
inline constexpr EventKind kGaveUp = event_kind(Kind::kGaveUp);
inline constexpr EventKind kAlive = event_kind(Kind::kAlive);
inline constexpr EventKind kSnapshotReplace = event_kind(Kind::kSnapshotReplace);

struct AddFields {
    std::uint64_t order_ref;
    std::uint32_t shares;
    std::uint32_t price;  // 4 implied decimals
    char symbol[kSymbolSize];
};
struct ReduceFields {
    std::uint64_t order_ref;
    std::uint32_t shares;
};
struct ReplaceFields {
    std::uint64_t order_ref;      // the original
    std::uint64_t new_order_ref;
    std::uint32_t shares;
    std::uint32_t price;
};
struct CodeFields {
    char code;
    char type;  // the ITCH message type
};
class SnapshotStorage;  // snapshot.hpp
// kSnapshotReplace: the spin that replaces the channel's books (null: the
// books are only emptied) and `M`'s position N, the spin's messages
// standing at N - 1.
struct SnapshotFields {
    const SnapshotStorage* spin;
    std::uint64_t position;
};

// Every u16 stock locate of a channel is an instrument (ITCH50.md "Locates
// and order references are a channel's own"): id = 65,536 × the channel's
// slot + locate, so a single channel's ids are its locates.
inline constexpr std::uint32_t kMaxLocates = 65536;
inline constexpr unsigned kLocateBits = 16;
[[nodiscard]] constexpr std::uint32_t instrument_id(std::uint32_t channel, std::uint16_t locate) noexcept {
    return (channel << kLocateBits) | locate;
}
[[nodiscard]] constexpr std::uint16_t locate_of(std::uint32_t id) noexcept { return static_cast<std::uint16_t>(id); }
[[nodiscard]] constexpr std::uint32_t channel_of(std::uint32_t id) noexcept { return id >> kLocateBits; }
// The instrument ids a table needs for `channels` channels (at least one channel's).
[[nodiscard]] constexpr std::uint32_t instrument_ids(std::size_t channels) noexcept {
    return kMaxLocates * static_cast<std::uint32_t>(channels == 0 ? 1 : channels);
}

// A channel-wide event of channel slot `ch`.
[[nodiscard]] inline Event channel_event(EventKind kind, std::uint32_t ch, std::int64_t recv_ns, char code = 0) noexcept {
    Event ev{};
    ev.kind = kind;
    ev.recv_ns = recv_ns;
    ev.instrument_id = instrument_id(ch, 0);
    ev.channel_id = static_cast<std::uint16_t>(ch);
    ev.line = 0xFF;  // the stream merged the lines
    set_venue_fields(ev, CodeFields{code, 0});
    return ev;
}

// The normalized event of message `o` of channel slot `ch`, applied at `recv_ns`.
[[nodiscard]] inline Event to_event(std::uint32_t ch, const OrderMessage& o, std::int64_t recv_ns) noexcept {
    Event ev{};
    ev.recv_ns = recv_ns;
    ev.instrument_id = instrument_id(ch, o.stock_locate);
    ev.channel_id = static_cast<std::uint16_t>(ch);
    ev.line = 0xFF;
    ev.u.venue.seq = o.position;
    ev.u.venue.source_ns = o.timestamp_ns;
    if (o.action == Action::kUnknownType) {
        ev.kind = kUnknownMessage;
        return ev;
    }
    if (o.stock_locate == 0) {  // belongs to no instrument
        ev.kind = kChannelMessage;
        set_venue_fields(ev, CodeFields{o.action == Action::kSystemEvent ? o.code : '\0', o.type});
        return ev;
    }
    switch (o.action) {
        case Action::kAdd: {
            ev.kind = o.side == 'S' ? kAddAsk : kAddBid;
            AddFields a{o.order_ref, o.shares, o.price, {}};
            std::memcpy(a.symbol, o.symbol, kSymbolSize);
            set_venue_fields(ev, a);
            break;
        }
        case Action::kExecute:
        case Action::kCancel:
            ev.kind = kReduce;
            set_venue_fields(ev, ReduceFields{o.order_ref, o.shares});
            break;
        case Action::kDelete:
            ev.kind = kDelete;
            set_venue_fields(ev, ReduceFields{o.order_ref, 0});
            break;
        case Action::kReplace:
            ev.kind = kReplace;
            set_venue_fields(ev, ReplaceFields{o.order_ref, o.new_order_ref, o.shares, o.price});
            break;
        case Action::kStockDirectory: {
            ev.kind = kDirectory;
            AddFields a{};
            std::memcpy(a.symbol, o.symbol, kSymbolSize);
            set_venue_fields(ev, a);
            break;
        }
        case Action::kTradingAction:
            ev.kind = kTradingAction;
            set_venue_fields(ev, CodeFields{o.code, o.type});
            break;
        default:
            ev.kind = kStockMessage;
            set_venue_fields(ev, CodeFields{o.action == Action::kSystemEvent ? o.code : '\0', o.type});
            break;
    }
    return ev;
}

// The same event read once from the wire, built in place: message `m` (at
// least min_length(m[0]) bytes) of channel slot `ch` at stream `position`,
// applied at `recv_ns`. The stream's path; equal to
// to_event(ch, decode_message(m, position), recv_ns) for every type (tested),
// without the OrderMessage between (callgrind: a third of the decode).
[[nodiscard]] [[gnu::always_inline]] inline Event decode_event(std::uint32_t ch, std::span<const std::byte> m,
                                                               std::uint64_t position, std::int64_t recv_ns) noexcept {
    Event ev{};
    ev.recv_ns = recv_ns;
    ev.channel_id = static_cast<std::uint16_t>(ch);
    ev.line = 0xFF;
    ev.u.venue.seq = position;
    const char type = static_cast<char>(m[0]);
    if (!is_known(static_cast<std::uint8_t>(type))) [[unlikely]] {
        ev.instrument_id = instrument_id(ch, 0);
        ev.kind = kUnknownMessage;
        return ev;
    }
    const MessageView v(m);
    const std::uint16_t locate = v.stock_locate();
    ev.instrument_id = instrument_id(ch, locate);
    ev.u.venue.source_ns = v.timestamp_ns();
    if (locate == 0) [[unlikely]] {  // belongs to no instrument
        ev.kind = kChannelMessage;
        set_venue_fields(ev, CodeFields{type == 'S' ? SystemEventView(m).event_code() : '\0', type});
        return ev;
    }
    switch (type) {
        case 'A':
        case 'F': {
            const AddOrderView a(m);
            ev.kind = a.side() == 'S' ? kAddAsk : kAddBid;
            AddFields f{a.order_ref(), a.shares(), a.price(), {}};
            std::memcpy(f.symbol, a.stock().data(), kSymbolSize);
            set_venue_fields(ev, f);
            break;
        }
        case 'E':
        case 'C': {
            const ExecutedView e(m);
            ev.kind = kReduce;
            set_venue_fields(ev, ReduceFields{e.order_ref(), e.executed_shares()});
            break;
        }
        case 'X': {
            const CancelView x(m);
            ev.kind = kReduce;
            set_venue_fields(ev, ReduceFields{x.order_ref(), x.cancelled_shares()});
            break;
        }
        case 'D':
            ev.kind = kDelete;
            set_venue_fields(ev, ReduceFields{DeleteView(m).order_ref(), 0});
            break;
        case 'U': {
            const ReplaceView u(m);
            ev.kind = kReplace;
            set_venue_fields(ev, ReplaceFields{u.original_order_ref(), u.new_order_ref(), u.shares(), u.price()});
            break;
        }
        case 'R': {
            ev.kind = kDirectory;
            AddFields f{};
            std::memcpy(f.symbol, StockDirectoryView(m).stock().data(), kSymbolSize);
            set_venue_fields(ev, f);
            break;
        }
        case 'H':
            ev.kind = kTradingAction;
            set_venue_fields(ev, CodeFields{TradingActionView(m).trading_state(), type});
            break;
        default:
            ev.kind = kStockMessage;
            set_venue_fields(ev, CodeFields{type == 'S' ? SystemEventView(m).event_code() : '\0', type});
            break;
    }
    return ev;
}

// moldudp64::Stream's sink: what the stream decides, in position order,
// normalized into Events for `out(const Event&)` (the sequencer offline and
// inline, the ring on the two-thread path). Each message is read here once
// (decode_event).
// `channel_ids`: the configured channel id of each slot (the events'
// channel_id, the instruments' channel); empty: the slot itself.
template <class Out>
struct StreamEvents {
    Out out;
    std::span<const std::uint16_t> channel_ids{};

    void message(std::uint32_t ch, std::span<const std::byte> m, std::uint64_t position, std::int64_t recv_ns) noexcept {
        emit(ch, decode_event(ch, m, position, recv_ns));
    }
    void session_started(std::uint32_t ch, bool replaces_another) noexcept {
        emit(ch, channel_event(kSessionStarted, ch, 0, replaces_another ? 1 : 0));
    }
    void late_join(std::uint32_t ch, std::uint64_t) noexcept { emit(ch, channel_event(kLateJoin, ch, 0)); }
    void gave_up(std::uint32_t ch, std::uint64_t) noexcept { emit(ch, channel_event(kGaveUp, ch, 0)); }
    void alive(std::uint32_t ch, std::int64_t recv_ns) noexcept { emit(ch, channel_event(kAlive, ch, recv_ns)); }
    // A GLIMPSE snapshot replaces channel `ch`'s books and orders with `spin`
    // (the engine reads it when it applies the event, then marks it applied).
    void snapshot_replace(std::uint32_t ch, const SnapshotStorage* spin, std::uint64_t position,
                          std::int64_t recv_ns) noexcept {
        Event ev = channel_event(kSnapshotReplace, ch, recv_ns);
        set_venue_fields(ev, SnapshotFields{spin, position});
        emit(ch, ev);
    }

private:
    void emit(std::uint32_t ch, const Event& normalized) noexcept {
        Event ev = normalized;  // inlined: built once, in place
        if (ch < channel_ids.size()) ev.channel_id = channel_ids[ch];
        out(ev);
    }
};

// The most Events a datagram of `len` bytes becomes: a message per 3-byte
// block at most (an unknown type's block: its length, its type byte), and
// the stream's decisions about it (a session start, a late join, alive).
[[nodiscard]] constexpr std::size_t max_events_for(std::size_t len) noexcept {
    return (len > moldudp64::kHeaderSize ? (len - moldudp64::kHeaderSize) / (moldudp64::kBlockHeaderSize + 1) : 0) + 3;
}

// ITCH 5.0 as the payload of moldudp64::Stream: the smallest length of each type.
struct MoldPayload {
    [[nodiscard]] static std::size_t min_length(std::uint8_t type) noexcept { return itch50::min_length(type); }
};

// What one datagram held (after its key).
struct PacketDecode {
    moldudp64::Walk walk;    // messages received from key.seq, and the fault if any
    bool malformed;          // counted once in malformed_packets
};

// Walks MoldUDP64 datagrams and hands each received ITCH message to a sink,
// counting packets, messages read, types ITCH 5.0 does not define and
// malformed packets. Outside the stream (protocol detection, tests): the
// pipelines count unknown types once per position, when applied.
class PacketDecoder {
public:
    // Decodes `d` (header `key`): sink(const OrderMessage&) for each message
    // received, in order. A short datagram is malformed with nothing received;
    // a re-request is skipped (not malformed).
    template <class Sink>
    [[gnu::always_inline]] PacketDecode decode(std::span<const std::byte> d, const moldudp64::Key& key,
                                               Sink&& sink) noexcept {
        counters_.packets.add();
        if (!key.valid()) {
            counters_.malformed_packets.add();
            return {{0, Fault::kShortHeader}, true};
        }
        const std::uint64_t first = key.seq;
        const moldudp64::Walk w = moldudp64::walk(
            d, key, [](std::uint8_t type) noexcept { return min_length(type); },
            [&](std::uint16_t i, std::span<const std::byte> m) {
                if (!is_known(static_cast<std::uint8_t>(m[0]))) counters_.unknown_messages.add();
                sink(decode_message(m, first + i));
            });
        counters_.messages.add(w.received);
        const bool bad = w.fault != Fault::kNone;
        if (bad) counters_.malformed_packets.add();
        return {w, bad};
    }

    [[nodiscard]] const DecoderCounters& counters() const noexcept { return counters_; }
    // A datagram that could not be read whole (larger than a receive slot).
    void count_malformed_unread() noexcept {
        counters_.packets.add();
        counters_.malformed_packets.add();
    }

private:
    DecoderCounters counters_;
};

}  // namespace tickgate::itch50
