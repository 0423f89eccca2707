// MoldUDP64 framing (ITCH50.md "MoldUDP64 (facts)" and "Malformed packets").
#include "tickgate/feed/moldudp64/wire.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "tickgate/endian.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/itch50/wire.hpp"

namespace tickgate::moldudp64 {
namespace {

using itch50::Bytes;

std::span<const std::byte> span_of(const Bytes& b) { return {b.data(), b.size()}; }

// Walks `d` with ITCH 5.0's sizes; returns the walk and the lengths handed on.
Walk walk_itch(const Bytes& d, std::vector<std::size_t>* lengths = nullptr) {
    const Key key = read_key(span_of(d), 3);
    return walk(
        span_of(d), key, [](std::uint8_t t) noexcept { return itch50::min_length(t); },
        [&](std::uint16_t, std::span<const std::byte> m) {
            if (lengths) lengths->push_back(m.size());
        });
}

TEST(MoldUdp64Header, ReadsSessionSequenceAndCountBigEndian) {
    const Bytes msgs[] = {itch50::delete_order(1, 7), itch50::delete_order(1, 8)};
    const Bytes d = itch50::mold_packet("000010059B", 14757701, msgs);
    const Key k = read_key(span_of(d), 9);
    ASSERT_TRUE(k.valid());
    EXPECT_EQ(k.kind, PacketKind::kMessages);
    EXPECT_EQ(std::string_view(k.session.data(), k.session.size()), "000010059B");
    EXPECT_EQ(k.seq, 14757701u);
    EXPECT_EQ(k.count, 2u);
    EXPECT_EQ(k.next_seq(), 14757703u);
    EXPECT_EQ(k.channel, 9u);  // the line's: the header names no channel
    EXPECT_EQ(k.len, d.size());
}

TEST(MoldUdp64Header, CountZeroIsAHeartbeatCarryingTheNextPosition) {
    const Bytes d = itch50::mold_heartbeat("S1", 500);
    const Key k = read_key(span_of(d), 0);
    EXPECT_EQ(k.kind, PacketKind::kHeartbeat);
    EXPECT_EQ(k.seq, 500u);
    EXPECT_EQ(k.next_seq(), 500u);
    EXPECT_EQ(k.messages(), 0u);
    const Walk w = walk_itch(d);
    EXPECT_EQ(w.received, 0u);
    EXPECT_EQ(w.fault, Fault::kNone);
}

TEST(MoldUdp64Header, Count0xFFFFIsEndOfSessionCarryingTheNextPosition) {
    const Bytes d = itch50::mold_heartbeat("S1", 77, true);
    const Key k = read_key(span_of(d), 0);
    EXPECT_EQ(k.kind, PacketKind::kEndOfSession);
    EXPECT_EQ(k.next_seq(), 77u);
    EXPECT_EQ(walk_itch(d).fault, Fault::kNone);
}

TEST(MoldUdp64Header, TwentyByteDatagramWithACountIsAReRequestNotMalformed) {
    const Bytes d = itch50::mold_request("S1", 10, 5);
    const Key k = read_key(span_of(d), 0);
    EXPECT_EQ(k.kind, PacketKind::kRequest);
    EXPECT_EQ(k.messages(), 0u);
    const Walk w = walk_itch(d);
    EXPECT_EQ(w.received, 0u);
    EXPECT_EQ(w.fault, Fault::kNone);
}

TEST(MoldUdp64Malformed, DatagramShorterThan20BytesIsDroppedWhole) {
    Bytes d = itch50::mold_heartbeat("S1", 1);
    d.resize(19);
    EXPECT_FALSE(read_key(span_of(d), 0).valid());
}

TEST(MoldUdp64Malformed, BlockRunningPastTheDatagramStopsThePacketThere) {
    const Bytes msgs[] = {itch50::delete_order(1, 7), itch50::delete_order(1, 8)};
    Bytes d = itch50::mold_packet("S1", 1, msgs);
    d.pop_back();  // the second message's last byte is missing
    std::vector<std::size_t> lengths;
    const Walk w = walk_itch(d, &lengths);
    EXPECT_EQ(w.received, 1u);
    EXPECT_EQ(w.fault, Fault::kOverrun);
    EXPECT_EQ(lengths, std::vector<std::size_t>{19});
}

TEST(MoldUdp64Malformed, LengthFieldRunningPastTheDatagramStopsThePacketThere) {
    const Bytes msgs[] = {itch50::delete_order(1, 7)};
    Bytes d = itch50::mold_packet("S1", 1, msgs);
    store_be<std::uint16_t>(d.data() + kCountOffset, 2);  // claims a second block
    d.push_back(std::byte{0});                           // one byte of its length field
    const Walk w = walk_itch(d);
    EXPECT_EQ(w.received, 1u);
    EXPECT_EQ(w.fault, Fault::kOverrun);
}

TEST(MoldUdp64Malformed, MessageShorterThanItsTypeStopsThePacketThere) {
    Bytes short_add = itch50::add_order(1, 5, 'B', 100, 10000);
    short_add.resize(35);
    const Bytes msgs[] = {itch50::delete_order(1, 7), short_add, itch50::delete_order(1, 8)};
    const Walk w = walk_itch(itch50::mold_packet("S1", 1, msgs));
    EXPECT_EQ(w.received, 1u);
    EXPECT_EQ(w.fault, Fault::kBadLength);
}

TEST(MoldUdp64Malformed, EmptyMessageIsShorterThanAnyType) {
    const Bytes msgs[] = {Bytes{}};
    const Walk w = walk_itch(itch50::mold_packet("S1", 1, msgs));
    EXPECT_EQ(w.received, 0u);
    EXPECT_EQ(w.fault, Fault::kBadLength);
}

TEST(MoldUdp64Malformed, BytesAfterTheLastBlockMakeItMalformedWhatCameBeforeStands) {
    const Bytes msgs[] = {itch50::delete_order(1, 7), itch50::delete_order(1, 8)};
    Bytes d = itch50::mold_packet("S1", 1, msgs);
    d.push_back(std::byte{0x44});
    const Walk w = walk_itch(d);
    EXPECT_EQ(w.received, 2u);
    EXPECT_EQ(w.fault, Fault::kTrailingBytes);
}

TEST(MoldUdp64Malformed, BytesAfterAHeartbeatHeaderMakeItMalformed) {
    for (const bool end : {false, true}) {
        Bytes d = itch50::mold_heartbeat("S1", 4, end);
        d.push_back(std::byte{0});
        const Key k = read_key(span_of(d), 0);
        EXPECT_EQ(k.seq, 4u);  // what came before stands: the position it reveals
        EXPECT_EQ(walk_itch(d).fault, Fault::kTrailingBytes) << end;
    }
}

TEST(MoldUdp64Malformed, MessageLongerThanItsTypeIsAcceptedWhole) {
    Bytes long_delete = itch50::delete_order(1, 7);
    long_delete.resize(25);  // a newer version's appended fields
    const Bytes msgs[] = {long_delete, itch50::delete_order(1, 8)};
    std::vector<std::size_t> lengths;
    const Walk w = walk_itch(itch50::mold_packet("S1", 1, msgs), &lengths);
    EXPECT_EQ(w.received, 2u);
    EXPECT_EQ(w.fault, Fault::kNone);
    EXPECT_EQ(lengths, (std::vector<std::size_t>{25, 19}));
}

TEST(MoldUdp64Malformed, UnknownTypeIsSkippedByItsLength) {
    const Bytes msgs[] = {itch50::message('z', 1, 0, 3), itch50::delete_order(1, 8)};
    std::vector<std::size_t> lengths;
    const Walk w = walk_itch(itch50::mold_packet("S1", 1, msgs), &lengths);
    EXPECT_EQ(w.received, 2u);
    EXPECT_EQ(w.fault, Fault::kNone);
    EXPECT_EQ(lengths, (std::vector<std::size_t>{3, 19}));
}

}  // namespace
}  // namespace tickgate::moldudp64
