//! The bash tool: each command in its own `bash -c` process and process group, stdin from
//! /dev/null, stdout and stderr interleaved through one pipe, a timeout that kills the whole
//! group, ANSI stripped, oversized output spilled, and `cd` persisted within the project.
//!
//! Every shell process yuyao starts (the bash tool, background jobs, monitors, the user's `!`
//! shell) is built by [`shell_command`]: the OS sandbox plugs in there, once.

use crate::args::{BashParams, ToolArgs};
use crate::jobs::JobFeed;
use crate::output::{cap_output, preview_half, strip_ansi};
use crate::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use std::fs::File;
use std::io::{PipeReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use yuyao_policy::sandbox::Launch;

pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output kept in memory while a command runs; beyond it, everything streams to a spill file.
const MEMORY_CAP: usize = 4 * 1024 * 1024;
/// Bytes of the end of the output kept for the preview when the output was spilled.
const TAIL_KEEP: usize = 64 * 1024;

static SERIAL: AtomicU64 = AtomicU64::new(0);

/// A name no other run of this process uses (spill files, cwd files).
pub(crate) fn unique(label: &str) -> String {
    format!(
        "{label}-{}-{}",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    )
}

/// THE spawn path: `bash -c script` in `cwd`, its own process group, stdin from /dev/null, a
/// non-interactive environment. Every shell process of yuyao is built here and started by
/// `spawn_piped_as` under the OS sandbox, in this one place.
pub fn shell_command(ctx: &ToolContext, script: &str, cwd: &Path) -> Launch {
    let mut launch = Launch::new("bash", &["-c", script], cwd);
    launch.process_group = true;
    for (k, v) in [
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("TERM", "dumb"),
        ("NO_COLOR", "1"),
    ]
    .into_iter()
    .chain(ctx.env.iter().copied())
    {
        launch.env.push((k.into(), Some(v.into())));
    }
    launch.env.extend(root_tar_options());
    launch
}

/// Root inside the sandbox holds no capability (`CAP_CHOWN` included), and GNU tar run by
/// root restores the archive's owners by default: every extraction of an archive made by
/// another user then ended with exit status 2. Root's tar keeps its own ownership instead,
/// as every other user's tar does (unless the user set `TAR_OPTIONS` themselves).
fn root_tar_options() -> Option<(std::ffi::OsString, Option<std::ffi::OsString>)> {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    (root && std::env::var_os("TAR_OPTIONS").is_none())
        .then(|| ("TAR_OPTIONS".into(), Some("--no-same-owner".into())))
}

/// Whose rights a shell process has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rights {
    /// The model's tools: the session's OS sandbox.
    Tool,
    /// The user's own `!` command: no sandbox, as if typed in their terminal (the model
    /// key is still removed from its environment).
    User,
}

impl Rights {
    /// How a process with these rights is confined.
    pub fn confinement(self, ctx: &ToolContext) -> yuyao_policy::sandbox::Confinement {
        match self {
            Rights::Tool => ctx.confinement(),
            Rights::User => yuyao_policy::sandbox::Confinement {
                level: yuyao_protocol::SandboxLevel::FullAccess,
                network: yuyao_protocol::NetworkAccess::On,
                ..Default::default()
            },
        }
    }
}

/// Spawns `script` with stdout and stderr interleaved into one pipe, under `confinement`
/// (the model's sandbox, or none for the user's own commands).
pub(crate) fn spawn_piped_as(
    ctx: &ToolContext,
    script: &str,
    cwd: &Path,
    confinement: &yuyao_policy::sandbox::Confinement,
) -> Result<(Child, PipeReader), String> {
    let (reader, writer) = std::io::pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| format!("cannot create a pipe: {e}"))?;
    let mut launch = shell_command(ctx, script, cwd);
    launch.stdout = Some(writer.into());
    launch.stderr = Some(writer2.into());
    if confinement.level == yuyao_protocol::SandboxLevel::ReadOnly {
        // Caches go to the private /tmp instead of failing on the read-only tree.
        if let Some(tmp) = &confinement.private_tmp {
            let mut set = |k: &str, v: std::ffi::OsString| launch.env.push((k.into(), Some(v)));
            set("TMPDIR", tmp.into());
            set("PYTHONDONTWRITEBYTECODE", "1".into());
            set("PYTHONPYCACHEPREFIX", tmp.join("pycache").into());
            set("npm_config_cache", tmp.join("npm-cache").into());
            if !ctx.project().join("target").is_dir() {
                set("CARGO_TARGET_DIR", tmp.join("cargo-target").into());
            }
        }
    }
    // The OS sandbox (namespaces, Landlock, seccomp, no_new_privs, parent-death signal) for
    // every command, job and monitor.
    let prepared = yuyao_policy::sandbox::prepare(confinement)?;
    // The spawner drops `launch` (holding the write ends), so EOF comes when the group
    // closes them.
    let child = yuyao_policy::sandbox::spawn(launch, prepared)
        .map_err(|e| format!("cannot start bash: {e}"))?;
    Ok((child, reader))
}

/// The working directory a new command starts in: the session cwd, or the project root if
/// the cwd has disappeared.
pub(crate) fn start_dir(ctx: &ToolContext) -> PathBuf {
    let cwd = ctx.cwd();
    if cwd.is_dir() { cwd } else { ctx.project() }
}

pub struct Bash;

impl Tool for Bash {
    fn name(&self) -> &'static str {
        "bash"
    }
    fn description(&self) -> &'static str {
        "Run a bash command in the working directory (stdin /dev/null; `cd` persists). timeout: ms (default 120000, max 600000), then the process group is killed. Long output: head and tail, the whole in a file named. run_in_background (servers, watchers, long builds) returns a job id for bg-output / bg-stop."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": "integer"},
                "description": {"type": "string", "description": "what it does, briefly"},
                "run_in_background": {"type": "boolean"}
            },
            "required": ["command"]
        })
    }
    fn run_args(
        &self,
        args: &ToolArgs,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        match args {
            ToolArgs::Bash(a) => run(a, ctx, cancel).unwrap_or_else(ToolOutput::err),
            other => crate::fs::mismatched("bash", other),
        }
    }
}

fn run(
    a: &BashParams,
    ctx: &ToolContext,
    cancel: &CancellationToken,
) -> Result<ToolOutput, String> {
    let command = &a.command;
    if command.trim().is_empty() {
        return Err("command is empty".into());
    }
    let timeout_ms = match a.timeout {
        Some(t) if t <= 0 => {
            return Err(format!(
                "timeout must be a positive number of milliseconds, got {t}"
            ));
        }
        Some(t) => (t as u64).min(MAX_TIMEOUT_MS),
        None => ctx.bash_timeout_ms(),
    };
    if a.run_in_background.unwrap_or(false) {
        return crate::jobs::start_bash_job(ctx, command, a.description.clone());
    }
    let r = run_foreground(ctx, command, timeout_ms, cancel)?;
    Ok(ToolOutput {
        ok: r.ok,
        text: r.text,
        images: Vec::new(),
    })
}

/// The outcome of a foreground shell command.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellRun {
    /// What the model (or the user) sees: capped output and a closing `[...]` status line.
    pub text: String,
    /// Exit code 0, not timed out, not interrupted.
    pub ok: bool,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub interrupted: bool,
}

/// What the reader thread collects: the head in memory, the tail for the preview, and all of
/// it in a spill file once it outgrows memory.
#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
    spill: Option<(PathBuf, File)>,
    spill_error: Option<String>,
    /// The command was moved to the background: the rest of its output goes to the job.
    redirect: Option<JobFeed>,
}

impl Capture {
    fn push(&mut self, chunk: &[u8], spill_dir: &Path) {
        if let Some(feed) = &self.redirect {
            feed.write(chunk);
            return;
        }
        self.total += chunk.len() as u64;
        if self.spill.is_none() && self.spill_error.is_none() {
            if self.head.len() + chunk.len() <= MEMORY_CAP {
                self.head.extend_from_slice(chunk);
                return;
            }
            let path = spill_dir.join(format!("{}.log", unique("bash")));
            let opened = std::fs::create_dir_all(spill_dir)
                .and_then(|_| File::create(&path))
                .and_then(|mut f| f.write_all(&self.head).map(|_| f));
            match opened {
                Ok(f) => self.spill = Some((path, f)),
                Err(e) => self.spill_error = Some(format!("{}: {e}", path.display())),
            }
            self.tail = self.head[self.head.len().saturating_sub(TAIL_KEEP)..].to_vec();
        }
        if let Some((_, f)) = &mut self.spill
            && let Err(e) = f.write_all(chunk)
        {
            self.spill_error = Some(e.to_string());
        }
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > 2 * TAIL_KEEP {
            self.tail.drain(..self.tail.len() - TAIL_KEEP);
        }
    }

    /// The capped text for the result.
    fn render(&self, spill_dir: &Path, cap: usize) -> String {
        let Some((path, _)) = &self.spill else {
            let text = strip_ansi(&String::from_utf8_lossy(&self.head));
            let mut text = cap_output(text.trim_end_matches('\n'), spill_dir, "bash", cap);
            if let Some(e) = &self.spill_error {
                text.push_str(&format!(
                    "\n[… {} bytes in all; the rest could not be saved ({e}) …]",
                    self.total
                ));
            }
            return text;
        };
        // Cuts on line boundaries: a secret on one line is whole (and redacted) or absent.
        let head_all = strip_ansi(&String::from_utf8_lossy(&self.head));
        let head = crate::output::head_cut(&head_all, preview_half(cap)).to_string();
        let tail_all = strip_ansi(&String::from_utf8_lossy(&self.tail));
        let tail = crate::output::tail_cut(&tail_all, preview_half(cap)).to_string();
        let saved = match &self.spill_error {
            None => format!(
                "the full output ({} bytes, raw) is in {}; read it with offset/limit or grep it",
                self.total,
                path.display()
            ),
            Some(e) => format!(
                "the output ({} bytes) was only partly saved to {} ({e})",
                self.total,
                path.display()
            ),
        };
        format!(
            "{head}\n\n[… output truncated: {saved} …]\n\n{}",
            tail.trim_end_matches('\n')
        )
    }
}

/// Runs one command in the foreground: the bash tool and the user's `!` shell. The process
/// group is killed on timeout or cancellation; `cd` persists in `ctx` (reset to the project
/// root when it leaves the allowed roots).
pub fn run_foreground(
    ctx: &ToolContext,
    command: &str,
    timeout_ms: u64,
    cancel: &CancellationToken,
) -> Result<ShellRun, String> {
    run_foreground_as(ctx, command, timeout_ms, cancel, Rights::Tool)
}

/// [`run_foreground`] with the rights of `who`.
pub fn run_foreground_as(
    ctx: &ToolContext,
    command: &str,
    timeout_ms: u64,
    cancel: &CancellationToken,
    who: Rights,
) -> Result<ShellRun, String> {
    let cwd = start_dir(ctx);
    let confinement = who.confinement(ctx);
    // The scratch folder is the only place of yuyao's the command writes (this file);
    // yuyao reads it back without following links.
    let cwd_file = ctx.scratch_dir()?.join(unique("cwd"));
    let _ = std::fs::remove_file(&cwd_file);
    // The trap records the final directory however the script ends (even on `exit`).
    let script = format!(
        "trap 'pwd -P > {} 2>/dev/null' EXIT\n{command}",
        shell_quote(&cwd_file.to_string_lossy())
    );
    let (mut child, mut reader) = spawn_piped_as(ctx, &script, &cwd, &confinement)?;
    let pgid = child.id() as i32;
    let started = Instant::now();
    ctx.jobs.set_foreground(true);
    let _foreground = Foreground(ctx);

    let capture = Arc::new(Mutex::new(Capture::default()));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    {
        let capture = capture.clone();
        let spill_dir = ctx.spill_dir.clone();
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if let Ok(mut c) = capture.lock() {
                            c.push(&chunk[..n], &spill_dir);
                        }
                    }
                }
            }
            let _ = done_tx.send(());
        });
    }
    let (exit_tx, exit_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = exit_tx.send(child.wait());
    });

    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let mut ended_by: Option<&str> = None;
    let status = loop {
        let now = Instant::now();
        let wait = deadline
            .saturating_duration_since(now)
            .min(Duration::from_millis(25));
        match exit_rx.recv_timeout(wait) {
            Ok(Ok(s)) => break Some(s),
            Ok(Err(e)) => return Err(format!("lost track of the command: {e}")),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err("lost track of the command".into());
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if ctx.jobs.take_detach() {
            return detach(
                ctx, command, pgid, started, &capture, exit_rx, done_rx, &cwd_file,
            );
        }
        if cancel.is_cancelled() || Instant::now() >= deadline {
            ended_by = Some(if cancel.is_cancelled() {
                "interrupted"
            } else {
                "timeout"
            });
            kill_group(pgid, libc::SIGKILL);
            break exit_rx.recv().ok().and_then(Result::ok);
        }
    };
    // Background children may keep the pipe open: wait briefly, then stop reading.
    let still_open = done_rx.recv_timeout(Duration::from_millis(300)).is_err();

    let mut out = capture
        .lock()
        .map(|c| c.render(&ctx.spill_dir, ctx.output_chars()))
        .unwrap_or_default();
    let code = status.and_then(|s| s.code());
    let mut notes = Vec::new();
    match ended_by {
        Some("timeout") => notes.push(format!(
            "timed out after {timeout_ms} ms; the process group was killed (output so far above). Pass a larger timeout (max 600000) or run it with run_in_background"
        )),
        Some(_) => notes.push("interrupted by the user; the process group was killed".into()),
        None => notes.push(format!(
            "exit code {}",
            code.map_or("none (killed by a signal)".into(), |c| c.to_string())
        )),
    }
    if still_open {
        notes.push("background processes still hold the output; it is not waited for".into());
    }
    if let Some(note) = yuyao_policy::sandbox::blocked_note(&confinement, code, &out) {
        notes.push(note);
    }
    if let Some(note) = persist_cwd(ctx, &cwd_file) {
        notes.push(note);
    }
    let _ = std::fs::remove_file(&cwd_file);
    if out.trim().is_empty() {
        out = "(no output)".into();
    }
    out.push_str(&format!("\n[{}]", notes.join("; ")));
    Ok(ShellRun {
        ok: ended_by.is_none() && code == Some(0),
        text: out,
        exit_code: code,
        timed_out: ended_by == Some("timeout"),
        interrupted: ended_by == Some("interrupted"),
    })
}

/// Clears the "foreground command running" mark however `run_foreground` returns.
struct Foreground<'a>(&'a ToolContext);

impl Drop for Foreground<'_> {
    fn drop(&mut self) {
        self.0.jobs.set_foreground(false);
    }
}

/// `Ctrl+B`: the running command becomes background job `bash_N`; what it printed so far is
/// in the result and at the start of the job's log.
#[allow(clippy::too_many_arguments)]
fn detach(
    ctx: &ToolContext,
    command: &str,
    pgid: i32,
    started: Instant,
    capture: &Arc<Mutex<Capture>>,
    exit_rx: mpsc::Receiver<std::io::Result<std::process::ExitStatus>>,
    done_rx: mpsc::Receiver<()>,
    cwd_file: &Path,
) -> Result<ShellRun, String> {
    let feed = ctx.jobs.adopt(ctx, command, pgid, started)?;
    let so_far = {
        let mut c = capture
            .lock()
            .map_err(|_| "lost the command's output".to_string())?;
        match &c.spill {
            Some((path, _)) => feed.write(&std::fs::read(path).unwrap_or_default()),
            None => feed.write(&c.head),
        }
        feed.mark_read();
        let text = c.render(&ctx.spill_dir, ctx.output_chars());
        c.redirect = Some(feed.clone());
        text
    };
    let (waiter, cwd_file) = (feed.clone(), cwd_file.to_path_buf());
    std::thread::spawn(move || {
        let code = exit_rx
            .recv()
            .ok()
            .and_then(Result::ok)
            .and_then(|s| s.code());
        let drained = done_rx.recv_timeout(Duration::from_millis(500)).is_ok();
        if drained {
            waiter.drained();
        }
        waiter.finish(code);
        if !drained && done_rx.recv().is_ok() {
            waiter.drained();
        }
        let _ = std::fs::remove_file(cwd_file);
    });
    let id = feed.id().to_string();
    let shown = if so_far.trim().is_empty() {
        "(no output yet)".to_string()
    } else {
        so_far
    };
    Ok(ShellRun {
        text: format!(
            "{shown}\n[moved to the background by the user as job {id}; it keeps running. Read its new output with bg-output {{\"id\": \"{id}\"}}, stop it with bg-stop. `cd` in it does not persist]"
        ),
        ok: true,
        exit_code: None,
        timed_out: false,
        interrupted: false,
    })
}

/// Moves the session cwd where the command ended, unless that left the allowed roots.
fn persist_cwd(ctx: &ToolContext, cwd_file: &Path) -> Option<String> {
    let new = read_scratch_file(cwd_file)?;
    let new = PathBuf::from(new.trim());
    if new.as_os_str().is_empty() {
        return None;
    }
    let roots = ctx.roots();
    let canon_roots: Vec<PathBuf> = roots
        .iter()
        .map(|r| r.canonicalize().unwrap_or_else(|_| r.clone()))
        .collect();
    let inside = canon_roots.iter().any(|r| new.starts_with(r));
    let mut cwd = ctx.cwd.lock().ok()?;
    let current = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
    if inside {
        if new != current {
            // Keep the user's spelling of the root (symlinks) where possible.
            let rel = canon_roots
                .iter()
                .zip(&roots)
                .find_map(|(c, r)| new.strip_prefix(c).ok().map(|rest| r.join(rest)));
            *cwd = rel.unwrap_or(new);
        }
        None
    } else {
        let root = roots.first().cloned()?;
        *cwd = root.clone();
        Some(format!(
            "the command left the project ({}); the working directory was reset to {}",
            new.display(),
            root.display()
        ))
    }
}

/// A small regular file the sandboxed command wrote into the scratch folder: a link, a FIFO
/// or anything large planted there by a command is ignored, never followed or waited on.
fn read_scratch_file(path: &Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.len() > 8192 {
        return None;
    }
    let mut text = String::new();
    f.read_to_string(&mut text).ok()?;
    Some(text)
}

/// Signals a whole process group we created.
pub(crate) fn kill_group(pgid: i32, signal: i32) {
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals the process group we created; it touches
    // no memory of ours.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// Whether any process of the group is still alive.
pub(crate) fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

pub(crate) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf(), dir.to_path_buf(), dir.join(".spill"))
    }

    #[test]
    fn output_and_exit_code() {
        let d = tempfile::tempdir().unwrap();
        let c = ctx(d.path());
        let r = run_foreground(
            &c,
            "echo out; echo err >&2; exit 3",
            10_000,
            &CancellationToken::new(),
        )
        .unwrap();
        assert!(r.text.contains("out\nerr"), "{}", r.text);
        assert!(r.text.ends_with("[exit code 3]"), "{}", r.text);
        assert_eq!(r.exit_code, Some(3));
        assert!(!r.ok);
    }

    #[test]
    fn timeout_kills_the_group() {
        let d = tempfile::tempdir().unwrap();
        let c = ctx(d.path());
        let t0 = Instant::now();
        let r = run_foreground(
            &c,
            "sleep 30 & sleep 30; echo never",
            300,
            &CancellationToken::new(),
        )
        .unwrap();
        assert!(r.timed_out);
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert!(r.text.contains("timed out after 300 ms"), "{}", r.text);
    }

    #[test]
    fn cd_persists_and_resets_on_escape() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let c = ctx(d.path());
        let never = CancellationToken::new();
        run_foreground(&c, "cd sub && true", 10_000, &never).unwrap();
        assert!(c.cwd().ends_with("sub"));
        let r = run_foreground(&c, "pwd", 10_000, &never).unwrap();
        assert!(r.text.contains("/sub"), "{}", r.text);
        let r = run_foreground(&c, "cd /", 10_000, &never).unwrap();
        assert!(r.text.contains("reset to"), "{}", r.text);
        assert_eq!(c.cwd(), d.path());
    }

    #[test]
    fn huge_output_streams_to_the_spill_file() {
        let d = tempfile::tempdir().unwrap();
        let c = ctx(d.path());
        let r = run_foreground(
            &c,
            "head -c 6000000 /dev/zero | tr '\\0' x; echo END",
            30_000,
            &CancellationToken::new(),
        )
        .unwrap();
        assert!(r.text.len() < 40_000);
        let path = r
            .text
            .split_whitespace()
            .find(|w| w.contains(".spill/"))
            .unwrap()
            .trim_end_matches(';');
        let saved = std::fs::read(path).unwrap();
        assert_eq!(saved.len(), 6_000_004);
        assert!(r.text.contains("END"));
    }
}
