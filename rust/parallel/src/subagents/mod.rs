//! Sub-agents (seed 002 §1 `task`, DESIGN §8): another [`Session`] of the same core — same request builder, policy
//! and sandbox (DESIGN §1) — opened with a fresh context and its own options (read-only by
//! default, a declared tool set), run on its own thread, its events forwarded nested under the
//! parent's call.
//!
//! - `task.rs`: the `task` tool; a reply's task calls run concurrently (`agents.max_parallel`).
//! - `defs.rs`: agent definitions (`agents/<name>.md`, built-ins) and `/agents`.
//! - `fork.rs`: `/fork`, background sub-agents, their reports, `/tasks` rows, Ctrl+X Ctrl+K.
//! - `goal.rs`: `/goal` and `/loop` (turns judged by one model call).
//! - `team.rs`: `--role orchestrator`: the team's task list with owners, mailbox, run + merge.
//! - `workflow.rs`: `/workflow <name>` (YAML stages, cross-checks) and `/workflows`.
//! - `batch.rs`: `/batch` (units proposed by the model, each in its own worktree, merged).
//!
//! The tree's shared spend and steps are the kernel's (`tree.rs`); this feature opens the
//! sub-agents, and keeps the children each session started and their reports ([`Family`]).

#[allow(unused_imports)]
use crate::session_ext::*;

pub(crate) mod batch;
pub(crate) mod defs;
pub(crate) mod fork;
pub(crate) mod goal;
pub(crate) mod isolated;
pub(crate) mod run;
pub(crate) mod task;
pub(crate) mod team;
pub(crate) mod workflow;

pub(crate) use defs::agents_cmd;
pub(crate) use fork::fork_cmd;
pub(crate) use goal::{goal_cmd, loop_cmd};

use std::sync::{Arc, Mutex};
use yuyao_core::Session;

/// The sub-agents and forks a session started, and finished forks' reports.
#[derive(Default)]
pub(crate) struct Family {
    /// Sub-agents and forks this session started (for `/tasks`, stop, reports).
    pub(crate) children: Arc<Mutex<Vec<Arc<fork::Running>>>>,
    /// Finished forks' reports, joined to the history before the next model call.
    pub(crate) reports: Arc<Mutex<Vec<fork::Report>>>,
}

pub(crate) trait SubagentFamily {
    fn family(&self) -> &Family;
}

impl SubagentFamily for Session {
    fn family(&self) -> &Family {
        self.part()
    }
}

/// Sub-agents nest at most this deep: a depth-2 sub-agent is not offered the `task` tool.
pub(crate) const MAX_DEPTH: u32 = 2;

pub(crate) trait KillSubagents {
    fn kill_subagents(&self) -> String;
}

impl KillSubagents for Session {
    /// Ctrl+X Ctrl+K: stops every background sub-agent (forks) of this session.
    fn kill_subagents(&self) -> String {
        fork::stop_all(self)
    }
}

static TOOLS: yuyao_core::FeatureTools = yuyao_core::FeatureTools {
    specs: &[yuyao_core::registry::Spec {
        name: "task",
        effect: yuyao_core::registry::Effect::Runs,
        evidence: true,
        runner: yuyao_core::registry::Runner::Delegated,
    }],
    summaries: &[],
    names: |_| vec!["task"],
    schemas: |s, ok| {
        if ok("task") {
            vec![s.task_schema()]
        } else {
            Vec::new()
        }
    },
    beside: Some(|s, calls, intent, token| s.run_task_calls(calls, intent, token)),
};

/// What this feature adds to a session (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "subagents",
    state: Some(|_| Box::<Family>::default()),
    // `@explore` naming an agent hands that work to it (the task tool).
    submitted: Some(defs::mention_note),
    // A `/batch` unit writes only the files it claimed.
    write_gate: Some(batch::claim_gate),
    // Work of forks that finished is applied before the next call …
    step_begin: Some(|s| s.apply_fork_work()),
    // … and their reports and a teammate's mail join the history.
    step_inject: Some(|s, st| {
        s.inject_fork_reports(st);
        team::deliver_mail(s, st);
    }),
    // Background sub-agents end with the session.
    close: Some(|s| {
        s.kill_subagents();
    }),
    commands: &[
        yuyao_core::cmd!(
            "agents",
            [],
            "[list | show|create|edit|delete <name> [--tools a,b --mode m …]]",
            "sub-agent definitions (agents/<name>.md)",
            Some(crate::subagents::agents_cmd)
        ),
        yuyao_core::cmd!(
            "goal",
            [],
            "<condition>",
            "keep working until a condition holds",
            Some(crate::subagents::goal_cmd)
        ),
        yuyao_core::cmd!(
            "loop",
            [],
            "<prompt> [--interval s] [--max n] [--until cond]",
            "repeat a prompt",
            Some(crate::subagents::loop_cmd)
        ),
        yuyao_core::cmd!(
            "fork",
            [],
            "[prompt]",
            "a background sub-agent that starts from this conversation",
            Some(crate::subagents::fork_cmd)
        ),
        yuyao_core::cmd!(
            "batch",
            [],
            "<instruction>",
            "split a change across parallel sub-agents",
            Some(crate::subagents::batch::batch_cmd)
        ),
        yuyao_core::cmd!(
            "workflows",
            ["workflow"],
            "[name]",
            "scripted multi-agent workflows",
            Some(crate::subagents::workflow::workflows_cmd)
        ),
    ],
    tools: Some(&TOOLS),
    front_calls: crate::front_calls::SUBAGENTS,
    ..yuyao_core::Feature::NONE
};
