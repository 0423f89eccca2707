// SoupBinTCP 4.0 framing (Nasdaq, "SoupBinTCP 4.0"; ITCH50.md "Snapshot
// recovery"): every packet is a u16 big-endian length (of what follows),
// a type byte and a payload. Pure functions over bytes: the reader says
// how much of a TCP byte stream is one whole packet (split and merged
// reads are the caller's buffer), the writers fill caller-owned buffers.
// Nothing here allocates, throws or reads outside the span it is given.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "tickgate/endian.hpp"

namespace tickgate::soupbintcp {

// Packet types (the type byte after the length).
namespace type {
// Server to client.
inline constexpr char kDebug = '+';
inline constexpr char kLoginAccepted = 'A';
inline constexpr char kLoginRejected = 'J';
inline constexpr char kSequencedData = 'S';
inline constexpr char kServerHeartbeat = 'H';
inline constexpr char kEndOfSession = 'Z';
// Client to server.
inline constexpr char kLoginRequest = 'L';
inline constexpr char kUnsequencedData = 'U';
inline constexpr char kClientHeartbeat = 'R';
inline constexpr char kLogoutRequest = 'O';
}  // namespace type

inline constexpr std::size_t kLengthSize = 2;
// Field widths of the login packets.
inline constexpr std::size_t kUsernameSize = 6;
inline constexpr std::size_t kPasswordSize = 10;
inline constexpr std::size_t kSessionSize = 10;
inline constexpr std::size_t kSequenceSize = 20;
inline constexpr std::size_t kLoginRequestPayload = kUsernameSize + kPasswordSize + kSessionSize + kSequenceSize;  // 46
inline constexpr std::size_t kLoginAcceptedPayload = kSessionSize + kSequenceSize;                                 // 30
// A heartbeat is sent after this long without sending anything; a peer
// silent for kSilenceTimeoutMs is gone (the SoupBinTCP 4.0 defaults).
inline constexpr std::int64_t kHeartbeatIntervalMs = 1'000;
inline constexpr std::int64_t kSilenceTimeoutMs = 15'000;

// Login Rejected reason codes.
inline constexpr char kRejectNotAuthorized = 'A';
inline constexpr char kRejectSessionUnavailable = 'S';

// What the front of a byte stream holds.
enum class FrameStatus : std::uint8_t {
    kPacket,    // one whole packet: `type`, `payload`, `size` bytes to consume
    kNeedMore,  // a partial packet: read more bytes first
    kTooLong,   // the length announces more than `max_packet` bytes: the stream is unusable
    kEmpty,     // a length of 0 (no type byte): the stream is unusable
};

struct Frame {
    FrameStatus status;
    char type = 0;
    std::span<const std::byte> payload{};
    std::size_t size = 0;  // the whole packet, length field included
};

// The first packet of `stream`. A length beyond `max_packet` (what the
// reader's buffer can hold, the length field included) is refused before
// waiting for bytes that would never fit.
[[nodiscard]] inline Frame read_frame(std::span<const std::byte> stream, std::size_t max_packet) noexcept {
    if (stream.size() < kLengthSize) return {FrameStatus::kNeedMore};
    const std::size_t len = load_be<std::uint16_t>(stream.data());
    if (len == 0) return {FrameStatus::kEmpty};
    if (kLengthSize + len > max_packet) return {FrameStatus::kTooLong};
    if (stream.size() < kLengthSize + len) return {FrameStatus::kNeedMore};
    return {FrameStatus::kPacket, static_cast<char>(stream[kLengthSize]), stream.subspan(kLengthSize + 1, len - 1),
            kLengthSize + len};
}

// Whether `t` is a packet type a server may send (a client meets any other as a protocol error).
[[nodiscard]] constexpr bool is_server_type(char t) noexcept {
    return t == type::kDebug || t == type::kLoginAccepted || t == type::kLoginRejected || t == type::kSequencedData ||
           t == type::kServerHeartbeat || t == type::kEndOfSession;
}

// ---- writers: each writes one packet at `out` (which must hold packet_size) and returns its size.

[[nodiscard]] constexpr std::size_t packet_size(std::size_t payload) noexcept { return kLengthSize + 1 + payload; }

inline std::size_t write_packet(std::byte* out, char t, std::span<const std::byte> payload) noexcept {
    store_be<std::uint16_t>(out, static_cast<std::uint16_t>(1 + payload.size()));
    out[kLengthSize] = static_cast<std::byte>(t);
    if (!payload.empty()) std::memcpy(out + kLengthSize + 1, payload.data(), payload.size());
    return packet_size(payload.size());
}

namespace detail {
// `s` left-justified in `width` bytes, space padded on the right (cut if longer).
inline void alpha(std::byte* out, std::string_view s, std::size_t width) noexcept {
    const std::size_t n = std::min(s.size(), width);
    std::memcpy(out, s.data(), n);
    std::memset(out + n, ' ', width - n);
}
// `v` in decimal, right-justified in `width` bytes, space padded on the left.
inline void numeric(std::byte* out, std::uint64_t v, std::size_t width) noexcept {
    std::size_t i = width;
    do {
        out[--i] = static_cast<std::byte>('0' + v % 10);
        v /= 10;
    } while (v != 0 && i > 0);
    std::memset(out, ' ', i);
}
}  // namespace detail

// Login Request: username and password (alpha, cut to their widths),
// requested session (blank: the current one), requested sequence number.
inline std::size_t write_login_request(std::byte* out, std::string_view username, std::string_view password,
                                       std::string_view session, std::uint64_t sequence) noexcept {
    store_be<std::uint16_t>(out, static_cast<std::uint16_t>(1 + kLoginRequestPayload));
    out[kLengthSize] = static_cast<std::byte>(type::kLoginRequest);
    std::byte* p = out + kLengthSize + 1;
    detail::alpha(p, username, kUsernameSize);
    detail::alpha(p + kUsernameSize, password, kPasswordSize);
    // The session is "left padded with spaces" (right-justified); blank asks for the current one.
    const std::size_t n = std::min(session.size(), kSessionSize);
    std::memset(p + kUsernameSize + kPasswordSize, ' ', kSessionSize - n);
    std::memcpy(p + kUsernameSize + kPasswordSize + kSessionSize - n, session.data(), n);
    detail::numeric(p + kUsernameSize + kPasswordSize + kSessionSize, sequence, kSequenceSize);
    return packet_size(kLoginRequestPayload);
}
// A packet of type `t` without payload (heartbeats, logout, end of session).
inline std::size_t write_empty(std::byte* out, char t) noexcept { return write_packet(out, t, {}); }
inline std::size_t write_login_accepted(std::byte* out, std::string_view session, std::uint64_t sequence) noexcept {
    store_be<std::uint16_t>(out, static_cast<std::uint16_t>(1 + kLoginAcceptedPayload));
    out[kLengthSize] = static_cast<std::byte>(type::kLoginAccepted);
    std::byte* p = out + kLengthSize + 1;
    const std::size_t n = std::min(session.size(), kSessionSize);
    std::memset(p, ' ', kSessionSize - n);
    std::memcpy(p + kSessionSize - n, session.data(), n);
    detail::numeric(p + kSessionSize, sequence, kSequenceSize);
    return packet_size(kLoginAcceptedPayload);
}
inline std::size_t write_login_rejected(std::byte* out, char reason) noexcept {
    const std::byte r = static_cast<std::byte>(reason);
    return write_packet(out, type::kLoginRejected, {&r, 1});
}

// The fields of a Login Request's payload (a server reads them; alpha fields trimmed of padding).
struct LoginRequest {
    std::string_view username, password, session;
    std::uint64_t sequence = 0;
};

// A numeric field: ASCII digits padded with spaces on either side (SoupBinTCP
// pads numbers on the left, GLIMPSE's alpha fields on the right), at least
// one digit, nothing else, no overflow. false otherwise.
[[nodiscard]] inline bool parse_numeric(std::span<const std::byte> f, std::uint64_t& out) noexcept {
    std::size_t b = 0, e = f.size();
    while (b < e && f[b] == std::byte{' '}) ++b;
    while (e > b && f[e - 1] == std::byte{' '}) --e;
    if (b == e) return false;
    std::uint64_t v = 0;
    for (std::size_t i = b; i < e; ++i) {
        const auto c = static_cast<unsigned char>(f[i]);
        if (c < '0' || c > '9') return false;
        const unsigned d = c - '0';
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    out = v;
    return true;
}

// An alpha field without its padding spaces (either side).
[[nodiscard]] inline std::string_view trimmed(std::span<const std::byte> f) noexcept {
    std::size_t b = 0, e = f.size();
    while (b < e && f[b] == std::byte{' '}) ++b;
    while (e > b && f[e - 1] == std::byte{' '}) --e;
    return {reinterpret_cast<const char*>(f.data()) + b, e - b};
}

// false when `payload` is not a Login Request's 46 bytes or its sequence is neither blank nor numeric.
inline bool parse_login_request(std::span<const std::byte> payload, LoginRequest& out) noexcept {
    if (payload.size() != kLoginRequestPayload) return false;
    out.username = trimmed(payload.subspan(0, kUsernameSize));
    out.password = trimmed(payload.subspan(kUsernameSize, kPasswordSize));
    out.session = trimmed(payload.subspan(kUsernameSize + kPasswordSize, kSessionSize));
    out.sequence = 0;
    const auto seq = payload.subspan(kUsernameSize + kPasswordSize + kSessionSize, kSequenceSize);
    return trimmed(seq).empty() || parse_numeric(seq, out.sequence);
}

}  // namespace tickgate::soupbintcp
