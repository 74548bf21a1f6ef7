//! The numbers each plot draws, computed from the model alone (so they are tested as data, not
//! pixels): needle-recall grids (depth × trigger per variant, or depth × variant when the
//! trigger is not swept) and per-fold curves (mean score by folds survived, per variant).

use super::{numeric_param, ReportModel};
use crate::record::Row;
use std::collections::BTreeMap;

/// A heatmap: mean value and count per (x, y) cell; `cells[y][x]`, `None` where no sample.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    pub x_desc: String,
    pub y_desc: String,
    pub xs: Vec<String>,
    pub ys: Vec<String>,
    pub cells: Vec<Vec<Option<(f64, usize)>>>,
}

/// Numeric axis values as sortable keys (total order of f64).
fn key(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

fn fmt_axis(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn needle_recall(s: &Row<'_>) -> Option<f64> {
    (s.eval == "needle" && s.error.is_none())
        .then(|| s.scores.get("recall").copied())
        .flatten()
}

/// What the plots draw, summed from the rows one at a time in report order (so each cell's
/// sum is taken in the order the rows are listed): bounded by the distinct depths, triggers,
/// folds, evals and variants, not by the rows.
#[derive(Clone, Debug, Default)]
pub struct PlotSums {
    /// Distinct numeric depths and triggers of the needle samples with a recall.
    depths: BTreeMap<i64, f64>,
    triggers: BTreeMap<i64, f64>,
    /// variant → (depth × trigger → (sum, n), depths, triggers).
    depth_trigger: BTreeMap<String, Cells>,
    /// variant → depth → (sum, n), and the depths.
    depth_variant: BTreeMap<String, BTreeMap<i64, (f64, usize)>>,
    depth_axis: BTreeMap<i64, String>,
    /// eval → variant → fold → (sum, n).
    folds: BTreeMap<String, BTreeMap<String, PerFold>>,
}

/// fold → (sum, n).
type PerFold = BTreeMap<u32, (f64, usize)>;

/// The cells of one variant's depth × trigger grid and its axes.
type Cells = (
    BTreeMap<(i64, i64), (f64, usize)>,
    BTreeMap<i64, String>,
    BTreeMap<i64, String>,
);

fn entry<'m, V: Default>(map: &'m mut BTreeMap<String, V>, k: &str) -> &'m mut V {
    if !map.contains_key(k) {
        map.insert(k.to_string(), V::default());
    }
    map.get_mut(k).expect("inserted")
}

/// Put `x`'s label on an axis (formatted once per value, not once per row).
fn axis(labels: &mut BTreeMap<i64, String>, x: f64) {
    if let std::collections::btree_map::Entry::Vacant(e) = labels.entry(key(x)) {
        e.insert(fmt_axis(x));
    }
}

impl PlotSums {
    pub fn add(&mut self, s: &Row<'_>) {
        if let Some(r) = needle_recall(s) {
            let depth = numeric_param(s, "depth");
            let trigger = numeric_param(s, "trigger");
            if let Some(d) = depth {
                self.depths.insert(key(d), d);
                axis(&mut self.depth_axis, d);
                let c = entry(&mut self.depth_variant, s.variant)
                    .entry(key(d))
                    .or_default();
                c.0 += r;
                c.1 += 1;
            }
            if let Some(t) = trigger {
                self.triggers.insert(key(t), t);
            }
            if let (Some(d), Some(t)) = (depth, trigger) {
                let (sums, xs, ys) = entry(&mut self.depth_trigger, s.variant);
                axis(xs, d);
                axis(ys, t);
                let c = sums.entry((key(d), key(t))).or_default();
                c.0 += r;
                c.1 += 1;
            }
        }
        if s.error.is_some() {
            return;
        }
        let Some(fold) = fold_of(s) else {
            return;
        };
        let (score, _) = main_score(s.eval);
        let value = if score == "pass" {
            s.passed.map(|p| if p { 1.0 } else { 0.0 })
        } else {
            s.scores.get(score).copied()
        };
        let Some(value) = value.filter(|v| v.is_finite()) else {
            return;
        };
        let per_variant = entry(&mut self.folds, s.eval);
        let c = entry(per_variant, s.variant).entry(fold).or_default();
        c.0 += value;
        c.1 += 1;
    }
}

/// Whether the needle samples sweep the trigger (two or more numeric values).
pub fn triggers_swept(model: &ReportModel) -> bool {
    model.plot_sums.triggers.len() >= 2
}

/// Whether any needle sample has a numeric depth.
pub fn has_depths(model: &ReportModel) -> bool {
    !model.plot_sums.depths.is_empty()
}

fn grid(
    x_desc: &str,
    y_desc: &str,
    xs: Vec<(i64, String)>,
    ys: Vec<(i64, String)>,
    sums: &BTreeMap<(i64, i64), (f64, usize)>,
) -> Grid {
    let cells = ys
        .iter()
        .map(|(yk, _)| {
            xs.iter()
                .map(|(xk, _)| sums.get(&(*xk, *yk)).map(|&(s, n)| (s / n as f64, n)))
                .collect()
        })
        .collect();
    Grid {
        x_desc: x_desc.into(),
        y_desc: y_desc.into(),
        xs: xs.into_iter().map(|x| x.1).collect(),
        ys: ys.into_iter().map(|y| y.1).collect(),
        cells,
    }
}

/// Mean needle recall of `variant` by depth (x) × trigger (y).
pub fn depth_trigger_grid(model: &ReportModel, variant: &str) -> Grid {
    let empty = Cells::default();
    let (sums, xs, ys) = model.plot_sums.depth_trigger.get(variant).unwrap_or(&empty);
    grid(
        "needle depth (fraction of the trace)",
        "summarize trigger (fraction of the window)",
        xs.clone().into_iter().collect(),
        ys.clone().into_iter().collect(),
        sums,
    )
}

/// Mean needle recall by depth (x) × variant (y, in model order): the heatmap when the trigger
/// is not swept.
pub fn depth_variant_grid(model: &ReportModel) -> Grid {
    let mut sums: BTreeMap<(i64, i64), (f64, usize)> = BTreeMap::new();
    let mut xs = BTreeMap::new();
    let mut ys = Vec::new();
    for (vi, v) in model.variants.iter().enumerate() {
        let Some(per_depth) = model.plot_sums.depth_variant.get(&v.variant) else {
            continue;
        };
        ys.push((vi as i64, v.variant.clone()));
        for (&d, &c) in per_depth {
            xs.insert(d, model.plot_sums.depth_axis[&d].clone());
            sums.insert((d, vi as i64), c);
        }
    }
    grid(
        "needle depth (fraction of the trace)",
        "variant",
        xs.into_iter().collect(),
        ys,
        &sums,
    )
}

/// (fold, mean score, samples) of one point of a fold curve.
pub type FoldPoint = (u32, f64, usize);

/// Per-fold curves of one eval's main score: for each variant, (fold, mean, n) by fold.
#[derive(Clone, Debug, PartialEq)]
pub struct FoldCurves {
    pub eval: String,
    /// The score plotted (`recall`, `score`, `agreement`, or `pass` for the verdict).
    pub score: String,
    pub y_desc: String,
    pub curves: Vec<(String, Vec<FoldPoint>)>,
}

/// The score a fold curve of `eval` shows, and its axis label.
fn main_score(eval: &str) -> (&'static str, &'static str) {
    match eval {
        "needle" => ("recall", "needle recall (fraction found)"),
        "drift" => ("score", "drift score (0–5, higher = on task)"),
        "continuation" => ("agreement", "continuation agreement (fraction)"),
        _ => ("pass", "pass rate (fraction)"),
    }
}

fn fold_of(s: &Row<'_>) -> Option<u32> {
    numeric_param(s, "fold")
        .or_else(|| s.scores.get("fold").copied())
        .filter(|f| f.is_finite() && *f >= 0.0)
        .map(|f| f as u32)
}

/// One set of curves per eval whose samples carry a fold (`params.fold`, or a `fold` score):
/// mean main score by folds survived, per variant (model order). Evals without folds give
/// nothing.
pub fn fold_curves(model: &ReportModel) -> Vec<FoldCurves> {
    model
        .plot_sums
        .folds
        .iter()
        .map(|(eval, per_variant)| {
            let (score, y_desc) = main_score(eval);
            FoldCurves {
                eval: eval.to_string(),
                score: score.to_string(),
                y_desc: y_desc.to_string(),
                // Variants in model order.
                curves: model
                    .variants
                    .iter()
                    .filter_map(|v| {
                        let folds = per_variant.get(&v.variant)?;
                        Some((
                            v.variant.clone(),
                            folds
                                .iter()
                                .map(|(&f, &(sum, n))| (f, sum / n as f64, n))
                                .collect(),
                        ))
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RunInfo, Sample};

    fn needle(v: &str, depth: f64, fold: Option<u32>, recall: f64, i: usize) -> Sample {
        let mut b = Sample::builder()
            .unit_id(format!("{v}/{i}"))
            .variant(v)
            .trace(format!("t{}", i % 3))
            .sample(format!("s{i}"))
            .param("depth", depth)
            .score("recall", recall);
        if let Some(f) = fold {
            b = b.param("fold", f);
        }
        b.build()
    }

    fn model(samples: Vec<Sample>) -> ReportModel {
        let mut info = RunInfo::new("r");
        info.variants = vec!["base".into(), "aggr".into()];
        ReportModel::build(&info, samples)
    }

    #[test]
    fn depth_by_variant_grid_when_the_trigger_is_not_swept() {
        let mut samples = vec![];
        for (i, d) in [0.2, 0.5, 0.8, 0.2, 0.5, 0.8].into_iter().enumerate() {
            samples.push(needle("base", d, None, 1.0, i));
            samples.push(needle("aggr", d, None, if d < 0.5 { 0.0 } else { 1.0 }, i));
        }
        let m = model(samples);
        assert!(!triggers_swept(&m) && has_depths(&m));
        let g = depth_variant_grid(&m);
        assert_eq!(g.xs, ["0.2", "0.5", "0.8"]);
        assert_eq!(g.ys, ["base", "aggr"]);
        assert_eq!(
            g.cells,
            vec![
                vec![Some((1.0, 2)), Some((1.0, 2)), Some((1.0, 2))],
                vec![Some((0.0, 2)), Some((1.0, 2)), Some((1.0, 2))],
            ]
        );
    }

    #[test]
    fn depth_by_trigger_grid_per_variant() {
        let mut samples = vec![];
        let mut i = 0;
        for t in [0.3, 0.85] {
            for d in [0.1, 0.9] {
                let mut s = needle(
                    "base",
                    d,
                    None,
                    if t > 0.5 && d < 0.5 { 0.0 } else { 1.0 },
                    i,
                );
                s.params.insert("trigger".into(), t.into());
                samples.push(s);
                i += 1;
            }
        }
        let m = model(samples);
        assert!(triggers_swept(&m));
        let g = depth_trigger_grid(&m, "base");
        assert_eq!((g.xs.len(), g.ys.len()), (2, 2));
        assert_eq!(g.ys, ["0.3", "0.85"]);
        assert_eq!(g.cells[1][0], Some((0.0, 1)));
        assert_eq!(g.cells[0][0], Some((1.0, 1)));
    }

    #[test]
    fn fold_curves_from_params_fold() {
        let mut samples = vec![];
        for i in 0..12 {
            let fold = (i % 3) as u32 + 1;
            samples.push(needle("base", 0.5, Some(fold), 1.0, i));
            // aggr forgets more with every fold: recall 1, 0.5, 0 at folds 1, 2, 3.
            let r = match fold {
                1 => 1.0,
                2 => f64::from(i % 2 == 0),
                _ => 0.0,
            };
            samples.push(needle("aggr", 0.5, Some(fold), r, i));
        }
        let mut drift = Sample::builder()
            .unit_id("d")
            .variant("base")
            .eval("drift")
            .score("score", 4.0)
            .score("fold", 2.0)
            .build();
        drift.trace_id = "t0".into();
        samples.push(drift);
        let m = model(samples);
        let curves = fold_curves(&m);
        assert_eq!(curves.len(), 2);
        assert_eq!(
            (curves[0].eval.as_str(), curves[0].score.as_str()),
            ("drift", "score")
        );
        assert_eq!(
            curves[0].curves,
            vec![("base".to_string(), vec![(2, 4.0, 1)])]
        );
        let n = &curves[1];
        assert_eq!(n.curves[0].0, "base");
        assert_eq!(
            n.curves[1],
            (
                "aggr".to_string(),
                vec![(1, 1.0, 4), (2, 0.5, 4), (3, 0.0, 4)]
            )
        );
        // No folds anywhere: no curves.
        let plain = model(vec![needle("base", 0.5, None, 1.0, 0)]);
        assert!(fold_curves(&plain).is_empty());
    }
}
