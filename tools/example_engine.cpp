// A minimal trading engine embedding tickgate: one engine thread polls the
// handler, reacts to book updates and asks the gate before every "order".
// usage: example_engine CONFIG [SECONDS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "tickgate/feed_handler.hpp"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s CONFIG [SECONDS]\n", argv[0]);
        return 2;
    }
    try {
        const tickgate::Config cfg = tickgate::load_config(argv[1]);
        tickgate::FeedHandler feed(cfg);  // opens and joins the lines
        feed.start();                     // network thread: receive -> decode -> ring
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(argc > 2 ? std::atoi(argv[2]) : 5);
        std::uint64_t orders = 0, refused = 0;
        while (std::chrono::steady_clock::now() < end) {
            // Engine thread: apply queued events; on each book change, "trade".
            feed.poll([&](const tickgate::Update& u, const tickgate::Event&) {
                if (!u.book_changed) return;
                const auto decision = feed.gate().check(u.instrument_id, tickgate::realtime_ns());
                if (decision.ok()) {
                    const auto bids = feed.book().side(u.instrument_id, tickgate::Side::kBid);
                    if (!bids.empty()) ++orders;  // an order would be priced off bids[0].price here
                } else {
                    ++refused;
                }
            });
        }
        feed.stop();
        std::printf("orders priced: %llu, refused by the gate: %llu\n", static_cast<unsigned long long>(orders),
                    static_cast<unsigned long long>(refused));
        return 0;
    } catch (const tickgate::ConfigError& e) {
        std::fprintf(stderr, "config error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
