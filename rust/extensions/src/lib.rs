//! yuyao-extensions: extensions of a session that live outside the core, each a `Feature`
//! registered with the core's kernel (`yuyao_core::register_features`, by the program that
//! assembles yuyao): rule files ([`rule_files`]: `.yuyao/rules`, `.cursor/rules`,
//! `.claude/rules`) and lifecycle hooks ([`hooks`]: `hooks.json` and Claude Code's settings
//! hooks, run confined through the core's one spawn path). Removing one is deleting its
//! module and its line in [`FEATURES`].

pub mod hooks;
pub mod rule_files;

/// The features of this crate, in registration order: the rule files' always-rules join
/// the first request before the SessionStart hooks' context, and the SessionEnd hooks run
/// after every other feature closed.
pub static FEATURES: &[&yuyao_core::Feature] = &[&rule_files::FEATURE, &hooks::FEATURE];
