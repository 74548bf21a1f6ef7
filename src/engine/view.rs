//! The replay state (trace messages so far, with persistent replacements and cached token
//! counts) and the per-call request view built over it.
//!
//! * [`State`] holds one entry per trace message already seen, **state index = trace index**.
//!   Each entry caches its token count; a persistent replacement (tool-time eviction, over-budget
//!   clipping) recounts only that entry. Prefix sums make any range count O(1).
//! * [`Base`] is the persistent compaction: synthetic messages placed first (a summary) and the
//!   first state index still shown. Every call's view starts from it.
//! * [`View`] is what one model call sends: `head` (synthetic messages) + state `start..end`,
//!   with per-request `overrides` (replace or drop one state entry for this request only).
//!   Building a view is O(1); layers materialize entries only when they need them.

use crate::tokens::TokenCounter;
use crate::trace::Message;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A message with its cached token count (counted once by the replay's counter).
#[derive(Clone, Debug)]
pub struct Item {
    pub msg: Arc<Message>,
    pub tokens: u64,
    /// Offload-store path this message points to (a stub, preview or summary), if any.
    pub pointer: Option<String>,
    /// The synthetic message is a summary (`lc_source = "summarization"`).
    pub is_summary: bool,
    /// Trace index whose original content the `pointer` file must hold byte for byte.
    pub origin: Option<usize>,
}

impl Item {
    pub fn new(msg: Message, counter: &dyn TokenCounter) -> Self {
        let tokens = counter.count_message(&msg);
        Item {
            msg: Arc::new(msg),
            tokens,
            pointer: None,
            is_summary: false,
            origin: None,
        }
    }
    /// An item for an original trace message whose count is already known.
    pub fn counted(msg: Arc<Message>, tokens: u64) -> Self {
        Item {
            msg,
            tokens,
            pointer: None,
            is_summary: false,
            origin: None,
        }
    }
    /// Mark the item as pointing at `path`, which must hold trace message `origin`'s content
    /// (`None` when the file holds something else, e.g. a rendered history).
    pub fn with_pointer(mut self, path: impl Into<String>, origin: Option<usize>) -> Self {
        self.pointer = Some(path.into());
        self.origin = origin;
        self
    }
}

/// A copy of `m` with another content (the original content is not copied).
pub fn with_content(m: &Message, content: String) -> Message {
    Message {
        role: m.role,
        content,
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
        name: m.name.clone(),
        usage: m.usage,
        reasoning: m.reasoning.clone(),
        thinking_blocks: m.thinking_blocks.clone(),
        is_error: m.is_error,
        kind: m.kind.clone(),
        timestamp: m.timestamp.clone(),
    }
}

/// A copy of `v` with capacity for `extra` more elements (one allocation, no regrowth).
pub(crate) fn with_room<T: Clone>(v: &[T], extra: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len() + extra);
    out.extend_from_slice(v);
    out
}

/// The messages seen so far, as the agent's state holds them (persistent replacements applied).
#[derive(Clone, Debug, Default)]
pub struct State {
    entries: Vec<Item>,
    /// Indexes of entries that carry a pointer (stubs, previews).
    pointers: std::collections::BTreeSet<usize>,
    /// `prefix[k]` = tokens of entries `0..k`.
    prefix: Vec<u64>,
    /// Lowest index persistently replaced since [`State::take_dirty`] was last called.
    dirty_from: Option<usize>,
    /// Indexes ever persistently replaced (what [`State::rename`] looks at).
    replaced: std::collections::BTreeSet<usize>,
}

impl State {
    pub fn new() -> Self {
        State {
            entries: Vec::new(),
            pointers: std::collections::BTreeSet::new(),
            prefix: vec![0],
            dirty_from: None,
            replaced: std::collections::BTreeSet::new(),
        }
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    /// A copy with room for `extra` more entries: a fork pushes the rest of its trace, and a
    /// plain clone (exactly full) would regrow, copying every entry, at its first push.
    pub fn clone_with_room(&self, extra: usize) -> State {
        State {
            entries: with_room(&self.entries, extra),
            pointers: self.pointers.clone(),
            prefix: with_room(&self.prefix, extra),
            dirty_from: self.dirty_from,
            replaced: self.replaced.clone(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn get(&self, index: usize) -> &Item {
        &self.entries[index]
    }
    pub fn push(&mut self, item: Item) {
        if item.pointer.is_some() {
            self.pointers.insert(self.entries.len());
        }
        let last = *self.prefix.last().unwrap_or(&0);
        self.prefix.push(last + item.tokens);
        self.entries.push(item);
    }
    /// Persistently replace entry `index` (its count comes with the item).
    pub fn replace(&mut self, index: usize, item: Item) {
        if item.pointer.is_some() {
            self.pointers.insert(index);
        } else {
            self.pointers.remove(&index);
        }
        self.entries[index] = item;
        self.replaced.insert(index);
        for k in index..self.entries.len() {
            self.prefix[k + 1] = self.prefix[k] + self.entries[k].tokens;
        }
        self.dirty_from = Some(self.dirty_from.map_or(index, |d| d.min(index)));
    }
    /// Replace the store names of `rename` in the entries replaced so far (the others are the
    /// trace's own messages, which name none). Counts are kept: a name is replaced by one of
    /// the same length.
    pub(crate) fn rename(&mut self, rename: &crate::engine::store::Rename) {
        for &i in &self.replaced {
            let item = &mut self.entries[i];
            *item = rename.item(item);
        }
    }

    /// Indexes in `a..b` whose entry carries a pointer.
    pub fn pointer_indexes(&self, a: usize, b: usize) -> impl Iterator<Item = usize> + '_ {
        self.pointers.range(a..b).copied()
    }

    /// Tokens of entries `a..b`.
    pub fn range_tokens(&self, a: usize, b: usize) -> u64 {
        self.prefix[b] - self.prefix[a]
    }
    pub(crate) fn take_dirty(&mut self) -> Option<usize> {
        self.dirty_from.take()
    }
}

/// Persistent compaction shared by every later call.
#[derive(Clone, Debug, Default)]
pub struct Base {
    pub head: Vec<Item>,
    pub start: usize,
    /// Bumped on every change, so the cached-prefix computation knows the head changed.
    pub generation: u64,
    /// Text of the latest summary (summarize or checkpoint layer), passed to the next one so
    /// summaries chain across layers, even after a truncation dropped the summary message.
    pub summary_text: Option<String>,
}

/// A per-request change to one state entry.
#[derive(Clone, Debug)]
pub enum Override {
    Replace(Item),
    Drop,
}

/// Where a view position comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `head[k]`.
    Head(usize),
    /// State (= trace) index.
    State(usize),
}

/// One materialized view position.
#[derive(Clone, Debug)]
pub struct Entry<'a> {
    pub source: Source,
    pub item: &'a Item,
    /// Replaced for this request only.
    pub overridden: bool,
}

/// The request of one model call.
#[derive(Clone, Debug, Default)]
pub struct View {
    pub head: Vec<Item>,
    pub start: usize,
    pub end: usize,
    pub overrides: BTreeMap<usize, Override>,
    pub head_generation: u64,
}

impl View {
    pub fn from_base(base: &Base, end: usize) -> Self {
        View {
            head: base.head.clone(),
            start: base.start.min(end),
            end,
            overrides: BTreeMap::new(),
            head_generation: base.generation,
        }
    }

    fn drops_in(&self, a: usize, b: usize) -> usize {
        self.overrides
            .range(a..b)
            .filter(|(_, o)| matches!(o, Override::Drop))
            .count()
    }

    /// Number of messages sent (system prompt not included).
    pub fn len(&self) -> usize {
        self.head.len() + (self.end - self.start) - self.drops_in(self.start, self.end)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tokens of the messages (no system prompt, no tools).
    pub fn message_tokens(&self, state: &State) -> u64 {
        let head: u64 = self.head.iter().map(|i| i.tokens).sum();
        head + self.state_range_tokens(state, self.start, self.end)
    }

    /// The item shown for state index `idx` (which must be in `start..end`), if not dropped.
    pub fn state_item<'a>(&'a self, state: &'a State, idx: usize) -> Option<(&'a Item, bool)> {
        match self.overrides.get(&idx) {
            Some(Override::Replace(item)) => Some((item, true)),
            Some(Override::Drop) => None,
            None => Some((state.get(idx), false)),
        }
    }

    /// All positions in order. O(len); use when a layer must look at every message.
    pub fn entries<'a>(&'a self, state: &'a State) -> Vec<Entry<'a>> {
        let mut out = Vec::with_capacity(self.len());
        for (k, item) in self.head.iter().enumerate() {
            out.push(Entry {
                source: Source::Head(k),
                item,
                overridden: false,
            });
        }
        for idx in self.start..self.end {
            if let Some((item, overridden)) = self.state_item(state, idx) {
                out.push(Entry {
                    source: Source::State(idx),
                    item,
                    overridden,
                });
            }
        }
        out
    }

    /// Make the view start at view position `pos`: head messages before it and state entries
    /// before it leave the request. Returns the new first state index.
    pub fn cut_before(&mut self, state: &State, pos: usize) -> usize {
        let entries = self.entries(state);
        let first_state = entries
            .get(pos)
            .map(|e| match e.source {
                Source::State(i) => i,
                Source::Head(_) => self.start,
            })
            .unwrap_or(self.end);
        let head_keep: Vec<Item> = entries
            .iter()
            .skip(pos)
            .filter_map(|e| match e.source {
                Source::Head(k) => Some(self.head[k].clone()),
                Source::State(_) => None,
            })
            .collect();
        self.head = head_keep;
        self.start = first_state;
        self.overrides = self.overrides.split_off(&first_state);
        first_state
    }

    /// Tokens of the state entries `a..b` as shown in this view (overrides applied).
    pub fn state_range_tokens(&self, state: &State, a: usize, b: usize) -> u64 {
        let mut t = state.range_tokens(a, b);
        for (&idx, o) in self.overrides.range(a..b) {
            let orig = state.get(idx).tokens;
            match o {
                Override::Replace(item) => t = t + item.tokens - orig,
                Override::Drop => t -= orig,
            }
        }
        t
    }

    /// The messages, shared with the state (no copy).
    pub fn shared_messages(&self, state: &State) -> Vec<Arc<Message>> {
        self.entries(state)
            .into_iter()
            .map(|e| e.item.msg.clone())
            .collect()
    }

    /// Materialize the messages (cloning them): for kept views and evals.
    pub fn messages(&self, state: &State) -> Vec<Message> {
        self.entries(state)
            .into_iter()
            .map(|e| (*e.item.msg).clone())
            .collect()
    }

    /// Spans of the view in the golden-fixture vocabulary: head messages as `"summary"` (or
    /// `"synthetic"`), then inclusive trace-index ranges.
    pub fn spans(&self) -> Vec<Span> {
        let mut out: Vec<Span> = self
            .head
            .iter()
            .map(|i| {
                if i.is_summary {
                    Span::Summary
                } else {
                    Span::Synthetic
                }
            })
            .collect();
        // Runs between dropped entries: O(overrides), not O(view).
        let mut from = self.start;
        let drops = self
            .overrides
            .range(self.start..self.end)
            .filter(|(_, o)| matches!(o, Override::Drop))
            .map(|(&i, _)| i);
        for d in drops {
            if d > from {
                out.push(Span::Range(from, d - 1));
            }
            from = d + 1;
        }
        if from < self.end {
            out.push(Span::Range(from, self.end - 1));
        }
        out
    }
}

/// A run of the sent view: `"summary"`, `"synthetic"` or `[first, last]` trace indexes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Span {
    Summary,
    Synthetic,
    Range(usize, usize),
}

impl serde::Serialize for Span {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Span::Summary => s.serialize_str("summary"),
            Span::Synthetic => s.serialize_str("synthetic"),
            Span::Range(a, b) => [*a, *b].serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::approx::ApproxCounter;

    fn state_of(n: usize) -> (State, ApproxCounter) {
        let c = ApproxCounter::langchain();
        let mut s = State::new();
        for k in 0..n {
            s.push(Item::new(Message::user("x".repeat(4 * k)), &c));
        }
        (s, c)
    }

    #[test]
    fn prefix_sums_follow_replacements() {
        let (mut s, c) = state_of(5);
        let before = s.range_tokens(0, 5);
        let old = s.get(3).tokens;
        s.replace(3, Item::new(Message::user(""), &c));
        assert_eq!(s.range_tokens(0, 5), before - old + s.get(3).tokens);
        assert_eq!(s.take_dirty(), Some(3));
        assert_eq!(s.take_dirty(), None);
    }

    #[test]
    fn view_counts_overrides_and_drops() {
        let (s, c) = state_of(6);
        let mut v = View::from_base(&Base::default(), 6);
        let full = v.message_tokens(&s);
        v.overrides.insert(2, Override::Drop);
        let small = Item::new(Message::user("y"), &c);
        v.overrides.insert(4, Override::Replace(small.clone()));
        assert_eq!(v.len(), 5);
        assert_eq!(
            v.message_tokens(&s),
            full - s.get(2).tokens - s.get(4).tokens + small.tokens
        );
        assert_eq!(v.spans(), vec![Span::Range(0, 1), Span::Range(3, 5)]);
        let sum: u64 = v.entries(&s).iter().map(|e| e.item.tokens).sum();
        assert_eq!(sum, v.message_tokens(&s));
    }

    #[test]
    fn cut_before_moves_start_and_drops_old_overrides() {
        let (s, c) = state_of(6);
        let mut base = Base::default();
        base.head.push(Item::new(Message::user("summary"), &c));
        let mut v = View::from_base(&base, 6);
        v.overrides
            .insert(1, Override::Replace(Item::new(Message::user("z"), &c)));
        // positions: 0 = head, 1.. = state 0..
        let first = v.cut_before(&s, 3);
        assert_eq!(first, 2);
        assert!(v.head.is_empty());
        assert!(v.overrides.is_empty());
        assert_eq!(v.len(), 4);
    }
}
