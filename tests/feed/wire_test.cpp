// QFB/1 wire rules (shared/spec/QFB1.md, "Packet header", "Messages",
// "Malformed input"): one test per rule, named after it.
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/qfb1/protocol.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/qfb1/wire.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tickgate/feed/capture.hpp"
#include "tickgate/event.hpp"

namespace tickgate {
namespace {

using qfb1::Fault;
using qfb1::PacketVerdict;

constexpr std::uint16_t kChannel = 7;
constexpr std::int64_t kRecvNs = 1'000'000;

// Decoder counters as one comparable value.
struct Counts {
    std::uint64_t packets, messages, malformed, unknown, stale_session, session_changes;
    bool operator==(const Counts&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Counts& c) {
    return os << "{packets " << c.packets << ", messages " << c.messages << ", malformed " << c.malformed
              << ", unknown " << c.unknown << ", stale_session " << c.stale_session << ", session_changes "
              << c.session_changes << "}";
}
Counts counts(const SessionDecoder<qfb1::Protocol>& d) {
    const auto& c = d.counters();
    return {c.packets.get(),          c.messages.get(),
            c.malformed_packets.get(), c.unknown_messages.get(),
            c.stale_session_packets.get(), c.session_changes.get()};
}

struct Decoded {
    qfb1::DecodeResult result;
    std::vector<Event> events;
};

Decoded decode(SessionDecoder<qfb1::Protocol>& dec, std::span<const std::byte> datagram, std::uint8_t line = 0) {
    Decoded out{};
    out.result = dec.decode(datagram, kRecvNs, line, [&](const Event& ev) { out.events.push_back(ev); });
    return out;
}

PacketBuilder packet(std::uint32_t session = 1, std::uint16_t channel = kChannel) {
    return PacketBuilder(channel, session, /*packet_seq=*/1, /*send_ns=*/500);
}

void set_u16(std::vector<std::byte>& b, std::size_t off, std::uint16_t v) { qfb1::store_le(b.data() + off, v); }
void set_u8(std::vector<std::byte>& b, std::size_t off, std::uint8_t v) { qfb1::store_le(b.data() + off, v); }

std::vector<std::byte> body(std::size_t n) { return std::vector<std::byte>(n, std::byte{0}); }

// Little-endian bytes written by hand (shifts, not store_le), so the field
// tests check the decoder against the spec tables, not against the builder.
class Bytes {
public:
    template <class T>
    Bytes& le(T v) {
        auto u = static_cast<std::make_unsigned_t<T>>(v);
        for (std::size_t i = 0; i < sizeof(T); ++i, u = static_cast<decltype(u)>(u >> 8))
            b_.push_back(static_cast<std::byte>(u & 0xFFu));
        return *this;
    }
    Bytes& zeros(std::size_t n) {
        b_.insert(b_.end(), n, std::byte{0});
        return *this;
    }
    Bytes& text(std::string_view s, std::size_t width) {
        for (std::size_t i = 0; i < width; ++i) b_.push_back(static_cast<std::byte>(i < s.size() ? s[i] : 0));
        return *this;
    }
    // Packet header, offsets 0..27 of the spec table.
    Bytes& header(std::uint16_t msg_count, std::uint16_t channel, std::uint32_t session,
                  std::uint64_t packet_seq, std::int64_t send_ns) {
        b_.push_back(std::byte{0x46});  // magic 0x5146 = bytes 46 51
        b_.push_back(std::byte{0x51});
        return le<std::uint8_t>(1).le<std::uint8_t>(0).le(msg_count).le(channel).le(session).le(packet_seq).le(send_ns);
    }
    Bytes& msg(std::uint16_t length, char type) { return le(length).le(static_cast<std::uint8_t>(type)).le<std::uint8_t>(0); }
    [[nodiscard]] std::span<const std::byte> span() const { return b_; }
    [[nodiscard]] std::size_t size() const { return b_.size(); }

private:
    std::vector<std::byte> b_;
};

// --------------------------------------------------------------- header

TEST(WireRule, HeaderFieldsAreReadLittleEndianAtSpecOffsets) {
    Bytes b;
    b.header(0, 0x0A0B, 0x01020304, 0x1112131415161718, -0x0102030405060708);
    ASSERT_EQ(b.size(), qfb1::kPacketHeaderSize);
    const qfb1::PacketHeaderView h(b.span());
    EXPECT_TRUE(h.valid());
    EXPECT_EQ(h.magic(), 0x5146);
    EXPECT_EQ(h.version(), 1);
    EXPECT_EQ(h.msg_count(), 0);
    EXPECT_EQ(h.channel_id(), 0x0A0B);
    EXPECT_EQ(h.session(), 0x01020304u);
    EXPECT_EQ(h.packet_seq(), 0x1112131415161718u);
    EXPECT_EQ(h.send_time_ns(), -0x0102030405060708);
}

TEST(WireRule, DatagramShorterThanHeaderIsMalformedDroppedWholeCountedOnce) {
    SessionDecoder<qfb1::Protocol> dec;
    auto p = packet();
    p.heartbeat(1, 1, 0);
    const auto d = decode(dec, p.bytes().first(qfb1::kPacketHeaderSize - 1));
    EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed);
    EXPECT_EQ(d.result.fault, Fault::kShortHeader);
    EXPECT_TRUE(d.events.empty());
    EXPECT_EQ(decode(dec, {}).result.fault, Fault::kShortHeader);  // empty datagram
    EXPECT_EQ(counts(dec), (Counts{2, 0, 2, 0, 0, 0}));
}

TEST(WireRule, OtherMagicIsMalformedDroppedWholeCountedOnce) {
    SessionDecoder<qfb1::Protocol> dec;
    auto p = packet();
    p.quote(1, 1, 0, 100, 1, 101, 1);
    set_u16(p.mutable_bytes(), 0, 0x5147);
    const auto d = decode(dec, p.bytes());
    EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed);
    EXPECT_EQ(d.result.fault, Fault::kBadMagic);
    EXPECT_EQ(d.result.messages, 0);
    EXPECT_TRUE(d.events.empty());
    EXPECT_EQ(counts(dec), (Counts{1, 0, 1, 0, 0, 0}));
}

TEST(WireRule, OtherVersionIsMalformedDroppedWholeCountedOnce) {
    SessionDecoder<qfb1::Protocol> dec;
    auto p = packet();
    p.quote(1, 1, 0, 100, 1, 101, 1);
    set_u8(p.mutable_bytes(), 2, 2);
    const auto d = decode(dec, p.bytes());
    EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed);
    EXPECT_EQ(d.result.fault, Fault::kBadVersion);
    EXPECT_TRUE(d.events.empty());
    EXPECT_EQ(counts(dec), (Counts{1, 0, 1, 0, 0, 0}));
}

TEST(WireRule, MsgCountZeroIsAWellFormedEmptyPacket) {
    SessionDecoder<qfb1::Protocol> dec;
    const auto p = packet();
    ASSERT_EQ(p.size(), qfb1::kPacketHeaderSize);
    const auto d = decode(dec, p.bytes());
    EXPECT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    EXPECT_EQ(d.result.fault, Fault::kNone);
    EXPECT_EQ(d.result.messages, 0);
    EXPECT_TRUE(d.events.empty());
    EXPECT_EQ(counts(dec), (Counts{1, 0, 0, 0, 0, 0}));
}

// ------------------------------------------------------ message lengths

TEST(WireRule, KnownTypeWhoseLengthIsNotItsSizeIsMalformedAfterEarlierMessages) {
    struct Known { char type; std::size_t size; };
    for (const Known k : {Known{'I', 32}, Known{'Q', 48}, Known{'D', 40}, Known{'H', 24}}) {
        for (const std::size_t length : {k.size - 1, k.size + 1, k.size + 16, std::size_t{4}}) {
            SCOPED_TRACE(testing::Message() << k.type << " with length " << length);
            SessionDecoder<qfb1::Protocol> dec;
            auto p = packet();
            p.heartbeat(1, 1, 0).raw_message(k.type, body(length - 4)).heartbeat(2, 1, 0);
            const auto d = decode(dec, p.bytes());
            EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed);
            EXPECT_EQ(d.result.fault, Fault::kBadLength);
            EXPECT_EQ(d.result.messages, 1);
            ASSERT_EQ(d.events.size(), 1u);  // the heartbeat before the fault stands
            EXPECT_EQ(d.events[0].instrument_id, 1u);
            EXPECT_EQ(counts(dec), (Counts{1, 1, 1, 0, 0, 0}));
        }
        SCOPED_TRACE(testing::Message() << k.type << " with its exact length " << k.size);
        SessionDecoder<qfb1::Protocol> dec;
        auto p = packet();
        p.raw_message(k.type, body(k.size - 4));
        const auto d = decode(dec, p.bytes());
        EXPECT_EQ(d.result.verdict, PacketVerdict::kDecoded);
        EXPECT_EQ(d.events.size(), 1u);
    }
}

TEST(WireRule, SnapshotLengthMustBe32Plus16PerLevel) {
    const std::vector<PacketBuilder::SnapLevel> bids{{100, 1}, {99, 2}}, asks{{101, 3}};
    constexpr std::size_t kS = qfb1::kPacketHeaderSize + qfb1::kHeartbeatSize;  // S after one H
    auto good = packet();
    good.heartbeat(1, 1, 0).snapshot(2, 5, 0, bids, asks);
    {
        SessionDecoder<qfb1::Protocol> dec;
        const auto d = decode(dec, good.bytes());
        EXPECT_EQ(d.result.verdict, PacketVerdict::kDecoded);
        EXPECT_EQ(d.events.size(), 3u);  // H, begin, one levels event
    }
    struct Corrupt { const char* what; std::size_t off; std::uint8_t value; };
    for (const Corrupt c : {Corrupt{"n_bids one more", kS + 24, 3}, Corrupt{"n_bids one less", kS + 24, 1},
                            Corrupt{"n_asks one more", kS + 25, 2}, Corrupt{"n_asks zero", kS + 25, 0}}) {
        SCOPED_TRACE(c.what);
        auto bytes = std::vector<std::byte>(good.bytes().begin(), good.bytes().end());
        set_u8(bytes, c.off, c.value);
        SessionDecoder<qfb1::Protocol> dec;
        const auto d = decode(dec, bytes);
        EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed);
        EXPECT_EQ(d.result.fault, Fault::kBadLength);
        EXPECT_EQ(d.result.messages, 1);
        EXPECT_EQ(d.events.size(), 1u);  // the heartbeat only: no part of the snapshot
        EXPECT_EQ(counts(dec), (Counts{1, 1, 1, 0, 0, 0}));
    }
    {
        SCOPED_TRACE("S shorter than its 32-byte header");
        SessionDecoder<qfb1::Protocol> dec;
        auto p = packet();
        p.heartbeat(1, 1, 0).raw_message('S', body(24));
        const auto d = decode(dec, p.bytes());
        EXPECT_EQ(d.result.fault, Fault::kBadLength);
        EXPECT_EQ(d.events.size(), 1u);
        EXPECT_EQ(counts(dec), (Counts{1, 1, 1, 0, 0, 0}));
    }
}

TEST(WireRule, MessageRunningPastDatagramIsMalformedAfterEarlierMessages) {
    SessionDecoder<qfb1::Protocol> dec;
    auto p = packet();
    p.heartbeat(1, 1, 0).quote(2, 1, 0, 100, 1, 101, 1);
    const auto d = decode(dec, p.bytes().first(p.size() - 10));
    EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed);
    EXPECT_EQ(d.result.fault, Fault::kOverrun);
    EXPECT_EQ(d.result.messages, 1);
    ASSERT_EQ(d.events.size(), 1u);
    EXPECT_EQ(d.events[0].kind, EventKind::kHeartbeat);
    EXPECT_EQ(counts(dec), (Counts{1, 1, 1, 0, 0, 0}));
}

TEST(WireRule, LengthPastDatagramIsMalformedEvenForUnknownType) {
    SessionDecoder<qfb1::Protocol> dec;
    auto p = packet();
    p.heartbeat(1, 1, 0).raw_message('Z', body(8));
    set_u16(p.mutable_bytes(), qfb1::kPacketHeaderSize + qfb1::kHeartbeatSize, 400);  // claims 400 bytes
    const auto d = decode(dec, p.bytes());
    EXPECT_EQ(d.result.fault, Fault::kOverrun);
    EXPECT_EQ(d.events.size(), 1u);
    EXPECT_EQ(counts(dec), (Counts{1, 1, 1, 0, 0, 0}));
}

TEST(WireRule, DatagramEndingBeforeMsgCountIsMalformedAfterEarlierMessages) {
    SessionDecoder<qfb1::Protocol> dec;
    auto p = packet();
    p.heartbeat(1, 1, 0).heartbeat(2, 1, 0);
    set_u16(p.mutable_bytes(), 4, 3);  // claims a third message
    const auto d = decode(dec, p.bytes());
    EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed);
    EXPECT_EQ(d.result.fault, Fault::kTruncatedCount);
    EXPECT_EQ(d.result.messages, 2);
    EXPECT_EQ(d.events.size(), 2u);
    EXPECT_EQ(counts(dec), (Counts{1, 2, 1, 0, 0, 0}));

    auto q = packet();  // 2 bytes left: not even a message header
    q.heartbeat(1, 1, 0);
    q.mutable_bytes().resize(q.size() + 2);
    set_u16(q.mutable_bytes(), 4, 2);
    const auto e = decode(dec, q.bytes());
    EXPECT_EQ(e.result.fault, Fault::kTruncatedCount);
    EXPECT_EQ(e.events.size(), 1u);
    EXPECT_EQ(counts(dec), (Counts{2, 3, 2, 0, 0, 0}));
}

TEST(WireRule, BytesLeftAfterMsgCountMessagesAreMalformed) {
    SessionDecoder<qfb1::Protocol> dec;
    auto p = packet();
    p.heartbeat(1, 1, 0).heartbeat(2, 1, 0);
    p.mutable_bytes().resize(p.size() + 3);
    const auto d = decode(dec, p.bytes());
    EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed);
    EXPECT_EQ(d.result.fault, Fault::kTrailingBytes);
    EXPECT_EQ(d.result.messages, 2);
    EXPECT_EQ(d.events.size(), 2u);  // all msg_count messages stand
    EXPECT_EQ(counts(dec), (Counts{1, 2, 1, 0, 0, 0}));
}

TEST(WireRule, ExactlyMsgCountMessagesAreParsed) {
    SessionDecoder<qfb1::Protocol> dec;
    auto p = packet();
    p.heartbeat(1, 1, 0).heartbeat(2, 1, 0);
    set_u16(p.mutable_bytes(), 4, 1);  // the second heartbeat is now trailing bytes
    const auto d = decode(dec, p.bytes());
    EXPECT_EQ(d.result.fault, Fault::kTrailingBytes);
    ASSERT_EQ(d.events.size(), 1u);
    EXPECT_EQ(d.events[0].instrument_id, 1u);
    EXPECT_EQ(counts(dec), (Counts{1, 1, 1, 0, 0, 0}));
}

TEST(WireRule, UnknownTypeIsSkippedByLengthAndCountedFollowingMessagesRead) {
    SessionDecoder<qfb1::Protocol> dec;
    auto p = packet();
    p.heartbeat(1, 1, 0).raw_message('X', body(13)).raw_message('q', body(44)).quote(2, 9, 0, 100, 1, 101, 2);
    const auto d = decode(dec, p.bytes());
    EXPECT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    EXPECT_EQ(d.result.messages, 4);
    ASSERT_EQ(d.events.size(), 2u);
    EXPECT_EQ(d.events[1].kind, EventKind::kQuote);
    EXPECT_EQ(d.events[1].u.quote.seq, 9u);
    EXPECT_EQ(counts(dec), (Counts{1, 4, 0, 2, 0, 0}));
}

TEST(WireRule, LengthShorterThanMessageHeaderIsMalformedNotALoop) {
    for (const std::uint16_t length : {0, 1, 3}) {
        for (const char type : {'X', 'H'}) {
            SCOPED_TRACE(testing::Message() << type << " with length " << length);
            SessionDecoder<qfb1::Protocol> dec;
            auto p = packet();
            p.heartbeat(1, 1, 0).raw_message(type, body(20)).heartbeat(2, 1, 0);
            set_u16(p.mutable_bytes(), qfb1::kPacketHeaderSize + qfb1::kHeartbeatSize, length);
            const auto d = decode(dec, p.bytes());
            EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed);
            EXPECT_EQ(d.result.fault, Fault::kBadLength);
            EXPECT_EQ(d.events.size(), 1u);
            EXPECT_EQ(counts(dec), (Counts{1, 1, 1, 0, 0, 0}));
        }
    }
}

// ------------------------------------------------------------- sessions

TEST(WireRule, OlderSessionPacketIsDiscardedUnreadAndCounted) {
    SessionDecoder<qfb1::Protocol> dec;
    auto newer = packet(5);
    newer.heartbeat(1, 1, 0);
    ASSERT_EQ(decode(dec, newer.bytes()).events.size(), 1u);

    auto older = packet(4);
    older.quote(1, 1, 0, 100, 1, 101, 1);
    older.mutable_bytes().resize(older.size() + 5);  // would be malformed if it were read
    const auto d = decode(dec, older.bytes());
    EXPECT_EQ(d.result.verdict, PacketVerdict::kStaleSession);
    EXPECT_EQ(d.result.messages, 0);
    EXPECT_TRUE(d.events.empty());
    EXPECT_EQ(counts(dec), (Counts{2, 1, 0, 0, 1, 0}));

    EXPECT_EQ(decode(dec, newer.bytes()).result.verdict, PacketVerdict::kDecoded);  // same session is fine
}

TEST(WireRule, SessionsAreTrackedPerChannel) {
    SessionDecoder<qfb1::Protocol> dec;
    auto ch1 = packet(5, 1);
    ch1.heartbeat(1, 1, 0);
    auto ch2 = packet(3, 2);
    ch2.heartbeat(2, 1, 0);
    EXPECT_EQ(decode(dec, ch1.bytes()).result.verdict, PacketVerdict::kDecoded);
    const auto d = decode(dec, ch2.bytes());  // lower than channel 1's, but channel 2's first
    EXPECT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    ASSERT_EQ(d.events.size(), 1u);
    EXPECT_EQ(d.events[0].kind, EventKind::kHeartbeat);
    EXPECT_EQ(counts(dec), (Counts{2, 2, 0, 0, 0, 0}));

    auto old2 = packet(2, 2);
    EXPECT_EQ(decode(dec, old2.bytes()).result.verdict, PacketVerdict::kStaleSession);
}

TEST(WireRule, NewerSessionEmitsSessionChangeBeforeItsMessages) {
    SessionDecoder<qfb1::Protocol> dec;
    auto first = packet(1);
    first.heartbeat(1, 1, 0);
    const auto a = decode(dec, first.bytes());
    ASSERT_EQ(a.events.size(), 1u);  // the first session seen is no change
    EXPECT_EQ(a.events[0].kind, EventKind::kHeartbeat);

    auto next = packet(2);
    next.quote(1, 1, 0, 100, 1, 101, 1);
    const auto b = decode(dec, next.bytes(), 1);
    ASSERT_EQ(b.events.size(), 2u);
    EXPECT_EQ(b.events[0].kind, EventKind::kSessionChange);
    EXPECT_EQ(b.events[0].channel_id, kChannel);
    EXPECT_EQ(b.events[0].u.session.session, 2u);
    EXPECT_EQ(b.events[0].line, 1);
    EXPECT_EQ(b.events[1].kind, EventKind::kQuote);
    EXPECT_EQ(counts(dec), (Counts{2, 2, 0, 0, 0, 1}));

    EXPECT_EQ(decode(dec, next.bytes()).events.size(), 1u);  // same session again: no change
    EXPECT_EQ(counts(dec).session_changes, 1u);
}

// ---------------------------------------------------------- field values

TEST(WireRule, QuoteFieldsAreDecodedLittleEndianAtSpecOffsets) {
    Bytes b;
    b.header(1, 0x0102, 3, 4, 0x1122334455667788).msg(48, 'Q');
    b.le<std::uint32_t>(0x0A0B0C0D).le<std::uint64_t>(0x0102030405060708).le<std::int64_t>(-0x1112131415161718);
    b.le<std::int64_t>(-123456789012345).le<std::int64_t>(0x7FFFFFFFFFFFFFF0).le<std::uint32_t>(0xA1B2C3D4).le<std::uint32_t>(7);
    SessionDecoder<qfb1::Protocol> dec;
    const auto d = decode(dec, b.span(), 1);
    ASSERT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    ASSERT_EQ(d.events.size(), 1u);
    const Event& e = d.events[0];
    EXPECT_EQ(e.kind, EventKind::kQuote);
    EXPECT_EQ(e.recv_ns, kRecvNs);
    EXPECT_EQ(e.send_ns, 0x1122334455667788);
    EXPECT_EQ(e.channel_id, 0x0102);
    EXPECT_EQ(e.line, 1);
    EXPECT_EQ(e.instrument_id, 0x0A0B0C0Du);
    EXPECT_EQ(e.u.quote.seq, 0x0102030405060708u);
    EXPECT_EQ(e.u.quote.source_ns, -0x1112131415161718);
    EXPECT_EQ(e.u.quote.bid_px, -123456789012345);
    EXPECT_EQ(e.u.quote.ask_px, 0x7FFFFFFFFFFFFFF0);
    EXPECT_EQ(e.u.quote.bid_qty, 0xA1B2C3D4u);
    EXPECT_EQ(e.u.quote.ask_qty, 7u);
}

TEST(WireRule, DeltaFieldsAreDecodedLittleEndianAtSpecOffsets) {
    Bytes b;
    b.header(1, 9, 1, 1, 0).msg(40, 'D');
    b.le<std::uint32_t>(0x01020304).le<std::uint64_t>(0x1112131415161718).le<std::int64_t>(0x2122232425262728);
    b.le<std::int64_t>(-5).le<std::uint32_t>(0xDEADBEEF).le<std::uint8_t>(1).le<std::uint8_t>(1).zeros(2);
    SessionDecoder<qfb1::Protocol> dec;
    const auto d = decode(dec, b.span());
    ASSERT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    ASSERT_EQ(d.events.size(), 1u);
    const Event& e = d.events[0];
    EXPECT_EQ(e.kind, EventKind::kDelta);
    EXPECT_EQ(e.instrument_id, 0x01020304u);
    EXPECT_EQ(e.u.delta.seq, 0x1112131415161718u);
    EXPECT_EQ(e.u.delta.source_ns, 0x2122232425262728);
    EXPECT_EQ(e.u.delta.price, -5);
    EXPECT_EQ(e.u.delta.qty, 0xDEADBEEFu);
    EXPECT_EQ(e.u.delta.side, 1);
    EXPECT_EQ(e.u.delta.action, 1);
}

TEST(WireRule, HeartbeatFieldsAreDecodedLittleEndianAtSpecOffsets) {
    Bytes b;
    b.header(1, 9, 1, 1, 0).msg(24, 'H');
    b.le<std::uint32_t>(0xFFFFFFFE).le<std::uint64_t>(0x0807060504030201).le<std::int64_t>(-1);
    SessionDecoder<qfb1::Protocol> dec;
    const auto d = decode(dec, b.span());
    ASSERT_EQ(d.events.size(), 1u);
    const Event& e = d.events[0];
    EXPECT_EQ(e.kind, EventKind::kHeartbeat);
    EXPECT_EQ(e.instrument_id, 0xFFFFFFFEu);
    EXPECT_EQ(e.u.heartbeat.next_seq, 0x0807060504030201u);
    EXPECT_EQ(e.u.heartbeat.source_ns, -1);
}

TEST(WireRule, DefinitionFieldsAreDecodedWithSignedExponent) {
    Bytes b;
    b.header(1, 9, 1, 1, 0).msg(32, 'I');
    b.le<std::uint32_t>(0x00C0FFEE).text("EURUSD", 16).le<std::int8_t>(-8).zeros(7);
    SessionDecoder<qfb1::Protocol> dec;
    const auto d = decode(dec, b.span());
    ASSERT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    ASSERT_EQ(d.events.size(), 1u);
    const Event& e = d.events[0];
    EXPECT_EQ(e.kind, EventKind::kDefinition);
    EXPECT_EQ(e.instrument_id, 0x00C0FFEEu);
    EXPECT_EQ(std::string_view(e.u.definition.symbol, 6), "EURUSD");
    EXPECT_EQ(e.u.definition.symbol[6], '\0');
    EXPECT_EQ(e.u.definition.symbol[15], '\0');
    EXPECT_EQ(e.u.definition.price_exponent, -8);
}

TEST(WireRule, SnapshotFieldsAndLevelsAreDecodedAtSpecOffsets) {
    Bytes b;
    b.header(1, 9, 1, 1, 0).msg(32 + 16 * 3, 'S');
    b.le<std::uint32_t>(42).le<std::uint64_t>(0x0102030405060708).le<std::int64_t>(0x1112131415161718);
    b.le<std::uint8_t>(2).le<std::uint8_t>(1).zeros(6);
    b.le<std::int64_t>(-100).le<std::uint32_t>(0x01020304).zeros(4);
    b.le<std::int64_t>(-101).le<std::uint32_t>(6).zeros(4);
    b.le<std::int64_t>(0x0A0B0C0D0E0F1011).le<std::uint32_t>(7).zeros(4);
    SessionDecoder<qfb1::Protocol> dec;
    const auto d = decode(dec, b.span());
    ASSERT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    ASSERT_EQ(d.events.size(), 2u);
    const Event& s = d.events[0];
    EXPECT_EQ(s.kind, EventKind::kSnapshotBegin);
    EXPECT_EQ(s.instrument_id, 42u);
    EXPECT_EQ(s.u.snapshot.seq, 0x0102030405060708u);
    EXPECT_EQ(s.u.snapshot.source_ns, 0x1112131415161718);
    EXPECT_EQ(s.u.snapshot.n_bids, 2);
    EXPECT_EQ(s.u.snapshot.n_asks, 1);
    const Event& l = d.events[1];
    EXPECT_EQ(l.kind, EventKind::kSnapshotLevels);
    EXPECT_EQ(l.instrument_id, 42u);
    ASSERT_EQ(l.u.levels.count, 3);
    EXPECT_EQ(l.u.levels.price[0], -100);
    EXPECT_EQ(l.u.levels.qty[0], 0x01020304u);
    EXPECT_EQ(l.u.levels.price[1], -101);
    EXPECT_EQ(l.u.levels.qty[1], 6u);
    EXPECT_EQ(l.u.levels.price[2], 0x0A0B0C0D0E0F1011);
    EXPECT_EQ(l.u.levels.qty[2], 7u);
}

TEST(WireRule, SnapshotLevelsAreSplitIntoEventsOfUpToThree) {
    const std::vector<PacketBuilder::SnapLevel> bids{{100, 1}, {99, 2}, {98, 3}, {97, 4}},
        asks{{101, 5}, {102, 6}, {103, 7}};
    SessionDecoder<qfb1::Protocol> dec;
    auto p = packet();
    p.snapshot(1, 10, 0, bids, asks).snapshot(2, 0, 0, {}, {}).heartbeat(3, 1, 0);
    const auto d = decode(dec, p.bytes());
    ASSERT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    ASSERT_EQ(d.events.size(), 1u + 3u + 1u + 1u);  // 7 levels = 3 + 3 + 1; empty snapshot: begin only
    EXPECT_EQ(d.events[0].kind, EventKind::kSnapshotBegin);
    std::vector<std::int64_t> prices;
    for (int i = 1; i <= 3; ++i) {
        const Event& e = d.events[static_cast<std::size_t>(i)];
        EXPECT_EQ(e.kind, EventKind::kSnapshotLevels);
        EXPECT_EQ(e.u.levels.count, i < 3 ? 3 : 1);
        for (int k = 0; k < e.u.levels.count; ++k) prices.push_back(e.u.levels.price[k]);
    }
    EXPECT_EQ(prices, (std::vector<std::int64_t>{100, 99, 98, 97, 101, 102, 103}));  // bids then asks
    EXPECT_EQ(d.events[4].kind, EventKind::kSnapshotBegin);
    EXPECT_EQ(d.events[4].instrument_id, 2u);
    EXPECT_EQ(d.events[5].kind, EventKind::kHeartbeat);
    EXPECT_LE(d.events.size(), qfb1::max_events_for(p.size()));
}

// ------------------------------------------------------------ robustness

TEST(WireRule, NothingInADatagramMakesTheDecoderReadOutsideItOrStop) {
    const std::vector<PacketBuilder::SnapLevel> lv{{100, 1}, {99, 2}, {101, 3}, {102, 4}};
    auto base = packet();
    base.definition(1, "EURUSD").quote(1, 1, 0, 100, 1, 101, 1).delta(1, 2, 0, 99, 5, 0, 0);
    base.heartbeat(1, 3, 0).snapshot(1, 2, 0, std::span(lv).first(2), std::span(lv).last(2));
    base.raw_message('X', body(10));
    std::mt19937 rng(20240611);
    SessionDecoder<qfb1::Protocol> dec;
    for (int iter = 0; iter < 5000; ++iter) {
        std::vector<std::byte> v(base.bytes().begin(), base.bytes().end());
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int f = 0; f < flips; ++f) v[rng() % v.size()] = static_cast<std::byte>(rng());
        v.resize(rng() % 4 == 0 ? rng() % (v.size() + 40) : v.size());
        if (iter % 3 == 0 && v.size() >= 6) {  // keep the header valid more often
            set_u16(v, 0, qfb1::kMagic);
            set_u8(v, 2, qfb1::kVersion);
        }
        // Exactly sized heap copy: ASan reports any read past its end.
        const std::size_t n = v.size();
        auto exact = std::make_unique<std::byte[]>(n == 0 ? 1 : n);
        std::copy(v.begin(), v.end(), exact.get());
        const Counts before = counts(dec);
        std::size_t events = 0;
        const auto r = dec.decode(std::span<const std::byte>(exact.get(), n), 0, 0, [&](const Event&) { ++events; });
        const Counts after = counts(dec);
        ASSERT_LE(events, qfb1::max_events_for(n)) << "iteration " << iter;
        ASSERT_EQ(after.packets, before.packets + 1);
        ASSERT_LE(after.malformed - before.malformed, 1u) << "counted once";
        ASSERT_EQ(after.malformed - before.malformed, r.verdict == PacketVerdict::kMalformed ? 1u : 0u);
    }
}

}  // namespace
}  // namespace tickgate
