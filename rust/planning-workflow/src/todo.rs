//! The `todo` tool (task tracker): items with hierarchical indices (`2.1`), a status, optional
//! dependencies. The list lives in the session tree as `todo` entries (the whole list after
//! each change), so the current list is the last one on the current path: `/branch`,
//! `/rewind` and `--resume` carry it without a copy of their own. After a compaction it is
//! pinned into the next request (`pin_text`).

#[allow(unused_imports)]
use crate::session_ext::*;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use yuyao_core::Session;
use yuyao_store::sessions::SessionLog;
use yuyao_tools::ToolOutput;

pub(crate) const NAME: &str = "todo";
/// Bounds of a list (it is stored in the session file at every change).
const MAX_ITEMS: usize = 200;
const MAX_CONTENT: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    #[default]
    Pending,
    InProgress,
    Completed,
    Blocked,
}

impl Status {
    fn parse(s: &str) -> Result<Status, String> {
        match s
            .trim()
            .to_ascii_lowercase()
            .replace(['-', ' '], "_")
            .as_str()
        {
            "pending" | "todo" | "open" => Ok(Status::Pending),
            "in_progress" | "inprogress" | "active" | "doing" => Ok(Status::InProgress),
            "completed" | "complete" | "done" => Ok(Status::Completed),
            "blocked" => Ok(Status::Blocked),
            other => Err(format!(
                "unknown status '{other}': use pending, in_progress, completed or blocked"
            )),
        }
    }

    fn mark(self) -> &'static str {
        match self {
            Status::Pending => "□",
            Status::InProgress => "[-]",
            Status::Completed => "[x]",
            Status::Blocked => "[!]",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Item {
    /// Hierarchical index: `1`, `2`, `2.1`.
    pub id: String,
    pub content: String,
    #[serde(default)]
    pub status: Status,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deps: Vec<String>,
}

pub(crate) fn schema() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": NAME,
            "description": "Task tracker for multi-step work. Keep one item in_progress at a time and mark items completed as soon as they are done. action: create (content, optional id like \"2.1\" or parent, deps), update (id + status/content/deps), delete (id; removes its sub-items), query (the list). Or send `items` (the whole list) to replace it in one call. Statuses: pending, in_progress, completed, blocked. Indices are positive and 1-based; update with id 0 and status completed completes the whole checklist.",
            "parameters": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["create", "update", "delete", "query", "sync"]},
                    "id": {"type": "string", "description": "hierarchical index, e.g. \"2\" or \"2.1\""},
                    "parent": {"type": "string", "description": "create: the new item becomes the next sub-item of this one"},
                    "content": {"type": "string"},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "blocked"]},
                    "deps": {"type": "array", "items": {"type": "string"}, "description": "ids that must be completed first"},
                    "items": {
                        "type": "array",
                        "description": "the whole list (bulk sync): replaces the current list",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string"},
                                "content": {"type": "string"},
                                "status": {"type": "string"},
                                "deps": {"type": "array", "items": {"type": "string"}}
                            },
                            "required": ["content"]
                        }
                    }
                }
            }
        }
    })
}

#[derive(Deserialize, Default)]
struct Args {
    action: Option<String>,
    #[serde(alias = "index", alias = "index_path")]
    id: Option<Value>,
    parent: Option<Value>,
    #[serde(alias = "title", alias = "task", alias = "description")]
    content: Option<String>,
    status: Option<String>,
    #[serde(alias = "dependencies", alias = "depends_on", alias = "blocked_by")]
    deps: Option<Vec<Value>>,
    #[serde(alias = "todos", alias = "tasks")]
    items: Option<Vec<Value>>,
}

/// An id the model sent as a number (`2`) or a string (`"2.1"`).
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().trim_end_matches('.').to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
    .filter(|s| !s.is_empty())
}

/// Positive, 1-based parts: `1`, `2.1` (`0` is reserved for the whole checklist).
fn valid_index(id: &str) -> bool {
    !id.is_empty()
        && id.split('.').all(|p| {
            !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) && p.parse::<u64>() != Ok(0)
        })
}

/// `index: 0` names the checklist itself (the compatibility form of seed 001).
const CHECKLIST: &str = "0";

fn depth(id: &str) -> usize {
    id.matches('.').count()
}

/// Index order: `1 < 1.1 < 1.2 < 2 < 10`.
fn index_key(id: &str) -> Vec<u64> {
    id.split('.')
        .map(|p| p.parse().unwrap_or(u64::MAX))
        .collect()
}

fn parent_of(id: &str) -> Option<&str> {
    id.rsplit_once('.').map(|(p, _)| p)
}

/// The current list: the last `todo` entry on the session's path. A `clear` empties it, and
/// a `truncate` (`/rewind … conversation`) drops the lists recorded after the messages it
/// keeps, so the list goes back with the conversation.
pub(crate) fn current(log: &SessionLog) -> Vec<Item> {
    let by_id: std::collections::HashMap<&str, &yuyao_store::sessions::Entry> =
        log.entries().iter().map(|e| (e.id.as_str(), e)).collect();
    // (messages in the conversation when recorded, the list)
    let mut lists: Vec<(usize, Vec<Item>)> = Vec::new();
    let mut messages = 0usize;
    let keep = |e: &yuyao_store::sessions::Entry| {
        e.data.get("keep").and_then(Value::as_u64).unwrap_or(0) as usize
    };
    for id in log.path_ids() {
        let Some(e) = by_id.get(id.as_str()) else {
            continue;
        };
        match e.kind.as_str() {
            "message" => messages += 1,
            "todo" => lists.push((
                messages,
                e.data
                    .get("items")
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
                    .unwrap_or_default(),
            )),
            "clear" => {
                messages = 0;
                lists.clear();
            }
            "truncate" => {
                messages = messages.min(keep(e));
                lists.retain(|(at, _)| *at <= messages);
            }
            "compaction" => {
                // The summary replaces the head: the list in force stays in force.
                messages = 1 + keep(e).min(messages);
                if let Some(last) = lists.pop() {
                    lists = vec![(0, last.1)];
                }
            }
            _ => {}
        }
    }
    lists.pop().map(|(_, items)| items).unwrap_or_default()
}

/// The compact tree: `[-]` in progress, `□` pending, `[x]` done, `[!]` blocked.
pub(crate) fn render(items: &[Item]) -> String {
    let done = items
        .iter()
        .filter(|i| i.status == Status::Completed)
        .count();
    let mut out = format!("Tasks ({done}/{} done)", items.len());
    for i in items {
        let deps = if i.deps.is_empty() {
            String::new()
        } else {
            format!(" (after {})", i.deps.join(", "))
        };
        out.push_str(&format!(
            "\n{}{} {}. {}{deps}",
            "  ".repeat(depth(&i.id)),
            i.status.mark(),
            i.id,
            i.content
        ));
    }
    out
}

/// What is pinned into the request after a compaction (`None` with no list).
pub(crate) fn pin_text(log: &SessionLog) -> Option<String> {
    let items = current(log);
    (!items.is_empty()).then(|| {
        format!(
            "[pinned task list — the todo tool's current state, kept across compaction]\n{}",
            render(&items)
        )
    })
}

fn item_from(v: &Value, fallback_id: String) -> Result<Item, String> {
    let obj = v
        .as_object()
        .ok_or("each entry of `items` must be an object with `content`")?;
    let content = obj
        .get("content")
        .or_else(|| obj.get("title"))
        .or_else(|| obj.get("task"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or("each entry of `items` needs a non-empty `content`")?
        .to_string();
    let id = ["id", "index_path", "index"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(id_text))
        .unwrap_or(fallback_id);
    let status = match obj.get("status").and_then(Value::as_str) {
        Some(s) => Status::parse(s)?,
        None => Status::Pending,
    };
    let deps = obj
        .get("deps")
        .or_else(|| obj.get("dependencies"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(id_text).collect())
        .unwrap_or_default();
    Ok(Item {
        id,
        content,
        status,
        deps,
    })
}

/// Checks the list as a whole: indices well-formed and unique, sub-items under an existing
/// parent, dependencies naming items, and nothing started or finished before what it
/// depends on is completed.
fn check(items: &[Item]) -> Result<(), String> {
    if items.len() > MAX_ITEMS {
        return Err(format!(
            "{} items is more than a task list holds ({MAX_ITEMS}): group them",
            items.len()
        ));
    }
    if let Some(i) = items
        .iter()
        .find(|i| i.content.chars().count() > MAX_CONTENT)
    {
        return Err(format!(
            "item {} is longer than {MAX_CONTENT} characters: keep items short",
            i.id
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for i in items {
        if !valid_index(&i.id) {
            return Err(format!(
                "invalid id '{}': use hierarchical indices like 1, 2, 2.1",
                i.id
            ));
        }
        if !seen.insert(i.id.as_str()) {
            return Err(format!("duplicate id '{}'", i.id));
        }
    }
    for i in items {
        if let Some(p) = parent_of(&i.id)
            && !seen.contains(p)
        {
            return Err(format!("item {} has no parent item {p}", i.id));
        }
        for d in &i.deps {
            if !seen.contains(d.as_str()) {
                return Err(format!("item {} depends on unknown item {d}", i.id));
            }
            if d == &i.id {
                return Err(format!("item {} cannot depend on itself", i.id));
            }
        }
        if matches!(i.status, Status::InProgress | Status::Completed) {
            let open: Vec<&str> = i
                .deps
                .iter()
                .filter(|d| {
                    items
                        .iter()
                        .any(|o| &o.id == *d && o.status != Status::Completed)
                })
                .map(String::as_str)
                .collect();
            if !open.is_empty() {
                return Err(format!(
                    "item {} cannot be {} before {} {} completed",
                    i.id,
                    if i.status == Status::Completed {
                        "completed"
                    } else {
                        "in_progress"
                    },
                    open.join(", "),
                    if open.len() == 1 { "is" } else { "are" }
                ));
            }
        }
    }
    Ok(())
}

fn next_child(items: &[Item], parent: Option<&str>) -> String {
    let n = items
        .iter()
        .filter(|i| parent_of(&i.id) == parent)
        .filter_map(|i| i.id.rsplit('.').next()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
        + 1;
    match parent {
        Some(p) => format!("{p}.{n}"),
        None => n.to_string(),
    }
}

/// Applies one call to `items`; `Ok(true)` when the list changed.
fn apply(items: &mut Vec<Item>, raw: &str) -> Result<bool, String> {
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    let a: Args = serde_json::from_str(raw).map_err(|e| {
        format!("invalid arguments for todo: {e}. Send {{\"action\": \"create\", \"content\": \"…\"}} or {{\"items\": [{{\"content\": \"…\", \"status\": \"pending\"}}]}}.")
    })?;
    let action = a
        .action
        .as_deref()
        .map(|s| s.trim().to_ascii_lowercase())
        .unwrap_or_else(|| {
            if a.items.is_some() {
                "sync".into()
            } else {
                "query".into()
            }
        });
    let id = a.id.as_ref().and_then(id_text);
    let deps: Option<Vec<String>> = a.deps.map(|d| d.iter().filter_map(id_text).collect());
    let mut next = items.clone();
    match action.as_str() {
        "query" | "list" | "get" => return Ok(false),
        "sync" | "write" | "set" | "replace" => {
            let list = a.items.ok_or("sync needs `items` (the whole list)")?;
            // An entry without an id is the next top-level item after those seen so far
            // (`1`, `2`, `2.1`, then `3`).
            let mut out: Vec<Item> = Vec::new();
            let mut top = 0u64;
            for v in &list {
                let item = item_from(v, (top + 1).to_string())?;
                let first = item.id.split('.').next().and_then(|p| p.parse().ok());
                top = top.max(first.unwrap_or(top));
                out.push(item);
            }
            next = out;
        }
        "create" | "add" => {
            let content = a
                .content
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .ok_or("create needs `content`")?;
            let parent = a.parent.as_ref().and_then(id_text);
            if let Some(p) = &parent
                && !next.iter().any(|i| &i.id == p)
            {
                return Err(format!("no item {p} to add a sub-item to"));
            }
            let id = id.unwrap_or_else(|| next_child(&next, parent.as_deref()));
            if next.iter().any(|i| i.id == id) {
                return Err(format!(
                    "item {id} already exists: update it, or create without an id"
                ));
            }
            let status = match a.status.as_deref() {
                Some(s) => Status::parse(s)?,
                None => Status::Pending,
            };
            next.push(Item {
                id,
                content,
                status,
                deps: deps.unwrap_or_default(),
            });
        }
        "update" | "edit" | "set_status" if id.as_deref() == Some(CHECKLIST) => {
            // Checklist-level completion: every item completed at once, nothing else.
            match a.status.as_deref().map(Status::parse) {
                Some(Ok(Status::Completed)) => {}
                _ => {
                    return Err(
                        "index 0 is reserved for completing the whole checklist: send status \"completed\" with it, or a positive index (1, 2.1) for one item".into(),
                    );
                }
            }
            if next.is_empty() {
                return Err("the checklist is empty: nothing to complete".into());
            }
            for i in &mut next {
                i.status = Status::Completed;
            }
        }
        "update" | "edit" | "set_status" => {
            let id = id.ok_or("update needs the item's `id`")?;
            let Some(item) = next.iter_mut().find(|i| i.id == id) else {
                return Err(unknown(&id, items));
            };
            if let Some(s) = &a.status {
                item.status = Status::parse(s)?;
            }
            if let Some(c) = a.content.filter(|c| !c.trim().is_empty()) {
                item.content = c.trim().to_string();
            }
            if let Some(d) = deps {
                item.deps = d;
            }
        }
        "delete" | "remove" => {
            let id = id.ok_or("delete needs the item's `id`")?;
            if id == CHECKLIST {
                return Err(
                    "index 0 only completes the whole checklist; send `items: []` to clear it"
                        .into(),
                );
            }
            if !next.iter().any(|i| i.id == id) {
                return Err(unknown(&id, items));
            }
            let sub = format!("{id}.");
            next.retain(|i| i.id != id && !i.id.starts_with(&sub));
            for i in &mut next {
                i.deps.retain(|d| d != &id && !d.starts_with(&sub));
            }
        }
        other => {
            return Err(format!(
                "unknown action '{other}': use create, update, delete, query, or send `items`"
            ));
        }
    }
    check(&next)?;
    next.sort_by_key(|i| index_key(&i.id));
    let changed = next != *items;
    *items = next;
    Ok(changed)
}

fn unknown(id: &str, items: &[Item]) -> String {
    let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
    format!(
        "no item {id}; items: {}",
        if ids.is_empty() {
            "none".to_string()
        } else {
            ids.join(", ")
        }
    )
}

pub(crate) trait TodoExt {
    fn run_todo(&self, raw: &str) -> ToolOutput;
    fn tasks_json(&self) -> String;
    fn set_todo(&self, items: Vec<Item>);
}

impl TodoExt for Session {
    /// Runs the `todo` tool: the list is changed, recorded in the session tree and shown.
    fn run_todo(&self, raw: &str) -> ToolOutput {
        let mut items = current(&self.lock().log);
        match apply(&mut items, raw) {
            Err(e) => ToolOutput::err(format!("todo: {e}. The list is unchanged.")),
            Ok(changed) => {
                let tree = render(&items);
                if changed {
                    self.lock().log_entry("todo", json!({"items": items}));
                    self.notice(yuyao_protocol::NoticeLevel::Info, tree.clone());
                    self.plan_tracker_sync(&items);
                }
                ToolOutput::ok(tree)
            }
        }
    }

    /// The current task list as JSON (Ctrl+T, agent_api).
    fn tasks_json(&self) -> String {
        serde_json::to_string(&current(&self.lock().log)).unwrap_or_else(|_| "[]".into())
    }

    /// Replaces the list (a plan's steps become the tracker at approval).
    fn set_todo(&self, items: Vec<Item>) {
        let tree = render(&items);
        self.lock().log_entry("todo", json!({"items": items}));
        self.notice(yuyao_protocol::NoticeLevel::Info, tree);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(items: &mut Vec<Item>, raw: &str) -> Result<bool, String> {
        apply(items, raw)
    }

    #[test]
    fn create_update_delete_hierarchy_and_deps() {
        let mut l = Vec::new();
        run(&mut l, r#"{"action":"create","content":"parser"}"#).unwrap();
        run(
            &mut l,
            r#"{"action":"create","content":"tests","deps":["1"]}"#,
        )
        .unwrap();
        run(
            &mut l,
            r#"{"action":"create","content":"lexer","parent":"1"}"#,
        )
        .unwrap();
        assert_eq!(
            l.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
            ["1", "1.1", "2"]
        );
        let e = run(
            &mut l,
            r#"{"action":"update","id":"2","status":"completed"}"#,
        )
        .unwrap_err();
        assert!(e.contains("before 1 is completed"), "{e}");
        run(
            &mut l,
            r#"{"action":"update","index_path":1,"status":"done"}"#,
        )
        .unwrap();
        run(
            &mut l,
            r#"{"action":"update","id":"2","status":"in_progress"}"#,
        )
        .unwrap();
        run(
            &mut l,
            r#"{"action":"update","id":"1.1","status":"blocked"}"#,
        )
        .unwrap();
        let t = render(&l);
        assert!(t.contains("[x] 1. parser"), "{t}");
        assert!(t.contains("\n  [!] 1.1. lexer"), "{t}");
        assert!(t.contains("[-] 2. tests (after 1)"), "{t}");
        run(&mut l, r#"{"action":"delete","id":"1"}"#).unwrap();
        assert_eq!(l.len(), 1);
        assert!(l[0].deps.is_empty());
        assert!(
            run(&mut l, r#"{"action":"update","id":"9","status":"done"}"#)
                .unwrap_err()
                .contains("no item 9")
        );
    }

    #[test]
    fn index_zero_completes_the_checklist_and_nothing_else() {
        let mut l = Vec::new();
        run(&mut l, r#"{"items":[{"content":"a"},{"content":"b"}]}"#).unwrap();
        for bad in [
            r#"{"action":"update","index":0,"status":"in_progress"}"#,
            r#"{"action":"update","index":0}"#,
            r#"{"action":"delete","index":0}"#,
            r#"{"action":"create","id":"0","content":"x"}"#,
            r#"{"action":"create","id":"1.0","content":"x"}"#,
        ] {
            assert!(run(&mut l, bad).is_err(), "{bad}");
        }
        assert!(l.iter().all(|i| i.status == Status::Pending));
        assert!(
            run(
                &mut l,
                r#"{"action":"update","index":0,"status":"completed"}"#
            )
            .unwrap()
        );
        assert!(l.iter().all(|i| i.status == Status::Completed));
    }

    #[test]
    fn bulk_sync_and_bad_input() {
        let mut l = Vec::new();
        run(
            &mut l,
            r#"{"todos":[{"content":"a","status":"in_progress"},{"content":"b"}]}"#,
        )
        .unwrap();
        assert_eq!(l[0].status, Status::InProgress);
        assert_eq!(l[1].id, "2");
        run(
            &mut l,
            r#"{"items":[{"content":"a"},{"id":"1.1","content":"b"},{"content":"c"}]}"#,
        )
        .unwrap();
        assert_eq!(
            l.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
            ["1", "1.1", "2"]
        );
        assert!(render(&l).contains("□ 2. c"));
        let before = l.clone();
        assert!(run(&mut l, r#"{"items":[{"id":"1.1","content":"x"}]}"#).is_err());
        assert!(run(&mut l, r#"{"items":[{"content":"x","status":"weird"}]}"#).is_err());
        assert_eq!(l, before, "a refused call leaves the list unchanged");
        assert!(!run(&mut l, r#"{"action":"query"}"#).unwrap());
    }
}
