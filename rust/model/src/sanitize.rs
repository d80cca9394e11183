//! The request sanitizer (spec §8 "requests sent to the model must always be well-formed").
//!
//! It works on a copy: the durable history is never rewritten, only what goes on the wire.
//! Rules, in the order they are applied:
//! 1. exactly one system message, first (later system messages become user notes);
//! 2. no NUL bytes (Rust strings cannot hold lone surrogates, so decoding already removed them),
//!    nor JSON escapes in tool-call arguments that decode to NUL (`\u0000`, removed) or to a
//!    lone surrogate (`\ud800`, replaced by `\ufffd`);
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
    sanitize_owned(system, history.to_vec())
}

/// [`sanitize`] of a list the caller no longer needs (a request view built for this one
/// request): its messages are cleaned where they are, not copied again.
pub fn sanitize_owned(system: &str, history: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(history.len() + 1);
    out.push(system_message(system));
    feed(&mut out, 0, history);
    // Providers expect the conversation to open with the user.
    if !opens_with_user(out.get(1)) {
        out.insert(1, continue_message());
    }
    out
}

/// The request's one system message (rule 1).
pub(crate) fn system_message(system: &str) -> Message {
    let system_text = clean_text(system);
    Message::system(if system_text.trim().is_empty() {
        "You are yuyao, a coding agent.".to_string()
    } else {
        system_text
    })
}

/// Does the request open with the user once `first` (its first message after the system
/// one) is sent? Otherwise a "Continue." user message goes right after the system message.
pub(crate) fn opens_with_user(first: Option<&Message>) -> bool {
    first.is_some_and(|m| m.role == MessageRole::User)
}

/// The "Continue." message that opens a request whose first message is not the user's.
pub(crate) fn continue_message() -> Message {
    Message::user(CONTINUE)
}

/// Sanitizes `history` onto the end of `out`, in order. `base` messages were sent before
/// `out[0]` and are final: only `out`'s last message may change (a message of the same role
/// merges into it), so a conversation can be sanitized piece by piece — each piece ending
/// where the next message is not a tool result (results belong to the call before them) —
/// with the same result as in one pass (`Incremental`, in `lib.rs`). With `base` 0, `out`
/// holds the system message first; otherwise `base` counts it.
pub(crate) fn feed(out: &mut Vec<Message>, base: usize, history: Vec<Message>) {
    let mut rest = history.into_iter().peekable();
    while let Some(m) = rest.next() {
        match m.role {
            MessageRole::System => {
                let t = clean_text(&m.text());
                if !t.trim().is_empty() {
                    push_merged(out, Message::user(format!("[system note] {t}")));
                }
            }
            MessageRole::User => {
                let mut u = clean_message(m);
                if u.content.as_ref().is_none_or(Content::is_empty) {
                    u.content = Some(Content::Text(EMPTY_USER.into()));
                }
                push_merged(out, u);
            }
            MessageRole::Tool => {
                // A result that does not directly follow its call is stray: its call was
                // answered already or never made. Dropping it keeps the pairing exact.
            }
            MessageRole::Assistant => {
                let mut a = clean_message(m);
                a.reasoning_content = None;
                // The results that follow this message, in order, until another role.
                let mut results: Vec<Message> = Vec::new();
                while rest.peek().is_some_and(|r| r.role == MessageRole::Tool) {
                    results.extend(rest.next());
                }
                if a.tool_calls.is_empty() {
                    if a.content.as_ref().is_none_or(Content::is_empty) {
                        continue;
                    }
                    push_merged(out, a);
                    continue;
                }
                // Give every call a distinct, non-empty id.
                for (k, call) in a.tool_calls.iter_mut().enumerate() {
                    if call.id.trim().is_empty() {
                        call.id = format!("call_{}_{k}", base + out.len());
                    }
                    if call.name.trim().is_empty() {
                        call.name = "unknown".into();
                    }
                    if serde_json::from_str::<serde::de::IgnoredAny>(&call.arguments).is_err() {
                        call.arguments = "{}".into();
                    }
                }
                dedup_ids(&mut a);
                if a.content.as_ref().is_some_and(Content::is_empty) {
                    a.content = None;
                }
                let ids: Vec<String> = a.tool_calls.iter().map(|c| c.id.clone()).collect();
                push_merged(out, a);
                for id in ids {
                    // Each result answers one call: the first one for the id is taken.
                    let found = results
                        .iter()
                        .position(|r| r.tool_call_id.as_deref() == Some(id.as_str()));
                    let mut r = match found {
                        Some(k) => clean_message(std::mem::replace(
                            &mut results[k],
                            Message::tool(String::new(), String::new()),
                        )),
                        None => Message::tool(id.clone(), NOT_EXECUTED),
                    };
                    r.tool_call_id = Some(id);
                    if r.content.as_ref().is_none_or(Content::is_empty) {
                        r.content = Some(Content::Text(EMPTY_TOOL_RESULT.into()));
                    }
                    out.push(r);
                }
            }
        }
    }
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

/// Tool-call arguments are JSON text: besides raw NUL bytes, drop the escapes that decode to
/// NUL and replace those that decode to a lone surrogate. Everything else is kept byte for
/// byte (an escaped backslash followed by `u0000` is text, not an escape).
fn clean_arguments(s: &str) -> String {
    let s = clean_text(s);
    if !s.contains("\\u") {
        return s;
    }
    let b = s.as_bytes();
    let hex = |at: usize| -> Option<u32> {
        let digits = s.get(at..at + 4)?;
        if digits.bytes().all(|c| c.is_ascii_hexdigit()) {
            u32::from_str_radix(digits, 16).ok()
        } else {
            None
        }
    };
    let mut out = String::with_capacity(s.len());
    let (mut copied, mut i) = (0, 0);
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        let code = (b.get(i + 1) == Some(&b'u')).then(|| hex(i + 2)).flatten();
        let replacement = match code {
            Some(0) => Some(""),
            Some(0xD800..=0xDBFF) => {
                let low = (b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u'))
                    .then(|| hex(i + 8))
                    .flatten();
                if low.is_some_and(|l| (0xDC00..=0xDFFF).contains(&l)) {
                    i += 12; // a valid pair, kept
                    continue;
                }
                Some("\\ufffd")
            }
            Some(0xDC00..=0xDFFF) => Some("\\ufffd"),
            Some(_) => {
                i += 6;
                continue;
            }
            None => {
                i += 2; // `\\`, `\"`, `\n`...: the escaped character is not an escape start
                continue;
            }
        };
        if let Some(r) = replacement {
            out.push_str(&s[copied..i]);
            out.push_str(r);
            i += 6;
            copied = i;
        }
    }
    out.push_str(&s[copied.min(s.len())..]);
    out
}

fn clean_message(mut m: Message) -> Message {
    // Cleaned in place: text that needs no cleaning (nearly all of it) is not copied — this
    // runs over the whole history at every request.
    match &mut m.content {
        Some(Content::Text(t)) => clean_in_place(t),
        Some(Content::Parts(parts)) => {
            for p in parts.iter_mut() {
                if let Some(t) = p.get("text").and_then(|t| t.as_str())
                    && t.contains('\0')
                {
                    p["text"] = serde_json::Value::String(clean_text(t));
                }
            }
            parts.retain(|p| p.get("text").and_then(|t| t.as_str()) != Some(""));
        }
        None => {}
    }
    for call in &mut m.tool_calls {
        if call.arguments.contains('\0') || call.arguments.contains("\\u") {
            call.arguments = clean_arguments(&call.arguments);
        }
        clean_in_place(&mut call.name);
        clean_in_place(&mut call.id);
    }
    m
}

/// [`clean_text`] without a copy when there is nothing to remove.
fn clean_in_place(s: &mut String) {
    if s.contains('\0') {
        *s = s.replace('\0', "");
    }
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
        for call in &m.tool_calls {
            match serde_json::from_str::<serde_json::Value>(&call.arguments) {
                Ok(v) if has_nul(&v) => {
                    return Err(format!(
                        "tool call {} of message {i} has a NUL escape",
                        call.id
                    ));
                }
                Ok(_) => {}
                Err(e) => {
                    return Err(format!(
                        "tool call {} of message {i} has unreadable arguments: {e}",
                        call.id
                    ));
                }
            }
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

fn has_nul(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(t) => t.contains('\0'),
        serde_json::Value::Array(a) => a.iter().any(has_nul),
        serde_json::Value::Object(o) => o.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
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

    #[test]
    fn argument_escapes_of_nul_and_lone_surrogates_are_cleaned() {
        let table: &[(&str, &str)] = &[
            (r#"{"command":"echo a\u0000b"}"#, r#"{"command":"echo ab"}"#),
            (r#"{"c":"\u0000\u0000"}"#, r#"{"c":""}"#),
            (r#"{"c":"x\U0000"}"#, r#"{"c":"x\U0000"}"#), // not an escape (JSON is lower-case u)
            (r#"{"c":"\\u0000"}"#, r#"{"c":"\\u0000"}"#), // an escaped backslash, then text
            (r#"{"c":"\\\u0000"}"#, r#"{"c":"\\"}"#),     // escaped backslash, then a NUL escape
            (r#"{"c":"a\ud800b"}"#, r#"{"c":"a\ufffdb"}"#),
            (r#"{"c":"a\uDBFFb"}"#, r#"{"c":"a\ufffdb"}"#),
            (r#"{"c":"a\udc00b"}"#, r#"{"c":"a\ufffdb"}"#),
            (r#"{"c":"\ud83d\ude00"}"#, r#"{"c":"\ud83d\ude00"}"#), // a valid pair stays
            (r#"{"c":"\ud83d\u0041"}"#, r#"{"c":"\ufffd\u0041"}"#),
            (r#"{"c":"\ud83d"}"#, r#"{"c":"\ufffd"}"#),
            (
                r#"{"c":"\u00e9 é \n \" \/"}"#,
                r#"{"c":"\u00e9 é \n \" \/"}"#,
            ),
            (r#"{"c":"a\u00"}"#, r#"{"c":"a\u00"}"#), // truncated: left as it is
            ("{\"c\":\"a\0b\"}", r#"{"c":"ab"}"#),
            (r#"{"k\u0000":"é\u0000"}"#, r#"{"k":"é"}"#),
        ];
        for (given, wanted) in table {
            assert_eq!(&clean_arguments(given), wanted, "for {given}");
        }
    }

    #[test]
    fn escaped_nul_in_arguments_leaves_the_request_but_stays_in_history() {
        let mut a = Message::assistant("");
        a.tool_calls = vec![ToolCall {
            id: "n".into(),
            name: "bash".into(),
            arguments: r#"{"command":"echo a\u0000b","x":"\ud800"}"#.into(),
        }];
        let h = vec![Message::user("go"), a, Message::tool("n", "a\0b")];
        let before = h.clone();
        let out = sanitize("sys", &h);
        assert_eq!(h, before, "the durable history is not rewritten");
        check_well_formed(&out).unwrap();
        assert_eq!(
            out[2].tool_calls[0].arguments,
            r#"{"command":"echo ab","x":"\ufffd"}"#
        );
        assert_eq!(out[3].text(), "ab");
        // the check itself sees the escape
        let mut raw = out.clone();
        raw[2].tool_calls[0].arguments = r#"{"command":"a\u0000"}"#.into();
        assert!(check_well_formed(&raw).unwrap_err().contains("NUL escape"));
    }

    fn arb_message() -> impl Strategy<Value = Message> {
        let text = prop_oneof![
            Just(String::new()),
            Just("  ".to_string()),
            Just("a\0b".to_string()),
            "[a-z ]{0,12}",
        ];
        let id = prop_oneof![Just(String::new()), "[abc]"];
        let args = prop_oneof![
            Just(r#"{"command":"ls"}"#.to_string()),
            Just(r#"{"command":"a\u0000b"}"#.to_string()),
            Just(r#"{"command":"a\\u0000b"}"#.to_string()),
            Just(r#"{"command":"\udfff\ud800"}"#.to_string()),
            Just("{\"command\":\"a\0\"}".to_string()),
            r#"\{"c":"[a-z\\u0-9]{0,10}"\}"#,
        ];
        (
            0u8..4,
            text,
            proptest::collection::vec((id.clone(), args), 0..3),
            id,
        )
            .prop_map(|(role, text, calls, tid)| match role {
                0 => Message::system(text),
                1 => Message::user(text),
                2 => {
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
