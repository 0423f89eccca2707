// The simulators' random numbers and line faults (private to feed/): one
// generator whose stream is the same on every platform, so a seed names one
// run everywhere, and the per-packet fault draws both simulators make.
#pragma once

#include <cstdint>

namespace tickgate {

// xoshiro256** seeded by splitmix64: the same numbers on every platform
// (std distributions are not portable).
class Rng {
public:
    explicit Rng(std::uint64_t seed) noexcept {
        for (auto& w : s_) {
            seed += 0x9E3779B97F4A7C15ULL;
            std::uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
            w = z ^ (z >> 31);
        }
    }
    std::uint64_t next() noexcept {
        const std::uint64_t r = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return r;
    }
    double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
    std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    std::uint64_t s_[4];
};

// One packet's fault draws, made whatever faults are on (so turning one on
// does not shift the others' numbers), and the lines that carry it.
struct PacketDraws {
    double u[7];  // 0 burst, 1-2 loss on A/B, 3-4 a duplicate and its line, 5-6 a reorder and its line
    bool a = true, b = true;
};

// Loss per packet: a burst of `burst_len` packets lost on both lines starts
// with probability `burst_p`, else each line loses the packet on its own.
class LineLoss {
public:
    PacketDraws next(Rng& rng, bool exempt, double loss_a, double loss_b, double burst_p, std::uint32_t burst_len) noexcept {
        PacketDraws d;
        for (double& x : d.u) x = rng.uniform();
        if (exempt) return d;
        if (burst_left_ > 0) {
            d.a = d.b = false;
            --burst_left_;
        } else if (burst_p > 0 && d.u[0] < burst_p) {
            d.a = d.b = false;
            burst_left_ = burst_len - 1;
        } else {
            d.a = !(d.u[1] < loss_a);
            d.b = !(d.u[2] < loss_b);
        }
        return d;
    }

private:
    std::uint32_t burst_left_ = 0;
};

// Whether `fraction` of the run falls in one of the [from, to) windows (outages).
template <class Windows>
[[nodiscard]] bool in_window(const Windows& ws, double fraction) noexcept {
    for (const auto& w : ws)
        if (fraction >= w.from && fraction < w.to) return true;
    return false;
}

}  // namespace tickgate
