//! Deterministic agreement between a predicted next action and a recorded tool call: same tool,
//! and same target — the file path (URL, test name) a call acts on, or, for a shell command,
//! its program and its path arguments.
//!
//! A shell command is split on `&&`, `||`, `;` and `|`; leading `cd <dir>` segments and
//! environment assignments are skipped, so `cd /testbed && python reproduce.py` acts with
//! program `python` on `reproduce.py`. Paths compare as path suffixes (`reproduce.py` ~
//! `/testbed/reproduce.py`). Two commands agree when their programs are equal and either both
//! name no path or they share one; other targets agree when they name the same file, or when
//! their normalised texts are equal.

use super::truth;
use crate::trace::ToolCall;
use std::collections::BTreeSet;

/// Tool names whose calls carry a shell command.
const SHELL_TOOLS: [&str; 6] = ["bash", "execute_bash", "shell", "run", "terminal", "exec"];

/// What an action acts on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    /// Program of a shell command (`python`, `grep`, …); empty for other tools.
    pub program: String,
    /// Path-like arguments (or the path argument of a file tool).
    pub paths: BTreeSet<String>,
    /// The whole target, whitespace-collapsed and lowercased.
    pub text: String,
}

/// True when `tool` carries shell commands.
pub fn is_shell_tool(tool: &str) -> bool {
    SHELL_TOOLS.contains(&tool.trim().to_lowercase().as_str())
}

fn looks_like_path(tok: &str) -> bool {
    if tok.starts_with('-') || tok.is_empty() || tok.contains('=') {
        return false;
    }
    tok.contains('/')
        || tok.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && !ext.chars().all(|c| c.is_ascii_digit())
        })
}

fn clean(tok: &str) -> &str {
    tok.trim_matches(|c: char| matches!(c, '\'' | '"' | '`' | '(' | ')' | ',' | ';'))
}

/// Target of a shell command.
pub fn command_target(cmd: &str) -> Target {
    let text = super::answer_format::one_line(cmd).to_lowercase();
    let mut program = String::new();
    let mut paths = BTreeSet::new();
    let normalised = cmd
        .replace("&&", "\n")
        .replace("||", "\n")
        .replace([';', '|'], "\n");
    for segment in normalised.lines() {
        let toks: Vec<&str> = segment.split_whitespace().map(clean).collect();
        let mut i = 0;
        while i < toks.len() && toks[i].contains('=') && !toks[i].starts_with('-') {
            i += 1; // FOO=bar cmd
        }
        let Some(prog) = toks.get(i) else { continue };
        if *prog == "cd" {
            continue;
        }
        if program.is_empty() {
            program = prog.rsplit('/').next().unwrap_or(prog).to_lowercase();
            // Paths of the acting segment only (the first one that is not `cd`).
            for t in &toks[i + 1..] {
                if looks_like_path(t) {
                    paths.insert(t.to_string());
                }
            }
        }
    }
    Target {
        program,
        paths,
        text,
    }
}

/// Target of a file (or other) tool's target text: a path when it looks like one.
pub fn plain_target(target: &str) -> Target {
    let t = clean(target.trim()).to_string();
    let mut paths = BTreeSet::new();
    if looks_like_path(&t) && !t.contains(char::is_whitespace) {
        paths.insert(t.clone());
    }
    Target {
        program: String::new(),
        paths,
        text: super::answer_format::one_line(&t).to_lowercase(),
    }
}

/// Target of a predicted action given as tool name + target text.
pub fn predicted_target(tool: &str, target: &str) -> Target {
    if is_shell_tool(tool) {
        command_target(target)
    } else {
        plain_target(target)
    }
}

/// Target of a recorded call.
pub fn call_target(call: &ToolCall) -> Target {
    predicted_target(&call.name, &truth::call_target(call))
}

/// Same tool (case-insensitive).
pub fn same_tool(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim().to_lowercase(), b.trim().to_lowercase());
    !a.is_empty() && a == b
}

/// Same target, as the module documentation defines it.
pub fn same_target(a: &Target, b: &Target) -> bool {
    if !a.program.is_empty() || !b.program.is_empty() {
        if a.program != b.program {
            return false;
        }
        if a.paths.is_empty() && b.paths.is_empty() {
            return true;
        }
        return shares_path(a, b);
    }
    if !a.paths.is_empty() && !b.paths.is_empty() {
        return shares_path(a, b);
    }
    !a.text.is_empty() && a.text == b.text
}

fn shares_path(a: &Target, b: &Target) -> bool {
    a.paths
        .iter()
        .any(|p| b.paths.iter().any(|q| truth::same_file(p, q)))
}

/// Agreement of a predicted action with a recorded call: (same tool, same target).
pub fn agreement(tool: &str, target: &str, recorded: &ToolCall) -> (bool, bool) {
    let tool_ok = same_tool(tool, &recorded.name);
    let target_ok = same_target(
        &predicted_target(&recorded.name, target),
        &call_target(recorded),
    );
    (tool_ok, target_ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args,
        }
    }

    #[test]
    fn commands_reduce_to_program_and_paths() {
        let t = command_target("cd /testbed && FOO=1 python reproduce.py --fast | head -20");
        assert_eq!(t.program, "python");
        assert_eq!(t.paths, BTreeSet::from(["reproduce.py".to_string()]));
        let t = command_target("grep -n 'def foo' src/a.py src/b.py");
        assert_eq!(t.program, "grep");
        assert_eq!(t.paths.len(), 2);
        assert!(command_target("ls -la").paths.is_empty());
        assert_eq!(command_target("python3 -c 'print(1.5)'").paths.len(), 0);
    }

    #[test]
    fn agreement_needs_same_program_and_a_shared_path() {
        let rec = call(
            "bash",
            json!({"command": "cd /testbed && python /testbed/reproduce.py"}),
        );
        assert_eq!(agreement("bash", "python reproduce.py", &rec), (true, true));
        assert_eq!(agreement("bash", "python other.py", &rec), (true, false));
        assert_eq!(agreement("bash", "cat reproduce.py", &rec), (true, false));
        assert_eq!(agreement("Bash", "", &rec), (true, false));
        let ls = call("bash", json!({"command": "ls -la"}));
        assert_eq!(agreement("bash", "ls", &ls), (true, true));
        let edit = call(
            "edit_file",
            json!({"file_path": "/w/src/parser.rs", "old": "a"}),
        );
        assert_eq!(agreement("edit_file", "src/parser.rs", &edit), (true, true));
        assert_eq!(
            agreement("read_file", "src/parser.rs", &edit),
            (false, true)
        );
        assert_eq!(agreement("edit_file", "src/lexer.rs", &edit), (true, false));
        let search = call("search", json!({"query": "Flights to Paris"}));
        assert_eq!(
            agreement("search", r#"{"query":"Flights to Paris"}"#, &search),
            (true, true)
        );
    }
}
