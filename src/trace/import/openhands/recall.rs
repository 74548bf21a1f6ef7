//! OpenHands `recall` observations → the user message the agent's `ConversationMemory` builds
//! from them (`openhands/memory/conversation_memory.py`, `_process_observation`).
//!
//! Followed at OpenHands commit `b5338c69d6661dad658ead0d7217bf5bb9d482da` (2025-04-30, the
//! `metadata.git_commit` of the bundled multi_swe_bench trace): a `RecallObservation` becomes one
//! user message when the agent runs with `enable_prompt_extensions` (the `AgentConfig` default),
//! nothing otherwise:
//! - `recall_type: workspace_context`: the workspace text (`additional_info.j2`: repository,
//!   repository instructions, runtime hosts, additional instructions, date) when there is a
//!   repository, repository instructions, or runtime hosts/instructions; then the microagent text
//!   (`microagent_info.j2`: one `<EXTRA_INFO>` block per microagent) of `microagent_knowledge`
//!   less the agent's `disabled_microagents`. The two texts are one message (two text parts,
//!   joined by a newline when serialized as a string); nothing to say → no message.
//! - `recall_type: knowledge`: the microagent text of the microagents that no earlier recall
//!   observation (of either type) named, less the disabled ones; none left → no message.
//! - `ConversationMemory` then prepends a blank line (`\n\n`) to a user message that follows
//!   another user message; the recall's follows the user message it answers, so it gets one.
//!
//! Observations that carry the fields later OpenHands added (`repo_branch`, `working_dir`,
//! `custom_secrets_descriptions`, `conversation_instructions`, 2025-05 to 2025-08) are rendered
//! with the templates of commit `156d0686c46aafb0fa9d291da6421fb6f64dddc0` (2025-11-28), where a
//! date alone, custom secrets or conversation instructions also make a workspace text and the
//! `<RUNTIME_INFORMATION>` block is always written.

use super::super::json::{Node, Res};
use crate::trace::model::Message;
use std::collections::HashSet;

/// Whether the agent rendered recall observations (`agent_config.enable_prompt_extensions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extensions {
    /// Recorded true, or the `AgentConfig` default (sessions, resolver output, event streams).
    On,
    /// Recorded false in `metadata.agent_config`.
    Off,
    /// Not recorded, in an evaluation row (`metadata.agent_class`): OpenHands' evaluation
    /// harnesses (`evaluation/benchmarks/*/run_infer.py`: swe_bench, multi_swe_bench and most
    /// others) set `enable_prompt_extensions=False`.
    AssumedOff,
}

/// The recall state of one trace.
pub struct Recall {
    extensions: Extensions,
    /// `agent_config.disabled_microagents`.
    disabled: Vec<String>,
    /// Microagent names of the recall observations seen so far (a `knowledge` recall skips them).
    seen: HashSet<String>,
    /// Path of the first observation whose text was left out under `AssumedOff`, and how many.
    dropped: Option<(String, usize)>,
}

/// One entry of `microagent_knowledge`.
struct Microagent<'a> {
    name: &'a str,
    trigger: &'a str,
    content: &'a str,
}

/// Fields only later OpenHands records (their presence selects the later templates).
const LATER_FIELDS: [&str; 4] = [
    "repo_branch",
    "working_dir",
    "custom_secrets_descriptions",
    "conversation_instructions",
];

impl Recall {
    pub fn new(extensions: Extensions, disabled: Vec<String>) -> Self {
        Recall {
            extensions,
            disabled,
            seen: HashSet::new(),
            dropped: None,
        }
    }

    /// The message the model saw for the recall observation `e`, if any. An unknown
    /// `recall_type` is skipped with a warning.
    pub fn message(&mut self, e: &Node<'_>, warnings: &mut Vec<String>) -> Res<Option<Message>> {
        let x = e.key("extras");
        let kind = x.key("recall_type").opt_str()?;
        let mut agents = Vec::new();
        for a in x.key("microagent_knowledge").opt_items()? {
            agents.push(Microagent {
                name: a.key("name").str()?,
                trigger: a.key("trigger").str()?,
                content: a.key("content").str()?,
            });
        }
        let enabled = |a: &&Microagent<'_>| !self.disabled.iter().any(|d| d == a.name);
        let parts = match kind {
            Some("workspace_context") => {
                let mut parts = Vec::new();
                if let Some(w) = workspace_text(&x)? {
                    parts.push(w);
                }
                let shown: Vec<&Microagent<'_>> = agents.iter().filter(enabled).collect();
                if !shown.is_empty() {
                    parts.push(microagent_text(&shown));
                }
                Some(parts)
            }
            Some("knowledge") => {
                let shown: Vec<&Microagent<'_>> = agents
                    .iter()
                    .filter(|a| !self.seen.contains(a.name))
                    .filter(enabled)
                    .collect();
                Some(if shown.is_empty() {
                    Vec::new()
                } else {
                    vec![microagent_text(&shown)]
                })
            }
            _ => None,
        };
        // Any earlier recall observation counts, whatever its type or fate.
        self.seen.extend(agents.iter().map(|a| a.name.to_string()));
        let Some(parts) = parts else {
            let kind = kind.map_or_else(|| "missing".to_string(), crate::output::quoted);
            warnings.push(format!(
                "{}: recall observation with recall_type {kind} skipped (OpenHands renders \
                 only workspace_context and knowledge)",
                e.path
            ));
            return Ok(None);
        };
        if parts.is_empty() {
            return Ok(None);
        }
        match self.extensions {
            Extensions::On => {}
            Extensions::Off => return Ok(None),
            Extensions::AssumedOff => {
                let d = self.dropped.get_or_insert_with(|| (e.path.clone(), 0));
                d.1 += 1;
                return Ok(None);
            }
        }
        let mut m = Message::user(parts.join("\n"));
        m.kind = Some("meta".into());
        Ok(Some(m))
    }

    /// The warning for what `AssumedOff` left out, once per trace.
    pub fn finish(self, warnings: &mut Vec<String>) {
        if let Some((path, n)) = self.dropped {
            let more = match n {
                1 => String::new(),
                n => format!(" (and {} later one(s))", n - 1),
            };
            warnings.push(format!(
                "{path}: recall observation{more} not imported as a message: this evaluation \
                 row does not record metadata.agent_config, and OpenHands' evaluation harnesses \
                 run with enable_prompt_extensions=false, which keeps it from the model"
            ));
        }
    }
}

/// A JSON scalar as Python's `str()` prints it in a Jinja template.
fn py_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Bool(true) => "True".into(),
        serde_json::Value::Bool(false) => "False".into(),
        serde_json::Value::Null => "None".into(),
        other => other.to_string(),
    }
}

/// A string field, `""` when missing or `null`.
fn text<'a>(x: &Node<'a>, k: &str) -> Res<&'a str> {
    Ok(x.key(k).opt_str()?.unwrap_or(""))
}

/// An object field's entries as text, in recorded order; none when missing or `null`.
fn entries(x: &Node<'_>, k: &str) -> Res<Vec<(String, String)>> {
    let n = x.key(k);
    if n.is_null() {
        return Ok(Vec::new());
    }
    Ok(n.obj()?
        .iter()
        .map(|(k, v)| (k.clone(), py_text(v)))
        .collect())
}

/// `additional_info.j2` as `PromptManager.build_workspace_context` renders it (stripped), or
/// `None` when `ConversationMemory` finds nothing to say.
fn workspace_text(x: &Node<'_>) -> Res<Option<String>> {
    let later = LATER_FIELDS.iter().any(|k| x.has(k));
    let name = text(x, "repo_name")?;
    let dir = text(x, "repo_directory")?;
    let instructions = text(x, "repo_instructions")?;
    let hosts = entries(x, "runtime_hosts")?;
    let extra = text(x, "additional_agent_instructions")?;
    let date = text(x, "date")?;
    let branch = text(x, "repo_branch")?;
    let working_dir = text(x, "working_dir")?;
    let secrets = entries(x, "custom_secrets_descriptions")?;
    let conversation = text(x, "conversation_instructions")?;

    let has_repo = !name.is_empty() || !dir.is_empty();
    let has_runtime = if later {
        !date.is_empty() || !secrets.is_empty()
    } else {
        !hosts.is_empty() || !extra.is_empty()
    };
    let has_instructions = !instructions.trim().is_empty();
    if !(has_repo || has_runtime || has_instructions || !conversation.is_empty()) {
        return Ok(None);
    }
    let mut s = String::new();
    if has_repo {
        s.push_str("\n<REPOSITORY_INFO>\n");
        if later {
            s.push_str(&format!(
                "At the user's request, repository {name} has been cloned to {dir} in the \
                 current working directory.\n"
            ));
            if !branch.is_empty() {
                s.push_str(&format!(
                    "The repository has been checked out to branch \"{branch}\".\n\n\
                     IMPORTANT: You should work within the current branch \"{branch}\" unless:\n    \
                     1. the user explicitly instructs otherwise\n    \
                     2. the current branch is \"main\", \"master\", or another default branch \
                     where direct pushes may be unsafe\n"
                ));
            }
            s.push('\n');
        } else {
            s.push_str(&format!(
                "At the user's request, repository {name} has been cloned to the current working \
                 directory {dir}.\n"
            ));
        }
        s.push_str("</REPOSITORY_INFO>\n");
    }
    s.push('\n');
    if !instructions.is_empty() {
        s.push_str(&format!(
            "<REPOSITORY_INSTRUCTIONS>\n{instructions}\n</REPOSITORY_INSTRUCTIONS>\n"
        ));
    }
    s.push('\n');
    // The 2025-04 template writes the block only for hosts or instructions; the later one always.
    if later || !hosts.is_empty() || !extra.is_empty() {
        s.push_str("<RUNTIME_INFORMATION>\n");
        if later {
            if !working_dir.is_empty() {
                s.push_str(&format!(
                    "\nThe current working directory is {working_dir}\n"
                ));
            }
            s.push('\n');
        }
        if !hosts.is_empty() {
            s.push_str(
                "\nThe user has access to the following hosts for accessing a web application,\n\
                 each of which has a corresponding port:\n",
            );
            for (host, port) in &hosts {
                s.push_str(&format!("* {host} (port {port})\n"));
            }
            s.push_str(
                "\nWhen starting a web server, use the corresponding ports. You should also\n\
                 set any options to allow iframes and CORS requests, and allow the server to\n\
                 be accessed from any host (e.g. 0.0.0.0).\n\
                 For example, if you are using vite.config.js, you should set server.host and \
                 server.allowedHosts to true\n",
            );
        }
        s.push('\n');
        if !extra.is_empty() {
            s.push_str(&format!("\n{extra}\n"));
        }
        s.push('\n');
        if later {
            if !secrets.is_empty() {
                s.push_str(
                    "\n<CUSTOM_SECRETS>\nYou have access to the following environment variables\n",
                );
                for (secret, description) in &secrets {
                    s.push_str(&format!("\n* **${secret}**: {description}\n"));
                }
                s.push_str("\n</CUSTOM_SECRETS>\n");
            }
            s.push('\n');
        }
        if !date.is_empty() {
            s.push_str(&format!("\nToday's date is {date} (UTC).\n"));
        }
        s.push('\n');
        s.push_str("</RUNTIME_INFORMATION>\n");
        if later && !conversation.is_empty() {
            s.push_str(&format!(
                "<CONVERSATION_INSTRUCTIONS>\n{conversation}\n</CONVERSATION_INSTRUCTIONS>\n"
            ));
        }
    }
    Ok(Some(s.trim().to_string()))
}

/// `microagent_info.j2` as `PromptManager.build_microagent_info` renders it (stripped).
fn microagent_text(agents: &[&Microagent<'_>]) -> String {
    let mut s = String::new();
    for a in agents {
        s.push_str(&format!(
            "\n<EXTRA_INFO>\nThe following information has been included based on a keyword \
             match for \"{}\".\nIt may or may not be relevant to the user's request.\n\n{}\n\
             </EXTRA_INFO>\n",
            a.trigger, a.content
        ));
    }
    s.trim().to_string()
}
