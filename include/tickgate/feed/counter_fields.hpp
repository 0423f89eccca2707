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

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tickgate/counter.hpp"
#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/ring_publisher.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/feed/snapshot_service.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate {

[[nodiscard]] inline std::uint64_t counter_value(const RelaxedCounter& c) noexcept { return c.get(); }
[[nodiscard]] constexpr std::uint64_t counter_value(std::uint64_t v) noexcept { return v; }

// What a protocol's pipeline has that a metric family moves with: a family
// is exported for a protocol only if the protocol has every feature its row
// needs (a counter that is always 0 there, its rule or stage absent, is
// left out). Read from the protocol's traits (features_of), never its name.
using PipelineFeatures = std::uint8_t;
inline constexpr PipelineFeatures kNoFeature = 0;
// Lines A/B merged packet by packet (HolePolicy::kGiveUpAfterHold); a
// stream that holds and re-requests merges its lines by position instead.
inline constexpr PipelineFeatures kPacketArbitration = 1u << 0;
// Sequence numbers per instrument (duplicates, losses, heartbeats and
// snapshots per instrument): what give-up-after-hold protocols' rules keep;
// a stream that holds and re-requests sequences the channel by position.
inline constexpr PipelineFeatures kInstrumentSequencing = 1u << 1;
// The header names its channel (P::kHeaderNamesChannel): a line can carry
// another channel's datagrams.
inline constexpr PipelineFeatures kChannelInHeader = 1u << 2;
// Lines outside arbitration (HasUnarbitratedLines): snapshot feeds a
// channel joins while it needs them.
inline constexpr PipelineFeatures kSnapshotFeeds = 1u << 3;
inline constexpr PipelineFeatures kEveryFeature = 0xFF;

template <VenueProtocol P>
[[nodiscard]] constexpr PipelineFeatures features_of() noexcept {
    PipelineFeatures f = kNoFeature;
    if (P::kHolePolicy == HolePolicy::kGiveUpAfterHold) f |= kPacketArbitration | kInstrumentSequencing;
    if (P::kHeaderNamesChannel) f |= kChannelInHeader;
    if (HasUnarbitratedLines<P>) f |= kSnapshotFeeds;
    return f;
}

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
    PipelineFeatures needs = kNoFeature;  // what the metric needs of a protocol (the JSON keeps every key)
    LineMask lines = kAnyLine;            // per-line tables: the lines the metric is exported for

    [[nodiscard]] std::uint64_t get(const S& s) const noexcept { return counter_value(s.*member); }
    [[nodiscard]] constexpr bool exported_for(PipelineFeatures has) const noexcept {
        return !metric.empty() && (needs & ~has) == 0;
    }
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
    // A stream that holds and re-requests sequences by channel position,
    // not by instrument: only `accepted` is counted per instrument there.
    {&InstrumentCounters::duplicates, "duplicates", "tickgate_instrument_duplicates_total",
     "Messages with seq <= last seq, dropped.", {}, kInstrumentSequencing},
    {&InstrumentCounters::lost, "lost", "tickgate_instrument_lost_messages_total",
     "Messages known missing (sequence gaps).", {}, kInstrumentSequencing},
    {&InstrumentCounters::heartbeats, "heartbeats", "tickgate_instrument_heartbeats_total", "Heartbeats received.", {},
     kInstrumentSequencing},
    {&InstrumentCounters::snapshots_applied, "snapshots_applied", "tickgate_instrument_snapshots_applied_total",
     "Snapshots applied to the book.", {}, kInstrumentSequencing},
    {&InstrumentCounters::stale_snapshots, "stale_snapshots", "tickgate_instrument_stale_snapshots_total",
     "Snapshots older than the book, ignored.", {}, kInstrumentSequencing},
    {&InstrumentCounters::gap_events, "gap_events", "tickgate_instrument_gap_events_total",
     "Times a sequence gap was opened.", {}, kInstrumentSequencing},
    {&InstrumentCounters::implausible_seq, "implausible_seq", "tickgate_instrument_implausible_seq_total",
     "Messages whose seq was implausibly far ahead (QFB1.md rule 6), dropped.", {}, kInstrumentSequencing},
    {&InstrumentCounters::foreign_channel, "foreign_channel_messages",
     "tickgate_instrument_foreign_channel_messages_total",
     "Messages for the instrument on another channel than its own (rule 7), dropped.", {}, kInstrumentSequencing},
    {&InstrumentCounters::recovered, "", "tickgate_instrument_recoveries_total", "Suspect to clean transitions.", {},
     kInstrumentSequencing},
    {&InstrumentCounters::unbuffered_deltas, "", "tickgate_instrument_unbuffered_deltas_total",
     "Deltas not kept for replay while suspect (recovery pool empty or full).", {}, kInstrumentSequencing},
    {&InstrumentCounters::book_overflows, "", "tickgate_instrument_book_overflows_total",
     "Price levels dropped beyond the book depth.", {}, kInstrumentSequencing},
};

// ---------------------------------------------------------------- per line (live)
// Metric families are labelled {channel, line}; the title is the column of
// `run`'s line table.
inline constexpr CounterField<LineStats> kLineCounterFields[] = {
    {&LineStats::packets, "packets", "tickgate_line_packets_total", "Datagrams received on the line.", "packets"},
    {&LineStats::bytes, "bytes", "tickgate_line_bytes_total", "Payload bytes received on the line."},
    {&LineStats::seq_gaps, "seq_gaps", "tickgate_line_seq_gaps_total",
     "Sequence positions the line skipped (QFB/1 packet_seq, MDP3 MsgSeqNum: packets; MoldUDP64: messages).", "gaps",
     kNoFeature, kIncrementalLines},
    {&LineStats::kernel_drops, "kernel_drops", "tickgate_line_kernel_drops_total",
     "Datagrams dropped by the socket receive buffer (SO_RXQ_OVFL).", "k-drops"},
    {&LineStats::rejected_source, "rejected_source", "tickgate_line_rejected_source_total",
     "Datagrams from a source address not allowed for the channel.", "rejected"},
    // Only a protocol whose header names its channel can see another's on a line.
    {&LineStats::foreign_channel_packets, "foreign_channel_packets", "tickgate_line_foreign_channel_packets_total",
     "Datagrams whose header named another channel than the line's (rule 7), dropped.", "foreign", kChannelInHeader},
    {&LineStats::oversized, "oversized", "tickgate_line_oversized_total",
     "Datagrams larger than the receive slot (malformed), dropped whole.", "oversized"},
    {&LineStats::recv_errors, "recv_errors", "tickgate_line_recv_errors_total",
     "Receive calls on the line's socket that failed (not EAGAIN/EINTR).", "rcv-errors"},
    // MDP3's snapshot lines (MDP3.md "Snapshot"); 0 on every other line.
    {&LineStats::snapshot_joins, "snapshot_joins", "tickgate_line_snapshot_joins_total",
     "Joins of an MDP3 snapshot line's group (some instrument of the channel suspect or unconfirmed).", {}, kSnapshotFeeds,
     kSnapshotLines},
    {&LineStats::snapshot_leaves, "snapshot_leaves", "tickgate_line_snapshot_leaves_total",
     "Leaves of an MDP3 snapshot line's group (every instrument of the channel clean).", {}, kSnapshotFeeds, kSnapshotLines},
    {&LineStats::snapshot_recoveries, "snapshot_recoveries", "tickgate_line_snapshot_recoveries_total",
     "Suspect or unconfirmed instruments made clean by a snapshot from the line.", {}, kSnapshotFeeds, kSnapshotLines},
    {&LineStats::membership_errors, "membership_errors", "tickgate_line_membership_errors_total",
     "Failed joins or leaves of the line's group (retried).", {}, kSnapshotFeeds, kSnapshotLines},
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

// ---------------------------------------------------------------- snapshot service, per channel (snapshot_service.hpp)
// snapshot_failures (by reason) and snapshot_orders (a gauge) are written
// beside these rows: kSnapshotServiceRows below and the venue's summary.
inline constexpr CounterField<SnapshotCounters> kSnapshotCounterFields[] = {
    {&SnapshotCounters::snapshots_requested, "snapshots_requested", "tickgate_snapshots_requested_total",
     "Snapshot sessions started (late join, given-up hole, retries)."},
    {&SnapshotCounters::snapshots_applied, "snapshots_applied", "tickgate_snapshots_applied_total",
     "Snapshots that replaced the channel's books."},
};


// ---------------------------------------------------------------- a protocol's own, per channel
// What a protocol counts per channel beyond the shared tables (a stream and
// its re-request client, a snapshot service, its decoder's channel
// figures), as the metrics export it: the rows of its own tables that have
// a metric name, erased to their names, in groups a channel has or has not
// (a re-request client only where a server is configured). The protocol
// lists its groups (P::kChannelCounterGroups, static storage) and fills
// one ChannelCounterSample per channel (P::sample_channel_counters).
struct ChannelCounterRow {
    std::string_view metric;  // consecutive rows of one family share it: one # HELP, a sample each
    std::string_view help;
    std::string_view label = {};        // a label beside `channel` (e.g. reason); empty: none
    std::string_view label_value = {};
    bool gauge = false;
};
using ChannelCounterGroup = std::span<const ChannelCounterRow>;
inline constexpr std::size_t kMaxChannelCounterRows = 48;
inline constexpr std::size_t kMaxChannelCounterGroups = 8;
struct ChannelCounterSample {
    std::uint16_t channel = 0;  // the configured channel id (the `channel` label)
    std::uint8_t groups = 0;    // bit g: the channel has group g
    std::uint64_t values[kMaxChannelCounterRows] = {};  // every group's rows, in order, one group after another
};
// Where group `g` of `groups` starts in ChannelCounterSample::values.
[[nodiscard]] constexpr std::size_t channel_group_offset(std::span<const ChannelCounterGroup> groups,
                                                         std::size_t g) noexcept {
    std::size_t at = 0;
    for (std::size_t i = 0; i < g; ++i) at += groups[i].size();
    return at;
}
// The groups fit a sample (a protocol's static_assert).
[[nodiscard]] constexpr bool fits_channel_sample(std::span<const ChannelCounterGroup> groups) noexcept {
    return groups.size() <= kMaxChannelCounterGroups &&
           channel_group_offset(groups, groups.size()) <= kMaxChannelCounterRows;
}

// Protocol P's channel counter groups (none for a protocol without).
template <VenueProtocol P>
[[nodiscard]] constexpr std::span<const ChannelCounterGroup> channel_counter_groups() noexcept {
    if constexpr (requires { P::kChannelCounterGroups; }) return P::kChannelCounterGroups;
    else return {};
}

// The rows of `Table` that have a metric name, as ChannelCounterRows, and
// their values read from a counter struct.
template <const auto& Table>
struct MetricRows {
    static constexpr std::size_t kSize = [] {
        std::size_t n = 0;
        for (const auto& f : Table) n += f.metric.empty() ? 0 : 1;
        return n;
    }();
    static constexpr std::array<ChannelCounterRow, kSize> rows = [] {
        std::array<ChannelCounterRow, kSize> out{};
        std::size_t n = 0;
        for (const auto& f : Table)
            if (!f.metric.empty()) out[n++] = {f.metric, f.help};
        return out;
    }();
    // The rows' values from `s` into out[0, kSize).
    template <class S>
    static void load(const S& s, std::uint64_t* out) noexcept {
        for (const auto& f : Table)
            if (!f.metric.empty()) *out++ = f.get(s);
    }
};

// A snapshot service's group: its counters, its failures by reason, the
// last snapshot's orders (a gauge).
inline constexpr std::size_t kSnapshotServiceRowCount =
    MetricRows<kSnapshotCounterFields>::kSize + std::size(kSnapshotFailureNames) + 1;
inline constexpr std::array<ChannelCounterRow, kSnapshotServiceRowCount> kSnapshotServiceRows = [] {
    std::array<ChannelCounterRow, kSnapshotServiceRowCount> out{};
    std::size_t n = 0;
    for (const ChannelCounterRow& r : MetricRows<kSnapshotCounterFields>::rows) out[n++] = r;
    for (const std::string_view reason : kSnapshotFailureNames)
        out[n++] = {"tickgate_snapshot_failures_total", "Snapshots that failed, by reason.", "reason", reason};
    out[n++] = {"tickgate_snapshot_orders", "Orders loaded by the channel's last snapshot.", {}, {}, true};
    return out;
}();
// The service's values in kSnapshotServiceRows' order into out[0, kSnapshotServiceRowCount).
inline void load_snapshot_service(const SnapshotCounters& k, std::uint64_t* out) noexcept {
    MetricRows<kSnapshotCounterFields>::load(k, out);
    out += MetricRows<kSnapshotCounterFields>::kSize;
    for (const RelaxedCounter& f : k.snapshot_failures) *out++ = f.get();
    *out = k.snapshot_orders.get();
}

}  // namespace tickgate
