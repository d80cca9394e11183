//! The commands over the agent's file changes: /undo, /redo, /rewind (/checkpoint) and
//! /diff, one feature over the kernel's snapshot stage (`file_batches.rs`: the pre-images of
//! each tool batch and a checkpoint at each prompt).

use crate::file_batches::BASH_NOTE;
use crate::session::{CoreError, Session};
use serde_json::json;
use std::path::Path;
use tokio_util::sync::CancellationToken;
use yuyao_model::build_request;
use yuyao_protocol::Message;
use yuyao_store::snapshots::{head_changes, unified_diff};

impl Session {
    fn shown(&self, p: &Path) -> String {
        p.strip_prefix(&self.paths.project)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    }

    /// After /undo, /redo or a code rewind: the session no longer knows those files' content,
    /// and the conversation gets a note so the model does not assume its edits are there.
    fn files_changed_under_model(&self, r: &yuyao_store::snapshots::Report, command: &str) {
        let changed: Vec<String> = r
            .restored
            .iter()
            .chain(&r.removed)
            .map(|p| {
                self.ctx.forget(p);
                self.shown(p)
            })
            .collect();
        if changed.is_empty() {
            return;
        }
        let mut st = self.lock();
        if st.history.is_empty() {
            return;
        }
        st.push(Message::user(format!(
            "[Note: the user ran {command}; these files changed outside your tool calls: {}. Read them again before editing them.]",
            changed.join(", ")
        )));
    }

    fn report_text(&self, r: &yuyao_store::snapshots::Report, verb: &str) -> String {
        let mut lines = Vec::new();
        for p in &r.restored {
            lines.push(format!("  {verb} {}", self.shown(p)));
        }
        for p in &r.removed {
            lines.push(format!("  removed {}", self.shown(p)));
        }
        for p in &r.skipped {
            lines.push(format!(
                "  left alone {} (it was changed after the agent's edit; that version is kept)",
                self.shown(p)
            ));
        }
        lines.join("\n")
    }
}

fn failed(e: String) -> CoreError {
    CoreError::Failed(e)
}

pub(crate) fn undo(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if !args.is_empty() {
        return Err(CoreError::Usage("usage: /undo".into()));
    }
    s.finish_file_batch();
    let res = s
        .with_store(|st| st.undo())
        .map_err(failed)?
        .map_err(failed)?;
    let Some((b, r)) = res else {
        return Ok("nothing to undo: the agent has not changed any file in this project with its file tools".into());
    };
    s.files_changed_under_model(&r, "/undo");
    let mut out = format!(
        "Undid the agent's last change (batch {}, {}, {} file{}):\n{}",
        b.id,
        b.time,
        b.files.len(),
        if b.files.len() == 1 { "" } else { "s" },
        s.report_text(&r, "restored")
    );
    if !r.skipped.is_empty() {
        out.push_str(
            "\nSome files were left as they are because they changed after the agent edited them.",
        );
    }
    for line in crate::feature::hooks(|f| f.batch_undone).filter_map(|undone| undone(s, &b, &r)) {
        out.push('\n');
        out.push_str(&line);
    }
    Ok(out)
}

pub(crate) fn redo(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if !args.is_empty() {
        return Err(CoreError::Usage("usage: /redo".into()));
    }
    s.finish_file_batch();
    match s.with_store(|st| st.redo()).map_err(failed)? {
        Ok(None) => Ok("nothing to redo".into()),
        Ok(Some((b, r))) => {
            s.files_changed_under_model(&r, "/redo");
            Ok(format!(
                "Redid batch {} ({}):\n{}",
                b.id,
                b.time,
                s.report_text(&r, "re-applied")
            ))
        }
        // A change since the undo: a no-op that says why.
        Err(why) => Ok(why),
    }
}

pub(crate) fn diff(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if !args.is_empty() {
        return Err(CoreError::Usage("usage: /diff".into()));
    }
    s.finish_file_batch();
    let mut out = String::new();
    let starts = s.session_start_files().map_err(failed)?;
    let mut session_diffs = Vec::new();
    for (p, old) in starts {
        let new = std::fs::read(&p).ok();
        if old == new {
            continue;
        }
        session_diffs.push(unified_diff(&s.shown(&p), old.as_deref(), new.as_deref()));
    }
    if session_diffs.is_empty() {
        out.push_str("Changes by the agent in this session: none\n");
    } else {
        out.push_str(&format!(
            "Changes by the agent in this session ({} file{}, against the session's start):\n",
            session_diffs.len(),
            if session_diffs.len() == 1 { "" } else { "s" }
        ));
        for d in &session_diffs {
            out.push_str(d);
        }
    }
    match head_changes(&s.paths.project) {
        Ok(changes) if changes.is_empty() => {
            out.push_str("\nChanges against git HEAD: none (the work tree is clean)\n")
        }
        Ok(changes) => {
            out.push_str(&format!(
                "\nChanges against git HEAD ({} file{}):\n",
                changes.len(),
                if changes.len() == 1 { "" } else { "s" }
            ));
            for (p, old, new) in &changes {
                let status = match (old, new) {
                    (None, _) => "added",
                    (_, None) => "deleted",
                    _ => "modified",
                };
                out.push_str(&format!("  {status:<9}{}\n", s.shown(p)));
            }
            for (p, old, new) in &changes {
                out.push_str(&unified_diff(&s.shown(p), old.as_deref(), new.as_deref()));
            }
        }
        Err(_) => out.push_str("\n(not a git repository: no comparison with git HEAD)\n"),
    }
    Ok(out.trim_end().to_string())
}

impl Session {
    /// The checkpoints `/rewind` can go back to, oldest first, for a front's menu:
    /// `{id, time, prompt, session, this_session, changes_after}` (`changes_after`: file
    /// changes by the agent after it that a code rewind would undo).
    pub fn rewind_points(&self) -> Result<serde_json::Value, CoreError> {
        self.finish_file_batch();
        let (checkpoints, batches) = self
            .with_store(|st| (st.checkpoints(), st.batches()))
            .map_err(failed)?;
        Ok(checkpoints
            .iter()
            .map(|c| {
                let after = batches
                    .iter()
                    .filter(|b| b.id >= c.first_batch && !b.undone)
                    .count();
                json!({"id": c.id, "time": c.time, "prompt": c.prompt, "session": c.session,
                       "this_session": c.session == self.id, "changes_after": after})
            })
            .collect())
    }
}

const REWIND_USAGE: &str = "usage: /rewind [list] | /rewind <checkpoint> [both|code|conversation|summarize-from|summarize-up-to]";

pub(crate) fn rewind(s: &Session, args: &[String]) -> Result<String, CoreError> {
    s.finish_file_batch();
    let (checkpoints, batches) = s
        .with_store(|st| (st.checkpoints(), st.batches()))
        .map_err(failed)?;
    let first = args.first().map(String::as_str);
    if matches!(first, None | Some("list")) {
        if checkpoints.is_empty() {
            return Ok("no checkpoints yet: every prompt you send becomes one".into());
        }
        let mut out = String::from("Checkpoints (every prompt; newest last):\n");
        for c in &checkpoints {
            let after = batches
                .iter()
                .filter(|b| b.id >= c.first_batch && !b.undone)
                .count();
            let whose = if c.session == s.id {
                "this session".to_string()
            } else {
                format!("session {}", c.session)
            };
            let prompt: String = c
                .prompt
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(70)
                .collect();
            out.push_str(&format!(
                "  {:>3}  {}  {whose:<20} {prompt:?}  ({after} file change{} after it)\n",
                c.id,
                c.time,
                if after == 1 { "" } else { "s" }
            ));
        }
        out.push_str(REWIND_USAGE);
        out.push('\n');
        out.push_str(BASH_NOTE);
        return Ok(out);
    }
    let id: u64 = first
        .and_then(|a| a.trim_start_matches('#').parse().ok())
        .ok_or_else(|| CoreError::Usage(REWIND_USAGE.into()))?;
    let Some(cp) = checkpoints.iter().find(|c| c.id == id).cloned() else {
        return Err(CoreError::Usage(format!(
            "no checkpoint {id}; /rewind lists them"
        )));
    };
    let what = args.get(1).map(String::as_str).unwrap_or("both");
    if args.len() > 2 {
        return Err(CoreError::Usage(REWIND_USAGE.into()));
    }
    let same_session = cp.session == s.id;
    let mut out = Vec::new();
    match what {
        "both" | "code" | "conversation" => {
            if what == "conversation" && !same_session {
                return Err(CoreError::Usage(format!(
                    "checkpoint {id} belongs to session {}, whose conversation is not open here; restore its code with /rewind {id} code",
                    cp.session
                )));
            }
            if what != "conversation" {
                let r = s
                    .with_store(|st| st.rewind_code(id))
                    .map_err(failed)?
                    .map_err(failed)?;
                s.files_changed_under_model(&r, &format!("/rewind {id} code"));
                if r.batches == 0 {
                    out.push(format!(
                        "Code: no file change by the agent after checkpoint {id}; nothing to restore."
                    ));
                } else {
                    out.push(format!(
                        "Code restored to checkpoint {id} ({} batch{} undone):\n{}",
                        r.batches,
                        if r.batches == 1 { "" } else { "es" },
                        s.report_text(&r, "restored")
                    ));
                }
                out.push(BASH_NOTE.to_string());
            }
            if what != "code" {
                if same_session {
                    let mut st = s.lock();
                    let len = cp.history_len.min(st.history.len());
                    let dropped = st.history.len() - len;
                    st.truncate_history(len);
                    st.trajectory.record(
                        "rewind",
                        json!({"checkpoint": id, "dropped_messages": dropped}),
                    );
                    out.push(format!(
                        "Conversation restored to just before prompt {id} ({dropped} message{} removed). The prompt was: {}",
                        if dropped == 1 { "" } else { "s" },
                        cp.prompt
                    ));
                } else {
                    out.push(format!(
                        "Conversation: checkpoint {id} belongs to session {}, whose conversation is not open here; only the code was restored.",
                        cp.session
                    ));
                }
            }
        }
        "summarize-from" | "summarize-up-to" => {
            if !same_session {
                return Err(CoreError::Usage(format!(
                    "checkpoint {id} belongs to session {}, whose conversation is not open here",
                    cp.session
                )));
            }
            out.push(summarize(s, cp.history_len, what == "summarize-from")?);
        }
        _ => return Err(CoreError::Usage(REWIND_USAGE.into())),
    }
    Ok(out.join("\n"))
}

/// Replaces the messages after (`from`) or before the split point with a model-written
/// summary, keeping the rest.
fn summarize(s: &Session, split: usize, from: bool) -> Result<String, CoreError> {
    let history = s.lock().history.to_vec();
    let split = split.min(history.len());
    let (part, kind) = if from {
        (&history[split..], "from the checkpoint on")
    } else {
        (&history[..split], "up to the checkpoint")
    };
    if part.is_empty() {
        return Ok(format!("nothing to summarize {kind}"));
    }
    let transcript: String = part
        .iter()
        .map(|m| {
            let calls: Vec<String> = m
                .tool_calls
                .iter()
                .map(|c| {
                    format!(
                        "[tool call {} {}]",
                        c.name,
                        c.arguments.chars().take(300).collect::<String>()
                    )
                })
                .collect();
            format!(
                "{:?}: {}{}\n",
                m.role,
                m.text().chars().take(4000).collect::<String>(),
                calls.join(" ")
            )
        })
        .collect();
    let client = s.client().map_err(CoreError::Failed)?;
    let system = "You summarize part of a coding session so it can continue without the full transcript. Keep the user's requests and constraints, decisions, files changed and why, commands run and their outcomes, and open questions. Be concise and factual.";
    let req = build_request(
        system,
        &[Message::user(format!(
            "Summarize this part of the session:\n\n{transcript}"
        ))],
        Vec::new(),
        false,
        None,
    );
    let mut ignore = |_p: yuyao_model::Piece<'_>| {};
    let never = CancellationToken::new();
    let reply = s
        .block_on(client.complete(&req, &mut ignore, &never))?
        .map_err(|e| CoreError::Failed(format!("the summary could not be made: {e}")))?;
    let cost = s.pricing.cost(&reply.usage);
    let summary = reply.text.trim().to_string();
    if summary.is_empty() {
        return Err(CoreError::Failed(
            "the model returned an empty summary; the conversation was not changed".into(),
        ));
    }
    let note = Message::user(format!("[Summary of the conversation {kind}]\n{summary}"));
    let mut st = s.lock();
    st.cost_usd += cost;
    st.usage.add(&reply.usage);
    let n = part.len();
    // Recorded in the session file too, so `--resume` continues from the summarized path.
    if from {
        st.truncate_history(split);
        st.push(note);
    } else {
        let keep = st.history.len() - split;
        st.summarize_head(note.text(), keep);
    }
    st.trajectory
        .record("rewind_summary", json!({"from": from, "messages": n}));
    Ok(format!(
        "Summarized {n} message{} {kind} into one:\n{summary}",
        if n == 1 { "" } else { "s" }
    ))
}

/// What this feature adds to a session (feature.rs).
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "files",
    commands: &[
        crate::cmd!("undo", [], "", "revert the agent's last change", Some(undo)),
        crate::cmd!("redo", [], "", "re-apply an undone change", Some(redo)),
        crate::cmd!(
            "rewind",
            ["checkpoint"],
            "[list | <n> [both|code|conversation|summarize-from|summarize-up-to]]",
            "restore code and/or conversation to a checkpoint",
            Some(rewind)
        ),
        crate::cmd!("diff", [], "", "show the current changes", Some(diff)),
    ],
    ..crate::feature::Feature::NONE
};
