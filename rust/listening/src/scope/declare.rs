//! `declare-scope {files, behaviours, estimate_lines?, allow?}`: the turn's contract, shown to
//! the user (a notice line in the TUI and on `-p --verbose` stderr), written to the
//! trajectory, and kept in the conversation as the tool call itself. Declaring again replaces
//! it; what widened or narrowed is said.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::Category;
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use yuyao_core::Session;
use yuyao_tools::ToolOutput;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(alias = "globs", alias = "paths", deserialize_with = "one_or_many")]
    files: Vec<String>,
    #[serde(alias = "behaviors", alias = "behaviour", alias = "behavior")]
    behaviours: String,
    #[serde(
        default,
        alias = "estimate",
        alias = "estimated_lines",
        deserialize_with = "lenient_count"
    )]
    estimate_lines: Option<u64>,
    #[serde(default, deserialize_with = "one_or_many")]
    allow: Vec<String>,
}

/// A list, or the one string a model sent instead of a list of one.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum V {
        One(String),
        Many(Vec<String>),
    }
    Ok(match V::deserialize(d)? {
        V::One(s) => vec![s],
        V::Many(v) => v,
    })
}

/// A count sent as a number or as a numeric string (`"600"`).
fn lenient_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .map(Some)
            .ok_or_else(|| D::Error::custom("estimate_lines must be a positive number")),
        Value::String(s) => s
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| D::Error::custom("estimate_lines must be a positive number")),
        _ => Err(D::Error::custom("estimate_lines must be a positive number")),
    }
}

/// A declared scope, with its globs compiled.
pub(crate) struct Declared {
    pub files: Vec<String>,
    pub behaviours: String,
    pub estimate_lines: Option<u64>,
    pub allow: Vec<Category>,
    set: GlobSet,
}

impl Declared {
    /// Whether `rel` (a path relative to the project root, `/`-separated) is in scope.
    pub(crate) fn covers(&self, rel: &str) -> bool {
        self.set.is_match(rel)
    }

    /// Whether a glob names exactly this file (no wildcard): a manifest named so is meant.
    pub(crate) fn names_exactly(&self, rel: &str) -> bool {
        self.files.iter().any(|g| normalize(g) == rel)
    }

    pub(crate) fn allows(&self, c: Category) -> bool {
        self.allow.contains(&c)
    }

    /// The size backstop (seed 000 §2): measured against the estimate the model declared,
    /// never under max(3 × the estimate, 200) changed lines, so a small change is never over
    /// budget. Without an estimate there is nothing to measure against: `None`, no backstop —
    /// a line count alone would fire on every large change the user asked for, and the
    /// categorical checks (files, dependencies, renames, formatting, tests) still apply.
    pub(crate) fn size_limit(&self) -> Option<u64> {
        self.estimate_lines.map(|n| n.saturating_mul(3).max(200))
    }
}

fn normalize(g: &str) -> String {
    g.trim().trim_start_matches("./").to_string()
}

fn compile(files: &[String], project: &Path) -> Result<GlobSet, String> {
    let mut b = GlobSetBuilder::new();
    for raw in files {
        let mut g = normalize(raw);
        if let Ok(rel) = Path::new(&g).strip_prefix(project) {
            g = rel.to_string_lossy().into_owned();
        }
        if g.is_empty() {
            return Err("an empty glob in 'files'".into());
        }
        let mut pats = vec![g.clone()];
        // A folder (`src/`, or an existing `src`) covers what is inside it.
        if g.ends_with('/') {
            pats = vec![format!("{g}**")];
        } else if project.join(&g).is_dir() {
            pats.push(format!("{g}/**"));
        }
        // As in .gitignore, a pattern without `/` names files at any depth (`*.py`).
        if !g.trim_end_matches('/').contains('/') {
            let any: Vec<String> = pats.iter().map(|p| format!("**/{p}")).collect();
            pats.extend(any);
        }
        for p in pats {
            let glob: Glob = GlobBuilder::new(&p)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("the glob {raw:?} is not valid: {e}"))?;
            b.add(glob);
        }
    }
    b.build().map_err(|e| e.to_string())
}

pub(crate) fn schema() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "declare-scope",
            "description": "Declare, before changing anything, what this turn will change: the files (globs relative to the project root) and the behaviours the user asked for. From then on every change this turn is checked against it before it runs: a file outside the globs, a dependency manifest/lock file or an install command, a rename or delete, a whitespace/formatting-only rewrite, a removed test, or far more changed lines than estimated needs the user's confirmation (or is refused when nobody can confirm). Declare again to widen or narrow the scope when the user's request needs it; `allow` names categories the user explicitly asked for (dependency, rename-delete, formatting, test-removal).",
            "parameters": {
                "type": "object",
                "properties": {
                    "files": {"type": "array", "items": {"type": "string"}, "description": "globs of the files this turn may change, e.g. [\"src/parser/**\", \"tests/test_parser.py\"]"},
                    "behaviours": {"type": "string", "description": "the behaviour changes the user asked for, in one or two sentences"},
                    "estimate_lines": {"type": "integer", "description": "rough number of changed lines you expect"},
                    "allow": {"type": "array", "items": {"type": "string"}, "description": "categories the user explicitly asked for: dependency, rename-delete, formatting, test-removal"}
                },
                "required": ["files", "behaviours"]
            }
        }
    })
}

/// The `declare-scope` tool call (the hook in `tool_call/mod.rs`); `None` for any other tool.
pub(crate) fn run_tool(s: &Session, name: &str, raw: &str) -> Option<ToolOutput> {
    if name != "declare-scope" {
        return None;
    }
    Some(declare(s, raw).unwrap_or_else(ToolOutput::err))
}

fn declare(s: &Session, raw: &str) -> Result<ToolOutput, String> {
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    let p: Params = serde_json::from_str(raw).map_err(|e| {
        format!("invalid arguments for declare-scope: {e}. Send {{\"files\": [globs], \"behaviours\": \"...\", \"estimate_lines\"?: n, \"allow\"?: [...]}}.")
    })?;
    let files: Vec<String> = p
        .files
        .iter()
        .map(|f| normalize(f))
        .filter(|f| !f.is_empty())
        .collect();
    if files.is_empty() {
        return Err("declare-scope needs at least one glob in 'files'.".into());
    }
    let mut allow = Vec::new();
    for a in &p.allow {
        match Category::allowable(a) {
            Some(c) if !allow.contains(&c) => allow.push(c),
            Some(_) => {}
            None => {
                return Err(format!(
                    "declare-scope: unknown category {a:?} in 'allow'; use dependency, rename-delete, formatting or test-removal."
                ));
            }
        }
    }
    let set = compile(&files, &s.paths().project)?;
    let new = Declared {
        files,
        behaviours: p.behaviours.trim().to_string(),
        estimate_lines: p.estimate_lines,
        allow,
        set,
    };
    let guard_on = s.config().get(super::GUARD_KEY).and_then(|v| v.as_bool()) != Some(false);
    let mut t = s
        .listening()
        .scope
        .lock()
        .map_err(|_| "scope state unavailable")?;
    let line = describe(t.declared.as_ref(), &new);
    s.lock().trajectory.record(
        "scope",
        json!({"files": new.files, "behaviours": new.behaviours, "estimate_lines": new.estimate_lines,
               "allow": new.allow.iter().map(|c| c.key()).collect::<Vec<_>>(), "change": line, "guard": guard_on}),
    );
    t.declared = Some(new);
    drop(t);
    s.notice(yuyao_protocol::NoticeLevel::Info, line.clone());
    let guard = if guard_on {
        "Every change this turn is now checked against it before it runs."
    } else {
        "The scope guard is switched off (scope.guard = false): nothing is checked."
    };
    Ok(ToolOutput::ok(format!("{line}\n{guard}")))
}

/// The line the user sees: the first declaration in full, a later one as what changed.
fn describe(old: Option<&Declared>, new: &Declared) -> String {
    let est = new
        .estimate_lines
        .map(|n| format!(" · about {n} changed lines"))
        .unwrap_or_default();
    let allow = if new.allow.is_empty() {
        String::new()
    } else {
        let v: Vec<&str> = new.allow.iter().map(|c| c.key()).collect();
        format!(" · allowed: {}", v.join(", "))
    };
    let Some(old) = old else {
        return format!(
            "scope declared: {} — {}{est}{allow}",
            new.files.join(", "),
            new.behaviours
        );
    };
    let added: Vec<&str> = new
        .files
        .iter()
        .filter(|f| !old.files.contains(f))
        .map(String::as_str)
        .collect();
    let removed: Vec<&str> = old
        .files
        .iter()
        .filter(|f| !new.files.contains(f))
        .map(String::as_str)
        .collect();
    let more_allowed = new.allow.iter().any(|c| !old.allow.contains(c));
    let less_allowed = old.allow.iter().any(|c| !new.allow.contains(c));
    let verb = match (
        !added.is_empty() || more_allowed,
        !removed.is_empty() || less_allowed,
    ) {
        (true, false) => "widened",
        (false, true) => "narrowed",
        (true, true) => "changed",
        (false, false) => "restated",
    };
    let mut diff = Vec::new();
    if !added.is_empty() {
        diff.push(format!("+{}", added.join(", +")));
    }
    if !removed.is_empty() {
        diff.push(format!("-{}", removed.join(", -")));
    }
    let diff = if diff.is_empty() {
        String::new()
    } else {
        format!(" ({})", diff.join(" "))
    };
    format!(
        "scope {verb}{diff}: {} — {}{est}{allow}",
        new.files.join(", "),
        new.behaviours
    )
}

#[cfg(test)]
mod tests {
    use super::compile;
    use std::path::Path;

    #[test]
    fn globs_cover_like_gitignore_patterns() {
        let set = |g: &[&str]| {
            let v: Vec<String> = g.iter().map(|s| s.to_string()).collect();
            compile(&v, Path::new("/nonexistent-project")).unwrap()
        };
        let s = set(&["*.py", "src/lib/", "docs/a.md"]);
        assert!(s.is_match("calc.py") && s.is_match("pkg/deep/calc.py"));
        assert!(s.is_match("src/lib/x/y.rs") && !s.is_match("src/main.rs"));
        assert!(s.is_match("docs/a.md") && !s.is_match("docs/b.md"));
        let s = set(&["src/*.rs"]);
        assert!(s.is_match("src/main.rs") && !s.is_match("src/x/main.rs"));
    }
}
