//! yuyao-parallel — parallel work: sub-agents (the `task` tool, custom agents, `/fork`,
//! `/goal` and `/loop`, `/batch`, `/workflow`, the orchestrator's team) and background
//! sessions (`--bg`, `yuyao agents`, `/background`, `/tasks`, the user's `!` shell). Features
//! registered with the core's kernel (`yuyao_core::Feature`); removing them is deleting this
//! crate and its registration lines. The tree of agents' shared ledger (spend and steps of a
//! session and its sub-agents) is the kernel's (`yuyao_core::tree`): every model call of any
//! of them is checked against it.

pub mod background;
pub mod cmd_background;
mod front_calls;
pub mod subagents;

/// The session methods the modules add (a crate outside the core extends `Session` through
/// traits); every module imports them all.
#[allow(unused_imports)]
pub(crate) mod session_ext {
    pub(crate) use crate::cmd_background::CmdBackgroundExt;
    pub(crate) use crate::subagents::KillSubagents;
    pub(crate) use crate::subagents::SubagentFamily;
    pub(crate) use crate::subagents::batch::BatchExt;
    pub(crate) use crate::subagents::batch::UnitHooks;
    pub(crate) use crate::subagents::defs::DefsExt;
    pub(crate) use crate::subagents::fork::ForkExt;
    pub(crate) use crate::subagents::goal::GoalExt;
    pub(crate) use crate::subagents::isolated::IsolatedExt;
    pub(crate) use crate::subagents::run::RunExt;
    pub(crate) use crate::subagents::task::TaskExt;
    pub(crate) use crate::subagents::workflow::WorkflowExt;
}

/// The features of this crate, in registration order.
pub static FEATURES: &[&yuyao_core::Feature] = &[
    &subagents::FEATURE,
    &subagents::team::FEATURE,
    &background::FEATURE,
    &cmd_background::FEATURE,
];
