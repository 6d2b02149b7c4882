// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
//
// upf_xsk: hands the UPF's user-plane traffic to AF_XDP sockets (crates/upf-afxdp), the
// user-space path `steer5g bench upf` compares with the XDP fast path and with sockets/TUN.
//
//   upf_xsk_n3 on the N3 interface: IPv4/UDP to the N3 address, destination port 2152
//              (GTP-U, TS 29.281 §4.4.2), goes to the AF_XDP socket of its rx queue.
//   upf_xsk_n6 on the N6 interface: IPv4 to an address of the UE pool goes to the AF_XDP
//              socket of its rx queue.
// Everything else (ARP, traffic for the UPF host itself, IP fragments) stays with the
// kernel: XDP_PASS. bpf_redirect_map falls back to XDP_PASS when the queue has no socket,
// so nothing is lost while user space is starting.
//
// Neither program reads an identifier (the worker of a TEID, ids::upf): the socket of the rx
// queue takes the packet, so no layout of crates/ids is repeated here.
//
// Build: crates/upf-afxdp/build.rs (with -I for the generated steer5g_ids.h).

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define GTPU_PORT 2152

// Keep in step with `BpfCounter` in crates/upf-afxdp/src/lib.rs.
enum counter {
	TO_XSK = 0, // redirected to a socket (or passed by the fallback: see above)
	PASSED,     // left to the kernel
	COUNTER_MAX,
};

struct config {
	__u32 n3_addr;   // network order
	__u32 pool_addr; // network order, already masked
	__u32 pool_mask; // network order
	__u32 pad;
};

// One XSKMAP per interface: both are keyed by rx queue, and a veth's single queue is 0 on
// both sides.
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks_n3 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks_n6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} xsk_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} xsk_counters SEC(".maps");

static __always_inline int count(__u32 c, int verdict)
{
	__u64 *v = bpf_map_lookup_elem(&xsk_counters, &c);
	if (v)
		*v += 1;
	return verdict;
}

#define TO_SOCKET(ctx, map) (count(TO_XSK, 0), bpf_redirect_map(&(map), (ctx)->rx_queue_index, XDP_PASS))

// The IPv4 header of an unfragmented IPv4 frame, or 0.
static __always_inline struct iphdr *ipv4_of(void *data, void *data_end)
{
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->version != 4 || ip->ihl < 5)
		return 0;
	// Fragments (MF set or an offset) need reassembly, which only the kernel does.
	if (ip->frag_off & bpf_htons(0x3fff))
		return 0;
	return ip;
}

// Both programs' start: the configuration (*cfg) and the frame's IPv4 header, NULL when
// either is missing and the frame is the kernel's.
static __always_inline struct iphdr *configured_ipv4(struct xdp_md *ctx, struct config **cfg)
{
	__u32 key = 0;
	*cfg = bpf_map_lookup_elem(&xsk_config, &key);
	if (!*cfg)
		return 0;
	return ipv4_of((void *)(long)ctx->data, (void *)(long)ctx->data_end);
}

SEC("xdp")
int upf_xsk_n3(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct config *cfg;
	struct iphdr *ip = configured_ipv4(ctx, &cfg);
	if (!ip || ip->protocol != IPPROTO_UDP || ip->daddr != cfg->n3_addr)
		return count(PASSED, XDP_PASS);
	struct udphdr *udp = (void *)ip + ip->ihl * 4;
	if ((void *)(udp + 1) > data_end || udp->dest != bpf_htons(GTPU_PORT))
		return count(PASSED, XDP_PASS);
	return TO_SOCKET(ctx, xsks_n3);
}

SEC("xdp")
int upf_xsk_n6(struct xdp_md *ctx)
{
	struct config *cfg;
	struct iphdr *ip = configured_ipv4(ctx, &cfg);
	if (!ip || (ip->daddr & cfg->pool_mask) != cfg->pool_addr)
		return count(PASSED, XDP_PASS);
	return TO_SOCKET(ctx, xsks_n6);
}

char LICENSE[] SEC("license") = "GPL";
