#include "tickgate/feed/itch50/live.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "../json_writer.hpp"
#include "tickgate/feed/counter_fields.hpp"
#include "tickgate/feed/clock.hpp"

namespace tickgate::itch50 {

LiveHandler::LiveHandler(const Config& cfg, std::int64_t glimpse_silence_ms)
    : client_(cfg), core_(cfg, &client_), glimpse_(cfg, glimpse_silence_ms), snapshots_(cfg.channels.size()),
      min_interval_ns_(std::int64_t{cfg.glimpse.min_interval_ms} * 1'000'000),
      timeout_ns_(std::int64_t{cfg.glimpse.timeout_ms} * 1'000'000), receiver_(cfg),
      line_seq_(2 * cfg.channels.size()), latency_(cfg.channel_ids()) {
    // poll_once hands on at most one batch per socket (two per channel).
    const std::size_t round = std::size_t{std::clamp<std::uint32_t>(cfg.receiver.batch, 1, 1024)} * 2 * cfg.channels.size();
    stash_bytes_.resize(round * Receiver::kSlotBytes);
    stash_.reserve(round);
    logged_.resize(cfg.channels.size());
    channel_ids_ = cfg.channel_ids();
}

void LiveHandler::log_state(StateLog& log, std::int64_t now_ns) noexcept {
    for (std::uint32_t ch = 0; ch < logged_.size(); ++ch) {
        const moldudp64::StreamCounters& k = core_.channel(ch).counters;
        const Logged now{k.lost_messages.get(), k.recovered_messages.get(), k.implausible_positions.get(),
                         k.unrequested_answer_messages.get()};
        StateChange c;
        c.time_ns = now_ns;
        c.channel = channel_ids_[ch];
        const auto report = [&](StateChangeKind kind, std::uint64_t value, std::uint64_t before) {
            if (value == before) return;
            c.kind = kind;
            c.value = value - before;
            (void)log.push(c);
        };
        report(StateChangeKind::kHoleGivenUp, now.lost, logged_[ch].lost);
        report(StateChangeKind::kRerequested, now.recovered, logged_[ch].recovered);
        report(StateChangeKind::kImplausiblePositions, now.implausible, logged_[ch].implausible);
        report(StateChangeKind::kUnrequestedAnswers, now.unrequested, logged_[ch].unrequested);
        logged_[ch] = now;
    }
    for (std::size_t i = 0; i < n_events_; ++i) {
        const SnapshotEvent& e = events_[i];
        StateChange c;
        c.time_ns = now_ns;
        c.channel = channel_ids_[e.channel];
        c.kind = e.kind;
        c.value = e.value;
        if (e.kind == StateChangeKind::kSnapshotApplied) std::memcpy(c.symbol, &e.position, sizeof e.position);
        if (e.kind == StateChangeKind::kSnapshotFailed) c.symbol[0] = e.reason;
        (void)log.push(c);
    }
    n_events_ = 0;
}

void LiveHandler::snapshot_failed(std::uint32_t ch, SnapshotFailure why, char reject_reason, std::int64_t mono_ns) noexcept {
    ChannelSnapshots& s = snapshots_[ch];
    s.counters.snapshot_failures[static_cast<std::size_t>(why)].add();
    if (why == SnapshotFailure::kLoginRejected) s.no_retry = true;  // it will not get better
    else core_.router().want(ch, s.reason);  // retried once min_interval_ms has passed
    s.next_allowed_ns = mono_ns + min_interval_ns_;
    note({StateChangeKind::kSnapshotFailed, ch, static_cast<std::uint64_t>(why), 0, reject_reason});
}

void LiveHandler::tick_snapshots(std::int64_t mono_ns, std::int64_t now_ns) noexcept {
    if (!glimpse_.any()) return;
    SnapshotRouter& router = core_.router();
    switch (glimpse_.state()) {
        case GlimpseClient::State::kRequested:
        case GlimpseClient::State::kRunning: {
            const std::uint32_t ch = glimpse_.channel();
            if (router.overflowed() && !snapshots_[ch].overflowed) {
                // The buffer filled: its datagrams are applied already, the session is of no use.
                snapshots_[ch].overflowed = true;
                glimpse_.cancel(SnapshotFailure::kBufferFull);
            } else if (router.cancelled()) {
                glimpse_.cancel(SnapshotFailure::kDropped);
            }
            return;
        }
        case GlimpseClient::State::kReady:
        case GlimpseClient::State::kFailed: {
            const std::uint32_t ch = glimpse_.channel();
            ChannelSnapshots& s = snapshots_[ch];
            const bool ready = glimpse_.state() == GlimpseClient::State::kReady;
            if (router.cancelled()) {
                // A new session began meanwhile: the snapshot was of the old one; nothing is counted.
                core_.abort_snapshot();
            } else if (s.overflowed || router.overflowed()) {
                core_.abort_snapshot();
                snapshot_failed(ch, SnapshotFailure::kBufferFull, 0, mono_ns);
            } else if (ready) {
                const SnapshotApplied a = core_.apply_snapshot(ch, glimpse_.storage(), now_ns);
                replaced_channel_ = ch;
                s.counters.snapshots_applied.add();
                s.counters.snapshot_orders.set(a.orders);
                note({StateChangeKind::kSnapshotApplied, ch, a.orders, a.continue_at, 0});
            } else {
                core_.abort_snapshot();
                const GlimpseClient::Outcome o = glimpse_.outcome();
                snapshot_failed(ch, o.failure, o.reject_reason, mono_ns);
            }
            s.overflowed = false;
            glimpse_.release();
            return;
        }
        case GlimpseClient::State::kStopping: return;  // only in the destructor
        case GlimpseClient::State::kIdle: break;
    }
    for (std::uint32_t ch = 0; ch < snapshots_.size(); ++ch) {
        ChannelSnapshots& s = snapshots_[ch];
        const SnapshotWant want = router.wanted(ch);
        if (want == SnapshotWant::kNone || s.no_retry || !glimpse_.enabled(ch) || mono_ns < s.next_allowed_ns) continue;
        // Buffering begins before the login is sent.
        core_.begin_snapshot(ch);
        glimpse_.start(ch, mono_ns + timeout_ns_);
        s.counters.snapshots_requested.add();
        s.reason = want;
        s.next_allowed_ns = mono_ns + min_interval_ns_;
        note({StateChangeKind::kSnapshotRequested, ch, want == SnapshotWant::kLateJoin ? 1u : 2u, 0, 0});
        router.clear_wanted(ch);
        return;
    }
}

void LiveHandler::count_line_gap(LineSeq& l, std::span<const std::byte> payload, LineStats& stats) noexcept {
    const moldudp64::Key k = moldudp64::read_key(payload, 0);
    if (!k.valid() || k.kind == moldudp64::PacketKind::kRequest) return;
    if (!l.started || k.session != l.session) {  // a line's first packet of a session: nothing skipped yet
        l = {k.session, k.next_seq(), true};
        return;
    }
    // A heartbeat's or end of session's position is the next expected one: a skip before it counts too.
    if (k.seq > l.next) stats.seq_gaps.add(k.seq - l.next);
    l.next = std::max(l.next, k.next_seq());
}

int LiveHandler::poll(std::int64_t timeout_ns) {
    stash_.clear();
    replaced_channel_ = kNoChannel;
    int n = receiver_.poll_once(std::min(timeout_ns, kMaxWaitNs), [this](const RawDatagram& d) {
        if (stash_.size() == stash_.capacity()) [[unlikely]] return;  // cannot happen: sized for a round
        const auto slot = static_cast<std::uint32_t>(stash_.size());
        std::memcpy(stash_bytes_.data() + std::size_t{slot} * Receiver::kSlotBytes, d.payload.data(), d.payload.size());
        // Config channels are few: a scan, no table.
        auto ch = static_cast<std::uint32_t>(channel_ids_.size());
        for (std::uint32_t i = 0; i < channel_ids_.size(); ++i)
            if (channel_ids_[i] == d.channel_id) ch = i;
        if (ch < channel_ids_.size() && d.line < 2 && d.stats) count_line_gap(line_seq_[2 * ch + d.line], d.payload, *d.stats);
        stash_.push_back({d.recv_ns, d.dst_ip, d.dst_port, static_cast<std::uint32_t>(d.payload.size()), slot, ch});
    });
    // In place (std::stable_sort would allocate); equal times keep the receive order.
    std::sort(stash_.begin(), stash_.end(), [](const Stashed& a, const Stashed& b) {
        return a.recv_ns != b.recv_ns ? a.recv_ns < b.recv_ns : a.slot < b.slot;
    });
    for (const Stashed& s : stash_) {
        const bool timed = s.channel < channel_ids_.size();
        const std::uint64_t before = timed ? core_.channel(s.channel).next_seq : 0;
        core_.deliver({stash_bytes_.data() + std::size_t{s.slot} * Receiver::kSlotBytes, s.len}, s.dst_ip, s.dst_port,
                      s.recv_ns);
        if (timed && core_.channel(s.channel).next_seq != before)
            latency_.record(channel_ids_[s.channel], realtime_ns() - s.recv_ns);
    }
    n += client_.poll_answers(core_.stream(), core_.sink());
    if (const std::int64_t drained = receiver_.drained_until(); drained != 0) core_.expire(drained);
    const std::int64_t mono = monotonic_ns();
    client_.tick(mono, core_.stream());
    tick_snapshots(mono, realtime_ns());
    return n;
}

namespace {
std::string lines_text(const Receiver& r) {
    std::string out = fmt::format("{:<4} {:<4} {:>21} {:>10} {:>10} {:>10}\n", "ch", "line", "group:port", "packets",
                                  "drops", "rejected");
    for (const auto& l : r.lines())
        out += fmt::format("{:<4} {:<4} {:>21} {:>10} {:>10} {:>10}\n", l->channel_id, line_name(l->line),
                           fmt::format("{}:{}", l->group, l->port), l->packets.get(), l->kernel_drops.get(),
                           l->rejected_source.get());
    return out;
}
}  // namespace

std::string LiveHandler::summary_json(std::int64_t now_ns) const {
    json::Value out = json::Value::parse(core_.summary_json({.now_ns = now_ns}));
    json::Value& lines = out["lines"] = json::Value::array();
    for (const auto& l : receiver_.lines()) {
        json::Value line = {{"channel", l->channel_id}, {"line", line_name(l->line)}, {"group", l->group}, {"port", l->port}};
        json::put_counters(line, *l, kLineCounterFields);
        lines.push_back(std::move(line));
    }
    // Per channel with a GLIMPSE service: its snapshots (ITCH50.md "Snapshot recovery").
    json::Value& channels = out["channels"];
    for (std::uint32_t ch = 0; ch < snapshots_.size() && ch < channels.size(); ++ch) {
        if (!glimpse_.enabled(ch)) continue;
        const SnapshotCounters& k = snapshots_[ch].counters;
        json::Value g = {{"server", core_.cfg().channels[ch].glimpse}};
        json::put_counters(g, k, kSnapshotCounterFields);
        json::Value& failures = g["snapshot_failures"] = json::Value::object();
        for (std::size_t r = 0; r < std::size(kSnapshotFailureNames); ++r)
            failures[kSnapshotFailureNames[r]] = k.snapshot_failures[r].get();
        g["snapshot_orders"] = k.snapshot_orders.get();
        channels[ch]["glimpse"] = std::move(g);
    }
    return json::dump(out);
}

std::string LiveHandler::snapshot_state(std::uint32_t ch) const {
    const ChannelSnapshots& s = snapshots_[ch];
    const GlimpseClient::State g = glimpse_.state();
    if (g != GlimpseClient::State::kIdle && g != GlimpseClient::State::kStopping && glimpse_.channel() == ch)
        return "loading";
    if (s.no_retry) return "given up (login rejected)";
    const SnapshotWant want = core_.router().wanted(ch);
    if (want != SnapshotWant::kNone)
        return want == SnapshotWant::kLateJoin ? "wanted: late join" : "wanted: hole given up";
    return s.counters.snapshots_applied.get() != 0 ? "applied" : "not needed";
}

std::string LiveHandler::snapshots_text() const {
    std::string out;
    for (std::uint32_t ch = 0; ch < snapshots_.size(); ++ch) {
        if (!glimpse_.enabled(ch)) continue;
        if (out.empty())
            out = fmt::format("{:<4} {:<26} {:>9} {:>9} {:>12}  {}\n", "ch", "glimpse snapshot", "requested",
                              "applied", "last orders", "failures");
        const SnapshotCounters& k = snapshots_[ch].counters;
        std::string failures;
        for (std::size_t r = 0; r < std::size(kSnapshotFailureNames); ++r)
            if (const std::uint64_t n = k.snapshot_failures[r].get(); n != 0)
                failures += fmt::format("{}{} {}", failures.empty() ? "" : ", ", kSnapshotFailureNames[r], n);
        out += fmt::format("{:<4} {:<26} {:>9} {:>9} {:>12}  {}\n", channel_ids_[ch], snapshot_state(ch),
                           k.snapshots_requested.get(), k.snapshots_applied.get(), k.snapshot_orders.get(),
                           failures.empty() ? "none" : failures);
    }
    return out;
}

std::string LiveHandler::live_view(std::int64_t now_ns, const std::vector<std::string>& symbols,
                                   std::string_view config_path, double elapsed_s, bool terminal) const {
    return core_.live_view({.now_ns = now_ns, .symbols = symbols, .max_rows = kLiveViewRows}, config_path, elapsed_s,
                           lines_text(receiver_) + snapshots_text(), terminal);
}

}  // namespace tickgate::itch50
