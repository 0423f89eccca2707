// The consumer's rules (issue 27), apart from any transport: what a record
// received live or read from the stream does to an instrument's view.
//
//  - Within a session, a record whose seq is not above the last one taken is
//    a duplicate (dropped, counted); one more than one above opens a gap:
//    the record is taken (every record is the instrument's whole state), the
//    numbers skipped are counted lost, and the instrument is suspect until a
//    snapshot (the stream's last record of its subject) has been read.
//  - A record of a newer session (a larger session id: the publisher
//    restarted) is a new stream: taken, counted, and unless it is that
//    session's first record, the instrument is suspect until a snapshot.
//    An older session's record is stale: dropped, counted.
//  - An instrument first met live is suspect until a snapshot unless the
//    record is its session's first (nothing came before it).
//  - An instrument published before it had a symbol (subject "...CHANNEL.%23ID")
//    and then under its symbol is one instrument renamed: its first record
//    under the symbol removes the unnamed subject's view (counted in renamed).
//  - A publisher's heartbeat (PREFIX.VENUE.heartbeat, record.hpp) is no
//    instrument: it makes that publisher watched. check_publishers(now)
//    finds one silent for 3 heartbeat intervals: every view under
//    PREFIX.VENUE is publisher_silent (not tradeable: its last verdict may
//    be long out of date) until a heartbeat comes again, which then wants a
//    snapshot of each (what it published meanwhile may have been missed).
//  - mark_all_suspect(): the transport lost messages it cannot attribute
//    (a slow-consumer drop, a reconnect): every instrument wants a snapshot.
//
// Not thread-safe: one thread (the consumer's) owns a Tracker.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/fanout/record.hpp"

namespace tickgate::fanout {

struct InstrumentView {
    Record record;               // the newest taken
    bool suspect = true;         // transport-suspect: a gap not yet repaired by a snapshot
    bool snapshot_wanted = false;
    std::uint64_t received = 0;  // records taken (live and snapshots)
    std::uint64_t duplicates = 0;
    std::uint64_t gaps = 0;      // gaps opened
    std::uint64_t lost = 0;      // sequence numbers skipped by gaps
    std::uint64_t snapshots = 0; // snapshots read
    bool publisher_silent = false;  // its publisher's heartbeats stopped (Tracker::check_publishers)
    // Safe to act on: the publisher's gate said ok, the publisher is heard
    // and nothing is missing here.
    [[nodiscard]] bool tradeable() const noexcept {
        return !suspect && !publisher_silent && record.verdict == GateReason::kOk;
    }
};

struct TrackerCounters {
    std::uint64_t records = 0;     // taken
    std::uint64_t duplicates = 0;
    std::uint64_t gaps = 0;
    std::uint64_t lost = 0;
    std::uint64_t stale_session = 0;
    std::uint64_t session_changes = 0;
    std::uint64_t snapshots = 0;
    std::uint64_t malformed = 0;   // records read_record refused (by reason below)
    std::uint64_t malformed_by[7] = {};
    std::uint64_t resyncs = 0;     // mark_all_suspect calls
    std::uint64_t renamed = 0;     // unnamed subjects dropped once their instrument was named
    std::uint64_t heartbeats = 0;  // publisher heartbeats received
    std::uint64_t publisher_silences = 0;  // a watched publisher went silent
    std::uint64_t publisher_returns = 0;   // ... and was heard again
};

enum class Applied : std::uint8_t { kTaken, kDuplicate, kStale, kMalformed, kEmpty, kHeartbeat };

// A publisher known from its heartbeats, by "PREFIX.VENUE".
struct PublisherWatch {
    std::uint64_t session = 0;
    std::int64_t interval_ns = 0;    // its heartbeat period (the heartbeat's source_ns)
    std::int64_t last_heard_ns = 0;  // check_publishers' clock; 0: not checked since it was first heard
    bool heard = false;              // a heartbeat since the last check
    bool silent = false;
};

class Tracker {
public:
    // A record received on `subject` from the live subscription.
    Applied on_live(std::string_view subject, std::span<const std::byte> bytes);
    // The stream's last record of `subject`, read after subscribing (empty:
    // the stream has none): the repair of a gap; clears suspect.
    Applied on_snapshot(std::string_view subject, std::span<const std::byte> bytes);
    // Every instrument suspect and wanting a snapshot.
    void mark_all_suspect();
    // The publishers' liveness at `now_ns` (any monotonic clock, the same
    // every call; a few times a second): silent after 3 heartbeat intervals
    // unheard, heard again at the next heartbeat.
    void check_publishers(std::int64_t now_ns);
    [[nodiscard]] const std::map<std::string, PublisherWatch, std::less<>>& publishers() const noexcept {
        return publishers_;
    }
    // The subjects wanting a snapshot (each once until repaired), cleared.
    [[nodiscard]] std::vector<std::string> take_wanted();
    // A snapshot of `subject` could not be read: wanted again.
    void retry(std::string_view subject) { wanted_.emplace_back(subject); }

    [[nodiscard]] const std::map<std::string, InstrumentView, std::less<>>& instruments() const noexcept { return views_; }
    [[nodiscard]] const InstrumentView* find(std::string_view subject) const;
    [[nodiscard]] const TrackerCounters& counters() const noexcept { return counters_; }

private:
    InstrumentView& view(std::string_view subject);
    void want(std::string_view subject, InstrumentView& v);
    void forget_unnamed(std::string_view subject, const Record& r);
    Applied on_heartbeat(std::string_view subject, const Record& r);
    // f(subject, view) for every view under publisher `key` ("PREFIX.VENUE").
    template <class F>
    void each_of_publisher(std::string_view key, F&& f) {
        const std::string from = std::string(key) + '.';
        for (auto it = views_.lower_bound(from); it != views_.end() && it->first.starts_with(from); ++it)
            f(it->first, it->second);
    }

    std::map<std::string, InstrumentView, std::less<>> views_;
    std::vector<std::string> wanted_;
    std::map<std::string, PublisherWatch, std::less<>> publishers_;
    TrackerCounters counters_;
};

}  // namespace tickgate::fanout
