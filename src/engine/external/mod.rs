//! External engines: a compactor written in any language, run as a child process that speaks
//! JSON lines ([`protocol`]) on its stdin/stdout. A variant names one with
//! `external.command = ["python3", "my_compactor.py"]` (plus `timeout_secs`, `env`, `config`);
//! it replaces the preset's layers for that variant.
//!
//! The engine is driven as one [`Layer`]: every trace message is forwarded as it enters the
//! state, and before each replayed call the engine's `view` becomes the request (matched to its
//! `call` by the `seq` it carries back, so a stray line is never taken for another call's view). The view is
//! mapped back onto the replay's state where it can be (kept trace messages, replaced tool
//! results, dropped ranges, synthetic messages first), so spans, cached prefixes, invariants,
//! pointers and evals treat it like a built-in view; its tokens are counted by ctxbench.
//!
//! One process per worker: a replay takes an idle process of the same command from a pool (or
//! spawns one) and gives it back after `end`. A process that dies, hangs past its timeout or
//! writes an unexpected line is killed and the replay fails with an [`ExternalError`] naming the
//! command, the line and the tail of its stderr.

pub mod process;
pub mod protocol;

use super::event::{Event, EventDetail, Summary};
use super::layer::{CallCtx, Layer, MessageCtx};
use super::summarizer::SummaryRequest;
use super::view::{Item, Override, State};
use super::EngineError;
use crate::trace::{Message, Role, Usage};
use process::Process;
use protocol::{FromEngine, ToEngine, WireEvent, PROTOCOL_VERSION};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

/// Seconds an engine may take to answer one exchange, unless `external.timeout_secs` says.
pub const DEFAULT_TIMEOUT_SECS: f64 = 60.0;

/// The longest `external.timeout_secs` accepted (one day) and the rule it is checked by: every
/// configured timeout's (`confcore::newtypes`), a provider's `timeout_secs` too.
pub use crate::confcore::newtypes::{timeout_duration, MAX_TIMEOUT_SECS};

/// `external = { … }` of an engine configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalSpec {
    /// argv of the engine; relative paths are resolved against the configuration file.
    pub command: Vec<String>,
    /// Seconds the engine may take to answer one `call` (and each `summarize` exchange):
    /// > 0 and at most [`MAX_TIMEOUT_SECS`] (one day); default [`DEFAULT_TIMEOUT_SECS`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::confcore::newtypes::opt_timeout_secs"
    )]
    pub timeout_secs: Option<f64>,
    /// Environment variables added to ctxbench's for the engine process.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Free-form table passed to the engine in `begin.config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

impl ExternalSpec {
    /// Check the values (non-empty command, a timeout of at most a day); a problem comes with
    /// the key it is about (`external.command`, `external.timeout_secs`).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.command.is_empty() || self.command[0].trim().is_empty() {
            return Err((
                "external.command",
                "must name a program (an argv list)".into(),
            ));
        }
        self.timeout()
            .map(|_| ())
            .map_err(|problem| ("external.timeout_secs", problem))
    }

    /// Resolve relative paths of the command against `dir` (the configuration file's folder):
    /// an argument that is not absolute and names an existing file or folder there. The program
    /// itself is resolved only when it contains a `/` (`python3` stays a `PATH` lookup).
    pub fn absolutize(&mut self, dir: &Path) {
        for (k, arg) in self.command.iter_mut().enumerate() {
            let p = Path::new(arg.as_str());
            if p.is_absolute() || arg.is_empty() || (k == 0 && !arg.contains('/')) {
                continue;
            }
            let joined = dir.join(p);
            if joined.exists() {
                *arg = joined.display().to_string();
            }
        }
    }

    /// The wait for one exchange ([`timeout_duration`] of `timeout_secs`, or the default).
    fn timeout(&self) -> Result<Duration, String> {
        timeout_duration(self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS))
    }

    /// Pool key: processes are reused only for the same command and environment.
    fn key(&self) -> String {
        serde_json::to_string(&(&self.command, &self.env)).unwrap_or_default()
    }
}

/// An external engine failed; always names the command.
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    #[error("external engine `{command}` could not be started{hint}")]
    Spawn {
        command: String,
        /// Why, when ctxbench can tell (` (… not on PATH …)`), else empty.
        hint: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "external engine `{command}`: {problem}{}{}{}",
        line.as_ref().map(|l| format!("\n  line: {l}")).unwrap_or_default(),
        status.as_ref().map(|s| format!("\n  exit: {s}")).unwrap_or_default(),
        if stderr.is_empty() { "\n  stderr: (empty)".to_string() } else { format!("\n  stderr (tail): {stderr}") }
    )]
    Engine {
        command: String,
        problem: String,
        /// The offending line (clipped), if a line was the problem.
        line: Option<String>,
        /// Exit status, if it had exited.
        status: Option<String>,
        /// The tail of its stderr.
        stderr: String,
    },
    /// A file of the engine's view was refused by the offload store (e.g. a path with `..`).
    #[error("external engine `{command}`: a file of its view of {call} was refused")]
    File {
        command: String,
        /// `call N (message i)`.
        call: String,
        #[source]
        source: super::store::StoreError,
    },
}

/// How errors name a call: `call N (message i)`, N counted from 1 as the replay output does.
fn call_label(ordinal: usize, index: usize) -> String {
    format!("call {ordinal} (message {index})")
}

/// How long the end of a replay waits for a line the engine may still write after its last
/// view (a second view written late), before `end` is sent: once per replay, on the thread
/// that ran it (50 ms cost a 2,000-unit sweep on 8 threads 12 s). A line later than this is
/// found when the pooled process is taken again, or, by its `seq`, when the next replay reads an
/// answer (a warning, the process replaced).
const LATE_LINE_WAIT: Duration = Duration::from_millis(10);

/// Say (once a run) that `command` wrote lines after the end of an earlier replay, `first` the
/// first of them: its process is replaced.
fn warn_late_lines(command: &str, count: usize, first: &str) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        crate::output::errln!(
            "warning: external engine `{command}` wrote {count} line(s) after the end of an \
             earlier replay (one `view` answers each `call`), later than ctxbench waits for one; \
             its process was replaced. First: {}",
            clip(first)
        );
    }
}

/// The `type` and `seq` of an engine line, as far as it has them (for lines that are not
/// answers of the current call).
fn kind_and_seq(line: &str) -> (Option<String>, Option<u64>) {
    let v: Option<serde_json::Value> = serde_json::from_str(line.trim()).ok();
    let kind = v
        .as_ref()
        .and_then(|v| v.get("type")?.as_str().map(str::to_string));
    let seq = v.as_ref().and_then(|v| v.get("seq")?.as_u64());
    (kind, seq)
}

/// Which part of a `view` or `summarize` line that does not read is wrong: the first message or
/// event that does not read, named by its place (`events[0]` (`evicted`): missing field
/// `tool`), since serde's error alone names no place and the line shown is clipped.
fn locate_error(line: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    if let Some(messages) = v.get("messages").and_then(serde_json::Value::as_array) {
        for (k, m) in messages.iter().enumerate() {
            if let Err(e) = Message::deserialize(m) {
                return Some(format!("`messages[{k}]`: {e}"));
            }
        }
    }
    if let Some(events) = v.get("events").and_then(serde_json::Value::as_array) {
        for (k, ev) in events.iter().enumerate() {
            if let Err(e) = WireEvent::deserialize(ev) {
                let kind = ev
                    .get("detail")
                    .and_then(|d| d.get("type"))
                    .and_then(serde_json::Value::as_str)
                    .map(|t| format!(" (`{t}`)"))
                    .unwrap_or_default();
                return Some(format!(
                    "`events[{k}]`{kind}: {e} (each kind's facts: docs/engines.md)"
                ));
            }
        }
    }
    None
}

/// Idle engine processes by command (one per worker that used it).
static POOL: LazyLock<Mutex<HashMap<String, Vec<Process>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn take_process(spec: &ExternalSpec) -> Result<Process, ExternalError> {
    let idle = POOL
        .lock()
        .ok()
        .and_then(|mut p| p.get_mut(&spec.key()).and_then(Vec::pop));
    match idle {
        Some(p) => Ok(p),
        None => Process::spawn(&spec.command, &spec.env),
    }
}

/// Stop every external engine: idle ones in the pool and those a replay still waits on (whose
/// replay then fails at once). Called when a run ends or is interrupted.
pub fn shutdown() {
    let idle: Vec<Process> = match POOL.lock() {
        Ok(mut pool) => pool.drain().flat_map(|(_, v)| v).collect(),
        Err(_) => Vec::new(),
    };
    drop(idle);
    process::kill_all();
}

fn give_back(spec_key: String, p: Process) {
    if let Ok(mut pool) = POOL.lock() {
        pool.entry(spec_key).or_default().push(p);
    }
}

/// What `begin` tells the engine besides the spec's own `config`.
pub struct BeginInfo {
    pub trace_id: String,
    pub window: u64,
    pub input_budget: u64,
    pub counter: String,
    pub overhead_tokens: u64,
    pub system_prompt: Option<String>,
    pub tools: Vec<serde_json::Value>,
    pub model: Option<String>,
}

/// The external engine of one replay, as the replay's only layer.
pub struct ExternalLayer {
    process: Option<Process>,
    key: String,
    timeout: Duration,
    /// Head of the previous call's view and its generation (cached-prefix identity).
    prev_head: Vec<Arc<Message>>,
    generation: u64,
    /// Text of the last summary produced through `summarize` (marks summary messages).
    last_summary: Option<String>,
    /// The trace index of each call of this replay, in order (call N is `call_indexes[N-1]`).
    call_indexes: Vec<usize>,
    /// The `seq` of this replay's first call (0: none yet): call N has `first_seq + N - 1`.
    first_seq: u64,
    /// Set when the process wrote a line of an earlier replay: it is not given back.
    retire: bool,
    /// Whether the process served a replay before this one (else a `seq` before this replay's
    /// first names no call ever sent to it).
    earlier_replays: bool,
}

/// Longest offending line shown in an error.
const SHOWN_LINE: usize = 300;

fn clip(line: &str) -> String {
    let line = line.trim_end();
    match line.char_indices().nth(SHOWN_LINE) {
        Some((b, _)) => format!("{}… ({} bytes)", &line[..b], line.len()),
        None => line.to_string(),
    }
}

impl ExternalLayer {
    /// Take (or start) a process for `spec` and send `begin`. A pooled process that died
    /// since its last replay is replaced by a fresh one.
    pub fn begin(spec: &ExternalSpec, info: BeginInfo) -> Result<Self, ExternalError> {
        let refused = |(key, problem): (&str, String)| ExternalError::Engine {
            command: spec.command.join(" "),
            problem: format!("`{key}`: {problem}"),
            line: None,
            status: None,
            stderr: String::new(),
        };
        spec.check().map_err(refused)?;
        let timeout = spec
            .timeout()
            .map_err(|p| refused(("external.timeout_secs", p)))?;
        let begin = ToEngine::Begin {
            protocol: PROTOCOL_VERSION,
            trace_id: info.trace_id,
            window: info.window,
            input_budget: info.input_budget,
            counter: info.counter,
            overhead_tokens: info.overhead_tokens,
            system_prompt: info.system_prompt,
            tools: info.tools,
            model: info.model,
            config: spec.config.clone().unwrap_or(serde_json::json!({})),
        };
        let line = serde_json::to_string(&begin).expect("protocol lines serialize");
        let mut p = take_process(spec)?;
        // A pooled process with lines nobody asked for (written after its last replay's
        // end): start a fresh one. (One that comes later is recognised by its `seq` and
        // skipped, [`ExternalLayer::exchange`].)
        let late = p.unread(Duration::ZERO);
        if !late.is_empty() {
            // Past the end's wait: the earlier replay took no view from these lines, but it is
            // over, so say it (once a run) rather than let it pass unseen.
            warn_late_lines(&spec.command.join(" "), late.len(), &late[0]);
            p.broken = true;
            p = Process::spawn(&spec.command, &spec.env)?;
        }
        // Written before going on, so a pooled process that died since is replaced here.
        if p.send(&line, timeout, "`begin`")
            .and_then(|()| p.flush(timeout))
            .is_err()
        {
            p = Process::spawn(&spec.command, &spec.env)?;
            p.send(&line, timeout, "`begin`")?;
            p.flush(timeout)?;
        }
        let earlier_replays = p.replays > 0;
        p.replays += 1;
        Ok(ExternalLayer {
            process: Some(p),
            key: spec.key(),
            timeout,
            prev_head: Vec::new(),
            generation: 0,
            last_summary: None,
            call_indexes: Vec::new(),
            first_seq: 0,
            retire: false,
            earlier_replays,
        })
    }

    /// `call N (message i)` of the call whose `seq` is `seq`, if it is one of this replay's.
    fn call_of(&self, seq: u64) -> Option<String> {
        let n = usize::try_from(seq.checked_sub(self.first_seq)?).ok()?;
        let index = self.call_indexes.get(n)?;
        (self.first_seq > 0).then(|| call_label(n + 1, *index))
    }

    /// The problem with a line whose `seq` (`got`) is before this replay's first call, unless
    /// it can be a late line of an earlier replay of the process: when the process had no
    /// earlier replay, ctxbench never sent a call with that `seq`. `where_` says where it was
    /// found.
    fn unsent_seq(&self, got: u64, kind: &str, where_: &str) -> Option<String> {
        if got >= self.first_seq || self.earlier_replays {
            return None;
        }
        Some(format!(
            "wrote a `{kind}` with `seq` {got} {where_}: ctxbench sent no such call (this process had no earlier replay, and the calls of this one have `seq` {} and up): echo the `seq` of the `call` line",
            self.first_seq
        ))
    }

    /// A line of an earlier replay (its `seq` is before this replay's first call): not an
    /// answer of this replay. Said once a run; the process is replaced after this replay.
    fn skip_earlier_replay_line(&mut self, line: &str) {
        warn_late_lines(&self.proc().shown.clone(), 1, line);
        self.retire = true;
    }

    /// At the end of the replay: fail when the engine wrote lines after its view of the last
    /// call (one `view` answers each `call`), waiting up to `wait` for one. Each line is blamed
    /// on the call its `seq` names (else the last call); a line of an earlier replay is skipped.
    fn check_unread(&mut self, wait: Duration, found: &str) -> Result<(), ExternalError> {
        if self.call_indexes.is_empty() {
            return Ok(());
        }
        for line in self.proc().unread(wait) {
            let (kind, seq) = kind_and_seq(&line);
            if let Some(problem) = seq.and_then(|s| {
                self.unsent_seq(
                    s,
                    kind.as_deref().unwrap_or("line"),
                    &format!("found {found}"),
                )
            }) {
                return Err(self.proc().fail(problem, Some(clip(&line))));
            }
            if seq.is_some_and(|s| s < self.first_seq) {
                self.skip_earlier_replay_line(&line);
                continue;
            }
            let call = seq.and_then(|s| self.call_of(s)).unwrap_or_else(|| {
                call_label(
                    self.call_indexes.len(),
                    self.call_indexes.last().copied().unwrap_or_default(),
                )
            });
            let what = kind.map_or("a line".to_string(), |k| format!("a `{k}`"));
            let problem = format!(
                "answered {call} with more than one line ({what} after its view, found {found}): one `view` answers each `call`"
            );
            return Err(self.proc().fail(problem, Some(clip(&line))));
        }
        Ok(())
    }

    /// The replay ended: check that the engine wrote nothing more, send `end` and give the
    /// process back to the pool.
    fn finish(&mut self) -> Result<(), ExternalError> {
        if self.process.as_ref().is_none_or(|p| p.broken) {
            return Ok(());
        }
        self.check_unread(LATE_LINE_WAIT, "at the end of the replay")?;
        let Some(mut p) = self.process.take() else {
            return Ok(());
        };
        if self.retire {
            // It wrote lines after an earlier replay's end: not reused (dropping kills it).
            return Ok(());
        }
        let line = serde_json::to_string(&ToEngine::End).expect("protocol lines serialize");
        if p.send(&line, self.timeout, "`end`")
            .and_then(|()| p.flush(self.timeout))
            .is_ok()
        {
            give_back(std::mem::take(&mut self.key), p);
        }
        Ok(())
    }

    fn proc(&mut self) -> &mut Process {
        self.process
            .as_mut()
            .expect("the process lives as long as the layer")
    }

    /// Write a line (`what` names it in errors), waiting at most the exchange timeout.
    fn send(&mut self, line: &str, what: &str) -> Result<(), ExternalError> {
        let timeout = self.timeout;
        self.proc().send(line, timeout, what)
    }

    /// Read lines until the `view` of the call whose `seq` is `seq`, answering `summarize`
    /// requests on the way. Every line names the call it answers by its `seq`: a line of an
    /// earlier call of this replay is an extra line of that call (an error naming it, whenever
    /// it arrives), one of an earlier replay is skipped; no line is taken for another call's.
    fn exchange(&mut self, ctx: &mut CallCtx<'_>, seq: u64) -> Result<Answer, ExternalError> {
        let mut summaries = Vec::new();
        let call = ctx.call_index;
        let label = call_label(self.call_indexes.len(), call);
        loop {
            let timeout = self.timeout;
            let line = self.proc().recv(timeout, &format!("the view of {label}"))?;
            let parsed: FromEngine = match serde_json::from_str(line.trim()) {
                Ok(p) => p,
                Err(e) => {
                    let problem = match kind_and_seq(&line) {
                        (Some(kind), None) if kind == "view" || kind == "summarize" => format!(
                            "wrote a `{kind}` without `seq` while ctxbench waited for the view of {label}: protocol {PROTOCOL_VERSION} requires every `view` and `summarize` to carry the `seq` of the `call` it answers (an engine written for protocol 1 must echo it; see docs/engines.md)"
                        ),
                        (Some(kind), Some(_)) if kind == "view" || kind == "summarize" => {
                            match locate_error(&line) {
                                Some(part) => format!(
                                    "wrote a `{kind}` that does not read while ctxbench waited for the view of {label}: {part}"
                                ),
                                None => format!(
                                    "wrote a `{kind}` that does not read while ctxbench waited for the view of {label}: {e}"
                                ),
                            }
                        }
                        (None, _) if serde_json::from_str::<serde_json::Value>(line.trim()).is_err() => format!(
                            "wrote a line that is not a `view` or `summarize` object ({e}) while ctxbench waited for the view of {label}: its stdout carries protocol lines only, one JSON object per line (write logs to stderr)"
                        ),
                        _ => format!(
                            "wrote a line that is not a `view` or `summarize` object ({e}) while ctxbench waited for the view of {label}"
                        ),
                    };
                    return Err(self.proc().fail(problem, Some(clip(&line))));
                }
            };
            if parsed.seq() != seq {
                let got = parsed.seq();
                let kind = parsed.kind();
                let ordinal = self.call_indexes.len() as u64;
                if got < self.first_seq && (got == ordinal || got + 1 == ordinal) {
                    // Not a line of an earlier replay: this call's number within the replay
                    // (from 1, or from 0 as Python's `enumerate` counts), as an engine that
                    // counts calls itself (reset by `begin`) writes it. Counted from 1, its
                    // first replay passes (the counts agree); a pooled process's next one
                    // skipped the answer as stale and timed out.
                    let from = if got == ordinal {
                        ""
                    } else {
                        " counted from 0"
                    };
                    let problem = format!(
                        "wrote a `{kind}` with `seq` {got} while ctxbench waited for the view of {label} (`seq` {seq}): {got} is this call's number within the replay{from}, but `seq` numbers the calls sent to the process over its life (`begin` does not reset it): echo the `seq` of the `call` line"
                    );
                    return Err(self.proc().fail(problem, Some(clip(&line))));
                }
                if let Some(problem) = self.unsent_seq(
                    got,
                    kind,
                    &format!("while ctxbench waited for the view of {label} (`seq` {seq})"),
                ) {
                    return Err(self.proc().fail(problem, Some(clip(&line))));
                }
                if got < self.first_seq {
                    self.skip_earlier_replay_line(&line);
                    continue;
                }
                let problem = match self.call_of(got).filter(|_| got < seq) {
                    Some(earlier) => format!(
                        "answered {earlier} with more than one line (a `{kind}` after its view, found while ctxbench waited for the view of {label}): one `view` answers each `call`"
                    ),
                    None => format!(
                        "wrote a `{kind}` with `seq` {got} while ctxbench waited for the view of {label} (`seq` {seq}): ctxbench sent no such call"
                    ),
                };
                return Err(self.proc().fail(problem, Some(clip(&line))));
            }
            match parsed {
                FromEngine::View {
                    seq: _,
                    messages,
                    events,
                    files,
                    indexes,
                    effective_tokens,
                } => {
                    if let Some(ix) = &indexes {
                        if let Some(problem) = check_indexes(ix, messages.len(), call, &label) {
                            return Err(self.proc().fail(problem, Some(clip(&line))));
                        }
                    }
                    if let Some(w) = events
                        .iter()
                        .find(|w| w.trace_index.is_some_and(|i| i > call))
                    {
                        let problem = format!(
                            "an event of its view of {label} has `trace_index` {}, after the call: events concern messages up to the call's index ({call})",
                            w.trace_index.unwrap_or_default()
                        );
                        return Err(self.proc().fail(problem, Some(clip(&line))));
                    }
                    return Ok(Answer {
                        messages,
                        events,
                        files,
                        indexes,
                        effective_tokens,
                        summaries,
                    });
                }
                FromEngine::Summarize {
                    seq: _,
                    id,
                    messages,
                    prompt,
                    previous_summary,
                    max_tokens,
                } => {
                    let msgs: Vec<Arc<Message>> = messages.into_iter().map(Arc::new).collect();
                    let req = SummaryRequest {
                        messages: &msgs,
                        previous_summary: previous_summary.as_deref(),
                        prompt: &prompt,
                        max_tokens: max_tokens.unwrap_or(2048),
                    };
                    let answer = match ctx.env.summarizer.summarize(&req) {
                        Ok(out) => {
                            summaries.push(Summarized {
                                text: out.text.clone(),
                                usage: out.usage,
                                model: out.model.clone(),
                                error: None,
                            });
                            self.last_summary = Some(out.text.clone());
                            ToEngine::Summary {
                                id,
                                text: out.text,
                                usage: out.usage,
                                model: out.model,
                                error: None,
                            }
                        }
                        Err(e) => {
                            summaries.push(Summarized {
                                text: String::new(),
                                usage: Usage::default(),
                                model: String::new(),
                                error: Some(e.to_string()),
                            });
                            ToEngine::Summary {
                                id,
                                text: String::new(),
                                usage: Usage::default(),
                                model: String::new(),
                                error: Some(e.to_string()),
                            }
                        }
                    };
                    let line = serde_json::to_string(&answer).expect("protocol lines serialize");
                    self.send(&line, &format!("the `summary` asked during {label}"))?;
                }
            }
        }
    }
}

/// The engine's answer to one `call`: its view and the summaries it asked for on the way.
struct Answer {
    messages: Vec<Message>,
    events: Vec<WireEvent>,
    files: BTreeMap<String, String>,
    indexes: Option<Vec<Option<usize>>>,
    effective_tokens: Option<u64>,
    summaries: Vec<Summarized>,
}

/// A view's `indexes` must give one entry per message, increasing trace indexes below the call,
/// and the engine's own messages (`null`) only in the head: one run of them, after the trace
/// messages pinned first (if any) and, when there are such pins, before the trace messages the
/// view goes on with. A `null` after that ([`head_len`]) would put every trace message before
/// it into the head (a reminder appended after the conversation): the head would change at
/// every call, so nothing would count as cached and every trace message would be synthetic.
/// `label` names the call in the problem (`call N (message i)`).
fn check_indexes(
    ix: &[Option<usize>],
    messages: usize,
    call: usize,
    label: &str,
) -> Option<String> {
    if ix.len() != messages {
        return Some(format!(
            "the view of {label} has {messages} messages but {} `indexes`",
            ix.len()
        ));
    }
    let mut last: Option<usize> = None;
    for (k, i) in ix.iter().enumerate() {
        match (i, last) {
            (Some(i), _) if *i >= call => {
                return Some(format!(
                    "`indexes[{k}]` = {i} of the view of {label} is not a message before the call (trace index {call})"
                ))
            }
            (Some(i), Some(l)) if *i <= l => {
                return Some(format!(
                    "`indexes[{k}]` = {i} of the view of {label} does not follow {l}: indexes must increase"
                ))
            }
            _ => {}
        }
        last = i.or(last);
    }
    let head = head_len(ix);
    if let Some(k) = (head..ix.len()).find(|&k| ix[k].is_none()) {
        return Some(format!(
            "`indexes[{k}]` of the view of {label} is null after a trace message that follows the engine's own messages: a view is the trace messages it pins, then its own messages (one run of `null`s), then trace messages; a message of its own after those (a reminder at the end) is not supported (see docs/engines.md)"
        ));
    }
    let pins = ix.iter().take_while(|i| i.is_some()).count();
    if pins > 0 && head == ix.len() && pins < ix.len() {
        return Some(format!(
            "`indexes[{pins}]` of the view of {label} is null after a trace message and no trace message follows: the view ends with the engine's own messages after trace messages (a reminder at the end), which is not supported; trace messages pinned before the engine's own messages must be followed by the trace messages the view goes on with (see docs/engines.md)"
        ));
    }
    None
}

/// How many leading messages of a view with `indexes` are its head: the trace messages pinned
/// first and then the engine's own messages, up to the end of the first run of `null`s (0 when
/// there is none).
fn head_len(ix: &[Option<usize>]) -> usize {
    match ix.iter().position(Option::is_none) {
        Some(first) => ix[first..]
            .iter()
            .position(Option::is_some)
            .map_or(ix.len(), |n| first + n),
        None => 0,
    }
}

/// One summary produced through `summarize` during a call.
struct Summarized {
    text: String,
    usage: Usage,
    model: String,
    error: Option<String>,
}

impl Drop for ExternalLayer {
    fn drop(&mut self) {
        let Some(mut p) = self.process.take() else {
            return;
        };
        if p.broken {
            return;
        }
        let line = serde_json::to_string(&ToEngine::End).expect("protocol lines serialize");
        if p.send(&line, self.timeout, "`end`")
            .and_then(|()| p.flush(self.timeout))
            .is_ok()
        {
            give_back(std::mem::take(&mut self.key), p);
        }
    }
}

/// Same message, or the same tool result with another content (a replacement).
enum Match {
    Same,
    Replaced,
}

fn matches(sent: &Message, orig: &Message) -> Option<Match> {
    if sent == orig {
        return Some(Match::Same);
    }
    if sent.role == Role::Tool
        && orig.role == Role::Tool
        && sent.tool_call_id.is_some()
        && sent.tool_call_id == orig.tool_call_id
    {
        return Some(Match::Replaced);
    }
    None
}

/// The engine's view as ctxbench's view: leading messages not found in the state become the
/// head; the rest must be state messages in order (kept as they are, tool results replaced,
/// gaps dropped). A view that cannot be mapped (e.g. messages reordered or edited otherwise) is
/// sent as a head of synthetic messages: exactly the same messages, only without spans.
fn map_view(
    sent: Vec<Message>,
    state: &State,
    end: usize,
    counter: &dyn crate::tokens::TokenCounter,
) -> (Vec<Message>, usize, BTreeMap<usize, (Override, bool)>) {
    let mut head = Vec::new();
    let mut start = None;
    let mut cursor = 0;
    let mut overrides = BTreeMap::new();
    let mut rest = sent.into_iter();
    let mut unmapped: Option<Vec<Message>> = None;
    for m in rest.by_ref() {
        let found = (cursor..end).find_map(|i| matches(&m, &state.get(i).msg).map(|k| (i, k)));
        match found {
            Some((i, kind)) => {
                if start.is_none() {
                    start = Some(i);
                } else {
                    for j in cursor..i {
                        overrides.insert(j, (Override::Drop, false));
                    }
                }
                if let Match::Replaced = kind {
                    overrides.insert(i, (Override::Replace(Item::new(m, counter)), true));
                }
                cursor = i + 1;
            }
            None if start.is_none() => head.push(m),
            None => {
                unmapped = Some(vec![m]);
                break;
            }
        }
    }
    if let Some(mut tail) = unmapped {
        // Rebuild the whole view as synthetic messages, in order.
        let mut all = head;
        if let Some(s) = start {
            for i in s..cursor {
                match overrides.remove(&i) {
                    Some((Override::Drop, _)) => {}
                    Some((Override::Replace(item), _)) => all.push((*item.msg).clone()),
                    None => all.push((*state.get(i).msg).clone()),
                }
            }
        }
        all.append(&mut tail);
        all.extend(rest);
        return (all, end, BTreeMap::new());
    }
    match start {
        Some(_) => {
            for j in cursor..end {
                overrides.insert(j, (Override::Drop, false));
            }
        }
        None => return (head, end, BTreeMap::new()),
    }
    (head, start.unwrap_or(end), overrides)
}

/// The engine's view as ctxbench's view when the engine said which trace message each message
/// stands for (`indexes`, checked by [`check_indexes`]): the trace messages pinned first and
/// the engine's own messages after them (one run of `null`s, [`head_len`]) are the head, sent as
/// they are (as the built-in `condense` layer's first events); after it, a trace message that
/// differs from the state's is a replacement (of any role), skipped ones are dropped.
fn map_view_indexed(
    sent: Vec<Message>,
    indexes: &[Option<usize>],
    state: &State,
    end: usize,
    counter: &dyn crate::tokens::TokenCounter,
) -> (Vec<Message>, usize, BTreeMap<usize, (Override, bool)>) {
    let head_len = head_len(indexes);
    let mut head = Vec::new();
    let mut start = None;
    let mut cursor = 0;
    let mut overrides = BTreeMap::new();
    for (k, (m, ix)) in sent.into_iter().zip(indexes).enumerate() {
        let i = match *ix {
            Some(i) if k >= head_len => i,
            _ => {
                head.push(m);
                continue;
            }
        };
        if start.is_none() {
            start = Some(i);
        } else {
            for j in cursor..i {
                overrides.insert(j, (Override::Drop, false));
            }
        }
        if m != *state.get(i).msg {
            overrides.insert(i, (Override::Replace(Item::new(m, counter)), true));
        }
        cursor = i + 1;
    }
    match start {
        Some(s) => {
            for j in cursor..end {
                overrides.insert(j, (Override::Drop, false));
            }
            (head, s, overrides)
        }
        None => (head, end, BTreeMap::new()),
    }
}

/// The store path an event's facts point at, if any.
fn event_path(d: &EventDetail) -> Option<&str> {
    match d {
        EventDetail::Evicted { path, .. } | EventDetail::UserMessageEvicted { path, .. } => {
            Some(path)
        }
        EventDetail::Summarized(s) | EventDetail::Checkpoint(s) => Some(&s.history_file),
        EventDetail::OverBudgetClipped { path, .. } => path.as_deref(),
        EventDetail::Trimmed { memory_file, .. } => memory_file.as_deref(),
        _ => None,
    }
}

fn serialize_line<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("protocol lines serialize")
}

#[derive(Serialize)]
struct MessageLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    index: usize,
    message: &'a Message,
}

impl Layer for ExternalLayer {
    fn name(&self) -> &'static str {
        "external"
    }

    fn end(&mut self) -> Result<(), EngineError> {
        Ok(self.finish()?)
    }

    fn on_message(&mut self, ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        let line = serialize_line(&MessageLine {
            kind: "message",
            index: ctx.index,
            message: &ctx.state.get(ctx.index).msg,
        });
        Ok(self.send(&line, &format!("message {}", ctx.index))?)
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let call = ctx.call_index;
        self.call_indexes.push(call);
        let label = call_label(self.call_indexes.len(), call);
        let seq = {
            let p = self.proc();
            p.seq += 1;
            p.seq
        };
        if self.first_seq == 0 {
            self.first_seq = seq;
        }
        self.send(
            &serialize_line(&ToEngine::Call { index: call, seq }),
            &format!("the `call` line of {label}"),
        )?;
        let Answer {
            messages,
            events: wire_events,
            files,
            indexes,
            effective_tokens,
            summaries,
        } = self.exchange(ctx, seq)?;
        let counter = ctx.env.counter;
        let end = ctx.view.end;
        let (head, start, overrides) = match &indexes {
            Some(ix) => map_view_indexed(messages, ix, ctx.state, end, counter),
            None => map_view(messages, ctx.state, end, counter),
        };
        if effective_tokens.is_some() {
            ctx.notes.effective_tokens = effective_tokens;
        }

        // Pointers: a replaced tool result that an `evicted` event points at must be
        // backed by its file (checked by the invariants).
        let mut evicted_paths: HashMap<usize, String> = HashMap::new();
        for w in &wire_events {
            if let EventDetail::Evicted { path, .. } = &w.detail {
                evicted_paths.insert(w.trace_index.unwrap_or(call), path.clone());
            }
        }
        let head_arcs: Vec<Arc<Message>> = head.into_iter().map(Arc::new).collect();
        if head_arcs.len() != self.prev_head.len()
            || head_arcs
                .iter()
                .zip(&self.prev_head)
                .any(|(a, b)| **a != **b)
        {
            self.generation += 1;
        }
        let summary_text = self.last_summary.as_deref();
        ctx.view.head = head_arcs
            .iter()
            .map(|m| {
                let mut item = Item::counted(m.clone(), counter.count_message(m));
                item.is_summary =
                    summary_text.is_some_and(|t| !t.is_empty() && m.content.contains(t));
                item
            })
            .collect();
        self.prev_head = head_arcs;
        ctx.view.head_generation = self.generation;
        ctx.view.start = start;
        ctx.view.overrides = overrides
            .into_iter()
            .map(|(i, (o, _))| match o {
                Override::Replace(item) => match evicted_paths.get(&i) {
                    Some(p) => (i, Override::Replace(item.with_pointer(p.clone(), Some(i)))),
                    None => (i, Override::Replace(item)),
                },
                drop => (i, drop),
            })
            .collect();

        // Files land in the unit's offload store before the events that point at them.
        let mut writes: Vec<(String, crate::engine::StoreWrite)> = Vec::new();
        for (path, content) in &files {
            let w = match ctx.env.store.write(path, content.as_bytes()) {
                Ok(w) => w,
                Err(source) => {
                    let p = self.proc();
                    p.broken = true;
                    return Err(ExternalError::File {
                        command: p.shown.clone(),
                        call: label,
                        source,
                    }
                    .into());
                }
            };
            writes.push((path.clone(), w));
        }

        let sent = ctx.request_tokens();
        let first = ctx.env.events.len();
        let mut summaries = summaries.into_iter();
        for w in wire_events {
            let at = w.trace_index.unwrap_or(call);
            let mut detail = w.detail;
            let layer = w.layer.unwrap_or_else(|| "external".to_string());
            // A summary the engine asked for carries its usage (cost accounting).
            if let EventDetail::Summarized(s) = &mut detail {
                if let Some(got) = summaries.next() {
                    fill_summary(s, &got, call);
                }
            }
            let mut ev = if at >= call {
                Event::at_call(call, &layer, detail)
            } else {
                Event::new(at, &layer, detail)
            };
            ev.tokens_before = w.tokens_before;
            ev.tokens_after = w.tokens_after;
            if at >= call {
                // What ctxbench sent, unless the engine reports the state after a step that a
                // later compaction of the same call changed again (ctxbench never sees it).
                if ev.detail.is_compaction() || ev.tokens_after.is_none() {
                    ev.tokens_after = Some(sent);
                }
            } else if let Some(Override::Replace(item)) = ctx.view.overrides.get(&at) {
                if at < ctx.state.len() {
                    ev.tokens_before = Some(ctx.state.get(at).tokens);
                    ev.tokens_after = Some(item.tokens);
                }
            }
            // An engine that reports an overflow ends the replay after this call, as a
            // built-in layer's overflow does (the agent would have stopped there).
            if let EventDetail::Overflow { message, .. } = &ev.detail {
                if at >= call && ctx.notes.stop.is_none() {
                    ctx.notes.stop = Some(message.clone());
                }
            }
            ctx.env.emit(ev);
        }
        // Summaries no event reported: recorded anyway, so their cost is counted.
        for got in summaries {
            let detail = match &got.error {
                Some(message) => EventDetail::Error {
                    message: message.clone(),
                },
                None => {
                    let mut s = Summary::default();
                    fill_summary(&mut s, &got, call);
                    EventDetail::Summarized(s)
                }
            };
            let mut ev = Event::at_call(call, "external", detail);
            ev.tokens_after = Some(sent);
            ctx.env.emit(ev);
        }
        // Attach each write to the event pointing at its file, else to the call's first event.
        for (path, w) in writes {
            let events = &mut ctx.env.events[first..];
            let target = events
                .iter()
                .position(|e| event_path(&e.detail) == Some(path.as_str()))
                .or(if events.is_empty() { None } else { Some(0) });
            if let Some(k) = target {
                events[k].writes.push(w);
            }
        }
        Ok(())
    }
}

fn fill_summary(s: &mut Summary, got: &Summarized, call: usize) {
    s.summarizer_usage = got.usage;
    if s.summarizer_model.is_empty() {
        s.summarizer_model = got.model.clone();
    }
    if s.summary_chars == 0 {
        s.summary_chars = got.text.chars().count() as u64;
    }
    if s.state_len == 0 {
        s.state_len = call;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::approx::ApproxCounter;

    fn state(msgs: &[Message]) -> State {
        let c = ApproxCounter::langchain();
        let mut s = State::new();
        for m in msgs {
            s.push(Item::new(m.clone(), &c));
        }
        s
    }

    fn tool(id: &str, text: &str) -> Message {
        let mut m = Message::new(Role::Tool, text);
        m.tool_call_id = Some(id.into());
        m
    }

    #[test]
    fn views_map_onto_the_state_or_fall_back_to_synthetic_messages() {
        let c = ApproxCounter::langchain();
        let msgs = vec![
            Message::user("a"),
            Message::new(Role::Assistant, "b"),
            tool("t1", "long result"),
            Message::user("d"),
            Message::user("e"),
        ];
        let s = state(&msgs);
        // summary + keep 2..5 with the tool result replaced and #3 dropped
        let sent = vec![
            Message::user("summary"),
            tool("t1", "stub"),
            Message::user("e"),
        ];
        let (head, start, ov) = map_view(sent, &s, 5, &c);
        assert_eq!(head, vec![Message::user("summary")]);
        assert_eq!(start, 2);
        assert!(matches!(ov.get(&2), Some((Override::Replace(_), true))));
        assert!(matches!(ov.get(&3), Some((Override::Drop, false))));
        assert_eq!(ov.len(), 2);
        // reordered: everything synthetic, in the order sent
        let sent = vec![Message::user("d"), Message::user("a")];
        let (head, start, ov) = map_view(sent.clone(), &s, 5, &c);
        assert_eq!((head, start, ov.len()), (sent, 5, 0));
        // the last messages dropped
        let (head, start, ov) = map_view(vec![Message::user("a")], &s, 5, &c);
        assert!(head.is_empty());
        assert_eq!(start, 0);
        assert_eq!(ov.len(), 4);
    }

    #[test]
    fn views_with_indexes_map_edited_messages_of_any_role_as_replacements() {
        let c = ApproxCounter::langchain();
        let mut call = Message::new(Role::Assistant, "b");
        call.tool_calls.push(crate::trace::ToolCall {
            id: "t1".into(),
            name: "write_file".into(),
            arguments: serde_json::json!({"content": "long text"}),
        });
        let msgs = vec![
            Message::user("a"),
            call.clone(),
            tool("t1", "ok"),
            Message::user("huge paste"),
            Message::user("e"),
        ];
        let s = state(&msgs);
        let mut truncated = call;
        truncated.tool_calls[0].arguments = serde_json::json!({"content": "long...(truncated)"});
        let sent = vec![
            Message::user("summary"),
            truncated.clone(),
            tool("t1", "ok"),
            Message::user("preview"),
        ];
        let ix = [None, Some(1), Some(2), Some(3)];
        assert_eq!(
            check_indexes(&ix, sent.len(), 5, "call 3 (message 5)"),
            None
        );
        let (head, start, ov) = map_view_indexed(sent, &ix, &s, 5, &c);
        assert_eq!(head, vec![Message::user("summary")]);
        assert_eq!(start, 1);
        assert!(matches!(ov.get(&1), Some((Override::Replace(i), true)) if *i.msg == truncated));
        assert!(
            !ov.contains_key(&2),
            "an unchanged message is kept as it is"
        );
        assert!(
            matches!(ov.get(&3), Some((Override::Replace(i), true)) if i.msg.content == "preview")
        );
        assert!(matches!(ov.get(&4), Some((Override::Drop, false))));
        // Bad indexes are named.
        let e = check_indexes(&[Some(1), Some(1)], 2, 5, "c").unwrap();
        assert!(e.contains("indexes must increase"), "{e}");
        // A trace message pinned before the engine's own (a summary): both in the head, sent
        // as they are; the messages after the last `null` map onto the trace.
        let pinned = [Some(0), None, Some(3), Some(4)];
        assert_eq!(check_indexes(&pinned, 4, 5, "c"), None);
        let sent = vec![
            Message::user("a"),
            Message::user("summary"),
            Message::user("preview"),
            Message::user("e"),
        ];
        let (head, start, ov) = map_view_indexed(sent, &pinned, &s, 5, &c);
        assert_eq!(head, vec![Message::user("a"), Message::user("summary")]);
        assert_eq!(start, 3);
        assert!(
            matches!(ov.get(&3), Some((Override::Replace(i), true)) if i.msg.content == "preview")
        );
        assert_eq!(ov.len(), 1);
        // The engine's own message after the trace messages (a reminder at the end): refused,
        // it put every trace message into the head (changing at every call: nothing cached).
        let e = check_indexes(&[Some(0), Some(1), Some(2), None], 4, 5, "c").unwrap();
        assert!(
            e.contains("`indexes[3]` of the view of c is null after a trace message and no trace message follows"),
            "{e}"
        );
        let e = check_indexes(&[Some(0), None, Some(3), None], 4, 5, "c").unwrap();
        assert!(
            e.contains("`indexes[3]` of the view of c is null after a trace message that follows the engine's own messages"),
            "{e}"
        );
        let e = check_indexes(&[None, Some(3), Some(4), None], 4, 5, "c").unwrap();
        assert!(e.contains("`indexes[3]`"), "{e}");
        assert_eq!(check_indexes(&[None, None], 2, 5, "c"), None);
        assert_eq!(check_indexes(&[Some(0), Some(3)], 2, 5, "c"), None);
        assert_eq!(head_len(&[Some(0), Some(1), None, None, Some(3)]), 4);
        assert_eq!(head_len(&[Some(0), Some(3)]), 0);
        let e = check_indexes(&[Some(3), None, Some(1)], 3, 5, "c").unwrap();
        assert!(e.contains("indexes must increase"), "{e}");
        let e = check_indexes(&[Some(5)], 1, 5, "call 3 (message 5)").unwrap();
        assert!(
            e.contains("view of call 3 (message 5) is not a message before the call"),
            "{e}"
        );
        let e = check_indexes(&[None], 2, 5, "call 3 (message 5)").unwrap();
        assert!(
            e.contains("view of call 3 (message 5) has 2 messages but 1 `indexes`"),
            "{e}"
        );
    }

    #[test]
    fn relative_paths_resolve_against_the_config_folder_but_not_path_programs() {
        let dir = std::env::temp_dir().join(format!("ctxbench-ext-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("e")).unwrap();
        std::fs::write(dir.join("e/x.py"), "").unwrap();
        let mut s = ExternalSpec {
            command: vec!["python3".into(), "e/x.py".into(), "--keep".into()],
            timeout_secs: None,
            env: BTreeMap::new(),
            config: None,
        };
        s.absolutize(&dir);
        assert_eq!(s.command[0], "python3");
        assert_eq!(s.command[1], dir.join("e/x.py").display().to_string());
        assert_eq!(s.command[2], "--keep");
        std::fs::remove_dir_all(&dir).ok();
        s.timeout_secs = Some(0.0);
        assert!(s.check().is_err());
    }

    /// A timeout is seconds > 0 and at most a day: `1e30` panicked where it became a
    /// `Duration`, and `inf`/`nan` passed as "positive finite".
    #[test]
    fn timeouts_past_a_day_inf_and_nan_are_refused() {
        let mut s = ExternalSpec {
            command: vec!["python3".into()],
            timeout_secs: None,
            env: BTreeMap::new(),
            config: None,
        };
        assert_eq!(s.timeout(), Ok(Duration::from_secs(60)));
        for ok in [0.001, 30.0, MAX_TIMEOUT_SECS] {
            s.timeout_secs = Some(ok);
            assert!(s.check().is_ok(), "{ok}");
            assert_eq!(s.timeout(), Ok(Duration::from_secs_f64(ok)));
        }
        for (bad, shown) in [
            (1e30, "got 1e30"),
            (86_400.5, "got 86400.5"),
            (f64::INFINITY, "got inf"),
            (f64::NAN, "got NaN"),
            (0.0, "got 0"),
            (-1.0, "got -1"),
        ] {
            s.timeout_secs = Some(bad);
            let (key, problem) = s.check().unwrap_err();
            assert_eq!(key, "external.timeout_secs");
            assert_eq!(
                problem,
                format!("expected seconds > 0 and at most 86400 (one day), {shown}")
            );
            assert!(timeout_duration(bad).is_err());
        }
    }
}
