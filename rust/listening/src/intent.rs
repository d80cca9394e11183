//! Intent line per tool batch (seed 000 #6): every batch is preceded by a one-line "why" —
//! the assistant's text before the calls, or the calls' `description` fields. A batch that
//! came with none is shown as such, and the next request carries a short note asking the
//! model to state one (appended, never a rewrite, and no extra model call).

use crate::Facts;
#[allow(unused_imports)]
use crate::session_ext::*;

use serde_json::json;
use yuyao_core::Session;
use yuyao_protocol::{Event, ToolCall, canonical_tool_name};
use yuyao_tools::ToolArgs;

/// The note appended before the next request when a batch came without a "why".
pub const MISSING_INTENT_NOTE: &str = "[intent] Say why in one line before each tool batch.";

/// Whether the `silent`-th batch in a row without a reason brings the note back: the first
/// does, then the 11th, 31st, 71st, 151st… (the gap doubles from 10). A model that ignored the
/// note gains less from each repeat, and each note is bytes no prompt cache reuses (it lives
/// for one request): 7 notes in 1,000 silent steps instead of 100 at a fixed gap of ten.
pub fn reminds_at(silent: usize) -> bool {
    silent >= 1 && (silent - 1).is_multiple_of(10) && ((silent - 1) / 10 + 1).is_power_of_two()
}

/// A batch's "why" and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchIntent {
    /// The line shown above the batch (a placeholder naming the calls when none was stated).
    pub line: String,
    /// The model stated it (text or descriptions).
    pub stated: bool,
    /// `text`, `description` or `none`.
    pub source: &'static str,
}

/// The intent of a batch: the model's first line of text, else its calls' descriptions.
pub fn batch_intent(text: &str, calls: &[ToolCall]) -> BatchIntent {
    if let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) {
        return BatchIntent {
            line: line.chars().take(160).collect(),
            stated: true,
            source: "text",
        };
    }
    let descriptions: Vec<String> = calls
        .iter()
        .filter_map(|c| {
            let name = canonical_tool_name(&c.name)?;
            let args = ToolArgs::parse(name, &c.arguments).ok()?;
            args.description()
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_string)
        })
        .collect();
    if !descriptions.is_empty() {
        let joined = descriptions.join("; ");
        return BatchIntent {
            line: joined.chars().take(160).collect(),
            stated: true,
            source: "description",
        };
    }
    let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    BatchIntent {
        line: format!("(no intent stated) {}", names.join(", ")),
        stated: false,
        source: "none",
    }
}

pub(crate) trait IntentExt {
    fn announce_batch(&self, intent: &BatchIntent, calls: &[ToolCall]);
}

impl IntentExt for Session {
    /// Shows the batch's intent (event for the fronts, a trajectory record per batch) and,
    /// when the model stated none, queues the note for its next request
    /// (`intent.remind`, default true).
    fn announce_batch(&self, intent: &BatchIntent, calls: &[ToolCall]) {
        self.emit(Event::Intent {
            text: intent.line.clone(),
            stated: intent.stated,
            calls: calls.len(),
        });
        let remind = self
            .config()
            .get("intent.remind")
            .and_then(|v| v.as_bool())
            .unwrap_or(true);
        let mut st = self.lock();
        let step = st.steps;
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        st.trajectory.record(
            "intent",
            json!({"step": step, "text": intent.line, "stated": intent.stated,
                   "source": intent.source, "calls": names}),
        );
        // For the next request only (seed 000 #3's reminder costs one request, not the rest
        // of the session), at the silent batches `reminds_at` picks while the model stays
        // silent; a stated reason starts the count over.
        let silent = &mut st.facts().silent_batches;
        *silent = if intent.stated { 0 } else { *silent + 1 };
        if reminds_at(*silent) && remind {
            st.view_notes.push(MISSING_INTENT_NOTE.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn the_note_comes_back_with_a_doubling_gap() {
        let at: Vec<usize> = (0..=700).filter(|&n| reminds_at(n)).collect();
        assert_eq!(at, [1, 11, 31, 71, 151, 311, 631]);
    }

    #[test]
    fn text_first_then_descriptions_then_none() {
        let c = [call(
            "bash",
            r#"{"command":"ls","description":"list files"}"#,
        )];
        let i = batch_intent("\n  Checking the layout first.\nmore", &c);
        assert_eq!(
            (i.line.as_str(), i.stated, i.source),
            ("Checking the layout first.", true, "text")
        );
        let i = batch_intent("", &c);
        assert_eq!((i.line.as_str(), i.source), ("list files", "description"));
        let i = batch_intent(
            "  ",
            &[
                call("bash", r#"{"command":"ls"}"#),
                call("read", r#"{"file_path":"a"}"#),
            ],
        );
        assert!(
            !i.stated && i.source == "none" && i.line.contains("bash, read"),
            "{i:?}"
        );
    }
}
