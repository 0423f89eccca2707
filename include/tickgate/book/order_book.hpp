// The order-by-order (L3) book of ITCH 5.0 (ITCH50.md "ITCH 5.0 messages and
// the book"), with an aggregated L2 view (price, shares, order count) kept
// incrementally and read through ReadableBook like every other book.
//
// Orders: 24-byte entries in two stores. An order is keyed by its
// reference within its *scope* (ITCH: its channel, ITCH50.md "Locates and
// order references are a channel's own"): instrument ids id >> scope_bits
// share one reference space. The venue assigns a channel's references
// densely and increasing, and most orders live briefly, so the busy orders
// are the newest references: a *window*, a direct-mapped ring of
// bit_ceil(max_orders) (at most 2^18) entries indexed by the reference
// (plus a per-scope offset), holds each new order in its reference's slot,
// found and deleted in one slot with no hash. An order still live when a
// newer reference needs its slot moves to the *table*, the long-lived
// tail (by way of a *stash* of 8, where it waits while its table line is
// fetched), and every order of a *sparse* scope (one whose adds step its
// references by more than 4 on average: few of its stocks booked, so each
// add would take a window line of its own, and few of its orders die
// within the window's span of references): one open-addressing table (linear probing, backward-shift delete)
// sized at start-up to max_orders × 5/4, so it holds every order should
// the window hold none; an open order costs 30 bytes when the store is
// full, plus the window's fixed 24 bytes a slot (bytes_for); both stores
// are offered for transparent huge pages (read at random: otherwise a TLB
// miss a message). The table's
// home slot mixes the key with a seeded hash, keeping 8 consecutive
// references of a scope in neighbouring slots, so no choice of references
// can pile them onto one slot; references chosen to collide in the window
// only send each order to the table (one insert more per add, never more).
// Emptying an instrument (a new session, an unsubscribe) is O(1): its
// generation moves on and its entries become stale: in the window free
// slots, in the table reused in place by later adds and swept out, all at
// once, when live plus stale table entries reach max_orders and at least
// 1/32 of the table is stale (so a sweep costs at most 32 slots per entry
// it frees, and the load stays about where live orders alone put it).
// Levels: where a side's prices allow, a *ladder*: slots on the tick grid
// from a base, a level found from its price by one multiply and the best by
// a bit scan (of the occupancy word, or of the word of words not 0, then
// that word). A side starts with 64 slots; it moves along the grid while
// its levels and a new price span the ladder's slots, else takes a larger
// ladder (256 or 1,024 slots: a busy stock's orders rest up to a few
// dollars from a touch that wanders all day); a price none can take (off
// the grid, 1,024 ticks from the others, or needing a move that the
// levels added since the last one cannot pay for, with no larger ladder to
// take) makes the side flat for good until cleared (a side that spread
// that wide once will again; each start and giving way copies the levels).
// Ladders come from a fixed pool (ladders_for) in units of 64 slots; a
// side beyond it is flat. Otherwise:
// per instrument and side a sorted flat array of at most kFlatLevels (64) levels searched
// by bisection (best last, so the updates near the touch that dominate real
// feeds move little), carved from one arena in power-of-two blocks; a side
// that outgrows it becomes a red-black tree of levels whose nodes come
// from one pool of max_levels (#21 item 6: a flat array made 300,000
// distinct prices quadratic). So no choice of prices makes a level insert,
// lookup or erase cost more than moving 64 levels or O(log levels) tree
// nodes. A tree search starts from the side's best level when the price is
// above the root's (up the right spine, then down: O(log d) for a price d
// levels from the touch). A tree emptied becomes a flat side again;
// emptying a side gives its block and whole tree back in O(1) (the pool
// takes a tree apart a node per later allocation). Readers iterate best
// outward either way. The level arena and the tree pool take huge pages too
// (a stock's levels are read at random among thousands of stocks'; the tree
// pool of a side with 300,000 levels spans 12 MB). Nothing allocates after
// construction; a full order store, arena or pool refuses the add and says
// so. Engine thread only.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "tickgate/book/book.hpp"
#include "tickgate/zeroed_array.hpp"

namespace tickgate {

// The slot a walk of a ladder's occupancy mask `bits` (not 0) reads
// next: its highest (`descending`) or its lowest.
[[nodiscard]] inline unsigned next_ladder_slot(std::uint64_t bits, bool descending) noexcept {
    return descending ? 63u - static_cast<unsigned>(std::countl_zero(bits)) : static_cast<unsigned>(std::countr_zero(bits));
}

// One aggregated price level; converts to a Level (shares saturated to u32).
struct OrderLevel {
    std::int64_t price;   // the wire price (4 implied decimals for ITCH)
    std::uint64_t shares;
    std::uint32_t orders;
    // NOLINTNEXTLINE(google-explicit-constructor): read as a Level by BookReader and the gate's users
    operator Level() const noexcept {
        return {price, shares > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(shares)};
    }
};

// What an order message did.
enum class OrderResult : std::uint8_t {
    kApplied,
    kRemoved,         // E/C/X took the order to 0 shares, or D
    kOverExecution,   // more shares executed or cancelled than the order had: removed
    kUnknownOrder,    // no live order with that reference on that instrument: nothing changed
    kStoreFull,       // the order store (or the level pool) is full: the add refused
};

// A node of the level pool: an aggregated level and its red-black links
// (pool indices; 0 is the shared nil node).
struct LevelNode {
    OrderLevel level;
    std::uint32_t left, right, parent;
    std::uint8_t red;
};

// One side of an instrument's L2 view, best first (iterated from the best
// level outward, whether the side is a flat array or a tree: no random
// access); valid until the book changes.
class OrderBookSide {
public:
    class iterator {
    public:
        using value_type = OrderLevel;
        using difference_type = std::ptrdiff_t;
        iterator() = default;
        explicit iterator(const OrderLevel* p) noexcept : p_(p) {}
        iterator(const LevelNode* nodes, std::uint32_t at) noexcept : nodes_(nodes), at_(at) {}
        // A ladder of one word: `occupied` is its bitmap.
        iterator(const OrderLevel* slots, std::uint64_t occupied, bool descending) noexcept
            : slots_(slots), bits_(occupied), descending_(descending) {}
        // A ladder of several words: `words` its bitmaps, `nonempty` a bit per word that is not 0.
        iterator(const OrderLevel* slots, const std::uint64_t* words, std::uint64_t nonempty, bool descending) noexcept
            : slots_(slots), words_(words), descending_(descending) {
            if (nonempty == 0) return;
            word_ = next_ladder_slot(nonempty, descending);
            rest_ = nonempty & ~(std::uint64_t{1} << word_);
            bits_ = words[word_];
        }
        const OrderLevel& operator*() const noexcept {
            if (slots_ != nullptr) return slots_[word_ * 64 + slot()];
            return nodes_ != nullptr ? nodes_[at_].level : p_[-1];
        }
        iterator& operator++() noexcept {
            if (slots_ != nullptr) {
                bits_ &= ~(std::uint64_t{1} << slot());
                if (bits_ == 0 && rest_ != 0) {  // the next word that holds a level
                    word_ = next_ladder_slot(rest_, descending_);
                    rest_ &= ~(std::uint64_t{1} << word_);
                    bits_ = words_[word_];
                }
                if (bits_ == 0) word_ = 0;  // past the last: equal to end()
            } else if (nodes_ == nullptr) {
                --p_;
            } else {
                at_ = predecessor(at_);
            }
            return *this;
        }
        iterator operator++(int) noexcept {
            iterator t = *this;
            ++*this;
            return t;
        }
        bool operator==(const iterator& o) const noexcept {
            return p_ == o.p_ && at_ == o.at_ && bits_ == o.bits_ && word_ == o.word_;
        }

    private:
        // A ladder's next slot: its highest occupied one (a bid's best) or its lowest (an ask's).
        [[nodiscard]] unsigned slot() const noexcept { return next_ladder_slot(bits_, descending_); }
        // The in-order predecessor: amortised O(1) over a whole walk.
        [[nodiscard]] std::uint32_t predecessor(std::uint32_t x) const noexcept {
            if (nodes_[x].left != 0) {
                x = nodes_[x].left;
                while (nodes_[x].right != 0) x = nodes_[x].right;
                return x;
            }
            std::uint32_t p = nodes_[x].parent;
            while (p != 0 && x == nodes_[p].left) {
                x = p;
                p = nodes_[p].parent;
            }
            return p;
        }
        const OrderLevel* p_ = nullptr;     // flat: one past the level it reads
        const LevelNode* nodes_ = nullptr;  // tree: the pool, and the node (0: past the last)
        std::uint32_t at_ = 0;
        const OrderLevel* slots_ = nullptr;  // ladder: its slots, and those still to read (0: past the last)
        const std::uint64_t* words_ = nullptr;  // several words: their bitmaps
        std::uint64_t bits_ = 0;   // the current word's slots still to read
        std::uint64_t rest_ = 0;   // several words: those after the current one still to read
        unsigned word_ = 0;        // the current word
        bool descending_ = false;
    };
    // A flat side (ascending by key: the best level last).
    OrderBookSide(const OrderLevel* levels, std::uint32_t size) noexcept : levels_(levels), size_(size) {}
    // A tree side, from its best node.
    OrderBookSide(const LevelNode* nodes, std::uint32_t best, std::uint32_t size) noexcept
        : nodes_(nodes), best_(best), size_(size) {}
    // A ladder side: its slots, which of them hold a level (`words`
    // nullptr: `occupied` is the bitmap of its 64; else `words` are the
    // bitmaps and `occupied` a bit per word not 0), and whether the best is
    // the highest slot (a bid) or the lowest (an ask).
    OrderBookSide(const OrderLevel* slots, const std::uint64_t* words, std::uint64_t occupied, bool descending,
                  std::uint32_t size) noexcept
        : levels_(slots), words_(words), occupied_(occupied), size_(size), ladder_(true), descending_(descending) {}
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] iterator begin() const noexcept {
        if (ladder_) return words_ != nullptr ? iterator(levels_, words_, occupied_, descending_) : iterator(levels_, occupied_, descending_);
        return nodes_ != nullptr ? iterator(nodes_, best_) : iterator(levels_ + size_);
    }
    [[nodiscard]] iterator end() const noexcept {
        if (ladder_) return {levels_, 0, descending_};
        return nodes_ != nullptr ? iterator(nodes_, 0) : iterator(levels_);
    }

private:
    const OrderLevel* levels_ = nullptr;
    const LevelNode* nodes_ = nullptr;
    std::uint32_t best_ = 0;
    const std::uint64_t* words_ = nullptr;
    std::uint64_t occupied_ = 0;
    std::uint32_t size_;
    bool ladder_ = false;
    bool descending_ = false;
};
static_assert(std::forward_iterator<OrderBookSide::iterator>);

class OrderBook {
public:
    // Instruments 0 .. max_instruments-1; `max_orders` open orders at once;
    // `max_levels` price levels at once, all instruments and sides, in flat
    // sides (the arena holds twice that, for power-of-two blocks) and as
    // many in trees (the pool). References are
    // unique within the ids sharing id >> scope_bits (ITCH: 16, a channel's
    // 65,536 locates). Throws std::invalid_argument for a zero capacity.
    // `tick` (1 .. 65,535): the price step of a ladder's slots (ITCH: $0.01
    // in 4 implied decimals); prices off that grid live in flat sides.
    OrderBook(std::uint32_t max_instruments, std::uint32_t max_orders, std::uint32_t max_levels,
              unsigned scope_bits = 16, std::uint32_t tick = 100);
    // What the constructor allocates (the config's memory estimate).
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t max_instruments, std::uint32_t max_orders,
                                               std::uint32_t max_levels, unsigned scope_bits = 16) noexcept;
    // The ladder pool, in units of 64 slots: twice max_levels slots (as the
    // flat arena), or 16 units a side (both sides of every instrument at
    // 1,024 slots) if fewer. A side that finds none, or no larger one, is
    // flat. Units are never merged or split: a freed ladder serves only a
    // side of its own size, so after large ladders are freed (a new
    // session) new sides may find none while those wait.
    [[nodiscard]] static std::uint32_t ladders_for(std::uint32_t max_instruments, std::uint32_t max_levels) noexcept {
        return static_cast<std::uint32_t>(std::min<std::uint64_t>(std::uint64_t{max_instruments} * 32, std::uint64_t{max_levels} * 2 / kLadderSlots));
    }
    // What of it is resident once constructed: the per-instrument and
    // per-scope arrays (the order stores and level pool are zero pages until used).
    [[nodiscard]] static std::size_t resident_bytes_for(std::uint32_t max_instruments, unsigned scope_bits = 16) noexcept {
        return std::size_t{max_instruments} * (2 * sizeof(std::uint32_t) + sizeof(std::uint16_t) + 2 * sizeof(SideLevels)) +
               scopes_for(max_instruments, scope_bits) * sizeof(ScopeRefs);
    }

    // A (or F): a new order; a live `ref` of the same scope is replaced (ITCH50.md). `id` < max_instruments.
    // An order of 0 shares is not kept (kRemoved): it would be gone at once.
    OrderResult add(std::uint32_t id, std::uint64_t ref, Side side, std::uint32_t shares, std::uint32_t price) noexcept;
    // E, C, X: the order's shares go down by `shares`; at 0 it is gone, below 0 an over-execution.
    OrderResult reduce(std::uint32_t id, std::uint64_t ref, std::uint32_t shares) noexcept;
    // D: the order is gone.
    OrderResult remove(std::uint32_t id, std::uint64_t ref) noexcept;
    // U: the original order gone, a new one with `new_ref`, same side and instrument.
    OrderResult replace(std::uint32_t id, std::uint64_t ref, std::uint64_t new_ref, std::uint32_t shares,
                        std::uint32_t price) noexcept;
    // A hint that an order message of `id` naming `ref` comes soon (an add
    // on `*add_side` at `add_price`, or nullptr: a change of an order):
    // fetches the store slot add() or find() looks in first, an add's side
    // record, and the level's ladder slot (a change's only if its order is
    // in its window slot, the one entry read). Changes nothing (probes()
    // included); `id` < max_instruments().
    void prefetch(std::uint32_t id, std::uint64_t ref, const Side* add_side, std::uint32_t add_price = 0) const noexcept;
    // Empties instrument `id` (a new session, an unsubscribe): its orders
    // (made stale in O(1)) and levels.
    void clear(std::uint32_t id) noexcept;
    // Empties every instrument for which pred(id) holds. O(max_instruments).
    template <class Pred>
    void clear_if(Pred&& pred) noexcept {
        for (std::uint32_t id = 0; id < orders_of_.size(); ++id)
            if (pred(id)) clear(id);
    }

    [[nodiscard]] OrderBookSide side(std::uint32_t id, Side s) const noexcept {
        const SideLevels& sl = levels_of(id, s);
        if (sl.ladder) return {ladders_.data() + sl.offset, sl.ladder == 1 ? nullptr : ladder_words(sl), sl.occupied, s == Side::kBid, sl.size};
        if (sl.root != 0) return {nodes_.data(), sl.best, sl.size};
        return {arena_.data() + sl.offset, sl.size};
    }
    // Levels are unbounded per side (the pool bounds them all): the depth
    // a reader asks for is what it gets.
    [[nodiscard]] std::uint32_t depth() const noexcept { return UINT32_MAX; }
    [[nodiscard]] std::uint32_t open_orders(std::uint32_t id) const noexcept { return orders_of_[id]; }
    [[nodiscard]] std::size_t open_orders() const noexcept { return size_; }
    [[nodiscard]] std::uint32_t max_instruments() const noexcept { return static_cast<std::uint32_t>(orders_of_.size()); }
    // Table slots visited by lookups and inserts so far, entries moved or
    // swept, and level-tree nodes visited (searches, rebalancing): the
    // store's work, whatever the references and prices (tests bound it per message).
    [[nodiscard]] std::uint64_t probes() const noexcept { return probes_; }

private:
    struct Entry {
        std::uint64_t ref;
        std::uint32_t at;      // kPrice: the price; kNode: its level's tree node (stable while the level lives)
        std::uint32_t shares;
        std::uint32_t id;      // instrument
        std::uint16_t gen;     // the instrument's generation when added: live only while it is current
        std::uint8_t side;
        std::uint8_t used;     // 0: a free slot; else what `at` holds
    };
    static constexpr std::uint8_t kPrice = 1, kNode = 2;
    static_assert(sizeof(Entry) == 24);
    // 32 bytes, aligned: one cache line per side touched.
    struct alignas(32) SideLevels {
        std::uint32_t offset = 0;  // flat: its block in the arena; ladder: its first slot in ladders_
        std::uint16_t cap = 0;     // flat: the block's size (0: no block)
        std::uint8_t ladder = 0;   // a ladder's words of 64 slots (1, 4 or 16); 0: not a ladder
        bool wide = false;         // its prices outgrew a ladder once: flat for good (until cleared)
        std::uint32_t root = 0;    // tree: its root (0: the side is flat)
        std::uint32_t best = 0;    // tree: its last node (highest key); ladder: levels added since it last moved
        std::uint32_t size = 0;
        std::uint32_t base = 0;      // ladder: the price of slot 0
        std::uint64_t occupied = 0;  // ladder of 1 word: a bit per slot that holds a level; of more: per word not 0
    };
    static_assert(sizeof(SideLevels) == 32);
    static constexpr std::uint32_t kMinBlock = 4;
    static constexpr std::uint32_t kFlatLevels = 64;  // a side with more is a tree
    static constexpr std::uint32_t kLadderSlots = 64;  // a ladder word's slots: a pool unit
    // Ladders of 1, 4 and 16 words (64, 256, 1,024 slots): a side starts
    // with one and takes the next that spans its prices.
    static constexpr std::uint32_t kLadderWords[] = {1, 4, 16};
    static constexpr int kLadderClasses = 3;
    static constexpr std::uint32_t kMaxLadderWords = kLadderWords[kLadderClasses - 1];
    [[nodiscard]] static int ladder_class(std::uint32_t words) noexcept { return std::countr_zero(words) / 2; }
    static constexpr int kClasses = 7;                // blocks 4 .. 64
    static constexpr unsigned kRunBits = 3;  // 8 consecutive references of a scope share a mixed home
    // Per scope: the highest reference added so far (a higher one, every
    // new order of a venue assigning references increasing, names no live
    // order, so its add looks nowhere), and how far it moves per add.
    struct ScopeRefs {
        std::uint64_t top = 0;
        std::uint32_t gap16 = 16;  // 16 x the mean step of `top` per add (each step capped at 64; 1/16 weight)
    };
    // A scope whose adds are this sparse in references (few of a channel's
    // stocks booked) puts its orders straight in the table: each add would
    // otherwise take a window line of its own and, most of its orders
    // outliving the window's span of references, move the one in its slot
    // to the table too.
    static constexpr std::uint32_t kSparseGap16 = 16 * 4;
    [[nodiscard]] static bool sparse(const ScopeRefs& sr) noexcept { return sr.gap16 > kSparseGap16; }

    [[nodiscard]] std::size_t home(std::uint32_t scope, std::uint64_t ref) const noexcept {
        std::uint64_t h = (ref >> kRunBits) ^ (std::uint64_t{scope} << 48) ^ seed_;  // murmur3's fmix64
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
        // Scaled into [0, size) by a multiply (no division), then the place within the run.
        __extension__ using U128 = unsigned __int128;
        std::size_t i = static_cast<std::size_t>((static_cast<U128>(h) * table_.size()) >> 64) +
                        static_cast<std::size_t>(ref & ((1u << kRunBits) - 1));
        return i >= table_.size() ? i - table_.size() : i;
    }
    [[nodiscard]] std::size_t next(std::size_t i) const noexcept { return i + 1 == table_.size() ? 0 : i + 1; }
    // The window slot of `ref`: consecutive references of a scope in
    // consecutive slots, each scope at its own offset (channels' references
    // overlap), so the newest orders of a channel share a few cache lines.
    [[nodiscard]] std::size_t slot_index(std::uint32_t scope, std::uint64_t ref) const noexcept {
        return static_cast<std::size_t>((ref + std::uint64_t{scope} * 0x9E3779B97F4A7C15ull) & window_mask_);
    }
    [[nodiscard]] Entry& slot(std::uint32_t scope, std::uint64_t ref) noexcept { return window_[slot_index(scope, ref)]; }
    // Whether find() looks in the table before the window: the reference is
    // a whole window older than its scope's newest (almost surely moved on:
    // references are dense), or the scope is sparse (its orders go to the table).
    [[nodiscard]] bool table_first(const ScopeRefs& sr, std::uint64_t ref) const noexcept {
        return ref + window_.size() <= sr.top || sparse(sr);
    }
    [[nodiscard]] bool in_window(const Entry* e) const noexcept {
        return e >= window_.data() && e < window_.data() + window_.size();
    }
    [[nodiscard]] bool in_stash(const Entry* e) const noexcept { return e >= stash_.data() && e < stash_.data() + kStash; }
    // An order a newer reference took the window slot of, on its way to
    // the table: the table home is fetched now and the insert made kStash
    // moves later, when the line has arrived (a move into the table was a
    // miss on a random line, waited for, on 1 add in 4 of the day-like flow).
    void stash(const Entry& e, std::size_t home) noexcept;
    [[nodiscard]] std::uint32_t scope_of(std::uint32_t id) const noexcept { return id >> scope_bits_; }
    [[nodiscard]] static std::size_t scopes_for(std::uint32_t max_instruments, unsigned scope_bits) noexcept {
        return ((std::size_t{max_instruments} - 1) >> scope_bits) + 1;
    }
    [[nodiscard]] bool live(const Entry& e) const noexcept { return e.gen == gen_[e.id]; }
    [[nodiscard]] Entry* find(std::uint32_t id, std::uint64_t ref) noexcept;
    [[nodiscard]] Entry* table_find(std::uint32_t scope, std::uint64_t ref) noexcept;
    // Puts `e` (live, not in the table) into the table at or after slot
    // `from`, its home(), sweeping the table first if due.
    void table_insert(const Entry& e, std::size_t from) noexcept;
    void erase(Entry* e) noexcept;
    // Empties slot `hole` by backward shift: later entries of its run move up.
    void shift_into(std::size_t hole) noexcept;
    // Removes every stale entry of the table, and every entry of instrument
    // `retired` (its generation about to wrap; all counted stale), in one walk.
    void sweep(std::uint32_t retired = UINT32_MAX) noexcept;
    // The same for the window and the stash (only before a generation wraps).
    void sweep_window(std::uint32_t retired) noexcept;
    // Level keys ascend towards the best level: the bid's price, the ask's negated.
    [[nodiscard]] static std::int64_t key_of(Side s, std::int64_t price) noexcept { return s == Side::kBid ? price : -price; }
    [[nodiscard]] SideLevels& levels_of(std::uint32_t id, Side s) noexcept {
        return sides_[std::size_t{id} * 2 + static_cast<std::size_t>(s)];
    }
    [[nodiscard]] const SideLevels& levels_of(std::uint32_t id, Side s) const noexcept {
        return sides_[std::size_t{id} * 2 + static_cast<std::size_t>(s)];
    }
    // The first of a flat side's `size` levels whose key is above `key`.
    [[nodiscard]] static std::uint32_t flat_upper_bound(const OrderLevel* lv, std::uint32_t size, Side s,
                                                        std::int64_t key) noexcept;
    // The slot of `price` in ladder `sl`, or false: below its base, past
    // its last slot or off its grid (one multiply, no division).
    [[nodiscard]] bool ladder_slot(const SideLevels& sl, std::uint32_t price, unsigned& slot) const noexcept {
        const std::uint32_t d = price - sl.base;
        if (price < sl.base || d >= sl.ladder * kLadderSlots * tick_) return false;
        const auto q = static_cast<std::uint32_t>((std::uint64_t{d} * tick_magic_) >> 48);  // d / tick, exact here
        slot = q;
        return q * tick_ == d;
    }
    [[nodiscard]] OrderLevel* ladder_levels(const SideLevels& sl) noexcept {
        return ladders_.data() + sl.offset;
    }
    // A ladder of several words: its bitmaps (`occupied` has a bit per word not 0).
    [[nodiscard]] std::uint64_t* ladder_words(const SideLevels& sl) noexcept {
        return ladder_bits_.data() + sl.offset / kLadderSlots;
    }
    [[nodiscard]] const std::uint64_t* ladder_words(const SideLevels& sl) const noexcept {
        return ladder_bits_.data() + sl.offset / kLadderSlots;
    }
    [[nodiscard]] bool ladder_has(const SideLevels& sl, unsigned slot) const noexcept {
        if (sl.ladder == 1) return (sl.occupied >> slot & 1) != 0;
        return (ladder_words(sl)[slot / 64] >> (slot % 64) & 1) != 0;
    }
    void ladder_set(SideLevels& sl, unsigned slot) noexcept {
        if (sl.ladder == 1) {
            sl.occupied |= std::uint64_t{1} << slot;
            return;
        }
        ladder_words(sl)[slot / 64] |= std::uint64_t{1} << (slot % 64);
        sl.occupied |= std::uint64_t{1} << (slot / 64);
    }
    void ladder_reset(SideLevels& sl, unsigned slot) noexcept {
        if (sl.ladder == 1) {
            sl.occupied &= ~(std::uint64_t{1} << slot);
            return;
        }
        std::uint64_t& w = ladder_words(sl)[slot / 64];
        w &= ~(std::uint64_t{1} << (slot % 64));
        if (w == 0) sl.occupied &= ~(std::uint64_t{1} << (slot / 64));
    }
    // Ladder `sl`'s highest (`highest`) or lowest slot that holds a level; it holds one.
    [[nodiscard]] unsigned ladder_end(const SideLevels& sl, bool highest) const noexcept {
        if (sl.ladder == 1) return next_ladder_slot(sl.occupied, highest);
        const unsigned w = next_ladder_slot(sl.occupied, highest);
        return w * 64 + next_ladder_slot(ladder_words(sl)[w], highest);
    }
    // Calls f(slot) for each slot of ladder `sl` that holds a level, highest first if `down`.
    template <class F>
    void for_each_ladder_slot(const SideLevels& sl, bool down, F&& f) const noexcept {
        for (std::uint64_t nonempty = sl.ladder == 1 ? 1 : sl.occupied; nonempty != 0;) {
            const unsigned w = next_ladder_slot(nonempty, down);
            nonempty &= ~(std::uint64_t{1} << w);
            for (std::uint64_t bits = sl.ladder == 1 ? sl.occupied : ladder_words(sl)[w]; bits != 0;) {
                const unsigned i = next_ladder_slot(bits, down);
                bits &= ~(std::uint64_t{1} << i);
                f(w * 64 + i);
            }
        }
    }
    // A ladder of `words` words from the pool (its free list, else unused
    // room): its first slot, or false if there is none.
    bool take_ladder(std::uint32_t words, std::uint32_t& offset) noexcept;
    // What a pool of `ladders` units takes: its slots, bitmaps and free lists.
    [[nodiscard]] static std::size_t ladder_bytes(std::uint32_t ladders) noexcept;
    // Side `sl` (empty, no tree) made a one-word ladder whose middle slot is `price`; false if none is free.
    bool start_ladder(SideLevels& sl, std::uint32_t price) noexcept;
    // The base that centres a ladder of `slots` on prices lo .. hi (on its
    // grid), or false if they span more slots.
    [[nodiscard]] bool centred_base(std::uint32_t lo, std::uint32_t hi, std::uint32_t slots, std::uint32_t& base) const noexcept;
    // Ladder `sl` moved along the grid, or into a larger ladder, so that
    // `price` fits beside its levels (its levels move); false if it cannot
    // (off the grid, the levels and `price` span more than 1,024 slots, a
    // larger ladder needs a move its added levels cannot pay for and has
    // none larger, or the pool has no larger ladder).
    bool make_room(SideLevels& sl, std::uint32_t price) noexcept;
    // Ladder `sl` made a flat side (a tree past kFlatLevels), its levels in
    // key order; false if the arena or pool has no room.
    bool ladder_to_flat(SideLevels& sl, Side s) noexcept;
    void release_ladder(SideLevels& sl) noexcept;
    // A block of `cap` levels from the arena (its free list, else unused
    // room); false if there is none.
    bool take_block(std::uint32_t cap, std::size_t& offset) noexcept;
    // Adds `shares` (one order) at `price`: the level's tree node (a tree
    // side), 0 (a flat side), or kNoRoom when the arena or pool has none.
    // A tree side stays one until it is empty, so an order added to a tree
    // keeps its node for its life and its changes skip the search.
    static constexpr std::uint32_t kNoRoom = UINT32_MAX;
    std::uint32_t level_add(std::uint32_t id, Side s, std::uint32_t price, std::uint32_t shares) noexcept;
    // Takes `shares` (and, if `order_gone`, one order) from order `e`'s level.
    void level_sub(const Entry& e, std::uint32_t shares, bool order_gone) noexcept;
    bool grow(SideLevels& sl) noexcept;
    void release_block(SideLevels& sl) noexcept;
    // A flat side of kFlatLevels made a tree; false if the pool has no room.
    bool to_tree(SideLevels& sl, Side s) noexcept;
    // Whether the pool holds `levels` more nodes and one for the level being added.
    [[nodiscard]] bool pool_has_room(std::uint32_t levels) const noexcept { return nodes_.size() - 1 - nodes_in_use_ > levels; }
    // `l` (its key above every one of tree side `sl`) as the tree's new last node.
    void append_node(SideLevels& sl, Side s, const OrderLevel& l) noexcept;
    // The tree's node of key `k`, or 0 with where it would go (parent, side).
    std::uint32_t search(const SideLevels& sl, Side s, std::int64_t k, std::uint32_t& parent, bool& left) noexcept;
    // A new node holding `l` under `parent`; 0 if the pool is full.
    std::uint32_t tree_insert(SideLevels& sl, Side s, std::uint32_t parent, bool left, const OrderLevel& l) noexcept;
    // The red-black tree of one side (CLRS, over pool indices).
    void rotate_left(SideLevels& sl, std::uint32_t x) noexcept;
    void rotate_right(SideLevels& sl, std::uint32_t x) noexcept;
    void insert_fixup(SideLevels& sl, std::uint32_t z) noexcept;
    void transplant(SideLevels& sl, std::uint32_t u, std::uint32_t v) noexcept;
    void erase_fixup(SideLevels& sl, std::uint32_t x) noexcept;
    void erase_level(SideLevels& sl, std::uint32_t z) noexcept;
    // A node from the pool (0 if none); a freed tree back to it in O(1).
    std::uint32_t take_node() noexcept;
    void give_back(std::uint32_t root) noexcept;

    ZeroedArray<Entry> window_;  // zero pages too
    // Orders moved out of the window, not yet in the table: a ring, the
    // oldest inserted when a new one comes; found by a scan after the
    // window and table (a lookup that gets there is a rare one).
    static constexpr std::size_t kStash = 8;
    std::array<Entry, kStash> stash_{};
    std::array<std::size_t, kStash> stash_home_{};
    std::size_t stash_next_ = 0;
    std::size_t stash_used_ = 0;  // its entries in use (stale ones too, until overwritten or swept)
    std::size_t window_mask_;
    ZeroedArray<Entry> table_;  // zero pages: resident only where orders were
    std::size_t size_ = 0;   // live orders, window and table
    std::size_t in_table_ = 0;  // live table entries
    std::size_t stale_ = 0;  // table entries of an emptied instrument not yet reused or swept
    std::size_t max_orders_;
    std::size_t sweep_at_;   // live + stale entries that force a sweep (leaves free slots)
    std::size_t min_sweep_;  // stale entries worth a sweep once the store is that full
    unsigned scope_bits_;
    std::uint64_t seed_;
    std::uint64_t probes_ = 0;
    std::vector<std::uint32_t> orders_of_;  // open orders per instrument
    std::vector<std::uint32_t> tabled_of_;  // of them, in the table (stale there once the instrument is emptied)
    std::vector<std::uint16_t> gen_;        // per instrument
    std::vector<ScopeRefs> scopes_;
    std::vector<SideLevels> sides_;         // [id * 2 + side]
    ZeroedArray<OrderLevel> arena_;  // zero pages: resident only where levels were
    // Ladders: 64, 256 or 1,024 slots each, a slot per price of the grid
    // from the side's base (price = base + tick x slot), so a level is
    // found by one multiply; carved from one pool in units of 64.
    ZeroedArray<OrderLevel> ladders_;  // zero pages too
    ZeroedArray<std::uint64_t> ladder_bits_;  // a word per unit: the bitmaps of ladders of several words (0 when free)
    std::array<std::vector<std::uint32_t>, kLadderClasses> free_ladders_;  // their first slots, by size; reserved at start-up
    std::uint32_t fresh_ladder_ = 0;           // the first unit never used
    std::uint32_t tick_;
    std::uint64_t tick_magic_;                 // ceil(2^48 / tick_)
    std::size_t arena_used_ = 0;
    std::array<std::vector<std::uint32_t>, kClasses> free_blocks_;  // by log2(cap); reserved at start-up
    // Node 0 is nil; 1 .. max_levels the tree levels. Zero pages too.
    ZeroedArray<LevelNode> nodes_;
    std::uint32_t fresh_ = 1;       // the first node never used
    std::uint32_t forest_ = 0;      // freed trees, their roots linked through `parent`
    std::size_t nodes_in_use_ = 0;  // in trees
};

static_assert(ReadableBook<OrderBook>);

}  // namespace tickgate
