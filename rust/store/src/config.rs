//! Layered configuration (DESIGN §2): defaults < `~/.yuyao/config.toml` <
//! `<project>/.yuyao/config.toml` < environment < flags. The files are read again on every
//! access, so an accepted write (or a hand edit) is effective at once: hot reload by design.
//!
//! Known keys are type-checked; an unknown key is stored as a string with a warning.

use crate::paths::Paths;
use std::path::PathBuf;
use toml::{Table, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    User,
    Project,
}

/// A configuration failure; the text is the user-facing message.
#[derive(Debug)]
pub enum ConfigError {
    Invalid(String),
    Io(String),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Invalid(m) | ConfigError::Io(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ConfigError {}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Bool,
    Int,
    Float,
    /// An integer greater than zero.
    PosInt,
    /// An integer, zero or more.
    NonNegInt,
    /// A number in (0, 1].
    Ratio,
    Str,
    OneOf(&'static [&'static str]),
}

impl Kind {
    fn expected(&self) -> String {
        match self {
            Kind::Bool => "true or false".into(),
            Kind::Int => "an integer".into(),
            Kind::Float => "a non-negative number".into(),
            Kind::PosInt => "a positive integer".into(),
            Kind::NonNegInt => "an integer, zero or more".into(),
            Kind::Ratio => "a number greater than 0 and at most 1".into(),
            Kind::Str => "a string".into(),
            Kind::OneOf(a) => format!("one of {}", a.join(", ")),
        }
    }
}

/// How a change of a key reaches a session that is already running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    /// At the running session's next model or tool call.
    Live,
    /// The interactive display applies it (the TUI re-reads it after a change).
    Display,
    /// Read when a session opens: a running session keeps its value.
    NextSession,
    /// Its feature is not in this build: the value is stored and has no effect yet.
    NotInBuild(&'static str),
}

impl Applies {
    /// What `config set` tells the user about when the new value takes effect, when that is
    /// not "at once".
    pub fn note(&self) -> Option<String> {
        match self {
            Applies::Live | Applies::Display => None,
            Applies::NextSession => {
                Some("applies from the next session; a running session keeps its value".into())
            }
            Applies::NotInBuild(what) => Some(format!(
                "stored, but {what} is not in this build: the setting has no effect yet"
            )),
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            Applies::Live => "live",
            Applies::Display => "display",
            Applies::NextSession => "next-session",
            Applies::NotInBuild(_) => "not-in-build",
        }
    }
}

struct Key {
    name: &'static str,
    kind: Kind,
    applies: Applies,
    help: &'static str,
}

const fn key(name: &'static str, kind: Kind, applies: Applies, help: &'static str) -> Key {
    Key {
        name,
        kind,
        applies,
        help,
    }
}

/// Every key the product understands: its type, how a change reaches a running session
/// (spec §8: accepted means effective) and its meaning.
const KNOWN: &[Key] = &[
    key(
        "model.name",
        Kind::Str,
        Applies::Live,
        "model name (overrides D2A_MODEL_NAME)",
    ),
    key(
        "model.context_window",
        Kind::PosInt,
        Applies::Live,
        "context window in tokens (default 128000)",
    ),
    key(
        "model.max_output_tokens",
        Kind::PosInt,
        Applies::Live,
        "largest reply requested from the model",
    ),
    key(
        "model.input_cost_per_token",
        Kind::Float,
        Applies::Live,
        "price of a prompt token in USD (when D2A_MODEL_COST is not set)",
    ),
    key(
        "model.output_cost_per_token",
        Kind::Float,
        Applies::Live,
        "price of a completion token in USD",
    ),
    key(
        "model.cache_read_input_token_cost",
        Kind::Float,
        Applies::Live,
        "price of a prompt token read from the cache",
    ),
    key(
        "model.cache_creation_input_token_cost",
        Kind::Float,
        Applies::Live,
        "price of a prompt token written to the cache",
    ),
    key(
        "model.cache_hints",
        Kind::OneOf(&["auto", "on", "off"]),
        Applies::Live,
        "prompt-cache breakpoints (cache_control) on the system prompt and the newest message; auto: for model names with claude or anthropic",
    ),
    key(
        "model.response_format",
        Kind::OneOf(&["auto", "json-schema", "instruction"]),
        Applies::Live,
        "how --json-schema is asked of the model: json-schema (response_format), instruction only, or auto (response_format until the endpoint refuses it)",
    ),
    key(
        "model.thinking_param",
        Kind::OneOf(&["reasoning-effort", "thinking-budget", "none"]),
        Applies::Live,
        "how the thinking level is sent: reasoning-effort (default), thinking-budget (an Anthropic-style thinking budget_tokens), or none; _ spellings accepted",
    ),
    key(
        "model.idle_timeout_s",
        Kind::PosInt,
        Applies::Live,
        "longest silence from the model, seconds",
    ),
    key(
        "model.max_retries",
        Kind::Int,
        Applies::Live,
        "retries on 429/5xx/connection errors",
    ),
    key(
        "mode",
        Kind::OneOf(&["ask", "plan", "auto-edit", "auto-review", "yolo"]),
        Applies::Live,
        "default permission mode",
    ),
    key(
        "role",
        Kind::OneOf(&["execute", "ask", "architect", "debug", "orchestrator"]),
        Applies::Live,
        "default role",
    ),
    key(
        "sandbox",
        Kind::OneOf(&["read-only", "workspace-write", "full-access"]),
        Applies::Live,
        "OS sandbox level",
    ),
    key(
        "network",
        Kind::OneOf(&["on", "off"]),
        Applies::Live,
        "network access for tools",
    ),
    key(
        "extension_sandbox.hooks",
        Kind::OneOf(&["read-only", "workspace-write", "full-access"]),
        Applies::Live,
        "OS sandbox level of user-level hooks (read from ~/.yuyao/config.toml only; default: the agent's)",
    ),
    key(
        "extension_sandbox.hooks_network",
        Kind::Bool,
        Applies::Live,
        "network for user-level hooks (read from ~/.yuyao/config.toml only; default: the agent's)",
    ),
    key(
        "extension_sandbox.mcp",
        Kind::OneOf(&["read-only", "workspace-write", "full-access"]),
        Applies::Live,
        "OS sandbox level of user-level MCP stdio servers (read from ~/.yuyao/config.toml only; default: the agent's)",
    ),
    key(
        "extension_sandbox.mcp_network",
        Kind::Bool,
        Applies::Live,
        "network for user-level MCP stdio servers (read from ~/.yuyao/config.toml only; default: the agent's)",
    ),
    key(
        "extension_sandbox.lsp",
        Kind::OneOf(&["read-only", "workspace-write", "full-access"]),
        Applies::Live,
        "OS sandbox level of user-level language servers (read from ~/.yuyao/config.toml only; default: the agent's)",
    ),
    key(
        "extension_sandbox.lsp_network",
        Kind::Bool,
        Applies::Live,
        "network for user-level language servers (read from ~/.yuyao/config.toml only; default: the agent's)",
    ),
    key(
        "extension_sandbox.apps",
        Kind::OneOf(&["read-only", "workspace-write", "full-access"]),
        Applies::Live,
        "OS sandbox level of user-level /run apps (read from ~/.yuyao/config.toml only; default: the agent's)",
    ),
    key(
        "extension_sandbox.apps_network",
        Kind::Bool,
        Applies::Live,
        "network for user-level /run apps (read from ~/.yuyao/config.toml only; default: the agent's)",
    ),
    key(
        "thinking",
        Kind::OneOf(&["off", "low", "medium", "high", "max"]),
        Applies::Live,
        "reasoning budget",
    ),
    key(
        "curiosity",
        Kind::OneOf(&["low", "normal", "high"]),
        Applies::Live,
        "how readily the agent asks",
    ),
    key(
        "ask_user.require_options",
        Kind::Bool,
        Applies::Live,
        "ask-user needs 2-4 concrete options; an open question is sent back (default true)",
    ),
    key(
        "ask_user.reuse_answers",
        Kind::Bool,
        Applies::Live,
        "a question already answered in the session, memory or AGENTS.md is answered from there (default true)",
    ),
    key(
        "scope.guard",
        Kind::Bool,
        Applies::Live,
        "check each change of a turn that declared a scope before it runs (default true)",
    ),
    key(
        "max_steps",
        Kind::PosInt,
        Applies::Live,
        "step limit per turn",
    ),
    key(
        "maxCostUsd",
        Kind::Float,
        Applies::Live,
        "session spend ceiling in USD",
    ),
    key(
        "compaction.threshold",
        Kind::Ratio,
        Applies::Live,
        "fraction of the context window that triggers compaction (default 0.8)",
    ),
    key(
        "compaction.memoryFlush.enabled",
        Kind::Bool,
        Applies::Live,
        "before compaction, one silent model call may append notes to today's daily note (default true)",
    ),
    key(
        "compaction.memoryFlush.model",
        Kind::Str,
        Applies::Live,
        "model of the memory-flush call (default: the session's model)",
    ),
    key(
        "ui.stream",
        Kind::Bool,
        Applies::Live,
        "stream model output",
    ),
    key(
        "ui.show_thinking",
        Kind::OneOf(&["off", "collapsed", "expanded"]),
        Applies::Live,
        "how thinking is displayed",
    ),
    key(
        "ui.theme",
        Kind::OneOf(&["dark", "light", "mono"]),
        Applies::Display,
        "TUI colour theme",
    ),
    key(
        "ui.editor_mode",
        Kind::OneOf(&["emacs", "vi"]),
        Applies::Display,
        "input box editing mode",
    ),
    key(
        "ui.output_style",
        Kind::OneOf(&["default", "concise", "explanatory"]),
        Applies::Live,
        "answer style",
    ),
    key(
        "ui.usage",
        Kind::OneOf(&["off", "tokens", "full"]),
        Applies::Live,
        "token and cost display",
    ),
    key(
        "trajectory",
        Kind::Bool,
        Applies::NextSession,
        "write .trajectory/ traces in interactive sessions",
    ),
    key(
        "memory.enabled",
        Kind::Bool,
        Applies::NextSession,
        "load and write memory files (MEMORY.md, daily notes); false = no memory and no memory tools",
    ),
    key(
        "memory.bootstrap_chars",
        Kind::NonNegInt,
        Applies::NextSession,
        "characters of memory loaded into the system prompt at session start (default 12000)",
    ),
    key(
        "memorySearch.provider",
        Kind::OneOf(&["local", "gateway", "bm25"]),
        Applies::Live,
        "memory-search vectors: local (shipped model), gateway ({base}/embeddings of the endpoint), bm25 (words only)",
    ),
    key(
        "memorySearch.model",
        Kind::Str,
        Applies::Live,
        "embedding model asked of the endpoint with memorySearch.provider = gateway (default text-embedding-3-small)",
    ),
    key(
        "dreaming.enabled",
        Kind::Bool,
        Applies::Live,
        "dream periodically and at session end: promote recalled daily notes into MEMORY.md, drop stale entries, journal in DREAMS.md",
    ),
    key(
        "dreaming.interval_minutes",
        Kind::Float,
        Applies::Live,
        "with dreaming.enabled: minutes between background dreams of a live session, between turns (default 60; 0 = only at session end)",
    ),
    key(
        "dreaming.stale_days",
        Kind::PosInt,
        Applies::Live,
        "days after which an entry dreaming or a memory flush wrote, and no search returned since, is removed from MEMORY.md (default 60)",
    ),
    key(
        "memory.backend",
        Kind::OneOf(&["builtin", "mcp"]),
        Applies::Live,
        "where /remember, memory-search, /memory and the session's starting memory go: builtin (MEMORY.md files and the local index) or mcp (the memory service memory.mcp_server)",
    ),
    key(
        "memory.mcp_server",
        Kind::Str,
        Applies::Live,
        "with memory.backend = mcp: the name of a server in ~/.yuyao/mcp.json that is the memory service (a project's .mcp.json cannot be)",
    ),
    key(
        "architect.model",
        Kind::Str,
        Applies::Live,
        "model that plans (read-only) in the architect role (default: the session's model)",
    ),
    key(
        "architect.editor_model",
        Kind::Str,
        Applies::Live,
        "model that turns the architect's plan into edits (default: the session's model)",
    ),
    key(
        "git.auto_commit",
        Kind::Bool,
        Applies::Live,
        "commit each batch of the agent's file changes to git (the user's own changes never); --auto-commit",
    ),
    key(
        "tools.bash.timeout_ms",
        Kind::PosInt,
        Applies::Live,
        "default bash timeout in ms",
    ),
    key(
        "tools.defer",
        Kind::Bool,
        Applies::Live,
        "send only the core tools' schemas (read, write, edit, bash, grep, glob) and load the others with tool-search (default true; false sends them all)",
    ),
    key(
        "tools.output_chars",
        Kind::PosInt,
        Applies::Live,
        "longest tool result the model sees, in characters (default 10000, at least 1000): past it a head and a tail, the whole output in a spill file the model can read",
    ),
    key(
        "agents.max_parallel",
        Kind::PosInt,
        Applies::Live,
        "how many sub-agents of one reply's task calls run at once (default 2)",
    ),
    key(
        "goal.max_rounds",
        Kind::PosInt,
        Applies::Live,
        "how many rounds /goal (and /loop without --max) runs at most (default 10)",
    ),
    key(
        "tools.max_consecutive_blocked_tool_calls_per_turn",
        Kind::PosInt,
        Applies::Live,
        "refused tool calls permitted in a row (default 3); the turn's total permits 2x, 4x while planning, 1x in recovery mode",
    ),
    key(
        "tools.max_tool_calls_per_turn",
        Kind::PosInt,
        Applies::Live,
        "tool calls one turn may make (unset: unlimited; planning gets at least 120)",
    ),
    key(
        "tools.preview_budget_kib",
        Kind::NonNegInt,
        Applies::Live,
        "tool output shown to the model in one stretch of research, in KiB (default 32; a change or a test run starts a new one; 0: no budget): past it, inspections are refused",
    ),
    key(
        "planning.preview_budget_kib",
        Kind::NonNegInt,
        Applies::Live,
        "tool output shown to the model in one planning turn, in KiB (default 96; 0: no budget): past it, the plan is drafted from what was gathered",
    ),
    key(
        "default_primary_agent",
        Kind::OneOf(&["build", "plan"]),
        Applies::NextSession,
        "the workflow a session starts in: build, or plan (the planning workflow)",
    ),
    key(
        "hooks.max_stop_blocks",
        Kind::NonNegInt,
        Applies::Live,
        "how many times a failing Stop hook (quality gate) sends the model back to work in one turn (default 3)",
    ),
    key(
        "verification.enabled",
        Kind::Bool,
        Applies::Live,
        "run the project's test/lint command after a turn's edits, before the final answer (default true)",
    ),
    key(
        "verification.command",
        Kind::Str,
        Applies::Live,
        "the verification command (default: detected from AGENTS.md, package.json, Makefile, Cargo.toml, Python, go.mod)",
    ),
    key(
        "verification.timeout_s",
        Kind::PosInt,
        Applies::Live,
        "timeout of the verification command in seconds (default 600)",
    ),
    key(
        "verification.max_rounds",
        Kind::PosInt,
        Applies::Live,
        "--auto-test: test runs after edit batches in one turn (default 5)",
    ),
    key(
        "completion.review",
        Kind::Bool,
        Applies::Live,
        "a completion check that is not clean goes to the model before its final answer, in the same turn (one extra call at most; default true)",
    ),
    key(
        "completion.track_commands",
        Kind::Bool,
        Applies::Live,
        "stamp the work tree around shell commands that may change files, so their edits join the diffstat, the scope check and verification (default true)",
    ),
    key(
        "intent.remind",
        Kind::Bool,
        Applies::Live,
        "a tool batch without a one-line reason makes the next request ask the model for one (default true)",
    ),
    key(
        "features.hooks",
        Kind::Bool,
        Applies::Live,
        "run hooks.json hooks (default true)",
    ),
    key(
        "features.skills",
        Kind::Bool,
        Applies::Live,
        "load skills (SKILL.md) (default true)",
    ),
    key(
        "features.plugins",
        Kind::Bool,
        Applies::Live,
        "load plugins (plugin.json) (default true)",
    ),
    key(
        "features.mcp",
        Kind::Bool,
        Applies::Live,
        "connect to MCP servers",
    ),
    key(
        "mcp.startup_timeout_ms",
        Kind::PosInt,
        Applies::NextSession,
        "how long an MCP server may take to start before it is reported as failed (default 10000)",
    ),
    key(
        "search.provider",
        Kind::Str,
        Applies::Live,
        "web-search provider: searxng:<url> (a SearXNG instance with the JSON format), brave or tavily",
    ),
    key(
        "search.api_key_env",
        Kind::Str,
        Applies::Live,
        "environment variable holding the web-search API key (default BRAVE_API_KEY / TAVILY_API_KEY)",
    ),
    key(
        "browser.executable",
        Kind::Str,
        Applies::Live,
        "Chromium or Chrome binary of the browser tool (default: chromium, chromium-browser or google-chrome on PATH)",
    ),
    key(
        "lsp.enabled",
        Kind::Bool,
        Applies::Live,
        "the lsp tool and language-server diagnostics after edits (as --experimental-lsp)",
    ),
    key(
        "lsp.diagnostics_timeout_ms",
        Kind::PosInt,
        Applies::Live,
        "how long an edit waits for the language server's diagnostics (default 2500)",
    ),
    key(
        "storage.retention_days",
        Kind::NonNegInt,
        Applies::NextSession,
        "spill files, job logs and snapshots of sessions ended longer ago are removed (default 30; 0 keeps them)",
    ),
    key(
        "storage.max_mb",
        Kind::NonNegInt,
        Applies::NextSession,
        "size cap of spill files, job logs and snapshots; the oldest ended sessions' go first (default 1024; 0: no cap)",
    ),
];

/// Older or shorter spellings, read and written as the canonical key.
const ALIASES: &[(&str, &str)] = &[
    ("model", "model.name"),
    ("stream", "ui.stream"),
    ("show_thinking", "ui.show_thinking"),
    ("theme", "ui.theme"),
    ("editor.mode", "ui.editor_mode"),
    ("output.style", "ui.output_style"),
    ("usage", "ui.usage"),
];

/// Namespaces whose keys are all accepted without a warning (values parsed as JSON).
const OPEN_NAMESPACES: &[&str] = &["memory.", "lsp.servers."];

/// The canonical spelling of `key` (aliases folded).
pub fn canonical_key(key: &str) -> &str {
    ALIASES
        .iter()
        .find(|(a, _)| *a == key)
        .map(|(_, c)| *c)
        .unwrap_or(key)
}

fn known(key: &str) -> Option<&'static Key> {
    KNOWN.iter().find(|k| k.name == key)
}

/// How a change of `key` reaches a running session (`None`: not a known key).
pub fn applies(key: &str) -> Option<Applies> {
    known(canonical_key(key)).map(|k| k.applies)
}

/// Every spelling of the canonical `key`: itself first, then its aliases.
fn spellings(key: &str) -> Vec<&str> {
    std::iter::once(key)
        .chain(ALIASES.iter().filter(|(_, c)| *c == key).map(|(a, _)| *a))
        .collect()
}

/// Known keys under `group.` (`ui` → `ui.stream`, `ui.theme`, …).
fn keys_under(group: &str) -> Vec<&'static str> {
    KNOWN
        .iter()
        .map(|k| k.name)
        .filter(|n| {
            n.len() > group.len() && n.starts_with(group) && n[group.len()..].starts_with('.')
        })
        .collect()
}

/// The value stored for the canonical `key` in one file's table: a known key only with a
/// value of its type (a table where a name belongs is never a name), an unknown key as is.
fn lookup_key(t: &Table, key: &str) -> Option<Value> {
    let spec = known(key);
    spellings(key).into_iter().find_map(|k| {
        let v = lookup(t, k)?;
        match spec {
            Some(spec) => coerce(spec, v),
            None => Some(v.clone()),
        }
    })
}

/// A limit's value as a number (a non-number compares as no limit).
fn number(v: &Value) -> f64 {
    v.as_float()
        .or_else(|| v.as_integer().map(|i| i as f64))
        .unwrap_or(f64::INFINITY)
}

/// `v` as a value of the known key `spec`, or `None` when it is not of its type.
fn coerce(spec: &Key, v: &Value) -> Option<Value> {
    match (spec.kind, v) {
        (_, Value::Table(_) | Value::Array(_) | Value::Datetime(_)) => None,
        (Kind::Str, Value::String(_)) => Some(v.clone()),
        (Kind::Str, _) => None,
        _ => typed_value(spec.name, &display(v)).ok().map(|(v, _)| v),
    }
}

/// Keys whose project-layer value names a program to start, an endpoint or a secret to
/// send, or widens what the agent may do. The agent can write `.yuyao/config.toml`, so such a
/// value is read from the project layer only where project extensions are honoured and only
/// while the file's bytes are the ones the user approved (DESIGN §8, [`crate::trust`]).
/// `mode`, `sandbox` and `network` are judged by value at open (`trust::widens`).
pub fn guarded(key: &str) -> bool {
    const GUARDED: &[&str] = &[
        "browser.executable",
        "search.provider",
        "search.api_key_env",
        // Starts language servers (of the user's PATH) on the repository's say.
        "lsp.enabled",
        // Limits a repository could raise past the built-in defaults.
        "agents.max_parallel",
        "goal.max_rounds",
        "verification.max_rounds",
        "tools.max_tool_calls_per_turn",
        "tools.max_consecutive_blocked_tool_calls_per_turn",
        "tools.preview_budget_kib",
        "planning.preview_budget_kib",
        // Which program holds the memory (an MCP server), how often dreaming calls the
        // model, and how soon it deletes entries: the user's choices, never a repository's.
        "memory.backend",
        "memory.mcp_server",
        "dreaming.interval_minutes",
        "dreaming.stale_days",
    ];
    let key = canonical_key(key);
    GUARDED.contains(&key)
        || ["lsp.servers.", "hooks.", "mcp."]
            .iter()
            .any(|p| key.starts_with(p))
}

/// Keys under a namespace whose names the user chooses (a language server's, a hook's, an MCP
/// server's): never "unknown".
pub fn is_open_key(key: &str) -> bool {
    let key = canonical_key(key);
    [
        "lsp.servers.",
        "hooks.",
        "mcp.",
        "extension_sandbox.",
        "memory.",
        "pricing.",
    ]
    .iter()
    .any(|p| key.starts_with(p))
        || maxcost_alias(key)
}

/// The budget spellings run_agent.sh's budget file uses.
fn maxcost_alias(key: &str) -> bool {
    matches!(key, "maxCostUsd" | "max_steps")
}

/// Limits a project may lower but never raise: the effective value is the smallest of the
/// layers' values (no value in a layer means no limit from it).
pub fn lower_only(key: &str) -> bool {
    matches!(canonical_key(key), "maxCostUsd" | "max_steps")
}

pub struct Config {
    paths: Paths,
    /// Whether this session honours project extensions at all (see [`guarded`]); set by the
    /// session at open and when the user trusts the project. Off by default.
    project_programs: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Each layer's file as last parsed, with the stamp it had: a session reads keys many
    /// times per step, and a file is parsed again only when its stamp moved (a hand edit or
    /// another process's `config set` is still seen at the next read).
    parsed: std::sync::Mutex<std::collections::HashMap<PathBuf, (FileStamp, Table)>>,
    /// While a [`Config::hold_stats`] is open: each layer file's stamp as first read since
    /// the last [`Config::recheck`] (`None`: no such file), so the many reads of a step cost
    /// one `stat` per file, not one per key. Outside a hold every read stats the files.
    held: std::sync::Mutex<StatHold>,
}

#[derive(Default)]
struct StatHold {
    depth: usize,
    stamps: std::collections::HashMap<PathBuf, Option<FileStamp>>,
}

/// An open [`Config::hold_stats`]: dropped, the files are stat'ed at every read again.
pub struct StatsHeld<'a>(&'a Config);

impl Drop for StatsHeld<'_> {
    fn drop(&mut self) {
        if let Ok(mut h) = self.0.held.lock() {
            h.depth = h.depth.saturating_sub(1);
            if h.depth == 0 {
                h.stamps.clear();
            }
        }
    }
}

/// What identifies a version of a file without reading it: size, inode, mtime and ctime
/// (nanoseconds). An atomic replace changes the inode; an edit in place the times.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileStamp(u64, u64, i64, i64, i64, i64);

fn file_stamp(meta: &std::fs::Metadata) -> FileStamp {
    use std::os::unix::fs::MetadataExt;
    FileStamp(
        meta.len(),
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
    )
}

impl Config {
    pub fn new(paths: Paths) -> Self {
        Config {
            paths,
            project_programs: Default::default(),
            parsed: Default::default(),
            held: Default::default(),
        }
    }

    /// Until the returned value is dropped, a layer file is stat'ed at its first read after
    /// each [`Config::recheck`] only (a session holds this over a turn and rechecks at every
    /// model and tool call, where it applies hand edits: seen then, as before). The
    /// session's own writes (`set`, `unset`) are seen at once. Holds nest.
    pub fn hold_stats(&self) -> StatsHeld<'_> {
        if let Ok(mut h) = self.held.lock() {
            h.depth += 1;
        }
        StatsHeld(self)
    }

    /// The next read of each layer file stats it again (see [`Config::hold_stats`]).
    pub fn recheck(&self) {
        if let Ok(mut h) = self.held.lock() {
            h.stamps.clear();
        }
    }

    /// The stamp of the file at `path` now, or as first seen in the open hold, and whether
    /// the hold saw no such file (an error other than "not found" is never held).
    fn stamp_of(&self, path: &std::path::Path) -> (Option<FileStamp>, bool) {
        let now = || match std::fs::metadata(path) {
            Ok(m) => Ok(file_stamp(&m)),
            Err(e) => Err(e.kind() == std::io::ErrorKind::NotFound),
        };
        let Ok(mut h) = self.held.lock() else {
            return (now().ok(), false);
        };
        if h.depth == 0 {
            return (now().ok(), false);
        }
        if let Some(seen) = h.stamps.get(path) {
            return (*seen, seen.is_none());
        }
        match now() {
            Ok(stamp) => {
                h.stamps.insert(path.to_path_buf(), Some(stamp));
                (Some(stamp), false)
            }
            Err(true) => {
                h.stamps.insert(path.to_path_buf(), None);
                (None, true)
            }
            Err(false) => (None, false),
        }
    }

    /// Whether guarded project keys may be honoured (still only with approved content).
    pub fn allow_project_programs(&self, on: bool) {
        self.project_programs
            .store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// The project layer, for a guarded read: empty unless project programs are on and the
    /// file's bytes (the very bytes parsed) are the approved ones.
    fn guarded_project_layer(&self) -> Option<Table> {
        if !self
            .project_programs
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return None;
        }
        let path = self.paths.project_config();
        let bytes = std::fs::read(&path).ok()?;
        if !crate::trust::bytes_approved(&self.paths, &path, &bytes) {
            return None;
        }
        std::str::from_utf8(&bytes).ok()?.parse::<Table>().ok()
    }

    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// Names and meanings of the known keys (for `/config` listings and `--help`).
    pub fn known_keys() -> impl Iterator<Item = (&'static str, &'static str)> {
        KNOWN.iter().map(|k| (k.name, k.help))
    }

    /// Every known key with how a change applies to a running session.
    pub fn known_keys_applying() -> impl Iterator<Item = (&'static str, Applies)> {
        KNOWN.iter().map(|k| (k.name, k.applies))
    }

    fn layer_path(&self, layer: Layer) -> PathBuf {
        match layer {
            Layer::User => self.paths.user_config(),
            Layer::Project => self.paths.project_config(),
        }
    }

    fn read_layer(&self, layer: Layer) -> Result<Table, ConfigError> {
        let path = self.layer_path(layer);
        let (stamp, missing) = self.stamp_of(&path);
        if missing {
            // No such file when the hold looked (a file made since is seen at the recheck).
            return Ok(Table::new());
        }
        if let Some(stamp) = stamp
            && let Ok(cache) = self.parsed.lock()
            && let Some((seen, table)) = cache.get(&path)
            && *seen == stamp
        {
            return Ok(table.clone());
        }
        let table = self.parse_layer(&path)?;
        // Kept only when the file did not change while it was read.
        if let Some(stamp) = stamp
            && std::fs::metadata(&path).ok().map(|m| file_stamp(&m)) == Some(stamp)
            && let Ok(mut cache) = self.parsed.lock()
        {
            cache.insert(path, (stamp, table.clone()));
        }
        Ok(table)
    }

    fn parse_layer(&self, path: &std::path::Path) -> Result<Table, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => text.parse::<Table>().map_err(|e| {
                ConfigError::Invalid(format!("{} is not valid TOML: {e}", path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Table::new()),
            Err(e) => Err(ConfigError::Io(format!(
                "cannot read {}: {e}",
                path.display()
            ))),
        }
    }

    /// The effective value of `key` from the files (project over user), or `None`.
    /// A malformed file, or a known key holding a value of the wrong type, is skipped here
    /// (`problems` says why), so reading never fails and never returns a wrong-typed value.
    pub fn get(&self, key: &str) -> Option<Value> {
        let key = canonical_key(key);
        if lower_only(key) {
            let user = self.get_in(key, Layer::User);
            let project = self.get_in(key, Layer::Project);
            return match (user, project) {
                (Some(u), Some(p)) => Some(if number(&p) < number(&u) { p } else { u }),
                (u, p) => u.or(p),
            };
        }
        if guarded(key) {
            return self
                .guarded_project_layer()
                .and_then(|t| lookup_key(&t, key))
                .or_else(|| self.get_in(key, Layer::User));
        }
        [Layer::Project, Layer::User]
            .into_iter()
            .filter_map(|l| self.read_layer(l).ok())
            .find_map(|t| lookup_key(&t, key))
    }

    /// The value of `key` in one layer only (trust decisions need to know where a value
    /// came from).
    pub fn get_in(&self, key: &str, layer: Layer) -> Option<Value> {
        let t = self.read_layer(layer).ok()?;
        lookup_key(&t, canonical_key(key))
    }

    /// Every effective key with its value, flattened to dotted names (alias spellings under
    /// their canonical name; values of the wrong type left out).
    pub fn entries(&self) -> Vec<(String, Value)> {
        let mut merged = std::collections::BTreeMap::new();
        for layer in [Layer::User, Layer::Project] {
            if let Ok(t) = self.read_layer(layer) {
                let mut flat = std::collections::BTreeMap::new();
                flatten("", &t, &mut flat);
                for (k, v) in flat {
                    let canonical = canonical_key(&k).to_string();
                    let v = match known(&canonical) {
                        Some(spec) => match coerce(spec, &v) {
                            Some(v) => v,
                            None => continue,
                        },
                        None => v,
                    };
                    // The canonical spelling wins over an alias in the same file.
                    if canonical != k && flat_has_canonical(&t, &canonical) {
                        continue;
                    }
                    merged.insert(canonical, v);
                }
            }
        }
        // Guarded and lower-only keys are what `get` says, not the project's raw value.
        let special: Vec<String> = merged
            .keys()
            .filter(|k| guarded(k) || lower_only(k))
            .cloned()
            .collect();
        for k in special {
            match self.get(&k) {
                Some(v) => merged.insert(k, v),
                None => merged.remove(&k),
            };
        }
        merged.into_iter().collect()
    }

    /// What is wrong in the configuration files, one user-facing line each: a file that is
    /// not TOML, a known key holding a value of the wrong type (ignored, so a table is never
    /// sent as a model name), a known key holding a table.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for layer in [Layer::User, Layer::Project] {
            let path = self.layer_path(layer);
            let t = match self.read_layer(layer) {
                Ok(t) => t,
                Err(e) => {
                    out.push(format!("{e}; the file is ignored"));
                    continue;
                }
            };
            for spec in KNOWN {
                for spelling in spellings(spec.name) {
                    let Some(v) = lookup(&t, spelling) else {
                        continue;
                    };
                    // `model = { … }` is the `[model]` group, not the alias of `model.name`.
                    if spelling != spec.name && matches!(v, Value::Table(_)) {
                        continue;
                    }
                    if coerce(spec, v).is_none() {
                        out.push(format!(
                            "{}: {spelling} = {} is not {}; it is ignored (fix it with: yuyao config set {} <value>, or yuyao config unset {})",
                            path.display(),
                            display(v),
                            spec.kind.expected(),
                            spec.name,
                            spec.name
                        ));
                    }
                }
            }
        }
        out
    }

    /// Validates and stores `key = raw`. Returns the stored value and a warning for unknown
    /// keys. Writes the project layer when asked, or when the project already sets the key
    /// (otherwise the write would be shadowed and not read back). A key and its sub-keys
    /// never overwrite each other: writing a value where a group of settings is, or under a
    /// key that holds a value, is refused.
    pub fn set(
        &self,
        key: &str,
        raw: &str,
        layer: Option<Layer>,
    ) -> Result<(Value, Option<String>), ConfigError> {
        validate_key(key)?;
        let key = canonical_key(key);
        check_shape(key)?;
        let (value, warning) = typed_value(key, raw)?;
        let layer = layer.unwrap_or_else(|| self.shadowing_layer(key));
        let mut table = self.read_layer(layer)?;
        fold_aliases(&mut table);
        // A table where a known setting's value belongs is a damaged value: the write repairs
        // it. Anywhere else a table is a group of settings the value must not replace.
        if let Some(Value::Table(_)) = lookup(&table, key)
            && known(key).is_none()
        {
            return Err(ConfigError::Invalid(format!(
                "cannot set '{key}': it is a group of settings in {}; set one of its keys, or unset them first",
                self.layer_path(layer).display()
            )));
        }
        insert(&mut table, key, value.clone())?;
        self.write_layer(layer, &table)?;
        Ok((value, warning))
    }

    /// Removes `key` (every spelling of it) from every layer that sets it; returns whether
    /// anything was removed. A group of settings is not removed by its name.
    pub fn unset(&self, key: &str) -> Result<bool, ConfigError> {
        validate_key(key)?;
        let key = canonical_key(key);
        check_shape(key)?;
        let mut removed = false;
        for layer in [Layer::User, Layer::Project] {
            let mut table = self.read_layer(layer)?;
            let mut changed = false;
            for spelling in spellings(key) {
                match lookup(&table, spelling) {
                    Some(Value::Table(_)) if spelling != key => {}
                    Some(Value::Table(_)) if known(key).is_none() => {
                        return Err(ConfigError::Invalid(format!(
                            "cannot unset '{key}': it is a group of settings in {}; unset its keys one by one",
                            self.layer_path(layer).display()
                        )));
                    }
                    Some(_) => changed |= remove(&mut table, spelling),
                    None => {}
                }
            }
            if changed {
                self.write_layer(layer, &table)?;
                removed = true;
            }
        }
        Ok(removed)
    }

    fn shadowing_layer(&self, key: &str) -> Layer {
        // A guarded key the project sets does not shadow the user's value when
        // the project's is not honoured (`get`): the user's own layer takes the write, so a
        // `/config set` there reads back, and a repository never receives the user's choice.
        if guarded(key) && self.guarded_project_layer().is_none() {
            return Layer::User;
        }
        match self.read_layer(Layer::Project) {
            Ok(t) if lookup_key(&t, key).is_some() => Layer::Project,
            _ => Layer::User,
        }
    }

    fn write_layer(&self, layer: Layer, table: &Table) -> Result<(), ConfigError> {
        let path = self.layer_path(layer);
        let text = toml::to_string(table)
            .map_err(|e| ConfigError::Invalid(format!("cannot encode configuration: {e}")))?;
        let write = || crate::write_atomic(&path, text.as_bytes());
        let written = match layer {
            Layer::Project => crate::trust::keep_approval(&self.paths, &path, write),
            Layer::User => write(),
        };
        // Our own write is read back at once, in a hold too.
        if let Ok(mut h) = self.held.lock() {
            h.stamps.remove(&path);
        }
        written.map_err(|e| ConfigError::Io(format!("cannot write {}: {e}", path.display())))
    }
}

/// Older spellings in a file are rewritten as their canonical keys when the file is written
/// (a top-level `model = "x"` would otherwise block the `[model]` group). Where both are
/// present the canonical one wins, as it does when reading.
fn fold_aliases(table: &mut Table) {
    for (alias, canonical) in ALIASES {
        let Some(v) = lookup(table, alias).filter(|v| !matches!(v, Value::Table(_))) else {
            continue;
        };
        let v = v.clone();
        remove(table, alias);
        if lookup(table, canonical).is_none() {
            // A canonical path blocked by a value is left alone: `set` reports it.
            let _ = insert(table, canonical, v);
        }
    }
}

/// Whether the file's table holds `canonical` under its own spelling.
fn flat_has_canonical(t: &Table, canonical: &str) -> bool {
    lookup(t, canonical).is_some_and(|v| !matches!(v, Value::Table(_)))
}

/// A key and its sub-keys cannot both be settings: `ui` is the group of `ui.*` (not a
/// value), and nothing lives under a known key that is a value (`mode.x`).
fn check_shape(key: &str) -> Result<(), ConfigError> {
    let under = keys_under(key);
    if !under.is_empty() {
        return Err(ConfigError::Invalid(format!(
            "'{key}' is a group of settings, not a value: set one of {}",
            under.join(", ")
        )));
    }
    let mut prefix = String::new();
    for part in key.split('.') {
        if !prefix.is_empty() && known(&prefix).is_some() {
            return Err(ConfigError::Invalid(format!(
                "'{key}' cannot be set: '{prefix}' is a setting with a value of its own, not a group"
            )));
        }
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(part);
    }
    Ok(())
}

fn validate_key(key: &str) -> Result<(), ConfigError> {
    let ok = !key.is_empty()
        && key.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
    if ok {
        Ok(())
    } else {
        Err(ConfigError::Invalid(format!(
            "invalid configuration key '{key}': use letters, digits, '_' or '-', dot-separated"
        )))
    }
}

fn typed_value(key: &str, raw: &str) -> Result<(Value, Option<String>), ConfigError> {
    let Some(Key { kind, .. }) = known(key) else {
        let value = json_value(raw);
        if OPEN_NAMESPACES.iter().any(|ns| key.starts_with(ns)) {
            return Ok((value, None));
        }
        return Ok((
            value,
            Some(format!("'{key}' is not a known key; stored anyway")),
        ));
    };
    let bad = |what: &str| ConfigError::Invalid(format!("invalid value '{raw}' for {key}: {what}"));
    let t = raw.trim();
    let v = match kind {
        Kind::Bool => match t.to_ascii_lowercase().as_str() {
            "true" | "on" | "yes" | "1" => Value::Boolean(true),
            "false" | "off" | "no" | "0" => Value::Boolean(false),
            _ => return Err(bad("expected true or false")),
        },
        Kind::Int => Value::Integer(t.parse().map_err(|_| bad("expected an integer"))?),
        Kind::PosInt => match t.parse::<i64>() {
            Ok(n) if n > 0 => Value::Integer(n),
            _ => return Err(bad("expected a positive integer")),
        },
        Kind::NonNegInt => match t.parse::<i64>() {
            Ok(n) if n >= 0 => Value::Integer(n),
            _ => return Err(bad("expected an integer, 0 or more")),
        },
        Kind::Ratio => match t.parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 1.0 => Value::Float(f),
            _ => return Err(bad("expected a number greater than 0 and at most 1")),
        },
        Kind::Float => {
            let f: f64 = t.parse().map_err(|_| bad("expected a number"))?;
            if !f.is_finite() || f < 0.0 {
                return Err(bad("expected a non-negative number"));
            }
            Value::Float(f)
        }
        Kind::Str => match serde_json::from_str::<serde_json::Value>(t) {
            Ok(serde_json::Value::String(s)) => Value::String(s),
            _ => Value::String(raw.to_string()),
        },
        Kind::OneOf(allowed) => {
            let norm = t.trim_matches('"').to_ascii_lowercase().replace('_', "-");
            // Spellings other tools use for the editing modes.
            let norm = match (key, norm.as_str()) {
                ("ui.editor_mode", "vim") => "vi".to_string(),
                ("ui.editor_mode", "default") => "emacs".to_string(),
                _ => norm,
            };
            match allowed.iter().find(|a| **a == norm) {
                Some(a) => Value::String((*a).to_string()),
                None => return Err(bad(&format!("expected one of {}", allowed.join(", ")))),
            }
        }
    };
    Ok((v, None))
}

/// A value typed on the command line: a JSON scalar or array when it parses as one (`3`,
/// `true`, `[1, 2]`, `"text"`), else the text itself.
fn json_value(raw: &str) -> Value {
    fn conv(v: &serde_json::Value) -> Option<Value> {
        Some(match v {
            serde_json::Value::Bool(b) => Value::Boolean(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Integer(i),
                None => Value::Float(n.as_f64()?),
            },
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => {
                Value::Array(a.iter().map(conv).collect::<Option<Vec<_>>>()?)
            }
            serde_json::Value::Null | serde_json::Value::Object(_) => return None,
        })
    }
    serde_json::from_str::<serde_json::Value>(raw.trim())
        .ok()
        .and_then(|v| conv(&v))
        .unwrap_or_else(|| Value::String(raw.to_string()))
}

fn lookup<'a>(t: &'a Table, key: &str) -> Option<&'a Value> {
    // A dotted key may be stored nested (`[a] b = 1`) or quoted (`"a.b" = 1`).
    if let Some(v) = t.get(key) {
        return Some(v);
    }
    let (head, rest) = key.split_once('.')?;
    match t.get(head)? {
        Value::Table(inner) => lookup(inner, rest),
        _ => None,
    }
}

fn insert(t: &mut Table, key: &str, v: Value) -> Result<(), ConfigError> {
    match key.split_once('.') {
        None => {
            t.insert(key.to_string(), v);
            Ok(())
        }
        Some((head, rest)) => {
            let entry = t
                .entry(head.to_string())
                .or_insert_with(|| Value::Table(Table::new()));
            match entry {
                Value::Table(inner) => insert(inner, rest, v),
                _ => Err(ConfigError::Invalid(format!(
                    "cannot set '{key}': '{head}' already holds a value, not a table"
                ))),
            }
        }
    }
}

fn remove(t: &mut Table, key: &str) -> bool {
    if t.remove(key).is_some() {
        return true;
    }
    let Some((head, rest)) = key.split_once('.') else {
        return false;
    };
    let removed = match t.get_mut(head) {
        Some(Value::Table(inner)) => remove(inner, rest),
        _ => false,
    };
    if removed && matches!(t.get(head), Some(Value::Table(inner)) if inner.is_empty()) {
        t.remove(head);
    }
    removed
}

fn flatten(prefix: &str, t: &Table, out: &mut std::collections::BTreeMap<String, Value>) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Table(inner) => flatten(&key, inner, out),
            other => {
                out.insert(key, other.clone());
            }
        }
    }
}

/// Converts a TOML value to JSON for the fronts.
pub fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Integer(i) => serde_json::json!(i),
        Value::Float(f) => serde_json::json!(f),
        Value::Boolean(b) => serde_json::Value::Bool(*b),
        Value::Datetime(d) => serde_json::Value::String(d.to_string()),
        Value::Array(a) => serde_json::Value::Array(a.iter().map(to_json).collect()),
        Value::Table(t) => {
            serde_json::Value::Object(t.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

/// Renders a value for display (`true`, `3`, `ask`), without TOML quotes for strings.
pub fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> (tempfile::TempDir, Config) {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        let proj = d.path().join("proj");
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        let paths = Paths::new(Some(home.to_str().unwrap()), &proj);
        (d, Config::new(paths))
    }

    #[test]
    fn guarded_project_keys_need_approved_content() {
        let (_d, c) = config();
        let paths = c.paths().clone();
        std::fs::create_dir_all(paths.project.join(".yuyao")).unwrap();
        std::fs::write(
            paths.project_config(),
            "[browser]\nexecutable = \"./tools/chromium\"\n[ui]\ntheme = \"light\"\n",
        )
        .unwrap();
        assert_eq!(c.get("browser.executable"), None, "off by default");
        assert!(c.get("ui.theme").is_some(), "plain keys still read");
        c.allow_project_programs(true);
        assert_eq!(c.get("browser.executable"), None, "not approved");
        crate::trust::approve(&paths, &[paths.project_config()]).unwrap();
        assert_eq!(
            c.get("browser.executable").map(|v| display(&v)),
            Some("./tools/chromium".into())
        );
        assert!(c.entries().iter().any(|(k, _)| k == "browser.executable"));
        std::fs::write(
            paths.project_config(),
            "[browser]\nexecutable = \"./tools/evil\"\n",
        )
        .unwrap();
        assert_eq!(c.get("browser.executable"), None, "changed since approval");
        assert!(!c.entries().iter().any(|(k, _)| k == "browser.executable"));
    }

    #[test]
    fn a_hand_edit_is_seen_at_the_next_read_though_layers_are_cached() {
        let (_d, c) = config();
        let user = c.paths().user_config();
        std::fs::create_dir_all(user.parent().unwrap()).unwrap();
        std::fs::write(&user, "[x]\nk = \"aaaa\"\n").unwrap();
        assert_eq!(c.get("x.k").map(|v| display(&v)), Some("aaaa".into()));
        // The same size, the same inode, written in place: still a new version.
        std::fs::write(&user, "[x]\nk = \"bbbb\"\n").unwrap();
        assert_eq!(c.get("x.k").map(|v| display(&v)), Some("bbbb".into()));
        std::fs::remove_file(&user).unwrap();
        assert_eq!(c.get("x.k"), None);
    }

    /// In a hold (a session's turn) a file is stat'ed once per recheck (each model and tool
    /// call): a hand edit is seen at the next recheck, the session's own write at once, and
    /// every read after the hold ends sees the file as it is.
    #[test]
    fn a_hold_reads_each_file_once_per_recheck_and_sees_its_own_writes() {
        let (_d, c) = config();
        let user = c.paths().user_config();
        std::fs::create_dir_all(user.parent().unwrap()).unwrap();
        let k = |c: &Config| c.get("x.k").map(|v| display(&v));
        std::fs::write(&user, "[x]\nk = \"aaaa\"\n").unwrap();
        {
            let _outer = c.hold_stats();
            assert_eq!(k(&c), Some("aaaa".into()));
            std::fs::write(&user, "[x]\nk = \"bbbb\"\n").unwrap();
            assert_eq!(k(&c), Some("aaaa".into()), "held until the recheck");
            c.recheck();
            assert_eq!(k(&c), Some("bbbb".into()));
            {
                let _inner = c.hold_stats();
                c.set("x.k", "cccc", Some(Layer::User)).unwrap();
                assert_eq!(k(&c), Some("cccc".into()), "its own write, at once");
            }
            // A file that did not exist when the hold looked.
            let project = c.paths().project_config();
            std::fs::create_dir_all(project.parent().unwrap()).unwrap();
            assert_eq!(c.get_in("x.k", Layer::Project), None);
            std::fs::write(&project, "[x]\nk = \"dddd\"\n").unwrap();
            assert_eq!(
                c.get_in("x.k", Layer::Project),
                None,
                "held until the recheck"
            );
            c.recheck();
            assert_eq!(k(&c), Some("dddd".into()));
            std::fs::remove_file(&project).unwrap();
            std::fs::write(&user, "[x]\nk = \"eeee\"\n").unwrap();
        }
        assert_eq!(k(&c), Some("eeee".into()), "no hold: every read looks");
    }

    #[test]
    fn a_set_is_not_lost_to_a_project_value_that_is_ignored() {
        let (_d, c) = config();
        let paths = c.paths().clone();
        std::fs::create_dir_all(paths.project.join(".yuyao")).unwrap();
        let planted = "[tools]\npreview_budget_kib = 100000\n";
        std::fs::write(paths.project_config(), planted).unwrap();
        c.set("tools.preview_budget_kib", "0", None).unwrap();
        assert_eq!(
            c.get("tools.preview_budget_kib")
                .and_then(|v| v.as_integer()),
            Some(0)
        );
        // The repository's file is left as it was: the user's choice went to the user's file.
        assert_eq!(
            std::fs::read_to_string(paths.project_config()).unwrap(),
            planted
        );
    }

    #[test]
    fn a_project_lowers_limits_never_raises_them() {
        let (_d, c) = config();
        c.set("maxCostUsd", "0.01", Some(Layer::User)).unwrap();
        c.set("maxCostUsd", "1000", Some(Layer::Project)).unwrap();
        assert_eq!(c.get("maxCostUsd").and_then(|v| v.as_float()), Some(0.01));
        c.set("maxCostUsd", "0.005", Some(Layer::Project)).unwrap();
        assert_eq!(c.get("maxCostUsd").and_then(|v| v.as_float()), Some(0.005));
        c.set("max_steps", "7", Some(Layer::Project)).unwrap();
        assert_eq!(c.get("max_steps").and_then(|v| v.as_integer()), Some(7));
    }

    #[test]
    fn accepted_write_reads_back() {
        let (_d, c) = config();
        let (_, warn) = c.set("k", "v", None).unwrap();
        assert!(warn.is_some());
        assert_eq!(c.get("k"), Some(Value::String("v".into())));
        c.set("editor.mode", "vim", None).unwrap();
        assert_eq!(c.get("ui.editor_mode"), Some(Value::String("vi".into())));
        assert_eq!(c.get("editor.mode"), Some(Value::String("vi".into())));
        c.set("model", "m1", None).unwrap();
        c.set("model.context_window", "4000", None).unwrap();
        assert_eq!(c.get("model.name"), Some(Value::String("m1".into())));
        assert_eq!(c.get("model.context_window"), Some(Value::Integer(4000)));
        assert!(c.set("model.context_window", "0", None).is_err());
        assert!(c.set("compaction.threshold", "1.5", None).is_err());
        c.set("n", "3", None).unwrap();
        assert_eq!(c.get("n"), Some(Value::Integer(3)));
        c.set("arr", "[1, \"a\"]", None).unwrap();
        assert_eq!(
            c.get("arr"),
            Some(Value::Array(vec![
                Value::Integer(1),
                Value::String("a".into())
            ]))
        );
        let (_, warn) = c.set("memory.anything", "true", None).unwrap();
        assert!(warn.is_none());
        assert_eq!(c.get("memory.anything"), Some(Value::Boolean(true)));
        assert!(c.set("stream", "maybe", None).is_err());
        assert!(c.unset("k").unwrap());
        assert_eq!(c.get("k"), None);
    }

    #[test]
    fn project_layer_wins_and_is_written_when_it_shadows() {
        let (_d, c) = config();
        c.set("mode", "plan", Some(Layer::Project)).unwrap();
        c.set("mode", "yolo", Some(Layer::User)).unwrap();
        assert_eq!(c.get("mode"), Some(Value::String("plan".into())));
        c.set("mode", "ask", None).unwrap();
        assert_eq!(c.get("mode"), Some(Value::String("ask".into())));
    }

    #[test]
    fn a_key_and_its_sub_keys_never_overwrite_each_other() {
        let (_d, c) = config();
        // The case: a `model.*` key does not become the model's name.
        c.set("model.max_output_tokens", "2048", None).unwrap();
        assert_eq!(c.get("model.name"), None);
        assert_eq!(c.get("model"), None);
        c.set("model", "m1", None).unwrap();
        assert_eq!(c.get("model.name"), Some(Value::String("m1".into())));
        assert_eq!(c.get("model.max_output_tokens"), Some(Value::Integer(2048)));
        // A value where a group is, and a value under a value, are refused.
        for (k, v) in [
            ("ui", "x"),
            ("compaction", "1"),
            ("memory", "1"),
            ("mode.x", "1"),
        ] {
            let e = c.set(k, v, None).unwrap_err().to_string();
            assert!(
                e.contains("group") || e.contains("value of its own"),
                "{k}: {e}"
            );
        }
        c.set("x.y", "1", None).unwrap();
        let e = c.set("x", "2", None).unwrap_err().to_string();
        assert!(e.contains("group of settings"), "{e}");
        assert!(c.unset("x").is_err(), "a group is not removed by its name");
        assert_eq!(c.get("x.y"), Some(Value::Integer(1)));
        assert!(c.unset("model").unwrap());
        assert_eq!(c.get("model.max_output_tokens"), Some(Value::Integer(2048)));
    }

    #[test]
    fn an_older_spelling_is_folded_into_the_canonical_key() {
        let (_d, c) = config();
        let file = c.paths().user_config();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "model = \"old\"\nstream = false\n").unwrap();
        assert_eq!(c.get("model.name"), Some(Value::String("old".into())));
        c.set("model.context_window", "4000", None).unwrap();
        c.set("model", "new", None).unwrap();
        assert_eq!(c.get("model.name"), Some(Value::String("new".into())));
        assert_eq!(c.get("model.context_window"), Some(Value::Integer(4000)));
        assert!(
            c.unset("ui.stream").unwrap(),
            "the alias spelling is unset too"
        );
        assert_eq!(c.get("ui.stream"), None);
        assert!(c.problems().is_empty(), "{:?}", c.problems());
    }

    #[test]
    fn a_wrong_typed_value_on_disk_is_ignored_and_reported() {
        let (_d, c) = config();
        let file = c.paths().user_config();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        // What the first build left behind, and its siblings.
        std::fs::write(
            &file,
            "[model]\nname = { max_output_tokens = 2048 }\ncontext_window = \"big\"\nmax_output_tokens = 2048\n",
        )
        .unwrap();
        assert_eq!(c.get("model.name"), None);
        assert_eq!(c.get("model.context_window"), None);
        assert_eq!(c.get("model.max_output_tokens"), Some(Value::Integer(2048)));
        let problems = c.problems().join("\n");
        assert!(
            problems.contains("model.name = { max_output_tokens = 2048 } is not a string"),
            "{problems}"
        );
        assert!(problems.contains("model.context_window"), "{problems}");
        assert!(
            !problems.contains("max_output_tokens = 2048 is"),
            "{problems}"
        );
        // `model = { … }` is the `[model]` group: no problem, no model name.
        std::fs::write(&file, "model = { max_output_tokens = 2048 }\n").unwrap();
        assert_eq!(c.get("model.name"), None);
        assert!(c.problems().is_empty());
        let listed: Vec<String> = c.entries().into_iter().map(|(k, _)| k).collect();
        assert_eq!(listed, vec!["model.max_output_tokens".to_string()]);
    }
}
