// Unaligned little- and big-endian loads and stores (memcpy only), shared by
// every protocol's views and builders: QFB/1 and MDP3 are little-endian,
// MoldUDP64/ITCH and the pcap/IP headers big-endian.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace tickgate {

namespace detail {
// Reverses the bytes of `v`. Integers through the compiler's byte swap: GCC
// 12 does not recognize the byte loop as one, and ITCH's decode spent half
// its instructions in shifts and ors (callgrind on BM_Itch_Pipeline).
template <class T>
[[nodiscard]] inline T reverse_bytes(T v) noexcept {
    if constexpr (std::is_integral_v<T> && sizeof(T) == 1) {
        return v;
    } else if constexpr (std::is_integral_v<T> && sizeof(T) == 2) {
        return static_cast<T>(__builtin_bswap16(static_cast<std::uint16_t>(v)));
    } else if constexpr (std::is_integral_v<T> && sizeof(T) == 4) {
        return static_cast<T>(__builtin_bswap32(static_cast<std::uint32_t>(v)));
    } else if constexpr (std::is_integral_v<T> && sizeof(T) == 8) {
        return static_cast<T>(__builtin_bswap64(static_cast<std::uint64_t>(v)));
    } else {
        unsigned char b[sizeof(T)];
        std::memcpy(b, &v, sizeof(T));
        for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
        std::memcpy(&v, b, sizeof(T));
        return v;
    }
}
}  // namespace detail

// Little-endian load of a trivially copyable T at `p` (no alignment needed).
template <class T>
[[nodiscard]] inline T load_le(const std::byte* p) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (std::endian::native == std::endian::big) v = detail::reverse_bytes(v);
    return v;
}

// Little-endian store, the mirror of load_le (used by the packet builder).
template <class T>
inline void store_le(std::byte* p, T v) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    if constexpr (std::endian::native == std::endian::big) v = detail::reverse_bytes(v);
    std::memcpy(p, &v, sizeof(T));
}

// Big-endian load of a trivially copyable integer T at `p`.
template <class T>
[[nodiscard]] inline T load_be(const std::byte* p) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (std::endian::native == std::endian::little) v = detail::reverse_bytes(v);
    return v;
}

// Big-endian store, the mirror of load_be.
template <class T>
inline void store_be(std::byte* p, T v) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    if constexpr (std::endian::native == std::endian::little) v = detail::reverse_bytes(v);
    std::memcpy(p, &v, sizeof(T));
}

}  // namespace tickgate
