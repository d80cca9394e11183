//! Retention of what sessions leave in `~/.yuyao`: spill files and job logs
//! (`spill/<session>/`) and snapshot objects (`snapshots/<project>.git`, referenced from the
//! journal beside it). A session's files go when it ended more than `storage.retention_days`
//! ago, then the oldest sessions' go while everything exceeds `storage.max_mb`.
//!
//! A live session — this one or any other process's — is never touched: each session holds
//! an exclusive `flock` on `spill/<session>/.live` for as long as it runs (the kernel drops
//! it when the process dies). Snapshot objects are shared between sessions (one blob per
//! content): an object goes only when no kept batch references it, and only once it is older
//! than a grace period (a live session stores a pre-image before journaling its batch).
//! Session files (`sessions/*.jsonl`) are conversations and are kept.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::config::Config;

/// Default age cap in days (`storage.retention_days`; 0 keeps everything however old).
pub const DEFAULT_RETENTION_DAYS: u64 = 30;
/// Default size cap in MB (`storage.max_mb`; 0: no cap).
pub const DEFAULT_MAX_MB: u64 = 1024;
/// An unreferenced object younger than this may belong to a batch being journaled.
const OBJECT_GRACE: Duration = Duration::from_secs(3600);
/// The automatic pass at session start runs at most this often.
const AUTO_INTERVAL: Duration = Duration::from_secs(3600);
const LIVE_FILE: &str = ".live";

/// The caps, from the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub retention_days: u64,
    pub max_bytes: u64,
}

impl Limits {
    pub fn from_config(config: &Config) -> Limits {
        let get = |key: &str, default: u64| {
            config
                .get(key)
                .and_then(|v| v.as_integer())
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(default)
        };
        Limits {
            retention_days: get("storage.retention_days", DEFAULT_RETENTION_DAYS),
            max_bytes: get("storage.max_mb", DEFAULT_MAX_MB).saturating_mul(1024 * 1024),
        }
    }
}

/// Held by a running session: its files are never collected.
pub struct LiveMark {
    _file: File,
    dir: PathBuf,
}

impl Drop for LiveMark {
    /// A session that left nothing in its folder (an empty scratch at most) takes the
    /// folder with it.
    fn drop(&mut self) {
        let mut files = 0;
        walk(&self.dir, &mut |_, _| files += 1);
        if files <= 1 {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Marks the session whose scratch folder is `spill_dir` as live until the mark is dropped
/// (or the process ends). `None` when the folder cannot be made.
pub fn mark_live(spill_dir: &Path) -> Option<LiveMark> {
    std::fs::create_dir_all(spill_dir).ok()?;
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(spill_dir.join(LIVE_FILE))
        .ok()?;
    flock(&file, libc::LOCK_EX | libc::LOCK_NB).then(|| LiveMark {
        _file: file,
        dir: spill_dir.to_path_buf(),
    })
}

fn flock(file: &File, op: i32) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor we own; no memory is passed.
    unsafe { libc::flock(file.as_raw_fd(), op) == 0 }
}

/// Whether a running process holds the session folder's mark.
fn is_live(session_dir: &Path) -> bool {
    let Ok(file) = File::open(session_dir.join(LIVE_FILE)) else {
        return false;
    };
    if flock(&file, libc::LOCK_SH | libc::LOCK_NB) {
        flock(&file, libc::LOCK_UN);
        false
    } else {
        true
    }
}

/// What was (or, in a dry run, would be) removed, per kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub dry_run: bool,
    pub sessions: usize,
    pub spill_files: (u64, u64),
    pub job_logs: (u64, u64),
    pub snapshot_objects: (u64, u64),
    pub journal_entries: u64,
    /// Bytes of spill folders and snapshot stores before and after.
    pub before_bytes: u64,
    pub after_bytes: u64,
    pub live_sessions: usize,
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verb = if self.dry_run { "would free" } else { "freed" };
        let freed = self.spill_files.1 + self.job_logs.1 + self.snapshot_objects.1;
        writeln!(
            f,
            "{verb} {} from {} ended session{}{}",
            mb(freed),
            self.sessions,
            if self.sessions == 1 { "" } else { "s" },
            if self.dry_run {
                " (dry run: nothing removed)"
            } else {
                ""
            }
        )?;
        for (what, (n, bytes)) in [
            ("spill files", self.spill_files),
            ("job logs", self.job_logs),
            ("snapshot objects", self.snapshot_objects),
        ] {
            writeln!(f, "  {what:<17} {n:>6}  {}", mb(bytes))?;
        }
        writeln!(f, "  journal entries   {:>6}", self.journal_entries)?;
        write!(
            f,
            "storage: {} before, {} after; {} live session{} left alone",
            mb(self.before_bytes),
            mb(self.after_bytes),
            self.live_sessions,
            if self.live_sessions == 1 { "" } else { "s" }
        )
    }
}

/// What one session left in the spill folder.
#[derive(Default)]
struct SpillUse {
    dir: PathBuf,
    files: (u64, u64),
    jobs: (u64, u64),
    last: Option<SystemTime>,
    live: bool,
}

/// The journal id prefix and folder of large pre-images kept as plain copies (`snapshots`).
const RAW_PREFIX: &str = "raw:";
const RAW_DIR: &str = "yuyao-raw";

use crate::snapshots::cas;

/// A project's snapshot store: its journal and loose objects.
struct Store {
    journal: PathBuf,
    objects: PathBuf,
    /// Large pre-images stored as plain copies by earlier versions (journal id `raw:<name>`).
    raw: PathBuf,
    /// Large images in chunks (`snapshots/cas.rs`): manifests are loose objects `cas:<hex>`
    /// referenced by the journal, their chunks loose objects `chunk:<hex>` referenced by
    /// the manifests (a chunk is kept while a kept manifest lists it).
    cas: PathBuf,
    /// Object id → (size, mtime) of every loose object.
    loose: HashMap<String, (u64, SystemTime)>,
    /// Object id → the sessions whose batches reference it.
    refs: HashMap<String, HashSet<String>>,
}

/// Applies the limits to `home` at `now`; with `dry_run`, only counts.
pub fn collect(home: &Path, limits: Limits, now: SystemTime, dry_run: bool) -> Summary {
    let mut summary = Summary {
        dry_run,
        ..Default::default()
    };
    let mut spill = spill_usage(&home.join("spill"));
    let mut stores = snapshot_stores(&home.join("snapshots"));
    let mut last: HashMap<String, SystemTime> = HashMap::new();
    for (id, u) in &spill {
        if let Some(t) = u.last {
            last.insert(id.clone(), t);
        }
    }
    for s in &stores {
        for (id, t) in journal_times(&s.journal) {
            let e = last.entry(id).or_insert(t);
            *e = (*e).max(t);
        }
    }
    let live: HashSet<String> = spill
        .iter()
        .filter(|(_, u)| u.live)
        .map(|(id, _)| id.clone())
        .collect();
    summary.live_sessions = live.len();
    let spill_bytes: u64 = spill.values().map(|u| u.files.1 + u.jobs.1).sum();
    let object_bytes: u64 = stores
        .iter()
        .flat_map(|s| s.loose.values())
        .map(|(n, _)| n)
        .sum();
    summary.before_bytes = spill_bytes + object_bytes;

    // Ended sessions, oldest first.
    let mut ended: Vec<(SystemTime, String)> = last
        .iter()
        .filter(|(id, _)| !live.contains(*id))
        .map(|(id, t)| (*t, id.clone()))
        .collect();
    ended.sort();
    let cutoff = (limits.retention_days > 0)
        .then(|| now.checked_sub(Duration::from_secs(limits.retention_days * 86_400)))
        .flatten();
    let mut victims: HashSet<String> = HashSet::new();
    let mut remaining = summary.before_bytes;
    // Objects nothing references (dropped batches): free whatever else happens.
    let orphans: u64 = stores.iter().map(|s| freeable(s, &victims, now).1).sum();
    remaining -= orphans.min(remaining);
    for (t, id) in &ended {
        let old = cutoff.is_some_and(|c| *t < c);
        let too_big = limits.max_bytes > 0 && remaining > limits.max_bytes;
        if !old && !too_big {
            continue;
        }
        let before: u64 = stores.iter().map(|s| freeable(s, &victims, now).1).sum();
        victims.insert(id.clone());
        let after: u64 = stores.iter().map(|s| freeable(s, &victims, now).1).sum();
        let spilled = spill.get(id).map_or(0, |u| u.files.1 + u.jobs.1);
        remaining = remaining.saturating_sub(spilled + after.saturating_sub(before));
    }

    for id in &victims {
        let Some(u) = spill.remove(id) else { continue };
        if u.files.0 + u.jobs.0 == 0 && !u.dir.exists() {
            continue;
        }
        // Checked again at the last moment: a session id is never reused, but be exact.
        if is_live(&u.dir) {
            continue;
        }
        if !dry_run && std::fs::remove_dir_all(&u.dir).is_err() {
            continue;
        }
        add(&mut summary.spill_files, u.files);
        add(&mut summary.job_logs, u.jobs);
    }
    for s in &mut stores {
        let (ids, bytes) = freeable(s, &victims, now);
        if ids.is_empty() && !journal_mentions(&s.journal, &victims) {
            continue;
        }
        let removed = if dry_run {
            count_entries(&s.journal, &victims)
        } else {
            match drop_sessions(&s.journal, &victims) {
                Ok(n) => n,
                Err(_) => continue,
            }
        };
        summary.journal_entries += removed;
        let mut freed = (0, 0);
        for id in &ids {
            let path = if let Some(name) = id.strip_prefix(RAW_PREFIX) {
                s.raw.join(name)
            } else if let Some(name) = id.strip_prefix(cas::PREFIX) {
                cas::Cas::manifest_path(&s.cas, name)
            } else if let Some(name) = id.strip_prefix(cas::CHUNK_PREFIX) {
                cas::Cas::chunk_path(&s.cas, name)
            } else if let Some(name) = id.strip_prefix(cas::BUNDLE_PREFIX) {
                cas::Cas::bundle_path(&s.cas, name)
            } else {
                s.objects.join(&id[..2]).join(&id[2..])
            };
            if dry_run || std::fs::remove_file(&path).is_ok() {
                freed.0 += 1;
                freed.1 += s.loose.get(id).map_or(0, |(n, _)| *n);
            }
        }
        debug_assert!(freed.1 <= bytes);
        if !dry_run {
            for id in &ids {
                s.loose.remove(id);
            }
        }
        add(&mut summary.snapshot_objects, freed);
    }
    summary.sessions = victims.iter().filter(|id| !live.contains(*id)).count();
    let freed = summary.spill_files.1 + summary.job_logs.1 + summary.snapshot_objects.1;
    summary.after_bytes = summary.before_bytes.saturating_sub(freed);
    summary
}

fn add(total: &mut (u64, u64), more: (u64, u64)) {
    total.0 += more.0;
    total.1 += more.1;
}

/// Loose objects of `s` that no batch of a kept session references, old enough to go.
fn freeable(s: &Store, victims: &HashSet<String>, now: SystemTime) -> (Vec<String>, u64) {
    let mut ids = Vec::new();
    let mut bytes = 0;
    for (id, (size, mtime)) in &s.loose {
        let kept = s
            .refs
            .get(id)
            .is_some_and(|by| by.iter().any(|sid| !victims.contains(sid)));
        let young = now.duration_since(*mtime).unwrap_or_default() < OBJECT_GRACE;
        if !kept && !young {
            ids.push(id.clone());
            bytes += size;
        }
    }
    (ids, bytes)
}

fn spill_usage(dir: &Path) -> HashMap<String, SpillUse> {
    let mut out = HashMap::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let path = e.path();
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Some(id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        let mut u = SpillUse {
            dir: path.clone(),
            live: is_live(&path),
            ..Default::default()
        };
        walk(&path, &mut |p, meta| {
            if p.file_name().is_some_and(|n| n == LIVE_FILE) {
                return;
            }
            let slot = if p.starts_with(path.join("jobs")) {
                &mut u.jobs
            } else {
                &mut u.files
            };
            slot.0 += 1;
            slot.1 += meta.len();
            if let Ok(t) = meta.modified() {
                u.last = Some(u.last.map_or(t, |l| l.max(t)));
            }
        });
        // A folder without files: its own time.
        if u.last.is_none() {
            u.last = e.metadata().and_then(|m| m.modified()).ok();
        }
        out.insert(id, u);
    }
    out
}

/// Every regular file under `dir` (links are not followed).
fn walk(dir: &Path, f: &mut dyn FnMut(&Path, &std::fs::Metadata)) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.is_dir() {
            walk(&e.path(), f);
        } else if meta.is_file() {
            f(&e.path(), &meta);
        }
    }
}

fn snapshot_stores(dir: &Path) -> Vec<Store> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let path = e.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".git"))
        else {
            continue;
        };
        let objects = path.join("objects");
        let mut loose = HashMap::new();
        walk(&objects, &mut |p, meta| {
            let (Some(file), Some(fan)) = (
                p.file_name().and_then(|n| n.to_str()),
                p.parent()
                    .and_then(|d| d.file_name())
                    .and_then(|n| n.to_str()),
            ) else {
                return;
            };
            let is_hex = |s: &str| s.chars().all(|c| c.is_ascii_hexdigit());
            if fan.len() == 2 && file.len() == 38 && is_hex(fan) && is_hex(file) {
                let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                loose.insert(format!("{fan}{file}"), (meta.len(), mtime));
            }
        });
        let raw = path.join(RAW_DIR);
        if let Ok(rd) = std::fs::read_dir(&raw) {
            for e in rd.flatten() {
                let (Ok(meta), Some(file)) =
                    (e.metadata(), e.file_name().to_str().map(String::from))
                else {
                    continue;
                };
                if meta.is_file()
                    && !file.is_empty()
                    && file.bytes().all(|b| b.is_ascii_alphanumeric())
                {
                    let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    loose.insert(format!("{RAW_PREFIX}{file}"), (meta.len(), mtime));
                }
            }
        }
        let cas = path.join(cas::DIR);
        cas_objects(&cas, &mut loose);
        let journal = dir.join(format!("{name}.json"));
        let mut refs = journal_refs(&journal);
        chunk_refs(&cas, &mut refs);
        out.push(Store {
            journal,
            objects,
            raw,
            cas,
            loose,
            refs,
        });
    }
    out
}

/// Adds the manifests (`cas:<hex>`) and chunks (`chunk:<hex>`) under `root` to `loose`.
fn cas_objects(root: &Path, loose: &mut HashMap<String, (u64, SystemTime)>) {
    let is_hex = |s: &str| s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let mut add = |key: String, meta: &std::fs::Metadata| {
        let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        loose.insert(key, (meta.len(), mtime));
    };
    // Chunk lists (`m/`) and undo bundles (`b/`): one file per sha256, named by it.
    for (dir, prefix) in [("m", cas::PREFIX), ("b", cas::BUNDLE_PREFIX)] {
        for e in std::fs::read_dir(root.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let (Ok(meta), Some(name)) = (e.metadata(), e.file_name().to_str())
                && meta.is_file()
                && name.len() == 64
                && is_hex(name)
            {
                add(format!("{prefix}{name}"), &meta);
            }
        }
    }
    walk(&root.join("c"), &mut |p, meta| {
        let (Some(file), Some(fan)) = (
            p.file_name().and_then(|n| n.to_str()),
            p.parent()
                .and_then(|d| d.file_name())
                .and_then(|n| n.to_str()),
        ) else {
            return;
        };
        if fan.len() == 2 && file.len() == 62 && is_hex(fan) && is_hex(file) {
            add(format!("{}{fan}{file}", cas::CHUNK_PREFIX), meta);
        }
    });
}

/// Each chunk is referenced by the sessions that reference a manifest listing it, each bundle
/// by those that reference a piece of it. A manifest that cannot be read keeps nothing (its
/// image cannot be restored anyway).
fn chunk_refs(root: &Path, refs: &mut HashMap<String, HashSet<String>>) {
    let pieces: Vec<(String, HashSet<String>)> = refs
        .iter()
        .filter_map(|(id, by)| Some((cas::parse_pack(id)?.0.to_string(), by.clone())))
        .collect();
    for (name, by) in pieces {
        refs.entry(format!("{}{name}", cas::BUNDLE_PREFIX))
            .or_default()
            .extend(by);
    }
    let manifests: Vec<(String, HashSet<String>)> = refs
        .iter()
        .filter_map(|(id, by)| Some((id.strip_prefix(cas::PREFIX)?.to_string(), by.clone())))
        .collect();
    for (name, by) in manifests {
        if name.len() != 64 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let Some(m) = std::fs::read(cas::Cas::manifest_path(root, &name))
            .ok()
            .and_then(|t| cas::parse_manifest(&t))
        else {
            continue;
        };
        for (chunk, _) in m.chunks {
            refs.entry(format!("{}{chunk}", cas::CHUNK_PREFIX))
                .or_default()
                .extend(by.iter().cloned());
        }
    }
}

/// The journal with its log folded in (`snapshots/journal.rs`).
fn read_journal(path: &Path) -> Option<serde_json::Value> {
    serde_json::to_value(crate::snapshots::journal::read(path)?).ok()
}

fn entries<'a>(
    j: &'a serde_json::Value,
    list: &str,
) -> impl Iterator<Item = &'a serde_json::Value> + 'a {
    j.get(list).and_then(|v| v.as_array()).into_iter().flatten()
}

fn session_of(e: &serde_json::Value) -> &str {
    e.get("session").and_then(|v| v.as_str()).unwrap_or("")
}

fn journal_refs(path: &Path) -> HashMap<String, HashSet<String>> {
    let mut refs: HashMap<String, HashSet<String>> = HashMap::new();
    let Some(j) = read_journal(path) else {
        return refs;
    };
    for b in entries(&j, "batches") {
        for f in b
            .get("files")
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
        {
            for side in ["before", "after"] {
                if let Some(id) = f.get(side).and_then(|v| v.as_str()) {
                    refs.entry(id.to_string())
                        .or_default()
                        .insert(session_of(b).to_string());
                }
            }
        }
    }
    refs
}

/// The latest time each session appears in the journal (batches and checkpoints).
fn journal_times(path: &Path) -> HashMap<String, SystemTime> {
    let mut out: HashMap<String, SystemTime> = HashMap::new();
    let Some(j) = read_journal(path) else {
        return out;
    };
    for e in entries(&j, "batches").chain(entries(&j, "checkpoints")) {
        let Some(t) = e
            .get("time")
            .and_then(|v| v.as_str())
            .and_then(|t| chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S").ok())
            .and_then(|t| t.and_local_timezone(chrono::Local).earliest())
        else {
            continue;
        };
        let t = SystemTime::from(t);
        let slot = out.entry(session_of(e).to_string()).or_insert(t);
        *slot = (*slot).max(t);
    }
    out
}

fn journal_mentions(path: &Path, victims: &HashSet<String>) -> bool {
    count_entries(path, victims) > 0
}

fn count_entries(path: &Path, victims: &HashSet<String>) -> u64 {
    let Some(j) = read_journal(path) else {
        return 0;
    };
    entries(&j, "batches")
        .chain(entries(&j, "checkpoints"))
        .filter(|e| victims.contains(session_of(e)))
        .count() as u64
}

/// Removes the ended sessions' batches and checkpoints from the journal (under its lock).
fn drop_sessions(path: &Path, victims: &HashSet<String>) -> Result<u64, String> {
    let _lock = crate::snapshots::lock_journal_at(path)?;
    let Some(mut j) = read_journal(path) else {
        return Ok(0);
    };
    let mut removed = 0;
    let mut dropped_batches: Vec<serde_json::Value> = Vec::new();
    for list in ["batches", "checkpoints"] {
        if let Some(arr) = j.get_mut(list).and_then(|v| v.as_array_mut()) {
            let before = arr.len();
            if list == "batches" {
                dropped_batches.extend(
                    arr.iter()
                        .filter(|e| victims.contains(session_of(e)))
                        .filter_map(|e| e.get("id").cloned()),
                );
            }
            arr.retain(|e| !victims.contains(session_of(e)));
            removed += (before - arr.len()) as u64;
        }
    }
    if let Some(redo) = j.get_mut("redo").and_then(|v| v.as_array_mut()) {
        redo.retain(|id| !dropped_batches.contains(id));
    }
    if removed > 0 {
        let j = serde_json::from_value(j).map_err(|e| e.to_string())?;
        crate::snapshots::journal::rewrite(path, j)?;
    }
    Ok(removed)
}

/// The pass a session start makes: on a background thread, at most once an hour, and
/// never two at a time. Returns the thread, for tests that wait for it.
pub fn collect_later(home: PathBuf, limits: Limits) -> Option<std::thread::JoinHandle<()>> {
    let stamp = home.join("spill").join(".gc-stamp");
    let recent = std::fs::metadata(&stamp)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age < AUTO_INTERVAL);
    if recent {
        return None;
    }
    std::thread::Builder::new()
        .name("yuyao-retention".into())
        .spawn(move || {
            let Some(_lock) = gc_lock(&home, false) else {
                return;
            };
            collect(&home, limits, SystemTime::now(), false);
            // Stamped when done: a pass cut short (the process ended) is tried again.
            let _ = std::fs::write(&stamp, b"");
        })
        .ok()
}

/// The one-at-a-time lock of collection passes (`yuyao gc` waits for it; the automatic
/// pass skips when it is taken).
pub fn gc_lock(home: &Path, wait: bool) -> Option<File> {
    let dir = home.join("spill");
    std::fs::create_dir_all(&dir).ok()?;
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".gc-lock"))
        .ok()?;
    let op = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    flock(&file, op).then_some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn age(path: &Path, days: u64) {
        let t = SystemTime::now() - Duration::from_secs(days * 86_400);
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    fn spill_session(home: &Path, id: &str, days: u64, bytes: usize) -> PathBuf {
        let dir = home.join("spill").join(id);
        std::fs::create_dir_all(dir.join("jobs")).unwrap();
        std::fs::write(dir.join("bash-1.log"), vec![b'x'; bytes]).unwrap();
        std::fs::write(dir.join("jobs/bash_1.log"), b"job").unwrap();
        age(&dir.join("bash-1.log"), days);
        age(&dir.join("jobs/bash_1.log"), days);
        dir
    }

    const NO_SIZE_CAP: Limits = Limits {
        retention_days: 30,
        max_bytes: 0,
    };

    #[test]
    fn old_sessions_go_live_and_recent_ones_stay() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let old = spill_session(home, "old", 40, 100);
        let recent = spill_session(home, "recent", 2, 100);
        let live_dir = spill_session(home, "live", 40, 100);
        let _mark = mark_live(&live_dir).unwrap();
        let dry = collect(home, NO_SIZE_CAP, SystemTime::now(), true);
        assert_eq!(dry.sessions, 1);
        assert_eq!(dry.spill_files, (1, 100));
        assert_eq!(dry.job_logs, (1, 3));
        assert!(old.exists(), "a dry run removes nothing");
        let done = collect(home, NO_SIZE_CAP, SystemTime::now(), false);
        assert_eq!(done.spill_files, dry.spill_files);
        assert!(!old.exists() && recent.exists() && live_dir.exists());
        assert_eq!(done.live_sessions, 1);
        assert!(done.to_string().contains("freed"), "{done}");
    }

    #[test]
    fn the_size_cap_removes_the_oldest_ended_sessions_first() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let mb = 1024 * 1024;
        let a = spill_session(home, "a", 5, mb);
        let b = spill_session(home, "b", 3, mb);
        let c = spill_session(home, "c", 1, mb);
        let limits = Limits {
            retention_days: 0,
            max_bytes: 2 * mb as u64 + 1000,
        };
        collect(home, limits, SystemTime::now(), false);
        assert!(!a.exists() && b.exists() && c.exists());
    }

    #[test]
    fn shared_snapshot_objects_stay_while_a_kept_session_references_them() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let project = d.path().join("proj");
        std::fs::create_dir_all(&project).unwrap();
        let snaps = crate::snapshots::Snapshots::open(home, &project).unwrap();
        // The old session changed f (shared content), g (its own) and a large file (chunked);
        // the kept session changed f from the same content.
        let f = project.join("f.txt");
        let g = project.join("g.txt");
        let big = project.join("big.bin");
        std::fs::write(&f, b"shared\n").unwrap();
        std::fs::write(&g, b"old only\n").unwrap();
        std::fs::write(&big, vec![7u8; 3 << 20]).unwrap();
        let pre = vec![
            snaps.capture(&f).unwrap(),
            snaps.capture(&g).unwrap(),
            snaps.capture(&big).unwrap(),
        ];
        std::fs::write(&f, b"changed\n").unwrap();
        std::fs::write(&g, b"changed\n").unwrap();
        std::fs::write(&big, b"small now\n").unwrap();
        snaps.record_batch("old", &pre, &|_| None).unwrap();
        std::fs::write(&f, b"shared\n").unwrap();
        let pre = snaps.capture(&f).unwrap();
        std::fs::write(&f, b"kept only\n").unwrap();
        snaps.record_batch("kept", &[pre], &|_| None).unwrap();
        let shared = blob_path(&snaps, b"shared\n");
        let old_only = blob_path(&snaps, b"old only\n");
        let large = cas_files(&snaps);
        assert!(
            large.len() >= 2,
            "the large pre-image is a manifest and its chunks"
        );
        for p in large.iter().chain([&shared, &old_only]) {
            assert!(p.exists(), "{}", p.display());
            age(p, 40);
        }
        spill_session(home, "old", 40, 10);
        spill_session(home, "kept", 1, 10);
        // The journal's times are now; make the old session's old (in its one file).
        snaps.settle().unwrap();
        let journal = snaps.git_dir().with_extension("json");
        let text = std::fs::read_to_string(&journal).unwrap();
        let old_time = (chrono::Local::now() - chrono::Duration::days(40))
            .format("%Y-%m-%d %H:%M:%S")
            .to_string();
        let mut j: serde_json::Value = serde_json::from_str(&text).unwrap();
        for list in ["batches", "checkpoints"] {
            for e in j[list].as_array_mut().unwrap() {
                if e["session"] == "old" {
                    e["time"] = serde_json::json!(old_time);
                }
            }
        }
        std::fs::write(&journal, serde_json::to_vec(&j).unwrap()).unwrap();
        let s = collect(home, NO_SIZE_CAP, SystemTime::now(), false);
        assert_eq!(s.snapshot_objects.0, 1 + large.len() as u64, "{s}");
        assert!(!old_only.exists() && large.iter().all(|p| !p.exists()));
        assert!(shared.exists());
        assert_eq!(snaps.batches().len(), 1);
        assert_eq!(snaps.batches()[0].session, "kept");
    }

    /// The files of the chunked store: manifests and chunks.
    fn cas_files(s: &crate::snapshots::Snapshots) -> Vec<PathBuf> {
        let mut out = Vec::new();
        walk(&s.git_dir().join(cas::DIR), &mut |p, _| {
            out.push(p.to_path_buf())
        });
        out.sort();
        out
    }

    fn seeded_text(lines: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..lines)
            .flat_map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("line {i}: {x:x}\n").into_bytes()
            })
            .collect()
    }

    /// Images no batch refers to (a capture whose file did not change, a dropped batch) go
    /// with the chunks only they list; chunks a kept image lists stay.
    #[test]
    fn unreferenced_chunked_images_and_their_own_chunks_are_deleted() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let project = d.path().join("proj");
        std::fs::create_dir_all(&project).unwrap();
        let snaps = crate::snapshots::Snapshots::open(home, &project).unwrap();
        let big = project.join("big.txt");
        let v1 = seeded_text(200_000, 1);
        std::fs::write(&big, &v1).unwrap();
        let kept = snaps.capture(&big).unwrap();
        let mut v2 = v1.clone();
        v2.extend_from_slice(&seeded_text(100_000, 2));
        std::fs::write(&big, &v2).unwrap();
        snaps
            .record_batch("kept", &[kept], &|_| None)
            .unwrap()
            .unwrap();
        let with_v1 = cas_files(&snaps);
        // Captured and left alone: v2's image is stored, then no batch refers to it.
        let orphan = snaps.capture(&big).unwrap();
        assert!(
            snaps
                .record_batch("kept", &[orphan], &|_| None)
                .unwrap()
                .is_none()
        );
        let all = cas_files(&snaps);
        let orphans: Vec<&PathBuf> = all.iter().filter(|p| !with_v1.contains(p)).collect();
        // v2's manifest and its chunks past v1's end; v1's chunks are shared.
        assert!(orphans.len() >= 2, "{orphans:?}");
        assert!(
            orphans.len() < all.len() / 2 + 2,
            "{} of {}",
            orphans.len(),
            all.len()
        );
        // Young objects are spared (a live session may be about to journal them).
        let s = collect(home, NO_SIZE_CAP, SystemTime::now(), false);
        assert_eq!(s.snapshot_objects.0, 0, "{s}");
        for p in &all {
            age(p, 2);
        }
        let s = collect(home, NO_SIZE_CAP, SystemTime::now(), false);
        assert_eq!(s.snapshot_objects.0, orphans.len() as u64, "{s}");
        assert!(orphans.iter().all(|p| !p.exists()));
        assert_eq!(cas_files(&snaps), with_v1);
        // What is left restores.
        snaps.undo().unwrap().unwrap();
        assert!(std::fs::read(&big).unwrap() == v1);
    }

    /// The post-images an /undo kept (one bundle) stay while the batch is journaled, and go
    /// with it.
    #[test]
    fn an_undo_bundle_goes_with_the_last_batch_referring_to_it() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let project = d.path().join("proj");
        std::fs::create_dir_all(&project).unwrap();
        let snaps = crate::snapshots::Snapshots::open(home, &project).unwrap();
        let files: Vec<PathBuf> = (0..20).map(|i| project.join(format!("n{i}.txt"))).collect();
        let pre: Vec<_> = files.iter().map(|f| snaps.capture(f).unwrap()).collect();
        for f in &files {
            std::fs::write(f, f.display().to_string()).unwrap();
        }
        snaps.record_batch("old", &pre, &|_| None).unwrap().unwrap();
        snaps.undo().unwrap().unwrap();
        let bundles = cas_files(&snaps);
        assert_eq!(bundles.len(), 1, "{bundles:?}");
        age(&bundles[0], 40);
        spill_session(home, "old", 1, 10);
        let s = collect(home, NO_SIZE_CAP, SystemTime::now(), false);
        assert_eq!(s.snapshot_objects.0, 0, "{s}");
        assert!(bundles[0].exists());
        snaps.redo().unwrap().unwrap();
        assert!(files.iter().all(|f| f.exists()));
        snaps.undo().unwrap().unwrap();
        // The session ends long ago: its batch goes, and the bundle with it.
        age(&bundles[0], 40);
        spill_session(home, "old", 40, 10);
        snaps.settle().unwrap();
        let journal = snaps.git_dir().with_extension("json");
        let mut j: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&journal).unwrap()).unwrap();
        let old_time = (chrono::Local::now() - chrono::Duration::days(40))
            .format("%Y-%m-%d %H:%M:%S")
            .to_string();
        j["batches"][0]["time"] = serde_json::json!(old_time);
        std::fs::write(&journal, serde_json::to_vec(&j).unwrap()).unwrap();
        let s = collect(home, NO_SIZE_CAP, SystemTime::now(), false);
        assert_eq!(s.snapshot_objects.0, 1, "{s}");
        assert!(!bundles[0].exists());
    }

    fn blob_path(s: &crate::snapshots::Snapshots, bytes: &[u8]) -> PathBuf {
        let id = crate::snapshots::blob_id(bytes);
        s.git_dir().join("objects").join(&id[..2]).join(&id[2..])
    }
}
