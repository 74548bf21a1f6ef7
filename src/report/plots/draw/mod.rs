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
pub use points::{label_offsets, pareto_front};
