//! A loaded suite: the parsed file, its source map and digest, and what it resolves to
//! (typed engine variants, typed provider roles, prompt files, the baseline); error helpers
//! that turn a key path into `file:line`.

use super::keys::unknown_keys;
use super::overrides::{apply_sets, select_evals, trace_matcher, Overrides, EVAL_NAMES};
use super::suite::{schema, PromptFile, ProviderRole, Suite, Variant};
use super::typed::RoleProvider;
use super::{ConfigError, SourceMap};
use crate::confcore::did_you_mean;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A parsed, validated suite and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedSuite {
    pub suite: Suite,
    /// The suite file as given.
    pub path: PathBuf,
    /// Directory relative paths resolve against.
    pub dir: PathBuf,
    pub source: SourceMap,
    /// sha256 of the suite's canonical JSON (independent of formatting, comments, key order
    /// and of where the checkout lives).
    pub digest: String,
    pub variants: Vec<Variant>,
    pub baseline: String,
    pub prompt_files: Vec<PromptFile>,
    /// Every provider role, typed (see [`LoadedSuite::provider`]).
    pub providers: BTreeMap<ProviderRole, RoleProvider>,
    /// What the command line changed (`--set`, `--variant`, `--trace`, `--eval`, `--limit`);
    /// already applied to `suite`, `variants` and `digest`.
    pub overrides: Overrides,
    /// `--trace` globs, compiled (the plan keeps only trace ids they match).
    pub trace_filter: Option<globset::GlobSet>,
}

impl LoadedSuite {
    /// Read, parse and validate a suite file.
    pub fn load(path: &Path) -> Result<LoadedSuite, ConfigError> {
        Self::load_with(path, &Overrides::default())
    }

    /// [`LoadedSuite::load`] with command-line overrides applied (see [`super::overrides`]).
    pub fn load_with(path: &Path, overrides: &Overrides) -> Result<LoadedSuite, ConfigError> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|e| ConfigError::new(&file, 0, format!("cannot read suite file: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
            ConfigError::new(
                &file,
                line,
                "not UTF-8 text: expected a TOML suite file, which is UTF-8",
            )
        })?;
        Self::from_str_with(&text, path, overrides)
    }

    /// Parse and validate suite text as if read from `path` (used for relative paths and
    /// messages).
    pub fn from_str(text: &str, path: &Path) -> Result<LoadedSuite, ConfigError> {
        Self::from_str_with(text, path, &Overrides::default())
    }

    /// [`LoadedSuite::from_str`] with command-line overrides: `--set` and `--eval`/`--limit`
    /// change the typed suite before it is digested and typed further; `--variant` filters the
    /// expanded variants; a non-empty selection is folded into the digest.
    pub fn from_str_with(
        text: &str,
        path: &Path,
        overrides: &Overrides,
    ) -> Result<LoadedSuite, ConfigError> {
        let file = path.display().to_string();
        let (source, doc) = SourceMap::parse(text).map_err(|e| toml_error(&file, text, &e))?;

        let schema_value = serde_json::to_value(schema()).expect("schema is JSON");
        let unknown: Vec<ConfigError> = unknown_keys(doc.get_ref(), &schema_value)
            .into_iter()
            .map(|u| {
                let table = if u.table.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("in `[{}]`", u.table.join("."))
                };
                let hint = match &u.suggestion {
                    Some(s) => format!(" (did you mean `{s}`?)"),
                    None => format!("; valid keys: {}", u.valid.join(", ")),
                };
                ConfigError::new(
                    &file,
                    source.line_of_offset(u.offset),
                    format!("unknown key `{}` {table}{hint}", u.key),
                )
            })
            .collect();
        if let Some(e) = ConfigError::combine(unknown) {
            return Err(e);
        }

        let mut suite = deserialize_suite(text, &file, &source)?;
        apply_sets(&mut suite, &overrides.sets)?;
        // Against the evals the suite turns on as `--set` leaves it (a `--set` may turn an eval
        // on or off, or set the rules), before a `--eval` selection for one run, which does not
        // make the suite's rules wrong.
        check_metric_names(&suite, &file, &source, &overrides.sets)?;
        select_evals(&mut suite, &overrides.evals)?;
        if let Some(n) = overrides.limit {
            suite.traces.limit = Some(suite.traces.limit.map_or(n, |l| l.min(n)));
        }
        let trace_filter = trace_matcher(&overrides.traces)?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let digest = {
            let json = serde_json::to_vec(&suite).expect("suite serializes");
            let mut digest = hex::encode(Sha256::digest(&json));
            // Unchanged for a suite as written; a selection makes it another run's digest.
            if overrides.has_selection() {
                let sel = serde_json::to_vec(overrides).expect("overrides serialize");
                digest = hex::encode(Sha256::digest([digest.as_bytes(), &sel].concat()));
            }
            digest
        };
        let mut loaded = LoadedSuite {
            suite,
            path: path.to_path_buf(),
            dir,
            source,
            digest,
            variants: Vec::new(),
            baseline: String::new(),
            prompt_files: Vec::new(),
            providers: BTreeMap::new(),
            overrides: overrides.clone(),
            trace_filter,
        };
        loaded.validate()?;
        loaded.prompt_files = loaded.collect_prompt_files()?;
        loaded.type_providers()?;
        loaded.variants = loaded.expand_variants()?;
        loaded.baseline = loaded.pick_baseline()?;
        loaded.select_variants(&overrides.variants)?;
        loaded.type_variants()?;
        loaded.check_needle_triggers()?;
        Ok(loaded)
    }

    fn file(&self) -> String {
        self.path.display().to_string()
    }

    /// An error at the line of `path` (or its nearest written ancestor), or at the `--set`
    /// argument that gave its value (`--set suite.repeats=0` is not the file's `repeats = 1`).
    pub fn error_at(&self, path: &[&str], message: impl Into<String>) -> ConfigError {
        match self.set_of(path, 2) {
            Some(arg) => ConfigError::new(format!("--set {arg}"), 0, message),
            None => ConfigError::new(self.file(), self.source.line_of(path), message),
        }
    }

    /// Where the engine key `key` of `variant` is written: the `--set` argument that gave it,
    /// else the variant's own table when it sets the key, else `[engine.base]` when that sets
    /// it, else where the variant is defined.
    fn origin(&self, variant: &Variant, key: &[&str]) -> Origin<'_> {
        let mut at: Vec<&str> = variant.defined_at.iter().map(|s| s.as_str()).collect();
        at.extend_from_slice(key);
        let mut base = vec!["engine", "base"];
        base.extend_from_slice(key);
        // A value that came from `--set` is that argument's fault, not the file line's.
        let by_variant = self.set_of(&at, 3);
        let by_base = || {
            (!self.source.contains(&at))
                .then(|| self.set_of(&base, 3))
                .flatten()
        };
        if let Some(arg) = by_variant.or_else(by_base) {
            return Origin::Set(arg);
        }
        // A suite without variants has one, `base`: `[engine.base]` itself.
        let is_base = variant.defined_at == ["engine", "base"];
        if self.source.contains(&at) && !is_base {
            Origin::Variant(self.source.line_of(&at))
        } else if self.source.contains(&base) || is_base {
            Origin::Base(self.source.line_of(&base))
        } else {
            Origin::Variant(self.source.line_of(&at))
        }
    }

    /// An error about an engine key of a variant, e.g. from the engine's own validation.
    /// Points at the override when the variant sets `key`, else at `engine.base`, else at the
    /// variant's definition. The message names the variant, or `[engine.base]` when the key's
    /// value comes from there (`variant_errors` says when it names the base alone).
    /// A serde "unknown field/value" message gets a "did you mean" hint.
    pub fn variant_error(&self, variant: &Variant, key: &[&str], message: &str) -> ConfigError {
        let message = with_hint(message);
        match self.origin(variant, key) {
            Origin::Set(arg) => ConfigError::new(
                format!("--set {arg}"),
                0,
                format!("engine variant `{}`: {message}", variant.name),
            ),
            Origin::Variant(line) => ConfigError::new(
                self.file(),
                line,
                format!("engine variant `{}`: {message}", variant.name),
            ),
            Origin::Base(line) if variant.defined_at == ["engine", "base"] => {
                ConfigError::new(self.file(), line, format!("`[engine.base]`: {message}"))
            }
            Origin::Base(line) => ConfigError::new(
                self.file(),
                line,
                format!(
                    "`[engine.base]` as merged into engine variant `{}`: {message}",
                    variant.name
                ),
            ),
        }
    }

    /// The last `--set` argument of these overrides that gave the key at `path`
    /// ([`super::overrides::set_of`]).
    fn set_of(&self, path: &[&str], keys: usize) -> Option<&str> {
        super::overrides::set_of(&self.overrides.sets, path, keys)
    }

    /// Run an owner's validation over every variant's merged engine table (e.g. deserializing
    /// it as `engine::config::EngineConfig` and resolving it), collecting every problem as a
    /// `file:line` error that names the variant (or `[engine.base]`). `check` returns the
    /// offending key path (may be empty) and a message.
    pub fn check_variants(
        &self,
        check: impl Fn(&Variant) -> Result<(), (Vec<String>, String)>,
    ) -> Result<(), ConfigError> {
        let problems = self
            .variants
            .iter()
            .filter_map(|v| check(v).err().map(|(key, msg)| (v, key, msg)))
            .collect();
        match self.variant_errors(problems, || check(&self.base_variant()).err()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The errors of [`Self::variant_error`] for several variants' problems, combined. A bad
    /// `--set` is the same problem in every variant it reaches, so it is one error naming
    /// them. So is a problem in a value `[engine.base]` gives: one error at its line, naming
    /// only `[engine.base]` when `base_problem` (the problem of the base alone, asked for at
    /// most once) is the same, else also the variants it shows in.
    pub(super) fn variant_errors(
        &self,
        problems: Vec<(&Variant, Vec<String>, String)>,
        base_problem: impl FnOnce() -> Option<(Vec<String>, String)>,
    ) -> Option<ConfigError> {
        let mut errs: Vec<ConfigError> = Vec::new();
        let mut by_set: Vec<(ConfigError, String, Vec<&str>)> = Vec::new();
        // (line, key, message as checked, variants).
        let mut by_base: Vec<(usize, Vec<String>, String, Vec<&Variant>)> = Vec::new();
        for (v, key, msg) in problems {
            let refs: Vec<&str> = key.iter().map(|s| s.as_str()).collect();
            if let Origin::Base(line) = self.origin(v, &refs) {
                match by_base
                    .iter_mut()
                    .find(|(l, k, m, _)| *l == line && *k == key && *m == msg)
                {
                    Some((_, _, _, vs)) => vs.push(v),
                    None => by_base.push((line, key, msg, vec![v])),
                }
                continue;
            }
            let e = self.variant_error(v, &refs, &msg);
            let prefix = format!("engine variant `{}`: ", v.name);
            let rest = e
                .file
                .starts_with("--set ")
                .then(|| e.message.strip_prefix(&prefix));
            match rest.flatten().map(str::to_string) {
                Some(rest) => match by_set
                    .iter_mut()
                    .find(|(f, r, _)| f.file == e.file && *r == rest)
                {
                    Some((_, _, names)) => names.push(&v.name),
                    None => by_set.push((e, rest, vec![&v.name])),
                },
                None => errs.push(e),
            }
        }
        for (mut e, rest, names) in by_set {
            if names.len() > 1 {
                let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                e.message = format!("engine variants {}: {rest}", list.join(", "));
            }
            errs.push(e);
        }
        let mut base_problem = Some(base_problem);
        let mut base_alone = None;
        for (line, key, msg, vs) in by_base {
            let message = with_hint(&msg);
            let is_base = vs.iter().any(|v| v.defined_at == ["engine", "base"]);
            // The base alone has this problem: it is the base's, whichever variants show it.
            let base_fault = is_base || {
                let alone = base_alone.get_or_insert_with(|| base_problem.take().and_then(|f| f()));
                alone.as_ref() == Some(&(key, msg))
            };
            let message = if base_fault {
                format!("`[engine.base]`: {message}")
            } else {
                let list: Vec<String> = vs.iter().map(|v| format!("`{}`", v.name)).collect();
                let s = if vs.len() > 1 { "s" } else { "" };
                format!(
                    "`[engine.base]` as merged into engine variant{s} {}: {message}",
                    list.join(", ")
                )
            };
            errs.push(ConfigError::new(self.file(), line, message));
        }
        ConfigError::combine(errs)
    }
    /// An error about a provider table (e.g. from the providers module's validation).
    pub fn provider_error(&self, role: ProviderRole, key: &[&str], message: &str) -> ConfigError {
        // In the file's words, as every other key's (`expected u32` is no word of the file).
        let message = with_hint(&crate::confcore::plain_type_names(message));
        let mut at = vec!["providers", role.as_str()];
        at.extend_from_slice(key);
        ConfigError::new(
            self.file(),
            self.source.line_of(&at),
            format!("provider `{}`: {message}", role.as_str()),
        )
    }

    /// Resolve a path written in the suite against the suite's directory.
    pub fn resolve(&self, written: &str) -> PathBuf {
        let p = Path::new(written);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }

    /// Where run directories go (`suite.output_dir`, relative to the suite file).
    pub fn output_dir(&self) -> PathBuf {
        self.resolve(&self.suite.suite.output_dir)
    }

    /// Keep only the variants `--variant` names; when the baseline is not among them, the
    /// first one named becomes this run's baseline (reports compare against it).
    fn select_variants(&mut self, names: &[String]) -> Result<(), ConfigError> {
        if names.is_empty() {
            return Ok(());
        }
        for n in names {
            if !self.variants.iter().any(|v| &v.name == n) {
                let all: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
                return Err(ConfigError::new(
                    "--variant",
                    0,
                    format!(
                        "the suite has no variant `{n}`{}; variants: {}",
                        did_you_mean(n, all.iter().copied()),
                        all.join(", ")
                    ),
                ));
            }
        }
        self.variants.retain(|v| names.contains(&v.name));
        if !names.contains(&self.baseline) {
            self.baseline = names[0].clone();
        }
        Ok(())
    }

    /// Variants in stable order: the baseline first, then the others as defined.
    pub fn ordered_variants(&self) -> Vec<&Variant> {
        let mut v: Vec<&Variant> = self
            .variants
            .iter()
            .filter(|v| v.name == self.baseline)
            .collect();
        v.extend(self.variants.iter().filter(|v| v.name != self.baseline));
        v
    }
}

/// Every metric a `[gates]` rule or `[report] metrics` names must be one the suite's evals can
/// record (each eval declares its metrics in `crate::evalspec`): a misspelt name, or one of an
/// eval the suite turns off, is said here, at its line, not by `ctxbench gate` after the run.
/// `suite` is the suite with the `--set` arguments `sets` applied: a rule is at its line of the
/// file, or at the `--set` argument that gave the rules; an eval a `--set` turns off is said to
/// be turned off by it, and one whose table says `enabled = false` is to be enabled, not added.
fn check_metric_names(
    suite: &Suite,
    file: &str,
    source: &SourceMap,
    sets: &[String],
) -> Result<(), ConfigError> {
    let enabled = suite.evals.enabled_names();
    let names = crate::evalspec::metric_names(&enabled);
    // How to run eval `e`, which the suite does not (`what`: the rule or the metric naming it).
    let fix = |e: &str, what: &str| -> String {
        let present = suite
            .evals
            .sections()
            .into_iter()
            .any(|(name, section)| name == e && section.is_some());
        match super::overrides::set_of(sets, &["evals", e, "enabled"], 3) {
            Some(arg) => format!("`--set {arg}` turns it off"),
            None if present => format!(
                "`[evals.{e}]` has `enabled = false`: set `enabled = true` there or pass \
                 `--set evals.{e}.enabled=true`, or drop the {what}"
            ),
            None => format!("add `[evals.{e}]`, or drop the {what}"),
        }
    };
    let problem = |metric: &str, what: &str| -> Option<String> {
        if crate::evalspec::recorded_by(metric, &enabled) {
            return None;
        }
        let eval = metric.split_once('.').map(|(e, _)| e);
        if let Some(e) = eval.filter(|e| !enabled.contains(e)) {
            if crate::evalspec::metric(metric).is_some() {
                return Some(format!(
                    "metric `{metric}` is eval `{e}`'s, which this suite does not run ({}); \
                     the suite's evals: {}",
                    fix(e, what),
                    enabled.join(", ")
                ));
            }
        }
        let concrete = names.iter().filter(|n| !n.ends_with('*'));
        Some(format!(
            "unknown metric `{metric}`{}; this suite's evals ({}) record: {}",
            did_you_mean(metric, concrete.map(String::as_str)),
            enabled.join(", "),
            names.join(", ")
        ))
    };
    // At the line of the file, or at the `--set` that gave the list.
    let at = |path: &[&str], message: String| match super::overrides::set_of(sets, path, 2) {
        Some(arg) => ConfigError::new(format!("--set {arg}"), 0, message),
        None => ConfigError::new(file, source.line_of(path), message),
    };
    let mut errs = Vec::new();
    for (i, r) in suite.gates.rules.iter().enumerate() {
        let Ok(rule) = crate::gate::parse_rule(r) else {
            continue; // `validate` says what is wrong with it
        };
        if let Some(message) = problem(&rule.metric, "rule") {
            errs.push(at(
                &["gates", "rules", &i.to_string()],
                format!("gate rule `{}`: {message}", rule.text),
            ));
        }
    }
    for (i, m) in suite.report.metrics.iter().enumerate() {
        // `eval.*`: every metric of that eval; `tokens.*` and `cost.*`: every role's.
        let checked = match m.strip_suffix(".*") {
            Some("tokens" | "cost") => None,
            // An eval's name (not a typo of one) gets the same fix as its metrics.
            Some(eval) => (!enabled.contains(&eval)).then(|| {
                let how = if EVAL_NAMES.contains(&eval) {
                    format!(" ({})", fix(eval, "metric"))
                } else {
                    String::new()
                };
                format!(
                    "`{m}` names eval `{eval}`, which this suite does not run{how}; the suite's \
                     evals: {}",
                    enabled.join(", ")
                )
            }),
            None => problem(m, "metric"),
        };
        if let Some(message) = checked {
            errs.push(at(
                &["report", "metrics", &i.to_string()],
                format!("`[report] metrics`: {message}"),
            ));
        }
    }
    match ConfigError::combine(errs) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Where a variant's engine problem is written (see [`LoadedSuite::variant_error`]).
enum Origin<'a> {
    /// A `--set` argument.
    Set(&'a str),
    /// `[engine.base]`, at this line: the variant takes the key's value from there.
    Base(usize),
    /// The variant's own table, or where the variant is defined, at this line.
    Variant(usize),
}

/// Turn a `toml` parse/deserialize error into a `file:line: message`, adding a suggestion
/// when serde lists the expected variants or fields.
fn toml_error(file: &str, text: &str, e: &toml::de::Error) -> ConfigError {
    let line = e
        .span()
        .map(|s| {
            text.get(..s.start.min(text.len()))
                .unwrap_or(text)
                .matches('\n')
                .count()
                + 1
        })
        .unwrap_or(0);
    ConfigError::new(file, line, plain_with_hint(e.message()))
}

/// A serde message as a suite's reader knows it: what the file holds for a Rust type
/// (`expected a non-negative integer`, not `u32`), "unknown value" for a value no variant
/// names (serde says "unknown variant"), and a "did you mean" hint when serde lists the
/// expected fields or values.
pub fn plain_with_hint(message: &str) -> String {
    let mut message = crate::confcore::plain_serde_message(message, crate::confcore::Choice::Value);
    if let Some(hint) = expected_hint(&message) {
        message.push_str(&hint);
    }
    message
}

/// Deserialize the typed [`Suite`]; an error names its key (from the key path, not the text)
/// and its line (TOML's span, else the source map's line of the key).
fn deserialize_suite(text: &str, file: &str, source: &SourceMap) -> Result<Suite, ConfigError> {
    let de = toml::Deserializer::parse(text).map_err(|e| toml_error(file, text, &e))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = ConfigError::key_of(&[], e.path());
        let mut err = toml_error(file, text, e.inner());
        let refs: Vec<&str> = path.iter().map(String::as_str).collect();
        if err.line == 0 {
            err.line = source.line_of(&refs);
        }
        // The key as users know it: the last named segment (`depths`, not its index).
        if let Some(k) = path.iter().rev().find(|s| s.parse::<usize>().is_err()) {
            if !err.message.contains(&format!("`{k}`")) {
                err.message = format!("`{k}`: {}", err.message);
            }
        }
        err.with_key(path)
    })
}

/// `message` with a "did you mean" hint when it is serde's unknown field/variant message
/// (the suggestion only: the key's place comes from the key path).
fn with_hint(message: &str) -> String {
    let mut msg = message.trim().to_string();
    let inner = msg.rsplit("`: ").next().unwrap_or(&msg).to_string();
    if let Some(hint) = expected_hint(&inner) {
        if !msg.contains("did you mean") {
            msg.push_str(&hint);
        }
    }
    msg
}

/// For serde's "unknown variant `x`, expected one of `a`, `b`" (and "unknown field …", and
/// [`crate::confcore::plain_serde_message`]'s "unknown value …"), a "did you mean" hint.
pub fn expected_hint(message: &str) -> Option<String> {
    let rest = ["unknown variant `", "unknown field `", "unknown value `"]
        .iter()
        .find_map(|p| message.strip_prefix(p))?;
    let (word, rest) = rest.split_once('`')?;
    let candidates: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let s = super::suggest(word, candidates.iter().copied())?;
    Some(format!(" (did you mean `{s}`?)"))
}
