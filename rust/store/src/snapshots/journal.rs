//! The snapshot journal: a base file and an append-only log of the changes made after it.
//!
//! `<project-id>.json` holds the journal as of its `seq`; `<project-id>.log` holds one JSON
//! line per later change (a batch, a checkpoint, a restore by /undo, /redo or /rewind), each
//! with its `seq`. A change costs one appended line the size of what it changed: rewriting
//! the whole journal made every batch and undo cost the history (1.6 MB after seven
//! 1,000-file batches, written and synced at each of them).
//!
//! The log is folded into the base (compaction) once it outgrows the base, so each byte of
//! history is rewritten a bounded number of times; also when a session ends and when the
//! retention pass edits the journal, so a journal at rest is one plain JSON file. A crash
//! between writing the base and emptying the log loses nothing and repeats nothing: lines at
//! or below the base's `seq` are skipped. A torn last line (a crash mid-append) is never
//! read, and the next append cuts it off. Applying a line is idempotent by id, so a base
//! edited by hand under a live log does not duplicate entries.

use super::{Batch, Checkpoint, KEEP};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use yuyao_protocol::Stamp;

/// The log is folded into the base once it is larger than the base and than this.
const COMPACT_FROM: u64 = 256 * 1024;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Journal {
    pub project: String,
    pub next_batch: u64,
    pub next_checkpoint: u64,
    pub batches: Vec<Batch>,
    pub checkpoints: Vec<Checkpoint>,
    /// Undone batch ids, most recently undone last: what /redo re-applies.
    pub redo: Vec<u64>,
    /// What /redo checks the project against (`Snapshots::redo_guard`): a change time,
    /// `changed-since:<s>.<ns>`, or (a file system without fine timestamps, or a journal
    /// written before) the hex fingerprint of the project right after the last undo.
    pub redo_fingerprint: Option<String>,
    /// The last log line folded into this state (0: none; journals before the log).
    #[serde(default)]
    pub seq: u64,
}

/// One change to the journal: what a log line holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Change {
    /// A new batch; it makes any pending /redo impossible.
    Batch { batch: Batch },
    /// A new user prompt.
    Checkpoint { checkpoint: Checkpoint },
    /// An undo, redo or rewind: the batches it changed (whole) and what /redo has left.
    Restore {
        batches: Vec<Batch>,
        redo: Vec<u64>,
        redo_fingerprint: Option<String>,
    },
}

#[derive(Serialize, Deserialize)]
struct Line {
    seq: u64,
    change: Change,
}

impl Journal {
    /// Applies `change`; the one way the journal changes, in a session and when the log is
    /// read back.
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Batch { batch } => {
                self.next_batch = self.next_batch.max(batch.id + 1);
                self.redo.clear();
                self.redo_fingerprint = None;
                match self.batches.binary_search_by_key(&batch.id, |b| b.id) {
                    Ok(i) => self.batches[i] = batch,
                    Err(i) => self.batches.insert(i, batch),
                }
            }
            Change::Checkpoint { checkpoint: c } => {
                self.next_checkpoint = self.next_checkpoint.max(c.id + 1);
                self.next_batch = self.next_batch.max(c.first_batch).max(1);
                match self.checkpoints.binary_search_by_key(&c.id, |x| x.id) {
                    Ok(i) => self.checkpoints[i] = c,
                    Err(i) => self.checkpoints.insert(i, c),
                }
            }
            Change::Restore {
                batches,
                redo,
                redo_fingerprint,
            } => {
                for b in batches {
                    // A batch dropped meanwhile (retention, the KEEP limit) stays dropped.
                    if let Ok(i) = self.batches.binary_search_by_key(&b.id, |x| x.id) {
                        self.batches[i] = b;
                    }
                }
                self.redo = redo;
                self.redo_fingerprint = redo_fingerprint;
            }
        }
        self.trim();
    }

    /// Applies a log line: its change, and its number as the last one folded in.
    fn apply_line(&mut self, line: Line) {
        self.apply(line.change);
        self.seq = line.seq;
    }

    /// Keeps the newest [`KEEP`] batches and checkpoints.
    fn trim(&mut self) {
        if self.batches.len() > KEEP {
            let cut = self.batches.len() - KEEP;
            let dropped: Vec<u64> = self.batches.drain(..cut).map(|b| b.id).collect();
            self.redo.retain(|id| !dropped.contains(id));
        }
        if self.checkpoints.len() > KEEP {
            let cut = self.checkpoints.len() - KEEP;
            self.checkpoints.drain(..cut);
        }
    }
}

/// The journal as read from the base and the log, and where in them it was read.
pub(crate) struct Loaded {
    pub journal: Journal,
    /// The base's stamp when it was read: a base replaced by a rename, or changed in place,
    /// has another.
    base: Option<Stamp>,
    /// The base existed but did not parse (read as empty): it is moved aside, its bytes
    /// kept, before anything is written over it.
    damaged: bool,
    /// The log's (device, inode) and how many of its bytes are folded in.
    log: Option<(u64, u64)>,
    log_end: u64,
}

/// A project's journal files, and the journal as this store last read or wrote them: while
/// the base is the same file unchanged and the log has only grown, only the new lines are
/// read.
pub(crate) struct JournalFiles {
    base: PathBuf,
    log: PathBuf,
    cache: RefCell<Option<Loaded>>,
    /// What the user should be told (a damaged base moved aside), until taken.
    notes: RefCell<Vec<String>>,
}

fn open_no_follow(path: &Path, write: bool) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    if write {
        o.create(true).write(true);
    } else {
        o.read(true);
    }
    // yuyao's own files: never through a link planted in their place.
    o.custom_flags(libc::O_NOFOLLOW).open(path)
}

impl JournalFiles {
    pub fn new(base: PathBuf) -> JournalFiles {
        JournalFiles {
            log: base.with_extension("log"),
            base,
            cache: RefCell::new(None),
            notes: RefCell::new(Vec::new()),
        }
    }

    /// What happened that the user should be told since the last call.
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut self.notes.borrow_mut())
    }

    pub fn base_path(&self) -> &Path {
        &self.base
    }

    /// The base's stamp now (`None`: no base, or something other than a file in its place).
    fn base_stamp(&self) -> Option<Stamp> {
        std::fs::symlink_metadata(&self.base)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| Stamp::of(&m))
    }

    /// The journal as it is now (the cached state when nothing but the log's tail changed).
    pub fn take(&self) -> Loaded {
        let base_id = self.base_stamp();
        let log = open_no_follow(&self.log, false).ok();
        let log_meta = log.as_ref().and_then(|f| f.metadata().ok());
        let cached = self.cache.borrow_mut().take().filter(|c| {
            c.base == base_id
                && match (c.log, &log_meta) {
                    (Some(id), Some(m)) => id == (m.dev(), m.ino()) && m.len() >= c.log_end,
                    (None, _) => c.log_end == 0,
                    (Some(_), None) => false,
                }
        });
        let mut l = cached.unwrap_or_else(|| {
            let parsed = base_id
                .and_then(|_| std::fs::read(&self.base).ok())
                .map(|b| serde_json::from_slice::<Journal>(&b));
            Loaded {
                damaged: matches!(parsed, Some(Err(_))),
                journal: parsed.and_then(Result::ok).unwrap_or_default(),
                base: base_id,
                log: None,
                log_end: 0,
            }
        });
        if let (Some(mut f), Some(m)) = (log, log_meta) {
            l.log = Some((m.dev(), m.ino()));
            if m.len() > l.log_end && f.seek(std::io::SeekFrom::Start(l.log_end)).is_ok() {
                let mut tail = Vec::new();
                if f.read_to_end(&mut tail).is_ok() {
                    l.log_end += fold(&mut l.journal, &tail);
                }
            }
        }
        l
    }

    /// Keeps `l` for the next [`JournalFiles::take`].
    pub fn keep(&self, l: Loaded) {
        *self.cache.borrow_mut() = Some(l);
    }

    /// Appends `change` to the log and applies it (the journal's lock held since `l` was
    /// taken); folds the log into the base once it has outgrown it.
    pub fn commit(&self, mut l: Loaded, change: Change) -> Result<(), String> {
        self.set_aside_damaged(&mut l)?;
        let err = |e: std::io::Error| format!("cannot save {}: {e}", self.log.display());
        let line = Line {
            seq: l.journal.seq + 1,
            change,
        };
        let mut bytes = serde_json::to_vec(&line).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        // On an error below `l` is dropped, not kept: the next reader reads the files again.
        l.journal.apply_line(line);
        let mut f = open_no_follow(&self.log, true).map_err(err)?;
        let m = f.metadata().map_err(err)?;
        let same_log = l.log.is_none_or(|id| id == (m.dev(), m.ino()));
        if !same_log || m.len() < l.log_end {
            // Replaced or cut under the lock (by hand): the state in memory is the truth.
            return self.compact(l);
        }
        // Bytes past what was read are a torn line from a writer that died mid-append.
        f.set_len(l.log_end).map_err(err)?;
        f.seek(std::io::SeekFrom::Start(l.log_end)).map_err(err)?;
        f.write_all(&bytes).map_err(err)?;
        f.sync_data().map_err(err)?;
        l.log = Some((m.dev(), m.ino()));
        l.log_end += bytes.len() as u64;
        let base_len = l.base.map_or(0, |b| b.size);
        if l.log_end > base_len.max(COMPACT_FROM) {
            return self.compact(l);
        }
        self.keep(l);
        Ok(())
    }

    /// A base that did not parse, still the file that was read, is renamed to
    /// `<project-id>.json.damaged-<unix seconds>` (the lock held), so nothing written later
    /// replaces its bytes; the journal starts again from the log.
    fn set_aside_damaged(&self, l: &mut Loaded) -> Result<(), String> {
        if !l.damaged {
            return Ok(());
        }
        let now = self.base_stamp();
        if now.is_some() && now == l.base {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let aside = self.base.with_extension(format!("json.damaged-{secs}"));
            std::fs::rename(&self.base, &aside).map_err(|e| {
                format!(
                    "cannot move the unreadable {} aside: {e}",
                    self.base.display()
                )
            })?;
            self.notes.borrow_mut().push(format!(
                "the snapshot journal {} could not be read; it is kept as {} and a new one was started (earlier batches cannot be undone from it)",
                self.base.display(),
                aside.display()
            ));
            l.base = None;
        }
        l.damaged = false;
        Ok(())
    }

    /// Writes the journal whole as the base and empties the log (the lock held).
    pub fn compact(&self, mut l: Loaded) -> Result<(), String> {
        self.set_aside_damaged(&mut l)?;
        let bytes = serde_json::to_vec(&l.journal).map_err(|e| e.to_string())?;
        crate::write_atomic(&self.base, &bytes)
            .map_err(|e| format!("cannot save {}: {e}", self.base.display()))?;
        // A crash here leaves lines the base already holds: skipped by their seq.
        match open_no_follow(&self.log, true) {
            Ok(f) => {
                let m = f.metadata().map_err(|e| e.to_string())?;
                f.set_len(0)
                    .map_err(|e| format!("cannot save {}: {e}", self.log.display()))?;
                l.log = Some((m.dev(), m.ino()));
            }
            Err(_) => l.log = None,
        }
        l.log_end = 0;
        l.base = self.base_stamp();
        self.keep(l);
        Ok(())
    }

    /// Folds a non-empty log into the base (the lock held): a journal at rest is one file.
    pub fn settle(&self) -> Result<(), String> {
        let l = self.take();
        if l.log_end == 0 {
            self.keep(l);
            return Ok(());
        }
        self.compact(l)
    }
}

/// Applies the complete lines of `tail` that are newer than the journal; returns the bytes
/// consumed (up to the last newline: a line still being written is left for later).
fn fold(j: &mut Journal, tail: &[u8]) -> u64 {
    let Some(end) = tail.iter().rposition(|&b| b == b'\n') else {
        return 0;
    };
    for raw in tail[..end].split(|&b| b == b'\n') {
        // A damaged line is skipped, as a damaged base reads as empty.
        let Ok(line) = serde_json::from_slice::<Line>(raw) else {
            continue;
        };
        if line.seq > j.seq {
            j.apply_line(line);
        }
    }
    end as u64 + 1
}

/// The journal at `base` with its log folded in (the retention pass reads it this way).
/// `None` when there is neither a base nor a log.
pub(crate) fn read(base: &Path) -> Option<Journal> {
    let l = JournalFiles::new(base.to_path_buf()).take();
    (l.base.is_some() || l.log.is_some()).then_some(l.journal)
}

/// Replaces the journal at `base` with `j`, read under the lock still held, and empties its
/// log (nothing to read again).
pub(crate) fn rewrite(base: &Path, j: Journal) -> Result<(), String> {
    JournalFiles::new(base.to_path_buf()).compact(Loaded {
        journal: j,
        base: None,
        damaged: false,
        log: None,
        log_end: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Snapshots;
    use super::*;

    /// A batch of `n` new files named after `tag`, journaled.
    fn batch(s: &Snapshots, proj: &Path, tag: &str, n: usize) {
        let paths: Vec<PathBuf> = (0..n)
            .map(|i| proj.join(format!("{tag}-{i}.txt")))
            .collect();
        let pre: Vec<_> = paths.iter().map(|p| s.capture(p).unwrap()).collect();
        for p in &paths {
            std::fs::write(p, tag).unwrap();
        }
        s.record_batch("s", &pre, &|_| None).unwrap().unwrap();
    }

    fn fresh(s: &Snapshots) -> Journal {
        JournalFiles::new(s.journal.base_path().to_path_buf())
            .take()
            .journal
    }

    fn same(a: &Journal, b: &Journal) -> bool {
        let strip = |j: &Journal| {
            let mut v = serde_json::to_value(j).unwrap();
            v["project"] = serde_json::Value::Null;
            v
        };
        strip(a) == strip(b)
    }

    /// A batch or an undo costs one line the size of what it changed: the base holding the
    /// history is neither rewritten nor read again.
    #[test]
    fn a_change_appends_one_line_and_leaves_the_base_alone() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        for i in 0..5 {
            batch(&s, proj.path(), &format!("h{i}"), 200);
        }
        s.settle().unwrap();
        let base = s.journal.base_path();
        let before = Stamp::of_path(base).unwrap();
        assert!(before.size > 50_000, "{before:?}");
        batch(&s, proj.path(), "one", 1);
        let log_len = std::fs::metadata(&s.journal.log).unwrap().len();
        assert!(log_len < 1_000, "{log_len}");
        s.undo().unwrap().unwrap();
        let log_len = std::fs::metadata(&s.journal.log).unwrap().len();
        assert!(log_len < 2_500, "{log_len}");
        assert_eq!(Stamp::of_path(base), Some(before));
        // What a new reader folds together is what the session holds.
        let live = s.peek(|j| j.clone());
        assert!(same(&fresh(&s), &live));
        assert!(live.batches.last().unwrap().undone);
        assert_eq!(live.redo.len(), 1);
    }

    /// A writer that died mid-append leaves a torn line: it is never read, and the next
    /// append cuts it off, so every later line parses.
    #[test]
    fn a_torn_last_line_is_ignored_and_cut_by_the_next_append() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        batch(&s, proj.path(), "a", 2);
        let log = s.journal.log.clone();
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        // Longer than the next line: the append must cut it, not write over its start.
        let torn = format!(
            r#"{{"seq":2,"change":{{"op":"batch","batch":{{"id":9,"session":"{}"#,
            "x".repeat(4000)
        );
        f.write_all(torn.as_bytes()).unwrap();
        drop(f);
        let other = Snapshots::open(home.path(), proj.path()).unwrap();
        assert_eq!(other.batches().len(), 1);
        batch(&other, proj.path(), "b", 1);
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        for line in text.lines() {
            serde_json::from_str::<Line>(line).unwrap();
        }
        assert_eq!(s.batches().iter().map(|b| b.id).collect::<Vec<_>>(), [1, 2]);
    }

    /// A crash after the base was written but before the log was emptied: the lines the
    /// base already holds are skipped, nothing is applied twice.
    #[test]
    fn a_crash_between_compaction_and_emptying_the_log_repeats_nothing() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        batch(&s, proj.path(), "a", 1);
        batch(&s, proj.path(), "b", 1);
        s.undo().unwrap().unwrap();
        // The log holds batch, batch, undo; the base will hold the redo after them too.
        let stale = std::fs::read(&s.journal.log).unwrap();
        s.redo().unwrap().unwrap();
        s.settle().unwrap();
        assert_eq!(std::fs::metadata(&s.journal.log).unwrap().len(), 0);
        std::fs::write(&s.journal.log, &stale).unwrap();
        let j = fresh(&s);
        assert_eq!(j.batches.len(), 2);
        assert!(j.redo.is_empty() && !j.batches[1].undone, "{j:?}");
        assert!(same(&j, &s.peek(|j| j.clone())));
        // And the next change is numbered after the base, not after the stale lines.
        s.undo().unwrap().unwrap();
        let j = fresh(&s);
        assert!(j.redo == [2] && j.batches[1].undone, "{j:?}");
    }

    /// The log never grows past the base (or the floor) by more than a line: a long session
    /// rewrites its history a bounded number of times, and the folded journal is the live one.
    #[test]
    fn the_log_is_folded_once_it_outgrows_the_base() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let mut folds = 0;
        let mut last_log = 0;
        for i in 0..120 {
            batch(&s, proj.path(), &format!("f{i}"), 20);
            if i % 3 == 0 {
                s.undo().unwrap().unwrap();
            }
            let base = std::fs::metadata(s.journal.base_path()).map_or(0, |m| m.len());
            let log = std::fs::metadata(&s.journal.log).unwrap().len();
            assert!(log <= base.max(COMPACT_FROM) + 8_192, "{log} {base}");
            if log < last_log {
                folds += 1;
            }
            last_log = log;
        }
        assert!((1..=8).contains(&folds), "{folds}");
        assert!(same(&fresh(&s), &s.peek(|j| j.clone())));
    }

    /// Two sessions on one project, a few hundred changes in a seeded random order (batches,
    /// checkpoints, undos, redos, folds, torn appends): what a session holds when it looks,
    /// however many changes the other made meanwhile, is what a new reader folds together.
    #[test]
    fn two_sessions_and_a_new_reader_always_see_one_journal() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = [
            Snapshots::open(home.path(), proj.path()).unwrap(),
            Snapshots::open(home.path(), proj.path()).unwrap(),
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        for step in 0..300 {
            let who = &s[next(2) as usize];
            match next(10) {
                0..=2 => batch(who, proj.path(), &format!("b{step}"), 1 + next(30) as usize),
                3 => {
                    who.add_checkpoint("s", &format!("p{step}"), step).unwrap();
                }
                4 | 5 => {
                    let _ = who.undo().unwrap();
                }
                6 => {
                    // Refused when a later batch's files changed since: either way, one journal.
                    let _ = who.redo();
                }
                7 => who.settle().unwrap(),
                8 => {
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .create(true)
                        .open(&who.journal.log)
                        .unwrap();
                    f.write_all(br#"{"seq":99999,"change":{"op":"checkpoint""#)
                        .unwrap();
                }
                _ => {
                    let (checkpoints, batches) = (who.checkpoints(), who.batches());
                    assert!(batches.windows(2).all(|w| w[0].id < w[1].id));
                    assert!(checkpoints.windows(2).all(|w| w[0].id < w[1].id));
                }
            }
            // One session looks, the other may lag several changes behind (its cache too).
            let one = &s[next(2) as usize];
            assert!(same(&one.peek(|j| j.clone()), &fresh(one)), "step {step}");
        }
        for one in &s {
            assert!(same(&one.peek(|j| j.clone()), &fresh(one)));
        }
        assert!(fresh(&s[0]).batches.len() > 50);
    }

    /// A base that no longer parses (a hand edit gone wrong, a damaged disk) reads as empty,
    /// but its bytes are never written over: the first change moves it aside and says so.
    #[test]
    fn an_unreadable_base_is_moved_aside_not_overwritten() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let base = s.journal.base_path().to_path_buf();
        std::fs::write(&base, br#"{"batches": [{"id": 1, "session": "#).unwrap();
        // Reading alone changes nothing.
        assert!(s.batches().is_empty() && s.checkpoints().is_empty());
        assert!(s.take_notes().is_empty());
        s.add_checkpoint("s", "p", 0).unwrap();
        let notes = s.take_notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        let aside: Vec<PathBuf> = std::fs::read_dir(base.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".json.damaged-"))
            .collect();
        assert_eq!(aside.len(), 1, "{aside:?}");
        assert!(notes[0].contains(&*aside[0].to_string_lossy()), "{notes:?}");
        assert_eq!(
            std::fs::read(&aside[0]).unwrap(),
            br#"{"batches": [{"id": 1, "session": "#
        );
        // The new journal works, folded or not, and says nothing more.
        batch(&s, proj.path(), "a", 1);
        s.settle().unwrap();
        let j = fresh(&s);
        assert_eq!((j.batches.len(), j.checkpoints.len()), (1, 1));
        assert!(s.take_notes().is_empty());
    }

    /// A link planted where the log goes is never written through: the change fails with
    /// a message naming the log, and the linked file keeps its bytes.
    #[test]
    fn a_link_planted_at_the_log_is_never_written_through() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let victim = proj.path().join("victim.txt");
        std::fs::write(&victim, "mine\n").unwrap();
        std::os::unix::fs::symlink(&victim, &s.journal.log).unwrap();
        let f = proj.path().join("f.txt");
        let pre = vec![s.capture(&f).unwrap()];
        std::fs::write(&f, "x").unwrap();
        let err = s.record_batch("s", &pre, &|_| None).unwrap_err();
        assert!(err.contains(".log"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
    }
}
