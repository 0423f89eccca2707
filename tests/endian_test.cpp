// endian.hpp: the loads and stores every protocol's views and builders use,
// checked byte by byte against the wire order they name (the integer byte
// swap and the generic byte loop both).
#include "tickgate/endian.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace tickgate {
namespace {

constexpr std::array<std::byte, 9> kBytes = {std::byte{0x01}, std::byte{0x23}, std::byte{0x45},
                                             std::byte{0x67}, std::byte{0x89}, std::byte{0xAB},
                                             std::byte{0xCD}, std::byte{0xEF}, std::byte{0xF0}};

TEST(Endian, BigEndianLoadsReadTheMostSignificantByteFirstAtAnyAlignment) {
    EXPECT_EQ(load_be<std::uint8_t>(kBytes.data()), 0x01U);
    EXPECT_EQ(load_be<std::uint16_t>(kBytes.data()), 0x0123U);
    EXPECT_EQ(load_be<std::uint32_t>(kBytes.data()), 0x01234567U);
    EXPECT_EQ(load_be<std::uint64_t>(kBytes.data()), 0x0123456789ABCDEFULL);
    EXPECT_EQ(load_be<std::uint64_t>(kBytes.data() + 1), 0x23456789ABCDEFF0ULL);  // unaligned
    EXPECT_EQ(load_be<std::int16_t>(kBytes.data() + 6), static_cast<std::int16_t>(0xCDEF));
    EXPECT_EQ(load_be<std::int32_t>(kBytes.data() + 4), static_cast<std::int32_t>(0x89ABCDEFU));
}

TEST(Endian, LittleEndianLoadsReadTheLeastSignificantByteFirst) {
    EXPECT_EQ(load_le<std::uint16_t>(kBytes.data()), 0x2301U);
    EXPECT_EQ(load_le<std::uint32_t>(kBytes.data() + 1), 0x89674523U);
    EXPECT_EQ(load_le<std::int64_t>(kBytes.data()), static_cast<std::int64_t>(0xEFCDAB8967452301ULL));
}

TEST(Endian, StoresMirrorTheLoads) {
    std::array<std::byte, 8> b{};
    store_be<std::uint64_t>(b.data(), 0x0123456789ABCDEFULL);
    for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(b[i], kBytes[i]) << i;
    store_be<std::uint16_t>(b.data() + 3, 0xBEEF);
    EXPECT_EQ(b[3], std::byte{0xBE});
    EXPECT_EQ(b[4], std::byte{0xEF});
    store_le<std::uint32_t>(b.data(), 0x01234567U);
    EXPECT_EQ(b[0], std::byte{0x67});
    EXPECT_EQ(b[3], std::byte{0x01});
    store_be<std::int32_t>(b.data(), -2);
    EXPECT_EQ(load_be<std::int32_t>(b.data()), -2);
}

TEST(Endian, ReverseBytesOfANonIntegerReversesItsBytes) {
    struct Three {
        unsigned char b[3];
    };
    const Three r = detail::reverse_bytes(Three{{1, 2, 3}});
    EXPECT_EQ(r.b[0], 3);
    EXPECT_EQ(r.b[1], 2);
    EXPECT_EQ(r.b[2], 1);
}

}  // namespace
}  // namespace tickgate
