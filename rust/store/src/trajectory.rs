//! The execution trace (spec §7): one JSONL file per run under `.trajectory/`, one line per
//! step (model reply, tool call with input and result, permission decision), written as it
//! happens so a killed run still leaves its trace.

use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct Trajectory {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl Trajectory {
    /// Opens `<dir>/<time>-<run id>.jsonl`. On failure the run goes on without a trace and
    /// the error is returned for a warning. `beneath`: a folder the agent can write that
    /// holds `dir` (the project): no symbolic link below it is followed, so a `.trajectory`
    /// (or trace file) the agent replaced with a link is refused, not written through
    /// (`beneath.rs`). Without it only the file itself must not be a link.
    pub fn open(dir: &Path, run_id: &str, beneath: Option<&Path>) -> (Trajectory, Option<String>) {
        let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
        let path = dir.join(format!("{stamp}-{run_id}.jsonl"));
        let file = match beneath.filter(|root| dir.starts_with(root)) {
            Some(root) => crate::beneath::open(root, &path, crate::beneath::Mode::Append, true),
            None => std::fs::create_dir_all(dir).and_then(|_| {
                crate::beneath::open(dir, &path, crate::beneath::Mode::Append, false)
            }),
        };
        match file {
            Ok(f) => (
                Trajectory {
                    path,
                    file: Some(f),
                },
                None,
            ),
            Err(e) => (
                Trajectory { path, file: None },
                Some(format!("cannot write the trace in {}: {e}", dir.display())),
            ),
        }
    }

    /// A trace that records nothing.
    pub fn disabled() -> Trajectory {
        Trajectory {
            path: PathBuf::new(),
            file: None,
        }
    }

    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|_| self.path.as_path())
    }

    /// Appends one record `{"ts", "kind", ...fields}`.
    pub fn record(&mut self, kind: &str, fields: Value) {
        let Some(f) = self.file.as_mut() else { return };
        let mut line = json!({"ts": chrono::Local::now().to_rfc3339(), "kind": kind});
        if let (Some(obj), Value::Object(extra)) = (line.as_object_mut(), fields) {
            obj.extend(extra);
        }
        let mut text = line.to_string();
        text.push('\n');
        if f.write_all(text.as_bytes()).is_err() {
            // A full disk must not kill the run; stop tracing instead.
            self.file = None;
        }
    }
}
