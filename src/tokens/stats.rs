//! Trace statistics (`ctxbench traces stats`): a pure function over `&[Trace]` returning a
//! serializable report — messages and tokens by role, tool calls and tokens by tool, the largest
//! messages, recorded usage against counted tokens (calibration), and import warnings.
//!
//! Definitions (also in the JSON field docs):
//! - tokens of a message are the counter's `count_message` (framing included);
//! - a tool-result message belongs to the tool named in its `name`, else to the tool of the call
//!   its `tool_call_id` answers, else to `(unknown)`; tool-call tokens are the counter's tokens
//!   of the call's name plus its JSON arguments, as bare text;
//! - `chars` of a message are the Unicode scalar values of everything that is counted: content,
//!   name, `tool_call_id`, and each call's name and JSON arguments;
//! - calibration compares, for every assistant message with recorded `usage.input > 0`, the
//!   recorded input with the counted prompt: the tokens of all messages before it plus the
//!   recorded tool schemas. Error % = (counted − recorded) / recorded × 100; `bias_pct` is its
//!   mean (positive: the counter over-counts), `mean_abs_pct_error` the mean of its absolute
//!   value. Totals pool every compared call of every trace (not a mean of per-trace means).
//!   A recorded compaction (a `compaction` marker) restarts the counted prompt: after it the
//!   model saw the tool schemas, the trace's leading system messages (which a compaction keeps)
//!   and the messages from the marker on, not the history it replaced.
//!   With an overhead ([`compute_with_overhead`]: what the trace left out, e.g. the bundled
//!   `claude-code` estimate) every counted prompt gets it added, and the figures without it stay
//!   beside (`*_without_overhead`), so the bias before and after can be compared.

use super::bpe::json_text;
use super::{count_traces, TokenCounter};
use crate::trace::{Message, Role, Trace, Usage};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Version of the `traces stats --json` document. Bump on any incompatible change.
pub const STATS_SCHEMA_VERSION: u32 = 1;

/// Name used for tool results whose tool cannot be determined.
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// The whole `traces stats` result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatsReport {
    pub schema_version: u32,
    /// Registry name of the counter used for every token figure.
    pub counter: String,
    /// Inputs that could not be imported and were skipped (`--skip-invalid`); filled by the CLI.
    pub skipped: Vec<SkippedInput>,
    /// Files found in a directory that hold no trace, and what was seen; filled by the CLI.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<IgnoredInput>,
    /// Trace ids that more than one input gave (each input's trace is a row and is counted in
    /// the totals), with the files: `run` refuses such traces, `import` renames the later
    /// ones `<id>-2`, …; filled by the CLI.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub duplicate_ids: Vec<DuplicateId>,
    pub traces: Vec<TraceStats>,
    pub total: TotalStats,
}

/// An input skipped because it could not be imported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkippedInput {
    pub file: String,
    pub location: String,
    pub message: String,
}

/// A trace id more than one input gave, and the files it came from (in input order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DuplicateId {
    pub id: String,
    pub files: Vec<String>,
}

/// The trace ids of `traces` that occur more than once, in first-seen order, each with the
/// files it came from.
pub fn duplicate_ids(traces: &[Trace]) -> Vec<DuplicateId> {
    let mut by_id: Vec<DuplicateId> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for t in traces {
        let file = t.meta.source_path.clone().unwrap_or_else(|| "?".into());
        match at.get(t.meta.id.as_str()) {
            Some(&i) => by_id[i].files.push(file),
            None => {
                at.insert(&t.meta.id, by_id.len());
                by_id.push(DuplicateId {
                    id: t.meta.id.clone(),
                    files: vec![file],
                });
            }
        }
    }
    by_id.retain(|d| d.files.len() > 1);
    by_id
}

/// A file found in a directory that holds no trace (valid JSON of no trace format).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IgnoredInput {
    pub file: String,
    /// What was seen.
    pub reason: String,
}

/// Messages, tokens and characters of one role.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RoleStats {
    pub messages: u64,
    pub tokens: u64,
    pub chars: u64,
}

/// Calls and tokens of one tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ToolStats {
    /// Tool calls issued by assistant messages.
    pub calls: u64,
    /// Tokens of those calls' names and JSON arguments (bare text, no framing).
    pub call_tokens: u64,
    /// Tool-result messages attributed to this tool.
    pub results: u64,
    /// Tokens of those result messages (framing included).
    pub result_tokens: u64,
}

/// One of the largest messages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LargestMessage {
    pub trace_id: String,
    /// Index of the message in its trace (0-based).
    pub index: usize,
    pub role: Role,
    /// The tool of a tool result, or the comma-joined tools an assistant message called.
    pub tool: Option<String>,
    pub tokens: u64,
    pub chars: u64,
}

/// Recorded provider usage against counted prompt tokens.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Calibration {
    /// Assistant messages with recorded `usage.input > 0` that were compared.
    pub calls: u64,
    /// Sum of their recorded `usage.input` (cached tokens included).
    pub recorded_input: u64,
    /// Sum of their counted prompts.
    pub counted_input: u64,
    /// Mean of |counted − recorded| / recorded × 100 over the compared calls.
    pub mean_abs_pct_error: f64,
    /// Mean of (counted − recorded) / recorded × 100: positive means the counter over-counts.
    pub bias_pct: f64,
    /// Tokens added to every counted prompt (what the trace left out); 0 = none.
    #[serde(skip_serializing_if = "is_zero")]
    pub overhead_tokens: u64,
    /// `mean_abs_pct_error` without the overhead (only when there is one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_abs_pct_error_without_overhead: Option<f64>,
    /// `bias_pct` without the overhead (only when there is one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bias_pct_without_overhead: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Statistics of one trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceStats {
    pub id: String,
    pub source_format: String,
    pub source_path: Option<String>,
    pub model: Option<String>,
    /// Flat in the JSON, beside the trace's identity.
    #[serde(flatten)]
    pub figures: Figures,
}

/// Statistics pooled over every trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TotalStats {
    pub traces: u64,
    /// Flat in the JSON, beside the trace count.
    #[serde(flatten)]
    pub figures: Figures,
}

/// The figures of one trace, or of every trace pooled.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    pub messages: u64,
    /// Tokens of all messages (framing included), without tool schemas.
    pub tokens: u64,
    /// Tokens of the recorded tool schemas (sent with every request).
    pub tool_schema_tokens: u64,
    pub chars: u64,
    /// Keyed by role name; roles with no message are absent.
    pub by_role: BTreeMap<String, RoleStats>,
    pub tool_calls: u64,
    /// Keyed by tool name.
    pub by_tool: BTreeMap<String, ToolStats>,
    /// Model calls recorded in the trace (assistant messages).
    pub model_calls: u64,
    /// Sum of recorded per-call usage.
    pub recorded_usage: Usage,
    /// `None` when no assistant message records `usage.input > 0`.
    pub calibration: Option<Calibration>,
    pub import_warnings: u64,
    /// Tokens of the largest message (0 without messages), whatever `top` lists.
    pub largest_message_tokens: u64,
    /// The `top` largest messages by tokens (ties: earlier trace, then earlier message first).
    pub largest: Vec<LargestMessage>,
}

impl Figures {
    /// Add another trace's counts (calibration and largest messages are pooled by the caller:
    /// they are not sums; the largest message's tokens are the larger of the two).
    fn add_counts(&mut self, o: &Figures) {
        self.messages += o.messages;
        self.tokens += o.tokens;
        self.tool_schema_tokens += o.tool_schema_tokens;
        self.chars += o.chars;
        for (role, r) in &o.by_role {
            let e = self.by_role.entry(role.clone()).or_default();
            e.messages += r.messages;
            e.tokens += r.tokens;
            e.chars += r.chars;
        }
        self.tool_calls += o.tool_calls;
        for (tool, ts) in &o.by_tool {
            let e = self.by_tool.entry(tool.clone()).or_default();
            e.calls += ts.calls;
            e.call_tokens += ts.call_tokens;
            e.results += ts.results;
            e.result_tokens += ts.result_tokens;
        }
        self.model_calls += o.model_calls;
        self.recorded_usage.add(&o.recorded_usage);
        self.import_warnings += o.import_warnings;
        self.largest_message_tokens = self.largest_message_tokens.max(o.largest_message_tokens);
    }
}

/// Compute statistics of `traces` with `counter`, keeping the `top` largest messages. Message
/// tokens are counted in parallel across traces and messages.
pub fn compute(traces: &[Trace], counter: &dyn TokenCounter, top: usize) -> StatsReport {
    compute_with_overhead(traces, counter, top, 0)
}

/// [`compute`] with `overhead` tokens added to every counted prompt in the calibration (the
/// system prompt and tool schemas a trace did not record); the other figures are unchanged.
pub fn compute_with_overhead(
    traces: &[Trace],
    counter: &dyn TokenCounter,
    top: usize,
    overhead: u64,
) -> StatsReport {
    let counts = count_traces(counter, traces);
    from_counts_with_overhead(traces, &counts, counter, top, overhead)
}

/// [`compute`] with per-message counts already known (`counts[t][m]` = tokens of message `m` of
/// trace `t`, as [`count_traces`] returns them). `counter` is still used for tool schemas and
/// tool-call tokens. Panics if `counts` does not have the shape of `traces`.
pub fn from_counts(
    traces: &[Trace],
    counts: &[Vec<u64>],
    counter: &dyn TokenCounter,
    top: usize,
) -> StatsReport {
    from_counts_with_overhead(traces, counts, counter, top, 0)
}

/// [`from_counts`] with an overhead per counted prompt (see [`compute_with_overhead`]).
pub fn from_counts_with_overhead(
    traces: &[Trace],
    counts: &[Vec<u64>],
    counter: &dyn TokenCounter,
    top: usize,
    overhead: u64,
) -> StatsReport {
    assert_eq!(traces.len(), counts.len(), "one count vector per trace");
    let per_trace: Vec<(TraceStats, CalibrationAcc)> = traces
        .par_iter()
        .zip(counts)
        .map(|(t, c)| trace_stats(t, c, counter, top, overhead))
        .collect();

    let mut total = Figures::default();
    let mut acc = CalibrationAcc {
        overhead,
        ..Default::default()
    };
    let mut largest = Vec::new();
    for (s, a) in &per_trace {
        total.add_counts(&s.figures);
        acc.merge(a);
        largest.extend(s.figures.largest.iter().cloned());
    }
    total.calibration = acc.finish();
    // Each trace's list holds its own top N, so the global top N is among them. Stable sort keeps
    // trace order, then message order, among equal sizes.
    largest.sort_by_key(|l| std::cmp::Reverse(l.tokens));
    largest.truncate(top);
    total.largest = largest;

    StatsReport {
        schema_version: STATS_SCHEMA_VERSION,
        counter: counter.name().to_string(),
        skipped: Vec::new(),
        ignored: Vec::new(),
        duplicate_ids: Vec::new(),
        traces: per_trace.into_iter().map(|(s, _)| s).collect(),
        total: TotalStats {
            traces: traces.len() as u64,
            figures: total,
        },
    }
}

/// Running sums for calibration, pooled across traces.
#[derive(Clone, Debug, Default)]
struct CalibrationAcc {
    /// Added to every counted prompt.
    overhead: u64,
    calls: u64,
    recorded: u64,
    counted: u64,
    sum_pct: f64,
    sum_abs_pct: f64,
    /// The same sums without the overhead.
    sum_pct_bare: f64,
    sum_abs_pct_bare: f64,
}

impl CalibrationAcc {
    /// One call: `recorded` input against `counted` prompt tokens (overhead not included).
    fn add(&mut self, recorded: u64, counted: u64) {
        let pct = |c: u64| (c as f64 - recorded as f64) / recorded as f64 * 100.0;
        let (with, bare) = (pct(counted + self.overhead), pct(counted));
        self.calls += 1;
        self.recorded += recorded;
        self.counted += counted + self.overhead;
        self.sum_pct += with;
        self.sum_abs_pct += with.abs();
        self.sum_pct_bare += bare;
        self.sum_abs_pct_bare += bare.abs();
    }
    fn merge(&mut self, o: &CalibrationAcc) {
        self.calls += o.calls;
        self.recorded += o.recorded;
        self.counted += o.counted;
        self.sum_pct += o.sum_pct;
        self.sum_abs_pct += o.sum_abs_pct;
        self.sum_pct_bare += o.sum_pct_bare;
        self.sum_abs_pct_bare += o.sum_abs_pct_bare;
    }
    fn finish(&self) -> Option<Calibration> {
        let n = self.calls as f64;
        let bare = |x: f64| (self.overhead > 0).then_some(x / n);
        (self.calls > 0).then(|| Calibration {
            calls: self.calls,
            recorded_input: self.recorded,
            counted_input: self.counted,
            mean_abs_pct_error: self.sum_abs_pct / n,
            bias_pct: self.sum_pct / n,
            overhead_tokens: self.overhead,
            mean_abs_pct_error_without_overhead: bare(self.sum_abs_pct_bare),
            bias_pct_without_overhead: bare(self.sum_pct_bare),
        })
    }
}

fn trace_stats(
    trace: &Trace,
    counts: &[u64],
    counter: &dyn TokenCounter,
    top: usize,
    overhead: u64,
) -> (TraceStats, CalibrationAcc) {
    assert_eq!(
        trace.messages.len(),
        counts.len(),
        "one count per message of trace {}",
        trace.meta.id
    );
    let tool_schema_tokens = counter.count_tools(&trace.meta.tools);
    let mut s = Figures {
        messages: trace.messages.len() as u64,
        tool_schema_tokens,
        recorded_usage: trace.recorded_usage(),
        import_warnings: trace.meta.warnings.len() as u64,
        ..Figures::default()
    };
    let mut acc = CalibrationAcc {
        overhead,
        ..Default::default()
    };
    let mut call_tool: HashMap<&str, &str> = HashMap::new();
    let mut prompt = tool_schema_tokens; // tokens of everything before the current message
    let mut sizes: Vec<(u64, u64, usize)> = Vec::with_capacity(trace.messages.len());
    // What a compaction keeps: the tool schemas and the leading system messages.
    let kept = tool_schema_tokens
        + trace
            .messages
            .iter()
            .zip(counts)
            .take_while(|(m, _)| m.role == Role::System)
            .map(|(_, &c)| c)
            .sum::<u64>();
    let compactions: std::collections::HashSet<usize> = trace
        .markers
        .iter()
        .filter(|mk| mk.kind == "compaction")
        .map(|mk| mk.index)
        .collect();

    for (index, (m, &tokens)) in trace.messages.iter().zip(counts).enumerate() {
        if compactions.contains(&index) && index > 0 {
            prompt = kept;
        }
        let chars = message_chars(m);
        s.tokens += tokens;
        s.chars += chars;
        let r = s.by_role.entry(m.role.as_str().to_string()).or_default();
        r.messages += 1;
        r.tokens += tokens;
        r.chars += chars;

        match m.role {
            Role::Assistant => {
                s.model_calls += 1;
                if let Some(u) = &m.usage {
                    if u.input > 0 {
                        acc.add(u.input, prompt);
                    }
                }
                for call in &m.tool_calls {
                    s.tool_calls += 1;
                    call_tool.insert(call.id.as_str(), call.name.as_str());
                    let e = s.by_tool.entry(call.name.clone()).or_default();
                    e.calls += 1;
                    e.call_tokens += counter.count_text(&call.name)
                        + counter.count_text(&json_text(&call.arguments));
                }
            }
            Role::Tool => {
                let e = s
                    .by_tool
                    .entry(result_tool(m, &call_tool).to_string())
                    .or_default();
                e.results += 1;
                e.result_tokens += tokens;
            }
            Role::System | Role::User => {}
        }
        prompt += tokens;
        sizes.push((tokens, chars, index));
    }
    s.calibration = acc.finish();
    s.largest_message_tokens = sizes.iter().map(|s| s.0).max().unwrap_or(0);
    sizes.sort_by_key(|s| std::cmp::Reverse(s.0)); // stable: ties keep message order
    s.largest = sizes
        .into_iter()
        .take(top)
        .map(|(tokens, chars, index)| {
            let m = &trace.messages[index];
            let tool = match m.role {
                Role::Tool => Some(result_tool(m, &call_tool).to_string()),
                Role::Assistant if !m.tool_calls.is_empty() => Some(
                    m.tool_calls
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                _ => None,
            };
            LargestMessage {
                trace_id: trace.meta.id.clone(),
                index,
                role: m.role,
                tool,
                tokens,
                chars,
            }
        })
        .collect();
    let stats = TraceStats {
        id: trace.meta.id.clone(),
        source_format: trace.meta.source_format.as_str().to_string(),
        source_path: trace.meta.source_path.clone(),
        model: trace.meta.model.clone(),
        figures: s,
    };
    (stats, acc)
}

/// The tool a tool-result message belongs to (see the module docs).
fn result_tool<'a>(m: &'a Message, call_tool: &HashMap<&'a str, &'a str>) -> &'a str {
    m.name
        .as_deref()
        .or_else(|| {
            m.tool_call_id
                .as_deref()
                .and_then(|id| call_tool.get(id).copied())
        })
        .unwrap_or(UNKNOWN_TOOL)
}

/// Characters of everything a counter counts in a message (see the module docs).
pub fn message_chars(m: &Message) -> u64 {
    let mut n = m.content.chars().count();
    if let Some(name) = &m.name {
        n += name.chars().count();
    }
    if let Some(id) = &m.tool_call_id {
        n += id.chars().count();
    }
    for c in &m.tool_calls {
        n += c.name.chars().count() + json_text(&c.arguments).chars().count();
    }
    n as u64
}
