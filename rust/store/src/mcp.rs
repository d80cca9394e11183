//! The registry of MCP servers (`~/.yuyao/mcp.json`). `yuyao mcp …` and `/mcp …` both edit
//! it, so a listing on either surface reflects an add or remove at once.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct McpServer {
    /// stdio transport: the program and its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// HTTP transport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl McpServer {
    pub fn describe(&self) -> String {
        match (&self.url, self.command.is_empty()) {
            (Some(u), _) => format!("http {u}"),
            (None, false) => format!("stdio {}", self.command.join(" ")),
            (None, true) => "no command or URL configured".into(),
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    servers: BTreeMap<String, McpServer>,
}

pub struct McpRegistry {
    path: PathBuf,
}

impl McpRegistry {
    pub fn new(path: PathBuf) -> Self {
        McpRegistry { path }
    }

    fn load(&self) -> Result<File, String> {
        match std::fs::read_to_string(&self.path) {
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
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid {
            return Err(format!(
                "invalid MCP server name '{name}': use letters, digits, '_', '-' or '.'"
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
