//! What the model is offered and how a call reaches a tool: the tools' JSON schemas and the
//! dispatch of a named call with its arguments.

use serde_json::{json, Value};

use super::{Sandbox, ToolOutput, TOOL_NAMES};

impl Sandbox {
    /// JSON schemas of the tools, in the OpenAI function format (`{name, description,
    /// parameters}`); providers translate them to their own wire shape.
    pub fn tool_schemas() -> Vec<Value> {
        vec![
            json!({
                "name": "ls",
                "description": "List the files and directories at a path of the saved history store. '/' is the store root.",
                "parameters": {"type": "object", "properties": {
                    "path": {"type": "string", "description": "Directory to list, default '/'"}
                }}
            }),
            json!({
                "name": "glob",
                "description": "Find files in the history store whose path matches a glob pattern, e.g. '**/*.md'.",
                "parameters": {"type": "object", "properties": {
                    "pattern": {"type": "string"}
                }, "required": ["pattern"]}
            }),
            json!({
                "name": "grep",
                "description": "Search file contents in the history store with a regular expression. Returns path:line: text for each matching line.",
                "parameters": {"type": "object", "properties": {
                    "pattern": {"type": "string", "description": "Regular expression"},
                    "path": {"type": "string", "description": "File or directory to search, default '/'"},
                    "glob": {"type": "string", "description": "Only search files matching this glob"},
                    "ignore_case": {"type": "boolean"}
                }, "required": ["pattern"]}
            }),
            json!({
                "name": "read_file",
                "description": "Read a file of the history store with line numbers. offset is the first line (0-based), limit the number of lines.",
                "parameters": {"type": "object", "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1}
                }, "required": ["path"]}
            }),
        ]
    }

    /// Run one tool call. Unknown tools and bad arguments are errors the model sees.
    pub fn call(&self, name: &str, args: &Value) -> ToolOutput {
        let s = |k: &str| args.get(k).and_then(Value::as_str);
        let n = |k: &str| args.get(k).and_then(Value::as_u64).map(|v| v as usize);
        let out = match name {
            "ls" => self.ls(s("path").unwrap_or("/")),
            "glob" => match s("pattern") {
                Some(p) => self.glob(p),
                None => Err("glob needs a string argument 'pattern'".to_string()),
            },
            "grep" => match s("pattern") {
                Some(p) => self.grep(
                    p,
                    s("path").unwrap_or("/"),
                    s("glob"),
                    args.get("ignore_case")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                ),
                None => Err("grep needs a string argument 'pattern'".to_string()),
            },
            "read_file" => match s("path") {
                Some(p) => self.read_file(p, n("offset").unwrap_or(0), n("limit")),
                None => Err("read_file needs a string argument 'path'".to_string()),
            },
            other => Err(format!(
                "unknown tool '{other}'; available tools: {}",
                TOOL_NAMES.join(", ")
            )),
        };
        match out {
            Ok(mut o) => {
                o.text = self.cap(o.text);
                o
            }
            Err(e) => ToolOutput::err(format!("Error: {e}")),
        }
    }
}
