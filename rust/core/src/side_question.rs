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
        let client = self.client().map_err(CoreError::Failed)?;
        let mut history = self.messages();
        history.push(Message::user(format!("{ASIDE}\n\n{question}")));
        let (mut req, _) = self.next_request(&history);
        req.tools.clear();
        req.stream = false;
        req.max_tokens = self
            .spend_cap(crate::context::request_tokens(&req), None)
            .map_err(|stop| {
                CoreError::Failed(stop.error.unwrap_or_else(|| "spend ceiling reached".into()))
            })?;
        let token = CancellationToken::new();
        let reply = self
            .block_on(client.complete(&req, &mut |_| {}, &token))?
            .map_err(|e| CoreError::Failed(e.to_string()))?;
        let cost = self.price().cost(&reply.usage);
        {
            let mut st = self.lock();
            st.cost_usd += cost;
            st.usage.add(&reply.usage);
            st.trajectory.record(
                "side_question",
                serde_json::json!({"question": question, "answer": reply.text, "cost_usd": cost}),
            );
        }
        Ok(reply.text.trim().to_string())
    }
}
