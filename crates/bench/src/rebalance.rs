//! `steer5g bench rebalance`: a skewed stream over the thread-per-core runtime, once with the
//! placement fixed by `id % workers` and once with the hot-subscriber policy moving hot ids
//! (crates/steer `policy`, `migrate`), measured in one run.
//!
//! Every worker reads its share of the stream (a seeded generator standing in for a socket),
//! routes each message by the steering table and hands it to its owner over the mesh; the
//! owner spends `--work` rounds of hashing on it (a stand-in for a procedure's CPU cost). Hot
//! ids are chosen so that all of them default to worker 0. Throughput is bounded by the
//! busiest worker, so the ratio of the two cases' rates shows what the moves bought. Every
//! message carries a per-sender sequence number that its id's state checks, so a lost or
//! reordered message fails the run (exit status 1).
//!
//! Results: `DIR/rebalance.json` (also on stdout with `--json`), `DIR/rebalance.csv` (the
//! per-interval loads) and `DIR/rebalance.svg` (max/mean load per interval, both cases).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use clap::Args;
use cpu_time::ThreadTime;
use ids::stable_hash;
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use steer::policy::{imbalance, Policy, PolicyConfig};
use steer::steered::{
    IntervalReport, LoadBoard, Rebalancer, Shard, SteeredOptions, SteeredStats, SteeredWorker,
};
use steer::table::{AppId, SteeringTable};
use steer::{Runtime, RuntimeOptions, WorkerId, Workers};

use super::machine::Machine;
use super::plot::{finish, line, svg_err, svg_root};
use super::sweep::{self, shown, Axis, Out, Sweep, SweepArgs};

use crate::BenchError;

/// A reader stops reading while this many of its messages wait for room in full queues.
const MAX_BACKLOG: usize = 512;
/// Cold ids: spread over this many, starting at [`COLD_BASE`].
const COLD_IDS: u32 = 9973;
const COLD_BASE: u32 = 100_000;

/// `steer5g bench rebalance`.
#[derive(Debug, Args)]
#[command(mut_arg("workers", |a| shown(a, Some("2"), "Workers (pinned threads).")
    .value_name("WORKERS")))]
#[command(mut_arg("rounds", |a| shown(a, Some("3"),
    "Measure both cases this many times, interleaved; the ratios reported are the medians \
     of the rounds' ratios (a shared machine's load comes in bursts).").value_name("ROUNDS")))]
#[command(mut_arg("out", |a| shown(a, Some("bench-results"),
    "Directory for rebalance.json, rebalance.csv and rebalance.svg.")))]
pub struct RebalanceArgs {
    /// Messages in the stream, over all readers.
    #[arg(long, default_value_t = 2_000_000)]
    pub(crate) messages: u64,
    /// Shares of the stream, in percent, carried by the hot ids (all on worker 0 by default
    /// placement), comma-separated; the rest is spread over ~10k cold ids.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "30,20",
        value_name = "LIST"
    )]
    pub(crate) hot: Vec<u32>,
    /// Rounds of hashing a 64-byte buffer per message at its owner.
    #[arg(long, default_value_t = 20)]
    pub(crate) work: u32,
    /// Policy intervals: one every this many routed messages.
    #[arg(long, default_value_t = 20_000)]
    pub(crate) interval: u64,
    /// `--workers`, `--rounds`, `--out`.
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
}

/// One case measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CaseReport {
    /// `static` or `rebalanced`.
    pub(crate) case: &'static str,
    pub(crate) round: u32,
    pub(crate) messages: u64,
    pub(crate) elapsed_s: f64,
    pub(crate) msgs_per_s: f64,
    /// Messages each worker handled.
    pub(crate) handled_per_worker: Vec<u64>,
    /// CPU time of each worker thread over the case: what other jobs on the machine take
    /// does not count here, unlike in the rate.
    pub(crate) cpu_s_per_worker: Vec<f64>,
    /// The busiest worker's CPU time: the case's critical path.
    pub(crate) max_worker_cpu_s: f64,
    /// Max/mean of `handled_per_worker`.
    pub(crate) handled_imbalance: Option<f64>,
    /// Max/mean of the messages routed to each worker, per policy interval.
    pub(crate) interval_imbalance: Vec<Option<f64>>,
    /// Max/mean of the routed load over the last half of the intervals.
    pub(crate) late_imbalance: Option<f64>,
    /// Moves begun: (app id, from, to, interval).
    pub(crate) moves: Vec<(u32, u16, u16, usize)>,
    /// Messages new owners held back during moves.
    pub(crate) held: u64,
    /// Sends that waited in an outbox for a full queue.
    pub(crate) deferred: u64,
    /// Messages out of order or duplicated (must be 0).
    pub(crate) violations: u64,
    #[serde(skip)]
    pub(crate) intervals: Vec<Vec<u64>>,
}

/// The content of rebalance.json and of `--json`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RebalanceBenchReport {
    pub(crate) scenario: &'static str,
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) workers: u16,
    pub(crate) messages: u64,
    pub(crate) hot_percent: Vec<u32>,
    pub(crate) hot_ids: Vec<u32>,
    pub(crate) work: u32,
    pub(crate) interval: u64,
    pub(crate) policy: String,
    pub(crate) rounds: u32,
    pub(crate) cases: Vec<CaseReport>,
    /// Median over rounds of rebalanced rate / static rate.
    pub(crate) ratio: f64,
    /// Median over rounds of static / rebalanced busiest-worker CPU time: how much shorter
    /// the critical path got.
    pub(crate) cpu_ratio: f64,
}

#[derive(Debug, Clone, Copy)]
struct Msg {
    src: u16,
    seq: u32,
}

#[derive(Debug, Clone, Default)]
struct KeyState {
    next: Vec<u32>,
    digest: u64,
}

/// One worker's ids: per-sender sequence checks, and the work.
struct Keys {
    workers: usize,
    work: u32,
    state: HashMap<AppId, KeyState>,
    violations: u64,
}

impl Shard for Keys {
    type Msg = Msg;
    type State = Option<KeyState>;

    fn handle(&mut self, app: AppId, msg: Msg) {
        let workers = self.workers;
        let st = self.state.entry(app).or_insert_with(|| KeyState {
            next: vec![0; workers],
            digest: 0,
        });
        match st.next.get_mut(usize::from(msg.src)) {
            Some(n) if *n == msg.seq => *n = msg.seq.wrapping_add(1),
            _ => self.violations += 1,
        }
        let mut buf = [0u8; 64];
        buf[..8].copy_from_slice(&st.digest.to_le_bytes());
        buf[8..12].copy_from_slice(&msg.seq.to_le_bytes());
        for _ in 0..self.work {
            let h = stable_hash(&buf);
            buf[..8].copy_from_slice(&h.to_le_bytes());
        }
        st.digest = u64::from_le_bytes([
            buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6], buf[7],
        ]);
    }

    fn export(&mut self, app: AppId) -> Option<KeyState> {
        self.state.remove(&app)
    }

    fn import(&mut self, app: AppId, state: Option<KeyState>) {
        if let Some(s) = state {
            if self.state.insert(app, s).is_some() {
                self.violations += 1;
            }
        }
    }
}

struct WorkerOutcome {
    id: WorkerId,
    cpu: Duration,
    stats: SteeredStats,
    violations: u64,
    generated: HashMap<AppId, u32>,
    holders: Vec<AppId>,
}

fn pick(rng: &mut StdRng, hot: &[(AppId, u32)]) -> AppId {
    let mut r = rng.gen_range(0..100u32);
    for &(app, pct) in hot {
        if r < pct {
            return app;
        }
        r -= pct;
    }
    AppId(COLD_BASE + rng.gen_range(0..COLD_IDS))
}

fn policy(rebalance: bool) -> PolicyConfig {
    PolicyConfig {
        threshold: if rebalance { 1.2 } else { f64::INFINITY },
        sustain: 2,
        max_moves: 1,
        cooldown: 2,
        min_key_share: 0.05,
        min_gain: 0.1,
        min_interval_total: 1000,
        return_below: None,
    }
}

fn run_case(
    args: &RebalanceArgs,
    workers: Workers,
    hot: &[(AppId, u32)],
    rebalance: bool,
    round: u32,
) -> Result<CaseReport, BenchError> {
    let case = if rebalance { "rebalanced" } else { "static" };
    let n = workers.count();
    let table = Arc::new(SteeringTable::new(workers));
    let board = Arc::new(LoadBoard::new(workers, 16));
    let handled = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let outcomes: Arc<Mutex<Vec<WorkerOutcome>>> = Arc::new(Mutex::new(Vec::new()));
    let total = args.messages;
    let per_worker = total / u64::from(n);
    let total = per_worker * u64::from(n);
    let work = args.work;
    let hot_v = hot.to_vec();
    let opts = RuntimeOptions {
        pin: true,
        name: format!("rebal-{case}"),
        queue_capacity: 1024,
        stop_grace: Duration::from_secs(5),
    };
    let started = Instant::now();
    let rt = {
        let (table, board, handled, done, outcomes) = (
            Arc::clone(&table),
            Arc::clone(&board),
            Arc::clone(&handled),
            Arc::clone(&done),
            Arc::clone(&outcomes),
        );
        Runtime::start(workers, opts, move |mut ctx| {
            let (table, board, handled, done, outcomes, hot) = (
                Arc::clone(&table),
                Arc::clone(&board),
                Arc::clone(&handled),
                Arc::clone(&done),
                Arc::clone(&outcomes),
                hot_v.clone(),
            );
            async move {
                let cpu = ThreadTime::now();
                let me = ctx.id;
                let mut sw =
                    SteeredWorker::new(me, Arc::clone(&table), board, SteeredOptions::default());
                let mut keys = Keys {
                    workers: usize::from(n),
                    work,
                    state: HashMap::new(),
                    violations: 0,
                };
                let mut rng = StdRng::seed_from_u64(0x5eed_0000 + u64::from(me.0));
                let mut generated: HashMap<AppId, u32> = HashMap::new();
                let mut produced = 0u64;
                let mut counted = 0u64;
                loop {
                    let mut sent = 0;
                    while produced < per_worker && sent < 64 && sw.backlog() < MAX_BACKLOG {
                        let app = pick(&mut rng, &hot);
                        let seq = generated.entry(app).or_insert(0);
                        let msg = Msg {
                            src: me.0,
                            seq: *seq,
                        };
                        *seq = seq.wrapping_add(1);
                        produced += 1;
                        sent += 1;
                        sw.submit(&mut ctx.mesh, &mut keys, app, msg);
                    }
                    let read = sw.poll(&mut ctx.mesh, &mut keys);
                    let h = sw.stats().handled;
                    handled.fetch_add(h.saturating_sub(counted), Ordering::Relaxed);
                    counted = h;
                    if done.load(Ordering::Acquire)
                        && handled.load(Ordering::Relaxed) >= total
                        && table.snapshot().moves().is_empty()
                        && sw.backlog() == 0
                    {
                        break;
                    }
                    if sent == 0 && read == 0 {
                        tokio::select! {
                            () = ctx.mesh.recv_ready() => {}
                            () = tokio::time::sleep(Duration::from_millis(1)) => {}
                            () = ctx.stop.stopped() => break,
                        }
                    }
                }
                sw.post();
                outcomes
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(WorkerOutcome {
                        id: me,
                        cpu: cpu.elapsed(),
                        stats: sw.stats(),
                        violations: keys.violations,
                        generated,
                        holders: keys.state.keys().copied().collect(),
                    });
            }
        })
        .map_err(|e| BenchError::Failed(format!("runtime: {e}")))?
    };

    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(case);
    let mut reb = Rebalancer::new(
        Arc::clone(&table),
        Arc::clone(&board),
        Policy::new(policy(rebalance)),
    );
    let mut reports: Vec<IntervalReport> = Vec::new();
    // A bound on the run, not a measurement: a stuck case ends as a failure.
    let deadline = started + Duration::from_secs(600);
    let interval = args.interval.max(1000);
    loop {
        let h = handled.load(Ordering::Relaxed);
        bar.set_position(h.min(total));
        if h >= total || Instant::now() > deadline {
            break;
        }
        if board.pending() >= interval {
            reports.push(reb.step());
            let moves: usize = reports.iter().map(|r| r.moves.len()).sum();
            bar.set_message(format!("{moves} moves"));
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    done.store(true, Ordering::Release);
    while outcomes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .len()
        < usize::from(n)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let elapsed = started.elapsed();
    bar.finish_with_message(format!(
        "{:.0} msg/s",
        total as f64 / elapsed.as_secs_f64().max(1e-9)
    ));
    if !bar.is_hidden() {
        eprintln!();
    }
    rt.stop()
        .map_err(|e| BenchError::Failed(format!("runtime: {e}")))?;

    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap_or_else(PoisonError::into_inner));
    if outcomes.len() != usize::from(n) {
        return Err(BenchError::Failed(format!(
            "{case}: {} of {n} workers finished within the bound",
            outcomes.len()
        )));
    }
    let mut handled_per_worker = vec![0u64; usize::from(n)];
    let mut cpu_s_per_worker = vec![0f64; usize::from(n)];
    let mut violations = 0;
    let mut held = 0;
    let mut deferred = 0;
    let mut generated: HashMap<AppId, u64> = HashMap::new();
    let mut holders: HashMap<AppId, Vec<WorkerId>> = HashMap::new();
    for o in &outcomes {
        if let Some(x) = handled_per_worker.get_mut(o.id.index()) {
            *x = o.stats.handled;
        }
        if let Some(x) = cpu_s_per_worker.get_mut(o.id.index()) {
            *x = o.cpu.as_secs_f64();
        }
        violations += o.violations;
        held += o.stats.migration.held;
        deferred += o.stats.deferred;
        for (&a, &c) in &o.generated {
            *generated.entry(a).or_default() += u64::from(c);
        }
        for &a in &o.holders {
            holders.entry(a).or_default().push(o.id);
        }
    }
    let snap = table.snapshot();
    let misplaced = generated
        .keys()
        .filter(|&&a| holders.get(&a).map(Vec::as_slice) != Some(&[snap.route(a)][..]))
        .count();
    let sum: u64 = handled_per_worker.iter().sum();
    if sum != total || violations > 0 || misplaced > 0 {
        return Err(BenchError::Failed(format!(
            "{case}: handled {sum} of {total}, {violations} out of order, \
             {misplaced} ids not at exactly their owner"
        )));
    }
    let intervals: Vec<Vec<u64>> = reports.iter().map(|r| r.offered.clone()).collect();
    let late: Vec<u64> = intervals.iter().skip(intervals.len() / 2).fold(
        vec![0u64; usize::from(n)],
        |mut acc, v| {
            for (a, x) in acc.iter_mut().zip(v) {
                *a += x;
            }
            acc
        },
    );
    Ok(CaseReport {
        case,
        round,
        messages: total,
        max_worker_cpu_s: cpu_s_per_worker.iter().copied().fold(0.0, f64::max),
        cpu_s_per_worker,
        elapsed_s: elapsed.as_secs_f64(),
        msgs_per_s: total as f64 / elapsed.as_secs_f64().max(1e-9),
        handled_imbalance: imbalance(&handled_per_worker),
        handled_per_worker,
        interval_imbalance: reports.iter().map(|r| r.imbalance).collect(),
        late_imbalance: imbalance(&late),
        moves: reports
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.moves.iter().map(move |d| (d.app.0, d.from.0, d.to.0, i)))
            .collect(),
        held,
        deferred,
        violations,
        intervals,
    })
}

/// `steer5g bench rebalance`.
pub(crate) fn run(json: bool, args: &RebalanceArgs) -> Result<(), BenchError> {
    args.sweep
        .only("rebalance", &[Axis::Workers, Axis::Rounds, Axis::Out])?;
    let workers = Workers::new(args.sweep.one_worker()?)
        .filter(|w| w.count() >= 2)
        .ok_or_else(|| BenchError::Invalid("--workers must be between 2 and 256".into()))?;
    if args.hot.iter().sum::<u32>() > 100 || args.hot.contains(&0) {
        return Err(BenchError::Invalid(
            "--hot: each share must be positive and they must add up to at most 100".into(),
        ));
    }
    if args.messages < 10_000 || args.messages > 1_000_000_000 {
        return Err(BenchError::Invalid(
            "--messages must be between 10000 and 10^9".into(),
        ));
    }
    if args.work > 100_000 {
        return Err(BenchError::Invalid("--work must be at most 100000".into()));
    }
    // Hot ids n, 2n, 3n, ...: all default to worker 0.
    let n = u32::from(workers.count());
    let hot: Vec<(AppId, u32)> = args
        .hot
        .iter()
        .enumerate()
        .map(|(i, &p)| (AppId(n * (i as u32 + 1)), p))
        .collect();
    let mut out = Out::create(&args.sweep.out_or("bench-results"))?;
    let machine = sweep::machine();
    let rounds = args.sweep.rounds(50)?;
    // Each case shows a bar of its own.
    let per_case = Sweep::new(&[false, true], rounds).quiet().run(
        |&rebalance| if rebalance { "rebalanced" } else { "static" }.to_owned(),
        |v| run_case(args, workers, &hot, *v.case, v.round),
    )?;
    let mut cases = Vec::new();
    let mut ratios = Vec::new();
    let mut cpu_ratios = Vec::new();
    if let [statics, moved] = &per_case[..] {
        for (fixed, moved) in statics.iter().zip(moved) {
            if fixed.msgs_per_s > 0.0 && moved.max_worker_cpu_s > 0.0 {
                ratios.push(moved.msgs_per_s / fixed.msgs_per_s);
                cpu_ratios.push(fixed.max_worker_cpu_s / moved.max_worker_cpu_s);
            }
            cases.push(fixed.clone());
            cases.push(moved.clone());
        }
    }
    let report = RebalanceBenchReport {
        scenario: "rebalance",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        workers: workers.count(),
        messages: cases.first().map_or(0, |c| c.messages),
        hot_percent: args.hot.clone(),
        hot_ids: hot.iter().map(|h| h.0 .0).collect(),
        work: args.work,
        interval: args.interval,
        policy: format!("{:?}", policy(true)),
        rounds,
        cases,
        ratio: median(&mut ratios),
        cpu_ratio: median(&mut cpu_ratios),
    };
    out.json("rebalance.json", &report)?;
    out.text("rebalance.csv", csv(&report))?;
    out.plot("rebalance.svg", |p| write_svg(p, &report))?;
    if json {
        crate::print_json(&report)?;
    } else {
        for c in &report.cases {
            println!(
                "{:>10} #{}: {:>9.0} msg/s  busiest worker CPU {:.2} s  handled {:?} (max/mean {:.2})  late routed max/mean {:.2}  moves {:?}  held {}",
                c.case,
                c.round,
                c.msgs_per_s,
                c.max_worker_cpu_s,
                c.handled_per_worker,
                c.handled_imbalance.unwrap_or(0.0),
                c.late_imbalance.unwrap_or(0.0),
                c.moves,
                c.held
            );
        }
        println!(
            "median over rounds: rate rebalanced/static {:.2}, busiest-worker CPU static/rebalanced {:.2}",
            report.ratio, report.cpu_ratio
        );
        println!("wrote {}", out.list());
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn csv(report: &RebalanceBenchReport) -> String {
    let n = usize::from(report.workers);
    let mut s = String::from("case,round,interval");
    for w in 0..n {
        s.push_str(&format!(",routed_w{w}"));
    }
    s.push_str(",imbalance\n");
    for c in &report.cases {
        for (i, v) in c.intervals.iter().enumerate() {
            s.push_str(&format!("{},{},{i}", c.case, c.round));
            for x in v {
                s.push_str(&format!(",{x}"));
            }
            s.push_str(&format!(",{:.4}\n", imbalance(v).unwrap_or(0.0)));
        }
    }
    s
}

fn write_svg(path: &Path, report: &RebalanceBenchReport) -> Result<(), String> {
    let root = svg_root(path, (760, 440))?;
    // The first round's two cases.
    let cases: Vec<&CaseReport> = report.cases.iter().filter(|c| c.round == 0).collect();
    let xmax = cases
        .iter()
        .map(|c| c.interval_imbalance.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let ymax = cases
        .iter()
        .flat_map(|c| c.interval_imbalance.iter().flatten())
        .fold(1.0f64, |a, &b| a.max(b))
        * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "max/mean routed load per interval, {} workers, hot {:?}% (busiest CPU {:.2}x less)",
                report.workers, report.hot_percent, report.cpu_ratio
            ),
            ("sans-serif", 17),
        )
        .margin(16)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0..xmax, 0.9f64..ymax)
        .map_err(svg_err)?;
    chart
        .configure_mesh()
        .x_desc(format!(
            "policy interval ({} routed messages)",
            report.interval
        ))
        .y_desc("max / mean")
        .draw()
        .map_err(svg_err)?;
    let colors = [RGBColor(170, 170, 170), RGBColor(31, 119, 180)];
    for (c, color) in cases.iter().zip(colors) {
        let pts: Vec<(usize, f64)> = c
            .interval_imbalance
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i, v)))
            .collect();
        let label = format!("{} ({:.0} msg/s)", c.case, c.msgs_per_s);
        line(&mut chart, pts, color, 2, label, 16)?;
    }
    finish(&mut chart, &root, SeriesLabelPosition::UpperRight)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle() {
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [1.0, 4.0]), 4.0);
    }

    /// Both cases run to completion and account for every message (`run_case` fails on a
    /// loss or a reordering); the static case never moves.
    #[test]
    fn both_cases_handle_every_message() {
        let args = RebalanceArgs {
            messages: 20_000,
            hot: vec![30, 20],
            work: 1,
            interval: 1000,
            sweep: SweepArgs::default(),
        };
        let workers = Workers::new(2).unwrap();
        let hot = [(AppId(2), 30), (AppId(4), 20)];
        let fixed = run_case(&args, workers, &hot, false, 0).unwrap();
        assert_eq!(fixed.handled_per_worker.iter().sum::<u64>(), 20_000);
        assert!(fixed.moves.is_empty());
        assert_eq!(fixed.violations, 0);
        let moved = run_case(&args, workers, &hot, true, 0).unwrap();
        assert_eq!(moved.handled_per_worker.iter().sum::<u64>(), 20_000);
        let text = csv(&RebalanceBenchReport {
            scenario: "rebalance",
            command: String::new(),
            machine: Machine::probe(),
            workers: 2,
            messages: 20_000,
            hot_percent: vec![30, 20],
            hot_ids: vec![2, 4],
            work: 1,
            interval: 1000,
            policy: String::new(),
            rounds: 1,
            cases: vec![fixed, moved],
            ratio: 1.0,
            cpu_ratio: 1.0,
        });
        assert!(text.starts_with("case,round,interval,routed_w0,routed_w1,imbalance\n"));
    }
}
