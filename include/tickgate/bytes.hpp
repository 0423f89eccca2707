// The one byte-buffer type of the cold path: a datagram or a message as the
// packet builders write it and the simulators hold it. Allocates: never on
// the hot path (which reads std::span<const std::byte> views).
#pragma once

#include <cstddef>
#include <vector>

namespace tickgate {

using Bytes = std::vector<std::byte>;

}  // namespace tickgate
