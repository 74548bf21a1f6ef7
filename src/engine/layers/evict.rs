//! Layer `evict_tool_results` (deepagents FilesystemMiddleware `wrap_tool_call`): a tool result
//! over the threshold is written to `<prefix>/<sanitized tool_call_id>` and permanently replaced
//! by a stub with a numbered head/tail preview. A name another result's file has is refused, as
//! deepagents' backends refuse the write, and the result stays (an `eviction_skipped` event); a
//! name that is no file name gets one made from it (`OffloadStore::deepagents_result_path`).
//! Excluded tools are left alone (and reported).

use super::preview::{tool_stub, PreviewShape};
use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::event::EventDetail;
use crate::engine::layer::{Layer, MessageCtx};
use crate::engine::layer_config::Size;
use crate::engine::view::{with_content, Item};
use crate::engine::EngineError;
use crate::tokens::approx::code_points;
use crate::trace::Role;
use serde::{Deserialize, Serialize};

/// Evict large tool results at tool time (persistent): full text to
/// `<path_prefix>/<sanitized tool_call_id>`, stub with a head/tail numbered preview.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvictToolResults {
    /// Evict when the result is longer than this.
    pub threshold: Size,
    /// Tools whose results are never evicted.
    pub excluded_tools: Vec<String>,
    pub head_lines: usize,
    pub tail_lines: usize,
    /// Each preview line is cut to this many characters.
    pub line_chars: usize,
    pub path_prefix: String,
}

impl LayerSpec for EvictToolResults {
    const NAME: &'static str = "evict_tool_results";

    fn validate(&self) -> Result<(), ConfigError> {
        if self.head_lines + self.tail_lines == 0 {
            return Err(err(
                "evict_tool_results",
                "head_lines + tail_lines must be > 0",
            ));
        }
        Ok(())
    }

    fn build(&self, _: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        Ok(Box::new(EvictToolResultsLayer::new(self.clone())))
    }
}

pub struct EvictToolResultsLayer {
    cfg: EvictToolResults,
}

impl EvictToolResultsLayer {
    pub fn new(cfg: EvictToolResults) -> Self {
        EvictToolResultsLayer { cfg }
    }
}

impl Layer for EvictToolResultsLayer {
    fn name(&self) -> &'static str {
        "evict_tool_results"
    }

    fn fork(&self, _: &crate::engine::store::Rename) -> Option<Box<dyn Layer>> {
        Some(Box::new(EvictToolResultsLayer::new(self.cfg.clone())))
    }

    fn on_message(&mut self, ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        let item = ctx.state.get(ctx.index);
        let msg = item.msg.clone();
        if msg.role != Role::Tool {
            return Ok(());
        }
        // Code points never exceed bytes: short texts are rejected without counting.
        let over = match self.cfg.threshold {
            Size::Chars(n) => msg.content.len() as u64 > n && code_points(&msg.content) as u64 > n,
            Size::Tokens(n) => ctx.env.counter.count_shared_content(&msg) > n,
        };
        if !over {
            return Ok(());
        }
        let chars = code_points(&msg.content) as u64;
        let tool = msg.name.clone().unwrap_or_default();
        if self.cfg.excluded_tools.contains(&tool) {
            let detail = EventDetail::EvictionSkipped {
                tool,
                chars,
                reason: crate::engine::event::EXCLUDED_TOOL.into(),
            };
            ctx.emit(self.name(), detail);
            return Ok(());
        }
        let id = msg.tool_call_id.clone().unwrap_or_default();
        // deepagents' name; one of its own when that is no file name
        // (`OffloadStore::deepagents_result_path`). A name another result's file has is
        // refused, as deepagents' backends refuse it: the result stays in the context.
        let path = if id.is_empty() {
            let name = format!("unknown-{}", ctx.env.store.short_hex());
            Ok(ctx.env.store.tool_result_path(&self.cfg.path_prefix, &name))
        } else {
            ctx.env
                .store
                .deepagents_result_path(&self.cfg.path_prefix, &id)
        };
        let path = match path {
            Ok(path) => path,
            Err(taken) => {
                let detail = EventDetail::EvictionSkipped {
                    tool,
                    chars,
                    reason: format!(
                        "{taken} exists (deepagents does not write over a file: the result \
                         stays in the context)"
                    ),
                };
                ctx.emit(self.name(), detail);
                return Ok(());
            }
        };
        // Written before it leaves the context.
        let write = ctx.env.store.write_content(&path, &msg)?;
        let shape = PreviewShape {
            head: self.cfg.head_lines,
            tail: self.cfg.tail_lines,
            line_chars: self.cfg.line_chars,
        };
        let stub = tool_stub(&id, &path, &msg.content, shape);
        let replaced = with_content(&msg, stub.clone());
        let tokens_before = item.tokens;
        let new_item = Item::new(replaced, ctx.env.counter).with_pointer(&path, Some(ctx.index));
        let tokens_after = new_item.tokens;
        ctx.state.replace(ctx.index, new_item);
        let detail = EventDetail::Evicted {
            tool,
            tool_call_id: id,
            chars_before: chars,
            chars_after: code_points(&stub) as u64,
            path,
            replacement: stub,
        };
        let ev = ctx.emit(self.name(), detail);
        ev.tokens_before = Some(tokens_before);
        ev.tokens_after = Some(tokens_after);
        ev.writes.push(write);
        Ok(())
    }
}
