//! The report of a big run in bounded memory: compact rows and per-metric observations leave
//! memory for temporary files, sorted in runs of a fixed size, and come back through k-way
//! merges in the order the in-memory path sorts them (rows: variant order, trace, eval, sample,
//! repeat, line; observations: variant, metric, pairing key, row), so every sum is taken in
//! the same order and every file is byte-identical to the in-memory report's
//! (docs/report.md, "Reports of big runs").
//!
//! What stays in memory: the names and distinct values the rows refer to, one run being
//! filled, one read buffer and one record per run being merged.

use super::model::RowDetail;
use super::rows::{encoded_key, IdMap, Rows};
use crate::metrics::aggregate::Obs;
use crate::record::Row;
use std::cell::RefCell;
use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// When and where a report spills (see the module doc).
#[derive(Clone, Debug)]
pub struct SpillOptions {
    /// Keep a run of at most this many samples in memory (the fast path); above it, spill.
    pub above: usize,
    /// Rows (and observations) per sorted run.
    pub run_rows: usize,
    /// Where the temporary files go (a directory created inside it, removed when done, also on
    /// error); `None`: `std::env::temp_dir()`.
    pub dir: Option<PathBuf>,
}

/// Runs of up to this many samples are reported in memory by default (the fast path: 100,000
/// samples take ~0.7 s and ~110 MiB that way; benches/README.md, "Reports of big runs").
pub const SPILL_ABOVE: usize = 200_000;
/// Rows per sorted run by default (~5 MiB of encoded rows; a spilled report of 1,000,000
/// quickstart samples peaks at ~45 MiB with it, at ~130 MiB with runs of 65,536).
pub const RUN_ROWS: usize = 16_384;
/// Most runs merged at once: more are merged into longer runs first, so the read buffers of a
/// merge stay bounded.
const FAN_IN: usize = 64;
/// Read buffer of one run being merged.
const READ_BUF: usize = 64 * 1024;

impl Default for SpillOptions {
    fn default() -> Self {
        SpillOptions {
            above: SPILL_ABOVE,
            run_rows: RUN_ROWS,
            dir: None,
        }
    }
}

/// Name of the lock file inside a spill directory (see [`TempDir`]).
const LOCK_FILE: &str = ".lock";
/// A leftover spill directory whose owner cannot be told by its lock (one from before the lock
/// file, one whose owner was killed before it wrote its pid, or one on a file system without
/// locks) is removed only when it has not changed for this long and its pid is not running.
const UNLOCKED_LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// A temporary directory, removed with everything in it when dropped.
///
/// Its owner holds an exclusive advisory lock (`File::lock`: `flock` on Unix, `LockFileEx` on
/// Windows) on `.lock` inside it, which holds the owner's pid, for the directory's whole
/// life. The operating system drops the lock with the process however it ends, so a directory
/// left by a killed process (SIGKILL, the OOM killer) is one whose lock is free: the next
/// [`TempDir::new`] in the same parent removes it (docs/report.md, "Reports of big runs").
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    /// The locked `.lock` (`None` only while the directory is being made).
    lock: Option<std::fs::File>,
}

impl TempDir {
    /// A new directory `ctxbench-spill-<pid>-<nanos>-<n>` in `parent` (`None`: the system's
    /// temporary directory), locked; then the leftovers of dead processes in `parent` are
    /// removed (best effort, each one noted on stderr).
    pub fn new(parent: Option<&Path>) -> std::io::Result<TempDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = parent.join(format!(
            "ctxbench-spill-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // The files hold names and scores from the run's traces (untrusted, maybe private):
        // readable by this user only where the platform has modes.
        let mut dir = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut dir, 0o700);
        dir.create(&path)?;
        // From here on an error removes the directory (drop).
        let mut dir = TempDir { path, lock: None };
        dir.lock = Some(lock_new(&dir.path)?);
        remove_leftovers(&parent, &dir.path);
        Ok(dir)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Removed while still locked, so no other process takes it for a leftover meanwhile;
        // where an open file cannot be removed (Windows), again once the lock file is closed.
        let _ = std::fs::remove_dir_all(&self.path);
        if self.lock.take().is_some() && std::fs::symlink_metadata(&self.path).is_ok() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Creates and locks the lock file of new spill directory `dir`, then writes this process's
/// pid in it: a lock file with a pid was locked by its owner, so when it is free the owner is
/// gone. (A process cleaning up may hold it for an instant before the pid is there: it then
/// leaves the directory alone, and this waits for it.) On a file system without locks, the pid
/// alone.
fn lock_new(dir: &Path) -> std::io::Result<std::fs::File> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(dir.join(LOCK_FILE))?;
    match file.lock() {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {}
        Err(e) => return Err(e),
    }
    writeln!(file, "{}", std::process::id())?;
    Ok(file)
}

/// The pid in `name` when it is exactly a spill directory's name, `ctxbench-spill-<pid>-<nanos>-<n>`
/// (ASCII digits).
fn leftover_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("ctxbench-spill-")?;
    let parts: Vec<&str> = rest.split('-').collect();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if parts.len() != 3 || !parts.iter().all(|p| digits(p)) {
        return None;
    }
    parts[0].parse().ok()
}

/// Removes the spill directories in `parent` whose owner is gone, other than `own` (see
/// [`abandoned`]). Best effort: an entry that cannot be read or told is left alone, and nothing
/// here fails the caller; each directory removed is noted on stderr, one that could not be
/// removed fully is warned about.
fn remove_leftovers(parent: &Path, own: &Path) {
    let Ok(own_meta) = std::fs::symlink_metadata(own) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = entry.file_name().to_str().and_then(leftover_pid) else {
            continue;
        };
        if path == own {
            continue;
        }
        let Some(lock) = abandoned(&path, pid, &own_meta) else {
            continue;
        };
        // The leftover's lock (if any) is held while it goes; where an open file cannot be
        // removed (Windows), again once it is closed.
        let mut removed = std::fs::remove_dir_all(&path);
        if lock.is_some() && removed.is_err() {
            drop(lock);
            removed = std::fs::remove_dir_all(&path);
        }
        match removed {
            Ok(()) => crate::output::errln!(
                "note: removed {}: temporary files of a ctxbench process (pid {pid}) that ended \
                 without removing them",
                path.display()
            ),
            // Another process removed it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => crate::output::errln!(
                "warning: cannot remove all of {} (temporary files of a ctxbench process, pid \
                 {pid}, that ended without removing them): {e}",
                path.display()
            ),
        }
    }
}

/// Whether spill directory `path` (named with `pid`) was left by a process that is gone:
/// `Some(its lock file, locked by us)` when it is, `Some(None)` for one without a lock to hold.
/// Never for a symlink or anything but a directory, nor for one another user owns (`own` is the
/// new directory's metadata, whose owner is this process's user). A directory with a lock file
/// holding a pid is abandoned when its lock is free; one whose owner cannot be told so (no lock
/// file, from before it; no pid in it; a file system without locks) when it has not changed for
/// [`UNLOCKED_LEFTOVER_AGE`] and its pid is not running (where that can be told).
fn abandoned(path: &Path, pid: u32, own: &std::fs::Metadata) -> Option<Option<std::fs::File>> {
    use std::fs::TryLockError;
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.uid() != own.uid() {
            return None;
        }
    }
    #[cfg(not(unix))]
    let _ = own;
    let stale = || {
        let old = meta
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= UNLOCKED_LEFTOVER_AGE);
        (old && !crate::record::lock::pid_alive(pid)).then_some(None)
    };
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    // Never through a symlink, and never blocking on a FIFO.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut open, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let mut file = match open.open(path.join(LOCK_FILE)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return stale(),
        Err(_) => return None,
    };
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
            return stale()
        }
        Err(_) => return None,
    }
    let mut text = String::new();
    let has_pid = file.read_to_string(&mut text).is_ok() && text.trim().parse::<u32>().is_ok();
    if has_pid {
        Some(Some(file))
    } else {
        stale()
    }
}

/// Length-prefixed records, written one after the other.
fn put_record(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    let n = u32::try_from(bytes.len()).map_err(std::io::Error::other)?;
    w.write_all(&n.to_le_bytes())?;
    w.write_all(bytes)
}

/// The next length-prefixed record into `buf`; `false` at the end of the file.
fn next_record(r: &mut impl Read, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    buf.resize(u32::from_le_bytes(len) as usize, 0);
    r.read_exact(buf)?;
    Ok(true)
}

/// One sorted run of encoded rows, and whose ids they carry.
#[derive(Debug)]
struct RowRun {
    path: PathBuf,
    /// Index of the [`IdMap`] of the store the rows were encoded from.
    source: usize,
}

/// Rows sorted into runs on disk (see the module doc): filled by a loader
/// (`RowSpiller`), then read back in report order by [`SpilledRows::for_each`].
#[derive(Debug)]
pub struct SpilledRows {
    dir: Arc<TempDir>,
    runs: Vec<RowRun>,
    /// The names and values every row refers to (no rows).
    dict: Rows,
    /// Per source, its ids in `dict` (`None`: `dict`'s own).
    maps: Vec<Option<IdMap>>,
    /// Per source, the (variant, trace) name ids whose rows' kept timeline does not count:
    /// an earlier part of the journal kept that variant × trace's.
    unplotted: Vec<HashSet<(u32, u32)>>,
    /// Variant rank of every name id of `dict`, then its place in string order.
    ranks: Vec<(usize, u32)>,
    len: usize,
}

/// Writes the rows of one loader into sorted runs.
pub(super) struct RowSpiller {
    dir: Arc<TempDir>,
    run_rows: usize,
    runs: Vec<PathBuf>,
    spilled: usize,
    name: String,
}

/// Sort key of an encoded row against `ranks`: variant rank and name place, the trace's,
/// eval's and sample's places, repeat, offset.
type SortKey = (usize, u32, u32, u32, u32, u32, u64);

fn sort_key(bytes: &[u8], map: Option<&IdMap>, ranks: &[(usize, u32)]) -> SortKey {
    let (ids, repeat, offset) = encoded_key(bytes);
    let [v, t, e, s] = ids.map(|id| {
        let id = map.map_or(id, |m| m.name(id));
        ranks[id as usize]
    });
    (v.0, v.1, t.1, e.1, s.1, repeat, offset)
}

impl RowSpiller {
    pub(super) fn new(dir: Arc<TempDir>, run_rows: usize, name: &str) -> RowSpiller {
        RowSpiller {
            dir,
            run_rows: run_rows.max(1),
            runs: Vec::new(),
            spilled: 0,
            name: name.to_string(),
        }
    }

    /// Whether `rows` holds a run's worth.
    pub(super) fn full(&self, rows: &Rows) -> bool {
        rows.len() >= self.run_rows
    }

    /// Write the rows of `rows` sorted (by `rank` of their variant, then as [`Rows::sort`])
    /// as one run, and take them out of `rows`.
    pub(super) fn spill(
        &mut self,
        rows: &mut Rows,
        rank: &dyn Fn(&str) -> usize,
    ) -> std::io::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let ranks = rows.name_ranks(rank);
        let mut encoded: Vec<Vec<u8>> = Vec::with_capacity(rows.len());
        for i in 0..rows.len() {
            let mut b = Vec::with_capacity(256);
            rows.encode(i, rows.has_detail(i), &mut b);
            encoded.push(b);
        }
        encoded.sort_unstable_by_key(|b| sort_key(b, None, &ranks));
        let path = self
            .dir
            .file(&format!("rows-{}-{}", self.name, self.runs.len()));
        let mut w = BufWriter::with_capacity(256 * 1024, std::fs::File::create(&path)?);
        for b in &encoded {
            put_record(&mut w, b)?;
        }
        w.flush()?;
        self.runs.push(path);
        self.spilled += rows.len();
        let was_big = rows.len() > self.run_rows;
        rows.clear_rows();
        if was_big {
            // The rows kept before the part spilled: give their room back, the runs after
            // need a run's worth.
            rows.shrink_to_fit();
        }
        Ok(())
    }

    pub(super) fn spilled(&self) -> usize {
        self.spilled
    }
}

/// One loader's part of a spilled load: its spiller (rows written) and its store (names,
/// values, and the rows not yet written), and the variant × trace whose timeline it kept.
pub(super) struct SpilledPart {
    pub spiller: RowSpiller,
    pub rows: Rows,
    pub plotted: HashSet<(String, String)>,
}

impl SpilledRows {
    /// The spilled rows of the parts of a journal, in file order; each part's last rows are
    /// written as a run first.
    pub(super) fn finish(
        dir: Arc<TempDir>,
        parts: Vec<SpilledPart>,
        rank: &dyn Fn(&str) -> usize,
    ) -> std::io::Result<SpilledRows> {
        let mut dict = Rows::default();
        let mut maps = Vec::new();
        let mut unplotted = Vec::new();
        let mut runs = Vec::new();
        let mut len = 0;
        let mut plotted_before: HashSet<(String, String)> = HashSet::new();
        for (source, mut part) in parts.into_iter().enumerate() {
            part.spiller.spill(&mut part.rows, rank)?;
            len += part.spiller.spilled();
            let map = if source == 0 {
                dict = part.rows.clone();
                None
            } else {
                Some(dict.absorb_names(&part.rows))
            };
            let id = |name: &str| {
                part.rows.name_id(name).map(|id| match &map {
                    Some(m) => m.name(id),
                    None => id,
                })
            };
            let mut hidden = HashSet::new();
            for (v, t) in part.plotted.iter().filter(|k| plotted_before.contains(*k)) {
                if let (Some(v), Some(t)) = (id(v), id(t)) {
                    hidden.insert((v, t));
                }
            }
            unplotted.push(hidden);
            plotted_before.extend(part.plotted);
            runs.extend(
                part.spiller
                    .runs
                    .into_iter()
                    .map(|path| RowRun { path, source }),
            );
            maps.push(map);
        }
        let ranks = dict.name_ranks(rank);
        let mut spilled = SpilledRows {
            dir,
            runs,
            dict,
            maps,
            unplotted,
            ranks,
            len,
        };
        spilled.cascade()?;
        Ok(spilled)
    }

    /// Merge runs [`FAN_IN`] at a time until at most that many are left.
    fn cascade(&mut self) -> std::io::Result<()> {
        let mut round = 0;
        while self.runs.len() > FAN_IN {
            let runs = std::mem::take(&mut self.runs);
            let mut merged = Vec::new();
            for (j, group) in runs.chunks(FAN_IN).enumerate() {
                let path = self.dir.file(&format!("rows-merged-{round}-{j}"));
                let mut w = BufWriter::with_capacity(256 * 1024, std::fs::File::create(&path)?);
                // Encoded in `dict`'s ids: a merged run's source is 0's map (`None`).
                let mut scratch = self.dict.clone();
                scratch.clear_rows();
                let mut buf = Vec::new();
                self.merge(group, |bytes, source| {
                    scratch.clear_rows();
                    let plotted = self.decode(&mut scratch, bytes, source);
                    buf.clear();
                    scratch.encode(0, plotted, &mut buf);
                    put_record(&mut w, &buf)
                })?;
                w.flush()?;
                for r in group {
                    let _ = std::fs::remove_file(&r.path);
                }
                merged.push(RowRun { path, source: 0 });
            }
            self.runs = merged;
            round += 1;
        }
        Ok(())
    }

    /// Number of rows spilled, the later lines of a unit journaled more than once too (which
    /// [`SpilledRows::for_each_unique`] skips).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// K-way merge of `runs`: `each(bytes, source)` for every encoded row in order.
    fn merge(
        &self,
        runs: &[RowRun],
        mut each: impl FnMut(&[u8], usize) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut readers = Vec::with_capacity(runs.len());
        let mut heads: Vec<Vec<u8>> = Vec::with_capacity(runs.len());
        let mut heap = BinaryHeap::new();
        for (j, run) in runs.iter().enumerate() {
            let mut r = BufReader::with_capacity(READ_BUF, std::fs::File::open(&run.path)?);
            let mut head = Vec::new();
            if next_record(&mut r, &mut head)? {
                let map = self.maps[run.source].as_ref();
                heap.push(std::cmp::Reverse((sort_key(&head, map, &self.ranks), j)));
            }
            readers.push(r);
            heads.push(head);
        }
        while let Some(std::cmp::Reverse((_, j))) = heap.pop() {
            let map = self.maps[runs[j].source].as_ref();
            each(&heads[j], runs[j].source)?;
            if next_record(&mut readers[j], &mut heads[j])? {
                heap.push(std::cmp::Reverse((
                    sort_key(&heads[j], map, &self.ranks),
                    j,
                )));
            }
        }
        Ok(())
    }

    /// Every row in report order: `each(index, row, plotted)`, `plotted` when the load kept
    /// its timeline for the context plots (the first successful one of its variant × trace in
    /// the journal; the row itself comes without it: load it by offset).
    pub fn for_each(
        &self,
        mut each: impl FnMut(usize, Row<'_>, RowDetail, bool),
    ) -> std::io::Result<()> {
        let mut scratch = self.dict.clone();
        scratch.clear_rows();
        let mut i = 0;
        self.merge(&self.runs, |bytes, source| {
            scratch.clear_rows();
            let plotted = self.decode(&mut scratch, bytes, source);
            each(i, scratch.get(0), scratch.detail(0), plotted);
            i += 1;
            Ok(())
        })
    }

    /// [`SpilledRows::for_each`] but for the later lines of a unit journaled more than once
    /// (same variant, trace, eval, sample and repeat; rows of equal keys come in journal
    /// order, so the first line is the one kept, as `Rows::dedup_sorted` keeps it), which it
    /// skips: returns how many. `i` numbers the rows passed to `each`.
    pub fn for_each_unique(
        &self,
        mut each: impl FnMut(usize, Row<'_>, RowDetail, bool),
    ) -> std::io::Result<usize> {
        let mut scratch = self.dict.clone();
        scratch.clear_rows();
        let mut i = 0;
        let mut dups = crate::metrics::aggregate::DuplicatesSum::default();
        self.merge(&self.runs, |bytes, source| {
            scratch.clear_rows();
            let plotted = self.decode(&mut scratch, bytes, source);
            let row = scratch.get(0);
            if !dups.add(&row) {
                each(i, row, scratch.detail(0), plotted);
                i += 1;
            }
            Ok(())
        })?;
        Ok(dups.finish())
    }

    /// Push an encoded row of `source` into `scratch` (ids of `dict`); whether its timeline
    /// counts as the one kept for its variant × trace.
    fn decode(&self, scratch: &mut Rows, bytes: &[u8], source: usize) -> bool {
        let plotted = scratch.push_encoded(bytes, self.maps[source].as_ref());
        let last = scratch.len() - 1;
        plotted
            && !self.unplotted[source].contains(&(scratch.variant_id(last), scratch.trace_id(last)))
    }

    /// Where the temporary files are.
    pub fn dir(&self) -> &Arc<TempDir> {
        &self.dir
    }
}

/// One observation on its way to disk: variant and metric (ids of [`ObsSpill`]), pairing key,
/// the row it came from (report order), cluster, value.
#[derive(Clone, Copy, Debug)]
struct ObsRec {
    variant: u32,
    metric: u32,
    key: u64,
    seq: u64,
    cluster: u64,
    value: f64,
}

const OBS_REC: usize = 40;
const OBS_OUT: usize = 24;

impl ObsRec {
    fn sort_key(&self) -> (u32, u32, u64, u64) {
        (self.variant, self.metric, self.key, self.seq)
    }
    fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        let mut b = [0u8; OBS_REC];
        b[0..4].copy_from_slice(&self.variant.to_le_bytes());
        b[4..8].copy_from_slice(&self.metric.to_le_bytes());
        b[8..16].copy_from_slice(&self.key.to_le_bytes());
        b[16..24].copy_from_slice(&self.seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.cluster.to_le_bytes());
        b[32..40].copy_from_slice(&self.value.to_bits().to_le_bytes());
        w.write_all(&b)
    }
    fn read(r: &mut impl Read) -> std::io::Result<Option<ObsRec>> {
        let mut b = [0u8; OBS_REC];
        match r.read_exact(&mut b) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Ok(Some(ObsRec {
            variant: u32_at(0),
            metric: u32_at(4),
            key: u64_at(8),
            seq: u64_at(16),
            cluster: u64_at(24),
            value: f64::from_bits(u64_at(32)),
        }))
    }
}

/// The observations of every variant and metric on their way to disk, in sorted runs.
pub struct ObsSpill {
    dir: Arc<TempDir>,
    /// Names this spill's files apart from another's in the same directory.
    prefix: String,
    run_len: usize,
    buf: Vec<ObsRec>,
    runs: Vec<PathBuf>,
    names: crate::record::Interner,
}

impl ObsSpill {
    pub fn new(dir: Arc<TempDir>, run_len: usize) -> ObsSpill {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        ObsSpill {
            dir,
            prefix: format!("obs{}", NEXT.fetch_add(1, Ordering::Relaxed)),
            run_len: run_len.max(1),
            buf: Vec::new(),
            runs: Vec::new(),
            names: crate::record::Interner::default(),
        }
    }

    /// Add the observation of row `seq` (report order).
    pub fn push(&mut self, variant: &str, metric: &str, seq: usize, o: Obs) -> std::io::Result<()> {
        let rec = ObsRec {
            variant: self.names.intern(variant),
            metric: self.names.intern(metric),
            key: o.key,
            seq: seq as u64,
            cluster: o.cluster,
            value: o.value,
        };
        self.buf.push(rec);
        if self.buf.len() >= self.run_len {
            self.write_run()?;
        }
        Ok(())
    }

    /// Push every observation of row `s` (its eval and run metrics at `seq`, then its per-role
    /// ones at `roles_after + seq`, after every row's: the first of duplicate keys kept is the
    /// one `aggregate::observations_with_roles` keeps). With `roles_after` ≥ the rows pushed.
    pub fn push_row(&mut self, s: &Row<'_>, seq: usize, roles_after: usize) -> std::io::Result<()> {
        use crate::metrics::aggregate;
        let mut failed = None;
        aggregate::for_each_obs(s, |metric, o| {
            if failed.is_none() {
                failed = self.push(s.variant, metric, seq, o).err();
            }
        });
        aggregate::for_each_role_obs(s, |metric, o| {
            if failed.is_none() {
                failed = self.push(s.variant, metric, roles_after + seq, o).err();
            }
        });
        failed.map_or(Ok(()), Err)
    }

    fn write_run(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.buf.sort_unstable_by_key(ObsRec::sort_key);
        let path = self
            .dir
            .file(&format!("{}-{}", self.prefix, self.runs.len()));
        let mut w = BufWriter::with_capacity(256 * 1024, std::fs::File::create(&path)?);
        for r in &self.buf {
            r.write(&mut w)?;
        }
        w.flush()?;
        self.runs.push(path);
        self.buf.clear();
        Ok(())
    }

    /// Merge the runs into one file of (key, cluster, value) per variant and metric, each in
    /// key order with the first of duplicate keys kept (as `aggregate::observations`).
    pub fn finish(mut self) -> std::io::Result<ObsFile> {
        self.write_run()?;
        // Merge FAN_IN runs at a time into longer ones first (bounded read buffers).
        let mut round = 0;
        while self.runs.len() > FAN_IN {
            let runs = std::mem::take(&mut self.runs);
            for (j, group) in runs.chunks(FAN_IN).enumerate() {
                let path = self
                    .dir
                    .file(&format!("{}-merged-{round}-{j}", self.prefix));
                let mut w = BufWriter::with_capacity(256 * 1024, std::fs::File::create(&path)?);
                merge_obs(group, |r| r.write(&mut w))?;
                w.flush()?;
                for p in group {
                    let _ = std::fs::remove_file(p);
                }
                self.runs.push(path);
            }
            round += 1;
        }
        let path = self.dir.file(&self.prefix);
        let mut w = BufWriter::with_capacity(256 * 1024, std::fs::File::create(&path)?);
        let mut index: BTreeMap<String, BTreeMap<String, (u64, usize)>> = BTreeMap::new();
        let mut at = 0u64;
        let mut last: Option<(u32, u32, u64)> = None;
        let names = &self.names;
        merge_obs(&self.runs, |r| {
            let group = (r.variant, r.metric, r.key);
            if last == Some(group) {
                return Ok(());
            }
            let same_list = last.is_some_and(|l| (l.0, l.1) == (r.variant, r.metric));
            last = Some(group);
            if !same_list {
                index
                    .entry(names.name(r.variant).to_string())
                    .or_default()
                    .insert(names.name(r.metric).to_string(), (at, 0));
            }
            let e = index
                .get_mut(names.name(r.variant))
                .and_then(|m| m.get_mut(names.name(r.metric)))
                .expect("inserted");
            e.1 += 1;
            let mut b = [0u8; OBS_OUT];
            b[0..8].copy_from_slice(&r.key.to_le_bytes());
            b[8..16].copy_from_slice(&r.cluster.to_le_bytes());
            b[16..24].copy_from_slice(&r.value.to_bits().to_le_bytes());
            at += 1;
            w.write_all(&b)
        })?;
        w.flush()?;
        for p in &self.runs {
            let _ = std::fs::remove_file(p);
        }
        Ok(ObsFile {
            _dir: self.dir,
            path,
            index,
            err: RefCell::new(None),
        })
    }
}

/// K-way merge of observation runs in (variant, metric, key, row) order.
fn merge_obs(
    runs: &[PathBuf],
    mut each: impl FnMut(&ObsRec) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut readers = Vec::with_capacity(runs.len());
    let mut heap = BinaryHeap::new();
    for (j, p) in runs.iter().enumerate() {
        let mut r = BufReader::with_capacity(READ_BUF, std::fs::File::open(p)?);
        if let Some(rec) = ObsRec::read(&mut r)? {
            heap.push(std::cmp::Reverse((
                rec.sort_key(),
                j,
                rec.cluster,
                rec.value.to_bits(),
            )));
        }
        readers.push(r);
    }
    while let Some(std::cmp::Reverse(((variant, metric, key, seq), j, cluster, bits))) = heap.pop()
    {
        each(&ObsRec {
            variant,
            metric,
            key,
            seq,
            cluster,
            value: f64::from_bits(bits),
        })?;
        if let Some(rec) = ObsRec::read(&mut readers[j])? {
            heap.push(std::cmp::Reverse((
                rec.sort_key(),
                j,
                rec.cluster,
                rec.value.to_bits(),
            )));
        }
    }
    Ok(())
}

/// The observations of every variant and metric, each a range of one file in key order
/// (what `aggregate::ObsTable` holds in memory). Reading a range cannot return an error as it
/// goes: the first one is kept ([`ObsFile::error`]) and the range reads as ending there.
pub struct ObsFile {
    _dir: Arc<TempDir>,
    path: PathBuf,
    /// variant → metric → (first record, records).
    pub index: BTreeMap<String, BTreeMap<String, (u64, usize)>>,
    err: RefCell<Option<std::io::Error>>,
}

impl ObsFile {
    /// The observations of one range, in key order.
    pub fn read(&self, (start, n): (u64, usize)) -> impl Iterator<Item = Obs> + '_ {
        let open = || -> std::io::Result<BufReader<std::fs::File>> {
            let mut f = std::fs::File::open(&self.path)?;
            f.seek(SeekFrom::Start(start * OBS_OUT as u64))?;
            Ok(BufReader::with_capacity(READ_BUF, f))
        };
        let mut reader = match open() {
            Ok(r) => Some(r),
            Err(e) => {
                self.fail(e);
                None
            }
        };
        let mut left = n;
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            let r = reader.as_mut()?;
            let mut b = [0u8; OBS_OUT];
            if let Err(e) = r.read_exact(&mut b) {
                self.fail(e);
                reader = None;
                return None;
            }
            left -= 1;
            let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
            Some(Obs {
                key: u64_at(0),
                cluster: u64_at(8),
                value: f64::from_bits(u64_at(16)),
            })
        })
    }

    fn fail(&self, e: std::io::Error) {
        self.err.borrow_mut().get_or_insert(e);
    }

    /// The first error a read met, if any (taken).
    pub fn error(&self) -> Option<std::io::Error> {
        self.err.borrow_mut().take()
    }
}

/// The pairs of a paired comparison read from two ranges in key order (a merge join):
/// (baseline value, candidate value, cluster) in the candidate's key order, clusters numbered
/// by first appearance (as `aggregate::compare`).
pub(super) fn join<'a>(
    cand_file: &'a ObsFile,
    cand: (u64, usize),
    base_file: &'a ObsFile,
    base: (u64, usize),
) -> impl Iterator<Item = (f64, f64, usize)> + 'a {
    crate::metrics::aggregate::join_sorted(cand_file.read(cand), base_file.read(base))
}

/// A comparison of one (metric, candidate, baseline) from two ranges (`compare_pairs` over
/// their merge join).
pub(super) fn compare_ranges(
    metric: &str,
    (candidate, cand_file, cand): (&str, &ObsFile, (u64, usize)),
    (baseline, base_file, base): (&str, &ObsFile, (u64, usize)),
    seed: u64,
) -> Option<crate::metrics::aggregate::Comparison> {
    let pairs = || join(cand_file, cand, base_file, base);
    let (mut n, mut traces) = (0, 0);
    for (_, _, k) in pairs() {
        n += 1;
        traces = traces.max(k + 1);
    }
    crate::metrics::aggregate::compare_pairs(metric, candidate, baseline, n, traces, pairs, seed)
}

/// `aggregate::compare_runs` of two runs' observations spilled to disk: every variant of the
/// candidate the baseline also has (`order` first, then by name), every metric both have.
pub fn compare_files(
    base: &ObsFile,
    cand: &ObsFile,
    order: &[String],
    seed: u64,
) -> std::io::Result<Vec<crate::metrics::aggregate::Comparison>> {
    let out = crate::metrics::aggregate::run_pairs(order, &cand.index, &base.index)
        .into_iter()
        .flat_map(|(v, m)| {
            compare_ranges(
                m,
                (v, cand, cand.index[v][m]),
                (v, base, base.index[v][m]),
                seed,
            )
        })
        .collect();
    match base.error().or_else(|| cand.error()) {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spill directory as a process leaves it: a run file, and a lock file with a pid in it
    /// (`None`: no lock file, as before the lock) that nobody holds.
    fn leftover(parent: &Path, name: &str, lock: Option<&str>) -> PathBuf {
        let path = parent.join(name);
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("rows-0-0"), b"rows").unwrap();
        if let Some(text) = lock {
            std::fs::write(path.join(LOCK_FILE), text).unwrap();
        }
        path
    }

    #[test]
    fn the_next_spill_removes_a_directory_whose_lock_is_free() {
        let parent = tempfile::tempdir().unwrap();
        // What a killed spill leaves: its pid in the lock file, the lock gone with it.
        let dead = leftover(
            parent.path(),
            "ctxbench-spill-4999999-17-0",
            Some("4999999\n"),
        );
        let dir = TempDir::new(Some(parent.path())).unwrap();
        assert!(!dead.exists(), "the leftover is removed");
        assert!(dir.path().join(LOCK_FILE).is_file());
        let pid = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
    }

    #[test]
    fn a_directory_whose_lock_is_held_is_kept() {
        let parent = tempfile::tempdir().unwrap();
        let busy = leftover(
            parent.path(),
            "ctxbench-spill-4999999-17-0",
            Some("4999999\n"),
        );
        // Another open file description holds its lock (conflicts even in this process).
        let held = std::fs::File::open(busy.join(LOCK_FILE)).unwrap();
        held.lock().unwrap();
        let first = TempDir::new(Some(parent.path())).unwrap();
        assert!(
            busy.join("rows-0-0").exists(),
            "a held lock keeps its directory"
        );
        // A live TempDir's directory survives the next one.
        let second = TempDir::new(Some(parent.path())).unwrap();
        assert!(first.path().join(LOCK_FILE).exists());
        assert!(busy.join("rows-0-0").exists());
        drop(second);
        // Its owner gone (the lock released), the next spill removes it.
        drop(held);
        let third = TempDir::new(Some(parent.path())).unwrap();
        assert!(!busy.exists());
        assert!(first.path().exists() && third.path().exists());
    }

    #[test]
    fn only_directories_named_exactly_as_a_spill_are_removed() {
        let parent = tempfile::tempdir().unwrap();
        let others: Vec<PathBuf> = [
            "ctxbench-spill-1-2",
            "ctxbench-spill-1-2-3-4",
            "ctxbench-spill-1-2-x",
            "ctxbench-spill--2-3",
            "ctxbench-spill-1-2-3.old",
            "my-ctxbench-spill-1-2-3",
        ]
        .iter()
        .map(|name| leftover(parent.path(), name, Some("4999999\n")))
        .collect();
        // A file with a spill's name is not a directory.
        let file = parent.path().join("ctxbench-spill-7-8-9");
        std::fs::write(&file, b"x").unwrap();
        // Nor is a symlink with a spill's name, whatever it points to.
        let target = leftover(parent.path(), "elsewhere", Some("4999999\n"));
        #[cfg(unix)]
        let link = {
            let link = parent.path().join("ctxbench-spill-4-5-6");
            std::os::unix::fs::symlink(&target, &link).unwrap();
            link
        };
        let dead = leftover(
            parent.path(),
            "ctxbench-spill-4999999-1-2",
            Some("4999999\n"),
        );
        let _dir = TempDir::new(Some(parent.path())).unwrap();
        assert!(!dead.exists(), "a leftover named as a spill goes");
        for p in &others {
            assert!(p.join("rows-0-0").exists(), "{}", p.display());
        }
        assert!(file.is_file());
        assert!(target.join("rows-0-0").exists() && target.join(LOCK_FILE).exists());
        #[cfg(unix)]
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    }

    /// A directory from before the lock file (or without a pid in it) goes only when it has
    /// not changed for a day and its pid is not running (Linux tells that by /proc).
    #[cfg(target_os = "linux")]
    #[test]
    fn an_unlocked_directory_goes_only_when_old_and_its_pid_is_gone() {
        let parent = tempfile::tempdir().unwrap();
        let age = |path: &Path, hours: u64| {
            let then = std::time::SystemTime::now() - std::time::Duration::from_secs(hours * 3600);
            std::fs::File::open(path)
                .unwrap()
                .set_modified(then)
                .unwrap();
        };
        let fresh = leftover(parent.path(), "ctxbench-spill-4999999-1-0", None);
        let young = leftover(parent.path(), "ctxbench-spill-4999999-1-1", None);
        age(&young, 23);
        let old = leftover(parent.path(), "ctxbench-spill-4999999-1-2", None);
        age(&old, 25);
        let no_pid = leftover(parent.path(), "ctxbench-spill-4999999-1-3", Some(""));
        age(&no_pid, 25);
        // An old directory of a process that still runs (this one) stays.
        let alive = leftover(
            parent.path(),
            &format!("ctxbench-spill-{}-1-4", std::process::id()),
            None,
        );
        age(&alive, 25);
        let _dir = TempDir::new(Some(parent.path())).unwrap();
        assert!(fresh.exists() && young.exists() && alive.exists());
        assert!(!old.exists() && !no_pid.exists());
    }

    /// Observations spilled in runs of a few come back per variant and metric in key order,
    /// the first of duplicate keys kept (as `aggregate::observations` keeps them), and a join
    /// pairs them as `aggregate::compare` does.
    #[cfg(unix)]
    #[test]
    fn the_temporary_directory_is_this_users_only_and_goes_when_dropped() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new(None).unwrap();
        let path = dir.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn spilled_observations_read_back_sorted_and_deduplicated() {
        let parent = std::env::temp_dir();
        let dir = Arc::new(TempDir::new(Some(&parent)).unwrap());
        let path = dir.path().to_path_buf();
        let mut spill = ObsSpill::new(dir, 5);
        let mut want: BTreeMap<(String, String), Vec<Obs>> = BTreeMap::new();
        let mut x = 7u64;
        for seq in 0..200 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let variant = ["b", "a"][(x >> 60) as usize % 2];
            let metric = ["m", "n", "o"][(x >> 50) as usize % 3];
            let o = Obs {
                key: (x >> 33) % 40,
                cluster: (x >> 20) % 3,
                value: seq as f64,
            };
            spill.push(variant, metric, seq, o.clone()).unwrap();
            want.entry((variant.into(), metric.into()))
                .or_default()
                .push(o);
        }
        let file = spill.finish().unwrap();
        for ((v, m), list) in &mut want {
            list.sort_by_key(|o| o.key);
            list.dedup_by(|later, first| later.key == first.key);
            let got: Vec<Obs> = file.read(file.index[v][m]).collect();
            assert_eq!(&got, list, "{v} {m}");
        }
        let (cand, base) = (
            &want[&("b".into(), "m".into())],
            &want[&("a".into(), "m".into())],
        );
        let mut ids = std::collections::HashMap::new();
        let paired: Vec<(f64, f64, usize)> = cand
            .iter()
            .filter_map(|o| {
                let b = base.iter().find(|b| b.key == o.key)?;
                let next = ids.len();
                Some((b.value, o.value, *ids.entry(o.cluster).or_insert(next)))
            })
            .collect();
        let joined: Vec<_> =
            join(&file, file.index["b"]["m"], &file, file.index["a"]["m"]).collect();
        assert!(!paired.is_empty());
        assert_eq!(joined, paired);
        assert!(file.error().is_none());
        drop(file);
        assert!(!path.exists(), "the temporary directory is removed");
    }
}
