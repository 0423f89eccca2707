// ITCH 5.0 decoding (ITCH50.md "ITCH 5.0 messages and the book"): every
// type's size, the fields the book reads, and the real Nasdaq capture.
#include "tickgate/feed/itch50/decoder.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"

namespace tickgate::itch50 {
namespace {

std::span<const std::byte> span_of(const Bytes& b) { return {b.data(), b.size()}; }

OrderMessage decode_one(const Bytes& m, std::uint64_t position = 1) { return decode_message(span_of(m), position); }

TEST(Itch50Sizes, EveryTypeOfTheSpecHasNasdaqsPublishedSize) {
    // Nasdaq TotalView-ITCH 5.0, section 1 "Message Formats": the total length of each message.
    const std::map<char, std::size_t> published = {
        {'S', 12}, {'R', 39}, {'H', 25}, {'Y', 20}, {'L', 26}, {'V', 35}, {'W', 12}, {'K', 28},
        {'J', 35}, {'h', 21}, {'A', 36}, {'F', 40}, {'E', 31}, {'C', 36}, {'X', 23}, {'D', 19},
        {'U', 35}, {'P', 44}, {'Q', 40}, {'B', 19}, {'I', 50}, {'N', 20}, {'O', 48}};
    for (int t = 0; t < 256; ++t) {
        const auto it = published.find(static_cast<char>(t));
        EXPECT_EQ(size_of(static_cast<std::uint8_t>(t)), it == published.end() ? 0 : it->second) << char(t);
    }
}

TEST(Itch50Decode, CommonHeaderLocateTrackingAndU48Timestamp) {
    const std::int64_t ts = 0x0123'4567'89ABLL;  // all six bytes significant
    Bytes m = delete_order(0xBEEF, 42, ts);
    m[3] = std::byte{0x12};
    m[4] = std::byte{0x34};
    EXPECT_EQ(MessageView(span_of(m)).tracking_number(), 0x1234u);
    const OrderMessage o = decode_one(m, 99);
    EXPECT_EQ(o.stock_locate, 0xBEEFu);
    EXPECT_EQ(o.timestamp_ns, ts);
    EXPECT_EQ(o.position, 99u);
    EXPECT_EQ(o.type, 'D');
}

TEST(Itch50Decode, AddOrderAndAddOrderWithMpid) {
    for (const bool mpid : {false, true}) {
        const OrderMessage o = decode_one(add_order(7, 0x0102030405060708ULL, 'S', 300, 1234500, 5, mpid));
        EXPECT_EQ(o.action, Action::kAdd);
        EXPECT_EQ(o.type, mpid ? 'F' : 'A');
        EXPECT_EQ(o.order_ref, 0x0102030405060708ULL);
        EXPECT_EQ(o.side, 'S');
        EXPECT_EQ(o.shares, 300u);
        EXPECT_EQ(o.price, 1234500u);
    }
}

TEST(Itch50Decode, ExecutedAndExecutedWithPriceReduceByTheExecutedShares) {
    const OrderMessage e = decode_one(executed(7, 11, 25));
    EXPECT_EQ(e.action, Action::kExecute);
    EXPECT_EQ(e.order_ref, 11u);
    EXPECT_EQ(e.shares, 25u);
    const Bytes cm = executed_with_price(7, 12, 30, 999);
    const OrderMessage c = decode_one(cm);
    EXPECT_EQ(c.action, Action::kExecute);
    EXPECT_EQ(c.order_ref, 12u);
    EXPECT_EQ(c.shares, 30u);
    EXPECT_EQ(ExecutedWithPriceView(span_of(cm)).execution_price(), 999u);  // printed, not booked
}

TEST(Itch50Decode, CancelDeleteReplace) {
    const OrderMessage x = decode_one(cancel(7, 13, 40));
    EXPECT_EQ(x.action, Action::kCancel);
    EXPECT_EQ(x.order_ref, 13u);
    EXPECT_EQ(x.shares, 40u);
    const OrderMessage d = decode_one(delete_order(7, 14));
    EXPECT_EQ(d.action, Action::kDelete);
    EXPECT_EQ(d.order_ref, 14u);
    const OrderMessage u = decode_one(replace(7, 15, 16, 500, 77));
    EXPECT_EQ(u.action, Action::kReplace);
    EXPECT_EQ(u.order_ref, 15u);
    EXPECT_EQ(u.new_order_ref, 16u);
    EXPECT_EQ(u.shares, 500u);
    EXPECT_EQ(u.price, 77u);
}

TEST(Itch50Decode, DirectorySystemEventAndTradingAction) {
    const OrderMessage r = decode_one(stock_directory(3, "AAPL"));
    EXPECT_EQ(r.action, Action::kStockDirectory);
    EXPECT_EQ(std::string(r.symbol, kSymbolSize), "AAPL    ");
    const OrderMessage s = decode_one(system_event('Q', 1));
    EXPECT_EQ(s.action, Action::kSystemEvent);
    EXPECT_EQ(s.stock_locate, 0u);
    EXPECT_EQ(s.code, 'Q');
    const OrderMessage h = decode_one(trading_action(3, "AAPL", 'H'));
    EXPECT_EQ(h.action, Action::kTradingAction);
    EXPECT_EQ(h.code, 'H');
}

TEST(Itch50Decode, KnownTypesWithoutBookEffectAndUnknownTypes) {
    for (const char t : std::string("YLVWKJhPQBINO"))
        EXPECT_EQ(decode_one(message(t, 4, 0)).action, Action::kNoBookChange) << t;
    EXPECT_EQ(decode_one(message('z', 4, 0, 1)).action, Action::kUnknownType);
}

// decode_event (the stream's path, the wire read once) and
// to_event(decode_message) (the snapshot's and the tests' path) are one
// normalization: every field the rules read, for each kind.
void expect_same_event(const Event& a, const Event& b, const std::string& what) {
    SCOPED_TRACE(what);
    ASSERT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.recv_ns, b.recv_ns);
    EXPECT_EQ(a.send_ns, b.send_ns);
    EXPECT_EQ(a.instrument_id, b.instrument_id);
    EXPECT_EQ(a.channel_id, b.channel_id);
    EXPECT_EQ(a.line, b.line);
    EXPECT_EQ(a.u.venue.seq, b.u.venue.seq);
    EXPECT_EQ(a.u.venue.source_ns, b.u.venue.source_ns);
    switch (kind_of(a.kind)) {
        case Kind::kAddBid:
        case Kind::kAddAsk:
        case Kind::kDirectory: {
            const AddFields x = venue_fields<AddFields>(a), y = venue_fields<AddFields>(b);
            EXPECT_EQ(x.order_ref, y.order_ref);
            EXPECT_EQ(x.shares, y.shares);
            EXPECT_EQ(x.price, y.price);
            EXPECT_EQ(std::string_view(x.symbol, kSymbolSize), std::string_view(y.symbol, kSymbolSize));
            break;
        }
        case Kind::kReduce:
        case Kind::kDelete: {
            const ReduceFields x = venue_fields<ReduceFields>(a), y = venue_fields<ReduceFields>(b);
            EXPECT_EQ(x.order_ref, y.order_ref);
            EXPECT_EQ(x.shares, y.shares);
            break;
        }
        case Kind::kReplace: {
            const ReplaceFields x = venue_fields<ReplaceFields>(a), y = venue_fields<ReplaceFields>(b);
            EXPECT_EQ(x.order_ref, y.order_ref);
            EXPECT_EQ(x.new_order_ref, y.new_order_ref);
            EXPECT_EQ(x.shares, y.shares);
            EXPECT_EQ(x.price, y.price);
            break;
        }
        case Kind::kTradingAction:
        case Kind::kStockMessage:
        case Kind::kChannelMessage: {
            const CodeFields x = venue_fields<CodeFields>(a), y = venue_fields<CodeFields>(b);
            EXPECT_EQ(x.code, y.code);
            EXPECT_EQ(x.type, y.type);
            break;
        }
        default: break;
    }
}

TEST(Itch50Decode, DecodeEventIsToEventOfDecodeMessageForEveryTypeAndLocate) {
    std::mt19937_64 rng(20261204);
    int kinds_seen[32] = {};
    for (int t = 0; t < 256; ++t) {
        for (const std::uint16_t locate : {std::uint16_t{0}, std::uint16_t{1}, std::uint16_t{0xFFFF}}) {
            for (int round = 0; round < 20; ++round) {
                // Random bytes at the type's size (an unknown type: a few), the header set.
                const std::size_t size = is_known(static_cast<std::uint8_t>(t)) ? size_of(static_cast<std::uint8_t>(t)) : 1 + round;
                Bytes m(size);
                for (auto& b : m) b = static_cast<std::byte>(rng());
                m[0] = static_cast<std::byte>(t);
                if (size >= kCommonSize) store_be<std::uint16_t>(m.data() + kLocateOffset, locate);
                if (t == 'A' || t == 'F') m[19] = static_cast<std::byte>(round % 2 ? 'S' : 'B');
                const std::uint32_t ch = static_cast<std::uint32_t>(round % 3);
                const std::uint64_t position = rng();
                const std::int64_t recv = static_cast<std::int64_t>(rng() >> 2);
                const Event direct = decode_event(ch, span_of(m), position, recv);
                expect_same_event(direct, to_event(ch, decode_message(span_of(m), position), recv),
                                  "type " + std::to_string(t) + " locate " + std::to_string(locate));
                ++kinds_seen[static_cast<int>(kind_of(direct.kind))];
            }
        }
    }
    // Every message kind was produced (the comparison covered each switch arm).
    for (const Kind k : {Kind::kAddBid, Kind::kAddAsk, Kind::kReduce, Kind::kDelete, Kind::kReplace, Kind::kDirectory,
                         Kind::kTradingAction, Kind::kStockMessage, Kind::kChannelMessage, Kind::kUnknownMessage})
        EXPECT_GT(kinds_seen[static_cast<int>(k)], 0) << static_cast<int>(k);
}

TEST(Itch50PacketDecoder, CountsPacketsMessagesAndMalformedOnce) {
    PacketDecoder dec;
    std::vector<std::uint64_t> positions;
    auto sink = [&](const OrderMessage& o) { positions.push_back(o.position); };
    const Bytes msgs[] = {delete_order(1, 7), delete_order(1, 8)};
    const Bytes good = mold_packet("S1", 10, msgs);
    EXPECT_FALSE(dec.decode(span_of(good), moldudp64::read_key(span_of(good), 0), sink).malformed);
    Bytes bad = good;
    bad.push_back(std::byte{1});
    bad.push_back(std::byte{2});
    const PacketDecode r = dec.decode(span_of(bad), moldudp64::read_key(span_of(bad), 0), sink);
    EXPECT_TRUE(r.malformed);
    EXPECT_EQ(r.walk.received, 2u);
    const Bytes tiny(5);
    EXPECT_TRUE(dec.decode(span_of(tiny), moldudp64::read_key(span_of(tiny), 0), sink).malformed);
    const Bytes request = mold_request("S1", 1, 3);
    EXPECT_FALSE(dec.decode(span_of(request), moldudp64::read_key(span_of(request), 0), sink).malformed);
    EXPECT_EQ(positions, (std::vector<std::uint64_t>{10, 11, 10, 11}));
    EXPECT_EQ(dec.counters().packets.get(), 4u);
    EXPECT_EQ(dec.counters().messages.get(), 4u);
    EXPECT_EQ(dec.counters().malformed_packets.get(), 2u);
}

// The real capture (802.1Q-tagged Ethernet). Expected figures derived from
// the bytes by a short python script (struct over the pcap records: skip
// 0x8100 tags, IPv4 + UDP headers, then the MoldUDP64 blocks), and
// cross-checked with `tshark -r FILE -d udp.port==26477,moldudp64`:
// 100 datagrams, session 000010059B, positions 14757701-14757969 each once,
// U 99, A 125, D 30, F 6, I 5, E 3, S 1; the first of some types:
//   U 14757701 locate 7603: 15108479 -> 21361351, 100 shares at 1062600
//   A 14757721 locate 5528: ref 23508286 B 1600 IVOO at 873900
//   E 14757745 locate 2345: ref 23499418, 25 shares
//   F 14757764 locate 1738: ref 18923125 S 100 CASY at 2555200
//   S 14757772: event code Q at 34200000070384 ns (09:30:00.000070384)
TEST(Itch50RealCapture, NasdaqCaptureDecodesEveryMessageWithoutFault) {
    CaptureReader reader(TICKGATE_TEST_DATA_DIR "/captures/nasdaq-totalview-itch50-moldudp64-vlan.pcap");
    FrameCounters frames;
    PacketDecoder dec;
    std::map<char, int> by_type;
    std::map<char, OrderMessage> first;
    std::uint64_t lowest = UINT64_MAX, highest = 0;
    while (auto rec = reader.next()) {
        const auto dgram = extract_udp(reader.link_type(), rec->frame, frames);
        ASSERT_TRUE(dgram.has_value());
        const moldudp64::Key key = moldudp64::read_key(dgram->payload, 0);
        ASSERT_EQ(std::string_view(key.session.data(), key.session.size()), "000010059B");
        const PacketDecode r = dec.decode(dgram->payload, key, [&](const OrderMessage& o) {
            ++by_type[o.type];
            first.try_emplace(o.type, o);
            lowest = std::min(lowest, o.position);
            highest = std::max(highest, o.position);
        });
        EXPECT_FALSE(r.malformed);
    }
    EXPECT_EQ(frames.udp_datagrams, 100u);
    EXPECT_EQ(dec.counters().messages.get(), 269u);
    EXPECT_EQ(dec.counters().malformed_packets.get(), 0u);
    EXPECT_EQ(lowest, 14757701u);
    EXPECT_EQ(highest, 14757969u);
    EXPECT_EQ(by_type, (std::map<char, int>{{'U', 99}, {'A', 125}, {'D', 30}, {'F', 6}, {'I', 5}, {'E', 3}, {'S', 1}}));
    const OrderMessage& u = first['U'];
    EXPECT_EQ(u.position, 14757701u);
    EXPECT_EQ(u.stock_locate, 7603u);
    EXPECT_EQ(u.order_ref, 15108479u);
    EXPECT_EQ(u.new_order_ref, 21361351u);
    EXPECT_EQ(u.shares, 100u);
    EXPECT_EQ(u.price, 1062600u);
    const OrderMessage& a = first['A'];
    EXPECT_EQ(a.position, 14757721u);
    EXPECT_EQ(a.stock_locate, 5528u);
    EXPECT_EQ(a.order_ref, 23508286u);
    EXPECT_EQ(a.side, 'B');
    EXPECT_EQ(a.shares, 1600u);
    EXPECT_EQ(a.price, 873900u);
    EXPECT_EQ(first['E'].order_ref, 23499418u);
    EXPECT_EQ(first['E'].shares, 25u);
    EXPECT_EQ(first['F'].order_ref, 18923125u);
    EXPECT_EQ(first['F'].price, 2555200u);
    EXPECT_EQ(first['S'].code, 'Q');
    EXPECT_EQ(first['S'].timestamp_ns, 34200000070384);
}

TEST(Itch50RealCapture, AsxHeartbeatIsAHeartbeat) {
    // tcpdump -X: one 20-byte payload, session "1567326030", sequence 3466217, count 0.
    CaptureReader reader(TICKGATE_TEST_DATA_DIR "/captures/asx-itch-moldudp64-heartbeat.pcap");
    FrameCounters frames;
    int datagrams = 0;
    while (auto rec = reader.next()) {
        const auto dgram = extract_udp(reader.link_type(), rec->frame, frames);
        ASSERT_TRUE(dgram.has_value());
        const moldudp64::Key key = moldudp64::read_key(dgram->payload, 0);
        EXPECT_EQ(key.kind, moldudp64::PacketKind::kHeartbeat);
        EXPECT_EQ(key.seq, 3466217u);
        EXPECT_EQ(std::string_view(key.session.data(), key.session.size()), "1567326030");
        ++datagrams;
    }
    EXPECT_EQ(datagrams, 1);
}

}  // namespace
}  // namespace tickgate::itch50
