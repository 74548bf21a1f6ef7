//! The engine's [`Summarizer`] backed by any [`Provider`]: renders a [`SummaryRequest`] as one
//! chat call and bridges the engine's synchronous interface to the async provider.
//!
//! The messages leaving the context are sent as a transcript inside one user message, not as
//! native chat turns: a cut can separate a tool call from its result, and APIs reject such
//! orphans (LangChain's summarization middleware renders the history as text for the same
//! reason). The system message is the configured summary prompt.
//!
//! # Where the network wait happens (decision)
//!
//! The replay stays synchronous; it is not made sans-IO. Instead the call is split in two:
//! the provider future always runs as a task **spawned on the runtime** (whose workers own the
//! sockets and timers), and the calling thread only waits for the answer on a oneshot channel.
//! The calling thread must therefore be allowed to block: the runner runs replays whose
//! summarizer is a model on tokio's blocking pool ([`crate::runner::execute::blocking_io`]),
//! never on rayon's CPU pool, so `concurrency = 8` really means 8 requests in flight on a
//! 2-core machine. `summarize` refuses to run on a rayon worker (an error, not a stall).
//! Offline summarizers stay on rayon.
//!
//! Cancellation never panics: when the unit is cancelled ([`SummaryCancel`] cancelled or
//! dropped) or the runtime shuts down (the task is dropped, its sender with it), the waiting
//! call returns [`SummaryError::Cancelled`], and every later call on the same summarizer does
//! so at once, so an abandoned replay finishes quickly as pure CPU work. A sans-IO replay
//! (yield the request, resume with the answer) would free the blocking thread as well; it was
//! left for later because it changes every layer that summarizes.

use std::sync::Arc;

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::{oneshot, watch};

use super::{ChatRequest, Message, NoAnswer, Provider, Role};
use crate::engine::summarizer::{SummaryError, SummaryOutput, SummaryRequest};
use crate::engine::Summarizer;

/// Summarizes through a provider (with its cache, retries and limits).
#[derive(Debug, Clone)]
pub struct ProviderSummarizer {
    provider: Arc<dyn Provider>,
    runtime: Handle,
    nonce: Option<String>,
    /// `Some` once [`ProviderSummarizer::cancellable`] was called.
    cancel: Option<watch::Receiver<bool>>,
}

/// Cancels the calls of one [`ProviderSummarizer`] (and its clones): in flight ones return
/// [`SummaryError::Cancelled`] at once, later ones never start. Dropping it cancels too, so a
/// unit future that is aborted while its replay runs elsewhere still stops the replay's calls.
#[derive(Debug)]
pub struct SummaryCancel(watch::Sender<bool>);

impl SummaryCancel {
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }
}

impl ProviderSummarizer {
    /// `runtime` (a multi-threaded one: its workers drive the HTTP I/O) runs every call as a
    /// task; the calling thread waits for the answer. Call `summarize` from a thread that may
    /// block (tokio's blocking pool, a plain thread) or from a multi-threaded runtime's worker
    /// (it uses `block_in_place`); never from rayon's pool. A current-thread runtime cannot
    /// block on itself: that is reported as an error.
    pub fn new(provider: Arc<dyn Provider>, runtime: Handle) -> Self {
        ProviderSummarizer {
            provider,
            runtime,
            nonce: None,
            cancel: None,
        }
    }

    /// Repeat nonce for independent repeats (part of the cache key, never sent).
    pub fn with_nonce(mut self, nonce: impl Into<String>) -> Self {
        self.nonce = Some(nonce.into());
        self
    }

    /// This summarizer with a handle that cancels its calls (see [`SummaryCancel`]).
    pub fn cancellable(mut self) -> (Self, SummaryCancel) {
        let (tx, rx) = watch::channel(false);
        self.cancel = Some(rx);
        (self, SummaryCancel(tx))
    }

    fn is_cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|rx| *rx.borrow() || rx.has_changed().is_err())
    }

    /// The chat request a summary request becomes.
    pub fn chat_request(&self, req: &SummaryRequest<'_>) -> ChatRequest {
        let mut chat = ChatRequest::new(vec![
            Message::system(req.prompt),
            Message::user(render(req)),
        ]);
        chat.sampling.max_tokens = Some(u32::try_from(req.max_tokens).unwrap_or(u32::MAX));
        chat.repeat_nonce = self.nonce.clone();
        chat
    }

    /// Runs the call as a task on the runtime and waits for its answer on this thread.
    fn call(&self, chat: ChatRequest) -> Result<super::ChatResponse, SummaryError> {
        if rayon::current_thread_index().is_some() {
            return Err(SummaryError::Failed(
                "a model summarizer was called on rayon's CPU pool; run the replay on a \
                 blocking thread (runner::execute::blocking_io)"
                    .into(),
            ));
        }
        let on_multi_thread =
            match Handle::try_current() {
                Err(_) => false,
                Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => true,
                Ok(_) => return Err(SummaryError::Failed(
                    "summarize was called on a current-thread tokio runtime, which cannot block \
                     on itself; run the replay in spawn_blocking or on a multi-threaded runtime"
                        .into(),
                )),
            };
        if self.is_cancelled() {
            return Err(SummaryError::Cancelled("the unit was cancelled".into()));
        }
        let (tx, rx) = oneshot::channel();
        let provider = Arc::clone(&self.provider);
        let mut cancel = self.cancel.clone();
        // If the runtime is shutting down, the task is dropped unpolled (no panic) and `rx`
        // sees the closed channel.
        self.runtime.spawn(async move {
            let cancelled = async {
                match cancel.as_mut() {
                    // Ends when cancelled or when the `SummaryCancel` is dropped.
                    Some(rx) => {
                        let _ = rx.wait_for(|c| *c).await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                r = provider.chat(&chat) => {
                    let _ = tx.send(r);
                }
                () = cancelled => {}
            }
        });
        let answer = if on_multi_thread {
            tokio::task::block_in_place(|| rx.blocking_recv())
        } else {
            rx.blocking_recv()
        };
        match answer {
            Ok(r) => r.map_err(|e| SummaryError::Failed(format!("{}: {e}", e.kind()))),
            Err(_) if self.is_cancelled() => {
                Err(SummaryError::Cancelled("the unit was cancelled".into()))
            }
            Err(_) => Err(SummaryError::Cancelled(
                "the runtime serving the call shut down".into(),
            )),
        }
    }
}

/// The transcript: previous summary, then each message under a role header.
pub fn render(req: &SummaryRequest<'_>) -> String {
    let mut out = String::new();
    if let Some(prev) = req.previous_summary {
        out.push_str("<previous_summary>\n");
        out.push_str(prev.trim_end());
        out.push_str("\n</previous_summary>\n\n");
    }
    out.push_str("<conversation>\n");
    for m in req.messages {
        match m.role {
            Role::Tool => {
                let name = m.name.as_deref().unwrap_or("tool");
                let id = m.tool_call_id.as_deref().unwrap_or("?");
                let err = if m.is_error { ", error" } else { "" };
                out.push_str(&format!("[tool result: {name} ({id}){err}]\n"));
            }
            role => out.push_str(&format!("[{}]\n", role.as_str())),
        }
        if !m.content.is_empty() {
            out.push_str(m.content.trim_end());
            out.push('\n');
        }
        for c in &m.tool_calls {
            out.push_str(&format!(
                "[tool call: {} ({})] {}\n",
                c.name, c.id, c.arguments
            ));
        }
    }
    out.push_str("</conversation>\n\nWrite the summary now.");
    out
}

impl Summarizer for ProviderSummarizer {
    fn summarize(&self, req: &SummaryRequest<'_>) -> Result<SummaryOutput, SummaryError> {
        let response = self.call(self.chat_request(req))?;
        // A summary that is no answer (the classification the eval agent and the judge share)
        // is a summary failure, counted in `summary_failures`: kept, a summary cut off at its
        // limit or at the model's window, or stopped by a content filter, would be scored as a
        // summary that forgot the rest.
        let model = &response.model;
        let finish = response.finish_reason.as_deref().unwrap_or("none");
        if let Some(why) = response.no_answer(false) {
            return Err(SummaryError::Unusable(match why {
                NoAnswer::CutOff => format!(
                    "{model} was cut off at its output limit (finish reason `{finish}`, {} \
                     output tokens, {} characters of summary); raise the summary provider's \
                     `max_tokens`",
                    response.usage.output,
                    response.message.content.chars().count()
                ),
                NoAnswer::ContextWindow => format!(
                    "{model} stopped at the model's context window (stop reason `{finish}`, {} \
                     output tokens, {} characters of summary)",
                    response.usage.output,
                    response.message.content.chars().count()
                ),
                NoAnswer::Filtered => format!(
                    "{model}'s summary was stopped by the provider's content filter (finish \
                     reason `{finish}`, {} characters of summary)",
                    response.message.content.chars().count()
                ),
                NoAnswer::Refused(refusal) => format!(
                    "{model} refused to summarize{}",
                    if refusal.is_empty() {
                        String::new()
                    } else {
                        format!(": {refusal}")
                    }
                ),
                NoAnswer::Empty => format!("{model} returned no text (finish reason {finish})"),
            }));
        }
        Ok(SummaryOutput {
            text: response.message.content,
            usage: response.usage,
            model: response.model,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::testing::MockProvider;
    use crate::providers::{ProviderError, ToolCall, Usage};
    use std::time::Duration;

    /// Answers with a fixed text (or error) after a real suspension, reporting usage.
    fn canned(answer: Result<&str, ProviderError>) -> Arc<MockProvider> {
        let usage = Usage {
            input: 120,
            output: 30,
            cache_read: 100,
            cache_write: 0,
        };
        Arc::new(
            MockProvider::text(answer)
                .with_model("canned-1")
                .with_usage(usage)
                .with_delay(Duration::from_millis(1)),
        )
    }

    /// Never answers; says on the channel when a call begins.
    fn never() -> (Arc<MockProvider>, std::sync::mpsc::Receiver<()>) {
        let p = MockProvider::hanging();
        let started = p.started();
        (Arc::new(p), started)
    }

    fn messages() -> Vec<Arc<Message>> {
        let mut err = Message::tool("c1", "read_file", "no such file");
        err.is_error = true;
        vec![
            Arc::new(Message::user("Fix the bug in parser.rs")),
            Arc::new(Message::assistant(
                "Reading it.",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: serde_json::json!({"path": "src/parser.rs"}),
                }],
            )),
            Arc::new(err),
        ]
    }

    fn request<'a>(msgs: &'a [Arc<Message>], prev: Option<&'a str>) -> SummaryRequest<'a> {
        SummaryRequest {
            messages: msgs,
            previous_summary: prev,
            prompt: "Summarize with ## SESSION INTENT",
            max_tokens: 512,
        }
    }

    #[test]
    fn renders_a_transcript_with_calls_results_and_the_previous_summary() {
        let msgs = messages();
        let text = render(&request(&msgs, Some("## SESSION INTENT\nfix parser\n")));
        let want = "<previous_summary>\n## SESSION INTENT\nfix parser\n</previous_summary>\n\n\
            <conversation>\n[user]\nFix the bug in parser.rs\n[assistant]\nReading it.\n\
            [tool call: read_file (c1)] {\"path\":\"src/parser.rs\"}\n\
            [tool result: read_file (c1), error]\nno such file\n</conversation>\n\n\
            Write the summary now.";
        assert_eq!(text, want);
    }

    #[test]
    fn summarizes_from_a_plain_thread() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let p = canned(Ok("## SESSION INTENT\nfix the parser"));
        let s = ProviderSummarizer::new(p.clone(), rt.handle().clone()).with_nonce("repeat-3");
        let msgs = messages();
        let out = s.summarize(&request(&msgs, None)).unwrap();
        assert_eq!(out.text, "## SESSION INTENT\nfix the parser");
        assert_eq!(out.model, "canned-1");
        assert_eq!(out.usage.cache_read, 100);
        let seen = p.seen();
        assert_eq!(
            seen[0].messages[0].content,
            "Summarize with ## SESSION INTENT"
        );
        assert!(seen[0].messages[1]
            .content
            .contains("[tool call: read_file (c1)]"));
        assert_eq!(seen[0].sampling.max_tokens, Some(512));
        assert_eq!(seen[0].repeat_nonce.as_deref(), Some("repeat-3"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn summarizes_from_inside_a_multi_thread_runtime() {
        let p = canned(Ok("summary"));
        let s = ProviderSummarizer::new(p, Handle::current());
        let msgs = messages();
        assert_eq!(s.summarize(&request(&msgs, None)).unwrap().text, "summary");
    }

    #[tokio::test]
    async fn a_current_thread_runtime_is_an_error_not_a_deadlock() {
        let p = canned(Ok("summary"));
        let s = ProviderSummarizer::new(p, Handle::current());
        let msgs = messages();
        let e = s.summarize(&request(&msgs, None)).unwrap_err();
        assert!(e.to_string().contains("current-thread"), "{e}");
    }

    #[test]
    fn provider_errors_and_empty_texts_are_reported() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let msgs = messages();
        let overflow = canned(Err(ProviderError::ContextOverflow {
            status: 400,
            message: "prompt is too long".into(),
        }));
        let e = ProviderSummarizer::new(overflow, rt.handle().clone())
            .summarize(&request(&msgs, None))
            .unwrap_err();
        assert!(
            matches!(&e, SummaryError::Failed(m) if m.starts_with("context_overflow:")),
            "{e}"
        );
        let empty = canned(Ok("  \n"));
        let e = ProviderSummarizer::new(empty, rt.handle().clone())
            .summarize(&request(&msgs, None))
            .unwrap_err();
        assert!(matches!(e, SummaryError::Unusable(_)), "{e}");
        // A summary cut off at its output limit is not a summary (it was kept as one).
        for finish in ["length", "max_tokens"] {
            let cut = Arc::new(
                MockProvider::text(Ok("## Goal\nFix the par"))
                    .with_model("canned-1")
                    .with_finish(finish),
            );
            let e = ProviderSummarizer::new(cut, rt.handle().clone())
                .summarize(&request(&msgs, None))
                .unwrap_err();
            assert!(
                matches!(&e, SummaryError::Unusable(m) if m.contains(&format!("cut off at its output limit (finish reason `{finish}`")) && m.contains("max_tokens")),
                "{e}"
            );
        }
        // A summary a content filter stopped, or one stopped at the model's context window,
        // is no summary either (it was kept as one, unflagged).
        for (finish, want) in [
            ("content_filter", "content filter"),
            ("model_context_window_exceeded", "context window"),
        ] {
            let stopped = Arc::new(
                MockProvider::text(Ok("## Goal\nFix the par"))
                    .with_model("canned-1")
                    .with_finish(finish),
            );
            let e = ProviderSummarizer::new(stopped, rt.handle().clone())
                .summarize(&request(&msgs, None))
                .unwrap_err();
            assert!(
                matches!(&e, SummaryError::Unusable(m) if m.contains(want) && m.contains(finish)),
                "{finish}: {e}"
            );
        }
        let whole =
            Arc::new(MockProvider::text(Ok("## Goal\nFix the parser.")).with_finish("end_turn"));
        assert!(ProviderSummarizer::new(whole, rt.handle().clone())
            .summarize(&request(&msgs, None))
            .is_ok());
    }

    #[test]
    fn cancelling_ends_a_call_in_flight_and_every_later_call() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (p, started) = never();
        let (s, cancel) = ProviderSummarizer::new(p, rt.handle().clone()).cancellable();
        let msgs = messages();
        std::thread::scope(|scope| {
            let call = scope.spawn(|| s.summarize(&request(&msgs, None)));
            started.recv().unwrap();
            cancel.cancel();
            let e = call.join().unwrap().unwrap_err();
            assert!(
                matches!(&e, SummaryError::Cancelled(m) if m.contains("unit")),
                "{e}"
            );
        });
        let e = s.summarize(&request(&msgs, None)).unwrap_err();
        assert!(matches!(e, SummaryError::Cancelled(_)), "{e}");
        assert!(started.try_recv().is_err(), "no call starts once cancelled");

        // Dropping the handle cancels too (an aborted unit drops it).
        let (p, started) = never();
        let (s, cancel) = ProviderSummarizer::new(p, rt.handle().clone()).cancellable();
        std::thread::scope(|scope| {
            let call = scope.spawn(|| s.summarize(&request(&msgs, None)));
            started.recv().unwrap();
            drop(cancel);
            let e = call.join().unwrap().unwrap_err();
            assert!(matches!(e, SummaryError::Cancelled(_)), "{e}");
        });
    }

    #[test]
    fn a_runtime_shutting_down_under_a_call_cancels_it_without_panicking() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (p, started) = never();
        let s = ProviderSummarizer::new(p, rt.handle().clone());
        let msgs = messages();
        std::thread::scope(|scope| {
            let call = scope.spawn(|| s.summarize(&request(&msgs, None)));
            started.recv().unwrap();
            drop(rt);
            let e = call.join().unwrap().unwrap_err();
            assert!(
                matches!(&e, SummaryError::Cancelled(m) if m.contains("shut down")),
                "{e}"
            );
        });
        // A call after the shutdown is refused the same way.
        let e = s.summarize(&request(&msgs, None)).unwrap_err();
        assert!(matches!(e, SummaryError::Cancelled(_)), "{e}");
    }

    #[test]
    fn refuses_to_wait_on_rayons_cpu_pool() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let p = canned(Ok("summary"));
        let s = ProviderSummarizer::new(p.clone(), rt.handle().clone());
        let msgs = messages();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let e = pool
            .install(|| s.summarize(&request(&msgs, None)))
            .unwrap_err();
        assert!(
            matches!(&e, SummaryError::Failed(m) if m.contains("rayon")),
            "{e}"
        );
        assert!(p.seen().is_empty(), "no request was sent");
    }
}
