//! The run_agent.sh contract (spec §0.1.1, §9): one unattended turn in `repo_dir`, the trace
//! and `status.json` in `out_dir`, nothing of ours in the repository.

mod run_inputs;

use crate::session::{CoreError, Session};
use serde::Deserialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use yuyao_protocol::{Mode, ModelSettings, SessionOptions};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadlessRequest {
    /// The task's text; or `task_file`, read here (run_agent.sh's `--task-file`).
    #[serde(default)]
    pub task: String,
    #[serde(default)]
    pub task_file: Option<String>,
    /// The limits' file (`--budget-file`); its limits replace the three below.
    #[serde(default)]
    pub budget_file: Option<String>,
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

/// Exit codes of spec §9.
const EXIT_RUNTIME: i32 = 1;
const EXIT_USAGE: i32 = 2;

impl HeadlessRequest {
    /// Reads the task and budget files into the request (usage errors name the file).
    fn read_input_files(&mut self) -> Result<(), String> {
        if let Some(path) = &self.task_file {
            self.task = run_inputs::read_task(Path::new(path))?;
        }
        if self.task.trim().is_empty() {
            return Err("the task is empty".into());
        }
        if let Some(path) = &self.budget_file {
            let budget = run_inputs::read_budget(Path::new(path))?;
            self.max_steps = budget.max_steps;
            self.max_cost_usd = budget.max_cost_usd;
            self.max_wall_seconds = budget.max_wall_seconds;
            self.notes.extend(budget.notes);
        }
        Ok(())
    }
}

/// Runs the task; returns the exit code (0 Submitted/LimitsExceeded, 1 error, 2 usage error).
pub fn run_headless(mut req: HeadlessRequest) -> i32 {
    let started = std::time::Instant::now();
    let out_dir = PathBuf::from(&req.out_dir);
    let started_at = chrono::Local::now().to_rfc3339();
    let mut status = json!({
        "exit_status": "Error",
        "cost_usd": 0.0,
        "steps": 0,
        "model": req.model.name.clone(),
        "started_at": started_at,
        "error": null,
    });
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        eprintln!("yuyao: cannot create {}: {e}", out_dir.display());
        return EXIT_RUNTIME;
    }
    if let Err(e) = req.read_input_files() {
        status["error"] = json!(e);
        return finish(&out_dir, status, EXIT_USAGE);
    }
    let deadline = req
        .max_wall_seconds
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| started + std::time::Duration::from_secs_f64(s));
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
        memory_dir: Some(out_dir.join("memory").display().to_string()),
        // The headless contract never trusts the repository it is pointed at.
        trust_project: Some(false),
        // Nor runs what it ships (hooks, commands' `!{cmd}`, its `.mcp.json` servers): nobody
        // vetted that repository. The user's own servers and hooks run.
        project_extensions: Some(false),
        ..Default::default()
    };
    let session = match Session::open(opts, None) {
        Ok(s) => s,
        Err(e) => {
            status["error"] = json!(e.to_string());
            return finish(&out_dir, status, EXIT_RUNTIME);
        }
    };
    // The session's notices reach no one here: a price problem is said on stderr, once, and
    // kept in status.json (`pricing`, `cost_warning`).
    let pricing = session.status_json()["pricing"].clone();
    for key in ["cost_env_warning", "warning"] {
        if let Some(w) = pricing[key].as_str() {
            eprintln!("yuyao: warning: {w}");
        }
    }
    for note in &req.notes {
        session
            .lock()
            .trajectory
            .record("note", json!({"text": note}));
    }
    let repo = Path::new(&req.repo_dir);
    // What the repository held before the run: a change the user left there is not the run's.
    let before = git_diff(repo);
    let watch = install_watch(&session, deadline);
    // A task that is a feature's command line (`/flow:<name>`, `/skill <name>`) runs it.
    let result = if crate::feature::hooks(|f| f.task_command).any(|runs| runs(&req.task)) {
        session.dispatch(req.task.trim())
    } else {
        session.chat(&req.task)
    };
    let timed_out = watch.stop();
    // The last calls' spend, for the batch this run may be a task of.
    session.batch_ledger_record();
    let after = git_diff(repo);
    let v = session.status_json();
    status["cost_usd"] = v["cost_usd"].clone();
    status["steps"] = v["steps"].clone();
    status["model"] = v["model"].clone();
    status["session_id"] = v["session_id"].clone();
    status["usage"] = v["usage"].clone();
    status["trajectory"] = v["trajectory"].clone();
    status["pricing"] = v["pricing"].clone();
    if let Some(w) = v["pricing"]["warning"].as_str() {
        status["cost_warning"] = json!(w);
    }
    // Honest completion: the turn's check, `verified=false` with the failing output when
    // the final verification failed (the exit code stays per §9).
    if !v["completion"].is_null() {
        status["completion"] = v["completion"].clone();
    }
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
        ("Submitted", _) => {
            match unearned_submission(&req.task, before.as_deref(), after.as_deref()) {
                None => ("Submitted".to_string(), 0),
                Some(why) => {
                    status["error"] = json!(why);
                    ("NotSubmitted".to_string(), EXIT_RUNTIME)
                }
            }
        }
        ("LimitsExceeded", _) => ("LimitsExceeded".to_string(), 0),
        ("Answered", _) | ("NotSubmitted", Ok(_)) => {
            status["error"] = match v["last_turn"]["error"].as_str() {
                Some(e) => json!(e),
                None => json!(
                    "the model finished without acting on the task (no tool ran on the workspace), so the run is not Submitted"
                ),
            };
            ("NotSubmitted".to_string(), EXIT_RUNTIME)
        }
        ("Interrupted", _) => {
            status["error"] = json!("interrupted by a signal");
            ("Interrupted".to_string(), EXIT_RUNTIME)
        }
        (other, Err(e)) => {
            status["error"] = json!(e.to_string());
            (
                if other == "None" {
                    "Error".to_string()
                } else {
                    other.to_string()
                },
                EXIT_RUNTIME,
            )
        }
        (other, Ok(_)) => (other.to_string(), EXIT_RUNTIME),
    };
    if let Some(e) = v["last_turn"]["error"].as_str()
        && status["error"].is_null()
        && code != 0
    {
        status["error"] = json!(e);
    }
    if code != 0 && status["error"].is_null() {
        status["error"] = json!(format!("the run ended as {label}"));
    }
    if label == "LimitsExceeded" {
        let why = match v["last_turn"]["error"].as_str() {
            Some(e) if !timed_out => e.to_string(),
            _ => wall_limit,
        };
        status["limit"] = json!(why);
    }
    status["exit_status"] = json!(label);
    status["submission"] = json!(after);
    session.close();
    finish(&out_dir, status, code)
}

/// Why a turn the loop counted as Submitted has no real effect, if it has none: the
/// repository is unchanged by the run although the task asks for a change. A question or an
/// analysis answered with evidence from tools needs no change. Outside a git repository the
/// change cannot be seen, and the loop's judgement stands.
fn unearned_submission(task: &str, before: Option<&str>, after: Option<&str>) -> Option<String> {
    let (Some(before), Some(after)) = (before, after) else {
        return None;
    };
    if before != after || !crate::task_kind::asks_for_change(task) {
        return None;
    }
    Some(if after.is_empty() {
        "the task asks for a change, but the repository is unchanged (empty diff), so the run is not Submitted".to_string()
    } else {
        "the task asks for a change, but the run left the repository unchanged (the diff is what it was before the run), so the run is not Submitted".to_string()
    })
}

/// Writes status.json and says in one line on stderr how the run ended, so a failing run is
/// never silent.
fn finish(out_dir: &Path, mut status: serde_json::Value, code: i32) -> i32 {
    status["finished_at"] = json!(chrono::Local::now().to_rfc3339());
    status["exit_code"] = json!(code);
    eprintln!("{}", summary_line(&status));
    let text = serde_json::to_string_pretty(&status).unwrap_or_else(|_| "{}".into());
    if let Err(e) = yuyao_store::write_atomic(&out_dir.join("status.json"), text.as_bytes()) {
        eprintln!("yuyao: cannot write status.json: {e}");
        return EXIT_RUNTIME;
    }
    code
}

/// `yuyao: Submitted, 3 steps, cost $0.001200` (+ `, error: …`).
fn summary_line(status: &serde_json::Value) -> String {
    let mut line = format!(
        "yuyao: {}, {} steps, cost ${:.6}",
        status["exit_status"].as_str().unwrap_or("Error"),
        status["steps"].as_u64().unwrap_or(0),
        status["cost_usd"].as_f64().unwrap_or(0.0),
    );
    if let Some(e) = status["error"].as_str() {
        line.push_str(", error: ");
        line.push_str(&e.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    line
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
            task_file: None,
            budget_file: None,
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
