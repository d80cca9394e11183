//! The built-in tools of yuyao, one module per family behind one [`Tool`] trait.
//! Tools are synchronous (the core runs them on a blocking thread) and never panic on bad
//! input: every failure is a result that tells the model what to do next.

pub mod args;
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

pub use args::ToolArgs;
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
        }
    }

    /// The confinement for a process spawned now: the roots, the temp dir and the spill dir
    /// are writable under `workspace-write`.
    pub fn confinement(&self) -> yuyao_policy::sandbox::Confinement {
        let mut c = self.sandbox.lock().map(|c| c.clone()).unwrap_or_default();
        c.writable = self.roots();
        c.writable.push(std::env::temp_dir());
        c.writable.push(self.spill_dir.clone());
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

    /// Resolves a tool's path argument against the session cwd: taken verbatim (no trimming),
    /// `~/` expanded, then every component resolved the way the kernel would, symlinks
    /// included; a part that does not exist yet is appended to its deepest existing ancestor.
    /// The result is what the policy judges and what the tool opens (with no-follow
    /// semantics, so a symlink swapped in after this check makes the open fail).
    pub fn resolve(&self, p: &str) -> PathBuf {
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
        resolve_path(&joined)
    }

    /// Like [`ToolContext::resolve`], for a path a tool will write: refused when a path that
    /// names a place inside the workspace leads outside it through a symlink (a `docs ->
    /// /elsewhere` folder link, or a file that is itself a link to an outside target).
    pub fn resolve_for_write(&self, p: &str) -> Result<PathBuf, String> {
        let resolved = self.resolve(p);
        let lexical = {
            let path = PathBuf::from(p);
            let joined = if path.is_absolute() {
                path
            } else {
                self.cwd().join(path)
            };
            normalize(&joined)
        };
        if lexical != resolved && self.within_roots(&lexical) && !self.within_roots(&resolved) {
            return Err(format!(
                "{} leads outside the workspace through a symbolic link (it resolves to {}); refusing to write there",
                lexical.display(),
                resolved.display()
            ));
        }
        Ok(resolved)
    }

    /// Whether `p` (resolved) is inside one of the roots (themselves resolved).
    pub fn within_roots(&self, p: &Path) -> bool {
        self.roots()
            .iter()
            .any(|r| p.starts_with(r) || p.starts_with(resolve_path(r)))
    }

    pub fn remember(&self, path: &Path, bytes: &[u8], full: bool) {
        self.remember_digest(path, content_hash(bytes), full);
    }

    /// Like [`ToolContext::remember`] with the content's hash already computed (streamed).
    pub fn remember_digest(&self, path: &Path, hash: [u8; 32], full: bool) {
        if let Ok(mut f) = self.files.lock() {
            f.insert(
                path.to_path_buf(),
                FileKnowledge {
                    hash,
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

/// Resolves an absolute path component by component as the kernel does: `..` goes up from
/// the resolved prefix, symlinks are followed (at most 40), components that do not exist are
/// appended as they are. The result has no symlink in it at the time of the call.
pub fn resolve_path(p: &Path) -> PathBuf {
    use std::ffi::OsString;
    use std::path::Component;
    let mut pending: Vec<OsString> = Vec::new();
    let push_components = |pending: &mut Vec<OsString>, p: &Path| {
        let mut v: Vec<OsString> = Vec::new();
        for c in p.components() {
            match c {
                Component::ParentDir => v.push(OsString::from("..")),
                Component::Normal(n) => v.push(n.to_os_string()),
                _ => {}
            }
        }
        pending.extend(v.into_iter().rev());
    };
    push_components(&mut pending, p);
    let mut out = PathBuf::from("/");
    if !p.is_absolute()
        && let Ok(cwd) = std::env::current_dir()
    {
        out = cwd;
    }
    let mut links = 0;
    let mut missing = false;
    while let Some(c) = pending.pop() {
        if c == ".." {
            out.pop();
            missing = false;
            continue;
        }
        let cand = out.join(&c);
        if !missing {
            match std::fs::symlink_metadata(&cand) {
                Ok(m) if m.file_type().is_symlink() && links < 40 => {
                    links += 1;
                    if let Ok(target) = std::fs::read_link(&cand) {
                        if target.is_absolute() {
                            out = PathBuf::from("/");
                        }
                        push_components(&mut pending, &target);
                        continue;
                    }
                }
                Ok(_) => {}
                Err(_) => missing = true,
            }
        }
        out = cand;
    }
    out
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
    /// Runs with raw JSON arguments: parses them into the tool's struct, then [`Tool::run_args`].
    fn run(&self, args: &Value, ctx: &ToolContext, cancel: &CancellationToken) -> ToolOutput;
    /// Runs with the call's one parsed argument value. Tools that still read JSON get the
    /// canonical form of that value (canonical keys only), never the model's raw text.
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, cancel: &CancellationToken) -> ToolOutput {
        self.run(&args.to_value(), ctx, cancel)
    }
}
