//! The offline provider: the agent behind the [`Provider`] interface, and the provider
//! builder that adds it to the HTTP ones.

use super::respond_to;
use crate::evalspec::needle::NeedleSearch;
use crate::providers::{
    BoxFuture, ChatRequest, ChatResponse, Provider, ProviderConfig, ProviderError, ProviderInfo,
    ProviderKind, Sampling, ToolProtocol,
};
use crate::tokens::approx::ApproxCounter;
use crate::tokens::TokenCounter;
use crate::trace::{Message, Usage};
use std::sync::Arc;

/// Model id the offline provider reports (priced at $0 in `data/pricing.toml`: it is free).
pub const OFFLINE_MODEL: &str = "offline";

/// The offline provider: [`respond`](super::respond) behind the [`Provider`] interface. Usage
/// is counted with the `approx` counter (chars/4 + 3 per message) so token totals move with
/// what was sent.
pub struct OfflineProvider {
    info: ProviderInfo,
    counter: ApproxCounter,
    search: NeedleSearch,
}

impl OfflineProvider {
    /// The offline agent with a search bound for recall questions.
    pub fn with_search(search: NeedleSearch) -> Self {
        OfflineProvider {
            search,
            ..Self::new()
        }
    }

    pub fn new() -> Self {
        OfflineProvider {
            info: ProviderInfo {
                kind: "offline".into(),
                model: OFFLINE_MODEL.into(),
                endpoint: None,
                defaults: Sampling::default(),
                tool_protocol: ToolProtocol::Native,
            },
            counter: ApproxCounter::langchain(),
            search: NeedleSearch::Auto,
        }
    }
}

impl Default for OfflineProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl Provider for OfflineProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let tool_names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
            let reply = respond_to(request.asking, &request.messages, &tool_names, self.search);
            let mut message = Message::assistant(reply.content, reply.tool_calls);
            let input: u64 = request
                .messages
                .iter()
                .map(|m| self.counter.count_message(m))
                .sum();
            let output = self.counter.count_message(&message);
            let usage = Usage {
                input,
                output,
                cache_read: 0,
                cache_write: 0,
            };
            message.usage = Some(usage);
            let finish = if message.tool_calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            Ok(ChatResponse {
                message,
                usage,
                usage_reported: true,
                model: OFFLINE_MODEL.into(),
                finish_reason: Some(finish.into()),
                latency: started.elapsed(),
                attempts: 1,
                from_cache: false,
                text_tools: None,
                refusal: None,
                reasoning_tokens: None,
                prompt_truncated: false,
            })
        })
    }
}

/// Builds the provider a configuration describes, the offline agent included. The provider
/// layer builds every HTTP provider; the offline one answers the evals' questions, so it is
/// built here, above both (evals → providers, never the reverse).
pub fn build_provider(config: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    if config.kind == ProviderKind::Offline {
        config.validate()?;
        return Ok(Arc::new(OfflineProvider::new()));
    }
    crate::providers::build_provider(config)
}
