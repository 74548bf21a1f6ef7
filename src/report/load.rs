//! Streaming load of a saved run for `report` and `compare`: one pass over samples.jsonl keeps
//! each sample's compact part (keys, params, scores, verdict, tokens, costs, compactions,
//! error, the pricing part of its evidence) as a compact row ([`Rows`]: strings interned, no
//! per-sample maps) and skips its heavy part (timeline, evidence, summaries) without building
//! it; a second, bounded pass reads the heavy part of the samples shown in full by seeking to
//! their lines ([`ReportModel::load_detail`]). Memory is that of the compact rows, not of the
//! samples.
//!
//! Exceptions kept in the first pass: the timeline of the first successful sample with one per
//! variant × trace (what the context plots draw), a bounded set.

use super::model::{ReportModel, RowDetail};
use super::rows::Rows;
use super::spill::{RowSpiller, SpillOptions, SpilledPart, SpilledRows, TempDir};
use crate::record::journal::{read_journal_each, read_journal_range, read_line_at};
use crate::record::{
    CostByRole, JournalError, RunDir, RunInfo, Sample, TokensByRole, TornLine, UnitError,
};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// The compact part of a sample line; `timeline` only counts the points.
#[derive(Deserialize)]
struct Compact {
    schema_version: u32,
    unit_id: String,
    trace_id: String,
    variant: String,
    eval: String,
    sample: String,
    #[serde(default)]
    params: BTreeMap<String, serde_json::Value>,
    repeat: u32,
    #[serde(default)]
    scores: BTreeMap<String, f64>,
    #[serde(default)]
    passed: Option<bool>,
    #[serde(default)]
    tokens: TokensByRole,
    #[serde(default)]
    cost_usd: CostByRole,
    #[serde(default)]
    compactions: BTreeMap<String, u64>,
    #[serde(default)]
    latency_ms: u64,
    #[serde(default)]
    error: Option<UnitError>,
    #[serde(default, deserialize_with = "count_seq")]
    timeline: usize,
    #[serde(default, deserialize_with = "price_part")]
    evidence: serde_json::Value,
}

/// The pricing part of an evidence object (`window`, `priced_as`; see
/// `rows::price_evidence`), the rest skipped unbuilt.
fn price_part<'de, D: Deserializer<'de>>(d: D) -> Result<serde_json::Value, D::Error> {
    struct Price;
    impl<'de> Visitor<'de> for Price {
        type Value = serde_json::Value;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = serde_json::Map::new();
            while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if k == "window" || k == "priced_as" {
                    out.insert(k.into_owned(), map.next_value()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(if out.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::Value::Object(out)
            })
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(serde_json::Value::Null)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(serde_json::Value::Null)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(serde_json::Value::Null)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(serde_json::Value::Null)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(serde_json::Value::Null)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(serde_json::Value::Null)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(serde_json::Value::Null)
        }
    }
    d.deserialize_any(Price)
}

/// Length of a JSON array, its elements skipped unbuilt.
fn count_seq<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    struct Count;
    impl<'de> Visitor<'de> for Count {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
            let mut n = 0;
            while seq.next_element::<IgnoredAny>()?.is_some() {
                n += 1;
            }
            Ok(n)
        }
    }
    d.deserialize_seq(Count)
}

impl Compact {
    fn into_sample(self) -> Sample {
        Sample {
            schema_version: self.schema_version,
            unit_id: self.unit_id,
            trace_id: self.trace_id,
            variant: self.variant,
            eval: self.eval,
            sample: self.sample,
            params: self.params,
            repeat: self.repeat,
            scores: self.scores,
            passed: self.passed,
            tokens: self.tokens,
            cost_usd: self.cost_usd,
            compactions: self.compactions,
            latency_ms: self.latency_ms,
            error: self.error,
            evidence: self.evidence,
            timeline: Vec::new(),
            summaries: Vec::new(),
        }
    }
}

/// The compact rows of a journal, each with where its heavy part is.
pub struct Streamed {
    pub rows: Rows,
    pub torn: Option<TornLine>,
}

/// Journals smaller than this are read on one thread (a second one would not pay for itself).
const SPLIT_AT_LEAST: u64 = 8 << 20;

/// Read `samples.jsonl` in one streaming pass (see the module doc). Each line is read by
/// `scan::light` (borrowing its strings, skipping the heavy part with a fast scanner); a line
/// it leaves to serde_json, and the lines whose timeline is kept, are read as before.
///
/// A big journal is read in two halves on two threads (split at the first line that starts
/// past the middle), the second half's rows appended to the first's: the rows, their order,
/// the timelines kept (the first of each variant × trace in the file) and the errors (the
/// first bad line of the file, numbered in the file) are those of one pass.
pub fn stream_samples(path: &Path) -> Result<Streamed, JournalError> {
    match stream_split(path, SPLIT_AT_LEAST, None)? {
        Loaded::Rows(rows) => Ok(rows),
        Loaded::Spilled(..) => unreachable!("nothing spills without a spill context"),
    }
}

/// What `stream_split` read: the rows in memory, or spilled to disk (with the torn final
/// line, if any).
pub enum Loaded {
    Rows(Streamed),
    Spilled(SpilledRows, Option<TornLine>),
}

/// [`stream_samples`], spilling as `opts` says (`ctxbench compare` of big runs): spilled rows
/// come back sorted by variant name, trace, eval, sample and repeat, not by a run's variant
/// order, so two runs' rows come in one order.
pub fn stream_samples_spilling(path: &Path, opts: &SpillOptions) -> Result<Loaded, JournalError> {
    let split = split_point(path, SPLIT_AT_LEAST)?;
    let ctx = SpillCtx {
        opts: opts.clone(),
        above: opts.above / if split.is_some() { 2 } else { 1 },
        dir: std::sync::Mutex::new(None),
        rank: Box::new(|_: &str| 0),
    };
    stream_split(path, SPLIT_AT_LEAST, Some(&ctx))
}

/// When and where the parts of a load spill (see `report::spill`).
struct SpillCtx {
    opts: SpillOptions,
    /// Rows one part keeps in memory before it spills.
    above: usize,
    /// The spill's directory, created by the first part that spills.
    dir: std::sync::Mutex<Option<Arc<TempDir>>>,
    /// Rank of a variant (run.json's order; others after, by name).
    rank: Box<dyn Fn(&str) -> usize + Sync>,
}

impl SpillCtx {
    fn dir(&self) -> std::io::Result<Arc<TempDir>> {
        let mut dir = self
            .dir
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(d) = &*dir {
            return Ok(d.clone());
        }
        let d = Arc::new(TempDir::new(self.opts.dir.as_deref())?);
        *dir = Some(d.clone());
        Ok(d)
    }
}

/// [`stream_samples`], splitting journals of at least `split_at_least` bytes; with `spill`,
/// a part whose rows pass its share of `spill.opts.above` writes them to sorted runs, and
/// then every part does.
fn stream_split(
    path: &Path,
    split_at_least: u64,
    spill: Option<&SpillCtx>,
) -> Result<Loaded, JournalError> {
    let split = split_point(path, split_at_least)?;
    let mut parts = match split {
        None => vec![stream_range(path, 0..u64::MAX, spill)?],
        Some(at) => {
            let (first, second) = std::thread::scope(|scope| {
                let second = scope.spawn(|| stream_range(path, at..u64::MAX, spill));
                let first = stream_range(path, 0..at, spill);
                (first, second.join())
            });
            let first = first?;
            let mut second = second
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
                .map_err(|e| e.after_lines(first.lines))?;
            second.torn = second.torn.map(|t| TornLine {
                line: t.line + first.lines,
                ..t
            });
            vec![first, second]
        }
    };
    let torn = parts.last_mut().and_then(|p| p.torn.take());
    if let Some(ctx) = spill.filter(|_| parts.iter().any(|p| p.spiller.is_some())) {
        let dir = ctx.dir().map_err(|source| spill_error(ctx, source))?;
        let parts: Vec<SpilledPart> = parts
            .into_iter()
            .enumerate()
            .map(|(j, p)| SpilledPart {
                spiller: p.spiller.unwrap_or_else(|| {
                    RowSpiller::new(dir.clone(), ctx.opts.run_rows, &j.to_string())
                }),
                rows: p.rows,
                plotted: p
                    .plotted
                    .into_iter()
                    .flat_map(|(v, traces)| traces.into_iter().map(move |t| (v.clone(), t)))
                    .collect(),
            })
            .collect();
        let rows = SpilledRows::finish(dir, parts, &ctx.rank)
            .map_err(|source| spill_error(ctx, source))?;
        return Ok(Loaded::Spilled(rows, torn));
    }
    let mut parts = parts.into_iter();
    let first = parts.next().expect("one part at least");
    let mut rows = match parts.next() {
        None => first.rows,
        Some(second) => {
            let plotted = first.plotted;
            let mut rows = first.rows;
            rows.shrink_to_fit();
            // A timeline the first half already kept for its variant × trace is not kept
            // again.
            rows.append(second.rows, |r| {
                !plotted
                    .get(r.variant)
                    .is_some_and(|t| t.contains(r.trace_id))
            });
            rows
        }
    };
    rows.shrink_to_fit();
    Ok(Loaded::Rows(Streamed { rows, torn }))
}

/// An error of the spill's temporary files, named by their directory.
fn spill_error(ctx: &SpillCtx, source: std::io::Error) -> JournalError {
    let dir = ctx
        .dir
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let path = match &*dir {
        Some(d) => d.path().to_path_buf(),
        None => ctx.opts.dir.clone().unwrap_or_else(std::env::temp_dir),
    };
    JournalError::Io { path, source }
}

/// Where to split a journal for [`stream_samples`]: the start of the first line past its
/// middle; `None` for a small journal or one without such a line.
fn split_point(path: &Path, split_at_least: u64) -> Result<Option<u64>, JournalError> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len < split_at_least.max(1) {
        return Ok(None);
    }
    let mid = len / 2;
    file.seek(SeekFrom::Start(mid)).map_err(io)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = mid;
    loop {
        let n = match file.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        if n == 0 {
            return Ok(None);
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            let next = at + i as u64 + 1;
            return Ok((next < len).then_some(next));
        }
        at += n as u64;
    }
}

/// What [`stream_range`] read of one part of a journal.
struct Part {
    rows: Rows,
    torn: Option<TornLine>,
    /// Lines read (blank ones too).
    lines: usize,
    /// variant → traces whose timeline is kept.
    plotted: HashMap<String, HashSet<String>>,
    /// The runs the rows went to, once the part spilled.
    spiller: Option<RowSpiller>,
}

/// The rows of the lines of `range` of a journal (see [`read_journal_range`]); with `spill`,
/// past its share of rows the part writes them to sorted runs.
fn stream_range(
    path: &Path,
    range: std::ops::Range<u64>,
    spill: Option<&SpillCtx>,
) -> Result<Part, JournalError> {
    let mut rows = RowLoader::default();
    let mut spiller: Option<RowSpiller> = None;
    let mut failed: Option<std::io::Error> = None;
    let name = range.start.to_string();
    let read = read_journal_range(path, range, |text, at| {
        let version = rows.line(text, at)?;
        let Some(ctx) = spill else {
            return Ok(version);
        };
        let step = match &mut spiller {
            Some(s) if s.full(&rows.rows) => s.spill(&mut rows.rows, &ctx.rank),
            Some(_) => Ok(()),
            None if rows.rows.len() > ctx.above => ctx.dir().and_then(|dir| {
                let s = spiller.insert(RowSpiller::new(dir, ctx.opts.run_rows, &name));
                s.spill(&mut rows.rows, &ctx.rank)
            }),
            None => Ok(()),
        };
        match step {
            Ok(()) => Ok(version),
            Err(e) => {
                failed = Some(e);
                Err("cannot write the report's temporary files".to_string())
            }
        }
    });
    if let (Some(source), Some(ctx)) = (failed, spill) {
        return Err(spill_error(ctx, source));
    }
    let (torn, lines) = read?;
    Ok(Part {
        rows: rows.rows,
        torn,
        lines,
        plotted: rows.plotted,
        spiller,
    })
}

/// Journal lines to compact rows, one line at a time, as [`stream_samples`] reads them: what
/// `ctxbench run` builds as it writes its journal, so that the end of the run reads it no more
/// ([`RowLoader::finish`] equals [`stream_samples`] of the same lines).
#[derive(Default)]
pub struct RowLoader {
    rows: Rows,
    /// variant → traces whose timeline is kept.
    plotted: HashMap<String, HashSet<String>>,
}

impl RowLoader {
    /// Add the journal line `text` (without its newline), which starts at byte `at` of the
    /// journal; returns its schema version (a newer one than this build's is not added: the
    /// caller refuses it).
    pub fn line(&mut self, text: &[u8], at: u64) -> Result<u32, String> {
        let (rows, plotted) = (&mut self.rows, &mut self.plotted);
        if let Some(light) = super::scan::light(text) {
            let keep = light.timeline > 0
                && light.error.is_none()
                && !plotted
                    .get(light.variant.as_ref())
                    .is_some_and(|t| t.contains(light.trace_id.as_ref()));
            if !keep {
                if let Some(priced) = rows.priced_raw(light.window, light.priced_as) {
                    let version = light.schema_version;
                    if version <= crate::record::SCHEMA_VERSION {
                        let detail = RowDetail {
                            offset: Some(at),
                            timeline_points: light.timeline,
                            loaded: false,
                        };
                        rows.push_light(light, priced, detail);
                    }
                    return Ok(version);
                }
            }
        }
        let c: Compact = serde_json::from_slice(text).map_err(|e| e.to_string())?;
        let version = c.schema_version;
        let points = c.timeline;
        let mut sample = c.into_sample();
        let mut loaded = false;
        if points > 0
            && sample.error.is_none()
            && !plotted
                .get(&sample.variant)
                .is_some_and(|t| t.contains(&sample.trace_id))
        {
            // The one timeline per variant × trace the context plots draw.
            let full: Sample = serde_json::from_slice(text).map_err(|e| e.to_string())?;
            plotted
                .entry(sample.variant.clone())
                .or_default()
                .insert(sample.trace_id.clone());
            sample = full;
            loaded = true;
        }
        if version <= crate::record::SCHEMA_VERSION {
            rows.push(
                sample,
                RowDetail {
                    offset: Some(at),
                    timeline_points: points,
                    loaded,
                },
            );
        }
        Ok(version)
    }

    /// Rows added.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The row of the last line added, if it was added.
    pub fn last(&self) -> Option<crate::record::Row<'_>> {
        self.rows.len().checked_sub(1).map(|i| self.rows.get(i))
    }

    /// The rows, as [`stream_samples`] returns them.
    pub fn finish(self) -> Streamed {
        let mut rows = self.rows;
        rows.shrink_to_fit();
        Streamed { rows, torn: None }
    }
}

/// The compact part of one journal line (timeline, summaries and all but the pricing part of
/// the evidence skipped unbuilt) and its schema version.
pub fn parse_light(text: &[u8]) -> Result<(Sample, u32), String> {
    let c: Compact = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    let version = c.schema_version;
    Ok((c.into_sample(), version))
}

/// Stream `samples.jsonl` one line at a time: `each` gets the compact part of every sample
/// ([`parse_light`]) and its line's byte offset, and keeps what it needs (totals, counts, an
/// index); nothing else stays in memory. Lines of a newer schema version are an error, as in
/// every reader; a torn final line is returned.
pub fn each_light(
    path: &Path,
    mut each: impl FnMut(Sample, u64),
) -> Result<Option<TornLine>, JournalError> {
    read_journal_each(path, |text, at| {
        let (sample, version) = parse_light(text)?;
        if version <= crate::record::SCHEMA_VERSION {
            each(sample, at);
        }
        Ok(version)
    })
}

/// A saved run's report model from one streaming pass, with the heavy part of the samples
/// [`detail_wanted`] names loaded; and the torn final line of the journal, if any.
pub fn load_model(
    run_dir: &RunDir,
) -> Result<(RunInfo, ReportModel, Option<TornLine>), JournalError> {
    load_model_with(run_dir, None)
}

/// Attempts `samples.replaced.jsonl` holds, which the journal does not: failed attempts
/// `run --resume --retry-failed` took out of it, and units cancelled while running (error kind
/// `interrupted`), with the dollars each kind spent on model calls.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Replaced {
    pub retried: u64,
    pub retried_usd: f64,
    pub cancelled: u64,
    pub cancelled_usd: f64,
}

impl Replaced {
    /// Every attempt of the file.
    pub fn attempts(&self) -> u64 {
        self.retried + self.cancelled
    }

    /// What every attempt of the file spent.
    pub fn usd(&self) -> f64 {
        self.retried_usd + self.cancelled_usd
    }
}

/// Read [`Replaced`] from `path`; a missing file: none.
pub fn replaced_attempts(path: &std::path::Path) -> std::io::Result<Replaced> {
    use std::io::BufRead;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Replaced::default()),
        Err(e) => return Err(e),
    };
    let mut r = Replaced::default();
    for line in std::io::BufReader::new(file).split(b'\n') {
        if let Ok((s, _)) = parse_light(line?.trim_ascii_end()) {
            let usd = s.cost_usd.spent();
            if s.error.as_ref().is_some_and(|e| e.kind == "interrupted") {
                r.cancelled += 1;
                r.cancelled_usd += usd;
            } else {
                r.retried += 1;
                r.retried_usd += usd;
            }
        }
    }
    Ok(r)
}

/// [`load_model`], from the journal's rows when the caller has them (`ctxbench run` built them
/// as it wrote the journal: [`RowLoader`]) instead of streaming the journal.
pub fn load_model_with(
    run_dir: &RunDir,
    rows: Option<Streamed>,
) -> Result<(RunInfo, ReportModel, Option<TornLine>), JournalError> {
    load_model_opts(run_dir, rows, &LoadOptions::default())
}

/// How [`load_model_opts`] loads a run.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// When the rows leave memory for sorted runs on disk (`report::spill`: the report of a
    /// big run in bounded memory, byte-identical to the in-memory one).
    pub spill: SpillOptions,
}

/// [`load_model_with`], spilling as `opts` says when it streams the journal.
pub fn load_model_opts(
    run_dir: &RunDir,
    rows: Option<Streamed>,
    opts: &LoadOptions,
) -> Result<(RunInfo, ReportModel, Option<TornLine>), JournalError> {
    let info: RunInfo = run_dir.read_run_json()?;
    let path = run_dir.samples_jsonl();
    let loaded = match rows {
        Some(rows) => Loaded::Rows(rows),
        None => {
            let variants = info.variants.clone();
            let ctx = SpillCtx {
                opts: opts.spill.clone(),
                above: opts.spill.above,
                dir: std::sync::Mutex::new(None),
                rank: Box::new(move |v: &str| {
                    variants.iter().position(|x| x == v).unwrap_or(usize::MAX)
                }),
            };
            let split = split_point(&path, SPLIT_AT_LEAST)?;
            // Each half of a split journal keeps its half of the rows in memory.
            let ctx = SpillCtx {
                above: ctx.above / if split.is_some() { 2 } else { 1 },
                ..ctx
            };
            stream_split(&path, SPLIT_AT_LEAST, Some(&ctx))?
        }
    };
    let progress = run_dir.read_progress()?;
    let (mut model, torn, want) = match loaded {
        Loaded::Rows(streamed) => {
            let model = ReportModel::build_rows(&info, streamed.rows, Some(path));
            (model, streamed.torn, None)
        }
        Loaded::Spilled(rows, torn) => {
            let dir = rows.dir().path().to_path_buf();
            let model =
                ReportModel::build_spilled(&info, rows, path, opts.spill.run_rows.max(1) * 4)
                    .map_err(|source| JournalError::Io { path: dir, source })?;
            // Every row it kept is shown in full or plotted.
            let all: Vec<usize> = (0..model.samples.len()).collect();
            (model, torn, Some(all))
        }
    };
    model.note_progress(&progress);
    // A missing or unreadable file of replaced attempts only loses the note.
    if let Ok(replaced) = replaced_attempts(&run_dir.replaced_jsonl()) {
        model.note_replaced(&replaced);
    }
    let want = want.unwrap_or_else(|| detail_wanted(&model));
    model.load_detail(&want)?;
    Ok((info, model, torn))
}

/// Indices of `model.samples` whose heavy part the HTML shows in full: the HTML's own rule
/// (`html::select`: failed and flagged units, the units of a few pairing keys in every variant,
/// a few failed verdicts per variant with their baseline units), bounded whatever the run's
/// size.
pub fn detail_wanted(model: &ReportModel) -> Vec<usize> {
    let mut out = model.shown().0.to_vec();
    out.sort_unstable();
    out
}

/// Re-read the full samples at `offsets` of the journal at `path` (one seek each), in order.
/// Parsing whole samples is most of this pass: the offsets are read in chunks on rayon's pool,
/// each chunk with its own open file.
pub(super) fn read_full(path: &Path, offsets: &[u64]) -> Result<Vec<Sample>, JournalError> {
    use rayon::prelude::*;
    const CHUNK: usize = 8;
    let chunks: Vec<Vec<Sample>> = offsets
        .par_chunks(CHUNK)
        .map(|chunk| {
            let mut file = std::fs::File::open(path).map_err(|source| JournalError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            chunk
                .iter()
                .map(|&at| read_line_at(&mut file, path, at))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<_, _>>()?;
    Ok(chunks.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{TimelinePoint, UnitError};

    /// A run directory with its run.json: variants `a` and `b`.
    fn run_of_two_variants(dir: &Path) -> (RunDir, RunInfo) {
        let run = RunDir::new(dir);
        let mut info = RunInfo::new("r");
        info.variants = vec!["a".into(), "b".into()];
        std::fs::write(run.run_json(), serde_json::to_string(&info).unwrap()).unwrap();
        (run, info)
    }

    fn sample(i: u32, variant: &str) -> Sample {
        let mut s = Sample::builder()
            .unit_id(format!("{variant}/u{i}"))
            .variant(variant)
            .trace(format!("t{}", i % 3))
            .sample(format!("s{i}"))
            .score("recall", f64::from(i % 2))
            .passed(i % 2 == 1)
            .evidence(serde_json::json!({"answer": "x\ny", "i": i}))
            .build();
        s.tokens.agent.input = 100 + u64::from(i);
        s.timeline = (0..3)
            .map(|k| TimelinePoint {
                trace_index: k,
                tokens: 10 * (k as u64 + 1),
                reference_tokens: None,
                events: vec![],
                details: vec![],
            })
            .collect();
        if i == 4 {
            s.error = Some(UnitError {
                kind: "timeout".into(),
                message: "slow".into(),
            });
        }
        s
    }

    #[test]
    fn streamed_model_equals_the_in_memory_one_and_loads_detail_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let (run, info) = run_of_two_variants(dir.path());
        let samples: Vec<Sample> = (0..12)
            .flat_map(|i| [sample(i, "a"), sample(i, "b")])
            .collect();
        run.write_samples(&samples).unwrap();

        let full = ReportModel::build(&info, samples.clone());
        let (_, mut streamed, torn) = load_model(&run).unwrap();
        assert!(torn.is_none());
        // Same statistics and JSON summary.
        assert_eq!(
            serde_json::to_value(&full).unwrap(),
            serde_json::to_value(&streamed).unwrap()
        );
        // Compact parts equal; heavy parts loaded for the wanted rows only.
        let wanted: HashSet<usize> = detail_wanted(&streamed).into_iter().collect();
        assert!(
            wanted.len() == 24,
            "12 pairing keys, each shown in both variants: {wanted:?}"
        );
        for (i, (f, s)) in full.samples.iter().zip(&streamed.samples).enumerate() {
            assert_eq!(f.unit_id, s.unit_id);
            assert_eq!(f.scores.to_map(), s.scores.to_map());
            assert_eq!(f.tokens, s.tokens);
            assert!(streamed.has_detail(i));
            assert_eq!(f.to_sample(), s.to_sample(), "loaded in full");
        }
        // Forget the heavy part of one row, then load it back by offset.
        streamed.samples.forget_detail(3);
        assert!(!streamed.has_detail(3));
        assert!(streamed.samples.get(3).timeline.is_empty());
        streamed.load_detail(&[3]).unwrap();
        assert_eq!(
            streamed.samples.get(3).to_sample(),
            full.samples.get(3).to_sample()
        );
    }

    /// What `ctxbench run` builds as it writes its journal equals what reading the journal
    /// gives: every row (compact and heavy part), where it is, and the model's statistics.
    #[test]
    fn rows_built_as_the_journal_is_written_equal_the_rows_read_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let (run, _) = run_of_two_variants(dir.path());
        let mut samples: Vec<Sample> = (0..30)
            .map(|i| sample(i, if i % 3 == 0 { "b" } else { "a" }))
            .collect();
        samples[7]
            .params
            .insert("late".into(), serde_json::json!({"x": [1, 2]}));
        let mut journal = crate::record::journal::Journal::create(&run.samples_jsonl()).unwrap();
        let mut built = RowLoader::default();
        for s in &samples {
            journal.append(s).unwrap();
            let v = built
                .line(journal.last_line(), journal.last_line_at())
                .unwrap();
            assert_eq!(v, crate::record::SCHEMA_VERSION);
            assert_eq!(built.last().unwrap().unit_id, s.unit_id);
        }
        let built = built.finish();
        let read = stream_samples(&run.samples_jsonl()).unwrap();
        assert_eq!(built.rows.len(), 30);
        for i in 0..30 {
            assert_eq!(
                built.rows.get(i).to_sample(),
                read.rows.get(i).to_sample(),
                "row {i}"
            );
            assert_eq!(built.rows.detail(i), read.rows.detail(i), "row {i}");
        }
        let (_, from_rows, _) = load_model_with(&run, Some(built)).unwrap();
        let (_, from_file, _) = load_model(&run).unwrap();
        assert_eq!(
            serde_json::to_value(&from_rows).unwrap(),
            serde_json::to_value(&from_file).unwrap()
        );
    }

    fn in_memory(l: Loaded) -> Streamed {
        match l {
            Loaded::Rows(r) => r,
            Loaded::Spilled(..) => panic!("spilled without a spill context"),
        }
    }

    #[test]
    fn a_journal_read_in_two_halves_gives_the_rows_of_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        // Traces t0..t2 in both halves, so the second half's first timelines are not kept.
        let mut samples: Vec<Sample> = (0..40)
            .map(|i| sample(i, if i % 3 == 0 { "b" } else { "a" }))
            .collect();
        samples[25]
            .params
            .insert("late".into(), serde_json::json!({"x": [1, 2]}));
        samples[31].tokens.judge.output = u64::from(u32::MAX) + 7;
        run.write_samples(&samples).unwrap();
        let path = run.samples_jsonl();
        let one = in_memory(stream_split(&path, u64::MAX, None).unwrap());
        let two = in_memory(stream_split(&path, 1, None).unwrap());
        assert!(split_point(&path, 1).unwrap().is_some());
        assert_eq!(one.rows.len(), 40);
        assert_eq!(two.rows.len(), 40);
        for i in 0..40 {
            let (a, b) = (one.rows.get(i), two.rows.get(i));
            assert_eq!(a.to_sample(), b.to_sample(), "row {i}");
            assert_eq!(one.rows.detail(i), two.rows.detail(i), "row {i}");
        }
        let mut sorted = (one.rows.clone(), two.rows.clone());
        sorted.0.sort(|v| usize::from(v == "a"));
        sorted.1.sort(|v| usize::from(v == "a"));
        let ids = |r: &Rows| r.iter().map(|s| s.unit_id.to_string()).collect::<Vec<_>>();
        assert_eq!(ids(&sorted.0), ids(&sorted.1));

        // A bad line in the second half is reported with its line number in the file, and a
        // torn last line likewise.
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[33] = "{not json";
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let err = stream_split(&path, 1, None).err().unwrap().to_string();
        assert!(err.contains("samples.jsonl:34:"), "{err}");
        lines[33] = lines[32];
        std::fs::write(&path, lines.join("\n") + "\n{\"torn").unwrap();
        let torn = in_memory(stream_split(&path, 1, None).unwrap())
            .torn
            .unwrap();
        assert_eq!(torn.line, 41);
    }

    /// Rows spilled to sorted runs (one part or two, runs of one row to more than the rows,
    /// enough runs to be merged in rounds) come back in report order as the rows sorted in
    /// memory: every field, where its line is, and whether its timeline is the one kept for
    /// the context plots.
    #[test]
    fn spilled_rows_come_back_in_report_order_as_the_sorted_rows() {
        let dir = tempfile::tempdir().unwrap();
        let (run, info) = run_of_two_variants(dir.path());
        let mut samples: Vec<Sample> = (0..150)
            .map(|i| sample(i % 37, ["b", "a", "zz", "c"][i as usize % 4]))
            .collect();
        samples[9]
            .params
            .insert("late".into(), serde_json::json!({"x": [1, 2]}));
        samples[31].tokens.judge.output = u64::from(u32::MAX) + 7;
        samples[40].cost_usd.agent = None;
        run.write_samples(&samples).unwrap();
        let path = run.samples_jsonl();
        let mut sorted = in_memory(stream_split(&path, u64::MAX, None).unwrap()).rows;
        let mut order = info.variants.clone();
        order.extend(["c".to_string(), "zz".to_string()]);
        sorted.sort(|v| order.iter().position(|x| x == v).unwrap_or(usize::MAX));
        for (split, run_rows) in [(u64::MAX, 1), (1, 1), (1, 7), (u64::MAX, 1000)] {
            let ctx = SpillCtx {
                opts: SpillOptions {
                    above: 0,
                    run_rows,
                    dir: Some(dir.path().to_path_buf()),
                },
                above: 0,
                dir: std::sync::Mutex::new(None),
                rank: {
                    let variants = info.variants.clone();
                    Box::new(move |v: &str| {
                        variants.iter().position(|x| x == v).unwrap_or(usize::MAX)
                    })
                },
            };
            let Loaded::Spilled(spilled, _) = stream_split(&path, split, Some(&ctx)).unwrap()
            else {
                panic!("spilled");
            };
            assert_eq!(spilled.len(), 150);
            let mut n = 0;
            spilled
                .for_each(|i, row, detail, plotted| {
                    assert_eq!(i, n);
                    n += 1;
                    let want = sorted.get(i).to_sample();
                    let mut got = row.to_sample();
                    // The heavy part is loaded again by offset.
                    (got.timeline, got.evidence) = (want.timeline.clone(), want.evidence.clone());
                    assert_eq!(got, want, "row {i} ({split}, {run_rows})");
                    let d = sorted.detail(i);
                    assert_eq!(
                        (detail.offset, detail.timeline_points),
                        (d.offset, d.timeline_points)
                    );
                    assert_eq!(plotted, d.loaded, "row {i} ({split}, {run_rows})");
                })
                .unwrap();
            assert_eq!(n, 150);
        }
    }

    /// A load that fails after it spilled (a bad line past the first runs) leaves no
    /// temporary file behind.
    #[test]
    fn a_failed_spilled_load_removes_its_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let (run, _) = run_of_two_variants(dir.path());
        let samples: Vec<Sample> = (0..60).map(|i| sample(i, "a")).collect();
        run.write_samples(&samples).unwrap();
        let text = std::fs::read_to_string(run.samples_jsonl()).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[50] = "{not json";
        std::fs::write(run.samples_jsonl(), lines.join("\n") + "\n").unwrap();
        let spill = dir.path().join("spill");
        std::fs::create_dir_all(&spill).unwrap();
        let mut opts = LoadOptions::default();
        (opts.spill.above, opts.spill.run_rows) = (0, 4);
        opts.spill.dir = Some(spill.clone());
        let err = load_model_opts(&run, None, &opts)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("samples.jsonl:51:"), "{err}");
        assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
        // And a good load leaves none either once its model is dropped.
        lines[50] = lines[49];
        std::fs::write(run.samples_jsonl(), lines.join("\n") + "\n").unwrap();
        let (_, model, _) = load_model_opts(&run, None, &opts).unwrap();
        assert!(model.spilled());
        assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 1);
        drop(model);
        assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
    }

    /// A unit journaled twice (its copy with other figures, later in the file) counts once, by
    /// its first line, in every figure of the model and in results.csv: in memory and spilled
    /// alike, the same as the journal without the copy but for the note.
    #[test]
    fn a_unit_journaled_twice_counts_once_in_memory_and_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let (run, info) = run_of_two_variants(dir.path());
        let samples: Vec<Sample> = (0..30)
            .map(|i| sample(i, ["a", "b"][i as usize % 2]))
            .collect();
        let view = |opts: &LoadOptions| {
            let (_, model, _) = load_model_opts(&run, None, opts).unwrap();
            let mut csv = Vec::new();
            crate::report::csv::write(&info, &model, &mut csv).unwrap();
            (model.units, serde_json::to_value(&model).unwrap(), csv)
        };
        let spilled = {
            let mut opts = LoadOptions::default();
            (opts.spill.above, opts.spill.run_rows) = (0, 4);
            opts.spill.dir = Some(dir.path().to_path_buf());
            opts
        };
        run.write_samples(&samples).unwrap();
        let (units, json, csv) = view(&LoadOptions::default());
        assert_eq!(units, 30);

        let mut copy = samples[3].clone();
        copy.tokens.agent.input += 1000;
        copy.scores.insert("recall".into(), 0.5);
        let mut journal = samples.clone();
        journal.insert(20, copy);
        std::fs::remove_file(run.samples_jsonl()).unwrap();
        run.write_samples(&journal).unwrap();
        for opts in [LoadOptions::default(), spilled] {
            let (dup_units, mut dup_json, dup_csv) = view(&opts);
            let notes = dup_json["notes"].as_array_mut().unwrap();
            let note = notes.remove(0);
            assert!(
                note.as_str().unwrap().starts_with(
                    "1 unit(s) appear more than once in the journal (same variant, trace, eval, \
                     sample and repeat); only the first line of each counts"
                ),
                "{note}"
            );
            assert_eq!((dup_units, &dup_json), (units, &json));
            assert_eq!(
                String::from_utf8(dup_csv).unwrap(),
                String::from_utf8(csv.clone()).unwrap()
            );
        }
    }

    #[test]
    fn the_first_pass_keeps_one_timeline_per_variant_and_trace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        let run = RunDir::new(dir.path());
        let samples: Vec<Sample> = (0..12).map(|i| sample(i, "a")).collect();
        run.write_samples(&samples).unwrap();
        assert_eq!(run.samples_jsonl(), path);
        let s = stream_samples(&path).unwrap();
        let rows = &s.rows;
        let loaded: Vec<&str> = (0..rows.len())
            .filter(|&i| rows.has_detail(i))
            .map(|i| rows.get(i).unit_id)
            .collect();
        // Traces t0, t1, t2: their first successful sample (u4 failed, so not t1's u4).
        assert_eq!(loaded, ["a/u0", "a/u1", "a/u2"]);
        assert!((0..rows.len()).all(|i| rows.detail(i).timeline_points == 3));
        assert!(rows.get(5).timeline.is_empty() && rows.get(5).evidence.is_null());
    }
}
