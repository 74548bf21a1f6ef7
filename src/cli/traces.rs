//! `ctxbench traces …`: inspect traces. `traces stats` imports the given paths, computes
//! `tokens::stats` with the chosen counter (all cores) and prints tables or `--json`.

use super::UsageError;
use crate::output::{self, table};
use crate::tokens::stats::{
    self, Calibration, LargestMessage, RoleStats, SkippedInput, StatsReport, ToolStats,
};
use crate::tokens::{self, DEFAULT_COUNTER};
use crate::trace::import::import_paths;
use crate::trace::SourceFormat;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Per-trace and total statistics: messages by role, tool calls, tokens, largest messages,
    /// recorded usage against counted tokens
    Stats(StatsArgs),
}

const STATS_HELP: &str = "\
Long trace ids are shortened in the middle of the table, but never so that two different ids
print alike; --json always has the full ids.

Examples:
  ctxbench traces stats datasets/
  ctxbench traces stats datasets/swe-agent --counter approx --top 3
  ctxbench traces stats traces/ --skip-invalid --json > stats.json
  ctxbench traces stats datasets/claude-code --overhead-tokens claude-code";

#[derive(Debug, clap::Args)]
#[command(after_help = STATS_HELP)]
pub struct StatsArgs {
    /// Trace files or directories (walked recursively)
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Token counter: o200k, cl100k, approx, approx-anthropic
    #[arg(long, default_value = DEFAULT_COUNTER, value_name = "NAME")]
    pub counter: String,
    /// Input format (auto-detected when omitted)
    #[arg(long, value_name = "FORMAT")]
    pub from: Option<String>,
    /// Skip inputs that cannot be imported (they are listed) instead of failing
    #[arg(long)]
    pub skip_invalid: bool,
    /// Print one JSON document (with `schema_version`) instead of tables
    #[arg(long)]
    pub json: bool,
    /// How many of the largest messages to list, per trace and in total
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Tokens the traces left out (system prompt, tool schemas), added to every counted prompt
    /// in the calibration: a count, or a bundled estimate (`claude-code`, data/overhead.toml);
    /// the bias is shown before → after
    #[arg(long, value_name = "TOKENS|NAME")]
    pub overhead_tokens: Option<tokens::overhead::OverheadTokens>,
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Stats(args) => stats_cmd(args),
    }
}

fn stats_cmd(args: StatsArgs) -> anyhow::Result<ExitCode> {
    let counter =
        tokens::counter(&args.counter).map_err(|e| UsageError(format!("--counter: {e}")))?;
    let from = match &args.from {
        None => None,
        Some(f) => Some(SourceFormat::parse(f).ok_or_else(|| {
            let valid: Vec<&str> = SourceFormat::ALL.iter().map(|f| f.as_str()).collect();
            UsageError(format!(
                "--from: unknown format `{f}`; valid formats: {}",
                valid.join(", ")
            ))
        })?),
    };
    let imported = import_paths(&args.paths, from, args.skip_invalid)?;
    let skipped: Vec<SkippedInput> = imported
        .skipped
        .iter()
        .map(|e| SkippedInput {
            file: e.file.clone(),
            location: e.location.clone(),
            message: e.message.clone(),
        })
        .collect();
    for e in &imported.skipped {
        eprintln!("skipped: {e}");
    }
    if imported.traces.is_empty() {
        let given: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
        return Err(UsageError(format!(
            "no trace could be imported from {} ({} input(s) skipped)",
            given.join(", "),
            skipped.len()
        ))
        .into());
    }
    let overhead = match &args.overhead_tokens {
        Some(o) => o
            .tokens()
            .map_err(|e| UsageError(format!("--overhead-tokens: {e}")))?,
        None => 0,
    };
    let mut report =
        stats::compute_with_overhead(&imported.traces, counter.as_ref(), args.top, overhead);
    report.skipped = skipped;

    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        s
    } else {
        render(&report)
    };
    super::emit(&text)?;
    Ok(ExitCode::from(super::EXIT_OK))
}

/// Human rendering: one summary row per trace, then the pooled breakdowns. With a single trace
/// the breakdowns are that trace's.
pub fn render(r: &StatsReport) -> String {
    let mut out = String::new();
    let t = &r.total;
    out.push_str(&format!(
        "{} trace(s), {} messages, {} tokens ({} counter), {} import warning(s)",
        t.traces, t.messages, t.tokens, r.counter, t.import_warnings
    ));
    if !r.skipped.is_empty() {
        out.push_str(&format!(", {} input(s) skipped", r.skipped.len()));
    }
    out.push_str("\n\n");

    // Ids as shown: shortened, but never two different ids alike.
    let ids: Vec<&str> = r.traces.iter().map(|s| s.id.as_str()).collect();
    let shown: BTreeMap<&str, String> = ids
        .iter()
        .copied()
        .zip(output::short_ids(&ids, ID_WIDTH))
        .collect();
    let show = |id: &str| {
        shown
            .get(id)
            .cloned()
            .unwrap_or_else(|| output::ellipsize(id, ID_WIDTH))
    };
    let rows: Vec<Vec<String>> = r
        .traces
        .iter()
        .map(|s| {
            let role = |name: &str| s.by_role.get(name).map_or(0, |x| x.messages).to_string();
            let (cal, bias) = calibration_cells(s.calibration.as_ref());
            vec![
                show(&s.id),
                s.source_format.clone(),
                s.messages.to_string(),
                role("user"),
                role("assistant"),
                role("tool"),
                s.tool_calls.to_string(),
                s.tokens.to_string(),
                s.largest.first().map_or(0, |l| l.tokens).to_string(),
                s.recorded_usage.input.to_string(),
                cal,
                bias,
                s.import_warnings.to_string(),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "trace",
            "format",
            "msgs",
            "user",
            "asst",
            "tool",
            "calls",
            "tokens",
            "largest",
            "rec.input",
            "calib.err",
            "bias",
            "warn",
        ],
        &rows,
    ));

    let scope = if r.traces.len() == 1 {
        ""
    } else {
        " (all traces)"
    };
    out.push_str(&format!("\nBy role{scope}\n"));
    out.push_str(&role_table(&t.by_role, t.tokens));
    if !t.by_tool.is_empty() {
        out.push_str(&format!("\nBy tool{scope}\n"));
        out.push_str(&tool_table(&t.by_tool));
    }
    if !t.largest.is_empty() {
        out.push_str(&format!("\nLargest messages{scope}\n"));
        out.push_str(&largest_table(&t.largest, &show));
    }
    out.push_str(&format!("\nCalibration{scope}: "));
    match &t.calibration {
        Some(c) => out.push_str(&calibration_line(c)),
        None => out.push_str("no recorded usage to compare with\n"),
    }
    for s in &r.skipped {
        out.push_str(&format!(
            "skipped: {}: {}: {}\n",
            s.file, s.location, s.message
        ));
    }
    out
}

/// The calibration sentence; with an overhead, the figures before → after adding it.
fn calibration_line(c: &Calibration) -> String {
    let mut line = format!(
        "{} recorded model calls; recorded input {} vs counted {} tokens",
        c.calls, c.recorded_input, c.counted_input
    );
    match (c.mean_abs_pct_error_without_overhead, c.bias_pct_without_overhead) {
        (Some(mae), Some(bias)) => line.push_str(&format!(
            " (with {} overhead tokens per call); mean abs error {:.1}% → {:.1}%, bias {:+.1}% → {:+.1}% (without → with the overhead)\n",
            c.overhead_tokens, mae, c.mean_abs_pct_error, bias, c.bias_pct
        )),
        _ => line.push_str(&format!(
            "; mean abs error {:.1}%, bias {:+.1}%\n",
            c.mean_abs_pct_error, c.bias_pct
        )),
    }
    line
}

fn calibration_cells(c: Option<&Calibration>) -> (String, String) {
    match c {
        Some(c) => (
            format!("{:.1}%", c.mean_abs_pct_error),
            format!("{:+.1}%", c.bias_pct),
        ),
        None => ("-".into(), "-".into()),
    }
}

fn role_table(by_role: &BTreeMap<String, RoleStats>, total_tokens: u64) -> String {
    let rows: Vec<Vec<String>> = by_role
        .iter()
        .map(|(role, r)| {
            vec![
                role.clone(),
                r.messages.to_string(),
                r.tokens.to_string(),
                percent(r.tokens, total_tokens),
                r.chars.to_string(),
            ]
        })
        .collect();
    table(&["role", "messages", "tokens", "share", "chars"], &rows)
}

fn tool_table(by_tool: &BTreeMap<String, ToolStats>) -> String {
    let mut tools: Vec<(&String, &ToolStats)> = by_tool.iter().collect();
    // Heaviest first: that is what a reader looks for.
    tools.sort_by(|a, b| {
        (b.1.result_tokens + b.1.call_tokens).cmp(&(a.1.result_tokens + a.1.call_tokens))
    });
    let rows: Vec<Vec<String>> = tools
        .into_iter()
        .map(|(name, t)| {
            vec![
                name.clone(),
                t.calls.to_string(),
                t.call_tokens.to_string(),
                t.results.to_string(),
                t.result_tokens.to_string(),
            ]
        })
        .collect();
    table(
        &["tool", "calls", "call tokens", "results", "result tokens"],
        &rows,
    )
}

fn largest_table(largest: &[LargestMessage], show: &dyn Fn(&str) -> String) -> String {
    let rows: Vec<Vec<String>> = largest
        .iter()
        .map(|l| {
            vec![
                show(&l.trace_id),
                l.index.to_string(),
                l.role.as_str().to_string(),
                l.tool.clone().unwrap_or_else(|| "-".into()),
                l.tokens.to_string(),
                l.chars.to_string(),
            ]
        })
        .collect();
    table(
        &["trace", "index", "role", "tool", "tokens", "chars"],
        &rows,
    )
}

/// Widest trace id shown in tables (`--json` always has the full id).
const ID_WIDTH: usize = 48;

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::COUNTER_NAMES;

    #[test]
    fn counter_names_in_help_match_the_registry() {
        // The --counter help text lists the names by hand; keep it in sync with the registry.
        use clap::CommandFactory;
        let cmd = crate::cli::Cli::command();
        let traces = cmd.find_subcommand("traces").unwrap();
        let stats = traces.find_subcommand("stats").unwrap();
        let arg = stats
            .get_arguments()
            .find(|a| a.get_id() == "counter")
            .unwrap();
        let help = arg.get_help().unwrap().to_string();
        for name in COUNTER_NAMES {
            assert!(help.contains(name), "{help} lacks {name}");
        }
    }

    #[test]
    fn percent_handles_zero() {
        assert_eq!(percent(1, 0), "-");
        assert_eq!(percent(1, 3), "33.3%");
    }

    #[test]
    fn render_shows_every_section() {
        use crate::trace::{Message, SourceFormat, ToolCall, Trace, TraceMeta, Usage};
        let mut t = Trace::new(TraceMeta::new("demo", SourceFormat::Openai));
        let mut a = Message::assistant(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: serde_json::json!({"command": "ls"}),
            }],
        );
        a.usage = Some(Usage {
            input: 10,
            output: 3,
            cache_read: 0,
            cache_write: 0,
        });
        t.messages = vec![
            Message::user("hello world"),
            a,
            Message::tool("c1", "bash", "file_a\nfile_b"),
        ];
        let o200k = tokens::counter("o200k").unwrap();
        let mut r = crate::tokens::stats::compute(&[t], o200k.as_ref(), 5);
        r.skipped.push(SkippedInput {
            file: "bad.json".into(),
            location: "line 3".into(),
            message: "expected an object".into(),
        });
        let out = render(&r);
        // user 3+1+2 = 6; assistant 3+1+1("bash")+n(args); prompt of the call = 6 vs 10.
        assert!(out.starts_with("1 trace(s), 3 messages, "), "{out}");
        assert!(out.contains("1 input(s) skipped"), "{out}");
        assert!(out.contains("\nBy role\n"), "{out}");
        assert!(out.contains("\nBy tool\n"), "{out}");
        assert!(out.contains("\nLargest messages\n"), "{out}");
        assert!(out.contains("mean abs error 40.0%, bias -40.0%"), "{out}");
        assert!(
            out.contains("skipped: bad.json: line 3: expected an object"),
            "{out}"
        );
        let demo = out
            .lines()
            .find(|l| l.starts_with("demo "))
            .expect("trace row");
        assert!(demo.contains("40.0%") && demo.contains("-40.0%"), "{demo}");
    }
}
