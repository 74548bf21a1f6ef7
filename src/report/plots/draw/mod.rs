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
    chart
        .configure_series_labels()
        .position(corner)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(super::e)
}

/// Where the legend hides the least of `lines` (a point is a line of one), for `labels` (one
/// row each).
fn legend_position<DB: DrawingBackend>(
    chart: &Chart<DB>,
    lines: &[&[(f64, f64)]],
    labels: &[String],
) -> SeriesLabelPosition {
    let (x, y) = (chart.x_range(), chart.y_range());
    let (w, h) = chart.plotting_area().dim_in_pixel();
    let chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let size = (
        (chars as f64 * 7.0 + 60.0) / f64::from(w.max(1)),
        (labels.len() as f64 * 17.0 + 16.0) / f64::from(h.max(1)),
    );
    match legend_corner(lines, (x.start, x.end), (y.start, y.end), size) {
        Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
        Corner::UpperRight => SeriesLabelPosition::UpperRight,
        Corner::LowerLeft => SeriesLabelPosition::LowerLeft,
        Corner::LowerRight => SeriesLabelPosition::LowerRight,
    }
}
