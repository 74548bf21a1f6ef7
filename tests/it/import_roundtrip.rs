//! Round trips on every bundled trace: canonical → JSONL → canonical is identical, and
//! ATIF export → import gives the identical trace.

use ctxbench::trace::import::{atif, import_file, import_paths};
use ctxbench::trace::{io, SourceFormat, Trace};
use std::path::PathBuf;

fn all() -> Vec<Trace> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets");
    let imported = import_paths(&[root], None, false).unwrap();
    assert_eq!(imported.traces.len(), 290);
    imported.traces
}

#[test]
fn canonical_jsonl_round_trip_is_identical_for_every_dataset_trace() {
    let traces = all();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all.jsonl");
    io::write_traces_file(&path, &traces).unwrap();
    let back = io::read_traces(&path).unwrap();
    assert_eq!(back.len(), traces.len());
    for (a, b) in traces.iter().zip(&back) {
        assert_eq!(a, b, "{}", a.meta.id);
    }
    // import_file detects canonical JSONL and keeps the recorded source paths
    let again = import_file(&path, None).unwrap();
    assert_eq!(again, traces);
}

#[test]
fn atif_export_then_import_is_identical_for_every_dataset_trace() {
    let dir = tempfile::tempdir().unwrap();
    for t in all() {
        let doc = atif::to_atif(&t);
        let path = dir.path().join(format!("{}.json", t.meta.id));
        std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
        let mut back = import_file(&path, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.len(), 1);
        let back = back.remove(0);
        // the file it was re-imported from is the one thing that legitimately changes
        assert_eq!(
            back.meta.source_path.as_deref(),
            Some(path.to_str().unwrap())
        );
        let mut back = back;
        back.meta.source_path = t.meta.source_path.clone();
        assert_eq!(back, t, "{}", t.meta.id);
        assert_eq!(
            import_file(&path, Some(SourceFormat::Atif)).unwrap()[0].messages,
            t.messages
        );
    }
}
