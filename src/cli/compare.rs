//! `ctxbench compare`: paired A/B comparison of two saved runs, variant by variant.

use super::UsageError;
use crate::metrics::aggregate;
use crate::output::display_path;
use crate::record::RunDir;
use crate::report::headline;
use crate::report::markdown;
use crate::report::sections;
use crate::report::terminal;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Notes (printed, and in compare.md and compare.json) name what is not compared: failed units on
each side (no score: out of every mean and pair), a partial run (status not `complete`),
variants, traces and units that one run has and the other lacks. Runs of differently named
suites are compared with a warning (`gate` refuses them).

Examples:
  ctxbench compare reports/main reports/pr-123         # compare.md, compare.json into pr-123
  ctxbench compare reports/main reports/pr-123 -o out/ # into out/ instead
  ctxbench schema compare                              # the JSON Schema of compare.json";

/// Compare run B against run A: for every variant both runs have, every metric, paired by
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
    /// Directory for compare.md and compare.json [default: RUN_B]
    #[arg(long = "output", short = 'o', alias = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
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
    samples: crate::report::rows::Rows,
    torn: Option<crate::record::TornLine>,
    /// Pid of the process still writing the run, if any.
    live: Option<u32>,
    /// `run.json`'s status and unit counts.
    progress: crate::record::RunProgress,
}

fn read_compact(dir: &std::path::Path) -> Result<Compact, UsageError> {
    let run_dir = RunDir::new(dir);
    let live = run_dir.writer();
    let info = run_dir
        .read_run_json()
        .map_err(|e| UsageError(e.to_string()))?;
    let progress = run_dir
        .read_run_json()
        .map_err(|e| UsageError(e.to_string()))?;
    let streamed = crate::report::load::stream_samples(&run_dir.samples_jsonl())
        .map_err(|e| UsageError(e.to_string()))?;
    Ok(Compact {
        info,
        samples: streamed.rows,
        torn: streamed.torn,
        live,
        progress,
    })
}

/// A unit's pairing key: variant, trace, eval, sample, repeat.
type UnitKey<'a> = (&'a str, &'a str, &'a str, &'a str, u32);

/// The pairing keys of `run`'s units in the variants `shared` names.
fn unit_keys<'a>(run: &'a Compact, shared: &[String]) -> std::collections::BTreeSet<UnitKey<'a>> {
    run.samples
        .iter()
        .filter(|s| shared.iter().any(|v| v == s.variant))
        .map(|s| (s.variant, s.trace_id, s.eval, s.sample, s.repeat))
        .collect()
}

/// What the comparison leaves out and why, for the notes: runs of differently named suites,
/// partial runs, failed units (no score: out of every mean and pair), variants of one run only,
/// and units (and their traces) of a shared variant that one run lacks. Pure: from the two
/// runs' info, progress and rows.
fn coverage_notes(a: &Compact, b: &Compact) -> Vec<String> {
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
    for (side, run) in [("baseline", a), ("candidate", b)] {
        let id = &run.info.run_id;
        if let Some(p) = run.progress.partial(run.samples.len()) {
            notes.push(format!("{side} {id}: {p}"));
        }
        let units = run.samples.len();
        let failed = run.samples.iter().filter(|r| r.error.is_some()).count();
        if failed > 0 {
            notes.push(format!(
                "{side} {id}: {failed} of {units} unit(s) failed; they have no score and are \
                 left out of every mean and pair"
            ));
        }
    }
    let variants = |r: &Compact| -> Vec<String> {
        let mut v = r.info.variants.clone();
        for row in r.samples.iter() {
            if !v.iter().any(|x| x == row.variant) {
                v.push(row.variant.to_string());
            }
        }
        v
    };
    let (va, vb) = (variants(a), variants(b));
    for (side, mine, theirs) in [("baseline", &va, &vb), ("candidate", &vb, &va)] {
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
    let (ka, kb) = (unit_keys(a, &vb), unit_keys(b, &va));
    for (side, mine, theirs) in [("baseline", &ka, &kb), ("candidate", &kb, &ka)] {
        let only: Vec<&UnitKey> = mine.iter().filter(|k| !theirs.contains(*k)).collect();
        if only.is_empty() {
            continue;
        }
        // Traces with no unit at all on the other side, named (a few).
        let mut traces: Vec<&str> = only.iter().map(|k| k.1).collect();
        traces.sort_unstable();
        traces.dedup();
        let whole: Vec<&str> = traces
            .iter()
            .copied()
            .filter(|t| !theirs.iter().any(|k| k.1 == *t))
            .collect();
        let named = if whole.is_empty() {
            String::new()
        } else {
            let shown: Vec<&str> = whole.iter().copied().take(5).collect();
            format!(
                "; {} trace(s) only in the {side} run: {}{}",
                whole.len(),
                shown.join(", "),
                if whole.len() > shown.len() {
                    ", …"
                } else {
                    ""
                }
            )
        };
        notes.push(format!(
            "{} unit(s) of {} trace(s) only in the {side} run, not paired{named}",
            only.len(),
            traces.len()
        ));
    }
    notes
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A bad `-o` first (it is checked before anything is read, on every command), then the runs.
    let out = match &args.out {
        Some(out) => super::output_dir(out)?,
        None => args.run_b.clone(),
    };
    super::run_dir_arg("RUN_A", &args.run_a)?;
    super::run_dir_arg("RUN_B", &args.run_b)?;
    // Each run in one streaming pass, keeping only what the statistics read.
    let a = read_compact(&args.run_a)?;
    let b = read_compact(&args.run_b)?;
    let mut notes = Vec::new();
    for (run, dir) in [(&a, &args.run_a), (&b, &args.run_b)] {
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
    let coverage = coverage_notes(&a, &b);
    if let Some(suites) = coverage
        .iter()
        .find(|n| n.starts_with("the runs are of different suites"))
    {
        crate::output::errln!("warning: {suites}");
    }
    notes.extend(coverage);
    let comparisons = aggregate::compare_runs(
        a.samples.iter(),
        b.samples.iter(),
        &b.info.variants,
        b.info.seed,
    );
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
        outln!("the runs share no variant and unit: nothing to compare")?;
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
