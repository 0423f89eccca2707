// The QFB/1 decoder: one datagram, whose header the pipeline has read once
// into a Key (protocol.hpp), into normalized Events. One function per
// message type, offsets named in wire.hpp's order. Never reads outside the
// datagram, never allocates or throws. One instance per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "tickgate/event.hpp"
#include "tickgate/feed/qfb1/wire.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate::qfb1 {

using tickgate::DecodeResult;
using tickgate::DecoderCounters;
using tickgate::Fault;
using tickgate::PacketVerdict;

// A QFB/1 packet's stream key: its header, read once per datagram.
struct Key {
    std::uint64_t seq = 0;       // packet_seq
    std::int64_t send_ns = 0;    // send_time_ns
    std::uint32_t session = 0;
    std::uint32_t len = 0;       // datagram length
    std::uint16_t channel = 0;   // the header's channel_id
    std::uint16_t msg_count = 0;
    Fault fault = Fault::kShortHeader;  // kNone: the header was read

    [[nodiscard]] bool valid() const noexcept { return fault == Fault::kNone; }
    [[nodiscard]] std::uint64_t next_seq() const noexcept { return seq + 1; }
    [[nodiscard]] PacketFingerprint fingerprint() const noexcept { return {send_ns, len}; }
};

// Reads the header of `d` (QFB1.md "Packet"); fault says why it cannot be.
[[nodiscard]] inline Key read_key(std::span<const std::byte> d) noexcept {
    Key k;
    k.len = static_cast<std::uint32_t>(d.size());
    if (d.size() < kPacketHeaderSize) return k;
    const PacketHeaderView h(d);
    if (h.magic() != kMagic) {
        k.fault = Fault::kBadMagic;
        return k;
    }
    if (h.version() != kVersion) {
        k.fault = Fault::kBadVersion;
        return k;
    }
    k.seq = h.packet_seq();
    k.send_ns = h.send_time_ns();
    k.session = h.session();
    k.channel = h.channel_id();
    k.msg_count = h.msg_count();
    k.fault = Fault::kNone;
    return k;
}

// Upper bound of the events one datagram of `len` bytes can produce, so a
// producer can reserve ring space for a whole packet before decoding it.
[[nodiscard]] constexpr std::size_t max_events_for(std::size_t len) noexcept { return 1 + len / 8; }

class PacketDecoder {
public:
    // Decodes `d` (whose header `key` holds) and hands each Event to
    // `sink(const Event&)` in wire order. `session` is what the channel
    // table made of the key's session: a stale one is discarded unread, a
    // newer one first emits kSessionChange.
    template <class Sink>
    DecodeResult decode(std::span<const std::byte> d, const Key& key, SessionMark session, std::int64_t recv_ns,
                        std::uint8_t line, Sink&& sink) noexcept;

    [[nodiscard]] const DecoderCounters& counters() const noexcept { return counters_; }
    // Counts a packet that never reached decode() because it could not be
    // read whole (larger than the receiver's slot): a malformed packet.
    void count_malformed_unread() noexcept {
        counters_.packets.add();
        counters_.malformed_packets.add();
    }

private:
    DecodeResult malformed(Fault f, std::uint16_t messages) noexcept {
        counters_.messages.add(messages);
        counters_.malformed_packets.add();
        return {PacketVerdict::kMalformed, f, messages};
    }
    // One message at `m` of `length` bytes (the header checked it fits):
    // fills `ev` and hands it on; kBadLength if its length is not its type's.
    // Inlined into decode()'s loop: a call per message costs ~1 ns.
    template <class Sink>
    [[gnu::always_inline]] Fault message(const std::byte* m, std::size_t length, char type, Event& ev,
                                         Sink& sink) noexcept;
    template <class Sink>
    static Fault snapshot(const std::byte* m, std::size_t length, Event& ev, Sink& sink) noexcept;

    DecoderCounters counters_;
};

template <class Sink>
DecodeResult PacketDecoder::decode(std::span<const std::byte> d, const Key& key, SessionMark session,
                                   std::int64_t recv_ns, std::uint8_t line, Sink&& sink) noexcept {
    counters_.packets.add();
    if (!key.valid()) return malformed(key.fault, 0);
    if (session == SessionMark::kStale) {
        counters_.stale_session_packets.add();
        return {PacketVerdict::kStaleSession, Fault::kNone, 0};
    }
    Event ev;
    ev.recv_ns = recv_ns;
    ev.send_ns = key.send_ns;
    ev.channel_id = key.channel;
    ev.line = line;
    if (session == SessionMark::kNewer) {
        counters_.session_changes.add();
        ev.kind = EventKind::kSessionChange;
        ev.instrument_id = 0;
        ev.u.session.session = key.session;
        sink(static_cast<const Event&>(ev));
    }
    const std::byte* const base = d.data();
    const std::size_t size = d.size();
    const std::uint16_t count = key.msg_count;  // a local: the sink's stores cannot alias it
    std::size_t off = kPacketHeaderSize;
    for (std::uint16_t i = 0; i < count; ++i) {
        if (size - off < kMessageHeaderSize) return malformed(Fault::kTruncatedCount, i);
        const std::byte* m = base + off;
        const std::size_t length = load_le<std::uint16_t>(m + msg::kLength);
        if (length < kMessageHeaderSize) return malformed(Fault::kBadLength, i);
        if (length > size - off) return malformed(Fault::kOverrun, i);
        if (const Fault f = message(m, length, static_cast<char>(load_le<std::uint8_t>(m + msg::kType)), ev, sink);
            f != Fault::kNone)
            return malformed(f, i);
        off += length;
    }
    if (off != size) return malformed(Fault::kTrailingBytes, count);
    counters_.messages.add(count);
    return {PacketVerdict::kDecoded, Fault::kNone, count};
}

template <class Sink>
inline Fault PacketDecoder::message(const std::byte* m, std::size_t length, char type, Event& ev, Sink& sink) noexcept {
    switch (type) {
        case 'Q':
            if (length != kQuoteSize) return Fault::kBadLength;
            ev.kind = EventKind::kQuote;
            ev.instrument_id = load_le<std::uint32_t>(m + msg::kInstrumentId);
            ev.u.quote.seq = load_le<std::uint64_t>(m + msg::kSeq);
            ev.u.quote.source_ns = load_le<std::int64_t>(m + msg::kSourceTimeNs);
            ev.u.quote.bid_px = load_le<std::int64_t>(m + quote::kBidPx);
            ev.u.quote.ask_px = load_le<std::int64_t>(m + quote::kAskPx);
            ev.u.quote.bid_qty = load_le<std::uint32_t>(m + quote::kBidQty);
            ev.u.quote.ask_qty = load_le<std::uint32_t>(m + quote::kAskQty);
            break;
        case 'D':
            if (length != kDeltaSize) return Fault::kBadLength;
            ev.kind = EventKind::kDelta;
            ev.instrument_id = load_le<std::uint32_t>(m + msg::kInstrumentId);
            ev.u.delta.seq = load_le<std::uint64_t>(m + msg::kSeq);
            ev.u.delta.source_ns = load_le<std::int64_t>(m + msg::kSourceTimeNs);
            ev.u.delta.price = load_le<std::int64_t>(m + delta::kPrice);
            ev.u.delta.qty = load_le<std::uint32_t>(m + delta::kQty);
            ev.u.delta.side = load_le<std::uint8_t>(m + delta::kSide);
            ev.u.delta.action = load_le<std::uint8_t>(m + delta::kAction);
            break;
        case 'H':
            if (length != kHeartbeatSize) return Fault::kBadLength;
            ev.kind = EventKind::kHeartbeat;
            ev.instrument_id = load_le<std::uint32_t>(m + msg::kInstrumentId);
            ev.u.heartbeat.next_seq = load_le<std::uint64_t>(m + msg::kSeq);
            ev.u.heartbeat.source_ns = load_le<std::int64_t>(m + msg::kSourceTimeNs);
            break;
        case 'I':
            if (length != kDefinitionSize) return Fault::kBadLength;
            ev.kind = EventKind::kDefinition;
            ev.instrument_id = load_le<std::uint32_t>(m + msg::kInstrumentId);
            std::memcpy(ev.u.definition.symbol, m + definition::kSymbol, sizeof ev.u.definition.symbol);
            ev.u.definition.price_exponent = load_le<std::int8_t>(m + definition::kPriceExponent);
            ev.u.definition.book_depth = 0;
            ev.u.definition.removed = false;
            break;
        case 'S':
            return snapshot(m, length, ev, sink);
        default:
            counters_.unknown_messages.add();
            return Fault::kNone;
    }
    sink(static_cast<const Event&>(ev));
    return Fault::kNone;
}

// An S message: a kSnapshotBegin, then its levels kLevelsPerEvent at a time.
template <class Sink>
Fault PacketDecoder::snapshot(const std::byte* m, std::size_t length, Event& ev, Sink& sink) noexcept {
    if (length < kSnapshotHeaderSize) return Fault::kBadLength;
    const std::uint8_t n_bids = load_le<std::uint8_t>(m + snapshot::kNBids);
    const std::uint8_t n_asks = load_le<std::uint8_t>(m + snapshot::kNAsks);
    const std::size_t n = std::size_t{n_bids} + n_asks;
    if (length != kSnapshotHeaderSize + kSnapshotLevelSize * n) return Fault::kBadLength;
    ev.kind = EventKind::kSnapshotBegin;
    ev.instrument_id = load_le<std::uint32_t>(m + msg::kInstrumentId);
    ev.u.snapshot.seq = load_le<std::uint64_t>(m + msg::kSeq);
    ev.u.snapshot.source_ns = load_le<std::int64_t>(m + msg::kSourceTimeNs);
    ev.u.snapshot.n_bids = n_bids;
    ev.u.snapshot.n_asks = n_asks;
    sink(static_cast<const Event&>(ev));
    ev.kind = EventKind::kSnapshotLevels;
    const std::byte* lv = m + kSnapshotHeaderSize;
    for (std::size_t done = 0; done < n;) {
        std::uint8_t k = 0;
        for (; k < kLevelsPerEvent && done < n; ++k, ++done, lv += kSnapshotLevelSize) {
            ev.u.levels.price[k] = load_le<std::int64_t>(lv + snapshot::kLevelPrice);
            ev.u.levels.qty[k] = load_le<std::uint32_t>(lv + snapshot::kLevelQty);
        }
        ev.u.levels.count = k;
        sink(static_cast<const Event&>(ev));
    }
    return Fault::kNone;
}

}  // namespace tickgate::qfb1
