//! How a feature joins the kernel (DESIGN: rooms with one-way doors). A feature — memory,
//! sub-agents, planning, the language servers, sessions, reviews … — registers what it adds
//! as one [`Feature`] value: its slash commands, its tools (specs, offered names, schemas),
//! and the session's moments it takes part in (closing, the status line). The kernel
//! (session, turn loop, tool pipeline, command table) reads the registrations and never
//! names a feature's module, so every arrow points from the feature to the kernel.
//!
//! The list of features is the crate root's `FEATURES` (lib.rs, the composition root): a
//! feature is removed by deleting its module and its one line there.

use crate::commands::Command;
use crate::session::{CoreError, Session, State};
use crate::tool_call::registry::Spec;
use serde_json::Value;
use std::any::Any;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use yuyao_protocol::ToolCall;
use yuyao_tools::ToolOutput;

/// What one feature adds to a session.
pub struct Feature {
    pub name: &'static str,
    /// Its slash commands (the `/help` group of each is by name, `commands.rs`).
    pub commands: &'static [Command],
    pub tools: Option<&'static FeatureTools>,
    /// Tools of servers the feature runs (MCP): offered by name `mcp__<server>__<tool>`.
    pub server_tools: Option<&'static ServerTools>,
    /// Its part in a turn's control (the planning workflow, seed 001).
    pub turn: Option<&'static TurnHooks>,
    /// A saved session was resumed (its history installed): the feature restores its part.
    pub restored: Option<fn(&Session)>,
    /// Messages that outlive a compaction (an approved plan, the task list), given the log.
    pub pins: Option<fn(&Session, &yuyao_store::sessions::SessionLog) -> Vec<String>>,
    /// A folder whose reads poll the feature's own draft (the plan draft while planning):
    /// open to the tool-preview budget, still charged.
    pub draft_dir: Option<fn(&Session) -> Option<std::path::PathBuf>>,
    /// The feature's own per-session state, made at open (read back with
    /// [`Session::part`]).
    pub state: Option<MakeState>,
    /// Runs once the session is open: the saved session resumed, extension trust settled,
    /// hooks loaded; before MCP servers start.
    pub opened: Option<fn(&Session)>,
    /// Rewrites a prompt before its turn runs (messages collected while idle go first).
    pub prompt_in: Option<fn(&Session, String) -> String>,
    /// A prompt was submitted (it is in the history): a note to add after it (`@agent`
    /// mentions), or none; a feature may also keep what the prompt says (memory's
    /// preferences).
    pub submitted: Option<fn(&Session, &str) -> Option<String>>,
    /// Before a write tool's call runs (after the policy and the scope guard): `Err` refuses
    /// it with that reason (a `/batch` unit may write only the files it claimed).
    pub write_gate: Option<WriteGate>,
    /// A reply's tool batch is about to run, with the intent line it stated (or was given).
    pub batch_intent: Option<fn(&Session, &str)>,
    /// A tool batch's file changes were journaled as one snapshot batch.
    pub batch_saved: Option<fn(&Session, &yuyao_store::snapshots::Batch)>,
    /// A snapshot batch was undone (`/undo`): a line to add to the report, or none.
    pub batch_undone: Option<BatchUndone>,
    /// Preference rules a shell command must keep (`preference_rules.rs`), beside those of
    /// the instruction files (memory's remembered "use X, not Y").
    pub rules: Option<fn(&Session) -> Vec<crate::preference_rules::Rule>>,
    /// The feature's section of the system prompt (memory's notes), "" for none.
    pub system_section: Option<fn(&Session) -> String>,
    /// Before older messages are summarized away: a look at them first (memory's flush
    /// keeps what is worth keeping). An error stops the compaction.
    pub before_compact: Option<BeforeCompact>,
    /// Text after the system prompt's end (the skills list); returns the prompt.
    pub system_tail: Option<fn(&Session, String) -> String>,
    /// A typed prompt (not a custom command's expansion) was added: messages to follow it
    /// (the bodies of skills its words trigger).
    pub prompt_context: Option<fn(&Session, &str) -> Vec<String>>,
    /// Before each model call, after the settings note: a note of what changed (a skill
    /// added or removed).
    pub step_note: Option<fn(&Session) -> Option<String>>,
    /// After the policy decided a call: a question it would put may be spared (a running
    /// skill's `allowed-tools`); never a refusal. `(action, raw arguments, decision)`.
    pub preapprove: Option<fn(&Session, &yuyao_policy::Action, &str, &mut yuyao_policy::Decision)>,
    /// The project's files (existing now) through which this feature can start a process or
    /// widen what runs unasked, `(home, project)`: held until the user approves them as
    /// they are (DESIGN §8, `extension_trust.rs`). Called without a session (`yuyao trust`).
    pub program_files: Option<fn(&std::path::Path, &std::path::Path) -> Vec<std::path::PathBuf>>,
    /// Hooks this feature adds to the hook files' (a plugin's).
    pub hooks: Option<fn(&Session) -> Vec<crate::hooks::Hook>>,
    /// Whether a hook read from `file` may run now (`false`: its plugin is off).
    pub hook_active: Option<fn(&Session, &std::path::Path) -> bool>,
    /// The project files holding hooks this feature adds, `(home, project)`: what
    /// `/hooks approve` approves beside the hook files.
    pub hook_files: Option<fn(&std::path::Path, &std::path::Path) -> Vec<std::path::PathBuf>>,
    /// Before each model call of a turn, outside the state lock (work of sub-agents that
    /// finished is applied).
    pub step_begin: Option<fn(&Session)>,
    /// Before each model call, under the state lock: what arrived since the last call joins
    /// the history (background jobs' reports, sub-agents' reports, a teammate's mail).
    pub step_inject: Option<fn(&Session, &mut State)>,
    /// After a turn (its result is already decided).
    pub turn_end: Option<fn(&Session)>,
    /// A turn to run after this one (a prompt queued during it).
    pub next_turn: Option<fn(&Session) -> Option<String>>,
    /// A `/name` no table knows: `Some` when this feature runs it (a skill's flow, a custom
    /// command read from disk).
    pub other_command: Option<OtherCommand>,
    /// `/help`: with a name, this feature's help for it (when it owns it); without, the
    /// section it adds to the list (empty for none).
    pub help: Option<HelpSection>,
    /// Runs when the session closes, after the running turn is cancelled and before the
    /// session's end hooks, jobs and servers are shut down.
    pub close: Option<fn(&Session)>,
    /// Runs after a call of a tool that writes files succeeded or failed, before the
    /// PostToolUse hooks' feedback is added: `(tool, the paths it wrote, its result)`.
    pub after_write: Option<AfterWrite>,
    /// Extra lines of `/status` (each starting with a newline), empty when nothing to say.
    pub status_line: Option<fn(&Session) -> String>,
    /// Extra lines of `/context` (starting with a newline), empty when nothing to say.
    pub context_lines: Option<fn(&Session) -> String>,
    /// The session is open and its start recorded, before its SessionStart hooks run.
    pub started: Option<fn(&Session)>,
    /// State made from options that can be wrong (a `--json-schema` file): an error stops
    /// the open as a usage error before anything is written or called.
    pub checked_state: Option<CheckedState>,
    /// The shape a final answer must have (`--json-schema`): the first feature that gives
    /// one decides.
    pub answer_format: Option<&'static AnswerFormat>,
    /// Reads the feature's extension files at open (after extension trust is settled, before
    /// any `opened`) and again when trust changes (`/trust`): what waits for the user's
    /// trust, for the fronts' trust prompt.
    pub load_extensions: Option<fn(&Session) -> Vec<String>>,
    /// A verdict on a tool call after the policy's (PreToolUse hooks): a deny stops it, an
    /// ask puts it to the user, an allow spares the question. `(tool, arguments, command)`.
    pub tool_verdict: Option<ToolVerdict>,
    /// What to tell the model about a call's result (PostToolUse hooks), "" for nothing:
    /// `(tool, arguments, ok, output)`.
    pub tool_feedback: Option<ToolFeedback>,
    /// A prompt is about to join the history: `Err(why)` blocks it, `Ok` adds context.
    pub prompt_gate: Option<PromptGate>,
    /// Quality gates on a final answer (Stop hooks), after the final-answer checks' first
    /// stage.
    pub stop_gate: Option<&'static StopGate>,
    /// A compaction is about to start (its focus, if the user gave one).
    pub compacting: Option<fn(&Session, Option<&str>)>,
    /// The feature's state kept with the session's [`State`], under its lock (facts that
    /// change with the history and are read with it): read back with [`State::part_mut`].
    pub locked_state: Option<MakeLocked>,
    /// A tool call begins, before its admission (its name as the model spelled it when it
    /// has no canonical one).
    pub call_begin: Option<fn(&Session, &str)>,
    /// The pipeline's gate for a call that writes files or runs a program, judged from its
    /// typed arguments after the hooks (the turn's declared scope): `Err` refuses it.
    pub change_gate: Option<ChangeGate>,
    /// A built-in tool is about to run (admitted): `(tool, action, may change the repo)`.
    pub before_run: Option<fn(&Session, &str, &yuyao_policy::Action, bool)>,
    /// A built-in tool ran: its output may gain a note (the files a command changed).
    pub after_run: Option<AfterRun>,
    /// A call's result is final (capped, redacted, charged): every call, whatever ran it.
    pub call_done: Option<fn(&Session, &CallDone)>,
    /// `ask-user` had nobody to answer (headless): the question the agent answered by
    /// assuming (the completion check lists it as "assumed: …").
    pub assumed: Option<fn(&Session, &str)>,
    /// `ask-user` is answered by the feature before anyone is asked (headless planning's
    /// interview: the absent human's answer once, then a refusal); `None` to let it ask.
    pub ask_answer: Option<fn(&Session) -> Option<yuyao_tools::ToolOutput>>,
    /// The predicted next step for the input's greyed suggestion ("" when none).
    pub next_step: Option<fn(&Session) -> String>,
    /// A configured MCP server failed to start (name, why): the feature that uses it says so
    /// its own way (`true`: said; memory's service falls back to its files).
    pub server_failed: Option<fn(&Session, &str, &str) -> bool>,
    /// Folders of one kind (`commands`, `skills`, `agents`) that extensions bring (the
    /// active plugins'), with their source and the extension's name.
    pub extension_dirs: Option<ExtensionDirs>,
    /// A headless task that is this feature's command line (`/flow:<name> …`, `/skill <name>
    /// …`) runs as that command instead of as a prompt.
    pub task_command: Option<fn(&str) -> bool>,
    /// The user message a typed prompt becomes, with what its words reference attached
    /// (`@path`, `@SymbolName`); the first feature that gives one decides, else the text.
    pub prompt_message: Option<fn(&Session, &str) -> Option<yuyao_protocol::Message>>,
    /// With the configuration's hot reload before every call: notes about files the feature
    /// reads that changed since (a memory file edited by hand).
    pub reload_notes: Option<fn(&Session) -> Vec<String>>,
    /// A new conversation starts (`/new`, `/clear`): the feature reads its files again.
    pub new_conversation: Option<fn(&Session)>,
    /// What the user said before, as lines with where they come from (memory's entries):
    /// `ask-user` looks there for an answer before asking.
    pub remembered: Option<Remembered>,
    /// The feature's section of the system prompt as `/context` shows it (`true`: the system
    /// prompt was replaced, so the section is not sent).
    pub context_part: Option<fn(&Session, bool) -> ContextPart>,
    /// A turn begins with this prompt (before the prompt joins the history).
    pub turn_begin: Option<fn(&Session, &str)>,
    /// The turn ended: the text it returns, given the summary and the text so far.
    pub turn_result: Option<fn(&Session, &crate::session::TurnSummary, String) -> String>,
    /// A reply's tool batch is about to run: the line that says why (shown above the batch,
    /// given to each call); the first feature that gives one decides.
    pub batch_line: Option<BatchLine>,
    /// A reply came with no tool calls: checks before it stands as the final answer.
    pub final_answer: Option<&'static FinalHooks>,
    /// A batch's calls all ran (their results are in the history).
    pub after_batch: Option<fn(&Session, &CancellationToken)>,
    /// The turn goes on in a new phase under another role (architect's editor): what the
    /// earlier phase was refused no longer counts against it.
    pub new_phase: Option<fn(&mut State)>,
    /// The session is now shared with a front (the TUI, `agent_api`): work that needs the
    /// shared session starts here (memory's periodic dreaming).
    pub shared: Option<fn(&Arc<Session>)>,
    /// Calls a front makes by name ([`front_call`]).
    pub front_calls: &'static [FrontCall],
}

/// A call a front makes by name (the TUI's plan gate and todo list, `yuyao bg …`), so the
/// fronts name no feature crate: removing a feature's crate and its registration line
/// leaves them building, and a call to it answers "not available". The argument and the
/// answer are JSON; `session` is the front's session (`None` for calls made without one,
/// such as `yuyao bg list`).
pub struct FrontCall {
    pub name: &'static str,
    pub run: fn(session: Option<&Arc<Session>>, args: Value) -> Result<Value, CoreError>,
}

/// Runs the front call `name` of whichever feature registered it.
pub fn front_call(
    session: Option<&Arc<Session>>,
    name: &str,
    args: Value,
) -> Result<Value, CoreError> {
    let call = all()
        .flat_map(|f| f.front_calls)
        .find(|c| c.name == name)
        .ok_or_else(|| {
            CoreError::NotAvailable(format!("{name}: that feature is not in this build"))
        })?;
    (call.run)(session, args)
}

/// The session a front call needs (an error for a call made without one).
pub fn front_session<'a>(
    session: Option<&'a Arc<Session>>,
    name: &str,
) -> Result<&'a Arc<Session>, CoreError> {
    session.ok_or_else(|| CoreError::Usage(format!("{name}: needs a session")))
}

impl Session {
    /// The session is shared with a front now: every feature's [`Feature::shared`] moment.
    pub fn shared_with_front(self: &Arc<Self>) {
        for shared in hooks(|f| f.shared) {
            shared(self);
        }
    }
}

impl Feature {
    /// A feature that adds nothing: `Feature { name, commands, ..Feature::NONE }`.
    pub const NONE: Feature = Feature {
        name: "",
        commands: &[],
        tools: None,
        server_tools: None,
        turn: None,
        restored: None,
        pins: None,
        draft_dir: None,
        state: None,
        opened: None,
        prompt_in: None,
        submitted: None,
        write_gate: None,
        batch_intent: None,
        batch_saved: None,
        batch_undone: None,
        rules: None,
        system_section: None,
        before_compact: None,
        system_tail: None,
        prompt_context: None,
        step_note: None,
        preapprove: None,
        program_files: None,
        hooks: None,
        hook_active: None,
        hook_files: None,
        step_begin: None,
        step_inject: None,
        turn_end: None,
        next_turn: None,
        other_command: None,
        help: None,
        close: None,
        after_write: None,
        status_line: None,
        context_lines: None,
        started: None,
        checked_state: None,
        answer_format: None,
        load_extensions: None,
        tool_verdict: None,
        tool_feedback: None,
        prompt_gate: None,
        stop_gate: None,
        compacting: None,
        locked_state: None,
        call_begin: None,
        change_gate: None,
        before_run: None,
        after_run: None,
        call_done: None,
        assumed: None,
        ask_answer: None,
        next_step: None,
        server_failed: None,
        extension_dirs: None,
        task_command: None,
        prompt_message: None,
        reload_notes: None,
        new_conversation: None,
        remembered: None,
        context_part: None,
        turn_begin: None,
        turn_result: None,
        batch_line: None,
        final_answer: None,
        after_batch: None,
        new_phase: None,
        shared: None,
        front_calls: &[],
    };
}

/// Hook types (named so a registration reads as a list of moments, not of signatures).
pub type MakeState = fn(&Opening) -> Box<dyn Any + Send + Sync>;
pub type CheckedState = fn(&Opening) -> Result<Box<dyn Any + Send + Sync>, CoreError>;
/// State under the state lock need not be shared between threads (only moved).
pub type MakeLocked = fn(&Opening) -> Box<dyn Any + Send>;
pub type WriteGate = fn(&Session, &yuyao_policy::Action) -> Result<(), String>;
pub type BatchUndone =
    fn(&Session, &yuyao_store::snapshots::Batch, &yuyao_store::snapshots::Report) -> Option<String>;
pub type OtherCommand = fn(&Session, &str, &str) -> Option<Result<String, CoreError>>;
pub type HelpSection = fn(&Session, Option<&str>) -> Option<String>;
pub type AfterWrite = fn(&Session, &str, &[std::path::PathBuf], &mut ToolOutput);
pub type ChangeGate = fn(
    &Session,
    &str,
    &yuyao_tools::ToolArgs,
    &yuyao_policy::Action,
    &mut yuyao_policy::Decision,
) -> Result<(), String>;
pub type BatchLine = fn(&Session, &str, &[ToolCall]) -> String;
pub type ToolVerdict = fn(&Session, &str, &Value, Option<&str>) -> Option<(Permission, String)>;
pub type PromptGate = fn(&Session, &str) -> Result<Vec<String>, String>;
pub type ToolFeedback = fn(&Session, &str, &Value, bool, &str) -> String;
use yuyao_extension_files::hooks::Permission;

/// Gates a final answer must pass (Stop hooks).
pub struct StopGate {
    /// What failed, if a gate did: `(answer, times the gates already sent the model back)`.
    pub check: fn(&Session, &str, u32) -> Option<String>,
    /// How many times the gates may send the model back in one turn.
    pub max: fn(&Session) -> u32,
}
pub type AfterRun =
    fn(&Session, &str, &yuyao_tools::ToolArgs, &yuyao_policy::Action, &mut ToolOutput);

/// A call's final result, as [`Feature::call_done`] sees it.
pub struct CallDone<'a> {
    /// The tool's name as the model spelled it.
    pub name: &'a str,
    pub arguments: &'a str,
    pub ok: bool,
    /// It ran (it was not refused, unknown or malformed).
    pub ran: bool,
    /// It could have changed the repository.
    pub may_change_repo: bool,
    /// The result the model reads.
    pub text: &'a str,
}

/// The shape a final answer must have, and how the turn loop gets it.
pub struct AnswerFormat {
    /// The note that asks for it, added after the prompt (`None`: no shape is asked).
    pub instruction: fn(&Session) -> Option<String>,
    /// Adds what the request needs to ask for it (`response_format`).
    pub apply: fn(&Session, &mut yuyao_model::ChatRequest),
    /// The endpoint refused what `apply` added: `true` when the call should be made again
    /// without it.
    pub refused: fn(&Session, &yuyao_model::ModelError) -> bool,
    /// Judges a final answer; `repairs` counts the repair turns this turn already gave.
    pub settle: fn(&Session, &str, &mut u32) -> Option<Settled>,
    /// Suspends (`true`) or resumes the shape for turns whose answer is not the final one
    /// (the architect's plan).
    pub suspend: fn(&Session, bool),
}

/// What the turn does with a final answer held to a shape.
pub enum Settled {
    /// Valid: this text (the document, serialized) is the turn's answer.
    Valid(String),
    /// Invalid, first time: this message goes back to the model.
    Repair(String),
    /// Invalid after the repair turn: the turn fails with this.
    Fail(String),
}

/// The registered shape of a final answer, if any.
pub(crate) fn answer_format() -> Option<&'static AnswerFormat> {
    hooks(|f| f.answer_format).next()
}

/// Checks of a final answer, in the order the turn loop makes them.
pub struct FinalHooks {
    /// Before the Stop hooks: `true` sends the model back (its feedback is in the history,
    /// e.g. verification failed).
    pub before_gates: fn(&Session, &CancellationToken) -> bool,
    /// After the Stop hooks, unless the answer is bound to a JSON schema: `true` sends the
    /// model back once more (the answer's own review).
    pub review: fn(&Session, &str) -> bool,
    /// The answer stands (and is not a schema-bound document): why the turn is still not
    /// done whatever it claims (a change was asked and none was made), or `None`.
    pub not_done: fn(&Session) -> Option<String>,
}
pub type Schemas = fn(&Session, &dyn Fn(&str) -> bool) -> Vec<Value>;
pub type Beside = fn(&Session, &[ToolCall], &str, &CancellationToken) -> BesideOutcomes;
/// A boxed future borrowing the session.
pub type SessionFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
pub type ServerCall =
    for<'a> fn(&'a Session, &'a yuyao_mcp::ToolInfo, Value) -> SessionFuture<'a, ToolOutput>;
pub type ResearchEndHook = for<'a> fn(
    &'a Session,
    &'a yuyao_model::ModelClient,
    &'a CancellationToken,
    ResearchEnd,
) -> SessionFuture<'a, Option<crate::session::TurnSummary>>;

/// What a feature's state is made from at open.
pub struct Opening<'a> {
    pub opts: &'a yuyao_protocol::SessionOptions,
    pub paths: &'a yuyao_store::Paths,
    pub config: &'a yuyao_store::Config,
}

/// The features' per-session states, one value per type.
#[derive(Default)]
pub struct Parts(Vec<Box<dyn Any + Send + Sync>>);

impl Parts {
    /// The states that can fail ([`Feature::checked_state`]), made first.
    pub(crate) fn checked(opening: &Opening) -> Result<Parts, CoreError> {
        all()
            .filter_map(|f| f.checked_state)
            .map(|make| make(opening))
            .collect::<Result<Vec<_>, _>>()
            .map(Parts)
    }

    /// Every feature's state: the checked ones, then those made now.
    pub(crate) fn open(opening: &Opening, checked: Parts) -> Parts {
        let mut parts = checked.0;
        parts.extend(all().filter_map(|f| f.state).map(|make| make(opening)));
        Parts(parts)
    }

    pub(crate) fn get<T: Any>(&self) -> Option<&T> {
        self.0.iter().find_map(|b| b.downcast_ref::<T>())
    }
}

/// The features' states kept under the session's state lock ([`Feature::locked_state`]).
#[derive(Default)]
pub struct LockedParts(Vec<Box<dyn Any + Send>>);

impl LockedParts {
    pub(crate) fn open(opening: &Opening) -> LockedParts {
        LockedParts(
            all()
                .filter_map(|f| f.locked_state)
                .map(|make| make(opening))
                .collect(),
        )
    }

    fn get_mut<T: Any>(&mut self) -> Option<&mut T> {
        self.0.iter_mut().find_map(|b| b.downcast_mut::<T>())
    }
}

fn unregistered<T>() -> ! {
    panic!(
        "{} is not registered by any feature (lib.rs FEATURES)",
        std::any::type_name::<T>()
    )
}

impl State {
    /// A registered feature's state kept under the state lock (see [`Session::part`]).
    pub fn part_mut<T: Any>(&mut self) -> &mut T {
        self.parts
            .get_mut::<T>()
            .unwrap_or_else(|| unregistered::<T>())
    }
}

impl Session {
    /// Every feature's extension files read again (at open, and after trust changed): what
    /// waits for the user's trust.
    pub(crate) fn load_extensions(&self) -> Vec<String> {
        hooks(|f| f.load_extensions)
            .flat_map(|load| load(self))
            .collect()
    }

    /// What the features tell the model about a call's result (PostToolUse hooks), one
    /// block, "" for nothing.
    pub fn tool_feedback(&self, tool: &str, args: &Value, ok: bool, output: &str) -> String {
        hooks(|f| f.tool_feedback)
            .map(|feedback| feedback(self, tool, args, ok, output))
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A registered feature's state. Only the feature that registered it asks for it, so a
    /// missing part is a registration bug (said, not hidden).
    pub fn part<T: Any>(&self) -> &T {
        self.parts.get::<T>().unwrap_or_else(|| unregistered::<T>())
    }
}

/// The hooks of one kind, in registration order.
pub(crate) fn hooks<H: Copy + 'static>(
    pick: fn(&'static Feature) -> Option<H>,
) -> impl Iterator<Item = H> {
    all().filter_map(pick)
}

/// The tools a feature runs.
pub struct FeatureTools {
    /// How each is run and adjudicated (`tool_call/registry.rs`).
    pub specs: &'static [Spec],
    /// `(name, one line)` for `/tools`.
    pub summaries: &'static [(&'static str, &'static str)],
    /// The names offered now, before the session's `--tools` filter (a feature that is
    /// switched off, or has nothing to offer, offers none).
    pub names: fn(&Session) -> Vec<&'static str>,
    /// The schemas of the offered tools that pass `allowed` (the session's filter), in the
    /// order the request carries them.
    pub schemas: Schemas,
    /// For a delegated tool (`Runner::Delegated`): runs a reply's calls of it beside the
    /// batch, before the other calls, and returns their outcomes by call id.
    pub beside: Option<Beside>,
}

/// [`Feature::before_compact`]: `(session, client, the older messages, token, max tokens)`.
pub type BeforeCompact = for<'a> fn(
    &'a Session,
    &'a yuyao_model::ModelClient,
    &'a [yuyao_protocol::Message],
    &'a CancellationToken,
    Option<u64>,
) -> SessionFuture<'a, Result<(), yuyao_model::ModelError>>;

/// Tools served by programs the feature runs (MCP servers): listed, called, waited for.
pub struct ServerTools {
    /// The tools offered now.
    pub tools: fn(&Session) -> Vec<yuyao_mcp::ToolInfo>,
    /// Their schemas, in the order a request carries them (after every other tool).
    pub schemas: fn(&Session) -> Vec<Value>,
    /// Runs one with its arguments.
    pub call: ServerCall,
    /// Before a model call: servers still starting get until their deadline to offer tools.
    pub wait_started: for<'a> fn(&'a Session) -> SessionFuture<'a, ()>,
    /// The running servers' client, once the configured servers are synced (`None`: none
    /// runs); a feature that talks to one server itself (memory's service) uses it.
    pub manager: fn(&Session) -> Option<std::sync::Arc<yuyao_mcp::Manager>>,
    /// A server's failure was already said by the feature that uses it: not said again.
    pub failure_said: fn(&Session, &str),
}

impl Session {
    /// The running MCP servers' client, synced with the configuration (`None`: none runs).
    pub fn mcp_manager(&self) -> Option<std::sync::Arc<yuyao_mcp::Manager>> {
        all()
            .filter_map(|f| f.server_tools)
            .find_map(|t| (t.manager)(self))
    }

    /// A server's failure was said by the feature that uses it: the server feature is quiet.
    pub fn mcp_failure_said(&self, server: &str) {
        for t in all().filter_map(|f| f.server_tools) {
            (t.failure_said)(self, server);
        }
    }

    /// Folders of `kind` that extensions bring (plugins' `commands`, `skills`, `agents`).
    pub fn extension_dirs(
        &self,
        kind: &str,
    ) -> Vec<(std::path::PathBuf, crate::hooks::HookSource, String)> {
        crate::feature::hooks(|f| f.extension_dirs)
            .flat_map(|dirs| dirs(self, kind))
            .collect()
    }
}

/// Every server tool offered now.
pub(crate) fn server_tools(s: &Session) -> Vec<yuyao_mcp::ToolInfo> {
    all()
        .filter_map(|f| f.server_tools)
        .flat_map(|t| (t.tools)(s))
        .collect()
}

/// How a feature takes part in a turn's control.
pub struct TurnHooks {
    /// Before the prompt joins the history: `Some(text)` answers it without a model call
    /// (an intent phrase typed at a waiting plan).
    pub intercept: fn(&Session, &str) -> Option<String>,
    /// The turn's model-call limit given the session's (an approved plan's implementation
    /// turn gets more).
    pub step_limit: fn(&Session, Option<u32>) -> Option<u32>,
    /// A reply's text, before its tool calls run: `(text, has tool calls)`.
    pub after_reply: fn(&Session, &str, bool) -> ReplyStep,
    /// Research ends: `Some` ends the turn with the feature's own tool-free answer (a plan's
    /// synthesis); `None` leaves the kernel's way.
    pub research_end: ResearchEndHook,
}

/// What a feature makes of a reply's text.
pub enum ReplyStep {
    /// Nothing: the turn goes on.
    Go,
    /// The feature sent feedback: a reply without tool calls asks the model again.
    Again,
    Stop(crate::session::TurnSummary),
}

/// Why research ends.
#[derive(Clone)]
pub enum ResearchEnd {
    /// A limit or guard: the loop limit, the tool-call budget, the tool-preview budget, a
    /// navigation guard (the reason, for the user and the trace).
    Limit(String),
    /// The model sent two empty replies.
    EmptyTwice,
    /// A final answer came with nothing the feature needed (a headless plan).
    Final,
}

/// The turn hooks of every feature, in registration order.
pub(crate) fn turn_hooks() -> impl Iterator<Item = &'static TurnHooks> {
    hooks(|f| f.turn)
}

/// A feature's section of the system prompt in `/context`: its row, a row per file it loaded
/// and the lines `/context detail` adds.
pub struct ContextPart {
    /// The row's name (`memory`).
    pub name: &'static str,
    /// Characters of the section in the system prompt.
    pub in_prompt: usize,
    /// Characters of what it was made from, on disk.
    pub raw: usize,
    /// A row per file: label, characters on disk, characters sent.
    pub rows: Vec<(String, usize, usize)>,
    /// Lines for `/context detail`, each ending with a newline.
    pub detail: Vec<String>,
}

/// What the user said before: (where from, its lines).
pub type Remembered = fn(&Session) -> Vec<(String, Vec<String>)>;

/// Folders of a kind extensions bring: (folder, source, extension name).
pub type ExtensionDirs =
    fn(&Session, &str) -> Vec<(std::path::PathBuf, crate::hooks::HookSource, String)>;

/// Outcomes of calls run beside a batch, by call id.
pub type BesideOutcomes = std::collections::HashMap<String, crate::tool_call::CallOutcome>;

/// Features from crates outside the core, registered once by the program that assembles
/// them (the Python extension) before its first session opens: those that lead (before the
/// core's own) and those that follow.
static REGISTERED: std::sync::OnceLock<Registered> = std::sync::OnceLock::new();

struct Registered {
    leading: Vec<&'static Feature>,
    trailing: Vec<&'static Feature>,
}

/// Registers the features of crates outside the core (a crate that depends on the core
/// cannot be named by it). `leading` take part before the core's own features (their tools
/// first, their gates asked first), `trailing` after them. Once per process: a second call is
/// refused (`false`), so the set of features never changes under a running session.
pub fn register(leading: &[&'static Feature], trailing: &[&'static Feature]) -> bool {
    REGISTERED
        .set(Registered {
            leading: leading.to_vec(),
            trailing: trailing.to_vec(),
        })
        .is_ok()
}

/// Every feature of this build, in registration order (the order of their tools in a
/// request, of their commands in `/help`, of their moments and close hooks): the leading
/// registered ones, the core's own, then the trailing registered ones.
pub fn all() -> impl Iterator<Item = &'static Feature> + Clone {
    let registered = REGISTERED.get();
    registered
        .into_iter()
        .flat_map(|r| r.leading.iter().copied())
        .chain(crate::FEATURES.iter().copied())
        .chain(
            registered
                .into_iter()
                .flat_map(|r| r.trailing.iter().copied()),
        )
}

/// The registered spec of a tool a feature runs.
pub(crate) fn tool_spec(name: &str) -> Option<&'static Spec> {
    all()
        .filter_map(|f| f.tools)
        .flat_map(|t| t.specs.iter())
        .find(|s| s.name == name)
}

/// The tools of the feature that runs `name` (offered now or not).
pub(crate) fn tools_of(name: &str) -> Option<&'static FeatureTools> {
    all()
        .filter_map(|f| f.tools)
        .find(|t| t.specs.iter().any(|s| s.name == name))
}

/// The feature commands with the name of the feature of each, in registration order.
pub(crate) fn commands() -> impl Iterator<Item = (&'static str, &'static Command)> {
    all().flat_map(|f| f.commands.iter().map(move |c| (f.name, c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_no_registered_feature_handles_is_refused() {
        // The core alone holds no answer to a schema (that feature is a crate of its own).
        let opts = yuyao_protocol::SessionOptions {
            json_schema: Some("schema.json".into()),
            ..Default::default()
        };
        match Session::open(opts, None) {
            Err(CoreError::Usage(why)) => assert!(why.contains("--json-schema"), "{why}"),
            Err(e) => panic!("not a usage error: {e}"),
            Ok(_) => panic!("--json-schema was ignored"),
        }
    }

    #[test]
    fn names_are_unique_across_the_kernel_and_features() {
        let mut features: Vec<&str> = all().map(|f| f.name).collect();
        let n = features.len();
        features.sort_unstable();
        features.dedup();
        assert_eq!(features.len(), n, "two features share a name");
        let mut commands: Vec<&str> = crate::commands::all_named()
            .flat_map(|(_, c)| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect();
        let n = commands.len();
        commands.sort_unstable();
        commands.dedup();
        assert_eq!(
            commands.len(),
            n,
            "a command name or alias is registered twice"
        );
    }

    /// A front's call to a feature this build leaves out is refused as not available (a
    /// front names no feature crate, so leaving one out still builds), and front call names
    /// are unique.
    #[test]
    fn a_front_call_no_feature_registered_is_not_available() {
        match front_call(None, "plan.state", Value::Null) {
            Err(CoreError::NotAvailable(why)) => assert!(why.contains("plan.state"), "{why}"),
            other => panic!("the core alone has no planning feature: {other:?}"),
        }
        let mut names: Vec<&str> = all().flat_map(|f| f.front_calls).map(|c| c.name).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "a front call is registered twice");
    }
}
