//! [`SummaryRecord`]: one summary a sample's replay produced (fold, trace index, prompt digest,
//! tokens, text), kept in the sample so reports can show two prompts' summaries of the same
//! fold side by side without the offload stores.
//!
//! Short texts are inline (`text`); a text longer than [`INLINE_SUMMARY_CHARS`] is appended to
//! the run's `summaries.pack` ([`SummaryPack`], the one writer and reader of that file) and the
//! record names it by content (`file`: [`member_name`]).
//! [`RunDir::summary_texts`](super::RunDir::summary_texts) reads them.

use serde::{Deserialize, Serialize};

/// Longest summary text kept inline in `samples.jsonl` (characters).
pub const INLINE_SUMMARY_CHARS: usize = 2000;

/// One summary produced during a replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SummaryRecord {
    /// 1-based index of this summary among the replay's summaries (the fold).
    pub fold: usize,
    /// Trace index of the model call during which the summary was made.
    pub trace_index: usize,
    /// `sha256:<hex>` of the summary prompt the summarizer was given.
    pub prompt_digest: String,
    /// Summarizer model (`offline` for the built-in one).
    #[serde(default)]
    pub model: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// `sha256:<hex>` of the text (content address).
    pub text_digest: String,
    /// Length of the text in characters.
    pub chars: usize,
    /// The text, when short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Name of the text in the run's `summaries.pack` ([`member_name`]), when long (in runs
    /// written before the pack: the text's file, relative to the run directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// `sha256:<hex>` of some text.
pub fn text_digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    // Built in one allocation of its final size (`format!` grew it three times).
    let mut hex = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(text.as_bytes()), &mut hex)
        .expect("64 hex digits for 32 bytes");
    let mut out = String::with_capacity("sha256:".len() + hex.len());
    out.push_str("sha256:");
    out.push_str(std::str::from_utf8(&hex).expect("hex digits are ASCII"));
    out
}

/// Name a long text is recorded under (`SummaryRecord::file`): `summaries/<hex>.md`, the hex
/// of its `text_digest` (`sha256:<hex>`; any other form is hashed again, so no name escapes).
pub fn member_name(text_digest: &str) -> String {
    let hex = text_digest.strip_prefix("sha256:").unwrap_or(text_digest);
    let rehashed;
    let name = if !hex.is_empty() && hex.len() <= 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex
    } else {
        rehashed = text_digest_hex(hex);
        &rehashed
    };
    let mut out = String::with_capacity(MEMBER_DIR.len() + name.len() + 4);
    out.push_str(MEMBER_DIR);
    out.push('/');
    out.push_str(name);
    out.push_str(".md");
    out
}

fn text_digest_hex(text: &str) -> String {
    text_digest(text)["sha256:".len()..].to_string()
}

/// Folder of [`member_name`]s; runs written before `summaries.pack` hold each text as a file
/// there, under its member name.
pub(crate) const MEMBER_DIR: &str = "summaries";

/// The long summary texts of a run, appended to one file while the run goes on
/// (`RunDir::summaries_pack`): the one writer and reader of that file's format.
///
/// A record is a header line `<member name> <byte length>\n` ([`member_name`]) and the text's
/// bytes, or a **block** of such records compressed together: a header line
/// `#lz4 <raw length> <byte length>\n` and that many bytes, an LZ4 block (no frame) that
/// decompresses to `raw length` bytes of text records. A unit's long texts go in one block
/// (unless compressing would not make them shorter), held in memory with the blocks of the
/// units that follow until [`SummaryPack::flush`] (or [`FLUSH_AT`] bytes, or the pack is
/// dropped) writes them in one `write`: the runner flushes the pack before it journals the
/// units whose texts it holds, so every name a journaled sample records is whole in the file
/// (`runner::UnitExecutor::flush`). A write per unit (1,000 of ~4 KB in the 1,000-unit needle
/// sweep) was ~2% of its CPU time, in the kernel (`benches/README.md`, "Needle sweeps"). A
/// needle sweep's
/// texts repeat each other (a fold's summary quotes the previous one), 46.7 MB of records in
/// 3.9 MB for 1,000 units, and writing the difference cost more system time than compressing
/// it. Creating a file per text was what a needle sweep's system time went to before the pack
/// (~15 distinct texts a unit). Records are keyed by content, so samples stay the same whatever
/// order units finish in; a text may be recorded twice (the reader takes the first). A reader
/// from before blocks skips them (their header parses as a record it does not want).
#[derive(Debug)]
pub struct SummaryPack {
    path: std::path::PathBuf,
    file: std::sync::Mutex<Writer>,
    /// Where the texts this writer appended lie (registered under the pack's path when the
    /// file is opened, for [`read_pack`]).
    index: std::sync::Arc<std::sync::Mutex<PackIndex>>,
}

/// Bytes a [`SummaryPack`] holds before it writes them without waiting for a flush.
pub const FLUSH_AT: usize = 256 << 10;

/// The file of a [`SummaryPack`] (opened on the first text) and the records not written yet.
#[derive(Debug, Default)]
struct Writer {
    file: Option<std::fs::File>,
    pending: Vec<u8>,
    /// Why a write failed (what every later append and flush returns: the texts it held are
    /// lost, so a unit that recorded any of them must not be journaled as if they were whole).
    failed: Option<(std::io::ErrorKind, String)>,
}

impl Writer {
    fn failure(&self) -> Option<std::io::Error> {
        let (kind, text) = self.failed.as_ref()?;
        Some(std::io::Error::new(
            *kind,
            format!("an earlier write of the summaries pack failed: {text}"),
        ))
    }

    /// Write the records held, then `parts` (from their own bytes: a block past [`FLUSH_AT`]
    /// is not copied into the records held first).
    fn write_through(
        &mut self,
        parts: &[std::io::IoSlice<'_>],
        index: &std::sync::Mutex<PackIndex>,
    ) -> std::io::Result<()> {
        use std::io::Write;
        if let Some(e) = self.failure() {
            return Err(e);
        }
        let written = match self.file.as_mut() {
            _ if self.pending.is_empty() && parts.is_empty() => Ok(()),
            Some(file) => std::iter::once(&self.pending[..])
                .chain(parts.iter().map(|p| &p[..]))
                .try_for_each(|bytes| file.write_all(bytes)),
            None => Err(std::io::Error::other("the summaries pack is not open")),
        };
        self.pending.clear();
        if let Err(e) = written {
            // The index is not used once a write failed (part of it may be in the file).
            index.lock().unwrap_or_else(|e| e.into_inner()).end = None;
            self.failed = Some((e.kind(), e.to_string()));
            return Err(e);
        }
        Ok(())
    }
}

/// Where each text one writer appended to a pack lies in the file: the end of a run reads the
/// few texts its report shows at their offsets ([`read_pack`]) instead of scanning the whole
/// pack (45 MB read back at the end of the 1,000-unit needle sweep, before its blocks). Keyed
/// by the first 8 bytes of the text's digest (every text read is checked against its name's
/// digest, and a miss falls back to the scan); at most [`PackIndex::MAX`] texts. A text is
/// located by the region of the file it was appended in (a block, or plain records: one a
/// unit) and its place in that region, 24 bytes a text in the map (a text kept its own block's
/// offsets, 56 bytes, and the map of the 1,000-unit needle sweep's ~35,000 texts was the
/// largest thing alive at the run's peak: 2.8 MB); a block read is decompressed once for all
/// the texts wanted from it.
#[derive(Debug, Default)]
struct PackIndex {
    /// Key of a member name ([`index_key`]) → where its first text lies.
    at: rustc_hash::FxHashMap<u64, Slot>,
    /// The regions `at` names, in file order.
    regions: Vec<Region>,
    /// End of the file as this writer left it; `None`: unknown (a write failed part-way, more
    /// texts than [`PackIndex::MAX`], or a region or text too long to index), the index is
    /// not used.
    end: Option<u64>,
}

impl PackIndex {
    const MAX: usize = 1 << 20;

    /// Index `texts`, which lie in `region` of records appended at `start`; false when they
    /// cannot all be (too many texts, a region or a text past `u32` offsets): the index is
    /// then not used.
    fn add(&mut self, start: u64, region: Region, texts: &[(Option<u64>, Placed)]) -> bool {
        if texts.is_empty() {
            return true;
        }
        if self.at.len() + texts.len() > Self::MAX {
            return false;
        }
        let Ok(id) = u32::try_from(self.regions.len()) else {
            return false;
        };
        let slots: Option<Vec<_>> = texts
            .iter()
            .map(|&(key, placed)| {
                let slot = Slot {
                    region: id,
                    at: u32::try_from(placed.at).ok()?,
                    len: u32::try_from(placed.len).ok()?,
                };
                Some((key, slot))
            })
            .collect();
        let Some(slots) = slots else {
            return false;
        };
        self.regions.push(Region {
            at: start + region.at,
            ..region
        });
        for (key, slot) in slots {
            if let Some(key) = key {
                self.at.entry(key).or_insert(slot);
            }
        }
        true
    }
}

/// Where a text lies in a pack: `len` bytes at `at` of region `region` (in a block's
/// decompressed bytes, or from the start of plain records).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    region: u32,
    at: u32,
    len: u32,
}

/// Records appended together: `len` bytes at offset `at` of the file, a block whose bytes
/// decompress to `raw` bytes (`Some`), or text records as they are (`None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Region {
    at: u64,
    len: u64,
    raw: Option<u64>,
}

/// Where a text lies in records about to be appended: `len` bytes at `at` of their raw
/// (uncompressed) bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Placed {
    at: u64,
    len: u64,
}

/// Tag of a block record's header line (`#lz4 <raw length> <byte length>`); no member name
/// starts with `#`.
const BLOCK_TAG: &str = "#lz4";

/// A record's header line, without its `\n`. Where records start and end depends only on the
/// last number of each header line: a header whose other fields are damaged is still a record
/// of that length (skipped), so the records after it stay readable.
#[derive(Debug, PartialEq, Eq)]
enum Head<'a> {
    /// A text of `len` bytes named `name`.
    Text { name: &'a str, len: u64 },
    /// A block of `len` compressed bytes holding `raw` bytes of text records.
    Block { raw: u64, len: u64 },
    /// A record whose header is damaged but for its length: a name that is not UTF-8, or a
    /// block's raw length that does not parse or cannot be (an LZ4 block expands at most ~255
    /// times: a larger claim is damage, not a size to allocate). Skipped.
    Damaged { len: u64 },
}

impl<'a> Head<'a> {
    /// `None`: the line's last field is not a length (a torn tail).
    fn parse(line: &'a [u8]) -> Option<Self> {
        let space = memchr::memrchr(b' ', line)?;
        let len = std::str::from_utf8(&line[space + 1..])
            .ok()?
            .parse::<u64>()
            .ok()?;
        let name = &line[..space];
        if let Some(raw) = name.strip_prefix(BLOCK_TAG.as_bytes()) {
            let raw = raw
                .strip_prefix(b" ")
                .and_then(|r| std::str::from_utf8(r).ok()?.parse::<u64>().ok());
            return Some(match raw {
                Some(raw) if raw <= len.saturating_mul(255).saturating_add(16) => {
                    Head::Block { raw, len }
                }
                _ => Head::Damaged { len },
            });
        }
        Some(match std::str::from_utf8(name) {
            Ok(name) => Head::Text { name, len },
            Err(_) => Head::Damaged { len },
        })
    }

    /// The length of the record's body (after the header line).
    fn len(&self) -> u64 {
        match *self {
            Head::Text { len, .. } | Head::Block { len, .. } | Head::Damaged { len } => len,
        }
    }
}

/// The text records of a block's decompressed bytes, in order: `(name, text bytes)`; `None`
/// for the rest when one is damaged (a header that does not parse, a nested block, a length
/// past the end).
fn block_records(raw: &[u8]) -> impl Iterator<Item = Option<(&str, &[u8])>> {
    let mut rest = raw;
    let mut damaged = false;
    std::iter::from_fn(move || {
        if rest.is_empty() || damaged {
            return None;
        }
        let record = (|| {
            let nl = memchr::memchr(b'\n', rest)?;
            let Head::Text { name, len } = Head::parse(&rest[..nl])? else {
                return None;
            };
            let body = rest.get(nl + 1..)?;
            let len = usize::try_from(len).ok().filter(|&l| l <= body.len())?;
            rest = &body[len..];
            Some((name, &body[..len]))
        })();
        damaged = record.is_none();
        Some(record)
    })
}

/// Append the text record of `text` named `name` to `buf`; returns where the text starts in it.
fn push_record(buf: &mut Vec<u8>, name: &str, text: &str) -> u64 {
    use std::io::Write;
    buf.extend_from_slice(name.as_bytes());
    // Writing into a Vec cannot fail.
    let _ = writeln!(buf, " {}", text.len());
    let at = buf.len() as u64;
    buf.extend_from_slice(text.as_bytes());
    at
}

/// Decompress a block's `len` bytes into its `raw` bytes; `None` when they are damaged.
fn unblock(packed: &[u8], raw: u64) -> Option<Vec<u8>> {
    let mut out = vec![0; usize::try_from(raw).ok()?];
    let n = lz4_flex::block::decompress_into(packed, &mut out).ok()?;
    (n == out.len()).then_some(out)
}

/// Indexes of the packs this process writes, by path ([`SummaryPack`] registers its own when
/// it opens the file; [`read_pack`] takes it). A new writer of the same path replaces it.
static OPEN_PACKS: std::sync::Mutex<
    Vec<(
        std::path::PathBuf,
        std::sync::Arc<std::sync::Mutex<PackIndex>>,
    )>,
> = std::sync::Mutex::new(Vec::new());

/// [`PackIndex`] key of member name `name` (`summaries/<hex>.md`): its first 16 hex digits.
fn index_key(name: &str) -> Option<u64> {
    let hex = name.strip_prefix(MEMBER_DIR)?.strip_prefix('/')?;
    u64::from_str_radix(hex.get(..16)?, 16).ok()
}

impl SummaryPack {
    /// Texts are appended to `path`, opened on the first long text. An existing file is kept
    /// (a resumed run adds to it) after cutting a torn last record, if a crash left one.
    pub fn new(path: impl Into<std::path::PathBuf>) -> Self {
        SummaryPack {
            path: path.into(),
            file: Default::default(),
            index: Default::default(),
        }
    }

    /// Write the records held in memory (the blocks [`SummaryPack::keep`] made since the last
    /// flush). After a failed write every later `keep` and `flush` fails too.
    pub fn flush(&self) -> std::io::Result<()> {
        let mut writer = self.file.lock().unwrap_or_else(|e| e.into_inner());
        writer.write_through(&[], &self.index)
    }

    /// Record `texts`: fills each record's `text_digest`, `chars`, and `text` (short) or `file`
    /// (long: appended here, all of them in one write, as one block when that is shorter).
    pub fn keep(&self, texts: Vec<(SummaryRecord, &str)>) -> std::io::Result<Vec<SummaryRecord>> {
        // The long texts' records, and each text's index key and place in them.
        let mut raw = Vec::new();
        let mut placed: Vec<(Option<u64>, Placed)> = Vec::new();
        let mut out = Vec::with_capacity(texts.len());
        for (mut record, text) in texts {
            record.text_digest = text_digest(text);
            record.chars = text.chars().count();
            if record.chars <= INLINE_SUMMARY_CHARS {
                record.text = Some(text.to_string());
                record.file = None;
            } else {
                let name = member_name(&record.text_digest);
                let at = push_record(&mut raw, &name, text);
                let len = text.len() as u64;
                placed.push((index_key(&name), Placed { at, len }));
                record.file = Some(name);
                record.text = None;
            }
            out.push(record);
        }
        if !raw.is_empty() {
            self.append_records(&raw, &placed)?;
        }
        Ok(out)
    }

    /// Append every long text another run directory holds (`ctxbench merge`): the whole
    /// records of its pack `pack` and, for a run written before the pack, each file of its
    /// `summaries/` folder under `root` whose content matches its name. Returns how many texts
    /// were carried; a text recorded twice is read once (the reader takes the first).
    pub fn carry(&self, root: &std::path::Path, pack: &std::path::Path) -> std::io::Result<usize> {
        const CARRIED_AT_ONCE: usize = 4 << 20;
        let mut carried = 0;
        let mut buf = Vec::new();
        let mut failed = None;
        let mut push = |name: &str, text: &str, buf: &mut Vec<u8>| {
            push_record(buf, name, text);
            carried += 1;
        };
        match std::fs::File::open(pack) {
            Ok(file) => {
                scan(
                    &file,
                    Some((
                        |_: &str| true,
                        |name: &str, text: String| {
                            push(name, &text, &mut buf);
                            if buf.len() >= CARRIED_AT_ONCE && failed.is_none() {
                                failed = self.append(&buf).err();
                                buf.clear();
                            }
                        },
                    )),
                )?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        if let Some(e) = failed {
            return Err(e);
        }
        if let Ok(dir) = std::fs::read_dir(root.join(MEMBER_DIR)) {
            for entry in dir {
                let entry = entry?;
                let name = format!("{MEMBER_DIR}/{}", entry.file_name().to_string_lossy());
                let Ok(text) = std::fs::read_to_string(entry.path()) else {
                    continue;
                };
                if member_name(&text_digest(&text)) == name {
                    push(&name, &text, &mut buf);
                }
                if buf.len() >= CARRIED_AT_ONCE {
                    self.append(&buf)?;
                    buf.clear();
                }
            }
        }
        if !buf.is_empty() {
            self.append(&buf)?;
        }
        self.flush()?;
        Ok(carried)
    }

    fn append(&self, bytes: &[u8]) -> std::io::Result<()> {
        // Carried records are not indexed: a reader looking for them scans the pack.
        self.append_records(bytes, &[])
    }

    /// Append the text records `raw` (`texts`: the key of each text they hold and where it
    /// lies in them) as one block, or as they are when compressing does not shorten them.
    fn append_records(&self, raw: &[u8], texts: &[(Option<u64>, Placed)]) -> std::io::Result<()> {
        let packed = lz4_flex::block::compress(raw);
        let head = format!("{BLOCK_TAG} {} {}\n", raw.len(), packed.len());
        if head.len() + packed.len() >= raw.len() {
            let region = Region {
                at: 0,
                len: raw.len() as u64,
                raw: None,
            };
            return self.append_parts(&[std::io::IoSlice::new(raw)], region, texts);
        }
        let region = Region {
            at: head.len() as u64,
            len: packed.len() as u64,
            raw: Some(raw.len() as u64),
        };
        self.append_parts(
            &[
                std::io::IoSlice::new(head.as_bytes()),
                std::io::IoSlice::new(&packed),
            ],
            region,
            texts,
        )
    }

    /// Append `parts`, in order, to the records held (written at [`FLUSH_AT`] bytes or by
    /// [`SummaryPack::flush`]); `region`: where the records of `texts` lie in them (its offset
    /// counted from the start of these parts); `texts`: the key of each text they hold and
    /// where it lies in the region, for the index.
    fn append_parts(
        &self,
        parts: &[std::io::IoSlice<'_>],
        region: Region,
        texts: &[(Option<u64>, Placed)],
    ) -> std::io::Result<()> {
        let mut writer = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = writer.failure() {
            return Err(e);
        }
        if writer.file.is_none() {
            writer.file = Some(self.open()?);
        }
        let total: u64 = parts.iter().map(|p| p.len() as u64).sum();
        // Where the file will end once the records held are written (`None`: unknown, the
        // index is not used).
        let start = self.index_lock().end.take();
        if writer.pending.len() as u64 + total >= FLUSH_AT as u64 {
            writer.write_through(parts, &self.index)?;
        } else {
            for part in parts {
                writer.pending.extend_from_slice(part);
            }
        }
        if let Some(start) = start {
            let mut index = self.index_lock();
            index.end = index.add(start, region, texts).then_some(start + total);
        }
        Ok(())
    }

    fn index_lock(&self) -> std::sync::MutexGuard<'_, PackIndex> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open(&self) -> std::io::Result<std::fs::File> {
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&self.path)?;
        let whole = whole_records(&file)?;
        if whole < file.metadata()?.len() {
            file.set_len(whole)?;
        }
        // Texts appended from here are indexed; the reader of this path finds the index.
        *self.index_lock() = PackIndex {
            end: Some(whole),
            ..Default::default()
        };
        if let Ok(path) = std::fs::canonicalize(&self.path) {
            let mut open = OPEN_PACKS.lock().unwrap_or_else(|e| e.into_inner());
            open.retain(|(p, _)| *p != path);
            open.push((path, self.index.clone()));
        }
        Ok(file)
    }
}

/// The records still held are written (a failure is only lost here: the runner flushes, and
/// fails the units whose texts did not reach the file, before it journals them).
impl Drop for SummaryPack {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// The length of the whole records of the summaries pack `file` (its structure only: blocks
/// are not decompressed; a torn tail is not counted).
fn whole_records(file: &std::fs::File) -> std::io::Result<u64> {
    scan(file, None::<(fn(&str) -> bool, fn(&str, String))>)
}

/// Read the records of the summaries pack `file` from the start (`file` at offset 0). With
/// `texts` = `(want, got)`: the text of each record whose name `want`s it is given to
/// `got(name, text)`, the others are skipped (blocks are decompressed to see their names).
/// Returns the length of the whole records: a torn tail (a header line that does not parse,
/// a record longer than the rest of the file) ends the scan. A record whose content is
/// damaged — a wanted text that is not UTF-8, a block that does not decompress to whole text
/// records — gives no text, and the scan goes on after it.
fn scan<W, G>(file: &std::fs::File, mut texts: Option<(W, G)>) -> std::io::Result<u64>
where
    W: FnMut(&str) -> bool,
    G: FnMut(&str, String),
{
    use std::io::{BufRead, Read};
    let total = file.metadata()?.len();
    let mut r = std::io::BufReader::with_capacity(64 * 1024, file);
    let mut whole = 0u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line)? as u64;
        let Some(head) = line.strip_suffix(b"\n").and_then(Head::parse) else {
            return Ok(whole);
        };
        let len = head.len();
        let Some(end) = whole
            .checked_add(n)
            .and_then(|w| w.checked_add(len))
            .filter(|&end| end <= total)
        else {
            return Ok(whole);
        };
        let text_wanted = match (&head, texts.as_mut()) {
            (Head::Text { name, .. }, Some((want, _))) => want(name),
            _ => false,
        };
        match (head, texts.as_mut()) {
            (Head::Text { name, .. }, Some((_, got))) if text_wanted => {
                let mut bytes = Vec::with_capacity(len as usize);
                (&mut r).take(len).read_to_end(&mut bytes)?;
                if let Ok(text) = String::from_utf8(bytes) {
                    got(name, text);
                }
            }
            (Head::Block { raw, .. }, Some((want, got))) => {
                let mut packed = Vec::with_capacity(len as usize);
                (&mut r).take(len).read_to_end(&mut packed)?;
                // The block's wanted texts are passed only if the whole block reads.
                let found = unblock(&packed, raw).and_then(|raw| {
                    let mut found = Vec::new();
                    for record in block_records(&raw) {
                        let (name, text) = record?;
                        let text = std::str::from_utf8(text).ok()?;
                        if want(name) {
                            found.push((name.to_string(), text.to_string()));
                        }
                    }
                    Some(found)
                });
                for (name, text) in found.unwrap_or_default() {
                    got(&name, text);
                }
            }
            // Within the buffer when the record is short: no system call.
            _ => r.seek_relative(len as i64)?,
        }
        whole = end;
    }
}

/// The texts of `wanted` member names ([`member_name`]) in the summaries pack at `path`, in one
/// pass that reads only those texts (a missing pack holds none). Each text is checked against
/// its name's digest.
pub fn read_pack(
    path: &std::path::Path,
    wanted: &std::collections::BTreeSet<String>,
) -> std::io::Result<std::collections::BTreeMap<String, String>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(e) => return Err(e),
    };
    if let Some(found) = read_indexed(path, &file, wanted) {
        return Ok(found);
    }
    // From the start: reading by offset may have given up part way.
    std::io::Seek::seek(&mut &file, std::io::SeekFrom::Start(0))?;
    let mut found = std::collections::BTreeMap::new();
    scan(
        &file,
        Some((
            |name: &str| wanted.contains(name),
            |name: &str, text: String| {
                if !found.contains_key(name) && member_name(&text_digest(&text)) == name {
                    found.insert(name.to_string(), text);
                }
            },
        )),
    )?;
    Ok(found)
}

/// The texts of `wanted` read at the offsets the pack's writer in this process recorded
/// ([`PackIndex`], taken from the registry), if it knows every one and the file is as it left
/// it; `None`: scan the pack.
fn read_indexed(
    path: &std::path::Path,
    file: &std::fs::File,
    wanted: &std::collections::BTreeSet<String>,
) -> Option<std::collections::BTreeMap<String, String>> {
    use std::io::{Read, Seek, SeekFrom};
    let path = std::fs::canonicalize(path).ok()?;
    let index = {
        let mut open = OPEN_PACKS.lock().unwrap_or_else(|e| e.into_inner());
        let i = open.iter().position(|(p, _)| *p == path)?;
        open.swap_remove(i).1
    };
    let index = index.lock().unwrap_or_else(|e| e.into_inner());
    if index.end != Some(file.metadata().ok()?.len()) {
        return None;
    }
    let mut at: Vec<(Slot, Region, &String)> = wanted
        .iter()
        .map(|name| {
            let slot = *index.at.get(&index_key(name)?)?;
            let region = *index.regions.get(usize::try_from(slot.region).ok()?)?;
            Some((slot, region, name))
        })
        .collect::<Option<_>>()?;
    drop(index);
    // In file order, each block decompressed once.
    at.sort_unstable_by_key(|(slot, _, _)| (slot.region, slot.at));
    let mut file = file;
    let mut found = std::collections::BTreeMap::new();
    let mut block: Option<(u32, Vec<u8>)> = None;
    for (slot, region, name) in at {
        let len = usize::try_from(slot.len).ok()?;
        let bytes = match region.raw {
            None => {
                file.seek(SeekFrom::Start(region.at.checked_add(u64::from(slot.at))?))
                    .ok()?;
                let mut bytes = vec![0; len];
                file.read_exact(&mut bytes).ok()?;
                bytes
            }
            Some(raw) => {
                if block.as_ref().is_none_or(|(held, _)| *held != slot.region) {
                    file.seek(SeekFrom::Start(region.at)).ok()?;
                    let mut packed = vec![0; usize::try_from(region.len).ok()?];
                    file.read_exact(&mut packed).ok()?;
                    block = Some((slot.region, unblock(&packed, raw)?));
                }
                let raw = &block.as_ref()?.1;
                let at = usize::try_from(slot.at).ok()?;
                raw.get(at..at.checked_add(len)?)?.to_vec()
            }
        };
        let text = String::from_utf8(bytes).ok()?;
        if member_name(&text_digest(&text)) != *name {
            return None;
        }
        found.insert(name.clone(), text);
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_entry_is_24_bytes_and_an_offset_past_u32_turns_the_index_off() {
        // The map's entries are what a long run's index costs (a million texts at most).
        assert_eq!(std::mem::size_of::<(u64, Slot)>(), 24);
        let mut index = PackIndex::default();
        let plain = Region {
            at: 0,
            len: 10,
            raw: None,
        };
        let ok = [(Some(1), Placed { at: 3, len: 4 })];
        assert!(index.add(100, plain, &ok));
        assert_eq!(index.regions, [Region { at: 100, ..plain }]);
        assert_eq!(
            index.at[&1],
            Slot {
                region: 0,
                at: 3,
                len: 4
            }
        );
        // Records without texts add no region.
        assert!(index.add(200, plain, &[]));
        assert_eq!(index.regions.len(), 1);
        let far = [(
            Some(2),
            Placed {
                at: 1 << 32,
                len: 1,
            },
        )];
        let long = [(
            Some(3),
            Placed {
                at: 0,
                len: 1 << 32,
            },
        )];
        assert!(!index.add(300, plain, &far));
        assert!(!index.add(300, plain, &long));
        assert_eq!(
            index.regions.len(),
            1,
            "nothing of a refused region is kept"
        );
    }

    #[test]
    fn text_digest_is_sha256_in_lowercase_hex() {
        assert_eq!(
            text_digest("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            member_name(&text_digest("abc")),
            "summaries/ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.md"
        );
    }

    fn record() -> SummaryRecord {
        SummaryRecord {
            fold: 1,
            trace_index: 3,
            prompt_digest: "sha256:p".into(),
            model: "offline".into(),
            tokens_in: 10,
            tokens_out: 2,
            text_digest: String::new(),
            chars: 0,
            text: None,
            file: None,
        }
    }

    /// `ctxbench merge`: the texts of a packed run and of a run written before the pack (a
    /// `summaries/` folder) are both readable from the merged run's pack.
    #[test]
    fn carry_copies_a_pack_and_a_summaries_folder_into_another_pack() {
        let dir = tempfile::tempdir().unwrap();
        let a = "a".repeat(INLINE_SUMMARY_CHARS + 5);
        let b = "b".repeat(INLINE_SUMMARY_CHARS + 7);
        let packed = dir.path().join("one");
        let recs = SummaryPack::new(packed.join("summaries.pack"))
            .keep(vec![(record(), a.as_str())])
            .unwrap();
        let old = dir.path().join("two");
        let b_name = member_name(&text_digest(&b));
        std::fs::create_dir_all(old.join(MEMBER_DIR)).unwrap();
        std::fs::write(old.join(&b_name), &b).unwrap();
        // A file whose content does not match its name is not carried.
        std::fs::write(old.join(MEMBER_DIR).join("0000.md"), "x").unwrap();
        let out = dir.path().join("merged").join("summaries.pack");
        let merged = SummaryPack::new(&out);
        assert_eq!(
            merged
                .carry(&packed, &packed.join("summaries.pack"))
                .unwrap(),
            1
        );
        assert_eq!(merged.carry(&old, &old.join("summaries.pack")).unwrap(), 1);
        let a_name = recs[0].file.clone().unwrap();
        let wanted = [a_name.clone(), b_name.clone()].into_iter().collect();
        let found = read_pack(&out, &wanted).unwrap();
        assert_eq!(found.get(&a_name), Some(&a));
        assert_eq!(found.get(&b_name), Some(&b));
    }

    #[test]
    fn long_texts_go_to_the_pack_under_their_content_name_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run").join("s.pack");
        let pack = SummaryPack::new(&path);
        let a = "é".repeat(INLINE_SUMMARY_CHARS + 1);
        let b = format!("{a} and more\nlines");
        let kept = pack
            .keep(vec![(record(), "short"), (record(), &a), (record(), &b)])
            .unwrap();
        assert_eq!(kept[0].text.as_deref(), Some("short"));
        assert_eq!(kept[0].file, None);
        assert_eq!(kept[1].chars, INLINE_SUMMARY_CHARS + 1);
        let name = member_name(&text_digest(&a));
        assert_eq!(kept[1].file.as_deref(), Some(name.as_str()));
        assert!(name.starts_with("summaries/") && name.ends_with(".md"));
        // The same text again (another unit): recorded under the same name.
        let again = pack.keep(vec![(record(), &a)]).unwrap();
        assert_eq!(again[0], kept[1]);
        // Held in memory until flushed: not in the file yet.
        assert!(read_pack(&path, &[name.clone()].into_iter().collect())
            .unwrap()
            .is_empty());
        pack.flush().unwrap();
        let wanted = [kept[1].file.clone().unwrap(), kept[2].file.clone().unwrap()]
            .into_iter()
            .chain(["summaries/absent.md".to_string()])
            .collect();
        let texts = read_pack(&path, &wanted).unwrap();
        assert_eq!(texts.len(), 2);
        assert_eq!(texts[&name], a);
        assert_eq!(texts[kept[2].file.as_ref().unwrap()], b);
        assert!(read_pack(&dir.path().join("none"), &wanted)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_torn_tail_is_cut_before_appending_and_a_damaged_text_is_not_returned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.pack");
        let long = "x".repeat(INLINE_SUMMARY_CHARS + 5);
        let first = SummaryPack::new(&path)
            .keep(vec![(record(), &long)])
            .unwrap();
        let whole = std::fs::metadata(&path).unwrap().len();
        // A crash mid-write: half a record at the end.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"summaries/abc.md 100\nxyz");
        std::fs::write(&path, &bytes).unwrap();
        let name = first[0].file.clone().unwrap();
        let wanted = [name.clone()].into_iter().collect();
        assert_eq!(read_pack(&path, &wanted).unwrap()[&name], long);
        let long2 = "y".repeat(INLINE_SUMMARY_CHARS + 5);
        let second = SummaryPack::new(&path)
            .keep(vec![(record(), &long2)])
            .unwrap();
        let name2 = second[0].file.clone().unwrap();
        let wanted = [name.clone(), name2.clone()].into_iter().collect();
        let texts = read_pack(&path, &wanted).unwrap();
        assert_eq!(
            (texts[&name].as_str(), texts[&name2].as_str()),
            (&*long, &*long2)
        );
        assert!(std::fs::metadata(&path).unwrap().len() > whole);
        // Bytes that do not match their name's digest are not shown as that text: a record
        // written as it is (what a pack held before blocks) and one in a block.
        let wrong = "w".repeat(INLINE_SUMMARY_CHARS + 5);
        let plain = format!("{name} {}\n{wrong}", wrong.len());
        std::fs::write(&path, &plain).unwrap();
        assert!(!read_pack(&path, &wanted).unwrap().contains_key(&name));
        let packed = lz4_flex::block::compress(plain.as_bytes());
        let mut block = format!("#lz4 {} {}\n", plain.len(), packed.len()).into_bytes();
        block.extend_from_slice(&packed);
        std::fs::write(&path, &block).unwrap();
        assert!(!read_pack(&path, &wanted).unwrap().contains_key(&name));
        // The same block with the right text reads.
        let right = format!("{name} {}\n{long}", long.len());
        let packed = lz4_flex::block::compress(right.as_bytes());
        let mut block = format!("#lz4 {} {}\n", right.len(), packed.len()).into_bytes();
        block.extend_from_slice(&packed);
        std::fs::write(&path, &block).unwrap();
        assert_eq!(read_pack(&path, &wanted).unwrap()[&name], long);
    }

    /// Texts that compress go in one block a unit; a unit whose texts do not get shorter is
    /// written as plain records. Both read back, by offset and by a scan, and a reader that
    /// knows no blocks (every header `<name> <length>`) skips a block whole.
    #[test]
    fn after_a_failed_write_every_keep_and_flush_fails_and_the_index_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.pack");
        let pack = SummaryPack::new(&path);
        let long = "y".repeat(INLINE_SUMMARY_CHARS + 1);
        pack.keep(vec![(record(), &long)]).unwrap();
        // The file gone from under the writer: its next write fails.
        pack.file.lock().unwrap().file = None;
        let e = pack.flush().unwrap_err();
        assert_eq!(e.to_string(), "the summaries pack is not open");
        assert_eq!(pack.index_lock().end, None);
        let later = pack.keep(vec![(record(), &long)]).unwrap_err();
        assert!(later
            .to_string()
            .contains("an earlier write of the summaries pack failed"));
        assert!(pack.flush().is_err());
        // Short texts need no write: still recorded inline.
        assert!(pack.keep(vec![(record(), "short")]).is_ok());
    }

    #[test]
    fn records_past_the_flush_size_are_written_without_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.pack");
        let pack = SummaryPack::new(&path);
        let mut rng = fastrand::Rng::with_seed(3);
        let mut kept = 0;
        while std::fs::metadata(&path).map_or(0, |m| m.len()) == 0 {
            let noise: String = (0..20_000).map(|_| rng.alphanumeric()).collect();
            pack.keep(vec![(record(), &noise)]).unwrap();
            kept += noise.len();
            assert!(kept < 2 * FLUSH_AT, "{kept} bytes held");
        }
        assert!(kept >= FLUSH_AT);
    }

    #[test]
    fn a_units_texts_are_one_block_when_that_is_shorter() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.pack");
        let pack = SummaryPack::new(&path);
        let fold = |i: usize| {
            format!(
                "## Fold {i}\n{}",
                "Earlier: the user asked to fix the parser. ".repeat(60)
            )
        };
        let texts: Vec<String> = (1..=4).map(fold).collect();
        let kept = pack
            .keep(texts.iter().map(|t| (record(), t.as_str())).collect())
            .unwrap();
        pack.flush().unwrap();
        let after_block = std::fs::metadata(&path).unwrap().len();
        let raw: usize = kept
            .iter()
            .zip(&texts)
            .map(|(r, t)| r.file.as_ref().unwrap().len() + 6 + t.len())
            .sum();
        assert!(
            after_block * 10 < raw as u64,
            "{after_block} of {raw} bytes"
        );
        // Bytes that do not repeat: no shorter compressed, written as they are.
        let mut rng = fastrand::Rng::with_seed(7);
        let noise: String = (0..INLINE_SUMMARY_CHARS + 50)
            .map(|_| rng.alphanumeric())
            .collect();
        let plain = pack.keep(vec![(record(), &noise)]).unwrap();
        pack.flush().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let tail = &bytes[after_block as usize..];
        assert!(tail.starts_with(plain[0].file.as_ref().unwrap().as_bytes()));
        assert!(tail.ends_with(noise.as_bytes()));
        let all: std::collections::BTreeSet<String> = kept
            .iter()
            .chain(&plain)
            .map(|r| r.file.clone().unwrap())
            .collect();
        let expect = |found: &std::collections::BTreeMap<String, String>| {
            assert_eq!(found.len(), 5);
            for (r, t) in kept.iter().zip(&texts).chain(plain.iter().zip([&noise])) {
                assert_eq!(&found[r.file.as_ref().unwrap()], t);
            }
        };
        // By offset, with the first header's length damaged in place so that no scan could
        // read anything: every text comes from the writer's index, the plain one too.
        let mut damaged = bytes.clone();
        damaged[memchr::memchr(b'\n', &bytes).unwrap() - 1] = b'x';
        std::fs::write(&path, &damaged).unwrap();
        expect(&read_pack(&path, &all).unwrap());
        // The index was taken: a scan of the file as written.
        std::fs::write(&path, &bytes).unwrap();
        expect(&read_pack(&path, &all).unwrap());
        // The header as a reader from before blocks parses it: a record of the block's length.
        let nl = memchr::memchr(b'\n', &bytes).unwrap();
        let head = std::str::from_utf8(&bytes[..nl]).unwrap();
        let (_, len) = head.rsplit_once(' ').unwrap();
        assert_eq!(nl as u64 + 1 + len.parse::<u64>().unwrap(), after_block);
    }

    /// `texts` kept two a unit by one writer of a new pack at `path` (its index registered):
    /// the names, and the pack's bytes.
    fn units_of_two(path: &std::path::Path, texts: &[String]) -> (Vec<String>, Vec<u8>) {
        let _ = std::fs::remove_file(path);
        let pack = SummaryPack::new(path);
        let mut names = Vec::new();
        for pair in texts.chunks(2) {
            let kept = pack
                .keep(pair.iter().map(|t| (record(), t.as_str())).collect())
                .unwrap();
            names.extend(kept.into_iter().map(|r| r.file.unwrap()));
        }
        pack.flush().unwrap();
        (names, std::fs::read(path).unwrap())
    }

    fn unit_texts(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("{i} {}", "summary text, repeated. ".repeat(90 + i)))
            .collect()
    }

    /// Every byte of a pack of two blocks damaged in turn, in place: reading never panics and
    /// never returns a wrong text, by the writer's offsets (each round writes the pack anew,
    /// so its index is there) or by a scan (the index is taken by the first read); and every
    /// text of a block the damage did not touch is still read.
    #[test]
    fn a_damaged_block_never_panics_nor_gives_a_wrong_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.pack");
        let texts = unit_texts(4);
        let (names, bytes) = units_of_two(&path, &texts);
        let first = memchr::memchr(b'\n', &bytes).unwrap();
        let second_at = bytes
            .windows(5)
            .rposition(|w| w == b"#lz4 ")
            .expect("two blocks");
        assert!(second_at > first);
        // Where records start and end: each header's last space, length and newline.
        let length_fields: Vec<std::ops::RangeInclusive<usize>> = [0, second_at]
            .iter()
            .map(|&at| {
                let nl = at + memchr::memchr(b'\n', &bytes[at..]).unwrap();
                at + memchr::memrchr(b' ', &bytes[at..nl]).unwrap()..=nl
            })
            .collect();
        let all: std::collections::BTreeSet<String> = names.iter().cloned().collect();
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80] {
                units_of_two(&path, &texts);
                let mut damaged = bytes.clone();
                damaged[i] ^= flip;
                std::fs::write(&path, &damaged).unwrap();
                for read in ["by offset", "by scan"] {
                    let found = read_pack(&path, &all).unwrap();
                    for (k, (name, text)) in names.iter().zip(&texts).enumerate() {
                        if let Some(got) = found.get(name) {
                            assert_eq!(got, text, "byte {i} ^ {flip:#x}, {read}");
                        }
                        // A block the damage did not touch: its texts read (damage to the
                        // first block's length field aside, which moves where the second
                        // starts).
                        let untouched = if k < 2 { i >= second_at } else { i < second_at };
                        let length_field = length_fields.iter().any(|r| r.contains(&i));
                        if untouched && !(length_field && k >= 2) {
                            assert!(
                                found.contains_key(name),
                                "text {k} lost: byte {i} ^ {flip:#x}, {read}"
                            );
                        }
                    }
                }
            }
        }
        // A writer cuts a torn block off and appends after the whole records.
        let mut torn = bytes.clone();
        torn.truncate(bytes.len() - 3);
        std::fs::write(&path, &torn).unwrap();
        let again = SummaryPack::new(&path)
            .keep(vec![(record(), texts[3].as_str())])
            .unwrap();
        assert_eq!(again[0].file.as_ref(), Some(&names[3]));
        let found = read_pack(&path, &all).unwrap();
        // The second block held texts 2 and 3: text 3 was written again, text 2 is lost.
        assert_eq!(found.keys().collect::<Vec<_>>().len(), 3);
        assert!(!found.contains_key(&names[2]));
        for i in [0, 1, 3] {
            assert_eq!(found[&names[i]], texts[i]);
        }
    }

    /// A block whose bytes are damaged (zeroed, as a crash can leave a file's end on some file
    /// systems) or whose header's raw length is, gives no text; the records after it are still
    /// read, and a writer opening the pack appends after them, cutting nothing.
    #[test]
    fn a_damaged_block_in_the_middle_hides_nothing_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.pack");
        let texts = unit_texts(6);
        let (names, bytes) = units_of_two(&path, &texts);
        let heads: Vec<usize> = (0..bytes.len())
            .filter(|&i| bytes[i..].starts_with(b"#lz4 "))
            .collect();
        assert_eq!(heads.len(), 3);
        let all: std::collections::BTreeSet<String> = names.iter().cloned().collect();
        let zeroed = {
            let mut b = bytes.clone();
            let body = heads[1] + memchr::memchr(b'\n', &bytes[heads[1]..]).unwrap() + 1;
            b[body..heads[2]].fill(0);
            b
        };
        let bad_raw = {
            let mut b = bytes.clone();
            b[heads[1] + 5] = b'x';
            b
        };
        for damaged in [zeroed, bad_raw] {
            std::fs::write(&path, &damaged).unwrap();
            let found = read_pack(&path, &all).unwrap();
            let read: Vec<usize> = (0..6).filter(|&k| found.contains_key(&names[k])).collect();
            assert_eq!(read, [0, 1, 4, 5]);
            let more = "m".repeat(INLINE_SUMMARY_CHARS + 3);
            let kept = SummaryPack::new(&path)
                .keep(vec![(record(), &more)])
                .unwrap();
            assert!(std::fs::metadata(&path).unwrap().len() > damaged.len() as u64);
            let name = kept[0].file.clone().unwrap();
            let wanted = all.iter().cloned().chain([name.clone()]).collect();
            let found = read_pack(&path, &wanted).unwrap();
            assert_eq!(found.len(), 5);
            assert_eq!(found[&name], more);
        }
    }

    /// A header claiming a length near `u64::MAX` (a crafted or badly damaged file) ends the
    /// scan: no overflow, no allocation of that size, no endless loop.
    #[test]
    fn a_length_near_the_largest_number_ends_the_scan() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.pack");
        let texts = unit_texts(2);
        let (names, bytes) = units_of_two(&path, &texts);
        let all: std::collections::BTreeSet<String> = names.iter().cloned().collect();
        for tail in [
            format!("#lz4 5 {}\n", u64::MAX - 10),
            format!("summaries/x.md {}\n", u64::MAX),
            format!("{} {}\n", names[0], u64::MAX - 20),
        ] {
            let mut b = bytes.clone();
            b.extend_from_slice(tail.as_bytes());
            std::fs::write(&path, &b).unwrap();
            assert_eq!(read_pack(&path, &all).unwrap().len(), 2);
            SummaryPack::new(&path)
                .keep(vec![(record(), texts[0].as_str())])
                .unwrap();
            assert_eq!(std::fs::read(&path).unwrap()[..bytes.len()], bytes[..]);
        }
    }

    #[test]
    fn the_writers_index_reads_the_wanted_texts_at_their_offsets_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.pack");
        let texts: Vec<String> = (0..6)
            .map(|i| format!("{i}{}", "t".repeat(INLINE_SUMMARY_CHARS + i)))
            .collect();
        let (names, bytes) = units_of_two(&path, &texts);
        // The first header damaged in place (same length: its last digit): a scan stops there,
        // the index does not need it.
        assert!(bytes.starts_with(b"#lz4 "), "a unit's texts in one block");
        let mut damaged = bytes.clone();
        damaged[memchr::memchr(b'\n', &bytes).unwrap() - 1] = b'x';
        std::fs::write(&path, &damaged).unwrap();
        let wanted: std::collections::BTreeSet<String> = names[1..].iter().cloned().collect();
        let found = read_pack(&path, &wanted).unwrap();
        assert_eq!(found.len(), 5, "read by offset");
        for (name, text) in names.iter().zip(&texts).skip(1) {
            assert_eq!(found[name], *text);
        }
        // Taken by the first reader: a second one scans (and stops at the damage).
        assert!(read_pack(&path, &wanted).unwrap().is_empty());
        // With the file as written and the index back, the same texts as a scan.
        std::fs::write(&path, &bytes).unwrap();
        let reopened = SummaryPack::new(&path);
        let more = reopened.keep(vec![(record(), &texts[0])]).unwrap();
        reopened.flush().unwrap();
        assert_eq!(more[0].file.as_ref(), Some(&names[0]));
        let all: std::collections::BTreeSet<String> = names.iter().cloned().collect();
        // The reopened writer indexed only its own text: the rest needs the scan.
        let found = read_pack(&path, &all).unwrap();
        assert_eq!(found.len(), 6);
        // A file that changed since its writer's last append is scanned, not read by offset.
        let third = SummaryPack::new(&path);
        let last = "z".repeat(INLINE_SUMMARY_CHARS + 1);
        let r = third.keep(vec![(record(), &last)]).unwrap();
        third.flush().unwrap();
        let mut grown = std::fs::read(&path).unwrap();
        grown.extend_from_slice(b"summaries/abc.md 3\nabc");
        std::fs::write(&path, &grown).unwrap();
        let name = r[0].file.clone().unwrap();
        let one = [name.clone()].into_iter().collect();
        assert_eq!(read_pack(&path, &one).unwrap()[&name], last);
    }
}
