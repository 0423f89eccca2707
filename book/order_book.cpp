#include "tickgate/book/order_book.hpp"

#include <algorithm>
#include <bit>
#include <random>
#include <stdexcept>

namespace tickgate {

namespace {
std::size_t table_size(std::uint32_t max_orders) noexcept { return std::size_t{max_orders} + max_orders / 4 + 1; }
std::size_t arena_size(std::uint32_t max_levels) noexcept { return std::size_t{max_levels} * 2; }
int class_of(std::uint32_t cap) noexcept { return std::countr_zero(cap); }
}  // namespace

OrderBook::OrderBook(std::uint32_t max_instruments, std::uint32_t max_orders, std::uint32_t max_levels,
                     unsigned scope_bits)
    : max_orders_(max_orders), sweep_at_(std::size_t{max_orders} + max_orders / 8),
      min_sweep_(std::max<std::size_t>(1, table_size(max_orders) / 32)), scope_bits_(scope_bits),
      // Seeded per book: references chosen to collide under a known hash cannot be prepared.
      seed_((std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()) {
    if (max_instruments == 0 || max_orders == 0 || max_levels == 0)
        throw std::invalid_argument("order book: capacities must be positive");
    table_ = ZeroedArray<Entry>(table_size(max_orders));  // an all-zero Entry is an empty slot
    orders_of_.assign(max_instruments, 0);
    gen_.assign(max_instruments, 0);
    sides_.assign(std::size_t{max_instruments} * 2, SideLevels{});
    arena_ = ZeroedArray<OrderLevel>(arena_size(max_levels));
    for (int c = 0; c < kClasses; ++c) {
        const std::size_t block = std::size_t{1} << c;
        if (block >= kMinBlock && block <= arena_.size()) free_blocks_[static_cast<std::size_t>(c)].reserve(arena_.size() / block);
    }
}

std::size_t OrderBook::bytes_for(std::uint32_t max_instruments, std::uint32_t max_orders,
                                 std::uint32_t max_levels) noexcept {
    const std::size_t arena = arena_size(max_levels);
    std::size_t free_lists = 0;
    for (std::size_t block = kMinBlock; block <= arena; block *= 2) free_lists += arena / block * sizeof(std::uint32_t);
    return table_size(max_orders) * sizeof(Entry) + resident_bytes_for(max_instruments) + arena * sizeof(OrderLevel) +
           free_lists;
}

OrderBook::Entry* OrderBook::find(std::uint32_t id, std::uint64_t ref) noexcept {
    const std::uint32_t scope = scope_of(id);
    for (std::size_t i = home(scope, ref);; i = next(i)) {
        ++probes_;
        Entry& e = table_[i];
        if (!e.used) return nullptr;
        if (e.ref == ref && scope_of(e.id) == scope && live(e)) return &e;
    }
}

void OrderBook::shift_into(std::size_t hole) noexcept {
    // Backward-shift deletion: move later entries of the probe run into the hole.
    for (std::size_t i = next(hole);; i = next(i)) {
        ++probes_;
        Entry& c = table_[i];
        if (!c.used) break;
        const std::size_t h = home(scope_of(c.id), c.ref);
        // c may move into `hole` only if its home is not in (hole, i] (cyclically).
        const bool home_between = hole <= i ? (h > hole && h <= i) : (h > hole || h <= i);
        if (home_between) continue;
        table_[hole] = c;
        hole = i;
    }
    table_[hole].used = 0;
}

void OrderBook::erase(Entry* e) noexcept {
    --orders_of_[e->id];
    --size_;
    shift_into(static_cast<std::size_t>(e - table_.data()));
}

void OrderBook::sweep() noexcept {
    for (std::size_t i = 0; i < table_.size();) {
        ++probes_;
        if (table_[i].used && !live(table_[i])) {
            shift_into(i);  // shifts a later entry into i: look at i again
            --stale_;
            continue;
        }
        ++i;
    }
}

void OrderBook::clear(std::uint32_t id) noexcept {
    // Without live orders there is nothing to retire: the generation moves
    // only for an instrument that had orders, so it wraps (and a wrap, which
    // would revive entries stale since, sweeps them first) only after
    // 65,535 rounds of adds and clears of that instrument.
    if (orders_of_[id] != 0) {
        if (gen_[id] == UINT16_MAX) sweep();
        ++gen_[id];
        stale_ += orders_of_[id];
        size_ -= orders_of_[id];
        orders_of_[id] = 0;
    }
    release(sides_[std::size_t{id} * 2]);
    release(sides_[std::size_t{id} * 2 + 1]);
}

OrderResult OrderBook::add(std::uint32_t id, std::uint64_t ref, Side side, std::uint32_t shares,
                           std::uint32_t price) noexcept {
    if (Entry* old = find(id, ref)) {  // a live reference reused: that order is replaced
        level_sub(old->id, static_cast<Side>(old->side), old->price, old->shares, true);
        erase(old);
    }
    // An order of no shares would be gone at once (as an execution to 0):
    // none is kept, so no level ever shows 0 shares.
    if (shares == 0) return OrderResult::kRemoved;
    if (size_ >= max_orders_) return OrderResult::kStoreFull;
    if (!level_add(id, side, price, shares)) return OrderResult::kStoreFull;
    // Stale entries lengthen probe runs like live ones: swept once the store
    // is as full as live orders alone can make it and a sweep frees at
    // least 1/32 of it (so its cost is at most 32 slots per freed entry,
    // each an earlier add); the hard limit keeps free slots, so every run ends.
    if ((stale_ >= min_sweep_ && size_ + stale_ >= max_orders_) || size_ + stale_ >= sweep_at_) sweep();
    std::size_t i = home(scope_of(id), ref);
    for (;; i = next(i)) {  // the first free slot, or a stale one (occupied either way: runs stay intact)
        ++probes_;
        if (!table_[i].used) break;
        if (!live(table_[i])) {
            --stale_;
            break;
        }
    }
    table_[i] = {ref, price, shares, id, gen_[id], static_cast<std::uint8_t>(side), 1};
    ++size_;
    ++orders_of_[id];
    return OrderResult::kApplied;
}

OrderResult OrderBook::reduce(std::uint32_t id, std::uint64_t ref, std::uint32_t shares) noexcept {
    Entry* e = find(id, ref);
    if (e == nullptr || e->id != id) return OrderResult::kUnknownOrder;
    const Side s = static_cast<Side>(e->side);
    if (shares < e->shares) {
        level_sub(e->id, s, e->price, shares, false);
        e->shares -= shares;
        return OrderResult::kApplied;
    }
    const bool over = shares > e->shares;
    level_sub(e->id, s, e->price, e->shares, true);
    erase(e);
    return over ? OrderResult::kOverExecution : OrderResult::kRemoved;
}

OrderResult OrderBook::remove(std::uint32_t id, std::uint64_t ref) noexcept {
    Entry* e = find(id, ref);
    if (e == nullptr || e->id != id) return OrderResult::kUnknownOrder;
    level_sub(e->id, static_cast<Side>(e->side), e->price, e->shares, true);
    erase(e);
    return OrderResult::kRemoved;
}

OrderResult OrderBook::replace(std::uint32_t id, std::uint64_t ref, std::uint64_t new_ref, std::uint32_t shares,
                               std::uint32_t price) noexcept {
    Entry* e = find(id, ref);
    if (e == nullptr || e->id != id) return OrderResult::kUnknownOrder;
    const Side side = static_cast<Side>(e->side);
    level_sub(e->id, side, e->price, e->shares, true);
    erase(e);
    return add(id, new_ref, side, shares, price);
}

bool OrderBook::level_add(std::uint32_t id, Side s, std::uint32_t price, std::uint32_t shares) noexcept {
    SideLevels& sl = sides_[std::size_t{id} * 2 + static_cast<std::size_t>(s)];
    const std::int64_t key = key_of(s, price);
    OrderLevel* lv = arena_.data() + sl.offset;
    // Ascending keys, best last: the first level whose key is above `key`.
    std::uint32_t at = static_cast<std::uint32_t>(
        std::upper_bound(lv, lv + sl.size, key, [s](std::int64_t k, const OrderLevel& l) {
            return k < key_of(s, static_cast<std::uint32_t>(l.price));
        }) - lv);
    if (at > 0 && lv[at - 1].price == price) {
        lv[at - 1].shares += shares;
        ++lv[at - 1].orders;
        return true;
    }
    if (sl.size == sl.cap) {
        if (!grow(sl)) return false;
        lv = arena_.data() + sl.offset;
    }
    std::copy_backward(lv + at, lv + sl.size, lv + sl.size + 1);
    lv[at] = {price, shares, 1};
    ++sl.size;
    return true;
}

void OrderBook::level_sub(std::uint32_t id, Side s, std::uint32_t price, std::uint32_t shares, bool order_gone) noexcept {
    SideLevels& sl = sides_[std::size_t{id} * 2 + static_cast<std::size_t>(s)];
    OrderLevel* lv = arena_.data() + sl.offset;
    const std::int64_t key = key_of(s, price);
    const std::uint32_t at = static_cast<std::uint32_t>(
        std::upper_bound(lv, lv + sl.size, key, [s](std::int64_t k, const OrderLevel& l) {
            return k < key_of(s, static_cast<std::uint32_t>(l.price));
        }) - lv);
    if (at == 0 || lv[at - 1].price != price) return;  // not reached: every live order has its level
    OrderLevel& l = lv[at - 1];
    l.shares -= shares;
    if (order_gone) --l.orders;
    if (l.orders == 0) {
        std::copy(lv + at, lv + sl.size, lv + at - 1);
        --sl.size;
    }
}

bool OrderBook::grow(SideLevels& sl) noexcept {
    const std::uint32_t cap = sl.cap == 0 ? kMinBlock : sl.cap * 2;
    if (cap > arena_.size()) return false;
    auto& fl = free_blocks_[static_cast<std::size_t>(class_of(cap))];
    std::size_t offset;
    if (!fl.empty()) {
        offset = fl.back();
        fl.pop_back();
    } else if (arena_.size() - arena_used_ >= cap) {
        offset = arena_used_;
        arena_used_ += cap;
    } else {
        return false;
    }
    std::copy(arena_.data() + sl.offset, arena_.data() + sl.offset + sl.size, arena_.data() + offset);
    if (sl.cap != 0) free_blocks_[static_cast<std::size_t>(class_of(sl.cap))].push_back(sl.offset);
    sl.offset = static_cast<std::uint32_t>(offset);
    sl.cap = cap;
    return true;
}

void OrderBook::release(SideLevels& sl) noexcept {
    if (sl.cap != 0) free_blocks_[static_cast<std::size_t>(class_of(sl.cap))].push_back(sl.offset);
    sl = SideLevels{};
}

}  // namespace tickgate
