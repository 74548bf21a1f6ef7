//! `ctxbench schema KIND`: print the JSON Schema of a file ctxbench reads or writes, generated
//! from the Rust types that read or write it (so it cannot drift from the files).

use serde_json::Value;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Examples:
  ctxbench schema trace > trace.schema.json       # one line of a canonical trace JSONL file
  ctxbench schema suite > suite.schema.json       # suite.toml (e.g. for taplo / Even Better TOML)
  ctxbench schema sample > sample.schema.json     # one line of RUN/samples.jsonl
  ctxbench schema summary                         # RUN/summary.json
  ctxbench schema compare                         # compare.json of `ctxbench compare`
  ctxbench schema engine-protocol                 # JSON lines of an external engine

In summary.json and compare.json a number that is not finite (a mean over no value) is written
as null; their schemas allow null wherever a number is expected.";

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Which file format to describe
    #[arg(value_enum)]
    pub kind: SchemaKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaKind {
    /// A canonical trace (one line of a ctxbench trace JSONL file)
    Trace,
    /// suite.toml
    Suite,
    /// One unit's result (one line of RUN/samples.jsonl)
    Sample,
    /// RUN/summary.json (the report model's statistics)
    Summary,
    /// compare.json written by `ctxbench compare`
    Compare,
    /// The external-engine protocol: the JSON lines ctxbench writes to an engine
    /// (`to_engine`) and those it reads back (`from_engine`); see docs/engines.md
    EngineProtocol,
}

/// The schema of `kind` as JSON.
pub fn schema(kind: SchemaKind) -> Value {
    let (schema, non_finite_as_null) = match kind {
        SchemaKind::Trace => (schemars::schema_for!(crate::trace::TraceLine), false),
        SchemaKind::Suite => (crate::config::suite::schema(), false),
        SchemaKind::Sample => (schemars::schema_for!(crate::record::Sample), false),
        SchemaKind::Summary => (crate::report::json::schema(), true),
        SchemaKind::Compare => (super::compare::schema(), true),
        SchemaKind::EngineProtocol => (crate::engine::external::protocol::schema(), false),
    };
    let mut v = schema.to_value();
    if non_finite_as_null {
        allow_null_numbers(&mut v);
    }
    v
}

/// Every `"type": "number"` becomes `["number", "null"]` (the writers turn NaN and infinities
/// into `null`).
fn allow_null_numbers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            match map.get_mut("type") {
                Some(t) if t == "number" => *t = serde_json::json!(["number", "null"]),
                Some(Value::Array(types))
                    if types.iter().any(|t| t == "number")
                        && !types.iter().any(|t| t == "null") =>
                {
                    types.push(Value::from("null"))
                }
                _ => {}
            }
            for (_, child) in map.iter_mut() {
                allow_null_numbers(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(allow_null_numbers),
        _ => {}
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let text = serde_json::to_string_pretty(&schema(args.kind))?;
    // `ctxbench schema sample | head` closes the pipe early: not an error.
    super::emit_json(&format!("{text}\n"))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_numbers_may_be_null_and_sample_numbers_not() {
        let summary = schema(SchemaKind::Summary).to_string();
        assert!(!summary.contains(r#""type":"number""#), "{summary}");
        assert!(summary.contains(r#""type":["number","null"]"#));
        let sample = schema(SchemaKind::Sample).to_string();
        assert!(sample.contains(r#""type":"number""#));
        let mut v =
            serde_json::json!({"a": {"type": ["number", "integer"]}, "b": [{"type": "number"}]});
        allow_null_numbers(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": {"type": ["number", "integer", "null"]}, "b": [{"type": ["number", "null"]}]})
        );
    }
}
