//! The eval agent's tool loop: ask a provider a question over a (compacted) view, execute the
//! tool calls it makes against the sandboxed offload store, feed the results back, and stop at
//! a final answer or after `max_steps` model calls. Everything it did is kept as evidence.
//!
//! Time limits: each tool call that reads the disk runs on the blocking pool (never on an async
//! worker thread) and is abandoned with a model-visible error after the sandbox's `call_timeout`
//! plus a grace (a store held in memory is answered in place, under its own deadline); the
//! whole loop of one question stops after [`LOOP_TIME_LIMIT`] with a `timeout` error.

use super::fs_tools::{Sandbox, ToolOutput};
use crate::evalspec::Asking;
use crate::providers::{ChatRequest, Provider, ProviderError, ToolDef};
use crate::trace::Message;
use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// Wall-time limit of one question's whole tool loop (model calls and tool calls).
///
/// Decision: 30 minutes, not configurable yet. It is far above what a healthy loop takes (each
/// model call already has its own per-call timeout and retry budget) and exists so that no
/// needle or probe question can keep a unit alive forever.
pub const LOOP_TIME_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Added to the sandbox's own per-call limit before a tool call is abandoned from outside (the
/// sandbox normally stops itself first and says so).
const TOOL_CALL_GRACE: Duration = Duration::from_secs(2);

/// One tool call the agent made, with what it got back (cut for the evidence file).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolUse {
    pub name: String,
    pub arguments: serde_json::Value,
    pub is_error: bool,
    /// First characters of the result.
    pub result_head: String,
}

/// What one question cost and produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoopOutcome {
    /// The final answer text ("" when the step limit was hit first).
    pub answer: String,
    /// Model calls made.
    pub steps: u32,
    pub tool_uses: Vec<ToolUse>,
    /// Virtual paths of store files whose contents a tool returned.
    pub files_read: BTreeSet<String>,
    /// Usage of each of the agent's calls (input includes cached); serialized as their sum.
    pub usage: crate::pricing::Calls,
    /// Model id the provider reported.
    pub model: String,
    /// True when `max_steps` ran out before a final answer.
    pub hit_step_limit: bool,
    /// The API's finish reason of the last call (`stop`, `end_turn`, `tool_calls`…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Output tokens the calls spent on hidden reasoning, where the API reports them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Calls whose server reported far fewer prompt tokens than were sent (a prompt cut to the
    /// server's context without an error: `ChatResponse::prompt_truncated`).
    #[serde(skip_serializing_if = "is_zero")]
    pub prompt_truncated: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl LoopOutcome {
    /// True when the agent looked in the store at all.
    pub fn searched(&self) -> bool {
        !self.tool_uses.is_empty()
    }
}

const RESULT_HEAD_CHARS: usize = 300;

/// The tool definitions of the sandbox, as providers take them (built once, shared by every
/// question).
pub fn sandbox_tools() -> &'static [ToolDef] {
    static TOOLS: LazyLock<Vec<ToolDef>> = LazyLock::new(|| {
        Sandbox::tool_schemas()
            .iter()
            .map(|s| ToolDef {
                name: s["name"].as_str().unwrap_or_default().to_string(),
                description: s["description"].as_str().unwrap_or_default().to_string(),
                parameters: s["parameters"].clone(),
            })
            .collect()
    });
    &TOOLS
}

/// Ask `messages` (view + question, the question last) and run the tool loop.
///
/// Needs a tokio runtime with timers enabled (the time limits above).
///
/// `sandbox = None` offers no tools (drift probes answer from the view alone). `nonce` keeps
/// repeats independent in the response cache.
pub async fn run(
    provider: &dyn Provider,
    asking: Asking,
    messages: Vec<Message>,
    sandbox: Option<&Sandbox>,
    max_steps: u32,
    max_tokens: Option<u32>,
    nonce: &str,
) -> Result<LoopOutcome, ProviderError> {
    run_with_limit(
        provider,
        asking,
        messages,
        sandbox,
        max_steps,
        max_tokens,
        nonce,
        LOOP_TIME_LIMIT,
    )
    .await
}

/// [`run`] with an explicit wall-time limit for the whole loop; running out is a
/// [`ProviderError::Timeout`] naming the limit.
#[allow(clippy::too_many_arguments)] // the loop's knobs, each a plain value
pub async fn run_with_limit(
    provider: &dyn Provider,
    asking: Asking,
    messages: Vec<Message>,
    sandbox: Option<&Sandbox>,
    max_steps: u32,
    max_tokens: Option<u32>,
    nonce: &str,
    limit: Duration,
) -> Result<LoopOutcome, ProviderError> {
    let mut req = request(messages, sandbox, max_tokens, nonce);
    req.asking = asking;
    limited(provider, &[], &mut req, sandbox, max_steps, limit).await
}

/// [`run`] on `history` followed by `question`, lending `history` to the loop's requests instead
/// of copying it: it is moved into the request and moved back, as it was, when the loop ends
/// (also on an error or a timeout). One history can so be asked many questions in turn.
#[allow(clippy::too_many_arguments)] // the loop's knobs, each a plain value
pub async fn run_on(
    provider: &dyn Provider,
    asking: Asking,
    history: &mut Vec<Message>,
    question: Message,
    sandbox: Option<&Sandbox>,
    max_steps: u32,
    max_tokens: Option<u32>,
    nonce: &str,
) -> Result<LoopOutcome, ProviderError> {
    let len = history.len();
    let mut req = request(std::mem::take(history), sandbox, max_tokens, nonce);
    req.asking = asking;
    req.messages.push(question);
    let out = limited(provider, &[], &mut req, sandbox, max_steps, LOOP_TIME_LIMIT).await;
    *history = std::mem::take(&mut req.messages);
    history.truncate(len);
    out
}

/// [`run`] on `history` followed by `question`, the history shared with the loop's requests and
/// never copied for a provider that reads it in place ([`Provider::chat_after`]): each step
/// sends `history` followed by the question and the loop's own messages.
#[allow(clippy::too_many_arguments)] // the loop's knobs, each a plain value
pub async fn run_after(
    provider: &dyn Provider,
    asking: Asking,
    history: &[Arc<Message>],
    question: Message,
    sandbox: Option<&Sandbox>,
    max_steps: u32,
    max_tokens: Option<u32>,
    nonce: &str,
) -> Result<LoopOutcome, ProviderError> {
    let mut req = request(vec![question], sandbox, max_tokens, nonce);
    req.asking = asking;
    limited(
        provider,
        history,
        &mut req,
        sandbox,
        max_steps,
        LOOP_TIME_LIMIT,
    )
    .await
}

/// The loop's request: the sandbox's tools when there is a sandbox, the answer's length limit.
fn request(
    messages: Vec<Message>,
    sandbox: Option<&Sandbox>,
    max_tokens: Option<u32>,
    nonce: &str,
) -> ChatRequest {
    let tools = if sandbox.is_some() {
        sandbox_tools()
    } else {
        &[]
    };
    let mut req = ChatRequest::new(messages)
        .with_tools(tools)
        .with_nonce(nonce);
    req.sampling.max_tokens = max_tokens;
    req
}

/// [`run_loop`] under a wall-time limit (the request outlives the loop, so a timeout leaves it
/// with its caller).
async fn limited(
    provider: &dyn Provider,
    history: &[Arc<Message>],
    req: &mut ChatRequest,
    sandbox: Option<&Sandbox>,
    max_steps: u32,
    limit: Duration,
) -> Result<LoopOutcome, ProviderError> {
    match tokio::time::timeout(limit, run_loop(provider, history, req, sandbox, max_steps)).await {
        Ok(r) => r,
        Err(_) => Err(ProviderError::Timeout { after: limit }),
    }
}

/// One tool call on the blocking pool, abandoned after the sandbox's limit plus a grace. A
/// store held in memory is answered in place: nothing there can block (no disk, no FIFO), the
/// call keeps its own deadline, and a hop to the blocking pool and back cost more than most
/// of these calls (a wake-up and a context switch each way).
pub async fn call_tool(sandbox: &Sandbox, name: &str, arguments: &serde_json::Value) -> ToolOutput {
    if sandbox.is_in_memory() {
        return sandbox.call(name, arguments);
    }
    let sb = sandbox.clone();
    let (n, a) = (name.to_string(), arguments.clone());
    let limit = sandbox.limits().call_timeout + TOOL_CALL_GRACE;
    let task = tokio::task::spawn_blocking(move || sb.call(&n, &a));
    match tokio::time::timeout(limit, task).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => ToolOutput::err(format!("Error: the tool failed: {e}")),
        Err(_) => ToolOutput::err(format!("Error: {}", sandbox.timeout_text())),
    }
}

/// The tool loop on `req` (the conversation so far, the question last) after `history` (empty
/// but for [`run_after`]): each step appends the reply and the tool results to the request's
/// messages, so the conversation is never copied.
async fn run_loop(
    provider: &dyn Provider,
    history: &[Arc<Message>],
    req: &mut ChatRequest,
    sandbox: Option<&Sandbox>,
    max_steps: u32,
) -> Result<LoopOutcome, ProviderError> {
    let mut out = LoopOutcome::default();
    for _ in 0..max_steps.max(1) {
        let resp = provider.chat_after(history, req).await?;
        out.steps += 1;
        // A text-protocol reply may have taken several model calls (corrections): each is one.
        match resp.text_tools.as_ref().map(|t| t.call_usages.as_slice()) {
            Some(calls) if !calls.is_empty() => calls.iter().for_each(|u| out.usage.add(u)),
            _ => out.usage.add(&resp.usage),
        }
        out.model = resp.model.clone();
        out.finish_reason = resp.finish_reason.clone();
        if let Some(r) = resp.reasoning_tokens {
            *out.reasoning_tokens.get_or_insert(0) += r;
        }
        out.prompt_truncated += u32::from(resp.prompt_truncated);
        // A refused, filtered, cut-off or empty answer is no answer: scoring it would count a
        // miss the model never made (a reasoning model that spent its limit thinking returns "").
        if let Some(e) = not_an_answer(&resp, sandbox.is_some()) {
            return Err(e);
        }
        let reply = resp.message;
        if reply.tool_calls.is_empty() || sandbox.is_none() {
            out.answer = reply.content.clone();
            return Ok(out);
        }
        let calls = reply.tool_calls.clone();
        req.messages.push(reply);
        for call in calls {
            let sandbox = sandbox.expect("tool calls only run with a sandbox");
            let result = call_tool(sandbox, &call.name, &call.arguments).await;
            out.files_read.extend(result.files_read.iter().cloned());
            out.tool_uses.push(ToolUse {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                is_error: result.is_error,
                result_head: result.text.chars().take(RESULT_HEAD_CHARS).collect(),
            });
            let mut m = Message::tool(call.id.clone(), call.name.clone(), result.text);
            m.is_error = result.is_error;
            req.messages.push(m);
        }
    }
    out.hit_step_limit = true;
    Ok(out)
}

/// Why `resp` is no answer to score, if it is not ([`ChatResponse::no_answer`], shared with the
/// judge and the summarizer): a refusal or a `content_filter` finish (`answer_refused`), the
/// model's context window reached while answering (Anthropic's `model_context_window_exceeded`:
/// a context overflow, like a prompt the server rejected as too long), the output limit
/// (`answer_cut_off`), or nothing said at all (no text, and no tool call the loop would run).
///
/// [`ChatResponse::no_answer`]: crate::providers::ChatResponse::no_answer
fn not_an_answer(resp: &crate::providers::ChatResponse, tools: bool) -> Option<ProviderError> {
    use crate::providers::NoAnswer;
    let finish = resp.finish_reason.as_deref().unwrap_or_default();
    Some(match resp.no_answer(tools)? {
        NoAnswer::Refused(why) => ProviderError::Refused {
            message: crate::providers::clip(&why, 300),
        },
        NoAnswer::Filtered => ProviderError::Refused {
            message: "the provider's content filter stopped the answer (finish reason \
                      `content_filter`)"
                .into(),
        },
        NoAnswer::ContextWindow => ProviderError::ContextOverflow {
            status: 200,
            message: format!(
                "the answer stopped at the model's context window (stop reason `{finish}`, {} \
                 output tokens)",
                resp.usage.output
            ),
        },
        NoAnswer::CutOff => ProviderError::AnswerCutOff {
            finish_reason: finish.to_string(),
            output_tokens: resp.usage.output,
            reasoning_tokens: resp.reasoning_tokens,
            answer_chars: resp.message.content.chars().count(),
        },
        NoAnswer::Empty => ProviderError::EmptyAnswer {
            finish_reason: finish.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::testing::MockProvider;

    #[test]
    fn a_store_in_memory_is_answered_in_place() {
        use std::future::Future;
        let mut files = crate::evals::fs_tools::MemFiles::new();
        files.insert(
            "large_tool_results/a".into(),
            b"the token: teal\n".to_vec().into(),
        );
        let sb = Sandbox::in_memory(
            std::path::Path::new("/nowhere"),
            std::sync::Arc::new(files),
            Default::default(),
        );
        let args = serde_json::json!({"path": "/large_tool_results/a"});
        let mut call = std::pin::pin!(call_tool(&sb, "read_file", &args));
        // Polled once, outside any runtime: a hop to the blocking pool would panic or wait.
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match call.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(out) => {
                assert!(!out.is_error && out.text.contains("teal"), "{out:?}")
            }
            std::task::Poll::Pending => panic!("the call left the thread"),
        }
    }

    #[tokio::test]
    async fn a_text_protocol_correction_is_a_call_of_its_own() {
        // A malformed tool call, corrected, then the answer: one step of the loop, two model
        // calls, each its own usage (a long-context tier is a call's, not their sum's).
        let usage = crate::trace::Usage {
            input: 120_000,
            output: 10,
            ..Default::default()
        };
        let inner = std::sync::Arc::new(
            MockProvider::script(&[
                "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"a\": \"1\"}}\n```",
                "The token is teal.",
            ])
            .with_usage(usage),
        );
        let p = crate::providers::TextToolProvider::new(inner, Default::default());
        let sb = Sandbox::in_memory(
            std::path::Path::new("/nowhere"),
            std::sync::Arc::new(crate::evals::fs_tools::MemFiles::new()),
            Default::default(),
        );
        let out = run(
            &p,
            Asking::Recall,
            vec![Message::user("What is the token?")],
            Some(&sb),
            4,
            None,
            "n",
        )
        .await
        .unwrap();
        assert_eq!(out.answer, "The token is teal.");
        assert_eq!(out.steps, 1);
        assert_eq!(out.usage.as_slice(), &[usage, usage]);
        assert_eq!(out.usage.total().input, 240_000);
    }

    /// A response saying `content` (with `calls` tool calls), stopped for `finish`.
    fn reply(finish: &str, content: &str, calls: usize) -> crate::providers::ChatResponse {
        let calls = (0..calls)
            .map(|i| crate::trace::ToolCall {
                id: format!("c{i}"),
                name: "grep".into(),
                arguments: serde_json::json!({"pattern": "x"}),
            })
            .collect();
        crate::providers::ChatResponse::answer(
            Message::assistant(content, calls),
            crate::trace::Usage::default(),
            "m",
            finish,
        )
    }

    #[test]
    fn answers_that_are_no_answers_are_named() {
        let kind = |r: &crate::providers::ChatResponse, tools: bool| {
            not_an_answer(r, tools).map(|e| e.kind())
        };
        assert_eq!(kind(&reply("stop", "teal", 0), true), None);
        assert_eq!(kind(&reply("end_turn", "teal", 0), false), None);
        assert_eq!(
            kind(&reply("content_filter", "", 0), true),
            Some("answer_refused")
        );
        assert_eq!(
            kind(
                &reply("model_context_window_exceeded", "The value", 0),
                true
            ),
            Some("context_overflow")
        );
        assert_eq!(kind(&reply("stop", "", 0), true), Some("answer_empty"));
        assert_eq!(
            kind(&reply("end_turn", " \n", 0), false),
            Some("answer_empty")
        );
        // A tool call is an answer to a loop that runs tools, not to one that offers none.
        assert_eq!(kind(&reply("tool_calls", "", 1), true), None);
        assert_eq!(
            kind(&reply("tool_calls", "", 1), false),
            Some("answer_empty")
        );
        // Cut off at the output limit, with or without text.
        assert_eq!(kind(&reply("length", "", 0), true), Some("answer_cut_off"));
        assert_eq!(
            kind(&reply("max_tokens", "The val", 0), false),
            Some("answer_cut_off")
        );
        let mut refused = reply("stop", "", 0);
        refused.refusal = Some("no".into());
        assert_eq!(kind(&refused, true), Some("answer_refused"));
    }

    #[tokio::test]
    async fn an_empty_answer_fails_the_question() {
        let p = MockProvider::script(&[""]);
        let e = run(
            &p,
            Asking::Recall,
            vec![Message::user("q?")],
            None,
            2,
            None,
            "n",
        )
        .await
        .unwrap_err();
        assert_eq!(e.kind(), "answer_empty", "{e}");
    }

    /// Answers (or fails) every call with `re: <last message>`.
    fn recorder(fail: bool) -> MockProvider {
        MockProvider::new(move |request| {
            if fail {
                return Err(ProviderError::bad_response("no"));
            }
            let last = request.messages.last().map(|m| m.content.clone());
            Ok(format!("re: {}", last.unwrap_or_default()))
        })
    }

    #[tokio::test]
    async fn a_lent_history_comes_back_as_it_was() {
        let history = vec![Message::user("a"), Message::assistant("b", vec![])];
        let mut lent = history.clone();
        let ok = recorder(false);
        for q in ["first?", "second?"] {
            let out = run_on(
                &ok,
                Asking::Recall,
                &mut lent,
                Message::user(q),
                None,
                2,
                None,
                "n",
            )
            .await
            .unwrap();
            assert_eq!(out.answer, format!("re: {q}"));
            assert_eq!(lent, history);
        }
        let sent: Vec<usize> = ok.seen().iter().map(|r| r.messages.len()).collect();
        assert_eq!(sent, [3, 3]);
        let failing = recorder(true);
        let e = run_on(
            &failing,
            Asking::Recall,
            &mut lent,
            Message::user("q"),
            None,
            2,
            None,
            "n",
        )
        .await;
        assert!(e.is_err());
        assert_eq!(lent, history, "an error gives the history back too");
    }
}
