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
// counting packets, messages read and malformed packets (unknown types are
// counted by the stream, once per position, when applied).
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
            [&](std::uint16_t i, std::span<const std::byte> m) { sink(decode_message(m, first + i)); });
        counters_.messages.add(w.received);
        const bool bad = w.fault != Fault::kNone;
        if (bad) counters_.malformed_packets.add();
        return {w, bad};
    }

    [[nodiscard]] const DecoderCounters& counters() const noexcept { return counters_; }

private:
    DecoderCounters counters_;
};

}  // namespace tickgate::itch50
