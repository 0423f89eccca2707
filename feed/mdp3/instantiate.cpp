// The shared pipeline's out-of-line templates, instantiated once for MDP3's rules.
#include "tickgate/feed/mdp3/rules.hpp"
#include "tickgate/feed/sequencer_impl.hpp"

namespace tickgate {

template class BasicSequencer<mdp3::Rules>;

}  // namespace tickgate
