//! The built-in tools of yuyao, one module per family behind one [`Tool`] trait.
//! Tools are synchronous (the core runs them on a blocking thread) and never panic on bad
//! input: every failure is a result that tells the model what to do next.

mod args;
mod edit_engine;
pub mod exec;
pub mod fs;
pub mod jobs;
pub mod media;
pub mod notebook;
mod output;
pub mod patch;
mod registry;
pub mod search;

pub use edit_engine::{EditSpec, apply_edits};
pub use output::{RESULT_CAP, cap_output, strip_ansi};
pub use patch::patch_paths;
pub use registry::{Registry, ToolCallSpec, parse_arguments};

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// What the session knows about a file it has read (for read-before-write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileKnowledge {
    pub hash: [u8; 32],
    pub read_in_full: bool,
}

pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Session state the tools share.
pub struct ToolContext {
    /// The session's working directory; `cd` in bash persists here.
    pub cwd: Mutex<PathBuf>,
    /// Folders the tools may work in: the project root first, then `/add-dir` folders.
    pub roots: Mutex<Vec<PathBuf>>,
    /// Files read in this session, with the content hash seen.
    pub files: Mutex<HashMap<PathBuf, FileKnowledge>>,
    /// Where oversized outputs are written.
    pub spill_dir: PathBuf,
    /// Default bash timeout in milliseconds.
    pub bash_timeout_ms: u64,
    /// The OS sandbox tool processes run in (level and network; writable folders are
    /// filled in at spawn time by [`ToolContext::confinement`]).
    pub sandbox: Mutex<yuyao_policy::sandbox::Confinement>,
    /// Background jobs (bash `run_in_background`, monitors); they end with the context.
    pub jobs: jobs::Jobs,
    /// yuyao's own folder: read-only to tool processes (config, permissions, sessions).
    pub home: Option<PathBuf>,
    /// The current call was allowed only because it is read-only: its processes run under
    /// the read-only OS sandbox, whatever the classifier thought.
    pub read_only_call: std::sync::atomic::AtomicBool,
}

impl ToolContext {
    pub fn new(cwd: PathBuf, project: PathBuf, spill_dir: PathBuf) -> Self {
        ToolContext {
            cwd: Mutex::new(cwd),
            roots: Mutex::new(vec![project]),
            files: Mutex::new(HashMap::new()),
            spill_dir,
            bash_timeout_ms: 120_000,
            sandbox: Mutex::new(Default::default()),
            jobs: jobs::Jobs::default(),
            home: None,
            read_only_call: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The confinement for a process spawned now: the roots, the temp dir and the spill dir
    /// are writable under `workspace-write`; under `read-only` (plan mode, the ask role, a
    /// call allowed only because it reads) nothing is but build outputs, the spill dir and a
    /// private temp folder, so source files cannot change whatever the classifier thought.
    pub fn confinement(&self) -> yuyao_policy::sandbox::Confinement {
        use yuyao_protocol::SandboxLevel;
        let mut c = self.sandbox.lock().map(|c| c.clone()).unwrap_or_default();
        if self
            .read_only_call
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            c.level = SandboxLevel::ReadOnly;
        }
        c.home = self.home.clone();
        if c.level == SandboxLevel::ReadOnly {
            let tmp = self.spill_dir.join("tmp");
            let _ = std::fs::create_dir_all(&tmp);
            c.writable = self.roots().iter().flat_map(|r| build_outputs(r)).collect();
            c.writable.push(self.spill_dir.clone());
            c.writable.push(tmp.clone());
            c.private_tmp = Some(tmp);
        } else {
            c.writable = self.roots();
            c.writable.push(std::env::temp_dir());
            let _ = std::fs::create_dir_all(&self.spill_dir);
            c.writable.push(self.spill_dir.clone());
        }
        c
    }

    pub fn cwd(&self) -> PathBuf {
        self.cwd
            .lock()
            .map(|c| c.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    pub fn project(&self) -> PathBuf {
        self.roots().first().cloned().unwrap_or_else(|| self.cwd())
    }

    pub fn roots(&self) -> Vec<PathBuf> {
        self.roots.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Resolves a tool's path argument against the session cwd, lexically normalized.
    pub fn resolve(&self, p: &str) -> PathBuf {
        let p = p.trim();
        let expanded = match p.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rest)),
            None => None,
        };
        let path = expanded.unwrap_or_else(|| PathBuf::from(p));
        let joined = if path.is_absolute() {
            path
        } else {
            self.cwd().join(path)
        };
        normalize(&joined)
    }

    pub fn remember(&self, path: &Path, bytes: &[u8], full: bool) {
        if let Ok(mut f) = self.files.lock() {
            f.insert(
                path.to_path_buf(),
                FileKnowledge {
                    hash: content_hash(bytes),
                    read_in_full: full,
                },
            );
        }
    }

    /// Drops what the session knew of `path` (it was deleted or restored by /undo).
    pub fn forget(&self, path: &Path) {
        if let Ok(mut f) = self.files.lock() {
            f.remove(path);
        }
    }

    pub fn knowledge(&self, path: &Path) -> Option<FileKnowledge> {
        self.files.lock().ok().and_then(|f| f.get(path).cloned())
    }
}

/// Build-output folders of a project that stay writable in read-only sessions, so that the
/// validation commands seed 001 allows while planning (`cargo test`, `pytest`) still work.
pub fn build_outputs(root: &Path) -> Vec<PathBuf> {
    [
        "target",
        "node_modules/.cache",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
    ]
    .iter()
    .map(|d| root.join(d))
    .filter(|d| d.is_dir() && !d.is_symlink())
    .collect()
}

/// Removes `.` and `..` components without touching the disk.
pub fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub ok: bool,
    pub text: String,
    /// Image parts (`data:` URLs) to send alongside the text.
    pub images: Vec<String>,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput {
            ok: true,
            text: text.into(),
            images: Vec::new(),
        }
    }

    pub fn err(text: impl Into<String>) -> Self {
        ToolOutput {
            ok: false,
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// One built-in tool.
pub trait Tool: Send + Sync {
    /// The advertised name (spec §1).
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// JSON schema of the parameters.
    fn parameters(&self) -> Value;
    fn run(&self, args: &Value, ctx: &ToolContext, cancel: &CancellationToken) -> ToolOutput;
}
