//! The offload store: a real directory per (run, trace, variant) holding what layers removed
//! from the context, byte for byte, under the virtual paths the context points to
//! (`/large_tool_results/<id>` → `<root>/large_tool_results/<id>`).
//!
//! Random names (`<uuid4>.md`, `session_<hex>.md`) come from a seeded RNG, so a replay is
//! reproducible. Every write is also kept in memory (as appended segments, so growing a history
//! file never re-copies it) so invariants can compare what was removed with what is on disk;
//! with no root (benches, dry runs) the store is memory-only.

use super::event::StoreWrite;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::trace::Message;

/// A store operation that failed; names the path.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("offload store: {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("offload store: invalid virtual path {0:?} (expected /dir/name without `..`)")]
    BadPath(String),
}

/// Bytes produced on demand: their exact length is known when written, the bytes themselves
/// are generated only when read (or streamed to disk). Used for the rendered history, so a
/// memory-only replay never materializes it unless someone reads it.
pub trait LazyBytes: Send + Sync + std::fmt::Debug {
    /// Exact number of bytes [`write_to`](Self::write_to) produces.
    fn len(&self) -> u64;
    /// Always true when the section is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()>;
    /// Appends the bytes [`write_to`](Self::write_to) writes to `out` (a section can write a
    /// `Vec` faster than any writer: no call through a vtable per piece).
    fn append_to(&self, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ = self.write_to(out);
    }
    /// These bytes with `rename` applied (see [`OffloadStore::fork`]), or `None` when they
    /// name nothing renamed.
    fn renamed(&self, rename: &Rename) -> Option<Box<dyn LazyBytes>>;
}

/// Bytes of one write, kept in memory: owned, shared with the message they came from (an
/// evicted result is not copied), or produced on demand.
#[derive(Debug)]
enum Segment {
    Owned(Vec<u8>),
    Content(Arc<Message>),
    Lazy(Box<dyn LazyBytes>),
}

impl Segment {
    fn len(&self) -> u64 {
        match self {
            Segment::Owned(v) => v.len() as u64,
            Segment::Content(m) => m.content.len() as u64,
            Segment::Lazy(l) => l.len(),
        }
    }
    fn borrowed(&self) -> Option<&[u8]> {
        match self {
            Segment::Owned(v) => Some(v),
            Segment::Content(m) => Some(m.content.as_bytes()),
            Segment::Lazy(_) => None,
        }
    }
    fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match self.borrowed() {
            Some(b) => out.write_all(b),
            None => match self {
                Segment::Lazy(l) => l.write_to(out),
                _ => Ok(()),
            },
        }
    }
    /// This segment with `rename` applied, or `None` when it names nothing renamed.
    fn renamed(&self, rename: &Rename) -> Option<Segment> {
        if rename.is_empty() {
            return None;
        }
        match self {
            Segment::Owned(v) => {
                let text = std::str::from_utf8(v).ok()?;
                rename.text(text).map(|t| Segment::Owned(t.into_bytes()))
            }
            Segment::Content(m) => {
                let renamed = rename.message(m);
                (!Arc::ptr_eq(&renamed, m)).then_some(Segment::Content(renamed))
            }
            Segment::Lazy(l) => l.renamed(rename).map(Segment::Lazy),
        }
    }

    fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len() as usize);
        self.append_to(&mut v);
        v
    }

    fn append_to(&self, out: &mut Vec<u8>) {
        match self {
            Segment::Owned(v) => out.extend_from_slice(v),
            Segment::Content(m) => out.extend_from_slice(m.content.as_bytes()),
            Segment::Lazy(l) => l.append_to(out),
        }
    }
}

/// One file's bytes: the segments written, in order (shared with the stores forked from this
/// one: a fork copies the list, not the bytes).
#[derive(Clone, Debug, Default)]
struct FileData {
    segments: Vec<Arc<Segment>>,
    len: u64,
    /// Number of times the file was replaced (not appended to).
    rewrites: u64,
}

/// One file's bytes as [`OffloadStore::materialize`] hands them over: a file written in one
/// piece shares the store's own bytes (the evicted result or the written buffer, also shared
/// with the stores forked from the same prefix); any other keeps its segments and is
/// flattened into a buffer of its own when first read ([`FileBytes::compacted`] drops that
/// buffer again). Reads as `&[u8]`.
#[derive(Clone, Debug)]
pub struct FileBytes(FileRepr);

#[derive(Clone, Debug)]
enum FileRepr {
    /// A segment whose bytes are in memory ([`Segment::borrowed`] is `Some`).
    Shared(Arc<Segment>),
    Owned(Vec<u8>),
    /// Segments (shared with the store), flattened on the first read.
    Segments {
        segments: Vec<Arc<Segment>>,
        len: u64,
        flat: std::sync::OnceLock<Vec<u8>>,
    },
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            FileRepr::Shared(seg) => seg.borrowed().unwrap_or(&[]),
            FileRepr::Owned(v) => v,
            FileRepr::Segments {
                segments,
                len,
                flat,
            } => flat.get_or_init(|| {
                let mut bytes = Vec::with_capacity(usize::try_from(*len).unwrap_or(0));
                for seg in segments {
                    seg.append_to(&mut bytes);
                }
                // `len` is what a store pack's header declares for these bytes.
                debug_assert_eq!(bytes.len() as u64, *len, "a segment's length is exact");
                bytes
            }),
        }
    }
}

impl FileBytes {
    /// Number of bytes, without flattening a file of several segments.
    pub fn len(&self) -> usize {
        match &self.0 {
            FileRepr::Segments { len, .. } => usize::try_from(*len).unwrap_or(usize::MAX),
            _ => (**self).len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// These bytes without the buffer a first read flattened them into (the segments stay,
    /// shared with the store): what a store held in memory after its unit ended keeps until
    /// it is written or dropped, instead of a copy of its history file.
    pub fn compacted(&self) -> FileBytes {
        match &self.0 {
            FileRepr::Segments { segments, len, .. } => FileBytes(FileRepr::Segments {
                segments: segments.clone(),
                len: *len,
                flat: std::sync::OnceLock::new(),
            }),
            _ => self.clone(),
        }
    }

    /// The bytes are flattened in a buffer of their own (a file of several segments that was
    /// read); for tests.
    #[cfg(test)]
    fn is_flat(&self) -> bool {
        match &self.0 {
            FileRepr::Segments { flat, .. } => flat.get().is_some(),
            _ => true,
        }
    }
}

impl AsRef<[u8]> for FileBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl From<Vec<u8>> for FileBytes {
    fn from(v: Vec<u8>) -> Self {
        FileBytes(FileRepr::Owned(v))
    }
}

impl PartialEq for FileBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for FileBytes {}

impl<const N: usize> PartialEq<[u8; N]> for FileBytes {
    fn eq(&self, other: &[u8; N]) -> bool {
        **self == other[..]
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for FileBytes {
    fn eq(&self, other: &&[u8; N]) -> bool {
        **self == other[..]
    }
}

/// A store's files keyed by their path relative to its root ([`OffloadStore::materialize`]).
pub type StoreFiles = BTreeMap<String, FileBytes>;

/// `files` without the buffers reading them flattened files of several segments into
/// ([`FileBytes::compacted`]).
pub fn compacted(files: &StoreFiles) -> StoreFiles {
    files
        .iter()
        .map(|(path, bytes)| (path.clone(), bytes.compacted()))
        .collect()
}

/// Offload store of one replay.
#[derive(Debug)]
pub struct OffloadStore {
    root: Option<PathBuf>,
    files: HashMap<String, FileData>,
    /// The RNG's seed.
    seed: u64,
    rng: fastrand::Rng,
    writes: Vec<StoreWrite>,
    /// The random names drawn so far, in order (what [`OffloadStore::fork`] renames).
    draws: Vec<Draw>,
    /// A name was drawn whose uses a fork cannot rename (only a part of it was used).
    opaque_draws: bool,
}

/// One random name drawn from the store's RNG.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Draw {
    Uuid4(String),
    Hex(String),
}

/// Texts to replace by others (each `from` a random name drawn from a seeded RNG, so it
/// occurs nowhere else): what a replay state forked to another seed renames.
#[derive(Clone, Debug, Default)]
pub struct Rename {
    pairs: Vec<(String, String)>,
    /// A searcher for each pair's `from`, built once: a fork renames every text it shares.
    finders: Vec<memchr::memmem::Finder<'static>>,
}

impl Rename {
    /// Nothing to rename.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Replace `from` by `to` (after the pairs already added).
    pub fn push(&mut self, from: String, to: String) {
        self.finders
            .push(memchr::memmem::Finder::new(from.as_bytes()).into_owned());
        self.pairs.push((from, to));
    }

    /// `text` with every name replaced, or `None` when it holds none: each pair in turn
    /// replaces every occurrence (left to right, not overlapping) of its `from`, as
    /// `str::replace` does.
    pub fn text(&self, text: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for ((from, to), finder) in self.pairs.iter().zip(&self.finders) {
            let cur = out.as_deref().unwrap_or(text);
            if from.is_empty() {
                // Never a drawn name; matches between bytes, not only between characters.
                out = Some(cur.replace("", to));
                continue;
            }
            let mut found = finder.find_iter(cur.as_bytes()).peekable();
            if found.peek().is_none() {
                continue;
            }
            let mut next = String::with_capacity(cur.len());
            let mut done = 0;
            for at in found {
                // `from` is UTF-8 found in UTF-8: it starts and ends on character boundaries.
                next.push_str(&cur[done..at]);
                next.push_str(to);
                done = at + from.len();
            }
            next.push_str(&cur[done..]);
            out = Some(next);
        }
        out
    }

    /// Rename inside `s` in place (a shared borrow: the pairs are only read).
    pub fn apply(&self, s: &mut String) {
        if let Some(t) = self.text(s) {
            *s = t;
        }
    }

    /// `item` with its message and pointer renamed.
    pub fn item(&self, item: &super::view::Item) -> super::view::Item {
        let mut out = item.clone();
        if !self.is_empty() {
            out.msg = self.message(&item.msg);
            if let Some(p) = &mut out.pointer {
                self.apply(p);
            }
        }
        out
    }

    /// `m` with its content renamed; the same `Arc` when there is nothing to rename.
    pub fn message(&self, m: &Arc<Message>) -> Arc<Message> {
        match self.text(&m.content) {
            Some(content) => Arc::new(super::view::with_content(m, content)),
            None => m.clone(),
        }
    }
}

impl OffloadStore {
    /// A store backed by directory `root` (created if missing).
    pub fn on_disk(root: impl Into<PathBuf>, seed: u64) -> Result<Self, StoreError> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|source| StoreError::Io {
            path: root.display().to_string(),
            source,
        })?;
        Ok(OffloadStore {
            root: Some(root),
            files: HashMap::new(),
            seed,
            rng: fastrand::Rng::with_seed(seed),
            writes: Vec::new(),
            draws: Vec::new(),
            opaque_draws: false,
        })
    }

    /// A memory-only store (nothing written to disk).
    pub fn in_memory(seed: u64) -> Self {
        OffloadStore {
            root: None,
            files: HashMap::new(),
            seed,
            rng: fastrand::Rng::with_seed(seed),
            writes: Vec::new(),
            draws: Vec::new(),
            opaque_draws: false,
        }
    }

    /// The seed of the store's random names.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Names were drawn from the RNG so far.
    pub fn has_draws(&self) -> bool {
        !self.draws.is_empty()
    }

    /// A name was drawn that [`fork`](Self::fork) could not rename everywhere.
    pub fn has_opaque_draws(&self) -> bool {
        self.opaque_draws
    }

    /// This store as the replay of another seed would have it at the same point, in memory:
    /// the same files (their bytes shared, not copied; [`write_out`](Self::write_out) puts
    /// them on disk), the RNG of `seed` advanced past as many draws, and the [`Rename`] from
    /// this store's drawn names to that seed's, which the caller applies to everything else
    /// that names them. `None` when a draw cannot be renamed
    /// ([`has_opaque_draws`](Self::has_opaque_draws)).
    pub fn fork(&self, seed: u64) -> Option<(OffloadStore, Rename)> {
        if self.opaque_draws {
            return None;
        }
        let mut out = OffloadStore::in_memory(seed);
        let mut rename = Rename::default();
        for d in &self.draws {
            let (from, to) = match d {
                Draw::Uuid4(from) => (from, out.uuid4()),
                Draw::Hex(from) => (from, out.uuid4_hex()),
            };
            if *from != to {
                rename.push(from.clone(), to);
            }
        }
        out.writes = self.writes.clone();
        out.files.reserve(self.files.len());
        for (path, data) in &self.files {
            let mut data = data.clone();
            let mut vpath = path.clone();
            if !rename.is_empty() {
                for seg in &mut data.segments {
                    if let Some(renamed) = seg.renamed(&rename) {
                        *seg = Arc::new(renamed);
                    }
                }
                rename.apply(&mut vpath);
            }
            out.files.insert(vpath, data);
        }
        if !rename.is_empty() {
            for w in &mut out.writes {
                rename.apply(&mut w.path);
            }
        }
        Some((out, rename))
    }

    /// Put this memory store's files under directory `root` (created if missing) and keep
    /// writing there, as if it had been made with [`on_disk`](Self::on_disk).
    pub fn write_out(&mut self, root: impl Into<PathBuf>) -> Result<(), StoreError> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|source| StoreError::Io {
            path: root.display().to_string(),
            source,
        })?;
        let mut paths: Vec<&String> = self.files.keys().collect();
        paths.sort_unstable();
        for path in paths {
            let full = root.join(validate(path)?);
            let io = |source| StoreError::Io {
                path: full.display().to_string(),
                source,
            };
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            let f = std::fs::File::create(&full).map_err(io)?;
            let mut w = std::io::BufWriter::new(f);
            for seg in &self.files[path].segments {
                seg.write_to(&mut w).map_err(io)?;
            }
            w.flush().map_err(io)?;
        }
        self.root = Some(root);
        Ok(())
    }

    /// The conventional directory of one (run, trace, variant): `<base>/<run>/<trace>/<variant>`
    /// with each component made filesystem-safe.
    pub fn dir_for(base: &Path, run: &str, trace: &str, variant: &str) -> PathBuf {
        base.join(safe_component(run))
            .join(safe_component(trace))
            .join(safe_component(variant))
    }

    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// Map a virtual path to its file under the root.
    pub fn resolve(&self, vpath: &str) -> Result<Option<PathBuf>, StoreError> {
        let rel = validate(vpath)?;
        Ok(self.root.as_ref().map(|r| r.join(rel)))
    }

    /// Write (replace) a file.
    pub fn write(&mut self, vpath: &str, bytes: &[u8]) -> Result<StoreWrite, StoreError> {
        self.put(vpath, Segment::Owned(bytes.to_vec()), false)
    }

    /// Write (replace) a file with a message's content, byte for byte; in memory the message
    /// is shared, not copied.
    pub fn write_content(
        &mut self,
        vpath: &str,
        message: &Arc<Message>,
    ) -> Result<StoreWrite, StoreError> {
        self.put(vpath, Segment::Content(message.clone()), false)
    }

    /// Append to a file (created if missing).
    pub fn append(&mut self, vpath: &str, bytes: &[u8]) -> Result<StoreWrite, StoreError> {
        self.put(vpath, Segment::Owned(bytes.to_vec()), true)
    }

    /// [`append`](Self::append) taking ownership of the bytes (no copy in memory).
    pub fn append_owned(&mut self, vpath: &str, bytes: Vec<u8>) -> Result<StoreWrite, StoreError> {
        self.put(vpath, Segment::Owned(bytes), true)
    }

    /// Append bytes produced on demand (streamed to disk when the store has a root).
    pub fn append_lazy(
        &mut self,
        vpath: &str,
        bytes: Box<dyn LazyBytes>,
    ) -> Result<StoreWrite, StoreError> {
        self.put(vpath, Segment::Lazy(bytes), true)
    }

    fn put(&mut self, vpath: &str, seg: Segment, append: bool) -> Result<StoreWrite, StoreError> {
        let rel = validate(vpath)?.to_path_buf();
        if let Some(root) = &self.root {
            let full = root.join(&rel);
            let io = |source| StoreError::Io {
                path: full.display().to_string(),
                source,
            };
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            let f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(append)
                .truncate(!append)
                .open(&full)
                .map_err(io)?;
            let mut w = std::io::BufWriter::new(f);
            seg.write_to(&mut w).map_err(io)?;
            w.flush().map_err(io)?;
        }
        let n = seg.len();
        let file = self.files.entry(vpath.to_string()).or_default();
        if !append {
            file.segments.clear();
            file.len = 0;
            file.rewrites += 1;
        }
        let offset = file.len;
        file.len += n;
        file.segments.push(Arc::new(seg));
        let w = StoreWrite {
            path: vpath.to_string(),
            offset,
            bytes: n,
            append,
        };
        self.writes.push(w.clone());
        Ok(w)
    }

    /// The bytes written to `vpath` (the in-memory record); borrowed unless the file was
    /// appended to.
    pub fn contents(&self, vpath: &str) -> Option<Cow<'_, [u8]>> {
        let f = self.files.get(vpath)?;
        Some(match f.segments.as_slice() {
            [] => Cow::Borrowed(&[][..]),
            [one] if one.borrowed().is_some() => Cow::Borrowed(one.borrowed().unwrap_or(&[])),
            many => Cow::Owned(many.iter().flat_map(|s| s.to_vec()).collect()),
        })
    }

    /// Length in bytes of `vpath`, if it exists.
    pub fn file_len(&self, vpath: &str) -> Option<u64> {
        self.files.get(vpath).map(|f| f.len)
    }

    /// `(times replaced, length)` of `vpath`: changes whenever its bytes do.
    pub fn file_version(&self, vpath: &str) -> Option<(u64, u64)> {
        self.files.get(vpath).map(|f| (f.rewrites, f.len))
    }

    /// Bytes `from..` of `vpath` in memory (the part written after the first `from` bytes).
    pub fn contents_from(&self, vpath: &str, from: u64) -> Option<Vec<u8>> {
        let f = self.files.get(vpath)?;
        let mut out = Vec::with_capacity(f.len.saturating_sub(from) as usize);
        let mut pos = 0u64;
        for seg in &f.segments {
            let end = pos + seg.len();
            if end > from {
                let skip = from.saturating_sub(pos) as usize;
                match seg.borrowed() {
                    Some(b) => out.extend_from_slice(&b[skip..]),
                    None => out.extend_from_slice(&seg.to_vec()[skip..]),
                }
            }
            pos = end;
        }
        Some(out)
    }

    /// Read a file back from disk (`None` for a memory-only store).
    pub fn read_disk(&self, vpath: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.read_disk_from(vpath, 0)
    }

    /// Read a file back from disk from byte `from` on (`None` for a memory-only store).
    pub fn read_disk_from(&self, vpath: &str, from: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(p) = self.resolve(vpath)? else {
            return Ok(None);
        };
        let io = |source| StoreError::Io {
            path: p.display().to_string(),
            source,
        };
        let mut f = std::fs::File::open(&p).map_err(io)?;
        f.seek(SeekFrom::Start(from)).map_err(io)?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).map_err(io)?;
        Ok(Some(buf))
    }

    /// Every write so far, in order.
    pub fn writes(&self) -> &[StoreWrite] {
        &self.writes
    }

    /// Where deepagents' offload of the result of tool call `id` under `dir` writes it: its
    /// sanitized name ([`sanitize_tool_call_id`]), or `Err(path)` when a file of this store has
    /// that `path` already: deepagents' backends refuse a `write` over an existing file, and the
    /// refused result stays in the context (the evict and clip layers do the same). A name that
    /// is no file name (a NUL, over [`MAX_NAME_BYTES`], empty) is written under one made from
    /// it (`<name, NULs made _, cut>-<8 hex of the name's sha256>`): deepagents' in-memory
    /// state would take the name, a kept store on disk could not. Made from the sanitized
    /// name, it is the same for every id deepagents would write to one path, so a second such
    /// result is refused as deepagents refuses it.
    pub fn deepagents_result_path(&self, dir: &str, id: &str) -> Result<String, String> {
        let name = sanitize_tool_call_id(id);
        let path = if valid_file_name(&name) {
            format!("{}/{name}", dir.trim_end_matches('/'))
        } else {
            made_up_path(dir, &name, &name)
        };
        if self.files.contains_key(&path) {
            Err(path)
        } else {
            Ok(path)
        }
    }

    /// A path for the result of tool call `id` under folder `dir` that no file of this store
    /// has (`clear_tool_results` with `offload`, a ctxbench extension; evict and the clip refuse
    /// a taken name instead: [`OffloadStore::deepagents_result_path`]), before it is written:
    ///
    /// * `<dir>/<deepagents' name>` ([`sanitize_tool_call_id`]) when that name is a valid file
    ///   name (not empty, no NUL, at most [`MAX_NAME_BYTES`]) and no file of this store has
    ///   that path yet: always, for a trace whose ids are distinct after sanitizing, so
    ///   deepagents' own paths (and the golden fixtures) are kept;
    /// * otherwise `<dir>/<name>-<h>`: the name with each NUL made `_` and cut (on a character
    ///   boundary) to leave room, then the first 8 hex digits of the id's sha256 (`<h>` alone
    ///   for an empty name), and `-2`, `-3`, … after it while that path is taken too (the same
    ///   id offloaded again).
    ///
    /// Deterministic (a function of the id and the files written before), distinct from every
    /// file of the store, and a valid file name on disk: a second result never replaces the
    /// first, and no id makes the store unwritable. The caller writes the file and names this
    /// path in its stub and event.
    pub fn tool_result_path(&self, dir: &str, id: &str) -> String {
        let dir = dir.trim_end_matches('/');
        let name = sanitize_tool_call_id(id);
        if valid_file_name(&name) {
            let path = format!("{dir}/{name}");
            if !self.files.contains_key(&path) {
                return path;
            }
        }
        let base = made_up_path(dir, &name, id);
        let mut path = base.clone();
        let mut n = 2u64;
        while self.files.contains_key(&path) {
            path = format!("{base}-{n}");
            n += 1;
        }
        path
    }

    /// Virtual paths of all files.
    pub fn paths(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.files.keys().map(|s| s.as_str()).collect();
        v.sort_unstable();
        v
    }

    /// A random UUID version 4 string (`8-4-4-4-12` lowercase hex), from the seeded RNG.
    pub fn uuid4(&mut self) -> String {
        let u = self.draw_uuid4();
        self.draws.push(Draw::Uuid4(u.clone()));
        u
    }

    fn draw_uuid4(&mut self) -> String {
        let mut b = [0u8; 16];
        for x in &mut b {
            *x = self.rng.u8(..);
        }
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let h = hex::encode(b);
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }

    /// Every file's bytes, keyed by its path relative to the root as the directory would hold
    /// it (`large_tool_results/call_1`: components joined by `/`, no leading `/`). A file
    /// written in one piece is shared, not copied ([`FileBytes`]).
    pub fn materialize(&self) -> StoreFiles {
        let mut out = BTreeMap::new();
        for (vpath, f) in &self.files {
            let Ok(rel) = validate(vpath) else { continue };
            let key = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            let bytes = match f.segments.as_slice() {
                [one] if one.borrowed().is_some() => FileBytes(FileRepr::Shared(one.clone())),
                many => FileBytes(FileRepr::Segments {
                    segments: many.to_vec(),
                    len: f.len,
                    flat: std::sync::OnceLock::new(),
                }),
            };
            out.insert(key, bytes);
        }
        out
    }

    /// `uuid4().hex`: 32 lowercase hex digits.
    pub fn uuid4_hex(&mut self) -> String {
        let u = self.draw_uuid4();
        let h = u.replace('-', "");
        self.draws.push(Draw::Hex(h.clone()));
        h
    }

    /// The first 8 hex digits of a [`uuid4_hex`](Self::uuid4_hex) (a short unique name); a
    /// fork of this store cannot rename it.
    pub fn short_hex(&mut self) -> String {
        self.opaque_draws = true;
        let mut h = self.uuid4_hex();
        h.truncate(8);
        h
    }
}

/// The one file a store held in memory is packed into while its run goes on (`<dir>.pack`
/// beside the directory `dir` it unpacks to): one file written per unit instead of a directory
/// tree, and one removed when the run prunes it ([`unpack`] restores the directory exactly as
/// an on-disk store would have written it).
pub fn pack_path(dir: &Path) -> PathBuf {
    let mut p = dir.as_os_str().to_owned();
    p.push(".pack");
    PathBuf::from(p)
}

const PACK_MAGIC: &[u8] = b"ctxbench-store-pack 1\n";

/// `files` (from [`OffloadStore::materialize`]) as one pack: a header line, then per file
/// `<path bytes> <content bytes>\n`, the path and the content.
pub fn pack_bytes(files: &StoreFiles) -> Vec<u8> {
    let total: usize = files.iter().map(|(k, v)| k.len() + v.len() + 24).sum();
    let mut buf = Vec::with_capacity(PACK_MAGIC.len() + total);
    buf.extend_from_slice(PACK_MAGIC);
    for (k, v) in files {
        buf.extend_from_slice(format!("{} {}\n", k.len(), v.len()).as_bytes());
        buf.extend_from_slice(k.as_bytes());
        buf.extend_from_slice(v);
    }
    buf
}

/// Write `files` as one pack file at `path` ([`pack_bytes`]).
pub fn write_pack(path: &Path, files: &StoreFiles) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(path, pack_bytes(files)).map_err(io)
}

/// Many stores' packs appended to one file, each under a key (a run's unit id): a unit writes
/// one record (one `write`) instead of creating a file per store file — creating files is what
/// a sweep's system time went to. Record: `<key bytes> <pack bytes>\n`, the key, the pack.
/// Markers ([`PackFile::skip`]) are held in memory and written with the next record, on
/// [`PackFile::flush`] (the runner flushes before it journals the units they are of), past
/// [`MARKERS_HELD`] bytes, or when the pack file is dropped: a 1,000-unit needle sweep wrote
/// ~940 of them, a `writev` each.
#[derive(Debug)]
pub struct PackFile {
    path: PathBuf,
    file: std::sync::Mutex<PackWriter>,
}

/// Bytes of markers a [`PackFile`] holds before it writes them without waiting for a flush.
pub const MARKERS_HELD: usize = 64 << 10;

/// The file of a [`PackFile`] (opened on the first record) and the markers not written yet.
#[derive(Debug, Default)]
struct PackWriter {
    file: Option<std::fs::File>,
    held: Vec<u8>,
}

impl PackFile {
    /// Records are appended to `path` (created on the first one; an existing file is kept, so
    /// a resumed run adds to it: the last record of a key is the one that counts).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        PackFile {
            path: path.into(),
            file: Default::default(),
        }
    }

    /// Write the markers held in memory, if any.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.write_parts(&mut [])
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append the pack of `files` under `key`: one record, written from the files' own bytes
    /// (vectored writes, no copy of the store into a buffer: those copies were most of a
    /// sweep's page faults).
    pub fn append(&self, key: &str, files: &StoreFiles) -> Result<(), StoreError> {
        let heads: Vec<String> = files
            .iter()
            .map(|(k, v)| format!("{} {}\n", k.len(), v.len()))
            .collect();
        let body_len = PACK_MAGIC.len()
            + files
                .iter()
                .zip(&heads)
                .map(|((k, v), h)| h.len() + k.len() + v.len())
                .sum::<usize>();
        let rec_head = format!("{} {body_len}\n", key.len());
        let mut parts: Vec<std::io::IoSlice<'_>> = Vec::with_capacity(3 + 3 * files.len());
        parts.push(std::io::IoSlice::new(rec_head.as_bytes()));
        parts.push(std::io::IoSlice::new(key.as_bytes()));
        parts.push(std::io::IoSlice::new(PACK_MAGIC));
        for ((k, v), h) in files.iter().zip(&heads) {
            parts.push(std::io::IoSlice::new(h.as_bytes()));
            parts.push(std::io::IoSlice::new(k.as_bytes()));
            parts.push(std::io::IoSlice::new(v));
        }
        self.write_parts(&mut parts)
    }

    /// Write the markers held, then one record's `parts` (opening the file on the first
    /// write).
    fn write_parts(&self, parts: &mut [std::io::IoSlice<'_>]) -> Result<(), StoreError> {
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let writer = &mut *guard;
        if writer.held.is_empty() && parts.is_empty() {
            return Ok(());
        }
        let io = |source| StoreError::Io {
            path: self.path.display().to_string(),
            source,
        };
        if writer.file.is_none() {
            if let Some(parent) = self.path.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(io)?;
            writer.file = Some(f);
        }
        let Some(f) = writer.file.as_mut() else {
            return Ok(());
        };
        if !writer.held.is_empty() {
            // Taken even when the write fails: the markers are lost, which pruning reports
            // (a store it would keep and cannot find).
            let held = std::mem::take(&mut writer.held);
            f.write_all(&held).map_err(io)?;
        }
        write_all_vectored(f, parts).map_err(io)
    }
}

impl Drop for PackFile {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

impl PackFile {
    /// Append a marker for `key`: its store exists but was not written (an empty record; a
    /// store with no files still has the pack header). Pruning reads it to tell a store that
    /// is not kept from one that is missing.
    /// Held in memory until the next record or flush ([`PackFile`]).
    pub fn skip(&self, key: &str) -> Result<(), StoreError> {
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        use std::io::Write as _;
        let _ = write!(guard.held, "{} 0\n{key}", key.len());
        if guard.held.len() < MARKERS_HELD {
            return Ok(());
        }
        drop(guard);
        self.flush()
    }
}

/// `Write::write_all_vectored` (unstable in std): write every slice, in order, however many
/// calls the writer takes (the system's limit on slices per call included).
fn write_all_vectored(
    w: &mut impl Write,
    mut parts: &mut [std::io::IoSlice<'_>],
) -> std::io::Result<()> {
    std::io::IoSlice::advance_slices(&mut parts, 0);
    while !parts.is_empty() {
        match w.write_vectored(parts) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => std::io::IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One record of a pack file as [`for_each_pack`] passes it: its length, and its bytes when
/// asked for (skipped otherwise). An empty record is a marker ([`PackFile::skip`]).
pub struct PackRecord<'r> {
    len: u64,
    taken: bool,
    r: &'r mut std::io::BufReader<std::fs::File>,
}

impl PackRecord<'_> {
    /// Length of the record's pack bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// A marker: a store the run did not write ([`PackFile::skip`]).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The record's pack bytes (read once).
    pub fn read(&mut self) -> std::io::Result<Vec<u8>> {
        if self.taken {
            return Err(std::io::Error::other("pack record read twice"));
        }
        self.taken = true;
        let mut body = vec![0u8; self.len as usize];
        self.r.read_exact(&mut body)?;
        Ok(body)
    }
}

/// Read the records of the pack file at `path` in order, calling `f(key, record)` for each:
/// [`PackRecord::read`] gives the record's pack bytes (read only when asked; skipped
/// otherwise), so a pass over a big file holds one record at most. A missing file has no
/// records.
pub fn for_each_pack(
    path: &Path,
    mut f: impl FnMut(&str, &mut PackRecord<'_>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::io::BufRead;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let bad = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    };
    let mut r = std::io::BufReader::new(file);
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let (klen, blen) = line
            .trim_end_matches('\n')
            .split_once(' ')
            .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<u64>().ok()?)))
            .ok_or_else(|| bad("bad record header"))?;
        let mut key = vec![0u8; klen];
        r.read_exact(&mut key)?;
        let key = String::from_utf8(key).map_err(|_| bad("record key"))?;
        let mut rec = PackRecord {
            len: blen,
            taken: false,
            r: &mut r,
        };
        f(&key, &mut rec)?;
        if !rec.taken {
            r.seek_relative(blen as i64)?;
        }
    }
}

/// Unpack the pack at `pack` into directory `dir` (created, also for an empty store): the
/// files an on-disk store would have written there. Paths are checked as every store path is
/// (no `..`, no absolute path out of `dir`).
pub fn unpack(pack: &Path, dir: &Path) -> Result<(), StoreError> {
    let bytes = std::fs::read(pack).map_err(|source| StoreError::Io {
        path: pack.display().to_string(),
        source,
    })?;
    unpack_bytes(&bytes, &pack.display().to_string(), dir)
}

/// [`unpack`] of pack bytes already read (`shown` names them in errors).
pub fn unpack_bytes(bytes: &[u8], shown: &str, dir: &Path) -> Result<(), StoreError> {
    let bad = |what: &str| StoreError::Io {
        path: shown.to_string(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string()),
    };
    let io = |p: &Path| {
        let shown = p.display().to_string();
        move |source| StoreError::Io {
            path: shown,
            source,
        }
    };
    let mut rest = bytes
        .strip_prefix(PACK_MAGIC)
        .ok_or_else(|| bad("not a store pack (header)"))?;
    let mut dirs = DirMaker::new(dir)?;
    while !rest.is_empty() {
        let nl = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| bad("truncated entry header"))?;
        let header = std::str::from_utf8(&rest[..nl]).map_err(|_| bad("entry header"))?;
        let (klen, vlen) = header
            .split_once(' ')
            .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)))
            .ok_or_else(|| bad("entry header"))?;
        rest = &rest[nl + 1..];
        if rest.len() < klen.saturating_add(vlen) {
            return Err(bad("truncated entry"));
        }
        let key = std::str::from_utf8(&rest[..klen]).map_err(|_| bad("entry path"))?;
        let full = dirs.parent_of(key)?;
        std::fs::write(&full, &rest[klen..klen + vlen]).map_err(io(&full))?;
        rest = &rest[klen + vlen..];
    }
    Ok(())
}

/// Write `files` (from [`OffloadStore::materialize`]) into directory `dir` (created, also for an
/// empty store): the files an on-disk store would have written there, byte for byte, as
/// [`unpack`] of their pack would (the same path checks). `dir` should not hold other files
/// (the runner starts each unit's store directory clean).
pub fn write_files(files: &StoreFiles, dir: &Path) -> Result<(), StoreError> {
    let mut dirs = DirMaker::new(dir)?;
    for (vpath, bytes) in files {
        let full = dirs.parent_of(vpath)?;
        std::fs::write(&full, bytes).map_err(|source| StoreError::Io {
            path: full.display().to_string(),
            source,
        })?;
    }
    Ok(())
}

/// Creates a store directory and the folders its files go in, each once (one `mkdir` a
/// folder: a store's files share a few folders).
struct DirMaker<'a> {
    dir: &'a Path,
    made: Vec<PathBuf>,
}

impl<'a> DirMaker<'a> {
    fn new(dir: &'a Path) -> Result<DirMaker<'a>, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        Ok(DirMaker {
            dir,
            made: Vec::new(),
        })
    }

    /// The path of the store file `vpath` (checked), its folder created.
    fn parent_of(&mut self, vpath: &str) -> Result<PathBuf, StoreError> {
        let full = self.dir.join(validate(vpath)?);
        if let Some(parent) = full.parent() {
            if parent != self.dir && !self.made.iter().any(|m| m == parent) {
                std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
                    path: parent.display().to_string(),
                    source,
                })?;
                self.made.push(parent.to_path_buf());
            }
        }
        Ok(full)
    }
}

fn validate(vpath: &str) -> Result<&Path, StoreError> {
    let rel = vpath.strip_prefix('/').unwrap_or(vpath);
    let p = Path::new(rel);
    let ok = !rel.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
    if ok {
        Ok(p)
    } else {
        Err(StoreError::BadPath(vpath.to_string()))
    }
}

/// Make one path component safe: keep `[A-Za-z0-9._-]`, map the rest to `_`.
pub fn safe_component(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out == "." || out == ".." {
        "_".to_string()
    } else {
        out
    }
}

/// deepagents' `sanitize_tool_call_id`: `.`, `/` and `\` become `_`. Distinct ids can give
/// one name (`a.b`, `a/b`, `a_b`), and a name can be no file name (a NUL, or over
/// [`MAX_NAME_BYTES`]): [`OffloadStore::deepagents_result_path`] (evict, clip: a taken name is
/// refused, as deepagents refuses it) and [`OffloadStore::tool_result_path`] (clear: never a
/// shared file) decide where a result goes.
pub fn sanitize_tool_call_id(id: &str) -> String {
    id.replace(['.', '/', '\\'], "_")
}

/// `<dir>/<name>-<h>`, a valid file name made from `name`: each NUL made `_`, cut on a
/// character boundary to leave room for `-<h>` and a `-<n>` of up to 20 digits, `<h>` the first
/// 8 hex digits of the sha256 of `digest_of` (`<h>` alone for an empty name).
fn made_up_path(dir: &str, name: &str, digest_of: &str) -> String {
    use sha2::Digest as _;
    let dir = dir.trim_end_matches('/');
    let digest = hex::encode(&sha2::Sha256::digest(digest_of.as_bytes())[..NAME_DIGEST_BYTES]);
    let room = MAX_NAME_BYTES - (1 + digest.len()) - (1 + 20);
    let head = name.replace('\0', "_");
    let head = cut_at_char(&head, room);
    if head.is_empty() {
        format!("{dir}/{digest}")
    } else {
        format!("{dir}/{head}-{digest}")
    }
}

/// Longest file name a store gives an offloaded tool result, in bytes: `NAME_MAX` of the usual
/// Linux filesystems, which a store written under `stores/<unit>/` must fit.
pub const MAX_NAME_BYTES: usize = 255;

/// Bytes of the digest in a name [`OffloadStore::tool_result_path`] makes up (8 hex digits).
const NAME_DIGEST_BYTES: usize = 4;

/// `name` can be a file's name on disk: not empty, no NUL, at most [`MAX_NAME_BYTES`].
fn valid_file_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME_BYTES && !name.contains('\0')
}

/// The first bytes of `s`, at most `max`, cut on a character boundary.
fn cut_at_char(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    /// [`Rename::text`] replaces as `str::replace` pair after pair does: every occurrence,
    /// left to right without overlaps, a later pair seeing the earlier pairs' output.
    #[test]
    fn rename_text_replaces_as_str_replace() {
        let pairs = [
            ("aa", "b"),
            ("b", "ccc"),
            ("0f3e", "ééé"),
            ("", "|"),
            ("ccc", "aa"),
        ];
        let texts = [
            "",
            "a",
            "aaa",
            "aaaa b aa",
            "x0f3e0f3e0f3ey",
            "é0f3eé",
            "nothing here",
            "ccc0f3ebaa",
        ];
        for n in 0..=pairs.len() {
            let mut rename = super::Rename::default();
            for (from, to) in &pairs[..n] {
                rename.push(from.to_string(), to.to_string());
            }
            for t in texts {
                let mut want = t.to_string();
                let mut changed = false;
                for (from, to) in &pairs[..n] {
                    if want.contains(from) {
                        want = want.replace(from, to);
                        changed = true;
                    }
                }
                let got = rename.text(t);
                assert_eq!(got.is_some(), changed, "{t:?} with {n} pairs");
                assert_eq!(
                    got.unwrap_or_else(|| t.to_string()),
                    want,
                    "{t:?} with {n} pairs"
                );
            }
        }
    }

    use super::*;

    #[test]
    fn writes_and_appends_land_on_disk_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = OffloadStore::on_disk(dir.path().join("st"), 1).unwrap();
        s.write("/large_tool_results/a_b", "héllo".as_bytes())
            .unwrap();
        let w1 = s.append("/conversation_history/s.md", b"one\n").unwrap();
        let w2 = s.append("/conversation_history/s.md", b"two\n").unwrap();
        assert_eq!((w1.offset, w2.offset), (0, 4));
        let disk = std::fs::read(dir.path().join("st/conversation_history/s.md")).unwrap();
        assert_eq!(disk, b"one\ntwo\n");
        assert_eq!(
            s.read_disk("/large_tool_results/a_b").unwrap().unwrap(),
            "héllo".as_bytes()
        );
        s.write("/large_tool_results/a_b", b"x").unwrap();
        assert_eq!(&*s.contents("/large_tool_results/a_b").unwrap(), b"x");
        assert_eq!(
            &*s.contents("/conversation_history/s.md").unwrap(),
            b"one\ntwo\n"
        );
        assert_eq!(
            s.contents_from("/conversation_history/s.md", 2).unwrap(),
            b"e\ntwo\n"
        );
        assert_eq!(s.file_len("/conversation_history/s.md"), Some(8));
        assert_eq!(
            s.read_disk_from("/conversation_history/s.md", 4)
                .unwrap()
                .unwrap(),
            b"two\n"
        );
    }

    #[derive(Debug)]
    struct Repeat(u8, usize);
    impl LazyBytes for Repeat {
        fn len(&self) -> u64 {
            self.1 as u64
        }
        fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
            out.write_all(&vec![self.0; self.1])
        }
        fn renamed(&self, _: &Rename) -> Option<Box<dyn LazyBytes>> {
            None
        }
    }

    #[test]
    fn lazy_appends_are_streamed_to_disk_and_materialized_on_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = OffloadStore::on_disk(dir.path(), 3).unwrap();
        s.append("/h.md", b"ab").unwrap();
        let w = s.append_lazy("/h.md", Box::new(Repeat(b'x', 3))).unwrap();
        assert_eq!((w.offset, w.bytes), (2, 3));
        assert_eq!(&*s.contents("/h.md").unwrap(), b"abxxx");
        assert_eq!(s.contents_from("/h.md", 3).unwrap(), b"xx");
        assert_eq!(std::fs::read(dir.path().join("h.md")).unwrap(), b"abxxx");
        let mut m = OffloadStore::in_memory(0);
        m.append_lazy("/h.md", Box::new(Repeat(b'y', 2))).unwrap();
        assert_eq!(m.file_len("/h.md"), Some(2));
        assert_eq!(&*m.contents("/h.md").unwrap(), b"yy");
    }

    #[test]
    fn materialize_shares_a_file_written_in_one_piece() {
        let mut s = OffloadStore::in_memory(0);
        s.write("/large_tool_results/a", b"one piece").unwrap();
        s.append("/h.md", b"ab").unwrap();
        s.append("/h.md", b"cd").unwrap();
        s.append_lazy("/lazy.md", Box::new(Repeat(b'q', 2)))
            .unwrap();
        let files = s.materialize();
        let stored = s.contents("/large_tool_results/a").unwrap();
        let Cow::Borrowed(stored) = stored else {
            panic!("a file written once is borrowed")
        };
        // The same bytes, not a copy of them.
        assert_eq!(files["large_tool_results/a"].as_ptr(), stored.as_ptr());
        assert_eq!(files["large_tool_results/a"], b"one piece");
        // Appended and lazy files are flattened when first read, byte for byte.
        assert!(!files["h.md"].is_flat() && !files["lazy.md"].is_flat());
        assert_eq!((files["h.md"].len(), files["lazy.md"].len()), (4, 2));
        assert!(!files["h.md"].is_flat(), "its length is known unread");
        assert_eq!(files["h.md"], b"abcd");
        assert_eq!(files["lazy.md"], b"qq");
        assert!(files["h.md"].is_flat());
        // Compacted (a store held after its unit): the buffer dropped, the same bytes.
        let held = compacted(&files);
        assert!(!held["h.md"].is_flat());
        assert_eq!(held, files);
        assert_eq!(
            held["large_tool_results/a"].as_ptr(),
            stored.as_ptr(),
            "a file in one piece stays shared"
        );
        // A fork shares the segments, so its materialized file is the prefix's bytes too.
        let (fork, _) = s.fork(1).unwrap();
        assert_eq!(
            fork.materialize()["large_tool_results/a"].as_ptr(),
            stored.as_ptr()
        );
    }

    #[test]
    fn a_pack_unpacks_to_the_files_an_on_disk_store_writes() {
        let dir = tempfile::tempdir().unwrap();
        let mut disk = OffloadStore::on_disk(dir.path().join("disk"), 5).unwrap();
        let mut mem = OffloadStore::in_memory(5);
        for s in [&mut disk, &mut mem] {
            s.write("/large_tool_results/a", "héllo\n".as_bytes())
                .unwrap();
            s.append("/conversation_history/s.md", b"one\n").unwrap();
            s.append_lazy("/conversation_history/s.md", Box::new(Repeat(b'z', 3)))
                .unwrap();
            s.write("/large_tool_results/a", b"replaced").unwrap();
            s.write("/top", b"").unwrap();
            s.write("/large_tool_results/b", b"two in one folder")
                .unwrap();
        }
        let files = mem.materialize();
        assert_eq!(files["conversation_history/s.md"], b"one\nzzz");
        let pack = pack_path(&dir.path().join("mem"));
        assert!(pack.to_string_lossy().ends_with("mem.pack"));
        write_pack(&pack, &files).unwrap();
        unpack(&pack, &dir.path().join("mem")).unwrap();
        let tree = |root: &Path| -> Vec<(String, Vec<u8>)> {
            let mut v: Vec<_> = walkdir::WalkDir::new(root)
                .into_iter()
                .map(Result::unwrap)
                .map(|e| {
                    let rel = e.path().strip_prefix(root).unwrap().display().to_string();
                    let bytes = if e.file_type().is_file() {
                        std::fs::read(e.path()).unwrap()
                    } else {
                        b"<dir>".to_vec()
                    };
                    (rel, bytes)
                })
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            tree(&dir.path().join("mem")),
            tree(&dir.path().join("disk"))
        );
        // Written straight from the files: the same tree.
        write_files(&files, &dir.path().join("direct")).unwrap();
        assert_eq!(
            tree(&dir.path().join("direct")),
            tree(&dir.path().join("disk"))
        );
        write_files(&BTreeMap::new(), &dir.path().join("direct-empty")).unwrap();
        assert!(dir.path().join("direct-empty").is_dir());
        let mut escaping = BTreeMap::new();
        escaping.insert("../out".to_string(), b"x".to_vec().into());
        assert!(write_files(&escaping, &dir.path().join("esc")).is_err());
        assert!(!dir.path().join("out").exists());
        // An empty store still unpacks to its (empty) directory.
        let empty = dir.path().join("empty");
        write_pack(&pack_path(&empty), &BTreeMap::new()).unwrap();
        unpack(&pack_path(&empty), &empty).unwrap();
        assert!(empty.is_dir());
        // A damaged pack is an error naming the file, never a panic.
        std::fs::write(&pack, b"ctxbench-store-pack 1\n9 9\nab").unwrap();
        let e = unpack(&pack, &dir.path().join("bad"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("mem.pack") && e.contains("truncated"), "{e}");
        // Many packs in one file: each record read back by key, a later one replacing.
        let pf = PackFile::new(dir.path().join("all.pack"));
        pf.append("u1", &files).unwrap();
        // A marker is held in memory, and written before the next record, in order.
        pf.skip("u0").unwrap();
        let keys = |path: &Path| {
            let mut keys = Vec::new();
            for_each_pack(path, |key, _| {
                keys.push(key.to_string());
                Ok(())
            })
            .unwrap();
            keys
        };
        assert_eq!(keys(pf.path()), ["u1"]);
        pf.append("u2", &BTreeMap::new()).unwrap();
        pf.append("u1", &BTreeMap::new()).unwrap();
        pf.skip("u3").unwrap();
        assert_eq!(keys(pf.path()), ["u1", "u0", "u2", "u1"]);
        pf.flush().unwrap();
        let mut seen = Vec::new();
        for_each_pack(pf.path(), |key, rec| {
            let len = rec.len();
            if key == "u2" {
                seen.push((key.to_string(), Vec::new(), len));
            } else {
                seen.push((key.to_string(), rec.read()?, len));
            }
            Ok(())
        })
        .unwrap();
        let magic = PACK_MAGIC.len() as u64;
        assert_eq!(
            seen,
            vec![
                (
                    "u1".to_string(),
                    pack_bytes(&files),
                    pack_bytes(&files).len() as u64
                ),
                ("u0".to_string(), Vec::new(), 0),
                ("u2".to_string(), Vec::new(), magic),
                ("u1".to_string(), PACK_MAGIC.to_vec(), magic),
                ("u3".to_string(), Vec::new(), 0),
            ]
        );
        for_each_pack(&dir.path().join("missing"), |_, _| unreachable!()).unwrap();
        // Markers past the size held are written without a flush; the rest when dropped.
        let pf = PackFile::new(dir.path().join("markers.pack"));
        let mut n = 0;
        while !pf.path().exists() {
            pf.skip(&format!("unit-{n:06}")).unwrap();
            n += 1;
            assert!(n * 13 < 2 * MARKERS_HELD, "{n} markers held");
        }
        pf.skip("last").unwrap();
        let path = pf.path().to_path_buf();
        drop(pf);
        assert_eq!(keys(&path).len(), n + 1);
        assert_eq!(keys(&path).last().map(String::as_str), Some("last"));
    }

    #[test]
    fn rejects_escaping_paths() {
        let mut s = OffloadStore::in_memory(0);
        assert!(s.write("/../etc/passwd", b"x").is_err());
        assert!(s.write("/", b"x").is_err());
    }

    #[test]
    fn random_names_are_seeded_and_shaped_like_uuid4() {
        let re = regex::Regex::new(
            r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        )
        .unwrap();
        let mut a = OffloadStore::in_memory(7);
        let mut b = OffloadStore::in_memory(7);
        let (ua, ub) = (a.uuid4(), b.uuid4());
        assert_eq!(ua, ub);
        assert!(re.is_match(&ua), "{ua}");
        assert_ne!(a.uuid4(), ua);
        assert_eq!(a.uuid4_hex().len(), 32);
    }

    /// deepagents' name, refused when a file has it (deepagents' backends do not write over a
    /// file: the result stays in the context); a name that is no file name gets one of its own.
    #[test]
    fn deepagents_result_paths_are_refused_when_taken() {
        let dir = "/large_tool_results";
        let mut s = OffloadStore::in_memory(0);
        let first = s.deepagents_result_path(dir, "a.b").unwrap();
        assert_eq!(first, "/large_tool_results/a_b");
        s.write(&first, b"first").unwrap();
        for id in ["a/b", "a_b", "a.b"] {
            assert_eq!(
                s.deepagents_result_path(dir, id),
                Err(first.clone()),
                "{id}"
            );
        }
        assert_eq!(&*s.contents(&first).unwrap(), b"first");
        let nul = s.deepagents_result_path(dir, "x\0y").unwrap();
        assert!(nul.starts_with("/large_tool_results/x_y-"), "{nul}");
        let long = s.deepagents_result_path(dir, &"L".repeat(300)).unwrap();
        assert!(long.len() <= dir.len() + 1 + MAX_NAME_BYTES, "{long}");
        // Ids deepagents writes to one path that is no file name: refused once one is written
        // (a repeated 300-byte id; two that sanitize alike).
        s.write(&long, b"long").unwrap();
        assert_eq!(s.deepagents_result_path(dir, &"L".repeat(300)), Err(long));
        let m = "M".repeat(299);
        let dot = s.deepagents_result_path(dir, &format!("{m}.")).unwrap();
        s.write(&dot, b"dot").unwrap();
        assert_eq!(s.deepagents_result_path(dir, &format!("{m}/")), Err(dot));
    }

    /// deepagents' name while it is free and a file name; else a name of its own, distinct from
    /// every file, the same for the same writes (a replay is reproducible).
    #[test]
    fn tool_result_paths_keep_deepagents_names_and_never_share_a_file() {
        let dir = "/large_tool_results";
        let mut s = OffloadStore::in_memory(0);
        // Free and valid: deepagents' path, exactly (the golden fixtures' paths).
        assert_eq!(
            s.tool_result_path(dir, "call_00_01_0_0002"),
            "/large_tool_results/call_00_01_0_0002"
        );
        assert_eq!(
            s.tool_result_path("/large_tool_results/", "a.b"),
            "/large_tool_results/a_b"
        );
        // Three ids, one deepagents name: each result keeps a file of its own.
        let mut paths = Vec::new();
        for (id, text) in [("a.b", "first"), ("a/b", "second"), ("a_b", "third")] {
            let p = s.tool_result_path(dir, id);
            s.write(&p, text.as_bytes()).unwrap();
            paths.push(p);
        }
        let digest = |id: &str| {
            use sha2::Digest as _;
            hex::encode(&sha2::Sha256::digest(id.as_bytes())[..4])
        };
        assert_eq!(
            paths,
            [
                "/large_tool_results/a_b".to_string(),
                format!("/large_tool_results/a_b-{}", digest("a/b")),
                format!("/large_tool_results/a_b-{}", digest("a_b")),
            ]
        );
        for (p, text) in paths.iter().zip(["first", "second", "third"]) {
            assert_eq!(&*s.contents(p).unwrap(), text.as_bytes(), "{p}");
        }
        // The same id again (a trace that reuses ids): numbered after the digest.
        let again = s.tool_result_path(dir, "a_b");
        assert_eq!(again, format!("{}-2", paths[2]));
        s.write(&again, b"fourth").unwrap();
        assert_eq!(s.tool_result_path(dir, "a_b"), format!("{}-3", paths[2]));
        // Deterministic: another store with the same files gives the same names.
        let mut t = OffloadStore::in_memory(9);
        for p in &paths {
            t.write(p, b"x").unwrap();
        }
        assert_eq!(t.tool_result_path(dir, "a_b"), again);
        // No file name: a NUL, over 255 bytes (in bytes, not characters), or empty.
        let nul = s.tool_result_path(dir, "nul\0id");
        assert_eq!(
            nul,
            format!("/large_tool_results/nul_id-{}", digest("nul\0id"))
        );
        let fits = "é".repeat(127); // 254 bytes
        assert_eq!(
            s.tool_result_path(dir, &fits),
            format!("/large_tool_results/{fits}")
        );
        let long = "é".repeat(128); // 256 bytes
        let p = s.tool_result_path(dir, &long);
        let name = p.strip_prefix("/large_tool_results/").unwrap();
        assert!(name.len() <= MAX_NAME_BYTES, "{} bytes", name.len());
        assert!(
            name.starts_with("éé") && name.ends_with(&digest(&long)),
            "{name}"
        );
        assert_ne!(p, s.tool_result_path(dir, &"é".repeat(129)));
        assert_eq!(
            s.tool_result_path(dir, ""),
            format!("/large_tool_results/{}", digest(""))
        );
        // Even numbered, a made-up name stays a file name.
        let mut u = OffloadStore::in_memory(0);
        let id = "x".repeat(400);
        for _ in 0..3 {
            let p = u.tool_result_path(dir, &id);
            let name = p.rsplit('/').next().unwrap();
            assert!(name.len() <= MAX_NAME_BYTES && !name.contains('\0'));
            u.write(&p, b"x").unwrap();
        }
        assert_eq!(u.paths().len(), 3);
    }

    /// Every name made up is one a store on disk can write (the unit does not fail).
    #[test]
    fn made_up_tool_result_names_are_written_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = OffloadStore::on_disk(dir.path().join("st"), 0).unwrap();
        for id in [
            "nul\0id",
            &"L".repeat(300),
            &"é".repeat(200),
            "a.b",
            "a/b",
            "a/b",
        ] {
            let p = s.tool_result_path("/large_tool_results", id);
            s.write(&p, id.as_bytes()).unwrap();
            assert_eq!(s.read_disk(&p).unwrap().unwrap(), id.as_bytes(), "{id:?}");
        }
        let files = s.materialize();
        assert_eq!(files.len(), 6);
        write_files(&files, &dir.path().join("copy")).unwrap();
        let pf = PackFile::new(dir.path().join("all.pack"));
        pf.append("u", &files).unwrap();
    }

    #[test]
    fn sanitizes_ids_and_components() {
        assert_eq!(sanitize_tool_call_id("a.b/c\\d"), "a_b_c_d");
        assert_eq!(safe_component("../x y"), ".._x_y");
        assert_eq!(safe_component(".."), "_");
    }
}
