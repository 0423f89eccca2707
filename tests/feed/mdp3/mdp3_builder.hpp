// The tests build MDP 3.0 datagrams with the library's packet builder
// (feed/mdp3/packet_builder.hpp), which writes each field in schema order
// without wire.hpp's offsets: a wrong offset there fails the tests.
#pragma once

#include "tickgate/feed/mdp3/packet_builder.hpp"

namespace tickgate::mdp3::test {
using namespace tickgate::mdp3::build;  // NOLINT: the tests' short names
}  // namespace tickgate::mdp3::test
