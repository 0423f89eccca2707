// L2 depth books: per instrument, two sorted flat arrays of price levels
// (bids descending, asks ascending), capacity fixed at start-up. No
// allocation after construction; not thread-safe (engine thread only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tickgate {

struct Level {
    std::int64_t price;  // raw wire fixed-point integer
    std::uint32_t qty;
};

enum class Side : std::uint8_t { kBid = 0, kAsk = 1 };

// Outcome of one level update, for counters; the book is always left sorted.
enum class LevelResult : std::uint8_t {
    kInserted,
    kReplaced,
    kDeleted,
    kMissing,     // delete of a price that is not in the book
    kDroppedDeep, // book full and the new level is worse than all kept levels
};

class BookStore {
public:
    // Books for instrument ids [0, instruments), `depth` levels per side.
    BookStore(std::uint32_t instruments, std::uint32_t depth);

    [[nodiscard]] std::uint32_t depth() const noexcept { return depth_; }

    // Levels of one side, best first.
    [[nodiscard]] std::span<const Level> side(std::uint32_t id, Side s) const noexcept {
        const std::size_t k = slot(id, s);
        return {levels_.data() + k * depth_, counts_[k]};
    }

    void clear(std::uint32_t id) noexcept { counts_[slot(id, Side::kBid)] = counts_[slot(id, Side::kAsk)] = 0; }

    // Inserts or replaces the level at `price`; qty 0 deletes it.
    LevelResult set_level(std::uint32_t id, Side s, std::int64_t price, std::uint32_t qty) noexcept;
    LevelResult delete_level(std::uint32_t id, Side s, std::int64_t price) noexcept;

    // Top of book from a full quote: one level per side, a side with qty 0 empty.
    void set_top(std::uint32_t id, std::int64_t bid_px, std::uint32_t bid_qty,
                 std::int64_t ask_px, std::uint32_t ask_qty) noexcept;

    // Appends a snapshot level (best-first order expected; out-of-order input
    // is put in order). Levels beyond depth are dropped; returns false then.
    bool append_level(std::uint32_t id, Side s, std::int64_t price, std::uint32_t qty) noexcept;

private:
    [[nodiscard]] std::size_t slot(std::uint32_t id, Side s) const noexcept {
        return std::size_t{id} * 2 + static_cast<std::size_t>(s);
    }

    std::uint32_t depth_;
    std::vector<Level> levels_;          // [instrument][side][depth]
    std::vector<std::uint32_t> counts_;  // [instrument][side]
};

}  // namespace tickgate
