// ITCH 5.0's sequencer stage behind the MoldUDP64 stream: the per-instrument
// rules of ITCH50.md ("ITCH 5.0 messages and the book", "Liveness and the
// gate") and the real Nasdaq capture end to end.
#include "tickgate/feed/itch50/rules.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tickgate/book/gate.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/moldudp64/stream.hpp"

namespace tickgate::itch50 {
namespace {

constexpr std::int64_t kMs = 1'000'000;

// Stream + sequencer (ITCH's rules) + book + gate on one channel slot (or two).
struct Pipeline {
    explicit Pipeline(std::uint32_t max_orders = 1024, std::uint32_t max_instruments = 16384,
                      std::optional<std::int32_t> utc_offset = std::nullopt)
        : instruments(max_instruments), book(max_instruments, max_orders, 4096),
          seq(instruments, book, sequencer_capacity(max_instruments)), stream(moldudp64::StreamConfig{}, 2),
          gate(instruments, GateConfig{250, 2000}) {
        seq.venue().configure(2, utc_offset);
    }
    void feed(const Bytes& d, std::int64_t t = 0, std::uint32_t ch = 0) {
        const std::span<const std::byte> s(d.data(), d.size());
        stream.expire(t, sink);
        stream.on_datagram(ch, s, moldudp64::read_key(s, static_cast<std::uint16_t>(ch)), t, sink);
    }
    void feed(std::uint64_t position, std::vector<Bytes> msgs, std::int64_t t = 0, std::string_view session = "S1") {
        feed(mold_packet(session, position, msgs), t);
    }
    InstrumentTable instruments;
    Book book;
    Sequencer seq;
    StreamEvents<ApplyToSequencer> sink{{seq}};
    moldudp64::Stream<MoldPayload> stream;
    Gate gate;
};

std::vector<std::pair<std::int64_t, std::uint64_t>> side(const OrderBook& b, std::uint32_t id, Side s) {
    std::vector<std::pair<std::int64_t, std::uint64_t>> v;
    for (const OrderLevel& l : b.side(id, s)) v.emplace_back(l.price, l.shares);
    return v;
}

TEST(ItchSequencer, EachOrderMessageTypeChangesTheBookAsTheTable) {
    Pipeline p;
    p.feed(1, {stock_directory(5, "AAPL"), add_order(5, 1, 'B', 100, 1500000), add_order(5, 2, 'S', 200, 1510000, 0, true),
               executed(5, 1, 10), executed_with_price(5, 1, 20, 1499000), cancel(5, 2, 50), add_order(5, 3, 'B', 5, 1490000),
               delete_order(5, 3), replace(5, 2, 4, 70, 1520000), trading_action(5, "AAPL", 'T')});
    EXPECT_EQ(side(p.book, 5, Side::kBid), (std::vector<std::pair<std::int64_t, std::uint64_t>>{{1500000, 70}}));
    EXPECT_EQ(side(p.book, 5, Side::kAsk), (std::vector<std::pair<std::int64_t, std::uint64_t>>{{1520000, 70}}));
    EXPECT_EQ(p.book.open_orders(5), 2u);
    const InstrumentState& st = p.instruments.state(5);
    EXPECT_STREQ(st.symbol, "AAPL");
    EXPECT_EQ(st.price_exponent, -4);
    EXPECT_EQ(st.counters.accepted, 10u);
    EXPECT_EQ(st.last_seq, 10u);
    EXPECT_EQ(p.seq.venue().trading_state(5), 'T');
    EXPECT_FALSE(st.suspect);  // read from 1, alive after the packet
    EXPECT_TRUE(p.gate.check(5, 0).ok());
}

TEST(ItchSequencer, StockLocateZeroBelongsToNoInstrument) {
    Pipeline p;
    p.feed(1, {system_event('O', 1), message('V', 0, 2), message('W', 0, 3)});
    EXPECT_TRUE(p.instruments.seen_ids().empty());
    EXPECT_EQ(p.seq.venue().system_event(0), 'O');
}

TEST(ItchSequencer, UnknownTypeIsCountedOncePerPositionAndCreatesNoInstrument) {
    Pipeline p;
    const std::vector<Bytes> msgs = {message('z', 9, 0, 20), add_order(5, 1, 'B', 1, 1)};
    p.feed(1, msgs);
    p.feed(1, msgs);  // the other line's copy: a duplicate position, not counted again
    EXPECT_EQ(p.seq.venue().channel_counters(0).unknown_messages.get(), 1u);
    EXPECT_FALSE(p.instruments.state(9).seen);
    EXPECT_EQ(p.instruments.state(5).last_seq, 2u);
}

TEST(ItchSequencer, UnknownReferenceIsCountedChangesNoBookAndIsStillAccepted) {
    Pipeline p;
    p.feed(1, {add_order(5, 1, 'B', 100, 10), executed(5, 99, 1), delete_order(5, 98), replace(5, 97, 96, 1, 1), cancel(5, 95, 1)});
    EXPECT_EQ(p.seq.venue().counters(5).unknown_orders, 4u);
    EXPECT_EQ(p.instruments.state(5).counters.accepted, 5u);
    EXPECT_EQ(p.instruments.state(5).last_seq, 5u);
    EXPECT_EQ(side(p.book, 5, Side::kBid), (std::vector<std::pair<std::int64_t, std::uint64_t>>{{10, 100}}));
}

TEST(ItchSequencer, OverExecutionRemovesTheOrderAndIsCounted) {
    Pipeline p;
    p.feed(1, {add_order(5, 1, 'S', 100, 10), executed(5, 1, 150)});
    EXPECT_EQ(p.seq.venue().counters(5).over_executions, 1u);
    EXPECT_EQ(p.book.open_orders(5), 0u);
}

TEST(ItchSequencer, FullOrderStoreCountsTheRefusedAddAndMarksTheInstrumentSuspect) {
    Pipeline p(2);
    p.feed(1, {add_order(5, 1, 'S', 1, 10), add_order(6, 2, 'S', 1, 10), add_order(6, 3, 'S', 1, 11)});
    EXPECT_EQ(p.seq.venue().counters(6).refused_adds, 1u);
    EXPECT_TRUE(p.instruments.state(6).suspect);
    EXPECT_FALSE(p.instruments.state(5).suspect);
    EXPECT_EQ(p.gate.check(6, 0).reason, GateReason::kSuspect);
}

TEST(ItchSequencer, LateJoinMakesEveryInstrumentSuspectIncludingThoseSeenLater) {
    Pipeline p;
    p.feed(100, {add_order(5, 1, 'B', 1, 10)});
    EXPECT_TRUE(p.instruments.state(5).suspect);
    p.feed(101, {add_order(6, 2, 'B', 1, 10)}, 1);
    EXPECT_TRUE(p.instruments.state(6).suspect);
    EXPECT_EQ(p.stream.channel(0).counters.late_join_messages.get(), 99u);
}

TEST(ItchSequencer, GivenUpHoleMakesTheChannelSuspectAndStopsLiveness) {
    Pipeline p;
    p.feed(1, {add_order(5, 1, 'B', 1, 10)}, 0);
    EXPECT_FALSE(p.instruments.state(5).suspect);
    p.feed(3, {add_order(5, 3, 'B', 1, 10)}, 1 * kMs);  // hole 2
    p.feed(mold_heartbeat("S1", 4), 600 * kMs);           // expire first: given up
    EXPECT_EQ(p.stream.channel(0).counters.lost_messages.get(), 1u);
    EXPECT_TRUE(p.instruments.state(5).suspect);
    EXPECT_EQ(p.instruments.last_alive_ns(5), 0);  // never refreshed after the hole opened
}

TEST(ItchSequencer, InstrumentFirstSeenWhileAHoleIsOpenIsSuspectUntilARefresh) {
    Pipeline p;
    p.feed(1, {add_order(5, 1, 'B', 1, 10)}, 0);
    p.feed(3, {add_order(7, 3, 'B', 1, 10)}, 1 * kMs);  // 7 held behind hole 2
    p.feed(2, {add_order(8, 2, 'B', 1, 10)}, 2 * kMs);  // fills: 8 and 7 applied, then refreshed
    EXPECT_FALSE(p.instruments.state(7).suspect);
    EXPECT_EQ(p.instruments.last_alive_ns(7), 2 * kMs);
}

// Liveness is the channel's: every clean packet moves its one clock, so an
// instrument without messages of its own stays fresh while the channel
// flows, and no packet walks the channel's instruments (each instrument's
// own time stays where its first refresh left it). An instrument first
// seen leaves its cold start with the packet that brought it.
TEST(ItchSequencer, LivenessIsTheChannelsOneClockAndNewInstrumentsLeaveTheirColdStartAtOnce) {
    Pipeline p;
    p.feed(1, {add_order(5, 1, 'B', 1, 10)}, 0);
    for (std::uint64_t k = 2; k <= 6; ++k) p.feed(k, {add_order(6, k, 'B', 1, 10)}, std::int64_t(k) * 100 * kMs);
    EXPECT_EQ(p.instruments.last_alive_ns(5), 600 * kMs);
    EXPECT_EQ(p.instruments.state(5).last_alive_ns, 0) << "no walk of the channel's instruments per packet";
    EXPECT_EQ(p.gate.check(5, 700 * kMs).reason, GateReason::kOk);  // 100 ms of silence: the channel's
    EXPECT_EQ(p.gate.check(5, 900 * kMs).reason, GateReason::kStale);
    EXPECT_EQ(p.gate.check(5, 900 * kMs).silence_ms, 300);
    p.feed(7, {add_order(7, 7, 'B', 1, 10)}, 601 * kMs);  // a new instrument: alive at once
    EXPECT_TRUE(p.instruments.state(7).alive);
    EXPECT_FALSE(p.instruments.state(7).suspect);
    EXPECT_EQ(p.instruments.last_alive_ns(7), 601 * kMs);
}

TEST(ItchSequencer, NewSessionReadFromOneEmptiesBooksAndIsClean) {
    Pipeline p;
    p.feed(5, {add_order(5, 1, 'B', 1, 10)}, 0, "OLD");  // late join: suspect
    EXPECT_TRUE(p.instruments.state(5).suspect);
    p.feed(1, {add_order(6, 2, 'S', 1, 10)}, 1, "NEW");
    EXPECT_EQ(p.book.open_orders(5), 0u);
    EXPECT_EQ(p.instruments.state(5).last_seq, 0u);
    EXPECT_FALSE(p.instruments.state(5).suspect);
    EXPECT_FALSE(p.instruments.state(6).suspect);
    EXPECT_EQ(p.book.open_orders(6), 1u);
}

TEST(ItchSequencer, UtcOffsetAutoIsTimestampMinusUtcTimeOfDayToTheQuarterHour) {
    EXPECT_EQ(estimate_utc_offset_minutes(34'200'000'070'384, (13LL * 3600 + 30 * 60) * 1'000'000'000 + 5'000'000), -240);
    // 00:59:01 venue time at 23:59:00 UTC: one hour ahead, across midnight.
    EXPECT_EQ(estimate_utc_offset_minutes((59LL * 60 + 1) * 1'000'000'000, (23LL * 3600 + 59 * 60) * 1'000'000'000), 60);
    EXPECT_EQ(estimate_utc_offset_minutes(0, 0), 0);
}

TEST(ItchSequencer, SourceAgeIsVenueNowMinusTheTimestampWrappedAroundMidnight) {
    // Venue at UTC+0 (configured): a message stamped 23:59:59 venue time
    // arriving at 00:00:01 UTC is 2 s old, not a day.
    Pipeline p(1024, 16384, 0);
    const std::int64_t day = 20'000 * kNsPerDay;
    p.feed(1, {add_order(5, 1, 'B', 1, 10, kNsPerDay - 1'000'000'000)}, day + 1'000'000'000);
    EXPECT_EQ(p.instruments.state(5).last_source_ns, day - 1'000'000'000);
    EXPECT_EQ(p.gate.check(5, day + 1'000'000'000).reason, GateReason::kOk);
    EXPECT_EQ(p.gate.check(5, day + 1'500'000'000).reason, GateReason::kStale);  // 500 ms of silence first
}

// The age is taken from the venue clock's distance to a remembered day
// start (no division per message): through forward days, a clock set back
// two days, negative clocks and a stamp past 24 h, each message's source
// instant must be what the direct formula gives: arrival minus (venue now
// minus the stamp, wrapped into +-12 h).
TEST(ItchSequencer, SourceInstantIsTheDirectFormulaWhereverTheClockJumps) {
    constexpr std::int32_t kOffsetMinutes = -240;
    Pipeline p(1024, 16384, kOffsetMinutes);
    const auto direct = [](std::int64_t recv, std::int64_t stamp) {
        std::int64_t d = (recv + std::int64_t{kOffsetMinutes} * kNsPerMinute - stamp) % kNsPerDay;
        if (d < 0) d += kNsPerDay;
        if (d >= kNsPerDay / 2) d -= kNsPerDay;
        return recv - d;
    };
    const std::int64_t t0 = 1'704'067'200'000'000'000;  // 2024-01-01 00:00 UTC
    const std::int64_t s = 1'000'000'000;
    const std::pair<std::int64_t, std::int64_t> arrivals[] = {
        {t0 + 14 * 3600 * s, (10LL * 3600) * s},               // 10:00 venue time, on time
        {t0 + 14 * 3600 * s + 5 * s, (10LL * 3600 + 2) * s},   // 3 s old
        {t0 + 28 * 3600 * s - s, (24LL * 3600 - 2) * s},       // 23:59:58 venue time, 1 s old
        {t0 + 28 * 3600 * s + s, (24LL * 3600 - 1) * s},       // after the venue's midnight, stamped before it
        {t0 + 30 * 3600 * s, (2LL * 3600) * s},                // the next venue day
        {t0 - 2 * kNsPerDay + 7 * s, 20 * s},                  // the clock set back two days
        {t0 + 29 * 3600 * s, (1LL * 3600 + 30) * s},           // and forward again
        {-3 * kNsPerDay + 11 * s, 5 * s},                      // a clock before 1970
        {t0 + 31 * 3600 * s, (std::int64_t{1} << 48) - 1},     // a stamp of 78 hours: garbage, still wrapped
    };
    std::uint64_t position = 0;
    for (const auto& [recv, stamp] : arrivals) {
        ++position;
        p.feed(position, {add_order(5, position, 'B', 1, 10, stamp)}, recv);
        EXPECT_EQ(p.instruments.state(5).last_source_ns, direct(recv, stamp)) << "arrival " << recv << ", stamp " << stamp;
    }
}

// The real capture through stream, sequencer and book. Expected figures
// derived from the bytes by an independent python script (struct over the
// pcap: 802.1Q tags, IPv4, UDP, MoldUDP64 blocks; orders tracked in a dict
// from the capture's own A/F/U, an E/C/X/D/U on a reference not added in
// the capture counted unknown): 113 instruments, 132 unknown references,
// 0 over-executions, 131 open orders; locate 4670: 17 messages, last
// 14757855, 15 unknown, bid 402600 x 100, ask 439000 x 100; locate 8592: 15
// messages, 14 unknown, bid 1563500 x 100; locate 11112: 7 messages, last
// 14757967, 0 unknown, bids 338600/330700 x 100, asks 339500 x 4300 (3
// orders), 339700 x 800, 347800 x 100. The S message (09:30:00.00007 venue
// time) arrived at 13:30:00 UTC: offset -240.
TEST(ItchSequencer, NasdaqCaptureLateJoinBooksAndUnknownOrders) {
    Pipeline p(1 << 16);
    CaptureReader reader(TICKGATE_TEST_DATA_DIR "/captures/nasdaq-totalview-itch50-moldudp64-vlan.pcap");
    FrameCounters frames;
    while (auto rec = reader.next()) {
        const auto d = extract_udp(reader.link_type(), rec->frame, frames);
        ASSERT_TRUE(d.has_value());
        p.stream.expire(rec->ts_ns, p.sink);
        p.stream.on_datagram(0, d->payload, moldudp64::read_key(d->payload, 0), rec->ts_ns, p.sink);
    }
    p.stream.finish(p.sink);
    const auto ch = p.stream.channel(0);
    EXPECT_EQ(std::string_view(ch.session.data(), ch.session.size()), "000010059B");
    EXPECT_EQ(ch.next_seq, 14757970u);
    EXPECT_EQ(ch.counters.packets.get(), 100u);
    EXPECT_EQ(ch.counters.late_join_messages.get(), 14757700u);
    EXPECT_EQ(ch.counters.lost_messages.get(), 0u);
    EXPECT_EQ(ch.counters.malformed_packets.get(), 0u);
    EXPECT_EQ(ch.counters.duplicate_messages.get(), 0u);
    EXPECT_EQ(p.instruments.seen_ids().size(), 113u);
    std::uint64_t unknown = 0, over = 0;
    for (const std::uint32_t id : p.instruments.seen_ids()) {
        unknown += p.seq.venue().counters(id).unknown_orders;
        over += p.seq.venue().counters(id).over_executions;
        EXPECT_TRUE(p.instruments.state(id).suspect) << id;  // a late join: books unknown
    }
    EXPECT_EQ(unknown, 132u);
    EXPECT_EQ(over, 0u);
    EXPECT_EQ(p.book.open_orders(), 131u);
    using Levels = std::vector<std::pair<std::int64_t, std::uint64_t>>;
    EXPECT_EQ(p.instruments.state(4670).counters.accepted, 17u);
    EXPECT_EQ(p.instruments.state(4670).last_seq, 14757855u);
    EXPECT_EQ(p.seq.venue().counters(4670).unknown_orders, 15u);
    EXPECT_EQ(side(p.book, 4670, Side::kBid), (Levels{{402600, 100}}));
    EXPECT_EQ(side(p.book, 4670, Side::kAsk), (Levels{{439000, 100}}));
    EXPECT_EQ(p.seq.venue().counters(8592).unknown_orders, 14u);
    EXPECT_EQ(side(p.book, 8592, Side::kBid), (Levels{{1563500, 100}}));
    EXPECT_TRUE(side(p.book, 8592, Side::kAsk).empty());
    EXPECT_EQ(p.instruments.state(11112).last_seq, 14757967u);
    EXPECT_EQ(p.seq.venue().counters(11112).unknown_orders, 0u);
    EXPECT_EQ(side(p.book, 11112, Side::kBid), (Levels{{338600, 100}, {330700, 100}}));
    EXPECT_EQ(side(p.book, 11112, Side::kAsk), (Levels{{339500, 4300}, {339700, 800}, {347800, 100}}));
    EXPECT_EQ((*p.book.side(11112, Side::kAsk).begin()).orders, 3u);
    EXPECT_EQ(p.seq.venue().utc_offset_minutes(0), -240);
    EXPECT_EQ(p.seq.venue().system_event(0), 'Q');
}

}  // namespace
}  // namespace tickgate::itch50

// The engine's API on ITCH (issue 15): symbols come from the `R` directory
// and move with a new day's locates; a subscription keeps sequencing.
namespace tickgate::itch50::api {

TEST(ItchEngineApi, FindFollowsTheDirectoryAndANewSessionsLocateRetiresTheOldHandle) {
    Pipeline p;
    EXPECT_FALSE(p.instruments.find("AAPL"));
    p.feed(1, {stock_directory(5, "AAPL"), stock_directory(6, "MSFT")});
    const InstrumentHandle aapl = *p.instruments.find("AAPL");
    EXPECT_EQ(aapl.id, 5u);
    // The next day: AAPL is locate 9, locate 5 is another stock.
    p.feed(1, {stock_directory(5, "ZVZZT"), stock_directory(9, "AAPL")}, 0, "S2");
    EXPECT_FALSE(p.instruments.current(aapl));  // the old handle reads nothing
    EXPECT_EQ(p.instruments.find("AAPL")->id, 9u);
    EXPECT_EQ(p.instruments.find("ZVZZT")->id, 5u);
}

TEST(ItchEngineApi, ANewSessionRemovesTheOldDaysSymbolsUntilItsDirectoryNamesThem) {
    Pipeline p;
    p.feed(1, {stock_directory(5, "AAPL"), add_order(5, 1, 'B', 100, 1500000)});
    const InstrumentHandle aapl = *p.instruments.find("AAPL");
    // The new day's first packet carries no directory yet: locate 5 means
    // nothing until one comes, so yesterday's AAPL is not found.
    p.feed(1, {add_order(7, 2, 'B', 100, 1500000)}, 0, "S2");
    EXPECT_FALSE(p.instruments.find("AAPL"));
    EXPECT_FALSE(p.instruments.current(aapl));
    p.feed(2, {stock_directory(5, "AAPL")}, 0, "S2");
    const InstrumentHandle today = *p.instruments.find("AAPL");
    EXPECT_EQ(today.id, 5u);
    EXPECT_NE(today.generation, aapl.generation);
    EXPECT_FALSE(p.instruments.current(aapl));
    EXPECT_FALSE(p.instruments.state(5).suspect) << "the session is read from 1: complete";
}

TEST(ItchEngineApi, UnsubscribedStocksAreSequencedButKeepNoOrders) {
    Pipeline p;
    ASSERT_TRUE(p.instruments.subscribe("AAPL"));
    p.seq.apply_subscriptions();
    p.feed(1, {stock_directory(5, "AAPL"), stock_directory(6, "MSFT"), add_order(5, 1, 'B', 100, 1500000),
               add_order(6, 2, 'B', 300, 2500000), executed(6, 2, 10), delete_order(6, 99)});
    EXPECT_EQ(p.book.open_orders(5), 1u);
    EXPECT_EQ(p.book.open_orders(6), 0u);  // no order kept
    EXPECT_TRUE(p.book.side(6, Side::kBid).empty());
    const InstrumentState& msft = p.instruments.state(6);
    EXPECT_EQ(msft.counters.accepted, 4u);  // R, A, E, D: sequenced all the same
    EXPECT_EQ(msft.last_seq, 6u);
    EXPECT_EQ(p.seq.venue().counters(6).unknown_orders, 0u);  // not booked: nothing to be unknown to
    EXPECT_EQ(p.gate.check(6, 0).reason, GateReason::kNotSubscribed);
    EXPECT_TRUE(p.gate.check(5, 0).ok());

    // Subscribed mid-session: the orders it missed are unknown, so suspect for the session.
    ASSERT_TRUE(p.instruments.subscribe("MSFT"));
    p.seq.apply_subscriptions();
    p.feed(7, {add_order(6, 3, 'S', 100, 2600000)});
    EXPECT_EQ(p.book.open_orders(6), 1u);
    EXPECT_EQ(p.gate.check(6, 0).reason, GateReason::kSuspect);

    // Dropped again: its orders go.
    p.instruments.unsubscribe("MSFT");
    p.seq.apply_subscriptions();
    EXPECT_EQ(p.book.open_orders(6), 0u);
    EXPECT_EQ(p.book.open_orders(5), 1u);
}

}  // namespace tickgate::itch50::api
