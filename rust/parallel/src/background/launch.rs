//! Starting a background session: its folder, its worktree, and the detached process.

#[allow(unused_imports)]
use crate::session_ext::*;

use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use yuyao_protocol::SessionOptions;
use yuyao_store::bg_agents::{self, Status};
use yuyao_store::{Paths, worktree};

static LAUNCHER: OnceLock<Vec<String>> = OnceLock::new();

/// The program that runs a background session's worker, given `run <agent dir>`: the Python
/// front registers `[python, -m, yuyao.background]` when the extension loads (the core does not
/// know which interpreter and environment it lives in).
pub fn set_launcher(argv: Vec<String>) {
    let _ = LAUNCHER.set(argv);
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DispatchRequest {
    /// The prompt of a session (empty with `exec`).
    pub task: String,
    /// `--bg --exec`: a shell job instead of a session.
    pub exec: Option<String>,
    pub options: SessionOptions,
    /// The worktree's name (default: the session id).
    pub worktree: Option<String>,
    /// Work in the options' cwd, no new worktree (`/background`: the session's edits so far
    /// are in its own tree).
    pub in_place: bool,
}

fn new_id() -> String {
    format!("bg-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

/// Starts a background session or job and returns its status at once (the process runs on).
pub fn dispatch(req: DispatchRequest) -> Result<Status, String> {
    let launcher = LAUNCHER
        .get()
        .cloned()
        .ok_or("background sessions need the yuyao front (no launcher registered)")?;
    let cwd = match &req.options.cwd {
        Some(c) => PathBuf::from(c),
        None => std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?,
    };
    let cwd = cwd
        .canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", cwd.display()))?;
    let is_exec = req.exec.is_some();
    if is_exec && req.exec.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err("--exec needs a command".into());
    }
    if !is_exec && req.task.trim().is_empty() {
        return Err("a background session needs a task: yuyao --bg \"<task>\"".into());
    }
    let home = Paths::new(req.options.home.as_deref(), &cwd).home;
    let id = new_id();
    let dir = bg_agents::dir(&home, &id)?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // The transcript and the pending question are the user's alone.
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    let mut notes = Vec::new();
    // A session works in its own worktree; a shell job and `/background` where they are.
    let wt = if is_exec || req.in_place {
        None
    } else {
        match worktree::create(&cwd, Some(req.worktree.as_deref().unwrap_or(&id))) {
            Ok(wt) => Some(wt),
            Err(e) if e.contains("not inside a git repository") => {
                notes.push(format!(
                    "{e}: the session works in it directly (no worktree)"
                ));
                None
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        }
    };
    let work_dir = wt
        .as_ref()
        .map(|w| PathBuf::from(&w.path))
        .unwrap_or_else(|| cwd.clone());
    let mut options = req.options.clone();
    options.cwd = Some(work_dir.display().to_string());
    // Never on disk: the worker gets the key in its environment.
    let key = options
        .model
        .api_key
        .take()
        .or_else(yuyao_model::hidden_model_key);
    let write_json = |name: &str, value: &serde_json::Value| {
        yuyao_store::write_atomic(
            &dir.join(name),
            serde_json::to_string_pretty(value)
                .expect("serializes")
                .as_bytes(),
        )
        .map_err(|e| format!("cannot write {name}: {e}"))
    };
    write_json("options.json", &serde_json::to_value(&options).expect("ok"))?;
    if let Some(w) = &wt {
        write_json("worktree.json", &serde_json::to_value(w).expect("ok"))?;
    }
    let created = bg_agents::now();
    let mut status = Status {
        id: id.clone(),
        kind: if is_exec { "exec" } else { "session" }.into(),
        state: bg_agents::STARTING.into(),
        task: req.exec.clone().unwrap_or_else(|| req.task.clone()),
        cwd: work_dir.display().to_string(),
        worktree: wt.as_ref().map(|w| w.path.clone()),
        branch: wt.as_ref().map(|w| w.branch.clone()),
        created_at: created.clone(),
        last_activity: "starting".into(),
        ..Default::default()
    };
    bg_agents::write(&dir, &status)?;
    let pid = spawn_detached(&launcher, &dir, &work_dir, key).inspect_err(|e| {
        let _ = bg_agents::update(&dir, |s| {
            s.state = bg_agents::FAILED.into();
            s.error = Some(e.clone());
        });
    })?;
    status = bg_agents::update(&dir, |s| {
        s.pid = Some(pid);
        s.pid_start = bg_agents::process_start(pid);
    })?;
    if !notes.is_empty() {
        status.last_activity = notes.join("; ");
    }
    Ok(status)
}

/// Starts `launcher run <dir>` in a new session (`setsid`: its own process group, no
/// controlling terminal), stdin from /dev/null, stdout/stderr into the folder.
fn spawn_detached(
    launcher: &[String],
    dir: &Path,
    cwd: &Path,
    key: Option<String>,
) -> Result<u32, String> {
    let (program, args) = launcher.split_first().ok_or("empty launcher")?;
    let out = std::fs::File::create(dir.join("stdout.log")).map_err(|e| e.to_string())?;
    let err = std::fs::File::create(dir.join("stderr.log")).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .arg("run")
        .arg(dir)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    // The key left this process's environment (hide_model_key): the session needs it.
    if let Some(key) = key {
        cmd.env(yuyao_protocol::MODEL_KEY_VAR, key);
    }
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the background process: {e}"))?;
    let pid = child.id();
    // A long-lived front (agent_api) must not keep a zombie; a CLI exits before it matters.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(pid)
}
