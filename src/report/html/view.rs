//! One sample's full view (a collapsible `<details>` with the sample's anchor): links to the
//! same unit in the other variants, scores, error, the needle questions with the expected
//! value, the answer and the tool calls, the evidence as JSON, the summaries of each fold (beside
//! the baseline's of the same unit and fold, with a word diff) and the context timeline.

use super::samples::{anchor, compactions, folds_shown, Status};
use super::{diff, escape, timeline, SummaryTexts};
use crate::record::{Row, SummaryRecord};
use crate::report::model::{fmt_num, ReportModel};
use std::fmt::Write;

/// Evidence JSON longer than this is cut.
const MAX_EVIDENCE_CHARS: usize = 4000;
/// Summary text longer than this is cut (the full text is in the run directory).
const MAX_SUMMARY_CHARS: usize = 20_000;

/// The collapsible full view of `model.samples.get(i)`; `peers` are the shown units of the same
/// pairing key (this one included).
pub fn sample(
    out: &mut String,
    model: &ReportModel,
    i: usize,
    peers: &[usize],
    texts: &SummaryTexts,
) {
    let s = &model.samples.get(i);
    let status = Status::of(s);
    let _ = writeln!(
        out,
        "<details class=\"sample\" id=\"{}\"><summary><span class=\"st st-{}\">{}</span> \
         <b>{}</b> · trace <code>{}</code> · {} <code>{}</code> #{}{}</summary><div class=\"body\">",
        anchor(i),
        status.label(),
        status.label(),
        escape(s.variant),
        escape(s.trace_id),
        escape(s.eval),
        escape(s.sample),
        s.repeat,
        match compactions(s) {
            c if c.is_empty() => String::new(),
            c => format!(" · {}", escape(&c)),
        }
    );
    let _ = write!(
        out,
        "<p class=\"muted\">unit <code>{}</code>",
        escape(s.unit_id)
    );
    let others: Vec<&usize> = peers.iter().filter(|&&j| j != i).collect();
    if !others.is_empty() {
        out.push_str(" · same unit in ");
        for (k, &&j) in others.iter().enumerate() {
            let _ = write!(
                out,
                "{}<a href=\"#{}\">{}</a>",
                if k > 0 { ", " } else { "" },
                anchor(j),
                escape(model.samples.get(j).variant)
            );
        }
    }
    out.push_str("</p>\n");
    if status == Status::Flagged {
        let mut why = Vec::new();
        if let Some(n) = s.scores.get("summary_failures").filter(|n| **n > 0.0) {
            why.push(format!("{n} summary failure(s) recorded"));
        }
        if let Some(n) = s.compactions.get("futile").filter(|n| **n > 0) {
            why.push(format!("{n} futile compaction(s)"));
        }
        let _ = writeln!(out, "<p class=\"alert\">flagged: {}</p>", why.join("; "));
    }
    if let Some(e) = &s.error {
        let _ = writeln!(
            out,
            "<p class=\"alert\">error {}: <span class=\"pre\">{}</span></p>",
            escape(&e.kind),
            escape(&e.message)
        );
    }
    if !s.scores.is_empty() || s.passed.is_some() {
        out.push_str("<p>scores: ");
        let mut parts: Vec<String> = s
            .scores
            .iter()
            .map(|(k, v)| format!("{} = {}", escape(k), escape(&fmt_num(*v))))
            .collect();
        if let Some(p) = s.passed {
            parts.push(format!("passed = {p}"));
        }
        out.push_str(&parts.join(", "));
        out.push_str("</p>\n");
    }
    if !model.has_detail(i) {
        out.push_str(
            "<p class=\"muted\">Timeline, evidence and summaries not loaded for this sample \
             (see samples.jsonl).</p></div></details>\n",
        );
        return;
    }
    evidence(out, s.evidence);
    let base = model.baseline.as_deref().filter(|b| *b != s.variant);
    let base_peer = base.and_then(|b| {
        peers
            .iter()
            .map(|&j| model.samples.get(j))
            .find(|p| p.variant == b)
    });
    summaries(out, s, base_peer.as_ref(), texts);
    if !s.timeline.is_empty() {
        out.push_str(
            "<h4>Context timeline</h4><p class=\"muted\">Tokens sent at each model call (red: a \
             compaction happened at that call; dashed: the same call with no compression).</p>",
        );
        out.push_str(&timeline::svg(s));
        timeline::table(out, s);
    }
    out.push_str("</div></details>\n");
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
fn evidence(out: &mut String, ev: &serde_json::Value) {
    if ev.is_null() {
        return;
    }
    if let Some(answers) = ev.get("answers").and_then(|a| a.as_array()) {
        for a in answers {
            let field = |k: &str| a.get(k).map(|v| json_text(v, 2000)).unwrap_or_default();
            let question = match a.get("question") {
                Some(q) => json_text(q, 2000),
                None => format!("(key) {}", field("key")),
            };
            let recovered = a.get("recovered").and_then(|v| v.as_bool());
            let _ = write!(
                out,
                "<table class=\"qa\"><tbody><tr><th>question</th><td class=\"pre\">{}</td></tr>\
                 <tr><th>expected</th><td><code>{}</code></td></tr><tr><th>answer</th>\
                 <td class=\"pre\">{}</td></tr><tr><th>recovered</th><td{}>{}</td></tr>",
                escape(&question),
                escape(&field("expected")),
                escape(&field("answer")),
                if recovered == Some(false) {
                    " class=\"alert\""
                } else {
                    ""
                },
                match recovered {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "–",
                }
            );
            if let Some(tools) = a.get("tool_uses").and_then(|t| t.as_array()) {
                let _ = write!(
                    out,
                    "<tr><th>tool calls</th><td>{} call(s)<ol class=\"tools\">",
                    tools.len()
                );
                for t in tools {
                    let name = t.get("name").map(|v| json_text(v, 200)).unwrap_or_default();
                    let args = t
                        .get("arguments")
                        .map(|v| json_text(v, 1000))
                        .unwrap_or_default();
                    let result = t
                        .get("result_head")
                        .map(|v| json_text(v, 2000))
                        .unwrap_or_default();
                    let err = t.get("is_error").and_then(|v| v.as_bool()) == Some(true);
                    let _ = write!(
                        out,
                        "<li><code>{}</code> <code class=\"pre\">{}</code>{}<div class=\"pre \
                         result\">{}</div></li>",
                        escape(&name),
                        escape(&args),
                        if err {
                            " <span class=\"alert\">(error)</span>"
                        } else {
                            ""
                        },
                        escape(&result)
                    );
                }
                out.push_str("</ol></td></tr>");
            }
            out.push_str("</tbody></table>\n");
        }
    }
    let _ = writeln!(
        out,
        "<details><summary>evidence (JSON)</summary><pre>{}</pre></details>",
        escape(&json_text(ev, MAX_EVIDENCE_CHARS))
    );
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

fn summary_head(variant: &str, r: &SummaryRecord) -> String {
    format!(
        "<b>{}</b> fold {} at message {} · {} → {} tokens · prompt <code>{}</code>",
        escape(variant),
        r.fold,
        r.trace_index,
        r.tokens_in,
        r.tokens_out,
        escape(short_digest(&r.prompt_digest))
    )
}

fn short_digest(d: &str) -> &str {
    let hex = d.strip_prefix("sha256:").unwrap_or(d);
    hex.get(..12).unwrap_or(hex)
}

fn missing_text(r: &SummaryRecord) -> String {
    format!(
        "<span class=\"muted\">(text not loaded: {})</span>",
        escape(r.file.as_deref().unwrap_or(&r.text_digest))
    )
}

/// The summaries of `s`, fold by fold; beside the baseline's of the same unit and fold, with a
/// word diff, when the baseline's unit is shown too.
fn summaries(out: &mut String, s: &Row<'_>, base: Option<&Row<'_>>, texts: &SummaryTexts) {
    let base = base.filter(|b| !b.summaries.is_empty());
    if s.summaries.is_empty() && base.is_none() {
        return;
    }
    let folds = folds_shown(s.summaries);
    let _ = write!(
        out,
        "<h4>Summaries ({} fold(s){})</h4>",
        s.summaries.len(),
        if folds.len() < s.summaries.len() {
            format!(
                ", {} shown: the first {} and the last",
                folds.len(),
                folds.len() - 1
            )
        } else {
            String::new()
        }
    );
    if let Some(b) = base {
        out.push_str(
            "<p class=\"muted\">Side by side with the baseline's summary of the same unit and \
             fold: <del>struck</del> words only the baseline's has, <ins>underlined</ins> words \
             only this variant's has.</p>",
        );
        let mut fold_nums: Vec<usize> = folds.iter().map(|r| r.fold).collect();
        if s.summaries.is_empty() {
            fold_nums = folds_shown(b.summaries).iter().map(|r| r.fold).collect();
        }
        for (k, f) in fold_nums.into_iter().enumerate() {
            let ra = b.summaries.iter().find(|r| r.fold == f);
            let rb = s.summaries.iter().find(|r| r.fold == f);
            let (ta, tb) = (
                ra.and_then(|r| summary_text(r, texts)),
                rb.and_then(|r| summary_text(r, texts)),
            );
            let (ha, hb, note) = match (&ta, &tb) {
                (Some(a), Some(b)) => match diff::side_by_side(a, b) {
                    Some((ha, hb)) => (ha, hb, ""),
                    None => (
                        escape(a),
                        escape(b),
                        "<p class=\"muted\">too long to diff word by word</p>",
                    ),
                },
                _ => (
                    ta.as_deref().map(escape).unwrap_or_default(),
                    tb.as_deref().map(escape).unwrap_or_default(),
                    "",
                ),
            };
            let side = |r: Option<&SummaryRecord>, v: &str, html: &str| match r {
                None => format!(
                    "<div><p class=\"muted\">{} has no fold {f}</p></div>",
                    escape(v)
                ),
                Some(r)
                    if html.is_empty()
                        && r.text.is_none()
                        && !texts.contains_key(&r.text_digest) =>
                {
                    format!(
                        "<div><p>{}</p>{}</div>",
                        summary_head(v, r),
                        missing_text(r)
                    )
                }
                Some(r) => format!(
                    "<div><p>{}</p><div class=\"pre summary\">{html}</div></div>",
                    summary_head(v, r)
                ),
            };
            let _ = writeln!(
                out,
                "<details class=\"fold\"{}><summary>fold {f}</summary>{note}<div class=\"ab\">{}{}</div></details>",
                if k == 0 { " open" } else { "" },
                side(ra, b.variant, &ha),
                side(rb, s.variant, &hb)
            );
        }
        return;
    }
    for (k, r) in folds.into_iter().enumerate() {
        let body = match summary_text(r, texts) {
            Some(t) => format!("<div class=\"pre summary\">{}</div>", escape(&t)),
            None => missing_text(r),
        };
        let _ = writeln!(
            out,
            "<details class=\"fold\"{}><summary>fold {}</summary><p>{}</p>{body}</details>",
            if k == 0 { " open" } else { "" },
            r.fold,
            summary_head(s.variant, r)
        );
    }
}
