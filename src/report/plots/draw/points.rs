//! The cost vs needle recall scatter: one labelled point per variant (labels of nearby points
//! stacked with leader lines, never overprinted) and the Pareto front ringed.

use super::super::{color, e, DrawResult, ReportModel};
use super::draw_legend;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Vertical pixel offsets of point labels so that labels of nearby points do not overprint:
/// a point whose label would land within `near` (in axis fractions) of an earlier one moves
/// one line up per such neighbour.
pub fn label_offsets(points: &[(f64, f64)], span: (f64, f64), near: f64) -> Vec<i32> {
    let mut out = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        let close = points[..i]
            .iter()
            .filter(|q| {
                ((p.0 - q.0) / span.0).abs() < near * 2.5 && ((p.1 - q.1) / span.1).abs() < near
            })
            .count();
        out.push(-18 - 17 * close as i32);
    }
    out
}

/// Indexes of the points on the Pareto front (minimal x, maximal y), sorted by x.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..points.len()).collect();
    idx.sort_by(|&a, &b| {
        points[a]
            .0
            .total_cmp(&points[b].0)
            .then(points[b].1.total_cmp(&points[a].1))
    });
    let mut front = Vec::new();
    let mut best = f64::NEG_INFINITY;
    for i in idx {
        if points[i].1 > best {
            best = points[i].1;
            front.push(i);
        }
    }
    front
}

pub(in crate::report::plots) fn draw_cost_recall<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    model: &ReportModel,
    title: &str,
) -> DrawResult {
    let with_recall: Vec<_> = model
        .variants
        .iter()
        .filter_map(|v| v.metric("needle.recall").map(|r| (v, r.mean)))
        .collect();
    let priced = with_recall.iter().all(|(v, _)| v.metric("cost").is_some());
    let (x_metric, x_desc) = if priced {
        ("cost", "mean cost per unit (USD)")
    } else {
        ("tokens", "mean tokens per unit (a price is unknown)")
    };
    let pts: Vec<(f64, f64)> = with_recall
        .iter()
        .map(|(v, r)| (v.metric(x_metric).map_or(0.0, |m| m.mean), *r))
        .collect();
    let xmax = pts.iter().map(|p| p.0).fold(0.0, f64::max).max(1e-9) * 1.15;
    // Zoom the recall axis onto the points (a 0–1 axis squeezes them against its top).
    let ymin_pt = pts.iter().map(|p| p.1).fold(1.0, f64::min);
    let ymin = ((ymin_pt - 0.15).max(0.0) * 20.0).floor() / 20.0;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..xmax, ymin..1.05f64)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("needle recall (fraction found)")
        .draw()
        .map_err(e)?;
    let front = pareto_front(&pts);
    let front_pts: Vec<(f64, f64)> = front.iter().map(|&i| pts[i]).collect();
    let front_names: Vec<&str> = front
        .iter()
        .map(|&i| with_recall[i].0.variant.as_str())
        .collect();
    let legend = format!("Pareto front (ringed): {}", front_names.join(", "));
    // The front is a line through its points and a ring around each (one point has no line).
    chart
        .draw_series(LineSeries::new(front_pts.clone(), BLACK.stroke_width(1)))
        .map_err(e)?
        .label(legend.clone())
        .legend(|(x, y)| {
            EmptyElement::at((x + 10, y)) + Circle::new((0, 0), 6, BLACK.stroke_width(2))
        });
    chart
        .draw_series(
            front_pts
                .iter()
                .map(|&p| Circle::new(p, 10, BLACK.stroke_width(2))),
        )
        .map_err(e)?;
    let offsets = label_offsets(&pts, (xmax, 1.05 - ymin), 0.04);
    for (i, ((v, _), &p)) in with_recall.iter().zip(&pts).enumerate() {
        let c = color(i);
        let dy = offsets[i];
        // Labels pushed up get a leader line back to their point.
        let leader = PathElement::new(vec![(0, 0), (8, dy + 8)], c.stroke_width(1));
        let point = EmptyElement::at(p)
            + Circle::new((0, 0), 6, c.filled())
            + leader
            + Text::new(
                v.variant.clone(),
                (9, dy),
                ("sans-serif", 14).into_font().color(&c),
            );
        chart.draw_series(std::iter::once(point)).map_err(e)?;
    }
    let singles: Vec<&[(f64, f64)]> = pts.chunks(1).collect();
    draw_legend(&mut chart, &singles, &[legend])?;
    Ok(())
}
