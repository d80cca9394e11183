//! `/init`: AGENTS.md generated from the repository by a model turn in read-only (plan)
//! mode. With no AGENTS.md the file is written; with one, the proposed additions are shown
//! as a diff and a person is asked; headless fronts and agent_api write only when none
//! exists (they return the proposal instead).

#[allow(unused_imports)]
use crate::session_ext::*;

use yuyao_core::{CoreError, Session};
use yuyao_protocol::{Mode, Request};

const INIT_PROMPT: &str = "Generate an AGENTS.md for this repository: the standing instructions a coding agent needs here. Explore first with read-only tools (glob, grep, read; read-only shell commands): the layout (main folders and what they hold), the build, test and lint commands actually declared (package.json scripts, Makefile, pyproject, Cargo.toml, CI files), and the conventions the code follows (style, naming, test layout). Be concrete and short; do not invent commands you did not find. Reply with the complete file only, in one ```markdown block.";

pub(crate) fn init(s: &Session, _: &[String]) -> Result<String, CoreError> {
    let path = s.paths().project.join("AGENTS.md");
    let before = {
        let mut st = s.lock();
        let m = st.policy.mode;
        st.policy.mode = Mode::Plan;
        m
    };
    let answer = s.chat(INIT_PROMPT);
    {
        let mut st = s.lock();
        if st.policy.mode == Mode::Plan {
            st.policy.mode = before;
        }
    }
    s.sync_confinement();
    let proposed = markdown_block(&answer?);
    if proposed.trim().is_empty() {
        return Err(CoreError::Failed(
            "the model proposed an empty AGENTS.md; nothing written".into(),
        ));
    }
    let existing = std::fs::read_to_string(&path).ok();
    let Some(existing) = existing else {
        yuyao_store::beneath::write_atomic(
            &[&s.paths().project],
            &path,
            ensure_newline(&proposed).as_bytes(),
        )
        .map_err(|e| CoreError::Failed(format!("cannot write {}: {e}", path.display())))?;
        return Ok(format!(
            "wrote {} ({} lines)",
            path.display(),
            proposed.lines().count()
        ));
    };
    let additions = additions(&existing, &proposed);
    if additions.trim().is_empty() {
        return Ok(format!(
            "{} already says everything proposed; nothing to add",
            path.display()
        ));
    }
    let next = format!("{}\n{additions}", ensure_newline(&existing));
    let shown = path.display().to_string();
    let diff = similar::TextDiff::from_lines(existing.as_str(), next.as_str())
        .unified_diff()
        .context_radius(2)
        .header(&shown, &shown)
        .to_string();
    let interactive = !s.options().headless && s.has_handler();
    if !interactive {
        return Ok(format!(
            "{} exists; not changed. Proposed additions:\n{diff}",
            path.display()
        ));
    }
    let answer = s.handler().and_then(|h| {
        h.request(&Request::AskUser {
            question: format!("Add these lines to {}?\n{diff}", path.display()),
            options: vec!["add them".into(), "keep AGENTS.md as it is".into()],
        })
    });
    let yes = answer.is_some_and(|a| {
        let a = a.trim().to_lowercase();
        a == "1" || a.starts_with("add") || a == "y" || a == "yes"
    });
    if !yes {
        return Ok(format!("{} kept as it is", path.display()));
    }
    yuyao_store::beneath::write_atomic(&[&s.paths().project], &path, next.as_bytes())
        .map_err(|e| CoreError::Failed(format!("cannot write {}: {e}", path.display())))?;
    Ok(format!(
        "added {} lines to {}",
        additions.lines().count(),
        path.display()
    ))
}

/// The content of the first ```markdown (or ```md, or bare) fence; else the whole text.
fn markdown_block(answer: &str) -> String {
    let mut lines = answer.lines();
    let mut out = Vec::new();
    let mut inside = false;
    for l in lines.by_ref() {
        let t = l.trim_start();
        if !inside && t.starts_with("```") {
            let lang = t.trim_start_matches('`').trim();
            if matches!(lang, "" | "markdown" | "md") {
                inside = true;
                continue;
            }
        } else if inside && t.starts_with("```") && t.trim_start_matches('`').trim().is_empty() {
            return out.join("\n");
        } else if inside {
            out.push(l);
        }
    }
    if inside {
        out.join("\n")
    } else {
        answer.trim().to_string()
    }
}

/// The proposed lines the existing file does not have, each group under its heading, as one
/// block to append.
fn additions(existing: &str, proposed: &str) -> String {
    let have: std::collections::BTreeSet<String> =
        existing.lines().map(|l| l.trim().to_lowercase()).collect();
    let mut out: Vec<&str> = Vec::new();
    let mut heading: Option<&str> = None;
    for l in proposed.lines() {
        let t = l.trim();
        if t.starts_with('#') {
            heading = Some(l);
            continue;
        }
        if t.is_empty() || have.contains(&t.to_lowercase()) {
            continue;
        }
        // Each addition goes under its heading (appended at the end of the file).
        if let Some(h) = heading.take() {
            if !out.is_empty() {
                out.push("");
            }
            out.push(h);
        }
        out.push(l);
    }
    out.join("\n")
}

fn ensure_newline(s: &str) -> String {
    if s.ends_with('\n') {
        s.to_string()
    } else {
        format!("{s}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_markdown_block_and_proposes_only_new_lines() {
        assert_eq!(
            markdown_block("Here:\n```markdown\n# A\n- b\n```\nbye"),
            "# A\n- b"
        );
        assert_eq!(markdown_block("# plain"), "# plain");
        let add = additions(
            "# Rules\n- run make\n",
            "# Rules\n- run make\n- use tabs\n## Test\n- pytest -q\n",
        );
        assert_eq!(add, "# Rules\n- use tabs\n\n## Test\n- pytest -q");
    }
}
