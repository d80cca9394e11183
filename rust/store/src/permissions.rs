//! Persisted permission rules (seed 000 behaviour 11, spec §3.3): "always for this project"
//! lives in `<project>/.yuyao/permissions.json`, "always" in `~/.yuyao/permissions.json`.
//! Both files are merged when a session opens; deny rules win over everything (deny first).
//!
//! ```json
//! {"allow": ["Bash(cargo build)"], "ask": ["Bash(git push:*)"], "deny": ["Bash(rm)"]}
//! ```

use crate::Paths;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Which list a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    Allow,
    Ask,
    Deny,
}

impl RuleKind {
    pub const ALL: [RuleKind; 3] = [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow];

    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

/// Where a persisted rule lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `<project>/.yuyao/permissions.json`
    Project,
    /// `~/.yuyao/permissions.json`
    User,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionFile {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl PermissionFile {
    pub fn list(&self, kind: RuleKind) -> &Vec<String> {
        match kind {
            RuleKind::Allow => &self.allow,
            RuleKind::Ask => &self.ask,
            RuleKind::Deny => &self.deny,
        }
    }

    fn list_mut(&mut self, kind: RuleKind) -> &mut Vec<String> {
        match kind {
            RuleKind::Allow => &mut self.allow,
            RuleKind::Ask => &mut self.ask,
            RuleKind::Deny => &mut self.deny,
        }
    }
}

pub fn path_for(paths: &Paths, scope: Scope) -> PathBuf {
    match scope {
        Scope::Project => paths.project.join(".yuyao").join("permissions.json"),
        Scope::User => paths.home.join("permissions.json"),
    }
}

/// Reads a permissions file; a missing file is empty, a malformed one an error.
pub fn load(path: &Path) -> Result<PermissionFile, String> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(PermissionFile::default()),
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a valid permissions file: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(PermissionFile::default()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn save(paths: &Paths, scope: Scope, file: &PermissionFile) -> Result<(), String> {
    let path = path_for(paths, scope);
    let text = serde_json::to_string_pretty(file).map_err(|e| e.to_string())?;
    let write = || crate::write_atomic(&path, format!("{text}\n").as_bytes());
    match scope {
        Scope::Project => crate::trust::keep_approval(paths, &path, write),
        Scope::User => write(),
    }
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    if scope == Scope::Project {
        // A local trust decision: keep `git status` clean.
        crate::paths::exclude_from_git(&paths.project, "/.yuyao/permissions.json");
    }
    Ok(())
}

/// Adds `rule` to `kind` in `scope`, removing it from the other lists of that scope.
/// Returns false when it was already there.
pub fn add(paths: &Paths, scope: Scope, kind: RuleKind, rule: &str) -> Result<bool, String> {
    let mut f = load(&path_for(paths, scope))?;
    let present = f.list(kind).iter().any(|r| r == rule);
    for k in RuleKind::ALL {
        if k != kind {
            f.list_mut(k).retain(|r| r != rule);
        }
    }
    if !present {
        f.list_mut(kind).push(rule.to_string());
    }
    save(paths, scope, &f)?;
    if scope == Scope::Project && kind == RuleKind::Allow {
        // The user's own grant: it applies even while the project is untrusted (a rule the
        // repository shipped in the same file does not).
        crate::trust::record_grant(paths, rule)
            .map_err(|e| format!("cannot record the grant in {}: {e}", paths.home.display()))?;
    }
    Ok(!present)
}

/// Removes `rule` from every list of `scope`; returns the lists it was removed from.
pub fn remove(paths: &Paths, scope: Scope, rule: &str) -> Result<Vec<RuleKind>, String> {
    let path = path_for(paths, scope);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let mut f = load(&path)?;
    let mut removed = Vec::new();
    for k in RuleKind::ALL {
        let before = f.list(k).len();
        f.list_mut(k).retain(|r| r != rule);
        if f.list(k).len() != before {
            removed.push(k);
        }
    }
    if !removed.is_empty() {
        save(paths, scope, &f)?;
    }
    Ok(removed)
}

/// Every persisted rule, user scope first then project, with where it came from.
/// One persisted rule: its file's scope, its kind and its text.
pub type PersistedRule = (Scope, RuleKind, String);

pub fn merged(paths: &Paths) -> Result<Vec<PersistedRule>, String> {
    merged_lenient(paths).map(|(rules, _)| rules)
}

/// [`merged`], where a project file that cannot be read is skipped with a warning (the
/// repository — or an agent that created `.yuyao/` — must not be able to stop every session
/// from opening); the user's own file stays an error.
pub fn merged_lenient(paths: &Paths) -> Result<(Vec<PersistedRule>, Vec<String>), String> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for scope in [Scope::User, Scope::Project] {
        let f = match (load(&path_for(paths, scope)), scope) {
            (Ok(f), _) => f,
            (Err(e), Scope::Project) => {
                warnings.push(format!("{e}; its rules are ignored"));
                continue;
            }
            (Err(e), Scope::User) => return Err(e),
        };
        for k in RuleKind::ALL {
            for r in f.list(k) {
                out.push((scope, k, r.clone()));
            }
        }
    }
    Ok((out, warnings))
}

/// Claude Code's settings files whose `permissions.allow|ask|deny` users already keep:
/// `~/.claude/settings.json` (or `$CLAUDE_CONFIG_DIR/settings.json`) is the user scope;
/// `<project>/.claude/settings.json` and `.claude/settings.local.json` the project's.
pub fn claude_files(paths: &Paths) -> Vec<(Scope, PathBuf)> {
    let user_dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")));
    let mut out = Vec::new();
    if let Some(d) = user_dir {
        out.push((Scope::User, d.join("settings.json")));
    }
    let project = paths.project.join(".claude");
    out.push((Scope::Project, project.join("settings.json")));
    out.push((Scope::Project, project.join("settings.local.json")));
    out
}

/// A rule read from one of Claude Code's settings files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeRule {
    pub scope: Scope,
    pub kind: RuleKind,
    pub text: String,
    pub file: PathBuf,
}

/// Every rule of Claude Code's settings files, and a warning per file that cannot be read
/// (that file is skipped, the others load).
pub fn claude_rules(paths: &Paths) -> (Vec<ClaudeRule>, Vec<String>) {
    let mut rules = Vec::new();
    let mut warnings = Vec::new();
    for (scope, file) in claude_files(paths) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let v: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                warnings.push(format!(
                    "{}: line {}: invalid JSON ({e}); its permission rules are skipped",
                    file.display(),
                    e.line()
                ));
                continue;
            }
        };
        for kind in RuleKind::ALL {
            let list = v
                .get("permissions")
                .and_then(|p| p.get(kind.as_str()))
                .and_then(|l| l.as_array());
            for r in list.into_iter().flatten().filter_map(|r| r.as_str()) {
                rules.push(ClaudeRule {
                    scope,
                    kind,
                    text: r.to_string(),
                    file: file.clone(),
                });
            }
        }
    }
    (rules, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_remove_merge() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let paths = Paths {
            home: home.path().to_path_buf(),
            project: proj.path().to_path_buf(),
        };
        assert!(add(&paths, Scope::Project, RuleKind::Allow, "Bash(make)").unwrap());
        assert!(!add(&paths, Scope::Project, RuleKind::Allow, "Bash(make)").unwrap());
        add(&paths, Scope::User, RuleKind::Deny, "Bash(rm)").unwrap();
        // Moving a rule to another list of the same scope.
        add(&paths, Scope::Project, RuleKind::Ask, "Bash(make)").unwrap();
        let all = merged(&paths).unwrap();
        assert_eq!(
            all,
            vec![
                (Scope::User, RuleKind::Deny, "Bash(rm)".to_string()),
                (Scope::Project, RuleKind::Ask, "Bash(make)".to_string()),
            ]
        );
        assert_eq!(
            remove(&paths, Scope::Project, "Bash(make)").unwrap(),
            vec![RuleKind::Ask]
        );
        assert!(
            remove(&paths, Scope::Project, "Bash(x)")
                .unwrap()
                .is_empty()
        );
        std::fs::write(path_for(&paths, Scope::User), "{oops").unwrap();
        assert!(merged(&paths).is_err());
    }
}
