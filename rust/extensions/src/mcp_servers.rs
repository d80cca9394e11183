//! The session's MCP servers: the two configuration files (user `~/.yuyao/mcp.json`,
//! project `<project>/.mcp.json`), which of their servers may run (a project's only when its
//! extensions are allowed), the live connections (`yuyao_mcp::Manager`), their tools in the
//! request, their calls through the permission engine, and `/mcp`.

#[allow(unused_imports)]
use crate::session_ext::*;

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use yuyao_core::{CoreError, Session};
use yuyao_core::{Origin, ProcessKind};
use yuyao_mcp::{Entry, Manager, ToolInfo};
use yuyao_store::{McpRegistry, McpScope, McpServer, Paths};
use yuyao_tools::ToolOutput;

pub(crate) struct McpServers {
    user: McpRegistry,
    project: McpRegistry,
    /// Made when the first server is configured, so a session without any starts nothing.
    manager: Mutex<Option<Arc<Manager>>>,
    /// The project's servers as the session first read them, or as the user wrote them with
    /// `/mcp`. A tool process can write `.mcp.json` (a file that does not exist yet is not
    /// protected by the sandbox's mounts), and servers run with the user's rights: an entry
    /// that differs from this is held until the next session, never started mid-session.
    vetted: Mutex<BTreeMap<String, McpServer>>,
    /// Servers whose failure to start was already said (once per failure, on every surface).
    failed_said: Mutex<std::collections::BTreeSet<String>>,
}

impl McpServers {
    pub(crate) fn new(paths: &Paths) -> Self {
        let servers = McpServers {
            user: McpRegistry::new(paths.mcp_registry()),
            project: McpRegistry::new(paths.project.join(".mcp.json")),
            manager: Mutex::new(None),
            vetted: Mutex::new(BTreeMap::new()),
            failed_said: Mutex::new(Default::default()),
        };
        servers.vet_project();
        servers
    }

    /// Records the project file's entries as they are now as vetted (at open, and after the
    /// user's own `/mcp add|remove`).
    fn vet_project(&self) {
        let now: BTreeMap<String, McpServer> = self.project.list().unwrap_or_default();
        *self.vetted.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }

    /// Whether the project entry `name` is the one the session vetted.
    fn is_vetted(&self, name: &str, srv: &McpServer) -> bool {
        self.vetted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            == Some(srv)
    }

    fn project_path(&self) -> &std::path::Path {
        self.project.path()
    }

    fn registry(&self, scope: McpScope) -> &McpRegistry {
        match scope {
            McpScope::User => &self.user,
            McpScope::Project => &self.project,
        }
    }

    /// Every configured server with its scope; a user entry wins over a project entry of the
    /// same name (a repository cannot replace a server the user configured).
    fn configured(&self) -> (BTreeMap<String, (McpScope, McpServer)>, Vec<String>) {
        let mut out = BTreeMap::new();
        let mut problems = Vec::new();
        for scope in [McpScope::Project, McpScope::User] {
            match self.registry(scope).list() {
                Ok(list) => {
                    for (name, srv) in list {
                        // A name with `__` could pass for another server's tools under
                        // its rules (`mcp__time__x__…` under `mcp__time`): never run.
                        if !yuyao_store::mcp::valid_server_name(&name) {
                            problems.push(format!(
                                "MCP server '{name}' in {} is skipped: a name is letters, digits, '_' (not '__'), '-' or '.'",
                                self.registry(scope).path().display()
                            ));
                            continue;
                        }
                        out.insert(name, (scope, srv));
                    }
                }
                Err(e) => problems.push(e),
            }
        }
        (out, problems)
    }

    /// The failure of `name` was said (by the memory fallback): not again as a server's.
    pub(crate) fn failure_said(&self, name: &str) {
        self.failed_said
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_string());
    }

    pub(crate) fn manager(&self) -> Option<Arc<Manager>> {
        self.manager
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

pub(crate) trait McpSync {
    fn project_extensions_run(&self) -> Result<(), String>;
    fn mcp_sync(&self);
    fn mcp_open_notices(&self);
    fn mcp_shutdown(&self);
    async fn mcp_wait_started(&self);
    fn mcp_failures_said(&self, m: &Manager);
    fn mcp_tools(&self) -> Vec<ToolInfo>;
    fn mcp_schemas(&self) -> Vec<Value>;
    async fn mcp_call(&self, tool: &ToolInfo, args: Value) -> ToolOutput;
    fn mcp_servers(&self) -> Vec<String>;
}

impl McpSync for Session {
    /// Whether the project's own executables (`.mcp.json` servers) may run: as the front
    /// chose (`-p`/agent_api yes unless told otherwise, run_agent.sh never), else (the TUI)
    /// only in a trusted project.
    fn project_extensions_run(&self) -> Result<(), String> {
        // One predicate for every project-provided executable (hooks, `!{cmd}`, servers).
        if self.project_extensions_allowed() {
            Ok(())
        } else if self.options().no_project_extensions
            || self.options().project_extensions == Some(false)
        {
            Err("off (project extensions)".into())
        } else {
            Err("not run until the project is trusted (/trust)".into())
        }
    }

    /// Makes the running servers match the configuration files (started in the background,
    /// never waited for here). Called at open, after `/mcp add|remove`, before each request.
    fn mcp_sync(&self) {
        // A sub-agent starts no MCP server of its own (they are the main session's).
        if self.is_sub_agent() {
            return;
        }
        let (mut configured, _) = self.mcp().configured();
        // The active plugins' servers (a configured server of the same name wins).
        for (name, srv) in self.plugin_mcp_servers() {
            configured.entry(name).or_insert((McpScope::User, srv));
        }
        let mut slot = self.mcp().manager.lock().unwrap_or_else(|e| e.into_inner());
        if configured.is_empty() && slot.is_none() {
            return;
        }
        let project_ok = self.project_extensions_run();
        // The project's `.mcp.json` runs only as the content the user approved (§8).
        let mcp_file_held = self.project_file_held(self.mcp().project_path());
        // `features.mcp = false` holds every server: their tools leave the next request.
        let mcp_on = self.feature_enabled("mcp");
        // Each server's confinement at its next start (`process_profile`): a repository's
        // plugin counts as the project's, whatever scope its servers are listed under.
        let from_project = self.project_plugin_servers();
        let confinements: BTreeMap<String, yuyao_policy::sandbox::Confinement> = configured
            .iter()
            .map(|(name, (scope, _))| {
                let origin = match scope {
                    McpScope::Project => Origin::Project,
                    _ if from_project.contains(name) => Origin::Project,
                    _ => Origin::User,
                };
                (
                    name.clone(),
                    self.process_confinement(ProcessKind::McpServer, origin),
                )
            })
            .collect();
        let wanted: BTreeMap<String, Entry> = configured
            .into_iter()
            .map(|(name, (scope, srv))| {
                let entry = if !mcp_on {
                    Entry::Held(srv, "off (features.mcp = false)".into())
                } else if srv.disabled() {
                    Entry::Held(srv, "disabled".into())
                } else {
                    match (&project_ok, scope) {
                        (Err(why), McpScope::Project) => Entry::Held(srv, why.clone()),
                        (Ok(()), McpScope::Project) if mcp_file_held.is_some() => {
                            Entry::Held(srv, mcp_file_held.clone().unwrap_or_default())
                        }
                        (Ok(()), McpScope::Project) if !self.mcp().is_vetted(&name, &srv) => {
                            Entry::Held(
                                srv,
                                "written to .mcp.json during this session, not with /mcp: starts in the next session".into(),
                            )
                        }
                        _ => Entry::Run(srv),
                    }
                };
                (name, entry)
            })
            .collect();
        if slot.is_none() {
            let timeout = self
                .config()
                .get("mcp.startup_timeout_ms")
                .and_then(|v| v.as_integer())
                .filter(|n| *n > 0)
                .map(|n| Duration::from_millis(n as u64))
                .unwrap_or(yuyao_mcp::DEFAULT_STARTUP_TIMEOUT);
            match Manager::new(timeout, self.paths().project.clone()) {
                Ok(m) => *slot = Some(Arc::new(m)),
                Err(e) => {
                    drop(slot);
                    self.notice(yuyao_protocol::NoticeLevel::Warning, e);
                    return;
                }
            }
        }
        if let Some(m) = slot.as_ref() {
            m.set_confinements(confinements);
            m.sync(wanted);
        }
    }

    /// At open: what the project's `.mcp.json` would run, when it waits for the user's trust
    /// (the TUI), so the user sees exactly which commands `/trust` lets start.
    /// Also warns about a configuration file that cannot be read (its servers do not run).
    fn mcp_open_notices(&self) {
        let (configured, problems) = self.mcp().configured();
        for p in problems {
            self.notice(yuyao_protocol::NoticeLevel::Warning, p);
        }
        if self.options().project_extensions.is_some()
            || self.options().no_project_extensions
            || self.project_extensions_run().is_ok()
        {
            return;
        }
        let held: Vec<String> = configured
            .iter()
            .filter(|(_, (scope, srv))| *scope == McpScope::Project && !srv.disabled())
            .map(|(name, (_, srv))| format!("{name}: {}", srv.describe()))
            .collect();
        if !held.is_empty() {
            self.notice(
                yuyao_protocol::NoticeLevel::Info,
                format!(
                    "this project's .mcp.json declares MCP servers that start only once you trust the project (/trust): {}",
                    held.join("; ")
                ),
            );
        }
    }

    /// Stops every server (stdio children are killed) when the session closes.
    fn mcp_shutdown(&self) {
        let manager = self
            .mcp()
            .manager
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(manager);
    }

    /// Before a request: servers still starting get until their startup deadline.
    async fn mcp_wait_started(&self) {
        self.mcp_sync();
        if let Some(m) = self.mcp().manager() {
            m.wait_started().await;
            self.mcp_failures_said(&m);
        }
    }

    /// A server that failed to start is a warning once (TUI, `-p`, agent_api alike), not a
    /// silence until a call of its tools fails; said again if it fails again after recovering.
    fn mcp_failures_said(&self, m: &Manager) {
        let mut said = self
            .mcp()
            .failed_said
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for st in m.statuses() {
            if st.status != "failed" {
                said.remove(&st.name);
                continue;
            }
            if said.insert(st.name.clone()) {
                // The memory service's failure is said once, as the memory fallback.
                let why = st.error.as_deref().unwrap_or("no reason given");
                if yuyao_core::features()
                    .filter_map(|f| f.server_failed)
                    .any(|failed| failed(self, &st.name, why))
                {
                    continue;
                }
                self.notice(
                    yuyao_protocol::NoticeLevel::Warning,
                    format!(
                        "MCP server '{}' failed to start: {}; its tools are unavailable (/mcp shows the servers)",
                        st.name,
                        st.error.as_deref().unwrap_or("no reason given")
                    ),
                );
            }
        }
    }

    /// The ready servers' tools the session offers (`--tools` may name them, or a server
    /// as `mcp__<server>`).
    fn mcp_tools(&self) -> Vec<ToolInfo> {
        let Some(m) = self.mcp().manager() else {
            return Vec::new();
        };
        let mut tools = m.tools();
        if let Some(list) = &self.options().tools {
            tools.retain(|t| {
                list.iter().any(|n| {
                    *n == t.full_name || *n == format!("{}{}", yuyao_mcp::TOOL_PREFIX, t.server)
                })
            });
        }
        tools.sort_by(|a, b| a.full_name.cmp(&b.full_name));
        tools
    }

    fn mcp_schemas(&self) -> Vec<Value> {
        self.mcp_tools()
            .into_iter()
            .map(|t| {
                serde_json::json!({
                    "type": "function",
                    "function": {
                        "name": t.full_name,
                        "description": format!("[MCP server {}] {}", t.server, t.description),
                        "parameters": t.schema,
                    }
                })
            })
            .collect()
    }

    /// Runs an MCP call the policy allowed.
    async fn mcp_call(&self, tool: &ToolInfo, args: Value) -> ToolOutput {
        let Some(m) = self.mcp().manager() else {
            return ToolOutput::err("no MCP server is running");
        };
        match m.call(&tool.server, &tool.name, args).await {
            Ok(out) => ToolOutput {
                ok: !out.is_error,
                text: out.text,
                images: out.images,
            },
            Err(e) => ToolOutput::err(e),
        }
    }

    /// The names of every configured server (user and project).
    fn mcp_servers(&self) -> Vec<String> {
        self.mcp().configured().0.into_keys().collect()
    }
}

/// `/mcp list|add|remove` (also `yuyao mcp …`).
pub(crate) fn mcp_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    match args.first().map(String::as_str) {
        None | Some("list") => list(s),
        Some("add") => add(s, &args[1..]),
        Some("remove") | Some("rm") => {
            let (scope, rest) = take_scope(&args[1..])?;
            let [name] = rest.as_slice() else {
                return Err(usage());
            };
            let scopes = match scope {
                Some(sc) => vec![sc],
                None => vec![McpScope::User, McpScope::Project],
            };
            let mut removed = Vec::new();
            for sc in scopes {
                let registry = s.mcp().registry(sc);
                let remove = || registry.remove(name);
                let gone = match sc {
                    McpScope::Project => {
                        yuyao_store::trust::keep_approval(s.paths(), registry.path(), remove)
                    }
                    _ => remove(),
                };
                if gone.map_err(CoreError::Failed)? {
                    removed.push(sc.as_str());
                }
            }
            if removed.is_empty() {
                return Err(CoreError::Usage(format!("no MCP server named '{name}'")));
            }
            s.mcp_sync();
            Ok(format!(
                "removed MCP server '{name}' ({} scope)",
                removed.join(" and ")
            ))
        }
        Some(other) => Err(CoreError::Usage(format!(
            "unknown /mcp action '{other}': use list, add or remove"
        ))),
    }
}

fn usage() -> CoreError {
    CoreError::Usage(
        "usage: /mcp list | /mcp add NAME [--scope user|project] [--env K=V]... -- CMD ARGS... | /mcp add NAME URL [--header 'K: V']... | /mcp remove NAME".into(),
    )
}

fn take_scope(args: &[String]) -> Result<(Option<McpScope>, Vec<String>), CoreError> {
    let mut scope = None;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            rest.push(a.clone());
            rest.extend(it.cloned());
            break;
        }
        if let Some(v) = a.strip_prefix("--scope=").map(str::to_string).or_else(|| {
            (a == "--scope" || a == "-s").then(|| it.next().cloned().unwrap_or_default())
        }) {
            scope = Some(McpScope::parse(&v).ok_or_else(|| {
                CoreError::Usage(format!("invalid scope '{v}': use user or project"))
            })?);
        } else {
            rest.push(a.clone());
        }
    }
    Ok((scope, rest))
}

fn add(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let (scope, rest) = take_scope(args)?;
    let mut env = BTreeMap::new();
    let mut headers = BTreeMap::new();
    let mut words = Vec::new();
    let mut command: Option<Vec<String>> = None;
    let mut it = rest.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--" => {
                command = Some(it.by_ref().collect());
            }
            "--env" | "-e" => {
                let kv = it.next().ok_or_else(usage)?;
                let (k, v) = kv
                    .split_once('=')
                    .filter(|(k, _)| !k.is_empty())
                    .ok_or_else(|| {
                        CoreError::Usage(format!("--env takes KEY=VALUE, got '{kv}'"))
                    })?;
                env.insert(k.to_string(), v.to_string());
            }
            "--header" | "-H" => {
                let kv = it.next().ok_or_else(usage)?;
                let (k, v) = kv
                    .split_once(':')
                    .filter(|(k, _)| !k.trim().is_empty())
                    .ok_or_else(|| {
                        CoreError::Usage(format!("--header takes 'NAME: VALUE', got '{kv}'"))
                    })?;
                headers.insert(k.trim().to_string(), v.trim().to_string());
            }
            _ => words.push(a),
        }
    }
    let (name, rest) = words.split_first().ok_or_else(usage)?;
    let server = match (rest, command) {
        ([], Some(argv)) if !argv.is_empty() => {
            if !headers.is_empty() {
                return Err(CoreError::Usage(
                    "--header is for HTTP servers (a URL)".into(),
                ));
            }
            McpServer::stdio(&argv, env)
        }
        ([url], None) if url.starts_with("http://") || url.starts_with("https://") => {
            if !env.is_empty() {
                return Err(CoreError::Usage(
                    "--env is for stdio servers (-- CMD ARGS)".into(),
                ));
            }
            McpServer::http(url, headers)
        }
        ([], None) => McpServer::default(),
        _ => return Err(usage()),
    };
    let scope = scope.unwrap_or(McpScope::User);
    let described = server.describe();
    let registry = s.mcp().registry(scope);
    let add = || registry.add(name, server);
    let replaced = match scope {
        // The user's own command: the file keeps its approval (extension_trust.rs).
        McpScope::Project => yuyao_store::trust::keep_approval(s.paths(), registry.path(), add),
        _ => add(),
    }
    .map_err(CoreError::Usage)?;
    if scope == McpScope::Project {
        s.mcp().vet_project();
    }
    s.mcp_sync();
    Ok(format!(
        "{} MCP server '{name}' ({described}; {} scope, {})",
        if replaced { "updated" } else { "added" },
        scope.as_str(),
        s.mcp().registry(scope).path().display()
    ))
}

fn list(s: &Session) -> Result<String, CoreError> {
    let (mut configured, problems) = s.mcp().configured();
    for (name, srv) in s.plugin_mcp_servers() {
        configured.entry(name).or_insert((McpScope::User, srv));
    }
    let mut out = String::new();
    for p in &problems {
        out.push_str(&format!("warning: {p}\n"));
    }
    if configured.is_empty() {
        out.push_str("no MCP servers configured");
        return Ok(out);
    }
    // A listing shows where each server stands: those still starting get their deadline.
    s.mcp_sync();
    let statuses = match s.mcp().manager() {
        Some(m) => {
            m.wait_started_blocking();
            m.statuses()
        }
        None => Vec::new(),
    };
    out.push_str(&format!(
        "  {:<16} {:<8} {:<10} {:<32} {:>5}  last error\n",
        "name", "scope", "transport", "status", "tools"
    ));
    for (name, (scope, srv)) in configured {
        let st = statuses.iter().find(|x| x.name == name);
        let status = st.map(|x| x.status.clone()).unwrap_or_else(|| "-".into());
        let tools = st.map(|x| x.tools).unwrap_or(0);
        let error = st.and_then(|x| x.error.clone()).unwrap_or_default();
        out.push_str(&format!(
            "  {name:<16} {:<8} {:<10} {status:<32} {tools:>5}  {error}\n",
            scope.as_str(),
            srv.transport(),
        ));
        out.push_str(&format!("      {}\n", srv.describe()));
    }
    Ok(out.trim_end().to_string())
}

pub(crate) trait McpState {
    fn mcp(&self) -> &McpServers;
}

impl McpState for Session {
    fn mcp(&self) -> &McpServers {
        self.part()
    }
}

static SERVER_TOOLS: yuyao_core::ServerTools = yuyao_core::ServerTools {
    tools: |s| s.mcp_tools(),
    schemas: |s| s.mcp_schemas(),
    call: |s, tool, args| Box::pin(s.mcp_call(tool, args)),
    wait_started: |s| Box::pin(s.mcp_wait_started()),
    manager: |s| {
        s.mcp_sync();
        s.mcp().manager()
    },
    failure_said: |s, server| s.mcp().failure_said(server),
};

/// What this feature adds to a session (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "mcp_servers",
    state: Some(|o| Box::new(McpServers::new(o.paths))),
    // MCP servers start connecting now, in the background: opening never waits for them.
    opened: Some(|s| {
        s.mcp_sync();
        s.mcp_open_notices();
    }),
    close: Some(|s| s.mcp_shutdown()),
    server_tools: Some(&SERVER_TOOLS),
    commands: &[yuyao_core::cmd!(
        "mcp",
        [],
        "[list | add <name> [--scope …] [-- <cmd> <args…> | <url>] | remove <name>]",
        "manage MCP servers",
        Some(crate::mcp_servers::mcp_cmd)
    )],
    // The fronts' list of server names (the TUI's `@` completion of resources).
    front_calls: &[yuyao_core::FrontCall {
        name: "mcp.servers",
        run: |s, _| {
            Ok(yuyao_core::front_session(s, "mcp.servers")?
                .mcp_servers()
                .into())
        },
    }],
    ..yuyao_core::Feature::NONE
};
