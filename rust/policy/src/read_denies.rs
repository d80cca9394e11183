//! The `Read(glob)` deny rules as the searches that walk folders apply them: a rule that keeps
//! a file's contents from `read` keeps them from every file a `grep` over a folder or a glob
//! filter visits too (the policy itself judges only the path the call names).

use crate::rules::{PathAccess, Rule};
use std::path::{Path, PathBuf};

/// Deny rules that judge what is read (`Read(…)`, `Grep(…)`, `Glob(…)`, a bare glob), with
/// the project root their relative globs are anchored at.
#[derive(Debug, Clone, Default)]
pub struct ReadDenies {
    rules: Vec<Rule>,
    project: PathBuf,
}

impl ReadDenies {
    /// The rule (its text) that denies reading `path` (absolute), if any.
    pub fn denying(&self, path: &Path) -> Option<&str> {
        self.rules
            .iter()
            .find(|r| r.matches_path(path, &self.project))
            .map(|r| r.text.as_str())
    }

    /// Whether no rule denies any read (nothing to check in a walk).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

impl crate::Policy {
    /// The read deny rules in force, for folder walks.
    pub fn read_denies(&self) -> ReadDenies {
        ReadDenies {
            rules: self
                .deny
                .iter()
                .filter(|r| r.path_access() == Some(PathAccess::Read))
                .cloned()
                .collect(),
            project: self.project().to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Policy;
    use crate::rules::Rule;
    use std::path::Path;
    use yuyao_protocol::{Mode, Role};

    #[test]
    fn read_denies_match_files_below_the_project_and_ignore_write_rules() {
        let mut p = Policy::new(Mode::Ask, Role::Execute, Path::new("/ws"));
        for r in [
            "Read(secrets/**)",
            "Read(.env)",
            "Edit(src/**)",
            "Bash(rm:*)",
        ] {
            p.deny.push(Rule::parse(r).unwrap());
        }
        let d = p.read_denies();
        assert_eq!(
            d.denying(Path::new("/ws/secrets/deep/a.txt")),
            Some("Read(secrets/**)")
        );
        assert_eq!(d.denying(Path::new("/ws/sub/.env")), Some("Read(.env)"));
        assert_eq!(d.denying(Path::new("/ws/src/main.rs")), None);
        assert_eq!(d.denying(Path::new("/ws/notes.txt")), None);
        assert!(
            Policy::new(Mode::Ask, Role::Execute, Path::new("/ws"))
                .read_denies()
                .is_empty()
        );
    }
}
