//! The fixed six-dimension judge rubric for probe answers (Factory's compression evaluation:
//! accuracy, context awareness, artifact trail, completeness, continuity, instruction
//! following), each graded 0–5 and reported as its own score (`judge_<dimension>`).

use super::EvalError;
use crate::providers::{ChatRequest, Provider};
use crate::trace::{Message, Usage};
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The six dimensions, as score-name suffixes, in rubric order.
pub const DIMENSIONS: [&str; 6] = [
    "accuracy",
    "context_awareness",
    "artifact_trail",
    "completeness",
    "continuity",
    "instruction_following",
];

/// The rubric the judge gets as its system message.
pub const RUBRIC: &str = "You grade one answer an AI coding agent gave about its own session after its context was compressed. You get the QUESTION, the EXPECTED facts taken from the recorded session, and the AGENT ANSWER. Grade each dimension with an integer from 0 (absent or wrong) to 5 (fully right):
ACCURACY: are the facts, names, paths and values in the answer correct?
CONTEXT_AWARENESS: does the answer reflect where the session stands now, not a stale state?
ARTIFACT_TRAIL: does it name the right files, commands and artifacts?
COMPLETENESS: does it cover everything the question asks for?
CONTINUITY: could the agent continue the work from this answer without redoing steps?
INSTRUCTION_FOLLOWING: does it answer in the form the question asked, respecting the user's constraints?
Reply with exactly these six lines, `NAME: <0-5>`, then one sentence of rationale.";

/// The judge's grades per dimension (those it gave; a missing line is missing, never 0).
pub fn parse(text: &str) -> BTreeMap<&'static str, f64> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?im)^[\s*#-]*([a-z_ ]+?)\**\s*[:=]\s*\**\s*([0-5](?:\.\d+)?)\b").unwrap()
    });
    let mut out = BTreeMap::new();
    for c in re.captures_iter(text) {
        let name = c[1].trim().to_lowercase().replace(' ', "_");
        if let Some(d) = DIMENSIONS.iter().find(|d| **d == name) {
            if let Ok(v) = c[2].parse::<f64>() {
                out.entry(*d).or_insert(v);
            }
        }
    }
    out
}

/// One graded answer: the grades, the judge's reply, its usage.
pub struct Graded {
    pub grades: BTreeMap<&'static str, f64>,
    pub reply: String,
    pub usage: Usage,
}

/// Grade `answer` to `question` against `expected` with [`RUBRIC`].
pub async fn grade(
    judge: &dyn Provider,
    question: &str,
    expected: &str,
    answer: &str,
    nonce: &str,
) -> Result<Graded, EvalError> {
    let clip = |s: &str| s.chars().take(4000).collect::<String>();
    let req = ChatRequest::new(vec![
        Message::system(RUBRIC),
        Message::user(format!(
            "QUESTION\n{}\n\nEXPECTED\n{}\n\nAGENT ANSWER\n{}",
            clip(question),
            clip(expected),
            clip(answer)
        )),
    ])
    .with_nonce(nonce);
    let resp = judge.chat(&req).await?;
    if let Some(failure) = super::JudgeFailure::of_reply(&resp) {
        return Err(EvalError::Judge(failure));
    }
    let grades = parse(&resp.message.content);
    // Every criterion graded, or the unit fails: a criterion left out (or graded out of range)
    // would be a score silently missing from this sample's means.
    if grades.len() < DIMENSIONS.len() {
        return Err(EvalError::Judge(super::JudgeFailure::unparseable(
            "one `<CRITERION>: <0-5>` line for each of the six criteria",
            &resp.message.content,
        )));
    }
    Ok(Graded {
        grades,
        reply: resp.message.content,
        usage: resp.usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply that grades some criteria fails the unit (`judge_unparseable`), never leaves
    /// the others missing from that sample; all six grade it.
    #[test]
    fn every_criterion_graded_or_the_reply_is_unparseable() {
        use crate::providers::testing::MockProvider;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let grade_of = |reply: &str| {
            let judge = MockProvider::text(Ok(reply));
            rt.block_on(grade(&judge, "q", "e", "a", "n"))
        };
        let all = "ACCURACY: 4\nCONTEXT_AWARENESS: 3\nARTIFACT_TRAIL: 2\nCOMPLETENESS: 5\n\
                   CONTINUITY: 1\nINSTRUCTION_FOLLOWING: 0\nFine.";
        assert_eq!(grade_of(all).unwrap().grades.len(), 6);
        let four = "ACCURACY: 4\nCONTEXT_AWARENESS: 3\nARTIFACT_TRAIL: 2\nCOMPLETENESS: 5\nFine.";
        match grade_of(four) {
            Err(e) => assert_eq!(e.kind(), "judge_unparseable", "{e}"),
            Ok(g) => panic!("four of six graded passed: {:?}", g.grades),
        }
    }

    #[test]
    fn six_grades_parse_and_missing_ones_stay_missing() {
        let g = parse(
            "ACCURACY: 4\n**Context_Awareness:** 3\n- ARTIFACT TRAIL: 5\nCOMPLETENESS = 2\nCONTINUITY: 9\nThe answer is fine.",
        );
        assert_eq!(g["accuracy"], 4.0);
        assert_eq!(g["context_awareness"], 3.0);
        assert_eq!(g["artifact_trail"], 5.0);
        assert_eq!(g["completeness"], 2.0);
        assert!(!g.contains_key("continuity"), "9 is out of range");
        assert!(!g.contains_key("instruction_following"));
        assert!(parse("I don't know").is_empty());
    }
}
