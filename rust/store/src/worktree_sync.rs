//! Parallel work in a worktree that starts from, and comes back to, the user's checkout as it
//! is — uncommitted changes included (a writable sub-agent, a `/fork` in a writing mode). The
//! main work tree's uncommitted changes are carried into the new worktree and committed there
//! as its starting point; the work done since is applied back to the main work tree as
//! uncommitted changes, a three-way apply checked first, so a conflict applies nothing and
//! the work stays on its branch for review (DESIGN §1: parallel work never edits the user's
//! checkout while it runs).

use crate::worktree::{Worktree, commit_all};
use git2::{ApplyLocation, ApplyOptions, DiffOptions, Repository};

fn err(e: git2::Error) -> String {
    e.message().to_string()
}

/// Tracked and untracked changes, ignored files left out, binary content included.
fn diff_options() -> DiffOptions {
    let mut o = DiffOptions::new();
    o.include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .include_typechange(true)
        .show_binary(true);
    o
}

/// The main work tree's uncommitted changes (against its HEAD) copied into `wt` and committed
/// there; returns the worktree's starting commit (its base when there was nothing to copy).
pub fn seed_from_main(wt: &Worktree) -> Result<String, String> {
    let main = wt.main_pin(None).open_for_write()?;
    let head = main.head().and_then(|h| h.peel_to_tree()).map_err(err)?;
    // The work tree as a tree (an index filled in memory, never written back: the user's
    // staging is untouched), so new files are additions a patch can carry.
    let mut index = main.index().map_err(err)?;
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .map_err(err)?;
    index.update_all(["*"], None).map_err(err)?;
    let now = main
        .find_tree(index.write_tree_to(&main).map_err(err)?)
        .map_err(err)?;
    let diff = main
        .diff_tree_to_tree(Some(&head), Some(&now), Some(&mut diff_options()))
        .map_err(err)?;
    if diff.deltas().len() == 0 {
        return Ok(wt.base_commit.clone());
    }
    let repo = wt.open()?;
    repo.apply(&diff, ApplyLocation::WorkDir, None)
        .map_err(|e| {
            format!(
                "cannot carry the uncommitted changes into the worktree: {}",
                e.message()
            )
        })?;
    Ok(
        commit_all(wt, "yuyao: the main work tree's uncommitted changes")?
            .unwrap_or_else(|| wt.base_commit.clone()),
    )
}

/// What came back from a worktree.
#[derive(Debug, Clone, PartialEq)]
pub enum Returned {
    /// Nothing changed since the start.
    Nothing,
    /// Applied to the main work tree (uncommitted): the paths.
    Applied(Vec<String>),
    /// Not applied (a conflict with the main work tree, or it moved): why. The work is
    /// committed on the worktree's branch.
    Kept(String),
}

/// The work done in `wt` since `start` (committed first), applied to the main work tree.
pub fn apply_to_main(wt: &Worktree, start: &str, message: &str) -> Result<Returned, String> {
    commit_all(wt, message)?;
    let repo: Repository = wt.open()?;
    let start = repo
        .find_commit(git2::Oid::from_str(start).map_err(err)?)
        .and_then(|c| c.tree())
        .map_err(err)?;
    let head = repo.head().and_then(|h| h.peel_to_tree()).map_err(err)?;
    let mut opts = diff_options();
    let diff = repo
        .diff_tree_to_tree(Some(&start), Some(&head), Some(&mut opts))
        .map_err(err)?;
    if diff.deltas().len() == 0 {
        return Ok(Returned::Nothing);
    }
    let paths = crate::worktree::diff_paths(&diff);
    let main = wt.main_pin(None).open_for_write()?;
    let mut check = ApplyOptions::new();
    check.check(true);
    if let Err(e) = main.apply(&diff, ApplyLocation::WorkDir, Some(&mut check)) {
        return Ok(Returned::Kept(format!(
            "it does not apply to your work tree as it is now ({}); the work is on branch {} (worktree {})",
            e.message(),
            wt.branch,
            wt.path
        )));
    }
    main.apply(&diff, ApplyLocation::WorkDir, None)
        .map_err(|e| format!("applying the worktree's changes failed: {}", e.message()))?;
    Ok(Returned::Applied(paths))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn uncommitted_changes_go_in_and_the_work_comes_back() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        std::fs::create_dir(&root).unwrap();
        git(&root, &["init", "-q"]);
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        git(&root, &["add", "."]);
        git(&root, &["commit", "-qm", "init"]);
        // Uncommitted in the main tree: an edit and a new file.
        std::fs::write(root.join("a.txt"), "one\nmain edit\n").unwrap();
        std::fs::write(root.join("new.txt"), "untracked\n").unwrap();
        let wt = crate::worktree::create(&root, Some("t1")).unwrap();
        let start = seed_from_main(&wt).unwrap();
        let w = std::path::Path::new(&wt.path);
        assert_eq!(
            std::fs::read_to_string(w.join("a.txt")).unwrap(),
            "one\nmain edit\n"
        );
        assert_eq!(
            std::fs::read_to_string(w.join("new.txt")).unwrap(),
            "untracked\n"
        );
        // The work: a new file and an edit.
        std::fs::write(w.join("b.txt"), "from the worktree\n").unwrap();
        std::fs::write(w.join("new.txt"), "untracked\nmore\n").unwrap();
        match apply_to_main(&wt, &start, "work").unwrap() {
            Returned::Applied(p) => assert_eq!(p, ["b.txt", "new.txt"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(root.join("b.txt")).unwrap(),
            "from the worktree\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("new.txt")).unwrap(),
            "untracked\nmore\n"
        );
        // The main tree's own edit is untouched, and nothing was committed there.
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap(),
            "one\nmain edit\n"
        );
    }

    #[test]
    fn a_conflict_applies_nothing_and_keeps_the_branch() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        std::fs::create_dir(&root).unwrap();
        git(&root, &["init", "-q"]);
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        git(&root, &["add", "."]);
        git(&root, &["commit", "-qm", "init"]);
        let wt = crate::worktree::create(&root, Some("t2")).unwrap();
        let start = seed_from_main(&wt).unwrap();
        let w = std::path::Path::new(&wt.path);
        std::fs::write(w.join("a.txt"), "worktree\n").unwrap();
        std::fs::write(w.join("c.txt"), "c\n").unwrap();
        // Meanwhile the user changed the same line.
        std::fs::write(root.join("a.txt"), "user\n").unwrap();
        match apply_to_main(&wt, &start, "work").unwrap() {
            Returned::Kept(why) => assert!(why.contains(&wt.branch), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap(),
            "user\n"
        );
        assert!(
            !root.join("c.txt").exists(),
            "nothing is applied on a conflict"
        );
    }
}
