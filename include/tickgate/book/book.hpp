// What every book offers, whatever its protocol: the L2 book of QFB/1
// (l2_book.hpp), a protocol's own (MDP3's level-indexed book in its folder) and ITCH's order book with an L2
// view. The sequencer writes through SequencedBook; the gate, the summary,
// the live view and the engine read through ReadableBook. Engine thread only.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <string>
#include <vector>

#include "tickgate/event.hpp"

namespace tickgate {

struct Level {
    std::int64_t price;  // raw wire fixed-point integer
    std::uint32_t qty;
};

enum class Side : std::uint8_t { kBid = 0, kAsk = 1 };

// What applying one sequenced event did to a book.
struct BookEffect {
    bool changed = false;
    std::uint32_t dropped_levels = 0;  // levels that fell beyond the book's depth (book_overflows)
};

// Read side: levels of one side of an instrument's book, best first, as
// Level values; a view valid until the book changes.
template <class B>
concept ReadableBook = requires(const B& b, std::uint32_t id, Side s) {
    requires std::ranges::forward_range<decltype(b.side(id, s))>;
    requires std::convertible_to<std::ranges::range_value_t<decltype(b.side(id, s))>, Level>;
    { b.side(id, s).size() } -> std::convertible_to<std::size_t>;
    { b.depth() } -> std::convertible_to<std::uint32_t>;
};

// Write side, driven by the sequencer: a sequenced book event (a quote, a
// delta, or a protocol's own kinds) applied in order; an instrument emptied
// (session reset, snapshot start); a snapshot event's levels of one side
// appended, best first (append_levels: how many of them were dropped).
template <class B>
concept SequencedBook = ReadableBook<B> && requires(B& b, std::uint32_t id, Side s, const Event& ev) {
    { b.apply(id, ev) } noexcept -> std::same_as<BookEffect>;
    { b.clear(id) } noexcept;
    { b.append_levels(id, s, ev.u.levels.price, ev.u.levels.qty, std::uint32_t{}) } noexcept -> std::same_as<std::uint32_t>;
};

// A non-template handle on any ReadableBook for the cold paths (summary,
// live view, state log): copies one side's levels out. Not for the hot path.
class BookReader {
public:
    template <ReadableBook B>
    explicit BookReader(const B& book) noexcept
        : book_(&book), depth_(book.depth()), copy_([](const void* b, std::uint32_t id, Side s, std::vector<Level>& out) {
              out.clear();
              for (const Level l : static_cast<const B*>(b)->side(id, s)) out.push_back(l);
          }) {}
    // Levels of `id`'s side `s`, best first, into `out` (cleared first).
    void levels(std::uint32_t id, Side s, std::vector<Level>& out) const { copy_(book_, id, s, out); }
    [[nodiscard]] std::uint32_t depth() const noexcept { return depth_; }

private:
    const void* book_;
    std::uint32_t depth_;
    void (*copy_)(const void*, std::uint32_t, Side, std::vector<Level>&);
};

}  // namespace tickgate
