// The shared pipeline's out-of-line templates, instantiated once for MDP3's
// level-indexed book (MDP3's rules are selected in the sequencer at compile time).
#include "tickgate/book/indexed_book.hpp"
#include "tickgate/feed/sequencer_impl.hpp"

namespace tickgate {

template class BasicSequencer<IndexedBook>;

}  // namespace tickgate
