//! The strict fake servers (support/strict_llm.rs): their rules reject what the real APIs
//! reject, what ctxbench sends passes them, and the scenarios real APIs play (rate limits with
//! each header, 529, 500, context length, truncated JSON, an error inside a 200, a cut-off
//! answer, a refusal) reach the caller classified.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxbench::providers::{
    build_provider, ChatRequest, Message, Provider, ProviderConfig, ProviderError, ProviderKind,
    ThinkingBlock, ToolCall, ToolDef, PROMPT_TRUNCATION_RATIO,
};
use ctxbench::tokens::TokenCounter;
use serde_json::{json, Value};

use crate::support::strict_llm::{
    anthropic_body_violations, openai_violations, signature_of, Scenario, StrictLlm,
};

fn config(server: &StrictLlm, kind: ProviderKind) -> ProviderConfig {
    let mut c = match kind {
        ProviderKind::Anthropic => {
            let mut c = ProviderConfig::new(kind, "claude-sonnet-4-5");
            c.base_url = Some(server.base_url());
            c
        }
        _ => {
            let mut c = ProviderConfig::new(kind, "gpt-5-mini");
            c.base_url = Some(server.openai_base_url());
            c
        }
    };
    c.cache = false;
    c.retry_initial_ms = 10;
    c.retry_max_secs = 10.0;
    c.timeout_secs = 10.0;
    c
}

fn build(c: &ProviderConfig) -> Arc<dyn Provider> {
    build_provider(c).unwrap()
}

fn grep_tool() -> ToolDef {
    ToolDef {
        name: "grep".into(),
        description: "Search files".into(),
        parameters: json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
    }
}

fn call(id: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "grep".into(),
        arguments: args,
    }
}

/// A replayed agent history: system, user, parallel tool calls answered in order, text.
fn history() -> Vec<Message> {
    vec![
        Message::system("You are a coding agent."),
        Message::user("Find the token."),
        Message::assistant(
            "Searching.",
            vec![
                call("call_1", json!({"pattern": "token"})),
                call("call_2", json!({"pattern": "secret"})),
            ],
        ),
        Message::tool("call_1", "grep", "a.py:1: token = 42"),
        Message::tool("call_2", "grep", "no match"),
        Message::assistant("The token is 42.", vec![]),
        Message::user("And where is it defined?"),
    ]
}

#[test]
fn the_rules_reject_what_the_real_apis_reject() {
    // Anthropic: tool blocks without tools.
    let b = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}]});
    let v = anthropic_body_violations(&b);
    assert!(v.iter().any(|m| m.contains("must define tools")), "{v:?}");
    // Tool result after text; whitespace text; temperature 1.5; thinking budget too small.
    let b = json!({"model": "m", "max_tokens": 1000, "temperature": 1.5,
        "thinking": {"type": "enabled", "budget_tokens": 512},
        "tools": [{"name": "grep", "input_schema": {"type": "object"}}], "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "  "},
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}]});
    let v = anthropic_body_violations(&b).join("\n");
    for want in [
        "must come first",
        "non-whitespace",
        "0..=1",
        "budget_tokens",
        "may only be set to 1",
    ] {
        assert!(v.contains(want), "{want}: {v}");
    }
    // Thinking on: the last assistant turn with a tool call must begin with its thinking, and a
    // block the server signed must come back unmodified.
    let thought = "I should grep.";
    let with = |first: Value| {
        json!({"model": "m", "max_tokens": 2048,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "tools": [{"name": "grep", "input_schema": {"type": "object"}}], "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [first,
                {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}]})
    };
    let v = anthropic_body_violations(&with(json!({"type": "text", "text": "Searching."})));
    assert!(
        v.iter()
            .any(|m| m.contains("must start with a thinking block")),
        "{v:?}"
    );
    let signed =
        json!({"type": "thinking", "thinking": thought, "signature": signature_of(thought)});
    assert_eq!(
        anthropic_body_violations(&with(signed)),
        Vec::<String>::new()
    );
    let edited = json!({"type": "thinking", "thinking": "I should grep!", "signature": signature_of(thought)});
    let v = anthropic_body_violations(&with(edited));
    assert!(v.iter().any(|m| m.contains("Invalid `signature`")), "{v:?}");
    let v = anthropic_body_violations(&with(json!({"type": "redacted_thinking"})));
    assert!(
        v.iter().any(|m| m.contains("redacted_thinking.data")),
        "{v:?}"
    );
    // An unanswered tool_use; an unknown tool_use_id.
    let b = json!({"model": "m", "max_tokens": 10,
        "tools": [{"name": "grep", "input_schema": {"type": "object"}}], "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}]}]});
    let v = anthropic_body_violations(&b).join("\n");
    assert!(
        v.contains("unexpected `tool_use_id`") && v.contains("without `tool_result`"),
        "{v}"
    );
    // OpenAI: max_tokens and temperature on a reasoning model; unanswered tool call; string args
    // that are not an object; a tool message answering nothing; an unknown key.
    let b = json!({"model": "o3", "max_tokens": 10, "temperature": 0, "foo": 1, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "not json"}},
            {"id": "c2", "type": "function", "function": {"name": "grep", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "tool", "tool_call_id": "c7", "content": "y"}]});
    let v = openai_violations(&b).join("\n");
    for want in [
        "Use 'max_completion_tokens'",
        "Only the default (1)",
        "Unrecognized request argument supplied: foo",
        "not a JSON object",
        "preceeding message with 'tool_calls'",
        "did not have response messages: c2",
    ] {
        assert!(v.contains(want), "{want}: {v}");
    }
    assert!(openai_violations(&json!({"model": "gpt-4o", "messages": [
        {"role": "user", "content": "hi"}], "temperature": 1.7}))
    .is_empty());
    // OpenAI: the reasoning efforts each model takes; none on a model that does not reason.
    let effort = |model: &str, e: &str| {
        openai_violations(&json!({"model": model, "reasoning_effort": e,
            "messages": [{"role": "user", "content": "hi"}]}))
        .join("\n")
    };
    assert_eq!(effort("gpt-5.1-2025-11-13", "none"), "");
    assert_eq!(effort("gpt-5-mini", "minimal"), "");
    assert_eq!(effort("gpt-5.2", "xhigh"), "", "a model no source lists");
    assert!(effort("gpt-5.1", "minimal")
        .contains("Supported values are: 'none', 'low', 'medium', and 'high'."));
    assert!(effort("gpt-5-mini", "none").contains("does not support 'none' with this model"));
    assert!(effort("o3", "minimal").contains("'low', 'medium', and 'high'"));
    assert!(effort("gpt-4o", "low").contains("'reasoning_effort' is not supported with this model"));
    // OpenAI: at most 4 stop sequences, none for o3, o4-mini and the gpt-5 family.
    let stop = |model: &str, v: Value| {
        openai_violations(&json!({"model": model, "stop": v,
            "messages": [{"role": "user", "content": "hi"}]}))
        .join("\n")
    };
    assert_eq!(stop("gpt-4o", json!(["a", "b", "c", "d"])), "");
    assert!(stop("gpt-4o", json!(["a", "b", "c", "d", "e"]))
        .contains("Expected an array with maximum length 4, but got an array with length 5"));
    assert!(stop("o4-mini", json!("x")).contains("'stop' is not supported with this model"));
    assert!(stop("gpt-5-mini", json!(["x"])).contains("'stop' is not supported"));
    // Anthropic: a thinking budget on a model that takes only adaptive thinking.
    let budget = |model: &str| {
        anthropic_body_violations(&json!({"model": model, "max_tokens": 2048,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [{"role": "user", "content": "hi"}]}))
        .join("\n")
    };
    assert!(budget("claude-opus-4-7").contains("\"thinking.type.enabled\" is not supported"));
    assert_eq!(budget("claude-opus-4-6"), "");
    let temperature = |model: &str| {
        anthropic_body_violations(
            &json!({"model": model, "max_tokens": 10, "temperature": 0.0,
            "messages": [{"role": "user", "content": "hi"}]}),
        )
        .join("\n")
    };
    assert_eq!(
        temperature("claude-opus-4-7"),
        "`temperature` is deprecated for this model."
    );
    assert_eq!(temperature("claude-opus-4-6"), "");
    // OpenAI: tool-call ids of more than 40 characters (a Gemini CLI id is 42).
    let long = "list_directory-1764625554423-6b5d2c6179cc4";
    let b = json!({"model": "gpt-4o", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": long, "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": long, "content": "x"}]});
    let v = openai_violations(&b).join("\n");
    for want in [
        "'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length 42",
        "'messages[2].tool_call_id': string too long",
    ] {
        assert!(v.contains(want), "{want}: {v}");
    }
}

#[test]
fn the_rules_of_thinking_caching_error_results_and_tool_options_reject_their_breaches() {
    let grep = json!({"name": "grep", "input_schema": {"type": "object"}});
    // Anthropic: a thinking block carrying a cache breakpoint; an error result with no content;
    // two tools of one name.
    let b = json!({"model": "m", "max_tokens": 10, "tools": [grep, grep], "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "s",
             "cache_control": {"type": "ephemeral"}},
            {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "", "is_error": true}]}]});
    let v = anthropic_body_violations(&b).join("\n");
    for want in [
        "messages.1.content.0.thinking.cache_control: Extra inputs are not permitted",
        "messages.2.content.0.tool_result: content cannot be empty if `is_error` is true",
        "tools: Tool names must be unique.",
    ] {
        assert!(v.contains(want), "{want}: {v}");
    }
    // The same with a breakpoint on the tool call, content in the error result and one tool:
    // accepted (an empty result that is no error is too).
    let b = json!({"model": "m", "max_tokens": 10, "tools": [grep], "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "s"},
            {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {},
             "cache_control": {"type": "ephemeral"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "", "is_error": false},
            {"type": "text", "text": "so?"}]}]});
    assert_eq!(anthropic_body_violations(&b), Vec::<String>::new());
    // Anthropic with thinking: top_k, a top_p below 0.95, forced tool use.
    let thinking = |extra: Value| {
        let mut b = json!({"model": "m", "max_tokens": 2048,
            "thinking": {"type": "enabled", "budget_tokens": 1024}, "tools": [grep],
            "messages": [{"role": "user", "content": "hi"}]});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        anthropic_body_violations(&b).join("\n")
    };
    let v = thinking(json!({"top_k": 5, "top_p": 0.9, "tool_choice": {"type": "any"}}));
    for want in ["`top_k`", "`top_p` must be", "tool_choice forces tool use"] {
        assert!(v.contains(want), "{want}: {v}");
    }
    let v = thinking(json!({"tool_choice": {"type": "tool", "name": "grep"}}));
    assert!(v.contains("tool_choice forces tool use"), "{v}");
    for ok in [
        json!({"tool_choice": {"type": "none"}, "top_p": 0.95}),
        json!({"tool_choice": {"type": "auto"}}),
    ] {
        assert_eq!(thinking(ok.clone()), "", "{ok}");
    }
    // OpenAI: tool_choice and parallel_tool_calls without tools, an empty tools array.
    let ask = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]});
    let with = |extra: Value| {
        let mut b = ask.clone();
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        openai_violations(&b).join("\n")
    };
    let v = with(json!({"tool_choice": "none", "parallel_tool_calls": false}));
    for want in [
        "'tool_choice' is only allowed when 'tools' are specified",
        "'parallel_tool_calls' is only allowed when 'tools' are specified",
    ] {
        assert!(v.contains(want), "{want}: {v}");
    }
    assert!(with(json!({"tools": []})).contains("empty array"));
    let tools = json!([{"type": "function", "function": {"name": "grep"}}]);
    assert_eq!(
        with(json!({"tools": tools, "tool_choice": "none", "parallel_tool_calls": false})),
        ""
    );
}

#[tokio::test]
async fn a_thinking_turn_before_the_question_takes_no_cache_breakpoint() {
    // Prompt caching marks the end of the history before the question. With thinking on, a
    // replayed assistant turn with a blank text and no calls is its thinking alone; the API
    // refuses `cache_control` on a thinking block, so the mark goes on the block before it.
    let server = StrictLlm::start().await;
    let mut c = config(&server, ProviderKind::Anthropic);
    c.thinking = Some(1024);
    c.prompt_cache = true;
    let p = build(&c);
    let mut thought = Message::assistant("", vec![]);
    thought.thinking_blocks = vec![ThinkingBlock::Thinking {
        thinking: "The token is in a.py.".into(),
        signature: "EpMCsig==".into(),
    }];
    // The thought alone as the turn before the question (after the tool results), and after
    // the assistant's answer (merged into its turn, after its text).
    let mut alone: Vec<Message> = history()[..5].to_vec();
    alone.push(thought.clone());
    alone.push(Message::user("And where is it defined?"));
    let mut after_text = history();
    after_text.insert(6, thought);
    for (messages, marked) in [(alone, "tool_result"), (after_text, "text")] {
        for ask in [
            ChatRequest::new(messages.clone()),
            ChatRequest::new(messages.clone()).with_tools(vec![grep_tool()]),
        ] {
            p.chat(&ask).await.unwrap();
            let sent = server.requests().last().unwrap().body.clone();
            let turns = sent["messages"].as_array().unwrap();
            let before = turns[turns.len() - 2]["content"].as_array().unwrap();
            let last = before.last().unwrap();
            assert_eq!(last["type"], "thinking", "{sent:#}");
            assert!(last.get("cache_control").is_none(), "{sent:#}");
            let n = sent.to_string().matches("cache_control").count();
            assert_eq!(n, 3, "system, tools and the history's end: {sent:#}");
            let mark = sent["messages"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|t| t["content"].as_array().unwrap())
                .find(|b| b.get("cache_control").is_some())
                .unwrap();
            assert_eq!(mark["type"], marked, "{sent:#}");
        }
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
}

#[tokio::test]
async fn an_error_result_with_no_output_is_sent_saying_so() {
    // A recorded command that failed and printed nothing: Anthropic answers an empty error
    // result 400; OpenAI takes it as it is.
    let server = StrictLlm::start().await;
    let mut messages = history();
    messages[4].content = String::new();
    messages[4].is_error = true;
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let p = build(&config(&server, kind));
        for ask in [
            ChatRequest::new(messages.clone()),
            ChatRequest::new(messages.clone()).with_tools(vec![grep_tool()]),
        ] {
            let r = p.chat(&ask).await;
            assert!(r.is_ok(), "{kind:?}: {r:?}");
        }
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
    let sent = server.requests().last().unwrap().body.clone();
    let result = &sent["messages"][2]["content"][1];
    assert_eq!(result["is_error"], true, "{sent:#}");
    assert_eq!(
        result["content"],
        "[the tool reported an error with no output]"
    );
}

#[tokio::test]
async fn parallel_tool_calls_is_sent_only_with_tools() {
    // A provider configured with `parallel_tool_calls` also answers requests without tools (the
    // judge, the summarizer, a question with no sandbox): OpenAI answers those 400.
    let server = StrictLlm::start().await;
    let mut c = config(&server, ProviderKind::Openai);
    c.extra_body
        .insert("parallel_tool_calls".into(), json!(false));
    let p = build(&c);
    p.chat(&ChatRequest::new(vec![Message::user("go")]))
        .await
        .unwrap();
    let sent = server.requests().last().unwrap().body.clone();
    assert!(sent.get("parallel_tool_calls").is_none(), "{sent}");
    p.chat(&ChatRequest::new(vec![Message::user("go")]).with_tools(vec![grep_tool()]))
        .await
        .unwrap();
    let sent = server.requests().last().unwrap().body.clone();
    assert_eq!(sent["parallel_tool_calls"], false, "{sent}");
    // A history's tools, declared and not offered, are tools too.
    p.chat(&ChatRequest::new(history())).await.unwrap();
    let sent = server.requests().last().unwrap().body.clone();
    assert_eq!(sent["tool_choice"], "none");
    assert_eq!(sent["parallel_tool_calls"], false, "{sent}");
    assert_eq!(server.rejected(), Vec::<String>::new());
}

#[tokio::test]
async fn a_large_thinking_budget_never_asks_past_the_models_output_limit() {
    // claude-sonnet-4-5 writes at most 64,000 output tokens. A thinking budget of 62,000 plus
    // the default answer (4,096) or an eval's answer limit was a 400 on every call.
    let server = StrictLlm::start().await;
    let mut c = config(&server, ProviderKind::Anthropic);
    c.thinking = Some(62_000);
    assert_eq!(c.check_parameters(), Vec::new());
    let p = build(&c);
    for asked in [None, Some(200), Some(4_000), Some(63_000)] {
        let mut req = ChatRequest::new(history()).with_tools(vec![grep_tool()]);
        req.sampling.max_tokens = asked;
        let r = p.chat(&req).await;
        assert!(r.is_ok(), "{asked:?}: {r:?}");
        let sent = server.requests().last().unwrap().body.clone();
        let m = sent["max_tokens"].as_u64().unwrap();
        assert!(m > 62_000 && m <= 64_000, "{asked:?}: {m}");
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
    // The rule itself, and a budget that leaves no room is refused at load.
    let b = json!({"model": "claude-sonnet-4-5-20250929", "max_tokens": 64_001,
        "messages": [{"role": "user", "content": "hi"}]});
    let v = anthropic_body_violations(&b).join("\n");
    assert!(
        v.contains("64001 > 64000, which is the maximum allowed number of output tokens"),
        "{v}"
    );
    c.thinking = Some(64_000);
    let keys: Vec<&str> = c.check_parameters().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["thinking"]);
}

#[tokio::test]
async fn a_history_of_more_than_128_tools_declares_at_most_128_to_openai() {
    // A question with no tools of its own about a history that used 130 distinct tools (an
    // MCP-heavy session): OpenAI refuses more than 128 declared tools.
    let server = StrictLlm::start().await;
    let mut messages = vec![Message::user("go")];
    for i in 0..130 {
        let name = format!("mcp_tool_{i}");
        let id = format!("call_{i}");
        messages.push(Message::assistant(
            "",
            vec![ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: json!({}),
            }],
        ));
        messages.push(Message::tool(id, name, "ok"));
    }
    messages.push(Message::user("Which tool ran first?"));
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let p = build(&config(&server, kind));
        let r = p.chat(&ChatRequest::new(messages.clone())).await;
        assert!(r.is_ok(), "{kind:?}: {r:?}");
        let sent = server.requests().last().unwrap().body.clone();
        let declared = sent["tools"].as_array().unwrap().len();
        let want = if kind == ProviderKind::Openai {
            128
        } else {
            130
        };
        assert_eq!(declared, want, "{kind:?}");
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
    // The rules: 129 tools, a turn of 129 calls.
    let tool = json!({"type": "function", "function": {"name": "t"}});
    let call = json!({"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}});
    let b = json!({"model": "gpt-4o", "tools": vec![tool; 129], "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": vec![call; 129]}]});
    let v = openai_violations(&b).join("\n");
    for want in [
        "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 129 instead.",
        "Invalid 'messages[1].tool_calls': array too long.",
    ] {
        assert!(v.contains(want), "{want}: {v}");
    }
}

/// A recorded history that breaks every rule both APIs share: tool names outside
/// `^[a-zA-Z0-9_-]{1,64}$` (SWE-agent's `./rock`, a redacted Codex name), a Gemini CLI call id
/// of 42 characters, whitespace-only texts, and a last tool call with no result (a run stopped
/// mid-step) right before the question.
fn hostile_history() -> Vec<Message> {
    let named = |id: &str, name: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: json!({"cmd": "x"}),
    };
    let gemini = "list_directory-1764625554423-6b5d2c6179cc4";
    let redacted = "[REDACTED_NAME len=44 sha=cf7b17a4]";
    vec![
        Message::system("You are a CTF player."),
        Message::user("Solve it."),
        Message::assistant("\n  ", vec![named("call_1", "./rock")]),
        Message::tool("call_1", "./rock", "Enter the key:"),
        Message::assistant(
            "",
            vec![named(gemini, "list_directory"), named("c3", redacted)],
        ),
        Message::tool(gemini, "list_directory", "rock\nflag.txt"),
        Message::tool("c3", redacted, "ok"),
        Message::user(" \n"),
        Message::assistant("  ", vec![]),
        Message::assistant("Submitting.", vec![named("call_9", "RsaCtfTool.py")]),
        Message::user("What was the key?"),
    ]
}

#[tokio::test]
async fn histories_breaking_the_shared_rules_pass_both_apis() {
    let server = StrictLlm::start().await;
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let mut thinking = config(&server, kind);
        if kind == ProviderKind::Anthropic {
            thinking.thinking = Some(1024);
        }
        for c in [config(&server, kind), thinking] {
            let p = build(&c);
            // With no tools (the needle's reference, the drift probes) and with the eval
            // agent's own.
            let asks = [
                ChatRequest::new(hostile_history()),
                ChatRequest::new(hostile_history()).with_tools(vec![grep_tool()]),
            ];
            for ask in &asks {
                let r = p.chat(ask).await;
                assert!(r.is_ok(), "{kind:?}: {r:?}");
            }
        }
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
    // The run stopped mid-step: the last call got an error result saying so.
    let openai = &server.requests()[0].body;
    let msgs = openai["messages"].as_array().unwrap();
    let last_result = &msgs[msgs.len() - 2];
    assert_eq!(last_result["role"], "tool", "{openai:#}");
    assert!(
        last_result["content"]
            .as_str()
            .unwrap()
            .contains("no result was recorded"),
        "{last_result}"
    );
    // Names and ids map alike in declarations, calls and results.
    let declared: Vec<&str> = openai["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(declared.len(), 4, "{declared:?}");
    assert!(declared[0].starts_with("__rock_"), "{declared:?}");
    assert_eq!(msgs[2]["tool_calls"][0]["function"]["name"], declared[0]);
    assert_eq!(msgs[4]["tool_calls"][0]["id"], msgs[5]["tool_call_id"]);
}

/// Tool results whose call is not in the request: a compaction cut between a call and its
/// result (the view starts at the result), an imported trace's stray result inside a run of
/// results and after a user turn. Both APIs answer such a result 400; it is sent as user text
/// naming the tool, after the results of its run.
fn orphan_history() -> Vec<Message> {
    vec![
        Message::system("You are a coding agent."),
        Message::tool("call_cut", "grep", "a.py:1: token = 42"),
        Message::user("Find the secret."),
        Message::assistant(
            "Searching.",
            vec![call("call_1", json!({"pattern": "secret"}))],
        ),
        Message::tool("call_stray", "./rock", "stray output"),
        Message::tool("call_1", "grep", "b.py:2: secret = 7"),
        Message::user("Go on."),
        Message::tool("call_late", "grep", "late output"),
        Message::user("What is the token?"),
    ]
}

#[tokio::test]
async fn orphan_results_pass_both_apis_as_text_naming_the_tool() {
    let server = StrictLlm::start().await;
    let mut thinking = config(&server, ProviderKind::Anthropic);
    thinking.thinking = Some(1024);
    let configs = [
        config(&server, ProviderKind::Openai),
        config(&server, ProviderKind::Anthropic),
        thinking,
    ];
    for c in &configs {
        let p = build(c);
        for ask in [
            ChatRequest::new(orphan_history()),
            ChatRequest::new(orphan_history()).with_tools(vec![grep_tool()]),
        ] {
            let r = p.chat(&ask).await;
            assert!(r.is_ok(), "{:?}: {r:?}", c.kind);
        }
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
    let openai = &server.requests()[0].body;
    let msgs = openai["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "user",
            "assistant",
            "tool",
            "user",
            "user",
            "user",
            "user"
        ],
        "{openai:#}"
    );
    // The real result stays a result, right after its call; the stray one follows as text.
    assert_eq!(msgs[4]["tool_call_id"], "call_1");
    let stray = msgs[5]["content"].as_str().unwrap();
    assert!(
        stray.contains("`./rock`") && stray.contains("stray output"),
        "{stray}"
    );
    let cut = msgs[1]["content"].as_str().unwrap();
    assert!(
        cut.contains("`grep`") && cut.contains("token = 42"),
        "{cut}"
    );
}

#[tokio::test]
async fn a_tool_the_caller_named_outside_the_rule_comes_back_under_its_name() {
    use sha2::Digest;
    let server = StrictLlm::start().await;
    let tool = ToolDef {
        name: "RsaCtfTool.py".into(),
        ..grep_tool()
    };
    // What it is sent as: `_` for the dot, then `_` and 8 hex digits of its SHA-256.
    let digest = hex::encode(sha2::Sha256::digest(b"RsaCtfTool.py"));
    let wire = format!("RsaCtfTool_py_{}", &digest[..8]);
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let p = build(&config(&server, kind));
        server.play([Scenario::ToolCalls(vec![(wire.clone(), json!({"n": 1}))])]);
        let r = p
            .chat(&ChatRequest::new(vec![Message::user("factor n")]).with_tools(vec![tool.clone()]))
            .await
            .unwrap();
        assert_eq!(r.message.tool_calls[0].name, "RsaCtfTool.py", "{kind:?}");
        let body = server.requests().last().unwrap().body.to_string();
        assert!(body.contains(&wire), "{body}");
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
}

/// An account that cannot pay: OpenAI's 429 `insufficient_quota` and Anthropic's 400 "Your
/// credit balance is too low to access the Anthropic API" are billing errors, not retried, with
/// the server's message.
#[tokio::test]
async fn an_exhausted_quota_is_not_waited_out() {
    for (kind, status, said) in [
        (ProviderKind::Openai, 429, "You exceeded your current quota"),
        (
            ProviderKind::Anthropic,
            400,
            "Your credit balance is too low",
        ),
    ] {
        let server = StrictLlm::start().await;
        let mut c = config(&server, kind);
        c.max_retries = 3;
        let p = build(&c);
        server.play([Scenario::QuotaExhausted, Scenario::Text("late".into())]);
        let e = p
            .chat(&ChatRequest::new(vec![Message::user("2+2?")]))
            .await
            .unwrap_err();
        assert!(
            matches!(e, ProviderError::Billing { status: s, .. } if s == status),
            "{kind:?}: {e:?}"
        );
        assert_eq!(e.kind(), "provider_billing");
        assert!(e.to_string().contains(said), "{e}");
        assert_eq!(server.requests().len(), 1, "{kind:?}: not retried");
    }
}

#[tokio::test]
async fn what_ctxbench_sends_passes_both_apis() {
    let server = StrictLlm::start().await;
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let p = build(&config(&server, kind));
        let mut req = ChatRequest::new(history()).with_tools(vec![grep_tool()]);
        req.sampling.max_tokens = Some(200);
        let r = p.chat(&req).await.unwrap();
        assert_eq!(r.message.content, "ok");
        // The plain question too, and parallel tool calls coming back.
        server.play([Scenario::ToolCalls(vec![
            ("grep".into(), json!({"pattern": "a"})),
            ("grep".into(), json!({"pattern": "b"})),
        ])]);
        let r = p
            .chat(&ChatRequest::new(vec![Message::user("go")]).with_tools(vec![grep_tool()]))
            .await
            .unwrap();
        assert_eq!(r.message.tool_calls.len(), 2, "{kind:?}");
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
    assert_eq!(server.accepted(), 4);
}

#[tokio::test]
async fn a_history_with_tool_blocks_and_no_tools_still_passes() {
    // The needle's reference question and the drift probes ask about a replayed history with
    // no tools of their own: the tools it used are declared, and not offered.
    let server = StrictLlm::start().await;
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let p = build(&config(&server, kind));
        let r = p.chat(&ChatRequest::new(history())).await.unwrap();
        assert_eq!(r.message.content, "ok", "{kind:?}");
        let body = server.requests().last().unwrap().body.clone();
        let tools = body["tools"].as_array().expect("tools declared");
        assert_eq!(tools.len(), 1, "{body}");
        let none = if kind == ProviderKind::Openai {
            json!("none")
        } else {
            json!({"type": "none"})
        };
        assert_eq!(body["tool_choice"], none);
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
    // Without the declaration the Anthropic rule fires (the 400 the real API gives).
    let mut body = server.requests().last().unwrap().body.clone();
    body.as_object_mut().unwrap().remove("tools");
    let v = anthropic_body_violations(&body);
    assert!(v.iter().any(|m| m.contains("must define tools")), "{v:?}");
}

#[tokio::test]
async fn rate_limits_with_each_header_are_waited_out() {
    let server = StrictLlm::start().await;
    // An RFC 3339 reset 1-2 s ahead (whole seconds), made when its case runs.
    let reset = || {
        let at = std::time::SystemTime::now() + Duration::from_millis(1000);
        let secs = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 1;
        ctxbench::record::run_info::rfc3339_utc(std::time::UNIX_EPOCH + Duration::from_secs(secs))
    };
    let cases: Vec<(ProviderKind, &'static str, Option<&str>, Duration)> = vec![
        (
            ProviderKind::Openai,
            "retry-after",
            Some("1"),
            Duration::from_secs(1),
        ),
        (
            ProviderKind::Openai,
            "retry-after-ms",
            Some("1500"),
            Duration::from_millis(1500),
        ),
        (
            ProviderKind::Openai,
            "x-ratelimit-reset-requests",
            Some("1s200ms"),
            Duration::from_millis(1200),
        ),
        (
            ProviderKind::Anthropic,
            "anthropic-ratelimit-requests-reset",
            None,
            Duration::from_millis(1000),
        ),
    ];
    for (kind, name, value, at_least) in cases {
        // Timed from before the reset is made: a reset ≥ 1 s after `start` (timed after it,
        // building the provider under load made the wait read 998.6 ms).
        let start = Instant::now();
        let value = value.map_or_else(reset, str::to_string);
        let p = build(&config(&server, kind));
        server.play([
            Scenario::RateLimited(name, value.clone()),
            Scenario::Text("4".into()),
        ]);
        let r = p
            .chat(&ChatRequest::new(vec![Message::user("2+2?")]))
            .await
            .unwrap();
        assert_eq!((r.message.content.as_str(), r.attempts), ("4", 2), "{name}");
        assert!(
            start.elapsed() >= at_least,
            "{name}: {value}: {:?}",
            start.elapsed()
        );
    }
    assert!(server.rejected().is_empty());
}

#[tokio::test]
async fn failures_are_classified_for_both_apis() {
    let server = StrictLlm::start().await;
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let mut c = config(&server, kind);
        c.max_retries = 1;
        let p = build(&c);
        let ask = ChatRequest::new(vec![Message::user("2+2?")]);
        // 529 (Anthropic) / 503, and 500: retried, then answered.
        server.play([Scenario::Overloaded, Scenario::Text("a".into())]);
        assert_eq!(p.chat(&ask).await.unwrap().attempts, 2);
        server.play([Scenario::ServerError, Scenario::Text("b".into())]);
        assert_eq!(p.chat(&ask).await.unwrap().attempts, 2);
        server.play([Scenario::ContextLength]);
        let e = p.chat(&ask).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::ContextOverflow { .. }),
            "{kind:?}: {e:?}"
        );
        server.play([Scenario::TruncatedJson]);
        let e = p.chat(&ask).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::BadResponse { .. }),
            "{kind:?}: {e:?}"
        );
        server.play([Scenario::ErrorIn200, Scenario::ErrorIn200]);
        let e = p.chat(&ask).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::Server { status: 502, .. }),
            "{kind:?}: {e:?}"
        );
        // A cut-off answer and a refusal come back with their finish reason.
        server.play([Scenario::LengthEmpty]);
        let r = p.chat(&ask).await.unwrap();
        assert!(r.message.content.is_empty());
        let want = if kind == ProviderKind::Openai {
            "length"
        } else {
            "max_tokens"
        };
        assert_eq!(r.finish_reason.as_deref(), Some(want));
        server.play([Scenario::Refusal("I can't help with that.".into())]);
        let r = p.chat(&ask).await.unwrap();
        let want = if kind == ProviderKind::Openai {
            "stop"
        } else {
            "refusal"
        };
        assert_eq!(r.finish_reason.as_deref(), Some(want));
        // A server that reports fewer prompt tokens than it was sent.
        server.play([Scenario::UnderReportedPrompt(0.25)]);
        let r = p.chat(&ask).await.unwrap();
        let sent = server.requests().last().unwrap().raw_body.len() as u64;
        assert_eq!(
            r.usage.input,
            (sent.div_ceil(4) as f64 * 0.25).round() as u64
        );
    }
    assert!(server.rejected().is_empty(), "{:?}", server.rejected());
}

#[tokio::test]
async fn prompt_cache_marks_the_stable_prefix_anthropic_only() {
    let server = StrictLlm::start().await;
    let mut c = config(&server, ProviderKind::Anthropic);
    c.prompt_cache = true;
    let p = build(&c);
    let req = ChatRequest::new(history()).with_tools(vec![grep_tool()]);
    p.chat(&req).await.unwrap();
    let body = server.requests().last().unwrap().body.clone();
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        body["tools"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let turns = body["messages"].as_array().unwrap();
    let before_last = &turns[turns.len() - 2]["content"];
    let last_block = before_last.as_array().unwrap().last().unwrap();
    assert_eq!(
        last_block["cache_control"],
        json!({"type": "ephemeral"}),
        "{body}"
    );
    assert!(
        turns
            .last()
            .unwrap()
            .to_string()
            .find("cache_control")
            .is_none(),
        "the question itself is not cached"
    );
    assert!(server.rejected().is_empty(), "{:?}", server.rejected());
    // Without prompt_cache nothing is marked.
    let plain = build(&config(&server, ProviderKind::Anthropic));
    plain.chat(&req).await.unwrap();
    let body = server.requests().last().unwrap().body.to_string();
    assert!(!body.contains("cache_control"), "{body}");
    // OpenAI caches unasked: the key is refused there.
    let mut o = config(&server, ProviderKind::Openai);
    o.prompt_cache = true;
    let keys: Vec<&str> = o.check_parameters().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["prompt_cache"]);
}

#[tokio::test]
async fn replayed_tool_arguments_are_always_json_objects() {
    // Recorded traces hold arguments that are invalid JSON (kept as raw text), a bare number,
    // and an object's text in recorded key order: vLLM refuses anything but an object.
    let server = StrictLlm::start().await;
    let history = vec![
        Message::user("go"),
        Message::assistant(
            "",
            vec![
                call("c1", json!("{bad json")),
                call("c2", json!(7)),
                call("c3", json!("{\"z\": 1, \"a\": 2}")),
            ],
        ),
        Message::tool("c1", "grep", "x"),
        Message::tool("c2", "grep", "y"),
        Message::tool("c3", "grep", "z"),
        Message::user("so?"),
    ];
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let p = build(&config(&server, kind));
        let req = ChatRequest::new(history.clone()).with_tools(vec![grep_tool()]);
        p.chat(&req).await.unwrap();
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
    let openai = &server.requests()[0].body;
    let args: Vec<&str> = openai["messages"][1]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["function"]["arguments"].as_str().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            r#"{"_raw":"{bad json"}"#,
            r#"{"_raw":7}"#,
            r#"{"z": 1, "a": 2}"#
        ]
    );
}

#[tokio::test]
async fn thinking_and_tool_use_loop_sends_the_thinking_back_unchanged() {
    // Extended thinking on, the model calls a tool: the next request (history + the model's
    // turn + the tool result) must start that turn with the thinking block it came with, signed
    // as it was. Before the blocks were kept, every second step of a thinking agent was a 400.
    let server = StrictLlm::start().await;
    let mut c = config(&server, ProviderKind::Anthropic);
    c.thinking = Some(1024);
    let p = build(&c);
    server.play([Scenario::ToolCalls(vec![(
        "grep".into(),
        json!({"pattern": "token"}),
    )])]);
    let mut messages = vec![Message::user("Find the token.")];
    let first = p
        .chat(&ChatRequest::new(messages.clone()).with_tools(vec![grep_tool()]))
        .await
        .unwrap();
    let turn = first.message.clone();
    assert_eq!(turn.thinking_blocks.len(), 1, "{turn:?}");
    let call_id = turn.tool_calls[0].id.clone();
    messages.push(turn.clone());
    messages.push(Message::tool(call_id, "grep", "a.py:1: token = 42"));
    let second = p
        .chat(&ChatRequest::new(messages.clone()).with_tools(vec![grep_tool()]))
        .await
        .unwrap();
    assert_eq!(second.message.content, "ok");
    assert_eq!(server.rejected(), Vec::<String>::new());
    let sent = server.requests().last().unwrap().body.clone();
    let content = &sent["messages"][1]["content"];
    assert_eq!(content[0]["type"], "thinking", "{sent:#}");
    let thought = content[0]["thinking"].as_str().unwrap();
    assert_eq!(content[0]["signature"], signature_of(thought));
    assert_eq!(content[1]["type"], "tool_use");

    // The same turn recorded without its thinking (another vendor's history): its call and
    // result go as text, thinking stays on, and the API's rule holds.
    messages[1].thinking_blocks.clear();
    p.chat(&ChatRequest::new(messages).with_tools(vec![grep_tool()]))
        .await
        .unwrap();
    assert_eq!(server.rejected(), Vec::<String>::new());
    let sent = server.requests().last().unwrap().body.clone();
    assert_eq!(sent["thinking"]["type"], "enabled");
    assert_eq!(
        sent["messages"][1]["content"][0]["type"], "text",
        "{sent:#}"
    );

    // Thinking off: the OpenAI-compatible and the Anthropic encoders send no thinking block.
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let p = build(&config(&server, kind));
        let history = vec![Message::user("Find the token."), turn.clone()];
        let mut history = history;
        history.push(Message::tool(
            turn.tool_calls[0].id.clone(),
            "grep",
            "a.py:1: token = 42",
        ));
        p.chat(&ChatRequest::new(history).with_tools(vec![grep_tool()]))
            .await
            .unwrap();
        let raw = server.requests().last().unwrap().raw_body.clone();
        assert!(!raw.contains("strict-sig-"), "{kind:?}: {raw}");
    }
    assert_eq!(server.rejected(), Vec::<String>::new());
}

/// A long history of distinct messages (~1,000 o200k tokens each).
fn long_history() -> Vec<Message> {
    let text = |who: &str, n: usize| -> String {
        (0..120)
            .map(|i| {
                format!(
                    "{who} line {i}: parse_{n}_{i} returned {} items\n",
                    i * 7 + n
                )
            })
            .collect()
    };
    vec![
        Message::system(text("system", 1)),
        Message::user(text("user", 2)),
        Message::assistant(
            text("assistant", 3),
            vec![call("call_1", json!({"pattern": text("arg", 4)}))],
        ),
        Message::tool("call_1", "grep", text("tool", 5)),
        Message::user(text("user", 6)),
    ]
}

/// Asks `ask` of `p` with the server reporting `reported` prompt tokens; whether the answer's
/// prompt is flagged as truncated.
async fn flagged(server: &StrictLlm, p: &dyn Provider, ask: &ChatRequest, reported: u64) -> bool {
    // The server reports the body's bytes / 4 times the fraction: the fraction that gives
    // `reported` for this request's body (the same bytes every time).
    let body = server
        .requests()
        .last()
        .map(|r| r.raw_body.len() as u64)
        .expect("asked once before");
    let f = reported as f64 / body.div_ceil(4) as f64;
    server.play([Scenario::UnderReportedPrompt(f)]);
    let r = p.chat(ask).await.unwrap();
    assert_eq!(r.usage.input, reported.max(1));
    r.prompt_truncated
}

#[tokio::test]
async fn the_truncation_check_answers_the_same_with_counts_kept_from_earlier_calls() {
    // A provider keeps each message's whole count across its calls (`PromptCounts`): its answer
    // to each call must be a fresh provider's. Partial counts (a small report stops counting
    // inside a message) come first, then reports one token either side of where a fresh
    // provider starts flagging; then a request that shares the first messages.
    let server = StrictLlm::start().await;
    let c = config(&server, ProviderKind::Openai);
    let mut longer = long_history();
    longer.push(Message::assistant("Looking.", vec![]));
    longer.push(Message::user("Where is parse_2_7 defined?"));
    let asks = [ChatRequest::new(long_history()), ChatRequest::new(longer)];
    let warm = build(&c);
    for ask in &asks {
        // Once to learn the body's size (and count it whole: a report of the body's bytes is
        // no cut).
        server.play([Scenario::UnderReportedPrompt(4.0)]);
        assert!(!build(&c).chat(ask).await.unwrap().prompt_truncated);
        // The largest report a fresh provider flags (it and every report below it are flagged).
        let (mut lo, mut hi) = (1u64, 100_000u64);
        assert!(flagged(&server, &*build(&c), ask, lo).await);
        assert!(!flagged(&server, &*build(&c), ask, hi).await);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if flagged(&server, &*build(&c), ask, mid).await {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        // … which is where ctxbench's own count of the messages puts it.
        let o200k = ctxbench::tokens::BpeCounter::o200k();
        let count: u64 = ask.messages.iter().map(|m| o200k.count_message(m)).sum();
        let edge = (PROMPT_TRUNCATION_RATIO * count as f64).ceil() as u64 - 1;
        assert_eq!(lo, edge, "{count} tokens counted");
        assert!(lo > 1_000, "the edge is past the check's minimum: {lo}");
        for reported in [1, 200, lo / 2, lo, hi, 1, lo, hi, 3 * hi] {
            assert_eq!(
                flagged(&server, &*warm, ask, reported).await,
                reported <= lo,
                "reported {reported} (a fresh provider flags up to {lo})"
            );
        }
    }
    assert!(server.rejected().is_empty(), "{:?}", server.rejected());
}
