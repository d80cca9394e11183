//! Project hook files changed while a session ran. A hook runs with the user's rights, and
//! the agent's tools may create a `hooks.json` that did not exist (the mount namespace keeps
//! only existing control files read-only), so a file that changed between a session's open
//! and its close is held back at the next open — its hooks do not run — until the user looks
//! at it and says `/hooks approve`. Edits made between sessions (the user's) are not held.
//! The record lives in `~/.yuyao/hooks-review.json`, out of the repository's reach.

use crate::hooks::{self, HookSource};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn record_file(home: &Path) -> PathBuf {
    home.join("hooks-review.json")
}

fn digest(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(format!("{:x}", Sha256::digest(&bytes)))
}

fn read(home: &Path) -> serde_json::Map<String, serde_json::Value> {
    std::fs::read_to_string(record_file(home))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn write(home: &Path, map: &serde_json::Map<String, serde_json::Value>) {
    let text = serde_json::to_string_pretty(map).unwrap_or_default();
    let _ = yuyao_store::write_atomic(&record_file(home), text.as_bytes());
}

/// The project's hook files (and its plugins' manifests, hook and MCP files, which run
/// programs the same way) and their content digests now (`None`: absent).
pub fn snapshot(home: &Path, project: &Path) -> Vec<(PathBuf, Option<String>)> {
    hooks::files(home, project)
        .into_iter()
        .filter(|(_, s)| *s == HookSource::Project)
        .map(|(p, _)| p)
        .chain(crate::plugins::project_program_files(home, project))
        .map(|p| {
            let d = digest(&p);
            (p, d)
        })
        .collect()
}

/// `opened` plus the files of this kind that appeared since (a plugin written during the
/// session), as absent at open.
pub fn with_new_files(
    home: &Path,
    project: &Path,
    opened: &[(PathBuf, Option<String>)],
) -> Vec<(PathBuf, Option<String>)> {
    let mut out = opened.to_vec();
    for (p, _) in snapshot(home, project) {
        if !out.iter().any(|(q, _)| *q == p) {
            out.push((p, None));
        }
    }
    out
}

/// At close: the files whose content changed since `opened` are held for review.
pub fn note_changes(home: &Path, opened: &[(PathBuf, Option<String>)]) {
    let mut map = read(home);
    let mut changed = false;
    for (path, before) in opened {
        let now = digest(path);
        if now.is_some() && now != *before {
            map.insert(path.display().to_string(), serde_json::json!(now));
            changed = true;
        }
    }
    if changed {
        write(home, &map);
    }
}

/// Whether `path`'s current content is held for review.
pub fn held(home: &Path, path: &Path) -> bool {
    let map = read(home);
    match map
        .get(&path.display().to_string())
        .and_then(|v| v.as_str())
    {
        Some(h) => digest(path).as_deref() == Some(h),
        None => false,
    }
}

/// `/hooks approve`: the held files of this project run again. Returns them.
pub fn approve(home: &Path, project: &Path) -> Vec<String> {
    let mut map = read(home);
    let mine: Vec<String> = snapshot(home, project)
        .into_iter()
        .map(|(p, _)| p.display().to_string())
        .filter(|k| map.contains_key(k))
        .collect();
    for k in &mine {
        map.remove(k);
    }
    if !mine.is_empty() {
        write(home, &map);
    }
    mine
}
