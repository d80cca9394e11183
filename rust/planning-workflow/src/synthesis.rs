//! Planning's tool-free synthesis (seed 001): when research ends — a loop limit, the
//! tool-call budget, the tool-preview budget, a navigation guard, two empty replies, or a
//! headless run without a valid plan — one request without tools must hold exactly one
//! valid plan; anything else is a blocked handoff that keeps the draft.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::PlanStep;
use tokio_util::sync::CancellationToken;
use yuyao_core::{Session, TurnSummary};
use yuyao_model::{ModelClient, Piece};
use yuyao_protocol::{Message, Mode, NoticeLevel};

pub(crate) trait SynthesisExt {
    async fn plan_synthesis(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
    ) -> Option<TurnSummary>;
    async fn plan_recovery_pass(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
        why: &str,
    ) -> TurnSummary;
    async fn plan_headless_final(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
    ) -> Option<TurnSummary>;
    async fn synthesize(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
        why: &str,
    ) -> TurnSummary;
}

impl SynthesisExt for Session {
    /// Planning's second empty reply: one tool-free synthesis from the evidence so far. A
    /// valid plan is persisted and goes to approval; anything else is a blocked handoff
    /// (the draft kept, planning still active), never "done".
    async fn plan_synthesis(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
    ) -> Option<TurnSummary> {
        if self.lock().policy.mode != Mode::Plan {
            return None;
        }
        self.notice(
            NoticeLevel::Warning,
            "the model sent empty replies twice while planning; one tool-free synthesis of the plan follows",
        );
        Some(self.synthesize(client, token, "Two empty replies.").await)
    }

    /// Planning's recovery pass (a navigation guard tripped, the loop limit or the tool-call
    /// budget was reached): one tool-free synthesis of the plan from the evidence gathered.
    async fn plan_recovery_pass(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
        why: &str,
    ) -> TurnSummary {
        self.notice(
            NoticeLevel::Warning,
            format!("{why}: research stops; one tool-free synthesis of the plan follows"),
        );
        self.lock()
            .trajectory
            .record("recovery_pass", serde_json::json!({"reason": why}));
        let why = format!("Research stops here: {why}.");
        self.synthesize(client, token, &why).await
    }

    /// Headless planning whose clarification went unanswered (no human) and that then
    /// answered without a valid plan: one bounded tool-free synthesis. `None` anywhere else,
    /// or once done this turn.
    async fn plan_headless_final(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
    ) -> Option<TurnSummary> {
        {
            let st = self.lock();
            if st.policy.mode != Mode::Plan || (!st.policy.headless && self.has_handler()) {
                return None;
            }
        }
        {
            let mut p = self.planning();
            if p.awaiting || p.synthesized || !p.asked_headless {
                return None;
            }
            p.synthesized = true;
        }
        self.notice(
            NoticeLevel::Info,
            "no valid plan yet and nobody to ask: one tool-free synthesis of the plan follows",
        );
        Some(
            self.synthesize(client, token, "No valid plan was produced yet.")
                .await,
        )
    }

    async fn synthesize(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
        why: &str,
    ) -> TurnSummary {
        self.lock().push(Message::user(format!(
            "[planning recovery] {why} Without calling tools or asking questions, write the plan now from the evidence gathered so far: exactly one <proposed_plan> block in the required format."
        )));
        let (mut req, _) = self.next_request_now();
        req.tools.clear();
        let reply = client.complete(&req, &mut |_: Piece<'_>| {}, token).await;
        let blocked = |why: &str| {
            let msg = format!(
                "planning is blocked: {why}. The draft is kept and planning is still active: send more guidance, or /plan off"
            );
            self.notice(NoticeLevel::Warning, msg.clone());
            TurnSummary {
                status: "completed",
                exit_status: "NotSubmitted",
                error: Some(msg),
                text: String::new(),
            }
        };
        let reply = match reply {
            Ok(r) => r,
            Err(e) => return blocked(&format!("the synthesis call failed ({e})")),
        };
        {
            let cost = self.price().cost(&reply.usage);
            let mut st = self.lock();
            st.steps += 1;
            st.cost_usd += cost;
            st.usage.add(&reply.usage);
            st.push(Message::assistant(reply.text.clone()));
        }
        let n = super::extract::plans(&reply.text).len();
        if n != 1 || !reply.tool_calls.is_empty() {
            return blocked(&format!(
                "the tool-free synthesis held {n} plan block(s){}",
                if reply.tool_calls.is_empty() {
                    ""
                } else {
                    " and tool calls"
                }
            ));
        }
        // No repair round here: the synthesis is the last chance of this turn.
        self.planning().repairs = u32::MAX / 2;
        match self.plan_after_reply(&reply.text, false) {
            PlanStep::Stop(s) if s.error.is_none() => s,
            _ => blocked("the synthesized plan did not validate"),
        }
    }
}
