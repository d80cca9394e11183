//! yuyao-core: the Session every front drives (TUI, `-p`, run_agent, agent_api).
//!
//! A front opens a [`Session`], submits turns ([`Session::chat`]) and slash commands
//! ([`Session::dispatch`]), and renders the events its [`Handler`] receives.

mod ask;
pub mod background;
mod busy;
mod cmd_background;
mod cmd_files;
mod cmd_permissions;
mod cmd_sessions;
mod commands;
mod compact;
mod context;
mod custom_commands;
mod features;
mod frontmatter;
mod handler;
mod headless;
mod hook_review;
mod hook_run;
mod hooks;
mod mcp_servers;
mod memory;
mod next_step;
mod prompt;
mod refs;
mod rule_files;
mod run_inputs;
mod scope;
mod session;
mod settings;
mod state_notes;
mod task_kind;
mod tool_call;
mod tool_offer;
mod turn;
mod web_settings;
mod words;

pub use handler::Handler;
pub use headless::{HeadlessRequest, run_headless};
pub use session::{CoreError, Session, TurnSummary};
pub use settings::config_keys_json;
pub use words::split_words;
