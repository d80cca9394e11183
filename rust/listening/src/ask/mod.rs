//! `ask-user` (seed 000 behaviour 1): ask before guessing, but only with a real choice, only when a
//! human can answer, and never twice for what is already known.
//!
//! Order for one question: the arguments must carry 2–4 concrete options (else an error the
//! model can act on); an exact answer already in the session, memory or AGENTS.md is given
//! back without interrupting anyone ([`reuse`]); with no human present the tool answers so
//! itself; otherwise the front shows the question as a list.

#[allow(unused_imports)]
use crate::session_ext::*;

pub(crate) mod reuse;

use serde_json::{Value, json};
use yuyao_core::Session;
use yuyao_protocol::Request;
use yuyao_tools::ToolOutput;
use yuyao_tools::args::AskUserParams;

/// Options a question may offer (more is a survey, fewer is no choice).
pub(crate) const MIN_OPTIONS: usize = 2;
pub(crate) const MAX_OPTIONS: usize = 4;

/// The tool result when nobody can answer: it tells the model what to do instead of waiting.
pub(crate) const NO_HUMAN: &str = "No human is present in this run to answer the question. Do not wait and do not ask again: choose the safest reading (the one that changes the least and is easiest to undo), proceed with it, and state it in your final answer as \"assumed: <the choice> (<why>)\".";

/// Configuration: `ask_user.require_options = false` accepts an open question (switch used to
/// show what the check prevents); `ask_user.reuse_answers = false` always asks.
const REQUIRE_OPTIONS_KEY: &str = "ask_user.require_options";
const REUSE_KEY: &str = "ask_user.reuse_answers";

/// The schema states the count in words only: the core enforces it ([`check_options`]), and
/// not every provider accepts array-length keywords.
pub(crate) fn schema() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "ask-user",
            "description": "Ask the user a structured question when two readings of the request lead to materially different work. Offer 2-4 concrete, mutually exclusive options (the user may still type a free-form answer). An open question without options is rejected. Do not ask about things with an obvious default, or what the user, AGENTS.md or memory already said.",
            "parameters": {
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "options": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "2-4 concrete choices, each a short answer the user can pick"
                    }
                },
                "required": ["question", "options"]
            }
        }
    })
}

/// Words that are not an option but a way of not offering one.
const VAGUE: &[&str] = &[
    "other",
    "something else",
    "anything",
    "anything else",
    "whatever",
    "other (please specify)",
    "etc",
    "...",
    "…",
];

/// The question's options, checked: 2–4, non-empty, distinct, concrete. `Err` is the tool
/// result that tells the model how to ask instead.
pub(crate) fn check_options(options: Option<&[String]>) -> Result<Vec<String>, String> {
    let opts: Vec<String> = options
        .unwrap_or_default()
        .iter()
        .map(|o| o.trim().to_string())
        .collect();
    let ask_again = "Ask again with ask-user and 2-4 concrete options (short, mutually exclusive answers the user can pick; they may still type their own). The question was not shown to the user.";
    if opts.is_empty() {
        return Err(format!(
            "ask-user rejected: an open question without options. {ask_again}"
        ));
    }
    if opts.len() < MIN_OPTIONS {
        return Err(format!(
            "ask-user rejected: one option is not a choice. {ask_again}"
        ));
    }
    if opts.len() > MAX_OPTIONS {
        return Err(format!(
            "ask-user rejected: {} options are too many to choose from. {ask_again}",
            opts.len()
        ));
    }
    let mut seen: Vec<String> = Vec::new();
    for o in &opts {
        let low = o.to_lowercase();
        if o.is_empty() || VAGUE.contains(&low.as_str()) {
            return Err(format!(
                "ask-user rejected: {:?} is not a concrete option. {ask_again}",
                o
            ));
        }
        if seen.contains(&low) {
            return Err(format!(
                "ask-user rejected: the option {:?} is offered twice. {ask_again}",
                o
            ));
        }
        seen.push(low);
    }
    Ok(opts)
}

pub(crate) trait AskExt {
    fn config_flag(&self, key: &str) -> bool;
    fn ask_user(&self, args: &AskUserParams) -> ToolOutput;
    fn known_answer(&self, question: &str, options: &[String]) -> Option<reuse::Found>;
}

impl AskExt for Session {
    fn config_flag(&self, key: &str) -> bool {
        self.config().get(key).and_then(|v| v.as_bool()) != Some(false)
    }

    /// The `ask-user` tool call (the hook in `tool_call/mod.rs`).
    fn ask_user(&self, args: &AskUserParams) -> ToolOutput {
        // Headless planning: the absent human's answer (once), then a permanent denial.
        if let Some(out) = yuyao_core::features()
            .filter_map(|f| f.ask_answer)
            .find_map(|answer| answer(self))
        {
            return out;
        }
        let question = args.question.trim().to_string();
        if question.is_empty() {
            return ToolOutput::err(
                "ask-user rejected: missing 'question'. Ask again with a question and 2-4 concrete options.",
            );
        }
        let options = if self.config_flag(REQUIRE_OPTIONS_KEY) {
            match check_options(args.options.as_deref()) {
                Ok(o) => o,
                Err(e) => {
                    self.lock().trajectory.record(
                        "ask_user",
                        json!({"question": question, "options": args.options, "rejected": e}),
                    );
                    return ToolOutput::err(e);
                }
            }
        } else {
            args.options.clone().unwrap_or_default()
        };
        if self.config_flag(REUSE_KEY)
            && let Some(found) = self.known_answer(&question, &options)
        {
            self.lock().trajectory.record(
                "ask_user",
                json!({"question": question, "options": options, "answer": found.answer, "source": found.source}),
            );
            self.notice(
                yuyao_protocol::NoticeLevel::Info,
                format!(
                    "question answered from {}: {} → {}",
                    found.source, question, found.answer
                ),
            );
            return ToolOutput::ok(format!(
                "Answered without asking the user, from {}: {}\n(The user was not interrupted. If this does not settle the question, proceed with it and say so.)",
                found.source, found.answer
            ));
        }
        // Headless (`-p`, run_agent.sh, agent_api): nobody reads the question.
        let answer = match self.handler() {
            Some(h) if !self.options().headless => h.request(&Request::AskUser {
                question: question.clone(),
                options: options.clone(),
            }),
            _ => None,
        };
        let answer = answer.filter(|a| !a.trim().is_empty());
        self.lock().trajectory.record(
            "ask_user",
            json!({"question": question, "options": options, "answer": answer,
                   "assumed": answer.is_none()}),
        );
        match answer {
            // The TUI's dismissal is no answer: never reused as one (`reuse::from_history`).
            Some(a) if a.trim().starts_with("(the user dismissed") => ToolOutput::ok(
                "The user dismissed the question without answering. Do not ask it again; take the safest reading and state it.",
            ),
            Some(a) => ToolOutput::ok(format!("The user answered: {}", a.trim())),
            None => {
                // The completion check lists it as "assumed: …".
                for assumed in yuyao_core::features().filter_map(|f| f.assumed) {
                    assumed(self, &question);
                }
                ToolOutput::ok(NO_HUMAN)
            }
        }
    }

    /// An answer the session, memory or AGENTS.md already holds for this question.
    fn known_answer(&self, question: &str, options: &[String]) -> Option<reuse::Found> {
        if let Some(a) = reuse::from_history(&self.lock().history, question) {
            return Some(reuse::Found {
                answer: a,
                source: "an earlier answer in this session".into(),
            });
        }
        for (source, lines) in yuyao_core::features()
            .filter_map(|f| f.remembered)
            .flat_map(|remembered| remembered(self))
        {
            if let Some(a) = reuse::from_lines(&lines, question, options) {
                return Some(reuse::Found { answer: a, source });
            }
        }
        if !self.options().no_memory {
            let cwd = self.tool_context().cwd();
            for (path, text) in
                yuyao_extension_files::conventions::convention_files(&self.paths().project, &cwd)
            {
                let lines: Vec<String> = text.lines().map(str::to_string).collect();
                if let Some(a) = reuse::from_lines(&lines, question, options) {
                    return Some(reuse::Found {
                        answer: a,
                        source: format!("{}", path.display()),
                    });
                }
            }
        }
        None
    }
}

static TOOLS: yuyao_core::FeatureTools = yuyao_core::FeatureTools {
    specs: &[yuyao_core::registry::core(
        "ask-user",
        false,
        |s, _, call, _| match yuyao_tools::ToolArgs::parse("ask-user", &call.arguments) {
            Ok(yuyao_tools::ToolArgs::AskUser(a)) => (s.ask_user(&a), false),
            Ok(_) => (
                yuyao_tools::ToolOutput::err("ask-user: unexpected arguments"),
                false,
            ),
            Err(e) => (yuyao_tools::ToolOutput::err(e), false),
        },
    )],
    summaries: &[(
        "ask-user",
        "Ask the user a structured question with concrete options",
    )],
    names: |_| vec!["ask-user"],
    schemas: |_, ok| {
        if ok("ask-user") {
            vec![schema()]
        } else {
            Vec::new()
        }
    },
    beside: None,
};

/// What this feature adds to a session (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "ask",
    tools: Some(&TOOLS),
    ..yuyao_core::Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::check_options;

    fn o(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_must_be_two_to_four_concrete_choices() {
        assert!(check_options(None).unwrap_err().contains("open question"));
        assert!(check_options(Some(&o(&["only"]))).is_err());
        assert!(check_options(Some(&o(&["a", "b", "c", "d", "e"]))).is_err());
        assert!(check_options(Some(&o(&["sqlite", "Other"]))).is_err());
        assert!(check_options(Some(&o(&["x", " X "]))).is_err());
        assert!(check_options(Some(&o(&["x", ""]))).is_err());
        assert_eq!(
            check_options(Some(&o(&[" sqlite", "postgres "]))).unwrap(),
            o(&["sqlite", "postgres"])
        );
    }
}
