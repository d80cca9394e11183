//! Everything the host itself asks of the user's repository (the git line of the system
//! prompt, the headless submission diff) goes through libgit2, never the git CLI: the
//! repository's `.git/config` is writable by the sandboxed shell, and the CLI would run what
//! it names (`core.fsmonitor`, hooks, `diff.external`, textconv and filter drivers) outside
//! the sandbox. libgit2 runs none of them.

use git2::{DiffFormat, DiffOptions, Repository, StatusOptions};
use std::path::Path;

fn open(project: &Path) -> Option<Repository> {
    // No search upwards: the project root is the work tree root already.
    Repository::open_ext(
        project,
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
    .ok()
}

/// Where HEAD points: the branch (or "HEAD" when detached) and the commit, if any.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Head {
    pub branch: String,
    pub commit: Option<String>,
}

fn head_of(repo: &Repository) -> Head {
    match repo.head() {
        Ok(h) => Head {
            branch: h.shorthand().unwrap_or("HEAD").to_string(),
            commit: h.target().map(|o| o.to_string()),
        },
        // A new repository: HEAD names a branch with no commit yet.
        Err(_) => Head {
            branch: repo
                .find_reference("HEAD")
                .ok()
                .and_then(|r| r.symbolic_target().map(str::to_string))
                .map(|t| t.trim_start_matches("refs/heads/").to_string())
                .unwrap_or_else(|| "unknown".into()),
            commit: None,
        },
    }
}

/// HEAD of the project's repository, `None` outside one. Cheap (a few small files are read,
/// the work tree is not walked): the question asked after a tool batch that could have moved
/// it.
pub fn head(project: &Path) -> Option<Head> {
    open(project).map(|r| head_of(&r))
}

/// `branch <name>, N changed files`, or "" outside a repository. Walks the whole work tree
/// (~150 ms in a 78 000-file repository): asked once per system prompt, never per call.
pub fn summary(project: &Path) -> String {
    let Some(repo) = open(project) else {
        return String::new();
    };
    let branch = head_of(&repo).branch;
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let changed = repo.statuses(Some(&mut opts)).map(|s| s.len()).unwrap_or(0);
    format!(
        "branch {branch}, {changed} changed file{}",
        if changed == 1 { "" } else { "s" }
    )
}

/// The work tree's changes against HEAD (tracked edits, deletions and new non-ignored files)
/// as one patch `git apply` accepts; binary changes as binary hunks. `None` outside a
/// repository.
pub fn worktree_diff(repo_dir: &Path) -> Option<String> {
    let repo = open(repo_dir)?;
    let head = repo.head().ok().and_then(|h| h.peel_to_tree().ok());
    let mut opts = DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .show_binary(true)
        .ignore_submodules(true);
    let diff = repo
        .diff_tree_to_workdir_with_index(head.as_ref(), Some(&mut opts))
        .ok()?;
    let mut out = Vec::new();
    diff.print(DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    })
    .ok()?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .current_dir(dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn repository_controlled_commands_never_run() {
        if Command::new("git").arg("--version").output().is_err() {
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        git(r, &["init", "-q"]);
        std::fs::write(r.join("a.txt"), "one\n").unwrap();
        git(r, &["add", "."]);
        git(r, &["commit", "-qm", "init"]);
        let marker = r.join("ran");
        let hook = format!("touch {}", marker.display());
        git(r, &["config", "core.fsmonitor", &hook]);
        git(r, &["config", "diff.external", &hook]);
        git(r, &["config", "filter.x.clean", &hook]);
        std::fs::write(r.join(".gitattributes"), "* filter=x diff=x\n").unwrap();
        git(r, &["config", "diff.x.textconv", &hook]);
        std::fs::write(r.join("a.txt"), "two\n").unwrap();
        std::fs::write(r.join("new.txt"), "new\n").unwrap();
        let s = summary(r);
        assert!(s.contains("3 changed files"), "{s}");
        let h = head(r).unwrap();
        assert_eq!(h.commit.as_deref().map(str::len), Some(40), "{h:?}");
        let patch = worktree_diff(r).unwrap();
        assert!(patch.contains("-one") && patch.contains("+two"), "{patch}");
        assert!(patch.contains("+new"), "{patch}");
        assert!(
            !marker.exists(),
            "the host ran a repository-controlled command"
        );
        // The patch applies to a clean clone.
        let c = tempfile::tempdir().unwrap();
        let clone = c.path().join("c");
        let ok = Command::new("git")
            .args(["clone", "-q"])
            .arg(r)
            .arg(&clone)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap()
            .success();
        assert!(ok);
        std::fs::write(clone.join("p.diff"), &patch).unwrap();
        let ok = Command::new("git")
            .args(["apply", "--check", "p.diff"])
            .current_dir(&clone)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{patch}");
    }
}
