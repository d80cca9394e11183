//! OpenAI-compatible chat client: `POST {base_url}/chat/completions`, streaming or not,
//! with bounded retries. It connects lazily: building a client makes no request.

use crate::stream::Assembler;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use yuyao_protocol::{Message, ToolCall, Usage};

#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub base_url: String,
    /// The model name as configured (a `litellm_proxy/` prefix is stripped on the wire).
    pub model: String,
    pub api_key: String,
    pub connect_timeout: Duration,
    /// Longest silence tolerated while waiting for bytes of a response.
    pub idle_timeout: Duration,
    /// Retries after the first attempt, for 429, 5xx and connection errors.
    pub max_retries: u32,
    /// Longest single wait between retries.
    pub max_backoff: Duration,
}

impl ModelConfig {
    pub fn new(base_url: &str, model: &str, api_key: &str) -> Self {
        ModelConfig {
            base_url: base_url.trim().to_string(),
            model: model.trim().to_string(),
            api_key: api_key.trim().to_string(),
            connect_timeout: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(300),
            max_retries: 4,
            max_backoff: Duration::from_secs(30),
        }
    }

    /// The name sent to the provider: litellm strips its `litellm_proxy/` routing prefix.
    pub fn wire_model(&self) -> &str {
        self.model
            .strip_prefix("litellm_proxy/")
            .unwrap_or(&self.model)
    }

    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

/// One request: the already-sanitized messages and the tool schemas.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    /// The messages, or with `settled`, those around the settled ones.
    pub messages: Vec<Message>,
    /// Messages sanitized and serialized by an earlier request of the conversation, sent
    /// after `messages[..at]` (`settled.rs`; read all of them with `all_messages`).
    pub settled: Option<crate::settled::SettledPart>,
    pub tools: Vec<Value>,
    pub stream: bool,
    pub reasoning_effort: Option<String>,
    pub max_tokens: Option<u64>,
    /// Mark the prompt-cache breakpoints (`cache_hints.rs`).
    pub cache_hints: bool,
    /// Further top-level body fields (`response_format`, an Anthropic-style `thinking`).
    pub extra: serde_json::Map<String, Value>,
}

/// A streamed piece, handed to the caller as it arrives.
#[derive(Debug, Clone, Copy)]
pub enum Piece<'a> {
    Text(&'a str),
    Thinking(&'a str),
    /// An attempt failed and another follows after `wait`: said to the user, so a dead
    /// endpoint is never seconds of silence (`retry` of `of`, counted from 1).
    Retrying {
        retry: u32,
        of: u32,
        wait: Duration,
        why: &'a str,
    },
}

/// The complete reply of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub finish_reason: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model request to {url} failed with HTTP {status}: {message}")]
    Http {
        url: String,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("cannot reach the model at {url}: {message}")]
    Connect { url: String, message: String },
    #[error("the model at {url} sent nothing for {secs} s (idle timeout)")]
    Timeout { url: String, secs: u64 },
    #[error("the model's reply from {url} could not be read: {message}")]
    Protocol { url: String, message: String },
    /// The connection ended before the reply did (a cut stream, a short body).
    #[error("the model's reply from {url} ended before the reply was complete: {message}")]
    Truncated { url: String, message: String },
    #[error("interrupted")]
    Cancelled,
}

impl ModelError {
    fn retryable(&self) -> bool {
        match self {
            ModelError::Http { status, .. } => *status == 429 || *status >= 500,
            ModelError::Connect { .. }
            | ModelError::Timeout { .. }
            | ModelError::Truncated { .. } => true,
            ModelError::Protocol { .. } | ModelError::Cancelled => false,
        }
    }

    /// Worth another attempt even when part of the reply was already shown: a cut reply is
    /// useless as it is, and the next attempt brings the whole of it.
    fn retry_after_partial(&self) -> bool {
        matches!(self, ModelError::Truncated { .. })
    }
}

pub struct ModelClient {
    http: reqwest::Client,
    cfg: ModelConfig,
}

impl ModelClient {
    pub fn new(cfg: ModelConfig) -> Result<Self, ModelError> {
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .user_agent(concat!("yuyao/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ModelError::Connect {
                url: cfg.endpoint(),
                message: e.to_string(),
            })?;
        Ok(ModelClient { http, cfg })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// Every top-level field of a request's body but `messages`.
    fn fields(&self, req: &ChatRequest) -> serde_json::Map<String, Value> {
        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!(self.cfg.wire_model()));
        body.insert("stream".into(), json!(req.stream));
        if !req.tools.is_empty() {
            body.insert("tools".into(), Value::Array(req.tools.clone()));
            body.insert("tool_choice".into(), json!("auto"));
        }
        if req.stream {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        if let Some(effort) = &req.reasoning_effort {
            body.insert("reasoning_effort".into(), json!(effort));
        }
        if let Some(n) = req.max_tokens {
            body.insert("max_tokens".into(), json!(n));
        }
        for (k, v) in &req.extra {
            body.insert(k.clone(), v.clone());
        }
        body
    }

    /// The JSON body of a request.
    pub fn body(&self, req: &ChatRequest) -> Value {
        let mut messages = req
            .all_messages()
            .map(serde_json::to_value)
            .collect::<Result<Vec<Value>, _>>()
            .map(Value::Array)
            .unwrap_or(Value::Array(Vec::new()));
        if req.cache_hints
            && let Value::Array(m) = &mut messages
        {
            crate::cache_hints::mark(m);
        }
        let mut body = self.fields(req);
        body.insert("messages".into(), messages);
        Value::Object(body)
    }

    /// The request's wire bytes: [`ModelClient::body`] serialized, the history straight from
    /// its messages rather than through a `Value` tree (that tree was a second copy of the
    /// whole conversation at every step), and the settled messages as the bytes they were
    /// serialized to once (`settled.rs`): the bytes are those of serializing
    /// `{"messages": [every message], ...fields}` in one pass (tested below). Cache hints
    /// rewrite two messages, and such a body is [`ModelClient::body`]'s `Value` written out:
    /// see [`ModelClient::hinted_body_bytes`].
    pub fn body_bytes(&self, req: &ChatRequest) -> Vec<u8> {
        self.body_chunks(req).concat()
    }

    /// [`ModelClient::body_bytes`] in the pieces it is sent as: the settled messages' bytes
    /// are shared with the conversation's cache, not copied (in a long session they are
    /// nearly the whole body, and a copy of them at every step was a cost that grew with the
    /// history), with the bytes before and after them.
    pub(crate) fn body_chunks(&self, req: &ChatRequest) -> Vec<bytes::Bytes> {
        if req.cache_hints {
            let body = self
                .hinted_body_bytes(req)
                .unwrap_or_else(|| serde_json::to_vec(&self.body(req)).unwrap_or_default());
            return vec![body.into()];
        }
        let settled = req.settled.as_ref().filter(|s| !s.part.wire().is_empty());
        let (head, tail) = match settled {
            Some(s) => req.messages.split_at(s.at.min(req.messages.len())),
            None => (&req.messages[..], &[][..]),
        };
        let Ok(rest) = serde_json::to_vec(&self.fields(req)) else {
            return vec![bytes::Bytes::new()];
        };
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(b"{\"messages\":[");
        let mut first = true;
        let mut comma = |out: &mut Vec<u8>| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
        };
        for m in head {
            comma(&mut out);
            if serde_json::to_writer(&mut out, m).is_err() {
                return vec![bytes::Bytes::new()];
            }
        }
        let mut chunks = Vec::with_capacity(3);
        if let Some(s) = settled {
            comma(&mut out);
            chunks.push(bytes::Bytes::from(std::mem::take(&mut out)));
            chunks.push(bytes::Bytes::from_owner(SettledWire(s.part.clone())));
        }
        for m in tail {
            comma(&mut out);
            if serde_json::to_writer(&mut out, m).is_err() {
                return vec![bytes::Bytes::new()];
            }
        }
        out.push(b']');
        // `rest` is `{...}`: its fields follow `messages` in the same object.
        match rest.strip_prefix(b"{") {
            Some(fields) if fields != b"}" => {
                out.push(b',');
                out.extend_from_slice(fields);
            }
            _ => out.push(b'}'),
        }
        chunks.push(out.into());
        chunks
    }

    /// [`ModelClient::body`] with cache hints, serialized, without building the `Value` of
    /// every message: the fields in the body map's order, the settled messages as their
    /// `Value` bytes made once (`Settled::valued_wire`), and only the messages around them
    /// through a `Value` — the two marked ones (the system prompt and the newest message,
    /// `cache_hints.rs`) are never among the settled ones. `None`: the tree way.
    pub(crate) fn hinted_body_bytes(&self, req: &ChatRequest) -> Option<Vec<u8>> {
        let settled = req
            .settled
            .as_ref()
            .filter(|s| !s.part.messages().is_empty())?;
        let (head, tail) = req.messages.split_at(settled.at.min(req.messages.len()));
        if head.is_empty() || tail.is_empty() {
            return None;
        }
        let n = req.message_count();
        let wire = settled.part.valued_wire()?;
        let mut body = self.fields(req);
        body.insert("messages".into(), Value::Null);
        let mut out = Vec::with_capacity(wire.0.len() + 8192);
        out.push(b'{');
        for (k, (key, value)) in body.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, key).ok()?;
            out.push(b':');
            if key != "messages" {
                serde_json::to_writer(&mut out, value).ok()?;
                continue;
            }
            out.push(b'[');
            let one = |out: &mut Vec<u8>, m: &Message, i: usize| -> Option<()> {
                if i > 0 {
                    out.push(b',');
                }
                let mut v = serde_json::to_value(m).ok()?;
                crate::cache_hints::mark_one_of(&mut v, i == 0, i + 1 == n);
                serde_json::to_writer(&mut *out, &v).ok()
            };
            for (i, m) in head.iter().enumerate() {
                one(&mut out, m, i)?;
            }
            out.push(b',');
            out.extend_from_slice(&wire.0);
            let after = n - tail.len();
            for (i, m) in tail.iter().enumerate() {
                one(&mut out, m, after + i)?;
            }
            out.push(b']');
        }
        out.push(b'}');
        Some(out)
    }

    /// [`ModelClient::body_bytes`] as one `serde_json` pass over a flat request: the bytes the
    /// assembled ones are checked against.
    #[cfg(test)]
    pub(crate) fn one_pass_bytes(&self, req: &ChatRequest) -> Vec<u8> {
        if req.cache_hints {
            return serde_json::to_vec(&self.body(req)).unwrap();
        }
        #[derive(serde::Serialize)]
        struct Wire<'a> {
            messages: &'a [Message],
            #[serde(flatten)]
            rest: serde_json::Map<String, Value>,
        }
        let flat = req.clone().into_flat();
        serde_json::to_vec(&Wire {
            messages: &flat.messages,
            rest: self.fields(&flat),
        })
        .unwrap()
    }

    /// Calls the model, retrying transient failures with exponential backoff and jitter.
    pub async fn complete(
        &self,
        req: &ChatRequest,
        on_piece: &mut (dyn FnMut(Piece<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<Completion, ModelError> {
        // The body's pieces are made once; each attempt shares them (never copied).
        let body = self.body_chunks(req);
        let mut attempt = 0;
        let (mut text, mut thinking) = (Shown::default(), Shown::default());
        loop {
            let mut emitted = false;
            text.restart();
            thinking.restart();
            let mut show = |p: Piece<'_>| match p {
                Piece::Text(t) => {
                    let fresh = text.fresh(t);
                    if !fresh.is_empty() {
                        on_piece(Piece::Text(fresh));
                    }
                }
                Piece::Thinking(t) => {
                    let fresh = thinking.fresh(t);
                    if !fresh.is_empty() {
                        on_piece(Piece::Thinking(fresh));
                    }
                }
                other @ Piece::Retrying { .. } => on_piece(other),
            };
            let result = tokio::select! {
                r = self.attempt(&body, req.stream, &mut show, &mut emitted) => r,
                _ = cancel.cancelled() => Err(ModelError::Cancelled),
            };
            match result {
                Err(e)
                    if e.retryable()
                        && (!emitted || e.retry_after_partial())
                        && attempt < self.cfg.max_retries =>
                {
                    let wait = self.backoff(attempt, &e);
                    attempt += 1;
                    // Said when nothing of the reply was shown yet (a cut stream's retry is
                    // quick, and its text goes on where it stopped).
                    if !emitted {
                        let why = e.to_string();
                        on_piece(Piece::Retrying {
                            retry: attempt,
                            of: self.cfg.max_retries,
                            wait,
                            why: &why,
                        });
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                    }
                }
                other => return other,
            }
        }
    }

    fn backoff(&self, attempt: u32, e: &ModelError) -> Duration {
        if let ModelError::Http {
            retry_after: Some(d),
            ..
        } = e
        {
            return (*d).min(self.cfg.max_backoff);
        }
        let base = 0.5 * 2f64.powi(attempt as i32);
        let jitter = fastrand::f64() * base * 0.5;
        Duration::from_secs_f64(base + jitter).min(self.cfg.max_backoff)
    }

    async fn attempt(
        &self,
        body: &[bytes::Bytes],
        stream: bool,
        on_piece: &mut (dyn FnMut(Piece<'_>) + Send),
        emitted: &mut bool,
    ) -> Result<Completion, ModelError> {
        let url = self.cfg.endpoint();
        let mut rb = self
            .http
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        if !self.cfg.api_key.is_empty() {
            rb = rb.bearer_auth(&self.cfg.api_key);
        }
        rb = match body {
            [one] => rb.body(one.clone()),
            pieces => {
                // Sent as one body of a declared length (no chunked encoding, which some
                // endpoints refuse): the pieces are written one after the other.
                let len: usize = pieces.iter().map(bytes::Bytes::len).sum();
                let pieces: Vec<Result<bytes::Bytes, std::convert::Infallible>> =
                    pieces.iter().cloned().map(Ok).collect();
                rb.header(reqwest::header::CONTENT_LENGTH, len)
                    .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
                        pieces,
                    )))
            }
        };
        let idle = self.cfg.idle_timeout;
        let timeout_err = || ModelError::Timeout {
            url: url.clone(),
            secs: idle.as_secs(),
        };
        let resp = tokio::time::timeout(idle, rb.send())
            .await
            .map_err(|_| timeout_err())?
            .map_err(|e| ModelError::Connect {
                url: url.clone(),
                message: error_chain(&e),
            })?;
        let status = resp.status();
        if !status.is_success() {
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|s| s.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64);
            let text = tokio::time::timeout(idle, resp.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            return Err(ModelError::Http {
                url,
                status: status.as_u16(),
                message: provider_message(&text),
                retry_after,
            });
        }
        // A litellm proxy prices each response itself: that figure is the call's cost.
        let reported_cost = reported_cost(resp.headers());
        let is_sse = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.contains("text/event-stream"));
        let protocol = |message: String| ModelError::Protocol {
            url: url.clone(),
            message,
        };
        let truncated = |message: String| ModelError::Truncated {
            url: url.clone(),
            message,
        };
        if !stream || !is_sse {
            let text = tokio::time::timeout(idle, resp.text())
                .await
                .map_err(|_| timeout_err())?
                .map_err(|e| truncated(error_chain(&e)))?;
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| protocol(format!("{e}; body starts with {:?}", head(&text))))?;
            let mut c = Assembler::from_full(&v).map_err(protocol)?;
            if reported_cost.is_some() {
                c.usage.reported_cost_usd = reported_cost;
            }
            if !c.reasoning.is_empty() {
                on_piece(Piece::Thinking(&c.reasoning));
            }
            if !c.text.is_empty() {
                on_piece(Piece::Text(&c.text));
            }
            return Ok(c);
        }
        let mut events = resp.bytes_stream().eventsource();
        let mut asm = Assembler::default();
        loop {
            let next = tokio::time::timeout(idle, events.next())
                .await
                .map_err(|_| timeout_err())?;
            let Some(ev) = next else {
                // The body ended without `[DONE]`: complete only if the reply said it was done.
                if asm.finished() {
                    break;
                }
                return Err(truncated(
                    "the stream closed with neither a finish_reason nor [DONE]".into(),
                ));
            };
            let ev = ev.map_err(|e| match e {
                eventsource_stream::EventStreamError::Transport(t) => {
                    truncated(format!("the stream broke off: {}", error_chain(&t)))
                }
                other => protocol(other.to_string()),
            })?;
            let data = ev.data.trim();
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                break;
            }
            let chunk: Value = serde_json::from_str(data)
                .map_err(|e| protocol(format!("bad stream chunk ({e}): {}", head(data))))?;
            if let Some(err) = chunk.get("error") {
                return Err(protocol(provider_message(&err.to_string())));
            }
            asm.push_chunk(&chunk, &mut |p| {
                *emitted = true;
                on_piece(p)
            });
        }
        let mut c = asm.finish();
        // Headers go out before a stream's body is priced: litellm puts a streamed reply's
        // cost in its last chunk's `usage.cost`, which comes first; the header is the fallback.
        if c.usage.reported_cost_usd.is_none() {
            c.usage.reported_cost_usd = reported_cost;
        }
        Ok(c)
    }
}

/// The header a litellm proxy sets to the response's cost in USD.
pub const COST_HEADER: &str = "x-litellm-response-cost";

/// The cost a proxy reported for this response, when its header holds a price (a finite
/// number >= 0; litellm writes `None` when it could not price the call).
fn reported_cost(headers: &reqwest::header::HeaderMap) -> Option<f64> {
    headers
        .get(COST_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|c| c.is_finite() && *c >= 0.0)
}

/// What the caller was shown of one kind of piece. A retry after a cut stream replays the
/// reply from its start: the part matching what was shown is not shown again.
#[derive(Default)]
struct Shown {
    seen: String,
    /// How much of `seen` the current attempt has reproduced.
    at: usize,
}

impl Shown {
    fn restart(&mut self) {
        self.at = 0;
    }

    /// The part of `piece` that is new to the caller (all of it once the attempt diverges).
    fn fresh<'p>(&mut self, piece: &'p str) -> &'p str {
        let old = &self.seen[self.at..];
        if !old.is_empty() && old.starts_with(piece) {
            self.at += piece.len();
            return "";
        }
        let fresh = piece.strip_prefix(old).unwrap_or(piece);
        self.seen.push_str(fresh);
        self.at = self.seen.len();
        fresh
    }
}

fn head(s: &str) -> String {
    s.chars().take(200).collect()
}

/// The provider's own words: `error.message` when the body is JSON, else the body's start.
fn provider_message(body: &str) -> String {
    let v: Option<Value> = serde_json::from_str(body).ok();
    let msg = v.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    match msg {
        Some(m) => m,
        None if body.trim().is_empty() => "(empty response body)".into(),
        None => head(body.trim()),
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let t = inner.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = inner.source();
    }
    s
}

/// The settled messages' bytes as a piece of a request body, kept alive by the `Arc` the
/// conversation's cache shares.
struct SettledWire(std::sync::Arc<crate::settled::Settled>);

impl AsRef<[u8]> for SettledWire {
    fn as_ref(&self) -> &[u8] {
        self.0.wire()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yuyao_protocol::Message;

    #[test]
    fn wire_bytes_are_the_body_with_or_without_cache_hints() {
        let client = ModelClient::new(ModelConfig::new("http://h:1/v1", "m", "k")).unwrap();
        let mut call = Message::assistant("checking \"quotes\" and ünïcode");
        call.tool_calls = vec![ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: r#"{"file_path":"a.txt"}"#.into(),
        }];
        let mut extra = serde_json::Map::new();
        extra.insert("response_format".into(), json!({"type": "json_object"}));
        let mut req = ChatRequest {
            messages: vec![
                Message::system("s"),
                Message::user("u"),
                call,
                Message::tool("c1", "x"),
            ],
            settled: None,
            tools: vec![json!({"type": "function", "function": {"name": "read"}})],
            stream: true,
            reasoning_effort: Some("high".into()),
            max_tokens: Some(99),
            cache_hints: false,
            extra,
        };
        for hints in [false, true] {
            req.cache_hints = hints;
            let wire: Value = serde_json::from_slice(&client.body_bytes(&req)).unwrap();
            assert_eq!(wire, client.body(&req), "cache_hints {hints}");
            assert_eq!(client.body_bytes(&req), client.one_pass_bytes(&req));
        }
        // A longer conversation with its first messages settled: the same bytes.
        let mut history = req.messages[1..].to_vec();
        history.extend(req.messages[1..].iter().cloned());
        req.messages.extend(req.messages[1..].to_vec());
        let mut inc = crate::Incremental::default();
        inc.settle(history[..3].to_vec());
        let mut settled = inc.request("s", history[3..].to_vec(), req.tools.clone(), true, None);
        assert_eq!(
            settled.settled.as_ref().map(|s| s.part.messages().len()),
            Some(2)
        );
        settled.reasoning_effort = req.reasoning_effort.clone();
        settled.max_tokens = req.max_tokens;
        settled.extra = req.extra.clone();
        for hints in [false, true] {
            req.cache_hints = hints;
            settled.cache_hints = hints;
            assert_eq!(client.body_bytes(&settled), client.one_pass_bytes(&req));
            // With hints, the settled messages' bytes are reused, not rebuilt as a tree.
            assert!(!hints || client.hinted_body_bytes(&settled).is_some());
        }
        req.cache_hints = false;
        req.tools.clear();
        let wire: Value = serde_json::from_slice(&client.body_bytes(&req)).unwrap();
        assert_eq!(wire, client.body(&req));
        assert!(wire.get("tool_choice").is_none());
    }

    #[test]
    fn litellm_prefix_is_stripped_and_url_kept() {
        let c = ModelConfig::new("http://h:1/v1/", "litellm_proxy/m", "k");
        assert_eq!(c.wire_model(), "m");
        assert_eq!(c.endpoint(), "http://h:1/v1/chat/completions");
    }

    /// Serves the canned raw HTTP responses in order, one per connection; returns the URL
    /// and a counter of the connections served.
    fn serve(replies: Vec<Vec<u8>>) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = served.clone();
        std::thread::spawn(move || {
            for reply in replies {
                let Ok((mut conn, _)) = listener.accept() else {
                    return;
                };
                let mut buf = vec![0u8; 65536];
                let mut got = Vec::new();
                // Read the request head and its body (Content-Length).
                loop {
                    let n = conn.read(&mut buf).unwrap_or(0);
                    got.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&got).to_string();
                    if let Some(head_end) = text.find("\r\n\r\n") {
                        let len = text
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if got.len() >= head_end + 4 + len {
                            break;
                        }
                    }
                    if n == 0 {
                        break;
                    }
                }
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = conn.write_all(&reply);
                let _ = conn.shutdown(std::net::Shutdown::Both);
            }
        });
        (url, served)
    }

    fn sse(events: &[&str], terminated: bool) -> Vec<u8> {
        let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
        for e in events {
            let data = format!("data: {e}\n\n");
            out.extend_from_slice(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes());
        }
        if terminated {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        out
    }

    const HELLO: &str = r#"{"choices":[{"delta":{"content":"hello"}}]}"#;
    const STOP: &str = r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#;

    fn full_json(text: &str) -> String {
        format!(r#"{{"choices":[{{"message":{{"content":"{text}"}},"finish_reason":"stop"}}]}}"#)
    }

    fn json_reply(body: &str, declared: usize) -> Vec<u8> {
        format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\nConnection: close\r\n\r\n{body}").into_bytes()
    }

    async fn call(
        replies: Vec<Vec<u8>>,
        stream: bool,
        retries: u32,
    ) -> (Result<Completion, ModelError>, usize, String) {
        let (url, served) = serve(replies);
        let mut cfg = ModelConfig::new(&url, "m", "");
        cfg.max_retries = retries;
        cfg.max_backoff = Duration::from_millis(10);
        cfg.idle_timeout = Duration::from_secs(5);
        let client = ModelClient::new(cfg).unwrap();
        let req = ChatRequest {
            messages: vec![Message::user("hi")],
            stream,
            ..Default::default()
        };
        let mut shown = String::new();
        let r = client
            .complete(
                &req,
                &mut |p| {
                    if let Piece::Text(t) = p {
                        shown.push_str(t)
                    }
                },
                &CancellationToken::new(),
            )
            .await;
        (r, served.load(std::sync::atomic::Ordering::SeqCst), shown)
    }

    /// A long conversation's body goes in pieces (the settled messages shared, not copied):
    /// on the wire it is one body of a declared length, no chunked encoding, the bytes of
    /// `body_bytes`, and the same again on a retry.
    #[tokio::test]
    async fn a_body_in_pieces_goes_with_its_length_and_again_on_a_retry() {
        use std::io::{Read, Write};
        let mut conversation = crate::Incremental::default();
        conversation.settle(vec![Message::user("task"), Message::assistant("a")]);
        conversation.settle(vec![Message::user("more")]);
        let req = conversation.request(
            "sys",
            vec![Message::assistant("b")],
            Vec::new(),
            false,
            None,
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let body = full_json("ok");
        let replies = vec![
            b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
            json_reply(&body, body.len()),
        ];
        std::thread::spawn(move || {
            for reply in replies {
                let (mut conn, _) = listener.accept().unwrap();
                let mut got = Vec::new();
                let mut buf = vec![0u8; 65536];
                loop {
                    let n = conn.read(&mut buf).unwrap_or(0);
                    got.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&got).to_string();
                    let done = text.find("\r\n\r\n").is_some_and(|end| {
                        let len = text[..end]
                            .lines()
                            .find_map(|l| {
                                let l = l.to_ascii_lowercase();
                                l.strip_prefix("content-length:")
                                    .map(|v| v.trim().to_string())
                            })
                            .and_then(|v| v.parse::<usize>().ok())
                            .unwrap_or(usize::MAX);
                        got.len() >= end + 4 + len
                    });
                    if done || n == 0 {
                        break;
                    }
                }
                tx.send(got).unwrap();
                let _ = conn.write_all(&reply);
                let _ = conn.shutdown(std::net::Shutdown::Both);
            }
        });
        let mut cfg = ModelConfig::new(&url, "m", "");
        cfg.max_retries = 1;
        cfg.max_backoff = Duration::from_millis(10);
        let client = ModelClient::new(cfg).unwrap();
        assert!(
            client.body_chunks(&req).len() > 1,
            "the settled part is a piece of its own"
        );
        let want = client.body_bytes(&req);
        let r = client
            .complete(&req, &mut |_| {}, &CancellationToken::new())
            .await;
        assert_eq!(r.unwrap().text, "ok");
        for _ in 0..2 {
            let got = rx.recv().unwrap();
            let end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            assert!(
                head.contains(&format!("content-length: {}", want.len())),
                "{head}"
            );
            assert!(!head.contains("transfer-encoding"), "{head}");
            assert_eq!(&got[end + 4..], &want[..]);
        }
    }

    #[tokio::test]
    async fn a_complete_stream_is_one_call() {
        for events in [
            vec![HELLO, STOP, "[DONE]"],
            vec![HELLO, STOP],
            vec![HELLO, "[DONE]"],
        ] {
            let (r, n, _) = call(vec![sse(&events, true)], true, 2).await;
            assert_eq!(r.unwrap().text, "hello", "{events:?}");
            assert_eq!(n, 1, "{events:?}");
        }
    }

    #[tokio::test]
    async fn a_cut_stream_is_retried_then_succeeds() {
        let cut = [
            sse(&[HELLO], true),  // ended cleanly, but no finish_reason and no [DONE]
            sse(&[HELLO], false), // the connection dropped mid-body
            sse(&[], true),       // nothing at all
        ];
        for broken in cut {
            let good = sse(&[HELLO, STOP, "[DONE]"], true);
            let (r, n, shown) = call(vec![broken, good], true, 2).await;
            assert_eq!(r.unwrap().text, "hello");
            assert_eq!(n, 2);
            assert_eq!(shown, "hello", "the retry does not show the text twice");
        }
    }

    #[tokio::test]
    async fn a_stream_cut_every_time_is_a_clear_error() {
        let replies = vec![
            sse(&[HELLO], true),
            sse(&[HELLO], false),
            sse(&[HELLO], true),
        ];
        let (r, n, _) = call(replies, true, 2).await;
        let e = r.unwrap_err();
        assert!(matches!(e, ModelError::Truncated { .. }), "{e:?}");
        assert!(
            e.to_string()
                .contains("ended before the reply was complete"),
            "{e}"
        );
        assert_eq!(n, 3);
    }

    #[tokio::test]
    async fn a_short_body_is_retried() {
        let body = full_json("whole");
        let short = json_reply(&body[..body.len() / 2], body.len());
        let (r, n, _) = call(vec![short, json_reply(&body, body.len())], false, 1).await;
        assert_eq!(r.unwrap().text, "whole");
        assert_eq!(n, 2);
    }

    #[tokio::test]
    async fn a_malformed_complete_body_is_not_retried() {
        let (r, n, _) = call(vec![json_reply("{nope", 5)], false, 3).await;
        assert!(matches!(r, Err(ModelError::Protocol { .. })), "{r:?}");
        assert_eq!(n, 1);
    }

    #[test]
    fn a_retry_shows_only_what_is_new() {
        let mut s = Shown::default();
        let mut out = String::new();
        for p in ["Hel", "lo wo"] {
            out.push_str(s.fresh(p));
        }
        s.restart(); // the retry replays the reply in other pieces
        for p in ["He", "llo", " world", "!"] {
            out.push_str(s.fresh(p));
        }
        assert_eq!(out, "Hello world!");
        s.restart(); // a retry that says something else is shown as it comes
        for p in ["Hi", " there"] {
            out.push_str(s.fresh(p));
        }
        assert_eq!(out, "Hello world!Hi there");
        let mut u = Shown::default();
        assert_eq!(u.fresh("é"), "é");
        u.restart();
        assert_eq!(u.fresh("éa"), "a");
    }

    #[test]
    fn provider_message_is_extracted() {
        assert_eq!(
            provider_message(r#"{"error":{"message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(provider_message(""), "(empty response body)");
    }

    /// A litellm proxy's cost: its header on a full reply; on a stream, the last chunk's
    /// `usage.cost` (the header is sent before the stream is priced); `None` is no price.
    #[tokio::test]
    async fn the_proxy_cost_is_read() {
        let body = full_json("hi");
        let priced = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nx-litellm-response-cost: 2.2e-05\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).into_bytes();
        let (r, _, _) = call(vec![priced], false, 0).await;
        assert_eq!(r.expect("reply").usage.reported_cost_usd, Some(2.2e-05));
        let unpriced = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nx-litellm-response-cost: None\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).into_bytes();
        let (r, _, _) = call(vec![unpriced], false, 0).await;
        assert_eq!(r.expect("reply").usage.reported_cost_usd, None);
        let usage =
            r#"{"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":4,"cost":3.8e-05}}"#;
        let (r, _, _) = call(vec![sse(&[HELLO, STOP, usage, "[DONE]"], true)], true, 0).await;
        assert_eq!(r.expect("reply").usage.reported_cost_usd, Some(3.8e-05));
    }
}
