//! `bench scale`'s files and human report: the registration sweep's CSV and plot are its
//! own; the echo, USL and steering parts are written by their scenarios' own CSV and plot
//! functions, under `scale-` names.

use std::fmt::Write as _;

use super::ScaleReport;
use crate::lockecho::{self, Crossover};
use crate::steering;
use crate::sweep::Out;
use crate::sweepplot::{write_sweep, Panel};
use crate::usl::{self, UslReport};
use crate::BenchError;

/// Writes the CSV files and plots of the parts measured, then scale.json naming them all.
pub(crate) fn write(out: &mut Out, r: &mut ScaleReport) -> Result<(), BenchError> {
    if let Some(reg) = &r.registration {
        out.text("scale-registration.csv", registration_csv(r))?;
        if !reg.cases.is_empty() {
            out.plot("scale-registration.svg", |p| registration_svg(p, r))?;
        }
    }
    if let Some(e) = &r.echo {
        out.text("scale-echo.csv", lockecho::csv(e))?;
        out.plot("scale-echo.svg", |p| lockecho::plot::write_svg(p, e))?;
    }
    if let Some(u) = &r.usl {
        out.text("scale-usl.csv", usl_csv(u))?;
        out.plot("scale-usl.svg", |p| usl::write_svg(p, u))?;
    }
    if let Some(s) = &r.steering {
        out.text("scale-steering.csv", steering::cases_csv(s))?;
        out.text("scale-steering-sctp.csv", steering::sctp_csv(s))?;
        out.plot("scale-steering.svg", |p| steering::plot(p, s))?;
    }
    let mut files: Vec<String> = out
        .wrote()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    files.push(out.dir().join("scale.json").display().to_string());
    r.files = files;
    out.json("scale.json", r)
}

/// `{sbi} {state}`: one line of the registration plot.
fn series(c: &crate::registration::CaseReport) -> String {
    format!("{} {}", c.sbi, c.state)
}

fn registration_csv(r: &ScaleReport) -> String {
    let mut s = String::from(
        "workers,sbi,state,ues,ok,registrations_per_s,core_cpu_us_per_registration,\
         ratio_to_floor,registration_p50_us,registration_p99_us,core_utilisation,\
         contention_ratio,handoffs_per_registration\n",
    );
    for c in r.registration.iter().flat_map(|p| &p.cases) {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{:.1},{:.2},{:.3},{},{},{:.3},{:.6},{:.3}",
            c.workers,
            c.sbi,
            c.state,
            c.ues,
            c.ok,
            c.registrations_per_s,
            c.core_cpu_us_per_registration,
            c.ratio_to_floor,
            c.registration_p50_us,
            c.registration_p99_us,
            c.core_utilisation,
            c.contention_ratio,
            c.handoffs_per_registration
        );
    }
    s
}

fn registration_svg(path: &std::path::Path, r: &ScaleReport) -> Result<(), String> {
    let cases: Vec<_> = r.registration.iter().flat_map(|p| &p.cases).collect();
    let panel = |y_desc: &str, f: fn(&crate::registration::CaseReport) -> f64| Panel {
        y_desc: y_desc.to_owned(),
        points: cases.iter().map(|c| (series(c), c.workers, f(c))).collect(),
    };
    write_sweep(
        path,
        &format!(
            "bench scale: registrations against workers ({} CPUs, {})",
            r.machine.nproc,
            r.machine.cpu.as_deref().unwrap_or("CPU unknown")
        ),
        &[
            panel("registrations per second", |c| c.registrations_per_s),
            panel("core CPU per registration (µs)", |c| {
                c.core_cpu_us_per_registration
            }),
        ],
    )
}

/// One row per design and core count: measured, model at the measured counts, projection
/// with its band beyond them.
fn usl_csv(u: &UslReport) -> String {
    let mut s = String::from("design,cores,kind,rps,band_low,band_high\n");
    for p in &u.projections {
        for c in &p.check {
            let _ = writeln!(
                s,
                "{},{},measured,{:.0},,",
                p.design, c.workers, c.measured_rps
            );
            let _ = writeln!(s, "{},{},model,{:.0},,", p.design, c.workers, c.model_rps);
        }
        for x in &p.projected {
            let _ = writeln!(
                s,
                "{},{},projection,{:.0},{:.0},{:.0}",
                p.design, x.cores, x.rps, x.band_low, x.band_high
            );
        }
    }
    s
}

/// The human form: the machine, the registration table, the crossover, the projection and
/// the steering costs, then what was skipped or failed.
pub(crate) fn table(r: &ScaleReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "steer5g bench scale: workers {:?}, budget {:.0} s, took {:.1} s{}",
        r.worker_counts,
        r.budget_s,
        r.elapsed_s,
        if r.within_budget {
            ""
        } else {
            " (OVER the budget)"
        }
    );
    let _ = writeln!(
        s,
        "machine: {}, {} CPUs, kernel {}, {} build, load {}",
        r.machine.cpu.as_deref().unwrap_or("CPU unknown"),
        r.machine.nproc,
        r.machine.kernel.as_deref().unwrap_or("unknown"),
        r.machine.build,
        r.machine.loadavg.as_deref().unwrap_or("unknown")
    );
    let ends: Vec<String> = r
        .timeline
        .iter()
        .map(|p| {
            format!(
                "{} {:.0} s (plan {:.0})",
                p.phase, p.ended_s, p.planned_end_s
            )
        })
        .collect();
    let _ = writeln!(s, "phases ended: {}", ends.join(", "));
    if let Some(reg) = &r.registration {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "registrations ({}); crypto floor {:.1} µs per registration",
            reg.procedure, reg.floor.us_per_registration
        );
        let _ = writeln!(
            s,
            "{:>7} {:>7} {:>8} {:>6} {:>8} {:>12} {:>8} {:>7} {:>4}",
            "workers", "sbi", "state", "UEs", "reg/s", "core µs/reg", "× floor", "p50 ms", "ok"
        );
        for c in &reg.cases {
            let _ = writeln!(
                s,
                "{:>7} {:>7} {:>8} {:>6} {:>8.0} {:>12.1} {:>8.2} {:>7.1} {:>4}",
                c.workers,
                c.sbi,
                c.state,
                c.ues,
                c.registrations_per_s,
                c.core_cpu_us_per_registration,
                c.ratio_to_floor,
                c.registration_p50_us as f64 / 1e3,
                if c.ok { "yes" } else { "NO" }
            );
        }
    }
    if let Some(e) = &r.echo {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "echo at {} workers, {} µs of work per request ({:.2} s windows):",
            e.workers, e.settings.work_us, e.settings.duration_s
        );
        for p in &e.runs {
            let _ = writeln!(
                s,
                "  share {:>5.3}: sharded {:>8.0}/s  locked {:>8.0}/s  ratio {:.3}",
                p.lock_share, p.sharded_rps, p.locked_rps, p.ratio
            );
        }
        let _ = match e.crossover {
            Crossover::AtOrBelow(f) => writeln!(s, "  crossover: sharded wins already at {f}"),
            Crossover::Interpolated(f) => writeln!(s, "  crossover: share {f:.3}"),
            Crossover::NotReached => writeln!(s, "  crossover: not reached"),
        };
    }
    if let Some(u) = &r.usl {
        let _ = writeln!(s);
        let _ = writeln!(s, "{}", u.label);
        for p in &u.projections {
            let _ = writeln!(
                s,
                "  {:>7}: lambda {:.0}/s, sigma {:.4}, kappa {:.6}, fit residual {:.1}%{}",
                p.design,
                p.usl.lambda,
                p.usl.sigma,
                p.usl.kappa,
                p.fit_residual * 100.0,
                if p.supported { "" } else { " (not supported)" }
            );
            for x in &p.projected {
                let _ = writeln!(
                    s,
                    "           projection {:>2} cores: {:>10.0}/s (band {:.0}..{:.0})",
                    x.cores, x.rps, x.band_low, x.band_high
                );
            }
        }
    }
    if let Some(st) = &r.steering {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "steering cost per message at {} workers ({} messages of {} B, batch {:?}):",
            st.settings.workers, st.settings.messages, st.settings.size, st.settings.batch
        );
        for c in &st.cases {
            let _ = writeln!(
                s,
                "  {:<12} {:>8.0} ns/msg {:>10.0} msgs/s",
                c.case, c.cpu_ns_per_msg, c.msgs_per_s
            );
        }
        for h in &st.sctp_handoff {
            let _ = writeln!(
                s,
                "  sctp k={:<2} hand-off {:>6.0} ns per handed-off message",
                h.k, h.ns_per_handed_off_msg
            );
        }
    }
    for k in &r.skipped {
        let _ = writeln!(s, "skipped: {k}");
    }
    for f in &r.failures {
        let _ = writeln!(s, "FAILED: {f}");
    }
    s
}
