// Tests and fuzzers: the QFB/1 arbiter fed raw datagrams, as the pipeline
// drives it (key read once, observed by a channel table, then offered);
// what it delivers goes to rec(bytes, recv_ns, line).
#pragma once

#include <cstdint>
#include <span>

#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"

namespace tickgate {

class ArbiterRig {
public:
    // Any channel id takes a table slot on first sight; the first `channels` are arbitrated.
    ArbiterRig(std::uint32_t channels, std::uint32_t window, std::int64_t hold) : arb_(channels, window, hold) {}
    // The configured channels own the slots.
    ArbiterRig(std::span<const std::uint16_t> ids, std::uint32_t window, std::int64_t hold)
        : streams_(ids), arb_(static_cast<std::uint32_t>(ids.size()), window, hold) {}

    template <class Rec>
    void offer(std::span<const std::byte> d, std::int64_t t, std::uint8_t line, Rec& rec) {
        const qfb1::Key key = qfb1::read_key(d);
        arb_.offer(d, key, streams_.observe(key, line, nullptr), t, line, To<Rec>{rec});
    }
    template <class Rec>
    void expire(std::int64_t now, Rec& rec) {
        arb_.expire(now, To<Rec>{rec});
    }
    [[nodiscard]] std::int64_t next_deadline() const noexcept { return arb_.next_deadline(); }
    [[nodiscard]] const ArbiterCounters& counters() const noexcept { return arb_.counters(); }

private:
    template <class Rec>
    struct To {
        Rec& rec;
        void operator()(std::span<const std::byte> d, const qfb1::Key&, SessionMark, std::int64_t t,
                        std::uint8_t l) const {
            rec(d, t, l);
        }
    };
    ChannelStreams<qfb1::Protocol> streams_;
    PacketArbiter<qfb1::Protocol> arb_;
};

}  // namespace tickgate
