//! LSP answers rendered as short text for the model: `path:line:col` (1-based, relative to
//! the project) with the source line when the file may be quoted.

use super::client::uri_path;
use crate::LspServersExt;
use serde_json::Value;
use std::path::Path;
use yuyao_core::Session;

/// Lines of a listing kept; the rest is counted.
const MAX_ITEMS: usize = 100;

fn severity(d: &Value) -> (u64, &'static str) {
    match d.get("severity").and_then(Value::as_u64).unwrap_or(1) {
        1 => (1, "error"),
        2 => (2, "warning"),
        3 => (3, "info"),
        _ => (4, "hint"),
    }
}

fn one_diagnostic(d: &Value) -> String {
    let line = d
        .pointer("/range/start/line")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        + 1;
    let col = d
        .pointer("/range/start/character")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        + 1;
    let msg = d
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let msg = msg.lines().next().unwrap_or("");
    let source = d
        .get("source")
        .and_then(Value::as_str)
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    format!("  {}:{line}:{col} {msg}{source}", severity(d).1)
}

/// After an edit: errors and warnings only, at most `cap`, the rest counted.
pub fn edit_diagnostics(shown: &str, diags: &[Value], cap: usize) -> String {
    let mut kept: Vec<&Value> = diags.iter().filter(|d| severity(d).0 <= 2).collect();
    if kept.is_empty() {
        return format!("[lsp] {shown}: no errors or warnings");
    }
    kept.sort_by_key(|d| {
        (
            severity(d).0,
            d.pointer("/range/start/line").and_then(Value::as_u64),
        )
    });
    let errors = kept.iter().filter(|d| severity(d).0 == 1).count();
    let mut out = format!(
        "[lsp] {shown}: {errors} error(s), {} warning(s)",
        kept.len() - errors
    );
    for d in kept.iter().take(cap) {
        out.push('\n');
        out.push_str(&one_diagnostic(d));
    }
    if kept.len() > cap {
        out.push_str(&format!("\n  … {} more", kept.len() - cap));
    }
    out
}

/// The `diagnostics` operation: every severity.
pub fn all_diagnostics(shown: &str, diags: &[Value]) -> String {
    if diags.is_empty() {
        return format!("{shown}: no diagnostics");
    }
    let mut sorted: Vec<&Value> = diags.iter().collect();
    sorted.sort_by_key(|d| d.pointer("/range/start/line").and_then(Value::as_u64));
    let mut out = format!("{shown}: {} diagnostic(s)", diags.len());
    for d in sorted.iter().take(MAX_ITEMS) {
        out.push('\n');
        out.push_str(&one_diagnostic(d));
    }
    if sorted.len() > MAX_ITEMS {
        out.push_str(&format!("\n  … {} more", sorted.len() - MAX_ITEMS));
    }
    out
}

/// `path:line:col` of a location, with its source line when quotable.
fn location(s: &Session, uri: &str, range: &Value) -> String {
    let line = range
        .pointer("/start/line")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let col = range
        .pointer("/start/character")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let Some(path) = uri_path(uri) else {
        return format!("{uri}:{}:{}", line + 1, col + 1);
    };
    let mut out = format!("{}:{}:{}", s.lsp_display(&path), line + 1, col + 1);
    if s.lsp_quotable(&path)
        && let Some(text) = source_line(&path, line as usize)
    {
        out.push_str(&format!("  {}", text.trim()));
    }
    out
}

fn source_line(path: &Path, line: usize) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let l = text.lines().nth(line)?;
    Some(l.chars().take(200).collect())
}

/// Location | Location[] | LocationLink[] | null.
pub fn locations(s: &Session, res: &Value, what: &str) -> String {
    let items: Vec<&Value> = match res {
        Value::Array(a) => a.iter().collect(),
        Value::Null => Vec::new(),
        one => vec![one],
    };
    if items.is_empty() {
        return format!("no {what} found at that position (is it on the symbol's name?)");
    }
    let mut out = format!("{} {what}(s):", items.len());
    for it in items.iter().take(MAX_ITEMS) {
        let (uri, range) = match it.get("targetUri") {
            Some(u) => (
                u.as_str().unwrap_or(""),
                it.get("targetSelectionRange")
                    .or_else(|| it.get("targetRange"))
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
            None => (
                it.get("uri").and_then(Value::as_str).unwrap_or(""),
                it.get("range").cloned().unwrap_or(Value::Null),
            ),
        };
        out.push_str("\n  ");
        out.push_str(&location(s, uri, &range));
    }
    if items.len() > MAX_ITEMS {
        out.push_str(&format!("\n  … {} more", items.len() - MAX_ITEMS));
    }
    out
}

pub fn hover(res: &Value) -> String {
    fn text(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Array(a) => a.iter().map(text).collect::<Vec<_>>().join("\n"),
            Value::Object(o) => o
                .get("value")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            _ => String::new(),
        }
    }
    let t = res.get("contents").map(text).unwrap_or_default();
    if t.trim().is_empty() {
        "no hover information at that position".into()
    } else {
        t.trim().to_string()
    }
}

fn kind_name(k: u64) -> &'static str {
    const KINDS: [&str; 26] = [
        "?",
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum-member",
        "struct",
        "event",
        "operator",
    ];
    KINDS.get(k as usize).copied().unwrap_or("type-parameter")
}

/// DocumentSymbol[] (nested) or SymbolInformation[] (flat, with locations).
pub fn symbols(s: &Session, res: &Value, title: &str) -> String {
    let mut lines = Vec::new();
    fn walk(v: &Value, depth: usize, s: &Session, lines: &mut Vec<String>) {
        let name = v.get("name").and_then(Value::as_str).unwrap_or("?");
        let kind = kind_name(v.get("kind").and_then(Value::as_u64).unwrap_or(0));
        let indent = "  ".repeat(depth + 1);
        if let Some(loc) = v.get("location") {
            let uri = loc.get("uri").and_then(Value::as_str).unwrap_or("");
            let range = loc.get("range").cloned().unwrap_or(Value::Null);
            lines.push(format!(
                "{indent}{kind} {name}  {}",
                location(s, uri, &range)
            ));
        } else {
            let line = v
                .pointer("/selectionRange/start/line")
                .or_else(|| v.pointer("/range/start/line"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            lines.push(format!("{indent}{kind} {name}  line {}", line + 1));
        }
        for c in v
            .get("children")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(c, depth + 1, s, lines);
        }
    }
    for v in res.as_array().into_iter().flatten() {
        walk(v, 0, s, &mut lines);
    }
    if lines.is_empty() {
        return format!("no {title}");
    }
    let total = lines.len();
    let mut out = format!("{total} {title}:\n");
    out.push_str(&lines[..total.min(MAX_ITEMS * 2)].join("\n"));
    if total > MAX_ITEMS * 2 {
        out.push_str(&format!("\n  … {} more", total - MAX_ITEMS * 2));
    }
    out
}
