//! Checks of a parsed suite that the types cannot express (names, ranges, provider tables,
//! pricing, gate rules), and the prompt files it references (must exist; digested).

use super::suite::{PromptFile, ProviderRole};
use super::{did_you_mean, ConfigError, LoadedSuite};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

impl LoadedSuite {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let s = &self.suite;
        let mut errs = Vec::new();
        let mut err = |path: &[&str], msg: String| errs.push(self.error_at(path, msg));

        let name = &s.suite.name;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            err(
                &["suite", "name"],
                format!("suite name `{name}` must be non-empty and use only letters, digits, `.`, `_`, `-` (it is part of run ids)"),
            );
        }
        if s.suite.repeats == 0 {
            err(&["suite", "repeats"], "`repeats` must be at least 1".into());
        }
        if s.suite.concurrency == 0 {
            err(
                &["suite", "concurrency"],
                "`concurrency` must be at least 1".into(),
            );
        }
        if let Some(c) = s.suite.max_cost_usd {
            if !(c.is_finite() && c > 0.0) {
                err(
                    &["suite", "max_cost_usd"],
                    format!("`max_cost_usd` must be a positive number of dollars, got {c}"),
                );
            }
        }
        if s.traces.paths.is_empty() {
            err(
                &["traces", "paths"],
                "`paths` must list at least one file, directory or glob".into(),
            );
        }
        let from = s.traces.from.as_str();
        if from != "auto" && crate::trace::SourceFormat::parse(from).is_none() {
            let mut names = vec!["auto"];
            names.extend(crate::trace::SourceFormat::ALL.iter().map(|f| f.as_str()));
            err(
                &["traces", "from"],
                format!(
                    "unknown trace format `{from}`{}; expected one of: {}",
                    did_you_mean(from, names.iter().copied()),
                    names.join(", ")
                ),
            );
        }
        if s.traces.limit == Some(0) {
            err(
                &["traces", "limit"],
                "`limit` must be at least 1 (leave it out to use every trace)".into(),
            );
        }
        s.evals
            .check(&mut |path: &[&str], message: String| err(path, message));
        if s.evals.enabled_names().is_empty() {
            // Every eval turned off: the run would plan no unit and exit 0 with an empty report.
            let off: Vec<&str> = s
                .evals
                .sections()
                .into_iter()
                .filter(|(_, sec)| sec.is_some())
                .map(|(name, _)| name)
                .collect();
            let at: Vec<&str> = match off.first() {
                Some(name) => vec!["evals", name, "enabled"],
                None => vec!["evals"],
            };
            let tables: Vec<String> = off.iter().map(|n| format!("[evals.{n}]")).collect();
            let others: Vec<String> = super::evals::EVAL_NAMES
                .iter()
                .filter(|n| !off.contains(n))
                .map(|n| format!("`[evals.{n}]`"))
                .collect();
            err(
                &at,
                format!(
                    "no eval is enabled ({} {} `enabled = false`), so the suite would run nothing: \
                     enable one (leave out its `enabled = false`; replay is on by default), or \
                     add the table of another eval: {} (docs/evals.md)",
                    tables.join(", "),
                    if off.len() == 1 { "says" } else { "each say" },
                    others.join(", ")
                ),
            );
        }
        for role in ProviderRole::ALL {
            let t = match role {
                ProviderRole::Agent => &s.providers.agent,
                ProviderRole::Summary => &s.providers.summary,
                ProviderRole::Judge => &s.providers.judge,
            };
            let Some(t) = t else { continue };
            let r = role.as_str();
            match t.get("kind") {
                Some(toml::Value::String(_)) => {}
                Some(other) => err(&["providers", r, "kind"], format!("provider `{r}`: `kind` must be a string (offline, openai, anthropic), got {}", other.type_str())),
                None => err(&["providers", r], format!("provider `{r}`: missing `kind` (offline, openai, anthropic)")),
            }
            if t.contains_key("api_key") {
                err(&["providers", r, "api_key"], format!("provider `{r}`: keys are never read from suite files; set `api_key_env = \"NAME\"` and export NAME"));
            }
            if let Some(v) = t.get("api_key_env") {
                if !v.is_str() {
                    err(&["providers", r, "api_key_env"], format!("provider `{r}`: `api_key_env` must be the name of an environment variable (a string)"));
                }
            }
            if let Some(v) = t.get("concurrency") {
                if !matches!(v.as_integer(), Some(n) if n >= 1) {
                    err(
                        &["providers", r, "concurrency"],
                        format!("provider `{r}`: `concurrency` must be an integer ≥ 1"),
                    );
                }
            }
        }
        for (model, p) in &s.pricing {
            let prices = [Some(p.input), Some(p.output), p.cache_read, p.cache_write];
            if prices
                .iter()
                .flatten()
                .any(|x| !(x.is_finite() && *x >= 0.0))
            {
                err(&["pricing", model], format!("pricing for `{model}`: prices must be non-negative dollars per million tokens"));
            }
        }
        for (i, r) in s.gates.rules.iter().enumerate() {
            if r.trim().is_empty() {
                err(
                    &["gates", "rules", &i.to_string()],
                    "empty gate rule".into(),
                );
            } else if let Err(e) = crate::gate::parse_rule(r) {
                err(
                    &["gates", "rules", &i.to_string()],
                    format!("gate rule `{r}`: {e}"),
                );
            }
        }
        // The rule of `-o/--output` (`cli::output_dir`): `output_dir` is where `run` writes.
        let out = self.output_dir();
        if let Some(why) = crate::output::not_a_directory(&out) {
            err(
                &["suite", "output_dir"],
                format!(
                    "`output_dir` = `{}` (resolved to {}): {why}",
                    s.suite.output_dir,
                    out.display()
                ),
            );
        }
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Every `file` / `*_file` string in engine and provider tables: must exist; digested.
    pub(super) fn collect_prompt_files(&mut self) -> Result<Vec<PromptFile>, ConfigError> {
        let mut found: Vec<(Vec<String>, String)> = Vec::new();
        fn walk(
            v: &toml::Value,
            path: &mut Vec<String>,
            key_is_file: bool,
            out: &mut Vec<(Vec<String>, String)>,
        ) {
            match v {
                toml::Value::String(s) if key_is_file => out.push((path.clone(), s.clone())),
                toml::Value::Table(t) => {
                    for (k, v) in t {
                        path.push(k.clone());
                        walk(v, path, is_file_key(k), out);
                        path.pop();
                    }
                }
                toml::Value::Array(a) => {
                    for (i, v) in a.iter().enumerate() {
                        path.push(i.to_string());
                        walk(v, path, key_is_file, out);
                        path.pop();
                    }
                }
                _ => {}
            }
        }
        let e = &self.suite.engine;
        let mut roots: Vec<(Vec<String>, toml::Value)> = vec![
            (
                vec!["engine".into(), "base".into()],
                toml::Value::Table(e.base.clone()),
            ),
            (
                vec!["engine".into(), "grid".into()],
                toml::Value::Table(e.grid.clone()),
            ),
        ];
        for (name, t) in &e.variants {
            roots.push((
                vec!["engine".into(), "variants".into(), name.clone()],
                toml::Value::Table(t.clone()),
            ));
        }
        for role in ProviderRole::ALL {
            if let Some(t) = match role {
                ProviderRole::Agent => &self.suite.providers.agent,
                ProviderRole::Summary => &self.suite.providers.summary,
                ProviderRole::Judge => &self.suite.providers.judge,
            } {
                roots.push((
                    vec!["providers".into(), role.as_str().into()],
                    toml::Value::Table(t.clone()),
                ));
            }
        }
        for (mut path, v) in roots {
            walk(&v, &mut path, false, &mut found);
        }
        let mut errs = Vec::new();
        let mut files: BTreeMap<String, PromptFile> = BTreeMap::new();
        for (path, written) in found {
            let resolved = self.resolve(&written);
            match std::fs::read(&resolved) {
                Ok(bytes) => {
                    files.entry(written.clone()).or_insert(PromptFile {
                        rel: written,
                        path: resolved,
                        sha256: hex::encode(Sha256::digest(&bytes)),
                    });
                }
                Err(e) => {
                    let refs: Vec<&str> = path.iter().map(|s| s.as_str()).collect();
                    errs.push(self.error_at(
                        &refs,
                        format!(
                            "`{}`: cannot read `{}` (resolved to {}): {e}",
                            refs.join("."),
                            written,
                            resolved.display()
                        ),
                    ));
                }
            }
        }
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(files.into_values().collect()),
        }
    }
}

/// Keys whose string value is a path relative to the suite file.
pub(super) fn is_file_key(k: &str) -> bool {
    k == "file" || k.ends_with("_file")
}
