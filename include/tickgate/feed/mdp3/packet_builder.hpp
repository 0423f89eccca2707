// Builds MDP 3.0 datagrams field by field, in the order of CME's SBE schema
// (templates_FixBinary.xml, schema id 1, version 9; see wire.hpp for the
// transcription it was checked against): the simulator's packets and the
// tests' (tests/feed/mdp3/). wire.hpp's offsets are deliberately not used
// here, so that a wrong offset there fails the decoder tests. Little-endian
// hosts only (x86-64, as everything tickgate builds for). Cold path: allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "tickgate/bytes.hpp"

namespace tickgate::mdp3::build {

// Appends SBE fields to a Bytes (the builders' one buffer type).
class Writer {
public:
    template <class T>
    Writer& put(T v) {
        const std::size_t at = b_.size();
        b_.resize(at + sizeof(T));
        std::memcpy(b_.data() + at, &v, sizeof(T));
        return *this;
    }
    Writer& zeros(std::size_t n) {
        b_.resize(b_.size() + n);
        return *this;
    }
    // `s` in a field of `n` bytes, NUL-padded (cut at n).
    Writer& chars(std::string_view s, std::size_t n) {
        const std::size_t at = b_.size();
        b_.resize(at + n);
        std::memcpy(b_.data() + at, s.data(), s.size() < n ? s.size() : n);
        return *this;
    }
    Writer& append(const Writer& o) {
        b_.insert(b_.end(), o.b_.begin(), o.b_.end());
        return *this;
    }
    [[nodiscard]] std::size_t size() const { return b_.size(); }
    [[nodiscard]] const Bytes& bytes() const { return b_; }
    Bytes& bytes() { return b_; }

private:
    Bytes b_;
};

// A message: MsgSize, SBE header (BlockLength = root's size, TemplateId,
// SchemaId 1, Version), root, groups.
inline Writer message(std::uint16_t template_id, std::uint16_t version, const Writer& root, const Writer& groups) {
    Writer m;
    m.put<std::uint16_t>(static_cast<std::uint16_t>(10 + root.size() + groups.size()))
        .put<std::uint16_t>(static_cast<std::uint16_t>(root.size()))
        .put<std::uint16_t>(template_id)
        .put<std::uint16_t>(1)
        .put<std::uint16_t>(version);
    return m.append(root).append(groups);
}

// Packet header: MsgSeqNum, SendingTime.
inline Writer packet(std::uint32_t seq, std::uint64_t sending_ns) {
    Writer p;
    p.put(seq).put(sending_ns);
    return p;
}

// Incremental root (templates 32-37, 42, 46-51): TransactTime,
// MatchEventIndicator (0x81: end of event, last trade message), 2 bytes of padding.
inline Writer incremental_root(std::uint64_t transact_ns) {
    Writer r;
    r.put(transact_ns).put<std::uint8_t>(0x81).zeros(2);
    return r;
}

// groupSize (blockLength u16, numInGroup u8) and groupSize8Byte (blockLength
// u16, 5 bytes of padding, numInGroup u8).
inline Writer group_header(std::uint16_t block_length, std::uint8_t count) {
    Writer g;
    g.put(block_length).put(count);
    return g;
}
inline Writer group_header8(std::uint16_t block_length, std::uint8_t count) {
    Writer g;
    g.put(block_length).zeros(5).put(count);
    return g;
}

// Book 32 / 46 NoMDEntries entry (32 bytes): MDEntryPx, MDEntrySize,
// SecurityID, RptSeq, NumberOfOrders, MDPriceLevel, MDUpdateAction,
// MDEntryType, 5 bytes of padding.
inline Writer book_entry(std::int64_t px, std::int32_t size, std::int32_t security_id, std::uint32_t rpt_seq,
                        std::uint8_t level, std::uint8_t action, char type, std::int32_t orders = 1) {
    Writer e;
    e.put(px).put(size).put(security_id).put(rpt_seq).put(orders).put(level).put(action).put(type).zeros(5);
    return e;
}
inline constexpr std::uint16_t kBookEntrySize = 32;
// Book 46's NoOrderIDEntries entry (groupSize8Byte): OrderID u64,
// MDOrderPriority u64, MDDisplayQty i32, ReferenceID u8, OrderUpdateAction u8,
// 2 bytes of padding.
inline constexpr std::uint16_t kOrderIdEntrySize = 24;

// Trade summary 48 NoMDEntries entry (32 bytes): MDEntryPx, MDEntrySize,
// SecurityID, RptSeq, NumberOfOrders, AggressorSide, MDUpdateAction (0 New),
// MDTradeEntryID u32, 2 bytes of padding.
inline Writer trade_entry(std::int64_t px, std::int32_t size, std::int32_t security_id, std::uint32_t rpt_seq,
                         std::uint8_t aggressor_side, std::uint32_t trade_id) {
    Writer e;
    e.put(px).put(size).put(security_id).put(rpt_seq).put<std::int32_t>(1).put(aggressor_side)
        .put<std::uint8_t>(0).put(trade_id).zeros(2);
    return e;
}
// Trade summary 48's NoOrderIDEntries entry (groupSize8Byte): OrderID u64,
// LastQty i32, 4 bytes of padding.
inline constexpr std::uint16_t kTradeOrderEntrySize = 16;

// Daily statistics 49 NoMDEntries entry (32 bytes): MDEntryPx, MDEntrySize,
// SecurityID, RptSeq, TradingReferenceDate u16, SettlPriceType u8,
// MDUpdateAction u8, MDEntryType char, 7 bytes of padding.
inline Writer statistics_entry(std::int64_t px, std::int32_t size, std::int32_t security_id, std::uint32_t rpt_seq,
                              std::uint16_t trade_date, char type) {
    Writer e;
    e.put(px).put(size).put(security_id).put(rpt_seq).put(trade_date).put<std::uint8_t>(0)
        .put<std::uint8_t>(0).put(type).zeros(7);
    return e;
}

// Snapshot 38 / 52 root (59 bytes): LastMsgSeqNumProcessed, TotNumReports,
// SecurityID, RptSeq, TransactTime, LastUpdateTime, TradeDate,
// MDSecurityTradingStatus (17: ready to trade), HighLimitPrice,
// LowLimitPrice, MaxPriceVariation (null: 0 here).
inline Writer snapshot_root(std::int32_t security_id, std::uint32_t rpt_seq, std::uint64_t transact_ns,
                           std::uint32_t last_msg_seq = 7, std::uint32_t reports = 1) {
    Writer r;
    r.put(last_msg_seq).put(reports).put(security_id).put(rpt_seq).put(transact_ns).put(transact_ns)
        .put<std::uint16_t>(0).put<std::uint8_t>(17).zeros(24);
    return r;
}
// Snapshot NoMDEntries entry (22 bytes): MDEntryPx, MDEntrySize,
// NumberOfOrders, MDPriceLevel i8, TradingReferenceDate, OpenCloseSettlFlag,
// SettlPriceType, MDEntryType.
inline Writer snapshot_entry(std::int64_t px, std::int32_t size, std::int8_t level, char type,
                            std::int32_t orders = 1) {
    Writer e;
    e.put(px).put(size).put(orders).put(level).put<std::uint16_t>(0).put<std::uint8_t>(0).put<std::uint8_t>(0).put(type);
    return e;
}
inline constexpr std::uint16_t kSnapshotEntrySize = 22;

// Instrument definition 27 / 54 root, up to SecurityID (59 bytes; CME's
// root goes on — BlockLength says where it ends, and readers skip the rest):
// MatchEventIndicator, TotNumReports, SecurityUpdateAction ('A' add),
// LastUpdateTime, MDSecurityTradingStatus, ApplID, MarketSegmentID,
// UnderlyingProduct, SecurityExchange, SecurityGroup, Asset, Symbol[20], SecurityID.
inline Writer definition_root(std::int32_t security_id, std::string_view symbol, std::uint32_t reports,
                             std::uint64_t update_ns) {
    Writer r;
    r.put<std::uint8_t>(0x80).put(reports).put<char>('A').put(update_ns).put<std::uint8_t>(17).put<std::int16_t>(310)
        .put<std::uint8_t>(1).put<std::uint8_t>(14).chars("XCME", 4).chars("SI", 6).chars("SI", 6).chars(symbol, 20)
        .put(security_id);
    return r;
}
// Definition NoMDFeedTypes entry (4 bytes): MDFeedType char[3] ("GBX",
// "GBI"), MarketDepth i8.
inline Writer feed_type_entry(std::string_view feed_type, std::int8_t depth) {
    Writer e;
    e.chars(feed_type, 3).put(depth);
    return e;
}

// ---- whole messages, schema version 9 ----

struct BookEntry {
    std::int64_t px;
    std::int32_t size;
    std::int32_t security_id;
    std::uint32_t rpt_seq;
    std::uint8_t level;
    std::uint8_t action;  // MDUpdateAction
    char type;            // MDEntryType: '0' bid, '1' offer, 'J' empty book, ...
    std::int32_t orders;
};
struct TradeEntry {
    std::int64_t px;
    std::int32_t size;
    std::int32_t security_id;
    std::uint32_t rpt_seq;
    std::uint8_t aggressor_side;
    std::uint32_t trade_id;
};
struct StatisticsEntry {
    std::int64_t px;
    std::int32_t size;
    std::int32_t security_id;
    std::uint32_t rpt_seq;
    char type;  // MDEntryType: '6' settlement, '7' high, '8' low, ...
};
struct SnapshotLevel {
    std::int64_t px;
    std::int32_t size;
    std::int32_t orders;
};

// MDIncrementalRefreshBook46 (with an empty NoOrderIDEntries), at most 255 entries.
Writer book_message(std::uint64_t transact_ns, std::span<const BookEntry> entries);
// MDIncrementalRefreshTradeSummary48 (with an empty NoOrderIDEntries).
Writer trade_summary_message(std::uint64_t transact_ns, std::span<const TradeEntry> entries);
// MDIncrementalRefreshDailyStatistics49.
Writer statistics_message(std::uint64_t transact_ns, std::span<const StatisticsEntry> entries);
// AdminHeartbeat12 (no root field, no group).
Writer heartbeat_message();
// SnapshotFullRefresh52: bids at levels 1.., then offers at levels 1...
Writer snapshot_message(std::int32_t security_id, std::uint32_t rpt_seq, std::uint64_t transact_ns,
                       std::uint32_t last_msg_seq, std::uint32_t reports, std::span<const SnapshotLevel> bids,
                       std::span<const SnapshotLevel> offers);
// MDInstrumentDefinitionFuture54: its symbol and a GBX feed of `depth`
// levels (and GBI of 2), empty NoEvents, NoInstAttrib, NoLotTypeRules.
Writer definition_message(std::int32_t security_id, std::string_view symbol, std::uint32_t reports,
                         std::uint64_t update_ns, std::int8_t depth);

}  // namespace tickgate::mdp3::build
