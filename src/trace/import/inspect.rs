//! Inspect AI eval logs → one canonical trace per sample and epoch (id
//! `<stem>__<sample id>_epoch_<n>`).
//!
//! Two files: the `.json` log (`{version, eval, plan, results, stats, samples: [...]}`) and the
//! `.eval` log, a zip archive holding `header.json` (the same minus `samples`) and one
//! `samples/<id>_epoch_<n>.json` per sample (recognised by its bytes, `PK\3\4`, never by its
//! name). A bare sample (`{id, epoch, input, messages, …}`, e.g. extracted from an archive) is
//! read too.
//!
//! A sample's `messages` is a chat history: roles `system`/`user`/`assistant`/`tool`; content a
//! string or a list of parts (`text`; `reasoning` parts → reasoning, never text; images and
//! other media as `[type]`); assistant `tool_calls` are `{id, function: "<name>", arguments:
//! {…}}` (the name is a string, the arguments an object); a tool message carries `tool_call_id`,
//! `function` and `error` (→ `is_error`; a failed call's result is the error's message, which
//! the model got in place of the content: `failed_tool_text`). Content stored as `attachment://<hash>` is resolved
//! from the sample's `attachments`. Per-call usage comes from the sample's `model` events
//! (`output.usage`, matched to the assistant message by `output.choices[0].message.id`, else in
//! order): `input_tokens` includes the cache reads for OpenAI models but not for Anthropic ones,
//! told apart by `total_tokens`. A refusal (an assistant text part flagged `refusal: true`) is
//! the message's text, with a warning; a model event whose `output.choices[i].stop_reason` is
//! `"content_filter"`, `"max_tokens"` or `"model_length"` is warned of (the sample's `output`
//! when it has no model event), and the message of a call that failed (`output.error`: Inspect
//! records the API's error as its content) is `kind: "api_error"`. `eval.model` → model; the first score → outcome (`C`/`I` →
//! success, a number → reward).

use super::detect::{arr_of, Shape};
use super::json::{content_text, part_text, Node, Res};
use super::openai::{content_filter_warning, refusal_warning, token_limit_warning};
use super::{tool_calls, CallShape, Calls, Importer, Input, Located};
use crate::trace::model::{Message, Outcome, SourceFormat, Trace, TraceMeta, Usage};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// Inspect logs: `{eval: {…}, samples: [...]}` (or a header `{eval, plan, …}` alone), or one
/// sample `{id, epoch, input, messages}`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Inspect,
    detect: |shape| shape.object().is_some_and(|o| is_log(o) || is_sample(o)),
    import,
};

fn is_log(o: &Map<String, Value>) -> bool {
    o.get("eval").is_some_and(|e| e.get("task").is_some() || e.get("eval_id").is_some())
        && (arr_of(o, "samples").is_some() || o.contains_key("plan") || o.contains_key("results"))
}

fn is_sample(o: &Map<String, Value>) -> bool {
    o.contains_key("epoch") && o.contains_key("input") && arr_of(o, "messages").is_some()
}

/// Is this shape an Inspect log (for callers outside detection)?
pub fn detects(shape: Shape<'_>) -> bool {
    (IMPORTER.detect)(shape)
}

pub fn import(input: &mut Input, stem: &str) -> Res<Vec<Trace>> {
    super::each_document_mut(input, stem, |v, path, id| {
        let root = Node::at(v, path.clone());
        root.obj()?;
        if root.has("samples") || root.has("eval") {
            let model = root.key("eval").key("model").opt_str()?.map(String::from);
            let samples = if root.key("samples").is_null() {
                Vec::new()
            } else {
                Node::take_items(v, path, "samples")?
            };
            samples
                .into_iter()
                .map(|(s, p)| sample(&Node::at(&s, p), id, model.as_deref()))
                .collect()
        } else {
            Ok(vec![sample(&root, id, None)?])
        }
    })
}

/// The traces of a `.eval` archive. Errors name the archive member.
pub fn import_zip(path: &Path, stem: &str) -> Res<Vec<Trace>> {
    let f = std::fs::File::open(path)
        .map_err(|e| Located::new("file", format!("cannot read the file: {e}")))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(f)).map_err(|e| {
        Located::new(
            "file",
            format!("a zip archive that cannot be read ({e}); expected an Inspect .eval log"),
        )
    })?;
    let mut names: Vec<String> = zip.file_names().map(String::from).collect();
    if !names.iter().any(|n| n == "header.json" || n.starts_with("samples/")) {
        names.truncate(5);
        return Err(Located::new(
            "file",
            format!(
                "a zip archive without header.json or samples/ (holds {}); expected an Inspect .eval log",
                names.join(", ")
            ),
        ));
    }
    let mut read = |name: &str| -> Res<Value> {
        let open = |e: zip::result::ZipError| {
            Located::new(name, format!("cannot open the archive member: {e}"))
        };
        let cannot = |e: std::io::Error| {
            Located::new(name, format!("cannot read the archive member: {e}"))
        };
        let idx = zip
            .index_for_name(name)
            .ok_or_else(|| Located::new(name, "the archive member is missing"))?;
        let mut bytes = Vec::new();
        // Inspect writes members with zstd (method 93) since 2025; the zip crate reads deflate,
        // and ruzstd (pure Rust) decodes zstd from the raw member.
        #[allow(deprecated)]
        let zstd = matches!(
            zip.by_index_raw(idx).map_err(open)?.compression(),
            zip::CompressionMethod::Unsupported(93)
        );
        if zstd {
            let raw = zip.by_index_raw(idx).map_err(open)?;
            let mut d = ruzstd::decoding::StreamingDecoder::new(raw).map_err(|e| {
                Located::new(name, format!("cannot read the archive member: zstd: {e}"))
            })?;
            d.read_to_end(&mut bytes).map_err(cannot)?;
        } else {
            zip.by_index(idx)
                .map_err(open)?
                .read_to_end(&mut bytes)
                .map_err(cannot)?;
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            let l = super::json_error(&e, None);
            Located::new(format!("{name}: {}", l.location), l.message)
        })
    };
    let model = if names.iter().any(|n| n == "header.json") {
        let h = read("header.json")?;
        Node::root(&h)
            .key("eval")
            .key("model")
            .opt_str()?
            .map(String::from)
    } else {
        None
    };
    let mut samples: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("samples/") && n.ends_with(".json"))
        .collect();
    // Sample order: by sample id then epoch, numerically where the names are numbers.
    samples.sort_by_key(|n| sample_key(n));
    let mut out = Vec::new();
    for name in samples {
        let v = read(name)?;
        let node = Node::at(&v, format!("{name}: $"));
        out.push(sample(&node, stem, model.as_deref())?);
    }
    Ok(out)
}

/// `samples/12_epoch_3.json` → (12, "12", 3) for numeric-aware ordering.
fn sample_key(name: &str) -> (u64, String, u64) {
    let base = name
        .trim_start_matches("samples/")
        .trim_end_matches(".json");
    let (id, epoch) = base.rsplit_once("_epoch_").unwrap_or((base, "0"));
    (
        id.parse().unwrap_or(u64::MAX),
        id.to_string(),
        epoch.parse().unwrap_or(0),
    )
}

/// One sample (and epoch) as a trace.
fn sample(s: &Node<'_>, stem: &str, model: Option<&str>) -> Res<Trace> {
    s.obj()?;
    let sid = s.key("id").scalar_text()?.unwrap_or_default();
    let epoch = s.key("epoch").opt_u64()?.unwrap_or(1);
    let mut meta = TraceMeta::new(format!("{stem}__{sid}_epoch_{epoch}"), SourceFormat::Inspect);
    meta.task_id = Some(sid);
    meta.model = model.map(String::from);
    meta.outcome = outcome(&s.key("scores"))?;
    let mut t = Trace::new(meta);
    let attachments = s.key("attachments");
    let resolve = |text: String| -> String {
        match text.strip_prefix("attachment://") {
            Some(h) => attachments
                .key(h)
                .v
                .as_str()
                .map(String::from)
                .unwrap_or(text),
            None => text,
        }
    };
    // Per-call usage from the model events, by output message id and in order.
    let mut by_id: HashMap<String, Usage> = HashMap::new();
    let mut in_order: Vec<Usage> = Vec::new();
    // The ids of the assistant messages Inspect recorded for a call that failed (`output.error`).
    let mut failed: std::collections::HashSet<String> = Default::default();
    // Whether each model event's call failed, in order: for assistant messages without an id.
    let mut failed_in_order: Vec<bool> = Vec::new();
    let mut model_events = 0usize;
    for e in s.key("events").opt_items()? {
        if e.key("event").v.as_str() != Some("model") {
            continue;
        }
        model_events += 1;
        let out = e.key("output");
        stop_warnings(&out, &mut t.meta.warnings)?;
        if out.has("error") {
            if let Some(id) = out.key("choices").idx(0).key("message").key("id").v.as_str() {
                failed.insert(id.to_string());
            }
        }
        failed_in_order.push(out.has("error"));
        if let Some(u) = usage(&out.key("usage"))? {
            if let Some(id) = out.key("choices").idx(0).key("message").key("id").v.as_str() {
                by_id.insert(id.to_string(), u);
            }
            in_order.push(u);
        }
        if t.meta.model.is_none() {
            t.meta.model = e.key("model").v.as_str().map(String::from);
        }
    }
    // Without model events (a log written without them), the sample's `output` is its last
    // call's output: its stop reason is all the log says.
    // Its `error`, when the call failed, is the last assistant message's (by its id, else the
    // last one).
    let mut last_failed = false;
    if model_events == 0 {
        let out = s.key("output");
        stop_warnings(&out, &mut t.meta.warnings)?;
        if out.has("error") {
            match out.key("choices").idx(0).key("message").key("id").v.as_str() {
                Some(id) => {
                    failed.insert(id.to_string());
                }
                None => last_failed = true,
            }
        }
    }
    let generated = s
        .key("messages")
        .opt_items()?
        .iter()
        .filter(|m| m.key("role").v.as_str() == Some("assistant"))
        .count();
    let order_usable = by_id.is_empty() && in_order.len() == generated;
    // A model event a message: the k-th assistant message without an id is the k-th call's.
    let failed_order_usable = failed_in_order.len() == generated;
    let mut calls = Calls::default();
    let mut k = 0usize;
    for m in s.key("messages").items()? {
        m.obj()?;
        let (text, reasoning) = parts(&m.key("content"), &mut t.meta.warnings)?;
        let text = resolve(text);
        let msg = match m.key("role").str()? {
            "system" => Message::system(text),
            "user" => Message::user(text),
            "assistant" => {
                // A refusal is a text part flagged `refusal: true` (Inspect's OpenAI provider
                // writes the response's `refusal` so): kept as text, warned of.
                let content = m.key("content");
                if content.v.is_array() {
                    for p in content.items()? {
                        if p.key("refusal").v.as_bool() == Some(true) {
                            t.meta.warnings.push(refusal_warning(&p.path, "`refusal: true`"));
                        }
                    }
                }
                let shape = CallShape::Flat {
                    id: "id",
                    name: "function",
                };
                let tc = tool_calls(&m.key("tool_calls"), shape, &mut calls, &mut t.meta.warnings)?
                    .into_iter()
                    .map(|(_, c)| c)
                    .collect();
                let mut a = Message::assistant(text, tc);
                a.reasoning = reasoning;
                let call_failed = match m.key("id").v.as_str() {
                    Some(id) => failed.contains(id),
                    None if failed_order_usable => failed_in_order[k],
                    None => last_failed && k + 1 == generated,
                };
                if call_failed {
                    a.kind = Some("api_error".into());
                }
                a.usage = match m.key("id").v.as_str().and_then(|id| by_id.get(id)) {
                    Some(u) => Some(*u),
                    None if order_usable => in_order.get(k).copied(),
                    None => None,
                };
                k += 1;
                a
            }
            "tool" => {
                let recorded = m.key("tool_call_id").opt_str()?;
                let (id, name) =
                    calls.answer_or_warn(recorded, &m.path, &mut t.meta.warnings);
                let name = m.key("function").opt_str()?.map(String::from).unwrap_or(name);
                let text = failed_tool_text(&m.key("error"), text, &mut t.meta.warnings)?;
                let mut r = Message::tool(id, name, text);
                r.is_error = m.has("error");
                r
            }
            other => {
                return Err(m.key("role").error(format!(
                    "expected \"system\", \"user\", \"assistant\" or \"tool\", found {other}", other = crate::output::quoted(other)
                )))
            }
        };
        t.messages.push(msg);
    }
    Ok(t)
}

/// The warnings for the stop reasons of a model output (`output.choices[i].stop_reason`,
/// Inspect's `StopReason`): a content filter (`content_filter`), the output token limit
/// (`max_tokens`) and a context window exceeded (`model_length`) cut the answer short or
/// replaced it. For `model_length`, and whenever a call failed, Inspect records the API's error
/// (`output.error`) as the message's content (`_providers/anthropic.py`:
/// `ModelOutput.from_content(…, content=ex.message, stop_reason="model_length", error=…)`):
/// that message is marked `kind: "api_error"` by the caller.
fn stop_warnings(out: &Node<'_>, warnings: &mut Vec<String>) -> Res<()> {
    for c in out.key("choices").opt_items()? {
        let stop = c.key("stop_reason");
        match stop.v.as_str() {
            Some("content_filter") => warnings.push(content_filter_warning(&stop)),
            Some(r @ "max_tokens") => warnings.push(token_limit_warning(&stop, r)),
            Some("model_length") => warnings.push(format!(
                "{}: the model call's input exceeded the model's context window \
                 (\"model_length\"): the message is what Inspect recorded in place of an answer \
                 (the API's error, when the call failed)",
                stop.path
            )),
            _ => {}
        }
    }
    Ok(())
}

/// The text the model got for a tool call: a call that failed (`error: {type, message}`, a
/// `ToolCallError`) is sent as its error's message, not its content. Every provider of Inspect
/// does so (`model/_openai.py`: `f"Error: {message.error.message}" if message.error else
/// message.text`; `_providers/anthropic.py`: `content = message.error.message`, the text when
/// that is empty; `_providers/google.py` and `_openai_responses.py` likewise), and the content
/// of a failed call is mostly empty (`_call_tools.py` keeps only a truncated output there). A
/// non-empty content the model did not get is warned of.
fn failed_tool_text(error: &Node<'_>, content: String, warnings: &mut Vec<String>) -> Res<String> {
    if error.is_null() {
        return Ok(content);
    }
    let message = error.key("message");
    let Some(said) = message.opt_str()?.filter(|m| !m.is_empty()) else {
        return Ok(content);
    };
    if !content.is_empty() && content != said {
        warnings.push(format!(
            "{}: the tool call failed ({}): its result is the error's message, which Inspect \
             sends the model in place of the content; the content ({} characters) was not sent \
             and is not in the trace",
            message.path,
            error
                .key("type")
                .opt_str()?
                .map_or_else(|| "error".to_string(), crate::output::quoted),
            content.chars().count()
        ));
    }
    Ok(said.to_string())
}

/// Content as (text, reasoning): reasoning parts apart, media as `[type]` placeholders (each
/// warned of in `warnings`).
fn parts(c: &Node<'_>, warnings: &mut Vec<String>) -> Res<(String, Option<String>)> {
    let Some(items) = c.v.as_array() else {
        return Ok((content_text(c, warnings)?, None));
    };
    let mut text = Vec::new();
    let mut reasoning = Vec::new();
    for i in 0..items.len() {
        let p = c.idx(i);
        match p.key("type").opt_str()? {
            Some("reasoning") => {
                let r = p.key("reasoning").opt_str()?.unwrap_or("");
                let summary = p.key("summary").opt_str()?.unwrap_or("");
                // Redacted reasoning holds an opaque blob: its summary is the readable part.
                let redacted = p.key("redacted").opt_bool()? == Some(true);
                let keep = if redacted || r.is_empty() { summary } else { r };
                if !keep.is_empty() {
                    reasoning.push(keep.to_string());
                }
            }
            _ => text.push(part_text(&p, warnings)?),
        }
    }
    let r = if reasoning.is_empty() {
        None
    } else {
        Some(reasoning.join("\n"))
    };
    Ok((text.join("\n"), r))
}

/// Inspect `ModelUsage`. `input_tokens` includes cache reads when `total_tokens` is input +
/// output (OpenAI); otherwise the cache tokens are disjoint (Anthropic) and are added.
fn usage(u: &Node<'_>) -> Res<Option<Usage>> {
    if u.is_null() {
        return Ok(None);
    }
    u.obj()?;
    let input = u.key("input_tokens").opt_u64()?.unwrap_or(0);
    let output = u.key("output_tokens").opt_u64()?.unwrap_or(0);
    let cache_read = u.key("input_tokens_cache_read").opt_u64()?.unwrap_or(0);
    let cache_write = u.key("input_tokens_cache_write").opt_u64()?.unwrap_or(0);
    let total = u.key("total_tokens").opt_u64()?;
    let disjoint = cache_read + cache_write > 0
        && total == Some(input + output + cache_read + cache_write);
    Ok(Some(Usage {
        input: if disjoint {
            input + cache_read + cache_write
        } else {
            input
        },
        output,
        cache_read,
        cache_write,
    }))
}

/// The first score: `C`/`I` (Inspect's CORRECT/INCORRECT) → success, a number → reward.
fn outcome(scores: &Node<'_>) -> Res<Option<Outcome>> {
    let Some(o) = scores.v.as_object() else {
        return Ok(None);
    };
    let Some((_, first)) = o.iter().next() else {
        return Ok(None);
    };
    let value = first.get("value").unwrap_or(&Value::Null);
    Ok(match value {
        Value::String(s) if s == "C" || s == "I" => Some(Outcome {
            success: Some(s == "C"),
            reward: None,
            status: None,
        }),
        Value::Number(n) => Some(Outcome {
            success: None,
            reward: n.as_f64(),
            status: None,
        }),
        Value::Bool(b) => Some(Outcome {
            success: Some(*b),
            reward: None,
            status: None,
        }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn log() -> Value {
        json!({"version": 2, "eval": {"task": "t", "model": "openai/gpt-4o"}, "samples": [
            {"id": 1, "epoch": 1, "input": "go", "scores": {"includes": {"value": "C"}},
             "messages": [
                {"id": "u", "role": "user", "content": "go"},
                {"id": "a1", "role": "assistant", "content": [{"type": "reasoning", "reasoning": "think"}, {"type": "text", "text": "ok"}],
                 "tool_calls": [{"id": "c1", "function": "bash", "arguments": {"cmd": "ls"}}]},
                {"id": "r", "role": "tool", "tool_call_id": "c1", "function": "bash", "content": "attachment://h1", "error": null}],
             "attachments": {"h1": "file.txt"},
             "events": [{"event": "model", "model": "gpt-4o", "output": {"choices": [{"message": {"id": "a1"}}],
                 "usage": {"input_tokens": 100, "output_tokens": 5, "total_tokens": 105, "input_tokens_cache_read": 40}}}]},
            {"id": 1, "epoch": 2, "input": "go", "messages": [{"role": "user", "content": "go"}]}
        ]})
    }

    /// A refusal (a text part flagged `refusal: true`, as Inspect's OpenAI provider writes the
    /// response's `refusal`) is kept as the message's text with a warning, and a model call a
    /// content filter stopped (`stop_reason: "content_filter"`) is warned of: both read as
    /// ordinary answers before.
    #[test]
    fn refusals_and_content_filter_stops_are_warned_of() {
        let v = json!({"id": 3, "epoch": 1, "input": "go", "messages": [
            {"id": "u", "role": "user", "content": "how do I pick a lock?"},
            {"id": "a1", "role": "assistant", "content": [
                {"type": "text", "text": "I can't help with that.", "refusal": true}]},
            {"id": "u2", "role": "user", "content": "why?"},
            {"id": "a2", "role": "assistant", "content": [{"type": "text", "text": "Because", "refusal": null}]}],
            "events": [
                {"event": "model", "output": {"choices": [{"message": {"id": "a1"}, "stop_reason": "stop"}]}},
                {"event": "model", "output": {"choices": [{"message": {"id": "a2"}, "stop_reason": "content_filter"}]}}]});
        let t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        assert_eq!(t.messages[1].content, "I can't help with that.");
        assert_eq!(t.messages[3].content, "Because");
        assert_eq!(
            t.meta.warnings,
            [
                "$.events[1].output.choices[0].stop_reason: the model's output was stopped by a \
                 content filter (\"content_filter\"): the message is the text it produced before \
                 it stopped",
                "$.messages[1].content[0]: the model refused (`refusal: true`): the message is \
                 the refusal's text"
            ]
        );
    }

    #[test]
    fn samples_calls_attachments_usage() {
        let ts = import(&mut Input::Json(log()), "log").unwrap();
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[0].meta.id, "log__1_epoch_1");
        assert_eq!(ts[1].meta.id, "log__1_epoch_2");
        let t = &ts[0];
        let a = &t.messages[1];
        assert_eq!((a.content.as_str(), a.reasoning.as_deref()), ("ok", Some("think")));
        assert_eq!(a.tool_calls[0].name, "bash");
        assert_eq!(a.tool_calls[0].arguments, json!({"cmd": "ls"}));
        assert_eq!(a.usage.unwrap().input, 100, "OpenAI input includes the cache");
        assert_eq!(t.messages[2].content, "file.txt");
        assert_eq!(t.messages[2].name.as_deref(), Some("bash"));
        assert!(!t.messages[2].is_error);
        assert_eq!(t.meta.model.as_deref(), Some("openai/gpt-4o"));
        assert_eq!(t.meta.outcome.as_ref().unwrap().success, Some(true));
        assert!(detects(Shape::Object(log().as_object().unwrap())));
    }

    /// A tool call that failed is the error's message the model got, not the content (empty,
    /// or a truncated output the model did not get): the shape of Inspect's own test log
    /// `tests/log/test_eval_log/log_tool_call_error.json` (an `output_limit` error beside the
    /// truncated output). Before, the trace held the content: an empty result, or text the
    /// model never saw.
    #[test]
    fn a_failed_tool_call_is_its_error_message() {
        let v = json!({"id": 1, "epoch": 1, "input": "go", "messages": [
            {"role": "user", "content": "go"},
            {"id": "a1", "role": "assistant", "content": "", "tool_calls": [
                {"id": "bash_1", "function": "bash", "arguments": {"cmd": "sleep 999"}},
                {"id": "bash_2", "function": "bash", "arguments": {"cmd": "cat big"}},
                {"id": "bash_3", "function": "bash", "arguments": {"cmd": "ls"}}]},
            {"role": "tool", "tool_call_id": "bash_1", "function": "bash", "content": "",
             "error": {"type": "timeout", "message": "Command timed out before completing."}},
            {"role": "tool", "tool_call_id": "bash_2", "function": "bash",
             "content": "<START_TOOL_OUTPUT>\nx\n<END_TOOL_OUTPUT>\n",
             "error": {"type": "output_limit", "message": "The tool output limit of 10 MiB was exceeded."}},
            {"role": "tool", "tool_call_id": "bash_3", "function": "bash", "content": "a.txt", "error": null}]});
        let t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        let got: Vec<(&str, bool)> = t.messages[2..]
            .iter()
            .map(|m| (m.content.as_str(), m.is_error))
            .collect();
        assert_eq!(
            got,
            [
                ("Command timed out before completing.", true),
                ("The tool output limit of 10 MiB was exceeded.", true),
                ("a.txt", false)
            ]
        );
        assert_eq!(
            t.meta.warnings,
            ["$.messages[3].error.message: the tool call failed (\"output_limit\"): its result \
              is the error's message, which Inspect sends the model in place of the content; the \
              content (40 characters) was not sent and is not in the trace"]
        );
    }

    /// A call the output token limit stopped (`max_tokens`) and one whose input exceeded the
    /// context window (`model_length`, whose message is the API's error Inspect recorded,
    /// `output.error`: marked `kind: "api_error"`) are warned of, in the model events, or, when
    /// the sample has none, in its `output`. Before, only `content_filter` was.
    #[test]
    fn token_limit_and_context_window_stops_are_warned_of() {
        let v = json!({"id": 4, "epoch": 1, "input": "go", "messages": [
            {"id": "u", "role": "user", "content": "go"},
            {"id": "a1", "role": "assistant", "content": "The answer is"},
            {"id": "u2", "role": "user", "content": "more"},
            {"id": "a2", "role": "assistant", "content": "prompt is too long: 210000 tokens > 200000 maximum"}],
            "events": [
                {"event": "model", "output": {"choices": [{"message": {"id": "a1"}, "stop_reason": "max_tokens"}]}},
                {"event": "model", "output": {"error": "prompt is too long: 210000 tokens > 200000 maximum",
                    "choices": [{"message": {"id": "a2"}, "stop_reason": "model_length"}]}}]});
        let t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        assert_eq!(t.messages[1].kind, None);
        assert_eq!(t.messages[3].kind.as_deref(), Some("api_error"));
        assert_eq!(
            t.meta.warnings,
            [
                "$.events[0].output.choices[0].stop_reason: the model's output was stopped at its \
                 output token limit (\"max_tokens\"): the message is the text it produced before it \
                 stopped",
                "$.events[1].output.choices[0].stop_reason: the model call's input exceeded the \
                 model's context window (\"model_length\"): the message is what Inspect recorded \
                 in place of an answer (the API's error, when the call failed)"
            ]
        );
        // No model event: the sample's output says how its last call stopped.
        let v = json!({"id": 5, "epoch": 1, "input": "go", "messages": [
            {"role": "user", "content": "go"}, {"role": "assistant", "content": "cut"}],
            "output": {"choices": [{"message": {"role": "assistant", "content": "cut"}, "stop_reason": "max_tokens"}]}});
        let t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        assert_eq!(
            t.meta.warnings,
            ["$.output.choices[0].stop_reason: the model's output was stopped at its output token \
              limit (\"max_tokens\"): the message is the text it produced before it stopped"]
        );
        assert_eq!(t.messages[1].kind, None);
    }

    /// The message Inspect recorded for a failed call (`output.error`) is `api_error` also when
    /// the sample has no model event (its `output` is the last call's) and when messages have
    /// no ids (a model event a message, in order). Before, only an id in a model event was.
    #[test]
    fn a_failed_calls_message_is_an_api_error_without_ids_or_events() {
        let err = "prompt is too long: 210000 tokens > 200000 maximum";
        let v = json!({"id": 6, "epoch": 1, "input": "go", "messages": [
            {"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "more"}, {"role": "assistant", "content": err}],
            "output": {"error": err, "choices": [{"message": {"role": "assistant", "content": err}, "stop_reason": "model_length"}]}});
        let t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        assert_eq!(t.messages[1].kind, None);
        assert_eq!(t.messages[3].kind.as_deref(), Some("api_error"));
        let v = json!({"id": 7, "epoch": 1, "input": "go", "messages": [
            {"role": "user", "content": "go"}, {"role": "assistant", "content": err},
            {"role": "user", "content": "again"}, {"role": "assistant", "content": "done"}],
            "events": [
                {"event": "model", "output": {"error": err, "choices": [{"message": {"role": "assistant"}, "stop_reason": "model_length"}]}},
                {"event": "model", "output": {"choices": [{"message": {"role": "assistant"}, "stop_reason": "stop"}]}}]});
        let t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        assert_eq!(t.messages[1].kind.as_deref(), Some("api_error"));
        assert_eq!(t.messages[3].kind, None);
    }

    #[test]
    fn anthropic_usage_adds_the_disjoint_cache() {
        let u = json!({"input_tokens": 10, "output_tokens": 5, "input_tokens_cache_read": 100,
            "input_tokens_cache_write": 20, "total_tokens": 135});
        assert_eq!(usage(&Node::root(&u)).unwrap().unwrap().input, 130);
    }

    #[test]
    fn zip_archives_read_header_and_samples() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.eval");
        let mut z = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        let mut l = log();
        let samples = l["samples"].take();
        l.as_object_mut().unwrap().remove("samples");
        z.start_file("header.json", opts).unwrap();
        z.write_all(l.to_string().as_bytes()).unwrap();
        for (i, s) in samples.as_array().unwrap().iter().enumerate().rev() {
            z.start_file(format!("samples/1_epoch_{}.json", i + 1), opts).unwrap();
            z.write_all(s.to_string().as_bytes()).unwrap();
        }
        z.finish().unwrap();
        let from_zip = import_zip(&path, "log").unwrap();
        let from_json = import(&mut Input::Json(log()), "log").unwrap();
        assert_eq!(from_zip, from_json);
    }
}
