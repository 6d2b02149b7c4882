// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
//
// xdp_redirect: the ceiling for `steer5g bench upf`. It forwards every IPv4 frame from the
// interface it runs on to the interface in `peer` with nothing but a FIB lookup and a MAC
// rewrite, the least an XDP forwarder can do, so the UPF paths are measured against what
// this machine's veths and XDP cost by themselves.
//
// Build: clang -O2 -g -target bpf -c xdp_redirect.c (crates/upf-xdp/build.rs does it).

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define AF_INET 2

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} redirect_counters SEC(".maps");

SEC("xdp")
int xdp_redirect_fwd(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 k = 1;
	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		goto pass;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end)
		goto pass;
	struct bpf_fib_lookup p = {};
	p.family = AF_INET;
	p.ipv4_src = ip->saddr;
	p.ipv4_dst = ip->daddr;
	p.tot_len = bpf_ntohs(ip->tot_len);
	p.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &p, sizeof(p), 0) != BPF_FIB_LKUP_RET_SUCCESS)
		goto pass;
	__builtin_memcpy(eth->h_dest, p.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, p.smac, ETH_ALEN);
	k = 0;
	__u64 *c = bpf_map_lookup_elem(&redirect_counters, &k);
	if (c)
		*c += 1;
	return bpf_redirect(p.ifindex, 0);
pass:;
	__u64 *cp = bpf_map_lookup_elem(&redirect_counters, &k);
	if (cp)
		*cp += 1;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
