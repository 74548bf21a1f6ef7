//! `run --dry-run`'s cost estimate: model calls, tokens and dollars per role, before any model
//! is called.
//!
//! Method. Every (trace, variant) pair is replayed offline through the engine with the offline
//! summarizer: that gives, exactly, the replayed agent's calls and input tokens (its modelled
//! cost, never spent), the summarizer's calls and input tokens, and the size of the last view
//! (what an eval's questions are asked over). What only a real model decides is a range:
//! - summarizer output: low = the offline summaries' length, high = the provider's
//!   `max_tokens` (default [`SUMMARY_OUTPUT_HIGH`]) per call;
//! - eval agent: per unit, [`eval_calls`] reads the sample's typed params (`needles`,
//!   `max_steps`, `steps`, `per_kind`, `after_compactions`/`fold`, `max_output_tokens`) into a
//!   low/high number of calls (questions × tool steps); each sends the last view (low: the
//!   variant's, high: the uncompressed reference's) and answers between a tenth of the eval's
//!   output limit (low) and the limit the request carries on the wire (high: the provider's
//!   `max_tokens` when larger, plus a reasoning model's allowance or the thinking budget);
//! - judge (when configured, for a sample with `judge = true`): one call per answer judged, of
//!   [`JUDGE_INPUT`] tokens in, [`JUDGE_OUTPUT`] out.
//!
//! Dollars use the run's price table (bundled + the suite's `[pricing]`); the offline provider
//! is a known $0; an unknown price is shown as `?` and makes the spend unknown.

use crate::config::suite::ProviderRole;
use crate::config::LoadedSuite;
use crate::engine::{self, summarizer::OfflineSummarizer};
use crate::pricing::PriceTable;
use crate::providers::{ProviderConfig, ProviderKind};
use crate::runner::Plan;
use crate::trace::Usage;
use serde_json::Value;
use std::collections::BTreeMap;

/// Summary output tokens per call, high end, when the summary provider sets no `max_tokens`.
pub const SUMMARY_OUTPUT_HIGH: u64 = 1024;
/// Judge input tokens per call (rubric + question + answer), low and high.
pub const JUDGE_INPUT: (u64, u64) = (400, 2_000);
/// Judge output tokens per call, low and high.
pub const JUDGE_OUTPUT: (u64, u64) = (20, 300);

/// What one eval sample asks per unit, read from its typed params (`evalspec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EvalCalls {
    /// Eval-agent calls, low and high.
    pub calls: (u64, u64),
    /// The eval's own output limit per call (`max_output_tokens`, else its default).
    pub limit: u64,
    /// Judge calls, low and high (zero when the sample is not judged).
    pub judge: (u64, u64),
}

/// The eval-agent and judge calls of one unit of `eval` with `params`, and each call's output
/// limit, from the eval's typed params:
/// - needle: per planted needle (`needles`) a question on the compacted view, answered in 1 to
///   `max_steps` tool-loop steps, and one on the uncompressed reference (no tools, 1 call);
/// - drift: one probe per probed fold (`fold` set: 1; else up to `after_compactions`);
/// - rules: one question; continuation: 1 to `steps` recorded steps, each asked on the
///   compacted and the uncompressed context;
/// - probes: `per_kind` questions (recall: 1 to 6 tool steps each; the other kinds one call);
/// - a judged sample (`judge = true`) adds one judge call per answer.
///
/// Params that do not read (a plan written by another version) count as the eval's defaults.
pub fn eval_calls(eval: &str, params: &BTreeMap<String, Value>) -> EvalCalls {
    use crate::evalspec::{self as spec, output_limit};
    let limit = |set: Option<u32>, default: u32| u64::from(output_limit(set, default));
    match eval {
        "needle" => {
            let (needles, steps, set) = spec::from_params::<spec::needle::NeedleParams>(params)
                .map_or((1, spec::needle::default_max_steps(), None), |p| {
                    (p.needles, p.max_steps, p.max_output_tokens)
                });
            let n = u64::from(needles.max(1));
            EvalCalls {
                calls: (2 * n, n * (u64::from(steps.max(1)) + 1)),
                limit: limit(set, spec::needle::MAX_OUTPUT_TOKENS),
                judge: (0, 0),
            }
        }
        "drift" => {
            let p = spec::from_params::<spec::drift::DriftParams>(params).ok();
            let views = p.as_ref().map_or(1, |p| match p.fold {
                Some(_) => 1,
                None => u64::from(p.after_compactions.max(1)),
            });
            let judged = p.as_ref().is_some_and(|p| p.judge);
            EvalCalls {
                calls: (1, views),
                limit: limit(
                    p.and_then(|p| p.max_output_tokens),
                    spec::drift::MAX_OUTPUT_TOKENS,
                ),
                judge: if judged { (1, views) } else { (0, 0) },
            }
        }
        "rules" => {
            let p = spec::from_params::<spec::rules::RulesParams>(params).ok();
            let judged = p.as_ref().is_some_and(|p| p.judge);
            EvalCalls {
                calls: (1, 1),
                limit: limit(
                    p.and_then(|p| p.max_output_tokens),
                    spec::rules::MAX_OUTPUT_TOKENS,
                ),
                judge: if judged { (1, 1) } else { (0, 0) },
            }
        }
        "continuation" => {
            let p = spec::from_params::<spec::continuation::ContinuationParams>(params).ok();
            let steps = p.as_ref().map_or(3, |p| u64::from(p.steps.max(1)));
            EvalCalls {
                calls: (2, 2 * steps),
                limit: limit(
                    p.and_then(|p| p.max_output_tokens),
                    spec::continuation::MAX_OUTPUT_TOKENS,
                ),
                judge: (0, 0),
            }
        }
        "probes" => {
            use spec::probes::{ProbeKind, ProbeParams};
            let Ok(p) = spec::from_params::<ProbeParams>(params) else {
                return EvalCalls {
                    calls: (1, 6),
                    limit: 400,
                    judge: (0, 0),
                };
            };
            let q = u64::from(p.per_kind.max(1));
            let (calls, questions) = match p.kind {
                ProbeKind::Recall => ((q, 6 * q), (1, q)),
                // (a trace without a decision to ask about gets the structured question)
                ProbeKind::Decision => ((1, q), (1, q)),
                ProbeKind::Artifact | ProbeKind::Continuation => ((1, 1), (1, 1)),
            };
            EvalCalls {
                calls,
                limit: limit(p.max_output_tokens, spec::probes::max_output_tokens(p.kind)),
                judge: if p.judge { questions } else { (0, 0) },
            }
        }
        // replay, invariants: no model is asked.
        _ => EvalCalls::default(),
    }
}

/// One role's estimate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RoleEstimate {
    pub role: &'static str,
    /// Model calls, low and high.
    pub calls: (u64, u64),
    pub input: (u64, u64),
    pub output: (u64, u64),
    /// Dollars, low and high (`None`: price unknown).
    pub usd: (Option<f64>, Option<f64>),
    /// Whether these calls are made (and spent): false for the replayed agent (modelled cost).
    pub spent: bool,
    /// Models of these calls without a price (in the bundled table or the suite's
    /// `[pricing]`): they make `usd` unknown.
    pub unpriced: std::collections::BTreeSet<String>,
}

/// How a role's unpriced models name a trace that records no model.
const NO_MODEL: &str = "(no model recorded)";

/// The whole estimate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Estimate {
    pub roles: Vec<RoleEstimate>,
    /// Traces the loader did not keep (not estimated).
    pub skipped_traces: usize,
}

impl Estimate {
    /// Dollars the run would spend (summarizer + judge + eval agent), low and high; `None`
    /// when a spending role's price is unknown.
    pub fn spend(&self) -> (Option<f64>, Option<f64>) {
        let sum = |f: fn(&RoleEstimate) -> Option<f64>| {
            self.roles
                .iter()
                .filter(|r| r.spent)
                .map(f)
                .sum::<Option<f64>>()
        };
        (sum(|r| r.usd.0), sum(|r| r.usd.1))
    }

    /// The spending roles' models without a price, as `` `model` (role) ``: what makes
    /// [`Estimate::spend`] unknown.
    pub fn unpriced_spend(&self) -> Vec<String> {
        self.roles
            .iter()
            .filter(|r| r.spent)
            .flat_map(|r| {
                r.unpriced
                    .iter()
                    .map(move |m| format!("`{m}` ({})", r.role))
            })
            .collect()
    }

    /// The table `--dry-run` prints.
    pub fn table(&self) -> String {
        let usd = |x: Option<f64>| x.map_or("?".to_string(), |v| format!("${v:.4}"));
        let range = |(a, b): (u64, u64)| {
            if a == b {
                crate::runner::progress::human_tokens(a)
            } else {
                format!(
                    "{}–{}",
                    crate::runner::progress::human_tokens(a),
                    crate::runner::progress::human_tokens(b)
                )
            }
        };
        let mut rows: Vec<Vec<String>> = self
            .roles
            .iter()
            .map(|r| {
                vec![
                    if r.spent {
                        r.role.to_string()
                    } else {
                        format!("{} (modelled)", r.role)
                    },
                    range(r.calls),
                    range(r.input),
                    range(r.output),
                    // The modelled agent is one plain replay per trace × variant: a run's
                    // units (a planted needle, a real model's summaries) compact otherwise.
                    if r.spent {
                        format!("{}–{}", usd(r.usd.0), usd(r.usd.1))
                    } else {
                        format!("≈{}", usd(r.usd.1))
                    },
                ]
            })
            .collect();
        let (lo, hi) = self.spend();
        rows.push(vec![
            "total spent".into(),
            range(sum_spent(&self.roles, |r| r.calls)),
            range(sum_spent(&self.roles, |r| r.input)),
            range(sum_spent(&self.roles, |r| r.output)),
            format!("{}–{}", usd(lo), usd(hi)),
        ]);
        let mut out =
            String::from("estimate (offline replay; answers and tool steps as a low–high range)\n");
        out.push_str(&crate::output::table(
            &["role", "calls", "input tok", "output tok", "cost"],
            &rows,
        ));
        let unpriced: Vec<String> = self
            .roles
            .iter()
            .flat_map(|r| {
                r.unpriced
                    .iter()
                    .filter(|m| *m != NO_MODEL)
                    .map(move |m| format!("`{m}` ({})", r.role))
            })
            .collect();
        if !unpriced.is_empty() {
            out.push_str(&crate::output::wrap(
                &format!(
                    "? = no price for {}: add it under the suite's [pricing] (docs/suite.md)",
                    unpriced.join(", ")
                ),
                crate::report::terminal::WIDTH,
            ));
        }
        if self.roles.iter().any(|r| r.unpriced.contains(NO_MODEL)) {
            // The report's words (`report::pricing_notes`): no model, so no `[pricing]` entry.
            out.push_str(&crate::output::wrap(
                &format!(
                    "? = no price for the agent's views: {}",
                    crate::report::pricing_notes::price_advice("agent", None)
                ),
                crate::report::terminal::WIDTH,
            ));
        }
        if self.skipped_traces > 0 {
            out.push_str(&format!(
                "not estimated: {} trace(s) not loaded\n",
                self.skipped_traces
            ));
        }
        out
    }
}

fn sum_spent(roles: &[RoleEstimate], f: fn(&RoleEstimate) -> (u64, u64)) -> (u64, u64) {
    roles
        .iter()
        .filter(|r| r.spent)
        .map(f)
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

fn price_model(c: &ProviderConfig) -> &str {
    if c.kind == ProviderKind::Offline {
        "offline"
    } else {
        &c.model
    }
}

/// `calls` calls of `model` summing to `input` and `output` tokens, each priced as their average
/// call (a long-context tier is a call's: a role's whole run is not one prompt).
fn price(prices: &PriceTable, model: &str, calls: u64, input: u64, output: u64) -> Option<f64> {
    if input == 0 && output == 0 {
        return Some(0.0);
    }
    let u = Usage {
        input,
        output,
        ..Usage::default()
    };
    prices.cost_as_calls(model, &u, calls).usd()
}

/// Estimate what running `plan` costs per role.
pub fn estimate(plan: &Plan, suite: &LoadedSuite) -> anyhow::Result<Estimate> {
    let prices = PriceTable::bundled().with_overrides(&suite.suite.pricing)?;
    let agent_cfg = &suite.provider(ProviderRole::Agent).config;
    let summary_cfg = &suite.provider(ProviderRole::Summary).config;
    let judge = suite.provider(ProviderRole::Judge);
    let summary_high = summary_cfg
        .max_tokens
        .map_or(SUMMARY_OUTPUT_HIGH, u64::from);
    let agent_traits = agent_cfg.wire_traits();
    let (summary_model, agent_model) = (price_model(summary_cfg), price_model(agent_cfg));
    let judge_model = price_model(&judge.config);

    let mut modelled = RoleEstimate {
        role: "agent",
        usd: (Some(0.0), Some(0.0)),
        ..RoleEstimate::default()
    };
    let mut summ = RoleEstimate {
        role: "summarizer",
        spent: true,
        usd: (Some(0.0), Some(0.0)),
        ..RoleEstimate::default()
    };
    let mut eval_agent = RoleEstimate {
        role: "eval agent",
        spent: true,
        usd: (Some(0.0), Some(0.0)),
        ..RoleEstimate::default()
    };
    let mut judge_e = RoleEstimate {
        role: "judge",
        spent: true,
        usd: (Some(0.0), Some(0.0)),
        ..RoleEstimate::default()
    };
    let mut modelled_usd = Some(0.0);
    let mut skipped = 0;
    let repeats = u64::from(plan.repeats);
    let summarizer = OfflineSummarizer;
    for t in &plan.traces {
        let Some(trace) = &t.trace else {
            skipped += 1;
            continue;
        };
        for v in &plan.variants {
            let config = v.config.resolve_for(&trace.meta, &prices)?;
            let mut env = engine::ReplayEnv::new(&summarizer);
            env.prices = Some(&prices);
            let replay = engine::replay(trace, &config, &env)?;
            // Units of this (trace, variant) pair that replay it: every sample × repeat.
            let units = plan.samples.len() as u64 * repeats;
            let input = replay.input_tokens();
            let output: u64 = replay.calls.iter().filter_map(|c| c.output_tokens).sum();
            let calls = replay.calls.len() as u64;
            add(&mut modelled.calls, (calls * units, calls * units));
            add(&mut modelled.input, (input * units, input * units));
            add(&mut modelled.output, (output * units, output * units));
            // What the run prices (`replay_output`): each call, its cached part at the cache
            // rate, its own tier.
            let m = config.agent_model(trace.meta.model.as_deref());
            let c = m.and_then(|m| {
                prices
                    .cost_of_calls(m, replay.agent_calls().as_slice())
                    .usd()
            });
            if c.is_none() {
                modelled.unpriced.insert(m.unwrap_or(NO_MODEL).to_string());
            }
            modelled_usd = modelled_usd.zip(c).map(|(a, c)| a + c * units as f64);

            let sc = replay.summarizer_calls;
            let si = replay.summarizer_usage.input;
            let so = replay.summarizer_usage.output;
            add_priced(
                &mut summ,
                &prices,
                summary_model,
                (sc * units, sc * units),
                (si * units, si * units),
                (so * units, so.max(sc * summary_high) * units),
            );

            let view = replay.calls.last().map_or(0, |c| c.input_tokens);
            let reference = replay.calls.last().map_or(0, |c| c.reference_tokens);
            for s in &plan.samples {
                let EvalCalls {
                    calls: (lo, hi),
                    limit,
                    judge: (jl, jh),
                } = eval_calls(&s.eval, &s.params);
                // The limit the request carries on the wire (the provider's `max_tokens` when
                // larger, a reasoning model's allowance, a thinking budget): the most a call
                // is billed for output.
                let asked = u32::try_from(limit).unwrap_or(u32::MAX);
                let wire = u64::from(agent_traits.answer_limit(agent_cfg.kind.as_str(), asked));
                add_priced(
                    &mut eval_agent,
                    &prices,
                    agent_model,
                    (lo * repeats, hi * repeats),
                    (lo * view * repeats, hi * reference.max(view) * repeats),
                    (lo * (limit / 10) * repeats, hi * wire * repeats),
                );
                if judge.configured && jh > 0 {
                    add_priced(
                        &mut judge_e,
                        &prices,
                        judge_model,
                        (jl * repeats, jh * repeats),
                        (jl * JUDGE_INPUT.0 * repeats, jh * JUDGE_INPUT.1 * repeats),
                        (jl * JUDGE_OUTPUT.0 * repeats, jh * JUDGE_OUTPUT.1 * repeats),
                    );
                }
            }
        }
    }
    modelled.usd = (modelled_usd, modelled_usd);
    let mut roles = vec![modelled, summ, eval_agent];
    if judge.configured {
        roles.push(judge_e);
    }
    Ok(Estimate {
        roles,
        skipped_traces: skipped,
    })
}

/// Add `calls`, `input` and `output` tokens (low, high) to role `r`, and their price: `calls`
/// calls of `model`, each their average (one trace × variant's summaries, one sample's
/// questions), so a long-context tier is decided by calls of one kind, not by an average over
/// the plan. An unknown price makes the role's unknown.
fn add_priced(
    r: &mut RoleEstimate,
    prices: &PriceTable,
    model: &str,
    calls: (u64, u64),
    input: (u64, u64),
    output: (u64, u64),
) {
    add(&mut r.calls, calls);
    add(&mut r.input, input);
    add(&mut r.output, output);
    let plus = |acc: Option<f64>, c: Option<f64>| acc.zip(c).map(|(a, c)| a + c);
    let (lo, hi) = (
        price(prices, model, calls.0, input.0, output.0),
        price(prices, model, calls.1, input.1, output.1),
    );
    if lo.is_none() || hi.is_none() {
        r.unpriced.insert(model.to_string());
    }
    r.usd.0 = plus(r.usd.0, lo);
    r.usd.1 = plus(r.usd.1, hi);
}

fn add(acc: &mut (u64, u64), (a, b): (u64, u64)) {
    acc.0 += a;
    acc.1 += b;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overrides;
    use crate::runner::session::{plan_run, ImportLoader};
    use std::path::Path;

    /// The quickstart limited to its first trace and the `replay` and `needle` evals, with
    /// `providers` in place of its offline ones.
    fn small(providers: &str) -> (Plan, LoadedSuite) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("evals/quickstart.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let head = text.split("[providers.agent]").next().unwrap();
        let overrides = Overrides {
            evals: vec!["replay".into(), "needle".into()],
            limit: Some(1),
            ..Overrides::default()
        };
        // A hosted API needs `api_key_env` in the suite (the key itself only to run).
        let providers = ["openai", "anthropic"]
            .iter()
            .fold(providers.to_string(), |p, k| {
                p.replace(
                    &format!("kind = \"{k}\"\n"),
                    &format!("kind = \"{k}\"\napi_key_env = \"CTXBENCH_TEST_KEY\"\n"),
                )
            });
        let suite =
            LoadedSuite::from_str_with(&format!("{head}\n{providers}"), &path, &overrides).unwrap();
        let planned = plan_run(&suite, &ImportLoader).unwrap();
        ((*planned.plan).clone(), suite)
    }

    fn role<'a>(e: &'a Estimate, name: &str) -> &'a RoleEstimate {
        e.roles.iter().find(|r| r.role == name).unwrap()
    }

    #[test]
    fn offline_providers_spend_nothing_and_calls_follow_the_plan() {
        let (plan, suite) = small("");
        let e = estimate(&plan, &suite).unwrap();
        assert_eq!(e.spend(), (Some(0.0), Some(0.0)));
        assert!(e.roles.iter().all(|r| r.role != "judge"), "no judge set");
        // Eval-agent calls: needle samples × traces × variants × repeats × (2, max_steps + 1)
        // per needle (the quickstart's `max_steps` is the default 8, one needle); replay 0.
        let needle = plan.samples.iter().filter(|s| &*s.eval == "needle").count() as u64;
        assert!(needle > 0 && plan.samples.len() as u64 > needle);
        let n = needle * (plan.traces.len() * plan.variants.len()) as u64 * u64::from(plan.repeats);
        assert_eq!(role(&e, "eval agent").calls, (2 * n, 9 * n));
        // The replayed agent: one replay per unit, every unit of the plan.
        let agent = role(&e, "agent");
        assert!(!agent.spent);
        assert_eq!(agent.calls.0 % plan.len() as u64, 0);
        assert!(agent.calls.0 > 0);
        // The summarizer's calls are what the offline replays made (the quickstart compacts).
        assert!(role(&e, "summarizer").calls.0 > 0);
        for r in &e.roles {
            assert!(r.calls.0 <= r.calls.1, "{r:?}");
            assert!(r.input.0 <= r.input.1, "{r:?}");
            assert!(r.output.0 <= r.output.1, "{r:?}");
        }
        assert!(e.table().contains("agent (modelled)"));
    }

    #[test]
    fn real_models_are_priced_as_a_range_and_a_judge_adds_its_row() {
        let offline = {
            let (plan, suite) = small("");
            estimate(&plan, &suite).unwrap()
        };
        let providers = "[providers.agent]\nkind = \"openai\"\nmodel = \"gpt-4o-mini\"\n\
            [providers.summary]\nkind = \"openai\"\nmodel = \"gpt-4o-mini\"\nmax_tokens = 500\n\
            [providers.judge]\nkind = \"openai\"\nmodel = \"gpt-4o-mini\"\n";
        let (plan, suite) = small(providers);
        let e = estimate(&plan, &suite).unwrap();
        let (lo, hi) = e.spend();
        let (lo, hi) = (lo.unwrap(), hi.unwrap());
        assert!(0.0 < lo && lo < hi, "{lo} {hi}");
        // Same replays, so the same calls and inputs; the summary limit bounds the high end.
        let (s, so) = (role(&e, "summarizer"), role(&offline, "summarizer"));
        assert_eq!((s.calls, s.input), (so.calls, so.input));
        // (per replay the larger of the offline summaries and calls × 500)
        assert!(
            s.output.1 >= so.output.0.max(s.calls.0 * 500),
            "{s:?} {so:?}"
        );
        assert!(s.output.1 <= so.output.0 + s.calls.0 * 500, "{s:?} {so:?}");
        // gpt-4o-mini: $0.15 / $0.60 per million tokens in the bundled table.
        let p = PriceTable::bundled().lookup("gpt-4o-mini").unwrap().1;
        let want = (s.input.1 as f64 * p.input + s.output.1 as f64 * p.output) / 1e6;
        assert!((s.usd.1.unwrap() - want).abs() < 1e-9, "{:?} {want}", s.usd);
        // needle is not judged: a judge row with nothing in it.
        assert_eq!(role(&e, "judge").calls, (0, 0));
        assert!(e.table().contains("total spent"));
    }

    #[test]
    fn a_long_context_tier_is_priced_per_call_in_the_estimate() {
        // Gemini 3 Pro (the first trace's model, priced as recorded) and Claude Sonnet 4.5 (the
        // summarizer) bill a call past 200,000 input tokens at higher rates. The plan's calls
        // add up past that, none comes near it: the estimate is the one without the tiers.
        let summary = "[providers.summary]\nkind = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n";
        let table = PriceTable::bundled();
        let without_tier = |model: &str| {
            let p = table.lookup(model).unwrap().1;
            assert!(p.long_context.is_some(), "{model}");
            format!(
                "[pricing.\"{model}\"]\ninput = {}\noutput = {}\ncache_read = {}\n\
                 cache_write = {}\n",
                p.input,
                p.output,
                p.cache_read.unwrap_or(p.input),
                p.cache_write.unwrap_or(p.input)
            )
        };
        let tiered = {
            let (plan, suite) = small(summary);
            estimate(&plan, &suite).unwrap()
        };
        let flat = {
            let text = format!(
                "{summary}{}{}",
                without_tier("gemini-3-pro-preview"),
                without_tier("claude-sonnet-4-5")
            );
            let (plan, suite) = small(&text);
            estimate(&plan, &suite).unwrap()
        };
        for name in ["agent", "summarizer"] {
            let (t, f) = (role(&tiered, name), role(&flat, name));
            assert!(t.input.0 > 200_000, "{t:?}");
            assert!(t.usd.0.unwrap() > 0.0, "{t:?}");
            assert_eq!(t.usd, f.usd, "{name}");
        }
    }

    #[test]
    fn each_kind_of_call_takes_its_own_tier() {
        // One 300,000-token call among ten of 50,000: the big one at Sonnet 4.5's long-context
        // rate, the others at the normal one (an average over all eleven, 72,727 tokens, would
        // price the big one at the normal rate too).
        let t = PriceTable::bundled();
        let mut r = RoleEstimate {
            usd: (Some(0.0), Some(0.0)),
            ..RoleEstimate::default()
        };
        let m = "claude-sonnet-4-5";
        add_priced(&mut r, t, m, (1, 1), (300_000, 300_000), (0, 0));
        add_priced(&mut r, t, m, (10, 10), (500_000, 500_000), (0, 0));
        let one = |input| {
            t.cost(
                m,
                &Usage {
                    input,
                    ..Usage::default()
                },
            )
            .usd()
            .unwrap()
        };
        let want = one(300_000) + 10.0 * one(50_000);
        assert!((r.usd.0.unwrap() - want).abs() < 1e-9, "{:?} {want}", r.usd);
        assert_eq!(r.usd.0, r.usd.1);
        assert_eq!((r.calls, r.input), ((11, 11), (800_000, 800_000)));
        assert!(r.usd.0.unwrap() > price(t, m, 11, 800_000, 0).unwrap());
        // An unknown model makes the role's price unknown, never $0.
        assert!(r.unpriced.is_empty());
        add_priced(&mut r, t, "my-finetune-7b", (1, 1), (10, 10), (1, 1));
        assert_eq!(r.usd, (None, None));
        assert_eq!(r.unpriced.iter().collect::<Vec<_>>(), ["my-finetune-7b"]);
    }

    fn params(v: serde_json::Value) -> BTreeMap<String, Value> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn calls_and_limits_come_from_the_eval_params() {
        let c = eval_calls(
            "needle",
            &params(
                serde_json::json!({"depth": 0.5, "needles": 2, "max_steps": 3,
                                       "max_output_tokens": 1000}),
            ),
        );
        assert_eq!(
            c,
            EvalCalls {
                calls: (4, 8),
                limit: 1000,
                judge: (0, 0)
            }
        );
        // Defaults: one needle, 8 steps, 200 tokens.
        let c = eval_calls("needle", &params(serde_json::json!({"depth": 0.5})));
        assert_eq!((c.calls, c.limit), ((2, 9), 200));
        let c = eval_calls(
            "drift",
            &params(serde_json::json!({"after_compactions": 3, "judge": true})),
        );
        assert_eq!((c.calls, c.limit, c.judge), ((1, 3), 400, (1, 3)));
        let c = eval_calls(
            "drift",
            &params(serde_json::json!({"after_compactions": 3, "fold": 2})),
        );
        assert_eq!((c.calls, c.judge), ((1, 1), (0, 0)));
        let c = eval_calls(
            "continuation",
            &params(serde_json::json!({"fold": 1, "steps": 5, "max_output_tokens": 64})),
        );
        assert_eq!((c.calls, c.limit), ((2, 10), 64));
        let c = eval_calls(
            "probes",
            &params(serde_json::json!({"kind": "recall", "per_kind": 2, "judge": true})),
        );
        assert_eq!((c.calls, c.limit, c.judge), ((2, 12), 200, (1, 2)));
        let c = eval_calls("probes", &params(serde_json::json!({"kind": "decision"})));
        assert_eq!((c.calls, c.limit), ((1, 1), 300));
        assert_eq!(eval_calls("replay", &BTreeMap::new()), EvalCalls::default());
    }

    #[test]
    fn the_high_end_bills_the_limit_the_request_carries() {
        // A reasoning model without `max_tokens` is sent the eval's limit + its reasoning
        // allowance; gpt-4o-mini the eval's limit. Same calls and inputs either way.
        let plain = {
            let p = "[providers.agent]\nkind = \"openai\"\nmodel = \"gpt-4o-mini\"\n";
            let (plan, suite) = small(p);
            estimate(&plan, &suite).unwrap()
        };
        let reasoning = {
            let p = "[providers.agent]\nkind = \"openai\"\nmodel = \"gpt-5-mini\"\n";
            let (plan, suite) = small(p);
            estimate(&plan, &suite).unwrap()
        };
        let (a, r) = (role(&plain, "eval agent"), role(&reasoning, "eval agent"));
        assert_eq!((a.calls, a.input), (r.calls, r.input));
        assert_eq!(a.output.0, r.output.0);
        let allowance = u64::from(crate::providers::http::REASONING_ALLOWANCE);
        assert_eq!(r.output.1, a.output.1 + a.calls.1 * allowance);
        // needle's 200 per call at the high end for gpt-4o-mini.
        assert_eq!(a.output.1, a.calls.1 * 200);
    }
}
