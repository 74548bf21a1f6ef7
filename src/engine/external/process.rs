//! One external engine process: spawned with piped stdin/stdout/stderr, a reader thread per
//! output stream (stdout lines into a channel, stderr into a bounded tail kept for error
//! messages), a writer thread for stdin, and line writes and reads with a timeout (a write
//! into the full pipe of an engine that stopped reading is given up, not waited on forever). Dropping a process kills it
//! (and reaps it), so a replay that fails, a unit that is cancelled or a run that ends never
//! leaves one behind; one that outlives ctxbench sees EOF on its stdin.

use super::ExternalError;
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

/// Bytes of stderr kept for error messages.
const STDERR_TAIL: usize = 2000;

/// What the stdout reader thread sends.
enum Out {
    Line(String),
    /// A line that is not UTF-8, decoded lossily (for the error, which clips it).
    NotUtf8(String),
    /// Reading stdout failed.
    Bad(String),
    Eof,
}

/// Every engine process alive, so [`kill_all`] can stop them (Ctrl-C, end of a run).
static LIVE: LazyLock<Mutex<Vec<Weak<Mutex<Child>>>>> = LazyLock::new(|| Mutex::new(Vec::new()));

/// Kill every engine process still running; a replay waiting on one fails at once (its
/// stdout closes). Processes of this ctxbench only, by their handles.
pub fn kill_all() {
    let live = match LIVE.lock() {
        Ok(mut l) => std::mem::take(&mut *l),
        Err(_) => return,
    };
    for c in live.iter().filter_map(Weak::upgrade) {
        if let Ok(mut c) = c.lock() {
            let _ = c.kill();
        }
    }
}

/// Why `program` could not be started, when the error says enough to tell: a name without `/`
/// is looked up on `PATH` only (a file beside the suite is not found that way), a relative
/// path that was not found beside the suite or config file is taken from the current
/// directory, and a file without execute permission needs its interpreter named.
fn spawn_hint(program: &str, e: &std::io::Error) -> String {
    let path = std::path::Path::new(program);
    if e.kind() == std::io::ErrorKind::NotFound {
        if let Some(found) = existing_program(program) {
            // The program is there: what was not found is the interpreter it names.
            let at = if program.contains('/') {
                String::new()
            } else {
                format!(" on PATH ({})", found.display())
            };
            return match shebang(&found) {
                Some(interpreter) => format!(
                    " (`{program}` exists{at} but its interpreter `{interpreter}`, named by its `#!` line, was not found: install it or fix the `#!` line, or name an interpreter first, e.g. [\"python3\", \"{program}\"])"
                ),
                None => format!(
                    " (`{program}` exists{at} but a program it needs to run was not found: its interpreter or loader)"
                ),
            };
        }
    }
    match e.kind() {
        std::io::ErrorKind::NotFound if !program.contains('/') => format!(
            " (`{program}` is not on PATH: a program named without a `/` is looked up there only; name a file beside the suite or config file `./{program}`)"
        ),
        std::io::ErrorKind::NotFound if path.is_relative() => {
            let cwd = std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|_| "?".into());
            format!(
                " (`{program}` is neither beside the suite or config file nor under the current directory, {cwd})"
            )
        }
        std::io::ErrorKind::PermissionDenied if path.is_file() => format!(
            " (`{program}` is not executable: `chmod +x` it, or name its interpreter first, e.g. [\"python3\", \"{program}\"])"
        ),
        _ => String::new(),
    }
}

/// The file `program` names, if it exists: a path as it is, a name without `/` looked up on
/// `PATH` as the system does.
fn existing_program(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        let p = std::path::Path::new(program);
        return p.is_file().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The interpreter a script's `#!` line names (its first word), if it has one.
fn shebang(file: &std::path::Path) -> Option<String> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let text = String::from_utf8_lossy(line);
    text.split_whitespace().next().map(str::to_string)
}

/// A running engine.
pub struct Process {
    /// The command as the user wrote it (argv joined), for error messages.
    pub shown: String,
    child: Arc<Mutex<Child>>,
    /// Lines for the stdin writer thread (dropped: the engine sees EOF), and its answer per
    /// line: written, or the write failed. Lines are queued without waiting for it;
    /// [`Process::flush`] waits until every queued line is written.
    stdin: Option<Sender<Vec<u8>>>,
    written: Receiver<std::io::Result<()>>,
    /// What each line queued and not yet reported written is ("message 12", …), oldest first.
    pending: VecDeque<String>,
    lines: Receiver<Out>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// Set by the stderr reader at EOF (everything the engine wrote is in `stderr`).
    stderr_done: Arc<std::sync::atomic::AtomicBool>,
    /// Set once the process misbehaved: it is not reused.
    pub broken: bool,
    /// The `seq` of the last `call` sent to it (0: none yet); counted over its life, across
    /// replays, so a line names one call of one replay.
    pub seq: u64,
    /// Replays begun on it (`begin` sent): a line with a `seq` before the current replay's
    /// first can only be a late line of an earlier replay when there was one.
    pub replays: u64,
}

impl Process {
    /// Spawn `argv` with `env` added to ctxbench's environment.
    pub fn spawn(argv: &[String], env: &BTreeMap<String, String>) -> Result<Self, ExternalError> {
        let shown = argv.join(" ");
        let (program, args) = argv.split_first().ok_or_else(|| ExternalError::Spawn {
            command: shown.clone(),
            hint: String::new(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"),
        })?;
        let mut child = Command::new(program)
            .args(args)
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| ExternalError::Spawn {
                command: shown.clone(),
                hint: spawn_hint(program, &source),
                source,
            })?;
        let mut pipe = child.stdin.take().expect("stdin is piped");
        let (stdin, to_write) = std::sync::mpsc::channel::<Vec<u8>>();
        let (wrote, written) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("ctxbench-engine-in".into())
            .spawn(move || {
                // Ends when the process is dropped (EOF for the engine) or a write fails (it
                // exited, or it was killed while ctxbench waited on a full pipe).
                while let Ok(line) = to_write.recv() {
                    let result = pipe.write_all(&line).and_then(|_| pipe.flush());
                    let failed = result.is_err();
                    if wrote.send(result).is_err() || failed {
                        break;
                    }
                }
            })
            .map_err(|source| ExternalError::Spawn {
                command: shown.clone(),
                hint: String::new(),
                source,
            })?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("ctxbench-engine-out".into())
            .spawn(move || {
                let mut r = BufReader::new(stdout);
                loop {
                    let mut buf = Vec::new();
                    let msg = match r.read_until(b'\n', &mut buf) {
                        Ok(0) => Out::Eof,
                        Ok(_) => match String::from_utf8(buf) {
                            Ok(s) => Out::Line(s),
                            Err(e) => {
                                Out::NotUtf8(String::from_utf8_lossy(e.as_bytes()).into_owned())
                            }
                        },
                        Err(e) => Out::Bad(format!("reading its stdout failed: {e}")),
                    };
                    let last = !matches!(msg, Out::Line(_));
                    if tx.send(msg).is_err() || last {
                        break;
                    }
                }
            })
            .map_err(|source| ExternalError::Spawn {
                command: shown.clone(),
                hint: String::new(),
                source,
            })?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr.clone();
        let stderr_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = stderr_done.clone();
        std::thread::Builder::new()
            .name("ctxbench-engine-err".into())
            .spawn(move || {
                let mut r = stderr_pipe;
                let mut buf = [0u8; 4096];
                while let Ok(n) = r.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let Ok(mut t) = tail.lock() else { break };
                    t.extend(&buf[..n]);
                    let over = t.len().saturating_sub(STDERR_TAIL);
                    t.drain(..over);
                }
                done.store(true, std::sync::atomic::Ordering::Release);
            })
            .map_err(|source| ExternalError::Spawn {
                command: shown.clone(),
                hint: String::new(),
                source,
            })?;
        let child = Arc::new(Mutex::new(child));
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|w| w.strong_count() > 0);
            live.push(Arc::downgrade(&child));
        }
        Ok(Process {
            shown,
            child,
            stdin: Some(stdin),
            written,
            pending: VecDeque::new(),
            lines,
            stderr,
            stderr_done,
            broken: false,
            seq: 0,
            replays: 0,
        })
    }

    /// The last bytes the engine wrote to stderr (lossy UTF-8, trimmed).
    pub fn stderr_tail(&self) -> String {
        let t = match self.stderr.lock() {
            Ok(t) => t.iter().copied().collect::<Vec<u8>>(),
            Err(_) => Vec::new(),
        };
        String::from_utf8_lossy(&t).trim().to_string()
    }

    fn with_child<T>(&self, f: impl FnOnce(&mut Child) -> T) -> Option<T> {
        self.child.lock().ok().map(|mut c| f(&mut c))
    }

    /// Give a dying process a moment to exit (for its exit status).
    fn settle(&mut self) {
        for _ in 0..20 {
            if matches!(self.with_child(Child::try_wait), Some(Ok(Some(_)))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// After the process is gone: let the stderr reader drain the pipe (bounded: a
    /// grandchild may hold it open).
    fn drain_stderr(&self) {
        for _ in 0..100 {
            if self.stderr_done.load(std::sync::atomic::Ordering::Acquire) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// An error of this process (marks it broken and kills it).
    pub fn fail(&mut self, problem: String, line: Option<String>) -> ExternalError {
        self.broken = true;
        self.settle();
        let status = match self.with_child(Child::try_wait) {
            Some(Ok(Some(s))) => Some(s.to_string()),
            _ => None,
        };
        self.with_child(|c| {
            let _ = c.kill();
            let _ = c.wait();
        });
        self.drain_stderr();
        ExternalError::Engine {
            command: self.shown.clone(),
            problem,
            line,
            status,
            stderr: self.stderr_tail(),
        }
    }

    /// Queue one JSON line for the engine's stdin (`what` names it in errors: "`begin`",
    /// "message 12", …) without waiting for it to be written: [`Process::flush`] (called
    /// before any wait for the engine's output) waits for that, bounded by a timeout. Fails at
    /// once when an earlier write already failed (the engine stopped reading or exited).
    pub fn send(&mut self, line: &str, timeout: Duration, what: &str) -> Result<(), ExternalError> {
        loop {
            match self.written.try_recv() {
                Ok(Ok(())) => {
                    self.pending.pop_front();
                }
                Ok(Err(e)) => return Err(self.write_failed(Ok(Err(e)), timeout, what)),
                Err(_) => break,
            }
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if self.stdin.as_ref().is_some_and(|w| w.send(bytes).is_ok()) {
            self.pending.push_back(what.to_string());
            Ok(())
        } else {
            // The writer thread ended: its last answer says why, if it gave one.
            let why = match self.written.try_recv() {
                Ok(r) => Ok(r),
                Err(_) => Err(RecvTimeoutError::Disconnected),
            };
            Err(self.write_failed(why, timeout, what))
        }
    }

    /// Wait until every line queued by [`Process::send`] is written to the engine's stdin,
    /// at most `timeout` for each: an engine that stopped reading its stdin fills the pipe,
    /// and a write into a full pipe would otherwise wait forever. The error names the first
    /// line it did not take.
    pub fn flush(&mut self, timeout: Duration) -> Result<(), ExternalError> {
        while let Some(what) = self.pending.front() {
            let what = what.clone();
            match self.written.recv_timeout(timeout) {
                Ok(Ok(())) => {
                    self.pending.pop_front();
                }
                other => return Err(self.write_failed(other, timeout, &what)),
            }
        }
        Ok(())
    }

    /// The error of a line `what` that was not written (`result` as the writer answered).
    fn write_failed(
        &mut self,
        result: Result<std::io::Result<()>, RecvTimeoutError>,
        timeout: Duration,
        what: &str,
    ) -> ExternalError {
        match result {
            Ok(Ok(())) | Err(RecvTimeoutError::Disconnected) => self.fail(
                "it stopped reading its stdin (stdin closed)".to_string(),
                None,
            ),
            Ok(Err(e)) => self.fail(format!("it stopped reading its stdin ({e})"), None),
            Err(RecvTimeoutError::Timeout) => self.fail(
                format!(
                    "it did not take {what} within {:.1} s (external.timeout_secs): the pipe to its stdin stayed full (an engine must keep reading its stdin)",
                    timeout.as_secs_f64()
                ),
                None,
            ),
        }
    }

    /// Lines the engine wrote that nobody asked for yet: those already received, waiting up to
    /// `wait` for the first. Stops at end of output (a later `recv` reports it).
    pub fn unread(&mut self, wait: Duration) -> Vec<String> {
        let mut out = Vec::new();
        let mut first = Some(wait);
        loop {
            let got = match first.take() {
                Some(w) if !w.is_zero() => self.lines.recv_timeout(w).ok(),
                _ => self.lines.try_recv().ok(),
            };
            match got {
                Some(Out::Line(l) | Out::NotUtf8(l)) => out.push(l),
                Some(Out::Bad(why)) => out.push(why),
                _ => break,
            }
        }
        out
    }

    /// Read one line within `timeout`, once every queued line is written
    /// ([`Process::flush`], within `timeout` too).
    pub fn recv(&mut self, timeout: Duration, waiting_for: &str) -> Result<String, ExternalError> {
        self.flush(timeout)?;
        match self.lines.recv_timeout(timeout) {
            Ok(Out::Line(l)) => Ok(l),
            // The line clipped as every offending line is (a megabyte of it was printed whole).
            Ok(Out::NotUtf8(l)) => Err(self.fail(
                format!(
                    "wrote a line that is not UTF-8 while ctxbench waited for {waiting_for} (invalid bytes shown as U+FFFD): protocol lines are UTF-8 JSON"
                ),
                Some(super::clip(&l)),
            )),
            Ok(Out::Bad(why)) => Err(self.fail(
                format!("{why} while ctxbench waited for {waiting_for}"),
                None,
            )),
            Ok(Out::Eof) | Err(RecvTimeoutError::Disconnected) => Err(self.fail(
                format!("it exited while ctxbench waited for {waiting_for}"),
                None,
            )),
            Err(RecvTimeoutError::Timeout) => Err(self.fail(
                format!(
                    "no answer within {:.1} s while ctxbench waited for {waiting_for} (external.timeout_secs)",
                    timeout.as_secs_f64()
                ),
                None,
            )),
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // Closing stdin lets a well-behaved engine exit; kill it anyway so nothing lingers.
        self.stdin.take();
        self.with_child(|c| {
            let _ = c.kill();
            let _ = c.wait();
        });
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::Instant;

    fn sh(script: &str) -> Process {
        let argv = ["sh".to_string(), "-c".to_string(), script.to_string()];
        Process::spawn(&argv, &BTreeMap::new()).unwrap()
    }

    /// Lines are queued without waiting for the writer (each trace message waited for its
    /// write: two thread wake-ups per line, serialized with the replay); `flush` waits for all
    /// of them, and an engine that stops reading still fails after the timeout, naming the
    /// first line it did not take.
    #[test]
    fn lines_are_queued_without_waiting_and_flush_waits_until_the_engine_took_them() {
        // Three lines of 300 kB, more than the pipe holds, to an engine that starts reading
        // after 1 s: queued at once, written when it reads.
        let mut p = sh("sleep 1; exec cat > /dev/null");
        let big = "x".repeat(300_000);
        let started = Instant::now();
        for k in 0..3 {
            p.send(&big, Duration::from_secs(20), &format!("message {k}"))
                .unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "send waited for the write: {:?}",
            started.elapsed()
        );
        p.flush(Duration::from_secs(20)).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(900));
        assert!(p.pending.is_empty());

        let mut deaf = sh("exec sleep 30");
        deaf.send(&big, Duration::from_millis(300), "message 7")
            .unwrap();
        deaf.send(&big, Duration::from_millis(300), "message 8")
            .unwrap();
        let e = deaf
            .flush(Duration::from_millis(300))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("it did not take message 7 within 0.3 s (external.timeout_secs)"),
            "{e}"
        );
    }
}
