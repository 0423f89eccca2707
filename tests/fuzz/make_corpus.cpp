// Writes the seed corpora of the fuzz targets (deterministic output):
//   OUT/fuzz_datagram/*  datagram sequences in fuzz_datagram's input format,
//                        built with PacketBuilder (normal, gaps, snapshots,
//                        A/B lines, sessions, malformed, ...) plus the first
//                        datagrams of the certification captures
//   OUT/fuzz_capture/*   small pcap/pcapng captures made with CaptureWriter,
//                        every format x link type, plus the first KB of the
//                        certification captures
//   OUT/fuzz_config/*    configs/*.toml plus hand-written valid/invalid TOML
//
// usage: make_corpus OUT_DIR [REPO_ROOT] [CERT_DIR]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/qfb1/wire.hpp"

namespace fs = std::filesystem;
using namespace tickgate;

namespace {

constexpr std::int64_t kBase = 1'700'000'000'000'000'000;  // the fuzz_datagram harness's first arrival time
constexpr std::int64_t kSteps[16] = {
    0,          1,           1'000,       50'000,        100'000,       249'000,       250'000,       1'000'000,
    10'000'000, 100'000'000, 249'000'000, 251'000'000, 1'000'000'000, 2'001'000'000, 5'000'000'000, 60'000'000'000};

// Step codes (index into kSteps).
constexpr unsigned kNoStep = 0, kStep1us = 2, kStep100us = 4, kStep250us = 6, kStep1ms = 7, kStep100ms = 9,
                   kStep251ms = 11, kStep1s = 12, kStep2s = 13, kStep60s = 15;

void write_file(const fs::path& p, std::span<const std::uint8_t> bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + p.string());
}

std::vector<std::uint8_t> read_prefix(const fs::path& p, std::size_t max) {
    std::ifstream f(p, std::ios::binary);
    std::vector<std::uint8_t> out(max);
    f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(max));
    out.resize(static_cast<std::size_t>(f.gcount()));
    return out;
}

// ------------------------------------------------------ fuzz_datagram input

// One fuzz_datagram input: flags byte, then [u16 header][datagram] records.
class Seq {
public:
    explicit Seq(std::uint8_t flags) { out_.push_back(flags); }
    std::int64_t now() const { return now_; }

    Seq& add(std::span<const std::byte> d, unsigned step = kStep1us, unsigned line = 0) {
        const std::size_t n = std::min(d.size(), qfb1::kMaxDatagram);
        const unsigned h = static_cast<unsigned>(n) | (step & 15u) << 11 | (line & 1u) << 15;
        out_.push_back(static_cast<std::uint8_t>(h));
        out_.push_back(static_cast<std::uint8_t>(h >> 8));
        for (std::size_t i = 0; i < n; ++i) out_.push_back(std::to_integer<std::uint8_t>(d[i]));
        now_ += kSteps[step & 15u];
        return *this;
    }
    Seq& add(const PacketBuilder& p, unsigned step = kStep1us, unsigned line = 0) {
        return add(p.bytes(), step, line);
    }
    // The same packet on line A then line B (B slightly later).
    Seq& both(const PacketBuilder& p, unsigned step = kStep1us) {
        add(p, step, 0);
        return add(p, kStep1us, 1);
    }
    const std::vector<std::uint8_t>& bytes() const { return out_; }

private:
    std::vector<std::uint8_t> out_;
    std::int64_t now_ = kBase;
};

// A publisher of one channel: packet_seq and send time kept in step.
class Pub {
public:
    Pub(std::uint16_t channel, std::uint32_t session) : channel_(channel), session_(session) {}
    PacketBuilder next(std::int64_t now) { return PacketBuilder(channel_, session_, pseq_++, now); }
    void restart(std::uint32_t session) {
        session_ = session;
        pseq_ = 1;
    }
    std::uint64_t pseq() const { return pseq_; }

private:
    std::uint16_t channel_;
    std::uint32_t session_;
    std::uint64_t pseq_ = 1;
};

using L = PacketBuilder::SnapLevel;

std::vector<L> ladder(std::int64_t best, std::int64_t tick, int n, std::uint32_t qty = 100) {
    std::vector<L> v;
    for (int i = 0; i < n; ++i) v.push_back({best + tick * i, qty + static_cast<std::uint32_t>(i)});
    return v;
}

class DatagramCorpus {
public:
    explicit DatagramCorpus(fs::path dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }
    void save(const std::string& name, const Seq& s) { write_file(dir_ / name, s.bytes()); }

    void all() {
        normal(0, "normal_quotes");
        normal(1, "normal_quotes_arb");
        normal(4 | 8, "normal_static_defs_offsets");
        normal(2 | 4, "normal_no_learn");
        deltas();
        gaps();
        recovery();
        stale_snapshot();
        pool_exhaustion();
        sessions();
        arbitration();
        multi_channel();
        big_snapshot();
        heartbeats();
        gate_ages();
        out_of_range();
        malformed();
    }

private:
    // Definitions, full quotes and heartbeats on three instruments; every
    // packet on both lines (flags & 1: through the arbiter).
    void normal(std::uint8_t flags, const std::string& name) {
        Seq s(flags);
        Pub p(1, 1);
        s.both(p.next(s.now()).definition(1, "EURUSD", -8).definition(2, "GBPUSD", -5).definition(3, "USDJPY", -3));
        for (std::uint64_t k = 1; k <= 6; ++k) {
            auto pkt = p.next(s.now());
            pkt.quote(1, k, s.now(), 108'000'000 + k, 1'000'000, 108'010'000 + k, 2'000'000);
            pkt.quote(2, k, s.now(), 126'000 + k, 5, 126'010 + k, 7);
            if (k % 2 == 0) pkt.heartbeat(3, 1, s.now());
            s.both(pkt, k == 3 ? kStep100ms : kStep1ms);
        }
        s.both(p.next(s.now()).snapshot(3, 0, s.now(), ladder(15'000, -1, 3), ladder(15'010, 1, 3)));
        save(name, s);
    }

    // A depth book moved by deltas: inserts on both sides, replace, delete,
    // delete of a missing price, qty 0 (delete), inserts beyond depth 8,
    // side/action values other than 0/1.
    void deltas() {
        Seq s(0);
        Pub p(1, 1);
        s.add(p.next(s.now()).definition(5, "XAUUSD", -2).snapshot(5, 0, s.now(), ladder(200'000, -10, 4),
                                                                    ladder(200'010, 10, 4)));
        std::uint64_t q = 1;
        auto pkt = p.next(s.now());
        pkt.delta(5, q++, s.now(), 200'005, 7, 0, 0)     // insert inside
            .delta(5, q++, s.now(), 200'000, 9, 0, 0)    // replace best bid
            .delta(5, q++, s.now(), 199'990, 0, 0, 1)    // delete
            .delta(5, q++, s.now(), 123, 0, 0, 1)        // delete missing
            .delta(5, q++, s.now(), 200'010, 0, 1, 0)    // qty 0: delete best ask
            .delta(5, q++, s.now(), 200'015, 3, 1, 0);   // insert ask
        s.add(pkt);
        auto deep = p.next(s.now());
        for (int i = 0; i < 12; ++i) deep.delta(5, q++, s.now(), 199'900 - i * 5, 1 + i, 0, 0);  // beyond depth
        for (int i = 0; i < 12; ++i) deep.delta(5, q++, s.now(), 200'100 + i * 5, 1 + i, 1, 0);
        s.add(deep, kStep1ms);
        auto better = p.next(s.now());
        for (int i = 0; i < 4; ++i) better.delta(5, q++, s.now(), 200'006 + i, 2, 0, 0);  // full: worst falls off
        better.delta(5, q++, s.now(), 200'011, 4, 7, 0).delta(5, q++, s.now(), 200'011, 4, 1, 9);  // odd side/action
        s.add(better, kStep1ms);
        save("deltas_book", s);
    }

    // Forward gaps on quotes and deltas, a duplicate, an old tick.
    void gaps() {
        Seq s(0);
        Pub p(1, 1);
        s.add(p.next(s.now()).quote(1, 1, s.now(), 100, 1, 101, 1).quote(2, 1, s.now(), 200, 1, 201, 1));
        s.add(p.next(s.now()).quote(1, 4, s.now(), 102, 1, 103, 1));        // gap of 2
        s.add(p.next(s.now()).quote(1, 4, s.now(), 102, 1, 103, 1));        // duplicate
        s.add(p.next(s.now()).quote(1, 2, s.now(), 99, 1, 100, 1));          // late old tick
        s.add(p.next(s.now()).delta(2, 2, s.now(), 199, 5, 0, 0));
        s.add(p.next(s.now()).delta(2, 5, s.now(), 198, 5, 0, 0));           // delta gap: suspect
        s.add(p.next(s.now()).quote(2, 6, s.now(), 200, 1, 201, 1));         // a Q clears it
        s.add(p.next(s.now()).quote(1, 1'000'000, s.now(), 100, 1, 101, 1), kStep100ms);  // big gap
        save("gaps", s);
    }

    // Snapshot recovery: deltas buffered while suspect, a lagging snapshot
    // that they continue (clean again), then one that leaves a hole.
    void recovery() {
        Seq s(0);
        Pub p(1, 1);
        s.add(p.next(s.now()).snapshot(7, 0, s.now(), ladder(1000, -1, 3), ladder(1001, 1, 3)));
        s.add(p.next(s.now()).delta(7, 1, s.now(), 1000, 5, 0, 0).delta(7, 2, s.now(), 1001, 6, 1, 0));
        s.add(p.next(s.now()).delta(7, 5, s.now(), 999, 7, 0, 0).delta(7, 6, s.now(), 1002, 8, 1, 0));  // gap
        s.add(p.next(s.now()).delta(7, 7, s.now(), 998, 9, 0, 1));
        s.add(p.next(s.now()).snapshot(7, 4, s.now(), ladder(1000, -1, 4), ladder(1001, 1, 4)));  // lags; 5..7 replayed
        s.add(p.next(s.now()).delta(7, 10, s.now(), 997, 1, 0, 0));                          // gap again
        s.add(p.next(s.now()).snapshot(7, 8, s.now(), ladder(1000, -1, 2), ladder(1001, 1, 2)));  // hole at 9
        s.add(p.next(s.now()).snapshot(7, 12, s.now(), ladder(1000, -1, 2), ladder(1001, 1, 2)));  // ahead: clean
        s.add(p.next(s.now()).heartbeat(7, 13, s.now()), kStep100ms);
        save("snapshot_recovery", s);
    }

    void stale_snapshot() {
        Seq s(0);
        Pub p(1, 1);
        s.add(p.next(s.now()).snapshot(8, 10, s.now(), ladder(50, -1, 2), ladder(51, 1, 2)));
        s.add(p.next(s.now()).delta(8, 11, s.now(), 50, 3, 0, 0));
        s.add(p.next(s.now()).snapshot(8, 9, s.now(), ladder(40, -1, 2), ladder(41, 1, 2)));   // stale
        s.add(p.next(s.now()).snapshot(8, 11, s.now(), ladder(45, -1, 1), ladder(46, 1, 1)));  // equal: applied
        s.add(p.next(s.now()).snapshot(8, 11, s.now(), {}, {}));                                // empty book
        save("stale_snapshot", s);
    }

    // Six instruments suspect at once with a pool of 4 blocks, and more
    // deltas than a block of 16 holds.
    void pool_exhaustion() {
        Seq s(0);
        Pub p(1, 1);
        auto start = p.next(s.now());
        for (std::uint32_t id = 10; id < 16; ++id) start.delta(id, 1, s.now(), 100 + id, 1, 0, 0);
        s.add(start);
        auto gap = p.next(s.now());
        for (std::uint32_t id = 10; id < 16; ++id) gap.delta(id, 3, s.now(), 100 + id, 2, 1, 0);
        s.add(gap);
        for (int round = 0; round < 2; ++round) {
            auto more = p.next(s.now());
            for (std::uint64_t k = 0; k < 20; ++k)
                more.delta(10, 4 + round * 20 + k, s.now(), 90 + static_cast<std::int64_t>(k), 1, k % 2, 0);
            s.add(more);
        }
        s.add(p.next(s.now()).snapshot(10, 2, s.now(), ladder(100, -1, 2), ladder(101, 1, 2)));  // ring wrapped
        s.add(p.next(s.now()).quote(11, 4, s.now(), 1, 1, 2, 1));                                // frees a block
        s.add(p.next(s.now()).delta(16, 1, s.now(), 5, 1, 0, 0).delta(16, 3, s.now(), 6, 1, 0, 0));
        save("recovery_pool", s);
    }

    // Session changes: reset, counters cumulative, a late packet of the old session.
    void sessions() {
        Seq s(0);
        Pub p(1, 5);
        s.add(p.next(s.now()).quote(1, 1, s.now(), 10, 1, 11, 1).delta(2, 1, s.now(), 10, 1, 0, 0));
        s.add(p.next(s.now()).quote(1, 2, s.now(), 10, 1, 11, 1).heartbeat(3, 9, s.now()));
        p.restart(6);
        s.add(p.next(s.now()).snapshot(2, 0, s.now(), ladder(9, -1, 2), ladder(10, 1, 2)), kStep1ms);
        s.add(PacketBuilder(1, 5, 3, s.now()).quote(1, 3, s.now(), 12, 1, 13, 1));  // old session: stale
        s.add(p.next(s.now()).quote(1, 1, s.now(), 10, 1, 11, 1));
        s.add(PacketBuilder(2, 1, 1, s.now()).quote(4, 1, s.now(), 1, 1, 2, 1));     // another channel
        p.restart(0xFFFFFFFFu);
        s.add(p.next(s.now()).quote(1, 1, s.now(), 10, 1, 11, 1));
        save("sessions", s);

        Seq a(1);  // the same through the arbiter, on both lines
        Pub q(1, 5);
        a.both(q.next(a.now()).quote(1, 1, a.now(), 10, 1, 11, 1));
        auto held = q.next(a.now());
        held.quote(1, 3, a.now(), 10, 1, 11, 1);
        auto hole = q.next(a.now());
        hole.quote(1, 2, a.now(), 10, 1, 11, 1);
        a.add(held.bytes(), kStep1us, 0);  // packet 3 before 2: held
        a.add(hole.bytes(), kStep1us, 1);  // B fills the hole
        q.restart(6);
        a.add(q.next(a.now()).quote(1, 1, a.now(), 10, 1, 11, 1), kStep1us, 0);
        a.add(PacketBuilder(1, 5, 9, a.now()).quote(1, 9, a.now(), 1, 1, 2, 1), kStep1us, 1);
        save("sessions_arb", a);
    }

    // A/B arbitration: holes filled by the other line, holes given up after
    // the hold time, duplicates, a jump beyond the window.
    void arbitration() {
        Seq s(1);
        std::vector<PacketBuilder> pk;
        for (std::uint64_t k = 1; k <= 12; ++k) {
            PacketBuilder b(1, 1, k, s.now());
            b.quote(1, k, s.now(), 100 + static_cast<std::int64_t>(k), 1, 200, 1);
            pk.push_back(b);
        }
        s.add(pk[0], kStep1us, 0);
        s.add(pk[2], kStep1us, 0);   // hole at 2
        s.add(pk[3], kStep1us, 0);
        s.add(pk[1], kStep100us, 1); // B fills it
        s.add(pk[2], kStep1us, 1);   // duplicates
        s.add(pk[5], kStep1us, 0);   // hole at 5 (index 4)
        s.add(pk[6], kStep250us, 0); // hold expires
        s.add(pk[4], kStep1ms, 1);   // too late: duplicate
        s.add(pk[11], kStep1us, 0);  // within window 8? 12 - 8 = 4 ahead
        s.add(pk[9], kStep1us, 1);
        s.add(PacketBuilder(1, 1, 40, s.now()).quote(1, 40, s.now(), 1, 1, 2, 1), kStep1us, 0);  // far ahead
        s.add(pk[7], kStep1us, 1);   // old
        save("arbitration", s);

        Seq o(1);  // heavy reordering within the window, both lines
        for (const int k : {2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11}) o.add(pk[static_cast<std::size_t>(k - 1)], kNoStep, 0);
        for (const int k : {12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}) o.add(pk[static_cast<std::size_t>(k - 1)], kNoStep, 1);
        save("arbitration_reorder", o);
    }

    // More channels than the arbiter tracks (4), interleaved.
    void multi_channel() {
        Seq s(1);
        for (std::uint64_t k = 1; k <= 3; ++k)
            for (std::uint16_t ch = 1; ch <= 6; ++ch)
                s.add(PacketBuilder(ch, 1, k, s.now()).quote(ch, k, s.now(), 10, 1, 11, 1), kStep1us, k % 2);
        save("multi_channel_arb", s);
    }

    // Snapshots with many levels: beyond depth 8, out of order, equal
    // prices, qty 0, all in one datagram (80 levels = 1312 bytes).
    void big_snapshot() {
        Seq s(0);
        Pub p(1, 1);
        s.add(p.next(s.now()).snapshot(9, 5, s.now(), ladder(5000, -1, 40), ladder(5001, 1, 40)));
        std::vector<L> bids = {{10, 1}, {30, 2}, {20, 3}, {30, 4}, {5, 0}, {40, 5}, {-7, 6}};
        std::vector<L> asks = {{50, 1}, {45, 0}, {45, 2}, {60, 3}, {41, 4}, {41, 5}};
        s.add(p.next(s.now()).snapshot(9, 6, s.now(), bids, asks));
        s.add(p.next(s.now()).snapshot(9, 7, s.now(), ladder(100, -1, 1), {}));
        s.add(p.next(s.now()).snapshot(9, 8, s.now(), {}, ladder(101, 1, 9)));
        save("big_snapshot", s);
    }

    // Heartbeats: cold start (next_seq 0 and 100), gap-free, revealing a
    // gap, on a full-quote instrument then its next Q.
    void heartbeats() {
        Seq s(0);
        Pub p(1, 1);
        s.add(p.next(s.now()).heartbeat(20, 0, s.now()).heartbeat(21, 100, s.now()));
        s.add(p.next(s.now()).quote(20, 1, s.now(), 1, 1, 2, 1).quote(21, 100, s.now(), 1, 1, 2, 1));
        s.add(p.next(s.now()).heartbeat(20, 2, s.now()).heartbeat(21, 105, s.now()), kStep100ms);
        s.add(p.next(s.now()).heartbeat(21, 105, s.now()).heartbeat(20, 2, s.now()), kStep100ms);
        s.add(p.next(s.now()).quote(21, 105, s.now(), 1, 1, 2, 1));
        s.add(p.next(s.now()).delta(22, 1, s.now(), 1, 1, 0, 0).heartbeat(22, 4, s.now()));
        s.add(p.next(s.now()).delta(22, 4, s.now(), 2, 1, 0, 0));
        save("heartbeats", s);
    }

    // Time passing: stale (silence), stale at source (old source_time),
    // clock offsets (flags bit 3), then fresh again.
    void gate_ages() {
        Seq s(8);
        Pub p(1, 1);
        Pub p2(2, 1);
        s.add(p.next(s.now()).quote(1, 1, s.now(), 1, 1, 2, 1));
        s.add(p2.next(s.now()).quote(2, 1, s.now() - 3'000'000'000, 1, 1, 2, 1));  // 3 s old at source
        s.add(p.next(s.now()).heartbeat(1, 2, s.now()), kStep251ms);
        s.add(p.next(s.now()).heartbeat(1, 2, s.now()), kStep2s);
        s.add(p2.next(s.now()).quote(2, 2, s.now() + 1'000'000'000, 1, 1, 2, 1), kStep1s);  // from the future
        s.add(p.next(s.now()).quote(1, 2, s.now(), 1, 1, 2, 1), kStep60s);
        save("gate_ages", s);
    }

    void out_of_range() {
        Seq s(0);
        Pub p(1, 1);
        for (const std::uint32_t id : {63u, 64u, 1000u, 0xFFFFFFFFu}) {
            auto pkt = p.next(s.now());
            pkt.definition(id, "OUT", -8)
                .quote(id, 1, s.now(), 1, 1, 2, 1)
                .delta(id, 2, s.now(), 1, 1, 0, 0)
                .heartbeat(id, 3, s.now())
                .snapshot(id, 3, s.now(), ladder(1, -1, 4), ladder(2, 1, 4));
            s.add(pkt);
        }
        save("out_of_range", s);
    }

    void malformed() {
        Pub p(1, 1);
        auto good = [&](std::int64_t now) {
            auto b = p.next(now);
            b.quote(1, p.pseq(), now, 1, 1, 2, 1);
            return b;
        };
        Seq s(0);
        s.add(good(s.now()));
        {
            auto b = good(s.now());
            s.add(b.bytes().first(10));  // short header
        }
        {
            auto b = good(s.now());
            b.mutable_bytes()[0] = std::byte{0x47};  // bad magic
            s.add(b);
        }
        {
            auto b = good(s.now());
            b.mutable_bytes()[2] = std::byte{2};  // bad version
            s.add(b);
        }
        {
            auto b = good(s.now());
            b.mutable_bytes()[4] = std::byte{3};  // msg_count 3, one message: truncated count
            s.add(b);
        }
        {
            auto b = good(s.now());
            b.quote(1, 99, s.now(), 1, 1, 2, 1);
            b.mutable_bytes()[28 + 48] = std::byte{0xFF};  // 2nd message length runs past the datagram
            s.add(b);
        }
        {
            auto b = good(s.now());
            b.mutable_bytes()[28] = std::byte{40};  // Q with length 40
            s.add(b);
        }
        {
            auto b = good(s.now());
            b.mutable_bytes()[28] = std::byte{2};  // length < 4
            s.add(b);
        }
        {
            auto b = good(s.now());
            b.mutable_bytes().push_back(std::byte{0});  // trailing byte
            b.mutable_bytes().push_back(std::byte{0});
            s.add(b);
        }
        {
            const std::byte body[12] = {};
            auto b = good(s.now());
            b.raw_message('Z', body).raw_message('q', {}).quote(2, 1, s.now(), 3, 1, 4, 1);  // unknown types skipped
            s.add(b);
        }
        {
            auto b = good(s.now());
            const std::vector<L> one = {{1, 1}};
            b.snapshot(3, 1, s.now(), one, one);
            b.mutable_bytes()[28 + 48 + 24] = std::byte{5};  // n_bids 5: length mismatch
            s.add(b);
        }
        {
            const std::byte body[28] = {};
            auto b = good(s.now());
            b.raw_message('S', body);  // S shorter than its header
            s.add(b);
        }
        s.add(std::span<const std::byte>{});  // empty datagram
        save("malformed", s);
    }

    fs::path dir_;
};

// Converts the first datagrams of a capture into a fuzz_datagram input.
void cert_datagrams(const fs::path& capture, const fs::path& out, std::uint8_t flags, std::size_t max) {
    CaptureReader reader(capture.string());
    Seq s(flags);
    FrameCounters fc;
    std::int64_t last = -1;
    std::size_t n = 0;
    while (auto rec = reader.next()) {
        auto d = extract_udp(reader.link_type(), rec->frame, fc);
        if (!d) continue;
        unsigned step = 0;
        if (last >= 0) {
            const std::int64_t dt = rec->ts_ns - last;
            for (unsigned k = 0; k < 16; ++k)
                if (kSteps[k] <= dt) step = k;  // largest step not above the real gap
        }
        last = rec->ts_ns;
        s.add(d->payload, step, d->dst_ip & 1);
        if (++n == max) break;
    }
    write_file(out, s.bytes());
}

// Converts a real MDP3 capture into fuzz_mdp3 inputs of `per_file` datagrams
// each (fuzz_mdp3.cpp's format: a channel per destination, line by its low bit).
std::size_t mdp3_datagrams(const fs::path& capture, const fs::path& dir, std::size_t per_file, std::size_t files) {
    CaptureReader reader(capture.string());
    FrameCounters fc;
    std::vector<std::uint32_t> dests;
    std::vector<std::uint8_t> bytes;
    std::size_t n = 0, written = 0;
    const auto flush = [&] {
        if (bytes.empty()) return;
        write_file(dir / (capture.stem().string() + "_" + std::to_string(written++)), bytes);
        bytes.clear();
    };
    while (auto rec = reader.next()) {
        auto d = extract_udp(reader.link_type(), rec->frame, fc);
        if (!d || d->payload.size() > 1500) continue;
        const std::uint32_t dest = d->dst_ip ^ d->dst_port;
        std::size_t ch = 0;
        while (ch < dests.size() && dests[ch] != dest) ++ch;
        if (ch == dests.size()) dests.push_back(dest);
        const unsigned header = static_cast<unsigned>(d->payload.size()) | ((ch & 3) << 11) | (1u << 13) |
                                ((d->dst_port & 1u) << 15);
        bytes.push_back(static_cast<std::uint8_t>(header));
        bytes.push_back(static_cast<std::uint8_t>(header >> 8));
        for (const std::byte b : d->payload) bytes.push_back(static_cast<std::uint8_t>(b));
        if (++n % per_file == 0) {
            flush();
            if (written == files) break;
        }
    }
    flush();
    return written;
}

// --------------------------------------------------------- fuzz_capture

constexpr std::uint32_t kSrc = 0x0A000001;    // 10.0.0.1
constexpr std::uint32_t kGroupA = 0xEFFF0A01;  // 239.255.10.1
constexpr std::uint32_t kGroupB = 0xEFFF0A02;  // 239.255.10.2
constexpr std::uint32_t kOther = 0xEF010101;   // 239.1.1.1

void captures(const fs::path& dir) {
    fs::create_directories(dir);
    struct Fmt {
        CaptureFormat f;
        const char* name;
    };
    struct Link {
        LinkType l;
        std::uint16_t vlan;
        const char* name;
    };
    const Fmt fmts[] = {{CaptureFormat::kPcapMicro, "us.pcap"},
                        {CaptureFormat::kPcapNano, "ns.pcap"},
                        {CaptureFormat::kPcapng, "pcapng"}};
    const Link links[] = {{LinkType::kEthernet, 0, "eth"},   {LinkType::kEthernet, 100, "vlan"},
                          {LinkType::kLinuxSll, 0, "sll"},   {LinkType::kLinuxSll2, 0, "sll2"},
                          {LinkType::kRaw, 0, "raw"},        {LinkType::kIpv4, 0, "ipv4"},
                          {LinkType::kNull, 0, "null"}};
    const std::int64_t t0 = 1'700'000'000'000'000'000;
    for (const Fmt& f : fmts) {
        for (const Link& l : links) {
            const fs::path path = dir / (std::string(l.name) + "." + f.name);
            CaptureWriter w(path.string(), f.f, l.l, l.vlan);
            std::int64_t t = t0;
            auto pkt = [&](std::uint64_t k) {
                PacketBuilder b(1, 1, k, t);
                if (k == 1) b.definition(1, "EURUSD", -8);
                b.quote(1, k, t, 108'000'000, 5, 108'001'000, 6);
                return b;
            };
            for (std::uint64_t k = 1; k <= 3; ++k) {
                const auto b = pkt(k);
                w.write_udp(t, kSrc, 40000, kGroupA, 31001, b.bytes());
                w.write_udp(t + 1000, kSrc, 40001, kGroupB, 31002, b.bytes());  // line B copy
                t += 1'000'000;
            }
            PacketBuilder other(2, 1, 1, t);
            other.quote(2, 1, t, 1, 1, 2, 1);
            w.write_udp(t, kSrc, 40000, kOther, 5000, other.bytes());  // not a configured line
            const std::byte junk[24] = {std::byte{0x45}};
            w.write_frame(t + 1, junk);                                // not UDP / truncated
        }
    }

    // Timestamps near the top of the int64 ns range (pcapng: 64-bit ticks).
    {
        CaptureWriter w((dir / "far_future.pcapng").string(), CaptureFormat::kPcapng, LinkType::kEthernet);
        const std::int64_t far = 9'000'000'000'000'000'000;
        for (const std::uint64_t k : {1, 3, 2}) {  // 3 before 2: the arbiter holds it
            PacketBuilder b(1, 1, k, far);
            b.quote(1, k, far, 1, 1, 2, 1);
            w.write_udp(far + static_cast<std::int64_t>(k), kSrc, 40000, k == 2 ? kGroupB : kGroupA,
                        k == 2 ? 31002 : 31001, b.bytes());
        }
    }
    {
        CaptureWriter w((dir / "end_of_32bit.ns.pcap").string(), CaptureFormat::kPcapNano, LinkType::kEthernet);
        const std::int64_t last = 4'294'967'295'999'999'000;  // the last second a pcap header can hold
        PacketBuilder b(1, 1, 1, last);
        b.quote(1, 1, last, 1, 1, 2, 1);
        w.write_udp(last, kSrc, 40000, kGroupA, 31001, b.bytes());
    }

    // Hand-made Ethernet frames: QinQ, IPv4 fragment, IPv6, IPv4 non-UDP.
    {
        CaptureWriter w((dir / "eth_oddities.ns.pcap").string(), CaptureFormat::kPcapNano, LinkType::kEthernet);
        PacketBuilder b(1, 1, 1, t0);
        b.heartbeat(1, 1, t0);
        std::vector<std::byte> frame(14 + 8 + 20 + 8 + b.size());
        auto be16 = [&](std::size_t off, unsigned v) {
            frame[off] = std::byte(v >> 8);
            frame[off + 1] = std::byte(v & 0xff);
        };
        be16(12, 0x88a8);
        be16(16, 0x8100);
        be16(20, 0x0800);
        std::byte* ip = frame.data() + 22;
        ip[0] = std::byte{0x45};
        be16(22 + 2, static_cast<unsigned>(20 + 8 + b.size()));
        ip[8] = std::byte{1};
        ip[9] = std::byte{17};
        for (int i = 0; i < 4; ++i) ip[12 + i] = std::byte(kSrc >> (24 - 8 * i));
        for (int i = 0; i < 4; ++i) ip[16 + i] = std::byte(kGroupA >> (24 - 8 * i));
        be16(22 + 20 + 0, 40000);
        be16(22 + 20 + 2, 31001);
        be16(22 + 20 + 4, static_cast<unsigned>(8 + b.size()));
        std::memcpy(frame.data() + 22 + 28, b.bytes().data(), b.size());
        w.write_frame(t0, frame);  // QinQ + VLAN: a datagram
        auto frag = frame;
        frag[22 + 6] = std::byte{0x20};  // MF
        w.write_frame(t0 + 1, frag);
        auto tcp = frame;
        tcp[22 + 9] = std::byte{6};
        w.write_frame(t0 + 2, tcp);
        auto v6 = frame;
        v6[20] = std::byte{0x86};
        v6[21] = std::byte{0xdd};
        w.write_frame(t0 + 3, v6);
        auto shortudp = frame;
        shortudp[22 + 20 + 4] = std::byte{0xff};  // UDP length beyond the packet
        w.write_frame(t0 + 4, shortudp);
        w.write_frame(t0 + 5, std::span<const std::byte>(frame).first(20));  // truncated
    }
}

// ------------------------------------------------------------ fuzz_config

void configs(const fs::path& dir, const fs::path& repo) {
    fs::create_directories(dir);
    const fs::path src = repo / "configs";
    if (fs::is_directory(src))
        for (const auto& e : fs::directory_iterator(src))
            if (e.path().extension() == ".toml") fs::copy_file(e.path(), dir / e.path().filename(),
                                                               fs::copy_options::overwrite_existing);
    struct Text {
        const char* name;
        const char* text;
    };
    static constexpr Text kTexts[] = {
        {"empty.toml", ""},
        {"full.toml", R"([instruments]
learn = false

[[instrument]]
id = 0
symbol = "A"
price_exponent = -18

[[instrument]]
id = 15
symbol = "~ !#$%&'()*+,-./"
price_exponent = 18

[[channel]]
id = 65535
clock_offset_ns = -9223372036854775808
sources = ["10.0.0.1", "192.168.1.254"]
a = { group = "224.0.0.0", port = 1, interface = "0.0.0.0" }
b = { group = "239.255.255.255", port = 65535 }

[[channel]]
id = 0
clock_offset_ns = 9223372036854775807
a.group = "239.1.1.1"
a.port = 2
b = { group = "239.1.1.1", port = 3, interface = "223.255.255.255" }

[capacity]
max_instruments = 16
book_depth = 1024
recovery_depth = 0
recovery_instruments = 0

[gate]
stale_ms = 1
source_age_ms = 86400000

[receiver]
ring_size = 67108864
rcvbuf_bytes = 65536
batch = 1024
arbitration = false
arbitration_hold_us = 1000000
arbitration_window = 2

[threading]
mode = "busy_poll"
receiver_cpu = 1023
engine_cpu = -1

[logging]
level = "off"
sink = "/tmp/x.log"
)"},
        {"err_unknown_key.toml", "[gate]\nstale_ms = 250\nstale_msx = 1\n"},
        {"err_unknown_quoted_key.toml", "[gate]\n\"a\\nb\\u0000\" = 1\n"},
        {"err_type.toml", "[capacity]\nbook_depth = 8.5\n"},
        {"err_range.toml", "[capacity]\nmax_instruments = 0\n"},
        {"err_ring.toml", "[receiver]\nring_size = 3000\n"},
        {"err_window.toml", "[receiver]\narbitration_window = 48\n"},
        {"err_dup_channel.toml", "[[channel]]\nid = 1\na = { group = \"239.1.1.1\", port = 1 }\n"
                                 "b = { group = \"239.1.1.2\", port = 1 }\n[[channel]]\nid = 1\n"
                                 "a = { group = \"239.1.1.3\", port = 1 }\nb = { group = \"239.1.1.4\", port = 1 }\n"},
        {"err_dup_endpoint.toml", "[[channel]]\nid = 1\na = { group = \"239.1.1.1\", port = 1 }\n"
                                  "b = { group = \"239.1.1.1\", port = 1 }\n"},
        {"err_group.toml", "[[channel]]\nid = 1\na = { group = \"239.01.1.1\", port = 1 }\n"
                           "b = { group = \"10.1.1.1\", port = 1 }\n"},
        {"err_missing.toml", "[[channel]]\nid = 1\n"},
        {"err_instrument.toml", "[capacity]\nmax_instruments = 4\n[[instrument]]\nid = 4\nsymbol = \"X\"\n"},
        {"err_symbol.toml", "[[instrument]]\nid = 1\nsymbol = \"\\u0001bad\"\n[[instrument]]\nid = 2\nsymbol = \"\"\n"},
        {"err_dup_symbol.toml", "[[instrument]]\nid = 1\nsymbol = \"A\"\n[[instrument]]\nid = 2\nsymbol = \"A\"\n"},
        {"err_mode.toml", "[threading]\nmode = \"spin\"\n"},
        {"err_level.toml", "[logging]\nlevel = 3\n"},
        {"err_not_table.toml", "gate = 5\n"},
        {"err_channel_not_array.toml", "[channel]\nid = 1\n"},
        {"err_date.toml", "[gate]\nstale_ms = 1979-05-27T07:32:00Z\n"},
        {"err_syntax.toml", "[gate\nstale_ms = = 1\n"},
        {"err_syntax_utf8.toml", "[gate]\nstale_ms = \"\xc3\x28\"\n"},
        {"err_array_types.toml", "[[channel]]\nid = 1\nsources = [1, \"10.0.0.1\"]\n"},
        {"err_float.toml", "[gate]\nsource_age_ms = nan\nstale_ms = inf\n"},
        // #21 item 11: more sources on a line than igmp_max_msf (10 by default), a source twice.
        {"err_line_sources.toml",
         "[[channel]]\nid = 1\na = { group = \"239.1.1.1\", port = 1, sources = [\"10.0.0.1\", \"10.0.0.2\", "
         "\"10.0.0.3\", \"10.0.0.4\", \"10.0.0.5\", \"10.0.0.6\", \"10.0.0.7\", \"10.0.0.8\", \"10.0.0.9\", "
         "\"10.0.0.10\", \"10.0.0.11\"] }\nb = { group = \"239.1.1.2\", port = 1, sources = [\"10.0.0.1\", "
         "\"10.0.0.1\"] }\n"},
        // #21 item 9: a channel-less config whose ITCH order store is past any limit.
        {"err_itch_orders.toml", "[itch]\nmax_orders = 1000000000\n"},
    };
    for (const Text& t : kTexts) {
        const std::string_view s(t.text);
        write_file(dir / t.name, {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()});
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: make_corpus OUT_DIR [REPO_ROOT] [CERT_DIR]\n";
        return 2;
    }
    const fs::path out = argv[1];
    const fs::path repo = argc > 2 ? fs::path(argv[2]) : fs::path(TG_REPO_ROOT);
    const fs::path cert = argc > 3 ? fs::path(argv[3]) : fs::path(TG_CERT_DIR);
    try {
        DatagramCorpus(out / "fuzz_datagram").all();
        captures(out / "fuzz_capture");
        configs(out / "fuzz_config", repo);
        std::size_t cert_files = 0;
        for (const char* name : {"cert_basic.pcap", "cert_recovery.pcap"}) {
            const fs::path p = cert / name;
            if (!fs::is_regular_file(p)) continue;
            ++cert_files;
            const std::string stem = p.stem().string();
            cert_datagrams(p, out / "fuzz_datagram" / (stem + "_first40"), 0, 40);
            cert_datagrams(p, out / "fuzz_datagram" / (stem + "_first40_arb"), 1, 40);
            const auto head = read_prefix(p, 4096);
            write_file(out / "fuzz_capture" / (stem + "_head4k.pcap"), head);
        }
        // fuzz_mdp3: the real MDP3 captures (shared/captures, beside the certification ones).
        fs::create_directories(out / "fuzz_mdp3");
        for (const char* name : {"cme-mdp3-v9.1-ab-example.pcap", "cme-mdp3-v6.1-ab.pcapng"}) {
            const fs::path p = cert / ".." / "captures" / name;
            if (fs::is_regular_file(p)) mdp3_datagrams(p, out / "fuzz_mdp3", 24, 20);
        }
        std::size_t n = 0;
        for (const auto& e : fs::recursive_directory_iterator(out)) n += e.is_regular_file();
        std::cout << "make_corpus: " << n << " seed files in " << out.string()
                  << (cert_files ? "" : " (no certification captures found)") << "\n";
    } catch (const std::exception& e) {
        std::cerr << "make_corpus: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
