//! Drift probes: the extractive answer to a drift question read from the view alone (the
//! latest summary's sections, else the first human turn and the recorded actions).

use crate::engine::layers::truncate::REMINDER_KIND;
use crate::evals::answer_format::{one_line, DriftAnswer};
use crate::evals::truth;
use crate::trace::{Message, Role, ToolCall};

const SECTIONS: [&str; 4] = ["SESSION INTENT", "SUMMARY", "ARTIFACTS", "NEXT STEPS"];

fn section_title(line: &str) -> String {
    line.trim()
        .trim_matches(['#', '*', ' ', ':'])
        .to_ascii_uppercase()
}

fn is_section_boundary(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('#') || t == "</summary>" || SECTIONS.contains(&section_title(line).as_str())
}

/// A section of a structured summary (`SESSION INTENT`, `SUMMARY`, `ARTIFACTS`, `NEXT STEPS`):
/// the lines after its title up to the next title.
pub fn summary_section(text: &str, name: &str) -> Option<String> {
    let mut lines = text.lines();
    lines.find(|l| section_title(l) == name)?;
    let body: Vec<&str> = lines.take_while(|l| !is_section_boundary(l)).collect();
    let s = body.join("\n").trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Extractive answer to the drift probe from the view alone.
pub fn drift_answer(view: &[Message]) -> DriftAnswer {
    let summary = view
        .iter()
        .rev()
        .find(|m| matches!(m.role, Role::User | Role::System) && m.content.contains("<summary>"));
    let mut a = DriftAnswer::default();
    // deepagents' sections, core-agent's handover / checkpoint and digitorn's recap.
    let first = |text: &str, names: &[&str]| names.iter().find_map(|n| summary_section(text, n));
    if let Some(s) = summary {
        let c = &s.content;
        a.goal = first(c, &["SESSION INTENT", "CURRENT STATE", "TASK"]).unwrap_or_default();
        a.done = first(c, &["SUMMARY", "TECHNICAL CONTEXT", "DECISIONS"]).unwrap_or_default();
        if let Some(arts) = first(c, &["ARTIFACTS", "FILES & CHANGES", "FILES TOUCHED"]) {
            a.files = arts
                .lines()
                .map(|l| l.trim().trim_start_matches(['-', '*', ' ']).trim())
                .filter_map(|l| l.split_whitespace().next())
                .map(|p| p.trim_matches(['`', ':', ',']).to_string())
                .filter(|p| p.contains('.') || p.contains('/'))
                .collect();
        }
    }
    // Every place a preset puts the goal: the summary's SESSION INTENT (above), a context
    // reminder's `Goal:` line (truncate / emergency layers), and the human turns still in view
    // — the first one and later corrections, which count as constraints.
    let mut parts: Vec<String> = Vec::new();
    if !a.goal.is_empty() {
        parts.push(std::mem::take(&mut a.goal));
    }
    for m in view {
        for line in m.content.lines() {
            if let Some(g) = line.trim().strip_prefix("Goal:") {
                if !g.trim().is_empty() && !parts.iter().any(|p| p.contains(g.trim())) {
                    parts.push(g.trim().to_string());
                }
            }
        }
    }
    let humans = view
        .iter()
        .filter(|m| truth::is_human_turn(m) && !m.content.contains("<summary>"))
        .filter(|m| m.kind.as_deref().is_none_or(|k| k != REMINDER_KIND));
    for m in humans {
        parts.push(m.content.clone());
    }
    a.goal = parts.join(" ");
    let calls: Vec<&ToolCall> = view.iter().flat_map(|m| m.tool_calls.iter()).collect();
    if a.done.is_empty() {
        a.done = format!("{} tool calls so far", calls.len());
    }
    for c in &calls {
        for p in truth::written_paths(c) {
            if !a.files.iter().any(|f| truth::same_file(f, &p)) {
                a.files.push(p);
            }
        }
    }
    if let Some(last) = calls.last() {
        a.next_tool = last.name.clone();
        a.next_target = one_line(&truth::call_target(last));
    }
    a.goal = one_line(&a.goal);
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evals::offline_agent::*;

    fn q(text: &str) -> Message {
        Message::user(text)
    }

    #[test]
    fn drift_answer_uses_summary_sections_or_first_turn() {
        let summary = "You are in the middle of a conversation that has been summarized.\n\n<summary>\n## SESSION INTENT\nPort the parser to Rust, keep CLI flags.\n\n## SUMMARY\nRead the code.\n\n## ARTIFACTS\n- src/parser.rs: new\n\n## NEXT STEPS\nRun tests.\n</summary>";
        let view = vec![
            Message::system("sys"),
            Message::user(summary),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "c".into(),
                    name: "bash".into(),
                    arguments: serde_json::json!({"command": "cargo test"}),
                }],
            ),
        ];
        let a = drift_answer(&view);
        assert_eq!(a.goal, "Port the parser to Rust, keep CLI flags.");
        assert_eq!(a.files, vec!["src/parser.rs"]);
        assert_eq!(
            (a.next_tool.as_str(), a.next_target.as_str()),
            ("bash", "cargo test")
        );
        // Without a summary: the first human turn is the goal.
        let view = vec![
            Message::system("s"),
            Message::user("Fix bug 12 in the CSV reader"),
        ];
        assert_eq!(drift_answer(&view).goal, "Fix bug 12 in the CSV reader");
        // A summary without SESSION INTENT loses the goal.
        let no_intent = summary.replace(
            "## SESSION INTENT\nPort the parser to Rust, keep CLI flags.\n\n",
            "",
        );
        let a = drift_answer(&[Message::user(no_intent)]);
        assert!(a.goal.is_empty(), "{}", a.goal);
        let mut probe = vec![Message::user("Fix bug 12")];
        probe.push(q(crate::evals::answer_format::DRIFT_QUESTION));
        let r = super::super::respond_to(
            crate::evalspec::Asking::Drift,
            &probe,
            &[],
            crate::evalspec::needle::NeedleSearch::Auto,
        );
        assert!(DriftAnswer::parse(&r.content).goal.contains("Fix bug 12"));
        // Asked as a recall question, the same prompt is not answered in the drift format:
        // the kind comes from the request, not from the prompt's text.
        let r = respond(&probe, &[]);
        assert!(!DriftAnswer::parse(&r.content).goal.contains("Fix bug 12"));
        let r = super::super::respond_to(
            crate::evalspec::Asking::Drift,
            &probe,
            &[],
            crate::evalspec::needle::NeedleSearch::Auto,
        );
        assert!(DriftAnswer::parse(&r.content).goal.contains("Fix bug 12"));
    }

    #[test]
    fn drift_goal_reads_reminders_and_later_corrections() {
        let mut reminder = Message::user(
            "[Context reminder] 12 earlier messages were dropped.\n\nGoal: Fix separability_matrix for nested models\n",
        );
        reminder.kind = Some(REMINDER_KIND.into());
        let view = vec![
            Message::system("sys"),
            reminder,
            Message::user("Also: never touch tests/"),
        ];
        let goal = drift_answer(&view).goal;
        assert!(goal.contains("separability_matrix"), "{goal}");
        assert!(goal.contains("never touch tests/"), "{goal}");
        assert!(!goal.contains("Context reminder"), "{goal}");
    }
}
