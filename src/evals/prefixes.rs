//! Replay prefixes shared by the units of one trace × variant (needle sweeps): the units plant
//! their needles at different points of the same trace, so up to the planting point their
//! replays are the same. Each trace × variant walks its trace once, keeping the engine state
//! ([`engine::Prefix`]) at the points units asked for, and each unit forks the state at its
//! own planting point (its store's random names drawn from its own seed) and replays only the
//! rest. The samples are byte-identical to replaying each unit whole (`tests/it`
//! `evals_prefix_sharing`); a unit whose replay cannot be forked (a layer that reads the trace
//! ahead, a summarizer that calls a model, a token counter that is not length-only once a
//! random name was drawn) is replayed whole.
//!
//! Memory is bounded: at most [`MAX_TRACES`] trace × variant walks are kept (the least
//! recently used goes), each with at most [`MAX_POINTS`] states.

use crate::engine::{self, Prefix, ReplayEnv, ResolvedConfig};
use crate::trace::{Message, Trace};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Trace × variant walks kept at once (units are dispatched in plan order, trace by trace and
/// variant by variant, so the units in flight need only a few).
pub const MAX_TRACES: usize = 8;
/// States kept per walk (units in flight of one trace × variant ask for nearby points).
pub const MAX_POINTS: usize = 4;

/// What identifies a walk: the units that share it replay the same trace under the same
/// engine configuration and environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkKey {
    /// Index of the trace in the plan.
    pub trace: usize,
    /// Index of the variant in the plan.
    pub variant: usize,
    /// Anything else the unit's configuration depends on (e.g. a needle sample's trigger).
    pub extra: Option<u64>,
}

/// A trace's messages behind `Arc`s, shared by its walks and units.
pub type SharedMessages = Arc<[Arc<Message>]>;

/// The walks of one run.
pub struct Prefixes {
    enabled: bool,
    /// Say on stderr when the first replay is forked (`CTXBENCH_SHARE_PREFIXES=log`).
    log: bool,
    walks: Mutex<Vec<(WalkKey, Arc<Mutex<Walk>>)>>,
    /// The loaded traces' messages behind `Arc`s (the most recently used [`MAX_TRACES`]), by
    /// trace index, id and length: the walks walk them and the units plant into them.
    messages: Mutex<Vec<(usize, String, SharedMessages)>>,
    /// Replays forked so far.
    forked: AtomicUsize,
}

/// One trace × variant: the states kept, ordered by length; `None` when its replays cannot
/// be forked.
struct Walk {
    states: Option<Vec<Prefix>>,
}

impl Default for Prefixes {
    fn default() -> Self {
        Prefixes::new(true)
    }
}

impl Prefixes {
    /// `enabled = false`: every unit replays whole (what the sharing is compared against).
    pub fn new(enabled: bool) -> Self {
        Prefixes {
            enabled,
            log: false,
            walks: Mutex::new(Vec::new()),
            messages: Mutex::new(Vec::new()),
            forked: AtomicUsize::new(0),
        }
    }

    /// Sharing on unless the environment says `CTXBENCH_SHARE_PREFIXES=0` (an internal switch
    /// for tests and benches that compare shared and unshared runs; `log` says on stderr when
    /// the first replay is forked).
    pub fn from_env() -> Self {
        let v = std::env::var("CTXBENCH_SHARE_PREFIXES").unwrap_or_default();
        let mut p = Prefixes::new(v.trim() != "0");
        p.log = v.trim() == "log";
        p
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Replays forked so far (the others were replayed whole).
    pub fn forked(&self) -> usize {
        self.forked.load(Ordering::Relaxed)
    }

    /// The messages of `trace` (trace `index` of the plan) behind `Arc`s, the same list for
    /// every caller while it is kept: a fork compares the prefix's messages with its own by
    /// pointer, and a unit planting into them copies only the messages it changes.
    pub fn messages(&self, index: usize, trace: &Trace) -> SharedMessages {
        let mut kept = self.messages.lock().unwrap_or_else(|e| e.into_inner());
        let same = |(i, id, m): &(usize, String, SharedMessages)| {
            *i == index && *id == trace.meta.id && m.len() == trace.messages.len()
        };
        if let Some(k) = kept.iter().position(same) {
            let entry = kept.remove(k);
            let messages = entry.2.clone();
            kept.push(entry);
            return messages;
        }
        let messages: SharedMessages = trace.messages.iter().cloned().map(Arc::new).collect();
        kept.retain(|(i, _, _)| *i != index);
        if kept.len() >= MAX_TRACES {
            kept.remove(0);
        }
        kept.push((index, trace.meta.id.clone(), messages.clone()));
        messages
    }

    fn walk(&self, key: &WalkKey) -> Arc<Mutex<Walk>> {
        let mut walks = self.walks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = walks.iter().position(|(k, _)| k == key) {
            let w = walks.remove(i);
            let walk = w.1.clone();
            walks.push(w);
            return walk;
        }
        if walks.len() >= MAX_TRACES {
            walks.remove(0);
        }
        // A new walk has no state yet; `fork` starts it on first use.
        let walk = Arc::new(Mutex::new(Walk {
            states: Some(Vec::new()),
        }));
        walks.push((key.clone(), walk.clone()));
        walk
    }

    /// The replay of `messages` forked from `trace`'s walk at `at` (its first `at` messages
    /// equal `trace`'s), for store seed `seed`; `None` when sharing is off or the replay
    /// cannot be forked (replay it whole). `env` is the prefix's environment: the unit's
    /// summarizer, counter, prices and views kept, with a memory store.
    #[allow(clippy::too_many_arguments)]
    pub fn fork(
        &self,
        key: &WalkKey,
        trace: &Trace,
        messages: &[Arc<Message>],
        at: usize,
        config: &ResolvedConfig,
        env: &ReplayEnv<'_>,
        seed: u64,
    ) -> Result<Option<engine::Fork>, engine::EngineError> {
        if !self.enabled {
            return Ok(None);
        }
        let walk = self.walk(key);
        let mut walk = walk.lock().unwrap_or_else(|e| e.into_inner());
        let Some(states) = &mut walk.states else {
            return Ok(None);
        };
        if states.is_empty() {
            let walked = self.messages(key.trace, trace);
            match Prefix::start(&trace.meta, &trace.markers, walked, config, env)? {
                Some(p) => states.push(p),
                None => {
                    walk.states = None;
                    return Ok(None);
                }
            }
        }
        let at = at.min(trace.messages.len());
        // The longest state not past `at` (the first one has no message).
        let k = states.iter().rposition(|p| p.len() <= at).unwrap_or(0);
        if states[k].len() < at && !states[k].stopped() {
            if k > 0 && k + 1 == states.len() {
                // The longest state, not the empty one: units come mostly in the order of
                // their points, so it is taken further in place rather than copied first (a
                // unit asking for an earlier point forks an earlier state). A state a failed
                // step left part way is dropped.
                if let Err(e) = states[k].advance(at, config, env) {
                    states.remove(k);
                    return Err(e);
                }
            } else {
                let Some(mut next) = states[k].try_clone(config)? else {
                    walk.states = None;
                    return Ok(None);
                };
                next.advance(at, config, env)?;
                states.insert(k + 1, next);
                if states.len() > MAX_POINTS {
                    // Keep the empty state (any unit can start there) and the longest ones.
                    states.remove(1);
                }
            }
        }
        let k = states.iter().rposition(|p| p.len() <= at).unwrap_or(0);
        let fork = states[k].fork(&trace.meta.id, messages, config, seed)?;
        if fork.is_some() && self.forked.fetch_add(1, Ordering::Relaxed) == 0 && self.log {
            crate::output::errln!("prefix sharing: a replay was forked at message {at}");
        }
        Ok(fork)
    }
}
