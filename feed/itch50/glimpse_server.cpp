#include "tickgate/feed/itch50/glimpse_server.hpp"

#include <poll.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/itch50/glimpse.hpp"
#include "tickgate/feed/soupbintcp/wire.hpp"

namespace tickgate::itch50 {

namespace asio = boost::asio;
using asio::ip::tcp;

struct GlimpseServer::Impl {
    GlimpseServerOptions o;
    std::function<GlimpseSpin()> provider;
    asio::io_context io;
    tcp::acceptor acceptor{io};
    std::atomic<bool> stopping{false};
    std::uint16_t port = 0;  // bound (kept after stop())
    std::atomic<std::uint64_t> connections{0}, served{0}, rejected{0}, heartbeats{0};
    std::thread thread;

    bool readable(int fd, int ms) {
        pollfd p{fd, POLLIN, 0};
        return ::poll(&p, 1, ms) > 0;
    }

    // Reads into `buf` until one whole packet is there: its frame; kEmpty
    // when `ms` pass first, the peer closes, or the server stops.
    soupbintcp::Frame read_packet(tcp::socket& s, std::vector<std::byte>& buf, std::size_t& have, int ms) {
        const std::int64_t until = monotonic_ns() + std::int64_t{ms} * 1'000'000;
        for (;;) {
            const soupbintcp::Frame f = soupbintcp::read_frame({buf.data(), have}, buf.size());
            if (f.status != soupbintcp::FrameStatus::kNeedMore) return f;
            if (!readable(s.native_handle(), ms == 0 ? 0 : 20)) {
                if (monotonic_ns() >= until || stopping.load()) return {soupbintcp::FrameStatus::kEmpty};
                continue;
            }
            boost::system::error_code ec;
            const std::size_t n = s.read_some(asio::buffer(buf.data() + have, buf.size() - have), ec);
            if (ec == asio::error::would_block) continue;
            if (ec || n == 0) return {soupbintcp::FrameStatus::kTooLong};  // closed: nothing more will come
            have += n;
        }
    }
    static void consume(std::vector<std::byte>& buf, std::size_t& have, std::size_t n) {
        std::memmove(buf.data(), buf.data() + n, have - n);
        have -= n;
    }
    // Takes what the client sent meanwhile (heartbeats, a logout); false once it logged out or closed.
    bool drain_client(tcp::socket& s, std::vector<std::byte>& buf, std::size_t& have) {
        for (;;) {
            const soupbintcp::Frame f = read_packet(s, buf, have, 0);
            if (f.status == soupbintcp::FrameStatus::kEmpty) return true;  // nothing waiting
            if (f.status != soupbintcp::FrameStatus::kPacket) return false;
            consume(buf, have, f.size);
            if (f.type == soupbintcp::type::kClientHeartbeat) ++heartbeats;
            if (f.type == soupbintcp::type::kLogoutRequest) return false;
        }
    }

    void serve(tcp::socket& s) {
        const bool first = ++connections == 1;
        const std::uint64_t drop_after = first ? o.drop_after : UINT64_MAX;
        std::vector<std::byte> buf(4096);
        std::size_t have = 0;
        const soupbintcp::Frame login = read_packet(s, buf, have, 5000);
        soupbintcp::LoginRequest req;
        if (login.status != soupbintcp::FrameStatus::kPacket || login.type != soupbintcp::type::kLoginRequest ||
            !soupbintcp::parse_login_request(login.payload, req))
            return;
        const bool ok = !o.reject && (o.any_credentials || (req.username == o.username && req.password == o.password));
        consume(buf, have, login.size);
        boost::system::error_code ec;
        s.non_blocking(false, ec);
        std::byte out[64];
        if (!ok) {
            ++rejected;
            asio::write(s, asio::buffer(out, soupbintcp::write_login_rejected(out, soupbintcp::kRejectNotAuthorized)), ec);
            return;
        }
        const GlimpseSpin spin = provider();
        asio::write(s, asio::buffer(out, soupbintcp::write_login_accepted(out, "", 1)), ec);
        std::vector<std::byte> batch;
        std::uint64_t sent = 0;
        const auto flush = [&] {
            if (!batch.empty()) asio::write(s, asio::buffer(batch), ec);
            batch.clear();
            return !ec;
        };
        const auto sequenced = [&](const Bytes& m) {
            const std::size_t at = batch.size();
            batch.resize(at + soupbintcp::packet_size(m.size()));
            (void)soupbintcp::write_packet(batch.data() + at, soupbintcp::type::kSequencedData, m);
        };
        for (const Bytes& m : spin.messages) {
            if (sent == drop_after) {
                (void)flush();
                return;  // the connection drops mid-spin
            }
            sequenced(m);
            ++sent;
            if (batch.size() >= 65536 && !flush()) return;
        }
        if (!flush() || sent == drop_after) return;
        // A slow spin: `M` waits, heartbeats keep the session alive.
        const std::int64_t m_at = monotonic_ns() + std::int64_t{o.delay_ms} * 1'000'000;
        std::int64_t next_beat = monotonic_ns() + 1'000'000'000;
        s.non_blocking(true, ec);
        while (monotonic_ns() < m_at && !stopping.load()) {
            if (!drain_client(s, buf, have)) return;
            if (monotonic_ns() >= next_beat) {
                s.non_blocking(false, ec);
                asio::write(s, asio::buffer(out, soupbintcp::write_empty(out, soupbintcp::type::kServerHeartbeat)), ec);
                s.non_blocking(true, ec);
                if (ec) return;
                next_beat += 1'000'000'000;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        Bytes m(kSnapshotSize);
        m[0] = std::byte{kSnapshotType};
        soupbintcp::detail::numeric(m.data() + 1, spin.next_position, soupbintcp::kSequenceSize);
        sequenced(m);
        s.non_blocking(false, ec);
        if (!flush()) return;
        ++served;
        // Until the client logs out or closes (at most a few seconds).
        s.non_blocking(true, ec);
        const std::int64_t give_up = monotonic_ns() + 5'000'000'000;
        while (monotonic_ns() < give_up && !stopping.load()) {
            if (!drain_client(s, buf, have)) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }

    void loop() {
        while (!stopping.load()) {
            if (!readable(acceptor.native_handle(), 20)) continue;
            boost::system::error_code ec;
            tcp::socket s(io);
            acceptor.accept(s, ec);
            if (ec) continue;
            serve(s);
            s.close(ec);
        }
    }
};

GlimpseServer::GlimpseServer(const GlimpseServerOptions& o, std::function<GlimpseSpin()> provider)
    : impl_(std::make_unique<Impl>()) {
    impl_->o = o;
    impl_->provider = std::move(provider);
    boost::system::error_code ec;
    const tcp::endpoint ep(asio::ip::address_v4::loopback(), o.port);
    impl_->acceptor.open(ep.protocol(), ec);
    if (!ec) impl_->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) impl_->acceptor.bind(ep, ec);
    if (!ec) impl_->acceptor.listen(4, ec);
    if (ec) throw std::runtime_error("glimpse server: cannot listen on 127.0.0.1:" + std::to_string(o.port) + ": " + ec.message());
    impl_->port = impl_->acceptor.local_endpoint(ec).port();
    impl_->thread = std::thread([this] { impl_->loop(); });
}

GlimpseServer::~GlimpseServer() { stop(); }

void GlimpseServer::stop() {
    if (!impl_ || !impl_->thread.joinable()) return;
    impl_->stopping.store(true);
    impl_->thread.join();
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
}

std::uint16_t GlimpseServer::port() const noexcept { return impl_->port; }
std::uint64_t GlimpseServer::connections() const noexcept { return impl_->connections.load(); }
std::uint64_t GlimpseServer::snapshots_served() const noexcept { return impl_->served.load(); }
std::uint64_t GlimpseServer::logins_rejected() const noexcept { return impl_->rejected.load(); }
std::uint64_t GlimpseServer::heartbeats_received() const noexcept { return impl_->heartbeats.load(); }

}  // namespace tickgate::itch50
