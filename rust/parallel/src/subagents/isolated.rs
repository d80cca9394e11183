//! Writable parallel work in a worktree of its own (seed 000 #12, DESIGN §1): a sub-agent
//! that may write (a `task` with a writing agent, a `/fork` in a writing mode) works in a new
//! git worktree seeded with the checkout as it is (uncommitted changes included), never in
//! the user's checkout while the session goes on; its work comes back as uncommitted changes
//! applied three-way (a conflict applies nothing and keeps the branch for review). Outside a
//! git repository, or inside a worktree already, it works in place as before.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::run::Launch;
use std::path::{Path, PathBuf};
use yuyao_core::Session;
use yuyao_protocol::{Mode, NoticeLevel};
use yuyao_store::worktree::{self, Worktree};
use yuyao_store::worktree_sync::{self, Returned};

/// A sub-agent's own worktree and the commit it started from.
pub(crate) struct Isolation {
    wt: Worktree,
    start: String,
}

pub(crate) trait IsolatedExt {
    fn isolate_child(&self, launch: &mut Launch, label: &str) -> Option<Isolation>;
    fn bring_back(&self, iso: Isolation, what: &str) -> String;
}

impl IsolatedExt for Session {
    /// Moves a writable sub-agent's launch into a new worktree (`None`: it reads only, or no
    /// worktree can be made here — then it works in place, said in a notice).
    fn isolate_child(&self, launch: &mut Launch, label: &str) -> Option<Isolation> {
        if launch.opts.mode == Some(Mode::Plan) {
            return None;
        }
        let cwd = PathBuf::from(self.cwd());
        worktree::check_repo(&cwd).ok()?;
        let made =
            worktree::create(&cwd, Some(label)).and_then(|wt| match worktree_sync::seed_from_main(
                &wt,
            ) {
                Ok(start) => Ok(Isolation { wt, start }),
                Err(e) => {
                    let _ = worktree::remove(&wt);
                    Err(e)
                }
            });
        let iso = match made {
            Ok(iso) => iso,
            Err(e) => {
                self.notice(
                    NoticeLevel::Warning,
                    format!("{label}: no worktree of its own ({e}); it works in this checkout"),
                );
                return None;
            }
        };
        let here = cwd.canonicalize().unwrap_or(cwd);
        let rel = here
            .strip_prefix(&iso.wt.repo)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        launch.opts.cwd = Some(Path::new(&iso.wt.path).join(rel).display().to_string());
        // A worktree yuyao made is the sub-agent's project (recorded, not read from a `.git`).
        launch.opts.project_dir = Some(iso.wt.path.clone());
        self.lock().trajectory.record(
            "subagent_worktree",
            serde_json::json!({"label": label, "worktree": iso.wt.path, "branch": iso.wt.branch}),
        );
        Some(iso)
    }

    /// The sub-agent's work back into the checkout: the line its result ends with.
    fn bring_back(&self, iso: Isolation, what: &str) -> String {
        let line = returned_line(&iso, what);
        self.lock().trajectory.record(
            "subagent_worktree_end",
            serde_json::json!({"what": what, "result": line}),
        );
        line
    }
}

/// Applies the worktree's work to the checkout; what to tell the model.
fn returned_line(iso: &Isolation, what: &str) -> String {
    let msg = format!("yuyao {what}");
    match worktree_sync::apply_to_main(&iso.wt, &iso.start, &msg) {
        Ok(Returned::Nothing) => {
            let _ = worktree::remove(&iso.wt);
            "[worktree] no file changed".to_string()
        }
        Ok(Returned::Applied(paths)) => {
            let _ = worktree::remove(&iso.wt);
            format!(
                "[worktree] its changes were applied to the work tree as uncommitted changes (review them with git diff): {}",
                paths.join(", ")
            )
        }
        Ok(Returned::Kept(why)) => format!("[worktree] its changes were NOT applied: {why}"),
        Err(e) => format!(
            "[worktree] its changes could not be brought back ({e}); worktree {} (branch {}) is kept",
            iso.wt.path, iso.wt.branch
        ),
    }
}
