//! The plots of `bench sbi`: latency percentiles per case, and the rate over the window.

use std::path::Path;

use plotters::prelude::*;

use super::CaseReport;
use crate::plot::{finish, line, svg_root};

const COLORS: [RGBColor; 5] = [BLUE, RED, GREEN, MAGENTA, BLACK];

/// p50/p90/p99/p99.9/max of each case, on a log scale.
pub(super) fn latency(path: &Path, cases: &[CaseReport]) -> Result<(), String> {
    let root = svg_root(path, (800, 500))?;
    let top = cases
        .iter()
        .map(|c| c.latency_us.max)
        .max()
        .unwrap_or(1)
        .max(10) as f64
        * 1.5;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "bench sbi: latency of successful operations",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..4f64, (1f64..top).log_scale())
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_labels(5)
        .x_label_formatter(&|x| {
            ["p50", "p90", "p99", "p99.9", "max"]
                .get(x.round() as usize)
                .copied()
                .unwrap_or("")
                .to_owned()
        })
        .y_desc("µs")
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, c) in cases.iter().enumerate() {
        let l = &c.latency_us;
        let pts: Vec<(f64, f64)> = [l.p50, l.p90, l.p99, l.p999, l.max]
            .iter()
            .enumerate()
            .map(|(x, &v)| (x as f64, v.max(1) as f64))
            .collect();
        let color = COLORS[i % COLORS.len()];
        line(&mut chart, pts, color, 2, format!("K={}", c.streams), 20)?;
    }
    finish(&mut chart, &root, SeriesLabelPosition::UpperLeft)
}

/// Successful operations in each second of the window, per case.
pub(super) fn rate(path: &Path, cases: &[CaseReport]) -> Result<(), String> {
    let root = svg_root(path, (800, 500))?;
    let secs = cases
        .iter()
        .map(|c| c.per_second.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let top = cases
        .iter()
        .flat_map(|c| c.per_second.iter().copied())
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.2;
    let mut chart = ChartBuilder::on(&root)
        .caption("bench sbi: operations per second", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..secs as f64, 0f64..top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("second of the measured window")
        .y_desc("ops/s")
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, c) in cases.iter().enumerate() {
        let pts: Vec<(f64, f64)> = c
            .per_second
            .iter()
            .enumerate()
            .map(|(s, &n)| (s as f64 + 0.5, n as f64))
            .collect();
        let color = COLORS[i % COLORS.len()];
        line(&mut chart, pts, color, 2, format!("K={}", c.streams), 20)?;
    }
    finish(&mut chart, &root, SeriesLabelPosition::LowerRight)
}
