//! Layer `watchdog` (core-agent's repeated-tool-call signal): watches the stream of tool calls
//! as assistant messages arrive; when the same tool with literally identical arguments (the
//! serialized JSON) appears `threshold` times in a row, one `watchdog` alert is emitted for that
//! run — not one per further repeat. `a → b → a → b → a` never trips. Observes only: the
//! context is not changed.

use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::event::EventDetail;
use crate::engine::layer::{Layer, MessageCtx};

use crate::engine::EngineError;
use crate::trace::Role;
use serde::{Deserialize, Serialize};

/// Watchdog (core-agent): the same tool with literally identical arguments `threshold` times in
/// a row → one `watchdog` alert per run. Observes only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Watchdog {
    pub threshold: usize,
}

impl LayerSpec for Watchdog {
    const NAME: &'static str = "watchdog";

    fn validate(&self) -> Result<(), ConfigError> {
        if self.threshold < 2 {
            return Err(err("watchdog.threshold", "must be >= 2"));
        }
        Ok(())
    }

    fn build(&self, _: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        Ok(Box::new(WatchdogLayer::new(self.clone())))
    }
}

pub struct WatchdogLayer {
    cfg: Watchdog,
    /// (tool, serialized arguments) of the current run.
    last: Option<(String, String)>,
    run: usize,
    /// Assistant index of the run's first call.
    run_start: usize,
    alerted: bool,
}

impl WatchdogLayer {
    pub fn new(cfg: Watchdog) -> Self {
        WatchdogLayer {
            cfg,
            last: None,
            run: 0,
            run_start: 0,
            alerted: false,
        }
    }
}

impl Layer for WatchdogLayer {
    fn name(&self) -> &'static str {
        "watchdog"
    }

    fn on_message(&mut self, ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        let msg = ctx.state.get(ctx.index).msg.clone();
        if msg.role != Role::Assistant {
            return Ok(());
        }
        for call in &msg.tool_calls {
            let key = (call.name.clone(), call.arguments.to_string());
            if self.last.as_ref() == Some(&key) {
                self.run += 1;
            } else {
                self.last = Some(key);
                self.run = 1;
                self.run_start = ctx.index;
                self.alerted = false;
            }
            if self.run >= self.cfg.threshold && !self.alerted {
                self.alerted = true;
                let (tool, arguments) = self.last.clone().unwrap_or_default();
                let detail = EventDetail::Watchdog {
                    tool,
                    arguments,
                    repeats: self.run,
                    first_index: self.run_start,
                };
                ctx.emit(self.name(), detail);
            }
        }
        Ok(())
    }
}
