//! Project trust (DESIGN §8): settings a repository ships that widen permissions (`mode`,
//! `sandbox`, `network`, allow rules) apply only once the user trusted that project. The
//! decision is the user's, so it lives in `~/.yuyao/trusted-projects.json`, out of reach of
//! the repository and of the agent's tools.
//!
//! Trust is pinned to content: a project file that can start a process or widen what the
//! agent may do (hooks, `.mcp.json`, plugins, the project config, …) is honoured only while
//! its bytes hash to what the user approved. The agent can create and rewrite files in the
//! project, so "the file exists" or "the project was trusted once" says nothing about who
//! wrote it; a hash the user approved does. Files yuyao saw its own agent write are marked,
//! so a later blanket `--trust-project` does not approve them unseen.

use crate::Paths;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub fn file(paths: &Paths) -> PathBuf {
    paths.home.join("trusted-projects.json")
}

fn key(project: &Path) -> String {
    trust_root(
        &project
            .canonicalize()
            .unwrap_or_else(|_| project.to_path_buf()),
    )
    .display()
    .to_string()
}

/// The project a trust decision belongs to: a worktree yuyao made
/// (`<repo>/.yuyao/worktrees/<name>`) is a checkout of `<repo>` and shares its record, so
/// its files are judged against the same approvals and agent-written marks (a worktree is
/// not a fresh project whose first `--trust-project` would pin what the agent committed).
fn trust_root(project: &Path) -> PathBuf {
    let parts: Vec<_> = project.components().collect();
    for i in (0..parts.len().saturating_sub(2)).rev() {
        if parts[i].as_os_str() == ".yuyao"
            && parts[i + 1].as_os_str() == "worktrees"
            && i + 3 == parts.len()
        {
            return parts[..i].iter().collect();
        }
    }
    project.to_path_buf()
}

fn read(paths: &Paths) -> Value {
    std::fs::read_to_string(file(paths))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

/// Whether the user trusted `paths.project` before.
pub fn is_trusted(paths: &Paths) -> bool {
    read(paths)
        .get("projects")
        .and_then(|p| p.get(key(&paths.project)))
        .is_some()
}

/// Records that the user trusts `paths.project`.
pub fn trust(paths: &Paths) -> std::io::Result<()> {
    let mut v = read(paths);
    if !v.get("projects").is_some_and(Value::is_object) {
        v["projects"] = json!({});
    }
    v["projects"][key(&paths.project)] = json!({"trusted_at": chrono::Utc::now().to_rfc3339()});
    crate::write_atomic(
        &file(paths),
        serde_json::to_string_pretty(&v)
            .unwrap_or_default()
            .as_bytes(),
    )
}

/// Records an allow rule the user granted for this project ("always for this project",
/// `/permissions allow … --project`), so that it applies without trusting the whole project.
pub fn record_grant(paths: &Paths, rule: &str) -> std::io::Result<()> {
    let mut v = read(paths);
    if !v.get("granted").is_some_and(Value::is_object) {
        v["granted"] = json!({});
    }
    let k = key(&paths.project);
    let list = v["granted"]
        .get(&k)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !list.iter().any(|r| r.as_str() == Some(rule)) {
        let mut list = list;
        list.push(json!(rule));
        v["granted"][k] = Value::Array(list);
        crate::write_atomic(
            &file(paths),
            serde_json::to_string_pretty(&v)
                .unwrap_or_default()
                .as_bytes(),
        )?;
    }
    Ok(())
}

/// The project allow rules the user granted (see [`record_grant`]).
pub fn granted(paths: &Paths) -> Vec<String> {
    read(paths)
        .get("granted")
        .and_then(|g| g.get(key(&paths.project)))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The sha256 of `bytes`, as the trust record stores it.
pub fn digest_bytes(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
}

/// The digest of `path`'s content now (`None`: absent or unreadable).
pub fn digest_file(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|b| digest_bytes(&b))
}

/// How a file is named in the record: relative to the project when inside it.
fn file_key(paths: &Paths, file: &Path) -> String {
    file.strip_prefix(&paths.project)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| file.display().to_string())
}

fn entry<'a>(v: &'a Value, table: &str, paths: &Paths, file: &Path) -> Option<&'a str> {
    v.get(table)?
        .get(key(&paths.project))?
        .get(file_key(paths, file))?
        .as_str()
}

/// The digest the user approved for `file` of this project, if any.
pub fn approved_digest(paths: &Paths, file: &Path) -> Option<String> {
    entry(&read(paths), "approved", paths, file).map(str::to_string)
}

fn content_dir(paths: &Paths) -> PathBuf {
    paths.home.join("trust-content")
}

/// The content the user last approved for `file`, when it was kept.
pub fn approved_content(paths: &Paths, file: &Path) -> Option<Vec<u8>> {
    let d = approved_digest(paths, file)?;
    if d.len() != 64 || !d.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    std::fs::read(content_dir(paths).join(d)).ok()
}

/// Whether `bytes` (the content about to be used) is what the user approved for `file`.
/// Callers that parse the file hash the very bytes they parse, so a swap between the check
/// and the read cannot slip through.
pub fn bytes_approved(paths: &Paths, file: &Path, bytes: &[u8]) -> bool {
    approved_digest(paths, file).is_some_and(|d| d == digest_bytes(bytes))
}

/// Whether the user has approved any file of this project before (a project's first trust
/// pins what is there; after that, new and changed files wait for a review).
pub fn has_approvals(paths: &Paths) -> bool {
    // The project's entry exists once anything was approved — even when its first trust
    // found no extension file at all (else every later `--trust-project` would be a first).
    read(paths)
        .get("approved")
        .and_then(|a| a.get(key(&paths.project)))
        .is_some_and(Value::is_object)
}

/// Where a file stands against the record: one read of the record, one hash of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Its content now is the approved one.
    Approved,
    /// Never approved (or absent).
    New,
    /// Approved once, changed since.
    Changed,
    /// Its content now was seen written by a yuyao agent (see [`mark_agent_written`]).
    AgentWritten,
}

pub fn status(paths: &Paths, file: &Path) -> Status {
    let v = read(paths);
    let now = digest_file(file);
    let is = |table| now.is_some() && entry(&v, table, paths, file) == now.as_deref();
    if is("approved") {
        Status::Approved
    } else if is("agent_written") {
        Status::AgentWritten
    } else if entry(&v, "approved", paths, file).is_some() {
        Status::Changed
    } else {
        Status::New
    }
}

/// Whether `file`'s content now is what the user approved.
pub fn is_approved(paths: &Paths, file: &Path) -> bool {
    status(paths, file) == Status::Approved
}

fn update(paths: &Paths, table: &str, files: &[(PathBuf, Option<String>)]) -> std::io::Result<()> {
    if files.is_empty() && (table != "approved" || has_approvals(paths)) {
        return Ok(());
    }
    let mut v = read(paths);
    if !v.get(table).is_some_and(Value::is_object) {
        v[table] = json!({});
    }
    let k = key(&paths.project);
    if !v[table].get(&k).is_some_and(Value::is_object) {
        v[table][&k] = json!({});
    }
    for (file, digest) in files {
        let fk = file_key(paths, file);
        match digest {
            Some(d) => v[table][&k][fk] = json!(d),
            None => {
                if let Some(o) = v[table][&k].as_object_mut() {
                    o.remove(&fk);
                }
            }
        }
    }
    crate::write_atomic(
        &file(paths),
        serde_json::to_string_pretty(&v)
            .unwrap_or_default()
            .as_bytes(),
    )
}

/// Records that the user approved the content `files` hold now (an absent file's approval
/// is dropped). Returns the files whose content was recorded.
pub fn approve(paths: &Paths, files: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    let mut now: Vec<(PathBuf, Option<String>)> = Vec::new();
    for f in files {
        // The approved bytes are kept (by digest), so a later change is shown as a diff.
        let bytes = std::fs::read(f).ok();
        let digest = bytes.as_deref().map(digest_bytes);
        if let (Some(b), Some(d)) = (&bytes, &digest) {
            let _ = crate::write_atomic(&content_dir(paths).join(d), b);
        }
        now.push((f.clone(), digest));
    }
    update(paths, "approved", &now)?;
    Ok(now
        .into_iter()
        .filter(|(_, d)| d.is_some())
        .map(|(f, _)| f)
        .collect())
}

/// Runs `write`, yuyao's own rewrite of a project extension file on the user's command
/// (`/config set --project`, `/permissions … --project`, `/mcp add --scope project`), and
/// keeps the file's approval: approved (or absent) before → the new content is approved;
/// held before → still held (a rewrite never launders content the user has not seen).
pub fn keep_approval<T>(paths: &Paths, file: &Path, write: impl FnOnce() -> T) -> T {
    let was_ok = !file.exists() || is_approved(paths, file);
    let out = write();
    if was_ok {
        let _ = approve(paths, &[file.to_path_buf()]);
    }
    out
}

/// Records that a yuyao agent wrote these contents (at once, not at a clean close: a killed
/// session must leave the mark too).
pub fn mark_agent_written(paths: &Paths, files: &[(PathBuf, String)]) -> std::io::Result<()> {
    let list: Vec<(PathBuf, Option<String>)> = files
        .iter()
        .map(|(f, d)| (f.clone(), Some(d.clone())))
        .collect();
    update(paths, "agent_written", &list)
}

/// Whether a project-level value of `key` would widen what the agent may do.
pub fn widens(key: &str, value: &str) -> bool {
    match key {
        "mode" => !matches!(value, "plan" | "ask" | "default" | "read-only" | "readonly"),
        "sandbox" => value == "full-access" || value == "danger-full-access",
        "network" => matches!(value, "on" | "true" | "enabled"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_per_project_and_persisted() {
        let home = tempfile::tempdir().unwrap();
        let p1 = tempfile::tempdir().unwrap();
        let p2 = tempfile::tempdir().unwrap();
        let a = Paths {
            home: home.path().to_path_buf(),
            project: p1.path().to_path_buf(),
        };
        let b = Paths {
            home: home.path().to_path_buf(),
            project: p2.path().to_path_buf(),
        };
        assert!(!is_trusted(&a));
        trust(&a).unwrap();
        assert!(is_trusted(&a));
        assert!(!is_trusted(&b));
        assert!(widens("mode", "yolo") && widens("sandbox", "full-access"));
        assert!(!widens("mode", "plan") && !widens("sandbox", "read-only"));
    }

    #[test]
    fn a_yuyao_worktree_shares_its_repositorys_record() {
        let d = tempfile::tempdir().unwrap();
        let main = d.path().join("repo");
        let wt = main.join(".yuyao/worktrees/w1");
        std::fs::create_dir_all(&wt).unwrap();
        let home = d.path().join("home");
        let of = |project: &Path| Paths {
            home: home.clone(),
            project: project.to_path_buf(),
        };
        std::fs::write(main.join("hooks.json"), "{}").unwrap();
        std::fs::write(wt.join("hooks.json"), "{}").unwrap();
        approve(&of(&main), &[main.join("hooks.json")]).unwrap();
        assert!(has_approvals(&of(&wt)), "the worktree is not a first trust");
        assert!(is_approved(&of(&wt), &wt.join("hooks.json")));
        std::fs::write(wt.join("hooks.json"), "{\"x\":1}").unwrap();
        assert!(!is_approved(&of(&wt), &wt.join("hooks.json")));
        // Only yuyao's own layout counts: a deeper folder is its own project.
        let deeper = wt.join("sub");
        std::fs::create_dir_all(&deeper).unwrap();
        assert_eq!(trust_root(&deeper), deeper);
    }

    #[test]
    fn approval_is_pinned_to_content() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let paths = Paths {
            home: home.path().to_path_buf(),
            project: project.path().to_path_buf(),
        };
        let f = project.path().join("hooks.json");
        std::fs::write(&f, "{}").unwrap();
        assert!(!is_approved(&paths, &f), "nothing is approved by existing");
        assert!(!has_approvals(&paths));
        approve(&paths, &[]).unwrap();
        assert!(
            has_approvals(&paths),
            "a first trust with nothing to pin still counts"
        );
        approve(&paths, std::slice::from_ref(&f)).unwrap();
        assert!(is_approved(&paths, &f));
        assert_eq!(approved_content(&paths, &f).as_deref(), Some(&b"{}"[..]));
        assert!(bytes_approved(&paths, &f, b"{}"));
        assert!(!bytes_approved(&paths, &f, b"{\"hooks\":1}"));
        std::fs::write(&f, "{\"hooks\":1}").unwrap();
        assert!(!is_approved(&paths, &f), "a change drops the approval");
        let d = digest_file(&f).unwrap();
        mark_agent_written(&paths, &[(f.clone(), d)]).unwrap();
        assert_eq!(status(&paths, &f), Status::AgentWritten);
        std::fs::write(&f, "{}").unwrap();
        assert!(is_approved(&paths, &f), "the approved content again");
        std::fs::write(&f, "{\"other\":1}").unwrap();
        assert_eq!(status(&paths, &f), Status::Changed);
    }
}
