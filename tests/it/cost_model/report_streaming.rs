//! The streaming report path (compact rows, heavy parts only for the samples shown in full)
//! renders the same report as the whole-samples path on a real run, the quickstart: results.csv
//! byte for byte (also the file the run itself wrote while streaming), summary.json, report.md
//! and report.html. On the quickstart run the other quickstart tests of this binary read.

use ctxbench::record::RunDir;
use ctxbench::report::{csv, html, json, load, markdown, ReportModel};

#[test]
fn the_streamed_report_of_the_quickstart_equals_the_one_from_whole_samples() {
    let run_dir = RunDir::new(&crate::support::cli::quickstart().run_dir);

    // The old path: every sample read whole.
    let run = run_dir.read().unwrap();
    let n = run.samples.len();
    assert!(n > 50, "the quickstart has {n} units");
    let full = ReportModel::build(&run.info, run.samples);
    // The streaming path `report`, `compare` and the end of `run` use.
    let (info, streamed, torn) = load::load_model(&run_dir).unwrap();
    assert!(torn.is_none());
    assert_eq!(streamed.samples.len(), n);
    let loaded = (0..n).filter(|&i| streamed.has_detail(i)).count();
    assert!(
        loaded < n,
        "only the samples shown in full carry their heavy part ({loaded} of {n})"
    );

    let full_csv = csv::render(&run.info, &full);
    assert_eq!(csv::render(&info, &streamed), full_csv, "results.csv");
    assert_eq!(
        std::fs::read_to_string(run_dir.results_csv()).unwrap(),
        full_csv,
        "the results.csv the run wrote row by row"
    );
    assert_eq!(
        json::render(&info, &streamed),
        json::render(&run.info, &full),
        "summary.json"
    );
    let md = markdown::render(&info, &streamed);
    assert_eq!(md, markdown::render(&run.info, &full), "report.md");
    // The pricing notes come from each sample's evidence, which the streamed rows keep only
    // in part (window and pricing model): they are there all the same.
    assert!(md.contains("agent views priced as"), "{md}");
    let page = |m: &ReportModel| {
        let (specs, notes) = ctxbench::report::plots::plan(m);
        let svgs: Vec<_> = specs
            .iter()
            .map(|s| {
                (
                    s.clone(),
                    ctxbench::report::plots::render_svg(m, s).unwrap(),
                )
            })
            .collect();
        html::render_page(&info, m, &svgs, &notes, &Default::default())
    };
    assert_eq!(page(&streamed), page(&full), "report.html");
}

/// Every file under `dir` (relative path → bytes).
fn files(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A run of the quickstart's samples copied `copies` times (as benches/report_big/replicate.py
/// does: copy k gets `-r<k>` on its unit id and its repeat shifted past the source's, so the
/// copies are further repeats of the same tasks), in `dir`.
fn replicated(dir: &std::path::Path, copies: u32) -> RunDir {
    let src = RunDir::new(&crate::support::cli::quickstart().run_dir);
    let text = std::fs::read_to_string(src.samples_jsonl()).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let repeat = |l: &str| -> (usize, usize, u32) {
        let at = l.find("\"repeat\":").unwrap() + "\"repeat\":".len();
        let end = at + l[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
        (at, end, l[at..end].parse().unwrap())
    };
    let span = 1 + lines.iter().map(|l| repeat(l).2).max().unwrap();
    let mut out = String::new();
    for k in 0..copies {
        for l in &lines {
            let mut l = l.to_string();
            if k > 0 {
                let (at, end, r) = repeat(&l);
                l.replace_range(at..end, &(r + k * span).to_string());
                let at = l.find("\"unit_id\":\"").unwrap() + "\"unit_id\":\"".len();
                let end = at + l[at..].find('"').unwrap();
                l.insert_str(end, &format!("-r{k}"));
            }
            out.push_str(&l);
            out.push('\n');
        }
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(src.run_json(), dir.join("run.json")).unwrap();
    std::fs::write(dir.join("samples.jsonl"), out).unwrap();
    RunDir::new(dir)
}

/// Render every report file of `run` into `out`, in memory or spilled (`spill`: rows kept in
/// memory, rows a sorted run); whether it spilled.
fn render(run: &RunDir, out: &std::path::Path, spill: Option<(usize, usize)>) -> bool {
    let mut opts = load::LoadOptions::default();
    let tmp = out.with_extension("spill");
    std::fs::create_dir_all(&tmp).unwrap();
    if let Some((above, run_rows)) = spill {
        opts.spill.above = above;
        opts.spill.run_rows = run_rows;
        opts.spill.dir = Some(tmp.clone());
    }
    let (info, model, _) = load::load_model_opts(run, None, &opts).unwrap();
    let spilled = model.spilled();
    std::fs::create_dir_all(out).unwrap();
    ctxbench::report::write_run_reports(out, run, &info, &model, Default::default()).unwrap();
    drop(model);
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "the spill's temporary files are removed"
    );
    spilled
}

/// The spilling path (rows and observations sorted on disk in runs, merged back) writes every
/// file byte for byte as the in-memory path does: on the quickstart, with runs of a few rows
/// (many runs merged), and on a few thousand replicated samples (a journal read in two halves).
#[test]
fn the_spilled_report_equals_the_in_memory_one_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let quick = RunDir::new(&crate::support::cli::quickstart().run_dir);
    let big = replicated(&tmp.path().join("big"), 12);
    for (name, run, spills) in [
        ("quickstart", &quick, vec![(0, 7), (100, 1_000_000), (0, 1)]),
        ("replicated", &big, vec![(0, 500), (1000, 257)]),
    ] {
        let want_dir = tmp.path().join(format!("{name}-memory"));
        assert!(!render(run, &want_dir, None), "{name}: in memory");
        let want = files(&want_dir);
        assert!(want.contains_key("report.html") && want.keys().any(|k| k.ends_with(".png")));
        for (above, run_rows) in spills {
            let dir = tmp.path().join(format!("{name}-{above}-{run_rows}"));
            assert!(
                render(run, &dir, Some((above, run_rows))),
                "{name}: spilled"
            );
            let got = files(&dir);
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>(),
                "{name} {above}/{run_rows}: the same files"
            );
            for (file, bytes) in &want {
                assert!(
                    got[file] == *bytes,
                    "{name} {above}/{run_rows}: {file} differs from the in-memory report's"
                );
            }
        }
    }
}

/// `ctxbench report --spill-above N` takes the spilling path and writes the same report.
#[test]
fn report_spill_above_writes_the_same_files() {
    let tmp = tempfile::tempdir().unwrap();
    let run = &crate::support::cli::quickstart().run_dir;
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let spill = tmp.path().join("spill");
    std::fs::create_dir_all(&spill).unwrap();
    for (out, extra) in [
        (&a, vec![]),
        (&b, vec!["--spill-above", "10", "--spill-run-rows", "9"]),
    ] {
        let done = crate::support::cli::ctxbench()
            .arg("report")
            .arg(run)
            .arg("-o")
            .arg(out)
            .args(extra)
            .env("TMPDIR", &spill)
            .output()
            .unwrap();
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
    }
    assert_eq!(files(&a), files(&b));
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0, "cleaned up");
}

/// `ctxbench compare` of two runs spilled to disk (`--spill-above 0`: their observations and
/// unit keys sorted on disk, merged) prints and writes what it does in memory: two
/// replicated quickstarts, each with units (and a whole trace) the other lacks.
#[test]
fn the_spilled_compare_equals_the_in_memory_one() {
    let tmp = tempfile::tempdir().unwrap();
    let a = replicated(&tmp.path().join("a"), 3);
    let b = replicated(&tmp.path().join("b"), 2);
    // A whole trace only in the candidate.
    let text = std::fs::read_to_string(a.samples_jsonl()).unwrap();
    let first = text.lines().next().unwrap();
    let at = first.find("\"trace_id\":\"").unwrap();
    let trace = &first[at..at + first[at + 12..].find('"').unwrap() + 13];
    let kept: Vec<&str> = text.lines().filter(|l| !l.contains(trace)).collect();
    assert!(kept.len() < text.lines().count());
    std::fs::write(a.samples_jsonl(), kept.join("\n") + "\n").unwrap();
    // The candidate's variants rotated (each gets the next one's samples), so the pairs differ
    // and the bootstraps run.
    let text = std::fs::read_to_string(b.samples_jsonl()).unwrap();
    let variant = |l: &str| {
        let at = l.find("\"variant\":\"").unwrap() + 11;
        (at, at + l[at..].find('"').unwrap())
    };
    let mut names: Vec<String> = text
        .lines()
        .map(|l| {
            let (at, end) = variant(l);
            l[at..end].to_string()
        })
        .collect();
    names.sort();
    names.dedup();
    assert!(names.len() >= 2, "{names:?}");
    let rotated: Vec<String> = text
        .lines()
        .map(|l| {
            let (at, end) = variant(l);
            let i = names.iter().position(|n| *n == l[at..end]).unwrap();
            format!("{}{}{}", &l[..at], names[(i + 1) % names.len()], &l[end..])
        })
        .collect();
    std::fs::write(b.samples_jsonl(), rotated.join("\n") + "\n").unwrap();
    let spill = tmp.path().join("spill");
    std::fs::create_dir_all(&spill).unwrap();
    let mut outputs = Vec::new();
    for (name, extra) in [("memory", vec![]), ("spilled", vec!["--spill-above", "0"])] {
        let out = tmp.path().join(name);
        let done = crate::support::cli::ctxbench()
            .arg("compare")
            .arg(a.samples_jsonl().parent().unwrap())
            .arg(b.samples_jsonl().parent().unwrap())
            .arg("-o")
            .arg(&out)
            .args(extra)
            .env("TMPDIR", &spill)
            .output()
            .unwrap();
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        let stdout = String::from_utf8(done.stdout).unwrap();
        let stdout = stdout.replace(out.to_str().unwrap(), "OUT");
        outputs.push((stdout, files(&out)));
    }
    let (memory, spilled) = (&outputs[0], &outputs[1]);
    let md = String::from_utf8(memory.1["compare.md"].clone()).unwrap();
    assert!(md.contains("only in the baseline run"), "{md}");
    assert!(md.contains("trace(s) only in the candidate run:"), "{md}");
    assert!(md.contains("bootstrap") || md.contains("CI"), "{md}");
    // Each role's tokens and cost are compared too, on both paths.
    let json = String::from_utf8(memory.1["compare.json"].clone()).unwrap();
    for role in [
        "\"tokens.agent\"",
        "\"cost.agent\"",
        "\"tokens.summarizer\"",
    ] {
        assert!(json.contains(role), "{role}");
    }
    assert_eq!(spilled.0, memory.0, "what compare prints");
    assert_eq!(spilled.1, memory.1, "compare.md and compare.json");
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0, "cleaned up");
}

/// `ctxbench gate` of runs spilled to disk (`--spill-above`: rows, then observations, sorted
/// on disk and read range by range) prints, writes (gate.xml) and exits as the in-memory gate
/// does: the suite's rules (a threshold miss: exit 10) and delta, delta %, per-role and
/// per-variant rules on a candidate whose variants are rotated (regressions, bootstraps), with
/// both runs spilled in runs of a few rows, and with the candidate alone spilled.
#[test]
fn the_spilled_gate_equals_the_in_memory_one() {
    let tmp = tempfile::tempdir().unwrap();
    let quick = RunDir::new(&crate::support::cli::quickstart().run_dir);
    let n = std::fs::read_to_string(quick.samples_jsonl())
        .unwrap()
        .lines()
        .count();
    let base = replicated(&tmp.path().join("base"), 2);
    let cand = replicated(&tmp.path().join("cand"), 3);
    // The candidate's variants rotated, so its deltas are not 0 and some are significant.
    let text = std::fs::read_to_string(cand.samples_jsonl()).unwrap();
    let variant = |l: &str| {
        let at = l.find("\"variant\":\"").unwrap() + 11;
        (at, at + l[at..].find('"').unwrap())
    };
    let mut names: Vec<String> = text
        .lines()
        .map(|l| {
            let (at, end) = variant(l);
            l[at..end].to_string()
        })
        .collect();
    names.sort();
    names.dedup();
    let rotated: Vec<String> = text
        .lines()
        .map(|l| {
            let (at, end) = variant(l);
            let i = names.iter().position(|n| *n == l[at..end]).unwrap();
            format!("{}{}{}", &l[..at], names[(i + 1) % names.len()], &l[end..])
        })
        .collect();
    std::fs::write(cand.samples_jsonl(), rotated.join("\n") + "\n").unwrap();
    let (cand_dir, base_dir) = (
        cand.samples_jsonl().parent().unwrap().to_path_buf(),
        base.samples_jsonl().parent().unwrap().to_path_buf(),
    );
    let spill = tmp.path().join("spill");
    std::fs::create_dir_all(&spill).unwrap();
    let rules: &[&[&str]] = &[
        &[],
        &[
            "--rule",
            "needle.recall.delta >= -0.02",
            "--rule",
            "tokens.delta_pct <= -5",
            "--rule",
            "tokens.agent.delta_pct <= 0",
            "--rule",
            "cost.summarizer.delta <= 0",
            "--rule",
            "drift.score >= 4",
            "--rule",
            "aggressive: needle.pass.delta >= 0",
            "--rule",
            "invariants.violations.delta <= 0",
        ],
    ];
    // In memory; both runs spilled in runs of 7 rows; the candidate alone spilled.
    let modes: [&[String]; 3] = [
        &[],
        &[
            "--spill-above".into(),
            "0".into(),
            "--spill-run-rows".into(),
            "7".into(),
        ],
        &["--spill-above".into(), (2 * n + n / 2).to_string()],
    ];
    for (r, rule_args) in rules.iter().enumerate() {
        for json in [false, true] {
            let mut outputs = Vec::new();
            for (m, mode) in modes.iter().enumerate() {
                let junit = tmp.path().join(format!("gate-{r}-{json}-{m}.xml"));
                let done = crate::support::cli::ctxbench()
                    .arg("gate")
                    .arg(&cand_dir)
                    .arg("--baseline")
                    .arg(&base_dir)
                    .arg("--junit")
                    .arg(&junit)
                    .args(*rule_args)
                    .args(if json { &["--json"][..] } else { &[] })
                    .args(*mode)
                    .env("TMPDIR", &spill)
                    .env_remove("GITHUB_STEP_SUMMARY")
                    .output()
                    .unwrap();
                let stdout = String::from_utf8(done.stdout)
                    .unwrap()
                    .replace(junit.to_str().unwrap(), "JUNIT");
                let xml = std::fs::read_to_string(&junit).unwrap();
                outputs.push((done.status.code(), stdout, xml));
            }
            let memory = &outputs[0];
            assert_eq!(memory.0, Some(10), "{}", memory.1);
            if r == 1 && !json {
                // The rules meet what they are there for: pairs, bootstraps, per-role metrics.
                for want in [
                    "over",
                    "p = ",
                    "tokens.agent",
                    "cost.summarizer",
                    "aggressive",
                ] {
                    assert!(memory.1.contains(want), "{want}: {}", memory.1);
                }
                assert!(!memory.1.contains("no `"), "no rule skipped: {}", memory.1);
            }
            for (m, got) in outputs.iter().enumerate().skip(1) {
                assert_eq!(
                    got.0, memory.0,
                    "rules {r}, json {json}, mode {m}: exit code"
                );
                assert_eq!(got.1, memory.1, "rules {r}, json {json}, mode {m}: stdout");
                assert_eq!(
                    got.2, memory.2,
                    "rules {r}, json {json}, mode {m}: gate.xml"
                );
            }
        }
    }
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0, "cleaned up");
}

/// run.json without its times.
fn run_json_timeless(dir: &std::path::Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    let obj = v.as_object_mut().unwrap();
    for key in ["created", "finished_at"] {
        assert!(obj.remove(key).is_some(), "run.json has no {key}");
    }
    v
}

/// A run of more units than `run --spill-above N` stops building the report's rows past N and
/// reports from its journal streamed and spilled (sorted runs on disk): its report files are
/// byte for byte those `ctxbench report` writes of the same journal in memory, and its run.json
/// (times aside) that of the same run without the flag, the quickstart. With no temporary
/// directory to spill to, the reports of such a run cannot be written (they would be, from
/// rows, without the flag): the end of the run did spill.
#[test]
fn a_run_past_spill_above_reports_from_its_spilled_journal_the_same_files() {
    let tmp = tempfile::tempdir().unwrap();
    let quick = &crate::support::cli::quickstart().run_dir;
    let spill = tmp.path().join("spill");
    std::fs::create_dir_all(&spill).unwrap();
    let out = tmp.path().join("runs");
    let run = |out: &std::path::Path, tmpdir: &std::path::Path| {
        crate::support::cli::ctxbench()
            .args([
                "run",
                "evals/quickstart.toml",
                "--run-id",
                "qs",
                "--spill-above",
            ])
            .arg("5")
            .arg("-o")
            .arg(out)
            .env("TMPDIR", tmpdir)
            .output()
            .unwrap()
    };
    let done = run(&out, &spill);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(!stderr.contains("reports were not written"), "{stderr}");
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0, "cleaned up");
    let run_dir = out.join("qs");
    assert_eq!(run_json_timeless(&run_dir), run_json_timeless(quick));
    // The same journal reported in memory.
    let memory = tmp.path().join("memory");
    let report = crate::support::cli::ctxbench()
        .arg("report")
        .arg(&run_dir)
        .arg("-o")
        .arg(&memory)
        .output()
        .unwrap();
    assert!(report.status.success());
    let want = files(&memory);
    let got = files(&run_dir);
    for name in ["report.md", "summary.json", "results.csv", "report.html"] {
        assert!(want.contains_key(name), "{name}");
    }
    assert!(want.keys().any(|k| k.starts_with("plots/")));
    for (name, bytes) in &want {
        assert!(
            got.get(name) == Some(bytes),
            "{name}: the end of the spilled run wrote another file than `report` does"
        );
    }
    // Nowhere to spill: the reports fail (the run's samples and run.json are written).
    let out = tmp.path().join("nowhere");
    let done = run(&out, &tmp.path().join("missing"));
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(stderr.contains("reports were not written"), "{stderr}");
    assert!(out.join("qs").join("run.json").exists());
}
