//! Unit tests of the needle eval: preparing, asking and scoring on a bundled trace.

use super::*;
use crate::engine::{EngineConfig, OfflineSummarizer};

/// The bundled astropy trace and the deepagents preset at a window of 8,000 tokens.
fn astropy_deepagents() -> (crate::trace::Trace, ResolvedConfig) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/mini-swe-agent/astropy__astropy-12907.traj.json");
    let trace = crate::trace::import::import_file(&path, None)
        .unwrap()
        .remove(0);
    let config = EngineConfig::default()
        .apply_sets(&["preset=\"deepagents\"".into(), "window=8000".into()])
        .unwrap()
        .resolve(None)
        .unwrap();
    (trace, config)
}

/// A bundled trace replayed under a summarizing preset at a small window.
fn prepared(needles: usize, dir: &std::path::Path) -> Prepared {
    prepared_with(needles, dir, false)
}

fn prepared_with(needles: usize, dir: &std::path::Path, pack_store: bool) -> Prepared {
    let (trace, config) = astropy_deepagents();
    let mut p: BTreeMap<String, Value> = BTreeMap::new();
    p.insert("depth".into(), json!(0.2));
    p.insert("needles".into(), json!(needles));
    p.insert("position".into(), json!("user"));
    let mut params = NeedleParams::from_params(&p).unwrap();
    params.pack_store = pack_store;
    let summ = OfflineSummarizer;
    prepare(
        &trace,
        &config,
        &params,
        &summ,
        PriceTable::bundled(),
        dir.into(),
        3,
    )
    .unwrap()
}

/// A store held in memory (packed) gives byte-identical answers, scores and evidence to the
/// same store written as a directory, and unpacks to the same files.
#[test]
fn a_store_held_in_memory_changes_nothing() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let agent = OfflineProvider::new();
    let dir = tempfile::tempdir().unwrap();
    let run = |pack: bool| {
        let root = dir.path().join(if pack { "mem" } else { "disk" });
        let p = prepared_with(3, &root, pack);
        let answers = rt
            .block_on(ask(&p, &agent, 4, 200, NeedleSearch::Auto, "n"))
            .unwrap();
        let (scores, evidence) = score(&p, &answers);
        (serde_json::to_string(&(scores, evidence)).unwrap(), p)
    };
    let (disk, pd) = run(false);
    let (mem, pm) = run(true);
    assert!(pd.store_files.is_none() && pm.store_files.is_some());
    assert_eq!(disk, mem);
    // The invariants (pointers resolve to the removed bytes, among others) are checked against
    // the store held in memory as against the one on disk, call for call.
    assert!(pm.replay.invariants.calls_checked > 0);
    assert!(pm
        .replay
        .events
        .iter()
        .any(|e| e.detail.summary().is_some()));
    assert_eq!(pd.replay.invariants, pm.replay.invariants);
    assert!(disk.contains("\"tool_uses\""), "{disk}");
    assert!(
        !dir.path().join("mem").exists(),
        "nothing written while held in memory"
    );
    let pack = crate::engine::store::pack_path(&dir.path().join("mem"));
    crate::engine::store::write_pack(&pack, pm.store_files.as_ref().unwrap()).unwrap();
    crate::engine::store::unpack(&pack, &dir.path().join("mem")).unwrap();
    let tree = |root: std::path::PathBuf| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = walkdir::WalkDir::new(&root)
            .into_iter()
            .map(Result::unwrap)
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                let rel = e.path().strip_prefix(&root).unwrap().display().to_string();
                (rel, std::fs::read(e.path()).unwrap())
            })
            .collect();
        v.sort();
        v
    };
    let files = tree(dir.path().join("disk"));
    assert!(!files.is_empty());
    assert_eq!(files, tree(dir.path().join("mem")));
}

#[test]
fn every_question_gets_the_whole_conversations_back() {
    let dir = tempfile::tempdir().unwrap();
    let p = prepared(3, dir.path());
    assert!(
        p.view_len > 0 && p.cut > p.view_len,
        "{} {}",
        p.view_len,
        p.cut
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let agent = OfflineProvider::new();
    let ask_all = || {
        rt.block_on(ask(&p, &agent, 4, 200, NeedleSearch::Auto, "n"))
            .unwrap()
    };
    let first = ask_all();
    assert_eq!(first.len(), 3);
    // The reference holds every needle, so the offline agent finds each there; a question
    // asked on a history that was not given back whole would miss it.
    for a in &first {
        assert!(a.reference.as_ref().unwrap().recovered, "{}", a.key);
    }
    let again = ask_all();
    let answers = |v: &[Answer]| -> Vec<(String, bool, bool, u32)> {
        v.iter()
            .map(|a| {
                let r = a.reference.as_ref().unwrap();
                (r.answer.clone(), a.recovered, a.in_view, a.outcome.steps)
            })
            .collect()
    };
    assert_eq!(answers(&first), answers(&again));
    let (scores, evidence) = score(&p, &first);
    assert_eq!(scores["reference_recall"], 1.0);
    assert_eq!(evidence["reference_messages"], json!(p.cut));
    assert_eq!(evidence["view_messages"], json!(p.view_len));
}

#[test]
fn params_read_fold_and_corrected() {
    let mut p: BTreeMap<String, Value> = BTreeMap::new();
    p.insert("depth".into(), json!(0.3));
    let plain = NeedleParams::from_params(&p).unwrap();
    assert_eq!((plain.fold, plain.corrected), (None, false));
    p.insert("fold".into(), json!(3));
    p.insert("corrected".into(), json!(true));
    let q = NeedleParams::from_params(&p).unwrap();
    assert_eq!((q.fold, q.corrected), (Some(3), true));
    p.insert("fold".into(), json!(0));
    let e = NeedleParams::from_params(&p).unwrap_err().to_string();
    assert!(e.contains("fold"), "{e}");
}

/// Every file under `dir` (relative path, bytes), sorted.
fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Everything a prepared sample holds, as text: the replay (calls, events, kept views,
/// invariants), its store (writes, files in memory), the conversations and the facts.
fn fingerprint(p: &Prepared) -> String {
    let mut store = String::new();
    for path in p.replay.store.paths() {
        let bytes = p.replay.store.contents(path).unwrap();
        store.push_str(&format!("{path} {}\n", String::from_utf8_lossy(&bytes)));
    }
    let lent = p.lend().unwrap();
    format!(
        "{}\n{:?}\n{store}\n{:?}\n{:?}\n{:?} {} {} {}",
        serde_json::to_string(&p.replay).unwrap(),
        p.replay.store.writes(),
        lent.conversations.view,
        lent.conversations.reference,
        p.facts,
        p.view_len,
        p.cut,
        p.folds,
    )
}

/// A needle replay forked from the trace × variant's walk at the planting point is the whole
/// replay, byte for byte (events, views, invariants, store in memory and on disk), for every
/// position, with distractors and corrections, in any order of planting points, and after
/// the store drew its history file's random name (renamed to the unit's own).
#[test]
fn forked_replays_are_the_whole_replays() {
    let (trace, config) = astropy_deepagents();
    let summ = OfflineSummarizer;
    let prefixes = Prefixes::new(true);
    let key = WalkKey {
        trace: 0,
        variant: 0,
        extra: None,
    };
    let dir = tempfile::tempdir().unwrap();
    type Case<'a> = (f64, &'a str, u64, Option<(&'a str, Value)>);
    let cases: &[Case] = &[
        (0.6, "tool", 11, None),
        (0.2, "user", 12, None),
        (0.9, "assistant", 13, None),
        (0.6, "user", 14, Some(("distractors", json!(2)))),
        (0.4, "tool", 15, Some(("corrected", json!(true)))),
        (0.7, "user", 16, None),
        (0.0, "tool", 17, None),
    ];
    let mut renamed = 0;
    for (k, (depth, position, seed, extra)) in cases.iter().enumerate() {
        let mut p: BTreeMap<String, Value> = BTreeMap::new();
        p.insert("depth".into(), json!(depth));
        p.insert("position".into(), json!(position));
        if let Some((name, v)) = extra {
            p.insert((*name).into(), v.clone());
        }
        let mut params = NeedleParams::from_params(&p).unwrap();
        params.plant_seed = Some(99);
        let whole_dir = dir.path().join(format!("whole{k}"));
        let fork_dir = dir.path().join(format!("fork{k}"));
        let prices = PriceTable::bundled();
        let whole = prepare(
            &trace,
            &config,
            &params,
            &summ,
            prices,
            whole_dir.clone(),
            *seed,
        )
        .unwrap();
        let before = prefixes.forked();
        let forked = prepare_shared(
            &trace,
            &config,
            &params,
            &summ,
            prices,
            fork_dir.clone(),
            *seed,
            Some((&prefixes, &key)),
        )
        .unwrap();
        assert_eq!(prefixes.forked(), before + 1, "case {k} was not forked");
        assert_eq!(fingerprint(&whole), fingerprint(&forked), "case {k}");
        assert_eq!(
            files(&whole_dir),
            files(&fork_dir),
            "case {k}: store on disk"
        );
        // The fork point came after a summary named the history file (drawn from the seed).
        let first_fact = forked.facts.iter().map(|f| f.index).min().unwrap();
        if forked
            .replay
            .events
            .iter()
            .any(|e| matches!(e.detail, EventDetail::Summarized(_)) && e.trace_index < first_fact)
        {
            renamed += 1;
        }
    }
    assert!(renamed >= 3, "only {renamed} forks came after a summary");
}

/// With sharing off, nothing is forked.
#[test]
fn sharing_off_replays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let prefixes = Prefixes::new(false);
    let (trace, config) = astropy_deepagents();
    let mut p: BTreeMap<String, Value> = BTreeMap::new();
    p.insert("depth".into(), json!(0.5));
    let params = NeedleParams::from_params(&p).unwrap();
    let key = WalkKey {
        trace: 0,
        variant: 0,
        extra: None,
    };
    prepare_shared(
        &trace,
        &config,
        &params,
        &OfflineSummarizer,
        PriceTable::bundled(),
        dir.path().into(),
        1,
        Some((&prefixes, &key)),
    )
    .unwrap();
    assert_eq!(prefixes.forked(), 0);
}
