//! Engine configuration: a preset name plus overrides, deserializable from TOML or JSON with
//! unknown keys rejected, and `--set key=value` overrides (dotted keys) merged into the same
//! structure.
//!
//! Resolution order: preset layers → model-tier defaults → per-layer override tables → `--set`.
//! Each layer's table is checked against that layer's own struct (`deny_unknown_fields`), so a
//! misspelt key is an error naming the layer and the key.
//!
//! ```toml
//! preset = "deepagents"
//! window = 60000
//! [summarize]
//! trigger = { fraction = 0.5 }
//! keep = { tokens = 4000 }
//! prompt = { file = "prompts/summary.md" }
//! summary_max_tokens = 1024
//! ```
pub use super::layer_config::*;
use crate::confcore::merge::merge;
use crate::confcore::{plain_serde_message, Choice, ConfigError};
use crate::tokens::overhead::OverheadTokens;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// What users write: a preset plus overrides.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EngineConfig {
    /// `deepagents` or `none` (see `engine::presets`). Default: `deepagents`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Context window override; default = the trace's model window, else the preset's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// The model whose prices (and context window, when neither `window` nor the trace gives
    /// one) apply to the replayed agent's views. Default: the model the trace recorded. Set it
    /// to price a trace as if another model had run it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_model: Option<String>,
    /// A system prompt the trace did not record, sent with every replayed request
    /// (`{ file = "…" }` or `{ text = "…" }`). Counted in every view, trigger and cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<TextSource>,
    /// Tool schemas as the provider receives them (a JSON array, `{ file = "tools.json" }`),
    /// sent with every replayed request in place of the trace's recorded ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<TextSource>,
    /// Further tokens sent with every request that the trace left out: a count, or the name of
    /// a bundled estimate (`"claude-code"`, `data/overhead.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_tokens: Option<OverheadTokens>,
    /// The agent model's `max_tokens` (enters deepagents' input budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Token counter: `approx` (chars/4), `approx-anthropic` (3.3 chars/token), or the exact
    /// BPE counters `o200k` and `cl100k`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
    /// Model tier: sets the summarize/truncate trigger fraction (0.85 / 0.65 / 0.35).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<ModelTier>,
    /// Layer order: names of the preset's layers, in the order to apply them (omitted layers
    /// are disabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<Vec<String>>,
    /// An external engine (`engine::external`) instead of a preset: `command` (argv; relative
    /// paths resolved against the configuration file), `timeout_secs`, `env`, `config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<super::external::ExternalSpec>,
    /// Override tables by layer name (`[summarize]`, `[turn_trim]`…): one per registered
    /// layer (`engine::layers::REGISTRY`), each merged into that layer's preset configuration
    /// and checked against its own struct at resolve.
    #[serde(flatten)]
    pub tables: BTreeMap<String, Value>,
    /// Where this configuration came from (file name), for error messages.
    #[serde(skip)]
    pub source: Option<String>,
}

/// The keys an engine table accepts, in the order serde's "expected one of" lists them: the
/// fields of [`EngineConfig`], then one table per registered layer.
pub fn known_keys() -> &'static [&'static str] {
    static KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
        let mut keys = SCALAR_KEYS.to_vec();
        keys.extend(super::layers::REGISTRY.iter().map(|e| e.name));
        keys
    });
    &KEYS
}

const SCALAR_KEYS: [&str; 11] = [
    "preset",
    "window",
    "max_output_tokens",
    "counter",
    "tier",
    "layers",
    "agent_model",
    "system_prompt",
    "tools",
    "overhead_tokens",
    "external",
];

/// A key of an engine table: one of [`SCALAR_KEYS`] (by index) or a registered layer's name.
/// Rejected inside the key, as serde's derive does, so TOML points at it and
/// `serde_path_to_error` names it.
enum Key {
    Scalar(usize),
    Table(&'static str),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an engine configuration key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                if let Some(i) = SCALAR_KEYS.iter().position(|k| *k == v) {
                    return Ok(Key::Scalar(i));
                }
                match super::layers::entry(v) {
                    Some(e) => Ok(Key::Table(e.name)),
                    None => Err(E::unknown_field(v, known_keys())),
                }
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// Written by hand (not derived) because the layer tables come from the registry; it
/// behaves like the derive with `deny_unknown_fields` (same messages, same key paths).
impl<'de> Deserialize<'de> for EngineConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ConfigVisitor;
        impl<'de> Visitor<'de> for ConfigVisitor {
            type Value = EngineConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("struct EngineConfig")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EngineConfig, A::Error> {
                let mut c = EngineConfig::default();
                let mut seen = [false; SCALAR_KEYS.len()];
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Scalar(i) => {
                            if std::mem::replace(&mut seen[i], true) {
                                return Err(de::Error::duplicate_field(SCALAR_KEYS[i]));
                            }
                            match i {
                                0 => c.preset = map.next_value()?,
                                1 => c.window = map.next_value()?,
                                2 => c.max_output_tokens = map.next_value()?,
                                3 => c.counter = map.next_value()?,
                                4 => c.tier = map.next_value()?,
                                5 => c.layers = map.next_value()?,
                                6 => c.agent_model = map.next_value()?,
                                7 => c.system_prompt = map.next_value()?,
                                8 => c.tools = map.next_value()?,
                                9 => c.overhead_tokens = map.next_value()?,
                                _ => c.external = map.next_value()?,
                            }
                        }
                        Key::Table(name) => {
                            if c.tables.contains_key(name) {
                                return Err(de::Error::duplicate_field(name));
                            }
                            if let Some(v) = map.next_value::<Option<Value>>()? {
                                c.tables.insert(name.to_string(), v);
                            }
                        }
                    }
                }
                Ok(c)
            }
        }
        d.deserialize_struct("EngineConfig", known_keys(), ConfigVisitor)
    }
}

pub(super) fn err(key: &str, message: impl Into<String>) -> ConfigError {
    err_in(None, key, message)
}

pub(super) fn err_in(source: Option<&str>, key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::new(
        source.unwrap_or("engine config"),
        0,
        format!("`{key}`: {}", message.into()),
    )
    .with_key(key.split('.').map(str::to_string).collect())
}

/// Parse one `--set key=value`: dotted key, value as a TOML value (a bare word is a string).
pub fn parse_set(arg: &str) -> Result<(Vec<String>, Value), ConfigError> {
    let (key, raw) = arg.split_once('=').ok_or_else(|| {
        ConfigError::new(
            "--set",
            0,
            format!("{arg:?}: expected key=value, e.g. summarize.trigger.fraction=0.5"),
        )
    })?;
    let path: Vec<String> = key
        .trim()
        .split('.')
        .map(|s| s.trim().to_string())
        .collect();
    if path.iter().any(|p| p.is_empty()) {
        return Err(ConfigError::new(
            "--set",
            0,
            format!("{arg:?}: empty key segment"),
        ));
    }
    let raw = raw.trim();
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t
            .remove("v")
            .and_then(|v| serde_json::to_value(v).ok())
            .unwrap_or(Value::String(raw.to_string())),
        Err(_) => Value::String(raw.to_string()),
    };
    Ok((path, value))
}

/// The last of `sets` (`--set KEY=VALUE` arguments) whose key and `key` (an error's,
/// `ConfigError::key`) name the same key or one inside the other, sharing at least its first
/// segment: `summarize.trigger.fractoin=0.5` for an error at `summarize.trigger`. The argument
/// such an error is the fault of, not the configuration it was laid over.
pub fn set_of<'a>(sets: &'a [String], key: &[String]) -> Option<&'a str> {
    if key.is_empty() {
        return None;
    }
    sets.iter().rev().find_map(|arg| {
        let (path, _) = parse_set(arg).ok()?;
        let n = path.len().min(key.len());
        (path[..n] == key[..n]).then_some(arg.as_str())
    })
}

impl EngineConfig {
    /// Parse TOML; errors carry the file name and TOML's line/column message.
    pub fn from_toml_str(text: &str, file: &str) -> Result<Self, ConfigError> {
        let mut c: Self = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                // Newlines before the span + 1 (`lines()` would be one short at a line start).
                .map(|s| {
                    text.as_bytes()[..s.start.min(text.len())]
                        .iter()
                        .filter(|b| **b == b'\n')
                        .count()
                        + 1
                })
                .unwrap_or(0);
            // TOML's message does not name the key of a wrong value ("invalid type: string
            // \"x\", expected u64"); the typed pass over the parsed table does.
            let table = toml::from_str::<toml::Table>(text)
                .ok()
                .and_then(|t| serde_json::to_value(t).ok());
            let key = table
                .clone()
                .and_then(|v| Self::from_value(v).err())
                .map(|k| k.key)
                .unwrap_or_default();
            let message = plain_message(e.message(), table.as_ref(), &key);
            let message = message.as_str();
            match key.join(".") {
                k if k.is_empty() || message.contains(&format!("`{k}`")) => {
                    ConfigError::new(file, line, message)
                }
                k => ConfigError::new(file, line, format!("`{k}`: {message}")),
            }
        })?;
        c.source = Some(file.to_string());
        c.absolutize_external(file);
        Ok(c)
    }

    /// Resolve the relative paths of `external.command` against the folder of `file`.
    fn absolutize_external(&mut self, file: &str) {
        if let Some(ext) = &mut self.external {
            let dir = std::path::Path::new(file)
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            ext.absolutize(dir);
        }
    }

    /// Parse JSON; errors carry the file name and line.
    pub fn from_json_str(text: &str, file: &str) -> Result<Self, ConfigError> {
        let mut c: Self = serde_json::from_str(text)
            .map_err(|e| ConfigError::new(file, e.line(), e.to_string()))?;
        c.source = Some(file.to_string());
        c.absolutize_external(file);
        Ok(c)
    }

    /// Apply `--set key=value` overrides (dotted keys into this structure).
    pub fn apply_sets(&self, sets: &[String]) -> Result<Self, ConfigError> {
        let mut v = serde_json::to_value(self).map_err(|e| err("config", e.to_string()))?;
        for s in sets {
            let (path, value) = parse_set(s)?;
            let mut patch = value;
            for seg in path.iter().rev() {
                let mut m = serde_json::Map::new();
                m.insert(seg.clone(), patch);
                patch = Value::Object(m);
            }
            merge(&mut v, patch);
        }
        let mut c = Self::from_value(v).map_err(|mut e| {
            e.file = "--set".into();
            e
        })?;
        c.source = self.source.clone();
        Ok(c)
    }

    /// Deserialize from a JSON value (a suite variant's merged table); the error names the key
    /// path (`ConfigError::key`) and says what was expected.
    pub fn from_value(v: Value) -> Result<Self, ConfigError> {
        serde_path_to_error::deserialize(&v).map_err(|e| {
            let key = ConfigError::key_of(&[], e.path());
            let shown = key.join(".");
            let inner = plain_message(&e.inner().to_string(), Some(&v), &key);
            let message = if shown.is_empty() {
                inner
            } else {
                format!("`{shown}`: {inner}")
            };
            ConfigError::new("engine config", 0, message).with_key(key)
        })
    }
}

/// serde's `message` about `key` of the config `root` in a config file's words (see
/// [`plain_serde_message`]): an unknown enum choice is a field when `key` holds a table (the
/// choice is its key, `trigger = { fractoin = 0.5 }`), else a value.
pub(super) fn plain_message(message: &str, root: Option<&Value>, key: &[String]) -> String {
    let node = root.and_then(|root| {
        key.iter().try_fold(root, |v, k| match v {
            Value::Object(m) => m.get(k),
            Value::Array(a) => a.get(k.parse::<usize>().ok()?),
            _ => None,
        })
    });
    // A one-of choice (`trigger = { fraction = …, tokens = … }`): serde says only "expected
    // map with a single key".
    if let Some(Value::Object(m)) = node.filter(|_| message.contains("map with a single key")) {
        if m.len() > 1 {
            let keys: Vec<String> = m.keys().map(|k| format!("`{k}`")).collect();
            return format!(
                "{} are alternatives: set one of them, not both",
                keys.join(" and ")
            );
        }
    }
    let choice = match node {
        Some(Value::Object(_)) => Choice::Key,
        _ => Choice::Value,
    };
    plain_serde_message(message, choice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::resolve::ResolvedConfig;

    #[test]
    fn a_wrong_value_in_a_config_file_names_its_key_and_line() {
        let e = EngineConfig::from_toml_str("preset = \"deepagents\"\nwindow = \"x\"\n", "e.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("e.toml:2: `window`: invalid type"), "{e}");
        let e = EngineConfig::from_toml_str("\nwindw = 3\n", "e.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("e.toml:2: unknown field `windw`"), "{e}");
    }

    /// `external.timeout_secs` past a day, `inf` or `nan`: refused where the file is read,
    /// naming its line and key (`1e30` panicked when the engine started; `inf` and `nan` became
    /// the default through the JSON value `--set` goes through).
    #[test]
    fn an_external_timeout_past_a_day_is_refused_at_its_line() {
        for (value, got) in [
            ("1e30", "got 1e30"),
            ("86401", "got 86401"),
            ("inf", "got inf"),
            ("nan", "got NaN"),
            ("0", "got 0"),
        ] {
            let text = format!(
                "window = 20000\nexternal.command = [\"python3\", \"e.py\"]\nexternal.timeout_secs = {value}\n"
            );
            let e = EngineConfig::from_toml_str(&text, "e.toml")
                .and_then(|c| c.apply_sets(&[]))
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                format!(
                    "e.toml:3: `external.timeout_secs`: expected seconds > 0 and at most 86400 \
                     (one day), {got}"
                ),
                "{value}"
            );
        }
        let ok = "window = 20000\nexternal.command = [\"python3\", \"e.py\"]\nexternal.timeout_secs = 86400\n";
        let c = EngineConfig::from_toml_str(ok, "e.toml").unwrap();
        assert_eq!(c.external.as_ref().unwrap().timeout_secs, Some(86_400.0));
        // Through `--set` (a JSON value, where `inf` is a null).
        for set in ["external.timeout_secs=inf", "external.timeout_secs=1e30"] {
            let e = c.apply_sets(&[set.to_string()]).unwrap_err().to_string();
            assert!(
                e.starts_with("--set: `external.timeout_secs`: expected seconds > 0 and at most 86400 (one day), got "),
                "{set}: {e}"
            );
        }
    }

    /// `--set` values resolved as `ctxbench replay` resolves them; the error's text.
    fn resolve_sets(sets: &[&str]) -> Result<(), String> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        EngineConfig::default()
            .apply_sets(&sets)
            .and_then(|c| c.resolve(None))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// A negative `overhead_tokens` says what the key takes (serde's untagged enum said "data
    /// did not match any variant").
    #[test]
    fn a_negative_overhead_says_what_it_takes() {
        let e = resolve_sets(&["overhead_tokens=-1"]).unwrap_err();
        assert!(
            e.contains(
                "`overhead_tokens`: invalid value: integer `-1`, expected a token count ≥ 0 or \
                 the name of a bundled estimate (claude-code"
            ),
            "{e}"
        );
        let e = EngineConfig::from_toml_str("overhead_tokens = 1.5\n", "e.toml").unwrap_err();
        assert!(e.to_string().contains("expected a token count ≥ 0"), "{e}");
        resolve_sets(&["overhead_tokens=0"]).unwrap();
        resolve_sets(&["overhead_tokens=\"claude-code\""]).unwrap();
    }

    /// A trigger of 0 tokens is refused as a fraction of 0 is (it was accepted, and changed
    /// what the layer does).
    #[test]
    fn a_trigger_of_zero_tokens_is_refused_like_a_fraction_of_zero() {
        let e = resolve_sets(&["summarize.trigger.tokens=0"]).unwrap_err();
        assert!(
            e.contains("`summarize.trigger.tokens`: expected a token count ≥ 1, got 0"),
            "{e}"
        );
        assert!(resolve_sets(&["summarize.trigger.fraction=0"]).is_err());
        resolve_sets(&["summarize.trigger.tokens=1"]).unwrap();
    }

    /// Both keys of a one-of choice: "set one of them, not both" (serde said "expected map with
    /// a single key").
    #[test]
    fn both_keys_of_a_choice_are_named() {
        let e = EngineConfig::from_toml_str(
            "[summarize]\ntrigger = { fraction = 0.5, tokens = 9000 }\n",
            "e.toml",
        )
        .unwrap()
        .resolve(None)
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(
                "`summarize.trigger`: `fraction` and `tokens` are alternatives: set one of \
                 them, not both"
            ),
            "{e}"
        );
    }

    /// An output reservation that leaves no input budget is an error, not a replay that stops
    /// at its first call and exits 0.
    #[test]
    fn an_output_reservation_that_leaves_no_input_budget_is_refused() {
        let e = resolve_sets(&["max_output_tokens=100000", "window=8000"]).unwrap_err();
        assert!(
            e.contains(
                "`max_output_tokens`: 100000 leaves no input budget in a window of 8000 tokens \
                 (from the configuration's `window`)"
            ),
            "{e}"
        );
        let e = resolve_sets(&["max_output_tokens=7600", "window=8000"]).unwrap_err();
        assert!(e.contains("(7600 − 7600)"), "{e}");
        resolve_sets(&["max_output_tokens=7599", "window=8000"]).unwrap();
    }

    /// serde's words are put in the file's: no Rust type names, and no "variant" (this tool's
    /// word for an engine configuration) for an enum choice.
    #[test]
    fn wrong_values_are_named_in_the_file_s_words() {
        let e = EngineConfig::from_toml_str("window = -5\n", "e.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "e.toml:1: `window`: invalid value: integer `-5`, expected a non-negative integer"
        );
        let e = EngineConfig::from_value(serde_json::json!({"window": -5})).unwrap_err();
        assert_eq!(
            e.message,
            "`window`: invalid value: integer `-5`, expected a non-negative integer"
        );
        let c =
            EngineConfig::from_toml_str("[summarize]\ntrigger = { fractoin = 0.5 }\n", "e.toml")
                .unwrap();
        let e = c.resolve(None).unwrap_err().to_string();
        assert_eq!(
            e,
            "e.toml: `summarize.trigger`: unknown field `fractoin`, expected `fraction` or `tokens`"
        );
        let c =
            EngineConfig::from_toml_str("[summarize]\nhistory = \"nonee\"\n", "e.toml").unwrap();
        let e = c.resolve(None).unwrap_err().to_string();
        assert!(
            e.starts_with("e.toml: `summarize.history`: unknown value `nonee`, expected one of"),
            "{e}"
        );
        let c = EngineConfig::from_toml_str("preset = \"deepagent\"\n", "e.toml").unwrap();
        let e = c.resolve(None).unwrap_err().to_string();
        assert!(e.ends_with("(did you mean `deepagents`?)"), "{e}");
    }

    fn summarize_of(r: &ResolvedConfig) -> &Summarize {
        r.layers
            .iter()
            .find_map(|l| match l {
                LayerConfig::Summarize(s) => Some(s),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn toml_with_overrides_resolves() {
        let c = EngineConfig::from_toml_str(
            "preset = \"deepagents\"\nwindow = 60000\n[summarize]\ntrigger = { tokens = 170000 }\nkeep = { messages = 20 }\n",
            "x.toml",
        )
        .unwrap();
        let r = c.resolve(None).unwrap();
        assert_eq!(r.window, 60000);
        let s = summarize_of(&r);
        assert_eq!(s.trigger, Trigger::Tokens(170000));
        assert_eq!(s.keep, Keep::Messages(20));
    }

    #[test]
    fn unknown_keys_are_errors_naming_them() {
        let e = EngineConfig::from_toml_str("windw = 3\n", "x.toml").unwrap_err();
        assert_eq!(e.file, "x.toml");
        assert_eq!(e.line, 1);
        assert!(e.message.contains("windw"), "{}", e.message);
        let c =
            EngineConfig::from_toml_str("[summarize]\ntriger = { fraction = 0.5 }\n", "y").unwrap();
        let e = c.resolve(None).unwrap_err();
        assert!(
            e.message.contains("summarize") && e.message.contains("triger"),
            "{e}"
        );
    }

    #[test]
    fn set_overrides_use_dotted_keys_and_switch_enum_variants() {
        let c = EngineConfig::default()
            .apply_sets(&[
                "summarize.trigger.tokens=5000".into(),
                "window=20000".into(),
                "summarize.prompt.text=Write ## SUMMARY only".into(),
            ])
            .unwrap();
        let r = c.resolve(Some(200_000)).unwrap();
        assert_eq!(r.window, 20000);
        let s = summarize_of(&r);
        assert_eq!(s.trigger, Trigger::Tokens(5000));
        assert_eq!(
            s.prompt,
            Some(TextSource::Text("Write ## SUMMARY only".into()))
        );
        let c = EngineConfig::default()
            .apply_sets(&["summarize.trigger.fraction=0.5".into()])
            .unwrap();
        assert_eq!(
            summarize_of(&c.resolve(None).unwrap()).trigger,
            Trigger::Fraction(0.5)
        );
        assert!(EngineConfig::default()
            .apply_sets(&["nokey".into()])
            .is_err());
        assert!(EngineConfig::default()
            .apply_sets(&["bogus=1".into()])
            .is_err());
    }

    #[test]
    fn plain_keys_merge_and_choices_switch() {
        let mut v = serde_json::json!({"window": 1, "summarize": {"trigger": {"fraction": 0.5}}});
        merge(&mut v, serde_json::json!({"preset": "none"}));
        merge(
            &mut v,
            serde_json::json!({"summarize": {"trigger": {"tokens": 9}}}),
        );
        assert_eq!(
            v,
            serde_json::json!({"window": 1, "preset": "none", "summarize": {"trigger": {"tokens": 9}}})
        );
        let c = EngineConfig::from_toml_str(
            "window = 9\n[summarize]\nsummary_max_tokens = 0\n",
            "e.toml",
        )
        .unwrap();
        let e = c.resolve(None).unwrap_err();
        assert_eq!(e.file, "e.toml");
        assert!(e.message.contains("summary_max_tokens"), "{e}");
    }

    #[test]
    fn tiers_and_layer_order() {
        let c = EngineConfig {
            tier: Some(ModelTier::Small),
            layers: Some(vec!["summarize".into(), "evict_tool_results".into()]),
            ..Default::default()
        };
        let r = c.resolve(Some(100_000)).unwrap();
        assert_eq!(r.window, 100_000);
        let names: Vec<&str> = r.layers.iter().map(|l| l.name()).collect();
        assert_eq!(names, ["summarize", "evict_tool_results"]);
        assert_eq!(summarize_of(&r).trigger, Trigger::Fraction(0.35));
        let bad = EngineConfig {
            layers: Some(vec!["nope".into()]),
            ..Default::default()
        };
        assert!(bad.resolve(None).is_err());
    }

    #[test]
    fn model_tiers_by_substring_small_before_mid_before_frontier() {
        let t = |m: &str| ModelTier::from_model_id(m);
        assert_eq!(t("claude-haiku-4-5-20251001"), Some(ModelTier::Small));
        assert_eq!(t("gemini-2.5-flash"), Some(ModelTier::Small));
        assert_eq!(t("gpt-4.1-mini"), Some(ModelTier::Small));
        assert_eq!(t("anthropic/claude-sonnet-4-6"), Some(ModelTier::Mid));
        assert_eq!(t("Gemini-2.5-Pro"), Some(ModelTier::Mid));
        assert_eq!(t("claude-opus-4-7"), Some(ModelTier::Frontier));
        assert_eq!(t("gemini-3.5-pro"), Some(ModelTier::Frontier));
        assert_eq!(t("llama-3-70b"), None);
    }

    #[test]
    fn trigger_valued_keys_switch_variants_under_set() {
        let c = EngineConfig::default()
            .apply_sets(&[
                "preset=\"turn-trim\"".into(),
                "turn_trim.max_tokens.fraction=0.5".into(),
            ])
            .unwrap();
        let r = c.resolve(Some(100_000)).unwrap();
        let LayerConfig::TurnTrim(t) = &r.layers[0] else {
            panic!("{:?}", r.layers)
        };
        assert_eq!(t.max_tokens, Trigger::Fraction(0.5));
    }

    #[test]
    fn thresholds_truncate_like_python_int() {
        assert_eq!(Trigger::Fraction(0.85).tokens(200_000), 170_000);
        assert_eq!(Trigger::Fraction(0.85).tokens(60_000), 51_000);
        assert_eq!(Keep::Fraction(0.1).tokens(30_000), Some(3_000));
        let r = EngineConfig {
            window: Some(60_000),
            max_output_tokens: Some(40_000),
            ..Default::default()
        }
        .resolve(None)
        .unwrap();
        assert_eq!(r.input_budget(), 17_000);
    }

    #[test]
    fn an_error_key_is_the_fault_of_the_set_that_wrote_it_or_a_key_around_it() {
        let sets = [
            "window=9000".to_string(),
            "summarize.trigger.fractoin=0.5".to_string(),
            "summarize.keep.fraction=0.2".to_string(),
        ];
        let key = |k: &str| k.split('.').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            set_of(&sets, &key("summarize.trigger")),
            Some("summarize.trigger.fractoin=0.5")
        );
        assert_eq!(set_of(&sets, &key("window")), Some("window=9000"));
        // The last that touches the table, for an error about the whole table.
        assert_eq!(
            set_of(&sets, &key("summarize")),
            Some("summarize.keep.fraction=0.2")
        );
        assert_eq!(set_of(&sets, &key("summarize.prompt")), None);
        assert_eq!(set_of(&sets, &key("counter")), None);
        assert_eq!(set_of(&sets, &[]), None);
    }

    #[test]
    fn agent_model_and_what_the_trace_left_out_are_engine_keys() {
        let c = EngineConfig::from_toml_str(
            "agent_model = \"gpt-4o\"\noverhead_tokens = 500\nsystem_prompt.text = \"Be brief.\"\ntools.text = '[{\"name\": \"ls\"}]'\n",
            "x.toml",
        )
        .unwrap();
        let r = c.resolve(None).unwrap();
        assert_eq!(r.agent_model.as_deref(), Some("gpt-4o"));
        assert_eq!(r.added.overhead_tokens, 500);
        assert_eq!(r.added.system_prompt.as_deref(), Some("Be brief."));
        assert_eq!(r.added.tools.as_ref().unwrap().len(), 1);
        let named = EngineConfig::from_toml_str("overhead_tokens = \"claude-code\"\n", "y")
            .unwrap()
            .resolve(None)
            .unwrap();
        assert_eq!(named.added.overhead_tokens, 18_400);
        let e = EngineConfig::from_toml_str("overhead_tokens = \"codex\"\n", "z.toml")
            .unwrap()
            .resolve(None)
            .unwrap_err();
        assert!(
            e.message.contains("overhead_tokens") && e.message.contains("claude-code"),
            "{e}"
        );
        let e = EngineConfig::from_toml_str("tools.text = '{}'\n", "t.toml")
            .unwrap()
            .resolve(None)
            .unwrap_err();
        assert!(e.message.contains("JSON array"), "{e}");
    }
}
