//! Targeted evals: needle recall through the offload store, goal drift, probes and invariants.
//!
//! Each eval isolates one mechanism. The pure parts (planting, ground truth, scoring, the
//! sandboxed file tools) are separate modules; `needle`, `drift`, `probes`, `continuation` and
//! `rules` combine them with an engine replay and a provider, and `executors` plugs them into the
//! runner: one run hook per eval (`executors/<name>.rs`), registered by one line of its `evals!`.

pub mod actions;
pub mod agent;
pub(crate) mod answer_format;
pub mod continuation;
pub mod drift;
pub mod estimate;
pub mod executors;
pub mod fs_tools;
pub mod needle;
pub mod offline_agent;
pub mod plant;
pub mod prefixes;
pub mod probes;
pub mod rubric;
pub mod rules;
pub(crate) mod safe_fs;
pub mod summaries;
pub(crate) mod truth;

use crate::providers::ProviderError;

/// Why an eval sample could not be scored. Recorded in the sample (kind + message); the run
/// goes on. Every variant caused by a lower error keeps it as its `source()`, so the chain can
/// be walked (the message still names the cause, as recorded runs always did).
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A unit the eval cannot run as planned (no lower error behind it).
    #[error("{0}")]
    Config(String),
    /// The variant's engine configuration does not resolve for this trace.
    #[error(transparent)]
    Resolve(#[from] crate::confcore::ConfigError),
    /// A unit's params do not decode into its eval's typed params.
    #[error("{eval} params: {source}")]
    Params {
        eval: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A provider role could not be built (shared by every unit of the run).
    #[error("provider `{role}`: {source}")]
    ProviderSetup {
        role: &'static str,
        #[source]
        source: std::sync::Arc<ProviderError>,
    },
    /// The replay failed.
    #[error("engine: {0}")]
    Engine(#[from] crate::engine::EngineError),
    /// The replay ran but left nothing to ask from.
    #[error("engine: {0}")]
    Replay(&'static str),
    #[error("{0}")]
    Provider(#[from] ProviderError),
    /// The judge's reply gives no grade to record ([`JudgeFailure`]): the unit fails rather
    /// than keep its other scores without the judge's.
    #[error("judge: {0}")]
    Judge(JudgeFailure),
    /// File I/O of the eval (`context` says what it was doing, or is empty).
    #[error("io: {context}{source}")]
    Io {
        context: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl From<std::io::Error> for EvalError {
    fn from(source: std::io::Error) -> Self {
        EvalError::Io {
            context: "",
            source,
        }
    }
}

impl EvalError {
    /// Stable kind for `UnitError::kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            EvalError::Config(_)
            | EvalError::Resolve(_)
            | EvalError::Params { .. }
            | EvalError::ProviderSetup { .. } => "eval_config",
            EvalError::Engine(_) | EvalError::Replay(_) => "engine",
            EvalError::Provider(p) => p.kind(),
            EvalError::Io { .. } => "io",
            EvalError::Judge(j) => j.kind(),
        }
    }
}

/// Why a judge's reply gives no grade.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JudgeFailure {
    /// The judge refused (a refusal, or a `content_filter` finish).
    #[error("the judge refused to grade{}", if .0.is_empty() { String::new() } else { format!(": {}", .0) })]
    Refused(String),
    /// The reply stopped at its output limit or the model's context window.
    #[error("the judge's reply was cut off (finish reason `{finish_reason}`, {output_tokens} output tokens); raise the judge provider's `max_tokens`")]
    CutOff {
        finish_reason: String,
        output_tokens: u64,
    },
    /// The reply has no grade in the form the rubric asks for (`SCORE: n`, 0–5).
    #[error("the judge's reply has no grade the rubric asks for ({expected}): {reply:?}")]
    Unparseable {
        expected: &'static str,
        reply: String,
    },
}

impl JudgeFailure {
    /// Stable kind for `UnitError::kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            JudgeFailure::Refused(_) => "judge_refused",
            JudgeFailure::CutOff { .. } => "judge_cut_off",
            JudgeFailure::Unparseable { .. } => "judge_unparseable",
        }
    }

    /// The failure `resp`, a judge's reply, is before its grade is read: refused, filtered, or
    /// cut off; `None` when it stopped on its own.
    pub fn of_reply(resp: &crate::providers::ChatResponse) -> Option<JudgeFailure> {
        use crate::providers::NoAnswer;
        let finish = resp.finish_reason.as_deref().unwrap_or_default();
        let cut = || JudgeFailure::CutOff {
            finish_reason: finish.into(),
            output_tokens: resp.usage.output,
        };
        // The classification the eval agent and the summarizer share; an empty reply is
        // named when no grade is found in it (`judge_unparseable`).
        match resp.no_answer(false)? {
            NoAnswer::Refused(why) => {
                Some(JudgeFailure::Refused(crate::providers::clip(&why, 300)))
            }
            NoAnswer::Filtered => Some(JudgeFailure::Refused(
                "the provider's content filter stopped the reply".into(),
            )),
            NoAnswer::ContextWindow | NoAnswer::CutOff => Some(cut()),
            NoAnswer::Empty => None,
        }
    }

    /// A reply with no grade (its first characters kept).
    pub fn unparseable(expected: &'static str, reply: &str) -> JudgeFailure {
        JudgeFailure::Unparseable {
            expected,
            reply: crate::providers::clip(reply, 200),
        }
    }
}

#[cfg(test)]
mod error_tests {
    use super::EvalError;
    use std::error::Error;

    /// The errors an eval wraps stay reachable as sources (what `--verbose`-style chains walk),
    /// and the recorded message and kind read as before.
    #[test]
    fn wrapped_errors_keep_their_source() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = EvalError::Io {
            context: "recording summaries: ",
            source: io,
        };
        assert_eq!(e.to_string(), "io: recording summaries: gone");
        assert_eq!(e.kind(), "io");
        assert_eq!(e.source().unwrap().to_string(), "gone");
        let bad = serde_json::from_str::<u32>("\"x\"").unwrap_err();
        let e = EvalError::Params {
            eval: "drift",
            source: bad,
        };
        assert_eq!(e.kind(), "eval_config");
        assert!(e.source().is_some());
        let e: EvalError = crate::engine::EngineError::Config(crate::confcore::ConfigError::new(
            "suite.toml",
            3,
            "bad window",
        ))
        .into();
        assert!(e.to_string().starts_with("engine: "), "{e}");
        assert!(e.source().is_some());
        assert!(EvalError::Config("plain".into()).source().is_none());
    }

    #[test]
    fn a_judge_reply_without_a_grade_is_named() {
        use super::JudgeFailure;
        let reply = |finish: &str, text: &str| {
            crate::providers::ChatResponse::answer(
                crate::trace::Message::assistant(text, vec![]),
                crate::trace::Usage::default(),
                "m",
                finish,
            )
        };
        let score = |r| crate::evals::drift::judge_score(&r).map_err(|e| e.kind());
        assert_eq!(score(reply("stop", "SCORE: 4\nFine.")), Ok(4.0));
        assert_eq!(
            score(reply("stop", "Looks fine.")),
            Err("judge_unparseable")
        );
        assert_eq!(score(reply("length", "SCORE")), Err("judge_cut_off"));
        assert_eq!(score(reply("max_tokens", "")), Err("judge_cut_off"));
        assert_eq!(score(reply("content_filter", "")), Err("judge_refused"));
        let mut refused = reply("end_turn", "");
        refused.refusal = Some(String::new());
        assert_eq!(score(refused), Err("judge_refused"));
        // A cut-off reply is named so even when a grade made it through before the limit.
        assert_eq!(
            JudgeFailure::of_reply(&reply("length", "SCORE: 3")).map(|f| f.kind()),
            Some("judge_cut_off")
        );
    }
}
