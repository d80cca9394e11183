//! Layered configuration (DESIGN §2): defaults < `~/.yuyao/config.toml` <
//! `<project>/.yuyao/config.toml` < environment < flags. The files are read again on every
//! access, so an accepted write (or a hand edit) is effective at once: hot reload by design.
//!
//! Known keys are type-checked; an unknown key is stored as a string with a warning.

use crate::paths::Paths;
use std::path::PathBuf;
use toml::{Table, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    User,
    Project,
}

/// A configuration failure; the text is the user-facing message.
#[derive(Debug)]
pub enum ConfigError {
    Invalid(String),
    Io(String),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Invalid(m) | ConfigError::Io(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ConfigError {}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Bool,
    Int,
    Float,
    /// An integer greater than zero.
    PosInt,
    /// An integer, zero or more.
    NonNegInt,
    /// A number in (0, 1].
    Ratio,
    Str,
    OneOf(&'static [&'static str]),
}

/// Every key the product understands, with its type and meaning.
const KNOWN: &[(&str, Kind, &str)] = &[
    (
        "model.name",
        Kind::Str,
        "model name (overrides D2A_MODEL_NAME)",
    ),
    (
        "model.context_window",
        Kind::PosInt,
        "context window in tokens (default 128000)",
    ),
    (
        "model.max_output_tokens",
        Kind::PosInt,
        "largest reply requested from the model",
    ),
    (
        "model.input_cost_per_token",
        Kind::Float,
        "price of a prompt token in USD (when D2A_MODEL_COST is not set)",
    ),
    (
        "model.output_cost_per_token",
        Kind::Float,
        "price of a completion token in USD",
    ),
    (
        "model.cache_read_input_token_cost",
        Kind::Float,
        "price of a prompt token read from the cache",
    ),
    (
        "model.cache_creation_input_token_cost",
        Kind::Float,
        "price of a prompt token written to the cache",
    ),
    (
        "model.idle_timeout_s",
        Kind::Int,
        "longest silence from the model, seconds",
    ),
    (
        "model.max_retries",
        Kind::Int,
        "retries on 429/5xx/connection errors",
    ),
    (
        "mode",
        Kind::OneOf(&["ask", "plan", "auto-edit", "auto-review", "yolo"]),
        "default permission mode",
    ),
    (
        "role",
        Kind::OneOf(&["execute", "ask", "architect", "debug", "orchestrator"]),
        "default role",
    ),
    (
        "sandbox",
        Kind::OneOf(&["read-only", "workspace-write", "full-access"]),
        "OS sandbox level",
    ),
    (
        "network",
        Kind::OneOf(&["on", "off"]),
        "network access for tools",
    ),
    (
        "thinking",
        Kind::OneOf(&["off", "low", "medium", "high", "max"]),
        "reasoning budget",
    ),
    (
        "curiosity",
        Kind::OneOf(&["low", "normal", "high"]),
        "how readily the agent asks",
    ),
    ("max_steps", Kind::Int, "step limit per turn"),
    ("maxCostUsd", Kind::Float, "session spend ceiling in USD"),
    (
        "compaction.threshold",
        Kind::Ratio,
        "fraction of the context window that triggers compaction (default 0.8)",
    ),
    (
        "compaction.memoryFlush.enabled",
        Kind::Bool,
        "flush memory before compaction",
    ),
    (
        "compaction.memoryFlush.model",
        Kind::Str,
        "model of the memory-flush turn",
    ),
    ("ui.stream", Kind::Bool, "stream model output"),
    (
        "ui.show_thinking",
        Kind::OneOf(&["off", "collapsed", "expanded"]),
        "how thinking is displayed",
    ),
    (
        "ui.theme",
        Kind::OneOf(&["dark", "light", "mono"]),
        "TUI colour theme",
    ),
    (
        "ui.editor_mode",
        Kind::OneOf(&["emacs", "vi"]),
        "input box editing mode",
    ),
    (
        "ui.output_style",
        Kind::OneOf(&["default", "concise", "explanatory"]),
        "answer style",
    ),
    (
        "ui.usage",
        Kind::OneOf(&["off", "tokens", "full"]),
        "token and cost display",
    ),
    (
        "trajectory",
        Kind::Bool,
        "write .trajectory/ traces in interactive sessions",
    ),
    ("memory.enabled", Kind::Bool, "load and write memory files"),
    ("memorySearch.provider", Kind::Str, "memory search provider"),
    (
        "dreaming.enabled",
        Kind::Bool,
        "background memory consolidation",
    ),
    (
        "architect.editor_model",
        Kind::Str,
        "editor model of the architect role",
    ),
    (
        "tools.bash.timeout_ms",
        Kind::Int,
        "default bash timeout in ms",
    ),
    (
        "storage.retention_days",
        Kind::NonNegInt,
        "spill files, job logs and snapshots of sessions ended longer ago are removed (default 30; 0 keeps them)",
    ),
    (
        "storage.max_mb",
        Kind::NonNegInt,
        "size cap of spill files, job logs and snapshots; the oldest ended sessions' go first (default 1024; 0: no cap)",
    ),
];

/// Older or shorter spellings, read and written as the canonical key.
const ALIASES: &[(&str, &str)] = &[
    ("model", "model.name"),
    ("stream", "ui.stream"),
    ("show_thinking", "ui.show_thinking"),
    ("theme", "ui.theme"),
    ("editor.mode", "ui.editor_mode"),
    ("output.style", "ui.output_style"),
    ("usage", "ui.usage"),
];

/// Namespaces whose keys are all accepted without a warning (values parsed as JSON).
const OPEN_NAMESPACES: &[&str] = &["memory."];

/// The canonical spelling of `key` (aliases folded).
pub fn canonical_key(key: &str) -> &str {
    ALIASES
        .iter()
        .find(|(a, _)| *a == key)
        .map(|(_, c)| *c)
        .unwrap_or(key)
}

pub struct Config {
    paths: Paths,
}

impl Config {
    pub fn new(paths: Paths) -> Self {
        Config { paths }
    }

    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// Names and meanings of the known keys (for `/config` listings and `--help`).
    pub fn known_keys() -> impl Iterator<Item = (&'static str, &'static str)> {
        KNOWN.iter().map(|(k, _, d)| (*k, *d))
    }

    fn layer_path(&self, layer: Layer) -> PathBuf {
        match layer {
            Layer::User => self.paths.user_config(),
            Layer::Project => self.paths.project_config(),
        }
    }

    fn read_layer(&self, layer: Layer) -> Result<Table, ConfigError> {
        let path = self.layer_path(layer);
        match std::fs::read_to_string(&path) {
            Ok(text) => text.parse::<Table>().map_err(|e| {
                ConfigError::Invalid(format!("{} is not valid TOML: {e}", path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Table::new()),
            Err(e) => Err(ConfigError::Io(format!(
                "cannot read {}: {e}",
                path.display()
            ))),
        }
    }

    /// The effective value of `key` from the files (project over user), or `None`.
    /// A malformed file is skipped here (its error surfaces on `set`), so reading never fails.
    pub fn get(&self, key: &str) -> Option<Value> {
        let key = canonical_key(key);
        // A file may still use an older spelling (`[editor] mode = "vim"`): read those too.
        let spellings: Vec<&str> = std::iter::once(key)
            .chain(ALIASES.iter().filter(|(_, c)| *c == key).map(|(a, _)| *a))
            .collect();
        [Layer::Project, Layer::User]
            .into_iter()
            .filter_map(|l| self.read_layer(l).ok())
            .find_map(|t| spellings.iter().find_map(|k| lookup(&t, k).cloned()))
    }

    /// The value of `key` in one layer only (trust decisions need to know where a value
    /// came from).
    pub fn get_in(&self, key: &str, layer: Layer) -> Option<Value> {
        let key = canonical_key(key);
        let t = self.read_layer(layer).ok()?;
        std::iter::once(key)
            .chain(ALIASES.iter().filter(|(_, c)| *c == key).map(|(a, _)| *a))
            .find_map(|k| lookup(&t, k).cloned())
    }

    /// Every effective key with its value, flattened to dotted names.
    pub fn entries(&self) -> Vec<(String, Value)> {
        let mut merged = std::collections::BTreeMap::new();
        for layer in [Layer::User, Layer::Project] {
            if let Ok(t) = self.read_layer(layer) {
                flatten("", &t, &mut merged);
            }
        }
        merged.into_iter().collect()
    }

    /// Validates and stores `key = raw`. Returns the stored value and a warning for unknown
    /// keys. Writes the project layer when asked, or when the project already sets the key
    /// (otherwise the write would be shadowed and not read back).
    pub fn set(
        &self,
        key: &str,
        raw: &str,
        layer: Option<Layer>,
    ) -> Result<(Value, Option<String>), ConfigError> {
        validate_key(key)?;
        let key = canonical_key(key);
        let (value, warning) = typed_value(key, raw)?;
        let layer = layer.unwrap_or_else(|| self.shadowing_layer(key));
        let mut table = self.read_layer(layer)?;
        insert(&mut table, key, value.clone())?;
        self.write_layer(layer, &table)?;
        Ok((value, warning))
    }

    /// Removes `key` from every layer that sets it; returns whether anything was removed.
    pub fn unset(&self, key: &str) -> Result<bool, ConfigError> {
        validate_key(key)?;
        let key = canonical_key(key);
        let mut removed = false;
        for layer in [Layer::User, Layer::Project] {
            let mut table = self.read_layer(layer)?;
            if remove(&mut table, key) {
                self.write_layer(layer, &table)?;
                removed = true;
            }
        }
        Ok(removed)
    }

    fn shadowing_layer(&self, key: &str) -> Layer {
        match self.read_layer(Layer::Project) {
            Ok(t) if lookup(&t, key).is_some() => Layer::Project,
            _ => Layer::User,
        }
    }

    fn write_layer(&self, layer: Layer, table: &Table) -> Result<(), ConfigError> {
        let path = self.layer_path(layer);
        let text = toml::to_string(table)
            .map_err(|e| ConfigError::Invalid(format!("cannot encode configuration: {e}")))?;
        crate::write_atomic(&path, text.as_bytes())
            .map_err(|e| ConfigError::Io(format!("cannot write {}: {e}", path.display())))
    }
}

fn validate_key(key: &str) -> Result<(), ConfigError> {
    let ok = !key.is_empty()
        && key.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
    if ok {
        Ok(())
    } else {
        Err(ConfigError::Invalid(format!(
            "invalid configuration key '{key}': use letters, digits, '_' or '-', dot-separated"
        )))
    }
}

fn typed_value(key: &str, raw: &str) -> Result<(Value, Option<String>), ConfigError> {
    let Some((_, kind, _)) = KNOWN.iter().find(|(k, _, _)| *k == key) else {
        let value = json_value(raw);
        if OPEN_NAMESPACES.iter().any(|ns| key.starts_with(ns)) {
            return Ok((value, None));
        }
        return Ok((
            value,
            Some(format!("'{key}' is not a known key; stored anyway")),
        ));
    };
    let bad = |what: &str| ConfigError::Invalid(format!("invalid value '{raw}' for {key}: {what}"));
    let t = raw.trim();
    let v = match kind {
        Kind::Bool => match t.to_ascii_lowercase().as_str() {
            "true" | "on" | "yes" | "1" => Value::Boolean(true),
            "false" | "off" | "no" | "0" => Value::Boolean(false),
            _ => return Err(bad("expected true or false")),
        },
        Kind::Int => Value::Integer(t.parse().map_err(|_| bad("expected an integer"))?),
        Kind::PosInt => match t.parse::<i64>() {
            Ok(n) if n > 0 => Value::Integer(n),
            _ => return Err(bad("expected a positive integer")),
        },
        Kind::NonNegInt => match t.parse::<i64>() {
            Ok(n) if n >= 0 => Value::Integer(n),
            _ => return Err(bad("expected an integer, 0 or more")),
        },
        Kind::Ratio => match t.parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 1.0 => Value::Float(f),
            _ => return Err(bad("expected a number greater than 0 and at most 1")),
        },
        Kind::Float => {
            let f: f64 = t.parse().map_err(|_| bad("expected a number"))?;
            if !f.is_finite() || f < 0.0 {
                return Err(bad("expected a non-negative number"));
            }
            Value::Float(f)
        }
        Kind::Str => match serde_json::from_str::<serde_json::Value>(t) {
            Ok(serde_json::Value::String(s)) => Value::String(s),
            _ => Value::String(raw.to_string()),
        },
        Kind::OneOf(allowed) => {
            let norm = t.trim_matches('"').to_ascii_lowercase().replace('_', "-");
            // Spellings other tools use for the editing modes.
            let norm = match (key, norm.as_str()) {
                ("ui.editor_mode", "vim") => "vi".to_string(),
                ("ui.editor_mode", "default") => "emacs".to_string(),
                _ => norm,
            };
            match allowed.iter().find(|a| **a == norm) {
                Some(a) => Value::String((*a).to_string()),
                None => return Err(bad(&format!("expected one of {}", allowed.join(", ")))),
            }
        }
    };
    Ok((v, None))
}

/// A value typed on the command line: a JSON scalar or array when it parses as one (`3`,
/// `true`, `[1, 2]`, `"text"`), else the text itself.
fn json_value(raw: &str) -> Value {
    fn conv(v: &serde_json::Value) -> Option<Value> {
        Some(match v {
            serde_json::Value::Bool(b) => Value::Boolean(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Integer(i),
                None => Value::Float(n.as_f64()?),
            },
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => {
                Value::Array(a.iter().map(conv).collect::<Option<Vec<_>>>()?)
            }
            serde_json::Value::Null | serde_json::Value::Object(_) => return None,
        })
    }
    serde_json::from_str::<serde_json::Value>(raw.trim())
        .ok()
        .and_then(|v| conv(&v))
        .unwrap_or_else(|| Value::String(raw.to_string()))
}

fn lookup<'a>(t: &'a Table, key: &str) -> Option<&'a Value> {
    // A dotted key may be stored nested (`[a] b = 1`) or quoted (`"a.b" = 1`).
    if let Some(v) = t.get(key) {
        return Some(v);
    }
    let (head, rest) = key.split_once('.')?;
    match t.get(head)? {
        Value::Table(inner) => lookup(inner, rest),
        _ => None,
    }
}

fn insert(t: &mut Table, key: &str, v: Value) -> Result<(), ConfigError> {
    match key.split_once('.') {
        None => {
            t.insert(key.to_string(), v);
            Ok(())
        }
        Some((head, rest)) => {
            let entry = t
                .entry(head.to_string())
                .or_insert_with(|| Value::Table(Table::new()));
            match entry {
                Value::Table(inner) => insert(inner, rest, v),
                _ => Err(ConfigError::Invalid(format!(
                    "cannot set '{key}': '{head}' already holds a value, not a table"
                ))),
            }
        }
    }
}

fn remove(t: &mut Table, key: &str) -> bool {
    if t.remove(key).is_some() {
        return true;
    }
    let Some((head, rest)) = key.split_once('.') else {
        return false;
    };
    let removed = match t.get_mut(head) {
        Some(Value::Table(inner)) => remove(inner, rest),
        _ => false,
    };
    if removed && matches!(t.get(head), Some(Value::Table(inner)) if inner.is_empty()) {
        t.remove(head);
    }
    removed
}

fn flatten(prefix: &str, t: &Table, out: &mut std::collections::BTreeMap<String, Value>) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Table(inner) => flatten(&key, inner, out),
            other => {
                out.insert(key, other.clone());
            }
        }
    }
}

/// Converts a TOML value to JSON for the fronts.
pub fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Integer(i) => serde_json::json!(i),
        Value::Float(f) => serde_json::json!(f),
        Value::Boolean(b) => serde_json::Value::Bool(*b),
        Value::Datetime(d) => serde_json::Value::String(d.to_string()),
        Value::Array(a) => serde_json::Value::Array(a.iter().map(to_json).collect()),
        Value::Table(t) => {
            serde_json::Value::Object(t.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

/// Renders a value for display (`true`, `3`, `ask`), without TOML quotes for strings.
pub fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> (tempfile::TempDir, Config) {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        let proj = d.path().join("proj");
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        let paths = Paths::new(Some(home.to_str().unwrap()), &proj);
        (d, Config::new(paths))
    }

    #[test]
    fn accepted_write_reads_back() {
        let (_d, c) = config();
        let (_, warn) = c.set("k", "v", None).unwrap();
        assert!(warn.is_some());
        assert_eq!(c.get("k"), Some(Value::String("v".into())));
        c.set("editor.mode", "vim", None).unwrap();
        assert_eq!(c.get("ui.editor_mode"), Some(Value::String("vi".into())));
        assert_eq!(c.get("editor.mode"), Some(Value::String("vi".into())));
        c.set("model", "m1", None).unwrap();
        c.set("model.context_window", "4000", None).unwrap();
        assert_eq!(c.get("model.name"), Some(Value::String("m1".into())));
        assert_eq!(c.get("model.context_window"), Some(Value::Integer(4000)));
        assert!(c.set("model.context_window", "0", None).is_err());
        assert!(c.set("compaction.threshold", "1.5", None).is_err());
        c.set("n", "3", None).unwrap();
        assert_eq!(c.get("n"), Some(Value::Integer(3)));
        c.set("arr", "[1, \"a\"]", None).unwrap();
        assert_eq!(
            c.get("arr"),
            Some(Value::Array(vec![
                Value::Integer(1),
                Value::String("a".into())
            ]))
        );
        let (_, warn) = c.set("memory.anything", "true", None).unwrap();
        assert!(warn.is_none());
        assert_eq!(c.get("memory.anything"), Some(Value::Boolean(true)));
        assert!(c.set("stream", "maybe", None).is_err());
        assert!(c.unset("k").unwrap());
        assert_eq!(c.get("k"), None);
    }

    #[test]
    fn project_layer_wins_and_is_written_when_it_shadows() {
        let (_d, c) = config();
        c.set("mode", "plan", Some(Layer::Project)).unwrap();
        c.set("mode", "yolo", Some(Layer::User)).unwrap();
        assert_eq!(c.get("mode"), Some(Value::String("plan".into())));
        c.set("mode", "ask", None).unwrap();
        assert_eq!(c.get("mode"), Some(Value::String("ask".into())));
    }
}
