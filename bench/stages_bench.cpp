// Per-stage micro-benchmarks of the hot path (decode, sequencer, books,
// gate) and the whole in-process pipeline Handler::on_datagram, with a
// memcpy of the same bytes as the physical-limit baseline. Times are per
// message: items_per_second and the user counter ns_per_msg.
#include <benchmark/benchmark.h>

#include <x86intrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>

#include "common.hpp"
#include "tickgate/endian.hpp"
#include "tickgate/feed/itch50/packet_builder.hpp"
#include "tickgate/feed/itch50/replay.hpp"

using namespace tickgate;
using bench::Market;
using bench::MixSpec;
using bench::Msg;
using bench::Stream;

namespace {

constexpr std::int64_t kT0 = 1'704'067'200'000'000'000;
// Length of the non-repeating event/op streams of the sequencer and L2
// benchmarks: long enough that the branch predictor cannot learn the
// sequence (a short repeated stream made L2 updates look ~3x cheaper than
// inside the pipeline).
constexpr int kStream = 1 << 18;

void set_msgs(benchmark::State& state, std::uint64_t msgs) {
    state.SetItemsProcessed(static_cast<std::int64_t>(msgs));
    state.counters["ns_per_msg"] =
        benchmark::Counter(static_cast<double>(msgs) * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// ------------------------------------------------------------------ data sets
const Stream& mix_stream() {  // 100 instruments, 60% D / 25% Q / 10% H / 5% S, 10-level books
    static const Stream s = bench::build_stream(MixSpec{});
    return s;
}
const Stream& q_stream() {
    static const Stream s = bench::build_stream(MixSpec{.d = 0, .q = 1, .h = 0, .s = 0});
    return s;
}
const Stream& d20_stream() {
    static const Stream s = bench::build_stream(MixSpec{.d = 1, .q = 0, .h = 0, .s = 0, .depth = 20});
    return s;
}

// `count` datagrams of `per` messages each from `gen`.
template <class Gen>
std::vector<std::vector<std::byte>> datagrams(Gen&& gen, std::uint32_t per, int count = 16) {
    std::vector<std::vector<std::byte>> out;
    bench::Packer p(per, [&](std::span<const std::byte> b, std::uint16_t, std::int64_t) { out.emplace_back(b.begin(), b.end()); });
    for (int i = 0; i < count * static_cast<int>(per); ++i) p.add(gen());
    p.flush();
    return out;
}

std::vector<Event> decode_all(const std::vector<std::vector<std::byte>>& dgs) {
    std::vector<Event> ev;
    SessionDecoder<qfb1::Protocol> dec;
    for (auto& d : dgs) (void)dec.decode(d, kT0, 0, [&](const Event& e) { ev.push_back(e); });
    return ev;
}
std::vector<Event> decode_range(const Stream& s, std::size_t from, std::size_t to) {
    std::vector<Event> ev;
    SessionDecoder<qfb1::Protocol> dec;
    for (std::size_t i = from; i < to; ++i) (void)dec.decode(s.dgram(i), kT0 + std::int64_t(i) * 1000, 0, [&](const Event& e) { ev.push_back(e); });
    return ev;
}

// ------------------------------------------------------------------ decode
void BM_Decode(benchmark::State& state, char type) {
    const auto per = static_cast<std::uint32_t>(state.range(0));
    std::vector<std::vector<std::byte>> dgs;
    if (type == 'S') {
        Market mk(MixSpec{.d = 1, .q = 0, .h = 0, .s = 0, .depth = 5});
        std::size_t i = 0;
        dgs = datagrams([&] { return mk.snapshot_of(i++ % 100, 5); }, per);
    } else {
        Market mk(type == 'Q'   ? MixSpec{.d = 0, .q = 1, .h = 0, .s = 0}
                  : type == 'D' ? MixSpec{.d = 1, .q = 0, .h = 0, .s = 0}
                                : MixSpec{.d = 0, .q = 0, .h = 1, .s = 0});
        dgs = datagrams([&] { return mk.next(); }, per);
    }
    SessionDecoder<qfb1::Protocol> dec;
    std::size_t i = 0;
    std::uint64_t msgs = 0;
    for (auto _ : state) {
        const auto& d = dgs[i++ & 15];
        auto r = dec.decode(d, kT0, 0, [](const Event& e) { benchmark::DoNotOptimize(e); });
        benchmark::DoNotOptimize(r);
        msgs += r.messages;
    }
    if (dec.counters().malformed_packets.get() != 0) state.SkipWithError("malformed datagrams");
    set_msgs(state, msgs);
}
BENCHMARK_CAPTURE(BM_Decode, Q, 'Q')->Arg(1)->Arg(8)->ArgName("msgs_per_dgram");
BENCHMARK_CAPTURE(BM_Decode, D, 'D')->Arg(1)->Arg(8)->ArgName("msgs_per_dgram");
BENCHMARK_CAPTURE(BM_Decode, S_5x5, 'S')->Arg(1)->Arg(6)->ArgName("msgs_per_dgram");
BENCHMARK_CAPTURE(BM_Decode, H, 'H')->Arg(1)->Arg(8)->ArgName("msgs_per_dgram");

// ------------------------------------------------------------------ sequencer
// In-sequence D (10-level books) and Q events of 100 instruments, kStream per
// pass; between passes (untimed) seqs are advanced and books re-snapshotted
// so that every event stays in sequence and the books stay at their depth.
struct SeqData {
    std::vector<Event> warm, timed;
    std::vector<std::uint64_t> count;  // sequenced events per instrument in `timed`
};
const SeqData& seq_data() {
    static const SeqData d = [] {
        const Stream s = bench::build_stream(MixSpec{.d = 0.6, .q = 0.25, .h = 0, .s = 0, .messages = kStream});
        SeqData r{decode_range(s, 0, s.warm), decode_range(s, s.warm, s.size()), std::vector<std::uint64_t>(4096)};
        for (auto& e : r.timed) ++r.count[e.instrument_id];
        return r;
    }();
    return d;
}
void resnap(Handler& seq, const std::vector<Event>& warm) {
    for (Event e : warm) {
        if (e.kind == EventKind::kSnapshotBegin) e.u.snapshot.seq = seq.instruments().state(e.instrument_id).last_seq;
        if (e.kind == EventKind::kSnapshotBegin || e.kind == EventKind::kSnapshotLevels) (void)seq.apply(e);
    }
}

void BM_SequencerVerdict_DQ(benchmark::State& state) {
    const SeqData& d = seq_data();
    std::vector<Event> ev = d.timed;
    Handler seq{Capacity{}, GateConfig{}};
    for (auto& e : d.warm) (void)seq.apply(e);
    std::size_t i = 0;
    std::uint64_t msgs = 0, passes = 0;
    for (auto _ : state) {
        if (i == ev.size()) {
            state.PauseTiming();
            for (auto& e : ev) {
                if (e.kind == EventKind::kQuote) e.u.quote.seq += d.count[e.instrument_id];
                else e.u.delta.seq += d.count[e.instrument_id];
            }
            resnap(seq, d.warm);
            i = 0;
            ++passes;
            state.ResumeTiming();
        }
        for (std::size_t k = 0; k < 64; ++k) {
            auto u = seq.apply(ev[i + k]);
            benchmark::DoNotOptimize(u);
        }
        i += 64;
        msgs += 64;
    }
    const auto h = bench::health_of(seq.instruments());
    if (!h.clean()) state.SkipWithError(("not all in sequence: " + h.str()).c_str());
    set_msgs(state, msgs);
}
BENCHMARK(BM_SequencerVerdict_DQ);

// Gap-free heartbeats (pure verdict, no book work).
void BM_SequencerVerdict_H(benchmark::State& state) {
    const SeqData& d = seq_data();
    Handler seq{Capacity{}, GateConfig{}};
    for (auto& e : d.warm) (void)seq.apply(e);
    std::vector<Event> hb;
    for (std::uint32_t id = 1; id <= 100; ++id) {
        Event e{};
        e.kind = EventKind::kHeartbeat;
        e.channel_id = 1;
        e.instrument_id = id;
        e.recv_ns = kT0;
        e.u.heartbeat.next_seq = seq.instruments().state(id).last_seq + 1;
        hb.push_back(e);
    }
    std::uint64_t msgs = 0;
    for (auto _ : state) {
        for (auto& e : hb) {
            auto u = seq.apply(e);
            benchmark::DoNotOptimize(u);
        }
        msgs += hb.size();
    }
    if (!bench::health_of(seq.instruments()).clean()) state.SkipWithError("heartbeat gaps");
    set_msgs(state, msgs);
}
BENCHMARK(BM_SequencerVerdict_H);

// ------------------------------------------------------------------ books
void BM_L1_SetTop_Q(benchmark::State& state) {
    Market mk(MixSpec{.d = 0, .q = 1, .h = 0, .s = 0});
    std::vector<Msg> q;
    for (int i = 0; i < 4096; ++i) q.push_back(mk.next());
    L2Book books(4096, 32);
    std::size_t i = 0;
    std::uint64_t msgs = 0;
    for (auto _ : state) {
        for (std::size_t k = 0; k < 64; ++k) {
            const Msg& m = q[(i + k) & 4095];
            books.set_top(m.id, m.px, m.qty, m.px2, m.qty2);
        }
        benchmark::ClobberMemory();
        i += 64;
        msgs += 64;
    }
    set_msgs(state, msgs);
}
BENCHMARK(BM_L1_SetTop_Q);

struct L2Data {
    struct Op {
        std::uint32_t id;
        std::uint8_t side, action;
        std::int64_t px;
        std::uint32_t qty;
    };
    std::vector<Msg> init;  // snapshots
    std::vector<Op> ops;
    std::uint64_t set_new = 0, set_replace = 0, del = 0;
};
L2Data make_l2(std::uint32_t depth) {
    Market mk(MixSpec{.d = 1, .q = 0, .h = 0, .s = 0, .depth = depth});
    L2Data d;
    d.init = mk.warmup();
    L2Book check(4096, 32);
    for (auto& m : d.init)
        for (int s = 0; s < 2; ++s)
            for (auto& l : s == 0 ? m.bids : m.asks) check.append_level(m.id, Side(s), l.price, l.qty);
    for (int i = 0; i < kStream; ++i) {
        Msg m = mk.next();
        d.ops.push_back({m.id, m.side, m.action, m.px, m.qty});
        const LevelResult r = m.action == 0 ? check.set_level(m.id, Side(m.side), m.px, m.qty)
                                            : check.delete_level(m.id, Side(m.side), m.px);
        if (r == LevelResult::kMissing || r == LevelResult::kDroppedDeep) throw std::runtime_error("L2 model mismatch");
        (r == LevelResult::kInserted ? d.set_new : r == LevelResult::kReplaced ? d.set_replace : d.del)++;
    }
    return d;
}

void BM_L2_Level_D(benchmark::State& state) {
    const auto depth = static_cast<std::uint32_t>(state.range(0));
    const L2Data d = make_l2(depth);
    L2Book books(4096, 32);
    std::size_t i = d.ops.size();
    std::uint64_t msgs = 0;
    for (auto _ : state) {
        if (i == d.ops.size()) {
            state.PauseTiming();
            for (auto& m : d.init) {
                books.clear(m.id);
                for (int s = 0; s < 2; ++s)
                    for (auto& l : s == 0 ? m.bids : m.asks) books.append_level(m.id, Side(s), l.price, l.qty);
            }
            i = 0;
            state.ResumeTiming();
        }
        for (std::size_t k = 0; k < 64; ++k) {
            const auto& op = d.ops[i + k];
            const Side s = op.side == 0 ? Side::kBid : Side::kAsk;
            auto r = op.action == 0 ? books.set_level(op.id, s, op.px, op.qty) : books.delete_level(op.id, s, op.px);
            benchmark::DoNotOptimize(r);
        }
        i += 64;
        msgs += 64;
    }
    const double n = static_cast<double>(d.ops.size());
    state.counters["pct_insert"] = 100.0 * static_cast<double>(d.set_new) / n;
    state.counters["pct_replace"] = 100.0 * static_cast<double>(d.set_replace) / n;
    state.counters["pct_delete"] = 100.0 * static_cast<double>(d.del) / n;
    set_msgs(state, msgs);
}
BENCHMARK(BM_L2_Level_D)->Arg(5)->Arg(20)->Arg(32)->ArgName("book_levels");

// Snapshot apply through the sequencer (begin + level events), n+n levels.
void BM_SnapshotApply(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    Market mk(MixSpec{.d = 1, .q = 0, .h = 0, .s = 0, .depth = 10});
    Handler seq{Capacity{}, GateConfig{}};
    std::vector<std::vector<std::byte>> warm;
    warm = datagrams([&, w = mk.warmup(), k = std::size_t{0}]() mutable { return w[k++]; }, 1, 100);
    for (auto& e : decode_all(warm)) (void)seq.apply(e);
    std::vector<std::vector<Event>> snaps;  // seq 0 == last_seq: always applied
    for (std::size_t i = 0; i < 100; ++i) {
        std::size_t k = i;
        snaps.push_back(decode_all(datagrams([&] { return mk.snapshot_of(k, n); }, 1, 1)));
    }
    std::size_t i = 0;
    std::uint64_t msgs = 0;
    for (auto _ : state) {
        for (const Event& e : snaps[i]) {
            auto u = seq.apply(e);
            benchmark::DoNotOptimize(u);
        }
        i = i == 99 ? 0 : i + 1;
        ++msgs;
    }
    const auto h = bench::health_of(seq.instruments());
    if (!h.clean() || seq.book().side(1, Side::kBid).size() != n) state.SkipWithError(("snapshots not applied: " + h.str()).c_str());
    state.counters["levels"] = static_cast<double>(2 * n);
    set_msgs(state, msgs);
}
BENCHMARK(BM_SnapshotApply)->Arg(5)->Arg(10)->ArgName("levels_per_side");

// ------------------------------------------------------------------ gate
void BM_GateCheck(benchmark::State& state) {
    const Stream& s = mix_stream();
    Handler h(Capacity{}, GateConfig{});
    for (std::size_t i = 0; i < s.size(); ++i) h.on_datagram(s.dgram(i), kT0 + std::int64_t(i) * 1000, 0);
    const std::int64_t now = kT0 + std::int64_t(s.size()) * 1000 + 1'000'000;
    const Gate& gate = h.gate();
    std::uint64_t checks = 0, ok = 0;
    for (std::uint32_t id = 1; id <= 100; ++id) ok += gate.check(id, now).ok();
    for (auto _ : state) {
        for (std::uint32_t id = 1; id <= 100; ++id) {
            auto d = gate.check(id, now);
            benchmark::DoNotOptimize(d);
        }
        checks += 100;
    }
    state.counters["ok_pct"] = static_cast<double>(ok);
    set_msgs(state, checks);
}
BENCHMARK(BM_GateCheck);

// ------------------------------------------------------------------ pipeline
// Handler::on_datagram over a pre-built stream (8 messages a datagram); a
// fresh Handler, warmed with the session-start snapshots/quotes, per pass.
void BM_Pipeline(benchmark::State& state, const Stream& (*get)()) {
    const Stream& s = get();
    std::unique_ptr<Handler> h;
    auto fresh = [&] {
        h.reset();
        h = std::make_unique<Handler>(Capacity{}, GateConfig{});
        for (std::size_t i = 0; i < s.warm; ++i) h->on_datagram(s.dgram(i), kT0, 0);
    };
    fresh();
    std::size_t i = s.warm;
    std::uint64_t msgs = 0;
    std::int64_t now = kT0;
    for (auto _ : state) {
        if (i == s.size()) {
            state.PauseTiming();
            fresh();
            i = s.warm;
            state.ResumeTiming();
        }
        auto r = h->on_datagram(s.dgram(i), now += 1000, 0);
        benchmark::DoNotOptimize(r);
        msgs += s.msgs[i++];
    }
    const auto hc = bench::health_of(h->instruments());
    if (!hc.clean() || h->decoder().counters().malformed_packets.get() != 0)
        state.SkipWithError(("pipeline dropped messages: " + hc.str()).c_str());
    state.counters["bytes_per_msg"] = static_cast<double>(s.timed_bytes) / static_cast<double>(s.timed_msgs);
    set_msgs(state, msgs);
}
BENCHMARK_CAPTURE(BM_Pipeline, mix, &mix_stream);
BENCHMARK_CAPTURE(BM_Pipeline, only_Q, &q_stream);
BENCHMARK_CAPTURE(BM_Pipeline, only_D_20lvl, &d20_stream);

// Physical limit: copying the same datagram bytes.
void BM_Memcpy(benchmark::State& state, const Stream& (*get)()) {
    const Stream& s = get();
    alignas(64) std::array<std::byte, 2048> buf{};
    std::size_t i = s.warm;
    std::uint64_t msgs = 0;
    for (auto _ : state) {
        if (i == s.size()) i = s.warm;
        const auto d = s.dgram(i);
        std::memcpy(buf.data(), d.data(), d.size());
        void* p = buf.data();
        benchmark::DoNotOptimize(p);
        benchmark::ClobberMemory();
        msgs += s.msgs[i++];
    }
    set_msgs(state, msgs);
}
BENCHMARK_CAPTURE(BM_Memcpy, mix, &mix_stream);
BENCHMARK_CAPTURE(BM_Memcpy, only_Q, &q_stream);
BENCHMARK_CAPTURE(BM_Memcpy, only_D_20lvl, &d20_stream);


// ------------------------------------------------------------------ ITCH 5.0
// ITCH 5.0 over MoldUDP64 beside QFB/1 in the same run: parse only
// (framing + every message normalized) and parse + stream + order book +
// L2 view, on a mix close to Nasdaq's (A 38 %, D 33 %, U 15 %, E 9 %, X 5 %;
// 80 % of the changes on one of the 4,096 most recent orders)
// over 5,000 stocks with kItchOpen open orders loaded first, 20 messages a
// datagram. The store holds kItchOpen × 2 orders (the default's 30 bytes
// per open order at full load, 60 here).
constexpr std::uint32_t kItchOpen = 1'000'000;
constexpr int kItchTimed = 2'000'000;
constexpr int kItchPerDatagram = 20;

// One MoldUDP64 datagram of the bench's session from position `seq`, each
// message stamped with a venue time of day (09:30 plus 50 ns a position) as
// a real feed's are: the rules then place a message's source time on the
// arrival clock by the cheap path (wrap_half_day within ±12 h), as live.
// (Before 2026-12-04 the stamps were 0, midnight, half a day off the
// bench's clock: every message took the modulo path, ~24 instructions.)
itch50::Bytes itch_datagram(std::uint64_t seq, std::vector<itch50::Bytes>& batch) {
    constexpr std::int64_t kOpen = 34'200'000'000'000;  // 09:30:00 in ns since midnight
    for (std::size_t i = 0; i < batch.size(); ++i) {
        itch50::Bytes& m = batch[i];
        if (m.size() < itch50::kCommonSize) continue;
        const auto ts = static_cast<std::uint64_t>(kOpen + static_cast<std::int64_t>(seq + i) * 50);
        store_be<std::uint16_t>(m.data() + itch50::kTimestampOffset, static_cast<std::uint16_t>(ts >> 32));
        store_be<std::uint32_t>(m.data() + itch50::kTimestampOffset + 2, static_cast<std::uint32_t>(ts));
    }
    return itch50::mold_packet("BENCH00001", seq, batch);
}

struct ItchStream {
    std::vector<itch50::Bytes> warm;   // the directory and kItchOpen adds
    std::vector<itch50::Bytes> timed;  // the mix
    std::uint32_t stocks = 5000;
};
// skewed: half the adds (and so the changes) on 100 of the 5,000 stocks,
// as activity concentrates on real feeds; otherwise uniform over them.
ItchStream make_itch_stream(bool skewed) {
    {
        ItchStream out;
        std::uint64_t seq = 1, ref = 1;
        std::vector<std::uint64_t> live;
        std::vector<std::uint16_t> locate_of;  // by ref
        std::vector<itch50::Bytes> batch;
        std::uint64_t rng = 88172645463325252ULL;
        auto next = [&] {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            return rng;
        };
        auto flush = [&](std::vector<itch50::Bytes>& into) {
            into.push_back(itch_datagram(seq, batch));
            seq += batch.size();
            batch.clear();
        };
        auto add = [&](std::vector<itch50::Bytes>& into) {
            const auto locate = static_cast<std::uint16_t>(1 + (skewed && (next() & 1) ? next() % 100 : next() % 5000));
            const bool buy = next() & 1;
            const auto price = static_cast<std::uint32_t>(1'000'000 + locate * 100 + (buy ? -1 : 1) * int(1 + next() % 50) * 100);
            batch.push_back(itch50::add_order(locate, ref, buy ? 'B' : 'S', 100 * (1 + next() % 5), price));
            live.push_back(ref);
            locate_of.push_back(locate);
            ++ref;
            if (batch.size() == kItchPerDatagram) flush(into);
        };
        // The day's directory first: locate L is stock "S<L>" (what a subscription names).
        for (std::uint16_t locate = 1; locate <= 5000; ++locate) {
            std::string symbol = "S";  // not "S" + to_string: GCC 12 -Wrestrict false positive
            symbol += std::to_string(locate);
            batch.push_back(itch50::stock_directory(locate, symbol));
            if (batch.size() == kItchPerDatagram) flush(out.warm);
        }
        for (std::uint32_t i = 0; i < kItchOpen; ++i) add(out.warm);
        if (!batch.empty()) flush(out.warm);
        for (int i = 0; i < kItchTimed; ++i) {
            const std::uint64_t r = next() % 100;
            if (r < 38 || live.empty()) {
                add(out.timed);
                continue;
            }
            // Most orders live briefly: 80 % of the changes hit one of the
            // 4,096 most recent orders, the rest any live order.
            const std::size_t recent = std::min<std::size_t>(live.size(), 4096);
            const std::size_t k = next() % 5 != 0 ? live.size() - 1 - next() % recent : next() % live.size();
            const std::uint64_t victim = live[k];
            const std::uint16_t locate = locate_of[victim - 1];
            if (r < 80) {  // D, or an E executing the whole order: the order is gone
                batch.push_back(r < 71 ? itch50::delete_order(locate, victim) : itch50::executed(locate, victim, 1'000'000));
                live[k] = live.back();
                live.pop_back();
            } else if (r < 95) {  // U: same side, new reference and price
                batch.push_back(itch50::replace(locate, victim, ref, 100, static_cast<std::uint32_t>(1'000'000 + locate * 100 + 100)));
                live[k] = ref;
                locate_of.push_back(locate);
                ++ref;
            } else {  // X: part of it
                batch.push_back(itch50::cancel(locate, victim, 1));
            }
            if (batch.size() == kItchPerDatagram) flush(out.timed);
        }
        if (!batch.empty()) flush(out.timed);
        return out;
    }
}
// A day-like flow (bench/README.md "ITCH flows"): the message mix of
// Nasdaq's published sample day of 2018-03-29 (per 10,000 book messages:
// A+F 4,536, D 4,360, U 715, E+C 223, X 166), activity Zipf-distributed
// (exponent 1) over 8,000 stocks, prices within a few ticks of each stock's
// moving touch, most orders short-lived (90 % of the changes hit an order
// among the ~4,096 newest) and a long tail living all day: the kItchOpen
// orders loaded first, whose references lie 50 million below the timed
// part's (the orders added and gone meanwhile), so a store keyed by the
// newest references cannot hold them by position.
constexpr std::uint32_t kDayStocks = 8000;
ItchStream make_day_stream() {
    ItchStream out;
    out.stocks = kDayStocks;
    std::uint64_t rng = 0x9E3779B97F4A7C15ULL, seq = 1, ref = 1;
    auto next = [&] {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
    };
    auto uniform01 = [&] { return static_cast<double>(next() >> 11) * 0x1.0p-53; };
    // Zipf over ranks 1..kDayStocks, the ranks shuffled onto locates.
    std::vector<double> cdf(kDayStocks);
    double sum = 0;
    for (std::uint32_t k = 0; k < kDayStocks; ++k) cdf[k] = sum += 1.0 / (k + 1);
    for (double& c : cdf) c /= sum;
    std::vector<std::uint16_t> locate_of_rank(kDayStocks);
    std::iota(locate_of_rank.begin(), locate_of_rank.end(), std::uint16_t{1});
    for (std::uint32_t k = kDayStocks - 1; k > 0; --k) std::swap(locate_of_rank[k], locate_of_rank[next() % (k + 1)]);
    auto stock = [&] {
        const auto k = static_cast<std::uint32_t>(std::lower_bound(cdf.begin(), cdf.end(), uniform01()) - cdf.begin());
        return locate_of_rank[std::min(k, kDayStocks - 1)];
    };
    std::vector<std::uint32_t> mid(kDayStocks + 1);  // per locate, in price units; ticks of 100 ($0.01)
    for (auto& m : mid) m = static_cast<std::uint32_t>(100 * (500 + next() % 20'000));
    struct Order {
        std::uint64_t ref;
        std::uint32_t shares;
        std::uint16_t locate;
        bool buy;
    };
    std::vector<Order> live;
    std::vector<itch50::Bytes> batch;
    auto flush = [&](std::vector<itch50::Bytes>& into) {
        into.push_back(itch_datagram(seq, batch));
        seq += batch.size();
        batch.clear();
    };
    auto emit = [&](std::vector<itch50::Bytes>& into, itch50::Bytes m) {
        batch.push_back(std::move(m));
        if (batch.size() == kItchPerDatagram) flush(into);
    };
    // Ticks from the touch: geometric (half at the touch, a quarter one
    // tick behind, ...), one order in ten anywhere within 100 ticks.
    auto price = [&](std::uint16_t locate, bool buy) {
        std::uint32_t& m = mid[locate];
        if (next() % 64 == 0) m = next() & 1 ? m + 100 : std::max<std::uint32_t>(m - 100, 10'000);  // the touch moves
        const std::uint64_t r = next();
        const std::uint32_t ticks = r % 10 == 0 ? static_cast<std::uint32_t>((r >> 8) % 100)
                                                : std::min<std::uint32_t>(static_cast<std::uint32_t>(std::countr_zero(r >> 8)), 40);
        return buy ? m - 100 * (1 + ticks) : m + 100 * (1 + ticks);
    };
    auto add = [&](std::vector<itch50::Bytes>& into) {
        const std::uint16_t locate = stock();
        const bool buy = next() & 1;
        const auto shares = static_cast<std::uint32_t>(100 * (1 + next() % 10));
        emit(into, itch50::add_order(locate, ref, buy ? 'B' : 'S', shares, price(locate, buy)));
        live.push_back({ref++, shares, locate, buy});
    };
    for (std::uint16_t locate = 1; locate <= kDayStocks; ++locate) {
        std::string symbol = "S";
        symbol += std::to_string(locate);
        emit(out.warm, itch50::stock_directory(locate, symbol));
    }
    for (std::uint32_t i = 0; i < kItchOpen; ++i) add(out.warm);
    if (!batch.empty()) flush(out.warm);
    ref += 50'000'000;
    for (int i = 0; i < kItchTimed; ++i) {
        const std::uint64_t r = next() % 10'000;
        if (r < 4536 || live.empty()) {
            add(out.timed);
            continue;
        }
        // 90 %: one of the newest (age exponential, mean ~600 adds); else any live order.
        std::size_t k;
        if (next() % 10 != 0) {
            const auto age = static_cast<std::size_t>(-std::log(1.0 - uniform01()) * 600.0);
            k = live.size() - 1 - std::min(age, std::min<std::size_t>(live.size() - 1, 4095));
        } else {
            k = next() % live.size();
        }
        Order& o = live[k];
        bool gone = false;
        if (r < 8896) {  // D
            emit(out.timed, itch50::delete_order(o.locate, o.ref));
            gone = true;
        } else if (r < 9611) {  // U: a new reference, price and size, same side
            const auto shares = static_cast<std::uint32_t>(100 * (1 + next() % 10));
            emit(out.timed, itch50::replace(o.locate, o.ref, ref, shares, price(o.locate, o.buy)));
            o.ref = ref++;
            o.shares = shares;
        } else if (r < 9834) {  // E: the whole order half the time, else part of it
            const std::uint32_t n = next() & 1 ? o.shares : std::max<std::uint32_t>(1, o.shares / 2);
            emit(out.timed, itch50::executed(o.locate, o.ref, n));
            o.shares -= n;
            gone = o.shares == 0;
        } else {  // X: part of it
            const std::uint32_t n = std::max<std::uint32_t>(1, o.shares / 4);
            if (n == o.shares) {
                emit(out.timed, itch50::delete_order(o.locate, o.ref));
                gone = true;
            } else {
                emit(out.timed, itch50::cancel(o.locate, o.ref, n));
                o.shares -= n;
            }
        }
        if (gone) {
            live[k] = live.back();
            live.pop_back();
        }
    }
    if (!batch.empty()) flush(out.timed);
    return out;
}

enum class ItchFlow { kUniform, kSkewed, kDay };
const ItchStream& itch_stream(ItchFlow flow) {
    if (flow == ItchFlow::kUniform) {
        static const ItchStream uniform = make_itch_stream(false);
        return uniform;
    }
    if (flow == ItchFlow::kSkewed) {
        static const ItchStream hot = make_itch_stream(true);
        return hot;
    }
    static const ItchStream day = make_day_stream();
    return day;
}

// Per-datagram time (TSC, converted with the run's own ns per tick) over
// its messages: percentiles of ns per message, datagram by datagram.
struct DatagramTimes {
    std::vector<std::uint64_t> ticks;  // reserved up front: no allocation while timed
    std::vector<std::uint16_t> msgs;
    void percentiles(benchmark::State& state, double ns_per_tick) {
        std::vector<double> per;
        per.reserve(ticks.size());
        for (std::size_t i = 0; i < ticks.size(); ++i) per.push_back(static_cast<double>(ticks[i]) * ns_per_tick / msgs[i]);
        if (per.empty()) return;
        std::sort(per.begin(), per.end());
        state.counters["p50_ns_per_msg"] = per[per.size() / 2];
        state.counters["p99_ns_per_msg"] = per[per.size() * 99 / 100];
    }
};

// The production decode path: what ReplayFront::deliver and the live handler
// run before the sequencer, moldudp64::Stream::on_datagram (key, session,
// walk, positions, exactly-once) handing each message to a sink that
// normalizes it into its Event with itch50::decode_event, as StreamEvents
// does before the sequencer.
struct ParseSink {
    std::uint64_t sum = 0;
    void message(std::uint32_t ch, std::span<const std::byte> m, std::uint64_t position, std::int64_t recv_ns) noexcept {
        const Event ev = itch50::decode_event(ch, m, position, recv_ns);
        sum += ev.instrument_id + static_cast<std::uint64_t>(ev.kind) + venue_fields<itch50::ReduceFields>(ev).order_ref;
    }
    void session_started(std::uint32_t, bool) noexcept {}
    void late_join(std::uint32_t, std::uint64_t) noexcept {}
    void gave_up(std::uint32_t, std::uint64_t) noexcept {}
    void alive(std::uint32_t, std::int64_t) noexcept {}
};
void BM_Itch_Parse(benchmark::State& state, ItchFlow flow) {
    const ItchStream& s = itch_stream(flow);
    using Stream = itch50::Replay::Front::Stream;
    std::unique_ptr<Stream> stream;
    ParseSink sink;
    std::int64_t now = kT0;
    auto fresh = [&] {
        stream = std::make_unique<Stream>(moldudp64::StreamConfig{}, 1);
        for (const auto& d : s.warm) stream->on_datagram(0, d, moldudp64::read_key(d, 0), now += 1000, sink);
    };
    fresh();
    std::size_t i = 0;
    std::uint64_t msgs = 0;
    for (auto _ : state) {
        if (i == s.timed.size()) {
            state.PauseTiming();
            fresh();
            i = 0;
            state.ResumeTiming();
        }
        const auto& d = s.timed[i++];
        const moldudp64::Key key = moldudp64::read_key(d, 0);
        stream->on_datagram(0, d, key, now += 1000, sink);
        msgs += key.count;
    }
    benchmark::DoNotOptimize(sink.sum);
    if (stream->channel(0).counters.lost_messages.get() != 0) state.SkipWithError("parse stream lost messages");
    set_msgs(state, msgs);
}
BENCHMARK_CAPTURE(BM_Itch_Parse, uniform_5000_stocks, ItchFlow::kUniform);
BENCHMARK_CAPTURE(BM_Itch_Parse, day_like_8000_stocks, ItchFlow::kDay);

// `subscribed` > 0: only stocks S1..S<subscribed> are booked (issue 15's
// instruments.subscribe); every message is still sequenced.
// One timed datagram, out of line: a profiler can count the timed part alone
// (`valgrind --tool=callgrind --toggle-collect='*itch_timed_datagram*'`:
// instructions per message without the untimed warm-up).
[[gnu::noinline]] void itch_timed_datagram(itch50::Replay& r, std::span<const std::byte> d, std::int64_t now) {
    r.front().on_datagram(d, 0xEFFF0A01, 31001, now);
}

// Times: ReplayFront::on_datagram (moldudp64::Stream -> SnapshotRouter ->
// BasicSequencer<itch50::Rules> -> order book), the path of `tickgate replay` and, through
// ReplayFront::deliver, of the live handler.
void BM_Itch_Pipeline(benchmark::State& state, ItchFlow flow, int subscribed) {
    const ItchStream& s = itch_stream(flow);
    std::string subscribe;
    for (int k = 1; k <= subscribed; ++k) subscribe += (k > 1 ? ", \"S" : "\"S") + std::to_string(k) + "\"";
    const Config cfg = parse_config("[itch]\nmax_orders = " + std::to_string(2 * kItchOpen) +
                                        "\nmax_levels = 1048576\n[instruments]\nsubscribe = [" + subscribe + "]\n",
                                    "bench.toml");
    std::unique_ptr<itch50::Replay> r;
    std::int64_t now = kT0;
    auto fresh = [&] {
        r.reset();
        r = std::make_unique<itch50::Replay>(cfg);
        for (const auto& d : s.warm) r->front().on_datagram(d, 0xEFFF0A01, 31001, now += 1000);
    };
    fresh();
    std::size_t i = 0;
    std::uint64_t msgs = 0;
    DatagramTimes times;
    times.ticks.reserve(std::size_t{1} << 24);
    times.msgs.reserve(std::size_t{1} << 24);
    const auto wall0 = std::chrono::steady_clock::now();
    const std::uint64_t tsc0 = __rdtsc();
    for (auto _ : state) {
        if (i == s.timed.size()) {
            state.PauseTiming();
            fresh();
            i = 0;
            state.ResumeTiming();
        }
        const auto& d = s.timed[i++];
        const auto count = moldudp64::read_key(d, 0).count;
        const std::uint64_t t0 = __rdtsc();
        itch_timed_datagram(*r, d, now += 1000);
        const std::uint64_t dt = __rdtsc() - t0;
        if (times.ticks.size() < times.ticks.capacity()) {
            times.ticks.push_back(dt);
            times.msgs.push_back(count);
        }
        msgs += count;
    }
    const double wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - wall0).count();
    times.percentiles(state, wall_ns / static_cast<double>(__rdtsc() - tsc0));
    const auto ch = r->front().channel(0);
    std::uint64_t unknown = 0;
    for (const std::uint32_t id : r->handler().instruments().seen_ids()) unknown += r->handler().sequencer().venue().counters(id).unknown_orders;
    if (ch.counters.lost_messages.get() != 0 || ch.counters.malformed_packets.get() != 0 || unknown != 0)
        state.SkipWithError("ITCH pipeline lost, malformed or unknown orders");
    state.counters["open_orders"] = static_cast<double>(r->handler().book().open_orders());
    // What bench/instructions.sh multiplies itch_timed_datagram's calls by
    // (every timed datagram but a stream's last is full).
    state.counters["messages_per_datagram"] = kItchPerDatagram;
    state.counters["bytes_per_open_order"] =
        static_cast<double>(OrderBook::bytes_for(itch50::kMaxLocates, 2 * kItchOpen, 1'048'576)) / static_cast<double>(r->handler().book().open_orders());
    set_msgs(state, msgs);
}
BENCHMARK_CAPTURE(BM_Itch_Pipeline, uniform_5000_stocks, ItchFlow::kUniform, 0);
BENCHMARK_CAPTURE(BM_Itch_Pipeline, half_on_100_stocks, ItchFlow::kSkewed, 0);
BENCHMARK_CAPTURE(BM_Itch_Pipeline, day_like_8000_stocks, ItchFlow::kDay, 0);
BENCHMARK_CAPTURE(BM_Itch_Pipeline, uniform_5000_stocks_5_subscribed, ItchFlow::kUniform, 5);
BENCHMARK_CAPTURE(BM_Itch_Pipeline, uniform_5000_stocks_500_subscribed, ItchFlow::kUniform, 500);

// The book alone on the same flows: each message decoded (decode_message)
// before the run into the OrderBook call itch50::Sequencer::order makes,
// then those calls timed, a datagram's (20) per iteration, on a book of the
// pipeline's capacities (65,536 locates, 2 M orders, 1,048,576 levels).
// What the pipeline adds on top is the stream, the sequencer and the decode.
struct BookOp {
    std::uint64_t ref, new_ref;
    std::uint32_t shares, price;
    std::uint16_t locate;
    itch50::Action action;
    Side side;
};
std::vector<BookOp> book_ops(const std::vector<itch50::Bytes>& datagrams) {
    std::vector<BookOp> ops;
    for (const auto& d : datagrams) {
        const moldudp64::Key key = moldudp64::read_key(d, 0);
        (void)moldudp64::walk(
            d, key, [](std::uint8_t type) noexcept { return itch50::min_length(type); },
            [&](std::uint16_t, std::span<const std::byte> m) {
                const itch50::OrderMessage o = itch50::decode_message(m, 0);
                switch (o.action) {
                    case itch50::Action::kAdd:
                    case itch50::Action::kExecute:
                    case itch50::Action::kCancel:
                    case itch50::Action::kDelete:
                    case itch50::Action::kReplace:
                        ops.push_back({o.order_ref, o.new_order_ref, o.shares, o.price, o.stock_locate, o.action,
                                       o.side == 'S' ? Side::kAsk : Side::kBid});
                        break;
                    default: break;
                }
            });
    }
    return ops;
}
[[gnu::always_inline]] inline OrderResult apply_op(OrderBook& b, const BookOp& o) noexcept {
    switch (o.action) {
        case itch50::Action::kAdd: return b.add(o.locate, o.ref, o.side, o.shares, o.price);
        case itch50::Action::kExecute:
        case itch50::Action::kCancel: return b.reduce(o.locate, o.ref, o.shares);
        case itch50::Action::kDelete: return b.remove(o.locate, o.ref);
        default: return b.replace(o.locate, o.ref, o.new_ref, o.shares, o.price);
    }
}
// One timed batch, out of line (callgrind: --toggle-collect='*itch_book_batch*').
[[gnu::noinline]] std::uint32_t itch_book_batch(OrderBook& b, const BookOp* ops, std::size_t n) {
    std::uint32_t unknown = 0;
    for (std::size_t k = 0; k < n; ++k) unknown += apply_op(b, ops[k]) == OrderResult::kUnknownOrder;
    return unknown;
}
void BM_Itch_Book(benchmark::State& state, ItchFlow flow) {
    const ItchStream& s = itch_stream(flow);
    static std::array<std::vector<BookOp>, 3> warm_ops, timed_ops;
    const auto f = static_cast<std::size_t>(flow);
    if (timed_ops[f].empty()) {
        warm_ops[f] = book_ops(s.warm);
        timed_ops[f] = book_ops(s.timed);
    }
    const std::vector<BookOp>& warm = warm_ops[f];
    const std::vector<BookOp>& timed = timed_ops[f];
    std::unique_ptr<OrderBook> b;
    auto fresh = [&] {
        b.reset();
        b = std::make_unique<OrderBook>(itch50::kMaxLocates, 2 * kItchOpen, 1'048'576, itch50::kLocateBits);
        for (const BookOp& o : warm) (void)apply_op(*b, o);
    };
    fresh();
    std::size_t i = 0;
    std::uint64_t msgs = 0, unknown = 0;
    DatagramTimes times;
    times.ticks.reserve(std::size_t{1} << 24);
    times.msgs.reserve(std::size_t{1} << 24);
    const auto wall0 = std::chrono::steady_clock::now();
    const std::uint64_t tsc0 = __rdtsc();
    for (auto _ : state) {
        if (i + kItchPerDatagram > timed.size()) {
            state.PauseTiming();
            fresh();
            i = 0;
            state.ResumeTiming();
        }
        const std::uint64_t t0 = __rdtsc();
        unknown += itch_book_batch(*b, timed.data() + i, kItchPerDatagram);
        const std::uint64_t dt = __rdtsc() - t0;
        if (times.ticks.size() < times.ticks.capacity()) {
            times.ticks.push_back(dt);
            times.msgs.push_back(kItchPerDatagram);
        }
        i += kItchPerDatagram;
        msgs += kItchPerDatagram;
    }
    const double wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - wall0).count();
    times.percentiles(state, wall_ns / static_cast<double>(__rdtsc() - tsc0));
    if (unknown != 0) state.SkipWithError("ITCH book: unknown orders");
    state.counters["open_orders"] = static_cast<double>(b->open_orders());
    state.counters["bytes_per_open_order"] =
        static_cast<double>(OrderBook::bytes_for(itch50::kMaxLocates, 2 * kItchOpen, 1'048'576)) / static_cast<double>(b->open_orders());
    set_msgs(state, msgs);
}
BENCHMARK_CAPTURE(BM_Itch_Book, uniform_5000_stocks, ItchFlow::kUniform);
BENCHMARK_CAPTURE(BM_Itch_Book, half_on_100_stocks, ItchFlow::kSkewed);
BENCHMARK_CAPTURE(BM_Itch_Book, day_like_8000_stocks, ItchFlow::kDay);

// #21 item 6: 300,000 adds on one stock, each a bid below every other (a
// new price level at the far end of the book), 20 a datagram: the
// adversarial fill whose level inserts were quadratic in a sorted flat
// array (15 s). One iteration is the whole fill into a fresh replay; ns/msg
// is its time over the 300,000 adds.
constexpr std::uint32_t kDistinctLevels = 300'000;
const std::vector<itch50::Bytes>& distinct_level_stream() {
    static const std::vector<itch50::Bytes> stream = [] {
        std::vector<itch50::Bytes> out;
        std::vector<itch50::Bytes> batch{itch50::stock_directory(1, "S1")};
        std::uint64_t seq = 1;
        for (std::uint32_t i = 0; i < kDistinctLevels; ++i) {
            batch.push_back(itch50::add_order(1, i + 1, 'B', 100, 4'000'000 - i));
            if (batch.size() == kItchPerDatagram) {
                out.push_back(itch_datagram(seq, batch));
                seq += batch.size();
                batch.clear();
            }
        }
        if (!batch.empty()) out.push_back(itch_datagram(seq, batch));
        return out;
    }();
    return stream;
}
// Feeds the whole input `s` into a fresh Replay of `cfg` per iteration (its
// construction and teardown untimed); `after(replay)` keeps what the check
// needs. ns/msg over `msgs_each` messages an iteration.
template <class After>
void replay_whole_input(benchmark::State& state, const Config& cfg, const std::vector<itch50::Bytes>& s,
                        std::uint64_t msgs_each, After&& after) {
    std::int64_t now = kT0;
    std::uint64_t msgs = 0;
    for (auto _ : state) {
        state.PauseTiming();
        auto r = std::make_unique<itch50::Replay>(cfg);
        state.ResumeTiming();
        for (const auto& d : s) r->front().on_datagram(d, 0xEFFF0A01, 31001, now += 1000);
        msgs += msgs_each;
        after(*r);
        state.PauseTiming();
        r.reset();
        state.ResumeTiming();
    }
    set_msgs(state, msgs);
}

void BM_Itch_DistinctLevels(benchmark::State& state) {
    const Config cfg = parse_config("[itch]\nmax_orders = 524288\nmax_levels = 524288\n", "bench.toml");
    std::size_t levels = 0;
    replay_whole_input(state, cfg, distinct_level_stream(), kDistinctLevels,
                       [&](const itch50::Replay& r) { levels = r.handler().book().side(1, Side::kBid).size(); });
    if (levels != kDistinctLevels) state.SkipWithError("not every add made its own level");
}
BENCHMARK(BM_Itch_DistinctLevels)->Unit(benchmark::kMillisecond);

// The other red-team inputs of issue 21 item 6, each through a fresh replay
// per iteration (ns/msg over the whole input). Colliding references:
// 160,000 adds on one stock whose references are multiples of `stride` (the
// order store's size, or 2^20: `ref % size` put them on one slot), then
// every other one deleted.
constexpr std::uint32_t kCollidingOrders = 160'000;
std::vector<itch50::Bytes> colliding_stream(std::uint64_t stride) {
    std::vector<itch50::Bytes> out;
    std::vector<itch50::Bytes> batch{itch50::stock_directory(1, "S1")};
    std::uint64_t seq = 1;
    auto push = [&](itch50::Bytes m) {
        batch.push_back(std::move(m));
        if (batch.size() == kItchPerDatagram) {
            out.push_back(itch_datagram(seq, batch));
            seq += batch.size();
            batch.clear();
        }
    };
    for (std::uint64_t k = 1; k <= kCollidingOrders; ++k) push(itch50::add_order(1, k * stride, 'B', 100, 4'000'000 + k % 50));
    for (std::uint64_t k = 1; k <= kCollidingOrders; k += 2) push(itch50::delete_order(1, k * stride));
    if (!batch.empty()) out.push_back(itch_datagram(seq, batch));
    return out;
}
void BM_Itch_CollidingRefs(benchmark::State& state, bool table_stride) {
    const Config cfg = parse_config("[itch]\nmax_orders = " + std::to_string(kCollidingOrders) + "\nmax_levels = 4096\n", "bench.toml");
    const std::uint64_t stride = table_stride ? std::uint64_t{kCollidingOrders} + kCollidingOrders / 4 + 1 : std::uint64_t{1} << 20;
    std::size_t open = 0;
    replay_whole_input(state, cfg, colliding_stream(stride), kCollidingOrders + kCollidingOrders / 2,
                       [&](const itch50::Replay& r) { open = r.handler().book().open_orders(); });
    if (open != kCollidingOrders / 2) state.SkipWithError("not every colliding add and delete applied");
}
BENCHMARK_CAPTURE(BM_Itch_CollidingRefs, stride_table_size, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Itch_CollidingRefs, stride_2pow20, false)->Unit(benchmark::kMillisecond);

// A new session per datagram (each empties the channel's books: it walked
// the whole order store, 30 s for 1,500), 20 adds in each, 1 M orders of
// store: ns/msg over the adds.
void BM_Itch_SessionChurn(benchmark::State& state) {
    static const std::vector<itch50::Bytes> s = [] {
        std::vector<itch50::Bytes> out;
        for (int i = 0; i < 1500; ++i) {
            char session[11];
            std::snprintf(session, sizeof session, "S%09d", i);
            std::vector<itch50::Bytes> batch;
            for (std::uint64_t r = 1; r <= kItchPerDatagram; ++r)
                batch.push_back(itch50::add_order(5, r, 'B', 100, static_cast<std::uint32_t>(1000 + r)));
            out.push_back(itch50::mold_packet(session, 1, batch));
        }
        return out;
    }();
    const Config cfg = parse_config("[itch]\nmax_orders = 1000000\nmax_levels = 4096\n", "bench.toml");
    std::uint64_t changes = 0;
    replay_whole_input(state, cfg, s, s.size() * kItchPerDatagram,
                       [&](const itch50::Replay& r) { changes = r.front().channel(0).counters.session_changes.get(); });
    if (changes != s.size() - 1) state.SkipWithError("not every datagram started a session");
}
BENCHMARK(BM_Itch_SessionChurn)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
