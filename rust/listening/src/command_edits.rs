//! Files a shell command changed (seed 000 behaviours 7-8): a file tool says what it writes, a command
//! does not (`sed -i`, `python - <<EOF`, `echo > f`). Before a command that is not read-only
//! the work tree is stamped (size, mtime, inode of every file git would see, no content);
//! after it, a second stamp names what changed. Their pre-images come from the git index
//! when the file still matched it (libgit2: no hook, fsmonitor or filter of the repository
//! runs), else from the bytes read at stamp time within a budget. The completion check lists
//! them in the diffstat and the scope check, and verification runs for them.
//! `completion.track_commands = false` switches it off.

#[allow(unused_imports)]
use crate::session_ext::*;

use crate::Facts;
use git2::{Oid, Repository};
use serde_json::json;
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use yuyao_core::Session;

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
    Bytes(std::sync::Arc<Vec<u8>>),
    /// Too large for the budget: listed without line counts.
    Unknown,
}

/// A directory as last read: its own stat, and what it holds that is kept.
struct Dir {
    meta: Meta,
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

/// The git index by path (oid, size, mtime), and when the index file was written.
#[derive(Default)]
struct Index {
    entries: HashMap<Vec<u8>, (Oid, u32, (i64, i64))>,
    written: Option<(i64, i64)>,
}

/// The work tree at one moment: every kept file's stat and how to get its content, and
/// every directory's entries — the next stamp reads again only the directories whose mtime
/// moved (an entry created, removed or renamed), and stats the files.
pub(crate) struct Stamp {
    files: HashMap<PathBuf, (Meta, Pre)>,
    dirs: HashMap<PathBuf, Dir>,
    index: Index,
    repo: Option<Repository>,
    read: u64,
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

fn index_written(repo: &Repository) -> Option<(i64, i64)> {
    std::fs::metadata(repo.path().join("index"))
        .ok()
        .map(|m| (m.mtime(), m.mtime_nsec()))
}

/// The index, read again only when the index file changed.
fn index_of(repo: &Repository, old: Index) -> Index {
    let written = index_written(repo);
    if written.is_some() && written == old.written {
        return old;
    }
    let Ok(index) = repo.index() else {
        return Index::default();
    };
    let entries = index
        .iter()
        .map(|e| {
            let t = (e.mtime.seconds() as i64, e.mtime.nanoseconds() as i64);
            (e.path, (e.id, e.file_size, t))
        })
        .collect();
    Index { entries, written }
}

/// Files with their stat, as a walk or a refresh found them.
type Files = Vec<(PathBuf, Meta)>;

/// The first stamp: a walk of every file git would see (ignored files and caches left out).
fn walk(project: &Path) -> Option<(Files, HashMap<PathBuf, Dir>)> {
    let mut files = Vec::new();
    let mut dirs: HashMap<PathBuf, Dir> = HashMap::new();
    let walker = ignore::WalkBuilder::new(project)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .require_git(false)
        .filter_entry(|e| !skipped_dir(e.file_name(), e.file_type().is_some_and(|t| t.is_dir())))
        .build();
    for entry in walker.flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.into_path();
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if kind.is_dir() {
            dirs.insert(
                path.clone(),
                Dir {
                    meta: Meta::of(&m),
                    files: Vec::new(),
                    dirs: Vec::new(),
                },
            );
            if path != project
                && let Some(parent) = path.parent().and_then(|p| dirs.get_mut(p))
            {
                parent.dirs.push(path);
            }
            continue;
        }
        if !kind.is_file() || cache_file(project, &path) {
            continue;
        }
        if let Some(parent) = path.parent().and_then(|p| dirs.get_mut(p)) {
            parent.files.push(path.clone());
        }
        files.push((path, Meta::of(&m)));
        if files.len() > MAX_FILES {
            return None;
        }
    }
    Some((files, dirs))
}

fn skipped_dir(name: &std::ffi::OsStr, is_dir: bool) -> bool {
    is_dir && name.to_str().is_some_and(|n| SKIP_DIRS.contains(&n))
}

fn cache_file(project: &Path, path: &Path) -> bool {
    let rel = path.strip_prefix(project).unwrap_or(path);
    let rel = rel.as_os_str().as_bytes();
    yuyao_store::hostgit::is_build_cache(project, rel)
        || yuyao_protocol::temp_names::is_temp_path(rel)
}

impl Stamp {
    /// The work tree of `project` now; `None` when it is too large to stamp.
    pub(crate) fn take(project: &Path) -> Option<Stamp> {
        let (files, dirs) = walk(project)?;
        let mut stamp = Stamp {
            files: HashMap::new(),
            dirs,
            index: Index::default(),
            repo: open(project),
            read: 0,
        };
        if let Some(repo) = &stamp.repo {
            stamp.index = index_of(repo, Index::default());
        }
        for (path, meta) in files {
            let pre = stamp.pre_of(project, &path, &meta);
            stamp.files.insert(path, (meta, pre));
        }
        Some(stamp)
    }

    /// How the content of `path` (as it is now) can be had later.
    fn pre_of(&mut self, project: &Path, path: &Path, meta: &Meta) -> Pre {
        let rel = path.strip_prefix(project).unwrap_or(path);
        if let Some((oid, size, t)) = self.index.entries.get(rel.as_os_str().as_bytes())
            && u64::from(*size) == meta.len & 0xffff_ffff
            && *t == (meta.mtime, meta.mtime_ns)
            // An entry as new as the index file is "racily clean": its stat cannot vouch.
            && self.index.written.is_some_and(|w| *t < w)
        {
            return Pre::Index(*oid);
        }
        if meta.len > MAX_READ_FILE || self.read + meta.len > READ_BUDGET {
            return Pre::Unknown;
        }
        match std::fs::read(path) {
            Ok(b) => {
                self.read += b.len() as u64;
                Pre::Bytes(std::sync::Arc::new(b))
            }
            Err(_) => Pre::Unknown,
        }
    }

    /// The work tree now, and what differs from this stamp: changed, created and deleted
    /// files. Only directories whose mtime moved are read again; every file is stat'ed.
    pub(crate) fn refresh(mut self, project: &Path) -> Option<(Stamp, Vec<Changed>)> {
        let old_dirs = std::mem::take(&mut self.dirs);
        let mut dirs = HashMap::new();
        let mut files: Files = Vec::new();
        let mut stack = vec![project.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(m) = std::fs::symlink_metadata(&dir) else {
                continue;
            };
            let meta = Meta::of(&m);
            let (kids, subdirs) = match old_dirs.get(&dir) {
                Some(d) if d.meta == meta => (d.files.clone(), d.dirs.clone()),
                old => self.read_dir(project, &dir, old)?,
            };
            for f in &kids {
                if let Ok(m) = std::fs::symlink_metadata(f)
                    && m.is_file()
                {
                    files.push((f.clone(), Meta::of(&m)));
                }
            }
            if files.len() > MAX_FILES {
                return None;
            }
            stack.extend(subdirs.iter().cloned());
            dirs.insert(
                dir,
                Dir {
                    meta,
                    files: kids,
                    dirs: subdirs,
                },
            );
        }
        if let Some(repo) = &self.repo {
            self.index = index_of(repo, std::mem::take(&mut self.index));
        }
        let mut old_files = std::mem::take(&mut self.files);
        let mut next = Stamp {
            files: HashMap::new(),
            dirs,
            index: std::mem::take(&mut self.index),
            repo: self.repo.take(),
            read: 0,
        };
        let mut out = Vec::new();
        for (path, meta) in files {
            match old_files.remove(&path) {
                Some((old, pre)) if old == meta => {
                    if let Pre::Bytes(b) = &pre {
                        next.read += b.len() as u64;
                    }
                    next.files.insert(path, (meta, pre));
                }
                Some((_, pre)) => {
                    let before = next.content(&pre);
                    let fresh = next.pre_of(project, &path, &meta);
                    let now = next.content(&fresh).or_else(|| std::fs::read(&path).ok());
                    // A touch that left the bytes as they were changed nothing.
                    if before.is_none() || before != now {
                        out.push(Changed {
                            known: before.is_some(),
                            before,
                            path: path.clone(),
                        });
                    }
                    next.files.insert(path, (meta, fresh));
                }
                None => {
                    let fresh = next.pre_of(project, &path, &meta);
                    out.push(Changed {
                        path: path.clone(),
                        before: None,
                        known: true,
                    });
                    next.files.insert(path, (meta, fresh));
                }
            }
        }
        for (path, (_, pre)) in old_files {
            let before = next.content(&pre);
            out.push(Changed {
                known: before.is_some(),
                before,
                path,
            });
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Some((next, out))
    }

    /// A directory whose entries changed: read again; an entry it did not hold before is
    /// kept unless git ignores it (libgit2 reads the ignore files; nothing runs).
    fn read_dir(
        &self,
        project: &Path,
        dir: &Path,
        old: Option<&Dir>,
    ) -> Option<(Vec<PathBuf>, Vec<PathBuf>)> {
        let (mut files, mut dirs) = (Vec::new(), Vec::new());
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Some((files, dirs));
        };
        for e in entries.flatten() {
            let Ok(kind) = e.file_type() else { continue };
            let path = e.path();
            if skipped_dir(&e.file_name(), kind.is_dir()) || !(kind.is_dir() || kind.is_file()) {
                continue;
            }
            let known = old.is_some_and(|d| d.files.contains(&path) || d.dirs.contains(&path));
            if !known {
                let rel = path.strip_prefix(project).unwrap_or(&path);
                if let Some(repo) = &self.repo
                    && repo.is_path_ignored(rel).unwrap_or(false)
                {
                    continue;
                }
            }
            if kind.is_dir() {
                dirs.push(path);
            } else if !cache_file(project, &path) {
                files.push(path);
            }
        }
        Some((files, dirs))
    }

    fn content(&self, pre: &Pre) -> Option<Vec<u8>> {
        match pre {
            Pre::Bytes(b) => Some(b.as_ref().clone()),
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

pub(crate) trait CommandEditsExt {
    fn tracks_commands(&self) -> bool;
    fn stamp_before_command(&self) -> Option<Stamp>;
    fn work_stamp_stale(&self);
    fn command_changed_files(&self, stamp: Stamp, command: &str) -> Option<String>;
}

impl CommandEditsExt for Session {
    fn tracks_commands(&self) -> bool {
        self.config().get(KEY).and_then(|v| v.as_bool()) != Some(false)
    }

    /// Before a command that may change files: the work tree's stamp (`None`: switched off,
    /// or too large). The stamp left by the last command is brought up to date (changes
    /// since then are not this command's); the first one walks the work tree.
    fn stamp_before_command(&self) -> Option<Stamp> {
        if !self.tracks_commands() {
            self.lock().facts().work_stamp = None;
            return None;
        }
        let t0 = std::time::Instant::now();
        let (cached, fresh) = {
            let mut st = self.lock();
            (
                st.facts().work_stamp.take(),
                std::mem::take(&mut st.facts().work_stamp_fresh),
            )
        };
        let project = &self.paths().project;
        let (stamp, how) = match cached {
            // Only commands ran since (consecutive calls): it is current as it is.
            Some(old) if fresh => (Some(old), "current"),
            Some(old) => (old.refresh(project).map(|(s, _)| s), "refresh"),
            None => (Stamp::take(project), "walk"),
        };
        let mut st = self.lock();
        st.trajectory.record(
            "work_tree_stamp",
            json!({"how": how, "files": stamp.as_ref().map(|s| s.files.len()),
                   "us": t0.elapsed().as_micros() as u64}),
        );
        if stamp.is_none() {
            st.trajectory.record(
                "command_edits",
                json!({"skipped": format!("more than {MAX_FILES} files in the work tree")}),
            );
        }
        stamp
    }

    /// Any other tool (a file tool, an MCP server, a sub-agent) may change files: the next
    /// command's stamp is brought up to date first.
    fn work_stamp_stale(&self) {
        self.lock().facts().work_stamp_fresh = false;
    }

    /// After the command: the files it changed join the turn's facts (diffstat, scope,
    /// verification). Returns a note for the model when a declared scope was left.
    fn command_changed_files(&self, stamp: Stamp, command: &str) -> Option<String> {
        let t0 = std::time::Instant::now();
        let (next, changed) = stamp.refresh(&self.paths().project)?;
        {
            let mut st = self.lock();
            st.facts().work_stamp = Some(next);
            st.facts().work_stamp_fresh = true;
        }
        if changed.is_empty() {
            return None;
        }
        let project = self.paths().project.clone();
        let rel = |p: &Path| {
            p.strip_prefix(&project)
                .unwrap_or(p)
                .to_string_lossy()
                .replace('\\', "/")
        };
        let shown: Vec<String> = changed.iter().map(|c| rel(&c.path)).collect();
        for c in &changed {
            // A file the tools no longer know as they last saw it is read again first.
            self.tool_context().forget(&c.path);
        }
        self.completion_command_changed(changed);
        self.lock().trajectory.record(
            "command_edits",
            json!({"command": command, "files": shown, "us": t0.elapsed().as_micros() as u64}),
        );
        let outside: Vec<String> = {
            let t = self.listening().scope.lock().ok()?;
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

    /// The stamp's cost on a work tree: `YUYAO_STAMP_BENCH=/path cargo test -p yuyao-core
    /// --lib stamp_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn stamp_cost() {
        let Ok(dir) = std::env::var("YUYAO_STAMP_BENCH") else {
            return;
        };
        let dir = PathBuf::from(dir);
        let t0 = std::time::Instant::now();
        let mut s = Stamp::take(&dir).unwrap();
        println!("{} files: first walk {:?}", s.files.len(), t0.elapsed());
        for _ in 0..3 {
            let t1 = std::time::Instant::now();
            let (next, changed) = s.refresh(&dir).unwrap();
            println!("refresh {:?}, {} changed", t1.elapsed(), changed.len());
            s = next;
        }
    }

    #[test]
    fn a_stamp_names_changed_created_and_deleted_files_with_their_pre_images() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::write(p.join("a.txt"), "one\n").unwrap();
        std::fs::write(p.join("b.txt"), "keep\n").unwrap();
        std::fs::write(p.join("gone.txt"), "bye\n").unwrap();
        std::fs::create_dir(p.join("__pycache__")).unwrap();
        let s = Stamp::take(p).unwrap();
        let (s, none) = s.refresh(p).unwrap();
        assert!(none.is_empty());
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(p.join("a.txt"), "two\n").unwrap();
        std::fs::write(p.join("b.txt"), "keep\n").unwrap(); // rewritten, same bytes
        std::fs::write(p.join("new.txt"), "hi\n").unwrap();
        std::fs::remove_file(p.join("gone.txt")).unwrap();
        std::fs::write(p.join("__pycache__/x.pyc"), "cache").unwrap();
        std::fs::create_dir(p.join("pkg")).unwrap();
        std::fs::write(p.join("pkg/deep.txt"), "deep\n").unwrap();
        let (s, got) = s.refresh(p).unwrap();
        let got: Vec<(String, Option<String>)> = got
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
                ("deep.txt".into(), None),
            ]
        );
        // In place, no entry added: the directory's mtime may not move; the file's does.
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::OpenOptions::new()
            .append(true)
            .open(p.join("pkg/deep.txt"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"more\n"))
            .unwrap();
        let (_, got) = s.refresh(p).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].before.as_deref(), Some(&b"deep\n"[..]));
    }
}
