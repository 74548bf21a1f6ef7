//! Plots (SVG and PNG, with plotters): context tokens over model calls per variant with
//! compaction markers; cost vs needle recall with the Pareto front; needle recall heatmap
//! (depth × trigger per variant, or depth × variant when the trigger is not swept) with a
//! colour scale; mean scores by folds survived per eval (samples with `params.fold`); mean cost
//! per unit per variant with 95% CI bars. The numbers of the heatmaps and fold curves come
//! from `data` (tested as data); `draw` only draws them.
//!
//! [`plan`] decides, from the model alone, which plots have data and why the others are
//! skipped; [`render_svg`] / [`render_png`] draw one. PNG text uses the vendored DejaVu Sans
//! (`assets/fonts`), registered with plotters on first use, so no system font is needed.

pub mod data;
mod draw;
pub mod style;

use draw::{draw_context, draw_cost_bars, draw_cost_recall, draw_folds, draw_grid};
pub use draw::{label_width, pareto_front, place_labels, scale_color};

use super::model::ReportModel;
use crate::record::Row;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeSet;

/// The vendored font (Bitstream Vera licence, see `assets/fonts/DejaVuSans-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// Most context-timeline plots drawn (one per trace).
pub const MAX_TIMELINE_PLOTS: usize = 4;
/// Most heatmaps drawn (one per variant).
pub const MAX_HEATMAPS: usize = 6;

const SIZE: (u32, u32) = (900, 520);

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bytes are the TTF embedded at compile time, so parsing cannot fail at run time;
        // `png_renders_text_with_the_vendored_font` proves it.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// What a plot shows.
#[derive(Clone, Debug, PartialEq)]
pub enum PlotKind {
    /// Context tokens per model call of one trace, one line per variant.
    Context { trace_id: String },
    /// Mean cost (or tokens, when a price is unknown) vs mean needle recall per variant.
    CostRecall,
    /// Mean needle recall by depth × trigger for one variant.
    Heatmap { variant: String },
    /// Mean needle recall by depth × variant (the trigger is not swept).
    DepthByVariant,
    /// Mean main score of one eval by folds survived, per variant.
    Folds { eval: String },
    /// Mean cost per unit per variant with 95% CI.
    CostBars,
}

/// One plot to draw: file stem (in `plots/`), title, kind.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotSpec {
    pub name: String,
    pub title: String,
    pub kind: PlotKind,
}

/// File-name-safe version of an id: ASCII alphanumerics, `-` and `_` kept, the rest `_`,
/// plus a short hash so distinct ids never collide.
pub fn file_stem(id: &str) -> String {
    let mut s: String = id
        .chars()
        .take(40)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let h = crate::metrics::stats::sub_seed(0, id);
    s.push_str(&format!("-{:06x}", h & 0xff_ffff));
    s
}

fn timeline_traces(model: &ReportModel) -> Vec<&str> {
    let mut traces: BTreeSet<&str> = BTreeSet::new();
    for s in &model.samples {
        if !s.timeline.is_empty() && s.error.is_none() {
            traces.insert(s.trace_id);
        }
    }
    traces.into_iter().collect()
}

fn numeric_param(s: &Row<'_>, key: &str) -> Option<f64> {
    let v = s.params.get(key)?;
    v.as_f64()
        .or_else(|| v.as_str().and_then(|t| t.parse().ok()))
}

/// Decide which plots have data. Returns the plots to draw and a note per skipped plot.
pub fn plan(model: &ReportModel) -> (Vec<PlotSpec>, Vec<String>) {
    let mut specs = Vec::new();
    let mut skipped = Vec::new();

    let traces = timeline_traces(model);
    if traces.is_empty() {
        skipped.push("context timeline: no sample recorded a timeline".to_string());
    }
    for t in traces.iter().take(MAX_TIMELINE_PLOTS) {
        specs.push(PlotSpec {
            name: format!("context-{}", file_stem(t)),
            title: format!("Context tokens per model call — {t}"),
            kind: PlotKind::Context {
                trace_id: t.to_string(),
            },
        });
    }
    if traces.len() > MAX_TIMELINE_PLOTS {
        skipped.push(format!(
            "context timeline: {} more trace(s) not plotted (first {MAX_TIMELINE_PLOTS} shown)",
            traces.len() - MAX_TIMELINE_PLOTS
        ));
    }

    let with_recall = model
        .variants
        .iter()
        .filter(|v| v.metric("needle.recall").is_some())
        .count();
    if with_recall == 0 {
        skipped.push("cost vs recall: no needle.recall scores".to_string());
    } else {
        specs.push(PlotSpec {
            name: "cost-vs-recall".into(),
            title: "Cost vs needle recall (Pareto front)".into(),
            kind: PlotKind::CostRecall,
        });
    }

    if data::triggers_swept(model) {
        let mut heat_variants = Vec::new();
        for v in &model.variants {
            let g = data::depth_trigger_grid(model, &v.variant);
            if g.cells.iter().flatten().any(Option::is_some) {
                heat_variants.push(v.variant.clone());
            }
        }
        if heat_variants.len() > MAX_HEATMAPS {
            skipped.push(format!(
                "needle heatmap: {} more variant(s) not plotted",
                heat_variants.len() - MAX_HEATMAPS
            ));
        }
        for v in heat_variants.into_iter().take(MAX_HEATMAPS) {
            specs.push(PlotSpec {
                name: format!("needle-heatmap-{}", file_stem(&v)),
                title: format!("Needle recall by depth × trigger — {v}"),
                kind: PlotKind::Heatmap { variant: v },
            });
        }
    } else if data::has_depths(model) {
        specs.push(PlotSpec {
            name: "needle-heatmap".into(),
            title: "Needle recall by depth × variant".into(),
            kind: PlotKind::DepthByVariant,
        });
    } else {
        skipped.push("needle heatmap: no needle sample has a numeric params.depth".to_string());
    }

    for f in data::fold_curves(model) {
        specs.push(PlotSpec {
            name: format!("folds-{}", file_stem(&f.eval)),
            title: {
                let mut t = format!("{} by folds survived", f.y_desc);
                t[..1].make_ascii_uppercase();
                t
            },
            kind: PlotKind::Folds { eval: f.eval },
        });
    }

    if model.variants.iter().any(|v| v.metric("cost").is_some()) {
        specs.push(PlotSpec {
            name: "cost-per-variant".into(),
            title: "Mean cost per unit (95% CI)".into(),
            kind: PlotKind::CostBars,
        });
    } else {
        skipped.push("cost per variant: no unit has a known price".to_string());
    }
    // A title quotes a trace id: its control characters are shown, in the SVG, the PNG and the
    // reports' links alike.
    for s in &mut specs {
        if let std::borrow::Cow::Owned(t) = crate::output::visible(&s.title) {
            s.title = t;
        }
    }
    (specs, skipped)
}

type DrawResult = Result<(), String>;

fn e<E: std::fmt::Debug>(err: E) -> String {
    format!("{err:?}")
}

/// Draw one plot as an SVG document.
pub fn render_svg(model: &ReportModel, spec: &PlotSpec) -> Result<String, String> {
    svg_of(model, spec, &Data::of(model, spec))
}

/// Draw one plot as PNG bytes.
pub fn render_png(model: &ReportModel, spec: &PlotSpec) -> Result<Vec<u8>, String> {
    png_of(model, spec, &Data::of(model, spec))
}

/// A plot drawn as SVG and, when asked, as PNG ([`render_both`]).
pub type Drawn = (Result<String, String>, Option<Result<Vec<u8>, String>>);

/// Draw one plot as SVG and, when `png`, as PNG bytes: the numbers it draws are computed once
/// for both.
pub fn render_both(model: &ReportModel, spec: &PlotSpec, png: bool) -> Drawn {
    let data = Data::of(model, spec);
    let svg = svg_of(model, spec, &data);
    (svg, png.then(|| png_of(model, spec, &data)))
}

/// The numbers a plot draws that take a pass over every sample (the grids and fold curves);
/// the other plots read the model's summaries as they draw.
enum Data {
    None,
    Grid(data::Grid),
    Folds(Option<data::FoldCurves>),
}

impl Data {
    fn of(model: &ReportModel, spec: &PlotSpec) -> Data {
        match &spec.kind {
            PlotKind::Heatmap { variant } => Data::Grid(data::depth_trigger_grid(model, variant)),
            PlotKind::DepthByVariant => Data::Grid(data::depth_variant_grid(model)),
            PlotKind::Folds { eval } => Data::Folds(
                data::fold_curves(model)
                    .into_iter()
                    .find(|f| &f.eval == eval),
            ),
            PlotKind::Context { .. } | PlotKind::CostRecall | PlotKind::CostBars => Data::None,
        }
    }
}

fn svg_of(model: &ReportModel, spec: &PlotSpec, data: &Data) -> Result<String, String> {
    register_font();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        draw(&root, model, spec, data)?;
        root.present().map_err(e)?;
    }
    Ok(xml_safe(buf))
}

/// An SVG document as plotters wrote it, with every character XML forbids (C0 controls but
/// tab, newline and CR; U+FFFE, U+FFFF) and every other control character
/// ([`crate::output::is_control`]: DEL, C1, bidi controls) shown as an escape (`\x1b`). plotters
/// escapes only `<>&"` in the text it writes (legend labels, axis descriptions), and its own
/// markup holds none of these characters, so what is replaced is always text.
fn xml_safe(svg: String) -> String {
    let bad = |c: char| {
        (crate::output::is_control(c) && !matches!(c, '\t' | '\n' | '\r'))
            || matches!(c, '\u{fffe}' | '\u{ffff}')
    };
    if !svg.contains(bad) {
        return svg;
    }
    let mut out = String::with_capacity(svg.len() + 64);
    for c in svg.chars() {
        if bad(c) {
            crate::output::push_visible(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

fn png_of(model: &ReportModel, spec: &PlotSpec, data: &Data) -> Result<Vec<u8>, String> {
    register_font();
    let (w, h) = SIZE;
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(&root, model, spec, data)?;
        root.present().map_err(e)?;
    }
    let mut png = Vec::new();
    use image::ImageEncoder;
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&rgb, w, h, image::ColorType::Rgb8)
        .map_err(e)?;
    Ok(png)
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    model: &ReportModel,
    spec: &PlotSpec,
    data: &Data,
) -> DrawResult {
    root.fill(&WHITE).map_err(e)?;
    match (&spec.kind, data) {
        (PlotKind::Context { trace_id }, _) => draw_context(root, model, trace_id, &spec.title),
        (PlotKind::CostRecall, _) => draw_cost_recall(root, model, &spec.title),
        (PlotKind::Heatmap { .. } | PlotKind::DepthByVariant, Data::Grid(g)) => {
            draw_grid(root, g, &spec.title)
        }
        (PlotKind::Folds { eval }, Data::Folds(f)) => match f {
            Some(f) => draw_folds(root, f, &spec.title),
            None => Err(format!("no sample of {eval} has a fold")),
        },
        (PlotKind::CostBars, _) => draw_cost_bars(root, model, &spec.title),
        (_, _) => Err("plot data of another kind".to_string()),
    }
}

/// Series colours, all readable on white (contrast ratio ≥ 3:1; no yellow or light cyan).
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),  // blue
    RGBColor(214, 39, 40),   // red
    RGBColor(44, 140, 44),   // green
    RGBColor(148, 103, 189), // purple
    RGBColor(200, 82, 0),    // dark orange
    RGBColor(140, 86, 75),   // brown
    RGBColor(204, 51, 136),  // magenta
    RGBColor(23, 128, 143),  // dark teal
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rectangles of placed labels (left, top, right, bottom).
    fn rects(
        points: &[(i32, i32)],
        widths: &[i32],
        spots: &[Option<(i32, i32)>],
    ) -> Vec<(i32, i32, i32, i32)> {
        spots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let (dx, dy) = (*s)?;
                let (x, y) = points[i];
                Some((x + dx, y + dy, x + dx + widths[i], y + dy + 15))
            })
            .collect()
    }

    #[test]
    fn labels_of_nearby_points_do_not_overprint_and_stay_in_the_plot() {
        // Two points on top of each other, one beside them, one far away.
        let pts = [(400, 200), (400, 200), (404, 201), (100, 380)];
        let widths = [
            label_width(8),
            label_width(3),
            label_width(12),
            label_width(2),
        ];
        let area = (60, 30, 880, 460);
        let spots = place_labels(&pts, &[7; 4], &widths, &[], area);
        assert!(spots.iter().all(Option::is_some), "{spots:?}");
        assert_eq!(
            spots[3],
            Some((9, -18)),
            "a far point keeps the default place"
        );
        let r = rects(&pts, &widths, &spots);
        for (i, a) in r.iter().enumerate() {
            assert!(a.0 >= area.0 && a.2 <= area.2 && a.1 >= area.1 && a.3 <= area.3);
            for b in &r[i + 1..] {
                let apart = a.2 <= b.0 || b.2 <= a.0 || a.3 <= b.1 || b.3 <= a.1;
                assert!(apart, "{a:?} overprints {b:?}");
            }
        }
    }

    #[test]
    fn labels_with_no_room_are_left_out_not_drawn_off_the_plot() {
        // 30 variants on one spot near the plot's top (a sweep's scatter stacked their labels
        // one row up each, off the top of the image).
        let pts = vec![(300, 45); 30];
        let widths = vec![label_width(3); 30];
        let area = (60, 30, 880, 460);
        let spots = place_labels(&pts, &[7; 30], &widths, &[], area);
        let r = rects(&pts, &widths, &spots);
        assert!(r
            .iter()
            .all(|a| a.1 >= area.1 && a.3 <= area.3 && a.0 >= area.0));
        let left_out = spots.iter().filter(|s| s.is_none()).count();
        // Below the point only (above is outside), six rows each side: 12 placed.
        assert_eq!(left_out, 18, "{spots:?}");
    }

    fn overlap(a: (i32, i32, i32, i32), b: (i32, i32, i32, i32)) -> bool {
        a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
    }

    /// The quickstart's scatter drew prompt-b's label over the ring of its Pareto point: the
    /// placement avoided dots (7 px) only.
    #[test]
    fn labels_keep_clear_of_the_pareto_rings() {
        let pts = [(400, 200), (600, 300)];
        let widths = [label_width(8), label_width(8)];
        let reach = [12, 7];
        let spots = place_labels(&pts, &reach, &widths, &[], (60, 30, 880, 460));
        for (r, (p, reach)) in rects(&pts, &widths, &spots)
            .iter()
            .zip(pts.iter().zip(reach))
        {
            let mark = (p.0 - reach, p.1 - reach, p.0 + reach, p.1 + reach);
            assert!(!overlap(*r, mark), "{r:?} over the mark {mark:?}");
        }
        // Beside the ring, on the row a dot's label takes.
        assert_eq!(spots[0], Some((14, -18)));
        assert_eq!(spots[1], Some((9, -18)));
    }

    /// A label never lands on the legend box: a point in the legend's corner puts its label
    /// elsewhere.
    #[test]
    fn labels_keep_clear_of_the_legend() {
        let legend = (65, 35, 400, 70);
        let pts = [(120, 80)];
        let widths = [label_width(10)];
        let spots = place_labels(&pts, &[7], &widths, &[legend], (60, 30, 880, 460));
        let r = rects(&pts, &widths, &spots);
        assert_eq!(r.len(), 1, "{spots:?}");
        assert!(!overlap(r[0], legend), "{r:?} over the legend");
        // Above-right would cross the legend's bottom (y 62 to 77 vs 70): below-right instead.
        assert_eq!(spots[0], Some((9, 4)));
    }

    #[test]
    fn pareto_front_keeps_only_undominated_points() {
        // (cost, recall)
        let pts = [(1.0, 0.5), (2.0, 0.9), (1.5, 0.4), (3.0, 0.9), (0.5, 0.2)];
        assert_eq!(pareto_front(&pts), vec![4, 0, 1]);
    }

    #[test]
    fn file_stems_are_safe_and_distinct() {
        let a = file_stem("../etc/passwd");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{a}"
        );
        assert_ne!(file_stem("a/b"), file_stem("a_b"));
    }
}

#[cfg(test)]
mod render_tests {
    use super::*;
    use crate::record::{RunInfo, Sample, TimelinePoint, TokensByRole, SCHEMA_VERSION};

    fn model() -> ReportModel {
        let mut info = RunInfo::new("r");
        info.variants = vec!["base".into(), "aggr".into()];
        let mut samples = vec![];
        for (vi, v) in ["base", "aggr"].iter().enumerate() {
            for d in [0.25, 0.75] {
                for t in [0.5, 0.85] {
                    let recall = if vi == 1 && d < 0.5 { 0.0 } else { 1.0 };
                    samples.push(Sample {
                        schema_version: SCHEMA_VERSION,
                        unit_id: format!("{v}/{d}/{t}"),
                        trace_id: "trace-1".into(),
                        variant: v.to_string(),
                        eval: "needle".into(),
                        sample: format!("depth={d}/trigger={t}"),
                        params: [
                            ("depth".to_string(), d.into()),
                            ("trigger".to_string(), t.into()),
                        ]
                        .into_iter()
                        .collect(),
                        repeat: 0,
                        scores: [("recall".to_string(), recall)].into_iter().collect(),
                        passed: Some(recall == 1.0),
                        tokens: TokensByRole::default(),
                        cost_usd: crate::record::CostByRole {
                            agent: Some(0.01 * (vi + 1) as f64 + d / 100.0),
                            summarizer: Some(0.0),
                            judge: Some(0.0),
                            eval_agent: Some(0.0),
                        },
                        compactions: Default::default(),
                        latency_ms: 1,
                        error: None,
                        evidence: serde_json::Value::Null,
                        timeline: (0..6)
                            .map(|i| TimelinePoint {
                                trace_index: 2 * i + 1,
                                tokens: 1000 * (i as u64 + 1) / (vi as u64 + 1),
                                reference_tokens: Some(1000 * (i as u64 + 1)),
                                events: if vi == 1 && i == 3 {
                                    vec!["summarized".into()]
                                } else {
                                    vec![]
                                },
                                details: vec![],
                            })
                            .collect(),
                        summaries: vec![],
                    });
                }
            }
        }
        ReportModel::build(&info, samples)
    }

    #[test]
    fn plan_finds_every_plot_when_data_exists() {
        let m = model();
        let (specs, skipped) = plan(&m);
        let kinds: Vec<&str> = specs
            .iter()
            .map(|s| s.name.split('-').next().unwrap_or(""))
            .collect();
        assert_eq!(
            kinds,
            ["context", "cost", "needle", "needle", "cost"],
            "{specs:?}"
        );
        assert!(skipped.is_empty(), "{skipped:?}");
    }

    #[test]
    fn plan_skips_plots_without_data_with_a_note() {
        let mut info = RunInfo::new("r");
        info.variants = vec!["base".into(), "aggr".into()];
        let samples = model()
            .samples
            .iter()
            .map(|r| {
                let mut s = r.to_sample();
                s.timeline.clear();
                s.params.clear();
                s
            })
            .collect();
        let m = ReportModel::build(&info, samples);
        let (specs, skipped) = plan(&m);
        assert!(specs
            .iter()
            .all(|s| !matches!(s.kind, PlotKind::Context { .. } | PlotKind::Heatmap { .. })));
        assert_eq!(skipped.len(), 2, "{skipped:?}");
    }

    #[test]
    fn png_renders_text_with_the_vendored_font() {
        let m = model();
        let (specs, _) = plan(&m);
        for spec in &specs {
            let png = render_png(&m, spec).unwrap();
            assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{}", spec.name);
            let svg = render_svg(&m, spec).unwrap();
            assert!(
                svg.contains("<svg") && svg.contains("</svg>"),
                "{}",
                spec.name
            );
        }
        // The timeline plot names both variants in its legend.
        let svg = render_svg(&m, &specs[0]).unwrap();
        assert!(
            svg.contains(">\nbase\n<") && svg.contains(">\naggr\n<"),
            "{svg}"
        );
    }

    #[test]
    fn svgs_hold_no_character_xml_forbids() {
        // A trace id (in the timeline's title) and a variant (in every legend) with a terminal
        // escape sequence, bidi and DEL, C1 and noncharacters.
        let hostile = "t\x1b[2J\x1b]0;title\x07\0\r\u{7f}\u{9b}\u{202e}\u{fffe}";
        let mut info = RunInfo::new("r");
        info.variants = vec!["base".into(), format!("v{hostile}")];
        let samples = model()
            .samples
            .iter()
            .map(|r| {
                let mut s = r.to_sample();
                s.trace_id = format!("trace{hostile}");
                if s.variant == "aggr" {
                    s.variant = format!("v{hostile}");
                }
                s
            })
            .collect();
        let m = ReportModel::build(&info, samples);
        let (specs, _) = plan(&m);
        assert!(
            specs[0].title.contains("tracet\\x1b[2J"),
            "{}",
            specs[0].title
        );
        for spec in &specs {
            let svg = render_svg(&m, spec).unwrap();
            let bad: Vec<char> = svg
                .chars()
                .filter(|&c| {
                    (c < ' ' && !matches!(c, '\t' | '\n' | '\r'))
                        || matches!(c, '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}')
                        || crate::output::is_control(c) && c > '\u{7f}'
                })
                .collect();
            assert!(bad.is_empty(), "{}: {bad:?}", spec.name);
        }
        // The timeline shows the id's escape in its title and the variant's in its legend.
        let svg = render_svg(&m, &specs[0]).unwrap();
        assert!(
            svg.contains("tracet\\x1b[2J\\x1b]0;title\\x07\\x00"),
            "{svg}"
        );
        assert!(
            svg.contains("vt\\x1b[2J") && svg.contains("\\u{fffe}"),
            "{svg}"
        );
    }

    #[test]
    fn a_scatter_of_many_variants_on_one_spot_names_the_unlabelled_in_its_legend() {
        // 40 variants with base's numbers: every point on one spot, room for a few labels.
        let m = model();
        let names: Vec<String> = (0..40).map(|i| format!("variant-{i:02}")).collect();
        let mut info = RunInfo::new("r");
        info.variants = names.clone();
        let samples = names
            .iter()
            .flat_map(|v| {
                m.samples
                    .iter()
                    .filter(|r| r.variant == "base")
                    .map(move |r| {
                        let mut s = r.to_sample();
                        s.unit_id = format!("{v}/{}", s.unit_id);
                        s.variant = v.clone();
                        s
                    })
            })
            .collect();
        let m = ReportModel::build(&info, samples);
        let (specs, _) = plan(&m);
        let spec = specs.iter().find(|s| s.name == "cost-vs-recall").unwrap();
        let svg = render_svg(&m, spec).unwrap();
        assert!(svg.contains("not labelled (no room): "), "{svg}");
        let labelled = names
            .iter()
            .filter(|n| svg.contains(&format!("\n{n}\n</text>")))
            .count();
        assert!(labelled > 0 && labelled < 40, "{labelled} labelled");
    }

    #[test]
    fn coinciding_timelines_are_named_in_the_legend() {
        let m = model();
        // aggr replays exactly like base: its line lies on base's.
        let base = m.samples.get(0).timeline.to_vec();
        let samples = m
            .samples
            .iter()
            .map(|r| {
                let mut s = r.to_sample();
                if s.variant == "aggr" {
                    s.timeline = base.clone();
                }
                s
            })
            .collect();
        let mut info = RunInfo::new("r");
        info.variants = vec!["base".into(), "aggr".into()];
        let m = ReportModel::build(&info, samples);
        let (specs, _) = plan(&m);
        let svg = render_svg(&m, &specs[0]).unwrap();
        assert!(svg.contains(">\naggr (= base)\n<"), "{svg}");
    }
}
