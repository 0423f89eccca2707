// ITCH 5.0's memory estimate (config.hpp's estimate_memory for itch50, and
// a channel-less replay's check before it allocates): from the sizes the
// constructors themselves report, as feed/memory_estimate.cpp does for the
// shared pipelines.
#include "tickgate/feed/itch50/protocol.hpp"
#include "tickgate/feed/itch50/replay.hpp"
#include "tickgate/feed/itch50/snapshot.hpp"
#include "tickgate/feed/metrics.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/state_log.hpp"
#include "tickgate/spsc_ring.hpp"

namespace tickgate::itch50 {

MemoryEstimate estimate_memory(const Config& c, std::uint32_t id_channels) {
    constexpr std::size_t kHeldSlotBytes = 2048 + 32;  // a receive slot and its bookkeeping
    const std::uint32_t ids = instrument_ids(id_channels);  // 65,536 ids per channel
    const std::size_t lines = 2 * c.channels.size();
    const std::size_t held = std::size_t{c.moldudp64.max_held_packets} * kHeldSlotBytes;
    const MetricsOptions metrics = metrics_options<Protocol>(c);
    const std::size_t per_instrument =
        InstrumentTable::bytes_for(ids) + MetricsRegistry::bytes_for(ids, lines, metrics) +
        LatencyHistograms::bytes_for(c.channels.size()) + (std::size_t{ids} + 63) / 64 * 8 +
        Rules::State::bytes_for(ids, c.channels.empty() ? kMaxUnconfiguredChannels
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
         Book::bytes_for(ids, c.itch.max_orders, c.itch.max_levels), Book::resident_bytes_for(ids)},
        {"held packets", {"moldudp64.max_held_packets"}, held, held},
        {"per-instrument state", {}, per_instrument, per_instrument},
        {"receiver", {"receiver.batch"}, receiver, receiver},
        {"event ring", {"receiver.ring_size"}, ring, ring},
    };
    // GLIMPSE (live, channels with `glimpse`): the snapshot buffer and the
    // storage a spin is built into, both zero pages until a snapshot loads.
    if (c.any_glimpse()) {
        e.parts.push_back({"snapshot buffer", {"glimpse.buffer_mb"}, std::size_t{c.glimpse.buffer_mb} << 20, 0});
        e.parts.push_back({"snapshot storage", {"itch.max_orders"}, SnapshotStorage::bytes_for(c.itch.max_orders), 0});
    }
    add_af_xdp_memory(e, c);
    if (live) add_fanout_memory(e, c, ids);  // a replay publishes nothing
    e.add_up();
    return e;
}

}  // namespace tickgate::itch50
