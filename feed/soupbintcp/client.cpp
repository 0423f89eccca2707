#include "tickgate/feed/soupbintcp/client.hpp"

#include <poll.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <cstring>

#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/soupbintcp/wire.hpp"

namespace tickgate::soupbintcp {

std::string_view to_string(Failure f) noexcept {
    switch (f) {
        case Failure::kNone: return "none";
        case Failure::kConnectFailed: return "connect failed";
        case Failure::kLoginRejected: return "login rejected";
        case Failure::kDropped: return "connection dropped";
        case Failure::kSilent: return "server silent";
        case Failure::kTimeout: return "timeout";
        case Failure::kMalformed: return "malformed packet";
        case Failure::kEndOfSession: return "end of session";
        case Failure::kRefusedByCaller: return "refused";
        case Failure::kCancelled: return "cancelled";
    }
    return "unknown";
}

Client::Client(ClientConfig cfg) : cfg_(std::move(cfg)), buf_(2 * std::max<std::size_t>(cfg_.max_packet, 64)) {}

namespace {
constexpr int kPollSliceMs = 20;  // the cancel flag and the timers are looked at this often

// Waits for `events` on `fd` up to `ms`; false on timeout or error.
bool wait_fd(int fd, short events, int ms) {
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, ms) > 0;
}
}  // namespace

Result Client::run(SequencedHandler handler, void* ctx, std::int64_t deadline_ns, const std::atomic<bool>& cancel) {
    namespace asio = boost::asio;
    using asio::ip::tcp;
    Result r;
    asio::io_context io;
    tcp::socket sock(io);
    boost::system::error_code ec;
    const auto fail = [&](Failure f) {
        r.failure = f;
        sock.close(ec);
        return r;
    };
    // Connect without blocking past the deadline.
    sock.open(tcp::v4(), ec);
    if (ec) return fail(Failure::kConnectFailed);
    sock.non_blocking(true, ec);
    const tcp::endpoint ep(asio::ip::address_v4(cfg_.ip), cfg_.port);
    sock.connect(ep, ec);
    if (ec == asio::error::would_block || ec == asio::error::in_progress) {
        for (;;) {
            if (cancel.load(std::memory_order_acquire)) return fail(Failure::kCancelled);
            const std::int64_t now = monotonic_ns();
            if (now >= deadline_ns) return fail(Failure::kConnectFailed);
            if (wait_fd(sock.native_handle(), POLLOUT, kPollSliceMs)) break;
        }
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(sock.native_handle(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
            return fail(Failure::kConnectFailed);
    } else if (ec) {
        return fail(Failure::kConnectFailed);
    }
    sock.set_option(tcp::no_delay(true), ec);

    // Writes are small (a login, a heartbeat, a logout): sent whole, waiting for room if need be.
    const auto send = [&](const std::byte* p, std::size_t n) {
        while (n > 0) {
            const std::size_t k = sock.write_some(asio::buffer(p, n), ec);
            if (ec == asio::error::would_block) {
                if (!wait_fd(sock.native_handle(), POLLOUT, kPollSliceMs)) continue;
                continue;
            }
            if (ec) return false;
            p += k;
            n -= k;
        }
        return true;
    };
    std::byte out[packet_size(kLoginRequestPayload)];
    std::int64_t last_sent = monotonic_ns(), last_received = last_sent;
    if (!send(out, write_login_request(out, cfg_.username, cfg_.password, "", 1))) return fail(Failure::kDropped);

    bool logged_in = false;
    std::size_t have = 0;
    for (;;) {
        // Whole packets first (a read may hold several, or part of one).
        std::size_t at = 0;
        while (true) {
            const Frame f = read_frame({buf_.data() + at, have - at}, cfg_.max_packet);
            if (f.status == FrameStatus::kNeedMore) break;
            if (f.status != FrameStatus::kPacket) return fail(Failure::kMalformed);
            at += f.size;
            switch (f.type) {
                case type::kLoginAccepted:
                    if (logged_in || f.payload.size() < kLoginAcceptedPayload) return fail(Failure::kMalformed);
                    logged_in = true;
                    break;
                case type::kLoginRejected:
                    r.reject_reason = f.payload.empty() ? '?' : static_cast<char>(f.payload[0]);
                    return fail(Failure::kLoginRejected);
                case type::kSequencedData: {
                    if (!logged_in) return fail(Failure::kMalformed);
                    ++r.sequenced;
                    const Verdict v = handler(ctx, f.payload);
                    if (v == Verdict::kRefuse) return fail(Failure::kRefusedByCaller);
                    if (v == Verdict::kDone) {
                        const std::size_t n = write_empty(out, type::kLogoutRequest);
                        (void)send(out, n);  // a lost logout changes nothing: the close ends the session
                        sock.shutdown(tcp::socket::shutdown_both, ec);
                        sock.close(ec);
                        return r;
                    }
                    break;
                }
                case type::kServerHeartbeat: ++r.heartbeats_received; break;
                case type::kDebug: break;
                case type::kEndOfSession: return fail(Failure::kEndOfSession);
                default: return fail(Failure::kMalformed);
            }
        }
        if (at > 0) {
            std::memmove(buf_.data(), buf_.data() + at, have - at);
            have -= at;
        }
        // Then whatever the socket holds, or a wait for it.
        const std::size_t n = sock.read_some(asio::buffer(buf_.data() + have, buf_.size() - have), ec);
        const std::int64_t now = monotonic_ns();
        if (!ec) {
            if (n == 0) return fail(Failure::kDropped);
            have += n;
            last_received = now;
            continue;
        }
        if (ec == asio::error::eof || ec != asio::error::would_block) return fail(Failure::kDropped);
        if (cancel.load(std::memory_order_acquire)) return fail(Failure::kCancelled);
        if (now >= deadline_ns) return fail(Failure::kTimeout);
        if (now - last_received > cfg_.silence_timeout_ms * 1'000'000) return fail(Failure::kSilent);
        if (now - last_sent >= cfg_.heartbeat_interval_ms * 1'000'000) {
            if (!send(out, write_empty(out, type::kClientHeartbeat))) return fail(Failure::kDropped);
            ++r.heartbeats_sent;
            last_sent = now;
        }
        (void)wait_fd(sock.native_handle(), POLLIN, kPollSliceMs);
    }
}

}  // namespace tickgate::soupbintcp
