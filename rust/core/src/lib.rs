//! yuyao-core: the Session every front drives (TUI, `-p`, run_agent, agent_api). Its kernel —
//! the session, the turn loop, the tool pipeline, the command table — and the features that
//! register with it through one [`Feature`] value each (`FEATURES` below; features in crates
//! of their own through [`register_features`]); the kernel never names a feature
//! (docs/ARCHITECTURE.md, "rust/core"; `scripts/import_graph.py` checks it).
//!
//! A front opens a [`Session`], submits turns ([`Session::chat`]) and slash commands
//! ([`Session::dispatch`]), and renders the events its [`Handler`] receives.

mod architect;
mod auto_commit;
mod batch_ledger;
mod busy;
mod cmd_files;
mod cmd_permissions;
mod cmd_session;
mod cmd_sessions;
mod commands;
mod compact;
mod context;
mod conventions;
pub mod extension_trust;
mod feature;
mod file_batches;
use yuyao_extension_files::frontmatter;
mod handler;
mod headless;
use yuyao_extension_files::hooks;
use yuyao_extension_files::instruction_files;
mod permissions;
mod preference_rules;
mod process_profile;
mod prompt;
mod prompt_fit;
mod queue;
mod recovery;
mod repomap;

mod run_app;
mod saved_session;
mod session;
mod settings;
mod side_call;
mod side_question;
mod state_notes;
use yuyao_words::task_kind;
mod thinking;
mod tool_call;
mod tool_defer;
mod tool_offer;
pub mod tree;
mod turn;
mod turn_budget;
mod user_content;
mod verify_app;
mod web_settings;
use yuyao_words::words;
mod workdirs;

pub use commands::{
    Command, Handler as CommandHandler, is_builtin as is_builtin_command, set_mode, set_role,
};
pub use context::{config_snapshot, request_view};
pub use feature::{
    AnswerFormat, BeforeCompact, BesideOutcomes, CallDone, ContextPart, Feature, FeatureTools,
    FinalHooks, FrontCall, Opening, ReplyStep, ResearchEnd, ServerTools, Settled, StopGate,
    TurnHooks, all as features, front_call, front_session, register as register_features,
};
pub use handler::Handler;
pub use headless::{HeadlessRequest, run_headless};
pub use permissions::redact;
pub use process_profile::{Origin, ProcessKind};
pub use session::State;
pub use session::{CoreError, Session, TurnSummary};
pub use settings::config_keys_json;
pub use side_call::SideCallError;
pub use state_notes::push_note;
pub use tool_call::CallOutcome;
pub use tool_call::registry::{CoreRun, Effect, Runner, Spec};
/// What a feature crate's tools are made of: a spec for a tool the session runs (`core`),
/// one output from a tool's `Option` (`one`), and which tools write files (`writes_files`).
pub mod registry {
    pub use crate::tool_call::registry::{Effect, Runner, Spec, core, one, writes_files};
}
pub use words::split_words;

/// Every feature of this build, each one line (`feature.rs`): the kernel reads their
/// commands, tools and hooks from here and names none of their modules. The order is the
/// order of their tools in a request and of their commands in `/help`.
static FEATURES: &[&feature::Feature] = &[
    &cmd_session::FEATURE,
    &auto_commit::FEATURE,
    &cmd_sessions::FEATURE,
    &run_app::FEATURE,
    &verify_app::FEATURE,
    &workdirs::FEATURE,
    &cmd_permissions::FEATURE,
    &cmd_files::FEATURE,
    &side_question::FEATURE,
    &queue::FEATURE,
];
