#include "tickgate/book/order_book.hpp"

#include <algorithm>
#include <bit>
#include <random>
#include <stdexcept>

namespace tickgate {

namespace {
std::size_t table_size(std::uint32_t max_orders) noexcept { return std::size_t{max_orders} + max_orders / 4 + 1; }
std::size_t arena_size(std::uint32_t max_levels) noexcept { return std::size_t{max_levels} * 2; }
std::size_t pool_size(std::uint32_t max_levels) noexcept { return std::size_t{max_levels} + 1; }  // and nil
// The window: as many slots as orders, up to 2^18 (6 MiB: the newest
// orders of a busy day stay put until long after most are gone, and the
// slots a scope's newest orders use stay a few cache lines).
constexpr std::size_t kMaxWindow = std::size_t{1} << 18;
std::size_t window_size(std::uint32_t max_orders) noexcept { return std::min(std::bit_ceil(std::size_t{max_orders}), kMaxWindow); }
int class_of(std::uint32_t cap) noexcept { return std::countr_zero(cap); }
}  // namespace

std::uint32_t OrderBook::flat_upper_bound(const OrderLevel* lv, std::uint32_t size, Side s, std::int64_t key) noexcept {
    // Most orders rest at or near the touch: the best three levels first
    // (one or two cache lines), then bisection of the rest. With branches:
    // the core runs ahead into a predicted half's load while the last one is
    // still in flight, where a branch-free (cmov) bisection waits for each
    // load in turn; with the level arrays out of L1 that made the uniform
    // ITCH pipeline 1.5 x slower (bench/README.md, "Flat-side search").
    std::uint32_t at = size;
    for (int k = 0; k < 3; ++k) {
        if (at == 0 || key_of(s, lv[at - 1].price) <= key) return at;
        --at;
    }
    return static_cast<std::uint32_t>(
        std::upper_bound(lv, lv + at, key, [s](std::int64_t k, const OrderLevel& l) { return k < key_of(s, l.price); }) - lv);
}

OrderBook::OrderBook(std::uint32_t max_instruments, std::uint32_t max_orders, std::uint32_t max_levels,
                     unsigned scope_bits, std::uint32_t tick)
    : window_mask_(window_size(max_orders) - 1), max_orders_(max_orders), sweep_at_(std::size_t{max_orders} + max_orders / 8),
      min_sweep_(std::max<std::size_t>(1, table_size(max_orders) / 32)), scope_bits_(scope_bits),
      // Seeded per book: references chosen to collide under a known hash cannot be prepared.
      seed_((std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()) {
    if (max_instruments == 0 || max_orders == 0 || max_levels == 0)
        throw std::invalid_argument("order book: capacities must be positive");
    if (tick == 0 || tick > UINT16_MAX) throw std::invalid_argument("order book: the tick must be 1 .. 65535");
    tick_ = tick;
    tick_magic_ = ((std::uint64_t{1} << 48) + tick - 1) / tick;
    window_ = ZeroedArray<Entry>(window_size(max_orders));  // an all-zero Entry is an empty slot
    table_ = ZeroedArray<Entry>(table_size(max_orders));
    // Both are read at random (the table by hash, the window by reference,
    // sparse when few stocks are booked): huge pages spare a TLB miss per
    // order message (measured: the 500-of-5,000-subscribed flow 0.62 x the time).
    window_.advise_huge_pages();
    table_.advise_huge_pages();
    orders_of_.assign(max_instruments, 0);
    tabled_of_.assign(max_instruments, 0);
    scopes_.assign(scopes_for(max_instruments, scope_bits), ScopeRefs{});
    gen_.assign(max_instruments, 0);
    sides_.assign(std::size_t{max_instruments} * 2, SideLevels{});
    arena_ = ZeroedArray<OrderLevel>(arena_size(max_levels));
    // Levels too are read at random, a stock at a time: huge pages (a
    // 2 MiB-aligned interior; resident 2 MiB at a time as levels arrive).
    arena_.advise_huge_pages();
    for (std::uint32_t block = kMinBlock; block <= kFlatLevels; block *= 2)
        free_blocks_[static_cast<std::size_t>(class_of(block))].reserve(arena_.size() / block);
    nodes_ = ZeroedArray<LevelNode>(pool_size(max_levels));  // an all-zero node is nil: black, no links
    nodes_.advise_huge_pages();
    const std::uint32_t ladders = ladders_for(max_instruments, max_levels);
    ladders_ = ZeroedArray<OrderLevel>(std::size_t{ladders} * kLadderSlots);
    ladders_.advise_huge_pages();
    ladder_bits_ = ZeroedArray<std::uint64_t>(ladders);
    for (const std::uint32_t words : kLadderWords) free_ladders_[static_cast<std::size_t>(ladder_class(words))].reserve(ladders / words);
}

std::size_t OrderBook::ladder_bytes(std::uint32_t ladders) noexcept {
    std::size_t free_lists = 0;
    for (const std::uint32_t words : kLadderWords) free_lists += ladders / words * sizeof(std::uint32_t);
    return std::size_t{ladders} * (kLadderSlots * sizeof(OrderLevel) + sizeof(std::uint64_t)) + free_lists;
}

std::size_t OrderBook::bytes_for(std::uint32_t max_instruments, std::uint32_t max_orders, std::uint32_t max_levels,
                                 unsigned scope_bits) noexcept {
    const std::size_t arena = arena_size(max_levels);
    std::size_t free_lists = 0;
    for (std::size_t block = kMinBlock; block <= kFlatLevels; block *= 2) free_lists += arena / block * sizeof(std::uint32_t);
    return (window_size(max_orders) + table_size(max_orders)) * sizeof(Entry) + resident_bytes_for(max_instruments, scope_bits) + arena * sizeof(OrderLevel) +
           free_lists + pool_size(max_levels) * sizeof(LevelNode) +
           ladder_bytes(ladders_for(max_instruments, max_levels));
}

OrderBook::Entry* OrderBook::find(std::uint32_t id, std::uint64_t ref) noexcept {
    const std::uint32_t scope = scope_of(id);
    // An order is in its window slot, the table or the stash, never two: the
    // table first for those table_first() names, so a lookup of those costs
    // no miss on a cold window slot.
    const bool old = table_first(scopes_[scope], ref);
    if (old && in_table_ != 0)
        if (Entry* e = table_find(scope, ref)) return e;
    ++probes_;
    Entry& w = slot(scope, ref);
    if (w.used && w.ref == ref && scope_of(w.id) == scope && live(w)) return &w;
    if (!old && in_table_ != 0)
        if (Entry* e = table_find(scope, ref)) return e;
    // Most lookups end before; a reused reference (a new session's) or an
    // unknown one gets here, and scans 8 entries once orders have moved out.
    if (stash_used_ != 0)
        for (Entry& e : stash_)
            if (e.used && e.ref == ref && scope_of(e.id) == scope && live(e)) return &e;
    return nullptr;
}

void OrderBook::stash(const Entry& e, std::size_t home) noexcept {
    Entry& oldest = stash_[stash_next_];
    if (oldest.used && live(oldest)) table_insert(oldest, stash_home_[stash_next_]);
    if (!oldest.used) ++stash_used_;
    __builtin_prefetch(&table_[home], 1);
    oldest = e;
    stash_home_[stash_next_] = home;
    stash_next_ = stash_next_ + 1 == kStash ? 0 : stash_next_ + 1;
}

void OrderBook::prefetch(std::uint32_t id, std::uint64_t ref, const Side* add_side, std::uint32_t add_price) const noexcept {
    const std::uint32_t scope = scope_of(id);
    const ScopeRefs& sr = scopes_[scope];
    // Where add() (a sparse scope: the table) or find() looks first.
    const bool table = add_side != nullptr ? sparse(sr) : table_first(sr, ref) && in_table_ != 0;
    __builtin_prefetch(table ? &table_[home(scope, ref)] : &window_[slot_index(scope, ref)], 1);
    // The level's ladder slot, where the side is a ladder: for an add from
    // its price; for a change from its order's, if the order is in its
    // window slot (a table lookup here would wait for the probe run).
    Side s{};
    std::uint32_t price = add_price;
    if (add_side != nullptr) {
        s = *add_side;
    } else {
        if (table) return;
        const Entry& w = window_[slot_index(scope, ref)];
        if (w.used != kPrice || w.ref != ref || w.id != id || !live(w)) return;
        s = static_cast<Side>(w.side);
        price = w.at;
    }
    const SideLevels& sl = levels_of(id, s);
    unsigned slot = 0;
    if (sl.ladder && ladder_slot(sl, price, slot)) __builtin_prefetch(&ladders_[sl.offset + slot], 1);
}

OrderBook::Entry* OrderBook::table_find(std::uint32_t scope, std::uint64_t ref) noexcept {
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
    if (in_window(e)) {
        e->used = 0;
        return;
    }
    if (in_stash(e)) {
        e->used = 0;
        --stash_used_;
        return;
    }
    --tabled_of_[e->id];
    --in_table_;
    shift_into(static_cast<std::size_t>(e - table_.data()));
}

void OrderBook::table_insert(const Entry& e, std::size_t from) noexcept {
    // Stale entries lengthen probe runs like live ones: swept once the table
    // is as full as live orders alone can make it and a sweep frees at
    // least 1/32 of it (so its cost is at most 32 slots per freed entry,
    // each an earlier insert); the hard limit keeps free slots, so every run ends.
    if ((stale_ >= min_sweep_ && in_table_ + stale_ >= max_orders_) || in_table_ + stale_ >= sweep_at_) sweep();
    std::size_t i = from;
    for (;; i = next(i)) {  // the first free slot, or a stale one (occupied either way: runs stay intact)
        ++probes_;
        if (!table_[i].used) break;
        if (!live(table_[i])) {
            --stale_;
            break;
        }
    }
    table_[i] = e;
    ++in_table_;
    ++tabled_of_[e.id];
}

void OrderBook::sweep_window(std::uint32_t retired) noexcept {
    for (Entry& e : stash_)
        if (e.used && (!live(e) || e.id == retired)) {
            e.used = 0;
            --stash_used_;
        }
    for (Entry& e : window_) {
        ++probes_;
        if (e.used && (!live(e) || e.id == retired)) e.used = 0;
    }
}

void OrderBook::sweep(std::uint32_t retired) noexcept {
    for (std::size_t i = 0; i < table_.size();) {
        ++probes_;
        if (table_[i].used && (!live(table_[i]) || table_[i].id == retired)) {
            shift_into(i);  // shifts a later entry into i: look at i again
            --stale_;
            continue;
        }
        ++i;
    }
}

void OrderBook::clear(std::uint32_t id) noexcept {
    // Without live orders there is nothing to retire: the generation moves
    // only for an instrument that had orders, so it wraps only after 65,535
    // rounds of adds and clears of that instrument. A wrap would revive the
    // entries of a generation to come: every entry of the instrument, stale
    // or of this generation (counted stale from here), is swept out first.
    if (orders_of_[id] != 0) {
        stale_ += tabled_of_[id];
        in_table_ -= tabled_of_[id];
        size_ -= orders_of_[id];
        orders_of_[id] = 0;
        tabled_of_[id] = 0;
        if (gen_[id] == UINT16_MAX) {
            sweep(id);
            sweep_window(id);
        }
        ++gen_[id];
    }
    for (const Side s : {Side::kBid, Side::kAsk}) {  // a block or a whole tree back, O(1)
        SideLevels& sl = levels_of(id, s);
        if (sl.root != 0) {
            give_back(sl.root);
            nodes_in_use_ -= sl.size;
        }
        release_block(sl);
        release_ladder(sl);
        sl = SideLevels{};
    }
}

OrderResult OrderBook::add(std::uint32_t id, std::uint64_t ref, Side side, std::uint32_t shares,
                           std::uint32_t price) noexcept {
    const std::uint32_t scope = scope_of(id);
    ScopeRefs& sr = scopes_[scope];
    // Where this add goes, fetched while the level work runs: a cold line
    // when few of the channel's stocks are booked (its window slot, dense
    // scopes: 500 of 5,000 booked 0.97 x; its table home, sparse ones).
    const bool to_table = sparse(sr);
    Entry* const w = to_table ? nullptr : &slot(scope, ref);
    const std::size_t h = to_table ? home(scope, ref) : 0;
    __builtin_prefetch(to_table ? &table_[h] : w, 1);
    if (ref > sr.top) {  // above every reference of the scope: nothing to replace
        sr.gap16 = sr.gap16 - sr.gap16 / 16 + static_cast<std::uint32_t>(std::min<std::uint64_t>(ref - sr.top, 64));
        sr.top = ref;
    } else if (Entry* old = find(id, ref)) {  // a live reference reused: that order is replaced
        level_sub(*old, old->shares, true);
        erase(old);
    }
    // An order of no shares would be gone at once (as an execution to 0):
    // none is kept, so no level ever shows 0 shares.
    if (shares == 0) return OrderResult::kRemoved;
    if (size_ >= max_orders_) return OrderResult::kStoreFull;
    const std::uint32_t node = level_add(id, side, price, shares);
    if (node == kNoRoom) return OrderResult::kStoreFull;
    const Entry e{ref, node != 0 ? node : price, shares, id, gen_[id], static_cast<std::uint8_t>(side), node != 0 ? kNode : kPrice};
    ++probes_;
    if (to_table) {
        table_insert(e, h);
    } else {
        // The newest reference takes its window slot; an order still live there
        // (an older reference, or one chosen to collide) moves to the table, by the stash.
        if (w->used && live(*w)) stash(*w, home(scope_of(w->id), w->ref));
        *w = e;
    }
    ++size_;
    ++orders_of_[id];
    return OrderResult::kApplied;
}

OrderResult OrderBook::reduce(std::uint32_t id, std::uint64_t ref, std::uint32_t shares) noexcept {
    Entry* e = find(id, ref);
    if (e == nullptr || e->id != id) return OrderResult::kUnknownOrder;
    if (shares < e->shares) {
        level_sub(*e, shares, false);
        e->shares -= shares;
        return OrderResult::kApplied;
    }
    const bool over = shares > e->shares;
    level_sub(*e, e->shares, true);
    erase(e);
    return over ? OrderResult::kOverExecution : OrderResult::kRemoved;
}

OrderResult OrderBook::remove(std::uint32_t id, std::uint64_t ref) noexcept {
    Entry* e = find(id, ref);
    if (e == nullptr || e->id != id) return OrderResult::kUnknownOrder;
    level_sub(*e, e->shares, true);
    erase(e);
    return OrderResult::kRemoved;
}

OrderResult OrderBook::replace(std::uint32_t id, std::uint64_t ref, std::uint64_t new_ref, std::uint32_t shares,
                               std::uint32_t price) noexcept {
    Entry* e = find(id, ref);
    if (e == nullptr || e->id != id) return OrderResult::kUnknownOrder;
    const Side side = static_cast<Side>(e->side);
    level_sub(*e, e->shares, true);
    erase(e);
    return add(id, new_ref, side, shares, price);
}

std::uint32_t OrderBook::take_node() noexcept {
    if (forest_ != 0) {  // the first freed tree's root; its subtrees join the forest
        const std::uint32_t x = forest_;
        std::uint32_t head = nodes_[x].parent;
        for (const std::uint32_t c : {nodes_[x].right, nodes_[x].left}) {
            if (c == 0) continue;
            nodes_[c].parent = head;
            head = c;
        }
        forest_ = head;
        return x;
    }
    return fresh_ < nodes_.size() ? fresh_++ : 0;
}

void OrderBook::give_back(std::uint32_t root) noexcept {
    if (root == 0) return;
    nodes_[root].parent = forest_;
    forest_ = root;
}

bool OrderBook::take_ladder(std::uint32_t words, std::uint32_t& offset) noexcept {
    auto& fl = free_ladders_[static_cast<std::size_t>(ladder_class(words))];
    if (!fl.empty()) {
        offset = fl.back();
        fl.pop_back();
    } else if (fresh_ladder_ + words <= ladder_bits_.size()) {
        offset = fresh_ladder_ * kLadderSlots;
        fresh_ladder_ += words;
    } else {
        return false;
    }
    return true;
}

bool OrderBook::start_ladder(SideLevels& sl, std::uint32_t price) noexcept {
    std::uint32_t offset = 0;
    if (!take_ladder(1, offset)) return false;
    release_block(sl);
    sl.ladder = 1;
    sl.offset = offset;
    // The first price in the middle: the touch moves either way.
    sl.base = price - std::min(price / tick_, kLadderSlots / 2) * tick_;
    sl.occupied = 0;
    return true;
}

void OrderBook::release_ladder(SideLevels& sl) noexcept {
    if (sl.ladder != 0) {
        if (sl.ladder > 1) std::fill_n(ladder_words(sl), sl.ladder, std::uint64_t{0});  // a cleared side's levels
        free_ladders_[static_cast<std::size_t>(ladder_class(sl.ladder))].push_back(sl.offset);
    }
    sl.ladder = 0;
    sl.offset = 0;
    sl.occupied = 0;
}

bool OrderBook::centred_base(std::uint32_t lo, std::uint32_t hi, std::uint32_t slots, std::uint32_t& base) const noexcept {
    const std::uint32_t span = (hi - lo) / tick_ + 1;
    if (span > slots) return false;
    // Centred on the prices: room to move both ways again.
    base = lo - std::min(lo / tick_, (slots - span) / 2) * tick_;
    return true;
}

bool OrderBook::make_room(SideLevels& sl, std::uint32_t price) noexcept {
    if (price % tick_ != sl.base % tick_ || sl.size == 0) return false;  // off the grid: no base puts it on a slot
    const std::uint32_t lo = std::min(price, sl.base + ladder_end(sl, false) * tick_);
    const std::uint32_t hi = std::max(price, sl.base + ladder_end(sl, true) * tick_);
    std::uint32_t base = 0;
    OrderLevel* const from = ladder_levels(sl);
    // Moved along the grid, in place: a one-word ladder moves at most 64
    // levels; a larger one only once as many levels were added since it
    // last moved (`best`), each paying for a level moved, so no sequence of
    // prices makes its moves cost more than a level a message.
    if (centred_base(lo, hi, sl.ladder * kLadderSlots, base) && (sl.ladder == 1 || sl.best >= sl.size)) {
        sl.best = 0;
        if (base == sl.base) return true;
        // Levels moving up go highest first, down lowest first: none is overwritten before it moves.
        const bool up = base < sl.base;
        const std::uint32_t shift = (up ? sl.base - base : base - sl.base) / tick_;
        probes_ += sl.size;  // levels moved
        if (sl.ladder == 1) {
            for_each_ladder_slot(sl, up, [&](unsigned i) { from[up ? i + shift : i - shift] = from[i]; });
            sl.occupied = up ? sl.occupied << shift : sl.occupied >> shift;
        } else {
            std::array<std::uint64_t, kMaxLadderWords> moved{};
            for_each_ladder_slot(sl, up, [&](unsigned i) {
                const unsigned to = up ? i + shift : i - shift;
                from[to] = from[i];
                moved[to / 64] |= std::uint64_t{1} << (to % 64);
            });
            sl.occupied = 0;
            for (unsigned w = 0; w < sl.ladder; ++w) {
                ladder_words(sl)[w] = moved[w];
                if (moved[w] != 0) sl.occupied |= std::uint64_t{1} << w;
            }
        }
        sl.base = base;
        return true;
    }
    // A larger ladder (the smallest that spans the prices), the levels copied into it.
    for (const std::uint32_t words : kLadderWords) {
        std::uint32_t offset = 0;
        if (words <= sl.ladder || !centred_base(lo, hi, words * kLadderSlots, base)) continue;
        if (!take_ladder(words, offset)) return false;
        SideLevels wider = sl;
        wider.ladder = static_cast<std::uint8_t>(words);
        wider.offset = offset;
        wider.base = base;
        wider.occupied = 0;
        wider.best = 0;
        OrderLevel* const to = ladder_levels(wider);
        probes_ += sl.size;  // levels moved
        for_each_ladder_slot(sl, false, [&](unsigned i) {
            const unsigned at = (sl.base + i * tick_ - base) / tick_;
            to[at] = from[i];
            ladder_set(wider, at);
        });
        release_ladder(sl);
        sl = wider;
        return true;
    }
    return false;
}

bool OrderBook::ladder_to_flat(SideLevels& sl, Side s) noexcept {
    const OrderLevel* from = ladder_levels(sl);
    const std::uint32_t n = sl.size;
    // Keys ascend towards the best: a bid's slots upwards, an ask's downwards.
    const bool down = s == Side::kAsk;
    sl.best = 0;  // a ladder's count of added levels; a tree's best node from here
    if (n > kFlatLevels) {  // a tree, each level the new last node
        if (!pool_has_room(n)) return false;
        const SideLevels ladder = sl;  // its slots read while the tree grows (the tree changes no ladder field)
        sl.size = 0;
        for_each_ladder_slot(ladder, down, [&](unsigned i) { append_node(sl, s, from[i]); });
        release_ladder(sl);
    } else {
        std::size_t offset;
        const std::uint32_t cap = std::max(kMinBlock, std::bit_ceil(n));
        if (!take_block(cap, offset)) return false;
        OrderLevel* to = arena_.data() + offset;
        for_each_ladder_slot(sl, down, [&](unsigned i) { *to++ = from[i]; });
        release_ladder(sl);
        sl.offset = static_cast<std::uint32_t>(offset);
        sl.cap = static_cast<std::uint16_t>(cap);
    }
    probes_ += n;
    sl.wide = true;
    return true;
}

std::uint32_t OrderBook::level_add(std::uint32_t id, Side s, std::uint32_t price, std::uint32_t shares) noexcept {
    SideLevels& sl = levels_of(id, s);
    // An empty side starts a ladder (if one is free); a ladder takes every
    // price of its grid its 64 slots can span, moving along it as the
    // levels do; a price it cannot take makes the side flat, and `wide`:
    // flat for good (until cleared), for a side whose prices spread wider
    // than a ladder once will again, and each start and giving way copies
    // its levels (the day-like flow: 1.2 x the time with that churn).
    if (sl.size == 0 && sl.root == 0 && !sl.ladder && !sl.wide) (void)start_ladder(sl, price);
    if (sl.ladder) {
        unsigned slot = 0;
        if (ladder_slot(sl, price, slot) || (make_room(sl, price) && ladder_slot(sl, price, slot))) {
            ++probes_;
            OrderLevel& l = ladder_levels(sl)[slot];
            if (ladder_has(sl, slot)) {
                l.shares += shares;
                ++l.orders;
            } else {
                l = {price, shares, 1};
                ladder_set(sl, slot);
                ++sl.size;
                ++sl.best;  // pays for moving a level
            }
            return 0;
        }
        if (!ladder_to_flat(sl, s)) return kNoRoom;
    }
    const std::int64_t key = key_of(s, price);
    if (sl.root == 0) {
        OrderLevel* lv = arena_.data() + sl.offset;
        const std::uint32_t at = flat_upper_bound(lv, sl.size, s, key);
        if (at > 0 && lv[at - 1].price == price) {
            lv[at - 1].shares += shares;
            ++lv[at - 1].orders;
            return 0;
        }
        if (sl.size < kFlatLevels) {
            if (sl.size == sl.cap) {
                if (!grow(sl)) return kNoRoom;
                lv = arena_.data() + sl.offset;
            }
            probes_ += sl.size - at;  // levels moved
            std::copy_backward(lv + at, lv + sl.size, lv + sl.size + 1);
            lv[at] = {price, shares, 1};
            ++sl.size;
            return 0;
        }
        if (!to_tree(sl, s)) return kNoRoom;
    }
    std::uint32_t parent = 0;
    bool left = false;
    if (const std::uint32_t x = search(sl, s, key, parent, left); x != 0) {
        nodes_[x].level.shares += shares;
        ++nodes_[x].level.orders;
        return x;
    }
    const std::uint32_t z = tree_insert(sl, s, parent, left, {price, shares, 1});
    return z != 0 ? z : kNoRoom;
}

void OrderBook::level_sub(const Entry& e, std::uint32_t shares, bool order_gone) noexcept {
    const Side s = static_cast<Side>(e.side);
    SideLevels& sl = levels_of(e.id, s);
    OrderLevel* l = nullptr;
    std::uint32_t node = 0;
    std::uint32_t at = 0;
    unsigned slot = 0;
    const auto price = static_cast<std::int64_t>(e.at);
    const std::int64_t key = key_of(s, price);
    if (e.used == kNode) {
        ++probes_;
        node = e.at;
        l = &nodes_[node].level;
    } else if (sl.ladder) {
        ++probes_;
        if (!ladder_slot(sl, e.at, slot) || !ladder_has(sl, slot)) return;  // not reached
        l = &ladder_levels(sl)[slot];
    } else if (sl.root != 0) {
        std::uint32_t parent = 0;
        bool left = false;
        node = search(sl, s, key, parent, left);
        if (node == 0) return;  // not reached: every live order has its level
        l = &nodes_[node].level;
    } else {
        OrderLevel* lv = arena_.data() + sl.offset;
        at = flat_upper_bound(lv, sl.size, s, key);
        if (at == 0 || lv[at - 1].price != price) return;  // not reached
        l = &lv[at - 1];
    }
    l->shares -= shares;
    if (order_gone) --l->orders;
    if (l->orders != 0) return;
    if (sl.ladder) {
        ladder_reset(sl, slot);
        if (--sl.size == 0) {
            release_ladder(sl);
            sl.best = 0;
        }  // the next add starts one where the prices are then
        return;
    }
    if (node != 0) {
        erase_level(sl, node);  // the last one gone: the side is flat (and blockless) again
        return;
    }
    OrderLevel* lv = arena_.data() + sl.offset;
    probes_ += sl.size - at;
    std::copy(lv + at, lv + sl.size, lv + at - 1);
    --sl.size;
}

bool OrderBook::take_block(std::uint32_t cap, std::size_t& offset) noexcept {
    auto& fl = free_blocks_[static_cast<std::size_t>(class_of(cap))];
    if (!fl.empty()) {
        offset = fl.back();
        fl.pop_back();
    } else if (arena_.size() - arena_used_ >= cap) {
        offset = arena_used_;
        arena_used_ += cap;
    } else {
        return false;
    }
    return true;
}

bool OrderBook::grow(SideLevels& sl) noexcept {
    const std::uint32_t cap = sl.cap == 0 ? kMinBlock : sl.cap * 2;
    std::size_t offset;
    if (!take_block(cap, offset)) return false;
    std::copy(arena_.data() + sl.offset, arena_.data() + sl.offset + sl.size, arena_.data() + offset);
    release_block(sl);
    sl.offset = static_cast<std::uint32_t>(offset);
    sl.cap = static_cast<std::uint16_t>(cap);
    return true;
}

void OrderBook::release_block(SideLevels& sl) noexcept {
    if (sl.cap == 0) return;  // no block (a ladder's offset is its own)
    free_blocks_[static_cast<std::size_t>(class_of(sl.cap))].push_back(sl.offset);
    sl.offset = sl.cap = 0;
}

bool OrderBook::to_tree(SideLevels& sl, Side s) noexcept {
    if (!pool_has_room(sl.size)) return false;
    const OrderLevel* lv = arena_.data() + sl.offset;
    const std::uint32_t n = sl.size;
    sl.size = 0;
    for (std::uint32_t i = 0; i < n; ++i) append_node(sl, s, lv[i]);  // ascending
    release_block(sl);
    return true;
}

void OrderBook::append_node(SideLevels& sl, Side s, const OrderLevel& l) noexcept {
    std::uint32_t parent = 0;
    bool left = false;
    (void)search(sl, s, key_of(s, l.price), parent, left);  // found from the best at once
    (void)tree_insert(sl, s, parent, left, l);
}

std::uint32_t OrderBook::search(const SideLevels& sl, Side s, std::int64_t k, std::uint32_t& parent, bool& left) noexcept {
    const auto key = [&](std::uint32_t n) { return key_of(s, nodes_[n].level.price); };
    // Above the root's key, from the best level up the right spine while
    // the key is at or below the parent's: then the level (or its place) is
    // in x's subtree, whose keys are all above the parent's; O(log d) for a
    // price d levels from the touch. Otherwise from the root.
    std::uint32_t x = sl.root == 0 || k <= key(sl.root) ? sl.root : sl.best;
    while (x != sl.root && k <= key(nodes_[x].parent)) {
        ++probes_;
        x = nodes_[x].parent;
    }
    parent = 0;
    left = false;
    while (x != 0) {
        ++probes_;
        const std::int64_t kx = key(x);
        if (k == kx) return x;
        parent = x;
        left = k < kx;
        x = left ? nodes_[x].left : nodes_[x].right;
    }
    return 0;
}

std::uint32_t OrderBook::tree_insert(SideLevels& sl, Side s, std::uint32_t parent, bool left, const OrderLevel& l) noexcept {
    const std::uint32_t z = take_node();
    if (z == 0) return 0;
    ++nodes_in_use_;
    nodes_[z] = {l, 0, 0, parent, 1};
    if (parent == 0) {
        sl.root = z;
    } else if (left) {
        nodes_[parent].left = z;
    } else {
        nodes_[parent].right = z;
    }
    if (sl.best == 0 || key_of(s, l.price) > key_of(s, nodes_[sl.best].level.price)) sl.best = z;
    ++sl.size;
    insert_fixup(sl, z);
    return z;
}

void OrderBook::rotate_left(SideLevels& sl, std::uint32_t x) noexcept {
    ++probes_;
    LevelNode* n = nodes_.data();
    const std::uint32_t y = n[x].right;
    n[x].right = n[y].left;
    if (n[y].left != 0) n[n[y].left].parent = x;
    n[y].parent = n[x].parent;
    if (n[x].parent == 0) {
        sl.root = y;
    } else if (x == n[n[x].parent].left) {
        n[n[x].parent].left = y;
    } else {
        n[n[x].parent].right = y;
    }
    n[y].left = x;
    n[x].parent = y;
}

void OrderBook::rotate_right(SideLevels& sl, std::uint32_t x) noexcept {
    ++probes_;
    LevelNode* n = nodes_.data();
    const std::uint32_t y = n[x].left;
    n[x].left = n[y].right;
    if (n[y].right != 0) n[n[y].right].parent = x;
    n[y].parent = n[x].parent;
    if (n[x].parent == 0) {
        sl.root = y;
    } else if (x == n[n[x].parent].right) {
        n[n[x].parent].right = y;
    } else {
        n[n[x].parent].left = y;
    }
    n[y].right = x;
    n[x].parent = y;
}

void OrderBook::insert_fixup(SideLevels& sl, std::uint32_t z) noexcept {
    LevelNode* n = nodes_.data();
    while (n[n[z].parent].red) {  // a red parent is never the root: the grandparent exists
        ++probes_;
        const std::uint32_t p = n[z].parent;
        const std::uint32_t g = n[p].parent;
        if (p == n[g].left) {
            const std::uint32_t u = n[g].right;
            if (n[u].red) {
                n[p].red = n[u].red = 0;
                n[g].red = 1;
                z = g;
                continue;
            }
            if (z == n[p].right) {
                z = p;
                rotate_left(sl, z);
            }
            n[n[z].parent].red = 0;
            n[n[n[z].parent].parent].red = 1;
            rotate_right(sl, n[n[z].parent].parent);
        } else {
            const std::uint32_t u = n[g].left;
            if (n[u].red) {
                n[p].red = n[u].red = 0;
                n[g].red = 1;
                z = g;
                continue;
            }
            if (z == n[p].left) {
                z = p;
                rotate_right(sl, z);
            }
            n[n[z].parent].red = 0;
            n[n[n[z].parent].parent].red = 1;
            rotate_left(sl, n[n[z].parent].parent);
        }
    }
    n[sl.root].red = 0;
}

void OrderBook::transplant(SideLevels& sl, std::uint32_t u, std::uint32_t v) noexcept {
    LevelNode* n = nodes_.data();
    const std::uint32_t p = n[u].parent;
    if (p == 0) {
        sl.root = v;
    } else if (u == n[p].left) {
        n[p].left = v;
    } else {
        n[p].right = v;
    }
    n[v].parent = p;  // nil's parent too: erase_fixup starts from it
}

void OrderBook::erase_level(SideLevels& sl, std::uint32_t z) noexcept {
    LevelNode* n = nodes_.data();
    if (z == sl.best) {  // the next best: the predecessor of the last node (which has no right child)
        std::uint32_t b = n[z].left;
        if (b == 0) {
            b = n[z].parent;
        } else {
            while (n[b].right != 0) b = n[b].right;
        }
        sl.best = b;
    }
    std::uint32_t y = z;
    std::uint8_t y_red = n[y].red;
    std::uint32_t x;
    if (n[z].left == 0) {
        x = n[z].right;
        transplant(sl, z, x);
    } else if (n[z].right == 0) {
        x = n[z].left;
        transplant(sl, z, x);
    } else {
        y = n[z].right;
        while (n[y].left != 0) {
            ++probes_;
            y = n[y].left;
        }
        y_red = n[y].red;
        x = n[y].right;
        if (n[y].parent == z) {
            n[x].parent = y;
        } else {
            transplant(sl, y, x);
            n[y].right = n[z].right;
            n[n[y].right].parent = y;
        }
        transplant(sl, z, y);
        n[y].left = n[z].left;
        n[n[y].left].parent = y;
        n[y].red = n[z].red;
    }
    if (!y_red) erase_fixup(sl, x);
    n[0] = LevelNode{};  // nil as it was (the fixup may have linked it)
    --sl.size;
    --nodes_in_use_;
    n[z].left = n[z].right = 0;
    give_back(z);
}

void OrderBook::erase_fixup(SideLevels& sl, std::uint32_t x) noexcept {
    LevelNode* n = nodes_.data();
    while (x != sl.root && !n[x].red) {
        ++probes_;
        const std::uint32_t p = n[x].parent;
        if (x == n[p].left) {
            std::uint32_t w = n[p].right;
            if (n[w].red) {
                n[w].red = 0;
                n[p].red = 1;
                rotate_left(sl, p);
                w = n[p].right;
            }
            if (!n[n[w].left].red && !n[n[w].right].red) {
                n[w].red = 1;
                x = p;
                continue;
            }
            if (!n[n[w].right].red) {
                n[n[w].left].red = 0;
                n[w].red = 1;
                rotate_right(sl, w);
                w = n[p].right;
            }
            n[w].red = n[p].red;
            n[p].red = 0;
            n[n[w].right].red = 0;
            rotate_left(sl, p);
            x = sl.root;
        } else {
            std::uint32_t w = n[p].left;
            if (n[w].red) {
                n[w].red = 0;
                n[p].red = 1;
                rotate_right(sl, p);
                w = n[p].left;
            }
            if (!n[n[w].right].red && !n[n[w].left].red) {
                n[w].red = 1;
                x = p;
                continue;
            }
            if (!n[n[w].left].red) {
                n[n[w].right].red = 0;
                n[w].red = 1;
                rotate_left(sl, w);
                w = n[p].left;
            }
            n[w].red = n[p].red;
            n[p].red = 0;
            n[n[w].left].red = 0;
            rotate_right(sl, p);
            x = sl.root;
        }
    }
    n[x].red = 0;
}

}  // namespace tickgate
