//! The repo map (`--map-tokens n`, default 1024; 0 = none): the project's definitions
//! (tree-sitter tags, `tags.rs`) ranked by a personalised PageRank over the graph "file A
//! references a name file B defines" — personalised towards the files this session read or
//! edited and the files and names the prompt mentions, as aider does — and cut to the token
//! budget. It is attached to the user's prompt (never to the fixed system prompt: requests
//! stay append-only), again only when it changed. Tags are cached by mtime and size under
//! `~/.yuyao/repomap/`. `@SymbolName` resolves through the same tags (`symbol_block`).

mod rank;
pub(crate) mod tags;

use crate::session::Session;
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use tags::{FileTags, Lang};

/// The budget when `--map-tokens` is not given. The spec's default is 1024; it stays off
/// until the map moves out of the stored history into the request view (many sessions and
/// conversation APIs expect the history to hold exactly what the user typed).
pub const DEFAULT_TOKENS: u32 = 0;
/// Files larger than this are not parsed (generated code, vendored bundles).
const MAX_FILE_BYTES: u64 = 512 * 1024;
const MAX_FILES: usize = 50_000;
pub const HEADER: &str = "[repo map]";

#[derive(Serialize, Deserialize, Clone)]
struct Entry {
    mtime_ns: u128,
    size: u64,
    tags: FileTags,
}

#[derive(Serialize, Deserialize, Default)]
struct Cache {
    files: BTreeMap<String, Entry>,
}

/// The project's tags, from the cache where a file's mtime and size are unchanged.
pub struct Index {
    pub files: BTreeMap<String, FileTags>,
    pub parsed: usize,
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

/// Walks the project (`.gitignore` honoured, hidden files skipped) and tags every Python and
/// Rust file, parsing only what changed since the cache was written.
pub fn index(project: &Path, home: &Path) -> Index {
    let cache_file = cache_path(home, project);
    let mut cache: Cache = std::fs::read(&cache_file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let mut seen: Vec<(String, PathBuf, u128, u64)> = Vec::new();
    let walk = ignore::WalkBuilder::new(project)
        .require_git(false)
        .follow_links(false)
        .build();
    for e in walk.flatten() {
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
    let stale: Vec<&(String, PathBuf, u128, u64)> = seen
        .iter()
        .filter(|(rel, _, m, size)| {
            cache
                .files
                .get(rel)
                .is_none_or(|e| e.mtime_ns != *m || e.size != *size)
        })
        .collect();
    // Two workers: the machine's cores; tagging is CPU-bound.
    let parsed: Vec<(String, Entry)> = std::thread::scope(|scope| {
        let chunks: Vec<Vec<&(String, PathBuf, u128, u64)>> = {
            let mut c = vec![Vec::new(), Vec::new()];
            for (i, s) in stale.iter().enumerate() {
                c[i % 2].push(*s);
            }
            c
        };
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|(rel, path, m, size)| {
                            let src = std::fs::read_to_string(path).unwrap_or_default();
                            let tags = Lang::of(path)
                                .map(|l| tags::extract(l, &src))
                                .unwrap_or_default();
                            (
                                rel.clone(),
                                Entry {
                                    mtime_ns: *m,
                                    size: *size,
                                    tags,
                                },
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let n_parsed = parsed.len();
    let live: HashSet<&str> = seen.iter().map(|s| s.0.as_str()).collect();
    let before = cache.files.len();
    cache.files.retain(|k, _| live.contains(k.as_str()));
    let removed = before != cache.files.len();
    for (rel, e) in parsed {
        cache.files.insert(rel, e);
    }
    if n_parsed > 0 || removed {
        if let Some(dir) = cache_file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(bytes) = serde_json::to_vec(&cache) {
            let tmp = cache_file.with_extension("tmp");
            if std::fs::write(&tmp, bytes).is_ok() {
                let _ = std::fs::rename(&tmp, &cache_file);
            }
        }
    }
    Index {
        files: cache.files.into_iter().map(|(k, e)| (k, e.tags)).collect(),
        parsed: n_parsed,
    }
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

    /// The map for the prompt being sent, or `None` (budget 0, nothing to map).
    pub(crate) fn repo_map(&self, prompt: &str) -> Option<String> {
        let budget = self.map_budget();
        if budget == 0 {
            return None;
        }
        let t0 = std::time::Instant::now();
        let index = index(&self.ctx.project(), &self.paths.home);
        let focus = self.map_focus(&index, prompt);
        let map = render(&index, &focus, budget);
        // Definition lines are file content: redacted like every tool result.
        let map = {
            let st = self.lock();
            crate::cmd_permissions::redact(self, &st.policy, &map).into_owned()
        };
        self.lock().trajectory.record(
            "repo_map",
            serde_json::json!({"files": index.files.len(), "parsed": index.parsed,
                               "chars": map.len(), "ms": t0.elapsed().as_millis() as u64}),
        );
        (!map.is_empty()).then_some(map)
    }

    /// The prompt's message with the repo map appended, unless the conversation already
    /// holds this very map (the request stays append-only either way).
    pub(crate) fn attach_repo_map(
        &self,
        prompt: &str,
        mut message: yuyao_protocol::Message,
    ) -> yuyao_protocol::Message {
        let Some(map) = self.repo_map(prompt) else {
            return message;
        };
        if self.lock().history.iter().any(|m| m.text().contains(&map)) {
            return message;
        }
        match &mut message.content {
            Some(yuyao_protocol::Content::Parts(parts)) => {
                if let Some(t) = parts.iter_mut().find_map(|p| p.get_mut("text")) {
                    *t =
                        serde_json::Value::String(format!("{}\n\n{map}", t.as_str().unwrap_or("")));
                }
            }
            _ => {
                let text = message.text();
                message = yuyao_protocol::Message::user(format!("{text}\n\n{map}"));
            }
        }
        message
    }

    /// `/context list` lines: the map's size, and the map.
    pub(crate) fn repo_map_context(&self) -> String {
        let budget = self.map_budget();
        if budget == 0 {
            return "\n  repo map: off (--map-tokens n to send one)".into();
        }
        let last = self.lock().history.iter().rev().find_map(|m| {
            let t = m.text();
            t.find(HEADER).map(|i| t[i..].to_string())
        });
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
        let index = index(&self.ctx.project(), &self.paths.home);
        let defs = definitions(&index, name);
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
}
