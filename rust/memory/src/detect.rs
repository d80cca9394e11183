//! What a submitted prompt asks of memory, decided by rules (no model call): an explicit
//! "remember that …" (written at once, in every front) and a preference statement — a
//! correction such as "don't add comments" or "use bun, not npm" — which the TUI offers to
//! keep with one keystroke. Seed 000 #5; the fixed prompt set in `tests` measures both.

#[allow(unused_imports)]
use crate::session_ext::*;

/// An explicit request to remember: the text to keep and whether it is for every project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remember {
    pub text: String,
    pub global: bool,
}

/// "Remember that the API lives in src/api" → `Remember { "The API lives in src/api" }`.
pub fn remember_request(prompt: &str) -> Option<Remember> {
    let line = prompt.trim();
    let lower = line.to_lowercase();
    if line.ends_with('?') || lower.starts_with("do you remember") {
        return None;
    }
    let mut rest = lower.as_str();
    for lead in [
        "please ", "hey, ", "hey ", "also, ", "also ", "and ", "ok, ", "okay, ",
    ] {
        rest = rest.strip_prefix(lead).unwrap_or(rest);
    }
    let mut global = false;
    let triggers = [
        ("remember globally that ", true),
        ("remember for all projects that ", true),
        ("remember everywhere that ", true),
        ("remember globally: ", true),
        ("remember that ", false),
        ("remember: ", false),
        ("remember this: ", false),
        ("keep in mind that ", false),
        ("for future reference, ", false),
        ("for future reference: ", false),
        ("note for the future: ", false),
    ];
    let mut taken = None;
    for (t, g) in triggers {
        if let Some(r) = rest.strip_prefix(t) {
            taken = Some(r.len());
            global = g;
            break;
        }
    }
    let tail_len = taken?;
    let text = line[line.len() - tail_len..].trim();
    let text = text.lines().next().unwrap_or("").trim();
    if text.split_whitespace().count() < 2 {
        return None;
    }
    Some(Remember {
        text: capitalize(text),
        global,
    })
}

/// The preference a prompt states, as the sentence to keep; `None` for an ordinary request.
pub fn correction(prompt: &str) -> Option<String> {
    let p = prompt.trim();
    if p.is_empty() || p.ends_with('?') || p.len() > 400 {
        return None;
    }
    sentences(p)
        .into_iter()
        .find(|s| is_preference(s))
        .map(|s| capitalize(s.trim_end_matches(['.', '!']).trim()))
}

/// One sentence: does it state a standing preference?
pub fn is_preference(sentence: &str) -> bool {
    let s = sentence.trim().to_lowercase().replace('’', "'");
    let s = s.trim_end_matches(['.', '!']).trim();
    let mut w: Vec<&str> = s.split_whitespace().collect();
    while matches!(
        w.first(),
        Some(&("please" | "and" | "also" | "ok," | "so" | "pls"))
    ) {
        w.remove(0);
    }
    if w.is_empty() {
        return false;
    }
    let body = w.join(" ");
    // One-off scope words make an instruction part of the task, not a standing rule.
    let one_off = [
        "this file",
        "this function",
        "this pr",
        "this commit",
        "this test",
        "this time",
        "for now",
        "right now",
        "yet",
        "today",
        "this one",
        "that file",
        "these",
        "in this ",
        "the server",
        "the build",
        "the process",
    ];
    let standing = [
        "from now on",
        "going forward",
        "in the future",
        "next time",
        "as a rule",
        "by default",
        "in general",
        "from here on",
    ];
    if standing.iter().any(|m| body.contains(m)) {
        return true;
    }
    if one_off.iter().any(|m| body.contains(m)) {
        return false;
    }
    let first = w[0];
    let second = w.get(1).copied().unwrap_or("");
    match first {
        "always" => return true,
        "never" => return second != "mind",
        "stop" | "quit" => return second.ends_with("ing"),
        "don't" | "dont" => return negated_habit(second),
        "do" if second == "not" => return negated_habit(w.get(2).copied().unwrap_or("")),
        "avoid" => return second.ends_with("ing") || w.len() <= 3,
        "no" if w.len() <= 4 => {
            return second != "problem" && second != "thanks" && second != "need";
        }
        _ => {}
    }
    // "use bun, not npm" / "use X instead of Y" / "prefer X over Y" / "X, not Y".
    let contrast =
        body.contains(", not ") || body.contains(" instead of ") || body.contains(" rather than ");
    if matches!(
        first,
        "use" | "prefer" | "write" | "run" | "call" | "name" | "keep" | "put"
    ) && contrast
    {
        return true;
    }
    if first == "prefer" {
        return true;
    }
    let we = [
        "i prefer",
        "i'd rather",
        "i like",
        "i want you to always",
        "we use",
        "we don't",
        "we never",
        "we always",
        "we prefer",
        "our convention",
        "the convention here",
        "in this repo we",
        "in this project we",
        "i hate it when",
        "i don't like",
    ];
    we.iter().any(|m| body.starts_with(m))
}

fn negated_habit(verb: &str) -> bool {
    !matches!(
        verb,
        "worry"
            | "bother"
            | "mind"
            | "know"
            | "think"
            | "understand"
            | "see"
            | "forget"
            | "care"
            | "have"
    ) && !verb.is_empty()
}

fn sentences(p: &str) -> Vec<&str> {
    p.split(['\n', ';'])
        .flat_map(|l| l.split(". "))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_remember_requests() {
        let r = remember_request("Remember that the API lives in src/api").unwrap();
        assert_eq!(r.text, "The API lives in src/api");
        assert!(!r.global);
        assert!(
            remember_request("please remember globally that I use vim")
                .unwrap()
                .global
        );
        assert!(remember_request("Do you remember that bug?").is_none());
        assert!(remember_request("remember that?").is_none());
        assert!(remember_request("Fix the remember-me checkbox").is_none());
    }

    /// The fixed set: 34 preference statements and 34 ordinary requests. Precision and
    /// recall are printed and must both be at least 0.9.
    #[test]
    fn correction_detector_precision_and_recall() {
        let prefs = [
            "don't add comments",
            "Use bun, not npm.",
            "never run migrations",
            "always use pytest -q",
            "Stop adding type hints to every function",
            "Do not use emojis in commit messages",
            "Please don't reformat files you didn't change",
            "Never push to main directly",
            "Always run cargo fmt before committing",
            "use pnpm instead of npm",
            "Prefer composition over inheritance",
            "I prefer tabs over spaces",
            "We use 4-space indentation in this codebase",
            "From now on, write tests first",
            "Going forward, keep commit messages under 50 characters",
            "No emojis.",
            "Avoid using print for debugging",
            "don't use var, use const or let",
            "Use f-strings rather than format()",
            "never use git push --force",
            "Always answer in English",
            "In the future, ask before deleting files",
            "dont write docstrings for private helpers",
            "Quit adding TODO comments",
            "We never commit generated files",
            "Prefer early returns",
            "Do not run the full test suite, only the affected tests",
            "I'd rather you used pathlib than os.path",
            "Use snake_case for file names, not camelCase",
            "Never run sudo",
            "always use yarn",
            "Next time, run the linter before you say it's done",
            "By default, target Python 3.11",
            "we prefer small pull requests",
        ];
        let ordinary = [
            "Fix the failing test in tests/test_api.py",
            "Add a comment explaining the regex in parse.py",
            "Use the logger module to print errors in main.py",
            "Run the migrations and tell me what fails",
            "Why does npm install fail?",
            "Don't worry about the tests, just fix the bug",
            "Never mind, revert that",
            "Stop the dev server",
            "Rename getUser to fetchUser",
            "Can you always-on the cache for the test run?",
            "What does this function return?",
            "Refactor the parser into smaller functions",
            "Write a README section about installation",
            "Install the dependencies with bun",
            "Delete the unused imports in src/app.ts",
            "Explain the difference between npm and bun",
            "Add type hints to utils.py",
            "Don't change this file, only the tests for now",
            "Run pytest -q and summarize the failures",
            "Create a migration that adds an email column",
            "Update the changelog for version 2.1",
            "Make the button blue",
            "Find where the config is loaded",
            "Use a set here so the lookup is faster",
            "Remove the debug prints from this file",
            "Bump the version to 1.4.0",
            "The build is broken on main, please investigate",
            "Implement pagination for the /users endpoint",
            "Check whether the cache is invalidated on logout",
            "Commit the changes with a short message",
            "Show me the diff",
            "No, use the other branch",
            "Add a --verbose flag to the CLI",
            "Convert this class to a dataclass",
        ];
        assert!(prefs.len() + ordinary.len() >= 60 && prefs.len() == ordinary.len());
        let tp = prefs.iter().filter(|p| correction(p).is_some()).count();
        let fp = ordinary.iter().filter(|p| correction(p).is_some()).count();
        let precision = tp as f64 / (tp + fp).max(1) as f64;
        let recall = tp as f64 / prefs.len() as f64;
        println!(
            "correction detector on {} prompts: precision {precision:.3}, recall {recall:.3}",
            prefs.len() + ordinary.len()
        );
        let missed: Vec<_> = prefs.iter().filter(|p| correction(p).is_none()).collect();
        let wrong: Vec<_> = ordinary
            .iter()
            .filter(|p| correction(p).is_some())
            .collect();
        assert!(
            precision >= 0.9 && recall >= 0.9,
            "missed {missed:?}, wrongly flagged {wrong:?}"
        );
    }
}
