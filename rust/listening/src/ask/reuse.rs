//! Answers already known: the same question answered earlier in the session, or a memory
//! entry / AGENTS.md line that picks exactly one of the offered options.
//!
//! Deliberately strict, so the user is never overruled by a guess: a line counts only when
//! it names one option affirmatively (not after "not", "never", "instead of", …) and is about
//! this question (it shares a content word with it, or it turns down another option).

use yuyao_protocol::{Message, MessageRole, canonical_tool_name};

pub(crate) struct Found {
    pub answer: String,
    pub source: String,
}

/// What the tool result of an answered question starts with (`ask/mod.rs`).
const ANSWERED: &str = "The user answered: ";

/// Lower-case words, punctuation dropped: two spellings of one question compare equal.
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric() && c != '+' && c != '#')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The latest answer the user gave to the same question in this conversation.
pub(crate) fn from_history(history: &[Message], question: &str) -> Option<String> {
    let want = words(question);
    if want.is_empty() {
        return None;
    }
    let mut found = None;
    for (i, m) in history.iter().enumerate() {
        if m.role != MessageRole::Assistant {
            continue;
        }
        for call in &m.tool_calls {
            if canonical_tool_name(&call.name) != Some("ask-user") {
                continue;
            }
            let asked = serde_json::from_str::<serde_json::Value>(&call.arguments)
                .ok()
                .and_then(|v| v["question"].as_str().map(words));
            if asked.as_ref() != Some(&want) {
                continue;
            }
            let answer = history[i + 1..]
                .iter()
                .find(|r| r.tool_call_id.as_deref() == Some(call.id.as_str()))
                .and_then(|r| {
                    r.text()
                        .strip_prefix(ANSWERED)
                        .map(|a| a.trim().to_string())
                })
                .filter(|a| !a.is_empty());
            if answer.is_some() {
                found = answer;
            }
        }
    }
    found
}

/// Words that carry no topic.
const STOP: &[&str] = &[
    "which", "what", "should", "would", "could", "shall", "this", "that", "these", "those", "with",
    "from", "your", "have", "there", "them", "they", "does", "want", "like", "prefer", "using",
    "used", "when", "where", "will", "into", "about", "over", "their", "then", "than", "here",
    "just", "also", "only", "more", "most", "some", "such", "each", "other", "make", "made",
];

/// Words that turn down what follows them.
const NEGATORS: &[&str] = &[
    "not", "never", "no", "avoid", "instead", "don't", "dont", "without", "nor", "stop",
];

/// Generic answers that would match almost any line.
const GENERIC: &[&str] = &["yes", "no", "ok", "none", "both", "all", "default"];

/// Where `option` occurs in `line` as whole words, and whether each occurrence is negated.
fn occurrences(line: &[String], option: &[String]) -> Vec<bool> {
    let n = option.len();
    if n == 0 || line.len() < n {
        return Vec::new();
    }
    (0..=line.len() - n)
        .filter(|&i| line[i..i + n] == *option)
        .map(|i| {
            line[i.saturating_sub(3)..i]
                .iter()
                .any(|w| NEGATORS.contains(&w.as_str()))
        })
        .collect()
}

/// The option a line of memory or conventions settles, if exactly one.
pub(crate) fn from_lines(lines: &[String], question: &str, options: &[String]) -> Option<String> {
    let topic: Vec<String> = words(question)
        .into_iter()
        .filter(|w| w.chars().count() >= 4 && !STOP.contains(&w.as_str()))
        .collect();
    let opts: Vec<(usize, Vec<String>)> = options
        .iter()
        .enumerate()
        .map(|(i, o)| (i, words(o)))
        .filter(|(_, w)| {
            !w.is_empty() && !(w.len() == 1 && (w[0].len() < 2 || GENERIC.contains(&w[0].as_str())))
        })
        .collect();
    if opts.len() < 2 {
        return None;
    }
    for line in lines {
        let lw = words(line);
        let mut affirmed = Vec::new();
        let mut negated = 0;
        for (i, o) in &opts {
            let occ = occurrences(&lw, o);
            if occ.iter().any(|neg| !neg) {
                affirmed.push(*i);
            } else if !occ.is_empty() {
                negated += 1;
            }
        }
        let on_topic = topic.iter().any(|t| lw.contains(t));
        if affirmed.len() == 1 && (on_topic || negated > 0) {
            return Some(options[affirmed[0]].clone());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use yuyao_protocol::ToolCall;

    fn opts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_line_that_picks_one_option_answers() {
        let o = opts(&["npm", "pnpm", "bun"]);
        let q = "Which package manager should I use?";
        assert_eq!(
            from_lines(&opts(&["Use bun, not npm"]), q, &o).as_deref(),
            Some("bun")
        );
        assert_eq!(
            from_lines(&opts(&["Package manager: pnpm"]), q, &o).as_deref(),
            Some("pnpm")
        );
        // Off topic, or two options affirmed, or only refusals: no answer.
        assert_eq!(from_lines(&opts(&["bun is fast"]), q, &o), None);
        assert_eq!(
            from_lines(&opts(&["package manager: npm or bun"]), q, &o),
            None
        );
        assert_eq!(from_lines(&opts(&["never use npm"]), q, &o), None);
        // Generic options never match a line by accident.
        assert_eq!(
            from_lines(
                &opts(&["yes we deploy"]),
                "Deploy now?",
                &opts(&["yes", "no"])
            ),
            None
        );
    }

    #[test]
    fn the_same_question_answered_earlier_is_reused() {
        let mut a = Message::assistant("");
        a.tool_calls = vec![ToolCall {
            id: "c1".into(),
            name: "ask_user".into(),
            arguments: r#"{"question":"Which DB?","options":["sqlite","postgres"]}"#.into(),
        }];
        let h = vec![
            Message::user("go"),
            a,
            Message::tool("c1", "The user answered: postgres"),
        ];
        assert_eq!(from_history(&h, "which db").as_deref(), Some("postgres"));
        assert_eq!(from_history(&h, "Which DB engine?"), None);
    }
}
