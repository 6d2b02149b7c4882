//! The user-plane bed for `steer5g demo` and `steer5g ran`: a test bed of three namespaces
//! (ran, upf, dn; `upf::userspace::testbed`), a UPF PFCP service on loopback whose
//! datapath (XDP fast path or TUN) sits on the upf namespace's interfaces, the DN's UDP
//! echo host, and the gNB's N3 socket in the ran namespace. A core's SMF is pointed at
//! [`UserPlaneBed::upf_pfcp`], the gNB emulator announces [`UserPlaneBed::gnb_n3`], and
//! once sessions are up [`UserPlaneBed::run_traffic`] sends UE traffic through the UPF with
//! the `ran` traffic engine. Without root or BPF, [`UserPlaneBed::start`] says why, so a
//! caller can run the control plane only.
//!
//! Also here: the report's text lines and its latency CDF as SVG ([`write_cdf_svg`]) and
//! CSV ([`write_cdf_csv`]).

// The lead wires this into `demo` and `ran`; until then only the tests use it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::time::Duration;

use plotters::prelude::*;
use ran::userplane::traffic::{self, TrafficError, TrafficPlan, TrafficReport};
use ran::userplane::{UpSession, GTPU_PORT};
use serde::Serialize;
use upf::userspace::echo::DnEcho;
use upf::userspace::shared::SharedDatapath;
use upf::userspace::testbed::{Host, Testbed, N3_RAN, N3_UPF, N6_DN, UE_POOL, UE_POOL_LEN};
use upf::userspace::tiered::Tiered;
use upf::userspace::{TunDatapath, TunOptions};
use upf::{Datapath, ServiceOptions, UpfService};
use upf_xdp::{XdpDatapath, XdpOptions};

/// The DN echo host's UDP port (RFC 862).
pub(crate) const ECHO_PORT: u16 = 7;
/// The longest a bed's echo host runs.
const ECHO_LIMIT: Duration = Duration::from_secs(3600);

/// Which user-plane path the bed's UPF uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PathKind {
    /// The XDP GTP-U fast path with the TUN path behind it for what XDP passes to the
    /// kernel (needs root: CAP_NET_ADMIN, CAP_BPF).
    Xdp,
    /// The user-space sockets/TUN path (needs root: CAP_NET_ADMIN).
    Tun,
}

/// Why the bed cannot run here (no root, no BPF, no namespaces): the caller runs the
/// control plane only and says this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("user plane unavailable: {0}")]
pub(crate) struct Unavailable(pub(crate) String);

type XdpTun = Tiered<XdpDatapath, TunDatapath>;

enum Dp {
    Xdp(SharedDatapath<XdpTun>, upf_xdp::Counters),
    Tun(SharedDatapath<TunDatapath>),
}

/// What the bed's path did, read when it stops.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BedReport {
    /// "xdp+tun" or "tun".
    pub(crate) path: &'static str,
    /// The XDP program's per-reason counters over the bed's life (empty for "tun").
    pub(crate) xdp: BTreeMap<&'static str, u64>,
    /// The TUN path's per-reason counters.
    pub(crate) tun: BTreeMap<&'static str, u64>,
    /// Datagrams the DN echo host echoed.
    pub(crate) dn_echoed: u64,
    /// PFCP sessions the UPF still held at the stop (then removed).
    pub(crate) sessions_at_stop: usize,
    /// Datapath entries (uplink + downlink + usage) left after the UPF removed every
    /// session; `None` if they could not be read.
    pub(crate) entries_left: Option<usize>,
    /// PFCP messages the UPF received and sent (first transmissions).
    pub(crate) pfcp_received: u64,
    pub(crate) pfcp_sent: u64,
    /// PFCP sessions the UPF established and deleted over its life.
    pub(crate) sessions_established: u64,
    pub(crate) sessions_deleted: u64,
}

/// A running user-plane bed. Dropping it tears everything down.
pub(crate) struct UserPlaneBed {
    // Field order is drop order: service and echo first, the datapath (XDP links, TUN
    // thread) before the namespaces go.
    upf: Option<UpfService>,
    echo: Option<DnEcho>,
    gnb: UdpSocket,
    dp: Dp,
    bed: Testbed,
}

fn tun_options(bed: &Testbed) -> TunOptions {
    TunOptions {
        netns: Some(bed.ns(Host::Upf).to_owned()),
        n3_addr: N3_UPF,
        tun_name: "upftun0".to_owned(),
        ue_pool: (UE_POOL, UE_POOL_LEN),
    }
}

/// Effective capabilities of this process (`CapEff` in /proc/self/status).
fn cap_eff() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

const CAP_NET_ADMIN: u64 = 1 << 12;
const CAP_SYS_ADMIN: u64 = 1 << 21;
const CAP_BPF: u64 = 1 << 39;

impl UserPlaneBed {
    /// Creates the namespaces (named after `tag`), the datapath of `path` in the upf
    /// namespace, a UPF serving PFCP on `pfcp` (port 0: the OS picks) and advertising N3
    /// address [`N3_UPF`], the DN echo host, and the gNB's N3 socket.
    pub(crate) fn start(path: PathKind, tag: &str, pfcp: SocketAddr) -> Result<Self, Unavailable> {
        let caps = cap_eff();
        let need = CAP_NET_ADMIN | CAP_SYS_ADMIN;
        if caps & need != need {
            return Err(Unavailable(
                "the user-plane bed needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) for network namespaces".into(),
            ));
        }
        if path == PathKind::Xdp && caps & (CAP_BPF | CAP_SYS_ADMIN) == 0 {
            return Err(Unavailable("the XDP path needs CAP_BPF".into()));
        }
        let fail = |what: &str, e: &dyn std::fmt::Display| Unavailable(format!("{what}: {e}"));
        let bed = Testbed::new(tag).map_err(|e| fail("namespaces", &e))?;
        let (dp, boxed): (Dp, Box<dyn Datapath + Send>) = match path {
            PathKind::Xdp => {
                bed.attach_peer_pass()
                    .map_err(|e| fail("xdp_pass on the peers", &e))?;
                let x = XdpDatapath::attach(&XdpOptions {
                    netns: Some(bed.ns(Host::Upf).to_owned()),
                    n3_iface: bed.n3_upf.clone(),
                    n6_iface: bed.n6_upf.clone(),
                    n3_addr: N3_UPF,
                })
                .map_err(|e| fail("XDP fast path", &e))?;
                let before = x.counters().map_err(|e| fail("XDP counters", &e))?;
                let t = TunDatapath::start(&tun_options(&bed)).map_err(|e| fail("TUN path", &e))?;
                let s = SharedDatapath::new(Tiered::new(x, t, "xdp+tun"));
                (Dp::Xdp(s.clone(), before), Box::new(s))
            }
            PathKind::Tun => {
                let t = TunDatapath::start(&tun_options(&bed)).map_err(|e| fail("TUN path", &e))?;
                let s = SharedDatapath::new(t);
                (Dp::Tun(s.clone()), Box::new(s))
            }
        };
        let gnb = bed
            .udp(Host::Ran, SocketAddrV4::new(N3_RAN, GTPU_PORT))
            .map_err(|e| fail("gNB N3 socket", &e))?;
        let echo = bed
            .dn_echo(ECHO_PORT, ECHO_LIMIT)
            .map_err(|e| fail("DN echo host", &e))?;
        let upf = UpfService::start(ServiceOptions::new(pfcp, N3_UPF), boxed)
            .map_err(|e| fail("UPF PFCP service", &e))?;
        Ok(UserPlaneBed {
            upf: Some(upf),
            echo: Some(echo),
            gnb,
            dp,
            bed,
        })
    }

    /// Where the UPF serves PFCP: the SMF's `upf` address.
    pub(crate) fn upf_pfcp(&self) -> Option<SocketAddr> {
        self.upf.as_ref().map(UpfService::local_addr)
    }

    /// The gNB's N3 address, for its DL F-TEIDs.
    pub(crate) fn gnb_n3(&self) -> Ipv4Addr {
        N3_RAN
    }

    /// The UE pool the SMF must hand addresses from (the dn routes it via the UPF).
    pub(crate) fn ue_pool(&self) -> (Ipv4Addr, u8) {
        (UE_POOL, UE_POOL_LEN)
    }

    /// The DN host the probes go to.
    pub(crate) fn dn(&self) -> Ipv4Addr {
        N6_DN
    }

    /// The path's name.
    pub(crate) fn path(&self) -> &'static str {
        match &self.dp {
            Dp::Xdp(..) => "xdp+tun",
            Dp::Tun(_) => "tun",
        }
    }

    /// Whether the UPF forwards every session's downlink to its gNB TEID yet (the
    /// modification after the gNB's answer has arrived): traffic before that is lost.
    pub(crate) fn forwarding(&self, sessions: &[UpSession]) -> bool {
        sessions.iter().all(|s| {
            let f = match &self.dp {
                Dp::Xdp(d, _) => d.downlink_forward(s.ue_ip),
                Dp::Tun(d) => d.downlink_forward(s.ue_ip),
            };
            f == Some((s.gnb_teid, N3_RAN))
        })
    }

    /// Sends `plan` on `sessions` from the gNB's N3 socket. A plan's `dn` of 0.0.0.0
    /// means the bed's DN host.
    pub(crate) fn run_traffic(
        &self,
        sessions: &[UpSession],
        plan: &TrafficPlan,
    ) -> Result<TrafficReport, TrafficError> {
        let mut plan = *plan;
        if plan.dn.is_unspecified() {
            plan.dn = N6_DN;
        }
        traffic::run(&plan, sessions, &self.gnb)
    }

    /// Rules the path holds now (uplink + downlink + usage), to see the releases arrive;
    /// `None` if the path cannot be read.
    pub(crate) fn entries(&self) -> Option<usize> {
        let e = match &self.dp {
            Dp::Xdp(d, _) => d.entries(),
            Dp::Tun(d) => d.entries(),
        };
        e.ok().map(|e| e.uplink + e.downlink + e.usage)
    }

    /// Stops the UPF (removing every session it still holds), the echo host and the path,
    /// and reports what the path did and what it held at the end.
    pub(crate) fn stop(mut self) -> BedReport {
        let svc = self.upf.take().map(UpfService::stop);
        let dn_echoed = self.echo.take().map_or(0, |e| e.stop().echoed);
        let (sessions_at_stop, entries_left, pfcp) = match svc {
            Some(Ok(r)) => (
                r.sessions_at_stop,
                r.entries_after.map(|e| e.uplink + e.downlink + e.usage),
                (
                    r.stats.received.values().sum(),
                    r.stats.sent.values().sum(),
                    r.stats.sessions_established,
                    r.stats.sessions_deleted,
                ),
            ),
            _ => (0, None, (0, 0, 0, 0)),
        };
        let (xdp, tun) = match &self.dp {
            Dp::Xdp(d, before) => d.with(|x| {
                let fast = x
                    .fast
                    .counters()
                    .map(|c| c.since(before).iter().collect())
                    .unwrap_or_default();
                (fast, x.slow.counters().iter().collect())
            }),
            Dp::Tun(d) => (BTreeMap::new(), d.with(|t| t.counters().iter().collect())),
        };
        BedReport {
            path: self.path(),
            xdp,
            tun,
            dn_echoed,
            sessions_at_stop,
            entries_left,
            pfcp_received: pfcp.0,
            pfcp_sent: pfcp.1,
            sessions_established: pfcp.2,
            sessions_deleted: pfcp.3,
        }
    }

    /// The namespaces, for callers that want to run more inside them.
    pub(crate) fn testbed(&self) -> &Testbed {
        &self.bed
    }
}

/// The text lines of a traffic report, for the terminal report.
pub(crate) fn report_lines(r: &TrafficReport) -> Vec<String> {
    r.lines()
}

/// Writes the latency CDFs of `runs` as CSV: `run,latency_us,fraction`, one row per point.
pub(crate) fn write_cdf_csv(path: &Path, runs: &[(&str, &TrafficReport)]) -> std::io::Result<()> {
    let mut out = String::from("run,latency_us,fraction\n");
    for (label, r) in runs {
        for p in &r.cdf {
            out.push_str(&format!("{label},{},{:.6}\n", p.latency_us, p.fraction));
        }
    }
    std::fs::write(path, out)
}

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
];

/// Writes the latency CDFs of `runs` (label, report) to `path` as SVG: round trip in µs
/// across, share of replies up.
pub(crate) fn write_cdf_svg(path: &Path, runs: &[(&str, &TrafficReport)]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let xmax = runs
        .iter()
        .filter_map(|(_, r)| r.cdf.last().map(|p| p.latency_us))
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.05;
    let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "UE round-trip latency through the UPF (CDF)",
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..xmax, 0f64..1.0)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("round trip (µs)")
        .y_desc("share of replies")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (label, r)) in runs.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<(f64, f64)> = r
            .cdf
            .iter()
            .map(|p| (p.latency_us as f64, p.fraction))
            .collect();
        let name = match &r.latency {
            Some(l) => format!("{label}: p50 {} µs, p99 {} µs", l.p50_us, l.p99_us),
            None => format!("{label}: no reply"),
        };
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ran::userplane::traffic::{CdfPoint, LatencySummary};

    fn report() -> TrafficReport {
        TrafficReport {
            kind: "udp",
            sessions: 2,
            packet_size: 128,
            wire_size: 172,
            target_pps: 100,
            sent: 10,
            received: 9,
            lost: 1,
            loss_ratio: 0.1,
            duplicates: 0,
            bad: 0,
            send_secs: 0.1,
            total_secs: 1.1,
            achieved_pps: 100.0,
            inner_gbps: 0.0,
            wire_gbps: 0.0,
            latency: Some(LatencySummary {
                min_us: 10,
                p50_us: 20,
                p90_us: 30,
                p99_us: 40,
                p999_us: 40,
                max_us: 40,
                mean_us: 22.0,
            }),
            cdf: vec![
                CdfPoint {
                    latency_us: 10,
                    fraction: 0.2,
                },
                CdfPoint {
                    latency_us: 40,
                    fraction: 1.0,
                },
            ],
        }
    }

    #[test]
    fn the_cdf_svg_has_one_curve_per_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cdf.svg");
        let (a, b) = (
            report(),
            TrafficReport {
                latency: None,
                cdf: Vec::new(),
                ..report()
            },
        );
        write_cdf_svg(&path, &[("udp", &a), ("icmp", &b)]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("udp: p50 20 µs, p99 40 µs"));
        assert!(svg.contains("icmp: no reply"));
        assert!(svg.contains("<polyline"));
        let csv_path = dir.path().join("cdf.csv");
        write_cdf_csv(&csv_path, &[("udp", &a), ("icmp", &b)]).unwrap();
        let csv = std::fs::read_to_string(&csv_path).unwrap();
        assert_eq!(
            csv,
            "run,latency_us,fraction\nudp,10,0.200000\nudp,40,1.000000\n"
        );
    }

    #[test]
    fn report_lines_say_loss_and_latency() {
        let lines = report_lines(&report());
        assert!(
            lines.iter().any(|l| l.contains("lost 1 (10.000%)")),
            "{lines:?}"
        );
        assert!(lines.iter().any(|l| l.contains("p50 20")), "{lines:?}");
    }

    #[test]
    fn a_bed_without_sessions_starts_and_stops_clean() {
        if !testkit::privilege::require("user-plane bed") {
            return;
        }
        for path in [PathKind::Tun, PathKind::Xdp] {
            let bed = UserPlaneBed::start(path, "clibed", "127.0.0.1:0".parse().unwrap()).unwrap();
            assert!(bed.upf_pfcp().is_some());
            assert_eq!(bed.gnb_n3(), N3_RAN);
            assert!(bed.forwarding(&[]));
            let r = bed.stop();
            assert_eq!(
                r.path,
                if path == PathKind::Xdp {
                    "xdp+tun"
                } else {
                    "tun"
                }
            );
            assert_eq!((r.sessions_at_stop, r.entries_left), (0, Some(0)));
            assert_eq!(r.tun.values().sum::<u64>(), 0, "{:?}", r.tun);
            assert_eq!(r.xdp.values().sum::<u64>(), 0, "{:?}", r.xdp);
            assert_eq!(r.xdp.is_empty(), path == PathKind::Tun);
        }
    }
}
