//! Writing memory: a new entry (`/remember`, "remember that …", an accepted correction, the
//! flush), removal and edit by id, and the `/forget` matcher. Every write rewrites one file
//! atomically and leaves every other entry's bytes as they were.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::Memory;
use std::path::PathBuf;
use yuyao_store::memory::{Kind, MemoryFile, Scope, format};

/// An entry together with the file it lives in.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub file: MemoryFile,
    pub entry: format::Entry,
}

impl Memory {
    /// Appends one entry to the `MEMORY.md` of `scope` (the same text already there is not
    /// written twice). Returns the file and the entry.
    pub fn add(&self, scope: Scope, text: &str, why: &str, src: &str) -> Result<Found, String> {
        let path = self.layout.target(scope);
        self.append_to(path, scope, Kind::Memory, text, why, src)
    }

    /// Appends one entry to today's daily note.
    pub fn add_daily(&self, text: &str, why: &str, src: &str) -> Result<Found, String> {
        let path = self.layout.daily_target(&super::today());
        self.append_to(path, Scope::Project, Kind::Daily, text, why, src)
    }

    fn append_to(
        &self,
        path: PathBuf,
        scope: Scope,
        kind: Kind,
        text: &str,
        why: &str,
        src: &str,
    ) -> Result<Found, String> {
        // Never interleaved with a dream rewriting the same files (`maintain.rs`).
        let _files = self.files_lock();
        if !self.enabled {
            return Err(
                "memory is off in this session (--no-memory or memory.enabled = false)".into(),
            );
        }
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return Err("nothing to remember: the text is empty".into());
        }
        let file = MemoryFile {
            path: path.clone(),
            scope,
            kind,
        };
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        let entries = format::parse(&current);
        let norm = |s: &str| {
            s.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        };
        if let Some(e) = entries.iter().find(|e| norm(&e.text) == norm(&text)) {
            return Ok(Found {
                file,
                entry: e.clone(),
            });
        }
        let when = super::today();
        let taken: Vec<String> = self.all().into_iter().map(|f| f.entry.id).collect();
        let meta = format::Meta {
            id: format::new_id(&text, &chrono::Local::now().to_rfc3339(), &taken),
            when,
            scope: scope.as_str().into(),
            why: why.into(),
            src: src.into(),
        };
        let line = format::render(&text, &meta);
        let next = format::append(&current, &line);
        self.layout
            .write_atomic(&path, next.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        if scope == Scope::Project && self.layout.write == self.layout.project {
            yuyao_store::memory::files::exclude_written(&self.layout.project, &path);
        }
        let entry = format::parse(&next)
            .into_iter()
            .find(|e| e.id == meta.id)
            .ok_or_else(|| format!("the entry written to {} does not read back", path.display()))?;
        Ok(Found { file, entry })
    }

    /// Every entry of every memory file but the dream journal: `MEMORY.md` files first.
    pub fn all(&self) -> Vec<Found> {
        self.layout
            .files()
            .into_iter()
            .filter(|f| f.kind != Kind::Dreams)
            .flat_map(|file| {
                let text = std::fs::read_to_string(&file.path).unwrap_or_default();
                format::parse(&text).into_iter().map(move |entry| Found {
                    file: file.clone(),
                    entry,
                })
            })
            .collect()
    }

    /// Removes the entry `id` from its file (other bytes untouched).
    pub fn delete(&self, id: &str) -> Result<Found, String> {
        let _files = self.files_lock();
        let found = self.by_id(id)?;
        let text = std::fs::read_to_string(&found.file.path).map_err(|e| e.to_string())?;
        let next = format::remove(&text, id).ok_or_else(|| format!("no memory entry {id}"))?;
        self.layout
            .write_atomic(&found.file.path, next.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", found.file.path.display()))?;
        Ok(found)
    }

    /// Replaces the text of entry `id` (its metadata stays).
    pub fn edit(&self, id: &str, new_text: &str) -> Result<Found, String> {
        let _files = self.files_lock();
        let found = self.by_id(id)?;
        let text = std::fs::read_to_string(&found.file.path).map_err(|e| e.to_string())?;
        let next = format::replace_text(&text, id, new_text)
            .ok_or_else(|| format!("no memory entry {id}"))?;
        self.layout
            .write_atomic(&found.file.path, next.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", found.file.path.display()))?;
        Ok(found)
    }

    fn by_id(&self, id: &str) -> Result<Found, String> {
        let all = self.all();
        let mut hits = all.iter().filter(|f| f.entry.id == id);
        match (hits.next(), hits.next()) {
            (Some(f), None) => Ok(f.clone()),
            (Some(_), Some(_)) => Err(format!(
                "the id {id} is in more than one memory file; edit the file by hand (/memory open)"
            )),
            _ => Err(format!(
                "no memory entry has the id {id} (/memory lists them)"
            )),
        }
    }
}

/// What `/forget <query>` would remove: the entry whose id is the query; else the entries
/// whose whole text is the query; else those containing every word of the query as a whole
/// word (`alpha` never matches `alphabet`).
pub(crate) fn forget_candidates(all: &[Found], query: &str) -> Vec<Found> {
    let q = query.trim();
    if let Some(f) = all.iter().find(|f| f.entry.id == q) {
        return vec![f.clone()];
    }
    let norm = |s: &str| words(s).join(" ");
    let exact: Vec<Found> = all
        .iter()
        .filter(|f| norm(&f.entry.text) == norm(q))
        .cloned()
        .collect();
    if !exact.is_empty() {
        return exact;
    }
    let qw = words(q);
    if qw.is_empty() {
        return Vec::new();
    }
    all.iter()
        .filter(|f| {
            let ew = words(&f.entry.text);
            qw.iter().all(|w| ew.contains(w))
        })
        .cloned()
        .collect()
}

/// Lower-cased words (letters, digits, `_`, `-`, `.` and `/` inside a word).
fn words(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || "_-./".contains(c)))
        .map(|w| w.trim_matches(['.', '-', '/']).to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str, id: &str) -> Found {
        Found {
            file: MemoryFile {
                path: "/m/MEMORY.md".into(),
                scope: Scope::Project,
                kind: Kind::Memory,
            },
            entry: format::parse(&format!("- {text} <!-- id:{id} src:remember -->\n")).remove(0),
        }
    }

    #[test]
    fn forget_matches_whole_words_and_prefers_exact_entries() {
        let all = vec![
            found("alphabet soup is the fixture", "m1"),
            found("alpha", "m2"),
            found("the alpha build uses make", "m3"),
        ];
        let ids = |v: Vec<Found>| v.into_iter().map(|f| f.entry.id).collect::<Vec<_>>();
        assert_eq!(ids(forget_candidates(&all, "alpha")), ["m2"]);
        assert_eq!(ids(forget_candidates(&all, "Alpha.")), ["m2"]);
        assert_eq!(ids(forget_candidates(&all, "alpha build")), ["m3"]);
        assert!(forget_candidates(&all, "alphabe").is_empty());
        assert_eq!(ids(forget_candidates(&all, "m1")), ["m1"]);
        let all = vec![
            found("alphabet soup", "m1"),
            found("alpha one", "m2"),
            found("alpha two", "m3"),
        ];
        assert_eq!(ids(forget_candidates(&all, "alpha")), ["m2", "m3"]);
    }
}
