//! Compaction (automatic at `compaction.threshold` of the context window, and `/compact`),
//! `/recap`, and the interactive spend ceiling. Every model call here goes through the one
//! request builder, like the main loop's.

use crate::context::{message_chars, request_view};
use crate::session::{CoreError, Session};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use yuyao_model::{ModelClient, ModelError, build_request};
use yuyao_protocol::{Message, MessageRole, NoticeLevel, Request};
use yuyao_store::sessions::COMPACTION_PREFIX;

const COMPACT_SYSTEM: &str = "You summarize a coding agent's conversation so the work can continue in a fresh context. Be factual and complete; never invent. Write plain Markdown with exactly these sections:\n## Task\nThe user's request(s), with every constraint and preference they stated.\n## Decisions\nWhat was decided and why.\n## Files touched\nEvery file read, created or modified, with what changed.\n## Open todos\nWhat remains to be done, in order, including unverified or failing items.\n## Current state\nWhere the work stands right now and the next step.\n## Plan\nThe approved plan, verbatim, if the conversation has one (otherwise write: none).";
const COMPACT_ASK: &str = "Summarize the conversation above with the sections Task, Decisions, Files touched, Open todos and Current state.";
const TASK_HEAD: &str = "## Original task (verbatim)\n";
const TASK_TAIL: &str = "\n\nContinue the work from here.";
const RECAP_SYSTEM: &str = "You write a one-line \"where we left off\" recap of a coding session: what the task is, what is done, and the next step. One sentence, at most 40 words, no preamble.";
/// The kept tail may use this share of the compaction budget.
const TAIL_SHARE: f64 = 0.3;
const TASK_CAP_CHARS: usize = 8000;

/// The user's original task: the first prompt, or the one an earlier compaction carried.
fn original_task(history: &[Message]) -> Option<String> {
    let first = history.iter().find(|m| m.role == MessageRole::User)?;
    let text = first.text();
    if let Some(rest) = text.strip_prefix(COMPACTION_PREFIX) {
        let start = rest.find(TASK_HEAD)? + TASK_HEAD.len();
        let body = &rest[start..];
        return Some(body.strip_suffix(TASK_TAIL).unwrap_or(body).to_string());
    }
    Some(text.chars().take(TASK_CAP_CHARS).collect())
}

/// Where the kept tail starts: at a user or assistant message (never between a call and its
/// result), as late as needed for the tail to fit `max_chars`.
fn tail_start(history: &[Message], max_chars: usize) -> usize {
    let last_user = history
        .iter()
        .rposition(|m| m.role == MessageRole::User)
        .unwrap_or(0);
    let mut suffix = vec![0usize; history.len() + 1];
    for i in (0..history.len()).rev() {
        suffix[i] = suffix[i + 1] + message_chars(&history[i]);
    }
    (last_user..history.len())
        .find(|&i| history[i].role != MessageRole::Tool && suffix[i] <= max_chars)
        .unwrap_or(history.len())
}

impl Session {
    fn model_client(&self) -> Result<ModelClient, CoreError> {
        self.client().map_err(CoreError::Failed)
    }

    /// Replaces the older part of the conversation with a summary made by the model. The
    /// session file keeps everything (a `compaction` entry records the summary).
    pub(crate) async fn compact(
        &self,
        client: &ModelClient,
        focus: Option<&str>,
        token: &CancellationToken,
        max_tokens: Option<u64>,
    ) -> Result<String, ModelError> {
        let history = self.lock().history.to_vec();
        let budget = self.context_window() as f64 * self.compaction_threshold();
        let cut = tail_start(&history, (budget * TAIL_SHARE * 4.0) as usize);
        if cut == 0 || history.is_empty() {
            return Ok("nothing to compact yet".into());
        }
        for compacting in crate::feature::hooks(|f| f.compacting) {
            compacting(self, focus);
        }
        // What is about to be summarized may hold things worth keeping (memory's flush).
        for before in crate::feature::hooks(|f| f.before_compact) {
            before(self, client, &history[..cut], token, max_tokens).await?;
        }
        let before = crate::context::request_tokens(&self.next_request(&history).0);
        let (mut view, _) = request_view(&history[..cut], self.stub_batch_chars());
        let mut ask = COMPACT_ASK.to_string();
        if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
            ask.push_str(&format!(" Pay particular attention to: {f}"));
        }
        view.push(Message::user(ask));
        let mut req = build_request(COMPACT_SYSTEM, &view, Vec::new(), false, None);
        req.max_tokens = max_tokens;
        let reply = client.complete(&req, &mut |_| {}, token).await?;
        let summary = reply.text.trim().to_string();
        if summary.is_empty() {
            return Err(ModelError::Protocol {
                url: client.config().endpoint(),
                message: "the model returned an empty summary".into(),
            });
        }
        let task = original_task(&history).unwrap_or_default();
        let text = format!("{COMPACTION_PREFIX}\n\n{summary}\n\n{TASK_HEAD}{task}{TASK_TAIL}");
        let tail = history[cut..].to_vec();
        let cost = self.price().cost(&reply.usage);
        {
            let mut st = self.lock();
            st.cost_usd += cost;
            st.usage.add(&reply.usage);
            let keep = tail.len();
            st.sync_log();
            st.log
                .append("compaction", json!({"summary": text, "keep": keep}));
            let mut next = vec![Message::user(text)];
            next.extend(tail);
            st.logged = next.len();
            st.history.replace(next);
            st.reset_prefix();
            // What features pin outlives the summary (the approved plan, the task list).
            let pins: Vec<String> = crate::feature::hooks(|f| f.pins)
                .flat_map(|pins| pins(self, &st.log))
                .collect();
            for pin in pins {
                st.push(Message::user(pin));
            }
            st.trajectory.record(
                "compaction",
                json!({"replaced": cut, "kept": keep, "summary": summary, "cost_usd": cost}),
            );
        }
        let history = self.lock().history.to_vec();
        let after = crate::context::request_tokens(&self.next_request(&history).0);
        let msg = format!(
            "context compacted: {cut} messages summarized, about {before} → {after} tokens"
        );
        self.notice(NoticeLevel::Info, msg.clone());
        Ok(msg)
    }

    /// A one-line "where we left off" summary of the conversation.
    pub fn recap(&self) -> Result<String, CoreError> {
        let history = self.messages();
        if history.is_empty() {
            return Ok("nothing to recap: the conversation is empty".into());
        }
        let client = self.model_client()?;
        let start = history.len().saturating_sub(30);
        let start = (start..history.len())
            .find(|&i| history[i].role != MessageRole::Tool)
            .unwrap_or(history.len());
        let (mut view, _) = request_view(&history[start..], self.stub_batch_chars());
        if let Some(task) = original_task(&history) {
            view.insert(0, Message::user(format!("(the session's task) {task}")));
        }
        view.push(Message::user(
            "Give the one-line recap of where we left off.",
        ));
        let mut req = build_request(RECAP_SYSTEM, &view, Vec::new(), false, None);
        req.max_tokens = self.ceiling_for_command(&req)?;
        let token = CancellationToken::new();
        let reply = self
            .block_on(client.complete(&req, &mut |_| {}, &token))?
            .map_err(|e| CoreError::Failed(e.to_string()))?;
        let cost = self.price().cost(&reply.usage);
        {
            let mut st = self.lock();
            st.cost_usd += cost;
            st.usage.add(&reply.usage);
        }
        let line = reply
            .text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string();
        Ok(line)
    }

    /// The spend ceiling before a model call a command makes (`/compact`, `/recap`): the
    /// call's `max_tokens`, or why it cannot be made.
    fn ceiling_for_command(
        &self,
        req: &yuyao_model::ChatRequest,
    ) -> Result<Option<u64>, CoreError> {
        self.spend_cap(crate::context::request_tokens(req), None)
            .map_err(|stop| {
                CoreError::Failed(stop.error.unwrap_or_else(|| "spend ceiling reached".into()))
            })
    }

    /// The spend ceiling would be passed by the next call: ask the human (interactive) to
    /// stop, raise or remove it. Headless and agent_api sessions stop (LimitsExceeded).
    pub(crate) fn cost_ceiling_allows(&self, spent: f64, estimate: f64, ceiling: f64) -> bool {
        let Some(h) = self.handler.as_ref().filter(|_| !self.opts.headless) else {
            return false;
        };
        let mut ceiling = ceiling;
        for _ in 0..3 {
            let answer = h.request(&Request::CostCeiling {
                question: format!(
                    "The next model call (about ${estimate:.4}) would pass the session's spend ceiling of ${ceiling:.4} (${spent:.4} spent). Answer: stop, remove, or raise <usd>."
                ),
                spent_usd: spent,
                estimate_usd: estimate,
                ceiling_usd: ceiling,
            });
            let answer = answer.unwrap_or_default();
            let a = answer.trim().to_ascii_lowercase();
            if a == "remove" {
                self.lock().max_cost_usd = None;
                self.notice(NoticeLevel::Info, "spend ceiling removed for this session");
                return true;
            }
            let raised = a
                .strip_prefix("raise")
                .unwrap_or(&a)
                .trim()
                .trim_start_matches('$')
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0);
            let Some(v) = raised else {
                return false;
            };
            ceiling = v;
            self.lock().max_cost_usd = Some(v);
            self.notice(
                NoticeLevel::Info,
                format!("spend ceiling raised to ${v:.4}"),
            );
            if spent + estimate <= v {
                return true;
            }
        }
        false
    }
}

/// `/compact [focus]` (`/compress`).
pub(crate) fn compact_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let client = s.model_client()?;
    let history = s.messages();
    let cap = s.ceiling_for_command(&s.next_request(&history).0)?;
    let focus = args.join(" ");
    let token = CancellationToken::new();
    // An explicit request compacts everything before the last prompt.
    let r = s.block_on(s.compact(&client, Some(&focus), &token, cap))?;
    r.map_err(|e| CoreError::Failed(format!("compaction failed: {e}")))
}

pub(crate) fn recap_command(s: &Session, _: &[String]) -> Result<String, CoreError> {
    s.recap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_never_starts_on_a_tool_result() {
        let mut a = Message::assistant("");
        a.tool_calls = vec![yuyao_protocol::ToolCall {
            id: "c".into(),
            name: "read".into(),
            arguments: "{}".into(),
        }];
        let h = vec![
            Message::user("task"),
            a,
            Message::tool("c", "x".repeat(100)),
            Message::assistant("more"),
        ];
        assert_eq!(tail_start(&h, 10), 3);
        assert_eq!(tail_start(&h, 100_000), 0);
        assert_eq!(tail_start(&h, 1), 4);
    }

    #[test]
    fn the_task_survives_repeated_compactions() {
        let h = vec![Message::user("fix calc.py")];
        let t = original_task(&h).unwrap();
        let compacted = format!("{COMPACTION_PREFIX}\n\nS\n\n{TASK_HEAD}{t}{TASK_TAIL}");
        assert_eq!(
            original_task(&[Message::user(compacted)]).as_deref(),
            Some("fix calc.py")
        );
    }
}
