//! Which language a file is, and which server command speaks it: `lsp.servers.<language>`
//! from the configuration (a command string, an argv list, or `{command, args}`), else the
//! first known server found on PATH.

use std::path::{Path, PathBuf};

/// (language key used by `lsp.servers`, LSP languageId) for a file, by extension.
pub fn language_of(path: &Path) -> Option<(&'static str, &'static str)> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "py" | "pyi" => ("python", "python"),
        "rs" => ("rust", "rust"),
        "ts" | "mts" | "cts" => ("typescript", "typescript"),
        "tsx" => ("typescript", "typescriptreact"),
        "js" | "mjs" | "cjs" => ("typescript", "javascript"),
        "jsx" => ("typescript", "javascriptreact"),
        "go" => ("go", "go"),
        "c" | "h" => ("c", "c"),
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => ("cpp", "cpp"),
        _ => return None,
    })
}

/// Servers tried on PATH, in order, per language key.
fn known(language: &str) -> &'static [(&'static str, &'static [&'static str])] {
    match language {
        "python" => &[
            ("basedpyright-langserver", &["--stdio"]),
            ("pyright-langserver", &["--stdio"]),
            ("pylsp", &[]),
        ],
        "rust" => &[("rust-analyzer", &[])],
        "typescript" => &[("typescript-language-server", &["--stdio"])],
        "go" => &[("gopls", &[])],
        "c" | "cpp" => &[("clangd", &[])],
        _ => &[],
    }
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// The configured value of `lsp.servers.<language>` as an argv.
fn configured(value: &toml::Value) -> Result<Vec<String>, String> {
    let strings = |a: &Vec<toml::Value>| -> Result<Vec<String>, String> {
        a.iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| "arguments must be strings".to_string())
            })
            .collect()
    };
    let argv = match value {
        toml::Value::String(s) => s.split_whitespace().map(str::to_string).collect(),
        toml::Value::Array(a) => strings(a)?,
        toml::Value::Table(t) => {
            let cmd = t
                .get("command")
                .and_then(|v| v.as_str())
                .ok_or("a table needs `command`")?;
            let mut argv = vec![cmd.to_string()];
            if let Some(toml::Value::Array(a)) = t.get("args") {
                argv.extend(strings(a)?);
            }
            argv
        }
        _ => return Err("expected a command string, a list, or {command, args}".into()),
    };
    if argv.is_empty() {
        return Err("empty command".into());
    }
    Ok(argv)
}

/// The argv of the server for `language`, or why there is none.
pub fn command_for(language: &str, config: Option<&toml::Value>) -> Result<Vec<String>, String> {
    if let Some(v) = config {
        return configured(v).map_err(|e| format!("lsp.servers.{language}: {e}"));
    }
    for (program, args) in known(language) {
        if let Some(p) = on_path(program) {
            let mut argv = vec![p.to_string_lossy().into_owned()];
            argv.extend(args.iter().map(|a| a.to_string()));
            return Ok(argv);
        }
    }
    let names: Vec<&str> = known(language).iter().map(|(p, _)| *p).collect();
    Err(format!(
        "no language server for {language}: none of {} is on PATH; install one or set lsp.servers.{language}",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_and_configured_commands() {
        assert_eq!(language_of(Path::new("a/b.py")), Some(("python", "python")));
        assert_eq!(
            language_of(Path::new("x.TSX")).unwrap().1,
            "typescriptreact"
        );
        assert_eq!(language_of(Path::new("Makefile")), None);
        let v: toml::Value = toml::from_str("a = 'pylsp -v'").unwrap();
        assert_eq!(command_for("python", v.get("a")).unwrap(), ["pylsp", "-v"]);
        let v: toml::Value = toml::from_str("a = {command = 'x', args = ['--stdio']}").unwrap();
        assert_eq!(command_for("go", v.get("a")).unwrap(), ["x", "--stdio"]);
        let v: toml::Value = toml::from_str("a = 3").unwrap();
        assert!(
            command_for("go", v.get("a"))
                .unwrap_err()
                .contains("lsp.servers.go")
        );
        let err = command_for("nolang", None).unwrap_err();
        assert!(err.contains("lsp.servers.nolang"), "{err}");
    }
}
