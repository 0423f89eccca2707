// The level-indexed book of MDP 3.0 (shared/spec/MDP3.md "Per instrument"):
// per instrument and side, slots 1..depth addressed by MDPriceLevel, not by
// price. New / Change / Delete / DeleteThru / DeleteFrom / Overlay, `J`
// empties both sides; a slot may be *padded* (empty, not published, not
// existing for the rules) when an entry lands past the last existing level.
// A SequencedBook (book.hpp): the gate, the summary and the live view read
// it like any book. Capacity fixed at start-up; engine thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "tickgate/book/book.hpp"
#include "tickgate/event.hpp"
#include "tickgate/feed/mdp3/event.hpp"

namespace tickgate::mdp3 {

namespace detail {
struct IndexedSlot {
    std::int64_t price;
    std::uint32_t qty;
    bool exists;  // false: padded
};
// What every entry of an instrument reads besides its slot, on one line.
// (Kept as three arrays, extents, live counts and depths, an entry touched
// three more lines, and 127 instruments' books did not stay in L1.)
struct alignas(32) IndexedHead {
    std::uint32_t depth;      // levels the instrument publishes (set_depth)
    std::uint32_t extent[2];  // per side: slots in use, padded ones included
    std::uint32_t live[2];    // per side: existing levels
};
}  // namespace detail

// One side of an instrument's indexed book, best first, existing levels only.
class IndexedSide {
public:
    class iterator {
    public:
        using value_type = Level;
        using difference_type = std::ptrdiff_t;
        iterator() = default;
        iterator(const detail::IndexedSlot* slot, const detail::IndexedSlot* end) noexcept : slot_(slot), end_(end) { skip(); }
        Level operator*() const noexcept { return {slot_->price, slot_->qty}; }
        iterator& operator++() noexcept {
            ++slot_;
            skip();
            return *this;
        }
        iterator operator++(int) noexcept {
            iterator t = *this;
            ++*this;
            return t;
        }
        bool operator==(const iterator& o) const noexcept { return slot_ == o.slot_; }

    private:
        void skip() noexcept {
            while (slot_ != end_ && !slot_->exists) ++slot_;
        }
        const detail::IndexedSlot* slot_ = nullptr;
        const detail::IndexedSlot* end_ = nullptr;
    };

    IndexedSide(const detail::IndexedSlot* slots, std::uint32_t extent, std::uint32_t live) noexcept
        : slots_(slots), extent_(extent), live_(live) {}
    [[nodiscard]] std::size_t size() const noexcept { return live_; }
    [[nodiscard]] bool empty() const noexcept { return live_ == 0; }
    [[nodiscard]] iterator begin() const noexcept { return {slots_, slots_ + extent_}; }
    [[nodiscard]] iterator end() const noexcept { return {slots_ + extent_, slots_ + extent_}; }

private:
    const detail::IndexedSlot* slots_;
    std::uint32_t extent_;  // slots in use, padded ones included
    std::uint32_t live_;    // existing levels
};
static_assert(std::forward_iterator<IndexedSide::iterator>);

// MDUpdateAction values (MDP3.md table).
enum class UpdateAction : std::uint8_t { kNew = 0, kChange, kDelete, kDeleteThru, kDeleteFrom, kOverlay };

class IndexedBook {
public:
    // MDP3.md: an instrument without a definition's depth has 10 levels.
    static constexpr std::uint32_t kDefaultDepth = 10;

    // MDPriceLevel is one byte: no book is deeper.
    static constexpr std::uint32_t kMaxDepth = 255;

    // Books for instrument ids [0, instruments), at most `depth` levels per
    // side (capped at kMaxDepth), each min(kDefaultDepth, depth) until
    // set_depth; throws std::invalid_argument for 0 instruments or depth 0.
    IndexedBook(std::uint32_t instruments, std::uint32_t depth)
        : max_depth_(depth < kMaxDepth ? depth : kMaxDepth),
          default_depth_(depth < kDefaultDepth ? depth : kDefaultDepth),
          slots_(std::size_t{instruments} * 2 * max_depth_),
          heads_(instruments, detail::IndexedHead{default_depth_, {0, 0}, {0, 0}}),
          errors_(instruments) {
        if (instruments == 0 || depth == 0) throw std::invalid_argument("indexed book: instruments and depth must be > 0");
    }
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t instruments, std::uint32_t depth) noexcept {
        if (depth > kMaxDepth) depth = kMaxDepth;
        return std::size_t{instruments} *
               (2 * std::size_t{depth} * sizeof(detail::IndexedSlot) + sizeof(detail::IndexedHead) + sizeof(std::uint64_t));
    }

    // The deepest book any instrument may have (the constructor's depth).
    [[nodiscard]] std::uint32_t depth() const noexcept { return max_depth_; }
    // `id`'s depth from its definition (0: the default), capped at depth();
    // a book already deeper keeps its levels (MDP3.md: no trim).
    void set_depth(std::uint32_t id, std::uint32_t depth) noexcept {
        heads_[id].depth = depth == 0 ? default_depth_ : (depth < max_depth_ ? depth : max_depth_);
    }
    [[nodiscard]] std::uint32_t depth_of(std::uint32_t id) const noexcept { return heads_[id].depth; }
    // Start-up only ([mdp3] book_depth): the depth of every instrument whose
    // definition gives none, capped at depth().
    void set_default_depth(std::uint32_t depth) noexcept {
        default_depth_ = depth == 0 ? default_depth_ : (depth < max_depth_ ? depth : max_depth_);
        for (detail::IndexedHead& h : heads_) h.depth = default_depth_;
    }
    // Entries counted against MDP3.md's table (book_errors).
    [[nodiscard]] std::uint64_t book_errors(std::uint32_t id) const noexcept { return errors_[id]; }
    void reset_book_errors(std::uint32_t id) noexcept { errors_[id] = 0; }

    [[nodiscard]] IndexedSide side(std::uint32_t id, Side s) const noexcept {
        const std::size_t k = slot(id, s);
        const detail::IndexedHead& h = heads_[id];
        return {slots_.data() + k * max_depth_, h.extent[side_index(s)], h.live[side_index(s)]};
    }

    void clear(std::uint32_t id) noexcept {
        clear_side(id, Side::kBid);
        clear_side(id, Side::kAsk);
    }

    // A sequenced MDP3 book entry (kLevelEntry); other kinds and entry types
    // (implied, statistics) leave the book alone.
    [[gnu::always_inline]] BookEffect apply(std::uint32_t id, const Event& ev) noexcept {
        if (ev.kind != kLevelEntry) return {};
        const EntryFields e = entry_fields(ev);
        const char type = e.entry_type;
        if (type == 'J') {
            clear(id);
            return {true, 0};
        }
        if (type != '0' && type != '1') return {};
        const Side s = type == '0' ? Side::kBid : Side::kAsk;
        const std::uint32_t qty = e.qty > 0 ? static_cast<std::uint32_t>(e.qty) : 0u;
        return {update(id, s, static_cast<UpdateAction>(e.action), e.level, e.price, qty), 0};
    }

    // One entry on one side by MDP3.md's table; false when it changed nothing.
    bool update(std::uint32_t id, Side s, UpdateAction action, std::uint32_t level, std::int64_t price,
                std::uint32_t qty) noexcept {
        if (action == UpdateAction::kDeleteThru) {
            clear_side(id, s);
            return true;
        }
        detail::IndexedHead& h = heads_[id];
        const std::uint32_t depth = h.depth;
        if (level < 1 || level > depth) {
            ++errors_[id];
            return false;
        }
        detail::IndexedSlot* lv = slots_.data() + slot(id, s) * max_depth_;
        std::uint32_t& n = h.extent[side_index(s)];
        std::uint32_t& live = h.live[side_index(s)];
        const std::uint32_t i = level - 1;
        switch (action) {
            case UpdateAction::kNew: {
                // Slots L.. shift one down; the one pushed past the depth (or
                // past the array when the book is deeper than a lowered depth) falls off.
                const std::uint32_t limit = n > depth ? n : depth;
                if (i >= n) {
                    pad(lv, n, i);
                    n = i + 1;
                } else {
                    if (n == limit) {
                        live -= lv[n - 1].exists;
                        --n;
                    }
                    for (std::uint32_t j = n; j > i; --j) lv[j] = lv[j - 1];
                    ++n;
                }
                lv[i] = {price, qty, true};
                ++live;
                trim(lv, n);
                return true;
            }
            case UpdateAction::kChange:
            case UpdateAction::kOverlay:
                if (i >= n || !lv[i].exists) {
                    ++errors_[id];
                    if (i >= n) {
                        pad(lv, n, i);
                        n = i + 1;
                    }
                    ++live;
                }
                lv[i] = {price, qty, true};
                return true;
            case UpdateAction::kDelete:
                if (i >= n || !lv[i].exists) {
                    ++errors_[id];
                    return false;
                }
                for (std::uint32_t j = i + 1; j < n; ++j) lv[j - 1] = lv[j];
                --n;
                --live;
                trim(lv, n);
                return true;
            case UpdateAction::kDeleteFrom: {
                const std::uint32_t gone = level < n ? level : n;
                for (std::uint32_t j = 0; j < gone; ++j) live -= lv[j].exists;
                for (std::uint32_t j = gone; j < n; ++j) lv[j - gone] = lv[j];
                n -= gone;
                trim(lv, n);
                return gone != 0;
            }
            default:  // an action the table does not have
                ++errors_[id];
                return false;
        }
    }

    // Appends a snapshot level below the existing ones (best first); a level
    // past the instrument's depth is dropped, not counted (MDP3.md "Snapshot").
    bool append_level(std::uint32_t id, Side s, std::int64_t price, std::uint32_t qty) noexcept {
        detail::IndexedHead& h = heads_[id];
        std::uint32_t& n = h.extent[side_index(s)];
        if (n >= h.depth) return true;
        slots_[slot(id, s) * max_depth_ + n] = {price, qty, true};
        ++n;
        ++h.live[side_index(s)];
        return true;
    }
    // SequencedBook: a snapshot event's levels of one side; none counted dropped (above).
    std::uint32_t append_levels(std::uint32_t id, Side s, const std::int64_t* price, const std::uint32_t* qty,
                                std::uint32_t count) noexcept {
        for (std::uint32_t j = 0; j < count; ++j) (void)append_level(id, s, price[j], qty[j]);
        return 0;
    }

private:
    [[nodiscard]] static std::size_t side_index(Side s) noexcept { return static_cast<std::size_t>(s); }
    [[nodiscard]] static std::size_t slot(std::uint32_t id, Side s) noexcept { return std::size_t{id} * 2 + side_index(s); }
    static void pad(detail::IndexedSlot* lv, std::uint32_t from, std::uint32_t to) noexcept {
        for (std::uint32_t j = from; j < to; ++j) lv[j] = {0, 0, false};
    }
    // Padded slots below the last existing level are nothing: drop them.
    static void trim(const detail::IndexedSlot* lv, std::uint32_t& n) noexcept {
        while (n > 0 && !lv[n - 1].exists) --n;
    }
    void clear_side(std::uint32_t id, Side s) noexcept {
        heads_[id].extent[side_index(s)] = 0;
        heads_[id].live[side_index(s)] = 0;
    }

    std::uint32_t max_depth_;
    std::uint32_t default_depth_;
    std::vector<detail::IndexedSlot> slots_;  // [instrument][side][max_depth]
    std::vector<detail::IndexedHead> heads_;  // [instrument]
    std::vector<std::uint64_t> errors_;       // [instrument]: book_errors
};

static_assert(SequencedBook<IndexedBook>);

}  // namespace tickgate::mdp3
