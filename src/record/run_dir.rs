//! [`RunDir`]: the one owner of a run directory — every file name in it, and the reading and
//! writing of its two sources of truth, `run.json` and `samples.jsonl`.
//!
//! Other modules never join a file name onto a run directory themselves: they ask `RunDir` for
//! the path (`report_md()`, `unit_store(id)`, …) or for the operation (`write_run_json`,
//! `create_journal`, `resume_journal`, `read`). The line format of `samples.jsonl` is
//! [`super::journal`]'s; the encoding of `run.json` (pretty JSON, trailing newline, written via
//! a temporary file and a rename) is here. `run.json` is one JSON object: [`RunInfo`]'s fields,
//! plus what the runner adds (`runner::manifest::RunManifest` flattens `RunInfo` in), so both
//! are read and written through the generic [`RunDir::read_run_json`] / [`RunDir::write_run_json`].

use super::journal::{
    read_samples, repair, Journal, JournalError, Repaired, SamplesRead, TornLine,
};
use super::summary::{member_name, read_pack, SummaryPack, SummaryRecord};
use super::{LockError, RunInfo, RunLock, Sample, SCHEMA_VERSION};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const RUN_JSON: &str = "run.json";
/// Temporary file `run.json` is written to before the rename (hidden, so a listing of a run
/// directory caught mid-write does not show it).
const RUN_JSON_TMP: &str = ".run.json.tmp";
const SAMPLES_JSONL: &str = "samples.jsonl";
const RESULTS_CSV: &str = "results.csv";
const SUMMARY_JSON: &str = "summary.json";
const REPORT_MD: &str = "report.md";
const REPORT_HTML: &str = "report.html";
const PLOTS: &str = "plots";
const STORES: &str = "stores";
const STORES_PACK: &str = "stores.pack";
const SUMMARIES_PACK: &str = "summaries.pack";
const GATE_XML: &str = "gate.xml";
const COMPARE_MD: &str = "compare.md";
const COMPARE_JSON: &str = "compare.json";

/// A run directory (`reports/<run-id>/`, or any directory given on the command line). Cheap to
/// make: it holds only the path; nothing is touched until a method reads or writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunDir {
    root: PathBuf,
}

/// A saved run: its `run.json` and the samples of its journal.
#[derive(Clone, Debug)]
pub struct Run {
    pub dir: PathBuf,
    pub info: RunInfo,
    pub samples: Vec<Sample>,
    /// Torn final journal line, if any (reported by the caller).
    pub torn: Option<TornLine>,
}

impl RunDir {
    pub fn new(root: impl Into<PathBuf>) -> RunDir {
        RunDir { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `run.json`: what the run was and how it went.
    pub fn run_json(&self) -> PathBuf {
        self.root.join(RUN_JSON)
    }

    /// `samples.jsonl`: the journal, one sample per line.
    pub fn samples_jsonl(&self) -> PathBuf {
        self.root.join(SAMPLES_JSONL)
    }

    /// `results.csv`: one flat row per sample.
    pub fn results_csv(&self) -> PathBuf {
        self.root.join(RESULTS_CSV)
    }

    /// `summary.json`: the statistics of the report model.
    pub fn summary_json(&self) -> PathBuf {
        self.root.join(SUMMARY_JSON)
    }

    /// `report.md`.
    pub fn report_md(&self) -> PathBuf {
        self.root.join(REPORT_MD)
    }

    /// `report.html` (self-contained, plots inline).
    pub fn report_html(&self) -> PathBuf {
        self.root.join(REPORT_HTML)
    }

    /// `plots/`: one SVG (and PNG) per plot.
    pub fn plots_dir(&self) -> PathBuf {
        self.root.join(PLOTS)
    }

    /// `plots/<name>.<ext>`.
    pub fn plot(&self, name: &str, ext: &str) -> PathBuf {
        self.plots_dir().join(format!("{name}.{ext}"))
    }

    /// `stores/<unit-id>/`: the offload store of one unit (stable, so evidence can point at it).
    pub fn unit_store(&self, unit_id: &str) -> PathBuf {
        self.stores_dir().join(unit_id)
    }

    /// `stores.pack`: the stores units held in memory that the run may keep (but cannot tell
    /// yet), one record each, and a marker per store not written (`engine::store::PackFile`),
    /// until the end of the run unpacks the kept ones under `stores/` and removes it.
    pub fn stores_pack(&self) -> PathBuf {
        self.root.join(STORES_PACK)
    }

    /// `stores/`: one offload store per unit (pruned after a run: `runner::stores`).
    pub fn stores_dir(&self) -> PathBuf {
        self.root.join(STORES)
    }

    /// `summaries.pack`: the run's long summary texts, appended as units finish
    /// ([`SummaryPack`] writes and reads it).
    pub fn summaries_pack(&self) -> PathBuf {
        self.root.join(SUMMARIES_PACK)
    }

    /// The writer of [`RunDir::summaries_pack`] (one per run: units share it).
    pub fn summary_pack(&self) -> SummaryPack {
        SummaryPack::new(self.summaries_pack())
    }

    /// The texts of `records` by `text_digest`: inline ones as they are, long ones read from
    /// [`RunDir::summaries_pack`] in one pass (or, in a run written before the pack, from the
    /// file the record names under this directory). A text that cannot be read is left out.
    pub fn summary_texts<'r>(
        &self,
        records: impl IntoIterator<Item = &'r SummaryRecord>,
    ) -> std::io::Result<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        let mut wanted = BTreeMap::new();
        for r in records {
            match (&r.text, &r.file) {
                (Some(t), _) => {
                    out.insert(r.text_digest.clone(), t.clone());
                }
                (None, Some(_)) => {
                    wanted.insert(member_name(&r.text_digest), r.text_digest.clone());
                }
                (None, None) => {}
            }
        }
        if wanted.is_empty() {
            return Ok(out);
        }
        let names = wanted.keys().cloned().collect();
        let mut found = read_pack(&self.summaries_pack(), &names)?;
        for (name, digest) in wanted {
            let text = match found.remove(&name) {
                Some(t) => t,
                None => match std::fs::read_to_string(self.root.join(&name)) {
                    Ok(t) => t,
                    Err(_) => continue,
                },
            };
            out.insert(digest, text);
        }
        Ok(out)
    }

    /// The text of one recorded summary ([`RunDir::summary_texts`]).
    pub fn summary_text(&self, record: &SummaryRecord) -> std::io::Result<String> {
        self.summary_texts([record])?
            .remove(&record.text_digest)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!(
                        "{}: no text {}",
                        self.summaries_pack().display(),
                        record.file.as_deref().unwrap_or(&record.text_digest)
                    ),
                )
            })
    }

    /// `gate.xml`: default place of `ctxbench gate`'s JUnit XML.
    pub fn gate_xml(&self) -> PathBuf {
        self.root.join(GATE_XML)
    }

    /// `compare.md`: default place of `ctxbench compare`'s Markdown.
    pub fn compare_md(&self) -> PathBuf {
        self.root.join(COMPARE_MD)
    }

    /// `compare.json`: default place of `ctxbench compare`'s JSON.
    pub fn compare_json(&self) -> PathBuf {
        self.root.join(COMPARE_JSON)
    }

    /// Write `run.json` (pretty-printed, trailing newline) via a temporary file and a rename, so
    /// a crash never leaves half a file. `value` is a [`RunInfo`] or a type that flattens one in.
    pub fn write_run_json<T: Serialize>(&self, value: &T) -> std::io::Result<()> {
        let tmp = self.root.join(RUN_JSON_TMP);
        let mut text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
        text.push('\n');
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, self.run_json())
    }

    /// Read `run.json` as `T` (a [`RunInfo`], or a type that flattens one in). A file written by
    /// a newer ctxbench (`schema_version` above [`SCHEMA_VERSION`]) is refused.
    pub fn read_run_json<T: DeserializeOwned>(&self) -> Result<T, JournalError> {
        #[derive(serde::Deserialize)]
        struct Version {
            #[serde(default)]
            schema_version: u32,
        }
        let path = self.run_json();
        let text = std::fs::read_to_string(&path).map_err(|source| JournalError::NoRunInfo {
            path: path.clone(),
            source,
        })?;
        let bad = |e: serde_json::Error| JournalError::BadRunInfo {
            path: path.clone(),
            line: e.line(),
            message: e.to_string(),
        };
        // Any JSON value parses as the fields' struct one way or another (serde reads an array as
        // the fields in order): what is no object is said as what run.json must be.
        let value: serde_json::Value = serde_json::from_str(&text).map_err(bad)?;
        if !value.is_object() {
            let line = text.lines().position(|l| !l.trim().is_empty()).unwrap_or(0) + 1;
            return Err(JournalError::BadRunInfo {
                path,
                line,
                message: format!(
                    "expected a JSON object (`{{\"schema_version\": …, \"run_id\": …, …}}`, the \
                     record `ctxbench run` writes of a run), found {}",
                    crate::output::json_kind(&value)
                ),
            });
        }
        let version: Version = serde_json::from_str(&text).map_err(bad)?;
        if version.schema_version > SCHEMA_VERSION {
            return Err(JournalError::FutureVersion {
                path,
                line: 1,
                found: version.schema_version,
            });
        }
        serde_json::from_str(&text).map_err(bad)
    }

    /// Take ownership of the run directory for this process's life (see [`super::lock`]): a
    /// second writer gets [`LockError::Held`] naming the holder's pid.
    pub fn lock(&self) -> Result<RunLock, LockError> {
        super::lock::acquire(&self.root)
    }

    /// Whether this is a run that never started: `run` creates the directory, its lock and an
    /// empty journal before it first writes run.json, so a run killed in between (kill -9, a
    /// crash) leaves a real directory with no run.json holding only `.lock`, an empty
    /// `samples.jsonl` and perhaps a half-written `.run.json.tmp`. Nothing was recorded or
    /// spent: `run --resume DIR` (or `run --run-id` naming it) starts such a run over in
    /// place, `clean` removes it, `repair` refuses it (docs/reliability.md, "Resume").
    pub fn never_started(&self) -> bool {
        let is_dir = std::fs::symlink_metadata(&self.root).is_ok_and(|m| m.is_dir());
        if !is_dir || std::fs::symlink_metadata(self.run_json()).is_ok() {
            return false;
        }
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return false;
        };
        let mut lock = false;
        for entry in entries {
            let Ok(entry) = entry else { return false };
            let Ok(meta) = entry.metadata() else {
                return false;
            };
            let name = entry.file_name();
            let fits = meta.is_file()
                && match name.to_str() {
                    Some(super::lock::LOCK_FILE) => {
                        lock = true;
                        true
                    }
                    Some(SAMPLES_JSONL) => meta.len() == 0,
                    Some(RUN_JSON_TMP) => true,
                    _ => false,
                };
            if !fits {
                return false;
            }
        }
        lock
    }

    /// Whether `run --resume` can take this directory: a run (its run.json is a file) or one
    /// that [never started](RunDir::never_started). Checked before the lock is taken, so a
    /// directory that is neither (empty, or no run at all) gets no `.lock`: in an empty one the
    /// lock itself would make it look like a run that never started.
    pub fn resumable(&self) -> bool {
        self.run_json().is_file() || self.never_started()
    }

    /// Clear a run that [never started](RunDir::never_started) for a new start in place: its
    /// empty journal and half-written run.json go (the caller holds its lock).
    pub fn clear_never_started(&self) -> std::io::Result<()> {
        for path in [self.samples_jsonl(), self.root.join(RUN_JSON_TMP)] {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// The pid of the live process writing this run, if one is (a run in progress): readers
    /// then see only the samples journaled so far.
    pub fn writer(&self) -> Option<u32> {
        super::lock::holder(&self.root)
    }

    /// What a reader prints about a run still being written by `pid`.
    pub fn in_progress_note(&self, pid: u32) -> String {
        let who = if pid == 0 {
            "another process".to_string()
        } else {
            format!("process {pid}")
        };
        format!(
            "note: {} is still being written by {who} (a run in progress): only the samples \
             journaled so far are read (complete lines only); the figures are partial",
            self.root.display()
        )
    }

    /// Start the journal of a new run; fails if it exists (never clobbers a run).
    pub fn create_journal(&self) -> Result<Journal, JournalError> {
        Journal::create(&self.samples_jsonl())
    }

    /// Reopen the journal to continue a run (creating it if missing): a torn last line left by
    /// a crash is cut first and returned, then the samples that remain are read.
    pub fn resume_journal(&self) -> Result<(Journal, Vec<Sample>, Option<TornLine>), JournalError> {
        let (journal, torn) = Journal::open_append(&self.samples_jsonl())?;
        let samples = read_samples(&self.samples_jsonl())?.samples;
        Ok((journal, samples, torn))
    }

    /// Every sample of the journal, and a torn final line if any. A missing journal is an error.
    pub fn read_samples(&self) -> Result<SamplesRead, JournalError> {
        read_samples(&self.samples_jsonl())
    }

    /// Like [`RunDir::read_samples`], but a missing journal reads as empty (a run killed before
    /// its first unit finished, or a shard with no units).
    pub fn read_samples_or_empty(&self) -> Result<SamplesRead, JournalError> {
        if !self.samples_jsonl().exists() {
            return Ok(SamplesRead::default());
        }
        self.read_samples()
    }

    /// Where [`RunDir::repair_journal`] moves unreadable journal lines.
    /// `samples.replaced.jsonl`: failed attempts `run --resume --retry-failed` took out of the
    /// journal to run their units again (what they spent still counts against the budget).
    pub fn replaced_jsonl(&self) -> PathBuf {
        self.root.join("samples.replaced.jsonl")
    }

    pub fn rejected_jsonl(&self) -> PathBuf {
        self.root.join("samples.rejected.jsonl")
    }

    /// How far the run got ([`super::RunProgress`]: `run.json`'s status and unit counts), with
    /// the lines of [`RunDir::rejected_jsonl`] counted (a missing or unreadable file: none).
    pub fn read_progress(&self) -> Result<super::RunProgress, JournalError> {
        let mut progress: super::RunProgress = self.read_run_json()?;
        progress.rejected = std::fs::read(self.rejected_jsonl())
            .map(|bytes| {
                bytes
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .count()
            })
            .unwrap_or(0);
        Ok(progress)
    }

    /// Move unreadable journal lines (corrupt, not a sample, torn) to the end of
    /// [`RunDir::rejected_jsonl`] and keep the readable ones; see `journal::repair`.
    pub fn repair_journal(&self) -> Result<Repaired, JournalError> {
        repair(&self.samples_jsonl(), &self.rejected_jsonl())
    }

    /// Write `samples` as a new journal (fails if it exists), synced to disk.
    pub fn write_samples(&self, samples: &[Sample]) -> Result<(), JournalError> {
        let mut j = self.create_journal()?;
        for s in samples {
            j.append(s)?;
        }
        j.sync()
    }

    /// Read the run: `run.json` as a [`RunInfo`] and every sample of `samples.jsonl`.
    pub fn read(&self) -> Result<Run, JournalError> {
        let info: RunInfo = self.read_run_json()?;
        let read = self.read_samples()?;
        Ok(Run {
            dir: self.root.clone(),
            info,
            samples: read.samples,
            torn: read.torn,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn sample(id: &str) -> Sample {
        Sample::builder().unit_id(id).build()
    }

    #[test]
    fn a_run_that_never_started_holds_only_its_lock_and_an_empty_journal() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::new(tmp.path().join("r"));
        std::fs::create_dir(dir.root()).unwrap();
        assert!(!dir.never_started(), "an empty directory has no lock");
        assert!(!dir.resumable(), "nor is it a run to resume");
        std::fs::write(dir.root().join(".lock"), "1\n").unwrap();
        assert!(dir.never_started() && dir.resumable());
        std::fs::write(dir.samples_jsonl(), "").unwrap();
        std::fs::write(dir.root().join(RUN_JSON_TMP), "{").unwrap();
        assert!(dir.never_started());
        std::fs::write(dir.samples_jsonl(), "{}\n").unwrap();
        assert!(!dir.never_started(), "a journal with lines");
        std::fs::write(dir.samples_jsonl(), "").unwrap();
        std::fs::write(dir.run_json(), "{}").unwrap();
        assert!(!dir.never_started(), "run.json was written");
        assert!(dir.resumable());
        std::fs::remove_file(dir.run_json()).unwrap();
        std::fs::create_dir(dir.stores_dir()).unwrap();
        assert!(!dir.never_started(), "anything else");
        std::fs::remove_dir(dir.stores_dir()).unwrap();
        dir.clear_never_started().unwrap();
        assert!(dir.never_started());
        assert!(!dir.samples_jsonl().exists() && dir.root().join(".lock").exists());
        let link = RunDir::new(tmp.path().join("link"));
        std::os::unix::fs::symlink(dir.root(), link.root()).unwrap();
        assert!(!link.never_started(), "a link is no run directory");
    }

    #[test]
    fn paths_keep_the_documented_layout() {
        let d = RunDir::new("/r");
        let names: Vec<PathBuf> = vec![
            d.run_json(),
            d.samples_jsonl(),
            d.results_csv(),
            d.summary_json(),
            d.report_md(),
            d.report_html(),
            d.plot("recall", "svg"),
            d.unit_store("u1"),
            d.gate_xml(),
            d.compare_md(),
            d.compare_json(),
        ];
        let want = [
            "/r/run.json",
            "/r/samples.jsonl",
            "/r/results.csv",
            "/r/summary.json",
            "/r/report.md",
            "/r/report.html",
            "/r/plots/recall.svg",
            "/r/stores/u1",
            "/r/gate.xml",
            "/r/compare.md",
            "/r/compare.json",
        ];
        assert_eq!(names, want.iter().map(PathBuf::from).collect::<Vec<_>>());
    }

    /// No module but this one spells a run directory's file names as string literals outside
    /// its tests: they ask `RunDir` for the path instead.
    #[test]
    fn no_other_source_file_spells_a_run_directory_file_name() {
        let names = [
            RUN_JSON,
            RUN_JSON_TMP,
            SAMPLES_JSONL,
            RESULTS_CSV,
            SUMMARY_JSON,
            REPORT_MD,
            REPORT_HTML,
            PLOTS,
            STORES,
            STORES_PACK,
            SUMMARIES_PACK,
            GATE_XML,
            COMPARE_MD,
            COMPARE_JSON,
        ];
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut offenders = Vec::new();
        let mut dirs = vec![src];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.ends_with("record/run_dir.rs")
                {
                    let text = std::fs::read_to_string(&path).unwrap();
                    // Test modules (at the end of a file) may check the on-disk layout.
                    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                    for name in names {
                        if code.contains(&format!("\"{name}\"")) {
                            offenders.push(format!("{}: \"{name}\"", path.display()));
                        }
                    }
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "ask record::RunDir for these paths: {offenders:?}"
        );
    }

    #[test]
    fn run_json_round_trips_without_leaving_a_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = RunDir::new(dir.path());
        let mut info = RunInfo::new("r2");
        info.variants = vec!["a".into()];
        d.write_run_json(&info).unwrap();
        let text = std::fs::read_to_string(dir.path().join("run.json")).unwrap();
        assert!(text.ends_with("}\n"), "{text}");
        assert_eq!(d.read_run_json::<RunInfo>().unwrap(), info);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only run.json remains: {left:?}");
    }

    #[test]
    fn run_json_errors_name_the_file_line_and_version() {
        let dir = tempfile::tempdir().unwrap();
        let d = RunDir::new(dir.path());
        let missing = d.read_run_json::<RunInfo>().unwrap_err().to_string();
        assert!(
            missing.contains("run.json") && missing.contains("run directory"),
            "{missing}"
        );
        std::fs::write(
            d.run_json(),
            "{\n  \"schema_version\": 1,\n  \"run_id\": 3\n}\n",
        )
        .unwrap();
        let bad = d.read_run_json::<RunInfo>().unwrap_err().to_string();
        assert!(bad.contains("run.json:3:"), "{bad}");
        let mut info = RunInfo::new("future");
        info.schema_version = SCHEMA_VERSION + 1;
        d.write_run_json(&info).unwrap();
        let future = d.read_run_json::<RunInfo>().unwrap_err().to_string();
        assert!(future.contains("schema_version"), "{future}");
    }

    #[test]
    fn run_json_that_is_no_object_is_said_as_what_run_json_must_be() {
        let dir = tempfile::tempdir().unwrap();
        let d = RunDir::new(dir.path());
        for (text, found) in [
            ("[]\n", "found an array"),
            ("\n[1, 2]\n", "found an array"),
            ("\"x\"", "found a string"),
            ("3", "found a number"),
            ("null", "found null"),
        ] {
            std::fs::write(d.run_json(), text).unwrap();
            let e = d.read_run_json::<RunInfo>().unwrap_err().to_string();
            assert!(e.contains("run.json:"), "{e}");
            assert!(e.contains("expected a JSON object"), "{e}");
            assert!(e.contains(found), "{text}: {e}");
            assert!(!e.contains("struct") && !e.contains("elements"), "{e}");
        }
        std::fs::write(d.run_json(), "\n[]\n").unwrap();
        let e = d.read_run_json::<RunInfo>().unwrap_err().to_string();
        assert!(e.contains("run.json:2:"), "{e}");
    }

    #[test]
    fn read_reads_info_and_samples() {
        let dir = tempfile::tempdir().unwrap();
        let d = RunDir::new(dir.path());
        let info = RunInfo::new("r");
        d.write_run_json(&info).unwrap();
        d.write_samples(&[sample("a")]).unwrap();
        let run = d.read().unwrap();
        assert_eq!(run.info, info);
        assert_eq!(run.samples, vec![sample("a")]);
        let missing = RunDir::new(dir.path().join("nope"))
            .read()
            .unwrap_err()
            .to_string();
        assert!(missing.contains("run.json"), "{missing}");
    }

    #[test]
    fn resume_cuts_a_torn_tail_and_appends_after_the_last_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let d = RunDir::new(dir.path());
        assert!(
            d.read_samples_or_empty().unwrap().samples.is_empty(),
            "missing journal reads as empty"
        );
        assert!(d.read_samples().is_err(), "unless it must exist");
        d.write_samples(&[sample("a")]).unwrap();
        let half = serde_json::to_string(&sample("b")).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(d.samples_jsonl())
            .unwrap()
            .write_all(&half.as_bytes()[..half.len() / 2])
            .unwrap();
        assert_eq!(d.read_samples().unwrap().torn.map(|t| t.line), Some(2));
        let (mut j, samples, torn) = d.resume_journal().unwrap();
        assert_eq!(samples.len(), 1);
        assert!(torn.is_some());
        j.append(&sample("c")).unwrap();
        let read = d.read_samples().unwrap();
        assert!(read.torn.is_none());
        assert_eq!(
            read.samples
                .iter()
                .map(|s| s.unit_id.as_str())
                .collect::<Vec<_>>(),
            ["a", "c"]
        );
        assert!(d.write_samples(&[]).is_err(), "never overwrites a journal");
    }
}
