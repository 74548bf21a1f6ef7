//! `ctxbench import`: convert recorded traces (any supported format) into canonical JSONL files,
//! one per trace, and print what was imported. See its `--help`.

use crate::output;
use crate::record::import_warnings::{self as warnings, ImportWarnings};
use crate::trace::import::{import_paths, Imported};
use crate::trace::{io, SourceFormat, Trace};
use anyhow::Context;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub const LONG_ABOUT: &str = "\
Convert recorded agent traces into canonical ctxbench JSONL (one file per trace).

Inputs may be files or directories. Directories are walked recursively in sorted order; only
*.json, *.jsonl, *.ndjson, *.traj and *.eval files are read there, and files that are valid JSON
but not a trace (e.g. mini-swe-agent's results_summary.json), or whose import holds no message,
are listed as ignored. SOURCE.txt, *.md and other files are never opened. Walking follows no
symbolic link (an input that is a link is followed) and opens no file that is not regular (a
named pipe): each is listed as ignored. A Claude Code project
folder (~/.claude/projects/<project>) imports every session and every subagent transcript.

The format is detected from the content of each file:
  openai       OpenAI chat messages: an array, {messages:[…]}, or JSON Lines
  anthropic    Anthropic Messages (content blocks text/tool_use/tool_result/thinking)
  claude-code  Claude Code sessions and subagent transcripts (~/.claude/projects)
  codex        Codex CLI rollouts (~/.codex/sessions/**/rollout-*.jsonl)
  openai-responses  OpenAI Responses API / Agents SDK items: array, JSONL or {model, input}
  langchain    LangChain messages_to_dict, dumpd, model_dump lists; LangGraph {messages} state
  inspect      Inspect AI logs, .json and .eval (one trace per sample and epoch)
  gemini-cli   Gemini CLI sessions (~/.gemini/tmp/<project>/chats/session-*.jsonl, .json)
  gemini       Gemini API Content[] history ({role: user|model, parts})
  cline        Cline / Roo Code api_conversation_history.json
  copilot      GitHub Copilot CLI sessions (~/.copilot/session-state/<id>/events.jsonl)
  mini-swe     mini-swe-agent .traj.json (1.x bash blocks and 2.x tool calls become calls)
  swe-agent    SWE-agent .traj (0.x text actions and 1.x function calling)
  openhands    OpenHands event arrays, evaluation rows, the 2024 resolver output
  tau          τ-bench historical trajectories (one trace per run)
  tau2         τ²-bench simulation results (one trace per simulation)
  atif         Harbor ATIF v1.x trajectories
  golden       deepagents golden-fixture role lines (a fixture's trace.jsonl)
  canonical    ctxbench's own JSONL (re-import, e.g. to split or rename)
Use --from FORMAT when detection picks the wrong one. An import that yields a trace with no
message is an error for that file (a forced --from says what the file looks like instead).

Each trace is written to DIR/<trace id>.jsonl. Ids are stable: the input file name without its
extension, plus the run key for files holding several traces (gpt-4o-airline__task3_trial1).
In the file name, characters outside A-Z a-z 0-9 . _ - become _, and an id longer than 200
bytes is cut to a prefix and a hash of the whole id (the file holds the id whole).
A <trace id>.jsonl already in DIR (an earlier import's) is never replaced silently: the import
is refused before anything is written, unless --overwrite says to replace it.

Bad input: without --skip-invalid the first file that fails stops the command with exit code 2
and a message naming the file, the line or JSON path, and what was expected. With it, failing
files are listed and everything else is imported (exit code 0). Inputs that yield no trace at
all (an empty directory, nothing but invalid files) are an error (exit code 2).";

const AFTER_HELP: &str = "\
Warnings (odd but importable input, e.g. a reused tool call id) are grouped by kind and counted,
with where the first one occurred; --verbose lists every one.

Examples:
  ctxbench import datasets/ -o traces/
  ctxbench import run.json --from openai -o traces/
  ctxbench import logs/ -o traces/ --skip-invalid
  ctxbench import datasets/ -o traces/ --overwrite   # again: replace the first import's files
  ctxbench import datasets/tau-bench -o traces/ --verbose     # every warning, one per line";

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Trace files or directories to import
    #[arg(required = true, value_name = "IN")]
    pub inputs: Vec<PathBuf>,
    /// Output directory (created if missing); one <trace id>.jsonl per trace
    #[arg(short = 'o', long = "output", alias = "out", value_name = "DIR")]
    pub out: PathBuf,
    /// Read every input as this format instead of detecting it
    #[arg(long, value_name = "FORMAT", value_parser = format_parser())]
    pub from: Option<SourceFormat>,
    /// List inputs that fail to import and go on, instead of stopping at the first
    #[arg(long)]
    pub skip_invalid: bool,
    /// Print every import warning instead of one line per kind of warning
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Replace <trace id>.jsonl files already in DIR (an earlier import's); without it, such a
    /// file is refused before anything is written
    #[arg(long)]
    pub overwrite: bool,
}

fn format_parser() -> impl clap::builder::TypedValueParser<Value = SourceFormat> {
    PossibleValuesParser::new(SourceFormat::ALL.iter().map(|f| f.as_str()))
        .map(|s| SourceFormat::parse(&s).expect("the possible values are exactly the format names"))
}

/// Longest file name [`file_name_for`] gives (bytes, before `.jsonl` and a `-N` suffix): far
/// below the 255 bytes file systems allow, and above every id a bundled format makes.
pub const MAX_FILE_NAME: usize = 200;

/// Hex digits of the id's SHA-256 a shortened file name ends in (64 bits: distinct ids never
/// share one in practice).
const NAME_HASH_HEX: usize = 16;

/// A file name for a trace id: characters outside `[A-Za-z0-9._-]` become `_`, and a name
/// longer than [`MAX_FILE_NAME`] bytes is cut to a readable prefix followed by `-` and a short
/// hash of the whole id (so two long ids that share their prefix get two names). The id inside
/// the file is the trace's own, unchanged; a name that fits is as it always was.
pub fn file_name_for(id: &str) -> String {
    let mut s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, '_');
    }
    if s.len() > MAX_FILE_NAME {
        use sha2::{Digest, Sha256};
        let hash = hex::encode(Sha256::digest(id.as_bytes()));
        // ASCII only by now: any byte is a character boundary.
        s.truncate(MAX_FILE_NAME - 1 - NAME_HASH_HEX);
        s.push('-');
        s.push_str(&hash[..NAME_HASH_HEX]);
    }
    s
}

/// One trace [`write_each`] wrote.
#[derive(Debug)]
pub struct Written {
    pub path: PathBuf,
    /// The trace's id in its input when another trace of the import had it first: it is
    /// written under a new id (`<id>-2`, …), as a run needs every trace id once.
    pub renamed_from: Option<String>,
}

/// Write each trace to `dir/<id>.jsonl`; a name already taken in this run gets `-2`, `-3`, ….
/// A trace whose id an earlier one had (two inputs of the same file name in different folders)
/// gets that suffix on its id too, so the folder imports as a suite's `[traces] paths`.
/// A file of that name already in `dir` (an earlier import's) is replaced only with
/// `overwrite`; otherwise every such file is named in a usage error before anything is written
/// (a suffix would import the same trace twice into the folder). Returns what was written, in
/// trace order.
pub fn write_each(dir: &Path, traces: &[Trace], overwrite: bool) -> anyhow::Result<Vec<Written>> {
    let mut taken = HashSet::new();
    // Every id in use: the inputs' and the new ones given so far.
    let mut ids: HashSet<String> = traces.iter().map(|t| t.meta.id.clone()).collect();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut planned = Vec::with_capacity(traces.len());
    for t in traces {
        let (renamed, renamed_from) = if seen.insert(&t.meta.id) {
            (None, None)
        } else {
            let id = (2..)
                .map(|n| format!("{}-{n}", t.meta.id))
                .find(|id| {
                    !ids.contains(id) && !taken.contains(&format!("{}.jsonl", file_name_for(id)))
                })
                .expect("an unused suffix exists");
            ids.insert(id.clone());
            let mut copy = t.clone();
            copy.meta.id = id;
            (Some(copy), Some(t.meta.id.clone()))
        };
        let base = file_name_for(&renamed.as_ref().unwrap_or(t).meta.id);
        let mut name = format!("{base}.jsonl");
        let mut n = 2;
        while !taken.insert(name.clone()) {
            name = format!("{base}-{n}.jsonl");
            n += 1;
        }
        planned.push((t, renamed, renamed_from, dir.join(name)));
    }
    if !overwrite {
        let there: Vec<String> = planned
            .iter()
            .filter(|(.., path)| std::fs::symlink_metadata(path).is_ok())
            .map(|(.., path)| output::display_path(path))
            .collect();
        if !there.is_empty() {
            let shown = there.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
            let more = if there.len() > 5 {
                format!(" and {} more", there.len() - 5)
            } else {
                String::new()
            };
            return Err(super::UsageError(format!(
                "-o {}: {} file(s) this import would write are there already (an earlier \
                 import's?): {shown}{more}; nothing was written. Import into another directory, \
                 remove them, or pass --overwrite to replace them",
                output::display_path(dir),
                there.len()
            ))
            .into());
        }
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the output directory {}", dir.display()))?;
    let mut out = Vec::with_capacity(planned.len());
    for (t, renamed, renamed_from, path) in planned {
        let t = renamed.as_ref().unwrap_or(t);
        io::write_traces_file(&path, std::slice::from_ref(t))
            .with_context(|| format!("cannot write {}", path.display()))?;
        out.push(Written { path, renamed_from });
    }
    Ok(out)
}

/// The summary printed after an import (pure, for testing).
pub fn summary(imported: &Imported, dir: &Path) -> String {
    let mut per: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    for t in &imported.traces {
        let e = per.entry(t.meta.source_format.as_str()).or_default();
        e[0] += 1;
        e[1] += t.messages.len();
        e[2] += t.messages.iter().map(|m| m.tool_calls.len()).sum::<usize>();
        e[3] += t.meta.warnings.len();
    }
    let rows: Vec<Vec<String>> = per
        .iter()
        .map(|(f, c)| {
            let mut r = vec![f.to_string()];
            r.extend(c.iter().map(|n| n.to_string()));
            r
        })
        .collect();
    let mut s = output::table(
        &["format", "traces", "messages", "tool calls", "warnings"],
        &rows,
    );
    let mut done = format!(
        "imported {} traces into {}",
        imported.traces.len(),
        crate::output::display_path(dir)
    );
    if !imported.ignored.is_empty() {
        done.push_str(&format!(
            "; {} non-trace files ignored",
            imported.ignored.len()
        ));
    }
    if !imported.skipped.is_empty() {
        done.push_str(&format!(
            "; {} inputs skipped as invalid",
            imported.skipped.len()
        ));
    }
    // Within `output::WIDTH` columns, a path never cut (one longer than a line stands alone).
    let line = |text: &str| output::wrap_whole("", 4, text, output::WIDTH);
    s.push('\n');
    s.push_str(&line(&done));
    for (p, why) in &imported.ignored {
        s.push_str(&line(&format!("ignored {}: {why}", p.display())));
    }
    for e in &imported.skipped {
        s.push_str(&line(&format!("skipped {e}")));
    }
    s
}

/// The import warnings, grouped by kind (most frequent first) with a count and the place of the
/// first; with `verbose`, every warning on its own line. Empty when there is none. Pure.
pub fn warnings_text(traces: &[Trace], verbose: bool) -> String {
    if verbose {
        warnings::listed(traces.iter().map(Trace::warned))
    } else {
        ImportWarnings::of(traces.iter().map(Trace::warned)).text("--verbose lists each one")
    }
}

/// The error of an import that found no trace: what was given, what was passed over and why.
fn nothing_imported(inputs: &[PathBuf], imported: &Imported) -> super::UsageError {
    let given: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let mut msg = if inputs.iter().any(|p| p.is_dir()) {
        format!(
            "no trace found in {}: a directory is searched for *.{} files",
            given.join(", "),
            crate::trace::import::TRACE_EXTENSIONS.join(", *.")
        )
    } else {
        format!("no trace found in {}", given.join(", "))
    };
    if !imported.ignored.is_empty() || !imported.skipped.is_empty() {
        msg.push_str(&format!(
            "; {} non-trace file(s) ignored, {} skipped as invalid",
            imported.ignored.len(),
            imported.skipped.len()
        ));
    }
    for (p, why) in imported.ignored.iter().take(5) {
        msg.push_str(&format!("\n  ignored {}: {why}", p.display()));
    }
    for e in imported.skipped.iter().take(5) {
        msg.push_str(&format!("\n  skipped {e}"));
    }
    super::UsageError(msg)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    super::output_dir(&args.out)?;
    let imported = import_paths(&args.inputs, args.from, args.skip_invalid)?;
    if imported.traces.is_empty() {
        // An empty dataset directory is a mistake to report, not a success with nothing in it.
        return Err(nothing_imported(&args.inputs, &imported).into());
    }
    let written = write_each(&args.out, &imported.traces, args.overwrite)?;
    out!("{}", summary(&imported, &args.out))?;
    let renamed: Vec<String> = written
        .iter()
        .filter_map(|w| {
            let from = w.renamed_from.as_ref()?;
            Some(format!(
                "`{from}` -> {}",
                crate::output::display_path(&w.path)
            ))
        })
        .collect();
    if !renamed.is_empty() {
        out!(
            "{}",
            output::wrap(
                &format!(
                    "note: {} trace(s) had the id of a trace imported before them (e.g. inputs \
                     of one file name in different folders); each is written under its id \
                     with a suffix, as a run needs every id once: {}",
                    renamed.len(),
                    renamed.join(", ")
                ),
                100
            )
        )?;
    }
    out!("{}", warnings_text(&imported.traces, args.verbose))?;
    Ok(ExitCode::from(super::EXIT_OK))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceMeta;

    #[test]
    fn file_names_are_safe_and_stable() {
        assert_eq!(
            file_name_for("gpt-4o-airline__task3_trial1"),
            "gpt-4o-airline__task3_trial1"
        );
        assert_eq!(file_name_for("a/b:c d"), "a_b_c_d");
        // Up to the bound a name is the id's, as it always was.
        let fits = "t".repeat(MAX_FILE_NAME);
        assert_eq!(file_name_for(&fits), fits);
        assert_eq!(file_name_for(".."), "_..");
        assert_eq!(file_name_for(""), "_");
    }

    #[test]
    fn warnings_group_by_kind_whatever_the_place_and_ids() {
        let trace = |id: &str, ws: &[&str]| {
            let mut m = TraceMeta::new(id, SourceFormat::Openai);
            m.source_path = Some(format!("in/{id}.json"));
            m.warnings = ws.iter().map(|w| w.to_string()).collect();
            Trace::new(m)
        };
        let traces = [
            trace("a", &["message 3: tool call \"x\" (bash) has no result"]),
            trace("b", &[]),
            trace(
                "c",
                &[
                    "$[1]: tool call id \"p\" was already used in this trace; renamed to \"p__2\"",
                    "$[7]: tool call id \"q\" was already used in this trace; renamed to \"q__2\"",
                ],
            ),
        ];
        assert_eq!(
            warnings_text(&traces, false),
            "\n3 import warning(s) in 2 trace(s) (--verbose lists each one)\n\
             \x20 2× tool call id \"…\" was already used in this trace; renamed to \"…\" (first: in/c.json $[1])\n\
             \x20 1× tool call \"…\" (bash) has no result (first: in/a.json [a] message 3)\n"
        );
        let all = warnings_text(&traces, true);
        assert_eq!(all.lines().count(), 5, "{all}");
        assert!(all.contains("  in/c.json [c]: $[7]: tool call id \"q\" was already used"));
        assert_eq!(warnings_text(&traces[1..2], false), "");
    }

    /// An id too long for a file name (400 characters, or one that is mostly path separators
    /// and characters no file name takes) gets a bounded name: a readable prefix and a hash of
    /// the whole id, so ids that share the prefix never share a name; the file holds the id
    /// whole. (Such an import failed: `File name too long`.)
    #[test]
    fn long_ids_get_bounded_names_that_never_collide() {
        let long = "x".repeat(400);
        let name = file_name_for(&long);
        assert_eq!(name.len(), MAX_FILE_NAME, "{name}");
        assert!(name.starts_with(&"x".repeat(150)), "{name}");
        assert_ne!(
            file_name_for(&format!("{long}a")),
            file_name_for(&format!("{long}b"))
        );
        let odd = format!("{}/é:\u{0}", "dir/".repeat(80));
        let named = file_name_for(&odd);
        assert!(
            named.len() <= MAX_FILE_NAME && named.starts_with("dir_dir_"),
            "{named}"
        );
        assert!(named
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)));
        assert_eq!(file_name_for(&odd), named, "stable");

        let dir = tempfile::tempdir().unwrap();
        let t = |id: &str| Trace::new(TraceMeta::new(id, SourceFormat::Openai));
        let ids = [
            format!("{long}a"),
            format!("{long}b"),
            odd,
            "short".to_string(),
        ];
        let traces: Vec<Trace> = ids.iter().map(|id| t(id)).collect();
        let written = write_each(dir.path(), &traces, false).unwrap();
        let names: HashSet<_> = written.iter().map(|w| w.path.clone()).collect();
        assert_eq!(names.len(), 4);
        assert!(dir.path().join("short.jsonl").is_file());
        for (w, id) in written.iter().zip(&ids) {
            assert_eq!(&io::read_traces(&w.path).unwrap()[0].meta.id, id);
            assert!(w.renamed_from.is_none());
        }
    }

    #[test]
    fn colliding_ids_get_suffixes() {
        let dir = tempfile::tempdir().unwrap();
        let t = |id: &str| Trace::new(TraceMeta::new(id, SourceFormat::Openai));
        let written = write_each(dir.path(), &[t("x"), t("x"), t("y"), t("x-2")], false).unwrap();
        let names: Vec<_> = written
            .iter()
            .map(|w| w.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["x.jsonl", "x-3.jsonl", "y.jsonl", "x-2.jsonl"]);
        // The second `x` gets a new id too (`x-2` is another input's): each id once, as in
        // its file's header.
        let ids: Vec<String> = written
            .iter()
            .map(|w| io::read_traces(&w.path).unwrap()[0].meta.id.clone())
            .collect();
        assert_eq!(ids, ["x", "x-3", "y", "x-2"]);
        let renamed: Vec<_> = written.iter().map(|w| w.renamed_from.as_deref()).collect();
        assert_eq!(renamed, [None, Some("x"), None, None]);
    }
}
