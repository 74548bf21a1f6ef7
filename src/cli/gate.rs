//! `ctxbench gate`: evaluate gate rules on a run against a baseline run; exit 10 on a
//! significant regression. Grammar and semantics: see `crate::gate`.

use super::{UsageError, EXIT_GATE_FAILED};
use crate::gate;
use crate::record::RunDir;
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

METRIC is a report metric: <eval>.<score>, <eval>.pass, cost (USD per unit) or tokens.
A rule fails only when its value is beyond the threshold AND the difference is significant
where a CI exists: for an absolute rule the whole 95% CI of the mean lies beyond the threshold;
for a delta rule the change is significant at p < 0.05 (McNemar for pass/fail metrics, paired
bootstrap otherwise). A metric with no value for a variant (e.g. cost at an unknown price) is
reported as skipped. A rules file holds one rule per line (# starts a comment), or, as *.toml,
rules = [...] at the top level or under [gates].

Writes JUnit XML (--junit, default RUN/gate.xml) and, when GITHUB_STEP_SUMMARY is set, appends
a Markdown summary to that file. Exit codes: 0 every rule passed, 10 a rule failed, 2 bad
rule, run directory or metric name.";

/// Fail (exit 10) when a rule regresses significantly against a baseline run.
#[derive(Debug, clap::Args)]
#[command(after_long_help = RULES_HELP)]
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
    /// Where to write JUnit XML [default: RUN/gate.xml]
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cand_dir = RunDir::new(&args.run);
    let cand = cand_dir.read().map_err(|e| UsageError(e.to_string()))?;
    let base = RunDir::new(&args.baseline)
        .read()
        .map_err(|e| UsageError(e.to_string()))?;
    let mut rules = Vec::new();
    if let Some(path) = &args.rules {
        rules.extend(gate::parse_rules_file(path).map_err(UsageError)?);
    }
    for r in &args.rule {
        rules.push(gate::parse_rule(r).map_err(|e| UsageError(format!("--rule: {e}")))?);
    }
    if args.rules.is_none() && args.rule.is_empty() {
        for (i, r) in cand.info.gate_rules().iter().enumerate() {
            rules.push(gate::parse_rule(r).map_err(|e| {
                UsageError(format!(
                    "{}: suite.gates.rules[{i}]: {e}",
                    cand_dir.run_json().display()
                ))
            })?);
        }
    }
    if rules.is_empty() {
        return Err(UsageError(format!(
            "no gate rules: the suite of {} has no [gates] rules; pass --rules FILE or --rule RULE",
            args.run.display()
        ))
        .into());
    }
    let outcome = gate::evaluate(&rules, &cand, &base, cand.info.seed).map_err(UsageError)?;

    print!("{}", crate::report::terminal::gate_lines(&outcome));
    let junit_path = args.junit.unwrap_or_else(|| cand_dir.gate_xml());
    std::fs::write(&junit_path, crate::report::junit::render(&outcome))
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
        f.write_all(crate::report::markdown::gate_summary(&outcome).as_bytes())
            .map_err(|e| {
                anyhow::anyhow!("cannot write GITHUB_STEP_SUMMARY {}: {e}", path.display())
            })?;
    }
    let failed = outcome.failed();
    println!(
        "gate {}: {} rule check(s), {failed} failed, {} skipped; JUnit XML: {}",
        if failed == 0 { "passed" } else { "FAILED" },
        outcome.results.len(),
        outcome.skipped(),
        crate::output::display_path(&junit_path)
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_GATE_FAILED)
    })
}
