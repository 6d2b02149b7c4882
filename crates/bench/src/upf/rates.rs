//! `bench upf --rates`: the offered-load sweep of reference 004 §IV-V pointed at our UPF.
//! Each step paces the generator at one rate (the last may be `max`), on the TUN path or
//! the XDP path, and attaches the receive-path probe to the UPF's namespace, so that every
//! step records how many packets each kernel stage saw and for how long, how many packets
//! one NAPI poll carried, and where packets were dropped: in the kernel (kfree_skb reason)
//! or by the path itself (its own counters), against what was offered and what arrived.
//!
//! The links are veth pairs between namespaces: every figure is labelled with that
//! interface, since a veth's receive path (no hardware queue, NAPI only through the
//! backlog or XDP) is not a NIC's.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use probe::sweep::Rate;

use super::*;

/// The paths swept unless `--paths` says otherwise: the kernel's own receive path into
/// our user-space packet thread, and the XDP program that keeps packets out of it.
const DEFAULT_PATHS: [PathKind; 2] = [PathKind::Tun, PathKind::Xdp];
/// Bounds on the steps of one sweep, so that a sweep stays bounded in time.
const MAX_RATES: usize = 16;
/// What every figure of this sweep ran over.
const INTERFACE: &str = "veth pairs between network namespaces (ran, upf, dn)";

/// The content of upf-rates.json and of `--json`.
#[derive(Debug, Serialize)]
struct RatesReport {
    scenario: &'static str,
    command: String,
    machine: Machine,
    interface: &'static str,
    packet_size: usize,
    sessions: u32,
    /// The TUN path's N3 receive buffer asked for, bytes (0: the kernel's default).
    n3_recv_buffer: usize,
    /// GRO (and with it NAPI) on the UPF's veths, if the run set it.
    veth_gro: Option<bool>,
    duration_s: f64,
    warmup_s: f64,
    /// Highest packets/s the generator offered, per path and direction.
    highest_offered_pps: Vec<(PathKind, Direction, f64)>,
    steps: Vec<CaseReport>,
    notes: Vec<&'static str>,
}

fn offered_pps(c: &CaseReport) -> f64 {
    c.sent as f64 / c.elapsed_s.max(1e-9)
}

fn kernel_dropped(c: &CaseReport) -> u64 {
    c.kernel_drops.as_ref().map_or(0, |d| d.values().sum())
}

pub(super) fn run(json: bool, args: &UpfArgs, rates: &[String]) -> Result<(), BenchError> {
    let rates: Vec<Rate> = rates
        .iter()
        .map(|r| Rate::parse(r).map_err(BenchError::Invalid))
        .collect::<Result<_, _>>()?;
    if rates.is_empty() || rates.len() > MAX_RATES {
        return Err(BenchError::Invalid(format!(
            "--rates: 1 to {MAX_RATES} rates"
        )));
    }
    let size = args.packet_size.unwrap_or(TARGET_SIZE);
    if !(64..=1400).contains(&size) {
        return Err(BenchError::Invalid(format!(
            "--packet-size {size}: must be between 64 and 1400"
        )));
    }
    let directions = match args.direction.unwrap_or(DirectionArg::Uplink) {
        DirectionArg::Uplink => vec![Direction::Uplink],
        DirectionArg::Downlink => vec![Direction::Downlink],
        DirectionArg::Both => vec![Direction::Uplink, Direction::Downlink],
    };
    let paths = args.paths.clone().unwrap_or_else(|| DEFAULT_PATHS.to_vec());
    let sessions = args.sessions.first().copied().unwrap_or(64);
    if sessions == 0 || sessions > 16_000 {
        return Err(BenchError::Invalid(
            "--sessions: between 1 and 16000 (the UE pool is a /18)".to_owned(),
        ));
    }
    let duration = secs("duration", args.sweep.duration_s(), 60.0)?;
    let warmup = secs("warmup", args.sweep.warmup_s(), 10.0)?;
    need_root()?;
    let machine = Machine::probe();
    let was_on = upf_xdp::set_bpf_stats(true).map_err(|e| failed("bpf stats", e))?;

    let mut plan: Vec<(PathKind, Direction, Rate)> = Vec::new();
    for &p in &paths {
        for &d in &directions {
            for &r in &rates {
                plan.push((p, d, r));
            }
        }
    }
    let mut lab: Option<(PathKind, Lab)> = None;
    let result = Sweep::new(&plan, 1).run(
        |(p, d, r)| format!("{} {} {}", p.label(), d.label(), rate_label(*r)),
        |v| {
            let &(path, dir, rate) = v.case;
            if lab.as_ref().map(|(p, _)| *p) != Some(path) {
                lab = None;
                lab = Some((path, Lab::new(path, sessions, &LabTuning::of(args))?));
            }
            let Some((_, l)) = lab.as_mut() else {
                return Err(BenchError::Failed("no lab".into()));
            };
            let cfg = CaseCfg {
                duration,
                warmup,
                latency_samples: 0,
                probe: true,
                rate: match rate {
                    Rate::Pps(p) => Some(p),
                    Rate::Max => None,
                },
            };
            l.run_case(dir, size, &cfg)
        },
    );
    drop(lab);
    let _ = upf_xdp::set_bpf_stats(was_on);
    let steps: Vec<CaseReport> = result?.into_iter().flatten().collect();

    let mut highest = Vec::new();
    for &p in &paths {
        for &d in &directions {
            let top = steps
                .iter()
                .filter(|c| c.path == p && c.direction == d)
                .map(offered_pps)
                .fold(0.0f64, f64::max);
            highest.push((p, d, top));
        }
    }
    let report = RatesReport {
        scenario: "upf-rates",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        interface: INTERFACE,
        packet_size: size,
        sessions,
        n3_recv_buffer: args.n3_rcvbuf,
        veth_gro: args.veth_gro,
        duration_s: duration.as_secs_f64(),
        warmup_s: warmup.as_secs_f64(),
        highest_offered_pps: highest,
        steps,
        notes: vec![
            "stages are the probe's tracepoints in the UPF's namespace; IP and transport are one stage (no tracepoint between them on this kernel)",
            "XDP packets never reach the stack: their cost is the program's own run time (ns_per_packet), not a probe stage",
            "the probe's own cost is inside the stage times (steer5g probe overhead measures it)",
        ],
    };
    let out = args.sweep.out_or("bench-results");
    write_rates(&out, &report)?;
    if json {
        println!(
            "{}",
            serde_json::to_string(&report).map_err(|e| failed("json", e))?
        );
    } else {
        print_rates(&report, &out);
    }
    Ok(())
}

fn rate_label(r: Rate) -> String {
    match r {
        Rate::Pps(p) => format!("{p} pps"),
        Rate::Max => "max".to_owned(),
    }
}

fn print_rates(r: &RatesReport, out: &Path) {
    println!(
        "UPF offered-load sweep, {} B inner packets, {} sessions, over {}",
        r.packet_size, r.sessions, r.interface
    );
    println!(
        "{:>5} {:>8} {:>10} {:>11} {:>11} {:>9} {:>9} {:>8} {:>10} {:>12}",
        "path",
        "dir",
        "target",
        "offered/s",
        "delivered/s",
        "path drop",
        "kern drop",
        "pkt/poll",
        "path ns/p",
        "softirq ns/p"
    );
    for c in &r.steps {
        // The stages nest (a NAPI poll inside the NET_RX softirq, the protocol inside the
        // poll): the softirq's own time is the stack's whole receive cost per packet.
        let softirq = c
            .receive_path
            .iter()
            .flatten()
            .find(|s| s.stage == "softirq_net_rx")
            .map_or(0.0, |s| s.ns_per_packet);
        println!(
            "{:>5} {:>8} {:>10} {:>11.0} {:>11.0} {:>9} {:>9} {:>8.2} {:>10.0} {:>12.0}",
            c.path.label(),
            c.direction.label(),
            c.target_pps.map_or("max".to_owned(), |p| p.to_string()),
            offered_pps(c),
            c.pps,
            c.path_dropped,
            kernel_dropped(c),
            c.packets_per_poll.unwrap_or(0.0),
            c.ns_per_packet.unwrap_or(0.0),
            softirq
        );
    }
    for (p, d, top) in &r.highest_offered_pps {
        println!(
            "highest offered: {} {} {top:.0} packets/s",
            p.label(),
            d.label()
        );
    }
    println!("results in {}", out.display());
}

fn write_rates(dir: &Path, r: &RatesReport) -> Result<(), BenchError> {
    let mut out = Out::create(dir)?;
    out.json("upf-rates.json", r)?;
    let mut csv = String::from(
        "path,direction,target_pps,offered_pps,delivered_pps,path_dropped,kernel_dropped,packets_per_poll,path_ns_per_packet\n",
    );
    let mut stages =
        String::from("path,direction,target_pps,offered_pps,stage,per_packet,ns_per_packet\n");
    for c in &r.steps {
        let target = c.target_pps.map_or("max".to_owned(), |p| p.to_string());
        let _ = writeln!(
            csv,
            "{},{},{target},{:.0},{:.0},{},{},{:.3},{:.1}",
            c.path.label(),
            c.direction.label(),
            offered_pps(c),
            c.pps,
            c.path_dropped,
            kernel_dropped(c),
            c.packets_per_poll.unwrap_or(0.0),
            c.ns_per_packet.unwrap_or(0.0),
        );
        for s in c.receive_path.iter().flatten() {
            let _ = writeln!(
                stages,
                "{},{},{target},{:.0},{},{:.3},{:.1}",
                c.path.label(),
                c.direction.label(),
                offered_pps(c),
                s.stage,
                s.per_packet,
                s.ns_per_packet
            );
        }
    }
    out.text("upf-rates.csv", csv)?;
    out.text("upf-rates-stages.csv", stages)?;
    let mut keys: Vec<(PathKind, Direction)> = Vec::new();
    for c in &r.steps {
        if !keys.contains(&(c.path, c.direction)) {
            keys.push((c.path, c.direction));
        }
    }
    for &(p, d) in &keys {
        let name = format!("upf-rates-stages-{}-{}.svg", p.label(), d.label());
        out.plot(&name, |f| plot_stages(f, r, p, d))?;
    }
    out.plot("upf-rates-delivery.svg", |f| plot_delivery(f, r, &keys))?;
    Ok(())
}

/// Time per delivered packet of each stage (and the path's own), against offered packets/s.
fn plot_stages(file: &Path, r: &RatesReport, path: PathKind, dir: Direction) -> Result<(), String> {
    let steps: Vec<&CaseReport> = r
        .steps
        .iter()
        .filter(|c| c.path == path && c.direction == dir)
        .collect();
    let names: BTreeSet<&str> = steps
        .iter()
        .flat_map(|c| c.receive_path.iter().flatten())
        .filter(|s| s.ns_per_packet > 0.0)
        .map(|s| s.stage)
        .collect();
    let mut series: Vec<(String, Vec<(f64, f64)>)> = names
        .iter()
        .map(|n| {
            let pts = steps
                .iter()
                .map(|c| {
                    let v = c
                        .receive_path
                        .iter()
                        .flatten()
                        .find(|s| s.stage == *n)
                        .map_or(0.0, |s| s.ns_per_packet);
                    (offered_pps(c), v)
                })
                .collect();
            ((*n).to_owned(), pts)
        })
        .collect();
    series.push((
        format!("{} path's own", path.label()),
        steps
            .iter()
            .filter_map(|c| c.ns_per_packet.map(|v| (offered_pps(c), v)))
            .collect(),
    ));
    let title = format!(
        "UPF {} {}: ns per delivered packet by stage ({} B, {})",
        path.label(),
        dir.label(),
        r.packet_size,
        "veth"
    );
    draw_lines(file, &title, "ns per delivered packet", series)
}

/// Delivered and dropped (by the kernel, by the path) packets/s against offered.
fn plot_delivery(
    file: &Path,
    r: &RatesReport,
    keys: &[(PathKind, Direction)],
) -> Result<(), String> {
    let mut series = Vec::new();
    for &(p, d) in keys {
        let steps: Vec<&CaseReport> = r
            .steps
            .iter()
            .filter(|c| c.path == p && c.direction == d)
            .collect();
        let per_s = |c: &CaseReport, n: u64| n as f64 / c.elapsed_s.max(1e-9);
        let tag = format!("{} {}", p.label(), d.label());
        series.push((
            format!("{tag} delivered"),
            steps.iter().map(|c| (offered_pps(c), c.pps)).collect(),
        ));
        series.push((
            format!("{tag} dropped in the kernel"),
            steps
                .iter()
                .map(|c| (offered_pps(c), per_s(c, kernel_dropped(c))))
                .collect(),
        ));
        series.push((
            format!("{tag} dropped by the path"),
            steps
                .iter()
                .map(|c| (offered_pps(c), per_s(c, c.path_dropped)))
                .collect(),
        ));
    }
    let title = format!(
        "UPF: delivered and dropped against offered ({} B, veth)",
        r.packet_size
    );
    draw_lines(file, &title, "packets/s", series)
}

fn draw_lines(
    file: &Path,
    title: &str,
    ylabel: &str,
    series: Vec<(String, Vec<(f64, f64)>)>,
) -> Result<(), String> {
    let xmax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.0))
        .fold(1.0f64, f64::max)
        * 1.05;
    let ymax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold(1.0f64, f64::max)
        * 1.15;
    let root = svg_root(file, (960, 560))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(svg_err)?;
    chart
        .configure_mesh()
        .x_desc("offered packets/s")
        .y_desc(ylabel)
        .draw()
        .map_err(svg_err)?;
    for (k, (label, mut pts)) in series.into_iter().enumerate() {
        if pts.is_empty() {
            continue;
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        line_with_points(&mut chart, pts, COLORS[k % COLORS.len()], label)?;
    }
    finish(&mut chart, &root, SeriesLabelPosition::UpperLeft)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn offered_and_dropped_come_from_the_window() {
        let mut drops = BTreeMap::new();
        drops.insert("SOCKET_RCVBUFF".to_owned(), 30);
        drops.insert("NO_SOCKET".to_owned(), 12);
        let c = CaseReport {
            path: PathKind::Tun,
            direction: Direction::Uplink,
            packet_size: 128,
            sessions: 64,
            sent: 20_000,
            received: 19_000,
            elapsed_s: 2.0,
            pps: 9_500.0,
            ns_per_packet: Some(900.0),
            system_ns_per_packet: None,
            path_forwarded: 19_000,
            path_passed: 0,
            path_dropped: 5,
            latency_us: None,
            receive_path: None,
            kernel_drops: Some(drops),
            packets_per_poll: Some(1.5),
            target_pps: Some(10_000),
        };
        assert_eq!(offered_pps(&c), 10_000.0);
        assert_eq!(kernel_dropped(&c), 42);
        assert_eq!(rate_label(Rate::Max), "max");
        assert_eq!(rate_label(Rate::Pps(5)), "5 pps");
    }
}
