//! The memory files and their entries, as memory-search indexes them.
//!
//! Which files: `<project>/MEMORY.md`, `~/.yuyao/MEMORY.md`, every daily note
//! `<project>/memory/YYYY-MM-DD.md` and `<project>/DREAMS.md`. One chunk per entry: a list
//! item (with its continuation lines) or a `###` block; other paragraphs are chunks too, so
//! hand-written prose is found. The metadata comment (`<!-- id:… when:… -->`) is not part
//! of the searchable text; its id is the chunk's id, else one is derived from the content.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    ProjectMemory,
    GlobalMemory,
    Daily,
    Dreams,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    pub path: PathBuf,
    pub kind: FileKind,
}

/// The memory files that exist now, in a stable order.
pub fn memory_files(home: &Path, project: &Path) -> Vec<MemoryFile> {
    let mut out = vec![
        MemoryFile {
            path: project.join("MEMORY.md"),
            kind: FileKind::ProjectMemory,
        },
        MemoryFile {
            path: home.join("MEMORY.md"),
            kind: FileKind::GlobalMemory,
        },
    ];
    let mut daily: Vec<PathBuf> = std::fs::read_dir(project.join("memory"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(is_daily_name))
        .collect();
    daily.sort();
    out.extend(daily.into_iter().map(|path| MemoryFile {
        path,
        kind: FileKind::Daily,
    }));
    out.push(MemoryFile {
        path: project.join("DREAMS.md"),
        kind: FileKind::Dreams,
    });
    out.retain(|f| f.path.is_file());
    out
}

/// `YYYY-MM-DD.md`.
pub fn is_daily_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".md") else {
        return false;
    };
    chrono::NaiveDate::parse_from_str(stem, "%Y-%m-%d").is_ok() && stem.len() == 10
}

/// One searchable entry of a memory file (lines are 1-based, inclusive).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Chunk {
    pub id: String,
    pub line_start: usize,
    pub line_end: usize,
    pub text: String,
    /// `src:` of the entry's metadata (`dream`, `remember`, …), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// `when:` of the entry's metadata, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

fn is_item_start(line: &str) -> bool {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    if indent > 1 {
        return false;
    }
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") {
        return true;
    }
    let digits = t.chars().take_while(|c| c.is_ascii_digit()).count();
    digits > 0 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
}

/// The entries of a memory file's text.
pub fn chunks(text: &str) -> Vec<Chunk> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim();
        if t.is_empty() || (t.starts_with('#') && !t.starts_with("###")) || is_comment_only(t) {
            i += 1;
            continue;
        }
        let start = i;
        let block = t.starts_with("###");
        let item = is_item_start(line);
        i += 1;
        while i < lines.len() {
            let next = lines[i];
            let nt = next.trim();
            let ends = if block {
                nt.starts_with('#')
            } else if item {
                nt.is_empty() || is_item_start(next) || nt.starts_with('#')
            } else {
                nt.is_empty() || nt.starts_with('#') || is_item_start(next)
            };
            if ends {
                break;
            }
            i += 1;
        }
        let mut end = i;
        while end > start + 1 && lines[end - 1].trim().is_empty() {
            end -= 1;
        }
        if let Some(c) = make_chunk(&lines[start..end], start + 1) {
            out.push(c);
        }
    }
    out
}

fn is_comment_only(t: &str) -> bool {
    t.starts_with("<!--") && t.ends_with("-->")
}

fn make_chunk(lines: &[&str], first_line: usize) -> Option<Chunk> {
    let raw = lines.join("\n");
    let (body, meta) = split_meta(&raw);
    let mut text = body
        .lines()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    for marker in ["### ", "- ", "* ", "+ "] {
        if let Some(rest) = text.strip_prefix(marker) {
            text = rest.to_string();
            break;
        }
    }
    let text = text.trim().to_string();
    if text.is_empty() {
        return None;
    }
    let field = |k: &str| meta_field(&meta, k);
    let id = field("id").unwrap_or_else(|| content_id(&text));
    Some(Chunk {
        id,
        line_start: first_line,
        line_end: first_line + lines.len() - 1,
        text,
        src: field("src"),
        when: field("when"),
    })
}

/// The text without its `<!-- … -->` comments, and the comments' contents.
fn split_meta(raw: &str) -> (String, String) {
    let mut body = String::new();
    let mut meta = String::new();
    let mut rest = raw;
    while let Some(a) = rest.find("<!--") {
        body.push_str(&rest[..a]);
        match rest[a..].find("-->") {
            Some(b) => {
                meta.push_str(&rest[a + 4..a + b]);
                meta.push(' ');
                rest = &rest[a + b + 3..];
            }
            None => {
                rest = "";
            }
        }
    }
    body.push_str(rest);
    (body, meta)
}

/// `key:value` or `key:"quoted value"` in a metadata comment.
fn meta_field(meta: &str, key: &str) -> Option<String> {
    let pat = format!("{key}:");
    let mut from = 0;
    while let Some(pos) = meta[from..].find(&pat) {
        let at = from + pos;
        let boundary = at == 0 || meta[..at].ends_with(char::is_whitespace);
        let rest = &meta[at + pat.len()..];
        if boundary {
            let v = if let Some(q) = rest.strip_prefix('"') {
                q.split('"').next().unwrap_or("")
            } else {
                rest.split_whitespace().next().unwrap_or("")
            };
            return (!v.is_empty()).then(|| v.to_string());
        }
        from = at + pat.len();
    }
    None
}

/// An id for an entry written without one: stable for the same text.
pub fn content_id(text: &str) -> String {
    let norm = normalized(text);
    let h = Sha256::digest(norm.as_bytes());
    format!("h{:02x}{:02x}{:02x}", h[0], h[1], h[2])
}

/// Lower case, words only: what two entries saying the same thing share.
pub fn normalized(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_items_and_blocks_with_their_lines_and_metadata() {
        let text = "# Memory\n\n- Use bun, not npm. <!-- id:m7f3 when:2026-11-30 scope:project why:\"user said\" src:correction -->\n- Tests run with\n  pytest -q\n\nA loose paragraph\nover two lines.\n\n### Deploy\nWe deploy on Fridays.\n\nStill the block.\n";
        let c = chunks(text);
        assert_eq!(c.len(), 4, "{c:?}");
        assert_eq!((c[0].id.as_str(), c[0].line_start, c[0].line_end), ("m7f3", 3, 3));
        assert_eq!(c[0].text, "Use bun, not npm.");
        assert_eq!(c[0].src.as_deref(), Some("correction"));
        assert_eq!(c[0].when.as_deref(), Some("2026-11-30"));
        assert_eq!((c[1].line_start, c[1].line_end), (4, 5));
        assert_eq!(c[1].text, "Tests run with pytest -q");
        assert_eq!((c[2].line_start, c[2].line_end), (7, 8));
        assert_eq!(c[2].text, "A loose paragraph over two lines.");
        assert_eq!((c[3].line_start, c[3].line_end), (10, 13));
        assert_eq!(c[3].text, "Deploy We deploy on Fridays. Still the block.");
        assert_eq!(c[1].id, content_id("tests run with pytest q"));
    }

    #[test]
    fn daily_note_names_are_dates() {
        assert!(is_daily_name("2026-11-30.md"));
        assert!(!is_daily_name("2026-13-30.md"));
        assert!(!is_daily_name("notes.md"));
    }
}
