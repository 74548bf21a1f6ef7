//! In-process test providers for integration tests: [`info`] (a `ProviderInfo` for tests) and
//! [`Mock`], a provider that answers each request with the message a closure gives, or never
//! answers. (Unit tests inside the crate have the same in `providers::testing`.)
#![allow(dead_code)] // each test binary uses a different part of this module

use ctxbench::providers::{
    BoxFuture, ChatRequest, ChatResponse, Message, Provider, ProviderError, ProviderInfo, Usage,
};
use std::time::Duration;

/// A provider description for tests: kind `test`, model `model`, no endpoint, default sampling,
/// native tool calls.
pub fn info(model: &str) -> ProviderInfo {
    ProviderInfo {
        kind: "test".into(),
        model: model.into(),
        endpoint: None,
        defaults: Default::default(),
        tool_protocol: Default::default(),
    }
}

type Answer = Box<dyn Fn(&ChatRequest) -> Message + Send + Sync>;

/// Answers every request with `answer(request)` (usage as set, model as in its info), or, built
/// with [`Mock::hanging`], never answers.
pub struct Mock {
    info: ProviderInfo,
    answer: Option<Answer>,
    usage: Usage,
}

impl Mock {
    /// Model `m`, no usage.
    pub fn new(answer: impl Fn(&ChatRequest) -> Message + Send + Sync + 'static) -> Mock {
        Mock {
            info: info("m"),
            answer: Some(Box::new(answer)),
            usage: Usage::default(),
        }
    }

    /// A call that stays pending until dropped.
    pub fn hanging() -> Mock {
        Mock {
            answer: None,
            ..Mock::new(|_| Message::assistant("", vec![]))
        }
    }

    /// The model in its info and in every response.
    pub fn with_model(mut self, model: &str) -> Mock {
        self.info.model = model.into();
        self
    }

    /// The usage every response reports.
    pub fn with_usage(mut self, usage: Usage) -> Mock {
        self.usage = usage;
        self
    }
}

impl Provider for Mock {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        let Some(answer) = &self.answer else {
            return Box::pin(std::future::pending());
        };
        let message = answer(request);
        Box::pin(async move {
            Ok(ChatResponse {
                message,
                usage: self.usage,
                usage_reported: true,
                model: self.info.model.clone(),
                finish_reason: Some("stop".into()),
                latency: Duration::ZERO,
                attempts: 1,
                from_cache: false,
                text_tools: None,
            })
        })
    }
}
