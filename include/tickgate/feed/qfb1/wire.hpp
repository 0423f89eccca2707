// QFB/1 wire format (shared/spec/QFB1.md): bounds-checked views over a
// datagram and the packet decoder that turns one datagram into Events.
// Little-endian, memcpy loads only; nothing here allocates or throws.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include "tickgate/counter.hpp"
#include "tickgate/endian.hpp"
#include "tickgate/event.hpp"

namespace tickgate::wire {

inline constexpr std::uint16_t kMagic = 0x5146;
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kPacketHeaderSize = 28;
inline constexpr std::size_t kMessageHeaderSize = 4;
inline constexpr std::size_t kMaxDatagram = 1400;

inline constexpr std::size_t kDefinitionSize = 32;
inline constexpr std::size_t kQuoteSize = 48;
inline constexpr std::size_t kDeltaSize = 40;
inline constexpr std::size_t kHeartbeatSize = 24;
inline constexpr std::size_t kSnapshotHeaderSize = 32;
inline constexpr std::size_t kSnapshotLevelSize = 16;

// Byte-order loads/stores are shared by every protocol (endian.hpp).
using tickgate::load_le;
using tickgate::store_le;

// View over the 28-byte packet header. Valid only if `valid()`.
class PacketHeaderView {
public:
    explicit PacketHeaderView(std::span<const std::byte> d) noexcept : d_(d) {}
    [[nodiscard]] bool valid() const noexcept {
        return d_.size() >= kPacketHeaderSize && magic() == kMagic && version() == kVersion;
    }
    [[nodiscard]] std::uint16_t magic() const noexcept { return load_le<std::uint16_t>(d_.data()); }
    [[nodiscard]] std::uint8_t version() const noexcept { return load_le<std::uint8_t>(d_.data() + 2); }
    [[nodiscard]] std::uint16_t msg_count() const noexcept { return load_le<std::uint16_t>(d_.data() + 4); }
    [[nodiscard]] std::uint16_t channel_id() const noexcept { return load_le<std::uint16_t>(d_.data() + 6); }
    [[nodiscard]] std::uint32_t session() const noexcept { return load_le<std::uint32_t>(d_.data() + 8); }
    [[nodiscard]] std::uint64_t packet_seq() const noexcept { return load_le<std::uint64_t>(d_.data() + 12); }
    [[nodiscard]] std::int64_t send_time_ns() const noexcept { return load_le<std::int64_t>(d_.data() + 20); }

private:
    std::span<const std::byte> d_;
};

// Why decoding of a datagram stopped early (kNone: it was well formed).
enum class Fault : std::uint8_t {
    kNone = 0,
    kShortHeader,      // fewer than 28 bytes
    kBadMagic,
    kBadVersion,
    kTruncatedCount,   // ended before msg_count messages
    kOverrun,          // a message runs past the datagram
    kBadLength,        // a known type whose length is not its size, or length < 4
    kTrailingBytes,    // bytes left after msg_count messages
};

enum class PacketVerdict : std::uint8_t {
    kDecoded,          // every message delivered
    kMalformed,        // messages before the fault delivered, counted once
    kStaleSession,     // older session than the channel's newest: discarded unread
};

struct DecodeResult {
    PacketVerdict verdict;
    Fault fault;
    std::uint16_t messages;  // messages delivered to the sink (events may be more)
};

struct DecoderCounters {
    RelaxedCounter packets;
    RelaxedCounter messages;  // messages read (known and unknown types)
    RelaxedCounter malformed_packets;
    RelaxedCounter unknown_messages;
    RelaxedCounter stale_session_packets;
    RelaxedCounter session_changes;
};

// Upper bound of the events one datagram of `len` bytes can produce, so a
// producer can reserve ring space for a whole packet before decoding it.
[[nodiscard]] constexpr std::size_t max_events_for(std::size_t len) noexcept {
    return 1 + len / 8;
}

// Decodes datagrams into Events and keeps the per-channel newest session.
// One instance per receiving thread; not thread-safe; counters readable anywhere.
class PacketDecoder {
public:
    PacketDecoder() : newest_session_(std::make_unique<std::uint64_t[]>(kChannels)) {}
    // What the constructor allocates (estimate_memory in config.hpp).
    [[nodiscard]] static constexpr std::size_t bytes_for() noexcept { return kChannels * sizeof(std::uint64_t); }

    // Decodes `datagram` and hands each Event to `sink(const Event&)` in wire
    // order. Never reads outside `datagram`, never allocates.
    template <class Sink>
    DecodeResult decode(std::span<const std::byte> datagram, std::int64_t recv_ns,
                        std::uint8_t line, Sink&& sink) noexcept;

    [[nodiscard]] const DecoderCounters& counters() const noexcept { return counters_; }
    // Counts a packet that never reached decode() because it could not be
    // read whole (larger than the receiver's slot): a malformed packet.
    void count_malformed_unread() noexcept {
        counters_.packets.add();
        counters_.malformed_packets.add();
    }

private:
    static constexpr std::size_t kChannels = 65536;

    DecodeResult malformed(Fault f, std::uint16_t messages) noexcept {
        counters_.messages.add(messages);
        counters_.malformed_packets.add();
        return {PacketVerdict::kMalformed, f, messages};
    }

    std::unique_ptr<std::uint64_t[]> newest_session_;  // session + 1, 0 = none yet
    DecoderCounters counters_;
};

template <class Sink>
DecodeResult PacketDecoder::decode(std::span<const std::byte> d, std::int64_t recv_ns,
                                   std::uint8_t line, Sink&& sink) noexcept {
    counters_.packets.add();
    if (d.size() < kPacketHeaderSize) return malformed(Fault::kShortHeader, 0);
    const PacketHeaderView hdr(d);
    if (hdr.magic() != kMagic) return malformed(Fault::kBadMagic, 0);
    if (hdr.version() != kVersion) return malformed(Fault::kBadVersion, 0);

    const std::uint16_t channel = hdr.channel_id();
    const std::uint64_t session = std::uint64_t{hdr.session()} + 1;
    std::uint64_t& newest = newest_session_[channel];

    Event ev;
    ev.recv_ns = recv_ns;
    ev.send_ns = hdr.send_time_ns();
    ev.channel_id = channel;
    ev.line = line;

    if (session < newest) {
        counters_.stale_session_packets.add();
        return {PacketVerdict::kStaleSession, Fault::kNone, 0};
    }
    if (session > newest) {
        if (newest != 0) {
            counters_.session_changes.add();
            ev.kind = EventKind::kSessionChange;
            ev.instrument_id = 0;
            ev.u.session.session = hdr.session();
            sink(static_cast<const Event&>(ev));
        }
        newest = session;
    }

    const std::byte* const base = d.data();
    const std::size_t size = d.size();
    const std::uint16_t count = hdr.msg_count();
    std::size_t off = kPacketHeaderSize;
    for (std::uint16_t i = 0; i < count; ++i) {
        if (size - off < kMessageHeaderSize) return malformed(Fault::kTruncatedCount, i);
        const std::byte* m = base + off;
        const std::size_t length = load_le<std::uint16_t>(m);
        const char type = static_cast<char>(load_le<std::uint8_t>(m + 2));
        if (length < kMessageHeaderSize) return malformed(Fault::kBadLength, i);
        if (length > size - off) return malformed(Fault::kOverrun, i);
        switch (type) {
            case 'Q':
                if (length != kQuoteSize) return malformed(Fault::kBadLength, i);
                ev.kind = EventKind::kQuote;
                ev.instrument_id = load_le<std::uint32_t>(m + 4);
                ev.u.quote.seq = load_le<std::uint64_t>(m + 8);
                ev.u.quote.source_ns = load_le<std::int64_t>(m + 16);
                ev.u.quote.bid_px = load_le<std::int64_t>(m + 24);
                ev.u.quote.ask_px = load_le<std::int64_t>(m + 32);
                ev.u.quote.bid_qty = load_le<std::uint32_t>(m + 40);
                ev.u.quote.ask_qty = load_le<std::uint32_t>(m + 44);
                sink(static_cast<const Event&>(ev));
                break;
            case 'D':
                if (length != kDeltaSize) return malformed(Fault::kBadLength, i);
                ev.kind = EventKind::kDelta;
                ev.instrument_id = load_le<std::uint32_t>(m + 4);
                ev.u.delta.seq = load_le<std::uint64_t>(m + 8);
                ev.u.delta.source_ns = load_le<std::int64_t>(m + 16);
                ev.u.delta.price = load_le<std::int64_t>(m + 24);
                ev.u.delta.qty = load_le<std::uint32_t>(m + 32);
                ev.u.delta.side = load_le<std::uint8_t>(m + 36);
                ev.u.delta.action = load_le<std::uint8_t>(m + 37);
                sink(static_cast<const Event&>(ev));
                break;
            case 'H':
                if (length != kHeartbeatSize) return malformed(Fault::kBadLength, i);
                ev.kind = EventKind::kHeartbeat;
                ev.instrument_id = load_le<std::uint32_t>(m + 4);
                ev.u.heartbeat.next_seq = load_le<std::uint64_t>(m + 8);
                ev.u.heartbeat.source_ns = load_le<std::int64_t>(m + 16);
                sink(static_cast<const Event&>(ev));
                break;
            case 'I':
                if (length != kDefinitionSize) return malformed(Fault::kBadLength, i);
                ev.kind = EventKind::kDefinition;
                ev.instrument_id = load_le<std::uint32_t>(m + 4);
                std::memcpy(ev.u.definition.symbol, m + 8, sizeof ev.u.definition.symbol);
                ev.u.definition.price_exponent = load_le<std::int8_t>(m + 24);
                sink(static_cast<const Event&>(ev));
                break;
            case 'S': {
                if (length < kSnapshotHeaderSize) return malformed(Fault::kBadLength, i);
                const std::uint8_t n_bids = load_le<std::uint8_t>(m + 24);
                const std::uint8_t n_asks = load_le<std::uint8_t>(m + 25);
                const std::size_t n = std::size_t{n_bids} + n_asks;
                if (length != kSnapshotHeaderSize + kSnapshotLevelSize * n)
                    return malformed(Fault::kBadLength, i);
                ev.kind = EventKind::kSnapshotBegin;
                ev.instrument_id = load_le<std::uint32_t>(m + 4);
                ev.u.snapshot.seq = load_le<std::uint64_t>(m + 8);
                ev.u.snapshot.source_ns = load_le<std::int64_t>(m + 16);
                ev.u.snapshot.n_bids = n_bids;
                ev.u.snapshot.n_asks = n_asks;
                sink(static_cast<const Event&>(ev));
                ev.kind = EventKind::kSnapshotLevels;
                const std::byte* lv = m + kSnapshotHeaderSize;
                for (std::size_t done = 0; done < n;) {
                    std::uint8_t k = 0;
                    for (; k < kLevelsPerEvent && done < n; ++k, ++done, lv += kSnapshotLevelSize) {
                        ev.u.levels.price[k] = load_le<std::int64_t>(lv);
                        ev.u.levels.qty[k] = load_le<std::uint32_t>(lv + 8);
                    }
                    ev.u.levels.count = k;
                    sink(static_cast<const Event&>(ev));
                }
                break;
            }
            default:
                counters_.unknown_messages.add();
                break;
        }
        off += length;
    }
    if (off != size) return malformed(Fault::kTrailingBytes, count);
    counters_.messages.add(count);
    return {PacketVerdict::kDecoded, Fault::kNone, count};
}

}  // namespace tickgate::wire
