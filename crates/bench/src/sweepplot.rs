//! Line charts against the worker count, side by side: one panel per figure, one line per
//! series (a state mode, an SBI mode...), shared by the benches that sweep `--workers`.

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Line colours of the sweep's series, in turn.
const SERIES_COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// One point: its series, its worker count and its value.
pub(crate) type Point = (String, u16, f64);

/// One panel: the y axis description and its points.
pub(crate) struct Panel {
    pub(crate) y_desc: String,
    pub(crate) points: Vec<Point>,
}

/// Writes `panels` side by side under `title` to `path`; series keep the order in which
/// they first appear, and the first panel carries the legend.
pub(crate) fn write_sweep(path: &Path, title: &str, panels: &[Panel]) -> Result<(), String> {
    let wmax = panels
        .iter()
        .flat_map(|p| p.points.iter().map(|x| x.1))
        .max()
        .unwrap_or(1)
        .max(2);
    let xy: Vec<XyPanel> = panels
        .iter()
        .map(|p| XyPanel {
            y_desc: p.y_desc.clone(),
            points: p
                .points
                .iter()
                .map(|(s, w, y)| (s.clone(), f64::from(*w), *y))
                .collect(),
        })
        .collect();
    write_panels(path, title, "workers", &xy, XAxis::Workers(wmax))
}

/// One point of [`write_xy`]: its series, x and y.
pub(crate) type XyPoint = (String, f64, f64);

/// One panel of [`write_xy`].
pub(crate) struct XyPanel {
    pub(crate) y_desc: String,
    pub(crate) points: Vec<XyPoint>,
}

/// [`write_sweep`] against any x (an offered rate...): `panels` side by side under
/// `title`, x described by `x_desc`; series keep the order in which they first appear, and
/// the first panel carries the legend.
pub(crate) fn write_xy(
    path: &Path,
    title: &str,
    x_desc: &str,
    panels: &[XyPanel],
) -> Result<(), String> {
    write_panels(path, title, x_desc, panels, XAxis::Continuous)
}

/// The x axis of a chart.
#[derive(Debug, Clone, Copy)]
enum XAxis {
    /// Worker counts 1..=max, one label each, with room on both sides.
    Workers(u16),
    /// From 0 to a tenth beyond the largest x, labels where plotters puts them.
    Continuous,
}

fn write_panels(
    path: &Path,
    title: &str,
    x_desc: &str,
    panels: &[XyPanel],
    axis: XAxis,
) -> Result<(), String> {
    let series = series_of(
        panels
            .iter()
            .flat_map(|p| p.points.iter().map(|x| x.0.as_str())),
    );
    let xmax = match axis {
        XAxis::Workers(w) => f64::from(w) + 1.0,
        XAxis::Continuous => {
            panels
                .iter()
                .flat_map(|p| p.points.iter().map(|x| x.1))
                .fold(0.0f64, f64::max)
                .max(1e-3)
                * 1.1
        }
    };
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let (root, areas) = frame(path, title, panels.len())?;
    for (p, (panel, area)) in panels.iter().zip(areas.iter()).enumerate() {
        let ymax = y_top(panel.points.iter().map(|x| x.2));
        let mut chart = ChartBuilder::on(area)
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)
            .map_err(|e| err(&e))?;
        let mut mesh = chart.configure_mesh();
        // Whole worker counts only: the axis runs from 0 to one past the last.
        let worker_label = |x: &f64| match axis {
            XAxis::Workers(w) if x.fract() == 0.0 && *x >= 1.0 && *x <= f64::from(w) => {
                format!("{x:.0}")
            }
            _ => String::new(),
        };
        if let XAxis::Workers(w) = axis {
            mesh.x_labels(usize::from(w) + 2)
                .x_label_formatter(&worker_label);
        }
        mesh.x_desc(x_desc)
            .y_desc(panel.y_desc.as_str())
            .draw()
            .map_err(|e| err(&e))?;
        draw_lines(
            &mut chart,
            &series,
            |name| {
                let mut pts: Vec<(f64, f64)> = panel
                    .points
                    .iter()
                    .filter(|x| x.0 == name)
                    .map(|x| (x.1, x.2))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                pts
            },
            p == 0,
        )?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// The series named by `names`, each once, in the order in which they first appear.
fn series_of<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut series: Vec<&str> = Vec::new();
    for n in names {
        if !series.contains(&n) {
            series.push(n);
        }
    }
    series
}

/// A drawing area of an SVG chart.
type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The SVG at `path` titled `title`, and its `panels` areas of 500×500 side by side.
fn frame<'a>(
    path: &'a Path,
    title: &str,
    panels: usize,
) -> Result<(Area<'a>, Vec<Area<'a>>), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let n = u32::try_from(panels.max(1)).unwrap_or(1);
    let root = SVGBackend::new(path, (500 * n, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled(title, ("sans-serif", 20))
        .map_err(|e| err(&e))?;
    let areas = root.split_evenly((1, panels.max(1)));
    Ok((root, areas))
}

/// The top of a panel's y axis: its highest value (at least 0.001) with a fifth above it.
fn y_top(ys: impl Iterator<Item = f64>) -> f64 {
    ys.fold(0.0f64, f64::max).max(1e-3) * 1.2
}

/// One line with a dot at each point for every series of `series`, in the series' colours,
/// the points of each from `points_of`; with `legend`, the series are named in a legend at
/// the upper left.
fn draw_lines<'a, X>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, RangedCoordf64>>,
    series: &[&str],
    points_of: impl Fn(&str) -> Vec<(X::ValueType, f64)>,
    legend: bool,
) -> Result<(), String>
where
    X: Ranged,
    X::ValueType: Clone + 'static,
{
    let err = |e: &dyn std::fmt::Display| e.to_string();
    for (i, name) in series.iter().enumerate() {
        let color = SERIES_COLORS
            .get(i % SERIES_COLORS.len())
            .copied()
            .unwrap_or(BLACK);
        let pts = points_of(name);
        let drawn = chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?;
        if legend {
            drawn.label(name.to_string()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        }
        chart
            .draw_series(
                pts.into_iter()
                    .map(|(x, y)| Circle::new((x, y), 3, color.filled())),
            )
            .map_err(|e| err(&e))?;
    }
    if legend {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| err(&e))?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_sweep_labels_whole_worker_counts_and_names_its_series() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sweep.svg");
        let points = |s: &str| {
            (1..=3u16)
                .map(|w| (s.to_owned(), w, f64::from(w) * 10.0))
                .collect::<Vec<_>>()
        };
        let panel = Panel {
            y_desc: "registrations/s".to_owned(),
            points: [points("sharded"), points("locked")].concat(),
        };
        write_sweep(&path, "sweep", &[panel]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        // plotters writes each text on a line of its own.
        let drawn = |t: &str| svg.contains(&format!("\n{t}\n</text>"));
        for t in [
            "1",
            "2",
            "3",
            "sharded",
            "locked",
            "workers",
            "registrations/s",
        ] {
            assert!(drawn(t), "{t} missing");
        }
        // No fractional or out-of-range worker labels.
        for t in ["0", "4", "0.5", "1.5"] {
            assert!(!drawn(t), "{t} drawn");
        }
    }
}
