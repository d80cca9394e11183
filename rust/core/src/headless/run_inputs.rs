//! The two input files of run_agent.sh: the task (plain text, or a JSON / TOML / YAML
//! document with a task key) and the budget (a JSON / TOML / YAML mapping of limits), read
//! with maintained parsers (serde_json, toml, serde_yaml_ng). Text that is not valid UTF-8 is
//! repaired (U+FFFD) before parsing. Every problem is a usage error that names the file and,
//! for a syntax error, the line.

use serde_json::Value;
use std::path::Path;

/// Keys that hold the task in a task document, in order of preference.
const TASK_KEYS: &[&str] = &["task", "problem_statement", "instruction", "prompt"];
const STEP_KEYS: &[&str] = &["max_steps", "step_limit", "steps", "max_turns"];
const COST_KEYS: &[&str] = &["max_cost_usd", "cost_limit", "max_budget_usd"];
const WALL_KEYS: &[&str] = &["max_wall_seconds", "time_limit_seconds", "timeout_seconds"];

#[derive(Debug, Default, PartialEq)]
pub struct Budget {
    pub max_steps: Option<u32>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_seconds: Option<f64>,
    /// What was ignored or means "no limit", for the trace.
    pub notes: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    Json,
    Toml,
    Yaml,
}

impl Format {
    fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "json" => Some(Format::Json),
            "toml" => Some(Format::Toml),
            "yaml" | "yml" => Some(Format::Yaml),
            _ => None,
        }
    }

    fn parse(self, text: &str) -> Result<Value, String> {
        match self {
            Format::Json => serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}")),
            Format::Toml => toml::from_str::<toml::Table>(text)
                .map_err(|e| format!("invalid TOML: {}", one_line(&e.to_string())))
                .and_then(|t| serde_json::to_value(t).map_err(|e| e.to_string())),
            Format::Yaml => {
                let mut v: serde_yaml_ng::Value =
                    serde_yaml_ng::from_str(text).map_err(|e| format!("invalid YAML: {e}"))?;
                v.apply_merge().map_err(|e| format!("invalid YAML: {e}"))?;
                Ok(yaml_to_json(v))
            }
        }
    }
}

/// YAML data as JSON data: keys that are not strings (`2024: …`, `true: …`) are written as
/// text rather than refused, and tags are dropped.
fn yaml_to_json(v: serde_yaml_ng::Value) -> Value {
    use serde_yaml_ng::Value as Y;
    match v {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => serde_json::to_value(&n).unwrap_or(Value::Null),
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_json).collect()),
        Y::Mapping(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let key = match yaml_to_json(k) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Y::Tagged(t) => yaml_to_json(t.value),
    }
}

/// A parser's message on one line (toml's shows the offending line under a caret).
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "|")
        .collect::<Vec<_>>()
        .join(" ")
}

fn read_text(path: &Path, role: &str) -> Result<String, String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{role} '{shown}' does not exist"),
        std::io::ErrorKind::IsADirectory => format!("{role} '{shown}' is a directory"),
        _ => format!("{role} '{shown}' cannot be read: {e}"),
    })?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.strip_prefix('\u{feff}').unwrap_or(&text).to_string())
}

/// The task: a document's task entry, else the whole text (trimmed).
pub fn read_task(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let text = read_text(path, "task file")?;
    if text.trim().is_empty() {
        return Err(format!("task file '{shown}' is empty"));
    }
    let document = match Format::of(path) {
        Some(format) => Some(
            format
                .parse(&text)
                .map_err(|e| format!("task file '{shown}' is malformed: {e}"))?,
        ),
        None => sniff_task_document(&text),
    };
    let Some(document) = document else {
        return Ok(text.trim().to_string());
    };
    if let Value::String(s) = &document
        && !s.trim().is_empty()
    {
        return Ok(s.trim().to_string());
    }
    TASK_KEYS
        .iter()
        .find_map(|k| document.get(k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "task file '{shown}' has no non-empty {} entry",
                TASK_KEYS.join(" / ")
            )
        })
}

/// A task file without a known extension is a document only when it clearly is one: a JSON
/// object, or a YAML mapping with a task key. Anything else is the task's own text.
fn sniff_task_document(text: &str) -> Option<Value> {
    let candidates = if text.trim_start().starts_with('{') {
        Format::Json.parse(text)
    } else {
        Format::Yaml
            .parse(text)
            .map(|v| if is_task_mapping(&v) { v } else { Value::Null })
    };
    candidates.ok().filter(Value::is_object)
}

fn is_task_mapping(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| TASK_KEYS.iter().any(|k| m.contains_key(*k)))
}

/// The limits: a step limit (`max_steps`, `step_limit`, `steps`, `max_turns`), a cost limit in
/// USD and a wall-clock limit in seconds, found at any depth (`agent: {step_limit: 30}`);
/// 0 means no limit; other keys are noted.
pub fn read_budget(path: &Path) -> Result<Budget, String> {
    let shown = path.display();
    let text = read_text(path, "budget file")?;
    let document = if text.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        parse_budget_document(path, &text)?
    };
    let data = match document {
        Value::Object(m) => m,
        Value::Null => Default::default(), // a YAML file of comments only
        other => {
            return Err(format!(
                "budget file '{shown}' is malformed: expected a mapping of limits, got {}",
                kind(&other)
            ));
        }
    };
    let mut budget = Budget::default();
    let mut found: Vec<(&str, String)> = Vec::new();
    let mut leaves = Vec::new();
    flatten(&data, "", &mut leaves);
    for (dotted, leaf, value) in leaves {
        let field = [
            ("steps", STEP_KEYS),
            ("cost", COST_KEYS),
            ("wall", WALL_KEYS),
        ]
        .into_iter()
        .find(|(_, keys)| keys.contains(&leaf.as_str()))
        .map(|(f, _)| f);
        let Some(field) = field else {
            budget.notes.push(format!("ignored budget key '{dotted}'"));
            continue;
        };
        if let Some((_, first)) = found.iter().find(|(f, _)| *f == field) {
            budget.notes.push(format!(
                "ignored budget key '{dotted}': '{first}' already set it"
            ));
            continue;
        }
        let number = limit_number(value, &dotted, path, field == "steps")?;
        found.push((field, dotted.clone()));
        if number == 0.0 {
            // The convention of step_limit/cost_limit: 0 = unlimited.
            budget
                .notes
                .push(format!("budget key '{dotted}' is 0: no limit"));
            continue;
        }
        match field {
            "steps" => budget.max_steps = Some(number.min(u32::MAX as f64) as u32),
            "cost" => budget.max_cost_usd = Some(number),
            _ => budget.max_wall_seconds = Some(number),
        }
    }
    if budget.max_steps.is_none() {
        budget
            .notes
            .push("the budget file sets no step limit".to_string());
    }
    Ok(budget)
}

/// By extension; otherwise the first of JSON, TOML, YAML that reads the text as a mapping.
fn parse_budget_document(path: &Path, text: &str) -> Result<Value, String> {
    let shown = path.display();
    if let Some(format) = Format::of(path) {
        return format
            .parse(text)
            .map_err(|e| format!("budget file '{shown}' is malformed: {e}"));
    }
    [Format::Json, Format::Toml, Format::Yaml]
        .into_iter()
        .filter_map(|f| f.parse(text).ok())
        .find(Value::is_object)
        .ok_or_else(|| {
            format!("budget file '{shown}' is malformed (expected a JSON, TOML or YAML mapping)")
        })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// (dotted path, leaf key, value) for every leaf of nested mappings.
fn flatten<'a>(
    map: &'a serde_json::Map<String, Value>,
    prefix: &str,
    out: &mut Vec<(String, String, &'a Value)>,
) {
    for (key, value) in map {
        let dotted = format!("{prefix}{key}");
        match value {
            Value::Object(inner) => flatten(inner, &format!("{dotted}."), out),
            _ => out.push((dotted, key.clone(), value)),
        }
    }
}

fn limit_number(value: &Value, key: &str, path: &Path, whole: bool) -> Result<f64, String> {
    let shown = path.display();
    let number = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
    .ok_or_else(|| format!("budget file '{shown}': '{key}' must be a number, got {value}"))?;
    if !number.is_finite() || number < 0.0 {
        return Err(format!(
            "budget file '{shown}': '{key}' must be >= 0, got {value}"
        ));
    }
    if whole && number.fract() != 0.0 {
        return Err(format!(
            "budget file '{shown}': '{key}' must be a whole number, got {value}"
        ));
    }
    Ok(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn task_documents_and_plain_text() {
        for (name, text, want) in [
            ("t.txt", "  just do it \n", "just do it"),
            ("t", "{\"prompt\": \"from json\"}", "from json"),
            ("t", "instruction: from yaml\nid: 3\n", "from yaml"),
            (
                "t",
                "Title: not a task key\nBody: x\n",
                "Title: not a task key\nBody: x",
            ),
            ("t.yaml", "task: >\n  folded\n  lines\n", "folded lines"),
            (
                "t.yml",
                "2024: year\ntrue: yes\nbase: &b {task: merged}\nx:\n  <<: *b\ntask: !str tagged\n",
                "tagged",
            ),
            ("t.toml", "task = '''\nkeep # this\n'''\n", "keep # this"),
            ("t.json", "\u{feff}\"a bare string\"", "a bare string"),
        ] {
            let (_d, p) = file(name, text.as_bytes());
            assert_eq!(read_task(&p).as_deref(), Ok(want), "{name}: {text:?}");
        }
    }

    #[test]
    fn task_errors_name_the_file_and_line() {
        let (_d, p) = file("t.yaml", b"task: [open\nx: 1\n");
        let e = read_task(&p).unwrap_err();
        assert!(e.contains("t.yaml") && e.contains("line"), "{e}");
        let (_d, p) = file("t.json", b"{\"other\": 1}");
        assert!(read_task(&p).unwrap_err().contains("no non-empty task"));
    }

    #[test]
    fn invalid_utf8_is_repaired() {
        let (_d, p) = file("t.yaml", b"task: caf\xe9 \xff\n");
        assert_eq!(read_task(&p).unwrap(), "caf\u{fffd} \u{fffd}");
    }

    #[test]
    fn budgets_in_every_format() {
        for (name, text) in [
            (
                "b.json",
                "{\"agent\": {\"step_limit\": 7}, \"max_cost_usd\": \"0.5\"}",
            ),
            ("b.toml", "max_cost_usd = 0.5\n[agent]\nstep_limit = 7\n"),
            (
                "b.yml",
                "agent:\n  step_limit: 7 # steps\nmax_cost_usd: 0.5\n",
            ),
            ("b", "max_cost_usd = 0.5\nagent = { step_limit = 7 }\n"),
        ] {
            let (_d, p) = file(name, text.as_bytes());
            let b = read_budget(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(b.max_steps, Some(7), "{name}");
            assert_eq!(b.max_cost_usd, Some(0.5), "{name}");
        }
    }

    #[test]
    fn budget_zero_duplicates_and_unknown_keys_are_noted() {
        let (_d, p) = file("b.yaml", b"max_steps: 0\nsteps: 4\ncolor: red\n");
        let b = read_budget(&p).unwrap();
        assert_eq!(b.max_steps, None);
        let notes = b.notes.join("\n");
        assert!(notes.contains("'color'"), "{notes}");
        assert!(notes.contains("already set it"), "{notes}");
        assert!(notes.contains("no limit"), "{notes}");
    }

    #[test]
    fn budget_errors() {
        for (name, text, words) in [
            ("b.json", "{\"max_steps\": true}", "must be a number"),
            ("b.json", "{\"max_steps\": 1.5}", "whole number"),
            ("b.json", "{\"max_cost_usd\": -1}", ">= 0"),
            ("b.yaml", "[1, 2]", "got a list"),
            ("b.toml", "max_steps = = 1", "line 1"),
            ("b", "not a mapping at all", "malformed"),
        ] {
            let (_d, p) = file(name, text.as_bytes());
            let e = read_budget(&p).unwrap_err();
            assert!(e.contains(words) && e.contains(name), "{name}: {e}");
        }
    }
}
