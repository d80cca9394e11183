//! The next step the user probably wants, predicted from the session (shown by the fronts as
//! a greyed suggestion in the empty input). In order:
//! 1. the last test run failed and nothing was edited since → "fix <the first failing test>";
//! 2. files were edited since the last test run → "run the tests" (with the command last used);
//! 3. the last test run passed, nothing edited since, the work tree has changes → "commit";
//! 4. the last answer names a next step ("Next: …") or offers one ("Shall I …?");
//! 5. in this project's prompt history, what was most often typed after the last prompt.

#[allow(unused_imports)]
use crate::session_ext::*;

use regex::Regex;
use std::sync::LazyLock;
use yuyao_core::Session;
use yuyao_policy::Action;
use yuyao_tools::ToolOutput;

/// What the session's tool calls did, as far as the prediction cares.
#[derive(Debug, Default, Clone)]
pub(crate) struct WorkLog {
    /// A file tool changed files since the last test run.
    pub edited_since_test: bool,
    pub last_test: Option<TestRun>,
}

#[derive(Debug, Clone)]
pub(crate) struct TestRun {
    pub command: String,
    pub passed: bool,
    pub failing: Vec<String>,
}

/// Test runners, as whole words of a command line.
static TEST_COMMAND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)(^|[\s;&|(/])(
            py\.?test | -m\s+(pytest|unittest) | tox | nox
          | cargo\s+(\+\S+\s+)?(test|nextest) | go\s+test | ctest | (make|just)\s+(test|check)
          | (npm|yarn|pnpm|bun)\s+(run\s+)?test | jest | vitest | mocha | deno\s+test
          | mvn\s+(\S+\s+)*test | (\./)?gradlew?\s+(\S+\s+)*test | rspec | phpunit
          | dotnet\s+test | mix\s+test
        )(\s|$|;|&|\|)",
    )
    .expect("valid regex")
});

/// Failing test names in a test runner's output (pytest, cargo, go, unittest, jest).
static FAILING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)^(?:FAILED\s+(\S+)(?:\s+-\s.*)?|test\s+(\S+)\s+\.\.\.\s+FAILED|\s*---\s+FAIL:\s+(\S+)(?:\s+\([^)]*\))?|(?:FAIL|ERROR):\s+(\S+\s+\([^)]*\))|\s*[✕×]\s+(.+?)(?:\s+\(\d+\s*ms\))?)\s*$",
    )
    .expect("valid regex")
});

static NEXT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?im)^\s*(?:[-*>]\s*)?(?:\*\*)?(?:next(?: steps?)?|suggested next step)\s*:(?:\*\*)?\s*(.+)$",
    )
    .expect("valid regex")
});

static OFFER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:shall i|should i|want me to|would you like me to|do you want me to)\s+([^?\n]{3,120})\?\s*$",
    )
    .expect("valid regex")
});

pub(crate) fn is_test_command(command: &str) -> bool {
    TEST_COMMAND.is_match(command)
}

pub(crate) fn failing_tests(output: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in FAILING.captures_iter(output) {
        let name = (1..=5).find_map(|i| c.get(i)).map(|m| m.as_str().trim());
        if let Some(n) = name.filter(|n| !n.is_empty())
            && !out.iter().any(|o| o == n)
        {
            out.push(n.to_string());
        }
    }
    out
}

/// The step the last answer names or offers ("" when none).
pub(crate) fn from_answer(answer: &str) -> Option<String> {
    let found = NEXT_LINE
        .captures_iter(answer)
        .last()
        .map(|c| {
            c[1].trim()
                .trim_matches(|ch| ch == '*' || ch == '`')
                .trim()
                .to_string()
        })
        .filter(|s| !s.is_empty());
    found
        .or_else(|| {
            OFFER
                .captures(answer.trim())
                .map(|c| format!("yes, {}", c[1].trim()))
        })
        .map(|s| s.chars().take(200).collect())
}

/// What most often followed `last` in `history` (oldest first); ties go to the most recent.
pub(crate) fn from_history(history: &[String], last: &str) -> Option<String> {
    let last = last.trim();
    let mut counts: Vec<(String, usize, usize)> = Vec::new(); // (prompt, count, last seen)
    for (i, pair) in history.windows(2).enumerate() {
        let next = pair[1].trim();
        if pair[0].trim() != last || next.is_empty() || next == last || next.len() > 200 {
            continue;
        }
        match counts.iter_mut().find(|(p, _, _)| p == next) {
            Some(e) => {
                e.1 += 1;
                e.2 = i;
            }
            None => counts.push((next.to_string(), 1, i)),
        }
    }
    counts
        .into_iter()
        .max_by_key(|(_, n, seen)| (*n, *seen))
        .map(|(p, _, _)| p)
}

/// Rules 1–3: from the work log and whether the work tree has uncommitted changes.
pub(crate) fn from_work(log: &WorkLog, dirty: impl FnOnce() -> bool) -> Option<String> {
    match &log.last_test {
        Some(t) if !t.passed && !log.edited_since_test => Some(match t.failing.first() {
            Some(name) => format!("fix {name}"),
            None => format!("fix the failing tests ({})", t.command),
        }),
        Some(t) if log.edited_since_test => Some(format!("run the tests ({})", t.command)),
        None if log.edited_since_test => Some("run the tests".into()),
        Some(t) if t.passed && dirty() => Some("commit the changes".into()),
        _ => None,
    }
}

pub(crate) trait NextStepExt {
    fn observe_tool(&self, name: &str, action: &Action, out: &ToolOutput);
    fn next_step(&self) -> String;
}

impl NextStepExt for Session {
    /// Hook: every tool call that ran feeds the work log.
    fn observe_tool(&self, name: &str, action: &Action, out: &ToolOutput) {
        let mut log = self
            .listening()
            .work
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if yuyao_core::registry::writes_files(name) && out.ok {
            log.edited_since_test = true;
        } else if name == "bash"
            && let Some(command) = action.command.as_deref().filter(|c| is_test_command(c))
        {
            log.edited_since_test = false;
            log.last_test = Some(TestRun {
                command: command.lines().next().unwrap_or("").trim().to_string(),
                passed: out.ok,
                failing: failing_tests(&out.text),
            });
        }
    }

    /// The predicted next step ("" when there is none).
    fn next_step(&self) -> String {
        let log = self
            .listening()
            .work
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let project = self.paths().project.clone();
        let dirty = || yuyao_store::snapshots::head_changes(&project).is_ok_and(|c| !c.is_empty());
        if let Some(step) = from_work(&log, dirty) {
            return step;
        }
        let answer = self.lock().last_turn.text.clone();
        if let Some(step) = from_answer(&answer) {
            return step;
        }
        let prompts: Vec<String> = self
            .with_store(|st| st.checkpoints())
            .map(|cs| cs.into_iter().map(|c| c.prompt).collect())
            .unwrap_or_default();
        prompts
            .last()
            .and_then(|last| from_history(&prompts[..prompts.len() - 1], last))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_commands_are_recognised() {
        for c in [
            "pytest -q",
            "python -m pytest tests/x.py",
            "cd app && npm test",
            "cargo test -p core",
            "go test ./...",
            "make test",
            "npx vitest run",
            "./gradlew test",
            "python3 -m unittest discover",
        ] {
            assert!(is_test_command(c), "{c}");
        }
        for c in [
            "ls tests",
            "cat test_x.py",
            "git commit -m test",
            "echo pytest-like",
        ] {
            assert!(!is_test_command(c), "{c}");
        }
    }

    #[test]
    fn failing_tests_are_named() {
        let pytest = "FAILED tests/test_calc.py::test_add - assert 3 == 4\nFAILED tests/test_calc.py::test_sub\n";
        assert_eq!(
            failing_tests(pytest),
            [
                "tests/test_calc.py::test_add",
                "tests/test_calc.py::test_sub"
            ]
        );
        assert_eq!(
            failing_tests("test calc::adds ... FAILED\ntest calc::subs ... ok\n"),
            ["calc::adds"]
        );
        assert_eq!(failing_tests("--- FAIL: TestAdd (0.00s)\n"), ["TestAdd"]);
        assert_eq!(
            failing_tests("FAIL: test_add (test_calc.CalcTest)\n"),
            ["test_add (test_calc.CalcTest)"]
        );
    }

    #[test]
    fn the_work_log_decides_first() {
        let failed = TestRun {
            command: "pytest -q".into(),
            passed: false,
            failing: vec!["tests/t.py::test_a".into()],
        };
        let mut log = WorkLog {
            edited_since_test: false,
            last_test: Some(failed),
        };
        assert_eq!(
            from_work(&log, || true).as_deref(),
            Some("fix tests/t.py::test_a")
        );
        log.edited_since_test = true;
        assert_eq!(
            from_work(&log, || true).as_deref(),
            Some("run the tests (pytest -q)")
        );
        log.edited_since_test = false;
        log.last_test.as_mut().unwrap().passed = true;
        assert_eq!(
            from_work(&log, || true).as_deref(),
            Some("commit the changes")
        );
        assert_eq!(from_work(&log, || false), None);
        let fresh = WorkLog {
            edited_since_test: true,
            last_test: None,
        };
        assert_eq!(
            from_work(&fresh, || false).as_deref(),
            Some("run the tests")
        );
    }

    #[test]
    fn answers_and_history() {
        assert_eq!(
            from_answer("Done.\n\n**Next:** run the test suite").as_deref(),
            Some("run the test suite")
        );
        assert_eq!(
            from_answer("I fixed it. Shall I add a regression test?").as_deref(),
            Some("yes, add a regression test")
        );
        assert_eq!(from_answer("All good."), None);
        let h: Vec<String> = ["build", "deploy", "build", "deploy", "build", "lint"]
            .map(String::from)
            .to_vec();
        assert_eq!(from_history(&h, "build").as_deref(), Some("deploy"));
        assert_eq!(from_history(&h, "nothing"), None);
    }
}
