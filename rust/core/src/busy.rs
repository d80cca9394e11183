//! Slash commands typed while a turn runs. Queries run at once; mode, role and other
//! switches are locked for the duration of a turn (seed 001), so they are checked now and
//! applied when the turn ends; commands that rewrite the conversation or make a model call
//! of their own wait for the turn to end.

use crate::session::{CoreError, Session};
use std::sync::atomic::Ordering;
use yuyao_protocol::NoticeLevel;

/// What a command may do while a turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WhileBusy {
    /// Reads state or changes only the display: runs at once.
    Now,
    /// A switch: validated now, applied when the turn ends.
    AfterTurn,
    /// Rewrites the conversation, the files or the session, or calls the model: refused.
    Refused,
}

pub(crate) fn while_busy(name: &str, args: &[String]) -> WhileBusy {
    use WhileBusy::*;
    let first = args.first().map(String::as_str);
    let query = args.is_empty() || matches!(first, Some("list" | "ls" | "status"));
    match name {
        "help" | "status" | "cost" | "tools" | "context" | "tasks" | "usage" | "show-thinking"
        | "title" | "export" | "copy" | "focus" | "tui" => Now,
        "config" if matches!(first, None | Some("get" | "list")) => Now,
        "mcp" | "permissions" | "sessions" | "trust" | "skills" if query => Now,
        "sandbox" if query || first == Some("explain") => Now,
        "gc" if first == Some("--dry-run") => Now,
        // Memory files are re-read before every call: a change made now reaches the next.
        "remember" | "forget" | "memory" => Now,
        // A fork runs beside the turn; agent definitions are read at each use.
        "fork" | "agents" => Now,
        // It exists to act on the running turn (`queue.rs`).
        "queue" => Now,
        "workflows" if query => Now,
        "mode" | "role" | "model" if args.is_empty() => Now,
        "mode" | "role" | "model" | "plan" | "ask" | "debug" | "vim" | "think" | "curiosity"
        | "stream" | "config" | "permissions" | "exit" => AfterTurn,
        _ => Refused,
    }
}

/// Marks the session busy for as long as it lives (a turn, however it ends).
pub(crate) struct Busy<'a>(&'a Session);

impl<'a> Busy<'a> {
    pub(crate) fn enter(s: &'a Session) -> Self {
        s.busy.store(true, Ordering::SeqCst);
        Busy(s)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::SeqCst);
    }
}

impl Session {
    /// True while `chat` runs.
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    /// `dispatch` while busy: `None` to run the command now, else its answer.
    pub(crate) fn dispatch_while_busy(
        &self,
        name: &str,
        line: &str,
        args: &[String],
    ) -> Option<Result<String, CoreError>> {
        if !self.is_busy() {
            return None;
        }
        match while_busy(name, args) {
            WhileBusy::Now => None,
            WhileBusy::AfterTurn => Some(crate::commands::check_args(name, args).map(|()| {
                self.after_turn
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(line.to_string());
                format!("{line}: applies after this turn (switches are locked while a turn runs)")
            })),
            WhileBusy::Refused => Some(Err(CoreError::Usage(format!(
                "/{name} cannot run while a turn is running: wait for it to end, or press Esc to stop it"
            )))),
        }
    }

    /// At the end of a turn: the switches typed during it, in order, each said as a notice.
    pub(crate) fn apply_after_turn(&self) {
        let queued =
            std::mem::take(&mut *self.after_turn.lock().unwrap_or_else(|e| e.into_inner()));
        for line in queued {
            match self.dispatch(&line) {
                Ok(out) => self.notice(
                    NoticeLevel::Info,
                    format!("{line} (applied after the turn): {}", out.trim()),
                ),
                Err(e) => self.notice(
                    NoticeLevel::Warning,
                    format!("{line} (after the turn): {e}"),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn queries_run_switches_wait_and_rewrites_are_refused() {
        use WhileBusy::*;
        let cases: &[(&str, &str, WhileBusy)] = &[
            ("status", "", Now),
            ("help", "", Now),
            ("cost", "", Now),
            ("tasks", "", Now),
            ("usage", "full", Now),
            ("config", "get mode", Now),
            ("config", "set mode yolo", AfterTurn),
            ("mode", "", Now),
            ("mode", "plan", AfterTurn),
            ("plan", "", AfterTurn),
            ("plan", "off", AfterTurn),
            ("role", "debug", AfterTurn),
            ("model", "other", AfterTurn),
            ("permissions", "", Now),
            ("permissions", "allow Bash(ls)", AfterTurn),
            ("exit", "", AfterTurn),
            ("compact", "", Refused),
            ("clear", "", Refused),
            ("rewind", "1", Refused),
            ("undo", "", Refused),
            ("diff", "", Refused),
            ("sessions", "abc", Refused),
            ("recap", "", Refused),
        ];
        for (name, args, want) in cases {
            assert_eq!(while_busy(name, &words(args)), *want, "/{name} {args}");
        }
    }
}
