//! Which samples a report shows in full — the HTML report's own selection
//! ([`super::html::select`]: failed units up to the page's cap, flagged units up to its cap per
//! variant, a dozen pairing keys in every variant, a few failed verdicts per variant) — plus
//! every unit that errored, which is what keeps its offload store after a run
//! (`runner::stores`), so a sample shown in full can always be inspected on disk. A unit that is
//! only flagged (a summary failed, a compaction was futile) past the first flagged units of its
//! variant is not shown, and its store is not kept: samples.jsonl and results.csv list it.

use super::html::{select, Status};
use super::model::ReportModel;
use std::collections::BTreeSet;

/// Unit ids whose store is kept: the samples the HTML report shows in full, and every unit that
/// errored (also those past the HTML's cap; flagged units past the cap of their variant are not
/// kept).
pub fn shown_in_full(model: &ReportModel) -> BTreeSet<String> {
    let (shown, _) = select(&model.samples, model.baseline.as_deref());
    let mut keep: BTreeSet<String> = shown
        .into_iter()
        .map(|i| model.samples.get(i).unit_id.to_string())
        .collect();
    keep.extend(
        model
            .samples
            .iter()
            .filter(|s| Status::of(s) == Status::Error)
            .map(|s| s.unit_id.to_string()),
    );
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RunInfo, Sample, UnitError};

    #[test]
    fn the_html_selection_plus_every_failed_unit() {
        let mut samples = Vec::new();
        for t in 0..40 {
            for v in ["base", "b"] {
                samples.push(
                    Sample::builder()
                        .unit_id(format!("{v}{t}"))
                        .variant(v)
                        .trace(format!("t{t:02}"))
                        .passed(true)
                        .build(),
                );
            }
        }
        samples[79].error = Some(UnitError {
            kind: "eval".into(),
            message: "x".into(),
        });
        let mut info = RunInfo::new("r");
        info.baseline = Some("base".into());
        let model = ReportModel::build(&info, samples);
        let keep = shown_in_full(&model);
        let (html, _) = select(&model.samples, Some("base"));
        assert!(keep.contains("b39"), "the failed unit");
        for i in html {
            assert!(keep.contains(model.samples.get(i).unit_id));
        }
        assert!(keep.len() < model.samples.len(), "not every unit");
    }

    #[test]
    fn errored_units_past_the_cap_are_kept_flagged_ones_are_not() {
        use crate::report::html::{MAX_ERRORED_SAMPLES, MAX_FLAGGED_PER_VARIANT};
        // Per variant, in the report's order: flagged units past the cap of their variant,
        // then errored ones; more errored units in all than the page's cap.
        let flagged = MAX_FLAGGED_PER_VARIANT + 30;
        let errored = MAX_ERRORED_SAMPLES / 2 + 10;
        let mut samples = Vec::new();
        for v in ["a", "b"] {
            for t in 0..flagged + errored + 20 {
                let mut s = Sample::builder()
                    .unit_id(format!("{v}{t}"))
                    .variant(v)
                    .trace(format!("t{t:04}"))
                    .passed(true)
                    .build();
                if t < flagged {
                    s.compactions.insert("futile".into(), 1);
                } else if t < flagged + errored {
                    s.error = Some(UnitError {
                        kind: "eval".into(),
                        message: "x".into(),
                    });
                }
                samples.push(s);
            }
        }
        let mut info = RunInfo::new("r");
        info.variants = vec!["a".into(), "b".into()];
        let model = ReportModel::build(&info, samples);
        let keep = shown_in_full(&model);
        let (html, left_out) = select(&model.samples, None);
        assert_eq!(
            left_out,
            2 * (flagged - MAX_FLAGGED_PER_VARIANT) + 2 * errored - MAX_ERRORED_SAMPLES,
            "30 flagged units of each variant and 20 errored ones past the caps"
        );
        let html: BTreeSet<String> = html
            .into_iter()
            .map(|i| model.samples.get(i).unit_id.to_string())
            .collect();
        for v in ["a", "b"] {
            // (Rule 2's pairing keys are the first dozen traces', among the first flagged.)
            for t in 0..MAX_FLAGGED_PER_VARIANT {
                assert!(keep.contains(&format!("{v}{t}")), "flagged {v}{t} is shown");
            }
            for t in MAX_FLAGGED_PER_VARIANT..flagged {
                assert!(
                    !keep.contains(&format!("{v}{t}")),
                    "flagged {v}{t} is past the cap of its variant"
                );
            }
            for t in flagged..flagged + errored {
                let id = format!("{v}{t}");
                assert!(keep.contains(&id), "errored {id}");
                assert_eq!(
                    html.contains(&id),
                    v == "a" || t < flagged + MAX_ERRORED_SAMPLES - errored,
                    "errored {id} is shown among the first {MAX_ERRORED_SAMPLES}"
                );
            }
        }
        assert_eq!(keep.len(), html.len() + 2 * errored - MAX_ERRORED_SAMPLES);
    }
}
