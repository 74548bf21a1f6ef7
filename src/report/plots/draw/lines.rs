//! Line plots: context tokens per model call of one trace (one line per variant, compaction
//! markers, the uncompressed reference) and mean scores by folds survived.

use super::super::data::FoldCurves;
use super::super::{color, e, DrawResult, ReportModel, SIZE};
use crate::record::Sample;
use plotters::coord::Shift;
use plotters::prelude::*;

pub(in crate::report::plots) fn draw_context<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    model: &ReportModel,
    trace_id: &str,
    title: &str,
) -> DrawResult {
    // First successful sample with a timeline per variant (the replay is the same for every
    // eval sample of a trace × variant).
    let mut lines: Vec<(&str, &Sample)> = Vec::new();
    for v in &model.variants {
        if let Some(s) = model.samples.iter().find(|s| {
            s.variant == v.variant
                && s.trace_id == trace_id
                && !s.timeline.is_empty()
                && s.error.is_none()
        }) {
            lines.push((&v.variant, s));
        }
    }
    let reference: Option<Vec<(f64, f64)>> = lines.iter().find_map(|(_, s)| {
        s.timeline
            .iter()
            .enumerate()
            .map(|(i, p)| p.reference_tokens.map(|r| (i as f64 + 1.0, r as f64)))
            .collect()
    });
    let calls = lines
        .iter()
        .map(|(_, s)| s.timeline.len())
        .max()
        .unwrap_or(1)
        .max(2);
    let xmax = calls as f64;
    let ymax = lines
        .iter()
        .flat_map(|(_, s)| {
            s.timeline
                .iter()
                .map(|p| p.tokens.max(p.reference_tokens.unwrap_or(0)))
        })
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.08;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(1f64..xmax, 0f64..ymax)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("model call")
        .y_desc("context tokens")
        .x_labels(calls.min(12))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(e)?;
    if let Some(r) = reference {
        chart
            .draw_series(DashedLineSeries::new(
                r,
                6,
                4,
                RGBColor(150, 150, 150).stroke_width(1),
            ))
            .map_err(e)?
            .label("no compression")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RGBColor(150, 150, 150)));
    }
    // Lines that coincide stay visible: earlier variants are drawn wider, so a later one on
    // top leaves the earlier one as an outline; the legend names the overlaps.
    let n_lines = lines.len() as u32;
    for (i, (variant, s)) in lines.iter().enumerate() {
        let c = color(i);
        let width = 2 + 3 * (n_lines - 1 - i as u32);
        let pts: Vec<(f64, f64)> = s
            .timeline
            .iter()
            .enumerate()
            .map(|(k, p)| (k as f64 + 1.0, p.tokens as f64))
            .collect();
        let same_as = lines[..i]
            .iter()
            .find(|(_, o)| overlaps(o, s))
            .map(|(name, _)| *name);
        let label = match same_as {
            Some(o) => format!("{variant} (≈ {o}, drawn over it)"),
            None => variant.to_string(),
        };
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(width)))
            .map_err(e)?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(width.min(6)))
            });
        let marks = s
            .timeline
            .iter()
            .zip(&pts)
            .filter(|(p, _)| !p.events.is_empty())
            .map(|(_, &xy)| TriangleMarker::new(xy, 7, c.filled()));
        chart.draw_series(marks).map_err(e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.draw(&Text::new(
        "▲ = compaction event (evicted, cleared, summarized, …)",
        (90, SIZE.1 as i32 - 16),
        ("sans-serif", 13),
    ))
    .map_err(e)?;
    Ok(())
}

/// Whether two timelines are the same length and within 3% of each other at every call (drawn
/// one over the other, they would look like one line).
fn overlaps(a: &Sample, b: &Sample) -> bool {
    a.timeline.len() == b.timeline.len()
        && a.timeline.iter().zip(&b.timeline).all(|(x, y)| {
            let (x, y) = (x.tokens as f64, y.tokens as f64);
            (x - y).abs() <= 0.03 * x.max(y).max(1.0)
        })
}

/// Mean main score by folds survived, one line per variant (distinct colour, marker shape and
/// dash, so lines that coincide stay visible), n per point in the legend note.
pub(in crate::report::plots) fn draw_folds<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    f: &FoldCurves,
    title: &str,
) -> DrawResult {
    let max_fold = f
        .curves
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.0))
        .max()
        .unwrap_or(1);
    let min_fold = f
        .curves
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.0))
        .min()
        .unwrap_or(0);
    let ymax = f
        .curves
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
        .fold(if f.eval == "drift" { 5.0 } else { 1.0 }, f64::max);
    let x0 = f64::from(min_fold) - 0.3;
    let x1 = f64::from(max_fold.max(min_fold + 1)) + 0.3;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..ymax * 1.08)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("folds survived (summaries before the question)")
        .y_desc(f.y_desc.as_str())
        .x_labels((max_fold - min_fold + 1) as usize + 1)
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-6 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(e)?;
    for (i, (variant, pts)) in f.curves.iter().enumerate() {
        let c = color(i);
        let xy: Vec<(f64, f64)> = pts.iter().map(|p| (f64::from(p.0), p.1)).collect();
        let dash = 4 + 4 * (i as u32 % 3);
        if i == 0 {
            chart
                .draw_series(LineSeries::new(xy.clone(), c.stroke_width(3)))
                .map_err(e)?;
        } else {
            chart
                .draw_series(DashedLineSeries::new(
                    xy.clone(),
                    dash,
                    4,
                    c.stroke_width(2),
                ))
                .map_err(e)?;
        }
        let n: usize = pts.iter().map(|p| p.2).sum();
        let label = format!("{variant} (n={n})");
        match i % 3 {
            0 => chart
                .draw_series(xy.iter().map(|&p| Circle::new(p, 6, c.filled())))
                .map_err(e)?
                .label(label)
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, c.filled())),
            1 => chart
                .draw_series(xy.iter().map(|&p| TriangleMarker::new(p, 8, c.filled())))
                .map_err(e)?
                .label(label)
                .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, c.filled())),
            _ => chart
                .draw_series(xy.iter().map(|&p| Cross::new(p, 6, c.stroke_width(2))))
                .map_err(e)?
                .label(label)
                .legend(move |(x, y)| Cross::new((x + 10, y), 5, c.stroke_width(2))),
        };
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    Ok(())
}
