//! A request prefix a provider's prompt cache can reuse: requests are append-only between
//! compactions. The system prompt is built once per conversation (at its first call, and again
//! after a compaction, a clear, a rewind or a resume) and kept. What it states that can change
//! later — mode, role, sandbox, network, curiosity, answer style, working directory, git HEAD
//! — reaches the model as one short settings note appended at the end of the history when it
//! changes, so the level in force is still visible in the request (spec §8).
//!
//! Git: the work tree is walked (`hostgit::summary`) once per system prompt. After a tool
//! batch that could have changed the repository (a file tool wrote, a command that is not
//! read-only ran) only HEAD is read again (a few small files); the work tree is walked again
//! only when HEAD moved. Every read is recorded in the trace (`git_state`).

use crate::prompt::{self, PromptInputs, Stated};
use crate::session::Session;
use serde_json::json;
use std::path::PathBuf;
use yuyao_protocol::{Message, MessageRole};

/// How a settings note begins (the older answer-style note began the same way).
pub const NOTE_PREFIX: &str = "[settings]";

/// The system prompt of the conversation and what the requests have told the model since.
#[derive(Debug, Clone)]
pub struct Prefix {
    pub system: String,
    /// What the model was last told (`None`: restate everything in the next note, because the
    /// history holds notes written against an earlier prompt).
    pub stated: Option<Stated>,
    /// The git line the prompt was built with.
    pub git: String,
}

impl Session {
    /// The session's state as a prompt would state it now (`head` as last read).
    fn current_stated(&self, head: Option<yuyao_store::hostgit::Head>) -> Stated {
        let cwd = self.ctx.cwd();
        let st = self.lock();
        Stated {
            mode: st.policy.mode,
            role: st.policy.role,
            sandbox: st.policy.sandbox,
            network: st.policy.network,
            curiosity: st.curiosity,
            output_style: st.output_style.clone(),
            cwd,
            head,
        }
    }

    /// `hostgit::summary`, recorded in the trace with what it cost.
    fn read_git_summary(&self, why: &str) -> String {
        let t0 = std::time::Instant::now();
        let summary = yuyao_store::hostgit::summary(&self.paths.project);
        let us = t0.elapsed().as_micros() as u64;
        self.lock().trajectory.record(
            "git_state",
            json!({"read": "status", "why": why, "summary": summary, "us": us}),
        );
        summary
    }

    /// The conversation's system prompt: the one already sent, or a new one (the first call,
    /// or after the conversation was replaced).
    pub(crate) fn system_prompt(&self) -> String {
        if let Some(p) = &self.lock().prefix {
            return p.system.clone();
        }
        let git = self.read_git_summary("system prompt");
        let head = yuyao_store::hostgit::head(&self.paths.project);
        let stated = self.current_stated(head);
        let more_tools = self.deferred_listing();
        let memory: String = crate::feature::hooks(|f| f.system_section)
            .map(|section| section(self))
            .collect();
        let inputs = PromptInputs {
            stated: &stated,
            headless: self.opts.headless,
            project: &self.paths.project,
            no_memory: self.opts.no_memory,
            replace: self.opts.system_prompt.as_deref(),
            append: self.opts.append_system_prompt.as_deref(),
            git_summary: &git,
            memory: &memory,
        };
        // Skills: names and descriptions only, fixed with the prompt (later ones as notes).
        // The session's own context comes last, after everything another session shares.
        let system = crate::feature::hooks(|f| f.system_tail)
            .fold(prompt::build(&inputs) + &more_tools, |system, tail| {
                tail(self, system)
            })
            + &prompt::context(&inputs);
        let mut st = self.lock();
        // Notes in the history were written against an earlier prompt: the next note states
        // everything again, so the latest statement is the one in force.
        let restate = st
            .history
            .iter()
            .any(|m| m.role == MessageRole::User && m.text().starts_with(NOTE_PREFIX));
        st.git_stale = false;
        st.prefix = Some(Prefix {
            system: system.clone(),
            stated: (!restate).then_some(stated),
            git,
        });
        system
    }

    /// A tool batch ran that could have changed the repository: HEAD is read again before
    /// the next call.
    pub(crate) fn mark_git_stale(&self) {
        self.lock().git_stale = true;
    }

    /// The settings note the next request needs, if anything the model was told has changed
    /// since (appended by the caller at the end of the history).
    pub(crate) fn settings_note(&self) -> Option<String> {
        let _ = self.system_prompt();
        let (told, stale, prompt_git) = {
            let st = self.lock();
            let p = st.prefix.as_ref()?;
            (p.stated.clone(), st.git_stale, p.git.clone())
        };
        let mut head = told.as_ref().and_then(|t| t.head.clone());
        if stale || told.is_none() {
            let t0 = std::time::Instant::now();
            head = yuyao_store::hostgit::head(&self.paths.project);
            let us = t0.elapsed().as_micros() as u64;
            self.lock()
                .trajectory
                .record("git_state", json!({"read": "head", "us": us}));
        }
        let now = self.current_stated(head);
        let mut lines = Vec::new();
        let changed = |f: fn(&Stated) -> String| told.as_ref().is_none_or(|t| f(t) != f(&now));
        let levels = prompt::level_lines(&now, self.opts.headless);
        let before = told
            .as_ref()
            .map(|t| prompt::level_lines(t, self.opts.headless));
        for (k, (label, text)) in levels.iter().enumerate() {
            if before.as_ref().is_none_or(|b| b[k].1 != *text) {
                lines.push(format!("- {label}: {text}"));
            }
        }
        if changed(|s| s.curiosity.to_string()) {
            lines.push(format!(
                "- Asking: {}",
                prompt::curiosity_line(now.curiosity)
            ));
        }
        if changed(|s| s.output_style.clone()) {
            lines.push(format!(
                "- Answer style: {}",
                crate::settings::output_style_text(&now.output_style)
            ));
        }
        if changed(|s| s.cwd.display().to_string()) {
            lines.push(format!("- Working directory: {}", now.cwd.display()));
            // (A restatement follows a prompt just built for this directory: it has them.)
            if let Some(t) = &told {
                lines.extend(self.new_conventions(&t.cwd, &now));
            }
        }
        match &told {
            None if !prompt_git.is_empty() => lines.push(format!("- Git: {prompt_git}")),
            Some(t) if t.head != now.head && now.head.is_some() => {
                // HEAD moved (a commit, a checkout): the work tree is walked again, once.
                let summary = self.read_git_summary("HEAD moved");
                lines.push(format!("- Git: {summary}"));
            }
            _ => {}
        }
        self.lock().git_stale = false;
        if let Some(p) = self.lock().prefix.as_mut() {
            p.stated = Some(now);
        }
        (!lines.is_empty()).then(|| {
            format!(
                "{NOTE_PREFIX} The session's settings changed; these lines replace what the system prompt (or an earlier note) says:\n{}",
                lines.join("\n")
            )
        })
    }

    /// AGENTS.md / CLAUDE.md files that apply in the new working directory and did not in
    /// the old one, as note lines.
    fn new_conventions(&self, old_cwd: &std::path::Path, now: &Stated) -> Vec<String> {
        if self.opts.no_memory || self.opts.system_prompt.is_some() {
            return Vec::new();
        }
        let had: Vec<PathBuf> = prompt::convention_files(&self.paths.project, old_cwd)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        prompt::convention_files(&self.paths.project, &now.cwd)
            .into_iter()
            .filter(|(p, _)| !had.contains(p))
            .map(|(p, text)| {
                format!(
                    "- Instructions from {} (standing instructions; follow them):\n{}",
                    p.display(),
                    text.trim()
                )
            })
            .collect()
    }
}

/// Appends `note` as a user message (and records it in the trace).
pub fn push_note(st: &mut crate::session::State, note: String) {
    st.trajectory.record("note", json!({"text": note}));
    st.push(Message::user(note));
}
