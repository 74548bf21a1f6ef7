//! `ctxbench report`: re-render every report file of a saved run, without any model call.

use super::UsageError;
use crate::output::display_path;
use crate::record::RunDir;
use crate::report::{write_run_reports, ReportModel, WriteOptions};
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Examples:
  ctxbench report reports/nightly                      # rewrite the files inside the run
  ctxbench report reports/nightly -o /tmp/nightly-report --no-png";

/// Re-render results.csv, summary.json, report.md, report.html and plots/ from a saved run
/// directory (its run.json and samples.jsonl). No model or provider is called.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Run directory holding run.json and samples.jsonl (e.g. reports/<run-id>)
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,
    /// Write the report files here instead of into RUN_DIR (needed while a live run writes
    /// RUN_DIR: its directory is refused); never another run's directory, nor inside one
    #[arg(long = "output", short = 'o', alias = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not draw PNG plots (SVG plots are always drawn: the HTML report embeds them)
    #[arg(long)]
    pub no_png: bool,
    #[command(flatten)]
    pub spill: super::SpillArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A bad `-o` first (it is checked before anything is read, on every command), then the run.
    let out = match &args.out {
        Some(out) => super::output_dir(out)?,
        None => args.run_dir.clone(),
    };
    super::run_to_read("RUN_DIR", &args.run_dir, "report")?;
    let output = super::Output {
        flag: "-o",
        path: &out,
        writes: "its report files",
        default: &args.run_dir,
    };
    super::refuse_other_run(&output, &[&args.run_dir], "report")?;
    let run_dir = RunDir::new(&args.run_dir);
    // One streaming pass keeps each sample's compact part; the heavy parts (timelines,
    // evidence, summaries) are read for the samples the report shows in full only.
    let live = run_dir.writer();
    // Writing into a run directory needs its lock (after `writer()`, which would see ours): a
    // live run's own directory is refused, `-o OTHER_DIR` reads it (docs/reliability.md).
    let _lock = super::claim_run_output(&out, "report", "-o OTHER_DIR")?;
    // A big run's rows spill to the temporary directory (TMPDIR; removed when done).
    let opts = crate::report::load::LoadOptions {
        spill: args.spill.options(),
    };
    let (info, model, torn) = crate::report::load::load_model_opts(&run_dir, None, &opts)
        .map_err(|e| UsageError(e.to_string()))?;
    if let Some(pid) = live {
        // The line being written is not read; that is no fault of the journal.
        crate::output::errln!("{}", run_dir.in_progress_note(pid));
    } else if let Some(t) = &torn {
        crate::output::errln!(
            "warning: {}: line {} is a torn final write ({} bytes, the run was interrupted); ignored",
            display_path(&run_dir.samples_jsonl()),
            t.line,
            t.bytes
        );
    }
    std::fs::create_dir_all(&out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    let written = write_run_reports(
        &out,
        &run_dir,
        &info,
        &model,
        WriteOptions { png: !args.no_png },
    )?;
    out!("{}", summary_text(&model))?;
    for n in &written.plot_notes {
        outln!("plot note: {n}")?;
    }
    for n in &written.notes {
        out!("{}", crate::output::wrap(&format!("note: {n}"), 100))?;
    }
    outln!(
        "wrote {} file(s) to {} (open {})",
        written.files.len(),
        display_path(&out),
        display_path(&RunDir::new(&out).report_html())
    )?;
    Ok(ExitCode::SUCCESS)
}

/// What `report` (and `run`, at the end) prints: one verdict line per variant vs the baseline,
/// then the per-variant means of the headline metrics, all within 100 columns.
pub fn summary_text(model: &ReportModel) -> String {
    crate::report::terminal::summary(model, crate::report::terminal::WIDTH)
}
