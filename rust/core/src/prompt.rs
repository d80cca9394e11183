//! The system prompt: written for real coding work, and stating the mode, role, sandbox and
//! network in force so the request itself shows which level applies (spec §8). It is built
//! once per conversation from a [`Stated`] snapshot; what changes later reaches the model as a
//! note (`state_notes.rs`) whose lines are the same ones.

use std::path::{Path, PathBuf};
pub use yuyao_extension_files::conventions::convention_files;
use yuyao_protocol::{Curiosity, Mode, NetworkAccess, Role, SandboxLevel};

/// What a request tells the model about the session's state: the system prompt states all of
/// it, a later settings note what changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Stated {
    pub mode: Mode,
    pub role: Role,
    pub sandbox: SandboxLevel,
    pub network: NetworkAccess,
    pub curiosity: Curiosity,
    /// `ui.output_style`.
    pub output_style: String,
    pub cwd: PathBuf,
    /// HEAD of the project's repository (`None` outside one).
    pub head: Option<yuyao_store::hostgit::Head>,
}

pub struct PromptInputs<'a> {
    pub stated: &'a Stated,
    pub headless: bool,
    pub project: &'a Path,
    pub no_memory: bool,
    pub replace: Option<&'a str>,
    pub append: Option<&'a str>,
    /// `branch <name>, N changed files`, read once for this prompt.
    pub git_summary: &'a str,
    /// The memory section, loaded when the session opened ("" without memory).
    pub memory: &'a str,
}

const IDENTITY: &str = "You are yuyao, a coding agent in the user's terminal and repository. You act through tools; your final message reports the outcome.";

const METHOD: &str = "\
# How to work
- Read the relevant code before changing it; never guess at code you have not opened.
- Prefer exact edits; keep diffs small and to what was asked (no unrequested refactors or renames).
- Before the first change of a task, declare its scope with declare-scope (later changes are checked against it).
- After changing code, run the project's tests or linters and read the output.
- Finish honestly: report what changed, what you verified (actual results) and what is skipped, unverified or failing. Never say \"done\" when it is not.
- Before a batch of tool calls, say in one short line why.
- Answer plain conversation directly, without tools.";

fn mode_line(mode: Mode, headless: bool) -> &'static str {
    match (mode, headless) {
        (Mode::Plan, _) => {
            "plan: READ-ONLY. Do not modify files or run mutating commands; investigate and produce a plan."
        }
        (Mode::Ask, true) => {
            "ask: every change needs the user's approval, and nobody is available to approve in this run, so changes will be refused. Explain what you would change."
        }
        (Mode::Ask, false) => {
            "ask: every file change and mutating command is shown to the user for approval."
        }
        (Mode::AutoEdit, _) => {
            "auto-edit: file edits are approved automatically; mutating shell commands need approval."
        }
        (Mode::AutoReview, _) => {
            "auto-review: actions run automatically after a safety review; dangerous actions are blocked."
        }
        (Mode::Yolo, _) => {
            "yolo: all actions run without approval (deny rules, the sandbox and AGENTS.md still apply)."
        }
    }
}

fn role_line(role: Role) -> &'static str {
    match role {
        Role::Execute => {
            "execute: carry out the coding task: change code and run commands to solve it."
        }
        Role::Ask => "ask: answer questions and explain; make NO modifications to the workspace.",
        Role::Architect => "architect: plan the change first, then make the edits.",
        Role::Debug => {
            "debug: focus on locating the defect: reproduce it minimally, add diagnostics, find the root cause before fixing."
        }
        Role::Orchestrator => "orchestrator: split the work and coordinate sub-agents.",
    }
}

/// The one threshold `--curiosity` moves (seed 000 behaviour 1): how sure the agent must be of the
/// user's meaning to go ahead without asking. Everything else about asking stays the same.
pub(crate) fn curiosity_threshold(c: Curiosity) -> u8 {
    match c {
        Curiosity::Low => 50,
        Curiosity::Normal => 80,
        Curiosity::High => 95,
    }
}

pub(crate) fn curiosity_line(c: Curiosity) -> String {
    format!(
        "Curiosity {c}: ask before guessing when you are less than {}% sure which reading of the request the user means and the readings lead to different work: then ask with ask-user and 2–4 concrete options; otherwise take the most likely reading and say so.",
        curiosity_threshold(c)
    )
}

/// The lines of the "Permissions in force" section (and of a settings note): `(label, text)`.
pub fn level_lines(st: &Stated, headless: bool) -> [(&'static str, String); 4] {
    [
        ("Permission mode", mode_line(st.mode, headless).to_string()),
        ("Role", role_line(st.role).to_string()),
        ("Sandbox", st.sandbox.to_string()),
        ("Network for tools", st.network.to_string()),
    ]
}

/// The fixed part of the system prompt: the same for every session with the same settings and
/// tools (the session's own context follows it, [`context`]), so a provider's cache can serve
/// it to the next session too (DESIGN §4).
pub fn build(i: &PromptInputs<'_>) -> String {
    let mut s = match i.replace {
        Some(r) => r.to_string(),
        None => default_body(i),
    };
    s.push_str(&format!(
        "\n\n# Answer style\n{}",
        crate::settings::output_style_text(&i.stated.output_style)
    ));
    // The levels in force are always stated, even with a replaced prompt.
    s.push_str("\n\n# Permissions in force\n");
    for (label, text) in level_lines(i.stated, i.headless) {
        s.push_str(&format!("- {label}: {text}\n"));
    }
    if let Some(a) = i.append {
        s.push('\n');
        s.push_str(a);
        s.push('\n');
    }
    s
}

fn default_body(i: &PromptInputs<'_>) -> String {
    let mut s = String::new();
    s.push_str(IDENTITY);
    s.push_str("\n\n");
    s.push_str(METHOD);
    s.push_str("\n\n# Asking\n");
    s.push_str(&curiosity_line(i.stated.curiosity));
    s
}

/// The session's own context, the system prompt's last part: date, folders, git, the
/// instruction files and memory ("" with a replaced prompt, which states none of it).
pub fn context(i: &PromptInputs<'_>) -> String {
    if i.replace.is_some() {
        return String::new();
    }
    let mut s = format!(
        "{}- Date: {}\n- Working directory: {}\n",
        yuyao_model::cache_hints::CONTEXT_HEAD,
        chrono::Local::now().format("%Y-%m-%d"),
        i.stated.cwd.display(),
    );
    if i.project != i.stated.cwd {
        s.push_str(&format!("- Project root: {}\n", i.project.display()));
    }
    if !i.git_summary.is_empty() {
        s.push_str(&format!("- Git: {}\n", i.git_summary));
    }
    if !i.no_memory {
        for (path, text) in convention_files(i.project, &i.stated.cwd) {
            s.push_str(&format!(
                "\n# Instructions from {}\nThese are the user's standing instructions for this project; follow them.\n{}\n",
                path.display(),
                text.trim()
            ));
        }
        s.push_str(i.memory);
    }
    s
}
