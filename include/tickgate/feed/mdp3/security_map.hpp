// SecurityID (a sparse int32 chosen by CME) -> tickgate's dense instrument
// index, assigned in order of first appearance, and the definitions of
// SecurityIDs (symbol, depth) whether or not they have an index. Open
// addressing with linear probing over power-of-two tables at most half
// full; capacities fixed at start-up, so a lookup never allocates.
// Single-threaded (the decoder's thread; the summary reads them once the
// decoder is done).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

namespace tickgate::mdp3 {

// CME ids are dense-ish runs: a multiplicative hash spreads neighbours. The
// home slot of `id` in a table of `mask` + 1 slots (a power of two): the top
// bits of the 32-bit product, taken by one multiply with the table's size
// (no 64-bit constant to hold in a register on the decoder's entry loop).
[[nodiscard]] inline std::size_t home_slot(std::int32_t id, std::size_t mask) noexcept {
    const std::uint32_t h = static_cast<std::uint32_t>(id) * 0x9E3779B1u;
    return static_cast<std::size_t>((std::uint64_t{h} * (mask + 1)) >> 32);
}

class SecurityMap {
public:
    static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

    // Room for `max_instruments` (> 0) ids; throws std::invalid_argument for 0.
    explicit SecurityMap(std::uint32_t max_instruments) : max_(max_instruments) {
        if (max_instruments == 0) throw std::invalid_argument("mdp3: max_instruments must be > 0");
        std::size_t slots = 2;
        while (slots < std::size_t{max_instruments} * 2) slots *= 2;
        slots_.assign(slots, Slot{0, kNone});
        mask_ = slots - 1;
        ids_.reserve(max_instruments);
    }

    // The index of `security_id`, given it the next free one if it has none;
    // kNone once max_instruments ids are taken (the caller counts it).
    [[nodiscard]] std::uint32_t index_of(std::int32_t security_id) noexcept {
        for (std::size_t i = home_slot(security_id, mask_);; i = (i + 1) & mask_) {
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

private:
    struct Slot {
        std::int32_t security_id;
        std::uint32_t index;  // kNone: empty
    };

public:
    // The map's lookup, for a loop to hold in registers: find() reads the
    // slots' address and mask from the map, which the compiler reloads after
    // every store it cannot tell apart from them (an event's fields, per
    // entry). Valid until the map is replaced (PacketDecoder::set_capacity, at
    // start-up): its slots never move; it sees later inserts (index_of).
    class Finder {
    public:
        // The index of `security_id` if it has one, else kNone; never inserts.
        // Per entry on the decoder's hot path: one multiply, one probe mostly.
        [[nodiscard]] std::uint32_t find(std::int32_t security_id) const noexcept {
            // The id is compared first: an empty slot (id 0, index kNone)
            // that matches ends the probe with kNone, the right answer. The
            // first probe apart: a hit there (most lookups) is one compare.
            std::size_t i = home_slot(security_id, mask_);
            if (slots_[i].security_id == security_id) [[likely]]
                return slots_[i].index;
            for (;;) {
                if (slots_[i].index == kNone) return kNone;
                i = (i + 1) & mask_;
                if (slots_[i].security_id == security_id) return slots_[i].index;
            }
        }

    private:
        friend class SecurityMap;
        Finder(const Slot* slots, std::size_t mask) noexcept : slots_(slots), mask_(mask) {}
        const Slot* slots_;
        std::size_t mask_;
    };
    [[nodiscard]] Finder finder() const noexcept { return {slots_.data(), mask_}; }

    // The index of `security_id` if it has one, else kNone; never inserts.
    [[nodiscard]] std::uint32_t find(std::int32_t security_id) const noexcept { return finder().find(security_id); }

    // The SecurityID of dense index `index` (< size()).
    [[nodiscard]] std::int32_t security_id(std::uint32_t index) const noexcept { return ids_[index]; }
    [[nodiscard]] std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(ids_.size()); }
    [[nodiscard]] std::uint32_t capacity() const noexcept { return max_; }

private:
    std::uint32_t max_;
    std::size_t mask_ = 0;  // slots_.size() - 1, kept: not re-derived per lookup
    std::vector<Slot> slots_;
    std::vector<std::int32_t> ids_;
};

// What a definition says of its SecurityID (MDP3.md "Definitions").
struct StoredDefinition {
    char symbol[16];             // NUL-padded, its first 16 characters
    std::int8_t price_exponent;  // of the template's prices
    std::uint8_t book_depth;     // GBX MarketDepth; 0: not given
    bool removed;                // SecurityUpdateAction 'D'
};

// The definitions of up to `capacity` SecurityIDs ([mdp3] max_definitions),
// traded or not: a definition takes no instrument slot, only room here. The
// table is zeroed memory from calloc: what no definition has touched costs
// no resident memory.
class DefinitionTable {
public:
    // Room for `capacity` (> 0) definitions; throws std::invalid_argument for 0.
    explicit DefinitionTable(std::uint32_t capacity) : capacity_(capacity) {
        if (capacity == 0) throw std::invalid_argument("mdp3: max_definitions must be > 0");
        const std::size_t n = slots_for(capacity);
        slots_.reset(static_cast<Slot*>(std::calloc(n, sizeof(Slot))));
        if (!slots_) throw std::bad_alloc();
        mask_ = n - 1;
    }
    // What the constructor reserves (touched only as definitions arrive).
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t capacity) noexcept {
        return slots_for(capacity) * sizeof(Slot);
    }

    // The definition of `security_id`, or nullptr.
    [[nodiscard]] const StoredDefinition* find(std::int32_t security_id) const noexcept {
        const Slot& s = slots_[slot_of(security_id)];
        return s.used ? &s.def : nullptr;
    }
    // Stores (or replaces) the definition of `security_id`; false, nothing
    // stored, when `capacity` others are stored already.
    bool put(std::int32_t security_id, const StoredDefinition& def) noexcept {
        Slot& s = slots_[slot_of(security_id)];
        if (!s.used) {
            if (size_ == capacity_) return false;
            s.used = true;
            s.security_id = security_id;
            ++size_;
        }
        s.def = def;
        return true;
    }
    [[nodiscard]] std::uint32_t size() const noexcept { return size_; }
    [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }

private:
    struct Slot {
        std::int32_t security_id;
        bool used;  // all-zero: empty
        StoredDefinition def;
    };
    struct Free {
        void operator()(Slot* p) const noexcept { std::free(p); }
    };
    [[nodiscard]] static std::size_t slots_for(std::uint32_t capacity) noexcept {
        std::size_t n = 2;
        while (n < std::size_t{capacity} * 2) n *= 2;
        return n;
    }
    // Its slot, or the empty one where it would go (one exists: at most half full).
    [[nodiscard]] std::size_t slot_of(std::int32_t security_id) const noexcept {
        for (std::size_t i = home_slot(security_id, mask_);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (!s.used || s.security_id == security_id) return i;
        }
    }

    std::unique_ptr<Slot[], Free> slots_;
    std::size_t mask_ = 0;
    std::uint32_t capacity_;
    std::uint32_t size_ = 0;
};

}  // namespace tickgate::mdp3
