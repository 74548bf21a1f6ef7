//! Offload stores after a run: each unit writes its store under `stores/<unit-id>/` (the needle
//! agent searches it), which adds up (37 MB for the quickstart's 280 units, by `du -sh`).
//! Once the reports are written, only the stores of the samples report.html shows in full and
//! of units that errored are kept (`report::shown`), unless `run --keep-stores`: a unit only
//! flagged past the page's cap of flagged units per variant is not shown, and its store goes (the
//! run says how many). `ctxbench clean --stores` applies the same rule to older runs.
//!
//! A needle unit holds its store in memory while it runs and hands it to the runner with its
//! output. As the unit ends, the runner writes it where [`StorePolicy::route`] says
//! ([`Route`]): a store pruning keeps whatever the other units do (the unit errored, or
//! report.html shows its pairing key) goes straight into its directory under `stores/` (the
//! files an on-disk store would have written); a flagged unit's is not written once enough
//! flagged units of its variant before it in the report's order have ended ([`ProblemWindow`]:
//! it is past the page's cap), and waits in memory until then ([`WaitingStores`]: beyond the
//! number held, and when dispatching ends, it goes to its directory); one pruning may keep (a failed verdict: only the
//! first few of a variant are shown, [`FailWindow`]; one with that many before it is not written)
//! is a record of the run's `stores.pack` (`engine::store::PackFile`); a baseline's store waits
//! in memory until every unit of its pairing key has ended ([`HeldStores`]: the page shows the
//! baseline of a failed verdict), then goes to the pack or nowhere; and any store not written
//! leaves a marker record (the unit's id, no files), so pruning can say when a store it would
//! keep was not written. Pruning unpacks the records of the stores it keeps into their
//! directories, removes the directories it does not keep (flagged units that turned out past
//! the cap) and the pack file. A run of the whole plan thus writes each kept store once, where
//! it stays, and of the others only the flagged units' it could not hold until decided.
//!
//! The page's caps per variant shrink with the number of variants (`report::html::Caps`): the
//! plan's variants, which are the report's (run.json's), so the policy computed before the run
//! ([`StorePolicy::for_plan`]: the keys, and the windows' caps) agrees with pruning.

use crate::engine::store::{for_each_pack, unpack_bytes};
use crate::record::{RunDir, Sample};
use crate::report::html::{Caps, Status, MAX_FAILED_PER_VARIANT, MAX_FLAGGED_PER_VARIANT};
use crate::report::shown::shown_in_full;
use crate::report::ReportModel;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// Where the store a unit held in memory goes as the unit ends ([`StorePolicy::route`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Straight into its directory `stores/<unit-id>/`: pruning keeps it whatever the other
    /// units do (or the run keeps every store).
    Dir,
    /// A record of the run's pack file: pruning may keep it, which only the whole run's
    /// samples tell; the end of the run unpacks it if kept.
    Pack,
    /// Held by the runner ([`HeldStores`]) until every unit of its pairing key has ended: a
    /// baseline's store is kept when a unit of its key fails its verdict. A marker record
    /// is written as the unit ends, so a store lost with the process still counts as missing.
    Hold,
    /// Held by the runner ([`WaitingStores`]) while report.html may or may not show the
    /// flagged unit: dropped once enough flagged units of its variant before it have ended (it is
    /// past the page's cap), else written to its directory (beyond the number held, or when
    /// dispatching ends; pruning removes it if it turns out past the cap). A marker record is
    /// written as the unit ends, as for [`Route::Hold`].
    Wait,
    /// Not written (a marker record: pruning can tell a store it would keep was not written).
    Skip,
}

/// Which stores held in memory the runner writes as each unit ends, and where ([`Route`]).
#[derive(Debug, Clone, Default)]
pub enum StorePolicy {
    /// Every one, those pruning keeps whatever the other units do as directories, the rest to
    /// the pack file (resumed and sharded runs, whose final selection depends on samples this
    /// process does not see).
    #[default]
    All,
    /// Every one, as a directory (`run --keep-stores`: every store is kept).
    Dirs,
    /// Those [`prune`] may keep: a unit that errored, is flagged or failed its verdict; a unit
    /// of the pairing keys report.html shows (a function of the plan: computed from it before
    /// the run, see [`StorePolicy::for_plan`]); and a unit of the baseline variant (report.html
    /// also shows the baseline of a failed verdict, which is known only once every unit of
    /// its key has ended).
    Kept {
        shown: HashSet<String>,
        baseline: Option<String>,
        /// Units of a pairing key: one a variant.
        variants: usize,
        /// The first failed verdicts of each variant known so far ([`FailWindow`]).
        fails: Arc<FailWindow>,
        /// The first flagged units of each variant known so far ([`ProblemWindow`]).
        problems: Arc<ProblemWindow>,
    },
}

/// Keep `key` among the `cap` least of `first`, and say whether it may be among the `cap`
/// least of every key to come: false when `cap` keys before it are known already.
fn admit<K: Ord>(first: &mut std::collections::BTreeSet<K>, cap: usize, key: K) -> bool {
    if first.len() >= cap && first.last().is_some_and(|l| *l < key) {
        return false;
    }
    first.insert(key);
    while first.len() > cap {
        first.pop_last();
    }
    true
}

/// The first flagged units of each variant in the report's order (trace, eval, sample, repeat
/// within a variant), as far as the units ended so far tell. report.html shows only the first
/// [`Caps::flagged`] flagged units of a variant in full (`report::html::problems_shown` over
/// the sorted rows), so a flagged unit with that many flagged units of its variant before
/// it is not shown whatever the units still running do, and its store need not be written
/// (errored units are not counted here: every one keeps its store). One that may still be
/// shown waits in memory ([`WaitingStores`]) until that is decided. Holds at most the cap's
/// number of keys a variant.
#[derive(Debug)]
pub struct ProblemWindow {
    /// By variant (its rank in the plan, the key's first field).
    first: std::sync::Mutex<FxHashMap<usize, std::collections::BTreeSet<ProblemKey>>>,
    /// The page's cap of flagged units per variant.
    cap: usize,
}

impl Default for ProblemWindow {
    /// With the cap of a run of few variants, [`MAX_FLAGGED_PER_VARIANT`].
    fn default() -> ProblemWindow {
        ProblemWindow::new(MAX_FLAGGED_PER_VARIANT)
    }
}

/// A unit's place in the report's order: variant (its rank in the plan), trace, eval, sample,
/// repeat.
pub type ProblemKey = (usize, Arc<str>, Arc<str>, Arc<str>, u32);

/// Whether `key` is past the cap of its variant in `first` ([`ProblemWindow::is_past`]).
fn past(
    first: &FxHashMap<usize, std::collections::BTreeSet<ProblemKey>>,
    cap: usize,
    key: &ProblemKey,
) -> bool {
    first
        .get(&key.0)
        .is_some_and(|f| f.len() >= cap && f.last().is_some_and(|l| l < key))
}

impl ProblemWindow {
    /// For the page's cap of `cap` flagged units per variant ([`Caps::flagged`]).
    pub fn new(cap: usize) -> ProblemWindow {
        ProblemWindow {
            first: Default::default(),
            cap,
        }
    }

    /// Record a flagged unit at `key` and say whether report.html may still show it: fewer
    /// than the cap's number of flagged units of its variant known before it.
    pub fn may_show(&self, key: ProblemKey) -> bool {
        let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        admit(first.entry(key.0).or_default(), self.cap, key)
    }

    /// Whether a flagged unit at `key` is past the page's cap: the cap's number of flagged
    /// units of its variant before it have ended.
    pub fn is_past(&self, key: &ProblemKey) -> bool {
        past(
            &self.first.lock().unwrap_or_else(|e| e.into_inner()),
            self.cap,
            key,
        )
    }

    /// Drop from `held` the entries whose key is past the page's cap; returns how many.
    fn drop_past<V>(&self, held: &mut BTreeMap<ProblemKey, V>) -> usize {
        let first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        let before = held.len();
        held.retain(|k, _| !past(&first, self.cap, k));
        before - held.len()
    }
}

/// The report-order key of `unit` ([`ProblemWindow`]).
pub fn problem_key(unit: &super::Unit) -> ProblemKey {
    (
        unit.variant_index,
        unit.trace_id.clone(),
        unit.eval.clone(),
        unit.sample.clone(),
        unit.repeat,
    )
}

/// The stores of flagged units the runner holds ([`Route::Wait`]) until report.html surely
/// does not show them (dropped) — or, beyond `cap` stores, the likeliest to be shown (the
/// fewest flagged units of their variant known before them) go to their directory; whatever is
/// still held when dispatching ends goes there too, and pruning decides. With one cap over all
/// variants (before the cap per variant), the 1,000-unit needle sweep, which runs trace by
/// trace while the page orders by variant first, ended most flagged units past the cap before
/// enough units before them in that order had: written to their directory and removed at the
/// end, 54–60 of them (15 MB written, ~1,000 system calls to remove them) when not held.
#[derive(Debug, Default)]
pub struct WaitingStores {
    cap: usize,
    held: BTreeMap<ProblemKey, HeldStore>,
}

impl WaitingStores {
    /// Holding at most `cap` stores.
    pub fn new(cap: usize) -> WaitingStores {
        WaitingStores {
            cap: cap.max(1),
            held: BTreeMap::new(),
        }
    }

    /// Stores held now.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Hold `store` of the flagged unit at `key` (then call [`WaitingStores::ended`]).
    pub fn hold(&mut self, key: ProblemKey, store: HeldStore) {
        self.held.insert(key, store);
    }

    /// The unit that recorded `sample` ended: if it is flagged (the window may have moved),
    /// drop the stores now past the page's cap. Returns the stores to write to their
    /// directory now: beyond the cap, those likeliest to be shown (the fewest flagged units of
    /// their variant known before them; then the first in the report's order).
    pub fn ended(&mut self, sample: &Sample, window: &ProblemWindow) -> Vec<HeldStore> {
        if !self.held.is_empty() && Status::of(&sample.row()) == Status::Flagged {
            self.drop_past(window);
        }
        let mut out = Vec::new();
        while self.held.len() > self.cap {
            let first = window.first.lock().unwrap_or_else(|e| e.into_inner());
            let likeliest = self
                .held
                .keys()
                .min_by_key(|k| {
                    let before = first
                        .get(&k.0)
                        .map_or(0, |f| f.iter().take_while(|x| *x < *k).count());
                    (before, *k)
                })
                .cloned();
            drop(first);
            out.extend(likeliest.and_then(|k| self.held.remove(&k)));
        }
        out
    }

    /// Drop the stores now past the page's cap (`window`); returns how many were dropped.
    pub fn drop_past(&mut self, window: &ProblemWindow) -> usize {
        window.drop_past(&mut self.held)
    }

    /// Every store still held, to write to its directory (pruning decides).
    pub fn rest(self) -> Vec<HeldStore> {
        self.held.into_values().collect()
    }
}

/// The first failed verdicts of each variant in the report's order, as far as the units ended
/// so far tell. report.html shows, besides the shown keys, only the first [`Caps::failed`]
/// failed verdicts of a variant in its sample order (trace, eval, sample, repeat:
/// `report::html::select` over the sorted rows), so a failed verdict with that many failed
/// verdicts of its variant before it is not shown, whatever the units still running do, and
/// its store need not be written. Holds at most that many keys a variant.
#[derive(Debug)]
pub struct FailWindow {
    first: std::sync::Mutex<FxHashMap<String, std::collections::BTreeSet<FailKey>>>,
    /// The page's cap of failed verdicts per variant.
    cap: usize,
}

impl Default for FailWindow {
    /// With the cap of a run of few variants, [`MAX_FAILED_PER_VARIANT`].
    fn default() -> FailWindow {
        FailWindow::new(MAX_FAILED_PER_VARIANT)
    }
}

/// A unit's place in the report's order within its variant: trace, eval, sample, repeat.
pub type FailKey = (Arc<str>, Arc<str>, Arc<str>, u32);

impl FailWindow {
    /// For the page's cap of `cap` failed verdicts per variant ([`Caps::failed`]).
    pub fn new(cap: usize) -> FailWindow {
        FailWindow {
            first: Default::default(),
            cap,
        }
    }

    /// Record a failed verdict of `variant` at `key` (outside the shown keys) and say whether
    /// report.html may still show it: fewer than the cap's number of failed verdicts of the
    /// variant known before it.
    pub fn may_show(&self, variant: &str, key: FailKey) -> bool {
        let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        admit(first.entry(variant.to_string()).or_default(), self.cap, key)
    }
}

impl StorePolicy {
    /// The policy of a run that executes every unit of `plan` (one process, nothing recorded
    /// before): the units [`shown_in_full`] picks when every unit passes, i.e. those of the
    /// pairing keys the HTML report shows (which keys does not depend on the outcomes), and
    /// the page's caps of flagged units and failed verdicts per variant; each of these depends
    /// on the number of variants (`report::html::Caps`), the plan's, which the report's are.
    pub fn for_plan(plan: &super::Plan) -> StorePolicy {
        // Every unit passes: only the pairing keys of rule 2 choose, and the page's selection
        // is run over the plan's units in the report's order, one borrowed row at a time (no
        // sample or model per unit: a plan of 280,000 units took ~350 MiB that way).
        static NO_SCORES: BTreeMap<String, f64> = BTreeMap::new();
        static NO_PARAMS: BTreeMap<String, serde_json::Value> = BTreeMap::new();
        static NO_COUNTS: BTreeMap<String, u64> = BTreeMap::new();
        let row = |index: usize| {
            let (trace_id, variant, eval, sample, repeat) = plan.names(index);
            crate::record::Row {
                unit_id: "",
                trace_id,
                variant,
                eval,
                sample,
                params: crate::record::Entries::Map(&NO_PARAMS),
                repeat,
                scores: crate::record::Entries::Map(&NO_SCORES),
                passed: Some(true),
                tokens: Default::default(),
                cost_usd: Default::default(),
                compactions: crate::record::Entries::Map(&NO_COUNTS),
                latency_ms: 0,
                error: None,
                evidence: &serde_json::Value::Null,
                timeline: &[],
                summaries: &[],
            }
        };
        let mut select = crate::report::html::Select::default();
        for (i, index) in plan.report_order().enumerate() {
            select.first(i, &row(index));
        }
        select.keys_chosen(plan.variants.len());
        for (i, index) in plan.report_order().enumerate() {
            select.second(i, &row(index));
        }
        let (chosen, _) = select.finish();
        let chosen: HashSet<usize> = chosen.into_iter().collect();
        let shown = plan
            .report_order()
            .enumerate()
            .filter(|(i, _)| chosen.contains(i))
            .map(|(_, index)| plan.id(index))
            .collect();
        let caps = Caps::for_variants(plan.variants.len());
        StorePolicy::Kept {
            shown,
            baseline: (plan.variants.len() > 1).then(|| plan.baseline.clone()),
            variants: plan.variants.len(),
            fails: Arc::new(FailWindow::new(caps.failed)),
            problems: Arc::new(ProblemWindow::new(caps.flagged)),
        }
    }

    /// [`StorePolicy::route`] of the sample `out` will make for `unit`, from the few fields
    /// the decision reads (the unit's thread decides; the sample is made on the dispatcher's).
    pub fn route_output(&self, unit: &super::Unit, out: &super::UnitOutput) -> Route {
        if matches!(self, StorePolicy::Dirs) {
            return Route::Dir;
        }
        let mut probe = Sample::builder()
            .unit_id(&unit.id)
            .variant(&*unit.variant)
            .build();
        probe.passed = out.passed;
        probe.error = out.error.clone();
        probe.scores = out.scores.clone();
        probe.compactions = out.compactions.clone();
        let route = self.route(&probe);
        let StorePolicy::Kept {
            fails,
            baseline,
            problems,
            shown,
            ..
        } = self
        else {
            return route;
        };
        let status = Status::of(&probe.row());
        let is_baseline = baseline.as_deref() == Some(&*unit.variant);
        match route {
            // An errored unit is kept anyway. A flagged one takes a place among the first ones
            // of its variant the page shows; one of a key the page does not show with enough
            // flagged units of its variant before it is not shown: not written (its marker
            // record says so), unless it is a baseline's, which the page may still show beside
            // a failed verdict of its key: held like any other baseline store.
            // A flagged unit that may still be shown waits in memory until that is decided
            // ([`WaitingStores`]; a baseline's goes to its directory: the page may also show
            // it beside a failed verdict).
            Route::Dir if status == Status::Error => Route::Dir,
            Route::Dir if status == Status::Flagged => {
                let may_show = problems.may_show(problem_key(unit));
                if shown.contains(&unit.id) {
                    Route::Dir
                } else if may_show {
                    if is_baseline {
                        Route::Dir
                    } else {
                        Route::Wait
                    }
                } else if is_baseline {
                    Route::Hold
                } else {
                    Route::Skip
                }
            }
            // A failed verdict with enough failed verdicts of its variant before it is not
            // shown: not written (its marker record says so).
            // (A baseline's failed verdict is also shown beside another variant's shown
            // failure of its key, so it stays undecided.)
            Route::Pack if !is_baseline => {
                let key = (
                    unit.trace_id.clone(),
                    unit.eval.clone(),
                    unit.sample.clone(),
                    unit.repeat,
                );
                if fails.may_show(&unit.variant, key) {
                    Route::Pack
                } else {
                    Route::Skip
                }
            }
            route => route,
        }
    }

    /// Where the store of the unit that recorded `sample` goes. Pruning keeps every unit that
    /// errored, and the units of the keys report.html shows: those go to their directory at
    /// once; so does a flagged unit, which the page shows if it is among the first flagged
    /// ones of its variant (which only the whole run tells: [`StorePolicy::route_output`] skips
    /// the ones surely past them, pruning removes the others). A failed verdict is kept only among the first few of its variant,
    /// so it goes to the pack; so does a baseline's store when its key's other units are not
    /// all known to this process.
    pub fn route(&self, sample: &Sample) -> Route {
        let status = Status::of(&sample.row());
        match self {
            StorePolicy::Dirs => Route::Dir,
            StorePolicy::All if status <= Status::Flagged => Route::Dir,
            StorePolicy::All => Route::Pack,
            StorePolicy::Kept {
                shown, baseline, ..
            } => {
                if status <= Status::Flagged || shown.contains(&sample.unit_id) {
                    Route::Dir
                } else if status == Status::Fail {
                    Route::Pack
                } else if baseline.as_deref() == Some(sample.variant.as_str()) {
                    Route::Hold
                } else {
                    Route::Skip
                }
            }
        }
    }

    /// Whether the store of the unit that recorded `sample` is written (now or later).
    pub fn wants(&self, sample: &Sample) -> bool {
        self.route(sample) != Route::Skip
    }
}

/// A held store: its unit's id and files.
pub type HeldStore = (String, Arc<crate::engine::store::StoreFiles>);

/// The baseline stores the runner holds ([`Route::Hold`]) until every unit of their pairing key
/// has ended: a key with a failed verdict sends its baseline's store to the pack file (pruning
/// may show it), any other drops it (its marker record says it was not written). At most
/// `cap` stores are held (the oldest go to the pack beyond that), so a plan whose variants of
/// a key run far apart holds no more than about its units in flight; whatever is still held
/// when dispatching ends (units not run: budget, interrupt) goes to the pack.
#[derive(Debug, Default)]
pub struct HeldStores {
    /// Units of a key (0: nothing is held, nothing tracked).
    variants: usize,
    cap: usize,
    /// Keys with some but not all units ended.
    open: FxHashMap<u64, OpenKey>,
    /// Held stores by age: sequence number → key.
    order: BTreeMap<u64, u64>,
    next: u64,
}

#[derive(Debug, Default)]
struct OpenKey {
    ended: usize,
    failed: bool,
    store: Option<(u64, HeldStore)>,
}

impl HeldStores {
    /// What `policy` holds, at most `cap` stores at once.
    pub fn new(policy: &StorePolicy, cap: usize) -> HeldStores {
        let variants = match policy {
            StorePolicy::Kept {
                baseline: Some(_),
                variants,
                ..
            } => *variants,
            _ => 0,
        };
        HeldStores {
            variants,
            cap: cap.max(1),
            ..HeldStores::default()
        }
    }

    /// Stores held now.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The unit that recorded `sample` ended, holding `store` when routed [`Route::Hold`];
    /// `route`: where its own store went (a failed verdict routed [`Route::Skip`] is past the
    /// first few of its variant, so report.html shows neither it nor, for it, its key's
    /// baseline). Returns the stores to append to the pack file now.
    pub fn ended(
        &mut self,
        sample: &Sample,
        store: Option<HeldStore>,
        route: Option<Route>,
    ) -> Vec<HeldStore> {
        let mut out = Vec::new();
        if self.variants == 0 {
            out.extend(store);
            return out;
        }
        let key = sample.pair_hash();
        let entry = self.open.entry(key).or_default();
        entry.ended += 1;
        entry.failed |= route != Some(Route::Skip) && Status::of(&sample.row()) == Status::Fail;
        if let Some(store) = store {
            let seq = self.next;
            self.next += 1;
            if let Some((old, prev)) = entry.store.replace((seq, store)) {
                self.order.remove(&old);
                out.push(prev);
            }
            self.order.insert(seq, key);
        }
        if entry.ended >= self.variants {
            let done = self.open.remove(&key).unwrap_or_default();
            if let Some((seq, store)) = done.store {
                self.order.remove(&seq);
                if done.failed {
                    out.push(store);
                }
            }
        }
        while self.order.len() > self.cap {
            let Some((_, key)) = self.order.pop_first() else {
                break;
            };
            if let Some((_, store)) = self.open.get_mut(&key).and_then(|k| k.store.take()) {
                out.push(store);
            }
        }
        out
    }

    /// Every store still held (dispatching ended before all units of their key ran).
    pub fn rest(self) -> Vec<HeldStore> {
        let mut open = self.open;
        self.order
            .into_values()
            .filter_map(|key| open.get_mut(&key).and_then(|k| k.store.take()))
            .map(|(_, s)| s)
            .collect()
    }
}

/// What [`prune`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Stores left in place (on disk; a store to keep that the run did not write is
    /// `missing`, not kept).
    pub kept: usize,
    /// Stores removed (including those of units that have no sample, e.g. interrupted ones):
    /// one a unit, whatever it left (a directory, records of the pack, a marker).
    pub removed: usize,
    /// Bytes of the files removed.
    pub bytes: u64,
    /// Stores to keep that the run did not write (not in `kept`): the selection changed
    /// after the unit ended, e.g. because units of an interrupted run have no sample.
    pub missing: usize,
}

/// Bytes of the regular files under `path` (symbolic links are not followed).
pub fn dir_bytes(path: &Path) -> u64 {
    walkdir::WalkDir::new(path)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// Remove the stores of `dir` whose unit the report of `model` does not show in full (and
/// that did not fail); with `dry_run`, only count what would go. A missing `stores/` is
/// nothing to do.
pub fn prune(dir: &RunDir, model: &ReportModel, dry_run: bool) -> std::io::Result<Pruned> {
    // (How many flagged units and failed verdicts the page does not show is the page's count,
    // `ReportModel::left_out`, not one of the stores seen here: a unit may have left none.)
    let keep = shown_in_full(model)?;
    // What is removed, by name: a unit whose store waited or was held leaves a marker as it
    // ended and then maybe its directory or a record too, and is one store.
    let mut removed = std::collections::BTreeSet::new();
    let stores = dir.stores_dir();
    let mut out = Pruned::default();
    let entries = match std::fs::read_dir(&stores) {
        Ok(e) => Some(e),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    // Kept stores already in their directory (written as their unit ended, or by an earlier
    // prune).
    let mut in_dirs = std::collections::BTreeSet::new();
    for entry in entries.into_iter().flatten() {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path)?;
        if keep.contains(name.as_ref()) {
            out.kept += 1;
            if meta.is_dir() {
                in_dirs.insert(name.into_owned());
            }
            continue;
        }
        removed.insert(name.into_owned());
        if meta.is_dir() {
            out.bytes += dir_bytes(&path);
            if !dry_run {
                std::fs::remove_dir_all(&path)?;
            }
        } else {
            // A stray file or a link: removed itself, never followed.
            out.bytes += meta.len();
            if !dry_run {
                std::fs::remove_file(&path)?;
            }
        }
    }
    // The stores held in memory: the kept ones unpacked (a later record of a unit replaces an
    // earlier one: a resumed unit ran again), the pack file removed.
    let pack = dir.stores_pack();
    let mut unpacked = std::collections::BTreeSet::new();
    let mut unwritten = std::collections::BTreeSet::new();
    for_each_pack(&pack, |unit, read| {
        if read.is_empty() {
            // A store the run did not write.
            if keep.contains(unit) {
                unwritten.insert(unit.to_string());
            } else {
                removed.insert(unit.to_string());
            }
        } else if in_dirs.contains(unit) {
            // Its directory came later (a unit that runs again starts with its directory
            // removed, so a directory left is the last run's): the record is stale.
        } else if keep.contains(unit) {
            if unpacked.insert(unit.to_string()) {
                out.kept += 1;
            }
            if !dry_run {
                unpack_into(&stores.join(unit), &read.read()?, &pack)?;
            }
        } else {
            removed.insert(unit.to_string());
            out.bytes += read.len();
        }
        Ok(())
    })?;
    out.removed = removed.len();
    out.missing = unwritten
        .difference(&unpacked)
        .filter(|u| !in_dirs.contains(*u))
        .count();
    if !dry_run {
        match std::fs::remove_file(&pack) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        if out.kept == 0 {
            let _ = std::fs::remove_dir(&stores);
        }
    }
    Ok(out)
}

/// Unpack one record of the pack file `pack` into the store directory `dir` (replacing it).
fn unpack_into(dir: &Path, bytes: &[u8], pack: &Path) -> std::io::Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    unpack_bytes(bytes, &pack.display().to_string(), dir).map_err(std::io::Error::other)
}

/// Unpack every store of the run's pack file and remove it (`run --keep-stores`: every store is
/// kept as a directory). Returns how many records were unpacked.
pub fn unpack_all(dir: &RunDir) -> std::io::Result<usize> {
    let pack = dir.stores_pack();
    let stores = dir.stores_dir();
    let mut n = 0;
    for_each_pack(&pack, |unit, read| {
        if !read.is_empty() {
            unpack_into(&stores.join(unit), &read.read()?, &pack)?;
            n += 1;
        }
        Ok(())
    })?;
    match std::fs::remove_file(&pack) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RunInfo;

    /// Two variants, baseline `base`; unit `shown` is of a key report.html shows.
    fn shown_and_base() -> StorePolicy {
        StorePolicy::Kept {
            shown: ["shown".to_string()].into_iter().collect(),
            baseline: Some("base".into()),
            variants: 2,
            fails: Arc::default(),
            problems: Arc::default(),
        }
    }

    fn sample_of(id: &str, variant: &str, passed: bool) -> Sample {
        Sample::builder()
            .unit_id(id)
            .variant(variant)
            .passed(passed)
            .build()
    }

    #[test]
    fn the_policy_writes_problems_shown_keys_and_the_baseline() {
        let policy = shown_and_base();
        let unit = sample_of;
        assert!(policy.wants(&unit("shown", "b", true)));
        assert!(policy.wants(&unit("x", "base", true)), "baseline");
        assert!(policy.wants(&unit("x", "b", false)), "failed verdict");
        let mut flagged = unit("x", "b", true);
        flagged.compactions.insert("futile".into(), 1);
        assert!(policy.wants(&flagged));
        let mut errored = unit("x", "b", true);
        errored.error = Some(crate::record::UnitError {
            kind: "eval".into(),
            message: "x".into(),
        });
        assert!(policy.wants(&errored));
        assert!(
            !policy.wants(&unit("x", "b", true)),
            "a passed unit not shown"
        );
        assert!(StorePolicy::All.wants(&unit("x", "b", true)));
        // The unit's thread decides from its output: the same as from the sample it makes.
        let plan_unit = crate::runner::Unit::for_test;
        let mut outs = Vec::new();
        for passed in [Some(true), Some(false), None] {
            for (score, futile) in [(0.0, 0), (1.0, 0), (0.0, 2)] {
                let mut out = crate::runner::UnitOutput {
                    passed,
                    ..Default::default()
                };
                out.scores.insert("summary_failures".into(), score);
                out.compactions.insert("futile".into(), futile);
                outs.push(out);
            }
        }
        outs.push(crate::runner::UnitOutput::failed("eval", "x"));
        let mut wanted = 0;
        for (id, variant) in [("shown", "b"), ("x", "base"), ("x", "b")] {
            let u = plan_unit(id, variant);
            for out in &outs {
                let r = policy.route_output(&u, out);
                wanted += usize::from(r != Route::Skip);
                // (A flagged unit that may be shown waits in memory: a directory in the end.)
                assert_eq!(
                    if r == Route::Wait { Route::Dir } else { r },
                    policy.route(&out.clone().into_sample(&u, 0)),
                    "{id} {variant} {out:?}"
                );
            }
        }
        assert!(0 < wanted && wanted < 3 * outs.len());
    }

    #[test]
    fn routes_kept_stores_to_their_directory_and_undecided_ones_to_the_pack() {
        let policy = shown_and_base();
        let unit = sample_of;
        let mut flagged = unit("x", "b", true);
        flagged.compactions.insert("futile".into(), 1);
        let mut errored = unit("x", "base", true);
        errored.error = Some(crate::record::UnitError {
            kind: "eval".into(),
            message: "x".into(),
        });
        assert_eq!(policy.route(&unit("shown", "b", true)), Route::Dir);
        assert_eq!(policy.route(&flagged), Route::Dir);
        assert_eq!(policy.route(&errored), Route::Dir, "even the baseline's");
        assert_eq!(
            policy.route(&unit("x", "b", false)),
            Route::Pack,
            "a failed verdict is kept only among the first few"
        );
        assert_eq!(policy.route(&unit("x", "base", false)), Route::Pack);
        assert_eq!(policy.route(&unit("x", "base", true)), Route::Hold);
        assert_eq!(policy.route(&unit("x", "b", true)), Route::Skip);
        // Resumed or sharded: every store, the certainly kept ones as directories.
        assert_eq!(StorePolicy::All.route(&flagged), Route::Dir);
        assert_eq!(StorePolicy::All.route(&unit("x", "b", true)), Route::Pack);
        // --keep-stores: every store is a directory.
        assert_eq!(StorePolicy::Dirs.route(&unit("x", "b", true)), Route::Dir);
    }

    #[test]
    fn a_failed_verdict_after_the_first_few_of_its_variant_is_not_written() {
        let w = FailWindow::default();
        let key = |t: &str, r: u32| -> FailKey { (t.into(), "needle".into(), "s".into(), r) };
        // Failures arrive out of order: each may be shown while fewer than five come before it.
        for t in ["t5", "t3", "t9", "t1", "t7"] {
            assert!(w.may_show("v", key(t, 0)), "{t}");
        }
        assert!(!w.may_show("v", key("t9", 1)), "five failures before it");
        assert!(
            w.may_show("v", key("t2", 0)),
            "before t9: it may be among the first five"
        );
        // t9 is now sixth: a failure after it is not shown, one between t5 and t7 still may be.
        assert!(!w.may_show("v", key("t8", 0)));
        assert!(w.may_show("v", key("t6", 0)));
        assert!(!w.may_show("v", key("t7", 1)), "t1 t2 t3 t5 t6 come before");
        // Repeats order after the sample they repeat; variants are counted apart.
        assert!(w.may_show("v", key("t1", 1)));
        assert!(w.may_show("other", key("t9", 9)));
        // Through the policy: past the first five, a failed verdict of a variant is skipped,
        // one of the baseline is not (report.html shows it beside another variant's failure).
        let policy = StorePolicy::Kept {
            shown: HashSet::new(),
            baseline: Some("base".into()),
            variants: 2,
            fails: Arc::default(),
            problems: Arc::default(),
        };
        let failed = crate::runner::UnitOutput {
            passed: Some(false),
            ..Default::default()
        };
        for variant in ["base", "b"] {
            let routes: Vec<Route> = (0..7)
                .map(|i| {
                    let u = crate::runner::Unit {
                        index: i,
                        trace_id: format!("t{i}").into(),
                        trace: i,
                        ..crate::runner::Unit::for_test(&format!("{variant}{i}"), variant)
                    };
                    policy.route_output(&u, &failed)
                })
                .collect();
            let packed = routes.iter().filter(|r| **r == Route::Pack).count();
            assert_eq!(packed, if variant == "base" { 7 } else { 5 }, "{variant}");
        }
        // The same order as report.html's selection: the first five failures of the variant in
        // the sorted rows are exactly the keys the window said may be shown and kept.
        let first = w.first.lock().unwrap();
        let kept: Vec<String> = first["v"]
            .iter()
            .map(|k| format!("{}/{}", k.0, k.3))
            .collect();
        assert_eq!(kept, ["t1/0", "t1/1", "t2/0", "t3/0", "t5/0"]);
    }

    #[test]
    fn a_flagged_unit_past_the_pages_cap_is_not_written() {
        let policy = StorePolicy::Kept {
            shown: ["shown".to_string()].into_iter().collect(),
            baseline: Some("base".into()),
            variants: 2,
            fails: Arc::default(),
            problems: Arc::default(),
        };
        let flagged = {
            let mut out = crate::runner::UnitOutput {
                passed: Some(true),
                ..Default::default()
            };
            out.compactions.insert("futile".into(), 1);
            out
        };
        let unit = |id: &str, variant: &str, rank: usize, t: usize| crate::runner::Unit {
            trace_id: format!("t{t:04}").into(),
            variant_index: rank,
            ..crate::runner::Unit::for_test(id, variant)
        };
        let route = |id: &str, variant: &str, rank: usize, t: usize, out| {
            policy.route_output(&unit(id, variant, rank, t), out)
        };
        // Flagged units end out of the report's order: each is written while fewer than the
        // page's cap of flagged units of its variant are known before it.
        let cap = MAX_FLAGGED_PER_VARIANT;
        for t in (100..100 + cap).rev() {
            assert_eq!(route("x", "b", 1, t, &flagged), Route::Wait, "t{t}");
        }
        assert_eq!(
            route("x", "b", 1, 100 + cap, &flagged),
            Route::Skip,
            "past the cap"
        );
        assert_eq!(route("x", "b", 1, 50, &flagged), Route::Wait, "before them");
        // t50 came before: the last of the first ones is now past the cap.
        assert_eq!(route("x", "b", 1, 99 + cap, &flagged), Route::Skip);
        assert_eq!(route("x", "b", 1, 98 + cap, &flagged), Route::Wait);
        // Kept anyway: a unit that errored, one of a key the page shows. Neither takes a place
        // among the first flagged units of the variant.
        let errored = crate::runner::UnitOutput::failed("eval", "x");
        for t in 0..5 {
            assert_eq!(route("x", "b", 1, t, &errored), Route::Dir);
        }
        assert_eq!(route("x", "b", 1, 98 + cap, &flagged), Route::Wait);
        assert_eq!(route("shown", "b", 1, 900, &flagged), Route::Dir);
        // Another variant has its own cap, in its own order.
        for t in (900..900 + cap).rev() {
            assert_eq!(route("x", "c", 2, t, &flagged), Route::Wait, "c t{t}");
        }
        assert_eq!(route("x", "c", 2, 900 + cap, &flagged), Route::Skip);
        assert_eq!(route("x", "c", 2, 0, &flagged), Route::Wait, "first of c");
        assert_eq!(
            route("x", "b", 1, 98 + cap, &flagged),
            Route::Wait,
            "b as it was"
        );
        // A baseline's flagged unit that may be shown goes to its directory (the page may also
        // show it beside a failed verdict of its key); past the cap it is held.
        for t in 0..cap {
            assert_eq!(route("x", "base", 0, t, &flagged), Route::Dir, "base t{t}");
        }
        assert_eq!(route("x", "base", 0, cap, &flagged), Route::Hold);
        // Resumed, sharded or --keep-stores: every flagged store goes to its directory.
        for policy in [StorePolicy::All, StorePolicy::Dirs] {
            assert_eq!(
                policy.route_output(&unit("x", "b", 1, 999), &flagged),
                Route::Dir
            );
        }
    }

    #[test]
    fn the_window_skips_only_flagged_units_the_page_does_not_show() {
        use crate::report::html::problems_shown;
        // Three variants' units in the report's order, some flagged, some errored, ending in a
        // shuffled order: no unit the page shows (`problems_shown`, its one rule) is skipped,
        // and in the end the window holds exactly the flagged units it shows. The same with 30
        // variants, whose cap per variant is smaller (the window of `StorePolicy::for_plan`).
        for n in [3, 30] {
            let cap = Caps::for_variants(n).flagged;
            let mut units: Vec<(ProblemKey, Status)> = Vec::new();
            for v in 0..n {
                for t in 0..150usize {
                    let status = match (t * 7 + v * 3) % 5 {
                        0 | 1 => Status::Flagged,
                        2 if v == 1 => Status::Error,
                        _ => Status::Pass,
                    };
                    units.push((
                        (v, format!("t{t:03}").into(), "n".into(), "s".into(), 0),
                        status,
                    ));
                }
            }
            let names: Vec<String> = (0..n).map(|v| format!("v{v}")).collect();
            let (shown, _) =
                problems_shown(units.iter().map(|(k, st)| (names[k.0].as_str(), *st)), n);
            let mut order: Vec<usize> = (0..units.len()).collect();
            let mut x: u64 = 7;
            for i in (1..order.len()).rev() {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                order.swap(i, (x >> 33) as usize % (i + 1));
            }
            let window = ProblemWindow::new(cap);
            let mut skipped = Vec::new();
            for &i in &order {
                if units[i].1 == Status::Flagged && !window.may_show(units[i].0.clone()) {
                    skipped.push(i);
                }
            }
            assert!(skipped.iter().all(|i| !shown.contains(i)), "{skipped:?}");
            assert!(
                skipped.len() > 10,
                "the shuffle skips some: {}",
                skipped.len()
            );
            let first = window.first.lock().unwrap();
            let kept: Vec<usize> = (0..units.len())
                .filter(|i| {
                    first
                        .get(&units[*i].0 .0)
                        .is_some_and(|f| f.contains(&units[*i].0))
                })
                .collect();
            let flagged_shown: Vec<usize> = shown
                .into_iter()
                .filter(|&i| units[i].1 == Status::Flagged)
                .collect();
            assert_eq!(kept, flagged_shown, "{n} variants");
            assert_eq!(kept.len(), n * cap);
        }
        assert_eq!(Caps::for_variants(3).flagged, MAX_FLAGGED_PER_VARIANT);
    }

    #[test]
    fn a_waiting_store_is_dropped_once_past_the_cap_or_written_beyond_the_number_held() {
        let window = ProblemWindow::default();
        let key = |v: usize, t: usize| -> ProblemKey {
            (v, format!("t{t:04}").into(), "needle".into(), "s".into(), 0)
        };
        let store = |t: usize| -> HeldStore {
            let mut f = BTreeMap::new();
            f.insert("a".to_string(), b"x".to_vec().into());
            (format!("u{t}"), Arc::new(f))
        };
        let flagged = |t: usize| {
            let mut s = Sample::builder()
                .unit_id(format!("u{t}"))
                .trace(format!("t{t:04}"))
                .passed(true)
                .build();
            s.compactions.insert("futile".into(), 1);
            s
        };
        let ids = |v: Vec<HeldStore>| v.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
        let mut waiting = WaitingStores::new(2);
        // Late keys wait: not yet past the cap (nothing before them known).
        for t in [900, 901] {
            assert!(window.may_show(key(1, t)));
            waiting.hold(key(1, t), store(t));
            assert!(waiting.ended(&flagged(t), &window).is_empty());
        }
        // A third: beyond the number held, the likeliest to be shown is written, the one with
        // the fewest flagged units of its variant known before it...
        assert!(window.may_show(key(1, 500)));
        waiting.hold(key(1, 500), store(500));
        assert_eq!(ids(waiting.ended(&flagged(500), &window)), ["u500"]);
        // ... whatever its variant's place in the report's order (900 has 500 before it).
        assert!(window.may_show(key(2, 10)));
        waiting.hold(key(2, 10), store(10));
        assert_eq!(ids(waiting.ended(&flagged(10), &window)), ["u10"]);
        // The cap's number of flagged units of their variant before them end: dropped, not
        // written. With 500 and 18 more, 901 is past the first 20 of variant 1.
        for t in 0..MAX_FLAGGED_PER_VARIANT - 2 {
            assert!(window.may_show(key(1, t)));
        }
        assert!(window.is_past(&key(1, 901)) && !window.is_past(&key(1, 900)));
        assert_eq!(waiting.len(), 2);
        // (A unit that is not flagged moves nothing: a passed one, an errored one.)
        let mut passed = flagged(1);
        passed.compactions.clear();
        assert!(waiting.ended(&passed, &window).is_empty());
        passed.error = Some(crate::record::UnitError {
            kind: "eval".into(),
            message: "x".into(),
        });
        assert!(waiting.ended(&passed, &window).is_empty());
        assert_eq!(waiting.len(), 2);
        assert!(waiting.ended(&flagged(1), &window).is_empty());
        assert_eq!(waiting.len(), 1, "901 dropped");
        // One more of variant 1 before 900: 900 is past too. Variant 2's window is its own.
        assert!(window.may_show(key(1, 800)));
        assert!(waiting.ended(&flagged(800), &window).is_empty());
        assert!(waiting.is_empty(), "900 dropped");
        assert!(!window.is_past(&key(2, 900)));
        // Whatever still waits when dispatching ends is written (pruning decides).
        waiting.hold(key(1, 950), store(950));
        assert_eq!(ids(waiting.rest()), ["u950"]);
    }

    #[test]
    fn pruning_removes_the_flagged_stores_past_the_pages_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::new(tmp.path().join("run"));
        let packs = crate::engine::store::PackFile::new(dir.stores_pack());
        let mut samples = Vec::new();
        // Flagged units of two variants, 8 past the cap of each. Each waited in memory, so it
        // left a marker as it ended; then 5 of those past the cap were written to their
        // directory (as dispatching ended) and one to the pack (as a held baseline's is), 2
        // not: each still one store.
        let n = MAX_FLAGGED_PER_VARIANT + 8;
        for v in ["a", "b"] {
            for i in 0..n {
                let id = format!("{v}{i:04}");
                packs.skip(&id).unwrap();
                if i < n - 3 {
                    std::fs::create_dir_all(dir.unit_store(&id)).unwrap();
                    std::fs::write(dir.unit_store(&id).join("a"), "x").unwrap();
                } else if i == n - 1 {
                    let mut files = BTreeMap::new();
                    files.insert("a".to_string(), b"x".to_vec().into());
                    packs.append(&id, &files).unwrap();
                }
                let mut s = Sample::builder()
                    .unit_id(&id)
                    .variant(v)
                    .trace(format!("t{i:04}"))
                    .passed(true)
                    .build();
                s.compactions.insert("futile".into(), 1);
                samples.push(s);
            }
        }
        packs.flush().unwrap();
        let mut info = RunInfo::new("r");
        info.variants = vec!["a".into(), "b".into()];
        let model = ReportModel::build(&info, samples);
        let p = prune(&dir, &model, false).unwrap();
        assert_eq!((p.kept, p.removed, p.missing), (2 * (n - 8), 16, 0));
        assert_eq!(model.left_out().flagged, 16, "what the closing lines say");
        let last = MAX_FLAGGED_PER_VARIANT - 1;
        for v in ["a", "b"] {
            assert!(dir.unit_store(&format!("{v}{last:04}")).exists());
            assert!(!dir.unit_store(&format!("{v}{:04}", last + 1)).exists());
        }
    }

    #[test]
    fn pruning_removes_the_failed_verdicts_past_the_pages_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::new(tmp.path().join("run"));
        let packs = crate::engine::store::PackFile::new(dir.stores_pack());
        // Two variants on 40 traces, each unit leaving a marker as it ended; both fail their
        // verdict on traces 20-29, outside the keys the page shows (the first dozen traces'):
        // the page shows the first 5 failures of each, and the other 5 are not kept.
        let mut samples = Vec::new();
        for v in ["a", "b"] {
            for t in 0..40 {
                let id = format!("{v}{t:04}");
                packs.skip(&id).unwrap();
                samples.push(
                    Sample::builder()
                        .unit_id(&id)
                        .variant(v)
                        .trace(format!("t{t:04}"))
                        .passed(!(20..30).contains(&t))
                        .build(),
                );
            }
        }
        packs.flush().unwrap();
        let mut info = RunInfo::new("r");
        info.variants = vec!["a".into(), "b".into()];
        let model = ReportModel::build(&info, samples);
        let p = prune(&dir, &model, true).unwrap();
        // Every unit but those shown left a marker, removed: the failed verdicts past the cap
        // among them (which the closing lines count, as the page does).
        let shown = 2 * (12 + MAX_FAILED_PER_VARIANT);
        assert_eq!(p.removed, 80 - shown);
        let left_out = model.left_out();
        assert_eq!(
            (left_out.flagged, left_out.failed),
            (0, 2 * (10 - MAX_FAILED_PER_VARIANT))
        );
        assert_eq!(
            p.missing,
            2 * (12 + MAX_FAILED_PER_VARIANT),
            "shown, not written"
        );
    }

    #[test]
    fn a_held_baseline_store_goes_to_the_pack_only_when_its_key_failed() {
        let policy = StorePolicy::Kept {
            shown: HashSet::new(),
            baseline: Some("base".into()),
            variants: 3,
            fails: Arc::default(),
            problems: Arc::default(),
        };
        let sample = |variant: &str, key: &str, passed: bool| {
            Sample::builder()
                .unit_id(format!("{variant}-{key}"))
                .variant(variant)
                .trace("t")
                .eval("needle")
                .sample(key)
                .passed(passed)
                .build()
        };
        let files = |id: &str| -> HeldStore {
            let mut f = BTreeMap::new();
            f.insert("a".to_string(), id.as_bytes().to_vec().into());
            (id.to_string(), Arc::new(f))
        };
        let ids = |v: Vec<HeldStore>| v.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
        let mut held = HeldStores::new(&policy, 8);
        // Key k1 passes everywhere: its baseline's store is dropped when the key ends.
        assert!(held
            .ended(&sample("base", "k1", true), Some(files("base-k1")), None)
            .is_empty());
        assert_eq!(held.len(), 1);
        assert!(held.ended(&sample("b", "k1", true), None, None).is_empty());
        assert!(held.ended(&sample("c", "k1", true), None, None).is_empty());
        assert!(held.is_empty(), "dropped");
        // Key k2 fails in variant c, which ends first: the baseline goes to the pack at the end.
        assert!(held.ended(&sample("c", "k2", false), None, None).is_empty());
        assert!(held
            .ended(&sample("base", "k2", true), Some(files("base-k2")), None)
            .is_empty());
        assert_eq!(
            ids(held.ended(&sample("b", "k2", true), None, None)),
            ["base-k2"]
        );
        // Key k6 fails in variant c past the first five of c (its store routed Skip): report.html
        // shows neither that failure nor, beside it, the baseline: dropped.
        assert!(held
            .ended(&sample("c", "k6", false), None, Some(Route::Skip))
            .is_empty());
        assert!(held
            .ended(&sample("base", "k6", true), Some(files("base-k6")), None)
            .is_empty());
        assert!(held.ended(&sample("b", "k6", true), None, None).is_empty());
        assert!(held.is_empty(), "dropped");
        // Beyond the cap, the oldest held store goes to the pack at once.
        let mut small = HeldStores::new(&policy, 2);
        for k in ["k3", "k4", "k5"] {
            let out = small.ended(
                &sample("base", k, true),
                Some(files(&format!("base-{k}"))),
                None,
            );
            assert_eq!(ids(out), if k == "k5" { vec!["base-k3"] } else { vec![] });
        }
        assert_eq!(small.len(), 2);
        // Keys that did not end (units not run) go to the pack when dispatching ends.
        assert_eq!(ids(small.rest()), ["base-k4", "base-k5"]);
        // A policy that holds nothing hands any store straight back.
        let mut none = HeldStores::new(&StorePolicy::All, 8);
        assert_eq!(
            ids(none.ended(&sample("base", "k1", true), Some(files("x")), None)),
            ["x"]
        );
    }

    #[test]
    fn keeps_the_shown_stores_and_removes_the_rest_without_following_links() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("precious"), "x").unwrap();
        let dir = RunDir::new(tmp.path().join("run"));
        let mut samples = Vec::new();
        for i in 0..30 {
            let id = format!("u{i}");
            std::fs::create_dir_all(dir.unit_store(&id).join("large_tool_results")).unwrap();
            std::fs::write(dir.unit_store(&id).join("large_tool_results/a"), "12345").unwrap();
            samples.push(
                Sample::builder()
                    .unit_id(&id)
                    .trace(format!("t{i:02}"))
                    .passed(true)
                    .build(),
            );
        }
        samples[29].error = Some(crate::record::UnitError {
            kind: "eval".into(),
            message: "x".into(),
        });
        // Units whose store was held in memory: one record each in the run's pack file.
        let packs = crate::engine::store::PackFile::new(dir.stores_pack());
        for i in 30..34 {
            let id = format!("u{i}");
            let mut files = std::collections::BTreeMap::new();
            files.insert("large_tool_results/a".to_string(), b"12345".to_vec().into());
            packs.append(&id, &files).unwrap();
            let mut s = Sample::builder()
                .unit_id(&id)
                .trace(format!("t{i:02}"))
                .passed(true)
                .build();
            if i == 33 {
                s.error = Some(crate::record::UnitError {
                    kind: "eval".into(),
                    message: "x".into(),
                });
            }
            samples.push(s);
        }
        // Stores the run did not write: a failed unit's (to keep: missing) and a passed one's.
        for (i, failed) in [(34, true), (35, false)] {
            let id = format!("u{i}");
            packs.skip(&id).unwrap();
            let mut s = Sample::builder()
                .unit_id(&id)
                .trace(format!("t{i:02}"))
                .passed(!failed)
                .build();
            if failed {
                s.error = Some(crate::record::UnitError {
                    kind: "eval".into(),
                    message: "x".into(),
                });
            }
            samples.push(s);
        }
        // A failed unit whose store went to its directory as it ended, after a stale record
        // and a marker of an earlier attempt: counted once, kept as written, not missing.
        std::fs::create_dir_all(dir.unit_store("u36")).unwrap();
        std::fs::write(dir.unit_store("u36").join("a"), "fresh").unwrap();
        let mut stale = std::collections::BTreeMap::new();
        stale.insert("a".to_string(), b"stale".to_vec().into());
        packs.append("u36", &stale).unwrap();
        packs.skip("u36").unwrap();
        let mut s = Sample::builder()
            .unit_id("u36")
            .trace("t36")
            .passed(true)
            .build();
        s.error = Some(crate::record::UnitError {
            kind: "eval".into(),
            message: "x".into(),
        });
        samples.push(s);
        // A unit with no sample (interrupted) and a link out of the run.
        std::fs::create_dir_all(dir.unit_store("orphan")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.unit_store("link")).unwrap();
        let model = ReportModel::build(&RunInfo::new("r"), samples);
        let keep = shown_in_full(&model).unwrap();

        let dry = prune(&dir, &model, true).unwrap();
        // Kept: on disk; u34 is to keep but was not written (missing, not kept).
        assert_eq!(dry.kept, keep.len() - 1);
        assert_eq!(dry.kept + dry.removed, 38);
        assert_eq!(dry.missing, 1, "u34 is kept but was not written");
        assert!(dir.unit_store("u28").exists(), "a dry run removes nothing");

        let done = prune(&dir, &model, false).unwrap();
        assert_eq!(done, dry);
        assert!(done.bytes >= 5, "removed files count: {}", done.bytes);
        assert!(
            dir.unit_store("u29").join("large_tool_results/a").exists(),
            "failed unit"
        );
        assert_eq!(
            std::fs::read(dir.unit_store("u33").join("large_tool_results/a")).unwrap(),
            b"12345",
            "a failed unit's pack is unpacked"
        );
        assert!(!dir.stores_pack().exists(), "the pack file is removed");
        assert_eq!(
            std::fs::read(dir.unit_store("u36").join("a")).unwrap(),
            b"fresh",
            "a directory is never replaced by an older record"
        );
        for id in keep.iter().filter(|id| *id != "u34") {
            assert!(dir.unit_store(id).exists(), "{id}");
        }
        assert!(!dir.unit_store("u34").exists() && !dir.unit_store("u35").exists());
        for gone in ["orphan", "link"] {
            assert!(
                std::fs::symlink_metadata(dir.unit_store(gone)).is_err(),
                "{gone}"
            );
        }
        assert!(
            outside.join("precious").exists(),
            "links are never followed"
        );
    }
}
