//! `steer5g bench usl`: a projection of the echo server to 16 and 64 cores with the
//! Universal Scalability Law (Gunther),
//!
//! ```text
//! X(N) = λN / (1 + σ(N − 1) + κN(N − 1))
//! ```
//!
//! whose two costs are measured here separately rather than fitted:
//!
//! - contention σ: from the lock wait share `w` of the locked runs at N ≥ 2 workers. In the
//!   USL a request at N takes `1 + σ(N − 1)` times its lone service time, the excess being
//!   the wait, so `w = σ(N − 1) / (1 + σ(N − 1))` and `σ = w / ((N − 1)(1 − w))`.
//! - coherency κ: the cost of one cross-core hand-off (half the round trip of a message
//!   over a steer mesh queue between two pinned threads, i.e. cache lines moving between
//!   cores) as a share of the lone service time. The USL charges it once per pair of
//!   workers; for one lock that is an upper bound (its line moves at most once per
//!   acquisition), which the sensitivity band covers by halving and doubling σ and κ.
//!
//! λ is the measured one-worker rate. The model is then checked against every measured N
//! (the fit residual) before it is extended; the result is labelled a projection
//! everywhere it is printed, since nothing was run on 16 or 64 cores.

use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;
use steer::{Mesh, WorkerId, Workers};

use super::lockecho::{self, EchoSettingsArgs, PointReport, Settings};
use super::machine::Machine;
use super::sweep::{shown, Axis, Out, SweepArgs};

use crate::BenchError;

/// A fit residual above this says the model does not describe the measured points, so its
/// projection is flagged as unsupported.
pub(crate) const RESIDUAL_LIMIT: f64 = 0.2;
/// Core counts the projection is printed for.
pub(crate) const PROJECT_TO: [u16; 2] = [16, 64];
/// Factors σ and κ are scaled by for the sensitivity band.
const BAND: [f64; 3] = [0.5, 1.0, 2.0];
/// Hand-off round trips measured (at most), and for at most this long.
const HANDOFF_ROUND_TRIPS: u32 = 200_000;
const HANDOFF_TIME: Duration = Duration::from_millis(500);

/// The three USL parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Usl {
    /// Rate of one worker (requests per second).
    pub(crate) lambda: f64,
    /// Contention.
    pub(crate) sigma: f64,
    /// Coherency.
    pub(crate) kappa: f64,
}

impl Usl {
    /// X(n).
    pub(crate) fn throughput(&self, n: f64) -> f64 {
        let d = 1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0);
        if d > 0.0 {
            self.lambda * n / d
        } else {
            0.0
        }
    }

    /// The lowest and highest X(n) with σ and κ each scaled by 0.5, 1 and 2.
    pub(crate) fn band(&self, n: f64) -> (f64, f64) {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for s in BAND {
            for k in BAND {
                let x = Usl {
                    sigma: self.sigma * s,
                    kappa: self.kappa * k,
                    ..*self
                }
                .throughput(n);
                lo = lo.min(x);
                hi = hi.max(x);
            }
        }
        (lo, hi)
    }

    /// Root mean square of the relative errors of the model against `(n, measured rate)`
    /// points with a positive rate; 0 when there are none.
    pub(crate) fn residual(&self, measured: &[(u16, f64)]) -> f64 {
        let errs: Vec<f64> = measured
            .iter()
            .filter(|(_, x)| *x > 0.0 && x.is_finite())
            .map(|&(n, x)| (self.throughput(f64::from(n)) - x) / x)
            .collect();
        if errs.is_empty() {
            return 0.0;
        }
        (errs.iter().map(|e| e * e).sum::<f64>() / errs.len() as f64).sqrt()
    }
}

/// σ implied by a lock wait share `w` at `n` workers: `w / ((n − 1)(1 − w))`. `None` for
/// one worker (nobody to wait for) or a share outside `[0, 1)`.
pub(crate) fn sigma_from_wait_share(w: f64, n: u16) -> Option<f64> {
    if n < 2 || !(w.is_finite() && (0.0..1.0).contains(&w)) {
        return None;
    }
    Some(w / (f64::from(n - 1) * (1.0 - w)))
}

/// One cross-core hand-off, measured.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Handoff {
    /// Half a round trip between two threads over the mesh, in nanoseconds.
    pub(crate) one_way_ns: f64,
    pub(crate) round_trips: u32,
    /// Whether the two threads were pinned to two different cores; if not, the figure is a
    /// same-core one and understates the cross-core cost.
    pub(crate) cross_core: bool,
}

/// Ping-pongs a message between two threads over a steer mesh (spinning, no wake-ups),
/// pinned to the first two cores when there are two.
pub(crate) fn measure_handoff() -> Result<Handoff, BenchError> {
    let workers = Workers::new(2).ok_or_else(|| BenchError::Failed("mesh of 2".into()))?;
    let mut ends = Mesh::<u32>::new(workers, 64).into_ends().into_iter();
    let (Some(mut a), Some(mut b)) = (ends.next(), ends.next()) else {
        return Err(BenchError::Failed("mesh ends".into()));
    };
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let (ca, cb) = (cores.first().copied(), cores.get(1).copied());
    let cross_core = ca.is_some() && cb.is_some();
    let deadline = Instant::now() + HANDOFF_TIME + Duration::from_secs(2);
    // Waits for one message, giving the core away now and then in case the peer shares it;
    // gives up at the deadline so a lost peer cannot hang the run.
    fn wait_one(end: &mut steer::MeshEnd<u32>, deadline: Instant, share: bool) -> Option<u32> {
        let mut spins = 0u32;
        loop {
            let mut got = None;
            end.drain(|_, m| got = Some(m));
            if got.is_some() {
                return got;
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) && Instant::now() > deadline {
                return None;
            }
            if share {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
    let echo = std::thread::Builder::new()
        .name("handoff-echo".into())
        .spawn(move || {
            if let Some(c) = cb {
                core_affinity::set_for_current(c);
            }
            while let Some(m) = wait_one(&mut b, deadline, !cross_core) {
                if m == u32::MAX || b.send(WorkerId(0), m).is_err() {
                    break;
                }
            }
        })?;
    // The probing side runs on a thread of its own too: threads inherit their creator's
    // core mask, and the caller's later threads must not inherit a pin.
    let probe = std::thread::Builder::new()
        .name("handoff-probe".into())
        .spawn(move || {
            if let Some(c) = ca {
                core_affinity::set_for_current(c);
            }
            let start = Instant::now();
            let mut n = 0u32;
            while n < HANDOFF_ROUND_TRIPS && start.elapsed() < HANDOFF_TIME {
                if a.send(WorkerId(1), n).is_err()
                    || wait_one(&mut a, deadline, !cross_core).is_none()
                {
                    break;
                }
                n += 1;
            }
            let elapsed = start.elapsed();
            let _ = a.send(WorkerId(1), u32::MAX);
            (n, elapsed)
        })?;
    let probed = probe.join();
    let _ = echo.join();
    let (n, elapsed) =
        probed.map_err(|_| BenchError::Failed("the hand-off probe panicked".into()))?;
    if n == 0 {
        return Err(BenchError::Failed(
            "the hand-off probe got no round trip".into(),
        ));
    }
    Ok(Handoff {
        one_way_ns: elapsed.as_secs_f64() * 1e9 / f64::from(n) / 2.0,
        round_trips: n,
        cross_core,
    })
}

/// `steer5g bench usl`.
#[derive(Debug, Args)]
#[command(mut_arg("workers", |a| shown(a, None,
    "Worker counts to measure, a list of counts and ranges (`1..4`, `all`); the same as \
     --max-workers N for 1..N (default: 1..all).").conflicts_with("max_workers")))]
#[command(mut_arg("duration", |a| shown(a, Some("3"),
    "Length of each measured window, in seconds.")))]
#[command(mut_arg("warmup", |a| shown(a, Some("0.5"),
    "Traffic before each measured window, in seconds.")))]
#[command(mut_arg("rounds", |a| shown(a, Some("1"), lockecho::ROUNDS_HELP)))]
#[command(mut_arg("out", |a| shown(a, Some("bench-results"),
    "Directory for usl.json and usl.svg.")))]
pub struct UslArgs {
    /// Measure 1..=N workers (default: every core).
    #[arg(long, value_name = "N")]
    pub(crate) max_workers: Option<u16>,
    /// Share of each request's work done under the lock.
    #[arg(long, default_value_t = 0.25, value_name = "F")]
    pub(crate) lock_share: f64,
    #[command(flatten)]
    pub(crate) settings: EchoSettingsArgs,
    /// `--workers`, `--duration`, `--warmup`, `--rounds`, `--out`.
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
}

/// One design's model and projection.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Projection {
    pub(crate) design: &'static str,
    pub(crate) usl: Usl,
    /// Where σ and κ came from.
    pub(crate) sigma_source: String,
    pub(crate) kappa_source: String,
    /// Model against measurement at every measured N.
    pub(crate) check: Vec<CheckPoint>,
    /// RMS relative error of the model over the measured N.
    pub(crate) fit_residual: f64,
    /// Whether the residual is within [`RESIDUAL_LIMIT`]; when not, the projection is
    /// printed but the measurements do not support it.
    pub(crate) supported: bool,
    pub(crate) projected: Vec<Projected>,
}

/// The model against a measured rate.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct CheckPoint {
    pub(crate) workers: u16,
    pub(crate) measured_rps: f64,
    pub(crate) model_rps: f64,
}

/// The model at a core count nobody measured.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Projected {
    pub(crate) cores: u16,
    pub(crate) rps: f64,
    /// Lowest and highest with σ and κ each ×0.5..×2.
    pub(crate) band_low: f64,
    pub(crate) band_high: f64,
}

/// The content of usl.json and of `--json`.
#[derive(Debug, Serialize)]
pub(crate) struct UslReport {
    pub(crate) scenario: &'static str,
    pub(crate) label: &'static str,
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) lock_share: f64,
    pub(crate) settings: Settings,
    pub(crate) handoff: Handoff,
    pub(crate) measured: Vec<PointReport>,
    pub(crate) projections: Vec<Projection>,
    /// Projected sharded / locked at each of [`PROJECT_TO`].
    pub(crate) projected_ratio: Vec<(u16, f64)>,
}

pub(crate) const LABEL: &str =
    "PROJECTION: Universal Scalability Law with contention and coherency \
                     measured on this machine at 1..N workers; not a measurement at 16 or 64 cores";

/// Builds one design's projection from its measured points.
pub(crate) fn project(
    design: &'static str,
    measured: &[(u16, f64)],
    sigma: (f64, String),
    kappa: (f64, String),
) -> Option<Projection> {
    let lambda = measured.iter().find(|(n, _)| *n == 1)?.1;
    let usl = Usl {
        lambda,
        sigma: sigma.0,
        kappa: kappa.0,
    };
    let check = measured
        .iter()
        .map(|&(n, x)| CheckPoint {
            workers: n,
            measured_rps: x,
            model_rps: usl.throughput(f64::from(n)),
        })
        .collect();
    let projected = PROJECT_TO
        .iter()
        .map(|&c| {
            let (band_low, band_high) = usl.band(f64::from(c));
            Projected {
                cores: c,
                rps: usl.throughput(f64::from(c)),
                band_low,
                band_high,
            }
        })
        .collect();
    Some(Projection {
        design,
        usl,
        sigma_source: sigma.1,
        kappa_source: kappa.1,
        check,
        fit_residual: usl.residual(measured),
        supported: usl.residual(measured) <= RESIDUAL_LIMIT,
        projected,
    })
}

/// What [`model`] makes.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    /// Locked first, then sharded.
    pub(crate) projections: Vec<Projection>,
    /// Projected sharded / locked at each of [`PROJECT_TO`].
    pub(crate) projected_ratio: Vec<(u16, f64)>,
}

/// Both designs' models from echo points measured at one lock share over 1..N workers (the
/// first point is the one-worker one) and a measured hand-off: the projections, locked
/// first, and the projected sharded / locked at each of [`PROJECT_TO`].
pub(crate) fn model(measured: &[PointReport], handoff: &Handoff) -> Result<Model, BenchError> {
    let one = measured
        .first()
        .ok_or_else(|| BenchError::Failed("nothing measured".into()))?;
    // The lone service time the coherency cost is relative to.
    let service_us = one.locked.service_us.max(1e-3);
    let kappa_locked = handoff.one_way_ns / 1000.0 / service_us;
    let sigmas: Vec<f64> = measured
        .iter()
        .filter_map(|p| sigma_from_wait_share(p.locked.wait_share, p.workers))
        .collect();
    let sigma_locked = if sigmas.is_empty() {
        (
            one.locked.held_share,
            "only 1 worker measured: the lock hold share (Amdahl's serial share)".to_string(),
        )
    } else {
        (
            sigmas.iter().sum::<f64>() / sigmas.len() as f64,
            format!(
                "lock wait share at N>=2 workers, w/((N-1)(1-w)), mean of {}",
                sigmas.len()
            ),
        )
    };
    let sharded_sigmas: Vec<f64> = measured
        .iter()
        .filter_map(|p| sigma_from_wait_share(p.sharded.wait_share, p.workers))
        .collect();
    let sigma_sharded = if sharded_sigmas.is_empty() {
        0.0
    } else {
        sharded_sigmas.iter().sum::<f64>() / sharded_sigmas.len() as f64
    };
    // A sharded request crosses cores only when it is handed off (no BPF steering).
    let handed: f64 = measured
        .iter()
        .map(|p| {
            let s = &p.sharded.server;
            if s.served > 0 {
                s.handed_off as f64 / s.served as f64
            } else {
                0.0
            }
        })
        .fold(0.0, f64::max);
    let kappa_src = format!(
        "one hand-off of {:.0} ns{} / lone service time {:.2} us",
        handoff.one_way_ns,
        if handoff.cross_core {
            ""
        } else {
            " (same core: no second core to measure on)"
        },
        service_us
    );
    let rates = |f: fn(&PointReport) -> f64| -> Vec<(u16, f64)> {
        measured.iter().map(|p| (p.workers, f(p))).collect()
    };
    let mut projections = Vec::new();
    if let Some(p) = project(
        "locked",
        &rates(|p| p.locked_rps),
        sigma_locked,
        (kappa_locked, format!("{kappa_src}, once per peer")),
    ) {
        projections.push(p);
    }
    if let Some(p) = project(
        "sharded",
        &rates(|p| p.sharded_rps),
        (
            sigma_sharded,
            "wait share for the worker's own shard (no lock)".into(),
        ),
        (
            kappa_locked * handed,
            format!("{kappa_src}, times the handed-off share {handed:.4}"),
        ),
    ) {
        projections.push(p);
    }
    let projected_ratio = PROJECT_TO
        .iter()
        .enumerate()
        .filter_map(|(i, &c)| {
            let l = projections.first()?.projected.get(i)?.rps;
            let s = projections.get(1)?.projected.get(i)?.rps;
            (l > 0.0).then(|| (c, s / l))
        })
        .collect();
    Ok(Model {
        projections,
        projected_ratio,
    })
}

/// `steer5g bench usl`.
pub(crate) fn run(json: bool, args: &UslArgs) -> Result<(), BenchError> {
    args.sweep.only(
        "usl",
        &[
            Axis::Workers,
            Axis::Duration,
            Axis::Warmup,
            Axis::Rounds,
            Axis::Out,
        ],
    )?;
    let workers: Vec<u16> = if args.sweep.workers.is_empty() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let max = args
            .max_workers
            .unwrap_or_else(|| u16::try_from(cores).unwrap_or(u16::MAX));
        if max == 0 || max > 64 {
            return Err(BenchError::Invalid("--max-workers must be 1..=64".into()));
        }
        (1..=max).collect()
    } else {
        args.sweep.workers(64)?
    };
    let max = workers.iter().copied().max().unwrap_or(1);
    if !(args.lock_share.is_finite() && (0.0..=1.0).contains(&args.lock_share)) {
        return Err(BenchError::Invalid(
            "--lock-share must be between 0 and 1".into(),
        ));
    }
    let settings = Settings::from_args(&args.settings, &args.sweep)?;
    let machine = Machine::probe();
    lockecho::warn_about(&machine, max);
    let handoff = measure_handoff()?;
    tracing::info!(
        one_way_ns = handoff.one_way_ns,
        cross_core = handoff.cross_core,
        "hand-off cost measured"
    );
    let points: Vec<(u16, f64)> = workers.iter().map(|&n| (n, args.lock_share)).collect();
    let measured = lockecho::measure_points(&points, &settings)?;
    let Model {
        projections,
        projected_ratio,
    } = model(&measured, &handoff)?;
    let report = UslReport {
        scenario: "usl-projection",
        label: LABEL,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        lock_share: args.lock_share,
        settings,
        handoff,
        measured,
        projections,
        projected_ratio,
    };
    let mut out = Out::create(&args.sweep.out_or("bench-results"))?;
    out.json("usl.json", &report)?;
    out.plot("usl.svg", |p| write_svg(p, &report))?;
    if json {
        crate::print_json(&report)?;
    } else {
        print!("{}", table(&report));
        println!("wrote {}", out.list());
    }
    Ok(())
}

fn table(r: &UslReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "{}", r.label);
    let _ = writeln!(
        s,
        "lock share {}, {} us work; hand-off {:.0} ns one way{}",
        r.lock_share,
        r.settings.work_us,
        r.handoff.one_way_ns,
        if r.handoff.cross_core {
            ""
        } else {
            " (same core)"
        }
    );
    for p in &r.projections {
        let _ = writeln!(
            s,
            "{:>8}: lambda {:.0}/s, sigma {:.4} ({}), kappa {:.6}; fit residual {:.1}%{}",
            p.design,
            p.usl.lambda,
            p.usl.sigma,
            p.sigma_source,
            p.usl.kappa,
            p.fit_residual * 100.0,
            if p.supported {
                ""
            } else {
                " -- above 20%: the measurements do not support this projection"
            }
        );
        for c in &p.check {
            let _ = writeln!(
                s,
                "          N={:<3} measured {:>10.0}/s  model {:>10.0}/s",
                c.workers, c.measured_rps, c.model_rps
            );
        }
        for x in &p.projected {
            let _ = writeln!(
                s,
                "          projection N={:<3} {:>10.0}/s  (band {:.0}..{:.0})",
                x.cores, x.rps, x.band_low, x.band_high
            );
        }
    }
    for (c, ratio) in &r.projected_ratio {
        let _ = writeln!(s, "projection: sharded/locked at {c} cores {ratio:.2}x");
    }
    s
}

pub(crate) fn write_svg(path: &std::path::Path, r: &UslReport) -> Result<(), String> {
    use super::plot::{finish, line, svg_err, svg_root};
    use plotters::prelude::*;
    const COLORS: [RGBColor; 2] = [RGBColor(120, 120, 120), RGBColor(31, 119, 180)];
    let xmax = f64::from(PROJECT_TO[PROJECT_TO.len() - 1]);
    let ymax = r
        .projections
        .iter()
        .flat_map(|p| {
            p.projected
                .iter()
                .map(|x| x.band_high.max(x.rps))
                .chain(p.check.iter().map(|c| c.measured_rps))
        })
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max)
        * 1.1;
    let root = svg_root(path, (760, 500))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "USL PROJECTION of the echo server, lock share {} (measured 1..{})",
                r.lock_share,
                r.measured.len()
            ),
            ("sans-serif", 17),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..xmax + 1.0, 0f64..ymax)
        .map_err(svg_err)?;
    chart
        .configure_mesh()
        .x_desc("cores (workers)")
        .y_desc("requests per second")
        .y_label_formatter(&|y| format!("{:.0}k", y / 1000.0))
        .draw()
        .map_err(svg_err)?;
    let ns: Vec<f64> = (1..=PROJECT_TO[PROJECT_TO.len() - 1])
        .map(f64::from)
        .collect();
    for (p, color) in r.projections.iter().zip(COLORS) {
        let curve: Vec<(f64, f64)> = ns.iter().map(|&n| (n, p.usl.throughput(n))).collect();
        let label = format!("{} (projection)", p.design);
        line(&mut chart, curve, color, 2, label, 14)?;
        let light = color.mix(0.35);
        let lo: Vec<(f64, f64)> = ns.iter().map(|&n| (n, p.usl.band(n).0)).collect();
        let hi: Vec<(f64, f64)> = ns.iter().map(|&n| (n, p.usl.band(n).1)).collect();
        chart
            .draw_series(LineSeries::new(lo, light.stroke_width(1)))
            .map_err(svg_err)?;
        chart
            .draw_series(LineSeries::new(hi, light.stroke_width(1)))
            .map_err(svg_err)?;
        chart
            .draw_series(
                p.check.iter().map(|c| {
                    Circle::new((f64::from(c.workers), c.measured_rps), 5, color.filled())
                }),
            )
            .map_err(svg_err)?;
    }
    finish(&mut chart, &root, SeriesLabelPosition::UpperLeft)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn usl_reduces_to_linear_and_amdahl() {
        let lin = Usl {
            lambda: 100.0,
            sigma: 0.0,
            kappa: 0.0,
        };
        assert!((lin.throughput(16.0) - 1600.0).abs() < 1e-9);
        // Amdahl: with σ = 0.25 the ceiling is λ/σ = 400.
        let amdahl = Usl { sigma: 0.25, ..lin };
        assert!((amdahl.throughput(1.0) - 100.0).abs() < 1e-9);
        assert!((amdahl.throughput(4.0) - 400.0 / 1.75).abs() < 1e-9);
        assert!(amdahl.throughput(1e6) < 400.0);
        // κ makes throughput fall past the peak at sqrt((1 − σ)/κ).
        let retro = Usl {
            lambda: 100.0,
            sigma: 0.0,
            kappa: 0.01,
        };
        assert!(retro.throughput(10.0) > retro.throughput(64.0));
    }

    #[test]
    fn sigma_from_wait_share_inverts_the_model() {
        // At N workers the USL waits σ(N−1)/(1+σ(N−1)) of the service time.
        for (sigma, n) in [(0.1f64, 2u16), (0.25, 4), (0.03, 16)] {
            let w = sigma * f64::from(n - 1) / (1.0 + sigma * f64::from(n - 1));
            let back = sigma_from_wait_share(w, n).unwrap();
            assert!((back - sigma).abs() < 1e-12, "{sigma} {n} {back}");
        }
        assert_eq!(sigma_from_wait_share(0.2, 1), None);
        assert_eq!(sigma_from_wait_share(1.0, 2), None);
        assert_eq!(sigma_from_wait_share(-0.1, 2), None);
        assert_eq!(sigma_from_wait_share(f64::NAN, 2), None);
        assert_eq!(sigma_from_wait_share(0.0, 2), Some(0.0));
    }

    #[test]
    fn residual_is_zero_on_the_model_and_grows_off_it() {
        let m = Usl {
            lambda: 1000.0,
            sigma: 0.1,
            kappa: 0.001,
        };
        let exact: Vec<(u16, f64)> = (1..=4).map(|n| (n, m.throughput(f64::from(n)))).collect();
        assert!(m.residual(&exact) < 1e-12);
        let off: Vec<(u16, f64)> = exact.iter().map(|&(n, x)| (n, x * 1.1)).collect();
        let r = m.residual(&off);
        assert!((r - (1.0 - 1.0 / 1.1)).abs() < 1e-9, "{r}");
        assert_eq!(m.residual(&[]), 0.0);
        assert_eq!(m.residual(&[(2, 0.0)]), 0.0);
    }

    #[test]
    fn band_brackets_the_projection() {
        let m = Usl {
            lambda: 1000.0,
            sigma: 0.05,
            kappa: 0.0005,
        };
        for n in [1.0, 16.0, 64.0] {
            let (lo, hi) = m.band(n);
            let x = m.throughput(n);
            assert!(lo <= x && x <= hi, "{n}: {lo} {x} {hi}");
        }
        let (lo, hi) = m.band(64.0);
        assert!(hi > lo);
        // Halving both costs is the optimistic edge.
        let best = Usl {
            sigma: 0.025,
            kappa: 0.00025,
            ..m
        };
        assert!((hi - best.throughput(64.0)).abs() < 1e-9);
    }

    #[test]
    fn projection_needs_one_worker_and_checks_every_point() {
        assert!(project(
            "x",
            &[(2, 10.0)],
            (0.1, String::new()),
            (0.0, String::new())
        )
        .is_none());
        let p = project(
            "locked",
            &[(1, 100.0), (2, 150.0)],
            (0.25, "s".into()),
            (0.0, "k".into()),
        )
        .unwrap();
        assert_eq!(p.usl.lambda, 100.0);
        assert_eq!(p.check.len(), 2);
        assert!((p.check[1].model_rps - 160.0).abs() < 1e-9);
        assert_eq!(
            p.projected.iter().map(|x| x.cores).collect::<Vec<_>>(),
            PROJECT_TO
        );
        assert!(p.fit_residual > 0.0);
    }

    #[test]
    fn handoff_probe_measures_something() {
        let h = measure_handoff().unwrap();
        assert!(h.round_trips > 0);
        assert!(h.one_way_ns.is_finite() && h.one_way_ns > 0.0);
    }
}
