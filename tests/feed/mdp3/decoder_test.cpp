// MDP3.md "Framing" and "Malformed input", one test per rule, on datagrams
// built byte by byte (mdp3_builder.hpp), and both real captures decoded whole.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <vector>

#include "mdp3_builder.hpp"
#include "tickgate/feed/arbitrated_decoder.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/channels.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/mdp3/decoder.hpp"
#include "tickgate/feed/mdp3/protocol.hpp"

namespace tickgate::mdp3 {
namespace {

using test::Writer;

struct Decoded {
    DecodeResult result;
    std::vector<Event> events;
};

Decoded decode(PacketDecoder& dec, const Writer& p, SessionMark mark = SessionMark::kCurrent) {
    Decoded out;
    const std::span<const std::byte> d(p.bytes());
    out.result = dec.decode(d, read_key(d, 3), mark, 100, 0, [&](const Event& ev) { out.events.push_back(ev); });
    return out;
}

Writer book46(std::uint64_t transact, std::vector<Writer> entries, std::uint16_t entry_len = 32) {
    Writer groups = test::group_header(entry_len, static_cast<std::uint8_t>(entries.size()));
    for (auto& e : entries) {
        e.zeros(entry_len - e.size());
        groups.append(e);
    }
    groups.append(test::group_header8(24, 0));
    return test::message(tid::kBook46, 9, test::incremental_root(transact), groups);
}

// A packet of one snapshot 52 (SecurityID 4242, RptSeq 17, TransactTime 888) of `entries` (22 bytes each), decoded.
Decoded decode_snapshot52(PacketDecoder& dec, const std::vector<Writer>& entries) {
    Writer groups = test::group_header(22, static_cast<std::uint8_t>(entries.size()));
    for (const Writer& e : entries) groups.append(e);
    Writer p = test::packet(1, 0);
    p.append(test::message(tid::kSnapshot52, 9, test::snapshot_root(4242, 17, 888), groups));
    return decode(dec, p);
}

// One entry of a volume message (37): MDEntrySize 5, then its SecurityID and RptSeq.
Writer volume37_entry(std::int32_t security_id, std::uint32_t rpt_seq) {
    Writer entry;
    entry.put<std::int32_t>(5).put(security_id).put(rpt_seq).put<std::uint8_t>(1).zeros(3);
    return entry;
}

// A volume message of `entries`, whose TransactTime is `transact`.
Writer volume37(std::uint64_t transact, const std::vector<Writer>& entries) {
    Writer groups = test::group_header(16, static_cast<std::uint8_t>(entries.size()));
    for (const Writer& e : entries) groups.append(e);
    return test::message(tid::kVolume37, 9, test::incremental_root(transact), groups);
}

Writer volume37(std::int32_t security_id, std::uint32_t rpt_seq) { return volume37(9, {volume37_entry(security_id, rpt_seq)}); }

TEST(Mdp3Framing, BookEntriesBecomeLevelEntriesWithDenseIds) {
    PacketDecoder dec;
    Writer p = test::packet(5, 1000);
    p.append(book46(777, {test::book_entry(12345, 7, 900001, 41, 2, 1, '1', 3), test::book_entry(-5, 2147483647, 42, 9, 1, 0, '0')}));
    p.append(book46(778, {test::book_entry(1, 1, 900001, 42, 1, 2, '1')}));
    const Decoded d = decode(dec, p);
    EXPECT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    EXPECT_EQ(d.result.messages, 2);
    ASSERT_EQ(d.events.size(), 3u);
    const Event& a = d.events[0];
    EXPECT_EQ(a.kind, kLevelEntry);
    EXPECT_EQ(a.instrument_id, 0u);
    EXPECT_EQ(a.channel_id, 3);
    EXPECT_EQ(a.send_ns, 1000);
    EXPECT_EQ(a.u.venue.seq, 41u);
    EXPECT_EQ(a.u.venue.source_ns, 777);
    EXPECT_EQ(entry_fields(a).price, 12345);
    EXPECT_EQ(entry_fields(a).qty, 7);
    EXPECT_EQ(entry_fields(a).orders, 3);
    EXPECT_EQ(entry_fields(a).level, 2);
    EXPECT_EQ(entry_fields(a).action, 1);
    EXPECT_EQ(entry_fields(a).entry_type, '1');
    EXPECT_EQ(entry_fields(a).price_exponent, -9) << "template 46 is schema 9: PRICENULL9";
    EXPECT_EQ(d.events[1].instrument_id, 1u);
    EXPECT_EQ(entry_fields(d.events[1]).qty, 0) << "a null MDEntrySize is 0";
    EXPECT_EQ(entry_fields(d.events[1]).price, -5);
    EXPECT_EQ(d.events[2].instrument_id, 0u) << "the same SecurityID keeps its index";
    EXPECT_EQ(dec.securities().security_id(0), 900001);
    EXPECT_EQ(dec.securities().security_id(1), 42);
}

TEST(Mdp3Framing, RootBlockAndEntriesAreReadByTheirOwnLengths) {
    PacketDecoder dec;
    Writer root = test::incremental_root(55);
    root.zeros(13);  // a newer version's longer root block
    Writer e = test::book_entry(10, 1, 7, 3, 1, 0, '0');
    Writer groups = test::group_header(40, 2);
    groups.append(e).zeros(8).append(test::book_entry(11, 2, 8, 4, 1, 0, '1')).zeros(8);
    groups.append(test::group_header8(24, 1)).zeros(24);
    Writer p = test::packet(1, 0);
    p.append(test::message(tid::kBook46, 10, root, groups));
    const Decoded d = decode(dec, p);
    EXPECT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    ASSERT_EQ(d.events.size(), 2u);
    EXPECT_EQ(d.events[0].u.venue.source_ns, 55);
    EXPECT_EQ(entry_fields(d.events[1]).price, 11);
    EXPECT_EQ(d.events[1].u.venue.seq, 4u);
}

TEST(Mdp3Framing, AGroupTheVersionDoesNotHaveIsAbsent) {
    PacketDecoder dec;
    Writer groups = test::group_header(32, 1).append(test::book_entry(10, 1, 7, 3, 1, 0, '0'));
    // Template 32's order-id group came with schema version 8: before it the
    // message ends after NoMDEntries; from it on, a missing one is a truncation.
    const struct {
        std::uint16_t version;
        PacketVerdict verdict;
    } cases[] = {{6, PacketVerdict::kDecoded}, {7, PacketVerdict::kDecoded}, {8, PacketVerdict::kMalformed},
                 {9, PacketVerdict::kMalformed}};
    std::uint32_t seq = 0;
    for (const auto& c : cases) {
        Writer p = test::packet(++seq, 0);
        p.append(test::message(tid::kBook32, c.version, test::incremental_root(1), groups));
        EXPECT_EQ(decode(dec, p).result.verdict, c.verdict) << "version " << c.version;
    }
}

TEST(Mdp3Framing, UnknownTemplatesAreSkippedAndCountedOrderBookOnesAreKnown) {
    PacketDecoder dec;
    Writer p = test::packet(1, 0);
    p.append(test::message(999, 9, Writer().zeros(6), Writer()));
    p.append(test::message(tid::kOrderBook47, 9, test::incremental_root(1), test::group_header(32, 1).zeros(32)));
    p.append(volume37(5, 1));
    const Decoded d = decode(dec, p);
    EXPECT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    EXPECT_EQ(d.result.messages, 3);
    EXPECT_EQ(dec.counters().unknown_messages.get(), 1u);
    ASSERT_EQ(d.events.size(), 1u);
    EXPECT_EQ(d.events[0].kind, kSequencedEntry);
    EXPECT_EQ(d.events[0].u.venue.seq, 1u);
}

TEST(Mdp3Framing, ChannelResetHeartbeatAndStatus) {
    PacketDecoder dec;
    Writer p = test::packet(1, 0);
    Writer reset_root;
    reset_root.put<std::uint64_t>(5).put<std::uint8_t>(0);
    p.append(test::message(tid::kChannelReset, 9, reset_root, test::group_header(2, 1).put<std::int16_t>(310)));
    p.append(test::message(tid::kHeartbeat, 9, Writer(), Writer()));
    p.append(test::message(tid::kSecurityStatus, 9, Writer().zeros(30), Writer()));
    const Decoded d = decode(dec, p);
    EXPECT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    ASSERT_EQ(d.events.size(), 2u);
    EXPECT_EQ(d.events[0].kind, kChannelReset);
    EXPECT_EQ(d.events[1].kind, kChannelHeartbeat);
}

TEST(Mdp3Framing, SnapshotLevelsInLevelOrderBidsFirstImpliedLeftOut) {
    PacketDecoder dec;
    const Decoded d = decode_snapshot52(
        dec, {test::snapshot_entry(101, 5, 1, '1'), test::snapshot_entry(99, 3, 2, '0'), test::snapshot_entry(100, 4, 1, '0'),
              test::snapshot_entry(98, 9, 1, 'E'), test::snapshot_entry(102, 6, 2, '1'), test::snapshot_entry(50, 0, 127, '6')});
    ASSERT_EQ(d.events.size(), 3u);
    EXPECT_EQ(d.events[0].kind, EventKind::kSnapshotBegin);
    EXPECT_EQ(d.events[0].u.snapshot.seq, 17u);
    EXPECT_EQ(d.events[0].u.snapshot.source_ns, 888);
    EXPECT_EQ(d.events[0].u.snapshot.n_bids, 2);
    EXPECT_EQ(d.events[0].u.snapshot.n_asks, 2);
    EXPECT_EQ(d.events[0].u.snapshot.price_exponent, -9);
    EXPECT_EQ(d.events[1].u.levels.count, 3);
    EXPECT_EQ(d.events[1].u.levels.price[0], 100);
    EXPECT_EQ(d.events[1].u.levels.price[1], 99);
    EXPECT_EQ(d.events[1].u.levels.price[2], 101);
    EXPECT_EQ(d.events[2].u.levels.count, 1);
    EXPECT_EQ(d.events[2].u.levels.price[0], 102);
    EXPECT_EQ(d.events[2].u.levels.qty[0], 6u);
}

// Each side's levels leave in level order whether the venue sent that side
// in order (taken as it comes) or not (sorted); equal levels keep wire order.
TEST(Mdp3Framing, SnapshotSidesInOrderOrNotLeaveInLevelOrderEqualLevelsInWireOrder) {
    PacketDecoder dec;
    // Bids in order, two at level 2; asks out of order.
    const Decoded d = decode_snapshot52(
        dec, {test::snapshot_entry(100, 1, 1, '0'), test::snapshot_entry(103, 4, 3, '1'), test::snapshot_entry(99, 2, 2, '0'),
              test::snapshot_entry(101, 5, 1, '1'), test::snapshot_entry(98, 3, 2, '0'), test::snapshot_entry(102, 6, 2, '1'),
              test::snapshot_entry(104, 7, 2, '1')});
    ASSERT_EQ(d.events.size(), 4u);
    EXPECT_EQ(d.events[0].u.snapshot.n_bids, 3);
    EXPECT_EQ(d.events[0].u.snapshot.n_asks, 4);
    std::vector<std::int64_t> prices;
    std::vector<std::uint32_t> qtys;
    for (std::size_t i = 1; i < d.events.size(); ++i)
        for (std::uint8_t k = 0; k < d.events[i].u.levels.count; ++k) {
            prices.push_back(d.events[i].u.levels.price[k]);
            qtys.push_back(d.events[i].u.levels.qty[k]);
        }
    EXPECT_EQ(prices, (std::vector<std::int64_t>{100, 99, 98, 101, 102, 104, 103}));
    EXPECT_EQ(qtys, (std::vector<std::uint32_t>{1, 2, 3, 5, 6, 7, 4}));
}

TEST(Mdp3Framing, DefinitionGivesSymbolAndGbxDepth) {
    for (const char action : {'A', 'D'}) {  // SecurityUpdateAction: add, delete
        SCOPED_TRACE(action);
        PacketDecoder dec;
        Writer root;
        root.put<std::uint8_t>(0).put<std::uint32_t>(1).put<char>(action).put<std::uint64_t>(0).put<std::uint8_t>(17)
            .put<std::int16_t>(310).put<std::uint8_t>(0).put<std::uint8_t>(0).chars("XCME", 4).chars("ES", 6).chars("ES", 6)
            .chars("ESZ6", 20).put<std::int32_t>(123456).zeros(224 - 59);
        Writer groups = test::group_header(9, 0);
        groups.append(test::group_header(4, 2)).chars("GBX", 3).put<std::int8_t>(10).chars("GBI", 3).put<std::int8_t>(2);
        groups.append(test::group_header(4, 0)).append(test::group_header(5, 0));
        Writer p = test::packet(1, 0);
        p.append(test::message(tid::kDefinitionFuture54, 9, root, groups));
        EXPECT_EQ(decode(dec, p).events.size(), 0u) << "stored: a definition takes no instrument slot";
        const StoredDefinition* stored = dec.definitions().find(123456);
        ASSERT_NE(stored, nullptr);
        EXPECT_EQ(stored->removed, action == 'D');
        Writer trade = test::packet(2, 0);
        trade.append(volume37(123456, 1));
        const Decoded d = decode(dec, trade);
        EXPECT_EQ(d.result.verdict, PacketVerdict::kDecoded);
        ASSERT_EQ(d.events.size(), 2u) << "its first entry brings the stored definition first";
        EXPECT_EQ(d.events[1].kind, kSequencedEntry);
        EXPECT_EQ(d.events[0].kind, EventKind::kDefinition);
        EXPECT_STREQ(std::string(d.events[0].u.definition.symbol, 16).c_str(), "ESZ6");
        EXPECT_EQ(d.events[0].u.definition.book_depth, 10);
        EXPECT_EQ(d.events[0].u.definition.price_exponent, -9);
        EXPECT_EQ(dec.securities().security_id(d.events[0].instrument_id), 123456);
        EXPECT_EQ(d.events[0].u.definition.removed, action == 'D');
    }
}

// A message's entries share its kind, TransactTime and price exponent,
// which the decoder writes once a message: an instrument's stored definition,
// emitted through the same event before its first entry, must leave the
// entries after it whole.
TEST(Mdp3Framing, ADefinitionEmittedBetweenEntriesLeavesTheNextEntriesWhole) {
    PacketDecoder dec;
    Writer defs = test::packet(1, 0);
    defs.append(test::definition_message(777, "ESZ6-LONG-SYMBOL", 2, 5, 10));
    defs.append(test::definition_message(888, "NQZ6-LONG-SYMBOL", 2, 5, 10));
    ASSERT_EQ(decode(dec, defs).events.size(), 0u);

    Writer p = test::packet(2, 0);
    // 5 takes a slot without a definition; 777 brings its definition between 5's entry and its own.
    p.append(book46(4444, {test::book_entry(100, 3, 5, 11, 1, 0, '0', 2), test::book_entry(200, 4, 777, 12, 2, 1, '1', 6),
                           test::book_entry(300, 5, 5, 13, 3, 2, '0', 7)}));
    p.append(volume37(5555, {volume37_entry(5, 14), volume37_entry(888, 15)}));
    p.append(volume37(6666, {volume37_entry(5, 16)}));
    const Decoded d = decode(dec, p);
    ASSERT_EQ(d.result.verdict, PacketVerdict::kDecoded);
    ASSERT_EQ(d.events.size(), 8u) << "three book entries, a definition before 777's; two volume entries, one before 888's; one more";
    const std::vector<EventKind> kinds{kLevelEntry, EventKind::kDefinition, kLevelEntry, kLevelEntry,
                                       kSequencedEntry, EventKind::kDefinition, kSequencedEntry, kSequencedEntry};
    for (std::size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(d.events[i].kind, kinds[i]) << i;
    const auto expect_book = [&](const Event& ev, std::uint32_t rpt_seq, std::int64_t px, std::int32_t qty,
                                 std::int32_t orders, std::uint8_t level, std::uint8_t action, char type) {
        EXPECT_EQ(ev.u.venue.seq, rpt_seq);
        EXPECT_EQ(ev.u.venue.source_ns, 4444) << rpt_seq;
        const EntryFields f = entry_fields(ev);
        EXPECT_EQ(f.price, px) << rpt_seq;
        EXPECT_EQ(f.qty, qty) << rpt_seq;
        EXPECT_EQ(f.orders, orders) << rpt_seq;
        EXPECT_EQ(f.level, level) << rpt_seq;
        EXPECT_EQ(f.action, action) << rpt_seq;
        EXPECT_EQ(f.entry_type, type) << rpt_seq;
        EXPECT_EQ(f.price_exponent, -9) << rpt_seq;
    };
    expect_book(d.events[0], 11, 100, 3, 2, 1, 0, '0');
    expect_book(d.events[2], 12, 200, 4, 6, 2, 1, '1');
    expect_book(d.events[3], 13, 300, 5, 7, 3, 2, '0');
    EXPECT_EQ(d.events[2].instrument_id, d.events[1].instrument_id) << "the definition is its instrument's";
    EXPECT_EQ(d.events[3].instrument_id, d.events[0].instrument_id);
    for (const std::size_t i : {4u, 6u}) {
        const Event& ev = d.events[i];
        EXPECT_EQ(ev.u.venue.seq, i == 4 ? 14u : 15u);
        EXPECT_EQ(ev.u.venue.source_ns, 5555) << i;
        const EntryFields f = entry_fields(ev);
        EXPECT_EQ(f.price, 0) << i << ": a sequenced entry carries no book fields";
        EXPECT_EQ(f.qty, 0) << i;
        EXPECT_EQ(f.orders, 0) << i;
        EXPECT_EQ(f.level, 0) << i;
        EXPECT_EQ(f.entry_type, '\0') << i;
        EXPECT_EQ(f.price_exponent, 0) << i << ": template 37 has no price";
    }
    EXPECT_EQ(d.events[7].u.venue.source_ns, 6666) << "the next message's own TransactTime";
    EXPECT_EQ(d.events[7].u.venue.seq, 16u);
}

TEST(Mdp3Framing, ASecurityIdThatDoesNotFitIsCounted) {
    PacketDecoder dec;
    dec.set_capacity(2, 8);
    Writer p = test::packet(1, 0);
    p.append(volume37(1, 1)).append(volume37(2, 1)).append(volume37(3, 1)).append(volume37(1, 2));
    const Decoded d = decode(dec, p);
    ASSERT_EQ(d.events.size(), 4u);
    EXPECT_EQ(d.events[2].instrument_id, PacketDecoder::kNoSlot) << "emitted beyond every instrument: out of range";
    EXPECT_EQ(dec.mdp3_counters().unslotted_messages.get(), 1u);
    EXPECT_EQ(dec.securities().find(3), SecurityMap::kNone);
}

TEST(Mdp3Session, ARestartAtOneOrARewindPastTheWindowIsANewSession) {
    SessionState s;
    std::int64_t clock = 0;  // SendingTime: every packet is sent after the one before
    const auto at = [&](std::uint64_t seq) {
        Key k;
        k.seq = seq;
        k.send_ns = ++clock;
        k.fault = Fault::kNone;
        return k;
    };
    EXPECT_EQ(s.observe(at(5000)), SessionMark::kFirst);
    EXPECT_EQ(s.observe(at(4001)), SessionMark::kCurrent) << "within the arbitration window";
    EXPECT_EQ(s.observe(at(5001)), SessionMark::kCurrent);
    const Key restart = at(1);
    EXPECT_EQ(s.observe(restart), SessionMark::kNewer);
    EXPECT_EQ(s.observe(restart), SessionMark::kCurrent) << "the other line's copy of the restart";
    const Key second = at(2);
    EXPECT_EQ(s.observe(second), SessionMark::kCurrent);
    EXPECT_EQ(s.observe(restart), SessionMark::kCurrent) << "the other line's copy, after this line's next packet";
    EXPECT_EQ(s.observe(at(3000)), SessionMark::kCurrent);
    Key lagging = second;  // sent before the newest packet: the other line a whole batch behind
    lagging.seq = 1500;
    lagging.send_ns = clock - 1;
    EXPECT_EQ(s.observe(lagging), SessionMark::kCurrent) << "a rewind sent earlier is no restart";
    EXPECT_EQ(s.observe(at(1999)), SessionMark::kNewer);
}

// A restart's first packets reach the handler on line A while line B still
// has the old session's last packets queued (a line may lag the other by
// more than one receive pass). Those are stale by their SendingTime:
// were they taken as the new session's, they would shadow its packets as
// duplicates and lose their entries (seen in Mdp3Live's restart scenario).
TEST(Mdp3Session, TheOtherLinesOldSessionPacketsAfterARestartAreStale) {
    EXPECT_EQ(SessionState{}.observe([] {
        Key k;
        k.seq = 7;
        return k;
    }()), SessionMark::kFirst);

    ReceiverConfig rc;  // arbitration on, the default window and hold
    const std::uint16_t channels[] = {3};
    ArbitratedDecoder<Protocol> front(rc, channels);
    struct Sink {
        std::vector<Event> events;
        void on_event(const Event& ev) { events.push_back(ev); }
        void on_packet_end() {}
    } sink;
    LineStats stats[2];
    // Old session: 498 and 499 (RptSeq 98, 99); new session: 1 and 2 (RptSeq 1, 2), sent later.
    std::vector<Writer> packets;
    const std::pair<std::uint32_t, std::uint64_t> sent[] = {{498, 4980}, {499, 4990}, {1, 5000}, {2, 5010}};
    const std::uint32_t rpt[] = {98, 99, 1, 2};
    for (std::size_t i = 0; i < 4; ++i)
        packets.push_back(test::packet(sent[i].first, sent[i].second).append(volume37(77, rpt[i])));
    for (std::uint8_t line = 0; line < 2; ++line)
        for (const Writer& p : packets) {
            const std::span<const std::byte> d(p.bytes());
            const RawDatagram raw{d, 1, 0, 0, 0, 0, line, 3, &stats[line]};
            front.offer(raw, read_key(d, 3), sink);
        }
    std::vector<std::uint64_t> entries;
    std::size_t sessions = 0, gaps = 0;
    for (const Event& ev : sink.events) {
        if (ev.kind == EventKind::kSessionChange) ++sessions;
        if (ev.kind == kChannelGap) ++gaps;
        if (ev.kind == kSequencedEntry) entries.push_back(sequenced_seq(ev));
    }
    EXPECT_EQ(entries, (std::vector<std::uint64_t>{98, 99, 1, 2})) << "each packet once, B's copies dropped";
    EXPECT_EQ(sessions, 1u);
    EXPECT_EQ(gaps, 0u);
    EXPECT_EQ(front.decoder_counters().stale_session_packets.get(), 2u) << "B's 498 and 499, after A's restart";
}

// ---- Malformed input: one test per clause; the message before the fault stands.

struct MalformedCase {
    const char* name;
    Writer bad;   // appended after one good message
    Fault fault;  // what the decoder says stopped it
};

TEST(Mdp3Malformed, EveryClauseStopsThePacketOnceAndKeepsWhatCameBefore) {
    std::vector<MalformedCase> cases;
    cases.push_back({"one byte where a message would start", Writer().put<std::uint8_t>(0), Fault::kTruncatedCount});
    cases.push_back({"MsgSize below 10", Writer().put<std::uint16_t>(9).zeros(7), Fault::kBadLength});
    cases.push_back({"MsgSize past the datagram", Writer().put<std::uint16_t>(200).zeros(30), Fault::kOverrun});
    {
        Writer m = volume37(1, 1);
        m.bytes()[2] = std::byte{200};  // BlockLength past the message
        cases.push_back({"BlockLength past the message", m, Fault::kOverrun});
    }
    {
        // an incremental root of 4 bytes: shorter than TransactTime, the entries' header after it
        Writer groups = test::group_header(32, 0).append(test::group_header8(24, 0));
        cases.push_back({"book root shorter than TransactTime", test::message(tid::kBook46, 9, Writer().zeros(4), groups),
                         Fault::kBadLength});
        cases.push_back({"sequenced root shorter than TransactTime",
                         test::message(tid::kVolume37, 9, Writer().zeros(4), test::group_header(16, 0)), Fault::kBadLength});
        // the same root, and the message ends there: the root's fault comes first
        cases.push_back({"short root, then the message ends", test::message(tid::kBook46, 9, Writer().zeros(4), Writer()),
                         Fault::kBadLength});
        // a root of 4 bytes said, 2 sent: past the message comes first
        Writer cut = test::message(tid::kBook46, 9, Writer().zeros(2), Writer());
        cut.bytes()[2] = std::byte{4};
        cases.push_back({"short root past the message", cut, Fault::kOverrun});
    }
    cases.push_back({"NoMDEntries' header past the message",
                     test::message(tid::kBook46, 9, test::incremental_root(1), Writer().put<std::uint16_t>(32)),
                     Fault::kOverrun});
    {
        // book entries of 20 bytes: shorter than the fields read (through MDEntryType @26)
        Writer groups = test::group_header(20, 1).zeros(20).append(test::group_header8(24, 0));
        cases.push_back({"entry shorter than its fields", test::message(tid::kBook46, 9, test::incremental_root(1), groups),
                         Fault::kBadLength});
    }
    {
        Writer groups = test::group_header(32, 3).append(test::book_entry(1, 1, 1, 1, 1, 0, '0'));
        cases.push_back({"numInGroup entries do not fit", test::message(tid::kBook46, 9, test::incremental_root(1), groups),
                         Fault::kOverrun});
    }
    {
        // a whole book entry, then an order-id group header cut short: nothing of it applies
        Writer groups = test::group_header(32, 1).append(test::book_entry(1, 1, 1, 2, 1, 0, '0')).put<std::uint16_t>(24);
        cases.push_back({"group header past the message", test::message(tid::kBook46, 9, test::incremental_root(1), groups),
                         Fault::kOverrun});
    }
    {
        // a whole book entry, then an order-id group whose entries do not fit
        Writer groups = test::group_header(32, 1)
                            .append(test::book_entry(1, 1, 1, 2, 1, 0, '0'))
                            .append(test::group_header8(24, 2))
                            .zeros(24);
        cases.push_back({"order-id entries do not fit", test::message(tid::kBook46, 9, test::incremental_root(1), groups),
                         Fault::kOverrun});
    }
    cases.push_back({"snapshot root shorter than its fields",
                     test::message(tid::kSnapshot52, 9, Writer().zeros(20), test::group_header(22, 0)), Fault::kBadLength});
    for (const MalformedCase& c : cases) {
        PacketDecoder dec;
        Writer p = test::packet(1, 0);
        p.append(volume37(9, 1)).append(c.bad);
        const Decoded d = decode(dec, p);
        EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed) << c.name;
        EXPECT_EQ(d.result.fault, c.fault) << c.name;
        EXPECT_EQ(d.result.messages, 1) << c.name;
        ASSERT_EQ(d.events.size(), 1u) << c.name;
        EXPECT_EQ(d.events[0].kind, kSequencedEntry) << c.name;
        EXPECT_EQ(dec.counters().malformed_packets.get(), 1u) << c.name;
    }
}

TEST(Mdp3Malformed, APacketShorterThanItsHeader) {
    PacketDecoder dec;
    Writer p;
    p.zeros(11);
    const Decoded d = decode(dec, p);
    EXPECT_EQ(d.result.verdict, PacketVerdict::kMalformed);
    EXPECT_EQ(dec.counters().packets.get(), 1u);
    EXPECT_EQ(dec.counters().malformed_packets.get(), 1u);
}

// ---- The real captures, every datagram decoded (no arbitration). Expected
// figures from the bytes by an independent Python script (struct.unpack over
// the pcap/pcapng records: Ethernet -> IPv4 -> UDP payload; per message
// MsgSize, BlockLength, TemplateId; per group entry SecurityID and RptSeq at
// the schema's offsets), not from tickgate.

struct ChannelFigures {
    std::uint64_t packets, duplicates, gaps, lost;
    bool operator==(const ChannelFigures&) const = default;
};

struct CaptureFigures {
    std::uint64_t datagrams = 0;
    std::map<std::uint64_t, ChannelFigures> channels;  // by destination (group << 16 | port)
    std::map<std::uint16_t, std::uint64_t> events_by_template;  // see decode_capture
    std::map<std::int32_t, std::uint64_t> last_rpt_seq;
    std::uint64_t malformed = 0;
    std::uint64_t unknown = 0;
    std::uint64_t messages = 0;
};

CaptureFigures decode_capture(const std::string& path) {
    CaptureReader reader(path);
    FrameCounters fc;
    PacketDecoder dec;
    CaptureFigures f;
    std::map<std::uint32_t, std::uint64_t> last_by_index;
    std::map<std::uint64_t, std::uint16_t> channel_of;  // a channel per destination, as without a config
    while (auto rec = reader.next()) {
        const auto udp = extract_udp(reader.link_type(), rec->frame, fc);
        if (!udp) continue;
        ++f.datagrams;
        const std::uint64_t dest = std::uint64_t{udp->dst_ip} << 16 | udp->dst_port;
        const auto [it, added] = channel_of.emplace(dest, static_cast<std::uint16_t>(channel_of.size() + 1));
        const Key key = read_key(udp->payload, it->second);
        dec.decode(udp->payload, key, added ? SessionMark::kFirst : SessionMark::kCurrent, rec->ts_ns, 0, [&](const Event& ev) {
            if (ev.kind != kLevelEntry && ev.kind != kSequencedEntry) return;
            ++f.events_by_template[ev.kind == kLevelEntry ? 1 : 2];
            std::uint64_t& last = last_by_index[ev.instrument_id];
            if (ev.u.venue.seq > last) last = ev.u.venue.seq;
        });
    }
    for (const auto& [index, last] : last_by_index) f.last_rpt_seq[dec.securities().security_id(index)] = last;
    f.malformed = dec.counters().malformed_packets.get();
    f.unknown = dec.counters().unknown_messages.get();
    f.messages = dec.counters().messages.get();
    for (std::uint32_t slot = 0; slot < dec.channel_count(); ++slot) {
        const ChannelCounters& c = dec.channel_counters(slot);
        for (const auto& [dest, id] : channel_of)
            if (id == dec.channel_id(slot))
                f.channels[dest] = {c.packets.get(), c.duplicate_packets.get(), c.gaps.get(), c.lost_packets.get()};
    }
    return f;
}

std::uint64_t dest(const char* group, std::uint16_t port) {
    unsigned a, b, c, d;
    EXPECT_EQ(std::sscanf(group, "%u.%u.%u.%u", &a, &b, &c, &d), 4);
    return std::uint64_t{(a << 24) | (b << 16) | (c << 8) | d} << 16 | port;
}

TEST(Mdp3Captures, Version9ExampleDecodesWhole) {
    const CaptureFigures f = decode_capture(TICKGATE_TEST_DATA_DIR "/captures/cme-mdp3-v9.1-ab-example.pcap");
    EXPECT_EQ(f.datagrams, 99u);
    EXPECT_EQ(f.malformed, 0u);
    EXPECT_EQ(f.unknown, 0u);
    EXPECT_EQ(f.messages, 170u + 8 + 8 + 8);             // 46, 48, 37, 47
    EXPECT_EQ(f.events_by_template.at(1), 860u);          // template 46 entries
    EXPECT_EQ(f.events_by_template.at(2), 8u + 8);        // 48 and 37 entries
    EXPECT_EQ(f.last_rpt_seq.size(), 242u);
    EXPECT_EQ(f.last_rpt_seq.at(18), 2580u);
    EXPECT_EQ(f.last_rpt_seq.at(1232), 1428u);
    EXPECT_EQ(f.last_rpt_seq.at(5893), 19538u);
    EXPECT_EQ(f.channels.size(), 18u);
    // Per line (no config: a channel per destination): packets, duplicates, gaps, lost.
    EXPECT_EQ(f.channels.at(dest("224.0.28.19", 14360)), (ChannelFigures{8, 0, 1, 1}));
    EXPECT_EQ(f.channels.at(dest("224.0.28.146", 15360)), (ChannelFigures{9, 0, 0, 0}));
    EXPECT_EQ(f.channels.at(dest("224.0.28.6", 14315)), (ChannelFigures{8, 0, 1, 1}));
    EXPECT_EQ(f.channels.at(dest("224.0.28.156", 15348)), (ChannelFigures{2, 0, 1, 1}));
    EXPECT_EQ(f.channels.at(dest("224.0.28.8", 14317)), (ChannelFigures{2, 0, 0, 0}));
}

TEST(Mdp3Captures, Version6DecodesWhole) {
    const CaptureFigures f = decode_capture(TICKGATE_TEST_DATA_DIR "/captures/cme-mdp3-v6.1-ab.pcapng");
    EXPECT_EQ(f.datagrams, 10000u);
    EXPECT_EQ(f.malformed, 0u);
    EXPECT_EQ(f.unknown, 0u);
    EXPECT_EQ(f.messages, 19138u + 614 + 388 + 388 + 18);  // 32, 35, 42, 37, 12
    EXPECT_EQ(f.events_by_template.at(1), 29148u);          // template 32 entries
    EXPECT_EQ(f.events_by_template.at(2), 792u + 812 + 710);  // 35, 37, 42 entries
    EXPECT_EQ(f.last_rpt_seq.size(), 127u);
    EXPECT_EQ(f.last_rpt_seq.at(3543), 124u);
    EXPECT_EQ(f.last_rpt_seq.at(14998), 295u);
    EXPECT_EQ(f.last_rpt_seq.at(34108), 132u);
    EXPECT_EQ(f.channels.at(dest("224.0.31.64", 14340)), (ChannelFigures{5000, 0, 0, 0}));
    EXPECT_EQ(f.channels.at(dest("224.0.32.64", 15340)), (ChannelFigures{5000, 0, 0, 0}));
}

TEST(Mdp3Framing, APacketWhoseMsgSeqNumWasTakenIsNotParsedAndAJumpIsAChannelGap) {
    PacketDecoder dec;
    const auto send = [&](std::uint32_t seq, SessionMark mark = SessionMark::kCurrent) {
        Writer p = test::packet(seq, 0);
        p.append(volume37(1, seq));
        return decode(dec, p, mark).events;
    };
    EXPECT_EQ(send(10, SessionMark::kFirst).size(), 1u);
    EXPECT_EQ(send(10).size(), 0u) << "line B's copy";
    EXPECT_EQ(send(9).size(), 0u) << "late";
    const std::vector<Event> after_gap = send(13);
    ASSERT_EQ(after_gap.size(), 2u);
    EXPECT_EQ(after_gap[0].kind, kChannelGap);
    EXPECT_EQ(after_gap[0].channel_id, 3);
    const std::vector<Event> restart = send(1, SessionMark::kNewer);
    ASSERT_EQ(restart.size(), 2u);
    EXPECT_EQ(restart[0].kind, EventKind::kSessionChange);
    EXPECT_EQ(restart[1].kind, kSequencedEntry) << "a new session: no gap, seq 1 parsed";
    const ChannelCounters& c = dec.channel_counters(0);
    EXPECT_EQ(c.packets.get(), 5u);
    EXPECT_EQ(c.duplicate_packets.get(), 2u);
    EXPECT_EQ(c.gaps.get(), 1u);
    EXPECT_EQ(c.lost_packets.get(), 2u);
}

}  // namespace
}  // namespace tickgate::mdp3

namespace tickgate::mdp3 {
namespace {

Writer channel_reset4() {
    Writer root;
    root.put<std::uint64_t>(5).put<std::uint8_t>(0);
    return test::message(tid::kChannelReset, 9, root, test::group_header(2, 1).put<std::int16_t>(310));
}

// MDP3.md "Malformed input": MsgSeqNum 0 is corrupt — the packet is
// malformed whole, its messages not read, and it moves no channel state
// (not taken as a first packet, not deduplicated against, no gap to what follows).
TEST(Mdp3Malformed, MsgSeqNumZeroIsMalformedWholeUnreadAndMovesNoChannelState) {
    SessionDecoder<Protocol> dec;
    std::vector<Event> events;
    const auto send = [&](std::uint32_t seq) {
        Writer p = test::packet(seq, 0);
        p.append(volume37(1, seq + 100));
        const std::span<const std::byte> d(p.bytes());
        return dec.decode(d, 100, 0, [&](const Event& ev) { events.push_back(ev); }, 3);
    };
    EXPECT_EQ(send(0).verdict, PacketVerdict::kMalformed);
    EXPECT_EQ(send(0).fault, Fault::kBadSequence) << "every copy: malformed, never a duplicate";
    EXPECT_TRUE(events.empty()) << "its messages are not read";
    EXPECT_EQ(send(50).verdict, PacketVerdict::kDecoded);
    EXPECT_EQ(send(0).verdict, PacketVerdict::kMalformed);
    EXPECT_EQ(send(51).verdict, PacketVerdict::kDecoded);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].kind, kSequencedEntry) << "50 is the channel's first packet: no gap from 0";
    EXPECT_EQ(events[1].kind, kSequencedEntry) << "0 between 50 and 51 moved nothing: no gap, no session";
    const ChannelCounters& c = dec.protocol_decoder().channel_counters(0);
    EXPECT_EQ(c.packets.get(), 5u);
    EXPECT_EQ(c.gaps.get(), 0u);
    EXPECT_EQ(c.duplicate_packets.get(), 0u);
    EXPECT_EQ(dec.counters().malformed_packets.get(), 3u);
    EXPECT_EQ(dec.counters().session_changes.get(), 0u);
}

// MDP3.md "ChannelReset": only the incremental feed's resets a channel; one
// carried on a snapshot or definition line is read and acts on nothing.
TEST(Mdp3Framing, OnlyAnIncrementalLinesChannelResetActsNotASnapshotOrDefinitionLines) {
    PacketDecoder dec;
    std::vector<Event> events;
    const auto sink = [&](const Event& ev) { events.push_back(ev); };
    Writer p = test::packet(1, 0);
    p.append(channel_reset4());
    const std::span<const std::byte> d(p.bytes());
    for (const std::uint8_t line : {kSnapshotLineA, kDefinitionLineB})
        EXPECT_EQ(dec.decode_unarbitrated(d, read_key(d, 3), 100, line, sink).verdict, PacketVerdict::kDecoded);
    EXPECT_TRUE(events.empty());
    EXPECT_EQ(dec.mdp3_counters().ignored_channel_resets.get(), 2u);
    EXPECT_EQ(dec.channel_counters(0).resets.get(), 0u);
    (void)dec.decode(d, read_key(d, 3), SessionMark::kFirst, 100, kLineA, sink);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].kind, kChannelReset);
    EXPECT_EQ(dec.channel_counters(0).resets.get(), 1u);
}

// Item 8: every channel keeps its own MsgSeqNum, past 256 channels too (the
// decoder had 256 slots; channels beyond shared the last one's state).
TEST(Mdp3Channels, EveryChannelPast256KeepsItsOwnMsgSeqNum) {
    PacketDecoder dec;
    constexpr std::uint16_t kChannels = 300;
    std::size_t entries = 0;
    const auto sink = [&](const Event& ev) { entries += ev.kind == kSequencedEntry; };
    for (std::uint32_t seq = 1; seq <= 3; ++seq)
        for (std::uint16_t ch = 1; ch <= kChannels; ++ch) {
            Writer p = test::packet(seq, 0);
            p.append(volume37(ch, seq));
            const std::span<const std::byte> d(p.bytes());
            (void)dec.decode(d, read_key(d, ch), seq == 1 ? SessionMark::kFirst : SessionMark::kCurrent, 100, 0, sink);
        }
    EXPECT_EQ(entries, 3u * kChannels) << "no packet taken for another channel's copy";
    ASSERT_EQ(dec.channel_count(), kChannels);
    for (std::uint32_t slot = 0; slot < dec.channel_count(); ++slot) {
        SCOPED_TRACE(dec.channel_id(slot));
        EXPECT_EQ(dec.channel_id(slot), slot + 1);
        EXPECT_EQ(dec.channel_counters(slot).packets.get(), 3u);
        EXPECT_EQ(dec.channel_counters(slot).duplicate_packets.get(), 0u);
        EXPECT_EQ(dec.channel_counters(slot).gaps.get(), 0u);
    }
}

}  // namespace
}  // namespace tickgate::mdp3
