//! Layer `truncate` (digitorn's `truncate` strategy, no LLM): when the request reaches the
//! trigger, everything before a safe split that keeps the most recent `keep` is dropped and one
//! reminder message (the goal and the recent activity) takes its place. Nothing is offloaded:
//! this is the no-offload baseline the needle eval compares against.
//!
//! [`truncate_view`] is shared with the `emergency` layer.

use super::summarize::{message_cutoff, token_cutoff};
use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::cooldown::Cooldown;
use crate::engine::event::EventDetail;
use crate::engine::layer::{CallCtx, Layer, MessageCtx};
use crate::engine::layer_config::{Keep, Trigger};
use crate::engine::view::{Item, Source};
use crate::engine::EngineError;
use crate::trace::{Message, Role};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::sync::Arc;

/// digitorn `truncate` strategy: at the trigger, drop everything before a safe split that
/// keeps the most recent `keep`, and inject one reminder message (goal + recent activity).
/// No LLM, and nothing is offloaded: the no-offload baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Truncate {
    pub trigger: Trigger,
    pub keep: Keep,
    /// Inject the reminder (digitorn `_build_context_reminder`).
    pub reminder: bool,
    /// Tool calls listed under "recent activity" in the reminder.
    pub recent_activity: usize,
    /// Cap on the reminder's goal text, in characters.
    pub goal_max_chars: usize,
    /// Seconds after a compaction during which no other runs (digitorn's hook `cooldown`,
    /// 30 s), measured on the trace's message timestamps; off when the trace has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_secs: Option<f64>,
}

impl LayerSpec for Truncate {
    const NAME: &'static str = "truncate";

    fn validate(&self) -> Result<(), ConfigError> {
        if self.keep == Keep::Messages(0) {
            return Err(err("truncate.keep", "must keep at least one message"));
        }
        if self
            .cooldown_secs
            .is_some_and(|c| !(c.is_finite() && c > 0.0))
        {
            return Err(err(
                "truncate.cooldown_secs",
                "must be a number of seconds > 0",
            ));
        }
        Ok(())
    }

    fn compaction_trigger(&mut self) -> Option<&mut Trigger> {
        Some(&mut self.trigger)
    }

    fn build(&self, ctx: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        Ok(Box::new(TruncateLayer::new(
            self.clone(),
            ctx.meta.goal.clone(),
        )))
    }
}

/// `kind` of the injected reminder message (so a later truncation drops it, not keeps it).
pub const REMINDER_KIND: &str = "context_reminder";

/// The user's goal as the reminder states it: the trace's recorded goal, else the first real
/// user message seen.
#[derive(Clone, Debug, Default)]
pub struct GoalTracker {
    goal: Option<String>,
}

impl GoalTracker {
    pub fn new(recorded: Option<String>) -> Self {
        GoalTracker {
            goal: recorded.filter(|g| !g.trim().is_empty()),
        }
    }

    /// Watch a message entering the state.
    pub fn observe(&mut self, m: &Message) {
        if self.goal.is_none() && super::is_user_turn(m) && !m.content.trim().is_empty() {
            self.goal = Some(m.content.clone());
        }
    }

    pub fn goal(&self) -> Option<&str> {
        self.goal.as_deref()
    }
}

/// What to inject in place of the dropped messages.
#[derive(Clone, Copy, Debug)]
pub struct ReminderSpec<'a> {
    pub goal: Option<&'a str>,
    pub recent_activity: usize,
    pub goal_max_chars: usize,
}

/// The result of one truncation.
#[derive(Clone, Debug, PartialEq)]
pub struct Dropped {
    /// First state (trace) index still shown.
    pub state_cutoff: usize,
    /// Raw trace messages that left the request.
    pub dropped: usize,
    /// Messages after the head (reminder, preserved system messages).
    pub kept: usize,
    pub reminder: String,
}

fn clip_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((b, _)) => format!("{}…", &s[..b]),
        None => s.to_string(),
    }
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    clip_chars(flat.trim(), max)
}

/// digitorn `_build_context_reminder`: the goal and the recent activity of the dropped slice.
pub fn build_reminder(spec: &ReminderSpec<'_>, dropped: &[Arc<Message>]) -> String {
    let mut out = format!(
        "[Context reminder] {} earlier messages were dropped to keep this conversation within \
the context window. They were not summarized or saved anywhere.\n",
        dropped.len()
    );
    if let Some(goal) = spec.goal {
        let _ = writeln!(
            out,
            "\nGoal: {}",
            clip_chars(goal.trim(), spec.goal_max_chars)
        );
    }
    let calls: Vec<String> = dropped
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| format!("{}({})", c.name, one_line(&c.arguments.to_string(), 120)))
        .collect();
    if spec.recent_activity > 0 && !calls.is_empty() {
        out.push_str("\nRecent activity before the cut:\n");
        let from = calls.len().saturating_sub(spec.recent_activity);
        for c in &calls[from..] {
            let _ = writeln!(out, "- {c}");
        }
    }
    if let Some(last) = dropped
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && !m.content.trim().is_empty())
    {
        let _ = writeln!(
            out,
            "\nLast assistant message before the cut: {}",
            one_line(&last.content, 300)
        );
    }
    out
}

/// Drop everything before a safe split keeping the most recent `keep` of the request, make the
/// result the persistent base, and inject the reminder (when `reminder` is given). System
/// messages of the dropped slice (the agent's own prompt) stay, at the front; earlier
/// reminders and summaries go. `None` when no trace message would leave.
pub fn truncate_view(
    ctx: &mut CallCtx<'_>,
    keep: Keep,
    reminder: Option<ReminderSpec<'_>>,
) -> Option<Dropped> {
    let window = ctx.env.window;
    let entries = ctx.view.entries(ctx.state);
    let cutoff = match keep {
        Keep::Messages(n) => message_cutoff(&entries, n),
        k => token_cutoff(&entries, k.tokens(window).unwrap_or(0)),
    };
    let first_state = match entries.get(cutoff).map(|e| e.source) {
        Some(Source::State(i)) => i,
        Some(Source::Head(_)) => ctx.view.start,
        None => ctx.view.end,
    };
    if cutoff == 0 || first_state <= ctx.view.start {
        return None;
    }
    let mut dropped: Vec<Arc<Message>> = Vec::new();
    let mut preserved: Vec<Item> = Vec::new();
    for e in &entries[..cutoff] {
        let m = &e.item.msg;
        if m.role == Role::System && !e.item.is_summary && m.kind.as_deref() != Some(REMINDER_KIND)
        {
            if !preserved.iter().any(|p| p.msg.content == m.content) {
                preserved.push(e.item.clone());
            }
        } else if matches!(e.source, Source::State(_)) {
            dropped.push(m.clone());
        }
    }
    drop(entries);
    let text = reminder
        .map(|spec| build_reminder(&spec, &dropped))
        .unwrap_or_default();
    ctx.view.cut_before(ctx.state, cutoff);
    let kept = ctx.view.len();
    ctx.view.head = preserved;
    if reminder.is_some() {
        let mut m = Message::system(text.clone());
        m.kind = Some(REMINDER_KIND.into());
        ctx.view.head.push(Item::new(m, ctx.env.counter));
    }
    ctx.base.head = ctx.view.head.clone();
    ctx.base.start = first_state;
    ctx.base.generation += 1;
    ctx.view.head_generation = ctx.base.generation;
    Some(Dropped {
        state_cutoff: first_state,
        dropped: dropped.len(),
        kept,
        reminder: text,
    })
}

pub struct TruncateLayer {
    cfg: Truncate,
    goal: GoalTracker,
    cooldown: Cooldown,
}

impl TruncateLayer {
    pub fn new(cfg: Truncate, recorded_goal: Option<String>) -> Self {
        TruncateLayer {
            cfg,
            goal: GoalTracker::new(recorded_goal),
            cooldown: Cooldown::default(),
        }
    }
}

impl Layer for TruncateLayer {
    fn name(&self) -> &'static str {
        "truncate"
    }

    fn on_message(&mut self, ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        let m = &ctx.state.get(ctx.index).msg;
        self.goal.observe(m);
        self.cooldown.saw(m.timestamp.as_deref());
        Ok(())
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let before = ctx.request_tokens();
        if before < self.cfg.trigger.tokens(ctx.env.window)
            || self
                .cooldown
                .hold(self.cfg.cooldown_secs, ctx, "truncate", before)
        {
            return Ok(());
        }
        let spec = self.cfg.reminder.then(|| ReminderSpec {
            goal: self.goal.goal(),
            recent_activity: self.cfg.recent_activity,
            goal_max_chars: self.cfg.goal_max_chars,
        });
        let Some(d) = truncate_view(ctx, self.cfg.keep, spec) else {
            return Ok(());
        };
        let after = ctx.request_tokens();
        let detail = EventDetail::Truncated {
            state_cutoff: d.state_cutoff,
            dropped: d.dropped,
            kept: d.kept,
            reminder: d.reminder,
        };
        let ev = ctx.emit(self.name(), detail);
        ev.tokens_before = Some(before);
        ev.tokens_after = Some(after);
        self.cooldown.compacted();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ToolCall;
    use serde_json::json;

    #[test]
    fn reminder_names_goal_recent_calls_and_last_note() {
        let call = |n: usize| ToolCall {
            id: format!("c{n}"),
            name: "bash".into(),
            arguments: json!({"command": format!("ls dir{n}")}),
        };
        let dropped: Vec<Arc<Message>> = vec![
            Arc::new(Message::user("Fix the flaky test")),
            Arc::new(Message::assistant(
                "Looking around.",
                vec![call(1), call(2)],
            )),
            Arc::new(Message::tool("c1", "bash", "a")),
            Arc::new(Message::tool("c2", "bash", "b")),
            Arc::new(Message::assistant("Now the parser.", vec![call(3)])),
            Arc::new(Message::tool("c3", "bash", "c")),
        ];
        let spec = ReminderSpec {
            goal: Some("Fix the flaky test in tests/test_io.py"),
            recent_activity: 2,
            goal_max_chars: 12,
        };
        let r = build_reminder(&spec, &dropped);
        assert!(
            r.starts_with("[Context reminder] 6 earlier messages"),
            "{r}"
        );
        assert!(r.contains("Goal: Fix the flak…\n"), "{r}");
        assert!(!r.contains("dir1"), "only the last 2 calls: {r}");
        assert!(r.contains("- bash({\"command\":\"ls dir2\"})\n- bash({\"command\":\"ls dir3\"})"));
        assert!(r.contains("Last assistant message before the cut: Now the parser."));
    }

    #[test]
    fn goal_is_the_recorded_goal_else_first_real_user_message() {
        let mut g = GoalTracker::new(None);
        let mut meta = Message::user("<hook output>");
        meta.kind = Some("meta".into());
        g.observe(&meta);
        g.observe(&Message::system("sys"));
        g.observe(&Message::user("do X"));
        g.observe(&Message::user("do Y"));
        assert_eq!(g.goal(), Some("do X"));
        let g = GoalTracker::new(Some("recorded".into()));
        assert_eq!(g.goal(), Some("recorded"));
    }
}
