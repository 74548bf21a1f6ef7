//! τ-bench `historical_trajectories/*.json` → canonical traces: the file is an array of runs, one
//! trace per run with id `<stem>__task<task_id>_trial<trial>`.
//!
//! `traj` is OpenAI chat format (converted by `openai::convert`). τ-bench reuses `tool_call_id`s
//! within a run (two calls both `call_HGn16KZh…`): each tool message pairs with the most recent
//! open call of that id (the immediately preceding assistant call) and a reused id is rewritten
//! to a unique `<id>__<n>`, with a warning. The simulated user's hidden goal
//! `info.task.instruction` goes to `meta.instruction`; `reward` to the outcome (success means
//! reward 1). No usage is recorded by τ-bench.

use super::json::{Node, Res};
use super::openai;
use serde_json::Value;
use crate::trace::model::{Outcome, SourceFormat, Trace, TraceMeta};
use super::Importer;

/// τ-bench `historical_trajectories`: an array of `{task_id, traj}` runs.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Tau,
    detect: |shape| {
        shape
            .array_first()
            .is_some_and(|o| o.contains_key("task_id") && o.contains_key("traj"))
    },
    import: |input, stem| super::each_document_mut(input, stem, import_value),
};

pub fn import(root: &Node<'_>, stem: &str) -> Res<Vec<Trace>> {
    import_value(&mut root.v.clone(), root.path.clone(), stem)
}

/// Import the runs of the array `v` at `path`, moving each out and dropping it once converted.
pub fn import_value(v: &mut Value, path: String, stem: &str) -> Res<Vec<Trace>> {
    let runs = match v {
        Value::Array(a) => std::mem::take(a),
        _ => return Err(Node::at(v, path).expected("an array")),
    };
    let mut out = Vec::with_capacity(runs.len());
    for (i, r_value) in runs.into_iter().enumerate() {
        let r = Node::at(&r_value, format!("{path}[{i}]"));
        r.obj()?;
        let task = r.key("task_id").scalar_text()?;
        let trial = r.key("trial").scalar_text()?;
        let id = match (&task, &trial) {
            (Some(t), Some(n)) => format!("{stem}__task{t}_trial{n}"),
            (Some(t), None) => format!("{stem}__task{t}"),
            _ => format!("{stem}__run{}", out.len()),
        };
        let mut meta = TraceMeta::new(id, SourceFormat::Tau);
        meta.task_id = task;
        let info = r.key("info");
        meta.instruction = info
            .key("task")
            .key("instruction")
            .opt_str()?
            .map(String::from);
        if let Some(reward) = r.key("reward").opt_f64()? {
            meta.outcome = Some(Outcome {
                success: Some(reward >= 1.0),
                reward: Some(reward),
                status: None,
            });
        }
        let mut t = Trace::new(meta);
        openai::convert(&r.key("traj").items()?, &mut t)?;
        out.push(t);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reused_ids_are_rewritten_and_paired_with_the_preceding_call() {
        let call = |args: &str| {
            json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_X", "type": "function", "function": {"name": "get", "arguments": args}}]})
        };
        let runs = json!([{"task_id": 3, "trial": 1, "reward": 1.0,
            "info": {"task": {"instruction": "You are mia."}},
            "traj": [
                {"role": "system", "content": "policy"},
                {"role": "user", "content": "hi"},
                call("{\"a\":1}"),
                {"role": "tool", "tool_call_id": "call_X", "name": "get", "content": "one"},
                call("{\"a\":2}"),
                {"role": "tool", "tool_call_id": "call_X", "name": "get", "content": "two"}]}]);
        let t = import(&Node::root(&runs), "air").unwrap().remove(0);
        assert_eq!(t.meta.id, "air__task3_trial1");
        assert_eq!(t.messages[4].tool_calls[0].id, "call_X__2");
        assert_eq!(t.messages[5].tool_call_id.as_deref(), Some("call_X__2"));
        assert_eq!(t.messages[3].tool_call_id.as_deref(), Some("call_X"));
        assert_eq!(t.meta.warnings.len(), 1);
        assert_eq!(t.meta.instruction.as_deref(), Some("You are mia."));
        assert_eq!(t.meta.outcome.as_ref().unwrap().success, Some(true));
    }

    #[test]
    fn not_an_array_is_an_error() {
        let e = import(&Node::root(&json!({"a": 1})), "x").unwrap_err();
        assert_eq!(e.location, "$");
        assert!(e.message.starts_with("expected an array"));
    }
}
