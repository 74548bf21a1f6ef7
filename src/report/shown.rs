//! Which samples a report shows in full — the HTML report's own selection
//! ([`super::html::select`]: failed units up to the page's cap, flagged units up to its cap per
//! variant, a dozen pairing keys in every variant, a few failed verdicts per variant) — plus
//! every unit that errored, which is what keeps its offload store after a run
//! (`runner::stores`), so a sample shown in full can always be inspected on disk. A unit that is
//! only flagged (a summary failed, a compaction was futile) past the first flagged units of its
//! variant is not shown, and its store is not kept: samples.jsonl and results.csv list it.

use super::html::Status;
use super::model::ReportModel;
use std::collections::BTreeSet;

/// Unit ids whose store is kept: the samples the HTML report shows in full, and every unit that
/// errored (also those past the HTML's cap; flagged units past the cap of their variant are not
/// kept).
///
/// Every sample is read, in memory or back from disk (a spilled model: `report::spill`; an
/// error reading it back is returned, so no store is removed by a partial list).
pub fn shown_in_full(model: &ReportModel) -> std::io::Result<BTreeSet<String>> {
    let (shown, _) = model.shown();
    let mut keep: BTreeSet<String> = shown
        .iter()
        .map(|&i| model.samples.get(i).unit_id.to_string())
        .collect();
    model.for_each_row(|s| {
        if Status::of(&s) == Status::Error {
            keep.insert(s.unit_id.to_string());
        }
    })?;
    Ok(keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RunDir, RunInfo, Sample, UnitError};
    use crate::report::html::select;

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
        let keep = shown_in_full(&model).unwrap();
        let (html, _) = select(&model.samples, Some("base"), model.variants.len());
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
        let keep = shown_in_full(&model).unwrap();
        let (html, left_out) = select(&model.samples, None, model.variants.len());
        assert_eq!(
            left_out.problems,
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

    /// A model spilled to disk keeps the stores of the same units as the model in memory; also
    /// with enough variants that the caps shrink (the spilled model knows its variants only
    /// after a first pass over its rows).
    #[test]
    fn a_spilled_model_keeps_the_same_units() {
        use crate::report::load::{load_model_opts, LoadOptions};
        let many: Vec<String> = (0..12).map(|v| format!("v{v:02}")).collect();
        for variants in [vec!["base".to_string(), "b".to_string()], many] {
            let dir = tempfile::tempdir().unwrap();
            let run = RunDir::new(dir.path());
            let mut info = RunInfo::new("r");
            info.variants = variants.clone();
            std::fs::write(run.run_json(), serde_json::to_string(&info).unwrap()).unwrap();
            let mut samples = Vec::new();
            for t in 0..300 {
                for v in variants.iter().rev() {
                    let mut s = Sample::builder()
                        .unit_id(format!("{v}{t}"))
                        .variant(v)
                        .trace(format!("t{:02}", t % 30))
                        .sample(format!("s{t}"))
                        .passed(t % 7 != 0)
                        .build();
                    if t % 11 == 0 {
                        s.compactions.insert("futile".into(), 1);
                    }
                    if t % 13 == 0 {
                        s.error = Some(UnitError {
                            kind: "eval".into(),
                            message: "x".into(),
                        });
                    }
                    samples.push(s);
                }
            }
            run.write_samples(&samples).unwrap();
            let (_, memory, _) = load_model_opts(&run, None, &LoadOptions::default()).unwrap();
            let mut opts = LoadOptions::default();
            (opts.spill.above, opts.spill.run_rows) = (0, 50);
            opts.spill.dir = Some(dir.path().to_path_buf());
            let (_, spilled, _) = load_model_opts(&run, None, &opts).unwrap();
            assert!(spilled.spilled() && !memory.spilled());
            assert_eq!(memory.shown_caps().shrunk(), variants.len() > 5);
            let keep = shown_in_full(&memory).unwrap();
            let n = variants.len();
            assert!(
                keep.len() > 20 * n && keep.len() < 300 * n,
                "{}",
                keep.len()
            );
            assert_eq!(shown_in_full(&spilled).unwrap(), keep, "{n} variants");
            assert_eq!(spilled.shown().1, memory.shown().1, "{n} variants");
            assert!(memory.shown().1.problems > 0 && memory.shown().1.failed > 0);
        }
    }
}
