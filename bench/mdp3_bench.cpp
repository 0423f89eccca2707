// MDP 3.0 against QFB/1, in one run: packet-to-book latency per datagram
// (decode -> sequencer -> book, in-process) as median and p99 over every
// packet of a real capture (default: the v6.1 one; lines A and B as one channel, as a config
// makes them: B's copies are dropped by MsgSeqNum), and decode-only time per
// entry; the same for the QFB/1 benchmark mix (stages_bench's, 8 messages a
// datagram); MDP3 again with every instrument repaired first (the capture
// carries no snapshot, so in the first row every instrument is suspect and
// buffers its entries: first_rpt_seqs below), with the count of instruments
// suspect after the last round; and MDP3 again with the live handlers'
// snapshot-feed decision (SnapshotFeedControl) per event and packet.
// "parsed": the packets not dropped as another line's copy. Every MDP3 row
// measures its decode-only column afresh over the same datagrams with the
// same decoder: one figure, measured three times.
// The MDP3 rows' sink has the live inline handler's shape (inline_feed_handler.hpp
// Apply): forced inline, the sequencer's apply_inlined at each decoder site;
// Apply's probe, recovery and delivery calls are left out (the third row adds
// the snapshot-feed control, the MDP3 recovery).
// Per-packet times are TSC deltas calibrated against
// steady_clock, minus the measured cost of an empty TSC pair.
// Steady state, as in a long-running handler: each round builds a fresh
// handler (and decoder) before its clock starts, on heap pages a first,
// discarded round has made resident (malloc keeps freed memory instead of
// unmapping it), so a figure is the code's, not the kernel's first-touch
// page faults (~360 a round, ~3 us each on this VM: they were the p99).
//
// Per message, as stages_bench's ITCH flows count it: each parsed packet's
// time over its messages (MDP3: book and sequenced entries; QFB/1: messages),
// p50 / p99 over the packets, and the mean (all that time over all of them).
//
// usage: mdp3_bench [CAPTURE] [ROUNDS] [--json FILE]
//        (default: tests/data/captures/cme-mdp3-v6.1-ab.pcapng, 30; --json: the rows, for bench/report.py)
#include <malloc.h>
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/handler.hpp"
#include "tickgate/feed/mdp3/protocol.hpp"
#include "tickgate/feed/mdp3/snapshot_feed.hpp"

using namespace tickgate;

namespace {

struct Datagram {
    std::vector<std::byte> bytes;
    std::uint8_t line;
};

std::vector<Datagram> load(const std::string& path) {
    CaptureReader reader(path);
    FrameCounters fc;
    std::vector<Datagram> out;
    std::vector<std::uint32_t> dests;
    while (auto rec = reader.next()) {
        auto d = extract_udp(reader.link_type(), rec->frame, fc);
        if (!d) continue;
        std::size_t line = 0;
        while (line < dests.size() && dests[line] != d->dst_ip) ++line;
        if (line == dests.size()) dests.push_back(d->dst_ip);
        out.push_back({{d->payload.begin(), d->payload.end()}, static_cast<std::uint8_t>(line & 1)});
    }
    return out;
}

double ns_per_tick() {
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t c0 = __rdtsc();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(200)) {
    }
    const std::uint64_t c1 = __rdtsc();
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    return ns / static_cast<double>(c1 - c0);
}

// 100,000 back-to-back TSC read pairs (an lfence between), in ticks, sorted:
// their median is the cost subtracted from every packet's time.
std::vector<std::uint64_t> empty_pairs_ticks() {
    std::vector<std::uint64_t> d(100000);
    for (auto& x : d) {
        const std::uint64_t a = __rdtsc();
        _mm_lfence();
        const std::uint64_t b = __rdtsc();
        x = b - a;
    }
    std::sort(d.begin(), d.end());
    return d;
}

// The step the TSC moves by, in ticks, from those pairs: they cluster at the
// pair's cost and, where the TSC advances in coarse steps, at whole steps
// above it (24-25 ticks of 2.445 GHz on the AMD EPYC KVM guest of
// 2026-12-07; why, this bench cannot tell). The distance from the
// smallest reading to the next one more than a tick away; about 2 on a
// TSC that counts every tick. A packet's time resolves no finer.
std::uint64_t tsc_step_ticks(const std::vector<std::uint64_t>& sorted_pairs) {
    const auto next = std::upper_bound(sorted_pairs.begin(), sorted_pairs.end(), sorted_pairs.front() + 1);
    return next == sorted_pairs.end() ? 1 : *next - sorted_pairs.front();
}

double pct(std::vector<double>& v, double p) {
    const std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

// The MDP3 events counted as messages: book entries and sequenced entries.
bool is_entry(const Event& ev) noexcept { return ev.kind == mdp3::kLevelEntry || ev.kind == mdp3::kSequencedEntry; }

// What feeding one packet did: parsed (not a copy dropped by MsgSeqNum),
// and how many messages (MDP3: book and sequenced entries) it carried.
struct Fed {
    bool parsed;
    std::uint32_t messages;
};

// Decode-only: every datagram (a channel per line: nothing dropped), the
// entries counted. Out of line, so the decoder inlines into this loop alone,
// as into a receive loop, not into the timing harness around it (whose
// register allocation moved the MDP3 figure by 25 %).
[[gnu::noinline]] std::uint64_t decode_all(mdp3::PacketDecoder& dec, const std::vector<Datagram>& mdp, std::int64_t t) {
    std::uint64_t entries = 0;
    for (const Datagram& d : mdp) {
        const mdp3::Key key = mdp3::read_key(d.bytes, static_cast<std::uint16_t>(1 + d.line));
        dec.decode(d.bytes, key, SessionMark::kCurrent, t, d.line, [&](const Event& ev) { entries += is_entry(ev); });
    }
    return entries;
}

// The same for the QFB/1 mix: every message counted.
[[gnu::noinline]] std::uint64_t decode_all(qfb1::PacketDecoder& dec, const bench::Stream& qfb, std::int64_t t) {
    std::uint64_t msgs = 0;
    for (std::size_t i = 0; i < qfb.size(); ++i) {
        const auto d = qfb.dgram(i);
        dec.decode(d, qfb1::read_key(d), SessionMark::kCurrent, t, 0, [&](const Event&) { ++msgs; });
    }
    return msgs;
}

struct Figures {
    double p50, p99;            // every packet
    double taken_p50, taken_p99;  // packets parsed (not a copy dropped by MsgSeqNum)
    double msg_p50, msg_p99, msg_mean;  // parsed packets, per message
    double decode_ns_per_entry;
    std::uint64_t packets, taken, entries;
    std::uint32_t suspect_at_end;  // instruments suspect after the last round
};

// The snapshots the capture does not carry: it joins mid-stream, so every
// instrument goes suspect at its first entry and stays so, buffering every
// entry after it for a snapshot that never comes (the worst case: the first
// rows). A handler on the snapshot feed repairs each within seconds; these
// empty ones, at RptSeq one before each instrument's first entry, repair
// them before the clock starts, so their entries run the clean path.
// First RptSeq by instrument id; 0 for none (RptSeq counts from 1). The ids
// are the handler's own only because both decoders are built the same way
// and see the same datagrams: ids go out in order of first sight.
std::vector<std::uint32_t> first_rpt_seqs(const std::vector<Datagram>& mdp) {
    SessionDecoder<mdp3::Protocol> dec;
    std::vector<std::uint32_t> first;
    for (const Datagram& d : mdp)
        dec.decode(
            d.bytes, 0, d.line,
            [&](const Event& ev) {
                if (!is_entry(ev) || ev.instrument_id == mdp3::PacketDecoder::kNoSlot) return;
                if (ev.instrument_id >= first.size()) first.resize(ev.instrument_id + 1, 0);
                if (first[ev.instrument_id] == 0) first[ev.instrument_id] = static_cast<std::uint32_t>(ev.u.venue.seq);
            },
            1);
    return first;
}
template <class Handler>
void apply_empty_snapshots(Handler& h, const std::vector<std::uint32_t>& first, std::int64_t t) {
    for (std::uint32_t id = 0; id < first.size(); ++id) {
        if (first[id] == 0) continue;
        Event ev{};
        ev.kind = EventKind::kSnapshotBegin;
        ev.instrument_id = id;
        ev.channel_id = 1;
        ev.recv_ns = t;
        ev.u.snapshot.seq = first[id] - 1;
        ev.u.snapshot.price_exponent = -7;
        (void)h.apply(ev);
    }
}
template <class Handler>
std::uint32_t suspect_count(const Handler& h) {
    std::uint32_t n = 0;
    for (const std::uint32_t id : h.instruments().seen_ids()) n += h.instruments().state(id).suspect;
    return n;
}

template <class Handler, class Feed, class Decode, class Prepare>
Figures measure(int rounds, std::size_t packets, Feed&& feed, Decode&& decode_round, double tick_ns,
                std::uint64_t overhead, const Capacity& cap, Prepare&& prepare) {
    std::vector<double> lat, taken, per_msg;
    std::uint32_t suspect = 0;
    double msg_ns = 0, msgs = 0;  // parsed packets carrying messages: their time, their messages
    lat.reserve(static_cast<std::size_t>(rounds + 1) * packets);
    taken.reserve(static_cast<std::size_t>(rounds + 1) * packets);
    per_msg.reserve(static_cast<std::size_t>(rounds + 1) * packets);
    for (int r = -1; r < rounds; ++r) {  // round -1: makes the handler's pages resident, discarded
        if (r == 0) lat.clear(), taken.clear(), per_msg.clear(), msg_ns = 0, msgs = 0;
        auto h = std::make_unique<Handler>(cap, GateConfig{});
        prepare(*h);
        for (std::size_t i = 0; i < packets; ++i) {
            const std::uint64_t a = __rdtsc();
            _mm_lfence();
            const Fed fed = feed(*h, i);
            _mm_lfence();
            const std::uint64_t b = __rdtsc();
            lat.push_back(static_cast<double>(b - a > overhead ? b - a - overhead : 0) * tick_ns);
            if (!fed.parsed) continue;
            taken.push_back(lat.back());
            if (fed.messages == 0) continue;
            per_msg.push_back(lat.back() / fed.messages);
            msg_ns += lat.back();
            msgs += fed.messages;
        }
        if (r == rounds - 1) suspect = suspect_count(*h);
    }
    const std::uint64_t taken_packets = taken.size() / static_cast<std::size_t>(rounds);
    std::vector<double> per_entry;
    std::uint64_t entries = 0;
    for (int r = -1; r < rounds; ++r) {
        // The round builds its decoder, then starts the clock: a decoder is
        // built once at start-up, and its tables (a 14 MB definition store,
        // calloc'd afresh each round) are not what decode costs.
        std::chrono::steady_clock::time_point t0;
        entries = decode_round([&] { t0 = std::chrono::steady_clock::now(); });
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        if (r >= 0) per_entry.push_back(ns / static_cast<double>(entries));
    }
    return {pct(lat, 0.5), pct(lat, 0.99), pct(taken, 0.5), pct(taken, 0.99), pct(per_msg, 0.5), pct(per_msg, 0.99),
            msg_ns / msgs, bench::median(per_entry), packets, taken_packets, entries, suspect};
}

}  // namespace

int main(int argc, char** argv) {
    std::string path = "tests/data/captures/cme-mdp3-v6.1-ab.pcapng", json;
    int rounds = 30, positional = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--json" && i + 1 < argc) {
            json = argv[++i];
        } else if (a.rfind("--", 0) == 0 || positional == 2) {
            std::fprintf(stderr, "usage: mdp3_bench [CAPTURE] [ROUNDS] [--json FILE]\n");
            return 2;
        } else if (positional++ == 0) {
            path = a;
        } else {
            rounds = std::max(1, std::atoi(a.c_str()));
        }
    }
    // Freed handlers' memory stays in the heap (no unmap, no trim), so the
    // next round's calloc clears pages that are resident already.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    const std::vector<Datagram> mdp = load(path);
    const bench::Stream& qfb = *new bench::Stream(bench::build_stream(bench::MixSpec{}));
    const double tick_ns = ns_per_tick();
    const std::vector<std::uint64_t> pairs = empty_pairs_ticks();
    const std::uint64_t overhead = pairs[pairs.size() / 2];
    const std::uint64_t step = tsc_step_ticks(pairs);
    Capacity cap;
    cap.book_depth = 10;
    std::int64_t t = 1'700'000'000'000'000'000;

    const auto mdp_decode_only = [&](const auto& start) {
        mdp3::PacketDecoder dec;
        start();
        return decode_all(dec, mdp, t);
    };
    const auto mdp_feed = [&](BasicHandler<mdp3::Protocol>& h, std::size_t i) {
        std::uint32_t entries = 0;
        const bool parsed = h.decoder()
                                .decode(mdp[i].bytes, ++t, mdp[i].line,
                                        [&](const Event& ev) __attribute__((always_inline)) {
                                            entries += is_entry(ev);
                                            (void)h.sequencer().apply_inlined(ev);
                                        },
                                        1)
                                .messages != 0;
        return Fed{parsed, entries};
    };
    const auto unprepared = [](auto&) {};
    const Figures m = measure<BasicHandler<mdp3::Protocol>>(rounds, mdp.size(), mdp_feed, mdp_decode_only, tick_ns,
                                                            overhead, cap, unprepared);
    const std::vector<std::uint32_t> first = first_rpt_seqs(mdp);
    const Figures clean = measure<BasicHandler<mdp3::Protocol>>(
        rounds, mdp.size(), mdp_feed, mdp_decode_only, tick_ns, overhead, cap,
        [&](BasicHandler<mdp3::Protocol>& h) { apply_empty_snapshots(h, first, t); });
    // The same with the live handlers' snapshot-feed decision (mdp3/snapshot_feed.hpp)
    // per event and per packet: the capture joins mid-stream, so every
    // instrument stays suspect and the feed wanted — the rescan (every 1 ms)
    // runs all along, its worst case.
    Config with_snapshot_lines;
    ChannelConfig channel;
    channel.id = 1;
    channel.protocol = "mdp3";
    channel.snapshot_a = LineConfig{"239.255.20.3", 14311};
    channel.snapshot_b = LineConfig{"239.255.20.4", 15311};
    with_snapshot_lines.channels.push_back(channel);
    mdp3::SnapshotFeedControl control(with_snapshot_lines, {});
    const Figures c = measure<BasicHandler<mdp3::Protocol>>(
        rounds, mdp.size(),
        [&](BasicHandler<mdp3::Protocol>& h, std::size_t i) {
            std::uint32_t entries = 0;
            const bool parsed = h.decoder()
                                    .decode(mdp[i].bytes, ++t, mdp[i].line,
                                            [&](const Event& ev) __attribute__((always_inline)) {
                                                entries += is_entry(ev);
                                                control.before(h.instruments(), ev);
                                                control.on_update(h.sequencer().apply_inlined(ev), ev);
                                            },
                                            1)
                                    .messages != 0;
            control.refresh(h.instruments());
            return Fed{parsed, entries};
        },
        mdp_decode_only, tick_ns, overhead, cap, unprepared);
    const Figures q = measure<Handler>(
        rounds, qfb.size(), [&](Handler& h, std::size_t i) {
            const std::uint32_t n = h.on_datagram(qfb.dgram(i), ++t, 0).messages;
            return Fed{n != 0, n};
        },
        [&](const auto& start) {
            qfb1::PacketDecoder dec;
            start();
            return decode_all(dec, qfb, t);
        },
        tick_ns, overhead, Capacity{}, unprepared);

    const bench::MachineInfo mi = bench::machine_info();
    std::printf("machine: %s, %u cores, %s, governor %s; %d rounds\n", mi.cpu.c_str(), mi.cores, mi.kernel.c_str(),
                mi.governor.c_str(), rounds);
    std::printf("capture: %s\n", path.c_str());
    std::printf("TSC: %.3f GHz, a read pair %llu ticks, steps of %llu ticks = %.1f ns (a packet's time resolves no finer)\n",
                1 / tick_ns, static_cast<unsigned long long>(overhead), static_cast<unsigned long long>(step),
                static_cast<double>(step) * tick_ns);
    std::printf("packet-to-book ns per datagram (decode -> sequencer -> book), decode-only ns per entry/message\n");
    std::printf("%-40s %8s %8s %8s %8s %8s %8s %10s\n", "stream", "packets", "all p50", "all p99", "parsed", "p50",
                "p99", "decode/ent");
    const auto row = [](const char* name, const Figures& f) {
        std::printf("%-40s %8llu %8.1f %8.1f %8llu %8.1f %8.1f %10.2f\n", name, static_cast<unsigned long long>(f.packets),
                    f.p50, f.p99, static_cast<unsigned long long>(f.taken), f.taken_p50, f.taken_p99,
                    f.decode_ns_per_entry);
    };
    row("mdp3 capture (A+B as one channel)", m);
    row("  instruments repaired first (clean)", clean);
    row("  + snapshot-feed decision, feed wanted", c);
    row("qfb1 benchmark mix (8 msgs/datagram)", q);
    std::printf("parsed packets, ns per message (entry): p50 / p99 / mean\n");
    std::printf("  mdp3 %.1f / %.1f / %.1f; repaired first %.1f / %.1f / %.1f; with the snapshot-feed decision %.1f / %.1f / "
                "%.1f; qfb1 %.1f / %.1f / %.1f\n",
                m.msg_p50, m.msg_p99, m.msg_mean, clean.msg_p50, clean.msg_p99, clean.msg_mean, c.msg_p50, c.msg_p99,
                c.msg_mean, q.msg_p50, q.msg_p99, q.msg_mean);
    std::printf("instruments suspect after the last round: mdp3 %u, repaired first %u (of %zu)\n", m.suspect_at_end,
                clean.suspect_at_end, first.size());
    if (!json.empty()) {
        const auto row_json = [](const char* name, const Figures& x) -> tickgate::json::Value {
            return {{"stream", name},          {"packets", x.packets},           {"parsed", x.taken},
                    {"p50_ns", x.p50},         {"p99_ns", x.p99},                {"parsed_p50_ns", x.taken_p50},
                    {"parsed_p99_ns", x.taken_p99}, {"p50_ns_per_msg", x.msg_p50}, {"p99_ns_per_msg", x.msg_p99},
                    {"mean_ns_per_msg", x.msg_mean}, {"decode_ns_per_entry", x.decode_ns_per_entry},
                    {"suspect_at_end", x.suspect_at_end}};
        };
        const tickgate::json::Value doc = {
            {"machine", bench::machine_json(mi)},
            {"capture", path},
            {"rounds", rounds},
            {"tsc_step_ns", static_cast<double>(step) * tick_ns},
            {"streams", tickgate::json::Value::array({row_json("mdp3", m), row_json("mdp3_repaired_first", clean),
                                                      row_json("mdp3_snapshot_decision", c),
                                                      row_json("qfb1_mix", q)})}};
        if (!bench::write_json(json, doc)) return 1;
    }
    return 0;
}
