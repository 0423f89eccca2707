// The SoupBinTCP 4.0 client against the GLIMPSE server and raw loopback
// servers (127.0.0.1 only): login, sequenced data, heartbeats both ways,
// silence, end of session, logout, and a reason for every failure.
#include "tickgate/feed/soupbintcp/client.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/itch50/glimpse.hpp"
#include "tickgate/feed/itch50/glimpse_server.hpp"
#include "tickgate/feed/soupbintcp/wire.hpp"

namespace tickgate::soupbintcp {
namespace {

using itch50::Bytes;
namespace asio = boost::asio;
using asio::ip::tcp;

itch50::GlimpseSpin spin_of(std::size_t orders) {
    itch50::GlimpseSpin s;
    s.messages.push_back(itch50::system_event('O', 1));
    s.messages.push_back(itch50::stock_directory(1, "AAPL"));
    for (std::size_t i = 0; i < orders; ++i) s.messages.push_back(itch50::add_order(1, 100 + i, 'B', 10, 1'000'000));
    s.next_position = 777;
    return s;
}

struct Collect {
    std::vector<char> types;
    std::uint64_t position = 0;
};
Verdict collect(void* p, std::span<const std::byte> m) noexcept {
    auto& c = *static_cast<Collect*>(p);
    c.types.push_back(static_cast<char>(m[0]));
    if (m[0] == std::byte{'M'}) {
        c.position = itch50::parse_snapshot_end(m).position;
        return Verdict::kDone;
    }
    return Verdict::kMore;
}

ClientConfig client_config(std::uint16_t port, std::string user = "sim", std::string pass = "sim") {
    ClientConfig c;
    c.ip = 0x7F000001;
    c.port = port;
    c.username = std::move(user);
    c.password = std::move(pass);
    return c;
}
std::int64_t in_ms(std::int64_t ms) { return monotonic_ns() + ms * 1'000'000; }

TEST(SoupBinTcpClient, LogsInTakesTheSpinAndLogsOutAtTheCallersDone) {
    itch50::GlimpseServer server({}, [] { return spin_of(50); });
    Client c(client_config(server.port()));
    Collect got;
    const std::atomic<bool> cancel{false};
    const Result r = c.run(&collect, &got, in_ms(5000), cancel);
    EXPECT_EQ(r.failure, Failure::kNone) << to_string(r.failure);
    EXPECT_EQ(r.sequenced, 53u);
    ASSERT_EQ(got.types.size(), 53u);
    EXPECT_EQ(got.types.front(), 'S');
    EXPECT_EQ(got.types.back(), 'M');
    EXPECT_EQ(got.position, 777u);
    // The server counts the spin once its write of `M` returns, which may be
    // after the client has read it: wait for it (bounded).
    for (int i = 0; i < 200 && server.snapshots_served() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(server.snapshots_served(), 1u);
}

TEST(SoupBinTcpClient, LoginRejectedCarriesTheServersReason) {
    itch50::GlimpseServer server({}, [] { return spin_of(1); });
    Client c(client_config(server.port(), "sim", "wrong"));
    Collect got;
    const std::atomic<bool> cancel{false};
    const Result r = c.run(&collect, &got, in_ms(5000), cancel);
    EXPECT_EQ(r.failure, Failure::kLoginRejected);
    EXPECT_EQ(r.reject_reason, 'A');
    EXPECT_TRUE(got.types.empty());
    EXPECT_EQ(server.logins_rejected(), 1u);
}

TEST(SoupBinTcpClient, RefusedConnectionIsConnectFailed) {
    std::uint16_t port = 0;
    {
        asio::io_context io;
        tcp::acceptor a(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
        port = a.local_endpoint().port();
    }  // closed: nothing listens there now
    Client c(client_config(port));
    Collect got;
    const std::atomic<bool> cancel{false};
    EXPECT_EQ(c.run(&collect, &got, in_ms(2000), cancel).failure, Failure::kConnectFailed);
}

TEST(SoupBinTcpClient, ConnectionDroppedMidSpinIsDropped) {
    itch50::GlimpseServerOptions o;
    o.drop_after = 10;
    itch50::GlimpseServer server(o, [] { return spin_of(100); });
    Client c(client_config(server.port()));
    Collect got;
    const std::atomic<bool> cancel{false};
    const Result r = c.run(&collect, &got, in_ms(5000), cancel);
    EXPECT_EQ(r.failure, Failure::kDropped);
    EXPECT_EQ(got.types.size(), 10u);
}

TEST(SoupBinTcpClient, HeartbeatsGoBothWaysDuringASlowSpin) {
    itch50::GlimpseServerOptions o;
    o.delay_ms = 2300;
    itch50::GlimpseServer server(o, [] { return spin_of(3); });
    Client c(client_config(server.port()));
    Collect got;
    const std::atomic<bool> cancel{false};
    const Result r = c.run(&collect, &got, in_ms(10000), cancel);
    EXPECT_EQ(r.failure, Failure::kNone) << to_string(r.failure);
    EXPECT_GE(r.heartbeats_received, 2u);
    EXPECT_GE(r.heartbeats_sent, 2u);
    EXPECT_GE(server.heartbeats_received(), 1u);
    EXPECT_EQ(got.position, 777u);
}

TEST(SoupBinTcpClient, SilentServerFailsAfterTheSilenceTimeout) {
    itch50::GlimpseServerOptions o;
    o.delay_ms = 3000;  // its first heartbeat comes after 1 s
    itch50::GlimpseServer server(o, [] { return spin_of(1); });
    ClientConfig k = client_config(server.port());
    k.silence_timeout_ms = 300;
    Client c(k);
    Collect got;
    const std::atomic<bool> cancel{false};
    const std::int64_t t0 = monotonic_ns();
    EXPECT_EQ(c.run(&collect, &got, in_ms(10000), cancel).failure, Failure::kSilent);
    EXPECT_LT(monotonic_ns() - t0, 900'000'000);
}

TEST(SoupBinTcpClient, DeadlineAndCancelEndTheSession) {
    itch50::GlimpseServerOptions o;
    o.delay_ms = 3000;
    itch50::GlimpseServer server(o, [] { return spin_of(1); });
    {
        Client c(client_config(server.port()));
        Collect got;
        const std::atomic<bool> cancel{false};
        EXPECT_EQ(c.run(&collect, &got, in_ms(200), cancel).failure, Failure::kTimeout);
    }
    {
        Client c(client_config(server.port()));
        Collect got;
        const std::atomic<bool> cancel{true};
        EXPECT_EQ(c.run(&collect, &got, in_ms(5000), cancel).failure, Failure::kCancelled);
    }
}

// A server that answers the login with `bytes` whatever it is, then closes.
class RawServer {
public:
    explicit RawServer(Bytes bytes) : acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
        thread_ = std::thread([this, b = std::move(bytes)] {
            tcp::socket s(io_);
            boost::system::error_code ec;
            acceptor_.accept(s, ec);
            if (ec) return;
            std::byte login[64];
            (void)s.read_some(asio::buffer(login), ec);
            asio::write(s, asio::buffer(b), ec);
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        });
    }
    ~RawServer() { thread_.join(); }
    [[nodiscard]] std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

private:
    asio::io_context io_;
    tcp::acceptor acceptor_;
    std::thread thread_;
};

Bytes accepted_then(char t, std::size_t payload = 0) {
    Bytes b(packet_size(kLoginAcceptedPayload) + packet_size(payload));
    const std::size_t n = write_login_accepted(b.data(), "", 1);
    const Bytes p(payload, std::byte{'x'});
    (void)write_packet(b.data() + n, t, p);
    return b;
}

TEST(SoupBinTcpClient, UnknownPacketTypeIsMalformed) {
    RawServer server(accepted_then('Q'));
    Client c(client_config(server.port()));
    Collect got;
    const std::atomic<bool> cancel{false};
    EXPECT_EQ(c.run(&collect, &got, in_ms(2000), cancel).failure, Failure::kMalformed);
}

TEST(SoupBinTcpClient, LengthPastTheBufferIsMalformed) {
    ClientConfig k;
    RawServer server(accepted_then('S', 5000));  // max_packet 4096
    k = client_config(server.port());
    Client c(k);
    Collect got;
    const std::atomic<bool> cancel{false};
    EXPECT_EQ(c.run(&collect, &got, in_ms(2000), cancel).failure, Failure::kMalformed);
}

TEST(SoupBinTcpClient, EndOfSessionBeforeTheCallerIsDoneIsAFailure) {
    RawServer server(accepted_then('Z'));
    Client c(client_config(server.port()));
    Collect got;
    const std::atomic<bool> cancel{false};
    EXPECT_EQ(c.run(&collect, &got, in_ms(2000), cancel).failure, Failure::kEndOfSession);
}

TEST(SoupBinTcpClient, SequencedDataBeforeLoginIsMalformed) {
    Bytes b(packet_size(3));
    (void)write_packet(b.data(), 'S', Bytes(3, std::byte{'x'}));
    RawServer server(b);
    Client c(client_config(server.port()));
    Collect got;
    const std::atomic<bool> cancel{false};
    EXPECT_EQ(c.run(&collect, &got, in_ms(2000), cancel).failure, Failure::kMalformed);
    EXPECT_TRUE(got.types.empty());
}

}  // namespace
}  // namespace tickgate::soupbintcp
