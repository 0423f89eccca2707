// The single-threaded pipeline of one protocol: datagram bytes -> key (read
// once) -> channel session -> P's decoder -> sequencer -> book, and the gate
// over the instrument table. Used directly by offline replay, tests and
// benchmarks. Not thread-safe; no allocation after construction.
#pragma once

#include <span>

#include "tickgate/book/gate.hpp"
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/engine_api.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate {

template <VenueProtocol P, SequencedBook Book = typename P::Book>
class BasicHandler : public EngineApi<BasicHandler<P, Book>> {
    friend class EngineApi<BasicHandler>;

public:
    using Protocol = P;
    using Key = typename P::Key;

    // Any channel id is tracked on first sight (offline: the caller filters lines).
    BasicHandler(const Capacity& capacity, const GateConfig& gate)
        : instruments_(capacity.max_instruments),
          book_(capacity.max_instruments, capacity.book_depth),
          sequencer_(instruments_, book_, capacity),
          gate_(instruments_, gate),
          gate_config_(gate) {}
    // The same with the config's book keys (make_book: ITCH's order store)
    // and gate, and `capacity` (capacity_for<P>(cfg), or what a replay sized).
    BasicHandler(const Config& cfg, const Capacity& capacity)
        : instruments_(capacity.max_instruments),
          book_(make_book<Book>(cfg, capacity)),
          sequencer_(instruments_, book_, capacity),
          gate_(instruments_, cfg.gate),
          gate_config_(cfg.gate) {}
    BasicHandler(const BasicHandler&) = delete;
    BasicHandler& operator=(const BasicHandler&) = delete;

    // Decodes one datagram and applies its events; `on_update(const Update&)`
    // is called for every event (inlined; no std::function). The sink is
    // forced inline: each decoder site then applies its own kind (sequencer.hpp).
    template <class OnUpdate>
    DecodeResult on_datagram(std::span<const std::byte> datagram, std::int64_t recv_ns, std::uint8_t line,
                             OnUpdate&& on_update) noexcept {
        return decoder_.decode(datagram, recv_ns, line, [&](const Event& ev) __attribute__((always_inline)) {
            const Update u = sequencer_.apply_inlined(ev);
            if (sequencer_.delivers(u)) on_update(u);
        });
    }
    DecodeResult on_datagram(std::span<const std::byte> datagram, std::int64_t recv_ns,
                             std::uint8_t line = 0xFF) noexcept {
        return on_datagram(datagram, recv_ns, line, [](const Update&) {});
    }
    // Applies one decoded event (from a decoder of the caller's, or a test).
    Update apply(const Event& ev) noexcept { return sequencer_.apply(ev); }
    // The same as on_datagram for a datagram whose key was read and observed
    // (by streams()) already: offline replay's path (LineFront).
    DecodeResult on_packet(std::span<const std::byte> datagram, const Key& key, SessionMark mark,
                           std::int64_t recv_ns, std::uint8_t line) noexcept {
        return decoder_.decode(datagram, key, mark, recv_ns, line,
                               [&](const Event& ev) __attribute__((always_inline)) { (void)sequencer_.apply_inlined(ev); });
    }

    // The same for a datagram of a line outside arbitration (HasUnarbitratedLines: MDP3's snapshot and definition lines).
    DecodeResult on_unarbitrated_packet(std::span<const std::byte> datagram, const Key& key, std::int64_t recv_ns,
                                        std::uint8_t line) noexcept
        requires HasUnarbitratedLines<P>
    {
        return decoder_.decode_unarbitrated(datagram, key, recv_ns, line,
                                            [&](const Event& ev) { (void)sequencer_.apply(ev); });
    }

    [[nodiscard]] SessionDecoder<P>& decoder() noexcept { return decoder_; }
    [[nodiscard]] const SessionDecoder<P>& decoder() const noexcept { return decoder_; }
    [[nodiscard]] ChannelStreams<P>& streams() noexcept { return decoder_.streams(); }
    // The protocol's own decoder (its own figures: MDP3's channels and SecurityIDs).
    [[nodiscard]] const typename P::Decoder& protocol_decoder() const noexcept { return decoder_.protocol_decoder(); }
    [[nodiscard]] BasicSequencer<typename P::Rules, Book>& sequencer() noexcept { return sequencer_; }
    [[nodiscard]] const BasicSequencer<typename P::Rules, Book>& sequencer() const noexcept { return sequencer_; }
    [[nodiscard]] InstrumentTable& instruments() noexcept { return instruments_; }
    [[nodiscard]] const InstrumentTable& instruments() const noexcept { return instruments_; }
    [[nodiscard]] const Book& book() const noexcept { return book_; }
    // Start-up only (configure_book in config.hpp).
    [[nodiscard]] Book& book() noexcept { return book_; }
    [[nodiscard]] const Gate& gate() const noexcept { return gate_; }
    [[nodiscard]] const GateConfig& gate_config() const noexcept { return gate_config_; }

private:
    SessionDecoder<P> decoder_;
    InstrumentTable instruments_;
    Book book_;
    BasicSequencer<typename P::Rules, Book> sequencer_;
    Gate gate_;
    GateConfig gate_config_;
};

// The reference venue's handler (protocols.hpp: QFB/1).
using Handler = BasicHandler<ReferenceProtocol>;

}  // namespace tickgate
