//! The plan artifact validator (seed 001): the four canonical sections, the step grammar
//! `N. action -> files: … -> verify: …` with concrete verify entries, no markdown links or
//! editor URIs, no placeholders or open decisions, and a size bound. Every failure names
//! where it is and what to fix; the list goes back to the model as feedback.

use serde::Serialize;

/// About 1500 tokens at 4 characters a token.
pub const MAX_PLAN_TOKENS: usize = 1500;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Step {
    pub n: u32,
    pub action: String,
    pub files: Vec<String>,
    pub verify: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Plan {
    pub title: String,
    pub summary: String,
    pub steps: Vec<Step>,
    /// The plan's markdown (without the tags).
    pub text: String,
}

/// Canonical section → accepted headings (lower case).
const REQUIRED: &[(&str, &[&str])] = &[
    ("Summary", &["summary"]),
    ("Implementation Steps", &["implementation steps", "steps"]),
    (
        "Test Cases and Validation",
        &["test cases and validation", "validation"],
    ),
    (
        "Assumptions and Defaults",
        &["assumptions and defaults", "assumptions"],
    ),
];

const EDITOR_SCHEMES: &[&str] = &[
    "vscode://",
    "vscode-insiders://",
    "cursor://",
    "zed://",
    "idea://",
    "jetbrains://",
    "subl://",
    "file://",
    "txmt://",
];

const PLACEHOLDERS: &[&str] = &[
    "[action]",
    "[check]",
    "[task title]",
    "[path/to/file",
    "[assumption",
    "tbd",
    "todo:",
    "<placeholder>",
    "lorem ipsum",
];

/// Verify entries that name no command and no observable result.
const VAGUE: &[&str] = &[
    "",
    "check",
    "checks",
    "test",
    "tests",
    "testing",
    "verify",
    "verified",
    "it works",
    "works",
    "works correctly",
    "ensure it works",
    "make sure it works",
    "manual",
    "manually",
    "manual testing",
    "manual check",
    "looks good",
    "run tests",
    "run the tests",
    "tests pass",
    "all tests pass",
    "n/a",
    "none",
    "tbd",
    "todo",
    "...",
];

/// Words that make a prose entry an observable check ("`yuyao --help` prints `--plan`").
const OBSERVABLE: &[&str] = &[
    "returns",
    "prints",
    "shows",
    "exits",
    "contains",
    "passes",
    "fails",
    "succeeds",
    "outputs",
    "equals",
    "responds",
    "exists",
    "appears",
    "lists",
    "reports",
    "matches",
    "no longer",
    "status",
    "renders",
    "displays",
    "logs",
    "writes",
    "reads",
    "==",
    "->",
];

/// Token estimate of a text (4 characters a token, as the request estimate).
pub fn tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

fn heading(line: &str) -> Option<(usize, String)> {
    let t = line.trim_start();
    let level = t.chars().take_while(|c| *c == '#').count();
    if level == 0 || level > 6 || !t[level..].starts_with(' ') {
        return None;
    }
    Some((
        level,
        t[level..]
            .trim()
            .trim_end_matches(':')
            .trim_matches('*')
            .trim()
            .to_string(),
    ))
}

/// `[text](target)` anywhere in the line.
fn has_markdown_link(line: &str) -> bool {
    let b = line.as_bytes();
    let mut i = 0;
    while let Some(j) = line[i..].find("](") {
        let at = i + j;
        if line[..at].contains('[') && line[at + 2..].contains(')') {
            return true;
        }
        i = at + 2;
        if i >= b.len() {
            break;
        }
    }
    false
}

/// Splits on commas outside quotes and backticks.
pub fn split_entries(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c)
            }
            (None, '\'' | '"' | '`') => {
                quote = Some(c);
                cur.push(c)
            }
            (None, ',') | (None, ';') => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|e| clean(&e))
        .filter(|e| !e.is_empty())
        .collect()
}

/// An entry without its decoration: `[…]` brackets, backticks, surrounding spaces.
fn clean(s: &str) -> String {
    let t = s.trim();
    let t = t
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(t);
    t.trim().to_string()
}

fn is_concrete(entry: &str) -> bool {
    let plain = entry.trim_matches('`').trim();
    let lower = plain.to_ascii_lowercase();
    if VAGUE.contains(&lower.trim_end_matches('.')) {
        return false;
    }
    if entry.contains('`') {
        return true; // inline code: a command or a symbol to look for
    }
    let words: Vec<&str> = plain.split_whitespace().collect();
    let first = words.first().copied().unwrap_or("");
    // A command: a program followed by arguments, or a path to run.
    let commandish = |w: &str| {
        w.contains('/')
            || w.contains("::")
            || w.starts_with('-')
            || (w.contains('.') && w.len() > 2)
            || w.contains('=')
    };
    let program = first
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_./".contains(c))
        && !first.is_empty();
    if program && words.len() >= 2 && words[1..].iter().any(|w| commandish(w)) {
        return true;
    }
    if program && words.len() == 1 && commandish(first) {
        return true;
    }
    if program
        && matches!(
            first,
            "cargo"
                | "pytest"
                | "npm"
                | "pnpm"
                | "yarn"
                | "make"
                | "go"
                | "rg"
                | "grep"
                | "python"
                | "python3"
                | "node"
                | "just"
                | "tox"
                | "ruff"
                | "mypy"
                | "git"
                | "yuyao"
                | "curl"
                | "bash"
                | "sh"
                | "diff"
                | "test"
                | "ls"
                | "cat"
        )
        && words.len() >= 2
    {
        return true;
    }
    words.len() >= 3 && OBSERVABLE.iter().any(|o| lower.contains(o))
}

/// Validates a plan body (between the tags). `Err` lists every failure.
pub fn validate(text: &str) -> Result<Plan, Vec<String>> {
    let text = text.trim();
    let mut problems = Vec::new();
    if text.is_empty() {
        return Err(vec![
            "the <proposed_plan> block is empty: write the whole plan inside it".into(),
        ]);
    }
    let n_tokens = tokens(text);
    if n_tokens > MAX_PLAN_TOKENS {
        problems.push(format!(
            "the plan is about {n_tokens} tokens, over the ~{MAX_PLAN_TOKENS}-token bound: condense it (file:symbol references, no narrative) and re-emit the whole <proposed_plan> block"
        ));
    }
    // Sections by heading; the first level-1 heading is the title.
    let mut title = String::new();
    let mut sections: Vec<(String, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        match heading(line) {
            Some((1, t)) if title.is_empty() && sections.is_empty() => title = t,
            Some((_, t)) => sections.push((t, Vec::new())),
            None => {
                if let Some((_, body)) = sections.last_mut() {
                    body.push(line);
                }
            }
        }
        let lower = line.to_ascii_lowercase();
        if has_markdown_link(line) {
            problems.push(format!(
                "markdown link in `{}`: write file references as plain text or inline code",
                line.trim()
            ));
        }
        if let Some(s) = EDITOR_SCHEMES.iter().find(|s| lower.contains(*s)) {
            problems.push(format!(
                "editor URI ({s}) in `{}`: write file references as plain text or inline code",
                line.trim()
            ));
        }
        if let Some(p) = PLACEHOLDERS.iter().find(|p| lower.contains(*p)) {
            problems.push(format!(
                "placeholder `{p}` in `{}`: replace it with the real content",
                line.trim()
            ));
        }
        let t = lower.trim_start_matches(['-', '*', ' ']);
        if (t.starts_with("next open decision") || t.starts_with("open question"))
            && !t.contains("no remaining")
        {
            problems.push(format!(
                "unresolved `{}`: decide it (or ask the user) before proposing the plan",
                line.trim()
            ));
        }
    }
    let find = |names: &[&str]| {
        sections
            .iter()
            .find(|(h, _)| names.contains(&h.to_ascii_lowercase().as_str()))
    };
    let mut summary = String::new();
    let mut steps = Vec::new();
    for (canonical, names) in REQUIRED {
        match find(names) {
            None => problems.push(format!(
                "missing section `## {canonical}` (required: Summary, Implementation Steps, Test Cases and Validation, Assumptions and Defaults)"
            )),
            Some((_, body)) if body.iter().all(|l| l.trim().is_empty()) => {
                problems.push(format!("section `{canonical}` is empty"))
            }
            Some((_, body)) => {
                if *canonical == "Summary" {
                    summary = body.iter().map(|l| l.trim()).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
                }
                if *canonical == "Implementation Steps" {
                    steps = parse_steps(body, &mut problems);
                }
            }
        }
    }
    if title.is_empty() {
        title = summary.chars().take(60).collect();
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Plan {
        title,
        summary,
        steps,
        text: text.to_string(),
    })
}

/// `N. action -> files: a, b -> verify: cmd, check` (also `verification:`).
fn parse_steps(body: &[&str], problems: &mut Vec<String>) -> Vec<Step> {
    let mut steps = Vec::new();
    for line in body {
        let t = line.trim();
        let digits: String = t.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() || !t[digits.len()..].starts_with(['.', ')']) {
            continue; // prose or a sub-bullet between steps
        }
        let n: u32 = digits.parse().unwrap_or(0);
        let rest = t[digits.len() + 1..].trim();
        let parts: Vec<&str> = rest.split("->").map(str::trim).collect();
        let action = parts[0].to_string();
        let field = |keys: &[&str]| {
            parts[1..].iter().find_map(|p| {
                let lower = p.to_ascii_lowercase();
                keys.iter()
                    .find(|k| lower.starts_with(*k))
                    .map(|k| p[k.len()..].trim().to_string())
            })
        };
        let files = field(&["files:", "file:"]);
        let verify = field(&["verify:", "verification:"]);
        if action.is_empty() {
            problems.push(format!(
                "step {n}: the action is empty (write what the step does before `-> files:`)"
            ));
        }
        let files = match files {
            None => {
                problems.push(format!("step {n}: missing `-> files: …` (name the file, symbol or behaviour it changes; grammar `N. action -> files: … -> verify: …`)"));
                Vec::new()
            }
            Some(f) => {
                let f = split_entries(&f);
                if f.is_empty() {
                    problems.push(format!("step {n}: `files:` is empty"));
                }
                f
            }
        };
        let verify = match verify {
            None => {
                problems.push(format!(
                    "step {n}: missing `-> verify: …` (a concrete command or observable check)"
                ));
                Vec::new()
            }
            Some(v) => {
                let v = split_entries(&v);
                if v.is_empty() {
                    problems.push(format!("step {n}: `verify:` is empty"));
                }
                for e in &v {
                    if !is_concrete(e) {
                        problems.push(format!("step {n}: verify entry `{e}` is not a concrete command or observable check (e.g. `cargo test parser::tests::x`, or \"`yuyao --help` prints --plan\")"));
                    }
                }
                v
            }
        };
        steps.push(Step {
            n,
            action,
            files,
            verify,
        });
    }
    if steps.is_empty() {
        problems.push("section `Implementation Steps` has no numbered steps (`1. action -> files: … -> verify: …`)".into());
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const GOOD: &str = "# Fix parser\n\n## Summary\nFix the cursor.\n\n## Implementation Steps\n1. Hoist the check -> files: src/parser.rs -> verify: cargo test parser::tests::parse_case, rg -n 'a,b' README.md\n2. Add a test -> files: [src/parser.rs] -> verify: [`cargo test single_byte`]\n\n## Test Cases and Validation\n- cargo test\n\n## Assumptions and Defaults\n- grammar unchanged\n";

    #[test]
    fn good_plan_passes() {
        let p = validate(GOOD).unwrap();
        assert_eq!(p.title, "Fix parser");
        assert_eq!(p.steps.len(), 2);
        assert_eq!(p.steps[0].verify.len(), 2, "{:?}", p.steps[0].verify);
        assert_eq!(p.steps[0].verify[1], "rg -n 'a,b' README.md");
    }

    #[test]
    fn each_failure_is_named() {
        let e = validate(&GOOD.replace("## Summary", "## Overview")).unwrap_err();
        assert!(
            e.iter().any(|p| p.contains("missing section `## Summary`")),
            "{e:?}"
        );
        let e = validate(&GOOD.replace(
            " -> verify: cargo test parser::tests::parse_case, rg -n 'a,b' README.md",
            "",
        ))
        .unwrap_err();
        assert!(
            e.iter().any(|p| p.contains("step 1: missing `-> verify:")),
            "{e:?}"
        );
        let e = validate(&GOOD.replace("rg -n 'a,b' README.md", "it works")).unwrap_err();
        assert!(
            e.iter()
                .any(|p| p.contains("step 1: verify entry `it works`")),
            "{e:?}"
        );
        let e = validate(&GOOD.replace("files: src/parser.rs", "files: [parser](src/parser.rs)"))
            .unwrap_err();
        assert!(e.iter().any(|p| p.contains("markdown link")), "{e:?}");
        let e =
            validate(&GOOD.replace("files: src/parser.rs", "files: vscode://file/src/parser.rs"))
                .unwrap_err();
        assert!(e.iter().any(|p| p.contains("editor URI")), "{e:?}");
        let big = GOOD.replace("Fix the cursor.", &"word ".repeat(1400));
        let e = validate(&big).unwrap_err();
        assert!(e.iter().any(|p| p.contains("condense")), "{e:?}");
        // Aliases, case-insensitive.
        let alias = GOOD
            .replace("## Implementation Steps", "## steps")
            .replace("## Test Cases and Validation", "## VALIDATION")
            .replace("## Assumptions and Defaults", "## Assumptions");
        assert!(validate(&alias).is_ok());
    }
}
