//! Reading tool arguments with errors that say what to send instead.

use serde_json::Value;

pub type ArgResult<T> = Result<T, String>;

/// A required string argument; `aliases` are accepted spellings (`path` for `file_path`).
pub fn string(args: &Value, name: &str, aliases: &[&str]) -> ArgResult<String> {
    opt_string(args, name, aliases)?.ok_or_else(|| format!("missing required argument '{name}'"))
}

pub fn opt_string(args: &Value, name: &str, aliases: &[&str]) -> ArgResult<Option<String>> {
    for key in std::iter::once(name).chain(aliases.iter().copied()) {
        match args.get(key) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => return Ok(Some(s.clone())),
            Some(other) => {
                return Err(format!(
                    "argument '{key}' must be a string, got {}",
                    kind(other)
                ));
            }
        }
    }
    Ok(None)
}

pub fn opt_bool(args: &Value, name: &str) -> ArgResult<Option<bool>> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
        Some(other) => Err(format!(
            "argument '{name}' must be true or false, got {}",
            kind(other)
        )),
    }
}

/// An optional integer; strings holding integers are accepted (models send them).
pub fn opt_int(args: &Value, name: &str) -> ArgResult<Option<i64>> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| format!("argument '{name}' must be a whole number, got {n}")),
        Some(Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| format!("argument '{name}' must be a whole number, got \"{s}\"")),
        Some(other) => Err(format!(
            "argument '{name}' must be a whole number, got {}",
            kind(other)
        )),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
