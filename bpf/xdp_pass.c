// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
//
// xdp_pass: hands every frame to the kernel stack unchanged.
//
// It exists for one reason (KERNEL.md §3): a veth only delivers frames that its peer sent with
// XDP_TX or XDP_REDIRECT when the receiving end has an XDP program of its own attached in
// native mode. Without one those frames are dropped silently. `steer5g lab up` attaches this
// program to the lab's veth ends that receive such frames.
//
// Build: clang -O2 -g -target bpf -c xdp_pass.c (crates/steer-bpf/build.rs does it).

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
