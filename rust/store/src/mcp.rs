//! MCP server configuration: `~/.yuyao/mcp.json` (user scope) and `<project>/.mcp.json`
//! (project scope, the file Claude Code users already have), both in the `mcpServers`
//! schema. `yuyao mcp …` and `/mcp …` both edit them, so a listing on either surface
//! reflects an add or remove at once. Keys yuyao does not know are kept as they were.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct McpServer {
    /// stdio transport: the program (an array, as written by earlier builds, is split into
    /// the program and its first arguments).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "command_compat",
        serialize_with = "command_out"
    )]
    pub command: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Streamable HTTP transport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The variable holding a bearer token for the HTTP transport (Codex's spelling).
    #[serde(
        default,
        rename = "bearerTokenEnvVar",
        alias = "bearer_token_env_var",
        skip_serializing_if = "Option::is_none"
    )]
    pub bearer_token_env_var: Option<String>,
    /// Anything else the file holds (`type`, `disabled`, …), written back unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn command_compat<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => None,
        Some(OneOrMany::One(s)) => Some(vec![s]),
        Some(OneOrMany::Many(v)) if v.is_empty() => None,
        Some(OneOrMany::Many(v)) => Some(v),
    })
}

/// The program alone is written as a string, as Claude Code and Codex write it.
fn command_out<S: serde::Serializer>(c: &Option<Vec<String>>, s: S) -> Result<S::Ok, S::Error> {
    match c.as_deref() {
        Some([one]) => s.serialize_str(one),
        other => other.serialize(s),
    }
}

impl McpServer {
    /// A stdio server: `argv[0]` is the program.
    pub fn stdio(argv: &[String], env: BTreeMap<String, String>) -> Self {
        McpServer {
            command: argv.first().map(|c| vec![c.clone()]),
            args: argv.iter().skip(1).cloned().collect(),
            env,
            ..Default::default()
        }
    }

    pub fn http(url: &str, headers: BTreeMap<String, String>) -> Self {
        McpServer {
            url: Some(url.to_string()),
            headers,
            ..Default::default()
        }
    }

    /// The program and its arguments, for the stdio transport.
    pub fn argv(&self) -> Vec<String> {
        let mut v = self.command.clone().unwrap_or_default();
        v.extend(self.args.iter().cloned());
        v
    }

    pub fn transport(&self) -> &'static str {
        if self.url.is_some() {
            "http"
        } else if self.command.is_some() {
            "stdio"
        } else {
            "none"
        }
    }

    pub fn describe(&self) -> String {
        match (&self.url, self.command.is_some()) {
            (Some(u), _) => format!("http {u}"),
            (None, true) => format!("stdio {}", self.argv().join(" ")),
            (None, false) => "not configured (no command or URL)".into(),
        }
    }

    /// Claude Code's `"disabled": true`.
    pub fn disabled(&self) -> bool {
        self.extra.get("disabled").and_then(Value::as_bool) == Some(true)
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    /// `servers` is what earlier builds wrote.
    #[serde(default, rename = "mcpServers", alias = "servers")]
    servers: BTreeMap<String, McpServer>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// Where a server's entry lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpScope {
    User,
    Project,
}

impl McpScope {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user" | "global" => Some(McpScope::User),
            "project" => Some(McpScope::Project),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            McpScope::User => "user",
            McpScope::Project => "project",
        }
    }
}

pub struct McpRegistry {
    path: PathBuf,
}

/// Letters, digits, `_`, `-` (and `.` as earlier builds allowed): the name goes into tool
/// names (`mcp__<server>__<tool>`).
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 48
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

impl McpRegistry {
    pub fn new(path: PathBuf) -> Self {
        McpRegistry { path }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn load(&self) -> Result<File, String> {
        match std::fs::read_to_string(&self.path) {
            Ok(t) if t.trim().is_empty() => Ok(File::default()),
            Ok(t) => serde_json::from_str(&t)
                .map_err(|e| format!("{} is not valid JSON: {e}", self.path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File::default()),
            Err(e) => Err(format!("cannot read {}: {e}", self.path.display())),
        }
    }

    fn save(&self, f: &File) -> Result<(), String> {
        let text = serde_json::to_string_pretty(f).map_err(|e| e.to_string())?;
        crate::write_atomic(&self.path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }

    pub fn list(&self) -> Result<BTreeMap<String, McpServer>, String> {
        Ok(self.load()?.servers)
    }

    pub fn names(&self) -> Vec<String> {
        self.list()
            .map(|s| s.into_keys().collect())
            .unwrap_or_default()
    }

    /// Adds or replaces `name`; returns whether it replaced an existing entry.
    pub fn add(&self, name: &str, server: McpServer) -> Result<bool, String> {
        if !valid_server_name(name) {
            return Err(format!(
                "invalid MCP server name '{name}': use letters, digits, '_' (not '__'), '-' or '.'"
            ));
        }
        let mut f = self.load()?;
        let replaced = f.servers.insert(name.to_string(), server).is_some();
        self.save(&f)?;
        Ok(replaced)
    }

    /// Removes `name`; returns whether it was there.
    pub fn remove(&self, name: &str) -> Result<bool, String> {
        let mut f = self.load()?;
        let removed = f.servers.remove(name).is_some();
        if removed {
            self.save(&f)?;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_file_round_trips_and_old_entries_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".mcp.json");
        std::fs::write(
            &p,
            r#"{"mcpServers": {"t": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {"A": "1"}}}, "other": 1}"#,
        )
        .unwrap();
        let r = McpRegistry::new(p.clone());
        let t = &r.list().unwrap()["t"];
        assert_eq!(t.argv(), ["uvx", "mcp-server-time"]);
        assert_eq!(t.transport(), "stdio");
        r.add("h", McpServer::http("http://x/mcp", BTreeMap::new()))
            .unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("\"other\": 1") && text.contains("\"type\": \"stdio\""));
        assert!(text.contains("\"command\": \"uvx\""), "{text}");
        let old = dir.path().join("old.json");
        std::fs::write(&old, r#"{"servers": {"x": {"command": ["a", "b"]}}}"#).unwrap();
        assert_eq!(
            McpRegistry::new(old).list().unwrap()["x"].argv(),
            ["a", "b"]
        );
        assert!(r.add("a__b", McpServer::default()).is_err());
    }
}
