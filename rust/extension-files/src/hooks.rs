//! Lifecycle hooks (`hooks.json`): which files declare them, the two shapes users already
//! have (Cursor's flat list and Claude Code's matcher groups), tool-name matchers, and how a
//! hook's reply is read as a decision. Running them is `hook_run.rs`.
//!
//! Claude Code's settings files (`~/.claude/settings.json` or `$CLAUDE_CONFIG_DIR`, the
//! project's `.claude/settings.json` and `.claude/settings.local.json`) declare hooks under
//! their `hooks` key in the matcher-group shape; they are hook files like the others — the
//! project's run only while their content is approved (extension_trust.rs) — and keep
//! Claude Code's exit semantics (only exit 2 or a block decision blocks).

use regex::Regex;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    BeforeShellExecution,
    Stop,
    PreCompact,
    SessionEnd,
}

pub const EVENTS: &[HookEvent] = &[
    HookEvent::SessionStart,
    HookEvent::UserPromptSubmit,
    HookEvent::PreToolUse,
    HookEvent::BeforeShellExecution,
    HookEvent::PostToolUse,
    HookEvent::Stop,
    HookEvent::PreCompact,
    HookEvent::SessionEnd,
];

impl HookEvent {
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::BeforeShellExecution => "beforeShellExecution",
            HookEvent::Stop => "Stop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    /// The event a file names: Claude Code's spelling, Cursor's camelCase ones, any case.
    pub fn parse(name: &str) -> Option<HookEvent> {
        let n = name.to_ascii_lowercase();
        let alias = match n.as_str() {
            "beforesubmitprompt" => "userpromptsubmit",
            "pretooluse" | "beforetooluse" | "beforemcpexecution" => "pretooluse",
            "aftertooluse" | "afterfileedit" | "aftershellexecution" => "posttooluse",
            other => other,
        };
        EVENTS
            .iter()
            .copied()
            .find(|e| e.name().eq_ignore_ascii_case(alias))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookSource {
    /// `~/.yuyao/hooks.json`: the user's own programs, always run.
    User,
    /// `<project>/.yuyao/hooks.json` or `<project>/hooks.json`: shipped by the repository,
    /// run only where the project's executables may run (trust, `-p`, agent_api).
    Project,
}

impl HookSource {
    pub fn label(self) -> &'static str {
        match self {
            HookSource::User => "user",
            HookSource::Project => "project",
        }
    }
}

/// A tool-name matcher: a glob (`*`, `?`, letters, digits, `_`, `-`) or else a regex, both
/// matched against the whole name, case-insensitively.
#[derive(Debug, Clone)]
pub struct Matcher {
    pub text: String,
    re: Regex,
}

impl Matcher {
    pub fn parse(text: &str) -> Result<Option<Matcher>, String> {
        let t = text.trim();
        if t.is_empty() || t == "*" {
            return Ok(None);
        }
        let globlike = t
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '*' | '?' | '_' | '-'));
        let body = if globlike {
            regex::escape(t).replace(r"\*", ".*").replace(r"\?", ".")
        } else {
            t.to_string()
        };
        Regex::new(&format!("(?i)^(?:{body})$"))
            .map(|re| {
                Some(Matcher {
                    text: t.to_string(),
                    re,
                })
            })
            .map_err(|e| format!("matcher '{t}' is neither a glob nor a valid regex: {e}"))
    }

    /// Whether the matcher names `tool` (yuyao's name, e.g. `multi-edit`), under yuyao's
    /// spelling or Claude Code's (`MultiEdit`).
    pub fn matches(&self, tool: &str) -> bool {
        self.re.is_match(tool) || claude_name(tool).is_some_and(|c| self.re.is_match(c))
    }
}

/// Claude Code's spelling of a built-in tool, so `"matcher": "Bash"` and scripts that test
/// `.tool_name == "Bash"` work as written.
pub fn claude_name(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "bash" => "Bash",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "multi-edit" => "MultiEdit",
        "grep" => "Grep",
        "glob" => "Glob",
        "notebook-edit" => "NotebookEdit",
        "web-fetch" => "WebFetch",
        "web-search" => "WebSearch",
        "task" => "Task",
        "todo" => "TodoWrite",
        _ => return None,
    })
}

#[derive(Debug, Clone)]
pub struct Hook {
    pub event: HookEvent,
    pub matcher: Option<Matcher>,
    /// The command as written in the file.
    pub raw: String,
    /// The command run: a leading relative path resolved against the file's folder.
    pub command: String,
    pub timeout: Duration,
    pub source: HookSource,
    pub file: PathBuf,
    pub enabled: bool,
    /// Declared in a Claude Code settings file: a non-zero exit other than 2 is a
    /// non-blocking error there (warned about), not a failed gate.
    pub claude_settings: bool,
}

impl Hook {
    pub fn applies_to(&self, tool: Option<&str>) -> bool {
        match (&self.matcher, tool) {
            (None, _) => true,
            (Some(m), Some(t)) => m.matches(t),
            (Some(_), None) => true,
        }
    }
}

/// The files hooks come from, in the order they run: the user's, then the project's.
pub fn files(home: &Path, project: &Path) -> Vec<(PathBuf, HookSource)> {
    let mut out = vec![(home.join("hooks.json"), HookSource::User)];
    if let Some(user) = claude_user_settings() {
        out.push((user, HookSource::User));
    }
    out.extend([
        (
            project.join(".yuyao").join("hooks.json"),
            HookSource::Project,
        ),
        (project.join("hooks.json"), HookSource::Project),
        (
            project.join(".claude").join("settings.json"),
            HookSource::Project,
        ),
        (
            project.join(".claude").join("settings.local.json"),
            HookSource::Project,
        ),
    ]);
    out
}

/// The user's Claude Code settings file (`$CLAUDE_CONFIG_DIR/settings.json`, else
/// `~/.claude/settings.json`), the one whose permission rules are read too
/// (`yuyao_store::permissions::claude_files`).
fn claude_user_settings() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
        .map(|d| d.join("settings.json"))
}

/// Whether `path` is one of Claude Code's settings files (hooks are one key among many).
fn is_claude_settings(path: &Path) -> bool {
    matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some("settings.json" | "settings.local.json")
    )
}

/// Every hook of every file; a file that cannot be read as hooks is skipped with a warning
/// naming it (and the line, for bad JSON), the others load. A project file's hooks load only
/// when `accept(file, bytes)` admits the very bytes parsed (the approval check of
/// extension_trust.rs, without a second read).
pub fn load_if(
    home: &Path,
    project: &Path,
    accept: &dyn Fn(&Path, &[u8]) -> bool,
) -> (Vec<Hook>, Vec<String>) {
    let mut hooks = Vec::new();
    let mut warnings = Vec::new();
    for (path, source) in files(home, project) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if source == HookSource::Project && !accept(&path, text.as_bytes()) {
            continue;
        }
        match parse_file(&text, &path, source) {
            Ok((h, w)) => {
                hooks.extend(h);
                warnings.extend(w);
            }
            Err(e) => warnings.push(format!("{}: {e}; its hooks are skipped", path.display())),
        }
    }
    (hooks, warnings)
}

/// One file: `{"hooks": {event: [entry…]}}` where an entry is Cursor's
/// `{"command", "matcher"?, "timeout"?}` or Claude Code's `{"matcher"?, "hooks": [{"type":
/// "command", "command", "timeout"?}]}`. An entry that makes no sense is skipped with a
/// warning; the rest of the file loads.
pub fn parse_file(
    text: &str,
    path: &Path,
    source: HookSource,
) -> Result<(Vec<Hook>, Vec<String>), String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("line {}: invalid JSON ({e})", e.line()))?;
    let claude_settings = is_claude_settings(path);
    let events = match v.get("hooks") {
        Some(Value::Object(events)) => events,
        // Claude Code's settings hold permissions, a model and more: no hooks is no hooks.
        None if claude_settings => return Ok((Vec::new(), Vec::new())),
        Some(_) if claude_settings => return Err("\"hooks\" is not an object".into()),
        _ => return Err("no \"hooks\" object".into()),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let where_ = |what: &str| format!("{}: {what}", path.display());
    let mut hooks = Vec::new();
    let mut warnings = Vec::new();
    for (name, entries) in events {
        let Some(event) = HookEvent::parse(name) else {
            warnings.push(where_(&format!("unknown hook event '{name}' skipped")));
            continue;
        };
        let Some(entries) = entries.as_array() else {
            warnings.push(where_(&format!("hooks of {name} are not a list; skipped")));
            continue;
        };
        for entry in entries {
            let matcher =
                match Matcher::parse(entry.get("matcher").and_then(Value::as_str).unwrap_or("")) {
                    Ok(m) => m,
                    Err(e) => {
                        warnings.push(where_(&format!("{name}: {e}; skipped")));
                        continue;
                    }
                };
            let commands: Vec<&Value> = match entry.get("hooks").and_then(Value::as_array) {
                Some(inner) => inner.iter().collect(),
                None => vec![entry],
            };
            for c in commands {
                let kind = c.get("type").and_then(Value::as_str).unwrap_or("command");
                let Some(raw) = c
                    .get("command")
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                else {
                    warnings.push(where_(&format!("a {name} hook without a command skipped")));
                    continue;
                };
                if kind != "command" {
                    warnings.push(where_(&format!(
                        "{name}: hook type '{kind}' is not supported; skipped"
                    )));
                    continue;
                }
                let timeout = c
                    .get("timeout")
                    .and_then(Value::as_f64)
                    .filter(|s| *s > 0.0)
                    .map(Duration::from_secs_f64)
                    .unwrap_or(DEFAULT_TIMEOUT);
                hooks.push(Hook {
                    event,
                    matcher: matcher.clone(),
                    raw: raw.to_string(),
                    command: resolve_command(raw, dir),
                    timeout,
                    source,
                    file: path.to_path_buf(),
                    enabled: true,
                    claude_settings,
                });
            }
        }
    }
    Ok((hooks, warnings))
}

/// `./gate.sh --x` → `'/abs/folder/gate.sh' --x`: a command whose program is a relative path
/// runs the file next to the hooks file, wherever the session's cwd is.
fn resolve_command(raw: &str, dir: &Path) -> String {
    let trimmed = raw.trim_start();
    let (prog, rest) = trimmed
        .split_once(char::is_whitespace)
        .unwrap_or((trimmed, ""));
    if !(prog.starts_with("./") || prog.starts_with("../")) {
        return raw.to_string();
    }
    let abs = dir
        .join(prog.strip_prefix("./").unwrap_or(prog))
        .display()
        .to_string();
    let quoted = format!("'{}'", abs.replace('\'', r"'\''"));
    if rest.is_empty() {
        quoted
    } else {
        format!("{quoted} {rest}")
    }
}

/// What a hook asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    Allow,
    Ask,
    Deny,
}

/// A hook's reply, read in both shapes: exit code 2 with the reason on stderr (Claude Code),
/// or a JSON object on stdout — Cursor's `{"permission", "reason"|"agentMessage"}`, Claude
/// Code's `{"decision": "block", "reason"}`, `{"continue": false, "stopReason"}` and
/// `{"hookSpecificOutput": {"permissionDecision", "permissionDecisionReason",
/// "additionalContext"}}`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub permission: Option<Permission>,
    pub reason: String,
    /// Text for the model (UserPromptSubmit/SessionStart context, PostToolUse feedback).
    pub context: String,
}

pub fn read_reply(exit: Option<i32>, stdout: &str, stderr: &str) -> Reply {
    let mut r = Reply::default();
    let json: Option<Value> = serde_json::from_str(stdout.trim())
        .ok()
        .filter(Value::is_object);
    if let Some(v) = &json {
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let spec = v.get("hookSpecificOutput").cloned().unwrap_or(Value::Null);
        let word = s(v, "permission")
            .or_else(|| s(&spec, "permissionDecision"))
            .or_else(|| s(v, "decision"));
        r.permission = word.and_then(|w| match w.to_ascii_lowercase().as_str() {
            "allow" | "approve" => Some(Permission::Allow),
            "ask" => Some(Permission::Ask),
            "deny" | "block" => Some(Permission::Deny),
            _ => None,
        });
        if v.get("continue").and_then(Value::as_bool) == Some(false) {
            r.permission = Some(Permission::Deny);
        }
        r.reason = s(v, "reason")
            .or_else(|| s(&spec, "permissionDecisionReason"))
            .or_else(|| s(v, "agentMessage"))
            .or_else(|| s(v, "agent_message"))
            .or_else(|| s(v, "stopReason"))
            .or_else(|| s(v, "userMessage"))
            .unwrap_or_default();
        r.context = s(&spec, "additionalContext")
            .or_else(|| s(v, "additionalContext"))
            .or_else(|| s(v, "additional_context"))
            .unwrap_or_default();
    } else {
        // Plain text on stdout is context (Claude Code's UserPromptSubmit/SessionStart).
        r.context = stdout.trim().to_string();
    }
    if exit == Some(2) {
        r.permission = Some(Permission::Deny);
        if r.reason.is_empty() {
            r.reason = stderr.trim().to_string();
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Vec<Hook>, Vec<String>) {
        parse_file(text, Path::new("/p/.yuyao/hooks.json"), HookSource::Project).unwrap()
    }

    #[test]
    fn cursor_shape_with_a_relative_command() {
        let (h, w) = parse(
            r#"{"version": 1, "hooks": {"beforeShellExecution": [{"command": "./gate.sh --strict"}]}}"#,
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].event, HookEvent::BeforeShellExecution);
        assert_eq!(h[0].command, "'/p/.yuyao/gate.sh' --strict");
        assert_eq!(h[0].timeout, DEFAULT_TIMEOUT);
        assert!(h[0].matcher.is_none());
    }

    #[test]
    fn claude_shape_with_matchers_and_timeouts() {
        let (h, w) = parse(
            r#"{"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "fmt-check", "timeout": 5}]}],
                           "PostToolUse": [{"matcher": "mcp__*", "hooks": [{"type": "command", "command": "log"}]}],
                           "Nope": []}}"#,
        );
        assert_eq!(h.len(), 2);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("Nope") && w[0].contains("/p/.yuyao/hooks.json"));
        let by = |e| h.iter().find(|x| x.event == e).unwrap();
        let pre = by(HookEvent::PreToolUse);
        assert_eq!(pre.timeout, Duration::from_secs(5));
        assert_eq!(pre.command, "fmt-check");
        assert!(pre.applies_to(Some("edit")) && pre.applies_to(Some("write")));
        assert!(!pre.applies_to(Some("bash")) && !pre.applies_to(Some("multi-edit")));
        let post = by(HookEvent::PostToolUse);
        assert!(post.applies_to(Some("mcp__time__now")) && !post.applies_to(Some("bash")));
    }

    #[test]
    fn claude_settings_files_hold_hooks_among_other_keys() {
        let path = Path::new("/p/.claude/settings.json");
        let (h, w) = parse_file(
            r#"{"permissions": {"allow": ["Bash(ls)"]}, "model": "x",
                "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]}}"#,
            path,
            HookSource::Project,
        )
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(h.len(), 1);
        assert!(h[0].claude_settings && h[0].applies_to(Some("bash")));
        assert!(!h[0].applies_to(Some("read")));
        // Settings without hooks are not an error; a hooks.json without them is.
        let (none, _) = parse_file(r#"{"permissions": {}}"#, path, HookSource::Project).unwrap();
        assert!(none.is_empty());
        assert!(
            parse_file(
                r#"{"permissions": {}}"#,
                Path::new("/p/hooks.json"),
                HookSource::Project
            )
            .is_err()
        );
        let listed = files(Path::new("/h"), Path::new("/p"));
        for f in ["/p/.claude/settings.json", "/p/.claude/settings.local.json"] {
            assert!(
                listed
                    .iter()
                    .any(|(p, s)| p == Path::new(f) && *s == HookSource::Project),
                "{listed:?}"
            );
        }
    }

    #[test]
    fn matchers_glob_regex_and_claude_spellings() {
        let m = |t: &str| Matcher::parse(t).unwrap().unwrap();
        assert!(m("Bash").matches("bash"));
        assert!(m("MultiEdit").matches("multi-edit"));
        assert!(m("*edit").matches("multi-edit"));
        assert!(
            !m("edit").matches("multi-edit"),
            "a glob matches the whole name"
        );
        assert!(m("^(read|grep)$").matches("grep"));
        assert!(Matcher::parse("*").unwrap().is_none());
        assert!(Matcher::parse("(unclosed").is_err());
    }

    #[test]
    fn malformed_file_names_the_line() {
        let e = parse_file(
            "{\n \"hooks\": {\n  \"Stop\": [,]\n}}",
            Path::new("/h.json"),
            HookSource::User,
        )
        .unwrap_err();
        assert!(e.starts_with("line 3:"), "{e}");
    }

    #[test]
    fn replies_in_both_shapes() {
        let deny = read_reply(Some(0), r#"{"permission": "deny", "reason": "no rm"}"#, "");
        assert_eq!(
            (deny.permission, deny.reason.as_str()),
            (Some(Permission::Deny), "no rm")
        );
        let code2 = read_reply(Some(2), "", "blocked: tests fail\n");
        assert_eq!(
            (code2.permission, code2.reason.as_str()),
            (Some(Permission::Deny), "blocked: tests fail")
        );
        let claude = read_reply(
            Some(0),
            r#"{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "check", "additionalContext": "ctx"}}"#,
            "",
        );
        assert_eq!(claude.permission, Some(Permission::Ask));
        assert_eq!(
            (claude.reason.as_str(), claude.context.as_str()),
            ("check", "ctx")
        );
        let block = read_reply(Some(0), r#"{"decision": "block", "reason": "lint"}"#, "");
        assert_eq!(block.permission, Some(Permission::Deny));
        let plain = read_reply(Some(0), "remember the style guide\n", "");
        assert_eq!(
            (plain.permission, plain.context.as_str()),
            (None, "remember the style guide")
        );
        assert_eq!(
            read_reply(Some(1), "", "oops").permission,
            None,
            "exit 1 is not a decision"
        );
    }
}
