// The protocol seam. A venue protocol is a type the pipeline is instantiated
// with (no virtual call, no std::function per message). It provides:
//
//   P::kName            "qfb1", the name in configs and on the command line
//   P::kTitle           "QFB/1", its name in messages (protocols.hpp lists it)
//   P::kMaxDatagram     its largest datagram (sizes the arbiter's held slots)
//   P::kHolePolicy      what a sequence hole means (HolePolicy below)
//   P::kHeaderNamesChannel  the header carries a channel id (QFB/1), checked
//                       against the line's; otherwise the line decides (MDP3, MoldUDP64)
//   P::Key              a packet's stream key, read once per datagram by
//                       P::read_key(datagram, line_channel): channel, session,
//                       first sequence number, next one, a fingerprint
//   P::SessionState     one per channel: says whether a key's session is the
//                       channel's current one, its first, a newer one or a stale one
//   P::max_events_for(len)  constexpr: the most Events a datagram of `len` bytes decodes into
//   P::Decoder          datagram (+ its key and session mark) -> normalized Events
//   P::Rules            its sequencing rules, the policy the shared sequencer
//                       is instantiated with (SequencingRules in feed/sequencer.hpp)
//   P::Book             the book type its events build (book/): P::Rules::Book
//
// Everything else — the channel table, arbiter, ring, sequencer, gate,
// replay, capture, send, metrics, state log and the CLI — is shared.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "tickgate/counter.hpp"
#include "tickgate/event.hpp"

namespace tickgate {

// How a channel's sequence hole is handled.
enum class HolePolicy : std::uint8_t {
    // At-most-once (QFB/1, MDP3): hold what follows a hole for the A/B hold
    // time so the other line can fill it, then give it up and let the
    // sequencer count the loss. Packets are numbered one by one.
    kGiveUpAfterHold,
    // At-least-once, exactly-once by position (MoldUDP64): hold and
    // re-request the hole; packets advance the position by their message count.
    kHoldAndRerequest,
};

// What a packet's session is to its channel (P::SessionState::observe).
enum class SessionMark : std::uint8_t {
    kCurrent,  // the channel's current session
    kFirst,    // the first session seen on the channel
    kNewer,    // a new session replaces the current one: the channel resets
    kStale,    // an older (or already replaced) session: discarded, counted
};

// Two packets with the same sequence number are copies only if these agree
// (A and B copies are byte-identical; another send time or length is another packet).
struct PacketFingerprint {
    std::int64_t send_ns = 0;
    std::uint32_t len = 0;
    bool operator==(const PacketFingerprint&) const = default;
};

// Why decoding of a datagram stopped early. Protocols map their own faults
// onto these (kNone: well formed).
enum class Fault : std::uint8_t {
    kNone = 0,
    kShortHeader,      // shorter than the packet header
    kBadMagic,
    kBadVersion,
    kTruncatedCount,   // ended before the header's message count
    kOverrun,          // a message runs past the datagram
    kBadLength,        // a known type whose length is not its size, or a length too small
    kTrailingBytes,    // bytes left after the last message
    kBadSequence,      // a sequence number the venue never sends (MDP3 MsgSeqNum 0)
};

enum class PacketVerdict : std::uint8_t {
    kDecoded,          // every message delivered
    kMalformed,        // messages before the fault delivered, counted once
    kStaleSession,     // older session than the channel's: discarded unread
};

struct DecodeResult {
    PacketVerdict verdict;
    Fault fault;
    std::uint16_t messages;  // messages delivered to the sink (events may be more)
};

// What every decoder counts (the summary's and the metrics' decoder figures).
struct DecoderCounters {
    RelaxedCounter packets;
    RelaxedCounter messages;  // messages read (known and unknown types)
    RelaxedCounter malformed_packets;
    RelaxedCounter unknown_messages;
    RelaxedCounter stale_session_packets;
    RelaxedCounter session_changes;
};

namespace detail {
struct EventSinkArchetype {
    void operator()(const Event&) const noexcept {}
};
}  // namespace detail

template <class K>
concept StreamKey = std::is_trivially_copyable_v<K> && requires(const K& k) {
    { k.valid() } noexcept -> std::same_as<bool>;           // the header could be read
    { k.channel } -> std::convertible_to<std::uint16_t>;
    { k.seq } -> std::convertible_to<std::uint64_t>;         // the packet's (first) sequence number
    { k.next_seq() } noexcept -> std::same_as<std::uint64_t>;  // the one after it
    { k.fingerprint() } noexcept -> std::same_as<PacketFingerprint>;
};

template <class P>
concept VenueProtocol =
    StreamKey<typename P::Key> && std::default_initializable<typename P::SessionState> &&
    requires(std::span<const std::byte> d, const typename P::Key& key, typename P::SessionState& session,
             typename P::Decoder& decoder, std::int64_t t, std::uint8_t line, std::uint16_t channel,
             SessionMark mark) {
        { P::kName } -> std::convertible_to<std::string_view>;
        { P::kMaxDatagram } -> std::convertible_to<std::size_t>;
        { P::kHolePolicy } -> std::convertible_to<HolePolicy>;
        { P::kHeaderNamesChannel } -> std::convertible_to<bool>;
        { P::read_key(d, channel) } noexcept -> std::same_as<typename P::Key>;
        { session.observe(key) } noexcept -> std::same_as<SessionMark>;
        { P::max_events_for(std::size_t{}) } noexcept -> std::same_as<std::size_t>;
        typename std::integral_constant<std::size_t, P::max_events_for(1)>;  // constexpr (sizes per-packet buffers)
        { decoder.decode(d, key, mark, t, line, detail::EventSinkArchetype{}) } noexcept -> std::same_as<DecodeResult>;
        { decoder.counters() } noexcept -> std::same_as<const DecoderCounters&>;
        { decoder.count_malformed_unread() } noexcept;
        typename P::Rules;
        typename P::Book;
    };

}  // namespace tickgate
