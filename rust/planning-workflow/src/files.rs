//! Plan files: `.plans/<slug>.md` and its tracker sidecar `.plans/<slug>.tracker.json`, in
//! the project root, kept out of git through `.git/info/exclude`. Only a validated plan is
//! ever written, so an invalid candidate never overwrites a valid draft.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::validate::Plan;
use crate::todo::Item;
use serde_json::json;
use std::path::{Path, PathBuf};

pub(crate) fn dir(project: &Path) -> PathBuf {
    project.join(".plans")
}

pub(crate) fn plan_path(project: &Path, slug: &str) -> PathBuf {
    dir(project).join(format!("{slug}.md"))
}

pub(crate) fn tracker_path(project: &Path, slug: &str) -> PathBuf {
    dir(project).join(format!("{slug}.tracker.json"))
}

fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 48 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { "plan".into() } else { out }
}

/// A slug for a new plan that does not take over another session's file.
pub(crate) fn unique_slug(project: &Path, title: &str) -> String {
    let base = slug(title);
    if !plan_path(project, &base).exists() {
        return base;
    }
    (2..1000)
        .map(|n| format!("{base}-{n}"))
        .find(|s| !plan_path(project, s).exists())
        .unwrap_or(base)
}

fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp~");
    // A link planted at the temporary name must not redirect the write (removing it does
    // not follow it); the rename then replaces whatever is at `path` without following it.
    let _ = std::fs::remove_file(&tmp);
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes the plan (and its tracker); returns the plan file's path.
pub(crate) fn write_plan(project: &Path, slug: &str, plan: &Plan) -> Result<PathBuf, String> {
    let d = dir(project);
    if std::fs::symlink_metadata(&d).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(format!(
            "{} is a symbolic link; plans are written only into a real folder of the project",
            d.display()
        ));
    }
    std::fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    yuyao_store::paths::exclude_from_git(project, "/.plans/");
    let path = plan_path(project, slug);
    let mut text = plan.text.trim().to_string();
    text.push('\n');
    write_atomic(&path, &text)?;
    write_tracker(project, slug, plan)?;
    Ok(path)
}

/// The plan's steps as tracker items (`files`/`verify` stay structured metadata).
pub(crate) fn tracker_items(plan: &Plan) -> Vec<Item> {
    plan.steps
        .iter()
        .enumerate()
        .map(|(k, s)| Item {
            id: (k + 1).to_string(),
            content: s.action.clone(),
            status: Default::default(),
            deps: Vec::new(),
        })
        .collect()
}

pub(crate) fn write_tracker(project: &Path, slug: &str, plan: &Plan) -> Result<PathBuf, String> {
    let path = tracker_path(project, slug);
    let items: Vec<_> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(k, s)| {
            json!({"id": (k + 1).to_string(), "content": s.action, "status": "pending",
                   "files": s.files, "verify": s.verify})
        })
        .collect();
    let doc = json!({"plan": format!("{slug}.md"), "title": plan.title, "items": items});
    write_atomic(
        &path,
        &serde_json::to_string_pretty(&doc).unwrap_or_default(),
    )?;
    Ok(path)
}

/// Copies the todo list's statuses into the sidecar's items (matched by id).
pub(crate) fn sync_statuses(project: &Path, slug: &str, items: &[Item]) {
    let path = tracker_path(project, slug);
    let Some(mut doc) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    else {
        return;
    };
    let Some(rows) = doc.get_mut("items").and_then(|v| v.as_array_mut()) else {
        return;
    };
    for row in rows {
        let id = row
            .get("id")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string();
        if let Some(item) = items.iter().find(|i| i.id == id) {
            row["status"] = serde_json::to_value(item.status).unwrap_or_default();
        }
    }
    let _ = write_atomic(
        &path,
        &serde_json::to_string_pretty(&doc).unwrap_or_default(),
    );
}

pub(crate) fn remove(project: &Path, slug: &str) {
    let _ = std::fs::remove_file(plan_path(project, slug));
    let _ = std::fs::remove_file(tracker_path(project, slug));
}
