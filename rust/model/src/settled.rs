//! Requests of a growing conversation, built without redoing the whole conversation at each
//! step. Between compactions a conversation's requests are append-only (DESIGN §4): each one
//! starts with the messages of the previous one. The messages that no later message can
//! change are *settled*: sanitized once (`sanitize.rs`), serialized once, counted once, and
//! shared by every later request (an `Arc`), which sanitizes only what came after them. The
//! bytes sent are the same as a one-pass build's (tested below and in the core's context).

use crate::client::ChatRequest;
use crate::sanitize;
use serde_json::Value;
use std::sync::Arc;
use yuyao_protocol::Message;

/// Characters a message weighs in a request: its text plus its tool calls' names and
/// arguments (the context estimate of the core, `/context`).
pub fn message_chars(m: &Message) -> usize {
    let text = match &m.content {
        Some(yuyao_protocol::Content::Text(t)) => t.chars().count(),
        Some(c) => c.text().chars().count(),
        None => 0,
    };
    text + m
        .tool_calls
        .iter()
        .map(|c| c.name.chars().count() + c.arguments.chars().count())
        .sum::<usize>()
}

/// Sanitized messages that every later request of the conversation repeats, with their wire
/// form: each message's JSON, comma-separated, exactly as `serde_json` writes it inside the
/// request's `messages` array.
#[derive(Debug, Default)]
pub struct Settled {
    messages: Vec<Message>,
    wire: Vec<u8>,
    chars: usize,
    /// The wire form of a body with cache hints, which goes through `Value`s (their keys in
    /// the map's order, not the struct's): `(bytes, messages written)`, made at the first
    /// such body and extended by the later ones, so a conversation without hints never
    /// pays for it.
    valued: std::sync::Mutex<(Vec<u8>, usize)>,
}

impl Clone for Settled {
    fn clone(&self) -> Self {
        Settled {
            messages: self.messages.clone(),
            wire: self.wire.clone(),
            chars: self.chars,
            valued: std::sync::Mutex::new(
                self.valued.lock().map(|v| v.clone()).unwrap_or_default(),
            ),
        }
    }
}

impl PartialEq for Settled {
    fn eq(&self, other: &Self) -> bool {
        self.messages == other.messages
    }
}

impl Settled {
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// [`message_chars`] of all the messages.
    pub fn chars(&self) -> usize {
        self.chars
    }

    /// The messages' JSON, comma-separated (no brackets).
    pub(crate) fn wire(&self) -> &[u8] {
        &self.wire
    }

    /// The messages as `serde_json::to_value` of each would write them, comma-separated;
    /// `None` if one cannot be (the body then goes the whole-tree way).
    pub(crate) fn valued_wire(&self) -> Option<std::sync::MutexGuard<'_, (Vec<u8>, usize)>> {
        let mut v = self.valued.lock().ok()?;
        while v.1 < self.messages.len() {
            let value = serde_json::to_value(&self.messages[v.1]).ok()?;
            if !v.0.is_empty() {
                v.0.push(b',');
            }
            serde_json::to_writer(&mut v.0, &value).ok()?;
            v.1 += 1;
        }
        Some(v)
    }

    fn push(&mut self, m: Message) {
        if !self.wire.is_empty() {
            self.wire.push(b',');
        }
        // Serializing a message cannot fail (string keys, no non-finite floats in JSON
        // values); were it to, the one-pass path would have sent an empty body.
        let _ = serde_json::to_writer(&mut self.wire, &m);
        self.chars += message_chars(&m);
        self.messages.push(m);
    }
}

/// Where a request's settled messages go: after `messages[..at]` (the system message, and the
/// "Continue." that opens a conversation not started by the user).
#[derive(Debug, Clone, PartialEq)]
pub struct SettledPart {
    pub at: usize,
    pub part: Arc<Settled>,
}

/// A conversation sanitized as it grows. [`Incremental::settle`] takes the next messages of
/// the conversation once they can no longer change the messages before them;
/// [`Incremental::request`] builds a request from what is settled and the rest.
#[derive(Debug, Default, Clone)]
pub struct Incremental {
    settled: Arc<Settled>,
    /// The last message sanitized so far: a later message of the same role merges into it,
    /// so it is settled only when a message after it is.
    open: Option<Message>,
}

impl Incremental {
    /// Sanitizes `messages`, the conversation's next ones, after those given before. The
    /// caller gives whole groups: the message that follows them (given later) is not a tool
    /// result (results belong to the assistant message they follow).
    pub fn settle(&mut self, messages: Vec<Message>) {
        if messages.is_empty() {
            return;
        }
        let base = 1 + self.settled.messages.len();
        let mut out: Vec<Message> = self.open.take().into_iter().collect();
        sanitize::feed(&mut out, base, messages);
        self.open = out.pop();
        if !out.is_empty() {
            // Shared with a request still alive: the copy is the rare case (each request is
            // dropped before the next one is built).
            let settled = Arc::make_mut(&mut self.settled);
            for m in out {
                settled.push(m);
            }
        }
    }

    /// Messages settled so far (the open one excluded).
    pub fn settled(&self) -> &Settled {
        &self.settled
    }

    /// The request: `system`, the settled messages, then `rest` (the conversation's messages
    /// after those settled) sanitized after them. Equal to [`crate::build_request_owned`] of
    /// the whole conversation.
    pub fn request(
        &self,
        system: &str,
        rest: Vec<Message>,
        tools: Vec<Value>,
        stream: bool,
        reasoning_effort: Option<String>,
    ) -> ChatRequest {
        let base = 1 + self.settled.messages.len();
        let mut out: Vec<Message> = Vec::with_capacity(rest.len() + 1);
        out.extend(self.open.clone());
        sanitize::feed(&mut out, base, rest);
        let mut messages = Vec::with_capacity(out.len() + 2);
        messages.push(sanitize::system_message(system));
        let first = self.settled.messages.first().or(out.first());
        if !sanitize::opens_with_user(first) {
            messages.push(sanitize::continue_message());
        }
        let at = messages.len();
        messages.extend(out);
        ChatRequest {
            messages,
            settled: (!self.settled.messages.is_empty()).then(|| SettledPart {
                at,
                part: self.settled.clone(),
            }),
            tools,
            stream,
            reasoning_effort,
            max_tokens: None,
            cache_hints: false,
            extra: Default::default(),
        }
    }
}

impl ChatRequest {
    /// Every message of the request, in order: `messages` with the settled ones in place.
    pub fn all_messages(&self) -> impl Iterator<Item = &Message> {
        let (head, tail, settled): (&[Message], &[Message], &[Message]) = match &self.settled {
            Some(s) => {
                let at = s.at.min(self.messages.len());
                (
                    &self.messages[..at],
                    &self.messages[at..],
                    s.part.messages(),
                )
            }
            None => (&self.messages, &[], &[]),
        };
        head.iter().chain(settled).chain(tail)
    }

    /// How many messages the request sends.
    pub fn message_count(&self) -> usize {
        self.messages.len() + self.settled.as_ref().map_or(0, |s| s.part.messages.len())
    }

    /// [`message_chars`] of every message, the settled ones counted once when they settled.
    pub fn message_chars(&self) -> usize {
        self.settled.as_ref().map_or(0, |s| s.part.chars)
            + self.messages.iter().map(message_chars).sum::<usize>()
    }

    /// The same request with every message in `messages` (a copy of the settled ones), for
    /// a caller that reads or rewrites the messages as one list.
    pub fn into_flat(mut self) -> ChatRequest {
        if let Some(s) = self.settled.take() {
            let at = s.at.min(self.messages.len());
            let tail = self.messages.split_off(at);
            self.messages.extend(s.part.messages().iter().cloned());
            self.messages.extend(tail);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ModelClient, ModelConfig, build_request_owned};
    use proptest::prelude::*;
    use yuyao_protocol::{MessageRole, ToolCall};

    fn arb_message() -> impl Strategy<Value = Message> {
        let text = prop_oneof![
            Just(String::new()),
            Just("a\0b".to_string()),
            Just("é \"q\" \u{1}".to_string()),
            "[a-z ]{0,12}",
        ];
        let id = prop_oneof![Just(String::new()), "[abc]"];
        let args = prop_oneof![
            Just(r#"{"command":"ls"}"#.to_string()),
            Just(r#"{"command":"a\u0000b"}"#.to_string()),
            Just("not json".to_string()),
        ];
        (
            0u8..5,
            text,
            proptest::collection::vec((id.clone(), args), 0..3),
            id,
        )
            .prop_map(|(role, text, calls, tid)| match role {
                0 => Message::system(text),
                1 => Message::user(text),
                2 | 3 => {
                    let mut m = Message::assistant(text);
                    m.tool_calls = calls
                        .into_iter()
                        .map(|(id, arguments)| ToolCall {
                            id,
                            name: "bash".into(),
                            arguments,
                        })
                        .collect();
                    m
                }
                _ => Message::tool(tid, text),
            })
    }

    proptest! {
        /// Settled piece by piece (each piece ending before a message that is not a tool
        /// result), the conversation gives the one-pass request, to the byte.
        #[test]
        fn settled_in_pieces_is_sanitized_in_one_pass(
            history in proptest::collection::vec(arb_message(), 0..24),
            cuts in proptest::collection::vec(0usize..24, 0..6),
        ) {
            let client = ModelClient::new(ModelConfig::new("http://h:1/v1", "m", "")).unwrap();
            let want = build_request_owned("sys", history.clone(), Vec::new(), true, None);
            let mut cuts: Vec<usize> = cuts
                .into_iter()
                .filter(|&c| c < history.len() && history[c].role != MessageRole::Tool)
                .collect();
            cuts.sort();
            cuts.dedup();
            let mut inc = Incremental::default();
            let mut from = 0;
            for c in cuts {
                inc.settle(history[from..c].to_vec());
                from = c;
                // A request can be built at any checkpoint.
                let partial = inc.request("sys", history[from..].to_vec(), Vec::new(), true, None);
                prop_assert_eq!(client.body_bytes(&partial), client.one_pass_bytes(&want));
            }
            let got = inc.request("sys", history[from..].to_vec(), Vec::new(), true, None);
            prop_assert_eq!(got.all_messages().collect::<Vec<_>>(), want.messages.iter().collect::<Vec<_>>());
            prop_assert_eq!(client.body_bytes(&got), client.one_pass_bytes(&want));
            prop_assert_eq!(got.message_chars(), want.message_chars());
            let mut hinted = (got, want);
            hinted.0.cache_hints = true;
            hinted.1.cache_hints = true;
            prop_assert_eq!(client.body_bytes(&hinted.0), client.one_pass_bytes(&hinted.1));
            // Settled messages are written from their kept bytes, not as a tree.
            prop_assert_eq!(
                client.hinted_body_bytes(&hinted.0).is_some(),
                hinted.0.settled.is_some()
            );
        }
    }
}
