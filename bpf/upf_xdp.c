// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
//
// upf_xdp: the UPF's GTP-U fast path (TS 29.281 on N3, plain IPv4 on N6).
//
// Two programs share one set of maps that the PFCP side fills (crates/upf-xdp):
//   upf_n3 on the N3 interface: uplink G-PDUs are checked against the TEID's rule, their
//          outer Ethernet/IPv4/UDP/GTP-U headers removed (Outer Header Removal, TS 29.244
//          §5.2.1) and the inner IPv4 packet redirected to N6 after a FIB lookup.
//   upf_n6 on the N6 interface: a packet to a UE address with a rule gets an outer
//          IPv4/UDP/GTP-U header (Outer Header Creation, with a PDU Session Container when
//          the rule names a QFI) and is redirected to the gNB on N3.
// GTP-U Echo Requests to the N3 address are answered here (TS 29.281 §7.2.1 "shall reply"),
// so path management sees the UPF alive whether or not a user-space path runs behind it.
// What the fast path does not handle (end marker, error indication, other message types,
// buffering FARs, inner TTL about to expire, unresolved neighbours, outer fragments, traffic
// not for the UPF) goes to the kernel stack with XDP_PASS, where the kernel reassembles
// fragments and the user-space path picks it up. Malformed G-PDUs, an inner IPv4 header that
// does not hold together included, are dropped here and counted, never forwarded.
//
// QoS enforced here (TS 29.244 §5.2.1.11, §5.4.2): the QER gate of each direction and its
// MBR, as a token bucket in the rule's map value (see mbr_admit); packets over the rate are
// dropped and counted (DROP_MBR). The inner IPv4 TTL is decremented like a router does
// (RFC 1812 §5.3.1), with an incremental header checksum update (RFC 1624).
//
// Counters are per-CPU (one slot per worker core, no atomics on the hot path).
//
// Build: crates/upf-xdp/build.rs (with -I for the generated steer5g_ids.h).

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define GTPU_PORT 2152
#define GTP_TPDU 255
#define GTP_ECHO_REQUEST 1
#define GTP_ECHO_RESPONSE 2
#define GTP_IE_RECOVERY 14
#define GTP_FLAG_E 0x04
#define GTP_FLAG_S 0x02
#define GTP_FLAG_PN 0x01
#define EXT_PDU_SESSION_CONTAINER 0x85
// Longest extension chain walked; longer ones are treated as malformed (real N3 traffic
// carries one, the PDU Session Container).
#define MAX_EXT 4

#define AF_INET 2

// Keep in step with `Reason` in crates/upf-xdp/src/counters.rs.
enum reason {
	UL_FORWARDED = 0,
	DL_FORWARDED,
	DROP_TRUNCATED,
	DROP_UNKNOWN_TEID,
	DROP_BAD_EXTENSION,
	DROP_GATE_CLOSED,
	DROP_FAR,
	DROP_UE_MISMATCH,
	DROP_NO_ROUTE,
	DROP_MALFORMED,
	DROP_QFI_MISMATCH,
	DROP_MBR,
	PASS_SIGNALLING,
	PASS_BUFFER,
	PASS_TTL,
	PASS_NOT_FOR_US,
	PASS_NO_NEIGH,
	ECHO_ANSWERED,
	PASS_FRAGMENT,
	DROP_INNER_HEADER,
	REASON_MAX,
};

// Rule values: keep in step with crates/upf-xdp/src/maps.rs (repr(C) mirrors).
#define ACT_FORWARD 0
#define ACT_DROP 1
#define ACT_BUFFER 2
#define NO_QFI 0xff

// The MBR bucket of a rule lives in the rule's own map value, so it comes with the one
// lookup the packet needs anyway and goes away with the rule (no second map to clean up).
// The PFCP side folds all QERs of a PDR into one gate per direction (the lowest MBR, TS
// 29.244 §5.4.2), so the bucket is per rule and direction: uplink per TEID, downlink per
// UE address. A replaced rule (any Session Modification touching it) starts full again.
//
// One bucket shared by all CPUs under bpf_spin_lock, not per-CPU buckets of rate/ncpus:
// a single flow lands on one CPU (one RX queue / one veth sender), and per-CPU shares
// would cap it at MBR/ncpus. The lock is per rule, held for a handful of instructions, and
// only rules with an MBR take it.
//
// The bucket is in GCRA form (crates/upf/src/mbr.rs, `Policer`, runs the same arithmetic
// for the user-space paths and its unit tests): mbr_tat is the theoretical arrival time in
// bpf_ktime_get_ns nanoseconds; a packet of len octets costs len * 1e9 / mbr_rate ns and
// conforms when max(tat, now) + cost <= now + mbr_depth_ns. A zero mbr_tat is a full
// bucket. mbr_rate 0 means no MBR.
struct ul_rule {
	__u32 ue_ip;    // network order
	__u32 usage_id;
	__u8 has_usage;
	__u8 action;
	__u8 gate_open;
	__u8 qfi;       // NO_QFI when the PDR names none
	struct bpf_spin_lock lock;
	__u64 mbr_rate;     // octets per second of the inner IPv4 packets
	__u64 mbr_depth_ns; // bucket depth as time at mbr_rate
	__u64 mbr_tat;
};

struct dl_rule {
	__u32 teid;     // host order
	__u32 peer;     // network order
	__u32 usage_id;
	__u8 has_usage;
	__u8 action;
	__u8 gate_open;
	__u8 qfi;
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 mbr_rate;
	__u64 mbr_depth_ns;
	__u64 mbr_tat;
};

struct usage {
	__u64 ul_packets;
	__u64 ul_bytes;
	__u64 dl_packets;
	__u64 dl_bytes;
	__u64 dropped;
};

struct config {
	__u32 n3_addr;  // network order: outer source of downlink G-PDUs
	__u32 pad;
};

// Keyed by the whole TEID: the worker in its top bits (ids::upf) is not read here, so this
// program uses no identifier layout; build.rs still writes steer5g_ids.h (generated from
// crates/ids) for any program that needs one, rather than a repeated value.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct ul_rule);
} uplink SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct dl_rule);
} downlink SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct usage);
} usage SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, REASON_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} config SEC(".maps");

struct gtpu_hdr {
	__u8 flags;
	__u8 type;
	__be16 length;
	__be32 teid;
};

static __always_inline int count(__u32 r, int verdict)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &r);
	if (c)
		*c += 1;
	return verdict;
}

static __always_inline struct usage *usage_of(__u8 has, __u32 id)
{
	if (!has)
		return 0;
	return bpf_map_lookup_elem(&usage, &id);
}

static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

// The IPv4 header checksum (RFC 791 §3.1) over a 20-octet header.
static __always_inline __u16 ipv4_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;
#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	return csum_fold(sum);
}

// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') for one 16-bit word m changed to m'. One's
// complement sums do not depend on byte order, so the words are used as they lie.
static __always_inline __u16 csum_replace16(__u16 check, __u16 old, __u16 new)
{
	__u32 sum = (__u16)~check;
	sum += (__u16)~old;
	sum += new;
	return csum_fold(sum);
}

// Decrements an IPv4 header's TTL (RFC 1812 §5.3.1) and patches its checksum. The caller
// has made sure the TTL is above 1.
static __always_inline void ttl_decrement(struct iphdr *ip)
{
	// TTL and protocol share one 16-bit word of the header.
	__u16 *word = (__u16 *)&ip->ttl;
	__u16 old = *word;
	ip->ttl -= 1;
	ip->check = csum_replace16(ip->check, old, *word);
}

// Whether len octets fit the rule's MBR now; if they do they are taken from the bucket.
// The time is read before the lock: no helper calls are allowed while it is held.
#define MBR_ADMIT(rule, len)                                                                    \
	({                                                                                      \
		__u64 now_ = bpf_ktime_get_ns();                                                \
		__u64 rate_ = (rule)->mbr_rate;                                                 \
		__u64 cost_ = rate_ ? (__u64)(len) * 1000000000ULL / rate_ : 0;                 \
		int ok_ = 0;                                                                    \
		bpf_spin_lock(&(rule)->lock);                                                   \
		__u64 start_ = (rule)->mbr_tat > now_ ? (rule)->mbr_tat : now_;                 \
		if (start_ + cost_ <= now_ + (rule)->mbr_depth_ns) {                            \
			(rule)->mbr_tat = start_ + cost_;                                       \
			ok_ = 1;                                                                \
		}                                                                               \
		bpf_spin_unlock(&(rule)->lock);                                                 \
		ok_;                                                                            \
	})

// Fills a FIB lookup toward `dst`; returns the helper's verdict.
static __always_inline int fib(struct xdp_md *ctx, struct bpf_fib_lookup *p, __u32 src, __u32 dst,
			       __u16 tot_len)
{
	__builtin_memset(p, 0, sizeof(*p));
	p->family = AF_INET;
	p->ipv4_src = src;
	p->ipv4_dst = dst;
	p->tot_len = tot_len;
	p->ifindex = ctx->ingress_ifindex;
	return bpf_fib_lookup(ctx, p, sizeof(*p), 0);
}

// The last checks before a packet the rule lets through is forwarded, the same both ways:
// the route towards dst (fib_len octets on the wire) and then the rule's MBR on the len
// octets of the inner packet. An unresolved neighbour passes the packet to the kernel,
// which resolves it while the user-space path carries the packet. Policed last, so only
// packets this program forwards are charged to the bucket. FORWARD, or the counted verdict.
#define FORWARD (-1)
#define ROUTE_AND_POLICE(ctx, p, src, dst, fib_len, rule, u, len)                              \
	({                                                                                      \
		int v_ = FORWARD;                                                               \
		int rc_ = fib(ctx, p, src, dst, fib_len);                                       \
		if (rc_ == BPF_FIB_LKUP_RET_NO_NEIGH) {                                         \
			v_ = count(PASS_NO_NEIGH, XDP_PASS);                                    \
		} else if (rc_ != BPF_FIB_LKUP_RET_SUCCESS) {                                   \
			v_ = count(DROP_NO_ROUTE, XDP_DROP);                                    \
		} else if ((rule)->mbr_rate && !MBR_ADMIT(rule, len)) {                         \
			if (u)                                                                  \
				(u)->dropped += 1;                                              \
			v_ = count(DROP_MBR, XDP_DROP);                                         \
		}                                                                               \
		v_;                                                                             \
	})

// An Echo Response (TS 29.281 §7.2.2) is an 8-octet header, the 4 optional octets with the
// request's sequence number, and the Recovery IE (§8.2: type 14, restart counter 0).
#define ECHO_GTP_LEN (sizeof(struct gtpu_hdr) + 4 + 2)
#define ECHO_FRAME (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr) + ECHO_GTP_LEN)

// Answers the Echo Request in the frame (whose Ethernet, 20-octet IPv4, UDP and GTP-U headers
// the caller checked) on the interface it came in on: addresses and ports swapped (§4.4.2.2:
// the response goes to the request's source port, from 2152), the frame cut or grown to the
// response. Not addressed to the N3 address, or a frame that cannot be resized: to the kernel.
static __always_inline int echo_reply(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	struct gtpu_hdr *gtp = (void *)(udp + 1);
	if ((void *)(gtp + 1) > data_end)
		return count(DROP_TRUNCATED, XDP_DROP);
	__u32 key = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &key);
	if (!cfg || ip->daddr != cfg->n3_addr)
		return count(PASS_SIGNALLING, XDP_PASS);
	// §5.1: the sequence number is there when S is set (an Echo Request sets it, §7.2.1).
	__u16 seq = 0;
	if (gtp->flags & GTP_FLAG_S) {
		__u16 *s = (void *)(gtp + 1);
		if ((void *)(s + 1) > data_end)
			return count(DROP_TRUNCATED, XDP_DROP);
		seq = *s; // kept in network order
	}
	__u8 peer_mac[ETH_ALEN];
	__builtin_memcpy(peer_mac, eth->h_source, ETH_ALEN);
	__u8 own_mac[ETH_ALEN];
	__builtin_memcpy(own_mac, eth->h_dest, ETH_ALEN);
	__u32 peer = ip->saddr, own = ip->daddr;
	__u16 peer_port = udp->source;
	int delta = (int)ECHO_FRAME - (int)(data_end - data);
	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return count(PASS_SIGNALLING, XDP_PASS);
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + ECHO_FRAME > data_end)
		return count(DROP_MALFORMED, XDP_DROP);
	eth = data;
	ip = (void *)(eth + 1);
	udp = (void *)(ip + 1);
	gtp = (void *)(udp + 1);
	__u8 *opt = (void *)(gtp + 1);
	__builtin_memcpy(eth->h_dest, peer_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, own_mac, ETH_ALEN);
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 0;
	ip->tot_len = bpf_htons(sizeof(*ip) + sizeof(*udp) + ECHO_GTP_LEN);
	ip->id = 0;
	ip->frag_off = bpf_htons(0x4000); // DF
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = own;
	ip->daddr = peer;
	ip->check = 0;
	ip->check = ipv4_csum(ip);
	udp->source = bpf_htons(GTPU_PORT);
	udp->dest = peer_port;
	udp->len = bpf_htons(sizeof(*udp) + ECHO_GTP_LEN);
	udp->check = 0; // RFC 768: no checksum, allowed over IPv4 (TS 29.281 §4.4.2.0)
	gtp->flags = 0x30 | GTP_FLAG_S;
	gtp->type = GTP_ECHO_RESPONSE;
	gtp->length = bpf_htons(ECHO_GTP_LEN - sizeof(*gtp));
	gtp->teid = 0; // §7.2.2: TEID 0 on path management messages
	__builtin_memcpy(opt, &seq, 2);
	opt[2] = 0; // N-PDU number
	opt[3] = 0; // no extension header
	opt[4] = GTP_IE_RECOVERY;
	opt[5] = 0; // §8.2: restart counter 0 in GTP-U
	return count(ECHO_ANSWERED, XDP_TX);
}

// The IPv4 header after the Ethernet header of the frame, or NULL for anything else.
static __always_inline struct iphdr *outer_ipv4(void *data, void *data_end)
{
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end)
		return 0;
	return ip;
}

SEC("xdp")
int upf_n3(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *ip = outer_ipv4(data, data_end);
	if (!ip)
		return count(PASS_NOT_FOR_US, XDP_PASS);
	// An outer fragment (MF set or an offset) may be part of a G-PDU: the kernel reassembles
	// it and hands the datagram to the user-space path's GTP-U socket, so nothing is lost.
	if (ip->protocol == IPPROTO_UDP && (ip->frag_off & bpf_htons(0x3fff)))
		return count(PASS_FRAGMENT, XDP_PASS);
	// Options are rare on N3; the kernel path handles them.
	if (ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return count(PASS_NOT_FOR_US, XDP_PASS);
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return count(PASS_NOT_FOR_US, XDP_PASS);
	if (udp->dest != bpf_htons(GTPU_PORT))
		return count(PASS_NOT_FOR_US, XDP_PASS);

	// From here on it is GTP-U addressed to us: malformed means dropped, never forwarded.
	struct gtpu_hdr *gtp = (void *)(udp + 1);
	if ((void *)(gtp + 1) > data_end)
		return count(DROP_TRUNCATED, XDP_DROP);
	// TS 29.281 §5.1: version 1, PT 1.
	if ((gtp->flags & 0xf0) != 0x30)
		return count(DROP_MALFORMED, XDP_DROP);
	if (gtp->type == GTP_ECHO_REQUEST)
		return echo_reply(ctx);
	if (gtp->type != GTP_TPDU)
		return count(PASS_SIGNALLING, XDP_PASS);
	__u32 gtp_len = bpf_ntohs(gtp->length);
	// The length field covers everything after the first 8 octets; the packet must hold it.
	void *gtp_end = (void *)(gtp + 1) + gtp_len;
	if (gtp_end > data_end)
		return count(DROP_TRUNCATED, XDP_DROP);

	__u32 teid = bpf_ntohl(gtp->teid);
	struct ul_rule *rule = bpf_map_lookup_elem(&uplink, &teid);
	if (!rule)
		return count(DROP_UNKNOWN_TEID, XDP_DROP);

	__u32 off = sizeof(*gtp);
	__u8 qfi = NO_QFI;
	if (gtp->flags & (GTP_FLAG_E | GTP_FLAG_S | GTP_FLAG_PN)) {
		__u8 *opt = (void *)(gtp + 1);
		if ((void *)(opt + 4) > gtp_end || (void *)(opt + 4) > data_end)
			return count(DROP_TRUNCATED, XDP_DROP);
		off += 4;
		__u8 next = (gtp->flags & GTP_FLAG_E) ? opt[3] : 0;
		for (int i = 0; i < MAX_EXT; i++) {
			if (next == 0)
				break;
			__u8 *ext = (__u8 *)gtp + off;
			if ((void *)(ext + 1) > data_end || (void *)(ext + 1) > gtp_end)
				return count(DROP_BAD_EXTENSION, XDP_DROP);
			__u32 units = ext[0];
			// §5.2.1: the length is in 4-octet units and never 0.
			if (units == 0)
				return count(DROP_BAD_EXTENSION, XDP_DROP);
			__u32 len = units * 4;
			if (len > 64)
				return count(DROP_BAD_EXTENSION, XDP_DROP);
			if ((void *)ext + len > gtp_end || (void *)ext + len > data_end)
				return count(DROP_BAD_EXTENSION, XDP_DROP);
			if (next == EXT_PDU_SESSION_CONTAINER) {
				// TS 38.415 §5.5.2.2: octet 2 carries the QFI in its low 6 bits.
				if (len < 4)
					return count(DROP_BAD_EXTENSION, XDP_DROP);
				__u8 *c = ext + 1;
				if ((void *)(c + 2) > data_end)
					return count(DROP_BAD_EXTENSION, XDP_DROP);
				// PDU type 1 = UL PDU SESSION INFORMATION; anything else is not uplink.
				if ((c[0] >> 4) != 1)
					return count(DROP_BAD_EXTENSION, XDP_DROP);
				qfi = c[1] & 0x3f;
			} else if (next & 0x80) {
				// An unknown type whose bits 8-7 say comprehension is required: the
				// receiver discards the packet (§5.2.1). We know only the container.
				return count(DROP_BAD_EXTENSION, XDP_DROP);
			}
			__u8 *nextp = ext + len - 1;
			if ((void *)(nextp + 1) > data_end)
				return count(DROP_BAD_EXTENSION, XDP_DROP);
			next = *nextp;
			off += len;
		}
		if (next != 0)
			return count(DROP_BAD_EXTENSION, XDP_DROP);
	}
	if (rule->qfi != NO_QFI && qfi != NO_QFI && qfi != rule->qfi)
		return count(DROP_QFI_MISMATCH, XDP_DROP);

	if (off > 8 + 4 + MAX_EXT * 64)
		return count(DROP_BAD_EXTENSION, XDP_DROP);
	struct iphdr *inner = (void *)gtp + off;
	if ((void *)(inner + 1) > data_end || (void *)(inner + 1) > gtp_end)
		return count(DROP_TRUNCATED, XDP_DROP);
	// RFC 791 §3.1: version 4, IHL ≥ 5, IHL × 4 ≤ Total Length ≤ what arrived.
	if (inner->version != 4)
		return count(DROP_MALFORMED, XDP_DROP);
	__u32 inner_hlen = inner->ihl * 4;
	if (inner_hlen < sizeof(*inner))
		return count(DROP_INNER_HEADER, XDP_DROP);
	__u32 inner_len = bpf_ntohs(inner->tot_len);
	if ((void *)inner + inner_len > gtp_end)
		return count(DROP_TRUNCATED, XDP_DROP);
	if (inner_len < inner_hlen)
		return count(DROP_INNER_HEADER, XDP_DROP);
	// Source address validation: a UE sends only from its own address.
	if (inner->saddr != rule->ue_ip)
		return count(DROP_UE_MISMATCH, XDP_DROP);

	struct usage *u = usage_of(rule->has_usage, rule->usage_id);
	if (!rule->gate_open || rule->action == ACT_DROP) {
		if (u)
			u->dropped += 1;
		return count(rule->gate_open ? DROP_FAR : DROP_GATE_CLOSED, XDP_DROP);
	}
	// A packet whose TTL would expire here needs an ICMP Time Exceeded (RFC 1812 §5.3.1),
	// which the kernel's forwarding path sends: pass it up rather than drop it silently.
	if (inner->ttl <= 1)
		return count(PASS_TTL, XDP_PASS);

	struct bpf_fib_lookup p;
	int v = ROUTE_AND_POLICE(ctx, &p, inner->saddr, inner->daddr, inner_len, rule, u, inner_len);
	if (v != FORWARD)
		return v;
	ttl_decrement(inner);
	if (u) {
		u->ul_packets += 1;
		u->ul_bytes += inner_len;
	}
	// Outer header removal: the new frame starts 14 octets before the inner IPv4 header.
	int shrink = (void *)inner - data - (int)sizeof(struct ethhdr);
	if (bpf_xdp_adjust_head(ctx, shrink))
		return count(DROP_MALFORMED, XDP_DROP);
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return count(DROP_MALFORMED, XDP_DROP);
	__builtin_memcpy(eth->h_dest, p.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, p.smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	count(UL_FORWARDED, 0);
	return bpf_redirect(p.ifindex, 0);
}

// Octets pushed in front of the inner packet: IPv4 + UDP + GTP-U, and with a PDU Session
// Container the 4 optional octets and one 4-octet extension.
#define ENCAP_PLAIN (sizeof(struct iphdr) + sizeof(struct udphdr) + sizeof(struct gtpu_hdr))
#define ENCAP_PSC (ENCAP_PLAIN + 8)

SEC("xdp")
int upf_n6(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *ip = outer_ipv4(data, data_end);
	if (!ip)
		return count(PASS_NOT_FOR_US, XDP_PASS);
	__u32 dst = ip->daddr;
	struct dl_rule *rule = bpf_map_lookup_elem(&downlink, &dst);
	if (!rule)
		return count(PASS_NOT_FOR_US, XDP_PASS);
	// The packet is a session's: its header holds together before it is tunnelled.
	if (ip->version != 4)
		return count(DROP_MALFORMED, XDP_DROP);
	__u32 inner_hlen = ip->ihl * 4;
	if (inner_hlen < sizeof(*ip))
		return count(DROP_INNER_HEADER, XDP_DROP);
	__u32 inner_len = bpf_ntohs(ip->tot_len);
	if ((void *)ip + inner_len > data_end || inner_len > 0xffff - ENCAP_PSC)
		return count(DROP_TRUNCATED, XDP_DROP);
	if (inner_len < inner_hlen)
		return count(DROP_INNER_HEADER, XDP_DROP);

	struct usage *u = usage_of(rule->has_usage, rule->usage_id);
	if (!rule->gate_open || rule->action == ACT_DROP) {
		if (u)
			u->dropped += 1;
		return count(rule->gate_open ? DROP_FAR : DROP_GATE_CLOSED, XDP_DROP);
	}
	if (rule->action == ACT_BUFFER)
		return count(PASS_BUFFER, XDP_PASS);
	if (ip->ttl <= 1)
		return count(PASS_TTL, XDP_PASS);

	__u32 key = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &key);
	if (!cfg)
		return count(DROP_NO_ROUTE, XDP_DROP);
	__u32 src = cfg->n3_addr;
	__u32 peer = rule->peer;
	__u32 teid = rule->teid;
	__u8 qfi = rule->qfi;
	int psc = qfi != NO_QFI;
	__u32 encap = psc ? ENCAP_PSC : ENCAP_PLAIN;

	struct bpf_fib_lookup p;
	int v = ROUTE_AND_POLICE(ctx, &p, src, peer, inner_len + encap, rule, u, inner_len);
	if (v != FORWARD)
		return v;
	ttl_decrement(ip);
	if (u) {
		u->dl_packets += 1;
		u->dl_bytes += inner_len;
	}
	if (bpf_xdp_adjust_head(ctx, -(int)encap))
		return count(DROP_MALFORMED, XDP_DROP);
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *o = (void *)(eth + 1);
	struct udphdr *udp = (void *)(o + 1);
	struct gtpu_hdr *gtp = (void *)(udp + 1);
	__u8 *opt = (void *)(gtp + 1);
	if ((void *)(opt + 8) > data_end)
		return count(DROP_MALFORMED, XDP_DROP);

	__builtin_memcpy(eth->h_dest, p.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, p.smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);

	__u32 gtp_payload = inner_len + (psc ? 8 : 0);
	o->version = 4;
	o->ihl = 5;
	o->tos = 0;
	o->tot_len = bpf_htons(inner_len + encap);
	o->id = 0;
	o->frag_off = bpf_htons(0x4000); // DF
	o->ttl = 64;
	o->protocol = IPPROTO_UDP;
	o->check = 0;
	o->saddr = src;
	o->daddr = peer;
	o->check = ipv4_csum(o);

	udp->source = bpf_htons(GTPU_PORT);
	udp->dest = bpf_htons(GTPU_PORT);
	udp->len = bpf_htons(sizeof(*udp) + sizeof(*gtp) + gtp_payload);
	udp->check = 0; // RFC 768: zero means no checksum, allowed over IPv4 (TS 29.281 §4.4.2.0)

	gtp->type = GTP_TPDU;
	gtp->length = bpf_htons(gtp_payload);
	gtp->teid = bpf_htonl(teid);
	if (psc) {
		gtp->flags = 0x30 | GTP_FLAG_E;
		opt[0] = 0; // sequence number
		opt[1] = 0;
		opt[2] = 0; // N-PDU number
		opt[3] = EXT_PDU_SESSION_CONTAINER;
		opt[4] = 1;   // one 4-octet unit
		opt[5] = 0;   // PDU type 0: DL PDU SESSION INFORMATION (TS 38.415 §5.5.2.1)
		opt[6] = qfi & 0x3f;
		opt[7] = 0;   // no next extension
	} else {
		gtp->flags = 0x30;
	}
	count(DL_FORWARDED, 0);
	return bpf_redirect(p.ifindex, 0);
}

char LICENSE[] SEC("license") = "GPL";
