//! The needle recall heatmap in pixel space, with its viridis-like colour scale.

use super::super::data::Grid;
use super::super::{e, DrawResult, SIZE};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{self, HPos, VPos};

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
pub(in crate::report::plots) fn draw_grid<DB: DrawingBackend>(
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
