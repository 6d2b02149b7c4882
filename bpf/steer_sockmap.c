// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
//
// steer_sockmap: per-message steering inside one TCP stream with sockmap + strparser, the measured
// alternative to the one-hop user-space hand-off. It is not the default: on this kernel it is
// slower than a user-space split and the inbound connection loses TCP backpressure (KERNEL.md
// §2.2).
//
// The inbound TCP connections sit in `streams` (a SOCKMAP) with the parser and verdict below
// attached to it; worker i's target socket (one end of a unix socketpair) sits at index i of
// `worker_socks` (a second SOCKMAP, no programs). Every message is framed as
//
//     0      4        8
//     | len  | app id | body ...      (big-endian u32s; len counts the whole message)
//
// and goes to `exceptions[app_id]` if present, else `app_id % workers` — the same owner rule
// as steer_reuseport.c and `owner_of_app_id` in crates/steer-bpf; change them together.
//
// The strparser pitfall (KERNEL.md §2.1): the skb the parser and the verdict see is a clone of
// a whole TCP skb, and the current message starts at strp_msg(skb)->offset, which __sk_buff
// does not expose. bpf_cast_to_kern_ctx (kfunc, 6.3+) gives the kernel sk_buff, whose cb
// holds struct sk_skb_cb with that offset; CO-RE relocates the field offsets.
//
// Build: crates/steer-bpf/build.rs, with -DSTEER_VMLINUX and vmlinux.h from bpftool when it is
// available, else with the minimal CO-RE struct subset below; it also writes steer5g_ids.h.

#ifdef STEER_VMLINUX
#include "vmlinux.h"
#else
#include <linux/bpf.h>
// The few kernel types the program reads, CO-RE-relocated against the running kernel's BTF:
// only the field names must match, not the layout.
struct strp_msg {
	int full_len;
	int offset;
} __attribute__((preserve_access_index));
struct _strp_msg {
	struct strp_msg strp;
	int accum_len;
} __attribute__((preserve_access_index));
struct sk_skb_cb {
	struct _strp_msg strp;
} __attribute__((preserve_access_index));
struct sk_buff {
	char cb[48];
} __attribute__((preserve_access_index));
#endif
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
// The identifier layouts, generated from crates/ids by build.rs (ids::c_header): here
// STEER5G_MAX_WORKERS.
#include "steer5g_ids.h"

#define MAX_STREAMS 64

// The frame header: total length and app id, both big-endian.
#define HEADER_LEN 8
// Longest message accepted. A longer length is a framing error, not a message to wait for:
// strparser would otherwise buffer up to it.
#define MAX_MESSAGE_LEN 65536

// Counter slots; the Rust side (crates/steer-bpf/src/stream.rs) reads them by index.
#define CNT_STEERED 0         // redirected to the owner's socket (exception hits included)
#define CNT_EXCEPTION 1       // ... of which the exception map named the worker
#define CNT_BAD_HEADER 2      // a length outside HEADER_LEN..MAX_MESSAGE_LEN: stream aborted
#define CNT_REDIRECT_FAILED 3 // the owner has no socket in worker_socks: message dropped
#define CNT_PARSE_MORE 4      // the parser needed more bytes (a header split across skbs)
#define CNT_PER_WORKER 5      // CNT_PER_WORKER + w: messages steered to worker w
#define CNT_SLOTS (CNT_PER_WORKER + STEER5G_MAX_WORKERS)

// EBADMSG: what the parser returns on a framing error; strparser then aborts the stream.
#define ERR_BADMSG 74

struct stream_config {
	__u32 workers; // 0 = not configured: every message is dropped and counted
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stream_config);
} stream_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);   // app id
	__type(value, __u32); // worker
} exceptions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, MAX_STREAMS);
	__type(key, __u32);
	__type(value, __u64);
} streams SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, STEER5G_MAX_WORKERS);
	__type(key, __u32);
	__type(value, __u64);
} worker_socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

static __always_inline void count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &slot);

	if (v)
		*v += 1;
}

// Where the current message starts inside the skb strparser hands over (KERNEL.md §2.1).
static __always_inline __u32 message_offset(struct __sk_buff *skb)
{
	struct sk_buff *k = bpf_cast_to_kern_ctx(skb);
	struct sk_skb_cb *cb = (struct sk_skb_cb *)k->cb;

	return cb->strp.strp.offset;
}

SEC("sk_skb/stream_parser")
int steer_stream_parser(struct __sk_buff *skb)
{
	__u32 hdr[2];
	__u32 len;

	if (bpf_skb_load_bytes(skb, message_offset(skb), hdr, sizeof(hdr))) {
		// Fewer than HEADER_LEN bytes so far: 0 asks strparser for more.
		count(CNT_PARSE_MORE);
		return 0;
	}
	len = bpf_ntohl(hdr[0]);
	if (len < HEADER_LEN || len > MAX_MESSAGE_LEN) {
		count(CNT_BAD_HEADER);
		return -ERR_BADMSG;
	}
	return len;
}

SEC("sk_skb/stream_verdict")
int steer_stream_verdict(struct __sk_buff *skb)
{
	__u32 zero = 0, hdr[2], id, worker;
	struct stream_config *cfg = bpf_map_lookup_elem(&stream_cfg, &zero);
	__u32 *exc;

	if (!cfg || cfg->workers == 0 ||
	    bpf_skb_load_bytes(skb, message_offset(skb), hdr, sizeof(hdr))) {
		count(CNT_REDIRECT_FAILED);
		return SK_DROP;
	}
	id = bpf_ntohl(hdr[1]);
	exc = bpf_map_lookup_elem(&exceptions, &id);
	worker = exc ? *exc : id % cfg->workers;
	if (worker >= STEER5G_MAX_WORKERS ||
	    bpf_sk_redirect_map(skb, &worker_socks, worker, BPF_F_INGRESS) != SK_PASS) {
		count(CNT_REDIRECT_FAILED);
		return SK_DROP;
	}
	count(CNT_STEERED);
	if (exc)
		count(CNT_EXCEPTION);
	count(CNT_PER_WORKER + worker);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
