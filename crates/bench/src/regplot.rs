//! registration.svg: per case, registrations per second (left) and core CPU time per
//! registration with its crypto floor drawn as a line across the bar (right).
//!
//! The SVG backend writes text as `<text>` elements, so no font library is needed.

use std::path::Path;

use plotters::prelude::*;

use super::plot::{above, bars, finish, svg_err, svg_root, Slots};
use super::registration::RegistrationBenchReport;
use super::sweepplot::{write_sweep, Panel};

const RATE_COLOR: RGBColor = RGBColor(31, 119, 180);
const CPU_COLOR: RGBColor = RGBColor(255, 127, 14);
const FLOOR_COLOR: RGBColor = RGBColor(200, 0, 0);

/// Writes the chart of `report` to `path`.
pub(crate) fn write_svg(path: &Path, report: &RegistrationBenchReport) -> Result<(), String> {
    let slots = Slots::new(report.cases.iter().map(|c| c.case.clone()).collect());
    let n = slots.count();
    let w = u32::try_from(n).unwrap_or(u32::MAX / 400) * 2 * 130 + 300;
    let root = svg_root(path, (w, 520))?
        .titled(
            &format!(
                "steer5g registration + de-registration, {} UEs, K={}",
                report.settings.ues, report.settings.concurrency
            ),
            ("sans-serif", 20),
        )
        .map_err(svg_err)?;
    let (left, right) = root.split_horizontally(w / 2);
    let above = above(13);
    let builder = |area| {
        let mut b = ChartBuilder::on(area);
        b.margin(16).x_label_area_size(40).y_label_area_size(64);
        b
    };

    // Registrations per second.
    let ymax = report
        .cases
        .iter()
        .map(|c| c.registrations_per_s)
        .fold(1.0f64, f64::max)
        * 1.2;
    let mut chart = slots.chart(&mut builder(&left), ymax, "registrations per second", None)?;
    let rate = report.cases.iter().map(|c| c.registrations_per_s);
    bars(&mut chart, rate, (20, 60), RATE_COLOR, None)?;
    chart
        .draw_series(report.cases.iter().enumerate().map(|(i, c)| {
            Text::new(
                format!("{:.0}", c.registrations_per_s),
                (i as i32 * 100 + 50, c.registrations_per_s * 1.02),
                above.clone(),
            )
        }))
        .map_err(svg_err)?;

    // Core CPU per registration, with the floor.
    let ymax = report
        .cases
        .iter()
        .map(|c| {
            c.core_cpu_us_per_registration
                .max(c.floor_us_per_registration)
        })
        .fold(1.0f64, f64::max)
        * 1.2;
    let mut chart = slots.chart(
        &mut builder(&right),
        ymax,
        "core CPU per registration (µs)",
        None,
    )?;
    let cpu = report.cases.iter().map(|c| c.core_cpu_us_per_registration);
    bars(&mut chart, cpu, (20, 60), CPU_COLOR, Some("core CPU"))?;
    chart
        .draw_series(report.cases.iter().enumerate().map(|(i, c)| {
            let x = i as i32 * 100;
            PathElement::new(
                vec![
                    (x + 10, c.floor_us_per_registration),
                    (x + 90, c.floor_us_per_registration),
                ],
                FLOOR_COLOR.stroke_width(3),
            )
        }))
        .map_err(svg_err)?
        .label("crypto floor")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], FLOOR_COLOR.stroke_width(3)));
    chart
        .draw_series(report.cases.iter().enumerate().map(|(i, c)| {
            Text::new(
                format!("{:.1}x floor", c.ratio_to_floor),
                (
                    i as i32 * 100 + 50,
                    c.core_cpu_us_per_registration
                        .max(c.floor_us_per_registration)
                        * 1.02,
                ),
                above.clone(),
            )
        }))
        .map_err(svg_err)?;
    finish(&mut chart, &root, SeriesLabelPosition::UpperRight)
}

/// registration-sweep.svg: against the worker count, one line per state, SBI mode,
/// connection kind and SUCI scheme: registrations per second, the contended share of lock
/// acquisitions, and worker wake-ups per registration.
pub(crate) fn write_sweep_svg(path: &Path, report: &RegistrationBenchReport) -> Result<(), String> {
    type Get = fn(&super::registration::CaseReport) -> f64;
    let panels: [(&str, Get); 3] = [
        ("registrations per second", |c| c.registrations_per_s),
        ("contended lock acquisitions, %", |c| {
            c.contention_ratio * 100.0
        }),
        ("worker wake-ups per registration", |c| {
            c.wakeups_per_registration
        }),
    ];
    let key = |c: &super::registration::CaseReport| {
        format!(
            "{} {} {}{}",
            c.state,
            c.sbi,
            c.suci,
            if c.connections == "short" {
                " short"
            } else {
                ""
            }
        )
    };
    let panels: Vec<Panel> = panels
        .iter()
        .map(|(desc, get)| Panel {
            y_desc: (*desc).to_owned(),
            points: report
                .cases
                .iter()
                .map(|c| (key(c), c.workers, get(c)))
                .collect(),
        })
        .collect();
    write_sweep(
        path,
        &format!(
            "steer5g registrations against workers, {} UEs, K={}",
            report.settings.ues, report.settings.concurrency
        ),
        &panels,
    )
}
