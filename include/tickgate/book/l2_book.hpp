// The L2 book (QFB/1): per instrument, two sorted flat arrays of price
// levels keyed by price (bids descending, asks ascending), capacity fixed at
// start-up; a SequencedBook (book.hpp). No
// allocation after construction; not thread-safe (engine thread only).
//
// Layout for speed: both sides are stored as ascending *keys* — the ask price
// itself, the bid price bit-inverted (~p reverses the order and, unlike -p,
// cannot overflow) — so one code path serves both sides and the
// side never costs a mispredicted branch. Each side is a run of `stride`
// slots (depth rounded up to 8); slots past the last level hold the key
// INT64_MAX, which is never below any key. The insert position is then a
// branch-free count of smaller keys, eight at a time, stopping after the
// first run of eight that is not all smaller: one run for the near-the-touch
// updates that dominate real feeds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <vector>

#include "tickgate/book/book.hpp"
#include "tickgate/event.hpp"

namespace tickgate {

namespace detail {
struct BookSlot {
    std::int64_t key;  // ask: price; bid: ~price
    std::uint32_t qty;
};
// All-ones for bids, zero for asks: key = price ^ mask and price = key ^ mask.
inline constexpr std::int64_t side_mask(Side s) noexcept { return -static_cast<std::int64_t>(s == Side::kBid); }
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
        iterator(const detail::BookSlot* slot, std::int64_t mask) noexcept : slot_(slot), mask_(mask) {}
        Level operator*() const noexcept { return {slot_->key ^ mask_, slot_->qty}; }
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
        std::int64_t mask_ = 0;
    };

    BookSide(const detail::BookSlot* slots, std::uint32_t size, std::int64_t mask) noexcept
        : slots_(slots), size_(size), mask_(mask) {}
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] Level operator[](std::size_t i) const noexcept { return {slots_[i].key ^ mask_, slots_[i].qty}; }
    [[nodiscard]] iterator begin() const noexcept { return {slots_, mask_}; }
    [[nodiscard]] iterator end() const noexcept { return {slots_ + size_, mask_}; }

private:
    const detail::BookSlot* slots_;
    std::uint32_t size_;
    std::int64_t mask_;
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

    // Inserts or replaces the level at `price`; qty 0 deletes it.
    LevelResult set_level(std::uint32_t id, Side s, std::int64_t price, std::uint32_t qty) noexcept {
        if (qty == 0) return delete_level(id, s, price);
        const std::size_t k = slot(id, s);
        detail::BookSlot* lv = slots_.data() + k * stride_;
        std::uint32_t& n = counts_[k];
        const std::int64_t key = price ^ detail::side_mask(s);
        const std::uint32_t i = position(lv, key);
        if (i < n && lv[i].key == key) {
            lv[i].qty = qty;
            return LevelResult::kReplaced;
        }
        if (i >= depth_) return LevelResult::kDroppedDeep;
        const std::uint32_t keep = n < depth_ ? n : depth_ - 1;  // full: the worst level falls off
        for (std::uint32_t j = keep; j > i; --j) lv[j] = lv[j - 1];
        lv[i] = {key, qty};
        n = keep + 1;
        return LevelResult::kInserted;
    }

    LevelResult delete_level(std::uint32_t id, Side s, std::int64_t price) noexcept {
        const std::size_t k = slot(id, s);
        detail::BookSlot* lv = slots_.data() + k * stride_;
        std::uint32_t& n = counts_[k];
        const std::int64_t key = price ^ detail::side_mask(s);
        const std::uint32_t i = position(lv, key);
        if (i >= n || lv[i].key != key) return LevelResult::kMissing;
        for (std::uint32_t j = i + 1; j < n; ++j) lv[j - 1] = lv[j];
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
        set_only_level(slot(id, Side::kBid), ~bid_px, bid_qty);
        set_only_level(slot(id, Side::kAsk), ask_px, ask_qty);
    }

    // Appends `count` snapshot levels of one side (best-first order expected;
    // out-of-order input is put in order); returns how many were dropped
    // (beyond depth). The side's count and the book's shape stay in registers
    // over the batch: a call per level reloaded them after every store.
    std::uint32_t append_levels(std::uint32_t id, Side s, const std::int64_t* price, const std::uint32_t* qty,
                                std::uint32_t count) noexcept {
        const std::size_t k = slot(id, s);
        detail::BookSlot* const lv = slots_.data() + k * stride_;
        const std::int64_t mask = detail::side_mask(s);
        const std::uint32_t depth = depth_;
        std::uint32_t n = counts_[k];
        std::uint32_t dropped = 0;
        for (std::uint32_t j = 0; j < count; ++j) {
            if (qty[j] == 0) continue;  // an empty level is no level, as in set_level
            const std::int64_t key = price[j] ^ mask;
            if (n < depth && (n == 0 || lv[n - 1].key < key)) [[likely]] {
                lv[n++] = {key, qty[j]};
                continue;
            }
            counts_[k] = n;
            dropped += !insert_level(id, s, price[j], qty[j]);
            n = counts_[k];
        }
        counts_[k] = n;
        return dropped;
    }
    // One snapshot level: false if it was dropped.
    bool append_level(std::uint32_t id, Side s, std::int64_t price, std::uint32_t qty) noexcept {
        return append_levels(id, s, &price, &qty, 1) == 0;
    }

private:
    static constexpr std::int64_t kEmptyKey = std::numeric_limits<std::int64_t>::max();

    [[nodiscard]] std::size_t slot(std::uint32_t id, Side s) const noexcept {
        return std::size_t{id} * 2 + static_cast<std::size_t>(s);
    }

    // A snapshot level out of order, at an equal price or past a full side: a
    // sorted insert, kept out of append_levels' loop (inlined there, its
    // shifts took the loop's registers); false if dropped.
    [[gnu::noinline]] bool insert_level(std::uint32_t id, Side s, std::int64_t price, std::uint32_t qty) noexcept {
        return set_level(id, s, price, qty) != LevelResult::kDroppedDeep;
    }

    // Number of kept levels with a smaller key than `key`: its sorted position.
    // Empty slots hold kEmptyKey, which is never smaller.
    [[nodiscard]] std::uint32_t position(const detail::BookSlot* lv, std::int64_t key) const noexcept {
        std::uint32_t pos = 0;
        for (std::uint32_t run = 0; run < stride_; run += 8) {
            std::uint32_t smaller = 0;
            for (std::uint32_t j = 0; j < 8; ++j) smaller += lv[run + j].key < key;
            pos += smaller;
            if (smaller < 8) break;
        }
        return pos;
    }

    [[gnu::always_inline]] void set_only_level(std::size_t k, std::int64_t key, std::uint32_t qty) noexcept {
        detail::BookSlot* lv = slots_.data() + k * stride_;
        std::uint32_t& n = counts_[k];
        for (std::uint32_t j = 1; j < n; ++j) lv[j] = {kEmptyKey, 0};  // only if it had depth before
        lv[0] = qty != 0 ? detail::BookSlot{key, qty} : detail::BookSlot{kEmptyKey, 0};
        n = qty != 0;
    }

    void clear_side(std::size_t k) noexcept {
        detail::BookSlot* lv = slots_.data() + k * stride_;
        for (std::uint32_t j = 0; j < counts_[k]; ++j) lv[j] = {kEmptyKey, 0};
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
