//! Unit tests of suite loading (types, variants, grids, providers, discovery).

mod tests {
    use crate::config::suite::*;
    use crate::config::{ConfigError, LoadedSuite};
    use std::path::Path;

    fn load(text: &str) -> Result<LoadedSuite, ConfigError> {
        LoadedSuite::from_str(text, Path::new("suite.toml"))
    }

    const MIN: &str = "[suite]\nname = \"t\"\n[traces]\npaths = [\"x\"]\n";

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
    fn owner_validation_errors_point_at_the_variant_or_base() {
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\nwindow = 0\n[engine.variants.a]\n[engine.variants.b]\nsumarize.trigger = 1\n"
        ))
        .unwrap();
        let e = s
            .check_variants(|v| {
                if v.engine.contains_key("sumarize") {
                    return Err((vec!["sumarize".into()], "unknown key".into()));
                }
                if v.engine["window"].as_integer() == Some(0) {
                    return Err((vec!["window".into()], "window must be > 0".into()));
                }
                Ok(())
            })
            .unwrap_err();
        // Variant `a` inherits window = 0 from base (line 8); `b` misspells a key (line 11).
        assert_eq!(
            e.to_string(),
            "suite.toml:8: engine variant `a`: window must be > 0\nsuite.toml:11: engine variant `b`: unknown key"
        );
        assert!(s.check_variants(|_| Ok(())).is_ok());
        // An owner passing serde's message through with no key: the field is located.
        let b = s.variants.iter().find(|v| v.name == "b").unwrap();
        let e = s.variant_error(
            b,
            &[],
            "unknown field `sumarize`, expected one of `window`, `summarize`",
        );
        assert_eq!(e.line, 11);
        assert!(e.message.ends_with("(did you mean `summarize`?)"), "{e}");
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
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\nwindow = 100\nsummarize = {{ trigger = 0.85, keep = 10 }}\n[engine.variants.a]\n[engine.variants.b]\nsummarize.trigger = 0.15\n"
        ))
        .unwrap();
        let b = s.variants.iter().find(|v| v.name == "b").unwrap();
        assert_eq!(b.engine["window"].as_integer(), Some(100));
        assert_eq!(b.engine["summarize"]["trigger"].as_float(), Some(0.15));
        assert_eq!(b.engine["summarize"]["keep"].as_integer(), Some(10));
        assert_eq!(s.ordered_variants()[0].name, "a");
    }

    #[test]
    fn grid_is_the_cartesian_product_in_stable_order() {
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"clear.keep=3,summarize.trigger=0.85\"\n[engine.grid]\n\"summarize.trigger\" = [0.85, 0.15]\nclear.keep = [3, 10]\n"
        ))
        .unwrap();
        let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
        // Dimensions in key order (clear < summarize), last dimension fastest.
        assert_eq!(
            names,
            [
                "clear.keep=3,summarize.trigger=0.85",
                "clear.keep=3,summarize.trigger=0.15",
                "clear.keep=10,summarize.trigger=0.85",
                "clear.keep=10,summarize.trigger=0.15",
            ]
        );
        let v = &s.variants[3];
        assert_eq!(v.engine["summarize"]["trigger"].as_float(), Some(0.15));
        assert_eq!(v.engine["clear"]["keep"].as_integer(), Some(10));
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
