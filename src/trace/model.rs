//! The canonical trace model: one recorded agent session as ordered messages, with tool calls,
//! tool results linked by id, normalized per-call usage, compaction markers and metadata.
//!
//! Wire format (JSON Lines, `schema_version` 1): a trace is one `{"type":"header", …}` line
//! followed by its `{"type":"message", …}` and `{"type":"marker", …}` lines in order. A file may
//! hold several traces back to back; each header starts a new one. See `trace::io`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Version of the canonical trace wire format. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A tool call issued by an assistant message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// Call id, unique within the trace after import (importers rewrite reused ids).
    pub id: String,
    pub name: String,
    /// Arguments as a JSON value (an object for every format seen so far). Key order is kept.
    pub arguments: serde_json::Value,
}

/// Token usage of one model call, normalized: `input` **includes** `cache_read` and
/// `cache_write` (Anthropic reports them disjoint; importers add them up). Reading canonical
/// JSONL, a message's usage without `input` or `output` is read as no usage (a count that was
/// not recorded is not zero; the trace's warnings name the line), and a golden-fixture role
/// line's usage is not read at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
    }
}

/// A thinking block of an Anthropic assistant turn, exactly as the API returned it (the
/// `signature` is the API's own check of the block). Kept so a replayed assistant turn can send
/// it back unchanged: with extended thinking on, the API refuses a tool loop whose last
/// assistant turn lost its thinking (see `providers::anthropic`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ThinkingBlock {
    /// `{"type": "thinking", "thinking": …, "signature": …}`.
    Thinking { thinking: String, signature: String },
    /// `{"type": "redacted_thinking", "data": …}`: thinking the API encrypted.
    RedactedThinking { data: String },
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    pub role: Role,
    /// The text the model saw (for tool results: the result text).
    #[serde(default)]
    pub content: String,
    /// Tool calls of an assistant message, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `role: tool`: the id of the call this result answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For `role: tool`: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Usage of the model call that produced this assistant message, if recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Model reasoning recorded beside the content (never part of what later calls saw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// An assistant message's Anthropic thinking blocks with their signatures, in order (what
    /// `reasoning` holds as text, kept as the API needs it back). Empty for other sources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking_blocks: Vec<ThinkingBlock>,
    /// True when a tool result was an error, or a user message is harness-injected (not human).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Free-form classification from the importer, e.g. `format_error`, `meta`, `demo`,
    /// `submission`, `user_simulator`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            usage: None,
            reasoning: None,
            thinking_blocks: Vec::new(),
            is_error: false,
            kind: None,
            timestamp: None,
        }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        let mut m = Self::new(Role::Assistant, content);
        m.tool_calls = tool_calls;
        m
    }
    pub fn tool(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        let mut m = Self::new(Role::Tool, content);
        m.tool_call_id = Some(call_id.into());
        m.name = Some(name.into());
        m
    }
}

/// A compaction or boundary recorded in the original session (not produced by ctxbench).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextMarker {
    /// Index of the first message after the marker (the marker sits before it).
    pub index: usize,
    /// `compaction`, `task_boundary`, `summary`, …
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<u64>,
}

/// Outcome of the recorded session, where the format has one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Outcome {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Declares [`SourceFormat`]: one line per format, `Variant => "name"` (the name used by
/// `--from`, `[traces] from` and `meta.source_format`). A format other than `canonical` also
/// needs its importer in `trace::import`'s `importers!` list (a test checks both agree).
macro_rules! source_formats {
    ($($variant:ident => $name:literal,)+) => {
        /// The formats ctxbench reads.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        pub enum SourceFormat {
            $(#[serde(rename = $name)] $variant,)+
        }

        impl SourceFormat {
            /// Every format, canonical first, in the order `--help` lists them.
            pub const ALL: &'static [SourceFormat] = &[$(SourceFormat::$variant,)+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(SourceFormat::$variant => $name,)+
                }
            }
        }
    };
}

source_formats! {
    Canonical => "canonical",
    Openai => "openai",
    Anthropic => "anthropic",
    ClaudeCode => "claude-code",
    MiniSwe => "mini-swe",
    SweAgent => "swe-agent",
    Openhands => "openhands",
    Tau => "tau",
    Tau2 => "tau2",
    Atif => "atif",
    Golden => "golden",
    Codex => "codex",
    OpenaiResponses => "openai-responses",
    Langchain => "langchain",
    Inspect => "inspect",
    GeminiCli => "gemini-cli",
    Gemini => "gemini",
    Cline => "cline",
    Copilot => "copilot",
}

impl SourceFormat {
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|f| f.as_str() == s)
    }
}

/// Trace-level metadata.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceMeta {
    /// Stable id: derived from the source file name and, for multi-trace files, the run key.
    pub id: String,
    pub source_format: SourceFormat,
    /// Path of the file it was imported from, as given on the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The model's context window in tokens, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// The user's goal as stated in the trace (usually the first user request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// A hidden instruction the (simulated) user followed, e.g. τ-bench `info.task.instruction`:
    /// gold for goal-drift evals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// The source's own usage totals where it records them (for checking per-call sums).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Tool schemas (JSON) the agent had, where recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<serde_json::Value>,
    /// Problems the importer worked around (each names the JSON path or line).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl TraceMeta {
    pub fn new(id: impl Into<String>, source_format: SourceFormat) -> Self {
        TraceMeta {
            id: id.into(),
            source_format,
            source_path: None,
            model: None,
            window: None,
            task_id: None,
            outcome: None,
            goal: None,
            instruction: None,
            total_usage: None,
            cost_usd: None,
            tools: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// One recorded agent session.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub meta: TraceMeta,
    pub messages: Vec<Message>,
    pub markers: Vec<ContextMarker>,
}

impl Trace {
    /// Its id, the file it was imported from and its import warnings: what
    /// `record::ImportWarnings` groups.
    pub fn warned(&self) -> (&str, Option<&str>, &[String]) {
        (
            &self.meta.id,
            self.meta.source_path.as_deref(),
            &self.meta.warnings,
        )
    }

    pub fn new(meta: TraceMeta) -> Self {
        Trace {
            meta,
            messages: Vec::new(),
            markers: Vec::new(),
        }
    }

    /// Indexes of the assistant messages: each one is a recorded model call.
    pub fn model_call_indexes(&self) -> impl Iterator<Item = usize> + '_ {
        self.messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::Assistant)
            .map(|(i, _)| i)
    }

    /// Sum of recorded per-call usage.
    pub fn recorded_usage(&self) -> Usage {
        let mut u = Usage::default();
        for m in &self.messages {
            if let Some(mu) = &m.usage {
                u.add(mu);
            }
        }
        u
    }
}

/// One line of the canonical JSONL wire format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TraceLine {
    Header {
        schema_version: u32,
        meta: TraceMeta,
    },
    Message(Message),
    Marker(ContextMarker),
}
