//! yuyao-code-intel — code intelligence through language servers, a feature registered with the
//! core's kernel (removing it is deleting this crate and its registration line)
//! (`--experimental-lsp`, config `lsp.enabled`): the `lsp` tool (definition, references, hover,
//! diagnostics, symbols) and the diagnostics appended to the result of every file edit. Servers
//! start lazily, one per language, in the project folder, without the model key; a crashed
//! server is restarted once; all stop with the session.

use yuyao_lsp::client;
mod format;
pub mod refs;
use yuyao_lsp::servers;

use client::Client;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use yuyao_core::Session;
use yuyao_core::{Origin, ProcessKind};
use yuyao_tools::ToolOutput;

pub const NAME: &str = "lsp";
/// Diagnostics listed per file after an edit.
const MAX_EDIT_DIAGNOSTICS: usize = 20;
const START_TIMEOUT: Duration = Duration::from_secs(15);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_SETTLE_MS: u64 = 2500;

enum Slot {
    Running(Arc<Client>),
    /// Could not start, or crashed after its one restart: the reason, said again.
    Failed(String),
}

struct Server {
    slot: Slot,
    restarts: u32,
}

#[derive(Default)]
pub(crate) struct Manager {
    /// `--experimental-lsp` (the configuration may enable it too: [`Session::lsp_enabled`]).
    flag: bool,
    servers: Mutex<HashMap<&'static str, Server>>,
}

pub(crate) trait LspExt {
    fn lsp(&self) -> &Manager;
}

impl LspExt for Session {
    /// Language servers of the `lsp` tool and the edit diagnostics.
    fn lsp(&self) -> &Manager {
        self.part()
    }
}

impl Manager {
    pub(crate) fn new(opts: &yuyao_protocol::SessionOptions) -> Self {
        Manager {
            flag: opts.experimental_lsp,
            servers: Mutex::new(HashMap::new()),
        }
    }

    /// Stops every server (session close; safe to call twice).
    pub(crate) fn shutdown(&self) {
        let servers: Vec<Server> = {
            let mut map = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            map.drain().map(|(_, s)| s).collect()
        };
        for s in servers {
            if let Slot::Running(c) = s.slot {
                c.stop();
            }
        }
    }
}

pub(crate) trait LspServersExt {
    fn lsp_config(&self, key: &str) -> Option<toml::Value>;
    fn lsp_origin(&self, key: &str) -> Origin;
    fn lsp_enabled(&self) -> bool;
    fn lsp_client(&self, language: &'static str) -> Result<Arc<Client>, String>;
    fn lsp_running(&self) -> Option<&'static str>;
    fn lsp_settle(&self) -> Duration;
    fn lsp_path(&self, raw: &str) -> Result<PathBuf, String>;
    fn lsp_after_edit(&self, name: &str, paths: &[PathBuf], out: &mut ToolOutput);
    fn lsp_display(&self, p: &Path) -> String;
    fn lsp_quotable(&self, p: &Path) -> bool;
}

impl LspServersExt for Session {
    /// An `lsp.*` setting. A server command is an executable: the project's configuration
    /// counts only where project-provided executables may run (as for its hooks and MCP
    /// servers); otherwise the user's file alone is read.
    fn lsp_config(&self, key: &str) -> Option<toml::Value> {
        if self.project_extensions_allowed() {
            self.config().get(key)
        } else {
            self.config().get_in(key, yuyao_store::Layer::User)
        }
    }

    /// Whose configuration names the server of `key`: the project's when its layer sets it
    /// and counts, else the user's (their file, or a server found on `PATH`).
    fn lsp_origin(&self, key: &str) -> Origin {
        let in_project = self
            .config()
            .get_in(key, yuyao_store::Layer::Project)
            .is_some();
        if in_project && self.project_extensions_allowed() {
            Origin::Project
        } else {
            Origin::User
        }
    }

    fn lsp_enabled(&self) -> bool {
        self.lsp().flag || self.lsp_config("lsp.enabled").and_then(|v| v.as_bool()) == Some(true)
    }

    /// The running server for `language`, started now if it is not (or restarted once if it
    /// died).
    fn lsp_client(&self, language: &'static str) -> Result<Arc<Client>, String> {
        let mut map = self.lsp().servers.lock().unwrap_or_else(|e| e.into_inner());
        let restarts = match map.get(language) {
            Some(Server {
                slot: Slot::Running(c),
                ..
            }) if c.alive() => return Ok(c.clone()),
            Some(Server {
                slot: Slot::Failed(why),
                ..
            }) => return Err(why.clone()),
            Some(Server {
                slot: Slot::Running(c),
                restarts,
            }) => {
                let (restarts, command) = (*restarts, c.command.clone());
                if restarts >= 1 {
                    let why = format!(
                        "the {language} language server ({command}) exited again after its restart; it stays stopped for this session"
                    );
                    map.insert(
                        language,
                        Server {
                            slot: Slot::Failed(why.clone()),
                            restarts,
                        },
                    );
                    return Err(why);
                }
                restarts + 1
            }
            None => 0,
        };
        let config = self.lsp_config(&format!("lsp.servers.{language}"));
        let origin = self.lsp_origin(&format!("lsp.servers.{language}"));
        let confinement = self.process_confinement(ProcessKind::LanguageServer, origin);
        let started = servers::command_for(language, config.as_ref()).and_then(|argv| {
            let prepared = yuyao_policy::sandbox::prepare(&confinement)?;
            Client::start(
                &argv[0],
                &argv[1..],
                &self.tool_context().project(),
                START_TIMEOUT,
                prepared,
                self.cache_env(&confinement),
            )
        });
        match started {
            Ok(c) => {
                let c = Arc::new(c);
                self.lock().trajectory.record(
                    "lsp_start",
                    json!({"language": language, "command": c.command, "pid": c.pid(), "restart": restarts > 0}),
                );
                map.insert(
                    language,
                    Server {
                        slot: Slot::Running(c.clone()),
                        restarts,
                    },
                );
                Ok(c)
            }
            Err(why) => {
                map.insert(
                    language,
                    Server {
                        slot: Slot::Failed(why.clone()),
                        restarts,
                    },
                );
                Err(why)
            }
        }
    }

    fn lsp_running(&self) -> Option<&'static str> {
        let map = self.lsp().servers.lock().unwrap_or_else(|e| e.into_inner());
        let mut langs: Vec<&'static str> = map
            .iter()
            .filter(|(_, s)| matches!(s.slot, Slot::Running(_)))
            .map(|(l, _)| *l)
            .collect();
        langs.sort_unstable();
        langs.first().copied()
    }

    fn lsp_settle(&self) -> Duration {
        let ms = self
            .lsp_config("lsp.diagnostics_timeout_ms")
            .and_then(|v| v.as_integer())
            .filter(|v| *v > 0)
            .map_or(DEFAULT_SETTLE_MS, |v| v as u64);
        Duration::from_millis(ms)
    }

    /// A path the tool may read: inside the project (or an added folder), not a secret
    /// file, not denied by a `Read(...)` rule — the read tool's checks.
    fn lsp_path(&self, raw: &str) -> Result<PathBuf, String> {
        let path = self.tool_context().resolve(raw);
        if !self
            .tool_context()
            .roots()
            .iter()
            .any(|r| path.starts_with(r))
        {
            return Err(format!(
                "Refused: {} is outside the project; lsp works on the project's files only.",
                path.display()
            ));
        }
        if !path.is_file() {
            return Err(format!("{} is not a file", path.display()));
        }
        let action = yuyao_policy::Action {
            tool: "read".into(),
            command: None,
            paths: vec![path.clone()],
        };
        let decision = self.lock().policy.decide(&action);
        match decision.verdict {
            yuyao_policy::Verdict::Allow => Ok(path),
            _ => Err(format!(
                "Refused: {}. lsp reads only files the read tool may read without asking.",
                decision.reason
            )),
        }
    }

    /// After a write/edit/multi-edit/apply-patch that succeeded: the edited files'
    /// errors and warnings, appended to the tool's result.
    fn lsp_after_edit(&self, name: &str, paths: &[PathBuf], out: &mut ToolOutput) {
        if !out.ok
            || !self.lsp_enabled()
            || !matches!(name, "write" | "edit" | "multi-edit" | "apply-patch")
        {
            return;
        }
        let mut notes = Vec::new();
        for path in paths {
            let Some((language, language_id)) = servers::language_of(path) else {
                continue;
            };
            if !path.is_file() || yuyao_policy::sensitive::is_sensitive(path) {
                continue;
            }
            let settle = self.lsp_settle();
            let diags = match with_client(self, language, |c| {
                let (uri, generation) = c.sync(path, language_id)?;
                Ok(c.wait_diagnostics(&uri, generation, settle))
            }) {
                Ok(d) => d,
                // No server for this language: nothing to add (the lsp tool says why).
                Err(_) => continue,
            };
            let shown = self.lsp_display(path);
            notes.push(match diags {
                Some(d) => format::edit_diagnostics(&shown, &d, MAX_EDIT_DIAGNOSTICS),
                None => format!(
                    "[lsp] {shown}: the {language} server published no diagnostics within {} ms",
                    self.lsp_settle().as_millis()
                ),
            });
        }
        if !notes.is_empty() {
            out.text = format!("{}\n\n{}", out.text.trim_end(), notes.join("\n"));
        }
    }

    /// A path as the model should see it: relative to the project when inside it.
    fn lsp_display(&self, p: &Path) -> String {
        let root = self.tool_context().project();
        p.strip_prefix(&root)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    }

    /// Whether a location's file may be quoted (inside the project and not a secret).
    fn lsp_quotable(&self, p: &Path) -> bool {
        self.tool_context().roots().iter().any(|r| p.starts_with(r))
            && !yuyao_policy::sensitive::is_sensitive(p)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    operation: String,
    #[serde(default, alias = "path", alias = "file")]
    file_path: Option<String>,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default, alias = "column", alias = "col")]
    character: Option<u32>,
    #[serde(default, alias = "symbol")]
    query: Option<String>,
}

pub(crate) fn schema() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": NAME,
            "description": "Code intelligence from the project's language server. Operations: definition, references, hover (need file_path + line; character, or query = the symbol's name on that line), diagnostics (errors and warnings of file_path), document_symbols (outline of file_path), workspace_symbols (query; file_path picks the language). line and character are 1-based, as the read tool numbers lines.",
            "parameters": {
                "type": "object",
                "properties": {
                    "operation": {"type": "string", "enum": ["definition", "references", "hover", "diagnostics", "document_symbols", "workspace_symbols"]},
                    "file_path": {"type": "string", "description": "file in the project"},
                    "line": {"type": "integer", "minimum": 1, "description": "1-based line"},
                    "character": {"type": "integer", "minimum": 1, "description": "1-based column of the symbol"},
                    "query": {"type": "string", "description": "symbol name: searched for workspace_symbols, located on `line` when character is absent"}
                },
                "required": ["operation"],
                "additionalProperties": false
            }
        }
    })
}

/// Runs the `lsp` tool when `name` is it.
pub(crate) fn run_tool(session: &Session, name: &str, raw: &str) -> Option<ToolOutput> {
    if name != NAME {
        return None;
    }
    let args = match yuyao_tools::parse_arguments(raw)
        .and_then(|v| serde_json::from_value::<Params>(v).map_err(|e| e.to_string()))
    {
        Ok(a) => a,
        Err(e) => {
            return Some(ToolOutput::err(format!(
                "invalid arguments for lsp: {e}. Send {{operation, file_path, line?, character?, query?}}."
            )));
        }
    };
    let result = run(session, &args);
    session.lock().trajectory.record(
        "lsp",
        json!({"operation": args.operation, "file_path": args.file_path, "ok": result.is_ok()}),
    );
    Some(match result {
        Ok(text) => ToolOutput::ok(text),
        Err(e) => ToolOutput::err(e),
    })
}

fn run(s: &Session, a: &Params) -> Result<String, String> {
    let op = a.operation.trim().to_ascii_lowercase().replace('-', "_");
    let op = match op.as_str() {
        "definition" | "goto_definition" | "go_to_definition" => "definition",
        "references" | "find_references" => "references",
        "hover" => "hover",
        "diagnostics" => "diagnostics",
        "document_symbols" | "document_symbol" | "symbols" | "outline" => "document_symbols",
        "workspace_symbols" | "workspace_symbol" => "workspace_symbols",
        other => {
            return Err(format!(
                "unknown lsp operation '{other}'; one of definition, references, hover, diagnostics, document_symbols, workspace_symbols"
            ));
        }
    };
    if op == "workspace_symbols" {
        let query = a
            .query
            .as_deref()
            .filter(|q| !q.trim().is_empty())
            .ok_or("workspace_symbols needs query (a symbol name)")?;
        let language = match &a.file_path {
            Some(p) => {
                let path = s.lsp_path(p)?;
                servers::language_of(&path)
                    .ok_or_else(|| format!("no language server handles {}", path.display()))?
                    .0
            }
            // Without a file: the language of a server already running.
            None => s.lsp_running().ok_or(
                "workspace_symbols needs file_path (any file of the language) when no language server runs yet",
            )?,
        };
        return with_client(s, language, |client| {
            offers(client, language, "workspaceSymbolProvider", op)?;
            let params = json!({"query": query});
            let res = ask(client, language, op, "workspace/symbol", params)?;
            Ok(format::symbols(
                s,
                &res,
                &format!("symbols matching '{query}'"),
            ))
        });
    }
    let raw = a
        .file_path
        .as_deref()
        .ok_or_else(|| format!("{op} needs file_path"))?;
    let path = s.lsp_path(raw)?;
    let (language, language_id) = servers::language_of(&path).ok_or_else(|| {
        format!(
            "no language server handles {} (known: Python, Rust, TypeScript/JavaScript, Go, C/C++)",
            path.display()
        )
    })?;
    let line = match op {
        "definition" | "references" | "hover" => Some(
            a.line
                .filter(|l| *l >= 1)
                .ok_or_else(|| format!("{op} needs line (1-based) and character or query"))?,
        ),
        _ => None,
    };
    let character = match line {
        Some(l) => Some(position_in_line(&path, l, a.character, a.query.as_deref())?),
        None => None,
    };
    let shown = s.lsp_display(&path);
    with_client(s, language, |client| {
        let provider = match op {
            "definition" => "definitionProvider",
            "references" => "referencesProvider",
            "hover" => "hoverProvider",
            "document_symbols" => "documentSymbolProvider",
            _ => "",
        };
        if !provider.is_empty() {
            offers(client, language, provider, op)?;
        }
        let (uri, generation) = client.sync(&path, language_id)?;
        let pos = |extra: Value| {
            let mut p = json!({"textDocument": {"uri": uri}, "position": {"line": line.unwrap_or(1) - 1, "character": character.unwrap_or(0)}});
            if !extra.is_null() {
                p["context"] = extra;
            }
            p
        };
        match op {
            "diagnostics" => {
                let d = client
                    .wait_diagnostics(&uri, generation, s.lsp_settle())
                    .or_else(|| client.last_diagnostics(&uri))
                    .ok_or_else(|| {
                        format!(
                            "the {language} server published no diagnostics for {shown} within {} ms",
                            s.lsp_settle().as_millis()
                        )
                    })?;
                Ok(format::all_diagnostics(&shown, &d))
            }
            "document_symbols" => {
                let res = ask(
                    client,
                    language,
                    op,
                    "textDocument/documentSymbol",
                    json!({"textDocument": {"uri": uri}}),
                )?;
                Ok(format::symbols(s, &res, &format!("symbols of {shown}")))
            }
            "definition" => {
                let res = ask(
                    client,
                    language,
                    op,
                    "textDocument/definition",
                    pos(Value::Null),
                )?;
                Ok(format::locations(s, &res, "definition"))
            }
            "references" => {
                let p = pos(json!({"includeDeclaration": true}));
                let res = ask(client, language, op, "textDocument/references", p)?;
                Ok(format::locations(s, &res, "reference"))
            }
            _ => {
                let res = ask(client, language, op, "textDocument/hover", pos(Value::Null))?;
                Ok(format::hover(&res))
            }
        }
    })
}

/// Runs `f` on the language's server; when the server died under it (a crash between two
/// calls is seen only when the pipe breaks), once more on the restarted server.
fn with_client<T>(
    s: &Session,
    language: &'static str,
    f: impl Fn(&Client) -> Result<T, String>,
) -> Result<T, String> {
    let client = s.lsp_client(language)?;
    match f(&client) {
        Err(e) => {
            // The reader sees the end of the stream a moment after the write failed.
            let deadline = std::time::Instant::now() + Duration::from_millis(300);
            while client.alive() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if client.alive() {
                return Err(e);
            }
            drop(client);
            f(&*s.lsp_client(language)?)
        }
        ok => ok,
    }
}

/// A request whose "method not found" answer says which server lacks the operation.
fn ask(
    client: &Client,
    language: &str,
    op: &str,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    client
        .request(method, params, REQUEST_TIMEOUT)
        .map_err(|e| {
            if e.to_ascii_lowercase().contains("method not found") {
                format!(
                    "the {language} language server ({}) does not offer {op}; other operations may work",
                    client.command
                )
            } else {
                format!("the {language} language server failed on {op}: {e}")
            }
        })
}

fn offers(client: &Client, language: &str, provider: &str, op: &str) -> Result<(), String> {
    if client.offers(provider) {
        return Ok(());
    }
    Err(format!(
        "the {language} language server ({}) does not offer {op}; other operations may work",
        client.command
    ))
}

/// The 0-based UTF-16 column for the request: `character` (1-based, in characters) when
/// given, else where `query` starts on that line, else the line's first non-blank.
fn position_in_line(
    path: &Path,
    line: u32,
    character: Option<u32>,
    query: Option<&str>,
) -> Result<u32, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let Some(l) = text.lines().nth(line as usize - 1) else {
        return Err(format!(
            "line {line} is past the end of the file ({} lines)",
            text.lines().count()
        ));
    };
    let chars: usize = match (character, query.filter(|q| !q.is_empty())) {
        (Some(c), _) if c >= 1 => c as usize - 1,
        (_, Some(q)) => {
            let at =
                find_word(l, q).ok_or_else(|| format!("'{q}' does not occur on line {line}"))?;
            l[..at].chars().count()
        }
        _ => l.chars().take_while(|c| c.is_whitespace()).count(),
    };
    Ok(l.chars().take(chars).map(char::len_utf16).sum::<usize>() as u32)
}

/// The byte offset of `word` on the line, preferring a whole-word occurrence.
fn find_word(line: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word)
        .find(|(i, _)| {
            let before = line[..*i].chars().next_back();
            let after = line[i + word.len()..].chars().next();
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        })
        .or_else(|| line.match_indices(word).next())
        .map(|(i, _)| i)
}

static TOOLS: yuyao_core::FeatureTools = yuyao_core::FeatureTools {
    specs: &[yuyao_core::registry::core(
        NAME,
        true,
        |s, name, call, _| {
            (
                yuyao_core::registry::one(run_tool(s, name, &call.arguments)),
                false,
            )
        },
    )],
    summaries: &[(
        NAME,
        "Definitions, references, hover, diagnostics and symbols from a language server",
    )],
    names: |s| {
        if s.lsp_enabled() {
            vec![NAME]
        } else {
            Vec::new()
        }
    },
    schemas: |_, ok| if ok(NAME) { vec![schema()] } else { Vec::new() },
    beside: None,
};

/// The features of this crate, in registration order: the `lsp` tool and diagnostics,
/// then `@path`/`@SymbolName` references.
pub static FEATURES: &[&yuyao_core::Feature] = &[&FEATURE, &refs::FEATURE];

/// What this feature adds to a session (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "lsp",
    tools: Some(&TOOLS),
    // The edited files' new errors and warnings, while the model still looks at them.
    after_write: Some(|s, name, paths, out| s.lsp_after_edit(name, paths, out)),
    state: Some(|o| Box::new(Manager::new(o.opts))),
    close: Some(|s| s.lsp().shutdown()),
    ..yuyao_core::Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_from_character_or_query() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.py");
        std::fs::write(&f, "x = 1\n    total = subtotal + total_é(1)\n").unwrap();
        assert_eq!(position_in_line(&f, 2, None, Some("total")).unwrap(), 4);
        assert_eq!(position_in_line(&f, 2, None, None).unwrap(), 4);
        assert_eq!(position_in_line(&f, 2, Some(3), None).unwrap(), 2);
        assert_eq!(position_in_line(&f, 2, None, Some("subtotal")).unwrap(), 12);
        assert!(position_in_line(&f, 9, None, None).is_err());
        assert!(position_in_line(&f, 1, None, Some("nope")).is_err());
    }
}
