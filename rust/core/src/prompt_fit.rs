//! A prompt bigger than the context window is handled, not looped (seed 002 §4, context
//! management): it is measured before any call and refused at once with its size and what to
//! do, so nothing is sent, nothing enters the history and the session stays usable. A
//! provider's own "too long" answer (OpenAI's `context_length_exceeded`, litellm's
//! `ContextWindowExceededError`, Anthropic's "prompt is too long") is recognised: the turn
//! compacts once and retries, never in a loop.

use crate::session::Session;
use yuyao_model::ModelError;
use yuyao_protocol::{Message, NoticeLevel};

/// Tokens kept free for the reply when judging whether a prompt fits.
const REPLY_RESERVE: u64 = 4096;
/// A prompt above this share of the window is said to be large (it fits, but crowds out the
/// conversation and will be compacted early).
const WARN_SHARE: f64 = 0.5;

/// `1.2 MB`, `84 kB`, `512 B`.
fn bytes_shown(n: usize) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{} kB", n >> 10),
        n => format!("{n} B"),
    }
}

/// `310 k`, `900`.
pub(crate) fn tokens_shown(t: u64) -> String {
    if t >= 10_000 {
        format!("{} k", t / 1000)
    } else {
        t.to_string()
    }
}

/// Whether a model error is the provider saying the request does not fit its context.
pub fn is_context_overflow(e: &ModelError) -> bool {
    let ModelError::Http {
        status, message, ..
    } = e
    else {
        return false;
    };
    let m = message.to_lowercase();
    (*status == 400 || *status == 413 || *status == 422)
        && [
            "context_length_exceeded",
            "contextwindowexceeded",
            "maximum context length",
            "context window",
            "prompt is too long",
            "too many tokens",
            "input is too long",
            "reduce the length",
        ]
        .iter()
        .any(|k| m.contains(k))
}

impl Session {
    /// `Err(why)` when `message` cannot fit the window even with an empty conversation (the
    /// system prompt, the tool schemas and a reply's room count); a warning notice when it
    /// fits but takes more than half the window.
    pub(crate) fn check_prompt_fits(&self, message: &Message) -> Result<(), String> {
        let window = self.context_window();
        let chars = crate::context::message_chars(message);
        let prompt = (chars as u64).div_ceil(4);
        if prompt < window / 4 {
            return Ok(()); // the common case: no request is built to measure it
        }
        let fixed = crate::context::request_tokens(&self.next_request(&[]).0);
        let reserve = REPLY_RESERVE.min(window / 10);
        let bytes = message.text().len();
        if fixed + prompt + reserve > window {
            return Err(format!(
                "this prompt is {} (about {} tokens) and the model's context window is {} tokens ({} of them taken by the instructions and tool definitions), so it cannot be sent; nothing was sent and the conversation is unchanged. Save the text to a file and mention its path so the model reads it in pages, reference a part with @file:START-END, or trim it. (The window is `model.context_window`.)",
                bytes_shown(bytes),
                tokens_shown(prompt),
                tokens_shown(window),
                tokens_shown(fixed),
            ));
        }
        if prompt as f64 > window as f64 * WARN_SHARE {
            self.notice(
                NoticeLevel::Warning,
                format!(
                    "this prompt is {} (about {} tokens, {:.0}% of the {}-token context window): the conversation will be compacted early",
                    bytes_shown(bytes),
                    tokens_shown(prompt),
                    prompt as f64 * 100.0 / window as f64,
                    tokens_shown(window),
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, message: &str) -> ModelError {
        ModelError::Http {
            url: "u".into(),
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    #[test]
    fn provider_overflow_shapes_are_recognised() {
        // OpenAI
        assert!(is_context_overflow(&http(
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 310000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#
        )));
        // litellm proxy
        assert!(is_context_overflow(&http(
            400,
            r#"{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: ...","type":null,"param":null,"code":"400"}}"#
        )));
        // Anthropic
        assert!(is_context_overflow(&http(
            400,
            "prompt is too long: 210000 tokens > 200000 maximum"
        )));
        assert!(!is_context_overflow(&http(400, "invalid tool schema")));
        assert!(!is_context_overflow(&http(
            500,
            "maximum context length (server bug)"
        )));
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(bytes_shown(1_258_291), "1.2 MB");
        assert_eq!(bytes_shown(86_016), "84 kB");
        assert_eq!(tokens_shown(310_000), "310 k");
        assert_eq!(tokens_shown(900), "900");
    }
}
