//! The one sweep every scenario runs: the flags they share ([`SweepArgs`]), the cases ×
//! rounds loop behind one progress bar ([`Sweep`]), each case's median round ([`median`]),
//! and the directory its JSON, CSV and SVG files go to side by side ([`Out`]).
//!
//! Rounds are round-major: every round visits every case before the next round starts, so a
//! burst of load from other jobs on a shared machine hits every case alike, and each case
//! reports its median round with the figures of all of them beside it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::machine::Machine;
use crate::BenchError;

/// The sweep flags every scenario shares, flattened into each scenario's arguments.
///
/// They are all hidden and unset here: a scenario shows the ones it sweeps, with its own
/// default and help text, through `#[command(mut_arg(...))]` (see [`shown`]); one it does
/// not sweep stays hidden, and giving it anyway is bad usage ([`SweepArgs::only`]).
#[derive(Debug, Clone, Default, Args)]
pub struct SweepArgs {
    /// Worker threads; a comma-separated list of counts and ranges (`1..4`, `1..all`, `all`:
    /// the cores here) sweeps them.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "LIST",
        value_parser = parse_workers,
        hide = true
    )]
    pub(crate) workers: Vec<WorkerList>,
    /// Where per-UE state lives; a list sweeps them.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "LIST",
        hide = true
    )]
    pub(crate) state: Vec<BenchState>,
    /// Measure every case this many times, interleaved, and report each case's median round
    /// (a shared machine's load comes in bursts).
    #[arg(long, value_name = "N", hide = true)]
    pub(crate) rounds: Option<u32>,
    /// Traffic before each measured window, in seconds.
    #[arg(long, value_name = "SECS", hide = true)]
    pub(crate) warmup: Option<f64>,
    /// Length of each measured window, in seconds.
    #[arg(long, value_name = "SECS", hide = true)]
    pub(crate) duration: Option<f64>,
    /// Directory for the report's JSON, CSV and SVG files.
    #[arg(long, value_name = "DIR", hide = true)]
    pub(crate) out: Option<PathBuf>,
}

/// One flag of [`SweepArgs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Axis {
    Workers,
    State,
    Rounds,
    Warmup,
    Duration,
    Out,
}

impl Axis {
    fn flag(self) -> &'static str {
        match self {
            Axis::Workers => "--workers",
            Axis::State => "--state",
            Axis::Rounds => "--rounds",
            Axis::Warmup => "--warmup",
            Axis::Duration => "--duration",
            Axis::Out => "--out",
        }
    }
}

/// Shows a [`SweepArgs`] flag on a scenario with its default and help: for
/// `#[command(mut_arg("rounds", |a| shown(a, Some("1"), "...")))]`.
pub(crate) fn shown(a: clap::Arg, default: Option<&'static str>, help: &'static str) -> clap::Arg {
    // Doc comments lose their last full stop in clap's help; these read the same.
    let a = a.hide(false).help(help.strip_suffix('.').unwrap_or(help));
    match default {
        Some(d) => a.default_value(d),
        None => a,
    }
}

impl SweepArgs {
    /// Refuses the flags a scenario does not take (they are hidden from its help).
    pub(crate) fn only(&self, scenario: &str, takes: &[Axis]) -> Result<(), BenchError> {
        let given = [
            (Axis::Workers, !self.workers.is_empty()),
            (Axis::State, !self.state.is_empty()),
            (Axis::Rounds, self.rounds.is_some()),
            (Axis::Warmup, self.warmup.is_some()),
            (Axis::Duration, self.duration.is_some()),
            (Axis::Out, self.out.is_some()),
        ];
        match given.iter().find(|(a, g)| *g && !takes.contains(a)) {
            Some((a, _)) => Err(BenchError::Invalid(format!(
                "bench {scenario} takes no {}",
                a.flag()
            ))),
            None => Ok(()),
        }
    }

    /// Every worker count of `--workers` in order, repeats dropped, each at most `max`.
    pub(crate) fn workers(&self, max: u16) -> Result<Vec<u16>, BenchError> {
        let mut out: Vec<u16> = Vec::new();
        for &w in self.workers.iter().flat_map(|l| l.0.iter()) {
            if w == 0 || w > max {
                return Err(BenchError::Invalid(format!(
                    "--workers: each must be 1 to {max}"
                )));
            }
            if !out.contains(&w) {
                out.push(w);
            }
        }
        Ok(out)
    }

    /// The worker count of a scenario that runs one.
    pub(crate) fn one_worker(&self) -> Result<u16, BenchError> {
        match self
            .workers
            .iter()
            .flat_map(|l| l.0.iter())
            .collect::<Vec<_>>()[..]
        {
            [&w] => Ok(w),
            _ => Err(BenchError::Invalid(
                "--workers: this scenario runs one worker count".into(),
            )),
        }
    }

    /// The states of `--state`, in order, repeats dropped.
    pub(crate) fn states(&self) -> Vec<BenchState> {
        let mut out = Vec::new();
        for &s in &self.state {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// `--rounds`, checked against `max`.
    pub(crate) fn rounds(&self, max: u32) -> Result<u32, BenchError> {
        match self.rounds.unwrap_or(1) {
            r @ 1.. if r <= max => Ok(r),
            _ => Err(BenchError::Invalid(format!(
                "--rounds must be between 1 and {max}"
            ))),
        }
    }

    /// `--warmup` as given (or its scenario default), in seconds.
    pub(crate) fn warmup_s(&self) -> f64 {
        self.warmup.unwrap_or(0.0)
    }

    /// `--duration` as given (or its scenario default), in seconds.
    pub(crate) fn duration_s(&self) -> f64 {
        self.duration.unwrap_or(0.0)
    }

    /// `--out`, else `default`.
    pub(crate) fn out_or(&self, default: &str) -> PathBuf {
        self.out.clone().unwrap_or_else(|| PathBuf::from(default))
    }
}

/// One item of `--workers`: a count, a range `A..B`, `A..all` or `all` (the cores this
/// process may run on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkerList(pub(crate) Vec<u16>);

/// The cores this process may run on (at least 1, at most 64).
pub(crate) fn all_cores() -> u16 {
    std::thread::available_parallelism()
        .map(|n| u16::try_from(n.get()).unwrap_or(64).min(64))
        .unwrap_or(1)
}

/// A `--workers` item; counts up to the runtime's limit (a scenario may allow fewer).
pub(crate) fn parse_workers(s: &str) -> Result<WorkerList, String> {
    let one = |t: &str| -> Result<u16, String> {
        let n = match t.trim() {
            "all" => all_cores(),
            t => t
                .parse::<u16>()
                .map_err(|_| format!("{t:?}: a worker count, a range A..B, or all"))?,
        };
        if (1..=steer::Workers::MAX).contains(&n) {
            Ok(n)
        } else {
            Err(format!(
                "{n}: each worker count must be 1 to {}",
                steer::Workers::MAX
            ))
        }
    };
    match s.split_once("..") {
        Some((a, b)) => {
            let (a, b) = (one(a)?, one(b)?);
            if a > b {
                return Err(format!("{s}: empty range"));
            }
            Ok(WorkerList((a..=b).collect()))
        }
        None => Ok(WorkerList(vec![one(s)?])),
    }
}

/// Where the core keeps per-UE and per-subscriber state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BenchState {
    /// Each worker owns its UEs and subscribers (shared nothing).
    Sharded,
    /// One map behind a lock, shared by every worker (the baseline).
    Locked,
}

pub(crate) fn state_label(s: BenchState) -> &'static str {
    match s {
        BenchState::Sharded => "sharded",
        BenchState::Locked => "locked",
    }
}

/// The machine the figures come from, with a warning when they will not mean much.
pub(crate) fn machine() -> Machine {
    let machine = Machine::probe();
    if machine.build == "debug" {
        tracing::warn!(
            "this is a debug build: the figures will not mean much; \
             build with `cargo build --release -p steer5g`"
        );
    }
    machine
}

/// One visit of the sweep: a case in a round.
#[derive(Debug)]
pub(crate) struct Visit<'a, C> {
    /// The round, from 0.
    pub(crate) round: u32,
    /// The case.
    pub(crate) case: &'a C,
    /// The first visit of its round (where per-round work goes).
    pub(crate) first: bool,
    bar: &'a ProgressBar,
}

impl<C> Visit<'_, C> {
    /// What the sweep's progress bar says about the case just measured.
    pub(crate) fn say(&self, msg: String) {
        self.bar.set_message(msg);
    }
}

/// The cases × rounds loop of a scenario.
#[derive(Debug)]
pub(crate) struct Sweep<'a, C> {
    cases: &'a [C],
    rounds: u32,
    alternate: bool,
    bar: ProgressBar,
}

impl<'a, C> Sweep<'a, C> {
    /// `rounds` visits of every case in `cases`, behind a progress bar (hidden by indicatif
    /// when standard error is not a terminal).
    pub(crate) fn new(cases: &'a [C], rounds: u32) -> Self {
        let bar = ProgressBar::new((cases.len() * rounds as usize) as u64);
        if let Ok(style) = ProgressStyle::with_template("{prefix:>22} [{bar:30}] {pos}/{len} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Sweep {
            cases,
            rounds,
            alternate: false,
            bar,
        }
    }

    /// Odd rounds visit the cases in reverse order, so that neither of two cases measured
    /// back to back always goes first.
    pub(crate) fn alternate(mut self) -> Self {
        self.alternate = true;
        self
    }

    /// No sweep bar: the scenario shows a bar per case.
    pub(crate) fn quiet(mut self) -> Self {
        self.bar = ProgressBar::hidden();
        self
    }

    /// Measures every case in every round; returns each case's rounds, in the order run.
    /// The first error ends the sweep.
    pub(crate) fn run<R>(
        &self,
        label: impl Fn(&C) -> String,
        mut measure: impl FnMut(&Visit<'_, C>) -> Result<R, BenchError>,
    ) -> Result<Vec<Vec<R>>, BenchError> {
        let mut out: Vec<Vec<R>> = (0..self.cases.len()).map(|_| Vec::new()).collect();
        for round in 0..self.rounds {
            let order: Vec<usize> = if self.alternate && round % 2 == 1 {
                (0..self.cases.len()).rev().collect()
            } else {
                (0..self.cases.len()).collect()
            };
            for (n, &i) in order.iter().enumerate() {
                let Some(case) = self.cases.get(i) else {
                    continue;
                };
                self.bar
                    .set_prefix(format!("round {} {}", round + 1, label(case)));
                let visit = Visit {
                    round,
                    case,
                    first: n == 0,
                    bar: &self.bar,
                };
                match measure(&visit) {
                    Ok(r) => {
                        if let Some(v) = out.get_mut(i) {
                            v.push(r);
                        }
                    }
                    Err(e) => {
                        self.bar.abandon_with_message("failed");
                        return Err(e);
                    }
                }
                self.bar.inc(1);
            }
        }
        self.bar.finish();
        if !self.bar.is_hidden() {
            eprintln!();
        }
        Ok(out)
    }
}

/// What [`median`] needs of a case's per-round report.
pub(crate) trait Round: Sized {
    /// With an even count of rounds, the upper of the two middle ones (else the lower).
    const UPPER: bool = false;
    /// Whether the round succeeded: a failed round is the one reported, never hidden.
    fn ok(&self) -> bool {
        true
    }
    /// The figure the median is taken of.
    fn key(&self) -> f64;
    /// Keeps every round's figures, in the order run, on the round chosen.
    fn keep_rounds(&mut self, all: &[Self]);
}

/// The round with the median [`Round::key`], carrying every round's figures; the first
/// failed round instead, if any.
pub(crate) fn median<R: Round + Clone>(mut rounds: Vec<R>) -> Option<R> {
    let all = rounds.clone();
    let mut m = match rounds.iter().position(|r| !r.ok()) {
        Some(i) => rounds.swap_remove(i),
        None => {
            rounds.sort_by(|a, b| a.key().total_cmp(&b.key()));
            let mid = if R::UPPER {
                rounds.len() / 2
            } else {
                rounds.len().checked_sub(1)? / 2
            };
            rounds.into_iter().nth(mid)?
        }
    };
    m.keep_rounds(&all);
    Some(m)
}

/// The directory of a run's files, and the files written so far.
#[derive(Debug)]
pub(crate) struct Out {
    dir: PathBuf,
    wrote: Vec<PathBuf>,
}

impl Out {
    /// `dir`, created if need be.
    pub(crate) fn create(dir: &Path) -> Result<Self, BenchError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| BenchError::Failed(format!("cannot create {}: {e}", dir.display())))?;
        Ok(Out {
            dir: dir.to_path_buf(),
            wrote: Vec::new(),
        })
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The files written, in order.
    pub(crate) fn wrote(&self) -> &[PathBuf] {
        &self.wrote
    }

    /// `name` holding `report` as pretty JSON.
    pub(crate) fn json<T: Serialize>(&mut self, name: &str, report: &T) -> Result<(), BenchError> {
        let pretty = serde_json::to_string_pretty(report)
            .map_err(|e| BenchError::Failed(format!("JSON report: {e}")))?;
        self.text(name, format!("{pretty}\n"))
    }

    /// `name` holding `body`.
    pub(crate) fn text(&mut self, name: &str, body: String) -> Result<(), BenchError> {
        let path = self.dir.join(name);
        std::fs::write(&path, body)
            .map_err(|e| BenchError::Failed(format!("cannot write {}: {e}", path.display())))?;
        self.wrote.push(path);
        Ok(())
    }

    /// `name` drawn by `draw` (an SVG plot).
    pub(crate) fn plot(
        &mut self,
        name: &str,
        draw: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<(), BenchError> {
        let path = self.dir.join(name);
        draw(&path)
            .map_err(|e| BenchError::Failed(format!("cannot write {}: {e}", path.display())))?;
        self.wrote.push(path);
        Ok(())
    }

    /// "a, b and c": the files written, for the human report's last line.
    pub(crate) fn list(&self) -> String {
        let names: Vec<String> = self.wrote.iter().map(|p| p.display().to_string()).collect();
        match names.split_last() {
            None => String::new(),
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    }
}

/// One case against another that differs in one setting: the first's figures over the
/// second's, as every scenario's comparisons table shows them.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Comparison {
    /// What differs, first over second: `sharded/locked`, `h2c/inproc`, `w2/w1`...
    pub(crate) what: String,
    /// The settings both share.
    pub(crate) at: String,
    /// Procedures per second of the first over the second.
    pub(crate) rate_ratio: f64,
    /// Core CPU per procedure of the first over the second.
    pub(crate) cpu_ratio: f64,
}

impl Comparison {
    /// `first` over `second`, each as (procedures per second, core CPU µs per procedure); a
    /// ratio over zero is 0.
    pub(crate) fn of(what: String, at: String, first: (f64, f64), second: (f64, f64)) -> Self {
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        Comparison {
            what,
            at,
            rate_ratio: ratio(first.0, second.0),
            cpu_ratio: ratio(first.1, second.1),
        }
    }
}

/// A nonnegative number of seconds, at most `max`.
pub(crate) fn seconds(what: &str, v: f64, max: f64) -> Result<Duration, BenchError> {
    if !(v.is_finite() && (0.0..=max).contains(&v)) {
        return Err(BenchError::Invalid(format!(
            "--{what} must be between 0 and {max} seconds"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct R {
        key: f64,
        ok: bool,
        all: Vec<f64>,
    }

    impl Round for R {
        fn ok(&self) -> bool {
            self.ok
        }
        fn key(&self) -> f64 {
            self.key
        }
        fn keep_rounds(&mut self, all: &[Self]) {
            self.all = all.iter().map(|r| r.key).collect();
        }
    }

    fn r(key: f64) -> R {
        R {
            key,
            ok: true,
            all: Vec::new(),
        }
    }

    #[test]
    fn the_median_round_carries_every_round_and_a_failure_is_never_hidden() {
        let m = median(vec![r(3.0), r(1.0), r(2.0)]).unwrap();
        assert_eq!((m.key, m.all.clone()), (2.0, vec![3.0, 1.0, 2.0]));
        // An even count: the lower middle one.
        assert_eq!(
            median(vec![r(4.0), r(1.0), r(3.0), r(2.0)]).unwrap().key,
            2.0
        );
        let failed = median(vec![
            r(1.0),
            R {
                ok: false,
                ..r(9.0)
            },
            r(2.0),
        ])
        .unwrap();
        assert!(!failed.ok);
        assert!(median(Vec::<R>::new()).is_none());
    }

    #[test]
    fn rounds_are_round_major_and_alternate_when_asked() {
        let cases = ["a", "b", "c"];
        let mut seen = Vec::new();
        let got = Sweep::new(&cases, 2)
            .alternate()
            .run(
                |c| (*c).to_string(),
                |v| {
                    seen.push((v.round, *v.case, v.first));
                    Ok(v.round)
                },
            )
            .unwrap();
        assert_eq!(
            seen,
            [
                (0, "a", true),
                (0, "b", false),
                (0, "c", false),
                (1, "c", true),
                (1, "b", false),
                (1, "a", false)
            ]
        );
        assert_eq!(got, vec![vec![0, 1]; 3]);
        let err = Sweep::new(&cases, 1).run(
            |c| (*c).to_string(),
            |v| match *v.case {
                "b" => Err(BenchError::Failed("b broke".into())),
                _ => Ok(()),
            },
        );
        assert!(matches!(err, Err(BenchError::Failed(m)) if m == "b broke"));
    }

    #[test]
    fn worker_lists_take_counts_ranges_and_all() {
        assert_eq!(parse_workers("3").unwrap().0, vec![3]);
        assert_eq!(parse_workers("1..3").unwrap().0, vec![1, 2, 3]);
        let all = all_cores();
        assert_eq!(parse_workers("all").unwrap().0, vec![all]);
        assert_eq!(parse_workers("1..all").unwrap().0.len(), usize::from(all));
        assert_eq!(parse_workers("256").unwrap().0, vec![256]);
        for bad in ["0", "257", "3..1", "x", "1..", ""] {
            assert!(parse_workers(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn flags_a_scenario_does_not_take_are_refused_and_counts_checked() {
        let s = SweepArgs {
            workers: vec![WorkerList(vec![1, 2]), WorkerList(vec![2, 65])],
            rounds: Some(3),
            ..SweepArgs::default()
        };
        assert!(s.only("x", &[Axis::Workers, Axis::Rounds]).is_ok());
        let e = s.only("x", &[Axis::Rounds]).unwrap_err();
        assert_eq!(e.to_string(), "bench x takes no --workers");
        assert!(s.workers(64).is_err());
        assert_eq!(s.workers(65).unwrap(), vec![1, 2, 65]);
        assert!(s.one_worker().is_err());
        assert_eq!(s.rounds(3).unwrap(), 3);
        assert!(s.rounds(2).is_err());
        let one = SweepArgs {
            workers: vec![WorkerList(vec![2])],
            ..SweepArgs::default()
        };
        assert_eq!(one.one_worker().unwrap(), 2);
        assert_eq!(one.rounds(10).unwrap(), 1);
    }

    #[test]
    fn out_lists_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Out::create(&dir.path().join("o")).unwrap();
        out.json("a.json", &serde_json::json!({"k": 1})).unwrap();
        out.text("a.csv", "x\n".into()).unwrap();
        out.plot("a.svg", |p| {
            std::fs::write(p, "<svg/>").map_err(|e| e.to_string())
        })
        .unwrap();
        assert_eq!(out.wrote().len(), 3);
        let list = out.list();
        assert!(
            list.ends_with("a.csv and ") || list.contains(", "),
            "{list}"
        );
        assert!(list.ends_with("a.svg"), "{list}");
        let json = std::fs::read_to_string(dir.path().join("o/a.json")).unwrap();
        assert_eq!(json, "{\n  \"k\": 1\n}\n");
        assert!(out
            .plot("b.svg", |_| Err("no".into()))
            .unwrap_err()
            .to_string()
            .starts_with("cannot write"));
    }
}
