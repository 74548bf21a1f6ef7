//! Unit tests of needle planting.

use super::*;
use crate::trace::{SourceFormat, ToolCall, TraceMeta};
use serde_json::json;

fn sample_trace() -> Trace {
    let mut t = Trace::new(TraceMeta::new("t", SourceFormat::Canonical));
    t.messages.push(Message::system("sys"));
    t.messages.push(Message::user("fix the bug"));
    for k in 0..10 {
        let id = format!("c{k}");
        t.messages.push(Message::assistant(
            format!("step {k}"),
            vec![ToolCall {
                id: id.clone(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
            }],
        ));
        t.messages
            .push(Message::tool(id, "bash", format!("out {k}\nmore {k}\nend")));
    }
    t.messages.push(Message::assistant("done", vec![]));
    t
}

fn spec(depth: f64, position: Position) -> PlantSpec {
    PlantSpec {
        depth,
        position,
        needles: 1,
        distractors: 0,
        seed: 7,
        paraphrase: false,
        corrected: false,
    }
}

#[test]
fn same_seed_same_plant_and_different_seed_differs() {
    let t = sample_trace();
    let a = plant(&t, &spec(0.3, Position::Tool)).unwrap();
    let b = plant(&t, &spec(0.3, Position::Tool)).unwrap();
    assert_eq!(a.facts, b.facts);
    assert_eq!(a.trace, b.trace);
    let c = plant(
        &t,
        &PlantSpec {
            seed: 8,
            ..spec(0.3, Position::Tool)
        },
    )
    .unwrap();
    assert_ne!(a.facts[0].value, c.facts[0].value);
    let re = regex::Regex::new(r"^[a-z]+-[a-z]+-\d{4}$").unwrap();
    assert!(re.is_match(&a.facts[0].value), "{}", a.facts[0].value);
}

#[test]
fn tool_position_goes_into_a_tool_result_near_depth() {
    let t = sample_trace();
    let p = plant(&t, &spec(0.5, Position::Tool)).unwrap();
    let f = &p.facts[0];
    let m = &p.trace.messages[f.index];
    assert_eq!(m.role, Role::Tool);
    assert!(m.content.contains(&f.line()));
    assert!(f.index.abs_diff(t.messages.len() / 2) <= 1);
    assert_eq!(p.trace.messages.len(), t.messages.len());
    // The content around it is intact.
    assert!(m.content.starts_with("out ") && m.content.ends_with("end"));
}

#[test]
fn user_position_inserts_at_a_safe_boundary() {
    let t = sample_trace();
    for depth in [0.0, 0.1, 0.33, 0.5, 0.9, 1.0] {
        let p = plant(&t, &spec(depth, Position::User)).unwrap();
        let f = &p.facts[0];
        assert_eq!(p.trace.messages.len(), t.messages.len() + 1);
        let m = &p.trace.messages[f.index];
        assert_eq!(m.role, Role::User);
        assert_eq!(m.content, f.line());
        let prev = &p.trace.messages[f.index - 1];
        assert!(
            prev.role != Role::Assistant || prev.tool_calls.is_empty(),
            "depth {depth}: planted between a call and its result"
        );
    }
}

#[test]
fn assistant_position_and_distractors() {
    let t = sample_trace();
    let p = plant(
        &t,
        &PlantSpec {
            depth: 0.2,
            position: Position::Assistant,
            needles: 2,
            distractors: 3,
            seed: 1,
            paraphrase: false,
            corrected: false,
        },
    )
    .unwrap();
    assert_eq!(p.needles().count(), 2);
    assert_eq!(p.facts.len(), 5);
    let keys: std::collections::HashSet<_> = p.facts.iter().map(|f| &f.key).collect();
    assert_eq!(keys.len(), 5, "every fact has its own key");
    for f in &p.facts {
        assert!(
            p.trace.messages[f.index].content.contains(&f.line()),
            "fact {f:?} not at its index"
        );
    }
}

#[test]
fn paraphrased_questions_avoid_the_key_and_distractors_share_it() {
    let t = sample_trace();
    let p = plant(
        &t,
        &PlantSpec {
            distractors: 2,
            paraphrase: true,
            ..spec(0.3, Position::Tool)
        },
    )
    .unwrap();
    let needle = &p.facts[0];
    let asked = needle.asked_as.as_deref().unwrap();
    let q = needle.question().to_lowercase();
    assert!(!q.contains(&needle.key), "{q}");
    assert!(q.contains(asked), "{q}");
    for d in &p.facts[1..] {
        assert!(d.asked_as.is_none());
        let shared = d
            .key
            .split_whitespace()
            .filter(|w| needle.key.split_whitespace().any(|n| n == *w))
            .count();
        assert!(shared >= 1, "{} vs {}", d.key, needle.key);
        assert_ne!(d.key, needle.key);
    }
    let again = plant(
        &t,
        &PlantSpec {
            distractors: 2,
            paraphrase: true,
            ..spec(0.3, Position::Tool)
        },
    )
    .unwrap();
    assert_eq!(p.facts, again.facts);
}

#[test]
fn corrections_come_after_their_needle_with_a_new_value() {
    let t = sample_trace();
    for position in [Position::User, Position::Tool, Position::Assistant] {
        for seed in 0..5 {
            let p = plant(
                &t,
                &PlantSpec {
                    seed,
                    corrected: true,
                    distractors: 1,
                    ..spec(0.3, position)
                },
            )
            .unwrap();
            let f = &p.facts[0];
            let old = f.stale.as_deref().unwrap();
            assert_ne!(old, f.value);
            let at = f.corrected_at.unwrap();
            assert!(
                at > f.index,
                "{position:?}: correction {at} before needle {}",
                f.index
            );
            assert!(p.trace.messages[f.index].content.contains(&f.line()));
            let fix = f.correction_line().unwrap();
            assert!(fix.contains(&f.value) && !fix.contains(old), "{fix}");
            assert!(p.trace.messages[at].content.contains(&fix), "{position:?}");
            // The distractor is never corrected.
            assert!(p.facts[1].stale.is_none() && p.facts[1].corrected_at.is_none());
            // Before the correction the first value is the answer; after it, the new one.
            assert_eq!(f.expected_before(at), (old, None));
            assert_eq!(f.expected_before(at + 1), (f.value.as_str(), Some(old)));
        }
    }
    // Nowhere after the needle to correct it: a clear error.
    let err = plant(
        &t,
        &PlantSpec {
            corrected: true,
            ..spec(1.0, Position::Tool)
        },
    )
    .unwrap_err();
    assert!(err.contains("correction"), "{err}");
}

#[test]
fn bad_specs_are_errors() {
    let t = sample_trace();
    assert!(plant(&t, &spec(1.5, Position::Tool)).is_err());
    let empty = Trace::new(TraceMeta::new("e", SourceFormat::Canonical));
    assert!(plant(&empty, &spec(0.5, Position::Tool)).is_err());
}

#[test]
fn recovery_is_normalized_containment() {
    assert!(recovered(
        "The deploy token is `Teal-Otter-7731`.",
        "teal-otter-7731"
    ));
    assert!(!recovered("teal-otter-7732", "teal-otter-7731"));
    assert!(!recovered("I don't know", "teal-otter-7731"));
    assert!(!recovered("anything", ""));
}
