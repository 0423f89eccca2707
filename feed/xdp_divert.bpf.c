// tickgate's XDP program (AF_XDP receive backend, feed/af_xdp.cpp): frames
// of IPv4/UDP datagrams to a configured group:port go to the AF_XDP socket
// of their RX queue; everything else (ARP, other ports, fragments, frames
// the parser cannot read whole) passes to the kernel untouched. Built with
// Debian's clang -target bpf and embedded in the binary at build time.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

// Key of a line, network byte order (filled from the config at start-up).
struct line_key {
    __u32 group;
    __u16 port;
    __u16 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, struct line_key);
    __type(value, __u8);
} tg_lines SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 256);
    __type(key, __u32);
    __type(value, __u32);
} tg_xsks SEC(".maps");

// [0] frames redirected to a socket, [1] frames passed to the kernel.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, __u64);
} tg_stats SEC(".maps");

static __always_inline int count(__u32 slot, int action) {
    __u64* n = bpf_map_lookup_elem(&tg_stats, &slot);
    if (n) *n += 1;
    return action;
}

SEC("xdp")
int tickgate_divert(struct xdp_md* ctx) {
    void* data = (void*)(long)ctx->data;
    void* end = (void*)(long)ctx->data_end;
    struct ethhdr* eth = data;
    if ((void*)(eth + 1) > end) return count(1, XDP_PASS);
    __u16 proto = eth->h_proto;
    void* next = eth + 1;
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // kMaxVlanTags in udp_frame.hpp
        if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD)) break;
        __u16* tag = next;
        if ((void*)(tag + 2) > end) return count(1, XDP_PASS);
        proto = tag[1];
        next = tag + 2;
    }
    if (proto != bpf_htons(ETH_P_IP)) return count(1, XDP_PASS);
    struct iphdr* ip = next;
    if ((void*)(ip + 1) > end || ip->version != 4 || ip->ihl < 5) return count(1, XDP_PASS);
    if (ip->protocol != IPPROTO_UDP || (ip->frag_off & bpf_htons(0x3FFF)) != 0) return count(1, XDP_PASS);
    struct udphdr* udp = (void*)ip + ip->ihl * 4;
    if ((void*)(udp + 1) > end) return count(1, XDP_PASS);
    struct line_key key = {ip->daddr, udp->dest, 0};
    if (!bpf_map_lookup_elem(&tg_lines, &key)) return count(1, XDP_PASS);
    // No socket on this queue: the lower bits of flags are the action taken.
    const int action = bpf_redirect_map(&tg_xsks, ctx->rx_queue_index, XDP_PASS);
    return count(action == XDP_REDIRECT ? 0 : 1, action);
}

char LICENSE[] SEC("license") = "GPL";
