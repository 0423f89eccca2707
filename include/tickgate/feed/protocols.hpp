// The protocols tickgate speaks, each a folder under feed/ (protocol.hpp
// says what one provides). The choice is made once, at start-up: a config's
// channels or --protocol name one, and with_protocol() instantiates the
// caller's code for it, so the poll loop stays monomorphic.
// Adding a protocol: its folder, and one entry in KnownProtocols.
#pragma once

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tickgate/feed/mdp3/protocol.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate {

template <VenueProtocol... P>
struct ProtocolList {
    static constexpr std::array<std::string_view, sizeof...(P)> names = {P::kName...};
};

using KnownProtocols = ProtocolList<qfb1::Protocol, mdp3::Protocol>;

// Protocols with a pipeline of their own, not (yet) the shared templates:
// ITCH 5.0 over MoldUDP64 (feed/itch50/: itch50::Replay offline,
// itch50::LiveHandler live; the CLI commands call them by name).
inline constexpr std::string_view kItch50Name = "itch50";

namespace detail {
template <std::size_t N>
consteval std::array<std::string_view, N + 1> with_own_pipelines(const std::array<std::string_view, N>& shared) {
    std::array<std::string_view, N + 1> all{};
    for (std::size_t i = 0; i < N; ++i) all[i] = shared[i];
    all[N] = kItch50Name;
    return all;
}
}  // namespace detail

// Every name configs and --protocol take.
inline constexpr auto kProtocolNames = detail::with_own_pipelines(KnownProtocols::names);

// "qfb1, mdp3, ..." for messages.
[[nodiscard]] inline std::string protocol_list() {
    std::string s;
    for (const std::string_view n : kProtocolNames) s += (s.empty() ? "" : ", ") + std::string(n);
    return s;
}

namespace detail {
template <class F, VenueProtocol... P>
decltype(auto) dispatch(std::string_view name, F& f, ProtocolList<P...>) {
    using R = decltype(f.template operator()<qfb1::Protocol>());
    if constexpr (std::is_void_v<R>) {
        const bool found = ((name == P::kName ? (f.template operator()<P>(), true) : false) || ...);
        if (!found) throw std::invalid_argument("unknown protocol \"" + std::string(name) + "\" (known: " + protocol_list() + ")");
    } else {
        R result{};
        const bool found = ((name == P::kName ? (result = f.template operator()<P>(), true) : false) || ...);
        if (!found) throw std::invalid_argument("unknown protocol \"" + std::string(name) + "\" (known: " + protocol_list() + ")");
        return result;
    }
}
}  // namespace detail

// Calls f.template operator()<P>() for the protocol named `name` (a
// generic lambda: []<VenueProtocol P>() { ... }) and returns its result.
// Throws std::invalid_argument for a name no protocol has.
template <class F>
decltype(auto) with_protocol(std::string_view name, F&& f) {
    if (name == kItch50Name)
        throw std::invalid_argument("protocol \"itch50\" has its own pipeline (itch50::LiveHandler, itch50::Replay)");
    return detail::dispatch(name, f, KnownProtocols{});
}

}  // namespace tickgate
