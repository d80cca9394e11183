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
