//! Does a task ask for a change to the repository, or only for an answer? A headless run that
//! changed nothing is `Submitted` only when the task was a question or an analysis (spec 002
//! §9: "Submitted must be earned"). Unless the task reads as a question, it asks for a change
//! (a bug report or an issue text asks for a fix even without an imperative).

/// First words of a question or of an analysis request.
const QUESTION_WORDS: &[&str] = &[
    "what",
    "why",
    "how",
    "where",
    "which",
    "who",
    "whom",
    "whose",
    "when",
    "is",
    "are",
    "was",
    "were",
    "does",
    "do",
    "did",
    "can",
    "could",
    "should",
    "would",
    "will",
    "has",
    "have",
    "explain",
    "describe",
    "summarize",
    "summarise",
    "analyze",
    "analyse",
    "review",
    "audit",
    "list",
    "count",
    "tell",
    "show",
    "compare",
    "evaluate",
    "assess",
    "investigate",
    "diagnose",
    "identify",
];

/// Verbs that, starting a clause, ask for work on the code.
const CHANGE_VERBS: &[&str] = &[
    "fix",
    "implement",
    "add",
    "create",
    "write",
    "modify",
    "change",
    "update",
    "refactor",
    "remove",
    "delete",
    "rename",
    "make",
    "resolve",
    "patch",
    "edit",
    "replace",
    "move",
    "convert",
    "support",
    "ensure",
    "introduce",
    "improve",
    "optimize",
    "optimise",
    "upgrade",
    "bump",
    "port",
    "migrate",
    "rewrite",
    "clean",
    "format",
    "correct",
    "repair",
    "adjust",
    "extend",
    "handle",
    "generate",
    "build",
    "insert",
    "append",
    "split",
    "merge",
    "extract",
    "revert",
    "set",
    "commit",
];

/// Words that only soften a request ("could you fix …" asks for a fix).
const POLITE_PREFIXES: &[&str] = &[
    "please",
    "kindly",
    "can you",
    "could you",
    "would you",
    "will you",
    "can we",
    "could we",
    "let's",
    "i want you to",
    "i need you to",
    "i'd like you to",
    "we need to",
    "you need to",
    "you should",
    "go ahead and",
    "now",
    "then",
    "also",
    "and",
];

/// True unless the task reads as a question or an analysis request with no clause that asks
/// for a change ("Why does X fail?" asks nothing of the code; "Why does X fail? Fix it." does).
pub fn asks_for_change(task: &str) -> bool {
    let lowered = task.to_lowercase();
    let clauses = clauses(&lowered);
    if clauses
        .iter()
        .any(|c| first_word(strip_polite(c)).is_some_and(|w| CHANGE_VERBS.contains(&w)))
    {
        return true;
    }
    let opens_as_question = clauses
        .first()
        .and_then(|c| first_word(c))
        .is_some_and(|w| QUESTION_WORDS.contains(&w));
    let one_question = !lowered.trim().contains("\n\n") && lowered.trim_end().ends_with('?');
    !(opens_as_question || one_question)
}

/// A clause of the request starts with a change verb ("fix …", "please add …", "could you
/// update …"): positive evidence that the user asked for a change. Stricter than
/// [`asks_for_change`] (which reads any non-question as a task, right for an issue text given
/// to a headless run): "hello" or "thanks" in a conversation asks for nothing.
pub fn names_a_change(task: &str) -> bool {
    let lowered = task.to_lowercase();
    clauses(&lowered)
        .iter()
        .any(|c| first_word(strip_polite(c)).is_some_and(|w| CHANGE_VERBS.contains(&w)))
}

fn clauses(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for sentence in text.split(['.', '!', '?', ';', ':', '\n']) {
        for part in sentence.split(',') {
            for piece in part.split(" and ") {
                out.extend(
                    piece
                        .split(" then ")
                        .map(str::trim)
                        .filter(|c| !c.is_empty()),
                );
            }
        }
    }
    out
}

fn strip_polite(mut clause: &str) -> &str {
    loop {
        let before = clause;
        for prefix in POLITE_PREFIXES {
            if let Some(rest) = clause.strip_prefix(prefix)
                && (rest.is_empty() || rest.starts_with(' '))
            {
                clause = rest.trim_start();
            }
        }
        if clause == before {
            return clause;
        }
    }
}

fn first_word(clause: &str) -> Option<&str> {
    clause
        .split_whitespace()
        .next()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\''))
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::{asks_for_change, names_a_change};

    #[test]
    fn only_a_change_verb_names_a_change() {
        for task in [
            "fix the bug in calc.py",
            "Please add a --verbose flag",
            "Could you update the docs?",
            "Why does it fail? Fix it.",
        ] {
            assert!(names_a_change(task), "{task}");
        }
        for task in [
            "hello",
            "thanks!",
            "What does calc.py do?",
            "ok, looks good",
        ] {
            assert!(!names_a_change(task), "{task}");
        }
    }

    #[test]
    fn questions_and_analyses_ask_for_no_change() {
        for task in [
            "What does add() in calc.py return?",
            "Why does test_parse fail?",
            "How do I add a --verbose flag?",
            "Explain the retry logic in client.rs.",
            "Review the error handling and list the problems you find.",
            "the parser drops the last token — is that intended?",
        ] {
            assert!(!asks_for_change(task), "{task}");
        }
    }

    #[test]
    fn requests_and_issue_texts_ask_for_a_change() {
        for task in [
            "Create hello.txt containing the word hello.",
            "Why does test_parse fail? Fix it.",
            "Explain the bug and then fix it.",
            "Could you fix the off-by-one in parse()?",
            "Please, add a --verbose flag",
            "TypeError when calling foo(None)\n\nSteps to reproduce: call foo(None).",
            "Make the changes.",
        ] {
            assert!(asks_for_change(task), "{task}");
        }
    }
}
