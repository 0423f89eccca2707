#include "tickgate/fanout/tracker.hpp"

#include <algorithm>

namespace tickgate::fanout {

InstrumentView& Tracker::view(std::string_view subject) {
    auto it = views_.find(subject);
    if (it == views_.end()) it = views_.emplace(std::string(subject), InstrumentView{}).first;
    return it->second;
}

const InstrumentView* Tracker::find(std::string_view subject) const {
    const auto it = views_.find(subject);
    return it == views_.end() ? nullptr : &it->second;
}

void Tracker::want(std::string_view subject, InstrumentView& v) {
    v.suspect = true;
    if (v.snapshot_wanted) return;
    v.snapshot_wanted = true;
    wanted_.emplace_back(subject);
}

Applied Tracker::on_live(std::string_view subject, std::span<const std::byte> bytes) {
    Record r;
    if (const ReadError e = read_record(bytes, r); e != ReadError::kNone) {
        ++counters_.malformed;
        ++counters_.malformed_by[static_cast<std::size_t>(e)];
        return Applied::kMalformed;
    }
    InstrumentView& v = view(subject);
    const bool first = v.received == 0;
    const Record& last = v.record;
    if (!first && r.session < last.session) {
        ++counters_.stale_session;
        return Applied::kStale;
    }
    if (!first && r.session == last.session && r.seq <= last.seq) {
        ++v.duplicates;
        ++counters_.duplicates;
        return Applied::kDuplicate;
    }
    bool continuous;
    if (first) {
        continuous = r.seq == 1;  // its session's first: nothing came before it
    } else if (r.session > last.session) {
        ++counters_.session_changes;
        continuous = r.seq == 1;
    } else {
        continuous = r.seq == last.seq + 1;
        if (!continuous) {
            ++v.gaps;
            ++counters_.gaps;
            v.lost += r.seq - last.seq - 1;
            counters_.lost += r.seq - last.seq - 1;
        }
    }
    if (first) forget_unnamed(subject, r);
    v.record = r;
    ++v.received;
    ++counters_.records;
    if (!continuous)
        want(subject, v);
    else if (first)
        v.suspect = false;
    return Applied::kTaken;
}

Applied Tracker::on_snapshot(std::string_view subject, std::span<const std::byte> bytes) {
    InstrumentView& v = view(subject);
    v.snapshot_wanted = false;
    ++v.snapshots;
    ++counters_.snapshots;
    if (bytes.empty()) {  // the stream has nothing newer than what we hold
        if (v.received != 0) v.suspect = false;
        return Applied::kEmpty;
    }
    Record r;
    if (const ReadError e = read_record(bytes, r); e != ReadError::kNone) {
        ++counters_.malformed;
        ++counters_.malformed_by[static_cast<std::size_t>(e)];
        return Applied::kMalformed;
    }
    const Record& last = v.record;
    const bool newer = v.received == 0 || r.session > last.session || (r.session == last.session && r.seq > last.seq);
    // Newer or not, the stream's last value has been seen: what we hold is
    // at least as new as anything stored, so the gap is repaired.
    v.suspect = false;
    if (!newer) return Applied::kDuplicate;
    if (v.received != 0 && r.session > last.session) ++counters_.session_changes;
    if (v.received == 0) forget_unnamed(subject, r);
    v.record = r;
    ++v.received;
    ++counters_.records;
    return Applied::kTaken;
}

void Tracker::forget_unnamed(std::string_view subject, const Record& r) {
    const std::size_t dot = subject.rfind('.');
    if (r.symbol_view().empty() || dot == std::string_view::npos) return;
    std::string unnamed(subject.substr(0, dot + 1));
    unnamed += "%23";  // subject_for's token of an instrument without a symbol
    unnamed += std::to_string(r.instrument);
    if (unnamed == subject || views_.erase(unnamed) == 0) return;
    wanted_.erase(std::remove(wanted_.begin(), wanted_.end(), unnamed), wanted_.end());
    ++counters_.renamed;
}

void Tracker::mark_all_suspect() {
    ++counters_.resyncs;
    for (auto& [subject, v] : views_) want(subject, v);
}

std::vector<std::string> Tracker::take_wanted() {
    std::vector<std::string> out;
    out.swap(wanted_);
    return out;
}

}  // namespace tickgate::fanout
