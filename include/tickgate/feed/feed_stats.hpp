// What a live handler counts, whatever its protocol: the view metrics, the
// state log and the CLI read (BasicFeedHandler::stats(),
// BasicInlineFeedHandler::stats()). Counters are
// readable from any thread; `instruments` belongs to the engine thread.
#pragma once

#include <memory>
#include <span>

#include "tickgate/event.hpp"
#include "tickgate/feed/arbiter.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/ring_publisher.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/protocol.hpp"
#include "tickgate/spsc_ring.hpp"

namespace tickgate {

struct FeedStats {
    std::span<const std::unique_ptr<LineStats>> lines;
    const DecoderCounters& decoder;
    const ArbiterCounters& arbiter;
    const PublisherCounters& publisher;
    const InstrumentTable& instruments;
    const SequencerCounters& sequencer;
    const SpscRing<Event>* ring;  // nullptr: the inline pipeline, which has none
    bool arbitration;  // receiver.arbitration: lines A/B merged
    const Receiver& receiver;  // its backend (AF_XDP counters, a fallback's reason)
};

}  // namespace tickgate
