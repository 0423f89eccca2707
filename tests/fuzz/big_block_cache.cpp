// Replacement global operator new/delete for the fuzz targets that build a
// Handler per input. Why: the decoder's and the sequencer's per-channel
// tables (65,536 entries, 512 KiB each) are above ASan's primary allocator's
// size limit, so every input mmaps them afresh, page-faults them in and
// munmaps them again. On this VM that was ~60% of the time of an input
// (~100 exec/s). Here blocks of >= 256 KiB are kept in a small cache and
// handed out again, with ASan poisoning done by hand so misuse is still
// reported:
//   - a 4 KiB poisoned zone before and after every block (overflows),
//   - the whole block poisoned while it sits in the cache (use after free,
//     reported as "use-after-poison"),
//   - the table keeps a block's address only XOR-masked while the block is
//     handed out, so LeakSanitizer still reports a big block the program
//     loses (only blocks back in the cache are referenced in the clear).
// Everything below 256 KiB goes to malloc/free, which ASan tracks as usual
// (overflow, use-after-free, leaks); only the new/delete vs malloc/free and
// new[]/delete mismatch checks are lost. Because a cached block is malloc'd
// once, ASan's allocation stack for it (e.g. in a leak report) is that of
// its first user, and a use after free shows no free stack: to get ASan's
// complete report for a crash input, rerun it with FUZZ_NO_BLOCK_CACHE=1
// in the environment, which bypasses the cache (run.sh does so for every
// artifact it finds).
#include <sanitizer/asan_interface.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kBig = 256 * 1024;
constexpr std::size_t kPad = 4096;
constexpr int kMaxBlocks = 32;

constexpr std::uintptr_t kMask = 0x5a5a5a5a5a5a5a5aull;

struct Block {
    std::uintptr_t hidden;  // malloc'd block [pad][capacity][pad], address ^ kMask
    char* cached;           // the same address while the block is in the cache, else null
    std::size_t capacity;
    bool used;
    [[nodiscard]] char* base() const { return reinterpret_cast<char*>(hidden ^ kMask); }
};

Block g_blocks[kMaxBlocks];
int g_count = 0;
std::atomic_flag g_lock = ATOMIC_FLAG_INIT;
int g_enabled = -1;  // -1: not read yet

struct Guard {
    Guard() {
        while (g_lock.test_and_set(std::memory_order_acquire)) {
        }
    }
    ~Guard() { g_lock.clear(std::memory_order_release); }
};

bool enabled() {
    if (g_enabled < 0) {
        const char* v = std::getenv("FUZZ_NO_BLOCK_CACHE");
        g_enabled = (v != nullptr && v[0] == '1') ? 0 : 1;
    }
    return g_enabled == 1;
}

std::size_t round_page(std::size_t n) { return (n + kPad - 1) & ~(kPad - 1); }

void* big_alloc(std::size_t n) {
    if (n < kBig || !enabled()) return nullptr;
    Guard g;
    Block* pick = nullptr;
    for (int i = 0; i < g_count; ++i) {
        Block& b = g_blocks[i];
        if (!b.used && b.capacity >= n && b.capacity <= 2 * round_page(n) &&
            (pick == nullptr || b.capacity < pick->capacity))
            pick = &b;
    }
    if (pick == nullptr) {
        if (g_count == kMaxBlocks) return nullptr;
        const std::size_t cap = round_page(n);
        auto* base = static_cast<char*>(std::aligned_alloc(kPad, cap + 2 * kPad));
        if (base == nullptr) return nullptr;
        g_blocks[g_count] = {reinterpret_cast<std::uintptr_t>(base) ^ kMask, base, cap, false};
        pick = &g_blocks[g_count++];
        __asan_poison_memory_region(base, cap + 2 * kPad);
    }
    pick->used = true;
    pick->cached = nullptr;
    char* user = pick->base() + kPad;
    __asan_unpoison_memory_region(user, n);  // the rest of the block and both pads stay poisoned
    return user;
}

bool big_free(void* p) {
    if (p == nullptr || g_count == 0) return false;
    Guard g;
    for (int i = 0; i < g_count; ++i) {
        Block& b = g_blocks[i];
        if (b.base() + kPad == p) {
            if (!b.used) {
                // Double delete: make ASan report it on the real allocator.
                return false;
            }
            b.used = false;
            b.cached = b.base();
            __asan_poison_memory_region(p, b.capacity);
            return true;
        }
    }
    return false;
}

void* alloc(std::size_t n, std::size_t align) {
    if (void* p = big_alloc(n)) return p;
    if (n == 0) n = 1;
    if (align <= alignof(std::max_align_t)) return std::malloc(n);
    return std::aligned_alloc(align, (n + align - 1) / align * align);
}

void* alloc_or_throw(std::size_t n, std::size_t align) {
    void* p = alloc(n, align);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

void release(void* p) noexcept {
    if (!big_free(p)) std::free(p);
}

}  // namespace

void* operator new(std::size_t n) { return alloc_or_throw(n, 0); }
void* operator new[](std::size_t n) { return alloc_or_throw(n, 0); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return alloc_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return alloc_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return alloc(n, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
