//! Bounded recovery. Refused tool calls: `tools.max_consecutive_blocked_tool_calls_per_turn`
//! (default 3) in a row stop the turn, and so does a total of twice that in one turn (four
//! times while planning). The session is persisted before the stop, and the handoff names
//! `yuyao --resume <id>` only when that file was verified on disk. Planning's second empty
//! reply gets one tool-free synthesis that must hold exactly one valid plan.

use super::PlanStep;
use crate::session::{Session, TurnSummary};
use tokio_util::sync::CancellationToken;
use yuyao_model::{ModelClient, Piece};
use yuyao_protocol::{Message, Mode, NoticeLevel};

pub(crate) const DEFAULT_BLOCKED_CAP: u32 = 3;

pub(crate) struct Fuse {
    consecutive: u32,
    total: u32,
    pub cap: u32,
    pub total_cap: u32,
}

impl Fuse {
    pub(crate) fn new(s: &Session) -> Fuse {
        let cap = s
            .config
            .get("tools.max_consecutive_blocked_tool_calls_per_turn")
            .and_then(|v| v.as_integer())
            .filter(|n| *n > 0)
            .map(|n| n as u32)
            .unwrap_or(DEFAULT_BLOCKED_CAP);
        let planning = s.lock().policy.mode == Mode::Plan;
        Fuse {
            consecutive: 0,
            total: 0,
            cap,
            total_cap: cap * if planning { 4 } else { 2 },
        }
    }

    /// Counts one call; the reason to stop once a bound is reached.
    pub(crate) fn record(&mut self, blocked: bool) -> Option<String> {
        if !blocked {
            self.consecutive = 0;
            return None;
        }
        self.consecutive += 1;
        self.total += 1;
        if self.consecutive >= self.cap {
            return Some(format!(
                "{} tool calls in a row were refused (tools.max_consecutive_blocked_tool_calls_per_turn = {})",
                self.consecutive, self.cap
            ));
        }
        if self.total >= self.total_cap {
            return Some(format!(
                "{} tool calls were refused in this turn (the turn's limit is {})",
                self.total, self.total_cap
            ));
        }
        None
    }
}

impl Session {
    /// The turn stops for refused calls: one tool-free call lets the model read the refusals
    /// and hand off (what was done, what was refused, what would allow it); the session file
    /// is written first, and the resume command is named only if the file on disk holds this
    /// session.
    pub(crate) async fn blocked_stop(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
        why: String,
    ) -> TurnSummary {
        self.lock().push(Message::user(format!(
            "[stopped: {why}] Tools are unavailable for the rest of this turn. Without calling tools, say what you did, which calls were refused and why, and what would allow them."
        )));
        let history = self.lock().history.clone();
        let (mut req, _) = self.next_request(&history);
        req.tools.clear();
        let handoff = match client.complete(&req, &mut |_: Piece<'_>| {}, token).await {
            Ok(reply) => {
                let mut st = self.lock();
                st.steps += 1;
                st.cost_usd += self.price().cost(&reply.usage);
                st.usage.add(&reply.usage);
                // Tool calls sent anyway are dropped: no tool runs after the stop.
                st.push(Message::assistant(reply.text.clone()));
                reply.text
            }
            Err(_) => String::new(),
        };
        let verified = {
            let mut st = self.lock();
            st.sync_log();
            st.log.materialize();
            let path = st.log.path().to_path_buf();
            std::fs::read_to_string(&path)
                .ok()
                .is_some_and(|t| t.contains(&format!("\"id\":\"{}\"", self.id)))
        };
        let mut msg = format!(
            "stopped: {why}. Change the mode or the rules that refuse these calls, or rephrase the task"
        );
        if verified {
            msg.push_str(&format!(
                "; continue later with `yuyao --resume {}`",
                self.id
            ));
        }
        self.notice(NoticeLevel::Warning, msg.clone());
        TurnSummary {
            status: "limits_exceeded",
            exit_status: "LimitsExceeded",
            error: Some(msg),
            text: handoff,
        }
    }

    /// Planning's second empty reply: one tool-free synthesis from the evidence so far. A
    /// valid plan is persisted and goes to approval; anything else is a blocked handoff
    /// (the draft kept, planning still active), never "done".
    pub(crate) async fn plan_synthesis(
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
        self.synthesize(client, token, "Two empty replies.").await
    }

    /// Headless planning whose clarification went unanswered (no human) and that then
    /// answered without a valid plan: one bounded tool-free synthesis. `None` anywhere else,
    /// or once done this turn.
    pub(crate) async fn plan_headless_final(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
    ) -> Option<TurnSummary> {
        {
            let st = self.lock();
            if st.policy.mode != Mode::Plan || !(st.policy.headless || self.handler.is_none()) {
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
        self.synthesize(client, token, "No valid plan was produced yet.")
            .await
    }

    async fn synthesize(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
        why: &str,
    ) -> Option<TurnSummary> {
        self.lock().push(Message::user(format!(
            "[planning recovery] {why} Without calling tools or asking questions, write the plan now from the evidence gathered so far: exactly one <proposed_plan> block in the required format."
        )));
        let history = self.lock().history.clone();
        let (mut req, _) = self.next_request(&history);
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
            Err(e) => return Some(blocked(&format!("the synthesis call failed ({e})"))),
        };
        {
            let mut st = self.lock();
            st.steps += 1;
            st.cost_usd += self.price().cost(&reply.usage);
            st.usage.add(&reply.usage);
            st.push(Message::assistant(reply.text.clone()));
        }
        let n = super::extract::plans(&reply.text).len();
        if n != 1 || !reply.tool_calls.is_empty() {
            return Some(blocked(&format!(
                "the tool-free synthesis held {n} plan block(s){}",
                if reply.tool_calls.is_empty() {
                    ""
                } else {
                    " and tool calls"
                }
            )));
        }
        // No repair round here: the synthesis is the last chance of this turn.
        self.planning().repairs = u32::MAX / 2;
        match self.plan_after_reply(&reply.text, false) {
            PlanStep::Stop(s) if s.error.is_none() => Some(s),
            _ => Some(blocked("the synthesized plan did not validate")),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fuse_counts() {
        let mut f = super::Fuse {
            consecutive: 0,
            total: 0,
            cap: 3,
            total_cap: 6,
        };
        let mut stops = 0;
        for k in 0..12 {
            // blocked, blocked, ok, ...: never 3 in a row; the 6th refusal trips the total.
            let blocked = k % 3 != 2;
            if let Some(why) = f.record(blocked) {
                assert!(why.contains("6 tool calls"), "{why}");
                assert_eq!(k, 7);
                stops += 1;
                break;
            }
        }
        assert_eq!(stops, 1);
    }
}
