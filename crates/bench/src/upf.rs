//! `steer5g bench upf`: the user plane's packets/s, CPU per packet and latency for the XDP
//! fast path, the sockets/TUN path and the AF_XDP copy-mode user-space path, each beside the
//! ceiling of this machine (a bare XDP redirect between the same veths) measured in the same
//! run.
//!
//! Each path gets its own ran/upf/dn namespaces ([`upf::userspace::testbed`]). A generator
//! thread sends as fast as one socket can (open loop): uplink G-PDUs from ran over
//! `--sessions` sessions (each with a PDU Session Container, QFI 9), downlink plain UDP from
//! dn to the sessions' UE addresses. A sink thread on the other side counts what arrives.
//! Per case: a warm-up, a measured window (packets/s at the sink; CPU per packet as the XDP
//! programs' own run time per run from `kernel.bpf_stats_enabled`, or the user-space packet
//! thread's CPU time per forwarded packet (TUN and AF_XDP); whole-machine CPU per delivered
//! packet from
//! /proc/stat), then a paced latency phase whose packets carry their send time.
//!
//! `--packet-size N --json` prints exactly one line with the seven keys the scripts read,
//! then `afxdp_pps` and `afxdp_ns_per_packet`;
//! otherwise the whole report goes to `DIR/upf.json`, `DIR/upf.csv` and `DIR/upf_*.svg`.
//!
//! `--rates LIST` runs the offered-load sweep of reference 004 instead ([`rates`]).

mod rates;

/// `bench upf --rates LIST --paths PATH` with its defaults otherwise (128 B uplink, 64
/// sessions, the product's N3 buffer): `steer5g probe sweep --target upf-tun|upf-xdp`.
pub fn upf_rates(
    json: bool,
    path: &str,
    rates: &[String],
    step_s: f64,
    out: &Path,
) -> Result<(), BenchError> {
    let path = match path {
        "tun" => PathKind::Tun,
        "xdp" => PathKind::Xdp,
        other => {
            return Err(BenchError::Invalid(format!(
                "UPF path {other:?}: tun or xdp"
            )))
        }
    };
    let args = UpfArgs {
        packet_size: None,
        direction: None,
        sessions: vec![64],
        latency_samples: 0,
        probe: true,
        rates: Some(rates.to_vec()),
        n3_rcvbuf: upf::userspace::DEFAULT_N3_RECV_BUFFER,
        veth_gro: None,
        paths: Some(vec![path]),
        sweep: crate::sweep::SweepArgs {
            duration: Some(step_s),
            // `bench upf`'s own default.
            warmup: Some(0.3),
            out: Some(out.to_path_buf()),
            ..Default::default()
        },
    };
    rates::run(json, &args, rates)
}

use std::collections::BTreeMap;
use std::net::{SocketAddrV4, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use hdrhistogram::Histogram;
use plotters::prelude::*;
use serde::Serialize;
use upf::userspace::testbed::{
    self, ue_ip, Host, Testbed, N3_RAN, N3_UPF, N6_DN, UE_POOL, UE_POOL_LEN,
};
use upf::userspace::{craft, TunDatapath, TunOptions, TunReason};
use upf::Datapath;
use upf_afxdp::{AfXdpDatapath, AfXdpOptions};
use upf_xdp::{Ceiling, XdpDatapath, XdpOptions};

use super::machine::Machine;
use super::plot::{finish, line, line_with_points, svg_err, svg_root};
use super::sweep::{shown, Axis, Out, Sweep, SweepArgs};

use crate::BenchError;

/// Inner IPv4 packet sizes of the sweep: the smallest, a typical small packet, and up to
/// what fits a 1500-byte MTU after the N3 headers.
const SIZES: [usize; 6] = [64, 128, 256, 512, 1024, 1400];
/// The size the target is judged at.
const TARGET_SIZE: usize = 128;
/// The target the report checks: the XDP path at least this many times cheaper per packet
/// than the sockets/TUN path.
const TARGET_RATIO: f64 = 5.0;
/// Outer IPv4 + UDP + GTP-U with a PDU Session Container: what N3 adds to a packet.
const N3_OVERHEAD: usize = 20 + 8 + 16;
const DN_PORT: u16 = 9000;
const UE_PORT: u16 = 5000;
const QFI: u8 = 9;
const MAGIC: [u8; 4] = *b"U5PF";
/// Payload: magic, then the send time in ns since the run's epoch.
const STAMP_LEN: usize = 12;
/// Upper bound on packets one generator sends in one case, whatever the duration.
const MAX_PACKETS: u64 = 100_000_000;

/// Traffic direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Direction {
    /// gNB → UPF → DN: G-PDUs decapsulated.
    Uplink,
    /// DN → UPF → gNB: packets encapsulated.
    Downlink,
}

impl Direction {
    fn label(self) -> &'static str {
        match self {
            Direction::Uplink => "uplink",
            Direction::Downlink => "downlink",
        }
    }
}

/// Which direction(s) to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DirectionArg {
    /// Uplink only.
    Uplink,
    /// Downlink only.
    Downlink,
    /// Both.
    Both,
}

/// A user-plane path under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PathKind {
    /// The XDP fast path.
    Xdp,
    /// The sockets/TUN user-space path.
    Tun,
    /// The AF_XDP copy-mode user-space path.
    Afxdp,
    /// Bare XDP redirect between the same veths (no GTP-U at all).
    Ceiling,
}

impl PathKind {
    fn label(self) -> &'static str {
        match self {
            PathKind::Xdp => "xdp",
            PathKind::Tun => "tun",
            PathKind::Afxdp => "afxdp",
            PathKind::Ceiling => "ceiling",
        }
    }
}

/// `steer5g bench upf`.
#[derive(Debug, Args)]
#[command(mut_arg("duration", |a| shown(a, Some("2"), "Measured window per case, seconds.")))]
#[command(mut_arg("warmup", |a| shown(a, Some("0.3"),
    "Traffic before each measured window, seconds.")))]
#[command(mut_arg("out", |a| shown(a, Some("bench-results"),
    "Directory for upf.json, upf.csv and the SVG plots.")))]
pub struct UpfArgs {
    /// Measure one inner IPv4 packet size (bytes, 64..=1400); with --json prints the single
    /// line {"packet_size","direction","xdp_pps","user_pps","xdp_ns_per_packet",
    /// "user_ns_per_packet","ceiling_pps","afxdp_pps","afxdp_ns_per_packet"}. Without it: the sweep 64,128,256,512,1024,1400.
    #[arg(long, value_name = "N")]
    pub(crate) packet_size: Option<usize>,
    /// Direction(s); with --packet-size the default is uplink, else both.
    #[arg(long, value_enum)]
    pub(crate) direction: Option<DirectionArg>,
    /// Session counts: the sweep runs at the first; every further count adds a 128 B case
    /// per path and direction (growth with sessions).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "64,4096",
        value_name = "LIST"
    )]
    pub(crate) sessions: Vec<u32>,
    /// Paced packets per case for the latency CDF.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub(crate) latency_samples: u32,
    /// Attach the receive-path probe (`steer5g probe`) to the UPF's namespace in every
    /// measured window: per packet, which kernel stages it went through and their time. The
    /// CPU figures then carry the probe's own cost.
    #[arg(long)]
    pub(crate) probe: bool,
    /// Offered-load sweep (reference 004 §IV-V): paced steps at these packets/s (`10k`,
    /// `1.5m`, `max`) on each of `--paths`, one size (`--packet-size`, default 128) and
    /// direction (default uplink), the receive-path probe attached to the UPF's namespace
    /// at every step: stage time per packet, packets per NAPI poll, and drops by place
    /// against the offered rate (upf-rates.json, .csv, .svg).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub(crate) rates: Option<Vec<String>>,
    /// Receive buffer of the TUN path's N3 socket, bytes; 0 keeps the kernel's default
    /// (the product's default is 4 MiB: `upf::userspace::DEFAULT_N3_RECV_BUFFER`).
    #[arg(long, value_name = "BYTES", default_value_t = upf::userspace::DEFAULT_N3_RECV_BUFFER)]
    pub(crate) n3_rcvbuf: usize,
    /// Turn GRO on or off on the UPF's veths (N3, N6) before measuring; on a veth that also
    /// turns NAPI on or off for its receive side. Default: as the namespace made them (off).
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    pub(crate) veth_gro: Option<bool>,
    /// The paths of `--rates` (default tun,xdp).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub(crate) paths: Option<Vec<PathKind>>,
    /// `--duration`, `--warmup`, `--out`.
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
}

/// One measured case.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CaseReport {
    path: PathKind,
    direction: Direction,
    packet_size: usize,
    sessions: u32,
    sent: u64,
    received: u64,
    elapsed_s: f64,
    /// Packets per second delivered at the sink.
    pps: f64,
    /// XDP program run time per run (xdp, ceiling) or packet-thread CPU per forwarded
    /// packet (tun, afxdp), ns.
    ns_per_packet: Option<f64>,
    /// Whole-machine busy CPU time (generator, sink and path together) per delivered packet.
    system_ns_per_packet: Option<f64>,
    /// Packets the path itself counted as forwarded in the window.
    path_forwarded: u64,
    /// Packets the XDP path handed to the kernel in the window (should be 0).
    path_passed: u64,
    /// Packets the path dropped in the window (AF_XDP: with the frames its sockets'
    /// rings had no room for, from `XDP_STATISTICS`).
    path_dropped: u64,
    latency_us: Option<Latency>,
    /// With `--probe`: the kernel receive-path stages in the UPF's namespace, per packet
    /// delivered.
    #[serde(skip_serializing_if = "Option::is_none")]
    receive_path: Option<Vec<StageShare>>,
    /// With `--probe`: packets dropped in the UPF's namespace, by kfree_skb reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_drops: Option<BTreeMap<String, u64>>,
    /// With `--probe`: packets per NAPI poll in the UPF's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    packets_per_poll: Option<f64>,
    /// With `--rates`: the rate asked of the generator (packets/s; none: as fast as it can).
    #[serde(skip_serializing_if = "Option::is_none")]
    target_pps: Option<u64>,
}

/// One receive-path stage's share of a delivered packet.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StageShare {
    /// The stage (`steer5g probe`'s name).
    stage: &'static str,
    /// Events per packet delivered.
    per_packet: f64,
    /// Its time per packet delivered, ns (0 for a stage that is only counted).
    ns_per_packet: f64,
}

/// Latency percentiles and CDF points of the paced phase, microseconds.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Latency {
    samples: u64,
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
    /// (latency µs, cumulative fraction)
    cdf: Vec<(f64, f64)>,
}

/// XDP against the sockets/TUN path (and the AF_XDP path) for one size and direction.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Line {
    packet_size: usize,
    direction: Direction,
    xdp_pps: f64,
    user_pps: f64,
    xdp_ns_per_packet: f64,
    user_ns_per_packet: f64,
    ceiling_pps: f64,
    /// The AF_XDP path, when it was measured.
    afxdp_pps: Option<f64>,
    afxdp_ns_per_packet: Option<f64>,
}

/// The content of upf.json and of `--json` without `--packet-size`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct UpfBenchReport {
    scenario: &'static str,
    command: String,
    machine: Machine,
    duration_s: f64,
    warmup_s: f64,
    sessions: Vec<u32>,
    cases: Vec<CaseReport>,
    lines: Vec<Line>,
    target: String,
    /// The XDP/user CPU ratio at 128 B, per direction measured.
    target_ratios: Vec<(Direction, f64)>,
    meets_target: Option<bool>,
}

fn secs(what: &str, v: f64, max: f64) -> Result<Duration, BenchError> {
    if !(v.is_finite() && v > 0.0 && v <= max) {
        return Err(BenchError::Invalid(format!(
            "--{what} must be in (0, {max}] seconds"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

fn failed(what: &str, e: impl std::fmt::Display) -> BenchError {
    BenchError::Failed(format!("{what}: {e}"))
}

fn need_root() -> Result<(), BenchError> {
    // CAP_NET_ADMIN (12), CAP_SYS_ADMIN (21), CAP_BPF (39) from /proc/self/status.
    let caps = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        })
        .unwrap_or(0);
    let want = 1u64 << 12 | 1 << 21;
    if caps & want == want {
        Ok(())
    } else {
        Err(BenchError::Privilege(
            "bench upf needs CAP_NET_ADMIN and CAP_SYS_ADMIN (network namespaces, XDP, TUN)"
                .to_owned(),
        ))
    }
}

/// `steer5g bench upf`.
pub(crate) fn run(json: bool, args: &UpfArgs) -> Result<(), BenchError> {
    args.sweep
        .only("upf", &[Axis::Duration, Axis::Warmup, Axis::Out])?;
    if let Some(rates) = &args.rates {
        return rates::run(json, args, rates);
    }
    if args.paths.is_some() {
        return Err(BenchError::Invalid("--paths goes with --rates".to_owned()));
    }
    let sizes: Vec<usize> = match args.packet_size {
        Some(n) if (64..=1400).contains(&n) => vec![n],
        Some(n) => {
            return Err(BenchError::Invalid(format!(
                "--packet-size {n}: must be between 64 and 1400"
            )))
        }
        None => SIZES.to_vec(),
    };
    let dir_arg = args.direction.unwrap_or(if args.packet_size.is_some() {
        DirectionArg::Uplink
    } else {
        DirectionArg::Both
    });
    let directions: Vec<Direction> = match dir_arg {
        DirectionArg::Uplink => vec![Direction::Uplink],
        DirectionArg::Downlink => vec![Direction::Downlink],
        DirectionArg::Both => vec![Direction::Uplink, Direction::Downlink],
    };
    if args.sessions.is_empty() || args.sessions.iter().any(|&s| s == 0 || s > 16_000) {
        return Err(BenchError::Invalid(
            "--sessions: each count must be between 1 and 16000 (the UE pool is a /18)".to_owned(),
        ));
    }
    let duration = secs("duration", args.sweep.duration_s(), 60.0)?;
    let warmup = secs("warmup", args.sweep.warmup_s(), 10.0)?;
    if args.latency_samples > 100_000 {
        return Err(BenchError::Invalid(
            "--latency-samples: at most 100000".to_owned(),
        ));
    }
    need_root()?;
    let machine = Machine::probe();
    let was_on = upf_xdp::set_bpf_stats(true).map_err(|e| failed("bpf stats", e))?;
    let single = args.packet_size.is_some();
    // Growth with sessions only in the sweep: a single-size run measures the first count.
    let extra_sessions: Vec<u32> = if single {
        Vec::new()
    } else {
        args.sessions.iter().skip(1).copied().collect()
    };
    let sessions0 = args.sessions.first().copied().unwrap_or(64);
    let cfg = CaseCfg {
        duration,
        warmup,
        latency_samples: args.latency_samples,
        probe: args.probe,
        rate: None,
    };
    // Every size and direction per path (the bare redirect ceiling first), then the growth
    // with sessions at 128 B; one lab per path, made when its first case comes.
    let mut plan: Vec<(PathKind, u32, usize, Direction)> = Vec::new();
    for path in [
        PathKind::Ceiling,
        PathKind::Xdp,
        PathKind::Tun,
        PathKind::Afxdp,
    ] {
        for &d in &directions {
            for &s in &sizes {
                plan.push((path, sessions0, s, d));
            }
        }
        if path != PathKind::Ceiling {
            for &n in &extra_sessions {
                for &d in &directions {
                    plan.push((path, n, TARGET_SIZE, d));
                }
            }
        }
    }
    let mut lab: Option<(PathKind, Lab)> = None;
    let result = Sweep::new(&plan, 1).run(
        |(path, n, size, d)| format!("{} {} {size} B, {n} sessions", path.label(), d.label()),
        |v| {
            let &(path, n, size, d) = v.case;
            if lab.as_ref().map(|(p, _)| *p) != Some(path) {
                // The previous path's lab goes before the next one is made.
                lab = None;
                lab = Some((path, Lab::new(path, sessions0, &LabTuning::of(args))?));
            }
            let Some((_, l)) = lab.as_mut() else {
                return Err(BenchError::Failed("no lab".into()));
            };
            l.set_sessions(n)?;
            l.run_case(d, size, &cfg)
        },
    );
    drop(lab);
    let _ = upf_xdp::set_bpf_stats(was_on);
    let cases: Vec<CaseReport> = result?.into_iter().flatten().collect();

    let lines = lines_of(&cases, sessions0);
    let target_ratios: Vec<(Direction, f64)> = lines
        .iter()
        .filter(|l| l.packet_size == TARGET_SIZE)
        .map(|l| {
            (
                l.direction,
                l.user_ns_per_packet / l.xdp_ns_per_packet.max(f64::MIN_POSITIVE),
            )
        })
        .collect();
    let meets_target =
        (!target_ratios.is_empty()).then(|| target_ratios.iter().all(|(_, r)| *r >= TARGET_RATIO));
    let report = UpfBenchReport {
        scenario: "upf",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        duration_s: duration.as_secs_f64(),
        warmup_s: warmup.as_secs_f64(),
        sessions: args.sessions.clone(),
        cases,
        lines,
        target: format!(
            "at {TARGET_SIZE} B the XDP path at least {TARGET_RATIO}x cheaper per packet than sockets/TUN"
        ),
        target_ratios,
        meets_target,
    };

    if single && json {
        let l = report
            .lines
            .first()
            .ok_or_else(|| BenchError::Failed("no case measured".to_owned()))?;
        // `Line` serializes its fields in declaration order: the seven original keys first
        // (scripts read this line), then the AF_XDP ones.
        println!(
            "{}",
            serde_json::to_string(l).map_err(|e| failed("json", e))?
        );
    } else {
        let out = args.sweep.out_or("bench-results");
        write_outputs(&out, &report)?;
        if json {
            println!(
                "{}",
                serde_json::to_string(&report).map_err(|e| failed("json", e))?
            );
        } else {
            print_table(&report, &out);
        }
    }
    match report.meets_target {
        Some(false) => Err(BenchError::Failed(format!(
            "target missed: {} (ratios {:?})",
            report.target, report.target_ratios
        ))),
        _ => Ok(()),
    }
}

fn lines_of(cases: &[CaseReport], sessions: u32) -> Vec<Line> {
    let find = |p: PathKind, d: Direction, s: usize| {
        cases.iter().find(|c| {
            c.path == p && c.direction == d && c.packet_size == s && c.sessions == sessions
        })
    };
    let mut out = Vec::new();
    for c in cases
        .iter()
        .filter(|c| c.path == PathKind::Xdp && c.sessions == sessions)
    {
        let (Some(u), Some(k)) = (
            find(PathKind::Tun, c.direction, c.packet_size),
            find(PathKind::Ceiling, c.direction, c.packet_size),
        ) else {
            continue;
        };
        let a = find(PathKind::Afxdp, c.direction, c.packet_size);
        out.push(Line {
            packet_size: c.packet_size,
            direction: c.direction,
            xdp_pps: c.pps,
            user_pps: u.pps,
            xdp_ns_per_packet: c.ns_per_packet.unwrap_or(0.0),
            user_ns_per_packet: u.ns_per_packet.unwrap_or(0.0),
            ceiling_pps: k.pps,
            afxdp_pps: a.map(|a| a.pps),
            afxdp_ns_per_packet: a.and_then(|a| a.ns_per_packet),
        });
    }
    out
}

/// What a lab changes in the kernel's or the sockets' defaults (receive-path tunings).
#[derive(Debug, Clone, Copy)]
struct LabTuning {
    n3_recv_buffer: usize,
    veth_gro: Option<bool>,
}

impl LabTuning {
    fn of(args: &UpfArgs) -> Self {
        LabTuning {
            n3_recv_buffer: args.n3_rcvbuf,
            veth_gro: args.veth_gro,
        }
    }
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{s:?}: on or off")),
    }
}

/// `ethtool -K IFACE gro on|off` inside `ns`.
fn set_gro(ns: &str, iface: &str, on: bool) -> Result<(), BenchError> {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "ethtool", "-K", iface, "gro"])
        .arg(if on { "on" } else { "off" })
        .output()
        .map_err(|e| failed("ethtool (Debian package ethtool)", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(failed(
            &format!("ethtool -K {iface} gro"),
            String::from_utf8_lossy(&out.stderr).trim(),
        ))
    }
}

struct CaseCfg {
    duration: Duration,
    warmup: Duration,
    latency_samples: u32,
    probe: bool,
    /// Paced packets/s of the measured traffic; `None` sends as fast as one socket can.
    rate: Option<u64>,
}

/// The datapath attached in a lab.
enum Attached {
    Xdp(XdpDatapath),
    Tun(TunDatapath),
    AfXdp(AfXdpDatapath),
    Ceiling(Ceiling),
}

/// A path's namespaces, datapath and the sockets of generator and sinks.
struct Lab {
    path: PathKind,
    // Field order: the datapath goes before the namespaces it lives in.
    dp: Attached,
    sessions: u32,
    upf_ns: String,
    ran_tx: UdpSocket,
    ran_rx: UdpSocket,
    dn_tx: UdpSocket,
    dn_rx: UdpSocket,
    _bed: Testbed,
}

fn teid(i: u32) -> u32 {
    // Worker 1 in the top bits (TEIDs encode the owning worker, `ids::upf`).
    0x0100_0000 | i
}

fn gnb_teid(i: u32) -> u32 {
    0x00a0_0000 | i
}

impl Lab {
    fn new(path: PathKind, sessions: u32, tune: &LabTuning) -> Result<Self, BenchError> {
        let bed =
            Testbed::new(&format!("bu{}", path.label())).map_err(|e| failed("namespaces", e))?;
        bed.attach_peer_pass().map_err(|e| failed("xdp_pass", e))?;
        let upf_ns = bed.ns(Host::Upf).to_owned();
        if let Some(on) = tune.veth_gro {
            // On a veth, GRO on also turns NAPI on for its receive side (without XDP the
            // veth otherwise hands every packet to the per-CPU backlog one by one).
            for iface in [&bed.n3_upf, &bed.n6_upf] {
                set_gro(&upf_ns, iface, on)?;
            }
        }
        let n3_recv_buffer = tune.n3_recv_buffer;
        let dp = match path {
            PathKind::Xdp => Attached::Xdp(
                XdpDatapath::attach(&XdpOptions {
                    netns: Some(upf_ns),
                    n3_iface: bed.n3_upf.clone(),
                    n6_iface: bed.n6_upf.clone(),
                    n3_addr: N3_UPF,
                })
                .map_err(|e| failed("xdp datapath", e))?,
            ),
            PathKind::Tun => Attached::Tun(
                TunDatapath::start(&TunOptions {
                    netns: Some(upf_ns),
                    n3_addr: N3_UPF,
                    tun_name: "upftun0".to_owned(),
                    ue_pool: (UE_POOL, UE_POOL_LEN),
                    n3_recv_buffer,
                })
                .map_err(|e| failed("tun datapath", e))?,
            ),
            PathKind::Afxdp => Attached::AfXdp(
                AfXdpDatapath::start(&AfXdpOptions {
                    netns: Some(upf_ns),
                    n3_iface: bed.n3_upf.clone(),
                    n6_iface: bed.n6_upf.clone(),
                    n3_addr: N3_UPF,
                    ue_pool: (UE_POOL, UE_POOL_LEN),
                    n6_gateway: None,
                    frames: 4096,
                })
                .map_err(|e| failed("af_xdp datapath", e))?,
            ),
            PathKind::Ceiling => Attached::Ceiling(
                Ceiling::attach(Some(&upf_ns), &[bed.n3_upf.clone(), bed.n6_upf.clone()])
                    .map_err(|e| failed("xdp_redirect", e))?,
            ),
        };
        let sock = |host: Host, addr: SocketAddrV4| -> Result<UdpSocket, BenchError> {
            bed.udp(host, addr).map_err(|e| failed("socket", e))
        };
        let ran_tx = sock(Host::Ran, SocketAddrV4::new(N3_RAN, 0))?;
        let ran_rx = sock(Host::Ran, SocketAddrV4::new(N3_RAN, 2152))?;
        let dn_tx = sock(Host::Dn, SocketAddrV4::new(N6_DN, 0))?;
        let dn_rx = sock(Host::Dn, SocketAddrV4::new(N6_DN, DN_PORT))?;
        for s in [&ran_rx, &dn_rx] {
            s.set_read_timeout(Some(Duration::from_millis(50)))
                .map_err(|e| failed("socket", e))?;
            set_rcvbuf(s);
        }
        let mut lab = Lab {
            path,
            dp,
            sessions: 0,
            upf_ns: bed.ns(Host::Upf).to_owned(),
            ran_tx,
            ran_rx,
            dn_tx,
            dn_rx,
            _bed: bed,
        };
        lab.set_sessions(sessions)?;
        Ok(lab)
    }

    fn datapath(&mut self) -> Option<&mut dyn Datapath> {
        match &mut self.dp {
            Attached::Xdp(d) => Some(d),
            Attached::Tun(d) => Some(d),
            Attached::AfXdp(d) => Some(d),
            Attached::Ceiling(_) => None,
        }
    }

    /// Installs rules for sessions 0..n (and removes those above n).
    fn set_sessions(&mut self, n: u32) -> Result<(), BenchError> {
        let have = self.sessions;
        let Some(dp) = self.datapath() else {
            self.sessions = n;
            return Ok(());
        };
        for i in n..have {
            dp.remove_uplink(teid(i)).map_err(|e| failed("rules", e))?;
            dp.remove_downlink(ue_ip(i))
                .map_err(|e| failed("rules", e))?;
        }
        for i in have..n {
            dp.install_uplink(&testbed::uplink_rule(i, teid(i), Some(QFI)))
                .map_err(|e| failed("rules", e))?;
            dp.install_downlink(&testbed::downlink_rule(i, gnb_teid(i), Some(QFI)))
                .map_err(|e| failed("rules", e))?;
        }
        self.sessions = n;
        Ok(())
    }

    /// (forwarded, passed, dropped) by the path itself, and its CPU measure (ns, runs).
    fn path_snapshot(&self) -> Result<(u64, u64, u64, u64, u64), BenchError> {
        Ok(match &self.dp {
            Attached::Xdp(d) => {
                let c = d.counters().map_err(|e| failed("counters", e))?;
                let s = d.prog_stats();
                (
                    c.redirected(),
                    c.passed(),
                    c.dropped(),
                    s.run_time_ns,
                    s.run_cnt,
                )
            }
            Attached::Tun(d) => {
                let c = d.counters();
                let fwd = c.get(TunReason::UlForwarded) + c.get(TunReason::DlForwarded);
                (fwd, 0, c.dropped(), d.cpu_ns(), fwd)
            }
            Attached::AfXdp(d) => {
                let c = d.counters();
                let s = d.stats().map_err(|e| failed("af_xdp stats", e))?;
                let fwd = c.get(TunReason::UlForwarded) + c.get(TunReason::DlForwarded);
                // Frames the kernel could not hand to the sockets count as the path's drops
                // (an empty fill ring is already in rx_dropped: net/xdp/xsk.c __xsk_rcv).
                let lost = [s.n3, s.n6]
                    .iter()
                    .map(|x| x.rx_dropped + x.rx_ring_full)
                    .sum::<u64>();
                (fwd, s.bpf_passed, c.dropped() + lost, d.cpu_ns(), fwd)
            }
            Attached::Ceiling(d) => {
                let (fwd, passed) = d.counters().map_err(|e| failed("counters", e))?;
                let s = d.prog_stats();
                (fwd, passed, 0, s.run_time_ns, s.run_cnt)
            }
        })
    }

    /// The frames the generator sends, one per session, and the sink's framing.
    fn frames(
        &self,
        dir: Direction,
        size: usize,
    ) -> Result<Vec<(Vec<u8>, SocketAddrV4)>, BenchError> {
        let n = self.sessions.max(1);
        let bad = || BenchError::Failed("cannot build a packet".to_owned());
        let payload = vec![0u8; size.saturating_sub(28).max(STAMP_LEN)];
        let mut out = Vec::new();
        match (self.path, dir) {
            (PathKind::Ceiling, Direction::Uplink) => {
                // Same frame size as the G-PDU the other paths receive.
                let p = vec![0u8; payload.len() + N3_OVERHEAD];
                out.push((p, SocketAddrV4::new(N6_DN, DN_PORT)));
            }
            (PathKind::Ceiling, Direction::Downlink) => {
                let p = vec![0u8; payload.len() + N3_OVERHEAD];
                out.push((p, SocketAddrV4::new(N3_RAN, 2152)));
            }
            (_, Direction::Uplink) => {
                for i in 0..n {
                    let mut inner = craft::ipv4_udp(ue_ip(i), N6_DN, UE_PORT, DN_PORT, &payload)
                        .ok_or_else(bad)?;
                    // UDP checksum 0 (allowed over IPv4): the stamp changes the payload.
                    inner[26] = 0;
                    inner[27] = 0;
                    let g = craft::g_pdu(teid(i), Some(QFI), &inner).ok_or_else(bad)?;
                    out.push((g, SocketAddrV4::new(N3_UPF, 2152)));
                }
            }
            (_, Direction::Downlink) => {
                for i in 0..n {
                    out.push((payload.clone(), SocketAddrV4::new(ue_ip(i), UE_PORT)));
                }
            }
        }
        // The stamp sits at the end of each frame, where the sink finds it whatever the
        // framing (plain UDP payload or G-PDU).
        Ok(out)
    }

    fn run_case(
        &mut self,
        dir: Direction,
        size: usize,
        cfg: &CaseCfg,
    ) -> Result<CaseReport, BenchError> {
        let frames = self.frames(dir, size)?;
        let (tx, rx) = match dir {
            Direction::Uplink => (&self.ran_tx, &self.dn_rx),
            Direction::Downlink => (&self.dn_tx, &self.ran_rx),
        };
        let tx = tx.try_clone().map_err(|e| failed("socket", e))?;
        let rx = rx.try_clone().map_err(|e| failed("socket", e))?;
        let epoch = Instant::now();
        let stop_gen = Arc::new(AtomicBool::new(false));
        let stop_sink = Arc::new(AtomicBool::new(false));
        let pace = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let received = Arc::new(AtomicU64::new(0));
        let hist = Arc::new(Mutex::new(
            Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3)
                .map_err(|e| failed("histogram", e))?,
        ));
        let recording = Arc::new(AtomicBool::new(false));

        let sink = {
            let (stop, received, hist, recording) = (
                stop_sink.clone(),
                received.clone(),
                hist.clone(),
                recording.clone(),
            );
            thread::Builder::new()
                .name("upf-sink".to_owned())
                .spawn(move || sink_loop(&rx, epoch, &stop, &received, &hist, &recording))
                .map_err(|e| failed("thread", e))?
        };
        let gen = {
            let (stop, sent, pace) = (stop_gen.clone(), sent.clone(), pace.clone());
            let (samples, rate) = (cfg.latency_samples, cfg.rate);
            thread::Builder::new()
                .name("upf-gen".to_owned())
                .spawn(move || gen_loop(&tx, frames, epoch, &stop, &sent, &pace, samples, rate))
                .map_err(|e| failed("thread", e))?
        };

        let probe = if cfg.probe {
            Some(self.attach_probe()?)
        } else {
            None
        };
        thread::sleep(cfg.warmup);
        let probe0 = probe
            .as_ref()
            .map(|p| p.snapshot().map(probe::Reading::now))
            .transpose()
            .map_err(|e| failed("probe", e))?;
        let p0 = self.path_snapshot()?;
        let cpu0 = busy_ns();
        let r0 = received.load(Ordering::Relaxed);
        let s0 = sent.load(Ordering::Relaxed);
        let t0 = Instant::now();
        thread::sleep(cfg.duration);
        let r1 = received.load(Ordering::Relaxed);
        let s1 = sent.load(Ordering::Relaxed);
        let elapsed = t0.elapsed();
        let cpu1 = busy_ns();
        let p1 = self.path_snapshot()?;
        let probe1 = probe
            .as_ref()
            .map(|p| p.snapshot().map(probe::Reading::now))
            .transpose()
            .map_err(|e| failed("probe", e))?;
        drop(probe);
        // Latency: pause the blast, let queues drain, then paced stamped packets.
        pace.store(true, Ordering::Relaxed);
        thread::sleep(Duration::from_millis(200));
        recording.store(true, Ordering::Relaxed);
        let gen_result = {
            // The generator sends its paced samples and returns.
            stop_gen.store(true, Ordering::Relaxed);
            gen.join()
                .map_err(|_| BenchError::Failed("generator panicked".to_owned()))?
        };
        thread::sleep(Duration::from_millis(200));
        stop_sink.store(true, Ordering::Relaxed);
        let _ = sink.join();
        gen_result.map_err(|e| failed("generator", e))?;

        let delivered = r1.saturating_sub(r0);
        let secs = elapsed.as_secs_f64().max(1e-9);
        let (fwd, passed, dropped) = (
            p1.0.saturating_sub(p0.0),
            p1.1.saturating_sub(p0.1),
            p1.2.saturating_sub(p0.2),
        );
        let (ns, runs) = (p1.3.saturating_sub(p0.3), p1.4.saturating_sub(p0.4));
        let probe_report = probe0.zip(probe1).map(|(a, b)| {
            probe::report::build(&a, &b, probe::Filter::default(), drop_reason_names())
        });
        if delivered == 0 {
            return Err(BenchError::Failed(format!(
                "{} {} {size} B: nothing arrived at the sink",
                self.path.label(),
                dir.label()
            )));
        }
        if matches!(self.path, PathKind::Xdp | PathKind::Afxdp) && fwd == 0 {
            return Err(BenchError::Failed(format!(
                "the {} path forwarded nothing: traffic fell back to the kernel",
                self.path.label()
            )));
        }
        let hist = hist
            .lock()
            .map_err(|_| BenchError::Failed("histogram lock".to_owned()))?;
        let latency = (!hist.is_empty()).then(|| Latency {
            samples: hist.len(),
            p50: hist.value_at_quantile(0.5) as f64 / 1000.0,
            p90: hist.value_at_quantile(0.9) as f64 / 1000.0,
            p99: hist.value_at_quantile(0.99) as f64 / 1000.0,
            p999: hist.value_at_quantile(0.999) as f64 / 1000.0,
            max: hist.max() as f64 / 1000.0,
            cdf: [
                0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0,
            ]
            .iter()
            .map(|q| (hist.value_at_quantile(*q) as f64 / 1000.0, *q))
            .collect(),
        });
        Ok(CaseReport {
            path: self.path,
            direction: dir,
            packet_size: size,
            sessions: self.sessions,
            sent: s1.saturating_sub(s0),
            received: delivered,
            elapsed_s: secs,
            pps: delivered as f64 / secs,
            ns_per_packet: (runs > 0).then(|| ns as f64 / runs as f64),
            system_ns_per_packet: cpu0
                .zip(cpu1)
                .map(|(a, b)| b.saturating_sub(a) as f64 / delivered as f64),
            path_forwarded: fwd,
            path_passed: passed,
            path_dropped: dropped,
            latency_us: latency,
            receive_path: probe_report.as_ref().map(|r| receive_path(r, delivered)),
            kernel_drops: probe_report.as_ref().map(|r| {
                r.drops
                    .iter()
                    .map(|d| (d.reason.clone(), d.count))
                    .collect()
            }),
            packets_per_poll: probe_report.as_ref().map(|r| r.napi.packets_per_poll),
            target_pps: cfg.rate,
        })
    }

    /// The probe, filtered to the UPF's namespace (every interface: N3, N6 and the TUN
    /// device), so that the generator's and the sink's namespaces do not count.
    fn attach_probe(&self) -> Result<probe::Probe, BenchError> {
        let path = std::path::Path::new("/run/netns").join(&self.upf_ns);
        let netns = probe::procfs::netns_inode(&path).map_err(|e| failed("upf namespace", e))?;
        probe::Probe::attach(probe::Filter {
            netns,
            ..probe::Filter::default()
        })
        .map_err(|e| match e {
            probe::Error::NotPermitted(_) => BenchError::Privilege(e.to_string()),
            _ => failed("probe", e),
        })
    }
}

/// The probe's stages over one window, per packet delivered; stages that saw nothing are
/// left out.
fn receive_path(r: &probe::Report, delivered: u64) -> Vec<StageShare> {
    let n = delivered.max(1) as f64;
    r.stages
        .iter()
        .filter(|s| s.count > 0 && !s.name.starts_with("sys_"))
        .map(|s| StageShare {
            stage: s.name,
            per_packet: s.count as f64 / n,
            ns_per_packet: s.time_ns as f64 / n,
        })
        .collect()
}

/// Drop reasons by their kernel names (SOCKET_RCVBUFF, ...), read from the kernel's BTF
/// once per run rather than once per measured case.
fn drop_reason_names() -> &'static BTreeMap<u32, String> {
    static NAMES: std::sync::OnceLock<BTreeMap<u32, String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(probe::drop_reason_names)
}

fn set_rcvbuf(s: &UdpSocket) {
    // A deeper receive queue keeps the sink from being the bottleneck; best effort.
    let s = socket2::SockRef::from(s);
    let _ = s.set_recv_buffer_size(8 << 20);
}

/// Nanoseconds of busy CPU time (all CPUs) from /proc/stat: user, nice, system, irq,
/// softirq, steal.
fn busy_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = cpu
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let ticks = [0usize, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| v.get(i))
        .sum::<u64>();
    // USER_HZ is 100 on Linux x86_64 and arm64.
    Some(ticks.saturating_mul(10_000_000))
}

fn now_ns(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn stamp(frame: &mut [u8], t: u64) {
    let n = frame.len();
    if n >= STAMP_LEN {
        frame[n - STAMP_LEN..n - 8].copy_from_slice(&MAGIC);
        frame[n - 8..].copy_from_slice(&t.to_be_bytes());
    }
}

fn read_stamp(p: &[u8]) -> Option<u64> {
    let n = p.len();
    let tail = p.get(n.checked_sub(STAMP_LEN)?..)?;
    if tail[..4] != MAGIC {
        return None;
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&tail[4..]);
    Some(u64::from_be_bytes(t))
}

/// Sends the frames round-robin until `pace` (as fast as it can, or at `rate` packets/s),
/// then sends `samples` paced stamped frames and returns once `stop` is set (or the count
/// bound is hit).
#[allow(clippy::too_many_arguments)]
fn gen_loop(
    tx: &UdpSocket,
    mut frames: Vec<(Vec<u8>, SocketAddrV4)>,
    epoch: Instant,
    stop: &AtomicBool,
    sent: &AtomicU64,
    pace: &AtomicBool,
    samples: u32,
    rate: Option<u64>,
) -> std::io::Result<()> {
    let n = frames.len().max(1);
    let mut i = 0usize;
    let mut count = 0u64;
    let start = Instant::now();
    while !pace.load(Ordering::Relaxed) && count < MAX_PACKETS {
        if let Some(r) = rate {
            // Behind the schedule: send; ahead of it: a short sleep (bursts of at most
            // rate × ~60 µs, the sleep's granularity).
            let due = (start.elapsed().as_secs_f64() * r as f64) as u64;
            if count >= due {
                thread::sleep(Duration::from_micros(50));
                continue;
            }
        }
        let (f, to) = &mut frames[i % n];
        stamp(f, now_ns(epoch));
        // A full queue (ENOBUFS) is load, not failure.
        if tx.send_to(f, *to).is_ok() {
            count += 1;
            if count.is_multiple_of(64) {
                sent.store(count, Ordering::Relaxed);
            }
        }
        i = i.wrapping_add(1);
    }
    sent.store(count, Ordering::Relaxed);
    // Wait for the sink to start recording, then the paced phase.
    while !stop.load(Ordering::Relaxed) {
        thread::sleep(Duration::from_millis(5));
    }
    for k in 0..samples as usize {
        let (f, to) = &mut frames[k % n];
        stamp(f, now_ns(epoch));
        tx.send_to(f, *to)?;
        thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

fn sink_loop(
    rx: &UdpSocket,
    epoch: Instant,
    stop: &AtomicBool,
    received: &AtomicU64,
    hist: &Mutex<Histogram<u64>>,
    recording: &AtomicBool,
) {
    let mut buf = vec![0u8; 4096];
    let mut count = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Ok((len, _)) = rx.recv_from(&mut buf) else {
            continue;
        };
        let Some(t) = buf.get(..len).and_then(read_stamp) else {
            continue;
        };
        count += 1;
        if count.is_multiple_of(64) {
            received.store(count, Ordering::Relaxed);
        }
        if recording.load(Ordering::Relaxed) {
            let lat = now_ns(epoch).saturating_sub(t).max(1);
            if let Ok(mut h) = hist.lock() {
                let _ = h.record(lat);
            }
        }
    }
    received.store(count, Ordering::Relaxed);
}

fn print_table(r: &UpfBenchReport, out: &Path) {
    println!(
        "{:>6} {:>9} {:>12} {:>12} {:>12} {:>12} {:>10} {:>10} {:>10} {:>8}",
        "size",
        "dir",
        "xdp pps",
        "tun pps",
        "afxdp pps",
        "ceiling pps",
        "xdp ns/p",
        "tun ns/p",
        "afxdp ns/p",
        "ratio"
    );
    for l in &r.lines {
        let opt = |v: Option<f64>, p: usize| v.map_or("-".to_owned(), |x| format!("{x:.p$}"));
        println!(
            "{:>6} {:>9} {:>12.0} {:>12.0} {:>12} {:>12.0} {:>10.1} {:>10.1} {:>10} {:>8.1}",
            l.packet_size,
            l.direction.label(),
            l.xdp_pps,
            l.user_pps,
            opt(l.afxdp_pps, 0),
            l.ceiling_pps,
            l.xdp_ns_per_packet,
            l.user_ns_per_packet,
            opt(l.afxdp_ns_per_packet, 1),
            l.user_ns_per_packet / l.xdp_ns_per_packet.max(f64::MIN_POSITIVE)
        );
    }
    for c in r.cases.iter().filter(|c| c.packet_size == TARGET_SIZE) {
        if let Some(l) = &c.latency_us {
            println!(
                "latency {} {} {} sessions: p50 {:.1} us, p99 {:.1} us, max {:.1} us",
                c.path.label(),
                c.direction.label(),
                c.sessions,
                l.p50,
                l.p99,
                l.max
            );
        }
    }
    for c in &r.cases {
        if let Some(stages) = &c.receive_path {
            let list: Vec<String> = stages
                .iter()
                .map(|s| {
                    if s.ns_per_packet > 0.0 {
                        format!("{} {:.2}x {:.0} ns", s.stage, s.per_packet, s.ns_per_packet)
                    } else {
                        format!("{} {:.2}x", s.stage, s.per_packet)
                    }
                })
                .collect();
            println!(
                "kernel receive path per packet, {} {} {} B: {}",
                c.path.label(),
                c.direction.label(),
                c.packet_size,
                if list.is_empty() {
                    "nothing (every packet stayed out of the stack)".to_owned()
                } else {
                    list.join(", ")
                }
            );
        }
    }
    if let Some(m) = r.meets_target {
        println!(
            "target ({}): {}",
            r.target,
            if m { "met" } else { "MISSED" }
        );
    }
    println!("results in {}", out.display());
}

fn write_outputs(dir: &Path, r: &UpfBenchReport) -> Result<(), BenchError> {
    let mut out = Out::create(dir)?;
    out.json("upf.json", r)?;
    let mut csv = String::from(
        "path,direction,packet_size,sessions,pps,ns_per_packet,system_ns_per_packet,forwarded,passed,dropped,p50_us,p99_us\n",
    );
    for c in &r.cases {
        let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.1}"));
        csv.push_str(&format!(
            "{},{},{},{},{:.0},{},{},{},{},{},{},{}\n",
            c.path.label(),
            c.direction.label(),
            c.packet_size,
            c.sessions,
            c.pps,
            opt(c.ns_per_packet),
            opt(c.system_ns_per_packet),
            c.path_forwarded,
            c.path_passed,
            c.path_dropped,
            opt(c.latency_us.as_ref().map(|l| l.p50)),
            opt(c.latency_us.as_ref().map(|l| l.p99)),
        ));
    }
    out.text("upf.csv", csv)?;
    out.plot("upf_pps.svg", |p| {
        plot_by_size(p, r, "packets/s", |c| Some(c.pps))
    })?;
    out.plot("upf_cpu.svg", |p| {
        plot_by_size(p, r, "CPU ns per packet (path's own)", |c| c.ns_per_packet)
    })?;
    out.plot("upf_latency.svg", |p| plot_latency(p, r))?;
    Ok(())
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn series_keys(r: &UpfBenchReport) -> Vec<(PathKind, Direction)> {
    let mut keys = Vec::new();
    for p in [
        PathKind::Xdp,
        PathKind::Tun,
        PathKind::Afxdp,
        PathKind::Ceiling,
    ] {
        for d in [Direction::Uplink, Direction::Downlink] {
            if r.cases.iter().any(|c| c.path == p && c.direction == d) {
                keys.push((p, d));
            }
        }
    }
    keys
}

/// One line per (path, direction) over the packet sizes, at the first session count.
fn plot_by_size(
    path: &Path,
    r: &UpfBenchReport,
    ylabel: &str,
    value: impl Fn(&CaseReport) -> Option<f64>,
) -> Result<(), String> {
    let sessions = r.sessions.first().copied().unwrap_or(0);
    let keys = series_keys(r);
    let ymax = r.cases.iter().filter_map(&value).fold(1.0f64, f64::max) * 1.15;
    let root = svg_root(path, (900, 520))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("UPF user plane: {ylabel} by inner packet size ({sessions} sessions)"),
            ("sans-serif", 18),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..1450f64, 0f64..ymax)
        .map_err(svg_err)?;
    chart
        .configure_mesh()
        .x_desc("inner IPv4 packet size (bytes)")
        .y_desc(ylabel)
        .draw()
        .map_err(svg_err)?;
    for (k, (p, d)) in keys.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let mut pts: Vec<(f64, f64)> = r
            .cases
            .iter()
            .filter(|c| c.path == *p && c.direction == *d && c.sessions == sessions)
            .filter_map(|c| value(c).map(|v| (c.packet_size as f64, v)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if pts.is_empty() {
            continue;
        }
        let label = format!("{} {}", p.label(), d.label());
        line_with_points(&mut chart, pts, color, label)?;
    }
    finish(&mut chart, &root, SeriesLabelPosition::UpperRight)
}

/// Latency CDFs at 128 B (or the one size measured).
fn plot_latency(path: &Path, r: &UpfBenchReport) -> Result<(), String> {
    let sessions = r.sessions.first().copied().unwrap_or(0);
    let size = if r.cases.iter().any(|c| c.packet_size == TARGET_SIZE) {
        TARGET_SIZE
    } else {
        r.cases.first().map_or(TARGET_SIZE, |c| c.packet_size)
    };
    let chosen: Vec<&CaseReport> = r
        .cases
        .iter()
        .filter(|c| c.packet_size == size && c.sessions == sessions && c.latency_us.is_some())
        .collect();
    let xmax = chosen
        .iter()
        .filter_map(|c| c.latency_us.as_ref().map(|l| l.p99))
        .fold(1.0f64, f64::max)
        * 1.3;
    let root = svg_root(path, (900, 520))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("UPF latency CDF, {size} B, paced (one way, generator to sink)"),
            ("sans-serif", 18),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..xmax, 0f64..1.0f64)
        .map_err(svg_err)?;
    chart
        .configure_mesh()
        .x_desc("latency (µs), up to 1.3 × the largest p99")
        .y_desc("fraction of packets")
        .draw()
        .map_err(svg_err)?;
    for (k, c) in chosen.iter().enumerate() {
        let Some(l) = &c.latency_us else { continue };
        let color = COLORS[k % COLORS.len()];
        let pts: Vec<(f64, f64)> = l.cdf.iter().map(|(x, q)| (x.min(xmax), *q)).collect();
        let label = format!("{} {}", c.path.label(), c.direction.label());
        line(&mut chart, pts, color, 2, label, 16)?;
    }
    finish(&mut chart, &root, SeriesLabelPosition::LowerRight)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip_and_foreign_packets_are_ignored() {
        let mut f = vec![0u8; 40];
        stamp(&mut f, 123_456);
        assert_eq!(read_stamp(&f), Some(123_456));
        assert_eq!(read_stamp(&[0u8; 40]), None);
        assert_eq!(read_stamp(&[1, 2, 3]), None);
    }

    #[test]
    fn lines_pair_paths_of_the_same_case() {
        let case = |path, pps, ns| CaseReport {
            path,
            direction: Direction::Uplink,
            packet_size: 128,
            sessions: 64,
            sent: 0,
            received: 0,
            elapsed_s: 1.0,
            pps,
            ns_per_packet: Some(ns),
            system_ns_per_packet: None,
            path_forwarded: 0,
            path_passed: 0,
            path_dropped: 0,
            latency_us: None,
            receive_path: None,
            kernel_drops: None,
            packets_per_poll: None,
            target_pps: None,
        };
        let cases = vec![
            case(PathKind::Ceiling, 3.0, 10.0),
            case(PathKind::Xdp, 2.0, 50.0),
            case(PathKind::Tun, 1.0, 900.0),
        ];
        let l = lines_of(&cases, 64);
        assert_eq!(l.len(), 1);
        assert_eq!((l[0].afxdp_pps, l[0].afxdp_ns_per_packet), (None, None));
        let mut cases = cases;
        cases.push(case(PathKind::Afxdp, 1.5, 400.0));
        let l = lines_of(&cases, 64);
        assert_eq!(
            (l[0].afxdp_pps, l[0].afxdp_ns_per_packet),
            (Some(1.5), Some(400.0))
        );
        assert_eq!(
            (l[0].xdp_pps, l[0].user_pps, l[0].ceiling_pps),
            (2.0, 1.0, 3.0)
        );
        assert_eq!(
            (l[0].xdp_ns_per_packet, l[0].user_ns_per_packet),
            (50.0, 900.0)
        );
        assert!(lines_of(&cases, 65).is_empty());
    }
}
