// Offline replay throughput: generates (or reuses) a ns pcap of >= 10M QFB/1
// messages (the stages_bench mix, 8 messages a datagram), then times
// (a) a bare libpcap read loop (pcap_next_ex, counting bytes) and
// (b) tickgate::replay_capture with a fresh Handler; runs each, median.
//   replay_bench [--capture FILE] [--messages N] [--runs N] [--json FILE]
#include <pcap/pcap.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "common.hpp"
#include "tickgate/feed/replay.hpp"

using Clock = std::chrono::steady_clock;

namespace {

bool exists(const std::string& p) {
    struct stat st{};
    return ::stat(p.c_str(), &st) == 0 && st.st_size > 0;
}

void generate(const std::string& path, std::uint64_t messages) {
    std::printf("generating %s (%llu messages)...\n", path.c_str(), static_cast<unsigned long long>(messages));
    const std::string tmp = path + ".tmp";
    {
        tickgate::CaptureWriter w(tmp, tickgate::CaptureFormat::kPcapNano);
        const std::uint32_t src = *tickgate::parse_ipv4("10.0.0.1"), dst = *tickgate::parse_ipv4("239.1.1.1");
        bench::Market mk(bench::MixSpec{.messages = messages});
        bench::Packer p(8, [&](std::span<const std::byte> b, std::uint16_t, std::int64_t send_ns) {
            w.write_udp(send_ns + 20'000, src, 30001, dst, 31001, b);
        });
        for (auto& m : mk.warmup()) p.add(m);
        p.flush();
        for (std::uint64_t i = 0; i < messages; ++i) p.add(mk.next());
        p.flush();
        w.flush();
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("rename " + tmp);
}

struct Bare {
    std::uint64_t records = 0, bytes = 0;
};
Bare bare_read(const std::string& path) {
    char err[PCAP_ERRBUF_SIZE] = {};
    pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
    if (!p) throw std::runtime_error(err);
    Bare b;
    pcap_pkthdr* h;
    const u_char* d;
    while (pcap_next_ex(p, &h, &d) == 1) {
        ++b.records;
        b.bytes += h->caplen;
    }
    pcap_close(p);
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    std::string path = "/tmp/tickgate-bench-10M.pcap", json;
    std::uint64_t messages = 10'000'000;
    int runs = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--capture") path = argv[i + 1];
        else if (a == "--messages") messages = std::stoull(argv[i + 1]);
        else if (a == "--runs") runs = std::stoi(argv[i + 1]);
        else if (a == "--json") json = argv[i + 1];
        else {
            std::fprintf(stderr, "usage: replay_bench [--capture FILE] [--messages N] [--runs N] [--json FILE]\n");
            return 2;
        }
    }
    const auto m = bench::machine_info();
    std::printf("CPU: %s | cores: %u | kernel: %s | governor: %s\n", m.cpu.c_str(), m.cores, m.kernel.c_str(), m.governor.c_str());
    if (!exists(path)) generate(path, messages);
    else std::printf("reusing %s\n", path.c_str());

    (void)bare_read(path);  // page cache warm-up, untimed
    std::vector<double> bare_s, replay_s;
    Bare b;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = Clock::now();
        b = bare_read(path);
        bare_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::uint64_t msgs = 0;
    bench::Health hc;
    std::uint64_t malformed = 0;
    for (int i = 0; i < runs; ++i) {
        tickgate::Config cfg;  // no channels: every UDP datagram is fed
        tickgate::Handler h(cfg.capacity, cfg.gate);
        const auto t0 = Clock::now();
        (void)tickgate::replay_capture(path, cfg, h);
        replay_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        msgs = h.decoder().counters().messages.get();
        malformed = h.decoder().counters().malformed_packets.get();
        hc = bench::health_of(h.instruments());
    }
    const double bare_rate = static_cast<double>(msgs) / bench::median(bare_s);
    const double replay_rate = static_cast<double>(msgs) / bench::median(replay_s);
    std::printf("capture: %llu records, %.1f MB of frames, %llu messages; handler: %s malformed=%llu\n",
                static_cast<unsigned long long>(b.records), static_cast<double>(b.bytes) / 1e6,
                static_cast<unsigned long long>(msgs), hc.str().c_str(), static_cast<unsigned long long>(malformed));
    std::printf("%-22s %10s %14s %10s\n", "", "median s", "M messages/s", "GB/s");
    std::printf("%-22s %10.3f %14.1f %10.2f\n", "bare pcap_next_ex", bench::median(bare_s), bare_rate / 1e6,
                static_cast<double>(b.bytes) / bench::median(bare_s) / 1e9);
    std::printf("%-22s %10.3f %14.1f %10.2f\n", "replay_capture+Handler", bench::median(replay_s), replay_rate / 1e6,
                static_cast<double>(b.bytes) / bench::median(replay_s) / 1e9);
    std::printf("ratio replay/bare: %.3f; handler cost over the read: %.1f ns/message\n", replay_rate / bare_rate,
                (bench::median(replay_s) - bench::median(bare_s)) * 1e9 / static_cast<double>(msgs));
    if (!hc.clean() || malformed) std::printf("WARNING: not every message was accepted\n");

    if (!json.empty()) {
        const tickgate::json::Value doc = {{"machine", bench::machine_json(m)},
                                           {"capture", path},
                                           {"records", b.records},
                                           {"frame_bytes", b.bytes},
                                           {"messages", msgs},
                                           {"clean", hc.clean() && !malformed},
                                           {"bare_seconds", bare_s},
                                           {"replay_seconds", replay_s},
                                           {"bare_msgs_per_s", bare_rate},
                                           {"replay_msgs_per_s", replay_rate},
                                           {"ratio", replay_rate / bare_rate}};
        if (!bench::write_json(json, doc)) return 1;
    }
    return 0;
}
