//! Deny rules the OS enforces too (DESIGN §5, path rules on the shell): a shell command whose paths the lexer cannot
//! determine (`cat $(ls)`, a script, a program that opens files itself) still cannot read a
//! `Read(...)`-denied path or write an `Edit(...)`-denied one, because tool processes meet
//! them masked or read-only in their mount namespace. Only rules that name a literal path
//! (or a whole folder, `/dir/**`) can be mapped onto mounts; other globs stay with the
//! adjudicator.

use crate::Policy;
use crate::rules::{Pattern, Rule};
use std::path::{Path, PathBuf};

/// Tools whose deny rules forbid reading / writing.
const READERS: &[&str] = &["read", "grep", "glob"];
const WRITERS: &[&str] = &[
    "write",
    "edit",
    "multi-edit",
    "apply-patch",
    "notebook-edit",
];

/// The existing path a rule names literally, if it names one.
fn literal_path(text: &str, project: &Path) -> Option<PathBuf> {
    let t = text
        .strip_suffix("/**/*")
        .or_else(|| text.strip_suffix("/**"))
        .unwrap_or(text);
    if t.is_empty() || t.contains(['*', '?', '[', '{']) {
        return None;
    }
    let p = if let Some(abs) = t.strip_prefix("//") {
        PathBuf::from(format!("/{abs}"))
    } else if let Some(home) = t.strip_prefix("~/") {
        PathBuf::from(std::env::var_os("HOME")?).join(home)
    } else if let Some(rel) = t.strip_prefix('/') {
        project.join(rel)
    } else {
        // A bare name matches at any depth: not one path.
        return None;
    };
    p.canonicalize().ok()
}

/// (paths no tool process may read, paths no tool process may write).
pub fn os_denies(p: &Policy) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let project = p
        .roots
        .first()
        .map(PathBuf::as_path)
        .unwrap_or(Path::new("/"));
    let mut no_read = Vec::new();
    let mut no_write = Vec::new();
    for r in &p.deny {
        let Rule {
            tool,
            pattern: Some(Pattern::Path(_, text)),
            ..
        } = r
        else {
            continue;
        };
        let Some(path) = literal_path(text, project) else {
            continue;
        };
        let (reads, writes) = match tool {
            None => (true, true),
            Some(t) => (READERS.contains(t), WRITERS.contains(t)),
        };
        if reads {
            no_read.push(path.clone());
        }
        if writes || reads {
            no_write.push(path);
        }
    }
    (no_read, no_write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yuyao_protocol::{Mode, Role};

    #[test]
    fn literal_rules_become_mounts() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("secret.txt"), "s").unwrap();
        let mut p = Policy::new(Mode::Yolo, Role::Execute, &root);
        for r in [
            "Edit(/src/**)",
            "Read(/secret.txt)",
            "Edit(/src/*.py)",
            "Read(.env)",
        ] {
            p.deny.push(Rule::parse(r).unwrap());
        }
        let (no_read, no_write) = os_denies(&p);
        assert_eq!(no_read, vec![root.join("secret.txt")]);
        assert_eq!(no_write, vec![root.join("src"), root.join("secret.txt")]);
    }
}
