#include "tickgate/fanout/tracker.hpp"

#include <algorithm>

namespace tickgate::fanout {

InstrumentView& Tracker::view(std::string_view subject) {
    auto it = views_.find(subject);
    if (it == views_.end()) {
        it = views_.emplace(std::string(subject), InstrumentView{}).first;
        // Its publisher ("PREFIX.VENUE", the subject without CHANNEL.SYMBOL) may be silent already.
        const std::size_t symbol_dot = subject.rfind('.');
        const std::size_t channel_dot = symbol_dot == 0 || symbol_dot == std::string_view::npos
                                            ? std::string_view::npos
                                            : subject.rfind('.', symbol_dot - 1);
        if (channel_dot != std::string_view::npos)
            if (const auto p = publishers_.find(subject.substr(0, channel_dot)); p != publishers_.end())
                it->second.publisher_silent = p->second.silent;
    }
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
    if (r.heartbeat()) return on_heartbeat(subject, r);
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
    Record r;
    const ReadError e = bytes.empty() ? ReadError::kNone : read_record(bytes, r);
    if (!bytes.empty() && e == ReadError::kNone && r.heartbeat())
        return on_heartbeat(subject, r);  // the stream keeps the last heartbeat too
    InstrumentView& v = view(subject);
    v.snapshot_wanted = false;
    ++v.snapshots;
    ++counters_.snapshots;
    if (bytes.empty()) {  // the stream has nothing newer than what we hold
        if (v.received != 0) v.suspect = false;
        return Applied::kEmpty;
    }
    if (e != ReadError::kNone) {
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

Applied Tracker::on_heartbeat(std::string_view subject, const Record& r) {
    const std::size_t dot = subject.rfind('.');
    if (dot == std::string_view::npos || subject.substr(dot + 1) != kHeartbeatToken || r.source_ns <= 0) {
        ++counters_.malformed;  // a heartbeat on an instrument's subject, or without its interval
        ++counters_.malformed_by[static_cast<std::size_t>(ReadError::kBadField)];
        return Applied::kMalformed;
    }
    auto it = publishers_.find(subject.substr(0, dot));
    if (it == publishers_.end()) it = publishers_.emplace(std::string(subject.substr(0, dot)), PublisherWatch{}).first;
    PublisherWatch& p = it->second;
    p.session = std::max(p.session, r.session);
    p.interval_ns = r.source_ns;
    p.heard = true;
    ++counters_.heartbeats;
    return Applied::kHeartbeat;
}

void Tracker::check_publishers(std::int64_t now_ns) {
    for (auto& [key, p] : publishers_) {
        if (p.heard) {
            p.heard = false;
            p.last_heard_ns = now_ns;
            if (!p.silent) continue;
            p.silent = false;  // back: what it published meanwhile may be lost to us
            ++counters_.publisher_returns;
            each_of_publisher(key, [&](const std::string& subject, InstrumentView& v) {
                v.publisher_silent = false;
                want(subject, v);
            });
            continue;
        }
        if (p.last_heard_ns == 0) p.last_heard_ns = now_ns;  // first heard before any check
        if (p.silent || now_ns - p.last_heard_ns <= 3 * p.interval_ns) continue;
        p.silent = true;
        ++counters_.publisher_silences;
        each_of_publisher(key, [](const std::string&, InstrumentView& v) { v.publisher_silent = true; });
    }
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
