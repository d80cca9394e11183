//! Bounded recovery of every mode (seed 001). Refused tool calls: more than
//! `tools.max_consecutive_blocked_tool_calls_per_turn` (default 3) in a row stop the turn,
//! and so does a total past twice that (four times while planning, exactly the cap in
//! recovery mode). The session is persisted before the stop, and the handoff names
//! `yuyao --resume <id>` only when that file was verified on disk. The turn's one recovery
//! pass (the navigation guards of `yuyao_planning::navigation`) is a tool-free request; while
//! planning, the planning feature's synthesis takes its place (`rust/planning-workflow/src/synthesis.rs`).

use crate::session::{Session, TurnSummary};
use tokio_util::sync::CancellationToken;
use yuyao_model::{ModelClient, Piece};
use yuyao_protocol::{Message, Mode, NoticeLevel};

pub(crate) const DEFAULT_BLOCKED_CAP: u32 = 3;

/// The blocked-call fuse of one turn. Strict: a bound of N permits N refused calls and
/// stops on call N + 1. The consecutive bound is the configured cap; the total is twice the
/// cap normally, four times while planning, and exactly the cap once the turn is in
/// recovery mode (a recovery pass was armed: the turn already showed churn, so it gets no
/// second allowance of refusals).
pub(crate) struct Fuse {
    consecutive: u32,
    total: u32,
    pub cap: u32,
    planning: bool,
    /// Recovery mode: entered when the turn's recovery pass is armed, left with the turn.
    pub recovery: bool,
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
        Fuse {
            consecutive: 0,
            total: 0,
            cap,
            planning: s.lock().policy.mode == Mode::Plan,
            recovery: false,
        }
    }

    pub(crate) fn total_cap(&self) -> u32 {
        if self.recovery {
            self.cap
        } else if self.planning {
            self.cap.saturating_mul(4)
        } else {
            self.cap.saturating_mul(2)
        }
    }

    /// Counts one call; the reason to stop once a bound is exceeded. An allowed call resets
    /// the streak, never the turn's total.
    pub(crate) fn record(&mut self, blocked: bool) -> Option<String> {
        if !blocked {
            self.consecutive = 0;
            return None;
        }
        self.consecutive += 1;
        self.total += 1;
        if self.consecutive > self.cap {
            return Some(format!(
                "{} tool calls in a row were refused (tools.max_consecutive_blocked_tool_calls_per_turn = {})",
                self.consecutive, self.cap
            ));
        }
        let total_cap = self.total_cap();
        if self.total > total_cap {
            return Some(format!(
                "{} tool calls were refused in this turn (the turn permits {total_cap}{})",
                self.total,
                if self.recovery {
                    " in recovery mode"
                } else if self.planning {
                    " while planning"
                } else {
                    ""
                }
            ));
        }
        None
    }
}

/// The request of an execution-mode recovery pass (sent without tools).
pub(crate) fn pass_prompt(why: &str) -> String {
    format!(
        "[recovery pass] {why}. Tools are unavailable for this reply. From the evidence already gathered, say what you found and what you will do differently; do not repeat the same searches or listings."
    )
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
        let (mut req, _) = self.next_request_now();
        req.tools.clear();
        let handoff = match client.complete(&req, &mut |_: Piece<'_>| {}, token).await {
            Ok(reply) => {
                // Priced before the lock: the catalog's price reads the model's name.
                let cost = self.price().cost(&reply.usage);
                let mut st = self.lock();
                st.steps += 1;
                st.cost_usd += cost;
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
}

#[cfg(test)]
mod tests {
    fn fuse(planning: bool, recovery: bool) -> super::Fuse {
        super::Fuse {
            consecutive: 0,
            total: 0,
            cap: 3,
            planning,
            recovery,
        }
    }

    /// Refused, refused, allowed, ...: never more than 3 in a row; the refusal that trips
    /// the total, counted from 1.
    fn trips_at(mut f: super::Fuse) -> u32 {
        let mut refused = 0;
        for k in 0..100 {
            let blocked = k % 3 != 2;
            refused += blocked as u32;
            if f.record(blocked).is_some() {
                return refused;
            }
        }
        0
    }

    #[test]
    fn the_total_fuse_is_strict_per_mode() {
        assert_eq!(trips_at(fuse(false, false)), 7);
        assert_eq!(trips_at(fuse(true, false)), 13);
        assert_eq!(trips_at(fuse(true, true)), 4);
        assert_eq!(trips_at(fuse(false, true)), 4);
    }

    #[test]
    fn the_streak_is_strict_too() {
        let mut f = fuse(false, false);
        assert!((0..3).all(|_| f.record(true).is_none()));
        assert!(f.record(true).unwrap().contains("4 tool calls in a row"));
    }
}
