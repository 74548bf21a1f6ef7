//! A fault-injecting LLM API server for tests: real TCP on 127.0.0.1, HTTP/1.1, speaking the
//! OpenAI chat-completions and Anthropic Messages shapes.
//!
//! Use from any integration test with `mod support;` (this folder's `mod.rs`) and
//! `support::mock_llm::MockLlm::start().await`. Replies are scripted: each request takes the
//! next queued [`Reply`]; when the queue is empty, a responder set with
//! [`MockLlm::respond_with`] decides from the request (e.g. to drive a tool loop), else the
//! server answers with a canned success in the API shape of the request path
//! (`/v1/chat/completions` or `/v1/messages`). Every request is recorded (path, headers, JSON
//! body, arrival time).
#![allow(dead_code)] // each test binary uses a different part of this module

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A complete response.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Read the request, never answer; the connection stays open until the client gives up.
    Hang,
    /// Declare `Content-Length` larger than the body actually sent, then close: the connection
    /// breaks mid-body.
    CutOff { body: String, declared_extra: usize },
    /// A complete response whose body arrives in `chunks` pieces, `delay` apart.
    Slow {
        body: String,
        chunks: usize,
        delay: Duration,
    },
    /// Close the connection without answering.
    Close,
    /// Abort the connection with a TCP reset (RST) instead of answering.
    Reset,
}

impl Reply {
    pub fn ok(body: impl Into<String>) -> Self {
        Reply::status(200, body)
    }
    pub fn status(status: u16, body: impl Into<String>) -> Self {
        Reply::Full {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }
    /// Adds a header to a `Full` reply.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        if let Reply::Full { headers, .. } = &mut self {
            headers.push((name.to_string(), value.into()));
        }
        self
    }
}

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The raw body text.
    pub raw_body: String,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: Value,
    pub at: Instant,
    pub at_wall: SystemTime,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Computes a reply from the request (see [`MockLlm::respond_with`]).
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    responder: Option<Responder>,
    requests: Vec<Recorded>,
    in_flight: usize,
    max_in_flight: usize,
    /// Wait before answering each request (see [`MockLlm::set_delay`]).
    delay: Option<Duration>,
}

/// The running server. Dropping it stops accepting connections.
pub struct MockLlm {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl MockLlm {
    /// Binds 127.0.0.1 on a free port and starts serving.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let st = Arc::clone(&state);
        let accept = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(serve(sock, Arc::clone(&st)));
            }
        });
        MockLlm {
            addr,
            state,
            accept,
        }
    }

    /// A server on a runtime of its own (two workers), for tests that are not async: keep the
    /// runtime alive as long as the server.
    pub fn on_own_runtime() -> (tokio::runtime::Runtime, Self) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let server = rt.block_on(Self::start());
        (rt, server)
    }

    /// `http://127.0.0.1:PORT` (Anthropic base URL).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` (OpenAI base URL).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues replies, answered in order.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        self.state.lock().unwrap().script.extend(replies);
    }

    /// Answers requests the queue does not cover with `f(request)`.
    pub fn respond_with(&self, f: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) {
        self.state.lock().unwrap().responder = Some(Arc::new(f));
    }

    /// Waits `delay` before answering every later request (the request counts as in flight
    /// meanwhile), like a model that takes time to answer.
    pub fn set_delay(&self, delay: Duration) {
        self.state.lock().unwrap().delay = Some(delay);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    pub fn request_count(&self) -> usize {
        self.state.lock().unwrap().requests.len()
    }

    /// Most requests that were being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.state.lock().unwrap().max_in_flight
    }
}

async fn read_request(
    sock: &mut TcpStream,
) -> Option<(String, String, Vec<(String, String)>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Some((method, path, headers, body))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn head(status: u16, headers: &[(String, String)], len: usize) -> String {
    let mut h = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n",
        reason(status)
    );
    for (n, v) in headers {
        h.push_str(&format!("{n}: {v}\r\n"));
    }
    h.push_str("\r\n");
    h
}

async fn serve(mut sock: TcpStream, state: Arc<Mutex<State>>) {
    loop {
        let Some((method, path, headers, body)) = read_request(&mut sock).await else {
            return;
        };
        let raw_body = String::from_utf8_lossy(&body).to_string();
        let recorded = Recorded {
            method,
            body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
            raw_body,
            path,
            headers,
            at: Instant::now(),
            at_wall: SystemTime::now(),
        };
        let (scripted, responder, delay) = {
            let mut s = state.lock().unwrap();
            s.requests.push(recorded.clone());
            s.in_flight += 1;
            s.max_in_flight = s.max_in_flight.max(s.in_flight);
            (s.script.pop_front(), s.responder.clone(), s.delay)
        };
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        // The responder runs outside the lock, so it may inspect the server freely.
        let reply = scripted.unwrap_or_else(|| match responder {
            Some(f) => f(&recorded),
            None => default_reply(&recorded.path),
        });
        let keep_open = answer(&mut sock, reply).await;
        state.lock().unwrap().in_flight -= 1;
        if !keep_open {
            return;
        }
    }
}

/// Writes `reply`; false when the connection must end.
async fn answer(sock: &mut TcpStream, reply: Reply) -> bool {
    match reply {
        Reply::Full {
            status,
            headers,
            body,
        } => {
            let out = head(status, &headers, body.len()) + &body;
            sock.write_all(out.as_bytes()).await.is_ok()
        }
        Reply::Hang => {
            // Wait for the client to give up and close its end.
            let mut tmp = [0u8; 1024];
            while let Ok(n) = sock.read(&mut tmp).await {
                if n == 0 {
                    break;
                }
            }
            false
        }
        Reply::CutOff {
            body,
            declared_extra,
        } => {
            let out = head(200, &[], body.len() + declared_extra) + &body;
            let _ = sock.write_all(out.as_bytes()).await;
            let _ = sock.shutdown().await;
            false
        }
        Reply::Slow {
            body,
            chunks,
            delay,
        } => {
            if sock
                .write_all(head(200, &[], body.len()).as_bytes())
                .await
                .is_err()
            {
                return false;
            }
            let bytes = body.as_bytes();
            let step = bytes.len().div_ceil(chunks.max(1)).max(1);
            for piece in bytes.chunks(step) {
                tokio::time::sleep(delay).await;
                if sock.write_all(piece).await.is_err() || sock.flush().await.is_err() {
                    return false;
                }
            }
            true
        }
        Reply::Close => false,
        Reply::Reset => {
            // SO_LINGER 0: closing sends RST at once (the drop happens when `serve` returns).
            let _ = sock.set_zero_linger();
            false
        }
    }
}

fn default_reply(path: &str) -> Reply {
    if path.ends_with("/messages") {
        Reply::ok(anthropic_text("ok", 10, 1))
    } else {
        Reply::ok(openai_text("ok", 10, 1))
    }
}

// ------------------------------------------------------------------ canned bodies

/// An OpenAI chat-completions success with text content.
pub fn openai_text(content: &str, prompt_tokens: u64, completion_tokens: u64) -> String {
    json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1_700_000_000u64,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}
    })
    .to_string()
}

/// An OpenAI success calling one tool, with cached prompt tokens.
pub fn openai_tool_call(name: &str, arguments: Value, usage: (u64, u64, u64)) -> String {
    let (prompt, cached, completion) = usage;
    json!({
        "id": "chatcmpl-test", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_abc", "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0}}
    })
    .to_string()
}

/// An OpenAI-style error body.
pub fn openai_error(message: &str, kind: &str, code: &str) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

/// An Anthropic Messages success with text content.
pub fn anthropic_text(text: &str, input_tokens: u64, output_tokens: u64) -> String {
    json!({
        "id": "msg_test", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    })
    .to_string()
}

/// An Anthropic success with text then one tool_use block; usage `(fresh input, cache read,
/// cache write, output)`.
pub fn anthropic_tool_use(name: &str, input: Value, usage: (u64, u64, u64, u64)) -> String {
    let (fresh, read, write, out) = usage;
    json!({
        "id": "msg_test", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "Searching."},
                    {"type": "tool_use", "id": "toolu_01", "name": name, "input": input}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": fresh, "output_tokens": out,
                  "cache_creation_input_tokens": write, "cache_read_input_tokens": read}
    })
    .to_string()
}

/// An Anthropic error body.
pub fn anthropic_error(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

// ------------------------------------------------------------------ echo mode

/// The API key a request carried: `Authorization: Bearer KEY` or `x-api-key: KEY`.
pub fn request_key(r: &Recorded) -> String {
    r.header("authorization")
        .map(|v| v.trim_start_matches("Bearer ").to_string())
        .or_else(|| r.header("x-api-key").map(str::to_string))
        .unwrap_or_default()
}

/// A responder for [`MockLlm::respond_with`] that echoes the request's API key back in every
/// answer, the way a careless proxy might: per model, request 1, 5, 9 … get a 500 whose error text quotes
/// the key (retried), request 3, 7, 11 … a 200 whose key is hidden behind a JSON `\u` escape,
/// every other one a 200 quoting the Authorization header and the key in the content and the
/// model id. Anthropic paths are answered in the Anthropic shape.
pub fn echo_key_responder() -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    // One counter per requested model: which answers a role sees does not depend on how its
    // requests interleave with another role's (each role's first request gets the 500).
    let counters = std::sync::Mutex::new(std::collections::HashMap::<String, usize>::new());
    move |r: &Recorded| {
        let model = r.body["model"].as_str().unwrap_or("").to_string();
        let i = {
            let mut c = counters.lock().unwrap();
            let n = c.entry(model).or_insert(0);
            *n += 1;
            *n - 1
        };
        let key = request_key(r);
        let auth = r.header("authorization").unwrap_or("").to_string();
        let anthropic = r.path.ends_with("/messages");
        if i % 4 == 0 {
            let body = if anthropic {
                anthropic_error("api_error", &format!("upstream rejected key {key}"))
            } else {
                openai_error(
                    &format!("upstream rejected key {key}"),
                    "server_error",
                    "500",
                )
            };
            return Reply::status(500, body);
        }
        if i % 4 == 2 {
            // `\u0073` … : the first character of the key JSON-escaped.
            let mut chars = key.chars();
            let first = chars.next().map(|c| format!("\\u{:04x}", c as u32));
            let escaped = format!("{}{}", first.unwrap_or_default(), chars.as_str());
            let text = format!("Noted. Your credential is {escaped}.");
            let body = if anthropic {
                anthropic_text("PLACEHOLDER", 10, 5)
            } else {
                openai_text("PLACEHOLDER", 10, 5)
            };
            return Reply::ok(body.replace("PLACEHOLDER", &text));
        }
        let text = format!("Echo: {auth} / key={key}. The answer is unknown.");
        let mut body: Value = serde_json::from_str(&if anthropic {
            anthropic_text(&text, 10, 5)
        } else {
            openai_text(&text, 10, 5)
        })
        .unwrap();
        body["model"] = json!(format!("model-{key}"));
        Reply::ok(body.to_string())
    }
}
