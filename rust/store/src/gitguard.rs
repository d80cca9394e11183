//! yuyao's own git writes (worktree commit/merge/remove, auto-commit) run in-process through
//! libgit2, outside the sandbox, into a `.git` the agent's commands can write. libgit2 follows
//! whatever is there: a worktree's `.git` file (`gitdir: …`), a `commondir` file, symbolic
//! links for `logs/HEAD`, `refs/heads/<branch>`, `objects/…`. So a write first checks the
//! repository against what yuyao recorded out of the agent's reach (at worktree creation, or
//! at session open): the same git folder and common folder, the expected branch, and no
//! symbolic link on any path libgit2 writes. A mismatch is an error and nothing is written.
//! `RepoPin::open_for_write` is the one entry point of every host-side git write.

use git2::Repository;
use std::path::{Path, PathBuf};

/// What yuyao expects a repository to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoPin {
    /// The work tree root.
    pub workdir: PathBuf,
    /// The work tree's own git folder (`<workdir>/.git`, or `<common>/worktrees/<name>`).
    pub git_dir: PathBuf,
    /// The shared git folder (objects, branches); equal to `git_dir` for a main work tree.
    pub common_dir: PathBuf,
    /// The branch HEAD must be on (`refs/heads/…` without the prefix); `None`: any branch.
    pub branch: Option<String>,
}

fn canon(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// `<dir>/commondir` resolved (relative to `dir`), when the file exists.
fn commondir_of(dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join("commondir")).ok()?;
    Some(canon(&dir.join(text.trim())))
}

/// The git folder a work tree's `.git` names: the folder itself, or a `.git` file's `gitdir:`.
fn git_dir_named_by(workdir: &Path) -> Result<PathBuf, String> {
    let dot_git = workdir.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git)
        .map_err(|_| format!("{} has no .git", workdir.display()))?;
    if meta.file_type().is_symlink() {
        return Err(format!("{} is a symbolic link", dot_git.display()));
    }
    if meta.is_dir() {
        return Ok(canon(&dot_git));
    }
    let text = std::fs::read_to_string(&dot_git)
        .map_err(|e| format!("cannot read {}: {e}", dot_git.display()))?;
    let named = text
        .strip_prefix("gitdir:")
        .ok_or_else(|| format!("{} does not name a git folder", dot_git.display()))?;
    Ok(canon(&workdir.join(named.trim())))
}

/// Is the repository of `workdir` laid out as git makes it, with nothing redirecting it? A
/// `.git` folder has no `commondir`/`gitdir` file (git never writes them in a main
/// repository); a `.git` file naming a linked worktree's git folder (one with `commondir`) is
/// named back by that folder's `gitdir` file and sits in `<common>/worktrees/`; a `.git` file
/// never names another work tree's `.git` folder. A `.git` file naming a git folder without
/// `commondir` elsewhere (a submodule's `.git/modules/<name>`) is accepted as it is. For the session-open pin
/// and the host's read-only git questions, which have no earlier record to compare with.
pub fn check_layout(workdir: &Path) -> Result<(), String> {
    let workdir = canon(workdir);
    let dot_git = workdir.join(".git");
    let git_dir = git_dir_named_by(&workdir)?;
    let planted = |f: &str| {
        format!(
            "{}/{f} redirects the repository: refused",
            git_dir.display()
        )
    };
    if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_dir()) {
        for f in ["commondir", "gitdir"] {
            if std::fs::symlink_metadata(git_dir.join(f)).is_ok() {
                return Err(planted(f));
            }
        }
        return Ok(());
    }
    // git never points a `.git` file at another work tree's `.git` folder.
    if git_dir.file_name().is_some_and(|n| n == ".git") {
        return Err(format!(
            "{} names another work tree's git folder {}: refused",
            dot_git.display(),
            git_dir.display()
        ));
    }
    let Some(common) = commondir_of(&git_dir) else {
        return Ok(());
    };
    let back = std::fs::read_to_string(git_dir.join("gitdir"))
        .map(|t| canon(Path::new(t.trim())))
        .ok();
    if back.as_deref() != Some(canon(&dot_git).as_path())
        || git_dir.parent() != Some(common.join("worktrees").as_path())
    {
        return Err(format!(
            "{} names {}, which is not this worktree's git folder: refused",
            dot_git.display(),
            git_dir.display()
        ));
    }
    Ok(())
}

impl RepoPin {
    /// The pin of a work tree as it is now (at session open), when it is laid out as git
    /// makes it (`check_layout`): a redirection planted by an earlier session is refused
    /// rather than recorded.
    pub fn current(workdir: &Path, branch: Option<String>) -> Result<RepoPin, String> {
        check_layout(workdir).map_err(|e| format!("refusing to write to git: {e}"))?;
        let workdir = canon(workdir);
        let git_dir = git_dir_named_by(&workdir)?;
        let common_dir = commondir_of(&git_dir).unwrap_or_else(|| git_dir.clone());
        let pin = RepoPin {
            workdir,
            git_dir,
            common_dir,
            branch,
        };
        pin.verify()?;
        Ok(pin)
    }

    /// The pin of a linked worktree `name` of the main repository whose common git folder is
    /// `common_dir`, derived from yuyao's own record (never from the worktree's `.git` file).
    pub fn linked(workdir: &Path, common_dir: &Path, name: &str, branch: &str) -> RepoPin {
        let common_dir = canon(common_dir);
        RepoPin {
            workdir: canon(workdir),
            git_dir: common_dir.join("worktrees").join(name),
            common_dir,
            branch: Some(branch.to_string()),
        }
    }

    fn is_main(&self) -> bool {
        self.git_dir == self.common_dir
    }

    /// Checks the repository on disk against the pin; `Err` says what differs.
    pub fn verify(&self) -> Result<(), String> {
        fn refuse<T>(what: String) -> Result<T, String> {
            Err(format!("refusing to write to git: {what}"))
        }
        for dir in [&self.git_dir, &self.common_dir] {
            if is_link(dir) || !dir.is_dir() {
                return refuse(format!("{} is not the recorded git folder", dir.display()));
            }
        }
        let named = git_dir_named_by(&self.workdir).or_else(refuse)?;
        if named != self.git_dir {
            return refuse(format!(
                "{}/.git now names {} instead of {}",
                self.workdir.display(),
                named.display(),
                self.git_dir.display()
            ));
        }
        match commondir_of(&self.git_dir) {
            None if self.is_main() => {}
            Some(c) if !self.is_main() && c == self.common_dir => {}
            other => {
                return refuse(format!(
                    "{}/commondir redirects the repository to {} (recorded: {})",
                    self.git_dir.display(),
                    other.map_or("nothing".into(), |c| c.display().to_string()),
                    self.common_dir.display()
                ));
            }
        }
        if self.is_main() && self.git_dir.join("gitdir").exists() {
            return refuse(format!(
                "{}/gitdir was planted in the main repository",
                self.git_dir.display()
            ));
        }
        let branch = self.current_branch()?;
        if let Some(want) = &self.branch
            && branch.as_deref() != Some(want.as_str())
        {
            return refuse(format!(
                "HEAD is on {} instead of the recorded branch {want}",
                branch.as_deref().unwrap_or("a detached commit")
            ));
        }
        self.check_no_links(branch.as_deref())
    }

    /// The branch `git_dir/HEAD` names (`None`: detached).
    fn current_branch(&self) -> Result<Option<String>, String> {
        let head = self.git_dir.join("HEAD");
        if is_link(&head) {
            return Err(format!(
                "refusing to commit: {} is a symbolic link",
                head.display()
            ));
        }
        let text = std::fs::read_to_string(&head)
            .map_err(|e| format!("cannot read {}: {e}", head.display()))?;
        Ok(text
            .trim()
            .strip_prefix("ref: refs/heads/")
            .map(str::to_string))
    }

    /// No component of any path libgit2 writes for a commit on `branch` is a symbolic link.
    fn check_no_links(&self, branch: Option<&str>) -> Result<(), String> {
        let mut paths: Vec<(&Path, String)> = ["HEAD", "index", "logs/HEAD", "ORIG_HEAD"]
            .into_iter()
            .map(|p| (self.git_dir.as_path(), p.to_string()))
            .collect();
        for p in [
            "objects/pack",
            "objects/info",
            "packed-refs",
            "refs/heads",
            "worktrees",
        ] {
            paths.push((&self.common_dir, p.to_string()));
        }
        if let Some(b) = branch {
            paths.push((&self.common_dir, format!("refs/heads/{b}")));
            paths.push((&self.common_dir, format!("logs/refs/heads/{b}")));
        }
        for (base, rel) in &paths {
            if let Some(link) = first_link(base, Path::new(rel)) {
                return Err(format!(
                    "refusing to commit: {} is a symbolic link",
                    display_in_git(&self.workdir, &link)
                ));
            }
        }
        // Loose objects go to `objects/<2 hex>/`: none of those folders may be a link.
        if let Ok(entries) = std::fs::read_dir(self.common_dir.join("objects")) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_symlink()) {
                    return Err(format!(
                        "refusing to commit: {} is a symbolic link",
                        display_in_git(&self.workdir, &e.path())
                    ));
                }
            }
        }
        Ok(())
    }

    /// Verifies the pin, opens exactly the recorded repository and checks that libgit2
    /// opened what was verified. Every host-side git write goes through here.
    pub fn open_for_write(&self) -> Result<Repository, String> {
        self.verify()?;
        let repo = Repository::open_ext(
            &self.workdir,
            git2::RepositoryOpenFlags::NO_SEARCH,
            std::iter::empty::<&std::ffi::OsStr>(),
        )
        .map_err(|e| e.message().to_string())?;
        let same = canon(repo.path()) == self.git_dir
            && canon(repo.commondir()) == self.common_dir
            && repo.workdir().map(canon).as_deref() == Some(self.workdir.as_path());
        if !same {
            return Err(format!(
                "refusing to write to git: {} opened as {} (recorded {})",
                self.workdir.display(),
                repo.path().display(),
                self.git_dir.display()
            ));
        }
        Ok(repo)
    }
}

/// The first existing component of `base/rel` (`base` included) that is a symbolic link.
fn first_link(base: &Path, rel: &Path) -> Option<PathBuf> {
    if is_link(base) {
        return Some(base.to_path_buf());
    }
    let mut cur = base.to_path_buf();
    for comp in rel.components() {
        cur.push(comp);
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => return Some(cur),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// `path` shown from the work tree (`.git/logs/HEAD`) when it is inside it.
fn display_in_git(workdir: &Path, path: &Path) -> String {
    path.strip_prefix(workdir)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        git(d.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(d.path().join("a.txt"), "one\n").unwrap();
        git(d.path(), &["add", "."]);
        git(d.path(), &["commit", "-qm", "init"]);
        d
    }

    #[test]
    fn an_untouched_repository_opens() {
        let d = repo();
        let pin = RepoPin::current(d.path(), None).unwrap();
        assert!(pin.open_for_write().is_ok());
    }

    #[test]
    fn a_linked_reflog_is_refused() {
        let d = repo();
        let pin = RepoPin::current(d.path(), None).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let log = d.path().join(".git/logs/HEAD");
        std::fs::remove_file(&log).unwrap();
        symlink(outside.path().join("rc"), &log).unwrap();
        let e = pin.open_for_write().err().unwrap();
        assert_eq!(e, "refusing to commit: .git/logs/HEAD is a symbolic link");
    }

    #[test]
    fn a_planted_commondir_is_refused() {
        let d = repo();
        let other = repo();
        let pin = RepoPin::current(d.path(), None).unwrap();
        std::fs::write(
            d.path().join(".git/commondir"),
            other.path().join(".git").display().to_string(),
        )
        .unwrap();
        let e = pin.open_for_write().err().unwrap();
        assert!(e.contains("commondir redirects"), "{e}");
    }

    #[test]
    fn a_redirection_planted_before_the_session_opened_is_not_pinned() {
        let d = repo();
        let other = repo();
        git(d.path(), &["worktree", "add", "-q", "-b", "yuyao/w", "wt"]);
        assert!(RepoPin::current(&d.path().join("wt"), None).is_ok());
        std::fs::write(
            d.path().join("wt/.git"),
            format!("gitdir: {}\n", other.path().join(".git").display()),
        )
        .unwrap();
        assert!(check_layout(&d.path().join("wt")).is_err());
        std::fs::write(
            d.path().join(".git/commondir"),
            other.path().join(".git").display().to_string(),
        )
        .unwrap();
        let e = RepoPin::current(d.path(), None).unwrap_err();
        assert!(e.contains("commondir redirects"), "{e}");
    }

    #[test]
    fn a_rewritten_worktree_git_file_or_branch_is_refused() {
        let d = repo();
        git(d.path(), &["worktree", "add", "-q", "-b", "yuyao/w", "wt"]);
        let wt = d.path().join("wt");
        let pin = RepoPin::linked(&wt, &d.path().join(".git"), "wt", "yuyao/w");
        assert!(pin.open_for_write().is_ok());
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", d.path().join(".git").display()),
        )
        .unwrap();
        let e = pin.open_for_write().err().unwrap();
        assert!(e.contains("now names"), "{e}");
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", d.path().join(".git/worktrees/wt").display()),
        )
        .unwrap();
        std::fs::write(
            d.path().join(".git/worktrees/wt/HEAD"),
            "ref: refs/heads/main\n",
        )
        .unwrap();
        let e = pin.open_for_write().err().unwrap();
        assert!(e.contains("instead of the recorded branch yuyao/w"), "{e}");
    }
}
