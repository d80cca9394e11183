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
    let started = std::time::Instant::now();
    let deadline = req
        .max_wall_seconds
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| started + std::time::Duration::from_secs_f64(s));
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
    let watch = install_watch(&session, deadline);
    let result = session.chat(&req.task);
    let timed_out = watch.stop();
    let v = session.status_json();
    status["cost_usd"] = v["cost_usd"].clone();
    status["steps"] = v["steps"].clone();
    status["model"] = v["model"].clone();
    status["session_id"] = v["session_id"].clone();
    status["usage"] = v["usage"].clone();
    status["trajectory"] = v["trajectory"].clone();
    let mut exit_status = v["last_turn"]["exit_status"]
        .as_str()
        .unwrap_or("Error")
        .to_string();
    let wall_limit = format!(
        "time limit reached ({} s): the running step was cancelled",
        req.max_wall_seconds.unwrap_or_default()
    );
    if timed_out && exit_status != "Submitted" {
        // The deadline cancelled the turn mid-call or mid-tool: a limit, not an interruption.
        exit_status = "LimitsExceeded".into();
    }
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
    if label == "LimitsExceeded" {
        let why = match v["last_turn"]["error"].as_str() {
            Some(e) if !timed_out => e.to_string(),
            _ => wall_limit,
        };
        status["limit"] = json!(why);
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

/// SIGINT/SIGTERM interrupt the turn, so status.json is still written; the wall-clock
/// deadline cancels it the same way (an in-flight model call or tool included). A watcher
/// thread turns either into a cancellation; [`Watch::stop`] ends and joins it.
fn install_watch(session: &Session, deadline: Option<std::time::Instant>) -> Watch {
    use std::sync::atomic::Ordering;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to a static atomic, which is async-signal-safe.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let timed_out = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cancel = session.cancel.clone();
    let (stop2, timed_out2) = (stop.clone(), timed_out.clone());
    let thread = std::thread::spawn(move || {
        while !stop2.load(Ordering::SeqCst) {
            let late = deadline.is_some_and(|d| std::time::Instant::now() >= d);
            if late {
                timed_out2.store(true, Ordering::SeqCst);
            }
            if (late || SIGNALLED.load(Ordering::SeqCst))
                && let Ok(c) = cancel.lock()
            {
                c.cancel();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    Watch {
        stop,
        timed_out,
        thread: Some(thread),
    }
}

static SIGNALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, std::sync::atomic::Ordering::SeqCst);
}

struct Watch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    timed_out: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    /// Ends the watcher and waits for it; true when the deadline cancelled the turn.
    fn stop(mut self) -> bool {
        self.join();
        self.timed_out.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn join(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.join();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A model server that accepts, reads the request, sends half a body and then stalls.
    fn stalling_server() -> String {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let mut buf = [0u8; 65536];
                let _ = conn.read(&mut buf);
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"choices\":[{\"mess",
                );
                held.push(conn); // never closed: the reply stalls
            }
        });
        url
    }

    #[test]
    fn the_wall_budget_cancels_a_stalled_call() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("repo");
        let req = HeadlessRequest {
            task: "do it".into(),
            repo_dir: repo.display().to_string(),
            out_dir: dir.path().join("out").display().to_string(),
            model: ModelSettings {
                base_url: Some(stalling_server()),
                name: Some("m".into()),
                api_key: Some("k".into()),
                ..Default::default()
            },
            max_steps: Some(5),
            max_cost_usd: None,
            max_wall_seconds: Some(1.0),
            notes: vec![],
            home: Some(dir.path().join("home").display().to_string()),
        };
        let started = std::time::Instant::now();
        let code = run_headless(req);
        assert!(
            started.elapsed().as_secs_f64() < 15.0,
            "{:?}",
            started.elapsed()
        );
        assert_eq!(code, 0);
        let status: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("out/status.json")).expect("status"),
        )
        .expect("json");
        assert_eq!(status["exit_status"], "LimitsExceeded", "{status}");
        assert!(
            status["limit"]
                .as_str()
                .unwrap_or("")
                .contains("time limit"),
            "{status}"
        );
    }
}
