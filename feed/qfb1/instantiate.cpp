// The shared pipeline's out-of-line templates, instantiated once for QFB/1's
// types. A new protocol folder adds its own file like this one.
#include "tickgate/book/l2_book.hpp"
#include "tickgate/feed/sequencer_impl.hpp"

namespace tickgate {

template class BasicSequencer<L2Book>;

}  // namespace tickgate
