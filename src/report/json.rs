//! `summary.json`: the report model's statistics (no raw samples) plus the run's identity.
//!
//! Shape: `{schema_version, run: {run_id, created, ctxbench_version, providers, variants,
//! baseline, seed}, summary: ReportModel}`. Non-finite numbers are written as `null`.

use super::model::ReportModel;
use crate::record::RunInfo;
use serde::Serialize;

#[derive(Serialize, schemars::JsonSchema)]
struct RunHeader<'a> {
    run_id: &'a str,
    created: &'a str,
    ctxbench_version: &'a str,
    providers: &'a [crate::record::ProviderProvenance],
    variants: &'a [String],
    baseline: Option<&'a str>,
    seed: u64,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Summary<'a> {
    schema_version: u32,
    run: RunHeader<'a>,
    summary: &'a ReportModel,
}

/// JSON Schema of `summary.json`, generated from the types it is written from (numbers that
/// may be non-finite are written as `null`: `ctxbench schema summary` allows it).
pub fn schema() -> schemars::Schema {
    schemars::schema_for!(Summary<'static>)
}

/// Render `summary.json` (pretty-printed, trailing newline).
pub fn render(info: &RunInfo, model: &ReportModel) -> String {
    let doc = Summary {
        schema_version: crate::record::SCHEMA_VERSION,
        run: RunHeader {
            run_id: &info.run_id,
            created: &info.created,
            ctxbench_version: &info.ctxbench_version,
            providers: &info.providers,
            variants: &info.variants,
            baseline: info.baseline_variant(),
            seed: info.seed,
        },
        summary: model,
    };
    // Every field is a plain struct, string or number: serialization cannot fail.
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
