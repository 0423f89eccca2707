// ITCH 5.0's fronts (feed/itch50/front.hpp): the prefetch pass that runs
// before a datagram is applied inline (prefetch_orders). It hints exactly
// the order messages' instruments, references and add sides, reads no byte
// past the datagram, and stops where the stream's walk stops.
#include "tickgate/feed/itch50/front.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "tickgate/feed/itch50/packet_builder.hpp"

namespace tickgate::itch50 {
namespace {

// Stands in for a handler: records every hint it is given.
struct HintRecorder {
    struct Instruments {
        std::uint32_t max;
        mutable std::vector<std::uint32_t> ids;
        bool filtering_stocks = false;
        [[nodiscard]] std::uint32_t max_instruments() const noexcept { return max; }
        [[nodiscard]] bool filtering() const noexcept { return filtering_stocks; }
        void prefetch(std::uint32_t id) const { ids.push_back(id); }
    };
    using BookHint = std::tuple<std::uint32_t, std::uint64_t, int, std::uint32_t>;  // id, reference, add side (-1: a change), add price
    struct OrderStore {
        std::uint32_t max;
        mutable std::vector<BookHint> hints;
        [[nodiscard]] std::uint32_t max_instruments() const noexcept { return max; }
        void prefetch(std::uint32_t id, std::uint64_t ref, const Side* add_side, std::uint32_t add_price = 0) const {
            hints.emplace_back(id, ref, add_side != nullptr ? static_cast<int>(*add_side) : -1, add_price);
        }
    };
    Instruments ids;
    OrderStore orders;
    [[nodiscard]] const Instruments& instruments() const noexcept { return ids; }
    [[nodiscard]] const OrderStore& book() const noexcept { return orders; }
};

constexpr std::uint32_t kSlot = 1;
constexpr int kBid = static_cast<int>(Side::kBid), kAsk = static_cast<int>(Side::kAsk);

// A recorder whose instruments and book end at locate 0x1000 of kSlot.
HintRecorder recorder(bool filtering_stocks = false) {
    const std::uint32_t max = instrument_id(kSlot, 0x1000);
    return {{max, {}, filtering_stocks}, {max, {}}};
}

std::vector<Bytes> every_kind_of_message() {
    return {stock_directory(5, "AAPL"),
            add_order(5, 100, 'B', 300, 1'000'000),
            add_order(6, 101, 'S', 300, 1'000'100, 0, /*with_mpid=*/true),
            system_event('O', 0),
            executed(5, 100, 100),
            executed_with_price(5, 100, 100, 1'000'000),
            cancel(6, 101, 50),
            replace(6, 101, 102, 200, 1'000'200),
            trading_action(6, "MSFT", 'T'),
            delete_order(5, 100),
            add_order(0xFFFF, 103, 'B', 1, 1)};  // an id past the recorder's instruments: skipped
}

TEST(ItchPrefetch, HintsEveryOrderMessageAndNothingElseInOrder) {
    const Bytes d = mold_packet("S1", 1, every_kind_of_message());
    const HintRecorder h = recorder();
    prefetch_orders(h, kSlot, d, moldudp64::read_key(d, 0));
    const std::uint32_t a = instrument_id(kSlot, 5), b = instrument_id(kSlot, 6);
    EXPECT_EQ(h.ids.ids, (std::vector<std::uint32_t>{a, b, a, a, b, b, a}));
    EXPECT_EQ(h.orders.hints, (std::vector<HintRecorder::BookHint>{
                                  {a, 100, kBid, 1'000'000}, {b, 101, kAsk, 1'000'100}, {a, 100, -1, 0}, {a, 100, -1, 0},
                                  {b, 101, -1, 0}, {b, 101, -1, 0},  // U: its original reference
                                  {a, 100, -1, 0}}));
}

TEST(ItchPrefetch, NoPassWhileASubscriptionListFiltersTheStocks) {
    const Bytes d = mold_packet("S1", 1, every_kind_of_message());
    const HintRecorder h = recorder(/*filtering_stocks=*/true);
    prefetch_orders(h, kSlot, d, moldudp64::read_key(d, 0));
    EXPECT_TRUE(h.ids.ids.empty());
    EXPECT_TRUE(h.orders.hints.empty());
}

TEST(ItchPrefetch, ATruncatedOrLyingDatagramIsReadNoFurtherThanItsBytes) {
    const Bytes whole = mold_packet("S1", 1, every_kind_of_message());
    const HintRecorder all = recorder();
    prefetch_orders(all, kSlot, whole, moldudp64::read_key(whole, 0));
    for (std::size_t len = 0; len < whole.size(); ++len) {
        // Its own allocation of exactly `len` bytes: the sanitizers see a read past it.
        const Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(len));
        const HintRecorder h = recorder();
        prefetch_orders(h, kSlot, cut, moldudp64::read_key(cut, 0));  // the key as the front reads it: of the cut bytes
        ASSERT_LE(h.orders.hints.size(), all.orders.hints.size()) << len;
        EXPECT_TRUE(std::equal(h.orders.hints.begin(), h.orders.hints.end(), all.orders.hints.begin())) << len;
    }
    // Each kind of order message last, in a datagram of exactly its bytes:
    // nothing of it past its own length is read (D, 19 bytes, has no side).
    for (const Bytes& last : every_kind_of_message()) {
        const Bytes built = mold_packet("S1", 1, std::vector<Bytes>{last});
        const Bytes d(built.begin(), built.end());  // an allocation of exactly its bytes
        const HintRecorder h = recorder();
        prefetch_orders(h, kSlot, d, moldudp64::read_key(d, 0));
        EXPECT_LE(h.orders.hints.size(), 1u);
    }
    // A key that claims more messages than the datagram holds: the walk ends at its last byte.
    Bytes lying = whole;
    lying[18] = std::byte{0x7F};  // count's high byte
    const HintRecorder h = recorder();
    prefetch_orders(h, kSlot, lying, moldudp64::read_key(lying, 0));
    EXPECT_EQ(h.orders.hints, all.orders.hints);
}

}  // namespace
}  // namespace tickgate::itch50
