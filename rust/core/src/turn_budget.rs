//! Turn budgets (seed 001, "Research Scope"): planning gets floors so research is not cut
//! short by limits sized for short execution turns — at least 60 model calls (the loop
//! budget) and 120 tool calls per turn when a lower nonzero limit is configured. Every
//! budget that fails closed is recorded as a `budget_exhausted` trajectory event with its
//! used/max counts, so a post-hoc reader can tell which ceiling fired.

use crate::session::Session;
use serde_json::json;

pub(crate) const PLANNING_LOOP_FLOOR: u32 = 60;
pub(crate) const PLANNING_TOOL_CALL_FLOOR: u32 = 120;

/// `limit` raised to `floor` while planning (unlimited stays unlimited).
pub(crate) fn floored(limit: Option<u32>, planning: bool, floor: u32) -> Option<u32> {
    match limit {
        Some(n) if planning && n > 0 && n < floor => Some(floor),
        other => other,
    }
}

impl Session {
    /// The model calls a turn may make: the session's limit, floored while planning; a
    /// feature may give a turn more (an approved plan's implementation turn).
    pub(crate) fn step_limit(&self) -> Option<u32> {
        let (max, planning) = {
            let st = self.lock();
            (st.max_steps, st.policy.mode == yuyao_protocol::Mode::Plan)
        };
        let max = floored(max, planning, PLANNING_LOOP_FLOOR);
        crate::feature::turn_hooks().fold(max, |max, t| (t.step_limit)(self, max))
    }

    /// The tool calls one turn may make (`tools.max_tool_calls_per_turn`; unset is
    /// unlimited), floored while planning.
    pub(crate) fn tool_call_budget(&self, planning: bool) -> Option<u32> {
        let max = self
            .config
            .get("tools.max_tool_calls_per_turn")
            .and_then(|v| v.as_integer())
            .filter(|n| *n > 0)
            .map(|n| n.min(u32::MAX as i64) as u32);
        floored(max, planning, PLANNING_TOOL_CALL_FLOOR)
    }

    /// A budget failed closed: the trajectory says which one, with its counts.
    pub(crate) fn budget_exhausted(&self, budget: &str, used: u32, max: u32) {
        self.lock().trajectory.record(
            "budget_exhausted",
            json!({"budget": budget, "used": used, "max": max}),
        );
    }
}

impl Session {
    /// A turn limit is reached with a person present: ask whether to grant more (seed 001).
    /// `Some(n)` continues the turn with `n` more; the grant is in the trace as
    /// `tool_loop_limit_increased` / `session_tool_limit_increased`. Headless: `None`.
    pub(crate) fn grant_more(&self, limit: &str, used: u32, max: u32) -> Option<u32> {
        let h = self.handler.as_ref().filter(|_| !self.opts.headless)?;
        let (what, step) = match limit {
            "tool_loop" => ("model calls", max.clamp(10, 100)),
            _ => ("tool calls", max.clamp(10, 200)),
        };
        let grant = format!("grant {step} more");
        let answer = h.request(&yuyao_protocol::Request::LimitReached {
            question: format!(
                "This turn reached its limit of {max} {what} ({used} used). Grant {step} more and go on, or stop here?"
            ),
            limit: limit.into(),
            used,
            max,
            options: vec![grant.clone(), "stop".into()],
        })?;
        let n = answer
            .trim()
            .strip_prefix("grant ")
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| *n > 0)?;
        let event = if limit == "tool_loop" {
            "tool_loop_limit_increased"
        } else {
            "session_tool_limit_increased"
        };
        self.lock().trajectory.record(
            event,
            json!({"limit": limit, "used": used, "max": max, "granted": n}),
        );
        self.notice(
            yuyao_protocol::NoticeLevel::Info,
            format!("{n} more {what} granted for this turn"),
        );
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_apply_to_lower_nonzero_limits_while_planning_only() {
        assert_eq!(floored(Some(10), true, 60), Some(60));
        assert_eq!(floored(Some(100), true, 60), Some(100));
        assert_eq!(floored(Some(10), false, 60), Some(10));
        assert_eq!(floored(None, true, 60), None);
        assert_eq!(floored(Some(0), true, 60), Some(0));
    }
}
