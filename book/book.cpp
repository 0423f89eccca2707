#include "tickgate/book.hpp"

#include <algorithm>

namespace tickgate {

namespace {

// True when `a` belongs before `b` on side `s` (better price first).
inline bool better(Side s, std::int64_t a, std::int64_t b) noexcept {
    return s == Side::kBid ? a > b : a < b;
}

}  // namespace

BookStore::BookStore(std::uint32_t instruments, std::uint32_t depth)
    : depth_(depth),
      levels_(std::size_t{instruments} * 2 * depth),
      counts_(std::size_t{instruments} * 2, 0) {}

LevelResult BookStore::set_level(std::uint32_t id, Side s, std::int64_t price,
                                 std::uint32_t qty) noexcept {
    if (qty == 0) return delete_level(id, s, price);
    const std::size_t k = slot(id, s);
    Level* lv = levels_.data() + k * depth_;
    std::uint32_t& n = counts_[k];
    std::uint32_t i = 0;
    while (i < n && better(s, lv[i].price, price)) ++i;
    if (i < n && lv[i].price == price) {
        lv[i].qty = qty;
        return LevelResult::kReplaced;
    }
    if (i == depth_) return LevelResult::kDroppedDeep;
    const std::uint32_t keep = n < depth_ ? n : depth_ - 1;  // full: the worst level falls off
    std::move_backward(lv + i, lv + keep, lv + keep + 1);
    lv[i] = {price, qty};
    n = keep + 1;
    return LevelResult::kInserted;
}

LevelResult BookStore::delete_level(std::uint32_t id, Side s, std::int64_t price) noexcept {
    const std::size_t k = slot(id, s);
    Level* lv = levels_.data() + k * depth_;
    std::uint32_t& n = counts_[k];
    for (std::uint32_t i = 0; i < n; ++i) {
        if (lv[i].price == price) {
            std::move(lv + i + 1, lv + n, lv + i);
            --n;
            return LevelResult::kDeleted;
        }
        if (better(s, price, lv[i].price)) break;  // sorted: it cannot be further down
    }
    return LevelResult::kMissing;
}

void BookStore::set_top(std::uint32_t id, std::int64_t bid_px, std::uint32_t bid_qty,
                        std::int64_t ask_px, std::uint32_t ask_qty) noexcept {
    const std::size_t b = slot(id, Side::kBid);
    const std::size_t a = slot(id, Side::kAsk);
    levels_[b * depth_] = {bid_px, bid_qty};
    counts_[b] = bid_qty != 0 && depth_ > 0;
    levels_[a * depth_] = {ask_px, ask_qty};
    counts_[a] = ask_qty != 0 && depth_ > 0;
}

bool BookStore::append_level(std::uint32_t id, Side s, std::int64_t price, std::uint32_t qty) noexcept {
    if (qty == 0) return true;  // an empty level is no level, as in set_level
    const std::size_t k = slot(id, s);
    const std::uint32_t n = counts_[k];
    Level* lv = levels_.data() + k * depth_;
    if (n < depth_ && (n == 0 || better(s, lv[n - 1].price, price))) {
        lv[n] = {price, qty};
        counts_[k] = n + 1;
        return true;
    }
    // Out of order, equal price or full: fall back to a sorted insert.
    return set_level(id, s, price, qty) != LevelResult::kDroppedDeep;
}

}  // namespace tickgate
