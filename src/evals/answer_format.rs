//! The fixed question texts the evals ask and the structured answer format they parse, shared
//! by every provider (a real model reads the instructions; the offline agent writes the format).

/// The goal-drift probe, asked after the compacted view. The answer is parsed by
/// [`DriftAnswer::parse`].
pub const DRIFT_QUESTION: &str = "Pause the task for a moment and report your state. Answer in exactly this format, one line each:
GOAL: <the user's goal, with every constraint they gave>
DONE: <what has been done so far>
FILES: <comma-separated paths of files you created or edited, or none>
NEXT TOOL: <the name of the tool you will call next>
NEXT TARGET: <the path or command that next call acts on>";

/// A parsed drift answer. Missing lines are empty.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DriftAnswer {
    pub goal: String,
    pub done: String,
    pub files: Vec<String>,
    pub next_tool: String,
    pub next_target: String,
}

impl DriftAnswer {
    /// Parse the `KEY: value` lines (case-insensitive keys, markdown emphasis tolerated).
    pub fn parse(text: &str) -> DriftAnswer {
        let mut a = DriftAnswer::default();
        for line in text.lines() {
            let clean = line.trim().trim_start_matches(['-', '*', '#', ' ']);
            let Some((key, value)) = clean.split_once(':') else {
                continue;
            };
            let key = key.trim().trim_matches('*').to_ascii_uppercase();
            let value = value.trim().trim_matches('*').trim().to_string();
            match key.as_str() {
                "GOAL" => a.goal = value,
                "DONE" => a.done = value,
                "FILES" => {
                    a.files = value
                        .split(',')
                        .map(|f| f.trim().trim_matches('`').to_string())
                        .filter(|f| !f.is_empty() && !f.eq_ignore_ascii_case("none"))
                        .collect()
                }
                "NEXT TOOL" => a.next_tool = value.trim_matches('`').to_string(),
                "NEXT TARGET" => a.next_target = value.trim_matches('`').to_string(),
                _ => {}
            }
        }
        a
    }

    /// Render in the format [`DRIFT_QUESTION`] asks for.
    pub fn render(&self) -> String {
        let files = if self.files.is_empty() {
            "none".to_string()
        } else {
            self.files.join(", ")
        };
        format!(
            "GOAL: {}\nDONE: {}\nFILES: {}\nNEXT TOOL: {}\nNEXT TARGET: {}",
            one_line(&self.goal),
            one_line(&self.done),
            files,
            one_line(&self.next_tool),
            one_line(&self.next_target)
        )
    }
}

/// Collapse whitespace (newlines included) to single spaces.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_render_round_trip_and_tolerance() {
        let a = DriftAnswer {
            goal: "fix the\nparser".into(),
            done: "wrote tests".into(),
            files: vec!["a.py".into(), "b/c.rs".into()],
            next_tool: "bash".into(),
            next_target: "pytest -x".into(),
        };
        let parsed = DriftAnswer::parse(&a.render());
        assert_eq!(parsed.goal, "fix the parser");
        assert_eq!(parsed.files, a.files);
        assert_eq!(parsed.next_target, "pytest -x");
        let messy = "**GOAL:** ship it\n- Files: none\nnext tool: `read_file`";
        let p = DriftAnswer::parse(messy);
        assert_eq!(
            (p.goal.as_str(), p.next_tool.as_str()),
            ("ship it", "read_file")
        );
        assert!(p.files.is_empty());
    }
}
