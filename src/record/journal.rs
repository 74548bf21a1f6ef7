//! The run journal `samples.jsonl`: one `Sample` per line, appended and flushed per finished
//! unit, and read back tolerating a torn final line left by a crash.
//!
//! Crash model: each `append` writes one complete line with a single `write_all` on an
//! unbuffered file, so after a crash the file holds whole lines plus at most one torn (partial,
//! newline-less) final line. Readers report that line and go on; `Journal::open_append` cuts it
//! off before appending so the next record starts on a fresh line.
//!
//! This module owns the line format; [`super::RunDir`] owns where the file is and opens it.

use super::{Sample, SCHEMA_VERSION};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A journal or run directory that cannot be read: names the file, line and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path}:{line}: expected one JSON sample object per line: {message} \
         (`ctxbench repair <run-dir>` moves unreadable lines aside)"
    )]
    BadLine {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error(
        "{path}:{line}: schema_version {found} is newer than this ctxbench understands \
         ({SCHEMA_VERSION}); upgrade ctxbench"
    )]
    FutureVersion {
        path: PathBuf,
        line: usize,
        found: u32,
    },
    /// What the units recorded beside the journal (the run's summaries pack) could not be
    /// written before their lines (`runner::UnitExecutor::flush`).
    #[error("cannot write what the units recorded beside the journal: {source}")]
    Beside {
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot read: {source} (is this a ctxbench run directory?)")]
    NoRunInfo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a ctxbench run.json: {message}")]
    BadRunInfo {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

impl JournalError {
    /// The same error with its line number moved past `lines` earlier lines (an error of
    /// [`read_journal_range`] on a range that starts after them).
    pub fn after_lines(self, lines: usize) -> JournalError {
        match self {
            JournalError::BadLine {
                path,
                line,
                message,
            } => JournalError::BadLine {
                path,
                line: line + lines,
                message,
            },
            JournalError::FutureVersion { path, line, found } => JournalError::FutureVersion {
                path,
                line: line + lines,
                found,
            },
            other => other,
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The final line of a journal that was cut short (no newline, not valid JSON).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornLine {
    /// 1-based line number.
    pub line: usize,
    /// Length of the partial line in bytes.
    pub bytes: usize,
}

/// What `read_samples` found.
#[derive(Clone, Debug, Default)]
pub struct SamplesRead {
    pub samples: Vec<Sample>,
    /// A torn final line, if the writer crashed mid-line (reported, not fatal).
    pub torn: Option<TornLine>,
}

/// What a [`Journal`] holds in memory ([`Journal::held`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Held {
    pub lines: usize,
    pub bytes: usize,
    /// How long the oldest line has been held.
    pub since: Duration,
}

/// At most this many bytes of journal lines are held in memory ([`Journal::append_all`]).
pub const JOURNAL_HOLD_BYTES: usize = 256 << 10;
/// Journal lines are held in memory at most about this long ([`Journal::append_all`]; checked
/// as units end).
pub const JOURNAL_HOLD_FOR: Duration = Duration::from_secs(1);

/// Appends samples to `samples.jsonl`, a line each, written at once ([`Journal::append`]) or
/// held in memory a short while with the lines that follow ([`Journal::append_all`]).
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    /// Lines from the file offset `buf_at` on: `buf[..written]` is in the file, the rest is
    /// held; the last append's lines start at `buf[batch]` and end at each of `ends` (after
    /// their newline).
    buf: Vec<u8>,
    buf_at: u64,
    written: usize,
    batch: usize,
    ends: Vec<usize>,
    /// Since when lines are held (`None`: none is), and how many.
    held_since: Option<std::time::Instant>,
    held_lines: usize,
    file: File,
}

impl Journal {
    /// Create a new journal; fails if the file already exists (never clobbers a run).
    pub(crate) fn create(path: &Path) -> Result<Journal, JournalError> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io_err(path))?;
        Ok(Journal::at(path, file, 0))
    }

    fn at(path: &Path, file: File, end: u64) -> Journal {
        Journal {
            path: path.to_path_buf(),
            buf: Vec::new(),
            buf_at: end,
            written: 0,
            batch: 0,
            ends: Vec::new(),
            held_since: None,
            held_lines: 0,
            file,
        }
    }

    /// Open a journal for appending (creating it if missing). A torn final line left by a
    /// crash is cut off first, and returned so the caller can report it.
    pub(crate) fn open_append(path: &Path) -> Result<(Journal, Option<TornLine>), JournalError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_err(path))?;
        let torn = cut_torn_tail(&mut file).map_err(io_err(path))?;
        let end = file.seek(SeekFrom::End(0)).map_err(io_err(path))?;
        Ok((Journal::at(path, file, end), torn))
    }

    /// Append one sample as a single line and write it (with any line held before it) to the
    /// operating system.
    pub fn append(&mut self, sample: &Sample) -> Result<(), JournalError> {
        self.start_batch();
        if let Err(e) = Journal::encode(sample, &mut self.buf) {
            return Err(self.drop_batch(e));
        }
        self.end_line();
        self.write_held()
    }

    /// A sample's line as [`Journal::append`] writes it (without its newline), into `line`:
    /// for encoding on the thread that made the sample ([`Journal::append_all`]).
    pub fn encode(sample: &Sample, line: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        serde_json::to_writer(line, sample)
    }

    /// Append lines [`Journal::encode`] made (or the error one gave: then none of them is
    /// appended), in order; [`Journal::written`] then gives each with where it starts. They
    /// are written at once, with the lines held before them, in one call — unless `hold`: then
    /// they are held in memory ([`Journal::flush`] writes them). The runner holds the lines
    /// of offline units, which a crash only makes run again: at most two a unit in flight,
    /// [`JOURNAL_HOLD_BYTES`] and [`JOURNAL_HOLD_FOR`].
    pub fn append_all(
        &mut self,
        lines: impl IntoIterator<Item = Result<Vec<u8>, serde_json::Error>>,
        hold: bool,
    ) -> Result<(), JournalError> {
        self.start_batch();
        for line in lines {
            match line {
                Ok(line) => self.buf.extend_from_slice(&line),
                Err(e) => return Err(self.drop_batch(e)),
            }
            self.end_line();
        }
        if !hold {
            return self.write_held();
        }
        if self.written < self.buf.len() {
            self.held_since.get_or_insert_with(std::time::Instant::now);
        }
        Ok(())
    }

    /// Write the lines held, if any.
    pub fn flush(&mut self) -> Result<(), JournalError> {
        self.write_held()
    }

    /// The lines held: how many, their bytes, and for how long the oldest has been.
    pub fn held(&self) -> Held {
        Held {
            lines: self.held_lines,
            bytes: self.buf.len() - self.written,
            since: self.held_since.map_or(Duration::ZERO, |t| t.elapsed()),
        }
    }

    /// Forget the lines written before this append (their bytes are no longer needed).
    fn start_batch(&mut self) {
        if self.written == self.buf.len() {
            self.buf_at += self.buf.len() as u64;
            self.buf.clear();
            self.written = 0;
        }
        self.batch = self.buf.len();
        self.ends.clear();
    }

    fn end_line(&mut self) {
        self.buf.push(b'\n');
        self.ends.push(self.buf.len());
        self.held_lines += 1;
    }

    /// Take back what this append added (a line could not be encoded).
    fn drop_batch(&mut self, e: serde_json::Error) -> JournalError {
        self.held_lines -= self.ends.len();
        self.buf.truncate(self.batch);
        self.ends.clear();
        JournalError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        }
    }

    fn write_held(&mut self) -> Result<(), JournalError> {
        if self.written < self.buf.len() {
            self.file
                .write_all(&self.buf[self.written..])
                .map_err(io_err(&self.path))?;
            self.written = self.buf.len();
            self.file.flush().map_err(io_err(&self.path))?;
        }
        self.held_since = None;
        self.held_lines = 0;
        Ok(())
    }

    /// The lines of the last append, in order, each without its newline and with the byte
    /// offset in the file where it starts (or will, when held).
    pub fn written(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        let starts = std::iter::once(self.batch).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| (&self.buf[start..end - 1], self.buf_at + start as u64))
    }

    /// The byte offset in the file where [`Journal::last_line`] starts.
    pub fn last_line_at(&self) -> u64 {
        self.written().last().map_or(self.buf_at, |(_, at)| at)
    }

    /// Whether the file holds no line (a journal this process created and has not written
    /// to, or an empty one it opened), held lines counted.
    pub fn is_empty(&self) -> bool {
        self.buf_at == 0 && self.buf.is_empty()
    }

    /// The line the last append wrote (or holds), without its newline (empty before the
    /// first): what a reader of the journal reads for that sample.
    pub fn last_line(&self) -> &[u8] {
        self.written().last().map_or(&[], |(line, _)| line)
    }

    /// Write the lines held and force the journal to stable storage (call at the end of a
    /// run; a written line is with the operating system, which already survives a process
    /// crash).
    pub fn sync(&mut self) -> Result<(), JournalError> {
        self.write_held()?;
        self.file.sync_data().map_err(io_err(&self.path))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// If the file does not end with a newline, truncate it after its last newline. Returns the
/// removed partial line.
fn cut_torn_tail(file: &mut File) -> std::io::Result<Option<TornLine>> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(None);
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::End(-1))?;
    file.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(None);
    }
    // Scan backwards in chunks for the last newline, counting lines on the way is not needed:
    // count them from the start once we know the cut position.
    let mut pos = len;
    let mut cut = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    'outer: while pos > 0 {
        let start = pos.saturating_sub(buf.len() as u64);
        let n = (pos - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf[..n])?;
        for i in (0..n).rev() {
            if buf[i] == b'\n' {
                cut = start + i as u64 + 1;
                break 'outer;
            }
        }
        pos = start;
    }
    file.seek(SeekFrom::Start(0))?;
    let mut newlines = 0usize;
    let mut reader = BufReader::new(&mut *file).take(cut);
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        newlines += chunk.iter().filter(|&&b| b == b'\n').count();
        let n = chunk.len();
        reader.consume(n);
    }
    file.set_len(cut)?;
    Ok(Some(TornLine {
        line: newlines + 1,
        bytes: (len - cut) as usize,
    }))
}

/// Read every sample of a journal. Blank lines are skipped. A final line without a newline
/// that does not parse is a torn write: reported in `torn`, not an error. Any other bad line
/// is an error naming the file, line and what was expected.
pub(crate) fn read_samples(path: &Path) -> Result<SamplesRead, JournalError> {
    let (rows, torn) = read_journal_with(path, |text| {
        parse_sample(text).map(|s| {
            let v = s.schema_version;
            (s, v)
        })
    })?;
    Ok(SamplesRead {
        samples: rows.into_iter().map(|(s, _)| s).collect(),
        torn,
    })
}

/// Values parsed from a journal's lines, each with its line's byte offset, and a torn final
/// line if any.
pub type Streamed<T> = (Vec<(T, u64)>, Option<TornLine>);

/// Stream a journal line by line through `parse`, which returns a value and the line's schema
/// version; each value comes back with the byte offset of its line (for reading that line
/// again later, e.g. [`read_line_at`]). Blank lines, torn final lines, newer schema versions
/// and bad lines are handled as in [`RunDir::read_samples`](super::RunDir::read_samples). One
/// line is in memory at a time.
pub fn read_journal_with<T>(
    path: &Path,
    mut parse: impl FnMut(&[u8]) -> Result<(T, u32), String>,
) -> Result<Streamed<T>, JournalError> {
    let mut out = Vec::new();
    let torn = read_journal_each(path, |text, at| {
        let (value, version) = parse(text)?;
        out.push((value, at));
        Ok(version)
    })?;
    Ok((out, torn))
}

/// Bytes read from the journal at a time by [`read_journal_each`]; a line longer than this
/// grows the buffer to hold it.
const BLOCK: usize = 1 << 20;

/// [`read_journal_with`] without collecting: `each` gets every line and its byte offset, keeps
/// what it needs and returns the line's schema version. The file is read in blocks of 1 MiB
/// and each line is handed over as a slice of its block (no copy per line).
pub fn read_journal_each(
    path: &Path,
    each: impl FnMut(&[u8], u64) -> Result<u32, String>,
) -> Result<Option<TornLine>, JournalError> {
    read_journal_range(path, 0..u64::MAX, each).map(|(torn, _)| torn)
}

/// [`read_journal_each`] of the bytes `range` of the journal only (`range.start` the start of
/// a line; the lines that end past `range.end` are not read unless the file ends first), with
/// the number of lines read. Offsets are the file's; line numbers (in errors and the torn
/// line) count from the range's first line: a caller that reads a journal in pieces adds the
/// lines of the pieces before (see [`JournalError::after_lines`]).
pub fn read_journal_range(
    path: &Path,
    range: std::ops::Range<u64>,
    mut each: impl FnMut(&[u8], u64) -> Result<u32, String>,
) -> Result<(Option<TornLine>, usize), JournalError> {
    let mut file = File::open(path).map_err(io_err(path))?;
    if range.start > 0 {
        file.seek(SeekFrom::Start(range.start))
            .map_err(io_err(path))?;
    }
    let mut file = file.take(range.end.saturating_sub(range.start));
    let mut buf: Vec<u8> = Vec::new();
    // `buf[..filled]` holds bytes read and not yet handed over; they start at `offset`.
    let mut filled = 0usize;
    let mut offset = range.start;
    let mut number = 0usize;
    let mut torn = None;
    let mut eof = false;
    while !eof {
        if buf.len() < filled + BLOCK {
            buf.resize(filled + BLOCK, 0);
        }
        // Fill the block (a short read is not the end of the file).
        while filled < buf.len() {
            let n = match file.read(&mut buf[filled..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err(path)(e)),
            };
            if n == 0 {
                eof = true;
                break;
            }
            filled += n;
        }
        let block = &buf[..filled];
        let mut start = 0usize;
        let ends = memchr::memchr_iter(b'\n', block).map(|end| (end + 1, true));
        // At the end of the file, a last line without a newline.
        let tail = (eof && block.len() > start).then_some((block.len(), false));
        for (end, complete) in ends.chain(tail) {
            let (a, line) = (start, &block[start..end]);
            if a == end {
                break;
            }
            start = end;
            number += 1;
            let text = trim_ascii(line);
            if text.is_empty() {
                continue;
            }
            match each(text, offset + a as u64) {
                Ok(version) => {
                    if version > SCHEMA_VERSION {
                        return Err(JournalError::FutureVersion {
                            path: path.to_path_buf(),
                            line: number,
                            found: version,
                        });
                    }
                }
                Err(_) if !complete => {
                    torn = Some(TornLine {
                        line: number,
                        bytes: line.len(),
                    });
                }
                Err(e) => {
                    return Err(JournalError::BadLine {
                        path: path.to_path_buf(),
                        line: number,
                        message: e,
                    })
                }
            }
        }
        // Keep the partial last line for the next block.
        buf.copy_within(start..filled, 0);
        filled -= start;
        offset += start as u64;
    }
    Ok((torn, number))
}

/// The sample on the line starting at byte `offset` of a journal (an offset from
/// [`read_journal_with`]).
pub fn read_line_at(file: &mut File, path: &Path, offset: u64) -> Result<Sample, JournalError> {
    file.seek(SeekFrom::Start(offset)).map_err(io_err(path))?;
    let mut line = Vec::new();
    BufReader::new(&mut *file)
        .read_until(b'\n', &mut line)
        .map_err(io_err(path))?;
    parse_sample(trim_ascii(&line)).map_err(|message| JournalError::BadLine {
        path: path.to_path_buf(),
        line: 0,
        message: format!("at byte {offset}: {message}"),
    })
}

/// What `repair` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Repaired {
    /// Samples kept in the journal.
    pub kept: usize,
    /// 1-based line numbers (in the journal before the repair) that were moved aside.
    pub moved: Vec<usize>,
}

/// Move every unreadable line of the journal at `path` (not JSON, not a sample, or a torn
/// write) to the end of `aside`, byte for byte, and rewrite the journal with the readable lines
/// only (written to a temporary file, synced, then renamed over it, so a crash leaves either
/// the old or the new journal). Blank lines are dropped. A line of a newer schema version is
/// still an error: it is readable by a newer ctxbench, not damaged. Nothing is written when
/// every line is readable.
pub(crate) fn repair(path: &Path, aside: &Path) -> Result<Repaired, JournalError> {
    let file = File::open(path).map_err(io_err(path))?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut kept = Vec::new();
    let mut rejected = Vec::new();
    let mut out = Repaired::default();
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        number += 1;
        let text = trim_ascii(&line);
        if text.is_empty() {
            continue;
        }
        match parse_sample(text) {
            Ok(sample) if sample.schema_version > SCHEMA_VERSION => {
                return Err(JournalError::FutureVersion {
                    path: path.to_path_buf(),
                    line: number,
                    found: sample.schema_version,
                })
            }
            Ok(_) => {
                kept.extend_from_slice(text);
                kept.push(b'\n');
                out.kept += 1;
            }
            Err(_) => {
                rejected.extend_from_slice(&line);
                if line.last() != Some(&b'\n') {
                    rejected.push(b'\n');
                }
                out.moved.push(number);
            }
        }
    }
    if out.moved.is_empty() {
        return Ok(out);
    }
    // Aside first: if we crash after this, the journal still holds every line.
    let mut side = OpenOptions::new()
        .create(true)
        .append(true)
        .open(aside)
        .map_err(io_err(aside))?;
    side.write_all(&rejected).map_err(io_err(aside))?;
    side.sync_data().map_err(io_err(aside))?;
    let tmp = path.with_extension("jsonl.repair-tmp");
    let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
    f.write_all(&kept).map_err(io_err(&tmp))?;
    f.sync_data().map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))?;
    Ok(out)
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &b[start..end]
}

fn parse_sample(text: &[u8]) -> Result<Sample, String> {
    serde_json::from_slice::<Sample>(text).map_err(|e| {
        // serde_json reports `at line 1 column N`; the JSON path is the field it names.
        format!("{e}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: u32) -> Sample {
        Sample::builder()
            .unit_id(format!("u{i}"))
            .sample(format!("s{i}"))
            .score("recall", f64::from(i % 2))
            .passed(i % 2 == 1)
            .latency_ms(5)
            .evidence(serde_json::json!({"answer": "x\ny"}))
            .build()
    }

    /// Sample `i`'s line as the thread that made it encodes it.
    fn encoded(i: u32) -> Result<Vec<u8>, serde_json::Error> {
        let mut line = Vec::new();
        Journal::encode(&sample(i), &mut line).map(|()| line)
    }

    #[test]
    fn append_then_read_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        let mut j = Journal::create(&path).unwrap();
        for i in 0..3 {
            j.append(&sample(i)).unwrap();
        }
        let read = read_samples(&path).unwrap();
        assert_eq!(read.samples, vec![sample(0), sample(1), sample(2)]);
        assert_eq!(read.torn, None);
        // create never clobbers
        assert!(Journal::create(&path).is_err());
    }

    #[test]
    fn lines_appended_together_are_one_write_with_each_line_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        let mut j = Journal::create(&path).unwrap();
        j.append(&sample(0)).unwrap();
        j.append_all((1..4).map(encoded), false).unwrap();
        let written: Vec<(Vec<u8>, u64)> = j.written().map(|(l, at)| (l.to_vec(), at)).collect();
        assert_eq!(written.len(), 3);
        let mut file = File::open(&path).unwrap();
        for (i, (line, at)) in (1..4).zip(&written) {
            assert_eq!(line, &encoded(i).unwrap());
            assert_eq!(read_line_at(&mut file, &path, *at).unwrap(), sample(i));
        }
        assert_eq!(j.last_line(), &written[2].0[..]);
        assert_eq!(j.last_line_at(), written[2].1);
        let read = read_samples(&path).unwrap();
        assert_eq!(read.samples, (0..4).map(sample).collect::<Vec<_>>());
        // A line that could not be encoded: nothing of the chunk is written.
        let bad = serde_json::from_str::<u8>("x").map(|_| Vec::new());
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(j.append_all([encoded(4), bad], false).is_err());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        assert!(j.last_line().is_empty());
        // Nothing to append: nothing written.
        j.append_all(std::iter::empty(), false).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
    }

    #[test]
    fn held_lines_are_written_with_the_next_written_ones_or_on_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        let mut j = Journal::create(&path).unwrap();
        let len = || std::fs::metadata(&path).unwrap().len();
        j.append_all((0..2).map(encoded), true).unwrap();
        assert_eq!(len(), 0, "held");
        assert!(!j.is_empty());
        let held = j.held();
        assert_eq!(held.lines, 2);
        assert_eq!(
            held.bytes as u64,
            j.written().map(|(l, _)| l.len() as u64 + 1).sum::<u64>()
        );
        j.append_all((2..3).map(encoded), true).unwrap();
        let at: Vec<u64> = (0..1).map(|_| j.last_line_at()).collect();
        // The next lines not held: every held line goes with them, in order.
        j.append_all((3..5).map(encoded), false).unwrap();
        assert_eq!((j.held().lines, j.held().bytes), (0, 0));
        let read = read_samples(&path).unwrap();
        assert_eq!(read.samples, (0..5).map(sample).collect::<Vec<_>>());
        let mut file = File::open(&path).unwrap();
        assert_eq!(read_line_at(&mut file, &path, at[0]).unwrap(), sample(2));
        for ((line, at), i) in j.written().zip(3..) {
            assert_eq!(line, &encoded(i).unwrap()[..]);
            assert_eq!(read_line_at(&mut file, &path, at).unwrap(), sample(i));
        }
        // Held, then flushed; then held and written by `sync`; `append` writes at once.
        j.append_all((5..6).map(encoded), true).unwrap();
        j.flush().unwrap();
        j.append_all((6..7).map(encoded), true).unwrap();
        j.sync().unwrap();
        j.append(&sample(7)).unwrap();
        assert_eq!(j.held().lines, 0);
        let read = read_samples(&path).unwrap();
        assert_eq!(read.samples, (0..8).map(sample).collect::<Vec<_>>());
        assert_eq!(j.last_line_at() + j.last_line().len() as u64 + 1, len());
    }

    #[test]
    fn lines_across_and_longer_than_a_block_keep_their_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        let mut j = Journal::create(&path).unwrap();
        // Lines of ~0.3, ~2.5 (longer than a block) and ~0.7 MiB, then a blank line and a
        // torn final line: the lines straddle block ends.
        let sizes = [300_000, 2_500_000, 700_000];
        let samples: Vec<Sample> = (0..3)
            .map(|i| {
                let mut s = sample(i);
                s.evidence = serde_json::json!({"answer": "a".repeat(sizes[i as usize])});
                s
            })
            .collect();
        for s in &samples {
            j.append(s).unwrap();
        }
        drop(j);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"\n{\"schema_version\":1,\"unit").unwrap();
        drop(f);
        let (read, torn) = read_journal_with(&path, |t| {
            parse_sample(t).map(|s| {
                let v = s.schema_version;
                (s, v)
            })
        })
        .unwrap();
        assert_eq!(torn, Some(TornLine { line: 5, bytes: 25 }));
        let mut file = File::open(&path).unwrap();
        assert_eq!(read.len(), 3);
        for ((s, at), want) in read.iter().zip(&samples) {
            assert_eq!(s, want);
            assert_eq!(&read_line_at(&mut file, &path, *at).unwrap(), want);
        }
    }

    #[test]
    fn torn_final_line_is_reported_and_cut_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        let mut j = Journal::create(&path).unwrap();
        j.append(&sample(0)).unwrap();
        j.append(&sample(1)).unwrap();
        drop(j);
        let full = serde_json::to_string(&sample(2)).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&full.as_bytes()[..20]).unwrap();
        drop(f);

        let read = read_samples(&path).unwrap();
        assert_eq!(read.samples.len(), 2);
        assert_eq!(read.torn, Some(TornLine { line: 3, bytes: 20 }));

        let (mut j, torn) = Journal::open_append(&path).unwrap();
        assert_eq!(torn, Some(TornLine { line: 3, bytes: 20 }));
        j.append(&sample(2)).unwrap();
        let read = read_samples(&path).unwrap();
        assert_eq!(read.samples, vec![sample(0), sample(1), sample(2)]);
        assert_eq!(read.torn, None);
    }

    #[test]
    fn bad_middle_line_is_an_error_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        let good = serde_json::to_string(&sample(0)).unwrap();
        std::fs::write(
            &path,
            format!("{good}\n{{\"schema_version\": 1}}\n{good}\n"),
        )
        .unwrap();
        let err = read_samples(&path).unwrap_err().to_string();
        assert!(err.contains("samples.jsonl:2:"), "{err}");
        assert!(err.contains("missing field"), "{err}");
    }

    #[test]
    fn repair_moves_unreadable_lines_aside_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        let aside = dir.path().join("samples.rejected.jsonl");
        let good = |i| serde_json::to_string(&sample(i)).unwrap();
        let torn = &good(3)[..15];
        std::fs::write(
            &path,
            format!(
                "{}\n{{garbage\n\n{}\n{{\"schema_version\": 1}}\n{torn}",
                good(0),
                good(1)
            ),
        )
        .unwrap();
        assert!(read_samples(&path).is_err());
        let r = repair(&path, &aside).unwrap();
        assert_eq!(
            r,
            Repaired {
                kept: 2,
                moved: vec![2, 5, 6]
            }
        );
        let read = read_samples(&path).unwrap();
        assert_eq!(read.samples, vec![sample(0), sample(1)]);
        assert_eq!(
            std::fs::read_to_string(&aside).unwrap(),
            format!("{{garbage\n{{\"schema_version\": 1}}\n{torn}\n")
        );
        // A clean journal is left alone, and nothing more is moved aside.
        assert_eq!(
            repair(&path, &aside).unwrap(),
            Repaired {
                kept: 2,
                moved: vec![]
            }
        );
        assert_eq!(std::fs::read_to_string(&aside).unwrap().lines().count(), 3);
        // A newer schema version is not damage.
        let mut s = sample(9);
        s.schema_version = SCHEMA_VERSION + 1;
        std::fs::write(&path, serde_json::to_string(&s).unwrap() + "\n{x\n").unwrap();
        assert!(matches!(
            repair(&path, &aside),
            Err(JournalError::FutureVersion { line: 1, .. })
        ));
    }

    #[test]
    fn future_schema_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        let mut s = sample(0);
        s.schema_version = SCHEMA_VERSION + 1;
        std::fs::write(&path, serde_json::to_string(&s).unwrap() + "\n").unwrap();
        let err = read_samples(&path).unwrap_err().to_string();
        assert!(err.contains(":1: schema_version"), "{err}");
    }

    #[test]
    fn complete_final_line_without_newline_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        std::fs::write(&path, serde_json::to_string(&sample(4)).unwrap()).unwrap();
        let read = read_samples(&path).unwrap();
        assert_eq!(read.samples, vec![sample(4)]);
        assert_eq!(read.torn, None);
    }
}
