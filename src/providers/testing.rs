//! Test providers for the crate's unit tests: [`ProviderInfo::for_test`] and [`MockProvider`],
//! one builder for the canned, scripted, failing, tool-calling and never-answering providers the
//! tests need. `#[cfg(test)]`: not in any build of the library (the integration tests have
//! their own, `tests/it/support/mock_provider.rs`; `tests/it/layering.rs` checks this stays so).

use super::{
    BoxFuture, ChatRequest, ChatResponse, Message, Provider, ProviderError, ProviderInfo, Usage,
};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

impl ProviderInfo {
    /// A provider description for tests: kind `test`, model `model`, no endpoint, default
    /// sampling, native tool calls.
    #[doc(hidden)]
    pub fn for_test(model: &str) -> ProviderInfo {
        ProviderInfo {
            kind: "test".into(),
            model: model.into(),
            endpoint: None,
            defaults: Default::default(),
            tool_protocol: Default::default(),
        }
    }
}

type Answer = Box<dyn Fn(&ChatRequest) -> Result<Message, ProviderError> + Send + Sync>;

/// A provider that answers each request with the text a closure gives (or its error), in a
/// response shaped like a real one (usage, model, latency settable), and records every request.
/// Build it with [`new`](Self::new), [`replying`](Self::replying), [`text`](Self::text),
/// [`script`](Self::script) or [`hanging`](Self::hanging), then adjust with the `with_…` methods.
pub struct MockProvider {
    info: ProviderInfo,
    /// `None`: the call never completes.
    answer: Option<Answer>,
    usage: Usage,
    latency: Duration,
    /// Waited (on tokio's timer) before answering.
    delay: Duration,
    /// The finish reason of every answer (`stop` unless set).
    finish: String,
    seen: Mutex<Vec<ChatRequest>>,
    started: Mutex<Option<Sender<()>>>,
}

impl MockProvider {
    /// Answers every request with `answer(request)`; model `m`, no usage, no latency.
    pub fn new(
        answer: impl Fn(&ChatRequest) -> Result<String, ProviderError> + Send + Sync + 'static,
    ) -> MockProvider {
        MockProvider::answering(move |r| answer(r).map(|text| Message::assistant(text, vec![])))
    }

    fn answering(
        answer: impl Fn(&ChatRequest) -> Result<Message, ProviderError> + Send + Sync + 'static,
    ) -> MockProvider {
        MockProvider {
            info: ProviderInfo::for_test("m"),
            answer: Some(Box::new(answer)),
            usage: Usage::default(),
            latency: Duration::ZERO,
            delay: Duration::ZERO,
            finish: "stop".into(),
            seen: Mutex::new(Vec::new()),
            started: Mutex::new(None),
        }
    }

    /// Answers every request with the same text, or fails every one with the same error.
    pub fn text(answer: Result<&str, ProviderError>) -> MockProvider {
        let answer = answer.map(str::to_string);
        MockProvider::new(move |_| answer.clone())
    }

    /// Answers call `i` with `replies[i]`; once they are used up, fails with a bad response.
    pub fn script(replies: &[&str]) -> MockProvider {
        let left: Mutex<Vec<String>> =
            Mutex::new(replies.iter().rev().map(|r| r.to_string()).collect());
        MockProvider::new(move |_| {
            left.lock()
                .unwrap()
                .pop()
                .ok_or_else(|| ProviderError::bad_response("script exhausted"))
        })
    }

    /// Never answers (the call stays pending until dropped); see [`started`](Self::started).
    pub fn hanging() -> MockProvider {
        MockProvider {
            answer: None,
            ..MockProvider::new(|_| Ok(String::new()))
        }
    }

    /// The finish reason of every answer (`length`: cut off at the output limit).
    pub fn with_finish(mut self, finish: &str) -> MockProvider {
        self.finish = finish.to_string();
        self
    }

    /// The model in its info and in every response.
    pub fn with_model(mut self, model: &str) -> MockProvider {
        self.info.model = model.into();
        self
    }

    /// The usage every response reports.
    pub fn with_usage(mut self, usage: Usage) -> MockProvider {
        self.usage = usage;
        self
    }

    /// The latency every response reports (nothing is waited: see [`with_delay`](Self::with_delay)).
    pub fn with_latency(mut self, latency: Duration) -> MockProvider {
        self.latency = latency;
        self
    }

    /// Wait `delay` on tokio's timer before answering (the call really suspends).
    pub fn with_delay(mut self, delay: Duration) -> MockProvider {
        self.delay = delay;
        self
    }

    /// A channel that receives one `()` as each later call starts.
    pub fn started(&self) -> Receiver<()> {
        let (tx, rx) = channel();
        *self.started.lock().unwrap() = Some(tx);
        rx
    }

    /// Every request received so far, in order.
    pub fn seen(&self) -> MutexGuard<'_, Vec<ChatRequest>> {
        self.seen.lock().unwrap()
    }
}

impl Provider for MockProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        self.seen.lock().unwrap().push(request.clone());
        if let Some(tx) = self.started.lock().unwrap().as_ref() {
            let _ = tx.send(());
        }
        let Some(answer) = &self.answer else {
            return Box::pin(std::future::pending());
        };
        let message = answer(request);
        Box::pin(async move {
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            Ok(ChatResponse {
                latency: self.latency,
                ..ChatResponse::answer(message?, self.usage, self.info.model.clone(), &self.finish)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_script_answers_in_order_then_fails_and_every_request_is_recorded() {
        let p = MockProvider::script(&["one", "two"]).with_model("scripted");
        let ask = |q: &str| block_on(p.chat(&ChatRequest::new(vec![Message::user(q)])));
        let r = ask("a").unwrap();
        assert_eq!(
            (r.message.content.as_str(), r.model.as_str()),
            ("one", "scripted")
        );
        assert_eq!(ask("b").unwrap().message.content, "two");
        assert!(ask("c").is_err());
        let seen: Vec<String> = p
            .seen()
            .iter()
            .map(|r| r.messages[0].content.clone())
            .collect();
        assert_eq!(seen, ["a", "b", "c"]);
        assert_eq!(p.info().model, "scripted");
    }

    #[test]
    fn a_hanging_provider_signals_the_start_and_never_answers() {
        let p = MockProvider::hanging();
        let started = p.started();
        let req = ChatRequest::new(vec![Message::user("q")]);
        let mut call = p.chat(&req);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(call.as_mut().poll(&mut cx).is_pending());
        assert!(call.as_mut().poll(&mut cx).is_pending());
        assert!(started.try_recv().is_ok());
    }
}
