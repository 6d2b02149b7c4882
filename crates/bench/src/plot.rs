//! sctp.svg: grouped bars, echoed messages per second for SCTP and the plain UDP baseline of
//! each transport and association count, with the ratio written above each group.
//!
//! The SVG backend writes text as `<text>` elements, so no font library is needed.

use std::path::Path;

use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::sctp::SctpBenchReport;

const SCTP_COLOR: RGBColor = RGBColor(31, 119, 180);
const UDP_COLOR: RGBColor = RGBColor(170, 170, 170);

/// Writes the chart of `report` to `path`.
pub(crate) fn write_svg(path: &Path, report: &SctpBenchReport) -> Result<(), String> {
    let groups: Vec<(String, f64, f64, f64)> = report
        .comparisons
        .iter()
        .map(|c| {
            let name = format!(
                "{} x{} assoc{}",
                c.case,
                c.assocs,
                if c.assocs == 1 { "" } else { "s" }
            );
            (name, c.sctp_msgs_per_s, c.udp_msgs_per_s, c.ratio)
        })
        .collect();
    let n = groups.len().max(1);
    let ymax = groups.iter().map(|g| g.1.max(g.2)).fold(1.0f64, f64::max) * 1.2;
    // Integer x coordinates (each group 100 wide) so that the group names can sit at the
    // key points in the middle of each group.
    let width = i32::try_from(n).unwrap_or(i32::MAX / 100) * 100;
    let centers: Vec<i32> = (0..width / 100).map(|i| i * 100 + 50).collect();
    let names: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();

    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = SVGBackend::new(path, (220 * n as u32 + 200, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let caption = format!(
        "SCTP echo vs plain UDP echo ({}..{} B, window {})",
        report.settings.min_size, report.settings.max_size, report.settings.window
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(36)
        .y_label_area_size(72)
        .build_cartesian_2d((0..width).with_key_points(centers), 0f64..ymax)
        .map_err(|e| err(&e))?;
    let label_of = |x: &i32| {
        usize::try_from(x / 100)
            .ok()
            .and_then(|i| names.get(i).cloned())
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_max_light_lines(1)
        .x_labels(n)
        .x_label_formatter(&label_of)
        .y_desc("echoed messages per second")
        .y_label_formatter(&|y| format!("{:.0}k", y / 1000.0))
        .draw()
        .map_err(|e| err(&e))?;

    let bar = |i: usize, left: bool, v: f64| {
        let x0 = i as i32 * 100 + if left { 12 } else { 50 };
        [(x0, 0.0), (x0 + 38, v)]
    };
    chart
        .draw_series(
            groups
                .iter()
                .enumerate()
                .map(|(i, g)| Rectangle::new(bar(i, true, g.1), SCTP_COLOR.filled())),
        )
        .map_err(|e| err(&e))?
        .label("SCTP")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], SCTP_COLOR.filled()));
    chart
        .draw_series(
            groups
                .iter()
                .enumerate()
                .map(|(i, g)| Rectangle::new(bar(i, false, g.2), UDP_COLOR.filled())),
        )
        .map_err(|e| err(&e))?
        .label("plain UDP")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], UDP_COLOR.filled()));
    let above =
        TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    chart
        .draw_series(groups.iter().enumerate().map(|(i, g)| {
            Text::new(
                format!("SCTP/UDP {:.2}", g.3),
                (i as i32 * 100 + 50, g.1.max(g.2) * 1.03),
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
