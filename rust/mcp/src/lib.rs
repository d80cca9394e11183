//! yuyao's MCP client. A [`Manager`] keeps one connection per configured server on its own
//! small runtime, so servers start concurrently in the background while the session is
//! already usable; a slow or dead server is only ever waited for up to its startup deadline.
//! The session reads the ready servers' tools ([`Manager::tools`]), calls them
//! ([`Manager::call`]) and lists their state ([`Manager::statuses`]).

mod connect;
mod result;
mod schema;

pub use result::CallOutput;
pub use schema::sanitize_schema;

use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use yuyao_policy::sandbox::Confinement;
use yuyao_store::McpServer;

/// How long past a startup deadline a waiter still waits for the attempt to report.
const GRACE: Duration = Duration::from_millis(200);

/// `mcp.startup_timeout_ms` when unset.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The prefix of every MCP tool's name as the model sees it: `mcp__<server>__<tool>`.
pub const TOOL_PREFIX: &str = "mcp__";

/// One tool of a ready server.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    pub server: String,
    /// The server's own name for the tool.
    pub name: String,
    /// `mcp__<server>__<tool>`.
    pub full_name: String,
    pub description: String,
    /// The input schema, sanitized for providers.
    pub schema: Value,
    /// The server marks the tool read-only (`readOnlyHint`).
    pub read_only: bool,
}

/// What a listing shows for one server.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub name: String,
    pub transport: &'static str,
    /// `connecting`, `ready`, `failed`, `not configured`, or why it does not run.
    pub status: String,
    pub tools: usize,
    pub error: Option<String>,
}

/// A server as the manager runs it: the configuration entry, or why it must not run.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Run(McpServer),
    /// Listed but never started (an untrusted project's server, a disabled one).
    Held(McpServer, String),
}

type Client = RunningService<RoleClient, ()>;

enum State {
    Connecting,
    Ready {
        client: Arc<Client>,
        tools: Vec<ToolInfo>,
    },
    /// The error, and the tools it had before it failed (still offered: calling one
    /// starts the server again).
    Failed(String, Vec<ToolInfo>),
    NotConfigured,
    Held(String),
}

struct Server {
    entry: Entry,
    state: Mutex<State>,
    /// Bumped at every state change, so waiters wake up.
    changed: watch::Sender<u64>,
    /// When the current connection attempt gives up.
    deadline: Mutex<Instant>,
}

impl Server {
    fn set(&self, s: State) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = s;
        self.changed.send_modify(|n| *n += 1);
    }

    fn config(&self) -> &McpServer {
        match &self.entry {
            Entry::Run(c) | Entry::Held(c, _) => c,
        }
    }
}

pub struct Manager {
    /// Always `Some` until drop (shut down in the background then, so dropping a session
    /// inside another runtime never blocks).
    rt: Option<tokio::runtime::Runtime>,
    servers: Mutex<BTreeMap<String, Arc<Server>>>,
    startup_timeout: Duration,
    /// The project root: the working folder of stdio servers without a `cwd`.
    cwd: std::path::PathBuf,
    /// How each stdio server is confined when it starts (`set_confinements`; a server
    /// without an entry gets the strictest default).
    confinements: Mutex<BTreeMap<String, Confinement>>,
}

impl Manager {
    pub fn new(startup_timeout: Duration, cwd: std::path::PathBuf) -> Result<Self, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("yuyao-mcp")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the MCP runtime: {e}"))?;
        Ok(Manager {
            rt: Some(rt),
            servers: Mutex::new(BTreeMap::new()),
            startup_timeout,
            cwd,
            confinements: Mutex::new(BTreeMap::new()),
        })
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("the runtime lives until drop")
    }

    fn servers(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Server>>> {
        self.servers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The confinement each server gets at its next start (the session's profile for MCP
    /// servers; a running server keeps the one it started with).
    pub fn set_confinements(&self, map: BTreeMap<String, Confinement>) {
        *self.confinements.lock().unwrap_or_else(|e| e.into_inner()) = map;
    }

    /// Makes the running set match `wanted`: new or changed servers start connecting (in the
    /// background, at once), removed ones are shut down. Never waits.
    pub fn sync(&self, wanted: BTreeMap<String, Entry>) {
        let mut servers = self.servers();
        servers.retain(|name, s| wanted.get(name) == Some(&s.entry));
        for (name, entry) in wanted {
            if servers.contains_key(&name) {
                continue;
            }
            let (changed, _) = watch::channel(0);
            let initial = match &entry {
                Entry::Held(_, why) => State::Held(why.clone()),
                Entry::Run(c) if c.transport() == "none" => State::NotConfigured,
                Entry::Run(_) => State::Connecting,
            };
            let server = Arc::new(Server {
                entry,
                state: Mutex::new(initial),
                changed,
                deadline: Mutex::new(Instant::now() + self.startup_timeout),
            });
            if matches!(*server.state.lock().unwrap(), State::Connecting) {
                self.start(&name, &server);
            }
            servers.insert(name, server);
        }
    }

    /// Starts a connection attempt in the background. The attempt and its waiters share one
    /// deadline, so nobody waits past it for a server that is about to be declared failed.
    fn start(&self, name: &str, server: &Arc<Server>) {
        let deadline = Instant::now() + self.startup_timeout;
        *server.deadline.lock().unwrap_or_else(|e| e.into_inner()) = deadline;
        server.set(State::Connecting);
        let confinement = self
            .confinements
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
            .unwrap_or_default();
        let (name, server, timeout, cwd) = (
            name.to_string(),
            server.clone(),
            self.startup_timeout,
            self.cwd.clone(),
        );
        self.rt().spawn(async move {
            let attempt = connect::connect(&name, server.config(), &cwd, &confinement);
            let at = tokio::time::Instant::from_std(deadline);
            let state = match tokio::time::timeout_at(at, attempt).await {
                Ok(Ok((client, tools))) => State::Ready {
                    client: Arc::new(client),
                    tools,
                },
                Ok(Err(e)) => State::Failed(e, Vec::new()),
                Err(_) => State::Failed(
                    format!(
                        "did not start within {} ms (mcp.startup_timeout_ms)",
                        timeout.as_millis()
                    ),
                    Vec::new(),
                ),
            };
            server.set(state);
        });
    }

    /// Waits until no server is still connecting, or each one's startup deadline passed.
    pub async fn wait_started(&self) {
        let pending: Vec<Arc<Server>> = self.servers().values().cloned().collect();
        for s in pending {
            let mut rx = s.changed.subscribe();
            let deadline = *s.deadline.lock().unwrap_or_else(|e| e.into_inner()) + GRACE;
            loop {
                if !matches!(
                    *s.state.lock().unwrap_or_else(|e| e.into_inner()),
                    State::Connecting
                ) {
                    break;
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() || tokio::time::timeout(left, rx.changed()).await.is_err() {
                    break;
                }
            }
        }
    }

    /// [`Manager::wait_started`] for a caller outside any runtime (a listing).
    pub fn wait_started_blocking(&self) {
        let pending: Vec<Arc<Server>> = self.servers().values().cloned().collect();
        for s in pending {
            let deadline = *s.deadline.lock().unwrap_or_else(|e| e.into_inner()) + GRACE;
            while Instant::now() < deadline
                && matches!(
                    *s.state.lock().unwrap_or_else(|e| e.into_inner()),
                    State::Connecting
                )
            {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// The tools of every ready server.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.servers()
            .values()
            .flat_map(
                |s| match &*s.state.lock().unwrap_or_else(|e| e.into_inner()) {
                    State::Ready { tools, .. } | State::Failed(_, tools) => tools.clone(),
                    _ => Vec::new(),
                },
            )
            .collect()
    }

    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers()
            .iter()
            .map(|(name, s)| {
                let (status, tools, error) =
                    match &*s.state.lock().unwrap_or_else(|e| e.into_inner()) {
                        State::Connecting => ("connecting".to_string(), 0, None),
                        State::Ready { tools, .. } => ("ready".to_string(), tools.len(), None),
                        State::Failed(e, _) => ("failed".to_string(), 0, Some(e.clone())),
                        State::NotConfigured => ("not configured".to_string(), 0, None),
                        State::Held(why) => (why.clone(), 0, None),
                    };
                ServerStatus {
                    name: name.clone(),
                    transport: s.config().transport(),
                    status,
                    tools,
                    error,
                }
            })
            .collect()
    }

    /// Calls `tool` on `server`. A server that failed (crashed, or never started) is
    /// connected again once for this call; a connection lost during the call is reported
    /// in the result and retried at the next call.
    pub async fn call(&self, server: &str, tool: &str, args: Value) -> Result<CallOutput, String> {
        let Some(s) = self.servers().get(server).cloned() else {
            return Err(format!("no MCP server named '{server}' is configured"));
        };
        let failed = match &*s.state.lock().unwrap_or_else(|e| e.into_inner()) {
            State::Failed(e, tools) => Some((e.clone(), tools.clone())),
            State::Held(why) => return Err(format!("MCP server '{server}' does not run: {why}")),
            State::NotConfigured => {
                return Err(format!(
                    "MCP server '{server}' has no command or URL configured"
                ));
            }
            _ => None,
        };
        if let Some((previous, known)) = failed {
            self.start(server, &s);
            self.wait_one(&s).await;
            let mut state = s.state.lock().unwrap_or_else(|e| e.into_inner());
            if let State::Failed(e, tools) = &mut *state {
                // Still offered, so a later call tries once more.
                if tools.is_empty() {
                    *tools = known;
                }
                return Err(format!(
                    "MCP server '{server}' is not running (earlier: {previous}); reconnecting failed: {e}"
                ));
            }
        } else {
            self.wait_one(&s).await;
        }
        let client = match &*s.state.lock().unwrap_or_else(|e| e.into_inner()) {
            State::Ready { client, .. } => client.clone(),
            State::Failed(e, _) => return Err(format!("MCP server '{server}' failed: {e}")),
            _ => return Err(format!("MCP server '{server}' is still starting")),
        };
        let params = serde_json::from_value(serde_json::json!({"name": tool, "arguments": args}))
            .map_err(|e| format!("invalid MCP call: {e}"))?;
        let handle = self
            .rt()
            .spawn(async move { client.peer().call_tool(params).await });
        match handle.await {
            Ok(Ok(r)) => Ok(result::convert(r)),
            Ok(Err(e @ rmcp::ServiceError::McpError(_))) => {
                Err(format!("MCP server '{server}' refused the call: {e}"))
            }
            Ok(Err(e)) => {
                s.set(State::Failed(
                    format!("connection lost: {e}"),
                    self.known_tools(&s),
                ));
                Err(format!(
                    "MCP server '{server}' crashed or closed the connection ({e}); it is started again at the next call"
                ))
            }
            Err(e) => {
                s.set(State::Failed(
                    format!("the call panicked: {e}"),
                    self.known_tools(&s),
                ));
                Err(format!("MCP server '{server}': the call failed: {e}"))
            }
        }
    }

    fn known_tools(&self, s: &Server) -> Vec<ToolInfo> {
        match &*s.state.lock().unwrap_or_else(|e| e.into_inner()) {
            State::Ready { tools, .. } | State::Failed(_, tools) => tools.clone(),
            _ => Vec::new(),
        }
    }

    async fn wait_one(&self, s: &Arc<Server>) {
        let mut rx = s.changed.subscribe();
        let deadline = *s.deadline.lock().unwrap_or_else(|e| e.into_inner()) + GRACE;
        while matches!(
            *s.state.lock().unwrap_or_else(|e| e.into_inner()),
            State::Connecting
        ) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || tokio::time::timeout(left, rx.changed()).await.is_err() {
                break;
            }
        }
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        // Clients close their transports (children are killed) on the runtime they live on.
        let servers = std::mem::take(&mut *self.servers());
        if let Some(rt) = self.rt.take() {
            let guard = rt.enter();
            drop(servers);
            drop(guard);
            rt.shutdown_background();
        }
    }
}

/// Splits `mcp__<server>__<tool>` into its parts.
pub fn split_tool_name(full: &str) -> Option<(&str, &str)> {
    let rest = full.strip_prefix(TOOL_PREFIX)?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}
