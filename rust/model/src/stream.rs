//! Assembles a reply from streamed chunks (tool-call deltas keyed by `index`) or reads a
//! non-streamed one. Reasoning arrives as `reasoning_content` or `reasoning`; both are read.

use crate::client::{Completion, Piece};
use serde_json::Value;
use yuyao_protocol::{ToolCall, Usage};

#[derive(Default)]
pub struct Assembler {
    text: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    usage: Usage,
    finish_reason: Option<String>,
}

#[derive(Default)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

impl Assembler {
    pub fn push_chunk(&mut self, chunk: &Value, on_piece: &mut dyn FnMut(Piece<'_>)) {
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = read_usage(u);
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return;
        };
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(r.to_string());
        }
        let Some(delta) = choice.get("delta") else {
            return;
        };
        if let Some(t) = reasoning_of(delta).filter(|t| !t.is_empty()) {
            self.reasoning.push_str(t);
            on_piece(Piece::Thinking(t));
        }
        if let Some(t) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            self.text.push_str(t);
            on_piece(Piece::Text(t));
        }
        for (pos, tc) in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = tc
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(pos as u64);
            let slot = match self.calls.iter().position(|c| c.index == index) {
                Some(i) => &mut self.calls[i],
                None => {
                    self.calls.push(PartialCall {
                        index,
                        ..Default::default()
                    });
                    self.calls.last_mut().expect("just pushed")
                }
            };
            if let Some(id) = tc
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                slot.id = id.to_string();
            }
            if let Some(f) = tc.get("function") {
                if let Some(n) = f.get("name").and_then(Value::as_str) {
                    slot.name.push_str(n);
                }
                if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                    slot.arguments.push_str(a);
                }
            }
        }
    }

    /// Whether a chunk said the reply is over (`finish_reason`): a stream that ends without
    /// this and without `[DONE]` was cut.
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    pub fn finish(mut self) -> Completion {
        self.calls.sort_by_key(|c| c.index);
        Completion {
            text: self.text,
            reasoning: self.reasoning,
            tool_calls: self
                .calls
                .into_iter()
                .map(|c| ToolCall {
                    id: c.id,
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect(),
            usage: self.usage,
            finish_reason: self.finish_reason,
        }
    }

    /// Reads a complete (non-streamed) response body.
    pub fn from_full(v: &Value) -> Result<Completion, String> {
        let msg = v
            .pointer("/choices/0/message")
            .ok_or_else(|| "the response has no choices[0].message".to_string())?;
        let tool_calls = msg
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .filter_map(|c| serde_json::from_value::<ToolCall>(c.clone()).ok())
                    .collect()
            })
            .unwrap_or_default();
        Ok(Completion {
            text: msg
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            reasoning: reasoning_of(msg).unwrap_or("").to_string(),
            tool_calls,
            usage: v.get("usage").map(read_usage).unwrap_or_default(),
            finish_reason: v
                .pointer("/choices/0/finish_reason")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
}

fn reasoning_of(v: &Value) -> Option<&str> {
    v.get("reasoning_content")
        .and_then(Value::as_str)
        .or_else(|| v.get("reasoning").and_then(Value::as_str))
}

fn read_usage(u: &Value) -> Usage {
    let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        prompt_tokens: n("/prompt_tokens"),
        completion_tokens: n("/completion_tokens"),
        cached_tokens: n("/prompt_tokens_details/cached_tokens").max(n("/cache_read_input_tokens")),
        cache_write_tokens: n("/cache_creation_input_tokens"),
        reasoning_tokens: n("/completion_tokens_details/reasoning_tokens"),
        // OpenRouter (and litellm with cost in usage) report the call's price in the body.
        reported_cost_usd: u
            .get("cost")
            .and_then(Value::as_f64)
            .filter(|c| c.is_finite() && *c >= 0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_call_deltas_assemble_by_index() {
        let mut a = Assembler::default();
        let mut seen = String::new();
        let chunks = [
            json!({"choices":[{"delta":{"reasoning_content":"hm"}}]}),
            json!({"choices":[{"delta":{"content":"Hi"}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"bash","arguments":""}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read","arguments":"{\"file"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"_path\":\"x\"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}),
        ];
        for c in &chunks {
            a.push_chunk(c, &mut |p| {
                if let Piece::Text(t) = p {
                    seen.push_str(t)
                }
            });
        }
        let c = a.finish();
        assert_eq!(seen, "Hi");
        assert_eq!(c.reasoning, "hm");
        assert_eq!(c.tool_calls[0].name, "read");
        assert_eq!(c.tool_calls[0].arguments, "{\"file_path\":\"x\"}");
        assert_eq!(c.tool_calls[1].id, "b");
        assert_eq!(c.usage.cached_tokens, 4);
    }

    /// Anthropic models through litellm report cache reads and writes in their own fields.
    #[test]
    fn anthropic_cache_fields_are_read() {
        let u = read_usage(&json!({
            "prompt_tokens": 1200, "completion_tokens": 5,
            "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 150,
            "prompt_tokens_details": {"cached_tokens": null}
        }));
        assert_eq!((u.cached_tokens, u.cache_write_tokens), (1000, 150));
    }
}
