//! The stages the probe measures, in the order of their slots in the BPF maps.
//!
//! This file is also compiled into build.rs, which writes `probe_stages.h` from it for
//! `bpf/probe.c`: the slot numbers exist once, here. So it uses nothing but `core`.

/// One measured stage of the receive path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stage {
    /// The name in the report: the tracepoint's name, or `softirq_net_rx*` / `sys_*`.
    pub name: &'static str,
    /// The tracepoints that bound it.
    pub source: &'static str,
    /// What its time is, or `None` for a stage that is only counted.
    pub time: Option<&'static str>,
    /// What reference 004 calls the part of the path it stands for.
    pub reference_004: &'static str,
}

/// Histogram buckets per timed stage, log-linear (`hist::bucket`): four per power of two,
/// the last one holding everything from about 2.1 s up.
pub const HIST: usize = 128;

/// Slots of the `extras` counters.
pub const EXTRA_NAPI_PACKETS: u32 = 0;
/// NAPI polls that used their whole budget (the driver had more than it could take).
pub const EXTRA_NAPI_FULL_BUDGET: u32 = 1;
/// How many `extras` slots there are.
pub const EXTRAS: u32 = 2;

/// Slots of the `drops` counters (enum skb_drop_reason); the last takes every larger value.
pub const DROP_REASONS: u32 = 256;

/// Every stage, by slot.
pub const STAGES: [Stage; 19] = [
    Stage {
        name: "napi_poll",
        source: "softirq_entry or the previous napi_poll -> napi:napi_poll",
        time: Some("one NAPI poll (the backlog's too), all its packets' protocol work included"),
        reference_004: "NAPI poll (net_rx_action -> napi_complete_done)",
    },
    Stage {
        name: "netif_rx",
        source: "net:netif_rx_entry -> net:netif_rx_exit",
        time: Some("enqueue to the per-CPU backlog (veth without NAPI, loopback)"),
        reference_004: "driver: netif_rx",
    },
    Stage {
        name: "napi_gro_receive",
        source: "net:napi_gro_receive_entry -> net:napi_gro_receive_exit",
        time: Some("GRO for a NAPI driver's packet (a merged packet's delivery included)"),
        reference_004: "GRO",
    },
    Stage {
        name: "netif_receive_skb",
        source: "net:netif_receive_skb -> the next boundary on that CPU",
        time: Some(
            "L2, IP and transport up to the socket queue: one stage, since no tracepoint \
             separates them without kprobes",
        ),
        reference_004: "netif_receive_skb + ip_rcv + ip_local_deliver + udp_rcv (merged)",
    },
    Stage {
        name: "softirq_net_rx",
        source: "irq:softirq_entry -> irq:softirq_exit, vector NET_RX",
        time: Some("one NET_RX softirq that handled a matching packet"),
        reference_004: "NET_RX softirq",
    },
    Stage {
        name: "softirq_net_rx_thread",
        source: "softirq_net_rx run by ksoftirqd",
        time: Some("one NET_RX softirq in the softirq thread"),
        reference_004: "ksoftirqd",
    },
    Stage {
        name: "softirq_net_rx_borrowed",
        source: "softirq_net_rx run inside another task",
        time: Some("one NET_RX softirq charged by /proc and top to the task it interrupted"),
        reference_004: "softirq on irq exit or local_bh_enable",
    },
    Stage {
        name: "sched_wakeup",
        source: "sched:sched_wakeup -> sched:sched_switch onto a CPU",
        time: Some("from the wake-up of the receiver to its running"),
        reference_004: "wake-up and scheduling",
    },
    Stage {
        name: "skb_copy_datagram_iovec",
        source: "first sight of the skb -> skb:skb_copy_datagram_iovec",
        time: Some("latency from the driver to the application's read, keyed by skb"),
        reference_004: "end to end",
    },
    Stage {
        name: "read_by_sequence",
        source: "first sight of a tagged datagram -> the receive syscall's return",
        time: Some(
            "latency from the driver to the application's read, keyed by the flow and \
             sequence tag of the probe's generator (UDP copies without a tracepoint)",
        ),
        reference_004: "end to end",
    },
    Stage {
        name: "sys_recvfrom",
        source: "raw_syscalls:sys_enter -> sys_exit, recvfrom",
        time: Some("one recvfrom"),
        reference_004: "application read",
    },
    Stage {
        name: "sys_recvmsg",
        source: "raw_syscalls:sys_enter -> sys_exit, recvmsg",
        time: Some("one recvmsg"),
        reference_004: "application read",
    },
    Stage {
        name: "sys_recvmmsg",
        source: "raw_syscalls:sys_enter -> sys_exit, recvmmsg",
        time: Some("one recvmmsg"),
        reference_004: "application read",
    },
    Stage {
        name: "sys_read",
        source: "raw_syscalls:sys_enter -> sys_exit, read",
        time: Some("one read (TUN, TCP)"),
        reference_004: "application read",
    },
    Stage {
        name: "sys_epoll_wait",
        source: "raw_syscalls:sys_enter -> sys_exit, epoll_wait and epoll_pwait",
        time: Some("one wait for readiness, idle time included"),
        reference_004: "application wait",
    },
    Stage {
        name: "kfree_skb",
        source: "skb:kfree_skb",
        time: None,
        reference_004: "drops (by reason)",
    },
    Stage {
        name: "consume_skb",
        source: "skb:consume_skb",
        time: None,
        reference_004: "freed after use",
    },
    Stage {
        name: "udp_fail_queue_rcv_skb",
        source: "udp:udp_fail_queue_rcv_skb",
        time: None,
        reference_004: "UDP socket queue full",
    },
    Stage {
        name: "sock_rcvqueue_full",
        source: "sock:sock_rcvqueue_full",
        time: None,
        reference_004: "socket receive queue full",
    },
];

/// The slot of the stage called `name`.
pub const fn slot(name: &str) -> Option<u32> {
    let mut i = 0;
    while i < STAGES.len() {
        if eq(STAGES[i].name.as_bytes(), name.as_bytes()) {
            return Some(i as u32);
        }
        i += 1;
    }
    None
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The C header `bpf/probe.c` includes: `S5P_STAGE_<NAME>` per slot and the sizes.
pub fn c_header() -> String {
    let mut h = String::from("// Generated from crates/probe/src/stages.rs by build.rs.\n");
    h.push_str("#pragma once\n");
    for (i, s) in STAGES.iter().enumerate() {
        h.push_str(&format!(
            "#define S5P_STAGE_{} {i}\n",
            s.name.to_ascii_uppercase()
        ));
    }
    h.push_str(&format!("#define S5P_STAGES {}\n", STAGES.len()));
    h.push_str(&format!("#define S5P_HIST {HIST}\n"));
    h.push_str(&format!(
        "#define S5P_EXTRA_NAPI_PACKETS {EXTRA_NAPI_PACKETS}\n"
    ));
    h.push_str(&format!(
        "#define S5P_EXTRA_NAPI_FULL_BUDGET {EXTRA_NAPI_FULL_BUDGET}\n"
    ));
    h.push_str(&format!("#define S5P_EXTRAS {EXTRAS}\n"));
    h.push_str(&format!("#define S5P_DROP_REASONS {DROP_REASONS}\n"));
    h
}
