//! `ctxbench run` on a trace whose tool call ids deepagents' file naming cannot keep apart or
//! cannot write: three ids that sanitize to one name (`t.1`, `t/1`, `t_1` → `t_1`), one with a
//! NUL and one of 300 bytes. As deepagents does, the first colliding result is offloaded to
//! `t_1` and the two after it stay in the context (its backends refuse a write over a file:
//! nothing is overwritten); the NUL and 300-byte ids, which deepagents' in-memory state takes
//! but no directory on disk can, get names of their own. Every unit succeeds with its store
//! written under `stores/<unit>/`, the needle agent finds a fact planted in the offloaded result
//! in its file and one planted in a refused result in its view, and every eviction names the
//! file it wrote.

use crate::support::cli::ctxbench;
use crate::support::suite::SuiteBuilder;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

const IDS: [&str; 5] = ["t.1", "t/1", "t_1", "nul\0id", "LLLL"];

/// The trace's ids (the last one 300 bytes long).
fn ids() -> Vec<String> {
    IDS.iter()
        .map(|id| match *id {
            "LLLL" => "L".repeat(300),
            id => id.to_string(),
        })
        .collect()
}

/// Over deepagents' 80,000-character eviction threshold, and different for each call.
fn result(k: usize) -> String {
    (0..1_200)
        .map(|i| format!("result {k} line {i}: {}\n", "x".repeat(60)))
        .collect()
}

/// Golden-fixture role lines: system, task, then one call and its large result per id.
fn write_trace(path: &Path) {
    write_trace_of(path, &ids());
}

/// [`write_trace`] with these ids.
fn write_trace_of(path: &Path, ids: &[String]) {
    let mut lines = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Look at the five files."}),
    ];
    for (k, id) in ids.iter().enumerate() {
        lines.push(json!({"role": "assistant", "content": "",
            "tool_calls": [{"id": id, "name": "bash", "args": {"command": format!("cat f{k}")}}]}));
        lines.push(
            json!({"role": "tool", "content": result(k), "tool_call_id": id, "name": "bash"}),
        );
    }
    lines.push(json!({"role": "assistant", "content": "Done."}));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// The files under `dir`, by name.
/// `ctxbench run SUITE --keep-stores` into `dir/out/r`: the run directory and its samples.
fn run_keeping_stores(suite: &Path, dir: &Path) -> (std::path::PathBuf, Vec<Value>) {
    let out = dir.join("out");
    ctxbench()
        .arg("run")
        .arg(suite)
        .args(["--quiet", "--keep-stores", "--run-id", "r", "-o"])
        .arg(&out)
        .assert()
        .success();
    let run = out.join("r");
    let samples: Vec<Value> = std::fs::read_to_string(run.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (run, samples)
}

fn files(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read_to_string(e.path()).unwrap())
        })
        .collect()
}

#[test]
fn colliding_tool_call_ids_are_refused_as_deepagents_does_and_unwritable_ones_fail_no_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("ids.jsonl");
    write_trace(&trace);
    // No summarization (a window of 1M tokens): only the tool-time eviction offloads. Needles
    // in the results of `t.1` (message 3, depth 0.2) and `t/1` (message 5, depth 0.4).
    let suite = SuiteBuilder::new("ids")
        .seed(3)
        .trace(&trace)
        .baseline("base")
        .deepagents(1_000_000)
        .variant("base", "")
        .eval(
            "needle",
            "depths = [0.2, 0.4]\npositions = [\"tool\"]\ndistractors = 0",
        )
        .eval("invariants", "")
        .table("providers.agent", "kind = \"offline\"")
        .table("providers.summary", "kind = \"offline\"")
        .write(tmp.path(), "suite.toml");
    let (run, samples) = run_keeping_stores(&suite, tmp.path());
    // replay, invariants and two needle units, none failed (a NUL or a 300-byte name failed
    // the store's write, and with it the unit).
    assert_eq!(samples.len(), 4);
    for s in &samples {
        assert!(s["error"].is_null(), "{}: {}", s["eval"], s["error"]);
    }

    let replay = samples.iter().find(|s| s["eval"] == "replay").unwrap();
    let unit = replay["unit_id"].as_str().unwrap();
    let kept = files(&run.join("stores").join(unit).join("large_tool_results"));
    // A file for each result offloaded, holding it exactly: the first colliding result under
    // deepagents' name, the NUL and 300-byte ids under names of their own.
    assert_eq!(kept.len(), 3, "{:?}", kept.keys());
    let mut by_result = BTreeMap::new();
    for (name, text) in &kept {
        let k = (0..5).find(|&k| result(k) == *text);
        let k = k.unwrap_or_else(|| panic!("{name} holds no result whole"));
        assert!(name.len() <= 255 && !name.contains('\0'), "{name:?}");
        by_result.insert(k, format!("/large_tool_results/{name}"));
    }
    assert_eq!(by_result.keys().copied().collect::<Vec<_>>(), [0, 3, 4]);
    assert_eq!(by_result[&0], "/large_tool_results/t_1");
    // Every eviction names the file it wrote, in its timeline note (the stub the model sees
    // names the same path: the needle agent read it from there); the refused two have none.
    let notes: Vec<&str> = replay["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["details"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    for k in 0..5 {
        let want = format!("evicted at message {}: ", 3 + 2 * k);
        let note = notes.iter().find(|n| n.starts_with(&want));
        match by_result.get(&k) {
            Some(path) => assert!(note.unwrap().ends_with(&format!("wrote {path}"))),
            None => assert!(note.is_none(), "{note:?}"),
        }
    }

    // The pointers hold the exact originals.
    let inv = samples.iter().find(|s| s["eval"] == "invariants").unwrap();
    assert_eq!(inv["passed"], true, "{}", inv["evidence"]);
    // Both planted facts come back: from the offloaded result's file, and from the view that
    // kept the refused result.
    for s in samples.iter().filter(|s| s["eval"] == "needle") {
        let fact = &s["evidence"]["facts"][0];
        let k = (fact["trace_index"].as_u64().unwrap() as usize - 3) / 2;
        assert_eq!(
            s["scores"]["recall"], 1.0,
            "{}: {}",
            s["sample"], s["evidence"]
        );
        let answer = &s["evidence"]["answers"][0];
        match by_result.get(&k) {
            Some(path) => assert_eq!(answer["files_read"], json!([path]), "{answer}"),
            None => assert_eq!(s["scores"]["in_view"], 1.0, "{answer}"),
        }
    }
    let needled: Vec<u64> = samples
        .iter()
        .filter(|s| s["eval"] == "needle")
        .map(|s| s["evidence"]["facts"][0]["trace_index"].as_u64().unwrap())
        .collect();
    assert_eq!(
        needled
            .iter()
            .copied()
            .collect::<std::collections::BTreeSet<_>>(),
        [3, 5].into()
    );
}

/// Tool call ids that start or end with whitespace (real traces have arbitrary ids): each
/// result is evicted to a file named after its id, whitespace kept; the eval agent's `grep`
/// finds a line of it and prints its path, and `read_file` of that path, exactly as printed,
/// returns the result (the tools once trimmed the path and lost the trailing space).
#[test]
fn a_result_whose_id_has_whitespace_around_it_is_read_by_the_path_grep_prints() {
    use ctxbench::evals::fs_tools::Sandbox;
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("ids.jsonl");
    let ids: Vec<String> = [" lead", "trail ", " both\t", "plain"]
        .map(String::from)
        .to_vec();
    write_trace_of(&trace, &ids);
    let suite = SuiteBuilder::new("ids")
        .seed(3)
        .trace(&trace)
        .baseline("base")
        .deepagents(1_000_000)
        .variant("base", "")
        .table("providers.agent", "kind = \"offline\"")
        .table("providers.summary", "kind = \"offline\"")
        .write(tmp.path(), "suite.toml");
    let (run, samples) = run_keeping_stores(&suite, tmp.path());
    let replay = samples.iter().find(|s| s["eval"] == "replay").unwrap();
    assert!(replay["error"].is_null(), "{}", replay["error"]);
    let unit = replay["unit_id"].as_str().unwrap();
    let store = run.join("stores").join(unit);
    let kept = files(&store.join("large_tool_results"));
    let names: Vec<&str> = kept.keys().map(String::as_str).collect();
    assert_eq!(names, [" both\t", " lead", "plain", "trail "]);

    let sb = Sandbox::new(&store).unwrap();
    for (k, id) in ids.iter().enumerate() {
        let printed = format!("/large_tool_results/{id}");
        // Line 8 of result k, found by grep, which prints the file's path.
        let needle = format!("result {k} line 7:");
        let found = sb.call("grep", &json!({"pattern": needle}));
        assert!(!found.is_error, "{}", found.text);
        let (path, _) = found.text.split_once(":8: ").unwrap();
        assert_eq!(path, printed, "{}", found.text);
        assert!(sb
            .call("glob", &json!({"pattern": "**/*"}))
            .text
            .lines()
            .any(|l| l == printed));
        // read_file of the printed path returns the result it holds, whole.
        let read = sb.call("read_file", &json!({"path": path, "offset": 7, "limit": 1}));
        assert!(!read.is_error, "{path:?}: {}", read.text);
        assert!(
            read.text.starts_with(&format!("     8\t{needle}")),
            "{}",
            read.text
        );
        assert_eq!(read.files_read, vec![printed.clone()]);
        // The eviction's timeline note names the same path.
        let notes: Vec<&str> = replay["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["details"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        let want = format!("evicted at message {}: ", 3 + 2 * k);
        let note = notes.iter().find(|n| n.starts_with(&want)).unwrap();
        assert!(note.ends_with(&format!("wrote {printed}")), "{note:?}");
    }
}

/// `clear_tool_results` with `offload` names the files it wrote in its event as eviction does,
/// in every output: the `ctxbench replay` timeline (`→ <path>`), the replay sample's timeline
/// details in samples.jsonl (`wrote <path>`) and report.html, which shows those details.
#[test]
fn clear_with_offload_names_the_files_it_wrote_in_replay_samples_and_report() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("ids.jsonl");
    let ids: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
    write_trace_of(&trace, &ids);
    // Each result is some 24k tokens: from the third call on, every result but the last is
    // cleared, one more at each call (no summarization in a window of 1M tokens).
    let engine = [
        "preset = \"langchain\"",
        "window = 1000000",
        "clear_tool_results.trigger.tokens = 30000",
        "clear_tool_results.keep = 1",
        "clear_tool_results.offload = true",
    ];
    let cleared: Vec<String> = ids[..4]
        .iter()
        .map(|id| format!("/cleared_tool_results/{id}"))
        .collect();

    let sets: Vec<String> = engine[2..]
        .iter()
        .map(|l| format!("--set={}", l.replace(" = ", "=")))
        .collect();
    let out = ctxbench()
        .arg("replay")
        .arg(&trace)
        .args(["--preset", "langchain", "--window", "1000000"])
        .args(&sets)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    // The events column wraps: read it as one run of words.
    let words = String::from_utf8(out)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for path in &cleared {
        assert!(
            words.contains(&format!("(0 excluded) → {path}")),
            "{path}: {words}"
        );
    }

    let suite = SuiteBuilder::new("ids")
        .seed(3)
        .trace(&trace)
        .baseline("base")
        .base(engine.join("\n"))
        .variant("base", "")
        .table("providers.agent", "kind = \"offline\"")
        .table("providers.summary", "kind = \"offline\"")
        .write(tmp.path(), "suite.toml");
    let out = tmp.path().join("out");
    ctxbench()
        .arg("run")
        .arg(&suite)
        .args(["--quiet", "--run-id", "r", "-o"])
        .arg(&out)
        .assert()
        .success();
    let run = out.join("r");
    let samples = std::fs::read_to_string(run.join("samples.jsonl")).unwrap();
    let replay: Value = samples
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|s| s["eval"] == "replay")
        .unwrap();
    let notes: Vec<&str> = replay["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["details"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .filter(|n| n.starts_with("cleared at message "))
        .collect();
    let wrote: Vec<&str> = notes
        .iter()
        .map(|n| n.split_once(" tokens; wrote ").map_or("", |(_, w)| w))
        .collect();
    assert_eq!(wrote, cleared, "{notes:?}");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    for note in &notes {
        assert!(html.contains(note), "report.html lacks {note:?}");
    }
}
