//! `ctxbench run`: see its `--help`.

use crate::cli::{UsageError, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED};
use crate::config::{LoadedSuite, Overrides};
use crate::runner::manifest::{RunManifest, RunStatus};
use crate::runner::progress::human_tokens;
use crate::runner::session::{self, ImportLoader, RunOptions, TraceLoader};
use crate::runner::synthetic::{SyntheticExecutor, SyntheticLoader};
use crate::runner::{Plan, Router, Shard, UnitExecutor};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The composition root: the executors this build has, by eval name — every eval of
/// `crate::evals` (every eval of `config::evals::EVAL_NAMES`). It lives here, above both, so the
/// runner knows only its `UnitExecutor` trait and the evals implement it (evals → runner).
pub fn default_router(plan: &Arc<Plan>, suite: &LoadedSuite) -> anyhow::Result<Router> {
    crate::evals::executors::register(Router::new(), plan, suite)
}

const AFTER_HELP: &str = "\
Every unit (trace × engine variant × eval sample × repeat) has a stable id. Each finished unit is
appended to <run-dir>/samples.jsonl at once, so a crash or Ctrl-C loses nothing finished;
run.json records the resolved suite and the sha256 of every trace and prompt file.

Ctrl-C stops dispatching and gives running units `--grace-secs` (default 10) to finish, then
cancels them with their model calls (a second Ctrl-C cancels at once); it writes run.json and a
partial report and exits 130. SIGTERM does the same and exits 143. `--resume RUN_DIR` continues
the same run, skipping finished units.

Cost: `--dry-run` prints an estimate per role (agent modelled, summarizer, eval agent, judge)
from an offline replay of every trace × variant; what real models answer is a low–high range
(docs/providers.md). A fresh run whose estimate's upper end exceeds `max_cost_usd` /
`--max-cost-usd`, or whose spending models have no price (the budget could not count them), is
refused (exit 2) unless `--ignore-estimate`.

Exit codes: 0 ok · 1 failed units with `fail_on_errors = true`, or stopped by the budget, or a
runtime error · 2 bad suite, traces or arguments, or an estimate above the budget · 130
interrupted · 143 terminated (SIGTERM).

Overrides and selection (recorded in run.json under `overrides` and in the suite digest, so
`--resume` and `merge` refuse a run made with other ones; `--resume` without them reuses the
recorded ones). A `--set` KEY goes to `[engine.base]`, `variant.NAME.KEY` to
`[engine.variants.NAME]`, and a key starting with a suite section (`suite.`, `evals.`,
`report.`, …: every top-level table) to that key; VALUE is a TOML value. Merged with the same rule as the suite's variants.

Progress goes to stderr: a bar on a terminal; otherwise (CI logs, `2> file`) a line such as
`progress: 12/40 units · 1 error · 1.2M tokens · modelled $0.0345 · elapsed 1m02s · ETA 3m10s`
(modelled: the replayed agent's views priced, not spent; `· spent $…` follows once model calls
cost money) every CTXBENCH_PROGRESS_SECS seconds (default 10; 0 = after every unit). `-q`
prints neither.

Examples:
  ctxbench run evals/quickstart.toml
  ctxbench run evals/quickstart.toml --dry-run
  ctxbench run evals/quickstart.toml -o out/ -q        # prints only the run directory
  CTXBENCH_PROGRESS_SECS=30 ctxbench run suite.toml 2> progress.log
  ctxbench run evals/quickstart.toml --set window=30000
  ctxbench run evals/quickstart.toml --set variant.aggressive.summarize.trigger.fraction=0.3
  ctxbench run evals/quickstart.toml --set evals.needle.depths=[0.5]
  ctxbench run evals/quickstart.toml --variant baseline --variant aggressive
  ctxbench run evals/quickstart.toml --trace 'astropy*' --eval needle --limit 1
  ctxbench run suite.toml --max-cost-usd 5 --run-id nightly
  ctxbench run suite.toml --max-cost-usd 5 --ignore-estimate   # start above the estimate
  ctxbench run evals/quickstart.toml --keep-stores   # keep every unit's offload store
  ctxbench run suite.toml --resume reports/nightly
  ctxbench run suite.toml --resume reports/nightly --retry-failed
  # CI matrix: one shard per job, then join them
  ctxbench run suite.toml --shard 2/4 --run-id shard-2
  ctxbench merge reports/shard-1 reports/shard-2 reports/shard-3 reports/shard-4 -o reports/all";

/// Run a suite: replay traces through engine variants, run the evals, record every unit.
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// The suite file (format: docs/suite.md; JSON Schema: `ctxbench schema suite`)
    #[arg(value_name = "SUITE.toml")]
    pub suite: PathBuf,

    /// Continue the run in RUN_DIR: finished units are skipped (the suite must be unchanged)
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["run_id", "output"])]
    pub resume: Option<PathBuf>,

    /// With --resume: run the failed units again (e.g. `summary_failed` after the summarizer
    /// came back); their old samples are removed from samples.jsonl first
    #[arg(long, requires = "resume")]
    pub retry_failed: bool,

    /// Run only part I of N (1-based), split by a stable hash of unit ids; join with `ctxbench merge`
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,

    /// Stop before the estimated spend would exceed this many dollars (overrides the suite)
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost_usd: Option<f64>,

    /// Start even when the dry-run estimate's upper end exceeds the budget (`--max-cost-usd` or
    /// the suite's `max_cost_usd`); the budget still stops the run while it spends
    #[arg(long)]
    pub ignore_estimate: bool,

    /// Name of the run directory [default: <suite-name>-<UTC timestamp>]
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,

    /// Directory that receives the run directory [default: the suite's `output_dir`]
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// Do not read or write the provider response cache
    #[arg(long)]
    pub no_cache: bool,

    /// Units in flight at once (overrides the suite's `concurrency`)
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,

    /// With --resume: first move unreadable journal lines aside (see `ctxbench repair`)
    #[arg(long, requires = "resume")]
    pub repair: bool,

    /// After Ctrl-C or SIGTERM, seconds running units may take to finish before they are cancelled
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = parse_grace)]
    pub grace_secs: f64,

    /// Keep the offload store of every unit under RUN/stores/ (default: only those of the
    /// samples report.html shows in full and of failed units)
    #[arg(long)]
    pub keep_stores: bool,

    /// No progress and no summary; print only the run directory. Without it, progress goes to
    /// stderr: a bar on a terminal, else a line every CTXBENCH_PROGRESS_SECS seconds (10)
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// Print each failed unit's error on stderr as it fails, with the chain of errors behind
    /// it (samples.jsonl records the first line), and every import warning of the traces (the
    /// reports group them by kind)
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// Override a suite key, e.g. `--set window=30000`, `--set variant.NAME.KEY=V`,
    /// `--set suite.repeats=3` (repeatable; later ones win)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,

    /// Run only this variant (repeatable), e.g. `--variant baseline --variant aggressive`;
    /// without the suite's baseline, the first one named is this run's baseline
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,

    /// Run only traces whose id matches this glob (repeatable), e.g. `--trace 'astropy*'`
    #[arg(long = "trace", value_name = "GLOB")]
    pub traces: Vec<String>,

    /// Run only this eval (repeatable): replay, invariants, needle, drift, probes, continuation,
    /// rules
    #[arg(long = "eval", value_name = "NAME")]
    pub evals: Vec<String>,

    /// Run only the first N traces (by id, after `--trace`), e.g. `--limit 2`
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,

    /// Print the plan (units per trace × variant × eval) and the cost estimate per role (an
    /// offline replay; answers and tool steps as a low–high range), and exit 0 without running
    /// anything
    #[arg(long)]
    pub dry_run: bool,

    /// Which executor runs units: `default`, or `synthetic[:delay_ms=N,fail_every=K]`
    /// (deterministic, no model calls; for testing the runner itself)
    #[arg(long, value_name = "NAME", default_value = "default", hide = true)]
    pub executor: String,

    /// Past `--spill-above` units the run stops keeping the report's rows and its end streams
    /// the journal, its rows sorted on disk.
    #[command(flatten)]
    pub spill: super::SpillArgs,
}

fn parse_grace(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=86_400.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}`: expected seconds between 0 and 86400")),
    }
}

/// `--max-cost-usd`: a positive, finite number of dollars, refused when the command line is
/// read (as the suite's `max_cost_usd` is at load), so `--dry-run` refuses it too: `-5` was
/// accepted by a dry run and then blamed on the estimate ("$0.0000 … above the budget $-5").
fn parse_usd(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!(
            "`{s}`: expected a positive number of dollars, e.g. 5 or 0.5"
        )),
    }
}

/// Forward SIGINT and SIGTERM to the dispatcher as interrupts; remember whether a SIGTERM came
/// (the exit code is 143 then). Must be called inside the runtime.
fn forward_signals(tx: tokio::sync::mpsc::UnboundedSender<()>, terminated: Arc<AtomicBool>) {
    let int_tx = tx.clone();
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if int_tx.send(()).is_err() {
                break;
            }
        }
    });
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::spawn(async move {
                    while term.recv().await.is_some() {
                        terminated.store(true, Ordering::SeqCst);
                        if tx.send(()).is_err() {
                            break;
                        }
                    }
                });
            }
            Err(e) => {
                crate::output::errln!(
                    "warning: SIGTERM cannot be handled ({e}); it will end the run at once"
                )
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (tx, terminated);
}

/// Render results.csv, summary.json, report.md, report.html and plots into the run directory.
/// Returns the per-variant summary table. Beside them, prune the offload stores
/// (`runner::stores`), or unpack them all when `keep_stores`.
fn write_reports(
    run_dir: &std::path::Path,
    keep_stores: bool,
    rows: Option<crate::report::load::Streamed>,
    spill: crate::report::spill::SpillOptions,
) -> anyhow::Result<String> {
    use crate::report::{write_run_reports, WriteOptions};
    let dir = crate::record::RunDir::new(run_dir);
    // The same model as `ctxbench report` loads: compact rows (built as the journal was
    // written when this process wrote all of it, else streamed from it), heavy parts only for
    // the samples shown in full, so this step's memory does not grow with whole samples. A
    // run of more units than the spill threshold has no rows (the runner dropped them): its
    // journal is streamed and spilled to sorted runs on disk, as `ctxbench report` does.
    let opts = crate::report::load::LoadOptions { spill };
    let (info, model, _) = crate::report::load::load_model_opts(&dir, rows, &opts)?;
    // The offload stores are pruned (or unpacked) beside the report files, on a thread of
    // their own: pruning decides from the loaded model alone and the reports read no store, so
    // neither waits for the other (about a tenth of a second each at the end of a sweep).
    let (written, stores) = std::thread::scope(|s| {
        let stores = s.spawn(|| stores_text(&dir, &model, keep_stores));
        let written = write_run_reports(run_dir, &dir, &info, &model, WriteOptions { png: true });
        let stores = stores
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (written, stores)
    });
    let written = match written {
        Ok(w) => w,
        Err(e) => {
            // The stores were pruned (or unpacked) all the same: what happened to them is said
            // before the reports' error.
            crate::output::err!("{stores}");
            return Err(e);
        }
    };
    let mut out = super::report::summary_text(&model);
    for n in &written.plot_notes {
        out.push_str(&format!("plot note: {n}\n"));
    }
    for n in &written.notes {
        out.push_str(&crate::output::wrap(&format!("note: {n}"), 100));
    }
    out.push_str(&stores);
    out.push_str(&format!(
        "report   {}\n",
        crate::output::display_path(&dir.report_html())
    ));
    Ok(out)
}

/// Prunes the run's offload stores to those report.html shows and the errored ones (saying how
/// many flagged units and failed verdicts the page does not show, as the page counts them: their
/// stores went), or unpacks them all (`--keep-stores`); returns what the end of the run says
/// about them.
fn stores_text(
    dir: &crate::record::RunDir,
    model: &crate::report::ReportModel,
    keep_stores: bool,
) -> String {
    let mut out = String::new();
    if keep_stores {
        // Stores held in memory while their unit ran were packed: every one is kept.
        if let Err(e) = crate::runner::stores::unpack_all(dir) {
            out.push_str(&format!("warning: offload stores not unpacked: {e}\n"));
        }
        return out;
    }
    match crate::runner::stores::prune(dir, model, false) {
        Ok(p) => {
            if p.removed > 0 {
                // Kept: those on disk; a store to keep that was not written is said below.
                // Of the run's units, not of the stores this prune saw: a resumed run's
                // earlier sessions removed theirs already.
                out.push_str(&format!(
                    "stores   kept {} offload stores of {} units (failed + shown in \
                     report.html; --keep-stores: all)\n",
                    p.kept, model.units
                ));
            }
            // Wrapped at 100 columns, as the run's other closing lines.
            if p.missing > 0 {
                out.push_str(&crate::output::wrap(
                    &format!(
                        "note: {} offload store(s) of samples report.html shows were not \
                         written: they were not to be kept when their unit ended (an \
                         interrupted run shows other samples)",
                        p.missing
                    ),
                    100,
                ));
            }
            // The page's caps per variant, and why they are smaller than a small run's.
            let caps = model.shown_caps();
            let shrunk = if caps.shrunk() {
                format!(
                    ", a cap that shrinks with the run's {} variants",
                    model.variants.len()
                )
            } else {
                String::new()
            };
            // Nothing left out unsaid: the flagged units and the failed verdicts past the
            // page's caps, whatever the number of variants. The page's own count
            // (`ReportModel::left_out`), of every unit, not of the stores this prune saw: a
            // unit that left no store is not shown all the same.
            let left_out = model.left_out();
            for (n, what, past) in [
                (
                    left_out.flagged,
                    "flagged unit(s)",
                    format!("{} flagged units", caps.flagged),
                ),
                (
                    left_out.failed,
                    "unit(s) whose verdict is fail",
                    caps.failed.to_string(),
                ),
            ] {
                if n > 0 {
                    out.push_str(&crate::output::wrap(
                        &format!(
                            "note: {n} {what} report.html does not show in full (past the \
                             first {past} of their variant{shrunk}): their offload stores (if \
                             any) were not kept (samples.jsonl and results.csv list them; --keep-stores \
                             keeps every store)"
                        ),
                        100,
                    ));
                }
            }
        }
        Err(e) => out.push_str(&format!("warning: offload stores not pruned: {e}\n")),
    }
    out
}

/// The overrides of this invocation; `--resume` without any reuses the run's recorded ones.
fn overrides(args: &Args) -> anyhow::Result<Overrides> {
    let o = Overrides {
        sets: args.sets.clone(),
        variants: args.variants.clone(),
        traces: args.traces.clone(),
        evals: args.evals.clone(),
        limit: args.limit.map(|n| n as usize),
    };
    match &args.resume {
        // A run that never started recorded none: this invocation's are its first.
        Some(dir) if o.is_empty() && !crate::record::RunDir::new(dir).never_started() => {
            let m: RunManifest = crate::record::RunDir::new(dir)
                .read_run_json()
                .map_err(|e| UsageError(e.to_string()))?;
            Ok(m.overrides)
        }
        _ => Ok(o),
    }
}

/// `--dry-run`: what the run would execute, per eval, trace and variant, every line within
/// `terminal::WIDTH` (100) columns like the run's summary: a long line wraps under its value
/// (`plan`, `variants`), a trace's file goes under its id when the two do not fit on one line,
/// and a text too long for a line of its own (a trace id, a path) is shortened around a `…`
/// (ids never two alike, as `ctxbench traces` shows them).
pub fn plan_text(suite: &LoadedSuite, planned: &session::Planned) -> String {
    use crate::output::{short_ids, visible, wrap_after};
    const WIDTH: usize = crate::report::terminal::WIDTH;
    let plan = &*planned.plan;
    use std::collections::BTreeMap;
    let mut per_eval: BTreeMap<&str, (std::collections::BTreeSet<&str>, usize)> = BTreeMap::new();
    let per_sample = plan.traces.len() * plan.variants.len() * plan.repeats as usize;
    for s in &plan.samples {
        let e = per_eval.entry(&*s.eval).or_default();
        e.0.insert(&*s.sample);
        e.1 += per_sample;
    }
    let repeats = suite.suite.suite.repeats;
    // A label and its value: the value wraps under itself.
    let field = |label: &str, text: &str| wrap_after(&format!("{label:<8} "), 9, text, WIDTH);
    let mut out = field(
        "plan",
        &format!(
            "{}: {} trace(s) × {} variant(s) × {} eval sample(s) × {} repeat(s) = {} units",
            suite.suite.suite.name,
            plan.traces.len(),
            plan.variants.len(),
            per_eval.values().map(|(s, _)| s.len()).sum::<usize>(),
            repeats,
            plan.len()
        ),
    );
    let names: Vec<String> = plan
        .variants
        .iter()
        .map(|v| {
            if v.name == plan.baseline {
                format!("{} (baseline)", v.name)
            } else {
                v.name.clone()
            }
        })
        .collect();
    out.push_str(&field("variants", &names.join(", ")));
    out.push_str("eval         samples  units/trace×variant  units\n");
    for (eval, (samples, units)) in &per_eval {
        out.push_str(&format!(
            "{eval:<12} {:>7}  {:>19}  {units:>5}\n",
            samples.len(),
            samples.len() * repeats as usize
        ));
    }
    out.push_str("traces\n");
    // An id and a file are whole when they fit a line of their own, else shortened, never two
    // alike. `file` is relative to the suite (run.json's form); shown from where the user is.
    let ids: Vec<String> = plan
        .traces
        .iter()
        .map(|t| visible(&t.id).into_owned())
        .collect();
    let paths: Vec<String> = plan
        .traces
        .iter()
        .map(|t| visible(&crate::output::display_path(&suite.dir.join(&t.file))).into_owned())
        .collect();
    let shortened = |all: &[String], max: usize| {
        short_ids(&all.iter().map(String::as_str).collect::<Vec<_>>(), max)
    };
    let short_paths = shortened(&paths, WIDTH - 6);
    for ((id, path), short_path) in shortened(&ids, WIDTH - 2)
        .iter()
        .zip(&paths)
        .zip(short_paths)
    {
        let line = format!("  {id}  ({path})");
        if crate::output::columns(&line) <= WIDTH {
            out.push_str(&line);
            out.push('\n');
        } else {
            // The file under its id.
            out.push_str(&format!("  {id}\n    ({short_path})\n"));
        }
    }
    for (files, verb, what) in [
        (
            &planned.skipped,
            "skipped",
            "trace file(s) that did not load (`skip_invalid`)",
        ),
        (&planned.ignored, "ignored", "file(s) that hold no trace"),
    ] {
        if files.is_empty() {
            continue;
        }
        out.push_str(&field(verb, &format!("{} {what}", files.len())));
        for f in files {
            let path = crate::output::display_path(&suite.dir.join(&f.file));
            out.push_str(&wrap_after("  ", 4, &format!("{path}: {}", f.error), WIDTH));
        }
    }
    // What the importers changed in the traces, grouped by kind (`run --verbose` lists each),
    // each line within the width (a kind's first place names a file and a JSON path; a path
    // longer than a line stays whole on a line of its own).
    out.push_str(
        planned
            .import_warnings
            .text("`run --verbose` lists each one")
            .trim_start_matches('\n'),
    );
    if !suite.overrides.is_empty() {
        out.push_str(&wrap_after(
            "overrides ",
            10,
            &suite.overrides.as_flags(),
            WIDTH,
        ));
    }
    out
}

/// What the suite asks that works, but probably not as meant, said before the plan (dry run or
/// not): a variant's `agent_model` the price table does not know (no price, and no context
/// window: the preset's default applies where the trace records none), and a needle `ask_at`
/// past a trace's last model call (asked at its end, as `"end"`).
pub fn suite_warnings(suite: &LoadedSuite, plan: &crate::runner::Plan) -> Vec<String> {
    let mut out = Vec::new();
    let prices = crate::pricing::PriceTable::bundled()
        .with_overrides(&suite.suite.pricing)
        .unwrap_or_else(|_| crate::pricing::PriceTable::bundled().clone());
    let mut said = std::collections::BTreeSet::new();
    for v in &plan.variants {
        let Some(model) = v.config.agent_model.as_deref() else {
            continue;
        };
        let Some(why) = prices.unknown_model(model) else {
            continue;
        };
        let (window, with) = match v.config.window {
            Some(_) => ("", ""),
            None => (
                "; a trace that records no window takes the preset's default, not this model's",
                " with its `window`",
            ),
        };
        let e = suite.variant_error(
            v,
            &["agent_model"],
            &format!("`agent_model`: {why}{window} (price it under `[pricing.\"{model}\"]`{with})"),
        );
        // One warning per place written (a base value shows in every variant).
        if said.insert((e.file.clone(), e.line, model.to_string())) {
            out.push(e.to_string());
        }
    }
    if let Some(n) = suite.suite.evals.needle.as_ref().filter(|n| n.enabled) {
        if let crate::evalspec::needle::AskAt::Call(k) = n.ask_at {
            let short: Vec<(&str, usize)> = plan
                .traces
                .iter()
                .filter_map(|t| {
                    let calls = t
                        .trace
                        .as_ref()?
                        .messages
                        .iter()
                        .filter(|m| m.role == crate::trace::Role::Assistant)
                        .count();
                    ((calls as u64) < k).then_some((t.id.as_str(), calls))
                })
                .collect();
            if let Some((id, calls)) = short.first() {
                let e = suite.error_at(
                    &["evals", "needle", "ask_at"],
                    format!(
                        "`ask_at` = {k} is past the last model call of {} of {} trace(s) (e.g. \
                         `{id}` has {calls}): their questions are asked at the trace's end, as \
                         with `ask_at = \"end\"`",
                        short.len(),
                        plan.traces.len()
                    ),
                );
                out.push(e.to_string());
            }
        }
    }
    out
}

/// Refuse to start a fresh run whose estimated spend (upper end, this shard's share) exceeds
/// the budget `limit`.
fn check_estimate(
    plan: &crate::runner::Plan,
    suite: &LoadedSuite,
    limit: f64,
    shard: Option<Shard>,
) -> anyhow::Result<()> {
    let est = crate::evals::estimate::estimate(plan, suite)?;
    let share = shard.map_or(1.0, |s| 1.0 / f64::from(s.count.max(1)));
    let (lo, hi) = est.spend();
    let (lo, hi) = (lo.map(|x| x * share), hi.map(|x| x * share));
    let Some(hi) = hi else {
        // An unknown price: the budget could count none of that spend (it would count $0).
        return Err(UsageError(format!(
            "max_cost_usd = ${limit} cannot be enforced: no price for {}; add it under the \
             suite's [pricing] (docs/suite.md), or start anyway with --ignore-estimate (spend \
             at an unknown price is then not counted against the budget)",
            est.unpriced_spend().join(", ")
        ))
        .into());
    };
    if hi > limit {
        return Err(UsageError(format!(
            "the estimated spend on model calls is ${:.4}–${hi:.4}{}, above the budget \
             max_cost_usd = ${limit}; raise --max-cost-usd, narrow the run (--limit, --eval, \
             --variant), or start anyway with --ignore-estimate (the budget still stops the run \
             while it spends). `ctxbench run SUITE --dry-run` shows the estimate per role",
            lo.unwrap_or(0.0),
            if share < 1.0 { " for this shard" } else { "" }
        ))
        .into());
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // clap's `requires = "resume"` is not enforced when an argument that conflicts with
    // `--resume` (`--run-id`, `-o`) is given: a fresh run must not silently drop these flags.
    if args.resume.is_none() {
        for (given, flag) in [
            (args.retry_failed, "--retry-failed"),
            (args.repair, "--repair"),
        ] {
            if given {
                return Err(UsageError(format!(
                    "{flag} works on an existing run and needs --resume RUN_DIR (e.g. `ctxbench \
                     run SUITE --resume reports/<run-id> {flag}`); --run-id and -o start a new run"
                ))
                .into());
            }
        }
    }
    if let Some(dir) = &args.resume {
        // Before anything reads or writes it (a lock file): a directory that is no run, or an
        // empty one, is refused and left as it was.
        super::resume_arg("--resume", dir)?;
    }
    if let (true, Some(dir)) = (args.repair, &args.resume) {
        // A run that never started has no journal to repair: it is started over.
        if !crate::record::RunDir::new(dir).never_started() {
            super::repair::repair("--resume", dir)?;
        }
    }
    let suite = LoadedSuite::load_with(&args.suite, &overrides(&args)?)?;
    let (kind, spec) = args
        .executor
        .split_once(':')
        .unwrap_or((args.executor.as_str(), ""));
    let synthetic = match kind {
        "default" if spec.is_empty() => None,
        "synthetic" => Some(SyntheticExecutor::parse(spec).map_err(UsageError)?),
        _ => {
            return Err(UsageError(format!(
                "--executor `{}`: expected `default` or `synthetic[:delay_ms=N,fail_every=K]`",
                args.executor
            ))
            .into())
        }
    };
    let loader: &dyn TraceLoader = if synthetic.is_some() {
        &SyntheticLoader
    } else {
        &ImportLoader
    };
    let opts = RunOptions {
        resume: args.resume.clone(),
        retry_failed: args.retry_failed,
        shard: args.shard,
        max_cost_usd: args.max_cost_usd,
        run_id: args.run_id.clone(),
        output: args.output.as_deref().map(super::output_dir).transpose()?,
        no_cache: args.no_cache,
        verbose: args.verbose,
        spill_above: args.spill.spill_above,
        jobs: args.jobs.map(|j| j as usize),
        progress: crate::output::progress_mode(args.quiet).map_err(UsageError)?,
        executor: if synthetic.is_some() {
            args.executor.clone()
        } else {
            "default".into()
        },
    };

    // Plan and build the executor before anything is written, so a suite this build cannot
    // run leaves no run directory behind.
    let planned = session::plan_run(&suite, loader)?;
    for w in suite_warnings(&suite, &planned.plan) {
        crate::output::errln!("warning: {w}");
    }
    if args.verbose {
        // Every import warning of the planned traces (run.json and the reports group them).
        let listed = crate::record::import_warnings::listed(
            planned
                .plan
                .traces
                .iter()
                .filter_map(|t| Some(t.trace.as_deref()?.warned())),
        );
        if !listed.is_empty() {
            crate::output::errln!("{}", listed.trim_matches('\n'));
        }
    }
    if args.dry_run {
        if let Some(dir) = &args.resume {
            return Err(UsageError(format!(
                "--dry-run plans a fresh run of the suite and does not read --resume's run \
                 directory: `ctxbench report {}` shows what it holds, and `ctxbench run SUITE \
                 --resume {0}` runs only its missing units",
                crate::output::shell_word(&crate::output::display_path(dir))
            ))
            .into());
        }
        out!("{}", plan_text(&suite, &planned))?;
        if let Some(s) = args.shard {
            let plan = &planned.plan;
            let mine = (0..plan.len()).filter(|&i| s.contains(&plan.id(i))).count();
            out!(
                "shard    {s}: {mine} of {} units (the estimate below is for all {0})\n",
                plan.len()
            )?;
        }
        if synthetic.is_none() {
            let est = crate::evals::estimate::estimate(&planned.plan, &suite)?;
            out!("{}", est.table())?;
        }
        return Ok(ExitCode::from(EXIT_OK));
    }
    let limit = args.max_cost_usd.or(suite.suite.suite.max_cost_usd);
    // A resumed run spent part of its budget already; one that never started spent nothing
    // and is estimated as a new run.
    let continued = args
        .resume
        .as_ref()
        .filter(|d| !crate::record::RunDir::new(d).never_started());
    if let (Some(limit), None, false, None) = (limit, continued, args.ignore_estimate, &synthetic) {
        check_estimate(&planned.plan, &suite, limit, args.shard)?;
    }
    let exec: Arc<dyn UnitExecutor> = match synthetic {
        Some(s) => Arc::new(s),
        None => {
            let router = default_router(&planned.plan, &suite)?;
            let missing = crate::runner::unsupported_evals(&suite, &router);
            if !missing.is_empty() {
                anyhow::bail!(
                    "no executor is registered for eval(s) {} (see `evals::executors::register`); \
                     `--executor synthetic` exercises the runner without them",
                    missing
                        .iter()
                        .map(|e| format!("`{e}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            Arc::new(router)
        }
    };
    let mut prepared = session::open_run(&suite, &opts, planned)?;
    prepared.dispatch.interrupt_grace = Duration::try_from_secs_f64(args.grace_secs)
        .ok()
        .filter(|d| d.as_secs() <= 86_400)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--grace-secs {}: expected seconds between 0 and 86400",
                args.grace_secs
            )
        })?;
    if args.keep_stores {
        prepared.dispatch.stores = crate::runner::stores::StorePolicy::Dirs;
    }
    // A run whose every unit waits on nothing outside the process runs each unit whole on
    // rayon's threads (`runner::on_one_thread_each`): the runtime only dispatches and records, which
    // one worker does. A second one only took turns with it: a unit ending on rayon woke one
    // worker, which woke the other to look for more work (futex calls, context switches).
    let plan = &prepared.plan;
    // (`is_offline` is a function of the unit's eval: one unit a sample decides for all.)
    let offline = !plan.is_empty()
        && (0..plan.samples.len()).all(|s| exec.is_offline(&plan.unit(s * plan.repeats as usize)));
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if offline {
        runtime.worker_threads(1);
    }
    let rt = runtime.enable_all().build()?;
    let terminated = Arc::new(AtomicBool::new(false));
    let outcome = rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        forward_signals(tx, terminated.clone());
        // The dispatcher runs as a task on the runtime's workers, not on this thread: a unit it
        // spawns from there waits in its worker's queue (run next, no other thread woken), and
        // a finished unit wakes the dispatcher on the worker it finished on. From this thread
        // each unit cost two cross-thread wake-ups more (futex calls and context switches).
        match tokio::spawn(async move { session::execute(prepared, exec, &mut rx).await }).await {
            Ok(outcome) => outcome,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(anyhow::anyhow!("the run's dispatcher did not finish: {e}")),
        }
    });
    // External engines still running (a cancelled unit's, or idle in the pool) are killed: a
    // replay blocked on one returns at once, and none outlives the run.
    crate::engine::external::shutdown();
    // Cancelled units may leave a replay finishing on a blocking thread (its model calls already
    // cancelled): do not wait for it past a short bound; nothing it does is recorded any more.
    rt.shutdown_timeout(Duration::from_secs(2));
    let mut outcome = outcome?;

    // Reports from what was recorded — also after Ctrl-C or a budget stop (a partial report).
    let report = write_reports(
        &outcome.run_dir,
        args.keep_stores,
        outcome.rows.take(),
        args.spill.options(),
    );
    let m = &outcome.manifest;
    let dir = crate::output::display_path(&outcome.run_dir);
    if args.quiet {
        outln!("{dir}")?;
    } else {
        match &report {
            Ok(summary) => out!("{summary}")?,
            Err(e) => crate::output::errln!(
                "warning: reports were not written: {}",
                crate::output::error_chain(e)
            ),
        }
        // Every role, eval-agent calls included: the same total as report.md's "Run total".
        let tokens = m.totals.tokens.total();
        outln!("run      {dir}")?;
        outln!(
            "units    {}/{} recorded, {} failed{}",
            m.units.recorded,
            m.units.planned,
            m.units.failed,
            match m.shard {
                Some(s) => format!(" (shard {s} of {} units)", m.units.planned_total),
                None => String::new(),
            }
        )?;
        // Wrapped at 100 columns under its value (an unknown price's note ran to 176).
        let text = format!("{}  ·  {}", human_tokens(tokens), m.totals.cost.line());
        let wrapped = if crate::output::columns(&text) <= 100 - 9 {
            text
        } else {
            crate::output::wrap(&text, 100 - 9).replace('\n', "\n         ")
        };
        outln!("tokens   {}", wrapped.trim_end())?;
    }
    if m.options.max_cost_usd.is_some() && outcome.report.unpriced_spend > 0 {
        crate::output::errln!(
            "warning: {} unit(s) spent on model calls at an unknown price, which max_cost_usd \
             could not count; add the models under the suite's [pricing] (docs/suite.md)",
            outcome.report.unpriced_spend
        );
    }
    let code = match m.status {
        RunStatus::Interrupted => {
            let term = terminated.load(Ordering::SeqCst);
            crate::output::errln!(
                "{}: {} unit(s) not run; continue with `ctxbench run {} --resume {}`",
                if term {
                    "terminated (SIGTERM)"
                } else {
                    "interrupted"
                },
                m.units.not_run_interrupted,
                crate::output::shell_word(&args.suite.to_string_lossy()),
                crate::output::shell_word(&dir)
            );
            if term {
                EXIT_TERMINATED
            } else {
                EXIT_INTERRUPTED
            }
        }
        RunStatus::BudgetExhausted => {
            crate::output::errln!(
                "stopped by the budget (${:.4} of ${:.4} spent): {} unit(s) not run; raise it with `--resume {} --max-cost-usd X`",
                m.totals.spent_usd,
                m.options.max_cost_usd.unwrap_or_default(),
                m.units.not_run_budget,
                crate::output::shell_word(&dir)
            );
            EXIT_FAILURE
        }
        _ if outcome.failed_total > 0 && suite.suite.suite.fail_on_errors => {
            crate::output::errln!(
                "{} unit(s) failed and the suite sets `fail_on_errors = true` (errors are in samples.jsonl)",
                outcome.failed_total
            );
            EXIT_FAILURE
        }
        _ => EXIT_OK,
    };
    Ok(ExitCode::from(code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RunDir, RunInfo, Sample, UnitError};

    #[test]
    fn the_stores_line_counts_the_kept_stores_on_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::new(tmp.path().join("run"));
        let mut samples = Vec::new();
        // Passed units with a store each, one a trace: report.html shows a dozen of them.
        for i in 0..30 {
            let id = format!("u{i}");
            std::fs::create_dir_all(dir.unit_store(&id)).unwrap();
            std::fs::write(dir.unit_store(&id).join("a"), "x").unwrap();
            let s = Sample::builder()
                .unit_id(&id)
                .trace(format!("t{i:02}"))
                .passed(true)
                .build();
            samples.push(s);
        }
        // A failed unit (kept) whose store the run did not write: a marker only.
        let packs = crate::engine::store::PackFile::new(dir.stores_pack());
        packs.skip("u30").unwrap();
        packs.flush().unwrap();
        let mut s = Sample::builder()
            .unit_id("u30")
            .trace("t30")
            .passed(true)
            .build();
        s.error = Some(UnitError {
            kind: "eval".into(),
            message: "x".into(),
        });
        samples.push(s);
        let model = crate::report::ReportModel::build(&RunInfo::new("r"), samples);
        let text = stores_text(&dir, &model, false);
        let on_disk = std::fs::read_dir(dir.stores_dir()).unwrap().count();
        assert!(
            text.contains(&format!("kept {on_disk} offload stores of 31 units")),
            "{on_disk} on disk: {text}"
        );
        assert!(text.contains("note: 1 offload store(s)"), "{text}");
        // A resumed session's prune: the earlier one removed most stores already, this one
        // removes the stores its units wrote again. The count is of the run's units (it said
        // "kept 13 of 16": the stores this prune saw).
        let removed: Vec<String> = (0..30)
            .map(|i| format!("u{i}"))
            .filter(|id| !dir.unit_store(id).exists())
            .take(3)
            .collect();
        assert_eq!(removed.len(), 3);
        for id in &removed {
            std::fs::create_dir_all(dir.unit_store(id)).unwrap();
        }
        let text = stores_text(&dir, &model, false);
        assert!(
            text.contains(&format!("kept {on_disk} offload stores of 31 units")),
            "{on_disk} on disk: {text}"
        );
    }
}
