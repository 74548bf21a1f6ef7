//! Unit tests of suite loading (types, variants, grids, providers, discovery).

mod tests {
    use crate::config::suite::*;
    use crate::config::{ConfigError, LoadedSuite};
    use std::path::Path;

    fn load(text: &str) -> Result<LoadedSuite, ConfigError> {
        LoadedSuite::from_str(text, Path::new("suite.toml"))
    }

    const MIN: &str = "[suite]\nname = \"t\"\n[traces]\npaths = [\"x\"]\n";

    /// A needle trigger sweep over a variant with no trigger to move (an external engine) is
    /// refused at load, at the `triggers` line (its units all failed at run time); without
    /// that variant the suite loads.
    #[test]
    fn a_trigger_sweep_over_a_variant_without_a_trigger_is_refused_at_load() {
        let text = format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.variants.a]\n[engine.variants.mine]\n\
             external.command = [\"python3\", \"mine.py\"]\n\
             [evals.needle]\ntriggers = [0.15]\n"
        );
        let e = load(&text).unwrap_err().to_string();
        assert!(
            e.starts_with("suite.toml:11: `triggers` moves each variant's summarize or truncate trigger, but engine variant(s) `mine` have no such layer"),
            "{e}"
        );
        let only_a = crate::config::Overrides {
            variants: vec!["a".into()],
            ..Default::default()
        };
        LoadedSuite::from_str_with(&text, Path::new("suite.toml"), &only_a).unwrap();
        load(&text.replace("triggers = [0.15]\n", "")).unwrap();
    }

    /// A gate rule (or a `[report] metrics` name) naming a metric no eval of the suite records
    /// is refused at load, at its line, with the nearest name; so is a metric of an eval the
    /// suite does not run. A `--eval` selection does not make the file's rules wrong.
    #[test]
    fn gate_rules_name_metrics_the_suites_evals_record() {
        let text = format!("{MIN}[evals.needle]\n[gates]\nrules = [\"needle.recal >= 0.9\"]\n");
        let e = load(&text).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "suite.toml:7: gate rule `needle.recal >= 0.9`: unknown metric `needle.recal` \
                 (did you mean `needle.recall`?); this suite's evals (replay, needle) record: \
                 replay.input_tokens,"
            ),
            "{e}"
        );
        let text = format!(
            "{MIN}[evals.needle]\n[gates]\nrules = [\n  \"needle.recall >= 0.9\",\n  \
             \"drift.score >= 4\",\n]\n"
        );
        let e = load(&text).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "suite.toml:9: gate rule `drift.score >= 4`: metric `drift.score` is eval \
                 `drift`'s, which this suite does not run (add `[evals.drift]`"
            ),
            "{e}"
        );
        // Deltas, variants, run metrics and families are metrics as well.
        let ok = format!(
            "{MIN}[evals.needle]\n[evals.probes]\n[gates]\nrules = [\"base: needle.recall.delta \
             >= -0.1\", \"cost.agent.delta_pct <= 5\", \"tokens < 1e9\", \
             \"probes.judge_accuracy >= 1\", \"needle.pass >= 0.5\"]\n[report]\n\
             metrics = [\"needle.*\", \"tokens\", \"cost.*\", \"tokens.*\"]\n"
        );
        load(&ok).unwrap();
        let only_needle = crate::config::Overrides {
            evals: vec!["needle".into()],
            ..Default::default()
        };
        let drift = format!(
            "{MIN}[evals.needle]\n[evals.drift]\n[gates]\nrules = [\"drift.score >= 4\"]\n"
        );
        LoadedSuite::from_str_with(&drift, Path::new("suite.toml"), &only_needle).unwrap();
        let e = load(&format!(
            "{MIN}[report]\nmetrics = [\"needle.recall\", \"tokns\"]\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(
                "suite.toml:6: `[report] metrics`: metric `needle.recall` is eval `needle`'s"
            ),
            "{e}"
        );
        assert!(
            e.contains(
                "suite.toml:6: `[report] metrics`: unknown metric `tokns` (did you mean `tokens`?)"
            ),
            "{e}"
        );
    }

    /// The metric names are checked on the suite as `--set` leaves it: an eval a `--set` turns
    /// on makes its metrics valid, one it turns off makes them wrong (at the file's line, naming
    /// the `--set`), and rules a `--set` gives are checked too, at that `--set`.
    #[test]
    fn metric_names_are_checked_after_set_overrides() {
        let sets = |s: &[&str]| crate::config::Overrides {
            sets: s.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let with = |text: &str, s: &[&str]| {
            LoadedSuite::from_str_with(text, Path::new("suite.toml"), &sets(s))
        };
        let drift =
            format!("{MIN}[evals.drift]\nenabled = false\n[report]\nmetrics = [\"drift.score\"]\n");
        assert!(load(&drift).is_err());
        with(&drift, &["evals.drift.enabled=true"]).unwrap();
        let needle = format!("{MIN}[evals.needle]\n[report]\nmetrics = [\"needle.recall\"]\n");
        load(&needle).unwrap();
        let e = with(&needle, &["evals.needle.enabled=false"])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "suite.toml:7: `[report] metrics`: metric `needle.recall` is eval `needle`'s, which \
             this suite does not run (`--set evals.needle.enabled=false` turns it off); the \
             suite's evals: replay"
        );
        let arg = "gates.rules=[\"needle.recal >= 0.5\"]";
        let e = with(&needle, &[arg]).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "--set {arg}: gate rule `needle.recal >= 0.5`: unknown metric `needle.recal` \
                 (did you mean `needle.recall`?)"
            )),
            "{e}"
        );
    }

    /// An eval whose table is there with `enabled = false` is to be enabled, not added: the
    /// message said "add `[evals.drift]`" for a suite that has that table. For a gate rule, a
    /// `[report] metrics` name and an `eval.*` family alike (the family had no fix at all, and
    /// a metric was told to "drop the rule").
    #[test]
    fn a_metric_of_a_disabled_eval_says_to_enable_its_table_not_to_add_it() {
        let text = format!(
            "{MIN}[evals.drift]\nenabled = false\n[gates]\nrules = [\"drift.score >= 4\"]\n\
             [report]\nmetrics = [\"drift.score\", \"drift.*\"]\n"
        );
        let e = load(&text).unwrap_err().to_string();
        let enable = "`[evals.drift]` has `enabled = false`: set `enabled = true` there or pass \
                      `--set evals.drift.enabled=true`";
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(
            lines,
            [
                format!(
                    "suite.toml:8: gate rule `drift.score >= 4`: metric `drift.score` is eval \
                     `drift`'s, which this suite does not run ({enable}, or drop the rule); the \
                     suite's evals: replay"
                ),
                format!(
                    "suite.toml:10: `[report] metrics`: metric `drift.score` is eval `drift`'s, \
                     which this suite does not run ({enable}, or drop the metric); the suite's \
                     evals: replay"
                ),
                format!(
                    "suite.toml:10: `[report] metrics`: `drift.*` names eval `drift`, which this \
                     suite does not run ({enable}, or drop the metric); the suite's evals: replay"
                ),
            ],
            "{e}"
        );
        assert!(!e.contains("add `[evals.drift]`"), "{e}");
        // The `--set` the message offers runs it.
        LoadedSuite::from_str_with(
            &text,
            Path::new("suite.toml"),
            &crate::config::Overrides {
                sets: vec!["evals.drift.enabled=true".into()],
                ..Default::default()
            },
        )
        .unwrap();
        // Without the table, it is to be added.
        let e = load(&text.replace("[evals.drift]\nenabled = false\n", ""))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not run (add `[evals.drift]`, or drop the rule)"),
            "{e}"
        );
        assert!(
            e.contains("does not run (add `[evals.drift]`, or drop the metric)"),
            "{e}"
        );
    }

    /// `max_output_tokens` is checked against each variant's own window where `[engine.base]`
    /// or the variant sets one, not the preset's default (200,000 for deepagents): 50,000
    /// fits the default but not a base window of 20,000; 250,000 fits a variant's 400,000.
    #[test]
    fn max_output_tokens_is_checked_against_the_windows_the_suite_sets() {
        let text = format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\npreset = \"deepagents\"\n\
             window = 20000\nmax_output_tokens = 50000\n[engine.variants.a]\n"
        );
        let e = load(&text).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "suite.toml:10: `[engine.base]`: `max_output_tokens`: 50000 leaves no input \
                 budget in a window of 20000 tokens (from the configuration's `window`)"
            ),
            "{e}"
        );
        load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\nmax_output_tokens = 250000\n\
             [engine.variants.a]\nwindow = 400000\n"
        ))
        .unwrap();
    }

    /// What the run's provider check refuses is refused at load (so by a dry run too), at the
    /// provider's table: an `openai` provider without `model`.
    #[test]
    fn a_provider_without_a_model_is_refused_at_load() {
        let text = format!("{MIN}[providers.agent]\nkind = \"openai\"\napi_key_env = \"K\"\n");
        let e = load(&text).unwrap_err().to_string();
        assert_eq!(
            e,
            "suite.toml:5: provider `agent`: openai provider: `model` is required"
        );
        load(&text.replace("kind = \"openai\"", "kind = \"openai\"\nmodel = \"gpt-4o\"")).unwrap();
    }

    #[test]
    fn defaults_apply() {
        let s = load(MIN).unwrap();
        assert_eq!(s.suite.suite.output_dir, "reports");
        assert_eq!(s.suite.suite.repeats, 1);
        assert_eq!(s.suite.traces.from, "auto");
        assert_eq!(s.suite.traces.counter, CounterKind::O200k);
        assert!(s.suite.evals.replay.enabled);
        assert_eq!(s.variants.len(), 1);
        assert_eq!(s.baseline, "base");
    }

    #[test]
    fn one_of_choices_are_replaced_not_mixed() {
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\nsummarize.trigger.tokens = 9000\nsummarize.keep.messages = 10\n[engine.variants.a]\n[engine.variants.b]\nsummarize.trigger.fraction = 0.15\nsummarize.keep.messages = 4\n"
        ))
        .unwrap();
        let b = s.variants.iter().find(|v| v.name == "b").unwrap();
        let trigger = b.engine["summarize"]["trigger"].as_table().unwrap();
        assert_eq!(trigger.len(), 1, "{trigger:?}");
        assert_eq!(trigger["fraction"].as_float(), Some(0.15));
        assert_eq!(
            b.engine["summarize"]["keep"]["messages"].as_integer(),
            Some(4)
        );
    }

    #[test]
    fn a_suite_file_that_is_not_utf8_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("latin1.toml");
        let mut bytes = MIN.as_bytes().to_vec();
        bytes.extend_from_slice(b"# caf\xe9\n");
        std::fs::write(&p, bytes).unwrap();
        let e = LoadedSuite::load(&p).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}:5: not UTF-8 text", p.display())),
            "{e}"
        );
    }

    #[test]
    fn engine_errors_point_at_the_variant_or_base_at_load() {
        let e = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\nwindow = 0\n[engine.variants.a]\n[engine.variants.b]\nsumarize.trigger = 1\n[engine.variants.c]\nwindow = 5\nsummarize.trigger.fraction = 1.5\n"
        ))
        .unwrap_err();
        // `a` inherits window = 0 from base (line 8: the base's error, the base alone has
        // it); `b` misspells a key (line 11, with a suggestion); `c`'s fraction is out of
        // range (line 14, key path from the parser).
        let msg = e.to_string();
        let lines: Vec<&str> = msg.lines().collect();
        assert_eq!(lines.len(), 3, "{msg}");
        assert_eq!(
            lines[0], "suite.toml:8: `[engine.base]`: `window`: must be > 0",
            "{msg}"
        );
        assert!(
            lines[1].starts_with("suite.toml:11: engine variant `b`: `sumarize`: unknown field")
                && lines[1].ends_with("(did you mean `summarize`?)"),
            "{msg}"
        );
        assert!(
            lines[2].starts_with("suite.toml:14: engine variant `c`: `summarize.trigger")
                && lines[2].contains("fraction in (0, 1]"),
            "{msg}"
        );
    }

    #[test]
    fn an_engine_base_error_is_the_base_s_once_or_names_the_variants_it_shows_in() {
        // Every variant (and the base alone) has the misspelt preset: one error, the base's.
        let e = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\npreset = \"deepagent\"\n[engine.variants.a]\n[engine.variants.b]\nwindow = 9000\n"
        ))
        .unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        assert!(
            e.message
                .starts_with("`[engine.base]`: `preset`: unknown preset \"deepagent\" (known: "),
            "{e}"
        );
        assert!(e.message.ends_with("(did you mean `deepagents`?)"), "{e}");
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
        // A suite without variants: its one variant is the base.
        let e = load(&format!("{MIN}[engine.base]\nwindow = -1\n")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "suite.toml:6: `[engine.base]`: `window`: invalid value: integer `-1`, expected a \
             non-negative integer"
        );
        // The base's summarize table is fine alone but not with `b`'s preset: the line is the
        // base's, the problem shows in `b` only.
        let e = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\nsummarize.trigger.fraction = 0.5\n[engine.variants.a]\n[engine.variants.b]\npreset = \"none\"\n"
        ))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "suite.toml:8: `[engine.base]` as merged into engine variant `b`: `summarize`: \
             preset \"none\" has no `summarize` layer to configure"
        );
    }

    #[test]
    fn typed_variants_and_providers_at_load() {
        let s = load(&format!(
            "{MIN}[engine.base]\npreset = \"digitorn\"\nemergency.limit = {{ fraction = 0.9 }}\n[providers.agent]\nkind = \"openai\"\nmodel = \"m\"\napi_key_env = \"K\"\nconcurrency = 2\n"
        ))
        .unwrap();
        assert_eq!(s.variants[0].config.preset.as_deref(), Some("digitorn"));
        let agent = s.provider(ProviderRole::Agent);
        assert!(agent.configured);
        assert_eq!(agent.config.model, "m");
        assert_eq!(agent.concurrency_limit, Some(2));
        assert!(!s.provider(ProviderRole::Judge).configured);
        assert_eq!(s.provider(ProviderRole::Judge).concurrency_limit, None);
    }

    #[test]
    fn base_fraction_and_variant_tokens_do_not_mix() {
        // base `emergency.limit = {fraction = 0.9}` + variant `{tokens = 9000}`: the variant
        // replaces the choice (it used to merge into an invalid `{fraction, tokens}`).
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\npreset = \"digitorn\"\nemergency.limit = {{ fraction = 0.9 }}\n[engine.variants.a]\n[engine.variants.b]\nemergency.limit = {{ tokens = 9000 }}\n"
        ))
        .unwrap();
        let b = s.variants.iter().find(|v| v.name == "b").unwrap();
        let r = b.config.resolve(None).unwrap();
        let lim = r.layers.iter().find_map(|l| match l {
            crate::engine::LayerConfig::Emergency(e) => Some(e.limit),
            _ => None,
        });
        assert_eq!(lim, Some(crate::engine::config::Trigger::Tokens(9000)));
    }

    #[test]
    fn nan_and_infinity_are_named_at_their_line() {
        let e = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\npreset = \"deepagents\"\n[engine.variants.a]\n[engine.variants.b]\nsummarize.trigger.fraction = nan\n"
        ))
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("`summarize.trigger.fraction`: expected a finite number, got NaN"),
            "{e}"
        );
        let e = load(&format!(
            "{MIN}[providers.agent]\nkind = \"openai\"\nmodel = \"m\"\ntemperature = inf\n"
        ))
        .unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        assert!(
            e.message
                .contains("`temperature`: expected a finite number"),
            "{e}"
        );
    }

    #[test]
    fn a_zero_trace_limit_is_named_at_its_line() {
        let text = MIN.replace("[traces]\n", "[traces]\nlimit = 0\n");
        assert_ne!(text, MIN, "MIN has a [traces] table");
        let e = load(&text).unwrap_err();
        assert!(e.to_string().contains("`limit` must be at least 1"), "{e}");
        assert!(e.line > 0, "{e}");
    }

    /// An external engine's timeout past a day (`1e30` panicked in every unit of the variant) or
    /// not a number is refused at load, at its line.
    #[test]
    fn an_external_timeout_past_a_day_is_refused_at_its_line() {
        for value in ["1e30", "86401", "inf", "nan"] {
            let text = format!(
                "{MIN}[engine]\nbaseline = \"a\"\n[engine.variants.a]\n[engine.variants.mine]\n\
                 external.command = [\"python3\", \"mine.py\"]\nexternal.timeout_secs = {value}\n"
            );
            let e = load(&text).unwrap_err();
            assert_eq!(e.line, 10, "{value}: {e}");
            assert!(
                e.message.contains("`external.timeout_secs`"),
                "{value}: {e}"
            );
            let accepted = e.message.contains("at most 86400 (one day)")
                || (e.message.contains("expected a finite number")
                    && !value.starts_with(['1', '8']));
            assert!(accepted, "{value}: {e}");
        }
    }

    /// A provider's `timeout_secs` past a day (`1e15` was taken: no timeout at all) or not a
    /// number is refused at load, at its line, by `external.timeout_secs`'s rule; a day is not.
    #[test]
    fn a_provider_timeout_past_a_day_is_refused_at_its_line() {
        // A local server: nothing else in the table is refused.
        let table = |value: &str| {
            format!(
                "{MIN}[providers.agent]\nkind = \"openai\"\nmodel = \"m\"\ntimeout_secs = {value}\n\
                 base_url = \"http://127.0.0.1:1/v1\"\n"
            )
        };
        for value in ["1e15", "86401", "1e30", "0", "inf", "nan"] {
            let e = load(&table(value)).unwrap_err();
            assert_eq!(e.line, 8, "{value}: {e}");
            assert!(e.message.contains("`timeout_secs`"), "{value}: {e}");
            let accepted = e.message.contains("at most 86400 (one day)")
                || (e.message.contains("expected a finite number")
                    && !value.starts_with(['0', '1', '8']));
            assert!(accepted, "{value}: {e}");
        }
        let e = load(&table("1e15")).unwrap_err();
        assert!(e.to_string().contains("got 1e15"), "{e}");
        assert!(
            load(&table("86400")).is_ok(),
            "{:?}",
            load(&table("86400")).err()
        );
    }

    #[test]
    fn provider_values_are_checked_at_load() {
        for (body, key, line) in [
            ("timeout_secs = 1e20", "timeout_secs", 8),
            ("retry_max_secs = 1e300", "retry_max_secs", 8),
            ("retry_max_secs = 1e15", "retry_max_secs", 8),
            ("retry_max_secs = 86401", "retry_max_secs", 8),
            ("extra_body = { messages = [] }", "extra_body", 8),
            ("timeout_s = 60", "timeout_s", 8),
        ] {
            let e = load(&format!(
                "{MIN}[providers.agent]\nkind = \"openai\"\nmodel = \"m\"\n{body}\n"
            ))
            .unwrap_err();
            assert_eq!(e.line, line, "{e}");
            assert!(e.message.contains(&format!("`{key}`")), "{e}");
        }
        // The longest wait has the timeouts' bound: a day (it took any value a `Duration`
        // holds, `1e15` too).
        let e = load(&format!(
            "{MIN}[providers.agent]\nkind = \"openai\"\nmodel = \"m\"\nretry_max_secs = 1e15\n"
        ))
        .unwrap_err();
        assert!(
            e.message.contains("at most 86400 (one day), got 1e15"),
            "{e}"
        );
        assert_eq!(e.line, 8, "{e}");
        assert!(
            e.to_string().contains("suite.toml") && e.message.contains("`retry_max_secs`"),
            "{e}"
        );
    }

    #[test]
    fn gate_rules_and_output_dir_are_checked_at_load() {
        let e = load(&format!(
            "{MIN}[gates]\nrules = [\"needle.recall >= abc\"]\n"
        ))
        .unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        assert!(e.message.contains("needle.recall >= abc"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("out"), "x").unwrap();
        let e = LoadedSuite::from_str(
            "[suite]\nname = \"t\"\noutput_dir = \"out\"\n[traces]\npaths = [\"x\"]\n",
            &dir.path().join("s.toml"),
        )
        .unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("is a file"), "{e}");
    }

    /// `output_dir` follows `-o`'s one rule (`output::not_a_directory`): a name with a file's
    /// extension, or a path under a file, is refused at its line, as `-o x.html` is.
    #[test]
    fn output_dir_follows_the_rule_of_dash_o() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "x").unwrap();
        for (value, says) in [
            ("x.html", "looks like a .html file name"),
            ("f/sub", "is a file, not a directory"),
        ] {
            let e = LoadedSuite::from_str(
                &format!(
                    "[suite]\nname = \"t\"\noutput_dir = \"{value}\"\n[traces]\npaths = [\"x\"]\n"
                ),
                &dir.path().join("s.toml"),
            )
            .unwrap_err();
            assert_eq!(e.line, 3, "{e}");
            assert!(e.to_string().contains("s.toml:3:"), "{e}");
            assert!(
                e.message.contains(&format!("`output_dir` = `{value}`")),
                "{e}"
            );
            assert!(e.message.contains(says), "{e}");
        }
        std::fs::create_dir(dir.path().join("d.html")).unwrap();
        let ok = LoadedSuite::from_str(
            "[suite]\nname = \"t\"\noutput_dir = \"d.html\"\n[traces]\npaths = [\"x\"]\n",
            &dir.path().join("s.toml"),
        );
        assert!(
            !ok.as_ref().is_err_and(|e| e.message.contains("output_dir")),
            "an existing directory is fine whatever its name: {:?}",
            ok.err()
        );
    }

    #[test]
    fn trace_patterns_directories_and_globs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("data/a/deep")).unwrap();
        for f in [
            "data/a/x.json",
            "data/a/deep/y.json",
            "data/a/SOURCE.txt",
            "data/a/notes.md",
            "data/z.jsonl",
        ] {
            std::fs::write(d.join(f), "{}").unwrap();
        }
        let text = "[suite]\nname = \"t\"\n[traces]\npaths = [\"data/a\", \"data/*.jsonl\", \"data/**/y.json\"]\n";
        std::fs::write(d.join("s.toml"), text).unwrap();
        let s = LoadedSuite::load(&d.join("s.toml")).unwrap();
        let rels: Vec<String> = s
            .trace_files()
            .unwrap()
            .into_iter()
            .map(|f| f.rel)
            .collect();
        // Directory: every file but notes, recursively; `*` stays in its directory; `**` descends;
        // duplicates (y.json twice) collapse.
        assert_eq!(
            rels,
            ["data/a/deep/y.json", "data/a/x.json", "data/z.jsonl"]
        );
        let s2 = LoadedSuite::from_str(
            "[suite]\nname = \"t\"\n[traces]\npaths = [\"data/*.json\"]\n",
            &d.join("s.toml"),
        )
        .unwrap();
        let e = s2.trace_files().unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("matches no file"), "{e}");
    }

    #[test]
    fn variants_deep_merge_over_base() {
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\nwindow = 100\nsummarize = {{ trigger = {{ fraction = 0.85 }}, keep = {{ messages = 10 }} }}\n[engine.variants.a]\n[engine.variants.b]\nsummarize.trigger.fraction = 0.15\n"
        ))
        .unwrap();
        let b = s.variants.iter().find(|v| v.name == "b").unwrap();
        assert_eq!(b.engine["window"].as_integer(), Some(100));
        assert_eq!(
            b.engine["summarize"]["trigger"]["fraction"].as_float(),
            Some(0.15)
        );
        assert_eq!(
            b.engine["summarize"]["keep"]["messages"].as_integer(),
            Some(10)
        );
        assert_eq!(s.ordered_variants()[0].name, "a");
    }

    #[test]
    fn variants_keep_the_order_the_suite_defines_them_in() {
        // Read as a table sorted by name, `g10` came before `g2` and `digitorn` before `b`.
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"g1\"\n[engine.variants.g1]\n[engine.variants.g2]\n\
             [engine.variants.g10]\nwindow = 1000\n[engine.variants.digitorn]\n"
        ))
        .unwrap();
        let names: Vec<&str> = s
            .ordered_variants()
            .iter()
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(names, ["g1", "g2", "g10", "digitorn"]);
    }

    #[test]
    fn grid_is_the_cartesian_product_in_stable_order() {
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"summarize.keep.messages=3,summarize.trigger.fraction=0.85\"\n[engine.grid]\n\"summarize.trigger.fraction\" = [0.85, 0.15]\nsummarize.keep.messages = [3, 10]\n"
        ))
        .unwrap();
        let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
        // Dimensions in key order (keep < trigger), last dimension fastest.
        assert_eq!(
            names,
            [
                "summarize.keep.messages=3,summarize.trigger.fraction=0.85",
                "summarize.keep.messages=3,summarize.trigger.fraction=0.15",
                "summarize.keep.messages=10,summarize.trigger.fraction=0.85",
                "summarize.keep.messages=10,summarize.trigger.fraction=0.15",
            ]
        );
        let v = &s.variants[3];
        assert_eq!(
            v.engine["summarize"]["trigger"]["fraction"].as_float(),
            Some(0.15)
        );
        assert_eq!(
            v.engine["summarize"]["keep"]["messages"].as_integer(),
            Some(10)
        );
    }

    #[test]
    fn baseline_must_exist_and_is_required_with_several_variants() {
        let e = load(&format!(
            "{MIN}[engine]\nbaseline = \"bse\"\n[engine.variants.base]\n[engine.variants.x]\n"
        ))
        .unwrap_err();
        assert_eq!(e.line, 6);
        assert!(e.message.contains("did you mean `base`?"), "{e}");
        let e = load(&format!("{MIN}[engine.variants.a]\n[engine.variants.b]\n")).unwrap_err();
        assert!(e.message.contains("no baseline"), "{e}");
    }

    #[test]
    fn grid_leaf_must_be_a_non_empty_list() {
        let e = load(&format!("{MIN}[engine.grid]\nwindow = 2000\n")).unwrap_err();
        assert_eq!(e.line, 6);
        assert!(
            e.message.contains("`window` must be a non-empty list"),
            "{e}"
        );
    }

    #[test]
    fn provider_keys_never_in_files() {
        let e = load(&format!(
            "{MIN}[providers.agent]\nkind = \"openai\"\napi_key = \"sk-x\"\n"
        ))
        .unwrap_err();
        assert_eq!(e.line, 7);
        assert!(e.message.contains("api_key_env"));
        let e = load(&format!("{MIN}[providers.judge]\nmodel = \"m\"\n")).unwrap_err();
        assert!(e.message.contains("missing `kind`"), "{e}");
    }

    #[test]
    fn unknown_variant_gets_a_suggestion() {
        let e = load(&format!("{MIN}counter = \"o200\"\n")).unwrap_err();
        assert_eq!(e.line, 5);
        assert!(e.message.contains("did you mean `o200k`?"), "{e}");
    }

    /// More needles and distractors than one trace can hold are refused at load, at the line
    /// of the key that does not fit (every needle unit failed with `eval_config` at run time,
    /// and the run exited 0 without a needle figure); the paraphrased limits too.
    #[test]
    fn needles_and_distractors_that_do_not_fit_a_trace_are_refused_at_load() {
        let needle = |keys: &str| load(&format!("{MIN}[evals.needle]\n{keys}"));
        let e = needle("needles = 100000\n").unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        assert!(
            e.to_string().contains("at most 16 needles + distractors"),
            "{e}"
        );
        let e = needle("needles = 2\ndistractors = 15\n").unwrap_err();
        assert_eq!(e.line, 7, "{e}");
        let e = needle("paraphrase = true\nneedles = 9\n").unwrap_err();
        assert_eq!(e.line, 7, "{e}");
        assert!(
            e.to_string().contains("at most 8 paraphrased needles"),
            "{e}"
        );
        let e = needle("paraphrase = true\nneedles = 1\ndistractors = 10\n").unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        assert!(e.to_string().contains("with `paraphrase = true`"), "{e}");
        // The limits themselves load.
        needle("needles = 2\ndistractors = 14\n").unwrap();
        needle("paraphrase = true\nneedles = 8\ndistractors = 8\n").unwrap();
    }

    /// A table written as a value is said to be a table, in the file's words: the messages
    /// named the Rust type (`expected struct SuiteSection`, `struct NeedleEval`, `struct
    /// ModelPrice`, the engine's `struct Summarize`), also for `--set suite=3`.
    #[test]
    fn a_value_where_a_table_belongs_is_said_to_need_a_table_not_a_rust_struct() {
        let trace = "[traces]\npaths = [\"x\"]\n";
        for (text, line) in [
            (format!("suite = 3\n{trace}"), 1),
            (format!("{MIN}[evals]\nneedle = 3\n"), 6),
            (format!("{MIN}[pricing]\nm = 3\n"), 6),
            (format!("{MIN}[engine.base]\nsummarize = 3\n"), 6),
            (format!("{MIN}[providers]\nagent = 3\n"), 6),
        ] {
            let e = load(&text).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("expected a table"), "{text}: {msg}");
            assert!(
                !msg.contains("struct") && !msg.contains("map"),
                "{text}: {msg}"
            );
            assert_eq!(e.line, line, "{text}: {msg}");
        }
        let sets = crate::config::Overrides {
            sets: vec!["suite=3".into()],
            ..Default::default()
        };
        let e = LoadedSuite::from_str_with(MIN, Path::new("suite.toml"), &sets).unwrap_err();
        assert!(e.to_string().contains("expected a table"), "{e}");
        assert!(!e.to_string().contains("struct"), "{e}");
    }

    #[test]
    fn ask_at_accepts_end_or_index() {
        let s = load(&format!("{MIN}[evals.needle]\nask_at = 7\n")).unwrap();
        assert_eq!(s.suite.evals.needle.unwrap().ask_at, AskAt::Call(7));
        let e = load(&format!("{MIN}[evals.needle]\nask_at = \"middle\"\n")).unwrap_err();
        assert_eq!(e.line, 6);
    }

    #[test]
    fn digest_ignores_formatting_but_not_content() {
        let a = load(MIN).unwrap();
        let b = load(&format!("# comment\n{MIN}\n")).unwrap();
        let c = load(&format!("{MIN}from = \"openai\"\n")).unwrap();
        assert_eq!(a.digest, b.digest);
        assert_ne!(a.digest, c.digest);
    }
}
