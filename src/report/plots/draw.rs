//! The drawing of each plot kind with plotters, on any backend (SVG or PNG): context tokens
//! over model calls, cost vs needle recall with the Pareto front, the needle recall heatmap
//! (with its colour scale), recall and scores by folds survived, and cost per variant. What to draw and when is decided in the parent module.

use super::data::{FoldCurves, Grid};
use super::{color, e, DrawResult, ReportModel, SIZE};
use crate::record::Row;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{self, HPos, VPos};

pub(super) fn draw_context<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    model: &ReportModel,
    trace_id: &str,
    title: &str,
) -> DrawResult {
    // First successful sample with a timeline per variant (the replay is the same for every
    // eval sample of a trace × variant).
    let mut lines: Vec<(&str, Row<'_>)> = Vec::new();
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
fn overlaps(a: &Row<'_>, b: &Row<'_>) -> bool {
    a.timeline.len() == b.timeline.len()
        && a.timeline.iter().zip(b.timeline).all(|(x, y)| {
            let (x, y) = (x.tokens as f64, y.tokens as f64);
            (x - y).abs() <= 0.03 * x.max(y).max(1.0)
        })
}

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

pub(super) fn draw_cost_recall<DB: DrawingBackend>(
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
    // The front is a line through its points and a ring around each (one point has no line).
    chart
        .draw_series(LineSeries::new(front_pts.clone(), BLACK.stroke_width(1)))
        .map_err(e)?
        .label(format!("Pareto front (ringed): {}", front_names.join(", ")))
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
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    Ok(())
}

/// Viridis-like colour of a value in 0..=1 (dark purple → teal → yellow; readable in grey and
/// for the common colour-vision deficiencies), and the text colour that reads on it.
pub fn scale_color(v: f64) -> (RGBColor, &'static RGBColor) {
    const STOPS: [(f64, (f64, f64, f64)); 5] = [
        (0.0, (68.0, 1.0, 84.0)),
        (0.25, (59.0, 82.0, 139.0)),
        (0.5, (33.0, 145.0, 140.0)),
        (0.75, (94.0, 201.0, 98.0)),
        (1.0, (253.0, 231.0, 37.0)),
    ];
    let v = if v.is_finite() {
        v.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let i = STOPS.iter().rposition(|s| s.0 <= v).unwrap_or(0).min(3);
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let f = (v - a.0) / (b.0 - a.0);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    let c = RGBColor(
        mix(a.1 .0, b.1 .0),
        mix(a.1 .1, b.1 .1),
        mix(a.1 .2, b.1 .2),
    );
    let text = if v < 0.55 { &WHITE } else { &BLACK };
    (c, text)
}

/// A heatmap of mean needle recall in pixel space: one cell per (x, y) with its value and
/// count (font shrunk to fit the cell, never clipped), a white gap between cells, and a
/// colour scale from 0 to 1 on the right.
pub(super) fn draw_grid<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    g: &Grid,
    title: &str,
) -> DrawResult {
    let (w, h) = (SIZE.0 as i32, SIZE.1 as i32);
    let (left, right, top, bottom) = (130, w - 120, 50, h - 70);
    fn centre(
        t: &str,
        at: (i32, i32),
        size: f64,
        c: &'static RGBColor,
    ) -> Text<'static, (i32, i32), String> {
        Text::new(
            t.to_string(),
            at,
            TextStyle::from(("sans-serif", size).into_font())
                .color(c)
                .pos(text_anchor::Pos::new(HPos::Center, VPos::Center)),
        )
    }
    root.draw(&centre(title, (w / 2, 22), 20.0, &BLACK))
        .map_err(e)?;
    let (nx, ny) = (g.xs.len().max(1) as i32, g.ys.len().max(1) as i32);
    let (cw, ch) = ((right - left) / nx, (bottom - top) / ny);
    // Value on the first line, n on the second, sized to the cell.
    let size = f64::from((cw / 4).min(ch / 3)).clamp(8.0, 16.0);
    for (j, row) in g.cells.iter().enumerate() {
        // y from the bottom up, like an axis.
        let y0 = bottom - (j as i32 + 1) * ch;
        for (i, cell) in row.iter().enumerate() {
            let x0 = left + i as i32 * cw;
            let Some((v, n)) = cell else {
                root.draw(&Rectangle::new(
                    [(x0 + 1, y0 + 1), (x0 + cw - 1, y0 + ch - 1)],
                    RGBColor(235, 235, 235).filled(),
                ))
                .map_err(e)?;
                root.draw(&centre(
                    "no data",
                    (x0 + cw / 2, y0 + ch / 2),
                    size * 0.8,
                    &BLACK,
                ))
                .map_err(e)?;
                continue;
            };
            let (fill, text) = scale_color(*v);
            root.draw(&Rectangle::new(
                [(x0 + 1, y0 + 1), (x0 + cw - 1, y0 + ch - 1)],
                fill.filled(),
            ))
            .map_err(e)?;
            let mid = (x0 + cw / 2, y0 + ch / 2);
            root.draw(&centre(
                &format!("{v:.2}"),
                (mid.0, mid.1 - size as i32 / 2 - 1),
                size,
                text,
            ))
            .map_err(e)?;
            root.draw(&centre(
                &format!("n={n}"),
                (mid.0, mid.1 + size as i32 / 2 + 2),
                size * 0.75,
                text,
            ))
            .map_err(e)?;
        }
    }
    for (i, x) in g.xs.iter().enumerate() {
        root.draw(&centre(
            x,
            (left + i as i32 * cw + cw / 2, bottom + 14),
            13.0,
            &BLACK,
        ))
        .map_err(e)?;
    }
    for (j, y) in g.ys.iter().enumerate() {
        let label: String = y.chars().take(16).collect();
        root.draw(&Text::new(
            label,
            (left - 8, bottom - j as i32 * ch - ch / 2),
            TextStyle::from(("sans-serif", 13).into_font())
                .pos(text_anchor::Pos::new(HPos::Right, VPos::Center)),
        ))
        .map_err(e)?;
    }
    root.draw(&centre(
        &g.x_desc,
        ((left + right) / 2, bottom + 38),
        14.0,
        &BLACK,
    ))
    .map_err(e)?;
    root.draw(&Text::new(
        g.y_desc.clone(),
        (12, top - 22),
        ("sans-serif", 14),
    ))
    .map_err(e)?;
    // Colour scale: 0 at the bottom, 1 at the top.
    let (sx, steps) = (right + 30, 50);
    for k in 0..steps {
        let v = f64::from(k) / f64::from(steps - 1);
        let y1 = bottom - (bottom - top) * k / steps;
        let y0 = bottom - (bottom - top) * (k + 1) / steps;
        root.draw(&Rectangle::new(
            [(sx, y0), (sx + 22, y1)],
            scale_color(v).0.filled(),
        ))
        .map_err(e)?;
    }
    root.draw(&Rectangle::new(
        [(sx, top), (sx + 22, bottom)],
        BLACK.stroke_width(1),
    ))
    .map_err(e)?;
    for (v, label) in [(0.0, "0"), (0.5, "0.5"), (1.0, "1")] {
        let y = bottom - ((bottom - top) as f64 * v) as i32;
        root.draw(&Text::new(
            label,
            (sx + 28, y),
            TextStyle::from(("sans-serif", 13).into_font())
                .pos(text_anchor::Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(e)?;
    }
    root.draw(&centre("recall", (sx + 11, top - 14), 13.0, &BLACK))
        .map_err(e)?;
    Ok(())
}

/// Mean main score by folds survived, one line per variant (distinct colour, marker shape and
/// dash, so lines that coincide stay visible), n per point in the legend note.
pub(super) fn draw_folds<DB: DrawingBackend>(
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

pub(super) fn draw_cost_bars<DB: DrawingBackend>(
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
