//! Markdown files with YAML frontmatter (custom commands, rule files): the `---` block at the
//! top parsed with serde_yaml_ng, the rest the body. A bad block is an error naming its line in
//! the file.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The entries of an extension folder, sorted (a missing or unreadable folder has none), so
/// commands, skills, plugins and agents load in the same order on every machine.
pub fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    out.sort();
    out
}

/// The `.ext` files under `dir`, subfolders included up to 4 levels down, in sorted order.
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, ext: &str, depth: usize, out: &mut Vec<PathBuf>) {
        for p in sorted_entries(dir) {
            if p.is_dir() && depth < 4 {
                walk(&p, ext, depth + 1, out);
            } else if p.extension().is_some_and(|e| e == ext) && p.is_file() {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, ext, 0, &mut out);
    out
}

/// `(frontmatter as JSON, body)`; a file without a `---` block has an empty object.
pub fn split(text: &str) -> Result<(Value, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((Value::Object(Default::default()), text));
    };
    let (yaml, body) = match rest.find("\n---") {
        Some(i) => {
            let after = &rest[i + 4..];
            let body = after.split_once('\n').map(|(_, b)| b).unwrap_or("");
            (&rest[..i + 1], body)
        }
        None => return Err("line 1: the frontmatter block is not closed by '---'".into()),
    };
    if yaml.trim().is_empty() {
        return Ok((Value::Object(Default::default()), body));
    }
    let parsed: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).map_err(|e| {
        // The block starts on the file's second line.
        let line = e.location().map(|l| l.line() + 1).unwrap_or(2);
        format!("line {line}: invalid YAML frontmatter ({e})")
    })?;
    let json = serde_json::to_value(&parsed).map_err(|e| format!("line 2: {e}"))?;
    match json {
        Value::Object(_) => Ok((json, body)),
        Value::Null => Ok((Value::Object(Default::default()), body)),
        _ => Err("line 2: the frontmatter is not a mapping".into()),
    }
}

/// A string, or a list of strings, or a comma-separated string, as a list.
pub fn list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_body_and_errors() {
        let (fm, body) =
            split("---\ndescription: Commit\nallowed-tools: [Bash, Read]\n---\nDo it {{args}}\n")
                .unwrap();
        assert_eq!(fm["description"], "Commit");
        assert_eq!(list(fm.get("allowed-tools")), ["Bash", "Read"]);
        assert_eq!(body, "Do it {{args}}\n");
        let (fm, body) = split("no block\n").unwrap();
        assert!(fm.as_object().unwrap().is_empty());
        assert_eq!(body, "no block\n");
        let e = split("---\ndescription: ok\nglobs: [unclosed\n---\nbody").unwrap_err();
        assert!(e.starts_with("line 3") || e.starts_with("line 4"), "{e}");
        assert!(split("---\nx: 1\nbody").unwrap_err().contains("not closed"));
        assert_eq!(
            list(Some(&Value::String("src/**, *.rs".into()))),
            ["src/**", "*.rs"]
        );
    }
}
