// Every counter the handler exports, listed once: one table per counter
// struct, one row per counter, saying what it is called everywhere it is
// shown. The Prometheus metrics (metrics.cpp), the JSON summary and `run
// --json`'s "live" object (replay.cpp) and `run`'s line table
// (tools/cmd_run.cpp) are all rendered from these rows, so a new counter is
// a member in its struct plus a row here.
//
// The tables live apart from the structs on purpose: the structs belong to
// their layers (decoder, arbiter, receiver, sequencer); this header only
// reads them through member pointers. Standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tickgate/counter.hpp"
#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/moldudp64/rerequest_client.hpp"
#include "tickgate/feed/moldudp64/stream.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/ring_publisher.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/feed/snapshot_service.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate {

[[nodiscard]] inline std::uint64_t counter_value(const RelaxedCounter& c) noexcept { return c.get(); }
[[nodiscard]] constexpr std::uint64_t counter_value(std::uint64_t v) noexcept { return v; }

// Which protocols a metric family is exported for: a bit per entry of
// kProtocolNames (protocols.hpp). A counter that is always 0 for a protocol
// (its rule, or its stage, does not exist there) is not exported for it.
using ProtocolMask = std::uint8_t;
[[nodiscard]] constexpr ProtocolMask protocol_bit(std::string_view name) noexcept {
    for (std::size_t i = 0; i < kProtocolNames.size(); ++i)
        if (kProtocolNames[i] == name) return static_cast<ProtocolMask>(1u << i);
    return 0;
}
static_assert(kProtocolNames.size() <= 8, "ProtocolMask has a bit per protocol");
inline constexpr ProtocolMask kEveryProtocol = 0xFF;
inline constexpr ProtocolMask kQfb1 = protocol_bit(qfb1::Protocol::kName);
inline constexpr ProtocolMask kMdp3 = protocol_bit(mdp3::Protocol::kName);
inline constexpr ProtocolMask kItch50 = protocol_bit(itch50::Protocol::kName);
// The shared pipeline's stages (A/B arbiter, event ring, per-instrument
// sequencing rules): what ITCH's own pipeline does not have.
inline constexpr ProtocolMask kSharedPipeline = kQfb1 | kMdp3;

// Which of a channel's lines a per-line family is exported for (config.hpp
// line numbers): a seq gap is counted on A/B only, a snapshot join on a snapshot line only.
using LineMask = std::uint8_t;
inline constexpr LineMask kIncrementalLines = 1u << kLineA | 1u << kLineB;
inline constexpr LineMask kSnapshotLines = 1u << kSnapshotLineA | 1u << kSnapshotLineB;
inline constexpr LineMask kAnyLine = 0xFF;
[[nodiscard]] constexpr bool line_in(LineMask m, std::uint8_t line) noexcept { return line < 8 && (m >> line & 1u); }

// One counter of struct `S` (a RelaxedCounter or a plain std::uint64_t member).
template <class S, class M = RelaxedCounter>
struct CounterField {
    M S::*member;
    std::string_view key;     // JSON key (summary, run --json "live"); empty: not in the JSON
    std::string_view metric;  // Prometheus counter family; empty: not exported
    std::string_view help;    // the family's # HELP text
    std::string_view title = {};  // label in `run`'s line table; empty: not shown there
    ProtocolMask protocols = kEveryProtocol;  // the metric's protocols (the JSON keeps every key)
    LineMask lines = kAnyLine;                // per-line tables: the lines the metric is exported for

    [[nodiscard]] std::uint64_t get(const S& s) const noexcept { return counter_value(s.*member); }
};

// The values of one table's counters, by row, copied at one moment (what
// the metrics snapshot keeps). An aggregate: `{1, 2}` fills the first rows.
template <const auto& Table>
struct CounterValues {
    static constexpr std::size_t kSize = std::size(Table);
    std::uint64_t v[kSize] = {};

    template <class S>
    void load(const S& s) noexcept {
        for (std::size_t i = 0; i < kSize; ++i) v[i] = Table[i].get(s);
    }
    [[nodiscard]] constexpr std::uint64_t operator[](std::size_t row) const noexcept { return v[row]; }
    // The row of JSON key `key` (std::out_of_range if none).
    [[nodiscard]] std::uint64_t& at(std::string_view key) {
        for (std::size_t i = 0; i < kSize; ++i)
            if (Table[i].key == key) return v[i];
        throw std::out_of_range("no counter with key " + std::string(key));
    }
};

// ---------------------------------------------------------------- decoder (global)
// Columns:   member, JSON key, Prometheus family, help [, line table title]
inline constexpr CounterField<DecoderCounters> kDecoderCounterFields[] = {
    {&DecoderCounters::packets, "packets", "tickgate_packets_total",
     "Datagrams handed to the decoder (QFB/1, MDP3: after A/B arbitration; ITCH: every copy)."},
    {&DecoderCounters::malformed_packets, "malformed_packets", "tickgate_malformed_packets_total",
     "Datagrams rejected as malformed."},
    {&DecoderCounters::unknown_messages, "unknown_messages", "tickgate_unknown_messages_total",
     "Messages of an unknown type, skipped."},
    {&DecoderCounters::stale_session_packets, "stale_session_packets", "tickgate_stale_session_packets_total",
     "Datagrams of an older session, discarded."},
    {&DecoderCounters::messages, "messages", "tickgate_messages_total",
     "Messages read (known and unknown types)."},
    {&DecoderCounters::session_changes, "session_changes", "tickgate_session_changes_total",
     "Newer sessions seen on a channel (publisher restarts)."},
};

// ---------------------------------------------------------------- sequencer (global)
inline constexpr CounterField<SequencerCounters, std::uint64_t> kSequencerCounterFields[] = {
    {&SequencerCounters::out_of_range, "out_of_range_instruments", "tickgate_out_of_range_messages_total",
     "Messages for instrument ids beyond max_instruments, ignored."},
};

// ---------------------------------------------------------------- per instrument
// Metric families are labelled {instrument, symbol}.
inline constexpr CounterField<InstrumentCounters, std::uint64_t> kInstrumentCounterFields[] = {
    {&InstrumentCounters::accepted, "accepted", "tickgate_instrument_accepted_total", "Sequenced messages accepted."},
    // ITCH sequences by channel position (the MoldUDP64 stream), not by
    // instrument: only `accepted` is counted per instrument there.
    {&InstrumentCounters::duplicates, "duplicates", "tickgate_instrument_duplicates_total",
     "Messages with seq <= last seq, dropped.", {}, kSharedPipeline},
    {&InstrumentCounters::lost, "lost", "tickgate_instrument_lost_messages_total",
     "Messages known missing (sequence gaps).", {}, kSharedPipeline},
    {&InstrumentCounters::heartbeats, "heartbeats", "tickgate_instrument_heartbeats_total", "Heartbeats received.", {},
     kSharedPipeline},
    {&InstrumentCounters::snapshots_applied, "snapshots_applied", "tickgate_instrument_snapshots_applied_total",
     "Snapshots applied to the book.", {}, kSharedPipeline},
    {&InstrumentCounters::stale_snapshots, "stale_snapshots", "tickgate_instrument_stale_snapshots_total",
     "Snapshots older than the book, ignored.", {}, kSharedPipeline},
    {&InstrumentCounters::gap_events, "gap_events", "tickgate_instrument_gap_events_total",
     "Times a sequence gap was opened.", {}, kSharedPipeline},
    {&InstrumentCounters::implausible_seq, "implausible_seq", "tickgate_instrument_implausible_seq_total",
     "Messages whose seq was implausibly far ahead (QFB1.md rule 6), dropped.", {}, kSharedPipeline},
    {&InstrumentCounters::foreign_channel, "foreign_channel_messages",
     "tickgate_instrument_foreign_channel_messages_total",
     "Messages for the instrument on another channel than its own (rule 7), dropped.", {}, kSharedPipeline},
    {&InstrumentCounters::recovered, "", "tickgate_instrument_recoveries_total", "Suspect to clean transitions.", {},
     kSharedPipeline},
    {&InstrumentCounters::unbuffered_deltas, "", "tickgate_instrument_unbuffered_deltas_total",
     "Deltas not kept for replay while suspect (recovery pool empty or full).", {}, kSharedPipeline},
    {&InstrumentCounters::book_overflows, "", "tickgate_instrument_book_overflows_total",
     "Price levels dropped beyond the book depth.", {}, kSharedPipeline},
};

// ---------------------------------------------------------------- per line (live)
// Metric families are labelled {channel, line}; the title is the column of
// `run`'s line table.
inline constexpr CounterField<LineStats> kLineCounterFields[] = {
    {&LineStats::packets, "packets", "tickgate_line_packets_total", "Datagrams received on the line.", "packets"},
    {&LineStats::bytes, "bytes", "tickgate_line_bytes_total", "Payload bytes received on the line."},
    {&LineStats::seq_gaps, "seq_gaps", "tickgate_line_seq_gaps_total",
     "Sequence positions the line skipped (QFB/1 packet_seq, MDP3 MsgSeqNum: packets; MoldUDP64: messages).", "gaps",
     kEveryProtocol, kIncrementalLines},
    {&LineStats::kernel_drops, "kernel_drops", "tickgate_line_kernel_drops_total",
     "Datagrams dropped by the socket receive buffer (SO_RXQ_OVFL).", "k-drops"},
    {&LineStats::rejected_source, "rejected_source", "tickgate_line_rejected_source_total",
     "Datagrams from a source address not allowed for the channel.", "rejected"},
    // Only a protocol whose header names its channel can see another's on a line.
    {&LineStats::foreign_channel_packets, "foreign_channel_packets", "tickgate_line_foreign_channel_packets_total",
     "Datagrams whose header named another channel than the line's (rule 7), dropped.", "foreign", kQfb1},
    {&LineStats::oversized, "oversized", "tickgate_line_oversized_total",
     "Datagrams larger than the receive slot (malformed), dropped whole.", "oversized"},
    {&LineStats::recv_errors, "recv_errors", "tickgate_line_recv_errors_total",
     "Receive calls on the line's socket that failed (not EAGAIN/EINTR).", "rcv-errors"},
    // MDP3's snapshot lines (MDP3.md "Snapshot"); 0 on every other line.
    {&LineStats::snapshot_joins, "snapshot_joins", "tickgate_line_snapshot_joins_total",
     "Joins of an MDP3 snapshot line's group (some instrument of the channel suspect or unconfirmed).", {}, kMdp3,
     kSnapshotLines},
    {&LineStats::snapshot_leaves, "snapshot_leaves", "tickgate_line_snapshot_leaves_total",
     "Leaves of an MDP3 snapshot line's group (every instrument of the channel clean).", {}, kMdp3, kSnapshotLines},
    {&LineStats::snapshot_recoveries, "snapshot_recoveries", "tickgate_line_snapshot_recoveries_total",
     "Suspect or unconfirmed instruments made clean by a snapshot from the line.", {}, kMdp3, kSnapshotLines},
    {&LineStats::membership_errors, "membership_errors", "tickgate_line_membership_errors_total",
     "Failed joins or leaves of the line's group (retried).", {}, kMdp3, kSnapshotLines},
};

// ---------------------------------------------------------------- A/B arbitration (live)
// The title labels the counter on the line table's "A/B:" line.
inline constexpr CounterField<ArbiterCounters> kArbiterCounterFields[] = {
    {&ArbiterCounters::duplicate_packets, "duplicate_packets", "tickgate_ab_duplicate_packets_total",
     "Second copies of packets (other line) dropped.", "duplicate packets"},
    {&ArbiterCounters::held_packets, "held_packets", "tickgate_ab_held_packets_total",
     "Packets held waiting for the other line to fill a hole.", "held"},
    {&ArbiterCounters::filled_holes, "filled_holes", "tickgate_ab_filled_holes_total",
     "Holes filled by the other line while held.", "holes filled"},
    {&ArbiterCounters::released_gaps, "lost_on_both", "tickgate_ab_lost_both_total",
     "Packets lost on both lines (holes given up).", "lost on both"},
    {&ArbiterCounters::unarbitrated, "unarbitrated", "tickgate_ab_unarbitrated_packets_total",
     "Packets passed through without arbitration."},
    {&ArbiterCounters::unconfirmed_jumps, "unconfirmed_jumps", "tickgate_ab_unconfirmed_jump_packets_total",
     "Packets beyond the arbitration window passed on without moving the channel (not confirmed by the other line)."},
    {&ArbiterCounters::late_packets, "late_packets", "tickgate_ab_late_packets_total",
     "Packets that were not a copy of one delivered (given up, or other bytes), passed on to the sequencer."},
};

// ---------------------------------------------------------------- event ring (live)
// The title labels the counter on the line table's "ring:" line.
inline constexpr CounterField<PublisherCounters> kRingCounterFields[] = {
    {&PublisherCounters::ring_overflow_packets, "overflow_packets", "tickgate_ring_overflow_packets_total",
     "Datagrams dropped because the event ring was full.", "overflow packets"},
    {&PublisherCounters::ring_overflow_events, "overflow_events", "tickgate_ring_overflow_events_total",
     "Events dropped because the event ring was full.", "overflow events"},
    {&PublisherCounters::data_lost_marks, "data_lost_marks", "tickgate_ring_data_lost_marks_total",
     "DataLost marks delivered after ring overflows."},
};

// ---------------------------------------------------------------- MoldUDP64 stream, per channel (ITCH)
// The summary's per-channel fields (ITCH50.md) and the metric families,
// labelled {channel}. held_max is a maximum, not a counter: the summary
// adds it beside these.
inline constexpr CounterField<moldudp64::StreamCounters> kStreamCounterFields[] = {
    {&moldudp64::StreamCounters::packets, "packets", "tickgate_stream_packets_total",
     "Datagrams of the channel, stale and malformed included."},
    {&moldudp64::StreamCounters::messages, "", "tickgate_stream_messages_total", "Messages received, every copy."},
    {&moldudp64::StreamCounters::duplicate_messages, "duplicate_messages", "tickgate_stream_duplicate_messages_total",
     "Messages at a position already applied (other line, retransmission), dropped."},
    {&moldudp64::StreamCounters::holes_filled, "holes_filled", "tickgate_stream_holes_filled_total",
     "Holes whose last position arrived (either line or the re-request server)."},
    {&moldudp64::StreamCounters::lost_messages, "lost_messages", "tickgate_stream_lost_messages_total",
     "Positions of holes given up."},
    {&moldudp64::StreamCounters::holes_given_up, "holes_given_up", "tickgate_stream_holes_given_up_total",
     "Holes given up (timeout, pool full) or open at a session change."},
    {&moldudp64::StreamCounters::recovered_messages, "recovered_messages", "tickgate_stream_recovered_messages_total",
     "Positions applied from the re-request server's answers."},
    {&moldudp64::StreamCounters::late_join_messages, "late_join_messages", "tickgate_stream_late_join_messages_total",
     "Positions before the first packet seen of a session (never ours)."},
    {&moldudp64::StreamCounters::malformed_packets, "malformed_packets", "tickgate_stream_malformed_packets_total",
     "Malformed MoldUDP64 packets (what came before the fault stands)."},
    {&moldudp64::StreamCounters::stale_session_packets, "stale_session_packets",
     "tickgate_stream_stale_session_packets_total", "Packets of a session the channel has had before, discarded."},
    {&moldudp64::StreamCounters::request_packets, "", "tickgate_stream_request_packets_total",
     "Captured re-request datagrams, skipped."},
    {&moldudp64::StreamCounters::session_changes, "", "tickgate_stream_session_changes_total",
     "New sessions on the channel."},
    {&moldudp64::StreamCounters::implausible_positions, "implausible_positions",
     "tickgate_stream_implausible_positions_total",
     "Datagrams of the current session more than 1e9 positions beyond the highest seen, dropped whole."},
    {&moldudp64::StreamCounters::unrequested_answer_messages, "unrequested_answer_messages",
     "tickgate_stream_unrequested_answer_messages_total",
     "Re-request answer messages at positions not requested or no longer missing, dropped."},
};

// ---------------------------------------------------------------- snapshot service, per channel (live ITCH: GLIMPSE)
// snapshot_failures (by reason) and snapshot_orders (a gauge) are written
// beside these rows: metrics.cpp and the venue's summary (itch50/summary.hpp).
inline constexpr CounterField<SnapshotCounters> kSnapshotCounterFields[] = {
    {&SnapshotCounters::snapshots_requested, "snapshots_requested", "tickgate_snapshots_requested_total",
     "GLIMPSE snapshot sessions started (late join, given-up hole, retries)."},
    {&SnapshotCounters::snapshots_applied, "snapshots_applied", "tickgate_snapshots_applied_total",
     "GLIMPSE snapshots that replaced the channel's books."},
};

// ---------------------------------------------------------------- MoldUDP64 re-request client, per channel (live ITCH)
inline constexpr CounterField<moldudp64::RerequestCounters> kRerequestCounterFields[] = {
    {&moldudp64::RerequestCounters::requests_sent, "requests_sent", "tickgate_rerequest_requests_sent_total",
     "Re-request datagrams sent, re-sends included."},
    {&moldudp64::RerequestCounters::send_errors, "send_errors", "tickgate_rerequest_send_errors_total",
     "Requests the kernel refused (retried on timeout)."},
    {&moldudp64::RerequestCounters::rate_limited, "rate_limited", "tickgate_rerequest_rate_limited_total",
     "Times a due request waited for max_requests_per_s."},
    {&moldudp64::RerequestCounters::requests_exhausted, "requests_exhausted",
     "tickgate_rerequest_requests_exhausted_total", "Holes still open after max_requests sends."},
    {&moldudp64::RerequestCounters::answers, "answers", "tickgate_rerequest_answers_total",
     "Answer datagrams from the server handed to the stream."},
    {&moldudp64::RerequestCounters::foreign_answers, "foreign_answers", "tickgate_rerequest_foreign_answers_total",
     "Datagrams on the request socket from another address, dropped."},
    {&moldudp64::RerequestCounters::stale_answers, "stale_answers", "tickgate_rerequest_stale_answers_total",
     "Answers for another session than the channel's, dropped."},
};

}  // namespace tickgate
