//! Standing instructions: are the user's early rules ("never touch `vendor/legacy/`", "answer in
//! French") still there after compaction, and does the agent still know them?
//!
//! One user turn per listed kind ([`RuleKind`]) is planted right after the opening request, its
//! wording and value chosen by the unit's seed ([`rules_for`]). The planted trace is replayed;
//! for fold k (`params.fold`, the k-th compaction) the view the engine built there is checked:
//!
//! - `rules_retained`: the fraction of rules the view still states — a line of the view that
//!   names the rule's key (`vendor/legacy/`, `french`, …) together with an imperative cue
//!   (`never`, `always`, `do not`, …). Deterministic; no model.
//! - `rules_restated`: the agent gets the view plus [`RULES_QUESTION`] ("which standing
//!   instructions apply?"); the fraction of rules whose key its answer names. The offline
//!   agent answers lexically ([`offline_answer`]: the instruction-like lines of the human turns,
//!   summaries and reminders in view), a model answers in its own words.
//! - `score` = 5 × `rules_restated`; with `judge = true`, `judge_score` (0–5, [`JUDGE_RUBRIC`]).
//! - `retained.<kind>` / `restated.<kind>` per kind, `rules` (planted), `fold`.
//!
//! A variant with fewer than k compactions has no fold k: the sample has `rules` only and
//! `evidence.reached = false`.

use super::agent;
use super::truth;
use super::EvalError;
use crate::engine::layers::truncate::REMINDER_KIND;
use crate::engine::{
    self, KeepViews, KeptView, ReplayEnv, ResolvedConfig, StoreTarget, Summarizer,
};
use crate::evalspec::rules::RuleKind;
use crate::evalspec::Asking;
use crate::pricing::PriceTable;
use crate::providers::{ChatRequest, Provider};
use crate::trace::{Message, Role, Trace};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The question asked after the compacted view.
pub const RULES_QUESTION: &str = "Pause the task. List every standing instruction or constraint the user has given in this session that still applies to your work (paths you must not touch, commands you must not run, language or format requirements). One per line, each starting with `RULE:`. If there are none, answer `RULE: none`.";

/// Words that make a line an instruction rather than a mention.
const CUES: [&str; 10] = [
    "never",
    "always",
    "do not",
    "don't",
    "must",
    "avoid",
    "only",
    "forbidden",
    "not allowed",
    "keep",
];

/// One planted standing instruction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rule {
    pub kind: &'static str,
    /// The user turn as planted.
    pub text: String,
    /// Lowercase key whose presence (with a cue, in a view line) means the rule is stated.
    pub key: String,
}

const PATHS: [&str; 5] = [
    "vendor/legacy/",
    "third_party/frozen/",
    "ci/secrets/",
    "assets/licensed/",
    "deploy/prod/",
];
const LANGUAGES: [&str; 5] = ["French", "German", "Spanish", "Portuguese", "Italian"];
const COMMANDS: [&str; 5] = [
    "git push",
    "npm publish",
    "terraform apply",
    "docker system prune",
    "kubectl delete",
];
const FORMATS: [&str; 4] = [
    "markdown table",
    "numbered checklist",
    "yaml block",
    "haiku",
];

/// SplitMix64 step: the same seed always picks the same wording and values.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn pick<'a>(list: &[&'a str], seed: u64, salt: u64) -> &'a str {
    list[(mix(seed ^ salt.wrapping_mul(0x1000_0000_01B3)) % list.len() as u64) as usize]
}

/// The rules of `kinds` for `seed` (one per kind, in the order given).
pub fn rules_for(kinds: &[RuleKind], seed: u64) -> Vec<Rule> {
    kinds
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let s = seed.wrapping_add(i as u64);
            let (text, key) = match k {
                RuleKind::ForbidPath => {
                    let p = pick(&PATHS, s, 1);
                    (
                        format!("Important for the rest of this session: never modify, create or delete anything under `{p}`."),
                        p.to_string(),
                    )
                }
                RuleKind::Language => {
                    let l = pick(&LANGUAGES, s, 2);
                    (
                        format!("One more thing: always write your explanations and final answer to me in {l}."),
                        l.to_lowercase(),
                    )
                }
                RuleKind::NeverCommand => {
                    let c = pick(&COMMANDS, s, 3);
                    (
                        format!("Also, whatever happens, never run `{c}` in this session."),
                        c.to_string(),
                    )
                }
                RuleKind::AlwaysFormat => {
                    let f = pick(&FORMATS, s, 4);
                    (
                        format!("Please always end your final report with a {f} of what changed."),
                        f.to_string(),
                    )
                }
            };
            Rule {
                kind: k.as_str(),
                text,
                key,
            }
        })
        .collect()
}

/// The trace with one user turn per rule right after the opening request (after the first
/// human turn; at the start when there is none). Returns the planted trace and the index of
/// the first planted turn.
pub fn plant(trace: &Trace, rules: &[Rule]) -> (Trace, usize) {
    let at = trace
        .messages
        .iter()
        .position(truth::is_human_turn)
        .map_or(0, |i| i + 1);
    let mut t = trace.clone();
    for (i, r) in rules.iter().enumerate() {
        t.messages.insert(at + i, Message::user(r.text.clone()));
    }
    (t, at)
}

/// True when a line states the rule: it names the key and carries an imperative cue.
fn line_states(line: &str, key: &str) -> bool {
    let l = line.to_lowercase();
    l.contains(key) && CUES.iter().any(|c| l.contains(c))
}

/// Whether `view` states `rule` (some line of some message).
pub fn view_states(view: &[Message], rule: &Rule) -> bool {
    view.iter()
        .any(|m| m.content.lines().any(|l| line_states(l, &rule.key)))
}

/// Whether an answer restates `rule`: it names the key.
pub fn answer_restates(answer: &str, rule: &Rule) -> bool {
    answer.to_lowercase().contains(&rule.key)
}

/// The offline agent's answer to [`RULES_QUESTION`]: every instruction-like line (a cue word)
/// of the human turns, summaries and context reminders in view, newest first, deduplicated,
/// at most 40. Tool output and system prompts are not the user's instructions and are skipped.
pub fn offline_answer(context: &[Message]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let sources = context.iter().rev().filter(|m| {
        truth::is_human_turn(m)
            || m.kind.as_deref() == Some(REMINDER_KIND)
            || (matches!(m.role, Role::User | Role::System) && m.content.contains("<summary>"))
    });
    'outer: for m in sources {
        for l in m.content.lines().map(str::trim) {
            let lower = l.to_lowercase();
            if l.is_empty() || !CUES.iter().any(|c| lower.contains(c)) {
                continue;
            }
            let line = format!("RULE: {}", super::answer_format::one_line(l));
            if !lines.contains(&line) {
                lines.push(line);
            }
            if lines.len() == 40 {
                break 'outer;
            }
        }
    }
    if lines.is_empty() {
        "RULE: none".into()
    } else {
        lines.join("\n")
    }
}

/// Rules sample parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct RulesParams {
    /// 1-based compaction index.
    pub fold: usize,
    pub kinds: Vec<RuleKind>,
    pub judge: bool,
    /// Output limit of the answer (the section's `max_output_tokens`, else 400).
    pub max_output_tokens: u32,
}

impl RulesParams {
    /// Read a unit's params (typed once in [`crate::evalspec::rules::RulesParams`]).
    pub fn from_params(p: &BTreeMap<String, Value>) -> Result<Self, EvalError> {
        let t: crate::evalspec::rules::RulesParams =
            crate::evalspec::from_params(p).map_err(|source| EvalError::Params {
                eval: "rules",
                source,
            })?;
        Ok(RulesParams {
            fold: t.fold.max(1) as usize,
            kinds: t.kinds,
            judge: t.judge,
            max_output_tokens: crate::evalspec::output_limit(
                t.max_output_tokens,
                crate::evalspec::rules::MAX_OUTPUT_TOKENS,
            ),
        })
    }
}

/// The replay of the planted trace and what fold `params.fold` probes.
pub struct Prepared {
    pub replay: engine::Replay,
    pub probe: Probe,
}

/// The planted rules and the view of fold `params.fold`, if reached.
pub struct Probe {
    pub rules: Vec<Rule>,
    /// Trace index (in the planted trace) of the first planted turn.
    pub planted_at: usize,
    pub view: Option<KeptView>,
}

pub fn prepare(
    trace: &Trace,
    config: &ResolvedConfig,
    params: &RulesParams,
    summarizer: &dyn Summarizer,
    prices: &PriceTable,
    store_root: PathBuf,
    seed: u64,
) -> Result<Prepared, EvalError> {
    let rules = rules_for(&params.kinds, seed);
    let (planted, planted_at) = plant(trace, &rules);
    let mut env = ReplayEnv::new(summarizer);
    env.prices = Some(prices);
    env.store = StoreTarget::Dir(store_root);
    env.seed = seed;
    env.keep_views = KeepViews::AfterCompaction;
    let mut replay = engine::replay(&planted, config, &env).map_err(EvalError::Engine)?;
    let views = std::mem::take(&mut replay.views);
    let view = views.into_iter().nth(params.fold - 1);
    Ok(Prepared {
        replay,
        probe: Probe {
            rules,
            planted_at,
            view,
        },
    })
}

/// The fixed judge rubric for a restatement.
pub const JUDGE_RUBRIC: &str = "You grade whether an AI agent still knows the standing instructions its user gave earlier in a session whose context was compressed.
Compare the AGENT ANSWER with the RULES and give one integer score:
5 = every rule restated correctly
4 = all but one rule, or all with minor inaccuracies
3 = about half of the rules
2 = one rule, or rules stated vaguely
1 = a rule stated wrongly (e.g. the opposite)
0 = none
Reply with a first line `SCORE: <0-5>` and one sentence of rationale.";

/// The agent's answer (and the judge's grade when one is given).
pub struct Answer {
    pub text: String,
    pub judge: Option<(Option<f64>, String)>,
}

pub async fn ask(
    prepared: &Probe,
    agent: &dyn Provider,
    judge: Option<&dyn Provider>,
    max_output_tokens: u32,
    nonce: &str,
) -> Result<Option<Answer>, EvalError> {
    let Some(view) = &prepared.view else {
        return Ok(None);
    };
    let mut messages = view.messages.clone();
    messages.push(Message::user(RULES_QUESTION));
    let out = agent::run(
        agent,
        Asking::Rules,
        messages,
        None,
        1,
        Some(max_output_tokens),
        &format!("{nonce}/rules"),
    )
    .await?;
    let mut answer = Answer {
        text: out.answer,
        judge: None,
    };
    if let Some(j) = judge {
        let rules: Vec<String> = prepared
            .rules
            .iter()
            .map(|r| format!("- {}", r.text))
            .collect();
        let req = ChatRequest::new(vec![
            Message::system(JUDGE_RUBRIC),
            Message::user(format!(
                "RULES\n{}\n\nAGENT ANSWER\n{}",
                rules.join("\n"),
                answer.text
            )),
        ])
        .with_nonce(format!("{nonce}/rules-judge"));
        let resp = j.chat(&req).await?;
        answer.judge = Some((
            Some(super::drift::judge_score(&resp)?),
            resp.message.content,
        ));
    }
    Ok(Some(answer))
}

/// Scores and evidence of one fold.
pub fn score(
    params: &RulesParams,
    prepared: &Probe,
    answer: Option<&Answer>,
) -> (BTreeMap<String, f64>, Value) {
    let mut s = BTreeMap::new();
    s.insert("rules".into(), prepared.rules.len() as f64);
    let mut per_rule = Vec::new();
    if let Some(view) = &prepared.view {
        let n = prepared.rules.len().max(1) as f64;
        let (mut kept, mut said) = (0usize, 0usize);
        for r in &prepared.rules {
            let k = view_states(&view.messages, r);
            let a = answer.is_some_and(|a| answer_restates(&a.text, r));
            kept += k as usize;
            said += a as usize;
            s.insert(format!("retained.{}", r.kind), k as u8 as f64);
            s.insert(format!("restated.{}", r.kind), a as u8 as f64);
            per_rule.push(json!({"kind": r.kind, "text": r.text, "key": r.key,
                                 "in_view": k, "restated": a}));
        }
        s.insert("rules_retained".into(), kept as f64 / n);
        s.insert("rules_restated".into(), said as f64 / n);
        s.insert("score".into(), 5.0 * said as f64 / n);
        if let Some(Some(j)) = answer.and_then(|a| a.judge.as_ref().map(|j| j.0)) {
            s.insert("judge_score".into(), j);
        }
    }
    let evidence = json!({
        "fold": params.fold,
        "reached": prepared.view.is_some(),
        "view_trace_index": prepared.view.as_ref().map(|v| v.trace_index),
        "planted_at": prepared.planted_at,
        "rules": per_rule,
        "answer": answer.map(|a| a.text.clone()),
        "judge_rationale": answer.and_then(|a| a.judge.as_ref().map(|j| j.1.clone())),
    });
    (s, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{SourceFormat, TraceMeta};

    #[test]
    fn rules_are_seeded_and_one_per_kind() {
        let a = rules_for(&RuleKind::ALL, 7);
        assert_eq!(a, rules_for(&RuleKind::ALL, 7));
        assert_eq!(a.len(), 4);
        assert_eq!(a[1].kind, "language");
        let differs = (0..20).any(|s| rules_for(&RuleKind::ALL, s) != a);
        assert!(differs, "the seed never changes the rules");
        for r in &a {
            assert!(line_states(&r.text, &r.key), "{r:?} does not state itself");
        }
    }

    #[test]
    fn planting_follows_the_opening_request() {
        let mut t = Trace::new(TraceMeta::new("t", SourceFormat::Canonical));
        t.messages.push(Message::system("sys: you must be careful"));
        t.messages.push(Message::user("Fix the parser"));
        t.messages.push(Message::assistant("ok", vec![]));
        let rules = rules_for(&[RuleKind::ForbidPath, RuleKind::Language], 1);
        let (p, at) = plant(&t, &rules);
        assert_eq!(at, 2);
        assert_eq!(p.messages.len(), 5);
        assert_eq!(p.messages[2].content, rules[0].text);
        assert!(truth::is_human_turn(&p.messages[3]));
        // The offline answer restates both, not the system prompt; a view without them, none.
        let ans = offline_answer(&p.messages);
        assert!(rules.iter().all(|r| answer_restates(&ans, r)), "{ans}");
        assert!(!ans.contains("careful"), "{ans}");
        assert!(rules.iter().all(|r| view_states(&p.messages, r)));
        let ans = offline_answer(&t.messages);
        assert_eq!(ans, "RULE: none");
        assert!(!rules.iter().any(|r| view_states(&t.messages, r)));
    }

    #[test]
    fn a_mention_without_a_cue_is_not_a_rule() {
        let r = &rules_for(&[RuleKind::ForbidPath], 3)[0];
        let tool = format!("ls {}\nREADME.md", r.key);
        assert!(!view_states(&[Message::tool("c", "bash", tool)], r));
        let said = format!("- Later: do not modify {}", r.key);
        assert!(view_states(&[Message::user(said)], r));
    }

    #[test]
    fn scores_count_rules_in_view_and_in_the_answer() {
        let rules = rules_for(&[RuleKind::ForbidPath, RuleKind::NeverCommand], 5);
        let view = vec![Message::user(rules[0].text.clone())];
        let prepared = Probe {
            rules: rules.clone(),
            planted_at: 1,
            view: Some(KeptView {
                trace_index: 9,
                tokens: 10,
                messages: view,
                shared: Vec::new(),
            }),
        };
        let params = RulesParams {
            fold: 2,
            kinds: vec![],
            judge: false,
            max_output_tokens: 400,
        };
        let answer = Answer {
            text: format!("RULE: never run {}", rules[1].key),
            judge: Some((Some(4.0), "SCORE: 4".into())),
        };
        let (s, e) = score(&params, &prepared, Some(&answer));
        assert_eq!(s["rules_retained"], 0.5);
        assert_eq!(s["rules_restated"], 0.5);
        assert_eq!(s["retained.forbid_path"], 1.0);
        assert_eq!(s["restated.never_command"], 1.0);
        assert_eq!(s["score"], 2.5);
        assert_eq!(s["judge_score"], 4.0);
        assert_eq!(e["reached"], true);
        let unreached = Probe {
            view: None,
            ..prepared
        };
        let (s, e) = score(&params, &unreached, None);
        assert!(!s.contains_key("rules_retained"));
        assert_eq!(e["reached"], false);
    }

    #[test]
    fn params_parse_kinds_and_reject_unknown_ones() {
        let mut m = BTreeMap::new();
        m.insert("fold".to_string(), json!(3));
        m.insert("kinds".to_string(), json!(["language"]));
        let p = RulesParams::from_params(&m).unwrap();
        assert_eq!((p.fold, p.kinds), (3, vec![RuleKind::Language]));
        m.insert("kinds".to_string(), json!(["nope"]));
        assert!(RulesParams::from_params(&m).is_err());
    }
}
