//! Convention files (spec 002 §7): `@path` import lines of AGENTS.md/CLAUDE.md expanded
//! (depth-limited, inside the project, never a secret), and a nested AGENTS.md added to the
//! context — as an appended note, never by rewriting the prompt — the first time the agent
//! reads or edits a file below it. This module finds and reads them; the session adds them
//! (yuyao-core's `conventions.rs` and `prompt.rs`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Imports nest at most this deep (an import cycle stops here too).
const MAX_DEPTH: usize = 3;
const MAX_IMPORT_CHARS: usize = 20_000;

/// `text` with every line that is only `@path` replaced by that file's contents (relative to
/// the importing file's folder). A secret, a file outside `project`, a missing file or a
/// cycle leaves a short note instead.
pub fn expand_imports(text: &str, from: &Path, project: &Path) -> String {
    expand(text, from, project, 0, &mut BTreeSet::new())
}

fn expand(
    text: &str,
    from: &Path,
    project: &Path,
    depth: usize,
    seen: &mut BTreeSet<PathBuf>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with("```") {
            fence = !fence;
        }
        let target = t
            .strip_prefix('@')
            .filter(|p| !fence && !p.is_empty() && !p.contains(char::is_whitespace));
        let Some(target) = target else {
            out.push_str(line);
            continue;
        };
        let base = from.parent().unwrap_or(project);
        let path = if let Some(rest) = target.strip_prefix("~/") {
            std::env::var_os("HOME")
                .map_or_else(|| PathBuf::from(target), |h| PathBuf::from(h).join(rest))
        } else {
            base.join(target)
        };
        let real = std::fs::canonicalize(&path).ok();
        let project_real = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
        let note = match &real {
            None => Some(format!("[@{target}: not found]")),
            Some(r) if !r.starts_with(&project_real) => {
                Some(format!("[@{target}: outside the project, not imported]"))
            }
            Some(r) if yuyao_policy::sensitive::is_sensitive(r) => {
                Some(format!("[@{target}: a secret file, not imported]"))
            }
            Some(_) if depth >= MAX_DEPTH => Some(format!(
                "[@{target}: imports nest deeper than {MAX_DEPTH}, not imported]"
            )),
            Some(r) if seen.contains(r) => Some(format!("[@{target}: already imported]")),
            Some(_) => None,
        };
        if let Some(n) = note {
            out.push_str(&n);
            out.push('\n');
            continue;
        }
        let Some(real) = real else { continue };
        let Ok(body) = std::fs::read_to_string(&real) else {
            out.push_str(&format!("[@{target}: unreadable]\n"));
            continue;
        };
        let body = crate::instruction_files::redact(&body, Some(project));
        seen.insert(real.clone());
        let body: String = body.chars().take(MAX_IMPORT_CHARS).collect();
        out.push_str(&format!("<!-- imported from {target} -->\n"));
        out.push_str(expand(&body, &real, project, depth + 1, seen).trim_end());
        out.push('\n');
    }
    out
}

/// The nested AGENTS.md (or CLAUDE.md) files above `paths`, below `project`, not among
/// `loaded`: each with its text, imports expanded. They are marked loaded.
pub fn nested_for(
    paths: &[PathBuf],
    project: &Path,
    loaded: &mut BTreeSet<PathBuf>,
) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    // Each folder is looked at once per call (a batch may touch a thousand files in one).
    let mut looked: BTreeSet<PathBuf> = BTreeSet::new();
    for p in paths {
        let Ok(rel) = p.strip_prefix(project) else {
            continue;
        };
        let mut dir = project.to_path_buf();
        let comps: Vec<_> = rel.components().collect();
        // Folders strictly between the project root and the file.
        for c in comps.iter().take(comps.len().saturating_sub(1)) {
            dir.push(c);
            if !looked.insert(dir.clone()) {
                continue;
            }
            for name in ["AGENTS.md", "CLAUDE.md"] {
                let f = dir.join(name);
                if f.is_file() {
                    if loaded.insert(f.clone())
                        && let Some(text) = crate::instruction_files::read(&f, &[project])
                    {
                        let text: String = text.chars().take(40_000).collect();
                        out.push((f.clone(), expand_imports(&text, &f, project)));
                    }
                    break;
                }
            }
        }
    }
    out
}

/// AGENTS.md (falling back to CLAUDE.md in the same folder) from the project root down to cwd.
pub fn convention_files(project: &Path, cwd: &Path) -> Vec<(PathBuf, String)> {
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(project))
        .map(Path::to_path_buf)
        .collect();
    if dirs.is_empty() {
        dirs.push(cwd.to_path_buf());
    }
    dirs.reverse();
    let mut out = Vec::new();
    for d in dirs {
        for name in ["AGENTS.md", "CLAUDE.md"] {
            let p = d.join(name);
            if let Some(text) = crate::instruction_files::read(&p, &[project]) {
                // Cap so a huge file cannot crowd out the task.
                let text: String = text.chars().take(40_000).collect();
                let text = expand_imports(&text, &p, project);
                out.push((p, text));
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_expand_within_limits_and_never_read_secrets() {
        let proj = tempfile::tempdir().unwrap();
        let p = proj.path();
        std::fs::create_dir(p.join("docs")).unwrap();
        std::fs::write(p.join("docs/style.md"), "Use tabs.\n@deeper.md\n").unwrap();
        std::fs::write(p.join("docs/deeper.md"), "Deep rule.\n@style.md\n").unwrap();
        std::fs::write(p.join(".env"), "TOKEN=s3cret\n").unwrap();
        let agents = p.join("AGENTS.md");
        let text = "# Rules\n@docs/style.md\n@.env\n@/etc/passwd\n```\n@docs/style.md\n```\nemail me @ noon\n";
        let out = expand_imports(text, &agents, p);
        assert!(
            out.contains("Use tabs.") && out.contains("Deep rule."),
            "{out}"
        );
        assert!(out.contains("[@style.md: already imported]"), "{out}");
        assert!(
            !out.contains("s3cret") && out.contains("a secret file"),
            "{out}"
        );
        assert!(
            out.contains("outside the project") && !out.contains("root:"),
            "{out}"
        );
        assert!(
            out.contains("```\n@docs/style.md\n```"),
            "fenced lines stay as written"
        );
    }

    #[test]
    fn nested_agents_files_are_found_once() {
        let proj = tempfile::tempdir().unwrap();
        let p = proj.path();
        std::fs::create_dir_all(p.join("web/src")).unwrap();
        std::fs::write(p.join("web/AGENTS.md"), "Web uses bun.\n").unwrap();
        std::fs::write(p.join("AGENTS.md"), "Root.\n").unwrap();
        let mut loaded = BTreeSet::new();
        let got = nested_for(&[p.join("web/src/app.ts")], p, &mut loaded);
        assert_eq!(got.len(), 1);
        assert!(got[0].1.contains("Web uses bun."));
        assert!(nested_for(&[p.join("web/x.ts")], p, &mut loaded).is_empty());
    }
}
