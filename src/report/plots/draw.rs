//! The drawing of each plot kind with plotters, on any backend (SVG or PNG): context tokens
//! over model calls, cost vs needle recall with the Pareto front, the needle recall heatmap and
//! cost per variant. What to draw and when is decided in the parent module.

use super::{color, e, numeric_param, DrawResult, ReportModel, SIZE};
use crate::record::Sample;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{self, HPos, VPos};
use std::collections::{BTreeMap, BTreeSet};

pub(super) fn draw_context<DB: DrawingBackend>(
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
        .y_desc("needle recall")
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

fn fmt_axis(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub(super) fn draw_heatmap<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    model: &ReportModel,
    variant: &str,
    title: &str,
) -> DrawResult {
    // (depth, trigger) → (sum, n); keys as bit patterns of the f64 so they sort and dedupe.
    let mut cells: BTreeMap<(u64, u64), (f64, usize)> = BTreeMap::new();
    let mut depths = BTreeSet::new();
    let mut triggers = BTreeSet::new();
    let key = |x: f64| {
        x.to_bits()
            ^ if x.is_sign_negative() {
                u64::MAX
            } else {
                1 << 63
            }
    };
    for s in model
        .samples
        .iter()
        .filter(|s| s.variant == variant && s.eval == "needle" && s.error.is_none())
    {
        let (Some(d), Some(t), Some(r)) = (
            numeric_param(s, "depth"),
            numeric_param(s, "trigger"),
            s.scores.get("recall"),
        ) else {
            continue;
        };
        depths.insert((key(d), d.to_bits()));
        triggers.insert((key(t), t.to_bits()));
        let c = cells.entry((key(d), key(t))).or_default();
        c.0 += r;
        c.1 += 1;
    }
    let depths: Vec<(u64, f64)> = depths
        .into_iter()
        .map(|(k, b)| (k, f64::from_bits(b)))
        .collect();
    let triggers: Vec<(u64, f64)> = triggers
        .into_iter()
        .map(|(k, b)| (k, f64::from_bits(b)))
        .collect();
    let (nx, ny) = (depths.len() as u32, triggers.len() as u32);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            // plotters' integer ranges are inclusive: 0..n-1 is n segments.
            (0u32..nx.saturating_sub(1)).into_segmented(),
            (0u32..ny.saturating_sub(1)).into_segmented(),
        )
        .map_err(e)?;
    let dl = depths.clone();
    let tl = triggers.clone();
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("needle depth (fraction of the trace)")
        .y_desc("trigger (fraction of the window)")
        .x_labels(nx as usize)
        .y_labels(ny as usize)
        .x_label_formatter(&move |v| match v {
            SegmentValue::CenterOf(i) => dl
                .get(*i as usize)
                .map(|d| fmt_axis(d.1))
                .unwrap_or_default(),
            _ => String::new(),
        })
        .y_label_formatter(&move |v| match v {
            SegmentValue::CenterOf(i) => tl
                .get(*i as usize)
                .map(|t| fmt_axis(t.1))
                .unwrap_or_default(),
            _ => String::new(),
        })
        .draw()
        .map_err(e)?;
    for (i, d) in depths.iter().enumerate() {
        for (j, t) in triggers.iter().enumerate() {
            let Some(&(sum, n)) = cells.get(&(d.0, t.0)) else {
                continue;
            };
            let r = (sum / n as f64).clamp(0.0, 1.0);
            // red (0) → yellow (0.5) → green (1)
            let fill = if r < 0.5 {
                RGBColor(215, (60.0 + 330.0 * r) as u8, 50)
            } else {
                RGBColor((215.0 - 330.0 * (r - 0.5)) as u8, 200, 60)
            };
            let (i, j) = (i as u32, j as u32);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [
                        (SegmentValue::Exact(i), SegmentValue::Exact(j)),
                        (SegmentValue::Exact(i + 1), SegmentValue::Exact(j + 1)),
                    ],
                    fill.filled(),
                )))
                .map_err(e)?;
            // Two short lines centred in the cell, so a narrow cell does not clip them.
            let cell = EmptyElement::at((SegmentValue::CenterOf(i), SegmentValue::CenterOf(j)))
                + Text::new(
                    format!("{r:.2}"),
                    (0, -8),
                    TextStyle::from(("sans-serif", 14).into_font())
                        .pos(text_anchor::Pos::new(HPos::Center, VPos::Center)),
                )
                + Text::new(
                    format!("n={n}"),
                    (0, 9),
                    TextStyle::from(("sans-serif", 11).into_font())
                        .pos(text_anchor::Pos::new(HPos::Center, VPos::Center)),
                );
            chart.draw_series(std::iter::once(cell)).map_err(e)?;
        }
    }
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
        .y_desc("USD per unit")
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
