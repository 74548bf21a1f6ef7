//! Replay: walk a trace; at each assistant message (a recorded model call) build the request
//! view under the engine variant and record tokens sent, cached prefix, recorded output,
//! events and invariants. Linear in trace length: every message is counted once, views are
//! built in O(1) from the persistent base, range counts come from prefix sums.
//!
//! ```no_run
//! use ctxbench::engine::{self, EngineConfig, ReplayEnv, OfflineSummarizer};
//! # fn demo(trace: &ctxbench::trace::Trace) -> Result<(), engine::EngineError> {
//! let config = EngineConfig::default().resolve(trace.meta.window)?;
//! let summarizer = OfflineSummarizer;
//! let env = ReplayEnv::new(&summarizer);
//! let replay = engine::replay(trace, &config, &env)?;
//! println!("{} calls, {} events", replay.calls.len(), replay.events.len());
//! # Ok(()) }
//! ```

use super::event::{Event, EventDetail};
use super::invariants::{Checker, InvariantReport};
use super::layer::{CallCtx, CallNotes, Env, MessageCtx};
use super::resolve::ResolvedConfig;
use super::store::OffloadStore;
use super::summarizer::Summarizer;
use super::view::{Base, Item, Override, Span, State, View};
use super::EngineError;
use crate::pricing::PriceTable;
use crate::tokens::TokenCounter;
use crate::trace::{ContextMarker, Message, Role, Trace, TraceMeta, Usage};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

/// Which request views to keep (evals need the compacted view).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeepViews {
    #[default]
    None,
    /// Only the last call's view.
    Last,
    /// Only the last call's view, its messages shared with the replay's state
    /// ([`KeptView::shared`], [`KeptView::messages`] left empty): no copy of each message.
    LastShared,
    /// The view of every call at which a persistent compaction happened.
    AfterCompaction,
    All,
}

/// Where the offload store lives.
#[derive(Clone, Debug, Default)]
pub enum StoreTarget {
    /// Memory only (benches, dry runs).
    #[default]
    Memory,
    /// A real directory (use [`OffloadStore::dir_for`] for the run/trace/variant layout).
    Dir(PathBuf),
}

/// What a replay needs besides the trace and the configuration.
pub struct ReplayEnv<'a> {
    pub summarizer: &'a dyn Summarizer,
    /// Counter override; default = the configuration's counter.
    pub counter: Option<&'a dyn TokenCounter>,
    pub store: StoreTarget,
    /// Seed of the store's random names.
    pub seed: u64,
    /// System prompt sent with every request (counted as a `system` message); `None` = the
    /// configuration's `system_prompt`, if any.
    pub system_prompt: Option<String>,
    /// Tool schemas sent with every request; `None` = the configuration's `tools`, else the
    /// trace's recorded tools.
    pub tools: Option<Vec<serde_json::Value>>,
    pub keep_views: KeepViews,
    /// Prices the `cost_ceiling` layer charges: the run's table (bundled + the suite's
    /// `[pricing]`), so the ceiling and the reports agree. `None`: the bundled table, parsed
    /// only if a `cost_ceiling` layer asks (a replay without one does not pay for the TOML).
    pub prices: Option<&'a PriceTable>,
}

impl<'a> ReplayEnv<'a> {
    pub fn new(summarizer: &'a dyn Summarizer) -> Self {
        ReplayEnv {
            summarizer,
            counter: None,
            store: StoreTarget::Memory,
            seed: 0,
            system_prompt: None,
            tools: None,
            keep_views: KeepViews::None,
            prices: None,
        }
    }
}

/// One replayed model call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallRecord {
    /// The assistant message whose request this is (the request holds messages before it).
    pub trace_index: usize,
    /// State messages at that moment (= `trace_index`).
    pub state_msgs: usize,
    /// Request tokens the compaction layers compared against their triggers.
    pub effective_tokens: u64,
    /// Tokens sent: system prompt + tools + messages of the view.
    pub input_tokens: u64,
    /// Tokens of the prefix unchanged since the previous call (cache reads); 0 on the first call.
    pub cached_tokens: u64,
    /// Tokens the same call would send with no compression (the reference).
    pub reference_tokens: u64,
    /// Output tokens recorded in the trace for this call, if any.
    pub output_tokens: Option<u64>,
    /// Messages sent, system prompt not counted.
    pub sent_msgs: usize,
    pub sent_view: Vec<Span>,
    /// Indices into [`Replay::events`] of the events of this call.
    pub events: Vec<usize>,
}

/// A kept request view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeptView {
    pub trace_index: usize,
    pub tokens: u64,
    pub messages: Vec<Message>,
    /// The messages, shared, when the view was kept with [`KeepViews::LastShared`] (then
    /// `messages` is empty).
    #[serde(skip)]
    pub shared: Vec<Arc<Message>>,
}

/// Why a replay stopped before the end of the trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stop {
    pub trace_index: usize,
    pub reason: String,
}

/// The result of one replay.
#[derive(Debug, Serialize)]
pub struct Replay {
    pub trace_id: String,
    pub preset: String,
    pub window: u64,
    /// Where `window` came from (configuration, trace, the agent model's price-table entry, preset).
    pub window_source: super::WindowSource,
    pub input_budget: u64,
    pub counter: String,
    /// System prompt + tool schema tokens + the configuration's `overhead_tokens`, sent with
    /// every call.
    pub overhead_tokens: u64,
    pub calls: Vec<CallRecord>,
    pub events: Vec<Event>,
    pub views: Vec<KeptView>,
    pub invariants: InvariantReport,
    pub summarizer_calls: u64,
    pub summarizer_usage: Usage,
    pub stopped: Option<Stop>,
    /// The offload store (files the layers wrote).
    #[serde(skip)]
    pub store: OffloadStore,
}

impl Replay {
    /// Total input tokens sent over all calls.
    pub fn input_tokens(&self) -> u64 {
        self.calls.iter().map(|c| c.input_tokens).sum()
    }
    /// Each replayed agent call's usage as the agent model would be billed for it (input,
    /// the part of it cached, the recorded output): what its cost is priced on, call by call
    /// ([`PriceTable::cost_of_calls`](crate::pricing::PriceTable::cost_of_calls)).
    pub fn agent_calls(&self) -> crate::pricing::Calls {
        self.calls
            .iter()
            .map(|c| Usage {
                input: c.input_tokens,
                cache_read: c.cached_tokens,
                output: c.output_tokens.unwrap_or(0),
                cache_write: 0,
            })
            .collect()
    }
    /// Each summarizer call's usage, in order (their sum is `summarizer_usage`).
    pub fn summarizer_call_usages(&self) -> crate::pricing::Calls {
        self.events
            .iter()
            .flat_map(|e| e.detail.summarizer_call_usages())
            .copied()
            .collect()
    }
    /// Total input tokens of the no-compression reference.
    pub fn reference_tokens(&self) -> u64 {
        self.calls.iter().map(|c| c.reference_tokens).sum()
    }
    /// The events shown at each model call, by index into [`Replay::events`]: the tool-time
    /// events (no `call_index`) of messages before the call that no call reported, then the
    /// call's own events. A tool-time event that a call reported (an external engine tells of an
    /// eviction in the view of the call after it, or of a later one) is shown at that call
    /// only, where the view changed: taken by message order as well, it was shown twice, the
    /// first time at a call that still sent the message whole.
    pub fn events_by_call(&self) -> Vec<Vec<usize>> {
        let mut reported = vec![false; self.events.len()];
        for c in &self.calls {
            for &k in &c.events {
                if let Some(r) = reported.get_mut(k) {
                    *r = true;
                }
            }
        }
        let mut next = 0;
        self.calls
            .iter()
            .map(|c| {
                let mut shown = Vec::new();
                while next < self.events.len()
                    && self.events[next].call_index.is_none()
                    && self.events[next].trace_index < c.trace_index
                {
                    if !reported[next] {
                        shown.push(next);
                    }
                    next += 1;
                }
                for &k in &c.events {
                    shown.push(k);
                    next = next.max(k + 1);
                }
                shown
            })
            .collect()
    }

    /// The context timeline in the result model's shape (one point per model call, with the
    /// kinds of the events of that call and of tool-time events since the previous call:
    /// [`Replay::events_by_call`]).
    pub fn timeline(&self) -> Vec<crate::record::TimelinePoint> {
        self.calls
            .iter()
            .zip(self.events_by_call())
            .map(|(c, shown)| {
                let events = shown.iter().map(|&k| &self.events[k]);
                crate::record::TimelinePoint {
                    trace_index: c.trace_index,
                    tokens: c.input_tokens,
                    reference_tokens: Some(c.reference_tokens),
                    events: events.clone().map(|e| e.kind().into()).collect(),
                    details: events.map(Event::timeline_note).collect(),
                }
            })
            .collect()
    }

    /// Compactions flagged `futile` (removed no message or left the request no smaller).
    pub fn futile_compactions(&self) -> u64 {
        self.events
            .iter()
            .filter(|e| matches!(e.detail, EventDetail::Futile { .. }))
            .count() as u64
    }

    /// Summaries that failed (provider error, empty or error-string text, cancelled).
    pub fn summary_failures(&self) -> super::outcome::SummaryFailures {
        super::outcome::SummaryFailures::of(&self.events)
    }

    /// Number of events of each kind.
    pub fn event_counts(&self) -> std::collections::BTreeMap<String, u64> {
        let mut m = std::collections::BTreeMap::new();
        for e in &self.events {
            *m.entry(e.kind().to_string()).or_insert(0) += 1;
        }
        m
    }
}

/// The read-only services of one replay; each layer hook gets them as an [`Env`] with the
/// replay's store and event list lent to it.
struct Services<'a> {
    counter: &'a dyn TokenCounter,
    summarizer: &'a dyn Summarizer,
    window: u64,
    budget: u64,
    overhead: u64,
}

impl<'a> Services<'a> {
    fn lend<'b>(&self, store: &'b mut OffloadStore, events: &'b mut Vec<Event>) -> Env<'b>
    where
        'a: 'b,
    {
        Env {
            counter: self.counter,
            summarizer: self.summarizer,
            store,
            events,
            window: self.window,
            budget: self.budget,
            overhead: self.overhead,
        }
    }
}

/// Identity of what the previous call sent, for the cached-prefix computation.
#[derive(Clone)]
struct PrevView {
    head_generation: u64,
    start: usize,
    end: usize,
    overrides: std::collections::BTreeMap<usize, Override>,
}

fn same_override(a: Option<&Override>, b: Option<&Override>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(Override::Drop), Some(Override::Drop)) => true,
        (Some(Override::Replace(x)), Some(Override::Replace(y))) => {
            Arc::ptr_eq(&x.msg, &y.msg) || (x.tokens == y.tokens && *x.msg == *y.msg)
        }
        _ => false,
    }
}

/// Tokens of the longest message prefix this view shares with the previous one.
fn common_prefix_tokens(prev: &PrevView, view: &View, state: &State, dirty: Option<usize>) -> u64 {
    if prev.head_generation != view.head_generation || prev.start != view.start {
        return 0;
    }
    let head: u64 = view.head.iter().map(|i| i.tokens).sum();
    let mut limit = prev.end.min(view.end);
    if let Some(d) = dirty {
        limit = limit.min(d);
    }
    let bound = limit;
    let keys: Vec<usize> = prev
        .overrides
        .keys()
        .chain(view.overrides.keys())
        .copied()
        .filter(|&k| k >= view.start && k < bound)
        .collect();
    for k in keys {
        if !same_override(prev.overrides.get(&k), view.overrides.get(&k)) {
            limit = limit.min(k);
        }
    }
    head + view.state_range_tokens(state, view.start, limit.max(view.start))
}

/// Tokens sent with every request besides the messages: the tool schemas (the environment's,
/// else the configuration's `tools`, else the trace's recorded ones), the system prompt (the
/// environment's, else the configuration's `system_prompt`) and the configuration's
/// `overhead_tokens`.
pub fn request_overhead(
    meta: &TraceMeta,
    config: &ResolvedConfig,
    env: &ReplayEnv<'_>,
    counter: &dyn TokenCounter,
) -> u64 {
    let added = &config.added;
    let tools = env
        .tools
        .as_deref()
        .or(added.tools.as_deref().map(Vec::as_slice))
        .unwrap_or(&meta.tools);
    let mut overhead = if tools.is_empty() {
        0
    } else {
        counter.count_tools(tools)
    };
    let system_prompt = env
        .system_prompt
        .as_deref()
        .or(added.system_prompt.as_deref());
    if let Some(sp) = system_prompt {
        overhead += counter.count_message(&Message::system(sp.to_string()));
    }
    overhead + added.overhead_tokens
}

/// Replay `trace` through the engine `config`.
pub fn replay(
    trace: &Trace,
    config: &ResolvedConfig,
    env: &ReplayEnv<'_>,
) -> Result<Replay, EngineError> {
    let messages: Vec<Arc<Message>> = trace.messages.iter().cloned().map(Arc::new).collect();
    replay_shared(&trace.meta, &trace.markers, &messages, config, env)
}

/// [`replay`] taking the trace by value: its messages move into the engine's `Arc`s instead of
/// being copied, so a replay holds one copy of the trace, not two (peak memory of
/// `ctxbench replay` on a big trace).
pub fn replay_owned(
    trace: Trace,
    config: &ResolvedConfig,
    env: &ReplayEnv<'_>,
) -> Result<Replay, EngineError> {
    let Trace {
        meta,
        markers,
        messages,
    } = trace;
    let messages: Vec<Arc<Message>> = messages.into_iter().map(Arc::new).collect();
    replay_shared(&meta, &markers, &messages, config, env)
}

/// [`replay`] over messages already shared behind `Arc`s: one trace replayed under many
/// variants converts its messages once instead of copying them per replay.
pub fn replay_shared(
    meta: &TraceMeta,
    markers: &[ContextMarker],
    messages: &[Arc<Message>],
    config: &ResolvedConfig,
    env: &ReplayEnv<'_>,
) -> Result<Replay, EngineError> {
    let own_counter;
    let counter: &dyn TokenCounter = match env.counter {
        Some(c) => c,
        None => {
            own_counter = config.make_counter()?;
            own_counter.as_ref()
        }
    };
    let store = match &env.store {
        StoreTarget::Memory => OffloadStore::in_memory(env.seed),
        StoreTarget::Dir(d) => OffloadStore::on_disk(d, env.seed)?,
    };
    let mut run = Run::begin(meta, markers, messages, config, env, counter, store)?;
    let last_call = messages.iter().rposition(|m| m.role == Role::Assistant);
    run.advance(messages, messages.len(), env, counter, last_call)?;
    run.end_layers()?;
    Ok(run.finish(meta, config, counter))
}

/// A replay between two messages: everything the walk over the trace carries from one message
/// to the next. Owns all it holds (the messages are shared `Arc`s), so a [`Prefix`] can keep
/// one and fork it.
struct Run {
    layers: Vec<Box<dyn super::layer::Layer>>,
    checker: Checker,
    store: OffloadStore,
    overhead: u64,
    window: u64,
    budget: u64,
    state: State,
    base: Base,
    events: Vec<Event>,
    calls: Vec<CallRecord>,
    views: Vec<KeptView>,
    prev: Option<PrevView>,
    reference_sum: u64,
    stopped: Option<Stop>,
    /// Index of the next message to take.
    next: usize,
}

impl Run {
    fn begin(
        meta: &TraceMeta,
        markers: &[ContextMarker],
        messages: &[Arc<Message>],
        config: &ResolvedConfig,
        env: &ReplayEnv<'_>,
        counter: &dyn TokenCounter,
        store: OffloadStore,
    ) -> Result<Run, EngineError> {
        let overhead = request_overhead(meta, config, env, counter);
        let window = config.window;
        let budget = config.input_budget();
        let layers = match &config.external {
            // An external engine is the replay's only layer (it replaces the preset's).
            Some(spec) => {
                let info = super::external::BeginInfo {
                    trace_id: meta.id.clone(),
                    window,
                    input_budget: budget,
                    counter: counter.name().to_string(),
                    overhead_tokens: overhead,
                    system_prompt: env.system_prompt.clone().or(config
                        .added
                        .system_prompt
                        .as_deref()
                        .map(str::to_string)),
                    tools: env
                        .tools
                        .clone()
                        .or(config.added.tools.as_deref().cloned())
                        .unwrap_or_else(|| meta.tools.clone()),
                    model: meta.model.clone(),
                };
                let layer: Box<dyn super::layer::Layer> =
                    Box::new(super::external::ExternalLayer::begin(spec, info)?);
                vec![layer]
            }
            None => super::layers::build(config, meta, markers, messages, env.prices)?,
        };
        Ok(Run {
            layers,
            checker: Checker::new(messages),
            store,
            overhead,
            window,
            budget,
            state: State::new(),
            base: Base::default(),
            events: Vec::new(),
            calls: Vec::new(),
            views: Vec::new(),
            prev: None,
            reference_sum: 0,
            stopped: None,
            next: 0,
        })
    }

    /// Take messages `self.next..to` (fewer when a layer stops the replay). `last_call` is the
    /// trace index of the replay's last model call (the one `KeepViews::Last` keeps).
    fn advance(
        &mut self,
        messages: &[Arc<Message>],
        to: usize,
        env: &ReplayEnv<'_>,
        counter: &dyn TokenCounter,
        last_call: Option<usize>,
    ) -> Result<(), EngineError> {
        let services = Services {
            counter,
            summarizer: env.summarizer,
            window: self.window,
            budget: self.budget,
            overhead: self.overhead,
        };
        let (overhead, window) = (self.overhead, self.window);
        let Run {
            layers,
            checker,
            store,
            state,
            base,
            events,
            calls,
            views,
            prev,
            reference_sum,
            stopped,
            next,
            ..
        } = self;
        while *next < to.min(messages.len()) && stopped.is_none() {
            let i = *next;
            let m = &messages[i];
            *next += 1;
            if m.role == Role::Assistant {
                let mut view = View::from_base(base, state.len());
                let mut notes = CallNotes::default();
                let first_event = events.len();
                for layer in layers.iter_mut() {
                    let mut ctx = CallCtx {
                        call_index: i,
                        state: &mut *state,
                        base: &mut *base,
                        view: &mut view,
                        env: services.lend(store, events),
                        notes: &mut notes,
                    };
                    layer.before_call(&mut ctx)?;
                    if notes.stop.is_some() {
                        break;
                    }
                }
                // Flag compactions of this call that achieved nothing (after the layers ran, so
                // `tokens_after` is final).
                let futile = super::outcome::futile_events(&events[first_event..]);
                events.extend(futile);
                let sent = overhead + view.message_tokens(state);
                if sent > window
                    && !events[first_event..]
                        .iter()
                        .any(|e| matches!(e.detail, EventDetail::Overflow { .. }))
                {
                    let detail = EventDetail::Overflow {
                        tokens: sent,
                        limit: window,
                        message: format!(
                            "request of {sent} tokens exceeds the {window}-token window"
                        ),
                    };
                    let mut ev = Event::at_call(i, "engine", detail);
                    ev.tokens_after = Some(sent);
                    events.push(ev);
                }
                let dirty = state.take_dirty();
                let cached = match &*prev {
                    None => 0,
                    Some(p) => overhead + common_prefix_tokens(p, &view, state, dirty),
                };
                checker.check_call(
                    i,
                    &view,
                    state,
                    store,
                    &events[first_event..],
                    sent,
                    overhead + *reference_sum,
                    window,
                    messages,
                );
                let compacted = events[first_event..].iter().any(Event::is_compaction);
                let keep = match env.keep_views {
                    KeepViews::None => false,
                    KeepViews::All => true,
                    KeepViews::Last | KeepViews::LastShared => {
                        Some(i) == last_call || notes.stop.is_some()
                    }
                    KeepViews::AfterCompaction => compacted,
                };
                if keep {
                    let shared = env.keep_views == KeepViews::LastShared;
                    if env.keep_views == KeepViews::Last || shared {
                        views.clear();
                    }
                    views.push(KeptView {
                        trace_index: i,
                        tokens: sent,
                        messages: if shared {
                            Vec::new()
                        } else {
                            view.messages(state)
                        },
                        shared: if shared {
                            view.shared_messages(state)
                        } else {
                            Vec::new()
                        },
                    });
                }
                calls.push(CallRecord {
                    trace_index: i,
                    state_msgs: state.len(),
                    effective_tokens: notes.effective_tokens.unwrap_or(sent),
                    input_tokens: sent,
                    cached_tokens: cached,
                    reference_tokens: overhead + *reference_sum,
                    output_tokens: m.usage.map(|u| u.output),
                    sent_msgs: view.len(),
                    sent_view: view.spans(),
                    events: (first_event..events.len()).collect(),
                });
                *prev = Some(PrevView {
                    head_generation: view.head_generation,
                    start: view.start,
                    end: view.end,
                    overrides: view.overrides,
                });
                if let Some(reason) = notes.stop {
                    *stopped = Some(Stop {
                        trace_index: i,
                        reason,
                    });
                    break;
                }
            }
            let tokens = counter.count_shared(m);
            *reference_sum += tokens;
            state.push(Item::counted(m.clone(), tokens));
            for layer in layers.iter_mut() {
                let mut ctx = MessageCtx {
                    index: i,
                    state: &mut *state,
                    env: services.lend(store, events),
                };
                layer.on_message(&mut ctx)?;
            }
        }
        Ok(())
    }

    /// Every layer's [`Layer::end`](super::layer::Layer::end), in order.
    fn end_layers(&mut self) -> Result<(), EngineError> {
        for layer in &mut self.layers {
            layer.end()?;
        }
        Ok(())
    }

    fn finish(
        self,
        meta: &TraceMeta,
        config: &ResolvedConfig,
        counter: &dyn TokenCounter,
    ) -> Replay {
        let mut summarizer_usage = Usage::default();
        let mut summarizer_calls = 0;
        for e in &self.events {
            if let Some(u) = e.detail.summarizer_usage() {
                summarizer_usage.add(u);
            }
            // An event may have made several calls (turn_trim's emergency memory notes).
            summarizer_calls += e.detail.summarizer_call_usages().len() as u64;
        }
        Replay {
            trace_id: meta.id.clone(),
            preset: config.preset.clone(),
            window: self.window,
            window_source: config.window_source.clone(),
            input_budget: self.budget,
            counter: counter.name().to_string(),
            overhead_tokens: self.overhead,
            calls: self.calls,
            events: self.events,
            views: self.views,
            invariants: self.checker.report,
            summarizer_calls,
            summarizer_usage,
            stopped: self.stopped,
            store: self.store,
        }
    }

    /// This run as the replay of `messages` (equal to the ones taken so far up to `next`)
    /// under store `seed` would be at the same point, its store under `root`; `None` when it
    /// cannot be forked (a layer or the checker says so, or a drawn store name could change a
    /// count or cannot be renamed).
    fn fork(
        &self,
        messages: &[Arc<Message>],
        seed: u64,
        counter: &dyn TokenCounter,
    ) -> Option<Run> {
        let (store, rename) = self.store.fork(seed)?;
        // A drawn name is renamed in the texts that hold it; a counter that counts more than
        // characters could count the renamed text differently, and every count after it too.
        if !rename.is_empty() && !counter.counts_characters_only() {
            return None;
        }
        let checker = self.checker.fork(messages, self.next, &rename)?;
        let layers = self
            .layers
            .iter()
            .map(|l| l.fork(&rename))
            .collect::<Option<Vec<_>>>()?;
        // Room for the rest of the trace: the fork pushes a state entry per message and at
        // most a call per message, which would regrow (copy) the exactly-full clones.
        let rest = messages.len().saturating_sub(self.next);
        let mut state = self.state.clone_with_room(rest);
        let mut base = self.base.clone();
        let mut events = self.events.clone();
        let mut views = self.views.clone();
        let mut prev = self.prev.clone();
        if !rename.is_empty() {
            state.rename(&rename);
            base.head = base.head.iter().map(|i| rename.item(i)).collect();
            if let Some(t) = &mut base.summary_text {
                rename.apply(t);
            }
            for e in &mut events {
                e.rename(&rename);
            }
            for v in &mut views {
                for m in &mut v.messages {
                    rename.apply(&mut m.content);
                }
                for m in &mut v.shared {
                    *m = rename.message(m);
                }
            }
            if let Some(p) = &mut prev {
                for o in p.overrides.values_mut() {
                    if let Override::Replace(item) = o {
                        *item = rename.item(item);
                    }
                }
            }
        }
        Some(Run {
            layers,
            checker,
            store,
            overhead: self.overhead,
            window: self.window,
            budget: self.budget,
            state,
            base,
            events,
            calls: super::view::with_room(&self.calls, rest),
            views,
            prev,
            reference_sum: self.reference_sum,
            stopped: self.stopped.clone(),
            next: self.next,
        })
    }
}

/// The first messages of a replay, taken once and forked for every replay of a trace that
/// starts with the same messages (the units of a needle sweep differ only from where the
/// needle is planted on). A fork is exactly the replay the other trace would have had up to
/// that point: same layer states, events, counts and store files, its store's random names
/// drawn from its own seed (and renamed wherever the prefix used them).
///
/// Only when every layer can be forked ([`Layer::fork`](super::layer::Layer::fork)); the
/// replay's environment (summarizer, counter, prices, system prompt, tools, views kept) must
/// be the same for the prefix and every fork.
pub struct Prefix {
    run: Run,
    /// The id of the trace the prefix walks.
    trace_id: String,
    /// Messages of the trace the prefix walks (the forks' traces start with them).
    messages: Arc<[Arc<Message>]>,
}

impl Prefix {
    /// A prefix of no messages over `messages` (with a memory store), or `None` when the
    /// configuration's layers cannot be forked.
    pub fn start(
        meta: &TraceMeta,
        markers: &[ContextMarker],
        messages: Arc<[Arc<Message>]>,
        config: &ResolvedConfig,
        env: &ReplayEnv<'_>,
    ) -> Result<Option<Prefix>, EngineError> {
        if config.external.is_some() {
            return Ok(None);
        }
        let counter = config.make_counter()?;
        let counter = env.counter.unwrap_or(counter.as_ref());
        let store = OffloadStore::in_memory(env.seed);
        let run = Run::begin(meta, markers, &messages, config, env, counter, store)?;
        if run
            .layers
            .iter()
            .any(|l| l.fork(&Default::default()).is_none())
        {
            return Ok(None);
        }
        Ok(Some(Prefix {
            run,
            trace_id: meta.id.clone(),
            messages,
        }))
    }

    /// Messages taken so far.
    pub fn len(&self) -> usize {
        self.run.next
    }

    /// No message was taken yet.
    pub fn is_empty(&self) -> bool {
        self.run.next == 0
    }

    /// A layer stopped the replay within the prefix (it takes no more messages).
    pub fn stopped(&self) -> bool {
        self.run.stopped.is_some()
    }

    /// The messages this prefix walks.
    pub fn messages(&self) -> &[Arc<Message>] {
        &self.messages
    }

    /// Take the messages up to `to` (a model call among them is replayed as in a replay that
    /// goes on past `to`: its view is kept only if a layer stops there).
    pub fn advance(
        &mut self,
        to: usize,
        config: &ResolvedConfig,
        env: &ReplayEnv<'_>,
    ) -> Result<(), EngineError> {
        let own = config.make_counter()?;
        let counter = env.counter.unwrap_or(own.as_ref());
        let messages = self.messages.clone();
        self.run.advance(&messages, to, env, counter, None)
    }

    /// An independent copy at the same point (same store seed: nothing is renamed).
    pub fn try_clone(&self, config: &ResolvedConfig) -> Result<Option<Prefix>, EngineError> {
        let own = config.make_counter()?;
        let seed = self.run.store.seed();
        Ok(self
            .run
            .fork(&self.messages, seed, own.as_ref())
            .map(|run| Prefix {
                run,
                trace_id: self.trace_id.clone(),
                messages: self.messages.clone(),
            }))
    }

    /// The replay of `messages` (whose first [`len`](Self::len) messages equal the prefix's)
    /// forked at this point for store seed `seed`, in memory ([`Fork::finish`] writes its store
    /// out and goes on); `None` when it cannot be forked (then replay it whole).
    pub fn fork(
        &self,
        trace_id: &str,
        messages: &[Arc<Message>],
        config: &ResolvedConfig,
        seed: u64,
    ) -> Result<Option<Fork>, EngineError> {
        let at = self.run.next;
        if trace_id != self.trace_id
            || messages.len() < at
            || messages[..at]
                .iter()
                .zip(&self.messages[..at])
                .any(|(a, b)| !Arc::ptr_eq(a, b) && a != b)
        {
            return Ok(None);
        }
        let last_call = messages.iter().rposition(|m| m.role == Role::Assistant);
        // A call the prefix took was replayed as one that is not the last (its view not kept).
        if last_call.is_some_and(|l| l < at) && self.run.stopped.is_none() {
            return Ok(None);
        }
        let own = config.make_counter()?;
        Ok(self
            .run
            .fork(messages, seed, own.as_ref())
            .map(|run| Fork { run, last_call }))
    }
}

/// A replay forked from a [`Prefix`], to be finished over its own messages.
pub struct Fork {
    run: Run,
    last_call: Option<usize>,
}

impl Fork {
    /// The rest of the replay: its store goes to `env.store` (the files so far are written
    /// there), then the messages after the fork point are taken, as [`replay_shared`] would.
    /// `env` is the replay's own, but for its store the same as the prefix's.
    pub fn finish(
        mut self,
        meta: &TraceMeta,
        messages: &[Arc<Message>],
        config: &ResolvedConfig,
        env: &ReplayEnv<'_>,
    ) -> Result<Replay, EngineError> {
        if let StoreTarget::Dir(d) = &env.store {
            self.run.store.write_out(d)?;
        }
        let own;
        let counter: &dyn TokenCounter = match env.counter {
            Some(c) => c,
            None => {
                own = config.make_counter()?;
                own.as_ref()
            }
        };
        self.run
            .advance(messages, messages.len(), env, counter, self.last_call)?;
        self.run.end_layers()?;
        Ok(self.run.finish(meta, config, counter))
    }
}
