//! The model side of yuyao: an OpenAI-compatible client and the one request builder.
//!
//! Every request (main loop, compaction, classifier, sub-agents) is built by
//! [`build_request`], which passes the history through [`sanitize`] on a copy; the main
//! loop's requests are built by [`Incremental`], which sanitizes and serializes each message
//! once and gives the same bytes.

pub mod cache_hints;
mod client;
mod cost;
pub mod history;
mod key;
mod sanitize;
mod settled;
mod stream;
pub mod tool_search;
pub mod view;

pub use client::{
    COST_HEADER, ChatRequest, Completion, ModelClient, ModelConfig, ModelError, Piece,
};
pub use cost::{CatalogEntry, Pricing, catalog_lookup, catalog_source};
pub use key::{hidden_model_key, hide_model_key};
pub use sanitize::{NOT_EXECUTED, check_well_formed, sanitize};
pub use settled::{Incremental, Settled, SettledPart, message_chars};
pub use view::{RequestCache, Stub, request_view, stub_batch_chars};

use serde_json::Value;
use yuyao_protocol::Message;

/// Builds the one request shape every caller sends: sanitized messages plus tool schemas.
pub fn build_request(
    system: &str,
    history: &[Message],
    tools: Vec<Value>,
    stream: bool,
    reasoning_effort: Option<String>,
) -> ChatRequest {
    build_request_owned(system, history.to_vec(), tools, stream, reasoning_effort)
}

/// [`build_request`] from a message list built for this request alone (the request view):
/// sanitized where it is, without another copy of the conversation.
pub fn build_request_owned(
    system: &str,
    history: Vec<Message>,
    tools: Vec<Value>,
    stream: bool,
    reasoning_effort: Option<String>,
) -> ChatRequest {
    ChatRequest {
        messages: sanitize::sanitize_owned(system, history),
        settled: None,
        tools,
        stream,
        reasoning_effort,
        max_tokens: None,
        cache_hints: false,
        extra: Default::default(),
    }
}

/// A rough token count (about four characters a token), used for context percentages and
/// the pre-call cost estimate. Deliberately cheap: it runs before every call.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    let chars: usize = messages
        .iter()
        .map(|m| {
            m.text().len()
                + m.tool_calls
                    .iter()
                    .map(|c| c.arguments.len() + c.name.len() + 16)
                    .sum::<usize>()
                + 8
        })
        .sum();
    (chars as u64).div_ceil(4)
}
