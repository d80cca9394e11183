//! The memory tools the core runs itself (they need the session's memory layout):
//! `memory-get {path[:start-end]}` reads a memory file or a line range of it and refuses any
//! other path, so it is no way around the read tool's secret rules. `memory-search` joins
//! this table.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::Memory;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use yuyao_store::memory::{Layout, Scope};
use yuyao_tools::ToolOutput;

pub(crate) const NAMES: &[&str] = &["memory-get", super::search::NAME];

pub(crate) fn schemas() -> Vec<Value> {
    vec![
        super::search::schema(),
        json!({
            "type": "function",
            "function": {
                "name": "memory-get",
                "description": "Read a memory file (MEMORY.md, ~/.yuyao/MEMORY.md, memory/YYYY-MM-DD.md, DREAMS.md), whole or a line range: path `MEMORY.md`, `MEMORY.md:10-20`, `global`, `memory/2026-01-02.md`. Refuses any other file.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": "memory file, optionally :start-end (1-based lines)"}},
                    "required": ["path"],
                    "additionalProperties": false
                }
            }
        }),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetArgs {
    #[serde(alias = "file", alias = "file_path")]
    path: String,
}

/// Runs a memory tool; `None` when `name` is not one.
pub(crate) fn run(memory: &Memory, name: &str, raw: &str) -> Option<ToolOutput> {
    if name != "memory-get" {
        return None;
    }
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    Some(match serde_json::from_str::<GetArgs>(raw) {
        Ok(a) => get(&memory.layout, &a.path),
        Err(e) => ToolOutput::err(format!(
            "invalid arguments for memory-get: {e}. Send {{\"path\": \"MEMORY.md\"}} or {{\"path\": \"MEMORY.md:3-9\"}}."
        )),
    })
}

fn get(layout: &Layout, spec: &str) -> ToolOutput {
    let (name, range) = split_range(spec.trim());
    let path = match name {
        "global" | "~/.yuyao/MEMORY.md" => layout.target(Scope::Global),
        n if Path::new(n).is_absolute() => PathBuf::from(n),
        n => {
            let in_write = layout.write.join(n);
            if in_write.exists() {
                in_write
            } else {
                layout.project.join(n)
            }
        }
    };
    if !is_memory_file(layout, &path) {
        return ToolOutput::err(format!(
            "memory-get reads only memory files (MEMORY.md, ~/.yuyao/MEMORY.md, memory/YYYY-MM-DD.md, DREAMS.md); {} is not one. Use the read tool for other files.",
            path.display()
        ));
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return ToolOutput::err(format!("cannot read {}: {e}", path.display())),
    };
    let lines: Vec<&str> = text.lines().collect();
    let (a, b) = match range {
        Some(r) => r,
        None => (1, lines.len().max(1)),
    };
    if a == 0 || a > b {
        return ToolOutput::err(format!(
            "invalid line range {a}-{b}: lines are 1-based, start ≤ end"
        ));
    }
    if range.is_some() {
        record_use(layout, &path, &text, a, b);
    }
    let mut out = format!(
        "{} (lines {a}-{} of {})\n",
        path.display(),
        b.min(lines.len()),
        lines.len()
    );
    for (i, l) in lines.iter().enumerate().skip(a - 1).take(b + 1 - a) {
        out.push_str(&format!("{:>5}  {l}\n", i + 1));
    }
    ToolOutput::ok(out)
}

/// A targeted read (a line range) is a use of the entries it covers: counted with the
/// memory-search recalls, which the bootstrap's truncation keeps the most-used entries by.
fn record_use(layout: &Layout, path: &Path, text: &str, a: usize, b: usize) {
    let hits: Vec<(PathBuf, String)> = yuyao_store::memory::format::parse(text)
        .into_iter()
        .filter(|e| e.line_start <= b && e.line_end >= a)
        .map(|e| (path.to_path_buf(), e.id))
        .collect();
    let dir = yuyao_memsearch::index::index_dir(&layout.global, &layout.write);
    yuyao_memsearch::recall::record(&dir, &hits, "memory-get", &super::today());
}

/// `MEMORY.md:3-9` → (`MEMORY.md`, (3, 9)); `MEMORY.md:4` → one line.
fn split_range(spec: &str) -> (&str, Option<(usize, usize)>) {
    if let Some((name, r)) = spec.rsplit_once(':') {
        let parse = |x: &str| x.trim().parse::<usize>().ok();
        let range = match r.split_once('-') {
            Some((a, b)) => parse(a).zip(parse(b)),
            None => parse(r).map(|a| (a, a)),
        };
        if range.is_some() {
            return (name, range);
        }
    }
    (spec, None)
}

/// A memory file of this session, reached without a symbolic link (a link named MEMORY.md
/// pointing at a secret is refused).
fn is_memory_file(layout: &Layout, path: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return false;
    }
    let Some(parent) = path.parent() else {
        return false;
    };
    let Some(name) = path.file_name() else {
        return false;
    };
    let real = Layout {
        global: canon(&layout.global),
        project: canon(&layout.project),
        write: canon(&layout.write),
    };
    let parent = canon(parent);
    real.is_memory_path(&parent.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_memory_files_and_refuses_everything_else() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        std::fs::write(proj.path().join("MEMORY.md"), "# M\n- one\n- two\n").unwrap();
        std::fs::write(proj.path().join(".env"), "KEY=secret\n").unwrap();
        std::os::unix::fs::symlink(proj.path().join(".env"), proj.path().join("DREAMS.md"))
            .unwrap();
        let layout = Layout::new(home.path(), proj.path(), None);
        let out = get(&layout, "MEMORY.md:2-3");
        assert!(
            out.ok && out.text.contains("- one") && !out.text.contains("# M"),
            "{}",
            out.text
        );
        for bad in [
            ".env",
            "DREAMS.md",
            "../MEMORY.md",
            "memory/../.env",
            "/etc/passwd",
        ] {
            let out = get(&layout, bad);
            assert!(
                !out.ok && !out.text.contains("secret"),
                "{bad}: {}",
                out.text
            );
        }
    }
}
