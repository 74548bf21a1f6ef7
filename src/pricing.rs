//! Model prices: the bundled, dated table (`data/pricing.toml`), suite overrides, model-name
//! matching, and the dollar cost of one call from normalized [`Usage`].
//!
//! A leaf: it imports only the trace's [`Usage`]. The run builds one [`PriceTable`] (bundled
//! table + the suite's `[pricing]`) and hands it to the engine (`ReplayEnv::prices`, read by the
//! `cost_ceiling` layer) and to the reports' cost columns, so both price calls alike.
//!
//! An unknown model costs [`Price::Unknown`], reported as "price unknown" and never as $0.
//!
//! Matching, in order (the first hit wins; each step tries the table, then `[aliases]`):
//! 1. the id exactly as given;
//! 2. lower-cased, without a routing prefix up to the last `/` (`openai/gpt-4o`,
//!    `models/gemini-2.5-pro`) and without an `@version` suffix (Vertex);
//! 3. without a dated snapshot suffix `-YYYYMMDD` / `-YYYY-MM-DD` or `-latest`
//!    (`claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`);
//! 4. with `.` replaced by `-` (`claude-sonnet-4.5` → `claude-sonnet-4-5`).
//!
//! There is deliberately no general prefix rule: `gpt-5-pro` must not be priced as `gpt-5`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::trace::Usage;

/// The bundled table's text.
pub const BUNDLED_PRICING: &str = include_str!("../data/pricing.toml");

/// A price table or override that cannot be used; names where it came from.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct PricingError {
    pub origin: String,
    pub message: String,
}

/// The higher rates that apply to a whole call once its input exceeds `threshold` tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LongContextTier {
    pub threshold: u64,
    pub input: f64,
    pub output: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

/// Prices of one model in $ per million tokens. A missing `cache_read` / `cache_write` is
/// charged at `input`. One type for the bundled table's `[models.<id>]` entries and the suite's
/// `[pricing.<model>]` overrides. The context window is `window` (the suite's spelling, kept so
/// suites and their schema do not change); the table spells it `context_window`, accepted as an
/// alias.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    pub input: f64,
    pub output: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// Context window in tokens.
    #[serde(
        default,
        alias = "context_window",
        skip_serializing_if = "Option::is_none"
    )]
    pub window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_context: Option<LongContextTier>,
}

impl ModelPrice {
    fn check(&self, model: &str) -> Result<(), String> {
        let mut rates = vec![
            ("input", Some(self.input)),
            ("output", Some(self.output)),
            ("cache_read", self.cache_read),
            ("cache_write", self.cache_write),
        ];
        if let Some(t) = &self.long_context {
            if t.threshold == 0 {
                return Err(format!("{model}.long_context.threshold: expected > 0"));
            }
            rates.extend([
                ("long_context.input", Some(t.input)),
                ("long_context.output", Some(t.output)),
                ("long_context.cache_read", t.cache_read),
                ("long_context.cache_write", t.cache_write),
            ]);
        }
        for (name, v) in rates {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(format!(
                        "{model}.{name}: expected a price ≥ 0 in $/million tokens, got {v}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Dollar cost of one call; the second value says whether the long-context tier applied.
    pub fn cost(&self, usage: &Usage) -> (f64, bool) {
        let long = self.is_long(usage);
        (self.priced(usage, long), long)
    }

    /// Dollar cost of several calls: each call's own input decides its tier, and the calls of
    /// each tier are priced as their sum (so calls that all price at one tier cost exactly what
    /// their sum does at it). The second value: some call took the long-context tier. A sum of
    /// calls must not be priced as one call ([`cost`](Self::cost)): 20 calls of 20,000 tokens
    /// are not one prompt of 400,000.
    pub fn cost_of_calls(&self, calls: &[Usage]) -> (f64, bool) {
        let (mut short, mut long) = (None::<Usage>, None::<Usage>);
        for u in calls {
            let sum = if self.is_long(u) {
                &mut long
            } else {
                &mut short
            };
            sum.get_or_insert_with(Usage::default).add(u);
        }
        match (short, long) {
            (short, None) => (self.priced(&short.unwrap_or_default(), false), false),
            (None, Some(long)) => (self.priced(&long, true), true),
            (Some(short), Some(long)) => {
                (self.priced(&short, false) + self.priced(&long, true), true)
            }
        }
    }

    /// Dollar cost of `calls` calls known only by their summed usage `total` (an estimate's),
    /// each taken as their average call: the average call's input decides the tier.
    pub fn cost_as_calls(&self, total: &Usage, calls: u64) -> (f64, bool) {
        let average = Usage {
            input: total.input / calls.max(1),
            ..Usage::default()
        };
        let long = self.is_long(&average);
        (self.priced(total, long), long)
    }

    /// True when `usage`, one call, takes the long-context tier.
    fn is_long(&self, usage: &Usage) -> bool {
        self.long_context
            .as_ref()
            .is_some_and(|t| usage.input > t.threshold)
    }

    /// Dollar cost of `usage` at the normal rates, or at the long-context tier's when `long`.
    fn priced(&self, usage: &Usage, long: bool) -> f64 {
        let (input, output, read, write) = match &self.long_context {
            Some(t) if long => (
                t.input,
                t.output,
                t.cache_read.unwrap_or(t.input),
                t.cache_write.unwrap_or(t.input),
            ),
            _ => (
                self.input,
                self.output,
                self.cache_read.unwrap_or(self.input),
                self.cache_write.unwrap_or(self.input),
            ),
        };
        let fresh = usage
            .input
            .saturating_sub(usage.cache_read)
            .saturating_sub(usage.cache_write);
        (fresh as f64 * input
            + usage.cache_read as f64 * read
            + usage.cache_write as f64 * write
            + usage.output as f64 * output)
            / 1_000_000.0
    }
}

/// The usage of each of several model calls (an agent's steps, a judge's grades): what a price
/// table needs to price them ([`PriceTable::cost_of_calls`]: a long-context tier applies to a
/// call, never to a sum of calls). Serialized as the calls' sum, the [`Usage`] it replaced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Calls(Vec<Usage>);

impl Calls {
    /// One more call.
    pub fn add(&mut self, call: &Usage) {
        self.0.push(*call);
    }

    /// Every call of `other` after these.
    pub fn extend(&mut self, other: &Calls) {
        self.0.extend_from_slice(&other.0);
    }

    /// The calls' usage summed.
    pub fn total(&self) -> Usage {
        let mut sum = Usage::default();
        for u in &self.0 {
            sum.add(u);
        }
        sum
    }

    pub fn as_slice(&self) -> &[Usage] {
        &self.0
    }
}

impl FromIterator<Usage> for Calls {
    fn from_iter<I: IntoIterator<Item = Usage>>(calls: I) -> Self {
        Calls(calls.into_iter().collect())
    }
}

impl Serialize for Calls {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.total().serialize(s)
    }
}

/// The cost of a call, or the explicit absence of one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Price {
    Known {
        usd: f64,
        /// The table entry that priced it (e.g. `claude-sonnet-4-5` for a dated snapshot).
        priced_as: String,
        /// True when the long-context tier applied.
        long_context: bool,
    },
    Unknown {
        model: String,
        /// Why: [`Price::NOT_IN_TABLE`] or [`Price::NO_USAGE`].
        reason: String,
    },
}

impl Price {
    pub const NOT_IN_TABLE: &'static str = "not in the price table";
    pub const NO_USAGE: &'static str = "the API reported no usage";

    /// Dollars, or `None` when the price is unknown (callers must not treat that as 0).
    pub fn usd(&self) -> Option<f64> {
        match self {
            Price::Known { usd, .. } => Some(*usd),
            Price::Unknown { .. } => None,
        }
    }
}

impl fmt::Display for Price {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Price::Known { usd, .. } => write!(f, "${usd:.6}"),
            Price::Unknown { model, reason } => write!(f, "price unknown ({model}: {reason})"),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    schema_version: u32,
    as_of: String,
    currency: String,
    #[serde(default)]
    aliases: BTreeMap<String, String>,
    models: BTreeMap<String, ModelPrice>,
}

/// A price table: the bundled one, possibly with suite overrides.
#[derive(Clone, Debug, PartialEq)]
pub struct PriceTable {
    /// Date the prices were compiled (`YYYY-MM-DD`).
    pub as_of: String,
    models: BTreeMap<String, ModelPrice>,
    aliases: BTreeMap<String, String>,
}

impl PriceTable {
    /// Parses a table in the `data/pricing.toml` format; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, PricingError> {
        let err = |message: String| PricingError {
            origin: origin.to_string(),
            message,
        };
        let file: TableFile = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        if file.schema_version != 1 {
            return Err(err(format!(
                "schema_version: expected 1, got {}",
                file.schema_version
            )));
        }
        if file.currency != "USD" {
            return Err(err(format!(
                "currency: expected \"USD\", got {:?}",
                file.currency
            )));
        }
        for (model, p) in &file.models {
            p.check(model).map_err(err)?;
        }
        for (alias, target) in &file.aliases {
            if !file.models.contains_key(target) {
                return Err(err(format!(
                    "aliases.{alias}: points to {target:?}, which is not in [models]"
                )));
            }
        }
        Ok(PriceTable {
            as_of: file.as_of,
            models: file.models,
            aliases: file.aliases,
        })
    }

    /// The bundled table (`data/pricing.toml`, compiled into the binary).
    pub fn bundled() -> &'static PriceTable {
        static TABLE: OnceLock<PriceTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            PriceTable::from_toml(BUNDLED_PRICING, "data/pricing.toml")
                .expect("the bundled price table is checked by a unit test")
        })
    }

    /// This table with `overrides` (model id → full entry) replacing or adding entries. An
    /// override is matched by exact id before any rule applies.
    pub fn with_overrides(
        &self,
        overrides: &BTreeMap<String, ModelPrice>,
    ) -> Result<PriceTable, PricingError> {
        let mut t = self.clone();
        for (model, p) in overrides {
            p.check(model).map_err(|message| PricingError {
                origin: "pricing overrides".into(),
                message,
            })?;
            t.models.insert(model.clone(), p.clone());
        }
        Ok(t)
    }

    fn direct(&self, id: &str) -> Option<(&str, &ModelPrice)> {
        if let Some((k, p)) = self.models.get_key_value(id) {
            return Some((k.as_str(), p));
        }
        let target = self.aliases.get(id)?;
        self.models
            .get_key_value(target)
            .map(|(k, p)| (k.as_str(), p))
    }

    /// The table entry for `model` under the documented matching rules: (entry id, prices).
    pub fn lookup(&self, model: &str) -> Option<(&str, &ModelPrice)> {
        if let Some(hit) = self.direct(model) {
            return Some(hit);
        }
        let id = routed_id(model);
        if let Some(hit) = self.direct(&id) {
            return Some(hit);
        }
        let undated = strip_snapshot(&id);
        if let Some(hit) = self.direct(undated) {
            return Some(hit);
        }
        let dashed = undated.replace('.', "-");
        self.direct(&dashed)
    }

    /// Every model id and alias the table names (for "did you mean").
    pub fn model_names(&self) -> impl Iterator<Item = &str> {
        self.models
            .keys()
            .chain(self.aliases.keys())
            .map(String::as_str)
    }

    /// A warning for a model a user named (`--agent-model`, `agent_model`) that the table does
    /// not know, with the nearest name it knows: such a model has no price and no context
    /// window, so the window comes from elsewhere (`None`: the table knows it).
    pub fn unknown_model(&self, model: &str) -> Option<String> {
        if self.lookup(model).is_some() {
            return None;
        }
        Some(format!(
            "`{model}` is not in the price table{}: it has no price and no context window here",
            crate::confcore::did_you_mean(model, self.model_names())
        ))
    }

    /// The model's context window, where the table knows it.
    pub fn context_window(&self, model: &str) -> Option<u64> {
        self.lookup(model).and_then(|(_, p)| p.window)
    }

    /// Cost of one call of `model` with `usage`.
    pub fn cost(&self, model: &str, usage: &Usage) -> Price {
        self.priced(model, |p| p.cost(usage))
    }

    /// Cost of several calls of `model`, each call's usage in `calls`
    /// ([`ModelPrice::cost_of_calls`]: the long-context tier is a call's, never a sum's).
    pub fn cost_of_calls(&self, model: &str, calls: &[Usage]) -> Price {
        self.priced(model, |p| p.cost_of_calls(calls))
    }

    /// Cost of `calls` calls of `model` known only by their sum `total`
    /// ([`ModelPrice::cost_as_calls`]: what a cost estimate prices).
    pub fn cost_as_calls(&self, model: &str, total: &Usage, calls: u64) -> Price {
        self.priced(model, |p| p.cost_as_calls(total, calls))
    }

    fn priced(&self, model: &str, cost: impl FnOnce(&ModelPrice) -> (f64, bool)) -> Price {
        match self.lookup(model) {
            Some((id, p)) => {
                let (usd, long_context) = cost(p);
                Price::Known {
                    usd,
                    priced_as: id.to_string(),
                    long_context,
                }
            }
            None => Price::Unknown {
                model: model.to_string(),
                reason: Price::NOT_IN_TABLE.into(),
            },
        }
    }
}

/// Cost of one call under the bundled table.
pub fn cost(model: &str, usage: &Usage) -> Price {
    PriceTable::bundled().cost(model, usage)
}

/// `model` lower-cased, without a routing prefix up to the last `/` and an `@version` suffix
/// (matching step 2).
fn routed_id(model: &str) -> String {
    let mut id = model.trim().to_lowercase();
    if let Some(i) = id.rfind('/') {
        id = id[i + 1..].to_string();
    }
    if let Some(i) = id.find('@') {
        id.truncate(i);
    }
    id
}

/// `model` as the table's ids are written, after every matching step at once (lower-cased, no
/// routing prefix, `@version`, dated snapshot or `-latest`, `.` as `-`:
/// `anthropic/claude-sonnet-4.5@20250929` → `claude-sonnet-4-5`), for other per-model facts
/// keyed the same way (`providers::anthropic::max_output_tokens`).
pub fn normalized_id(model: &str) -> String {
    strip_snapshot(&routed_id(model)).replace('.', "-")
}

/// `id` without a trailing `-latest`, `-YYYYMMDD` or `-YYYY-MM-DD`.
fn strip_snapshot(id: &str) -> &str {
    if let Some(s) = id.strip_suffix("-latest") {
        return s;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(i) = id.rfind('-') {
        let tail = &id[i + 1..];
        if tail.len() == 8 && digits(tail) && tail.starts_with("20") {
            return &id[..i];
        }
    }
    // -YYYY-MM-DD: the last 11 bytes.
    if id.len() > 11 && id.is_char_boundary(id.len() - 11) {
        let (head, tail) = id.split_at(id.len() - 11);
        let parts: Vec<&str> = tail[1..].split('-').collect();
        if tail.starts_with('-')
            && parts.len() == 3
            && parts[0].len() == 4
            && parts[1].len() == 2
            && parts[2].len() == 2
            && parts.iter().all(|p| digits(p))
        {
            return head;
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(input: u64, cache_read: u64, cache_write: u64, output: u64) -> Usage {
        Usage {
            input,
            output,
            cache_read,
            cache_write,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn bundled_table_parses_and_is_dated() {
        let t = PriceTable::bundled();
        assert_eq!(t.as_of.len(), 10, "as_of is a YYYY-MM-DD date");
        for m in [
            "gpt-4o",
            "gpt-5",
            "claude-sonnet-4-5",
            "gemini-2.5-pro",
            "deepseek-chat",
        ] {
            assert!(t.lookup(m).is_some(), "{m} missing");
        }
    }

    #[test]
    fn anthropic_cost_uses_all_four_rates() {
        // 10,000 fresh + 50,000 cache read + 2,000 cache write, 1,000 out on Sonnet 4.5.
        let p = cost("claude-sonnet-4-5", &u(62_000, 50_000, 2_000, 1_000));
        let want = (10_000.0 * 3.0 + 50_000.0 * 0.30 + 2_000.0 * 3.75 + 1_000.0 * 15.0) / 1e6;
        assert!(close(p.usd().unwrap(), want), "{p:?} vs {want}");
    }

    #[test]
    fn long_context_tier_prices_the_whole_call() {
        let at = cost("claude-sonnet-4-5", &u(200_000, 0, 0, 100));
        assert!(close(
            at.usd().unwrap(),
            (200_000.0 * 3.0 + 100.0 * 15.0) / 1e6
        ));
        let over = cost("claude-sonnet-4-5", &u(200_001, 100_000, 0, 100));
        let want = (100_001.0 * 6.0 + 100_000.0 * 0.60 + 100.0 * 22.50) / 1e6;
        assert!(close(over.usd().unwrap(), want), "{over:?}");
        assert!(matches!(
            over,
            Price::Known {
                long_context: true,
                ..
            }
        ));
        let g = cost("gemini-2.5-pro", &u(300_000, 0, 0, 1_000));
        assert!(close(
            g.usd().unwrap(),
            (300_000.0 * 2.50 + 1_000.0 * 15.0) / 1e6
        ));
    }

    #[test]
    fn calls_take_the_long_context_tier_each_never_as_a_sum() {
        let t = PriceTable::bundled();
        let one = u(20_000, 15_000, 0, 300);
        let twenty = vec![one; 20];
        let mut sum = Usage::default();
        for c in &twenty {
            sum.add(c);
        }
        // 400,000 tokens in all, no call past 200,000: the normal rates, 20 times one call.
        let calls = t.cost_of_calls("claude-sonnet-4-5", &twenty);
        assert!(close(
            calls.usd().unwrap(),
            20.0 * t.cost("claude-sonnet-4-5", &one).usd().unwrap()
        ));
        assert!(matches!(
            calls,
            Price::Known {
                long_context: false,
                ..
            }
        ));
        // Priced as one call, the sum would take the tier (what the runs did before).
        let as_one = t.cost("claude-sonnet-4-5", &sum).usd().unwrap();
        assert!(as_one > 1.5 * calls.usd().unwrap());
        // One call past the threshold takes the tier, alone.
        let big = u(250_000, 0, 0, 1_000);
        let mixed = t.cost_of_calls("claude-sonnet-4-5", &[one, big, one]);
        let want = 2.0 * t.cost("claude-sonnet-4-5", &one).usd().unwrap()
            + t.cost("claude-sonnet-4-5", &big).usd().unwrap();
        assert!(close(mixed.usd().unwrap(), want), "{mixed:?} vs {want}");
        assert!(matches!(
            mixed,
            Price::Known {
                long_context: true,
                ..
            }
        ));
        assert_eq!(
            t.cost_of_calls("claude-sonnet-4-5", &[big, big]),
            t.cost("claude-sonnet-4-5", &u(500_000, 0, 0, 2_000))
        );
        // No call: a known $0.
        assert_eq!(t.cost_of_calls("gpt-4o", &[]).usd(), Some(0.0));
        assert_eq!(
            t.cost_of_calls("my-finetune-7b", &[one]),
            t.cost("my-finetune-7b", &one)
        );
    }

    #[test]
    fn calls_at_one_rate_cost_exactly_their_sum() {
        // Where no call takes a tier (or the model has none), the calls cost what their sum
        // costs, to the bit: the figures of runs without a tier do not move.
        let t = PriceTable::bundled();
        let mut calls = Vec::new();
        let mut sum = Usage::default();
        for i in 0..40u64 {
            let c = u(1_000 + i * 4_567, i * 1_234, i % 3 * 17, 100 + i * 89);
            sum.add(&c);
            calls.push(c);
            // gpt-4o has no tier; the others' sums stay under theirs for the first calls.
            for model in ["gpt-4o", "claude-sonnet-4-5", "gemini-2.5-pro"] {
                if model == "gpt-4o" || sum.input <= 200_000 {
                    assert_eq!(
                        t.cost_of_calls(model, &calls),
                        t.cost(model, &sum),
                        "{model}, {} calls",
                        calls.len()
                    );
                }
            }
        }
        assert!(sum.input > 1_000_000);
    }

    #[test]
    fn missing_cache_rates_fall_back_to_input() {
        let p = cost("gpt-4o-2024-05-13", &u(1_000, 400, 0, 0));
        assert!(close(p.usd().unwrap(), 1_000.0 * 5.0 / 1e6), "{p:?}");
    }

    #[test]
    fn unknown_models_are_never_free() {
        let p = cost("my-finetune-7b", &u(1000, 0, 0, 1000));
        assert_eq!(
            p,
            Price::Unknown {
                model: "my-finetune-7b".into(),
                reason: Price::NOT_IN_TABLE.into(),
            }
        );
        assert_eq!(p.usd(), None);
        assert_eq!(
            p.to_string(),
            "price unknown (my-finetune-7b: not in the price table)"
        );
        // No generic prefix rule: a bigger sibling is not priced as its base model.
        assert_eq!(cost("gpt-5-pro", &Usage::default()).usd(), None);
        assert_eq!(cost("gpt-4o-mini-search", &Usage::default()).usd(), None);
    }

    #[test]
    fn name_matching_rules() {
        let t = PriceTable::bundled();
        let id = |m: &str| t.lookup(m).map(|(id, _)| id.to_string());
        assert_eq!(
            id("claude-sonnet-4-5-20250929").as_deref(),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(id("gpt-4o-2024-08-06").as_deref(), Some("gpt-4o"));
        assert_eq!(
            id("gpt-4o-2024-05-13").as_deref(),
            Some("gpt-4o-2024-05-13"),
            "exact first"
        );
        assert_eq!(
            id("claude-3-5-haiku-latest").as_deref(),
            Some("claude-3-5-haiku")
        );
        assert_eq!(
            id("anthropic/claude-sonnet-4.5").as_deref(),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(id("openai/gpt-4.1-mini").as_deref(), Some("gpt-4.1-mini"));
        assert_eq!(
            id("models/gemini-2.5-flash").as_deref(),
            Some("gemini-2.5-flash")
        );
        assert_eq!(
            id("claude-opus-4-1@20250805").as_deref(),
            Some("claude-opus-4-1")
        );
        assert_eq!(id("Claude-Sonnet-4-0").as_deref(), Some("claude-sonnet-4"));
        assert_eq!(id("deepseek-v3.2").as_deref(), Some("deepseek-chat"));
        assert_eq!(id("gpt-4o-mini").as_deref(), Some("gpt-4o-mini"));
        assert_eq!(id("gpt-4o-mini-2024-07-18").as_deref(), Some("gpt-4o-mini"));
        assert_eq!(id("gpt-4.1-2025-04-14").as_deref(), Some("gpt-4.1"));
    }

    #[test]
    fn overrides_replace_and_add_and_are_checked() {
        let mut o = BTreeMap::new();
        o.insert(
            "qwen2.5-coder-0.5b".to_string(),
            ModelPrice {
                input: 0.0,
                output: 0.0,
                cache_read: None,
                cache_write: None,
                window: Some(8192),
                long_context: None,
            },
        );
        o.insert(
            "gpt-4o".to_string(),
            ModelPrice {
                input: 1.0,
                output: 2.0,
                cache_read: Some(0.5),
                cache_write: None,
                window: None,
                long_context: None,
            },
        );
        let t = PriceTable::bundled().with_overrides(&o).unwrap();
        // A local model priced at zero by the user is a known $0, not unknown.
        assert_eq!(
            t.cost("qwen2.5-coder-0.5b", &u(10, 0, 0, 10)).usd(),
            Some(0.0)
        );
        assert_eq!(t.context_window("qwen2.5-coder-0.5b"), Some(8192));
        let p = t.cost("gpt-4o-2024-08-06", &u(1_000_000, 500_000, 0, 1_000_000));
        assert!(close(p.usd().unwrap(), 0.5 + 0.25 + 2.0), "{p:?}");
        o.get_mut("gpt-4o").unwrap().output = -1.0;
        let e = PriceTable::bundled().with_overrides(&o).unwrap_err();
        assert!(e.to_string().contains("gpt-4o.output"), "{e}");
    }

    #[test]
    fn bad_tables_name_the_problem() {
        let e = PriceTable::from_toml(
            "schema_version = 1\nas_of = \"x\"\ncurrency = \"USD\"\n[models.m]\ninput = 1\n",
            "t.toml",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("t.toml:"), "{e}");
        assert!(e.to_string().contains("output"), "{e}");
        let e = PriceTable::from_toml("schema_version = 1\nas_of = \"x\"\ncurrency = \"USD\"\n[aliases]\na = \"b\"\n[models.m]\ninput = 1\noutput = 1\n", "t.toml").unwrap_err();
        assert!(e.to_string().contains("aliases.a"), "{e}");
    }

    #[test]
    fn snapshot_suffixes() {
        assert_eq!(
            strip_snapshot("claude-3-5-haiku-20241022"),
            "claude-3-5-haiku"
        );
        assert_eq!(strip_snapshot("gpt-4o-2024-08-06"), "gpt-4o");
        assert_eq!(strip_snapshot("o3-mini"), "o3-mini");
        assert_eq!(strip_snapshot("gpt-4-0613"), "gpt-4-0613");
        assert_eq!(strip_snapshot("x-latest"), "x");
    }
}
