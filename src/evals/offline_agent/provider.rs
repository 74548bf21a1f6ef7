//! The offline provider: the agent behind the [`Provider`] interface, and the provider
//! builder that adds it to the HTTP ones.

use super::{respond_after, respond_to, OfflineReply};
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
            let input = self.input_tokens(&[], &request.messages);
            Ok(self.response(started, reply, input))
        })
    }

    /// Answered from the shared history in place (no copy of it); the same answer and usage
    /// as [`chat`](Provider::chat) on [`ChatRequest::after`].
    fn chat_after<'a>(
        &'a self,
        history: &'a [Arc<Message>],
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let tool_names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
            let reply = match respond_after(
                request.asking,
                history,
                &request.messages,
                &tool_names,
                self.search,
            ) {
                Some(reply) => reply,
                None => return self.chat(&request.after(history)).await,
            };
            let input = self.input_tokens(history, &request.messages);
            Ok(self.response(started, reply, input))
        })
    }
}

impl OfflineProvider {
    /// Input tokens of the conversation `history` then `messages` (the shared history's
    /// counts are remembered while its messages live: every question of a sweep's units is
    /// asked on mostly the same trace messages).
    fn input_tokens(&self, history: &[Arc<Message>], messages: &[Message]) -> u64 {
        let shared: u64 = history.iter().map(|m| self.counter.count_shared(m)).sum();
        shared
            + messages
                .iter()
                .map(|m| self.counter.count_message(m))
                .sum::<u64>()
    }

    /// The response carrying `reply` to a conversation of `input` tokens, with its usage.
    fn response(
        &self,
        started: std::time::Instant,
        reply: OfflineReply,
        input: u64,
    ) -> ChatResponse {
        let mut message = Message::assistant(reply.content, reply.tool_calls);
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
        ChatResponse {
            latency: started.elapsed(),
            ..ChatResponse::answer(message, usage, OFFLINE_MODEL, finish)
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evalspec::Asking;

    fn history() -> Vec<Arc<Message>> {
        vec![
            Arc::new(Message::system("You fix bugs.")),
            Arc::new(Message::user(
                "The deploy token is teal-42. Fix the parser.",
            )),
            Arc::new(Message::assistant("Looking at the parser.", vec![])),
            Arc::new(Message::user("The deploy token is amber-7 from now on.")),
        ]
    }

    /// `chat_after` in place gives what `chat` on the joined request gives (answer, usage),
    /// for a recall question and for the fallback (another kind of question).
    #[tokio::test]
    async fn answering_after_a_shared_history_is_answering_the_joined_request() {
        let p = OfflineProvider::new();
        let history = history();
        for asking in [Asking::Recall, Asking::Drift] {
            let mut req = ChatRequest::new(vec![Message::user("What is the deploy token?")]);
            req.asking = asking;
            let joined = req.after(&history);
            assert_eq!(joined.messages.len(), 5);
            let a = p.chat_after(&history, &req).await.unwrap();
            let b = p.chat(&joined).await.unwrap();
            assert_eq!(a.message, b.message, "{asking:?}");
            assert_eq!(a.usage, b.usage);
            assert!(a.usage.input > p.counter.count_message(&req.messages[0]));
            if asking == Asking::Recall {
                assert!(
                    a.message.content.contains("amber-7"),
                    "{}",
                    a.message.content
                );
            }
        }
    }
}
