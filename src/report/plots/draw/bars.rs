//! Mean cost per unit per variant as bars with 95% CI error bars, naming the variants left out.

use super::super::{color, e, DrawResult, ReportModel, SIZE};
use plotters::coord::Shift;
use plotters::prelude::*;

pub(in crate::report::plots) fn draw_cost_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    model: &ReportModel,
    title: &str,
) -> DrawResult {
    let bars: Vec<(&str, f64, f64, f64)> = model
        .variants
        .iter()
        .filter_map(|v| {
            let m = v.metric("cost")?;
            let (lo, hi) = m.ci.map_or((m.mean, m.mean), |c| (c.lo, c.hi));
            Some((v.variant.as_str(), m.mean, lo, hi))
        })
        .collect();
    let missing: Vec<&str> = model
        .variants
        .iter()
        .filter(|v| v.metric("cost").is_none())
        .map(|v| v.variant.as_str())
        .collect();
    let n = bars.len() as u32;
    let ymax = bars
        .iter()
        .map(|b| b.3.max(b.1))
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.15;
    let names: Vec<String> = bars.iter().map(|b| b.0.to_string()).collect();
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d((0u32..n.saturating_sub(1)).into_segmented(), 0f64..ymax)
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n as usize)
        .x_label_formatter(&move |v| match v {
            SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc("variant")
        .y_desc("mean cost per unit (USD)")
        .draw()
        .map_err(e)?;
    for (i, &(_, mean, lo, hi)) in bars.iter().enumerate() {
        let i = i as u32;
        let c = color(i as usize);
        let mut bar = Rectangle::new(
            [
                (SegmentValue::Exact(i), 0.0),
                (SegmentValue::Exact(i + 1), mean),
            ],
            c.mix(0.7).filled(),
        );
        bar.set_margin(0, 0, 20, 20);
        chart.draw_series(std::iter::once(bar)).map_err(e)?;
        chart
            .draw_series(std::iter::once(ErrorBar::new_vertical(
                SegmentValue::CenterOf(i),
                lo,
                mean,
                hi,
                BLACK.stroke_width(2),
                16,
            )))
            .map_err(e)?;
    }
    if !missing.is_empty() {
        root.draw(&Text::new(
            format!(
                "not shown (no unit with a known price): {}",
                missing.join(", ")
            ),
            (90, SIZE.1 as i32 - 16),
            ("sans-serif", 13),
        ))
        .map_err(e)?;
    }
    Ok(())
}
