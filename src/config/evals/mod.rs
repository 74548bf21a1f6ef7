//! The suite's `[evals]`: one file per eval section (its typed table, the checks its types cannot
//! express, the samples it expands into) and one line in `eval_sections!` that registers it.
//!
//! This list is the one place eval names come from: `--eval` selection
//! (`config::overrides`), the plan's order (`runner::plan`) and validation iterate it, and the
//! executors' registry (`evals::executors`, one run hook per eval) is checked against it by a
//! test, so a section without an executor (or the reverse) fails before any run.
//!
//! An eval's name is its table (`[evals.<name>]`), its field in [`EvalsSection`] and its module
//! here.

use super::suite::ProviderRole;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

pub use crate::evalspec::needle::{AskAt, NeedlePosition, NeedleSearch};
pub use crate::evalspec::probes::ProbeKind;
pub use crate::evalspec::rules::RuleKind;
pub use continuation::ContinuationEval;
pub use drift::DriftEval;
pub use invariants::InvariantsEval;
pub use needle::NeedleEval;
pub use probes::ProbesEval;
pub use replay::ReplayEval;
pub use rules::RulesEval;

macro_rules! eval_sections {
    ($($name:ident,)+) => {
        $(pub mod $name;)+

        /// Every eval a suite can enable, in plan order (`[evals.<name>]`, `--eval <name>`).
        pub const EVAL_NAMES: &[&str] = &[$(stringify!($name),)+];

        impl EvalsSection {
            /// Each eval's section by name, in plan order (`None`: the suite has no such table).
            pub fn sections(&self) -> Vec<(&'static str, Option<&dyn EvalSection>)> {
                vec![$((stringify!($name), Slot::section(&self.$name)),)+]
            }

            /// Turn eval `name` off.
            fn disable(&mut self, name: &str) {
                match name {
                    $(stringify!($name) => Slot::disable(&mut self.$name),)+
                    _ => {}
                }
            }
        }
    };
}

// Adding an eval: its spec (typed params, metrics) in `evalspec`, then a new `<name>.rs` here
// with its section type implementing `EvalSection`, its field in `EvalsSection` below, and one
// line here (its position is its place in the plan). Its run hook is one file and one line in
// `evals::executors` (docs/architecture.md, "How to add…").
eval_sections! {
    replay,
    invariants,
    needle,
    drift,
    probes,
    continuation,
    rules,
}

/// `[evals]`: a present table enables that eval (unless `enabled = false`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalsSection {
    /// Plain replay: tokens, cost and compactions per trace × variant. On by default.
    #[serde(default)]
    pub replay: ReplayEval,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needle: Option<NeedleEval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftEval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbesEval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariants: Option<InvariantsEval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<ContinuationEval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<RulesEval>,
}

/// One eval sample before it is crossed with traces, variants and repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalSample {
    pub eval: String,
    /// Stable key within the eval, e.g. `depth=0.25/pos=tool/trigger=0.15`.
    pub sample: String,
    pub params: BTreeMap<String, Value>,
    /// Provider roles a unit of this sample may call (for per-provider concurrency).
    pub providers: Vec<ProviderRole>,
}

impl EvalSample {
    /// The one sample of an eval without parameters (its key is the eval's name).
    pub fn single(name: &str, providers: Vec<ProviderRole>) -> EvalSample {
        EvalSample {
            eval: name.into(),
            sample: name.into(),
            params: BTreeMap::new(),
            providers,
        }
    }
}

/// Where a check reports a problem: the key path below `[evals.<name>]` and the message.
pub type Problem<'a> = &'a mut dyn FnMut(&[&str], String);

/// What an `[evals.<name>]` section provides to the rest of the configuration.
pub trait EvalSection {
    /// `enabled` (true unless the table says `enabled = false`).
    fn enabled(&self) -> bool;
    /// Checks the types cannot express (ranges, empty lists); run at load on every present
    /// table, enabled or not.
    fn check(&self, err: Problem<'_>);
    /// The samples the section expands into, in plan order; `name` is the eval's name.
    fn samples(&self, name: &str) -> Vec<EvalSample>;
}

/// How a section sits in `[evals]`: `replay` is always there (on by default), every other
/// section is there or not.
trait Slot {
    fn section(&self) -> Option<&dyn EvalSection>;
    fn disable(&mut self);
}

impl Slot for ReplayEval {
    fn section(&self) -> Option<&dyn EvalSection> {
        Some(self)
    }
    fn disable(&mut self) {
        self.enabled = false;
    }
}

impl<T: EvalSection> Slot for Option<T> {
    fn section(&self) -> Option<&dyn EvalSection> {
        self.as_ref().map(|s| s as &dyn EvalSection)
    }
    fn disable(&mut self) {
        *self = None;
    }
}

impl EvalsSection {
    /// The evals this section turns on, in plan order.
    pub fn enabled_names(&self) -> Vec<&'static str> {
        self.sections()
            .into_iter()
            .filter(|(_, s)| s.is_some_and(|s| s.enabled()))
            .map(|(name, _)| name)
            .collect()
    }

    /// Every enabled eval's samples, in plan order.
    pub fn samples(&self) -> Vec<EvalSample> {
        self.sections()
            .into_iter()
            .filter_map(|(name, s)| s.filter(|s| s.enabled()).map(|s| s.samples(name)))
            .flatten()
            .collect()
    }

    /// Every present section's checks; `err` gets full key paths (`evals.<name>.…`).
    pub fn check(&self, err: Problem<'_>) {
        for (name, section) in self.sections() {
            if let Some(s) = section {
                s.check(&mut |path: &[&str], message: String| {
                    let mut full = vec!["evals", name];
                    full.extend_from_slice(path);
                    err(&full, message)
                });
            }
        }
    }

    /// Keep only the evals in `names` (the others are turned off).
    pub fn keep_only(&mut self, names: &[String]) {
        for name in EVAL_NAMES {
            if !names.iter().any(|n| n == name) {
                self.disable(name);
            }
        }
    }
}

/// Provider roles of a unit that asks the agent (and the judge when `judge`).
fn asking(judge: bool) -> Vec<ProviderRole> {
    let mut roles = vec![ProviderRole::Summary, ProviderRole::Agent];
    if judge {
        roles.push(ProviderRole::Judge);
    }
    roles
}

/// The check every per-fold eval (drift, continuation, rules) makes of `after_compactions`.
/// `max_output_tokens`, when set: 1 to [`crate::evalspec::MAX_OUTPUT_TOKENS_CAP`].
fn check_output_limit(limit: Option<u32>, err: Problem<'_>) {
    let cap = crate::evalspec::MAX_OUTPUT_TOKENS_CAP;
    if let Some(n) = limit.filter(|n| *n == 0 || *n > cap) {
        err(
            &["max_output_tokens"],
            format!("`max_output_tokens` = {n}: expected 1 to {cap} tokens per answer"),
        );
    }
}

/// A list whose values each make one sample (needle `depths`, `positions`, `triggers`, `folds`;
/// probe `kinds`) or one part of a sample (rule `kinds`) must not repeat a value: two samples
/// of one value would get one unit id, and the run would record one of them (its report saying
/// units were planned that have no sample). Reported at the repeat, with the value as `show`
/// writes it.
fn check_distinct<T: PartialEq>(
    key: &str,
    list: &[T],
    show: impl Fn(&T) -> String,
    err: Problem<'_>,
) {
    for (i, v) in list.iter().enumerate() {
        if let Some(first) = list[..i].iter().position(|w| w == v) {
            err(
                &[key, &i.to_string()],
                format!(
                    "`{key}` lists {} twice (items {} and {}): each value is one sample, \
                     with one unit id; to run a sample more than once, set `repeats` in `[suite]`",
                    show(v),
                    first + 1,
                    i + 1
                ),
            );
        }
    }
}

fn check_folds(after_compactions: u32, err: Problem<'_>) {
    if after_compactions == 0 {
        err(
            &["after_compactions"],
            "`after_compactions` must be at least 1".into(),
        );
    }
}

/// One sample per fold `1..=after_compactions` (`sample = "fold=K"`), its params the eval's
/// typed params for fold K; `judge` adds the judge to the providers it asks.
fn per_fold<P: Serialize>(
    name: &str,
    after_compactions: u32,
    params: impl Fn(u32) -> P,
    judge: bool,
) -> Vec<EvalSample> {
    (1..=after_compactions)
        .map(|fold| EvalSample {
            eval: name.into(),
            sample: format!("fold={fold}"),
            params: crate::evalspec::to_params(&params(fold)),
            providers: asking(judge),
        })
        .collect()
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

use crate::evalspec::drift::default_after_compactions as after_compactions;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `[evals.<name>]` table of the schema has a registration line, and every
    /// registration line a table (a forgotten line or field fails here).
    #[test]
    fn registered_names_are_the_evals_tables() {
        let schema = serde_json::to_value(schemars::schema_for!(EvalsSection)).unwrap();
        let mut tables: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        tables.sort_unstable();
        let mut names = EVAL_NAMES.to_vec();
        names.sort_unstable();
        assert_eq!(tables, names);
    }

    /// A suite that enables every eval plans samples for each, in registry order, and
    /// `keep_only` turns off exactly the others.
    #[test]
    fn every_registered_eval_plans_samples_in_order() {
        let tables: String = EVAL_NAMES
            .iter()
            .map(|n| format!("[{n}]\nenabled = true\n"))
            .collect();
        let mut evals: EvalsSection = toml::from_str(&tables).unwrap();
        assert_eq!(evals.enabled_names(), EVAL_NAMES);
        let mut planned: Vec<String> = evals.samples().into_iter().map(|s| s.eval).collect();
        planned.dedup();
        assert_eq!(planned, EVAL_NAMES);
        evals.keep_only(&["needle".into(), "rules".into()]);
        assert_eq!(evals.enabled_names(), ["needle", "rules"]);
        evals.keep_only(&[]);
        assert!(evals.enabled_names().is_empty());
    }

    #[test]
    fn checks_report_full_key_paths() {
        let evals: EvalsSection =
            toml::from_str("[needle]\ndepths = [1.5]\n[rules]\nenabled = false\nkinds = []\n")
                .unwrap();
        let mut seen = Vec::new();
        evals.check(&mut |path: &[&str], m: String| seen.push((path.join("."), m)));
        assert_eq!(
            seen,
            [
                (
                    "evals.needle.depths.0".to_string(),
                    "needle depth 1.5 is outside [0, 1]".to_string()
                ),
                (
                    "evals.rules.kinds".to_string(),
                    "`kinds` must not be empty".to_string()
                ),
            ]
        );
    }

    /// Two samples of one value had one unit id: the run recorded one and reported units
    /// planned without a sample. Every list a sample is made of refuses a repeat, at the repeat.
    #[test]
    fn a_value_listed_twice_is_refused_at_its_repeat() {
        let evals: EvalsSection = toml::from_str(
            "[needle]\ndepths = [0.5, 0.2, 0.50]\npositions = [\"tool\", \"tool\"]\n\
             triggers = [0.15, 0.15]\nfolds = [1, 2, 1]\n\
             [probes]\nkinds = [\"recall\", \"recall\"]\n[rules]\nkinds = [\"language\", \"language\"]\n",
        )
        .unwrap();
        let mut seen = Vec::new();
        evals.check(&mut |path: &[&str], m: String| seen.push((path.join("."), m)));
        let paths: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "evals.needle.depths.2",
                "evals.needle.positions.1",
                "evals.needle.triggers.1",
                "evals.needle.folds.2",
                "evals.probes.kinds.1",
                "evals.rules.kinds.1",
            ]
        );
        assert_eq!(
            seen[0].1,
            "`depths` lists 0.5 twice (items 1 and 3): each value is one sample, with one unit \
             id; to run a sample more than once, set `repeats` in `[suite]`"
        );
        assert!(seen[1]
            .1
            .starts_with("`positions` lists \"tool\" twice (items 1 and 2)"));
        // The plan these lists would make has no two samples with one key once the check passes.
        let ok: EvalsSection = toml::from_str(
            "[needle]\ndepths = [0.5, 0.2]\ntriggers = [0.15, 0.3]\nfolds = [1, 2]\n[probes]\n",
        )
        .unwrap();
        let mut none = Vec::new();
        ok.check(&mut |path: &[&str], m: String| none.push((path.join("."), m)));
        assert!(none.is_empty(), "{none:?}");
        let keys: std::collections::HashSet<(String, String)> = ok
            .samples()
            .into_iter()
            .map(|s| (s.eval, s.sample))
            .collect();
        assert_eq!(keys.len(), ok.samples().len());
    }
}
