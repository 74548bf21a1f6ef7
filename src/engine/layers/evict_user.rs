//! Layer `evict_user_messages` (deepagents FilesystemMiddleware `wrap_model_call`): a user
//! message over the threshold is written to `<prefix>/<uuid4>.md` once; from then on every
//! request shows a preview in its place (a per-request view: the state keeps the original).

use super::preview::{human_preview, PreviewShape};
use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::event::EventDetail;
use crate::engine::layer::{CallCtx, Layer};
use crate::engine::layer_config::Size;
use crate::engine::view::{with_content, Item, Override};
use crate::engine::EngineError;
use crate::tokens::approx::code_points;
use crate::trace::Role;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Offload a large user message; requests show a preview instead (per-request view).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvictUserMessages {
    pub threshold: Size,
    /// deepagents only looks at the last state message when a call is made.
    pub only_last_message: bool,
    pub head_lines: usize,
    pub tail_lines: usize,
    pub line_chars: usize,
    pub path_prefix: String,
}

impl LayerSpec for EvictUserMessages {
    const NAME: &'static str = "evict_user_messages";

    fn build(&self, _: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        Ok(Box::new(EvictUserMessagesLayer::new(self.clone())))
    }
}

pub struct EvictUserMessagesLayer {
    cfg: EvictUserMessages,
    /// Tagged state index → the preview shown instead.
    tagged: BTreeMap<usize, Item>,
}

impl EvictUserMessagesLayer {
    pub fn new(cfg: EvictUserMessages) -> Self {
        EvictUserMessagesLayer {
            cfg,
            tagged: BTreeMap::new(),
        }
    }

    fn over(&self, ctx: &CallCtx<'_>, idx: usize) -> bool {
        let m = &ctx.state.get(idx).msg;
        if m.role != Role::User || self.tagged.contains_key(&idx) {
            return false;
        }
        match self.cfg.threshold {
            Size::Chars(n) => m.content.len() as u64 > n && code_points(&m.content) as u64 > n,
            Size::Tokens(n) => ctx.env.counter.count_shared_content(m) > n,
        }
    }
}

impl Layer for EvictUserMessagesLayer {
    fn name(&self) -> &'static str {
        "evict_user_messages"
    }

    fn fork(&self, rename: &crate::engine::store::Rename) -> Option<Box<dyn Layer>> {
        let tagged = self
            .tagged
            .iter()
            .map(|(&k, item)| (k, rename.item(item)))
            .collect();
        Some(Box::new(EvictUserMessagesLayer {
            cfg: self.cfg.clone(),
            tagged,
        }))
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let end = ctx.view.end;
        let candidates: Vec<usize> = if self.cfg.only_last_message {
            end.checked_sub(1).into_iter().collect()
        } else {
            (ctx.view.start..end).collect()
        };
        for idx in candidates {
            if !self.over(ctx, idx) {
                continue;
            }
            let original = ctx.state.get(idx).clone();
            let path = format!(
                "{}/{}.md",
                self.cfg.path_prefix.trim_end_matches('/'),
                ctx.env.store.uuid4()
            );
            let write = ctx.env.store.write_content(&path, &original.msg)?;
            let shape = PreviewShape {
                head: self.cfg.head_lines,
                tail: self.cfg.tail_lines,
                line_chars: self.cfg.line_chars,
            };
            let preview = human_preview(&path, &original.msg.content, shape);
            let m = with_content(&original.msg, preview.clone());
            let item = Item::new(m, ctx.env.counter).with_pointer(&path, Some(idx));
            let (tokens_before, tokens_after) = (original.tokens, item.tokens);
            let detail = EventDetail::UserMessageEvicted {
                evicted_index: idx,
                path,
                chars_before: code_points(&original.msg.content) as u64,
                chars_after: code_points(&preview) as u64,
                preview,
            };
            let ev = ctx.emit(self.name(), detail);
            ev.tokens_before = Some(tokens_before);
            ev.tokens_after = Some(tokens_after);
            ev.writes.push(write);
            self.tagged.insert(idx, item);
        }
        for (&idx, item) in self.tagged.range(ctx.view.start..end) {
            ctx.view
                .overrides
                .entry(idx)
                .or_insert_with(|| Override::Replace(item.clone()));
        }
        Ok(())
    }
}
