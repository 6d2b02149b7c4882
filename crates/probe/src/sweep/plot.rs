//! The sweep's plots, reference 004's figures redone: time per stage against offered load,
//! packets read and dropped (and where) against offered load, and NAPI batching.

use std::path::Path;

use plotters::prelude::*;

use super::{condition_name, Condition, Step, SweepReport};
use crate::plot::{err, COLORS};

/// One line: its legend and its points.
pub type Series = (String, Vec<(f64, f64)>);

/// Writes sweep-stages.svg, sweep-delivery.svg and sweep-napi.svg into `dir`.
pub fn write_plots(dir: &Path, r: &SweepReport) -> Result<(), String> {
    let mut stage_series: Vec<Series> = Vec::new();
    let mut delivery: Vec<Series> = Vec::new();
    let mut napi: Vec<Series> = Vec::new();
    for c in [Condition::Idle, Condition::Loaded] {
        let steps: Vec<&Step> = r.steps.iter().filter(|s| s.condition == c).collect();
        if steps.is_empty() {
            continue;
        }
        let cn = condition_name(c);
        let per = |f: &dyn Fn(&Step) -> f64| -> Vec<(f64, f64)> {
            steps
                .iter()
                .map(|s| (s.offered_pps.max(1.0), f(s)))
                .collect()
        };
        for name in [
            "netif_rx",
            "netif_receive_skb",
            "sched_wakeup",
            "sys_recvfrom",
        ] {
            stage_series.push((
                format!("{name} ({cn})"),
                per(&|s| {
                    s.stages
                        .iter()
                        .find(|st| st.name == name)
                        .map_or(0.0, |st| st.mean_ns)
                }),
            ));
        }
        stage_series.push((
            format!("softirq per packet ({cn})"),
            per(&|s| s.softirq_ns_per_packet),
        ));
        stage_series.push((
            format!("NAPI poll per packet ({cn})"),
            per(&|s| s.poll_ns_per_packet),
        ));
        delivery.push((format!("read ({cn})"), per(&|s| s.delivered_pps)));
        let mut reasons: Vec<&String> = steps.iter().flat_map(|s| s.dropped.keys()).collect();
        reasons.sort();
        reasons.dedup();
        for reason in reasons {
            delivery.push((
                format!("dropped: {reason} ({cn})"),
                per(&|s| {
                    s.dropped.get(reason).copied().unwrap_or(0) as f64
                        / (s.sent as f64 / s.offered_pps.max(1e-9)).max(1e-9)
                }),
            ));
        }
        napi.push((
            format!("packets per poll ({cn})"),
            per(&|s| s.packets_per_poll),
        ));
    }
    chart(
        &dir.join("sweep-stages.svg"),
        "ns per event against offered load",
        "offered datagrams/s (log)",
        "ns (log)",
        &stage_series,
    )?;
    chart(
        &dir.join("sweep-delivery.svg"),
        "datagrams read and dropped per second against offered load",
        "offered datagrams/s (log)",
        "datagrams/s (log)",
        &delivery,
    )?;
    chart(
        &dir.join("sweep-napi.svg"),
        "NAPI batching against offered load",
        "offered datagrams/s (log)",
        "packets per poll (log)",
        &napi,
    )
}

/// A chart with both axes logarithmic, one line per series.
pub fn chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    y: &str,
    series: &[Series],
) -> Result<(), String> {
    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x_lo, mut x_hi, mut y_hi) = (f64::INFINITY, 1.0f64, 1.0f64);
    for &(x, v) in pts {
        x_lo = x_lo.min(x);
        x_hi = x_hi.max(x);
        y_hi = y_hi.max(v);
    }
    let x_lo = if x_lo.is_finite() { x_lo.max(1.0) } else { 1.0 };
    // Both axes logarithmic: rates span decades, and so do times and batch sizes.
    let mut c = ChartBuilder::on(&root)
        .caption(format!("probe sweep: {title}"), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (x_lo * 0.8..x_hi * 1.25).log_scale(),
            (0.5f64..y_hi * 2.0).log_scale(),
        )
        .map_err(err)?;
    c.configure_mesh()
        .x_desc(x_desc)
        .y_desc(y)
        .draw()
        .map_err(err)?;
    for (i, (name, p)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let p: Vec<(f64, f64)> = p.iter().map(|&(x, v)| (x, v.max(0.5))).collect();
        c.draw_series(LineSeries::new(p, color.stroke_width(2)))
            .map_err(err)?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}
