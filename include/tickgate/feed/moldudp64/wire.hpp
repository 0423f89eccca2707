// MoldUDP64 framing (Nasdaq "MoldUDP64 Protocol Specification", version
// 1.00; ../shared/spec/ITCH50.md "MoldUDP64 (facts)"): the 20-byte
// downstream header, read once per datagram into a Key, and the walk over
// its message blocks. Big-endian, memcpy loads only, bounds checked (but
// walk_received, for bytes walk() already accepted); no allocation, no
// throw. The payload (ITCH 5.0 here) is the caller's: the walk asks it only
// for the smallest size of a message type.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "tickgate/endian.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate::moldudp64 {

inline constexpr std::size_t kSessionSize = 10;
inline constexpr std::size_t kHeaderSize = 20;        // session, sequence number, message count
inline constexpr std::size_t kBlockHeaderSize = 2;    // u16 message length
inline constexpr std::size_t kRequestSize = 20;       // a re-request: session, sequence number, count
inline constexpr std::uint16_t kHeartbeatCount = 0;
inline constexpr std::uint16_t kEndOfSessionCount = 0xFFFF;
inline constexpr std::size_t kSessionOffset = 0;
inline constexpr std::size_t kSequenceOffset = 10;
inline constexpr std::size_t kCountOffset = 18;

using Session = std::array<char, kSessionSize>;

// A channel's sessions (ITCH50.md "The stream"): the current one and the
// last kRemembered it had before. Session strings have no order, so one the
// channel has had before is stale and any other one replaces the current
// session. The one rule for both homes of a channel's session: the channel
// table's (itch50::SessionState) and the stream's. No allocation.
class SessionMemory {
public:
    static constexpr std::size_t kRemembered = 16;

    // What `s` is to the channel; a first or newer session becomes the current one.
    [[nodiscard]] SessionMark observe(const Session& s) noexcept {
        if (has_ && s == current_) return SessionMark::kCurrent;
        for (std::size_t i = 0; i < std::min(replaced_, kRemembered); ++i)
            if (before_[i] == s) return SessionMark::kStale;
        const bool first = !has_;
        if (has_) before_[replaced_++ % kRemembered] = current_;  // a ring: the oldest goes
        current_ = s;
        has_ = true;
        return first ? SessionMark::kFirst : SessionMark::kNewer;
    }
    [[nodiscard]] bool has() const noexcept { return has_; }
    [[nodiscard]] const Session& current() const noexcept { return current_; }
    [[nodiscard]] bool is_current(const Session& s) const noexcept { return has_ && s == current_; }

private:
    Session current_{};
    std::array<Session, kRemembered> before_{};
    std::size_t replaced_ = 0;  // sessions replaced so far (the ring's next slot, modulo kRemembered)
    bool has_ = false;
};

enum class PacketKind : std::uint8_t {
    kShort,         // under 20 bytes: dropped whole
    kMessages,      // count 1..0xFFFE messages from `seq`
    kHeartbeat,     // count 0: `seq` is the next expected position
    kEndOfSession,  // count 0xFFFF: `seq` is the next expected position
    kRequest,       // exactly 20 bytes with a message count: a re-request (a handler's own, captured)
};

// A MoldUDP64 datagram's stream key, read once (protocol.hpp's StreamKey).
// The channel is the line's: the header names none.
struct Key {
    std::uint64_t seq = 0;    // first message's position; a heartbeat's/end's next expected one
    std::uint32_t len = 0;    // datagram length
    std::uint16_t count = 0;  // message count as on the wire
    std::uint16_t channel = 0;
    Session session{};
    PacketKind kind = PacketKind::kShort;

    [[nodiscard]] bool valid() const noexcept { return kind != PacketKind::kShort; }
    // Messages the packet carries (0 for a heartbeat, end of session or request).
    [[nodiscard]] std::uint16_t messages() const noexcept { return kind == PacketKind::kMessages ? count : 0; }
    [[nodiscard]] std::uint64_t next_seq() const noexcept { return seq + messages(); }
    // MoldUDP64 has no send time: copies are told apart by position and length.
    [[nodiscard]] PacketFingerprint fingerprint() const noexcept { return {0, len}; }
};

// Reads the header of `d`, which arrived on channel `line_channel`.
[[nodiscard]] inline Key read_key(std::span<const std::byte> d, std::uint16_t line_channel) noexcept {
    Key k;
    k.len = static_cast<std::uint32_t>(d.size());
    k.channel = line_channel;
    if (d.size() < kHeaderSize) return k;
    for (std::size_t i = 0; i < kSessionSize; ++i) k.session[i] = static_cast<char>(d[kSessionOffset + i]);
    k.seq = load_be<std::uint64_t>(d.data() + kSequenceOffset);
    k.count = load_be<std::uint16_t>(d.data() + kCountOffset);
    if (k.count == kHeartbeatCount) k.kind = PacketKind::kHeartbeat;
    else if (k.count == kEndOfSessionCount) k.kind = PacketKind::kEndOfSession;
    else if (d.size() == kRequestSize) k.kind = PacketKind::kRequest;
    else k.kind = PacketKind::kMessages;
    return k;
}

// What walking a packet's message blocks found.
struct Walk {
    std::uint16_t received = 0;  // messages handed on, from position key.seq
    Fault fault = Fault::kNone;  // kNone: well formed; otherwise where it stopped (ITCH50.md "Malformed packets")
};

// Hands each message of `d` (header `key`) to `on_message(index, span)` in
// order, `index` counting from 0 at key.seq, until a fault:
//   kOverrun        a block (its length field or its message) runs past the datagram
//   kBadLength      a message shorter than min_size(type byte), or empty
//   kTrailingBytes  bytes after `count` blocks, or after a heartbeat's/end's header
// The messages before a fault stand; those from it on are not received.
// A message longer than its type's size is handed on whole (newer versions
// may append fields). `min_size(std::uint8_t type)` returns the smallest
// acceptable length (1 for a type the payload does not know).
template <class MinSize, class OnMessage>
[[gnu::always_inline]] inline Walk walk(std::span<const std::byte> d, const Key& key, MinSize&& min_size,
                                        OnMessage&& on_message) noexcept {
    Walk w;
    if (key.kind == PacketKind::kHeartbeat || key.kind == PacketKind::kEndOfSession) {
        if (d.size() != kHeaderSize) w.fault = Fault::kTrailingBytes;
        return w;
    }
    if (key.kind != PacketKind::kMessages) return w;
    const std::byte* const base = d.data();
    const std::size_t size = d.size();
    const std::uint16_t count = key.count;
    std::size_t off = kHeaderSize;
    for (std::uint16_t i = 0; i < count; ++i) {
        if (size - off < kBlockHeaderSize) {
            w.fault = Fault::kOverrun;
            return w;
        }
        const std::size_t length = load_be<std::uint16_t>(base + off);
        off += kBlockHeaderSize;
        if (length > size - off) {
            w.fault = Fault::kOverrun;
            return w;
        }
        if (length == 0 || length < min_size(static_cast<std::uint8_t>(base[off]))) {
            w.fault = Fault::kBadLength;
            return w;
        }
        on_message(i, std::span<const std::byte>(base + off, length));
        off += length;
        w.received = static_cast<std::uint16_t>(i + 1);
    }
    if (off != size) w.fault = Fault::kTrailingBytes;
    return w;
}

// Hands messages 0 .. n-1 of `d` to `on_message(index, span)` as walk()
// does, for a datagram whose first n messages walk() has already received
// (the same bytes): nothing is checked again. The stream's apply, after
// its receive walked the datagram once (a second checked walk took ~27
// instructions a message).
template <class OnMessage>
[[gnu::always_inline]] inline void walk_received(std::span<const std::byte> d, std::uint16_t n, OnMessage&& on_message) noexcept {
    const std::byte* block = d.data() + kHeaderSize;
    for (std::uint16_t i = 0; i < n; ++i) {
        const std::size_t length = load_be<std::uint16_t>(block);
        on_message(i, std::span<const std::byte>(block + kBlockHeaderSize, length));
        block += kBlockHeaderSize + length;
    }
}

}  // namespace tickgate::moldudp64
