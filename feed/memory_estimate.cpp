// How much memory a config makes the live handler allocate, from the sizes
// the constructors themselves report (each class's bytes_for/…_bytes sits
// next to the allocation it describes, so the two cannot drift apart
// unnoticed by a reader): reserved (every table full) and resident at
// start-up (what is written before the first datagram; ZeroedArray tables
// are not). config.cpp refuses a config whose reserved figure is above
// capacity.max_memory_mb; `tickgate config check` prints both.
#include <unistd.h>

#include <algorithm>

#include "tickgate/book/l2_book.hpp"
#include "tickgate/book/order_book.hpp"
#include "tickgate/fanout/conflating_ring.hpp"
#include "tickgate/fanout/publisher.hpp"
#include "tickgate/fanout/source.hpp"
#include "tickgate/feed/af_xdp.hpp"
#include "tickgate/feed/config.hpp"
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

// AF_XDP's UMEM (receiver.backend = "af_xdp"): pinned and written by the
// kernel as frames come, so reserved and resident alike.
void add_af_xdp_memory(MemoryEstimate& e, const Config& c) {
    if (c.receiver.backend != ReceiveBackend::kAfXdp) return;
    const std::size_t umem = XdpPort::umem_bytes(c.receiver.af_xdp);
    e.parts.push_back({"AF_XDP UMEM", {"receiver.af_xdp.frames", "receiver.af_xdp.queues"}, umem, umem});
}

// [fanout] (`run --fanout`): the engine's hand-off cells and id ring, what
// it last offered per instrument, the publisher thread's sequence numbers
// and subjects. Counted when the config has the table.
void add_fanout_memory(MemoryEstimate& e, const Config& c, std::uint32_t instrument_ids) {
    if (!c.fanout.configured) return;
    const std::size_t bytes = fanout::ConflatingRing::bytes_for(instrument_ids, c.fanout.depth) +
                              fanout::source_bytes_for(instrument_ids) +
                              std::size_t{instrument_ids} * fanout::Publisher::kPerInstrumentBytes;
    e.parts.push_back({"fan-out", {"fanout.depth", "capacity.max_instruments"}, bytes, bytes});
}

void MemoryEstimate::add_up() noexcept {
    total_bytes = resident_bytes = 0;
    for (const MemoryPart& p : parts) {
        total_bytes += p.bytes;
        resident_bytes += p.resident_bytes;
    }
}

namespace {

// The shared pipelines' figure for protocol P (one with an estimate of its
// own, P::estimate_memory, gives that instead).
template <VenueProtocol P>
MemoryEstimate shared_estimate(const Config& c) {
    const Capacity& cap = c.capacity;
    const auto channels = static_cast<std::uint32_t>(c.channels.size());
    const std::size_t lines = 2 * std::size_t{channels};
    const StateLogOptions log_defaults;  // what `tickgate run` gives its state log, apart from max_instruments
    // The book and the network-thread pipeline are the protocol's.
    const std::size_t book_bytes = tickgate::book_bytes<typename P::Book>(c, capacity_for<P>(c));
    const std::size_t publisher_bytes = RingPublisher<P>::bytes_for(0, c);
    const std::size_t ring =
        c.threading.pipeline == PipelineMode::kInline ? 0 : SpscRing<Event>::bytes_for(c.receiver.ring_size);
    const std::size_t per_instrument =
        InstrumentTable::bytes_for(cap.max_instruments) + 2 * sizeof(std::uint32_t) * std::size_t{cap.max_instruments} +
        MetricsRegistry::bytes_for(cap.max_instruments, lines, metrics_options<P>(c)) +
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
    // A decoder with tables of its own (MDP3: instrument slots, stored definitions, channel table).
    if constexpr (requires { P::decoder_memory(c); }) e.parts.push_back(P::decoder_memory(c));
    add_af_xdp_memory(e, c);
    add_fanout_memory(e, c, cap.max_instruments);
    e.add_up();
    return e;
}

}  // namespace

MemoryEstimate estimate_memory(const Config& c, std::string_view protocol) {
    return with_protocol(protocol, [&]<VenueProtocol P>() -> MemoryEstimate {
        if constexpr (requires { P::estimate_memory(c); }) return P::estimate_memory(c);
        else return shared_estimate<P>(c);
    });
}

MemoryEstimate estimate_memory(const Config& c) { return estimate_memory(c, c.protocol()); }

}  // namespace tickgate
