//! The confinement of the processes yuyao starts from extension configuration (DESIGN §8: one
//! spawn path): hooks, MCP stdio servers, language servers and `/run` apps start through
//! `sandbox::spawn` like the agent's own commands, with a profile per kind of process.
//!
//! A project's extension gets the agent's own confinement: the session's current sandbox
//! level, network switch and writable folders (a `/run` app the project names: the network is
//! on, a server must listen). A user-level one (`~/.yuyao/…`) gets the same
//! unless the user's own configuration file says otherwise: `extension_sandbox.<kind>` (a
//! sandbox level) and `extension_sandbox.<kind>_network` (true: network on), read from the
//! user layer only, so no project file can widen what a process may do. (Not `sandbox.<kind>`:
//! `sandbox` is already a string key, and TOML cannot make it a table as well.)

use crate::session::Session;
use std::path::PathBuf;
use yuyao_policy::sandbox::Confinement;
use yuyao_protocol::{NetworkAccess, SandboxLevel};

/// What yuyao starts besides the agent's own commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessKind {
    Hook,
    McpServer,
    LanguageServer,
    App,
}

impl ProcessKind {
    pub(crate) const ALL: [ProcessKind; 4] = [
        ProcessKind::Hook,
        ProcessKind::McpServer,
        ProcessKind::LanguageServer,
        ProcessKind::App,
    ];

    /// The `<kind>` of the `extension_sandbox.<kind>` keys.
    pub(crate) fn key(self) -> &'static str {
        match self {
            ProcessKind::Hook => "hooks",
            ProcessKind::McpServer => "mcp",
            ProcessKind::LanguageServer => "lsp",
            ProcessKind::App => "apps",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            ProcessKind::Hook => "hooks",
            ProcessKind::McpServer => "MCP stdio servers",
            ProcessKind::LanguageServer => "language servers",
            ProcessKind::App => "/run apps",
        }
    }
}

/// Where the configuration that names the program comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `~/.yuyao/…`: the user's own file.
    User,
    /// The repository (or anything the agent could have written).
    Project,
}

/// What the user's own configuration widens (or narrows) for a user-level process of `kind`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UserProfile {
    pub level: Option<SandboxLevel>,
    pub network: Option<NetworkAccess>,
}

/// `base` (the agent's confinement) with the user's profile applied. Folders writable under
/// the chosen level are recomputed when the level changes (`writable_at`).
pub(crate) fn apply_profile(
    mut base: Confinement,
    profile: UserProfile,
    writable_at: impl Fn(SandboxLevel) -> Vec<PathBuf>,
) -> Confinement {
    if let Some(level) = profile.level
        && level != base.level
    {
        base.level = level;
        base.writable = writable_at(level);
        if level != SandboxLevel::ReadOnly {
            base.private_tmp = None;
        }
    }
    if let Some(network) = profile.network {
        base.network = network;
    }
    base
}

impl Session {
    /// The user's `extension_sandbox.<kind>*` keys (the user layer only).
    fn user_profile(&self, kind: ProcessKind) -> UserProfile {
        let get = |k: String| self.config.get_in(&k, yuyao_store::Layer::User);
        UserProfile {
            level: get(format!("extension_sandbox.{}", kind.key()))
                .and_then(|v| v.as_str().and_then(|s| s.parse().ok())),
            network: get(format!("extension_sandbox.{}_network", kind.key()))
                .and_then(|v| v.as_bool())
                .map(|on| {
                    if on {
                        NetworkAccess::On
                    } else {
                        NetworkAccess::Off
                    }
                }),
        }
    }

    /// How a process of `kind` from `origin` is confined (read at every start).
    pub fn process_confinement(&self, kind: ProcessKind, origin: Origin) -> Confinement {
        let mut base = self.ctx.confinement();
        if kind == ProcessKind::App {
            // An app is a server: it must listen, which `--network off` forbids outright (the
            // seccomp filter refuses every AF_INET socket). Its files stay confined as the
            // agent's; before this profile it ran with the user's full rights.
            base.network = NetworkAccess::On;
        }
        if origin == Origin::Project {
            return base;
        }
        let ctx = &self.ctx;
        apply_profile(base, self.user_profile(kind), |level| {
            let mut w = match level {
                SandboxLevel::ReadOnly => ctx
                    .roots()
                    .iter()
                    .flat_map(|r| yuyao_tools::build_outputs(r))
                    .collect(),
                _ => {
                    let mut w = ctx.roots();
                    w.push(std::env::temp_dir());
                    w
                }
            };
            w.extend(ctx.scratch_dir().ok());
            w
        })
    }

    /// Caches of a confined process go to the session's scratch folder (writable at every
    /// level): `~/.cache` is read-only in the sandbox (jedi, under pylsp, failed every
    /// definition on it).
    pub fn cache_env(
        &self,
        c: &Confinement,
    ) -> Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> {
        if c.level == SandboxLevel::FullAccess {
            return Vec::new();
        }
        let Ok(scratch) = self.ctx.scratch_dir() else {
            return Vec::new();
        };
        let cache = scratch.join("cache");
        if std::fs::create_dir_all(&cache).is_err() {
            return Vec::new();
        }
        vec![("XDG_CACHE_HOME".into(), Some(cache.into_os_string()))]
    }

    /// `sandbox list`'s lines: each kind of process and its effective profile.
    pub(crate) fn process_profiles(&self) -> String {
        let mut out = String::from(
            "process kinds (the agent's commands and these start through the same sandbox; extension_sandbox.<kind> and extension_sandbox.<kind>_network in ~/.yuyao/config.toml change user-level ones):\n",
        );
        let agent = self.ctx.confinement();
        out.push_str(&format!("  {:<18} {}\n", "agent commands", line(&agent)));
        for kind in ProcessKind::ALL {
            for origin in [Origin::Project, Origin::User] {
                let c = self.process_confinement(kind, origin);
                let who = match origin {
                    Origin::Project => "project",
                    Origin::User => "user",
                };
                out.push_str(&format!("  {:<18} {who:<8} {}\n", kind.label(), line(&c)));
            }
        }
        out
    }
}

/// Level, network and writable folders of `c`, on one line.
fn line(c: &Confinement) -> String {
    let writable = if c.level == SandboxLevel::FullAccess {
        "everything".to_string()
    } else if c.writable.is_empty() {
        "(nothing)".to_string()
    } else {
        c.writable
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let confined = if c.is_restricted() {
        ""
    } else {
        " (unconfined but for the model key and death with yuyao)"
    };
    format!(
        "sandbox {}, network {}, writable: {writable}{confined}",
        c.level, c.network
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Confinement {
        Confinement {
            level: SandboxLevel::ReadOnly,
            network: NetworkAccess::Off,
            writable: vec![PathBuf::from("/p/target")],
            private_tmp: Some(PathBuf::from("/s/tmp")),
            ..Default::default()
        }
    }

    fn writable_at(level: SandboxLevel) -> Vec<PathBuf> {
        match level {
            SandboxLevel::ReadOnly => vec![PathBuf::from("/p/target")],
            _ => vec![PathBuf::from("/p"), PathBuf::from("/tmp")],
        }
    }

    #[test]
    fn no_profile_keeps_the_agents_confinement() {
        assert_eq!(
            apply_profile(base(), UserProfile::default(), writable_at),
            base()
        );
    }

    #[test]
    fn a_user_profile_sets_level_network_and_the_folders_of_that_level() {
        let c = apply_profile(
            base(),
            UserProfile {
                level: Some(SandboxLevel::WorkspaceWrite),
                network: Some(NetworkAccess::On),
            },
            writable_at,
        );
        assert_eq!(c.level, SandboxLevel::WorkspaceWrite);
        assert_eq!(c.network, NetworkAccess::On);
        assert_eq!(c.writable, writable_at(SandboxLevel::WorkspaceWrite));
        assert_eq!(c.private_tmp, None);
    }
}
