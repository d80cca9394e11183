//! How the thinking level (`--thinking`, `/think`, `thinking`) reaches the request, per
//! `model.thinking_param`:
//! - `reasoning-effort` (default): OpenAI-style `reasoning_effort` low|medium|high; `max`
//!   sends `xhigh` (the level OpenAI's newest reasoning models take above `high`), and `high`
//!   from then on when the endpoint refuses it — so `max` never means less than `high`;
//! - `thinking-budget`: Anthropic-style `thinking: {type: enabled, budget_tokens: N}`;
//! - `none`: the model takes neither; nothing is sent.
//!
//! `off` sends nothing in every case. Only the request changes: how thinking is shown
//! (`--show-thinking`) is a separate setting that this never reads.

use crate::session::Session;
use serde_json::json;
use yuyao_model::ChatRequest;
use yuyao_protocol::ThinkingLevel;

/// The token budget of each level with `thinking_budget` (1024 is Anthropic's minimum).
pub(crate) fn budget_tokens(level: ThinkingLevel) -> Option<u64> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(16384),
        ThinkingLevel::Max => Some(32000),
    }
}

impl Session {
    /// Rewrites the request's thinking fields for `model.thinking_param`.
    pub(crate) fn apply_thinking(&self, req: &mut ChatRequest) {
        let param = self
            .config
            .get("model.thinking_param")
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "reasoning-effort".into());
        match param.as_str() {
            "thinking-budget" => {
                req.reasoning_effort = None;
                let level = self.lock().thinking;
                if let Some(budget) = level.and_then(budget_tokens) {
                    req.extra.insert(
                        "thinking".into(),
                        json!({"type": "enabled", "budget_tokens": budget}),
                    );
                }
            }
            "none" => req.reasoning_effort = None,
            _ => {
                let max = self.lock().thinking == Some(ThinkingLevel::Max);
                if max && !self.xhigh_refused.load(std::sync::atomic::Ordering::SeqCst) {
                    req.reasoning_effort = Some("xhigh".into());
                }
            }
        }
    }

    /// The endpoint refused `xhigh`: said once, and the call is made again with `high`.
    pub(crate) fn xhigh_refused(&self, e: &yuyao_model::ModelError, req: &ChatRequest) -> bool {
        let refused = req.reasoning_effort.as_deref() == Some("xhigh")
            && matches!(e, yuyao_model::ModelError::Http { status: 400 | 422, message, .. }
                if message.contains("reasoning") || message.contains("xhigh"));
        if refused
            && !self
                .xhigh_refused
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            self.notice(
                yuyao_protocol::NoticeLevel::Info,
                "the model does not take reasoning_effort \"xhigh\"; --thinking max sends \"high\"",
            );
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_has_no_budget_and_levels_grow() {
        assert_eq!(budget_tokens(ThinkingLevel::Off), None);
        let b: Vec<u64> = [
            ThinkingLevel::Low,
            ThinkingLevel::Medium,
            ThinkingLevel::High,
            ThinkingLevel::Max,
        ]
        .into_iter()
        .filter_map(budget_tokens)
        .collect();
        assert!(b.windows(2).all(|w| w[0] < w[1]) && b[0] >= 1024);
    }
}
