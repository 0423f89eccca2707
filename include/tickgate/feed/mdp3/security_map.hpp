// SecurityID (a sparse int32 chosen by CME) -> tickgate's dense instrument
// index, assigned in order of first appearance. Open addressing with linear
// probing over a power-of-two table at most half full; capacity fixed at
// start-up, so a lookup never allocates. Single-threaded (the decoder's thread;
// the summary reads it once the decoder is done).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace tickgate::mdp3 {

class SecurityMap {
public:
    static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

    // Room for `max_instruments` (> 0) ids; throws std::invalid_argument for 0.
    explicit SecurityMap(std::uint32_t max_instruments) : max_(max_instruments) {
        if (max_instruments == 0) throw std::invalid_argument("mdp3: max_instruments must be > 0");
        std::size_t slots = 2;
        while (slots < std::size_t{max_instruments} * 2) slots *= 2;
        slots_.assign(slots, Slot{0, kNone});
        ids_.reserve(max_instruments);
    }

    // The index of `security_id`, given it the next free one if it has none;
    // kNone once max_instruments ids are taken (the caller counts it).
    [[nodiscard]] std::uint32_t index_of(std::int32_t security_id) noexcept {
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = hash(security_id) & mask;; i = (i + 1) & mask) {
            Slot& s = slots_[i];
            if (s.index == kNone) {
                if (ids_.size() == max_) return kNone;
                s = {security_id, static_cast<std::uint32_t>(ids_.size())};
                ids_.push_back(security_id);  // reserved: never reallocates
                return s.index;
            }
            if (s.security_id == security_id) return s.index;
        }
    }

    // The index of `security_id` if it has one, else kNone; never inserts.
    [[nodiscard]] std::uint32_t find(std::int32_t security_id) const noexcept {
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = hash(security_id) & mask;; i = (i + 1) & mask) {
            const Slot& s = slots_[i];
            if (s.index == kNone) return kNone;
            if (s.security_id == security_id) return s.index;
        }
    }

    // The SecurityID of dense index `index` (< size()).
    [[nodiscard]] std::int32_t security_id(std::uint32_t index) const noexcept { return ids_[index]; }
    [[nodiscard]] std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(ids_.size()); }
    [[nodiscard]] std::uint32_t capacity() const noexcept { return max_; }

private:
    struct Slot {
        std::int32_t security_id;
        std::uint32_t index;  // kNone: empty
    };
    // CME ids are dense-ish runs: a multiplicative hash spreads neighbours.
    [[nodiscard]] static std::size_t hash(std::int32_t id) noexcept {
        return static_cast<std::size_t>((static_cast<std::uint64_t>(static_cast<std::uint32_t>(id)) * 0x9E3779B97F4A7C15ull) >> 32);
    }

    std::uint32_t max_;
    std::vector<Slot> slots_;
    std::vector<std::int32_t> ids_;
};

}  // namespace tickgate::mdp3
