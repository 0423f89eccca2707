// The L2 book (QFB/1): per instrument, two sorted flat arrays of price
// levels keyed by price (bids descending, asks ascending), capacity fixed at
// start-up; a SequencedBook (book.hpp). No
// allocation after construction; not thread-safe (engine thread only).
//
// Layout for speed: both sides are stored as ascending unsigned *keys* — the
// price with its sign bit flipped for asks, every bit but the sign flipped
// for bids (~p reverses the order and, unlike -p, cannot overflow) — so one
// code path serves both sides and the side never costs a mispredicted
// branch. Each side is a run of `stride` slots (depth rounded up to 8); slots
// past the last level hold the key UINT64_MAX, which is never below any key.
// The insert position is then a branch-free count of smaller keys, eight at
// a time, stopping after the first run of eight that is not all smaller: one
// run for the near-the-touch updates that dominate real feeds. Unsigned keys
// make each count a compare and an add-with-carry (signed ones took a
// compare, a set, a widening and an add).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "tickgate/book/book.hpp"
#include "tickgate/event.hpp"

namespace tickgate {

namespace detail {
struct BookSlot {
    std::uint64_t key;  // price ^ side_mask(side)
    std::uint32_t qty;
};
// key = price ^ mask and price = key ^ mask: for asks the sign bit (signed
// order becomes unsigned order), for bids every other bit (the order reversed).
inline constexpr std::uint64_t side_mask(Side s) noexcept {
    return s == Side::kBid ? ~(std::uint64_t{1} << 63) : std::uint64_t{1} << 63;
}
inline constexpr std::uint64_t key_of(std::int64_t price, std::uint64_t mask) noexcept {
    return static_cast<std::uint64_t>(price) ^ mask;
}
inline constexpr std::int64_t price_of(std::uint64_t key, std::uint64_t mask) noexcept {
    return static_cast<std::int64_t>(key ^ mask);
}
}  // namespace detail

// Read-only view of one side of a book, best first, yielding Level values;
// valid until the book changes.
class BookSide {
public:
    class iterator {
    public:
        using value_type = Level;
        using difference_type = std::ptrdiff_t;
        iterator() = default;
        iterator(const detail::BookSlot* slot, std::uint64_t mask) noexcept : slot_(slot), mask_(mask) {}
        Level operator*() const noexcept { return {detail::price_of(slot_->key, mask_), slot_->qty}; }
        iterator& operator++() noexcept {
            ++slot_;
            return *this;
        }
        iterator operator++(int) noexcept {
            iterator t = *this;
            ++slot_;
            return t;
        }
        bool operator==(const iterator& o) const noexcept { return slot_ == o.slot_; }

    private:
        const detail::BookSlot* slot_ = nullptr;
        std::uint64_t mask_ = 0;
    };

    BookSide(const detail::BookSlot* slots, std::uint32_t size, std::uint64_t mask) noexcept
        : slots_(slots), size_(size), mask_(mask) {}
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] Level operator[](std::size_t i) const noexcept { return {detail::price_of(slots_[i].key, mask_), slots_[i].qty}; }
    [[nodiscard]] iterator begin() const noexcept { return {slots_, mask_}; }
    [[nodiscard]] iterator end() const noexcept { return {slots_ + size_, mask_}; }

private:
    const detail::BookSlot* slots_;
    std::uint32_t size_;
    std::uint64_t mask_;
};
static_assert(std::forward_iterator<BookSide::iterator>);

// Outcome of one level update, for counters; the book is always left sorted.
enum class LevelResult : std::uint8_t {
    kInserted,
    kReplaced,
    kDeleted,
    kMissing,     // delete of a price that is not in the book
    kDroppedDeep, // book full and the new level is worse than all kept levels
};

class L2Book {
public:
    // Books for instrument ids [0, instruments), `depth` (> 0) levels per side.
    L2Book(std::uint32_t instruments, std::uint32_t depth);
    // What the constructor allocates, so a config can be refused before it is
    // tried (estimate_memory in config.hpp).
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t instruments, std::uint32_t depth) noexcept {
        const std::size_t stride = (std::size_t{depth} + 7) / 8 * 8;
        return std::size_t{instruments} * 2 * (stride * sizeof(detail::BookSlot) + sizeof(std::uint32_t));
    }

    [[nodiscard]] std::uint32_t depth() const noexcept { return depth_; }

    // Levels of one side, best first.
    [[nodiscard]] BookSide side(std::uint32_t id, Side s) const noexcept {
        const std::size_t k = slot(id, s);
        return {slots_.data() + k * stride_, counts_[k], detail::side_mask(s)};
    }

    void clear(std::uint32_t id) noexcept {
        clear_side(slot(id, Side::kBid));
        clear_side(slot(id, Side::kAsk));
    }

    // Inserts or replaces the level at `price`; qty 0 deletes it. Both are
    // forced inline into the decoder's D site (apply): the call saved five
    // registers per delta (QFB/1 only D: ~5 % a message).
    [[gnu::always_inline]] LevelResult set_level(std::uint32_t id, Side s, std::int64_t price, std::uint32_t qty) noexcept {
        if (qty == 0) return delete_level(id, s, price);
        const std::size_t k = slot(id, s);
        detail::BookSlot* lv = slots_.data() + k * stride_;
        std::uint32_t& n = counts_[k];
        const std::uint64_t key = detail::key_of(price, detail::side_mask(s));
        const std::uint32_t i = position(lv, key);
        if (i < n && lv[i].key == key) {
            lv[i].qty = qty;
            return LevelResult::kReplaced;
        }
        if (i >= depth_) return LevelResult::kDroppedDeep;
        const std::uint32_t keep = n < depth_ ? n : depth_ - 1;  // full: the worst level falls off
        std::memmove(lv + i + 1, lv + i, (keep - i) * sizeof *lv);  // a loop's exit mispredicted per shift length
        lv[i] = {key, qty};
        n = keep + 1;
        return LevelResult::kInserted;
    }

    [[gnu::always_inline]] LevelResult delete_level(std::uint32_t id, Side s, std::int64_t price) noexcept {
        const std::size_t k = slot(id, s);
        detail::BookSlot* lv = slots_.data() + k * stride_;
        std::uint32_t& n = counts_[k];
        const std::uint64_t key = detail::key_of(price, detail::side_mask(s));
        const std::uint32_t i = position(lv, key);
        if (i >= n || lv[i].key != key) return LevelResult::kMissing;
        std::memmove(lv + i, lv + i + 1, (n - 1 - i) * sizeof *lv);
        lv[--n] = {kEmptyKey, 0};
        return LevelResult::kDeleted;
    }

    // A sequenced QFB/1 book event: a Q sets the top of book, a D one level.
    // Other kinds do not touch an L2 book.
    [[gnu::always_inline]] BookEffect apply(std::uint32_t id, const Event& ev) noexcept {
        if (ev.kind == EventKind::kDelta) {
            const Side s = ev.u.delta.side == 0 ? Side::kBid : Side::kAsk;
            const LevelResult r = ev.u.delta.action == 0 ? set_level(id, s, ev.u.delta.price, ev.u.delta.qty)
                                                         : delete_level(id, s, ev.u.delta.price);
            return {true, r == LevelResult::kDroppedDeep ? 1u : 0u};
        }
        if (ev.kind == EventKind::kQuote) {
            set_top(id, ev.u.quote.bid_px, ev.u.quote.bid_qty, ev.u.quote.ask_px, ev.u.quote.ask_qty);
            return {true, 0};
        }
        return {};
    }

    // Top of book from a full quote: one level per side, a side with qty 0 empty.
    [[gnu::always_inline]] void set_top(std::uint32_t id, std::int64_t bid_px, std::uint32_t bid_qty,
                 std::int64_t ask_px, std::uint32_t ask_qty) noexcept {
        set_only_level(slot(id, Side::kBid), detail::key_of(bid_px, detail::side_mask(Side::kBid)), bid_qty);
        set_only_level(slot(id, Side::kAsk), detail::key_of(ask_px, detail::side_mask(Side::kAsk)), ask_qty);
    }

    // Appends `count` snapshot levels of one side (best-first order expected;
    // out-of-order input is put in order); returns how many were dropped
    // (beyond depth). The side's count and the book's shape stay in registers
    // over the batch: a call per level reloaded them after every store. From
    // the first level that is not a plain append (out of order, an equal
    // price, a full side, key 0 first on an empty side) the rest go to
    // insert_levels, out of line and by a tail call, so that this loop keeps
    // no registers across a call.
    std::uint32_t append_levels(std::uint32_t id, Side s, const std::int64_t* price, const std::uint32_t* qty,
                                std::uint32_t count) noexcept {
        const std::size_t k = slot(id, s);
        detail::BookSlot* const lv = slots_.data() + k * stride_;
        const std::uint64_t mask = detail::side_mask(s);
        std::uint32_t& n = counts_[k];
        // The next free slot and the side's end as pointers, and the last
        // level's key held: the loop neither indexes nor reads back what it
        // stored. 0 for an empty side sends a level of key 0 (the most
        // extreme price) to insert_levels, which places it all the same.
        detail::BookSlot* out = lv + n;
        detail::BookSlot* const full = lv + depth_;
        std::uint64_t last = n != 0 ? out[-1].key : 0;
        for (std::uint32_t j = 0; j < count; ++j) {
            if (qty[j] == 0) continue;  // an empty level is no level, as in set_level
            const std::uint64_t key = detail::key_of(price[j], mask);
            if (out == full || last >= key) [[unlikely]] {
                n = static_cast<std::uint32_t>(out - lv);
                return insert_levels(id, s, price + j, qty + j, count - j);
            }
            *out++ = {key, qty[j]};
            last = key;
        }
        n = static_cast<std::uint32_t>(out - lv);
        return 0;
    }
    // One snapshot level: false if it was dropped.
    bool append_level(std::uint32_t id, Side s, std::int64_t price, std::uint32_t qty) noexcept {
        return append_levels(id, s, &price, &qty, 1) == 0;
    }

private:
    static constexpr std::uint64_t kEmptyKey = std::numeric_limits<std::uint64_t>::max();

    [[nodiscard]] std::size_t slot(std::uint32_t id, Side s) const noexcept {
        return std::size_t{id} * 2 + static_cast<std::size_t>(s);
    }

    // Snapshot levels from one out of order, at an equal price or past a full
    // side: sorted inserts, kept out of append_levels' loop (inlined there,
    // their shifts took the loop's registers); returns how many were dropped.
    [[gnu::noinline]] std::uint32_t insert_levels(std::uint32_t id, Side s, const std::int64_t* price,
                                                  const std::uint32_t* qty, std::uint32_t count) noexcept {
        std::uint32_t dropped = 0;
        for (std::uint32_t j = 0; j < count; ++j)
            if (qty[j] != 0) dropped += set_level(id, s, price[j], qty[j]) == LevelResult::kDroppedDeep;
        return dropped;
    }

    // Number of kept levels with a smaller key than `key`: its sorted position.
    // Empty slots hold kEmptyKey, which is never smaller. Addressed through a
    // pointer: with `run + j` a uint32_t index, GCC recomputed each address.
    [[nodiscard]] std::uint32_t position(const detail::BookSlot* lv, std::uint64_t key) const noexcept {
        std::uint32_t pos = 0;
        const detail::BookSlot* run = lv;
        for (const detail::BookSlot* const end = lv + stride_; run != end; run += 8) {
            std::uint32_t smaller = 0;
            for (std::uint32_t j = 0; j < 8; ++j) smaller += run[j].key < key;
            pos += smaller;
            if (smaller < 8) break;
        }
        return pos;
    }

    [[gnu::always_inline]] void set_only_level(std::size_t k, std::uint64_t key, std::uint32_t qty) noexcept {
        detail::BookSlot* lv = slots_.data() + k * stride_;
        std::uint32_t& n = counts_[k];
        for (std::uint32_t j = 1; j < n; ++j) lv[j] = {kEmptyKey, 0};  // only if it had depth before
        lv[0] = qty != 0 ? detail::BookSlot{key, qty} : detail::BookSlot{kEmptyKey, 0};
        n = qty != 0;
    }

    // The count is read once: a loop bound re-read after each slot's store
    // (which may alias it) took nine instructions a slot.
    void clear_side(std::size_t k) noexcept {
        detail::BookSlot* lv = slots_.data() + k * stride_;
        const std::uint32_t n = counts_[k];
        for (std::uint32_t j = 0; j < n; ++j) lv[j] = {kEmptyKey, 0};
        counts_[k] = 0;
    }

    std::uint32_t depth_;
    std::uint32_t stride_;                   // depth rounded up to a multiple of 8
    std::vector<detail::BookSlot> slots_;    // [instrument][side][stride], kEmptyKey past the count
    std::vector<std::uint32_t> counts_;      // [instrument][side]
};

}  // namespace tickgate

namespace tickgate {
static_assert(SequencedBook<L2Book>);
}  // namespace tickgate
