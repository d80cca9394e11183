//! Permission rules (spec §3.3): `bash`, `Bash(git log:*)`, `Edit(/src/*)`, `Read(**/.env)`,
//! or a bare path glob. Tool names go through the same canonical spelling as dispatch.

use crate::shell::Segment;
use globset::{GlobBuilder, GlobMatcher};
use std::path::Path;
use yuyao_protocol::canonical_tool_name;

#[derive(Debug, Clone)]
pub struct Rule {
    /// The rule as the user wrote it (shown in decisions and traces).
    pub text: String,
    /// Canonical tool name; `None` means a path rule for every file tool.
    pub tool: Option<&'static str>,
    pub pattern: Option<Pattern>,
}

#[derive(Debug, Clone)]
pub enum Pattern {
    /// For bash: matched against each segment's effective command line.
    Command(String),
    /// For file tools: a glob over the target path.
    Path(GlobMatcher, String),
}

/// Tools whose `file_path`/`path` argument path rules apply to.
pub const FILE_TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "multi-edit",
    "notebook-edit",
    "apply-patch",
    "grep",
    "glob",
];

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("empty permission rule".into());
        }
        if let Some(open) = t.find('(') {
            let Some(inner) = t[open + 1..].strip_suffix(')') else {
                return Err(format!("invalid rule '{t}': missing ')'"));
            };
            let name = &t[..open];
            let tool = canonical_tool_name(name)
                .ok_or_else(|| format!("invalid rule '{t}': unknown tool '{name}'"))?;
            let inner = inner.trim();
            let pattern = if inner.is_empty() || inner == "*" {
                None
            } else if tool == "bash" || tool == "monitor" {
                Some(Pattern::Command(inner.to_string()))
            } else {
                Some(path_pattern(inner)?)
            };
            return Ok(Rule {
                text: t.to_string(),
                tool: Some(tool),
                pattern,
            });
        }
        if t == "*" {
            return Ok(Rule {
                text: t.into(),
                tool: None,
                pattern: None,
            });
        }
        if let Some(tool) = canonical_tool_name(t) {
            return Ok(Rule {
                text: t.into(),
                tool: Some(tool),
                pattern: None,
            });
        }
        Ok(Rule {
            text: t.into(),
            tool: None,
            pattern: Some(path_pattern(t)?),
        })
    }

    /// Whether the rule is about this tool at all.
    pub fn covers_tool(&self, tool: &str) -> bool {
        match (self.tool, &self.pattern) {
            (Some(t), _) => t == tool,
            (None, None) => true,
            (None, Some(_)) => FILE_TOOLS.contains(&tool),
        }
    }

    /// Matches a bash segment (rule must cover bash).
    pub fn matches_segment(&self, s: &Segment) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::Command(p)) => command_matches(p, s),
            Some(Pattern::Path(..)) => false,
        }
    }

    /// Matches a file path (absolute) with the project root for relative patterns.
    pub fn matches_path(&self, path: &Path, project: &Path) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::Command(_)) => false,
            Some(Pattern::Path(g, _)) => {
                let rel = path.strip_prefix(project).unwrap_or(path);
                g.is_match(path) || g.is_match(rel)
            }
        }
    }
}

fn path_pattern(p: &str) -> Result<Pattern, String> {
    // `/x` is relative to the project (as in Claude Code settings), `//x` absolute,
    // `~/x` in the home folder, anything else may match anywhere below.
    let glob = if let Some(abs) = p.strip_prefix("//") {
        format!("/{abs}")
    } else if let Some(home) = p.strip_prefix("~/") {
        let h = std::env::var("HOME").unwrap_or_default();
        format!("{h}/{home}")
    } else if let Some(rel) = p.strip_prefix('/') {
        rel.to_string()
    } else if p.starts_with("**") {
        p.to_string()
    } else {
        format!("{{{p},**/{p}}}")
    };
    let g = GlobBuilder::new(&glob)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid path pattern '{p}': {e}"))?;
    Ok(Pattern::Path(g.compile_matcher(), p.to_string()))
}

/// `git log:*` is a prefix rule; `*` is a wildcard; a single word names the program; several
/// words are a prefix on word boundaries.
fn command_matches(pattern: &str, s: &Segment) -> bool {
    let line = s.command_line();
    let p = pattern.trim();
    if let Some(prefix) = p.strip_suffix(":*") {
        return word_prefix(&line, prefix.trim());
    }
    if p.contains('*') {
        return wildcard(p, &line) || wildcard(p, &s.program);
    }
    if !p.contains(' ') {
        return s.program == p
            || s.program
                == Path::new(p)
                    .file_name()
                    .and_then(|f| f.to_str())
                    .unwrap_or(p);
    }
    word_prefix(&line, p)
}

fn word_prefix(line: &str, prefix: &str) -> bool {
    line == prefix || line.starts_with(&format!("{prefix} "))
}

fn wildcard(p: &str, text: &str) -> bool {
    let parts: Vec<&str> = p.split('*').collect();
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(k) => rest = &rest[k + part.len()..],
                None => return false,
            }
        }
    }
    rest.is_empty()
}

// ----------------------------------------------------------------------------------------
// Exact command rules (issue 11 §3: an "always" answer grants exactly what was shown).

/// The segment as one unambiguous line: environment assignments, program and arguments, each
/// single-quoted when it holds a space or a shell character. An "always" answer for an
/// interpreter saves `Bash(<this>)`, which [`Rule::allows_segment`] matches exactly.
pub fn exact_command(s: &Segment) -> String {
    s.assignments
        .iter()
        .chain(std::iter::once(&s.program))
        .chain(s.args.iter())
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// A multi-word command pattern with no `*` outside quotes (and so no `:*`) is exact.
fn is_exact_pattern(p: &str) -> bool {
    let p = p.trim();
    let mut quoted = false;
    let mut star = false;
    for c in p.chars() {
        match c {
            '\'' => quoted = !quoted,
            '*' if !quoted => star = true,
            _ => {}
        }
    }
    p.contains(' ') && !star
}

impl Rule {
    /// Whether an allow rule permits this segment. A multi-word command pattern without `*`
    /// is exact (as in Claude Code): `Bash(python3 test_calc.py)` allows that command line
    /// only — not `python3 test_calc.py --evil`, not with other assignments, not with its
    /// output redirected to a file. Deny and ask rules keep the word-prefix reading of
    /// [`Rule::matches_segment`] (a veto fails closed).
    pub fn allows_segment(&self, s: &Segment) -> bool {
        match &self.pattern {
            Some(Pattern::Command(p)) if is_exact_pattern(p) => {
                !s.writes_file && p.trim() == exact_command(s)
            }
            _ => self.matches_segment(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::segments;

    fn seg(cmd: &str) -> Segment {
        segments(cmd).unwrap().pop().unwrap()
    }

    #[test]
    fn command_rules() {
        let r = Rule::parse("Bash(git log:*)").unwrap();
        assert!(r.matches_segment(&seg("git log --oneline")));
        assert!(!r.matches_segment(&seg("git push")));
        let r = Rule::parse("Bash(rm)").unwrap();
        assert!(r.matches_segment(&seg("/bin/rm -rf x")));
        let r = Rule::parse("Bash(npm run *)").unwrap();
        assert!(r.matches_segment(&seg("npm run build")));
        assert!(Rule::parse("Nope(x)").is_err());
    }

    #[test]
    fn exact_allow_rules() {
        let r = Rule::parse("Bash(python3 test_calc.py)").unwrap();
        assert!(r.allows_segment(&seg("python3 test_calc.py")));
        assert!(r.allows_segment(&seg("'python3' \"test_calc.py\"")));
        for other in [
            "python3 test_calc.py --evil",
            "python3 -c 'open(\"f\",\"w\")'",
            "python3",
            "python3 test_calc.py > out.txt",
            "PYTHONPATH=x python3 test_calc.py",
            "python3 test_calc.pyx",
        ] {
            assert!(!r.allows_segment(&seg(other)), "{other}");
        }
        // A deny rule with the same text still vetoes every longer line.
        assert!(r.matches_segment(&seg("python3 test_calc.py --evil")));
        // Arguments with spaces are quoted: one word is not two.
        let s = seg("python3 -c 'print(1) x'");
        assert_eq!(exact_command(&s), "python3 -c 'print(1) x'");
        let r = Rule::parse(&format!("Bash({})", exact_command(&s))).unwrap();
        assert!(r.allows_segment(&s));
        assert!(!r.allows_segment(&seg("python3 -c 'print(1)' x")));
        let s = seg("FOO=1 node a.js");
        assert_eq!(exact_command(&s), "FOO=1 node a.js");
        // Prefix and program rules behave as before for allow.
        let r = Rule::parse("Bash(cargo test:*)").unwrap();
        assert!(r.allows_segment(&seg("cargo test -p x")));
        let r = Rule::parse("Bash(mkdir)").unwrap();
        assert!(r.allows_segment(&seg("mkdir -p a")));
    }

    #[test]
    fn path_rules() {
        let root = Path::new("/p");
        let r = Rule::parse("Edit(/src/*)").unwrap();
        assert!(r.matches_path(Path::new("/p/src/a.rs"), root));
        assert!(!r.matches_path(Path::new("/p/lib/a.rs"), root));
        let r = Rule::parse(".env").unwrap();
        assert!(r.covers_tool("read"));
        assert!(r.matches_path(Path::new("/p/x/.env"), root));
    }
}
