// A/B line arbitration at packet level: merges the two lines of each channel
// into one stream in packet_seq order. The first copy of a packet wins; the
// second is dropped whole (a duplicate packet). A packet that arrives ahead
// of a hole is held for up to `hold_ns` so the other line can fill the hole;
// then it is released and the sequencer sees (and counts) the gap. Without
// it, a line running one receive batch ahead of the other would make the
// sequencer count gaps that the slower line is about to fill.
// A packet is a duplicate only if the arbiter delivered that very packet:
// same packet_seq and same bytes (send time, length) — it remembers the last
// 4,096 per channel. Anything else goes on to the sequencer, whose
// per-message rule decides. A packet further ahead than the window is passed
// on at once; the channel jumps to it only when the other line's copy of it
// arrives (both lines lost what lies below) and never by more than the
// spec's plausible jump (QFB1.md rule 6), so a forged or corrupt packet_seq
// cannot make the genuine packets after it look old.
// The channel and its session come from the channel table (channels.hpp):
// the arbiter reads no header, it is handed each datagram's key and mark.
// For protocols whose packets are numbered one by one (HolePolicy
// kGiveUpAfterHold); MoldUDP64's hold-and-re-request stream is its own stage.
// No allocation after construction; one thread (the network thread).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "tickgate/counter.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/channels.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate {

struct ArbiterCounters {
    RelaxedCounter duplicate_packets;  // second copies (or older) dropped
    RelaxedCounter held_packets;       // packets that waited for a hole to fill
    RelaxedCounter filled_holes;       // holes the other line filled while held
    RelaxedCounter released_gaps;      // packet seqs given up as lost on both lines
    RelaxedCounter unarbitrated;       // passed through: bad header, untracked or too many channels
    RelaxedCounter unconfirmed_jumps;  // packets beyond the window passed on without moving the channel
    RelaxedCounter late_packets;       // not a copy of a packet delivered (given up, or other bytes): passed on
};

template <VenueProtocol P>
class PacketArbiter {
    static_assert(P::kHolePolicy == HolePolicy::kGiveUpAfterHold,
                  "the packet arbiter holds packets numbered one by one; a hold-and-re-request stream "
                  "(MoldUDP64) needs its own stage");

public:
    using Key = typename P::Key;

    // `channels`: the channel-table slots arbitrated (slot < channels; a
    // packet of a higher slot is passed on unarbitrated); `window`: packets
    // that can be held per channel (power of two); `hold_ns`: how long.
    PacketArbiter(std::uint32_t channels, std::uint32_t window, std::int64_t hold_ns)
        : window_(window), mask_(window - 1), hold_ns_(hold_ns), states_(channels),
          slots_(std::size_t{channels} * window), delivered_(std::size_t{channels} * delivered_span(window)) {
        for (std::uint32_t i = 0; i < channels; ++i) states_[i].first_slot = i * window;
    }

    // What the constructor allocates (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t channels, std::uint32_t window) noexcept {
        return std::size_t{channels} * (sizeof(State) + window * sizeof(Slot) +
                                        delivered_span(window) * sizeof(DeliveredMark));
    }

    // Offers one datagram, whose key the channel table observed as `seen`;
    // deliver(span<const std::byte>, const Key&, SessionMark, recv_ns, line)
    // is called for it and for every held packet it releases, in order.
    template <class Deliver>
    void offer(std::span<const std::byte> d, const Key& key, typename ChannelStreams<P>::Observed seen,
               std::int64_t recv_ns, std::uint8_t line, Deliver&& deliver) noexcept;

    // Releases holds whose time is up at `now_ns`. Call it only with a time
    // before which every datagram of every line has been offered (for
    // sockets: Receiver::drained_until()), or a copy still queued on the
    // other line would be taken for lost.
    template <class Deliver>
    void expire(std::int64_t now_ns, Deliver&& deliver) noexcept {
        for (State& st : states_) expire_channel(st, now_ns, deliver);
    }

    // Earliest deadline of any hold (INT64_MAX when nothing is held).
    [[nodiscard]] std::int64_t next_deadline() const noexcept {
        std::int64_t d = INT64_MAX;
        for (const State& st : states_)
            if (st.held > 0 && st.deadline < d) d = st.deadline;
        return d;
    }
    [[nodiscard]] const ArbiterCounters& counters() const noexcept { return counters_; }

private:
    struct Slot {
        Key key;
        std::int64_t recv_ns;
        std::uint8_t line;
        bool used;
        std::byte data[P::kMaxDatagram];
    };
    // How many delivered packets are remembered per channel: more than the
    // hold window, since one line can run a whole receive batch (up to 1,024
    // datagrams) ahead of the other; a copy arriving later than that still
    // goes to the sequencer, whose per-message rule drops it.
    static constexpr std::uint64_t delivered_span(std::uint64_t window) noexcept {
        return window > 4096 ? window : 4096;
    }
    // What tells two packets with the same seq apart (the key's
    // fingerprint): A and B copies are byte-identical, so another send time
    // or length is another packet (forged, corrupt, or an old capture's).
    struct DeliveredMark {
        std::uint64_t packet_seq = 0;
        PacketFingerprint fp;
        std::uint8_t line = 0;
        bool valid = false;
    };
    struct State {
        std::uint64_t expected = 0;   // next packet_seq to deliver
        std::int64_t deadline = 0;    // of the oldest hold
        std::uint32_t held = 0;
        std::uint32_t first_slot = 0;
    };

    [[nodiscard]] std::size_t delivered_index(const State& st, std::uint64_t seq) const noexcept {
        const std::uint64_t span = delivered_span(window_);
        return st.first_slot / window_ * span + (seq & (span - 1));
    }
    [[nodiscard]] const DeliveredMark* delivered_mark(const State& st, std::uint64_t seq) const noexcept {
        const DeliveredMark& m = delivered_[delivered_index(st, seq)];
        return m.valid && m.packet_seq == seq ? &m : nullptr;
    }
    [[nodiscard]] bool is_held(const State& st, std::uint64_t seq) const noexcept {
        const Slot& s = slots_[st.first_slot + (seq & mask_)];
        return s.used && s.key.seq == seq;
    }

    // Delivers a packet and remembers it, so that a later copy of it (same
    // packet_seq, same bytes) is known to be a duplicate.
    template <class Deliver>
    void deliver_marked(const State& st, std::span<const std::byte> d, const Key& key, SessionMark mark,
                        std::int64_t recv_ns, std::uint8_t line, Deliver& deliver) noexcept {
        delivered_[delivered_index(st, key.seq)] = {key.seq, key.fingerprint(), line, true};
        deliver(d, key, mark, recv_ns, line);
    }
    template <class Deliver>
    void deliver_held(const State& st, Slot& s, Deliver& deliver) noexcept {
        deliver_marked(st, std::span<const std::byte>(s.data, s.key.len), s.key, SessionMark::kCurrent, s.recv_ns,
                       s.line, deliver);
    }

    // Moves `expected` over what can go now: held packets (delivered in
    // order) and packets already passed on ahead of the window.
    template <class Deliver>
    void advance(State& st, Deliver& deliver) noexcept {
        for (;;) {
            if (st.held > 0 && is_held(st, st.expected)) {
                Slot& s = slots_[st.first_slot + (st.expected & mask_)];
                s.used = false;
                --st.held;
                ++st.expected;
                deliver_held(st, s, deliver);
            } else if (delivered_mark(st, st.expected) != nullptr) {
                ++st.expected;
            } else {
                return;
            }
        }
    }

    // Gives up on the hole at `expected`: skips to the next packet held or
    // already passed on (one exists within the window while anything is held).
    template <class Deliver>
    void skip_hole(State& st, Deliver& deliver) noexcept {
        for (std::uint64_t d = 1; d < window_; ++d) {  // offsets: packet_seq may wrap near 2^64
            const std::uint64_t k = st.expected + d;
            if (is_held(st, k) || delivered_mark(st, k) != nullptr) {
                counters_.released_gaps.add(k - st.expected);
                st.expected = k;
                break;
            }
        }
        advance(st, deliver);
        if (st.held > 0) st.deadline = deadline_after(oldest_recv(st));
    }

    // Delivers the held packets below `target` (> expected) in order, gives
    // up every other seq below it that was not passed on already, and makes
    // `target` the next expected.
    template <class Deliver>
    void release_below(State& st, std::uint64_t target, Deliver& deliver) noexcept {
        const std::uint64_t span = target - st.expected;
        const std::uint64_t scan = std::min<std::uint64_t>(span, delivered_span(window_));
        std::uint64_t next = st.expected;  // lowest seq not yet delivered or given up
        for (std::uint64_t d = 0; d < scan; ++d) {
            const std::uint64_t k = st.expected + d;  // < target: cannot wrap
            if (is_held(st, k)) {
                counters_.released_gaps.add(k - next);
                Slot& s = slots_[st.first_slot + (k & mask_)];
                s.used = false;
                --st.held;
                next = k + 1;
                deliver_held(st, s, deliver);
            } else if (delivered_mark(st, k) != nullptr) {
                counters_.released_gaps.add(k - next);
                next = k + 1;
            }
        }
        counters_.released_gaps.add(target - next);
        st.expected = target;
        if (st.held > 0) st.deadline = deadline_after(oldest_recv(st));
    }

    // A hold's deadline, saturating (arrival times come from the wire/capture).
    [[nodiscard]] std::int64_t deadline_after(std::int64_t t) const noexcept {
        return t > INT64_MAX - hold_ns_ ? INT64_MAX : t + hold_ns_;
    }

    [[nodiscard]] std::int64_t oldest_recv(const State& st) const noexcept {
        std::int64_t t = INT64_MAX;
        for (std::uint64_t d = 0; d < window_; ++d) {
            const std::uint64_t k = st.expected + d;
            const Slot& s = slots_[st.first_slot + (k & mask_)];
            if (s.used && s.key.seq == k && s.recv_ns < t) t = s.recv_ns;
        }
        return t;
    }

    template <class Deliver>
    void flush(State& st, Deliver& deliver) noexcept {
        while (st.held > 0) skip_hole(st, deliver);
    }

    template <class Deliver>
    void expire_channel(State& st, std::int64_t now_ns, Deliver& deliver) noexcept {
        while (st.held > 0 && now_ns >= st.deadline) skip_hole(st, deliver);
    }

    const std::uint64_t window_;
    const std::uint64_t mask_;
    const std::int64_t hold_ns_;
    std::vector<State> states_;  // [channel-table slot]
    std::vector<Slot> slots_;
    std::vector<DeliveredMark> delivered_;  // [channel][seq % delivered_span]: the last packet_seq delivered there
    ArbiterCounters counters_;
};

template <VenueProtocol P>
template <class Deliver>
void PacketArbiter<P>::offer(std::span<const std::byte> d, const Key& key, typename ChannelStreams<P>::Observed seen,
                             std::int64_t recv_ns, std::uint8_t line, Deliver&& deliver) noexcept {
    if (seen.slot >= states_.size() || d.size() > P::kMaxDatagram) {
        counters_.unarbitrated.add();  // bad header, untracked channel, or no room to hold it
        deliver(d, key, seen.mark, recv_ns, line);
        return;
    }
    State& st = states_[seen.slot];
    const std::uint64_t seq = key.seq;
    if (seen.mark == SessionMark::kFirst || seen.mark == SessionMark::kNewer) {
        flush(st, deliver);  // the old session's held packets go first
        st.expected = seq;
        std::fill_n(delivered_.begin() + static_cast<std::ptrdiff_t>(delivered_index(st, 0)), delivered_span(window_),
                    DeliveredMark{});  // seq starts afresh
    } else if (seen.mark == SessionMark::kStale) {
        deliver(d, key, seen.mark, recv_ns, line);  // the decoder discards and counts it
        return;
    }
    const PacketFingerprint fp = key.fingerprint();
    if (const DeliveredMark* m = delivered_mark(st, seq); m != nullptr && m->fp == fp) {
        counters_.duplicate_packets.add();
        // A copy from the other line of a packet passed on ahead of `expected`:
        // both lines carry it, so both really lost what lies below it. (One
        // line's packets, forged or corrupt, can never move the channel.)
        if (seq > st.expected && m->line != line && seq - st.expected <= kImplausibleSeqJump) {
            release_below(st, seq, deliver);
            advance(st, deliver);
            if (st.held > 0) st.deadline = deadline_after(oldest_recv(st));
        }
        return;
    }
    if (seq < st.expected) {
        // Given up as lost, from before the channel's start, or other bytes
        // than the packet delivered with this seq: not known to be a copy, so
        // it goes on and the sequencer's per-message rule decides.
        counters_.late_packets.add();
        if (st.expected - seq < delivered_span(window_)) deliver_marked(st, d, key, seen.mark, recv_ns, line, deliver);
        else deliver(d, key, seen.mark, recv_ns, line);
        return;
    }
    if (seq == st.expected) {
        ++st.expected;
        deliver_marked(st, d, key, seen.mark, recv_ns, line, deliver);
        const bool had_holds = st.held > 0;
        advance(st, deliver);
        if (had_holds) {
            counters_.filled_holes.add();
            if (st.held > 0) st.deadline = deadline_after(oldest_recv(st));
        }
        return;
    }
    if (seq - st.expected >= window_) {  // seq > expected here; the difference cannot wrap
        // Too far ahead to hold: what is held goes first, in order. Alone so
        // far, this is the start of a jump or a forged/corrupt seq: passed
        // on (the sequencer judges its messages), the channel stays put
        // until the other line's copy confirms it.
        flush(st, deliver);
        counters_.unconfirmed_jumps.add();
        deliver_marked(st, d, key, seen.mark, recv_ns, line, deliver);
        return;
    }
    Slot& s = slots_[st.first_slot + (seq & mask_)];
    if (s.used && s.key.seq == seq) {
        if (s.key.fingerprint() == fp) {
            counters_.duplicate_packets.add();
            return;
        }
        counters_.late_packets.add();  // another packet with a held one's seq: the sequencer decides
        deliver(d, key, seen.mark, recv_ns, line);
        return;
    }
    s.key = key;
    s.recv_ns = recv_ns;
    s.line = line;
    s.used = true;
    std::memcpy(s.data, d.data(), d.size());
    if (st.held++ == 0) st.deadline = deadline_after(recv_ns);
    counters_.held_packets.add();
}

}  // namespace tickgate
