#include "tickgate/book/gate.hpp"

namespace tickgate {

std::string_view to_string(GateReason r) noexcept {
    switch (r) {
        case GateReason::kOk: return "ok";
        case GateReason::kUnknown: return "unknown";
        case GateReason::kStale: return "stale";
        case GateReason::kStaleAtSource: return "stale_at_source";
        case GateReason::kSuspect: return "suspect";
        case GateReason::kNotSubscribed: return "not_subscribed";
    }
    return "unknown";
}

}  // namespace tickgate
