// ITCH 5.0 live tests' shared pieces (tests/e2e/itch50_*_test.cpp): a
// channel's two loopback lines, the simulator options that publish on
// them, the config text that receives them, and the check that a handler's
// books are the simulator's ground truth.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tickgate/book/book.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/itch50/simulator.hpp"

namespace tickgate::test {

struct ItchLines {
    const char* group_a;
    const char* group_b;
    std::uint16_t port_a, port_b;
};

// 200 stocks, 8,000 messages at 20,000/s on `l`; the re-request server on a free port, lingering 400 ms.
inline itch50::SimOptions itch_sim_for(const ItchLines& l) {
    itch50::SimOptions o;
    o.stocks = 200;
    o.messages = 8000;
    o.rate = 20000;
    o.group_a = l.group_a, o.group_b = l.group_b;
    o.port_a = l.port_a, o.port_b = l.port_b;
    o.server_port = 0;  // a free one: the handler's config is made after the server
    o.server_linger_ms = 400;
    return o;
}

// The config text: [itch] and [moldudp64] (gap_timeout 200 ms) with
// `top_extra` after them, then channel `id` on `l` asking 127.0.0.1:`server_port`,
// with `channel_extra` keys (each a whole line).
inline std::string itch_config_text(const ItchLines& l, std::uint16_t id, std::uint16_t server_port,
                                    const std::string& top_extra = "", const std::string& channel_extra = "") {
    return "[itch]\nmax_orders = 262144\nmax_levels = 65536\n[moldudp64]\ngap_timeout_ms = 200\n" + top_extra +
           "\n[[channel]]\nid = " + std::to_string(id) + "\nprotocol = \"itch50\"\nrerequest = \"127.0.0.1:" +
           std::to_string(server_port) + "\"\n" + channel_extra + "a = { group = \"" + l.group_a +
           "\", port = " + std::to_string(l.port_a) + " }\nb = { group = \"" + l.group_b +
           "\", port = " + std::to_string(l.port_b) + " }\n";
}

// Every stock's open orders and levels equal the ground truth's, and it is clean.
template <class Book>
void expect_itch_books_equal(const itch50::SimTruth& t, const Book& book, const InstrumentTable& instruments) {
    for (const itch50::SimStockTruth& st : t.stocks) {
        SCOPED_TRACE(st.symbol);
        EXPECT_EQ(book.open_orders(st.locate), st.open_orders);
        for (const Side side : {Side::kBid, Side::kAsk}) {
            std::vector<std::pair<std::uint64_t, std::uint64_t>> got, want;
            for (const Level lv : book.side(st.locate, side)) got.emplace_back(lv.price, lv.qty);
            for (const itch50::SimLevel& lv : side == Side::kBid ? st.bids : st.asks) want.emplace_back(lv.price, lv.shares);
            EXPECT_EQ(got, want);
        }
        EXPECT_FALSE(instruments.state(st.locate).suspect);
    }
}

}  // namespace tickgate::test
