//! `--auto-commit` / `git.auto_commit`: after each batch of the agent's file changes, one git
//! commit holding only the files of that batch.
//!
//! The commit is built from HEAD's tree (not from the index), so nothing the user staged or
//! changed elsewhere is ever included. A file of the batch whose content before the batch was
//! not HEAD's (the user had uncommitted changes in it) is left out and named: committing it
//! would commit the user's change with the agent's. The subject is the batch's intent line
//! (the assistant's text before the calls, first line), the body lists the files. `/undo` of
//! an auto-committed batch commits the restored files again ("Revert …"). Outside a git work
//! tree: one warning, no commits.
//!
//! The `.git` folder is writable by the agent's commands: every commit opens the repository
//! through the `RepoPin` taken at session open (`yuyao_store::gitguard`), so a `commondir`
//! planted since, or a symbolic link on a path the commit writes (`.git/logs/HEAD`, the
//! branch's ref or reflog, `objects/…`), refuses the commit with nothing written.

use crate::session::Session;
use git2::{FileMode, Oid, Repository, Signature};
use serde_json::json;
use std::path::{Path, PathBuf};
use yuyao_protocol::NoticeLevel;
use yuyao_store::gitguard::RepoPin;
use yuyao_store::snapshots::{Batch, Report};

/// Longest subject line (git's convention).
const SUBJECT_CHARS: usize = 72;

#[derive(Default)]
pub(crate) struct AutoCommit {
    /// The intent line of the tool batch in progress.
    intent: String,
    /// The outside-git warning was given.
    warned: bool,
    /// Snapshot batch id → (commit id, subject) of the commits this session made.
    commits: Vec<(u64, String, String)>,
    /// The repository as seen at session open (`None`: not a git work tree then).
    pin: Option<Result<RepoPin, String>>,
}

impl AutoCommit {
    /// The state at session open: the project's repository pinned as it is now. A
    /// repository already redirected at open is remembered as the reason to refuse.
    pub(crate) fn at_open(project: &Path) -> AutoCommit {
        let pin = project
            .join(".git")
            .symlink_metadata()
            .is_ok()
            .then(|| RepoPin::current(project, None));
        AutoCommit {
            pin,
            ..Default::default()
        }
    }
}

/// One file of a commit: its path in the work tree and whether it is included.
struct Planned {
    rel: PathBuf,
    abs: PathBuf,
}

impl Session {
    fn auto_commit_state(&self) -> std::sync::MutexGuard<'_, AutoCommit> {
        self.part::<std::sync::Mutex<AutoCommit>>()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Whether auto-commit is on: the flag, else `git.auto_commit` (read at every use).
    pub(crate) fn auto_commit_on(&self) -> bool {
        self.opts.auto_commit.unwrap_or_else(|| {
            self.config
                .get("git.auto_commit")
                .and_then(|v| v.as_bool())
                .unwrap_or(false)
        })
    }

    /// Hook: the intent line of the tool batch about to run (the commit's subject).
    pub(crate) fn auto_commit_intent(&self, intent: &str) {
        self.auto_commit_state().intent = intent.trim().to_string();
    }

    /// Opens the repository of the project as pinned at session open, or warns once that
    /// there is none; a repository that no longer matches its pin is refused with a warning.
    fn auto_commit_repo(&self) -> Option<Repository> {
        let pin = self.auto_commit_state().pin.clone();
        match pin {
            Some(Ok(pin)) => match pin.open_for_write() {
                Ok(r) => Some(r),
                Err(e) => {
                    self.notice(NoticeLevel::Warning, format!("auto-commit: {e}"));
                    None
                }
            },
            Some(Err(e)) => {
                self.notice(NoticeLevel::Warning, format!("auto-commit: {e}"));
                None
            }
            None => {
                let mut st = self.auto_commit_state();
                if !st.warned {
                    st.warned = true;
                    drop(st);
                    self.notice(
                        NoticeLevel::Warning,
                        "auto-commit is on but this project is not in a git work tree: no commits are made",
                    );
                }
                None
            }
        }
    }

    /// Hook: a batch was journaled (`cmd_files.rs`). Commits its files whose pre-image was
    /// HEAD's content.
    pub(crate) fn auto_commit_batch(&self, batch: &Batch) {
        if !self.auto_commit_on() {
            return;
        }
        let Some(repo) = self.auto_commit_repo() else {
            return;
        };
        let intent = std::mem::take(&mut self.auto_commit_state().intent);
        let mut planned = Vec::new();
        let mut left_out = Vec::new();
        for f in &batch.files {
            let Some(rel) = rel_path(&repo, &f.path) else {
                left_out.push(format!("{} (outside the repository)", f.path.display()));
                continue;
            };
            let before = match &f.before {
                Some(id) => match self.with_store(|s| s.blob(id)) {
                    Ok(Ok(bytes)) => Some(bytes),
                    _ => {
                        left_out.push(format!(
                            "{} (its earlier content is unknown)",
                            rel.display()
                        ));
                        continue;
                    }
                },
                None => None,
            };
            if head_bytes(&repo, &rel) != before {
                left_out.push(format!(
                    "{} (it had uncommitted changes before the agent's edit)",
                    rel.display()
                ));
                continue;
            }
            planned.push(Planned {
                rel,
                abs: f.path.clone(),
            });
        }
        if !left_out.is_empty() {
            self.notice(
                NoticeLevel::Warning,
                format!(
                    "auto-commit left out: {}; commit them yourself",
                    left_out.join(", ")
                ),
            );
        }
        if planned.is_empty() {
            return;
        }
        let subject = subject_of(&intent, &planned);
        let files: Vec<String> = planned
            .iter()
            .map(|p| p.rel.display().to_string())
            .collect();
        let message = format!(
            "{subject}\n\nFiles changed by yuyao (batch {}):\n{}\n",
            batch.id,
            files
                .iter()
                .map(|f| format!("- {f}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        match commit_files(&repo, &planned, &message) {
            Ok(oid) => {
                let short = oid.to_string()[..8].to_string();
                self.auto_commit_state()
                    .commits
                    .push((batch.id, oid.to_string(), subject.clone()));
                self.lock().trajectory.record(
                    "auto_commit",
                    json!({"batch": batch.id, "commit": oid.to_string(), "files": files}),
                );
                self.mark_git_stale();
                self.notice(
                    NoticeLevel::Info,
                    format!("auto-commit {short}: {subject} ({})", files.join(", ")),
                );
            }
            Err(e) => self.notice(NoticeLevel::Warning, format!("auto-commit failed: {e}")),
        }
    }

    /// Hook: `/undo` restored an auto-committed batch; commits the restored files. Returns
    /// a line for the /undo report.
    pub(crate) fn auto_commit_undo(&self, batch: &Batch, report: &Report) -> Option<String> {
        let (_, oid, subject) = self
            .auto_commit_state()
            .commits
            .iter()
            .find(|(b, _, _)| *b == batch.id)
            .cloned()?;
        let repo = self.auto_commit_repo()?;
        let planned: Vec<Planned> = report
            .restored
            .iter()
            .chain(&report.removed)
            .filter_map(|p| {
                Some(Planned {
                    rel: rel_path(&repo, p)?,
                    abs: p.clone(),
                })
            })
            .collect();
        if planned.is_empty() {
            return None;
        }
        let message = format!("Revert \"{subject}\"\n\nThis reverts commit {oid} (yuyao /undo).\n");
        match commit_files(&repo, &planned, &message) {
            Ok(new) => {
                self.mark_git_stale();
                self.lock().trajectory.record(
                    "auto_commit_revert",
                    json!({"batch": batch.id, "reverts": oid, "commit": new.to_string()}),
                );
                Some(format!(
                    "Committed the undo as {} (reverts {}).",
                    &new.to_string()[..8],
                    &oid[..8]
                ))
            }
            Err(e) => Some(format!("The undo could not be committed: {e}")),
        }
    }
}

/// `path` relative to the repository's work tree (`None` outside it).
fn rel_path(repo: &Repository, path: &Path) -> Option<PathBuf> {
    let workdir = repo.workdir()?;
    let workdir = workdir
        .canonicalize()
        .unwrap_or_else(|_| workdir.to_path_buf());
    let parent = path
        .parent()?
        .canonicalize()
        .ok()
        .or_else(|| path.parent().map(Path::to_path_buf))?;
    let full = parent.join(path.file_name()?);
    let rel = full.strip_prefix(&workdir).ok()?.to_path_buf();
    // Never the repository's own metadata.
    (!rel.starts_with(".git")).then_some(rel)
}

/// The file's content in HEAD (`None`: not in HEAD, or no HEAD yet).
fn head_bytes(repo: &Repository, rel: &Path) -> Option<Vec<u8>> {
    let tree = repo.head().ok()?.peel_to_tree().ok()?;
    let entry = tree.get_path(rel).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    Some(blob.content().to_vec())
}

/// The subject: the intent line, else a summary of the files.
fn subject_of(intent: &str, planned: &[Planned]) -> String {
    let line = intent.lines().map(str::trim).find(|l| !l.is_empty());
    let subject = match line {
        Some(l) => l.trim_end_matches(':').to_string(),
        None => {
            let names: Vec<String> = planned
                .iter()
                .take(3)
                .map(|p| p.rel.display().to_string())
                .collect();
            format!("Edit {}", names.join(", "))
        }
    };
    if subject.chars().count() <= SUBJECT_CHARS {
        subject
    } else {
        let cut: String = subject.chars().take(SUBJECT_CHARS - 1).collect();
        format!("{}…", cut.trim_end())
    }
}

/// One commit on HEAD: HEAD's tree with exactly these files set to their work-tree content
/// (or removed when gone); the index entries of these files follow, the rest of the index
/// (what the user staged) is untouched.
fn commit_files(repo: &Repository, planned: &[Planned], message: &str) -> Result<Oid, String> {
    let e = |e: git2::Error| e.message().to_string();
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let base = match &parent {
        Some(c) => c.tree().map_err(e)?,
        None => {
            let empty = repo.treebuilder(None).map_err(e)?.write().map_err(e)?;
            repo.find_tree(empty).map_err(e)?
        }
    };
    let mut update = git2::build::TreeUpdateBuilder::new();
    let mut index = repo.index().map_err(e)?;
    for p in planned {
        match std::fs::symlink_metadata(&p.abs) {
            Ok(meta) if meta.is_file() => {
                let bytes = std::fs::read(&p.abs).map_err(|x| x.to_string())?;
                let oid = repo.blob(&bytes).map_err(e)?;
                use std::os::unix::fs::PermissionsExt;
                let mode = if meta.permissions().mode() & 0o111 != 0 {
                    FileMode::BlobExecutable
                } else {
                    FileMode::Blob
                };
                update.upsert(&p.rel, oid, mode);
                index.add_path(&p.rel).map_err(e)?;
            }
            Ok(_) => return Err(format!("{} is not a regular file", p.rel.display())),
            Err(_) => {
                update.remove(&p.rel);
                let _ = index.remove_path(&p.rel);
            }
        }
    }
    let tree_id = update.create_updated(repo, &base).map_err(e)?;
    if parent.as_ref().is_some_and(|c| c.tree_id() == tree_id) {
        return Err("nothing to commit (the files equal HEAD)".into());
    }
    let tree = repo.find_tree(tree_id).map_err(e)?;
    let sig = repo
        .signature()
        .or_else(|_| Signature::now("yuyao", "yuyao@localhost"))
        .map_err(e)?;
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    let oid = repo
        .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .map_err(e)?;
    index.write().map_err(e)?;
    Ok(oid)
}

/// What this feature adds to a session (feature.rs): the `--auto-commit` state.
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "auto_commit",
    // The batch's intent becomes its commit's subject; each journaled batch is committed,
    // and `/undo` of a batch reverts its commit.
    batch_intent: Some(|s, intent| s.auto_commit_intent(intent)),
    batch_saved: Some(|s, batch| s.auto_commit_batch(batch)),
    batch_undone: Some(|s, batch, report| s.auto_commit_undo(batch, report)),
    state: Some(|o| Box::new(std::sync::Mutex::new(AutoCommit::at_open(&o.paths.project)))),
    ..crate::feature::Feature::NONE
};
