//! Project trust (DESIGN §8): settings a repository ships that widen permissions (`mode`,
//! `sandbox`, `network`, allow rules) apply only once the user trusted that project. The
//! decision is the user's, so it lives in `~/.yuyao/trusted-projects.json`, out of reach of
//! the repository and of the agent's tools.

use crate::Paths;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub fn file(paths: &Paths) -> PathBuf {
    paths.home.join("trusted-projects.json")
}

fn key(project: &Path) -> String {
    project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf())
        .display()
        .to_string()
}

fn read(paths: &Paths) -> Value {
    std::fs::read_to_string(file(paths))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

/// Whether the user trusted `paths.project` before.
pub fn is_trusted(paths: &Paths) -> bool {
    read(paths)
        .get("projects")
        .and_then(|p| p.get(key(&paths.project)))
        .is_some()
}

/// Records that the user trusts `paths.project`.
pub fn trust(paths: &Paths) -> std::io::Result<()> {
    let mut v = read(paths);
    if !v.get("projects").is_some_and(Value::is_object) {
        v["projects"] = json!({});
    }
    v["projects"][key(&paths.project)] = json!({"trusted_at": chrono::Utc::now().to_rfc3339()});
    crate::write_atomic(
        &file(paths),
        serde_json::to_string_pretty(&v)
            .unwrap_or_default()
            .as_bytes(),
    )
}

/// Records an allow rule the user granted for this project ("always for this project",
/// `/permissions allow … --project`), so that it applies without trusting the whole project.
pub fn record_grant(paths: &Paths, rule: &str) -> std::io::Result<()> {
    let mut v = read(paths);
    if !v.get("granted").is_some_and(Value::is_object) {
        v["granted"] = json!({});
    }
    let k = key(&paths.project);
    let list = v["granted"]
        .get(&k)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !list.iter().any(|r| r.as_str() == Some(rule)) {
        let mut list = list;
        list.push(json!(rule));
        v["granted"][k] = Value::Array(list);
        crate::write_atomic(
            &file(paths),
            serde_json::to_string_pretty(&v)
                .unwrap_or_default()
                .as_bytes(),
        )?;
    }
    Ok(())
}

/// The project allow rules the user granted (see [`record_grant`]).
pub fn granted(paths: &Paths) -> Vec<String> {
    read(paths)
        .get("granted")
        .and_then(|g| g.get(key(&paths.project)))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a project-level value of `key` would widen what the agent may do.
pub fn widens(key: &str, value: &str) -> bool {
    match key {
        "mode" => !matches!(value, "plan" | "ask" | "default" | "read-only" | "readonly"),
        "sandbox" => value == "full-access" || value == "danger-full-access",
        "network" => matches!(value, "on" | "true" | "enabled"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_per_project_and_persisted() {
        let home = tempfile::tempdir().unwrap();
        let p1 = tempfile::tempdir().unwrap();
        let p2 = tempfile::tempdir().unwrap();
        let a = Paths {
            home: home.path().to_path_buf(),
            project: p1.path().to_path_buf(),
        };
        let b = Paths {
            home: home.path().to_path_buf(),
            project: p2.path().to_path_buf(),
        };
        assert!(!is_trusted(&a));
        trust(&a).unwrap();
        assert!(is_trusted(&a));
        assert!(!is_trusted(&b));
        assert!(widens("mode", "yolo") && widens("sandbox", "full-access"));
        assert!(!widens("mode", "plan") && !widens("sandbox", "read-only"));
    }
}
