//! `ctxbench report`: re-render every report file of a saved run, without any model call.

use super::UsageError;
use crate::record::RunDir;
use crate::report::{write_run_reports, ReportModel, WriteOptions};
use std::path::PathBuf;
use std::process::ExitCode;

/// Re-render results.csv, summary.json, report.md, report.html and plots/ from a saved run
/// directory (its run.json and samples.jsonl). No model or provider is called.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run directory holding run.json and samples.jsonl (e.g. reports/<run-id>)
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,
    /// Write the report files here instead of into RUN_DIR
    #[arg(long = "output", short = 'o', alias = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not draw PNG plots (SVG plots are always drawn: the HTML report embeds them)
    #[arg(long)]
    pub no_png: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let out = super::output_dir(args.out.as_deref().unwrap_or(&args.run_dir))?;
    let run_dir = RunDir::new(&args.run_dir);
    let run = run_dir.read().map_err(|e| UsageError(e.to_string()))?;
    if let Some(t) = &run.torn {
        eprintln!(
            "warning: {}: line {} is a torn final write ({} bytes, the run was interrupted); ignored",
            run_dir.samples_jsonl().display(),
            t.line,
            t.bytes
        );
    }
    std::fs::create_dir_all(&out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    let model = ReportModel::build(&run.info, run.samples);
    let written = write_run_reports(&out, &run.info, &model, WriteOptions { png: !args.no_png })?;
    print!("{}", summary_text(&model));
    for n in &written.plot_notes {
        println!("plot skipped: {n}");
    }
    println!(
        "wrote {} file(s) to {} (open {})",
        written.files.len(),
        out.display(),
        RunDir::new(&out).report_html().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The per-variant table printed by `report` (and by `run` at the end, if it wants to).
pub fn summary_text(model: &ReportModel) -> String {
    use crate::report::table::TableWriter;
    crate::report::terminal::Terminal.render(&crate::report::sections::summary(model))
}
