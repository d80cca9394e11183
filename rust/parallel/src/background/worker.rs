//! What the detached process runs: the session (or the shell job) of one background folder.

#[allow(unused_imports)]
use crate::session_ext::*;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use yuyao_core::Handler;
use yuyao_core::Session;
use yuyao_protocol::{Event, Request, SessionOptions};
use yuyao_store::bg_agents::{self, Status};
use yuyao_store::worktree::{self, Worktree};

/// How often a waiting question looks for its answer.
const ANSWER_POLL: Duration = Duration::from_millis(100);

/// Runs the background session in `dir` to its end; returns the process's exit code.
pub fn run(dir: &Path) -> i32 {
    let dir = dir.to_path_buf();
    // The launcher records our pid right after the spawn: wait for it, so no update of ours is
    // overwritten by its write.
    let started = Instant::now();
    let status = loop {
        match bg_agents::read(&dir) {
            Ok(s) if s.pid.is_some() => break s,
            Ok(_) if started.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            // The launcher died before it could: record ourselves.
            Ok(_) => match bg_agents::update(&dir, |s| {
                s.pid = Some(std::process::id());
                s.pid_start = bg_agents::process_start(std::process::id());
            }) {
                Ok(s) => break s,
                Err(e) => {
                    eprintln!("yuyao: {e}");
                    return 1;
                }
            },
            Err(e) => {
                eprintln!("yuyao: {e}");
                return 1;
            }
        }
    };
    let options: Result<SessionOptions, String> = std::fs::read_to_string(dir.join("options.json"))
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()));
    let result = match options {
        Err(e) => Err(format!("cannot read the session's options: {e}")),
        Ok(o) if status.kind == "exec" => run_exec(&dir, &status, o),
        Ok(o) => run_session(&dir, &status, o),
    };
    let (state, error) = match &result {
        Ok(true) => (bg_agents::DONE, None),
        Ok(false) => (bg_agents::FAILED, None),
        Err(e) => (bg_agents::FAILED, Some(e.clone())),
    };
    let _ = bg_agents::update(&dir, |s| {
        s.state = state.into();
        if error.is_some() {
            s.error = error.clone();
        }
        s.last_activity = match &s.error {
            Some(e) => format!("failed: {e}"),
            None => state.to_string(),
        };
    });
    if let Some(e) = error {
        eprintln!("yuyao: {e}");
    }
    if result == Ok(true) { 0 } else { 1 }
}

fn run_session(dir: &Path, status: &Status, mut options: SessionOptions) -> Result<bool, String> {
    // The front took the key out of the environment (hide_model_key); sessions get it here.
    if options.model.api_key.is_none() {
        options.model.api_key = yuyao_model::hidden_model_key();
    }
    // The worker opens later than the user's command and approves no project file (§8).
    options.inherited_trust = true;
    let handler = Arc::new(BgHandler {
        dir: dir.to_path_buf(),
    });
    let session = Session::open(options, Some(handler as Arc<dyn Handler>))
        .map_err(|e| format!("cannot open the session: {e}"))?;
    bg_agents::update(dir, |s| {
        s.state = bg_agents::RUNNING.into();
        s.session_id = Some(session.session_id());
        s.last_activity = "started".into();
    })?;
    bg_agents::append_transcript(dir, &json!({"type": "user", "text": status.task}));
    let outcome = session.chat(&status.task);
    let st = session.status_json();
    let exit_status = st["last_turn"]["exit_status"].as_str().map(str::to_string);
    let turn_error = st["last_turn"]["error"].as_str().map(str::to_string);
    let worktree_note = commit_worktree(dir, status);
    bg_agents::update(dir, |s| {
        s.cost_usd = st["cost_usd"].as_f64().unwrap_or(s.cost_usd);
        // The session file may have changed (a fork on resume).
        s.session_id = Some(session.session_id());
        s.exit_status = exit_status.clone();
        s.error = match &outcome {
            Err(e) => Some(e.to_string()),
            Ok(_) => turn_error.clone().filter(|e| !e.is_empty()),
        };
    })?;
    if let Ok(text) = &outcome {
        bg_agents::append_transcript(dir, &json!({"type": "final", "text": text}));
    }
    if let Some(note) = worktree_note {
        bg_agents::append_transcript(
            dir,
            &json!({"type": "notice", "level": "info", "text": note}),
        );
    }
    session.close();
    Ok(outcome.is_ok() && exit_status.as_deref() != Some("Error"))
}

/// The session's changes become a commit on the worktree's branch (the worktree stays).
fn commit_worktree(dir: &Path, status: &Status) -> Option<String> {
    let wt: Worktree =
        serde_json::from_str(&std::fs::read_to_string(dir.join("worktree.json")).ok()?).ok()?;
    let title: String = status
        .task
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(60)
        .collect();
    match worktree::commit_all(
        &wt,
        &format!("yuyao background session {}: {title}", status.id),
    ) {
        Ok(Some(c)) => Some(format!("changes committed on {} ({})", wt.branch, &c[..10])),
        Ok(None) => None,
        Err(e) => Some(format!("the changes stay uncommitted in {}: {e}", wt.path)),
    }
}

fn run_exec(dir: &Path, status: &Status, mut options: SessionOptions) -> Result<bool, String> {
    // Only the tool context is used: the bash tool's background-job path (the same sandboxed
    // spawn), whose log grows while the job runs, so `attach` can follow it.
    options.headless = true;
    options.no_session = true;
    options.no_trajectory = true;
    options.inherited_trust = true;
    let session =
        Session::open(options, None).map_err(|e| format!("cannot prepare the job: {e}"))?;
    bg_agents::append_transcript(dir, &json!({"type": "exec", "command": status.task}));
    let cwd = PathBuf::from(session.cwd());
    let spec = yuyao_tools::jobs::JobSpec {
        kind: yuyao_tools::jobs::JobKind::Bash,
        command: &status.task,
        description: None,
        until: None,
        notify: None,
    };
    let started = session
        .tool_context()
        .jobs
        .start(session.tool_context(), spec, &cwd);
    let job = match started {
        Ok(id) => id,
        Err(e) => {
            session.close();
            return Err(e);
        }
    };
    let info = |id: &str| {
        session
            .tool_context()
            .jobs
            .list()
            .into_iter()
            .find(|j| j.id == id)
    };
    let log = info(&job).map(|j| j.log.display().to_string());
    bg_agents::update(dir, |s| {
        s.state = bg_agents::RUNNING.into();
        s.last_activity = format!("$ {}", s.task);
        s.log = log.clone();
    })?;
    let done = loop {
        match info(&job) {
            Some(j) if j.state == yuyao_tools::jobs::JobState::Running => {
                std::thread::sleep(Duration::from_millis(100))
            }
            other => break other,
        }
    };
    // The reader thread writes the last bytes after the exit is seen.
    let mut last = u64::MAX;
    for _ in 0..20 {
        let now = info(&job).map(|j| j.bytes).unwrap_or(0);
        if now == last {
            break;
        }
        last = now;
        std::thread::sleep(Duration::from_millis(50));
    }
    if let Some(log) = &log {
        let _ = std::fs::copy(log, dir.join("output.log"));
    }
    session.close();
    let code = done.as_ref().and_then(|j| j.exit_code);
    bg_agents::update(dir, |s| {
        s.exit_code = code;
        s.log = Some(dir.join("output.log").display().to_string());
    })?;
    Ok(code == Some(0))
}

/// Events go to the transcript and the status; a question is persisted as pending and waits
/// for `yuyao agents attach` to answer it.
struct BgHandler {
    dir: PathBuf,
}

impl Handler for BgHandler {
    fn event(&self, event: &Event) {
        let activity = match event {
            Event::ModelCall { step } => Some(format!("model call (step {step})")),
            Event::ToolBegin { name, .. } => Some(format!("tool {name}")),
            Event::AssistantMessage { .. } => Some("model replied".to_string()),
            _ => None,
        };
        let keep = matches!(
            event,
            Event::AssistantMessage { .. }
                | Event::ToolBegin { .. }
                | Event::ToolEnd { .. }
                | Event::Notice { .. }
        );
        if keep && let Ok(value) = serde_json::to_value(event) {
            bg_agents::append_transcript(&self.dir, &value);
        }
        let cost = match event {
            Event::Usage {
                session_cost_usd, ..
            } => Some(*session_cost_usd),
            _ => None,
        };
        if activity.is_some() || cost.is_some() {
            let _ = bg_agents::update(&self.dir, |s| {
                if let Some(a) = activity {
                    s.last_activity = a;
                }
                if let Some(c) = cost {
                    s.cost_usd = c;
                }
            });
        }
    }

    fn request(&self, request: &Request) -> Option<String> {
        let what = match request {
            Request::Permission { tool, summary, .. } => format!("approval: {tool} {summary}"),
            Request::AskUser { question, .. } => format!("question: {question}"),
            Request::CostCeiling { .. } => "spend ceiling reached".to_string(),
            // A background session stops at its limits, as a headless one does.
            Request::LimitReached { .. } => return None,
            // A memory suggestion is not worth stopping a background session for.
            Request::RememberCandidate { .. } => return None,
        };
        let answer_file = self.dir.join("answer.json");
        let _ = std::fs::remove_file(&answer_file);
        let pending = json!({"request": request, "asked_at": bg_agents::now()});
        yuyao_store::write_atomic(
            &self.dir.join("pending.json"),
            pending.to_string().as_bytes(),
        )
        .ok()?;
        let short: String = what.chars().take(120).collect();
        let _ = bg_agents::update(&self.dir, |s| {
            s.state = bg_agents::AWAITING.into();
            s.last_activity = short;
        });
        bg_agents::append_transcript(&self.dir, &json!({"type": "request", "request": request}));
        let answer = loop {
            if let Ok(text) = std::fs::read_to_string(&answer_file)
                && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            {
                break v["answer"].as_str().unwrap_or("").to_string();
            }
            std::thread::sleep(ANSWER_POLL);
        };
        let _ = std::fs::remove_file(&answer_file);
        let _ = std::fs::remove_file(self.dir.join("pending.json"));
        bg_agents::append_transcript(&self.dir, &json!({"type": "answer", "answer": answer}));
        let _ = bg_agents::update(&self.dir, |s| {
            s.state = bg_agents::RUNNING.into();
            s.last_activity = format!("answered: {answer}");
        });
        Some(answer)
    }
}
