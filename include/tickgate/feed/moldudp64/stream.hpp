// The MoldUDP64 stream stage (ITCH50.md "The stream: exactly-once by
// position"): per channel a session and `next_seq`; every message applied
// exactly once, in position order, whichever line or retransmission brings
// it. Packets ahead of a hole are held in one bounded pool of datagram
// slots; each hole has its own timer and is given up when it is older than
// gap_timeout or when the pool is full (oldest hole first). It takes the
// place of the A/B PacketArbiter for protocols whose hole policy is
// kHoldAndRerequest: positions, not packets, are the unit.
//
// A datagram of the current session more than kImplausibleSeqJump beyond
// the highest position seen is dropped whole and counted, moving nothing
// (ITCH50.md "Implausible positions"); the first datagram of a session has
// nothing to be measured against: the late-join rule places it. A
// re-request server's answer (on_answer) applies only positions that were
// requested and are still missing (ITCH50.md "Re-request answers").
//
// Templates: `Payload` gives the smallest length of a message type
// (itch50::min_length); `Recovery` is told of each hole opened and asked
// whether a late join is to be recovered from position 1, so a live
// re-request client can be plugged in without a virtual call (NoRecovery
// offline):
//   recovery.hole_opened(ch, session, first position, count, recv_ns)
//   recovery.recovers_from_start(ch) -> bool
// What the stage decides reaches a Sink (a template parameter):
//   sink.message(ch, std::span<const std::byte> msg, std::uint64_t position, std::int64_t recv_ns)
//   sink.session_started(ch, bool replaces_another)  the channel's books are to be emptied
//   sink.late_join(ch, std::uint64_t messages)        positions before the first were never ours
//   sink.gave_up(ch, std::uint64_t lost)              a hole given up: the channel is suspect
//   sink.alive(ch, std::int64_t recv_ns)              a packet applied or a heartbeat, no hole open or given up
// Fixed capacity from the constructor; no allocation, lock or throw per
// datagram. One thread.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "tickgate/counter.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/moldudp64/wire.hpp"

namespace tickgate::moldudp64 {

// The `[moldudp64]` settings the stage uses.
struct StreamConfig {
    std::int64_t gap_timeout_ns = 500'000'000;  // a hole open strictly longer is given up
    std::uint32_t max_held_packets = 4096;      // the pool of held datagrams, all channels
    std::size_t max_datagram = 2048;            // one held slot (the receiver's slot size)
};

// No re-request server (offline replay, or live without one): holes are
// filled only by the lines.
struct NoRecovery {
    static constexpr bool kEnabled = false;
    void hole_opened(std::uint32_t, const Session&, std::uint64_t, std::uint64_t, std::int64_t) noexcept {}
    [[nodiscard]] bool recovers_from_start(std::uint32_t) const noexcept { return false; }
};

// Per channel, cumulative over sessions (ITCH50.md "Summary and replay").
struct StreamCounters {
    RelaxedCounter packets;                // datagrams of the channel, stale and malformed included
    RelaxedCounter messages;               // messages received, every copy
    RelaxedCounter malformed_packets;
    RelaxedCounter stale_session_packets;
    RelaxedCounter request_packets;        // captured re-requests, skipped
    RelaxedCounter duplicate_messages;
    RelaxedCounter holes_filled;
    RelaxedCounter recovered_messages;     // positions applied from a re-request server's answers
    RelaxedCounter lost_messages;
    RelaxedCounter holes_given_up;         // holes given up (timeout, pool full) or open at a session change
    RelaxedCounter late_join_messages;
    RelaxedCounter session_changes;
    RelaxedCounter implausible_positions;        // datagrams too far beyond the highest position seen, dropped whole
    RelaxedCounter unrequested_answer_messages;  // answer messages not requested or no longer missing, dropped
    std::uint64_t held_max = 0;            // most packets held at once by this channel
};

template <class Payload, class Recovery = NoRecovery>
class Stream {
public:
    // Sessions a channel remembers as "had before" (their late packets are stale).
    static constexpr std::size_t kRememberedSessions = SessionMemory::kRemembered;
    // Open holes per channel; one more gives up the channel's oldest.
    static constexpr std::size_t kMaxHolesPerChannel = 256;

    // `max_channels` dense channel slots (ChannelStreams' or the config's order).
    Stream(const StreamConfig& cfg, std::uint32_t max_channels, Recovery recovery = {})
        : cfg_(cfg), recovery_(recovery), channels_(max_channels), slots_(cfg.max_held_packets),
          bytes_(std::size_t{cfg.max_held_packets} * cfg.max_datagram) {
        free_.reserve(cfg.max_held_packets);
        for (std::uint32_t i = cfg.max_held_packets; i-- > 0;) free_.push_back(i);
        with_holes_.reserve(max_channels);
        for (Channel& c : channels_) c.gap_timeout_ns = cfg.gap_timeout_ns;
    }

    // What the constructor allocates for `max_channels` slots.
    [[nodiscard]] static constexpr std::size_t bytes_for(const StreamConfig& cfg, std::uint32_t max_channels) noexcept {
        return std::size_t{max_channels} * (sizeof(Channel) + sizeof(std::uint32_t)) +
               std::size_t{cfg.max_held_packets} * (sizeof(Slot) + cfg.max_datagram + sizeof(std::uint32_t));
    }

    // Channel `ch` gives up a hole open strictly longer than `ns` (default
    // the config's gap_timeout; live without a re-request server, the A/B
    // hold). Start-up only.
    void set_gap_timeout(std::uint32_t ch, std::int64_t ns) noexcept { channels_[ch].gap_timeout_ns = ns; }

    // What the stage knows of channel `ch`.
    struct ChannelView {
        const Session& session;
        bool has_session;
        bool positioned;         // a position of the session was seen (the late-join rule has placed it)
        std::uint64_t next_seq;
        std::uint64_t seen_end;  // every position below was received or revealed (highest seen + 1)
        std::size_t open_holes;
        std::size_t held;
        bool gave_up;
        bool late_joined;
        const StreamCounters& counters;
    };
    [[nodiscard]] ChannelView channel(std::uint32_t ch) const noexcept {
        const Channel& c = channels_[ch];
        return {c.sessions.current(), c.sessions.has(), c.positioned, c.next_seq, c.seen_end,
                c.holes.size(), c.held, c.gave_up, c.late_joined, c.counters};
    }
    // False when on_datagram would apply none of `key`'s messages because
    // every position of them lies below channel `ch`'s next_seq in its
    // current session (applied, or skipped past: a late join, a hole given
    // up), so they are duplicates: the other line's copy, mostly. A hint for
    // work done before on_datagram (ITCH's prefetch pass); true whenever
    // unsure. The stream's thread.
    [[nodiscard]] bool may_apply(std::uint32_t ch, const Key& key) const noexcept {
        const Channel& c = channels_[ch];
        const bool applied = key.kind == PacketKind::kMessages && key.seq < c.next_seq &&
                             key.count <= c.next_seq - key.seq && c.sessions.is_current(key.session);
        return !applied;
    }
    [[nodiscard]] std::uint32_t channels() const noexcept { return static_cast<std::uint32_t>(channels_.size()); }
    [[nodiscard]] std::size_t held_packets() const noexcept { return slots_.size() - free_.size(); }
    // The channel whose current session is `s` (a re-request server's unicast answer); UINT32_MAX if none.
    [[nodiscard]] std::uint32_t channel_of_session(const Session& s) const noexcept {
        for (std::uint32_t ch = 0; ch < channels_.size(); ++ch)
            if (channels_[ch].sessions.is_current(s)) return ch;
        return UINT32_MAX;
    }

    // The first position at or after `from` that channel `ch` has neither
    // applied nor holds (a re-request client need not ask for held ones).
    // O(held packets of the channel).
    [[nodiscard]] std::uint64_t first_missing(std::uint32_t ch, std::uint64_t from) const noexcept {
        const Channel& c = channels_[ch];
        std::uint64_t at = std::max(from, c.next_seq);
        for (std::uint32_t s = c.first_held; s != kNone && slots_[s].begin <= at; s = slots_[s].next)
            at = std::max(at, slots_[s].end);
        return at;
    }

    // One datagram of channel `ch` from a line (its key read once by
    // read_key), arrived at `recv_ns`.
    template <class Sink>
    void on_datagram(std::uint32_t ch, std::span<const std::byte> d, const Key& key, std::int64_t recv_ns,
                     Sink& sink) noexcept {
        Channel& c = channels_[ch];
        std::uint16_t received = 0;
        if (!receive(c, d, key, received)) return;
        if (!observe_session(ch, c, key.session, sink)) return;
        if (implausible(c, key.seq)) return;
        if (key.kind != PacketKind::kMessages) {
            heartbeat(ch, c, key.seq, recv_ns, sink);
            return;
        }
        if (received == 0) return;  // reveals nothing
        packet(ch, c, d, key.seq, key.seq, key.seq + received, recv_ns, sink, false);
    }

    // One answer of channel `ch`'s re-request server (ITCH50.md "Re-request
    // answers"), arrived at `recv_ns`. Of its messages only the positions
    // that were requested and are still missing (neither applied nor held:
    // they lie in an open hole) are applied, or held behind an older hole,
    // and count in recovered_messages when applied; the others count in
    // unrequested_answer_messages and are dropped. `requested(at)` returns
    // the first range [lo, hi) asked for with hi > at, as a std::pair (lo may
    // be below `at`; lo >= hi: none). An answer never starts a session: one
    // for another session than the channel's current one has nothing
    // requested. A heartbeat or end of session answers nothing and reveals
    // nothing (the lines carry those). Implausible positions are dropped
    // first, as on a line. O(held packets of the channel) per range applied.
    template <class Sink, class Requested>
    void on_answer(std::uint32_t ch, std::span<const std::byte> d, const Key& key, std::int64_t recv_ns, Sink& sink,
                   Requested&& requested) noexcept {
        Channel& c = channels_[ch];
        std::uint16_t received = 0;
        if (!receive(c, d, key, received)) return;
        if (!c.sessions.is_current(key.session)) {
            c.counters.unrequested_answer_messages.add(received);
            return;
        }
        if (implausible(c, key.seq) || key.kind != PacketKind::kMessages) return;
        const std::uint64_t first = key.seq, end = first + received;
        std::uint64_t taken = 0;
        for (std::uint64_t at = first; at < end;) {
            const auto [lo, hi] = next_wanted(ch, c, at, end, requested);
            if (lo >= hi) break;
            packet(ch, c, d, first, lo, hi, recv_ns, sink, true);
            taken += hi - lo;
            at = hi;
        }
        c.counters.unrequested_answer_messages.add(received - taken);
    }

    // Gives up, oldest first, every hole opened strictly more than its
    // channel's gap timeout before `now_ns` (offline: before each datagram
    // of the capture; live: what the sockets have been drained up to).
    template <class Sink>
    void expire(std::int64_t now_ns, Sink& sink) noexcept {
        for (;;) {
            const Hole* due = nullptr;
            for (const std::uint32_t ch : with_holes_) {
                const Hole& h = channels_[ch].holes.front();
                if (now_ns - h.opened_ns > channels_[ch].gap_timeout_ns && (due == nullptr || h.opened_ns < due->opened_ns))
                    due = &h;
            }
            if (due == nullptr) return;
            give_up_oldest(due->channel, sink);
        }
    }
    // Gives up every open hole (the end of a capture).
    template <class Sink>
    void finish(Sink& sink) noexcept {
        while (const Hole* h = oldest_hole()) give_up_oldest(h->channel, sink);
    }

    // A snapshot (ITCH50.md "Snapshot recovery") has replaced channel
    // `ch`'s books with the state before position `n`: the channel is no
    // longer given up; when `n` is beyond next_seq the positions below it
    // are in the snapshot (open holes below `n` are moot: neither filled
    // nor lost; held packets wholly below it are duplicates) and what is
    // held from `n` on is applied. O(held packets of the channel).
    template <class Sink>
    void resume_at(std::uint32_t ch, std::uint64_t n, Sink& sink) noexcept {
        Channel& c = channels_[ch];
        c.gave_up = false;
        if (n <= c.next_seq) return;
        while (!c.holes.empty() && c.holes.front().end <= n) c.holes.pop();
        if (!c.holes.empty() && c.holes.front().begin < n) c.holes.front().begin = n;
        if (c.holes.empty()) drop_channel_with_holes(ch);
        while (c.first_held != kNone && slots_[c.first_held].end <= n) {
            const std::uint32_t s = c.first_held;
            c.counters.duplicate_messages.add(slots_[s].end - slots_[s].begin);
            c.first_held = slots_[s].next;
            --c.held;
            free_.push_back(s);
        }
        c.next_seq = n;
        c.seen_end = std::max(c.seen_end, n);
        drain(ch, c, sink);
        close_filled_holes(ch, c);
    }
    // Positions a snapshot could not cover (below the first one kept while
    // it loaded): lost, and the channel given up again.
    void give_up_positions(std::uint32_t ch, std::uint64_t lost) noexcept {
        Channel& c = channels_[ch];
        c.gave_up = true;
        c.counters.lost_messages.add(lost);
        c.counters.holes_given_up.add();
    }
    // The channel is given up again (a hole given up while its snapshot loaded, at or after its position).
    void mark_given_up(std::uint32_t ch) noexcept { channels_[ch].gave_up = true; }
    // Positions met again after a snapshot reflected them.
    void count_duplicates(std::uint32_t ch, std::uint64_t n) noexcept { channels_[ch].counters.duplicate_messages.add(n); }

private:
    struct Hole {
        std::uint64_t begin, end;  // positions [begin, end) unseen when it opened
        std::int64_t opened_ns;
        std::uint32_t channel;
    };
    // A fixed ring of a channel's open holes, in position (and opening) order.
    class HoleRing {
    public:
        [[nodiscard]] std::size_t size() const noexcept { return n_; }
        [[nodiscard]] bool empty() const noexcept { return n_ == 0; }
        [[nodiscard]] Hole& front() noexcept { return h_[head_]; }
        void push(const Hole& h) noexcept {
            h_[(head_ + n_) % kMaxHolesPerChannel] = h;
            ++n_;
        }
        void pop() noexcept {
            head_ = (head_ + 1) % kMaxHolesPerChannel;
            --n_;
        }
        void clear() noexcept { head_ = n_ = 0; }
        template <class F>
        void each(F&& f) const noexcept {
            for (std::size_t i = 0; i < n_; ++i) f(h_[(head_ + i) % kMaxHolesPerChannel]);
        }

    private:
        std::array<Hole, kMaxHolesPerChannel> h_{};
        std::size_t head_ = 0, n_ = 0;
    };
    static constexpr std::uint32_t kNone = UINT32_MAX;
    struct Slot {
        std::uint64_t first;       // the datagram's first position
        std::uint64_t begin, end;  // the positions [begin, end) it is held for
        std::int64_t recv_ns;
        std::uint32_t len;
        std::uint32_t next;        // the channel's next held slot by position, kNone at the end
        bool retransmission;       // a re-request server's answer
    };
    struct Channel {
        SessionMemory sessions;
        bool positioned = false;   // a position of this session was seen (late join decided)
        bool gave_up = false;
        bool late_joined = false;
        std::uint64_t next_seq = 1;  // the next position to apply
        std::uint64_t seen_end = 1;  // every position below was received or revealed
        HoleRing holes;
        std::uint32_t first_held = kNone;
        std::size_t held = 0;
        std::int64_t gap_timeout_ns = 0;
        StreamCounters counters;
    };

    static std::size_t min_length(std::uint8_t type) noexcept { return Payload::min_length(type); }

    // Counts datagram `d` on channel `c` and walks its messages (`received`
    // of them); false: nothing more to do (malformed whole, or a captured
    // re-request).
    bool receive(Channel& c, std::span<const std::byte> d, const Key& key, std::uint16_t& received) noexcept {
        c.counters.packets.add();
        if (!key.valid() || d.size() > cfg_.max_datagram) {  // short, or larger than a slot can hold (hold() copies it whole)
            c.counters.malformed_packets.add();
            return false;
        }
        if (key.kind == PacketKind::kRequest) {
            c.counters.request_packets.add();
            return false;
        }
        const Walk w = walk(d, key, min_length, [](std::uint16_t, std::span<const std::byte>) noexcept {});
        c.counters.messages.add(w.received);
        if (key.seq > UINT64_MAX - w.received) {  // its end would pass 2^64 - 1: no position there
            c.counters.malformed_packets.add();
            return false;
        }
        if (w.fault != Fault::kNone) c.counters.malformed_packets.add();
        received = w.received;
        return true;
    }

    // ITCH50.md "Implausible positions": `seq` (a packet's first position, a
    // heartbeat's next) more than kImplausibleSeqJump beyond the highest
    // position seen of the current session. Before any position of the
    // session is seen there is nothing to measure against: the late-join
    // rule places the first datagram, whatever its position.
    bool implausible(Channel& c, std::uint64_t seq) noexcept {
        const std::uint64_t highest = c.seen_end - 1;
        if (!c.positioned || seq <= highest || seq - highest <= kImplausibleSeqJump) return false;
        c.counters.implausible_positions.add();
        return true;
    }

    // The first range [lo, hi) at or after `at` and before `end` of positions
    // that channel `ch` misses (in [next_seq, seen_end), no held packet
    // covering them) and `requested` names; lo >= hi: none.
    template <class Requested>
    [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> next_wanted(std::uint32_t ch, const Channel& c,
                                                                      std::uint64_t at, std::uint64_t end,
                                                                      Requested& requested) const noexcept {
        const std::uint64_t stop = std::min(end, c.seen_end);
        for (;;) {
            at = first_missing(ch, at);
            if (at >= stop) return {0, 0};
            const auto [rlo, rhi] = requested(at);
            if (rlo >= rhi || rlo >= stop) return {0, 0};
            if (rlo > at) {
                at = rlo;
                continue;
            }
            std::uint64_t hi = std::min(stop, rhi);
            for (std::uint32_t s = c.first_held; s != kNone; s = slots_[s].next)
                if (slots_[s].begin > at) {  // first_missing passed those below: the first beyond is the next held
                    hi = std::min(hi, slots_[s].begin);
                    break;
                }
            return {at, hi};
        }
    }

    // false: a stale session's packet, discarded.
    template <class Sink>
    bool observe_session(std::uint32_t ch, Channel& c, const Session& s, Sink& sink) noexcept {
        const SessionMark mark = c.sessions.observe(s);
        if (mark == SessionMark::kCurrent) return true;
        if (mark == SessionMark::kStale) {
            c.counters.stale_session_packets.add();
            return false;
        }
        const bool replaces = mark == SessionMark::kNewer;
        if (replaces) {
            end_session(ch, c);
            c.counters.session_changes.add();
        }
        sink.session_started(ch, replaces);
        return true;
    }

    // The channel's session is replaced: open holes lost, held packets discarded.
    void end_session(std::uint32_t ch, Channel& c) noexcept {
        c.holes.each([&](const Hole& h) {
            c.counters.lost_messages.add(unheld_in(c, std::max(h.begin, c.next_seq), h.end));
            c.counters.holes_given_up.add();
        });
        c.holes.clear();
        drop_channel_with_holes(ch);
        for (std::uint32_t s = c.first_held; s != kNone;) {
            const std::uint32_t next = slots_[s].next;
            free_.push_back(s);
            s = next;
        }
        c.first_held = kNone;
        c.held = 0;
        c.positioned = c.gave_up = c.late_joined = false;
        c.next_seq = c.seen_end = 1;
    }

    // The first position seen of a session: before it, a late join -- or,
    // when the recovery asks for the session from 1, a hole [1, first) that
    // the caller opens like any other.
    template <class Sink>
    void position(std::uint32_t ch, Channel& c, std::uint64_t first, Sink& sink) noexcept {
        c.positioned = true;
        if (first <= 1 || recovery_.recovers_from_start(ch)) return;
        c.next_seq = c.seen_end = first;
        c.late_joined = true;
        c.counters.late_join_messages.add(first - 1);
        sink.late_join(ch, first - 1);
    }

    template <class Sink>
    void heartbeat(std::uint32_t ch, Channel& c, std::uint64_t next, std::int64_t recv_ns, Sink& sink) noexcept {
        if (!c.positioned) position(ch, c, next, sink);
        if (next > c.seen_end) open_hole(ch, c, next, recv_ns, sink);
        if (c.holes.empty() && !c.gave_up) sink.alive(ch, recv_ns);
    }

    // Positions [begin, end) of datagram `d` (whose first position is `first`).
    template <class Sink>
    void packet(std::uint32_t ch, Channel& c, std::span<const std::byte> d, std::uint64_t first, std::uint64_t begin,
                std::uint64_t end, std::int64_t recv_ns, Sink& sink, bool retransmission) noexcept {
        if (!c.positioned) position(ch, c, begin, sink);
        if (end <= c.next_seq) {
            c.counters.duplicate_messages.add(end - begin);
            return;
        }
        if (begin > c.seen_end) open_hole(ch, c, begin, recv_ns, sink);
        c.seen_end = std::max(c.seen_end, end);
        while (begin > c.next_seq) {
            if (already_held(c, begin, end)) {
                c.counters.duplicate_messages.add(end - begin);
                return;
            }
            if (!free_.empty()) {
                hold(c, d, first, begin, end, recv_ns, retransmission);
                return;
            }
            const Hole* oldest = oldest_hole();  // the pool is full: held packets imply an open hole
            if (oldest == nullptr) [[unlikely]] return;
            give_up_oldest(oldest->channel, sink);
        }
        apply(ch, c, d, first, begin, end, recv_ns, sink, retransmission);
        drain(ch, c, sink);
        if (c.holes.empty() && !c.gave_up) sink.alive(ch, recv_ns);
    }

    // Applies positions [max(begin, next_seq), end) of datagram `d` (its
    // first position `first`): bytes receive() accepted, with at least
    // end - first messages received (a line's, an answer's or a held copy).
    template <class Sink>
    void apply(std::uint32_t ch, Channel& c, std::span<const std::byte> d, std::uint64_t first, std::uint64_t begin,
               std::uint64_t end, std::int64_t recv_ns, Sink& sink, bool retransmission) noexcept {
        if (c.next_seq > begin) c.counters.duplicate_messages.add(std::min(c.next_seq, end) - begin);
        if (end <= c.next_seq) return;
        const std::uint64_t from = c.next_seq;
        if (retransmission) c.counters.recovered_messages.add(end - from);
        // receive() walked these bytes and received at least end - first messages.
        walk_received(d, static_cast<std::uint16_t>(end - first), [&](std::uint16_t i, std::span<const std::byte> m) {
            const std::uint64_t pos = first + i;
            if (pos >= from) sink.message(ch, m, pos, recv_ns);
        });
        c.next_seq = end;
        close_filled_holes(ch, c);
    }

    // Applies the held packets that next_seq has reached.
    template <class Sink>
    void drain(std::uint32_t ch, Channel& c, Sink& sink) noexcept {
        while (c.first_held != kNone && slots_[c.first_held].begin <= c.next_seq) {
            const std::uint32_t s = c.first_held;
            c.first_held = slots_[s].next;
            --c.held;
            const Slot& slot = slots_[s];
            apply(ch, c, held_bytes(s), slot.first, slot.begin, slot.end, slot.recv_ns, sink, slot.retransmission);
            free_.push_back(s);
        }
    }

    void close_filled_holes(std::uint32_t ch, Channel& c) noexcept {
        while (!c.holes.empty() && c.holes.front().end <= c.next_seq) {
            c.holes.pop();
            c.counters.holes_filled.add();
        }
        if (c.holes.empty()) drop_channel_with_holes(ch);
    }

    template <class Sink>
    void open_hole(std::uint32_t ch, Channel& c, std::uint64_t begin_of_next, std::int64_t recv_ns, Sink& sink) noexcept {
        // Too many holes at once on one channel (heartbeats each revealing a
        // new one): its oldest is given up first.
        if (c.holes.size() == kMaxHolesPerChannel) give_up_oldest(ch, sink);
        if (c.holes.empty()) with_holes_.push_back(ch);
        c.holes.push({c.seen_end, begin_of_next, recv_ns, ch});
        recovery_.hole_opened(ch, c.sessions.current(), c.seen_end, begin_of_next - c.seen_end, recv_ns);
        c.seen_end = begin_of_next;
    }

    // Gives up channel `ch`'s oldest hole: its missing positions are lost,
    // the held packets up to its end applied, then whatever follows in order.
    template <class Sink>
    void give_up_oldest(std::uint32_t ch, Sink& sink) noexcept {
        Channel& c = channels_[ch];
        const std::uint64_t target = c.holes.front().end;
        c.holes.pop();  // first: applying what follows must not count it filled
        if (c.holes.empty()) drop_channel_with_holes(ch);
        std::uint64_t lost = 0;
        while (c.next_seq < target) {
            if (c.first_held != kNone && slots_[c.first_held].begin <= c.next_seq) {
                drain(ch, c, sink);
                continue;
            }
            const std::uint64_t to = c.first_held != kNone ? std::min(target, slots_[c.first_held].begin) : target;
            lost += to - c.next_seq;
            c.next_seq = to;
        }
        c.gave_up = true;
        c.counters.lost_messages.add(lost);
        c.counters.holes_given_up.add();
        sink.gave_up(ch, lost);
        drain(ch, c, sink);
        close_filled_holes(ch, c);
    }

    [[nodiscard]] const Hole* oldest_hole() noexcept {
        const Hole* best = nullptr;
        for (const std::uint32_t ch : with_holes_) {
            const Hole& h = channels_[ch].holes.front();
            if (best == nullptr || h.opened_ns < best->opened_ns) best = &h;
        }
        return best;
    }
    void drop_channel_with_holes(std::uint32_t ch) noexcept {
        const auto it = std::find(with_holes_.begin(), with_holes_.end(), ch);
        if (it != with_holes_.end()) with_holes_.erase(it);
    }

    // Positions of [begin, end) that no held packet covers.
    [[nodiscard]] std::uint64_t unheld_in(const Channel& c, std::uint64_t begin, std::uint64_t end) const noexcept {
        std::uint64_t n = 0, at = begin;
        for (std::uint32_t s = c.first_held; s != kNone && at < end; s = slots_[s].next) {
            if (slots_[s].begin > at) n += std::min(slots_[s].begin, end) - at;
            at = std::max(at, slots_[s].end);
        }
        return at < end ? n + (end - at) : n;
    }
    [[nodiscard]] bool already_held(const Channel& c, std::uint64_t begin, std::uint64_t end) const noexcept {
        for (std::uint32_t s = c.first_held; s != kNone; s = slots_[s].next)
            if (slots_[s].begin <= begin && slots_[s].end >= end) return true;
        return false;
    }
    void hold(Channel& c, std::span<const std::byte> d, std::uint64_t first, std::uint64_t begin, std::uint64_t end,
              std::int64_t recv_ns, bool retransmission) noexcept {
        const std::uint32_t s = free_.back();
        free_.pop_back();
        // Whole: receive() refused any datagram larger than a slot, and apply
        // walks a held copy unchecked (walk_received), so a cut copy would be read past.
        const std::size_t len = d.size();
        std::memcpy(bytes_.data() + std::size_t{s} * cfg_.max_datagram, d.data(), len);
        slots_[s] = {first, begin, end, recv_ns, static_cast<std::uint32_t>(len), kNone, retransmission};
        std::uint32_t* link = &c.first_held;
        while (*link != kNone && slots_[*link].begin <= begin) link = &slots_[*link].next;
        slots_[s].next = *link;
        *link = s;
        ++c.held;
        c.counters.held_max = std::max<std::uint64_t>(c.counters.held_max, c.held);
    }
    [[nodiscard]] std::span<const std::byte> held_bytes(std::uint32_t s) const noexcept {
        return {bytes_.data() + std::size_t{s} * cfg_.max_datagram, slots_[s].len};
    }

    StreamConfig cfg_;
    Recovery recovery_;
    std::vector<Channel> channels_;
    std::vector<Slot> slots_;
    std::vector<std::byte> bytes_;
    std::vector<std::uint32_t> free_;
    std::vector<std::uint32_t> with_holes_;  // channels with an open hole
};

}  // namespace tickgate::moldudp64
