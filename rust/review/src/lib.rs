//! yuyao-review: `/review [--fix] [--security|--simplify]` and `/security-review`, a review
//! turn over the current changes — a feature outside the core, registered with its kernel
//! (`yuyao_core::Feature`): removing it is deleting this crate and its registration line.
//!
//! `/review` takes the diff against git HEAD (outside git: the session's changes against the
//! session's start) and runs a turn under the read-only `ask` role, asking for findings as
//! `file:line — severity — reason`; `--security` looks only for injection, authorization,
//! secrets and unsafe deserialization, `--simplify` only for cleanup. `--fix` then runs a
//! second turn with the session's own role and permissions that applies the findings.
//! `/security-review` reviews the branch's changes against its merge base with the default
//! branch (committed and not) and asks for a ranked risk list.

use std::path::Path;
use yuyao_core::{Command, CoreError, Feature, Session};
use yuyao_protocol::Role;
use yuyao_store::snapshots::{head_changes, unified_diff};

/// Largest diff put in the review prompt (the model can read more with its tools).
const DIFF_CHARS: usize = 60_000;

const FINDINGS_FORMAT: &str = "List each finding on its own line as `path:line — severity (high|medium|low) — reason`, most severe first; then one line `Findings: N`. If there is nothing to report, say `Findings: 0`. Read the surrounding code with your tools when the diff is not enough. Do not change any file.";

fn cap(diff: String) -> String {
    if diff.len() <= DIFF_CHARS {
        return diff;
    }
    let mut end = DIFF_CHARS;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… (diff cut at {DIFF_CHARS} characters; read the rest of the files with your tools)",
        &diff[..end]
    )
}

fn shown_path(s: &Session, p: &Path) -> String {
    p.strip_prefix(s.project_dir())
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| p.display().to_string())
}

/// The diff to review: against HEAD, or (outside git) the session's changes.
fn review_diff(s: &Session) -> Result<(String, &'static str), CoreError> {
    s.finish_file_batch();
    if let Ok(changes) = head_changes(s.project_dir()) {
        let diff: String = changes
            .iter()
            .map(|(p, old, new)| unified_diff(&shown_path(s, p), old.as_deref(), new.as_deref()))
            .collect();
        return Ok((diff, "the uncommitted changes against git HEAD"));
    }
    let starts = s.session_start_files().map_err(CoreError::Failed)?;
    let diff: String = starts
        .into_iter()
        .filter_map(|(p, old)| {
            let new = std::fs::read(&p).ok();
            (old != new).then(|| unified_diff(&shown_path(s, &p), old.as_deref(), new.as_deref()))
        })
        .collect();
    Ok((diff, "this session's changes (not a git repository)"))
}

/// A turn under the read-only role; the role in force before is restored.
fn read_only_turn(s: &Session, prompt: &str) -> Result<String, CoreError> {
    let saved = {
        let mut st = s.lock();
        let saved = st.policy.role;
        st.policy.role = Role::Ask;
        saved
    };
    let out = s.chat(prompt);
    s.lock().policy.role = saved;
    out
}

fn review_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let (mut fix, mut focus) = (false, None);
    for a in args {
        match a.as_str() {
            "--fix" => fix = true,
            "--security" | "--simplify" if focus.is_none() => focus = Some(a.as_str()),
            _ => {
                return Err(CoreError::Usage(
                    "usage: /review [--fix] [--security|--simplify]".into(),
                ));
            }
        }
    }
    let (diff, what) = review_diff(s)?;
    if diff.trim().is_empty() {
        return Ok(format!("nothing to review: {what} are empty"));
    }
    let aim = match focus {
        Some("--security") => {
            "Review it for security only: injection (SQL, shell, path, template), broken authorization or authentication, secrets in code or logs, unsafe deserialization, and similar vulnerabilities."
        }
        Some(_) => {
            "Review it for simplification only: dead code, duplication, needless complexity, clearer names and structure — behaviour must stay the same."
        }
        None => {
            "Review it like a demanding senior reviewer: bugs and wrong behaviour first (off-by-one, wrong operator, unhandled errors, edge cases), then security, then maintainability."
        }
    };
    let prompt = format!(
        "[/review] Review {what}. {aim}\n{FINDINGS_FORMAT}\n\n```diff\n{}\n```",
        cap(diff)
    );
    let review = read_only_turn(s, &prompt)?;
    if !fix {
        return Ok(s.turn_answer(review));
    }
    let applied = s.chat(
        "[/review --fix] Apply the fixes for the findings of your review above, with the file tools; keep each change minimal, then list what you changed.",
    )?;
    Ok(s.turn_answer(format!("{review}\n\n{applied}")))
}

/// The default branch's tip to compare the current branch with.
fn merge_base_diff(project: &Path) -> Result<(String, String), String> {
    let repo =
        git2::Repository::discover(project).map_err(|_| "not a git repository".to_string())?;
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(|e| format!("no commit yet: {}", e.message()))?;
    let mut base_name = None;
    for name in [
        "refs/remotes/origin/HEAD",
        "refs/heads/main",
        "refs/heads/master",
        "refs/remotes/origin/main",
        "refs/remotes/origin/master",
    ] {
        if let Ok(r) = repo.find_reference(name)
            && let Ok(c) = r.resolve().and_then(|r| r.peel_to_commit())
        {
            base_name = Some((name.trim_start_matches("refs/").to_string(), c.id()));
            break;
        }
    }
    let (name, base_tip) =
        base_name.ok_or("no default branch (main, master, origin/HEAD) to compare with")?;
    let base = repo
        .merge_base(head.id(), base_tip)
        .map_err(|e| e.message().to_string())?;
    let tree = repo
        .find_commit(base)
        .and_then(|c| c.tree())
        .map_err(|e| e.message().to_string())?;
    let mut opts = git2::DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true);
    let diff = repo
        .diff_tree_to_workdir_with_index(Some(&tree), Some(&mut opts))
        .map_err(|e| e.message().to_string())?;
    let mut text = String::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            text.push(line.origin());
        }
        text.push_str(&String::from_utf8_lossy(line.content()));
        true
    })
    .map_err(|e| e.message().to_string())?;
    let short = base.to_string()[..8].to_string();
    Ok((
        text,
        format!("the branch's changes since its merge base {short} with {name}"),
    ))
}

fn security_review_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if !args.is_empty() {
        return Err(CoreError::Usage("usage: /security-review".into()));
    }
    s.finish_file_batch();
    let (diff, what) = merge_base_diff(s.project_dir())
        .map_err(|e| CoreError::Failed(format!("/security-review: {e}")))?;
    if diff.trim().is_empty() {
        return Ok(format!("nothing to review: {what} are empty"));
    }
    let prompt = format!(
        "[/security-review] Security review of {what}. Look for injection (SQL, shell, path traversal, templates), authorization and authentication flaws, secrets committed or logged, unsafe deserialization, SSRF, unsafe file permissions and dependency risks. Give a ranked risk list, highest risk first: `rank. path:line — severity (critical|high|medium|low) — the risk and how to exploit it — the fix`; then one line `Risks: N`. Do not change any file.\n\n```diff\n{}\n```",
        cap(diff)
    );
    let answer = read_only_turn(s, &prompt)?;
    Ok(s.turn_answer(answer))
}

/// The features of this crate, in registration order (one, reviews).
pub static FEATURES: &[&Feature] = &[&FEATURE];

/// The feature: `/review` and `/security-review` (registered by the program that assembles
/// yuyao: `yuyao_core::register_features`).
pub static FEATURE: Feature = Feature {
    name: "review",
    commands: &[
        Command {
            name: "review",
            aliases: &[],
            usage: "[--fix] [--security|--simplify]",
            help: "review the current diff",
            run: Some(review_command),
        },
        Command {
            name: "security-review",
            aliases: &[],
            usage: "",
            help: "security review of the branch's changes",
            run: Some(security_review_command),
        },
    ],
    ..Feature::NONE
};
