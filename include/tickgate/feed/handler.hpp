// The single-threaded pipeline: datagram bytes -> PacketDecoder -> Sequencer
// (+ books) -> Gate. Used directly by offline replay and by the live engine
// thread. Not thread-safe; no allocation after construction.
#pragma once

#include <span>

#include "tickgate/book/gate.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/feed/qfb1/wire.hpp"

namespace tickgate {

class Handler {
public:
    Handler(const Capacity& capacity, const GateConfig& gate)
        : sequencer_(capacity), gate_(sequencer_, gate), gate_config_(gate) {}
    Handler(const Handler&) = delete;
    Handler& operator=(const Handler&) = delete;

    // Decodes one datagram and applies its events; `on_update(const Update&)`
    // is called for every event (inlined; no std::function).
    template <class OnUpdate>
    wire::DecodeResult on_datagram(std::span<const std::byte> datagram, std::int64_t recv_ns,
                                   std::uint8_t line, OnUpdate&& on_update) noexcept {
        return decoder_.decode(datagram, recv_ns, line,
                               [&](const Event& ev) { on_update(sequencer_.apply(ev)); });
    }
    wire::DecodeResult on_datagram(std::span<const std::byte> datagram, std::int64_t recv_ns,
                                   std::uint8_t line = 0xFF) noexcept {
        return on_datagram(datagram, recv_ns, line, [](const Update&) {});
    }

    [[nodiscard]] wire::PacketDecoder& decoder() noexcept { return decoder_; }
    [[nodiscard]] const wire::PacketDecoder& decoder() const noexcept { return decoder_; }
    [[nodiscard]] Sequencer& sequencer() noexcept { return sequencer_; }
    [[nodiscard]] const Sequencer& sequencer() const noexcept { return sequencer_; }
    [[nodiscard]] const Gate& gate() const noexcept { return gate_; }
    [[nodiscard]] const GateConfig& gate_config() const noexcept { return gate_config_; }

private:
    wire::PacketDecoder decoder_;
    Sequencer sequencer_;
    Gate gate_;
    GateConfig gate_config_;
};

}  // namespace tickgate
