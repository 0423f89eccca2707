// One SoupBinTCP 4.0 client session (ITCH50.md "Snapshot recovery"), on
// Boost.Asio TCP, run to its end on the calling thread (the GLIMPSE
// client's own, never the engine's): connect, Login Request, then every
// Sequenced Data packet handed to the caller until the caller says it has
// what it wanted (Logout Request sent, the connection closed) or the
// session fails. Client Heartbeats go out after a second without sending;
// a server silent for `silence_timeout_ms` is a failure, as is anything
// the protocol does not allow. Every failure has a reason (to_string).
//
// The receive buffer is fixed at construction: once connected, nothing
// allocates per packet. The credentials are kept only to build the Login
// Request and are never printed or logged by this class.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tickgate::soupbintcp {

enum class Failure : std::uint8_t {
    kNone,
    kConnectFailed,   // refused, unreachable, or not connected within the deadline
    kLoginRejected,   // Login Rejected `J` (reason in Result::reject_reason)
    kDropped,         // the server closed the connection or a read/write failed
    kSilent,          // nothing from the server for silence_timeout_ms
    kTimeout,         // the caller's deadline passed first
    kMalformed,       // a packet the protocol does not allow here (bad length, unknown type, data before login)
    kEndOfSession,    // End of Session `Z` before the caller had what it wanted
    kRefusedByCaller, // the caller's handler refused a message (its own reason)
    kCancelled,       // the caller's cancel flag was raised
};
[[nodiscard]] std::string_view to_string(Failure f) noexcept;

struct ClientConfig {
    std::uint32_t ip = 0;   // host order
    std::uint16_t port = 0;
    std::string username;
    std::string password;
    std::int64_t silence_timeout_ms = 15'000;  // SoupBinTCP 4.0's
    std::int64_t heartbeat_interval_ms = 1'000;
    std::size_t max_packet = 4096;             // the receive buffer holds at least one packet this long
};

struct Result {
    Failure failure = Failure::kNone;
    char reject_reason = 0;       // kLoginRejected: the server's code ('A' not authorized, 'S' session unavailable)
    std::uint64_t sequenced = 0;  // Sequenced Data packets handed on
    std::uint64_t heartbeats_sent = 0;
    std::uint64_t heartbeats_received = 0;
};

// What the caller's handler says of one Sequenced Data payload.
enum class Verdict : std::uint8_t { kMore, kDone, kRefuse };
// A plain function pointer and its context (no allocation, no type erasure per packet).
using SequencedHandler = Verdict (*)(void* ctx, std::span<const std::byte> payload) noexcept;

class Client {
public:
    explicit Client(ClientConfig cfg);
    // Runs one session to its end: returns when the handler answered kDone
    // (failure kNone), on any failure, when `deadline_ns` (CLOCK_MONOTONIC)
    // passes, or when `cancel` becomes true (checked at least every 20 ms).
    Result run(SequencedHandler handler, void* ctx, std::int64_t deadline_ns, const std::atomic<bool>& cancel);

private:
    ClientConfig cfg_;
    std::vector<std::byte> buf_;  // receive buffer: two packets' worth
};

}  // namespace tickgate::soupbintcp
