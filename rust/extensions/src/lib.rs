//! yuyao-extensions: every kind of extension a session loads, each a `Feature` registered
//! with the core's kernel (`yuyao_core::register_features`, by the program that assembles
//! yuyao): skills ([`skills`]), plugins ([`plugins`]), MCP servers ([`mcp_servers`]), the
//! on/off switches ([`features`]), flows ([`flow`]), custom commands ([`custom_commands`]),
//! rule files ([`rule_files`]: `.yuyao/rules`, `.cursor/rules`, `.claude/rules`) and
//! lifecycle hooks ([`hooks`]: `hooks.json` and Claude Code's settings hooks, run confined
//! through the core's one spawn path). Whether a project's extension may act at all is the
//! kernel's extension trust (DESIGN §8): a feature asks it, never decides it. Removing a kind
//! is deleting its module and its line in [`FEATURES`].

pub mod custom_commands;
pub mod features;
pub mod flow;
pub mod hooks;
pub mod mcp_servers;
pub mod plugins;
pub mod rule_files;
pub mod skills;

/// The session methods the extension modules add (a crate outside the core extends
/// `Session` through traits); those modules import them all.
#[allow(unused_imports)]
pub(crate) mod session_ext {
    pub(crate) use crate::custom_commands::CustomCommandsExt;
    pub(crate) use crate::flow::FlowExt;
    pub(crate) use crate::mcp_servers::McpState;
    pub(crate) use crate::mcp_servers::McpSync;
    pub(crate) use crate::plugins::PluginList;
    pub(crate) use crate::plugins::PluginServerState;
    pub(crate) use crate::skills::FlowTable;
    pub(crate) use crate::skills::SkillState;
    pub(crate) use crate::skills::SkillUse;
}

/// The features of this crate, in registration order: the rule files' always-rules join
/// the first request before the SessionStart hooks' context, and the SessionEnd hooks run
/// after every other feature closed.
pub static FEATURES: &[&yuyao_core::Feature] = &[
    &skills::FEATURE,
    &plugins::FEATURE,
    &mcp_servers::FEATURE,
    &features::FEATURE,
    &flow::FEATURE,
    &custom_commands::FEATURE,
    &rule_files::FEATURE,
    &hooks::FEATURE,
];
