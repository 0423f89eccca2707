// A GLIMPSE 5.0 server over SoupBinTCP on 127.0.0.1 (the simulator's, and
// the tests'): one connection at a time; a Login Request with the
// expected credentials is accepted, then the spin the provider returns
// goes out as Sequenced Data packets (one ITCH message each), then the
// Snapshot message `M` with the provider's position, then Server
// Heartbeats until the client logs out or closes. Faults: a delay before
// `M` (a slow spin; heartbeats continue), the first connection dropped
// after N messages (a retry is served whole), every login rejected. Its own thread from construction to
// stop(); allocates freely (not a hot path). Throws std::runtime_error if
// the port cannot be bound.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tickgate/feed/itch50/packet_builder.hpp"

namespace tickgate::itch50 {

struct GlimpseSpin {
    std::vector<Bytes> messages;  // ITCH 5.0 messages, in spin order
    std::uint64_t next_position = 1;  // `M`: the first stream position the spin does not reflect
};

struct GlimpseServerOptions {
    std::uint16_t port = 0;  // on 127.0.0.1; 0: any free port
    std::string username = "sim";
    std::string password = "sim";
    std::uint32_t delay_ms = 0;             // before `M`
    std::uint64_t drop_after = UINT64_MAX;  // the first connection drops after this many spin messages (later ones are served whole)
    bool reject = false;                    // every login rejected ('A': not authorized)
    bool any_credentials = false;           // the simulator's: whoever logs in is accepted
};

class GlimpseServer {
public:
    GlimpseServer(const GlimpseServerOptions& o, std::function<GlimpseSpin()> provider);
    ~GlimpseServer();
    GlimpseServer(const GlimpseServer&) = delete;
    GlimpseServer& operator=(const GlimpseServer&) = delete;
    [[nodiscard]] std::uint16_t port() const noexcept;
    void stop();
    // What it did (any time).
    [[nodiscard]] std::uint64_t connections() const noexcept;
    [[nodiscard]] std::uint64_t snapshots_served() const noexcept;  // spins that reached `M`
    [[nodiscard]] std::uint64_t logins_rejected() const noexcept;
    [[nodiscard]] std::uint64_t heartbeats_received() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tickgate::itch50
