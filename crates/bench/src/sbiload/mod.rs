//! `steer5g bench sbi`: an SBI load driver that plays the AMF against any vendor's AUSF or
//! UDM over h2c, and measures the target's CPU per operation from /proc next to its own.
//!
//! The target is given by URL (`--ausf`, `--udm`) and, for CPU accounting, by PID
//! (`--target-pid`: that process and every process below it). The subscribers come from the
//! standard CSV (`supi,k,opc,...`, as `steer5g subscriber export` writes it), because 5G-AKA
//! needs each USIM's K and OPc to compute RES*. Cases are the `--streams` values; each is
//! measured `--rounds` times and the median round (by target CPU per operation, or by rate
//! without a target) is reported, every round's figure kept beside it.

mod cpu;
mod driver;
mod exchange;
mod plot;

use std::collections::BTreeMap;
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use crate::sweep::{self, shown, Axis, Out, Sweep, SweepArgs};
use crate::BenchError;

use self::driver::{Load, Tally, Target, Window};
use self::exchange::OpKind;
use self::exchange::{Exchange, Sub};

/// `steer5g bench sbi`.
#[derive(Debug, Args)]
#[command(mut_arg("duration", |a| shown(a, Some("10"),
    "Length of each measured window, in seconds.")))]
#[command(mut_arg("warmup", |a| shown(a, Some("2"),
    "Load before each measured window, in seconds.")))]
#[command(mut_arg("rounds", |a| shown(a, Some("1"),
    "Measure every case this many times, interleaved, and report each case's median round.")))]
#[command(mut_arg("out", |a| shown(a, Some("bench-results"),
    "Directory for sbi.json, sbi.csv and the plots.")))]
pub struct SbiArgs {
    /// The operation: `aka` (5G-AKA through the AUSF: POST, RES*, PUT confirmation), or
    /// `ueau`, `sdm`, `uecm` at the UDM.
    #[arg(long, value_enum, default_value_t = OpKind::Aka)]
    pub(crate) op: OpKind,
    /// The AUSF's API root, for `--op aka` (Open5GS and steer5g both serve it here).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.11:7777")]
    pub(crate) ausf: String,
    /// The UDM's API root, for `--op ueau|sdm|uecm`.
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.12:7777")]
    pub(crate) udm: String,
    /// Subscribers the target knows (`supi,k,opc,...`: the CSV of `steer5g subscriber
    /// export|generate`); operations take them in turn.
    #[arg(long, value_name = "FILE.csv")]
    pub(crate) subscribers: PathBuf,
    /// Process whose CPU (with every process below it) is charged to the operations.
    #[arg(long, value_name = "PID")]
    pub(crate) target_pid: Option<u32>,
    /// HTTP/2 connections to the target.
    #[arg(long, value_name = "C", default_value_t = 4)]
    pub(crate) connections: usize,
    /// Concurrent streams per connection (closed loop), a comma-separated list of cases.
    #[arg(long, value_name = "K", value_delimiter = ',', default_value = "32")]
    pub(crate) streams: Vec<usize>,
    /// Open loop: start this many operations per second (all connections together); K
    /// bounds each connection's operations in flight, and a start beyond it is skipped.
    #[arg(long, value_name = "OPS")]
    pub(crate) rate: Option<f64>,
    /// Driver threads (each a single-threaded runtime owning its share of connections).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) threads: usize,
    /// Pin driver thread i to CPU `CPU + i` (pin the target elsewhere, e.g. with taskset).
    #[arg(long, value_name = "CPU")]
    pub(crate) pin: Option<usize>,
    /// A request without an answer after this many milliseconds fails as `timeout`.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub(crate) timeout_ms: u64,
    /// Mobile country code of the serving network (its name goes into every request).
    #[arg(long, default_value = "001")]
    pub(crate) mcc: String,
    /// Mobile network code of the serving network.
    #[arg(long, default_value = "01")]
    pub(crate) mnc: String,
    /// Also time `openssl speed -seconds 3 ecdhx25519` and express the target's CPU per
    /// operation in those X25519 operations (a unit that travels between machines).
    #[arg(long)]
    pub(crate) x25519_unit: bool,
    /// `--duration`, `--warmup`, `--rounds`, `--out`.
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
}

#[derive(Debug, Clone, Serialize)]
struct Settings {
    op: OpKind,
    target_url: String,
    target_pid: Option<u32>,
    subscribers: usize,
    connections: usize,
    streams: Vec<usize>,
    mode: &'static str,
    rate: Option<f64>,
    threads: usize,
    pin: Option<usize>,
    timeout_ms: u64,
    serving_network: String,
    warmup_s: f64,
    duration_s: f64,
    rounds: u32,
}

/// Percentiles of the successful operations' latency, µs.
#[derive(Debug, Clone, Serialize)]
struct Latency {
    p50: u64,
    p90: u64,
    p99: u64,
    p999: u64,
    max: u64,
    mean: f64,
}

/// One case's measured round.
#[derive(Debug, Clone, Serialize)]
struct CaseReport {
    streams: usize,
    ok: u64,
    failed: u64,
    /// Failed operations by cause (HTTP status and 3GPP cause, or what the driver saw).
    failures: BTreeMap<String, u64>,
    /// Open loop: starts skipped because every stream of the connection was busy.
    skipped: u64,
    window_s: f64,
    ops_per_s: f64,
    latency_us: Latency,
    /// CPU of the target's process tree in the window, seconds (none without --target-pid).
    target_cpu_s: Option<f64>,
    target_cpu_us_per_op: Option<f64>,
    /// CPUs the target kept busy on average.
    target_utilisation: Option<f64>,
    /// The target's CPU per operation in `openssl speed ecdhx25519` operations.
    target_cpu_per_op_x25519: Option<f64>,
    driver_cpu_s: f64,
    /// The driver's CPU per operation run (succeeded or failed).
    driver_cpu_us_per_op: f64,
    driver_utilisation: f64,
    /// Successful operations in each second of the window.
    per_second: Vec<u64>,
    /// Every round's key figure, in the order run.
    rounds_key: Vec<f64>,
}

impl sweep::Round for CaseReport {
    fn ok(&self) -> bool {
        self.ok > 0
    }

    fn key(&self) -> f64 {
        self.target_cpu_us_per_op.unwrap_or(self.ops_per_s)
    }

    fn keep_rounds(&mut self, all: &[Self]) {
        self.rounds_key = all.iter().map(sweep::Round::key).collect();
    }
}

#[derive(Debug, Serialize)]
struct Report {
    scenario: &'static str,
    command: String,
    machine: crate::machine::Machine,
    settings: Settings,
    /// `openssl speed -seconds 3 ecdhx25519` on this machine in this run, µs per operation.
    openssl_x25519_us: Option<f64>,
    cases: Vec<CaseReport>,
    files: Vec<String>,
}

/// Runs `steer5g bench sbi`.
pub(crate) fn run(json: bool, args: &SbiArgs) -> Result<(), BenchError> {
    args.sweep.only(
        "sbi",
        &[Axis::Warmup, Axis::Duration, Axis::Rounds, Axis::Out],
    )?;
    let usage = |m: String| BenchError::Invalid(m);
    if args.connections == 0 || args.streams.contains(&0) || args.threads == 0 {
        return Err(usage(
            "--connections, --streams and --threads must be at least 1".into(),
        ));
    }
    if args.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return Err(usage("--rate must be a positive number".into()));
    }
    let warmup = args.sweep.warmup_s();
    let duration = args.sweep.duration_s();
    if !(duration.is_finite() && duration > 0.0 && duration <= 3600.0) {
        return Err(usage("--duration must be in (0, 3600] seconds".into()));
    }
    if !(warmup.is_finite() && (0.0..=600.0).contains(&warmup)) {
        return Err(usage("--warmup must be in [0, 600] seconds".into()));
    }
    let rounds = args.sweep.rounds(100)?;
    let url = if args.op.at_ausf() {
        &args.ausf
    } else {
        &args.udm
    };
    let target = parse_target(url).map_err(usage)?;
    let subs = load_subscribers(args)?;
    let exchange = Exchange::new(args.op, &args.mcc, &args.mnc)
        .map_err(|e| usage(format!("--mcc/--mnc: {e}")))?;
    if let Some(pid) = args.target_pid {
        if cpu::tree(pid).is_empty() {
            return Err(usage(format!("--target-pid {pid}: no such process")));
        }
    }
    let openssl_x25519_us = if args.x25519_unit {
        Some(openssl_x25519_us().map_err(BenchError::Failed)?)
    } else {
        None
    };
    let settings = Settings {
        op: args.op,
        target_url: url.clone(),
        target_pid: args.target_pid,
        subscribers: subs.len(),
        connections: args.connections,
        streams: args.streams.clone(),
        mode: if args.rate.is_some() {
            "open"
        } else {
            "closed"
        },
        rate: args.rate,
        threads: args.threads,
        pin: args.pin,
        timeout_ms: args.timeout_ms,
        serving_network: exchange.serving_network().to_owned(),
        warmup_s: warmup,
        duration_s: duration,
        rounds,
    };
    let load = Load {
        target,
        exchange: Arc::new(exchange),
        subs: Arc::new(subs),
        connections: args.connections,
        streams: 0,
        threads: args.threads,
        rate: args.rate,
        timeout: Duration::from_millis(args.timeout_ms.max(1)),
        pin: args.pin,
    };
    let mut out = Out::create(&args.sweep.out_or("bench-results"))?;
    let per_case = Sweep::new(&args.streams, rounds).run(
        |k| format!("{} K={k}", args.op_label()),
        |v| {
            let mut load = load.clone();
            load.streams = *v.case;
            measure(&load, args.target_pid, warmup, duration, openssl_x25519_us)
        },
    )?;
    let cases: Vec<CaseReport> = per_case.into_iter().filter_map(sweep::median).collect();
    let mut report = Report {
        scenario: "sbi",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine: sweep::machine(),
        settings,
        openssl_x25519_us,
        cases,
        files: Vec::new(),
    };
    out.text("sbi.csv", csv(&report))?;
    out.plot("sbi-latency.svg", |p| plot::latency(p, &report.cases))?;
    out.plot("sbi-rate.svg", |p| plot::rate(p, &report.cases))?;
    report.files = out
        .wrote()
        .iter()
        .map(|p| p.display().to_string())
        .chain(std::iter::once(
            out.dir().join("sbi.json").display().to_string(),
        ))
        .collect();
    out.json("sbi.json", &report)?;
    if json {
        crate::print_json(&report)?;
    } else {
        print_table(&report);
        println!("wrote {}", out.list());
    }
    if report.cases.iter().all(|c| c.ok == 0) {
        return Err(BenchError::Failed(format!(
            "no operation succeeded against {url}: {}",
            report
                .cases
                .first()
                .map(|c| format!("{:?}", c.failures))
                .unwrap_or_default()
        )));
    }
    Ok(())
}

impl SbiArgs {
    fn op_label(&self) -> &'static str {
        match self.op {
            OpKind::Aka => "5G-AKA",
            OpKind::Ueau => "UEAU",
            OpKind::Sdm => "SDM am-data",
            OpKind::Uecm => "UECM registration",
        }
    }
}

fn measure(
    load: &Load,
    target_pid: Option<u32>,
    warmup: f64,
    duration: f64,
    x25519_us: Option<f64>,
) -> Result<CaseReport, BenchError> {
    let start = Instant::now();
    let from = start + Duration::from_secs_f64(warmup);
    let until = from + Duration::from_secs_f64(duration);
    let window = Window { start, from, until };
    let pids = target_pid.map(cpu::tree).unwrap_or_default();
    // The CPU of both sides is read at the window's edges, by this thread, while the
    // driver threads run.
    let sampler = std::thread::spawn(move || {
        std::thread::sleep(from.saturating_duration_since(Instant::now()));
        let t0 = (cpu::ns(&pids), cpu::own_ns(), Instant::now());
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
        let t1 = (cpu::ns(&pids), cpu::own_ns(), Instant::now());
        (t0, t1)
    });
    let tallies = driver::run(load, window).map_err(BenchError::Failed)?;
    let ((target0, own0, at0), (target1, own1, at1)) = sampler
        .join()
        .map_err(|_| BenchError::Failed("the CPU sampler panicked".into()))?;
    let mut all = Tally::new(window.seconds()).map_err(BenchError::Failed)?;
    for t in &tallies {
        all.merge(t);
    }
    let window_s = (at1 - at0).as_secs_f64().max(1e-9);
    // The target's CPU is charged to the operations that succeeded; the driver's to every
    // operation it ran, since a refused one costs it about as much.
    let per = |ns: u64, ops: u64| {
        if ops > 0 {
            ns as f64 / 1e3 / ops as f64
        } else {
            0.0
        }
    };
    let per_op = |ns: u64| per(ns, all.ok);
    // The sampler thread's own reads are part of this process's CPU; they are small
    // (two walks of /proc) and are left in, so that the figure never flatters the driver.
    let own = own1.saturating_sub(own0);
    let target = target_pid.map(|_| target1.saturating_sub(target0));
    let h = &all.latency;
    Ok(CaseReport {
        streams: load.streams,
        ok: all.ok,
        failed: all.failed(),
        failures: all.failures.clone(),
        skipped: all.skipped,
        window_s,
        ops_per_s: all.ok as f64 / window_s,
        latency_us: Latency {
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
        },
        target_cpu_s: target.map(|ns| ns as f64 / 1e9),
        target_cpu_us_per_op: target.map(per_op),
        target_utilisation: target.map(|ns| ns as f64 / 1e9 / window_s),
        target_cpu_per_op_x25519: target.zip(x25519_us).map(|(ns, unit)| per_op(ns) / unit),
        driver_cpu_s: own as f64 / 1e9,
        driver_cpu_us_per_op: per(own, all.ok + all.failed()),
        driver_utilisation: own as f64 / 1e9 / window_s,
        per_second: all.per_second.clone(),
        rounds_key: Vec::new(),
    })
}

/// `http://host:port` (a path after it is ignored): the address to connect to and the
/// authority to name.
fn parse_target(url: &str) -> Result<Target, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: only http:// (h2c) targets are supported"))?;
    let authority = rest.split('/').next().unwrap_or_default().to_owned();
    let with_port = if authority.contains(':') && !authority.ends_with(']') {
        authority.clone()
    } else {
        format!("{authority}:80")
    };
    let addr = with_port
        .to_socket_addrs()
        .map_err(|e| format!("{url}: {e}"))?
        .next()
        .ok_or_else(|| format!("{url}: no address"))?;
    Ok(Target { addr, authority })
}

fn load_subscribers(args: &SbiArgs) -> Result<Vec<Sub>, BenchError> {
    let text = std::fs::read_to_string(&args.subscribers)
        .map_err(|e| BenchError::Invalid(format!("{}: {e}", args.subscribers.display())))?;
    let rows = store::csv::parse_csv(&text)
        .map_err(|e| BenchError::Invalid(format!("{}: {e}", args.subscribers.display())))?;
    if rows.is_empty() {
        return Err(BenchError::Invalid(format!(
            "{}: no subscribers",
            args.subscribers.display()
        )));
    }
    Ok(rows
        .into_iter()
        .map(|s| {
            let opc = s.opc();
            Sub::new(s.supi, s.k, opc)
        })
        .collect())
}

/// µs per X25519 operation by `openssl speed -seconds 3 ecdhx25519`.
fn openssl_x25519_us() -> Result<f64, String> {
    crate::floor::openssl_ecdh(3)
        .and_then(|f| f.x25519_us)
        .ok_or_else(|| {
            "openssl speed gave no X25519 figure (install openssl, or drop --x25519-unit)".into()
        })
}

fn csv(r: &Report) -> String {
    let mut s = String::from(
        "op,connections,streams,ok,failed,skipped,ops_per_s,p50_us,p99_us,target_cpu_us_per_op,target_utilisation,target_cpu_per_op_x25519,driver_cpu_us_per_op,driver_utilisation\n",
    );
    let opt = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_default();
    for c in &r.cases {
        s.push_str(&format!(
            "{},{},{},{},{},{},{:.1},{},{},{},{},{},{:.3},{:.3}\n",
            r.settings.op.name(),
            r.settings.connections,
            c.streams,
            c.ok,
            c.failed,
            c.skipped,
            c.ops_per_s,
            c.latency_us.p50,
            c.latency_us.p99,
            opt(c.target_cpu_us_per_op),
            opt(c.target_utilisation),
            opt(c.target_cpu_per_op_x25519),
            c.driver_cpu_us_per_op,
            c.driver_utilisation,
        ));
    }
    s
}

fn print_table(r: &Report) {
    let s = &r.settings;
    println!(
        "bench sbi: {} at {} ({} subscribers), {} connections, {} loop{}, {} driver thread(s)",
        s.op.name(),
        s.target_url,
        s.subscribers,
        s.connections,
        s.mode,
        s.rate.map(|r| format!(" at {r} ops/s")).unwrap_or_default(),
        s.threads
    );
    if let Some(u) = r.openssl_x25519_us {
        println!("openssl speed ecdhx25519: {u:.1} µs per operation");
    }
    println!(
        "{:>6} {:>10} {:>8} {:>8} {:>8} {:>13} {:>8} {:>13} {:>8}",
        "K",
        "ops/s",
        "failed",
        "p50 µs",
        "p99 µs",
        "target µs/op",
        "x25519",
        "driver µs/op",
        "driver"
    );
    let opt =
        |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or_else(|| "-".into());
    for c in &r.cases {
        println!(
            "{:>6} {:>10.0} {:>8} {:>8} {:>8} {:>13} {:>8} {:>13.1} {:>7.0}%",
            c.streams,
            c.ops_per_s,
            c.failed + c.skipped,
            c.latency_us.p50,
            c.latency_us.p99,
            opt(c.target_cpu_us_per_op, 1),
            opt(c.target_cpu_per_op_x25519, 2),
            c.driver_cpu_us_per_op,
            c.driver_utilisation * 100.0,
        );
        for (cause, n) in &c.failures {
            println!("       failed {n}: {cause}");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        let t = parse_target("http://127.0.0.11:7777").unwrap();
        assert_eq!(t.addr.to_string(), "127.0.0.11:7777");
        assert_eq!(t.authority, "127.0.0.11:7777");
        assert!(parse_target("https://127.0.0.1:7777").is_err());
        assert_eq!(parse_target("http://127.0.0.1").unwrap().addr.port(), 80);
    }
}
