//! Deferred tool schemas (`tool-search`). The first request of a conversation is paid for
//! whole (nothing is cached yet), and ~20 full schemas were most of it; most sessions call a
//! handful of tools. So only the core tools go with their full schemas, the other enabled
//! ones are listed in the system prompt by name and one line, and `tool-search` adds their
//! schemas to the END of the `tools` array (a one-time change of the request prefix; the
//! messages stay cached).
//!
//! What is loaded is read from the conversation itself: the `tool-search` calls in the
//! history, in order. The history is what the session file replays, so resume, `/branch`
//! and `/rewind` get the same tools back with no state of their own; a compaction, which
//! rebuilds the prefix anyway, starts over. A deferred tool called without loading runs
//! through the usual path (its name is known, the call is adjudicated as always).
//! `tools.defer = false` sends every schema as before. Pure functions over schemas and
//! messages; the session (yuyao-core's `tool_defer.rs`) supplies the offered tools.

use serde_json::{Value, json};
use yuyao_protocol::{Message, MessageRole, ToolCall, canonical_tool_name};

pub const NAME: &str = "tool-search";

/// Tools with their full schemas from the first request: read, search (grep, glob), change
/// (edit, write) and run (bash), the set Claude Code also sends whole. A model that cannot
/// see grep and glob searches with `bash grep`/`find`, which costs more per call and is
/// adjudicated as a command; deferral is for the long tail only.
const CORE: &[&str] = &["read", "grep", "glob", "write", "edit", "bash"];

/// MCP tools are sent whole while there are at most this many (a few small schemas cost
/// less than a round trip to load them).
const MCP_EAGER_MAX: usize = 8;

/// Deferral pays only when the deferred schemas weigh more than this (a session limited to
/// two or three tools sends them whole rather than a tool-search schema and a round trip).
const MIN_DEFERRED_BYTES: usize = 2000;

/// How the system prompt's list starts; [`listed`] reads the list back from the prompt.
const LIST_HEAD: &str = "\n# More tools\nLoad with tool-search (a direct call works too): ";

/// Longest description an MCP tool gets in the system prompt's list.
const LINE_CHARS: usize = 60;

/// What a deferred built-in tool is for, where its name does not say it (the list is paid
/// for in every conversation's first request). An MCP tool gets its description's first
/// sentence.
fn hint(name: &str) -> Option<&'static str> {
    Some(match name {
        "read-media" => "images, PDFs",
        "browser" => "headless Chromium",
        "monitor" => "watch a background command",
        "task" => "sub-agent",
        "team" => "teammates",
        "lsp" => "definitions, references, diagnostics",
        _ => return None,
    })
}

pub fn name_of(schema: &Value) -> &str {
    schema["function"]["name"].as_str().unwrap_or("")
}

fn schema() -> Value {
    json!({"type": "function", "function": {
        "name": NAME,
        "description": "Load tools from More tools.",
        "parameters": {"type": "object", "properties": {
            "names": {"type": "array", "items": {"type": "string"}}
        }, "required": ["names"]}
    }})
}

/// The first sentence of a description, on one line, at most [`LINE_CHARS`] characters.
fn one_line(description: &str) -> String {
    // No parentheses: the list puts the line in them.
    let flat = description
        .replace(['(', ')'], "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let first = match flat.find(". ") {
        Some(i) => &flat[..i],
        None => flat.trim_end_matches('.'),
    };
    if first.chars().count() <= LINE_CHARS {
        first.to_string()
    } else {
        let cut: String = first.chars().take(LINE_CHARS - 1).collect();
        format!("{cut}…")
    }
}

/// The deferred schema `requested` names: exactly, by a known alias (`WebFetch`), or
/// ignoring case.
fn resolve<'a>(requested: &str, deferred: &'a [Value]) -> Option<&'a str> {
    let r = requested.trim();
    let alias = canonical_tool_name(r);
    deferred
        .iter()
        .map(name_of)
        .find(|n| *n == r || alias == Some(*n) || (!r.is_empty() && n.eq_ignore_ascii_case(r)))
}

/// The names a `tool-search` call asked for (`names` as a list, or one comma-separated
/// string; `name` or `query` as a fallback a model may use).
fn requested(arguments: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let field = ["names", "name", "query", "tools"]
        .iter()
        .find_map(|k| v.get(*k).filter(|x| !x.is_null()));
    let mut out: Vec<String> = match field {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        Some(Value::String(s)) => s.split([',', ' ']).map(str::to_string).collect(),
        _ => Vec::new(),
    };
    out.retain(|s| !s.trim().is_empty());
    out
}

/// The offered tools' full schemas split into (sent from the first request, deferred):
/// the [`CORE`] tools and a few MCP tools (`is_mcp` tells which) are sent whole; deferral
/// applies only when the rest weighs enough.
pub fn split(all: Vec<Value>, is_mcp: impl Fn(&str) -> bool) -> (Vec<Value>, Vec<Value>) {
    let mcp = all.iter().filter(|s| is_mcp(name_of(s))).count();
    let (sent, deferred): (Vec<Value>, Vec<Value>) = all.into_iter().partition(|s| {
        let n = name_of(s);
        CORE.contains(&n) || (mcp <= MCP_EAGER_MAX && is_mcp(n))
    });
    let weight: usize = deferred.iter().map(|s| s.to_string().len()).sum();
    if weight < MIN_DEFERRED_BYTES {
        return (sent.into_iter().chain(deferred).collect(), Vec::new());
    }
    (sent, deferred)
}

/// [`split`]'s halves against the conversation's system prompt: a deferred tool the prompt
/// does not list (it could not work when the prompt was fixed: web-fetch before the network
/// was turned on) is sent whole once it can, since nothing told the model of it.
pub fn against_prompt(
    mut sent: Vec<Value>,
    deferred: Vec<Value>,
    prompt: &str,
) -> (Vec<Value>, Vec<Value>) {
    let in_prompt = listed(prompt);
    let (listed, unlisted): (Vec<Value>, Vec<Value>) = deferred
        .into_iter()
        .partition(|s| in_prompt.iter().any(|n| n == name_of(s)));
    sent.extend(unlisted);
    (sent, listed)
}

/// For the system prompt, fixed with it: the "More tools" section naming the `deferred`
/// tools ("" when none is deferred). The tools sent now need no listing: their schemas are
/// in the request.
pub fn listing(deferred: &[Value], is_mcp: impl Fn(&str) -> bool) -> String {
    if deferred.is_empty() {
        return String::new();
    }
    let listed: Vec<String> = deferred
        .iter()
        .map(|s| {
            let name = name_of(s);
            let what = match hint(name) {
                Some(h) => h.to_string(),
                None if is_mcp(name) => {
                    let d = s["function"]["description"].as_str().unwrap_or("");
                    // Past the "[MCP server x] " the schema's description starts with.
                    one_line(d.split_once("] ").map_or(d, |(_, rest)| rest))
                }
                None => return name.to_string(),
            };
            format!("{name} ({what})")
        })
        .collect();
    format!("{LIST_HEAD}{}.\n", listed.join(", "))
}

/// The tool names a system prompt's "More tools" list gives (`a, b (what for), c.`).
fn listed(prompt: &str) -> Vec<String> {
    let Some((_, rest)) = prompt.split_once(LIST_HEAD) else {
        return Vec::new();
    };
    let line = rest.split('\n').next().unwrap_or("").trim_end_matches('.');
    let mut names = String::new();
    let mut depth = 0usize;
    for ch in line.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => names.push(ch),
            _ => {}
        }
    }
    names
        .split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// The schemas a request carries: those sent whole, then (when some are deferred) the
/// `tool-search` schema and the deferred ones the history loaded. Locks nothing.
pub fn with_loaded(sent: Vec<Value>, deferred: &[Value], history: &[Message]) -> Vec<Value> {
    with_loaded_by(sent, deferred, calls(history))
}

/// [`with_loaded`] from the history's tool calls (the `tool-search` ones at least), in
/// order: the main loop keeps its history's `tool-search` calls as the history grows
/// ([`crate::RequestCache`]) rather than walk the whole history at every step.
pub fn with_loaded_by<'c>(
    mut sent: Vec<Value>,
    deferred: &[Value],
    calls: impl IntoIterator<Item = &'c ToolCall>,
) -> Vec<Value> {
    if deferred.is_empty() {
        return sent;
    }
    sent.push(schema());
    for name in loaded(calls, deferred, None) {
        if let Some(s) = deferred.iter().find(|s| name_of(s) == name) {
            sent.push(s.clone());
        }
    }
    sent
}

/// Does `call` load deferred schemas (a `tool-search` call)?
pub fn is_search(call: &ToolCall) -> bool {
    canonical_tool_name(&call.name) == Some(NAME)
}

/// The tool calls of `history`, in order (those of assistant messages).
fn calls(history: &[Message]) -> impl Iterator<Item = &ToolCall> {
    history
        .iter()
        .filter(|m| m.role == MessageRole::Assistant)
        .flat_map(|m| m.tool_calls.iter())
}

/// Names loaded by the `tool-search` calls among `calls` (up to the call `until`, excluded),
/// each once, in the order of their first load; only names of `deferred` schemas count, so
/// a request for a tool that is not enabled loads nothing.
fn loaded<'a, 'c>(
    calls: impl IntoIterator<Item = &'c ToolCall>,
    deferred: &'a [Value],
    until: Option<&str>,
) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for c in calls {
        if Some(c.id.as_str()) == until {
            break;
        }
        if !is_search(c) {
            continue;
        }
        for r in requested(&c.arguments) {
            if let Some(n) = resolve(&r, deferred)
                && !out.contains(&n)
            {
                out.push(n);
            }
        }
    }
    out
}

/// A `tool-search` call's answer (`Err`: a failed call): what it loaded, what was already
/// there, and a clear error for a name that is not an enabled tool (nothing is loaded for
/// it). `sent` and `deferred` are the session's split, `history` its conversation.
pub fn answer(
    call: &ToolCall,
    sent: &[Value],
    deferred: &[Value],
    history: &[Message],
) -> Result<String, String> {
    if deferred.is_empty() {
        return Err(format!(
            "{NAME}: no tool is deferred in this session; every enabled tool is in your tool list already"
        ));
    }
    let before = loaded(calls(history), deferred, Some(&call.id));
    let asked = requested(&call.arguments);
    if asked.is_empty() {
        return Err(format!(
            "{NAME}: give the tools to load as names, e.g. {{\"names\": [\"{}\"]}}",
            name_of(&deferred[0])
        ));
    }
    let (mut new, mut had, mut bad) = (Vec::new(), Vec::new(), Vec::new());
    for r in &asked {
        match resolve(r, deferred) {
            Some(n)
                if before.contains(&n)
                    || had.contains(&n)
                    || new.iter().any(|x: &&Value| name_of(x) == n) =>
            {
                had.push(n)
            }
            Some(n) => new.extend(deferred.iter().find(|s| name_of(s) == n)),
            None if sent
                .iter()
                .any(|x| Some(name_of(x)) == canonical_tool_name(r).or(Some(r.trim()))) =>
            {
                had.push(r.trim())
            }
            None => bad.push(r.trim().to_string()),
        }
    }
    let mut lines = Vec::new();
    if !new.is_empty() {
        let shown: Vec<String> = new.iter().map(|v| signature(v)).collect();
        lines.push(format!(
            "Loaded: {}. Their schemas are in your tool list from the next step on.",
            shown.join(", ")
        ));
    }
    if !had.is_empty() {
        lines.push(format!("Already available: {}.", had.join(", ")));
    }
    if !bad.is_empty() {
        let can: Vec<&str> = deferred.iter().map(name_of).collect();
        lines.push(format!(
            "Not loaded: {} (no such tool, or not enabled in this session). Tools you can load: {}.",
            bad.join(", "),
            can.join(", ")
        ));
    }
    let text = lines.join("\n");
    if bad.is_empty() { Ok(text) } else { Err(text) }
}

/// `name(a, b?)`: a loaded tool with its parameters (`?`: optional).
fn signature(schema: &Value) -> String {
    let f = &schema["function"];
    let required: Vec<&str> = f["parameters"]["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<String> = f["parameters"]["properties"]
        .as_object()
        .map(|p| {
            p.keys()
                .map(|k| {
                    let opt = if required.contains(&k.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{k}{opt}")
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{}({})", name_of(schema), params.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Value {
        json!({"type": "function", "function": {"name": name, "description": "x", "parameters": {}}})
    }

    fn search(id: &str, args: &str) -> Message {
        let mut m = Message::assistant("");
        m.tool_calls = vec![ToolCall {
            id: id.into(),
            name: NAME.into(),
            arguments: args.into(),
        }];
        m
    }

    #[test]
    fn loads_in_first_load_order_once_and_only_deferred_names() {
        let deferred = [tool("web-fetch"), tool("todo"), tool("mcp__gh__issue")];
        let history = vec![
            search("a", r#"{"names": ["todo", "nope", "bash"]}"#),
            search("b", r#"{"names": ["WebFetch", "todo"]}"#),
            search("c", r#"{"names": "MCP__GH__ISSUE"}"#),
        ];
        assert_eq!(
            loaded(calls(&history), &deferred, None),
            ["todo", "web-fetch", "mcp__gh__issue"]
        );
        assert_eq!(loaded(calls(&history), &deferred, Some("b")), ["todo"]);
        assert!(loaded(calls(&[search("x", "not json")]), &deferred, None).is_empty());
    }

    #[test]
    fn the_prompt_list_reads_back() {
        let prompt = format!("x{LIST_HEAD}a, b (what, for), mcp__s__t (does things).\n# Next");
        assert_eq!(listed(&prompt), ["a", "b", "mcp__s__t"]);
        assert!(listed("no list").is_empty());
    }

    #[test]
    fn one_line_keeps_the_first_sentence_short() {
        assert_eq!(one_line("Fetch a URL. Then (more)."), "Fetch a URL");
        assert_eq!(one_line("Short."), "Short");
        assert!(one_line(&"word ".repeat(40)).chars().count() <= LINE_CHARS);
    }
}
