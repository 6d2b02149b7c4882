//! The traffic engine: UE traffic over GTP-U for many sessions at once, the way a load
//! generator offers it to a UPF, and the report of what came back.
//!
//! A [`TrafficPlan`] says what to send (UDP datagrams to an echo port or ICMP echo
//! requests, of one inner IP packet length), how fast over all sessions together, and for
//! how long: a probe count and a wall-clock limit, whichever comes first, then a drain wait
//! for late replies. [`run`] drives it from the caller's socket (the gNB's N3 socket,
//! bound in the ran namespace on port 2152) and returns a [`TrafficReport`].
//!
//! The packet work is the sans-IO [`UserPlane`]; the report is computed by
//! [`TrafficReport::from_stats`] from its counters, so both are unit-tested without a
//! socket. The socket loop is [`super::udp::run_timed`]: plain `send_to`/`recv`, which at
//! the rates a 2-core machine offers (tens of kpps) is not what limits a run.

use std::net::{Ipv4Addr, UdpSocket};
use std::time::Duration;

use pfcp::gtpu::{ExtHeader, PduSessionContainer, Repr};
use serde::Serialize;
use thiserror::Error;

use super::udp::{run_timed, RunLimits, RunOutcome};
use super::{FlowConfig, ProbeKind, UpError, UpSession, UpStats, UserPlane, GTPU_PORT};

/// The smallest inner packet a plan may ask for (octets).
pub const MIN_PACKET: usize = 64;
/// The largest: 1400 keeps the G-PDU (inner + 44 octets of outer headers) under a
/// 1500-octet MTU.
pub const MAX_PACKET: usize = 1400;
/// Outer IPv4 (20) and UDP (8) headers of a G-PDU.
const OUTER_IP_UDP: usize = 28;
/// Points kept in a report's CDF.
const CDF_POINTS: usize = 200;
/// UDP source port of every UE's probes (UE addresses differ, so flows stay distinct).
const UE_PORT: u16 = 40000;

/// The inner packets of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TrafficKind {
    /// UDP datagrams to `dst_port` on the DN host, which echoes them (RFC 862).
    Udp {
        /// The echo port.
        dst_port: u16,
    },
    /// ICMP echo requests (RFC 792), answered by the DN host's kernel.
    Icmp,
}

impl TrafficKind {
    /// "udp" or "icmp".
    pub fn name(self) -> &'static str {
        match self {
            TrafficKind::Udp { .. } => "udp",
            TrafficKind::Icmp => "icmp",
        }
    }
}

/// What to send, how fast and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrafficPlan {
    /// UDP or ICMP probes.
    pub kind: TrafficKind,
    /// The DN host the probes go to.
    pub dn: Ipv4Addr,
    /// The inner IP packet's length in octets, [`MIN_PACKET`]..=[`MAX_PACKET`].
    pub packet_size: usize,
    /// Packets per second over all sessions together, spread evenly in time and
    /// round-robin over the sessions.
    pub rate_pps: u64,
    /// Packets to send in all.
    pub count: u64,
    /// Wall-clock limit of the sending.
    pub max_duration: Duration,
    /// How long after the last send replies are still awaited.
    pub drain: Duration,
    /// UDP port of the UPF's GTP-U endpoint.
    pub upf_port: u16,
}

impl TrafficPlan {
    /// UDP echo probes of `packet_size` octets to `dn` port 7, `rate_pps` for `count`
    /// packets, at most 10 s of sending and 1 s of drain.
    pub fn udp(dn: Ipv4Addr, packet_size: usize, rate_pps: u64, count: u64) -> Self {
        TrafficPlan {
            kind: TrafficKind::Udp { dst_port: 7 },
            dn,
            packet_size,
            rate_pps,
            count,
            max_duration: Duration::from_secs(10),
            drain: Duration::from_secs(1),
            upf_port: GTPU_PORT,
        }
    }

    /// The same plan with ICMP echo probes.
    pub fn icmp(self) -> Self {
        TrafficPlan {
            kind: TrafficKind::Icmp,
            ..self
        }
    }

    /// Checks the plan's bounds.
    pub fn validate(&self) -> Result<(), TrafficError> {
        if !(MIN_PACKET..=MAX_PACKET).contains(&self.packet_size) {
            return Err(TrafficError::PacketSize(self.packet_size));
        }
        if self.rate_pps == 0 {
            return Err(TrafficError::Rate);
        }
        if self.count == 0 || self.max_duration.is_zero() {
            return Err(TrafficError::Unbounded);
        }
        Ok(())
    }

    fn flow(&self) -> FlowConfig {
        FlowConfig {
            dn: self.dn,
            kind: match self.kind {
                TrafficKind::Udp { dst_port } => ProbeKind::Udp {
                    src_port: UE_PORT,
                    dst_port,
                },
                TrafficKind::Icmp => ProbeKind::IcmpEcho,
            },
            inner_size: self.packet_size,
            upf_port: self.upf_port,
        }
    }
}

/// A plan that cannot run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TrafficError {
    /// The packet size is outside 64..=1400.
    #[error("packet size {0} is not in {MIN_PACKET}..={MAX_PACKET} octets")]
    PacketSize(usize),
    /// A rate of zero.
    #[error("the rate must be at least 1 packet/s")]
    Rate,
    /// A count or duration of zero.
    #[error("the run needs a packet count and a duration above zero")]
    Unbounded,
    /// No session to send on.
    #[error("no session to send on")]
    NoSessions,
    /// The sessions cannot be used (two with one TEID).
    #[error("sessions: {0}")]
    Sessions(#[from] UpError),
    /// The socket failed.
    #[error("N3 socket: {0}")]
    Io(#[from] std::io::Error),
}

/// Round-trip percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Fastest.
    pub min_us: u64,
    /// Median.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Slowest.
    pub max_us: u64,
    /// Mean.
    pub mean_us: f64,
}

/// One point of the latency CDF: `fraction` of the replies took at most `latency_us`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CdfPoint {
    /// Round trip, microseconds.
    pub latency_us: u64,
    /// Share of replies at or below it, 0..=1.
    pub fraction: f64,
}

/// What a run sent and got back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrafficReport {
    /// "udp" or "icmp".
    pub kind: &'static str,
    /// Sessions the packets were spread over.
    pub sessions: usize,
    /// Inner IP packet length, octets.
    pub packet_size: usize,
    /// The G-PDU's length on the wire (outer IPv4 and UDP, GTP-U header with its PDU
    /// Session Container, inner packet), octets.
    pub wire_size: usize,
    /// The offered rate asked for, packets/s.
    pub target_pps: u64,
    /// Probes sent.
    pub sent: u64,
    /// Replies matched to a probe.
    pub received: u64,
    /// Probes never answered.
    pub lost: u64,
    /// `lost / sent` (0 when nothing was sent).
    pub loss_ratio: f64,
    /// Replies to a probe already answered.
    pub duplicates: u64,
    /// Downlink datagrams that were no reply to a probe of ours (unknown TEID, bad
    /// checksum, wrong addresses).
    pub bad: u64,
    /// Seconds from the first to the last send.
    pub send_secs: f64,
    /// Seconds of the whole run, drain included.
    pub total_secs: f64,
    /// Probes sent per second of sending.
    pub achieved_pps: f64,
    /// Inner IP bits per second the UPF forwarded (uplink sent plus downlink received),
    /// in Gbit/s over the sending time.
    pub inner_gbps: f64,
    /// The same on the wire, G-PDU bytes (outer headers included).
    pub wire_gbps: f64,
    /// Round trips; `None` when no reply came.
    pub latency: Option<LatencySummary>,
    /// The latency CDF, at most 200 points, fractions rising to 1.
    pub cdf: Vec<CdfPoint>,
}

/// The G-PDU length carrying an inner packet of `inner` octets with a PDU Session
/// Container (TS 29.281 §5.2, TS 38.415 §5.5.2).
fn wire_size(inner: usize) -> usize {
    let mut gtp = Repr::g_pdu(0, inner);
    gtp.extensions
        .push(ExtHeader::PduSessionContainer(PduSessionContainer::uplink(
            0,
        )));
    OUTER_IP_UDP + gtp.header_len() + inner
}

fn gbps(packets: u64, size: usize, secs: f64) -> f64 {
    if secs <= 0.0 {
        return 0.0;
    }
    packets as f64 * size as f64 * 8.0 / secs / 1e9
}

impl TrafficReport {
    /// The report of a run of `plan` over `sessions` sessions whose user plane ended with
    /// `stats`, having sent for `send` and run for `total`.
    pub fn from_stats(
        plan: &TrafficPlan,
        sessions: usize,
        stats: &UpStats,
        send: Duration,
        total: Duration,
    ) -> Self {
        let h = &stats.latency_us;
        let latency = (!h.is_empty()).then(|| LatencySummary {
            min_us: h.min(),
            p50_us: h.value_at_quantile(0.5),
            p90_us: h.value_at_quantile(0.9),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
            mean_us: h.mean(),
        });
        let all: Vec<CdfPoint> = h
            .iter_recorded()
            .map(|v| CdfPoint {
                latency_us: h.highest_equivalent(v.value_iterated_to()),
                fraction: v.quantile_iterated_to(),
            })
            .collect();
        let cdf = thin(all, CDF_POINTS);
        let send_secs = send.as_secs_f64();
        let wire = wire_size(plan.packet_size);
        let forwarded = stats.sent.saturating_add(stats.received);
        TrafficReport {
            kind: plan.kind.name(),
            sessions,
            packet_size: plan.packet_size,
            wire_size: wire,
            target_pps: plan.rate_pps,
            sent: stats.sent,
            received: stats.received,
            lost: stats.lost,
            loss_ratio: if stats.sent == 0 {
                0.0
            } else {
                stats.lost as f64 / stats.sent as f64
            },
            duplicates: stats.late_or_duplicate,
            bad: stats.malformed.saturating_add(stats.unknown_teid),
            send_secs,
            total_secs: total.as_secs_f64(),
            achieved_pps: if send_secs > 0.0 {
                stats.sent as f64 / send_secs
            } else {
                0.0
            },
            inner_gbps: gbps(forwarded, plan.packet_size, send_secs),
            wire_gbps: gbps(forwarded, wire, send_secs),
            latency,
            cdf,
        }
    }

    /// The report as text lines, for a terminal.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![
            format!(
                "{} probes of {} B inner ({} B on the wire) over {} sessions, target {} pps",
                self.kind, self.packet_size, self.wire_size, self.sessions, self.target_pps
            ),
            format!(
                "sent {}  received {}  lost {} ({:.3}%)  duplicates {}  bad {}",
                self.sent,
                self.received,
                self.lost,
                self.loss_ratio * 100.0,
                self.duplicates,
                self.bad
            ),
            format!(
                "achieved {:.0} pps over {:.2} s; {:.4} Gbit/s inner, {:.4} Gbit/s GTP-U on the wire (both directions)",
                self.achieved_pps, self.send_secs, self.inner_gbps, self.wire_gbps
            ),
        ];
        out.push(match &self.latency {
            Some(l) => format!(
                "latency µs: min {} p50 {} p90 {} p99 {} p99.9 {} max {} (mean {:.1})",
                l.min_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us, l.mean_us
            ),
            None => "latency: no reply".to_owned(),
        });
        out
    }
}

/// At most `n` points of `all`, evenly spaced by index, the last always kept.
fn thin(all: Vec<CdfPoint>, n: usize) -> Vec<CdfPoint> {
    if all.len() <= n || n < 2 {
        return all;
    }
    let last = all.len() - 1;
    (0..n)
        .filter_map(|i| all.get(i * last / (n - 1)).copied())
        .collect()
}

/// Sends `plan` over `sessions` from `sock` (the gNB's N3 socket) and reports. The socket
/// is switched to non-blocking.
pub fn run(
    plan: &TrafficPlan,
    sessions: &[UpSession],
    sock: &UdpSocket,
) -> Result<TrafficReport, TrafficError> {
    plan.validate()?;
    if sessions.is_empty() {
        return Err(TrafficError::NoSessions);
    }
    let mut up = UserPlane::new(plan.flow(), sessions.to_vec())?;
    // The loop's own limit covers sending and drain together; capping the count at what
    // the rate fills in `max_duration` keeps the sending inside its share.
    let in_time = (u128::from(plan.rate_pps) * plan.max_duration.as_millis() / 1000).max(1);
    let count = u64::try_from(in_time).map_or(plan.count, |n| n.min(plan.count));
    let RunOutcome {
        send_time,
        total_time,
        ..
    } = run_timed(
        &mut up,
        sock,
        RunLimits {
            rate_pps: plan.rate_pps,
            count,
            max_duration: plan.max_duration.saturating_add(plan.drain),
            drain: plan.drain,
        },
    )?;
    Ok(TrafficReport::from_stats(
        plan,
        sessions.len(),
        up.stats(),
        send_time,
        total_time,
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::userplane::reflect_gpdu;
    use proto::ngap::GtpTunnel;

    fn sessions(n: u32) -> Vec<UpSession> {
        (0..n)
            .map(|i| UpSession {
                ue_ip: Ipv4Addr::from(0x0acb_4001 + i),
                upf: GtpTunnel {
                    addr: Ipv4Addr::LOCALHOST,
                    teid: 0x100 + i,
                },
                gnb_teid: 0x200 + i,
                qfi: 1,
            })
            .collect()
    }

    fn plan() -> TrafficPlan {
        TrafficPlan::udp(Ipv4Addr::new(10, 203, 6, 2), 100, 1000, 10)
    }

    #[test]
    fn plans_out_of_bounds_are_refused() {
        let p = plan();
        assert!(p.validate().is_ok());
        for size in [0, 63, 1401, usize::MAX] {
            let bad = TrafficPlan {
                packet_size: size,
                ..p
            };
            assert!(matches!(
                bad.validate(),
                Err(TrafficError::PacketSize(s)) if s == size
            ));
        }
        assert!(matches!(
            TrafficPlan { rate_pps: 0, ..p }.validate(),
            Err(TrafficError::Rate)
        ));
        assert!(matches!(
            TrafficPlan { count: 0, ..p }.validate(),
            Err(TrafficError::Unbounded)
        ));
        assert!(matches!(
            TrafficPlan {
                max_duration: Duration::ZERO,
                ..p
            }
            .validate(),
            Err(TrafficError::Unbounded)
        ));
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(matches!(run(&p, &[], &sock), Err(TrafficError::NoSessions)));
    }

    #[test]
    fn the_packet_size_is_the_inner_ip_length() {
        for kind in [TrafficKind::Udp { dst_port: 7 }, TrafficKind::Icmp] {
            for size in [MIN_PACKET, 576, MAX_PACKET] {
                let p = TrafficPlan {
                    kind,
                    packet_size: size,
                    ..plan()
                };
                let mut up = UserPlane::new(p.flow(), sessions(1)).unwrap();
                let mut buf = Vec::new();
                up.build_uplink(0, 1, &mut buf).unwrap();
                let g = pfcp::gtpu::Packet::new_checked(&buf[..]).unwrap();
                let inner = g.payload().unwrap();
                assert_eq!(inner.len(), size);
                assert_eq!(usize::from(u16::from_be_bytes([inner[2], inner[3]])), size);
                // On the wire: outer IPv4 + UDP, then the whole G-PDU.
                assert_eq!(wire_size(size), OUTER_IP_UDP + buf.len());
            }
        }
    }

    /// A user plane whose replies come back after 10 µs, 20 µs, ... for `n` probes, one
    /// lost, one duplicated, one garbage datagram.
    fn played(n: u64) -> UserPlane {
        let mut up = UserPlane::new(plan().flow(), sessions(4)).unwrap();
        let mut buf = Vec::new();
        let mut replies = Vec::new();
        for i in 0..n {
            let s = (i % 4) as usize;
            up.build_uplink(s, i * 1000, &mut buf).unwrap();
            replies.push((reflect_gpdu(&buf, 0x200 + s as u32).unwrap(), i));
        }
        // The first probe is lost.
        for (r, i) in replies.iter().skip(1) {
            up.handle_downlink(r, i * 1000 + (i + 1) * 10_000);
        }
        up.handle_downlink(&replies[1].0, 99_000_000);
        up.handle_downlink(b"not a G-PDU", 99_000_000);
        up.finish();
        up
    }

    #[test]
    fn the_report_counts_and_summarises() {
        let up = played(100);
        let r = TrafficReport::from_stats(
            &plan(),
            4,
            up.stats(),
            Duration::from_millis(100),
            Duration::from_millis(150),
        );
        assert_eq!((r.sent, r.received, r.lost), (100, 99, 1));
        assert_eq!((r.duplicates, r.bad), (1, 1));
        assert!((r.loss_ratio - 0.01).abs() < 1e-12);
        assert!((r.achieved_pps - 1000.0).abs() < 1e-6);
        // 199 packets of 100 B in 0.1 s, and of 144 B on the wire.
        assert_eq!(r.wire_size, 144);
        assert!((r.inner_gbps - 199.0 * 800.0 / 0.1 / 1e9).abs() < 1e-12);
        assert!((r.wire_gbps - 199.0 * 1152.0 / 0.1 / 1e9).abs() < 1e-12);
        let l = r.latency.unwrap();
        // Replies took 20 µs .. 1000 µs in steps of 10 µs.
        assert_eq!(l.min_us, 20);
        assert!((995..=1001).contains(&l.max_us), "{l:?}");
        assert!((505..=515).contains(&l.p50_us), "{l:?}");
        assert!(l.p50_us <= l.p90_us && l.p90_us <= l.p99_us && l.p99_us <= l.p999_us);
        assert!(l.p999_us <= l.max_us);
    }

    #[test]
    fn the_cdf_rises_to_one_within_its_point_budget() {
        let up = played(1000);
        let r = TrafficReport::from_stats(&plan(), 4, up.stats(), Duration::ZERO, Duration::ZERO);
        assert!(
            r.cdf.len() <= CDF_POINTS && r.cdf.len() > 10,
            "{}",
            r.cdf.len()
        );
        assert!(r
            .cdf
            .windows(2)
            .all(|w| w[0].latency_us < w[1].latency_us && w[0].fraction <= w[1].fraction));
        let last = r.cdf.last().unwrap();
        assert!((last.fraction - 1.0).abs() < 1e-9);
        assert_eq!(last.latency_us, r.latency.unwrap().max_us);
        // No send time: rates are zero, not infinite.
        assert_eq!((r.achieved_pps, r.inner_gbps), (0.0, 0.0));
    }

    #[test]
    fn an_empty_run_reports_no_latency() {
        let up = UserPlane::new(plan().flow(), sessions(1)).unwrap();
        let r = TrafficReport::from_stats(&plan(), 1, up.stats(), Duration::ZERO, Duration::ZERO);
        assert_eq!((r.sent, r.loss_ratio, r.latency), (0, 0.0, None));
        assert!(r.cdf.is_empty());
        assert!(r.lines().iter().any(|l| l.contains("no reply")));
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"kind\":\"udp\""));
    }

    #[test]
    fn the_duration_caps_the_count() {
        // 1000 pps for 50 ms: 50 probes, not 10 000, sent to a socket nobody reads.
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        let gnb = UdpSocket::bind("127.0.0.1:0").unwrap();
        let p = TrafficPlan {
            count: 10_000,
            max_duration: Duration::from_millis(50),
            drain: Duration::from_millis(500),
            upf_port: sink.local_addr().unwrap().port(),
            ..plan()
        };
        let r = run(&p, &sessions(2), &gnb).unwrap();
        assert_eq!((r.sent, r.received, r.lost), (50, 0, 50));
        assert!((r.loss_ratio - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_loopback_reflector_answers_every_probe() {
        // A stand-in UPF+DN on loopback: every uplink G-PDU reflected as its echo.
        let gnb = UdpSocket::bind("127.0.0.1:0").unwrap();
        let upf = UdpSocket::bind("127.0.0.1:0").unwrap();
        upf.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let upf_port = upf.local_addr().unwrap().port();
        let gnb_addr = gnb.local_addr().unwrap();
        let reflector = std::thread::spawn(move || {
            let mut buf = vec![0u8; 2048];
            let mut n = 0u32;
            while let Ok(len) = upf.recv(&mut buf) {
                let teid = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
                let r = reflect_gpdu(&buf[..len], 0x200 + (teid - 0x100)).unwrap();
                upf.send_to(&r, gnb_addr).unwrap();
                n += 1;
            }
            n
        });
        let p = TrafficPlan {
            count: 200,
            rate_pps: 20_000,
            upf_port,
            ..plan().icmp()
        };
        let r = run(&p, &sessions(8), &gnb).unwrap();
        assert_eq!(reflector.join().unwrap(), 200);
        assert_eq!((r.sent, r.received, r.lost, r.bad), (200, 200, 0, 0));
        assert_eq!(r.kind, "icmp");
        assert!(r.latency.is_some());
    }
}
