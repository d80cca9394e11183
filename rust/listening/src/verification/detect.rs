//! Which command verifies this project: AGENTS.md's declared `test:`/`lint:` command, then
//! package.json scripts (with the lock file's package manager), Makefile targets, Cargo.toml,
//! Python (pyproject.toml, pytest.ini, `tests/`), go.mod. Only the project root is looked at.

#[allow(unused_imports)]
use crate::session_ext::*;

use std::path::Path;

/// A verification command and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub command: String,
    /// `AGENTS.md`, `package.json`, `Makefile`, `Cargo.toml`, `python`, `go.mod`, or the
    /// setting that named it.
    pub source: String,
}

fn found(command: impl Into<String>, source: &str) -> Option<Detected> {
    Some(Detected {
        command: command.into(),
        source: source.to_string(),
    })
}

/// The project's test (else lint) command, if any is declared or recognisable.
pub fn detect(root: &Path) -> Option<Detected> {
    agents_md(root)
        .or_else(|| package_json(root))
        .or_else(|| makefile(root))
        .or_else(|| {
            root.join("Cargo.toml")
                .is_file()
                .then(|| "cargo test".to_string())
                .and_then(|c| found(c, "Cargo.toml"))
        })
        .or_else(|| python(root))
        .or_else(|| {
            root.join("go.mod")
                .is_file()
                .then(|| "go test ./...".to_string())
                .and_then(|c| found(c, "go.mod"))
        })
}

/// `test: <cmd>` / `lint: <cmd>` lines of AGENTS.md (list markers, bold and backticks
/// allowed: `- **test:** \`npm test\``). A test command wins over a lint command.
fn agents_md(root: &Path) -> Option<Detected> {
    let text = std::fs::read_to_string(root.join("AGENTS.md")).ok()?;
    let mut lint = None;
    for line in text.lines() {
        let l = line
            .trim()
            .trim_start_matches(['-', '*', '+'])
            .trim()
            .replace("**", "");
        let lower = l.to_ascii_lowercase();
        for (label, slot) in [("test:", 0), ("lint:", 1)] {
            if let Some(rest) = lower.strip_prefix(label) {
                let cmd = l[l.len() - rest.len()..].trim().trim_matches('`').trim();
                if cmd.is_empty() {
                    continue;
                }
                if slot == 0 {
                    return found(cmd, "AGENTS.md");
                }
                lint.get_or_insert_with(|| cmd.to_string());
            }
        }
    }
    lint.and_then(|c| found(c, "AGENTS.md"))
}

fn package_json(root: &Path) -> Option<Detected> {
    let text = std::fs::read_to_string(root.join("package.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let scripts = v.get("scripts")?.as_object()?;
    // npm's placeholder script fails by design: it is no test.
    let real = |name: &str| {
        scripts
            .get(name)
            .and_then(|s| s.as_str())
            .filter(|s| !s.contains("no test specified") && !s.trim().is_empty())
            .is_some()
    };
    let pm = if root.join("pnpm-lock.yaml").is_file() {
        "pnpm"
    } else if root.join("yarn.lock").is_file() {
        "yarn"
    } else if root.join("bun.lockb").is_file() || root.join("bun.lock").is_file() {
        "bun"
    } else {
        "npm"
    };
    let script = if real("test") {
        "test"
    } else if real("lint") {
        "lint"
    } else {
        return None;
    };
    let command = match (pm, script) {
        ("bun", s) => format!("bun run {s}"),
        (pm, "test") => format!("{pm} test"),
        (pm, s) => format!("{pm} run {s}"),
    };
    found(command, "package.json")
}

fn makefile(root: &Path) -> Option<Detected> {
    let text = ["GNUmakefile", "makefile", "Makefile"]
        .iter()
        .find_map(|n| std::fs::read_to_string(root.join(n)).ok())?;
    let has = |t: &str| {
        text.lines().any(|l| {
            l.strip_prefix(t).is_some_and(|r| {
                r.trim_start().starts_with(':') && !r.trim_start().starts_with(":=")
            })
        })
    };
    ["test", "check", "lint"]
        .into_iter()
        .find(|t| has(t))
        .and_then(|t| found(format!("make {t}"), "Makefile"))
}

fn python(root: &Path) -> Option<Detected> {
    let marked = root.join("pyproject.toml").is_file()
        || root.join("pytest.ini").is_file()
        || root.join("tests").is_dir();
    if !marked {
        return None;
    }
    // `python` is missing on many systems where `python3` is the interpreter.
    let on_path = |p: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(p).is_file()))
    };
    let py = if on_path("python") || !on_path("python3") {
        "python"
    } else {
        "python3"
    };
    found(format!("{py} -m pytest -q"), "python")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let path = d.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, c).unwrap();
        }
        d
    }

    fn cmd(files: &[(&str, &str)]) -> Option<String> {
        detect(dir(files).path()).map(|d| d.command)
    }

    #[test]
    fn agents_md_declaration_wins() {
        let agents = "# Rules\n- **test:** `make unit`\n- lint: ruff check .\n";
        assert_eq!(
            cmd(&[("AGENTS.md", agents), ("Cargo.toml", "")]).as_deref(),
            Some("make unit")
        );
        assert_eq!(
            cmd(&[("AGENTS.md", "lint: `ruff check .`\n")]).as_deref(),
            Some("ruff check .")
        );
        assert_eq!(cmd(&[("AGENTS.md", "Always run make check.\n")]), None);
    }

    #[test]
    fn package_json_uses_the_lock_files_manager() {
        let pkg = r#"{"scripts": {"test": "vitest run", "lint": "eslint ."}}"#;
        assert_eq!(cmd(&[("package.json", pkg)]).as_deref(), Some("npm test"));
        assert_eq!(
            cmd(&[("package.json", pkg), ("pnpm-lock.yaml", "")]).as_deref(),
            Some("pnpm test")
        );
        assert_eq!(
            cmd(&[("package.json", pkg), ("bun.lockb", "")]).as_deref(),
            Some("bun run test")
        );
        let lint_only = r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1", "lint": "eslint ."}}"#;
        assert_eq!(
            cmd(&[("package.json", lint_only), ("yarn.lock", "")]).as_deref(),
            Some("yarn run lint")
        );
    }

    #[test]
    fn makefile_cargo_python_go() {
        assert_eq!(
            cmd(&[("Makefile", "all:\n\tcc x.c\ncheck: all\n\t./t\n")]).as_deref(),
            Some("make check")
        );
        assert_eq!(cmd(&[("Makefile", "test := 1\n")]), None);
        assert_eq!(
            cmd(&[("Cargo.toml", "[package]\n")]).as_deref(),
            Some("cargo test")
        );
        assert!(
            cmd(&[("tests/test_a.py", "")])
                .unwrap()
                .ends_with("-m pytest -q")
        );
        assert_eq!(
            cmd(&[("go.mod", "module x\n")]).as_deref(),
            Some("go test ./...")
        );
        assert_eq!(cmd(&[("README.md", "# x\n")]), None);
    }
}
