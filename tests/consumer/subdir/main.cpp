// add_subdirectory consumer: tickgate::core only (standard library). Feeds
// hand-made Events to a Sequencer over an instrument table and an L2 book,
// and checks the book and the Gate.
// Exit 0 on success, 1 otherwise.
#include <tickgate/event.hpp>
#include <tickgate/book/gate.hpp>
#include <tickgate/feed/qfb1/rules.hpp>

#include <cstdint>
#include <cstdio>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok) ++failures;
}

tickgate::Event quote(std::uint32_t id, std::uint64_t seq, std::int64_t t, std::int64_t bid,
                      std::int64_t ask) {
    tickgate::Event e{};
    e.kind = tickgate::EventKind::kQuote;
    e.recv_ns = t;
    e.send_ns = t;
    e.instrument_id = id;
    e.channel_id = 1;
    e.line = 0;
    e.u.quote = {seq, t, bid, ask, 10, 20};
    return e;
}

}  // namespace

int main() {
    constexpr std::int64_t kMs = 1'000'000;
    constexpr std::int64_t kT0 = 1'700'000'000'000 * kMs;
    constexpr std::uint32_t kId = 3;

    const tickgate::Capacity capacity{16, 8, 256, 4};
    tickgate::InstrumentTable instruments(capacity.max_instruments);
    tickgate::L2Book book(capacity.max_instruments, capacity.book_depth);
    tickgate::qfb1::Sequencer seq(instruments, book, capacity);
    const tickgate::Gate gate(instruments, tickgate::GateConfig{/*stale_ms=*/250, /*source_age_ms=*/2000});

    const tickgate::Update u1 = seq.apply(quote(kId, 1, kT0, 100, 101));
    expect(u1.verdict == tickgate::Verdict::kAccepted && u1.book_changed && !u1.suspect, "first quote accepted");
    const tickgate::Update u2 = seq.apply(quote(kId, 1, kT0 + kMs, 100, 101));
    expect(u2.verdict == tickgate::Verdict::kDuplicate, "same seq is a duplicate");
    const tickgate::Update u3 = seq.apply(quote(kId, 4, kT0 + 2 * kMs, 102, 103));
    expect(u3.verdict == tickgate::Verdict::kGap && u3.lost == 2, "gap of 2 counted");

    const auto bids = book.side(kId, tickgate::Side::kBid);
    expect(bids.size() == 1 && bids[0].price == 102, "book follows the last quote");

    const tickgate::GateDecision d = gate.check(kId, kT0 + 12 * kMs);
    expect(d.reason == tickgate::GateReason::kOk && d.silence_ms == 10, "gate ok (a quote after a gap is a full top of book)");
    expect(gate.check(kId, kT0 + 300 * kMs).reason == tickgate::GateReason::kStale, "gate stale after 300 ms");
    expect(gate.check(kId + 1, kT0).reason == tickgate::GateReason::kUnknown, "unknown id");
    expect(tickgate::to_string(tickgate::GateReason::kStale) == "stale", "to_string(kStale)");

    std::printf("%s\n", failures == 0 ? "subdir consumer: PASS" : "subdir consumer: FAIL");
    return failures == 0 ? 0 : 1;
}
