//! Layer `truncate_args` (deepagents SummarizationMiddleware, before summarizing): when the
//! request reaches the trigger, long string arguments of write/edit tool calls in messages
//! outside the keep window become their first characters + a marker. A per-request view,
//! recomputed on every call; it can postpone summarization.

use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::event::{EventDetail, TruncatedCall};
use crate::engine::layer::{CallCtx, Layer};
use crate::engine::layer_config::{Keep, Trigger};
use crate::engine::view::{Item, Override, Source};
use crate::engine::EngineError;
use crate::tokens::approx::code_points;
use crate::trace::{Message, Role};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Truncate long write/edit string arguments outside the keep window (per-request view).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TruncateArgs {
    pub trigger: Trigger,
    pub keep: Keep,
    pub tools: Vec<String>,
    pub max_arg_chars: usize,
    pub keep_prefix_chars: usize,
    pub suffix: String,
}

impl LayerSpec for TruncateArgs {
    const NAME: &'static str = "truncate_args";

    fn compaction_trigger(&mut self) -> Option<&mut Trigger> {
        Some(&mut self.trigger)
    }

    fn build(&self, _: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        Ok(Box::new(TruncateArgsLayer::new(self.clone())))
    }
}

pub struct TruncateArgsLayer {
    cfg: TruncateArgs,
    /// State index → (message it was computed from, truncated item and calls, if any).
    cache: HashMap<usize, Cached>,
    /// View start when the cache was last pruned.
    pruned_at: usize,
}

#[derive(Clone)]
struct Cached {
    source: Arc<Message>,
    result: Option<(Item, Vec<TruncatedCall>)>,
}

impl TruncateArgsLayer {
    pub fn new(cfg: TruncateArgs) -> Self {
        TruncateArgsLayer {
            cfg,
            cache: HashMap::new(),
            pruned_at: 0,
        }
    }

    /// The message with long write/edit string arguments cut, and what was cut.
    fn truncate(&self, idx: usize, m: &Message) -> Option<(Message, Vec<TruncatedCall>)> {
        let mut new_msg: Option<Message> = None;
        let mut calls = Vec::new();
        for (k, call) in m.tool_calls.iter().enumerate() {
            if !self.cfg.tools.contains(&call.name) {
                continue;
            }
            let Value::Object(args) = &call.arguments else {
                continue;
            };
            let mut names = Vec::new();
            let mut new_args = args.clone();
            for (name, v) in args {
                if let Value::String(s) = v {
                    if s.len() > self.cfg.max_arg_chars && code_points(s) > self.cfg.max_arg_chars {
                        let mut t: String = s.chars().take(self.cfg.keep_prefix_chars).collect();
                        t.push_str(&self.cfg.suffix);
                        new_args.insert(name.clone(), Value::String(t));
                        names.push(name.clone());
                    }
                }
            }
            if names.is_empty() {
                continue;
            }
            let nm = new_msg.get_or_insert_with(|| m.clone());
            nm.tool_calls[k].arguments = Value::Object(new_args);
            calls.push(TruncatedCall {
                trace_index: idx,
                tool_call_id: call.id.clone(),
                tool: call.name.clone(),
                args: names,
            });
        }
        new_msg.map(|nm| (nm, calls))
    }
}

/// Keep-window cutoff: walking back from the end, the first message whose addition would make
/// the kept sum exceed `keep` sits at `j`; the cutoff is `j + 1` (0 when everything fits).
pub fn keep_window_cutoff(tokens: &[u64], keep: Keep, window: u64) -> usize {
    match keep.tokens(window) {
        None => {
            let Keep::Messages(n) = keep else { return 0 };
            tokens.len().saturating_sub(n)
        }
        Some(limit) => {
            let mut sum = 0u64;
            for j in (0..tokens.len()).rev() {
                if sum + tokens[j] > limit {
                    return j + 1;
                }
                sum += tokens[j];
            }
            0
        }
    }
}

impl Layer for TruncateArgsLayer {
    fn name(&self) -> &'static str {
        "truncate_args"
    }

    fn fork(&self, rename: &crate::engine::store::Rename) -> Option<Box<dyn Layer>> {
        let cache = self
            .cache
            .iter()
            .map(|(&k, c)| {
                let result = c
                    .result
                    .as_ref()
                    .map(|(item, calls)| (rename.item(item), calls.clone()));
                (
                    k,
                    Cached {
                        source: c.source.clone(),
                        result,
                    },
                )
            })
            .collect();
        Some(Box::new(TruncateArgsLayer {
            cfg: self.cfg.clone(),
            cache,
            pruned_at: self.pruned_at,
        }))
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let effective = ctx.effective_tokens();
        if effective < self.cfg.trigger.tokens(ctx.env.window) {
            return Ok(());
        }
        if ctx.view.start > self.pruned_at {
            // Messages before the view start never come back: forget their truncations.
            let start = ctx.view.start;
            self.cache.retain(|&k, _| k >= start);
            self.pruned_at = start;
        }
        let entries = ctx.view.entries(ctx.state);
        let tokens: Vec<u64> = entries.iter().map(|e| e.item.tokens).collect();
        let cutoff = keep_window_cutoff(&tokens, self.cfg.keep, ctx.env.window);
        // deepagents: a cutoff at (or past) the end means nothing is truncated.
        if cutoff >= entries.len() {
            return Ok(());
        }
        let mut changes: Vec<(usize, Item)> = Vec::new();
        let mut truncated_calls: Vec<TruncatedCall> = Vec::new();
        for e in entries.iter().take(cutoff) {
            let Source::State(idx) = e.source else {
                continue;
            };
            let m = &e.item.msg;
            if m.role != Role::Assistant || m.tool_calls.is_empty() {
                continue;
            }
            // The same message truncates the same way on every call: reuse the result.
            let fresh = match self.cache.get(&idx) {
                Some(c) => !Arc::ptr_eq(&c.source, m),
                None => true,
            };
            if fresh {
                let result = self.truncate(idx, m).map(|(nm, calls)| {
                    let mut item = Item::new(nm, ctx.env.counter);
                    item.pointer = e.item.pointer.clone();
                    item.origin = e.item.origin;
                    (item, calls)
                });
                self.cache.insert(
                    idx,
                    Cached {
                        source: m.clone(),
                        result,
                    },
                );
            }
            if let Some((item, calls)) = self.cache.get(&idx).and_then(|c| c.result.as_ref()) {
                changes.push((idx, item.clone()));
                truncated_calls.extend(calls.iter().cloned());
            }
        }
        drop(entries);
        if changes.is_empty() {
            return Ok(());
        }
        for (idx, item) in changes {
            ctx.view.overrides.insert(idx, Override::Replace(item));
        }
        let after = ctx.request_tokens();
        let detail = EventDetail::ArgsTruncated {
            calls: truncated_calls,
            summarized_in_same_call: false,
        };
        ctx.notes.args_truncated_event = Some(ctx.env.events.len());
        let ev = ctx.emit(self.name(), detail);
        ev.tokens_before = Some(effective);
        ev.tokens_after = Some(after);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_window_cutoff_follows_deepagents_rule() {
        // From the end: 5 fits (5), 5 fits (10), 5 would make 15 > 12 → j = 1, cutoff 2.
        assert_eq!(keep_window_cutoff(&[5, 5, 5, 5], Keep::Tokens(12), 0), 2);
        assert_eq!(keep_window_cutoff(&[1, 1], Keep::Tokens(12), 0), 0);
        assert_eq!(keep_window_cutoff(&[1, 1, 1], Keep::Messages(1), 0), 2);
        assert_eq!(keep_window_cutoff(&[50], Keep::Tokens(12), 0), 1);
    }
}
