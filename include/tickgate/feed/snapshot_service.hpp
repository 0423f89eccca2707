// A venue's snapshot service over TCP (ITCH's GLIMPSE 5.0 over SoupBinTCP
// is the one today, feed/itch50/): why a snapshot failed and what is
// counted per channel. Shared because the metrics, the state log and the
// summary render them for any protocol whose recovery has such a service.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "tickgate/counter.hpp"

namespace tickgate {

// Why a snapshot failed (the summary's snapshot_failures keys).
enum class SnapshotFailure : std::uint8_t {
    kConnectFailed,
    kLoginRejected,
    kDropped,       // the connection closed before the snapshot's end (GLIMPSE: `M`)
    kSilent,        // the server went silent (the session protocol's timeout)
    kTimeout,       // the snapshot did not end in time (GLIMPSE: [glimpse] timeout_ms)
    kMalformed,     // a packet or message the protocol does not allow
    kEndOfSession,  // the server ended the session before the snapshot's end
    kBufferFull,    // the live output kept meanwhile (GLIMPSE: [glimpse] buffer_mb) filled first
    kStorageFull,   // the snapshot holds more than its storage (GLIMPSE: orders beyond itch.max_orders)
    kCount,
};
inline constexpr const char* kSnapshotFailureNames[] = {"connect_failed", "login_rejected", "dropped",
                                                         "silent",         "timeout",        "malformed",
                                                         "end_of_session", "buffer_full",    "storage_full"};
static_assert(std::size(kSnapshotFailureNames) == static_cast<std::size_t>(SnapshotFailure::kCount));
// The state log's words for it.
inline constexpr const char* kSnapshotFailureText[] = {"connect failed", "login rejected", "connection dropped",
                                                        "server silent",  "timeout",        "malformed packet",
                                                        "end of session", "buffer full",    "storage full"};

// Per channel with a snapshot service, cumulative (the summary, metrics).
struct SnapshotCounters {
    RelaxedCounter snapshots_requested;
    RelaxedCounter snapshots_applied;
    RelaxedCounter snapshot_failures[static_cast<std::size_t>(SnapshotFailure::kCount)];  // by reason
    RelaxedCounter snapshot_orders;  // orders loaded by the last snapshot applied
};

}  // namespace tickgate
