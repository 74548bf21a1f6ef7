//! One `ctxbench run`: load traces, plan, pick the run directory (new or resumed), dispatch,
//! and write `run.json` before and after. The CLI is a thin layer over [`prepare`] and
//! [`execute`]; tests drive the same functions with a fake executor.

use super::budget::Budget;
use super::execute::{
    dispatch, DispatchOptions, DispatchReport, Ledger, RunContext, StopReason, UnitExecutor,
};
use super::manifest::{
    now_compact, now_rfc3339, InvocationOptions, RunManifest, RunStatus, SkippedTrace, Totals,
    TraceDigest, UnitCounts,
};
use super::plan::{self, Plan, TraceEntry};
use super::progress::Progress;
use super::resume::{self, Recorded};
use super::shard::Shard;
use super::todo::Todo;
use crate::config::suite::{ProviderRole, TraceFile};
use crate::config::LoadedSuite;
use crate::error::UsageError;
use crate::record::{ImportWarnings, Journal, ProviderProvenance, RunDir, RunInfo, Sample};
use crate::trace::{ImportError, SourceFormat, Trace};
use anyhow::Context;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Options of one invocation (the command line), on top of the suite.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub resume: Option<PathBuf>,
    pub shard: Option<Shard>,
    /// Overrides `suite.max_cost_usd`.
    pub max_cost_usd: Option<f64>,
    pub run_id: Option<String>,
    /// Overrides `suite.output_dir`.
    pub output: Option<PathBuf>,
    pub no_cache: bool,
    /// Overrides `suite.concurrency`.
    pub jobs: Option<usize>,
    /// How progress is shown (`output::progress_mode`); hidden by default.
    pub progress: crate::output::ProgressMode,
    /// Recorded in run.json (`default`, `synthetic`).
    pub executor: String,
    /// With `resume`: run the failed units again (their old samples are dropped).
    pub retry_failed: bool,
    /// Print each failed unit's error chain on stderr (`run --verbose`).
    pub verbose: bool,
    /// Units past which the run stops building the report's rows as it writes its journal:
    /// the end of the run then streams the journal, spilling it as `report` does (hidden
    /// `run --spill-above`; `None`: `report::spill::SPILL_ABOVE`).
    pub spill_above: Option<usize>,
}

/// A trace id and, when the loader keeps it, the imported trace.
pub type LoadedTrace = (String, Option<Arc<Trace>>);

/// What one trace file gave ([`TraceLoader::load`]).
pub enum FileTraces {
    /// `(trace id, trace)` for every trace in the file.
    Traces(Vec<LoadedTrace>),
    /// A file found by walking a directory or a glob that holds no trace (valid JSON of no
    /// trace format, a trace without messages): what was seen. The run lists it.
    NotATrace(String),
}

/// Turns one trace file into traces. The real loader imports (`trace::import`); harness tests
/// use a loader that does not parse.
pub trait TraceLoader: Sync {
    /// The traces of the file. A file found by walking a directory or a glob (`file.walked`)
    /// that holds no trace is [`FileTraces::NotATrace`]; one named explicitly is an error.
    fn load(&self, file: &TraceFile, from: Option<SourceFormat>)
        -> Result<FileTraces, ImportError>;
}

/// Loads traces with the importers (format auto-detection unless `traces.from` names one).
pub struct ImportLoader;

impl TraceLoader for ImportLoader {
    fn load(
        &self,
        file: &TraceFile,
        from: Option<SourceFormat>,
    ) -> Result<FileTraces, ImportError> {
        use crate::trace::import::{import_found, FileContent};
        // `run` takes no `--from`: the suite's `[traces] from` forces a format.
        let found = import_found(&file.path, from, file.walked).map_err(|e| {
            e.force_format_by("(set `from = \"FORMAT\"` in the suite's [traces] to force one)")
        })?;
        Ok(match found {
            FileContent::Traces(t) => FileTraces::Traces(
                t.into_iter()
                    .map(|t| (t.meta.id.clone(), Some(Arc::new(t))))
                    .collect(),
            ),
            FileContent::NotATrace(why) => FileTraces::NotATrace(why),
        })
    }
}

/// A run ready to execute.
pub struct Prepared {
    pub plan: Arc<Plan>,
    pub run_dir: PathBuf,
    /// Units of this shard that have no sample yet, in plan order (built as they are pulled).
    pub todo: Todo,
    pub journal: Journal,
    pub manifest: RunManifest,
    /// What the journal already held (resume): finished unit ids, counts, totals.
    pub previous: Recorded,
    pub dispatch: DispatchOptions,
    pub max_cost_usd: Option<f64>,
    pub progress: crate::output::ProgressMode,
    /// This process owns the run directory until the run ends (see `record::lock`).
    pub lock: crate::record::RunLock,
    /// Rows the run builds as it writes its journal at most ([`RunOptions::spill_above`]).
    pub rows_above: usize,
}

/// How a run ended.
pub struct Outcome {
    pub run_dir: PathBuf,
    pub manifest: RunManifest,
    pub report: DispatchReport,
    /// Failed samples in the whole run (including earlier attempts).
    pub failed_total: u64,
    /// The journal's compact rows, built as its lines were written, when this process wrote
    /// every line of it (`report::load::RowLoader`): the reports need not read it again.
    /// `None` also for a run of more units than [`RunOptions::spill_above`]: its rows were
    /// dropped, and the reports stream the journal, spilling it (bounded memory).
    pub rows: Option<crate::report::load::Streamed>,
}

/// SHA-256 of the file at `path`, read through a 128 KiB buffer: the file is never held whole (a
/// trace's bytes read whole only to be hashed were a fresh mapping each, paged in and freed:
/// a sixth of a needle sweep's page faults at start), and read in few calls (`io::copy`'s own
/// 8 KiB buffer made 1,100 `read` calls of the needle sweep's 1,600).
fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let file = std::fs::File::open(path)?;
    std::io::copy(
        &mut std::io::BufReader::with_capacity(HASH_READ_BYTES, file),
        &mut hasher,
    )?;
    Ok(hex::encode(hasher.finalize()))
}

/// Bytes [`sha256_file`] reads at a time.
const HASH_READ_BYTES: usize = 128 << 10;

/// The traces of a suite's paths, and the files that gave none ([`load_traces`]).
#[derive(Default)]
pub struct LoadedTraces {
    pub entries: Vec<TraceEntry>,
    /// Files that did not load (`traces.skip_invalid`), with the error.
    pub skipped: Vec<SkippedTrace>,
    /// Files a directory or glob matched that hold no trace, with what was seen.
    pub ignored: Vec<SkippedTrace>,
}

/// Import every trace file (in parallel, all cores). With `skip_invalid`, failures are
/// returned as skipped; otherwise the first failure (in file order) is the error. Files that
/// hold no trace are returned as ignored.
pub fn load_traces(suite: &LoadedSuite, loader: &dyn TraceLoader) -> anyhow::Result<LoadedTraces> {
    let selection = suite.trace_selection()?;
    let files: Vec<TraceFile> = selection.files;
    let from = match suite.suite.traces.from.as_str() {
        "auto" => None,
        f => SourceFormat::parse(f),
    };
    type Loaded = Result<Result<Vec<TraceEntry>, String>, ImportError>;
    let results: Vec<(TraceFile, Loaded)> = files
        .into_par_iter()
        .map(|f| {
            let r = (|| {
                let sha = sha256_file(&f.path).map_err(|e| ImportError {
                    file: f.path.display().to_string(),
                    location: "file".into(),
                    message: format!("cannot read: {e}"),
                })?;
                let traces = match loader.load(&f, from)? {
                    FileTraces::Traces(t) => t,
                    FileTraces::NotATrace(why) => return Ok(Err(why)),
                };
                Ok(Ok(traces
                    .into_iter()
                    .map(|(id, trace)| TraceEntry {
                        id,
                        file: f.rel.clone(),
                        sha256: sha.clone(),
                        trace,
                    })
                    .collect()))
            })();
            (f, r)
        })
        .collect();
    let mut out = LoadedTraces::default();
    // Entries the walk passed over (links, files that are not regular) are named with the
    // files that hold no trace: never opened, never silently dropped.
    out.ignored
        .extend(selection.passed.into_iter().map(|p| SkippedTrace {
            file: p.rel,
            error: p.why,
        }));
    for (f, r) in results {
        match r {
            Ok(Ok(t)) => out.entries.extend(t),
            Ok(Err(why)) => out.ignored.push(SkippedTrace {
                file: f.rel,
                error: why,
            }),
            Err(e) if suite.suite.traces.skip_invalid => out.skipped.push(SkippedTrace {
                file: f.rel,
                // Where in the file and what (the file is `file`).
                error: format!("{}: {}", e.location, e.message),
            }),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

/// The longest run id, in bytes: it names the run's directory, and file systems take at most
/// 255 bytes a name.
const MAX_RUN_ID_BYTES: usize = 255;

/// Bytes a default run id keeps free for the suffix that tells apart two runs started in the
/// same second (`-2`, …, `-999`).
const RUN_ID_SUFFIX_ROOM: usize = 4;

fn valid_run_id(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn provider_limits(suite: &LoadedSuite) -> BTreeMap<ProviderRole, usize> {
    ProviderRole::ALL
        .into_iter()
        .filter_map(|r| Some((r, suite.provider(r).concurrency_limit?)))
        .collect()
}

/// Which provider and model serve each role (never keys: only kind, model and base_url).
fn provenance(suite: &LoadedSuite) -> Vec<ProviderProvenance> {
    ProviderRole::ALL
        .into_iter()
        .map(|r| {
            let p = &suite.provider(r).config;
            let provider = p.kind.as_str().to_string();
            ProviderProvenance {
                role: match r {
                    ProviderRole::Agent => "agent",
                    ProviderRole::Summary => "summarizer",
                    ProviderRole::Judge => "judge",
                }
                .to_string(),
                model: if suite.provider(r).configured && !p.model.is_empty() {
                    p.model.clone()
                } else {
                    provider.clone()
                },
                provider,
                base_url: p.base_url.clone(),
            }
        })
        .collect()
}

/// Plan the run and open its directory: a new one under the output dir, or the `--resume` one.
pub fn prepare(
    suite: &LoadedSuite,
    opts: &RunOptions,
    loader: &dyn TraceLoader,
) -> anyhow::Result<Prepared> {
    let planned = plan_run(suite, loader)?;
    open_run(suite, opts, planned)
}

/// Traces loaded and units planned; nothing written yet.
pub struct Planned {
    pub plan: Arc<Plan>,
    /// Trace files that did not load (`traces.skip_invalid`).
    pub skipped: Vec<SkippedTrace>,
    /// Files the suite's directories or globs matched that hold no trace.
    pub ignored: Vec<SkippedTrace>,
    /// The import warnings of the planned traces.
    pub import_warnings: ImportWarnings,
}

/// Load traces and plan every unit, without touching the output directory.
pub fn plan_run(suite: &LoadedSuite, loader: &dyn TraceLoader) -> anyhow::Result<Planned> {
    let LoadedTraces {
        entries,
        skipped,
        ignored,
    } = load_traces(suite, loader)?;
    let plan = plan::build(suite, entries).map_err(|e| UsageError(e.0))?;
    if plan.traces.is_empty() {
        return Err(UsageError(format!(
            "{}: no trace could be loaded ({} skipped, {} holding no trace)",
            suite.path.display(),
            skipped.len(),
            ignored.len()
        ))
        .into());
    }
    let import_warnings = ImportWarnings::of(
        plan.traces
            .iter()
            .filter_map(|t| Some(t.trace.as_deref()?.warned())),
    );
    Ok(Planned {
        plan: Arc::new(plan),
        skipped,
        ignored,
        import_warnings,
    })
}

/// Open the run directory (new, or `--resume`), write run.json, and pick the units to run.
pub fn open_run(
    suite: &LoadedSuite,
    opts: &RunOptions,
    planned: Planned,
) -> anyhow::Result<Prepared> {
    let Planned {
        plan,
        skipped,
        ignored,
        import_warnings,
    } = planned;
    let planned_total = plan.len() as u64;
    let trace_digests: Vec<TraceDigest> = plan
        .traces
        .iter()
        .map(|t| TraceDigest {
            id: t.id.clone(),
            file: t.file.clone(),
            sha256: t.sha256.clone(),
        })
        .collect();
    let concurrency = opts
        .jobs
        .unwrap_or(suite.suite.suite.concurrency as usize)
        .max(1);
    let max_cost_usd = opts.max_cost_usd.or(suite.suite.suite.max_cost_usd);
    if let Some(c) = opts.max_cost_usd {
        if !(c.is_finite() && c > 0.0) {
            return Err(
                UsageError(format!("--max-cost-usd must be a positive number, got {c}")).into(),
            );
        }
    }
    let options = InvocationOptions {
        max_cost_usd,
        concurrency: concurrency as u64,
        no_cache: opts.no_cache,
        executor: opts.executor.clone(),
    };

    // A new run's directory and lock, or a resumed run opened.
    let fresh = match &opts.resume {
        Some(dir) => {
            // No lock file in a directory that is no run (`cli::resume_arg` says what it is).
            if !RunDir::new(dir).resumable() {
                return Err(UsageError(format!(
                    "--resume {}: is not a run directory (no run.json)",
                    dir.display()
                ))
                .into());
            }
            // Owned before anything in it is read or rewritten (`--retry-failed` rewrites the
            // journal): a run still writing it refuses this one.
            let lock = take_lock(dir)?;
            if RunDir::new(dir).never_started() {
                crate::output::errln!(
                    "note: {}: this run never started (it was stopped before its run.json was \
                     written; nothing was recorded): starting it over",
                    dir.display()
                );
                Start::Fresh {
                    dir: dir.clone(),
                    run_id: dir_run_id(dir),
                    lock,
                }
            } else {
                let r = resume::open(
                    dir,
                    &suite.digest,
                    &suite.overrides,
                    opts.shard,
                    opts.retry_failed,
                )?;
                let mut a = r.manifest.traces.clone();
                let mut b = trace_digests.clone();
                a.sort();
                b.sort();
                if a != b {
                    return Err(UsageError(format!(
                        "cannot resume {}: the trace files changed since the run started (their ids or sha256 digests differ)",
                        dir.display()
                    ))
                    .into());
                }
                let shard = r.manifest.shard;
                let mut m = r.manifest;
                m.options = options.clone();
                m.status = RunStatus::Running;
                m.finished_at = None;
                if let Some(t) = &r.torn {
                    crate::output::errln!(
                        "note: {}:{}: cut a torn last line ({} bytes) left by an interrupted write",
                        RunDir::new(dir).samples_jsonl().display(),
                        t.line,
                        t.bytes
                    );
                }
                Start::Resumed(Box::new((
                    dir.clone(),
                    r.journal,
                    r.recorded,
                    m,
                    shard,
                    lock,
                )))
            }
        }
        None => {
            let run_id = match &opts.run_id {
                Some(id) if id.len() > MAX_RUN_ID_BYTES => {
                    return Err(UsageError(format!(
                        "--run-id `{}`: {} bytes long; a run id names the run's directory, and \
                         file systems take at most {MAX_RUN_ID_BYTES} bytes a name: choose a \
                         shorter one",
                        crate::output::ellipsize(id, 40),
                        id.len()
                    ))
                    .into());
                }
                Some(id) if valid_run_id(id) => id.clone(),
                Some(id) => {
                    // `.` and `..` are made of those characters, yet name the output directory
                    // or its parent, not a run directory in it.
                    let why = if id == "." || id == ".." {
                        "names the output directory itself or its parent, not a run directory \
                         in it; use a name of letters, digits, `.`, `_`, `-`"
                    } else {
                        "use only letters, digits, `.`, `_`, `-` (and not empty)"
                    };
                    return Err(UsageError(format!("--run-id `{id}`: {why}")).into());
                }
                None => {
                    let mut id = format!("{}-{}", suite.suite.suite.name, now_compact());
                    if let Some(s) = opts.shard {
                        id.push_str(&format!("-shard{}of{}", s.index, s.count));
                    }
                    let max = MAX_RUN_ID_BYTES - RUN_ID_SUFFIX_ROOM;
                    if id.len() > max {
                        let name = &suite.suite.suite.name;
                        return Err(suite
                            .error_at(
                                &["suite", "name"],
                                format!(
                                    "the suite's name ({} bytes) makes the run id `{}` {} bytes \
                                     long; a run id names the run's directory, and file systems \
                                     take at most {MAX_RUN_ID_BYTES} bytes a name: shorten the \
                                     name to at most {} bytes, or choose a --run-id",
                                    name.len(),
                                    crate::output::ellipsize(&id, 40),
                                    id.len(),
                                    (max + name.len()).saturating_sub(id.len())
                                ),
                            )
                            .into());
                    }
                    id
                }
            };
            let out = opts.output.clone().unwrap_or_else(|| suite.output_dir());
            std::fs::create_dir_all(&out)
                .with_context(|| format!("cannot create output directory {}", out.display()))?;
            let (dir, run_id, lock) = new_run_dir(&out, run_id, opts.run_id.is_some())?;
            Start::Fresh { dir, run_id, lock }
        }
    };
    let (run_dir, journal, mut previous, mut manifest, shard, lock) = match fresh {
        Start::Resumed(opened) => *opened,
        Start::Fresh { dir, run_id, lock } => {
            // A run that never started left an empty journal (and maybe a half-written
            // run.json): cleared, under the lock, for this start.
            RunDir::new(&dir)
                .clear_never_started()
                .with_context(|| format!("cannot clear {}", dir.display()))?;
            let journal = RunDir::new(&dir).create_journal().with_context(|| {
                format!(
                    "cannot create {}",
                    RunDir::new(&dir).samples_jsonl().display()
                )
            })?;
            let mut info = RunInfo::new(run_id);
            info.created = now_rfc3339();
            info.suite = serde_json::to_value(&suite.suite).context("serializing the suite")?;
            info.providers = provenance(suite);
            info.trace_digests = plan
                .traces
                .iter()
                .map(|t| (t.file.clone(), format!("sha256:{}", t.sha256)))
                .collect();
            info.prompt_digests = suite
                .prompt_files
                .iter()
                .map(|p| (p.rel.clone(), format!("sha256:{}", p.sha256)))
                .collect();
            info.variants = plan.variants.iter().map(|v| v.name.clone()).collect();
            info.baseline = Some(plan.baseline.clone());
            info.seed = suite.suite.suite.seed;
            let manifest = RunManifest {
                info,
                suite_name: suite.suite.suite.name.clone(),
                suite_file: suite.path.display().to_string(),
                suite_digest: suite.digest.clone(),
                overrides: suite.overrides.clone(),
                variant_overrides: plan
                    .variants
                    .iter()
                    .map(|v| {
                        (
                            v.name.clone(),
                            serde_json::to_value(&v.overrides).unwrap_or_default(),
                        )
                    })
                    .collect(),
                finished_at: None,
                shard: opts.shard,
                merged_from: Vec::new(),
                traces: trace_digests,
                prompts: suite.prompt_files.clone(),
                skipped_traces: skipped,
                ignored_files: ignored,
                import_warnings,
                status: RunStatus::Running,
                units: UnitCounts::default(),
                totals: Totals::default(),
                options,
            };
            (
                dir,
                journal,
                Recorded::default(),
                manifest,
                opts.shard,
                lock,
            )
        }
    };

    let (todo, planned) = Todo::new(plan.clone(), shard, std::mem::take(&mut previous.done));
    // A run of the whole plan in one process writes only the stores pruning may keep; a
    // resumed or sharded one writes every store (its final selection depends on samples this
    // process does not see).
    let stores = if shard.is_none() && previous.recorded == 0 && planned == planned_total {
        super::stores::StorePolicy::for_plan(&plan)
    } else {
        super::stores::StorePolicy::All
    };
    manifest.units = UnitCounts {
        planned_total,
        planned,
        recorded: previous.recorded,
        failed: previous.failed,
        not_run_budget: 0,
        not_run_interrupted: 0,
    };
    manifest.totals = previous.totals.clone();
    let dir = RunDir::new(&run_dir);
    dir.write_run_json(&manifest)
        .with_context(|| format!("cannot write {}", dir.run_json().display()))?;
    let run_dir_for_ctx = run_dir.clone();
    Ok(Prepared {
        plan,
        run_dir,
        todo,
        journal,
        manifest,
        previous,
        dispatch: DispatchOptions {
            concurrency,
            provider_limits: provider_limits(suite),
            context: RunContext {
                no_stale_stores: matches!(
                    std::fs::symlink_metadata(dir.stores_dir()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound
                ),
                run_dir: run_dir_for_ctx,
                no_cache: opts.no_cache,
                cancelled: Default::default(),
            },
            interrupt_grace: super::execute::DEFAULT_INTERRUPT_GRACE,
            verbose: opts.verbose,
            stores,
        },
        max_cost_usd,
        progress: opts.progress,
        lock,
        rows_above: opts
            .spill_above
            .unwrap_or(crate::report::spill::SPILL_ABOVE),
    })
}

/// How [`open_run`] found its directory.
enum Start {
    /// A run to continue: its directory, journal, what the journal holds, its manifest (options
    /// updated), its shard and lock.
    Resumed(
        Box<(
            PathBuf,
            Journal,
            Recorded,
            RunManifest,
            Option<Shard>,
            crate::record::RunLock,
        )>,
    ),
    /// A run to start in `dir` (new, or one that never started), owned through `lock`.
    Fresh {
        dir: PathBuf,
        run_id: String,
        lock: crate::record::RunLock,
    },
}

/// The run id of a run directory that never started: its name (run.json, which would say,
/// was never written).
fn dir_run_id(dir: &Path) -> String {
    dir.canonicalize()
        .ok()
        .as_deref()
        .unwrap_or(dir)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into())
}

/// Create the directory of a new run `run_id` in `out` and take its lock. A default id that is
/// taken (two runs in the same second) gets a suffix; an explicit `--run-id` never silently
/// changes: a directory of that name is refused unless it is empty or a run that never started
/// (`RunDir::never_started`: stopped before its run.json was written), which is used.
fn new_run_dir(
    out: &Path,
    run_id: String,
    explicit: bool,
) -> anyhow::Result<(PathBuf, String, crate::record::RunLock)> {
    let base = run_id.clone();
    let mut run_id = run_id;
    let mut attempt = 1;
    loop {
        let dir = out.join(&run_id);
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                let lock = take_lock(&dir)?;
                return Ok((dir, run_id, lock));
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::AlreadyExists && !explicit && attempt < 100 =>
            {
                attempt += 1;
                run_id = format!("{base}-{attempt}");
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let rd = RunDir::new(&dir);
                let empty = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir())
                    && std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_none());
                if empty || rd.never_started() {
                    // Checked again under the lock: another process may have started it since.
                    let lock = take_lock(&dir)?;
                    if rd.never_started() {
                        if !empty {
                            crate::output::errln!(
                                "note: {}: this run never started (it was stopped before its \
                                 run.json was written; nothing was recorded): starting it over",
                                dir.display()
                            );
                        }
                        return Ok((dir, run_id, lock));
                    }
                }
                return Err(UsageError(format!(
                    "run directory {} already exists; continue it with `--resume {}` or choose another --run-id",
                    dir.display(),
                    crate::output::shell_word(&dir.to_string_lossy())
                ))
                .into());
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot create run directory {}", dir.display())));
            }
        }
    }
}

/// Owns run directory `dir` for this process; a second writer is a usage error (exit 2) naming
/// the holder's pid.
fn take_lock(dir: &Path) -> anyhow::Result<crate::record::RunLock> {
    match RunDir::new(dir).lock() {
        Ok(lock) => {
            if let Some(pid) = lock.took_over {
                crate::output::errln!(
                    "note: {}: took over the lock of process {pid}, which is no longer running",
                    dir.display()
                );
            }
            Ok(lock)
        }
        Err(e @ crate::record::LockError::Held { .. }) => Err(UsageError(e.to_string()).into()),
        Err(e) => Err(anyhow::Error::new(e)),
    }
}

/// Dispatch the prepared units and finalize `run.json`.
pub async fn execute(
    prepared: Prepared,
    exec: Arc<dyn UnitExecutor>,
    interrupts: &mut mpsc::UnboundedReceiver<()>,
) -> anyhow::Result<Outcome> {
    let Prepared {
        run_dir,
        todo,
        journal,
        mut manifest,
        mut previous,
        dispatch: dopts,
        max_cost_usd,
        progress: progress_mode,
        lock,
        rows_above,
        ..
    } = prepared;
    // Failed attempts `--retry-failed` replaced spent too (samples.replaced.jsonl).
    let mut budget = Budget::new(
        max_cost_usd,
        previous.totals.spent_usd + previous.replaced_spent_usd,
    );
    let done = &previous.totals;
    let mut progress = Progress::new(manifest.units.planned, previous.recorded, progress_mode)
        .resumed(
            done.tokens.total(),
            done.cost.modelled_agent_usd.unwrap_or(0.0),
            done.cost.spent_usd.unwrap_or(0.0),
            previous.failed,
        );
    let fresh = journal.is_empty();
    let mut ledger = Ledger {
        journal,
        totals: Some(std::mem::take(&mut previous.sum)),
        rows: fresh.then(crate::report::load::RowLoader::default),
        rows_above,
    };
    drop(previous);
    let report = dispatch(
        todo,
        exec,
        &mut ledger,
        &dopts,
        &mut budget,
        &mut progress,
        interrupts,
    )
    .await
    .context("the run journal could not be written; finished units up to here are saved")?;
    progress.finish();
    // Units cancelled while running spent money too: their attempts go beside the replaced
    // ones (no journal line: `--resume` runs them again).
    let cancelled: Vec<Sample> = dopts
        .context
        .cancelled
        .take()
        .into_iter()
        .map(|(unit, out)| out.into_sample(&unit, 0))
        .collect();
    if let Err(e) = super::resume::append_replaced(&RunDir::new(&run_dir), &cancelled) {
        crate::output::errln!(
            "warning: what {} cancelled unit(s) spent could not be written to {}: {e}",
            cancelled.len(),
            RunDir::new(&run_dir).replaced_jsonl().display()
        );
    }
    ledger.journal.sync().ok();
    let dir = RunDir::new(&run_dir);
    // The journal's lines were added to running totals as they were written (what was there
    // before, read when the run was opened); nothing per sample is kept. Only if a line could
    // not be read back is the journal streamed again.
    let all = match ledger.totals {
        Some(sum) => (sum.recorded, sum.failed, sum.finish()),
        None => {
            let r = Recorded::read(&dir.samples_jsonl()).map_err(|e| UsageError(e.to_string()))?;
            (r.recorded, r.failed, r.totals)
        }
    };
    manifest.units.recorded = all.0;
    manifest.units.failed = all.1;
    manifest.units.not_run_budget = report.not_run_budget;
    manifest.units.not_run_interrupted = report.not_run_interrupted;
    manifest.totals = all.2;
    manifest.finished_at = Some(now_rfc3339());
    manifest.status = match report.stop {
        StopReason::Interrupted => RunStatus::Interrupted,
        StopReason::Budget => RunStatus::BudgetExhausted,
        StopReason::Finished if manifest.units.recorded >= manifest.units.planned => {
            RunStatus::Complete
        }
        StopReason::Finished => RunStatus::Incomplete,
    };
    dir.write_run_json(&manifest)
        .with_context(|| format!("cannot write {}", dir.run_json().display()))?;
    // The run is written: readers from here on see a finished run.
    drop(lock);
    let failed_total = manifest.units.failed;
    Ok(Outcome {
        run_dir,
        manifest,
        report,
        failed_total,
        rows: ledger.rows.map(crate::report::load::RowLoader::finish),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_file_hashes_the_whole_file_through_its_buffer() {
        let dir = tempfile::tempdir().unwrap();
        for len in [
            0usize,
            1,
            HASH_READ_BYTES - 1,
            HASH_READ_BYTES,
            HASH_READ_BYTES + 1,
            300_007,
        ] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let p = dir.path().join(format!("f{len}"));
            std::fs::write(&p, &bytes).unwrap();
            assert_eq!(
                sha256_file(&p).unwrap(),
                hex::encode(Sha256::digest(&bytes)),
                "{len}"
            );
        }
        assert!(sha256_file(&dir.path().join("missing")).is_err());
    }
}
