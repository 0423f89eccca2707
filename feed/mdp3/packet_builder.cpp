#include "tickgate/feed/mdp3/packet_builder.hpp"

#include "tickgate/feed/mdp3/wire.hpp"

namespace tickgate::mdp3::build {

namespace {
std::uint8_t count_of(std::size_t n) { return static_cast<std::uint8_t>(n < 255 ? n : 255); }
}  // namespace

Writer book_message(std::uint64_t transact_ns, std::span<const BookEntry> entries) {
    Writer groups = group_header(kBookEntrySize, count_of(entries.size()));
    for (std::size_t i = 0; i < count_of(entries.size()); ++i) {
        const BookEntry& e = entries[i];
        groups.append(book_entry(e.px, e.size, e.security_id, e.rpt_seq, e.level, e.action, e.type, e.orders));
    }
    groups.append(group_header8(kOrderIdEntrySize, 0));
    return message(tid::kBook46, 9, incremental_root(transact_ns), groups);
}

Writer trade_summary_message(std::uint64_t transact_ns, std::span<const TradeEntry> entries) {
    Writer groups = group_header(32, count_of(entries.size()));
    for (std::size_t i = 0; i < count_of(entries.size()); ++i) {
        const TradeEntry& e = entries[i];
        groups.append(trade_entry(e.px, e.size, e.security_id, e.rpt_seq, e.aggressor_side, e.trade_id));
    }
    groups.append(group_header8(kTradeOrderEntrySize, 0));
    return message(tid::kTradeSummary48, 9, incremental_root(transact_ns), groups);
}

Writer statistics_message(std::uint64_t transact_ns, std::span<const StatisticsEntry> entries) {
    Writer groups = group_header(32, count_of(entries.size()));
    for (std::size_t i = 0; i < count_of(entries.size()); ++i) {
        const StatisticsEntry& e = entries[i];
        groups.append(statistics_entry(e.px, e.size, e.security_id, e.rpt_seq, 0, e.type));
    }
    return message(tid::kDailyStatistics49, 9, incremental_root(transact_ns), groups);
}

Writer heartbeat_message() { return message(tid::kHeartbeat, 9, Writer{}, Writer{}); }

Writer snapshot_message(std::int32_t security_id, std::uint32_t rpt_seq, std::uint64_t transact_ns,
                       std::uint32_t last_msg_seq, std::uint32_t reports, std::span<const SnapshotLevel> bids,
                       std::span<const SnapshotLevel> offers) {
    Writer groups = group_header(kSnapshotEntrySize, count_of(bids.size() + offers.size()));
    const auto side = [&](std::span<const SnapshotLevel> levels, char type) {
        for (std::size_t i = 0; i < levels.size() && i < 127; ++i)
            groups.append(snapshot_entry(levels[i].px, levels[i].size, static_cast<std::int8_t>(i + 1), type,
                                         levels[i].orders));
    };
    side(bids, '0');
    side(offers, '1');
    return message(tid::kSnapshot52, 9, snapshot_root(security_id, rpt_seq, transact_ns, last_msg_seq, reports),
                   groups);
}

Writer definition_message(std::int32_t security_id, std::string_view symbol, std::uint32_t reports,
                         std::uint64_t update_ns, std::int8_t depth) {
    Writer groups = group_header(9, 0);  // NoEvents
    groups.append(group_header(4, 2)).append(feed_type_entry("GBX", depth)).append(feed_type_entry("GBI", 2));
    groups.append(group_header(4, 0));  // NoInstAttrib
    groups.append(group_header(5, 0));  // NoLotTypeRules
    return message(tid::kDefinitionFuture54, 9, definition_root(security_id, symbol, reports, update_ns), groups);
}

}  // namespace tickgate::mdp3::build
