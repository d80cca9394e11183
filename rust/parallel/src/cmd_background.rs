//! Background work seen from the session: `/tasks` (`/bashes`), the injection of monitor
//! lines and job ends at the next model call, and the user's `!` shell.

#[allow(unused_imports)]
use crate::session_ext::*;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use yuyao_core::{CoreError, Session, State};
use yuyao_protocol::Message;
use yuyao_tools::jobs::format_list;

/// Lines of a job's output `/tasks show` prints.
const SHOW_LINES: usize = 60;

/// Routes job events (monitor lines, job ends) to the session's handler.
fn attach(s: &Session) {
    if let Some(h) = s.shared_handler() {
        s.tool_context().jobs.set_listener(move |e| h.event(e));
    }
}

pub(crate) trait CmdBackgroundExt {
    fn inject_background(&self, st: &mut State);
    fn background_running(&self) -> bool;
    fn user_shell(&self, command: &str) -> Result<String, CoreError>;
}

impl CmdBackgroundExt for Session {
    /// Appends what background jobs reported since the last model call to the history (one
    /// user message per job), so the model notices it at this call.
    fn inject_background(&self, st: &mut State) {
        for text in self.tool_context().jobs.drain_notifications() {
            // Monitor lines are tool output too: no secret enters the history.
            let text = yuyao_core::redact(self, &st.policy, &text).into_owned();
            st.trajectory.record("background", json!({"text": text}));
            st.history.push(Message::user(text));
        }
    }

    /// `Ctrl+B`: moves the running foreground bash command (the bash tool's, or a `!`
    /// command's) to the background as a job; the tool call returns at once. Thread-safe.
    /// False when no foreground command is running.
    fn background_running(&self) -> bool {
        self.tool_context().jobs.request_detach()
    }

    /// The user's `!command`: runs it in the session cwd (no model call, no approval), returns
    /// the output with its exit status, and records command and output in the conversation
    /// so the model sees them on the next turn. `cd` persists as it does for bash.
    fn user_shell(&self, command: &str) -> Result<String, CoreError> {
        let command = command.trim();
        if command.is_empty() {
            return Err(CoreError::Usage("!: give a shell command to run".into()));
        }
        let token = CancellationToken::new();
        self.set_interrupt_token(&token);
        let cwd = self.cwd();
        // The user's own command: their rights, not the model's sandbox.
        let run = yuyao_tools::exec::run_foreground_as(
            self.tool_context(),
            command,
            self.tool_context().bash_timeout_ms(),
            &token,
            yuyao_tools::exec::Rights::User,
        )
        .map_err(CoreError::Failed)?;
        // The user sees everything; the copy the model gets is redacted like a tool result.
        let policy = self.lock().policy.clone();
        let for_model = yuyao_core::redact(self, &policy, &run.text).into_owned();
        let mut st = self.lock();
        // The user's command may have moved git HEAD: read again before the next call.
        st.git_stale = true;
        st.trajectory.record(
            "user_shell",
            json!({"command": command, "cwd": cwd, "exit_code": run.exit_code, "output": for_model}),
        );
        st.history.push(Message::user(format!(
            "I ran this shell command myself (in {cwd}):\n$ {command}\n{for_model}"
        )));
        Ok(run.text)
    }
}

/// `/tasks` (`/bashes`): list, show or stop background jobs.
pub(crate) fn tasks(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let jobs = &s.tool_context().jobs;
    let id_arg = |what: &str| -> Result<&str, CoreError> {
        match args {
            [_, id] => Ok(id.as_str()),
            _ => Err(CoreError::Usage(format!("usage: /tasks {what} <id>"))),
        }
    };
    match args.first().map(String::as_str) {
        None | Some("list") | Some("ls") => {
            let mut out = format_list(&jobs.list());
            let agents = s.subagent_rows();
            if !agents.is_empty() {
                out = format!("{}\nsub-agents:\n  {}", out.trim_end(), agents.join("\n  "));
            }
            Ok(out)
        }
        Some("show") | Some("output") | Some("inspect") => {
            let id = id_arg("show")?;
            let (info, text) = jobs.tail(id, SHOW_LINES).map_err(CoreError::Usage)?;
            let exit = info
                .exit_code
                .map(|c| format!(", exit code {c}"))
                .unwrap_or_default();
            Ok(format!(
                "{id} ({}): {}{exit}\n$ {}\nlog: {}\n{}",
                match info.kind {
                    yuyao_tools::jobs::JobKind::Bash => "bash",
                    yuyao_tools::jobs::JobKind::Monitor => "monitor",
                },
                info.state.label(),
                info.command,
                info.log.display(),
                if text.is_empty() {
                    "(no output yet)".to_string()
                } else {
                    text
                }
            ))
        }
        Some("stop") | Some("kill") => {
            let target = id_arg("stop")?;
            if let Some(said) = s.stop_subagent(target) {
                return Ok(said);
            }
            let ids: Vec<String> = if target == "all" {
                jobs.list()
                    .into_iter()
                    .filter(|j| j.state == yuyao_tools::jobs::JobState::Running)
                    .map(|j| j.id)
                    .collect()
            } else {
                vec![target.to_string()]
            };
            if ids.is_empty() {
                return Ok("no background job is running".into());
            }
            let mut out = Vec::new();
            for id in ids {
                let info = jobs.stop(&id).map_err(CoreError::Usage)?;
                out.push(format!("{id}: {}", info.state.label()));
            }
            Ok(out.join("\n"))
        }
        Some(other) => Err(CoreError::Usage(format!(
            "unknown /tasks action '{other}': use list, show <id> or stop <id|all>"
        ))),
    }
}

/// The slash commands of this feature (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "cmd_background",
    // Jobs' events reach the front as they happen.
    opened: Some(attach),
    step_inject: Some(|s, st| s.inject_background(st)),
    commands: &[yuyao_core::cmd!(
        "tasks",
        ["bashes"],
        "[list | show <id> | stop <id|all>]",
        "background shells, monitors and sub-agents: list, inspect, stop",
        Some(crate::cmd_background::tasks)
    )],
    front_calls: crate::front_calls::SHELL,
    ..yuyao_core::Feature::NONE
};
