//! Report notes on where a run's windows and prices came from: per variant, the window and its
//! source (suite, trace, the agent model's price-table entry, preset default) and the model that
//! priced the agent's views; and every model with no price, with its role, how many units it
//! left unpriced, and how to add the price. Read from each sample's evidence (`window`,
//! `priced_as`, written by the evals' executor).

use crate::record::{Row, TokenSplit};
use std::collections::BTreeMap;

/// What the agent's views of a trace that records no model are priced as, until `agent_model`
/// names one.
const NO_MODEL: &str = "the trace records none; set agent_model";

/// How to give `role`'s `model` a price: the one text report.md, the end of a run and the dry
/// run's estimate give. `None`: no model is named (a trace that records none, for the agent).
pub fn price_advice(role: &str, model: Option<&str>) -> String {
    match model {
        Some(m) => format!(
            "Add it under the suite's `[pricing.\"{m}\"]` (input, output, cache_read, \
             cache_write in $ per million tokens) or to data/pricing.toml"
        ),
        None if role == "agent" => "The traces record no model to price: set `agent_model` in \
             `[engine.base]` (or a variant) to a model of the price table, or to one you price \
             under `[pricing.\"<model>\"]`"
            .to_string(),
        None => {
            let table = match role {
                "summarizer" => "summary",
                "judge" => "judge",
                _ => "agent",
            };
            format!("Its provider names no model: set `model` in `[providers.{table}]`")
        }
    }
}

/// `window` source of a sample's evidence, worded for a reader.
fn window_source(v: &serde_json::Value) -> String {
    match v["from"].as_str() {
        Some("config") => "suite".into(),
        Some("trace") => "trace".into(),
        Some("model") => format!(
            "price table's context window of `{}`",
            v["model"].as_str().unwrap_or("?")
        ),
        Some("preset") => "preset default".into(),
        _ => "unknown source".into(),
    }
}

/// `key ×n` items joined, most frequent first.
fn counted(m: &BTreeMap<String, usize>) -> String {
    let mut v: Vec<(&String, &usize)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where one variant's windows and agent prices came from, counted over its replay units (or,
/// without those, all its units): `"20000 (suite)" → 7`, `` "`gpt-4o` (trace's model)" → 7 ``.
/// Written to run.json (`totals.sources`) and rendered as the report's notes.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sources {
    pub window: BTreeMap<String, usize>,
    pub agent_priced_as: BTreeMap<String, usize>,
}

/// The [`Sources`] of every variant that has samples, one sample at a time (a journal
/// streamed line by line). Per variant: the sources over its replay units, over all its units,
/// and whether it has replay units (no list of units kept).
#[derive(Clone, Debug, Default)]
pub struct SourcesSum {
    by_variant: BTreeMap<String, (Sources, Sources, bool)>,
}

impl SourcesSum {
    pub fn add(&mut self, s: &Row<'_>) {
        if !self.by_variant.contains_key(s.variant) {
            self.by_variant
                .insert(s.variant.to_string(), Default::default());
        }
        let e = self.by_variant.get_mut(s.variant).expect("inserted");
        let replay = s.eval == "replay";
        e.2 |= replay;
        count_sources(&mut e.1, s);
        if replay {
            count_sources(&mut e.0, s);
        }
    }

    pub fn finish(self) -> BTreeMap<String, Sources> {
        let mut out = BTreeMap::new();
        for (v, (replay, all, has_replay)) in self.by_variant {
            let src = if has_replay { replay } else { all };
            if !(src.window.is_empty() && src.agent_priced_as.is_empty()) {
                out.insert(v, src);
            }
        }
        out
    }
}

fn count_sources(src: &mut Sources, s: &Row<'_>) {
    let w = &s.evidence["window"];
    if let Some(tokens) = w["tokens"].as_u64() {
        let k = format!("{tokens} ({})", window_source(&w["source"]));
        *src.window.entry(k).or_default() += 1;
    }
    let p = &s.evidence["priced_as"];
    if p.is_object() {
        let k = match (p["agent"].as_str(), p["agent_from"].as_str()) {
            (Some(m), Some("agent_model")) => format!("`{m}` (agent_model)"),
            (Some(m), _) => format!("`{m}` (trace's model)"),
            (None, _) => format!("no model ({NO_MODEL})"),
        };
        *src.agent_priced_as.entry(k).or_default() += 1;
    }
}

/// One note per variant (window and pricing model, over its replay units or, without those,
/// all its units) and one per unpriced model, from the samples one at a time: what it holds is
/// per variant and per (role, model).
#[derive(Clone, Debug, Default)]
pub struct NotesSum {
    sources: SourcesSum,
    /// (role, model) → successful units with tokens in that role and no price (a failed
    /// unit is out of every comparison already; the usage table counts it too).
    unknown: BTreeMap<(&'static str, String), usize>,
}

impl NotesSum {
    pub fn add(&mut self, s: &Row<'_>) {
        self.sources.add(s);
        if s.error.is_some() {
            return;
        }
        let roles: [(&'static str, &TokenSplit, Option<f64>); 4] = [
            ("agent", &s.tokens.agent, s.cost_usd.agent),
            ("summarizer", &s.tokens.summarizer, s.cost_usd.summarizer),
            ("judge", &s.tokens.judge, s.cost_usd.judge),
            ("eval_agent", &s.tokens.eval_agent, s.cost_usd.eval_agent),
        ];
        for (role, tokens, cost) in roles {
            if cost.is_none() && tokens.total() > 0 {
                let model = s.evidence["priced_as"][role]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                *self.unknown.entry((role, model)).or_default() += 1;
            }
        }
    }

    pub fn finish(self, variants: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        let sources = self.sources.finish();
        for v in variants {
            let Some(src) = sources.get(v) else {
                continue;
            };
            out.push(format!(
                "variant `{v}`: window {}; agent views priced as {} (per trace)",
                counted(&src.window),
                counted(&src.agent_priced_as)
            ));
        }
        for ((role, model), n) in self.unknown {
            let which = if model.is_empty() {
                "a model the samples do not name".to_string()
            } else {
                format!("model `{model}`")
            };
            out.push(format!(
                "UNKNOWN PRICE: {which} ({role}) has no price: {n} successful unit(s) have an unknown \
                 `cost.{role}` and `cost`, so cost comparisons leave them out. {}",
                price_advice(role, (!model.is_empty()).then_some(model.as_str()))
            ));
        }
        out
    }
}
