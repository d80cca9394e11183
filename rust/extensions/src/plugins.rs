//! Plugins: `plugins/<name>/plugin.json` under `<project>/.yuyao/`, `~/.yuyao/` and the
//! project root. A manifest (`name`, `version`, `description`) declares a group of extensions
//! inside the plugin's folder — `commands/`, `skills/`, `agents/` (folders, by default those
//! names), `hooks` (a file, default `hooks.json`, or an inline object) and `mcpServers` (an
//! inline object, or a file holding one, default `.mcp.json`) — enabled or disabled as a
//! whole.
//!
//! Who may act: `features.plugins = false` → no plugin; a plugin the user disabled
//! (`/features disable plugin:<name>`, kept in `~/.yuyao/plugins-disabled.json`, out of the
//! repository's reach) → none of its extensions; a project's plugins are project extensions
//! (`Session::project_extensions_allowed`: never in run_agent.sh's repository, in the TUI
//! only after trust). Every check is made at use, so a switch applies at once. Hooks and MCP
//! servers run the user's programs: they are read once, when the session opens (a plugin
//! written into the repository during a session runs nothing before the next one).

#[allow(unused_imports)]
use crate::session_ext::*;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use yuyao_core::{CoreError, Session};
use yuyao_extension_files::hooks::{self, Hook, HookSource};
use yuyao_store::McpServer;

#[derive(Debug, Clone)]
pub struct Plugin {
    pub name: String,
    pub version: String,
    pub description: String,
    /// The plugin's folder (everything it declares is inside it).
    pub dir: PathBuf,
    pub manifest_file: PathBuf,
    pub source: HookSource,
    pub manifest: Value,
    /// The SHA-256 of the manifest bytes parsed into `manifest`: approval is checked against
    /// what was parsed, not a later read of the file (extension_trust.rs).
    pub manifest_digest: String,
}

/// The folders plugins live in, in precedence order (the first plugin of a name wins: the
/// user's, so a repository cannot replace a plugin the user installed).
pub fn roots(home: &Path, project: &Path) -> Vec<(PathBuf, HookSource)> {
    vec![
        (home.join("plugins"), HookSource::User),
        (project.join(".yuyao").join("plugins"), HookSource::Project),
        (project.join("plugins"), HookSource::Project),
    ]
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !n.starts_with('.')
}

/// Every plugin with a readable manifest, and a warning (file and line) for each that is not.
pub fn load(home: &Path, project: &Path) -> (Vec<Plugin>, Vec<String>) {
    let mut out: Vec<Plugin> = Vec::new();
    let mut warnings = Vec::new();
    for (root, source) in roots(home, project) {
        for dir in yuyao_extension_files::frontmatter::sorted_entries(&root)
            .into_iter()
            .filter(|p| p.is_dir())
        {
            let file = [
                dir.join("plugin.json"),
                dir.join(".claude-plugin").join("plugin.json"),
            ]
            .into_iter()
            .find(|f| f.is_file());
            let Some(file) = file else { continue };
            let text = match std::fs::read_to_string(&file) {
                Ok(t) => t,
                Err(e) => {
                    warnings.push(format!("{}: {e}; the plugin is skipped", file.display()));
                    continue;
                }
            };
            let manifest: Value = match serde_json::from_str(&text) {
                Ok(v @ Value::Object(_)) => v,
                Ok(_) => {
                    warnings.push(format!(
                        "{}: line 1: the manifest is not a JSON object; the plugin is skipped",
                        file.display()
                    ));
                    continue;
                }
                Err(e) => {
                    warnings.push(format!(
                        "{}: line {}: invalid JSON ({e}); the plugin is skipped",
                        file.display(),
                        e.line()
                    ));
                    continue;
                }
            };
            let s = |k: &str| {
                manifest
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let name = match s("name") {
                n if n.is_empty() => dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                n => n,
            };
            if !valid_name(&name) {
                warnings.push(format!(
                    "{}: the plugin name '{name}' is not letters, digits, '-', '_' or '.'; the plugin is skipped",
                    file.display()
                ));
                continue;
            }
            if out.iter().any(|p| p.name == name) {
                continue;
            }
            out.push(Plugin {
                name,
                version: s("version"),
                description: s("description"),
                dir,
                manifest_file: file,
                source,
                manifest_digest: yuyao_store::trust::digest_bytes(text.as_bytes()),
                manifest,
            });
        }
    }
    (out, warnings)
}

/// `rel` inside `dir`: a manifest declares only what its own folder holds.
fn inside(dir: &Path, rel: &str) -> Option<PathBuf> {
    let p = Path::new(rel.trim());
    if rel.trim().is_empty()
        || p.components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    Some(dir.join(p))
}

impl Plugin {
    /// `${CLAUDE_PLUGIN_ROOT}` / `${YUYAO_PLUGIN_ROOT}` (Claude Code plugins' spelling) in a
    /// hook or server command → this plugin's folder, in JSON text.
    fn with_root_in_json(&self, text: &str) -> String {
        let dir = serde_json::to_string(&self.dir.display().to_string()).unwrap_or_default();
        let dir = dir.trim_matches('"');
        text.replace("${CLAUDE_PLUGIN_ROOT}", dir)
            .replace("${YUYAO_PLUGIN_ROOT}", dir)
    }

    /// The folder of `kind` (`commands`, `skills`, `agents`): the manifest's path (a string,
    /// or the first of a list) or the folder of that name.
    pub fn dir_of(&self, kind: &str) -> Option<PathBuf> {
        let declared = match self.manifest.get(kind) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(a)) => a.iter().find_map(Value::as_str).map(str::to_string),
            _ => None,
        };
        let dir = match declared {
            Some(rel) => inside(&self.dir, &rel)?,
            None => self.dir.join(kind),
        };
        dir.is_dir().then_some(dir)
    }

    /// The plugin's hooks (`hooks`: a file inside the plugin or an inline object; default
    /// `hooks.json` or `hooks/hooks.json`), with warnings.
    #[cfg(test)]
    pub fn hooks(&self) -> (Vec<Hook>, Vec<String>) {
        self.hooks_if(&|_, _| true)
    }

    /// [`Plugin::hooks`], keeping only what `accept(file, digest of the bytes parsed)` admits
    /// (inline hooks are the manifest's, judged by the manifest's digest).
    pub fn hooks_if(&self, accept: &dyn Fn(&Path, &str) -> bool) -> (Vec<Hook>, Vec<String>) {
        let (text, path) = match self.manifest.get("hooks") {
            Some(v @ Value::Object(_)) => {
                let text = if v.get("hooks").is_some() {
                    v.to_string()
                } else {
                    serde_json::json!({ "hooks": v }).to_string()
                };
                (text, self.manifest_file.clone())
            }
            Some(Value::String(rel)) => match inside(&self.dir, rel) {
                Some(p) => match std::fs::read_to_string(&p) {
                    Ok(t) => (t, p),
                    Err(e) => {
                        return (Vec::new(), vec![format!("{}: {e}", p.display())]);
                    }
                },
                None => {
                    return (
                        Vec::new(),
                        vec![format!(
                            "{}: hooks '{rel}' is outside the plugin's folder; skipped",
                            self.manifest_file.display()
                        )],
                    );
                }
            },
            _ => {
                let found = [
                    self.dir.join("hooks.json"),
                    self.dir.join("hooks").join("hooks.json"),
                ]
                .into_iter()
                .find_map(|p| std::fs::read_to_string(&p).ok().map(|t| (t, p)));
                match found {
                    Some(x) => x,
                    None => return (Vec::new(), Vec::new()),
                }
            }
        };
        let digest = if path == self.manifest_file {
            self.manifest_digest.clone()
        } else {
            yuyao_store::trust::digest_bytes(text.as_bytes())
        };
        if !accept(&path, &digest) {
            return (Vec::new(), Vec::new());
        }
        let text = self.with_root_in_json(&text);
        match hooks::parse_file(&text, &path, self.source) {
            Ok(x) => x,
            Err(e) => (
                Vec::new(),
                vec![format!("{}: {e}; its hooks are skipped", path.display())],
            ),
        }
    }

    /// The plugin's MCP servers (`mcpServers`: inline, or a file inside the plugin; default
    /// `.mcp.json`), named `<plugin>-<server>`.
    pub fn mcp_servers(&self) -> (BTreeMap<String, McpServer>, Vec<String>) {
        let mut warnings = Vec::new();
        let value = match self.manifest.get("mcpServers") {
            Some(v @ Value::Object(_)) => Some(v.clone()),
            Some(Value::String(rel)) => {
                inside(&self.dir, rel).and_then(|p| read_servers(&p, &mut warnings))
            }
            _ => read_servers(&self.dir.join(".mcp.json"), &mut warnings),
        };
        let mut out = BTreeMap::new();
        let Some(Value::Object(map)) = value else {
            return (out, warnings);
        };
        let map: serde_json::Map<String, Value> =
            serde_json::from_str(&self.with_root_in_json(&Value::Object(map).to_string()))
                .unwrap_or_default();
        for (server, v) in map {
            let name = format!("{}-{server}", self.name);
            match serde_json::from_value::<McpServer>(v) {
                Ok(srv) if yuyao_store::mcp::valid_server_name(&name) => {
                    out.insert(name, srv);
                }
                Ok(_) => warnings.push(format!(
                    "{}: MCP server '{server}' has a name that cannot be used; skipped",
                    self.manifest_file.display()
                )),
                Err(e) => warnings.push(format!(
                    "{}: MCP server '{server}': {e}; skipped",
                    self.manifest_file.display()
                )),
            }
        }
        (out, warnings)
    }
}

/// `{"mcpServers": {...}}` (or the bare map) from a file.
fn read_servers(path: &Path, warnings: &mut Vec<String>) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => Some(v.get("mcpServers").cloned().unwrap_or(v)),
        Err(e) => {
            warnings.push(format!(
                "{}: line {}: invalid JSON ({e}); its servers are skipped",
                path.display(),
                e.line()
            ));
            None
        }
    }
}

/// The files of the project's plugins that make programs run (manifest, hook files, MCP
/// files): `extension_trust.rs` holds one whose content is not the approved one.
pub fn project_program_files(home: &Path, project: &Path) -> Vec<PathBuf> {
    let (list, _) = load(home, project);
    let mut out: Vec<PathBuf> = list
        .iter()
        .filter(|p| p.source == HookSource::Project)
        .flat_map(Plugin::program_files)
        .collect();
    out.sort();
    out.dedup();
    out
}

impl Plugin {
    /// This plugin's files that make programs run: its manifest, the default hook and MCP
    /// files, and the ones its manifest names.
    pub fn program_files(&self) -> Vec<PathBuf> {
        let mut out = vec![self.manifest_file.clone()];
        for f in ["hooks.json", "hooks/hooks.json", ".mcp.json"] {
            out.push(self.dir.join(f));
        }
        for key in ["hooks", "mcpServers"] {
            if let Some(Value::String(rel)) = self.manifest.get(key)
                && let Some(f) = inside(&self.dir, rel)
            {
                out.push(f);
            }
        }
        out
    }
}

/// The user's `/features disable plugin:<name>` choices.
fn disabled_file(home: &Path) -> PathBuf {
    home.join("plugins-disabled.json")
}

pub(crate) fn disabled(home: &Path) -> Vec<String> {
    std::fs::read_to_string(disabled_file(home))
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
        .unwrap_or_default()
}

fn save_disabled(home: &Path, name: &str, on: bool) -> std::io::Result<()> {
    let mut names = disabled(home);
    names.retain(|x| x != name);
    if !on {
        names.push(name.to_string());
    }
    yuyao_store::write_atomic(
        &disabled_file(home),
        serde_json::to_string_pretty(&names)
            .unwrap_or_default()
            .as_bytes(),
    )
}

/// The plugins' MCP servers as the session read them at open (see the module comment).
#[derive(Default)]
pub(crate) struct PluginServers(pub BTreeMap<String, (String, HookSource, McpServer)>);

pub(crate) trait PluginServerState {
    fn plugin_servers(&self) -> &std::sync::Mutex<PluginServers>;
}

impl PluginServerState for Session {
    fn plugin_servers(&self) -> &std::sync::Mutex<PluginServers> {
        self.part()
    }
}

pub(crate) trait PluginList {
    fn all_plugins(&self) -> Vec<Plugin>;
    fn plugin_off(&self, p: &Plugin) -> Option<String>;
    fn active_plugins(&self) -> Vec<Plugin>;
    fn plugin_dirs(&self, kind: &str) -> Vec<(PathBuf, HookSource, String)>;
    fn plugin_file_active(&self, file: &Path) -> bool;
    fn plugin_hooks(&self) -> Vec<Hook>;
    fn read_plugin_servers(&self);
    fn plugin_mcp_servers(&self) -> BTreeMap<String, McpServer>;
    fn project_plugin_servers(&self) -> Vec<String>;
    fn plugin_lines(&self) -> Vec<String>;
}

impl PluginList for Session {
    /// Every plugin on disk (whatever its state), warnings said once.
    fn all_plugins(&self) -> Vec<Plugin> {
        let (list, warnings) = load(&self.paths().home, &self.paths().project);
        self.warn_once(warnings.into_iter().map(|w| format!("plugins: {w}")));
        list
    }

    /// Why `p` does not act now, or `None` when it does.
    fn plugin_off(&self, p: &Plugin) -> Option<String> {
        if !self.feature_enabled("plugins") {
            return Some("off (features.plugins = false)".into());
        }
        if disabled(&self.paths().home).contains(&p.name) {
            return Some("disabled".into());
        }
        if p.source == HookSource::Project && !self.project_extensions_allowed() {
            return Some("project plugin: not active until the project is trusted".into());
        }
        if p.source == HookSource::Project {
            // Its manifest (as parsed) and the hook and MCP files it names act only as
            // approved (§8).
            if yuyao_store::trust::approved_digest(self.paths(), &p.manifest_file).as_deref()
                != Some(p.manifest_digest.as_str())
            {
                return self.project_file_held(&p.manifest_file).or_else(|| {
                    Some(format!(
                        "{} changed while it was read; not loaded",
                        p.manifest_file.display()
                    ))
                });
            }
            return p
                .program_files()
                .into_iter()
                .filter(|f| f.exists())
                .find_map(|f| self.project_file_held(&f));
        }
        None
    }

    /// The plugins whose extensions act now.
    fn active_plugins(&self) -> Vec<Plugin> {
        self.all_plugins()
            .into_iter()
            .filter(|p| self.plugin_off(p).is_none())
            .collect()
    }

    /// The folders of `kind` (`commands`, `skills`, `agents`) of the active plugins, with the
    /// plugin's source (a project's plugin is a project extension) and name. Custom agents
    /// read `plugin_dirs("agents")`.
    fn plugin_dirs(&self, kind: &str) -> Vec<(PathBuf, HookSource, String)> {
        self.active_plugins()
            .into_iter()
            .filter_map(|p| p.dir_of(kind).map(|d| (d, p.source, p.name.clone())))
            .collect()
    }

    /// A file from a plugin's folder acts only while that plugin does (hooks are filtered
    /// with this at every run, so `features disable plugins` applies at once).
    fn plugin_file_active(&self, file: &Path) -> bool {
        let all = self.all_plugins();
        match all.iter().find(|p| file.starts_with(&p.dir)) {
            None => true,
            Some(p) => self.plugin_off(p).is_none(),
        }
    }

    /// At open: every plugin's hooks (which of them run is decided at each event).
    fn plugin_hooks(&self) -> Vec<Hook> {
        let mut out = Vec::new();
        for p in self.all_plugins() {
            // A project plugin's hooks load only from approved bytes — the very bytes parsed.
            let approved = |f: &Path, digest: &str| {
                p.source != HookSource::Project
                    || !self.project_extensions_allowed()
                    || yuyao_store::trust::approved_digest(self.paths(), f).as_deref()
                        == Some(digest)
            };
            let (h, w) = p.hooks_if(&approved);
            self.warn_once(w.into_iter().map(|w| format!("plugins: {w}")));
            out.extend(h);
        }
        out
    }

    /// At open: every plugin's MCP servers, kept for the session.
    fn read_plugin_servers(&self) {
        let mut all = BTreeMap::new();
        for p in self.all_plugins() {
            // A project plugin whose files are not the approved content starts nothing.
            if p.source == HookSource::Project
                && self.project_extensions_allowed()
                && let Some(why) = self.plugin_off(&p)
            {
                self.warn_once(vec![format!("plugins: {}: {why}", p.name)]);
                continue;
            }
            let (servers, w) = p.mcp_servers();
            self.warn_once(w.into_iter().map(|w| format!("plugins: {w}")));
            // The TUI's trust prompt names what a project plugin's servers would run.
            if p.source == HookSource::Project
                && self.options().project_extensions.is_none()
                && !self.project_extensions_allowed()
            {
                let waiting: Vec<String> = servers
                    .iter()
                    .map(|(name, srv)| {
                        let run = match (&srv.command, &srv.url) {
                            (Some(cmd), _) => cmd
                                .iter()
                                .chain(srv.args.iter())
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(" "),
                            (None, Some(url)) => url.clone(),
                            (None, None) => "nothing yet".into(),
                        };
                        format!("plugin {} MCP server {name} runs `{run}`", p.name)
                    })
                    .collect();
                self.lock().ignored_project_settings.extend(waiting);
            }
            for (name, srv) in servers {
                all.insert(name, (p.name.clone(), p.source, srv));
            }
        }
        *self
            .plugin_servers()
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = PluginServers(all);
    }

    /// The MCP servers of the plugins active now (`mcp_servers.rs` adds them to the
    /// configured ones before every sync).
    fn plugin_mcp_servers(&self) -> BTreeMap<String, McpServer> {
        let servers = self
            .plugin_servers()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone();
        if servers.is_empty() {
            return BTreeMap::new();
        }
        let active: Vec<String> = self.active_plugins().into_iter().map(|p| p.name).collect();
        servers
            .into_iter()
            .filter(|(_, (plugin, _, _))| active.contains(plugin))
            .map(|(name, (_, _, srv))| (name, srv))
            .collect()
    }

    /// Names of the plugin MCP servers a repository's plugin declares (their process gets the
    /// project profile, `process_profile`).
    fn project_plugin_servers(&self) -> Vec<String> {
        let servers = self
            .plugin_servers()
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        servers
            .0
            .iter()
            .filter(|(_, (_, source, _))| *source == HookSource::Project)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The plugins for `/features` and `/skills`: one line each.
    fn plugin_lines(&self) -> Vec<String> {
        self.all_plugins()
            .iter()
            .map(|p| {
                let state = self.plugin_off(p).unwrap_or_else(|| "enabled".into());
                let kinds: Vec<&str> = ["commands", "skills", "agents"]
                    .into_iter()
                    .filter(|k| p.dir_of(k).is_some())
                    .collect();
                format!(
                    "plugin:{}{} [{}] {state}{}{} ({})",
                    p.name,
                    if p.version.is_empty() {
                        String::new()
                    } else {
                        format!(" {}", p.version)
                    },
                    p.source.label(),
                    if p.description.is_empty() {
                        String::new()
                    } else {
                        format!(" — {}", p.description)
                    },
                    if kinds.is_empty() {
                        String::new()
                    } else {
                        format!(" · {}", kinds.join(", "))
                    },
                    p.manifest_file.display()
                )
            })
            .collect()
    }
}

/// `/features enable|disable plugin:<name>` (or `plugin <name>`): one plugin as a whole.
pub(crate) fn switch_plugin(s: &Session, name: &str, on: bool) -> Result<String, CoreError> {
    let all = s.all_plugins();
    if !all.iter().any(|p| p.name == name) {
        let names: Vec<String> = all.iter().map(|p| p.name.clone()).collect();
        return Err(CoreError::Usage(format!(
            "no plugin named '{name}' (plugins: {})",
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        )));
    }
    save_disabled(&s.paths().home, name, on)
        .map_err(|e| CoreError::Failed(format!("cannot save the choice: {e}")))?;
    // Its MCP servers start or stop now; its commands, skills and hooks are checked at use.
    s.mcp_sync();
    Ok(format!(
        "plugin:{name} {} (saved in {}; applies at once)",
        if on { "enabled" } else { "disabled" },
        disabled_file(&s.paths().home).display()
    ))
}

/// What this feature adds to a session (feature.rs): the plugins' MCP servers read at open.
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "plugins",
    state: Some(|_| Box::<std::sync::Mutex<PluginServers>>::default()),
    // Custom agents (and commands and skills) read the active plugins' folders.
    extension_dirs: Some(|s, kind| s.plugin_dirs(kind)),
    // Plugins' MCP servers are read once, at open.
    opened: Some(|s| s.read_plugin_servers()),
    // Plugins' hooks: whether they run is asked at every event.
    hooks: Some(|s| s.plugin_hooks()),
    hook_active: Some(|s, file| s.plugin_file_active(file)),
    hook_files: Some(project_program_files),
    // Manifests and the hook/MCP files they name; a project plugin's commands and agents
    // are the project's too.
    program_files: Some(|home, project| {
        let mut out = project_program_files(home, project);
        let (plugins, _) = load(home, project);
        for p in plugins.iter().filter(|p| p.source == HookSource::Project) {
            for kind in ["commands", "agents"] {
                if let Some(dir) = p.dir_of(kind) {
                    out.extend(yuyao_extension_files::frontmatter::files_with_ext(
                        &dir, "md",
                    ));
                }
            }
        }
        out
    }),
    ..yuyao_core::Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_paths_and_warnings() {
        let t = tempfile::tempdir().unwrap();
        let (home, project) = (t.path().join("home"), t.path().join("p"));
        let put = |p: PathBuf, text: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            project.join(".yuyao/plugins/good/plugin.json"),
            r#"{"name": "good", "version": "1.2.0", "description": "d", "commands": "cmds",
               "hooks": {"PreToolUse": [{"command": "${CLAUDE_PLUGIN_ROOT}/gate.sh"}]},
               "mcpServers": {"time": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/t"}}}"#,
        );
        put(project.join(".yuyao/plugins/good/cmds/x.md"), "x\n");
        put(
            project.join(".yuyao/plugins/escape/plugin.json"),
            r#"{"commands": "../../..", "hooks": "../hooks.json"}"#,
        );
        put(
            home.join("plugins/bad/plugin.json"),
            "{\n  \"name\": \"bad\",\n  oops\n}",
        );
        let (list, warnings) = load(&home, &project);
        let names: Vec<&str> = list.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["escape", "good"]);
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("bad/plugin.json: line 3")),
            "{warnings:?}"
        );
        let good = &list[1];
        assert_eq!(good.version, "1.2.0");
        assert!(good.dir_of("commands").unwrap().ends_with("cmds"));
        assert!(good.dir_of("skills").is_none());
        let (hooks, w) = good.hooks();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(hooks.len(), 1);
        let root = project.join(".yuyao/plugins/good");
        assert!(
            hooks[0]
                .command
                .contains(&format!("{}/gate.sh", root.display())),
            "{}",
            hooks[0].command
        );
        let (servers, _) = good.mcp_servers();
        let cmd = servers["good-time"].command.clone().unwrap();
        assert_eq!(cmd[0], format!("{}/bin/t", root.display()));
        let escape = &list[0];
        assert!(escape.dir_of("commands").is_none());
        let (h, w) = escape.hooks();
        assert!(h.is_empty() && w[0].contains("outside the plugin"));
    }
}
