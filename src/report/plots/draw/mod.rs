//! The drawing of each plot kind with plotters, on any backend (SVG or PNG), one file per
//! family: line plots (context tokens over model calls, scores by folds survived), the cost vs
//! needle recall scatter with its Pareto front, the needle recall heatmap with its colour
//! scale, and cost bars per variant. What to draw and when is decided in the parent module.

mod bars;
mod grid;
mod lines;
mod points;

pub(super) use bars::draw_cost_bars;
pub(super) use grid::draw_grid;
pub use grid::scale_color;
pub(super) use lines::{draw_context, draw_folds};
pub(super) use points::draw_cost_recall;
pub use points::{label_width, pareto_front, place_labels};

use super::style::{legend_corner, Corner};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// A chart with two numeric axes.
type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The series legend, boxed, in the corner where it hides the least of `lines`.
fn draw_legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    lines: &[&[(f64, f64)]],
    labels: &[String],
) -> super::DrawResult {
    let corner = legend_position(chart, lines, labels);
    draw_legend_at(chart, corner)
}

/// The series legend (the series' labels), boxed, in `corner`.
fn draw_legend_at<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    corner: Corner,
) -> super::DrawResult {
    let position = match corner {
        Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
        Corner::UpperRight => SeriesLabelPosition::UpperRight,
        Corner::LowerLeft => SeriesLabelPosition::LowerLeft,
        Corner::LowerRight => SeriesLabelPosition::LowerRight,
    };
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(super::e)
}

/// The size in pixels a legend of `labels` (one row each) takes at most: plotters' 12 px
/// labels (~7 px a character, generous), its 30 px swatch and 10 px margins.
fn legend_size(labels: &[String]) -> (i32, i32) {
    let chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let chars = i32::try_from(chars).unwrap_or(i32::MAX / 16);
    let rows = i32::try_from(labels.len()).unwrap_or(i32::MAX / 32);
    (
        chars.saturating_mul(7).saturating_add(60),
        rows.saturating_mul(17).saturating_add(20),
    )
}

/// Where the legend hides the least of `lines` (a point is a line of one), for `labels` (one
/// row each).
fn legend_position<DB: DrawingBackend>(
    chart: &Chart<DB>,
    lines: &[&[(f64, f64)]],
    labels: &[String],
) -> Corner {
    let (x, y) = (chart.x_range(), chart.y_range());
    let (w, h) = chart.plotting_area().dim_in_pixel();
    let (lw, lh) = legend_size(labels);
    let size = (
        f64::from(lw) / f64::from(w.max(1)),
        f64::from(lh) / f64::from(h.max(1)),
    );
    legend_corner(lines, (x.start, x.end), (y.start, y.end), size)
}

/// The box (left, top, right, bottom in the backend's pixels) a legend of `labels` drawn in
/// `corner` covers at most: plotters sets it 5 px in from the plot area's corner.
fn legend_box<DB: DrawingBackend>(
    chart: &Chart<DB>,
    corner: Corner,
    labels: &[String],
) -> (i32, i32, i32, i32) {
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let (w, h) = legend_size(labels);
    let left = match corner {
        Corner::UpperLeft | Corner::LowerLeft => xs.start + 5,
        Corner::UpperRight | Corner::LowerRight => xs.end - 5 - w,
    };
    let top = match corner {
        Corner::UpperLeft | Corner::UpperRight => ys.start + 5,
        Corner::LowerLeft | Corner::LowerRight => ys.end - 5 - h,
    };
    (left, top, left + w, top + h)
}
