//! Presets: named layer pipelines that reproduce real systems. `deepagents` is deepagents
//! 0.7.32 exactly (see `testdata/deepagents-golden/README.md`); `none` is the no-compression
//! reference; the others follow the public documentation of each system (PEERS.md,
//! `peer-docs/`), each function citing what it reproduces. Listed in [`NAMES`]; documented in
//! `docs/engine.md`.

use super::layer_config::{
    CeilingAction, Checkpoint, ClearToolResults, Compact, Condense, CostCeiling, Emergency,
    EvictToolResults, EvictUserMessages, History, Keep, LayerConfig, Size, Summarize, SummaryRole,
    TextSource, Trigger, Truncate, TruncateArgs, TurnTrim, Watchdog,
};

/// A preset: default window and counter, and its layers in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Preset {
    pub name: &'static str,
    /// Window used when neither the config nor the trace gives one.
    pub default_window: u64,
    pub counter: &'static str,
    pub layers: Vec<LayerConfig>,
}

/// Names accepted by `preset = …` / `--preset`.
pub const NAMES: &[&str] = &[
    "deepagents",
    "seed-layered",
    "langchain",
    "digitorn",
    "digitorn-truncate",
    "core-agent",
    "turn-trim",
    "openhands",
    "codex",
    "claude-code",
    "anthropic-context-editing",
    "none",
];

/// The preset called `name`.
pub fn preset(name: &str) -> Option<Preset> {
    match name {
        "deepagents" => Some(deepagents()),
        "seed-layered" => Some(seed_layered()),
        "langchain" => Some(langchain()),
        "digitorn" => Some(digitorn()),
        "digitorn-truncate" => Some(digitorn_truncate()),
        "core-agent" => Some(core_agent()),
        "turn-trim" => Some(turn_trim()),
        "openhands" => Some(openhands()),
        "codex" => Some(codex()),
        "claude-code" => Some(claude_code()),
        "anthropic-context-editing" => Some(anthropic_context_editing()),
        "none" => Some(Preset {
            name: "none",
            default_window: 200_000,
            counter: "approx",
            layers: Vec::new(),
        }),
        _ => None,
    }
}

/// Tools deepagents never evicts at tool time.
pub const DEEPAGENTS_EXCLUDED_TOOLS: [&str; 7] = [
    "ls",
    "glob",
    "grep",
    "read_file",
    "edit_file",
    "write_file",
    "delete",
];

/// deepagents 0.7.32: `create_deep_agent()` with FilesystemMiddleware then
/// SummarizationMiddleware (ContextEditing off).
pub fn deepagents() -> Preset {
    Preset {
        name: "deepagents",
        default_window: 200_000,
        counter: "approx",
        layers: vec![
            LayerConfig::EvictToolResults(EvictToolResults {
                threshold: Size::Chars(80_000),
                excluded_tools: DEEPAGENTS_EXCLUDED_TOOLS
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                head_lines: 5,
                tail_lines: 5,
                line_chars: 1000,
                path_prefix: "/large_tool_results".into(),
            }),
            LayerConfig::EvictUserMessages(EvictUserMessages {
                threshold: Size::Chars(200_000),
                only_last_message: true,
                head_lines: 5,
                tail_lines: 5,
                line_chars: 1000,
                path_prefix: "/conversation_history".into(),
            }),
            LayerConfig::TruncateArgs(TruncateArgs {
                trigger: Trigger::Fraction(0.85),
                keep: Keep::Fraction(0.10),
                tools: vec!["write_file".into(), "edit_file".into()],
                max_arg_chars: 2000,
                keep_prefix_chars: 20,
                suffix: "...(argument truncated)".into(),
            }),
            LayerConfig::Summarize(Summarize {
                trigger: Trigger::Fraction(0.85),
                trigger_over_budget: true,
                keep: Keep::Fraction(0.10),
                prompt: None,
                summary_max_tokens: 2048,
                history_dir: "/conversation_history".into(),
                history: History::Offload,
                summary_role: SummaryRole::User,
                clip_tail_over_budget: true,
                read_file_slice_chars: 4000,
                stop_on_overflow: true,
                tier_from_model: false,
                cooldown_secs: None,
            }),
        ],
    }
}

/// LangChain `ClearToolUsesEdit` defaults (`trigger=100_000` tokens, `keep=3`, `[cleared]`,
/// inputs kept, nothing excluded, `clear_at_least=0`); nothing is offloaded.
pub fn langchain_clear(trigger: Trigger) -> ClearToolResults {
    ClearToolResults {
        trigger,
        keep: 3,
        excluded_tools: Vec::new(),
        placeholder: "[cleared]".into(),
        clear_tool_inputs: false,
        clear_at_least: 0,
        clear_at_least_is_minimum: false,
        offload: false,
        path_prefix: "/cleared_tool_results".into(),
    }
}

/// The layered design of seed 000 (`peer-docs/layered-agent-context-handling.txt`):
/// deepagents' FilesystemMiddleware eviction (~20k tokens = 80,000 chars at deepagents' 4
/// chars/token) → LangChain ContextEditing clearing at 60% of the window keeping the 3 most
/// recent results → deepagents' SummarizationMiddleware at 85% (history offloaded first, the
/// summary names the file). Clearing runs ahead of summarization, as the design states.
pub fn seed_layered() -> Preset {
    let mut p = deepagents();
    p.name = "seed-layered";
    let at = p
        .layers
        .iter()
        .position(|l| matches!(l, LayerConfig::TruncateArgs(_)))
        .unwrap_or(p.layers.len());
    p.layers.insert(
        at,
        LayerConfig::ClearToolResults(langchain_clear(Trigger::Fraction(0.60))),
    );
    p
}

/// Stand-alone LangChain v1 `SummarizationMiddleware` + `ContextEditingMiddleware` defaults:
/// keep the last 20 messages; LangChain has no default trigger, so the preset uses 0.85 of the
/// window (deepagents' choice; override with `--set summarize.trigger…`); no over-budget
/// trigger, no tail clipping. Summarization runs in `before_model` (persistent), then clearing
/// edits each request at 100,000 tokens.
pub fn langchain() -> Preset {
    Preset {
        name: "langchain",
        default_window: 200_000,
        counter: "approx",
        layers: vec![
            LayerConfig::Summarize(Summarize {
                trigger: Trigger::Fraction(0.85),
                trigger_over_budget: false,
                keep: Keep::Messages(20),
                prompt: None,
                summary_max_tokens: 2048,
                history_dir: "/conversation_history".into(),
                history: History::None,
                summary_role: SummaryRole::User,
                clip_tail_over_budget: false,
                read_file_slice_chars: 4000,
                stop_on_overflow: false,
                tier_from_model: false,
                cooldown_secs: None,
            }),
            LayerConfig::ClearToolResults(langchain_clear(Trigger::Tokens(100_000))),
        ],
    }
}

/// digitorn's emergency compaction: on overflow of the window, halve `keep_recent` 10 (min 4),
/// truncate with a reminder, retry.
fn digitorn_emergency() -> LayerConfig {
    LayerConfig::Emergency(Emergency {
        limit: Trigger::Fraction(1.0),
        keep_recent: 10,
        min_keep: 4,
        reminder: true,
    })
}

/// digitorn's `_do_summarize` prompt: "a recap of decisions, files touched, key facts"
/// (`peer-docs/digitorn-context-management.txt`; the exact wording is not public).
pub const DIGITORN_SUMMARY_PROMPT: &str = "Summarize the dropped part of this agent session as \
a recap the agent will see as a system message, with exactly these sections:\n\n\
## DECISIONS\nDecisions taken and why.\n\n\
## FILES TOUCHED\nFiles read, created or modified.\n\n\
## KEY FACTS\nFacts, identifiers and values the agent still needs.";

/// digitorn's auto-compact hook does not fire again within 30 s of its previous compaction
/// (`cooldown: 30.0`, `peer-docs/digitorn-context-management.txt`).
pub const DIGITORN_COOLDOWN_SECS: f64 = 30.0;

/// digitorn `runtime.context` defaults with `strategy: summarize`
/// (`peer-docs/digitorn-context-management.txt`): compaction at pressure 0.75, keep the 10
/// most recent messages verbatim, the dropped slice replaced by a single *system* message
/// holding the recap (capped at 1024 tokens); nothing the agent can reach is written (its
/// `history_log` is an audit trail the agent never reads); emergency compaction on overflow.
pub fn digitorn() -> Preset {
    Preset {
        name: "digitorn",
        default_window: 200_000,
        counter: "approx",
        layers: vec![
            LayerConfig::Summarize(Summarize {
                trigger: Trigger::Fraction(0.75),
                trigger_over_budget: false,
                keep: Keep::Messages(10),
                prompt: Some(TextSource::Text(DIGITORN_SUMMARY_PROMPT.into())),
                summary_max_tokens: 1024,
                history_dir: "/conversation_history".into(),
                history: History::None,
                summary_role: SummaryRole::System,
                clip_tail_over_budget: false,
                read_file_slice_chars: 4000,
                stop_on_overflow: false,
                tier_from_model: false,
                // The auto-compact hook's `cooldown: 30.0`.
                cooldown_secs: Some(DIGITORN_COOLDOWN_SECS),
            }),
            digitorn_emergency(),
        ],
    }
}

/// digitorn with `strategy: truncate`: at pressure 0.75 drop everything before a safe split
/// keeping 10 messages and inject a reminder (goal + recent activity). No LLM and nothing
/// offloaded — the no-offload baseline. Emergency compaction on overflow.
pub fn digitorn_truncate() -> Preset {
    Preset {
        name: "digitorn-truncate",
        default_window: 200_000,
        counter: "approx",
        layers: vec![
            LayerConfig::Truncate(Truncate {
                trigger: Trigger::Fraction(0.75),
                keep: Keep::Messages(10),
                reminder: true,
                recent_activity: 5,
                goal_max_chars: 2000,
                cooldown_secs: Some(DIGITORN_COOLDOWN_SECS),
            }),
            digitorn_emergency(),
        ],
    }
}

/// core-agent's five-section "teammate handover" compaction prompt.
pub const CORE_AGENT_COMPACTION_PROMPT: &str = "Compact this conversation into a teammate \
handover so a colleague can continue the work, with exactly these sections:\n\n\
# Current state\nThe exact user request. What's been completed. What's actively in progress. \
What's specifically remaining.\n\n\
# Files & changes\nFiles modified, read, or analyzed. Critical code locations with line numbers \
when known.\n\n\
# Technical context\nArchitectural decisions made and why. Patterns adopted. Commands that \
worked or failed.\n\n\
# Strategy & approach\nThe strategy chosen. Alternatives considered and rejected. Gotchas. \
Blockers.\n\n\
# Exact next steps\nA concrete numbered list of the next developer-style actions.";

/// go-steer core-agent (`peer-docs/core-agent-context-management.txt`), all mechanisms at
/// their defaults: task-boundary checkpoints (six-section record at `task_boundary` markers or
/// after `mark_task_done`), compaction into a five-section handover at the model tier's
/// threshold (frontier 0.85 / mid 0.65 / small 0.35 by model-id substring, unknown 0.85) that
/// slices the pre-summary history out (only the in-flight call and its results stay), the
/// repeated-tool-call watchdog (5 in a row, warn), and the cost ceiling (off until
/// `cost_ceiling.per_turn_usd` / `per_session_usd` is set; stops).
pub fn core_agent() -> Preset {
    Preset {
        name: "core-agent",
        default_window: 200_000,
        counter: "approx",
        layers: vec![
            LayerConfig::Checkpoint(Checkpoint {
                marker_kinds: vec!["task_boundary".into()],
                tools: vec!["mark_task_done".into()],
                prompt: None,
                summary_max_tokens: 2048,
                history_dir: "/conversation_history".into(),
                // The audit log on disk is out of the agent's reach.
                history: History::None,
            }),
            LayerConfig::Summarize(Summarize {
                trigger: Trigger::Fraction(0.85),
                trigger_over_budget: false,
                keep: Keep::Messages(1),
                prompt: Some(TextSource::Text(CORE_AGENT_COMPACTION_PROMPT.into())),
                summary_max_tokens: 2048,
                history_dir: "/conversation_history".into(),
                history: History::None,
                summary_role: SummaryRole::User,
                clip_tail_over_budget: false,
                read_file_slice_chars: 4000,
                stop_on_overflow: false,
                tier_from_model: true,
                cooldown_secs: None,
            }),
            LayerConfig::Watchdog(Watchdog { threshold: 5 }),
            LayerConfig::CostCeiling(CostCeiling {
                per_turn_usd: None,
                per_session_usd: None,
                model: None,
                input_usd_per_mtok: None,
                output_usd_per_mtok: None,
                action: CeilingAction::Stop,
            }),
        ],
    }
}

/// The turn-trimming agent of seed 001 (`peer-docs/turn-trimming-agent-context.txt`): budget
/// 50,000 tokens and 20 turns, historical tool results over 20,000 chars clipped head+tail,
/// text compression below 5 turns, memory notes of trimmed turns, and the overflow path
/// (10K-char tool results and user texts, 5 turns, then only the current turn).
pub fn turn_trim() -> Preset {
    Preset {
        name: "turn-trim",
        default_window: 200_000,
        counter: "approx",
        layers: vec![LayerConfig::TurnTrim(TurnTrim {
            max_tokens: Trigger::Tokens(50_000),
            max_turns: 20,
            tool_result_max_chars: 20_000,
            compress_below_turns: 5,
            memory_dir: "/memory".into(),
            memory_summary: true,
            // Trimmed turns are summarized into the memory file; the raw turns are not kept.
            history: History::Memory,
            overflow_tool_result_chars: 10_000,
            overflow_user_chars: 10_000,
            overflow_max_turns: 5,
        })],
    }
}

/// The summary prompt of the `openhands` preset: the instructions of OpenHands'
/// `summarizing_system.j2` (openhands-sdk 1.58.2, MIT), shortened to their tracked sections.
pub const OPENHANDS_SUMMARY_PROMPT: &str = "You are maintaining a context-aware state summary \
for an interactive agent. You will be given a list of events corresponding to actions taken \
by the agent, which will include previous summaries. Track:\n\n\
USER_CONTEXT: (Preserve essential user requirements, goals, and clarifications in concise form)\n\
TASK_TRACKING: {Active tasks, their IDs and statuses - PRESERVE TASK IDs}\n\
COMPLETED: (Tasks completed so far, with brief results)\n\
PENDING: (Tasks that still need to be done)\n\
CURRENT_STATE: (Current variables, data structures, or relevant state)\n\n\
For code-specific tasks, also include:\n\
CODE_STATE: {File paths, function signatures, data structures}\n\
TESTS: {Failing cases, error messages, outputs}\n\
CHANGES: {Code edits, variable updates}\n\
DEPS: {Dependencies, imports, external calls}\n\
VERSION_CONTROL_STATUS: {Repository state, current branch, PR status, commit history}";

/// OpenHands' `LLMSummarizingCondenser` (openhands-sdk 1.58.2, MIT,
/// `openhands/sdk/context/condenser/llm_summarizing_condenser.py`) at its class defaults:
/// `max_size = 240` events, `keep_first = 2`, `minimum_progress = 0.1`, no `max_tokens`; a
/// request over the window is a condensation request (half the view, else a hard context
/// reset). The SDK's `default_condenser()` for its default agent uses `max_size = 80`,
/// `keep_first = 4` (`--set condense.max_size=80 --set condense.keep_first=4`). Checked
/// against the real SDK by `testdata/openhands-golden/`.
pub fn openhands() -> Preset {
    Preset {
        name: "openhands",
        default_window: 200_000,
        counter: "approx",
        layers: vec![LayerConfig::Condense(Condense {
            max_size: 240,
            max_tokens: None,
            keep_first: 2,
            minimum_progress: 0.1,
            on_context_overflow: true,
            prompt: TextSource::Text(OPENHANDS_SUMMARY_PROMPT.into()),
            summary_max_tokens: 2048,
        })],
    }
}

/// Codex CLI's compaction prompt (`codex-rs/core/templates/compact/prompt.md`, Apache-2.0).
pub const CODEX_COMPACT_PROMPT: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION. \
Create a handoff summary for another LLM that will resume the task.\n\n\
Include:\n\
- Goal / user objective\n\
- Current progress and key decisions made\n\
- Important context, constraints, or user preferences\n\
- What remains to be done (clear next steps)\n\
- Any critical data, examples, or references needed to continue\n\n\
Be concise, structured, and focused on helping the next LLM seamlessly continue the work.\n";

/// Codex CLI's `SUMMARY_PREFIX` (`codex-rs/core/templates/compact/summary_prefix.md`).
pub const CODEX_SUMMARY_PREFIX: &str = "Another language model started to solve this problem \
and produced a summary of its thinking process. You also have access to the state of the tools \
that were used by that language model. Use this to build on the work that has already been \
done and avoid duplicating work. Here is the summary produced by the other language model, \
use the information in this summary to  assist with your own analysis:";

/// Codex CLI auto-compaction (`codex-rs/core/src/compact.rs`): at the auto-compact token
/// limit (90% of the context window, the default of the OpenAI model families; set
/// `compact.trigger.tokens` to a `model_auto_compact_token_limit`) the whole history is
/// summarized with [`CODEX_COMPACT_PROMPT`] and rebuilt as initial context + the most recent
/// user messages within 20,000 tokens + [`CODEX_SUMMARY_PREFIX`] and the summary.
pub fn codex() -> Preset {
    Preset {
        name: "codex",
        default_window: 272_000,
        counter: "approx",
        layers: vec![LayerConfig::Compact(Compact {
            trigger: Trigger::Fraction(0.9),
            prompt: TextSource::Text(CODEX_COMPACT_PROMPT.into()),
            summary_prefix: CODEX_SUMMARY_PREFIX.into(),
            keep_user_tokens: 20_000,
            keep_initial_context: true,
            summary_max_tokens: 4096,
        })],
    }
}

/// The sections Claude Code's compact summaries hold (read off the summary message following
/// the `compact_boundary` of `shared/datasets/claude-code-interactive`).
pub const CLAUDE_CODE_COMPACT_PROMPT: &str = "Your task is to create a detailed summary of the \
conversation so far, paying close attention to the user's explicit requests and your previous \
actions. Start with an Analysis of the conversation in chronological order, then a Summary with \
these sections:\n\n\
1. Primary Request and Intent\n\
2. Key Technical Concepts\n\
3. Files and Code Sections\n\
4. Errors and fixes\n\
5. Problem Solving\n\
6. All user messages\n\
7. Pending Tasks\n\
8. Current Work\n\
9. Optional Next Step";

/// The text Claude Code puts before the summary in the message that starts the compacted
/// context (verbatim from the recorded session).
pub const CLAUDE_CODE_SUMMARY_PREFIX: &str = "This session is being continued from a previous \
conversation that ran out of context. The conversation is summarized below:";

/// Claude Code's auto-compact (closed source): at the threshold the whole conversation is
/// replaced by one user message, [`CLAUDE_CODE_SUMMARY_PREFIX`] and a nine-section summary.
/// The threshold, 0.779 of the window, is calibrated on the recorded session: its last call
/// before the `compact_boundary` sent 155,741 tokens without compacting and the boundary
/// fired at `preTokens` 155,979 of a 200,000 window, so the threshold lies in
/// (155,741, 155,979]; docs/engine.md has the calibration.
pub fn claude_code() -> Preset {
    Preset {
        name: "claude-code",
        default_window: 200_000,
        counter: "approx-anthropic",
        layers: vec![LayerConfig::Compact(Compact {
            trigger: Trigger::Fraction(0.779),
            prompt: TextSource::Text(CLAUDE_CODE_COMPACT_PROMPT.into()),
            summary_prefix: CLAUDE_CODE_SUMMARY_PREFIX.into(),
            keep_user_tokens: 0,
            keep_initial_context: false,
            summary_max_tokens: 8192,
        })],
    }
}

/// Anthropic Messages API context editing, `clear_tool_uses_20250919` at its documented
/// defaults: when the input exceeds 100,000 tokens, every tool result but the 3 most recent is
/// replaced by a placeholder in the request (the server edits the prompt; the client's history
/// is untouched: a per-request view); `clear_at_least` is a minimum (the edit is skipped when
/// it would free less), `exclude_tools` and `clear_tool_inputs` as documented.
/// `clear_thinking_20251015` has nothing to clear here: ctxbench's views never carry the
/// recorded reasoning (see docs/engine.md).
pub fn anthropic_context_editing() -> Preset {
    Preset {
        name: "anthropic-context-editing",
        default_window: 200_000,
        counter: "approx-anthropic",
        layers: vec![LayerConfig::ClearToolResults(ClearToolResults {
            trigger: Trigger::Tokens(100_000),
            keep: 3,
            excluded_tools: Vec::new(),
            placeholder: "[cleared]".into(),
            clear_tool_inputs: false,
            clear_at_least: 0,
            clear_at_least_is_minimum: true,
            offload: false,
            path_prefix: "/cleared_tool_results".into(),
        })],
    }
}
