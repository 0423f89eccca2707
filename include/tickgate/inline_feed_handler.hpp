// The embedding API, run to completion (threading.pipeline = "inline"): one
// thread receives, merges lines A/B (the protocol's front), decodes, sequences, updates the book and
// calls the engine back with each update before it looks at the next
// datagram; the gate is a read on that same thread. No ring, no hand-off,
// no allocation, no lock; the callback is a template parameter.
//
// Pick it when the engine's reaction to an update is short: the socket is
// not read while the callback runs, so a slow callback backs up the kernel
// socket buffer (receiver.rcvbuf_bytes) and, past it, loses datagrams
// (counted as kernel_drops; the instruments go suspect and repair as in the
// two-thread pipeline). BasicFeedHandler's ring protects the socket from a
// slow strategy instead, at the price of a thread hand-off per datagram.
//
// Threading contract: the constructor opens and joins the sockets (throws on
// any problem); poll()/run() and everything the engine reads — gate(),
// instruments(), book(), sequencer(), and find(), safe_quote(), subscribe()
// of EngineApi (feed/engine_api.hpp) — belong to one thread, the handler
// thread. Statistics (stats(), line_stats(), counters) may be read from any
// thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "tickgate/book/gate.hpp"
#include "tickgate/feed/arbitrated_decoder.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/engine_api.hpp"
#include "tickgate/feed/feed_stats.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/receiver.hpp"
#include "tickgate/feed/sequencer.hpp"
#include "tickgate/feed/recovery.hpp"
#include "tickgate/feed_handler.hpp"
#include "tickgate/idle.hpp"
#include "tickgate/protocol.hpp"

namespace tickgate {

// What a probe of the inline path sees (a benchmark's per-stage timestamps;
// see bench/latency_bench.cpp): datagram(d) when the receiver hands on a
// datagram (its recvmmsg batch has returned), decoded(ev) when an event
// leaves the decoder, before the sequencer. NoProbe compiles to nothing.
struct NoProbe {
    static void datagram(const RawDatagram&) noexcept {}
    static void decoded(const Event&) noexcept {}
};

template <VenueProtocol P, SequencedBook Book = typename P::Book>
class BasicInlineFeedHandler : public EngineApi<BasicInlineFeedHandler<P, Book>> {
    friend class EngineApi<BasicInlineFeedHandler>;

public:
    using Protocol = P;

    // Throws std::invalid_argument if the config's channels speak another protocol.
    explicit BasicInlineFeedHandler(const Config& cfg)
        : cfg_(detail::speaking<P>(cfg)),
          capacity_(capacity_for<P>(cfg_)),
          receiver_(cfg_),
          front_(cfg_),
          instruments_(capacity_.max_instruments),
          book_(make_book<Book>(cfg_, capacity_)),
          sequencer_(instruments_, book_, capacity_),
          gate_(instruments_, cfg_.gate),
          recovery_(cfg_, receiver_.lines()) {
        front_.configure(cfg_);
        apply_config(instruments_, sequencer_, cfg_);
        configure_book(book_, cfg_);
    }
    BasicInlineFeedHandler(const BasicInlineFeedHandler&) = delete;
    BasicInlineFeedHandler& operator=(const BasicInlineFeedHandler&) = delete;

    // Handler thread: one duty-cycle iteration. Waits up to `max_wait_ns`
    // (0: not at all; cut short by the earliest arbitration deadline) for
    // data, receives up to one batch per socket and, for every event, in
    // order: sequencer, book, then on_update(const Update&, const Event&)
    // (but not for instruments not subscribed), which must not throw. Then releases arbitration holds whose time is
    // up. Returns the datagrams received (0: none). Never allocates.
    template <class F, class Probe = NoProbe>
        requires std::invocable<F&, const Update&, const Event&>
    int poll(F&& on_update, std::int64_t max_wait_ns = 0, Probe&& probe = {}) noexcept {
        Apply<F, Probe> apply{*this, on_update, probe};
        const std::int64_t wait_ns = detail::wait_budget_ns(max_wait_ns, front_.next_deadline());
        recovery_.steer(receiver_);
        const int got = receiver_.template poll_once<P>(wait_ns, Receive<F, Probe>{*this, apply});
        // Give up on a hole only once every copy that arrived in time has been read.
        if (const std::int64_t t = receiver_.drained_until(); t != 0) front_.expire(t, apply);
        recovery_.refresh(instruments_);
        return got;
    }

    // Handler thread: pins the calling thread to threading.receiver_cpu
    // (std::runtime_error naming the CPU if it cannot), then poll()s until
    // `stop` is set, idling between empty polls by the config's idle
    // strategy (threading.mode, busy_poll_idle: the network thread's).
    template <class F>
        requires std::invocable<F&, const Update&, const Event&>
    void run(F&& on_update, const std::atomic<bool>& stop) {
        pin_current_thread_or_throw(cfg_.threading.receiver_cpu, "threading.receiver_cpu");
        detail::with_network_idle(cfg_.threading, [&](auto idle) { run(on_update, stop, idle); });
    }
    // The same loop with the caller's idle strategy, on the calling thread as
    // it is (no pinning).
    template <class F, IdleStrategy Idle>
        requires std::invocable<F&, const Update&, const Event&>
    void run(F&& on_update, const std::atomic<bool>& stop, Idle idle) noexcept {
        while (!stop.load(std::memory_order_relaxed)) idle.idle(poll(on_update, idle.max_block_ns()));
    }

    // Handler thread.
    [[nodiscard]] const Gate& gate() const noexcept { return gate_; }
    [[nodiscard]] const GateConfig& gate_config() const noexcept { return cfg_.gate; }
    [[nodiscard]] const InstrumentTable& instruments() const noexcept { return instruments_; }
    [[nodiscard]] const Book& book() const noexcept { return book_; }
    [[nodiscard]] const BasicSequencer<typename P::Rules, Book>& sequencer() const noexcept { return sequencer_; }
    [[nodiscard]] const Config& config() const noexcept { return cfg_; }

    // MDP3: which channels' snapshot feeds are wanted (joined by poll()). Any thread.
    // The protocol's recovery service (recovery.hpp), e.g. MDP3's snapshot-feed control.
    [[nodiscard]] const RecoveryOf<P>& recovery() const noexcept { return recovery_; }
    // Any thread. No ring: stats().ring is nullptr and its counters stay 0.
    [[nodiscard]] FeedStats stats() const noexcept {
        return {receiver_.lines(), front_.decoder_counters(), front_.arbiter_counters(), no_ring_,
                instruments_,      sequencer_.counters(),     nullptr,                   cfg_.receiver.arbitration,
                receiver_};
    }
    [[nodiscard]] std::span<const std::unique_ptr<LineStats>> line_stats() const noexcept { return receiver_.lines(); }
    [[nodiscard]] const DecoderCounters& decoder_counters() const noexcept { return front_.decoder_counters(); }
    [[nodiscard]] const ArbiterCounters& arbiter_counters() const noexcept { return front_.arbiter_counters(); }
    // The protocol's decoder (its own figures). Handler thread.
    [[nodiscard]] decltype(auto) protocol_decoder() const noexcept { return front_.protocol_decoder(); }

private:
    // The front's sink: each event straight into the sequencer
    // and book, then to the engine. Forced inline with the sequencer's
    // apply_inlined, as offline replay's on_packet: at each of the decoder's
    // sites the event's kind is a constant and the sequencer's tests on it
    // fold away (measured on MDP3, mdp3_bench's repaired row: parsed packet
    // p50 ~46 -> ~42 ns, p99 ~315 -> ~285; bench/README.md "MDP3: the live
    // sink inlined"; QFB/1's and ITCH's inline handlers were not timed apart).
    template <class F, class Probe>
    struct Apply {
        BasicInlineFeedHandler& self;
        F& on_update;
        Probe& probe;
        [[gnu::always_inline]] void on_event(const Event& ev) noexcept {
            probe.decoded(ev);
            self.recovery_.before(self.instruments_, ev);
            const Update u = self.sequencer_.apply_inlined(ev);
            self.recovery_.on_update(u, ev);
            if (self.sequencer_.delivers(u)) on_update(u, ev);
        }
        static void on_packet_end() noexcept {}
        // What a front may prefetch for before it decodes a datagram (this thread applies it).
        [[nodiscard]] const BasicInlineFeedHandler& prefetch_target() const noexcept { return self; }
    };
    // The receiver's sink: each accepted datagram and its key into the front.
    template <class F, class Probe>
    struct Receive {
        BasicInlineFeedHandler& self;
        Apply<F, Probe>& apply;
        void operator()(const RawDatagram& d, const typename P::Key& key) noexcept {
            apply.probe.datagram(d);
            self.front_.offer(d, key, apply);
        }
        void oversized() noexcept { self.front_.oversized(); }
    };

    Config cfg_;
    Capacity capacity_;  // the protocol's (capacity_for)
    Receiver receiver_;
    FrontOf<P> front_;
    InstrumentTable instruments_;
    Book book_;
    BasicSequencer<typename P::Rules, Book> sequencer_;
    Gate gate_;
    RecoveryOf<P> recovery_;
    const PublisherCounters no_ring_{};  // FeedStats' ring counters: nothing overflows without a ring
};

// The reference venue's inline feed handler (protocols.hpp: QFB/1).
using InlineFeedHandler = BasicInlineFeedHandler<ReferenceProtocol>;

}  // namespace tickgate
