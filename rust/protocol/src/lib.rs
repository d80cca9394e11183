//! Types shared by the yuyao core and every front (TUI, `-p`, run_agent, agent_api).
//!
//! Fronts talk to the core in JSON: session options go in, events come out. Keeping the
//! types here means the Python side never re-implements a rule, it only renders.

mod enums;
mod message;
mod options;
pub mod stamp;
pub mod temp_names;
mod tool_names;

pub use enums::{Curiosity, Mode, NetworkAccess, Role, SandboxLevel, ShowThinking, ThinkingLevel};
pub use message::{Content, Message, MessageRole, ToolCall, Usage};
pub use options::{ModelSettings, SessionOptions};
pub use stamp::Stamp;
pub use tool_names::canonical_tool_name;

use serde::{Deserialize, Serialize};

/// What the core reports to a front while it works. Serialized with a `type` tag.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A piece of the assistant's answer as it streams.
    TextDelta { text: String },
    /// A piece of the model's reasoning as it streams.
    ThinkingDelta { text: String },
    /// The model is being called (a front shows a spinner until the first delta).
    ModelCall { step: u32 },
    /// The complete assistant reply of one model call.
    AssistantMessage {
        text: String,
        thinking: String,
        tool_calls: usize,
    },
    /// A tool is about to run; `intent` is the one-line "why" of its batch.
    ToolBegin {
        id: String,
        name: String,
        arguments: String,
        intent: String,
    },
    /// A batch of tool calls is about to run: its one-line "why" (the assistant's text before
    /// the calls, or the calls' `description`s). `stated` is false when the model gave none
    /// (`text` then says so); fronts show it above the batch.
    Intent {
        text: String,
        stated: bool,
        calls: usize,
    },
    /// The turn's completion check (files changed, commands, verification, assumptions,
    /// unresolved errors): `text` is the block to show, `check` the structured facts.
    Completion {
        text: String,
        /// `Some(false)` when the last verification failed; `None` when none ran.
        verified: Option<bool>,
        /// Plain statements of what is not clean (empty when nothing is).
        problems: Vec<String>,
        check: serde_json::Value,
    },
    /// Output of the project's verification command (tests/lint), verbatim (head and tail).
    Verification {
        command: String,
        ok: bool,
        exit_code: Option<i32>,
        output: String,
    },
    /// A tool finished; `output` is what the model receives.
    ToolEnd {
        id: String,
        name: String,
        ok: bool,
        output: String,
    },
    /// Token usage and cost after a model call.
    Usage {
        prompt_tokens: u64,
        completion_tokens: u64,
        cached_tokens: u64,
        reasoning_tokens: u64,
        cost_usd: f64,
        session_cost_usd: f64,
        context_percent: f64,
        /// This call's usage as `ui.usage` asks to show it (empty with `off`).
        #[serde(default)]
        line: String,
    },
    /// Something the user should see that is not the model's words.
    Notice { level: NoticeLevel, text: String },
    /// A long operation's determinate progress (`yuyao memory index`): `done` of `total`.
    Progress {
        label: String,
        done: u64,
        total: u64,
    },
    /// A line of a background monitor's output (`matched`: `notify`, `until` or null).
    JobLine {
        id: String,
        line: String,
        matched: Option<String>,
    },
    /// A background job (bash or monitor) ended; `state` says how.
    JobEnd {
        id: String,
        kind: String,
        state: String,
        exit_code: Option<i32>,
    },
    /// An event of a sub-agent (the `task` tool, `/fork`), shown nested under the parent's
    /// call `call_id` (a fork's id for `/fork`); `depth` 1 is a child of the main session.
    Agent {
        agent_id: String,
        agent: String,
        depth: u32,
        call_id: String,
        event: Box<Event>,
    },
    /// A validated plan was persisted (`approved`: it was just approved): the fronts show
    /// the synopsis and the gate; `plan` is the whole markdown.
    Plan {
        plan: String,
        title: String,
        path: String,
        steps: usize,
        files: Vec<String>,
        verify: Vec<String>,
        approved: bool,
    },
    /// Text of a `<proposed_plan>` block as it streams (seed 001 `plan.delta`; held out of
    /// the transcript's text deltas).
    PlanDelta { text: String },
    /// A validated plan waits for the user's decision (seed 001 `plan.approval.requested`).
    PlanApprovalRequested {
        path: String,
        title: String,
        steps: usize,
    },
    /// The decision on a plan (seed 001 `plan.approval.resolved`): `execute`,
    /// `fresh_context`, `revise` or `cancel`; `automatic` when no person decided it.
    PlanApprovalResolved {
        decision: String,
        automatic: bool,
        path: String,
    },
    /// The conversation was replaced by a fresh thread (seed 001 `context.reset`): what
    /// triggered it, whether the plan was kept, and the context usage before the reset.
    ContextReset {
        trigger: String,
        plan_preserved: bool,
        previous_context_percent: f64,
        tool_budget_reset: bool,
    },
    /// The turn ended; `status` is one of `completed`, `limits_exceeded`, `interrupted`, `error`.
    TurnEnd {
        status: String,
        text: String,
        /// The turn's usage as `ui.usage` asks to show it (empty with `off`).
        #[serde(default)]
        usage_line: String,
    },
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

/// A question the core needs a human for. The front's handler answers it; with no handler
/// (headless, agent_api) the core answers from the mode instead.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// May this tool call run? `detail` is the actual command or the actual diff; `rules`
    /// are the exact rules an "always" answer (session, project, user) would grant — shown
    /// before the user picks; empty when none can say exactly this (then it is allowed once).
    Permission {
        tool: String,
        summary: String,
        detail: String,
        reason: String,
        #[serde(default)]
        rules: Vec<String>,
    },
    /// The model asks the user a structured question.
    AskUser {
        question: String,
        options: Vec<String>,
    },
    /// The next model call would pass the session's spend ceiling. Answer `"stop"`,
    /// `"remove"`, or `"raise <usd>"` (a new ceiling); anything else stops.
    CostCeiling {
        question: String,
        spent_usd: f64,
        estimate_usd: f64,
        ceiling_usd: f64,
    },
    /// A turn limit was reached (seed 001: the step or tool-call limit): grant more? Answer
    /// with one of `options` ("grant N more" continues the turn with N more; anything else
    /// stops it as before). Only interactive fronts are asked; `-p` stops as always.
    LimitReached {
        question: String,
        /// `tool_loop` (model calls) or `tool_calls`.
        limit: String,
        used: u32,
        max: u32,
        options: Vec<String>,
    },
    /// A preference the user just stated ("use bun, not npm"): keep it in memory? Answer
    /// `"p"` (the project's MEMORY.md), `"g"` (the global one); anything else skips it.
    /// Only interactive fronts are asked.
    RememberCandidate { text: String },
}

/// A handler's answer to a [`Request::Permission`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PermissionAnswer {
    Allow,
    AllowSession,
    AllowProject,
    /// Allowed from now on in every project (saved in `~/.yuyao/permissions.json`).
    AllowAlways,
    Deny,
}

/// The version every crate, the Python package and the wheel share (from `VERSION`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The environment variable that carries the model's API key to the front. It is taken out
/// of every child's environment (tools, hooks, MCP and language servers): the agent's own
/// credential is not theirs to read.
pub const MODEL_KEY_VAR: &str = "D2A_MODEL_API_KEY";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_serializes_with_type_tag() {
        let e = Event::TextDelta { text: "hi".into() };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], "text_delta");
        assert_eq!(v["text"], "hi");
    }
}
