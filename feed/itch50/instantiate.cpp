// The shared pipeline's out-of-line templates, instantiated once for ITCH 5.0's rules.
#include "tickgate/feed/itch50/rules.hpp"
#include "tickgate/feed/sequencer_impl.hpp"

namespace tickgate {

template class BasicSequencer<itch50::Rules>;

}  // namespace tickgate
