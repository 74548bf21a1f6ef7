//! `ctxbench gate`: evaluate gate rules on a run against a baseline run; exit 10 on a
//! significant regression, a partial candidate run, failed candidate units or rules that could
//! check nothing. Grammar and semantics: see `crate::gate`.

use super::coverage;
use super::resolved;
use super::{UsageError, EXIT_GATE_FAILED};
use crate::gate;
use crate::record::RunDir;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Extra `--help` text: the rule grammar and what makes a rule fail.
const RULES_HELP: &str = "\
Rules come from the run's suite ([gates] rules, stored in run.json), or from --rules FILE and
--rule RULE, which replace them.

Rule grammar:  [VARIANT:] METRIC[.delta|.delta_pct] OP NUMBER    (OP: >= > <= <)

  needle.recall >= 0.95            the run's mean recall is at least 0.95
  drift.score >= 4.0
  needle.recall.delta >= -0.02     paired change vs the baseline run, same variant
  cost.delta_pct <= 5              cost per unit grows by at most 5%
  aggressive: needle.pass >= 0.5   only for variant `aggressive`

METRIC is a report metric: <eval>.<score>, <eval>.pass, cost (USD per unit) or tokens, or one
role's tokens or cost: tokens.ROLE, cost.ROLE (ROLE: agent, summarizer, judge, eval_agent).
A delta rule fails when its value is beyond the threshold AND significantly so: against a
threshold of 0, the change is significant (p < 0.05, tested by trace: a cluster bootstrap or a
sign test; McNemar for pass/fail metrics of independent units), as `compare` says it; against
any other threshold, the whole 95% CI of the change lies beyond it (`tokens.delta_pct <= -10`
fails on a variant that saves nothing). A failed delta rule whose change goes the wrong way is a
regression. With fewer than 6 traces nothing can be tested: a delta rule beyond its threshold
then fails closed (`too few traces`).
An absolute rule compares the candidate with the threshold, not with the baseline: it is a
threshold miss when the whole 95% CI of the mean lies beyond the threshold (the mean alone
decides without a CI). A metric with no value for a variant (e.g. cost at an unknown price) is
reported as skipped. A rules file holds one rule per line (# starts a comment), or, as *.toml,
rules = [...] at the top level or under [gates].

The candidate and the baseline must be runs of the same suite (same suite name) with at least
one variant in common; otherwise the gate stops with exit code 2 rather than compare nothing.
Variants one run lacks are named in a note, and so are the baseline's units (by trace and eval)
the candidate lacks in the variants both have, as when the candidate was narrowed with --trace,
--eval or --limit: those units are not gated, and the note says how many; it fails nothing
(--json: baseline_units_missing).

Besides its rules, the gate checks the candidate run itself, and fails (exit 10) when:
  - it is partial: its run.json status is not `complete` (interrupted, killed while `running`,
    stopped by the budget, a merge missing shards) or it is one shard of a sharded run; its
    numbers would be of the units it recorded only;
  - more of its units failed than --max-errors (default 0): a failed unit has no score and
    drops out of every mean and pair, so it could hide any regression. --max-errors N passes
    up to N failed units (still stated);
  - no rule could be checked: every rule was skipped for every variant (no value to judge, e.g.
    needle.recall of a run whose needle units were all not applicable to their traces), so the
    gate verified nothing (`run checked`, naming why each rule was skipped). --allow-unchecked
    lets such a gate pass (still stated). Some rules checked and others skipped is no failure.
A partial baseline and failed baseline units are stated in a note and fail nothing, as are the
needle units of either run that did not apply to their trace (the report's NOT APPLICABLE note).
When neither run has a needle metric because both runs' needle units were all not applicable,
its rules are skipped too (a gate of them alone checked nothing: exit 10 unless
--allow-unchecked); a misspelt metric is still refused (exit 2), with the note.

Writes JUnit XML (--junit FILE, its directory created when missing; default RUN/gate.xml in
the candidate run; never into the baseline run nor into any other run's directory) and, when
GITHUB_STEP_SUMMARY is set, appends a Markdown summary to that file. --json prints the
verdicts as JSON on stdout instead of the text lines.

Exit codes:
  0   every rule passed (skipped rules do not fail the gate while at least one rule was
      checked, or with --allow-unchecked), the candidate run is complete and has no more failed
      units than --max-errors
  10  a rule failed (a significant regression or a threshold miss), the candidate run is
      partial, more of its units failed than --max-errors, or no rule could be checked (every
      rule skipped for every variant) without --allow-unchecked
  2   bad usage: bad rule or rules file, unknown metric or variant, unreadable run directory,
      unrelated runs (different suites or no shared variant), --junit inside the baseline run
      or another run's directory, --junit naming a directory, a run that never started;
      a JUnit file of an earlier gate at the --junit path is removed (no verdict was reached)
  1   the JUnit XML or the step summary could not be written

Examples:
  ctxbench gate reports/pr-123 --baseline reports/main
  ctxbench gate reports/pr-123 --baseline reports/main --rule 'needle.recall.delta >= -0.02'
  ctxbench gate reports/pr-123 --baseline reports/main --rules gates.txt --junit out/gate.xml
  ctxbench gate reports/pr-123 --baseline reports/main --json | jq .passed";

/// Fail (exit 10) when a rule regresses significantly against a baseline run or misses its
/// threshold.
#[derive(Debug, clap::Args)]
#[command(after_long_help = RULES_HELP)]
// `[gates]` in the `--help` text below is the suite's TOML table, not a rustdoc link.
#[allow(rustdoc::broken_intra_doc_links)]
pub struct Args {
    /// Run directory to check (holds run.json and samples.jsonl)
    #[arg(value_name = "RUN")]
    pub run: PathBuf,
    /// Baseline run directory to compare with
    #[arg(long, value_name = "RUN_DIR")]
    pub baseline: PathBuf,
    /// Rules file (one rule per line, or TOML with `rules = [...]`) instead of the suite's [gates]
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// A rule given on the command line (repeatable), instead of the suite's [gates]
    #[arg(long = "rule", value_name = "RULE")]
    pub rule: Vec<String>,
    /// Where to write JUnit XML [default: RUN/gate.xml, in the candidate run]
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Print the result as JSON on stdout (verdicts, values, CIs, p-values) instead of text
    #[arg(long)]
    pub json: bool,
    /// Failed units the candidate run may have and still pass (0: any failed unit fails the
    /// gate)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_errors: usize,
    /// Pass when every rule was skipped for every variant (nothing could be checked); without
    /// it such a gate fails (exit 10). Either way the gate says so
    #[arg(long)]
    pub allow_unchecked: bool,
    #[command(flatten)]
    pub spill: super::SpillArgs,
}

/// `ctxbench gate --json`: the outcome with its totals and where the JUnit XML went.
#[derive(serde::Serialize)]
struct GateJson<'a> {
    schema_version: u32,
    passed: bool,
    exit_code: u8,
    failed: usize,
    skipped: usize,
    /// Units of the baseline run, in the variants both runs have, that the candidate lacks (not
    /// gated; a note says which).
    baseline_units_missing: usize,
    junit: String,
    #[serde(flatten)]
    outcome: &'a gate::GateOutcome,
}

/// The gate never writes into the baseline run (unless it is also the candidate run), nor into
/// any other run's directory but the candidate's (`super::refuse_other_run`, as `report` and
/// `compare`): a JUnit file there would replace that run's own file of its name.
fn check_junit_path(
    junit: &std::path::Path,
    run: &std::path::Path,
    baseline: &std::path::Path,
) -> Result<(), UsageError> {
    let default = RunDir::new(run).gate_xml();
    // A path that cannot be a file is refused before the gate runs: the verdict was printed,
    // then the write failed and the gate exited 1, its verdict (0 or 10) lost.
    if junit.is_dir() {
        return Err(UsageError(crate::output::error_text(&format!(
            "--junit {}: is a directory; --junit names the JUnit file to write (e.g. --junit {})",
            junit.display(),
            RunDir::new(junit).gate_xml().display()
        ))));
    }
    if let Some(file) = crate::output::file_above(junit) {
        return Err(UsageError(crate::output::error_text(&format!(
            "--junit {}: {} is a file, not a directory",
            junit.display(),
            file.display()
        ))));
    }
    let (j, r, b) = (resolved(junit), resolved(run), resolved(baseline));
    let output = super::Output {
        flag: "--junit",
        path: junit,
        writes: "its JUnit file",
        default: &default,
    };
    if r != b && j.starts_with(&b) {
        return Err(UsageError(crate::output::error_text(&format!(
            "--junit {}: is inside the baseline run {}; the gate never writes into the baseline \
             (default: gate.xml in the candidate run {})",
            junit.display(),
            baseline.display(),
            run.display()
        ))));
    }
    super::refuse_other_run(&output, &[run], "gate")?;
    // In the candidate run the JUnit file takes a name none of the run's own files has: an
    // `.xml` file outside its stores and plots (`--junit RUN/run.json` replaced the run's
    // run.json with XML, and a gate without a verdict then removed it).
    if j.starts_with(&r) {
        let rel = j.strip_prefix(&r).unwrap_or(&j);
        let run_dir = RunDir::new(&r);
        let in_run_folder = [run_dir.stores_dir(), run_dir.plots_dir()]
            .iter()
            .any(|d| j.starts_with(d));
        let xml = j.extension().is_some_and(|e| e.eq_ignore_ascii_case("xml"));
        if in_run_folder || !xml || rel.as_os_str().is_empty() {
            return Err(UsageError(crate::output::error_text(&format!(
                "--junit {}: is in the candidate run {} but is not a name for a JUnit file there \
                 (an .xml file outside its stores/ and plots/): it would replace one of the \
                 run's own files (default: {})",
                junit.display(),
                run.display(),
                default.display()
            ))));
        }
    }
    Ok(())
}

/// Whether the file at `path` is a JUnit document a gate wrote (its first bytes): only such a
/// file is removed as the stale verdict of an earlier gate.
fn is_gate_junit(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    head.starts_with("<?xml") && head.contains("<testsuites name=\"ctxbench gate\"")
}

/// The directory the JUnit file goes in (`.` for a bare file name).
fn junit_dir(junit: &std::path::Path) -> &std::path::Path {
    junit
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
}

/// The JUnit file, then the GitHub step summary when `GITHUB_STEP_SUMMARY` is set.
fn write_gate_files(
    junit_path: &std::path::Path,
    outcome: &gate::GateOutcome,
) -> anyhow::Result<()> {
    // Its directory is created when missing, as `-o DIR` is (`--junit out/gate.xml` in a fresh
    // CI checkout failed with exit 1 after the verdict).
    std::fs::create_dir_all(junit_dir(junit_path))
        .and_then(|()| std::fs::write(junit_path, crate::report::junit::render(outcome)))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", junit_path.display()))?;
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
        let path = PathBuf::from(summary);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| {
                anyhow::anyhow!("cannot open GITHUB_STEP_SUMMARY {}: {e}", path.display())
            })?;
        f.write_all(crate::report::markdown::gate_summary(outcome).as_bytes())
            .map_err(|e| {
                anyhow::anyhow!("cannot write GITHUB_STEP_SUMMARY {}: {e}", path.display())
            })?;
    }
    Ok(())
}

/// What the gate keeps of a run's units once it has their observations, for the note on the
/// baseline's units the candidate lacks ([`coverage::only_in`]): the keys of a run read into
/// memory (its rows are dropped), or a spilled run's rows (on disk).
enum KeptUnits {
    Keys(coverage::UnitKeys),
    Spilled(Box<crate::report::spill::SpilledRows>),
}

impl KeptUnits {
    fn units(&self) -> coverage::Units<'_> {
        match self {
            KeptUnits::Keys(keys) => coverage::Units::Keys(keys),
            KeptUnits::Spilled(rows) => coverage::Units::Spilled(rows),
        }
    }
}

/// A run as the gate reads it, and what its notes need of it.
struct ReadRun {
    run: gate::GateRun,
    /// A torn final line (the run was interrupted as it wrote it), not read.
    torn: Option<crate::record::TornLine>,
    units: KeptUnits,
    /// Its needle units that did not apply to their trace, for the report's note.
    not_applicable: crate::report::model::NotApplicable,
}

/// A run as the gate reads it: samples.jsonl streamed into compact rows (`report::load`), the
/// gate's observations, the units' keys and its not applicable needle units built from them,
/// the rows dropped; a run of more than `spill.above` samples spilled (its rows sorted on disk,
/// then its observations: [`spilled_run`]). `live_note`: whether to say that a live process
/// writes it (not of the baseline when it is the candidate run, whose note is said already).
fn gate_run(
    dir: &RunDir,
    spill: &crate::report::spill::SpillOptions,
    live_note: bool,
) -> Result<ReadRun, UsageError> {
    if let Some(pid) = dir.writer().filter(|_| live_note) {
        crate::output::errln!("{}", dir.in_progress_note(pid));
    }
    let info: crate::record::RunInfo =
        dir.read_run_json().map_err(|e| UsageError(e.to_string()))?;
    let progress = dir.read_progress().map_err(|e| UsageError(e.to_string()))?;
    let path = dir.samples_jsonl();
    let loaded = crate::report::load::stream_samples_spilling(&path, spill)
        .map_err(|e| UsageError(e.to_string()))?;
    let mut not_applicable = crate::report::model::NotApplicable::default();
    let (mut run, torn, units) = match loaded {
        crate::report::load::Loaded::Rows(streamed) => {
            // Each unit once, by its first line (as every figure counts it).
            let mut first = crate::metrics::aggregate::FirstLines::default();
            for r in streamed.rows.iter() {
                if first.is_first(&r) {
                    not_applicable.add(&r);
                }
            }
            (
                gate::GateRun::new(info, streamed.rows.iter()),
                streamed.torn,
                KeptUnits::Keys(coverage::UnitKeys::of(streamed.rows.iter())),
            )
        }
        crate::report::load::Loaded::Spilled(rows, torn) => {
            let run = spilled_run(info, &rows, spill.run_rows.max(1) * 4, &mut not_applicable)?;
            (run, torn, KeptUnits::Spilled(Box::new(rows)))
        }
    };
    run.progress = progress;
    Ok(ReadRun {
        run,
        torn,
        units,
        not_applicable,
    })
}

/// The gate's run of rows spilled to disk: one pass over them (in their sorted order) counts
/// the units of each variant and sends every observation, the per-role ones too, to sorted
/// runs on disk (`report::spill::ObsSpill`, `run_len` a run), merged into one file the rules
/// read range by range. Each observation carries its row's place, a per-role one after every
/// row's: the first of duplicate keys kept is the one `aggregate::observations_with_roles`
/// keeps, so every figure is the in-memory gate's. The same pass counts the not applicable
/// needle units into `not_applicable`.
fn spilled_run(
    info: crate::record::RunInfo,
    rows: &crate::report::spill::SpilledRows,
    run_len: usize,
    not_applicable: &mut crate::report::model::NotApplicable,
) -> Result<gate::GateRun, UsageError> {
    let io = |e: std::io::Error| {
        UsageError(format!(
            "cannot write temporary files in {}: {e}",
            rows.dir().path().display()
        ))
    };
    let mut obs = crate::report::spill::ObsSpill::new(rows.dir().clone(), run_len);
    let mut units: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failed = None;
    let roles_after = rows.len();
    // A unit journaled more than once counts once, by its first line (as in memory).
    let duplicates = rows
        .for_each_unique(|i, s, _, _| {
            let u = match units.get_mut(s.variant) {
                Some(u) => u,
                None => units.entry(s.variant.to_string()).or_default(),
            };
            u.0 += 1;
            u.1 += usize::from(s.error.is_some());
            not_applicable.add(&s);
            if failed.is_none() {
                failed = obs.push_row(&s, i, roles_after).err();
            }
        })
        .map_err(io)?;
    if let Some(e) = failed {
        return Err(io(e));
    }
    let file = obs.finish().map_err(io)?;
    Ok(gate::GateRun::from_lists(
        info,
        &units,
        duplicates,
        Box::new(SpilledObs(file)),
    ))
}

/// A spilled run's observations as the gate reads them.
struct SpilledObs(crate::report::spill::ObsFile);

impl SpilledObs {
    fn range(&self, variant: &str, metric: &str) -> Option<(u64, usize)> {
        self.0.index.get(variant)?.get(metric).copied()
    }
}

impl gate::ObsLists for SpilledObs {
    fn metrics(&self) -> BTreeSet<&str> {
        self.0
            .index
            .values()
            .flat_map(|m| m.keys().map(String::as_str))
            .collect()
    }
    fn len(&self, variant: &str, metric: &str) -> Option<usize> {
        self.range(variant, metric).map(|r| r.1)
    }
    fn read<'a>(
        &'a self,
        variant: &str,
        metric: &str,
    ) -> Box<dyn Iterator<Item = crate::metrics::aggregate::Obs> + 'a> {
        match self.range(variant, metric) {
            Some(r) => Box::new(self.0.read(r)),
            None => Box::new(std::iter::empty()),
        }
    }
    fn error(&self) -> Option<String> {
        self.0.error().map(|e| e.to_string())
    }
}

/// The note on the baseline's units the candidate (`cand`, in `dir`) lacks: how many, of how
/// many traces and evals, what the candidate covers, and the cause its run.json tells: a run
/// narrowed on the command line (`overrides`), trace files that gave no trace (skipped or
/// ignored), a partial run; else another selection in its suite.
fn missing_note(missing: &coverage::OnlyIn, candidate: &gate::GateRun, dir: &RunDir) -> String {
    let cand = candidate.info.run_id.as_str();
    #[derive(serde::Deserialize)]
    struct Recorded {
        #[serde(default)]
        overrides: crate::config::Overrides,
    }
    let overrides = dir
        .read_run_json::<Recorded>()
        .map(|r| r.overrides)
        .unwrap_or_default();
    let progress = &candidate.progress;
    let mut causes = Vec::new();
    if !overrides.is_empty() {
        causes.push(format!("it was run with `{}`", overrides.as_flags()));
    }
    causes.extend(progress.left_out());
    causes.extend(progress.partial(candidate.failed_units().1));
    let cause = if causes.is_empty() {
        format!(
            "candidate {cand} records neither: its suite selects other traces, evals or samples \
             than the baseline's"
        )
    } else {
        format!("candidate {cand}: {}", causes.join("; "))
    };
    let m = missing;
    format!(
        "{}, not gated: candidate {cand} covers {} of the baseline's {} trace(s), {} of its {} \
         eval(s) and {} of its {} unit(s) in the variants both runs have{}; a run narrowed with \
         --trace, --eval or --limit (run.json `overrides`), or trace files that gave no trace, \
         are the usual causes: {cause}",
        m.counted("baseline"),
        m.of_traces - m.whole_traces.len(),
        m.of_traces,
        m.of_evals - m.whole_evals.len(),
        m.of_evals,
        m.of_units - m.units,
        m.of_units,
        m.named("baseline"),
    )
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let junit_path = args
        .junit
        .clone()
        .unwrap_or_else(|| RunDir::new(&args.run).gate_xml());
    let result = gate(&args, &junit_path);
    let no_verdict = result
        .as_ref()
        .is_err_and(|e| super::exit_code_for(e) == crate::error::EXIT_USAGE);
    // (Never in a live run's directory: its writer owns it.)
    let live = RunDir::new(junit_dir(&junit_path)).writer().is_some();
    if no_verdict
        && !live
        && check_junit_path(&junit_path, &args.run, &args.baseline).is_ok()
        && is_gate_junit(&junit_path)
    {
        // No verdict (exit 2: the runs, rules or arguments were refused before a verdict was
        // written): a JUnit file from an earlier gate must not stand for this one (a CI test
        // reporter would show its stale result). Never in the baseline run, and only a file that
        // reads as a gate's JUnit document (`--junit` may name any file). A later failure
        // (the step summary cannot be written) keeps this gate's own file.
        match std::fs::remove_file(&junit_path) {
            Ok(()) => crate::output::errln!(
                "note: removed {} of an earlier gate: this gate gave no verdict",
                crate::output::display_path(&junit_path)
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => crate::output::errln!("warning: cannot remove {}: {e}", junit_path.display()),
        }
    }
    result
}

fn gate(args: &Args, junit_path: &std::path::Path) -> anyhow::Result<ExitCode> {
    super::run_to_read("RUN", &args.run, "gate")?;
    super::run_to_read("--baseline", &args.baseline, "gate against")?;
    let cand_dir = RunDir::new(&args.run);
    // `--baseline RUN RUN`: one run read twice, and said once (its live-run note, and below
    // its not applicable units).
    let same = resolved(&args.run) == resolved(&args.baseline);
    // A big run's rows and observations spill to the temporary directory (TMPDIR; removed when
    // done): docs/report.md, "Reports of big runs".
    let spill = args.spill.options();
    let ReadRun {
        run: cand,
        torn: cand_torn,
        units: cand_units,
        not_applicable: cand_na,
    } = gate_run(&cand_dir, &spill, true)?;
    let base_dir = RunDir::new(&args.baseline);
    let ReadRun {
        run: base,
        torn: base_torn,
        units: base_units,
        not_applicable: base_na,
    } = gate_run(&base_dir, &spill, !same)?;
    let mut rules = Vec::new();
    if let Some(path) = &args.rules {
        rules.extend(gate::parse_rules_file(path).map_err(UsageError)?);
    }
    for r in &args.rule {
        rules.push(
            gate::parse_rule(r)
                .map(|r| r.at("--rule"))
                .map_err(|e| UsageError(format!("--rule: {e}")))?,
        );
    }
    if args.rules.is_none() && args.rule.is_empty() {
        for (i, r) in cand.info.gate_rules().iter().enumerate() {
            let at = format!("{}: suite.gates.rules[{i}]", cand_dir.run_json().display());
            rules.push(
                gate::parse_rule(r)
                    .map(|r| r.at(at.clone()))
                    .map_err(|e| UsageError(format!("{at}: {e}")))?,
            );
        }
    }
    if rules.is_empty() {
        return Err(UsageError(match &args.rules {
            Some(file) => format!(
                "no gate rules: --rules {} holds no rule (one rule per line, or `rules = [...]` \
                 in a *.toml file); add rules to it or pass --rule RULE",
                file.display()
            ),
            None => format!(
                "no gate rules: the suite of {} has no [gates] rules; pass --rules FILE or \
                 --rule RULE",
                args.run.display()
            ),
        })
        .into());
    }
    check_junit_path(junit_path, &args.run, &args.baseline)?;
    // One process owns a run directory: the JUnit file (by default gate.xml in the candidate
    // run) is not written into a live run's.
    let _lock = super::claim_run_output(junit_dir(junit_path), "gate", "--junit OTHER_PATH")?;
    let options = gate::GateOptions {
        seed: cand.info.seed,
        max_errors: args.max_errors,
        allow_unchecked: args.allow_unchecked,
    };
    // Needle units that did not apply to their trace have no recall: a rule on it is skipped
    // ("no `needle.recall` value"), or refused when neither run has the metric at all, and
    // this, the report's own note, says why. (Of the baseline too, once, when it is the
    // candidate run.)
    let sides: Vec<(String, &crate::report::model::NotApplicable)> = [
        ("candidate", &cand, &cand_na),
        ("baseline", &base, &base_na),
    ]
    .into_iter()
    .filter(|(side, _, _)| !(*side == "baseline" && same))
    .filter_map(|(side, run, na)| {
        let note = na.note(run.variants())?;
        Some((format!("{side} {}: {note}", run.info.run_id), na))
    })
    .collect();
    // A needle metric neither run has because every needle unit of both was not applicable is
    // no typo (a metric the eval declares, of an eval the note names): its rules are skipped,
    // and a gate of such rules alone checked nothing (exit 10 unless --allow-unchecked), as
    // when the candidate alone lacks it; an undeclared name is still refused (exit 2).
    let explained = |metric: &str| {
        crate::evalspec::metric(metric).is_some() && sides.iter().any(|(_, na)| na.explains(metric))
    };
    let mut outcome = gate::evaluate(&rules, &cand, &base, options, explained).map_err(|e| {
        let mut message = e.to_string();
        // A metric neither run has, which those units would have recorded.
        if let gate::EvaluateError::UnknownMetric { metric, .. } = &e {
            for (note, _) in sides.iter().filter(|(_, na)| na.explains(metric)) {
                message.push_str(&format!("\nnote: {note}"));
            }
        }
        UsageError(message)
    })?;
    // The baseline's units (in the variants both runs have) the candidate lacks: `compare`'s
    // count, said loudly; they fail nothing (docs/ci.md).
    let [missing, _] = coverage::only_in(
        base_units.units(),
        cand_units.units(),
        base.variants(),
        cand.variants(),
    )?;
    drop((cand_units, base_units));
    if missing.units > 0 {
        outcome.notes.push(missing_note(&missing, &cand, &cand_dir));
    }
    outcome
        .notes
        .extend(sides.into_iter().map(|(note, _)| note));
    // A torn final line is a unit the statistics do not see: said, as `compare` says it (a run
    // whose run.json counts more units than its journal holds is partial: a run check).
    for (torn, dir) in [(&cand_torn, &cand_dir), (&base_torn, &base_dir)] {
        if let Some(t) = torn {
            outcome.notes.push(format!(
                "{}: torn final line {} ignored (the run was interrupted)",
                crate::output::display_path(&dir.samples_jsonl()),
                t.line
            ));
        }
    }
    for (run, dir) in [(&cand, &cand_dir), (&base, &base_dir)] {
        if run.duplicates > 0 {
            outcome
                .notes
                .push(super::duplicates_note(&dir.samples_jsonl(), run.duplicates));
        }
    }
    for (run, dir) in [(&cand, &args.run), (&base, &args.baseline)] {
        if let Some(e) = run.read_error() {
            anyhow::bail!(
                "cannot read the temporary files of the gate of {}: {e}",
                dir.display()
            );
        }
    }

    if !args.json {
        out!("{}", crate::report::terminal::gate_lines(&outcome))?;
    }
    // The verdicts are printed also when a file cannot be written (`--json` too: the text
    // lines are above); the process then exits 1 with the error, and the JSON says so.
    let written = write_gate_files(junit_path, &outcome);
    let failed = outcome.failed();
    let code = if written.is_err() {
        crate::error::EXIT_FAILURE
    } else if failed == 0 {
        super::EXIT_OK
    } else {
        EXIT_GATE_FAILED
    };
    if args.json {
        let doc = GateJson {
            schema_version: crate::record::SCHEMA_VERSION,
            passed: failed == 0,
            exit_code: code,
            failed,
            skipped: outcome.skipped(),
            baseline_units_missing: missing.units,
            junit: junit_path.display().to_string(),
            outcome: &outcome,
        };
        super::emit_json(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
        written?;
    } else {
        written?;
        let lacking = if missing.units > 0 {
            format!(
                ", {} of {} baseline unit(s) of the shared variants not gated",
                missing.units, missing.of_units
            )
        } else {
            String::new()
        };
        outln!(
            "gate {}: {} check(s), {failed} failed, {} skipped{lacking}; JUnit XML: {}",
            if failed == 0 { "passed" } else { "FAILED" },
            outcome.run_checks.len() + outcome.results.len(),
            outcome.skipped(),
            crate::output::display_path(junit_path)
        )?;
    }
    Ok(ExitCode::from(code))
}
