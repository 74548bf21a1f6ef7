//! `ctxbench replay`: one trace through one engine variant; prints the timeline of every model
//! call (tokens sent, cached, reference, events) for humans, or JSON.
//!
//! `ctxbench replay --fixture DIR --json` runs a golden-fixture folder with the `deepagents`
//! preset and the fixture's settings and prints `{"events": [...], "model_calls": [...]}` in the
//! fixture's vocabulary, so a new fixture can be checked the same way. `--preset`, `--window`,
//! `--counter`, `--set` and `--seed` change those settings; `--config`, `--agent-model`, a
//! TRACE and `--compare-recorded` are refused beside `--fixture` (usage error).

use super::{UsageError, EXIT_FAILURE, EXIT_OK};
use crate::engine::{
    self, fixture, EngineConfig, EngineError, OfflineSummarizer, OffloadStore, Replay, ReplayEnv,
    StoreTarget,
};
use crate::record::ImportWarnings;
use crate::trace::Trace;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Examples:
  ctxbench replay datasets/mini-swe-agent/astropy__astropy-12907.traj.json
  ctxbench replay datasets/mini-swe-agent/astropy__astropy-12907.traj.json --preset digitorn \\
      --window 30000 --set summarize.trigger.fraction=0.5
  ctxbench replay traces/t.jsonl --config engine.toml --store out/ --json
  ctxbench replay session.jsonl --preset claude-code --compare-recorded";

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Trace file (any importable format: canonical JSONL, golden-fixture role lines, …)
    #[arg(required_unless_present = "fixture", conflicts_with = "fixture")]
    pub trace: Option<PathBuf>,
    /// Golden-fixture folder (trace.jsonl, config.json, system_prompt.txt, tools.json,
    /// summary_text.txt) replayed with the deepagents preset and the fixture's window, output
    /// reservation and counter; --preset, --window, --counter, --set and --seed change them
    /// (its config.json is the configuration: not with --config or --agent-model)
    #[arg(long, value_name = "DIR")]
    pub fixture: Option<PathBuf>,
    /// Engine preset: deepagents (default), seed-layered, langchain, digitorn, digitorn-truncate,
    /// core-agent, turn-trim, openhands, codex, claude-code, anthropic-context-editing, none
    #[arg(long, short = 'p')]
    pub preset: Option<String>,
    /// Engine config file (TOML, or JSON by extension); --preset/--window/--set override it.
    /// Your own compactor: a file with `external.command = ["python3", "mine.py"]`
    /// (docs/engines.md)
    #[arg(long, value_name = "FILE", conflicts_with = "fixture")]
    pub config: Option<PathBuf>,
    /// Context window in tokens (default: the trace's recorded window, else the agent model's
    /// context window in the price table, else the preset's)
    #[arg(long)]
    pub window: Option<u64>,
    /// Token counter: o200k, cl100k, approx, approx-anthropic (default: the configuration's,
    /// else the preset's); counts exactly as `ctxbench run` does with the same `counter`
    #[arg(long, value_name = "COUNTER", value_parser = ["o200k", "cl100k", "approx", "approx-anthropic"])]
    pub counter: Option<String>,
    /// Price the agent's views as this model (and take its context window when neither the
    /// trace nor --window gives one); default: the trace's recorded model
    #[arg(long, value_name = "MODEL", conflicts_with = "fixture")]
    pub agent_model: Option<String>,
    /// Seed of the offload store's random names (uuid4/hex file names, which enter the
    /// pointers the model sees); a run's unit uses `runner::plan::unit_seed(suite seed, unit id)`
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Override a config key, e.g. --set summarize.trigger.fraction=0.5 (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Write the offload store under DIR/replay/<trace>/<preset> (default: memory only)
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// Print JSON instead of the human timeline
    #[arg(long)]
    pub json: bool,
    /// Also list where the real system compacted (the trace's `compaction` markers: Claude
    /// Code compact_boundary, Codex compacted, ATIF) beside where the preset did, with the
    /// fraction of recorded compactions reproduced within ±1 model call. With --json, prints
    /// `{"replay": …, "compare_recorded": …}` per trace
    #[arg(long, conflicts_with = "fixture")]
    pub compare_recorded: bool,
}

/// Unwrap engine errors so input/config errors keep their type (exit code 2).
fn engine_err(e: EngineError) -> anyhow::Error {
    match e {
        EngineError::Config(c) => anyhow::Error::new(c),
        EngineError::Input(i) => anyhow::Error::new(i),
        other => anyhow::Error::new(other),
    }
}

fn load_traces(path: &Path) -> anyhow::Result<Vec<Trace>> {
    if !path.exists() {
        return Err(UsageError(format!("{}: no such file", path.display())).into());
    }
    if path.is_dir() {
        let hint = if path.join(fixture::TRACE_FILE).is_file() {
            " (a golden-fixture folder: use --fixture DIR)"
        } else {
            ""
        };
        return Err(UsageError(format!(
            "{}: is a directory, expected a trace file{hint}",
            path.display()
        ))
        .into());
    }
    // Every format, golden-fixture role lines included (`trace::import::golden`).
    // `replay` takes no `--from`: `import --from` forces a format into a canonical file.
    let imported = crate::trace::import::import_file(path, None).map_err(|e| {
        e.force_format_by(
            "(`ctxbench import FILE --from FORMAT -o DIR` forces one; then replay the \
             canonical trace it writes)",
        )
    })?;
    let traces = match imported {
        t if !t.is_empty() => t,
        _ => return Err(UsageError(format!("{}: no trace found", path.display())).into()),
    };
    // What the importer changed in the traces, grouped as `import` prints it (on stderr: stdout
    // is the timeline or the JSON).
    let warned = ImportWarnings::of(traces.iter().map(Trace::warned))
        .text("`ctxbench import FILE -o DIR --verbose` lists each one");
    if !warned.is_empty() {
        crate::output::errln!("{}", warned.trim_matches('\n'));
    }
    Ok(traces)
}

fn load_config(args: &Args) -> anyhow::Result<EngineConfig> {
    let cfg = match &args.config {
        None => EngineConfig::default(),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| UsageError(format!("{}: cannot read: {e}", p.display())))?;
            let name = p.display().to_string();
            if p.extension().and_then(|e| e.to_str()) == Some("json") {
                EngineConfig::from_json_str(&text, &name)?
            } else {
                EngineConfig::from_toml_str(&text, &name)?
            }
        }
    };
    with_flags(cfg, args)
}

/// A configuration error named by what gave its key: the `--set` argument that wrote it (or a
/// key inside it, or the table it wrote into), else the flag (`--window 0`), else as the
/// configuration named it (the `--config` file, or `engine config`, the defaults and presets).
/// An error at `summarize.trigger` from `--set summarize.trigger.fractoin=0.5` said `engine
/// config`, as if a file held the typo.
fn named_by_flag(mut e: crate::confcore::ConfigError, args: &Args) -> crate::confcore::ConfigError {
    let flag = match e.key.first().map(String::as_str) {
        Some("window") => args.window.map(|w| format!("--window {w}")),
        Some("preset") => args.preset.as_ref().map(|p| format!("--preset {p}")),
        Some("counter") => args.counter.as_ref().map(|c| format!("--counter {c}")),
        Some("agent_model") => args
            .agent_model
            .as_ref()
            .map(|m| format!("--agent-model {m}")),
        _ => None,
    };
    // The `--set` arguments are applied after the flags: a key one wrote is its fault.
    let given = match engine::config::set_of(&args.sets, &e.key) {
        Some(arg) => Some(format!("--set {arg}")),
        None => flag,
    };
    if let Some(given) = given {
        e.file = given;
        e.line = 0;
    }
    e
}

/// `cfg` (a config file's, or a fixture's own) with what the flags change: --preset, --window,
/// --counter and --agent-model, then the --set overrides.
fn with_flags(mut cfg: EngineConfig, args: &Args) -> anyhow::Result<EngineConfig> {
    if args.preset.is_some() {
        cfg.preset = args.preset.clone();
    }
    if args.window.is_some() {
        cfg.window = args.window;
    }
    if args.counter.is_some() {
        cfg.counter = args.counter.clone();
    }
    if args.agent_model.is_some() {
        cfg.agent_model = args.agent_model.clone();
    }
    Ok(cfg
        .apply_sets(&args.sets)
        .map_err(|e| named_by_flag(e, args))?)
}

/// The trace id of each of `replays` as its timeline's first line shows it: whole when
/// `trace ID  preset P  counter C` fits `output::WIDTH` columns, else shortened around a `…` to
/// fit, never two alike (`output::short_ids`, as `traces stats` shows ids). Measured as shown
/// (control characters as their escapes).
fn shown_ids<'a>(replays: impl IntoIterator<Item = &'a Replay>) -> Vec<String> {
    let replays: Vec<&Replay> = replays.into_iter().collect();
    let room = replays
        .iter()
        .map(|r| {
            let rest = format!("trace   preset {}  counter {}", r.preset, r.counter);
            crate::output::WIDTH.saturating_sub(crate::output::columns(&rest))
        })
        .min()
        .unwrap_or(crate::output::WIDTH)
        .max(24);
    let ids: Vec<String> = replays
        .iter()
        .map(|r| crate::output::visible(&r.trace_id).into_owned())
        .collect();
    crate::output::short_ids(&ids.iter().map(String::as_str).collect::<Vec<_>>(), room)
}

/// The timeline of `r` for a person, its trace named `id` ([`shown_ids`]); every line within
/// `output::WIDTH` columns (prose wraps, a path longer than a line stands alone).
fn render_human(r: &Replay, id: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    // Within 100 columns (a long model name stays on the window's line; a long id is
    // shortened).
    let _ = writeln!(
        out,
        "trace {id}  preset {}  counter {}",
        r.preset, r.counter
    );
    let _ = writeln!(out, "window {} (from {})", r.window, r.window_source);
    let _ = writeln!(
        out,
        "input budget {}  overhead {} tokens",
        r.input_budget, r.overhead_tokens
    );
    // Calls are numbered 1..N (as in report.html); `message` is the trace index of the
    // assistant message whose request the call is.
    let call_at = |trace_index: usize| -> String {
        match r.calls.iter().position(|c| c.trace_index == trace_index) {
            Some(k) => format!("call {} (message {trace_index})", k + 1),
            None => format!("message {trace_index}"),
        }
    };
    // Tool-time events happen between calls: shown at the next call (or the call reporting it).
    let shown = r.events_by_call();
    let rows: Vec<Vec<String>> = r
        .calls
        .iter()
        .zip(&shown)
        .enumerate()
        .map(|(k, (c, shown))| {
            let evs: Vec<String> = shown.iter().map(|&e| r.events[e].describe()).collect();
            vec![
                (k + 1).to_string(),
                c.trace_index.to_string(),
                c.input_tokens.to_string(),
                c.cached_tokens.to_string(),
                c.reference_tokens.to_string(),
                c.sent_msgs.to_string(),
                evs.join("; "),
            ]
        })
        .collect();
    out.push_str(&crate::output::table_fit(
        &[
            "call",
            "message",
            "sent",
            "cached",
            "reference",
            "msgs",
            "events",
        ],
        &rows,
        100,
    ));
    let sent = r.input_tokens();
    let reference = r.reference_tokens();
    let saved = if reference > 0 {
        100.0 * (reference as f64 - sent as f64) / reference as f64
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "{} calls, {sent} input tokens sent vs {reference} without compression ({saved:.1}% saved)",
        r.calls.len(),
    );
    let _ = writeln!(
        out,
        "summarizer: {} calls, {} in / {} out tokens",
        r.summarizer_calls, r.summarizer_usage.input, r.summarizer_usage.output
    );
    for (kind, n) in r.event_counts() {
        let _ = writeln!(out, "  {kind}: {n}");
    }
    // A sentence wrapped within the width, its lines after the first indented.
    let say = |out: &mut String, text: String| {
        out.push_str(&crate::output::wrap_whole(
            "",
            2,
            &text,
            crate::output::WIDTH,
        ));
    };
    let failures = r.summary_failures();
    if failures.count > 0 {
        say(
            &mut out,
            format!(
                "WARNING: {} summar{} failed ({}); their compactions did not happen, so these \
                 numbers are not those of a working summarizer",
                failures.count,
                if failures.count == 1 { "y" } else { "ies" },
                failures.classes_text()
            ),
        );
    }
    if let Some(s) = &r.stopped {
        say(
            &mut out,
            format!("stopped at {}: {}", call_at(s.trace_index), s.reason),
        );
    }
    if r.invariants.passed() {
        let _ = writeln!(
            out,
            "invariants: all hold over {} calls",
            r.invariants.calls_checked
        );
    } else {
        let _ = writeln!(
            out,
            "invariants: {} violated",
            r.invariants.violations.len()
        );
        for v in &r.invariants.violations {
            let text = format!("{} {:?}: {}", call_at(v.call_index), v.rule, v.message);
            out.push_str(&crate::output::wrap_whole(
                "  ",
                4,
                &text,
                crate::output::WIDTH,
            ));
        }
    }
    for d in &r.invariants.trace_defects {
        out.push_str(&crate::output::wrap_whole(
            "  ",
            4,
            &format!("trace defect (not the engine's): {}", d.message),
            crate::output::WIDTH,
        ));
    }
    if let Some(f) = &r.invariants.first_flag {
        say(
            &mut out,
            format!(
                "flagged: {} of {} calls sent more than without compression (first: {}: {})",
                r.invariants.flagged_calls,
                r.invariants.calls_checked,
                call_at(f.call_index),
                f.message
            ),
        );
    }
    out
}

/// The replays of every trace in the file `args.trace` (the command without `--fixture`), before
/// printing. Peak memory is about one copy of the trace: the file is streamed into the trace
/// model (`trace::import`) and the messages move into the replay (`tests/replay_memory.rs`).
pub fn replay_file(args: &Args) -> anyhow::Result<Vec<Replay>> {
    Ok(replay_file_recorded(args)?
        .into_iter()
        .map(|(r, _)| r)
        .collect())
}

/// [`replay_file`], each replay with what `--compare-recorded` needs of its trace (its model
/// calls and compaction markers, taken before the replay consumes the trace).
pub fn replay_file_recorded(
    args: &Args,
) -> anyhow::Result<Vec<(Replay, engine::recorded::RecordedCalls)>> {
    let path = args
        .trace
        .as_ref()
        .ok_or_else(|| UsageError("expected a trace file (or --fixture DIR)".into()))?;
    let traces = load_traces(path)?;
    let cfg = load_config(args)?;
    let summarizer = OfflineSummarizer;
    let mut replays = Vec::with_capacity(traces.len());
    let prices = crate::pricing::PriceTable::bundled();
    let unknown = args
        .agent_model
        .as_deref()
        .and_then(|m| prices.unknown_model(m));
    // Said once per distinct wording: the traces of one file mostly read alike.
    let mut said = std::collections::HashSet::new();
    for t in traces {
        let resolved = cfg
            .resolve_for(&t.meta, prices)
            .map_err(|e| named_by_flag(e, args))?;
        if let Some(why) = &unknown {
            let warning = unknown_model_window(why, &t.meta, &resolved);
            if said.insert(warning.clone()) {
                crate::output::errln!("warning: --agent-model {warning}");
            }
        }
        let mut env = ReplayEnv::new(&summarizer);
        env.seed = args.seed;
        if let Some(base) = &args.store {
            env.store = StoreTarget::Dir(OffloadStore::dir_for(
                base,
                "replay",
                &t.meta.id,
                &resolved.preset,
            ));
        }
        let recorded = if args.compare_recorded {
            engine::recorded::RecordedCalls::of(&t)
        } else {
            Default::default()
        };
        // By value: the trace's messages move into the replay, not copied (peak memory).
        let r = engine::replay_owned(t, &resolved, &env).map_err(engine_err)?;
        replays.push((r, recorded));
    }
    Ok(replays)
}

/// `why` (the model is not in the price table) and where the window of `trace` came from
/// instead, with the window its own recorded model would have given.
fn unknown_model_window(
    why: &str,
    trace: &crate::trace::TraceMeta,
    resolved: &engine::ResolvedConfig,
) -> String {
    let mut out = format!(
        "{why}; the window is {} (from {})",
        resolved.window, resolved.window_source
    );
    let recorded = trace.model.as_deref().and_then(|m| {
        crate::pricing::PriceTable::bundled()
            .context_window(m)
            .map(|w| (m, w))
    });
    if let (engine::WindowSource::Preset, Some((m, w))) = (&resolved.window_source, recorded) {
        out.push_str(&format!(
            ", not the {w} of the trace's model `{m}` (leave --agent-model out to use it)"
        ));
    }
    out
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // `--store DIR` is a directory replay writes into, refused as `-o` is when it cannot be one
    // (a file, a path under a file: "offload store: …: Not a directory", exit 1, before).
    if let Some(store) = &args.store {
        if let Some(why) = crate::output::not_a_directory(store) {
            return Err(UsageError(format!("--store {}: {why}", store.display())).into());
        }
    }
    let mut replays: Vec<Replay> = Vec::new();
    if let Some(dir) = &args.fixture {
        if !std::fs::metadata(dir.join(fixture::TRACE_FILE)).is_ok_and(|m| m.is_file()) {
            return Err(UsageError(format!(
                "{}: not a fixture folder (expected trace.jsonl, config.json, system_prompt.txt, tools.json, summary_text.txt)",
                dir.display()
            ))
            .into());
        }
        // The fixture's settings, changed by the flags a fixture can honour (--config and
        // --agent-model conflict with --fixture: its config.json is the configuration, and it
        // always gives the window).
        let fx = fixture::load(dir)?;
        let cfg = with_flags(fx.config.clone(), &args)?
            .resolve(None)
            .map_err(|e| named_by_flag(e, &args))?;
        let store = match &args.store {
            Some(base) => StoreTarget::Dir(OffloadStore::dir_for(
                base,
                "replay",
                "fixture",
                &cfg.preset,
            )),
            None => StoreTarget::Memory,
        };
        let r = fixture::replay_loaded(fx, &cfg, store, args.seed).map_err(engine_err)?;
        if args.json {
            let mut text = serde_json::to_string(&fixture::FixtureOutput::of(&r))?;
            text.push('\n');
            super::emit_json(&text)?;
            return Ok(ExitCode::from(if r.invariants.passed() {
                EXIT_OK
            } else {
                EXIT_FAILURE
            }));
        }
        replays.push(r);
    } else if args.compare_recorded {
        return run_compare_recorded(&args);
    } else {
        replays = replay_file(&args)?;
    }
    if args.json {
        let text = if replays.len() == 1 {
            serde_json::to_string_pretty(&replays[0])?
        } else {
            serde_json::to_string_pretty(&replays)?
        };
        super::emit_json(&format!("{text}\n"))?;
    } else {
        let text: String = replays
            .iter()
            .zip(shown_ids(&replays))
            .map(|(r, id)| render_human(r, &id))
            .collect();
        super::emit(&text)?;
    }
    let ok = replays.iter().all(|r| r.invariants.passed());
    Ok(ExitCode::from(if ok { EXIT_OK } else { EXIT_FAILURE }))
}

/// `replay --compare-recorded`: the timeline (or the replay's JSON) and, per trace, the
/// recorded compactions beside the preset's (`engine::recorded`).
fn run_compare_recorded(args: &Args) -> anyhow::Result<ExitCode> {
    let pairs = replay_file_recorded(args)?;
    let ok = pairs.iter().all(|(r, _)| r.invariants.passed());
    if args.json {
        let items: Vec<serde_json::Value> = pairs
            .iter()
            .map(|(r, rec)| {
                Ok(serde_json::json!({
                    "replay": serde_json::to_value(r)?,
                    "compare_recorded": serde_json::to_value(engine::recorded::compare(rec, r))?,
                }))
            })
            .collect::<Result<_, serde_json::Error>>()?;
        let text = if items.len() == 1 {
            serde_json::to_string_pretty(&items[0])?
        } else {
            serde_json::to_string_pretty(&items)?
        };
        super::emit_json(&format!("{text}\n"))?;
    } else {
        let mut text = String::new();
        for ((r, rec), id) in pairs.iter().zip(shown_ids(pairs.iter().map(|(r, _)| r))) {
            text.push_str(&render_human(r, &id));
            text.push_str(&engine::recorded::compare(rec, r).render_as(&id));
        }
        super::emit(&text)?;
    }
    Ok(ExitCode::from(if ok { EXIT_OK } else { EXIT_FAILURE }))
}
