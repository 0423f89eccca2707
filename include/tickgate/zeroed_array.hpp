// A fixed-size array of trivially copyable records whose all-zero bytes are
// the empty record, taken from the kernel as zero pages (std::calloc: glibc
// maps a large block fresh and skips the memset). Nothing is written at
// construction, so a table sized for a full day (16 M ITCH orders, a
// recovery pool for every instrument) costs address space, not resident
// memory, until it is used: a page becomes resident when first written.
// `tickgate config check` prints both figures (MemoryPart::resident_bytes).
// Never reallocates; move-only.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace tickgate {

template <class T>
class ZeroedArray {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                  "records live in calloc'ed zero pages: no constructor or destructor runs");

public:
    ZeroedArray() = default;
    // Throws std::runtime_error naming the size when the address space
    // cannot be had (the config's memory check refuses far earlier).
    explicit ZeroedArray(std::size_t n) : size_(n) {
        if (n == 0) return;
        data_ = static_cast<T*>(std::calloc(n, sizeof(T)));
        if (data_ == nullptr)
            throw std::runtime_error("cannot reserve " + std::to_string((n * sizeof(T) + (1u << 20) - 1) >> 20) +
                                     " MiB of zero pages (lower the config's capacities)");
    }
    ZeroedArray(ZeroedArray&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
    ZeroedArray& operator=(ZeroedArray&& o) noexcept {
        if (this != &o) {
            std::free(data_);
            data_ = std::exchange(o.data_, nullptr);
            size_ = std::exchange(o.size_, 0);
        }
        return *this;
    }
    ZeroedArray(const ZeroedArray&) = delete;
    ZeroedArray& operator=(const ZeroedArray&) = delete;
    ~ZeroedArray() { std::free(data_); }

    [[nodiscard]] static constexpr std::size_t bytes_for(std::size_t n) noexcept { return n * sizeof(T); }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] T* data() noexcept { return data_; }
    [[nodiscard]] const T* data() const noexcept { return data_; }
    T& operator[](std::size_t i) noexcept { return data_[i]; }
    const T& operator[](std::size_t i) const noexcept { return data_[i]; }
    [[nodiscard]] T* begin() noexcept { return data_; }
    [[nodiscard]] T* end() noexcept { return data_ + size_; }
    [[nodiscard]] const T* begin() const noexcept { return data_; }
    [[nodiscard]] const T* end() const noexcept { return data_ + size_; }

    // Start-up, for an array read at random (ITCH's order tables): offers
    // its 2 MiB-aligned interior to the kernel for transparent huge pages
    // (madvise MADV_HUGEPAGE), so such a read no longer also misses the TLB
    // (with 4 KiB pages nearly every one did; on a VM that is a two-level
    // page walk). Advice only: ignored where THP is "never". The array
    // still becomes resident only where written, but 2 MiB at a time.
    void advise_huge_pages() noexcept {
        constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
        const auto begin = reinterpret_cast<std::uintptr_t>(data_);
        const std::uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
        const std::uintptr_t last = (begin + size_ * sizeof(T)) & ~(kHugePage - 1);
        if (data_ != nullptr && last > first) (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
    }

private:
    T* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace tickgate
