//! The layers of the engine, one file each (its configuration struct, its [`LayerSpec`] and
//! its [`Layer`]), and [`REGISTRY`], the one list of them: adding a layer is a new file here
//! plus one line in the `registry!` table below. [`build`] makes a pipeline from a resolved
//! configuration and the trace it will replay (some layers read the trace's model, goal or
//! boundary markers).

pub mod checkpoint;
pub mod clear;
pub mod compact;
pub mod condense;
pub mod cost_ceiling;
pub mod emergency;
pub mod evict;
pub(crate) mod evict_user;
mod fold;
pub mod preview;
pub mod summarize;
pub mod trim;
pub mod truncate;
pub mod truncate_args;
pub mod watchdog;

use super::layer::Layer;
use super::layer_config::Trigger;
use super::resolve::ResolvedConfig;
use crate::confcore::ConfigError;
use crate::trace::{ContextMarker, TraceMeta};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

/// A message from the user that starts a turn: a user message that is not harness output
/// (`meta`, observations, format errors, demos, compaction summaries…); simulated users
/// (`user_simulator`) count. A message the user typed while the agent worked (`queued`) is
/// human but starts no turn: the agent's turn goes on with it.
pub fn is_user_turn(m: &crate::trace::Message) -> bool {
    m.role == crate::trace::Role::User && matches!(m.kind.as_deref(), None | Some("user_simulator"))
}

/// What a layer's configuration type knows about itself: its name, its own checks, which
/// trigger follows context pressure, and how to build the layer. Like a tower layer it is a
/// value; like an inspect_ai compaction strategy it owns its parameters (the struct's fields,
/// `#[serde(deny_unknown_fields)]`, constrained values as `Trigger`/`Keep`/`Fraction`).
pub trait LayerSpec: Clone + Serialize + DeserializeOwned + Into<LayerConfig> {
    /// The table name in configuration files and the `layer` of its events.
    const NAME: &'static str;

    /// Checks the types cannot express (fractions are checked when deserialized).
    fn validate(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    /// The trigger that follows context pressure, which a model tier or an eval's trigger
    /// sweep moves (`resolve::set_compaction_trigger`); `None` for layers without one.
    fn compaction_trigger(&mut self) -> Option<&mut Trigger> {
        None
    }

    /// Whether that trigger follows the trace model's tier (core-agent); `None` for layers
    /// without the option. See `resolve::apply_model_tier`.
    fn tier_from_model(&mut self) -> Option<&mut bool> {
        None
    }

    /// The layer for one trace.
    fn build(&self, ctx: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError>;
}

/// What a layer may read of the trace it will replay when it is built.
pub struct BuildCtx<'a> {
    pub meta: &'a TraceMeta,
    pub markers: &'a [ContextMarker],
    pub messages: &'a [std::sync::Arc<crate::trace::Message>],
    /// `None`: the bundled table (see [`BuildCtx::prices`]).
    pub prices: Option<&'a crate::pricing::PriceTable>,
    /// `[engine] agent_model`: the model that prices the agent's views (default: the trace's).
    pub agent_model: Option<&'a str>,
}

impl<'a> BuildCtx<'a> {
    /// The run's prices, else the bundled table (parsed on first use).
    pub fn prices(&self) -> &'a crate::pricing::PriceTable {
        match self.prices {
            Some(p) => p,
            None => crate::pricing::PriceTable::bundled(),
        }
    }
}

/// A deserialization error carrying the key path inside the layer's table.
pub type PathError = serde_path_to_error::Error<serde_json::Error>;

/// One registered layer: its name and how to read its configuration from a table (a
/// preset's layer with the suite's or `--set` overrides merged in). Validation and building
/// go through the parsed [`LayerConfig`] to the type's [`LayerSpec`].
#[derive(Clone, Copy)]
pub struct LayerEntry {
    pub name: &'static str,
    pub parse: fn(Value) -> Result<LayerConfig, PathError>,
}

fn parse_as<T: LayerSpec>(v: Value) -> Result<LayerConfig, PathError> {
    serde_path_to_error::deserialize::<_, T>(v).map(Into::into)
}

impl LayerEntry {
    const fn of<T: LayerSpec>() -> LayerEntry {
        LayerEntry {
            name: T::NAME,
            parse: parse_as::<T>,
        }
    }
}

/// The registry entry called `name`.
pub fn entry(name: &str) -> Option<&'static LayerEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Generates, from the table below, [`LayerConfig`] (one variant per layer, named like its
/// config type), [`REGISTRY`] and the dispatch of [`LayerConfig`]'s methods to [`LayerSpec`].
macro_rules! registry {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        /// One configured layer, in pipeline order.
        #[derive(Clone, Debug, PartialEq)]
        pub enum LayerConfig {
            $($ty($module::$ty),)*
        }

        $(impl From<$module::$ty> for LayerConfig {
            fn from(c: $module::$ty) -> LayerConfig {
                LayerConfig::$ty(c)
            }
        })*

        /// Every layer, in the order `--set` and error messages list them.
        pub const REGISTRY: &[LayerEntry] = &[$(LayerEntry::of::<$module::$ty>(),)*];

        impl LayerConfig {
            /// The layer's name: its table name in config files and its `layer` in events.
            pub fn name(&self) -> &'static str {
                match self {
                    $(LayerConfig::$ty(_) => <$module::$ty as LayerSpec>::NAME,)*
                }
            }

            /// The configuration as a table (what overrides merge into).
            pub fn to_value(&self) -> Value {
                match self {
                    $(LayerConfig::$ty(c) => serde_json::to_value(c),)*
                }
                .unwrap_or(Value::Null)
            }

            /// The layer's own checks ([`LayerSpec::validate`]).
            pub fn validate(&self) -> Result<(), ConfigError> {
                match self {
                    $(LayerConfig::$ty(c) => c.validate(),)*
                }
            }

            /// [`LayerSpec::compaction_trigger`].
            pub fn compaction_trigger(&mut self) -> Option<&mut Trigger> {
                match self {
                    $(LayerConfig::$ty(c) => c.compaction_trigger(),)*
                }
            }

            /// [`LayerSpec::tier_from_model`].
            pub fn tier_from_model(&mut self) -> Option<&mut bool> {
                match self {
                    $(LayerConfig::$ty(c) => c.tier_from_model(),)*
                }
            }

            /// [`LayerSpec::build`].
            pub fn build(&self, ctx: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
                match self {
                    $(LayerConfig::$ty(c) => c.build(ctx),)*
                }
            }
        }
    };
}

// The registry: one line per layer (`module::ConfigType`, the module declared above), in the
// order `--set` and error messages list them. A layer is added here and nowhere else (see
// docs/engine.md); `tests` checks that every layer file is registered.
registry! {
    evict::EvictToolResults,
    evict_user::EvictUserMessages,
    truncate_args::TruncateArgs,
    summarize::Summarize,
    clear::ClearToolResults,
    truncate::Truncate,
    emergency::Emergency,
    trim::TurnTrim,
    checkpoint::Checkpoint,
    watchdog::Watchdog,
    cost_ceiling::CostCeiling,
    condense::Condense,
    compact::Compact,
}

/// Build the layer pipeline of a resolved configuration for `trace` (loads prompt files).
/// Layers whose trigger follows the trace model's tier get it here
/// ([`super::resolve::apply_model_tier`]).
pub fn build(
    config: &ResolvedConfig,
    meta: &TraceMeta,
    markers: &[ContextMarker],
    messages: &[std::sync::Arc<crate::trace::Message>],
    prices: Option<&crate::pricing::PriceTable>,
) -> Result<Vec<Box<dyn Layer>>, ConfigError> {
    let ctx = BuildCtx {
        meta,
        markers,
        messages,
        prices,
        agent_model: config.agent_model.as_deref(),
    };
    let mut layers = config.layers.clone();
    super::resolve::apply_model_tier(&mut layers, meta.model.as_deref());
    layers.iter().map(|l| l.build(&ctx)).collect()
}
