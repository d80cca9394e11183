//! The calls the fronts make by name (`yuyao_core::front_call`): the user's `!` shell and
//! Ctrl+B, Ctrl+X Ctrl+K, and `yuyao agents …` / `--bg` (background sessions, which run
//! without a session of the caller's: their argument names the agents' home). Each argument
//! and answer is JSON; a background call's error is the text the front shows.

use crate::background::{self, DispatchRequest, bg_agents};
use crate::session_ext::*;
use serde_json::Value;
use yuyao_core::{CoreError, FrontCall, front_session};

fn failed(e: String) -> CoreError {
    CoreError::Failed(e)
}

fn field<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// The agents' home named by `args.home` (default `~/.yuyao`, or `YUYAO_HOME`).
fn home(args: &Value) -> std::path::PathBuf {
    background::home(field(args, "home"))
}

fn status_value(status: &bg_agents::Status) -> Value {
    serde_json::to_value(status).expect("a status serializes")
}

/// The sub-agents' feature: Ctrl+X Ctrl+K stops every background sub-agent (says how many).
pub(crate) static SUBAGENTS: &[FrontCall] = &[FrontCall {
    name: "subagents.kill",
    run: |s, _| Ok(front_session(s, "subagents.kill")?.kill_subagents().into()),
}];

/// The `!` shell's feature: the user's `!command` (run in the session's shell, recorded in
/// the conversation; the argument is the command) and Ctrl+B (the running foreground
/// command becomes a job; false when none runs; thread-safe).
pub(crate) static SHELL: &[FrontCall] = &[
    FrontCall {
        name: "shell.run",
        run: |s, command| {
            front_session(s, "shell.run")?
                .user_shell(command.as_str().unwrap_or_default())
                .map(Value::from)
        },
    },
    FrontCall {
        name: "shell.to_background",
        run: |s, _| {
            Ok(front_session(s, "shell.to_background")?
                .background_running()
                .into())
        },
    },
];

/// Background sessions (`--bg`, `yuyao agents …`).
pub(crate) static BACKGROUND: &[FrontCall] = &[
    // The worker of a background session: the front's own program, given `run <dir>`.
    FrontCall {
        name: "background.launcher",
        run: |_, argv| {
            let argv: Vec<String> = serde_json::from_value(argv)
                .map_err(|e| CoreError::Usage(format!("background.launcher: {e}")))?;
            background::set_launcher(argv);
            Ok(Value::Null)
        },
    },
    // Starts a background session (or `exec` job); its status at once.
    FrontCall {
        name: "background.dispatch",
        run: |_, request| {
            let req: DispatchRequest = serde_json::from_value(request)
                .map_err(|e| CoreError::Usage(format!("invalid background request: {e}")))?;
            Ok(status_value(&background::dispatch(req).map_err(failed)?))
        },
    },
    // The detached process's work: runs the session of the folder `args` names; its exit
    // code.
    FrontCall {
        name: "background.run",
        run: |_, dir| {
            let dir = dir.as_str().unwrap_or_default();
            Ok(background::run(std::path::Path::new(dir)).into())
        },
    },
    // The sessions, as a table (`{"text": true}`) or as JSON.
    FrontCall {
        name: "background.list",
        run: |_, args| {
            let home = home(&args);
            Ok(if args.get("text").and_then(Value::as_bool) == Some(true) {
                background::list_text(&home).into()
            } else {
                background::list_json(&home)
            })
        },
    },
    // One session's status (its real state) with its folder and pending question.
    FrontCall {
        name: "background.status",
        run: |_, args| {
            let dir = bg_agents::dir(&home(&args), field(&args, "id").unwrap_or_default())
                .map_err(failed)?;
            let status = bg_agents::read(&dir).map_err(failed)?;
            let mut v = status_value(&status);
            v["state"] = status.effective_state().into();
            v["dir"] = dir.display().to_string().into();
            v["pending"] = bg_agents::pending(&dir).unwrap_or_default();
            Ok(v)
        },
    },
    // The user's answer to a session's pending question.
    FrontCall {
        name: "background.answer",
        run: |_, args| {
            let dir = bg_agents::dir(&home(&args), field(&args, "id").unwrap_or_default())
                .map_err(failed)?;
            bg_agents::answer(&dir, field(&args, "answer").unwrap_or_default()).map_err(failed)?;
            Ok(Value::Null)
        },
    },
    // Stops a session; its status afterwards.
    FrontCall {
        name: "background.stop",
        run: |_, args| {
            let id = field(&args, "id").unwrap_or_default();
            let status = background::stop(&home(&args), id).map_err(failed)?;
            Ok(status_value(&status))
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A call that needs no session of the caller's answers through the kernel's door.
    #[test]
    fn background_calls_answer_without_a_session() {
        let home = tempfile::tempdir().unwrap();
        let args = json!({"home": home.path().to_str().unwrap(), "text": false});
        let list = (BACKGROUND
            .iter()
            .find(|c| c.name == "background.list")
            .unwrap()
            .run)(None, args)
        .unwrap();
        assert_eq!(list, json!([]), "no session yet");
        let err = (SUBAGENTS[0].run)(None, Value::Null).unwrap_err();
        assert!(err.to_string().contains("needs a session"), "{err}");
    }
}
