//! The built-in tools of yuyao, one module per family behind one [`Tool`] trait.
//! Tools are synchronous (the core runs them on a blocking thread) and never panic on bad
//! input: every failure is a result that tells the model what to do next.

pub mod args;
pub mod browser;
mod edit_engine;
pub mod exec;
pub mod frames;
pub mod freshness;
pub mod fs;
mod grep_rows;
pub mod jobs;
pub mod media;
pub mod notebook;
mod output;
pub mod page;
pub mod patch;
mod registry;
pub mod search;
pub mod web;

pub use args::ToolArgs;
pub use edit_engine::{EditSpec, apply_edits};
pub use freshness::{FileKnowledge, content_hash};
pub use output::{DEFAULT_OUTPUT_CHARS, MIN_OUTPUT_CHARS, cap_output, strip_ansi};
pub use patch::patch_paths;
pub use registry::{Registry, ToolCallSpec, parse_arguments};

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// Session state the tools share.
pub struct ToolContext {
    /// The session's working directory; `cd` in bash persists here.
    pub cwd: Mutex<PathBuf>,
    /// Folders the tools may work in: the project root first, then `/add-dir` folders.
    pub roots: Mutex<Vec<PathBuf>>,
    /// Files read or written in this session: their stamp, and the content hash when seen.
    pub files: Mutex<HashMap<PathBuf, FileKnowledge>>,
    /// Byte offsets of line starts seen by earlier reads, so a later page starts there.
    pub line_marks: Mutex<page::LineMarks>,
    /// Where oversized outputs are written.
    pub spill_dir: PathBuf,
    /// Default bash timeout in milliseconds (`tools.bash.timeout_ms`, changed live).
    bash_timeout_ms: std::sync::atomic::AtomicU64,
    /// Longest tool result the model sees, in characters (`tools.output_chars`, changed live).
    output_chars: std::sync::atomic::AtomicUsize,
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
    /// Variables set on every tool process (headless runs: no bytecode caches in the repo).
    pub env: Vec<(&'static str, &'static str)>,
    /// What the web tools and the browser read from the session (network, domain rules,
    /// provider, executable), refreshed by the core before every call.
    pub web: Mutex<web::WebSettings>,
    /// The session's one browser, started on first use, closed with the context.
    pub browser: browser::BrowserSlot,
    /// The `Read(…)` deny rules, for the searches that walk folders (refreshed with the
    /// sandbox: the policy judges only the path a call names).
    pub read_denies: Mutex<yuyao_policy::read_denies::ReadDenies>,
    /// The byte cap of the next read page when the core asks for a smaller one (the
    /// tool-preview budget of seed 001); 0: [`fs::READ_BYTES_CAP`].
    pub read_page_bytes: std::sync::atomic::AtomicUsize,
    /// Files read whole just before the current call runs (its snapshot pre-images), for the
    /// tool to use instead of reading them again (`fs::read_current`).
    pre_reads: Mutex<HashMap<PathBuf, std::sync::Arc<PreRead>>>,
}

/// A file's content read whole by someone else just before a tool runs (the snapshot's
/// pre-image capture): the bytes, the `fstat` of the descriptor they came from (taken before
/// reading) and their SHA-256 when already computed. A tool uses them only while the file
/// still has that stamp and the stamp was not racy when taken (see `freshness.rs`): then no
/// change can have happened since, and the file is read once per edit.
pub struct PreRead {
    pub stamp: freshness::Stamp,
    pub racy: bool,
    pub bytes: std::sync::Arc<Vec<u8>>,
    pub sha256: Option<[u8; 32]>,
}

/// The bash timeout when neither the call nor the configuration gives one.
pub const DEFAULT_BASH_TIMEOUT_MS: u64 = 120_000;

impl ToolContext {
    /// The default bash timeout in force, in milliseconds.
    pub fn bash_timeout_ms(&self) -> u64 {
        self.bash_timeout_ms
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets the default bash timeout (capped at the tool's maximum); the next command uses it.
    pub fn set_bash_timeout_ms(&self, ms: u64) {
        self.bash_timeout_ms.store(
            ms.clamp(1, exec::MAX_TIMEOUT_MS),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// The result cap in force, in characters (see [`output::DEFAULT_OUTPUT_CHARS`]).
    pub fn output_chars(&self) -> usize {
        self.output_chars.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets the result cap (at least [`MIN_OUTPUT_CHARS`]); the next result uses it.
    pub fn set_output_chars(&self, chars: usize) {
        self.output_chars.store(
            chars.max(MIN_OUTPUT_CHARS),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// `text` as the model sees it: capped, the whole of it spilled when longer.
    pub fn cap(&self, text: &str, label: &str) -> String {
        cap_output(text, &self.spill_dir, label, self.output_chars())
    }

    pub fn new(cwd: PathBuf, project: PathBuf, spill_dir: PathBuf) -> Self {
        ToolContext {
            cwd: Mutex::new(cwd),
            roots: Mutex::new(vec![project]),
            files: Mutex::new(HashMap::new()),
            line_marks: Mutex::new(page::LineMarks::default()),
            spill_dir,
            bash_timeout_ms: std::sync::atomic::AtomicU64::new(DEFAULT_BASH_TIMEOUT_MS),
            output_chars: std::sync::atomic::AtomicUsize::new(DEFAULT_OUTPUT_CHARS),
            sandbox: Mutex::new(Default::default()),
            jobs: jobs::Jobs::default(),
            home: None,
            read_only_call: std::sync::atomic::AtomicBool::new(false),
            env: Vec::new(),
            web: Mutex::new(web::WebSettings::default()),
            browser: browser::BrowserSlot::default(),
            read_denies: Mutex::default(),
            read_page_bytes: std::sync::atomic::AtomicUsize::new(0),
            pre_reads: Mutex::default(),
        }
    }

    /// Offers `path`'s content, read just now, to the tool about to run (see [`PreRead`]).
    pub fn offer_pre_read(&self, path: &Path, pre: PreRead) {
        if let Ok(mut m) = self.pre_reads.lock() {
            m.insert(path.to_path_buf(), std::sync::Arc::new(pre));
        }
    }

    /// Takes the content offered for `path`, if any.
    pub fn take_pre_read(&self, path: &Path) -> Option<std::sync::Arc<PreRead>> {
        self.pre_reads.lock().ok()?.remove(path)
    }

    /// Drops every offered content (the call they were read for is over).
    pub fn clear_pre_reads(&self) {
        if let Ok(mut m) = self.pre_reads.lock() {
            m.clear();
        }
    }

    /// The web settings in force now.
    pub fn web_settings(&self) -> web::WebSettings {
        self.web.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// The confinement for a process spawned now: the roots, the temp dir and the session's
    /// scratch folder are writable under `workspace-write`; under `read-only` (plan mode,
    /// the ask role, a call allowed only because it reads) nothing is but build outputs and
    /// the scratch folder (the private temp folder), so source files cannot change whatever
    /// the classifier thought. The spill folder around the scratch folder is yuyao's alone:
    /// spill files and job logs are written there by yuyao, never by a tool process.
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
        let scratch = self.scratch_dir().ok();
        if c.level == SandboxLevel::ReadOnly {
            c.writable = self.roots().iter().flat_map(|r| build_outputs(r)).collect();
            c.private_tmp = scratch.clone();
        } else {
            c.writable = self.roots();
            c.writable.push(std::env::temp_dir());
        }
        c.writable.extend(scratch);
        c
    }

    /// The session's scratch folder (`<spill>/tmp`), writable by tool processes at every
    /// sandbox level: the private temp folder and the files the shell reports its final
    /// directory in. It is made a real folder here each time: something planted in its
    /// place (a link into the project) is removed, never granted.
    pub fn scratch_dir(&self) -> Result<PathBuf, String> {
        let dir = self.spill_dir.join("tmp");
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => return Ok(dir),
            Ok(_) => {
                let _ = std::fs::remove_file(&dir);
            }
            Err(_) => {}
        }
        std::fs::create_dir_all(&self.spill_dir)
            .and_then(|_| std::fs::create_dir(&dir))
            .or_else(|e| match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.is_dir() => Ok(()),
                _ => Err(e),
            })
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(dir)
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
        resolve_path(&self.absolute(p))
    }

    /// `p` made absolute (`~/` expanded, relative to the cwd), nothing resolved.
    fn absolute(&self, p: &str) -> PathBuf {
        let expanded = match p.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rest)),
            None => None,
        };
        let path = expanded.unwrap_or_else(|| PathBuf::from(p));
        if path.is_absolute() {
            path
        } else {
            self.cwd().join(path)
        }
    }

    /// Like [`ToolContext::resolve`], for a path a tool will write: refused when a path that
    /// names a place inside the workspace leads outside it through a symlink (a `docs ->
    /// /elsewhere` folder link, or a file that is itself a link to an outside target).
    pub fn resolve_for_write(&self, p: &str) -> Result<PathBuf, String> {
        let absolute = self.absolute(p);
        let resolved = resolve_path(&absolute);
        let lexical = normalize(&absolute);
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

    /// Records content the session holds whole (it wrote or attached these bytes): the stamp
    /// is taken now and marked racy, so the hash decides at the next edit (a stamp taken
    /// right after a write cannot prove a same-tick change absent).
    pub fn remember(&self, path: &Path, bytes: &[u8], full: bool) {
        self.remember_digest(path, content_hash(bytes), full);
    }

    /// Like [`ToolContext::remember`] with the content's hash already computed (streamed).
    pub fn remember_digest(&self, path: &Path, hash: [u8; 32], full: bool) {
        let Some(stamp) = freshness::Stamp::of_path(path) else {
            self.forget(path);
            return;
        };
        self.know(
            path,
            FileKnowledge {
                stamp,
                racy: true,
                hash: Some(hash),
                read_in_full: full,
            },
        );
    }

    /// Records what a read saw (its stamp taken on the descriptor before reading).
    pub fn know(&self, path: &Path, k: FileKnowledge) {
        if let Ok(mut f) = self.files.lock() {
            f.insert(path.to_path_buf(), k);
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
/// A folder with a symbolic link on any component below the root is left out: the bind
/// would follow it (`node_modules -> $HOME` made `~/.cache` writable in plan mode).
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
    .filter(|d| d.is_dir() && !has_link_below(root, d))
    .collect()
}

/// Is any component of `path` below `root` (the last one included) a symbolic link?
fn has_link_below(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return true;
    };
    let mut cur = root.to_path_buf();
    rel.components().any(|c| {
        cur.push(c);
        std::fs::symlink_metadata(&cur).is_ok_and(|m| m.file_type().is_symlink())
    })
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
    /// Runs with raw JSON arguments (tests, callers outside a session): parses them into the
    /// tool's struct, then [`Tool::run_args`].
    fn run(&self, args: &Value, ctx: &ToolContext, cancel: &CancellationToken) -> ToolOutput {
        match ToolArgs::from_value(self.name(), args) {
            Ok(a) => self.run_args(&a, ctx, cancel),
            Err(e) => ToolOutput::err(e),
        }
    }
    /// Runs with the call's one parsed argument value.
    fn run_args(
        &self,
        args: &ToolArgs,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolOutput;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `node_modules -> $HOME` must not make `~/.cache` writable in plan mode.
    #[test]
    fn a_build_output_under_a_linked_folder_is_not_writable() {
        let d = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".cache")).unwrap();
        std::os::unix::fs::symlink(home.path(), d.path().join("node_modules")).unwrap();
        std::fs::create_dir(d.path().join("target")).unwrap();
        std::os::unix::fs::symlink(home.path(), d.path().join(".pytest_cache")).unwrap();
        assert_eq!(build_outputs(d.path()), vec![d.path().join("target")]);
    }

    /// Something planted where the scratch folder goes (a link into the project) is
    /// replaced by a real folder, never granted to the sandbox.
    #[test]
    fn a_link_planted_as_the_scratch_folder_is_not_granted() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let spill = d.path().join("spill");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&spill).unwrap();
        std::os::unix::fs::symlink(&ws, spill.join("tmp")).unwrap();
        let ctx = ToolContext::new(ws.clone(), ws.clone(), spill.clone());
        ctx.sandbox.lock().unwrap().level = yuyao_protocol::SandboxLevel::ReadOnly;
        let c = ctx.confinement();
        let scratch = spill.join("tmp");
        assert!(!scratch.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(c.private_tmp.as_deref(), Some(scratch.as_path()));
        assert!(c.writable.contains(&scratch));
        assert!(!c.writable.iter().any(|w| w == &ws || ws.starts_with(w)));
        assert!(
            !c.writable.contains(&spill),
            "the spill folder is yuyao's alone"
        );
    }
    use std::os::unix::fs::symlink;

    /// A workspace `ws` and a folder `outside` beside it.
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, ToolContext) {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let (ws, out) = (base.join("ws"), base.join("outside"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        let ctx = ToolContext::new(ws.clone(), ws.clone(), base.join("spill"));
        (d, ws, out, ctx)
    }

    fn write(ctx: &ToolContext, path: &str, content: &str) -> ToolOutput {
        let args = ToolArgs::from_value(
            "write",
            &serde_json::json!({"file_path": path, "content": content}),
        )
        .unwrap();
        crate::fs::Write.run_args(&args, ctx, &CancellationToken::new())
    }

    #[test]
    fn a_directory_symlink_out_resolves_out_and_is_not_written() {
        let (_d, ws, out, ctx) = setup();
        symlink(&out, ws.join("docs")).unwrap();
        assert_eq!(ctx.resolve("docs/x.txt"), out.join("x.txt"));
        assert_eq!(ctx.resolve("docs/../y"), out.parent().unwrap().join("y"));
        let r = write(&ctx, "docs/x.txt", "pwned");
        assert!(
            !r.ok && r.text.contains("outside the workspace"),
            "{}",
            r.text
        );
        assert!(!out.join("x.txt").exists());
    }

    #[test]
    fn a_file_symlink_out_resolves_to_its_target_and_is_not_written() {
        let (_d, ws, out, ctx) = setup();
        std::fs::write(out.join(".env"), "SECRET=1").unwrap();
        symlink(out.join(".env"), ws.join("config.txt")).unwrap();
        assert_eq!(ctx.resolve("config.txt"), out.join(".env"));
        let r = write(&ctx, "config.txt", "x");
        assert!(!r.ok, "{}", r.text);
        assert_eq!(
            std::fs::read_to_string(out.join(".env")).unwrap(),
            "SECRET=1"
        );
        assert!(ws.join("config.txt").is_symlink());
    }

    #[test]
    fn a_symlink_inside_edits_its_target_and_stays_a_link() {
        let (_d, ws, _out, ctx) = setup();
        std::fs::write(ws.join("real.txt"), "old\n").unwrap();
        symlink("real.txt", ws.join("link.txt")).unwrap();
        assert_eq!(ctx.resolve("link.txt"), ws.join("real.txt"));
        let read =
            ToolArgs::from_value("read", &serde_json::json!({"file_path": "link.txt"})).unwrap();
        assert!(
            crate::fs::Read
                .run_args(&read, &ctx, &CancellationToken::new())
                .ok
        );
        let r = write(&ctx, "link.txt", "new\n");
        assert!(r.ok, "{}", r.text);
        assert_eq!(
            std::fs::read_to_string(ws.join("real.txt")).unwrap(),
            "new\n"
        );
        assert!(ws.join("link.txt").is_symlink());
    }

    #[test]
    fn a_symlink_swapped_in_after_the_check_is_not_followed() {
        let (_d, ws, out, ctx) = setup();
        std::fs::create_dir(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/f.txt"), "in").unwrap();
        std::fs::write(out.join("f.txt"), "outside").unwrap();
        let judged = ctx.resolve("sub/f.txt");
        assert_eq!(judged, ws.join("sub/f.txt"));
        // The attacker swaps the folder for a link out between the check and the use.
        std::fs::rename(ws.join("sub"), ws.join("sub.old")).unwrap();
        symlink(&out, ws.join("sub")).unwrap();
        let e = crate::fs::write_atomic(&judged, b"pwned").unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(crate::fs::read_file(&judged).is_err());
        assert_eq!(
            std::fs::read_to_string(out.join("f.txt")).unwrap(),
            "outside"
        );
        // The final component swapped for a link: neither followed nor replaced.
        std::fs::remove_file(ws.join("sub")).unwrap();
        std::fs::rename(ws.join("sub.old"), ws.join("sub")).unwrap();
        std::fs::remove_file(ws.join("sub/f.txt")).unwrap();
        symlink(out.join("f.txt"), ws.join("sub/f.txt")).unwrap();
        assert!(crate::fs::write_atomic(&judged, b"pwned").is_err());
        assert!(crate::fs::read_file(&judged).is_err());
        assert_eq!(
            std::fs::read_to_string(out.join("f.txt")).unwrap(),
            "outside"
        );
        assert!(ws.join("sub/f.txt").is_symlink());
    }

    #[test]
    fn missing_parts_append_to_the_deepest_existing_ancestor() {
        let (_d, ws, out, ctx) = setup();
        symlink(&out, ws.join("docs")).unwrap();
        assert_eq!(ctx.resolve("new/dir/f.txt"), ws.join("new/dir/f.txt"));
        assert_eq!(ctx.resolve("docs/new/f.txt"), out.join("new/f.txt"));
        assert_eq!(ctx.resolve("./a/../b.txt"), ws.join("b.txt"));
        // A dangling link resolves to where it points.
        symlink(out.join("nothing"), ws.join("dangling")).unwrap();
        assert_eq!(ctx.resolve("dangling"), out.join("nothing"));
        // A loop stops resolving; opening it then fails.
        symlink("loop", ws.join("loop")).unwrap();
        assert!(crate::fs::read_file(&ctx.resolve("loop")).is_err());
    }

    #[test]
    fn paths_are_taken_verbatim() {
        let (_d, ws, _out, ctx) = setup();
        assert_eq!(ctx.resolve(" lead.txt "), ws.join(" lead.txt "));
        let r = write(&ctx, " lead.txt ", "x");
        assert!(r.ok, "{}", r.text);
        assert!(ws.join(" lead.txt ").exists());
        assert!(!ws.join("lead.txt").exists());
    }

    #[test]
    fn the_fallback_walk_refuses_symlinks_too() {
        let (_d, ws, out, _ctx) = setup();
        symlink(&out, ws.join("docs")).unwrap();
        std::fs::write(out.join("x"), "o").unwrap();
        // A folder link met on the way: O_NOFOLLOW | O_DIRECTORY says "not a directory".
        let e = crate::fs::nofollow::open_walk(&ws.join("docs/x"), libc::O_RDONLY).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR));
        // A link as the final component: "too many levels of symbolic links".
        symlink(out.join("x"), ws.join("lnk")).unwrap();
        let e = crate::fs::nofollow::open_walk(&ws.join("lnk"), libc::O_RDONLY).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        std::fs::write(ws.join("y"), "ok").unwrap();
        assert!(crate::fs::nofollow::open_walk(&ws.join("y"), libc::O_RDONLY).is_ok());
    }
}
