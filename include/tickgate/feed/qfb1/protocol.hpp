// QFB/1 as a tickgate protocol (protocol.hpp): what the shared pipeline is
// instantiated with to speak it. Everything QFB/1-specific is in this folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "tickgate/feed/qfb1/decoder.hpp"
#include "tickgate/feed/qfb1/rules.hpp"
#include "tickgate/feed/qfb1/wire.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate::qfb1 {

// A channel's session (QFB1.md "Sessions"): sessions are numbered; a
// higher one replaces the current one, a lower one is stale.
class SessionState {
public:
    [[nodiscard]] SessionMark observe(const Key& key) noexcept {
        const std::uint64_t s = std::uint64_t{key.session} + 1;
        if (s < newest_) return SessionMark::kStale;
        if (s == newest_) return SessionMark::kCurrent;
        const bool first = newest_ == 0;
        newest_ = s;
        return first ? SessionMark::kFirst : SessionMark::kNewer;
    }

private:
    std::uint64_t newest_ = 0;  // session + 1; 0 = none yet
};

struct Protocol {
    static constexpr std::string_view kName = "qfb1";
    static constexpr std::string_view kTitle = "QFB/1";  // in messages
    static constexpr std::size_t kMaxDatagram = qfb1::kMaxDatagram;
    static constexpr HolePolicy kHolePolicy = HolePolicy::kGiveUpAfterHold;
    static constexpr bool kHeaderNamesChannel = true;  // rule 7: checked against the line's channel
    using Key = qfb1::Key;
    using SessionState = qfb1::SessionState;
    using Decoder = PacketDecoder;
    using Rules = qfb1::Rules;  // its sequencing rules (rules.hpp)
    using Book = Rules::Book;

    // The header names the channel; the line's is only checked against it.
    [[nodiscard]] static Key read_key(std::span<const std::byte> d, std::uint16_t /*line_channel*/) noexcept {
        return qfb1::read_key(d);
    }
    [[nodiscard]] static constexpr std::size_t max_events_for(std::size_t len) noexcept {
        return qfb1::max_events_for(len);
    }
};

static_assert(VenueProtocol<Protocol>);

}  // namespace tickgate::qfb1
