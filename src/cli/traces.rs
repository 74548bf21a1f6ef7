//! `ctxbench traces …`: inspect traces. `traces stats` imports the given paths, computes
//! `tokens::stats` with the chosen counter (all cores) and prints tables or `--json`.

use super::UsageError;
use crate::output::{self, table};
use crate::tokens::stats::{
    self, Calibration, IgnoredInput, LargestMessage, RoleStats, SkippedInput, StatsReport,
    ToolStats,
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
The tables fit 100 columns: long trace ids and tool names are shortened in the middle, never
so that two different ids print alike. --json has the full ids and each trace's roles.

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
    report.duplicate_ids = stats::duplicate_ids(&imported.traces);
    report.ignored = imported
        .ignored
        .iter()
        .map(|(file, reason)| IgnoredInput {
            file: file.display().to_string(),
            reason: reason.clone(),
        })
        .collect();

    if args.json {
        // The human rendering lists them at its end; beside JSON, they are said on stderr.
        for e in &imported.skipped {
            crate::output::errln!("skipped: {e}");
        }
        for (file, reason) in &imported.ignored {
            crate::output::errln!("ignored: {}: {reason}", file.display());
        }
        if let Some(note) = duplicates_note(&report.duplicate_ids) {
            crate::output::errln!("{note}");
        }
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        super::emit_json(&s)?;
    } else {
        super::emit(&render(&report))?;
    }
    Ok(ExitCode::from(super::EXIT_OK))
}

/// Human rendering, every line at most `WIDTH` (100) columns: one summary row per trace, then the
/// pooled breakdowns, then the calibration (per trace when several record usage). With a single
/// trace the breakdowns are that trace's. Per-role counts are in the "By role" table (per
/// trace in `--json`), recorded usage in the calibration table.
pub fn render(r: &StatsReport) -> String {
    let mut out = String::new();
    let t = &r.total.figures;
    let mut head = format!(
        "{} trace(s), {} messages, {} tokens ({} counter), {} import warning(s)",
        r.total.traces, t.messages, t.tokens, r.counter, t.import_warnings
    );
    if !r.skipped.is_empty() {
        head.push_str(&format!(", {} input(s) skipped", r.skipped.len()));
    }
    if !r.ignored.is_empty() {
        head.push_str(&format!(
            ", {} file(s) holding no trace ignored",
            r.ignored.len()
        ));
    }
    out.push_str(&output::wrap(&head, WIDTH));
    if let Some(note) = duplicates_note(&r.duplicate_ids) {
        out.push_str(&output::wrap(&note, WIDTH));
    }
    out.push('\n');

    let header = [
        "trace", "format", "msgs", "calls", "tokens", "largest", "warn",
    ];
    let cells: Vec<Vec<String>> = r
        .traces
        .iter()
        .map(|s| {
            let f = &s.figures;
            vec![
                s.source_format.clone(),
                f.messages.to_string(),
                f.tool_calls.to_string(),
                f.tokens.to_string(),
                // Not from `largest`: that holds only the `--top` first (none with `--top 0`).
                f.largest_message_tokens.to_string(),
                f.import_warnings.to_string(),
            ]
        })
        .collect();
    // Ids as shown: as wide as the other columns leave room for, never two different ids alike.
    let id_width = room(&header[1..], &cells).clamp(MIN_ID_WIDTH, MAX_ID_WIDTH);
    let ids: Vec<&str> = r.traces.iter().map(|s| s.id.as_str()).collect();
    let shown: BTreeMap<&str, String> = ids
        .iter()
        .copied()
        .zip(output::short_ids(&ids, id_width))
        .collect();
    let show = |id: &str| {
        shown
            .get(id)
            .cloned()
            .unwrap_or_else(|| output::ellipsize(id, id_width))
    };
    let rows: Vec<Vec<String>> = r
        .traces
        .iter()
        .zip(cells)
        .map(|(s, rest)| std::iter::once(show(&s.id)).chain(rest).collect())
        .collect();
    out.push_str(&table(&header, &rows));

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
    let calibrated: Vec<(String, &Calibration)> = r
        .traces
        .iter()
        .filter_map(|s| Some((show(&s.id), s.figures.calibration.as_ref()?)))
        .collect();
    if r.traces.len() > 1 && !calibrated.is_empty() {
        out.push_str("\nCalibration by trace (traces with recorded usage)\n");
        out.push_str(&calibration_table(&calibrated));
    }
    let line = match &t.calibration {
        Some(c) => calibration_line(c),
        None => "no recorded usage to compare with".to_string(),
    };
    out.push('\n');
    out.push_str(&output::wrap(&format!("Calibration{scope}: {line}"), WIDTH));
    for s in &r.skipped {
        out.push_str(&output::wrap(
            &format!("skipped: {}: {}: {}", s.file, s.location, s.message),
            WIDTH,
        ));
    }
    for s in &r.ignored {
        out.push_str(&output::wrap(
            &format!("ignored: {}: {}", s.file, s.reason),
            WIDTH,
        ));
    }
    out
}

/// Trace ids named at most in [`duplicates_note`].
const DUPLICATES_NAMED: usize = 5;

/// What to say of trace ids more than one input gave: each input's trace is a row and counts
/// in the totals, which a run would refuse. `None` when every id is once.
fn duplicates_note(dups: &[stats::DuplicateId]) -> Option<String> {
    if dups.is_empty() {
        return None;
    }
    // The first id with its files, the next ones by id: the files of one tell the reader where
    // the others come from (`--json` has them all).
    let mut named: Vec<String> = dups
        .iter()
        .take(DUPLICATES_NAMED)
        .enumerate()
        .map(|(i, d)| match i {
            0 => format!("{} (from {})", d.id, files_counted(&d.files)),
            _ => d.id.clone(),
        })
        .collect();
    if dups.len() > DUPLICATES_NAMED {
        named.push(format!("and {} more", dups.len() - DUPLICATES_NAMED));
    }
    Some(format!(
        "note: {} trace id(s) come from more than one input: each input's trace is a row below \
         and counts in the totals (a run refuses them: \"each trace must have a unique id\"; \
         `ctxbench import` writes the later ones as `<id>-2`, …): {}",
        dups.len(),
        named.join(", ")
    ))
}

/// Files in first-seen order, one named once with how many of the id it gave (`a.jsonl ×2 and
/// b.jsonl`): a file that holds the id twice read "from a.jsonl and a.jsonl".
fn files_counted(files: &[String]) -> String {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for f in files {
        match counted.iter_mut().find(|(n, _)| *n == f.as_str()) {
            Some((_, k)) => *k += 1,
            None => counted.push((f, 1)),
        }
    }
    counted
        .iter()
        .map(|(f, k)| match k {
            1 => f.to_string(),
            k => format!("{f} ×{k}"),
        })
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Columns left for a first column when a table's other columns (`header`, `rows`) take
/// their width and the two-space gaps: `WIDTH` minus all that (0 when nothing is left).
fn room(header: &[&str], rows: &[Vec<String>]) -> usize {
    let taken: usize = header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let cells = rows.iter().filter_map(|r| r.get(i));
            cells
                .map(|c| crate::output::columns(c))
                .fold(crate::output::columns(h), usize::max)
                + 2
        })
        .sum();
    WIDTH.saturating_sub(taken)
}

/// The calibration sentence; with an overhead, the figures before → after adding it.
fn calibration_line(c: &Calibration) -> String {
    let mut line = format!(
        "{} recorded model calls; recorded input {} vs counted {} tokens",
        c.calls, c.recorded_input, c.counted_input
    );
    match (c.mean_abs_pct_error_without_overhead, c.bias_pct_without_overhead) {
        (Some(mae), Some(bias)) => line.push_str(&format!(
            " (with {} overhead tokens per call); mean abs error {:.1}% → {:.1}%, bias {:+.1}% → {:+.1}% (without → with the overhead)",
            c.overhead_tokens, mae, c.mean_abs_pct_error, bias, c.bias_pct
        )),
        _ => line.push_str(&format!(
            "; mean abs error {:.1}%, bias {:+.1}%",
            c.mean_abs_pct_error, c.bias_pct
        )),
    }
    line
}

/// One row per trace that records usage: its model calls, recorded against counted input, the
/// mean absolute error and the bias (with the overhead, if one was given).
fn calibration_table(rows: &[(String, &Calibration)]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(id, c)| {
            vec![
                id.clone(),
                c.calls.to_string(),
                c.recorded_input.to_string(),
                c.counted_input.to_string(),
                format!("{:.1}%", c.mean_abs_pct_error),
                format!("{:+.1}%", c.bias_pct),
            ]
        })
        .collect();
    table(
        &["trace", "calls", "recorded", "counted", "abs.err", "bias"],
        &rows,
    )
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
    let header = ["tool", "calls", "call tokens", "results", "result tokens"];
    table(&header, &fit_column(rows, 0, &header, MIN_NAME_WIDTH))
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
    let header = ["trace", "index", "role", "tool", "tokens", "chars"];
    table(&header, &fit_column(rows, 3, &header, MIN_NAME_WIDTH))
}

/// `rows` with column `col` shortened in the middle (`output::ellipsize`) to the room the
/// other columns leave in [`WIDTH`], but never below `min` characters.
fn fit_column(
    mut rows: Vec<Vec<String>>,
    col: usize,
    header: &[&str],
    min: usize,
) -> Vec<Vec<String>> {
    let others: Vec<&str> = header
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != col)
        .map(|(_, h)| *h)
        .collect();
    let rest: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .filter(|&(i, _)| i != col)
                .map(|(_, c)| c.clone())
                .collect()
        })
        .collect();
    let width = room(&others, &rest).max(min);
    for r in &mut rows {
        r[col] = output::ellipsize(&r[col], width);
    }
    rows
}

/// Every line of the human rendering fits this many columns (the run summary's width).
const WIDTH: usize = crate::report::terminal::WIDTH;
/// Widest trace id shown in tables (`--json` always has the full id)...
const MAX_ID_WIDTH: usize = 48;
/// ...and the narrowest, however wide the other columns are.
const MIN_ID_WIDTH: usize = 20;
/// Tool names are shortened to fit, but not below this.
const MIN_NAME_WIDTH: usize = 12;

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_that_gives_an_id_twice_is_named_once_with_its_count() {
        let d = |files: &[&str]| crate::tokens::stats::DuplicateId {
            id: "t".into(),
            files: files.iter().map(|f| f.to_string()).collect(),
        };
        let note = super::duplicates_note(&[d(&["a.jsonl", "a.jsonl"])]).unwrap();
        assert!(note.ends_with(": t (from a.jsonl ×2)"), "{note}");
        let note = super::duplicates_note(&[d(&["a.jsonl", "b.jsonl", "a.jsonl"])]).unwrap();
        assert!(
            note.ends_with(": t (from a.jsonl ×2 and b.jsonl)"),
            "{note}"
        );
        let note = super::duplicates_note(&[d(&["a.jsonl", "b.jsonl"])]).unwrap();
        assert!(note.ends_with(": t (from a.jsonl and b.jsonl)"), "{note}");
    }

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
        // Sentences are wrapped at WIDTH: compare them with the line breaks as spaces.
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("mean abs error 40.0%, bias -40.0%"), "{out}");
        assert!(
            out.contains("skipped: bad.json: line 3: expected an object"),
            "{out}"
        );
        let demo = out
            .lines()
            .find(|l| l.starts_with("demo "))
            .expect("trace row");
        // One trace: its calibration is the pooled line, no per-trace calibration table.
        assert!(!out.contains("Calibration by trace"), "{out}");
        // trace, format, msgs, calls, tokens, largest, warn: no per-role or calibration cells.
        let cells: Vec<&str> = demo.split_whitespace().collect();
        assert_eq!(cells.len(), 7, "{demo}");
        assert_eq!(cells[..4], ["demo", "openai", "3", "1"], "{demo}");
        for line in out.lines() {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
    }

    #[test]
    fn several_traces_get_a_calibration_table_of_those_that_record_usage() {
        use crate::trace::{Message, SourceFormat, Trace, TraceMeta, Usage};
        let mut with_usage = Message::assistant("ok", vec![]);
        with_usage.usage = Some(Usage {
            input: 50,
            ..Usage::default()
        });
        let long = "x".repeat(80);
        let mut a = Trace::new(TraceMeta::new(&long, SourceFormat::Openai));
        a.messages = vec![Message::user("hello"), with_usage];
        let mut b = Trace::new(TraceMeta::new("quiet", SourceFormat::Openai));
        b.messages = vec![Message::user("hi"), Message::assistant("yes", vec![])];
        let o200k = tokens::counter("o200k").unwrap();
        let out = render(&crate::tokens::stats::compute(&[a, b], o200k.as_ref(), 3));
        let cal: Vec<&str> = out
            .lines()
            .skip_while(|l| !l.starts_with("Calibration by trace"))
            .skip(2)
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(cal.len(), 1, "{out}");
        let id = cal[0].split("  ").next().unwrap();
        assert!(
            id.contains('…') && id.chars().count() <= MAX_ID_WIDTH,
            "{out}"
        );
        // trace, calls, recorded, counted, abs.err, bias
        let cells: Vec<&str> = cal[0].split_whitespace().collect();
        assert_eq!(cells.len(), 6, "{out}");
        assert_eq!(cells[1..3], ["1", "50"], "{out}");
    }

    #[test]
    fn fit_column_shortens_only_the_named_column_and_not_below_the_minimum() {
        let long = "t".repeat(200);
        let rows = vec![vec!["a".to_string(), long.clone(), "b".into()]];
        let fit = fit_column(rows, 1, &["x", "name", "y"], 12);
        // Columns x and y take 1 + 2 each (their widths and gaps): 100 - 6 = 94 left.
        assert_eq!(fit[0][1].chars().count(), 94);
        assert_eq!((fit[0][0].as_str(), fit[0][2].as_str()), ("a", "b"));
        let wide = vec![vec!["w".repeat(120), long, "b".into()]];
        assert_eq!(
            fit_column(wide, 1, &["x", "name", "y"], 12)[0][1]
                .chars()
                .count(),
            12
        );
    }
}
