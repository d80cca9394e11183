//! yuyao-json-answer: `--json-schema <file>`, the turn's final answer as one JSON document
//! valid against the schema (drafts 2020-12 and 7, `jsonschema` without network or file
//! `$ref` resolving) — a feature outside the core, registered with its kernel
//! (`yuyao_core::Feature`, the `answer_format` moment): removing it is deleting this crate
//! and its registration line (the core then refuses `--json-schema`).
//!
//! The schema is checked when the session opens (not JSON, not a valid schema, an unknown
//! draft or a `$ref` that would need fetching → a usage error, before any model call). The
//! request asks for the format with `response_format: {type: json_schema}` when
//! `model.response_format` allows it (`auto` falls back to the instruction alone once the
//! endpoint refuses the field), and the turn always carries the instruction too. An answer
//! that does not validate gets one repair turn with the validation errors; a second invalid
//! answer ends the turn as an error listing them.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use yuyao_core::{AnswerFormat, CoreError, Feature, Session, Settled as Verdict};
use yuyao_model::{ChatRequest, ModelError};

/// Validation errors shown to the model and to the user (the rest are counted).
const MAX_ERRORS: usize = 12;

struct JsonAnswer {
    schema: Value,
    validator: jsonschema::Validator,
    /// `auto` saw the endpoint refuse `response_format`: the instruction alone from now on.
    format_refused: AtomicBool,
    /// A turn whose answer is not the final one (the architect's plan): no format, no check.
    suspended: AtomicBool,
}

/// The session's schema, if `--json-schema` named one (this feature's state).
struct Schema(Option<JsonAnswer>);

impl JsonAnswer {
    /// Reads and checks the schema file (`path` relative to the process's directory: where
    /// the user typed it).
    fn load(path: &str) -> Result<JsonAnswer, CoreError> {
        let usage = |why: String| CoreError::Usage(format!("--json-schema {path}: {why}"));
        let text = std::fs::read_to_string(path).map_err(|e| usage(format!("cannot read: {e}")))?;
        let schema: Value =
            serde_json::from_str(&text).map_err(|e| usage(format!("not valid JSON: {e}")))?;
        JsonAnswer::from_schema(schema).map_err(usage)
    }

    fn from_schema(schema: Value) -> Result<JsonAnswer, String> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err("a JSON Schema is an object (or true/false)".into());
        }
        // Validates the schema against its draft's meta-schema; remote `$ref`s fail here
        // since no resolver is compiled in.
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| format!("not a valid JSON Schema: {e}"))?;
        Ok(JsonAnswer {
            schema,
            validator,
            format_refused: AtomicBool::new(false),
            suspended: AtomicBool::new(false),
        })
    }

    /// The user note that states the format (sent with every turn's prompt).
    fn instruction(&self) -> String {
        format!(
            "[answer format] Your final answer must be exactly one JSON document that is valid against this JSON Schema, with nothing before or after it (no prose, no code fence). Use tools first if the task needs them.\nSchema:\n{}",
            serde_json::to_string_pretty(&self.schema).unwrap_or_default()
        )
    }

    /// The validation errors of `text` (empty when it is a valid document), and the document.
    fn check(&self, text: &str) -> (Option<Value>, Vec<String>) {
        let Some(doc) = extract(text) else {
            return (
                None,
                vec!["the answer is not a JSON document (it must be JSON only)".into()],
            );
        };
        let mut errors: Vec<String> = Vec::new();
        let mut total = 0usize;
        for e in self.validator.iter_errors(&doc) {
            total += 1;
            if errors.len() < MAX_ERRORS {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                errors.push(format!("at {at}: {e}"));
            }
        }
        if total > errors.len() {
            errors.push(format!("… and {} more", total - errors.len()));
        }
        (Some(doc), errors)
    }

    /// Whether the request should carry `response_format` under `setting`.
    fn use_response_format(&self, setting: &str) -> bool {
        match setting {
            "json-schema" => true,
            "instruction" => false,
            _ => !self.format_refused.load(Ordering::SeqCst),
        }
    }
}

/// The JSON document in an answer: the whole text, or inside one code fence, or from the
/// first `{`/`[` to the last `}`/`]` (models add a sentence despite the instruction).
fn extract(text: &str) -> Option<Value> {
    let t = text.trim();
    if let Ok(v) = serde_json::from_str(t) {
        return Some(v);
    }
    let unfenced = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"));
    if let Some(inner) = unfenced
        && let Ok(v) = serde_json::from_str(inner.trim())
    {
        return Some(v);
    }
    let start = t.find(['{', '['])?;
    let end = t.rfind(['}', ']'])?;
    (end > start)
        .then(|| serde_json::from_str(&t[start..=end]).ok())
        .flatten()
}

fn json_answer(s: &Session) -> Option<&JsonAnswer> {
    s.part::<Schema>().0.as_ref()
}

fn response_format_setting(s: &Session) -> String {
    s.config()
        .get("model.response_format")
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "auto".into())
}

/// Suspends (or resumes) `--json-schema` for turns whose answer is not the final one.
fn suspend(s: &Session, on: bool) {
    if let Some(ja) = json_answer(s) {
        ja.suspended.store(on, Ordering::SeqCst);
    }
}

/// The `[answer format]` note for a turn's prompt, with `--json-schema`.
fn instruction(s: &Session) -> Option<String> {
    json_answer(s).map(JsonAnswer::instruction)
}

/// Adds `response_format` to a main-loop request when the schema and the setting ask.
fn apply(s: &Session, req: &mut ChatRequest) {
    let Some(ja) = json_answer(s) else { return };
    if ja.suspended.load(Ordering::SeqCst) {
        return;
    }
    if ja.use_response_format(&response_format_setting(s)) {
        req.extra.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": ja.schema, "strict": false}}),
        );
    }
}

/// With `auto`, an endpoint that rejects `response_format` (HTTP 400 naming it): the
/// session falls back to the instruction alone and the call is made again.
fn refused(s: &Session, e: &ModelError) -> bool {
    let Some(ja) = json_answer(s) else {
        return false;
    };
    let refused = matches!(e, ModelError::Http { status: 400 | 422, message, .. }
        if message.contains("response_format") || message.contains("json_schema"));
    if refused
        && response_format_setting(s) == "auto"
        && !ja.format_refused.swap(true, Ordering::SeqCst)
    {
        s.notice(
            yuyao_protocol::NoticeLevel::Info,
            "the model does not accept response_format; the JSON schema is asked by instruction",
        );
        return true;
    }
    false
}

/// Judges a final answer under `--json-schema` (`None` without one). `repairs` counts the
/// repair turns already given in this turn.
fn settle(s: &Session, text: &str, repairs: &mut u32) -> Option<Verdict> {
    let ja = json_answer(s).filter(|j| !j.suspended.load(Ordering::SeqCst))?;
    let (doc, errors) = ja.check(text);
    if errors.is_empty() {
        let doc = doc.unwrap_or(Value::Null);
        return Some(Verdict::Valid(
            serde_json::to_string_pretty(&doc).unwrap_or_default(),
        ));
    }
    let listed = errors
        .iter()
        .map(|e| format!("- {e}"))
        .collect::<Vec<_>>()
        .join("\n");
    s.lock().trajectory.record(
        "json_schema_invalid",
        json!({"errors": errors, "repair": *repairs}),
    );
    if *repairs == 0 {
        *repairs += 1;
        return Some(Verdict::Repair(format!(
            "Your answer is not valid against the required JSON Schema:\n{listed}\nReply with only the corrected JSON document."
        )));
    }
    Some(Verdict::Fail(format!(
        "the answer is not valid against the JSON schema after one repair turn:\n{listed}"
    )))
}

static FORMAT: AnswerFormat = AnswerFormat {
    instruction,
    apply,
    refused,
    settle,
    suspend,
};

/// The features of this crate, in registration order (one, `--json-schema`).
pub static FEATURES: &[&Feature] = &[&FEATURE];

/// What this feature adds to a session: the schema is read and checked at open.
pub static FEATURE: Feature = Feature {
    name: "json-answer",
    checked_state: Some(|o| {
        let schema = o
            .opts
            .json_schema
            .as_deref()
            .map(JsonAnswer::load)
            .transpose()?;
        Ok(Box::new(Schema(schema)))
    }),
    answer_format: Some(&FORMAT),
    ..Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(schema: Value) -> JsonAnswer {
        JsonAnswer::from_schema(schema).unwrap()
    }

    #[test]
    fn drafts_2020_12_and_7_validate() {
        for draft in [
            "https://json-schema.org/draft/2020-12/schema",
            "http://json-schema.org/draft-07/schema#",
        ] {
            let a = answer(json!({"$schema": draft, "type": "object",
                "required": ["n"], "properties": {"n": {"type": "integer"}}}));
            assert!(a.check(r#"{"n": 3}"#).1.is_empty());
            let (_, errors) = a.check(r#"{"n": "x"}"#);
            assert!(errors[0].contains("/n"), "{errors:?}");
        }
    }

    #[test]
    fn invalid_schemas_and_remote_refs_are_refused() {
        assert!(JsonAnswer::from_schema(json!({"type": 12})).is_err());
        assert!(JsonAnswer::from_schema(json!({"minimum": "x"})).is_err());
        assert!(JsonAnswer::from_schema(json!(["not", "a", "schema"])).is_err());
        assert!(
            JsonAnswer::from_schema(json!({"$ref": "https://example.com/s.json"})).is_err(),
            "a remote $ref must never be fetched"
        );
        assert!(
            JsonAnswer::from_schema(json!({"$schema": "https://example.com/unknown"})).is_err()
        );
    }

    #[test]
    fn documents_are_found_in_fences_and_prose() {
        assert_eq!(extract("```json\n{\"a\":1}\n```"), Some(json!({"a": 1})));
        assert_eq!(extract("Here: {\"a\":1} ok"), Some(json!({"a": 1})));
        assert_eq!(extract("no json here"), None);
    }
}
