//! The repo map (`--map-tokens n`, default 1024; 0 = none): the project's definitions
//! (tree-sitter tags, `tags.rs`) ranked by a personalised PageRank over the graph "file A
//! references a name file B defines" — personalised towards the files this session read or
//! edited and the files and names the prompt mentions, as aider does — and cut to the token
//! budget. It is computed once per user prompt and lives in the request view, not in the
//! history: a note placed just before the prompt it was made for, sent again with that prompt
//! in every later request (so requests stay append-only for prompt caching) and added again
//! with a later prompt only when the map changed. The stored prompt stays what the user
//! typed. Tags are cached by mtime and size under `~/.yuyao/repomap/` (names and line
//! numbers only, no source text) and kept in memory between turns. `@SymbolName` resolves
//! through the same tags (`symbol_block`).
//!
//! The map never makes a request wait (the answer is what the user waits for): it is built on one background thread at the lowest CPU priority; a
//! prompt waits for it at most `GRACE` (or until a small tree's few files are tagged), and
//! otherwise goes without it; the map then joins the first request made after it is ready,
//! at the end of that request's view (after everything already sent, DESIGN §4's
//! append-only requests). A tree past `PARSE_FILES` code files is ranked by what costs no
//! parsing (files and names the prompt mentions, recent commits, path depth) and only the
//! top of that ranking is tagged; the map says how large the tree is and what was mapped.
//! A later prompt in a tree too large to walk at every prompt checks HEAD and the mapped
//! files' mtime and size only, re-tagging what changed; a moved HEAD rebuilds in the
//! background.

mod rank;
pub mod tags;

use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tags::{FileTags, Lang};

/// The budget when `--map-tokens` is not given.
pub const DEFAULT_TOKENS: u32 = 1024;
/// Files larger than this are not parsed (generated code, vendored bundles).
pub const MAX_FILE_BYTES: u64 = 512 * 1024;
pub const MAX_FILES: usize = 200_000;
pub const MAX_ENTRIES: usize = 500_000;
/// A tree with more code files than this is not tagged whole: only the files ranked first by
/// the cheap signals (mentions, paths, git recency) are (`select`); the map says so.
pub const PARSE_FILES: usize = 2_000;
/// How long a prompt waits for a map still being built before it goes without one (a small
/// tree's build is done by then; a large tree's map attaches to a later request).
pub const GRACE: Duration = Duration::from_millis(250);
/// A tree walked faster than this is walked again at every prompt (new files show up at
/// once); a slower one is checked by HEAD and the mapped files' mtime and size only.
pub const REWALK_MS: u128 = 100;
/// A tree with at most this many code files is walked again at every prompt whatever the
/// walk took: a busy machine must not make a small project's new files invisible.
pub const REWALK_FILES: usize = 2_000;
/// A build with at most this many files left to tag after its walk is waited for (a small
/// tree's map is in its first request); past it only `GRACE` is.
pub const SMALL_PARSE: usize = 200;
/// Test hook: milliseconds the background build sleeps before it starts (tests use it to
/// make a build slower than the first request).
pub const TEST_DELAY_ENV: &str = "YUYAO_TEST_REPOMAP_DELAY_MS";
pub const HEADER: &str = "[repo map]";

/// The project's tags (what the cache file holds): each file's tags and the mtime and size
/// they were read at.
#[derive(Serialize, Deserialize, Default, Clone)]
pub struct Index {
    pub files: BTreeMap<String, FileTags>,
    pub stamps: BTreeMap<String, (u128, u64)>,
    /// Files parsed to build this index (the rest came from the cache).
    #[serde(skip)]
    pub parsed: usize,
    /// Code files the walk found (more than `files` when the tree was past `PARSE_FILES`).
    #[serde(skip)]
    pub total: usize,
    /// How long the walk took, and the commit HEAD named then (what a later prompt checks).
    #[serde(skip)]
    pub walk_ms: u128,
    #[serde(skip)]
    pub head: Option<String>,
    /// Changes whenever the tags do (a rendered map is reused while it and the focus hold).
    #[serde(skip)]
    pub generation: u64,
}

pub fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// What a rendered map depends on: the tags, the budget, the focus files and the focused
/// names the tags define (other names weigh nothing in the ranking).
pub type RenderKey = (u64, u32, Vec<String>, Vec<String>);

pub fn render_key(index: &Index, focus: &Focus, budget: u32) -> RenderKey {
    let mut files: Vec<String> = focus.files.iter().cloned().collect();
    files.sort();
    let defined: HashSet<&str> = index
        .files
        .values()
        .flat_map(|t| t.defs.iter().map(|d| d.name.as_str()))
        .collect();
    let mut idents: Vec<String> = focus
        .idents
        .iter()
        .filter(|i| defined.contains(i.as_str()))
        .cloned()
        .collect();
    idents.sort();
    (index.generation, budget, files, idents)
}

/// A map sent just before `history[at]`: the prompt it was made for (whose text hashes to
/// `anchor`), or — a map that was ready only after its prompt's first request (`follows`) —
/// whatever comes after `history[at - 1]` (which hashes to `anchor`).
pub struct Note {
    pub at: usize,
    pub anchor: u64,
    pub follows: bool,
    pub text: String,
}

/// What the background build reports: how many files it has left to tag once the walk is
/// done, then the index.
pub enum Built {
    Walked(usize),
    Done(Index),
}

/// The session's repo maps and its tag cache (project, cache) between turns.
#[derive(Default)]
pub struct Maps {
    pub notes: Vec<Note>,
    pub index: Option<(PathBuf, Index)>,
    /// A build on the background worker: its project and where its index arrives.
    pub building: Option<(PathBuf, mpsc::Receiver<Built>)>,
    /// The prompt that went without a map because the build was not ready.
    pub waiting: Option<String>,
    /// The last map rendered and what it depended on.
    pub rendered: Option<(RenderKey, String)>,
}

pub fn anchor_of(m: &yuyao_protocol::Message) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    m.text().hash(&mut h);
    h.finish()
}

impl Maps {
    /// The history was cut to `len` messages: maps of prompts past it go with them.
    pub fn truncate(&mut self, len: usize) {
        self.notes
            .retain(|n| n.at < len || (n.follows && n.at == len));
    }

    pub fn live<'a>(
        &'a self,
        history: &'a [yuyao_protocol::Message],
    ) -> impl Iterator<Item = &'a Note> {
        self.notes.iter().filter(|n| {
            let i = if n.follows {
                n.at.checked_sub(1)
            } else {
                Some(n.at)
            };
            i.and_then(|i| history.get(i))
                .is_some_and(|m| anchor_of(m) == n.anchor)
        })
    }

    /// `map` goes at the end of the history as it is now (the next request's view), after
    /// everything already sent: earlier requests stay a prefix of later ones.
    pub fn record_after(&mut self, history: &[yuyao_protocol::Message], map: String) {
        if let Some(m) = history.last() {
            self.notes.push(Note {
                at: history.len(),
                anchor: anchor_of(m),
                follows: true,
                text: map,
            });
        }
    }

    /// `map` goes with the prompt just pushed at `history[at]`.
    pub fn record(&mut self, history: &[yuyao_protocol::Message], at: usize, map: String) {
        if let Some(m) = history.get(at) {
            self.notes.push(Note {
                at,
                anchor: anchor_of(m),
                follows: false,
                text: map,
            });
        }
    }

    /// The map most recently sent, if its prompt is still in the history.
    pub fn latest<'a>(&'a self, history: &'a [yuyao_protocol::Message]) -> Option<&'a str> {
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
        // Reversed, so that two notes at one place keep the order they were made in.
        notes.reverse();
        notes.sort_by_key(|n| std::cmp::Reverse(n.at));
        for n in notes {
            view.insert(n.at, yuyao_protocol::Message::user(n.text.clone()));
        }
        view
    }
}

pub fn cache_path(home: &Path, project: &Path) -> PathBuf {
    let digest = sha2::Sha256::digest(project.to_string_lossy().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    home.join("repomap").join(format!("{hex}.json"))
}

pub fn stamp(meta: &std::fs::Metadata) -> u128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// Walks the project (`.gitignore` honoured, hidden files skipped) and tags every file of a
/// known language, parsing only what changed since the cache was written.
#[cfg(test)]
pub fn index(project: &Path, home: &Path) -> Index {
    index_from(project, home, None, &Focus::default(), &|_| {})
}

/// A file to tag: project-relative name, path, mtime, size.
pub type Seen = (String, PathBuf, u128, u64);

/// The project's code files, in walk order, at most `MAX_FILES` of them; the walk itself
/// stops after `MAX_ENTRIES` entries (a home folder or a huge tree of other files).
pub fn walk(project: &Path) -> Vec<Seen> {
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

/// `git` in `project` with a fixed argument list (no shell); its stdout, when it succeeds.
pub fn git(project: &Path, args: &[&str]) -> Option<String> {
    // The repository's own fsmonitor hook is not run, and no lock is taken (a read only).
    let out = std::process::Command::new("git")
        .args(["--no-optional-locks", "-c", "core.fsmonitor=false", "-C"])
        .arg(project)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn head(project: &Path) -> Option<String> {
    git(project, &["rev-parse", "--verify", "-q", "HEAD"]).map(|s| s.trim().to_string())
}

/// Files the last commits touched (a commit touching hundreds of files — an import, a
/// tree-wide rename — says nothing about where the work is, and the root commit is skipped).
pub fn recent(project: &Path) -> HashSet<String> {
    let Some(log) = git(
        project,
        &[
            "-c",
            "log.showRoot=false",
            "log",
            "-n",
            "100",
            "--no-renames",
            "--name-only",
            "--format=%x01",
        ],
    ) else {
        return HashSet::new();
    };
    log.split('\u{1}')
        .map(|c| c.lines().filter(|l| !l.is_empty()).collect::<Vec<_>>())
        .filter(|files| files.len() <= 200)
        .flatten()
        .map(str::to_string)
        .collect()
}

/// The `PARSE_FILES` code files the map can use, ranked by what costs no parsing: files
/// the session or prompt names, paths whose parts the prompt names, files of recent commits,
/// then shallow paths before deep ones.
pub fn select(project: &Path, mut seen: Vec<Seen>, hint: &Focus) -> Vec<Seen> {
    if seen.len() <= PARSE_FILES {
        return seen;
    }
    let recent = recent(project);
    let idents: HashSet<String> = hint.idents.iter().map(|w| w.to_lowercase()).collect();
    let score = |rel: &str| -> i64 {
        let mut s = 0i64;
        if hint.files.contains(rel) {
            s += 10_000;
        }
        if recent.contains(rel) {
            s += 1_000;
        }
        let parts: Vec<&str> = rel.split('/').collect();
        for part in &parts {
            let stem = part.split('.').next().unwrap_or(part).to_lowercase();
            if idents.contains(&stem) {
                s += 300;
            }
        }
        s - 10 * parts.len() as i64
    };
    seen.sort_by_cached_key(|(rel, ..)| (std::cmp::Reverse(score(rel)), rel.clone()));
    seen.truncate(PARSE_FILES);
    seen
}

/// Tags of `files`, on the calling thread (the background worker, or a prompt's few files).
pub fn parse(files: &[&Seen]) -> Vec<(String, (u128, u64), FileTags)> {
    files
        .iter()
        .map(|(rel, path, m, size)| {
            let src = std::fs::read_to_string(path).unwrap_or_default();
            let tags = Lang::of(path)
                .map(|l| tags::extract(l, &src))
                .unwrap_or_default();
            (rel.clone(), (*m, *size), tags)
        })
        .collect()
}

pub fn read_cache(cache_file: &Path) -> Index {
    std::fs::read(cache_file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

pub fn write_cache(cache_file: &Path, index: &Index) {
    if let Some(dir) = cache_file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(bytes) = serde_json::to_vec(index) {
        let tmp = cache_file.with_extension(format!("{}.tmp", std::process::id()));
        if std::fs::write(&tmp, bytes).is_ok() {
            let _ = std::fs::rename(&tmp, cache_file);
        }
    }
}

/// [`index`], starting from `memory` (this session's index from an earlier turn) instead of
/// reading the cache file; past `PARSE_FILES` code files, only the top of `select`'s ranking
/// for `hint` is tagged.
/// `walked` hears how many files are left to tag once the walk is done.
pub fn index_from(
    project: &Path,
    home: &Path,
    memory: Option<Index>,
    hint: &Focus,
    walked: &dyn Fn(usize),
) -> Index {
    let cache_file = cache_path(home, project);
    let mut index: Index = memory.unwrap_or_else(|| read_cache(&cache_file));
    let t0 = Instant::now();
    let head = head(project);
    let seen = walk(project);
    let total = seen.len();
    let walk_ms = t0.elapsed().as_millis();
    let seen = select(project, seen, hint);
    let stale: Vec<&Seen> = seen
        .iter()
        .filter(|(rel, _, m, size)| index.stamps.get(rel) != Some(&(*m, *size)))
        .collect();
    walked(stale.len());
    let parsed = parse(&stale);
    index.parsed = parsed.len();
    index.total = total;
    index.walk_ms = walk_ms;
    index.head = head;
    let live: HashSet<&str> = seen.iter().map(|s| s.0.as_str()).collect();
    let before = index.files.len();
    index.files.retain(|k, _| live.contains(k.as_str()));
    index.stamps.retain(|k, _| live.contains(k.as_str()));
    let removed = before != index.files.len();
    for (rel, stamp, tags) in parsed {
        index.stamps.insert(rel.clone(), stamp);
        index.files.insert(rel, tags);
    }
    if index.parsed > 0 || removed || index.generation == 0 {
        index.generation = next_generation();
    }
    if index.parsed > 0 || removed {
        write_cache(&cache_file, &index);
    }
    index
}

/// A later prompt's check of a tree too large to walk at every prompt: HEAD, then the
/// mtime and size of the mapped files, re-tagging those that changed and the files `focus`
/// names that are not mapped yet (at most 50). `false` when HEAD moved (a rebuild is due).
pub fn refresh(project: &Path, index: &mut Index, focus: &Focus) -> bool {
    if head(project) != index.head {
        return false;
    }
    let mut stale: Vec<Seen> = Vec::new();
    let mut gone = Vec::new();
    for (rel, st) in &index.stamps {
        let path = project.join(rel);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {
                if (stamp(&meta), meta.len()) != *st {
                    stale.push((rel.clone(), path, stamp(&meta), meta.len()));
                }
            }
            _ => gone.push(rel.clone()),
        }
    }
    let root = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf());
    for rel in focus
        .files
        .iter()
        .filter(|f| !index.files.contains_key(*f))
        .take(50)
    {
        let path = project.join(rel);
        // Only a file of the project, reached without leaving it through a symlink.
        let within = inside(Path::new(rel))
            && path
                .canonicalize()
                .is_ok_and(|c| c.starts_with(&root) && c == root.join(rel));
        if !within || Lang::of(&path).is_none() || yuyao_policy::sensitive::is_sensitive(&path) {
            continue;
        }
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && meta.is_file()
            && meta.len() <= MAX_FILE_BYTES
        {
            stale.push((rel.clone(), path, stamp(&meta), meta.len()));
        }
    }
    if !gone.is_empty() || !stale.is_empty() {
        index.generation = next_generation();
    }
    for rel in gone {
        index.files.remove(&rel);
        index.stamps.remove(&rel);
    }
    let parsed = parse(&stale.iter().collect::<Vec<_>>());
    index.parsed = parsed.len();
    for (rel, stamp, tags) in parsed {
        index.stamps.insert(rel.clone(), stamp);
        index.files.insert(rel, tags);
    }
    true
}

/// Starts a build on a background worker: one thread at the lowest CPU priority (tagging
/// is CPU-bound; the session's own work comes first).
pub fn spawn_build(
    project: PathBuf,
    home: PathBuf,
    memory: Option<Index>,
    hint: Focus,
) -> mpsc::Receiver<Built> {
    let (tx, rx) = mpsc::channel();
    // Without a thread the receiver reports a closed channel and the map is skipped.
    let _ = std::thread::Builder::new()
        .name("repo-map".into())
        .spawn(move || {
            // SAFETY: setpriority on this thread's own id (Linux: the nice value is per
            // thread); it only lowers this thread's priority.
            #[cfg(target_os = "linux")]
            unsafe {
                let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                libc::setpriority(libc::PRIO_PROCESS, tid, 19);
            }
            if let Some(ms) = std::env::var(TEST_DELAY_ENV)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
            {
                std::thread::sleep(Duration::from_millis(ms.min(60_000)));
            }
            let walked = |n| {
                let _ = tx.send(Built::Walked(n));
            };
            let index = index_from(&project, &home, memory, &hint, &walked);
            let _ = tx.send(Built::Done(index));
        });
    rx
}

/// What the ranking leans towards: files (project-relative) and identifiers.
#[derive(Default)]
pub struct Focus {
    pub files: HashSet<String>,
    pub idents: HashSet<String>,
}

/// The map text within `budget` tokens (4 characters each), empty when nothing fits.
pub fn render(project: &Path, index: &Index, focus: &Focus, budget: u32) -> String {
    if budget == 0 {
        return String::new();
    }
    let ranked = rank::rank(index, focus);
    let limit = budget as usize * 4;
    // Every entry costs at least a line of ~10 characters: no need to try more than that.
    let most = ranked.len().min(limit / 10 + 1);
    // The definitions' first lines, read from the files now (the index keeps no source text).
    let mut wanted: BTreeMap<&str, HashSet<u32>> = BTreeMap::new();
    for (file, name) in &ranked[..most] {
        let lines = wanted.entry(file.as_str()).or_default();
        for d in index.files[file.as_str()]
            .defs
            .iter()
            .filter(|d| d.name == *name)
        {
            lines.insert(d.line);
        }
    }
    let shown: HashMap<(&str, u32), String> = wanted
        .into_iter()
        .flat_map(|(file, lines)| {
            def_lines(project, file, &lines)
                .into_iter()
                .map(move |(l, t)| ((file, l), t))
        })
        .collect();
    let text = |k: usize| -> String {
        let mut by_file: Vec<(&str, Vec<&tags::Def>)> = Vec::new();
        let mut slot: HashMap<&str, usize> = HashMap::new();
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
        if index.total > index.files.len() {
            out.push_str(&format!(
                "(a large tree: {} code files; mapped the {} ranked first by the files and names mentioned, recent commits and path depth)\n",
                index.total,
                index.files.len()
            ));
        }
        for (file, mut defs) in by_file {
            defs.sort_by_key(|d| d.line);
            defs.dedup_by_key(|d| d.line);
            out.push_str(file);
            out.push_str(":\n");
            for d in defs {
                let line = shown.get(&(file, d.line)).map_or("", String::as_str);
                out.push_str(&format!("{:>5}│{}\n", d.line, def_text(d, line)));
            }
        }
        out
    };
    // The most entries whose text fits the budget (the text grows with k).
    let (mut lo, mut hi) = (0usize, most);
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

/// The lines `lines` (1-based) of the project's file `file`, trimmed to 120 characters;
/// nothing unless it is still a regular file.
pub fn def_lines(project: &Path, file: &str, lines: &HashSet<u32>) -> HashMap<u32, String> {
    let path = project.join(file);
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES) {
        return HashMap::new();
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return HashMap::new();
    };
    let last = lines.iter().copied().max().unwrap_or(0) as usize;
    text.lines()
        .take(last)
        .enumerate()
        .filter(|(i, _)| lines.contains(&(*i as u32 + 1)))
        .map(|(i, l)| (i as u32 + 1, l.trim().chars().take(120).collect()))
        .collect()
}

/// What the map shows of a definition whose first line is `line`: a constant's value may
/// be a secret, so a constant shows its name only.
pub fn def_text(d: &tags::Def, line: &str) -> String {
    if d.kind == "constant" {
        format!("{} = …", d.name)
    } else {
        line.to_string()
    }
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

/// A relative path that stays below its base (no root, no `..`).
pub fn inside(rel: &Path) -> bool {
    rel.components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
}

pub fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '/'))
        .filter(|w| !w.is_empty())
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
        // The cache keeps names and line numbers, never source text; a name referenced
        // twice is stored once with its count.
        let cache = std::fs::read_to_string(cache_path(home.path(), project.path())).unwrap();
        assert!(
            cache.contains("\"f1\"") && !cache.contains("return"),
            "{cache}"
        );
        let twice = tags::extract(Lang::Python, "def t():\n    return h(1) + h(2)\n");
        assert_eq!(
            (twice.refs, twice.ref_counts),
            (vec!["h".to_string()], vec![2])
        );
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
            let map = render(project.path(), &third, &Focus::default(), budget);
            assert!(map.len() <= budget as usize * 4, "{budget}: {map}");
            assert!(map.starts_with(HEADER), "{budget}: {map}");
        }
        assert!(render(project.path(), &third, &Focus::default(), 0).is_empty());
        assert!(
            render(project.path(), &third, &Focus::default(), 10).is_empty(),
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

    #[test]
    fn a_late_map_follows_what_was_sent_and_stays_there() {
        use yuyao_protocol::Message;
        let mut history = vec![Message::user("prompt"), Message::assistant("calling")];
        let mut maps = Maps::default();
        // Ready only after the first request: it goes at the end of the next request.
        maps.record_after(&history, "[repo map] late".into());
        let texts = |v: Vec<Message>| v.iter().map(|m| m.text()).collect::<Vec<_>>();
        assert_eq!(
            texts(maps.insert_into(&history, history.clone())),
            ["prompt", "calling", "[repo map] late"]
        );
        // Later messages come after it: the earlier request stays a prefix.
        history.push(Message::assistant("done"));
        history.push(Message::user("next"));
        assert_eq!(
            texts(maps.insert_into(&history, history.clone())),
            ["prompt", "calling", "[repo map] late", "done", "next"]
        );
        assert_eq!(maps.latest(&history), Some("[repo map] late"));
        // Cut back to where it was made: it stays; before that, or with the message it
        // follows replaced, it goes.
        maps.truncate(2);
        history.truncate(2);
        assert_eq!(maps.latest(&history), Some("[repo map] late"));
        history[1] = Message::assistant("another reply");
        assert_eq!(maps.latest(&history), None);
        maps.truncate(1);
        assert!(maps.notes.is_empty());
    }
}
