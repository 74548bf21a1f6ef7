//! Command-line changes to a suite: `--set KEY=VALUE` overrides (merged with the one rule,
//! [`crate::confcore::merge`]) and the selection flags `--variant`, `--trace`, `--eval` and
//! `--limit`. A run records them in run.json (`overrides`) and they change the suite digest,
//! so `--resume` and `merge` refuse a run made with a different set.
//!
//! Where a `--set` key goes (decision, documented in docs/suite.md):
//! - `variant.NAME.KEY` → `[engine.variants.NAME]` (NAME must be a variant of the suite);
//! - a key whose first segment is a suite section ([`SECTIONS`]: `suite`, `traces`, `engine`,
//!   `evals`, `providers`, `pricing`, `gates`, `report`; every top-level table of the suite's
//!   schema) → that key of the suite, e.g. `evals.needle.depths=[0.5]`,
//!   `report.metrics=["tokens"]`;
//! - a key whose first segment is an engine key ([`crate::engine::config::known_keys`]: a
//!   field of the engine configuration or a layer's table) → `[engine.base]`, e.g.
//!   `summarize.trigger.fraction=0.3`;
//! - any other key is an error ([`check_set_key`]) with a did-you-mean on the sections, the
//!   `variant.` shorthand and the engine keys: a misspelt section (`engnie.base.window`) was
//!   routed to `[engine.base]` and refused there as an unknown engine key, listing engine keys.
//!
//! VALUE is a TOML value (`0.3`, `true`, `[0.2, 0.5]`, `"text"`); anything that does not parse
//! as one is a string. Relative file paths resolve against the suite file, as in the suite.

/// The evals a suite can enable, in plan order (registered in [`super::evals`]).
pub use super::evals::EVAL_NAMES;
use super::suite::Suite;
use super::ConfigError;
use crate::confcore::did_you_mean;
use crate::confcore::merge::merge;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The suite's top-level tables, which a `--set` key may start with (a test keeps this list
/// equal to the schema's: a section left out was routed to `[engine.base]`).
pub const SECTIONS: [&str; 8] = [
    "suite",
    "traces",
    "engine",
    "evals",
    "providers",
    "pricing",
    "gates",
    "report",
];

/// What the command line changed in a suite (all empty: the suite as written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Overrides {
    /// `--set KEY=VALUE`, in command-line order (later ones win).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sets: Vec<String>,
    /// `--variant NAME`: only these variants run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<String>,
    /// `--trace GLOB`: only traces whose id matches one of these globs run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traces: Vec<String>,
    /// `--eval NAME`: only these evals run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evals: Vec<String>,
    /// `--limit N`: the first N selected traces (by id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl Overrides {
    pub fn is_empty(&self) -> bool {
        *self == Overrides::default()
    }

    /// The command-line flags that give these overrides (`--set window=30000 --trace 'a*'`),
    /// or `no overrides`.
    pub fn as_flags(&self) -> String {
        let quote = |v: &str| {
            let plain = !v.is_empty()
                && !v.starts_with('-')
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-=/:,+@".contains(c));
            if plain {
                v.to_string()
            } else {
                format!("'{}'", v.replace('\'', "'\\''"))
            }
        };
        let mut flags: Vec<String> = Vec::new();
        for (flag, values) in [
            ("--set", &self.sets),
            ("--variant", &self.variants),
            ("--trace", &self.traces),
            ("--eval", &self.evals),
        ] {
            flags.extend(values.iter().map(|v| format!("{flag} {}", quote(v))));
        }
        if let Some(n) = self.limit {
            flags.push(format!("--limit {n}"));
        }
        if flags.is_empty() {
            "no overrides".to_string()
        } else {
            flags.join(" ")
        }
    }

    /// The selection part (everything but `--set`), which is applied after the suite is typed.
    pub fn has_selection(&self) -> bool {
        !(self.variants.is_empty()
            && self.traces.is_empty()
            && self.evals.is_empty()
            && self.limit.is_none())
    }
}

/// The suite key path a `--set` key names (see the module documentation).
pub fn set_path(key: &[String]) -> Vec<String> {
    match key.first().map(String::as_str) {
        Some("variant") if key.len() >= 3 => {
            let mut p = vec!["engine".to_string(), "variants".to_string()];
            p.extend(key[1..].iter().cloned());
            p
        }
        Some(first) if SECTIONS.contains(&first) => key.to_vec(),
        _ => {
            let mut p = vec!["engine".to_string(), "base".to_string()];
            p.extend(key.iter().cloned());
            p
        }
    }
}

/// The last of the `--set` arguments `sets` whose suite key path and `path` name the same key
/// or one inside the other (`summarize.trigger.fractio` for an error at `summarize.trigger`),
/// sharing at least `keys` keys (an engine key's path shares `engine.variants.NAME` or
/// `engine.base` with every `--set` of that table: 3).
pub fn set_of<'a>(sets: &'a [String], path: &[&str], keys: usize) -> Option<&'a str> {
    sets.iter().rev().find_map(|arg| {
        let (key, _) = crate::engine::config::parse_set(arg).ok()?;
        let set = set_path(&key);
        let n = set.len().min(path.len());
        (n >= keys && set[..n].iter().zip(&path[..n]).all(|(a, b)| a == b)).then_some(arg.as_str())
    })
}

/// Refuse a `--set` key whose first segment is neither a suite section ([`SECTIONS`]), nor the
/// `variant.` shorthand, nor an engine key of `[engine.base]`, naming the likely one. Without
/// it such a key went to `[engine.base]`, whose refusal listed the engine's keys only.
pub fn check_set_key(arg: &str, key: &[String]) -> Result<(), ConfigError> {
    let Some(first) = key.first().map(String::as_str) else {
        return Ok(());
    };
    let engine_keys = crate::engine::config::known_keys();
    if first == "variant" || SECTIONS.contains(&first) || engine_keys.contains(&first) {
        return Ok(());
    }
    let candidates = SECTIONS
        .iter()
        .chain(&["variant"])
        .chain(engine_keys)
        .copied();
    Err(set_error(
        arg,
        format!(
            "`{first}` is neither a suite section ({}), nor `variant.NAME.KEY`, nor an engine \
             key of [engine.base]{}",
            SECTIONS.join(", "),
            did_you_mean(first, candidates)
        ),
    )
    .with_key(vec![first.to_string()]))
}

fn set_error(arg: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::new(format!("--set {arg}"), 0, message)
}

/// Apply `--set` overrides to a typed suite, one after the other, each through the suite's
/// types again (so a wrong key or value is an error naming the `--set` argument).
pub fn apply_sets(suite: &mut Suite, sets: &[String]) -> Result<(), ConfigError> {
    for arg in sets {
        let (key, value) = crate::engine::config::parse_set(arg)?;
        check_set_key(arg, &key)?;
        if key.first().map(String::as_str) == Some("variant") {
            if key.len() < 3 {
                return Err(set_error(
                    arg,
                    "expected variant.NAME.KEY=VALUE, e.g. variant.aggressive.summarize.trigger.fraction=0.1",
                ));
            }
            if !suite.engine.variants.contains_key(&key[1]) {
                return Err(set_error(
                    arg,
                    format!(
                        "the suite has no variant `{}` in [engine.variants]{}",
                        key[1],
                        did_you_mean(&key[1], suite.engine.variants.keys().map(String::as_str))
                    ),
                ));
            }
        }
        let mut patch = value;
        for seg in set_path(&key).iter().rev() {
            let mut m = serde_json::Map::new();
            m.insert(seg.clone(), patch);
            patch = Value::Object(m);
        }
        let mut v = serde_json::to_value(&*suite).expect("a suite serializes");
        merge(&mut v, patch);
        *suite = serde_path_to_error::deserialize(v).map_err(|e| {
            let path = ConfigError::key_of(&[], e.path());
            let message = super::load::plain_with_hint(&e.inner().to_string());
            set_error(arg, format!("`{}`: {message}", path.join("."))).with_key(path)
        })?;
    }
    Ok(())
}

/// Keep only the evals named by `--eval` (each must be enabled in the suite).
pub fn select_evals(suite: &mut Suite, names: &[String]) -> Result<(), ConfigError> {
    if names.is_empty() {
        return Ok(());
    }
    let e = &mut suite.evals;
    let enabled = e.enabled_names();
    for n in names {
        if !enabled.contains(&n.as_str()) {
            let why = if EVAL_NAMES.contains(&n.as_str()) {
                format!("the suite does not enable `{n}`")
            } else {
                format!(
                    "no eval is named `{n}`{}",
                    did_you_mean(n, EVAL_NAMES.iter().copied())
                )
            };
            return Err(ConfigError::new(
                "--eval",
                0,
                format!("{why}; it enables: {}", enabled.join(", ")),
            ));
        }
    }
    e.keep_only(names);
    Ok(())
}

/// Compiled `--trace` globs (matched against whole trace ids).
pub fn trace_matcher(globs: &[String]) -> Result<Option<globset::GlobSet>, ConfigError> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut b = globset::GlobSetBuilder::new();
    for g in globs {
        let glob = globset::GlobBuilder::new(g)
            .literal_separator(false)
            .build()
            .map_err(|e| ConfigError::new("--trace", 0, format!("`{g}`: {e}")))?;
        b.add(glob);
    }
    b.build()
        .map(Some)
        .map_err(|e| ConfigError::new("--trace", 0, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LoadedSuite;
    use std::path::Path;

    /// Said as the flags that give them (a resume refused for other overrides showed JSON).
    #[test]
    fn overrides_read_as_their_command_line_flags() {
        assert_eq!(Overrides::default().as_flags(), "no overrides");
        let o = Overrides {
            sets: vec!["window=30000".into()],
            variants: vec!["base".into()],
            traces: vec!["astropy*".into(), "it's".into()],
            evals: vec!["".into(), "-x".into()],
            limit: Some(2),
        };
        assert_eq!(
            o.as_flags(),
            "--set window=30000 --variant base --trace 'astropy*' --trace 'it'\\''s' \
             --eval '' --eval '-x' --limit 2"
        );
    }

    const SUITE: &str = "[suite]\nname = \"t\"\n[traces]\npaths = [\"x\"]\n\
        [engine.base]\npreset = \"deepagents\"\nwindow = 20000\n\
        [engine.variants.baseline]\n[engine.variants.aggressive]\nsummarize.trigger.fraction = 0.15\n\
        [evals.needle]\n[evals.invariants]\n";

    fn load(o: &Overrides) -> Result<LoadedSuite, ConfigError> {
        LoadedSuite::from_str_with(SUITE, Path::new("s.toml"), o)
    }

    fn sets(s: &[&str]) -> Overrides {
        Overrides {
            sets: s.iter().map(|s| s.to_string()).collect(),
            ..Overrides::default()
        }
    }

    #[test]
    fn sets_go_to_base_variant_or_suite_and_change_the_digest() {
        let plain = load(&Overrides::default()).unwrap();
        let s = load(&sets(&[
            "window=30000",
            "variant.aggressive.summarize.trigger.fraction=0.3",
            "suite.repeats=2",
        ]))
        .unwrap();
        assert_eq!(s.suite.engine.base["window"].as_integer(), Some(30000));
        assert_eq!(s.suite.suite.repeats, 2);
        let aggr = s.variants.iter().find(|v| v.name == "aggressive").unwrap();
        assert_eq!(aggr.engine["window"].as_integer(), Some(30000));
        assert_eq!(
            aggr.engine["summarize"]["trigger"]["fraction"].as_float(),
            Some(0.3)
        );
        assert_ne!(plain.digest, s.digest);
        // The same sets give the same digest (resume and merge compare it).
        assert_eq!(
            s.digest,
            load(&sets(&[
                "window=30000",
                "variant.aggressive.summarize.trigger.fraction=0.3",
                "suite.repeats=2",
            ]))
            .unwrap()
            .digest
        );
    }

    /// Every top-level table of the suite's schema is one `--set` can reach: `report` was
    /// missing, so `--set report.metrics=[…]` went to `[engine.base]` and was refused there.
    #[test]
    fn every_top_level_table_of_the_schema_is_settable() {
        let schema = serde_json::to_value(crate::config::suite::schema()).unwrap();
        let mut tables: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        tables.sort_unstable();
        let mut sections = SECTIONS.to_vec();
        sections.sort_unstable();
        assert_eq!(sections, tables);
        let s = load(&sets(&[
            "report.metrics=[\"tokens\", \"needle.*\"]",
            "gates.rules=[\"needle.recall >= 0.5\"]",
        ]))
        .unwrap();
        assert_eq!(s.suite.report.metrics, ["tokens", "needle.*"]);
        assert_eq!(s.suite.gates.rules, ["needle.recall >= 0.5"]);
        assert!(!s.suite.engine.base.contains_key("report"));
        // A wrong metric is blamed on the `--set` that named it, as in the file.
        let arg = "report.metrics=[\"drift.score\"]";
        let e = load(&sets(&[arg])).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "--set {arg}: `[report] metrics`: metric `drift.score`"
            )),
            "{e}"
        );
    }

    #[test]
    fn bad_sets_name_the_argument() {
        let e = load(&sets(&["variant.agressive.window=1"])).unwrap_err();
        assert!(e.to_string().contains("did you mean `aggressive`"), "{e}");
        let e = load(&sets(&["suite.repeats=many"])).unwrap_err();
        assert!(e.to_string().contains("--set suite.repeats=many"), "{e}");
        assert!(load(&sets(&["window"])).is_err());
    }

    /// A first key segment that is neither a section, nor `variant.`, nor an engine key is
    /// refused by the `--set`, with a did-you-mean on the sections (and the engine keys). A
    /// misspelt section went to `[engine.base]`, whose refusal listed the engine's keys and
    /// suggested no section.
    #[test]
    fn a_misspelt_section_is_refused_with_a_did_you_mean() {
        for (arg, like) in [
            ("engnie.base.window=1000", "engine"),
            ("reprot.metrics=[\"tokens\"]", "report"),
            ("evla.needle.depths=[0.5]", "evals"),
            ("gate.rules=[]", "gates"),
            ("variants.aggressive.window=1", "variant"),
            ("windw=1000", "window"),
            ("sumarize.trigger.fraction=0.3", "summarize"),
        ] {
            let e = load(&sets(&[arg])).unwrap_err();
            let first = arg.split('.').next().unwrap().split('=').next().unwrap();
            assert_eq!(
                e.to_string(),
                format!(
                    "--set {arg}: `{first}` is neither a suite section (suite, traces, engine, \
                     evals, providers, pricing, gates, report), nor `variant.NAME.KEY`, nor an \
                     engine key of [engine.base] (did you mean `{like}`?)"
                ),
            );
            assert_eq!(e.key, [first]);
        }
        // Nothing near: no guess.
        let e = load(&sets(&["zzzzzzzz.x=1"])).unwrap_err().to_string();
        assert!(e.ends_with("nor an engine key of [engine.base]"), "{e}");
        // Every documented shorthand still goes where it did.
        for key in SECTIONS
            .iter()
            .chain(&["variant"])
            .chain(crate::engine::config::known_keys())
        {
            let k = vec![key.to_string(), "x".to_string()];
            assert!(check_set_key("k=v", &k).is_ok(), "{key}");
        }
        let s = load(&sets(&[
            "window=30000",
            "summarize.trigger.fraction=0.3",
            "engine.base.max_output_tokens=512",
            "variant.aggressive.window=25000",
            "evals.needle.depths=[0.5]",
        ]))
        .unwrap();
        assert_eq!(s.suite.engine.base["window"].as_integer(), Some(30000));
        assert_eq!(
            s.suite.engine.base["max_output_tokens"].as_integer(),
            Some(512)
        );
        let aggr = s.variants.iter().find(|v| v.name == "aggressive").unwrap();
        assert_eq!(aggr.engine["window"].as_integer(), Some(25000));
    }

    /// A `--set` error reads as the same mistake in the file does: the plain type, the
    /// did-you-mean, "unknown value"; and a value the checks after typing refuse is blamed on
    /// the `--set`, not on the file's line of the key it replaced.
    #[test]
    fn set_errors_read_like_file_errors_and_blame_the_argument() {
        for (arg, says) in [
            (
                "suite.repeats=three",
                "--set suite.repeats=three: `suite.repeats`: invalid type: string \"three\", expected a non-negative integer",
            ),
            ("evals.needle.dephts=[0.3]", "(did you mean `depths`?)"),
            (
                "evals.needle.positions=[\"tools\"]",
                "unknown value `tools`, expected one of `user`, `tool`, `assistant` (did you mean `tool`?)",
            ),
            (
                "suite.repeats=0",
                "--set suite.repeats=0: `repeats` must be at least 1",
            ),
        ] {
            let e = load(&sets(&[arg])).unwrap_err().to_string();
            assert!(e.contains(says), "{arg}: {e}");
            assert!(!e.contains("s.toml"), "{arg}: {e}");
        }
        // Without the `--set`, the same check names the file's line.
        let text = SUITE.replace("[suite]\n", "[suite]\nrepeats = 0\n");
        let e = LoadedSuite::from_str_with(&text, Path::new("s.toml"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.toml:2: `repeats` must be at least 1"),
            "{e}"
        );
    }

    /// A layer set on an external engine's variant is named by its key, so the `--set` that
    /// wrote it is blamed, not the variant's `external` line.
    #[test]
    fn a_layer_set_on_an_external_variant_blames_the_set() {
        let text = format!(
            "{SUITE}[engine.variants.mine]\nexternal.command = [\"python3\", \"mine.py\"]\n"
        );
        let load = |o: &Overrides| LoadedSuite::from_str_with(&text, Path::new("s.toml"), o);
        load(&Overrides::default()).unwrap();
        let arg = "variant.mine.summarize.trigger.fraction=0.15";
        let e = load(&sets(&[arg])).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "--set {arg}: engine variant `mine`: `summarize`: an external engine replaces"
            )),
            "{e}"
        );
    }

    /// An engine key given by `--set` is blamed on the argument, not on the suite line that
    /// happens to hold the same key (`s.toml:7` for `window = 20000`) or the variant's header.
    #[test]
    fn bad_engine_sets_name_the_argument_not_a_file_line() {
        for (arg, says) in [
            ("window=abc", "`window`: invalid type"),
            // (A misspelt first key, `windw=3`, is refused before it reaches an engine variant:
            // `a_misspelt_section_is_refused_with_a_did_you_mean`.)
            (
                "variant.aggressive.summarize.trigger.fractio=0.5",
                "unknown field `fractio`, expected `fraction` or `tokens` (did you mean `fraction`?)",
            ),
        ] {
            let e = load(&sets(&[arg])).unwrap_err().to_string();
            // One error for the argument, however many variants it reaches.
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(
                e.starts_with(&format!("--set {arg}: engine variant")),
                "{e}"
            );
            assert!(!e.contains("s.toml"), "{e}");
            assert!(e.contains(says), "{e}");
        }
        // An error in the file itself keeps pointing at its line.
        let bad = SUITE.replace("window = 20000", "window = 0");
        let e = LoadedSuite::from_str_with(&bad, Path::new("s.toml"), &sets(&["suite.repeats=2"]))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "s.toml:7: `[engine.base]`: `window`: must be > 0");
    }

    #[test]
    fn selection_filters_variants_and_evals_and_changes_the_digest() {
        let plain = load(&Overrides::default()).unwrap();
        let o = Overrides {
            variants: vec!["aggressive".into()],
            evals: vec!["needle".into()],
            limit: Some(1),
            ..Overrides::default()
        };
        let s = load(&o).unwrap();
        assert_eq!(s.variants.len(), 1);
        assert_eq!(s.baseline, "aggressive");
        assert!(s.suite.evals.invariants.is_none() && !s.suite.evals.replay.enabled);
        assert!(s.suite.evals.needle.is_some());
        assert_eq!(s.suite.traces.limit, Some(1));
        assert_ne!(plain.digest, s.digest);
        let e = load(&Overrides {
            variants: vec!["nope".into()],
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("aggressive"), "{e}");
        let e = load(&Overrides {
            evals: vec!["drift".into()],
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("does not enable `drift`"), "{e}");
    }

    /// `--eval` knows every registered eval; a table with `enabled = false` does not enable
    /// its eval (for every eval alike, as the plan sees it).
    #[test]
    fn eval_selection_uses_the_registry() {
        let e = load(&Overrides {
            evals: vec!["needel".into()],
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("did you mean `needle`"), "{e}");
        let e = load(&Overrides {
            sets: vec!["evals.needle.enabled=false".into()],
            evals: vec!["needle".into()],
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("does not enable `needle`"), "{e}");
        assert!(
            e.to_string().contains("it enables: replay, invariants"),
            "{e}"
        );
    }
}
