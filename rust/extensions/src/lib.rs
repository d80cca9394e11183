//! yuyao-extensions: extensions of a session that live outside the core, each a `Feature`
//! registered with the core's kernel (`yuyao_core::register_features`, by the program that
//! assembles yuyao). Today: rule files ([`rule_files`]: `.yuyao/rules`, `.cursor/rules`,
//! `.claude/rules`). Removing one is deleting its module and its line in [`FEATURES`].

pub mod rule_files;

/// The features of this crate, in registration order.
pub static FEATURES: &[&yuyao_core::Feature] = &[&rule_files::FEATURE];
