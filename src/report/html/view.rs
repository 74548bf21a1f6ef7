//! One sample's full view (a collapsible `<details>` with the sample's anchor): links to the
//! same unit in the other variants, scores, error, the needle questions with the expected
//! value, the answer and the tool calls, the evidence as JSON, the summaries of each fold (beside
//! the baseline's of the same unit and fold, with a word diff) and the context timeline.

use super::samples::{anchor, compactions, folds_shown, Status};
use super::{diff, timeline, Esc, Fragment, SummaryTexts};
use crate::record::{Row, SummaryRecord};
use crate::report::model::{fmt_num, ReportModel};
use maud::{display, html};

/// Evidence JSON longer than this is cut.
const MAX_EVIDENCE_CHARS: usize = 4000;
/// Summary text longer than this is cut (the full text is in the run directory).
const MAX_SUMMARY_CHARS: usize = 20_000;

/// The collapsible full view of `model.samples.get(i)`; `peers` are the shown units of the same
/// pairing key (this one included).
pub fn sample(model: &ReportModel, i: usize, peers: &[usize], texts: &SummaryTexts) -> Fragment {
    let s = &model.samples.get(i);
    let status = Status::of(s);
    let compact = compactions(s);
    let others: Vec<usize> = peers.iter().copied().filter(|&j| j != i).collect();
    let mut why = Vec::new();
    if status == Status::Flagged {
        if let Some(n) = s.scores.get("summary_failures").filter(|n| **n > 0.0) {
            why.push(format!("{n} summary failure(s) recorded"));
        }
        if let Some(n) = s.compactions.get("futile").filter(|n| **n > 0) {
            why.push(format!("{n} futile compaction(s)"));
        }
        if let Some(n) = s.compactions.get("overflow").filter(|n| **n > 0) {
            why.push(format!("{n} request(s) over the window after compaction"));
        }
        if let Some(n) = s.scores.get("flagged_calls").filter(|n| **n > 0.0) {
            why.push(format!("{n} call(s) larger than without compression"));
        }
        if let Some(n) = s.scores.get("step_limit").filter(|n| **n > 0.0) {
            why.push(format!("{n} question(s) out of max_steps"));
        }
        if let Some(n) = s.scores.get("prompt_truncated").filter(|n| **n > 0.0) {
            why.push(format!("{n} call(s) whose prompt the server cut"));
        }
    }
    html! {
        details class="sample" id=(anchor(model.index_of(i))) {
            summary {
                span class=(format!("st st-{}", status.label())) { (status.label()) } " "
                b { (s.variant) } " · trace " code { (s.trace_id) } " · " (s.eval) " "
                code { (s.sample) } " #" (s.repeat)
                @if !compact.is_empty() { " · " (compact) }
            }
            div class="body" {
                "\n"
                p class="muted" {
                    "unit " code { (s.unit_id) }
                    @if !others.is_empty() {
                        " · same unit in "
                        @for (k, &j) in others.iter().enumerate() {
                            @if k > 0 { ", " }
                            a href=(format!("#{}", anchor(model.index_of(j)))) { (model.samples.get(j).variant) }
                        }
                    }
                }
                "\n"
                @if status == Status::Flagged {
                    p class="alert" { "flagged: " (why.join("; ")) } "\n"
                }
                @if let Some(e) = &s.error {
                    p class="alert" { "error " (e.kind) ": " span class="pre" { (e.message) } }
                    "\n"
                }
                @if !s.scores.is_empty() || s.passed.is_some() {
                    p {
                        "scores: "
                        @for (k, (name, v)) in s.scores.iter().enumerate() {
                            @if k > 0 { ", " }
                            (name) " = " (fmt_num(*v))
                        }
                        @if let Some(p) = s.passed {
                            @if !s.scores.is_empty() { ", " }
                            "passed = " (display(p))
                        }
                    }
                    "\n"
                }
                @if !model.has_detail(i) {
                    p class="muted" {
                        "Timeline, evidence and summaries not loaded for this sample (see \
                         samples.jsonl)."
                    }
                } @else {
                    (evidence(s.evidence))
                    (summaries(s, base_peer(model, s, peers).as_ref(), texts))
                    @if !s.timeline.is_empty() {
                        h4 { "Context timeline" }
                        p class="muted" {
                            "Tokens sent at each model call (red: a compaction happened at that \
                             call; dashed: the same call with no compression)."
                        }
                        (timeline::svg(s))
                        (timeline::table(s))
                    }
                }
            }
        }
        "\n"
    }
}

/// The baseline's unit among `peers`, when `s` is not the baseline's own.
fn base_peer<'a>(model: &'a ReportModel, s: &Row<'_>, peers: &[usize]) -> Option<Row<'a>> {
    let b = model.baseline.as_deref().filter(|b| *b != s.variant)?;
    peers
        .iter()
        .map(|&j| model.samples.get(j))
        .find(|p| p.variant == b)
}

fn json_text(v: &serde_json::Value, max: usize) -> String {
    let mut text = match v {
        serde_json::Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    if text.chars().count() > max {
        text = text.chars().take(max).collect::<String>() + "\n…(cut)";
    }
    text
}

/// Needle answers (question, expected value, answer, tool calls) as a table; any other
/// evidence as JSON.
fn evidence(ev: &serde_json::Value) -> Fragment {
    if ev.is_null() {
        return html! {};
    }
    let answers = ev
        .get("answers")
        .and_then(|a| a.as_array())
        .map(Vec::as_slice)
        .unwrap_or_default();
    html! {
        @for a in answers {
            (answer(a))
        }
        details { summary { "evidence (JSON)" } pre { (Esc(&json_text(ev, MAX_EVIDENCE_CHARS))) } }
        "\n"
    }
}

/// One needle answer: question, expected value, answer, whether it was recovered, tool calls.
fn answer(a: &serde_json::Value) -> Fragment {
    let field = |k: &str| a.get(k).map(|v| json_text(v, 2000)).unwrap_or_default();
    let question = match a.get("question") {
        Some(q) => json_text(q, 2000),
        None => format!("(key) {}", field("key")),
    };
    let recovered = a.get("recovered").and_then(|v| v.as_bool());
    let tools = a.get("tool_uses").and_then(|t| t.as_array());
    html! {
        table class="qa" {
            tbody {
                tr { th { "question" } td class="pre" { (Esc(&question)) } }
                tr { th { "expected" } td { code { (Esc(&field("expected"))) } } }
                tr { th { "answer" } td class="pre" { (Esc(&field("answer"))) } }
                tr {
                    th { "recovered" }
                    td class=[(recovered == Some(false)).then_some("alert")] {
                        (match recovered {
                            Some(true) => "yes",
                            Some(false) => "no",
                            None => "–",
                        })
                    }
                }
                @if let Some(tools) = tools {
                    tr {
                        th { "tool calls" }
                        td {
                            (tools.len()) " call(s)"
                            ol class="tools" { @for t in tools { (tool_call(t)) } }
                        }
                    }
                }
            }
        }
        "\n"
    }
}

fn tool_call(t: &serde_json::Value) -> Fragment {
    let text = |k: &str, max: usize| t.get(k).map(|v| json_text(v, max)).unwrap_or_default();
    let err = t.get("is_error").and_then(|v| v.as_bool()) == Some(true);
    html! {
        li {
            code { (Esc(&text("name", 200))) } " " code class="pre" { (Esc(&text("arguments", 1000))) }
            @if err { " " span class="alert" { "(error)" } }
            div class="pre result" { (Esc(&text("result_head", 2000))) }
        }
    }
}

/// The text of a summary record: inline, or read from its file into `texts`.
fn summary_text<'a>(r: &'a SummaryRecord, texts: &'a SummaryTexts) -> Option<String> {
    let t = r.text.as_ref().or_else(|| texts.get(&r.text_digest))?;
    Some(if t.chars().count() > MAX_SUMMARY_CHARS {
        t.chars().take(MAX_SUMMARY_CHARS).collect::<String>() + "\n…(cut)"
    } else {
        t.clone()
    })
}

fn summary_head(variant: &str, r: &SummaryRecord) -> Fragment {
    html! {
        b { (variant) } " fold " (r.fold) " at message " (r.trace_index) " · " (r.tokens_in)
        " → " (r.tokens_out) " tokens · prompt " code { (short_digest(&r.prompt_digest)) }
    }
}

fn short_digest(d: &str) -> &str {
    let hex = d.strip_prefix("sha256:").unwrap_or(d);
    hex.get(..12).unwrap_or(hex)
}

fn missing_text(r: &SummaryRecord) -> Fragment {
    html! {
        span class="muted" {
            "(text not loaded: " (r.file.as_deref().unwrap_or(&r.text_digest)) ")"
        }
    }
}

/// One side of a fold's A/B view: the summary of `variant` (`r`), or a note that it has none.
fn side(
    r: Option<&SummaryRecord>,
    variant: &str,
    fold: usize,
    text: Fragment,
    texts: &SummaryTexts,
) -> Fragment {
    html! {
        div {
            @match r {
                None => p class="muted" { (variant) " has no fold " (fold) },
                Some(r) if r.text.is_none() && !texts.contains_key(&r.text_digest) => {
                    p { (summary_head(variant, r)) }
                    (missing_text(r))
                }
                Some(r) => {
                    p { (summary_head(variant, r)) }
                    div class="pre summary" { (text) }
                }
            }
        }
    }
}

/// The summaries of `s`, fold by fold; beside the baseline's of the same unit and fold, with a
/// word diff, when the baseline's unit is shown too.
fn summaries(s: &Row<'_>, base: Option<&Row<'_>>, texts: &SummaryTexts) -> Fragment {
    let base = base.filter(|b| !b.summaries.is_empty());
    if s.summaries.is_empty() && base.is_none() {
        return html! {};
    }
    let folds = folds_shown(s.summaries);
    let heading = html! {
        h4 {
            "Summaries (" (s.summaries.len()) " fold(s)"
            @if folds.len() < s.summaries.len() {
                ", " (folds.len()) " shown: the first " (folds.len() - 1) " and the last"
            }
            ")"
        }
    };
    let Some(b) = base else {
        return html! {
            (heading)
            @for (k, r) in folds.into_iter().enumerate() {
                details class="fold" open[k == 0] {
                    summary { "fold " (r.fold) }
                    p { (summary_head(s.variant, r)) }
                    @match summary_text(r, texts) {
                        Some(t) => div class="pre summary" { (Esc(&t)) },
                        None => (missing_text(r)),
                    }
                }
                "\n"
            }
        };
    };
    let fold_nums: Vec<usize> = if s.summaries.is_empty() {
        folds_shown(b.summaries).iter().map(|r| r.fold).collect()
    } else {
        folds.iter().map(|r| r.fold).collect()
    };
    html! {
        (heading)
        p class="muted" {
            "Side by side with the baseline's summary of the same unit and fold: " del { "struck" }
            " words only the baseline's has, " ins { "underlined" } " words only this variant's has."
        }
        @for (k, f) in fold_nums.into_iter().enumerate() {
            @let ra = b.summaries.iter().find(|r| r.fold == f);
            @let rb = s.summaries.iter().find(|r| r.fold == f);
            @let ta = ra.and_then(|r| summary_text(r, texts));
            @let tb = rb.and_then(|r| summary_text(r, texts));
            // Marked words when both texts are there and the diff is small enough; else text.
            @let marked = match (&ta, &tb) {
                (Some(a), Some(b)) => Some(diff::side_by_side(a, b)),
                _ => None,
            };
            @let too_long = matches!(marked, Some(None));
            @let (ha, hb) = match marked.flatten() {
                Some(pair) => pair,
                None => (
                    html! { (Esc(&ta.unwrap_or_default())) },
                    html! { (Esc(&tb.unwrap_or_default())) },
                ),
            };
            details class="fold" open[k == 0] {
                summary { "fold " (f) }
                @if too_long { p class="muted" { "too long to diff word by word" } }
                div class="ab" {
                    (side(ra, b.variant, f, ha, texts))
                    (side(rb, s.variant, f, hb, texts))
                }
            }
            "\n"
        }
    }
}
