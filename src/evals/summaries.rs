//! The summaries a unit's replay produced, as the sample records them (`Sample::summaries`):
//! one [`SummaryRecord`] per `summarized` event — fold index, trace index, prompt digest, tokens
//! in and out, and the text (inline, or named by its content in the run's `summaries.pack`).
//!
//! The text recorded is the summary message as the agent saw it (with its pointer to the
//! history file), so an A/B of two summary prompts can show both summaries of the same fold.

use crate::engine::summarizer::DEFAULT_SUMMARY_PROMPT;
use crate::engine::{self, LayerConfig, ResolvedConfig, Summary};
use crate::record::summary::text_digest;
use crate::record::{SummaryPack, SummaryRecord};
use std::sync::Mutex;

/// `text_digest(prompt)`, kept for the last prompt asked about: every unit of a variant
/// records the digest of the same summary prompt.
fn prompt_text_digest(prompt: &str) -> String {
    static LAST: Mutex<Option<(String, String)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    match last.as_ref() {
        Some((p, d)) if p == prompt => d.clone(),
        _ => {
            let d = text_digest(prompt);
            *last = Some((prompt.to_string(), d.clone()));
            d
        }
    }
}

/// `sha256:<hex>` of the summary prompt `config` gives its summarize layer (the built-in
/// default when none is set); `None` when it has no summarize layer or its prompt file cannot
/// be read (the replay would then have failed already).
pub fn prompt_digest(config: &ResolvedConfig) -> Option<String> {
    config.layers.iter().find_map(|l| match l {
        LayerConfig::Summarize(c) => match &c.prompt {
            Some(src) => src.load().ok().map(|p| prompt_text_digest(&p)),
            None => Some(prompt_text_digest(DEFAULT_SUMMARY_PROMPT)),
        },
        _ => None,
    })
}

/// Every summary of `replay`, in order, each with the variant's prompt digest `digest`
/// ([`prompt_digest`], empty when none); long texts are appended to `pack` (one write).
pub fn recorded(
    replay: &engine::Replay,
    digest: &str,
    pack: &SummaryPack,
) -> std::io::Result<Vec<SummaryRecord>> {
    let mut out: Vec<(SummaryRecord, &str)> = Vec::new();
    for e in &replay.events {
        let Some(Summary {
            summary_message,
            summarizer_model,
            summarizer_usage,
            ..
        }) = e.detail.summary()
        else {
            continue;
        };
        let record = SummaryRecord {
            fold: out.len() + 1,
            trace_index: e.trace_index,
            prompt_digest: digest.to_string(),
            model: summarizer_model.clone(),
            tokens_in: summarizer_usage.input,
            tokens_out: summarizer_usage.output,
            text_digest: String::new(),
            chars: 0,
            text: None,
            file: None,
        };
        out.push((record, summary_message));
    }
    if out.is_empty() {
        return Ok(Vec::new());
    }
    pack.keep(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::summary::INLINE_SUMMARY_CHARS;
    use crate::record::RunDir;

    fn record() -> SummaryRecord {
        SummaryRecord {
            fold: 1,
            trace_index: 7,
            prompt_digest: "sha256:00".into(),
            model: "offline".into(),
            tokens_in: 10,
            tokens_out: 2,
            text_digest: String::new(),
            chars: 0,
            text: None,
            file: None,
        }
    }

    #[test]
    fn short_texts_stay_inline_long_ones_go_to_the_pack_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        let pack = run.summary_pack();
        // Kept and flushed, as the runner flushes before it journals a unit.
        let keep = |text: &str| {
            let kept = pack.keep(vec![(record(), text)]).unwrap().remove(0);
            pack.flush().unwrap();
            kept
        };
        let short = keep("## SUMMARY\nshort");
        assert_eq!(short.text.as_deref(), Some("## SUMMARY\nshort"));
        assert!(short.file.is_none());
        assert_eq!(run.summary_text(&short).unwrap(), "## SUMMARY\nshort");

        let long = "é".repeat(INLINE_SUMMARY_CHARS + 1);
        let a = keep(&long);
        let b = keep(&long);
        assert!(a.text.is_none());
        assert_eq!(a.chars, INLINE_SUMMARY_CHARS + 1);
        assert_eq!(a.file, b.file, "same text, same file");
        let file = a.file.clone().unwrap();
        assert!(file.starts_with("summaries/") && file.ends_with(".md"));
        assert_eq!(run.summary_text(&a).unwrap(), long);
        assert!(!dir.path().join(&file).exists(), "no file per text");
        // Read back from another RunDir value over the same directory: no store needed.
        assert_eq!(RunDir::new(dir.path()).summary_text(&b).unwrap(), long);
    }

    #[test]
    fn units_recording_the_same_long_summary_at_once_all_succeed() {
        // Units of one run (drift, rules, continuation of one trace × variant) replay the same
        // summaries and record them concurrently.
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let long = format!("{round}{}", "x".repeat(200_000));
            let start = std::sync::Barrier::new(8);
            let run = RunDir::new(dir.path());
            let pack = run.summary_pack();
            std::thread::scope(|s| {
                for i in 0..8 {
                    let (start, run, pack, long) = (&start, &run, &pack, &long);
                    s.spawn(move || {
                        start.wait();
                        let other = format!("{i}{long}");
                        let r = pack
                            .keep(vec![(record(), long.as_str()), (record(), &other)])
                            .unwrap();
                        pack.flush().unwrap();
                        assert_eq!(run.summary_text(&r[0]).unwrap(), *long);
                        assert_eq!(run.summary_text(&r[1]).unwrap(), other);
                    });
                }
            });
        }
    }

    #[test]
    fn prompt_digest_follows_the_prompt() {
        let digest = |text: Option<&str>| {
            let sets: Vec<String> = text
                .map(|t| vec![format!("summarize.prompt.text={t}")])
                .unwrap_or_default();
            let cfg = crate::engine::EngineConfig::default()
                .apply_sets(&sets)
                .unwrap()
                .resolve(Some(100_000))
                .unwrap();
            prompt_digest(&cfg).unwrap()
        };
        assert_eq!(digest(None), text_digest(DEFAULT_SUMMARY_PROMPT));
        assert_ne!(digest(Some("A")), digest(Some("B")));
        assert_eq!(digest(Some("A")), text_digest("A"));
        // Asked again, in turns: the digest kept is that of the prompt asked about.
        for _ in 0..2 {
            assert_eq!(digest(Some("A")), text_digest("A"));
            assert_eq!(digest(Some("B")), text_digest("B"));
            assert_eq!(digest(None), text_digest(DEFAULT_SUMMARY_PROMPT));
        }
    }
}
