//! yuyao's control files and the repository's git configuration are not the agent's to
//! write (DESIGN §5, §8): a model that could edit `.yuyao/config.toml` or `permissions.json`
//! would widen its own sandbox for the next call or session, and one that could edit
//! `.git/config` or `.git/hooks` would plant code that git runs outside the sandbox. The file
//! tools are refused here (in every mode); tool processes meet the same files read-only in
//! their mount namespace (`namespaces.rs`).

use std::path::Path;

/// Paths relative to a project root that no tool may write.
const IN_PROJECT: &[&str] = &[
    ".yuyao",
    ".git/config",
    ".git/hooks",
    ".git/info",
    ".mcp.json",
    "hooks.json",
    // Claude Code's permission lists, read as rules (a written allow rule would widen the
    // next session of a trusted project).
    ".claude/settings.json",
    ".claude/settings.local.json",
];

/// Why `path` (absolute, resolved) is protected, if it is.
pub fn protected_reason(
    path: &Path,
    roots: &[impl AsRef<Path>],
    home: Option<&Path>,
) -> Option<String> {
    if let Some(h) = home
        && path.starts_with(h)
    {
        return Some(format!(
            "{} is yuyao's own configuration and state ({}); the agent cannot change it — the user can, with `yuyao config` or by hand",
            path.display(),
            h.display()
        ));
    }
    for root in roots {
        let root = root.as_ref();
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        if let Some(p) = IN_PROJECT.iter().find(|p| rel.starts_with(p)) {
            let what = if p.starts_with(".git") {
                "the repository's git configuration (git would run what it names outside the sandbox)"
            } else {
                "a project control file (settings, permissions, hooks or MCP servers the host trusts)"
            };
            return Some(format!(
                "{} is {what}; the agent cannot write it — ask the user to change it",
                path.display()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_files_are_protected() {
        let roots = [Path::new("/p")];
        let home = Some(Path::new("/h/.yuyao"));
        for p in [
            "/p/.yuyao/config.toml",
            "/p/.yuyao/permissions.json",
            "/p/.git/config",
            "/p/.git/hooks/pre-commit",
            "/p/.git/info/attributes",
            "/p/.mcp.json",
            "/p/hooks.json",
            "/p/.claude/settings.json",
            "/p/.claude/settings.local.json",
            "/h/.yuyao/config.toml",
            "/h/.yuyao/permissions.json",
        ] {
            assert!(
                protected_reason(Path::new(p), &roots, home).is_some(),
                "{p}"
            );
        }
        for p in [
            "/p/src/a.rs",
            "/p/.gitignore",
            "/p/.git-blame",
            "/p/.yuyaorc",
            "/p/.claude/commands/x.md",
            "/q/.yuyao/x",
        ] {
            assert!(
                protected_reason(Path::new(p), &roots, home).is_none(),
                "{p}"
            );
        }
    }
}
