//! The dollar cost of a provider response under a [`PriceTable`] (the table itself is the
//! leaf module `crate::pricing`; this is the part that knows [`ChatResponse`]).

use super::ChatResponse;
use crate::pricing::{Price, PriceTable};

/// Cost of a provider response. The model the API reported is tried first (it names the
/// exact snapshot), then `requested_model` (the configured id, which is what a suite's
/// override names, e.g. a local model the server reports as a file name). A response
/// without a usage block is [`Price::Unknown`]: zero tokens would otherwise read as $0.
pub fn cost_of_response(
    table: &PriceTable,
    requested_model: &str,
    response: &ChatResponse,
) -> Price {
    if !response.usage_reported {
        return Price::Unknown {
            model: response.model.clone(),
            reason: Price::NO_USAGE.into(),
        };
    }
    match table.cost(&response.model, &response.usage) {
        Price::Unknown { .. } => match table.cost(requested_model, &response.usage) {
            Price::Unknown { .. } => Price::Unknown {
                model: if response.model.is_empty() {
                    requested_model.to_string()
                } else {
                    response.model.clone()
                },
                reason: Price::NOT_IN_TABLE.into(),
            },
            known => known,
        },
        known => known,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::{Message, Usage};

    fn u(input: u64, cache_read: u64, cache_write: u64, output: u64) -> Usage {
        Usage {
            input,
            output,
            cache_read,
            cache_write,
        }
    }

    #[test]
    fn responses_are_priced_by_reported_then_requested_model() {
        let mut r = ChatResponse {
            finish_reason: None,
            ..ChatResponse::answer(
                Message::assistant("x", vec![]),
                u(1_000_000, 0, 0, 0),
                "gpt-4o-2024-05-13",
                "stop",
            )
        };
        let t = PriceTable::bundled();
        assert_eq!(
            cost_of_response(t, "gpt-4o", &r).usd(),
            Some(5.0),
            "the snapshot's price"
        );
        r.model = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf".into();
        assert_eq!(
            cost_of_response(t, "gpt-4o", &r).usd(),
            Some(2.5),
            "falls back"
        );
        assert_eq!(cost_of_response(t, "local", &r).usd(), None);
        r.model = "gpt-4o".into();
        r.usage_reported = false;
        assert_eq!(
            cost_of_response(t, "gpt-4o", &r).usd(),
            None,
            "no usage is not $0"
        );
    }
}
