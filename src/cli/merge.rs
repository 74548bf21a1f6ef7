//! `ctxbench merge`: see its `--help`.

use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
The runs must come from the same suite file content, traces and prompt files (run.json digests).
A unit recorded in two inputs must be identical apart from its latency. The output is a normal
run directory (run.json, samples.jsonl, the inputs' long summary texts in summaries.pack and
the failed attempts `--retry-failed` replaced in samples.replaced.jsonl) that `ctxbench report`,
`compare` and `gate` read; its status is `incomplete` when units of the plan are missing from
every input.

Example (CI matrix of 2 jobs, then a join job):
  ctxbench run suite.toml --shard 1/2 --run-id part1
  ctxbench run suite.toml --shard 2/2 --run-id part2
  ctxbench merge reports/part1 reports/part2 -o reports/full";

/// Join the run directories of `ctxbench run --shard i/n` into one run.
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// Run directories to join
    #[arg(value_name = "RUN_DIR", required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// New run directory to write (must not exist, or be empty)
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    super::output_dir(&args.output)?;
    let merged = crate::runner::merge::merge(&args.runs, &args.output)?;
    let m = &merged.manifest;
    outln!(
        "merged {} run(s) into {}: {} samples ({} failed) of {} planned units",
        args.runs.len(),
        args.output.display(),
        m.units.recorded,
        m.units.failed,
        m.units.planned_total
    )?;
    if merged.missing > 0 {
        crate::output::errln!(
            "warning: {} planned unit(s) are in none of the inputs; the merged run is incomplete",
            merged.missing
        );
    }
    Ok(ExitCode::SUCCESS)
}
