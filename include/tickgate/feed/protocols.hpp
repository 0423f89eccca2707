// The protocols tickgate speaks, each a folder under feed/ (protocol.hpp
// says what one provides). The choice is made once, at start-up: a config's
// channels or --protocol name one, and with_protocol() instantiates the
// caller's code for it, so the poll loop stays monomorphic.
// Adding a protocol: its folder, and one entry in KnownProtocols.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>

#include "tickgate/feed/itch50/protocol.hpp"
#include "tickgate/feed/mdp3/protocol.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate {

template <VenueProtocol... P>
struct ProtocolList {
    using First = std::tuple_element_t<0, std::tuple<P...>>;
    static constexpr std::array<std::string_view, sizeof...(P)> names = {P::kName...};
    static constexpr std::array<std::string_view, sizeof...(P)> titles = {P::kTitle...};
};

using KnownProtocols = ProtocolList<qfb1::Protocol, mdp3::Protocol, itch50::Protocol>;
// The reference venue, whose rules the others' follow: the first listed. It
// is what a config channel naming no protocol speaks, what `tickgate sim`
// simulates without --protocol, and the protocol of the embedding API's
// short names (Handler, FeedHandler, InlineFeedHandler).
using ReferenceProtocol = KnownProtocols::First;

// Every name configs and --protocol take, and how messages name each.
inline constexpr auto kProtocolNames = KnownProtocols::names;
inline constexpr auto kProtocolTitles = KnownProtocols::titles;
// "QFB/1" for "qfb1"; the name itself if no protocol has it.
[[nodiscard]] constexpr std::string_view protocol_title(std::string_view name) noexcept {
    for (std::size_t i = 0; i < kProtocolNames.size(); ++i)
        if (kProtocolNames[i] == name) return kProtocolTitles[i];
    return name;
}

// "qfb1, mdp3, ..." for messages.
[[nodiscard]] inline std::string protocol_list() {
    std::string s;
    for (const std::string_view n : kProtocolNames) s += (s.empty() ? "" : ", ") + std::string(n);
    return s;
}

namespace detail {
template <class F, VenueProtocol... P>
decltype(auto) dispatch(std::string_view name, F& f, ProtocolList<P...>) {
    using R = decltype(f.template operator()<typename ProtocolList<P...>::First>());
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
    return detail::dispatch(name, f, KnownProtocols{});
}

// ---- protocol detection (`replay --protocol auto`, the wrong-protocol hint)
//
// Every known protocol's decoder tries each datagram offered; one "reads
// it cleanly" when its header is valid, the decoder finds no fault, and
// (when it holds messages) at least one is of a type the protocol defines.
// Cold path: each decoder is a fresh instance, never a handler's.

namespace detail {

template <VenueProtocol P>
class CleanReader {
public:
    [[nodiscard]] bool reads(std::span<const std::byte> d) {
        const typename P::Key key = P::read_key(d, 0);
        if (!key.valid()) return false;
        const std::uint64_t unknown = decoder_->counters().unknown_messages.get();
        // kFirst: every datagram is parsed (never taken for the other line's copy).
        const DecodeResult r = decoder_->decode(d, key, SessionMark::kFirst, 0, 0, [](const Event&) noexcept {});
        const std::uint64_t unknown_now = decoder_->counters().unknown_messages.get() - unknown;
        return r.verdict == PacketVerdict::kDecoded && (r.messages == 0 || unknown_now < r.messages);
    }

private:
    std::unique_ptr<typename P::Decoder> decoder_ = std::make_unique<typename P::Decoder>();
};

template <class List>
struct ProtocolReaders;
template <VenueProtocol... P>
struct ProtocolReaders<ProtocolList<P...>> {
    std::tuple<CleanReader<P>...> readers;
    // For each protocol in kProtocolNames' order: whether it reads `d` cleanly.
    template <class F>
    void each(std::span<const std::byte> d, F&& f) {
        std::size_t i = 0;
        std::apply([&](auto&... r) { ((f(i++, r.reads(d))), ...); }, readers);
    }
};

}  // namespace detail

// How many of the datagrams offered each known protocol reads cleanly.
class ProtocolProbe {
public:
    struct Fit {
        std::string_view name;
        std::string_view title;
        std::uint64_t clean = 0;
    };

    ProtocolProbe() {
        for (std::size_t i = 0; i < kProtocolNames.size(); ++i) fits_[i] = {kProtocolNames[i], kProtocolTitles[i], 0};
    }
    // One UDP payload (an empty one is not offered: no protocol sends it).
    void offer(std::span<const std::byte> datagram) {
        if (datagram.empty()) return;
        ++datagrams_;
        readers_.each(datagram, [&](std::size_t i, bool clean) { fits_[i].clean += clean ? 1 : 0; });
    }
    [[nodiscard]] std::uint64_t datagrams() const noexcept { return datagrams_; }
    [[nodiscard]] std::span<const Fit> fits() const noexcept { return fits_; }
    [[nodiscard]] const Fit& fit(std::string_view name) const noexcept {
        for (const Fit& f : fits_)
            if (f.name == name) return f;
        return fits_.front();
    }
    // The protocol that reads the most datagrams cleanly (the first listed
    // of equals), or nullptr when none reads any.
    [[nodiscard]] const Fit* best() const noexcept {
        const Fit* b = nullptr;
        for (const Fit& f : fits_)
            if (f.clean > 0 && (b == nullptr || f.clean > b->clean)) b = &f;
        return b;
    }

private:
    std::array<Fit, kProtocolNames.size()> fits_{};
    detail::ProtocolReaders<KnownProtocols> readers_;
    std::uint64_t datagrams_ = 0;
};

// The first `max_datagrams` UDP payloads of the capture at `path`
// (feed/protocol_probe.cpp) offered to a probe. Throws CaptureError as replay does.
[[nodiscard]] ProtocolProbe probe_capture(const std::string& path, std::uint64_t max_datagrams = 1000);

}  // namespace tickgate
