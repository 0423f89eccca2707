// CME MDP 3.0 wire format (shared/spec/MDP3.md "Framing"): packet header,
// SBE message header, and per template the root-block fields tickgate reads
// and the repeating groups that follow it. Little-endian, memcpy loads only;
// nothing here allocates or throws. The decoder is decoder.hpp.
//
// Layout source: CME's SBE schema templates_FixBinary.xml, schema id 1,
// version 6 (templates 27 29 32-38 41 42) and version 9 (46-56; the version 9
// file also carries the version 6 templates unchanged but for the order-id
// groups), as transcribed field by field in Open-Markets-Initiative/c-structs
// cme/Cme.Futures.Mdp3.Sbe.v1.6.h and v1.9.h (generated from those schemas).
// Offsets below are byte offsets inside the root block or a group entry.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "tickgate/endian.hpp"

namespace tickgate::mdp3 {

using tickgate::load_le;
using tickgate::store_le;

// Packet: MsgSeqNum u32, SendingTime u64.
inline constexpr std::size_t kPacketHeaderSize = 12;
// Message: MsgSize u16, then the SBE header BlockLength, TemplateId,
// SchemaId, Version (u16 each).
inline constexpr std::size_t kMessageHeaderSize = 10;
// CME's largest datagram is 1,420 bytes; a jumbo-free Ethernet MTU bounds it.
inline constexpr std::size_t kMaxDatagram = 1500;

// SBE group dimension encodings: groupSize (blockLength u16, numInGroup u8)
// and groupSize8Byte (blockLength u16, 5 bytes of padding, numInGroup u8).
enum class GroupHeader : std::uint8_t { kSize3, kSize8 };
[[nodiscard]] constexpr std::size_t group_header_size(GroupHeader h) noexcept { return h == GroupHeader::kSize3 ? 3 : 8; }

namespace tid {
inline constexpr std::uint16_t kChannelReset = 4;
inline constexpr std::uint16_t kHeartbeat = 12;
inline constexpr std::uint16_t kDefinitionFuture27 = 27;
inline constexpr std::uint16_t kDefinitionSpread29 = 29;
inline constexpr std::uint16_t kSecurityStatus = 30;
inline constexpr std::uint16_t kBook32 = 32;
inline constexpr std::uint16_t kDailyStatistics33 = 33;
inline constexpr std::uint16_t kLimitsBanding34 = 34;
inline constexpr std::uint16_t kSessionStatistics35 = 35;
inline constexpr std::uint16_t kTrade36 = 36;
inline constexpr std::uint16_t kVolume37 = 37;
inline constexpr std::uint16_t kSnapshot38 = 38;
inline constexpr std::uint16_t kDefinitionOption41 = 41;
inline constexpr std::uint16_t kTradeSummary42 = 42;
inline constexpr std::uint16_t kBook46 = 46;
inline constexpr std::uint16_t kOrderBook47 = 47;
inline constexpr std::uint16_t kTradeSummary48 = 48;
inline constexpr std::uint16_t kDailyStatistics49 = 49;
inline constexpr std::uint16_t kLimitsBanding50 = 50;
inline constexpr std::uint16_t kSessionStatistics51 = 51;
inline constexpr std::uint16_t kSnapshot52 = 52;
inline constexpr std::uint16_t kSnapshotOrderBook53 = 53;
inline constexpr std::uint16_t kDefinitionFuture54 = 54;
inline constexpr std::uint16_t kDefinitionOption55 = 55;
inline constexpr std::uint16_t kDefinitionSpread56 = 56;
}  // namespace tid

// What the decoder does with a template's entries.
enum class TemplateKind : std::uint8_t {
    kUnknown,       // not listed by MDP3.md: skipped by MsgSize, counted
    kBook,          // 32 / 46: sequenced book entries
    kSequenced,     // trades, statistics, volume, limits: sequenced only
    kSnapshot,      // 38 / 52
    kChannelReset,  // 4
    kHeartbeat,     // 12
    kStatus,        // 30: checked, refreshes and creates nothing
    kDefinition,    // 27 29 41 54 55 56
    kOrderBook,     // 47 / 53: known, checked and skipped
};

// Where an entry's SecurityID and RptSeq are (sequenced templates).
struct SeqFields {
    std::uint8_t security_id = 0;
    std::uint8_t rpt_seq = 0;
};

struct GroupLayout {
    GroupHeader header = GroupHeader::kSize3;
    std::uint16_t min_entry = 0;      // bytes read from each entry
    std::uint16_t since_version = 0;  // absent from messages of an older Version
};

inline constexpr std::size_t kMaxGroups = 6;

struct TemplateLayout {
    TemplateKind kind = TemplateKind::kUnknown;
    std::uint16_t min_root = 0;  // bytes read from the root block
    SeqFields seq;               // kBook / kSequenced
    std::uint8_t group_count = 0;
    std::array<GroupLayout, kMaxGroups> groups{};
    std::int8_t price_exponent = 0;  // of the template's prices (PRICE -7, PRICE9 -9)
};

// ---- field offsets (root blocks) ----
// Incremental refreshes (32-37, 42, 46-51), root: TransactTime u64 @0,
// MatchEventIndicator u8 @8, padding 2.
inline constexpr std::size_t kIncTransactTime = 0;
inline constexpr std::uint16_t kIncRootRead = 8;  // bytes read from their root: TransactTime
static_assert(kIncTransactTime + 8 <= kIncRootRead);  // TransactTime is inside what every one of them is checked to hold
// Snapshot 38 / 52, root: LastMsgSeqNumProcessed u32 @0, TotNumReports u32 @4,
// SecurityID i32 @8, RptSeq u32 @12, TransactTime u64 @16, LastUpdateTime u64
// @24, TradeDate u16 @32, MDSecurityTradingStatus u8 @34, then three prices.
inline constexpr std::size_t kSnapSecurityId = 8;
inline constexpr std::size_t kSnapRptSeq = 12;
inline constexpr std::size_t kSnapTransactTime = 16;
// Definitions 27 29 41 54 55 56, root: MatchEventIndicator u8 @0, TotNumReports
// u32 @1, SecurityUpdateAction char @5, LastUpdateTime u64 @6,
// MDSecurityTradingStatus u8 @14, ApplID i16 @15, MarketSegmentID u8 @17,
// UnderlyingProduct u8 @18, SecurityExchange char[4] @19, SecurityGroup
// char[6] @23, Asset char[6] @29, Symbol char[20] @35, SecurityID i32 @55.
inline constexpr std::size_t kDefUpdateAction = 5;  // 'A' add, 'M' modify, 'D' delete
inline constexpr std::size_t kDefSymbol = 35;
inline constexpr std::size_t kDefSymbolSize = 20;
inline constexpr std::size_t kDefSecurityId = 55;
// Definitions, second group NoMDFeedTypes: MDFeedType char[3] @0, MarketDepth i8 @3.
inline constexpr std::size_t kDefFeedTypesGroup = 1;
inline constexpr std::size_t kFeedType = 0;
inline constexpr std::size_t kFeedMarketDepth = 3;

// ---- field offsets (group entries) ----
// Book 32 / 46 NoMDEntries: MDEntryPx i64 @0 (null INT64_MAX), MDEntrySize i32
// @8 (null INT32_MAX), SecurityID i32 @12, RptSeq u32 @16, NumberOfOrders i32
// @20 (null INT32_MAX), MDPriceLevel u8 @24, MDUpdateAction u8 @25,
// MDEntryType char @26, padding 5.
inline constexpr std::size_t kBookPx = 0;
inline constexpr std::size_t kBookSize = 8;
inline constexpr std::size_t kBookSecurityId = 12;
inline constexpr std::size_t kBookRptSeq = 16;
inline constexpr std::size_t kBookOrders = 20;
inline constexpr std::size_t kBookLevel = 24;
inline constexpr std::size_t kBookAction = 25;
inline constexpr std::size_t kBookType = 26;
// Snapshot 38 / 52 NoMDEntries: MDEntryPx i64 @0, MDEntrySize i32 @8,
// NumberOfOrders i32 @12, MDPriceLevel i8 @16 (null 127), TradingReferenceDate
// u16 @17, OpenCloseSettlFlag u8 @19, SettlPriceType u8 @20, MDEntryType char @21.
inline constexpr std::size_t kSnapPx = 0;
inline constexpr std::size_t kSnapSize = 8;
inline constexpr std::size_t kSnapOrders = 12;
inline constexpr std::size_t kSnapLevel = 16;
inline constexpr std::size_t kSnapType = 21;

inline constexpr std::int32_t kNullInt32 = 2147483647;
inline constexpr std::int8_t kNullLevel = 127;  // a snapshot entry's MDPriceLevel when it has none

// Book entries are read through MDEntryType @26.
inline constexpr std::uint16_t kBookEntryRead = kBookType + 1;

namespace detail {
constexpr TemplateLayout incremental(TemplateKind kind, SeqFields seq, std::uint16_t min_entry, std::int8_t exponent) {
    TemplateLayout t;
    t.kind = kind;
    t.min_root = kIncRootRead;
    t.seq = seq;
    t.group_count = 1;
    t.groups[0] = {GroupHeader::kSize3, min_entry, 0};
    t.price_exponent = exponent;
    return t;
}
// A template with no group and no field read (heartbeat, security status).
constexpr TemplateLayout only(TemplateKind kind) {
    TemplateLayout t;
    t.kind = kind;
    return t;
}
constexpr TemplateLayout with_group(TemplateLayout t, GroupLayout g) {
    t.groups[t.group_count++] = g;
    return t;
}
constexpr TemplateLayout definition(std::uint8_t extra_groups, std::int8_t exponent) {
    TemplateLayout t;
    t.kind = TemplateKind::kDefinition;
    t.price_exponent = exponent;
    t.min_root = kDefSecurityId + 4;
    // NoEvents (EventType u8, EventTime u64), NoMDFeedTypes (read: 4 bytes),
    // NoInstAttrib (u32), NoLotTypeRules (i8, i32), then the template's own.
    t.groups[0] = {GroupHeader::kSize3, 0, 0};
    t.groups[1] = {GroupHeader::kSize3, 4, 0};
    t.groups[2] = {GroupHeader::kSize3, 0, 0};
    t.groups[3] = {GroupHeader::kSize3, 0, 0};
    t.group_count = 4;
    for (std::uint8_t i = 0; i < extra_groups; ++i) t.groups[t.group_count++] = {GroupHeader::kSize3, 0, 0};
    return t;
}
inline constexpr std::uint16_t kSnapEntryRead = kSnapType + 1;
// The order-id group of template 32 (groupSize8Byte) came with the
// market-by-order additions of schema version 8; a version 6 message ends
// after its NoMDEntries.
inline constexpr std::uint16_t kBook32OrderGroupSince = 8;

// The layout of `template_id` (kUnknown for templates MDP3.md does not list),
// built at compile time into kLayouts below.
[[nodiscard]] constexpr TemplateLayout make_layout(std::uint16_t template_id) noexcept {
    constexpr SeqFields kAt12_16{kBookSecurityId, kBookRptSeq};
    switch (template_id) {
        case tid::kBook32:
            return with_group(incremental(TemplateKind::kBook, kAt12_16, kBookEntryRead, -7),
                              {GroupHeader::kSize8, 0, detail::kBook32OrderGroupSince});
        case tid::kBook46:
            return with_group(incremental(TemplateKind::kBook, kAt12_16, kBookEntryRead, -9),
                              {GroupHeader::kSize8, 0, 0});
        // Trade 36 (v6): MDEntryPx @0, MDEntrySize @8, SecurityID @12, RptSeq @16, ...
        case tid::kTrade36: return incremental(TemplateKind::kSequenced, kAt12_16, 20, -7);
        // Trade summary 42 / 48: as 36, then NoOrderIDEntries (groupSize8Byte).
        case tid::kTradeSummary42:
            return with_group(incremental(TemplateKind::kSequenced, kAt12_16, 20, -7), {GroupHeader::kSize8, 0, 0});
        case tid::kTradeSummary48:
            return with_group(incremental(TemplateKind::kSequenced, kAt12_16, 20, -9), {GroupHeader::kSize8, 0, 0});
        // Daily statistics 33 / 49: MDEntryPx @0, MDEntrySize @8, SecurityID @12, RptSeq @16.
        case tid::kDailyStatistics33: return incremental(TemplateKind::kSequenced, kAt12_16, 20, -7);
        case tid::kDailyStatistics49: return incremental(TemplateKind::kSequenced, kAt12_16, 20, -9);
        // Limits banding 34 / 50: three prices @0 @8 @16, SecurityID @24, RptSeq @28.
        case tid::kLimitsBanding34: return incremental(TemplateKind::kSequenced, {24, 28}, 32, -7);
        case tid::kLimitsBanding50: return incremental(TemplateKind::kSequenced, {24, 28}, 32, -9);
        // Session statistics 35 / 51: MDEntryPx @0, SecurityID @8, RptSeq @12.
        case tid::kSessionStatistics35: return incremental(TemplateKind::kSequenced, {8, 12}, 16, -7);
        case tid::kSessionStatistics51: return incremental(TemplateKind::kSequenced, {8, 12}, 16, -9);
        // Volume 37: MDEntrySize i32 @0, SecurityID @4, RptSeq @8.
        case tid::kVolume37: return incremental(TemplateKind::kSequenced, {4, 8}, 12, 0);
        case tid::kSnapshot38:
        case tid::kSnapshot52: {
            TemplateLayout t;
            t.kind = TemplateKind::kSnapshot;
            t.min_root = kSnapTransactTime + 8;
            t.group_count = 1;
            t.groups[0] = {GroupHeader::kSize3, detail::kSnapEntryRead, 0};
            t.price_exponent = template_id == tid::kSnapshot38 ? -7 : -9;
            return t;
        }
        case tid::kChannelReset: {  // root TransactTime, MatchEventIndicator; NoMDEntries (ApplID i16)
            TemplateLayout t;
            t.kind = TemplateKind::kChannelReset;
            t.group_count = 1;
            t.groups[0] = {GroupHeader::kSize3, 0, 0};
            return t;
        }
        case tid::kHeartbeat: return only(TemplateKind::kHeartbeat);
        case tid::kSecurityStatus: return only(TemplateKind::kStatus);
        // Order book 47 (NoMDEntries) and snapshot order book 53 (NoMDEntries).
        case tid::kOrderBook47:
        case tid::kSnapshotOrderBook53: {
            TemplateLayout t;
            t.kind = TemplateKind::kOrderBook;
            t.group_count = 1;
            t.groups[0] = {GroupHeader::kSize3, 0, 0};
            return t;
        }
        case tid::kDefinitionFuture27: return detail::definition(0, -7);
        case tid::kDefinitionFuture54: return detail::definition(0, -9);
        case tid::kDefinitionSpread29: return detail::definition(1, -7);   // NoLegs
        case tid::kDefinitionSpread56: return detail::definition(1, -9);   // NoLegs
        case tid::kDefinitionOption41: return detail::definition(1, -7);   // NoUnderlyings
        case tid::kDefinitionOption55: return detail::definition(2, -9);   // NoUnderlyings, NoRelatedInstruments
        default: return {};
    }
}

// Every listed template id is below this: the decoder's per-message lookup
// is one indexed load, not a switch that rebuilds the layout.
inline constexpr std::uint16_t kLayoutIds = 64;
inline constexpr std::array<TemplateLayout, kLayoutIds> kLayouts = [] {
    std::array<TemplateLayout, kLayoutIds> t{};
    for (std::uint16_t id = 0; id < kLayoutIds; ++id) t[id] = make_layout(id);
    return t;
}();
inline constexpr TemplateLayout kUnknownLayout{};
static_assert(tid::kDefinitionSpread56 < kLayoutIds && tid::kSnapshotOrderBook53 < kLayoutIds);
}  // namespace detail

// The layout of `template_id` (kUnknown for templates MDP3.md does not list).
[[nodiscard]] constexpr const TemplateLayout& layout_of(std::uint16_t template_id) noexcept {
    return template_id < detail::kLayoutIds ? detail::kLayouts[template_id] : detail::kUnknownLayout;
}

// The shape the decoder's check of entries relies on (decoder.hpp entries_message):
// every kBook / kSequenced template reads kIncRootRead bytes of its root, has
// NoMDEntries (groupSize) and at most one group after it, of groupSize8Byte
// and read from nowhere; a kBook one has that group, and its entries are
// read through kBookEntryRead. An entry holds its SecurityID and RptSeq, so
// it is never empty (the decoder's loop steps by its length).
[[nodiscard]] constexpr bool has_incremental_shape(const TemplateLayout& t) noexcept {
    if (t.kind != TemplateKind::kBook && t.kind != TemplateKind::kSequenced) return true;
    const bool book = t.kind == TemplateKind::kBook;
    const std::uint16_t entry_read = t.groups[0].min_entry;
    return t.min_root == kIncRootRead && t.seq.security_id + 4 <= entry_read && t.seq.rpt_seq + 4 <= entry_read &&
           t.group_count >= 1 && t.group_count <= 2 &&
           t.groups[0].header == GroupHeader::kSize3 && t.groups[0].since_version == 0 &&
           (!book || (t.group_count == 2 && t.groups[0].min_entry == kBookEntryRead)) &&
           (t.group_count == 1 || (t.groups[1].header == GroupHeader::kSize8 && t.groups[1].min_entry == 0));
}
static_assert([] {
    for (const TemplateLayout& t : detail::kLayouts)
        if (!has_incremental_shape(t)) return false;
    return true;
}());
// The decoder reads a book entry's SecurityID and RptSeq at these constant
// offsets (decoder.hpp entries_message<true>), not through the layout's.
static_assert([] {
    for (const TemplateLayout& t : detail::kLayouts)
        if (t.kind == TemplateKind::kBook && (t.seq.security_id != kBookSecurityId || t.seq.rpt_seq != kBookRptSeq))
            return false;
    return true;
}());

// A repeating group located inside a message: `count` entries of `entry_len`
// bytes from `first`. Trivial (no member initializers): the decoder keeps
// one per group of each message and fills only those present. Word-sized
// fields, written and read back right after one at a time: a read wider than
// the write that made it cannot be forwarded from the store buffer (u16 + u8
// fields read back as one word stalled every message). Do not copy one whole.
struct GroupSpan {
    const std::byte* first;
    std::size_t entry_len;
    std::size_t count;
    [[nodiscard]] const std::byte* entry(std::size_t i) const noexcept { return first + i * entry_len; }
};

}  // namespace tickgate::mdp3
