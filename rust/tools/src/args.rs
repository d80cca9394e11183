//! Tool arguments: one typed struct per tool, parsed once, with errors that say what to send
//! instead.

use serde_json::Value;

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

// ---------------------------------------------------------------------------------------------
// One typed argument struct per tool (STYLE §1). A call is parsed exactly once, from the raw
// argument text, into a [`ToolArgs`]; the policy's Action, the approval prompt, the review,
// the snapshot and the tool's run all read that value. Two keys naming one field (`file_path`
// and `path`), an unknown key or a missing required key is an error and nothing runs.

use serde::{Deserialize, Deserializer, Serialize, de::Error as _};
use std::path::PathBuf;

/// Lenient integer: numbers, whole floats and strings holding integers; null is absent.
pub fn lenient_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("expected a whole number, got {n}"))),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("expected a whole number, got \"{s}\""))),
        other => Err(D::Error::custom(format!(
            "expected a whole number, got {}",
            kind(&other)
        ))),
    }
}

/// Lenient boolean: `true`/`false` or the strings "true"/"false"; null is absent.
pub fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(b)),
        Value::String(s) if s == "true" || s == "false" => Ok(Some(s == "true")),
        other => Err(D::Error::custom(format!(
            "expected true or false, got {}",
            kind(&other)
        ))),
    }
}

/// An optional string; null is absent.
pub fn opt_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d)
}

/// A PDF page range as a string ("1-5") or a number (3); empty or null is absent.
pub fn lenient_pages<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.trim().to_string())),
        Value::Number(n) => Ok(Some(n.to_string())),
        _ => Err(D::Error::custom(
            "expected a page range such as \"1-5\" or \"3\"",
        )),
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BashParams {
    #[serde(alias = "cmd")]
    pub command: String,
    #[serde(
        default,
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<i64>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub run_in_background: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReadParams {
    #[serde(alias = "path", alias = "filePath")]
    pub file_path: String,
    #[serde(
        default,
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub offset: Option<i64>,
    #[serde(
        default,
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub limit: Option<i64>,
    #[serde(
        default,
        deserialize_with = "lenient_pages",
        skip_serializing_if = "Option::is_none"
    )]
    pub pages: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WriteParams {
    #[serde(alias = "path", alias = "filePath")]
    pub file_path: String,
    #[serde(alias = "contents", alias = "text")]
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EditParams {
    #[serde(alias = "path", alias = "filePath")]
    pub file_path: String,
    #[serde(alias = "old_str", alias = "oldString")]
    pub old_string: String,
    #[serde(alias = "new_str", alias = "newString")]
    pub new_string: String,
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub replace_all: Option<bool>,
}

/// One edit of a multi-edit call.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EditItem {
    #[serde(alias = "old_str", alias = "oldString")]
    pub old_string: String,
    #[serde(alias = "new_str", alias = "newString")]
    pub new_string: String,
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub replace_all: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MultiEditParams {
    #[serde(alias = "path", alias = "filePath")]
    pub file_path: String,
    pub edits: Vec<EditItem>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchParams {
    #[serde(alias = "input", alias = "diff", alias = "content")]
    pub patch: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NotebookEditParams {
    #[serde(alias = "file_path", alias = "path")]
    pub notebook_path: String,
    #[serde(
        default,
        deserialize_with = "opt_str",
        alias = "cellId",
        skip_serializing_if = "Option::is_none"
    )]
    pub cell_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub cell_index: Option<i64>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        alias = "source",
        alias = "content",
        skip_serializing_if = "Option::is_none"
    )]
    pub new_source: Option<String>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub cell_type: Option<String>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub edit_mode: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReadMediaParams {
    #[serde(alias = "path", alias = "filePath")]
    pub file_path: String,
    #[serde(
        default,
        deserialize_with = "lenient_pages",
        skip_serializing_if = "Option::is_none"
    )]
    pub pages: Option<String>,
    /// Screen recordings: how many frames to sample.
    #[serde(
        default,
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub frames: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WebFetchParams {
    #[serde(alias = "uri")]
    pub url: String,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_chars: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchParams {
    #[serde(alias = "q")]
    pub query: String,
    #[serde(
        default,
        alias = "limit",
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_results: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserParams {
    pub action: String,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub url: Option<String>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub selector: Option<String>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub text: Option<String>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub key: Option<String>,
    #[serde(
        default,
        alias = "script",
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub expression: Option<String>,
    /// extract: text (default), links or html.
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub what: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub full_page: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GrepParams {
    #[serde(alias = "regex", alias = "query")]
    pub pattern: String,
    #[serde(
        default,
        deserialize_with = "opt_str",
        alias = "file_path",
        skip_serializing_if = "Option::is_none"
    )]
    pub path: Option<String>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub glob: Option<String>,
    #[serde(
        default,
        rename = "type",
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub file_type: Option<String>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_mode: Option<String>,
    #[serde(
        default,
        rename = "-i",
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub case_insensitive: Option<bool>,
    #[serde(
        default,
        rename = "-n",
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub line_numbers: Option<bool>,
    #[serde(
        default,
        rename = "-A",
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub after: Option<i64>,
    #[serde(
        default,
        rename = "-B",
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub before: Option<i64>,
    #[serde(
        default,
        rename = "-C",
        alias = "context",
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub context: Option<i64>,
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub multiline: Option<bool>,
    #[serde(
        default,
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub head_limit: Option<i64>,
    #[serde(
        default,
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub offset: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GlobParams {
    #[serde(alias = "glob")]
    pub pattern: String,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorParams {
    #[serde(alias = "cmd")]
    pub command: String,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub notify: Option<String>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub until: Option<String>,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JobParams {
    #[serde(
        alias = "bash_id",
        alias = "shell_id",
        alias = "job_id",
        alias = "task_id",
        alias = "monitor_id"
    )]
    pub id: String,
    #[serde(
        default,
        deserialize_with = "opt_str",
        skip_serializing_if = "Option::is_none"
    )]
    pub filter: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JobStopParams {
    #[serde(
        alias = "bash_id",
        alias = "shell_id",
        alias = "job_id",
        alias = "task_id",
        alias = "monitor_id"
    )]
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AskUserParams {
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
}

/// The one parsed form of a tool call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolArgs {
    Bash(BashParams),
    Read(ReadParams),
    Write(WriteParams),
    Edit(EditParams),
    MultiEdit(MultiEditParams),
    ApplyPatch(ApplyPatchParams),
    NotebookEdit(NotebookEditParams),
    ReadMedia(ReadMediaParams),
    WebFetch(WebFetchParams),
    WebSearch(WebSearchParams),
    Browser(BrowserParams),
    Grep(GrepParams),
    Glob(GlobParams),
    Monitor(MonitorParams),
    BgList(NoParams),
    BgOutput(JobParams),
    BgStop(JobStopParams),
    AskUser(AskUserParams),
}

/// Accepted keys per tool: (canonical key, its aliases). Used in error messages; a test keeps
/// it in step with the structs and the advertised schemas.
/// One accepted argument: its canonical key and its aliases.
pub type Key = (&'static str, &'static [&'static str]);

pub const ACCEPTED: &[(&str, &[Key])] = &[
    (
        "bash",
        &[
            ("command", &["cmd"]),
            ("timeout", &[]),
            ("description", &[]),
            ("run_in_background", &[]),
        ],
    ),
    (
        "read",
        &[
            ("file_path", &["path", "filePath"]),
            ("offset", &[]),
            ("limit", &[]),
            ("pages", &[]),
        ],
    ),
    (
        "write",
        &[
            ("file_path", &["path", "filePath"]),
            ("content", &["contents", "text"]),
        ],
    ),
    (
        "edit",
        &[
            ("file_path", &["path", "filePath"]),
            ("old_string", &["old_str", "oldString"]),
            ("new_string", &["new_str", "newString"]),
            ("replace_all", &[]),
        ],
    ),
    (
        "multi-edit",
        &[("file_path", &["path", "filePath"]), ("edits", &[])],
    ),
    ("apply-patch", &[("patch", &["input", "diff", "content"])]),
    (
        "notebook-edit",
        &[
            ("notebook_path", &["file_path", "path"]),
            ("cell_id", &["cellId"]),
            ("cell_index", &[]),
            ("new_source", &["source", "content"]),
            ("cell_type", &[]),
            ("edit_mode", &[]),
        ],
    ),
    (
        "read-media",
        &[
            ("file_path", &["path", "filePath"]),
            ("pages", &[]),
            ("frames", &[]),
        ],
    ),
    (
        "web-fetch",
        &[("url", &["uri"]), ("prompt", &[]), ("max_chars", &[])],
    ),
    (
        "web-search",
        &[("query", &["q"]), ("max_results", &["limit"])],
    ),
    (
        "browser",
        &[
            ("action", &[]),
            ("url", &[]),
            ("selector", &[]),
            ("text", &[]),
            ("key", &[]),
            ("expression", &["script"]),
            ("what", &[]),
            ("full_page", &[]),
        ],
    ),
    (
        "grep",
        &[
            ("pattern", &["regex", "query"]),
            ("path", &["file_path"]),
            ("glob", &[]),
            ("type", &[]),
            ("output_mode", &[]),
            ("-i", &[]),
            ("-n", &[]),
            ("-A", &[]),
            ("-B", &[]),
            ("-C", &["context"]),
            ("multiline", &[]),
            ("head_limit", &[]),
            ("offset", &[]),
        ],
    ),
    ("glob", &[("pattern", &["glob"]), ("path", &[])]),
    (
        "monitor",
        &[
            ("command", &["cmd"]),
            ("notify", &[]),
            ("until", &[]),
            ("description", &[]),
        ],
    ),
    ("bg-list", &[]),
    (
        "bg-output",
        &[
            (
                "id",
                &["bash_id", "shell_id", "job_id", "task_id", "monitor_id"],
            ),
            ("filter", &[]),
        ],
    ),
    (
        "bg-stop",
        &[(
            "id",
            &["bash_id", "shell_id", "job_id", "task_id", "monitor_id"],
        )],
    ),
    ("ask-user", &[("question", &[]), ("options", &[])]),
];

/// "file_path (or path, filePath), offset, limit" for `tool`.
pub fn accepted_keys(tool: &str) -> String {
    let Some((_, keys)) = ACCEPTED.iter().find(|(t, _)| *t == tool) else {
        return String::from("(unknown tool)");
    };
    if keys.is_empty() {
        return String::from("none (send {})");
    }
    keys.iter()
        .map(|(k, aliases)| {
            if aliases.is_empty() {
                k.to_string()
            } else {
                format!("{k} (or {})", aliases.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn explain(tool: &str, e: &serde_json::Error) -> String {
    let msg = e.to_string();
    // serde_json appends " at line 1 column 57": noise for the model.
    let msg = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    let hint = if msg.starts_with("duplicate field") {
        " Two keys name the same argument (one is an alias of the other); send it once, under one key."
    } else {
        ""
    };
    format!(
        "invalid arguments for {tool}: {msg}.{hint} Nothing was run. Accepted keys: {}.",
        accepted_keys(tool)
    )
}

fn typed<T: serde::de::DeserializeOwned>(tool: &str, raw: &str) -> Result<T, String> {
    serde_json::from_str::<T>(raw).map_err(|e| explain(tool, &e))
}

impl ToolArgs {
    /// Parses a call's raw argument text for the canonical tool `name`. Empty text means `{}`.
    /// The text is decoded straight into the tool's struct, so a key repeated in the text is
    /// a duplicate too.
    pub fn parse(name: &str, raw: &str) -> Result<ToolArgs, String> {
        let raw = if raw.trim().is_empty() { "{}" } else { raw };
        match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(_)) => {}
            Ok(other) => {
                return Err(format!(
                    "tool arguments must be a JSON object, got: {}",
                    other.to_string().chars().take(200).collect::<String>()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "tool arguments are not valid JSON ({e}); send a JSON object with the documented parameters: {}",
                    accepted_keys(name)
                ));
            }
        }
        Ok(match name {
            "bash" => ToolArgs::Bash(typed(name, raw)?),
            "read" => ToolArgs::Read(typed(name, raw)?),
            "write" => ToolArgs::Write(typed(name, raw)?),
            "edit" => ToolArgs::Edit(typed(name, raw)?),
            "multi-edit" => ToolArgs::MultiEdit(typed(name, raw)?),
            "apply-patch" => ToolArgs::ApplyPatch(typed(name, raw)?),
            "notebook-edit" => ToolArgs::NotebookEdit(typed(name, raw)?),
            "read-media" => ToolArgs::ReadMedia(typed(name, raw)?),
            "web-fetch" => ToolArgs::WebFetch(typed(name, raw)?),
            "web-search" => ToolArgs::WebSearch(typed(name, raw)?),
            "browser" => ToolArgs::Browser(typed(name, raw)?),
            "grep" => ToolArgs::Grep(typed(name, raw)?),
            "glob" => ToolArgs::Glob(typed(name, raw)?),
            "monitor" => ToolArgs::Monitor(typed(name, raw)?),
            "bg-list" => ToolArgs::BgList(typed(name, raw)?),
            "bg-output" => ToolArgs::BgOutput(typed(name, raw)?),
            "bg-stop" => ToolArgs::BgStop(typed(name, raw)?),
            "ask-user" => ToolArgs::AskUser(typed(name, raw)?),
            other => return Err(format!("unknown tool '{other}'")),
        })
    }

    /// Parses an already decoded JSON value (tests, internal callers).
    pub fn from_value(name: &str, v: &Value) -> Result<ToolArgs, String> {
        ToolArgs::parse(name, &v.to_string())
    }

    /// The canonical tool name these arguments belong to.
    pub fn tool(&self) -> &'static str {
        match self {
            ToolArgs::Bash(_) => "bash",
            ToolArgs::Read(_) => "read",
            ToolArgs::Write(_) => "write",
            ToolArgs::Edit(_) => "edit",
            ToolArgs::MultiEdit(_) => "multi-edit",
            ToolArgs::ApplyPatch(_) => "apply-patch",
            ToolArgs::NotebookEdit(_) => "notebook-edit",
            ToolArgs::ReadMedia(_) => "read-media",
            ToolArgs::WebFetch(_) => "web-fetch",
            ToolArgs::WebSearch(_) => "web-search",
            ToolArgs::Browser(_) => "browser",
            ToolArgs::Grep(_) => "grep",
            ToolArgs::Glob(_) => "glob",
            ToolArgs::Monitor(_) => "monitor",
            ToolArgs::BgList(_) => "bg-list",
            ToolArgs::BgOutput(_) => "bg-output",
            ToolArgs::BgStop(_) => "bg-stop",
            ToolArgs::AskUser(_) => "ask-user",
        }
    }

    /// The shell command this call runs, if it runs one.
    pub fn command(&self) -> Option<&str> {
        match self {
            ToolArgs::Bash(a) => Some(&a.command),
            ToolArgs::Monitor(a) => Some(&a.command),
            _ => None,
        }
    }

    /// The model's own description of the call, if it gave one.
    pub fn description(&self) -> Option<&str> {
        match self {
            ToolArgs::Bash(a) => a.description.as_deref(),
            ToolArgs::Monitor(a) => a.description.as_deref(),
            _ => None,
        }
    }

    /// The path arguments as the model wrote them (apply-patch: every file the patch touches,
    /// parsed from the same text the tool applies).
    pub fn raw_paths(&self) -> Result<Vec<String>, String> {
        Ok(match self {
            ToolArgs::Read(a) => vec![a.file_path.clone()],
            ToolArgs::Write(a) => vec![a.file_path.clone()],
            ToolArgs::Edit(a) => vec![a.file_path.clone()],
            ToolArgs::MultiEdit(a) => vec![a.file_path.clone()],
            ToolArgs::NotebookEdit(a) => vec![a.notebook_path.clone()],
            ToolArgs::ReadMedia(a) => vec![a.file_path.clone()],
            ToolArgs::Grep(a) => a.path.iter().cloned().collect(),
            ToolArgs::Glob(a) => a.path.iter().cloned().collect(),
            ToolArgs::ApplyPatch(a) => crate::patch::patch_raw_paths(&a.patch)?,
            _ => Vec::new(),
        })
    }

    /// Every path this call touches, resolved (symlinks included) the way the tool will open
    /// it: what the policy judges.
    pub fn paths(&self, ctx: &crate::ToolContext) -> Result<Vec<PathBuf>, String> {
        let mut out: Vec<PathBuf> = Vec::new();
        for p in self.raw_paths()? {
            let r = ctx.resolve(&p);
            if !out.contains(&r) {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The canonical JSON form (canonical key names only): what the trajectory records and
    /// what tools that take JSON receive.
    pub fn to_value(&self) -> Value {
        let v = match self {
            ToolArgs::Bash(a) => serde_json::to_value(a),
            ToolArgs::Read(a) => serde_json::to_value(a),
            ToolArgs::Write(a) => serde_json::to_value(a),
            ToolArgs::Edit(a) => serde_json::to_value(a),
            ToolArgs::MultiEdit(a) => serde_json::to_value(a),
            ToolArgs::ApplyPatch(a) => serde_json::to_value(a),
            ToolArgs::NotebookEdit(a) => serde_json::to_value(a),
            ToolArgs::ReadMedia(a) => serde_json::to_value(a),
            ToolArgs::WebFetch(a) => serde_json::to_value(a),
            ToolArgs::WebSearch(a) => serde_json::to_value(a),
            ToolArgs::Browser(a) => serde_json::to_value(a),
            ToolArgs::Grep(a) => serde_json::to_value(a),
            ToolArgs::Glob(a) => serde_json::to_value(a),
            ToolArgs::Monitor(a) => serde_json::to_value(a),
            ToolArgs::BgList(a) => serde_json::to_value(a),
            ToolArgs::BgOutput(a) => serde_json::to_value(a),
            ToolArgs::BgStop(a) => serde_json::to_value(a),
            ToolArgs::AskUser(a) => serde_json::to_value(a),
        };
        v.unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(tool: &str, raw: &str) -> Result<ToolArgs, String> {
        ToolArgs::parse(tool, raw)
    }

    #[test]
    fn two_keys_for_one_field_are_refused() {
        for (tool, raw) in [
            (
                "write",
                r#"{"path": "/outside/x", "file_path": "inside.txt", "content": "x"}"#,
            ),
            (
                "write",
                r#"{"file_path": "a", "filePath": "b", "content": "x"}"#,
            ),
            (
                "write",
                r#"{"file_path": "a", "content": "x", "contents": "y"}"#,
            ),
            ("read", r#"{"file_path": "README.md", "path": ".env"}"#),
            (
                "edit",
                r#"{"file_path": "a", "old_string": "x", "old_str": "y", "new_string": "z"}"#,
            ),
            (
                "apply-patch",
                r#"{"patch": "*** Begin Patch", "input": "*** Begin Patch"}"#,
            ),
            ("apply-patch", r#"{"diff": "a", "content": "b"}"#),
            (
                "notebook-edit",
                r#"{"notebook_path": "a.ipynb", "file_path": "b.ipynb", "new_source": ""}"#,
            ),
            ("bash", r#"{"command": "ls", "cmd": "rm -rf x"}"#),
            ("monitor", r#"{"cmd": "ls", "command": "rm x"}"#),
            ("grep", r#"{"pattern": "a", "regex": "b"}"#),
            ("grep", r#"{"pattern": "a", "-C": 1, "context": 2}"#),
            ("bg-stop", r#"{"id": "bash_1", "shell_id": "bash_2"}"#),
            // The same key twice in the text is a duplicate too.
            ("bash", r#"{"command": "ls", "command": "rm x"}"#),
        ] {
            let e = parse(tool, raw).expect_err(raw);
            assert!(e.contains("duplicate field"), "{raw}: {e}");
            assert!(e.contains("Nothing was run"), "{e}");
            assert!(e.contains("Accepted keys"), "{e}");
        }
    }

    #[test]
    fn unknown_keys_are_refused_naming_the_accepted_ones() {
        for (tool, raw) in [
            (
                "read",
                r#"{"notebook_path": "README.md", "filePath": ".env"}"#,
            ),
            ("read", r#"{"file_path": "a", "offest": 3}"#),
            (
                "write",
                r#"{"file_path": "a", "content": "x", "mode": "0777"}"#,
            ),
            ("bash", r#"{"command": "ls", "shell": "zsh"}"#),
            (
                "multi-edit",
                r#"{"file_path": "a", "edits": [{"old_string": "a", "new_string": "b", "x": 1}]}"#,
            ),
            ("bg-list", r#"{"all": true}"#),
        ] {
            let e = parse(tool, raw).expect_err(raw);
            assert!(e.contains("unknown field"), "{raw}: {e}");
        }
        let e = parse("read", r#"{"notebook_path": "a"}"#).unwrap_err();
        assert!(e.contains("file_path (or path, filePath)"), "{e}");
    }

    #[test]
    fn missing_required_keys_are_refused() {
        for (tool, raw, field) in [
            ("write", r#"{"file_path": "a"}"#, "content"),
            ("write", r#"{"content": "a"}"#, "file_path"),
            ("read", "", "file_path"),
            ("bash", r#"{"description": "x"}"#, "command"),
            (
                "edit",
                r#"{"file_path": "a", "old_string": "x"}"#,
                "new_string",
            ),
            ("apply-patch", "{}", "patch"),
            ("bg-output", "{}", "id"),
        ] {
            let e = parse(tool, raw).expect_err(raw);
            assert!(
                e.contains(&format!("missing field `{field}`")),
                "{raw}: {e}"
            );
        }
    }

    #[test]
    fn lenient_numbers_and_booleans() {
        let a = parse(
            "read",
            r#"{"file_path": "a", "offset": "5", "limit": 3.0, "pages": null}"#,
        )
        .unwrap();
        let ToolArgs::Read(r) = a else { panic!() };
        assert_eq!((r.offset, r.limit, r.pages), (Some(5), Some(3), None));
        let ToolArgs::Read(r) = parse("read", r#"{"path": "a", "pages": 3}"#).unwrap() else {
            panic!()
        };
        assert_eq!(r.pages.as_deref(), Some("3"));
        let ToolArgs::Bash(b) = parse(
            "bash",
            r#"{"cmd": "ls", "timeout": " 1000 ", "run_in_background": "true"}"#,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(b.command, "ls");
        assert_eq!((b.timeout, b.run_in_background), (Some(1000), Some(true)));
        let ToolArgs::Grep(g) =
            parse("grep", r#"{"pattern": "x", "-i": "false", "-C": "2"}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!((g.case_insensitive, g.context), (Some(false), Some(2)));
        for bad in [
            r#"{"file_path": "a", "offset": "five"}"#,
            r#"{"file_path": "a", "offset": 1.5}"#,
            r#"{"file_path": "a", "offset": true}"#,
            r#"{"file_path": 7}"#,
        ] {
            assert!(parse("read", bad).is_err(), "{bad}");
        }
        assert!(
            parse(
                "edit",
                r#"{"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"}"#
            )
            .is_err()
        );
    }

    #[test]
    fn not_an_object_or_not_json() {
        assert!(parse("read", "[1]").unwrap_err().contains("JSON object"));
        assert!(
            parse("read", "{nope")
                .unwrap_err()
                .contains("not valid JSON")
        );
    }

    #[test]
    fn command_paths_and_canonical_form_come_from_the_one_parse() {
        let a = parse("bash", r#"{"cmd": "rm victim"}"#).unwrap();
        assert_eq!(a.command(), Some("rm victim"));
        assert_eq!(a.to_value(), json!({"command": "rm victim"}));
        let a = parse("monitor", r#"{"cmd": "tail -F log"}"#).unwrap();
        assert_eq!(a.command(), Some("tail -F log"));
        let a = parse("notebook-edit", r#"{"path": "n.ipynb", "source": "x"}"#).unwrap();
        assert_eq!(a.raw_paths().unwrap(), vec!["n.ipynb".to_string()]);
        assert_eq!(
            a.to_value(),
            json!({"notebook_path": "n.ipynb", "new_source": "x"})
        );
        // apply-patch: every file the patch touches, from the text the tool applies.
        let patch = "*** Begin Patch\n*** Update File: ws/inside.txt\n*** Move to: ../outside/authorized_keys\n@@\n-a\n+b\n*** Add File: new.txt\n+n\n*** End Patch\n";
        let a = ToolArgs::from_value("apply-patch", &json!({"input": patch})).unwrap();
        assert_eq!(
            a.raw_paths().unwrap(),
            vec!["ws/inside.txt", "../outside/authorized_keys", "new.txt"]
        );
        // A patch the tool could not parse is refused before anything is judged or run.
        let a = ToolArgs::from_value("apply-patch", &json!({"patch": "hello"})).unwrap();
        assert!(a.raw_paths().is_err());
    }

    #[test]
    fn accepted_keys_match_the_structs_and_the_schemas() {
        let reg = crate::Registry::default();
        for (tool, keys) in ACCEPTED {
            for (key, aliases) in *keys {
                for k in std::iter::once(key).chain(aliases.iter()) {
                    let raw = json!({ *k: "1" }).to_string();
                    if let Err(e) = ToolArgs::parse(tool, &raw) {
                        assert!(!e.contains("unknown field"), "{tool}.{k}: {e}");
                    }
                }
            }
            let Some(t) = reg.get(tool) else {
                assert_eq!(*tool, "ask-user");
                continue;
            };
            let schema = t.parameters();
            let mut props: Vec<String> = schema["properties"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            let mut canon: Vec<String> = keys.iter().map(|(k, _)| k.to_string()).collect();
            props.sort();
            canon.sort();
            assert_eq!(props, canon, "schema of {tool}");
            let raw = json!({"surely_unknown": 1}).to_string();
            assert!(
                ToolArgs::parse(tool, &raw)
                    .unwrap_err()
                    .contains("unknown field")
            );
        }
        for name in reg.names() {
            assert!(ACCEPTED.iter().any(|(t, _)| *t == name), "{name}");
        }
    }
}
