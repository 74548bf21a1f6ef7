//! The cost vs needle recall scatter: one labelled point per variant (each label in the first
//! free place around its point inside the plot, with a leader line; never overprinted; those
//! with no room within a few rows named in the legend) and the Pareto front ringed.

use super::super::{color, e, DrawResult, ReportModel};
use super::{draw_legend_at, legend_box, legend_position};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width in pixels a label of `chars` characters takes in the plot's 14 px sans-serif (a
/// generous average, so neighbours never touch).
pub fn label_width(chars: usize) -> i32 {
    i32::try_from(chars)
        .unwrap_or(i32::MAX / 8)
        .saturating_mul(8)
}

/// Height in pixels of a label row.
const LABEL_ROW: i32 = 17;

/// Where each point's label goes, as a pixel offset of its top-left corner from the point:
/// the first of these places that lies inside `area` (left, top, right, bottom in pixels) and
/// clear of the labels placed before, of every point's mark (a square of half-side `reach[i]`
/// around point `i`: its dot, or the ring of a point on the Pareto front) and of the boxes in
/// `avoid` (the legend): right or left of the point, just past its mark, above then below it,
/// then the same one row further out, up to six rows. `None`: no such place (many variants on
/// one spot): that label is left out rather than drawn over another or outside the plot (a
/// sweep of 30 variants at one recall stacked its labels off the top of the image).
pub fn place_labels(
    points: &[(i32, i32)],
    reach: &[i32],
    widths: &[i32],
    avoid: &[(i32, i32, i32, i32)],
    area: (i32, i32, i32, i32),
) -> Vec<Option<(i32, i32)>> {
    const ROWS: i32 = 6;
    let (left, top, right, bottom) = area;
    let marks: Vec<(i32, i32, i32, i32)> = points
        .iter()
        .zip(reach)
        .map(|(&(x, y), &r)| (x - r, y - r, x + r, y + r))
        .chain(avoid.iter().copied())
        .collect();
    let mut placed: Vec<(i32, i32, i32, i32)> = Vec::new();
    let overlaps = |a: (i32, i32, i32, i32), b: (i32, i32, i32, i32)| {
        a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
    };
    points
        .iter()
        .zip(widths)
        .zip(reach)
        .map(|((&(px, py), &w), &r)| {
            let mut candidates = Vec::new();
            for row in 0..ROWS {
                let up = -18 - LABEL_ROW * row;
                let down = 4 + LABEL_ROW * row;
                for dy in [up, down] {
                    candidates.push((r + 2, dy));
                    candidates.push((-r - 2 - w, dy));
                }
            }
            let spot = candidates.into_iter().find(|&(dx, dy)| {
                let rect = (px + dx, py + dy, px + dx + w, py + dy + LABEL_ROW - 2);
                rect.0 >= left
                    && rect.2 <= right
                    && rect.1 >= top
                    && rect.3 <= bottom
                    && !placed.iter().any(|&q| overlaps(rect, q))
                    && !marks.iter().any(|&m| overlaps(rect, m))
            });
            if let Some((dx, dy)) = spot {
                placed.push((px + dx, py + dy, px + dx + w, py + dy + LABEL_ROW - 2));
            }
            spot
        })
        .collect()
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
    let px: Vec<(i32, i32)> = pts.iter().map(|p| chart.backend_coord(p)).collect();
    let widths: Vec<i32> = with_recall
        .iter()
        .map(|(v, _)| label_width(v.variant.chars().count()))
        .collect();
    // A dot reaches 6 px and a ring 10 px from its point, plus their strokes.
    let reach: Vec<i32> = (0..pts.len())
        .map(|i| if front.contains(&i) { 12 } else { 7 })
        .collect();
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let area = (xs.start, ys.start, xs.end, ys.end);
    let singles: Vec<&[(f64, f64)]> = pts.chunks(1).collect();
    // The labels keep clear of the legend: its corner is chosen first, for one row; if a
    // label then finds no room, the legend gets a row naming it, so its corner is chosen again
    // for two rows and the labels are placed anew around that box.
    let unlabelled_row = |spots: &[Option<(i32, i32)>]| {
        let names: Vec<&str> = spots
            .iter()
            .zip(&with_recall)
            .filter(|(s, _)| s.is_none())
            .map(|(_, (v, _))| v.variant.as_str())
            .collect();
        (!names.is_empty()).then(|| {
            // Named in the legend, since the spot had no room (the tables have their figures).
            let names = names.join(", ");
            let names = match names.char_indices().nth(90) {
                Some((at, _)) => format!("{}…", &names[..at]),
                None => names,
            };
            format!("not labelled (no room): {names}")
        })
    };
    let mut labels = vec![legend];
    let mut corner = legend_position(&chart, &singles, &labels);
    let mut spots = place_labels(
        &px,
        &reach,
        &widths,
        &[legend_box(&chart, corner, &labels)],
        area,
    );
    if let Some(row) = unlabelled_row(&spots) {
        let two_rows = [labels[0].clone(), row];
        corner = legend_position(&chart, &singles, &two_rows);
        spots = place_labels(
            &px,
            &reach,
            &widths,
            &[legend_box(&chart, corner, &two_rows)],
            area,
        );
        labels.extend(unlabelled_row(&spots));
    }
    for (i, ((v, _), &p)) in with_recall.iter().zip(&pts).enumerate() {
        let c = color(i);
        let dot = EmptyElement::at(p) + Circle::new((0, 0), 6, c.filled());
        chart.draw_series(std::iter::once(dot)).map_err(e)?;
        let Some((dx, dy)) = spots[i] else {
            continue;
        };
        // A label set off from its point gets a leader line back to it.
        let end = if dx > 0 { dx - 1 } else { dx + widths[i] + 1 };
        let leader = PathElement::new(vec![(0, 0), (end, dy + 8)], c.stroke_width(1));
        let label = EmptyElement::at(p)
            + leader
            + Text::new(
                v.variant.clone(),
                (dx, dy),
                ("sans-serif", 14).into_font().color(&c),
            );
        chart.draw_series(std::iter::once(label)).map_err(e)?;
    }
    if let Some(row) = labels.get(1) {
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(e)?
            .label(row.clone())
            .legend(|(x, y)| EmptyElement::at((x, y)));
    }
    draw_legend_at(&mut chart, corner)?;
    Ok(())
}
