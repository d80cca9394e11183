//! Where memory files live (DESIGN §2, spec 002 §6): `~/.yuyao/MEMORY.md` (global),
//! `<project>/MEMORY.md`, daily notes `<project>/memory/YYYY-MM-DD.md` and the consolidation
//! journal `<project>/DREAMS.md`. A headless run reads the project's files but writes into
//! `<out-dir>/memory/` (same layout below it), so `--repo-dir` is never written.

use crate::paths::Paths;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    Project,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Project => "project",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `MEMORY.md`: long-term entries.
    Memory,
    /// `memory/YYYY-MM-DD.md`: short-term notes of one day.
    Daily,
    /// `DREAMS.md`: the consolidation journal.
    Dreams,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    pub path: PathBuf,
    pub scope: Scope,
    pub kind: Kind,
}

/// The existing memory files of a session: global `MEMORY.md`, then the project's
/// `MEMORY.md`, daily notes (oldest first) and `DREAMS.md`.
pub fn memory_files(paths: &Paths, project: &Path) -> Vec<MemoryFile> {
    Layout::new(&paths.home, project, None).files()
}

/// The three roots of a session's memory.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Holds the global `MEMORY.md` (`~/.yuyao`).
    pub global: PathBuf,
    /// The project whose memory is read.
    pub project: PathBuf,
    /// Where project memory is written: the project, or `<out-dir>/memory` when headless.
    pub write: PathBuf,
}

impl Layout {
    /// Writes a memory file atomically beneath the folder it belongs to (project, out-dir
    /// or `~/.yuyao`) with no symbolic link followed below it (`beneath.rs`): the project's
    /// `memory/` folder or `MEMORY.md` may have been replaced with a link by the agent.
    pub fn write_atomic(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        crate::beneath::write_atomic(
            &[
                self.write.as_path(),
                self.project.as_path(),
                self.global.as_path(),
            ],
            path,
            bytes,
        )
    }

    pub fn new(home: &Path, project: &Path, write: Option<&Path>) -> Self {
        Layout {
            global: home.to_path_buf(),
            project: project.to_path_buf(),
            write: write.unwrap_or(project).to_path_buf(),
        }
    }

    /// The `MEMORY.md` a new entry of `scope` goes to.
    pub fn target(&self, scope: Scope) -> PathBuf {
        match scope {
            Scope::Global => self.global.join("MEMORY.md"),
            Scope::Project => self.write.join("MEMORY.md"),
        }
    }

    /// The daily note of `date` (`YYYY-MM-DD`) that writes go to.
    pub fn daily_target(&self, date: &str) -> PathBuf {
        self.write.join("memory").join(format!("{date}.md"))
    }

    fn roots(&self) -> Vec<&Path> {
        if self.write == self.project {
            vec![&self.project]
        } else {
            vec![&self.project, &self.write]
        }
    }

    /// Every existing memory file, global first; with a separate write root its files
    /// follow the project's of the same kind.
    pub fn files(&self) -> Vec<MemoryFile> {
        let mut out = Vec::new();
        let mut push = |path: PathBuf, scope, kind| {
            if path.is_file() && !out.iter().any(|f: &MemoryFile| f.path == path) {
                out.push(MemoryFile { path, scope, kind });
            }
        };
        push(self.global.join("MEMORY.md"), Scope::Global, Kind::Memory);
        for r in self.roots() {
            push(r.join("MEMORY.md"), Scope::Project, Kind::Memory);
        }
        for r in self.roots() {
            for p in daily_notes(r) {
                push(p, Scope::Project, Kind::Daily);
            }
        }
        for r in self.roots() {
            push(r.join("DREAMS.md"), Scope::Project, Kind::Dreams);
        }
        out
    }

    /// Whether `path` is one of this session's memory files (existing or not yet written).
    pub fn is_memory_path(&self, path: &Path) -> bool {
        let Some(parent) = path.parent() else {
            return false;
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if parent == self.global {
            return name == "MEMORY.md";
        }
        self.roots().iter().any(|r| {
            (parent == *r && (name == "MEMORY.md" || name == "DREAMS.md"))
                || (parent == r.join("memory") && is_daily_name(name))
        })
    }
}

/// `<root>/memory/YYYY-MM-DD.md`, sorted by date.
pub fn daily_notes(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("memory"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(is_daily_name)
                && p.is_file()
        })
        .collect();
    out.sort();
    out
}

/// `YYYY-MM-DD.md`.
pub fn is_daily_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".md") else {
        return false;
    };
    chrono::NaiveDate::parse_from_str(stem, "%Y-%m-%d").is_ok() && stem.len() == 10
}

/// Keeps a memory file written inside a git work tree out of `git status`
/// (`.git/info/exclude`), unless the user has committed it (or, for daily notes, any file
/// of `memory/`) already. Outside a work tree it does nothing.
pub fn exclude_written(project: &Path, path: &Path) {
    let Ok(rel) = path.strip_prefix(project) else {
        return;
    };
    let rel = rel.to_string_lossy().replace('\\', "/");
    let tracked = |prefix: &str| {
        git2::Repository::open(project)
            .ok()
            .and_then(|r| r.index().ok())
            .is_some_and(|idx| {
                idx.iter()
                    .any(|e| String::from_utf8_lossy(&e.path).starts_with(prefix))
            })
    };
    let entry = match rel.split_once('/') {
        Some(("memory", _)) if !tracked("memory/") => "/memory/".to_string(),
        _ if tracked(&rel) => return,
        _ => format!("/{rel}"),
    };
    crate::paths::exclude_from_git(project, &entry);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_existing_files_in_order_and_recognizes_memory_paths() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("MEMORY.md"), "- g\n").unwrap();
        std::fs::write(proj.path().join("MEMORY.md"), "- p\n").unwrap();
        std::fs::create_dir(proj.path().join("memory")).unwrap();
        std::fs::write(proj.path().join("memory/2026-01-02.md"), "- d\n").unwrap();
        std::fs::write(proj.path().join("memory/2026-01-01.md"), "- d\n").unwrap();
        std::fs::write(proj.path().join("memory/notes.md"), "- x\n").unwrap();
        let paths = Paths {
            home: home.path().into(),
            project: proj.path().into(),
        };
        let files = memory_files(&paths, proj.path());
        let names: Vec<_> = files
            .iter()
            .map(|f| {
                (
                    f.path
                        .strip_prefix(f.path.parent().unwrap().parent().unwrap())
                        .unwrap()
                        .to_path_buf(),
                    f.kind,
                )
            })
            .collect();
        assert_eq!(files.len(), 4, "{names:?}");
        assert_eq!(files[0].scope, Scope::Global);
        assert!(files[2].path.ends_with("memory/2026-01-01.md"));
        let l = Layout::new(home.path(), proj.path(), Some(out.path()));
        assert_eq!(l.target(Scope::Project), out.path().join("MEMORY.md"));
        assert!(l.is_memory_path(&proj.path().join("DREAMS.md")));
        assert!(l.is_memory_path(&out.path().join("memory/2026-03-04.md")));
        assert!(!l.is_memory_path(&proj.path().join("memory/notes.md")));
        assert!(!l.is_memory_path(&home.path().join("config.toml")));
        assert!(!l.is_memory_path(&proj.path().join("src/MEMORY.md")));
    }

    #[test]
    fn excludes_unless_committed() {
        let proj = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(proj.path()).unwrap();
        std::fs::write(proj.path().join("DREAMS.md"), "x").unwrap();
        let mut idx = repo.index().unwrap();
        idx.add_path(Path::new("DREAMS.md")).unwrap();
        idx.write().unwrap();
        exclude_written(proj.path(), &proj.path().join("MEMORY.md"));
        exclude_written(proj.path(), &proj.path().join("DREAMS.md"));
        exclude_written(proj.path(), &proj.path().join("memory/2026-01-01.md"));
        let ex = std::fs::read_to_string(proj.path().join(".git/info/exclude")).unwrap();
        assert!(ex.lines().any(|l| l == "/MEMORY.md"));
        assert!(ex.lines().any(|l| l == "/memory/"));
        assert!(!ex.contains("DREAMS"));
    }
}
