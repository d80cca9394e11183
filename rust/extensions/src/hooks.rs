//! Running lifecycle hooks for a session. A hook starts through the one spawn path under its
//! profile (`process_profile`: the agent's sandbox level and network switch; a user-level hook
//! more only where the user's own configuration says so), the model key removed from its
//! environment, with the event as JSON on stdin, in the project root, under a timeout that
//! kills its process group, and dies with yuyao. Project hooks run only where the project's executables may
//! (`Session::project_extensions_allowed`); `features.hooks = false` makes every hook inert.

use serde_json::{Value, json};
use std::io::Write as _;
use std::time::{Duration, Instant};
use yuyao_core::{Command, CoreError, Feature, Origin, ProcessKind, Session, StopGate};
use yuyao_extension_files::hooks::{self, Hook, HookEvent, HookSource, Permission, Reply};
use yuyao_policy::sandbox::{self, Launch};
use yuyao_protocol::NoticeLevel;

/// Output kept of a hook's stdout or stderr.
const OUTPUT_CAP: usize = 64 * 1024;
pub const DEFAULT_MAX_STOP_BLOCKS: i64 = 3;

/// The hooks a session loaded, and whether `SessionEnd` already ran.
#[derive(Default)]
pub struct HookState {
    pub list: Vec<Hook>,
    pub ended: bool,
}

pub struct HookRun {
    pub exit: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl HookRun {
    /// What the hook printed, for a model or a status file.
    pub fn output(&self) -> String {
        let mut parts = Vec::new();
        for s in [&self.stdout, &self.stderr] {
            if !s.trim().is_empty() {
                parts.push(s.trim().to_string());
            }
        }
        if self.timed_out {
            parts.push("(timed out)".into());
        }
        parts.join("\n")
    }
}

fn read_capped(mut r: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            if buf.len() < OUTPUT_CAP {
                buf.extend_from_slice(&chunk[..n.min(OUTPUT_CAP - buf.len())]);
            }
        }
        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
    });
    rx
}

/// A hook that could not start: its reason, as the hook's stderr.
fn not_started(why: String) -> HookRun {
    HookRun {
        exit: None,
        stdout: String::new(),
        stderr: why,
        timed_out: false,
    }
}

/// `bash -c <hook>` in the project root, its own process group (a timeout kills everything
/// it started), stdin/stdout/stderr the given pipe ends.
fn hook_launch(s: &Session, hook: &Hook, pipes: HookPipes) -> Launch {
    let dir = s.paths().project.clone();
    let mut launch = Launch::new("bash", &["-c", &hook.command], &dir);
    launch.process_group = true;
    for (k, v) in [
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("GIT_TERMINAL_PROMPT", "0"),
    ]
    .into_iter()
    .chain(s.program_env().iter().copied())
    {
        launch.env.push((k.into(), Some(v.into())));
    }
    for k in ["YUYAO_PROJECT_DIR", "CLAUDE_PROJECT_DIR"] {
        launch
            .env
            .push((k.into(), Some(dir.clone().into_os_string())));
    }
    launch
        .env
        .push(("YUYAO_HOOK_EVENT".into(), Some(hook.event.name().into())));
    launch.stdin = Some(pipes.stdin);
    launch.stdout = Some(pipes.stdout);
    launch.stderr = Some(pipes.stderr);
    launch
}

/// The child's ends of its three pipes.
struct HookPipes {
    stdin: std::os::fd::OwnedFd,
    stdout: std::os::fd::OwnedFd,
    stderr: std::os::fd::OwnedFd,
}

/// Runs one hook command with `input` on stdin, confined by its profile (`process_profile`:
/// a project hook gets the agent's sandbox, a user hook the same unless the user's own
/// configuration says otherwise); the model key never reaches it and it dies with yuyao.
fn run_command(s: &Session, hook: &Hook, input: &Value) -> HookRun {
    let origin = match hook.source {
        HookSource::User => Origin::User,
        HookSource::Project => Origin::Project,
    };
    let confinement = s.process_confinement(ProcessKind::Hook, origin);
    let prepared = match sandbox::prepare(&confinement) {
        Ok(p) => p,
        Err(e) => return not_started(format!("the hook was not started: {e}")),
    };
    let pipes = (|| -> std::io::Result<_> {
        let (in_r, in_w) = std::io::pipe()?;
        let (out_r, out_w) = std::io::pipe()?;
        let (err_r, err_w) = std::io::pipe()?;
        let child_ends = HookPipes {
            stdin: in_r.into(),
            stdout: out_w.into(),
            stderr: err_w.into(),
        };
        Ok((child_ends, in_w, out_r, err_r))
    })();
    let (child_ends, stdin, stdout, stderr) = match pipes {
        Ok(p) => p,
        Err(e) => return not_started(format!("cannot start the hook: {e}")),
    };
    // The launch (with the child's pipe ends) is consumed by the spawn: ours close, so EOF
    // on stdout/stderr means the hook (and what it started) closed them.
    let mut launch = hook_launch(s, hook, child_ends);
    launch.env.extend(s.cache_env(&confinement));
    let mut child = match sandbox::spawn(launch, prepared) {
        Ok(c) => c,
        Err(e) => return not_started(format!("cannot start the hook: {e}")),
    };
    let body = input.to_string();
    // A hook that never reads its stdin must not block us.
    std::thread::spawn(move || {
        let mut stdin = stdin;
        let _ = stdin.write_all(body.as_bytes());
    });
    let out = Some(read_capped(stdout));
    let err = Some(read_capped(stderr));
    let t0 = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if t0.elapsed() >= hook.timeout => {
                timed_out = true;
                // SAFETY: the hook leads its own process group (`hook_launch`).
                unsafe { libc::killpg(child.id() as i32, libc::SIGKILL) };
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    // A daemon the hook left behind may hold the pipes: what came within a second is kept.
    let collect = |rx: Option<std::sync::mpsc::Receiver<String>>| {
        rx.and_then(|rx| rx.recv_timeout(Duration::from_secs(1)).ok())
            .unwrap_or_default()
    };
    HookRun {
        exit: status.and_then(|s| s.code()),
        stdout: collect(out),
        stderr: collect(err),
        timed_out,
    }
}

/// The combined answer of the hooks of one event.
#[derive(Default)]
pub struct Outcome {
    /// The strongest permission any hook asked for (deny > ask > allow).
    pub permission: Option<Permission>,
    /// The reasons of the hooks that asked for it, with their source.
    pub reason: String,
    /// What the hooks had to say to the model.
    pub context: Vec<String>,
    /// Hooks that failed (exit ≠ 0, a block decision or a timeout): their output.
    pub failures: Vec<String>,
}

fn hook_state(s: &Session) -> &std::sync::Mutex<HookState> {
    s.part::<std::sync::Mutex<HookState>>()
}

/// Loads the hook files (at session open); problems become warnings. Returns what the
/// project's hooks would run while they wait for the user's trust (the TUI's trust
/// prompt shows it).
fn load_hooks(s: &Session) -> Vec<String> {
    // With project extensions on, a project hook file loads only from approved bytes
    // (hashed as parsed); off, its hooks are kept for the trust prompt and never run.
    let gate = s.project_extensions_allowed();
    let approved = |f: &std::path::Path, bytes: &[u8]| {
        !gate || yuyao_store::trust::bytes_approved(s.paths(), f, bytes)
    };
    let (mut list, warnings) = hooks::load_if(&s.paths().home, &s.paths().project, &approved);
    // Features' hooks (plugins'): whether they run is asked at every event.
    for more in yuyao_core::features().filter_map(|f| f.hooks) {
        list.extend(more(s));
    }
    for w in warnings {
        s.notice(NoticeLevel::Warning, format!("hooks: {w}"));
    }
    // A project's hook file acts only as the content the user approved (§8); while
    // project extensions are off its hooks are kept for the trust prompt below.

    let waiting = if s.options().project_extensions.is_none() && !s.project_extensions_allowed() {
        list.iter()
            .filter(|h| h.source == HookSource::Project)
            .map(|h| format!("{} hook runs `{}`", h.event.name(), h.raw))
            .collect()
    } else {
        Vec::new()
    };
    let off = disabled_keys(&s.paths().home);
    let mut list = list;
    for h in &mut list {
        h.enabled = !off.contains(&key(h));
    }
    if let Ok(mut h) = hook_state(s).lock() {
        h.list = list;
    }
    waiting
}

fn active_hooks(s: &Session, event: HookEvent, tool: Option<&str>) -> Vec<Hook> {
    if !s.feature_enabled("hooks") {
        return Vec::new();
    }
    let project_ok = s.project_extensions_allowed();
    let Ok(h) = hook_state(s).lock() else {
        return Vec::new();
    };
    h.list
        .iter()
        .filter(|h| h.event == event && h.enabled && h.applies_to(tool))
        .filter(|h| h.source == HookSource::User || project_ok)
        .filter(|h| hook_file_active(s, &h.file))
        .cloned()
        .collect()
}

/// Whether a hook read from `file` may run now (a feature's, e.g. its plugin is on).
fn hook_file_active(s: &Session, file: &std::path::Path) -> bool {
    yuyao_core::features()
        .filter_map(|f| f.hook_active)
        .all(|active| active(s, file))
}

/// Runs the hooks of `event` (for `tool`, if any) in order and combines their replies.
fn run_hooks(s: &Session, event: HookEvent, tool: Option<&str>, extra: Value) -> Outcome {
    let list = active_hooks(s, event, tool);
    let mut outcome = Outcome::default();
    if list.is_empty() {
        return outcome;
    }
    let mut input = json!({
        "hook_event_name": event.name(),
        "session_id": s.id,
        "cwd": s.cwd(),
        "project_dir": s.paths().project.display().to_string(),
    });
    if let (Some(obj), Value::Object(more)) = (input.as_object_mut(), extra) {
        obj.extend(more);
    }
    for hook in list {
        let t0 = Instant::now();
        let run = run_command(s, &hook, &input);
        let reply: Reply = hooks::read_reply(run.exit, &run.stdout, &run.stderr);
        s.lock().trajectory.record(
            "hook",
            json!({"event": event.name(), "command": hook.raw, "source": hook.source.label(),
                   "exit_code": run.exit, "timed_out": run.timed_out,
                   "permission": reply.permission.map(|p| format!("{p:?}").to_lowercase()),
                   "output": run.output(), "ms": t0.elapsed().as_millis() as u64}),
        );
        let label = format!(
            "{} hook `{}` ({})",
            event.name(),
            hook.raw,
            hook.source.label()
        );
        let errored = run.timed_out || run.exit != Some(0);
        // A Claude Code settings hook blocks only by exit 2 or a block decision (both read
        // as Deny); any other error is Claude Code's "non-blocking error": warned about.
        let failed =
            reply.permission == Some(Permission::Deny) || (errored && !hook.claude_settings);
        if failed {
            let why = if reply.reason.is_empty() {
                run.output()
            } else {
                reply.reason.clone()
            };
            outcome.failures.push(format!("{label}: {why}"));
        }
        if errored && reply.permission != Some(Permission::Deny) {
            let how = match (run.timed_out, run.exit) {
                (true, _) => format!("timed out after {} s", hook.timeout.as_secs_f64()),
                (_, Some(c)) => format!("exited with {c}"),
                (_, None) => "was killed".into(),
            };
            s.notice(
                NoticeLevel::Warning,
                format!("{label} {how}: {}", run.output()),
            );
        }
        if reply.permission.is_some() && reply.permission >= outcome.permission {
            if reply.permission > outcome.permission {
                outcome.reason.clear();
            }
            outcome.permission = reply.permission;
            if !reply.reason.is_empty() {
                if !outcome.reason.is_empty() {
                    outcome.reason.push_str("; ");
                }
                outcome.reason.push_str(&reply.reason);
            }
        }
        if !reply.context.is_empty() && run.exit == Some(0) {
            outcome.context.push(reply.context);
        }
    }
    outcome
}

/// PreToolUse (every tool) and beforeShellExecution (commands): a permission to apply
/// on top of the policy's decision, with the hooks' reason.
fn tool_hooks(
    s: &Session,
    tool: &str,
    args: &Value,
    command: Option<&str>,
) -> Option<(Permission, String)> {
    let shown = hooks::claude_name(tool).unwrap_or(tool);
    let mut out = run_hooks(
        s,
        HookEvent::PreToolUse,
        Some(tool),
        json!({"tool_name": shown, "yuyao_tool": tool, "tool_input": args}),
    );
    if let Some(cmd) = command
        && out.permission != Some(Permission::Deny)
    {
        let shell = run_hooks(
            s,
            HookEvent::BeforeShellExecution,
            Some(tool),
            json!({"command": cmd, "tool_name": shown, "yuyao_tool": tool, "tool_input": args}),
        );
        if shell.permission > out.permission {
            out = shell;
        }
    }
    let p = out.permission?;
    let reason = if out.reason.is_empty() {
        "a hook said so".to_string()
    } else {
        out.reason
    };
    Some((p, reason))
}

/// PostToolUse: what the hooks say about a tool's result, for the model.
fn post_tool_hooks(s: &Session, tool: &str, args: &Value, ok: bool, output: &str) -> String {
    let shown = hooks::claude_name(tool).unwrap_or(tool);
    let out = run_hooks(
        s,
        HookEvent::PostToolUse,
        Some(tool),
        json!({"tool_name": shown, "yuyao_tool": tool, "tool_input": args,
               "tool_response": {"ok": ok, "output": output}}),
    );
    let mut lines = out.context;
    if out.permission == Some(Permission::Deny) && !out.reason.is_empty() {
        lines.push(out.reason);
    }
    lines.join("\n")
}

/// UserPromptSubmit: `Err(reason)` blocks the prompt; `Ok` carries context to add.
fn prompt_hooks(s: &Session, prompt: &str) -> Result<Vec<String>, String> {
    // A sub-agent's prompt is the model's, not the user's; its tool calls still pass
    // PreToolUse hooks.
    if s.is_sub_agent() {
        return Ok(Vec::new());
    }
    let out = run_hooks(
        s,
        HookEvent::UserPromptSubmit,
        None,
        json!({"prompt": prompt}),
    );
    if out.permission == Some(Permission::Deny) {
        return Err(if out.reason.is_empty() {
            "a UserPromptSubmit hook blocked it".into()
        } else {
            out.reason
        });
    }
    Ok(out.context)
}

/// Stop: the failing quality gates' output, if any gate failed.
fn stop_hooks(s: &Session, answer: &str, blocks_so_far: u32) -> Option<String> {
    // Stop hooks gate the session's answer to the user, not a sub-agent's report.
    if s.is_sub_agent() {
        return None;
    }
    let out = run_hooks(
        s,
        HookEvent::Stop,
        None,
        json!({"last_assistant_message": answer, "stop_hook_active": blocks_so_far > 0}),
    );
    (!out.failures.is_empty()).then(|| out.failures.join("\n"))
}

/// How many times Stop gates may send the model back to work in one turn.
fn max_stop_blocks(s: &Session) -> u32 {
    s.config()
        .get("hooks.max_stop_blocks")
        .and_then(|v| v.as_integer())
        .unwrap_or(DEFAULT_MAX_STOP_BLOCKS)
        .max(0) as u32
}

/// SessionStart: its context reaches the model before the first call.
fn session_start_hooks(s: &Session) {
    let out = run_hooks(
        s,
        HookEvent::SessionStart,
        None,
        json!({"source": "startup"}),
    );
    if !out.context.is_empty() {
        s.lock().pending_notes.push(out.context.join("\n"));
    }
}

/// SessionEnd, once.
fn session_end_hooks(s: &Session) {
    let first = hook_state(s)
        .lock()
        .map(|mut h| !std::mem::replace(&mut h.ended, true))
        .unwrap_or(false);
    if first {
        run_hooks(s, HookEvent::SessionEnd, None, json!({"reason": "exit"}));
    }
}

/// The user's `/hooks disable` choices: in `~/.yuyao/`, out of the repository's reach.
fn disabled_file(home: &std::path::Path) -> std::path::PathBuf {
    home.join("hooks-disabled.json")
}

/// A hook's identity across sessions: its file, event and command.
fn key(h: &Hook) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}",
        h.file.display(),
        h.event.name(),
        h.raw
    )
}

fn disabled_keys(home: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(disabled_file(home))
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
        .unwrap_or_default()
}

fn save_disabled(home: &std::path::Path, k: &str, on: bool) -> std::io::Result<()> {
    let mut keys = disabled_keys(home);
    keys.retain(|x| x != k);
    if !on {
        keys.push(k.to_string());
    }
    yuyao_store::write_atomic(
        &disabled_file(home),
        serde_json::to_string_pretty(&keys)
            .unwrap_or_default()
            .as_bytes(),
    )
}

// ----------------------------------------------------------------------------------------
// /hooks

/// `/hooks [list] | enable <n> | disable <n>`: the hooks by event, with their source and file.
fn hooks_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let pick = |args: &[String], on: bool| -> Result<String, CoreError> {
        let [_, n] = args else {
            return Err(CoreError::Usage(
                "usage: /hooks enable|disable <number from /hooks list>".into(),
            ));
        };
        let i: usize = n.trim_start_matches('#').parse().map_err(|_| {
            CoreError::Usage(format!("'{n}' is not a hook number (see /hooks list)"))
        })?;
        let mut h = hook_state(s)
            .lock()
            .map_err(|_| CoreError::Failed("hooks unavailable".into()))?;
        let hook = i
            .checked_sub(1)
            .and_then(|i| h.list.get_mut(i))
            .ok_or_else(|| CoreError::Usage(format!("no hook #{i} (see /hooks list)")))?;
        hook.enabled = on;
        let k = key(hook);
        let (event, raw) = (hook.event.name(), hook.raw.clone());
        drop(h);
        save_disabled(&s.paths().home, &k, on)
            .map_err(|e| CoreError::Failed(format!("cannot save the choice: {e}")))?;
        Ok(format!(
            "hook #{i} ({event} `{raw}`) {} (saved in {})",
            if on { "enabled" } else { "disabled" },
            disabled_file(&s.paths().home).display()
        ))
    };
    match args.first().map(String::as_str) {
        None | Some("list") | Some("ls") => Ok(hooks_list(s)),
        Some("enable") | Some("on") => pick(args, true),
        Some("disable") | Some("off") => pick(args, false),
        Some("approve") => {
            // The user's explicit approval of the held hook and plugin files as they are.
            let held: Vec<std::path::PathBuf> = yuyao_core::extension_trust::held_files(s.paths())
                .into_iter()
                .map(|(f, _)| f)
                .filter(|f| {
                    yuyao_core::features()
                        .filter_map(|f| f.hook_files)
                        .any(|files| files(&s.paths().home, &s.paths().project).contains(f))
                        || hooks::files(&s.paths().home, &s.paths().project)
                            .iter()
                            .any(|(p, _)| p == f)
                })
                .collect();
            let files: Vec<String> = yuyao_store::trust::approve(s.paths(), &held)
                .map_err(|e| CoreError::Failed(format!("cannot record the approval: {e}")))?
                .iter()
                .map(|f| yuyao_core::extension_trust::shown(&s.paths().project, f))
                .collect();
            if files.is_empty() {
                return Ok("no hook file of this project is held for review".into());
            }
            load_hooks(s);
            Ok(format!(
                "approved: {} (their hooks run from now on)",
                files.join(", ")
            ))
        }
        Some(other) => Err(CoreError::Usage(format!(
            "unknown /hooks action '{other}': use list, enable <n>, disable <n> or approve"
        ))),
    }
}

fn hooks_list(s: &Session) -> String {
    let project_ok = s.project_extensions_allowed();
    let h = match hook_state(s).lock() {
        Ok(h) => h.list.clone(),
        Err(_) => Vec::new(),
    };
    let mut out = Vec::new();
    if !s.feature_enabled("hooks") {
        out.push("hooks are disabled (features.hooks = false): none runs".to_string());
    }
    if h.is_empty() {
        out.push(format!(
            "no hooks; files read: {}",
            hooks::files(&s.paths().home, &s.paths().project)
                .iter()
                .map(|(p, _)| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return out.join("\n");
    }
    for event in hooks::EVENTS {
        let rows: Vec<String> = h
            .iter()
            .enumerate()
            .filter(|(_, x)| x.event == *event)
            .map(|(i, x)| {
                let state = if !x.enabled {
                    "disabled"
                } else if !hook_file_active(s, &x.file) {
                    "not run: its plugin is off"
                } else if x.source == HookSource::Project && !project_ok {
                    "not run: project not trusted"
                } else {
                    "on"
                };
                format!(
                    "  #{} [{}] {}{}  ({}, {}s, {})",
                    i + 1,
                    x.source.label(),
                    x.raw,
                    x.matcher
                        .as_ref()
                        .map(|m| format!("  matcher: {}", m.text))
                        .unwrap_or_default(),
                    state,
                    x.timeout.as_secs_f64(),
                    x.file.display(),
                )
            })
            .collect();
        if !rows.is_empty() {
            out.push(format!("{}:", event.name()));
            out.extend(rows);
        }
    }
    out.join("\n")
}

static STOP: StopGate = StopGate {
    check: stop_hooks,
    max: max_stop_blocks,
};

/// What this feature adds to a session: the hook files loaded at open (and
/// after `/trust`), PreToolUse/beforeShellExecution verdicts and PostToolUse feedback in the
/// tool pipeline, UserPromptSubmit and Stop gates in the turn, PreCompact, SessionStart once
/// the session has started, SessionEnd when it closes; `/hooks`.
pub static FEATURE: Feature = Feature {
    name: "hooks",
    commands: &[Command {
        name: "hooks",
        aliases: &[],
        usage: "[list | enable <n> | disable <n> | approve]",
        help: "lifecycle hooks (hooks.json) by event and source",
        run: Some(hooks_cmd),
    }],
    state: Some(|_| Box::new(std::sync::Mutex::new(HookState::default()))),
    load_extensions: Some(load_hooks),
    tool_verdict: Some(tool_hooks),
    tool_feedback: Some(post_tool_hooks),
    prompt_gate: Some(prompt_hooks),
    stop_gate: Some(&STOP),
    compacting: Some(|s, focus| {
        run_hooks(
            s,
            HookEvent::PreCompact,
            None,
            json!({"trigger": if focus.is_some() { "manual" } else { "auto" }, "custom_instructions": focus}),
        );
    }),
    // One-shot sub-commands (`yuyao config …`) are not sessions a hook should see.
    started: Some(|s| {
        if !s.options().no_session {
            session_start_hooks(s);
        }
    }),
    close: Some(|s| {
        if !s.options().no_session {
            session_end_hooks(s);
        }
    }),
    ..Feature::NONE
};
