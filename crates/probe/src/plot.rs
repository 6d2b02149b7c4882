//! `stages.svg`: each timed stage's histogram, the share of its events against time per
//! event on a log axis, so that stages a thousand times apart share one picture.

use std::path::Path;

use plotters::prelude::*;

use crate::Report;

/// Line colours, shared with the sweep's plots.
pub(crate) const COLORS: [RGBColor; 8] = [
    BLUE,
    RED,
    GREEN,
    MAGENTA,
    BLACK,
    CYAN,
    RGBColor(255, 140, 0),
    RGBColor(128, 0, 128),
];

pub(crate) fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Writes the histograms of every timed stage that saw events.
pub fn stages_svg(path: &Path, report: &Report) -> Result<(), String> {
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let shown: Vec<_> = report
        .stages
        .iter()
        .filter(|s| s.timed && !s.histogram.is_empty())
        .collect();
    let low = shown
        .iter()
        .filter_map(|s| s.histogram.first().map(|b| b[0]))
        .min()
        .unwrap_or(1)
        .max(1) as f64;
    let high = shown
        .iter()
        .filter_map(|s| s.histogram.last().map(|b| b[1]))
        .max()
        .unwrap_or(1_000)
        .max(10) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("receive path stages, {:.1} s", report.duration_s),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((low..high * 1.5).log_scale(), 0f64..1f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("ns per event (log)")
        .y_desc("share of the stage's events")
        .draw()
        .map_err(err)?;
    for (i, s) in shown.iter().enumerate() {
        let total: u64 = s.histogram.iter().map(|b| b[2]).sum();
        let pts: Vec<(f64, f64)> = s
            .histogram
            .iter()
            .map(|b| {
                let mid = (b[0] + (b[1] - b[0]) / 2).max(1) as f64;
                (mid, b[2] as f64 / total.max(1) as f64)
            })
            .collect();
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(err)?
            .label(format!("{} ({})", s.name, s.count))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}
