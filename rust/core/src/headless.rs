//! The run_agent.sh contract (spec §0.1.1, §9): one unattended turn in `repo_dir`, the trace
//! and `status.json` in `out_dir`, nothing of ours in the repository.

use crate::session::{CoreError, Session};
use serde::Deserialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use yuyao_protocol::{Mode, ModelSettings, SessionOptions};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadlessRequest {
    pub task: String,
    pub repo_dir: String,
    pub out_dir: String,
    #[serde(default)]
    pub model: ModelSettings,
    #[serde(default)]
    pub max_steps: Option<u32>,
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    #[serde(default)]
    pub max_wall_seconds: Option<f64>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Override of `~/.yuyao` (tests).
    #[serde(default)]
    pub home: Option<String>,
}

/// Runs the task; returns the exit code (0 Submitted/LimitsExceeded, 1 error).
pub fn run_headless(req: HeadlessRequest) -> i32 {
    let out_dir = PathBuf::from(&req.out_dir);
    let started_at = chrono::Local::now().to_rfc3339();
    let model_name = req.model.name.clone();
    let mut status = json!({
        "exit_status": "Error",
        "cost_usd": 0.0,
        "steps": 0,
        "model": model_name,
        "started_at": started_at,
    });
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        eprintln!("yuyao: cannot create {}: {e}", out_dir.display());
        return 1;
    }
    let opts = SessionOptions {
        cwd: Some(req.repo_dir.clone()),
        mode: Some(Mode::Yolo),
        model: req.model.clone(),
        stream: Some(false),
        max_steps: req.max_steps,
        max_cost_usd: req.max_cost_usd,
        max_wall_seconds: req.max_wall_seconds,
        headless: true,
        trajectory_dir: Some(out_dir.join(".trajectory").display().to_string()),
        home: req.home.clone(),
        // The headless contract never trusts the repository it is pointed at.
        trust_project: Some(false),
        ..Default::default()
    };
    let session = match Session::open(opts, None) {
        Ok(s) => s,
        Err(e) => {
            status["error"] = json!(e.to_string());
            return finish(&out_dir, status, 1);
        }
    };
    for note in &req.notes {
        session
            .lock()
            .trajectory
            .record("note", json!({"text": note}));
    }
    let stop = install_signal_watch(&session);
    let result = session.chat(&req.task);
    drop(stop);
    let v = session.status_json();
    status["cost_usd"] = v["cost_usd"].clone();
    status["steps"] = v["steps"].clone();
    status["model"] = v["model"].clone();
    status["session_id"] = v["session_id"].clone();
    status["usage"] = v["usage"].clone();
    status["trajectory"] = v["trajectory"].clone();
    let exit_status = v["last_turn"]["exit_status"]
        .as_str()
        .unwrap_or("Error")
        .to_string();
    let (label, code) = match (exit_status.as_str(), &result) {
        ("Submitted", _) => ("Submitted".to_string(), 0),
        ("LimitsExceeded", _) => ("LimitsExceeded".to_string(), 0),
        ("Answered", _) | ("NotSubmitted", Ok(_)) => {
            status["error"] = json!(
                "the model finished without acting on the task (no tool call ran successfully), so the run is not Submitted"
            );
            ("NotSubmitted".to_string(), 1)
        }
        ("Interrupted", _) => {
            status["error"] = json!("interrupted by a signal");
            ("Interrupted".to_string(), 1)
        }
        (other, Err(e)) => {
            status["error"] = json!(e.to_string());
            (
                if other == "None" {
                    "Error".to_string()
                } else {
                    other.to_string()
                },
                1,
            )
        }
        (other, Ok(_)) => (other.to_string(), 1),
    };
    if let Some(e) = v["last_turn"]["error"].as_str()
        && status.get("error").is_none()
        && code != 0
    {
        status["error"] = json!(e);
    }
    if label == "LimitsExceeded"
        && let Some(e) = v["last_turn"]["error"].as_str()
    {
        status["limit"] = json!(e);
    }
    status["exit_status"] = json!(label);
    status["submission"] = json!(git_diff(Path::new(&req.repo_dir)));
    session.close();
    finish(&out_dir, status, code)
}

fn finish(out_dir: &Path, mut status: serde_json::Value, code: i32) -> i32 {
    status["finished_at"] = json!(chrono::Local::now().to_rfc3339());
    status["exit_code"] = json!(code);
    let text = serde_json::to_string_pretty(&status).unwrap_or_else(|_| "{}".into());
    if let Err(e) = yuyao_store::write_atomic(&out_dir.join("status.json"), text.as_bytes()) {
        eprintln!("yuyao: cannot write status.json: {e}");
        return 1;
    }
    code
}

/// SIGINT/SIGTERM interrupt the turn, so status.json is still written. A watcher thread
/// turns the signal into a cancellation; it ends when the returned guard is dropped.
fn install_signal_watch(session: &Session) -> SignalGuard {
    use std::sync::atomic::Ordering;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to a static atomic, which is async-signal-safe.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cancel = session.cancel.clone();
    let stop2 = stop.clone();
    std::thread::spawn(move || {
        while !stop2.load(Ordering::SeqCst) {
            if SIGNALLED.load(Ordering::SeqCst)
                && let Ok(c) = cancel.lock()
            {
                c.cancel();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    SignalGuard { stop }
}

static SIGNALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, std::sync::atomic::Ordering::SeqCst);
}

struct SignalGuard {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The repository's changes: tracked diffs plus untracked files, as a patch (libgit2: no
/// hook, fsmonitor, external diff or filter driver of the repository runs on the host).
fn git_diff(repo: &Path) -> Option<String> {
    yuyao_store::hostgit::worktree_diff(repo)
}

impl From<serde_json::Error> for CoreError {
    fn from(e: serde_json::Error) -> Self {
        CoreError::Usage(format!("invalid request: {e}"))
    }
}
