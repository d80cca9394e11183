//! Every tool the model can call, as one registered spec (DESIGN §5): its name, what its
//! call may touch, whether its result is evidence of work, and what runs it. `tool_call/mod.rs`
//! sends every call — built-in, core or MCP — down the same stages in the same order; a
//! stage a tool does not need is a no-op decided by its effect, never a branch that skips
//! the rest.

use crate::session::Session;
use tokio_util::sync::CancellationToken;
use yuyao_tools::ToolOutput;

/// What a call may touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The session's own state (the task list, the declared scope, memory notes, a
    /// question to the user, loading a skill or a deferred schema).
    SessionState,
    /// Reads the workspace.
    Reads,
    /// Writes files of the workspace.
    Writes,
    /// Runs programs.
    Runs,
    /// Reaches the network.
    Network,
    /// Whatever an MCP server does (read-only when the server says so).
    Server,
}

/// A core tool's body, given its canonical name and the call: `(output, may have changed
/// the repository)`.
pub type CoreRun =
    fn(&Session, &str, &yuyao_protocol::ToolCall, &CancellationToken) -> (ToolOutput, bool);

/// What runs a call once it is admitted.
#[derive(Clone, Copy)]
pub enum Runner {
    /// A tool of `yuyao_tools`, with typed arguments (`ToolArgs`).
    Builtin,
    /// A tool the core implements over the session.
    Core(CoreRun),
    /// Sub-agents: their calls run beside the batch (`subagents::run_task_calls`), each
    /// sub-agent's own calls through this pipeline in its session.
    Delegated,
    /// A tool of an MCP server.
    Mcp,
}

#[derive(Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    pub effect: Effect,
    /// A successful call is evidence of work on the workspace (a question, a plan entry or
    /// a loaded skill is not).
    pub evidence: bool,
    pub runner: Runner,
}

const fn builtin(name: &'static str, effect: Effect) -> Spec {
    Spec {
        name,
        effect,
        evidence: true,
        runner: Runner::Builtin,
    }
}

pub const fn core(name: &'static str, evidence: bool, run: CoreRun) -> Spec {
    Spec {
        name,
        effect: Effect::SessionState,
        evidence,
        runner: Runner::Core(run),
    }
}

/// The kernel's tools: the built-ins and the deferred-schema search.
/// Features register theirs (`feature.rs`); MCP servers' are specs made per call from the
/// server's list.
pub(crate) const SPECS: &[Spec] = &[
    builtin("read", Effect::Reads),
    builtin("grep", Effect::Reads),
    builtin("glob", Effect::Reads),
    builtin("read-media", Effect::Reads),
    builtin("write", Effect::Writes),
    builtin("edit", Effect::Writes),
    builtin("multi-edit", Effect::Writes),
    builtin("apply-patch", Effect::Writes),
    builtin("notebook-edit", Effect::Writes),
    builtin("bash", Effect::Runs),
    builtin("monitor", Effect::Runs),
    builtin("bg-list", Effect::Reads),
    builtin("bg-output", Effect::Reads),
    builtin("bg-stop", Effect::Runs),
    builtin("web-fetch", Effect::Network),
    builtin("web-search", Effect::Network),
    builtin("browser", Effect::Network),
    core(crate::tool_defer::NAME, false, |s, _, call, _| {
        (one(crate::tool_defer::run_tool(s, call)), false)
    }),
];

/// A handler's answer for the name it was registered under (`None` would be a registry
/// that names a tool its handler does not know: said, never silently passed over).
pub fn one(out: Option<ToolOutput>) -> ToolOutput {
    out.unwrap_or_else(|| ToolOutput::err("this tool's handler did not recognise its call"))
}

/// The spec of a canonical tool name.
pub(crate) fn spec(name: &str) -> Option<&'static Spec> {
    SPECS
        .iter()
        .find(|s| s.name == name)
        .or_else(|| crate::feature::tool_spec(name))
}

/// Whether `name` (canonical) is a tool that writes files: its pre-images are kept, its
/// success is an edit (the registry's effect, the one list of them).
pub fn writes_files(name: &str) -> bool {
    spec(name).is_some_and(|s| s.effect == Effect::Writes)
}

/// An MCP server's tool as a spec.
pub(crate) const MCP: Spec = Spec {
    name: "mcp",
    effect: Effect::Server,
    evidence: true,
    runner: Runner::Mcp,
};

/// Whether a successful call of `name` (as the model spelled it) is evidence of work.
pub(crate) fn is_evidence(name: &str) -> bool {
    match yuyao_protocol::canonical_tool_name(name) {
        Some(n) => spec(n).is_none_or(|s| s.evidence),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_offered_tool_name_has_one_spec() {
        let features = crate::feature::all().filter_map(|f| f.tools);
        let all: Vec<&Spec> = SPECS
            .iter()
            .chain(features.flat_map(|t| t.specs.iter()))
            .collect();
        let mut names: Vec<&str> = all.iter().map(|s| s.name).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "a tool is registered twice");
        // Every built-in tool of the tools crate is registered, with its canonical name.
        for name in yuyao_tools::Registry::default().names() {
            let s = spec(name).unwrap_or_else(|| panic!("{name} has no spec"));
            assert!(matches!(s.runner, Runner::Builtin), "{name}");
        }
        for name in all.iter().map(|s| s.name) {
            assert_eq!(
                yuyao_protocol::canonical_tool_name(name),
                Some(name),
                "{name} is not its own canonical spelling"
            );
        }
    }
}
