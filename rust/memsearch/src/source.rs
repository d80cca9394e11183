//! The memory files and their entries as memory-search indexes them: an adapter over
//! `yuyao_store::memory` (the one place that knows where memory files live and how an
//! entry is written), so the ids found here are the ids `/memory` and `/forget` use.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use yuyao_store::memory::{self, Kind, Layout, Scope, format};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// The memory files that exist now, in the layout's order (global MEMORY.md, the project's,
/// daily notes oldest first, DREAMS.md; a headless run's write root after the project).
pub fn memory_files(layout: &Layout) -> Vec<MemoryFile> {
    layout
        .files()
        .into_iter()
        .map(|f| MemoryFile {
            kind: match (f.kind, f.scope) {
                (Kind::Memory, Scope::Global) => FileKind::GlobalMemory,
                (Kind::Memory, Scope::Project) => FileKind::ProjectMemory,
                (Kind::Daily, _) => FileKind::Daily,
                (Kind::Dreams, _) => FileKind::Dreams,
            },
            path: f.path,
        })
        .collect()
}

pub fn is_daily_name(name: &str) -> bool {
    memory::files::is_daily_name(name)
}

/// One searchable entry of a memory file (lines are 1-based, inclusive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    pub id: String,
    pub line_start: usize,
    pub line_end: usize,
    /// The entry's text on one line (marker and metadata removed).
    pub text: String,
    /// `src:` of the entry (`hand` when it has no metadata).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// `when:` of the entry's metadata, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

/// The entries of a memory file's text.
pub fn chunks(text: &str) -> Vec<Chunk> {
    format::parse(text)
        .into_iter()
        .map(|e| Chunk {
            id: e.id,
            line_start: e.line_start,
            line_end: e.line_end,
            text: e.text.split_whitespace().collect::<Vec<_>>().join(" "),
            src: Some(e.src),
            when: e.when,
        })
        .filter(|c| !c.text.is_empty())
        .collect()
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
    fn entries_carry_their_lines_ids_and_metadata() {
        let text = "# Memory\n\n- Use bun, not npm. <!-- id:m7f3a when:2026-11-30 scope:project why:\"user said\" src:correction -->\n- Tests run with\n  pytest -q\n\n### Deploy\nWe deploy on Fridays.\n";
        let c = chunks(text);
        assert_eq!(c.len(), 3, "{c:?}");
        assert_eq!(
            (c[0].id.as_str(), c[0].line_start, c[0].line_end),
            ("m7f3a", 3, 3)
        );
        assert_eq!(c[0].text, "Use bun, not npm.");
        assert_eq!(c[0].src.as_deref(), Some("correction"));
        assert_eq!(c[0].when.as_deref(), Some("2026-11-30"));
        assert_eq!((c[1].line_start, c[1].line_end), (4, 5));
        assert_eq!(c[1].text, "Tests run with pytest -q");
        assert_eq!(c[2].text, "Deploy We deploy on Fridays.");
    }
}
