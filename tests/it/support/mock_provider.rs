//! A provider for the integration tests: answers with a closure, or never answers. The crate's
//! own `providers::testing::MockProvider` is `#[cfg(test)]` (it does not ship), so the
//! integration tests build theirs here, on the public `Provider` trait.

#![allow(dead_code)] // each test binary uses a different part of this module

use ctxbench::providers::{
    BoxFuture, ChatRequest, ChatResponse, Message, Provider, ProviderError, ProviderInfo, Usage,
};

type Reply = Box<dyn Fn(&ChatRequest) -> Message + Send + Sync>;

pub struct MockProvider {
    info: ProviderInfo,
    /// `None`: the call never completes.
    reply: Option<Reply>,
    usage: Usage,
}

impl MockProvider {
    /// Answers every request with the message `reply(request)` gives; model `m`, no usage.
    pub fn replying(
        reply: impl Fn(&ChatRequest) -> Message + Send + Sync + 'static,
    ) -> MockProvider {
        MockProvider {
            info: ProviderInfo {
                kind: "test".into(),
                model: "m".into(),
                endpoint: None,
                defaults: Default::default(),
                tool_protocol: Default::default(),
            },
            reply: Some(Box::new(reply)),
            usage: Usage::default(),
        }
    }

    /// Never answers (the call stays pending until dropped).
    pub fn hanging() -> MockProvider {
        MockProvider {
            reply: None,
            ..MockProvider::replying(|_| Message::assistant("", vec![]))
        }
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
}

impl Provider for MockProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        let Some(reply) = &self.reply else {
            return Box::pin(std::future::pending());
        };
        let message = reply(request);
        Box::pin(async move {
            Ok(ChatResponse::answer(
                message,
                self.usage,
                self.info.model.clone(),
                "stop",
            ))
        })
    }
}
