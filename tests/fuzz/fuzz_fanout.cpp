// fuzz_fanout: arbitrary bytes as what a fan-out consumer receives — the
// record reader (fanout::read_record) and the consumer's rules
// (fanout::Tracker) over live records and snapshots of four subjects.
//
// Input: chunks of [u8 control][u8 length][length bytes] (the end of the
// input may cut the last one short). control bit 0: a snapshot rather than
// a live record; bits 1-2: the subject; bit 3: mark_all_suspect() first;
// bit 4: take_wanted() after; bit 5: the publisher's heartbeat subject
// instead of an instrument's. Checks: a record the reader accepts writes
// back byte for byte (every byte is a field or a zero it checked); a
// snapshot leaves a view of its subject unless it holds a heartbeat (which
// names no instrument and makes no view); every live record is counted
// exactly once (taken, duplicate, stale or malformed); a view's last
// sequence number never goes down within a session, nor its session; a
// view taken from a snapshot is never suspect.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "fuzz_common.hpp"
#include "tickgate/fanout/tracker.hpp"

using namespace tickgate;
using namespace tickgate::fanout;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static constexpr std::string_view kSubjects[] = {"t.q.1.A", "t.q.1.B", "t.q.2.A", "t.q.2.%2E"};
    Tracker t;
    std::uint64_t live = 0;
    std::size_t at = 0;
    while (at + 2 <= size) {
        const std::uint8_t control = data[at];
        const std::size_t len = std::min<std::size_t>(data[at + 1], size - at - 2);
        const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data + at + 2), len);
        at += 2 + len;

        Record r;
        const bool readable = read_record(bytes, r) == ReadError::kNone;
        if (readable) {
            std::array<std::byte, kMaxRecordBytes> back{};
            FUZZ_CHECK(r.wire_bytes() == len);
            FUZZ_CHECK(write_record(r, back) == len);
            FUZZ_CHECK(std::memcmp(back.data(), bytes.data(), len) == 0);
        }

        const std::string_view subject = (control & 32) ? std::string_view("t.q.heartbeat") : kSubjects[(control >> 1) & 3];
        if (control & 8) t.mark_all_suspect();
        const InstrumentView* before_view = t.find(subject);
        const InstrumentView before = before_view ? *before_view : InstrumentView{};
        const bool had = before_view != nullptr && before.received != 0;
        if (control & 1) {
            const Applied a = t.on_snapshot(subject, bytes);
            const InstrumentView* v = t.find(subject);
            if (bytes.empty() || !readable || !r.heartbeat()) {
                FUZZ_CHECK(v != nullptr);
                if (a == Applied::kTaken || a == Applied::kDuplicate) FUZZ_CHECK(!v->suspect);
            } else {
                FUZZ_CHECK(a == Applied::kHeartbeat || a == Applied::kMalformed);
                FUZZ_CHECK(v == before_view);  // a heartbeat neither makes nor changes a view
            }
        } else {
            ++live;
            (void)t.on_live(subject, bytes);
        }
        if (const InstrumentView* v = t.find(subject); v && had) {
            FUZZ_CHECK(v->record.session >= before.record.session);
            if (v->record.session == before.record.session) FUZZ_CHECK(v->record.seq >= before.record.seq);
        }
        const TrackerCounters& c = t.counters();
        FUZZ_CHECK(c.malformed == [&] {
            std::uint64_t n = 0;
            for (const std::uint64_t m : c.malformed_by) n += m;
            return n;
        }());
        if (control & 16) (void)t.take_wanted();
    }
    // Live records: each counted once (snapshots are counted apart, their malformed ones too).
    const TrackerCounters& c = t.counters();
    std::uint64_t snapshot_taken = 0;
    for (const auto& [s, v] : t.instruments()) snapshot_taken += v.snapshots;
    FUZZ_CHECK(c.duplicates + c.stale_session <= live + snapshot_taken);
    FUZZ_CHECK(c.records <= live + snapshot_taken);
    return 0;
}
