//! Where state lives (DESIGN §2): `~/.yuyao/` (or `YUYAO_HOME`) and `<project>/.yuyao/`.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Paths {
    /// `~/.yuyao`, `YUYAO_HOME`, or the session option `home`.
    pub home: PathBuf,
    /// The git work tree root containing the cwd, else the cwd.
    pub project: PathBuf,
}

impl Paths {
    pub fn new(home_override: Option<&str>, cwd: &Path) -> Self {
        let home = home_override
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("YUYAO_HOME").map(PathBuf::from))
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".yuyao")))
            .unwrap_or_else(|| PathBuf::from(".yuyao"));
        Paths {
            home,
            project: project_root(cwd),
        }
    }

    /// Like [`Paths::new`], with the project root handed down by a parent session when
    /// `cwd` lies inside it (else decided from `cwd` as usual).
    pub fn with_project(home_override: Option<&str>, cwd: &Path, project: Option<&Path>) -> Self {
        let mut p = Paths::new(home_override, cwd);
        if let Some(project) = project
            && cwd.starts_with(project)
        {
            p.project = project.to_path_buf();
        }
        p
    }

    pub fn user_config(&self) -> PathBuf {
        self.home.join("config.toml")
    }

    pub fn project_config(&self) -> PathBuf {
        self.project.join(".yuyao").join("config.toml")
    }

    pub fn mcp_registry(&self) -> PathBuf {
        self.home.join("mcp.json")
    }
}

/// The nearest ancestor holding `.git` (a folder, or a file for worktrees), else `cwd`.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The repository's own `.git` folder; for a linked worktree (`.git` is a file naming
/// `<repo>/.git/worktrees/<name>`) the main one, whose `info/exclude` git reads for every work
/// tree.
fn common_git_dir(project: &Path) -> Option<PathBuf> {
    let git = project.join(".git");
    if git.is_dir() {
        return Some(git);
    }
    let text = std::fs::read_to_string(&git).ok()?;
    let own = project.join(text.strip_prefix("gitdir:")?.trim());
    let common = std::fs::read_to_string(own.join("commondir")).ok()?;
    let common = own.join(common.trim());
    common.is_dir().then_some(common)
}

/// Adds `entry` to the repository's `.git/info/exclude` so files yuyao makes for itself
/// (traces, plans) never show in `git status`. Best effort: outside git it does nothing.
pub fn exclude_from_git(project: &Path, entry: &str) {
    let Some(git) = common_git_dir(project) else {
        return;
    };
    let path = git.join("info").join("exclude");
    // `.git/info` is writable by the agent's commands in some set-ups: a link there (or a
    // `.git` that is one) must not turn this append into a write elsewhere.
    let Some(root) = git.parent() else {
        return;
    };
    if std::fs::symlink_metadata(&git).is_ok_and(|m| m.file_type().is_symlink()) {
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current.lines().any(|l| l.trim() == entry) {
        return;
    }
    let mut next = current;
    if !next.is_empty() && !next.ends_with('\n') {
        next.push('\n');
    }
    next.push_str(entry);
    next.push('\n');
    if let Ok(mut f) = crate::beneath::open(root, &path, crate::beneath::Mode::Truncate, true) {
        use std::io::Write;
        let _ = f.write_all(next.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_git_made_inside_the_project_does_not_make_a_new_project() {
        let d = tempfile::tempdir().unwrap();
        let project = d.path().join("proj");
        let sub = project.join("sub");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(sub.join(".git")).unwrap();
        // Alone, `sub/` with its own `.git` is a project of its own...
        assert_eq!(Paths::new(Some("h"), &sub).project, sub);
        // ...but a session handed the parent's root stays in it.
        let p = Paths::with_project(Some("h"), &sub, Some(&project));
        assert_eq!(p.project, project);
        // A root that does not contain the cwd is not taken.
        let other = d.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        assert_eq!(
            Paths::with_project(Some("h"), &other, Some(&project)).project,
            other
        );
    }
}
