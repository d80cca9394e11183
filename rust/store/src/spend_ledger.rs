//! The batch spend ledger: one JSON file shared by every task of a `yuyao batch` run, so one
//! spend ceiling holds for the whole batch (docs/parallel.md). Named by `YUYAO_SPEND_LEDGER`;
//! each task's run records its spend so far under its own key (`YUYAO_SPEND_LEDGER_TASK`)
//! and may not start a model call while the batch total is at or past the ceiling.
//!
//! The file, written by the batch driver first and then by the tasks:
//!
//! ```json
//! {"ceiling_usd": 2.0, "tasks": {"t1#a1b2": 0.31}, "remote_usd": 0.0,
//!  "mirror": false, "asks": 0, "answered": 0}
//! ```
//!
//! The total is the sum of `tasks` plus `remote_usd` (what other machines spent, as a
//! mirroring wrapper last learnt it). Every read-modify-write holds an exclusive `flock` on
//! `<ledger>.lock` and replaces the file atomically, so a reader never sees half a file.
//! A task's entry is its cumulative spend (set, never added to), so recording twice
//! never counts twice.
//!
//! `mirror: true` marks a local copy kept in step with a ledger elsewhere (a Ray actor):
//! before deciding, a check bumps `asks` and waits (briefly) until the wrapper has answered
//! it (`answered >= asks`) with a fresh `remote_usd`, so the decision sees everything the
//! cluster had recorded when it asked.

use serde_json::{Value, json};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The variables a batch driver sets for each task's run.
pub const LEDGER_VARIABLE: &str = "YUYAO_SPEND_LEDGER";
pub const TASK_VARIABLE: &str = "YUYAO_SPEND_LEDGER_TASK";

/// How long a check waits for a mirroring wrapper's answer before deciding on what it has.
const MIRROR_WAIT: Duration = Duration::from_secs(5);
const MIRROR_POLL: Duration = Duration::from_millis(5);

/// A batch ledger as one task's run sees it.
#[derive(Debug, Clone)]
pub struct SpendLedger {
    path: PathBuf,
    task: String,
}

/// What a check found: the batch total and its ceiling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LedgerState {
    pub spent_usd: f64,
    pub ceiling_usd: Option<f64>,
}

impl LedgerState {
    /// The batch may not make another call.
    pub fn exhausted(&self) -> bool {
        self.ceiling_usd.is_some_and(|c| self.spent_usd >= c)
    }
}

impl SpendLedger {
    /// The ledger named by the environment, if this run is a batch task.
    pub fn from_env() -> Option<SpendLedger> {
        let path = std::env::var_os(LEDGER_VARIABLE).filter(|p| !p.is_empty())?;
        let task = std::env::var(TASK_VARIABLE)
            .ok()
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| format!("pid{}", std::process::id()));
        Some(SpendLedger::new(PathBuf::from(path), task))
    }

    pub fn new(path: PathBuf, task: String) -> SpendLedger {
        SpendLedger { path, task }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records this task's cumulative spend `spent` (kept if larger than what is there).
    pub fn record(&self, spent: f64) -> io::Result<LedgerState> {
        self.update(|doc| {
            set_spend(doc, &self.task, spent);
            if doc["mirror"].as_bool() == Some(true) {
                // The wrapper pushes it to the cluster at once.
                doc["asks"] = json!(doc["asks"].as_u64().unwrap_or(0) + 1);
            }
        })
        .map(|(state, _)| state)
    }

    /// Records `spent` and says whether the batch may make another call: the total as it is
    /// now (for a mirror, as the wrapper answered this ask).
    pub fn check(&self, spent: f64) -> io::Result<LedgerState> {
        let (state, ask) = self.update(|doc| {
            set_spend(doc, &self.task, spent);
            if doc["mirror"].as_bool() == Some(true) {
                let ask = doc["asks"].as_u64().unwrap_or(0) + 1;
                doc["asks"] = json!(ask);
            }
        })?;
        let Some(ask) = ask else {
            return Ok(state);
        };
        let started = Instant::now();
        loop {
            let doc = self.read_locked()?;
            if doc["answered"].as_u64().unwrap_or(0) >= ask || started.elapsed() >= MIRROR_WAIT {
                return Ok(state_of(&doc));
            }
            std::thread::sleep(MIRROR_POLL);
        }
    }

    /// The ledger as it is now.
    pub fn read(&self) -> io::Result<LedgerState> {
        Ok(state_of(&self.read_locked()?))
    }

    fn read_locked(&self) -> io::Result<Value> {
        let _lock = self.lock()?;
        read_doc(&self.path)
    }

    /// One read-modify-write under the lock; returns the state after it and the mirror ask
    /// number when one was made.
    fn update(&self, change: impl FnOnce(&mut Value)) -> io::Result<(LedgerState, Option<u64>)> {
        let _lock = self.lock()?;
        let mut doc = read_doc(&self.path)?;
        let asks_before = doc["asks"].as_u64();
        change(&mut doc);
        let ask = match (doc["mirror"].as_bool(), doc["asks"].as_u64()) {
            (Some(true), Some(n)) if Some(n) != asks_before => Some(n),
            _ => None,
        };
        let text = serde_json::to_vec(&doc).map_err(io::Error::other)?;
        crate::write_atomic(&self.path, &text)?;
        Ok((state_of(&doc), ask))
    }

    fn lock(&self) -> io::Result<FileLock> {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(PathBuf::from(name))?;
        // SAFETY: a valid open descriptor; flock has no memory effects.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(FileLock(file))
    }
}

/// Held while the ledger is read or written; closing the descriptor releases the lock.
struct FileLock(#[allow(dead_code)] File);

fn read_doc(path: &Path) -> io::Result<Value> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        // The driver writes the file before any task starts; a missing one is a fresh ledger.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(json!({})),
        Err(e) => return Err(e),
    };
    match serde_json::from_slice::<Value>(&text) {
        Ok(v) if v.is_object() => Ok(v),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a spend ledger (a JSON object)", path.display()),
        )),
    }
}

fn set_spend(doc: &mut Value, task: &str, spent: f64) {
    if !doc["tasks"].is_object() {
        doc["tasks"] = json!({});
    }
    let before = doc["tasks"][task].as_f64().unwrap_or(0.0);
    if spent.is_finite() && spent > before {
        doc["tasks"][task] = json!(spent);
    }
}

fn state_of(doc: &Value) -> LedgerState {
    let own: f64 = doc["tasks"]
        .as_object()
        .map(|m| m.values().filter_map(Value::as_f64).sum())
        .unwrap_or(0.0);
    let remote = doc["remote_usd"].as_f64().unwrap_or(0.0);
    LedgerState {
        spent_usd: own + remote,
        ceiling_usd: doc["ceiling_usd"].as_f64().filter(|c| c.is_finite()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(dir: &Path, task: &str) -> SpendLedger {
        SpendLedger::new(dir.join("ledger.json"), task.into())
    }

    #[test]
    fn tasks_add_up_and_the_ceiling_refuses_at_the_total() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ledger.json"), r#"{"ceiling_usd": 1.0}"#).unwrap();
        let (a, b) = (ledger(dir.path(), "a"), ledger(dir.path(), "b"));
        assert!(!a.check(0.4).unwrap().exhausted());
        assert!(!b.check(0.5).unwrap().exhausted());
        // Recording the same cumulative spend again never counts it twice.
        assert_eq!(a.record(0.4).unwrap().spent_usd, 0.9);
        let state = b.check(0.6).unwrap();
        assert!(state.exhausted(), "{state:?}");
        assert!(
            a.check(0.4).unwrap().exhausted(),
            "one ledger for every task"
        );
    }

    #[test]
    fn without_a_ceiling_nothing_is_refused_and_a_bad_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let a = ledger(dir.path(), "a");
        assert!(!a.check(100.0).unwrap().exhausted());
        std::fs::write(dir.path().join("ledger.json"), "not json").unwrap();
        assert!(a.check(1.0).is_err());
    }

    #[test]
    fn parallel_records_are_never_lost() {
        let dir = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let l = ledger(dir.path(), &format!("t{i}"));
                std::thread::spawn(move || {
                    for n in 1..=20 {
                        l.record(n as f64 * 0.01).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let total = ledger(dir.path(), "x").read().unwrap().spent_usd;
        assert!((total - 1.6).abs() < 1e-9, "{total}");
    }

    #[test]
    fn a_mirror_check_waits_for_the_wrappers_answer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.json");
        std::fs::write(
            &path,
            r#"{"ceiling_usd": 1.0, "mirror": true, "asks": 0, "answered": 0}"#,
        )
        .unwrap();
        let wrapper = {
            let l = ledger(dir.path(), "wrapper");
            std::thread::spawn(move || {
                // The wrapper: answers the first ask with what the cluster spent.
                loop {
                    let _lock = l.lock().unwrap();
                    let mut doc = read_doc(l.path()).unwrap();
                    let asks = doc["asks"].as_u64().unwrap_or(0);
                    if asks > 0 {
                        doc["remote_usd"] = json!(0.95);
                        doc["answered"] = json!(asks);
                        crate::write_atomic(l.path(), doc.to_string().as_bytes()).unwrap();
                        return;
                    }
                    drop(_lock);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let state = ledger(dir.path(), "a").check(0.1).unwrap();
        wrapper.join().unwrap();
        assert!(
            state.exhausted(),
            "the check saw the cluster's spend: {state:?}"
        );
    }
}
