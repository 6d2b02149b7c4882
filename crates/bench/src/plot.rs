//! sctp.svg: grouped bars, echoed messages per second for SCTP and the plain UDP baseline of
//! each transport and association count, with the ratio written above each group; and the
//! chart pieces every benchmark's SVG shares (white canvas, boxed legend, labelled lines,
//! bars over named slots), so that the charts look alike and each draws only what is its own.
//!
//! The SVG backend writes text as `<text>` elements, so no font library is needed.

use std::path::Path;

use plotters::coord::combinators::{BindKeyPoints, WithKeyPoints};
use plotters::coord::types::{RangedCoordf64, RangedCoordi32};
use plotters::coord::Shift;
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
    let slots = Slots::new(groups.iter().map(|g| g.0.clone()).collect());
    let n = slots.count();
    let ymax = groups.iter().map(|g| g.1.max(g.2)).fold(1.0f64, f64::max) * 1.2;
    let root = svg_root(path, (220 * n as u32 + 200, 480))?;
    let caption = format!(
        "SCTP echo vs plain UDP echo ({}..{} B, window {})",
        report.settings.min_size, report.settings.max_size, report.settings.window
    );
    let mut chart = slots.chart(
        ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(36)
            .y_label_area_size(72),
        ymax,
        "echoed messages per second",
        Some(&|y| format!("{:.0}k", y / 1000.0)),
    )?;
    bars(
        &mut chart,
        groups.iter().map(|g| g.1),
        (12, 38),
        SCTP_COLOR,
        Some("SCTP"),
    )?;
    bars(
        &mut chart,
        groups.iter().map(|g| g.2),
        (50, 38),
        UDP_COLOR,
        Some("plain UDP"),
    )?;
    let above = above(14);
    chart
        .draw_series(groups.iter().enumerate().map(|(i, g)| {
            Text::new(
                format!("SCTP/UDP {:.2}", g.3),
                (i as i32 * 100 + 50, g.1.max(g.2) * 1.03),
                above.clone(),
            )
        }))
        .map_err(svg_err)?;
    finish(&mut chart, &root, SeriesLabelPosition::UpperRight)
}

/// A chart error as the text the benchmarks report.
pub(crate) fn svg_err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A white `size` canvas writing to `path`.
pub(crate) fn svg_root(
    path: &Path,
    size: (u32, u32),
) -> Result<DrawingArea<SVGBackend<'_>, Shift>, String> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(svg_err)?;
    Ok(root)
}

/// Text of `size` points centred above the point it is drawn at.
pub(crate) fn above(size: u32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom))
}

/// Draws the boxed legend of `chart` at `at`.
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    at: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(at)
        .draw()
        .map_err(svg_err)
}

/// Draws the legend of `chart` at `at` and writes `root` out: the end of every chart.
pub(crate) fn finish<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    root: &DrawingArea<DB, Shift>,
    at: SeriesLabelPosition,
) -> Result<(), String> {
    legend(chart, at)?;
    root.present().map_err(svg_err)
}

/// Draws `pts` as a line `width` wide in `color`, keyed in the legend as `label` by a
/// stroke `key` long.
pub(crate) fn line<DB, X, Y, C>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    pts: Vec<(X::ValueType, Y::ValueType)>,
    color: C,
    width: u32,
    label: impl Into<String>,
    key: i32,
) -> Result<(), String>
where
    DB: DrawingBackend,
    X: Ranged,
    Y: Ranged,
    X::ValueType: Clone + 'static,
    Y::ValueType: Clone + 'static,
    C: Color + Copy + 'static,
{
    chart
        .draw_series(LineSeries::new(pts, color.stroke_width(width)))
        .map_err(svg_err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + key, y)], color.stroke_width(2)));
    Ok(())
}

/// [`line`] 2 wide with a dot at each measured point: a series of a few measured steps
/// (sizes, rates), where the dots say which points were measured.
pub(crate) fn line_with_points<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    pts: Vec<(f64, f64)>,
    color: RGBColor,
    label: impl Into<String>,
) -> Result<(), String> {
    line(chart, pts.clone(), color, 2, label, 16)?;
    chart
        .draw_series(pts.iter().map(|pt| Circle::new(*pt, 3, color.filled())))
        .map_err(svg_err)?;
    Ok(())
}

/// The x axis of a bar chart: one slot 100 wide per name, each labelled at its middle.
pub(crate) struct Slots {
    names: Vec<String>,
}

/// The coordinates of a chart over [`Slots`].
pub(crate) type SlotChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<WithKeyPoints<RangedCoordi32>, RangedCoordf64>>;

impl Slots {
    pub(crate) fn new(names: Vec<String>) -> Self {
        Slots { names }
    }

    /// Slots drawn: at least one, so that an empty report still makes a chart.
    pub(crate) fn count(&self) -> usize {
        self.names.len().max(1)
    }

    /// A chart on `area` over the slots and 0..`ymax`, its mesh drawn: no vertical lines,
    /// each slot named, `y_desc` on the y axis with values formatted by `y_fmt`.
    pub(crate) fn chart<'a, 'b, DB: DrawingBackend>(
        &self,
        builder: &mut ChartBuilder<'a, 'b, DB>,
        ymax: f64,
        y_desc: &str,
        y_fmt: Option<&dyn Fn(&f64) -> String>,
    ) -> Result<SlotChart<'a, DB>, String> {
        let width = i32::try_from(self.count()).unwrap_or(i32::MAX / 100) * 100;
        let centers: Vec<i32> = (0..width / 100).map(|i| i * 100 + 50).collect();
        let mut chart = builder
            .build_cartesian_2d((0..width).with_key_points(centers), 0f64..ymax)
            .map_err(svg_err)?;
        let label_of = |x: &i32| {
            usize::try_from(x / 100)
                .ok()
                .and_then(|i| self.names.get(i).cloned())
                .unwrap_or_default()
        };
        let mut mesh = chart.configure_mesh();
        mesh.disable_x_mesh()
            .y_max_light_lines(1)
            .x_labels(self.count())
            .x_label_formatter(&label_of)
            .y_desc(y_desc);
        if let Some(f) = y_fmt {
            mesh.y_label_formatter(f);
        }
        mesh.draw().map_err(svg_err)?;
        Ok(chart)
    }
}

/// Draws one bar per value, in slot order, from `left` to `left + width` within its slot,
/// keyed in the legend as `label` when there is one.
pub(crate) fn bars<DB: DrawingBackend>(
    chart: &mut SlotChart<'_, DB>,
    values: impl IntoIterator<Item = f64>,
    (left, width): (i32, i32),
    color: RGBColor,
    label: Option<&str>,
) -> Result<(), String> {
    let drawn = chart
        .draw_series(values.into_iter().enumerate().map(|(i, v)| {
            let x0 = i as i32 * 100 + left;
            Rectangle::new([(x0, 0.0), (x0 + width, v)], color.filled())
        }))
        .map_err(svg_err)?;
    if let Some(label) = label {
        drawn
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    Ok(())
}
