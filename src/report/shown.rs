//! Which samples a report shows in full — the HTML report's own selection
//! ([`super::html::select`]: failed and flagged units, a dozen pairing keys in every variant, a
//! few failed verdicts per variant) — plus every failed unit, which is what keeps its offload
//! store after a run (`runner::stores`), so a sample shown in full can always be inspected on
//! disk.

use super::html::{select, Status};
use super::model::ReportModel;
use std::collections::BTreeSet;

/// Unit ids whose store is kept: the samples the HTML report shows in full, and every failed
/// or flagged unit (also those past the HTML's cap).
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
            .filter(|s| Status::of(s) <= Status::Flagged)
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
}
