//! The typed half of loading: every variant's merged engine table becomes an
//! [`EngineConfig`] (and is resolved once, so a bad preset, key or value fails at load), and
//! every provider role becomes a [`ProviderConfig`]. Deserialization goes through
//! `serde_path_to_error`, so each error names its key path and the source map gives its line.
//! Nothing past `config/` reads the raw TOML of engine or provider tables.

use super::suite::{ProviderRole, Variant};
use super::{ConfigError, LoadedSuite};
use crate::engine::EngineConfig;
use crate::providers::ProviderConfig;
use std::collections::BTreeMap;

/// One provider role as the suite configures it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleProvider {
    pub config: ProviderConfig,
    /// False when the suite has no table for this role (the built-in offline provider).
    pub configured: bool,
    /// The role's `concurrency` when the suite sets it (caps that role's calls in flight);
    /// `None` leaves the suite's concurrency as the only limit.
    pub concurrency_limit: Option<usize>,
}

impl LoadedSuite {
    /// The provider of `role` (every role has one: unset roles are offline).
    pub fn provider(&self, role: ProviderRole) -> &RoleProvider {
        &self.providers[&role]
    }

    /// Deserialize every variant's engine table and resolve it once (for a trace that records
    /// no window: with the window the variant runs with there, its own `window`, else its
    /// `agent_model`'s in the suite's price table, else the preset's default).
    pub(super) fn type_variants(&mut self) -> Result<(), ConfigError> {
        // (A price override `validate` let through but the table refuses is said by the run;
        // the bundled table's windows stand here.)
        let prices = crate::pricing::PriceTable::bundled()
            .with_overrides(&self.suite.pricing)
            .unwrap_or_else(|_| crate::pricing::PriceTable::bundled().clone());
        let mut problems = Vec::new();
        let mut typed = Vec::with_capacity(self.variants.len());
        for v in &self.variants {
            match type_engine(v, &prices) {
                Ok(c) => typed.push(c),
                Err((key, message)) => {
                    problems.push((v, key, message));
                    typed.push(EngineConfig::default());
                }
            }
        }
        let base = || type_engine(&self.base_variant(), &prices).err();
        if let Some(e) = self.variant_errors(problems, base) {
            return Err(e);
        }
        for (v, c) in self.variants.iter_mut().zip(typed) {
            v.config = c;
        }
        Ok(())
    }

    /// A needle `triggers` sweep moves each variant's compaction trigger
    /// (`ResolvedConfig::set_compaction_trigger`): a variant without a layer that has one (an
    /// external engine, preset `none`) cannot take it, which is said here, at load, not by
    /// each of its units failing at run time.
    pub(super) fn check_needle_triggers(&self) -> Result<(), ConfigError> {
        let Some(t) = self
            .suite
            .evals
            .needle
            .as_ref()
            .filter(|n| n.enabled)
            .and_then(|n| n.triggers.first().copied())
        else {
            return Ok(());
        };
        let cannot: Vec<String> = self
            .variants
            .iter()
            .filter(|v| {
                v.config
                    .resolve(None)
                    .is_ok_and(|mut r| !r.set_compaction_trigger(t))
            })
            .map(|v| format!("`{}`", v.name))
            .collect();
        if cannot.is_empty() {
            return Ok(());
        }
        Err(self.error_at(
            &["evals", "needle", "triggers"],
            format!(
                "`triggers` moves each variant's summarize or truncate trigger, but engine \
                 variant(s) {} have no such layer (an external engine, or a preset without \
                 one): drop `triggers`, or leave those variants out (--variant)",
                cannot.join(", ")
            ),
        ))
    }

    /// Deserialize every provider role (unset roles: `{ kind = "offline" }`).
    pub(super) fn type_providers(&mut self) -> Result<(), ConfigError> {
        let mut errs = Vec::new();
        let mut out = BTreeMap::new();
        for role in ProviderRole::ALL {
            let table = match role {
                ProviderRole::Agent => &self.suite.providers.agent,
                ProviderRole::Summary => &self.suite.providers.summary,
                ProviderRole::Judge => &self.suite.providers.judge,
            };
            let Some(table) = table else {
                out.insert(
                    role,
                    RoleProvider {
                        config: serde_json::from_value(serde_json::json!({"kind": "offline"}))
                            .expect("the offline provider needs no keys"),
                        configured: false,
                        concurrency_limit: None,
                    },
                );
                continue;
            };
            if let Some((key, x)) = non_finite(table) {
                let message = format!("`{}`: expected a finite number, got {x}", key.join("."));
                let key: Vec<&str> = key.iter().map(String::as_str).collect();
                errs.push(self.provider_error(role, &key, &message));
                continue;
            }
            let json = serde_json::to_value(table).expect("TOML tables are JSON");
            match serde_path_to_error::deserialize::<_, ProviderConfig>(json) {
                Ok(config) => {
                    // What the run's provider check refuses (a missing `model`, values the
                    // API refuses, …): each names its key and line, also in a dry run.
                    for (key, message) in config.problems() {
                        errs.push(self.provider_error(role, &[key], &message));
                    }
                    let concurrency_limit = table
                        .contains_key("concurrency")
                        .then_some(config.concurrency.max(1));
                    out.insert(
                        role,
                        RoleProvider {
                            config,
                            configured: true,
                            concurrency_limit,
                        },
                    );
                }
                Err(e) => {
                    let key = ConfigError::key_of(&[], e.path());
                    let key: Vec<&str> = key.iter().map(String::as_str).collect();
                    let message = format!("`{}`: {}", key.join("."), e.inner());
                    errs.push(self.provider_error(role, &key, &message));
                }
            }
        }
        if let Some(e) = ConfigError::combine(errs) {
            return Err(e);
        }
        self.providers = out;
        Ok(())
    }
}

/// The first float in `table` (depth first, in key order) that is NaN or infinite, with its key
/// path.
fn non_finite(table: &toml::Table) -> Option<(Vec<String>, f64)> {
    fn walk(v: &toml::Value, path: &mut Vec<String>) -> Option<(Vec<String>, f64)> {
        match v {
            toml::Value::Float(x) if !x.is_finite() => Some((path.clone(), *x)),
            toml::Value::Table(t) => t.iter().find_map(|(k, v)| {
                path.push(k.clone());
                let found = walk(v, path);
                path.pop();
                found
            }),
            toml::Value::Array(a) => a.iter().enumerate().find_map(|(i, v)| {
                path.push(i.to_string());
                let found = walk(v, path);
                path.pop();
                found
            }),
            _ => None,
        }
    }
    walk(&toml::Value::Table(table.clone()), &mut Vec::new())
}

/// A variant's engine table deserialized and resolved once as for a trace that records no window
/// (`EngineConfig::resolve_untraced`, with `prices`), or the key path and message of its first
/// problem.
fn type_engine(
    v: &Variant,
    prices: &crate::pricing::PriceTable,
) -> Result<EngineConfig, (Vec<String>, String)> {
    // JSON has no NaN or infinity: name such a value here rather than let it turn into
    // `null` ("invalid type: null") on the way to the typed config.
    if let Some((key, x)) = non_finite(&v.engine) {
        let message = format!("`{}`: expected a finite number, got {x}", key.join("."));
        return Err((key, message));
    }
    let json = serde_json::to_value(&v.engine).expect("TOML tables are JSON");
    EngineConfig::from_value(json)
        .and_then(|c| {
            c.resolve_untraced(prices)?;
            Ok(c)
        })
        .map_err(|e| (e.key, e.message))
}
