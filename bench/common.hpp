// Shared helpers of the benchmarks: a deterministic market model that emits
// a realistic QFB/1 message mix (books that stay near a target depth, updates
// near the top), packing into datagrams, health checks and machine info.
#pragma once

#include <pthread.h>
#include <time.h>
#include <immintrin.h>
#include <sys/resource.h>
#include <unistd.h>
#include <sched.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/handler.hpp"
#include "../feed/json_writer.hpp"

namespace bench {

using tickgate::PacketBuilder;
using SnapLevel = PacketBuilder::SnapLevel;

// ------------------------------------------------------------------ random
struct Rng {
    std::uint64_t s;
    explicit Rng(std::uint64_t seed) : s(seed) {}
    std::uint64_t next() {  // splitmix64
        std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(next() % n); }
    // 0-based position skewed to the top: exponential with mean `mean`, clamped to n-1.
    std::uint32_t near_top(std::uint32_t n, double mean) {
        const double x = -std::log(1.0 - uniform()) * mean;
        return std::min<std::uint32_t>(n - 1, static_cast<std::uint32_t>(x));
    }
};

// ------------------------------------------------------------------ messages
struct Msg {
    char type = 'H';
    std::uint32_t id = 0;
    std::uint64_t seq = 0;  // H: next_seq
    std::int64_t src_ns = 0;
    std::int64_t px = 0, px2 = 0;  // D: price; Q: bid, ask
    std::uint32_t qty = 0, qty2 = 0;
    std::uint8_t side = 0, action = 0;
    std::vector<SnapLevel> bids, asks;  // S
    [[nodiscard]] std::size_t wire_size() const {
        switch (type) {
            case 'Q': return 48;
            case 'D': return 40;
            case 'S': return 32 + 16 * (bids.size() + asks.size());
            default: return 24;
        }
    }
};

struct MixSpec {
    std::uint32_t instruments = 100;         // ids 1..N
    double d = 0.60, q = 0.25, h = 0.10, s = 0.05;  // message mix
    std::uint32_t depth = 10;                // target levels per side of delta books
    std::uint32_t per_dgram = 8;             // messages per datagram (fewer if 1400 bytes are reached)
    std::uint64_t messages = 400'000;        // timed messages (after the warm-up)
    std::uint64_t seed = 42;
};

// Instruments 1..nq publish Q (+H); the others D (+S +H), books kept in
// [depth-1, depth] levels per side on a tick grid around a fixed mid.
class Market {
public:
    static constexpr std::int64_t kTick = 1000;  // 1e-5 at exponent -8

    explicit Market(const MixSpec& spec) : spec_(spec), rng_(spec.seed) {
        const double dq = spec.d + spec.q;
        const std::uint32_t nq =
            spec.d == 0 ? spec.instruments
            : spec.q == 0 ? 0
                          : std::max(1u, static_cast<std::uint32_t>(std::lround(spec.instruments * spec.q / dq)));
        for (std::uint32_t i = 0; i < spec.instruments; ++i) {
            Inst in;
            in.id = i + 1;
            in.delta = i >= nq;
            in.mid = 110'000'000 + std::int64_t{i} * 1'000'000;
            if (in.delta) {
                for (auto& side : in.lv) {
                    // `depth` distinct grid steps out of 1..2*depth, step 1 always present.
                    std::vector<std::uint32_t> ks;
                    for (std::uint32_t k = 2; k <= 2 * spec.depth; ++k) ks.push_back(k);
                    for (std::size_t j = ks.size(); j > 1; --j) std::swap(ks[j - 1], ks[rng_.below(static_cast<std::uint32_t>(j))]);
                    ks.resize(spec.depth - 1);
                    ks.push_back(1);
                    std::sort(ks.begin(), ks.end());
                    for (auto k : ks) side.push_back({k, qty()});
                }
                delta_ids_.push_back(i);
            } else {
                quote_ids_.push_back(i);
            }
            insts_.push_back(std::move(in));
        }
    }

    [[nodiscard]] const MixSpec& spec() const noexcept { return spec_; }
    [[nodiscard]] std::size_t delta_count() const noexcept { return delta_ids_.size(); }
    [[nodiscard]] std::uint64_t warm_sequenced() const noexcept { return quote_ids_.size(); }

    // Start of a session: a snapshot (seq 0) per delta instrument, a quote per quote instrument.
    std::vector<Msg> warmup() {
        std::vector<Msg> out;
        for (auto& in : insts_) out.push_back(in.delta ? snapshot(in) : quote(in));
        return out;
    }

    // Next message of the mix, every sequenced one in sequence.
    Msg next() {
        double wd = delta_ids_.empty() ? 0 : spec_.d, wq = quote_ids_.empty() ? 0 : spec_.q;
        double ws = delta_ids_.empty() ? 0 : spec_.s, wh = spec_.h;
        const double u = rng_.uniform() * (wd + wq + ws + wh);
        if (u < wd) return delta(insts_[delta_ids_[rng_.below(static_cast<std::uint32_t>(delta_ids_.size()))]]);
        if (u < wd + wq) return quote(insts_[quote_ids_[rng_.below(static_cast<std::uint32_t>(quote_ids_.size()))]]);
        if (u < wd + wq + ws) return snapshot(insts_[delta_ids_[rng_.below(static_cast<std::uint32_t>(delta_ids_.size()))]]);
        Inst& in = insts_[rng_.below(static_cast<std::uint32_t>(insts_.size()))];
        Msg m;
        m.type = 'H';
        m.id = in.id;
        m.seq = in.seq + 1;
        m.src_ns = now();
        return m;
    }

    // Snapshot of instrument `index` (0-based) limited to n levels a side (0: all).
    Msg snapshot_of(std::size_t index, std::size_t n) {
        Msg m = snapshot(insts_[index]);
        if (n && m.bids.size() > n) m.bids.resize(n);
        if (n && m.asks.size() > n) m.asks.resize(n);
        return m;
    }
    // Model book of instrument `index`, side 0 bid / 1 ask, best first.
    [[nodiscard]] std::vector<SnapLevel> book(std::size_t index, int side) const {
        std::vector<SnapLevel> v;
        for (auto& l : insts_[index].lv[side]) v.push_back({price(insts_[index], side, l.k), l.qty});
        return v;
    }
    [[nodiscard]] std::uint32_t id_of(std::size_t index) const { return insts_[index].id; }
    [[nodiscard]] bool is_delta(std::size_t index) const { return insts_[index].delta; }

private:
    struct Lv {
        std::uint32_t k;  // grid steps away from mid (1 = best possible)
        std::uint32_t qty;
    };
    struct Inst {
        std::uint32_t id = 0;
        bool delta = false;
        std::uint64_t seq = 0;
        std::int64_t mid = 0;
        std::vector<Lv> lv[2];
    };

    std::uint32_t qty() { return 100 * (1 + rng_.below(1000)); }
    std::int64_t now() { return t_ += 997; }
    static std::int64_t price(const Inst& in, int side, std::uint32_t k) {
        return side == 0 ? in.mid - std::int64_t{k} * kTick : in.mid + std::int64_t{k} * kTick;
    }

    Msg quote(Inst& in) {
        if (in.seq > 0) in.mid += (static_cast<std::int64_t>(rng_.below(3)) - 1) * kTick;
        Msg m;
        m.type = 'Q';
        m.id = in.id;
        m.seq = ++in.seq;
        m.src_ns = now();
        m.px = in.mid - kTick;
        m.px2 = in.mid + kTick;
        m.qty = qty();
        m.qty2 = qty();
        return m;
    }

    Msg snapshot(const Inst& in) {
        Msg m;
        m.type = 'S';
        m.id = in.id;
        m.seq = in.seq;
        m.src_ns = now();
        for (int s = 0; s < 2; ++s)
            for (auto& l : in.lv[s]) (s == 0 ? m.bids : m.asks).push_back({price(in, s, l.k), l.qty});
        return m;
    }

    Msg delta(Inst& in) {
        const int s = static_cast<int>(rng_.below(2));
        auto& lv = in.lv[s];
        const auto n = static_cast<std::uint32_t>(lv.size());
        const std::uint32_t depth = spec_.depth;
        const double mean_pos = std::max(1.0, n / 5.0);
        // 60% replace; else insert below the target depth, delete at it.
        const bool replace = rng_.uniform() < 0.6;
        Msg m;
        m.type = 'D';
        m.id = in.id;
        m.seq = ++in.seq;
        m.src_ns = now();
        m.side = static_cast<std::uint8_t>(s);
        if (!replace && n >= depth) {
            const std::uint32_t i = rng_.near_top(n, mean_pos);
            m.px = price(in, s, lv[i].k);
            m.action = 1;
            lv.erase(lv.begin() + i);
            return m;
        }
        if (!replace) {
            for (int tries = 0; tries < 8; ++tries) {
                const auto k = 1 + std::min<std::uint32_t>(3 * depth,
                    static_cast<std::uint32_t>(-std::log(1.0 - rng_.uniform()) * depth / 2.0));
                auto it = std::lower_bound(lv.begin(), lv.end(), k, [](const Lv& a, std::uint32_t b) { return a.k < b; });
                if (it != lv.end() && it->k == k) continue;
                m.px = price(in, s, k);
                m.qty = qty();
                lv.insert(it, Lv{k, m.qty});
                return m;
            }
        }
        const std::uint32_t i = rng_.near_top(n, mean_pos);
        lv[i].qty = qty();
        m.px = price(in, s, lv[i].k);
        m.qty = lv[i].qty;
        return m;
    }

    MixSpec spec_;
    Rng rng_;
    std::int64_t t_ = 1'704'067'200'000'000'000;
    std::vector<Inst> insts_;
    std::vector<std::size_t> delta_ids_, quote_ids_;
};

// ------------------------------------------------------------------ packing
// Packs messages into datagrams: up to per_dgram messages and 1400 bytes.
class Packer {
public:
    using Emit = std::function<void(std::span<const std::byte>, std::uint16_t msgs, std::int64_t send_ns)>;
    Packer(std::uint32_t per_dgram, Emit emit) : per_(per_dgram), emit_(std::move(emit)) { reset(); }

    void add(const Msg& m) {
        if (b_->msg_count() >= per_ || b_->size() + m.wire_size() > tickgate::qfb1::kMaxDatagram) flush();
        switch (m.type) {
            case 'Q': b_->quote(m.id, m.seq, m.src_ns, m.px, m.qty, m.px2, m.qty2); break;
            case 'D': b_->delta(m.id, m.seq, m.src_ns, m.px, m.qty, m.side, m.action); break;
            case 'S': b_->snapshot(m.id, m.seq, m.src_ns, m.bids, m.asks); break;
            default: b_->heartbeat(m.id, m.seq, m.src_ns); break;
        }
    }
    void flush() {
        if (b_->msg_count() == 0) return;
        emit_(b_->bytes(), b_->msg_count(), send_ns_);
        reset();
    }

private:
    void reset() {
        send_ns_ += 1000;
        b_.emplace(1, 1, ++pseq_, send_ns_);
    }
    std::uint32_t per_;
    Emit emit_;
    std::optional<PacketBuilder> b_;
    std::uint64_t pseq_ = 0;
    std::int64_t send_ns_ = 1'704'067'200'000'000'000;
};

// ------------------------------------------------------------------ health
struct Health {
    std::uint64_t accepted = 0, duplicates = 0, lost = 0, stale = 0, unbuffered = 0, overflows = 0,
                  snapshots = 0, heartbeats = 0, suspect = 0;
    [[nodiscard]] bool clean() const noexcept {
        return duplicates == 0 && lost == 0 && stale == 0 && unbuffered == 0 && overflows == 0 && suspect == 0;
    }
    [[nodiscard]] std::string str() const {
        std::ostringstream o;
        o << "accepted=" << accepted << " dups=" << duplicates << " lost=" << lost << " stale=" << stale
          << " unbuffered=" << unbuffered << " overflows=" << overflows << " snapshots=" << snapshots
          << " heartbeats=" << heartbeats << " suspect=" << suspect;
        return o.str();
    }
};

inline Health health_of(const tickgate::InstrumentTable& instruments) {
    Health h;
    for (auto id : instruments.seen_ids()) {
        const auto& st = instruments.state(id);
        const auto& c = st.counters;
        h.accepted += c.accepted;
        h.duplicates += c.duplicates;
        h.lost += c.lost;
        h.stale += c.stale_snapshots;
        h.unbuffered += c.unbuffered_deltas;
        h.overflows += c.book_overflows;
        h.snapshots += c.snapshots_applied;
        h.heartbeats += c.heartbeats;
        h.suspect += st.suspect;
    }
    return h;
}

// Books of the handler equal the model's (all instruments)?
inline bool books_match(const tickgate::Handler& seq, const Market& mk, std::uint32_t instruments) {
    for (std::uint32_t i = 0; i < instruments; ++i) {
        if (!mk.is_delta(i)) continue;
        for (int s = 0; s < 2; ++s) {
            const auto want = mk.book(i, s);
            const auto got = seq.book().side(mk.id_of(i), s == 0 ? tickgate::Side::kBid : tickgate::Side::kAsk);
            if (want.size() != got.size()) return false;
            for (std::size_t j = 0; j < want.size(); ++j)
                if (want[j].price != got[j].price || want[j].qty != got[j].qty) return false;
        }
    }
    return true;
}

// ------------------------------------------------------------------ streams
// Pre-built datagrams back to back in one buffer; the first `warm` are the
// session start (snapshots / first quotes) and are applied untimed.
struct Stream {
    std::vector<std::byte> bytes;
    std::vector<std::size_t> off{0};
    std::vector<std::uint16_t> msgs;
    std::size_t warm = 0;
    std::uint64_t timed_msgs = 0, timed_sequenced = 0, timed_bytes = 0;
    [[nodiscard]] std::size_t size() const noexcept { return msgs.size(); }
    [[nodiscard]] std::span<const std::byte> dgram(std::size_t i) const noexcept {
        return {bytes.data() + off[i], off[i + 1] - off[i]};
    }
};

inline Stream build_stream(const MixSpec& spec) {
    Stream st;
    Market mk(spec);
    bool timed = false;
    auto emit = [&](std::span<const std::byte> b, std::uint16_t n, std::int64_t) {
        st.bytes.insert(st.bytes.end(), b.begin(), b.end());
        st.off.push_back(st.bytes.size());
        st.msgs.push_back(n);
        if (timed) {
            st.timed_msgs += n;
            st.timed_bytes += b.size();
        } else {
            ++st.warm;
        }
    };
    Packer p(spec.per_dgram, emit);
    for (auto& m : mk.warmup()) p.add(m);
    p.flush();
    timed = true;
    for (std::uint64_t i = 0; i < spec.messages; ++i) {
        Msg m = mk.next();
        st.timed_sequenced += m.type == 'Q' || m.type == 'D';
        p.add(m);
    }
    p.flush();
    // Self-check: one pass through a fresh Handler takes every message, and
    // its books equal the model's.
    tickgate::Handler h(tickgate::Capacity{}, tickgate::GateConfig{});
    for (std::size_t i = 0; i < st.size(); ++i) h.on_datagram(st.dgram(i), 0, 0);
    const Health hc = health_of(h.instruments());
    if (!hc.clean() || h.decoder().counters().malformed_packets.get() != 0 ||
        hc.accepted != st.timed_sequenced + mk.warm_sequenced() || !books_match(h, mk, spec.instruments))
        throw std::runtime_error("benchmark stream self-check failed: " + hc.str());
    return st;
}

// ------------------------------------------------------------------ options

// A rate option: "20000", "150k", "1.5M"; nullopt unless a positive number.
inline std::optional<double> parse_rate(const std::string& t) {
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (end && (*end == 'k' || *end == 'K')) v *= 1e3, ++end;
    else if (end && (*end == 'm' || *end == 'M')) v *= 1e6, ++end;
    if (!end || *end != '\0' || !(v > 0)) return std::nullopt;
    return v;
}

// ------------------------------------------------------------------ machine
struct MachineInfo {
    std::string cpu, kernel, governor;
    unsigned cores = 0;
};

inline MachineInfo machine_info() {
    MachineInfo m;
    std::ifstream ci("/proc/cpuinfo");
    for (std::string line; std::getline(ci, line);)
        if (line.rfind("model name", 0) == 0) {
            m.cpu = line.substr(line.find(':') + 2);
            break;
        }
    m.cores = std::thread::hardware_concurrency();
    utsname u{};
    if (::uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
    std::ifstream g("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    if (!(g >> m.governor)) m.governor = "n/a";
    return m;
}

inline tickgate::json::Value machine_json(const MachineInfo& m) {
    return {{"cpu", m.cpu}, {"cores", m.cores}, {"kernel", m.kernel}, {"governor", m.governor}};
}

// Writes `doc` to `path` with the project's one JSON writer; false (and
// perror) if the file cannot be written.
inline bool write_json(const std::string& path, const tickgate::json::Value& doc) {
    std::ofstream f(path);
    f << tickgate::json::dump(doc);
    f.close();
    if (!f) std::perror(path.c_str());
    return static_cast<bool>(f);
}

inline bool pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline std::int64_t mono_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Sleeps until `spin_ns` before `t` (CLOCK_MONOTONIC), then spins to `t`:
// a fixed send schedule without the timer's wake-up lateness.
inline void wait_until(std::int64_t t, std::int64_t spin_ns) noexcept {
    std::int64_t now = mono_ns();
    if (t - now > spin_ns) {
        const std::int64_t wake = t - spin_ns;
        const timespec ts{static_cast<time_t>(wake / 1'000'000'000), static_cast<long>(wake % 1'000'000'000)};
        while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
        }
        now = mono_ns();
    }
    while (now < t) {
        _mm_pause();
        now = mono_ns();
    }
}

// Raises (or lowers) this process's priority against the rest of the machine.
// With sched_autogroup, nice only orders threads inside one session; a new
// session of our own (setsid: works unless we lead a process group, as under
// an interactive shell — then run the tool under `setsid`) lets the same nice
// apply to our group. `tool` names the program in messages.
inline void set_priority(int nice, const char* tool) {
    ::setsid();
    if (::getsid(0) == ::getpid()) {
        std::ofstream ag("/proc/self/autogroup");
        ag << nice << std::flush;
        if (!ag) std::fprintf(stderr, "%s: could not set the autogroup nice\n", tool);
    } else {
        std::fprintf(stderr, "%s: not a session leader: --nice acts only inside this session's autogroup\n", tool);
    }
    if (::setpriority(PRIO_PROCESS, 0, nice) != 0)
        std::fprintf(stderr, "%s: setpriority(%d) failed: %s\n", tool, nice, std::strerror(errno));
}

}  // namespace bench
