// "toy": the test-only fourth protocol (issue 22 item 5), a folder of its
// own like feed/NAME/: its wire, key, session rule, decoder, and its choice
// of rules and book. It runs through the shared replay and both live
// pipelines (tests/toy/toy_test.cpp) with no production file naming it
// (tests/feed/protocol_test.cpp uses it too); it is not in KnownProtocols (no config or CLI can pick it).
//
// Wire (little-endian): u32 seq, u16 count, then `count` messages of 28
// bytes: instrument u32, rpt_seq u64, bid i64, ask i64, each a full quote.
// No channel and no session in the header: the line says the channel, and
// a seq more than 100 below the highest seen on the channel starts a new
// session (as MDP3's sequence restart does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tickgate/endian.hpp"
#include "tickgate/feed/qfb1/rules.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate::toy {

inline constexpr std::size_t kHeaderBytes = 6, kMessageBytes = 28;

struct Quote {
    std::uint32_t instrument;
    std::uint64_t rpt_seq;
    std::int64_t bid;
};

struct Protocol {
    struct Key {
        std::uint64_t seq = 0;
        std::uint32_t len = 0;
        std::uint16_t channel = 0;
        std::uint16_t count = 0;
        bool ok = false;
        [[nodiscard]] bool valid() const noexcept { return ok; }
        [[nodiscard]] std::uint64_t next_seq() const noexcept { return seq + 1; }
        [[nodiscard]] PacketFingerprint fingerprint() const noexcept { return {0, len}; }
    };
    class SessionState {
    public:
        [[nodiscard]] SessionMark observe(const Key& k) noexcept {
            const bool first = !started_, restart = started_ && k.seq + 100 < highest_;
            started_ = true;
            if (first || restart || k.seq > highest_) highest_ = k.seq;
            return first ? SessionMark::kFirst : restart ? SessionMark::kNewer : SessionMark::kCurrent;
        }

    private:
        bool started_ = false;
        std::uint64_t highest_ = 0;
    };
    class Decoder {
    public:
        template <class Sink>
        DecodeResult decode(std::span<const std::byte> d, const Key& key, SessionMark mark, std::int64_t recv_ns,
                            std::uint8_t line, Sink&& sink) noexcept {
            counters_.packets.add();
            if (!key.valid() || d.size() != kHeaderBytes + kMessageBytes * key.count) {
                counters_.malformed_packets.add();
                return {PacketVerdict::kMalformed, Fault::kBadLength, 0};
            }
            Event ev{};
            ev.recv_ns = recv_ns;
            ev.channel_id = key.channel;
            ev.line = line;
            if (mark == SessionMark::kNewer) {
                counters_.session_changes.add();
                ev.kind = EventKind::kSessionChange;
                sink(static_cast<const Event&>(ev));
            }
            for (std::uint16_t i = 0; i < key.count; ++i) {
                const std::byte* m = d.data() + kHeaderBytes + kMessageBytes * i;
                ev.kind = EventKind::kQuote;
                ev.instrument_id = load_le<std::uint32_t>(m);
                ev.u.quote = {load_le<std::uint64_t>(m + 4), recv_ns, load_le<std::int64_t>(m + 12),
                              load_le<std::int64_t>(m + 20), 1, 1};
                sink(static_cast<const Event&>(ev));
            }
            counters_.messages.add(key.count);
            return {PacketVerdict::kDecoded, Fault::kNone, key.count};
        }
        [[nodiscard]] const DecoderCounters& counters() const noexcept { return counters_; }
        void count_malformed_unread() noexcept { counters_.malformed_packets.add(); }

    private:
        DecoderCounters counters_;
    };

    static constexpr std::string_view kName = "toy";
    static constexpr std::size_t kMaxDatagram = 1400;
    static constexpr HolePolicy kHolePolicy = HolePolicy::kGiveUpAfterHold;  // the shared A/B arbiter
    static constexpr bool kHeaderNamesChannel = false;
    using Rules = qfb1::Rules;  // the reference venue's per-instrument rules, over its L2 book
    using Book = Rules::Book;

    [[nodiscard]] static Key read_key(std::span<const std::byte> d, std::uint16_t line_channel) noexcept {
        Key k;
        k.len = static_cast<std::uint32_t>(d.size());
        k.channel = line_channel;
        if (d.size() < kHeaderBytes) return k;
        k.seq = load_le<std::uint32_t>(d.data());
        k.count = load_le<std::uint16_t>(d.data() + 4);
        k.ok = true;
        return k;
    }
    [[nodiscard]] static constexpr std::size_t max_events_for(std::size_t len) noexcept {
        return 1 + len / kMessageBytes;
    }
};
static_assert(VenueProtocol<Protocol>);

// One packet of `seq` carrying `quotes` (ask = bid + 1).
inline std::vector<std::byte> packet(std::uint32_t seq, std::span<const Quote> quotes) {
    std::vector<std::byte> b(kHeaderBytes + kMessageBytes * quotes.size());
    store_le<std::uint32_t>(b.data(), seq);
    store_le<std::uint16_t>(b.data() + 4, static_cast<std::uint16_t>(quotes.size()));
    std::byte* m = b.data() + kHeaderBytes;
    for (const Quote& q : quotes) {
        store_le<std::uint32_t>(m, q.instrument);
        store_le<std::uint64_t>(m + 4, q.rpt_seq);
        store_le<std::int64_t>(m + 12, q.bid);
        store_le<std::int64_t>(m + 20, q.bid + 1);
        m += kMessageBytes;
    }
    return b;
}
inline std::vector<std::byte> packet(std::uint32_t seq, std::uint32_t instrument, std::uint64_t rpt, std::int64_t bid) {
    const Quote q{instrument, rpt, bid};
    return packet(seq, std::span<const Quote>(&q, 1));
}

}  // namespace tickgate::toy
