// Pre-trade staleness gate (spec "Pre-trade gate"): silence, then age at
// source (too old, or too far in the future), then suspect. Reads the
// instrument table the sequencer writes; call on the engine thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "tickgate/feed/instruments.hpp"

namespace tickgate {

enum class GateReason : std::uint8_t {
    kOk,
    kUnknown,
    kStale,
    kStaleAtSource,
    kSuspect,
    kNotSubscribed,  // sequenced, but its book is not built (instruments.subscribe)
};

struct GateConfig {
    std::int64_t stale_ms = 250;        // max silence (no accepted tick or gap-free heartbeat)
    std::int64_t source_age_ms = 2000;  // max age of the price at source, offset-corrected
};

struct GateDecision {
    GateReason reason;
    std::int64_t silence_ms;  // now - last_alive, for "stale quote: N ms"; 0 if never alive
    [[nodiscard]] bool ok() const noexcept { return reason == GateReason::kOk; }
};

// JSON names: "ok", "unknown", "stale", "stale_at_source", "suspect", "not_subscribed".
[[nodiscard]] std::string_view to_string(GateReason r) noexcept;

class Gate {
public:
    Gate(const InstrumentTable& instruments, const GateConfig& cfg) noexcept
        : instruments_(&instruments), stale_ns_(cfg.stale_ms * 1'000'000), source_age_ns_(cfg.source_age_ms * 1'000'000) {}

    // Is the price of `id` safe to trade on at `now_ns` (our clock)? Engine
    // thread; a few loads and compares, no side effects.
    [[nodiscard]] GateDecision check(std::uint32_t id, std::int64_t now_ns) const noexcept {
        if (id >= instruments_->max_instruments()) [[unlikely]] return {GateReason::kUnknown, 0};
        const InstrumentState& st = instruments_->state(id);
        if (!st.seen || st.deleted) [[unlikely]] return {GateReason::kUnknown, 0};
        if (!st.booked) [[unlikely]] return {GateReason::kNotSubscribed, 0};
        std::int64_t silence = 0;
        if (st.alive) {
            const std::int64_t last_alive_ns = instruments_->last_alive_ns(id);
            if (__builtin_sub_overflow(now_ns, last_alive_ns, &silence)) [[unlikely]]
                silence = now_ns > last_alive_ns ? INT64_MAX : INT64_MIN;  // saturate
        }
        if (st.alive && silence > stale_ns_) return {GateReason::kStale, silence / 1'000'000};
        if (st.has_source && outside_tolerance(now_ns, st.last_source_ns, st.clock_offset_ns, source_age_ns_))
            return {GateReason::kStaleAtSource, silence / 1'000'000};
        if (st.suspect || !st.has_source) return {GateReason::kSuspect, silence / 1'000'000};
        return {GateReason::kOk, silence / 1'000'000};
    }

    // |now - t - offset| > limit, without overflow: t comes from the wire and
    // may be any 64-bit value. Too old, or stamped further in the future than
    // the tolerance (the source clock or the price is wrong): both rejected.
    [[nodiscard]] static bool outside_tolerance(std::int64_t now, std::int64_t t, std::int64_t offset,
                                                std::int64_t limit) noexcept {
        std::int64_t age;
        if (__builtin_sub_overflow(now, t, &age)) return true;  // |age| > 2^63 - 1 >= limit
        if (__builtin_sub_overflow(age, offset, &age)) return true;
        return age > limit || age < -limit;
    }

private:
    const InstrumentTable* instruments_;
    std::int64_t stale_ns_;
    std::int64_t source_age_ns_;
};

}  // namespace tickgate
