//! Request overhead a trace left out (system prompt, tool schemas, injected session context):
//! a plain token count, or the name of a bundled estimate from `data/overhead.toml`
//! (`claude-code`). Shared by the engine key `overhead_tokens` and `traces stats --overhead-tokens`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// The bundled estimates (`data/overhead.toml`).
pub const BUNDLED_OVERHEAD: &str = include_str!("../../data/overhead.toml");

/// One bundled estimate.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownOverhead {
    /// Tokens added to every request.
    pub tokens: u64,
    /// `measured` (from bundled traces) or `public` (a published figure).
    pub method: String,
    /// Where the figure comes from.
    pub source: String,
}

static KNOWN: LazyLock<BTreeMap<String, KnownOverhead>> = LazyLock::new(|| {
    // The bundled file is checked by a unit test; a broken edit fails the test suite.
    toml::from_str(BUNDLED_OVERHEAD).unwrap_or_default()
});

/// Names of the bundled estimates.
pub fn known_names() -> Vec<&'static str> {
    KNOWN.keys().map(String::as_str).collect()
}

/// A bundled estimate by name.
pub fn known(name: &str) -> Option<&'static KnownOverhead> {
    KNOWN.get(name)
}

/// Extra tokens per request: a count, or a bundled estimate's name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum OverheadTokens {
    Count(u64),
    Named(String),
}

/// What `overhead_tokens` takes, for a value that is neither (serde's untagged enum said only
/// "data did not match any variant").
const EXPECTED: &str = "a token count ≥ 0 or the name of a bundled estimate";

impl<'de> Deserialize<'de> for OverheadTokens {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, Unexpected, Visitor};
        struct V;
        impl Visitor<'_> for V {
            type Value = OverheadTokens;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "{EXPECTED} ({})", known_names().join(", "))
            }
            fn visit_u64<E: Error>(self, n: u64) -> Result<OverheadTokens, E> {
                Ok(OverheadTokens::Count(n))
            }
            fn visit_i64<E: Error>(self, n: i64) -> Result<OverheadTokens, E> {
                u64::try_from(n)
                    .map(OverheadTokens::Count)
                    .map_err(|_| E::invalid_value(Unexpected::Signed(n), &self))
            }
            fn visit_str<E: Error>(self, s: &str) -> Result<OverheadTokens, E> {
                Ok(OverheadTokens::Named(s.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A name that is not a bundled estimate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown overhead estimate `{name}`: give a token count or one of: {known}")]
pub struct UnknownOverhead {
    pub name: String,
    pub known: String,
}

impl OverheadTokens {
    /// The token count this stands for.
    pub fn tokens(&self) -> Result<u64, UnknownOverhead> {
        match self {
            OverheadTokens::Count(n) => Ok(*n),
            OverheadTokens::Named(name) => known(name).map(|k| k.tokens).ok_or(UnknownOverhead {
                name: name.clone(),
                known: known_names().join(", "),
            }),
        }
    }
}

impl std::str::FromStr for OverheadTokens {
    type Err = UnknownOverhead;
    /// A number, or a bundled estimate's name (checked here, so a command line fails early).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let v = match s.parse::<u64>() {
            Ok(n) => OverheadTokens::Count(n),
            Err(_) => OverheadTokens::Named(s.to_string()),
        };
        v.tokens().map(|_| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_file_parses_and_names_its_method_and_source() {
        let parsed: BTreeMap<String, KnownOverhead> = toml::from_str(BUNDLED_OVERHEAD).unwrap();
        assert_eq!(parsed.len(), KNOWN.len());
        let cc = known("claude-code").expect("claude-code estimate");
        assert_eq!(cc.tokens, 18_400);
        assert_eq!(cc.method, "measured");
        assert!(cc.source.contains("datasets/claude-code"));
    }

    #[test]
    fn counts_and_names_resolve_and_unknown_names_list_the_known_ones() {
        assert_eq!("1200".parse::<OverheadTokens>().unwrap().tokens(), Ok(1200));
        let named: OverheadTokens = "claude-code".parse().unwrap();
        assert_eq!(named.tokens(), Ok(18_400));
        let e = "codex".parse::<OverheadTokens>().unwrap_err();
        assert!(e.to_string().contains("claude-code"), "{e}");
        let v: OverheadTokens = serde_json::from_value(serde_json::json!(7)).unwrap();
        assert_eq!(v, OverheadTokens::Count(7));
        let v: OverheadTokens = serde_json::from_value(serde_json::json!("claude-code")).unwrap();
        assert_eq!(v, OverheadTokens::Named("claude-code".into()));
    }
}
