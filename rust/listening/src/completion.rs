//! Honest completion (seed 000 #7): at the end of every turn that changed files or ran
//! commands, a check computed from facts the core holds — files changed (diffstat), scope
//! declared vs touched, commands with their exit codes, the last verification, questions
//! answered by assumption, tool errors left unresolved. It is shown with the turn, recorded,
//! written to status.json (`completion`). When it is not clean, it is given to the model
//! before its final answer, in the same turn (`completion_review`: one extra call at most,
//! none for a clean turn; `completion.review`). When the final answer still claims the work
//! is done while verification fails or a file the request named was never touched, the
//! check says so plainly. Files changed by shell commands come from `command_edits.rs`.
//!
//! A turn whose request asks for a change (`task_kind::names_a_change`) is checked whatever
//! ran — nothing, only reads, or only refused calls: "nothing was changed" is a finding, the
//! turn ends `NotSubmitted` (exit 1 in `-p`, like `run_agent.sh`), and a claim of success is
//! contradicted in the answer. A test or lint command the model ran counts as verification
//! when the session's own verification did not run.

#[allow(unused_imports)]
use crate::session_ext::*;

use crate::Facts;
use crate::command_edits::Changed;
use crate::verification::VerificationResult;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use yuyao_core::Session;
use yuyao_protocol::{Event, canonical_tool_name};

/// `completion.review = false`: the check is not given to the model before its final answer.
pub(crate) const REVIEW_KEY: &str = "completion.review";
/// What the model is asked with the check before its final answer.
const REVIEW_ASK: &str = "This check was computed from what this turn actually did. Give your final answer to the user now, without further tool calls: state plainly anything above that is failing, skipped, unverified, assumed or outside the scope — never report it as done.";
/// Pre-images larger than this are not kept (the file is listed without line counts).
const MAX_PRE_IMAGE: u64 = 4 << 20;

/// A shell command the turn ran.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRun {
    pub command: String,
    pub exit_code: Option<i32>,
    pub ok: bool,
    /// The turn's successful file edits when it ran (edits after it make it stale).
    pub at_edits: u32,
}

/// Who refused a call that would have changed something.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RefusedBy {
    /// The user answered no.
    User,
    /// It needed approval and nobody was there to give it (`-p` in ask mode).
    NoApprover,
    /// A rule, the mode, a hook or the scope guard.
    Policy,
}

/// A failed tool call; resolved when a later call on the same target succeeds.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub tool: String,
    pub target: String,
    pub message: String,
}

/// What the core saw during one turn. Other mechanisms fill their parts: the scope contract
/// sets `scope` (the declared globs), ask-user adds `assumptions`, verification its result.
#[derive(Debug, Default, Clone)]
pub struct CompletionFacts {
    /// The request's text (for the files it names).
    pub request: String,
    /// Each file a file tool was about to write: its content before the turn (`None`: it did
    /// not exist, or was too large to keep — see `large`).
    pub files: BTreeMap<PathBuf, Option<Vec<u8>>>,
    pub large: Vec<PathBuf>,
    /// Successful file-tool calls so far, and their count at the last verification.
    pub edits: u32,
    pub verified_at_edits: Option<u32>,
    pub commands: Vec<CommandRun>,
    pub verification: Option<VerificationResult>,
    /// Failures handed back to the model (verification), and `--auto-test` rounds.
    pub verification_feedback: u32,
    pub auto_test_rounds: u32,
    pub auto_test_passed_at: Option<u32>,
    /// `--auto-test` found no command, or could not run it: it stopped trying.
    pub auto_test_unavailable: bool,
    /// Questions nobody was there to answer (headless ask-user): the model assumed.
    pub assumptions: Vec<String>,
    pub errors: Vec<ToolError>,
    /// Files changed by shell commands (found by the work-tree stamp, `command_edits.rs`).
    pub by_command: std::collections::BTreeSet<PathBuf>,
    /// The problems the model was shown before its final answer this turn (at most once).
    pub reviewed: Option<Vec<String>>,
    /// The request asks for a change: the turn is checked even when nothing ran.
    pub change_asked: bool,
    /// Something may have changed files the turn holds no pre-image of: a command without a
    /// work-tree stamp (command tracking off), a sub-agent, a team merge, an MCP server.
    pub untracked_changes: bool,
    /// Calls that would have changed files or run commands, refused before they ran.
    pub refused: Vec<(String, RefusedBy)>,
}

impl CompletionFacts {
    pub fn new(request: &str) -> Self {
        CompletionFacts {
            request: request.to_string(),
            ..Default::default()
        }
    }

    /// Files were edited since the last verification run (or none ran yet).
    pub fn edits_since_verification(&self) -> bool {
        self.edits > 0 && self.verified_at_edits != Some(self.edits)
    }

    fn acted(&self) -> bool {
        self.change_asked || self.edits > 0 || !self.commands.is_empty() || !self.files.is_empty()
    }

    /// No file differs from its pre-image (a command's change is in `files` too).
    fn nothing_changed(&self) -> bool {
        !self.untracked_changes
            && self.large.is_empty()
            && self
                .files
                .iter()
                .all(|(path, pre)| std::fs::read(path).ok() == *pre)
    }

    /// The last test or lint command the model ran itself (the session's own verification
    /// did not run): it verifies the turn when no file was edited after it.
    fn model_verification(&self) -> Option<(&CommandRun, bool)> {
        let c = self.commands.iter().rev().find(|c| verifies(&c.command))?;
        Some((c, c.at_edits == self.edits))
    }

    /// Why a turn asked for a change ends with none: what was refused, or that nothing ran.
    fn nothing_line(&self) -> String {
        match self.refusals_line() {
            Some(r) => format!("nothing was changed: {r}"),
            None if self.commands.is_empty() && self.edits == 0 => {
                "nothing was changed: no file was edited and no command ran".to_string()
            }
            None => "nothing was changed: no file differs from before the turn".to_string(),
        }
    }

    /// "2 edits were refused by you; 1 command needed approval and nobody was there to give it".
    fn refusals_line(&self) -> Option<String> {
        let count = |by: RefusedBy| self.refused.iter().filter(|(_, b)| *b == by).count();
        let calls = |n: usize| {
            if n == 1 {
                "1 call was".to_string()
            } else {
                format!("{n} calls were")
            }
        };
        let mut parts = Vec::new();
        let (user, none, policy) = (
            count(RefusedBy::User),
            count(RefusedBy::NoApprover),
            count(RefusedBy::Policy),
        );
        if user > 0 {
            parts.push(format!("{} refused by you", calls(user)));
        }
        if none > 0 {
            parts.push(format!(
                "{} not run: they needed approval and nobody was there to give it (allow them with --permission-mode or --allowedTools)",
                calls(none)
            ));
        }
        if policy > 0 {
            parts.push(format!(
                "{} refused by the rules or the mode",
                calls(policy)
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// A test runner or linter command: evidence of verification when the model ran it.
pub(crate) fn verifies(command: &str) -> bool {
    static CHECKER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?x)(^|[\s;&|(/])(
                (python[0-9.]*\s+)?(\S*/)?(test_\w+|\w+_test|tests?)\.py
              | (\S*/)?(run_)?tests?\.sh
              | ruff\s+check | flake8 | pylint | mypy | pyright | black\s+--check
              | eslint | tsc(\s|$) | prettier\s+--check | shellcheck | golangci-lint
              | go\s+vet | cargo\s+(check|clippy) | make\s+lint | (npm|yarn|pnpm)\s+(run\s+)?(lint|check|typecheck)
            )(\s|$|;|&|\|)",
        )
        .expect("valid regex")
    });
    crate::next_step::is_test_command(command) || CHECKER.is_match(command)
}

/// One changed file of the diffstat.
#[derive(Debug, Clone, PartialEq)]
pub struct FileStat {
    pub path: String,
    pub added: usize,
    pub removed: usize,
    pub created: bool,
    pub deleted: bool,
    /// Changed by a shell command (not a file tool).
    pub by_command: bool,
}

/// A shell command's exit code from the bash tool's closing `[exit code N]` line.
fn exit_code_of(output: &str) -> Option<i32> {
    let at = output.rfind("[exit code ")?;
    let digits: String = output[at + 11..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

/// What a failed call was about: its path or command, so a later success on it resolves it.
fn target_of(name: &str, arguments: &str) -> String {
    let v: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    for k in [
        "command",
        "cmd",
        "file_path",
        "path",
        "notebook_path",
        "url",
        "pattern",
    ] {
        if let Some(s) = v.get(k).and_then(|x| x.as_str()) {
            return s.to_string();
        }
    }
    format!("{name} {arguments}")
}

/// Relative display of `p` under `root`.
fn shown(p: &Path, root: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

/// Verbs that make a clause ask for a change to the files it names.
const CHANGE_WORDS: &[&str] = &[
    "fix",
    "add",
    "implement",
    "change",
    "update",
    "edit",
    "modify",
    "rename",
    "remove",
    "delete",
    "refactor",
    "rewrite",
    "write",
    "create",
    "replace",
    "move",
    "document",
    "correct",
    "patch",
    "convert",
    "extend",
    "bump",
    "format",
];

/// Words after which a clause's file is a reference, not a file to change ("as described in
/// notes.md", "like a.py", "see docs/x.md", "using b.py").
const REFERENCE_WORDS: &[&str] = &[
    "see",
    "like",
    "per",
    "cf",
    "following",
    "according",
    "described",
    "based",
    "using",
    "mirroring",
    "matching",
    "style",
];

/// File names without an extension that name a file even in prose.
const BARE_FILE_NAMES: &[&str] = &[
    "Makefile",
    "Dockerfile",
    "Containerfile",
    "Justfile",
    "Rakefile",
    "Gemfile",
    "Procfile",
    "Vagrantfile",
    "Jenkinsfile",
];

/// `name.ext` with a short alphanumeric extension (not `e.g`, `1.2.3` or a sentence end).
fn has_extension(name: &str) -> bool {
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=10).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

/// The project file a word of the request names, if it is one: an `@ref`, a quoted or
/// backticked path, a word with a `/` or an extension that is a file of the project, or such
/// a path (with `/`, or marked) that does not exist yet — a file to create. Prose words,
/// directories and paths outside the project name nothing.
fn named_file(word: &str, root: &Path) -> Option<PathBuf> {
    let marked = word.starts_with(['@', '`', '"', '\'']);
    let w = word
        .trim_start_matches(['@', '`', '"', '\'', '('])
        .trim_end_matches(['`', '"', '\'', ')', ',', ';', ':', '.', '!', '?']);
    // `a.py:12`, `a.py:12:3`, `a.py#L12`: the file.
    let w = w.split('#').next().unwrap_or(w);
    let w = w.split(':').next().unwrap_or(w);
    if w.is_empty() || w.contains("://") || w.starts_with('-') || w.starts_with('~') {
        return None;
    }
    let path = Path::new(w);
    let rel = if path.is_absolute() {
        path.strip_prefix(root).ok()?
    } else {
        path
    };
    if rel.as_os_str().is_empty()
        || rel
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    let name = rel.file_name()?.to_str()?;
    let pathy = w.contains('/') || has_extension(name);
    let p = root.join(rel);
    if p.is_file() {
        return (marked || pathy || BARE_FILE_NAMES.contains(&name)).then_some(p);
    }
    ((marked || w.contains('/')) && has_extension(name) && !p.exists()).then_some(p)
}

/// Files of the project the request asks to change: named in a clause ("fix a.py", "and
/// document it in b.py", "create src/new.py") that has a change verb, before any reference
/// word — a file only mentioned ("look at c.py", "as described in notes.md") is not a
/// requested change.
fn requested_files(request: &str, root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let lowered = request
        .replace(['\n', ';', ',', '('], " | ")
        .replace(". ", " | ");
    let bare = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    for sentence in lowered.split(" | ") {
        // "fix a.py and b.py": a part that starts with a file continues the part before it.
        let mut asked = false;
        for clause in sentence.split(" and ").flat_map(|c| c.split(" then ")) {
            let words: Vec<&str> = clause.split_whitespace().collect();
            let continues = words.first().is_some_and(|w| named_file(w, root).is_some());
            asked = words.iter().any(|w| {
                let w = bare(w);
                CHANGE_WORDS
                    .iter()
                    .any(|v| w == *v || w.strip_suffix('s') == Some(v))
            }) || (asked && continues);
            if asked {
                requested_in(&words, root, &mut out);
            }
        }
    }
    out
}

/// The files a change clause's words name, up to the first reference word.
fn requested_in(words: &[&str], root: &Path, out: &mut Vec<PathBuf>) {
    for w in words {
        let bare = w
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if REFERENCE_WORDS.contains(&bare.as_str()) {
            break;
        }
        if let Some(p) = named_file(w, root)
            && !out.contains(&p)
        {
            out.push(p);
        }
    }
}

/// The final answer says the work is done without admitting anything failed or was skipped.
pub fn claims_done(text: &str) -> bool {
    let t = text.to_lowercase();
    let claims = [
        "done",
        "complete",
        "finished",
        "fixed",
        "implemented",
        "all tests pass",
        "tests pass",
        "successfully",
        "✅",
        "resolved",
        "works now",
        // First-person reports of a change made.
        "i created",
        "i've created",
        "i added",
        "i've added",
        "i updated",
        "i've updated",
        "i changed",
        "i've changed",
        "i wrote",
        "i've written",
        "has been added",
        "has been updated",
        "has been created",
        "have been added",
        "have been updated",
    ];
    let admits = [
        "fail",
        "not verified",
        "unverified",
        "could not",
        "couldn't",
        "cannot",
        "can't",
        "skipped",
        "not done",
        "incomplete",
        "still broken",
        "did not",
        "didn't",
        "unable",
        "remaining",
        "not yet",
        "was not",
        "were not",
        "wasn't",
        "weren't",
        "not changed",
        "nothing was",
        "no change",
        "refused",
    ];
    claims.iter().any(|c| t.contains(c)) && !admits.iter().any(|a| t.contains(a))
}

pub(crate) trait CompletionExt {
    fn completion_begin(&self, request: &str);
    fn completion_before_write(&self, name: &str, paths: &[PathBuf]);
    fn completion_after_call(
        &self,
        call_name: &str,
        arguments: &str,
        ok: bool,
        ran: bool,
        output: &str,
    );
    fn completion_command_changed(&self, changed: Vec<Changed>);
    fn completion_assumed(&self, question: &str);
    fn completion_review_enabled(&self) -> bool;
    fn completion_review(&self, final_text: &str) -> bool;
    fn answers_only(&self) -> bool;
    fn change_not_made(&self) -> Option<String>;
    fn compute_check(&self, final_text: &str) -> Option<Computed>;
    fn completion_check(&self, final_text: &str) -> Option<Value>;
}

impl CompletionExt for Session {
    /// A new turn: facts start empty.
    fn completion_begin(&self, request: &str) {
        // Planning produces a plan, not changes; a sub-agent's turn is its parent's to check.
        let change_asked = yuyao_words::task_kind::names_a_change(request)
            && !self.is_sub_agent()
            && self.lock().policy.mode != yuyao_protocol::Mode::Plan
            && !self.answers_only();
        let mut st = self.lock();
        st.facts().completion = CompletionFacts::new(request);
        st.facts().completion.change_asked = change_asked;
        // The user may have changed files between turns.
        st.facts().work_stamp_fresh = false;
    }

    /// Before a file tool runs: the pre-image of each path it writes, once per turn.
    fn completion_before_write(&self, name: &str, paths: &[PathBuf]) {
        if !yuyao_core::registry::writes_files(name) {
            return;
        }
        let mut st = self.lock();
        for p in paths {
            if st.facts().completion.files.contains_key(p) || p.is_dir() {
                continue;
            }
            let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            if size > MAX_PRE_IMAGE {
                st.facts().completion.large.push(p.clone());
                st.facts().completion.files.insert(p.clone(), None);
            } else {
                let pre = std::fs::read(p).ok();
                st.facts().completion.files.insert(p.clone(), pre);
            }
        }
    }

    /// After a tool call: commands with their exit codes, edits, errors and their resolution.
    fn completion_after_call(
        &self,
        call_name: &str,
        arguments: &str,
        ok: bool,
        ran: bool,
        output: &str,
    ) {
        let name = canonical_tool_name(call_name).unwrap_or(call_name);
        let target = target_of(name, arguments);
        let mut st = self.lock();
        let f = &mut st.facts().completion;
        if name == "bash" && ran {
            let background = output.contains("background job");
            if !background {
                f.commands.push(CommandRun {
                    command: target.clone(),
                    exit_code: exit_code_of(output),
                    ok,
                    at_edits: f.edits,
                });
            }
        }
        if ok && ran && yuyao_core::registry::writes_files(name) {
            f.edits += 1;
        }
        if !ok && !ran && (yuyao_core::registry::writes_files(name) || name == "bash") {
            let by = if output.starts_with("Refused: the user declined") {
                Some(RefusedBy::User)
            } else if output.contains("nobody is there to approve it") {
                Some(RefusedBy::NoApprover)
            } else if output.starts_with("Refused") {
                Some(RefusedBy::Policy)
            } else {
                None
            };
            if let Some(by) = by {
                f.refused.push((target.clone(), by));
            }
        }
        if ok {
            f.errors.retain(|e| !(e.tool == name && e.target == target));
        } else if name != "ask-user" && (!ran || yuyao_core::registry::writes_files(name)) {
            // A refused, malformed or unknown call, or a write that failed. A command that
            // ran and exited non-zero is listed with its exit code instead (grep finding
            // nothing is no error), and a failed read is exploration.
            let first = output.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            f.errors.retain(|e| !(e.tool == name && e.target == target));
            f.errors.push(ToolError {
                tool: name.to_string(),
                target,
                message: first.chars().take(200).collect(),
            });
        }
    }

    /// Files a shell command changed (`command_edits.rs`): their pre-images join the turn's
    /// (a file already known keeps its first one), and they count as an edit, so the
    /// verification before the final answer runs for them.
    fn completion_command_changed(&self, changed: Vec<Changed>) {
        let mut st = self.lock();
        let f = &mut st.facts().completion;
        for c in changed {
            f.by_command.insert(c.path.clone());
            if f.files.contains_key(&c.path) {
                continue;
            }
            if !c.known {
                f.large.push(c.path.clone());
            }
            f.files.insert(c.path, c.before);
        }
        f.edits += 1;
    }

    /// ask-user with nobody to answer: the model goes on with an assumption.
    fn completion_assumed(&self, question: &str) {
        self.lock()
            .facts()
            .completion
            .assumptions
            .push(question.to_string());
    }

    /// `completion.review` (default true): a check that is not clean goes to the model
    /// before its final answer, in the same turn.
    fn completion_review_enabled(&self) -> bool {
        self.config()
            .get(REVIEW_KEY)
            .and_then(|v| v.as_bool())
            .unwrap_or(true)
    }

    /// Before the final answer of a turn that acted: when its check is not clean, the check
    /// is appended to the conversation (a user note: the request's prefix stays as it was)
    /// and the model answers again; that reply is the final answer. Once per turn, so at
    /// most one extra call; a clean turn costs none. Returns whether the turn continues.
    fn completion_review(&self, final_text: &str) -> bool {
        // A sub-agent's answer goes to the parent model, whose own turn is checked.
        if !self.completion_review_enabled()
            || self.is_sub_agent()
            || self.lock().facts().completion.reviewed.is_some()
        {
            return false;
        }
        let Some(c) = self.compute_check(final_text) else {
            return false;
        };
        // The architect's read-only phase hands its plan to the editor: not a final answer.
        if !c.worth_telling || self.answers_only() {
            return false;
        }
        let mut st = self.lock();
        st.facts().completion.reviewed = Some(c.facts_problems.clone());
        st.trajectory
            .record("completion_review", json!({"problems": c.problems}));
        st.push(yuyao_protocol::Message::user(format!(
            "[completion check before your final answer]\n{}\n{REVIEW_ASK}",
            c.text
        )));
        drop(st);
        self.notice(
            yuyao_protocol::NoticeLevel::Info,
            "the completion check is not clean; the model restates its final answer with it",
        );
        true
    }

    /// The ask role answers only (the architect's planning phase runs in it): no change is
    /// expected of it.
    fn answers_only(&self) -> bool {
        self.lock().policy.role == yuyao_protocol::Role::Ask
    }

    /// The turn was asked for a change and made none: why, for the turn's error (it ends
    /// `NotSubmitted`: exit 1 in `-p`, not done in `--json`, stream-json and agent_api).
    fn change_not_made(&self) -> Option<String> {
        if self.answers_only() {
            return None;
        }
        // The pre-images are cloned only for a turn that asked for a change.
        let f = {
            let mut st = self.lock();
            if !st.facts().completion.change_asked {
                return None;
            }
            st.facts().completion.clone()
        };
        f.nothing_changed()
            .then(|| format!("the request asks for a change, but {}", f.nothing_line()))
    }

    /// The check from the facts held now, with nothing recorded or emitted.
    fn compute_check(&self, final_text: &str) -> Option<Computed> {
        let facts = self.lock().facts().completion.clone();
        if !facts.acted() {
            return None;
        }
        let root = self
            .tool_context()
            .roots
            .lock()
            .ok()
            .and_then(|r| r.first().cloned())
            .unwrap_or_else(|| PathBuf::from(self.cwd()));
        let mut stats = Vec::new();
        for (path, pre) in &facts.files {
            let now = std::fs::read(path).ok();
            let by_command = facts.by_command.contains(path);
            if facts.large.contains(path) {
                stats.push(FileStat {
                    path: shown(path, &root),
                    added: 0,
                    removed: 0,
                    created: false,
                    deleted: now.is_none(),
                    by_command,
                });
                continue;
            }
            if &now == pre {
                continue;
            }
            let old = pre
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            let new = now
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            let (mut added, mut removed) = (0, 0);
            for change in
                similar::TextDiff::from_lines(old.as_ref(), new.as_ref()).iter_all_changes()
            {
                match change.tag() {
                    similar::ChangeTag::Insert => added += 1,
                    similar::ChangeTag::Delete => removed += 1,
                    similar::ChangeTag::Equal => {}
                }
            }
            stats.push(FileStat {
                path: shown(path, &root),
                added,
                removed,
                created: pre.is_none(),
                deleted: now.is_none(),
                by_command,
            });
        }
        // The scope the contract holds for this turn (the guard's own globs).
        let (scope, outside): (Option<Vec<String>>, Vec<String>) =
            match self.listening().scope.lock() {
                Ok(t) => match t.declared.as_ref() {
                    Some(sc) => (
                        Some(sc.files.clone()),
                        stats
                            .iter()
                            .filter(|s| !sc.covers(&s.path))
                            .map(|s| s.path.clone())
                            .collect(),
                    ),
                    None => (None, Vec::new()),
                },
                Err(_) => (None, Vec::new()),
            };
        let requested = requested_files(&facts.request, &root);
        let untouched: Vec<String> = requested
            .iter()
            .filter(|p| !stats.iter().any(|s| root.join(&s.path) == **p))
            .map(|p| shown(p, &root))
            .collect();
        // The session's verification did not run: a test or lint command the model ran counts.
        let mut stale_check = None;
        // Only for a turn that changed files: a test run alone is a finding, not a check.
        let verification = facts.verification.clone().or_else(|| {
            if stats.is_empty() {
                return None;
            }
            let (run, current) = facts.model_verification()?;
            if !current {
                stale_check = Some(run.command.clone());
                return None;
            }
            Some(VerificationResult {
                command: run.command.clone(),
                source: "run by the model".into(),
                ok: run.exit_code == Some(0) || (run.exit_code.is_none() && run.ok),
                exit_code: run.exit_code,
                timed_out: false,
                output: String::new(),
                full_output: None,
                not_run: None,
            })
        });
        // Not run (refused, nobody to approve it, not installed) is unverified, not failing.
        let verified = verification
            .as_ref()
            .filter(|v| v.not_run.is_none())
            .map(|v| v.ok);
        let nothing_changed = facts.change_asked && stats.is_empty() && facts.nothing_changed();
        let claims = claims_done(final_text);
        let mut problems = Vec::new();
        let nothing_line = nothing_changed.then(|| facts.nothing_line());
        if let Some(line) = &nothing_line {
            problems.push(line.clone());
        }
        if let Some(v) = &verification
            && !v.ok
        {
            problems.push(format!("verification: {}", v.outcome()));
        }
        if facts.edits_since_verification() && facts.verification.is_some() {
            problems.push("files were edited after the last verification run".to_string());
        }
        if let Some(cmd) = &stale_check {
            problems.push(format!(
                "files were edited after the last test run (`{cmd}`): the change is unverified"
            ));
        }
        for e in &facts.errors {
            problems.push(format!(
                "unresolved {} error on {}: {}",
                e.tool, e.target, e.message
            ));
        }
        for q in &facts.assumptions {
            problems.push(format!("assumed (no user to answer): {q}"));
        }
        if !outside.is_empty() {
            problems.push(format!(
                "changed outside the declared scope: {}",
                outside.join(", ")
            ));
        }
        // Only files the request named that the turn never changed, and only when it edited.
        let untouched_named = if facts.edits > 0 {
            untouched.clone()
        } else {
            Vec::new()
        };
        if !untouched_named.is_empty() {
            problems.push(format!(
                "named in the request but not changed: {}",
                untouched_named.join(", ")
            ));
        }
        let facts_problems = problems.clone();
        let worth_telling =
            problems.len() > usize::from(nothing_line.is_some()) || (nothing_changed && claims);
        let failing = verified == Some(false);
        let mut contradiction = None;
        if claims && (failing || !untouched_named.is_empty() || nothing_changed) {
            let mut why = Vec::new();
            if let Some(line) = &nothing_line {
                why.push(line.clone());
            }
            if failing && let Some(v) = &verification {
                why.push(format!("verification {}", v.outcome()));
            }
            if !untouched_named.is_empty() {
                why.push(format!(
                    "{} named in the request {} not changed",
                    untouched_named.join(", "),
                    if untouched_named.len() == 1 {
                        "was"
                    } else {
                        "were"
                    }
                ));
            }
            let line = format!(
                "The final answer says the work is done, but it is not: {}.",
                why.join("; and ")
            );
            problems.insert(0, line.clone());
            contradiction = Some(line);
        }
        let auto_test = self.options().auto_test.then(|| {
            json!({"rounds": facts.auto_test_rounds, "passed_at": facts.auto_test_passed_at,
                   "unavailable": facts.auto_test_unavailable,
                   "max_rounds": self.verification_max_rounds(),
                   "stopped_by_limit": facts.auto_test_passed_at.is_none()
                        && facts.auto_test_rounds >= self.verification_max_rounds()})
        });
        let check = json!({
            "files_changed": stats.iter().map(|s| json!({"path": s.path, "added": s.added,
                "removed": s.removed, "created": s.created, "deleted": s.deleted,
                "by_command": s.by_command})).collect::<Vec<_>>(),
            "commands": facts.commands.iter().map(|c| json!({"command": c.command,
                "exit_code": c.exit_code, "ok": c.ok})).collect::<Vec<_>>(),
            "verification": verification.as_ref().map(VerificationResult::to_json),
            "nothing_changed": nothing_changed,
            "refused": facts.refused.iter().map(|(t, by)| json!({"target": t,
                "by": match by { RefusedBy::User => "user", RefusedBy::NoApprover => "no approver",
                                 RefusedBy::Policy => "policy" }})).collect::<Vec<_>>(),
            "verified": verified,
            "assumptions": facts.assumptions,
            "unresolved_errors": facts.errors.iter().map(|e| json!({"tool": e.tool,
                "target": e.target, "message": e.message})).collect::<Vec<_>>(),
            "scope": scope,
            "outside_scope": outside,
            "requested_untouched": untouched_named,
            "claims_done": claims,
            "contradiction": contradiction,
            "auto_test": auto_test,
            "reviewed_by_model": facts.reviewed.is_some(),
            "problems": problems,
            "clean": problems.is_empty(),
        });
        let text = render(&check, &stats);
        Some(Computed {
            check,
            text,
            problems,
            facts_problems,
            worth_telling,
            verified,
        })
    }

    /// The check for the turn that just ended (None when it changed no file and ran no
    /// command). Emitted, recorded, kept for status.json, and noted for the model.
    fn completion_check(&self, final_text: &str) -> Option<Value> {
        let Some(c) = self.compute_check(final_text) else {
            self.lock().last_completion = None;
            return None;
        };
        {
            let mut st = self.lock();
            st.trajectory.record("completion", c.check.clone());
            st.last_completion = Some(c.check.clone());
            // The model reads it with its next request (appended, never a rewrite) when
            // something is not clean — unless it already saw these very problems before
            // its final answer.
            let seen = st.facts().completion.reviewed.as_ref() == Some(&c.facts_problems)
                && c.check["contradiction"].is_null();
            if c.worth_telling && !seen {
                st.pending_notes.push(format!(
                "[completion check of your last turn]\n{}\nIf anything above is failing, skipped or unverified, say so plainly — never report it as done.",
                c.text
                ));
            }
        }
        self.emit(Event::Completion {
            text: c.text,
            verified: c.verified,
            problems: c.problems,
            check: c.check.clone(),
        });
        Some(c.check)
    }
}

/// A computed check: the JSON, the block as shown, and the problems (with and without the
/// line contradicting the final answer, which depends on that answer's words).
pub(crate) struct Computed {
    check: Value,
    text: String,
    problems: Vec<String>,
    facts_problems: Vec<String>,
    /// Something the model should hear before (or after) its final answer: any problem, but
    /// "nothing was changed" alone only when the answer claims otherwise (a clarifying
    /// question asked in words is no mistake to restate).
    worth_telling: bool,
    verified: Option<bool>,
}

/// The block shown after the turn.
fn render(check: &Value, stats: &[FileStat]) -> String {
    let mut lines = vec!["Completion check".to_string()];
    if stats.is_empty() {
        lines.push("  files changed: none".into());
    } else {
        let files: Vec<String> = stats
            .iter()
            .map(|s| {
                let what = if s.created {
                    "new, "
                } else if s.deleted {
                    "deleted, "
                } else {
                    ""
                };
                let how = if s.by_command { ", by a command" } else { "" };
                format!("{} ({what}+{} -{}{how})", s.path, s.added, s.removed)
            })
            .collect();
        lines.push(format!("  files changed: {}", files.join(", ")));
    }
    if let Some(cmds) = check["commands"].as_array().filter(|c| !c.is_empty()) {
        let shown: Vec<String> = cmds
            .iter()
            .map(|c| {
                let cmd: String = c["command"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(80)
                    .collect();
                match c["exit_code"].as_i64() {
                    Some(code) => format!("`{cmd}` → exit {code}"),
                    None if c["ok"].as_bool() == Some(true) => format!("`{cmd}` → ok"),
                    None => format!("`{cmd}` → failed"),
                }
            })
            .collect();
        lines.push(format!("  commands: {}", shown.join(", ")));
    }
    if let Some(globs) = check["scope"].as_array() {
        let globs: Vec<&str> = globs.iter().filter_map(|g| g.as_str()).collect();
        let outside = check["outside_scope"].as_array().map_or(0, Vec::len);
        lines.push(format!(
            "  scope: {} ({})",
            globs.join(", "),
            if outside == 0 {
                "every change inside".to_string()
            } else {
                format!("{outside} file(s) outside")
            }
        ));
    }
    match &check["verification"] {
        Value::Null => lines.push("  verification: none ran".into()),
        v => {
            let ok = v["ok"].as_bool() == Some(true);
            let line = if let Some(why) = v["not_run"].as_str() {
                format!("`{}` not run ({why})", v["command"].as_str().unwrap_or(""))
            } else if ok {
                let by = if v["source"] == "run by the model" {
                    " (run by the model)"
                } else {
                    ""
                };
                format!("`{}` passed{by}", v["command"].as_str().unwrap_or(""))
            } else {
                format!(
                    "`{}` FAILED (exit {})",
                    v["command"].as_str().unwrap_or(""),
                    v["exit_code"]
                        .as_i64()
                        .map_or("none".into(), |c| c.to_string())
                )
            };
            lines.push(format!("  verification: {line}"));
        }
    }
    if let Some(a) = check["auto_test"].as_object() {
        let rounds = a["rounds"].as_u64().unwrap_or(0);
        let line = match a["passed_at"].as_u64() {
            Some(n) => format!("passed at round {n} of at most {}", a["max_rounds"]),
            None if a["unavailable"].as_bool() == Some(true) => {
                "no test command could run (see --test-cmd)".to_string()
            }
            None if a["stopped_by_limit"].as_bool() == Some(true) => {
                format!("still failing after {rounds} rounds (limit verification.max_rounds)")
            }
            None => format!("{rounds} round(s), not passing"),
        };
        lines.push(format!("  auto-test: {line}"));
    }
    if let Some(p) = check["problems"].as_array() {
        if p.is_empty() {
            lines.push("  nothing failing, skipped or unverified was found".into());
        }
        for item in p {
            lines.push(format!("  ! {}", item.as_str().unwrap_or("")));
        }
    }
    lines.join("\n")
}

/// The turn's text as returned to the caller (agent_api, `-p`): with the check appended when
/// it finds the turn not clean (failing verification, or a claim of done the facts refute).
pub fn with_flagged_check(text: &str, check: Option<&Value>) -> String {
    let Some(c) = check else {
        return text.to_string();
    };
    let flagged = c["verified"] == Value::Bool(false) || !c["contradiction"].is_null();
    if !flagged {
        return text.to_string();
    }
    let problems: Vec<String> = c["problems"]
        .as_array()
        .map(|p| {
            p.iter()
                .filter_map(|x| x.as_str())
                .map(|x| format!("- {x}"))
                .collect()
        })
        .unwrap_or_default();
    format!(
        "{}\n\n[completion check: not clean]\n{}",
        text.trim_end(),
        problems.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_claims() {
        assert_eq!(exit_code_of("boom\n[exit code 3]"), Some(3));
        assert_eq!(exit_code_of("[timed out after 5 ms]"), None);
        assert!(claims_done("Done — all tests pass."));
        assert!(!claims_done("I fixed one bug but the tests still fail."));
        assert!(!claims_done("Here is the explanation you asked for."));
    }

    #[test]
    fn requested_files_are_those_a_clause_asks_to_change() {
        let d = tempfile::tempdir().unwrap();
        for f in ["calc.py", "util.py", "ops.py"] {
            std::fs::write(d.path().join(f), "x").unwrap();
        }
        let names = |req: &str| -> Vec<String> {
            requested_files(req, d.path())
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            names("Add sub to calc.py and document it in util.py."),
            ["calc.py", "util.py"]
        );
        assert_eq!(names("Look at calc.py, then add sub to ops.py"), ["ops.py"]);
        assert!(names("What does calc.py do?").is_empty());
    }

    #[test]
    fn requested_files_are_paths_not_prose_words() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir(p.join("docs")).unwrap();
        for f in ["calc.py", "NOTES.md", "test", "Makefile", "docs/api.md"] {
            std::fs::write(p.join(f), "x").unwrap();
        }
        let names = |req: &str| -> Vec<String> {
            requested_files(req, p)
                .iter()
                .map(|x| x.strip_prefix(p).unwrap().display().to_string())
                .collect()
        };
        // A prose word that happens to be a file, a directory, a version, an abbreviation.
        assert!(names("Add a test for sub, e.g. with pytest").is_empty());
        assert!(names("Update docs to version 1.2.3").is_empty());
        // References are not changes; a path outside the project names nothing.
        assert_eq!(
            names("Fix sub in calc.py as described in NOTES.md"),
            ["calc.py"]
        );
        assert!(names("Fix the host list in /etc/hosts").is_empty());
        assert!(names("Fix ../calc.py").is_empty());
        // Marked, located, bare well-known names, and files to create.
        assert_eq!(
            names("Fix `test`, update Makefile and docs/api.md:3"),
            ["test", "Makefile", "docs/api.md"]
        );
        assert_eq!(
            names("Create src/extra.py, and add @helpers.py"),
            ["src/extra.py", "helpers.py"]
        );
        assert!(names("Update node.js notes in the readme").is_empty());
    }
}
