//! The memory flush before compaction (`compaction.memoryFlush.enabled`, on by default): one
//! silent model call over the part of the conversation about to be summarized, whose only
//! tool appends to today's daily note. Nothing of it enters the conversation; the trace
//! records it (`memory_flush`). Then compaction proceeds, whatever the flush did.

#[allow(unused_imports)]
use crate::session_ext::*;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use yuyao_core::Session;
use yuyao_model::{ModelClient, ModelError, build_request};
use yuyao_protocol::{Message, NoticeLevel};

const FLUSH_SYSTEM: &str = "You keep a coding agent's memory. The conversation below is about to be summarized and its details dropped. Save what is worth remembering in later sessions — preferences the user stated, decisions and their reasons, facts about the project (commands, layout, conventions), unfinished work — by calling memory-append once per note, each one short and self-contained. Do not save secrets or things obvious from the code. If nothing is worth keeping, answer NONE without calling a tool.";
const FLUSH_ASK: &str = "Before the older context is summarized: append what is worth remembering to today's daily note with memory-append, or answer NONE.";

fn append_schema() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "memory-append",
            "description": "Append one short note to today's daily memory note (memory/YYYY-MM-DD.md).",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "the note, one or two sentences"}},
                "required": ["text"],
                "additionalProperties": false
            }
        }
    })
}

fn enabled(s: &Session) -> bool {
    s.memory().enabled
        && s.config()
            .get("compaction.memoryFlush.enabled")
            .and_then(|v| v.as_bool())
            != Some(false)
}

/// Runs the flush over `older` (the messages compaction will summarize). Only a cancellation
/// is an error: any other failure is a warning and compaction goes on.
pub(crate) async fn run(
    s: &Session,
    client: &ModelClient,
    older: &[Message],
    token: &CancellationToken,
    max_tokens: Option<u64>,
) -> Result<(), ModelError> {
    if !enabled(s) || older.is_empty() {
        return Ok(());
    }
    let model = s
        .config()
        .get("compaction.memoryFlush.model")
        .map(|v| yuyao_store::config::display(&v))
        .filter(|m| !m.trim().is_empty());
    let own;
    let client = match model {
        Some(m) => {
            let mut cfg = client.config().clone();
            cfg.model = m;
            match ModelClient::new(cfg) {
                Ok(c) => {
                    own = c;
                    &own
                }
                Err(e) => {
                    s.notice(NoticeLevel::Warning, format!("memory flush skipped: {e}"));
                    return Ok(());
                }
            }
        }
        None => client,
    };
    let (mut view, _) = yuyao_core::request_view(older, s.stub_batch_chars());
    view.push(Message::user(FLUSH_ASK));
    let mut req = build_request(FLUSH_SYSTEM, &view, vec![append_schema()], false, None);
    req.max_tokens = max_tokens;
    let reply = match client.complete(&req, &mut |_| {}, token).await {
        Ok(r) => r,
        Err(ModelError::Cancelled) => return Err(ModelError::Cancelled),
        Err(e) => {
            s.notice(
                NoticeLevel::Warning,
                format!("memory flush before compaction failed ({e}); compacting without it"),
            );
            s.lock()
                .trajectory
                .record("memory_flush", json!({"error": e.to_string()}));
            return Ok(());
        }
    };
    let mut written = Vec::new();
    let mut refused = Vec::new();
    for c in &reply.tool_calls {
        let text = serde_json::from_str::<Value>(&c.arguments)
            .ok()
            .and_then(|v| v.get("text").and_then(Value::as_str).map(str::to_string));
        match (c.name.as_str(), text) {
            ("memory-append" | "memory_append", Some(t)) => {
                match s
                    .memory()
                    .add_daily(&t, "memory flush before compaction", "flush")
                {
                    Ok(f) => written
                        .push(json!({"id": f.entry.id, "text": f.entry.text, "file": f.file.path})),
                    Err(e) => refused.push(json!({"name": c.name, "error": e})),
                }
            }
            // The flush may only append to the daily note: anything else is not run.
            _ => refused.push(json!({"name": c.name, "error": "not allowed in the memory flush"})),
        }
    }
    let cost = s.price().cost(&reply.usage);
    let mut st = s.lock();
    st.cost_usd += cost;
    st.usage.add(&reply.usage);
    st.trajectory.record(
        "memory_flush",
        json!({"model": client.config().model, "written": written, "refused": refused,
               "text": reply.text, "usage": reply.usage, "cost_usd": cost}),
    );
    Ok(())
}
