//! Convention files in a session (spec 002 §7): a nested AGENTS.md joins the context the
//! first time the agent reads or edits a file below it, as an appended note, never by
//! rewriting the prompt. Finding and reading them is `yuyao-extension-files`' `conventions`.

pub(crate) use yuyao_extension_files::conventions::*;

use std::path::PathBuf;

/// Tools whose paths are files the agent reads or edits (a nested AGENTS.md above one joins
/// the context).
const FILE_TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "multi-edit",
    "apply-patch",
    "notebook-edit",
    "read-media",
];

impl crate::session::Session {
    /// A new conversation (`/new`, `/clear`): its prompt loads the convention files again.
    pub(crate) fn forget_conventions(&self) {
        self.conventions_loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// After a file tool ran: a nested AGENTS.md above one of its files that is not in the
    /// context yet is appended as a note before the next model call.
    pub(crate) fn add_nested_conventions(&self, tool: &str, paths: &[PathBuf]) {
        if self.opts.no_memory || !FILE_TOOLS.contains(&tool) || paths.is_empty() {
            return;
        }
        let found = {
            let mut loaded = self
                .conventions_loaded
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if loaded.is_empty() {
                // Those of the system prompt (the project root down to cwd) are loaded.
                for (p, _) in crate::prompt::convention_files(&self.paths.project, &self.ctx.cwd())
                {
                    loaded.insert(p);
                }
                loaded.insert(PathBuf::new());
            }
            nested_for(paths, &self.paths.project, &mut loaded)
        };
        let mut st = self.lock();
        for (path, text) in found {
            let dir = path
                .parent()
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            st.pending_notes.push(format!(
                "Instructions from {} (they apply to files below {dir}/; follow them there):\n{}",
                path.display(),
                text.trim()
            ));
        }
    }
}
