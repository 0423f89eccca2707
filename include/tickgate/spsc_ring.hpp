// Single-producer single-consumer ring of trivially copyable records.
// Power-of-two capacity; producer and consumer indices on separate cache
// lines, each side keeping a cached copy of the other's index so the common
// case touches no shared line. Lock-free, wait-free, never allocates after
// construction. Exactly one producer thread and one consumer thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>

namespace tickgate {

template <class T>
class SpscRing {
    static_assert(std::is_trivially_copyable_v<T>, "slots are copied with plain stores");

public:
    // Throws std::invalid_argument unless capacity is a power of two >= 2.
    explicit SpscRing(std::size_t capacity)
        : mask_(capacity - 1), slots_(std::make_unique<T[]>(capacity)) {
        if (capacity < 2 || (capacity & (capacity - 1)) != 0)
            throw std::invalid_argument("ring capacity must be a power of two >= 2");
    }

    [[nodiscard]] std::size_t capacity() const noexcept { return mask_ + 1; }
    // What the constructor allocates (estimate_memory in config.hpp).
    [[nodiscard]] static constexpr std::size_t bytes_for(std::size_t capacity) noexcept { return capacity * sizeof(T); }

    // --- producer thread ---

    // Slots the producer can fill before the next publish(); refreshes its
    // cached consumer index only when the cached view says the ring is short.
    [[nodiscard]] std::size_t writable(std::size_t wanted = 1) noexcept {
        std::size_t free = capacity() - (write_ - head_cache_);
        if (free < wanted) {
            head_cache_ = head_.load(std::memory_order_acquire);
            free = capacity() - (write_ - head_cache_);
        }
        return free;
    }
    // Stages one record; the caller has checked writable(). Invisible to the
    // consumer until publish().
    void stage(const T& v) noexcept { slots_[write_++ & mask_] = v; }
    void publish() noexcept { tail_.store(write_, std::memory_order_release); }

    bool try_push(const T& v) noexcept {
        if (writable(1) == 0) return false;
        stage(v);
        publish();
        return true;
    }

    // --- consumer thread ---

    // Calls f(const T&) for up to `limit` records, then frees their slots.
    // Returns how many were consumed.
    template <class F>
    std::size_t consume(F&& f, std::size_t limit) noexcept(noexcept(f(std::declval<const T&>()))) {
        std::size_t avail = tail_cache_ - read_;
        if (avail == 0) {
            tail_cache_ = tail_.load(std::memory_order_acquire);
            avail = tail_cache_ - read_;
            if (avail == 0) return 0;
        }
        const std::size_t n = avail < limit ? avail : limit;
        for (std::size_t i = 0; i < n; ++i) f(slots_[(read_ + i) & mask_]);
        read_ += n;
        head_.store(read_, std::memory_order_release);
        return n;
    }

    // Approximate fill level, from any thread (for monitoring).
    [[nodiscard]] std::size_t size_approx() const noexcept {
        return tail_.load(std::memory_order_relaxed) - head_.load(std::memory_order_relaxed);
    }

private:
    static constexpr std::size_t kLine = 64;

    const std::size_t mask_;
    const std::unique_ptr<T[]> slots_;
    // Consumer side.
    alignas(kLine) std::atomic<std::size_t> head_{0};  // next slot to read, published
    alignas(kLine) std::size_t read_ = 0;              // consumer's private read index
    std::size_t tail_cache_ = 0;                       // consumer's copy of tail_
    // Producer side.
    alignas(kLine) std::atomic<std::size_t> tail_{0};  // next slot to write, published
    alignas(kLine) std::size_t write_ = 0;             // producer's private write index
    std::size_t head_cache_ = 0;                       // producer's copy of head_
};

}  // namespace tickgate
