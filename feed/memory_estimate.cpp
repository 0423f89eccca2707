// How much memory a config makes the live handler allocate, from the sizes
// the constructors themselves report (each class's bytes_for/…_bytes sits
// next to the allocation it describes, so the two cannot drift apart
// unnoticed by a reader): reserved (every table full) and resident at
// start-up (what is written before the first datagram; ZeroedArray tables
// are not). config.cpp refuses a config whose reserved figure is above
// capacity.max_memory_mb; `tickgate config check` prints both.
#include <unistd.h>

#include <algorithm>
#include <tuple>

#include "tickgate/book/l2_book.hpp"
#include "tickgate/book/order_book.hpp"
#include "tickgate/fanout/conflating_ring.hpp"
#include "tickgate/fanout/publisher.hpp"
#include "tickgate/fanout/source.hpp"
#include "tickgate/feed/af_xdp.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/itch50/replay.hpp"
#include "tickgate/feed/itch50/rules.hpp"
#include "tickgate/feed/itch50/snapshot.hpp"
#include "tickgate/feed/metrics.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/ring_publisher.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/spsc_ring.hpp"
#include "tickgate/feed/state_log.hpp"

namespace tickgate {

std::uint64_t default_max_memory_mb() noexcept {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return 4096;
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size) / 2 >> 20);
}

const MemoryPart& MemoryEstimate::largest() const {
    return *std::max_element(parts.begin(), parts.end(),
                             [](const MemoryPart& a, const MemoryPart& b) { return a.bytes < b.bytes; });
}

namespace {
// AF_XDP's UMEM (receiver.backend = "af_xdp"): pinned and written by the
// kernel as frames come, so reserved and resident alike.
void add_receive_backend(MemoryEstimate& e, const Config& c) {
    if (c.receiver.backend != ReceiveBackend::kAfXdp) return;
    const std::size_t umem = XdpPort::umem_bytes(c.receiver.af_xdp);
    e.parts.push_back({"AF_XDP UMEM", {"receiver.af_xdp.frames", "receiver.af_xdp.queues"}, umem, umem});
}

// [fanout] (`run --fanout`): the engine's hand-off cells and id ring, what
// it last offered per instrument, the publisher thread's sequence numbers
// and subjects. Counted when the config has the table.
void add_fanout(MemoryEstimate& e, const Config& c, std::uint32_t n) {  // n: the handler's instrument ids
    if (!c.fanout.configured) return;
    const std::size_t bytes = fanout::ConflatingRing::bytes_for(n, c.fanout.depth) +
                              fanout::source_bytes_for(n) + std::size_t{n} * fanout::Publisher::kPerInstrumentBytes;
    e.parts.push_back({"fan-out", {"fanout.depth", "capacity.max_instruments"}, bytes, bytes});
}

void add_up(MemoryEstimate& e) {
    for (const MemoryPart& p : e.parts) {
        e.total_bytes += p.bytes;
        e.resident_bytes += p.resident_bytes;
    }
}

}  // namespace

// ITCH 5.0 (replay, and live the shared pipelines): the order store and
// levels, the MoldUDP64 held-packet pool (one receive-slot-sized copy per
// packet), the instrument table, the metrics' double buffer and the state
// log's bitmap, and live the receive batch, the two-thread pipeline's event
// ring, the GLIMPSE snapshot buffer and storage, and the fan-out.

MemoryEstimate estimate_itch_memory(const Config& c, std::uint32_t id_channels) {
    constexpr std::size_t kHeldSlotBytes = 2048 + 32;  // a receive slot and its bookkeeping
    const std::uint32_t ids = itch50::instrument_ids(id_channels);  // 65,536 ids per channel
    const std::size_t lines = 2 * c.channels.size();
    const std::size_t held = std::size_t{c.moldudp64.max_held_packets} * kHeldSlotBytes;
    const MetricsOptions metrics{.instruments = c.metrics.instruments, .channels = c.channels.size()};
    const std::size_t per_instrument =
        InstrumentTable::bytes_for(ids) + MetricsRegistry::bytes_for(ids, lines, c.channels.size(), metrics) +
        LatencyHistograms::bytes_for(c.channels.size()) + (std::size_t{ids} + 63) / 64 * 8 +
        itch50::Rules::State::bytes_for(ids, c.channels.empty() ? itch50::kMaxUnconfiguredChannels
                                                                : static_cast<std::uint32_t>(c.channels.size()));
    const bool live = !c.channels.empty();  // a config a live run can take (a replay allocates less)
    const std::size_t receiver =
        Receiver::batch_bytes(c) + StateLogOptions{}.ring_capacity * sizeof(StateChange);
    const std::size_t ring = live && c.threading.pipeline != PipelineMode::kInline
                                 ? SpscRing<Event>::bytes_for(c.receiver.ring_size)
                                 : 0;
    MemoryEstimate e;
    e.parts = {
        // The order table, level arena and level pool are zero pages (ZeroedArray):
        // resident as orders and levels come, up to the reserved figure.
        {"order books", {"itch.max_orders", "itch.max_levels"},
         itch50::Book::bytes_for(ids, c.itch.max_orders, c.itch.max_levels), itch50::Book::resident_bytes_for(ids)},
        {"held packets", {"moldudp64.max_held_packets"}, held, held},
        {"per-instrument state", {}, per_instrument, per_instrument},
        {"receiver", {"receiver.batch"}, receiver, receiver},
        {"event ring", {"receiver.ring_size"}, ring, ring},
    };
    // GLIMPSE (live, channels with `glimpse`): the snapshot buffer and the
    // storage a spin is built into, both zero pages until a snapshot loads.
    if (c.any_glimpse()) {
        e.parts.push_back({"snapshot buffer", {"glimpse.buffer_mb"}, std::size_t{c.glimpse.buffer_mb} << 20, 0});
        e.parts.push_back({"snapshot storage", {"itch.max_orders"}, itch50::SnapshotStorage::bytes_for(c.itch.max_orders), 0});
    }
    add_receive_backend(e, c);
    if (live) add_fanout(e, c, ids);
    add_up(e);
    return e;
}

MemoryEstimate estimate_memory(const Config& c) { return estimate_memory(c, c.protocol()); }

MemoryEstimate estimate_memory(const Config& c, std::string_view protocol) {
    if (protocol == itch50::Protocol::kName) return estimate_itch_memory(c, static_cast<std::uint32_t>(c.channels.size()));
    const Capacity& cap = c.capacity;
    const auto channels = static_cast<std::uint32_t>(c.channels.size());
    const std::size_t lines = 2 * std::size_t{channels};
    const StateLogOptions log_defaults;  // what `tickgate run` gives its state log, apart from max_instruments
    // The book and the network-thread pipeline are the protocol's.
    struct Own {
        std::size_t book, publisher, decoder = 0, decoder_resident = 0;
    };
    const Own own = with_protocol(protocol, [&]<VenueProtocol P>() {
        Own o{book_bytes<typename P::Book>(c, capacity_for<P>(c)), RingPublisher<P>::bytes_for(0, c)};
        // A decoder with tables of its own (MDP3: instrument slots, stored definitions, channel table).
        if constexpr (requires { P::decoder_bytes(c); }) std::tie(o.decoder, o.decoder_resident) = P::decoder_bytes(c);
        return o;
    });
    const std::size_t book_bytes = own.book, publisher_bytes = own.publisher;
    const std::size_t ring =
        c.threading.pipeline == PipelineMode::kInline ? 0 : SpscRing<Event>::bytes_for(c.receiver.ring_size);
    const std::size_t per_instrument =
        InstrumentTable::bytes_for(cap.max_instruments) + 2 * sizeof(std::uint32_t) * std::size_t{cap.max_instruments} +
        MetricsRegistry::bytes_for(cap.max_instruments, lines, 0,
                                   {.instruments = c.metrics.instruments, .channels = channels}) +
        LatencyHistograms::bytes_for(channels) +
        (std::size_t{cap.max_instruments} + 63) / 64 * 8;
    const std::size_t receiver =
        publisher_bytes + Receiver::batch_bytes(c) + log_defaults.ring_capacity * sizeof(StateChange);
    MemoryEstimate e;
    e.parts = {
        {"books", {"capacity.max_instruments", "capacity.book_depth"}, book_bytes, book_bytes},
        // The recovery events are zero pages (ZeroedArray): resident only
        // for the instruments that were suspect at once.
        {"recovery pool",
         {"capacity.recovery_instruments", "capacity.recovery_depth"},
         recovery_pool_bytes(cap),
         recovery_pool_resident_bytes(cap)},
        // The inline pipeline has no ring (BasicInlineFeedHandler).
        {"event ring", {"receiver.ring_size"}, ring, ring},
        // The instrument table, the ring publisher's owed-DataLost flags, the
        // metrics double buffer and the state log's was-suspect bitmap.
        {"per-instrument state", {"capacity.max_instruments"}, per_instrument, per_instrument},
        // Arbiter windows, the channel table, packet scratch (the
        // per-instrument flags are counted above), receive batch, state log ring.
        {"receiver and arbiter", {"receiver.arbitration_window", "receiver.batch"}, receiver, receiver},
    };
    if (own.decoder != 0)
        e.parts.push_back({"decoder tables", {"mdp3.max_definitions", "capacity.max_instruments"}, own.decoder,
                           own.decoder_resident});
    add_receive_backend(e, c);
    add_fanout(e, c, cap.max_instruments);
    add_up(e);
    return e;
}

}  // namespace tickgate
