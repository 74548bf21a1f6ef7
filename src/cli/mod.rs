//! Command-line surface: one file per subcommand, each with its `Args` and a `run` function.
//!
//! Exit codes (the constants are in `crate::error`; documented in docs/reliability.md, stable
//! for CI use):
//! - 0  success
//! - 1  runtime failure (I/O, provider failure that the run was told to treat as fatal, …); also
//!   a run stopped by its budget, failed units with `fail_on_errors = true`, a `replay` whose
//!   invariants were violated
//! - 2  bad usage, bad configuration or bad input (file, line and what was expected are printed)
//! - 10 a gate rule failed (`ctxbench gate`)
//! - 130 interrupted (Ctrl-C); a partial report was written
//! - 143 terminated (SIGTERM), handled like Ctrl-C; a partial report was written
// No `unsafe` here, not even with a bench behind it (docs/architecture.md, "No `unsafe`").
#![forbid(unsafe_code)]
// The doc comments of the argument structs are clap's `--help` text: placeholders such as
// `<run-id>` are meant literally there, not as rustdoc HTML.
#![allow(rustdoc::invalid_html_tags)]

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `print!` through [`emit`] (a closed stdout is not a panic); evaluates to `io::Result<()>`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::emit(&format!($($arg)*))
    };
}

/// `println!` through [`emit`]; evaluates to `io::Result<()>`.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}

pub mod clean;
pub mod compare;
mod coverage;
pub mod gate;
pub mod import;
pub mod merge;
pub mod repair;
pub mod replay;
pub mod report;
pub mod run;
pub mod schema;
pub mod traces;

pub use crate::error::{
    UsageError, EXIT_FAILURE, EXIT_GATE_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED,
    EXIT_USAGE,
};

/// Measure how agent context compression trades tokens and cost against forgetting.
///
/// ctxbench replays recorded agent traces through configurable compression engines (eviction,
/// clearing, argument truncation, summarization, …), runs targeted evals (needle recall through
/// the offloaded history, goal drift after summarization, probes, invariants) and writes
/// comparison reports with per-sample tokens and cost.
#[derive(Debug, Parser)]
#[command(name = "ctxbench", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Each subcommand's arguments are built only when it is the one invoked (`defer`): building
/// every subcommand's arguments and help texts cost a `ctxbench replay` ~0.1 ms and 65 page
/// faults.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Run a suite: traces × engine variants × evals → reports/<run-id>/
    Run(run::Args),
    /// Replay one trace through one engine variant and print the timeline of every layer's action
    Replay(replay::Args),
    /// Convert traces from any supported format into canonical ctxbench JSONL
    #[command(long_about = import::LONG_ABOUT)]
    Import(import::Args),
    /// Inspect traces (statistics: messages, tokens by role and tool, largest messages)
    #[command(subcommand)]
    Traces(traces::Command),
    /// Re-render Markdown/HTML/plots from a saved run, without any model call
    Report(report::Args),
    /// Paired A/B comparison of two runs with confidence intervals
    Compare(compare::Args),
    /// CI gate: exit 10 when a rule regresses significantly or misses its threshold
    Gate(gate::Args),
    /// Join the outputs of `run --shard i/n` into one run
    Merge(merge::Args),
    /// Print the JSON Schema of a ctxbench file format
    Schema(schema::Args),
    /// Move unreadable lines of a run's journal aside so it can be resumed and reported
    Repair(repair::Args),
    /// Remove old run directories, offload stores and the response cache
    Clean(clean::Args),
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(a) => run::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Import(a) => import::run(a),
        Command::Traces(c) => traces::run(c),
        Command::Report(a) => report::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Gate(a) => gate::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Schema(a) => schema::run(a),
        Command::Repair(a) => repair::run(a),
        Command::Clean(a) => clean::run(a),
    }
}

/// Write text for a person to stdout, its control characters shown visibly
/// ([`crate::output::visible`]): trace ids, model and tool names come from untrusted traces and
/// must not reach the terminal as escape sequences (whether stdout is a terminal or not: a
/// file or a pipe is shown later). A closed stdout (`ctxbench compare A B | head`) means the
/// reader has seen enough: the command goes on silently (its files and exit code stay the same)
/// instead of panicking as `print!` does. Any other write error is returned.
pub fn emit(text: &str) -> std::io::Result<()> {
    write_stdout(&crate::output::visible(text))
}

/// Write a JSON document (serde_json's text) to stdout, its control characters as JSON `\u`
/// escapes ([`crate::output::visible_json`]): the values stay exactly those of the document,
/// and none reaches a terminal raw. [`emit`] would change them (`\u{9b}` is no JSON escape).
pub fn emit_json(text: &str) -> std::io::Result<()> {
    write_stdout(&crate::output::visible_json(text))
}

fn write_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// When a command reads a big run in bounded memory (`report`, `compare`, `gate`, the end of
/// `run`): hidden flags tests and benches set; the defaults suit every run (docs/report.md,
/// "Reports of big runs").
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SpillArgs {
    /// Read a run of more than N samples in bounded memory, its rows and observations sorted
    /// on disk
    #[arg(long, value_name = "N", hide = true)]
    pub spill_above: Option<usize>,
    /// Rows a sorted run on disk holds
    #[arg(long, value_name = "N", hide = true)]
    pub spill_run_rows: Option<usize>,
}

impl SpillArgs {
    /// The spill options these flags set, the defaults otherwise.
    pub fn options(&self) -> crate::report::spill::SpillOptions {
        let mut o = crate::report::spill::SpillOptions::default();
        if let Some(n) = self.spill_above {
            o.above = n;
        }
        if let Some(n) = self.spill_run_rows {
            o.run_rows = n;
        }
        o
    }
}

/// A run directory named by a positional argument (`report RUN_DIR`, `compare RUN_A RUN_B`):
/// a path that is not an existing directory is a usage error naming that argument, before
/// `-o/--output` (which defaults to it) or the journal reader words it as their own fault.
pub fn run_dir_arg(arg: &str, path: &std::path::Path) -> Result<(), UsageError> {
    let what = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => "it is a file".to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "no such directory".to_string(),
        Err(e) => format!("cannot read it: {e}"),
    };
    Err(not_a_run_dir(arg, path, &what))
}

fn not_a_run_dir(arg: &str, path: &std::path::Path, what: &str) -> UsageError {
    UsageError(crate::output::error_text(&format!(
        "{arg} {}: is not a run directory: {what} (expected a directory holding run.json and \
         samples.jsonl, e.g. reports/<run-id>)",
        path.display()
    )))
}

/// [`run_dir_arg`] for `run --resume DIR`: the directory must also be a run (hold run.json) or
/// one that never started (`RunDir::resumable`), checked before anything (a lock file) is
/// written in it: an empty directory, or one that is no run, is refused and left as it was.
pub fn resume_arg(arg: &str, path: &Path) -> Result<(), UsageError> {
    run_dir_arg(arg, path)?;
    let dir = crate::record::RunDir::new(path);
    if dir.resumable() {
        return Ok(());
    }
    let empty = std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none());
    let what = match (empty, path.file_name()) {
        (true, Some(name)) => {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            format!(
                "it is empty; `ctxbench run SUITE -o {} --run-id {}` starts a new run in it",
                crate::output::shell_word(&crate::output::display_path(parent)),
                crate::output::shell_word(&name.to_string_lossy())
            )
        }
        (true, None) => "it is empty".to_string(),
        (false, _) => "it holds no run.json".to_string(),
    };
    Err(not_a_run_dir(arg, path, &what))
}

/// [`run_dir_arg`] for a command that rewrites the run's journal (`repair`): the directory
/// must also hold samples.jsonl, checked before anything (a lock file) is written in it.
pub fn run_journal_arg(arg: &str, path: &std::path::Path) -> Result<(), UsageError> {
    run_dir_arg(arg, path)?;
    let journal = crate::record::RunDir::new(path).samples_jsonl();
    let what = match std::fs::metadata(&journal) {
        Ok(m) if m.is_file() => return Ok(()),
        Ok(_) => "its samples.jsonl is not a file".to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            "it holds no samples.jsonl".to_string()
        }
        Err(e) => format!("cannot read {}: {e}", journal.display()),
    };
    Err(not_a_run_dir(arg, path, &what))
}

/// A run directory a command reads (`report`, `compare`, `gate`): [`run_dir_arg`], and a run
/// that never started (`RunDir::never_started`: stopped before its run.json was written) is
/// refused with what to do about it ([`never_started`]), and one without its samples.jsonl as
/// no run directory ([`run_journal_arg`]); `nothing_to` is what the command would do
/// (`report`, `compare`, `gate`).
pub fn run_to_read(arg: &str, path: &Path, nothing_to: &str) -> Result<(), UsageError> {
    run_dir_arg(arg, path)?;
    if crate::record::RunDir::new(path).never_started() {
        return Err(never_started(arg, path, nothing_to));
    }
    // A run (or a merge) creates its samples.jsonl before its run.json, so a directory without
    // one is no run, or a part of one (an artifact that kept run.json and the reports only):
    // said as `repair` says it, not as the bare "samples.jsonl: No such file or directory".
    run_journal_arg(arg, path)
}

/// What a command that reads or repairs a run (`nothing_to`: `report`, `repair`, …) says of a
/// run that never started (docs/reliability.md, "Resume"): nothing was recorded, `run --resume`
/// starts it over, `clean` removes it. One a live process is creating right now (its lock is
/// held) is said to be starting instead. Within [`crate::output::WIDTH`] columns after `error: `.
pub fn never_started(arg: &str, path: &Path, nothing_to: &str) -> UsageError {
    let shown = crate::output::display_path(path);
    let text = match crate::record::RunDir::new(path).writer() {
        Some(pid) => format!(
            "{arg} {shown}: this run is just starting ({}) and has recorded nothing yet, so \
             there is nothing to {nothing_to}; try again when its run.json is written",
            if pid == 0 {
                "another process".to_string()
            } else {
                format!("process {pid}")
            }
        ),
        None => format!(
            "{arg} {shown}: this run never started (it was stopped before its run.json was \
             written; nothing was recorded), so there is nothing to {nothing_to}: start it over \
             with `ctxbench run SUITE --resume {}`, or remove it (`ctxbench clean`)",
            crate::output::shell_word(&shown)
        ),
    };
    UsageError(crate::output::error_text(&text))
}

/// `path`, made absolute and normalized as the file system will resolve it once the missing
/// directories are created (so a file that does not exist yet can be compared with a
/// directory): component by component, each prefix that exists canonicalized (links followed,
/// so `link/..` is the parent of the link's target), and `..` after one that does not exist
/// taken lexically (`-o new/../OTHER` writes into OTHER once `new` is made).
/// A link whose target does not exist (yet) is followed too: writing through it creates its
/// target, so that is where the path leads.
pub fn resolved(path: &Path) -> PathBuf {
    resolved_within(path, 0)
}

/// [`resolved`], `links` dangling links followed so far (at most 40, as the kernel's limit).
fn resolved_within(path: &Path, links: usize) -> PathBuf {
    use std::path::Component;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in abs.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
        if let Ok(real) = out.canonicalize() {
            out = real;
        } else if links < 40 {
            if let Ok(target) = std::fs::read_link(&out) {
                let parent = out.parent().map(Path::to_path_buf).unwrap_or_default();
                out = resolved_within(&parent.join(target), links + 1);
            }
        }
    }
    out
}

/// Where a command writes its files (`report` and `compare`: `-o DIR`; `gate`: `--junit PATH`),
/// and the run directories it may write into: the runs it reads that its files belong to.
pub struct Output<'a> {
    /// The option as the user spells it (`-o`, `--junit`).
    pub flag: &'a str,
    /// Its value: the directory written into, or the file written.
    pub path: &'a Path,
    /// What is written there (`its report files`, `compare.md and compare.json`).
    pub writes: &'a str,
    /// Where it goes when `flag` is left out.
    pub default: &'a Path,
}

/// Refuse an output that lies in a run directory other than one of `own`'s (RUN_DIR for
/// `report`; RUN_A and RUN_B for `compare`; the candidate run for `gate`): `path` itself or the
/// nearest of its ancestors that is a run directory (it holds run.json or samples.jsonl). There
/// `command` writes its files under fixed names (report.md, compare.md, gate.xml, …) or at a
/// path the user gave (`--junit OTHER/run.json`): it would replace that run's own files, or mix
/// its own among them (docs/reliability.md, "One writer"). Only the command's own runs'
/// directories, or one that is no run, receive them. Within [`crate::output::WIDTH`] columns
/// after `error: `.
pub fn refuse_other_run(out: &Output<'_>, own: &[&Path], command: &str) -> Result<(), UsageError> {
    let at = resolved(out.path);
    let own: Vec<PathBuf> = own.iter().map(|p| resolved(p)).collect();
    for dir in at.ancestors() {
        let run = crate::record::RunDir::new(dir);
        let Some(held) = [run.run_json(), run.samples_jsonl()]
            .into_iter()
            .find(|p| std::fs::symlink_metadata(p).is_ok())
        else {
            continue;
        };
        if own.iter().any(|o| o == dir) {
            return Ok(());
        }
        let held = held
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let place = if dir == at {
            "is another run's directory".to_string()
        } else {
            format!(
                "is inside another run's directory, {}",
                crate::output::display_path(dir)
            )
        };
        return Err(UsageError(crate::output::error_text(&format!(
            "{} {}: {place} (it holds {held}): `{command}` would write {} among that run's own \
             files and replace any of the same name; write into a directory that is no run, or \
             leave out {} to write into {}",
            out.flag,
            crate::output::display_path(out.path),
            out.writes,
            out.flag,
            crate::output::display_path(out.default)
        ))));
    }
    Ok(())
}

/// Take the lock of `out` when a command (`report`, `compare`) is about to write its files into
/// a run directory (one holding run.json: by default the run it reads), and keep it while they
/// are written: one process owns a run directory (docs/reliability.md, "One writer"). A run
/// directory a live run owns is refused (exit 2) with a hint to write elsewhere: reading a live
/// run stays possible (`-o OTHER_DIR`), writing into it is not. A directory that is no run gets
/// no lock file and no lock (`None`). `elsewhere`: the option that writes elsewhere
/// (`-o OTHER_DIR`, `--junit OTHER_PATH`).
pub fn claim_run_output(
    out: &std::path::Path,
    command: &str,
    elsewhere: &str,
) -> Result<Option<crate::record::RunLock>, UsageError> {
    let dir = crate::record::RunDir::new(out);
    if !dir.run_json().is_file() {
        return Ok(None);
    }
    match dir.lock() {
        Ok(lock) => Ok(Some(lock)),
        Err(crate::record::LockError::Held { pid, .. }) => {
            let who = pid.map_or("another ctxbench process".to_string(), |p| {
                format!("another ctxbench process (pid {p})")
            });
            Err(UsageError(format!(
                "{} is being written by {who}: `{command}` does not write its files into a live \
                 run's directory; write them elsewhere with `{elsewhere}` (it reads the samples \
                 journaled so far), or wait for the run to finish",
                out.display()
            )))
        }
        Err(e) => Err(UsageError(e.to_string())),
    }
}

/// The note `compare` and `gate` give of a journal (`samples`) with `n` later lines of units
/// journaled more than once (the report's says where they are left out).
pub fn duplicates_note(samples: &std::path::Path, n: usize) -> String {
    format!(
        "{}: {n} unit(s) appear more than once in the journal (same variant, trace, eval, \
         sample and repeat); only the first line of each counts ({n} later line(s) left out)",
        crate::output::display_path(samples)
    )
}

/// The one output convention: `-o/--output DIR` names a directory on every command (created
/// when missing); files inside it have fixed names. A path that is an existing file, lies under
/// a file, or ends in a file extension (`out.html`, `results.csv`), is a usage error rather than
/// a directory silently named like a file ([`crate::output::not_a_directory`], the rule the
/// suite's `output_dir` follows too). Single files are written by their own flags (`gate
/// --junit PATH`).
pub fn output_dir(path: &std::path::Path) -> Result<std::path::PathBuf, UsageError> {
    match crate::output::not_a_directory(path) {
        Some(why) => Err(UsageError(format!("-o/--output {}: {why}", path.display()))),
        None => Ok(path.to_path_buf()),
    }
}

/// Map an error to the documented exit code by looking for known input-error types in its chain.
pub fn exit_code_for(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<UsageError>()
            || cause.is::<crate::trace::ImportError>()
            || cause.is::<crate::config::ConfigError>()
        {
            return EXIT_USAGE;
        }
        // A provider that cannot be configured (e.g. its api_key_env variable is unset).
        if let Some(crate::providers::ProviderError::Config { .. }) = cause.downcast_ref() {
            return EXIT_USAGE;
        }
    }
    EXIT_FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::{ProviderConfig, ProviderError, ProviderKind};
    use std::time::Duration;

    #[test]
    fn configuration_errors_exit_with_the_usage_code() {
        let mut c = ProviderConfig::new(ProviderKind::Openai, "m");
        c.api_key_env = Some("CTXBENCH_TEST_EXIT_CODE_KEY_UNSET".into());
        let e = anyhow::Error::from(c.validate().unwrap_err()).context("provider `judge`");
        assert_eq!(exit_code_for(&e), EXIT_USAGE);
        let runtime = anyhow::Error::from(ProviderError::Timeout {
            after: Duration::from_secs(1),
        });
        assert_eq!(exit_code_for(&runtime), EXIT_FAILURE);
        let usage = anyhow::Error::from(UsageError("bad flag".into()));
        assert_eq!(exit_code_for(&usage), EXIT_USAGE);
    }

    #[test]
    fn resolved_paths_are_where_the_files_will_go() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("run")).unwrap();
        std::os::unix::fs::symlink(root.join("run"), root.join("link")).unwrap();
        let r = |p: &str| resolved(&tmp.path().join(p));
        assert_eq!(r("run"), root.join("run"));
        assert_eq!(r("link/x.xml"), root.join("run/x.xml"));
        assert_eq!(r("new/../run/./x.xml"), root.join("run/x.xml"));
        assert_eq!(r("new/deeper/../../run"), root.join("run"));
        assert_eq!(r("run/../new/x"), root.join("new/x"));
    }

    #[test]
    fn output_names_a_directory_never_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(output_dir(&tmp.path().join("out")).is_ok());
        assert!(output_dir(&tmp.path().join("run.v2")).is_ok());
        let e = output_dir(&tmp.path().join("out.html")).unwrap_err();
        assert!(e.0.contains("looks like a .html file name"), "{e}");
        let file = tmp.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        assert!(output_dir(&file).unwrap_err().0.contains("is a file"));
        // Under a file: no directory can be made there ("Not a directory", exit 1, before).
        let e = output_dir(&file.join("sub")).unwrap_err().0;
        assert!(
            e.starts_with("-o/--output ") && e.contains("plain is a file, not a directory"),
            "{e}"
        );
        // An existing directory is fine whatever its name.
        let d = tmp.path().join("d.json");
        std::fs::create_dir(&d).unwrap();
        assert!(output_dir(&d).is_ok());
    }

    /// `run --help` names every eval `--eval` takes (it once left out two of seven).
    #[test]
    fn run_help_lists_every_eval() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let help = cli
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string();
        let line = help
            .split("--eval <NAME>")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .unwrap();
        for eval in crate::config::overrides::EVAL_NAMES {
            assert!(
                line.contains(eval),
                "`{eval}` missing from --eval's help: {line}"
            );
        }
    }
}
