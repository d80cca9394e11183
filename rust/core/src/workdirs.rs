//! `/add-dir <path>` and `/cd <path>`: the folders a session works in. Both are user commands
//! only (no tool reaches them, so a hostile model cannot widen its own reach).
//!
//! `/add-dir` makes a folder readable and writable for the session like the project: file
//! tools, grep/glob, the OS sandbox's writable folders (all read `ToolContext::roots` /
//! `Policy::roots`). `/`, the user's home (or a folder above it), yuyao's own folder and
//! secret folders are refused; the secret-file rules still apply inside an added folder.
//! `/cd` moves the session's working directory (bash's cwd, relative paths; the model is told
//! in the next `[settings]` note, with the new place's AGENTS.md); a folder outside the
//! project and the added folders needs the user's yes (refused headless) and is then added.

use crate::session::{CoreError, Session};
use std::path::{Path, PathBuf};
use yuyao_protocol::{NoticeLevel, PermissionAnswer, Request};

/// Largest AGENTS.md excerpt sent after `/cd`.
const AGENTS_CHARS: usize = 8000;

impl Session {
    /// The folders added with `/add-dir` (or accepted by `/cd`), in order.
    pub fn added_dirs(&self) -> Vec<PathBuf> {
        self.ctx.roots().into_iter().skip(1).collect()
    }

    fn resolve_dir(&self, raw: &str) -> Result<PathBuf, CoreError> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(CoreError::Usage("a path is needed".into()));
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let expanded = match (raw.strip_prefix("~"), &home) {
            (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
                h.join(rest.trim_start_matches('/'))
            }
            _ => PathBuf::from(raw),
        };
        let full = if expanded.is_absolute() {
            expanded
        } else {
            self.ctx.cwd().join(expanded)
        };
        let dir = full
            .canonicalize()
            .map_err(|e| CoreError::Usage(format!("{}: {e}", full.display())))?;
        if !dir.is_dir() {
            return Err(CoreError::Usage(format!(
                "{} is not a folder",
                dir.display()
            )));
        }
        Ok(dir)
    }

    /// Why `dir` may not become a working folder, if it may not.
    fn refuse_dir(&self, dir: &Path) -> Option<String> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .and_then(|h| h.canonicalize().ok());
        if dir.parent().is_none() {
            return Some("the whole file system (/) cannot be added".into());
        }
        if let Some(h) = &home
            && h.starts_with(dir)
        {
            return Some(format!(
                "{} holds your home folder: too wide (name a project folder inside it)",
                dir.display()
            ));
        }
        let own = self
            .paths
            .home
            .canonicalize()
            .unwrap_or(self.paths.home.clone());
        if dir.starts_with(&own) || own.starts_with(dir) {
            return Some("yuyao's own folder is never writable by tools".into());
        }
        if yuyao_policy::sensitive::is_sensitive(dir)
            || dir.components().any(|c| {
                matches!(
                    c.as_os_str().to_str(),
                    Some(".ssh" | ".gnupg" | ".aws" | ".kube")
                )
            })
        {
            return Some(format!("{} holds secrets", dir.display()));
        }
        None
    }

    fn add_root(&self, dir: &Path) {
        if let Ok(mut r) = self.ctx.roots.lock()
            && !r.iter().any(|x| x == dir)
        {
            r.push(dir.to_path_buf());
        }
        let mut st = self.lock();
        if !st.policy.roots.iter().any(|x| x == dir) {
            st.policy.roots.push(dir.to_path_buf());
        }
        st.pending_notes.push(format!(
            "[settings] The user added the folder {} to this session: you may read and edit files there.",
            dir.display()
        ));
        st.trajectory.record(
            "add_dir",
            serde_json::json!({"dir": dir.display().to_string()}),
        );
    }
}

/// The `/status` line of the added folders (empty without any).
pub(crate) fn status_line(s: &Session) -> String {
    let dirs = s.added_dirs();
    if dirs.is_empty() {
        return String::new();
    }
    let list: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    format!("\nadded     {}", list.join(", "))
}

pub(crate) fn add_dir_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if args.is_empty() {
        let dirs = s.added_dirs();
        return Ok(if dirs.is_empty() {
            "no added folders (usage: /add-dir <path>)".into()
        } else {
            format!(
                "added folders:\n{}",
                dirs.iter()
                    .map(|d| format!("  {}", d.display()))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        });
    }
    let dir = s.resolve_dir(&args.join(" "))?;
    if let Some(why) = s.refuse_dir(&dir) {
        return Err(CoreError::Usage(format!("/add-dir refused: {why}")));
    }
    if s.ctx.within_roots(&dir) {
        return Ok(format!(
            "{} is already inside the session's folders",
            dir.display()
        ));
    }
    s.add_root(&dir);
    Ok(format!(
        "added {}: readable and writable for this session (file tools, grep/glob, the sandbox)",
        dir.display()
    ))
}

pub(crate) fn cd_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if args.is_empty() {
        return Ok(s.cwd());
    }
    let dir = s.resolve_dir(&args.join(" "))?;
    if !s.ctx.within_roots(&dir) {
        if let Some(why) = s.refuse_dir(&dir) {
            return Err(CoreError::Usage(format!("/cd refused: {why}")));
        }
        let asked = match s.handler.as_ref().filter(|_| !s.opts.headless) {
            None => false,
            Some(h) => {
                let answer = h.request(&Request::Permission {
                    tool: "cd".into(),
                    summary: format!("/cd {}", dir.display()),
                    detail: format!(
                        "{} is outside the project and the added folders; moving there adds it to the session (readable and writable).",
                        dir.display()
                    ),
                    reason: "a working directory outside the project".into(),
                    rules: Vec::new(),
                });
                let parsed: Option<PermissionAnswer> = answer.as_deref().and_then(|a| {
                    serde_json::from_value(serde_json::Value::String(a.trim().to_string())).ok()
                });
                matches!(
                    parsed,
                    Some(
                        PermissionAnswer::Allow
                            | PermissionAnswer::AllowSession
                            | PermissionAnswer::AllowProject
                            | PermissionAnswer::AllowAlways
                    )
                )
            }
        };
        if !asked {
            return Err(CoreError::Usage(format!(
                "/cd refused: {} is outside the project and the added folders{} (add it first with /add-dir)",
                dir.display(),
                if s.opts.headless {
                    "; nobody can confirm it in a headless session"
                } else {
                    ""
                }
            )));
        }
        s.add_root(&dir);
    }
    if let Ok(mut c) = s.ctx.cwd.lock() {
        *c = dir.clone();
    }
    let agents = dir.join("AGENTS.md");
    let mut out = format!("working directory: {}", dir.display());
    if dir != s.paths.project
        && let Ok(text) = std::fs::read_to_string(&agents)
    {
        let text: String = text.chars().take(AGENTS_CHARS).collect();
        s.lock().pending_notes.push(format!(
            "[settings] The working directory is now {}. Its AGENTS.md applies there:\n{}",
            dir.display(),
            text.trim()
        ));
        out.push_str(" (its AGENTS.md is read)");
    }
    s.notice(NoticeLevel::Info, out.clone());
    s.lock()
        .trajectory
        .record("cd", serde_json::json!({"dir": dir.display().to_string()}));
    Ok(out)
}

/// The slash commands of this feature (feature.rs).
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "workdirs",
    commands: &[
        crate::cmd!(
            "add-dir",
            [],
            "<path>",
            "add a working directory",
            Some(crate::workdirs::add_dir_command)
        ),
        crate::cmd!(
            "cd",
            [],
            "<path>",
            "change the working directory",
            Some(crate::workdirs::cd_command)
        ),
    ],
    status_line: Some(status_line),
    ..crate::feature::Feature::NONE
};
