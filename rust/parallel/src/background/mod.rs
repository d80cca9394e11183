//! Background sessions (`yuyao --bg`, `yuyao agents …`, `/background`): a session or a shell
//! job detached into its own process (new session and process group, output to files), its
//! state in `~/.yuyao/agents/<id>/` (`yuyao_store::bg_agents`), normally in its own git
//! worktree (`yuyao_store::worktree`).
//!
//! `launch.rs` starts one, `worker.rs` is what the detached process runs (the same `Session`
//! as every front, with a handler that turns a question into "awaiting input"), `control.rs`
//! lists and stops them.

#[allow(unused_imports)]
use crate::session_ext::*;

mod control;
mod launch;
mod worker;

pub use control::{list_json, list_text, stop};
pub use launch::{DispatchRequest, dispatch, set_launcher};
pub use worker::run;
pub use yuyao_store::{bg_agents, worktree};

/// `~/.yuyao` (or `YUYAO_HOME`, or `home`) as a session opened in `cwd` would use it.
pub fn home(home: Option<&str>) -> std::path::PathBuf {
    let cwd = std::env::current_dir().unwrap_or_default();
    yuyao_store::Paths::new(home, &cwd).home
}

use yuyao_core::{CoreError, Session};

/// `/background [prompt]` (`/bg`): the conversation continues in a background process (a
/// fork of the saved session file, so this one is left as it is), and this front leaves.
pub(crate) fn background_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let prompt = args.join(" ");
    let has_history = !s.lock().history.is_empty();
    if !has_history && prompt.trim().is_empty() {
        return Err(CoreError::Usage(
            "nothing to continue yet: /background <prompt> starts the work in the background"
                .into(),
        ));
    }
    let mut options = s.options().clone();
    options.cwd = Some(s.cwd());
    options.continue_last = false;
    options.resume = has_history.then(|| s.session_id());
    options.fork_session = has_history;
    options.headless = false;
    let task = if prompt.trim().is_empty() {
        "Continue the work from where the conversation left off.".to_string()
    } else {
        prompt
    };
    let status = dispatch(DispatchRequest {
        task,
        options,
        in_place: true,
        ..Default::default()
    })
    .map_err(CoreError::Failed)?;
    s.lock().exit_requested = true;
    Ok(format!(
        "Detached into background session {id} (in {cwd}).\n\
         Watch it: yuyao agents list · attach: yuyao agents attach {id} · stop: yuyao agents stop {id}",
        id = status.id,
        cwd = status.cwd
    ))
}

/// The slash commands of this feature (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "background",
    commands: &[yuyao_core::cmd!(
        "background",
        ["bg"],
        "[prompt]",
        "detach the session into the background",
        Some(crate::background::background_command)
    )],
    front_calls: crate::front_calls::BACKGROUND,
    ..yuyao_core::Feature::NONE
};
