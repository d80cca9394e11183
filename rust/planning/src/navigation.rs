//! The turn balancer (seed 001, "Research Scope"): research that stops surfacing evidence is
//! turned into one tool-free recovery pass instead of more blind calls.
//!
//! Every call that ran is classified: navigation (read, grep, glob, read-only shell
//! inspection such as `rg`, `find`, `cat`, `sed -n`), verification (compile, test, build,
//! lint commands), mutation (anything that could change the workspace) or neutral (the todo
//! list, a question). A navigation is low-signal when it failed, found nothing, or repeats a
//! request already made this turn (output controls such as `max_output_tokens` do not make
//! it new). Guards, each arming the same single pass per turn:
//! - planning: 6 consecutive or 10 total low-signal navigations (a productive one resets the
//!   consecutive count; verification, mutation and the pass itself reset both), or 12
//!   consecutive inspections holding one repeated request;
//! - every mode: the same listing tool rescanning the same root (`ls src`, `ls -la src/`)
//!   3 times, 5 while planning (distinct trees never group);
//! - execution: 12 low-signal outcomes since the last mutation or verification.

use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};

pub const CONSECUTIVE_LOW_SIGNAL: u32 = 6;
pub const TOTAL_LOW_SIGNAL: u32 = 10;
pub const REPEAT_WINDOW: usize = 12;
pub const LISTING_TRIPWIRE: u32 = 3;
pub const PLANNING_LISTING_TRIPWIRE: u32 = 5;
pub const EXECUTION_CHURN: u32 = 12;

/// Argument names that shape only how much of a result is shown.
const OUTPUT_CONTROLS: &[&str] = &[
    "max_output_tokens",
    "max_tokens",
    "max_results",
    "head_limit",
];

/// First words of commands that check the work rather than look around.
const VERIFIERS: &[&str] = &[
    "cargo", "pytest", "tox", "nox", "make", "go", "npm", "pnpm", "yarn", "npx", "tsc", "mvn",
    "gradle", "ruff", "mypy", "eslint", "jest", "vitest", "ctest", "cmake", "just",
];

/// First words of read-only inspection commands.
const INSPECTORS: &[&str] = &[
    "rg", "grep", "find", "fd", "ls", "cat", "head", "tail", "sed", "tree", "stat", "file", "wc",
    "jq", "which", "git", "awk", "less", "more", "du",
];

/// Listing tools: one of them rescanning one root is the same family.
const LISTERS: &[&str] = &["ls", "find", "fd", "tree"];

#[derive(Debug, PartialEq)]
pub enum Kind {
    /// `key` identifies the semantic request; `family` is set for listings
    /// (`exec::inspection::ls::src`).
    Navigation {
        key: String,
        family: Option<String>,
    },
    Verification,
    Neutral,
}

/// What a call is, from its canonical tool name and arguments (mutation is judged by the
/// caller from what the call did).
pub fn classify(tool: &str, arguments: &str) -> Kind {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    match tool {
        // The glob tool matches one pattern, like grep: distinct patterns under one root are
        // distinct questions, not a rescan (the seed's listing family is ls, find and fd).
        "read" | "grep" | "glob" => Kind::Navigation {
            key: format!("{tool}:{}", semantic(&args)),
            family: None,
        },
        "bash" => {
            let command = args
                .get("command")
                .or_else(|| args.get("cmd"))
                .and_then(Value::as_str)
                .unwrap_or("");
            classify_command(command)
        }
        _ => Kind::Neutral,
    }
}

/// A shell command: a `cd <dir> &&` prefix changes nothing; the first word decides.
fn classify_command(command: &str) -> Kind {
    let mut rest = command.trim();
    while let Some(tail) = rest.strip_prefix("cd ")
        && let Some((_, after)) = tail.split_once("&&")
    {
        rest = after.trim();
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let Some(first) = words.first().map(|w| w.rsplit('/').next().unwrap_or(w)) else {
        return Kind::Neutral;
    };
    let python_tests = matches!(first, "python" | "python3")
        && words.get(1) == Some(&"-m")
        && matches!(words.get(2), Some(&("pytest" | "unittest" | "mypy")));
    if VERIFIERS.contains(&first) || python_tests {
        return Kind::Verification;
    }
    if !INSPECTORS.contains(&first) || (first == "sed" && !words.contains(&"-n")) {
        return Kind::Neutral;
    }
    let family = LISTERS.contains(&first).then(|| {
        let root = words[1..]
            .iter()
            .take_while(|w| !matches!(**w, "|" | "&&" | ";" | "2>&1"))
            .find(|w| !w.starts_with('-'))
            .copied()
            .unwrap_or(".");
        format!("exec::inspection::{first}::{}", normal_root(root))
    });
    Kind::Navigation {
        key: format!("bash:{}", words.join(" ")),
        family,
    }
}

/// `./src/`, `src/` and `src` are one root.
fn normal_root(root: &str) -> String {
    let r = root.trim().trim_matches(['"', '\'']);
    let r = r.strip_prefix("./").unwrap_or(r).trim_end_matches('/');
    if r.is_empty() { ".".into() } else { r.into() }
}

/// The arguments without output controls, keys sorted (serde_json's map is ordered).
fn semantic(args: &Value) -> String {
    match args {
        Value::Object(m) => {
            let kept: serde_json::Map<String, Value> = m
                .iter()
                .filter(|(k, _)| !OUTPUT_CONTROLS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Value::Object(kept).to_string()
        }
        other => other.to_string(),
    }
}

/// A result that surfaced nothing.
pub fn found_nothing(output: &str) -> bool {
    let t = output.trim();
    t.is_empty()
        || t == "(no output)"
        || t.starts_with("No matches for")
        || t.starts_with("No files match")
}

#[derive(Default)]
pub struct Balancer {
    planning: bool,
    consecutive_low: u32,
    total_low: u32,
    churn: u32,
    seen: HashSet<String>,
    /// Whether each of the last inspections repeated an earlier request.
    recent: VecDeque<bool>,
    listings: HashMap<String, u32>,
    /// The turn's one recovery pass was armed (by this balancer or another guard).
    pub spent: bool,
}

impl Balancer {
    pub fn new(planning: bool) -> Balancer {
        Balancer {
            planning,
            ..Balancer::default()
        }
    }

    /// Verification, mutation or a recovery pass: the low-signal counts start again.
    pub fn reset(&mut self) {
        self.consecutive_low = 0;
        self.total_low = 0;
        self.churn = 0;
        self.recent.clear();
        self.listings.clear();
    }

    /// Counts one call that ran; the reason for the recovery pass when a guard trips (once
    /// per turn: a pass already armed is never announced again).
    pub fn record(&mut self, kind: Kind, ok: bool, mutated: bool, output: &str) -> Option<String> {
        let (key, family) = match kind {
            _ if mutated => {
                self.reset();
                return None;
            }
            Kind::Verification => {
                self.reset();
                return None;
            }
            Kind::Neutral => return None,
            Kind::Navigation { key, family } => (key, family),
        };
        let repeated = !self.seen.insert(key);
        let low = !ok || repeated || found_nothing(output);
        let mut why = None;
        if let Some(f) = family {
            let n = self.listings.entry(f.clone()).or_insert(0);
            *n += 1;
            let wire = if self.planning {
                PLANNING_LISTING_TRIPWIRE
            } else {
                LISTING_TRIPWIRE
            };
            if *n >= wire {
                why = Some(format!("the same root was listed {n} times ({f} ×{n})"));
            }
        }
        if self.planning {
            if low {
                self.consecutive_low += 1;
                self.total_low += 1;
            } else {
                self.consecutive_low = 0;
            }
            self.recent.push_back(repeated);
            if self.recent.len() > REPEAT_WINDOW {
                self.recent.pop_front();
            }
            if self.consecutive_low >= CONSECUTIVE_LOW_SIGNAL {
                why.get_or_insert(format!(
                    "{} low-signal reads/searches in a row",
                    self.consecutive_low
                ));
            } else if self.total_low >= TOTAL_LOW_SIGNAL {
                why.get_or_insert(format!(
                    "{} low-signal reads/searches in this turn",
                    self.total_low
                ));
            } else if self.recent.len() == REPEAT_WINDOW && self.recent.contains(&true) {
                why.get_or_insert(format!(
                    "{REPEAT_WINDOW} inspections in a row that repeat an earlier request"
                ));
            }
        } else if low {
            self.churn += 1;
            if self.churn >= EXECUTION_CHURN {
                why.get_or_insert(format!(
                    "{} low-signal inspections since the last edit or check",
                    self.churn
                ));
            }
        }
        if why.is_some() && !self.spent {
            self.spent = true;
            self.reset();
            why
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(c: &str) -> Kind {
        classify("bash", &serde_json::json!({"command": c}).to_string())
    }

    #[test]
    fn commands_are_classified_by_their_first_word() {
        assert_eq!(bash("cargo test -p x"), Kind::Verification);
        assert_eq!(bash("cd rust && cargo clippy"), Kind::Verification);
        assert_eq!(bash("python3 -m pytest -q"), Kind::Verification);
        assert_eq!(bash("sed -i s/a/b/ f"), Kind::Neutral);
        assert!(matches!(
            bash("sed -n 1,5p f"),
            Kind::Navigation { family: None, .. }
        ));
        let Kind::Navigation { family, .. } = bash("ls -la ./src/") else {
            panic!()
        };
        assert_eq!(family.as_deref(), Some("exec::inspection::ls::src"));
    }

    #[test]
    fn output_controls_do_not_make_a_request_new() {
        let a = classify("read", r#"{"file_path":"a.rs","max_output_tokens":10}"#);
        let b = classify("read", r#"{"max_output_tokens":99,"file_path":"a.rs"}"#);
        assert_eq!(a, b);
    }

    #[test]
    fn planning_counts_consecutive_and_total_low_signal() {
        let mut b = Balancer::new(true);
        let nav = |i: u32| classify("grep", &format!(r#"{{"pattern":"p{i}"}}"#));
        // Five empty searches, one productive: the consecutive count starts again...
        for i in 0..5 {
            assert!(
                b.record(nav(i), true, false, "No matches for /x/ in .")
                    .is_none()
            );
        }
        assert!(b.record(nav(5), true, false, "a.rs:1: hit").is_none());
        // ...but the total does not: five more empty ones make ten.
        for i in 6..10 {
            assert!(b.record(nav(i), true, false, "").is_none());
        }
        let why = b.record(nav(10), true, false, "").unwrap();
        assert!(why.contains("10 low-signal"), "{why}");
        // The pass is armed once per turn.
        for i in 11..30 {
            assert!(b.record(nav(i), true, false, "").is_none());
        }
    }

    #[test]
    fn verification_resets_both_counts() {
        let mut b = Balancer::new(true);
        let nav = |i: u32| classify("grep", &format!(r#"{{"pattern":"p{i}"}}"#));
        for round in 0..3 {
            for i in 0..5 {
                assert!(b.record(nav(round * 10 + i), false, false, "").is_none());
            }
            assert!(b.record(bash("cargo test"), true, false, "ok").is_none());
        }
    }

    #[test]
    fn listing_tripwire_groups_one_root_only() {
        let mut b = Balancer::new(false);
        for c in ["ls src", "ls -la tests", "ls docs", "ls -R benches"] {
            assert!(b.record(bash(c), true, false, "x").is_none());
        }
        assert!(b.record(bash("ls ./src/"), true, false, "x").is_none());
        let why = b.record(bash("ls -la src"), true, false, "x").unwrap();
        assert!(why.contains("exec::inspection::ls::src ×3"), "{why}");
    }
}
