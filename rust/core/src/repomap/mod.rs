//! The repo map (`--map-tokens n`, default 1024; 0 = none): the project's definitions
//! (tree-sitter tags, `tags.rs`) ranked by a personalised PageRank over the graph "file A
//! references a name file B defines" — personalised towards the files this session read or
//! edited and the files and names the prompt mentions, as aider does — and cut to the token
//! budget. It is computed once per user prompt and lives in the request view, not in the
//! history: a note placed just before the prompt it was made for, sent again with that prompt
//! in every later request (so requests stay append-only for prompt caching) and added again
//! with a later prompt only when the map changed. The stored prompt stays what the user
//! typed. Tags are cached by mtime and size under `~/.yuyao/repomap/` and kept in memory
//! between turns. `@SymbolName` resolves through the same tags (`symbol_block`).

mod rank;
pub(crate) mod tags;

use crate::session::Session;
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use tags::{FileTags, Lang};

/// The budget when `--map-tokens` is not given.
pub const DEFAULT_TOKENS: u32 = 1024;
/// Files larger than this are not parsed (generated code, vendored bundles).
const MAX_FILE_BYTES: u64 = 512 * 1024;
const MAX_FILES: usize = 50_000;
const MAX_ENTRIES: usize = 500_000;
pub const HEADER: &str = "[repo map]";

/// The project's tags (what the cache file holds): each file's tags and the mtime and size
/// they were read at.
#[derive(Serialize, Deserialize, Default)]
pub struct Index {
    pub files: BTreeMap<String, FileTags>,
    stamps: BTreeMap<String, (u128, u64)>,
    /// Files parsed to build this index (the rest came from the cache).
    #[serde(skip)]
    pub parsed: usize,
}

/// A map sent with the prompt at `history[at]` (whose text hashes to `anchor`).
struct Note {
    at: usize,
    anchor: u64,
    text: String,
}

/// The session's repo maps and its tag cache (project, cache) between turns.
#[derive(Default)]
pub struct Maps {
    notes: Vec<Note>,
    index: Option<(PathBuf, Index)>,
}

fn anchor_of(m: &yuyao_protocol::Message) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    m.text().hash(&mut h);
    h.finish()
}

impl Maps {
    /// The history was cut to `len` messages: maps of prompts past it go with them.
    pub fn truncate(&mut self, len: usize) {
        self.notes.retain(|n| n.at < len);
    }

    fn live<'a>(
        &'a self,
        history: &'a [yuyao_protocol::Message],
    ) -> impl Iterator<Item = &'a Note> {
        self.notes
            .iter()
            .filter(|n| history.get(n.at).is_some_and(|m| anchor_of(m) == n.anchor))
    }

    /// `map` goes with the prompt just pushed at `history[at]`.
    pub fn record(&mut self, history: &[yuyao_protocol::Message], at: usize, map: String) {
        if let Some(m) = history.get(at) {
            self.notes.push(Note {
                at,
                anchor: anchor_of(m),
                text: map,
            });
        }
    }

    /// The map most recently sent, if its prompt is still in the history.
    fn latest<'a>(&'a self, history: &'a [yuyao_protocol::Message]) -> Option<&'a str> {
        self.live(history).last().map(|n| n.text.as_str())
    }

    /// `view` (the history as sent, one message per history message) with each map placed
    /// just before the prompt it was made for.
    pub fn insert_into(
        &self,
        history: &[yuyao_protocol::Message],
        mut view: Vec<yuyao_protocol::Message>,
    ) -> Vec<yuyao_protocol::Message> {
        if view.len() != history.len() {
            return view;
        }
        let mut notes: Vec<&Note> = self.live(history).collect();
        notes.sort_by_key(|n| std::cmp::Reverse(n.at));
        for n in notes {
            view.insert(n.at, yuyao_protocol::Message::user(n.text.clone()));
        }
        view
    }
}

fn cache_path(home: &Path, project: &Path) -> PathBuf {
    let digest = sha2::Sha256::digest(project.to_string_lossy().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    home.join("repomap").join(format!("{hex}.json"))
}

fn stamp(meta: &std::fs::Metadata) -> u128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// Walks the project (`.gitignore` honoured, hidden files skipped) and tags every file of a
/// known language, parsing only what changed since the cache was written.
#[cfg(test)]
pub fn index(project: &Path, home: &Path) -> Index {
    index_from(project, home, None)
}

/// A file to tag: project-relative name, path, mtime, size.
type Seen = (String, PathBuf, u128, u64);

/// The project's code files, in walk order, at most `MAX_FILES` of them; the walk itself
/// stops after `MAX_ENTRIES` entries (a home folder or a huge tree of other files).
fn walk(project: &Path) -> Vec<Seen> {
    let mut seen = Vec::new();
    let walk = ignore::WalkBuilder::new(project)
        .require_git(false)
        .follow_links(false)
        .build();
    for e in walk.flatten().take(MAX_ENTRIES) {
        if seen.len() >= MAX_FILES {
            break;
        }
        let p = e.path();
        if Lang::of(p).is_none() || !e.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        if meta.len() > MAX_FILE_BYTES || yuyao_policy::sensitive::is_sensitive(p) {
            continue;
        }
        let Ok(rel) = p.strip_prefix(project) else {
            continue;
        };
        seen.push((
            rel.to_string_lossy().into_owned(),
            p.to_path_buf(),
            stamp(&meta),
            meta.len(),
        ));
    }
    seen
}

/// Tags of `files`, on two workers (the machine's cores; tagging is CPU-bound).
fn parse(files: &[&Seen]) -> Vec<(String, (u128, u64), FileTags)> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(files.len().div_ceil(2).max(1))
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|(rel, path, m, size)| {
                            let src = std::fs::read_to_string(path).unwrap_or_default();
                            let tags = Lang::of(path)
                                .map(|l| tags::extract(l, &src))
                                .unwrap_or_default();
                            (rel.clone(), (*m, *size), tags)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// [`index`], starting from `memory` (this session's index from an earlier turn) instead of
/// reading the cache file.
fn index_from(project: &Path, home: &Path, memory: Option<Index>) -> Index {
    let cache_file = cache_path(home, project);
    let mut index: Index = memory.unwrap_or_else(|| {
        std::fs::read(&cache_file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    });
    let seen = walk(project);
    let stale: Vec<&Seen> = seen
        .iter()
        .filter(|(rel, _, m, size)| index.stamps.get(rel) != Some(&(*m, *size)))
        .collect();
    let parsed = parse(&stale);
    index.parsed = parsed.len();
    let live: HashSet<&str> = seen.iter().map(|s| s.0.as_str()).collect();
    let before = index.files.len();
    index.files.retain(|k, _| live.contains(k.as_str()));
    index.stamps.retain(|k, _| live.contains(k.as_str()));
    let removed = before != index.files.len();
    for (rel, stamp, tags) in parsed {
        index.stamps.insert(rel.clone(), stamp);
        index.files.insert(rel, tags);
    }
    if index.parsed > 0 || removed {
        if let Some(dir) = cache_file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(bytes) = serde_json::to_vec(&index) {
            let tmp = cache_file.with_extension(format!("{}.tmp", std::process::id()));
            if std::fs::write(&tmp, bytes).is_ok() {
                let _ = std::fs::rename(&tmp, &cache_file);
            }
        }
    }
    index
}

/// What the ranking leans towards: files (project-relative) and identifiers.
#[derive(Default)]
pub struct Focus {
    pub files: HashSet<String>,
    pub idents: HashSet<String>,
}

/// The map text within `budget` tokens (4 characters each), empty when nothing fits.
pub fn render(index: &Index, focus: &Focus, budget: u32) -> String {
    if budget == 0 {
        return String::new();
    }
    let ranked = rank::rank(index, focus);
    let limit = budget as usize * 4;
    let text = |k: usize| -> String {
        let mut by_file: Vec<(&str, Vec<&tags::Def>)> = Vec::new();
        let mut slot: std::collections::HashMap<&str, usize> = Default::default();
        for (file, name) in ranked.iter().take(k) {
            let defs = index.files[file.as_str()]
                .defs
                .iter()
                .filter(|d| d.name == *name);
            match slot.get(file.as_str()) {
                Some(&i) => by_file[i].1.extend(defs),
                None => {
                    slot.insert(file.as_str(), by_file.len());
                    by_file.push((file.as_str(), defs.collect()));
                }
            }
        }
        let mut out = format!(
            "{HEADER} The project's most relevant definitions (ranked from the files and names this session works on); read a file for its full text:\n"
        );
        for (file, mut defs) in by_file {
            defs.sort_by_key(|d| d.line);
            defs.dedup_by_key(|d| d.line);
            out.push_str(file);
            out.push_str(":\n");
            for d in defs {
                out.push_str(&format!("{:>5}│{}\n", d.line, d.text));
            }
        }
        out
    };
    // The most entries whose text fits the budget (the text grows with k).
    // Every entry costs at least a line of ~10 characters: no need to try more than that.
    let (mut lo, mut hi) = (0usize, ranked.len().min(limit / 10 + 1));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if text(mid).len() <= limit {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 {
        return String::new();
    }
    text(lo).trim_end().to_string()
}

/// Candidate definitions of `name`: (file, def).
pub fn definitions<'a>(index: &'a Index, name: &str) -> Vec<(&'a str, &'a tags::Def)> {
    index
        .files
        .iter()
        .flat_map(|(f, t)| t.defs.iter().map(move |d| (f.as_str(), d)))
        .filter(|(_, d)| d.name == name)
        .collect()
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '/'))
        .filter(|w| !w.is_empty())
}

impl Session {
    fn map_budget(&self) -> u32 {
        self.opts.map_tokens.unwrap_or(DEFAULT_TOKENS)
    }

    /// Files read or edited in this session and files and names `prompt` mentions.
    fn map_focus(&self, index: &Index, prompt: &str) -> Focus {
        let project = self.ctx.project();
        let mut focus = Focus::default();
        if let Ok(files) = self.ctx.files.lock() {
            for p in files.keys() {
                if let Ok(rel) = p.strip_prefix(&project) {
                    focus.files.insert(rel.to_string_lossy().into_owned());
                }
            }
        }
        for w in words(prompt) {
            let w = w.trim_matches('.');
            if index.files.contains_key(w) {
                focus.files.insert(w.to_string());
            } else if let Some((f, _)) = index
                .files
                .iter()
                .find(|(f, _)| Path::new(f).file_name().is_some_and(|n| n == w))
            {
                focus.files.insert(f.clone());
            }
            for part in w.split(['.', '/']) {
                if !part.is_empty() {
                    focus.idents.insert(part.to_string());
                }
            }
        }
        focus
    }

    /// Runs `f` on the project's tags, refreshed from this session's in-memory index (the
    /// cache file only on the first use): unchanged files are only stat'ed.
    fn with_index<R>(&self, f: impl FnOnce(&Index) -> R) -> R {
        let project = self.ctx.project();
        let memory = self
            .lock()
            .repo_maps
            .index
            .take()
            .filter(|(p, _)| *p == project)
            .map(|(_, i)| i);
        let index = index_from(&project, &self.paths.home, memory);
        let out = f(&index);
        self.lock().repo_maps.index = Some((project, index));
        out
    }

    /// The map for the prompt being sent, or `None` (budget 0, nothing to map).
    pub(crate) fn repo_map(&self, prompt: &str) -> Option<String> {
        let budget = self.map_budget();
        if budget == 0 {
            return None;
        }
        let t0 = std::time::Instant::now();
        let (map, files, parsed) = self.with_index(|index| {
            let focus = self.map_focus(index, prompt);
            (
                render(index, &focus, budget),
                index.files.len(),
                index.parsed,
            )
        });
        // Definition lines are file content: redacted like every tool result.
        let map = {
            let st = self.lock();
            crate::cmd_permissions::redact(self, &st.policy, &map).into_owned()
        };
        self.lock().trajectory.record(
            "repo_map",
            serde_json::json!({"files": files, "parsed": parsed,
                               "chars": map.len(), "ms": t0.elapsed().as_millis() as u64}),
        );
        (!map.is_empty()).then_some(map)
    }

    /// The map for `prompt`, unless it is the one the requests already carry. Computed
    /// before the prompt is pushed (it walks the project; no lock held).
    pub(crate) fn new_repo_map(&self, prompt: &str) -> Option<String> {
        let map = self.repo_map(prompt)?;
        let st = self.lock();
        (st.repo_maps.latest(&st.history) != Some(map.as_str())).then_some(map)
    }

    /// `/context list` lines: the map's size, and the map.
    pub(crate) fn repo_map_context(&self) -> String {
        let budget = self.map_budget();
        if budget == 0 {
            return "\n  repo map: off (--map-tokens n to send one)".into();
        }
        let last = {
            let st = self.lock();
            st.repo_maps.latest(&st.history).map(str::to_string)
        };
        match last.or_else(|| self.repo_map("")) {
            None => format!("\n  repo map: nothing to map (budget {budget} tokens)"),
            Some(map) => format!(
                "\n  repo map: {} tokens of {budget} (--map-tokens)\n{}",
                map.chars().count().div_ceil(4),
                map.lines()
                    .map(|l| format!("    {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        }
    }

    /// `@Name` that is no path: the definition's lines, or the candidates when ambiguous.
    pub(crate) fn symbol_block(&self, word: &str) -> Option<String> {
        let name = word.trim_start_matches('@');
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        self.with_index(|index| self.symbol_text(index, name))
    }

    fn symbol_text(&self, index: &Index, name: &str) -> Option<String> {
        let mut defs = definitions(index, name);
        // A C/C++ prototype beside its definition: the definition is what `@name` means.
        if defs.iter().any(|(_, d)| d.kind != "declaration") {
            defs.retain(|(_, d)| d.kind != "declaration");
        }
        match defs.as_slice() {
            [] => None,
            [(file, d)] => {
                let text = std::fs::read_to_string(self.ctx.project().join(file)).ok()?;
                let body: Vec<&str> = text
                    .lines()
                    .skip(d.line as usize - 1)
                    .take((d.end - d.line + 1).min(400) as usize)
                    .collect();
                Some(format!(
                    "[@{name}: {} {name} in {file}, lines {}-{}]\n{}\n",
                    d.kind,
                    d.line,
                    d.end,
                    body.join("\n")
                ))
            }
            many => Some(format!(
                "[@{name} is ambiguous: {} definitions; name the file with @path]\n{}\n",
                many.len(),
                many.iter()
                    .take(20)
                    .map(|(f, d)| format!("  {f}:{}  {}", d.line, d.text))
                    .collect::<Vec<_>>()
                    .join("\n")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_caches_by_mtime_and_render_fits_the_budget() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        for i in 0..30 {
            std::fs::write(
                project.path().join(format!("m{i}.py")),
                format!(
                    "def f{i}(x):\n    return g{}(x)\n\ndef g{i}(x):\n    return x\n",
                    (i + 1) % 30
                ),
            )
            .unwrap();
        }
        let first = index(project.path(), home.path());
        assert_eq!((first.files.len(), first.parsed), (30, 30));
        let again = index(project.path(), home.path());
        assert_eq!(
            again.parsed, 0,
            "nothing changed: everything from the cache"
        );
        assert_eq!(again.files, first.files);
        std::fs::write(project.path().join("m3.py"), "def changed():\n    pass\n").unwrap();
        std::fs::remove_file(project.path().join("m4.py")).unwrap();
        let third = index(project.path(), home.path());
        assert_eq!((third.files.len(), third.parsed), (29, 1));
        assert_eq!(third.files["m3.py"].defs[0].name, "changed");
        for budget in [60, 100, 400] {
            let map = render(&third, &Focus::default(), budget);
            assert!(map.len() <= budget as usize * 4, "{budget}: {map}");
            assert!(map.starts_with(HEADER), "{budget}: {map}");
        }
        assert!(render(&third, &Focus::default(), 0).is_empty());
        assert!(
            render(&third, &Focus::default(), 10).is_empty(),
            "not even the header fits"
        );
    }

    #[test]
    fn map_notes_sit_before_their_prompts_and_go_with_them() {
        use yuyao_protocol::Message;
        let mut history = vec![
            Message::user("first"),
            Message::assistant("a"),
            Message::user("second"),
            Message::assistant("b"),
        ];
        let mut maps = Maps::default();
        maps.record(&history, 0, "[repo map] one".into());
        maps.record(&history, 2, "[repo map] two".into());
        let texts = |v: Vec<Message>| v.iter().map(|m| m.text()).collect::<Vec<_>>();
        assert_eq!(
            texts(maps.insert_into(&history, history.clone())),
            [
                "[repo map] one",
                "first",
                "a",
                "[repo map] two",
                "second",
                "b"
            ]
        );
        assert_eq!(maps.latest(&history), Some("[repo map] two"));
        // A history replaced under the note (compaction, another session): the note goes.
        history[2] = Message::user("a summary");
        assert_eq!(
            texts(maps.insert_into(&history, history.clone())),
            ["[repo map] one", "first", "a", "a summary", "b"]
        );
        assert_eq!(maps.latest(&history), Some("[repo map] one"));
        maps.truncate(0);
        assert_eq!(maps.latest(&history), None);
    }
}
