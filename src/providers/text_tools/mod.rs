//! The text tool protocol (`tool_protocol = "text"`): tools described in the prompt, one fenced
//! JSON call per reply parsed from the text, results sent back as user messages, unusable calls
//! reported to the model and counted. For small local models whose server leaves `tool_calls`
//! empty (llama.cpp with Qwen2.5-0.5B writes the call as JSON in the message text).
//!
//! [`TextToolProvider`] wraps any [`Provider`] and keeps the caller's view native: requests come
//! in with `tools`, assistant `tool_calls` and `role: tool` results; responses go out with
//! `message.tool_calls` filled. Inside, each call to the wrapped provider carries no `tools`:
//!
//! - the system message gains a "# Tools" section ([`tool_instructions`]): each tool with its
//!   arguments, and the reply format: exactly one
//!   ```` ```json {"tool": NAME, "arguments": {...}} ``` ```` block, or a final answer in
//!   plain text without a block;
//! - earlier assistant calls are written back as such blocks ([`render_call`]) and tool results
//!   become user messages `Result of NAME:` ([`render_results`]), consecutive ones merged;
//! - the reply is parsed tolerantly ([`parse_reply`]): a fenced block (any or no language tag)
//!   or a bare JSON object; the name under `tool`, `name`, `tool_name`, `function` (or OpenAI's
//!   `{"function": {"name", "arguments"}}`); the arguments under `arguments`, `args`,
//!   `parameters` or `input`, as an object or a JSON-encoded string; trailing commas repaired.
//!   A bare object counts as a call only when it names a tool; a fenced JSON block is always
//!   meant as one, so a fenced block that is not a usable call is malformed;
//! - a malformed call (bad JSON, no or unknown tool name, arguments not an object, a required
//!   argument missing) is answered with a correction message and the model is asked again, at
//!   most [`TextToolOptions::max_corrections`] times;
//! - a reply [`ChatResponse::no_answer`] finds cut at its output limit (or filtered, stopped at
//!   the model's window, refused) is not parsed: a half-written block is no malformed call. It
//!   is returned as it came, its finish reason kept, and the caller reports it as that;
//! - with [`TextToolOptions::reject_repeats`], an exact repeat of an earlier call ends the
//!   loop: the model is asked once more, with the tools withheld and the calls so far collapsed
//!   into a list of results after the task ([`final_answer_request`]), and that reply is the
//!   final answer;
//! - [`TextToolTelemetry`] on the response counts wrapped calls, malformed and repeated calls.
//!   Corrections live only inside the wrapper: the caller's history stays clean.
//!
//! The repeat rule comes from measurements with Qwen2.5-Coder-0.5B at temperature 0 (see
//! `docs/local-llm.md`): after a tool result it re-issued the same call turn after turn, also
//! after being told it was a repeat while the tools were still described, and answered with
//! another JSON block when its earlier calls stayed in the history as JSON; asked with the
//! results collapsed after the question and no tools, it answered from them.

mod parse;
mod render;

pub use parse::{parse_reply, Reply};
pub use render::{
    correction_message, final_answer_request, render_call, render_request, render_results,
    tool_instructions,
};

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    BoxFuture, ChatRequest, ChatResponse, Message, NoAnswer, Provider, ProviderError, ProviderInfo,
    Role, ToolCall, ToolProtocol, Usage,
};

/// Knobs of the text protocol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextToolOptions {
    /// How many malformed calls one [`Provider::chat`] may report back to the model, asking
    /// again each time. After that the reply is returned as the plain answer it literally is.
    pub max_corrections: u32,
    /// A call identical (same tool, same arguments) to one earlier in the conversation cannot
    /// bring anything new: instead of returning it, the model is told so and asked once more,
    /// with the tools withheld, for its final answer. Off: repeats are returned as calls.
    pub reject_repeats: bool,
}

impl Default for TextToolOptions {
    fn default() -> Self {
        TextToolOptions {
            max_corrections: 2,
            reject_repeats: true,
        }
    }
}

/// What the text protocol did during one [`Provider::chat`]; `None` on responses of providers
/// that use the API's native tool calls.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextToolTelemetry {
    /// Calls to the wrapped provider (1 when the first reply was usable).
    pub model_calls: u32,
    /// Each wrapped call's usage, in order (the response's `usage` is their sum): what they are
    /// priced on, call by call. Not kept in the response cache (a cached response is one sum).
    #[serde(skip)]
    pub call_usages: Vec<Usage>,
    /// Replies holding a tool call that could not be used (reported back to the model).
    pub malformed: u32,
    /// Replies repeating an earlier call exactly (answered with a request for the final answer
    /// when `reject_repeats`).
    pub repeated: u32,
}

/// True when `request` already holds an assistant call of `name` with `arguments`.
fn is_repeat(request: &ChatRequest, name: &str, arguments: &Value) -> bool {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.tool_calls)
        .any(|c| c.name == name && render::normalized_args(&c.arguments) == *arguments)
}

/// Id of the n-th call the protocol hands out in a conversation: deterministic, so identical
/// conversations produce identical requests (and cache keys).
fn call_id(request: &ChatRequest) -> String {
    let earlier = request
        .messages
        .iter()
        .map(|m| m.tool_calls.len())
        .sum::<usize>();
    format!("text_call_{}", earlier + 1)
}

/// A [`Provider`] that speaks the text tool protocol to the provider it wraps (module docs).
pub struct TextToolProvider {
    inner: Arc<dyn Provider>,
    info: ProviderInfo,
    options: TextToolOptions,
}

impl TextToolProvider {
    pub fn new(inner: Arc<dyn Provider>, options: TextToolOptions) -> Self {
        let mut info = inner.info().clone();
        info.tool_protocol = ToolProtocol::Text;
        TextToolProvider {
            inner,
            info,
            options,
        }
    }

    async fn run(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let tools = &request.tools;
        let mut convo = render_request(request);
        let mut telemetry = TextToolTelemetry::default();
        let mut total = Totals::default();
        loop {
            let response = self.inner.chat(&convo).await?;
            telemetry.model_calls += 1;
            total.add(&response);
            if tools.is_empty() {
                return Ok(total.finish(response, None, telemetry));
            }
            // A reply the model did not end (cut at its output limit, filtered, stopped at the
            // window) or refused is no call to parse: a half-written block is not a malformed
            // call to correct. It goes back as it came, for the caller to report as the
            // no-answer it is (`ChatResponse::no_answer`).
            if !matches!(response.no_answer(false), None | Some(NoAnswer::Empty)) {
                return Ok(total.finish(response, None, telemetry));
            }
            let text = response.message.content.clone();
            let feedback = match parse_reply(&text, tools) {
                Reply::Answer(answer) => {
                    let mut r = response;
                    r.message.content = answer;
                    return Ok(total.finish(r, None, telemetry));
                }
                Reply::Call {
                    name, arguments, ..
                } if self.options.reject_repeats && is_repeat(request, &name, &arguments) => {
                    telemetry.repeated += 1;
                    // Stuck: ask for the final answer with the tools withheld and the calls
                    // collapsed into evidence, so that a model that copies the call format
                    // has nothing to copy. Earlier corrections are left out on purpose.
                    let last = final_answer_request(request);
                    let response = self.inner.chat(&last).await?;
                    telemetry.model_calls += 1;
                    total.add(&response);
                    let mut r = response;
                    r.message.content = r.message.content.trim().to_string();
                    return Ok(total.finish(r, None, telemetry));
                }
                Reply::Call {
                    prose,
                    name,
                    arguments,
                } => {
                    let call = ToolCall {
                        id: call_id(request),
                        name,
                        arguments,
                    };
                    let mut r = response;
                    r.message.content = prose;
                    return Ok(total.finish(r, Some(call), telemetry));
                }
                Reply::Malformed { reason } => {
                    telemetry.malformed += 1;
                    if telemetry.malformed > self.options.max_corrections {
                        // Out of corrections: the reply stands as the answer it literally is.
                        return Ok(total.finish(response, None, telemetry));
                    }
                    correction_message(&reason, tools)
                }
            };
            convo.messages.push(Message::assistant(text, Vec::new()));
            convo.messages.push(Message::user(feedback));
        }
    }
}

/// Sums over the wrapped calls of one [`TextToolProvider::chat`].
#[derive(Default)]
struct Totals {
    usage: Usage,
    each: Vec<Usage>,
    usage_reported: bool,
    calls: u32,
    latency: Duration,
    attempts: u32,
    all_cached: bool,
}

impl Totals {
    fn add(&mut self, r: &ChatResponse) {
        self.usage.add(&r.usage);
        self.each.push(r.usage);
        self.usage_reported = if self.calls == 0 {
            r.usage_reported
        } else {
            self.usage_reported && r.usage_reported
        };
        self.all_cached = if self.calls == 0 {
            r.from_cache
        } else {
            self.all_cached && r.from_cache
        };
        self.calls += 1;
        self.latency += r.latency;
        self.attempts += r.attempts;
    }

    /// The last response with the sums of all calls, the call (if any) and the telemetry.
    fn finish(
        self,
        mut last: ChatResponse,
        call: Option<ToolCall>,
        mut telemetry: TextToolTelemetry,
    ) -> ChatResponse {
        telemetry.call_usages = self.each;
        last.usage = self.usage;
        last.usage_reported = self.usage_reported;
        last.latency = self.latency;
        last.attempts = self.attempts;
        last.from_cache = self.all_cached;
        last.message.usage = Some(self.usage);
        last.message.tool_calls = call.into_iter().collect();
        if !last.message.tool_calls.is_empty() {
            last.finish_reason = Some("tool_calls".into());
        }
        last.text_tools = Some(telemetry);
        last
    }
}

impl Provider for TextToolProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(self.run(request))
    }

    fn cache_stats(&self) -> Option<super::cache::CacheStats> {
        self.inner.cache_stats()
    }
}

#[cfg(test)]
mod fixtures;

#[cfg(test)]
mod tests {
    use super::fixtures::{conversation, tools};
    use super::render::FINAL_ANSWER;
    use super::*;
    use crate::providers::testing::MockProvider;
    use serde_json::json;

    /// A provider that answers from a script (then fails) and records what it was sent.
    fn scripted(replies: &[&str]) -> Arc<MockProvider> {
        let usage = Usage {
            input: 100,
            output: 10,
            cache_read: 40,
            cache_write: 0,
        };
        Arc::new(
            MockProvider::script(replies)
                .with_usage(usage)
                .with_latency(Duration::from_millis(5)),
        )
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn first_turn() -> ChatRequest {
        ChatRequest::new(vec![Message::user("What is the staging port?")]).with_tools(tools())
    }

    #[test]
    fn a_usable_call_comes_back_as_a_native_tool_call() {
        let inner = scripted(&["I'll search.\n```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"staging\"}}\n```"]);
        let p = TextToolProvider::new(inner.clone(), TextToolOptions::default());
        assert_eq!(p.info().tool_protocol, ToolProtocol::Text);
        let r = block_on(p.chat(&first_turn())).unwrap();
        assert_eq!(r.message.content, "I'll search.");
        assert_eq!(
            r.message.tool_calls,
            vec![ToolCall {
                id: "text_call_1".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "staging"}),
            }]
        );
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            r.text_tools,
            Some(TextToolTelemetry {
                model_calls: 1,
                call_usages: vec![r.usage],
                malformed: 0,
                repeated: 0
            })
        );
        let seen = inner.seen();
        assert!(seen[0].tools.is_empty(), "tools travel in the prompt");
        assert!(seen[0].messages[0].content.starts_with("# Tools"));
    }

    #[test]
    fn malformed_calls_are_reported_back_counted_and_summed() {
        let inner = scripted(&[
            "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"port\": \"1\"}}\n```",
            "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"port\"}}\n```",
        ]);
        let p = TextToolProvider::new(inner.clone(), TextToolOptions::default());
        let r = block_on(p.chat(&first_turn())).unwrap();
        assert_eq!(
            r.message.tool_calls[0].arguments,
            json!({"pattern": "port"})
        );
        let tel = r.text_tools.clone().unwrap();
        assert_eq!((tel.model_calls, tel.malformed, tel.repeated), (2, 1, 0));
        // Each wrapped call's usage, summing to the response's.
        assert_eq!(tel.call_usages.len(), 2);
        let mut sum = Usage::default();
        for u in &tel.call_usages {
            sum.add(u);
        }
        assert_eq!(sum, r.usage);
        assert_eq!(r.usage.input, 200);
        assert_eq!(r.usage.output, 20);
        assert_eq!(r.usage.cache_read, 80);
        assert_eq!(r.message.usage, Some(r.usage));
        assert_eq!(r.latency, Duration::from_millis(10));
        assert_eq!(r.attempts, 2);
        // The second request carries the bad reply and the correction.
        let seen = inner.seen();
        let second = &seen[1].messages;
        assert_eq!(second.len(), 4);
        assert_eq!(second[2].role, Role::Assistant);
        assert!(second[2].content.contains("\"port\": \"1\""));
        assert_eq!(second[3].role, Role::User);
        assert!(
            second[3]
                .content
                .starts_with("Your tool call could not be used: the JSON block is not valid JSON"),
            "{}",
            second[3].content
        );
    }

    /// A reply cut at its output limit in the middle of its fenced call is a cut-off answer
    /// (what the caller reports as `answer_cut_off`), not a malformed call to correct: it was
    /// counted as malformed and the model asked again, the cut recorded only if the last reply
    /// was cut too.
    #[test]
    fn a_reply_cut_at_its_limit_is_cut_off_not_malformed() {
        let cut = "I'll search.\n```json\n{\"tool\": \"grep\", \"argum";
        let whole = "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"port\"}}\n```";
        for finish in ["length", "max_tokens"] {
            let inner = Arc::new(MockProvider::script(&[cut, whole]).with_finish(finish));
            let p = TextToolProvider::new(inner.clone(), TextToolOptions::default());
            let r = block_on(p.chat(&first_turn())).unwrap();
            assert_eq!(r.no_answer(true), Some(crate::providers::NoAnswer::CutOff));
            assert!(r.message.tool_calls.is_empty());
            assert_eq!(r.message.content, cut, "the reply as it came");
            assert_eq!(r.finish_reason.as_deref(), Some(finish));
            let tel = r.text_tools.unwrap();
            assert_eq!((tel.model_calls, tel.malformed), (1, 0), "{finish}");
            assert_eq!(inner.seen().len(), 1, "no correction asked");
        }
    }

    #[test]
    fn out_of_corrections_the_reply_stands_as_the_answer() {
        let bad = "```json\n{\"tool\": \"nope\"}\n```";
        let inner = scripted(&[bad, bad, bad]);
        let p = TextToolProvider::new(inner.clone(), TextToolOptions::default());
        let r = block_on(p.chat(&first_turn())).unwrap();
        assert!(r.message.tool_calls.is_empty());
        assert_eq!(r.message.content, bad);
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        let tel = r.text_tools.unwrap();
        assert_eq!((tel.model_calls, tel.malformed), (3, 3));
        let p0 = TextToolProvider::new(
            scripted(&[bad]),
            TextToolOptions {
                max_corrections: 0,
                reject_repeats: true,
            },
        );
        let r = block_on(p0.chat(&first_turn())).unwrap();
        assert_eq!(r.text_tools.unwrap().model_calls, 1);
    }

    fn after_one_grep() -> ChatRequest {
        let mut r = first_turn();
        r.messages.push(Message::assistant(
            "",
            vec![ToolCall {
                id: "text_call_1".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "staging"}),
            }],
        ));
        r.messages.push(Message::tool(
            "text_call_1",
            "grep",
            "notes/db.md:3:The staging database listens on port 6117.",
        ));
        r
    }

    #[test]
    fn a_repeated_call_gets_the_final_answer_asked_for_without_tools() {
        let again = "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"staging\"}}\n```";
        let inner = scripted(&[again, "  The staging database port is 6117.\n"]);
        let p = TextToolProvider::new(inner.clone(), TextToolOptions::default());
        let mut req = after_one_grep();
        req.messages
            .insert(0, Message::system("Answer from the files."));
        let r = block_on(p.chat(&req)).unwrap();
        assert_eq!(r.message.content, "The staging database port is 6117.");
        assert!(r.message.tool_calls.is_empty());
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        let tel = r.text_tools.unwrap();
        assert_eq!((tel.model_calls, tel.malformed, tel.repeated), (2, 0, 1));
        let seen = inner.seen();
        assert!(seen[0].messages[0].content.contains("# Tools"));
        let last = &seen[1].messages;
        assert!(seen[1].tools.is_empty());
        assert_eq!(last.len(), 2);
        assert_eq!(last[0].content, "Answer from the files.", "tools withheld");
        assert_eq!(
            last[1].content,
            "What is the staging port?\n\nYour tool calls so far and their results:\n- grep \
             {\"pattern\":\"staging\"} returned:\nnotes/db.md:3:The staging database listens on \
             port 6117.\n\nDo not call any tool again. Answer the question above in plain text, \
             using these results."
        );
    }

    #[test]
    fn final_answer_request_keeps_earlier_turns_and_marks_failures() {
        let mut req = conversation();
        // One assistant turn calling both tools; results of call_a and (an error) call_b.
        req.messages[2].tool_calls.push(ToolCall {
            id: "call_b".into(),
            name: "read_file".into(),
            arguments: json!({"path": "x"}),
        });
        let r = final_answer_request(&req);
        assert!(r.tools.is_empty());
        let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User]);
        assert_eq!(r.messages[0].content, "You answer questions about files.");
        let text = &r.messages[1].content;
        assert!(text.starts_with("What is the staging port?\n\n"), "{text}");
        assert!(
            text.contains(
                "- (assistant) Searching.\n- grep {\"pattern\":\"port\"} returned:\nnotes/db.md:3:\
                 staging port 6117\n- read_file {\"path\":\"x\"} failed:\nno such file: x\n\n"
            ),
            "{text}"
        );
        assert!(text.ends_with(FINAL_ANSWER));
        // Without any user message the whole history is kept and the instruction closes it.
        let bare = ChatRequest::new(vec![Message::system("s")]).with_tools(tools());
        let r = final_answer_request(&bare);
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.messages[1].content, FINAL_ANSWER);
    }

    #[test]
    fn repeats_pass_when_allowed_and_other_arguments_are_not_repeats() {
        let again = "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"staging\"}}\n```";
        let allow = TextToolOptions {
            max_corrections: 2,
            reject_repeats: false,
        };
        let p = TextToolProvider::new(scripted(&[again]), allow);
        let r = block_on(p.chat(&after_one_grep())).unwrap();
        assert_eq!(r.message.tool_calls[0].id, "text_call_2");
        assert_eq!(r.text_tools.unwrap().repeated, 0);

        // Asked for the answer, the model calls again anyway: that text is the answer.
        let p = TextToolProvider::new(scripted(&[again, again]), TextToolOptions::default());
        let r = block_on(p.chat(&after_one_grep())).unwrap();
        assert!(r.message.tool_calls.is_empty());
        assert_eq!(r.message.content, again);
        let tel = r.text_tools.unwrap();
        assert_eq!((tel.model_calls, tel.repeated), (2, 1));

        let other = "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"port\"}}\n```";
        let p = TextToolProvider::new(scripted(&[other]), TextToolOptions::default());
        let r = block_on(p.chat(&after_one_grep())).unwrap();
        assert_eq!(r.text_tools.unwrap().repeated, 0);
        assert_eq!(
            r.message.tool_calls[0].arguments,
            json!({"pattern": "port"})
        );
    }

    #[test]
    fn malformed_then_repeated_counts_both() {
        let bad = "```json\n{\"tool\": \"grep\"}\n```";
        let again = "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"staging\"}}\n```";
        let inner = scripted(&[bad, again, "6117"]);
        let p = TextToolProvider::new(inner.clone(), TextToolOptions::default());
        let r = block_on(p.chat(&after_one_grep())).unwrap();
        assert_eq!(r.message.content, "6117");
        let tel = r.text_tools.unwrap();
        assert_eq!((tel.model_calls, tel.malformed, tel.repeated), (3, 1, 1));
        let seen = inner.seen();
        assert!(seen[1]
            .messages
            .last()
            .unwrap()
            .content
            .starts_with("Your tool call could not be used: grep needs the argument \"pattern\""));
        assert!(!seen[2]
            .messages
            .iter()
            .any(|m| m.content.contains("could not be used")));
    }

    #[test]
    fn without_tools_the_reply_is_passed_through() {
        let inner = scripted(&["```json\n{\"tool\": \"grep\"}\n```"]);
        let p = TextToolProvider::new(inner.clone(), TextToolOptions::default());
        let mut req = after_one_grep();
        req.tools.to_mut().clear();
        req.messages.push(Message::user("Answer now."));
        let r = block_on(p.chat(&req)).unwrap();
        assert!(r.message.tool_calls.is_empty());
        assert_eq!(r.message.content, "```json\n{\"tool\": \"grep\"}\n```");
        // The history was still rendered as text for the model.
        let seen = inner.seen();
        assert!(seen[0].messages.iter().all(|m| m.role != Role::Tool));
    }

    #[test]
    fn errors_of_the_wrapped_provider_propagate() {
        let p = TextToolProvider::new(scripted(&[]), TextToolOptions::default());
        let e = block_on(p.chat(&first_turn())).unwrap_err();
        assert_eq!(e.kind(), "bad_response");
    }
}
