//! Background sessions' state (Agent View): one folder per session under
//! `~/.yuyao/agents/<id>/` holding `status.json` (written atomically), `options.json`,
//! `transcript.jsonl` (what the session did, one event a line), `pending.json` (the question
//! waiting for a person) and `answer.json` (the person's answer, taken by the session).
//!
//! A session is "running" only while its process lives: the pid and the process's start time
//! (`/proc/<pid>/stat`) are recorded, so a dead process or a recycled pid reads as failed.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

pub const RUNNING: &str = "running";
pub const STARTING: &str = "starting";
pub const AWAITING: &str = "awaiting input";
pub const DONE: &str = "done";
pub const FAILED: &str = "failed";
pub const STOPPED: &str = "stopped";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Status {
    pub id: String,
    /// "session" (a model session) or "exec" (a shell job).
    pub kind: String,
    pub state: String,
    pub task: String,
    pub cwd: String,
    pub worktree: Option<String>,
    pub branch: Option<String>,
    pub pid: Option<u32>,
    /// The process's start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
    pub pid_start: Option<u64>,
    pub session_id: Option<String>,
    pub cost_usd: f64,
    pub created_at: String,
    pub updated_at: String,
    pub last_activity: String,
    pub exit_status: Option<String>,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    /// A shell job's output file (growing while it runs).
    pub log: Option<String>,
}

impl Status {
    /// Is the state one where a process should be alive?
    pub fn is_live_state(&self) -> bool {
        matches!(self.state.as_str(), STARTING | RUNNING | AWAITING)
    }

    /// The state as it really is: a live state whose process is gone is `failed`.
    pub fn effective_state(&self) -> String {
        if self.is_live_state() && !self.process_alive() {
            return FAILED.into();
        }
        self.state.clone()
    }

    pub fn process_alive(&self) -> bool {
        match (self.pid, self.pid_start) {
            (Some(pid), Some(start)) => process_start(pid) == Some(start),
            // The launcher has not recorded the pid yet (milliseconds after dispatch); a
            // launcher that died before it could leaves a session that never started.
            (None, _) => {
                self.state == STARTING
                    && chrono::DateTime::parse_from_rfc3339(&self.created_at).is_ok_and(|t| {
                        chrono::Utc::now() - t.with_timezone(&chrono::Utc)
                            < chrono::Duration::seconds(30)
                    })
            }
            _ => false,
        }
    }
}

/// `~/.yuyao/agents`.
pub fn root(home: &Path) -> PathBuf {
    home.join("agents")
}

/// Ids are made by yuyao (`[a-z0-9-]`); anything else is refused before it names a path.
pub fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty()
        || id.len() > 64
        || !id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(format!("invalid background session id '{id}'"));
    }
    Ok(())
}

pub fn dir(home: &Path, id: &str) -> Result<PathBuf, String> {
    check_id(id)?;
    Ok(root(home).join(id))
}

/// The start time of a live, non-zombie process; `None` when there is none.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if matches!(fields.first(), Some(&"Z") | Some(&"X")) {
        return None;
    }
    fields.get(19)?.parse().ok()
}

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub fn read(dir: &Path) -> Result<Status, String> {
    let path = dir.join("status.json");
    let text = std::fs::read_to_string(&path).map_err(|_| {
        format!(
            "no background session '{}'",
            dir.file_name().unwrap_or_default().to_string_lossy()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn write(dir: &Path, status: &Status) -> Result<(), String> {
    let mut s = status.clone();
    s.updated_at = now();
    let text = serde_json::to_string_pretty(&s).expect("status serializes");
    crate::write_atomic(&dir.join("status.json"), text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", dir.display()))
}

/// Reads, changes and writes the status (only the session's own process updates it while it
/// runs; `stop` writes after that process is gone).
pub fn update(dir: &Path, change: impl FnOnce(&mut Status)) -> Result<Status, String> {
    // The session's threads (the turn, job listeners) never interleave a read and a write.
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = read(dir)?;
    change(&mut s);
    write(dir, &s)?;
    Ok(s)
}

/// Every background session, oldest first.
pub fn list(home: &Path) -> Vec<Status> {
    let mut all: Vec<Status> = std::fs::read_dir(root(home))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| read(&e.path()).ok())
        .collect();
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    all
}

/// Appends one event to the transcript.
pub fn append_transcript(dir: &Path, entry: &serde_json::Value) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("transcript.jsonl"))
    {
        let _ = writeln!(f, "{entry}");
    }
}

pub fn pending(dir: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("pending.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// A person's answer to the pending question; refused when nothing is pending.
pub fn answer(dir: &Path, answer: &str) -> Result<(), String> {
    if pending(dir).is_none() {
        return Err("this background session is not waiting for an answer".into());
    }
    let text = serde_json::json!({ "answer": answer }).to_string();
    crate::write_atomic(&dir.join("answer.json"), text.as_bytes())
        .map_err(|e| format!("cannot write the answer: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_or_recycled_process_reads_as_failed() {
        let me = std::process::id();
        let mut s = Status {
            state: RUNNING.into(),
            pid: Some(me),
            pid_start: process_start(me),
            ..Default::default()
        };
        assert!(s.pid_start.is_some());
        assert_eq!(s.effective_state(), RUNNING);
        s.pid_start = Some(s.pid_start.unwrap() + 1); // the pid now belongs to another process
        assert_eq!(s.effective_state(), FAILED);
        s.state = DONE.into();
        assert_eq!(s.effective_state(), DONE);
        // Just dispatched (no pid yet): starting; never recorded after a while: failed.
        s.state = STARTING.into();
        s.pid = None;
        s.created_at = now();
        assert_eq!(s.effective_state(), STARTING);
        s.created_at = "2020-01-01T00:00:00Z".into();
        assert_eq!(s.effective_state(), FAILED);
    }

    #[test]
    fn ids_never_name_other_paths() {
        for bad in ["..", "../x", "a/b", "", "A"] {
            assert!(dir(Path::new("/h"), bad).is_err(), "{bad}");
        }
        assert!(dir(Path::new("/h"), "bg-1a2b").is_ok());
    }
}
