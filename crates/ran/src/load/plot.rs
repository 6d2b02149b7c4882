//! A traffic report's text lines and its latency CDF as SVG ([`write_cdf_svg`]) and CSV
//! ([`write_cdf_csv`]): what `steer5g ran --traffic --out` writes and the demo prints.

use std::path::Path;

use plotters::prelude::*;

use crate::userplane::traffic::TrafficReport;

/// The text lines of a traffic report, for the terminal report.
pub fn report_lines(r: &TrafficReport) -> Vec<String> {
    r.lines()
}

/// Writes the latency CDFs of `runs` as CSV: `run,latency_us,fraction`, one row per point.
pub fn write_cdf_csv(path: &Path, runs: &[(&str, &TrafficReport)]) -> std::io::Result<()> {
    let mut out = String::from("run,latency_us,fraction\n");
    for (label, r) in runs {
        for p in &r.cdf {
            out.push_str(&format!("{label},{},{:.6}\n", p.latency_us, p.fraction));
        }
    }
    std::fs::write(path, out)
}

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
];

/// Writes the latency CDFs of `runs` (label, report) to `path` as SVG: round trip in µs
/// across, share of replies up.
pub fn write_cdf_svg(path: &Path, runs: &[(&str, &TrafficReport)]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let xmax = runs
        .iter()
        .filter_map(|(_, r)| r.cdf.last().map(|p| p.latency_us))
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.05;
    let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "UE round-trip latency through the UPF (CDF)",
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..xmax, 0f64..1.0)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("round trip (µs)")
        .y_desc("share of replies")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (label, r)) in runs.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<(f64, f64)> = r
            .cdf
            .iter()
            .map(|p| (p.latency_us as f64, p.fraction))
            .collect();
        let name = match &r.latency {
            Some(l) => format!("{label}: p50 {} µs, p99 {} µs", l.p50_us, l.p99_us),
            None => format!("{label}: no reply"),
        };
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::userplane::traffic::{CdfPoint, LatencySummary};

    fn report() -> TrafficReport {
        TrafficReport {
            kind: "udp",
            sessions: 2,
            packet_size: 128,
            wire_size: 172,
            target_pps: 100,
            sent: 10,
            received: 9,
            lost: 1,
            loss_ratio: 0.1,
            duplicates: 0,
            bad: 0,
            send_secs: 0.1,
            total_secs: 1.1,
            achieved_pps: 100.0,
            inner_gbps: 0.0,
            wire_gbps: 0.0,
            latency: Some(LatencySummary {
                min_us: 10,
                p50_us: 20,
                p90_us: 30,
                p99_us: 40,
                p999_us: 40,
                max_us: 40,
                mean_us: 22.0,
            }),
            cdf: vec![
                CdfPoint {
                    latency_us: 10,
                    fraction: 0.2,
                },
                CdfPoint {
                    latency_us: 40,
                    fraction: 1.0,
                },
            ],
        }
    }

    #[test]
    fn the_cdf_svg_has_one_curve_per_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cdf.svg");
        let (a, b) = (
            report(),
            TrafficReport {
                latency: None,
                cdf: Vec::new(),
                ..report()
            },
        );
        write_cdf_svg(&path, &[("udp", &a), ("icmp", &b)]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("udp: p50 20 µs, p99 40 µs"));
        assert!(svg.contains("icmp: no reply"));
        assert!(svg.contains("<polyline"));
        let csv_path = dir.path().join("cdf.csv");
        write_cdf_csv(&csv_path, &[("udp", &a), ("icmp", &b)]).unwrap();
        let csv = std::fs::read_to_string(&csv_path).unwrap();
        assert_eq!(
            csv,
            "run,latency_us,fraction\nudp,10,0.200000\nudp,40,1.000000\n"
        );
    }

    #[test]
    fn report_lines_say_loss_and_latency() {
        let lines = report_lines(&report());
        assert!(
            lines.iter().any(|l| l.contains("lost 1 (10.000%)")),
            "{lines:?}"
        );
        assert!(lines.iter().any(|l| l.contains("p50 20")), "{lines:?}");
    }
}
