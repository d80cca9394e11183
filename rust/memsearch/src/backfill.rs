//! `yuyao memory rem-backfill`: replays the historical daily notes and the project's session
//! logs and stages promotion candidates into DREAMS.md, in one dated section between two
//! marker comments, so that `--rollback` removes exactly what was staged.
//!
//! A candidate is what the history says more than once (the same entry in two daily notes or
//! sessions) or a prompt that asked to remember something, and that no MEMORY.md holds yet.

use crate::dream::write_atomic;
use crate::source::{chunks, normalized};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const START: &str = "<!-- rem-backfill:start ";
const END: &str = "<!-- rem-backfill:end -->";

/// One statement of the history: where it was said and what.
#[derive(Debug, Clone)]
pub struct Said {
    pub source: String,
    pub text: String,
    /// An explicit "remember …" prompt: a candidate on its own.
    pub explicit: bool,
}

/// The statements of the daily notes.
pub fn from_daily_notes(notes: &[PathBuf], project: &Path) -> Vec<Said> {
    let mut out = Vec::new();
    for p in notes {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        let source = crate::display_path(p, project, project);
        for c in chunks(&text) {
            out.push(Said {
                source: source.clone(),
                text: c.text,
                explicit: false,
            });
        }
    }
    out
}

/// A user prompt that states something durable: "remember that …", "always …", "never …",
/// "don't …", "we use …", "use X, not Y", "prefer …".
pub fn durable_prompt(text: &str) -> Option<(String, bool)> {
    let t = text.trim();
    if t.is_empty() || t.len() > 300 || t.contains('\n') {
        return None;
    }
    let lower = t.to_lowercase();
    for p in ["remember that ", "remember: ", "remember "] {
        if let Some(rest) = lower.strip_prefix(p) {
            let start = t.len() - rest.len();
            return Some((capitalize(t[start..].trim()), true));
        }
    }
    let durable = [
        "always ", "never ", "don't ", "do not ", "we use ", "prefer ",
    ]
    .iter()
    .any(|p| lower.starts_with(p))
        || (lower.starts_with("use ") && lower.contains(" not "));
    durable.then(|| (t.to_string(), false))
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// What would be staged: (text, where it was said), in a stable order.
pub fn candidates(said: &[Said], long_term: &[String], staged: &str) -> Vec<(String, Vec<String>)> {
    let staged_norm = normalized(staged);
    let mut groups: BTreeMap<String, (String, Vec<String>, bool)> = BTreeMap::new();
    for s in said {
        let norm = normalized(&s.text);
        if norm.is_empty() || long_term.contains(&norm) {
            continue;
        }
        let g = groups
            .entry(norm)
            .or_insert_with(|| (s.text.clone(), Vec::new(), false));
        if !g.1.contains(&s.source) {
            g.1.push(s.source.clone());
        }
        g.2 |= s.explicit;
    }
    groups
        .into_iter()
        .filter(|(norm, (_, sources, explicit))| {
            (*explicit || sources.len() >= 2) && !staged_norm.contains(norm.as_str())
        })
        .map(|(_, (text, sources, _))| (text, sources))
        .collect()
}

/// Appends the staged section to DREAMS.md; returns how many candidates were staged.
pub fn stage(dreams: &Path, found: &[(String, Vec<String>)], today: &str) -> Result<usize, String> {
    if found.is_empty() {
        return Ok(0);
    }
    let mut text = std::fs::read_to_string(dreams).unwrap_or_default();
    // The marker says whether a line break was added before it, so rollback removes it too.
    let added_newline = !text.is_empty() && !text.ends_with('\n');
    if added_newline {
        text.push('\n');
    }
    text.push_str(&format!(
        "{START}{today}{} -->\n## REM backfill {today}: promotion candidates\n",
        if added_newline { " nl" } else { "" }
    ));
    for (t, sources) in found {
        text.push_str(&format!(
            "- {} <!-- staged from: {} -->\n",
            t.replace("-->", "- ->"),
            sources.join(", ").replace("-->", "- ->")
        ));
    }
    text.push_str(END);
    text.push('\n');
    write_atomic(dreams, &text)?;
    Ok(found.len())
}

/// Removes every staged section (and the line break staging added before it); returns how
/// many sections were removed. Every other byte of DREAMS.md stays as it was.
pub fn rollback(dreams: &Path) -> Result<usize, String> {
    let Ok(text) = std::fs::read_to_string(dreams) else {
        return Ok(0);
    };
    let mut out = String::new();
    let mut removed = 0;
    let mut inside = false;
    for line in text.split_inclusive('\n') {
        if !inside && line.starts_with(START) {
            inside = true;
            removed += 1;
            if line.trim_end().ends_with(" nl -->") && out.ends_with('\n') {
                out.pop();
            }
            continue;
        }
        if inside {
            if line.trim_end() == END {
                inside = false;
            }
            continue;
        }
        out.push_str(line);
    }
    if removed > 0 {
        write_atomic(dreams, &out)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_then_rollback_gives_back_the_same_bytes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("DREAMS.md");
        for original in ["## Dream 2026-11-01\n\nkept\n", "no final newline", ""] {
            std::fs::write(&p, original).unwrap();
            let found = vec![("Use bun, not npm".to_string(), vec!["a".into(), "b".into()])];
            assert_eq!(stage(&p, &found, "2026-12-01").unwrap(), 1);
            let staged = std::fs::read_to_string(&p).unwrap();
            assert!(
                staged.contains("- Use bun, not npm <!-- staged from: a, b -->"),
                "{staged}"
            );
            assert_eq!(rollback(&p).unwrap(), 1);
            assert_eq!(std::fs::read_to_string(&p).unwrap(), original);
        }
    }

    #[test]
    fn candidates_repeat_or_were_asked_to_be_remembered_and_are_not_yet_memory() {
        let said = |source: &str, text: &str, explicit| Said {
            source: source.into(),
            text: text.into(),
            explicit,
        };
        let all = [
            said("memory/2026-11-01.md", "Deploys happen on Fridays", false),
            said("memory/2026-11-02.md", "deploys happen on fridays.", false),
            said("memory/2026-11-02.md", "Looked at the logs", false),
            said("session 1", "The API lives in src/api", true),
            said("session 2", "Use bun, not npm", true),
        ];
        let got = candidates(&all, &["use bun not npm".into()], "");
        let texts: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            texts,
            vec!["Deploys happen on Fridays", "The API lives in src/api"]
        );
        assert!(
            candidates(
                &all,
                &[],
                "- Deploys happen on Fridays\n- The API lives in src/api\n- use bun not npm"
            )
            .is_empty()
        );
    }

    #[test]
    fn durable_prompts_are_recognised() {
        assert_eq!(
            durable_prompt("Remember that the API lives in src/api"),
            Some(("The API lives in src/api".into(), true))
        );
        assert_eq!(
            durable_prompt("always run pytest -q").map(|x| x.1),
            Some(false)
        );
        assert!(durable_prompt("fix the failing test").is_none());
    }
}
