//! `/remember`, `/forget`, `/memory`, and what a submitted prompt writes: an explicit
//! "remember that …" is kept at once (every front); a correction is offered to the person
//! (TUI, one keystroke) and never saved unattended.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::write::{Found, forget_candidates};
use yuyao_core::{CoreError, Session};
use yuyao_protocol::{NoticeLevel, Request};
use yuyao_store::memory::{Kind, Scope};

fn memory_on(s: &Session) -> Result<(), CoreError> {
    if s.memory().enabled {
        Ok(())
    } else {
        Err(CoreError::Usage(
            "memory is off in this session (--no-memory or memory.enabled = false)".into(),
        ))
    }
}

fn describe(f: &Found) -> String {
    let e = &f.entry;
    format!(
        "{} [{}{}] {}{}{}",
        e.id,
        e.scope
            .clone()
            .unwrap_or_else(|| f.file.scope.as_str().to_string()),
        match f.file.kind {
            Kind::Daily => ", daily note",
            _ => "",
        },
        e.when
            .as_deref()
            .map(|w| format!("{w} "))
            .unwrap_or_default(),
        e.text.replace('\n', " "),
        e.why
            .as_deref()
            .filter(|w| !w.is_empty())
            .map(|w| format!("  (why: {w})"))
            .unwrap_or_default()
    )
}

/// `/remember [--global] <text>`.
pub(crate) fn remember(s: &Session, args: &[String]) -> Result<String, CoreError> {
    memory_on(s)?;
    let mut global = false;
    let mut src = "remember";
    let mut words = Vec::new();
    for a in args {
        match a.as_str() {
            "--global" | "-g" => global = true,
            // The TUI's accepted correction candidate.
            "--correction" => src = "correction",
            _ => words.push(a.as_str()),
        }
    }
    let text = words.join(" ");
    if text.trim().is_empty() {
        return Err(CoreError::Usage(
            "usage: /remember [--global] <text>".into(),
        ));
    }
    let scope = if global {
        Scope::Global
    } else {
        Scope::Project
    };
    let why = format!("user said: {text}");
    super::backend::remember(s, scope, &text, &why, src).map_err(CoreError::Failed)
}

/// `/forget <query>`: one match is removed; several are listed and nothing is removed unless
/// the query is an id.
pub(crate) fn forget(s: &Session, args: &[String]) -> Result<String, CoreError> {
    memory_on(s)?;
    let query = args.join(" ");
    if query.trim().is_empty() {
        return Err(CoreError::Usage("usage: /forget <query or id>".into()));
    }
    let all = s.memory().all();
    let hits = forget_candidates(&all, &query);
    match hits.as_slice() {
        [] => Err(CoreError::Usage(format!(
            "no memory entry matches '{query}' (/memory lists them)"
        ))),
        [one] => {
            let f = s
                .memory()
                .delete(&one.entry.id)
                .map_err(CoreError::Failed)?;
            Ok(format!(
                "forgot {} from {}: {}",
                f.entry.id,
                f.file.path.display(),
                f.entry.text
            ))
        }
        many => {
            let mut out = format!(
                "{} entries match '{query}'; nothing was removed. Forget one by its id (/forget <id>):\n",
                many.len()
            );
            for f in many {
                out.push_str(&format!("  {}\n", describe(f)));
            }
            Ok(out.trim_end().to_string())
        }
    }
}

/// `/memory [list | edit <id> [text] | delete <id> | open [global]]`.
pub(crate) fn memory(s: &Session, args: &[String]) -> Result<String, CoreError> {
    memory_on(s)?;
    // The index and maintenance actions (also `yuyao memory …`).
    if let Some(r) = super::search::memory_action(s, args) {
        return r;
    }
    match args.first().map(String::as_str) {
        None | Some("list") => {
            let all = s.memory().all();
            let service = super::backend::list(s).map(|(server, text)| {
                format!(
                    "memory service '{server}' (recent entries):\n{}",
                    if text.trim().is_empty() {
                        "  (none yet)".to_string()
                    } else {
                        text.trim()
                            .lines()
                            .map(|l| format!("  {l}"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    }
                )
            });
            if let Some(service) = service {
                if all.is_empty() {
                    return Ok(service);
                }
                let mut out = format!("{service}\n");
                let mut file = None;
                for f in &all {
                    if file.as_ref() != Some(&f.file.path) {
                        out.push_str(&format!("{}\n", f.file.path.display()));
                        file = Some(f.file.path.clone());
                    }
                    out.push_str(&format!("  {}\n", describe(f)));
                }
                return Ok(out.trim_end().to_string());
            }
            if all.is_empty() {
                return Ok(format!(
                    "no memory yet: /remember <text> writes {} (--global: {})",
                    s.memory().layout.target(Scope::Project).display(),
                    s.memory().layout.target(Scope::Global).display()
                ));
            }
            let mut out = String::new();
            let mut file = None;
            for f in &all {
                if file.as_ref() != Some(&f.file.path) {
                    out.push_str(&format!("{}\n", f.file.path.display()));
                    file = Some(f.file.path.clone());
                }
                out.push_str(&format!("  {}\n", describe(f)));
            }
            Ok(out.trim_end().to_string())
        }
        Some("delete") => {
            let [_, id] = args else {
                return Err(CoreError::Usage("usage: /memory delete <id>".into()));
            };
            let f = s.memory().delete(id).map_err(CoreError::Usage)?;
            Ok(format!(
                "deleted {} from {}: {}",
                f.entry.id,
                f.file.path.display(),
                f.entry.text
            ))
        }
        Some("edit") => {
            let Some(id) = args.get(1) else {
                return Err(CoreError::Usage(
                    "usage: /memory edit <id> [new text]".into(),
                ));
            };
            let text = args[2..].join(" ");
            if text.trim().is_empty() {
                // The TUI opens $EDITOR itself (at `/memory path <id>`); here there is no
                // terminal to give an editor.
                entry_location(s, id)?;
                return Err(CoreError::Usage(format!(
                    "/memory edit {id} without text opens $EDITOR only in the yuyao TUI; here give the new text inline: /memory edit {id} <new text>"
                )));
            }
            let f = s.memory().edit(id, &text).map_err(CoreError::Usage)?;
            Ok(format!(
                "edited {} in {}: {text}",
                f.entry.id,
                f.file.path.display()
            ))
        }
        Some("open") => {
            let scope = open_scope(args.get(1).map(String::as_str))?;
            let path = s.memory().layout.target(scope);
            Err(CoreError::Usage(format!(
                "/memory open runs $EDITOR only in the yuyao TUI; here edit {} directly, or use /memory edit <id> <new text>, /remember <text>, /forget <id>",
                path.display()
            )))
        }
        // `<file>:<line>` of an entry or a memory file (created when missing): where the TUI
        // opens $EDITOR for `/memory edit <id>` and `/memory open`.
        Some("path") => match args.get(1).map(String::as_str) {
            None | Some("project" | "global" | "--global") => {
                let scope = open_scope(args.get(1).map(String::as_str))?;
                let path = memory_file(s, scope)?;
                Ok(format!("{}:1", path.display()))
            }
            Some(id) => {
                let (path, line) = entry_location(s, id)?;
                Ok(format!("{}:{line}", path.display()))
            }
        },
        Some(other) => Err(CoreError::Usage(format!(
            "unknown /memory action '{other}': use list, edit <id> [text], delete <id>, open or path"
        ))),
    }
}

fn open_scope(arg: Option<&str>) -> Result<Scope, CoreError> {
    match arg {
        Some("global" | "--global") => Ok(Scope::Global),
        None | Some("project") => Ok(Scope::Project),
        Some(o) => Err(CoreError::Usage(format!(
            "usage: /memory open [project|global] (got '{o}')"
        ))),
    }
}

/// The memory file of `scope`, created (and kept out of git) when missing.
fn memory_file(s: &Session, scope: Scope) -> Result<std::path::PathBuf, CoreError> {
    let path = s.memory().layout.target(scope);
    if !path.exists() {
        s.memory()
            .layout
            .write_atomic(&path, b"# Memory\n\n")
            .map_err(|e| CoreError::Failed(format!("cannot create {}: {e}", path.display())))?;
        if scope == Scope::Project && s.memory().layout.write == s.memory().layout.project {
            yuyao_store::memory::files::exclude_written(&s.memory().layout.project, &path);
        }
    }
    Ok(path)
}

fn entry_location(s: &Session, id: &str) -> Result<(std::path::PathBuf, usize), CoreError> {
    let all = s.memory().all();
    let f = all
        .iter()
        .find(|f| f.entry.id == id)
        .ok_or_else(|| CoreError::Usage(format!("no memory entry has the id {id}")))?;
    Ok((f.file.path.clone(), f.entry.line_start))
}

/// On submit, before the prompt joins the history: an explicit "remember that …" is written;
/// a correction is offered to a person (interactive sessions only).
pub(crate) fn on_submit(s: &Session, text: &str) {
    if !s.memory().enabled {
        return;
    }
    if let Some(r) = super::detect::remember_request(text) {
        let scope = if r.global {
            Scope::Global
        } else {
            Scope::Project
        };
        let why = format!("user said: {}", text.trim());
        match super::backend::remember(s, scope, &r.text, &why, "natural-language") {
            Ok(said) => s.notice(NoticeLevel::Info, said),
            Err(e) => s.notice(
                NoticeLevel::Warning,
                format!("could not remember that: {e}"),
            ),
        }
        return;
    }
    if s.options().headless {
        return;
    }
    let Some(candidate) = super::detect::correction(text) else {
        return;
    };
    let Some(handler) = s.handler() else {
        return;
    };
    let answer = handler
        .request(&Request::RememberCandidate {
            text: candidate.clone(),
        })
        .unwrap_or_default();
    let scope = match answer.trim() {
        "p" | "project" => Scope::Project,
        "g" | "global" => Scope::Global,
        _ => return,
    };
    let why = format!("user said: {}", text.trim());
    match s.memory().add(scope, &candidate, &why, "correction") {
        Ok(f) => s.notice(
            NoticeLevel::Info,
            format!(
                "remembered in {} ({}): {}",
                f.file.path.display(),
                f.entry.id,
                f.entry.text
            ),
        ),
        Err(e) => s.notice(
            NoticeLevel::Warning,
            format!("could not remember that: {e}"),
        ),
    }
}
