//! `/btw <question>` (`/side`): a quick answer from the model that never joins the history.
//! The model sees the conversation as the next turn would (same system prompt and view) plus
//! the question, without tools; the answer is returned to the front and its cost counted, but
//! nothing is pushed, so the next request does not contain the question or the answer.

use crate::session::{CoreError, Session};
use tokio_util::sync::CancellationToken;
use yuyao_protocol::Message;

const ASIDE: &str = "(A side question from the user, outside the task: answer it briefly from what you already know of this conversation and project, without tools. It will not be kept in the conversation.)";

pub(crate) fn btw_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let question = args.join(" ");
    if question.trim().is_empty() {
        return Err(CoreError::Usage("usage: /btw <question>".into()));
    }
    s.side_question(&question)
}

impl Session {
    /// One model call over a copy of the history; the session's history is not touched.
    pub fn side_question(&self, question: &str) -> Result<String, CoreError> {
        let mut history = self.messages();
        history.push(Message::user(format!("{ASIDE}\n\n{question}")));
        let (mut req, _) = self.next_request(&history);
        req.tools.clear();
        req.stream = false;
        let (reply, cost) = self
            .side_call(&mut req, None, &CancellationToken::new(), false)
            .map_err(|e| CoreError::Failed(e.to_string()))?;
        self.lock().trajectory.record(
            "side_question",
            serde_json::json!({"question": question, "answer": reply.text, "cost_usd": cost}),
        );
        Ok(reply.text.trim().to_string())
    }
}

/// The slash commands of this feature (feature.rs).
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "side_question",
    commands: &[crate::cmd!(
        "btw",
        ["side"],
        "<question>",
        "a quick aside outside the history",
        Some(crate::side_question::btw_command)
    )],
    ..crate::feature::Feature::NONE
};
