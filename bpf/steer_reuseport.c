// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
//
// steer_reuseport: the sk_reuseport program of a steer5g listener group.
//
// A listener group is one SO_REUSEPORT socket per worker, all bound to one address; socket i
// sits at index i of `worker_socks`. For every new TCP connection (on its SYN) and every UDP
// datagram the kernel asks this program which socket of the group gets it. The program reads
// a 32-bit app id from the packet and picks the owner's socket:
//
//   1. app id: TCP  = the client's source port (a shard-aware client binds a source port
//                     whose value maps to the worker it wants, see `source_port_for` in
//                     crates/steer-bpf);
//              UDP  = `len` bytes (1..8) at `offset` bytes into the UDP payload, read as a
//                     big-endian integer, shifted right by `shift`, low 32 bits kept.
//   2. owner:  `exceptions[app_id]` if present (hot ids moved at run time), else
//              `app_id % workers`. The Rust side (crates/steer-bpf, `owner_of_app_id`)
//              computes exactly this; change both together.
//
// Nothing here ever drops: when no id can be read, or the chosen socket is missing, the
// program returns SK_PASS without a selection and the kernel falls back to its own
// 4-tuple hash. Those cases are counted, so a test or a run report sees them.
//
// Build: crates/steer-bpf/build.rs, which also writes the generated steer5g_ids.h.

#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
// The identifier layouts, generated from crates/ids by build.rs (ids::c_header): here
// STEER5G_MAX_WORKERS, since worker numbers travel in 8-bit fields of steer5g identifiers.
#include "steer5g_ids.h"

#define MODE_TCP_SOURCE_PORT 1
#define MODE_UDP_PAYLOAD 2

// RFC 768: the UDP header is 8 bytes; for UDP, the program's packet starts at that header.
#define UDP_HEADER_LEN 8

// Counter slots; the Rust side reads them by these indices.
#define CNT_STEERED 0         // a socket was selected (exception hits included)
#define CNT_EXCEPTION 1       // ... of which the exception map named the worker
#define CNT_NO_ID 2           // no app id in the packet (too short, no config): kernel hash
#define CNT_SELECT_FAILED 3   // the owner's socket was missing: kernel hash
#define CNT_PER_WORKER 4      // CNT_PER_WORKER + w: selections of worker w
#define CNT_SLOTS (CNT_PER_WORKER + STEER5G_MAX_WORKERS)

// Written once by user space before the program is attached. Layout shared with
// crates/steer-bpf/src/maps.rs (`Config::to_bytes`): five native-endian u32s. Where the app id
// sits (offset, len, shift) is runtime configuration, not a generated constant: user space
// writes an `IdSpec` here, e.g. `IdSpec::PFCP_SEID_TOP16`, whose shift it takes from crates/ids.
struct steer_config {
	__u32 workers; // 0 = not configured yet: every packet takes the fallback
	__u32 mode;    // MODE_*
	__u32 offset;  // UDP: first id byte, counted from the start of the UDP payload
	__u32 len;     // UDP: id bytes, 1..8
	__u32 shift;   // UDP: right shift applied to the big-endian value, < 8 * len
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct steer_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);   // app id
	__type(value, __u32); // worker
} exceptions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_REUSEPORT_SOCKARRAY);
	__uint(max_entries, STEER5G_MAX_WORKERS);
	__type(key, __u32);
	__type(value, __u64); // user space writes the socket's fd
} worker_socks SEC(".maps");

// Per-CPU so the hot path takes no atomic: user space sums the CPUs.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &slot);

	if (v)
		*v += 1;
}

// Reads `len` bytes at `off` as a big-endian integer. bpf_skb_load_bytes takes a variable
// size only when the verifier can prove it is 1..sizeof(b), hence the explicit bounds.
static __always_inline int load_be(struct sk_reuseport_md *md, __u32 off, __u32 len, __u64 *out)
{
	__u8 b[8] = {};
	__u64 v = 0;
	__u32 sz;

	if (len < 1 || len > sizeof(b))
		return -1;
	// clang tests a copy of `len` and hands the verifier the unbounded original; the empty
	// asm hides the range from clang so that the mask below survives into the bytecode.
	sz = len - 1;
	asm volatile("" : "+r"(sz));
	sz = (sz & 7) + 1;
	if (bpf_skb_load_bytes(md, off, b, sz))
		return -1;
#pragma unroll
	for (int i = 0; i < 8; i++)
		if (i < len)
			v = (v << 8) | b[i];
	*out = v;
	return 0;
}

static __always_inline int app_id_of(struct sk_reuseport_md *md, const struct steer_config *cfg,
				     __u32 *id)
{
	if (cfg->mode == MODE_TCP_SOURCE_PORT && md->ip_protocol == IPPROTO_TCP) {
		// RFC 9293 §3.1: the source port is the first 16 bits of the TCP header, which
		// is where the program's packet starts for a SYN.
		__u8 p[2];

		if (bpf_skb_load_bytes(md, 0, p, 2))
			return -1;
		*id = ((__u32)p[0] << 8) | p[1];
		return 0;
	}
	if (cfg->mode == MODE_UDP_PAYLOAD && md->ip_protocol == IPPROTO_UDP) {
		__u64 v;

		// The offset is a u16 on the Rust side; the mask keeps the verifier sure of it.
		if (load_be(md, UDP_HEADER_LEN + (cfg->offset & 0xffff), cfg->len, &v))
			return -1;
		*id = (__u32)(v >> (cfg->shift & 63));
		return 0;
	}
	return -1;
}

SEC("sk_reuseport")
int steer_reuseport(struct sk_reuseport_md *md)
{
	__u32 zero = 0, id, worker;
	struct steer_config *cfg = bpf_map_lookup_elem(&config, &zero);
	__u32 *exc;

	if (!cfg || cfg->workers == 0 || app_id_of(md, cfg, &id)) {
		count(CNT_NO_ID);
		return SK_PASS;
	}
	exc = bpf_map_lookup_elem(&exceptions, &id);
	if (exc)
		worker = *exc;
	else
		worker = id % cfg->workers;
	if (worker >= STEER5G_MAX_WORKERS ||
	    bpf_sk_select_reuseport(md, &worker_socks, &worker, 0)) {
		count(CNT_SELECT_FAILED);
		return SK_PASS;
	}
	count(CNT_STEERED);
	if (exc)
		count(CNT_EXCEPTION);
	count(CNT_PER_WORKER + worker);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
