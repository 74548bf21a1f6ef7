//! `ctxbench compare`: paired A/B comparison of two saved runs, variant by variant.

use super::coverage::{self, OnlyIn};
use super::UsageError;
use crate::metrics::aggregate;
use crate::output::display_path;
use crate::record::Row;
use crate::record::RunDir;
use crate::report::headline;
use crate::report::markdown;
use crate::report::sections;
use crate::report::terminal;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
The metrics are the report's (<eval>.<score>, <eval>.pass, cost, tokens) and, after them, each
role's tokens and cost: tokens.agent, tokens.summarizer, tokens.judge, tokens.eval_agent, and
cost.<role> alike (what `gate` rules can name). The terminal lists the headline metrics of each
variant and every other metric that changed on some pair; compare.json has every comparison.

Notes (printed, and in compare.md and compare.json) name what is not compared: failed units on
each side (no score: out of every mean and pair), a partial run (status not `complete`),
variants, traces, evals and units that one run has and the other lacks, later lines of a unit
journaled more than once (its first line counts, also a failed one), and needle units that did
not apply to their trace (no recall: the report's NOT APPLICABLE note). Runs of differently named
suites are compared with a warning (`gate` refuses them).

Examples:
  ctxbench compare reports/main reports/pr-123         # compare.md, compare.json into pr-123
  ctxbench compare reports/main reports/pr-123 -o out/ # into out/ instead
  ctxbench schema compare                              # the JSON Schema of compare.json";

/// Compare run B against run A: for every variant both runs have, every metric (the report's,
/// and tokens and cost per role: tokens.summarizer, cost.agent, …), paired by
/// trace/eval/sample/repeat, with a 95% paired-bootstrap CI of B − A and a p-value (McNemar for
/// pass/fail metrics). Prints the table and writes compare.md and compare.json.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Baseline run directory (A)
    #[arg(value_name = "RUN_A")]
    pub run_a: PathBuf,
    /// Candidate run directory (B); deltas are B − A
    #[arg(value_name = "RUN_B")]
    pub run_b: PathBuf,
    /// Directory for compare.md and compare.json [default: RUN_B; RUN_A's is fine too; another
    /// run's directory, and a live run's, is refused]
    #[arg(long = "output", short = 'o', alias = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub spill: super::SpillArgs,
}

#[derive(Serialize, schemars::JsonSchema)]
struct CompareDoc<'a> {
    schema_version: u32,
    baseline_run: &'a str,
    candidate_run: &'a str,
    comparisons: &'a [aggregate::Comparison],
    notes: &'a [String],
}

/// JSON Schema of `compare.json`, generated from the type it is written from.
/// Comparison columns the terminal leaves out, in this order, while the table is wider than
/// `terminal::WIDTH` (counts first, then the means the Δ column already relates): compare.md has
/// them all.
const FOR_WIDTH: [&str; 4] = ["pairs", "traces", "baseline", "candidate"];

pub fn schema() -> schemars::Schema {
    schemars::schema_for!(CompareDoc<'static>)
}

/// A run's info and its samples' compact parts (no timelines, evidence or summaries).
struct Compact {
    info: crate::record::RunInfo,
    samples: Samples,
    torn: Option<crate::record::TornLine>,
    /// Pid of the process still writing the run, if any.
    live: Option<u32>,
    /// `run.json`'s status and unit counts.
    progress: crate::record::RunProgress,
}

/// A run's rows: in memory, or (a big run) sorted on disk (`report::spill`).
enum Samples {
    Rows(crate::report::rows::Rows),
    Spilled(crate::report::spill::SpilledRows),
}

impl Compact {
    /// Rows (journal lines) the run holds.
    fn len(&self) -> usize {
        match &self.samples {
            Samples::Rows(rows) => rows.len(),
            Samples::Spilled(rows) => rows.len(),
        }
    }

    /// Every row, with its place in the journal (file order), but for the later lines of a unit
    /// journaled more than once (the first line of each is the one passed, as every figure
    /// counts it): returns how many.
    fn for_each_unique(&self, mut each: impl FnMut(Row<'_>, u64)) -> Result<usize, UsageError> {
        match &self.samples {
            Samples::Rows(rows) => {
                let mut first = aggregate::FirstLines::default();
                let mut dups = 0;
                for (i, s) in rows.iter().enumerate() {
                    if first.is_first(&s) {
                        each(s, i as u64);
                    } else {
                        dups += 1;
                    }
                }
                Ok(dups)
            }
            Samples::Spilled(rows) => rows
                .for_each_unique(|_, s, detail, _| each(s, detail.offset.unwrap_or(u64::MAX)))
                .map_err(|e| UsageError(format!("{}: {e}", rows.dir().path().display()))),
        }
    }

    /// The run's units, for the notes on units one run lacks ([`coverage::only_in`]).
    fn units(&self) -> coverage::Units<'_> {
        match &self.samples {
            Samples::Rows(rows) => coverage::Units::Rows(rows),
            Samples::Spilled(rows) => coverage::Units::Spilled(rows),
        }
    }
}

fn read_compact(
    dir: &std::path::Path,
    spill: &crate::report::spill::SpillOptions,
) -> Result<Compact, UsageError> {
    let run_dir = RunDir::new(dir);
    let live = run_dir.writer();
    let info = run_dir
        .read_run_json()
        .map_err(|e| UsageError(e.to_string()))?;
    let progress = run_dir
        .read_progress()
        .map_err(|e| UsageError(e.to_string()))?;
    let loaded = crate::report::load::stream_samples_spilling(&run_dir.samples_jsonl(), spill)
        .map_err(|e| UsageError(e.to_string()))?;
    let (samples, torn) = match loaded {
        crate::report::load::Loaded::Rows(s) => (Samples::Rows(s.rows), s.torn),
        crate::report::load::Loaded::Spilled(rows, torn) => (Samples::Spilled(rows), torn),
    };
    Ok(Compact {
        info,
        samples,
        torn,
        live,
        progress,
    })
}

/// What the notes say of one run: its units, failed units and variants (run.json's, then the
/// others in the order the journal first names them).
struct RunFacts {
    /// Units (a unit journaled more than once counts once).
    units: usize,
    /// Later lines of units journaled more than once.
    duplicates: usize,
    failed: usize,
    variants: Vec<String>,
    /// Needle units that did not apply to their trace, for the report's note.
    not_applicable: crate::report::model::NotApplicable,
}

fn facts(run: &Compact) -> Result<RunFacts, UsageError> {
    let (mut units, mut failed) = (0, 0);
    let mut first: BTreeMap<String, u64> = BTreeMap::new();
    let mut not_applicable = crate::report::model::NotApplicable::default();
    let duplicates = run.for_each_unique(|s, at| {
        units += 1;
        failed += usize::from(s.error.is_some());
        not_applicable.add(&s);
        if !run.info.variants.iter().any(|v| v == s.variant) {
            match first.get_mut(s.variant) {
                Some(f) => *f = (*f).min(at),
                None => {
                    first.insert(s.variant.to_string(), at);
                }
            }
        }
    })?;
    let mut extra: Vec<(u64, String)> = first.into_iter().map(|(v, at)| (at, v)).collect();
    extra.sort();
    let mut variants = run.info.variants.clone();
    variants.extend(extra.into_iter().map(|(_, v)| v));
    Ok(RunFacts {
        units,
        duplicates,
        failed,
        variants,
        not_applicable,
    })
}

/// Observations a sorted run of a spilled comparison holds.
const RUN_KEYS: usize = 1 << 16;

/// `aggregate::compare_runs` of two runs one of which is spilled: each run's observations
/// sorted on disk, each comparison a merge join of two ranges.
fn compare_spilled(a: &Compact, b: &Compact) -> Result<Vec<aggregate::Comparison>, UsageError> {
    use crate::report::spill::{ObsSpill, TempDir};
    let io = |e: std::io::Error| UsageError(format!("cannot write temporary files: {e}"));
    let dir = std::sync::Arc::new(TempDir::new(None).map_err(io)?);
    let mut files = Vec::new();
    for run in [a, b] {
        let mut obs = ObsSpill::new(dir.clone(), RUN_KEYS);
        let (mut i, mut failed) = (0, None);
        // The first line of a unit journaled twice only (a failed first line too).
        let roles_after = run.len();
        run.for_each_unique(|s, _| {
            if failed.is_none() {
                failed = obs.push_row(&s, i, roles_after).err();
            }
            i += 1;
        })?;
        if let Some(e) = failed {
            return Err(io(e));
        }
        files.push(obs.finish().map_err(io)?);
    }
    crate::report::spill::compare_files(&files[0], &files[1], &b.info.variants, b.info.seed)
        .map_err(io)
}

/// What the comparison leaves out and why, for the notes: runs of differently named suites,
/// partial runs, failed units (no score: out of every mean and pair), variants of one run only,
/// and units (and their traces) of a shared variant that one run lacks. From the two runs'
/// info and progress, their [`RunFacts`] and [`OnlyIn`].
fn coverage_notes(
    a: &Compact,
    b: &Compact,
    facts: [&RunFacts; 2],
    only: &[OnlyIn; 2],
) -> Vec<String> {
    let mut notes = Vec::new();
    let (ai, bi) = (&a.info, &b.info);
    let suite = |i: &crate::record::RunInfo| {
        i.suite
            .pointer("/suite/name")
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    if let (Some(sa), Some(sb)) = (suite(ai), suite(bi)) {
        if sa != sb {
            notes.push(format!(
                "the runs are of different suites (baseline {}: `{sa}`, candidate {}: `{sb}`): \
                 units are paired by trace, eval and sample names alone",
                ai.run_id, bi.run_id
            ));
        }
    }
    for (side, run, f) in [("baseline", a, facts[0]), ("candidate", b, facts[1])] {
        let id = &run.info.run_id;
        if let Some(p) = run.progress.partial(f.units) {
            notes.push(format!("{side} {id}: {p}"));
        }
        let (units, failed) = (f.units, f.failed);
        if failed > 0 {
            notes.push(format!(
                "{side} {id}: {failed} of {units} unit(s) failed; they have no score and are \
                 left out of every mean and pair"
            ));
        }
    }
    let (va, vb) = (&facts[0].variants, &facts[1].variants);
    for (side, mine, theirs) in [("baseline", va, vb), ("candidate", vb, va)] {
        let only: Vec<&str> = mine
            .iter()
            .filter(|v| !theirs.contains(v))
            .map(String::as_str)
            .collect();
        if !only.is_empty() {
            notes.push(format!(
                "variant(s) only in the {side} run, not compared: {}",
                only.join(", ")
            ));
        }
    }
    for (side, o) in [("baseline", &only[0]), ("candidate", &only[1])] {
        if o.units > 0 {
            notes.push(format!("{}, not paired{}", o.counted(side), o.named(side)));
        }
    }
    notes
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A bad `-o` first (it is checked before anything is read, on every command), then the runs.
    let out = match &args.out {
        Some(out) => super::output_dir(out)?,
        None => args.run_b.clone(),
    };
    super::run_to_read("RUN_A", &args.run_a, "compare")?;
    super::run_to_read("RUN_B", &args.run_b, "compare")?;
    // Into RUN_B by default, or RUN_A (docs/report.md); never into a third run's directory.
    let output = super::Output {
        flag: "-o",
        path: &out,
        writes: "compare.md and compare.json",
        default: &args.run_b,
    };
    super::refuse_other_run(&output, &[&args.run_a, &args.run_b], "compare")?;
    // Each run in one streaming pass, keeping only what the statistics read (a big run
    // spilled to sorted runs on disk: docs/report.md, "Reports of big runs").
    let spill = args.spill.options();
    let a = read_compact(&args.run_a, &spill)?;
    let b = read_compact(&args.run_b, &spill)?;
    // compare.md and compare.json go into RUN_B by default: never into a live run's directory
    // (taken after the reads, whose in-progress check would see this lock).
    let _lock = super::claim_run_output(&out, "compare", "-o OTHER_DIR")?;
    let mut notes = Vec::new();
    // `compare RUN RUN`: one run read twice, its notes said once.
    let same = super::resolved(&args.run_a) == super::resolved(&args.run_b);
    let sides = [(&a, &args.run_a), (&b, &args.run_b)];
    for (run, dir) in sides.into_iter().take(if same { 1 } else { 2 }) {
        if let Some(pid) = run.live {
            let note = RunDir::new(dir).in_progress_note(pid);
            crate::output::errln!("{note}");
            notes.push(note.trim_start_matches("note: ").to_string());
        } else if let Some(t) = &run.torn {
            notes.push(format!(
                "{}: torn final line {} ignored (the run was interrupted)",
                display_path(&RunDir::new(dir).samples_jsonl()),
                t.line
            ));
        }
    }
    let (fa, fb) = (facts(&a)?, facts(&b)?);
    for (f, dir) in [(&fa, &args.run_a), (&fb, &args.run_b)] {
        if f.duplicates > 0 {
            notes.push(super::duplicates_note(
                &RunDir::new(dir).samples_jsonl(),
                f.duplicates,
            ));
        }
    }
    let only = coverage::only_in(a.units(), b.units(), &fa.variants, &fb.variants)?;
    let coverage = coverage_notes(&a, &b, [&fa, &fb], &only);
    if let Some(suites) = coverage
        .iter()
        .find(|n| n.starts_with("the runs are of different suites"))
    {
        // Prose on stderr, within the width like the notes on stdout.
        crate::output::err!(
            "{}",
            crate::output::wrap(&format!("warning: {suites}"), terminal::WIDTH)
        );
    }
    notes.extend(coverage);
    // Needle units that did not apply to their trace have no recall, so they are in no pair of
    // `needle.recall`: the report's own note says how many and why (once for a run compared
    // with itself).
    let same = std::fs::canonicalize(&args.run_a)
        .ok()
        .is_some_and(|a| std::fs::canonicalize(&args.run_b).ok() == Some(a));
    for (side, run, f) in [("baseline", &a, &fa), ("candidate", &b, &fb)] {
        if side == "candidate" && same {
            continue;
        }
        if let Some(note) = f.not_applicable.note(&f.variants) {
            notes.push(format!("{side} {}: {note}", run.info.run_id));
        }
    }
    let comparisons = match (&a.samples, &b.samples) {
        (Samples::Rows(ra), Samples::Rows(rb)) => {
            aggregate::compare_runs(ra.iter(), rb.iter(), &b.info.variants, b.info.seed)
        }
        _ => compare_spilled(&a, &b)?,
    };
    let head = {
        let mut names: Vec<&str> = comparisons.iter().map(|c| c.metric.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        // Same display order as the report: eval metrics by name, then cost, then tokens.
        names.sort_by_key(|m| match *m {
            "cost" => 1,
            "tokens" => 2,
            _ => 0,
        });
        let choice = headline::suite_choice(&b.info.suite);
        headline::select(choice.as_deref(), &names).0
    };
    outln!(
        "{} (candidate) vs {} (baseline)",
        b.info.run_id,
        a.info.run_id
    )?;
    if comparisons.is_empty() {
        let why = match (fa.units, fb.units) {
            (0, 0) => "neither run has samples",
            (_, 0) => "the candidate run has no samples",
            (0, _) => "the baseline run has no samples",
            _ if fb.units == fb.failed => "every unit of the candidate run failed",
            _ if fa.units == fa.failed => "every unit of the baseline run failed",
            _ => "no variant and unit has a successful sample in both runs",
        };
        outln!("{why}: nothing to compare")?;
    } else {
        let verdicts = headline::verdicts(&comparisons, &head);
        out!("{}", headline::render_text(&verdicts, terminal::WIDTH))?;
        let (rows, dropped) = headline::ordered(&comparisons, &head);
        let table = sections::comparison(&rows, "candidate");
        let (text, left_out) = terminal::render_within(&table, terminal::WIDTH, &FOR_WIDTH);
        out!("{text}")?;
        if !left_out.is_empty() {
            outln!(
                "(not shown for width: {}; see compare.md)",
                left_out.join(", ")
            )?;
        }
        if dropped > 0 {
            outln!("{dropped} other metric(s) with no change on any pair not listed")?;
        }
    }
    for n in &notes {
        out!(
            "{}",
            crate::output::wrap(&format!("note: {n}"), terminal::WIDTH)
        )?;
    }
    std::fs::create_dir_all(&out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    let md = markdown::render_compare(&a.info, &b.info, &comparisons, &head, &notes);
    let doc = CompareDoc {
        schema_version: crate::record::SCHEMA_VERSION,
        baseline_run: &a.info.run_id,
        candidate_run: &b.info.run_id,
        comparisons: &comparisons,
        notes: &notes,
    };
    let json = serde_json::to_string_pretty(&doc)? + "\n";
    let out_dir = RunDir::new(&out);
    for (p, text) in [(out_dir.compare_md(), md), (out_dir.compare_json(), json)] {
        std::fs::write(&p, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    }
    outln!(
        "wrote {} and {}",
        display_path(&out_dir.compare_md()),
        display_path(&out_dir.compare_json())
    )?;
    Ok(ExitCode::SUCCESS)
}
