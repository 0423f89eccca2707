#include "tickgate/feed/af_xdp.hpp"

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tickgate {

std::span<const std::byte> xdp_divert_object() noexcept;  // embedded at build time (cmake/embed_bytes.cmake)

namespace {
// The key of feed/xdp_divert.bpf.c's tg_lines map (network byte order).
struct LineKey {
    std::uint32_t group;
    std::uint16_t port;
    std::uint16_t pad;
};

std::string errno_text(int err) { return std::strerror(err < 0 ? -err : err); }

// libbpf prints its own diagnostics to stderr; the reasons we give are ours.
int quiet_libbpf(enum libbpf_print_level, const char*, va_list) { return 0; }
}  // namespace

struct XdpPort::Impl {
    struct Queue {
        std::uint32_t id = 0;
        void* area = nullptr;
        std::size_t area_bytes = 0;
        xsk_umem* umem = nullptr;
        xsk_socket* xsk = nullptr;
        xsk_ring_prod fill{};
        xsk_ring_cons comp{};
        xsk_ring_cons rx{};
        xsk_ring_prod tx{};
        std::uint32_t taken = 0;  // frames of the last receive() still out
    };
    bpf_object* object = nullptr;
    int link_fd = -1;
    int stats_fd = -1;
    std::vector<Queue> queues;
    std::vector<XdpFrame> frames;
    std::vector<pollfd> pollfds;
    std::uint32_t batch = 64;
    std::size_t count = 0;  // frames in `frames` from the last receive()

    ~Impl() {
        if (link_fd >= 0) ::close(link_fd);  // detaches the program
        for (Queue& q : queues) {
            if (q.xsk) xsk_socket__delete(q.xsk);
            if (q.umem) xsk_umem__delete(q.umem);
            if (q.area) ::munmap(q.area, q.area_bytes);
        }
        if (object) bpf_object__close(object);
    }
};

std::size_t XdpPort::umem_bytes(const AfXdpConfig& cfg) noexcept {
    return std::size_t{cfg.frames} * kFrameBytes * std::max<std::size_t>(cfg.queues.size(), 1);
}

XdpPort::XdpPort(const AfXdpConfig& cfg, std::span<const Line> lines, std::uint32_t batch)
    : impl_(std::make_unique<Impl>()), interface_(cfg.interface) {
    Impl& m = *impl_;
    m.batch = std::max<std::uint32_t>(batch, 1);
    const std::string where = "AF_XDP on " + cfg.interface + ": ";
    const unsigned ifindex = ::if_nametoindex(cfg.interface.c_str());
    if (ifindex == 0)
        throw XdpUnavailable(where + "no such interface (receiver.af_xdp.interface names a network interface)");
    libbpf_set_print(quiet_libbpf);

    // UMEM is pinned memory: within RLIMIT_MEMLOCK unless CAP_IPC_LOCK.
    const std::size_t umem = umem_bytes(cfg);
    rlimit lim{};
    if (::getrlimit(RLIMIT_MEMLOCK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < umem + (1u << 20)) {
        rlimit want{umem + (1u << 20) + lim.rlim_cur, std::max<rlim_t>(lim.rlim_max, umem + (1u << 20) + lim.rlim_cur)};
        if (::setrlimit(RLIMIT_MEMLOCK, &want) != 0 && umem > lim.rlim_cur)
            throw XdpUnavailable(where + "UMEM of " + std::to_string(umem >> 20) + " MiB is above RLIMIT_MEMLOCK (" +
                                 std::to_string(lim.rlim_cur >> 20) +
                                 " MiB) and it cannot be raised: lower receiver.af_xdp.frames, raise the limit "
                                 "(ulimit -l) or grant CAP_IPC_LOCK");
    }

    const std::span<const std::byte> obj = xdp_divert_object();
    m.object = bpf_object__open_mem(obj.data(), obj.size(), nullptr);
    if (!m.object) throw XdpUnavailable(where + "cannot open the XDP program: " + errno_text(errno));
    if (const int err = bpf_object__load(m.object); err != 0)
        throw XdpUnavailable(where + "loading the XDP program failed (" + errno_text(err) +
                             "): needs root or CAP_BPF + CAP_NET_ADMIN");
    bpf_program* prog = bpf_object__find_program_by_name(m.object, "tickgate_divert");
    const int lines_fd = bpf_object__find_map_fd_by_name(m.object, "tg_lines");
    const int xsks_fd = bpf_object__find_map_fd_by_name(m.object, "tg_xsks");
    m.stats_fd = bpf_object__find_map_fd_by_name(m.object, "tg_stats");
    if (!prog || lines_fd < 0 || xsks_fd < 0 || m.stats_fd < 0)
        throw XdpUnavailable(where + "the embedded XDP program lacks its program or maps");
    for (const Line& l : lines) {
        const LineKey key{htonl(l.group), htons(l.port), 0};
        const std::uint8_t one = 1;
        if (bpf_map_update_elem(lines_fd, &key, &one, BPF_ANY) != 0)
            throw XdpUnavailable(where + "filling the line map failed: " + errno_text(errno));
    }

    // One UMEM and socket per queue; zero-copy first when allowed.
    const bool try_zero_copy = cfg.zero_copy != "false";
    m.queues.resize(cfg.queues.size());
    bool zero_copy = try_zero_copy;
    for (std::size_t i = 0; i < cfg.queues.size(); ++i) {
        Impl::Queue& q = m.queues[i];
        q.id = cfg.queues[i];
        q.area_bytes = std::size_t{cfg.frames} * kFrameBytes;
        q.area = ::mmap(nullptr, q.area_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q.area == MAP_FAILED) {
            q.area = nullptr;
            throw XdpUnavailable(where + "UMEM mmap failed: " + errno_text(errno));
        }
        xsk_umem_config ucfg{};
        ucfg.fill_size = cfg.frames;
        ucfg.comp_size = XSK_RING_CONS__DEFAULT_NUM_DESCS;
        ucfg.frame_size = static_cast<std::uint32_t>(kFrameBytes);
        ucfg.frame_headroom = 0;
        // libxdp 1.3 leaves the rings' cached indexes as they were: zeroed above.
        if (const int err = xsk_umem__create(&q.umem, q.area, q.area_bytes, &q.fill, &q.comp, &ucfg); err != 0)
            throw XdpUnavailable(where + "UMEM registration failed (" + errno_text(err) +
                                 "): raise RLIMIT_MEMLOCK or lower receiver.af_xdp.frames");
        // A queue whose previous socket is still being released (a handler
        // restarted at once) answers EBUSY for a few milliseconds: wait for it.
        int busy_retries = 200;
        for (int attempt = 0; attempt < 2; ++attempt) {
            xsk_socket_config scfg{};
            scfg.rx_size = std::min<std::uint32_t>(cfg.frames, XSK_RING_CONS__DEFAULT_NUM_DESCS * 2);
            scfg.tx_size = 0;
            scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // our own program, attached below
            scfg.bind_flags = static_cast<std::uint16_t>((zero_copy ? XDP_ZEROCOPY : XDP_COPY) | XDP_USE_NEED_WAKEUP);
            const int err = xsk_socket__create(&q.xsk, cfg.interface.c_str(), q.id, q.umem, &q.rx, nullptr, &scfg);
            if (err == 0) break;
            q.xsk = nullptr;
            if (err == -EBUSY && busy_retries-- > 0) {
                ::usleep(5'000);
                --attempt;
                continue;
            }
            if (zero_copy && cfg.zero_copy == "auto" && attempt == 0) {
                zero_copy = false;  // the driver cannot: copy mode
                continue;
            }
            throw XdpUnavailable(where + "binding queue " + std::to_string(q.id) + " failed (" + errno_text(err) + ")" +
                                 (zero_copy ? ": zero-copy refused by the driver (set receiver.af_xdp.zero_copy = "
                                              "\"auto\" or \"false\")"
                                            : ": does the interface have this RX queue?"));
        }
        const int fd = xsk_socket__fd(q.xsk);
        if (bpf_map_update_elem(xsks_fd, &q.id, &fd, BPF_ANY) != 0)
            throw XdpUnavailable(where + "registering queue " + std::to_string(q.id) + " failed: " + errno_text(errno));
        // Every frame to the fill ring: the kernel writes frames there.
        std::uint32_t idx = 0;
        if (xsk_ring_prod__reserve(&q.fill, cfg.frames, &idx) != cfg.frames)
            throw XdpUnavailable(where + "the fill ring took fewer frames than configured");
        for (std::uint32_t f = 0; f < cfg.frames; ++f) *xsk_ring_prod__fill_addr(&q.fill, idx + f) = f * kFrameBytes;
        xsk_ring_prod__submit(&q.fill, cfg.frames);
        m.pollfds.push_back({fd, POLLIN, 0});
    }
    zero_copy_ = zero_copy;

    // Attach last, through a bpf_link: it goes with the process (kill -9
    // included), leaving the interface as it was.
    const int prog_fd = bpf_program__fd(prog);
    const auto attach = [&](std::uint32_t flags) {
        LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = flags);
        return bpf_link_create(prog_fd, static_cast<int>(ifindex), BPF_XDP, &opts);
    };
    if (cfg.mode != "generic") {
        m.link_fd = attach(XDP_FLAGS_DRV_MODE);
        if (m.link_fd >= 0) mode_ = "native";
    }
    if (m.link_fd < 0 && cfg.mode != "native") {
        m.link_fd = attach(XDP_FLAGS_SKB_MODE);
        if (m.link_fd >= 0) mode_ = "generic";
    }
    if (m.link_fd < 0)
        throw XdpUnavailable(where + "attaching the XDP program (" + cfg.mode + " mode) failed: " +
                             errno_text(errno) +
                             (cfg.mode == "native" ? " (the driver has no native XDP: try mode = \"generic\")"
                                                   : " (another XDP program attached?)"));
    std::size_t per_batch = m.batch * m.queues.size();
    m.frames.resize(per_batch);
}

XdpPort::~XdpPort() = default;

int XdpPort::receive() noexcept {
    Impl& m = *impl_;
    m.count = 0;
    for (Impl::Queue& q : m.queues) {
        std::uint32_t idx = 0;
        const std::uint32_t n = xsk_ring_cons__peek(&q.rx, m.batch, &idx);
        q.taken = n;
        for (std::uint32_t i = 0; i < n; ++i) {
            const xdp_desc* d = xsk_ring_cons__rx_desc(&q.rx, idx + i);
            const auto* data = static_cast<const std::byte*>(xsk_umem__get_data(q.area, d->addr));
            m.frames[m.count++] = {{data, d->len}, xsk_umem__extract_addr(d->addr), q.id};
            frames_.add();
            bytes_.add(d->len);
        }
    }
    return static_cast<int>(m.count);
}

std::span<const XdpFrame> XdpPort::frames() const noexcept { return {impl_->frames.data(), impl_->count}; }

void XdpPort::release() noexcept {
    Impl& m = *impl_;
    std::size_t at = 0;
    for (Impl::Queue& q : m.queues) {
        const std::uint32_t n = q.taken;
        if (n == 0) continue;
        xsk_ring_cons__release(&q.rx, n);
        // Every frame taken goes back; the fill ring holds them all, so the
        // reserve succeeds (it only waits for the kernel to consume).
        std::uint32_t idx = 0;
        while (xsk_ring_prod__reserve(&q.fill, n, &idx) != n) {
        }
        for (std::uint32_t i = 0; i < n; ++i) *xsk_ring_prod__fill_addr(&q.fill, idx + i) = m.frames[at + i].addr;
        xsk_ring_prod__submit(&q.fill, n);
        at += n;
        q.taken = 0;
        // Copy mode without busy polling: the kernel asks to be woken when
        // it ran out of frames.
        if (xsk_ring_prod__needs_wakeup(&q.fill))
            (void)::recvfrom(xsk_socket__fd(q.xsk), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    }
    m.count = 0;
}

int XdpPort::wait(std::int64_t timeout_ns) noexcept {
    Impl& m = *impl_;
    const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    return ::ppoll(m.pollfds.data(), m.pollfds.size(), &ts, nullptr);
}

AfXdpCounters XdpPort::counters() const noexcept {
    const Impl& m = *impl_;
    AfXdpCounters c;
    c.frames = frames_.get();
    c.bytes = bytes_.get();
    c.bad_frames = bad_frames_.get();
    c.unmatched_frames = unmatched_.get();
    for (const Impl::Queue& q : m.queues) {
        xdp_statistics s{};
        socklen_t len = sizeof s;
        if (::getsockopt(xsk_socket__fd(q.xsk), SOL_XDP, XDP_STATISTICS, &s, &len) != 0) continue;
        c.rx_dropped += s.rx_dropped;
        c.rx_ring_full += s.rx_ring_full;
        c.fill_ring_empty += s.rx_fill_ring_empty_descs;
    }
    const int cpus = libbpf_num_possible_cpus();
    if (cpus > 0 && cpus <= 4096) {
        std::uint64_t per_cpu[4096];
        for (std::uint32_t slot = 0; slot < 2; ++slot) {
            if (bpf_map_lookup_elem(m.stats_fd, &slot, per_cpu) != 0) continue;
            std::uint64_t sum = 0;
            for (int i = 0; i < cpus; ++i) sum += per_cpu[i];
            (slot == 0 ? c.redirected : c.passed_to_kernel) = sum;
        }
    }
    return c;
}

}  // namespace tickgate
