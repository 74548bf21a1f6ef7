//! What a replay's events say about its own health: compactions that achieved nothing
//! (`futile`) and summaries that failed (`error` events of the summarizing layers), so a unit
//! whose numbers come from a broken or useless compaction is never reported as a healthy one.

use super::event::{Event, EventDetail};
use serde::Serialize;
use std::collections::BTreeMap;

/// The `futile` events for the compactions of one call (`events` = that call's events): a
/// persistent compaction that removed no message, or left the request no smaller than it
/// found it. The `futile` event is not persistent (it changes nothing; it only flags).
pub fn futile_events(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .filter(|e| e.is_compaction())
        .filter_map(|e| {
            let no_message = e.detail.removed_messages() == Some(0);
            let not_smaller =
                matches!((e.tokens_before, e.tokens_after), (Some(b), Some(a)) if a >= b);
            if !(no_message || not_smaller) {
                return None;
            }
            let why = if no_message {
                "removed no message".to_string()
            } else {
                "left the request no smaller".to_string()
            };
            let detail = EventDetail::Futile {
                compaction: e.kind().to_string(),
                reason: why,
            };
            let mut f = Event::new(e.trace_index, &e.layer, detail);
            f.call_index = e.call_index;
            f.tokens_before = e.tokens_before;
            f.tokens_after = e.tokens_after;
            Some(f)
        })
        .collect()
}

/// Failed summaries of a replay (each `error` event is one summarizer call whose result was
/// not used: a provider error, an empty or error-string text, a cancelled call).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SummaryFailures {
    pub count: u64,
    /// Error class → how many (`server_error`, `timeout`, `unusable`, …).
    pub classes: BTreeMap<String, u64>,
    /// The first failure's message.
    pub first: Option<String>,
}

impl SummaryFailures {
    pub fn of(events: &[Event]) -> SummaryFailures {
        let mut out = SummaryFailures::default();
        for e in events {
            let EventDetail::Error { message } = &e.detail else {
                continue;
            };
            out.count += 1;
            *out.classes.entry(error_class(message)).or_insert(0) += 1;
            if out.first.is_none() {
                out.first = Some(message.to_string());
            }
        }
        out
    }

    /// `server_error ×2, timeout ×1`.
    pub fn classes_text(&self) -> String {
        self.classes
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The class of a summary failure from its message: the provider's error kind for a provider
/// failure (`summarizer failed: <kind>: …`), `unusable` for a rejected text, `cancelled`.
pub fn error_class(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("summarizer failed: ") {
        let kind = rest.split(':').next().unwrap_or("").trim();
        if !kind.is_empty() && kind.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return kind.to_string();
        }
        return "provider_error".into();
    }
    if message.contains("cancelled") {
        return "cancelled".into();
    }
    if message.contains("unusable") || message.contains("rejected") {
        return "unusable".into();
    }
    "error".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summarized(newly: usize, before: u64, after: u64) -> Event {
        let detail = EventDetail::Summarized(crate::engine::event::Summary {
            state_len: 9,
            view_cutoff: 1,
            state_cutoff: 3,
            summarized_from: 3,
            chained: true,
            newly_summarized: newly,
            kept: 2,
            history_file: "/h.md".into(),
            summary_chars: 10,
            summary_message: "s".into(),
            summarizer_model: "m".into(),
            summarizer_usage: Default::default(),
        });
        let mut e = Event::at_call(9, "summarize", detail);
        e.tokens_before = Some(before);
        e.tokens_after = Some(after);
        e
    }

    fn clipped(before: u64, after: u64) -> Event {
        let detail = EventDetail::OverBudgetClipped {
            clipped_index: 4,
            tool: "read_file".into(),
            chars_before: 900,
            chars_after: 90,
            replacement: "…".into(),
            path: None,
        };
        let mut e = Event::at_call(9, "summarize", detail);
        e.tokens_before = Some(before);
        e.tokens_after = Some(after);
        e
    }

    #[test]
    fn futile_when_nothing_removed_or_not_smaller() {
        assert!(futile_events(&[summarized(3, 5000, 2000)]).is_empty());
        let f = futile_events(&[summarized(0, 4226, 4100)]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind(), "futile");
        assert!(!f[0].persistent);
        let g = futile_events(&[summarized(2, 4226, 4244)]);
        assert_eq!(g.len(), 1);
        assert!(
            matches!(&g[0].detail, EventDetail::Futile { reason, .. } if reason.contains("no smaller"))
        );
        // The over-budget clip is a compaction, judged like the others: it counts no
        // messages, so only a clip that left the request no smaller (which the layer never
        // emits) would be futile.
        let c = clipped(900, 90);
        assert!(c.is_compaction());
        assert!(futile_events(&[c]).is_empty());
        assert_eq!(futile_events(&[clipped(90, 90)]).len(), 1);
    }

    #[test]
    fn failure_classes() {
        assert_eq!(
            error_class("summarizer failed: server_error: HTTP 500"),
            "server_error"
        );
        assert_eq!(error_class("summary rejected: empty"), "unusable");
        assert_eq!(error_class("summarizer call cancelled: x"), "cancelled");
        let e = Event::new(
            3,
            "summarize",
            EventDetail::Error {
                message: "summarizer failed: timeout: no response".into(),
            },
        );
        let f = SummaryFailures::of(&[e.clone(), e]);
        assert_eq!(f.count, 2);
        assert_eq!(f.classes_text(), "timeout ×2");
    }
}
