// The live MoldUDP64 re-request client (ITCH50.md "The stream"): the
// Stream's `Recovery` policy. Each hole the stream opens on a channel with a
// configured server (`[[channel]] rerequest`) is asked for by UDP unicast,
// in requests of at most `max_request_messages`, each sent again after
// `request_timeout_ms` for what is still missing, at most `max_requests`
// times, and at most `max_requests_per_s` requests to one server in any
// one-second window (a sliding window: a ring of the server's last
// max_requests_per_s send times). Answers are read from the channel's own
// socket and handed to the stream only when they come from the configured
// server address and carry the channel's current session; the stream then
// applies only the positions this client asked for that are still missing
// (ITCH50.md "Re-request answers"). Everything is counted per channel.
//
// Sockets are opened at construction (std::runtime_error on failure); the
// per-datagram path (hole_opened, tick, poll_answers) allocates nothing,
// takes no lock and does not log. One thread: the stream's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "tickgate/counter.hpp"
#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/moldudp64/wire.hpp"

namespace tickgate::moldudp64 {

// Per channel, cumulative (the summary's "rerequest" fields).
struct RerequestCounters {
    RelaxedCounter requests_sent;       // request datagrams sent, re-sends included
    RelaxedCounter send_errors;         // requests the kernel refused (counted, retried on timeout)
    RelaxedCounter rate_limited;        // times a due request waited for max_requests_per_s (sliding 1 s window)
    RelaxedCounter requests_exhausted;  // holes still open after max_requests sends
    RelaxedCounter answers;             // answer datagrams handed to the stream (positions applied: the
                                        // stream's recovered_messages)
    RelaxedCounter foreign_answers;     // datagrams on the socket from another address: dropped
    RelaxedCounter stale_answers;       // answers for another session than the channel's: dropped
};

class RerequestClient {
public:
    // Open holes remembered per channel (the stream's own limit).
    static constexpr std::size_t kMaxPending = 256;
    static constexpr std::size_t kMaxAnswer = 2048;  // the stream's held-slot size

    // One socket per channel that has `rerequest` (channels in config order).
    explicit RerequestClient(const Config& cfg);
    ~RerequestClient();
    RerequestClient(const RerequestClient&) = delete;
    RerequestClient& operator=(const RerequestClient&) = delete;

    // What the constructor allocates for `cfg` (every channel with a server at its own address, at most).
    [[nodiscard]] static std::size_t bytes_for(const Config& cfg) noexcept {
        return sizeof(RerequestClient) + cfg.channels.size() * (sizeof(Channel) + sizeof(Bucket) +
                                                                std::size_t{cfg.moldudp64.max_requests_per_s} * sizeof(std::int64_t));
    }
    [[nodiscard]] bool enabled(std::uint32_t ch) const noexcept { return channels_[ch].socket >= 0; }
    [[nodiscard]] const RerequestCounters& counters(std::uint32_t ch) const noexcept { return channels_[ch].counters; }

    // ---- the Stream's Recovery policy
    void hole_opened(std::uint32_t ch, const Session& session, std::uint64_t first, std::uint64_t count,
                     std::int64_t now_ns) noexcept;
    [[nodiscard]] bool recovers_from_start(std::uint32_t ch) const noexcept { return recover_from_start_ && enabled(ch); }

    // Sends the requests that are due at `now_ns` (a monotonic clock: the
    // rate window and the timeouts are measured on it): a hole never asked, the
    // next part of one whose last part has arrived, or a part unanswered for
    // request_timeout (fewer than max_requests sends), each from its first
    // position neither applied nor held. `stream` is read for each
    // channel's session, next position and held packets (filled and
    // given-up holes are forgotten). Returns the requests sent.
    template <class Stream>
    int tick(std::int64_t now_ns, const Stream& stream) noexcept;

    // Reads every waiting answer (non-blocking) and hands those from the
    // channel's server for its current session to stream.on_answer(ch,
    // bytes, key, recv_ns, sink, what was requested). Returns the answers handed on.
    template <class Stream, class Sink>
    int poll_answers(Stream& stream, Sink& sink) noexcept;

private:
    struct Pending {
        std::uint64_t begin, end;   // the hole [begin, end)
        std::uint64_t asked_end;    // end of the part last asked for
        std::int64_t last_sent_ns;
        std::uint32_t sends;        // of the current part
        bool exhausted;
    };
    struct Channel {
        int socket = -1;
        std::uint32_t server_ip = 0;  // host order
        std::uint16_t server_port = 0;
        std::uint32_t bucket = 0;     // index into buckets_ (one per server address)
        Session session{};            // of the pending holes
        std::array<Pending, kMaxPending> pending{};
        std::size_t head = 0, n = 0;
        RerequestCounters counters;
    };
    // Per server: the send times of its last per_s_ requests, a ring
    // (allocated at start-up, its pages touched only as requests are sent).
    struct Bucket {
        std::uint32_t ip;
        std::uint16_t port;
        std::unique_ptr<std::int64_t[]> sent;
        std::uint32_t head = 0;  // the oldest of the ring
        std::uint32_t n = 0;
    };
    [[nodiscard]] Pending& at(Channel& c, std::size_t i) noexcept { return c.pending[(c.head + i) % kMaxPending]; }
    [[nodiscard]] static const Pending& at(const Channel& c, std::size_t i) noexcept {
        return c.pending[(c.head + i) % kMaxPending];
    }
    // The first range [begin, asked_end) asked for on channel `c` with
    // asked_end > from, holes being in position order; {0, 0}: none.
    [[nodiscard]] static std::pair<std::uint64_t, std::uint64_t> requested(const Channel& c, std::uint64_t from) noexcept {
        for (std::size_t i = 0; i < c.n; ++i) {
            const Pending& p = at(c, i);
            if (p.asked_end > from && p.asked_end > p.begin) return {p.begin, p.asked_end};
        }
        return {0, 0};
    }
    // Whether a request to server `bucket` may go at `now_ns` (fewer than
    // per_s_ sent in the second before); if so it is recorded as sent.
    bool within_rate(std::uint32_t bucket, std::int64_t now_ns) noexcept;
    bool send_request(Channel& c, std::uint64_t first, std::uint64_t count) noexcept;
    // One datagram waiting on channel `ch`'s socket into `buf`; its length, or -1 if none.
    std::ptrdiff_t receive(std::uint32_t ch, std::uint32_t& src_ip, std::uint16_t& src_port) noexcept;

    std::uint64_t max_request_messages_;
    std::int64_t timeout_ns_;
    std::uint32_t max_requests_;
    std::uint32_t per_s_;
    bool recover_from_start_;
    std::vector<Channel> channels_;
    std::vector<Bucket> buckets_;
    std::array<std::byte, kMaxAnswer + 1> buf_{};  // one more: a longer answer is seen as too long
};

template <class Stream>
int RerequestClient::tick(std::int64_t now_ns, const Stream& stream) noexcept {
    int sent = 0;
    for (std::uint32_t ch = 0; ch < channels_.size(); ++ch) {
        Channel& c = channels_[ch];
        if (c.n == 0) continue;
        const auto v = stream.channel(ch);
        if (!v.has_session || v.session != c.session) {  // a new session: the old holes are moot
            c.n = 0;
            continue;
        }
        while (c.n > 0 && at(c, 0).end <= v.next_seq) {  // filled, or given up
            c.head = (c.head + 1) % kMaxPending;
            --c.n;
        }
        for (std::size_t i = 0; i < c.n; ++i) {
            Pending& p = at(c, i);
            // What the lines have brought meanwhile (held behind an older hole) is not asked for.
            const std::uint64_t from = stream.first_missing(ch, p.begin);
            if (from >= p.end) continue;
            const bool next_part = p.sends > 0 && from >= p.asked_end;
            const bool timed_out = p.sends > 0 && now_ns - p.last_sent_ns >= timeout_ns_;
            if (p.sends > 0 && !next_part && !(timed_out && p.sends < max_requests_)) {
                if (timed_out && !p.exhausted) {
                    p.exhausted = true;
                    c.counters.requests_exhausted.add();
                }
                continue;
            }
            if (!within_rate(c.bucket, now_ns)) {
                c.counters.rate_limited.add();
                break;
            }
            const std::uint64_t count = std::min(p.end - from, max_request_messages_);
            (void)send_request(c, from, count);
            p.sends = next_part ? 1 : p.sends + 1;
            p.asked_end = std::max(p.asked_end, from + count);  // what was asked stays asked
            p.last_sent_ns = now_ns;
            ++sent;
        }
    }
    return sent;
}

template <class Stream, class Sink>
int RerequestClient::poll_answers(Stream& stream, Sink& sink) noexcept {
    int handed = 0;
    for (std::uint32_t ch = 0; ch < channels_.size(); ++ch) {
        Channel& c = channels_[ch];
        if (c.socket < 0) continue;
        std::uint32_t ip = 0;
        std::uint16_t port = 0;
        for (std::ptrdiff_t n; (n = receive(ch, ip, port)) >= 0;) {
            if (ip != c.server_ip || port != c.server_port) {
                c.counters.foreign_answers.add();
                continue;
            }
            const std::span<const std::byte> d(buf_.data(), static_cast<std::size_t>(n));
            const Key key = read_key(d, static_cast<std::uint16_t>(ch));
            const auto before = stream.channel(ch);
            if (!key.valid() || !before.has_session || key.session != before.session) {
                c.counters.stale_answers.add();
                continue;
            }
            // Holes of an older session (not yet forgotten by tick) were not asked for in this one.
            const bool current = c.n > 0 && c.session == key.session;
            stream.on_answer(ch, d, key, realtime_ns(), sink, [&](std::uint64_t from) {
                return current ? requested(c, from) : std::pair<std::uint64_t, std::uint64_t>{0, 0};
            });
            c.counters.answers.add();
            ++handed;
        }
    }
    return handed;
}

// The Stream holds its Recovery by value: this one points at the live
// client, or at none (offline replay: no request is ever sent).
struct ClientRecovery {
    RerequestClient* client = nullptr;
    void hole_opened(std::uint32_t ch, const Session& s, std::uint64_t first, std::uint64_t count,
                     std::int64_t now_ns) noexcept {
        if (client != nullptr) client->hole_opened(ch, s, first, count, now_ns);
    }
    [[nodiscard]] bool recovers_from_start(std::uint32_t ch) const noexcept {
        return client != nullptr && client->recovers_from_start(ch);
    }
};

}  // namespace tickgate::moldudp64
