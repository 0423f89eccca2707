// Offline replay throughput of one capture, three ways over the same file:
// (a) a bare libpcap read loop (pcap_next_ex, counting bytes), (b)
// tickgate's CaptureReader alone, (c) what `tickgate replay` runs
// (BasicReplay<P>::for_capture + run, construction included; no summary);
// each `--runs` times, medians. Warm: the file read once untimed first.
// Cold (--cold): the file's pages dropped from the page cache
// (posix_fadvise DONTNEED) before every run, the share still resident said.
// Without --capture, QFB/1: generates (or reuses) a ns pcap of >= 10 M
// messages (the stages_bench mix, 8 messages a datagram). Other protocols:
// a capture of their simulator (`tickgate sim --protocol P --pcap FILE`).
//   replay_bench [--protocol P] [--capture FILE] [--messages N] [--runs N] [--cold] [--json FILE]
#include <fcntl.h>
#include <pcap/pcap.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "common.hpp"
#include "tickgate/feed/protocols.hpp"
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

Bare reader_read(const std::string& path) {
    tickgate::CaptureReader r(path);
    Bare b;
    while (const auto rec = r.next()) {
        ++b.records;
        b.bytes += rec->frame.size();
    }
    return b;
}

struct Replayed {
    std::uint64_t messages = 0, malformed = 0;
    std::string health;  // QFB/1's per-instrument figures
    bool clean = true;
};
Replayed replay(const std::string& protocol, const std::string& path) {
    return tickgate::with_protocol(protocol, [&]<tickgate::VenueProtocol P>() {
        const tickgate::Config cfg;  // no channels: every UDP datagram is fed
        const auto r = tickgate::BasicReplay<P>::for_capture(cfg, path);
        (void)r->run(path);
        Replayed out{r->messages(), r->front().decoder_counters().malformed_packets.get(), {}, true};
        if constexpr (std::is_same_v<P, tickgate::qfb1::Protocol>) {
            const bench::Health hc = bench::health_of(r->handler().instruments());
            out.health = hc.str();
            out.clean = hc.clean();
        }
        out.clean = out.clean && out.malformed == 0;
        return out;
    });
}

// The file's pages out of the page cache (clean pages: no root needed);
// returns the share of them still resident after (mincore).
double drop_from_page_cache(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("open " + path);
    struct stat st{};
    (void)::fstat(fd, &st);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    double resident = 0;
    const std::size_t size = static_cast<std::size_t>(st.st_size);
    if (void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0); m != MAP_FAILED) {
        const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)), pages = (size + page - 1) / page;
        std::vector<unsigned char> in(pages);
        if (::mincore(m, size, in.data()) == 0) {
            std::size_t n = 0;
            for (const unsigned char c : in) n += c & 1u;
            resident = static_cast<double>(n) / static_cast<double>(pages);
        }
        ::munmap(m, size);
    }
    ::close(fd);
    return resident;
}

struct Timings {
    std::vector<double> bare, reader, replay;
    double max_resident = 0;  // cold: the largest share found resident after a drop
};

}  // namespace

int main(int argc, char** argv) {
    std::string path, json, protocol = "qfb1";
    std::uint64_t messages = 10'000'000;
    int runs = 3;
    bool cold = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--cold") cold = true;
        else if (a == "--capture" && has_value) path = argv[++i];
        else if (a == "--protocol" && has_value) protocol = argv[++i];
        else if (a == "--messages" && has_value) messages = std::stoull(argv[++i]);
        else if (a == "--runs" && has_value) runs = std::max(1, std::stoi(argv[++i]));
        else if (a == "--json" && has_value) json = argv[++i];
        else {
            std::fprintf(stderr, "usage: replay_bench [--protocol P] [--capture FILE] [--messages N] [--runs N] [--cold] [--json FILE]\n");
            return 2;
        }
    }
    const auto m = bench::machine_info();
    std::printf("CPU: %s | cores: %u | kernel: %s | governor: %s\n", m.cpu.c_str(), m.cores, m.kernel.c_str(), m.governor.c_str());
    if (path.empty()) path = protocol == "qfb1" ? "/tmp/tickgate-bench-10M.pcap" : "";
    if (!exists(path)) {
        if (protocol != "qfb1") {
            std::fprintf(stderr, "replay_bench: --protocol %s needs --capture FILE, made by `tickgate sim --protocol %s --pcap FILE --messages N`\n",
                         protocol.c_str(), protocol.c_str());
            return 2;
        }
        generate(path, messages);
    } else {
        std::printf("reusing %s\n", path.c_str());
    }

    // Alternated within a round, so a slow spell of the host hits all three.
    Bare b;
    Replayed rp;
    const auto measure = [&](bool drop) {
        Timings t;
        if (!drop) (void)bare_read(path);  // page cache warm-up, untimed
        const auto timed = [&](std::vector<double>& into, auto&& f) {
            if (drop) t.max_resident = std::max(t.max_resident, drop_from_page_cache(path));
            const auto t0 = Clock::now();
            f();
            into.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        };
        for (int i = 0; i < runs; ++i) {
            timed(t.bare, [&] { b = bare_read(path); });
            timed(t.reader, [&] { (void)reader_read(path); });
            timed(t.replay, [&] { rp = replay(protocol, path); });
        }
        return t;
    };
    const Timings warm = measure(false);
    std::optional<Timings> cold_t;
    if (cold) cold_t = measure(true);

    std::printf("capture: %s (%s), %llu records, %.1f MB of frames, %llu messages; malformed=%llu %s\n", path.c_str(),
                protocol.c_str(), static_cast<unsigned long long>(b.records), static_cast<double>(b.bytes) / 1e6,
                static_cast<unsigned long long>(rp.messages), static_cast<unsigned long long>(rp.malformed),
                rp.health.c_str());
    const auto rate = [&](const std::vector<double>& s) { return static_cast<double>(rp.messages) / bench::median(s); };
    const auto table = [&](const char* title, const Timings& t) {
        std::printf("%s, median of %d:\n%-26s %10s %14s %10s %12s\n", title, runs, "", "s", "M messages/s", "GB/s",
                    "x bare time");
        const auto row = [&](const char* name, const std::vector<double>& s) {
            std::printf("%-26s %10.3f %14.1f %10.2f %12.3f\n", name, bench::median(s), rate(s) / 1e6,
                        static_cast<double>(b.bytes) / bench::median(s) / 1e9, bench::median(s) / bench::median(t.bare));
        };
        row("bare pcap_next_ex", t.bare);
        row("CaptureReader alone", t.reader);
        row("tickgate replay", t.replay);
    };
    table("page cache warm", warm);
    if (cold_t) {
        table("page cache cold (dropped before every run)", *cold_t);
        std::printf("resident after a drop: at most %.1f %% of the file\n", 100 * cold_t->max_resident);
    }
    std::printf("ratio replay/bare (rates, warm): %.3f; handler cost over the bare read: %.1f ns/message\n",
                rate(warm.replay) / rate(warm.bare),
                (bench::median(warm.replay) - bench::median(warm.bare)) * 1e9 / static_cast<double>(rp.messages));
    if (!rp.clean) std::printf("WARNING: not every message was accepted\n");

    if (!json.empty()) {
        tickgate::json::Value doc = {{"machine", bench::machine_json(m)},
                                     {"capture", path},
                                     {"protocol", protocol},
                                     {"records", b.records},
                                     {"frame_bytes", b.bytes},
                                     {"messages", rp.messages},
                                     {"clean", rp.clean},
                                     {"bare_seconds", warm.bare},
                                     {"reader_seconds", warm.reader},
                                     {"replay_seconds", warm.replay},
                                     {"bare_msgs_per_s", rate(warm.bare)},
                                     {"replay_msgs_per_s", rate(warm.replay)},
                                     {"ratio", rate(warm.replay) / rate(warm.bare)}};
        if (cold_t)
            doc["cold"] = {{"bare_seconds", cold_t->bare},
                           {"reader_seconds", cold_t->reader},
                           {"replay_seconds", cold_t->replay},
                           {"max_resident_after_drop", cold_t->max_resident},
                           {"ratio", bench::median(cold_t->bare) / bench::median(cold_t->replay)}};
        if (!bench::write_json(json, doc)) return 1;
    }
    return 0;
}
