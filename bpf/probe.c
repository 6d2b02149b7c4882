// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
//
// probe: the Linux receive path, stage by stage, on tracepoints only. Reference 004 timed its
// stages with kprobes on net_rx_action, napi_complete_done, ip_local_deliver and udp_rcv;
// kernels with lockdown or without CONFIG_KPROBES (ours) refuse kprobes and fentry, so every
// program here is tp_btf: BTF-typed raw tracepoints, which need no tracefs either.
//
// A stage's time is the gap between two tracepoints on one CPU. The receive path does not
// migrate within a packet (softirq, or process context with bottom halves disabled), so the
// per-CPU state below is enough to pair them:
//   netif_rx           netif_rx_entry -> netif_rx_exit          (enqueue to the backlog: veth, lo)
//   napi_gro_receive   napi_gro_receive_entry -> _exit          (NAPI drivers)
//   netif_receive_skb  netif_receive_skb -> the next boundary on that CPU: the next packet, the
//                      end of the NAPI poll or of the softirq, a drop, a context switch or a
//                      syscall exit. That is reference 004's L2 + IP + IP-to-transport +
//                      transport up to the socket queue in one stage: nothing in between has
//                      a tracepoint.
//   napi_poll          from the softirq's start (or the previous poll's end) to napi_poll
//   softirq_net_rx     softirq_entry -> softirq_exit, vector NET_RX, split by where it ran:
//                      in ksoftirqd or borrowed by the task it interrupted (charged to it)
//   sched_wakeup       a wake-up of the receiver -> sched_switch onto a CPU
//   skb_copy_datagram_iovec  the packet's first sight in the stack -> the copy into the
//                      application's buffer (latency from driver to read, keyed by skb)
//   read_by_sequence   the same latency where no copy tracepoint fires (UDP copies a linear
//                      skb with copy_linear_skb): keyed by the flow and sequence tag that the
//                      probe's own generator writes at the start of each UDP payload, read
//                      once in the packet and once in the application's buffer at the
//                      recvfrom/recvmsg/read return
//   sys_*              the receive syscalls' entry -> exit (raw_syscalls, by number)
// Drops and frees are counted: kfree_skb by reason, consume_skb, udp_fail_queue_rcv_skb,
// sock_rcvqueue_full.
//
// Filters (map `config`): a network namespace (inode), an interface index, a process (tgid).
// Packets are matched on their device when first seen and remembered by skb address (`seen`),
// because UDP reuses skb->dev as scratch once the packet is queued to a socket.
//
// Build: crates/probe/build.rs, which also writes probe_stages.h from crates/probe/src/stages.rs.

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
// S5P_STAGE_* (the stage slots), S5P_STAGES, S5P_HIST, S5P_EXTRA_* and S5P_DROP_REASONS.
#include "probe_stages.h"

// The kernel types read, CO-RE-relocated against the running kernel's BTF: only the field
// names must match, not the layout. Pointers that come from a tracepoint's arguments are
// BTF-typed, so they are dereferenced directly (a checked load) rather than through
// bpf_probe_read_kernel: a helper call per field was most of a program's cost here.
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));
struct net {
	struct ns_common ns;
} __attribute__((preserve_access_index));
typedef struct {
	struct net *net;
} possible_net_t;
struct net_device {
	int ifindex;
	possible_net_t nd_net;
} __attribute__((preserve_access_index));
struct sock_common {
	possible_net_t skc_net;
} __attribute__((preserve_access_index));
struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));
struct sk_buff {
	struct net_device *dev;
	unsigned int len;
	unsigned int data_len;
	unsigned char *head;
	unsigned char *data;
} __attribute__((preserve_access_index));
struct napi_struct {
	struct net_device *dev;
} __attribute__((preserve_access_index));
struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));
// The second syscall argument (the buffer of recvfrom and read, the msghdr of recvmsg) from
// the user registers; build.rs defines the architecture.
#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long si;
} __attribute__((preserve_access_index));
#define SYSCALL_ARG2(r) ((r)->si)
#elif defined(__TARGET_ARCH_arm64)
struct pt_regs {
	__u64 regs[31];
} __attribute__((preserve_access_index));
#define SYSCALL_ARG2(r) ((r)->regs[1])
#else
struct pt_regs;
#define SYSCALL_ARG2(r) 0
#endif

#define NET_RX_SOFTIRQ 3

struct probe_config {
	__u32 netns;   // 0: any namespace
	__u32 ifindex; // 0: any interface
	__u32 tgid;    // 0: any process
	__u32 tags;    // 1: look for the generator's tag in UDP payloads
};

struct stage_stat {
	__u64 count;
	__u64 sum_ns;
	__u64 hist[S5P_HIST]; // log-linear: 4 buckets per power of two (bucket() below)
};

struct cpu_state {
	__u64 pkt_skb; // the packet inside netif_receive_skb's stage, 0 if none
	__u64 pkt_t0;
	__u64 rx_t0; // netif_rx_entry, 0 outside
	__u64 gro_t0;
	__u64 sirq_t0; // NET_RX softirq entry, 0 outside
	__u64 poll_t0;
	__u32 rx_ours;
	__u32 gro_ours;
	__u32 sirq_ours; // the softirq handled a packet that passed the filter
	__u32 sirq_thread;
	__u32 poll_ours;
	__u32 sirq_tgid;
};

struct task_time {
	__u64 ns;
	__u64 count;
};

struct sys_open {
	__u64 t0;
	__u64 buf; // the user buffer a tagged datagram lands in, 0 if unknown
	__u32 stage;
	__u32 pad;
};

// The generator's tag at the start of a UDP payload (crates/probe/src/tag.rs): "S5PQ", then
// the flow and the sequence number, both big-endian; compared and keyed as raw bytes.
struct tag {
	char magic[4];
	__u32 flow;
	__u64 seq;
};

struct tag_key {
	__u32 flow;
	__u32 pad;
	__u64 seq;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct probe_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, S5P_STAGES);
	__type(key, __u32);
	__type(value, struct stage_stat);
} stages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, S5P_EXTRAS);
	__type(key, __u32);
	__type(value, __u64);
} extras SEC(".maps");

// kfree_skb of a matching packet, by enum skb_drop_reason (names from the kernel's BTF).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, S5P_DROP_REASONS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} cpu SEC(".maps");

// A matching packet's first sight, by skb address. The address alone is not an identity:
// UDP frees a read skb without a tracepoint, so an entry can outlive its packet and the
// slab hand the address to another one; the data buffer's address must match too.
struct first_sight {
	__u64 t;
	__u64 head;
};

// Per-CPU LRU lists: the common list's lock was most of a packet's cost on two CPUs.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct first_sight);
} seen SEC(".maps");

// Tagged datagram (flow, sequence) -> first sight of its packet (ns).
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(max_entries, 16384);
	__type(key, struct tag_key);
	__type(value, __u64);
} tagged SEC(".maps");

// Per thread: when it was woken, and the watched syscall it is in. Task storage, not a hash
// keyed by tid: sched_switch and sys_exit run for every switch and syscall on the machine,
// and a miss here costs a pointer walk instead of a hash lookup.
struct task_state {
	__u64 woken_at; // 0: not woken by a matching event
	struct sys_open sys; // sys.t0 == 0: not in a watched syscall
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_state);
} tasks SEC(".maps");

// Syscall number -> stage slot + 1 (0: not watched); user space fills it for its architecture.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, __u32);
} syscalls SEC(".maps");

// ksoftirqd threads (tid -> 1): a NET_RX softirq that runs in one ran in the thread, any other
// was borrowed by the task it interrupted.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} ksoftirqd SEC(".maps");

// NET_RX softirq time by the process it ran in (tgid): what `top` charges it to.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct task_time);
} softirq_by_task SEC(".maps");

static __always_inline struct probe_config *cfg(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&config, &zero);
}

static __always_inline struct cpu_state *state(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&cpu, &zero);
}

// Every program that reads the filter and this CPU's state starts with these two lookups
// (array lookups the verifier inlines; they cannot fail, but the verifier wants the check).
#define WITH_STATE(c, s)                                                                     \
	struct probe_config *c = cfg();                                                      \
	struct cpu_state *s = state();                                                       \
	if (!c || !s)                                                                        \
	return 0

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;
#pragma unroll
	for (__u32 shift = 32; shift > 0; shift >>= 1) {
		if (v >> shift) {
			v >>= shift;
			r += shift;
		}
	}
	return r;
}

// 0-3 ns have a bucket each; above, four per power of two, so that a percentile read from
// the histogram is within 12.5 %. crates/probe/src/hist.rs holds the same function.
static __always_inline __u32 bucket(__u64 v)
{
	if (v < 4)
		return v;
	__u32 b = log2_u64(v);
	return 4 * (b - 1) + ((v >> (b - 2)) & 3);
}

static __always_inline void account(__u32 stage, __u64 ns)
{
	struct stage_stat *s = bpf_map_lookup_elem(&stages, &stage);
	if (!s)
		return;
	__u32 b = bucket(ns);
	if (b >= S5P_HIST)
		b = S5P_HIST - 1;
	s->count++;
	s->sum_ns += ns;
	s->hist[b]++;
}

static __always_inline void count(__u32 stage)
{
	struct stage_stat *s = bpf_map_lookup_elem(&stages, &stage);
	if (s)
		s->count++;
}

static __always_inline void extra(__u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&extras, &slot);
	if (v)
		*v += n;
}

static __always_inline int filtering(const struct probe_config *c)
{
	return c->netns || c->ifindex;
}

static __always_inline int dev_ours(const struct probe_config *c, struct net_device *dev)
{
	if (!filtering(c))
		return 1;
	if (!dev)
		return 0;
	if (c->ifindex && dev->ifindex != (int)c->ifindex)
		return 0;
	if (c->netns && dev->nd_net.net->ns.inum != c->netns)
		return 0;
	return 1;
}

static __always_inline int sk_ours(const struct probe_config *c, struct sock *sk)
{
	if (!c->netns)
		return 1;
	return sk && sk->__sk_common.skc_net.net->ns.inum == c->netns;
}

static __always_inline int pid_ours(const struct probe_config *c)
{
	return !c->tgid || (bpf_get_current_pid_tgid() >> 32) == c->tgid;
}

// The first sight of a matching packet, for the driver-to-read latency.
// The entry of `skb` if it is this packet's, else 0.
static __always_inline struct first_sight *sight(struct sk_buff *skb)
{
	__u64 key = (__u64)skb;
	struct first_sight *f = bpf_map_lookup_elem(&seen, &key);
	if (f && f->head != (__u64)skb->head)
		return 0;
	return f;
}

// Records the packet's first sight unless it has one; returns the first sight's time.
static __always_inline __u64 remember(struct sk_buff *skb, __u64 now)
{
	struct first_sight *known = sight(skb);
	if (known)
		return known->t;
	__u64 key = (__u64)skb;
	struct first_sight f = {.t = now, .head = (__u64)skb->head};
	bpf_map_update_elem(&seen, &key, &f, BPF_ANY);
	return now;
}

static __always_inline int was_seen(struct sk_buff *skb)
{
	return sight(skb) != 0;
}

static __always_inline void forget(struct sk_buff *skb)
{
	__u64 key = (__u64)skb;
	bpf_map_delete_elem(&seen, &key);
}

static __always_inline int is_tag(const struct tag *t)
{
	return t->magic[0] == 'S' && t->magic[1] == '5' && t->magic[2] == 'P' && t->magic[3] == 'Q';
}

// Records a tagged IPv4/UDP datagram's first sight. At netif_receive_skb skb->data is the
// network header (the MAC header is already pulled); only the linear part is read.
static __always_inline void tag_packet(struct sk_buff *skb, __u64 first)
{
	unsigned char *data = skb->data;
	__u32 linear = skb->len - skb->data_len;
	__u8 vihl = 0, proto = 0;
	__u16 frag = 0;
	if (bpf_probe_read_kernel(&vihl, 1, data) || (vihl >> 4) != 4)
		return;
	__u32 ihl = (vihl & 15) * 4;
	if (ihl < 20 || linear < ihl + 8 + sizeof(struct tag))
		return;
	if (bpf_probe_read_kernel(&proto, 1, data + 9) || proto != 17)
		return;
	// Only a first fragment (offset 0) starts with the UDP header.
	if (bpf_probe_read_kernel(&frag, 2, data + 6) || (frag & bpf_htons(0x1fff)))
		return;
	struct tag t = {};
	if (bpf_probe_read_kernel(&t, sizeof(t), data + ihl + 8) || !is_tag(&t))
		return;
	struct tag_key k = {.flow = t.flow, .seq = t.seq};
	bpf_map_update_elem(&tagged, &k, &first, BPF_ANY);
}

// Ends the open netif_receive_skb stage on this CPU, if any.
static __always_inline void close_packet(struct cpu_state *s, __u64 now)
{
	if (s->pkt_skb) {
		account(S5P_STAGE_NETIF_RECEIVE_SKB, now - s->pkt_t0);
		s->pkt_skb = 0;
	}
}

// Ends the open packet's stage, if any, where this CPU leaves the receive path (a context
// switch, a syscall's return); returns the time it read, or 0 when there was none to end.
static __always_inline __u64 leave_path(struct cpu_state *s)
{
	if (!s->pkt_skb)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	close_packet(s, now);
	return now;
}

// netif_rx and napi_gro_receive are both an entry and an exit around one packet: the stage
// begins with whether the packet matches and ends with its time.
static __always_inline int begin_enqueue(struct sk_buff *skb, int gro)
{
	WITH_STATE(c, s);
	__u64 now = bpf_ktime_get_ns();
	__u32 ours = dev_ours(c, skb->dev);
	if (gro) {
		s->gro_t0 = now;
		s->gro_ours = ours;
	} else {
		s->rx_t0 = now;
		s->rx_ours = ours;
	}
	if (ours) {
		remember(skb, now);
		// A NAPI driver's poll is ours once one of its packets is.
		if (gro)
			s->poll_ours = 1;
	}
	return 0;
}

static __always_inline int end_enqueue(int gro)
{
	struct cpu_state *s = state();
	if (!s)
		return 0;
	__u64 t0 = gro ? s->gro_t0 : s->rx_t0;
	if (!t0)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	// A GRO-merged packet may reach netif_receive_skb inside the call: end it here.
	if (gro)
		close_packet(s, now);
	if (gro ? s->gro_ours : s->rx_ours)
		account(gro ? S5P_STAGE_NAPI_GRO_RECEIVE : S5P_STAGE_NETIF_RX, now - t0);
	if (gro)
		s->gro_t0 = 0;
	else
		s->rx_t0 = 0;
	return 0;
}

// The entry and exit programs of one enqueue stage.
#define ENQUEUE_STAGE(tp, entry, exit, gro)                                                  \
	SEC("tp_btf/" tp "_entry")                                                           \
	int BPF_PROG(entry, struct sk_buff *skb)                                             \
	{                                                                                    \
		return begin_enqueue(skb, gro);                                              \
	}                                                                                    \
	SEC("tp_btf/" tp "_exit")                                                            \
	int BPF_PROG(exit, int ret)                                                          \
	{                                                                                    \
		return end_enqueue(gro);                                                     \
	}

ENQUEUE_STAGE("netif_rx", s5p_rx_entry, s5p_rx_exit, 0)
ENQUEUE_STAGE("napi_gro_receive", s5p_gro_entry, s5p_gro_exit, 1)

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(s5p_rcv_skb, struct sk_buff *skb)
{
	WITH_STATE(c, s);
	__u64 now = bpf_ktime_get_ns();
	close_packet(s, now);
	if (!dev_ours(c, skb->dev))
		return 0;
	__u64 first = remember(skb, now);
	if (c->tags)
		tag_packet(skb, first);
	s->pkt_skb = (__u64)skb;
	s->pkt_t0 = now;
	s->sirq_ours = 1;
	s->poll_ours = 1;
	return 0;
}

SEC("tp_btf/napi_poll")
int BPF_PROG(s5p_napi_poll, struct napi_struct *napi, int work, int budget)
{
	WITH_STATE(c, s);
	__u64 now = bpf_ktime_get_ns();
	close_packet(s, now);
	struct net_device *dev = napi->dev;
	// The per-CPU backlog (veth without NAPI, lo) has no device: it is ours when one of its
	// packets was.
	int ours = dev ? dev_ours(c, dev) : (s->poll_ours || !filtering(c));
	if (ours && s->poll_t0) {
		account(S5P_STAGE_NAPI_POLL, now - s->poll_t0);
		extra(S5P_EXTRA_NAPI_PACKETS, work > 0 ? work : 0);
		if (work >= budget)
			extra(S5P_EXTRA_NAPI_FULL_BUDGET, 1);
	}
	s->poll_t0 = s->sirq_t0 ? now : 0;
	s->poll_ours = 0;
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(s5p_sirq_entry, unsigned int vec)
{
	if (vec != NET_RX_SOFTIRQ)
		return 0;
	WITH_STATE(c, s);
	__u64 now = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	s->sirq_t0 = now;
	s->poll_t0 = now;
	s->poll_ours = 0;
	s->sirq_ours = !filtering(c);
	s->sirq_thread = bpf_map_lookup_elem(&ksoftirqd, &tid) != 0;
	s->sirq_tgid = id >> 32;
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(s5p_sirq_exit, unsigned int vec)
{
	if (vec != NET_RX_SOFTIRQ)
		return 0;
	struct cpu_state *s = state();
	if (!s || !s->sirq_t0)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	close_packet(s, now);
	if (s->sirq_ours) {
		__u64 dt = now - s->sirq_t0;
		account(S5P_STAGE_SOFTIRQ_NET_RX, dt);
		account(s->sirq_thread ? S5P_STAGE_SOFTIRQ_NET_RX_THREAD
				       : S5P_STAGE_SOFTIRQ_NET_RX_BORROWED,
			dt);
		__u32 tgid = s->sirq_tgid;
		struct task_time *t = bpf_map_lookup_elem(&softirq_by_task, &tgid);
		if (t) {
			t->ns += dt;
			t->count++;
		} else {
			struct task_time fresh = {.ns = dt, .count = 1};
			bpf_map_update_elem(&softirq_by_task, &tgid, &fresh, BPF_ANY);
		}
	}
	s->sirq_t0 = 0;
	s->poll_t0 = 0;
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(s5p_kfree_skb, struct sk_buff *skb, void *location, int reason)
{
	WITH_STATE(c, s);
	if (s->pkt_skb == (__u64)skb)
		close_packet(s, bpf_ktime_get_ns());
	if (!was_seen(skb) && !dev_ours(c, skb->dev))
		return 0;
	forget(skb);
	count(S5P_STAGE_KFREE_SKB);
	__u32 r = reason;
	if (r >= S5P_DROP_REASONS)
		r = S5P_DROP_REASONS - 1;
	__u64 *n = bpf_map_lookup_elem(&drops, &r);
	if (n)
		(*n)++;
	return 0;
}

SEC("tp_btf/consume_skb")
int BPF_PROG(s5p_consume_skb, struct sk_buff *skb)
{
	WITH_STATE(c, s);
	if (s->pkt_skb == (__u64)skb)
		close_packet(s, bpf_ktime_get_ns());
	if (!was_seen(skb) && filtering(c))
		return 0;
	forget(skb);
	count(S5P_STAGE_CONSUME_SKB);
	return 0;
}

// A socket refused a packet: counted when the socket is in the namespace and the packet
// is one of ours. Raw sockets (our SCTP) get a clone, which is matched on its device since
// its address was never seen.
static __always_inline int count_refused(struct sock *sk, struct sk_buff *skb, __u32 stage)
{
	struct probe_config *c = cfg();
	if (c && sk_ours(c, sk) && (was_seen(skb) || dev_ours(c, skb->dev)))
		count(stage);
	return 0;
}

SEC("tp_btf/udp_fail_queue_rcv_skb")
int BPF_PROG(s5p_udp_fail, int rc, struct sock *sk, struct sk_buff *skb)
{
	return count_refused(sk, skb, S5P_STAGE_UDP_FAIL_QUEUE_RCV_SKB);
}

SEC("tp_btf/sock_rcvqueue_full")
int BPF_PROG(s5p_rcvq_full, struct sock *sk, struct sk_buff *skb)
{
	return count_refused(sk, skb, S5P_STAGE_SOCK_RCVQUEUE_FULL);
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(s5p_copy_dgram, struct sk_buff *skb, int len)
{
	struct probe_config *c = cfg();
	if (!c || !pid_ours(c))
		return 0;
	struct first_sight *first = sight(skb);
	if (first) {
		account(S5P_STAGE_SKB_COPY_DATAGRAM_IOVEC, bpf_ktime_get_ns() - first->t);
		forget(skb);
	} else if (!filtering(c)) {
		// Seen before the probe started: counted, not timed.
		count(S5P_STAGE_SKB_COPY_DATAGRAM_IOVEC);
	}
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(s5p_wakeup, struct task_struct *p)
{
	WITH_STATE(c, s);
	// Without a process filter, the wake-ups a matching packet causes (its socket's reader).
	if (c->tgid ? (__u32)p->tgid != c->tgid : !s->pkt_skb)
		return 0;
	struct task_state *t = bpf_task_storage_get(&tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t)
		t->woken_at = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(s5p_switch, int preempt, struct task_struct *prev, struct task_struct *next)
{
	struct cpu_state *s = state();
	if (!s)
		return 0;
	__u64 now = leave_path(s);
	struct task_state *t = bpf_task_storage_get(&tasks, next, 0, 0);
	if (!t || !t->woken_at)
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	account(S5P_STAGE_SCHED_WAKEUP, now - t->woken_at);
	t->woken_at = 0;
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(s5p_sys_enter, struct pt_regs *regs, long id)
{
	if (id < 0 || id >= 512)
		return 0;
	__u32 nr = id;
	__u32 *stage = bpf_map_lookup_elem(&syscalls, &nr);
	if (!stage || !*stage)
		return 0;
	struct probe_config *c = cfg();
	if (!c || !pid_ours(c))
		return 0;
	struct task_state *t =
		bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	struct sys_open open = {.t0 = bpf_ktime_get_ns(), .stage = *stage - 1};
	// Where a tagged datagram will land: recvfrom's and read's buffer, recvmsg's first iovec.
	__u64 arg2 = SYSCALL_ARG2(regs);
	if (!c->tags) {
		// No tags to look for: the buffer is not needed.
	} else if (open.stage == S5P_STAGE_SYS_RECVFROM || open.stage == S5P_STAGE_SYS_READ) {
		open.buf = arg2;
	} else if (open.stage == S5P_STAGE_SYS_RECVMSG && arg2) {
		// struct user_msghdr: msg_iov after msg_name (8) and msg_namelen (4, padded to 8).
		__u64 iov = 0;
		if (!bpf_probe_read_user(&iov, sizeof(iov), (void *)(arg2 + 16)) && iov)
			bpf_probe_read_user(&open.buf, sizeof(open.buf), (void *)iov);
	}
	t->sys = open;
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(s5p_sys_exit, struct pt_regs *regs, long ret)
{
	struct cpu_state *s = state();
	if (!s)
		return 0;
	__u64 now = leave_path(s);
	struct task_state *ts = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!ts || !ts->sys.t0)
		return 0;
	struct sys_open *open = &ts->sys;
	if (!now)
		now = bpf_ktime_get_ns();
	__u32 stage = open->stage;
	if (stage < S5P_STAGES)
		account(stage, now - open->t0);
	struct tag t = {};
	if (open->buf && ret >= (long)sizeof(t) &&
	    !bpf_probe_read_user(&t, sizeof(t), (void *)open->buf) && is_tag(&t)) {
		struct tag_key k = {.flow = t.flow, .seq = t.seq};
		__u64 *first = bpf_map_lookup_elem(&tagged, &k);
		if (first) {
			account(S5P_STAGE_READ_BY_SEQUENCE, now - *first);
			bpf_map_delete_elem(&tagged, &k);
		}
	}
	open->t0 = 0;
	open->buf = 0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
