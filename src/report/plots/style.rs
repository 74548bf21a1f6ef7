//! How lines that would hide each other stay visible and named: which series coincide (the same
//! y, within a tolerance, at most of their points), and the width, dash pattern, markers and
//! legend note each line gets. Decided here as data (tested without pixels); `draw` applies it.
//!
//! Lines of one coinciding group are drawn widest first and solid, then narrower with longer
//! to shorter dashes, so every line shows through the gaps of the ones above it; each gets its
//! own marker shape, on points staggered so markers of the group never land on one another
//! (on every point, nested largest first, when the lines have too few points to stagger); the
//! legend says which line each one equals ("= baseline", "= baseline on calls 1–16").

/// Share of the longer line's points two lines must have in common to count as coinciding.
pub const MIN_SHARE: f64 = 0.5;

/// Fewest markers per line when markers are staggered; below it they go on every point.
const MIN_STAGGERED_MARKS: usize = 3;

/// Marker shape on a line's points (triangles are the compaction events of the context plot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Diamond,
    Cross,
}

const MARKERS: [Marker; 4] = [
    Marker::Circle,
    Marker::Square,
    Marker::Diamond,
    Marker::Cross,
];

/// Dash patterns (dash, gap) in pixels by rank in a coinciding group; the first is solid.
const DASHES: [Option<(u32, u32)>; 4] = [None, Some((14, 6)), Some((6, 6)), Some((2, 5))];

/// How to draw one line.
#[derive(Clone, Debug, PartialEq)]
pub struct LineStyle {
    /// Stroke width in pixels.
    pub width: u32,
    /// (dash, gap) in pixels; `None` is a solid line.
    pub dash: Option<(u32, u32)>,
    /// Marker shape, or `None` for no markers.
    pub marker: Option<Marker>,
    /// Markers go on the points whose index `i` has `i % marker_every == marker_phase`.
    pub marker_every: usize,
    pub marker_phase: usize,
    /// Marker radius in pixels (one size when staggered; nested, largest first, otherwise).
    pub marker_size: u32,
    /// Size of the compaction-event triangles of this line (nested, largest first, when lines
    /// coincide).
    pub event_size: u32,
    /// What the legend adds after the name, e.g. `= baseline` or `= baseline on calls 1–16`.
    pub note: Option<String>,
}

impl LineStyle {
    /// Whether point `i` carries a marker.
    pub fn marks(&self, i: usize) -> bool {
        self.marker.is_some() && i % self.marker_every.max(1) == self.marker_phase
    }
}

/// How a set of lines is styled.
#[derive(Clone, Debug)]
pub struct LineOpts<'a> {
    /// Largest difference in y that still looks like one line (axis units).
    pub tol: f64,
    /// What x counts, for notes: "calls", "folds".
    pub unit: &'a str,
    /// Mark the points of lines that coincide with no other too (means at discrete x).
    pub mark_all: bool,
}

/// Indexes (into `b`) of the points of `b` that have a point of `a` at the same x within `tol`
/// in y.
pub fn shared_points(a: &[(f64, f64)], b: &[(f64, f64)], tol: f64) -> Vec<usize> {
    b.iter()
        .enumerate()
        .filter(|(_, p)| a.iter().any(|q| q.0 == p.0 && (q.1 - p.1).abs() <= tol))
        .map(|(i, _)| i)
        .collect()
}

fn fmt_x(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// The legend note of a line whose points `shared` (indexes into `points`) coincide with the
/// line `other` of `other_len` points.
fn note(
    other: &str,
    other_len: usize,
    points: &[(f64, f64)],
    shared: &[usize],
    unit: &str,
) -> String {
    if shared.len() == points.len() && other_len == points.len() {
        return format!("= {other}");
    }
    let contiguous = shared.windows(2).all(|w| w[1] == w[0] + 1);
    match (shared.first(), shared.last()) {
        (Some(&a), Some(&b)) if contiguous && a != b => format!(
            "= {other} on {unit} {}–{}",
            fmt_x(points[a].0),
            fmt_x(points[b].0)
        ),
        _ => format!("= {other} on {} of {} {unit}", shared.len(), points.len()),
    }
}

/// Styles of `series` (name, points), drawn in this order. A line coincides with the earlier
/// line it shares the most points with, when they share at least [`MIN_SHARE`] of the longer
/// one's points; coinciding lines form groups (a line equal to one that equals a third joins
/// their group) and are told apart by width, dash, marker and note.
pub fn line_styles(series: &[(&str, &[(f64, f64)])], opts: &LineOpts) -> Vec<LineStyle> {
    let n = series.len();
    let mut group: Vec<usize> = (0..n).collect();
    let mut notes: Vec<Option<String>> = vec![None; n];
    for (i, (_, pts)) in series.iter().enumerate() {
        let best = series[..i]
            .iter()
            .enumerate()
            .map(|(j, (_, other))| (j, shared_points(other, pts, opts.tol)))
            .filter(|(j, shared)| {
                let longer = series[*j].1.len().max(pts.len());
                !shared.is_empty() && shared.len() as f64 >= MIN_SHARE * longer as f64
            })
            // Most shared points; the earliest line on a tie.
            .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(&a.0)));
        if let Some((j, shared)) = best {
            group[i] = group[j];
            notes[i] = Some(note(
                series[j].0,
                series[j].1.len(),
                pts,
                &shared,
                opts.unit,
            ));
        }
    }
    (0..n)
        .map(|i| {
            let members: Vec<usize> = (0..n).filter(|&j| group[j] == group[i]).collect();
            let g = members.len();
            let rank = members.iter().position(|&j| j == i).unwrap_or(0);
            let len = series[i].1.len();
            if g == 1 {
                return LineStyle {
                    width: 3,
                    dash: None,
                    marker: opts.mark_all.then_some(MARKERS[i % MARKERS.len()]),
                    marker_every: 1,
                    marker_phase: 0,
                    marker_size: 6,
                    event_size: 7,
                    note: None,
                };
            }
            let below = (g - 1 - rank) as u32;
            let width = 2 + 3 * below;
            // Staggered: each line of the group marks every g·stride-th point from its own
            // offset, so no two share a marked point; too few points: every point, nested.
            let stride = len.div_ceil(8 * g).max(1);
            let staggered = len / (g * stride) >= MIN_STAGGERED_MARKS;
            let (every, phase, size) = if staggered {
                (g * stride, rank * stride, 7)
            } else {
                (1, 0, 5 + 3 * below)
            };
            LineStyle {
                width,
                dash: DASHES[rank % DASHES.len()],
                marker: Some(MARKERS[rank % MARKERS.len()]),
                marker_every: every,
                marker_phase: phase,
                marker_size: size,
                event_size: 6 + 3 * below,
                note: notes[i].clone(),
            }
        })
        .collect()
}

/// A corner of the plot area, for the legend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Corner {
    UpperLeft,
    UpperRight,
    LowerLeft,
    LowerRight,
}

/// The corner where a legend box of `size` (fractions of the plot area's width and height)
/// covers the fewest points of `lines`, each segment sampled at 16 points so a line crossing
/// the box counts: the legend hides as little as it can. Ties go to the first corner in the
/// order upper left, upper right, lower left, lower right.
pub fn legend_corner(
    lines: &[&[(f64, f64)]],
    x: (f64, f64),
    y: (f64, f64),
    size: (f64, f64),
) -> Corner {
    const CORNERS: [Corner; 4] = [
        Corner::UpperLeft,
        Corner::UpperRight,
        Corner::LowerLeft,
        Corner::LowerRight,
    ];
    let span = |v: f64, (a, b): (f64, f64)| if b > a { (v - a) / (b - a) } else { 0.5 };
    let mut hits = [0usize; 4];
    let mut count = |p: (f64, f64)| {
        let (u, v) = (span(p.0, x), span(p.1, y));
        let left = u <= size.0;
        let right = u >= 1.0 - size.0;
        let up = v >= 1.0 - size.1;
        let down = v <= size.1;
        for (k, inside) in [up && left, up && right, down && left, down && right]
            .into_iter()
            .enumerate()
        {
            hits[k] += usize::from(inside);
        }
    };
    for line in lines {
        if let [only] = line {
            count(*only);
        }
        for w in line.windows(2) {
            for t in 0..16 {
                let f = f64::from(t) / 16.0;
                count((
                    w[0].0 + (w[1].0 - w[0].0) * f,
                    w[0].1 + (w[1].1 - w[0].1) * f,
                ));
            }
        }
        if let Some(&last) = line.last() {
            count(last);
        }
    }
    let best = (0..4).min_by_key(|&k| (hits[k], k)).unwrap_or(0);
    CORNERS[best]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(ys: &[f64]) -> Vec<(f64, f64)> {
        ys.iter()
            .enumerate()
            .map(|(i, &y)| (i as f64 + 1.0, y))
            .collect()
    }

    fn opts() -> LineOpts<'static> {
        LineOpts {
            tol: 50.0,
            unit: "calls",
            mark_all: false,
        }
    }

    /// The quickstart's shape: prompt-b equal to the baseline everywhere, digitorn equal to it
    /// until its fold at call 7, aggressive apart.
    fn quickstart() -> Vec<(&'static str, Vec<(f64, f64)>)> {
        let base: Vec<f64> = (1..=10).map(|i| 1000.0 * f64::from(i)).collect();
        let mut digitorn = base.clone();
        for y in &mut digitorn[7..] {
            *y = 2000.0;
        }
        let prompt_b: Vec<f64> = base.iter().map(|y| y + 20.0).collect();
        let aggressive: Vec<f64> = (0..10).map(|i| 500.0 + f64::from(i % 3) * 400.0).collect();
        vec![
            ("baseline", line(&base)),
            ("aggressive", line(&aggressive)),
            ("digitorn", line(&digitorn)),
            ("prompt-b", line(&prompt_b)),
        ]
    }

    fn styles(series: &[(&str, Vec<(f64, f64)>)], o: &LineOpts) -> Vec<LineStyle> {
        let refs: Vec<(&str, &[(f64, f64)])> =
            series.iter().map(|(n, p)| (*n, p.as_slice())).collect();
        line_styles(&refs, o)
    }

    #[test]
    fn identical_lines_get_distinct_styles_and_a_legend_note() {
        let s = styles(&quickstart(), &opts());
        let [base, aggr, digi, pb] = [&s[0], &s[1], &s[2], &s[3]];
        // Notes name the line each one covers.
        assert_eq!(pb.note.as_deref(), Some("= baseline"));
        assert_eq!(digi.note.as_deref(), Some("= baseline on calls 1–7"));
        assert_eq!((base.note.as_ref(), aggr.note.as_ref()), (None, None));
        // The group (baseline, digitorn, prompt-b): widest first, distinct dashes and markers.
        let group = [base, digi, pb];
        assert!(
            base.width > digi.width && digi.width > pb.width,
            "{group:?}"
        );
        assert_eq!(base.dash, None);
        assert!(digi.dash.is_some() && pb.dash.is_some() && digi.dash != pb.dash);
        let shapes: Vec<_> = group.iter().map(|s| s.marker).collect();
        assert!(shapes.iter().all(Option::is_some));
        assert!(shapes[0] != shapes[1] && shapes[1] != shapes[2] && shapes[0] != shapes[2]);
        // Staggered markers: no point of the group carries two.
        for i in 0..10 {
            let marked = group.iter().filter(|s| s.marks(i)).count();
            assert!(marked <= 1, "point {i}: {marked} markers");
        }
        for st in group {
            assert!((0..10).filter(|&i| st.marks(i)).count() >= MIN_STAGGERED_MARKS);
        }
        // A line apart from the others: plain, no markers, no note.
        assert_eq!((aggr.dash, aggr.marker, aggr.width), (None, None, 3));
    }

    #[test]
    fn lines_apart_or_sharing_a_few_points_are_not_grouped() {
        let mut q = quickstart();
        // digitorn leaves the baseline after call 3: 3 of 10 points shared, below MIN_SHARE.
        for p in &mut q[2].1[3..] {
            p.1 = 2000.0;
        }
        // prompt-b 100 tokens above the baseline, twice the tolerance: a separate line.
        for p in &mut q[3].1 {
            p.1 += 80.0;
        }
        let s = styles(&q, &opts());
        assert!(
            s.iter().all(|st| st.note.is_none() && st.dash.is_none()),
            "{s:?}"
        );
        assert!(s.iter().all(|st| st.width == 3 && st.marker.is_none()));
        // Within the tolerance again, prompt-b is grouped with the baseline.
        let s = styles(
            &q,
            &LineOpts {
                tol: 100.0,
                ..opts()
            },
        );
        assert_eq!(s[3].note.as_deref(), Some("= baseline"));
    }

    #[test]
    fn scattered_overlap_is_counted_and_few_points_nest_markers() {
        // Two fold curves of 2 points, identical: too few points to stagger markers, so both
        // mark every point, the lower one with the larger marker.
        let a = vec![(1.0, 2.5), (2.0, 2.0)];
        let o = LineOpts {
            tol: 0.05,
            unit: "folds",
            mark_all: true,
        };
        let s = styles(&[("baseline", a.clone()), ("prompt-b", a)], &o);
        assert_eq!(s[1].note.as_deref(), Some("= baseline"));
        assert!(s[0].marks(0) && s[0].marks(1) && s[1].marks(0) && s[1].marks(1));
        assert!(s[0].marker_size > s[1].marker_size && s[0].marker != s[1].marker);
        // Shared on calls 1, 2, 4, 5 of 5 (not contiguous): counted.
        let x = line(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        let y = line(&[1.0, 2.0, 9.0, 4.0, 5.0]);
        let s = styles(&[("a", x), ("b", y)], &o);
        assert_eq!(s[1].note.as_deref(), Some("= a on 4 of 5 folds"));
        // Lines apart with mark_all: each its own marker, solid.
        let s = styles(&[("a", line(&[1.0, 1.0])), ("b", line(&[3.0, 3.0]))], &o);
        assert_eq!(
            (s[0].marker, s[1].marker, s[1].dash),
            (Some(Marker::Circle), Some(Marker::Square), None)
        );
    }

    #[test]
    fn the_legend_goes_to_the_emptiest_corner() {
        let rising = line(&[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let r: &[(f64, f64)] = &rising;
        let (x, y, size) = ((1.0, 6.0), (0.0, 10.0), (0.4, 0.3));
        // A line from lower left to upper right leaves the upper left free.
        assert_eq!(legend_corner(&[r], x, y, size), Corner::UpperLeft);
        // Falling from the upper left: the upper right and lower left are free; upper right
        // comes first.
        let falling = line(&[10.0, 8.0, 6.0, 4.0, 2.0, 0.0]);
        assert_eq!(legend_corner(&[&falling], x, y, size), Corner::UpperRight);
        // Both: every corner equally covered, so the order decides.
        assert_eq!(legend_corner(&[r, &falling], x, y, size), Corner::UpperLeft);
        // Everything high: a lower corner.
        let high = line(&[9.0, 9.5, 9.0, 9.5, 9.0, 9.5]);
        assert_eq!(legend_corner(&[&high], x, y, size), Corner::LowerLeft);
    }
}
