//! lockecho.svg: echoed requests per second against the lock share, sharded and locked,
//! with the crossover share marked.
//!
//! The SVG backend writes text as `<text>` elements, so no font library is needed.

use std::path::Path;

use plotters::prelude::*;

use super::server::LockedRx;
use super::{Crossover, SweepReport};
use crate::plot::{finish, line, svg_err, svg_root};

const SHARDED_COLOR: RGBColor = RGBColor(31, 119, 180);
const LOCKED_COLOR: RGBColor = RGBColor(120, 120, 120);
const CROSS_COLOR: RGBColor = RGBColor(200, 0, 0);

/// Writes the chart of `report` to `path`.
pub(crate) fn write_svg(path: &Path, report: &SweepReport) -> Result<(), String> {
    let mut runs: Vec<(f64, f64, f64)> = report
        .runs
        .iter()
        .map(|r| (r.lock_share, r.sharded_rps, r.locked_rps))
        .collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let xmax = runs.iter().map(|r| r.0).fold(0.05f64, f64::max) * 1.05;
    let ymax = runs.iter().map(|r| r.1.max(r.2)).fold(1.0f64, f64::max) * 1.15;
    let root = svg_root(path, (760, 480))?;
    let caption = format!(
        "echo, {} workers, {} us {:?} work/request: sharded vs locked",
        report.workers, report.settings.work_us, report.settings.variant
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(svg_err)?;
    chart
        .configure_mesh()
        .x_desc("share of the work under the lock")
        .y_desc("echoed requests per second")
        .y_label_formatter(&|y| format!("{:.0}k", y / 1000.0))
        .draw()
        .map_err(svg_err)?;
    let locked_name = match report.settings.locked_rx {
        LockedRx::Shared => "locked (one shared socket, one mutex)",
        LockedRx::Hash => "locked (kernel flow hash, one mutex)",
    };
    for (name, color, pick) in [
        ("sharded (steered, no lock)", SHARDED_COLOR, 1usize),
        (locked_name, LOCKED_COLOR, 2usize),
    ] {
        let pts: Vec<(f64, f64)> = runs
            .iter()
            .map(|r| (r.0, if pick == 1 { r.1 } else { r.2 }))
            .collect();
        line(&mut chart, pts.clone(), color, 2, name, 14)?;
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))
            .map_err(svg_err)?;
    }
    let cross = match report.crossover {
        Crossover::AtOrBelow(f) => Some((f, format!("sharded wins from share {f}"))),
        Crossover::Interpolated(f) => Some((f, format!("crossover {f:.3}"))),
        Crossover::NotReached => None,
    };
    if let Some((f, text)) = cross {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(f, 0.0), (f, ymax * 0.92)],
                CROSS_COLOR.stroke_width(2),
            )))
            .map_err(svg_err)?
            .label("crossover")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], CROSS_COLOR));
        chart
            .draw_series(std::iter::once(Text::new(
                text,
                (f, ymax * 0.95),
                ("sans-serif", 14).into_font().color(&CROSS_COLOR),
            )))
            .map_err(svg_err)?;
    }
    finish(&mut chart, &root, SeriesLabelPosition::LowerLeft)
}
