//! Rule files: `<project>/.yuyao/rules/*.md`, `.cursor/rules/*.mdc`, `.claude/rules/*.md`
//! (subfolders too) with frontmatter `paths:` / `globs:` (patterns relative to the project
//! root) or `alwaysApply: true`. An always-rule joins the context when the session opens; a
//! path rule joins it, once, when a tool reads or edits a matching file. Both arrive as an
//! appended note (`pending_notes`), never by rewriting the system prompt, so the request
//! prefix stays as it was. A rule without any of these keys applies always, except Cursor's
//! `alwaysApply: false` without globs (applied by hand in Cursor, not here).

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use yuyao_core::{Feature, Session};
use yuyao_extension_files::frontmatter::{self, files_with_ext};
use yuyao_extension_files::instruction_files;
use yuyao_protocol::NoticeLevel;

pub struct RuleFile {
    pub file: PathBuf,
    pub always: bool,
    matcher: Option<GlobSet>,
    pub body: String,
}

/// The rules in force this session: which joined the context, and why (this feature's
/// state).
#[derive(Default)]
pub struct RuleState {
    pub applied: Vec<(PathBuf, String)>,
    pub warned: std::collections::HashSet<String>,
}

pub fn load(project: &Path) -> (Vec<RuleFile>, Vec<String>) {
    let mut files = Vec::new();
    files.extend(files_with_ext(&project.join(".yuyao/rules"), "md"));
    files.extend(files_with_ext(&project.join(".cursor/rules"), "mdc"));
    files.extend(files_with_ext(&project.join(".claude/rules"), "md"));
    let mut rules = Vec::new();
    let mut warnings = Vec::new();
    for file in files {
        let Some(text) = instruction_files::read(&file, &[project]) else {
            continue;
        };
        match parse(&text, file.clone()) {
            Ok(Some(r)) => rules.push(r),
            Ok(None) => {}
            Err(e) => warnings.push(format!("{}: {e}; this rule is skipped", file.display())),
        }
    }
    (rules, warnings)
}

/// One rule file; `None` for one that never applies by itself.
pub fn parse(text: &str, file: PathBuf) -> Result<Option<RuleFile>, String> {
    let (fm, body) = frontmatter::split(text)?;
    let mut globs = frontmatter::list(fm.get("paths"));
    globs.extend(frontmatter::list(fm.get("globs")));
    let always_key = fm.get("alwaysApply").and_then(Value::as_bool);
    let always = always_key == Some(true) || (globs.is_empty() && always_key.is_none());
    if !always && globs.is_empty() {
        return Ok(None);
    }
    let matcher = if globs.is_empty() {
        None
    } else {
        let mut b = GlobSetBuilder::new();
        for g in &globs {
            let g = g.trim_start_matches("./").trim_start_matches('/');
            b.add(Glob::new(g).map_err(|e| format!("line 2: bad glob '{g}': {e}"))?);
            // `src/` or `src` also covers what is inside.
            if !g.contains('*') {
                let inside = format!("{}/**", g.trim_end_matches('/'));
                b.add(Glob::new(&inside).map_err(|e| format!("line 2: bad glob '{g}': {e}"))?);
            }
        }
        Some(b.build().map_err(|e| format!("line 2: {e}"))?)
    };
    Ok(Some(RuleFile {
        file,
        always,
        matcher,
        body: body.trim().to_string(),
    }))
}

impl RuleFile {
    pub fn matches(&self, rel: &Path) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(rel))
    }
}

fn rule_warnings(s: &Session, warnings: Vec<String>) {
    let fresh: Vec<String> = {
        let mut st = s
            .part::<Mutex<RuleState>>()
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        warnings
            .into_iter()
            .filter(|w| st.warned.insert(w.clone()))
            .collect()
    };
    for w in fresh {
        s.notice(NoticeLevel::Warning, format!("rules: {w}"));
    }
}

/// Queues the rules that apply now and have not joined the context yet.
fn apply_rules(s: &Session, pick: impl Fn(&RuleFile) -> Option<String>) {
    let (rules, warnings) = load(s.project_dir());
    rule_warnings(s, warnings);
    let mut notes = Vec::new();
    {
        let mut st = s
            .part::<Mutex<RuleState>>()
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for r in rules {
            if st.applied.iter().any(|(f, _)| *f == r.file) {
                continue;
            }
            if let Some(why) = pick(&r) {
                let shown = r
                    .file
                    .strip_prefix(s.project_dir())
                    .unwrap_or(&r.file)
                    .display()
                    .to_string();
                notes.push(format!("Project rule {shown} ({why}):\n{}", r.body));
                st.applied.push((r.file, why));
            }
        }
    }
    if !notes.is_empty() {
        s.lock().pending_notes.extend(notes);
    }
}

/// At session open: the always-rules.
fn always_rules(s: &Session) {
    apply_rules(s, |r| r.always.then(|| "always applies".to_string()));
}

/// After a tool read or edited `paths`: the rules whose patterns match one of them.
fn rules_for_paths(s: &Session, paths: &[PathBuf]) {
    let rels: Vec<PathBuf> = paths
        .iter()
        .filter_map(|p| p.strip_prefix(s.project_dir()).ok().map(Path::to_path_buf))
        .collect();
    if rels.is_empty() {
        return;
    }
    apply_rules(s, |r| {
        rels.iter()
            .find(|p| r.matches(p))
            .map(|p| format!("matches {}", p.display()))
    });
}

/// `/context list`'s lines about rules.
fn rules_context_lines(s: &Session) -> String {
    let st = s
        .part::<Mutex<RuleState>>()
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if st.applied.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nrules in the context:\n");
    for (f, why) in &st.applied {
        let shown = f.strip_prefix(s.project_dir()).unwrap_or(f);
        out.push_str(&format!("  {} ({why})\n", shown.display()));
    }
    out.trim_end().to_string()
}

/// What this feature adds to a session: the always-rules when the session has
/// started, a path rule after a tool read or edited a matching file (not a search's hits),
/// and the rules in the context in `/context`.
pub static FEATURE: Feature = Feature {
    name: "rule-files",
    state: Some(|_| Box::new(Mutex::new(RuleState::default()))),
    started: Some(always_rules),
    after_run: Some(|s, name, _, action, _| {
        if !matches!(name, "grep" | "glob") {
            rules_for_paths(s, &action.paths);
        }
    }),
    context_lines: Some(rules_context_lines),
    ..Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_kinds() {
        let f = || PathBuf::from("/p/.yuyao/rules/x.md");
        let r = parse(
            "---\npaths: [\"src/api/**\", docs]\n---\nUse snake_case.\n",
            f(),
        )
        .unwrap()
        .unwrap();
        assert!(!r.always);
        assert!(r.matches(Path::new("src/api/v1/handler.rs")));
        assert!(r.matches(Path::new("docs/intro.md")));
        assert!(!r.matches(Path::new("src/main.rs")));
        assert_eq!(r.body, "Use snake_case.");
        let cursor = parse(
            "---\nglobs: \"*.py, tests/*.py\"\nalwaysApply: false\n---\nx",
            f(),
        )
        .unwrap()
        .unwrap();
        assert!(cursor.matches(Path::new("calc.py")) && !cursor.always);
        assert!(
            parse("---\nalwaysApply: false\n---\nmanual", f())
                .unwrap()
                .is_none()
        );
        assert!(
            parse("---\nalwaysApply: true\n---\nx", f())
                .unwrap()
                .unwrap()
                .always
        );
        assert!(parse("plain rule\n", f()).unwrap().unwrap().always);
        assert!(parse("---\nglobs: [\"a/[\"]\n---\nx", f()).is_err());
    }
}
