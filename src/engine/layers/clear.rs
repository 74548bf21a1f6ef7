//! Layer `clear_tool_results` (LangChain `ContextEditingMiddleware` + `ClearToolUsesEdit`, the
//! layer seed 000 puts at 60% of the window): when the request is over the trigger, every tool
//! result but the last `keep` is shown as a placeholder (`[cleared]`), excluded tools never. It
//! edits a copy of the request, so it is a per-request view: the state keeps every original and
//! each call decides again. With `offload` on, a cleared result is first written to
//! `<path_prefix>/<id>` and the placeholder may name that path (`{path}`); the `cleared` event
//! that clears a result for the first time names the file in its `writes` (`wrote …`).

use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::event::{EventDetail, StoreWrite};
use crate::engine::layer::{CallCtx, Layer, MessageCtx};
use crate::engine::layer_config::Trigger;
use crate::engine::view::{Item, Override};
use crate::engine::EngineError;
use crate::trace::{Message, Role};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// LangChain `ClearToolUsesEdit` (ContextEditingMiddleware): when the request is over the
/// trigger, every tool result but the last `keep` shows `placeholder` in that request (the
/// state keeps the original: a per-request view, recomputed on every call).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClearToolResults {
    /// Clear when the request is strictly over this.
    pub trigger: Trigger,
    /// Most recent tool results kept verbatim (excluded tools count among them).
    pub keep: usize,
    pub excluded_tools: Vec<String>,
    /// Shown instead of the result; `{path}` is replaced by the offload path when `offload`.
    pub placeholder: String,
    /// Also empty the arguments of the cleared calls (LangChain `clear_tool_inputs`).
    pub clear_tool_inputs: bool,
    /// Stop clearing once this many tokens were freed (0 = clear all candidates).
    pub clear_at_least: u64,
    /// Anthropic's reading of `clear_at_least`: clear every candidate, but only when that
    /// frees at least `clear_at_least` tokens (otherwise the request is left as it is).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clear_at_least_is_minimum: bool,
    /// Write each cleared result to `<path_prefix>/<id>` first and point at it. Off in the
    /// LangChain semantics: the placeholder names no file and nothing is recoverable.
    pub offload: bool,
    pub path_prefix: String,
}

impl LayerSpec for ClearToolResults {
    const NAME: &'static str = "clear_tool_results";

    fn build(&self, _: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        Ok(Box::new(ClearToolResultsLayer::new(self.clone())))
    }
}

/// One tool result seen by the layer.
struct ToolEntry {
    index: usize,
    /// Assistant message that issued the call (for `clear_tool_inputs`), if found.
    caller: Option<usize>,
    /// Tool name (the result's `name`, else the call's).
    tool: String,
    /// The message as it entered the state when it was the unmodified trace message.
    original: Option<Arc<Message>>,
    /// Placeholder item, built (and offloaded) the first time the result is cleared.
    cleared: Option<Item>,
    /// The file written when the placeholder was built (`offload`), until an event names it.
    written: Option<StoreWrite>,
    /// An emitted `cleared` event has cleared this result (a request whose clearing was
    /// undone, `clear_at_least_is_minimum`, built the placeholder but cleared nothing).
    announced: bool,
}

pub struct ClearToolResultsLayer {
    cfg: ClearToolResults,
    tools: Vec<ToolEntry>,
    /// Open tool call id → (assistant index, tool name).
    open_calls: HashMap<String, (usize, String)>,
    /// Assistant index → (number of cleared calls, item with those inputs emptied).
    cleared_inputs: HashMap<usize, (usize, Item)>,
}

impl ClearToolResultsLayer {
    pub fn new(cfg: ClearToolResults) -> Self {
        ClearToolResultsLayer {
            cfg,
            tools: Vec::new(),
            open_calls: HashMap::new(),
            cleared_inputs: HashMap::new(),
        }
    }

    /// The placeholder item of tool entry `k` (built once; the original is offloaded first when
    /// `offload` is on).
    fn placeholder(&mut self, k: usize, ctx: &mut CallCtx<'_>) -> Result<Item, EngineError> {
        if let Some(item) = &self.tools[k].cleared {
            return Ok(item.clone());
        }
        let idx = self.tools[k].index;
        let current = ctx.state.get(idx).clone();
        let mut msg = (*current.msg).clone();
        let item = if self.cfg.offload {
            match &current.pointer {
                // Already offloaded (an eviction stub): the full original is at that path.
                Some(p) => {
                    msg.content = self.cfg.placeholder.replace("{path}", p);
                    Item::new(msg, ctx.env.counter).with_pointer(p.clone(), current.origin)
                }
                None => {
                    let id = current.msg.tool_call_id.clone().unwrap_or_default();
                    let id = if id.is_empty() {
                        format!("result-{idx}")
                    } else {
                        id
                    };
                    // A path no other file has (`OffloadStore::tool_result_path`).
                    let path = ctx.env.store.tool_result_path(&self.cfg.path_prefix, &id);
                    let write = ctx.env.store.write(&path, current.msg.content.as_bytes())?;
                    self.tools[k].written = Some(write);
                    let unmodified = self.tools[k]
                        .original
                        .as_ref()
                        .is_some_and(|o| Arc::ptr_eq(o, &current.msg));
                    msg.content = self.cfg.placeholder.replace("{path}", &path);
                    Item::new(msg, ctx.env.counter).with_pointer(&path, unmodified.then_some(idx))
                }
            }
        } else {
            msg.content = self.cfg.placeholder.clone();
            Item::new(msg, ctx.env.counter)
        };
        self.tools[k].original = None;
        self.tools[k].cleared = Some(item.clone());
        Ok(item)
    }

    /// The caller's message with the arguments of its cleared calls emptied (cached per number
    /// of cleared calls, so each version is counted once).
    fn cleared_input_item(&mut self, caller: usize, ids: &[&str], ctx: &CallCtx<'_>) -> Item {
        if let Some((n, item)) = self.cleared_inputs.get(&caller) {
            if *n == ids.len() {
                return item.clone();
            }
        }
        let current = ctx.state.get(caller);
        let mut msg = (*current.msg).clone();
        for c in &mut msg.tool_calls {
            if ids.contains(&c.id.as_str()) {
                c.arguments = serde_json::Value::Object(Default::default());
            }
        }
        let mut item = Item::new(msg, ctx.env.counter);
        item.pointer = current.pointer.clone();
        item.origin = current.origin;
        self.cleared_inputs
            .insert(caller, (ids.len(), item.clone()));
        item
    }
}

impl Layer for ClearToolResultsLayer {
    fn name(&self) -> &'static str {
        "clear_tool_results"
    }

    fn on_message(&mut self, ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        let item = ctx.state.get(ctx.index);
        let m = &item.msg;
        match m.role {
            Role::Assistant => {
                for c in &m.tool_calls {
                    self.open_calls
                        .insert(c.id.clone(), (ctx.index, c.name.clone()));
                }
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or("");
                let call = self.open_calls.remove(id);
                let tool = m
                    .name
                    .clone()
                    .filter(|n| !n.is_empty())
                    .or_else(|| call.as_ref().map(|c| c.1.clone()))
                    .unwrap_or_default();
                self.tools.push(ToolEntry {
                    index: ctx.index,
                    caller: call.map(|c| c.0),
                    tool,
                    original: item.pointer.is_none().then(|| m.clone()),
                    cleared: None,
                    written: None,
                    announced: false,
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let before = ctx.request_tokens();
        if before <= self.cfg.trigger.tokens(ctx.env.window) {
            return Ok(());
        }
        let (start, end) = (ctx.view.start, ctx.view.end);
        let lo = self.tools.partition_point(|t| t.index < start);
        let hi = self.tools.partition_point(|t| t.index < end);
        // Tool results actually in this request, oldest first.
        let present: Vec<usize> = (lo..hi)
            .filter(|&k| {
                !matches!(
                    ctx.view.overrides.get(&self.tools[k].index),
                    Some(Override::Drop)
                )
            })
            .collect();
        if present.len() <= self.cfg.keep {
            return Ok(());
        }
        let candidates = &present[..present.len() - self.cfg.keep];
        let mut cleared = 0usize;
        let mut excluded = 0usize;
        let mut newly = Vec::new();
        let mut freed = 0u64;
        let mut inputs: HashMap<usize, Vec<String>> = HashMap::new();
        let minimum = self.cfg.clear_at_least_is_minimum;
        let saved = minimum.then(|| ctx.view.overrides.clone());
        for &k in candidates {
            if self.cfg.excluded_tools.contains(&self.tools[k].tool) {
                excluded += 1;
                continue;
            }
            let idx = self.tools[k].index;
            let Some(shown_tokens) = ctx.view.state_item(ctx.state, idx).map(|(i, _)| i.tokens)
            else {
                continue;
            };
            let item = self.placeholder(k, ctx)?;
            freed += shown_tokens.saturating_sub(item.tokens);
            ctx.view.overrides.insert(idx, Override::Replace(item));
            if !self.tools[k].announced {
                newly.push(k);
            }
            cleared += 1;
            if self.cfg.clear_tool_inputs {
                if let (Some(caller), Some(id)) = (
                    self.tools[k].caller,
                    ctx.state.get(idx).msg.tool_call_id.clone(),
                ) {
                    inputs.entry(caller).or_default().push(id);
                }
            }
            if !minimum && self.cfg.clear_at_least > 0 && freed >= self.cfg.clear_at_least {
                break;
            }
        }
        if let Some(saved) = saved {
            if freed < self.cfg.clear_at_least {
                ctx.view.overrides = saved;
                return Ok(());
            }
        }
        for (caller, ids) in inputs {
            if caller < start {
                continue;
            }
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let item = self.cleared_input_item(caller, &ids, ctx);
            ctx.view.overrides.insert(caller, Override::Replace(item));
        }
        if cleared == 0 {
            return Ok(());
        }
        let after = ctx.request_tokens();
        // The files written for the results cleared for the first time, named by this event
        // as evict and summarize name theirs (`wrote …` in the timeline, `→ …` in replay).
        let mut writes = Vec::new();
        for &k in &newly {
            self.tools[k].announced = true;
            writes.extend(self.tools[k].written.take());
        }
        let newly = newly.iter().map(|&k| self.tools[k].index).collect();
        let detail = EventDetail::Cleared {
            cleared,
            newly_cleared: newly,
            kept: self.cfg.keep.min(present.len()),
            excluded,
            placeholder: self.cfg.placeholder.clone(),
        };
        let ev = ctx.emit(self.name(), detail);
        ev.tokens_before = Some(before);
        ev.tokens_after = Some(after);
        ev.writes = writes;
        Ok(())
    }
}
