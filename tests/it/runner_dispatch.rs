//! The runner through its library API with a fake executor: journaling and resume (including a
//! torn last line), failed units as data, budget stop, interrupt, per-provider concurrency,
//! shard + merge equal to an unsharded run, and refusing to resume a changed suite.

use ctxbench::config::LoadedSuite;
use ctxbench::record::{CostByRole, RunDir, Sample, SummaryRecord, UnitError};
use ctxbench::runner::manifest::{RunManifest, RunStatus};
use ctxbench::runner::session::{self, Outcome, RunOptions};
use ctxbench::runner::synthetic::SyntheticLoader;
use ctxbench::runner::{merge, RunContext, Shard, Unit, UnitExecutor, UnitFuture, UnitOutput};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A scripted executor: fixed cost, optional delay, failures and panics by unit index, and
/// counters of calls and of units in flight.
#[derive(Default)]
struct Fake {
    cost: f64,
    delay: Duration,
    fail: HashSet<usize>,
    panic: HashSet<usize>,
    calls: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    seen: Mutex<Vec<String>>,
    /// Units wait on nothing outside the process: the dispatcher runs them in chunks on rayon.
    offline: bool,
    /// Units of an odd index record a summary text in the run's pack.
    pack_texts: bool,
    /// `flush` fails (the pack's write failed).
    flush_fails: bool,
    flushes: AtomicUsize,
    /// Every unit but the first waits (up to 10 s) until the journal holds a line: score
    /// `saw_line`.
    wait_for_a_line: bool,
}

impl UnitExecutor for Fake {
    fn is_offline(&self, _unit: &Unit) -> bool {
        self.offline
    }

    fn flush(&self) -> std::io::Result<()> {
        self.flushes.fetch_add(1, Ordering::SeqCst);
        if self.flush_fails {
            return Err(std::io::Error::other("disk full"));
        }
        Ok(())
    }

    fn execute<'a>(&'a self, unit: &'a Unit, ctx: &'a RunContext) -> UnitFuture<'a> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            assert!(
                ctx.run_dir.join("run.json").is_file(),
                "executors see the run dir"
            );
            self.seen.lock().unwrap().push(unit.id.clone());
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            if self.panic.contains(&unit.index) {
                panic!("fake executor exploded on {}", unit.id);
            }
            if self.fail.contains(&unit.index) {
                return UnitOutput::failed("fake", format!("scripted failure of {}", unit.index));
            }
            let mut scores = BTreeMap::new();
            scores.insert("index".to_string(), unit.index as f64);
            if self.wait_for_a_line && unit.index > 0 {
                let journal = ctx.run_dir.join("samples.jsonl");
                let started = std::time::Instant::now();
                let mut saw = false;
                while !saw && started.elapsed() < Duration::from_secs(10) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    saw = std::fs::metadata(&journal).is_ok_and(|m| m.len() > 0);
                }
                scores.insert("saw_line".to_string(), f64::from(u8::from(saw)));
            }
            let summaries = if self.pack_texts && unit.index % 2 == 1 {
                vec![SummaryRecord {
                    fold: 1,
                    trace_index: 0,
                    prompt_digest: String::new(),
                    model: "offline".into(),
                    tokens_in: 10,
                    tokens_out: 2,
                    text_digest: "sha256:00".into(),
                    chars: 3000,
                    text: None,
                    file: Some("summaries/00.md".into()),
                }]
            } else {
                Vec::new()
            };
            UnitOutput {
                summaries,
                scores,
                passed: Some(unit.index.is_multiple_of(2)),
                // `cost` is real spend (a summarizer call); the modelled agent cost is large
                // and must not count against the budget.
                cost_usd: CostByRole {
                    agent: Some(1000.0),
                    summarizer: Some(self.cost),
                    judge: None,
                    eval_agent: None,
                },
                ..UnitOutput::default()
            }
        })
    }
}

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    suite: LoadedSuite,
}

/// A suite over `n_traces` dummy trace files, in a temp dir.
fn env(n_traces: usize, extra: &str) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::create_dir(root.join("traces")).unwrap();
    for i in 0..n_traces {
        std::fs::write(
            root.join(format!("traces/t{i}.jsonl")),
            format!("trace {i}\n"),
        )
        .unwrap();
    }
    let text = format!(
        "[suite]\nname = \"fake\"\noutput_dir = \"out\"\nconcurrency = 4\n\n[traces]\npaths = [\"traces/*.jsonl\"]\n\n[engine]\nbaseline = \"a\"\n[engine.variants.a]\n[engine.variants.b]\nwindow = 1000\n\n[evals.needle]\ndepths = [0.2, 0.8]\n{extra}"
    );
    let path = root.join("suite.toml");
    std::fs::write(&path, &text).unwrap();
    let suite = LoadedSuite::load(&path).unwrap();
    Env {
        _dir: dir,
        root,
        suite,
    }
}

fn opts(run_id: &str) -> RunOptions {
    RunOptions {
        run_id: Some(run_id.into()),
        executor: "fake".into(),
        ..RunOptions::default()
    }
}

fn run_with(
    env: &Env,
    o: &RunOptions,
    exec: Arc<Fake>,
    interrupt_after: Option<Duration>,
) -> anyhow::Result<Outcome> {
    run_with_interrupts(env, o, exec, interrupt_after.into_iter().collect())
}

/// Run, sending one interrupt (Ctrl-C) at each of the given times.
fn run_with_interrupts(
    env: &Env,
    o: &RunOptions,
    exec: Arc<Fake>,
    interrupts: Vec<Duration>,
) -> anyhow::Result<Outcome> {
    let prepared = session::prepare(&env.suite, o, &SyntheticLoader)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            for d in interrupts {
                tokio::time::sleep(d).await;
                let _ = tx.send(());
            }
            // Keep the channel open for the rest of the run.
            std::future::pending::<()>().await;
        });
        session::execute(prepared, exec, &mut rx).await
    })
}

fn samples(dir: &Path) -> Vec<Sample> {
    RunDir::new(dir).read_samples_or_empty().unwrap().samples
}

/// Samples keyed by unit id with latency zeroed (the only field that may differ between runs).
fn canonical(mut s: Vec<Sample>) -> BTreeMap<String, Sample> {
    s.iter_mut().for_each(|s| s.latency_ms = 0);
    let n = s.len();
    let map: BTreeMap<String, Sample> = s.into_iter().map(|s| (s.unit_id.clone(), s)).collect();
    assert_eq!(map.len(), n, "a unit was recorded twice");
    map
}

// 3 traces × 2 variants × (replay + 2 needle) = 18 units.
const UNITS: usize = 18;

#[test]
fn full_run_records_every_unit_once_with_identity() {
    let env = env(3, "");
    let out = run_with(&env, &opts("full"), Arc::new(Fake::default()), None).unwrap();
    assert_eq!(out.manifest.status, RunStatus::Complete);
    assert_eq!(out.failed_total, 0);
    assert_eq!(out.manifest.units.planned, UNITS as u64);
    let s = samples(&out.run_dir);
    assert_eq!(canonical(s.clone()).len(), UNITS);
    let needle = s
        .iter()
        .find(|s| s.eval == "needle" && s.trace_id == "t1" && s.variant == "b")
        .unwrap();
    assert!(needle.sample.starts_with("depth=0."));
    assert_eq!(needle.params["position"], serde_json::json!("tool"));
    // run.json names the traces with their digests and the resolved suite.
    let m: RunManifest = RunDir::new(&out.run_dir).read_run_json().unwrap();
    assert_eq!(m.traces.len(), 3);
    assert!(m.traces.iter().all(|t| t.sha256.len() == 64));
    assert_eq!(m.info.suite["suite"]["name"], "fake");
    assert_eq!(m.info.baseline.as_deref(), Some("a"));
    assert_eq!(m.info.variants, ["a", "b"]);
    assert!(m
        .info
        .trace_digests
        .values()
        .all(|d| d.starts_with("sha256:")));
    // The report side reads the same run directory as a plain run.
    let run = RunDir::new(&out.run_dir).read().unwrap();
    assert_eq!(run.info.run_id, "full");
    assert_eq!(run.samples.len(), UNITS);
    assert_eq!(run.info.providers.len(), 3);
    // A second run with the same id is refused rather than overwriting results.
    let again = run_with(&env, &opts("full"), Arc::new(Fake::default()), None);
    let err = again.err().unwrap().to_string();
    assert!(
        err.contains("already exists") && err.contains("--resume"),
        "{err}"
    );
}

#[test]
fn resume_skips_recorded_units_and_cuts_a_torn_last_line() {
    let env = env(3, "");
    let full = run_with(&env, &opts("reference"), Arc::new(Fake::default()), None).unwrap();
    let reference = canonical(samples(&full.run_dir));

    // A "killed" run: run.json, the first 7 lines, and half of the 8th.
    let killed = env.root.join("out/killed");
    std::fs::create_dir(&killed).unwrap();
    let mut m: RunManifest = RunDir::new(&full.run_dir).read_run_json().unwrap();
    m.info.run_id = "killed".into();
    m.status = RunStatus::Running;
    RunDir::new(&killed).write_run_json(&m).unwrap();
    let text = std::fs::read_to_string(full.run_dir.join("samples.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut partial = lines[..7].join("\n");
    partial.push('\n');
    partial.push_str(&lines[7][..lines[7].len() / 2]);
    std::fs::write(killed.join("samples.jsonl"), partial).unwrap();

    let fake = Arc::new(Fake::default());
    let o = RunOptions {
        resume: Some(killed.clone()),
        executor: "fake".into(),
        ..RunOptions::default()
    };
    let out = run_with(&env, &o, fake.clone(), None).unwrap();
    assert_eq!(
        fake.calls.load(Ordering::SeqCst),
        UNITS - 7,
        "only unrecorded units run"
    );
    assert_eq!(out.manifest.status, RunStatus::Complete);
    assert_eq!(canonical(samples(&killed)), reference);
}

/// run.json's counts and totals, added up as the lines were written (and, on resume, from what
/// the journal held), are those of reading the whole journal back.
fn assert_totals_are_the_journals(out: &Outcome) {
    use ctxbench::runner::resume::Recorded;
    let read = Recorded::read(&RunDir::new(&out.run_dir).samples_jsonl()).unwrap();
    let m = &out.manifest;
    assert_eq!(
        (m.units.recorded, m.units.failed),
        (read.recorded, read.failed)
    );
    assert_eq!(
        serde_json::to_string(&m.totals).unwrap(),
        serde_json::to_string(&read.totals).unwrap()
    );
}

#[test]
fn run_totals_added_as_lines_are_written_equal_the_journal_read_back() {
    let env = env(3, "");
    // Costs that do not add up exactly in binary, and failed units among them.
    let fake = || {
        Arc::new(Fake {
            cost: 0.1 / 3.0,
            fail: [1, 4].into(),
            ..Fake::default()
        })
    };
    let full = run_with(&env, &opts("sums"), fake(), None).unwrap();
    assert!(full.manifest.totals.cost_usd > 0.0 && full.manifest.units.failed == 2);
    assert_totals_are_the_journals(&full);
    // Resumed: what the journal held, then the new lines.
    let killed = env.root.join("out/sums-killed");
    std::fs::create_dir(&killed).unwrap();
    let mut m: RunManifest = RunDir::new(&full.run_dir).read_run_json().unwrap();
    m.info.run_id = "sums-killed".into();
    m.status = RunStatus::Running;
    RunDir::new(&killed).write_run_json(&m).unwrap();
    let text = std::fs::read_to_string(full.run_dir.join("samples.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(killed.join("samples.jsonl"), lines[..5].join("\n") + "\n").unwrap();
    let o = RunOptions {
        resume: Some(killed.clone()),
        executor: "fake".into(),
        ..RunOptions::default()
    };
    let out = run_with(&env, &o, fake(), None).unwrap();
    assert_eq!(out.manifest.units.recorded, UNITS as u64);
    assert_totals_are_the_journals(&out);
}

#[test]
fn failed_and_panicking_units_are_data_and_the_run_goes_on() {
    let env = env(3, "");
    let fake = Arc::new(Fake {
        fail: [1, 5].into(),
        panic: [2].into(),
        ..Fake::default()
    });
    let out = run_with(&env, &opts("errors"), fake, None).unwrap();
    assert_eq!(out.manifest.status, RunStatus::Complete);
    assert_eq!(out.failed_total, 3);
    assert_eq!(out.report.completed, UNITS as u64 - 3);
    let s = samples(&out.run_dir);
    assert_eq!(s.len(), UNITS);
    let mut kinds: Vec<&UnitError> = s.iter().filter_map(|s| s.error.as_ref()).collect();
    kinds.sort_by(|a, b| a.kind.cmp(&b.kind));
    assert_eq!(kinds[0].kind, "fake");
    assert_eq!(kinds[1].kind, "fake");
    assert_eq!(kinds[2].kind, "panic");
    assert!(
        kinds[2].message.contains("fake executor exploded"),
        "{}",
        kinds[2].message
    );
}

#[test]
fn offline_units_in_chunks_record_what_units_one_a_task_record() {
    let env = env(3, "");
    let fake = |offline| {
        Arc::new(Fake {
            fail: [1, 5].into(),
            panic: [2, 3].into(),
            offline,
            ..Fake::default()
        })
    };
    let o = RunOptions {
        jobs: Some(16),
        ..opts("chunks")
    };
    let chunked = fake(true);
    let out = run_with(&env, &o, chunked.clone(), None).unwrap();
    assert_eq!(out.manifest.status, RunStatus::Complete);
    assert_eq!(out.failed_total, 4);
    assert_eq!(chunked.calls.load(Ordering::SeqCst), UNITS);
    assert_totals_are_the_journals(&out);
    let o = RunOptions {
        jobs: Some(16),
        ..opts("tasks")
    };
    let out_tasks = run_with(&env, &o, fake(false), None).unwrap();
    assert_eq!(
        canonical(samples(&out.run_dir)),
        canonical(samples(&out_tasks.run_dir))
    );
}

#[test]
fn the_executor_writes_what_it_holds_before_lines_are_written_and_a_failure_stops_the_run() {
    for offline in [true, false] {
        let env = env(3, "");
        let run = |flush_fails, name: &str| {
            let fake = Arc::new(Fake {
                pack_texts: true,
                flush_fails,
                offline,
                ..Fake::default()
            });
            let o = RunOptions {
                jobs: Some(8),
                ..opts(&format!("{name}-{offline}"))
            };
            let out = run_with(&env, &o, fake.clone(), None);
            (out, fake.flushes.load(Ordering::SeqCst))
        };
        let (out, flushes) = run(false, "written");
        let out = out.unwrap();
        assert_eq!(samples(&out.run_dir).len(), UNITS);
        // Offline: held lines go with a flush every 256 KiB, and at the end; else one a unit.
        if offline {
            assert!((1..UNITS).contains(&flushes), "{flushes} flushes");
        } else {
            assert!(flushes > UNITS, "{flushes} flushes");
        }
        let (out, _) = run(true, "lost");
        let e = format!("{:#}", out.err().expect("the run stops"));
        assert!(
            e.contains("cannot write what the units recorded beside the journal: disk full"),
            "{e}"
        );
        let dir = env.root.join("out").join(format!("lost-{offline}"));
        assert!(dir.join("run.json").is_file(), "{}", dir.display());
        assert!(samples(&dir).is_empty(), "no line naming a lost text");
    }
}

#[test]
fn held_lines_are_written_within_a_second_while_no_other_unit_ends() {
    let env = env(1, "");
    // One unit a task at 2 in flight: unit 0 ends, its line held in memory; every other unit
    // ends only once the journal holds a line, so nothing but time writes it.
    let fake = Arc::new(Fake {
        offline: true,
        wait_for_a_line: true,
        ..Fake::default()
    });
    let o = RunOptions {
        jobs: Some(2),
        ..opts("held")
    };
    let out = run_with(&env, &o, fake, None).unwrap();
    let s = samples(&out.run_dir);
    assert_eq!(s.len(), 6);
    for s in s.iter().filter(|s| s.scores["index"] > 0.0) {
        assert_eq!(s.scores["saw_line"], 1.0, "the held line was never written");
    }
}

#[test]
fn a_second_interrupt_cancels_offline_chunks_which_start_no_further_unit() {
    let env = env(3, "");
    let fake = Arc::new(Fake {
        delay: Duration::from_millis(300),
        offline: true,
        ..Fake::default()
    });
    let o = RunOptions {
        jobs: Some(16),
        ..opts("cancel-offline")
    };
    let out = run_with_interrupts(
        &env,
        &o,
        fake.clone(),
        vec![Duration::from_millis(100), Duration::from_millis(10)],
    )
    .unwrap();
    assert_eq!(out.manifest.status, RunStatus::Interrupted);
    assert_eq!(out.manifest.units.recorded, 0);
    assert_eq!(out.manifest.units.not_run_interrupted, UNITS as u64);
    // The units running on rayon's threads when cancelled ran to their end; no other started.
    let calls = fake.calls.load(Ordering::SeqCst);
    assert!(
        calls <= rayon::current_num_threads().min(UNITS),
        "{calls} units started"
    );
    assert_eq!(
        fake.in_flight.load(Ordering::SeqCst),
        0,
        "the dispatcher waited for them"
    );
}

#[test]
fn budget_stops_before_it_would_be_exceeded() {
    let env = env(3, "");
    let fake = Arc::new(Fake {
        cost: 1.0,
        ..Fake::default()
    });
    let o = RunOptions {
        max_cost_usd: Some(3.5),
        ..opts("budget")
    };
    let out = run_with(&env, &o, fake, None).unwrap();
    assert_eq!(out.manifest.status, RunStatus::BudgetExhausted);
    assert_eq!(out.manifest.units.recorded, 3);
    assert_eq!(out.manifest.units.not_run_budget, UNITS as u64 - 3);
    assert!(out.manifest.totals.spent_usd <= 3.5);
    assert!(
        out.manifest.totals.cost_usd > 3000.0,
        "modelled agent cost is still reported"
    );

    // Resuming with a higher budget counts what was already spent.
    let o = RunOptions {
        resume: Some(out.run_dir.clone()),
        max_cost_usd: Some(6.0),
        executor: "fake".into(),
        ..RunOptions::default()
    };
    let out = run_with(
        &env,
        &o,
        Arc::new(Fake {
            cost: 1.0,
            ..Fake::default()
        }),
        None,
    )
    .unwrap();
    assert_eq!(out.manifest.units.recorded, 6);
    assert_eq!(out.manifest.status, RunStatus::BudgetExhausted);
}

#[test]
fn interrupt_stops_dispatch_keeps_finished_units_and_resume_completes() {
    let env = env(3, "");
    let fake = Arc::new(Fake {
        delay: Duration::from_millis(40),
        ..Fake::default()
    });
    let o = RunOptions {
        jobs: Some(2),
        ..opts("ctrlc")
    };
    let out = run_with(&env, &o, fake, Some(Duration::from_millis(150))).unwrap();
    assert_eq!(out.manifest.status, RunStatus::Interrupted);
    let recorded = out.manifest.units.recorded;
    assert!(
        recorded > 0 && recorded < UNITS as u64,
        "recorded {recorded}"
    );
    assert_eq!(
        recorded + out.manifest.units.not_run_interrupted,
        UNITS as u64
    );
    assert_eq!(samples(&out.run_dir).len() as u64, recorded);

    let o = RunOptions {
        resume: Some(out.run_dir.clone()),
        executor: "fake".into(),
        ..RunOptions::default()
    };
    let out = run_with(&env, &o, Arc::new(Fake::default()), None).unwrap();
    assert_eq!(out.manifest.status, RunStatus::Complete);
    assert_eq!(canonical(samples(&out.run_dir)).len(), UNITS);
}

#[test]
fn provider_concurrency_limits_units_in_flight() {
    // Every unit calls the summary provider; its limit (2) is below the suite's (8).
    let env = env(
        3,
        "[providers.summary]\nkind = \"offline\"\nconcurrency = 2\n",
    );
    let fake = Arc::new(Fake {
        delay: Duration::from_millis(15),
        ..Fake::default()
    });
    let o = RunOptions {
        jobs: Some(8),
        ..opts("limits")
    };
    run_with(&env, &o, fake.clone(), None).unwrap();
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 2);

    let fake = Arc::new(Fake {
        delay: Duration::from_millis(15),
        ..Fake::default()
    });
    let env = env_no_limit();
    let o = RunOptions {
        jobs: Some(8),
        ..opts("nolimit")
    };
    run_with(&env, &o, fake.clone(), None).unwrap();
    assert!(fake.max_in_flight.load(Ordering::SeqCst) > 2);
}

fn env_no_limit() -> Env {
    env(3, "")
}

#[test]
fn shards_partition_the_plan_and_merge_equals_an_unsharded_run() {
    let env = env(4, "");
    let full = run_with(&env, &opts("unsharded"), Arc::new(Fake::default()), None).unwrap();
    let mut dirs = Vec::new();
    let mut total = 0;
    for i in 1..=3 {
        let o = RunOptions {
            shard: Some(Shard { index: i, count: 3 }),
            ..opts(&format!("part{i}"))
        };
        let out = run_with(&env, &o, Arc::new(Fake::default()), None).unwrap();
        assert_eq!(out.manifest.shard, Some(Shard { index: i, count: 3 }));
        total += out.manifest.units.planned;
        dirs.push(out.run_dir);
    }
    assert_eq!(total, full.manifest.units.planned);

    let merged_dir = env.root.join("out/merged");
    let merged = merge::merge(&dirs, &merged_dir).unwrap();
    assert_eq!(merged.missing, 0);
    assert_eq!(merged.manifest.status, RunStatus::Complete);
    assert_eq!(
        canonical(samples(&merged_dir)),
        canonical(samples(&full.run_dir))
    );

    // Missing a shard: merged but incomplete.
    let partial = merge::merge(&dirs[..2], &env.root.join("out/partial")).unwrap();
    assert!(partial.missing > 0);
    assert_eq!(partial.manifest.status, RunStatus::Incomplete);

    // The same shard twice is fine (identical apart from latency)…
    merge::merge(
        &[dirs[0].clone(), dirs[0].clone()],
        &env.root.join("out/dup"),
    )
    .unwrap();
    // …but a unit recorded differently is an error naming it.
    let tampered = env.root.join("out/tampered");
    std::fs::create_dir(&tampered).unwrap();
    std::fs::copy(dirs[0].join("run.json"), tampered.join("run.json")).unwrap();
    let mut s = samples(&dirs[0]);
    s[0].scores.insert("index".into(), -1.0);
    RunDir::new(&tampered).write_samples(&s).unwrap();
    let err = merge::merge(&[dirs[0].clone(), tampered], &env.root.join("out/bad"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains(&s[0].unit_id) && err.contains("recorded differently"),
        "{err}"
    );
}

#[test]
fn merge_and_resume_reject_a_different_suite() {
    let a = env(2, "");
    let b = env(2, "[evals.drift]\n");
    let ra = run_with(&a, &opts("a"), Arc::new(Fake::default()), None).unwrap();
    let rb = run_with(&b, &opts("b"), Arc::new(Fake::default()), None).unwrap();
    let err = merge::merge(
        &[ra.run_dir.clone(), rb.run_dir.clone()],
        &a.root.join("out/m"),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("suite differs"), "{err}");
    let o = RunOptions {
        resume: Some(ra.run_dir.clone()),
        executor: "fake".into(),
        ..RunOptions::default()
    };
    let err = run_with(&b, &o, Arc::new(Fake::default()), None)
        .err()
        .unwrap();
    assert_eq!(ctxbench::cli::exit_code_for(&err), 2);
    assert!(err.to_string().contains("the suite changed"), "{err}");

    // Same suite, but a trace file's content changed.
    std::fs::write(a.root.join("traces/t0.jsonl"), "edited\n").unwrap();
    let o = RunOptions {
        resume: Some(ra.run_dir.clone()),
        executor: "fake".into(),
        ..RunOptions::default()
    };
    let err = run_with(&a, &o, Arc::new(Fake::default()), None)
        .err()
        .unwrap();
    assert!(err.to_string().contains("trace files changed"), "{err}");
}

#[test]
fn default_run_ids_never_collide() {
    let env = env(1, "");
    let o = RunOptions {
        executor: "fake".into(),
        ..RunOptions::default()
    };
    let a = run_with(&env, &o, Arc::new(Fake::default()), None).unwrap();
    let b = run_with(&env, &o, Arc::new(Fake::default()), None).unwrap();
    assert_ne!(a.run_dir, b.run_dir);
    let name = b.run_dir.file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.starts_with("fake-20"), "{name}");
}

#[test]
fn a_second_interrupt_cancels_running_units() {
    let env = env(3, "");
    let fake = Arc::new(Fake {
        delay: Duration::from_secs(30),
        ..Fake::default()
    });
    let o = RunOptions {
        jobs: Some(3),
        ..opts("cancel")
    };
    let started = std::time::Instant::now();
    let out = run_with_interrupts(
        &env,
        &o,
        fake.clone(),
        vec![Duration::from_millis(50), Duration::from_millis(50)],
    )
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "cancelled units were awaited"
    );
    assert_eq!(out.manifest.status, RunStatus::Interrupted);
    assert_eq!(out.manifest.units.recorded, 0);
    assert_eq!(out.manifest.units.not_run_interrupted, UNITS as u64);
    assert_eq!(
        fake.calls.load(Ordering::SeqCst),
        3,
        "three were running when cancelled"
    );
}

#[test]
fn cpu_helper_runs_on_the_pool_and_propagates_panics() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let v = rt.block_on(ctxbench::runner::cpu(|| (1..=10u64).product::<u64>()));
    assert_eq!(v, 3_628_800);
    let joined = rt.block_on(async {
        tokio::spawn(ctxbench::runner::cpu(|| -> u64 { panic!("boom in cpu") })).await
    });
    let err = joined.unwrap_err();
    assert!(err.is_panic());
}
