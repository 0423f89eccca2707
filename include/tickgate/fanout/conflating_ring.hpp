// The engine thread's hand-off to the fan-out publisher thread (issue 27):
// per instrument one cell holding its newest Record (a seqlock over atomic
// words, so neither side waits or races), and a single-producer
// single-consumer ring of the ids whose cell holds a record not yet taken.
// An id is in the ring at most once (its pending flag), so the ring — sized
// for every instrument — can never be full: when the publisher is behind, an
// update of an instrument whose previous update is still pending overwrites
// that one in its cell (conflation, counted) and the engine never blocks.
// The publisher then sends the newest state, never a queue of old ones.
//
// Threading: offer() on the engine thread only (no allocation, lock or
// syscall); drain() and read() on the publisher thread only; counters from
// any thread. Levels beyond `depth` per side are not kept.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "tickgate/counter.hpp"
#include "tickgate/fanout/record.hpp"
#include "tickgate/spsc_ring.hpp"

namespace tickgate::fanout {

struct RingCounters {
    RelaxedCounter offered;    // updates handed over by the engine
    RelaxedCounter conflated;  // of those, overwrote one still pending (never published)
};

class ConflatingRing {
public:
    // Room for ids 0..max_instruments-1 with `depth` (1..kMaxDepth) levels per
    // side. Throws std::invalid_argument otherwise.
    ConflatingRing(std::uint32_t max_instruments, std::uint32_t depth)
        : max_(max_instruments),
          depth_(depth),
          stride_(words_for(depth)),
          cells_(std::make_unique<std::atomic<std::uint64_t>[]>(std::size_t{max_instruments} * stride_)),
          versions_(std::make_unique<std::atomic<std::uint64_t>[]>(max_instruments)),
          pending_(std::make_unique<std::atomic<std::uint8_t>[]>(max_instruments)),
          ids_(ring_capacity(max_instruments)) {
        if (max_instruments == 0 || depth == 0 || depth > kMaxDepth)
            throw std::invalid_argument("fan-out ring: max_instruments >= 1 and depth 1..32");
    }
    // What the constructor allocates (estimate_memory).
    [[nodiscard]] static std::size_t bytes_for(std::uint32_t max_instruments, std::uint32_t depth) noexcept {
        return std::size_t{max_instruments} * (words_for(depth) * 8 + 8 + 1) +
               SpscRing<std::uint32_t>::bytes_for(ring_capacity(max_instruments));
    }

    [[nodiscard]] std::uint32_t max_instruments() const noexcept { return max_; }
    [[nodiscard]] std::uint32_t depth() const noexcept { return depth_; }

    // Engine thread: `r` becomes instrument r.instrument's newest state
    // (r.instrument < max_instruments, n_bids/n_asks <= depth).
    void offer(const Record& r) noexcept {
        const std::uint32_t id = r.instrument;
        std::uint64_t buf[kMaxWords];
        pack(r, buf);
        std::atomic<std::uint64_t>& ver = versions_[id];
        const std::uint64_t v = ver.load(std::memory_order_relaxed);
        ver.store(v + 1, std::memory_order_relaxed);  // odd: being written
        // Each word a release store (a plain store on x86): none becomes
        // visible before the odd version. Not a fence, which ThreadSanitizer
        // does not model (-Wtsan); the same order for it to check.
        std::atomic<std::uint64_t>* cell = &cells_[std::size_t{id} * stride_];
        for (std::size_t i = 0; i < stride_; ++i) cell[i].store(buf[i], std::memory_order_release);
        ver.store(v + 2, std::memory_order_release);
        counters_.offered.add();
        if (pending_[id].exchange(1, std::memory_order_acq_rel) != 0)
            counters_.conflated.add();
        else
            (void)ids_.try_push(id);  // cannot fail: each id at most once, capacity >= max_instruments
    }

    // Publisher thread: calls f(const Record&, std::uint64_t version) for up
    // to `limit` instruments with a pending record (their newest); returns
    // how many. `version` grows with every offer of that instrument.
    template <class F>
    std::size_t drain(F&& f, std::size_t limit) {
        Record r;
        return ids_.consume(
            [&](const std::uint32_t& id) {
                pending_[id].exchange(0, std::memory_order_acq_rel);  // a later offer queues it again
                const std::uint64_t v = read(id, r);
                if (v != 0) f(r, v);
            },
            std::min<std::size_t>(limit, max_));
    }

    // Publisher thread: instrument `id`'s newest record into `out`; returns
    // its version (0: never offered, `out` untouched).
    std::uint64_t read(std::uint32_t id, Record& out) const noexcept {
        std::uint64_t buf[kMaxWords];
        const std::atomic<std::uint64_t>& ver = versions_[id];
        const std::atomic<std::uint64_t>* cell = &cells_[std::size_t{id} * stride_];
        for (;;) {
            const std::uint64_t v1 = ver.load(std::memory_order_acquire);
            if (v1 == 0) return 0;
            if (v1 & 1) continue;  // the engine is writing it: a few stores, retry
            // Acquire loads (plain loads on x86): the version's second read
            // cannot move before the words, and a word written after v1
            // brings the odd version with it.
            for (std::size_t i = 0; i < stride_; ++i) buf[i] = cell[i].load(std::memory_order_acquire);
            if (ver.load(std::memory_order_relaxed) == v1) {
                unpack(buf, out);
                return v1 / 2;
            }
        }
    }

    [[nodiscard]] const RingCounters& counters() const noexcept { return counters_; }
    // Ids waiting for the publisher (monitoring).
    [[nodiscard]] std::size_t pending_approx() const noexcept { return ids_.size_approx(); }

private:
    static constexpr std::size_t kHead = offsetof(Record, bids);
    static constexpr std::size_t kMaxWords = (kHead + 2 * kMaxDepth * sizeof(Level) + 7) / 8;

    static constexpr std::size_t words_for(std::uint32_t depth) noexcept {
        return (kHead + 2 * std::size_t{std::min(depth, kMaxDepth)} * sizeof(Level) + 7) / 8;
    }
    // Room for every id queued once more while up to max_instruments of
    // them are still held by a drain in progress (an id cleared in drain()
    // and offered again is queued before its old slot is released).
    static std::size_t ring_capacity(std::uint32_t max_instruments) noexcept {
        return std::max<std::size_t>(2, std::bit_ceil(2 * std::size_t{max_instruments}));
    }

    void pack(const Record& r, std::uint64_t* buf) const noexcept {
        auto* b = reinterpret_cast<unsigned char*>(buf);
        std::memcpy(b, &r, kHead);
        std::memcpy(b + kHead, r.bids, depth_ * sizeof(Level));
        std::memcpy(b + kHead + depth_ * sizeof(Level), r.asks, depth_ * sizeof(Level));
    }
    void unpack(const std::uint64_t* buf, Record& r) const noexcept {
        const auto* b = reinterpret_cast<const unsigned char*>(buf);
        std::memcpy(static_cast<void*>(&r), b, kHead);
        std::memcpy(r.bids, b + kHead, depth_ * sizeof(Level));
        std::memcpy(r.asks, b + kHead + depth_ * sizeof(Level), depth_ * sizeof(Level));
    }

    std::uint32_t max_;
    std::uint32_t depth_;
    std::size_t stride_;  // words per cell
    std::unique_ptr<std::atomic<std::uint64_t>[]> cells_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> versions_;  // seqlock per cell: even stable, odd written
    std::unique_ptr<std::atomic<std::uint8_t>[]> pending_;    // in ids_ and not yet drained
    SpscRing<std::uint32_t> ids_;
    RingCounters counters_;
};

}  // namespace tickgate::fanout
