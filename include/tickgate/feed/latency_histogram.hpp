// Kernel receive -> book latency per channel, for the metrics (metrics.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tickgate/counter.hpp"

namespace tickgate {

// Kernel receive -> book latency per channel, exported as the Prometheus
// histogram tickgate_receive_to_book_seconds{channel}: fixed bucket bounds,
// one RelaxedCounter per bucket. record() is the engine thread's (no
// allocation, no lock, a few compares); any thread may read the counters.
class LatencyHistograms {
public:
    // Upper bounds (le) in ns; a last bucket (+Inf) takes the rest.
    static constexpr std::array<std::int64_t, 16> kBoundsNs = {
        1'000,   2'000,     5'000,     10'000,    20'000,     50'000,     100'000,     200'000,
        500'000, 1'000'000, 2'000'000, 5'000'000, 10'000'000, 50'000'000, 100'000'000, 1'000'000'000};
    static constexpr std::size_t kBuckets = kBoundsNs.size() + 1;
    struct Channel {
        std::uint16_t id = 0;
        std::array<RelaxedCounter, kBuckets> buckets;  // not cumulative: bucket i holds (bound i-1, bound i]
        RelaxedCounter sum_ns;
    };

    // One histogram per configured channel, in the order given.
    explicit LatencyHistograms(std::span<const std::uint16_t> channel_ids) : channels_(channel_ids.size()) {
        for (std::size_t i = 0; i < channel_ids.size(); ++i) channels_[i].id = channel_ids[i];
    }
    [[nodiscard]] static std::size_t bytes_for(std::size_t channels) noexcept { return channels * sizeof(Channel); }

    // Engine thread: `ns` from the kernel's receive stamp of the datagram to
    // its book applied, on channel `channel_id` (another channel: ignored;
    // a negative figure, clocks apart: counted as 0).
    void record(std::uint16_t channel_id, std::int64_t ns) noexcept {
        if (channels_.empty()) return;
        if (channels_[last_].id != channel_id) {
            std::size_t i = 0;
            while (i < channels_.size() && channels_[i].id != channel_id) ++i;
            if (i == channels_.size()) return;
            last_ = i;
        }
        Channel& c = channels_[last_];
        if (ns < 0) ns = 0;
        std::size_t b = 0;
        while (b < kBoundsNs.size() && ns > kBoundsNs[b]) ++b;
        c.buckets[b].add();
        c.sum_ns.add(static_cast<std::uint64_t>(ns));
    }
    [[nodiscard]] std::span<const Channel> channels() const noexcept { return {channels_.data(), channels_.size()}; }

private:
    std::vector<Channel> channels_;  // sized once: never reallocates
    std::size_t last_ = 0;           // the channel found last (datagrams come in runs)
};

}  // namespace tickgate
