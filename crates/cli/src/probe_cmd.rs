//! `steer5g probe`: attach the receive-path profiler for `--duration` seconds (SIGINT or
//! SIGTERM end it early, with the report), then print the stage table, or one JSON object
//! with `--json`, and with `--out DIR` write stages.csv, histograms.csv, stages.svg and
//! probe.json there. `steer5g probe sweep`: the offered-load sweep over namespaces of its
//! own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use probe::netns::{self, NetnsSpec};
use probe::sweep::topo::Steering;
use probe::sweep::{self, Condition, Rate};
use probe::{Filter, Probe, Reading};

use crate::cli::Global;
use crate::exit::CliError;

/// The longest one probe runs: the probe is an interval measurement, not a daemon.
const PROBE_MAX: Duration = Duration::from_secs(24 * 3600);

/// Arguments of `steer5g probe`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct ProbeArgs {
    #[command(subcommand)]
    action: Option<ProbeAction>,
    #[command(flatten)]
    interval: IntervalArgs,
}

#[derive(Debug, Subcommand)]
enum ProbeAction {
    /// The offered-load sweep of reference 004: UDP from a generator namespace to a
    /// receiver namespace over veth, one step per rate, idle and under a competing
    /// CPU-bound task; table, --json, and CSV and plots in --out.
    Sweep(SweepArgs),
    /// The probe's own cost: the same UDP load with the probe detached and attached, round
    /// after round: CPU per packet both ways and the overhead per event.
    Overhead(OverheadArgs),
}

#[derive(Debug, Args)]
struct OverheadArgs {
    /// Offered datagrams per second (keep it below the onset of drops).
    #[arg(long, default_value = "50k", value_parser = Rate::parse)]
    rate: Rate,
    /// UDP payload octets (at least 16, the probe's tag).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(16..=1472))]
    size: u16,
    /// Seconds per round.
    #[arg(long, default_value_t = 3.0)]
    step_seconds: f64,
    /// Rounds each way, interleaved (detached, attached, ...); medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// The generator's CPU.
    #[arg(long, default_value_t = 0)]
    gen_cpu: usize,
    /// The receiver's CPU.
    #[arg(long, default_value_t = 1)]
    rx_cpu: usize,
    /// Directory for overhead.json.
    #[arg(long, default_value = "probe-overhead", value_name = "DIR")]
    out: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ConditionArg {
    Idle,
    Loaded,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProtoArg {
    Udp,
    Tcp,
}

/// What the sweep's generator sends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TargetArg {
    /// A plain UDP socket read by the probe's own thread.
    Sink,
    /// Our AMF (`steer5g core`): NGAP over SCTP over UDP from the RAN emulator.
    Amf,
    /// Our UPF's TUN path: GTP-U (`bench upf --rates --paths tun`).
    UpfTun,
    /// Our UPF's XDP path: GTP-U (`bench upf --rates --paths xdp`).
    UpfXdp,
}

#[derive(Debug, Args)]
struct SweepArgs {
    /// What receives: a UDP sink, our AMF, or our UPF on its TUN or XDP path.
    #[arg(long, value_enum, default_value_t = TargetArg::Sink)]
    target: TargetArg,
    /// Offered rates, comma-separated (`k`, `m` suffixes; `max`: as fast as the generator
    /// sends): datagrams per second for sink, UE runs per second for amf, GTP-U packets per
    /// second for the UPF. Default: 10k,20k,50k,100k,200k,400k,max (sink),
    /// 100,300,1000,3000,6000,10000,max (amf), 10k,20k,50k,80k,110k,max (UPF).
    #[arg(long, value_delimiter = ',', value_parser = Rate::parse)]
    rates: Option<Vec<Rate>>,
    /// Where the receiver's softirq runs: RPS to --rx-cpu (rps), RFS over every CPU (rfs),
    /// or the sender's CPU, as without either (off). Not for the UPF targets.
    #[arg(long, default_value = "rps", value_parser = Steering::parse)]
    rx_steering: Steering,
    /// The sink's transport: tagged UDP datagrams, or messages on one TCP connection per
    /// step (sink only).
    #[arg(long, value_enum, default_value_t = ProtoArg::Udp)]
    proto: ProtoArg,
    /// UDP payload or TCP message octets (at least 16, the probe's tag).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(16..=1472))]
    size: u16,
    /// Seconds per step.
    #[arg(long, default_value_t = 2.0)]
    step_seconds: f64,
    /// Most datagrams (TCP: messages) per step.
    #[arg(long, default_value_t = 2_000_000)]
    max_packets: u64,
    /// The receiver's CPU otherwise idle, shared with a pinned CPU-bound task, or both
    /// (the default; idle for the UPF targets, whose lab runs that one only).
    #[arg(long, value_enum)]
    condition: Option<ConditionArg>,
    /// The generator's CPU.
    #[arg(long, default_value_t = 0)]
    gen_cpu: usize,
    /// The receiver's CPU: its softirq (by RPS) and its reading thread.
    #[arg(long, default_value_t = 1)]
    rx_cpu: usize,
    /// Directory for sweep.json, sweep.csv and the plots.
    #[arg(long, default_value = "probe-sweep", value_name = "DIR")]
    out: PathBuf,
}

#[derive(Debug, Args)]
struct IntervalArgs {
    /// Seconds to profile; SIGINT or SIGTERM end the interval early and still report.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Count only packets of this network namespace: a name under /run/netns, a path
    /// (/proc/PID/ns/net) or an inode number.
    #[arg(long, value_name = "NAME|PATH|INODE")]
    netns: Option<String>,
    /// Count only packets received on this interface: a name (looked up inside --netns) or
    /// an index.
    #[arg(long, value_name = "NAME|INDEX")]
    iface: Option<String>,
    /// Attribute wake-ups, reads and receive syscalls to this process only.
    #[arg(long)]
    pid: Option<u32>,
    /// Directory for stages.csv, histograms.csv, stages.svg and probe.json.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Time tagged UDP datagrams from the driver to the read (`read_by_sequence`): the
    /// probe then reads the first 16 octets of UDP payloads and receive buffers.
    #[arg(long)]
    tagged: bool,
}

/// Runs `steer5g probe`.
pub(crate) fn run(global: &Global, args: &ProbeArgs) -> Result<(), CliError> {
    match &args.action {
        Some(ProbeAction::Sweep(s)) => run_sweep(global, s),
        Some(ProbeAction::Overhead(o)) => run_overhead(global, o),
        None => run_interval(global, &args.interval),
    }
}

fn run_interval(global: &Global, args: &IntervalArgs) -> Result<(), CliError> {
    if !(args.duration > 0.0 && args.duration.is_finite()) {
        return Err(CliError::Usage(format!(
            "--duration must be a positive number of seconds, not {}",
            args.duration
        )));
    }
    let limit = Duration::from_secs_f64(args.duration).min(PROBE_MAX);
    let filter = resolve_filter(args)?;
    let probe = Probe::attach(filter).map_err(probe_error)?;
    tracing::info!(
        programs = probe.programs().len(),
        "probe attached (tp_btf only; tracefs not needed)"
    );
    let before = Reading::now(probe.snapshot().map_err(probe_error)?);
    wait(limit)?;
    let after = Reading::now(probe.snapshot().map_err(probe_error)?);
    // Detach before printing: nothing of the probe outlives the interval.
    drop(probe);
    let report = probe::report::build(&before, &after, filter, &probe::drop_reason_names());
    if let Some(dir) = &args.out {
        write_out(dir, &report)?;
    }
    print_report(global, &report, &report.table())
}

fn resolve_filter(args: &IntervalArgs) -> Result<Filter, CliError> {
    let usage = |e: probe::Error| CliError::Usage(e.to_string());
    let spec = args.netns.as_deref().map(NetnsSpec::parse);
    let netns = spec
        .as_ref()
        .map(NetnsSpec::inode)
        .transpose()
        .map_err(usage)?;
    let ifindex = match args.iface.as_deref() {
        None => None,
        Some(s) => Some(match s.parse::<u32>() {
            Ok(i) if i > 0 => i,
            Ok(_) => return Err(CliError::Usage("--iface 0 is no interface".to_owned())),
            Err(_) => {
                let path = match &spec {
                    Some(NetnsSpec::Path(p)) => Some(p.as_path()),
                    Some(NetnsSpec::Inode(_)) => {
                        return Err(CliError::Usage(
                            "--iface NAME needs --netns as a name or path, not an inode; \
                             or give the interface's index"
                                .to_owned(),
                        ))
                    }
                    None => None,
                };
                netns::ifindex(path, s).map_err(usage)?
            }
        }),
    };
    if let Some(pid) = args.pid {
        if pid == 0 || !Path::new(&format!("/proc/{pid}")).exists() {
            return Err(CliError::Usage(format!("--pid {pid}: no such process")));
        }
    }
    Ok(Filter {
        netns: netns.unwrap_or(0),
        ifindex: ifindex.unwrap_or(0),
        pid: args.pid.unwrap_or(0),
        tags: args.tagged,
    })
}

pub(crate) fn probe_error(e: probe::Error) -> CliError {
    match e {
        probe::Error::NotPermitted(_) => CliError::Privilege(e.to_string()),
        probe::Error::Filter(_) => CliError::Usage(e.to_string()),
        _ => CliError::Failed(e.to_string()),
    }
}

/// Sleeps for `limit` with a progress bar, or until SIGINT/SIGTERM.
fn wait(limit: Duration) -> Result<(), CliError> {
    let bar = progress(
        limit.as_millis() as u64,
        "probing {bar:40} {elapsed}/{duration}",
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))?;
    let start = Instant::now();
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| CliError::Failed(format!("cannot watch SIGTERM: {e}")))?;
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        let end = tokio::time::sleep(limit);
        tokio::pin!(end);
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
                () = &mut end => break,
                _ = tick.tick() => bar.set_position(start.elapsed().as_millis() as u64),
            }
        }
        Ok::<(), CliError>(())
    })?;
    bar.finish_and_clear();
    Ok(())
}

fn write_out(dir: &Path, report: &probe::Report) -> Result<(), CliError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        CliError::Failed(format!("cannot write {}: {e}", dir.join(what).display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| fail("", &e))?;
    std::fs::write(dir.join("stages.csv"), report.stages_csv())
        .map_err(|e| fail("stages.csv", &e))?;
    std::fs::write(dir.join("histograms.csv"), report.histograms_csv())
        .map_err(|e| fail("histograms.csv", &e))?;
    let json = serde_json::to_string_pretty(report).map_err(|e| fail("probe.json", &e))?;
    std::fs::write(dir.join("probe.json"), json).map_err(|e| fail("probe.json", &e))?;
    probe::plot::stages_svg(&dir.join("stages.svg"), report).map_err(|e| fail("stages.svg", &e))?;
    Ok(())
}

fn run_sweep(global: &Global, args: &SweepArgs) -> Result<(), CliError> {
    if !(args.step_seconds > 0.0 && args.step_seconds <= 60.0) {
        return Err(CliError::Usage(format!(
            "--step-seconds must be in (0, 60], not {}",
            args.step_seconds
        )));
    }
    if args.max_packets == 0 {
        return Err(CliError::Usage(
            "--max-packets must be at least 1".to_owned(),
        ));
    }
    check_cpus(args.gen_cpu, args.rx_cpu)?;
    let upf = matches!(args.target, TargetArg::UpfTun | TargetArg::UpfXdp);
    let default = if upf {
        ConditionArg::Idle
    } else {
        ConditionArg::Both
    };
    let conditions = match args.condition.unwrap_or(default) {
        ConditionArg::Idle => vec![Condition::Idle],
        ConditionArg::Loaded => vec![Condition::Loaded],
        ConditionArg::Both => vec![Condition::Idle, Condition::Loaded],
    };
    let rates = |default: &str| -> Vec<Rate> {
        args.rates.clone().unwrap_or_else(|| {
            default
                .split(',')
                .filter_map(|r| Rate::parse(r).ok())
                .collect()
        })
    };
    if args.proto == ProtoArg::Tcp && args.target != TargetArg::Sink {
        return Err(CliError::Usage(
            "--proto tcp: the sink's transport; the AMF speaks SCTP over UDP and the UPF GTP-U"
                .to_owned(),
        ));
    }
    match args.target {
        TargetArg::Sink => {}
        TargetArg::Amf => return run_amf_sweep(global, args, rates(AMF_RATES), conditions),
        TargetArg::UpfTun | TargetArg::UpfXdp => {
            return run_upf_sweep(global, args, &rates(UPF_RATES), conditions)
        }
    }
    let settings = sweep::Settings {
        proto: match args.proto {
            ProtoArg::Udp => sweep::Proto::Udp,
            ProtoArg::Tcp => sweep::Proto::Tcp,
        },
        steering: args.rx_steering,
        rates: rates(SINK_RATES),
        payload: usize::from(args.size),
        step: Duration::from_secs_f64(args.step_seconds),
        max_packets: args.max_packets,
        conditions,
        gen_cpu: args.gen_cpu,
        rx_cpu: args.rx_cpu,
        tag: format!("s5p{:x}", std::process::id()),
    };
    let total = settings.rates.len() * settings.conditions.len();
    let bar = progress(total as u64, "sweep {bar:40} {pos}/{len} steps {elapsed}");
    let stop = stop_on_signal()?;
    let report = sweep::run_until(&settings, &|done, n| step_done(&bar, done, n), &stop)
        .map_err(probe_error)?;
    bar.finish_and_clear();
    let dir = &args.out;
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        CliError::Failed(format!("cannot write {}: {e}", dir.join(what).display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| fail("", &e))?;
    let json = serde_json::to_string_pretty(&report).map_err(|e| fail("sweep.json", &e))?;
    std::fs::write(dir.join("sweep.json"), json).map_err(|e| fail("sweep.json", &e))?;
    std::fs::write(dir.join("sweep.csv"), report.csv()).map_err(|e| fail("sweep.csv", &e))?;
    sweep::write_plots(dir, &report).map_err(|e| fail("sweep-*.svg", &e))?;
    print_report(
        global,
        &report,
        &format!("{}written: {}\n", report.table(), dir.display()),
    )
}

/// The bar moves, and a log line says so for whoever reads standard error without a
/// terminal (the bar is hidden there).
fn step_done(bar: &indicatif::ProgressBar, done: usize, total: usize) {
    bar.set_position(done as u64);
    tracing::info!("sweep step {done}/{total} done");
}

/// A flag set by SIGINT or SIGTERM, watched from a thread of its own: a sweep then ends
/// after its current step, removes its namespaces and still reports, where the default
/// action would kill it with its topology in place.
fn stop_on_signal() -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>, CliError> {
    use tokio::signal::unix::{signal, SignalKind};
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))?;
    // Registered here, before the sweep starts, so that no signal finds the default action.
    let (mut int, mut term) = rt
        .block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ))
        })
        .map_err(|e| CliError::Failed(format!("cannot watch SIGINT/SIGTERM: {e}")))?;
    let set = flag.clone();
    std::thread::spawn(move || {
        rt.block_on(async {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        });
        tracing::warn!("signal received: the sweep ends after this step");
        set.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    Ok(flag)
}

/// Default rates per target.
const SINK_RATES: &str = "10k,20k,50k,100k,200k,400k,max";
const AMF_RATES: &str = "100,300,1000,3000,6000,10000,max";
const UPF_RATES: &str = "10k,20k,50k,80k,110k,max";

fn run_amf_sweep(
    global: &Global,
    args: &SweepArgs,
    rates: Vec<Rate>,
    conditions: Vec<Condition>,
) -> Result<(), CliError> {
    let settings = crate::probe_amf::AmfSettings {
        rates,
        step: Duration::from_secs_f64(args.step_seconds),
        conditions,
        gen_cpu: args.gen_cpu,
        rx_cpu: args.rx_cpu,
        steering: args.rx_steering,
        tag: format!("s5a{:x}", std::process::id()),
        out: args.out.clone(),
    };
    let total = settings.rates.len() * settings.conditions.len();
    let bar = progress(
        total as u64,
        "amf sweep {bar:40} {pos}/{len} steps {elapsed}",
    );
    let stop = stop_on_signal()?;
    let report = crate::probe_amf::run(&settings, &|done, n| step_done(&bar, done, n), &stop)?;
    bar.finish_and_clear();
    let dir = &args.out;
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        CliError::Failed(format!("cannot write {}: {e}", dir.join(what).display()))
    };
    let json = serde_json::to_string_pretty(&report).map_err(|e| fail("amf-sweep.json", &e))?;
    std::fs::write(dir.join("amf-sweep.json"), json).map_err(|e| fail("amf-sweep.json", &e))?;
    std::fs::write(dir.join("amf-sweep.csv"), report.csv())
        .map_err(|e| fail("amf-sweep.csv", &e))?;
    report
        .write_plots(dir)
        .map_err(|e| fail("amf-sweep-*.svg", &e))?;
    print_report(
        global,
        &report,
        &format!("{}written: {}\n", report.table(), dir.display()),
    )
}

/// The UPF targets are `bench upf --rates`, whose lab (ran, upf and dn namespaces, the
/// UPF's own paths) the sweep reuses rather than rebuilds.
fn run_upf_sweep(
    global: &Global,
    args: &SweepArgs,
    rates: &[Rate],
    conditions: Vec<Condition>,
) -> Result<(), CliError> {
    if conditions != [Condition::Idle] {
        return Err(CliError::Usage(
            "--target upf-tun|upf-xdp: the UPF's lab runs the idle condition only (--condition idle)"
                .to_owned(),
        ));
    }
    if args.rx_steering != Steering::Rps {
        return Err(CliError::Usage(
            "--rx-steering: the UPF's lab steers its own packets (XDP, its threads)".to_owned(),
        ));
    }
    let path = if args.target == TargetArg::UpfTun {
        "tun"
    } else {
        "xdp"
    };
    let rates: Vec<String> = rates
        .iter()
        .map(|r| match r {
            Rate::Pps(p) => p.to_string(),
            Rate::Max => "max".to_owned(),
        })
        .collect();
    bench::upf_rates(global.json, path, &rates, args.step_seconds, &args.out).map_err(Into::into)
}

fn check_cpus(gen_cpu: usize, rx_cpu: usize) -> Result<(), CliError> {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    for (flag, cpu) in [("--gen-cpu", gen_cpu), ("--rx-cpu", rx_cpu)] {
        if cpu >= cpus {
            return Err(CliError::Usage(format!(
                "{flag} {cpu}: this machine has CPUs 0..{}",
                cpus - 1
            )));
        }
    }
    if gen_cpu == rx_cpu {
        tracing::warn!("generator and receiver share CPU {rx_cpu}");
    }
    Ok(())
}

fn run_overhead(global: &Global, args: &OverheadArgs) -> Result<(), CliError> {
    let Rate::Pps(rate) = args.rate else {
        return Err(CliError::Usage(
            "--rate max: the overhead needs the same load both ways; give a rate".to_owned(),
        ));
    };
    if !(args.step_seconds > 0.0 && args.step_seconds <= 60.0) || args.rounds == 0 {
        return Err(CliError::Usage(
            "--step-seconds must be in (0, 60] and --rounds at least 1".to_owned(),
        ));
    }
    check_cpus(args.gen_cpu, args.rx_cpu)?;
    let settings = sweep::overhead::OverheadSettings {
        rate,
        payload: usize::from(args.size),
        step: Duration::from_secs_f64(args.step_seconds),
        rounds: args.rounds,
        gen_cpu: args.gen_cpu,
        rx_cpu: args.rx_cpu,
        tag: format!("s5o{:x}", std::process::id()),
    };
    let bar = progress(
        (args.rounds * 2) as u64,
        "overhead {bar:40} {pos}/{len} rounds {elapsed}",
    );
    let report = sweep::overhead::run(&settings, &|done, _| bar.set_position(done as u64))
        .map_err(probe_error)?;
    bar.finish_and_clear();
    let dir = &args.out;
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::Failed(format!("cannot create {}: {e}", dir.display())))?;
    let json = serde_json::to_string_pretty(&report)
        .map_err(|e| CliError::Failed(format!("cannot serialise the report: {e}")))?;
    std::fs::write(dir.join("overhead.json"), &json)
        .map_err(|e| CliError::Failed(format!("cannot write overhead.json: {e}")))?;
    print_report(global, &report, &report.table())
}

/// A progress bar on standard error (hidden when it is not a terminal).
fn progress(len: u64, template: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// One JSON object on stdout with `--json`, else the human table.
fn print_report(
    global: &Global,
    report: &impl serde::Serialize,
    table: &str,
) -> Result<(), CliError> {
    if global.json {
        let text = serde_json::to_string(report)
            .map_err(|e| CliError::Failed(format!("cannot serialise the report: {e}")))?;
        println!("{text}");
    } else {
        print!("{table}");
    }
    Ok(())
}
