//! The Session every front drives: options resolved against the layered configuration, the
//! conversation, the switches (mode, role, …), limits and accounting. It makes no model call
//! and opens no connection until the first turn.

use crate::handler::Handler;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;
use yuyao_model::Pricing;
use yuyao_policy::{Policy, Rule};
use yuyao_protocol::{
    Curiosity, Event, Message, Mode, NetworkAccess, NoticeLevel, Role, SandboxLevel,
    SessionOptions, ShowThinking, ThinkingLevel, Usage,
};
use yuyao_store::sessions::SessionLog;
use yuyao_store::{Config, Paths, Trajectory};
use yuyao_tools::{Registry, ToolContext};

/// Why a session could not be opened or a command could not run. The variant decides how a
/// front reports it (usage error, missing feature, runtime failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// Bad input from the user: unknown command, bad value (exit 2 / ValueError).
    Usage(String),
    /// A known feature that this build does not have yet (exit 1 / NotImplementedError).
    NotAvailable(String),
    /// Something failed while running (exit 1 / RuntimeError).
    Failed(String),
}

impl std::fmt::Display for CoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CoreError::Usage(m) | CoreError::NotAvailable(m) | CoreError::Failed(m) => {
                f.write_str(m)
            }
        }
    }
}

/// How the last turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSummary {
    /// `completed`, `limits_exceeded`, `interrupted`, `error` or `none`.
    pub status: &'static str,
    /// `Submitted`, `Answered`, `LimitsExceeded`, `NotSubmitted`, `Interrupted`, `Error`, `None`.
    pub exit_status: &'static str,
    pub error: Option<String>,
    pub text: String,
}

impl Default for TurnSummary {
    fn default() -> Self {
        TurnSummary {
            status: "none",
            exit_status: "None",
            error: None,
            text: String::new(),
        }
    }
}

pub use yuyao_model::history::History;

/// The mutable state of a session, behind one lock.
pub struct State {
    pub history: History,
    pub policy: Policy,
    /// The project is trusted: its widening settings apply.
    pub trusted: bool,
    /// What an untrusted project's settings asked for and did not get.
    pub ignored_project_settings: Vec<String>,
    pub stream: bool,
    pub show_thinking: ShowThinking,
    pub thinking: Option<ThinkingLevel>,
    pub curiosity: Curiosity,
    pub model_override: Option<String>,
    pub max_steps: Option<u32>,
    pub max_cost_usd: Option<f64>,
    pub cost_usd: f64,
    pub usage: Usage,
    pub last_usage: Usage,
    pub steps: u32,
    pub last_turn: TurnSummary,
    pub exit_requested: bool,
    pub trajectory: Trajectory,
    /// The session tree file (`~/.yuyao/sessions/<id>.jsonl`) and how many messages of
    /// `history` it already holds.
    pub log: SessionLog,
    pub logged: usize,
    /// `/usage off|tokens|full`: what the fronts show after each call.
    pub usage_display: String,
    /// `ui.output_style` in force (the system prompt keeps the one it was built with).
    pub output_style: String,
    /// The conversation's system prompt and what the requests told the model since
    /// (`None`: built at the next call). Reset whenever the history is replaced.
    pub prefix: Option<crate::state_notes::Prefix>,
    /// A tool batch could have moved git HEAD since it was last read.
    pub git_stale: bool,
    /// Notes for the model appended before its next call (a memory file edited by hand, a
    /// nested AGENTS.md met for the first time): never a rewrite of earlier messages.
    pub pending_notes: Vec<String>,
    /// Notes for the next request only, never kept in the history (the missing-intent
    /// reminder): a long silent session does not grow by one per step, and the next
    /// request's prefix still matches this one's up to the note (prompt cache).
    pub view_notes: Vec<String>,
    /// The "ceiling cannot be enforced without prices" warning was shown.
    pub warned_unpriced_ceiling: bool,
    /// Repo maps sent with earlier prompts (request-view notes, not history) and the tag
    /// cache kept between turns.
    pub repo_maps: yuyao_repomap::Maps,
    /// The main loop's requests as they grow (`context.rs`).
    pub request_cache: crate::context::RequestCache,
    /// The configuration files as last seen, to apply hand edits at the next call.
    pub config_seen: std::collections::BTreeMap<String, String>,
    /// Estimated tokens of the last request sent (for the context percentage).
    pub last_request_tokens: u64,
    /// Seconds between the last entry of a resumed session and its resumption (a front
    /// shows a `/recap` when this is long).
    pub resumed_idle_s: Option<f64>,
    /// What `/plan off` and `/ask off` / `/debug off` go back to.
    pub mode_before_plan: Option<yuyao_protocol::Mode>,
    pub role_before: Option<yuyao_protocol::Role>,
    /// The last completion check made (status.json's `completion`), set by the feature that
    /// checks a turn.
    pub last_completion: Option<serde_json::Value>,
    /// What tool results showed the model this turn (seed 001's tool-preview budget).
    pub(crate) preview: crate::tool_call::preview_budget::PreviewBudget,
    /// The features' state kept under this lock (`feature.rs`, [`State::part_mut`]).
    pub(crate) parts: crate::feature::LockedParts,
}

impl State {
    /// Appends a message to the conversation and to the session file.
    pub fn push(&mut self, m: Message) {
        self.history.push(m);
        self.sync_log();
    }

    /// Writes the messages the session file does not hold yet (as they happen).
    pub fn sync_log(&mut self) {
        if self.logged > self.history.len() {
            self.logged = self.history.len();
        }
        for m in &self.history[self.logged..] {
            self.log.append_message(m);
        }
        self.logged = self.history.len();
    }

    /// Keeps the first `len` messages, in memory and in the session file (a `truncate`
    /// entry), so a resume replays the conversation the session continued with.
    pub fn truncate_history(&mut self, len: usize) {
        self.sync_log();
        if len >= self.history.len() {
            return;
        }
        self.history.truncate(len);
        self.repo_maps.truncate(len);
        self.reset_prefix();
        self.logged = len;
        self.log
            .append("truncate", serde_json::json!({"keep": len}));
    }

    /// Replaces every message but the last `keep` with `summary` (a user message), in
    /// memory and in the session file (a `compaction` entry).
    pub fn summarize_head(&mut self, summary: String, keep: usize) {
        self.sync_log();
        let keep = keep.min(self.history.len());
        let tail = self.history.split_off(self.history.len() - keep);
        self.log.append(
            "compaction",
            serde_json::json!({"summary": summary, "keep": keep}),
        );
        self.history.replace(
            std::iter::once(Message::user(summary))
                .chain(tail)
                .collect(),
        );
        // The prompts the maps rode with are summarised: the next prompt gets a new one.
        self.repo_maps.truncate(0);
        self.reset_prefix();
        self.logged = self.history.len();
    }

    /// The history was replaced (compaction, clear, rewind, resume, another session): the
    /// next call builds a new system prompt.
    pub fn reset_prefix(&mut self) {
        self.prefix = None;
    }

    /// Records a non-message entry (mode/role/model change, checkpoint…) in the session tree.
    pub fn log_entry(&mut self, kind: &str, fields: serde_json::Value) -> String {
        self.sync_log();
        self.log.append(kind, fields)
    }
}

pub struct Session {
    pub id: String,
    pub(crate) opts: SessionOptions,
    pub(crate) paths: Paths,
    pub(crate) config: Config,
    pub(crate) tools: Registry,
    pub(crate) ctx: Arc<ToolContext>,
    pub(crate) state: Mutex<State>,
    pub(crate) steer: Mutex<Vec<String>>,
    pub(crate) cancel: Arc<Mutex<CancellationToken>>,
    /// A turn is running (`busy.rs`), and the switches typed during it.
    pub(crate) busy: std::sync::atomic::AtomicBool,
    pub(crate) after_turn: Mutex<Vec<String>>,
    pub(crate) handler: Option<Arc<dyn Handler>>,
    pub(crate) pricing: Pricing,
    pub(crate) started: std::time::Instant,
    pub(crate) snaps: Mutex<crate::file_batches::FileSnaps>,
    /// The project's extension files and digests as last seen (`extension_trust.rs`).
    pub(crate) ext_seen: Mutex<Vec<(PathBuf, String)>>,
    /// When that look can be skipped (`extension_trust.rs`, [`crate::extension_trust::ExtWatch`]).
    pub(crate) ext_watch: crate::extension_trust::ExtWatch,
    /// Custom-command problems already reported (each is said once).
    pub(crate) warned: Mutex<std::collections::HashSet<String>>,
    /// The next prompt is a custom command's expanded text (no `@path` attachments).
    pub(crate) expanded_prompt: std::sync::atomic::AtomicBool,
    /// The endpoint refused `reasoning_effort: "xhigh"`: `--thinking max` sends `high`.
    pub(crate) xhigh_refused: std::sync::atomic::AtomicBool,
    /// This session's place among sub-agents: depth, the tree's shared ledger, its forks.
    pub(crate) agents: crate::tree::AgentLink,
    /// Images of the next turn's user message (`user_content.rs`).
    pub(crate) pending_images: Mutex<Vec<String>>,
    /// Convention files already in the context (nested ones join on first use).
    pub(crate) conventions_loaded: Mutex<std::collections::BTreeSet<PathBuf>>,
    /// The features' own state (`feature.rs`).
    pub(crate) parts: crate::feature::Parts,
    /// `/queue followup|collect|interrupt` turns waiting for the running one (`queue.rs`).
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    /// Held while the session runs: retention never touches its files.
    _live: Option<yuyao_store::retention::LiveMark>,
}

/// Like [`parse_or`], but a widening value from the project layer of an untrusted project is
/// skipped (and listed in `ignored`); the user's own layer and narrowing values still apply.
fn trusted_or<T: std::str::FromStr<Err = String>>(
    explicit: Option<T>,
    config: &Config,
    key: &str,
    default: T,
    trusted: bool,
    ignored: &mut Vec<String>,
) -> T {
    if explicit.is_some() || trusted {
        return parse_or(explicit, config, key, default);
    }
    let text = |v: toml::Value| yuyao_store::config::display(&v);
    match config.get_in(key, yuyao_store::Layer::Project).map(text) {
        Some(v) if yuyao_store::trust::widens(key, &v) => {
            ignored.push(format!("{key} = {v}"));
            config
                .get_in(key, yuyao_store::Layer::User)
                .and_then(|u| text(u).parse().ok())
                .unwrap_or(default)
        }
        _ => parse_or(explicit, config, key, default),
    }
}

fn parse_or<T: std::str::FromStr<Err = String>>(
    explicit: Option<T>,
    config: &Config,
    key: &str,
    default: T,
) -> T {
    explicit
        .or_else(|| {
            config
                .get(key)
                .and_then(|v| yuyao_store::config::display(&v).parse().ok())
        })
        .unwrap_or(default)
}

/// The mode a session opens in: `default_primary_agent = "plan"` starts it in planning
/// unless a mode was given explicitly.
pub(crate) fn primary_mode(
    explicit: Option<Mode>,
    config: &yuyao_store::Config,
    mode: Mode,
) -> Mode {
    let plan = config
        .get("default_primary_agent")
        .map(|v| yuyao_store::config::display(&v))
        .is_some_and(|v| v == "plan");
    if explicit.is_none() && plan {
        Mode::Plan
    } else {
        mode
    }
}

/// `given`, else the environment variable `var`; blank counts as unset.
fn given_or_env(given: Option<String>, var: &str) -> Option<String> {
    given
        .or_else(|| std::env::var(var).ok())
        .filter(|v| !v.trim().is_empty())
}

impl Session {
    pub fn open(
        opts: SessionOptions,
        handler: Option<Arc<dyn Handler>>,
    ) -> Result<Session, CoreError> {
        // An option no registered feature handles is refused, not ignored.
        if opts.json_schema.is_some() && crate::feature::answer_format().is_none() {
            return Err(CoreError::Usage(
                "--json-schema: this build has no feature that holds an answer to a schema".into(),
            ));
        }
        let cwd = match &opts.cwd {
            Some(c) => PathBuf::from(c),
            None => std::env::current_dir().map_err(|e| {
                CoreError::Failed(format!("cannot read the current directory: {e}"))
            })?,
        };
        if !cwd.is_dir() {
            return Err(CoreError::Usage(format!(
                "working directory {} does not exist",
                cwd.display()
            )));
        }
        let cwd = cwd
            .canonicalize()
            .map_err(|e| CoreError::Failed(format!("cannot resolve {}: {e}", cwd.display())))?;
        let handed_down = opts
            .project_dir
            .as_deref()
            .map(PathBuf::from)
            .and_then(|p| p.canonicalize().ok());
        let paths = Paths::with_project(opts.home.as_deref(), &cwd, handed_down.as_deref());
        let config = Config::new(paths.clone());

        // Settings a repository ships that widen permissions apply only to a trusted project,
        // and only while the file holding them is the content the user approved (§8).
        let trusted = opts
            .trust_project
            .unwrap_or_else(|| yuyao_store::trust::is_trusted(&paths));
        if opts.trust_project == Some(true)
            && !opts.inherited_trust
            && !opts.no_project_extensions
            && opts.project_extensions != Some(false)
            && !yuyao_store::trust::has_approvals(&paths)
        {
            // `--trust-project` on a project never approved before is the user's gesture: what
            // is there now is pinned, except what a yuyao agent was seen writing. Once pinned,
            // new and changed files wait for `yuyao trust review` (the flag cannot tell the
            // user's edit from a planted one).
            crate::extension_trust::approve_all_but_agent_written(&paths);
        }
        let approved = |f: PathBuf| !f.exists() || yuyao_store::trust::is_approved(&paths, &f);
        let config_trusted = trusted && approved(paths.project_config());
        let mut ignored: Vec<String> = Vec::new();
        let mode = trusted_or(
            opts.mode,
            &config,
            "mode",
            Mode::Ask,
            config_trusted,
            &mut ignored,
        );
        // `default_primary_agent = "plan"`: sessions start in the planning workflow.
        let mode = primary_mode(opts.mode, &config, mode);
        let role = parse_or(opts.role, &config, "role", Role::Execute);
        let sandbox = trusted_or(
            opts.sandbox,
            &config,
            "sandbox",
            SandboxLevel::WorkspaceWrite,
            config_trusted,
            &mut ignored,
        );
        let network = trusted_or(
            opts.network,
            &config,
            "network",
            NetworkAccess::Off,
            config_trusted,
            &mut ignored,
        );
        let mut policy = Policy::new(mode, role, &paths.project);
        policy.home = Some(paths.home.clone());
        policy.sandbox = sandbox;
        policy.network = network;
        policy.headless = opts.headless;
        policy.allow = parse_rules(&opts.allow)?;
        policy.deny = parse_rules(&opts.deny)?;
        let mut permission_warnings: Vec<String> = Vec::new();
        ignored.extend(crate::permissions::load_persisted(
            &mut policy,
            &paths,
            trusted
                && approved(yuyao_store::permissions::path_for(
                    &paths,
                    yuyao_store::permissions::Scope::Project,
                )),
            &mut permission_warnings,
        )?);
        let claude_trusted = trusted
            && [".claude/settings.json", ".claude/settings.local.json"]
                .into_iter()
                .all(|f| approved(paths.project.join(f)));
        let (claude_ignored, claude_warnings) =
            crate::permissions::load_claude_settings(&mut policy, &paths, claude_trusted);
        ignored.extend(claude_ignored);
        if let Some(tools) = &opts.tools {
            for t in tools {
                if yuyao_protocol::canonical_tool_name(t).is_none() {
                    return Err(CoreError::Usage(format!("unknown tool '{t}' in --tools")));
                }
            }
        }
        // A bad option a feature reads (a `--json-schema` file) is a usage error before
        // anything is written or called.
        let checked = crate::feature::Parts::checked(&crate::feature::Opening {
            opts: &opts,
            paths: &paths,
            config: &config,
        })?;

        let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
        let pricing_raw = opts
            .model
            .cost
            .clone()
            .or_else(|| std::env::var("D2A_MODEL_COST").ok());
        let (pricing, cost_warning) = Pricing::parse(pricing_raw.as_deref());

        let trajectory = if opts.no_trajectory
            || (!opts.headless && config.get("trajectory").and_then(|v| v.as_bool()) == Some(false))
        {
            (Trajectory::disabled(), None)
        } else {
            let dir = opts
                .trajectory_dir
                .as_ref()
                .map(PathBuf::from)
                .unwrap_or_else(|| cwd.join(".trajectory"));
            if dir.starts_with(&paths.project) {
                yuyao_store::paths::exclude_from_git(&paths.project, "/.trajectory/");
            }
            Trajectory::open(&dir, &id, Some(&paths.project))
        };
        let spill = paths.home.join("spill").join(&id);
        let live = yuyao_store::retention::mark_live(&spill);
        if !opts.no_session {
            // Old sessions' spill files, job logs and snapshots go, off the startup path.
            yuyao_store::retention::collect_later(
                paths.home.clone(),
                yuyao_store::retention::Limits::from_config(&config),
            );
        }
        let mut ctx = ToolContext::new(cwd.clone(), paths.project.clone(), spill);
        if opts.inherited_trust {
            // A session's own sub-agent, teammate or worker: the session that opened it
            // swept already (a walk of a large tree per sub-agent would cost its start).
        } else if opts.headless {
            // An unattended run diffs the repository next (its submission): the leftovers of
            // a killed write must be gone first.
            yuyao_tools::fs::clean_stale_temps(&paths.project, yuyao_tools::fs::STALE_TEMP_AGE);
        } else {
            yuyao_tools::fs::clean_stale_temps_later(paths.project.clone());
        }
        ctx.sandbox = Mutex::new(policy.confinement());
        ctx.home = Some(paths.home.clone());
        if opts.headless {
            // Nobody cleans up after an unattended run: a test step must not leave
            // `__pycache__/` in the repository (or in the submission).
            ctx.env.push(("PYTHONDONTWRITEBYTECODE", "1"));
        }
        if let Some(ms) = config
            .get("tools.bash.timeout_ms")
            .and_then(|v| v.as_integer())
            && ms > 0
        {
            ctx.set_bash_timeout_ms(ms as u64);
        }
        if let Some(n) = config
            .get("tools.output_chars")
            .and_then(|v| v.as_integer())
            && n > 0
        {
            ctx.set_output_chars(n as usize);
        }

        let max_steps = opts.max_steps.or_else(|| {
            config
                .get("max_steps")
                .and_then(|v| v.as_integer())
                .filter(|n| *n > 0)
                .map(|n| n as u32)
        });
        let max_cost_usd = opts
            .max_cost_usd
            .or_else(|| config.get("maxCostUsd").and_then(|v| v.as_float()));
        let output_style = config
            .get("ui.output_style")
            .map(|v| yuyao_store::config::display(&v))
            .unwrap_or_else(|| "default".into());
        let opening = crate::feature::Opening {
            opts: &opts,
            paths: &paths,
            config: &config,
        };
        let (locked_parts, parts) = (
            crate::feature::LockedParts::open(&opening),
            crate::feature::Parts::open(&opening, checked),
        );
        let state = State {
            history: History::default(),
            policy,
            trusted,
            ignored_project_settings: ignored.clone(),
            stream: opts
                .stream
                .or_else(|| config.get("stream").and_then(|v| v.as_bool()))
                .unwrap_or(true),
            show_thinking: parse_or(
                opts.show_thinking,
                &config,
                "show_thinking",
                ShowThinking::Collapsed,
            ),
            thinking: opts.thinking.or_else(|| {
                config
                    .get("thinking")
                    .and_then(|v| yuyao_store::config::display(&v).parse().ok())
            }),
            curiosity: parse_or(opts.curiosity, &config, "curiosity", Curiosity::Normal),
            // `--model` outranks the configured name (flags > config > D2A_MODEL_NAME).
            model_override: config
                .get("model.name")
                .filter(|_| opts.model.name.is_none())
                .map(|v| yuyao_store::config::display(&v)),
            max_steps,
            max_cost_usd,
            cost_usd: 0.0,
            usage: Usage::default(),
            last_usage: Usage::default(),
            steps: 0,
            last_turn: TurnSummary::default(),
            exit_requested: false,
            trajectory: trajectory.0,
            log: if opts.no_session {
                SessionLog::ephemeral(
                    &yuyao_store::sessions::sessions_dir(&paths.home),
                    &id,
                    &cwd.display().to_string(),
                )
            } else {
                SessionLog::create(
                    &yuyao_store::sessions::sessions_dir(&paths.home),
                    &id,
                    &cwd.display().to_string(),
                )
            },
            logged: 0,
            usage_display: config
                .get("ui.usage")
                .map(|v| yuyao_store::config::display(&v))
                .unwrap_or_else(|| "tokens".into()),
            output_style,
            prefix: None,
            git_stale: false,
            pending_notes: Vec::new(),
            view_notes: Vec::new(),
            last_completion: None,
            preview: Default::default(),
            warned_unpriced_ceiling: false,
            repo_maps: Default::default(),
            request_cache: Default::default(),
            config_seen: crate::context::config_snapshot(&config),
            last_request_tokens: 0,
            resumed_idle_s: None,
            mode_before_plan: None,
            role_before: None,
            parts: locked_parts,
        };
        let session = Session {
            id,
            opts,
            paths,
            config,
            tools: Registry::default(),
            ctx: Arc::new(ctx),
            state: Mutex::new(state),
            steer: Mutex::new(Vec::new()),
            cancel: Arc::new(Mutex::new(CancellationToken::new())),
            busy: Default::default(),
            after_turn: Mutex::new(Vec::new()),
            handler,
            pricing,
            started: std::time::Instant::now(),
            snaps: Mutex::new(Default::default()),
            ext_seen: Mutex::new(Vec::new()),
            ext_watch: Default::default(),
            warned: Mutex::new(Default::default()),
            expanded_prompt: Default::default(),
            xhigh_refused: Default::default(),
            agents: crate::tree::AgentLink::at_open(),
            pending_images: Mutex::new(Vec::new()),
            conventions_loaded: Default::default(),
            parts,
            runtime: Mutex::new(None),
            _live: live,
        };
        for w in [cost_warning, trajectory.1].into_iter().flatten() {
            session.notice(NoticeLevel::Warning, w);
        }
        // A value the configuration files hold in the wrong shape is ignored, and said so.
        for w in claude_warnings.into_iter().chain(permission_warnings) {
            session.notice(NoticeLevel::Warning, w);
        }
        for p in session.config.problems() {
            session.notice(NoticeLevel::Warning, p);
        }
        session.warn_unenforceable_ceiling();
        session.open_saved_session()?;
        crate::permissions::startup_notice(&session);
        session.open_extension_trust();
        let waiting = session.load_extensions();
        session
            .lock()
            .ignored_project_settings
            .extend(waiting.iter().cloned());
        ignored.extend(waiting);
        // Features finish opening (plugins' MCP servers are read once, here).
        for opened in crate::feature::hooks(|f| f.opened) {
            opened(&session);
        }
        if !ignored.is_empty() {
            session.notice(
                NoticeLevel::Warning,
                format!(
                    "this project's settings ask for more than the defaults ({}); they are ignored until you trust the project (/trust in a session, --trust-project with -p, trust_project=True in agent_api)",
                    ignored.join(", ")
                ),
            );
        }
        {
            let mut st = session.lock();
            let fields = serde_json::json!({
                "session_id": session.id,
                "version": yuyao_protocol::VERSION,
                "cwd": session.cwd(),
                "mode": st.policy.mode,
                "role": st.policy.role,
                "sandbox": st.policy.sandbox,
                "network": st.policy.network,
            });
            st.trajectory.record("session_start", fields);
        }
        for started in crate::feature::hooks(|f| f.started) {
            started(&session);
        }
        Ok(session)
    }

    /// The session's state (the conversation, switches, accounting), locked.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session's configuration (files and flags merged; hand edits reloaded per call).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The options the session was opened with.
    pub fn options(&self) -> &SessionOptions {
        &self.opts
    }

    /// Where yuyao keeps its files for this session (`~/.yuyao/`, the project root).
    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// The tools' working context: project root, working directory, the roots a path may
    /// be under, the spill folder, the files read so far.
    pub fn tool_context(&self) -> &yuyao_tools::ToolContext {
        &self.ctx
    }

    /// A front answers this session's requests (permission, ask-user): someone may be there.
    pub fn has_handler(&self) -> bool {
        self.handler.is_some()
    }

    /// Says each warning once per session (a custom command or extension that cannot be used
    /// is said at its first use, not at every one).
    pub fn warn_once(&self, warnings: impl IntoIterator<Item = String>) {
        for warning in warnings {
            let fresh = self
                .warned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(warning.clone());
            if fresh {
                self.notice(NoticeLevel::Warning, warning);
            }
        }
    }

    /// The next prompt is text a command or skill expanded, not the user's: its words attach
    /// no `@path` and trigger nothing on the user's behalf.
    pub fn expand_next_prompt(&self) {
        self.expanded_prompt
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The front's side of this session, shared (a sub-agent's or a fork's requests go to
    /// the same front).
    pub fn shared_handler(&self) -> Option<Arc<dyn Handler>> {
        self.handler.clone()
    }

    /// `token` is what an interrupt of this session cancels now (a goal, a batch, a
    /// workflow, the user's shell command run by a feature).
    pub fn set_interrupt_token(&self, token: &CancellationToken) {
        if let Ok(mut c) = self.cancel.lock() {
            *c = token.clone();
        }
    }

    /// The built-in tools of this session.
    pub fn builtin_tools(&self) -> &Registry {
        &self.tools
    }

    /// When the session was opened.
    pub fn started(&self) -> std::time::Instant {
        self.started
    }

    /// The session's place in its tree of agents (the shared spend and step ledger).
    pub fn agents(&self) -> &crate::tree::AgentLink {
        &self.agents
    }

    /// The front's side of this session (events rendered, requests answered), if any.
    pub fn handler(&self) -> Option<&dyn Handler> {
        self.handler.as_deref()
    }

    /// The predicted next step for the input's greyed suggestion: the first feature's that
    /// predicts one ("" when none does).
    pub fn next_step(&self) -> String {
        crate::feature::hooks(|f| f.next_step)
            .map(|predict| predict(self))
            .find(|step| !step.is_empty())
            .unwrap_or_default()
    }

    /// The session is a sub-agent (its prompts are its parent model's, not the user's).
    pub fn is_sub_agent(&self) -> bool {
        self.agents.is_child()
    }

    /// Variables every program the session starts gets (pager off, no git prompts, …).
    pub fn program_env(&self) -> &[(&'static str, &'static str)] {
        &self.ctx.env
    }

    /// The project's root folder.
    pub fn project_dir(&self) -> &std::path::Path {
        &self.paths.project
    }

    /// What a command that ran turns returns: the fronts with a handler rendered them.
    pub fn turn_answer(&self, text: String) -> String {
        if self.handler.is_some() {
            String::new()
        } else {
            text
        }
    }

    pub fn cwd(&self) -> String {
        self.ctx.cwd().display().to_string()
    }

    pub fn messages(&self) -> Vec<Message> {
        self.lock().history.to_vec()
    }

    /// A key's configured value; for `mode` and `role` when unset, the session's own (what
    /// the defaults and flags made it), so a program never reads None for a mode in force.
    pub fn config_get(&self, key: &str) -> serde_json::Value {
        if let Some(v) = self.config.get(key) {
            return yuyao_store::config::to_json(&v);
        }
        match yuyao_store::config::canonical_key(key) {
            "mode" => serde_json::json!(self.lock().policy.mode.to_string()),
            "role" => serde_json::json!(self.lock().policy.role.to_string()),
            _ => serde_json::Value::Null,
        }
    }

    /// Queues a message for the next model call of the running turn (thread-safe).
    pub fn steer(&self, text: &str) {
        if let Ok(mut q) = self.steer.lock() {
            q.push(text.to_string());
        }
    }

    /// Cancels the running turn: the in-flight request and the running tool process.
    pub fn interrupt(&self) {
        if let Ok(c) = self.cancel.lock() {
            c.cancel();
        }
    }

    pub fn emit(&self, e: Event) {
        if let Some(h) = &self.handler {
            h.event(&e);
        }
    }

    /// Tells the user something (a notice event the fronts render).
    pub fn notice(&self, level: NoticeLevel, text: impl Into<String>) {
        self.emit(Event::Notice {
            level,
            text: text.into(),
        });
    }

    /// The model name in force: `/model`, then `--model`/config, then `D2A_MODEL_NAME`.
    pub fn model_name(&self) -> Option<String> {
        let chosen = self.lock().model_override.clone();
        given_or_env(
            chosen.or_else(|| self.opts.model.name.clone()),
            "D2A_MODEL_NAME",
        )
    }

    /// The model endpoint: `--base-url`/the front's options, then `D2A_MODEL_BASE_URL`.
    pub fn model_base_url(&self) -> Option<String> {
        given_or_env(self.opts.model.base_url.clone(), "D2A_MODEL_BASE_URL")
    }

    /// The model key: the front's (hidden from /proc, see `yuyao_model::key`), then the
    /// variable. Read here only, so the chat client, the memory gateway and the redaction of
    /// tool results agree on which key is in force.
    pub fn model_key(&self) -> Option<String> {
        given_or_env(
            self.opts.model.api_key.clone(),
            yuyao_protocol::MODEL_KEY_VAR,
        )
    }

    /// Runs `fut` on the session's runtime (made on first use, so opening stays cheap).
    pub(crate) fn block_on<F: std::future::Future>(&self, fut: F) -> Result<F::Output, CoreError> {
        let mut guard = self.runtime.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| CoreError::Failed(format!("cannot start the runtime: {e}")))?;
            *guard = Some(rt);
        }
        let rt = guard.as_ref().expect("runtime was just created");
        Ok(rt.block_on(fut))
    }

    pub fn status_json(&self) -> serde_json::Value {
        let model = self.model_name();
        let pricing = self.pricing_status();
        // Before the lock: the window may come from the catalog, by the model's name.
        let window = self.context_window();
        let st = self.lock();
        serde_json::json!({
            "added_dirs": self.ctx.roots().iter().skip(1).map(|d| d.display().to_string()).collect::<Vec<_>>(),
            "session_id": st.log.id(),
            "title": st.log.title(),
            "session_file": st.log.path().display().to_string(),
            "messages": st.history.len(),
            "context_window": window,
            "usage_display": st.usage_display,
            "resumed_idle_s": st.resumed_idle_s,
            "max_cost_usd": st.max_cost_usd,
            "version": yuyao_protocol::VERSION,
            "mode": st.policy.mode,
            "role": st.policy.role,
            "model": model,
            "cwd": self.cwd(),
            "sandbox": st.policy.sandbox,
            "network": st.policy.network,
            "stream": st.stream,
            "show_thinking": st.show_thinking,
            "thinking": st.thinking,
            "curiosity": st.curiosity,
            "cost_usd": st.cost_usd,
            "steps": st.steps,
            "context_percent": context_percent(&st.last_usage, st.last_request_tokens, window),
            "usage": {
                "prompt_tokens": st.usage.prompt_tokens,
                "completion_tokens": st.usage.completion_tokens,
                "cached_tokens": st.usage.cached_tokens,
                "cache_write_tokens": st.usage.cache_write_tokens,
                "reasoning_tokens": st.usage.reasoning_tokens,
                "cache_hit_percent": crate::settings::cache_hit_percent(&st.usage),
            },
            "last_turn": {
                "status": st.last_turn.status,
                "exit_status": st.last_turn.exit_status,
                "error": st.last_turn.error,
            },
            "exit_requested": st.exit_requested,
            "completion": st.last_completion,
            "pricing": pricing,
            "trajectory": st.trajectory.path().map(|p| p.display().to_string()),
        })
    }

    /// Ends the session: the running turn is cancelled, jobs and monitors end, the log and
    /// trace are written, and the runtime's threads are shut down (unless a turn still holds
    /// the runtime: it is then released with the session). Safe to call twice.
    pub fn close(&self) {
        self.interrupt();
        // Features end their part (background sub-agents are stopped, memory dreams).
        for close in crate::feature::all().filter_map(|f| f.close) {
            close(self);
        }
        self.ctx.jobs.shutdown();
        self.settle_snapshots();
        // What the session's programs wrote up to here (SessionEnd hooks, background jobs
        // just stopped) is the agent's: marked before anything outside a session can approve it.
        self.note_agent_extension_writes();
        // The session's browser, if one was started, goes with it.
        self.ctx.browser.close();
        {
            let mut st = self.lock();
            st.sync_log();
            let cost = st.cost_usd;
            st.trajectory
                .record("session_end", serde_json::json!({"cost_usd": cost}));
            st.trajectory = Trajectory::disabled();
        }
        if let Ok(mut slot) = self.runtime.try_lock()
            && let Some(rt) = slot.take()
        {
            rt.shutdown_timeout(std::time::Duration::from_millis(500));
        }
    }
}

/// Context used, in percent of the window: the prompt tokens the endpoint reported for the
/// last call, else the estimate of the last request.
pub fn context_percent(u: &Usage, estimated: u64, window: u64) -> f64 {
    let used = if u.prompt_tokens > 0 {
        u.prompt_tokens
    } else {
        estimated
    };
    let pct = used as f64 * 100.0 / window.max(1) as f64;
    (pct * 10.0).round() / 10.0
}

fn parse_rules(raw: &[String]) -> Result<Vec<Rule>, CoreError> {
    raw.iter()
        .flat_map(|r| split_rule_list(r))
        .map(|r| Rule::parse(&r).map_err(CoreError::Usage))
        .collect()
}

/// `--allowed-tools "Read,Bash(git log:*)"`: commas separate rules except inside parentheses.
fn split_rule_list(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_string());
            }
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}
