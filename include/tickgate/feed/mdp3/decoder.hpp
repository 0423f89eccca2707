// The MDP 3.0 decoder: one datagram, whose header the pipeline has read once
// into a Key, into normalized Events (MDP3.md "Framing", "Malformed input").
// Each message is checked whole — root block and every group by its own
// header — before any of it is emitted; the messages before a bad one stand.
// SecurityIDs become dense instrument indices here (security_map.hpp).
// Never reads outside the datagram, never allocates or throws after
// construction. One instance per thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string_view>
#include <memory>
#include <span>
#include <vector>

#include "tickgate/event.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/mdp3/event.hpp"
#include "tickgate/feed/mdp3/security_map.hpp"
#include "tickgate/feed/mdp3/wire.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate::mdp3 {

// An MDP3 packet's stream key: MsgSeqNum and SendingTime, read once per
// datagram. The header names no channel: the line's is the packet's.
struct Key {
    std::uint64_t seq = 0;      // MsgSeqNum
    std::int64_t send_ns = 0;   // SendingTime
    std::uint32_t len = 0;      // datagram length
    std::uint16_t channel = 0;  // the line's channel
    Fault fault = Fault::kShortHeader;

    [[nodiscard]] bool valid() const noexcept { return fault == Fault::kNone; }
    [[nodiscard]] std::uint64_t next_seq() const noexcept { return seq + 1; }
    [[nodiscard]] PacketFingerprint fingerprint() const noexcept { return {send_ns, len}; }
};

// MDP3.md "Malformed input": MsgSeqNum 0 is corrupt (the venue numbers
// from 1): the key is invalid, so the packet is malformed whole, unread,
// and moves no channel state (the channel table ignores invalid keys).
[[nodiscard]] inline Key read_key(std::span<const std::byte> d, std::uint16_t line_channel) noexcept {
    Key k;
    k.len = static_cast<std::uint32_t>(d.size());
    k.channel = line_channel;
    if (d.size() < kPacketHeaderSize) return k;
    k.seq = load_le<std::uint32_t>(d.data());
    k.send_ns = static_cast<std::int64_t>(load_le<std::uint64_t>(d.data() + 4));
    k.fault = k.seq == 0 ? Fault::kBadSequence : Fault::kNone;
    return k;
}

// MDP3.md "Per channel": a MsgSeqNum lower than the channel's last one by
// more than this, or a restart at 1, is a new session.
inline constexpr std::uint64_t kSessionRewind = 1000;

// A channel's session, inferred from MsgSeqNum (the header carries none)
// and SendingTime. A restart is sent after everything before it, so a
// rewind sent earlier than the newest packet is no new session: it is the
// other line's lagging copy (a line may lag the other; a receive pass
// merges only what its sockets held when read), or, numbered past the new
// session's first packet but sent before it, the old session's last
// packets: stale, never the new session's own (which they would shadow as
// duplicates, losing their entries).
class SessionState {
public:
    [[nodiscard]] SessionMark observe(const Key& key) noexcept {
        if (newest_ == 0) {
            take_newest(key);
            return SessionMark::kFirst;
        }
        if (replaced_ && key.seq > start_seq_ && key.send_ns < start_ns_) return SessionMark::kStale;
        const bool rewound = (key.seq == 1 && newest_ > 1) || key.seq + kSessionRewind < newest_;
        if (rewound && key.send_ns > newest_ns_) {
            take_newest(key);
            start_seq_ = key.seq;
            start_ns_ = key.send_ns;
            replaced_ = true;
            return SessionMark::kNewer;
        }
        if (key.seq >= newest_) take_newest(key);
        return SessionMark::kCurrent;
    }

private:
    void take_newest(const Key& key) noexcept {
        newest_ = key.seq;
        newest_ns_ = key.send_ns;
    }
    std::uint64_t newest_ = 0;     // highest MsgSeqNum of the session; 0 = none yet
    std::int64_t newest_ns_ = 0;   // its SendingTime
    std::uint64_t start_seq_ = 0;  // the current session's first packet, once a session was replaced
    std::int64_t start_ns_ = 0;
    bool replaced_ = false;
};

// Upper bound of the events one datagram of `len` bytes can produce: every
// group entry is at least 12 bytes (volume) and a snapshot's levels pack
// three to an event, plus a session change.
[[nodiscard]] constexpr std::size_t max_events_for(std::size_t len) noexcept { return 2 + len / 4; }

// A channel's packet figures (MDP3.md "Summary": the per-channel object).
// Written by the decoder's thread, read by any.
struct ChannelCounters {
    RelaxedCounter packets;            // every datagram to the channel, a short one included
    RelaxedCounter duplicate_packets;  // a MsgSeqNum already taken: not parsed
    RelaxedCounter gaps;               // channel gaps (MsgSeqNum jumps)
    RelaxedCounter lost_packets;       // MsgSeqNums the gaps skipped
    RelaxedCounter resets;             // ChannelReset messages
    RelaxedCounter unknown_templates;
};

// MDP3's own decoder figures, beside DecoderCounters.
struct Mdp3Counters {
    RelaxedCounter unslotted_messages;   // entries, snapshots, definitions of a SecurityID without an instrument
                                         // slot (capacity.max_instruments full): emitted for kNoSlot, out of range
    RelaxedCounter dropped_definitions;  // definitions of a new SecurityID with [mdp3] max_definitions stored
    RelaxedCounter channel_resets;       // ChannelResets acted on (incremental lines)
    RelaxedCounter ignored_channel_resets;  // ChannelResets on a snapshot or definition line: never act
    RelaxedCounter heartbeats;
    RelaxedCounter definitions;
};

class PacketDecoder {
public:
    // The instrument id of an event whose SecurityID found no instrument
    // slot: beyond every max_instruments, so the sequencer counts it
    // (out_of_range_instruments) and the state log reports it.
    static constexpr std::uint32_t kNoSlot = SecurityMap::kNone;
    // Every channel id (u16) has a slot of its own: no two channels share
    // MsgSeqNum state, however many a config names.
    static constexpr std::uint32_t kChannelIds = 1u << 16;

    // Defaults of the decoder's own capacities (set_capacity below).
    static constexpr std::uint32_t kDefaultInstruments = 4096;     // Capacity::max_instruments
    static constexpr std::uint32_t kDefaultDefinitions = 200'000;  // Mdp3Config::max_definitions

    PacketDecoder()
        : map_(kDefaultInstruments),
          definitions_(kDefaultDefinitions),
          slot_of_(kChannelIds, kNoChannel),
          channels_(static_cast<Channel*>(std::malloc(kChannelIds * sizeof(Channel)))) {
        if (!channels_) throw std::bad_alloc();  // reserved: only the channels seen are touched
    }
    // Start-up only: `max_instruments` instrument slots (capacity.max_instruments:
    // the instrument table's ids) and room for `max_definitions` definitions,
    // both empty; symbols whose definition takes a slot untraded (subscribe_symbol) are kept.
    void set_capacity(std::uint32_t max_instruments, std::uint32_t max_definitions) {
        map_ = SecurityMap(max_instruments);
        definitions_ = DefinitionTable(max_definitions);
    }
    // Start-up only: a definition of `symbol` takes an instrument slot at once
    // (instruments.subscribe: the engine finds it before it trades).
    // False if it is not 1..16 bytes or `capacity` symbols are given already.
    bool subscribe_symbol(std::string_view symbol, std::uint32_t capacity) {
        if (!subscribed_) subscribed_ = std::make_unique<SymbolIndex>(capacity);
        return subscribed_->insert(symbol, 0);
    }
    // What the decoder allocates (its channel table reserved, touched per channel seen).
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t max_instruments, std::uint32_t max_definitions) noexcept {
        return map_slots(max_instruments) * 8 + std::size_t{max_instruments} * 4 + DefinitionTable::bytes_for(max_definitions) +
               kChannelIds * (sizeof(std::uint32_t) + sizeof(Channel));
    }
    // What of it is written at start-up: the instrument slots' hash and the
    // channel-id index (the definitions, the ids and the channel table are
    // touched as definitions, instruments and channels arrive).
    [[nodiscard]] static std::size_t resident_bytes_for(std::uint32_t max_instruments) noexcept {
        return map_slots(max_instruments) * 8 + kChannelIds * sizeof(std::uint32_t);
    }

    // Decodes `d` (whose header `key` holds: read_key of these bytes, so a
    // valid key means d holds a whole packet header) and hands each Event to
    // `sink(const Event&)` in wire order. A stale session is discarded
    // unread; a newer one first emits kSessionChange.
    template <class Sink>
    DecodeResult decode(std::span<const std::byte> d, const Key& key, SessionMark session, std::int64_t recv_ns,
                        std::uint8_t line, Sink&& sink) noexcept;

    // A datagram of the channel's snapshot or definition lines (config.hpp
    // is_unarbitrated_line): their MsgSeqNum is their own feed's, so it is
    // neither arbitrated nor checked against the incremental feed's, and
    // every copy is decoded (a snapshot applies by RptSeq, a definition
    // again is harmless). Counted in the channel's packets. A ChannelReset
    // here acts on nothing (MDP3.md: only the incremental feed's resets the
    // channel's books); it is counted in ignored_channel_resets.
    template <class Sink>
    DecodeResult decode_unarbitrated(std::span<const std::byte> d, const Key& key, std::int64_t recv_ns,
                                     std::uint8_t line, Sink&& sink) noexcept;

    [[nodiscard]] const DecoderCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] const Mdp3Counters& mdp3_counters() const noexcept { return mdp3_; }
    // The instrument slots: SecurityID of each instrument id.
    [[nodiscard]] const SecurityMap& securities() const noexcept { return map_; }
    [[nodiscard]] const DefinitionTable& definitions() const noexcept { return definitions_; }
    // Channels in order of first datagram, with their figures.
    // Any thread: a channel is counted once its slot is written (metrics read these live).
    [[nodiscard]] std::uint32_t channel_count() const noexcept {
        return std::atomic_ref<std::uint32_t>(const_cast<std::uint32_t&>(channel_count_)).load(std::memory_order_acquire);
    }
    [[nodiscard]] std::uint16_t channel_id(std::uint32_t slot) const noexcept { return channels_[slot].id; }
    [[nodiscard]] const ChannelCounters& channel_counters(std::uint32_t slot) const noexcept {
        return channels_[slot].counters;
    }
    void count_malformed_unread() noexcept {
        counters_.packets.add();
        counters_.malformed_packets.add();
    }

private:
    struct Checked {
        const TemplateLayout* layout = nullptr;  // wire.hpp's table: never copied per message
        const std::byte* root = nullptr;
        // Left unset (not zeroed per message): check() sets every group a
        // message of its Version has, and those are the only ones read.
        std::array<GroupSpan, kMaxGroups> groups;
    };

    DecodeResult malformed(Fault f, std::uint16_t messages) noexcept {
        counters_.messages.add(messages);
        counters_.malformed_packets.add();
        return {PacketVerdict::kMalformed, f, messages};
    }
    static Fault check(const std::byte* m, std::size_t size, Checked& out) noexcept;
    static Fault check_root(const std::byte* m, std::size_t size, const TemplateLayout& l, std::size_t& pos) noexcept;
    static Fault check_group(const std::byte* m, std::size_t size, std::size_t& pos, std::size_t header,
                             std::uint16_t min_entry, GroupSpan& out) noexcept;
    static Fault check_entries(const std::byte* m, std::size_t size, std::size_t& pos, std::size_t header,
                               std::uint16_t min_entry, GroupSpan& out) noexcept;
    // The fields every event of a packet shares.
    static Event packet_event(const Key& key, std::int64_t recv_ns, std::uint8_t line) noexcept {
        Event ev;
        ev.recv_ns = recv_ns;
        ev.send_ns = key.send_ns;
        ev.channel_id = key.channel;
        ev.line = line;
        ev.instrument_id = 0;
        return ev;
    }
    struct Channel;
    [[nodiscard]] static std::size_t map_slots(std::uint32_t max_instruments) noexcept {  // SecurityMap's
        std::size_t slots = 2;
        while (slots < std::size_t{max_instruments} * 2) slots *= 2;
        return slots;
    }
    // The messages after the packet header, each checked whole, into `sink`;
    // `incremental`: the channel's A/B lines (their ChannelResets act).
    template <class Sink>
    DecodeResult decode_messages(std::span<const std::byte> d, Channel& ch, Event& ev, bool incremental,
                                 Sink& sink) noexcept;
    // A book (`Book`) or sequenced message at `m` of `size` bytes: checked,
    // then one event per entry. Inlined into the message loop, its spans in
    // registers (no Checked on the stack).
    template <bool Book, class Sink>
    Fault entries_message(const std::byte* m, std::size_t size, const TemplateLayout& l, Event& ev, Sink& sink) noexcept;
    // Any other message: counted if unknown, else checked and emitted. Out of
    // line, so that its Checked and switch stay out of the loop above.
    template <class Sink>
    [[gnu::noinline]] Fault other_message(const std::byte* m, std::size_t size, const TemplateLayout& l, Channel& ch,
                                          Event& ev, bool incremental, Sink& sink) noexcept;
    template <class Sink>
    void emit(const Checked& c, Event& ev, bool incremental, Sink& sink) noexcept;
    template <class Sink>
    void emit_snapshot(const Checked& c, Event& ev, Sink& sink) noexcept;
    static void sort_by_level(const GroupSpan& g, std::uint8_t* order, std::uint32_t n) noexcept;
    template <class Sink>
    void definition(const Checked& c, Event& ev, Sink& sink) noexcept;
    // The instrument id of `security_id` for a sequenced message, given one
    // if it has none (its stored definition emitted first, into `sink`, so
    // the instrument starts with its symbol; `ev` is as it was after);
    // kNoSlot when every slot is taken.
    // Inlined: a known SecurityID is one probe of `known` (map_'s finder);
    // a new one goes to new_slot.
    template <class Sink>
    [[gnu::always_inline]] std::uint32_t slot_for(const SecurityMap::Finder& known, std::int32_t security_id, Event& ev,
                                                  Sink& sink) noexcept {
        const std::uint32_t id = known.find(security_id);
        if (id != SecurityMap::kNone) [[likely]]
            return id;
        return new_slot(security_id, ev, sink);
    }
    template <class Sink>
    [[gnu::noinline]] std::uint32_t new_slot(std::int32_t security_id, Event& ev, Sink& sink) noexcept;
    template <class Sink>
    void emit_definition(std::uint32_t id, const StoredDefinition& def, Event& ev, Sink& sink) noexcept;

    struct Channel {
        std::uint16_t id = 0;
        bool started = false;       // last_seq holds the session's last MsgSeqNum taken
        std::uint64_t last_seq = 0;
        ChannelCounters counters;
    };
    static constexpr std::uint32_t kNoChannel = std::numeric_limits<std::uint32_t>::max();
    Channel& channel(std::uint16_t id) noexcept {
        std::uint32_t& slot = slot_of_[id];
        if (slot == kNoChannel) {  // at most kChannelIds: every id its own slot
            slot = channel_count_;
            new (&channels_[slot]) Channel{};
            channels_[slot].id = id;
            std::atomic_ref<std::uint32_t>(channel_count_).store(slot + 1, std::memory_order_release);
        }
        return channels_[slot];
    }
    struct FreeChannels {
        void operator()(Channel* p) const noexcept { std::free(p); }  // Channel is trivially destructible
    };

    DecoderCounters counters_;
    Mdp3Counters mdp3_;
    SecurityMap map_;
    DefinitionTable definitions_;
    std::unique_ptr<SymbolIndex> subscribed_;  // symbols whose definition takes a slot; none: null
    std::vector<std::uint32_t> slot_of_;       // channel id -> slot in channels_
    std::unique_ptr<Channel[], FreeChannels> channels_;
    std::uint32_t channel_count_ = 0;
};

// The root block of the message at `m` of `size` bytes (layout `l`): it fits
// the message and holds the `l.min_root` bytes read from it; `pos` is set
// past it, where the groups start.
[[gnu::always_inline]] inline Fault PacketDecoder::check_root(const std::byte* m, std::size_t size,
                                                              const TemplateLayout& l, std::size_t& pos) noexcept {
    const std::uint16_t block_length = load_le<std::uint16_t>(m + 2);
    if (block_length > size - kMessageHeaderSize) return Fault::kOverrun;
    if (block_length < l.min_root) return Fault::kBadLength;
    pos = kMessageHeaderSize + block_length;
    return Fault::kNone;
}

// One repeating group at `pos` (advanced past it) of the message at `m` of
// `size` bytes: its `header`-byte dimension and its entries fit, and an
// entry holds the `min_entry` bytes read from it.
[[gnu::always_inline]] inline Fault PacketDecoder::check_group(const std::byte* m, std::size_t size, std::size_t& pos,
                                                               std::size_t header, std::uint16_t min_entry,
                                                               GroupSpan& out) noexcept {
    if (size - pos < header) return Fault::kOverrun;
    return check_entries(m, size, pos, header, min_entry, out);
}

// check_group past its first test: the `header` bytes at `pos` are inside the message.
[[gnu::always_inline]] inline Fault PacketDecoder::check_entries(const std::byte* m, std::size_t size,
                                                                 std::size_t& pos, std::size_t header,
                                                                 std::uint16_t min_entry, GroupSpan& out) noexcept {
    const std::uint16_t entry_len = load_le<std::uint16_t>(m + pos);
    const std::uint8_t count = load_le<std::uint8_t>(m + pos + header - 1);
    pos += header;
    if (count != 0 && entry_len < min_entry) return Fault::kBadLength;
    if (std::size_t{count} * entry_len > size - pos) return Fault::kOverrun;
    out = {m + pos, entry_len, count};
    pos += std::size_t{count} * entry_len;
    return Fault::kNone;
}

// Checks the message at `m` of `size` bytes (MsgSize, >= kMessageHeaderSize,
// inside the datagram) whose layout `out.layout` is known: its root block and
// every group its Version has fit. Book and sequenced messages take
// entries_message's unrolled check instead.
[[gnu::always_inline]] inline Fault PacketDecoder::check(const std::byte* m, std::size_t size, Checked& out) noexcept {
    const TemplateLayout& l = *out.layout;
    const std::uint16_t version = load_le<std::uint16_t>(m + 8);
    std::size_t pos = 0;
    if (const Fault f = check_root(m, size, l, pos); f != Fault::kNone) return f;
    out.root = m + kMessageHeaderSize;
    for (std::uint8_t g = 0; g < l.group_count; ++g) {
        const GroupLayout& gl = l.groups[g];
        if (version < gl.since_version) break;  // this and later groups are newer than the message
        if (const Fault f = check_group(m, size, pos, group_header_size(gl.header), gl.min_entry, out.groups[g]);
            f != Fault::kNone)
            return f;
    }
    return Fault::kNone;  // bytes after the last known group: a newer Version's, skipped
}

template <class Sink>
DecodeResult PacketDecoder::decode(std::span<const std::byte> d, const Key& key, SessionMark session,
                                   std::int64_t recv_ns, std::uint8_t line, Sink&& sink) noexcept {
    counters_.packets.add();
    Channel& ch = channel(key.channel);
    ch.counters.packets.add();
    if (!key.valid()) return malformed(key.fault, 0);
    if (session == SessionMark::kStale) {
        counters_.stale_session_packets.add();
        return {PacketVerdict::kStaleSession, Fault::kNone, 0};
    }
    if (session == SessionMark::kFirst || session == SessionMark::kNewer) ch.started = false;
    if (ch.started && key.seq <= ch.last_seq) {  // the other line's copy, or a late one: not parsed
        ch.counters.duplicate_packets.add();
        return {PacketVerdict::kDecoded, Fault::kNone, 0};
    }
    Event ev = packet_event(key, recv_ns, line);
    if (session == SessionMark::kNewer) {
        counters_.session_changes.add();
        ev.kind = EventKind::kSessionChange;
        ev.u.session.session = static_cast<std::uint32_t>(key.seq);
        sink(static_cast<const Event&>(ev));
    }
    if (ch.started && key.seq > ch.last_seq + 1) {  // lost on both lines
        ch.counters.gaps.add();
        ch.counters.lost_packets.add(key.seq - ch.last_seq - 1);
        ev.kind = kChannelGap;
        sink(static_cast<const Event&>(ev));
    }
    ch.started = true;
    ch.last_seq = key.seq;
    return decode_messages(d, ch, ev, true, sink);
}

template <class Sink>
DecodeResult PacketDecoder::decode_unarbitrated(std::span<const std::byte> d, const Key& key, std::int64_t recv_ns,
                                                std::uint8_t line, Sink&& sink) noexcept {
    counters_.packets.add();
    Channel& ch = channel(key.channel);
    ch.counters.packets.add();
    if (!key.valid()) return malformed(key.fault, 0);
    Event ev = packet_event(key, recv_ns, line);
    return decode_messages(d, ch, ev, false, sink);
}

template <class Sink>
DecodeResult PacketDecoder::decode_messages(std::span<const std::byte> d, Channel& ch, Event& ev, bool incremental,
                                            Sink& sink) noexcept {
    const std::byte* const base = d.data();
    const std::size_t size = d.size();
    std::size_t off = kPacketHeaderSize;
    std::uint32_t done = 0;
    Fault f = Fault::kNone;
    for (;;) {
        if (size - off < 2) {  // one test for the end and a stray byte
            if (off != size) f = Fault::kTruncatedCount;
            break;
        }
        const std::byte* m = base + off;
        const std::size_t msg_size = load_le<std::uint16_t>(m);
        if (msg_size < kMessageHeaderSize) {
            f = Fault::kBadLength;
            break;
        }
        if (msg_size > size - off) {
            f = Fault::kOverrun;
            break;
        }
        const TemplateLayout& l = layout_of(load_le<std::uint16_t>(m + 4));
        if (l.kind == TemplateKind::kBook) [[likely]]  // entries: most messages
            f = entries_message<true>(m, msg_size, l, ev, sink);
        else if (l.kind == TemplateKind::kSequenced)
            f = entries_message<false>(m, msg_size, l, ev, sink);
        else
            f = other_message(m, msg_size, l, ch, ev, incremental, sink);
        if (f != Fault::kNone) break;
        ++done;
        off += msg_size;
    }
    if (f != Fault::kNone) [[unlikely]]
        return malformed(f, static_cast<std::uint16_t>(done));
    counters_.messages.add(done);
    return {PacketVerdict::kDecoded, Fault::kNone, static_cast<std::uint16_t>(done)};
}

template <class Sink>
Fault PacketDecoder::other_message(const std::byte* m, std::size_t size, const TemplateLayout& l, Channel& ch,
                                   Event& ev, bool incremental, Sink& sink) noexcept {
    if (l.kind == TemplateKind::kUnknown) {
        counters_.unknown_messages.add();
        ch.counters.unknown_templates.add();
        return Fault::kNone;
    }
    Checked c;
    c.layout = &l;
    if (const Fault f = check(m, size, c); f != Fault::kNone) return f;
    if (incremental && l.kind == TemplateKind::kChannelReset) ch.counters.resets.add();
    emit(c, ev, incremental, sink);
    return Fault::kNone;
}

template <class Sink>
inline void PacketDecoder::emit(const Checked& c, Event& ev, bool incremental, Sink& sink) noexcept {
    const TemplateLayout& l = *c.layout;
    switch (l.kind) {
        case TemplateKind::kBook:
        case TemplateKind::kSequenced:  // never here: entries_message's (listed for -Wswitch)
            return;
        case TemplateKind::kSnapshot: return emit_snapshot(c, ev, sink);
        case TemplateKind::kChannelReset:
        case TemplateKind::kHeartbeat: {  // channel events: no instrument
            const bool reset = l.kind == TemplateKind::kChannelReset;
            if (reset && !incremental) {  // a snapshot or definition line's: the books stand
                mdp3_.ignored_channel_resets.add();
                return;
            }
            (reset ? mdp3_.channel_resets : mdp3_.heartbeats).add();
            ev.kind = reset ? kChannelReset : kChannelHeartbeat;
            ev.instrument_id = 0;
            sink(static_cast<const Event&>(ev));
            return;
        }
        case TemplateKind::kDefinition: return definition(c, ev, sink);
        case TemplateKind::kStatus:
        case TemplateKind::kOrderBook:  // checked, not read
        case TemplateKind::kUnknown:    // never here: other_message counts it first
            return;
    }
}

// Checks a book or sequenced message whole, then emits its entries (group
// 0), one event each; `Book`: book entries (MDPriceLevel), else trades,
// statistics, volume, limits. The check is unrolled for their shape
// (wire.hpp has_incremental_shape): the root block, NoMDEntries
// (groupSize), then at most an order-id group (groupSize8Byte, from its
// Version), checked though unread.
template <bool Book, class Sink>
[[gnu::always_inline]] inline Fault PacketDecoder::entries_message(const std::byte* m, std::size_t size,
                                                                   const TemplateLayout& l, Event& ev,
                                                                   Sink& sink) noexcept {
    // The root block and NoMDEntries' header fit the message, under one
    // bound; a message that fails it gets check_root's fault if it has one,
    // else check_group's. The root holds kIncRootRead bytes (wire.hpp
    // has_incremental_shape), a book entry kBookEntryRead.
    const std::int8_t exponent = l.price_exponent;  // read with the kind's line, not looked up again
    const std::size_t block_length = load_le<std::uint16_t>(m + 2);
    std::size_t pos = kMessageHeaderSize + block_length;
    constexpr std::size_t kEntriesHeader = group_header_size(GroupHeader::kSize3);
    if (pos + kEntriesHeader > size || block_length < kIncRootRead) [[unlikely]] {
        std::size_t root_end = 0;
        const Fault f = check_root(m, size, l, root_end);
        return f != Fault::kNone ? f : Fault::kOverrun;
    }
    GroupSpan g;
    if (const Fault f = check_entries(m, size, pos, kEntriesHeader, Book ? kBookEntryRead : l.groups[0].min_entry, g);
        f != Fault::kNone)
        return f;
    // Book templates all have the order-id group (since some Version).
    if ((Book || l.group_count >= 2) && load_le<std::uint16_t>(m + 8) >= l.groups[1].since_version) {
        GroupSpan order_ids;
        if (const Fault f = check_group(m, size, pos, group_header_size(GroupHeader::kSize8), 0, order_ids);
            f != Fault::kNone)
            return f;
    }
    // What every entry of the message shares is written once, before the
    // first: the sink only reads `ev`, and new_slot puts back what a
    // definition it emits through `ev` overwrote.
    ev.kind = Book ? kLevelEntry : kSequencedEntry;
    ev.u.venue.source_ns = static_cast<std::int64_t>(load_le<std::uint64_t>(m + kMessageHeaderSize + kIncTransactTime));
    if constexpr (Book)
        set_venue_field<std::int8_t, offsetof(EntryFields, price_exponent)>(ev, exponent);
    else
        set_entry_fields(ev, EntryFields{0, 0, 0, 0, 0, 0, exponent});
    // Book templates: constant offsets (wire.hpp's static_assert), folded into the loads.
    const SeqFields at = Book ? SeqFields{kBookSecurityId, kBookRptSeq} : l.seq;
    const SecurityMap::Finder known = map_.finder();
    const std::size_t entry_len = g.entry_len;
    const std::byte* const last = g.first + g.count * entry_len;
    // Steps by entry_len: >= min_entry > 0 when count > 0 (has_incremental_shape).
    for (const std::byte* e = g.first; e != last; e += entry_len) {
        ev.instrument_id = slot_for(known, load_le<std::int32_t>(e + at.security_id), ev, sink);
        ev.u.venue.seq = load_le<std::uint32_t>(e + at.rpt_seq);
        if constexpr (Book) {
            using E = EntryFields;
            const std::int32_t qty = load_le<std::int32_t>(e + kBookSize);
            const std::int32_t orders = load_le<std::int32_t>(e + kBookOrders);
            set_venue_field<std::int64_t, offsetof(E, price)>(ev, load_le<std::int64_t>(e + kBookPx));
            set_venue_field<std::int32_t, offsetof(E, qty)>(ev, qty == kNullInt32 ? 0 : qty);
            set_venue_field<std::int32_t, offsetof(E, orders)>(ev, orders == kNullInt32 ? 0 : orders);
            set_venue_field<std::uint8_t, offsetof(E, level)>(ev, load_le<std::uint8_t>(e + kBookLevel));
            set_venue_field<std::uint8_t, offsetof(E, action)>(ev, load_le<std::uint8_t>(e + kBookAction));
            set_venue_field<char, offsetof(E, entry_type)>(ev, static_cast<char>(load_le<std::uint8_t>(e + kBookType)));
        }
        sink(static_cast<const Event&>(ev));
    }
    return Fault::kNone;
}

// A snapshot: kSnapshotBegin (RptSeq, TransactTime, the outright bid and offer
// entries with a level), then those levels in level order, bids first, packed
// kLevelsPerEvent to an event. Implied and other entry types never touch the book.
template <class Sink>
void PacketDecoder::emit_snapshot(const Checked& c, Event& ev, Sink& sink) noexcept {
    const std::uint32_t id = slot_for(map_.finder(), load_le<std::int32_t>(c.root + kSnapSecurityId), ev, sink);
    const GroupSpan& g = c.groups[0];
    // Entries of each side ordered by level: at most 255 per group. CME
    // sends them in level order, so they are taken in wire order, the
    // counts in registers (indexed by side they lived on the stack, and each
    // entry waited for the last one's store), and only a side found out of
    // order is sorted afterwards.
    std::uint8_t order[2][255];
    std::uint32_t n_bids = 0, n_asks = 0;
    std::int8_t last_bid = 0, last_ask = 0;  // the last level of each side so far (levels are >= 1)
    bool bids_in_order = true, asks_in_order = true;
    for (std::size_t i = 0; i < g.count; ++i) {
        const std::byte* e = g.entry(i);
        const char type = static_cast<char>(load_le<std::uint8_t>(e + kSnapType));
        const std::int8_t level = load_le<std::int8_t>(e + kSnapLevel);
        if ((type != '0' && type != '1') || level < 1 || level == kNullLevel) continue;
        if (type == '0') {
            bids_in_order &= level >= last_bid;
            last_bid = level;
            order[0][n_bids++] = static_cast<std::uint8_t>(i);
        } else {
            asks_in_order &= level >= last_ask;
            last_ask = level;
            order[1][n_asks++] = static_cast<std::uint8_t>(i);
        }
    }
    if (!bids_in_order) [[unlikely]] sort_by_level(g, order[0], n_bids);
    if (!asks_in_order) [[unlikely]] sort_by_level(g, order[1], n_asks);
    const std::uint32_t n[2] = {n_bids, n_asks};
    ev.kind = EventKind::kSnapshotBegin;
    ev.instrument_id = id;
    ev.u.snapshot.seq = load_le<std::uint32_t>(c.root + kSnapRptSeq);
    ev.u.snapshot.source_ns = static_cast<std::int64_t>(load_le<std::uint64_t>(c.root + kSnapTransactTime));
    ev.u.snapshot.n_bids = static_cast<std::uint8_t>(n_bids);
    ev.u.snapshot.n_asks = static_cast<std::uint8_t>(n_asks);
    ev.u.snapshot.price_exponent = c.layout->price_exponent;
    if (id == kNoSlot) [[unlikely]] {  // counted out of range; its levels are no one's
        ev.u.snapshot.n_bids = ev.u.snapshot.n_asks = 0;
        sink(static_cast<const Event&>(ev));
        return;
    }
    sink(static_cast<const Event&>(ev));
    ev.kind = EventKind::kSnapshotLevels;
    std::uint8_t k = 0;
    for (int s = 0; s < 2; ++s) {
        for (std::uint32_t j = 0; j < n[s]; ++j) {
            const std::byte* e = g.entry(order[s][j]);
            const std::int32_t qty = load_le<std::int32_t>(e + kSnapSize);
            ev.u.levels.price[k] = load_le<std::int64_t>(e + kSnapPx);
            ev.u.levels.qty[k] = qty == kNullInt32 || qty < 0 ? 0u : static_cast<std::uint32_t>(qty);
            if (++k == kLevelsPerEvent) {
                ev.u.levels.count = k;
                sink(static_cast<const Event&>(ev));
                k = 0;
            }
        }
    }
    if (k != 0) {
        ev.u.levels.count = k;
        sink(static_cast<const Event&>(ev));
    }
}

// A stable insertion sort of a snapshot side's entry indices by MDPriceLevel
// (equal levels keep wire order): only for a side the venue sent out of order.
[[gnu::noinline]] inline void PacketDecoder::sort_by_level(const GroupSpan& g, std::uint8_t* order, std::uint32_t n) noexcept {
    for (std::uint32_t j = 1; j < n; ++j) {
        const std::uint8_t index = order[j];
        const std::int8_t level = load_le<std::int8_t>(g.entry(index) + kSnapLevel);
        std::uint32_t k = j;
        for (; k > 0 && load_le<std::int8_t>(g.entry(order[k - 1]) + kSnapLevel) > level; --k) order[k] = order[k - 1];
        order[k] = index;
    }
}

template <class Sink>
std::uint32_t PacketDecoder::new_slot(std::int32_t security_id, Event& ev, Sink& sink) noexcept {
    const std::uint32_t id = map_.index_of(security_id);
    if (id == SecurityMap::kNone) [[unlikely]] {
        mdp3_.unslotted_messages.add();
        return kNoSlot;
    }
    if (const StoredDefinition* def = definitions_.find(security_id)) {
        const Event kept = ev;  // what the caller set once for a message's entries (entries_message)
        emit_definition(id, *def, ev, sink);
        ev = kept;
    }
    return id;
}

template <class Sink>
void PacketDecoder::emit_definition(std::uint32_t id, const StoredDefinition& def, Event& ev, Sink& sink) noexcept {
    ev.kind = EventKind::kDefinition;
    ev.instrument_id = id;
    std::memcpy(ev.u.definition.symbol, def.symbol, sizeof ev.u.definition.symbol);
    ev.u.definition.price_exponent = def.price_exponent;
    ev.u.definition.book_depth = def.book_depth;
    ev.u.definition.removed = def.removed;
    sink(static_cast<const Event&>(ev));
}

// A definition (MDP3.md "Definitions"): Symbol (its first 16 characters),
// the GBX feed's MarketDepth, and whether it deletes the instrument, stored
// by SecurityID; it takes no instrument slot unless its symbol is
// subscribed. An instrument that has a slot gets it as a kDefinition event;
// one that trades later gets it then (slot_for). A new SecurityID with the
// store full is counted and dropped.
template <class Sink>
void PacketDecoder::definition(const Checked& c, Event& ev, Sink& sink) noexcept {
    const std::int32_t security_id = load_le<std::int32_t>(c.root + kDefSecurityId);
    StoredDefinition def{};
    std::memcpy(def.symbol, c.root + kDefSymbol, sizeof def.symbol);
    def.price_exponent = c.layout->price_exponent;
    def.removed = load_le<char>(c.root + kDefUpdateAction) == 'D';
    const GroupSpan& feeds = c.groups[kDefFeedTypesGroup];
    for (std::size_t i = 0; i < feeds.count; ++i) {
        const std::byte* e = feeds.entry(i);
        if (std::memcmp(e + kFeedType, "GBX", 3) == 0) {
            const std::int8_t depth = load_le<std::int8_t>(e + kFeedMarketDepth);
            def.book_depth = depth > 0 ? static_cast<std::uint8_t>(depth) : 0;
        }
    }
    mdp3_.definitions.add();
    if (!definitions_.put(security_id, def)) [[unlikely]] {
        mdp3_.dropped_definitions.add();
        ev.kind = EventKind::kDefinition;  // for no instrument: counted out of range, logged
        ev.instrument_id = kNoSlot;
        sink(static_cast<const Event&>(ev));
        return;
    }
    std::uint32_t id = map_.find(security_id);
    if (id == SecurityMap::kNone && subscribed_ && !def.removed &&
        subscribed_->find({def.symbol, strnlen(def.symbol, sizeof def.symbol)}) != SymbolIndex::kNone)
        id = map_.index_of(security_id);  // subscribed: a slot before it trades (none left: kNone)
    if (id != SecurityMap::kNone) emit_definition(id, def, ev, sink);
}

}  // namespace tickgate::mdp3
