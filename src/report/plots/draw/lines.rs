//! Line plots: context tokens per model call of one trace (one line per variant, compaction
//! markers, the uncompressed reference) and mean scores by folds survived.

use super::super::data::FoldCurves;
use super::super::style::{line_styles, LineOpts, LineStyle, Marker};
use super::super::{color, e, DrawResult, ReportModel, SIZE};
use super::{draw_legend, Chart};
use crate::record::Row;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// A marker's filled shape and its rim, in pixels.
type MarkerParts = (Polygon<(i32, i32)>, PathElement<(i32, i32)>);

/// [`line_styles`] of owned series.
fn styled(series: &[(&str, Vec<(f64, f64)>)], opts: &LineOpts) -> Vec<LineStyle> {
    let refs: Vec<(&str, &[(f64, f64)])> = series.iter().map(|(n, p)| (*n, p.as_slice())).collect();
    line_styles(&refs, opts)
}

fn lines_of<'a>(series: &'a [(&str, Vec<(f64, f64)>)]) -> Vec<&'a [(f64, f64)]> {
    series.iter().map(|(_, p)| p.as_slice()).collect()
}

/// Outline of a marker of radius `r` around (0, 0), in pixels.
fn marker_outline(m: Marker, r: i32) -> Vec<(i32, i32)> {
    let rf = f64::from(r);
    match m {
        Marker::Circle => (0..16)
            .map(|k| {
                let a = f64::from(k) * std::f64::consts::PI / 8.0;
                ((rf * a.cos()).round() as i32, (rf * a.sin()).round() as i32)
            })
            .collect(),
        Marker::Square => {
            let h = (rf * 0.85).round() as i32;
            vec![(-h, -h), (h, -h), (h, h), (-h, h)]
        }
        Marker::Diamond => vec![(0, -r - 1), (r + 1, 0), (0, r + 1), (-r - 1, 0)],
        Marker::Cross => {
            // A plus of arm `r` and half-thickness `t`, turned 45°.
            let t = (rf * 0.3).max(1.5);
            let plus = [
                (t, rf),
                (t, t),
                (rf, t),
                (rf, -t),
                (t, -t),
                (t, -rf),
                (-t, -rf),
                (-t, -t),
                (-rf, -t),
                (-rf, t),
                (-t, t),
                (-t, rf),
            ];
            let s = std::f64::consts::FRAC_1_SQRT_2;
            plus.iter()
                .map(|&(x, y)| (((x - y) * s).round() as i32, ((x + y) * s).round() as i32))
                .collect()
        }
    }
}

/// A marker's parts in pixels around (0, 0): its shape filled in `c`, and a white rim so it
/// reads on a line of its own colour; nothing for no marker.
fn marker_parts(m: Option<Marker>, r: u32, c: RGBColor) -> MarkerParts {
    let Some(m) = m else {
        let none = WHITE.mix(0.0);
        return (Polygon::new(vec![], none), PathElement::new(vec![], none));
    };
    let pts = marker_outline(m, r as i32);
    let mut rim = pts.clone();
    rim.push(pts[0]);
    (
        Polygon::new(pts, c.filled()),
        PathElement::new(rim, WHITE.stroke_width(1)),
    )
}

/// The legend label of a line: its name, then `detail` and its style's note in brackets.
fn line_label(name: &str, detail: Option<&str>, st: &LineStyle) -> String {
    let notes: Vec<&str> = detail.into_iter().chain(st.note.as_deref()).collect();
    if notes.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({})", notes.join(", "))
    }
}

/// One line in its style (solid or dashed), named `label` in the legend and drawn there as a
/// short stroke of the same dash, width (capped) and marker.
fn draw_line<'c, DB: DrawingBackend + 'c>(
    chart: &mut Chart<'c, DB>,
    pts: &[(f64, f64)],
    st: &LineStyle,
    c: RGBColor,
    label: &str,
) -> DrawResult {
    let stroke = c.stroke_width(st.width);
    let anno = match st.dash {
        None => chart
            .draw_series(LineSeries::new(pts.to_vec(), stroke))
            .map_err(e)?,
        Some((on, off)) => chart
            .draw_series(DashedLineSeries::new(pts.to_vec(), on, off, stroke))
            .map_err(e)?,
    };
    let (dash, marker, width) = (st.dash.unwrap_or((24, 0)), st.marker, st.width.min(7));
    anno.label(label).legend(move |(x, y)| {
        let line = DashedPathElement::new(
            vec![(-12, 0), (12, 0)],
            dash.0,
            dash.1,
            c.stroke_width(width),
        );
        let (shape, rim) = marker_parts(marker, 5, c);
        EmptyElement::at((x + 12, y)) + line + shape + rim
    });
    Ok(())
}

/// The markers of one line, on the points its style marks except those `taken` (a compaction
/// event's triangle is there).
fn draw_marks<DB: DrawingBackend>(
    chart: &mut Chart<DB>,
    pts: &[(f64, f64)],
    st: &LineStyle,
    c: RGBColor,
    taken: impl Fn(usize) -> bool,
) -> DrawResult {
    let Some(m) = st.marker else {
        return Ok(());
    };
    let marks = pts
        .iter()
        .enumerate()
        .filter(|(k, _)| st.marks(*k) && !taken(*k))
        .map(|(_, &p)| {
            let (shape, rim) = marker_parts(Some(m), st.marker_size, c);
            EmptyElement::at(p) + shape + rim
        });
    chart.draw_series(marks).map_err(e)?;
    Ok(())
}

pub(in crate::report::plots) fn draw_context<DB: DrawingBackend>(
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
    let series: Vec<(&str, Vec<(f64, f64)>)> = lines
        .iter()
        .map(|(variant, s)| {
            let pts = s
                .timeline
                .iter()
                .enumerate()
                .map(|(k, p)| (k as f64 + 1.0, p.tokens as f64))
                .collect();
            (*variant, pts)
        })
        .collect();
    // Lines closer than ~5 px (1.2% of the axis) look like one.
    let styles = styled(
        &series,
        &LineOpts {
            tol: 0.012 * ymax,
            unit: "calls",
            mark_all: false,
        },
    );
    let mut labels: Vec<String> = series
        .iter()
        .zip(&styles)
        .map(|((variant, _), st)| line_label(variant, None, st))
        .collect();
    for (i, ((_, pts), st)) in series.iter().zip(&styles).enumerate() {
        draw_line(&mut chart, pts, st, color(i), &labels[i])?;
    }
    // Markers and compaction events over every line, nested largest first where lines
    // coincide.
    for (i, (((_, pts), st), (_, s))) in series.iter().zip(&styles).zip(&lines).enumerate() {
        draw_marks(&mut chart, pts, st, color(i), |k| {
            s.timeline.get(k).is_some_and(|p| !p.events.is_empty())
        })?;
        let c = color(i);
        let events = s
            .timeline
            .iter()
            .zip(pts)
            .filter(|(p, _)| !p.events.is_empty())
            .map(|(_, &xy)| TriangleMarker::new(xy, st.event_size as i32, c.filled()));
        chart.draw_series(events).map_err(e)?;
    }
    // The uncompressed reference on top, thin and dashed, so it shows where a variant has not
    // compacted yet and the two coincide.
    let mut all = series.clone();
    if let Some(r) = reference {
        let grey = RGBColor(90, 90, 90);
        labels.push("no compression".into());
        all.push(("no compression", r.clone()));
        chart
            .draw_series(DashedLineSeries::new(r, 6, 4, grey.stroke_width(1)))
            .map_err(e)?
            .label("no compression")
            .legend(move |(x, y)| {
                DashedPathElement::new(vec![(x, y), (x + 24, y)], 6, 4, grey.stroke_width(1))
            });
    }
    draw_legend(&mut chart, &lines_of(&all), &labels)?;
    root.draw(&Text::new(
        "▲ = compaction event (evicted, cleared, summarized, …)",
        (90, SIZE.1 as i32 - 16),
        ("sans-serif", 13),
    ))
    .map_err(e)?;
    Ok(())
}

/// Mean main score by folds survived, one line per variant with a marker on each point (lines
/// that coincide styled apart and named, see `style`), n in the legend.
pub(in crate::report::plots) fn draw_folds<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    f: &FoldCurves,
    title: &str,
) -> DrawResult {
    let folds = || f.curves.iter().flat_map(|(_, pts)| pts.iter().map(|p| p.0));
    let (min_fold, max_fold) = (folds().min().unwrap_or(0), folds().max().unwrap_or(1));
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
    let series: Vec<(&str, Vec<(f64, f64)>)> = f
        .curves
        .iter()
        .map(|(variant, pts)| {
            let xy = pts.iter().map(|p| (f64::from(p.0), p.1)).collect();
            (variant.as_str(), xy)
        })
        .collect();
    let styles = styled(
        &series,
        &LineOpts {
            tol: 0.012 * ymax * 1.08,
            unit: "folds",
            mark_all: true,
        },
    );
    let labels: Vec<String> = series
        .iter()
        .zip(&styles)
        .zip(&f.curves)
        .map(|(((variant, _), st), (_, pts))| {
            let n: usize = pts.iter().map(|p| p.2).sum();
            line_label(variant, Some(&format!("n={n}")), st)
        })
        .collect();
    for (i, ((_, xy), st)) in series.iter().zip(&styles).enumerate() {
        draw_line(&mut chart, xy, st, color(i), &labels[i])?;
    }
    for (i, ((_, xy), st)) in series.iter().zip(&styles).enumerate() {
        draw_marks(&mut chart, xy, st, color(i), |_| false)?;
    }
    draw_legend(&mut chart, &lines_of(&series), &labels)?;
    Ok(())
}
