#include "tickgate/book/l2_book.hpp"

#include <stdexcept>

namespace tickgate {

L2Book::L2Book(std::uint32_t instruments, std::uint32_t depth)
    : depth_(depth),
      stride_((depth + 7) / 8 * 8),
      slots_(std::size_t{instruments} * 2 * stride_, detail::BookSlot{kEmptyKey, 0}),
      counts_(std::size_t{instruments} * 2, 0) {
    if (depth == 0) throw std::invalid_argument("L2Book: depth must be > 0");
}

}  // namespace tickgate
