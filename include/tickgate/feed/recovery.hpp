// A protocol's recovery service, driven by the live handlers on their duty
// cycle (P::Recovery; a protocol without one gets NoRecovery). The shape:
//   Recovery(const Config&, std::span<const std::unique_ptr<LineStats>> lines)   start-up
//   before(instruments, ev), on_update(update, ev)   engine thread, per event, around the sequencer
//   refresh(instruments)                             engine thread, after a batch of events
//   steer(Receiver&)                                 receiving thread, once per loop iteration
// No allocation after construction, no lock; what crosses threads is the
// service's own atomics.
#pragma once

#include <memory>
#include <span>
#include <type_traits>

#include "tickgate/event.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/sequencer.hpp"

namespace tickgate {

template <class R>
concept RecoveryService =
    std::is_constructible_v<R, const Config&, std::span<const std::unique_ptr<LineStats>>> &&
    requires(R& r, const InstrumentTable& t, const Event& ev, const Update& u, Receiver& rx) {
        { r.before(t, ev) } noexcept;
        { r.on_update(u, ev) } noexcept;
        { r.refresh(t) } noexcept;
        { r.steer(rx) } noexcept;
    };

// What a protocol whose only recovery is in its own stream (snapshots,
// full quotes) runs: nothing.
struct NoRecovery {
    NoRecovery(const Config&, std::span<const std::unique_ptr<LineStats>>) noexcept {}
    void before(const InstrumentTable&, const Event&) noexcept {}
    void on_update(const Update&, const Event&) noexcept {}
    void refresh(const InstrumentTable&) noexcept {}
    void steer(Receiver&) noexcept {}
};

namespace detail {
template <class P>
struct RecoveryOf {
    using type = NoRecovery;
};
template <class P>
    requires requires { typename P::Recovery; }
struct RecoveryOf<P> {
    using type = typename P::Recovery;
};
}  // namespace detail

// P's recovery service: P::Recovery, or NoRecovery when it has none.
template <class P>
using RecoveryOf = typename detail::RecoveryOf<P>::type;

static_assert(RecoveryService<NoRecovery>);

}  // namespace tickgate
