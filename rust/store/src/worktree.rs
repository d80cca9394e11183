//! Isolated git worktrees (`--worktree`, background sessions): a new work tree under
//! `<repo>/.yuyao/worktrees/<name>` on its own branch `yuyao/<name>`, made with libgit2 (no
//! hook or repository-configured command runs). The main work tree is never written, except
//! by an explicit merge the user chose, which refuses rather than overwrite anything.
//!
//! The worktree's `.git` file and everything under `.git` are writable by the agent's
//! commands, so every libgit2 call here opens the repository through a `RepoPin` built from
//! this record (the main repository's git folder as seen at creation, the worktree's name and
//! branch), never by following what is on disk (`gitguard.rs`).

use crate::gitguard::RepoPin;

use git2::{BranchType, Repository, Signature, StatusOptions, build::CheckoutBuilder};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where worktrees live, relative to the main work tree (excluded from git).
pub const WORKTREES_DIR: &str = ".yuyao/worktrees";
const BRANCH_PREFIX: &str = "yuyao/";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Worktree {
    pub name: String,
    pub path: String,
    pub branch: String,
    /// The main work tree's root.
    pub repo: String,
    /// The branch the main work tree was on (what a merge goes into); `None` when detached.
    pub base_branch: Option<String>,
    pub base_commit: String,
    /// The main repository's git folder (the common one) at creation. Empty in records
    /// written before it was kept: then `<repo>/.git`.
    #[serde(default)]
    pub common_dir: String,
}

impl Worktree {
    fn common_dir(&self) -> PathBuf {
        if self.common_dir.is_empty() {
            Path::new(&self.repo).join(".git")
        } else {
            PathBuf::from(&self.common_dir)
        }
    }

    /// What the worktree's repository must be: its git folder
    /// `<common>/worktrees/<name>`, on its branch.
    fn pin(&self) -> RepoPin {
        let branch = self
            .branch
            .strip_prefix("refs/heads/")
            .unwrap_or(&self.branch);
        RepoPin::linked(
            Path::new(&self.path),
            &self.common_dir(),
            &self.name,
            branch,
        )
    }

    /// What the main work tree must be for a merge or a removal: its own git folder, no
    /// redirection (on the base branch when one is given).
    pub(crate) fn main_pin(&self, branch: Option<String>) -> RepoPin {
        let common = self.common_dir();
        let common = common.canonicalize().unwrap_or(common);
        let repo = Path::new(&self.repo);
        RepoPin {
            workdir: repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf()),
            git_dir: common.clone(),
            common_dir: common,
            branch,
        }
    }

    /// Opens the worktree's repository after checking it against the record.
    pub(crate) fn open(&self) -> Result<Repository, String> {
        self.pin().open_for_write()
    }
}

/// Is `name` usable as a folder and branch component? Refused rather than rewritten: a
/// surprising name is a mistake the user should see.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if name.is_empty()
        || name.len() > 64
        || !ok_chars
        || name.contains("..")
        || name.starts_with(['.', '-'])
        || name.ends_with('.')
        || name.ends_with(".lock")
    {
        return Err(format!(
            "invalid worktree name '{name}': use letters, digits, '-', '_' and '.' (at most 64, \
             no '..', not starting with '.' or '-')"
        ));
    }
    Ok(())
}

/// The main repository of `cwd` (a linked worktree's main one), or a clear error.
fn main_repo(cwd: &Path) -> Result<Repository, String> {
    let found = Repository::discover(cwd)
        .map_err(|_| format!("{} is not inside a git repository", cwd.display()))?;
    let repo = if found.is_worktree() {
        Repository::open(found.commondir()).map_err(|e| e.message().to_string())?
    } else {
        found
    };
    if repo.is_bare() || repo.workdir().is_none() {
        return Err("the repository has no work tree (bare)".into());
    }
    Ok(repo)
}

/// The main work tree's root of `cwd`'s repository, when worktrees can be made from it (a
/// work tree with at least one commit).
pub fn check_repo(cwd: &Path) -> Result<PathBuf, String> {
    let repo = main_repo(cwd)?;
    if repo
        .head()
        .ok()
        .and_then(|h| h.peel_to_commit().ok())
        .is_none()
    {
        return Err("the repository has no commit yet: commit once, then start a worktree".into());
    }
    Ok(repo.workdir().expect("checked by main_repo").to_path_buf())
}

fn taken(repo: &Repository, root: &Path, name: &str) -> bool {
    repo.find_branch(&format!("{BRANCH_PREFIX}{name}"), BranchType::Local)
        .is_ok()
        || repo.find_worktree(name).is_ok()
        || root.join(WORKTREES_DIR).join(name).exists()
        || repo.path().join("worktrees").join(name).exists()
}

/// Creates a worktree for `cwd`'s repository on a new branch from HEAD. `name`: `None`
/// generates one; a taken name gets a `-2`, `-3`, … suffix (an existing branch is never
/// reused or moved).
pub fn create(cwd: &Path, name: Option<&str>) -> Result<Worktree, String> {
    let found = main_repo(cwd)?;
    let root = found.workdir().expect("checked above").to_path_buf();
    let root = root.canonicalize().unwrap_or(root);
    // The branch and the worktree's registration are written into the main repository: an
    // earlier session's agent may have planted links or a `commondir` there.
    let pin = RepoPin::current(&root, None)?;
    if pin.git_dir != pin.common_dir {
        return Err(format!(
            "refusing to write to git: {}/commondir redirects the main repository",
            pin.git_dir.display()
        ));
    }
    let repo = pin.open_for_write()?;
    let common_dir = repo.path().canonicalize().map_err(|e| e.to_string())?;
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.peel_to_commit().ok())
        .ok_or("the repository has no commit yet: commit once, then start a worktree")?;
    let base_branch = repo
        .head()
        .ok()
        .filter(|h| h.is_branch())
        .and_then(|h| h.shorthand().map(str::to_string));
    let wanted = match name {
        Some(n) => {
            check_name(n)?;
            n.to_string()
        }
        None => format!(
            "wt-{}-{}",
            chrono::Local::now().format("%Y%m%d-%H%M%S"),
            &uuid::Uuid::new_v4().simple().to_string()[..4]
        ),
    };
    let mut name = wanted.clone();
    let mut n = 2;
    while taken(&repo, &root, &name) {
        name = format!("{wanted}-{n}");
        n += 1;
    }
    let dir = root.join(WORKTREES_DIR);
    // A repository may commit `.yuyao` or `.yuyao/worktrees` as a symbolic link: the checkout
    // would then be written wherever it points. Only real folders inside the repo are used.
    for part in [root.join(".yuyao"), dir.clone()] {
        if std::fs::symlink_metadata(&part).is_ok_and(|m| !m.is_dir()) {
            return Err(format!(
                "{} is not a plain folder (a symbolic link?): refused",
                part.display()
            ));
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    crate::paths::exclude_from_git(&root, &format!("/{WORKTREES_DIR}/"));
    let path = dir.join(&name);
    let branch_name = format!("{BRANCH_PREFIX}{name}");
    let branch = repo
        .branch(&branch_name, &head, false)
        .map_err(|e| format!("cannot create branch {branch_name}: {}", e.message()))?;
    let mut opts = git2::WorktreeAddOptions::new();
    opts.reference(Some(branch.get()));
    if let Err(e) = repo.worktree(&name, &path, Some(&opts)) {
        // Leave nothing half made behind.
        if let Ok(mut b) = repo.find_branch(&branch_name, BranchType::Local) {
            let _ = b.delete();
        }
        return Err(format!("cannot create the worktree: {}", e.message()));
    }
    Ok(Worktree {
        name,
        path: path.display().to_string(),
        branch: branch_name,
        repo: root.display().to_string(),
        base_branch,
        base_commit: head.id().to_string(),
        common_dir: common_dir.display().to_string(),
    })
}

/// What the session left in the worktree.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Changes {
    /// Files changed, added or deleted and not committed (ignored files do not count).
    pub uncommitted: usize,
    /// Commits on the branch since the worktree was made.
    pub commits: usize,
}

impl Changes {
    pub fn any(&self) -> bool {
        self.uncommitted > 0 || self.commits > 0
    }
}

pub fn changes(wt: &Worktree) -> Result<Changes, String> {
    let repo = wt.open()?;
    let mut so = StatusOptions::new();
    so.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false);
    let uncommitted = repo
        .statuses(Some(&mut so))
        .map_err(|e| e.message().to_string())?
        .len();
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .ok_or("the worktree has no HEAD")?;
    let base = git2::Oid::from_str(&wt.base_commit).map_err(|e| e.message().to_string())?;
    let commits = repo
        .graph_ahead_behind(head, base)
        .map(|(ahead, _)| ahead)
        .unwrap_or(0);
    Ok(Changes {
        uncommitted,
        commits,
    })
}

fn signature(repo: &Repository) -> Signature<'static> {
    repo.signature()
        .map(|s| s.to_owned())
        .or_else(|_| Signature::now("yuyao", "yuyao@localhost"))
        .expect("a fixed signature is valid")
}

/// Commits everything not ignored in the worktree onto its branch. `None`: nothing to commit.
pub fn commit_all(wt: &Worktree, message: &str) -> Result<Option<String>, String> {
    let repo = wt.open()?;
    let err = |e: git2::Error| e.message().to_string();
    let mut index = repo.index().map_err(err)?;
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .map_err(err)?;
    index.update_all(["*"], None).map_err(err)?;
    index.write().map_err(err)?;
    let tree_id = index.write_tree().map_err(err)?;
    let parent = repo.head().and_then(|h| h.peel_to_commit()).map_err(err)?;
    if parent.tree_id() == tree_id {
        return Ok(None);
    }
    let tree = repo.find_tree(tree_id).map_err(err)?;
    let sig = signature(&repo);
    let id = repo
        .commit(Some("HEAD"), &sig, &sig, message, &tree, &[&parent])
        .map_err(err)?;
    Ok(Some(id.to_string()))
}

/// The paths the branch changed since the worktree was made (its work committed first).
pub fn changed_paths(wt: &Worktree, message: &str) -> Result<Vec<String>, String> {
    commit_all(wt, message)?;
    let repo = wt.open()?;
    let err = |e: git2::Error| e.message().to_string();
    let base = repo
        .find_commit(git2::Oid::from_str(&wt.base_commit).map_err(err)?)
        .and_then(|c| c.tree())
        .map_err(err)?;
    let head = repo.head().and_then(|h| h.peel_to_tree()).map_err(err)?;
    let diff = repo
        .diff_tree_to_tree(Some(&base), Some(&head), None)
        .map_err(err)?;
    Ok(diff_paths(&diff))
}

/// Every path a diff touches (old and new names), `/`-separated, sorted, once each.
pub(crate) fn diff_paths(diff: &git2::Diff<'_>) -> Vec<String> {
    let mut paths: Vec<String> = diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// Merges the worktree's branch (its changes committed first) into the branch the main work
/// tree was on. A conflict, a main tree with uncommitted changes or on another branch is
/// reported and nothing is forced; the branch and the worktree then stay.
pub fn merge(wt: &Worktree, message: &str) -> Result<String, String> {
    commit_all(wt, message)?;
    let err = |e: git2::Error| e.message().to_string();
    let base = wt
        .base_branch
        .clone()
        .ok_or("the main work tree was on a detached HEAD: nothing to merge into")?;
    let repo = wt.main_pin(None).open_for_write()?;
    let current = repo
        .head()
        .ok()
        .and_then(|h| h.shorthand().map(str::to_string));
    if current.as_deref() != Some(base.as_str()) {
        return Err(format!(
            "the main work tree is no longer on {base}: merge {} yourself",
            wt.branch
        ));
    }
    // The branch is right: check the paths of exactly this branch's ref too.
    wt.main_pin(Some(base.clone())).verify()?;
    let mut so = StatusOptions::new();
    so.include_untracked(false);
    if !repo.statuses(Some(&mut so)).map_err(err)?.is_empty() {
        return Err(format!(
            "the main work tree has uncommitted changes: merge {} yourself",
            wt.branch
        ));
    }
    let theirs_ref = repo
        .find_branch(&wt.branch, BranchType::Local)
        .map_err(err)?
        .into_reference();
    let theirs = repo
        .reference_to_annotated_commit(&theirs_ref)
        .map_err(err)?;
    let (analysis, _) = repo.merge_analysis(&[&theirs]).map_err(err)?;
    let theirs_commit = repo.find_commit(theirs.id()).map_err(err)?;
    let mut checkout = CheckoutBuilder::new();
    checkout.safe();
    if analysis.is_up_to_date() {
        return Ok(format!("{base} already contains {}", wt.branch));
    }
    if analysis.is_fast_forward() {
        repo.checkout_tree(theirs_commit.as_object(), Some(&mut checkout))
            .map_err(|e| format!("merge refused: {}", e.message()))?;
        let mut head = repo.head().map_err(err)?;
        head.set_target(
            theirs.id(),
            &format!("yuyao: fast-forward to {}", wt.branch),
        )
        .map_err(err)?;
        return Ok(format!("merged {} into {base} (fast-forward)", wt.branch));
    }
    let ours_commit = repo.head().and_then(|h| h.peel_to_commit()).map_err(err)?;
    let mut index = repo
        .merge_commits(&ours_commit, &theirs_commit, None)
        .map_err(err)?;
    if index.has_conflicts() {
        let mut paths: Vec<String> = index
            .conflicts()
            .map_err(err)?
            .filter_map(|c| c.ok())
            .filter_map(|c| c.our.or(c.their).or(c.ancestor))
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .collect();
        paths.sort();
        paths.dedup();
        return Err(format!(
            "merge conflict in {}: nothing was merged; {} and the worktree are kept",
            paths.join(", "),
            wt.branch
        ));
    }
    let tree_id = index.write_tree_to(&repo).map_err(err)?;
    let tree = repo.find_tree(tree_id).map_err(err)?;
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .map_err(|e| format!("merge refused: {}", e.message()))?;
    let sig = signature(&repo);
    repo.commit(
        Some("HEAD"),
        &sig,
        &sig,
        &format!("Merge branch '{}' into {base}", wt.branch),
        &tree,
        &[&ours_commit, &theirs_commit],
    )
    .map_err(err)?;
    Ok(format!("merged {} into {base}", wt.branch))
}

/// Removes the worktree's folder, its git registration and its branch.
pub fn remove(wt: &Worktree) -> Result<(), String> {
    let repo = wt.main_pin(None).open_for_write()?;
    let path = PathBuf::from(&wt.path);
    // Only ever a folder under the repository's worktrees folder.
    if !path.starts_with(Path::new(&wt.repo).join(WORKTREES_DIR)) {
        return Err(format!("{} is not a yuyao worktree", wt.path));
    }
    if path.exists() {
        std::fs::remove_dir_all(&path).map_err(|e| format!("cannot remove {}: {e}", wt.path))?;
    }
    if let Ok(w) = repo.find_worktree(&wt.name) {
        let mut p = git2::WorktreePruneOptions::new();
        p.valid(true).working_tree(true);
        let _ = w.prune(Some(&mut p));
    }
    if let Ok(mut b) = repo.find_branch(&wt.branch, BranchType::Local) {
        b.delete().map_err(|e| e.message().to_string())?;
    }
    Ok(())
}

/// What happens to a worktree when its session ends: `keep` (changes committed on the
/// branch, the folder stays), `merge` (then merged into the base branch; kept on a conflict),
/// `remove` (folder and branch deleted). Returns what to tell the user.
pub fn finish(wt: &Worktree, action: &str) -> Result<String, String> {
    let message = format!("yuyao: work of the session in worktree {}", wt.name);
    match action {
        "keep" => {
            let note = match commit_all(wt, &message)? {
                Some(c) => format!(" (changes committed on {}: {})", wt.branch, &c[..10]),
                None => String::new(),
            };
            Ok(format!(
                "worktree kept: {} (branch {}){note}",
                wt.path, wt.branch
            ))
        }
        "merge" => {
            let merged = merge(wt, &message)?;
            Ok(format!("{merged}; the worktree stays at {}", wt.path))
        }
        "remove" => {
            remove(wt)?;
            Ok(format!(
                "worktree {} and branch {} removed",
                wt.path, wt.branch
            ))
        }
        other => Err(format!(
            "unknown worktree action '{other}' (keep, merge or remove)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
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
    fn names_with_traversal_or_slashes_are_refused() {
        for bad in [
            "..", "../x", "a/b", ".hidden", "-x", "x.lock", "", "a..b", "x y",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_name("feature-1.2_x").is_ok());
    }

    #[test]
    fn taken_names_are_uniquified_and_merge_lands_on_base() {
        let d = repo();
        git(d.path(), &["branch", "yuyao/fix"]);
        let wt = create(d.path(), Some("fix")).unwrap();
        assert_eq!(wt.name, "fix-2");
        assert_eq!(wt.branch, "yuyao/fix-2");
        assert!(Path::new(&wt.path).join("a.txt").exists());
        // What yuyao excludes while working in the worktree goes to the shared exclude file.
        crate::paths::exclude_from_git(Path::new(&wt.path), "/.trajectory/");
        std::fs::create_dir_all(Path::new(&wt.path).join(".trajectory")).unwrap();
        std::fs::write(Path::new(&wt.path).join(".trajectory/t.jsonl"), "{}").unwrap();
        assert!(!changes(&wt).unwrap().any());
        let second = create(d.path(), Some("fix")).unwrap();
        assert_eq!(second.name, "fix-3");
        std::fs::write(Path::new(&wt.path).join("b.txt"), "new\n").unwrap();
        assert!(changes(&wt).unwrap().any());
        // The main tree is clean (the worktrees folder is excluded).
        assert_eq!(git(d.path(), &["status", "--porcelain"]), "");
        merge(&wt, "work").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("b.txt")).unwrap(),
            "new\n"
        );
        remove(&second).unwrap();
        assert!(!Path::new(&second.path).exists());
        assert_eq!(git(d.path(), &["branch", "--list", "yuyao/fix-3"]), "");
    }

    #[test]
    fn a_merge_after_the_base_moved_is_a_merge_commit_and_leaves_main_clean() {
        let d = repo();
        let wt = create(d.path(), Some("m")).unwrap();
        std::fs::write(Path::new(&wt.path).join("theirs.txt"), "t\n").unwrap();
        std::fs::write(d.path().join("ours.txt"), "o\n").unwrap();
        git(d.path(), &["add", "."]);
        git(d.path(), &["commit", "-qm", "ours"]);
        let said = merge(&wt, "work").unwrap();
        assert_eq!(said, "merged yuyao/m into main");
        assert!(d.path().join("theirs.txt").exists() && d.path().join("ours.txt").exists());
        assert_eq!(git(d.path(), &["status", "--porcelain"]), "");
        assert_eq!(
            git(d.path(), &["log", "-1", "--format=%P"])
                .split(' ')
                .count(),
            2
        );
    }

    #[test]
    fn a_conflicting_merge_is_reported_not_forced() {
        let d = repo();
        let wt = create(d.path(), Some("c")).unwrap();
        std::fs::write(Path::new(&wt.path).join("a.txt"), "theirs\n").unwrap();
        std::fs::write(d.path().join("a.txt"), "ours\n").unwrap();
        git(d.path(), &["commit", "-qam", "ours"]);
        let e = merge(&wt, "work").unwrap_err();
        assert!(e.contains("conflict in a.txt"), "{e}");
        assert_eq!(
            std::fs::read_to_string(d.path().join("a.txt")).unwrap(),
            "ours\n"
        );
    }

    #[test]
    fn a_worktrees_folder_that_is_a_link_is_refused() {
        let d = repo();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), d.path().join(".yuyao")).unwrap();
        let e = create(d.path(), Some("x")).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(
            std::fs::read_dir(elsewhere.path())
                .unwrap()
                .next()
                .is_none()
        );
        assert_eq!(git(d.path(), &["branch", "--list", "yuyao/x"]), "");
    }

    #[test]
    fn a_rewritten_git_file_never_commits_onto_the_main_repository() {
        let d = repo();
        let wt = create(d.path(), Some("w")).unwrap();
        let main_head = git(d.path(), &["rev-parse", "HEAD"]);
        std::fs::write(Path::new(&wt.path).join("evil.txt"), "x\n").unwrap();
        // What the agent can do from inside the worktree: point `.git` at the main one.
        std::fs::write(
            Path::new(&wt.path).join(".git"),
            format!("gitdir: {}\n", d.path().join(".git").display()),
        )
        .unwrap();
        let e = finish(&wt, "keep").unwrap_err();
        assert!(e.contains("refusing to write to git"), "{e}");
        assert_eq!(git(d.path(), &["rev-parse", "HEAD"]), main_head);
        assert_eq!(git(d.path(), &["status", "--porcelain"]), "");
    }

    #[test]
    fn a_linked_worktrees_registry_or_reflog_in_the_main_repository_is_refused() {
        let d = repo();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), d.path().join(".git/worktrees")).unwrap();
        let e = create(d.path(), Some("x")).unwrap_err();
        assert!(e.contains(".git/worktrees is a symbolic link"), "{e}");
        assert!(
            std::fs::read_dir(elsewhere.path())
                .unwrap()
                .next()
                .is_none()
        );
        assert_eq!(git(d.path(), &["branch", "--list", "yuyao/x"]), "");
    }

    #[test]
    fn outside_git_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let e = create(d.path(), None).unwrap_err();
        assert!(e.contains("not inside a git repository"), "{e}");
    }
}
