//! Tests of the synthetic trace generator shared by the benches (`benches/common/synth.rs`):
//! determinism, well-formed call/result pairing, the size features the deepagents preset reacts
//! to, `repeat`, and the golden `trace.jsonl` loader.

#[path = "../../benches/common/synth.rs"]
mod synth;

use std::collections::HashSet;
use std::path::Path;

use ctxbench::trace::{Role, Trace};
use synth::{generate, load_golden_trace, repeat, SynthSpec};

/// Every tool message answers a call of the closest preceding assistant message, every call is
/// answered, and call ids are unique.
fn assert_well_paired(trace: &Trace) {
    let mut seen = HashSet::new();
    let mut open: Vec<String> = Vec::new();
    for (i, m) in trace.messages.iter().enumerate() {
        match m.role {
            Role::Assistant => {
                assert!(
                    open.is_empty(),
                    "message {i}: calls {open:?} left unanswered"
                );
                for c in &m.tool_calls {
                    assert!(
                        seen.insert(c.id.clone()),
                        "message {i}: duplicate call id {}",
                        c.id
                    );
                    open.push(c.id.clone());
                }
            }
            Role::Tool => {
                let id = m
                    .tool_call_id
                    .as_deref()
                    .expect("tool message without tool_call_id");
                let pos = open.iter().position(|o| o == id);
                assert!(
                    pos.is_some(),
                    "message {i}: result for {id} answers no open call"
                );
                open.remove(pos.unwrap());
            }
            Role::User | Role::System => {
                assert!(
                    open.is_empty(),
                    "message {i}: user/system message between a call and its result"
                );
            }
        }
    }
    assert!(open.is_empty(), "calls {open:?} never answered");
}

#[test]
fn same_seed_same_trace_other_seed_other_trace() {
    let a = generate(&SynthSpec::default());
    let b = generate(&SynthSpec::default());
    let c = generate(&SynthSpec {
        seed: 8,
        ..SynthSpec::default()
    });
    assert_eq!(a, b);
    assert_ne!(a.messages, c.messages);
}

#[test]
fn default_trace_has_the_golden_shape_and_features() {
    let t = generate(&SynthSpec::default());
    assert_well_paired(&t);
    let n = t.messages.len();
    assert!((100..=400).contains(&n), "{n} messages");
    let chars: usize = t.messages.iter().map(|m| m.content.len()).sum();
    assert!((800_000..=4_000_000).contains(&chars), "{chars} chars");
    // Features the deepagents preset reacts to.
    assert!(t
        .messages
        .iter()
        .any(|m| m.role == Role::Tool && m.content.len() > 80_000));
    assert!(t
        .messages
        .iter()
        .any(|m| m.role == Role::User && m.content.len() > 200_000));
    assert!(t
        .messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .any(|c| c.name == "write_file"
            && c.arguments["content"]
                .as_str()
                .is_some_and(|s| s.len() > 2_000)));
    assert_eq!(t.messages[0].role, Role::System);
}

#[test]
fn feature_switches_turn_features_off() {
    let t = generate(&SynthSpec {
        big_result_every: 0,
        big_arg_every: 0,
        paste_turn: None,
        ..SynthSpec::default()
    });
    assert_well_paired(&t);
    assert!(t.messages.iter().all(|m| m.content.len() <= 40_000));
}

#[test]
fn repeat_keeps_pairing_and_scales_length() {
    let t = generate(&SynthSpec {
        turns: 3,
        ..SynthSpec::default()
    });
    let r = repeat(&t, 10);
    assert_eq!(r.messages.len(), 1 + 10 * (t.messages.len() - 1));
    assert_well_paired(&r);
    // First copy is verbatim; later copies differ only in ids.
    assert_eq!(&r.messages[..t.messages.len()], &t.messages[..]);
    let second = &r.messages[t.messages.len()..2 * t.messages.len() - 1];
    for (a, b) in t.messages[1..].iter().zip(second) {
        assert_eq!(a.content, b.content);
        assert_eq!(a.tool_calls.len(), b.tool_calls.len());
    }
    assert_eq!(
        r.model_call_indexes().count(),
        10 * t.model_call_indexes().count()
    );
}

#[test]
fn loads_the_golden_synthetic_s7_trace() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/deepagents-golden/synthetic-s7");
    let t = load_golden_trace(&dir.join("trace.jsonl")).expect("golden trace loads");
    // config.json: 209 messages, 10 human, 100 AI, 99 tool, 1,799,062 content chars.
    assert_eq!(t.messages.len(), 209);
    assert_eq!(
        t.messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count(),
        100
    );
    assert_eq!(
        t.messages.iter().filter(|m| m.role == Role::Tool).count(),
        99
    );
    let chars: usize = t.messages.iter().map(|m| m.content.chars().count()).sum();
    assert_eq!(chars, 1_799_062);
}

#[test]
fn golden_loader_names_file_and_line_on_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("trace.jsonl");
    std::fs::write(
        &p,
        "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"robot\"}\n",
    )
    .unwrap();
    let err = load_golden_trace(&p).unwrap_err();
    assert!(
        err.contains("trace.jsonl:2") && err.contains("$.role"),
        "{err}"
    );
    std::fs::write(&p, "{\"role\":\"tool\",\"content\":\"x\"}\n").unwrap();
    let err = load_golden_trace(&p).unwrap_err();
    assert!(
        err.contains("trace.jsonl:1") && err.contains("tool_call_id"),
        "{err}"
    );
}
