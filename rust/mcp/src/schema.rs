//! A server's input schema in the shape providers accept for function parameters: an object
//! schema at the top (`type: object` with `properties`), without the JSON Schema meta keys
//! some providers reject (`$schema`, `$id`, `$comment`), at every depth.

use serde_json::{Map, Value, json};

const DROPPED: &[&str] = &["$schema", "$id", "$comment"];

pub fn sanitize_schema(schema: &Value) -> Value {
    let mut v = strip(schema);
    match v.as_object_mut() {
        Some(o) => {
            if o.get("type").and_then(Value::as_str) != Some("object") {
                // A non-object top level is not a valid parameter list: take no arguments.
                if o.contains_key("type") {
                    return json!({"type": "object", "properties": {}});
                }
                o.insert("type".into(), json!("object"));
            }
            if !o.get("properties").is_some_and(Value::is_object) {
                o.insert("properties".into(), Value::Object(Map::new()));
            }
            if o.get("required").is_some_and(|r| !r.is_array()) {
                o.remove("required");
            }
            v
        }
        None => json!({"type": "object", "properties": {}}),
    }
}

fn strip(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| !DROPPED.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_keys_go_and_the_top_level_is_an_object() {
        let s = sanitize_schema(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"tz": {"type": "string", "$comment": "IANA"}},
            "required": ["tz"]
        }));
        assert_eq!(
            s,
            json!({"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]})
        );
        assert_eq!(
            sanitize_schema(&json!({})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            sanitize_schema(&json!({"type": "string"})),
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn tool_names_fit_what_providers_accept() {
        assert_eq!(
            crate::connect::full_tool_name("time", "get.current time"),
            "mcp__time__get_current_time"
        );
        assert_eq!(
            crate::connect::full_tool_name("s", &"x".repeat(100)).len(),
            64
        );
        assert_eq!(
            crate::split_tool_name("mcp__time__get_time"),
            Some(("time", "get_time"))
        );
    }
}
