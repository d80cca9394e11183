//! Files a shell command changed (issue 18 §4-5): a file tool says what it writes, a command
//! does not (`sed -i`, `python - <<EOF`, `echo > f`). Before a command that is not read-only
//! the work tree is stamped (size, mtime, inode of every file git would see, no content);
//! after it, a second stamp names what changed. Their pre-images come from the git index
//! when the file still matched it (libgit2: no hook, fsmonitor or filter of the repository
//! runs), else from the bytes read at stamp time within a budget. The completion check lists
//! them in the diffstat and the scope check, and verification runs for them.
//! `completion.track_commands = false` switches it off.

use crate::session::Session;
use git2::{Oid, Repository};
use serde_json::json;
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub(crate) const KEY: &str = "completion.track_commands";
/// A work tree with more files than this is not stamped (the walk would cost too much).
const MAX_FILES: usize = 200_000;
/// Bytes of files that do not match the index read at stamp time, in all, and per file.
const READ_BUDGET: u64 = 16 << 20;
const MAX_READ_FILE: u64 = 1 << 20;
/// Directories no change of the model's lives in: VCS data, dependency trees, caches.
const SKIP_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    ".venv",
    "venv",
    ".tox",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
];

/// What identifies a file's version without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta {
    len: u64,
    mtime: i64,
    mtime_ns: i64,
    ino: u64,
}

impl Meta {
    fn of(m: &std::fs::Metadata) -> Meta {
        Meta {
            len: m.len(),
            mtime: m.mtime(),
            mtime_ns: m.mtime_nsec(),
            ino: m.ino(),
        }
    }
}

/// How to get a file's content as it was at stamp time.
#[derive(Debug, Clone)]
enum Pre {
    /// It matched its index entry: the blob is the content.
    Index(Oid),
    Bytes(Vec<u8>),
    /// Too large for the budget: listed without line counts.
    Unknown,
}

/// The work tree at one moment.
pub(crate) struct Stamp {
    files: HashMap<PathBuf, (Meta, Pre)>,
    repo: Option<Repository>,
}

/// One file a command changed: its content before (`None`: it did not exist), or unknown.
pub(crate) struct Changed {
    pub path: PathBuf,
    pub before: Option<Vec<u8>>,
    pub known: bool,
}

fn open(project: &Path) -> Option<Repository> {
    Repository::open_ext(
        project,
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
    .ok()
}

/// Index entries by path, with the index file's mtime (an entry as new as the index itself
/// is "racily clean": its stat data cannot vouch for the content).
fn index_of(repo: &Repository) -> (HashMap<Vec<u8>, git2::IndexEntry>, Option<(i64, i64)>) {
    let Ok(index) = repo.index() else {
        return (HashMap::new(), None);
    };
    let written = std::fs::metadata(repo.path().join("index"))
        .ok()
        .map(|m| (m.mtime(), m.mtime_nsec()));
    let entries = index.iter().map(|e| (e.path.clone(), e)).collect();
    (entries, written)
}

fn matches_index(m: &Meta, e: &git2::IndexEntry, written: Option<(i64, i64)>) -> bool {
    let entry = (e.mtime.seconds() as i64, e.mtime.nanoseconds() as i64);
    e.file_size as u64 == m.len & 0xffff_ffff
        && entry == (m.mtime, m.mtime_ns)
        && written.is_some_and(|w| entry < w)
}

/// Every file of the work tree git would see (ignored files and caches left out).
fn walk(project: &Path) -> Option<Vec<(PathBuf, Meta)>> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(project)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .require_git(false)
        .filter_entry(|e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && e.file_name()
                    .to_str()
                    .is_some_and(|n| SKIP_DIRS.contains(&n)))
        })
        .build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.into_path();
        let rel = path.strip_prefix(project).unwrap_or(&path);
        if yuyao_store::hostgit::is_build_cache(project, rel.as_os_str().as_bytes()) {
            continue;
        }
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        out.push((path, Meta::of(&m)));
        if out.len() > MAX_FILES {
            return None;
        }
    }
    Some(out)
}

impl Stamp {
    /// The work tree of `project` now; `None` when it is too large to stamp.
    pub(crate) fn take(project: &Path) -> Option<Stamp> {
        let repo = open(project);
        let (index, written) = repo.as_ref().map(index_of).unwrap_or_default();
        let mut budget = READ_BUDGET;
        let mut files = HashMap::new();
        for (path, meta) in walk(project)? {
            let rel = path.strip_prefix(project).unwrap_or(&path);
            let pre = match index.get(rel.as_os_str().as_bytes()) {
                Some(e) if matches_index(&meta, e, written) => Pre::Index(e.id),
                _ if meta.len <= MAX_READ_FILE && meta.len <= budget => {
                    match std::fs::read(&path) {
                        Ok(b) => {
                            budget -= meta.len;
                            Pre::Bytes(b)
                        }
                        Err(_) => Pre::Unknown,
                    }
                }
                _ => Pre::Unknown,
            };
            files.insert(path, (meta, pre));
        }
        Some(Stamp { files, repo })
    }

    /// What differs in the work tree now: changed, created and deleted files.
    pub(crate) fn changes(&self, project: &Path) -> Vec<Changed> {
        let Some(now) = walk(project) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (path, meta) in now {
            match self.files.get(&path) {
                Some((old, _)) if *old == meta => {}
                Some((_, pre)) => {
                    let before = self.content(pre);
                    // A touch that left the bytes as they were changed nothing.
                    if before.is_some() && before == std::fs::read(&path).ok() {
                        seen.insert(path);
                        continue;
                    }
                    out.push(Changed {
                        known: before.is_some(),
                        before,
                        path: path.clone(),
                    });
                }
                None => out.push(Changed {
                    path: path.clone(),
                    before: None,
                    known: true,
                }),
            }
            seen.insert(path);
        }
        for (path, (_, pre)) in &self.files {
            if !seen.contains(path) {
                let before = self.content(pre);
                out.push(Changed {
                    known: before.is_some(),
                    before,
                    path: path.clone(),
                });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    fn content(&self, pre: &Pre) -> Option<Vec<u8>> {
        match pre {
            Pre::Bytes(b) => Some(b.clone()),
            Pre::Index(oid) => self
                .repo
                .as_ref()?
                .find_blob(*oid)
                .ok()
                .map(|b| b.content().to_vec()),
            Pre::Unknown => None,
        }
    }
}

impl Session {
    fn tracks_commands(&self) -> bool {
        self.config.get(KEY).and_then(|v| v.as_bool()) != Some(false)
    }

    /// Before a command that may change files: the work tree's stamp (`None`: switched off,
    /// or too large).
    pub(crate) fn stamp_before_command(&self) -> Option<Stamp> {
        if !self.tracks_commands() {
            return None;
        }
        let t0 = std::time::Instant::now();
        let stamp = Stamp::take(&self.paths.project);
        if stamp.is_none() {
            self.lock().trajectory.record(
                "command_edits",
                json!({"skipped": format!("more than {MAX_FILES} files in the work tree")}),
            );
        }
        self.lock().trajectory.record(
            "work_tree_stamp",
            json!({"us": t0.elapsed().as_micros() as u64}),
        );
        stamp
    }

    /// After the command: the files it changed join the turn's facts (diffstat, scope,
    /// verification). Returns a note for the model when a declared scope was left.
    pub(crate) fn command_changed_files(&self, stamp: Stamp, command: &str) -> Option<String> {
        let t0 = std::time::Instant::now();
        let changed = stamp.changes(&self.paths.project);
        if changed.is_empty() {
            return None;
        }
        let project = self.paths.project.clone();
        let rel = |p: &Path| {
            p.strip_prefix(&project)
                .unwrap_or(p)
                .to_string_lossy()
                .replace('\\', "/")
        };
        let shown: Vec<String> = changed.iter().map(|c| rel(&c.path)).collect();
        for c in &changed {
            // A file the tools no longer know as they last saw it is read again first.
            self.ctx.forget(&c.path);
        }
        self.completion_command_changed(changed);
        self.lock().trajectory.record(
            "command_edits",
            json!({"command": command, "files": shown, "us": t0.elapsed().as_micros() as u64}),
        );
        let outside: Vec<String> = {
            let t = self.scope.lock().ok()?;
            let sc = t.declared.as_ref()?;
            shown.iter().filter(|r| !sc.covers(r)).cloned().collect()
        };
        if outside.is_empty() {
            return None;
        }
        self.lock().trajectory.record(
            "scope_guard",
            json!({"tool": "bash", "category": super::scope::Category::OutsideScope.label(),
                   "detail": format!("the command changed {}", outside.join(", ")),
                   "outcome": "after the fact"}),
        );
        self.notice(
            yuyao_protocol::NoticeLevel::Warning,
            format!(
                "the command changed files outside the declared scope: {}",
                outside.join(", ")
            ),
        );
        Some(format!(
            "[scope] This command changed files outside the scope declared for this turn: {}. Undo that change unless the user asked for it (then re-declare the scope), and say so in your final answer.",
            outside.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_names_changed_created_and_deleted_files_with_their_pre_images() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::write(p.join("a.txt"), "one\n").unwrap();
        std::fs::write(p.join("b.txt"), "keep\n").unwrap();
        std::fs::write(p.join("gone.txt"), "bye\n").unwrap();
        std::fs::create_dir(p.join("__pycache__")).unwrap();
        let s = Stamp::take(p).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(p.join("a.txt"), "two\n").unwrap();
        std::fs::write(p.join("b.txt"), "keep\n").unwrap(); // rewritten, same bytes
        std::fs::write(p.join("new.txt"), "hi\n").unwrap();
        std::fs::remove_file(p.join("gone.txt")).unwrap();
        std::fs::write(p.join("__pycache__/x.pyc"), "cache").unwrap();
        let got: Vec<(String, Option<String>)> = s
            .changes(p)
            .into_iter()
            .map(|c| {
                (
                    c.path.file_name().unwrap().to_string_lossy().into_owned(),
                    c.before.map(|b| String::from_utf8(b).unwrap()),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a.txt".into(), Some("one\n".into())),
                ("gone.txt".into(), Some("bye\n".into())),
                ("new.txt".into(), None),
            ]
        );
    }
}
