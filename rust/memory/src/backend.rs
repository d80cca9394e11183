//! Where memory lives (seed 002 §6.4: the backend is selectable). `memory.backend = "builtin"`
//! (the default) is the Markdown files and the local index; `"mcp"` is a memory service
//! reached over MCP: `memory.mcp_server` names a server of the user's own `~/.yuyao/mcp.json`
//! (started and confined like every MCP server, `mcp_servers.rs`). A repository cannot choose
//! it: both keys are guarded in a project's config, and a server that only the project's
//! `.mcp.json` declares is refused.
//!
//! On the service, `/remember` (and "remember that …") stores the entry there, memory-search
//! and `/memory search` ask it first (the memory files are searched too: hand-written
//! `MEMORY.md` lines stay), `/memory` lists its recent entries, and the session starts with
//! its recent entries in the memory section. A service that is misconfigured, fails to start
//! or fails a call is said once, and the built-in store serves for the rest of the session.
//!
//! The tools are found by name in the server's tool list (mcp-memory-service's
//! `memory_store`/`memory_search`/`memory_list`, basic-memory's `write_note`/`search_notes`/
//! `recent_activity`); their arguments are filled from their input schemas.

#[allow(unused_imports)]
use crate::session_ext::*;

use serde_json::{Map, Value, json};
use std::sync::Mutex;
use std::time::Duration;
use yuyao_core::Session;
use yuyao_mcp::{Manager, ToolInfo};
use yuyao_protocol::NoticeLevel;

/// A call to the service that takes longer than this counts as a failure.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Entries of the service asked for the session's starting memory and `/memory`.
const LIST_SIZE: u64 = 20;

/// The tool sets of known memory services: store, search, list.
const PROFILES: &[(&str, &str, &str)] = &[
    ("memory_store", "memory_search", "memory_list"),
    ("write_note", "search_notes", "recent_activity"),
];

#[derive(Default)]
pub(crate) struct ServiceState {
    /// Set once the service failed: why (the built-in store serves from then on).
    down: Mutex<Option<String>>,
    /// The service's part of the starting memory, fetched once per conversation.
    boot: Mutex<Option<String>>,
    /// Preference rules its entries state ("use bun, not npm"), enforced like `MEMORY.md`'s.
    rules: Mutex<Vec<yuyao_extension_files::preference_rules::Rule>>,
}

impl ServiceState {
    pub(crate) fn rules(&self) -> Vec<yuyao_extension_files::preference_rules::Rule> {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn learn(&self, text: &str, when: Option<String>) {
        if let Some(rule) = yuyao_extension_files::preference_rules::compile_service(text, when) {
            let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
            if !rules.contains(&rule) {
                rules.push(rule);
            }
        }
    }

    /// A new conversation (`/new`, `/clear`) starts with the service's entries as they are.
    pub(crate) fn forget_boot(&self) {
        *self.boot.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The memory service in use and its tools.
pub(crate) struct Service {
    pub server: String,
    store: ToolInfo,
    search: ToolInfo,
    list: Option<ToolInfo>,
    manager: std::sync::Arc<Manager>,
}

/// The backend as configured now: `None` for the built-in store, the server's name for a
/// memory service, an error when the configuration cannot be honoured.
fn configured(s: &Session) -> Result<Option<String>, String> {
    let backend = s
        .config()
        .get("memory.backend")
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "builtin".into());
    match backend.as_str() {
        "builtin" => return Ok(None),
        "mcp" => {}
        other => {
            return Err(format!(
                "memory.backend is {other:?}: expected builtin or mcp"
            ));
        }
    }
    let name = s
        .config()
        .get("memory.mcp_server")
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|n| !n.trim().is_empty())
        .ok_or("memory.backend = mcp needs memory.mcp_server (a server of ~/.yuyao/mcp.json)")?;
    // Only the user's own file: a repository's `.mcp.json` never holds the user's memory.
    let user = yuyao_store::McpRegistry::new(s.paths().mcp_registry());
    let servers = user.list()?;
    match servers.get(&name) {
        None => Err(format!(
            "memory.mcp_server '{name}' is not a server of {} (a project's .mcp.json cannot be the memory service)",
            s.paths().mcp_registry().display()
        )),
        Some(srv) if srv.disabled() => Err(format!("MCP server '{name}' is disabled")),
        Some(_) => Ok(Some(name)),
    }
}

/// Runs `make()`'s future on a runtime of its own, on a thread of its own: callable from a
/// turn (inside the session's runtime) and from a slash command alike.
fn blocking<F, Fut, T>(make: F) -> Result<T, String>
where
    F: FnOnce() -> Fut + Send,
    Fut: std::future::Future<Output = T>,
    T: Send,
{
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start a runtime: {e}"))?;
                Ok(rt.block_on(make()))
            })
            .join()
            .map_err(|_| "the memory service call panicked".to_string())?
    })
}

/// Said once; the built-in store serves from now on (and the server's failure is not said
/// again by `mcp_servers.rs`).
fn degrade(s: &Session, server: &str, why: &str) {
    s.mcp_failure_said(server);
    fall_back(s, server, why);
}

/// The warning and the switch to the built-in store, once.
fn fall_back(s: &Session, server: &str, why: &str) {
    let mut down = s
        .memory()
        .service
        .down
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if down.is_some() {
        return;
    }
    *down = Some(why.to_string());
    drop(down);
    s.lock().trajectory.record(
        "memory_backend",
        json!({"server": server, "status": "unavailable", "error": why}),
    );
    s.notice(
        NoticeLevel::Warning,
        format!(
            "memory service '{server}' is unavailable ({why}): using the built-in memory files (MEMORY.md, memory/) for the rest of this session"
        ),
    );
}

/// A configured MCP server failed to start: when it is the memory service, said once as the
/// fallback to the built-in files (true), instead of as a server whose tools are gone.
pub(crate) fn server_failed(s: &Session, server: &str, why: &str) -> bool {
    if !s.memory().enabled || configured(s).ok().flatten().as_deref() != Some(server) {
        return false;
    }
    // `mcp_servers.rs` holds its "said" set here: only the warning.
    fall_back(s, server, why);
    true
}

/// The memory service when `memory.backend = "mcp"` and it works; `None` for the built-in
/// store (configured, or fallen back to after the one warning).
pub(crate) fn service(s: &Session) -> Option<Service> {
    // A sub-agent runs no MCP server of its own (`mcp_sync`): it searches the files.
    if !s.memory().enabled || s.is_sub_agent() {
        return None;
    }
    if s.memory()
        .service
        .down
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .is_some()
    {
        return None;
    }
    let server = match configured(s) {
        Ok(None) => return None,
        Ok(Some(n)) => n,
        Err(e) => {
            let name = s
                .config()
                .get("memory.mcp_server")
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "(none)".into());
            degrade(s, &name, &e);
            return None;
        }
    };
    let Some(manager) = s.mcp_manager() else {
        degrade(s, &server, "no MCP server is running");
        return None;
    };
    // The first use waits for the server's start (at most its startup timeout).
    let m = manager.clone();
    if let Err(e) = blocking(|| async move { m.wait_started().await }) {
        degrade(s, &server, &e);
        return None;
    }
    if let Some(st) = manager.statuses().into_iter().find(|st| st.name == server)
        && st.status != "ready"
    {
        let why = st.error.unwrap_or(st.status);
        degrade(s, &server, &why);
        return None;
    }
    let tools: Vec<ToolInfo> = manager
        .tools()
        .into_iter()
        .filter(|t| t.server == server)
        .collect();
    let find = |name: &str| tools.iter().find(|t| t.name == name).cloned();
    for (store, search, list) in PROFILES {
        if let (Some(store), Some(search)) = (find(store), find(search)) {
            return Some(Service {
                server,
                store,
                search,
                list: find(list),
                manager,
            });
        }
    }
    degrade(
        s,
        &server,
        "it offers no memory tools (memory_store and memory_search, or write_note and search_notes)",
    );
    None
}

/// Arguments for `tool` from the values yuyao has, by the names its schema declares.
fn arguments(tool: &ToolInfo, values: &[(&str, Value)]) -> Value {
    let props = tool.schema.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    for (name, value) in values {
        if props.is_none_or(|p| p.contains_key(*name)) {
            out.insert((*name).to_string(), value.clone());
        }
    }
    Value::Object(out)
}

impl Service {
    fn call(&self, tool: &ToolInfo, args: Value) -> Result<String, String> {
        let m = self.manager.clone();
        let (server, name) = (self.server.clone(), tool.name.clone());
        let out = blocking(|| async move {
            tokio::time::timeout(CALL_TIMEOUT, m.call(&server, &name, args)).await
        })?
        .map_err(|_| format!("no answer within {} s", CALL_TIMEOUT.as_secs()))??;
        if out.is_error {
            return Err(format!("{} failed: {}", tool.name, out.text.trim()));
        }
        Ok(out.text)
    }

    fn store(&self, text: &str) -> Result<String, String> {
        let title: String = text.chars().take(60).collect();
        let args = arguments(
            &self.store,
            &[
                ("content", json!(text)),
                ("title", json!(title)),
                ("folder", json!("yuyao")),
                ("metadata", json!({"tags": ["yuyao"], "type": "note"})),
            ],
        );
        self.call(&self.store, args)
    }

    fn search(&self, query: &str, k: usize) -> Result<String, String> {
        let args = arguments(
            &self.search,
            &[
                ("query", json!(query)),
                ("limit", json!(k)),
                ("page_size", json!(k)),
            ],
        );
        self.call(&self.search, args)
    }

    /// The recent entries as text (one `- <entry> (<day>)` per line when the service answers
    /// in JSON, else its text) and as entries (JSON only).
    #[allow(clippy::type_complexity)]
    fn recent(&self) -> Result<(String, Vec<(String, Option<String>)>), String> {
        let Some(list) = &self.list else {
            return Ok((String::new(), Vec::new()));
        };
        let args = arguments(
            list,
            &[("page_size", json!(LIST_SIZE)), ("limit", json!(LIST_SIZE))],
        );
        let text = self.call(list, args)?;
        let Some(entries) = entries_of(&text) else {
            return Ok((text, Vec::new()));
        };
        let lines = entries
            .iter()
            .map(|(content, when)| match when {
                Some(w) => format!("- {content} ({w})"),
                None => format!("- {content}"),
            })
            .collect::<Vec<_>>()
            .join("\n");
        Ok((lines, entries))
    }
}

/// The entries of a JSON listing (`{"memories": [{"content": …, "created_at_iso": …}]}`):
/// text and day.
fn entries_of(text: &str) -> Option<Vec<(String, Option<String>)>> {
    let v: Value = serde_json::from_str(text).ok()?;
    let items = v
        .get("memories")
        .or_else(|| v.get("results"))
        .and_then(Value::as_array)?;
    Some(
        items
            .iter()
            .filter_map(|m| {
                let content = m.get("content").and_then(Value::as_str)?;
                let when = m
                    .get("created_at_iso")
                    .and_then(Value::as_str)
                    .and_then(|w| w.get(..10))
                    .map(str::to_string);
                Some((content.replace('\n', " "), when))
            })
            .collect(),
    )
}

/// `/remember` and "remember that …": into the service, else into `MEMORY.md`. Returns what
/// to tell the user.
pub(crate) fn remember(
    s: &Session,
    scope: yuyao_store::memory::Scope,
    text: &str,
    why: &str,
    src: &str,
) -> Result<String, String> {
    if let Some(svc) = service(s) {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return Err("nothing to remember: the text is empty".into());
        }
        match svc.store(&text) {
            Ok(_) => {
                s.memory().service.learn(&text, Some(super::today()));
                s.lock().trajectory.record(
                    "memory_backend",
                    json!({"server": svc.server, "op": "store", "src": src}),
                );
                return Ok(format!(
                    "remembered in memory service '{}': {text}",
                    svc.server
                ));
            }
            Err(e) => degrade(s, &svc.server, &e),
        }
    }
    let f = s.memory().add(scope, text, why, src)?;
    Ok(format!(
        "remembered in {} ({}): {}",
        f.file.path.display(),
        f.entry.id,
        f.entry.text
    ))
}

/// The service's hits for memory-search and `/memory search` (`None` on the built-in store).
pub(crate) fn search(s: &Session, query: &str, k: usize) -> Option<(String, String)> {
    let svc = service(s)?;
    match svc.search(query, k) {
        Ok(text) => Some((svc.server, text)),
        Err(e) => {
            degrade(s, &svc.server, &e);
            None
        }
    }
}

/// The service's recent entries for `/memory` (`None` on the built-in store).
pub(crate) fn list(s: &Session) -> Option<(String, String)> {
    let svc = service(s)?;
    match svc.recent() {
        Ok((text, entries)) => {
            for (content, when) in entries {
                s.memory().service.learn(&content, when);
            }
            Some((svc.server, text))
        }
        Err(e) => {
            degrade(s, &svc.server, &e);
            None
        }
    }
}

/// The memory section of the system prompt: the memory files' (fixed at session start) and,
/// on a memory service, its recent entries (fetched once per conversation, cut to
/// `memory.bootstrap_chars`).
pub(crate) fn section(s: &Session) -> String {
    let files = s.memory().section();
    if !s.memory().enabled {
        return files;
    }
    let cached = s
        .memory()
        .service
        .boot
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let part = match cached {
        Some(p) => p,
        None => {
            let part = match list(s) {
                Some((server, text)) if !text.trim().is_empty() => {
                    let budget = s.memory().budget();
                    let mut body: String = text.trim().chars().take(budget).collect();
                    if body.chars().count() < text.trim().chars().count() {
                        body.push_str(&format!(
                            "\n[memory truncated to memory.bootstrap_chars={budget}; memory-search asks the service for more]"
                        ));
                    }
                    format!(
                        "\n## Memory service '{server}' (recent entries, shared across sessions)\n{body}\n"
                    )
                }
                _ => String::new(),
            };
            *s.memory()
                .service
                .boot
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(part.clone());
            part
        }
    };
    if part.is_empty() {
        return files;
    }
    if files.is_empty() {
        return format!("{}{part}", super::bootstrap::HEADER);
    }
    format!("{files}{part}")
}

/// `/memory status`'s line about the backend.
pub(crate) fn status_line(s: &Session) -> String {
    let down = s
        .memory()
        .service
        .down
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    match (configured(s), down) {
        (Ok(None), _) => "backend: builtin (MEMORY.md files and the local index)".into(),
        (Ok(Some(n)), None) => format!("backend: mcp (memory service '{n}')"),
        (Ok(Some(n)), Some(why)) => {
            format!("backend: builtin (memory service '{n}' unavailable: {why})")
        }
        (Err(e), _) => format!("backend: builtin ({e})"),
    }
}
