//! The request sanitizer (spec §8 "requests sent to the model must always be well-formed").
//!
//! It works on a copy: the durable history is never rewritten, only what goes on the wire.
//! Rules, in the order they are applied:
//! 1. exactly one system message, first (later system messages become user notes);
//! 2. no NUL bytes (Rust strings cannot hold lone surrogates, so decoding already removed them);
//! 3. every assistant tool call is answered right after its message (missing answers are
//!    filled with an explicit "not executed" result, stray or duplicate results are dropped);
//! 4. no empty content and no empty tool result;
//! 5. no two adjacent messages with the same role (tool results of one reply excepted:
//!    they belong together and providers require them as separate messages).

use yuyao_protocol::{Content, Message, MessageRole};

/// What a tool call that never ran is answered with.
pub const NOT_EXECUTED: &str = "(not executed: the turn ended before this tool call ran)";
const EMPTY_TOOL_RESULT: &str = "(no output)";
const EMPTY_USER: &str = "(empty message)";
const CONTINUE: &str = "Continue.";

/// Returns the well-formed message list to send, built from `system` and `history`.
pub fn sanitize(system: &str, history: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(history.len() + 1);
    let system_text = clean_text(system);
    out.push(Message::system(if system_text.trim().is_empty() {
        "You are yuyao, a coding agent.".to_string()
    } else {
        system_text
    }));

    let mut i = 0;
    while i < history.len() {
        let m = &history[i];
        i += 1;
        match m.role {
            MessageRole::System => {
                let t = clean_text(&m.text());
                if !t.trim().is_empty() {
                    push_merged(&mut out, Message::user(format!("[system note] {t}")));
                }
            }
            MessageRole::User => {
                let mut u = clean_message(m);
                if u.content.as_ref().is_none_or(Content::is_empty) {
                    u.content = Some(Content::Text(EMPTY_USER.into()));
                }
                push_merged(&mut out, u);
            }
            MessageRole::Tool => {
                // A result that does not directly follow its call is stray: its call was
                // answered already or never made. Dropping it keeps the pairing exact.
            }
            MessageRole::Assistant => {
                let mut a = clean_message(m);
                a.reasoning_content = None;
                if a.tool_calls.is_empty() {
                    if a.content.as_ref().is_none_or(Content::is_empty) {
                        continue;
                    }
                    push_merged(&mut out, a);
                    continue;
                }
                // Give every call a distinct, non-empty id.
                for (k, call) in a.tool_calls.iter_mut().enumerate() {
                    if call.id.trim().is_empty() {
                        call.id = format!("call_{}_{k}", out.len());
                    }
                    if call.name.trim().is_empty() {
                        call.name = "unknown".into();
                    }
                    if serde_json::from_str::<serde_json::Value>(&call.arguments).is_err() {
                        call.arguments = "{}".into();
                    }
                }
                dedup_ids(&mut a);
                if a.content.as_ref().is_some_and(Content::is_empty) {
                    a.content = None;
                }
                // The results that follow this message, in order, until another role.
                let mut results: Vec<&Message> = Vec::new();
                while i < history.len() && history[i].role == MessageRole::Tool {
                    results.push(&history[i]);
                    i += 1;
                }
                let calls = a.tool_calls.clone();
                push_merged(&mut out, a);
                for call in &calls {
                    let found = results
                        .iter()
                        .find(|r| r.tool_call_id.as_deref() == Some(call.id.as_str()));
                    let mut r = match found {
                        Some(r) => clean_message(r),
                        None => Message::tool(call.id.clone(), NOT_EXECUTED),
                    };
                    r.tool_call_id = Some(call.id.clone());
                    if r.content.as_ref().is_none_or(Content::is_empty) {
                        r.content = Some(Content::Text(EMPTY_TOOL_RESULT.into()));
                    }
                    out.push(r);
                }
            }
        }
    }

    // Providers expect the conversation to open with the user.
    if out.len() == 1 || out[1].role != MessageRole::User {
        out.insert(1, Message::user(CONTINUE));
    }
    out
}

/// Appends `m`, merging it into the previous message when both have the same role.
fn push_merged(out: &mut Vec<Message>, m: Message) {
    if let Some(last) = out.last_mut()
        && last.role == m.role
        && m.role != MessageRole::Tool
        && last.tool_calls.is_empty()
    {
        last.content = Some(merge_content(last.content.take(), m.content));
        last.tool_calls = m.tool_calls;
        if last.content.as_ref().is_some_and(Content::is_empty) {
            last.content = None;
        }
        return;
    }
    if let Some(last) = out.last()
        && last.role == m.role
        && m.role == MessageRole::Assistant
    {
        // The previous assistant message has calls (already answered, so this cannot happen
        // after the pairing step); keep the rule anyway by separating with a user turn.
        out.push(Message::user(CONTINUE));
    }
    out.push(m);
}

fn merge_content(a: Option<Content>, b: Option<Content>) -> Content {
    match (a, b) {
        (None, Some(b)) => b,
        (Some(a), None) => a,
        (None, None) => Content::Text(String::new()),
        (Some(Content::Text(a)), Some(Content::Text(b))) => Content::Text(join_text(&a, &b)),
        (Some(a), Some(b)) => {
            let mut parts = to_parts(a);
            parts.extend(to_parts(b));
            Content::Parts(parts)
        }
    }
}

fn join_text(a: &str, b: &str) -> String {
    match (a.trim().is_empty(), b.trim().is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}\n\n{b}"),
    }
}

fn to_parts(c: Content) -> Vec<serde_json::Value> {
    match c {
        Content::Text(t) if t.is_empty() => Vec::new(),
        Content::Text(t) => vec![serde_json::json!({"type": "text", "text": t})],
        Content::Parts(p) => p,
    }
}

fn dedup_ids(a: &mut Message) {
    let mut seen = std::collections::HashSet::new();
    for (k, call) in a.tool_calls.iter_mut().enumerate() {
        if !seen.insert(call.id.clone()) {
            call.id = format!("{}_{k}", call.id);
            seen.insert(call.id.clone());
        }
    }
}

fn clean_text(s: &str) -> String {
    if s.contains('\0') {
        s.replace('\0', "")
    } else {
        s.to_string()
    }
}

fn clean_message(m: &Message) -> Message {
    let mut m = m.clone();
    m.content = m.content.map(|c| match c {
        Content::Text(t) => Content::Text(clean_text(&t)),
        Content::Parts(parts) => Content::Parts(
            parts
                .into_iter()
                .map(|mut p| {
                    if let Some(t) = p.get("text").and_then(|t| t.as_str()).map(clean_text) {
                        p["text"] = serde_json::Value::String(t);
                    }
                    p
                })
                .filter(|p| p.get("text").and_then(|t| t.as_str()) != Some(""))
                .collect(),
        ),
    });
    for call in &mut m.tool_calls {
        call.arguments = clean_text(&call.arguments);
        call.name = clean_text(&call.name);
        call.id = clean_text(&call.id);
    }
    m
}

/// Checks the rules; returns the first violation. Used by tests and debug assertions.
pub fn check_well_formed(msgs: &[Message]) -> Result<(), String> {
    if msgs.first().map(|m| m.role) != Some(MessageRole::System) {
        return Err("first message is not the system message".into());
    }
    if msgs
        .iter()
        .filter(|m| m.role == MessageRole::System)
        .count()
        != 1
    {
        return Err("more than one system message".into());
    }
    for (i, m) in msgs.iter().enumerate() {
        let text = m.text();
        if text.contains('\0') || m.tool_calls.iter().any(|c| c.arguments.contains('\0')) {
            return Err(format!("message {i} contains NUL"));
        }
        let empty = m.content.as_ref().is_none_or(Content::is_empty);
        if empty && m.tool_calls.is_empty() {
            return Err(format!("message {i} ({:?}) has empty content", m.role));
        }
        if i > 0 {
            let prev = &msgs[i - 1];
            if prev.role == m.role && m.role != MessageRole::Tool {
                return Err(format!(
                    "messages {} and {i} share role {:?}",
                    i - 1,
                    m.role
                ));
            }
        }
        if !m.tool_calls.is_empty() {
            for (k, call) in m.tool_calls.iter().enumerate() {
                let r = msgs.get(i + 1 + k);
                if r.map(|r| r.role) != Some(MessageRole::Tool)
                    || r.and_then(|r| r.tool_call_id.as_deref()) != Some(call.id.as_str())
                {
                    return Err(format!(
                        "tool call {} of message {i} is not answered",
                        call.id
                    ));
                }
            }
            if msgs.get(i + 1 + m.tool_calls.len()).map(|r| r.role) == Some(MessageRole::Tool) {
                return Err(format!("extra tool result after message {i}"));
            }
        }
        if m.role == MessageRole::Tool {
            let prev_is_call_or_tool = i > 0
                && (msgs[i - 1].role == MessageRole::Tool || !msgs[i - 1].tool_calls.is_empty());
            if !prev_is_call_or_tool {
                return Err(format!("tool result {i} does not follow a tool call"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use yuyao_protocol::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn missing_result_is_filled() {
        let mut a = Message::assistant("");
        a.tool_calls = vec![call("a"), call("b")];
        let h = vec![Message::user("x"), a, Message::tool("b", "ok")];
        let out = sanitize("sys", &h);
        check_well_formed(&out).unwrap();
        assert_eq!(out[3].text(), NOT_EXECUTED);
        assert_eq!(out[4].text(), "ok");
    }

    #[test]
    fn history_is_not_rewritten() {
        let h = vec![Message::user("a\0b"), Message::user("")];
        let before = h.clone();
        let out = sanitize("s", &h);
        assert_eq!(h, before);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].text(), "ab\n\n(empty message)");
    }

    fn arb_message() -> impl Strategy<Value = Message> {
        let text = prop_oneof![
            Just(String::new()),
            Just("  ".to_string()),
            Just("a\0b".to_string()),
            "[a-z ]{0,12}",
        ];
        let id = prop_oneof![Just(String::new()), "[abc]"];
        (
            0u8..4,
            text,
            proptest::collection::vec(id.clone(), 0..3),
            id,
        )
            .prop_map(|(role, text, calls, tid)| match role {
                0 => Message::system(text),
                1 => Message::user(text),
                2 => {
                    let mut m = Message::assistant(text);
                    m.tool_calls = calls
                        .into_iter()
                        .map(|id| ToolCall {
                            id,
                            name: "bash".into(),
                            arguments: "{\"command\":\"ls\"}".into(),
                        })
                        .collect();
                    m
                }
                _ => Message::tool(tid, text),
            })
    }

    proptest! {
        #[test]
        fn any_history_yields_a_well_formed_request(
            system in "[a-z\0 ]{0,8}",
            history in proptest::collection::vec(arb_message(), 0..14),
        ) {
            let before = history.clone();
            let out = sanitize(&system, &history);
            prop_assert_eq!(&history, &before);
            if let Err(e) = check_well_formed(&out) {
                return Err(TestCaseError::fail(format!("{e}: {out:?}")));
            }
        }
    }
}
