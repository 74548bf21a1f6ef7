//! A sample's context timeline: a bar chart of the tokens sent at each model call (inline SVG,
//! compaction calls in red, the uncompressed reference dashed) and the table of what happened
//! at each call.

use super::{th_row, Esc, Fragment};
use crate::record::Row;
use maud::{html, PreEscaped};
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

/// `x` with two decimals, as `format!("{x:.2}")` writes it. That goes through exact decimal
/// conversion, the largest part of drawing the timelines; for a non-negative `x` below 10^7
/// whose hundredths are not within 10^-6 of a tie, rounding `x * 100` to the nearest integer
/// decides the same digits (the product is off by at most 2^-23 there), and the rest goes to
/// `format!`.
fn fixed2(x: f64) -> String {
    let mut out = String::with_capacity(12);
    push_fixed2(&mut out, x);
    out
}

/// [`fixed2`] rendered straight into the page (digits only: nothing to escape), not through a
/// string of its own (a timeline's bars write four numbers each).
#[derive(Clone, Copy)]
struct Fixed2(f64);

impl maud::Render for Fixed2 {
    fn render_to(&self, out: &mut String) {
        push_fixed2(out, self.0);
    }
}

/// [`fixed2`], appended to `out`.
fn push_fixed2(out: &mut String, x: f64) {
    if x.is_sign_positive() && x < 1e7 {
        let y = x * 100.0;
        let k = y.floor();
        let frac = y - k;
        if (frac - 0.5).abs() > 1e-6 {
            let k = (if frac > 0.5 { k + 1.0 } else { k }) as u64;
            // The digits of k / 100, written by hand (this runs for every bar of every timeline).
            let mut digits = [0u8; 20];
            let (mut at, mut int) = (digits.len(), k / 100);
            loop {
                at -= 1;
                digits[at] = b'0' + (int % 10) as u8;
                int /= 10;
                if int == 0 {
                    break;
                }
            }
            let cents = (k % 100) as u8;
            for &d in &digits[at..] {
                out.push(char::from(d));
            }
            out.push('.');
            out.push(char::from(b'0' + cents / 10));
            out.push(char::from(b'0' + cents % 10));
            return;
        }
    }
    let _ = write!(out, "{x:.2}");
}

/// The bar chart of `s.timeline` (empty timeline: an empty chart), as inline SVG written with
/// the same templates as the rest of the page (so the event names in its tooltips are escaped).
pub fn svg(s: &Row<'_>) -> Fragment {
    let (w, h) = (720.0f64, 120.0f64);
    let n = s.timeline.len().max(1) as f64;
    let values: Vec<u64> = s
        .timeline
        .iter()
        .flat_map(|p| std::iter::once(p.tokens).chain(p.reference_tokens))
        .collect();
    let (max, clipped) = sparkline_scale(&values);
    let bw = w / n;
    let bar_w = fixed2((bw - 0.5).max(0.5));
    let mut reference = String::new();
    for (i, p) in s.timeline.iter().enumerate() {
        if let Some(r) = p.reference_tokens {
            let x = i as f64 * bw;
            let y = h - (r as f64).min(max) / max * (h - 4.0);
            for x in [x, x + bw] {
                push_fixed2(&mut reference, x);
                reference.push(',');
                push_fixed2(&mut reference, y);
                reference.push(' ');
            }
        }
    }
    html! {
        svg class="timeline" xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
            viewBox=(format!("0 0 {w} {h}")) role="img" aria-label="context tokens per model call" {
            @for (i, p) in s.timeline.iter().enumerate() {
                @let x = Fixed2(i as f64 * bw);
                @let over = p.tokens as f64 > max;
                @let bh = (p.tokens as f64).min(max) / max * (h - 4.0);
                // Digits only: nothing to escape.
                rect x=(x) y=(Fixed2(h - bh)) width=(PreEscaped(&bar_w))
                    height=(Fixed2(bh))
                    fill=(if p.events.is_empty() { "#4c78a8" } else { "#d62728" }) {
                    title {
                        "call " (i + 1) " (message " (p.trace_index) "): " (p.tokens) " tokens"
                        @if over { " (bar clipped)" }
                        @for (k, e) in p.events.iter().enumerate() {
                            (if k == 0 { "; " } else { ", " }) (&**e)
                        }
                    }
                }
                @if over {
                    rect x=(x) y="0" width=(PreEscaped(&bar_w)) height="4" fill="#000" {}
                }
            }
            @if !reference.is_empty() {
                polyline points=(reference.trim_end()) fill="none" stroke="#555"
                    stroke-dasharray="4 3" {}
            }
            @if clipped {
                text x=(format!("{:.0}", w - 4.0)) y="14" text-anchor="end" font-size="11"
                    fill="#000" {
                    "scale clipped at " (format!("{max:.0}")) " tokens; black caps mark taller calls"
                }
            }
        }
    }
}

/// The per-call table of `s.timeline`, in a collapsed `<details>`.
pub fn table(s: &Row<'_>) -> Fragment {
    let events = s.timeline.iter().filter(|p| !p.events.is_empty()).count();
    let heads = [
        "call",
        "message",
        "tokens",
        "no compression",
        "events",
        "what happened",
    ];
    html! {
        details class="calls" {
            summary { (s.timeline.len()) " model call(s), " (events) " with a compaction event" }
            div class="scroll" {
                table class="timeline-table" {
                    (th_row(heads))
                    tbody {
                        @for (i, p) in s.timeline.iter().enumerate() {
                            tr {
                                td class="num" { (i + 1) }
                                td class="num" { (p.trace_index) }
                                td class="num" { (p.tokens) }
                                @match p.reference_tokens {
                                    Some(r) => td class="num" { (r) },
                                    None => td { "–" },
                                }
                                @if p.events.is_empty() {
                                    td {}
                                } @else {
                                    td class="ev" {
                                        @for (k, e) in p.events.iter().enumerate() {
                                            @if k > 0 { ", " }
                                            (&**e)
                                        }
                                    }
                                }
                                td class="pre" {
                                    @for (k, d) in p.details.iter().enumerate() {
                                        @if k > 0 { "\n" }
                                        (Esc(d))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed2_writes_what_format_writes() {
        let mut seed = 11u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 11
        };
        let mut xs: Vec<f64> = vec![
            0.0,
            -0.0,
            0.005,
            0.015,
            0.125,
            0.375,
            1.005,
            2.675,
            119.995,
            9_999_999.995,
            1e7,
            -1.5,
            f64::NAN,
            f64::INFINITY,
            0.5 / 3.0,
            720.0 / 7.0,
            116.0,
        ];
        for _ in 0..200_000 {
            let r = next();
            let x = match r % 4 {
                0 => (r % 72_000) as f64 / 100.0 + 0.005,
                1 => (r as f64 / (1u64 << 53) as f64) * 720.0,
                2 => 720.0 / ((r % 5000) as f64 + 1.0) * ((r >> 20) % 300) as f64,
                _ => 116.0 - (r % 1_000_000) as f64 / 1_000_000.0 * 116.0,
            };
            xs.push(x);
        }
        for x in xs {
            assert_eq!(fixed2(x), format!("{x:.2}"), "{x:e}");
        }
    }

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
