//! registration.svg: per case, registrations per second (left) and core CPU time per
//! registration with its crypto floor drawn as a line across the bar (right).
//!
//! The SVG backend writes text as `<text>` elements, so no font library is needed.

use std::path::Path;

use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::registration::RegistrationBenchReport;
use super::sweepplot::{write_sweep, Panel};

const RATE_COLOR: RGBColor = RGBColor(31, 119, 180);
const CPU_COLOR: RGBColor = RGBColor(255, 127, 14);
const FLOOR_COLOR: RGBColor = RGBColor(200, 0, 0);

/// Writes the chart of `report` to `path`.
pub(crate) fn write_svg(path: &Path, report: &RegistrationBenchReport) -> Result<(), String> {
    let n = report.cases.len().max(1);
    let width = i32::try_from(n).unwrap_or(i32::MAX / 100) * 100;
    let centers: Vec<i32> = (0..width / 100).map(|i| i * 100 + 50).collect();
    let names: Vec<String> = report.cases.iter().map(|c| c.case.clone()).collect();
    let label_of = |x: &i32| {
        usize::try_from(x / 100)
            .ok()
            .and_then(|i| names.get(i).cloned())
            .unwrap_or_default()
    };
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let w = u32::try_from(n).unwrap_or(u32::MAX / 400) * 2 * 130 + 300;
    let root = SVGBackend::new(path, (w, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled(
            &format!(
                "steer5g registration + de-registration, {} UEs, K={}",
                report.settings.ues, report.settings.concurrency
            ),
            ("sans-serif", 20),
        )
        .map_err(|e| err(&e))?;
    let (left, right) = root.split_horizontally(w / 2);
    let above =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));

    // Registrations per second.
    let ymax = report
        .cases
        .iter()
        .map(|c| c.registrations_per_s)
        .fold(1.0f64, f64::max)
        * 1.2;
    let mut chart = ChartBuilder::on(&left)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d((0..width).with_key_points(centers.clone()), 0f64..ymax)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_max_light_lines(1)
        .x_labels(n)
        .x_label_formatter(&label_of)
        .y_desc("registrations per second")
        .draw()
        .map_err(|e| err(&e))?;
    chart
        .draw_series(report.cases.iter().enumerate().map(|(i, c)| {
            let x = i as i32 * 100;
            Rectangle::new(
                [(x + 20, 0.0), (x + 80, c.registrations_per_s)],
                RATE_COLOR.filled(),
            )
        }))
        .map_err(|e| err(&e))?;
    chart
        .draw_series(report.cases.iter().enumerate().map(|(i, c)| {
            Text::new(
                format!("{:.0}", c.registrations_per_s),
                (i as i32 * 100 + 50, c.registrations_per_s * 1.02),
                above.clone(),
            )
        }))
        .map_err(|e| err(&e))?;

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
    let mut chart = ChartBuilder::on(&right)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d((0..width).with_key_points(centers), 0f64..ymax)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_max_light_lines(1)
        .x_labels(n)
        .x_label_formatter(&label_of)
        .y_desc("core CPU per registration (µs)")
        .draw()
        .map_err(|e| err(&e))?;
    chart
        .draw_series(report.cases.iter().enumerate().map(|(i, c)| {
            let x = i as i32 * 100;
            Rectangle::new(
                [(x + 20, 0.0), (x + 80, c.core_cpu_us_per_registration)],
                CPU_COLOR.filled(),
            )
        }))
        .map_err(|e| err(&e))?
        .label("core CPU")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], CPU_COLOR.filled()));
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
        .map_err(|e| err(&e))?
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
        .map_err(|e| err(&e))?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
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
