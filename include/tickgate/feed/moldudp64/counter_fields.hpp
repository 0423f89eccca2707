// The MoldUDP64 stream's and re-request client's counters, each listed once
// (counter_fields.hpp says how a table is read): the venue summary's
// per-channel fields and, as a protocol's own channel counter groups, the
// metric families labelled {channel}. held_max is a maximum, not a
// counter: the summary adds it beside these.
#pragma once

#include "tickgate/feed/counter_fields.hpp"
#include "tickgate/feed/moldudp64/rerequest_client.hpp"
#include "tickgate/feed/moldudp64/stream.hpp"

namespace tickgate::moldudp64 {

// ---------------------------------------------------------------- the stream, per channel
inline constexpr CounterField<StreamCounters> kStreamCounterFields[] = {
    {&StreamCounters::packets, "packets", "tickgate_stream_packets_total",
     "Datagrams of the channel, stale and malformed included."},
    {&StreamCounters::messages, "", "tickgate_stream_messages_total", "Messages received, every copy."},
    {&StreamCounters::duplicate_messages, "duplicate_messages", "tickgate_stream_duplicate_messages_total",
     "Messages at a position already applied (other line, retransmission), dropped."},
    {&StreamCounters::holes_filled, "holes_filled", "tickgate_stream_holes_filled_total",
     "Holes whose last position arrived (either line or the re-request server)."},
    {&StreamCounters::lost_messages, "lost_messages", "tickgate_stream_lost_messages_total",
     "Positions of holes given up."},
    {&StreamCounters::holes_given_up, "holes_given_up", "tickgate_stream_holes_given_up_total",
     "Holes given up (timeout, pool full) or open at a session change."},
    {&StreamCounters::recovered_messages, "recovered_messages", "tickgate_stream_recovered_messages_total",
     "Positions applied from the re-request server's answers."},
    {&StreamCounters::late_join_messages, "late_join_messages", "tickgate_stream_late_join_messages_total",
     "Positions before the first packet seen of a session (never ours)."},
    {&StreamCounters::malformed_packets, "malformed_packets", "tickgate_stream_malformed_packets_total",
     "Malformed MoldUDP64 packets (what came before the fault stands)."},
    {&StreamCounters::stale_session_packets, "stale_session_packets",
     "tickgate_stream_stale_session_packets_total", "Packets of a session the channel has had before, discarded."},
    {&StreamCounters::request_packets, "", "tickgate_stream_request_packets_total",
     "Captured re-request datagrams, skipped."},
    {&StreamCounters::session_changes, "", "tickgate_stream_session_changes_total",
     "New sessions on the channel."},
    {&StreamCounters::implausible_positions, "implausible_positions",
     "tickgate_stream_implausible_positions_total",
     "Datagrams of the current session more than 1e9 positions beyond the highest seen, dropped whole."},
    {&StreamCounters::unrequested_answer_messages, "unrequested_answer_messages",
     "tickgate_stream_unrequested_answer_messages_total",
     "Re-request answer messages at positions not requested or no longer missing, dropped."},
};

// ---------------------------------------------------------------- the re-request client, per channel (live)
inline constexpr CounterField<RerequestCounters> kRerequestCounterFields[] = {
    {&RerequestCounters::requests_sent, "requests_sent", "tickgate_rerequest_requests_sent_total",
     "Re-request datagrams sent, re-sends included."},
    {&RerequestCounters::send_errors, "send_errors", "tickgate_rerequest_send_errors_total",
     "Requests the kernel refused (retried on timeout)."},
    {&RerequestCounters::rate_limited, "rate_limited", "tickgate_rerequest_rate_limited_total",
     "Times a due request waited for max_requests_per_s."},
    {&RerequestCounters::requests_exhausted, "requests_exhausted",
     "tickgate_rerequest_requests_exhausted_total", "Holes still open after max_requests sends."},
    {&RerequestCounters::answers, "answers", "tickgate_rerequest_answers_total",
     "Answer datagrams from the server handed to the stream."},
    {&RerequestCounters::foreign_answers, "foreign_answers", "tickgate_rerequest_foreign_answers_total",
     "Datagrams on the request socket from another address, dropped."},
    {&RerequestCounters::stale_answers, "stale_answers", "tickgate_rerequest_stale_answers_total",
     "Answers for another session than the channel's, dropped."},
};

}  // namespace tickgate::moldudp64
