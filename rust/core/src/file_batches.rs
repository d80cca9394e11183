//! Per-batch snapshots of the agent's file changes (the pipeline's snapshot stage); the
//! commands over them (/undo, /redo, /rewind, /diff) are `cmd_files.rs`. The store is `yuyao_store::Snapshots` (a shadow git object
//! store under `~/.yuyao/snapshots/`). Three hooks feed it: before a file tool runs (its
//! pre-images), after each tool batch (the batch is journaled), and at each user prompt (a
//! checkpoint). Changes made by bash are not tracked.

use crate::session::Session;
use serde_json::json;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use yuyao_protocol::NoticeLevel;
use yuyao_store::Snapshots;
use yuyao_store::snapshots::PreImage;

pub(crate) const BASH_NOTE: &str = "Note: only changes made by the file tools are tracked; files changed by bash commands (rm, mv, redirections, …) are not restored.";

/// Snapshot state of a session: the store (opened on first use) and the batch in progress.
#[derive(Default)]
pub(crate) struct FileSnaps {
    store: Option<Snapshots>,
    /// Pre-images of the files the current batch touches.
    pending: Vec<PreImage>,
}

/// A file the session changed and its content when the session first touched it.
pub type StartFile = (PathBuf, Option<Vec<u8>>);

impl Session {
    fn snaps(&self) -> std::sync::MutexGuard<'_, FileSnaps> {
        self.snaps.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` with the store, opening it on first use.
    pub fn with_store<R>(&self, f: impl FnOnce(&Snapshots) -> R) -> Result<R, String> {
        let mut g = self.snaps();
        if g.store.is_none() {
            g.store = Some(Snapshots::open(&self.paths.home, &self.paths.project)?);
        }
        Ok(f(g.store.as_ref().expect("opened above")))
    }

    /// At the session's end: the snapshot journal's log is folded into its one file (a
    /// journal at rest is plain JSON), unless another session is writing it.
    pub(crate) fn settle_snapshots(&self) {
        if let Some(store) = self.snaps().store.as_ref()
            && let Err(e) = store.settle()
        {
            // Nothing is lost: the log is read again by the next session.
            self.notice(NoticeLevel::Warning, format!("snapshot journal: {e}"));
        }
    }

    /// Hook: before a file tool runs, store the pre-images of the files it will touch.
    /// `paths` are the call's resolved paths, from its one parse (the policy judged them).
    pub(crate) fn before_file_tool(&self, name: &str, paths: &[PathBuf]) {
        if !crate::tool_call::registry::writes_files(name) {
            return;
        }
        // A file already captured in this batch keeps its first pre-image. A set, not a scan
        // of `pending` per path: one call may touch thousands of files.
        let paths: Vec<PathBuf> = {
            let g = self.snaps();
            let seen: HashSet<&Path> = g.pending.iter().map(|q| q.path.as_path()).collect();
            paths
                .iter()
                .filter(|p| !seen.contains(p.as_path()))
                .cloned()
                .collect()
        };
        // The tools that read the whole file they change get the bytes the capture read
        // (seed 002 §3: one read of a large file per edit); anything offered for an earlier
        // call is dropped.
        self.ctx.clear_pre_reads();
        let offer = matches!(name, "write" | "edit" | "multi-edit");
        let mut warnings = Vec::new();
        let captured = self.with_store(|s| {
            let mut out = Vec::new();
            for p in paths.into_iter().filter(|p| !p.is_dir()) {
                match s.capture_read(&p) {
                    Ok((pre, bytes)) => {
                        if offer && let (Some(bytes), Some((stamp, racy))) = (bytes, pre.stamp) {
                            let read = yuyao_tools::PreRead {
                                stamp,
                                racy,
                                bytes: std::sync::Arc::new(bytes),
                                sha256: pre.sha256,
                            };
                            self.ctx.offer_pre_read(&p, read);
                        }
                        out.push(pre)
                    }
                    Err(e) => warnings.push(e),
                }
            }
            out
        });
        match captured {
            Ok(list) => {
                let mut g = self.snaps();
                let mut seen: HashSet<PathBuf> = g.pending.iter().map(|q| q.path.clone()).collect();
                for pre in list {
                    if seen.insert(pre.path.clone()) {
                        g.pending.push(pre);
                    }
                }
            }
            Err(e) => warnings.push(e),
        }
        for w in warnings {
            self.notice(
                NoticeLevel::Warning,
                format!("{w}; /undo will not cover it"),
            );
        }
    }

    /// Every file this session changed, with its content when the session first touched it
    /// (`None`: it did not exist): what `/diff` and `/review` compare against outside git.
    pub fn session_start_files(&self) -> Result<Vec<StartFile>, String> {
        self.with_store(|st| {
            let mut v = Vec::new();
            for (p, before) in st.session_start_images(&self.id) {
                let old = match &before {
                    Some(id) => Some(st.blob(id)?),
                    None => None,
                };
                v.push((p, old));
            }
            Ok(v)
        })?
    }

    /// Hook: after a tool batch, journal the files it changed.
    pub fn finish_file_batch(&self) {
        self.ctx.clear_pre_reads();
        let pending = std::mem::take(&mut self.snaps().pending);
        if pending.is_empty() {
            return;
        }
        // What a file tool wrote, it hashed: the post-image needs no second pass when the
        // file is still the one the tool stamped.
        let known = |p: &Path| {
            let k = self.ctx.knowledge(p)?;
            (yuyao_protocol::Stamp::of_path(p)? == k.stamp).then_some(k.hash?)
        };
        let t0 = std::time::Instant::now();
        match self.with_store(|s| s.record_batch(&self.id, &pending, &known)) {
            Ok(Ok(Some(b))) => {
                let files: Vec<String> = b
                    .files
                    .iter()
                    .map(|f| f.path.display().to_string())
                    .collect();
                self.lock().trajectory.record(
                    "snapshot",
                    json!({"batch": b.id, "files": files, "us": t0.elapsed().as_micros() as u64}),
                );
                for saved in crate::feature::hooks(|f| f.batch_saved) {
                    saved(self, &b);
                }
            }
            Ok(Ok(None)) => {}
            Ok(Err(e)) | Err(e) => {
                self.notice(NoticeLevel::Warning, format!("snapshot failed: {e}"))
            }
        }
        self.journal_notes();
    }

    /// Tells the user what the snapshot journal reported (an unreadable one moved aside).
    fn journal_notes(&self) {
        for note in self.with_store(|s| s.take_notes()).unwrap_or_default() {
            self.notice(NoticeLevel::Warning, note);
        }
    }

    /// Hook: every user prompt is a checkpoint (kept across sessions).
    pub(crate) fn checkpoint_prompt(&self, text: &str) {
        self.finish_file_batch();
        let len = self.lock().history.len();
        match self.with_store(|s| s.add_checkpoint(&self.id, text, len)) {
            Ok(Ok(_)) => {}
            Ok(Err(e)) | Err(e) => {
                self.notice(NoticeLevel::Warning, format!("checkpoint not saved: {e}"))
            }
        }
        self.journal_notes();
    }
}
