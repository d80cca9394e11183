//! Everything the host itself asks of the user's repository (the git line of the system
//! prompt, the headless submission diff) goes through libgit2, never the git CLI: the
//! repository's `.git/config` is writable by the sandboxed shell, and the CLI would run what
//! it names (`core.fsmonitor`, hooks, `diff.external`, textconv and filter drivers) outside
//! the sandbox. libgit2 runs none of them.

use git2::{Delta, DiffFindOptions, DiffOptions, Patch, Repository, StatusOptions};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn open(project: &Path) -> Option<Repository> {
    // A `.git` the agent redirected (a planted `commondir`, a rewritten worktree `.git` file)
    // would answer for another repository: no answer instead (`gitguard::check_layout`).
    crate::gitguard::check_layout(project).ok()?;
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

/// The work tree's changes against HEAD — tracked edits, deletions, renames, mode changes and
/// new non-ignored files — as one patch that `git apply` reproduces byte for byte: a file whose
/// patch text would not be valid UTF-8 (a Latin-1 text, a binary) is sent as a `GIT binary
/// patch` hunk (base85, ASCII), since the patch travels as a JSON string. New files under the
/// build caches a run leaves behind (see [`is_build_cache`]) are left out. `None` outside a
/// repository.
pub fn worktree_diff(repo_dir: &Path) -> Option<String> {
    let repo = open(repo_dir)?;
    let workdir = repo.workdir()?.to_path_buf();
    let head = repo.head().ok().and_then(|h| h.peel_to_tree().ok());
    let mut out = String::new();
    let mut as_binary: Vec<Vec<u8>> = Vec::new();
    for patch in patches(&repo, head.as_ref(), &workdir, None)? {
        match String::from_utf8(patch.text) {
            Ok(text) => out.push_str(&text),
            Err(_) => as_binary.extend(patch.paths),
        }
    }
    if !as_binary.is_empty() {
        for patch in patches(&repo, head.as_ref(), &workdir, Some(&as_binary))? {
            // Binary hunks are ASCII, and libgit2 quotes unusual paths in C style.
            out.push_str(&String::from_utf8_lossy(&patch.text));
        }
    }
    Some(out)
}

/// The patch of one changed file and the paths it touches (two for a rename).
struct FilePatch {
    text: Vec<u8>,
    paths: Vec<Vec<u8>>,
}

/// One patch per changed file, renames detected, new build-cache files skipped;
/// `binary_only` limits the diff to those paths and forces binary hunks.
fn patches(
    repo: &Repository,
    head: Option<&git2::Tree<'_>>,
    workdir: &Path,
    binary_only: Option<&[Vec<u8>]>,
) -> Option<Vec<FilePatch>> {
    let mut opts = DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .show_binary(true)
        .ignore_submodules(true);
    if let Some(paths) = binary_only {
        opts.force_binary(true).disable_pathspec_match(true);
        for p in paths {
            opts.pathspec(p.as_slice());
        }
    }
    let mut diff = repo
        .diff_tree_to_workdir_with_index(head, Some(&mut opts))
        .ok()?;
    let mut find = DiffFindOptions::new();
    find.renames(true).for_untracked(true);
    diff.find_similar(Some(&mut find)).ok()?;
    let mut out = Vec::new();
    for (i, delta) in diff.deltas().enumerate() {
        let old = delta.old_file().path_bytes().map(<[u8]>::to_vec);
        let new = delta.new_file().path_bytes().map(<[u8]>::to_vec);
        let is_new = matches!(delta.status(), Delta::Untracked | Delta::Added);
        // yuyao's own atomic-write leftovers (a killed write) are never part of a change.
        if is_new
            && new.as_deref().is_some_and(|p| {
                is_build_cache(workdir, p) || yuyao_protocol::temp_names::is_temp_path(p)
            })
        {
            continue;
        }
        let Some(mut patch) = Patch::from_diff(&diff, i).ok()? else {
            continue;
        };
        let text = patch.to_buf().ok()?.to_vec();
        let mut paths: Vec<Vec<u8>> = old.into_iter().chain(new).collect();
        paths.dedup();
        out.push(FilePatch { text, paths });
    }
    Some(out)
}

/// Build caches a run leaves behind, never part of a submission: Python bytecode and the
/// caches of pytest and mypy, npm's `node_modules/.cache`, and a Cargo `target/` (next to a
/// `Cargo.toml`, or marked with `CACHEDIR.TAG`).
pub fn is_build_cache(workdir: &Path, path: &[u8]) -> bool {
    if path.ends_with(b".pyc") || path.ends_with(b".pyo") {
        return true;
    }
    let parts: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
    let Some((_file, dirs)) = parts.split_last() else {
        return false;
    };
    let mut parent = workdir.to_path_buf();
    for (i, dir) in dirs.iter().enumerate() {
        match *dir {
            b"__pycache__" | b".pytest_cache" | b".mypy_cache" => return true,
            b".cache" if i > 0 && dirs[i - 1] == b"node_modules" => return true,
            b"target"
                if parent.join("Cargo.toml").is_file()
                    || parent.join("target/CACHEDIR.TAG").is_file() =>
            {
                return true;
            }
            _ => parent.push(std::ffi::OsStr::from_bytes(dir)),
        }
    }
    false
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

    #[test]
    fn build_caches_are_recognised() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        std::fs::create_dir_all(w.join("crate/target")).unwrap();
        std::fs::write(w.join("crate/Cargo.toml"), "").unwrap();
        std::fs::create_dir_all(w.join("other/target")).unwrap();
        std::fs::write(w.join("other/target/CACHEDIR.TAG"), "").unwrap();
        for cache in [
            "a/__pycache__/m.cpython-311.pyc",
            "stray.pyc",
            ".pytest_cache/v/cache/lastfailed",
            "x/.mypy_cache/3.11/m.json",
            "web/node_modules/.cache/babel/y",
            "crate/target/debug/app",
            "other/target/x",
        ] {
            assert!(is_build_cache(w, cache.as_bytes()), "{cache}");
        }
        for source in [
            "src/target/mod.rs", // a source folder named target, no Cargo.toml beside it
            "node_modules/pkg/index.js",
            ".cache/notes.txt",
            "pycache.py",
        ] {
            assert!(!is_build_cache(w, source.as_bytes()), "{source}");
        }
    }
}
