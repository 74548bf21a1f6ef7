//! A sample's context timeline: a bar chart of the tokens sent at each model call (inline SVG,
//! compaction calls in red, the uncompressed reference dashed) and the table of what happened
//! at each call.

use super::{escape, th_row};
use crate::record::Row;
use std::fmt::Write;

/// Top of a sparkline's scale: the largest value, unless a few outliers would flatten every
/// other bar; then 1.5 × the 90th percentile, and the bars above it are drawn clipped (with a
/// black cap, and said so in their tooltip and in a label).
pub fn sparkline_scale(values: &[u64]) -> (f64, bool) {
    let max = values.iter().copied().max().unwrap_or(1).max(1) as f64;
    let mut sorted: Vec<u64> = values.to_vec();
    sorted.sort_unstable();
    if sorted.len() < 5 {
        return (max, false);
    }
    let p90 = sorted[(sorted.len() * 9 / 10).min(sorted.len() - 1)] as f64;
    let cap = (p90 * 1.5).max(1.0);
    if max > 2.0 * cap {
        (cap, true)
    } else {
        (max, false)
    }
}

/// The bar chart of `s.timeline` (empty timeline: an empty chart).
pub fn svg(s: &Row<'_>) -> String {
    let (w, h) = (720.0f64, 120.0f64);
    let n = s.timeline.len().max(1) as f64;
    let values: Vec<u64> = s
        .timeline
        .iter()
        .flat_map(|p| std::iter::once(p.tokens).chain(p.reference_tokens))
        .collect();
    let (max, clipped) = sparkline_scale(&values);
    let bw = w / n;
    let mut svg = format!(
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"context tokens per model call\">"
    );
    let mut reference = String::new();
    for (i, p) in s.timeline.iter().enumerate() {
        let x = i as f64 * bw;
        let over = p.tokens as f64 > max;
        let bh = (p.tokens as f64).min(max) / max * (h - 4.0);
        let fill = if p.events.is_empty() {
            "#4c78a8"
        } else {
            "#d62728"
        };
        let _ = write!(
            svg,
            "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{bh:.2}\" fill=\"{fill}\"><title>call {} (message {}): {} tokens{}{}</title></rect>",
            h - bh,
            (bw - 0.5).max(0.5),
            i + 1,
            p.trace_index,
            p.tokens,
            if over { " (bar clipped)" } else { "" },
            if p.events.is_empty() {
                String::new()
            } else {
                format!("; {}", escape(&p.events.join(", ")))
            }
        );
        if over {
            let _ = write!(
                svg,
                "<rect x=\"{x:.2}\" y=\"0\" width=\"{:.2}\" height=\"4\" fill=\"#000\"/>",
                (bw - 0.5).max(0.5)
            );
        }
        if let Some(r) = p.reference_tokens {
            let y = h - (r as f64).min(max) / max * (h - 4.0);
            let _ = write!(reference, "{:.2},{y:.2} {:.2},{y:.2} ", x, x + bw);
        }
    }
    if !reference.is_empty() {
        let _ = write!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#555\" stroke-dasharray=\"4 3\"/>",
            reference.trim_end()
        );
    }
    if clipped {
        let _ = write!(
            svg,
            "<text x=\"{:.0}\" y=\"14\" text-anchor=\"end\" font-size=\"11\" fill=\"#000\">scale \
             clipped at {max:.0} tokens; black caps mark taller calls</text>",
            w - 4.0
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The per-call table of `s.timeline`, in a collapsed `<details>`.
pub fn table(out: &mut String, s: &Row<'_>) {
    let events = s.timeline.iter().filter(|p| !p.events.is_empty()).count();
    let _ = write!(
        out,
        "<details class=\"calls\"><summary>{} model call(s), {events} with a compaction event\
         </summary><div class=\"scroll\"><table class=\"timeline-table\">",
        s.timeline.len()
    );
    th_row(
        out,
        [
            "call",
            "message",
            "tokens",
            "no compression",
            "events",
            "what happened",
        ],
    );
    out.push_str("<tbody>");
    for (i, p) in s.timeline.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
            i + 1,
            p.trace_index,
            p.tokens
        );
        match p.reference_tokens {
            Some(r) => {
                let _ = write!(out, "<td class=\"num\">{r}</td>");
            }
            None => out.push_str("<td>–</td>"),
        }
        if p.events.is_empty() {
            out.push_str("<td></td>");
        } else {
            let _ = write!(
                out,
                "<td class=\"ev\">{}</td>",
                escape(&p.events.join(", "))
            );
        }
        let _ = write!(
            out,
            "<td class=\"pre\">{}</td></tr>",
            escape(&p.details.join("\n"))
        );
    }
    out.push_str("</tbody></table></div></details>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_scale_clips_a_lone_spike_only() {
        let mut v = vec![1000u64; 30];
        assert_eq!(sparkline_scale(&v), (1000.0, false));
        v.push(252_000);
        let (top, clipped) = sparkline_scale(&v);
        assert!(clipped);
        assert_eq!(top, 1500.0);
        assert_eq!(
            sparkline_scale(&[1, 2, 300]),
            (300.0, false),
            "too few to call outliers"
        );
    }
}
