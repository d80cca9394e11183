//! The bash tool: each command in its own `bash -c` process and process group, stdin from
//! /dev/null, stdout and stderr interleaved through one pipe, a timeout that kills the whole
//! group, ANSI stripped, oversized output spilled, and `cd` persisted within the project.

use crate::args::{opt_bool, opt_int, string};
use crate::output::{cap_output, strip_ansi};
use crate::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use std::io::Read as _;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output kept in memory while a command runs; the rest goes to the spill file only.
const MEMORY_CAP: usize = 8 * 1024 * 1024;

pub struct Bash;

impl Tool for Bash {
    fn name(&self) -> &'static str {
        "bash"
    }
    fn description(&self) -> &'static str {
        "Run a shell command with bash in the working directory. stdin is /dev/null; stdout and stderr are interleaved; the exit code is reported. Default timeout 120000 ms, at most 600000. `cd` persists between calls within the project. Prefer grep/glob/read over cat/find for exploring."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": "integer", "description": "Timeout in milliseconds (default 120000, max 600000)"},
                "description": {"type": "string", "description": "What the command does, in a few words"},
                "run_in_background": {"type": "boolean"}
            },
            "required": ["command"]
        })
    }
    fn run(&self, args: &Value, ctx: &ToolContext, cancel: &CancellationToken) -> ToolOutput {
        run(args, ctx, cancel).unwrap_or_else(ToolOutput::err)
    }
}

fn run(args: &Value, ctx: &ToolContext, cancel: &CancellationToken) -> Result<ToolOutput, String> {
    let command = string(args, "command", &["cmd"])?;
    if command.trim().is_empty() {
        return Err("command is empty".into());
    }
    if opt_bool(args, "run_in_background")?.unwrap_or(false) {
        return Err("run_in_background is not available in this build; run the command in the foreground with a timeout".into());
    }
    let timeout_ms = match opt_int(args, "timeout")? {
        Some(t) if t <= 0 => {
            return Err(format!(
                "timeout must be a positive number of milliseconds, got {t}"
            ));
        }
        Some(t) => (t as u64).min(MAX_TIMEOUT_MS),
        None => ctx.bash_timeout_ms,
    };
    let cwd = ctx.cwd();
    let cwd = if cwd.is_dir() { cwd } else { ctx.project() };
    std::fs::create_dir_all(&ctx.spill_dir)
        .map_err(|e| format!("cannot create {}: {e}", ctx.spill_dir.display()))?;
    let cwd_file = ctx.spill_dir.join(
        format!(
            "cwd-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        )
        .replace(['(', ')'], ""),
    );
    let _ = std::fs::remove_file(&cwd_file);
    // The trap records the final directory however the script ends (even on `exit`).
    let script = format!(
        "trap 'pwd -P > {} 2>/dev/null' EXIT\n{command}",
        shell_quote(&cwd_file.to_string_lossy())
    );
    let (mut reader, writer) = std::io::pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| format!("cannot create a pipe: {e}"))?;
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(&script)
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("TERM", "dumb")
        .env("NO_COLOR", "1")
        .process_group(0);
    let confinement = ctx.confinement();
    yuyao_policy::sandbox::confine(&mut command, &confinement)?;
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start bash: {e}"))?;
    // The command holds the parent's copies of the pipe's write ends: drop it so the reader
    // sees end-of-file when the process ends.
    drop(command);
    let pgid = child.id() as i32;

    let buf = Arc::new(Mutex::new(Vec::<u8>::new()));
    let total = Arc::new(Mutex::new(0usize));
    let done = Arc::new(AtomicBool::new(false));
    let reader_thread = {
        let (buf, total, done) = (buf.clone(), total.clone(), done.clone());
        std::thread::spawn(move || {
            let mut chunk = [0u8; 64 * 1024];
            loop {
                match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if let (Ok(mut b), Ok(mut t)) = (buf.lock(), total.lock()) {
                            *t += n;
                            if b.len() < MEMORY_CAP {
                                let take = n.min(MEMORY_CAP - b.len());
                                b.extend_from_slice(&chunk[..take]);
                            }
                        }
                    }
                }
            }
            done.store(true, Ordering::SeqCst);
        })
    };

    let started = Instant::now();
    let deadline = started + Duration::from_millis(timeout_ms);
    let mut ended_by: Option<&str> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(e) => return Err(format!("lost track of the command: {e}")),
        }
        if cancel.is_cancelled() || Instant::now() >= deadline {
            ended_by = Some(if cancel.is_cancelled() {
                "interrupted"
            } else {
                "timeout"
            });
            kill_group(pgid);
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Background children may keep the pipe open: wait briefly, then stop reading.
    let grace = Instant::now() + Duration::from_millis(300);
    while !done.load(Ordering::SeqCst) && Instant::now() < grace {
        std::thread::sleep(Duration::from_millis(5));
    }
    let still_open = !done.load(Ordering::SeqCst);
    if !still_open {
        let _ = reader_thread.join();
    }

    let raw = buf.lock().map(|b| b.clone()).unwrap_or_default();
    let total = total.lock().map(|t| *t).unwrap_or(raw.len());
    let mut text = strip_ansi(&String::from_utf8_lossy(&raw));
    if total > raw.len() {
        text.push_str(&format!(
            "\n[… {} more bytes were not kept …]",
            total - raw.len()
        ));
    }
    let mut out = cap_output(text.trim_end_matches('\n'), &ctx.spill_dir, "bash");
    let code = status.and_then(|s| s.code());
    let mut notes = Vec::new();
    match ended_by {
        Some("timeout") => notes.push(format!(
            "timed out after {} ms; the process group was killed (output so far above). Pass a larger timeout (max 600000) or run it differently.",
            timeout_ms
        )),
        Some(_) => notes.push("interrupted by the user; the process group was killed".into()),
        None => notes.push(format!("exit code {}", code.map_or("none (killed by a signal)".into(), |c| c.to_string()))),
    }
    if still_open {
        notes.push("background processes still hold the output; it is not waited for".into());
    }
    if let Some(note) = yuyao_policy::sandbox::blocked_note(&confinement, code, &text) {
        notes.push(note);
    }
    if let Some(note) = persist_cwd(ctx, &cwd_file) {
        notes.push(note);
    }
    let _ = std::fs::remove_file(&cwd_file);
    if out.is_empty() {
        out = "(no output)".into();
    }
    out.push_str(&format!("\n[{}]", notes.join("; ")));
    let ok = ended_by.is_none() && code == Some(0);
    Ok(ToolOutput {
        ok,
        text: out,
        images: Vec::new(),
    })
}

/// Moves the session cwd where the command ended, unless that left the allowed roots.
fn persist_cwd(ctx: &ToolContext, cwd_file: &PathBuf) -> Option<String> {
    let new = std::fs::read_to_string(cwd_file).ok()?;
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

fn kill_group(pgid: i32) {
    // SAFETY: kill(2) with a negative pid signals the process group we created; it touches
    // no memory of ours.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
