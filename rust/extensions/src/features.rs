//! `/features` (and `yuyao features`): turn a kind of extension on or off, persisted as
//! `features.<kind>` in the configuration. A disabled kind is inert everywhere: the code that
//! runs it asks `Session::feature_enabled` (settings.rs) at every use.

#[allow(unused_imports)]
use crate::session_ext::*;

use yuyao_core::{CoreError, Session};

/// The kinds, with what disabling one does in this build.
const KINDS: &[(&str, &str)] = &[
    ("hooks", "hooks.json hooks do not run"),
    (
        "skills",
        "no skill is listed or loaded (prompt, keywords, /skill, the skill tool, /flow:)",
    ),
    (
        "plugins",
        "no plugin's commands, skills, hooks or MCP servers act",
    ),
    (
        "mcp",
        "MCP servers are stopped and their tools leave the next request",
    ),
];

pub(crate) fn features_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let usage = || {
        CoreError::Usage(
            "usage: /features [list | enable|disable <hooks|skills|plugins|mcp|plugin:<name>>]"
                .into(),
        )
    };
    match args {
        [] => Ok(list(s)),
        [a] if a == "list" || a == "ls" => Ok(list(s)),
        // One plugin as a whole (plugins.rs).
        [action, what, name] if what == "plugin" => {
            let on = match action.as_str() {
                "enable" | "on" => true,
                "disable" | "off" => false,
                _ => return Err(usage()),
            };
            crate::plugins::switch_plugin(s, name, on)
        }
        [action, kind] if kind.starts_with("plugin:") => {
            let on = match action.as_str() {
                "enable" | "on" => true,
                "disable" | "off" => false,
                _ => return Err(usage()),
            };
            crate::plugins::switch_plugin(s, &kind["plugin:".len()..], on)
        }
        [action, kind] => {
            let on = match action.as_str() {
                "enable" | "on" => true,
                "disable" | "off" => false,
                _ => return Err(usage()),
            };
            let kind = kind.to_ascii_lowercase();
            if !KINDS.iter().any(|(k, _)| *k == kind) {
                return Err(CoreError::Usage(format!(
                    "unknown feature '{kind}': use hooks, skills, plugins or mcp"
                )));
            }
            let key = format!("features.{kind}");
            s.config()
                .set(&key, if on { "true" } else { "false" }, None)
                .map_err(|e| CoreError::Failed(e.to_string()))?;
            s.lock().config_seen = yuyao_core::config_snapshot(s.config());
            if kind == "plugins" {
                // Their MCP servers stop or start now.
                s.mcp_sync();
            }
            let when = match yuyao_store::config::applies(&key) {
                Some(yuyao_store::config::Applies::NotInBuild(what)) => {
                    format!("{what} not in this build: no effect yet")
                }
                _ => "applies at once".to_string(),
            };
            Ok(format!(
                "{kind}: {} (saved as {key} = {on}; {when})",
                if on { "enabled" } else { "disabled" }
            ))
        }
        _ => Err(usage()),
    }
}

fn list(s: &Session) -> String {
    let kinds = KINDS
        .iter()
        .map(|(k, off)| {
            if s.feature_enabled(k) {
                format!("{k:<8} enabled")
            } else {
                format!("{k:<8} disabled ({off})")
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let plugins = s.plugin_lines();
    if plugins.is_empty() {
        return kinds;
    }
    format!(
        "{kinds}\nplugins (/features disable plugin:<name>):\n{}",
        plugins
            .iter()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

/// The slash commands of this feature (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "features",
    commands: &[yuyao_core::cmd!(
        "features",
        [],
        "[list | enable|disable <hooks|skills|plugins|mcp|plugin:<name>>]",
        "turn a kind of extension, or one plugin, on or off (persisted)",
        Some(crate::features::features_cmd)
    )],
    ..yuyao_core::Feature::NONE
};
