// The shared pipeline's out-of-line templates, instantiated once for QFB/1's
// rules. A new protocol folder adds its own file like this one.
#include "tickgate/feed/qfb1/rules.hpp"
#include "tickgate/feed/sequencer_impl.hpp"

namespace tickgate {

template class BasicSequencer<qfb1::Rules>;

}  // namespace tickgate
