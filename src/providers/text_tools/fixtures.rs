//! Test inputs shared by the text tool protocol's unit tests.

use super::Reply;
use crate::providers::{ChatRequest, Message, ToolCall, ToolDef, Usage};
use serde_json::{json, Value};

pub fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "grep".into(),
            description: "Search every file for a pattern;\n  returns path:line:text.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "text to search for"},
                    "path": {"type": "string", "description": "directory to search in"}
                },
                "required": ["pattern"]
            }),
        },
        ToolDef {
            name: "read_file".into(),
            description: "Read one file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer"}
                },
                "required": ["path"]
            }),
        },
    ]
}

pub fn conversation() -> ChatRequest {
    let mut assistant = Message::assistant(
        "Searching.",
        vec![ToolCall {
            id: "call_a".into(),
            name: "grep".into(),
            arguments: json!({"pattern": "port"}),
        }],
    );
    assistant.usage = Some(Usage::default());
    let mut err = Message::tool("call_b", "read_file", "no such file: x");
    err.is_error = true;
    let mut r = ChatRequest::new(vec![
        Message::system("You answer questions about files."),
        Message::user("What is the staging port?"),
        assistant,
        Message::tool("call_a", "grep", "notes/db.md:3:staging port 6117"),
        err,
    ])
    .with_tools(tools())
    .with_nonce("r1");
    r.sampling.temperature = Some(0.0);
    r
}

pub fn call(name: &str, args: Value) -> Reply {
    Reply::Call {
        prose: String::new(),
        name: name.into(),
        arguments: args,
    }
}
