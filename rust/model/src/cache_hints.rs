//! Provider prompt-cache hints. Anthropic-family models (through litellm) reuse a cached
//! prefix only up to an explicit `cache_control` breakpoint: one is set on the system prompt
//! (fixed for the conversation) and one on the newest message (requests are append-only
//! between compactions, so the next request starts with everything up to it). The system
//! prompt ends with the session's own context ([`CONTEXT_HEAD`]: date, folders, git,
//! instruction files, memory); a breakpoint just before it lets another session with the same
//! settings reuse the tool schemas and the fixed prompt. Only the wire copy is marked; the
//! history is untouched.

use serde_json::{Value, json};

/// `model.cache_hints`: `on`, `off`, or `auto` (the default: Anthropic-family model names).
pub fn wanted(setting: &str, model: &str) -> bool {
    match setting.trim().to_ascii_lowercase().as_str() {
        "on" | "true" => true,
        "off" | "false" => false,
        _ => {
            let m = model.to_ascii_lowercase();
            m.contains("claude") || m.contains("anthropic")
        }
    }
}

/// Where the system prompt's session context starts (the prompt builder writes it; with a
/// replaced prompt it is absent and the system prompt stays one part).
pub const CONTEXT_HEAD: &str = "\n\n# Environment\n";

/// Marks the system message and the newest message of a request body's `messages`.
pub fn mark(messages: &mut [Value]) {
    let n = messages.len();
    if let Some(first) = messages.first_mut() {
        mark_one_of(first, true, n == 1);
    }
    if n > 1 {
        mark_one(&mut messages[n - 1]);
    }
}

/// [`mark`] of one message of the body, the `first` and/or the `last` one (for a body
/// written message by message).
pub(crate) fn mark_one_of(m: &mut Value, first: bool, last: bool) {
    let system = m.get("role").and_then(Value::as_str) == Some("system");
    if first && system {
        split_context(m);
    }
    if (first && system) || (last && !first) {
        mark_one(m);
    }
}

/// A system prompt holding [`CONTEXT_HEAD`] becomes two text parts, the fixed one marked as a
/// breakpoint (the context part gets the usual one from `mark_one`).
fn split_context(m: &mut Value) {
    let Some(Value::String(text)) = m.get("content") else {
        return;
    };
    let Some(at) = text.find(CONTEXT_HEAD).filter(|&at| at > 0) else {
        return;
    };
    let (fixed, context) = text.split_at(at);
    let parts = json!([
        {"type": "text", "text": fixed, "cache_control": ephemeral()},
        {"type": "text", "text": context},
    ]);
    m["content"] = parts;
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

fn mark_one(m: &mut Value) {
    let tool = m.get("role").and_then(Value::as_str) == Some("tool");
    let Some(obj) = m.as_object_mut() else {
        return;
    };
    match obj.get_mut("content") {
        Some(Value::String(text)) => {
            let mut part = json!({"type": "text", "text": std::mem::take(text)});
            if !tool {
                part["cache_control"] = ephemeral();
            }
            obj.insert("content".into(), Value::Array(vec![part]));
        }
        Some(Value::Array(parts)) if !tool && !parts.is_empty() => {
            if let Some(last) = parts.last_mut().and_then(Value::as_object_mut) {
                last.insert("cache_control".into(), ephemeral());
            }
            return;
        }
        _ => {}
    }
    // A tool result (litellm reads its marker on the message) or an assistant message with
    // tool calls only.
    if tool || !obj.contains_key("content") || obj["content"].is_null() {
        obj.insert("cache_control".into(), ephemeral());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_prompt_is_marked_before_its_session_context_too() {
        let system = format!("fixed part{CONTEXT_HEAD}- Date: today");
        let mut ms = vec![
            json!({"role": "system", "content": system}),
            json!({"role": "user", "content": "hi"}),
        ];
        mark(&mut ms);
        let parts = ms[0]["content"].as_array().unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0]["text"], "fixed part");
        assert_eq!(parts[0]["cache_control"]["type"], "ephemeral");
        assert_eq!(parts[1]["text"], format!("{CONTEXT_HEAD}- Date: today"));
        assert_eq!(parts[1]["cache_control"]["type"], "ephemeral");
        let joined: String = parts.iter().map(|p| p["text"].as_str().unwrap()).collect();
        assert_eq!(joined, system, "the text sent is unchanged");
        // A replaced prompt without the context stays one part.
        let mut ms = vec![json!({"role": "system", "content": "mine"})];
        mark(&mut ms);
        assert_eq!(ms[0]["content"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn auto_follows_the_model_family() {
        assert!(wanted("auto", "litellm_proxy/anthropic/claude-sonnet-4"));
        assert!(wanted("", "claude-3-5-haiku"));
        assert!(!wanted("auto", "litellm_proxy/fake-model"));
        assert!(wanted("on", "gpt-4o"));
        assert!(!wanted("off", "claude-opus"));
    }

    #[test]
    fn system_and_newest_message_are_marked() {
        let mut ms = vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant", "tool_calls": [{"id": "a"}]}),
            json!({"role": "tool", "tool_call_id": "a", "content": "out"}),
        ];
        mark(&mut ms);
        assert_eq!(ms[0]["content"][0]["text"], "sys");
        assert_eq!(ms[0]["content"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(ms[1]["content"], "hi", "only the newest message");
        assert!(ms[2].get("cache_control").is_none());
        assert_eq!(ms[3]["cache_control"]["type"], "ephemeral");
        assert_eq!(ms[3]["content"][0]["text"], "out");
        let mut ms = vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "a"}]}),
        ];
        mark(&mut ms);
        assert_eq!(ms[1]["cache_control"]["type"], "ephemeral");
        let mut ms = vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}]}),
        ];
        mark(&mut ms);
        assert!(ms[1]["content"][0].get("cache_control").is_none());
        assert_eq!(ms[1]["content"][1]["cache_control"]["type"], "ephemeral");
    }
}
