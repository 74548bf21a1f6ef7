//! Dispatch: run planned units on a tokio runtime through a [`UnitExecutor`], with a global limit
//! on units in flight and a limit per provider role, journal each finished unit at once, respect
//! the budget, and stop cleanly on interrupt.
//!
//! Executors only turn a [`Unit`] into a [`UnitOutput`]; the dispatcher owns everything the user
//! sees (journal, progress, counts). CPU-bound work inside an executor (import, replay) should go
//! through [`cpu`], which runs it on rayon's pool (all cores) without blocking the runtime.
//! Synchronous work that waits on the network (a replay whose summarizer is a model) goes
//! through [`blocking_io`] instead, on tokio's blocking pool: a rayon thread never waits on the
//! network, so rayon's few threads (one per core) do not cap the requests in flight. A unit
//! that waits on nothing outside the process ([`UnitExecutor::is_offline`]) runs whole on one
//! rayon thread, a few at a time ([`on_one_thread_each`]).
//! A failed unit — an error the executor reports, or a panic — is recorded as a sample with
//! `error` set, and the run goes on.

use super::budget::{Budget, Decision};
use super::plan::Unit;
use super::progress::Progress;
use crate::config::suite::ProviderRole;
use crate::record::journal::{Journal, JournalError};
use crate::record::{CostByRole, Sample, TimelinePoint, TokensByRole, UnitError};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

/// What an executor produces for one unit; the dispatcher adds the unit's identity, latency and
/// schema version to make the [`Sample`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UnitOutput {
    pub scores: BTreeMap<String, f64>,
    pub passed: Option<bool>,
    pub tokens: TokensByRole,
    pub cost_usd: CostByRole,
    pub compactions: BTreeMap<String, u64>,
    pub evidence: serde_json::Value,
    pub timeline: Vec<TimelinePoint>,
    /// Summaries the unit's replay produced (see `record::SummaryRecord`).
    pub summaries: Vec<crate::record::SummaryRecord>,
    /// Set when the unit failed; tokens and cost spent before the failure still count.
    pub error: Option<UnitError>,
    /// The failed unit's error chain below `error.message`, outermost first (not recorded:
    /// `ctxbench run --verbose` prints it as the unit fails).
    pub causes: Vec<String>,
    /// The unit's offload store when it was held in memory (not recorded in the sample): the
    /// runner writes it when it may be kept (`stores::StorePolicy`: to its directory or the
    /// run's pack file).
    pub store: Option<Arc<crate::engine::store::StoreFiles>>,
}

impl UnitOutput {
    /// A failed unit with nothing spent.
    pub fn failed(kind: impl Into<String>, message: impl Into<String>) -> UnitOutput {
        UnitOutput {
            error: Some(UnitError {
                kind: kind.into(),
                message: message.into(),
            }),
            ..UnitOutput::default()
        }
    }

    /// The sample recorded for `unit`.
    pub fn into_sample(self, unit: &Unit, latency_ms: u64) -> Sample {
        Sample {
            schema_version: crate::record::SCHEMA_VERSION,
            unit_id: unit.id.clone(),
            trace_id: unit.trace_id.to_string(),
            variant: unit.variant.to_string(),
            eval: unit.eval.to_string(),
            sample: unit.sample.to_string(),
            params: (*unit.params).clone(),
            repeat: unit.repeat,
            scores: self.scores,
            passed: self.passed,
            tokens: self.tokens,
            cost_usd: self.cost_usd,
            compactions: self.compactions,
            latency_ms,
            error: self.error,
            evidence: self.evidence,
            timeline: self.timeline,
            summaries: self.summaries,
        }
    }
}

/// Per-run facts every unit may need.
#[derive(Debug, Clone, Default)]
pub struct RunContext {
    /// The run directory (executors keep per-unit files, e.g. offload stores, under it).
    pub run_dir: std::path::PathBuf,
    /// `--no-cache`: do not read or write the provider response cache.
    pub no_cache: bool,
    /// No unit's offload store directory existed when the run started (`stores/` was absent):
    /// a unit need not remove a stale one as it starts (a unit runs once a process, so its
    /// directory can only be left by an earlier process). `false` (the default): each unit
    /// removes its directory first, as a resumed unit must.
    pub no_stale_stores: bool,
    /// What units cancelled mid-way (a second Ctrl-C, the grace over) had spent on model calls
    /// ([`CancelledSpend`]).
    pub cancelled: CancelledSpend,
}

/// Units cancelled while running leave here, as their executor is dropped, an error output
/// (kind `interrupted`) with what the calls they made had spent; the run appends them to
/// `samples.replaced.jsonl` (they have no sample: `--resume` runs them again), so the budget of
/// a later resume and the report count that spend.
#[derive(Debug, Clone, Default)]
pub struct CancelledSpend(Arc<std::sync::Mutex<Vec<(Unit, UnitOutput)>>>);

impl CancelledSpend {
    pub fn push(&self, unit: &Unit, out: UnitOutput) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((unit.clone(), out));
    }

    /// Every output pushed so far, in the order pushed.
    pub fn take(&self) -> Vec<(Unit, UnitOutput)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Boxed future returned by executors (keeps the trait object-safe).
pub type UnitFuture<'a> = Pin<Box<dyn Future<Output = UnitOutput> + Send + 'a>>;

/// Turns a planned unit into its result. Implementations must not panic on bad input (a panic
/// is still caught and recorded as an `panic` error) and report failures in
/// [`UnitOutput::error`].
pub trait UnitExecutor: Send + Sync {
    fn execute<'a>(&'a self, unit: &'a Unit, ctx: &'a RunContext) -> UnitFuture<'a>;

    /// `unit` waits on nothing outside the process (every provider it calls is offline): the
    /// dispatcher then runs the whole unit on one rayon thread ([`on_one_thread_each`]) instead of
    /// hopping between tokio's workers, rayon and back.
    fn is_offline(&self, _unit: &Unit) -> bool {
        false
    }

    /// Write what the executor holds in memory for the units it ran (the run's summaries
    /// pack, `record::SummaryPack`). The dispatcher calls it before it writes journal lines,
    /// so a line never names a text that is not in its file; when it fails the run stops as
    /// when the journal cannot be written (the lines held are not written: those units run
    /// again on `--resume`).
    fn flush(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Routes units to executors by eval name (`replay`, `needle`, …), so each eval plugs in on
/// its own. A unit whose eval has no executor fails with kind `unsupported_eval`.
#[derive(Default, Clone)]
pub struct Router {
    by_eval: HashMap<String, Arc<dyn UnitExecutor>>,
}

impl Router {
    pub fn new() -> Router {
        Router::default()
    }
    pub fn with(mut self, eval: &str, exec: Arc<dyn UnitExecutor>) -> Router {
        self.by_eval.insert(eval.to_string(), exec);
        self
    }
    pub fn handles(&self, eval: &str) -> bool {
        self.by_eval.contains_key(eval)
    }
}

impl UnitExecutor for Router {
    fn flush(&self) -> std::io::Result<()> {
        self.by_eval.values().try_for_each(|e| e.flush())
    }

    fn is_offline(&self, unit: &Unit) -> bool {
        self.by_eval
            .get(&*unit.eval)
            .is_some_and(|e| e.is_offline(unit))
    }

    fn execute<'a>(&'a self, unit: &'a Unit, ctx: &'a RunContext) -> UnitFuture<'a> {
        match self.by_eval.get(&*unit.eval) {
            Some(e) => e.execute(unit, ctx),
            None => {
                let msg = format!("no executor for eval `{}` in this build", unit.eval);
                Box::pin(async move { UnitOutput::failed("unsupported_eval", msg) })
            }
        }
    }
}

/// Run CPU-bound work on rayon's global pool (all cores) and await its result. A panic in `f`
/// is resumed in the awaiting task (where the dispatcher records it as a failed unit). Called
/// on a rayon thread (a unit run there whole, [`on_one_thread_each`]), `f` runs in place.
pub async fn cpu<T, F>(f: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    if rayon::current_thread_index().is_some() {
        return f();
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.await {
        Ok(Ok(v)) => v,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("rayon worker dropped its result"),
    }
}

/// How many offline units one task runs, one after another on one rayon thread
/// ([`on_one_thread_each`]): enough that each of rayon's `threads` has two chunks of the
/// `concurrency` units in flight (a thread never waits on the dispatcher for work), at most 8.
/// A chunk costs one hop to rayon and one wake of the dispatcher instead of one a unit (on the
/// 1,000-unit offline needle sweep the wakes were the dispatcher thread's largest kernel time
/// after the journal's writes; `benches/README.md`, "Needle sweeps").
pub fn offline_chunk(concurrency: usize, threads: usize) -> usize {
    (concurrency / (2 * threads.max(1))).clamp(1, 8)
}

/// Run the units `exec` makes of `units` on one rayon thread, one after another, each start to
/// end (its replay in place, [`cpu`]) inside the runtime of the caller (timers and tasks it
/// starts work as on a worker), then `then` on each unit, its output and how long it ran, on
/// the same thread: what a unit made is used and freed where it was allocated (a free on
/// another thread takes the allocating thread's arena lock, and waits on it while that thread
/// runs the next unit). For units that wait on nothing outside the process: a chunk costs one
/// hop to rayon and one back, not one a step (a unit that does wait parks its rayon thread
/// until woken). A unit that panics gives a failed output (kind `panic`), and the next unit
/// runs. Once `cancel` is set no further unit starts (the chunk goes on after its task is
/// cancelled: rayon's work cannot be dropped mid-way).
pub async fn on_one_thread_each<R, F>(
    exec: Arc<dyn UnitExecutor>,
    units: Vec<Arc<Unit>>,
    ctx: Arc<RunContext>,
    cancel: Arc<AtomicBool>,
    mut then: F,
) -> Vec<R>
where
    R: Send + 'static,
    F: FnMut(Arc<Unit>, UnitOutput, Duration) -> R + Send + 'static,
{
    let runtime = tokio::runtime::Handle::current();
    cpu(move || {
        let _entered = runtime.enter();
        let mut done = Vec::with_capacity(units.len());
        for unit in units {
            if cancel.load(Ordering::Relaxed) {
                break;
            }
            let started = Instant::now();
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                block_on(exec.execute(&unit, &ctx))
            }))
            .unwrap_or_else(|p| UnitOutput::failed("panic", panic_text(p.as_ref())));
            // Used (and its heavy part freed) before the next unit runs.
            done.push(then(unit, out, started.elapsed()));
        }
        done
    })
    .await
}

/// Wakes the thread that [`block_on`] parked.
struct Unparker(std::thread::Thread);

impl std::task::Wake for Unparker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Poll `fut` to completion on this thread, parking it while the future waits.
fn block_on<F: Future>(fut: F) -> F::Output {
    let waker = std::task::Waker::from(Arc::new(Unparker(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        match fut.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => return v,
            std::task::Poll::Pending => std::thread::park(),
        }
    }
}

/// Run synchronous work that waits on the network (a replay whose summarizer is a model call)
/// on tokio's blocking pool and await its result; a panic in `f` is resumed in the awaiting
/// task, as with [`cpu`]. The pool grows to one thread per waiting unit (tokio's default cap is
/// 512), so the provider's `concurrency`, not the core count, bounds the requests in flight.
/// Must be awaited inside a tokio runtime.
pub async fn blocking_io<T, F>(f: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("blocking task did not run: {e}"),
    }
}

/// Where a unit's synchronous replay runs: rayon for pure CPU work, tokio's blocking pool when
/// it waits on a model ([`blocking_io`]).
pub async fn replay_pool<T, F>(waits_on_network: bool, f: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    if waits_on_network {
        blocking_io(f).await
    } else {
        cpu(f).await
    }
}

/// Why dispatching ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Every unit ran.
    Finished,
    /// The next unit would have exceeded `max_cost_usd`.
    Budget,
    /// Interrupted (Ctrl-C or SIGTERM): no new units; running ones finished, or were cancelled
    /// when the grace ran out or on a second interrupt.
    Interrupted,
}

/// Limits for one dispatch.
#[derive(Debug, Clone)]
pub struct DispatchOptions {
    /// Units in flight at once (≥ 1).
    pub concurrency: usize,
    /// Per provider role: calls in flight at once. Roles not listed are limited only by
    /// `concurrency`.
    pub provider_limits: BTreeMap<ProviderRole, usize>,
    /// Handed to the executor with every unit.
    pub context: RunContext,
    /// After the first interrupt, running units get this long to finish; then they are
    /// cancelled (their in-flight model calls with them). [`DEFAULT_INTERRUPT_GRACE`] unless
    /// the caller says otherwise (`ctxbench run --grace-secs`).
    pub interrupt_grace: Duration,
    /// Print each failed unit's error with its chain of causes (`run --verbose`).
    pub verbose: bool,
    /// Which offload stores held in memory are written as their unit ends, and where
    /// (`stores::StorePolicy`; `run --keep-stores`: all, as directories).
    pub stores: super::stores::StorePolicy,
}

/// A failed unit as `run --verbose` prints it: `unit ID failed (kind): message`, then one
/// `  caused by: …` entry per cause; each line of them wrapped within `output::WIDTH` columns
/// under itself (a path longer than a line stands whole on its own). No final newline.
fn failure_text(unit: &str, e: &UnitError, causes: &[String]) -> String {
    use crate::output::{wrap_whole, WIDTH};
    let mut s = String::new();
    let head = format!("unit {unit} failed ({}): {}", e.kind, e.message);
    for (i, line) in head.lines().enumerate() {
        s.push_str(&wrap_whole(if i == 0 { "" } else { "  " }, 2, line, WIDTH));
    }
    for c in causes {
        for (i, line) in c.lines().enumerate() {
            let label = if i == 0 { "  caused by: " } else { "    " };
            s.push_str(&wrap_whole(label, 4, line, WIDTH));
        }
    }
    s.truncate(s.trim_end().len());
    s
}

/// A finished unit as its task hands it to the dispatcher: the unit, its output, its latency
/// in ms, why its offload store could not be written if it could not, the store when the
/// dispatcher holds it (`stores::Route::Hold`), and where its store went.
/// A unit's task's result, for the dispatcher to record.
struct Done {
    unit: Arc<Unit>,
    /// The sample; when `line` is set, without its heavy part (evidence, timeline, summaries:
    /// freed where they were made), which the line has.
    sample: Sample,
    /// The sample's journal line, when the unit's own thread encoded it ([`Journal::encode`]).
    line: Option<Result<Vec<u8>, serde_json::Error>>,
    /// `run --verbose`'s text of the unit's failure.
    failure: Option<String>,
    store_error: Option<String>,
    hold: Option<super::stores::HeldStore>,
    routed: Option<super::stores::Route>,
}

/// How long running units may take to finish after the first interrupt.
pub const DEFAULT_INTERRUPT_GRACE: Duration = Duration::from_secs(10);

/// What happened.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchReport {
    pub completed: u64,
    pub failed: u64,
    /// Units never started because of the budget.
    pub not_run_budget: u64,
    /// Units never started (or cancelled) because of an interrupt.
    pub not_run_interrupted: u64,
    /// Units this process recorded whose spend on model calls has an unknown price: the
    /// budget could not count it ([`Budget::unknown_price_units`]).
    pub unpriced_spend: u64,
    pub stop: StopReason,
}

/// Where finished units are recorded: the journal, and the running totals of its lines.
pub struct Ledger {
    pub journal: Journal,
    /// Each line written, read back as a journal reader reads it, is added here; `None` once
    /// a line could not be read back (the caller then reads the journal).
    pub totals: Option<super::manifest::TotalsSum>,
    /// For a journal this process started: each line written, as the report's compact row
    /// (`report::load::RowLoader`), so the end of the run need not read the journal again;
    /// `None` for a resumed journal, once a line could not be read back, or once it holds more
    /// than `rows_above` rows (a big run: the end of the run then streams the journal, spilling
    /// it, so the run's memory does not grow with its units).
    pub rows: Option<crate::report::load::RowLoader>,
    pub rows_above: usize,
}

/// `run --verbose`'s text of a failed unit, when verbose.
fn failure_if(verbose: bool, unit: &Unit, out: &UnitOutput) -> Option<String> {
    let e = out.error.as_ref().filter(|_| verbose)?;
    Some(failure_text(&unit.id, e, &out.causes))
}

/// Write a unit's store where `route` says, on this thread (`Route::Hold` hands it back, to be
/// held until its pairing key has ended).
fn write_store_here(
    route: super::stores::Route,
    id: &str,
    files: Arc<crate::engine::store::StoreFiles>,
    dir: &std::path::Path,
    packs: &crate::engine::store::PackFile,
) -> (
    Result<(), crate::engine::store::StoreError>,
    Option<super::stores::HeldStore>,
) {
    use super::stores::Route;
    match route {
        Route::Dir => (crate::engine::store::write_files(&files, dir), None),
        Route::Pack => (packs.append(id, &files), None),
        Route::Skip => (packs.skip(id), None),
        // Held until pruning decides: without the copy a read of the history file flattened
        // it into (up to 64 stores wait at once in a 1,000-unit sweep; a kept one is flattened
        // again when written).
        Route::Hold | Route::Wait => (
            packs.skip(id),
            Some((
                id.to_string(),
                Arc::new(crate::engine::store::compacted(&files)),
            )),
        ),
    }
}

/// The next unit of `pending`, when it is `wanted` and the budget lets it start beside
/// `in_flight` units (it is then counted as started); `stopping` is set when the budget stops
/// the run.
fn next_unit<I: Iterator<Item = Arc<Unit>>>(
    pending: &mut std::iter::Peekable<I>,
    budget: &mut Budget,
    in_flight: usize,
    stopping: &mut Option<StopReason>,
    wanted: impl Fn(&Unit) -> bool,
) -> Option<Arc<Unit>> {
    let next = pending.peek().filter(|u| wanted(u))?;
    match budget.decide(&next.eval, in_flight) {
        Decision::Go => {}
        Decision::Wait => return None,
        Decision::Stop => {
            *stopping = Some(StopReason::Budget);
            return None;
        }
    }
    let unit = pending.next()?;
    budget.started(&unit.eval);
    Some(unit)
}

/// Write what the journal's lines name before they are written: the stores pack's markers
/// (a failure is warned of once: pruning then reports the stores it cannot find) and what the
/// executor holds ([`UnitExecutor::flush`]: a failure stops the run).
fn flush_beside(
    exec: &dyn UnitExecutor,
    packs: &crate::engine::store::PackFile,
    warned: &mut bool,
    progress: &mut Progress,
) -> Result<(), JournalError> {
    if let Err(e) = packs.flush() {
        warn_stores(warned, progress, &e.to_string());
    }
    exec.flush()
        .map_err(|source| JournalError::Beside { source })
}

/// Say once a run that the stores' pack file could not be written (`error`): pruning then
/// reports the stores it cannot find.
fn warn_stores(warned: &mut bool, progress: &mut Progress, error: &str) {
    if !std::mem::replace(warned, true) {
        progress.println(&format!(
            "warning: offload store markers not written: {error}"
        ));
    }
}

/// Waits until the store writes holding permits of `writes` (all `n` of them) have ended.
async fn settle(writes: &Semaphore, n: usize) {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    drop(writes.acquire_many(n).await.expect("never closed"));
}

/// Dispatch `units` in order. Each finished unit's sample is appended to `ledger`'s journal
/// before the next decision (written at once, or for offline units held in memory a short
/// while: [`Journal::append_all`]), and added to its totals. Each message on `interrupts` is one Ctrl-C (or SIGTERM): the first
/// stops dispatching and lets running units finish for at most `opts.interrupt_grace`, after
/// which they are cancelled; a second cancels them at once. A cancelled unit is not recorded
/// (it counts as not run and runs again on `--resume`). Returns an error only
/// when the journal cannot be written (running units are cancelled first).
pub async fn dispatch<I>(
    units: I,
    exec: Arc<dyn UnitExecutor>,
    ledger: &mut Ledger,
    opts: &DispatchOptions,
    budget: &mut Budget,
    progress: &mut Progress,
    interrupts: &mut mpsc::UnboundedReceiver<()>,
) -> Result<DispatchReport, JournalError>
where
    I: IntoIterator<Item = Arc<Unit>>,
    I::IntoIter: ExactSizeIterator,
{
    let concurrency = opts.concurrency.max(1);
    let ctx = Arc::new(opts.context.clone());
    let sems: BTreeMap<ProviderRole, Arc<Semaphore>> = opts
        .provider_limits
        .iter()
        .map(|(r, n)| (*r, Arc::new(Semaphore::new((*n).max(1)))))
        .collect();
    let mut pending = units.into_iter().peekable();
    let packs = Arc::new(crate::engine::store::PackFile::new(
        crate::record::RunDir::new(&opts.context.run_dir).stores_pack(),
    ));
    let stores = Arc::new(opts.stores.clone());
    let run_dir = crate::record::RunDir::new(&opts.context.run_dir);
    // Baseline stores waiting for the rest of their pairing key: about one per unit in flight.
    let mut held = super::stores::HeldStores::new(&opts.stores, concurrency.max(8));
    // Flagged units' stores waiting until report.html surely does not show them (about two per
    // unit in flight at most).
    let mut waiting = super::stores::WaitingStores::new((2 * concurrency).max(16));
    // A server-bound unit writes its store on rayon's pool (`cpu`), which goes on when its task
    // is cancelled (a second Ctrl-C, the grace over, a journal error). Each such write holds a
    // permit of `writes` until it ends, and the dispatcher takes them all before it returns: no
    // store is written after it (while the end of the run packs, prunes or unpacks them).
    let writes = Arc::new(Semaphore::new(concurrency));
    let mut pack_warned = false;
    let mut running: JoinSet<Vec<Done>> = JoinSet::new();
    // The units of each task: one, or a chunk of offline units (`offline_chunk`); and whether
    // they are offline.
    let mut by_task: HashMap<tokio::task::Id, (Vec<Arc<Unit>>, bool)> = HashMap::new();
    // Units in the tasks of `running`.
    let mut in_flight = 0usize;
    let chunk = offline_chunk(concurrency, rayon::current_num_threads());
    // Set as running units are cancelled: a chunk of offline units on rayon, which goes on when
    // its task is cancelled, starts no further unit.
    let cancel = Arc::new(AtomicBool::new(false));
    let mut report = DispatchReport {
        completed: 0,
        failed: 0,
        not_run_budget: 0,
        not_run_interrupted: 0,
        unpriced_spend: 0,
        stop: StopReason::Finished,
    };
    let mut stopping: Option<StopReason> = None;
    let mut interrupts_seen = 0u32;
    let mut interrupts_open = true;
    // Set by the first interrupt: when running units are cancelled if still running.
    let mut grace_ends: Option<tokio::time::Instant> = None;
    let mut cancelled = false;

    loop {
        // Fill free slots.
        while stopping.is_none() && in_flight < concurrency {
            let any = |_: &Unit| true;
            let Some(unit) = next_unit(&mut pending, budget, in_flight, &mut stopping, any) else {
                break;
            };
            let offline = exec.is_offline(&unit);
            // Offline units go in chunks: one task, one hop to rayon and one wake of this
            // dispatcher for up to `chunk` units (the next ones in the plan, same providers).
            let mut units = vec![unit.clone()];
            let alike = |next: &Unit| next.providers == unit.providers && exec.is_offline(next);
            while offline && units.len() < chunk && in_flight + units.len() < concurrency {
                let started = in_flight + units.len();
                match next_unit(&mut pending, budget, started, &mut stopping, alike) {
                    Some(next) => units.push(next),
                    None => break,
                }
            }
            in_flight += units.len();
            let exec = exec.clone();
            let ctx = ctx.clone();
            // Acquire provider permits in a fixed role order (no deadlock between units).
            let unit_sems: Vec<Arc<Semaphore>> = {
                let mut roles = unit.providers.clone();
                roles.sort();
                roles.dedup();
                roles.iter().filter_map(|r| sems.get(r).cloned()).collect()
            };
            let u = unit.clone();
            let packs = packs.clone();
            let stores = stores.clone();
            let store_dir = run_dir.unit_store(&unit.id);
            let run_dir = run_dir.clone();
            let writes = writes.clone();
            let cancel = cancel.clone();
            let verbose = opts.verbose;
            let task_units = units.clone();
            let handle = running.spawn(async move {
                let mut permits = Vec::with_capacity(unit_sems.len());
                for s in &unit_sems {
                    permits.push(s.acquire().await.expect("semaphore never closed"));
                }
                let started = Instant::now();
                if offline {
                    // Each unit whole on one rayon thread: its replay, its store's write, its
                    // sample and journal line; the dispatcher gets the sample without its heavy
                    // part, which is freed on the thread that made it. The chunk holds a permit
                    // of `writes` until its last unit ends (it goes on when its task is
                    // cancelled, and starts no further unit then).
                    let permit = writes.acquire_owned().await.expect("never closed");
                    let done =
                        on_one_thread_each(exec, units, ctx, cancel, move |unit, mut out, ran| {
                            let _writing = &permit;
                            let ms = ran.as_millis() as u64;
                            let failure = failure_if(verbose, &unit, &out);
                            let (store_error, hold, routed) = match out.store.take() {
                                None => (None, None, None),
                                Some(files) => {
                                    let route = stores.route_output(&unit, &out);
                                    let (written, hold) = write_store_here(
                                        route,
                                        &unit.id,
                                        files,
                                        &run_dir.unit_store(&unit.id),
                                        &packs,
                                    );
                                    (written.err().map(|e| e.to_string()), hold, Some(route))
                                }
                            };
                            let mut sample = out.into_sample(&unit, ms);
                            let mut line = Vec::new();
                            let line = Journal::encode(&sample, &mut line).map(|()| line);
                            drop((
                                std::mem::take(&mut sample.evidence),
                                std::mem::take(&mut sample.timeline),
                                std::mem::take(&mut sample.summaries),
                            ));
                            Done {
                                unit,
                                sample,
                                line: Some(line),
                                failure,
                                store_error,
                                hold,
                                routed,
                            }
                        })
                        .await;
                    drop(permits);
                    return done;
                }
                let mut out = exec.execute(&u, &ctx).await;
                let ms = started.elapsed().as_millis() as u64;
                drop(permits);
                // The store the unit held in memory, written where `stores::StorePolicy::route`
                // says: its directory when pruning keeps it whatever the other units do, the
                // pack file when pruning may keep it, else a marker that says it was not written
                // (`stores::prune` counts a missing one; a held store's marker comes first, so a
                // store lost with the process counts too). A store written before its sample is
                // journaled is harmless: a unit without a sample runs again on `--resume` (its
                // directory removed as it starts), and its later store counts. A server-bound
                // unit's writes (a store is up to a megabyte) go to rayon's pool: a tokio worker
                // that writes files is one that does not send or read the other units' calls.
                use super::stores::Route;
                let mut hold = None;
                let mut routed = None;
                let store_error = match out.store.take() {
                    None => None,
                    Some(files) => {
                        // A flagged store that may or may not be shown is written now, on
                        // rayon while the calls go on, and pruned at the end if not shown:
                        // held in memory, those still undecided at the last answer would be
                        // written after it, one by one on the dispatcher (~0.2 s of a
                        // 1,000-unit sweep against a server).
                        let route = match stores.route_output(&u, &out) {
                            Route::Wait => Route::Dir,
                            route => route,
                        };
                        routed = Some(route);
                        let id = u.id.clone();
                        let written = match route {
                            Route::Dir | Route::Pack => {
                                let permit = writes.acquire_owned().await.expect("never closed");
                                let (written, _) = cpu(move || {
                                    let _writing = permit;
                                    write_store_here(route, &id, files, &store_dir, &packs)
                                })
                                .await;
                                written
                            }
                            Route::Skip | Route::Hold | Route::Wait => {
                                let (written, held) =
                                    write_store_here(route, &id, files, &store_dir, &packs);
                                hold = held;
                                written
                            }
                        };
                        written.err().map(|e| e.to_string())
                    }
                };
                let failure = failure_if(verbose, &u, &out);
                let sample = out.into_sample(&u, ms);
                vec![Done {
                    unit: u,
                    sample,
                    line: None,
                    failure,
                    store_error,
                    hold,
                    routed,
                }]
            });
            by_task.insert(handle.id(), (task_units, offline));
        }
        if running.is_empty() {
            break;
        }
        let lines_held = ledger.journal.held();
        let write_held_at = (lines_held.lines > 0).then(|| {
            tokio::time::Instant::now()
                + crate::record::journal::JOURNAL_HOLD_FOR.saturating_sub(lines_held.since)
        });
        tokio::select! {
            joined = running.join_next_with_id() => {
                let Some(joined) = joined else { continue };
                let (dones, offline) = match joined {
                    Ok((id, dones)) => {
                        let (units, offline) = by_task.remove(&id).unwrap_or_default();
                        in_flight -= units.len();
                        (dones, offline)
                    }
                    Err(e) => {
                        let Some((units, _)) = by_task.remove(&e.id()) else { continue };
                        in_flight -= units.len();
                        if e.is_cancelled() {
                            report.not_run_interrupted += units.len() as u64;
                            continue;
                        }
                        let message = panic_message(e);
                        let dones = units
                            .into_iter()
                            .map(|unit| {
                                let out = UnitOutput::failed("panic", message.clone());
                                Done {
                                    failure: failure_if(opts.verbose, &unit, &out),
                                    sample: out.into_sample(&unit, 0),
                                    unit,
                                    line: None,
                                    store_error: None,
                                    hold: None,
                                    routed: None,
                                }
                            })
                            .collect();
                        (dones, false)
                    }
                };
                let mut samples = Vec::with_capacity(dones.len());
                let mut lines = Vec::with_capacity(dones.len());
                for done in dones {
                    let Done { unit, sample, line, failure, mut store_error, hold, routed } = done;
                    if let Some(text) = failure {
                        progress.println(&text);
                    }
                    let (hold, wait) = match routed {
                        Some(super::stores::Route::Wait) => (None, hold),
                        _ => (hold, None),
                    };
                    for (id, files) in held.ended(&sample, hold, routed) {
                        if let Err(e) = packs.append(&id, &files) {
                            store_error.get_or_insert(e.to_string());
                        }
                    }
                    // (Written here, on the dispatcher, like the held baselines' pack records: a
                    // few stores a run, first in the report's order, beyond the number held.)
                    if let super::stores::StorePolicy::Kept { problems, .. } = &*stores {
                        if let Some(store) = wait {
                            waiting.hold(super::stores::problem_key(&unit), store);
                        }
                        for (id, files) in waiting.ended(&sample, problems) {
                            let dir = run_dir.unit_store(&id);
                            if let Err(e) = crate::engine::store::write_files(&files, &dir) {
                                store_error.get_or_insert(e.to_string());
                            }
                        }
                    }
                    if let Some(e) = store_error {
                        if !pack_warned {
                            pack_warned = true;
                            progress.println(&format!(
                                "warning: offload store of unit {} not written: {e}",
                                unit.id
                            ));
                        }
                    }
                    lines.push(line.unwrap_or_else(|| {
                        let mut line = Vec::new();
                        Journal::encode(&sample, &mut line).map(|()| line)
                    }));
                    samples.push(sample);
                }
                // The task's lines, with one write; an offline chunk's held a while (a crash
                // only makes its units run again), so the journal and the executor's records
                // (the summaries pack) take a write every ~256 KiB instead of one a chunk. The
                // executor writes what it holds first: no line names a text not in its file.
                // At most two lines a unit in flight: what the run holds stays bounded by
                // the units in flight (`tests/run_memory.rs`).
                let bytes: usize = lines.iter().map(|l| l.as_ref().map_or(0, |l| l.len() + 1)).sum();
                let lines_held = ledger.journal.held();
                let hold = offline
                    && lines_held.lines + lines.len() <= 2 * concurrency
                    && lines_held.bytes + bytes < crate::record::journal::JOURNAL_HOLD_BYTES
                    && lines_held.since < crate::record::journal::JOURNAL_HOLD_FOR;
                let written = match hold {
                    true => Ok(()),
                    false => flush_beside(&*exec, &packs, &mut pack_warned, progress),
                };
                if let Err(e) = written.and_then(|()| ledger.journal.append_all(lines, hold)) {
                    cancel.store(true, Ordering::Relaxed);
                    running.abort_all();
                    while running.join_next().await.is_some() {}
                    settle(&writes, concurrency).await;
                    return Err(e);
                }
                // Each line just written, read as the journal's readers read it: the report's
                // compact row, and run.json's totals (from that row, else parsed as
                // `resume::Recorded::read` parses it) — the same numbers as reading the whole
                // journal again at the end of the run, without that pass.
                for (sample, (line, at)) in samples.iter().zip(ledger.journal.written()) {
                    if let Some(rows) = &mut ledger.rows {
                        match rows.line(line, at) {
                            Ok(v) if v <= crate::record::SCHEMA_VERSION => {}
                            _ => ledger.rows = None,
                        }
                        if ledger.rows.as_ref().is_some_and(|r| r.len() > ledger.rows_above) {
                            ledger.rows = None;
                        }
                    }
                    if let Some(sum) = &mut ledger.totals {
                        match ledger.rows.as_ref().and_then(|r| r.last()) {
                            Some(row) => sum.add(&row),
                            None => match crate::report::load::parse_light(line) {
                                Ok((s, _)) => sum.add(&s.row()),
                                Err(_) => ledger.totals = None,
                            },
                        }
                    }
                    budget.record_sample(sample);
                    let tokens = sample.tokens_total();
                    let failed = sample.error.is_some();
                    progress.record(tokens, &sample.cost_usd, failed);
                    if failed {
                        report.failed += 1;
                    } else {
                        report.completed += 1;
                    }
                }
            }
            signal = interrupts.recv(), if interrupts_open => {
                if signal.is_none() {
                    interrupts_open = false;
                    continue;
                }
                interrupts_seen += 1;
                stopping = Some(StopReason::Interrupted);
                if interrupts_seen == 1 {
                    let grace = opts.interrupt_grace;
                    grace_ends = Some(tokio::time::Instant::now() + grace);
                    progress.note(&format!(
                        "interrupted: waiting up to {}s for {} running unit(s); interrupt again \
                         (Ctrl-C, or another SIGTERM) to cancel them now",
                        grace.as_secs_f64(),
                        in_flight
                    ));
                } else if !cancelled {
                    cancelled = true;
                    progress.note("cancelling running units");
                    cancel.store(true, Ordering::Relaxed);
                    running.abort_all();
                }
            }
            // Lines held for `JOURNAL_HOLD_FOR` are written even when no unit ends (units that
            // take long): a crash loses at most that much.
            () = sleep_until_opt(write_held_at), if write_held_at.is_some() => {
                let written = flush_beside(&*exec, &packs, &mut pack_warned, progress)
                    .and_then(|()| ledger.journal.flush());
                if let Err(e) = written {
                    cancel.store(true, Ordering::Relaxed);
                    running.abort_all();
                    while running.join_next().await.is_some() {}
                    settle(&writes, concurrency).await;
                    return Err(e);
                }
            }
            () = sleep_until_opt(grace_ends), if grace_ends.is_some() && !cancelled => {
                cancelled = true;
                progress.note(&format!(
                    "grace of {}s over: cancelling {} running unit(s)",
                    opts.interrupt_grace.as_secs_f64(),
                    in_flight
                ));
                cancel.store(true, Ordering::Relaxed);
                running.abort_all();
            }
        }
    }
    settle(&writes, concurrency).await;
    // The lines held (and before them the stores' markers and what the executor holds).
    flush_beside(&*exec, &packs, &mut pack_warned, progress)
        .and_then(|()| ledger.journal.flush())?;
    // Flagged units' stores still undecided: pruning decides from the whole run.
    for (id, files) in waiting.rest() {
        if let Err(e) = crate::engine::store::write_files(&files, &run_dir.unit_store(&id)) {
            if !pack_warned {
                pack_warned = true;
                progress.println(&format!(
                    "warning: offload store of unit {id} not written: {e}"
                ));
            }
        }
    }
    // Stores whose key did not end in this process: pruning decides from the whole run.
    for (id, files) in held.rest() {
        if let Err(e) = packs.append(&id, &files) {
            if !pack_warned {
                pack_warned = true;
                progress.println(&format!(
                    "warning: offload store of unit {id} not written: {e}"
                ));
            }
        }
    }
    let left = pending.len() as u64;
    match stopping {
        Some(StopReason::Budget) => {
            report.not_run_budget = left;
            report.stop = StopReason::Budget;
        }
        Some(StopReason::Interrupted) => {
            report.not_run_interrupted += left;
            report.stop = StopReason::Interrupted;
        }
        _ => {}
    }
    report.unpriced_spend = budget.unknown_price_units();
    Ok(report)
}

async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn panic_message(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => panic_text(p.as_ref()),
        Err(e) => format!("unit task failed: {e}"),
    }
}

/// The message recorded for a unit whose executor panicked with `payload`.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("executor panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("executor panicked: {s}")
    } else {
        "executor panicked".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verbose_failure_shows_the_message_then_each_cause() {
        let e = UnitError {
            kind: "io".into(),
            message: "io: offload: cannot write the store".into(),
        };
        assert_eq!(
            failure_text("u1", &e, &["disk full".into(), "quota".into()]),
            "unit u1 failed (io): io: offload: cannot write the store\n  caused by: disk full\n  caused by: quota"
        );
        assert_eq!(failure_text("u1", &e, &[]).lines().count(), 1);
    }

    /// An external engine's failure is longer than a line (its command, what it did, the call
    /// it failed at): wrapped within 100 columns, not printed 165–252 columns wide.
    #[test]
    fn a_verbose_failure_wraps_within_100_columns() {
        let e = UnitError {
            kind: "engine".into(),
            message: "engine: external engine `python3 ./engines/broken.py garbage`: wrote a \
                      line that is not a `view` or `summarize` object (expected value at line 1 \
                      column 1) while ctxbench waited for the view of call 1 (message 3)\n\
                      its stderr: Traceback (most recent call last)"
                .into(),
        };
        let cause = format!(
            "cannot read /tmp/{}/engine.log: no such file or directory (os error 2)",
            "d".repeat(120)
        );
        let text = failure_text("4f5a912f70b7afc4", &e, &[cause]);
        for line in text.lines() {
            assert!(
                line.chars().count() <= 100 || !line.trim().contains(' '),
                "{line}\n{text}"
            );
        }
        assert_eq!(
            text.lines().next(),
            Some(
                "unit 4f5a912f70b7afc4 failed (engine): engine: external engine `python3 \
                 ./engines/broken.py"
            )
        );
        // A line of the message stays a line; a path longer than a line is whole.
        assert!(text.contains("\n  its stderr: Traceback"), "{text}");
        assert!(text.contains(&format!("\n    /tmp/{}/engine.log:", "d".repeat(120))));
        assert!(!text.ends_with('\n'));
    }

    /// Scores whether the unit ran on one rayon thread throughout (a timer of the runtime and
    /// a `cpu` step included).
    struct OneThreadProbe;

    impl UnitExecutor for OneThreadProbe {
        fn execute<'a>(&'a self, _unit: &'a Unit, _ctx: &'a RunContext) -> UnitFuture<'a> {
            Box::pin(async move {
                let before = rayon::current_thread_index();
                tokio::time::sleep(Duration::from_millis(5)).await;
                let inside = cpu(rayon::current_thread_index).await;
                let after = rayon::current_thread_index();
                let mut out = UnitOutput::default();
                let same = before.is_some() && before == inside && inside == after;
                out.scores
                    .insert("one_thread".into(), f64::from(u8::from(same)));
                out
            })
        }
    }

    /// A store write on rayon goes on when its unit's task is cancelled; `settle` returns only
    /// once it has ended (the dispatcher settles before it returns).
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn settle_waits_for_a_write_whose_task_was_cancelled() {
        use std::sync::atomic::{AtomicU8, Ordering};
        let writes = Arc::new(Semaphore::new(4));
        // 1: the write started; 2: it ended.
        let state = Arc::new(AtomicU8::new(0));
        let (s, w) = (state.clone(), writes.clone());
        let task = tokio::spawn(async move {
            let permit = w.acquire_owned().await.unwrap();
            cpu(move || {
                let _writing = permit;
                s.store(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(500));
                s.store(2, Ordering::SeqCst);
            })
            .await
        });
        while state.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        assert_eq!(state.load(Ordering::SeqCst), 1, "the write is still going");
        settle(&writes, 4).await;
        assert_eq!(state.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn an_offline_unit_runs_whole_on_one_rayon_thread() {
        let unit = Unit::for_test("u", "v");
        let exec: Arc<dyn UnitExecutor> = Arc::new(OneThreadProbe);
        let ctx = Arc::new(RunContext::default());
        let cancel = Arc::new(AtomicBool::new(false));
        let units = vec![Arc::new(unit.clone())];
        let out = on_one_thread_each(exec.clone(), units, ctx.clone(), cancel, |_, out, _| out)
            .await
            .remove(0);
        assert_eq!(out.scores["one_thread"], 1.0);
        // Run as usual, the same unit starts on a tokio worker.
        assert_eq!(exec.execute(&unit, &ctx).await.scores["one_thread"], 0.0);
        assert!(
            !exec.is_offline(&unit),
            "not offline unless the executor says so"
        );
    }

    #[test]
    fn offline_chunks_keep_two_a_rayon_thread_in_flight_at_most_eight_units() {
        assert_eq!(offline_chunk(32, 2), 8);
        assert_eq!(offline_chunk(16, 2), 4);
        assert_eq!(offline_chunk(32, 16), 1);
        assert_eq!(offline_chunk(1000, 2), 8);
        assert_eq!(offline_chunk(1, 2), 1);
        assert_eq!(offline_chunk(4, 0), 2);
    }

    /// Panics on unit `boom`, sets `stop` on unit `stop`; scores each unit's rayon thread.
    struct Chunky(Arc<AtomicBool>);

    impl UnitExecutor for Chunky {
        fn execute<'a>(&'a self, unit: &'a Unit, _ctx: &'a RunContext) -> UnitFuture<'a> {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                match unit.id.as_str() {
                    "boom" => panic!("chunk unit exploded"),
                    "stop" => self.0.store(true, Ordering::SeqCst),
                    _ => {}
                }
                let mut out = UnitOutput::default();
                let thread = rayon::current_thread_index().map_or(-1.0, |i| i as f64);
                out.scores.insert("thread".into(), thread);
                out
            })
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_chunk_runs_its_units_in_order_on_one_thread_past_a_panic_until_cancelled() {
        let cancel = Arc::new(AtomicBool::new(false));
        let exec: Arc<dyn UnitExecutor> = Arc::new(Chunky(cancel.clone()));
        let units: Vec<Arc<Unit>> = ["a", "boom", "b", "stop", "never"]
            .iter()
            .map(|id| Arc::new(Unit::for_test(id, "v")))
            .collect();
        let ctx = Arc::new(RunContext::default());
        let done = on_one_thread_each(exec, units, ctx, cancel, |unit, out, _| {
            (unit.id.clone(), out)
        })
        .await;
        let ids: Vec<&str> = done.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(
            ids,
            ["a", "boom", "b", "stop"],
            "no unit starts once cancelled"
        );
        let err = done[1].1.error.as_ref().unwrap();
        assert_eq!(err.kind, "panic");
        assert_eq!(err.message, "executor panicked: chunk unit exploded");
        let threads: Vec<f64> = [0, 2, 3]
            .iter()
            .map(|&i| done[i].1.scores["thread"])
            .collect();
        assert!(threads[0] >= 0.0, "on rayon");
        assert!(threads.iter().all(|t| *t == threads[0]), "{threads:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn replays_go_to_rayon_for_cpu_and_to_the_blocking_pool_for_io() {
        let on_rayon = || rayon::current_thread_index().is_some();
        assert!(replay_pool(false, on_rayon).await);
        assert!(!replay_pool(true, on_rayon).await);
        let joined = tokio::spawn(blocking_io(|| -> u8 { panic!("boom in io") })).await;
        let panic = joined.unwrap_err().into_panic();
        assert_eq!(*panic.downcast::<&str>().unwrap(), "boom in io");
    }
}
