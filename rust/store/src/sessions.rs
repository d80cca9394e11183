//! The session tree (spec §4, seed 000 behaviour 12): one JSONL file per session under
//! `~/.yuyao/sessions/<id>.jsonl`. The first line is a header; every later line is an entry
//! with an `id` and a `parent` id: messages, mode/role/model changes, compactions, clears,
//! truncations (`/rewind <n> conversation|summarize-from`), checkpoints, titles, and
//! `checkout` markers that move the current position (`/tree`, `/rewind`). The current leaf is always the last entry's id, so the active conversation is
//! the path from the root to the last line.
//!
//! Entries are appended as they happen (a crash loses at most the line being written); a line
//! that does not parse is skipped with a warning, never aborting a load.

use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use yuyao_protocol::Message;

/// The text that replaces the compacted part of a conversation.
pub const COMPACTION_PREFIX: &str =
    "[This conversation was compacted to save context. Summary of the earlier part follows.]";

/// After a model switch, the earlier model's reasoning is kept as plain text in its reply
/// (another vendor's model cannot consume it as reasoning).
pub fn reasoning_to_text(messages: &mut [Message]) {
    for m in messages {
        if let Some(r) = m.reasoning_content.take().filter(|r| !r.trim().is_empty()) {
            let text = m.text();
            let joined = if text.trim().is_empty() {
                format!("(reasoning of the previous model)\n{}", r.trim())
            } else {
                format!("(reasoning of the previous model)\n{}\n\n{text}", r.trim())
            };
            m.content = Some(yuyao_protocol::Content::Text(joined));
        }
    }
}

/// One line of a session file (after the header).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub parent: Option<String>,
    pub kind: String,
    pub ts: String,
    /// The whole JSON object of the line.
    pub data: Value,
}

impl Entry {
    pub fn message(&self) -> Option<Message> {
        if self.kind != "message" {
            return None;
        }
        serde_json::from_value(self.data.get("message")?.clone()).ok()
    }
}

/// What `/sessions` and `--continue` know about a session file without replaying it.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub id: String,
    pub path: PathBuf,
    pub cwd: String,
    pub title: Option<String>,
    pub created: String,
    pub updated: std::time::SystemTime,
    pub messages: usize,
    pub archived: bool,
    pub forked_from: Option<String>,
    /// The first user message (a fallback title).
    pub first_prompt: Option<String>,
}

/// A loaded or fresh session file, appended to as the session goes.
pub struct SessionLog {
    id: String,
    path: PathBuf,
    header: Value,
    entries: Vec<Entry>,
    /// The file exists (it is created with the first message, so a session that never talks
    /// leaves nothing behind).
    created: bool,
    /// Entries recorded before the file exists.
    pending: Vec<String>,
    broken: bool,
}

fn now() -> String {
    chrono::Local::now().to_rfc3339()
}

fn new_entry_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..10].to_string()
}

/// `~/.yuyao/sessions`.
pub fn sessions_dir(home: &Path) -> PathBuf {
    home.join("sessions")
}

/// A new session id (12 hex digits).
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// Reads a session file: header and entries. Malformed lines become warnings.
fn read_file(path: &Path) -> std::io::Result<(Value, Vec<Entry>, Vec<String>)> {
    let text = std::fs::read_to_string(path)?;
    let mut header = Value::Null;
    let mut entries = Vec::new();
    let mut warnings = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Result<Value, _> = serde_json::from_str(line);
        let v = match parsed {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                warnings.push(format!(
                    "{}: line {} is not a valid session entry; skipped",
                    path.display(),
                    n + 1
                ));
                continue;
            }
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "session" && header.is_null() {
            header = v;
            continue;
        }
        let Some(id) = v.get("id").and_then(Value::as_str) else {
            warnings.push(format!(
                "{}: line {} has no entry id; skipped",
                path.display(),
                n + 1
            ));
            continue;
        };
        entries.push(Entry {
            id: id.to_string(),
            parent: v.get("parent").and_then(Value::as_str).map(str::to_string),
            kind: kind.to_string(),
            ts: v
                .get("ts")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            data: v,
        });
    }
    Ok((header, entries, warnings))
}

impl SessionLog {
    /// A fresh session for `cwd`. Nothing is written until the first message.
    pub fn create(dir: &Path, id: &str, cwd: &str) -> SessionLog {
        SessionLog {
            id: id.to_string(),
            path: dir.join(format!("{id}.jsonl")),
            header: json!({"type": "session", "id": id, "cwd": cwd, "created": now(),
                           "version": yuyao_protocol::VERSION}),
            entries: Vec::new(),
            created: false,
            pending: Vec::new(),
            broken: false,
        }
    }

    /// A session that is never written to disk (one-shot sub-commands).
    pub fn ephemeral(dir: &Path, id: &str, cwd: &str) -> SessionLog {
        let mut log = SessionLog::create(dir, id, cwd);
        log.broken = true;
        log
    }

    /// Loads `<dir>/<id>.jsonl`; returns the log and the warnings about skipped lines.
    pub fn load(dir: &Path, id: &str) -> Result<(SessionLog, Vec<String>), String> {
        let path = dir.join(format!("{id}.jsonl"));
        let (mut header, entries, warnings) =
            read_file(&path).map_err(|e| format!("cannot read session {id}: {e}"))?;
        if header.is_null() {
            header = json!({"type": "session", "id": id, "cwd": "", "created": now()});
        }
        Ok((
            SessionLog {
                id: id.to_string(),
                path,
                header,
                entries,
                created: true,
                pending: Vec::new(),
                broken: false,
            },
            warnings,
        ))
    }

    /// Copies this session (its whole file, or only the current path with `path_only`) into
    /// a new session with a new id; the original file is not touched.
    pub fn fork(&self, dir: &Path, path_only: bool, title: Option<&str>) -> SessionLog {
        let id = new_session_id();
        let mut header = self.header.clone();
        header["id"] = json!(id);
        header["created"] = json!(now());
        header["forked_from"] = json!(self.id);
        let entries: Vec<Entry> = if path_only {
            let ids: std::collections::HashSet<String> = self.path_ids().into_iter().collect();
            self.entries
                .iter()
                .filter(|e| ids.contains(&e.id))
                .cloned()
                .collect()
        } else {
            self.entries.clone()
        };
        let mut log = SessionLog {
            id: id.clone(),
            path: dir.join(format!("{id}.jsonl")),
            header,
            entries: Vec::new(),
            created: false,
            pending: Vec::new(),
            broken: false,
        };
        for e in entries {
            log.push_line(e);
        }
        if let Some(t) = title {
            log.append("title", json!({"title": t}));
        }
        log.materialize();
        log
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn header(&self) -> &Value {
        &self.header
    }

    /// The current position in the tree: the last entry.
    pub fn leaf(&self) -> Option<&str> {
        self.entries.last().map(|e| e.id.as_str())
    }

    pub fn title(&self) -> Option<String> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.kind == "title")
            .and_then(|e| e.data.get("title").and_then(Value::as_str))
            .map(str::to_string)
    }

    fn push_line(&mut self, e: Entry) {
        let mut line = e.data.to_string();
        line.push('\n');
        self.entries.push(e);
        if self.created {
            self.write(&line);
        } else {
            self.pending.push(line);
        }
    }

    fn write(&mut self, text: &str) {
        if self.broken {
            return;
        }
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let r = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if r.is_err() {
            // A full disk must not kill the session; stop persisting it.
            self.broken = true;
        }
    }

    /// Creates the file (header and pending entries) if it does not exist yet.
    pub fn materialize(&mut self) {
        if self.created {
            return;
        }
        self.created = true;
        let mut text = self.header.to_string();
        text.push('\n');
        for p in std::mem::take(&mut self.pending) {
            text.push_str(&p);
        }
        self.write(&text);
    }

    /// Appends an entry of `kind` under the current leaf; returns its id.
    pub fn append(&mut self, kind: &str, fields: Value) -> String {
        let parent = self.leaf().map(str::to_string);
        self.append_under(kind, parent, fields)
    }

    fn append_under(&mut self, kind: &str, parent: Option<String>, fields: Value) -> String {
        let id = new_entry_id();
        let mut data = json!({"type": kind, "id": id, "parent": parent, "ts": now()});
        if let (Some(obj), Value::Object(extra)) = (data.as_object_mut(), fields) {
            for (k, v) in extra {
                obj.entry(k).or_insert(v);
            }
        }
        let entry = Entry {
            id: id.clone(),
            parent,
            kind: kind.to_string(),
            ts: data["ts"].as_str().unwrap_or_default().to_string(),
            data,
        };
        if kind == "message" {
            self.materialize();
        }
        self.push_line(entry);
        id
    }

    pub fn append_message(&mut self, m: &Message) -> String {
        self.append("message", json!({"message": m}))
    }

    /// Moves the current position to `target` (any entry id, or a unique prefix of one): a
    /// `checkout` entry whose parent is the target, so the branch left behind stays intact.
    pub fn checkout(&mut self, target: &str) -> Result<String, String> {
        let id = self.resolve(target)?;
        self.materialize();
        Ok(self.append_under("checkout", Some(id.clone()), json!({"target": id})))
    }

    /// The full id of the entry `target` names (exact, or a unique prefix).
    pub fn resolve(&self, target: &str) -> Result<String, String> {
        if let Some(e) = self.entries.iter().find(|e| e.id == target) {
            return Ok(e.id.clone());
        }
        let hits: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| !target.is_empty() && e.id.starts_with(target))
            .collect();
        match hits.as_slice() {
            [one] => Ok(one.id.clone()),
            [] => Err(format!("no entry '{target}' in session {}", self.id)),
            _ => Err(format!(
                "'{target}' matches several entries; give more digits"
            )),
        }
    }

    /// Entry ids from the root to the current leaf.
    pub fn path_ids(&self) -> Vec<String> {
        let by_id: std::collections::HashMap<&str, &Entry> =
            self.entries.iter().map(|e| (e.id.as_str(), e)).collect();
        let mut out = Vec::new();
        let mut cur = self.leaf().map(str::to_string);
        let mut guard = 0;
        while let Some(id) = cur {
            guard += 1;
            if guard > self.entries.len() + 1 {
                break; // a cycle in a hand-edited file
            }
            let Some(e) = by_id.get(id.as_str()) else {
                break;
            };
            out.push(id.clone());
            cur = e.parent.clone();
        }
        out.reverse();
        out
    }

    /// The active conversation: the messages on the current path, with compactions and
    /// clears applied. Also returns the last mode/role/model recorded on the path.
    pub fn replay(&self) -> Replay {
        let by_id: std::collections::HashMap<&str, &Entry> =
            self.entries.iter().map(|e| (e.id.as_str(), e)).collect();
        let mut r = Replay::default();
        for id in self.path_ids() {
            let e = by_id[id.as_str()];
            match e.kind.as_str() {
                "message" => {
                    if let Some(m) = e.message() {
                        r.messages.push(m);
                    }
                }
                "clear" => r.messages.clear(),
                // `/rewind`: the conversation went on from its first `keep` messages.
                "truncate" => {
                    let keep = e.data.get("keep").and_then(Value::as_u64).unwrap_or(0) as usize;
                    r.messages.truncate(keep);
                }
                "compaction" => {
                    let keep = e.data.get("keep").and_then(Value::as_u64).unwrap_or(0) as usize;
                    let keep = keep.min(r.messages.len());
                    let tail = r.messages.split_off(r.messages.len() - keep);
                    let summary = e
                        .data
                        .get("summary")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    r.messages = vec![Message::user(summary.to_string())];
                    r.messages.extend(tail);
                }
                "model" => {
                    if e.data.get("switch").and_then(Value::as_bool) == Some(true) {
                        reasoning_to_text(&mut r.messages);
                    }
                    if let Some(v) = e.data.get("value").and_then(Value::as_str) {
                        r.model = Some(v.to_string());
                    }
                }
                "mode" | "role" => {
                    if let Some(v) = e.data.get("value").and_then(Value::as_str) {
                        let slot = if e.kind == "mode" {
                            &mut r.mode
                        } else {
                            &mut r.role
                        };
                        *slot = Some(v.to_string());
                    }
                }
                _ => {}
            }
        }
        r
    }

    /// User prompts on the current path (every prompt is a checkpoint): `(entry id, text)`.
    pub fn checkpoints(&self) -> Vec<(String, String)> {
        let by_id: std::collections::HashMap<&str, &Entry> =
            self.entries.iter().map(|e| (e.id.as_str(), e)).collect();
        self.path_ids()
            .into_iter()
            .filter_map(|id| {
                let e = by_id[id.as_str()];
                let m = e.message()?;
                (m.role == yuyao_protocol::MessageRole::User).then(|| (id, m.text()))
            })
            .collect()
    }

    /// Restores the conversation to just before the user prompt `entry` (for `/rewind`):
    /// moves the position to that prompt's parent. Returns the prompt's text.
    pub fn rewind_before(&mut self, entry: &str) -> Result<String, String> {
        let id = self.resolve(entry)?;
        let e = self
            .entries
            .iter()
            .find(|e| e.id == id)
            .cloned()
            .ok_or_else(|| format!("no entry '{entry}'"))?;
        let text = e.message().map(|m| m.text()).unwrap_or_default();
        self.materialize();
        self.append_under("checkout", e.parent.clone(), json!({"target": e.parent}));
        Ok(text)
    }
}

/// What replaying a session's current path gives back.
#[derive(Debug, Default, Clone)]
pub struct Replay {
    pub messages: Vec<Message>,
    pub mode: Option<String>,
    pub role: Option<String>,
    pub model: Option<String>,
}

/// Every session file in `dir`, most recently updated first.
pub fn list_sessions(dir: &Path) -> Vec<SessionInfo> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<SessionInfo> = rd
        .flatten()
        .filter_map(|d| {
            let path = d.path();
            let id = path
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_string();
            let updated = d.metadata().ok()?.modified().ok()?;
            let (header, entries, _) = read_file(&path).ok()?;
            let title = entries
                .iter()
                .rev()
                .find(|e| e.kind == "title")
                .and_then(|e| e.data.get("title").and_then(Value::as_str))
                .map(str::to_string);
            let first_prompt = entries.iter().find_map(|e| {
                let m = e.message()?;
                (m.role == yuyao_protocol::MessageRole::User).then(|| m.text())
            });
            Some(SessionInfo {
                id,
                path,
                cwd: header
                    .get("cwd")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                title,
                created: header
                    .get("created")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                updated,
                messages: entries.iter().filter(|e| e.kind == "message").count(),
                archived: entries.iter().any(|e| e.kind == "archive"),
                forked_from: header
                    .get("forked_from")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                first_prompt,
            })
        })
        .collect();
    out.sort_by(|a, b| b.updated.cmp(&a.updated).then(b.created.cmp(&a.created)));
    out
}

/// The id a user typed (exact, or a unique prefix) among the stored sessions.
pub fn resolve_session(dir: &Path, wanted: &str) -> Result<String, String> {
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return Err("a session id is needed".into());
    }
    if !wanted
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!("'{wanted}' is not a session id (see /sessions)"));
    }
    if dir.join(format!("{wanted}.jsonl")).is_file() {
        return Ok(wanted.to_string());
    }
    let hits: Vec<String> = list_sessions(dir)
        .into_iter()
        .filter(|s| s.id.starts_with(wanted))
        .map(|s| s.id)
        .collect();
    match hits.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!("no session '{wanted}' (see /sessions)")),
        _ => Err(format!(
            "'{wanted}' matches several sessions: {}",
            hits.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_as_it_happens_and_replayed() {
        let d = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(d.path(), "s1", "/w");
        log.append("mode", json!({"value": "plan"}));
        assert!(!log.path().exists(), "nothing is written before a message");
        log.append_message(&Message::user("fix the bug"));
        log.append_message(&Message::assistant("done it"));
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().count(), 4);
        let (back, warnings) = SessionLog::load(d.path(), "s1").unwrap();
        assert!(warnings.is_empty());
        let r = back.replay();
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.mode.as_deref(), Some("plan"));
    }

    #[test]
    fn a_model_switch_turns_earlier_reasoning_into_text_on_replay() {
        let d = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(d.path(), "s5", "/w");
        let mut a = Message::assistant("answer");
        a.reasoning_content = Some("because".into());
        log.append_message(&Message::user("q"));
        log.append_message(&a);
        assert_eq!(log.replay().messages[1].text(), "answer");
        log.append("model", json!({"value": "other", "switch": true}));
        let r = log.replay();
        assert_eq!(
            r.messages[1].text(),
            "(reasoning of the previous model)\nbecause\n\nanswer"
        );
        assert_eq!(r.model.as_deref(), Some("other"));
        let mut e = SessionLog::ephemeral(d.path(), "s6", "/w");
        e.append_message(&Message::user("q"));
        assert!(!e.path().exists());
    }

    #[test]
    fn bad_lines_are_skipped_with_a_warning() {
        let d = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(d.path(), "s2", "/w");
        log.append_message(&Message::user("a"));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(log.path())
            .unwrap();
        f.write_all(b"{not json\n").unwrap();
        drop(f);
        log.append_message(&Message::assistant("b"));
        let (back, warnings) = SessionLog::load(d.path(), "s2").unwrap();
        assert_eq!(warnings.len(), 1);
        assert_eq!(back.replay().messages.len(), 2);
    }

    #[test]
    fn checkout_branches_and_compaction_replays() {
        let d = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(d.path(), "s3", "/w");
        let first = log.append_message(&Message::user("one"));
        log.append_message(&Message::assistant("1"));
        let second = log.append_message(&Message::user("two"));
        log.append_message(&Message::assistant("2"));
        log.rewind_before(&second).unwrap();
        assert_eq!(log.replay().messages.len(), 2);
        log.append_message(&Message::user("three"));
        let texts: Vec<String> = log.replay().messages.iter().map(|m| m.text()).collect();
        assert_eq!(texts, ["one", "1", "three"]);
        assert_eq!(log.checkpoints().len(), 2);
        assert_eq!(log.checkpoints()[0].0, first);
        log.append("compaction", json!({"summary": "S", "keep": 1}));
        let texts: Vec<String> = log.replay().messages.iter().map(|m| m.text()).collect();
        assert_eq!(texts, ["S", "three"]);
        // The other branch is still in the file.
        log.checkout(&second).unwrap();
        let texts: Vec<String> = log.replay().messages.iter().map(|m| m.text()).collect();
        assert_eq!(texts, ["one", "1", "two"]);
        // A truncation keeps the first messages of the path; later ones follow it.
        log.append("truncate", json!({"keep": 1}));
        log.append_message(&Message::user("summary of the rest"));
        let texts: Vec<String> = log.replay().messages.iter().map(|m| m.text()).collect();
        assert_eq!(texts, ["one", "summary of the rest"]);
    }

    #[test]
    fn fork_leaves_the_original_untouched() {
        let d = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(d.path(), "s4", "/w");
        log.append_message(&Message::user("a"));
        let before = std::fs::read(log.path()).unwrap();
        let mut f = log.fork(d.path(), false, None);
        f.append_message(&Message::assistant("b"));
        assert_eq!(std::fs::read(log.path()).unwrap(), before);
        assert_eq!(f.replay().messages.len(), 2);
        assert_eq!(list_sessions(d.path()).len(), 2);
        assert_eq!(resolve_session(d.path(), &f.id()[..6]).unwrap(), f.id());
        assert!(resolve_session(d.path(), "../s4").is_err());
    }
}
