// fuzz_capture: the input is a capture file (pcap µs/ns, pcapng, or garbage).
//  1. extract_udp() on the input taken as one link-layer frame, for every
//     LinkType (and one unknown value): bounds, exactly one frame counter moves.
//  2. The input written to /tmp/fuzz_capture_<pid>.bin (rewritten each run)
//     and replayed with replay_capture() twice: every datagram, no
//     arbitration, no configured channels; then with one configured channel
//     (line filtering) and A/B arbitration. CaptureError is an expected
//     outcome; anything else escaping is a finding. Frame counters must add
//     up, the decoder must see every datagram that was not filtered out or
//     dropped as a duplicate copy, books stay sorted, and the JSON/table
//     summaries are produced from whatever state the replay left.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "fuzz_common.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/replay.hpp"

namespace {

using namespace tickgate;

std::string g_path;
Config g_plain;   // no channels: every UDP datagram, any channel
Config g_lines;   // one channel: lines A/B of configs/default.toml, arbitration

void remove_temp() {
    if (!g_path.empty()) std::remove(g_path.c_str());
}

std::uint64_t frame_total(const FrameCounters& c) {
    return c.udp_datagrams + c.non_ip + c.non_udp + c.fragments + c.truncated;
}

void check_extract(std::span<const std::byte> frame) {
    static constexpr LinkType kLinks[] = {LinkType::kNull,     LinkType::kEthernet, LinkType::kRaw,
                                          LinkType::kLinuxSll, LinkType::kIpv4,     LinkType::kLinuxSll2,
                                          static_cast<LinkType>(7)};
    for (const LinkType link : kLinks) {
        FrameCounters c;
        const auto d = extract_udp(link, frame, c);
        FUZZ_CHECK(frame_total(c) == 1);  // one reason per frame
        FUZZ_CHECK(c.records == 0);
        if (d) {
            FUZZ_CHECK(c.udp_datagrams == 1);
            const std::byte* b = d->payload.data();
            if (!d->payload.empty()) {
                FUZZ_CHECK(b >= frame.data());
                FUZZ_CHECK(b + d->payload.size() <= frame.data() + frame.size());
            }
            FUZZ_CHECK(d->payload.size() + 28 <= frame.size());  // at least IPv4 + UDP headers before it
        } else {
            FUZZ_CHECK(c.udp_datagrams == 0);
        }
    }
}

void replay(const Config& cfg, bool arbitrate) {
    Handler h(fuzz::small_capacity(), fuzz::gate_config());
    apply_config(h, cfg);
    ReplayOptions opt;
    opt.arbitrate = arbitrate;
    std::int64_t now = 0;
    try {
        const ReplayResult r = replay_capture(g_path, cfg, h, opt);
        now = r.last_ts_ns;
        FUZZ_CHECK(frame_total(r.frames) == r.frames.records);
        FUZZ_CHECK(r.filtered_out <= r.frames.udp_datagrams);
        FUZZ_CHECK(r.any_records == (r.frames.records > 0));
        if (!arbitrate) FUZZ_CHECK(r.duplicate_packets == 0);
        // Every datagram kept reaches the decoder, except duplicate copies and
        // those whose header names another channel than their line's (rule 7).
        const std::uint64_t foreign = total_packets(r.foreign_channel_packets);
        if (cfg.channels.empty()) FUZZ_CHECK(foreign == 0);  // no lines, no binding: the header decides
        FUZZ_CHECK(h.decoder().counters().packets.get() + r.duplicate_packets + foreign ==
                   r.frames.udp_datagrams - r.filtered_out);
    } catch (const CaptureError& e) {
        FUZZ_CHECK(e.what()[0] != '\0');
    }
    fuzz::check_books(h);
    fuzz::check_seen(h);
    for (const std::uint32_t id : h.instruments().seen_ids()) fuzz::check_gate(h, id, now);
    SummaryContext ctx{.now_ns = now, .capture = g_path};
    FUZZ_CHECK(!summary_json(summary_source(h), ctx).empty());
    FUZZ_CHECK(!summary_table(summary_source(h), ctx).empty());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    g_path = "/tmp/fuzz_capture_" + std::to_string(::getpid()) + ".bin";
    std::atexit(remove_temp);
    ChannelConfig ch;
    ch.id = 1;
    ch.a = {"239.255.10.1", 31001, "127.0.0.1"};
    ch.b = {"239.255.10.2", 31002, "127.0.0.1"};
    g_lines.channels.push_back(ch);
    g_lines.receiver.arbitration_window = 8;  // small: holds overflow into the "far ahead" path
    g_lines.receiver.arbitration_hold_us = 250;
    InstrumentConfig ins;
    ins.id = 1;
    ins.symbol = "EURUSD";
    g_lines.instruments.push_back(ins);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // extract_udp on an exact-size heap copy (ASan catches a read past it).
    {
        const auto copy = std::make_unique<std::byte[]>(size ? size : 1);
        if (size) std::memcpy(copy.get(), data, size);
        check_extract({copy.get(), size});
    }

    std::FILE* f = std::fopen(g_path.c_str(), "wb");
    FUZZ_CHECK(f != nullptr);
    FUZZ_CHECK(std::fwrite(data, 1, size, f) == size);
    FUZZ_CHECK(std::fclose(f) == 0);

    replay(g_plain, false);
    replay(g_lines, true);
    return 0;
}
