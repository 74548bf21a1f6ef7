//! `[evals.needle]`: plant facts, force compaction, ask for them back. The section, its checks
//! and its samples (trigger × fold × depth × position).

use super::{one, yes, EvalSample, EvalSection, Problem};
use crate::config::suite::ProviderRole;
use crate::evalspec::needle::{default_max_steps, AskAt, NeedleParams, NeedlePosition, NeedleSearch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn default_depths() -> Vec<f64> {
    vec![0.25, 0.5, 0.75]
}
fn default_positions() -> Vec<NeedlePosition> {
    vec![NeedlePosition::Tool]
}

/// `[evals.needle]`: plant facts, force compaction, ask for them back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeedleEval {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Where to plant, as fractions of the trace (0 = start, 1 = end).
    #[serde(default = "default_depths")]
    pub depths: Vec<f64>,
    /// Which kind of message carries the needle.
    #[serde(default = "default_positions")]
    pub positions: Vec<NeedlePosition>,
    /// Summarization triggers (fractions of the window) that override the variant's; empty =
    /// use each variant's own.
    #[serde(default)]
    pub triggers: Vec<f64>,
    /// Needles planted per sample.
    #[serde(default = "one")]
    pub needles: u32,
    /// Distractor facts of the same shape per sample.
    #[serde(default)]
    pub distractors: u32,
    /// Tool-call budget of the answering agent.
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    /// When to ask: `"end"` of the trace, or after this model-call index.
    #[serde(default)]
    pub ask_at: AskAt,
    /// How the offline agent may search the offload store (real models always get the tools).
    #[serde(default)]
    pub search: NeedleSearch,
    /// Ask in other words than the planted key (seeded paraphrase templates per fact kind),
    /// with distractors that share part of the key.
    #[serde(default)]
    pub paraphrase: bool,
    /// Correct every needle later in the trace (`Update: the … is now …`, at a seeded depth
    /// after it): the latest value is the answer, the first one scores as `stale`.
    #[serde(default)]
    pub corrected: bool,
    /// Ask right after the k-th summarization that followed the planting, one sample per k
    /// (`params.fold`); a replay with fewer folds records `not_reached`. Empty: ask at `ask_at`.
    #[serde(default)]
    pub folds: Vec<u32>,
    /// Output limit (tokens) of each of this eval's answers; default 200. The agent
    /// provider's `max_tokens` wins when larger, and an OpenAI reasoning model without one gets
    /// 25,000 more for its hidden reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

impl EvalSection for NeedleEval {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn check(&self, err: Problem<'_>) {
        if self.depths.is_empty() {
            err(&["depths"], "`depths` must not be empty".into());
        }
        for (i, d) in self.depths.iter().enumerate() {
            if !(0.0..=1.0).contains(d) {
                err(
                    &["depths", &i.to_string()],
                    format!("needle depth {d} is outside [0, 1]"),
                );
            }
        }
        for (i, t) in self.triggers.iter().enumerate() {
            if !(*t > 0.0 && *t <= 1.0) {
                err(
                    &["triggers", &i.to_string()],
                    format!("trigger {t} must be a fraction of the window in (0, 1]"),
                );
            }
        }
        if self.positions.is_empty() {
            err(&["positions"], "`positions` must not be empty".into());
        }
        super::check_distinct("depths", &self.depths, |d| d.to_string(), &mut *err);
        super::check_distinct("positions", &self.positions, |p| format!("\"{}\"", p.as_str()), &mut *err);
        super::check_distinct("triggers", &self.triggers, |t| t.to_string(), &mut *err);
        super::check_distinct("folds", &self.folds, |k| k.to_string(), &mut *err);
        if self.needles == 0 {
            err(&["needles"], "`needles` must be at least 1".into());
        } else if let Some(why) = crate::evalspec::needle::capacity_error(
            self.needles as usize,
            self.distractors as usize,
            self.paraphrase,
        ) {
            // Else every needle unit fails when it plants (kind `eval_config`) and the run
            // exits 0 with no needle figure. At the line of `needles` when they alone do not
            // fit, else of `distractors`.
            let alone = crate::evalspec::needle::capacity_error(
                self.needles as usize,
                0,
                self.paraphrase,
            );
            err(
                &[if alone.is_some() { "needles" } else { "distractors" }],
                format!(
                    "`needles` = {} and `distractors` = {}{}: {why}",
                    self.needles,
                    self.distractors,
                    if self.paraphrase {
                        " with `paraphrase = true`"
                    } else {
                        ""
                    }
                ),
            );
        }
        if self.max_steps == 0 {
            err(&["max_steps"], "`max_steps` must be at least 1".into());
        }
        super::check_output_limit(self.max_output_tokens, &mut *err);
        for (i, k) in self.folds.iter().enumerate() {
            if *k == 0 {
                err(
                    &["folds", &i.to_string()],
                    "fold 0 is not a fold: folds count from 1 (after the first summary)".into(),
                );
            }
        }
    }

    /// Trigger × fold × depth × position, in that nesting.
    fn samples(&self, name: &str) -> Vec<EvalSample> {
        let n = self;
        let mut out = Vec::new();
        let triggers: Vec<Option<f64>> = if n.triggers.is_empty() {
            vec![None]
        } else {
            n.triggers.iter().copied().map(Some).collect()
        };
        let folds: Vec<Option<u32>> = if n.folds.is_empty() {
            vec![None]
        } else {
            n.folds.iter().copied().map(Some).collect()
        };
        for (trigger, fold) in triggers
            .iter()
            .flat_map(|t| folds.iter().map(move |f| (t, f)))
        {
            for depth in &n.depths {
                for pos in &n.positions {
                    let mut key = format!("depth={depth}/pos={}", pos.as_str());
                    if let Some(t) = trigger {
                        key.push_str(&format!("/trigger={t}"));
                    }
                    if let Some(k) = fold {
                        key.push_str(&format!("/fold={k}"));
                    }
                    let params = NeedleParams {
                        depth: *depth,
                        position: *pos,
                        trigger: *trigger,
                        needles: n.needles,
                        distractors: n.distractors,
                        max_steps: n.max_steps,
                        ask_at: n.ask_at,
                        search: n.search,
                        paraphrase: n.paraphrase,
                        corrected: n.corrected,
                        fold: *fold,
                        max_output_tokens: n.max_output_tokens,
                    };
                    out.push(EvalSample {
                        eval: name.into(),
                        sample: key,
                        params: crate::evalspec::to_params(&params),
                        providers: vec![ProviderRole::Summary, ProviderRole::Agent],
                    });
                }
            }
        }
        out
    }
}
