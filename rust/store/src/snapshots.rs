//! Per-batch snapshots of the files the agent changes, for /undo, /redo, /rewind and /diff.
//!
//! Layout under `~/.yuyao/snapshots/`, per project (`<project-id>` = [`project_id`]):
//! - `<project-id>.git/` — a shadow bare git repository (git2) holding images of files under
//!   [`CHUNKED_FROM`] bytes as ordinary loose blobs (content-addressed by git's id, zlib
//!   compressed); an object id in the journal that is 40 hex digits names one of them.
//! - `<project-id>.git/yuyao-cas/` — larger images, content-addressed and zstd-compressed in
//!   content-defined chunks shared by every image that has them (`snapshots/cas.rs`). Their
//!   journal id is `cas:<64 hex>`. Seven one-line edits of a 50 MB file store one compressed
//!   copy plus the few chunks around each edit.
//! - `<project-id>.git/yuyao-raw/<32 hex>` — large images as plain copies, written by earlier
//!   versions (journal id `raw:<32 hex>`). They are still read and restored; nothing new is
//!   stored there, and the retention pass deletes them once no batch refers to them.
//! - `<project-id>.json` and `<project-id>.log` — the journal of batches and checkpoints: a
//!   base and an append-only log of the changes after it (`snapshots/journal.rs`), so a batch
//!   or an undo costs what it changed, not the history (`<project-id>.lock` while it is being
//!   changed).
//!
//! A batch stores each file's pre-image once, when a file tool is about to change it. The
//! post-image is not copied: it is the file itself, recorded by its SHA-256 (`after_sha256`;
//! the tool's own hash of what it wrote, so usually no second pass). It is stored — `after`
//! set — only when an undo is about to overwrite it, which is the only time /redo could need
//! it. Journals written before this (with `after` always set) read the same.
//!
//! Nothing is ever written into the user's repository: no commit, ref, index entry or hook,
//! and it works the same outside git.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use yuyao_protocol::Stamp;

pub(crate) mod cas;
pub(crate) mod journal;

use journal::{Change, JournalFiles, Loaded};

/// The journal keeps this many batches and checkpoints per project (the oldest go first).
const KEEP: usize = 2000;

/// Files larger than this are not snapshotted (the batch says so).
pub const MAX_SNAPSHOT_BYTES: u64 = 512 * 1024 * 1024;

/// Images of at least this many bytes are stored chunked and compressed, not as git blobs.
pub const CHUNKED_FROM: u64 = 1024 * 1024;
const RAW_PREFIX: &str = "raw:";
const RAW_DIR: &str = "yuyao-raw";

/// One file of a batch: its bytes before and after, as object ids (`None`: absent).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    pub before: Option<String>,
    /// The stored post-image; `None` with `after_sha256` set: not stored (yet), it is the
    /// file on disk while its content has that hash.
    pub after: Option<String>,
    /// SHA-256 (hex) of the post-image when the file existed after the batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_sha256: Option<String>,
    /// Folders the batch created for this file (deepest first); /undo removes them if empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_dirs: Vec<PathBuf>,
}

/// A file's state before a batch touched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreImage {
    pub path: PathBuf,
    /// Object id of its bytes, `None` when it did not exist.
    pub blob: Option<String>,
    /// Missing folders above it (deepest first).
    pub new_dirs: Vec<PathBuf>,
    /// Its stamp when stored, and whether that stamp could miss a same-tick change.
    pub stamp: Option<(Stamp, bool)>,
    /// SHA-256 of the stored bytes (`None`: absent). With the tool's hash of what it wrote,
    /// it tells whether the batch changed the file without reading it again.
    pub sha256: Option<[u8; 32]>,
}

/// The file changes of one tool batch (the tool calls of one model reply).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Batch {
    pub id: u64,
    pub session: String,
    /// The checkpoint (user prompt) this batch belongs to.
    pub checkpoint: Option<u64>,
    pub time: String,
    pub files: Vec<FileChange>,
    pub undone: bool,
}

/// A user prompt: a point the code and the conversation can be rewound to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checkpoint {
    pub id: u64,
    pub session: String,
    pub time: String,
    pub prompt: String,
    /// Messages in the session's history before this prompt.
    pub history_len: usize,
    /// Batches with an id at or above this one came after the prompt.
    pub first_batch: u64,
}

/// What happened to each file of an undo, redo or rewind.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub restored: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
    /// Files changed by someone else since the batch; left alone.
    pub skipped: Vec<PathBuf>,
    pub batches: usize,
}

impl Report {
    pub fn describe(&self, verb: &str) -> String {
        let mut out = Vec::new();
        for p in &self.restored {
            out.push(format!("  {verb} {}", p.display()));
        }
        for p in &self.removed {
            out.push(format!("  removed {}", p.display()));
        }
        for p in &self.skipped {
            out.push(format!(
                "  left alone {} (it changed after the agent's edit; your version is kept)",
                p.display()
            ));
        }
        out.join("\n")
    }
}

/// Held while the journal is read, changed and written; removes its lock file when dropped.
pub(crate) struct JournalLock(PathBuf);

impl Drop for JournalLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Takes the lock of the journal at `journal` (a `.lock` file beside it; a stale one, left
/// by a holder that died, is taken over). Also used by retention.
pub(crate) fn lock_journal_at(journal: &Path) -> Result<JournalLock, String> {
    let start = std::time::Instant::now();
    loop {
        match try_lock(journal) {
            Ok(lock) => return Ok(lock),
            Err(Some(e)) => return Err(e),
            Err(None) if start.elapsed() > LOCK_PATIENCE => {
                return Err(format!(
                    "the snapshot journal is locked by another yuyao session ({}); try again",
                    journal.with_extension("lock").display()
                ));
            }
            Err(None) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
}

/// How long a lock is waited for, and how old a lock is before it counts as left by a holder
/// that died.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// One attempt at the lock (a stale one, left by a holder that died, is taken over):
/// `Err(None)` while another holder has it, `Err(Some(_))` when the lock file cannot be made.
fn try_lock(journal: &Path) -> Result<JournalLock, Option<String>> {
    let path = journal.with_extension("lock");
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => return Ok(JournalLock(path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // A holder that died leaves its lock behind: take it over once it is old.
                let stale = std::fs::metadata(&path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > LOCK_PATIENCE);
                if !stale {
                    return Err(None);
                }
                let _ = std::fs::remove_file(&path);
            }
            Err(e) => return Err(Some(format!("cannot lock {}: {e}", path.display()))),
        }
    }
}

pub struct Snapshots {
    repo: git2::Repository,
    cas: cas::Cas,
    project: PathBuf,
    /// Folders never looked at when fingerprinting the project.
    skip: Vec<PathBuf>,
    /// The journal's base and log, and the journal as last read or written: an /undo of a
    /// large batch otherwise parses thousands of file entries it has just written.
    journal: JournalFiles,
}

/// `<name>-<hash>` for a project folder.
pub fn project_id(project: &Path) -> String {
    let name: String = project
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("root")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let hash = Sha256::digest(project.as_os_str().as_encoded_bytes());
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{name}-{hex}")
}

fn now() -> String {
    chrono::Local::now().format("%Y-%m-%d %H:%M:%S").to_string()
}

fn git_err(e: git2::Error) -> String {
    format!("snapshot store: {}", e.message())
}

/// The blob id git would give these bytes (no write).
pub fn blob_id(bytes: &[u8]) -> String {
    git2::Oid::hash_object(git2::ObjectType::Blob, bytes)
        .map(|o| o.to_string())
        .unwrap_or_default()
}

/// The current bytes of `path`: `Ok(None)` when it does not exist.
fn disk(path: &Path) -> Result<Option<Vec<u8>>, String> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn disk_id(path: &Path) -> Result<Option<String>, String> {
    Ok(disk(path)?.map(|b| blob_id(&b)))
}

/// The stamp of `path` now: `Ok(None)` when it does not exist.
fn disk_stamp(path: &Path) -> Result<Option<Stamp>, String> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(Stamp::of(&m))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn too_large(path: &Path) -> String {
    format!(
        "{} is larger than {} MB and is not snapshotted",
        path.display(),
        MAX_SNAPSHOT_BYTES / (1024 * 1024)
    )
}

/// The bytes of the regular file at `path` and the `fstat` of the descriptor they were read
/// from, taken before reading (a change during the read shows as another stamp later), and
/// whether that stamp is racy (`freshness.rs` in yuyao-tools); `Ok(None)` when it does not
/// exist. Opened non-blocking (a named pipe is refused, never waited on) and without
/// following a link at the name: the paths given are resolved, so a link there appeared
/// since, and what it points to is not the project's file to keep.
fn read_stamped(path: &Path) -> Result<Option<(Vec<u8>, Stamp, bool)>, String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let err = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let mut f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(format!(
                "{} is a symbolic link and is not snapshotted",
                path.display()
            ));
        }
        Err(e) => return Err(err(e)),
    };
    let meta = f.metadata().map_err(err)?;
    let stamp = Stamp::of(&meta);
    let racy = stamp.racy_at(std::time::SystemTime::now());
    if !meta.is_file() {
        return Err(format!(
            "{} is not a regular file and is not snapshotted",
            path.display()
        ));
    }
    if meta.len() > MAX_SNAPSHOT_BYTES {
        return Err(too_large(path));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut f)
        .take(MAX_SNAPSHOT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(err)?;
    if bytes.len() as u64 > MAX_SNAPSHOT_BYTES {
        return Err(too_large(path));
    }
    Ok(Some((bytes, stamp, racy)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (hex) of the current content of `path`, streamed; `Ok(None)` when it does not
/// exist.
fn disk_sha256(path: &Path) -> Result<Option<String>, String> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        }
    }
    Ok(Some(hex(&h.finalize())))
}

/// Whether two files have the same bytes (streamed; stops at the first difference).
fn same_bytes(a: &Path, b: &Path) -> Result<bool, String> {
    let open =
        |p: &Path| std::fs::File::open(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (la, lb) = (
        fa.metadata().map(|m| m.len()).unwrap_or(0),
        fb.metadata().map(|m| m.len()).unwrap_or(1),
    );
    if la != lb {
        return Ok(false);
    }
    let (mut ba, mut bb) = (vec![0u8; 256 * 1024], vec![0u8; 256 * 1024]);
    loop {
        let n = fa
            .read(&mut ba)
            .map_err(|e| format!("cannot read {}: {e}", a.display()))?;
        if n == 0 {
            return Ok(fb.read(&mut bb[..1]).map_err(|e| e.to_string())? == 0);
        }
        fb.read_exact(&mut bb[..n])
            .map_err(|e| format!("cannot read {}: {e}", b.display()))?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

/// The folder of the file a restore works on, kept open for the next file in the same folder
/// (`beneath::Folder`: no link followed). `None`: it could not be opened (absent, a link).
struct Dirs<'a> {
    project: &'a Path,
    cur: Option<(PathBuf, Option<crate::beneath::Folder>)>,
}

impl<'a> Dirs<'a> {
    fn new(project: &'a Path) -> Dirs<'a> {
        Dirs { project, cur: None }
    }

    fn folder(&mut self, dir: &Path) -> Option<&crate::beneath::Folder> {
        if self.cur.as_ref().is_none_or(|(d, _)| d != dir) {
            let opened = crate::beneath::Folder::open(self.project, dir).ok();
            self.cur = Some((dir.to_path_buf(), opened));
        }
        self.cur.as_ref().and_then(|(_, f)| f.as_ref())
    }

    /// The bytes of `path`, read without following a link inside the project; `Ok(None)`
    /// when it is absent or not reachable that way (then it is not what the batch wrote).
    fn read(&mut self, path: &Path) -> Result<Option<Vec<u8>>, String> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(None);
        };
        if !path.starts_with(self.project) {
            return disk(path);
        }
        match self.folder(dir) {
            None => Ok(None),
            Some(f) => f
                .read(name)
                .map_err(|e| format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Removes `path` inside the project without following a link.
    fn remove(&mut self, path: &Path) -> Result<(), String> {
        let err = |e: std::io::Error| format!("cannot remove {}: {e}", path.display());
        if let (Some(dir), Some(name)) = (path.parent(), path.file_name())
            && let Some(f) = self.folder(dir)
        {
            return f.remove(name).map_err(err);
        }
        // The folder is absent (nothing to remove) or a link (the error says so).
        crate::beneath::remove_file(self.project, path).map_err(err)
    }
}

impl Snapshots {
    /// Opens (creating on first use) the store of `project` under `home/snapshots/`.
    pub fn open(home: &Path, project: &Path) -> Result<Snapshots, String> {
        let dir = home.join("snapshots");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let id = project_id(project);
        let git_dir = dir.join(format!("{id}.git"));
        // Another session may be creating it at this very moment: retry briefly.
        let mut attempt = 0;
        let repo = loop {
            let r = git2::Repository::open_bare(&git_dir)
                .or_else(|_| git2::Repository::init_bare(&git_dir));
            match r {
                Ok(r) => break r,
                Err(_) if attempt < 50 => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(git_err(e)),
            }
        };
        Ok(Snapshots {
            cas: cas::Cas::new(repo.path()),
            repo,
            project: project.to_path_buf(),
            skip: vec![home.to_path_buf()],
            journal: JournalFiles::new(dir.join(format!("{id}.json"))),
        })
    }

    /// Where the shadow repository lives.
    pub fn git_dir(&self) -> PathBuf {
        self.repo.path().to_path_buf()
    }

    /// Serializes journal updates between sessions working on the same project.
    fn lock_journal(&self) -> Result<JournalLock, String> {
        lock_journal_at(self.journal.base_path())
    }

    /// The journal, to change through [`Snapshots::commit`] (or give back unchanged with
    /// [`Snapshots::keep`]).
    fn load(&self) -> Loaded {
        let mut l = self.journal.take();
        l.journal.project = self.project.display().to_string();
        l
    }

    fn keep(&self, l: Loaded) {
        self.journal.keep(l)
    }

    /// Runs `f` on the journal as it is now, keeping it for the next reader.
    fn peek<R>(&self, f: impl FnOnce(&journal::Journal) -> R) -> R {
        let l = self.load();
        let r = f(&l.journal);
        self.keep(l);
        r
    }

    /// Records `change` in the journal (the lock held since `l` was loaded).
    fn commit(&self, l: Loaded, change: Change) -> Result<(), String> {
        self.journal.commit(l, change)
    }

    /// What the user should be told about the journal since the last call (an unreadable
    /// journal moved aside).
    pub fn take_notes(&self) -> Vec<String> {
        self.journal.take_notes()
    }

    /// Folds the journal's log into its one file, unless another session is changing it
    /// right now (a session's end: a journal at rest is plain JSON an older version reads).
    pub fn settle(&self) -> Result<(), String> {
        let Ok(_lock) = try_lock(self.journal.base_path()) else {
            return Ok(());
        };
        self.journal.settle()
    }

    /// Stores the current bytes of `path` (its pre-image) and returns the object id, `None`
    /// when the file does not exist. Errors for files too large to snapshot.
    pub fn capture(&self, path: &Path) -> Result<PreImage, String> {
        self.capture_read(path).map(|(pre, _)| pre)
    }

    /// [`Snapshots::capture`], also giving back the bytes it stored: the stamp in the
    /// pre-image is the `fstat` of the descriptor they were read from, taken before reading,
    /// so a tool about to change the file can use them instead of reading it again when the
    /// file still has that stamp (seed 002 §3 "Snapshots cost what changed": one read of a
    /// large file per edit).
    pub fn capture_read(&self, path: &Path) -> Result<(PreImage, Option<Vec<u8>>), String> {
        // One stat decides everything (a batch may capture a thousand new files).
        let meta = match std::fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let Some(meta) = meta else {
            let mut new_dirs = Vec::new();
            let mut dir = path.parent();
            while let Some(d) = dir {
                if d.as_os_str().is_empty() || d.exists() {
                    break;
                }
                new_dirs.push(d.to_path_buf());
                dir = d.parent();
            }
            return Ok((
                PreImage {
                    path: path.to_path_buf(),
                    blob: None,
                    new_dirs,
                    stamp: None,
                    sha256: None,
                },
                None,
            ));
        };
        if meta.is_dir() {
            return Err(format!("{} is a directory", path.display()));
        }
        if meta.len() > MAX_SNAPSHOT_BYTES {
            return Err(too_large(path));
        }
        let Some((bytes, stamp, racy)) = read_stamped(path)? else {
            // Gone since the stat: absent, like above (its folders exist).
            return Ok((
                PreImage {
                    path: path.to_path_buf(),
                    blob: None,
                    new_dirs: Vec::new(),
                    stamp: None,
                    sha256: None,
                },
                None,
            ));
        };
        let (blob, sha256) = self.store_bytes(path, &bytes)?;
        Ok((
            PreImage {
                path: path.to_path_buf(),
                blob: Some(blob),
                new_dirs: Vec::new(),
                stamp: Some((stamp, racy)),
                sha256: Some(sha256),
            },
            Some(bytes),
        ))
    }

    /// Stores `bytes` (the content of `path`): their object id and SHA-256. A large image is
    /// hashed whole on a second thread while it is chunked and stored.
    fn store_bytes(&self, path: &Path, bytes: &[u8]) -> Result<(String, [u8; 32]), String> {
        let sha = |b: &[u8]| -> [u8; 32] { Sha256::digest(b).into() };
        if (bytes.len() as u64) < CHUNKED_FROM {
            let id = self.repo.blob(bytes).map_err(git_err)?;
            return Ok((id.to_string(), sha(bytes)));
        }
        let (id, hash) = std::thread::scope(|s| {
            let hashing = s.spawn(|| sha(bytes));
            let id = self.cas().put(bytes);
            (id, hashing.join().unwrap_or_else(|_| sha(bytes)))
        });
        let id = id.map_err(|e| format!("cannot snapshot {}: {e}", path.display()))?;
        Ok((id, hash))
    }

    fn cas(&self) -> &cas::Cas {
        &self.cas
    }

    /// Where a `raw:` object lives, `None` for a git blob id.
    fn raw_path(&self, id: &str) -> Option<PathBuf> {
        let name = id.strip_prefix(RAW_PREFIX)?;
        // Ids come from the journal, a file the user may edit: a plain name only.
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Some(self.repo.path().join(RAW_DIR).join("invalid"));
        }
        Some(self.repo.path().join(RAW_DIR).join(name))
    }

    /// The bytes of a stored object (a git blob, a `cas:` image or an older `raw:` copy).
    /// A damaged or truncated object is an error.
    pub fn blob(&self, id: &str) -> Result<Vec<u8>, String> {
        if id.starts_with(cas::PREFIX) || id.starts_with(cas::PACK_PREFIX) {
            return self.cas().get(id);
        }
        if let Some(p) = self.raw_path(id) {
            return std::fs::read(&p)
                .map_err(|e| format!("snapshot store: cannot read {}: {e}", p.display()));
        }
        let oid = git2::Oid::from_str(id).map_err(git_err)?;
        let blob = self.repo.find_blob(oid).map_err(git_err)?;
        Ok(blob.content().to_vec())
    }

    /// Whether `path` now holds the object `id` (`None`: is absent).
    fn holds(&self, path: &Path, id: Option<&str>) -> Result<bool, String> {
        match id {
            None => Ok(disk_stamp(path)?.is_none()),
            Some(id) if id.starts_with(cas::PACK_PREFIX) => {
                let want = cas::parse_pack(id).map(|(_, _, n)| n as u64);
                match disk_stamp(path)? {
                    Some(s) if Some(s.size) == want => {
                        Ok(disk(path)?.is_some_and(|b| self.cas().get(id).ok() == Some(b)))
                    }
                    _ => Ok(false),
                }
            }
            Some(id) if id.starts_with(cas::PREFIX) => self.cas().matches(id, path),
            Some(id) => match self.raw_path(id) {
                Some(raw) => Ok(disk_stamp(path)?.is_some() && same_bytes(path, &raw)?),
                None => Ok(disk_id(path)?.as_deref() == Some(id)),
            },
        }
    }

    /// Whether `path` now holds the batch's post-image of it.
    fn holds_after(&self, f: &FileChange) -> Result<bool, String> {
        match &f.after_sha256 {
            Some(h) => Ok(disk_sha256(&f.path)?.as_ref() == Some(h)),
            None => self.holds(&f.path, f.after.as_deref()),
        }
    }

    /// Ends a batch: `pre` holds each touched file's pre-image; `known` gives the SHA-256 of a
    /// file's current content when the caller already has it (a tool hashed what it wrote).
    /// Files that did not change are dropped; a batch with changes is journaled and makes any
    /// pending /redo impossible.
    pub fn record_batch(
        &self,
        session: &str,
        pre: &[PreImage],
        known: &dyn Fn(&Path) -> Option<[u8; 32]>,
    ) -> Result<Option<Batch>, String> {
        let mut files = Vec::new();
        let mut listed: std::collections::HashSet<&Path> = Default::default();
        for p in pre {
            let now = disk_stamp(&p.path)?;
            // The tool's hash of what it wrote, while the file is still what it wrote.
            let after = now.and_then(|_| known(&p.path));
            let changed = match (&p.blob, now) {
                (None, None) => false,
                (None, Some(_)) | (Some(_), None) => true,
                // The same stamp, taken well after the last change: the same content.
                (Some(_), Some(s)) if p.stamp == Some((s, false)) => false,
                // Both hashes known: no need to read the file again.
                (Some(_), Some(_)) if p.sha256.is_some() && after.is_some() => p.sha256 != after,
                (Some(id), Some(_)) => !self.holds(&p.path, Some(id))?,
            };
            if !changed {
                // Its object may be shared with other images (all are stored by content): the
                // retention pass removes it once nothing refers to it.
                continue;
            }
            let after_sha256 = match (now, after) {
                (None, _) => None,
                (Some(_), Some(h)) => Some(hex(&h)),
                (Some(_), None) => disk_sha256(&p.path)?,
            };
            files.push(FileChange {
                path: p.path.clone(),
                before: p.blob.clone(),
                after: None,
                after_sha256,
                // A folder is listed once per batch, on its first file (/undo removes the
                // batch's folders together, after all its files).
                new_dirs: p
                    .new_dirs
                    .iter()
                    .filter(|d| listed.insert(d.as_path()))
                    .cloned()
                    .collect(),
            });
        }
        if files.is_empty() {
            return Ok(None);
        }
        let _lock = self.lock_journal()?;
        let l = self.load();
        let checkpoint = l
            .journal
            .checkpoints
            .iter()
            .rev()
            .find(|c| c.session == session)
            .map(|c| c.id);
        let batch = Batch {
            id: l.journal.next_batch.max(1),
            session: session.to_string(),
            checkpoint,
            time: now(),
            files,
            undone: false,
        };
        self.commit(
            l,
            Change::Batch {
                batch: batch.clone(),
            },
        )?;
        Ok(Some(batch))
    }

    /// Records a user prompt as a checkpoint; returns its id.
    pub fn add_checkpoint(
        &self,
        session: &str,
        prompt: &str,
        history_len: usize,
    ) -> Result<u64, String> {
        let _lock = self.lock_journal()?;
        let l = self.load();
        let id = l.journal.next_checkpoint.max(1);
        let checkpoint = Checkpoint {
            id,
            session: session.to_string(),
            time: now(),
            prompt: prompt.chars().take(200).collect(),
            history_len,
            first_batch: l.journal.next_batch.max(1),
        };
        self.commit(l, Change::Checkpoint { checkpoint })?;
        Ok(id)
    }

    pub fn checkpoints(&self) -> Vec<Checkpoint> {
        self.peek(|j| j.checkpoints.clone())
    }

    pub fn batches(&self) -> Vec<Batch> {
        self.peek(|j| j.batches.clone())
    }

    /// Restores the batch's files to their pre-images, skipping files changed since. A
    /// post-image not stored yet is stored first (it is what /redo puts back): the small ones
    /// of the whole batch in one bundle, before any file is touched.
    fn revert(&self, b: &mut Batch, report: &mut Report) -> Result<(), String> {
        let mut todo = Vec::new();
        let mut small: Vec<(usize, Vec<u8>)> = Vec::new();
        let mut dirs = Dirs::new(&self.project);
        for i in (0..b.files.len()).rev() {
            let f = &b.files[i];
            // The post-image is read once: to check it is still there and, when it must be
            // kept, to store it.
            let (holds, bytes) = match (&f.after_sha256, &f.after) {
                (Some(h), None) => match dirs.read(&f.path)? {
                    Some(bytes) if hex(&Sha256::digest(&bytes)) == *h => (true, Some(bytes)),
                    _ => (false, None),
                },
                _ => (self.holds_after(f)?, None),
            };
            if !holds {
                if !self.holds(&f.path, f.before.as_deref())? {
                    report.skipped.push(f.path.clone());
                }
                continue;
            }
            match bytes {
                Some(bytes) if bytes.len() as u64 >= CHUNKED_FROM => {
                    let id = self.cas().put(&bytes).map_err(|e| {
                        format!("cannot snapshot {}: {e}", b.files[i].path.display())
                    })?;
                    b.files[i].after = Some(id);
                }
                Some(bytes) => small.push((i, bytes)),
                None => {}
            }
            todo.push(i);
        }
        let pieces: Vec<&[u8]> = small.iter().map(|(_, b)| b.as_slice()).collect();
        let ids = self.cas().put_bundle(&pieces)?;
        for ((i, _), id) in small.iter().zip(ids) {
            b.files[*i].after = Some(id);
        }
        // Folders the batch created go too, when nothing else is in them: tried once each
        // after every file is back (a batch of a thousand new files in one new folder lists
        // that folder on every file), deepest first so a parent can follow its child.
        let mut created: Vec<&Path> = Vec::new();
        for i in todo {
            let f = &b.files[i];
            self.put(&f.path, f.before.as_deref(), report, &mut dirs)?;
            if f.before.is_none() {
                created.extend(f.new_dirs.iter().map(PathBuf::as_path));
            }
        }
        created.sort_by(|a, b| (b.components().count(), b).cmp(&(a.components().count(), a)));
        created.dedup();
        for d in created {
            let _ = std::fs::remove_dir(d);
        }
        self.flush(report)?;
        report.batches += 1;
        Ok(())
    }

    /// Makes the files a restore wrote durable (one `syncfs` rather than one `fsync` per
    /// file), before the journal records the restore.
    fn flush(&self, report: &Report) -> Result<(), String> {
        if report.restored.is_empty() {
            return Ok(());
        }
        crate::beneath::sync_fs(&self.project)
            .map_err(|e| format!("cannot flush {}: {e}", self.project.display()))
    }

    fn put(
        &self,
        path: &Path,
        id: Option<&str>,
        report: &mut Report,
        dirs: &mut Dirs,
    ) -> Result<(), String> {
        match id {
            Some(id) => {
                // Read and checked whole before anything is written: a damaged object
                // fails the restore of this file, it never leaves part of it.
                let bytes = self
                    .blob(id)
                    .map_err(|e| format!("cannot restore {}: {e}", path.display()))?;
                write_keeping_mode(&self.project, path, &bytes)?;
                report.restored.push(path.to_path_buf());
            }
            None => {
                if path.starts_with(&self.project) {
                    // The folders may have been replaced with links since the batch.
                    dirs.remove(path)?;
                } else if path.exists() {
                    std::fs::remove_file(path)
                        .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
                }
                report.removed.push(path.to_path_buf());
            }
        }
        Ok(())
    }

    /// /undo: reverts the most recent batch that is not undone.
    pub fn undo(&self) -> Result<Option<(Batch, Report)>, String> {
        let _lock = self.lock_journal()?;
        let l = self.load();
        let Some(pos) = l.journal.batches.iter().rposition(|b| !b.undone) else {
            self.keep(l);
            return Ok(None);
        };
        let mut b = l.journal.batches[pos].clone();
        let mut report = Report::default();
        let reverted = self.revert(&mut b, &mut report);
        let mut redo = l.journal.redo.clone();
        if let Err(e) = reverted {
            // Post-images stored before a failure are kept track of all the same.
            let guard = l.journal.redo_fingerprint.clone();
            let _ = self.commit(l, restore(vec![b], redo, guard));
            return Err(e);
        }
        redo.push(b.id);
        let done = Batch {
            undone: true,
            ..b.clone()
        };
        self.commit(l, restore(vec![done], redo, Some(self.redo_guard())))?;
        Ok(Some((b, report)))
    }

    /// /redo: re-applies the most recently undone batch, unless anything changed since the
    /// undo (then nothing is written and the reason is returned as `Err`).
    pub fn redo(&self) -> Result<Option<(Batch, Report)>, String> {
        let _lock = self.lock_journal()?;
        let l = self.load();
        let Some(&id) = l.journal.redo.last() else {
            self.keep(l);
            return Ok(None);
        };
        let Some(pos) = l.journal.batches.iter().position(|b| b.id == id) else {
            let guard = l.journal.redo_fingerprint.clone();
            self.commit(l, restore(Vec::new(), Vec::new(), guard))?;
            return Ok(None);
        };
        let b = l.journal.batches[pos].clone();
        let mut changed: Vec<PathBuf> = Vec::new();
        for f in &b.files {
            if !self.holds(&f.path, f.before.as_deref())? {
                changed.push(f.path.clone());
            }
        }
        // A post-image is stored when an undo overwrites it; one the undo left alone (the
        // file had changed) was never stored, and cannot be put back.
        let lost: Vec<String> = b
            .files
            .iter()
            .filter(|f| f.after.is_none() && f.after_sha256.is_some())
            .map(|f| f.path.display().to_string())
            .collect();
        if changed.is_empty() && !lost.is_empty() {
            return Err(format!(
                "nothing was redone: the agent's version of {} was not kept (the file had changed before the undo). No file was modified.",
                lost.join(", ")
            ));
        }
        let fp_same = l
            .journal
            .redo_fingerprint
            .as_deref()
            .is_some_and(|guard| self.unchanged_since(guard));
        if !changed.is_empty() || !fp_same {
            let what = if changed.is_empty() {
                "files in the project were edited or created after the undo".to_string()
            } else {
                format!(
                    "{} changed after the undo",
                    changed
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(format!(
                "nothing was redone: {what}, and a redo would overwrite that change. No file was modified."
            ));
        }
        let mut report = Report::default();
        let mut dirs = Dirs::new(&self.project);
        for f in &b.files {
            self.put(&f.path, f.after.as_deref(), &mut report, &mut dirs)?;
        }
        self.flush(&report)?;
        report.batches = 1;
        let mut redo = l.journal.redo.clone();
        redo.pop();
        let guard = (!redo.is_empty()).then(|| self.redo_guard());
        let done = Batch {
            undone: false,
            ..b.clone()
        };
        self.commit(l, restore(vec![done], redo, guard))?;
        Ok(Some((b, report)))
    }

    /// Reverts every batch made after checkpoint `id` (newest first). Returns the report.
    pub fn rewind_code(&self, id: u64) -> Result<Report, String> {
        let _lock = self.lock_journal()?;
        let l = self.load();
        let Some(cp) = l.journal.checkpoints.iter().find(|c| c.id == id).cloned() else {
            self.keep(l);
            return Err(format!("no checkpoint {id}"));
        };
        let mut report = Report::default();
        let todo: Vec<Batch> = (l.journal.batches.iter().rev())
            .filter(|b| b.id >= cp.first_batch && !b.undone)
            .cloned()
            .collect();
        let mut redo = l.journal.redo.clone();
        let mut done = Vec::new();
        for mut b in todo {
            let reverted = self.revert(&mut b, &mut report);
            if let Err(e) = reverted {
                done.push(b);
                let guard = l.journal.redo_fingerprint.clone();
                let _ = self.commit(l, restore(done, redo, guard));
                return Err(e);
            }
            b.undone = true;
            redo.push(b.id);
            done.push(b);
        }
        if report.batches == 0 {
            self.keep(l);
            return Ok(report);
        }
        self.commit(l, restore(done, redo, Some(self.redo_guard())))?;
        Ok(report)
    }

    /// Each file the session's batches touched, with its content before the first of them.
    pub fn session_start_images(&self, session: &str) -> BTreeMap<PathBuf, Option<String>> {
        let mut out = BTreeMap::new();
        self.peek(|j| {
            for b in j.batches.iter().filter(|b| b.session == session) {
                for f in &b.files {
                    out.entry(f.path.clone())
                        .or_insert_with(|| f.before.clone());
                }
            }
        });
        out
    }

    /// What a later /redo checks the project against, taken once an undo (or a redo or
    /// rewind that leaves more to redo) has written its last file: a change time where the
    /// project's file system stamps files to the nanosecond, else the fingerprint of the
    /// whole project.
    ///
    /// The change time makes an undo cost what its batch holds: the fingerprint stats every
    /// file of the project (half of a 1,000-file undo in a project of a few thousand files,
    /// most of it in a large tree). The walk moves to /redo, which is rarer.
    ///
    /// How the time is taken. The kernel stamps a change time (ctime, which no call can set
    /// back) from the coarse real-time clock, which lags the real time by up to a tick; since
    /// Linux 6.13 a file whose ctime was read gets the real time at its next change, and no
    /// later stamp is earlier than the latest such one. After the undo's last write the real
    /// time is read; then a marker file beside the journal is read and changed until its
    /// ctime is after that reading (twice on 6.13 and later; on an older kernel, until the
    /// coarse clock has passed it: one or two ticks). Every change before has a ctime no later
    /// than the reading, every change after a ctime at least the marker's
    /// (`redo_is_guarded_by_the_change_time_of_the_undo`).
    fn redo_guard(&self) -> String {
        if fine_timestamps(&self.project)
            && let Some((s, ns)) = self.change_mark()
        {
            return format!("{CHANGED_SINCE}{s}.{ns:09}");
        }
        self.fingerprint()
    }

    /// The marker's change time once it is after the real time read first (see
    /// [`Snapshots::redo_guard`]); `None` when that takes over 100 ms or the marker cannot
    /// be written.
    fn change_mark(&self) -> Option<(i64, i64)> {
        use std::io::Write as _;
        use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid clock id and out-pointer.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) } != 0 {
            return None;
        }
        let start = (now.tv_sec, now.tv_nsec);
        // Never through a link: the marker is yuyao's own file, and an undo must not append
        // to whatever a planted link names (then the fingerprint is taken instead).
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.journal.base_path().with_extension("redo-mark"))
            .ok()?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(100);
        for attempt in 0.. {
            // Reading the ctime asks the kernel for the real time at the next change.
            if f.metadata().ok()?.len() > 4096 {
                f.set_len(0).ok()?;
            }
            f.write_all(b".").ok()?;
            let m = f.metadata().ok()?;
            let stamp = (m.ctime(), m.ctime_nsec());
            if stamp > start {
                return Some(stamp);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_micros(250));
            }
        }
        None
    }

    /// Whether the project is as the undo left it: no file (the fingerprint's walk: ignore
    /// files honoured, `.git` and yuyao's folders left out) created or changed at or after
    /// the guard's change time, or, for a fingerprint guard, the same fingerprint. With a
    /// change time a file deleted since does not count (seed 002: "if a file was edited or
    /// created after /undo"); the batch's own files are checked one by one in any case.
    fn unchanged_since(&self, guard: &str) -> bool {
        let Some(since) = guard.strip_prefix(CHANGED_SINCE).and_then(parse_tick) else {
            return guard == self.fingerprint();
        };
        let mut folder = StatFolder::default();
        !self.project_files().any(|e| {
            folder.stat(e.path()).is_some_and(|st| {
                // A whole-second stamp in the guard's second may be a later change on a
                // file system that keeps seconds only (ext4 with small inodes).
                (st.st_ctime, st.st_ctime_nsec) >= since
                    || (st.st_ctime == since.0 && st.st_ctime_nsec == 0)
            })
        })
    }

    /// The files (not folders) a redo guard covers, in walk order: ignore files honoured,
    /// `.git` and yuyao's own folders left out, within the first [`FINGERPRINT_MAX`] walked
    /// entries. The
    /// fingerprint and the change-time check walk the same set, so switching a project
    /// between the two guards never changes what /redo protects.
    fn project_files(&self) -> impl Iterator<Item = ignore::DirEntry> + '_ {
        ignore::WalkBuilder::new(&self.project)
            .hidden(false)
            .git_ignore(true)
            .git_exclude(true)
            .require_git(false)
            .filter_entry(|e| {
                let n = e.file_name().to_str().unwrap_or("");
                !matches!(n, ".git" | ".trajectory")
            })
            .build()
            .filter_map(Result::ok)
            .take(FINGERPRINT_MAX)
            .filter(|e| {
                e.file_type().is_some_and(|t| !t.is_dir())
                    && !self.skip.iter().any(|s| e.path().starts_with(s))
            })
    }

    /// A fingerprint of the project's files (paths, sizes, modification times), honouring
    /// ignore files; `.git` and yuyao's own folders are left out.
    pub fn fingerprint(&self) -> String {
        let mut entries: Vec<String> = Vec::new();
        // Each file is stat'ed relative to its folder, opened once while the walk is in it:
        // no lookup of the whole path per file (an /undo of a large batch walks thousands).
        let mut folder = StatFolder::default();
        for e in self.project_files() {
            let p = e.path();
            if let Some((len, mtime)) = folder.regular_file(p) {
                entries.push(format!("{}\0{len}\0{mtime}", p.display()));
            }
        }
        entries.sort();
        let mut h = Sha256::new();
        for e in &entries {
            h.update(e.as_bytes());
            h.update(b"\n");
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The journal change of an undo, redo or rewind.
fn restore(batches: Vec<Batch>, redo: Vec<u64>, redo_fingerprint: Option<String>) -> Change {
    Change::Restore {
        batches,
        redo,
        redo_fingerprint,
    }
}

/// How many walked entries the fingerprint and the change-time check cover.
const FINGERPRINT_MAX: usize = 200_000;

/// The prefix of a redo guard that is a change time (`<seconds>.<nanoseconds>`).
const CHANGED_SINCE: &str = "changed-since:";

fn parse_tick(s: &str) -> Option<(i64, i64)> {
    let (sec, ns) = s.split_once('.')?;
    Some((sec.parse().ok()?, ns.parse().ok()?))
}

/// Whether the file system holding `path` stamps change times to the nanosecond (the local
/// Linux file systems that do; on others — FAT, network file systems, FUSE — a ctime may be
/// rounded down to before the guard, so the fingerprint is used there).
fn fine_timestamps(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    const FINE: [u32; 8] = [
        0xEF53,     // ext2/3/4
        0x58465342, // xfs
        0x9123683E, // btrfs
        0x01021994, // tmpfs
        0x794C7630, // overlayfs
        0x2FC12FC1, // zfs
        0xF2F52010, // f2fs
        0xCA451A4E, // bcachefs
    ];
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a zeroed statfs is a valid out-parameter.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: NUL-terminated path and out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    // f_type is a signed word on some targets: compare its low 32 bits.
    FINE.contains(&(st.f_type as u32))
}

/// The folder the fingerprint walk is in, open for `fstatat` on its files.
#[derive(Default)]
struct StatFolder(Option<(PathBuf, Option<std::fs::File>)>);

impl StatFolder {
    /// Size and modification time (ns since the epoch, 0 before it) of `path` when it is a
    /// regular file (a link is not followed).
    fn regular_file(&mut self, path: &Path) -> Option<(u64, u128)> {
        let st = self.stat(path)?;
        let mtime = if st.st_mtime < 0 {
            0
        } else {
            st.st_mtime as u128 * 1_000_000_000 + st.st_mtime_nsec as u128
        };
        Some((st.st_size as u64, mtime))
    }

    /// The `lstat` of `path` when it is a regular file (a link is not followed).
    fn stat(&mut self, path: &Path) -> Option<libc::stat> {
        use std::os::fd::AsRawFd as _;
        use std::os::unix::ffi::OsStrExt as _;
        let (dir, name) = (path.parent()?, path.file_name()?);
        if self.0.as_ref().is_none_or(|(d, _)| d != dir) {
            use std::os::unix::fs::OpenOptionsExt as _;
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
                .open(dir)
                .ok();
            self.0 = Some((dir.to_path_buf(), f));
        }
        let fd = self.0.as_ref()?.1.as_ref()?.as_raw_fd();
        let name = std::ffi::CString::new(name.as_bytes()).ok()?;
        // SAFETY: a zeroed stat is a valid out-parameter.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid descriptor, NUL-terminated name and out-pointer.
        if unsafe { libc::fstatat(fd, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0
            || st.st_mode & libc::S_IFMT != libc::S_IFREG
        {
            return None;
        }
        Some(st)
    }
}

/// Writes atomically, keeping the file's permissions when it exists. Inside the project no
/// symbolic link is followed (`beneath.rs`): the agent may have replaced a folder of the
/// path with a link since the batch, and a restore must not land where it points. Not
/// synced one by one: [`Snapshots::flush`] makes a whole restore durable with one call.
fn write_keeping_mode(project: &Path, path: &Path, bytes: &[u8]) -> Result<(), String> {
    let perms = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions());
    let written = if path.starts_with(project) {
        crate::beneath::write_atomic_unsynced(&[project], path, bytes)
    } else {
        crate::write_atomic(path, bytes)
    };
    written.map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    if let Some(p) = perms {
        let _ = std::fs::set_permissions(path, p);
    }
    Ok(())
}

/// A file that differs from git HEAD: its path, HEAD content and work-tree content
/// (`None`: absent).
pub type HeadChange = (PathBuf, Option<Vec<u8>>, Option<Vec<u8>>);

/// Files that differ between git HEAD and the work tree, with both contents (`None`: absent).
/// Reads the repository only: no index, ref or object is written.
pub fn head_changes(project: &Path) -> Result<Vec<HeadChange>, String> {
    let repo = git2::Repository::open(project).map_err(git_err)?;
    let tree = repo.head().ok().and_then(|h| h.peel_to_tree().ok());
    let mut opts = git2::DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .ignore_submodules(true);
    let diff = repo
        .diff_tree_to_workdir(tree.as_ref(), Some(&mut opts))
        .map_err(git_err)?;
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for d in diff.deltas() {
        let rel = d
            .new_file()
            .path()
            .or_else(|| d.old_file().path())
            .map(Path::to_path_buf);
        let Some(rel) = rel else { continue };
        let old = match d.status() {
            git2::Delta::Added | git2::Delta::Untracked => None,
            _ => repo
                .find_blob(d.old_file().id())
                .ok()
                .map(|b| b.content().to_vec()),
        };
        let abs = workdir.join(&rel);
        let new = disk(&abs)?;
        if old == new {
            continue;
        }
        out.push((abs, old, new));
    }
    Ok(out)
}

/// A unified diff of two versions of a file (`similar`), or a note for binary content.
pub fn unified_diff(shown: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    let is_bin = |b: Option<&[u8]>| b.is_some_and(|b| b.iter().take(8192).any(|&c| c == 0));
    if is_bin(old) || is_bin(new) {
        return format!("Binary file {shown} differs\n");
    }
    let o = String::from_utf8_lossy(old.unwrap_or_default());
    let n = String::from_utf8_lossy(new.unwrap_or_default());
    let (a, b) = (
        if old.is_some() {
            format!("a/{shown}")
        } else {
            "/dev/null".to_string()
        },
        if new.is_some() {
            format!("b/{shown}")
        } else {
            "/dev/null".to_string()
        },
    );
    similar::TextDiff::from_lines(o.as_ref(), n.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&a, &b)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_sessions_do_not_lose_checkpoints() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (h, p) = (home.path().to_path_buf(), proj.path().to_path_buf());
                std::thread::spawn(move || {
                    let s = Snapshots::open(&h, &p).unwrap();
                    for i in 0..10 {
                        s.add_checkpoint(&format!("s{t}"), &format!("p{i}"), 0)
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        assert_eq!(s.checkpoints().len(), 40);
    }

    #[test]
    fn undo_redo_and_external_changes() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let a = proj.path().join("a.txt");
        let b = proj.path().join("b.txt");
        std::fs::write(&a, "one\n").unwrap();
        let pre = vec![s.capture(&a).unwrap(), s.capture(&b).unwrap()];
        std::fs::write(&a, "two\n").unwrap();
        std::fs::write(&b, "new\n").unwrap();
        let batch = s.record_batch("s1", &pre, &|_| None).unwrap().unwrap();
        assert_eq!(batch.files.len(), 2);
        let (_, r) = s.undo().unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "one\n");
        assert!(!b.exists());
        assert_eq!(r.removed, vec![b.clone()]);
        s.redo().unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "two\n");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "new\n");
        // A user edit after the batch: undo leaves that file alone.
        std::fs::write(&a, "user\n").unwrap();
        let (_, r) = s.undo().unwrap().unwrap();
        assert_eq!(r.skipped, vec![a.clone()]);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "user\n");
        assert!(!b.exists());
        // A file created after the undo: redo is a no-op.
        std::fs::write(proj.path().join("c.txt"), "c").unwrap();
        assert!(s.redo().is_err());
        assert!(!b.exists());
        // The user's repository gets nothing.
        assert!(!proj.path().join(".git").exists());
    }

    /// The guard an undo leaves for /redo is a change time on a file system with fine
    /// timestamps: a file created or edited after the undo stops the redo, an ignored file or
    /// the deletion of another file does not; a guard written as a fingerprint (an earlier
    /// journal) is still compared as one.
    #[test]
    fn redo_is_guarded_by_the_change_time_of_the_undo() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let root = proj.path();
        if !fine_timestamps(root) {
            eprintln!("SKIPPED: the temp folder's file system has no fine timestamps");
            return;
        }
        std::fs::write(root.join(".gitignore"), "*.pyc\n").unwrap();
        std::fs::write(root.join("other.txt"), "other").unwrap();
        std::fs::write(root.join("kept.txt"), "kept").unwrap();
        let s = Snapshots::open(home.path(), root).unwrap();
        let a = root.join("a.txt");
        let b = root.join("b.txt");
        std::fs::write(&b, "b1\n").unwrap();
        let batch = |s: &Snapshots| {
            let pre = vec![s.capture(&a).unwrap(), s.capture(&b).unwrap()];
            std::fs::write(&a, "agent\n").unwrap();
            std::fs::write(&b, "b2\n").unwrap();
            // Read back, as a tool does: the next change of b gets a fine stamp.
            std::fs::metadata(&b).unwrap();
            s.record_batch("s", &pre, &|_| None).unwrap().unwrap();
            s.undo().unwrap().unwrap();
            assert!(!a.exists());
            assert_eq!(std::fs::read_to_string(&b).unwrap(), "b1\n");
            s.peek(|j| j.redo_fingerprint.clone()).unwrap()
        };
        for _ in 0..20 {
            // What the undo itself wrote never counts as a later change.
            let guard = batch(&s);
            assert!(guard.starts_with(CHANGED_SINCE), "{guard}");
            s.redo().unwrap().unwrap();
            std::fs::remove_file(&a).unwrap();
            std::fs::write(&b, "b1\n").unwrap();
        }
        batch(&s);
        // An ignored file and a deleted one: the redo goes ahead.
        std::fs::write(root.join("cache.pyc"), "x").unwrap();
        std::fs::remove_file(root.join("other.txt")).unwrap();
        s.redo().unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "agent\n");
        // An edit of a file the batch did not touch, right after the undo: no redo.
        std::fs::remove_file(&a).unwrap();
        std::fs::write(&b, "b1\n").unwrap();
        batch(&s);
        std::fs::write(root.join("kept.txt"), "user").unwrap();
        let err = s.redo().unwrap_err();
        assert!(err.contains("after the undo"), "{err}");
        assert!(!a.exists());
        // A guard from an earlier journal: the fingerprint, compared as before.
        let l = s.load();
        let (redo, guard) = (l.journal.redo.clone(), Some(s.fingerprint()));
        s.commit(l, restore(Vec::new(), redo, guard)).unwrap();
        s.redo().unwrap().unwrap();
        assert!(a.exists());
    }

    /// A link planted where the redo marker goes is never written through: the undo takes
    /// the fingerprint instead, and the linked file keeps its bytes.
    #[test]
    fn the_redo_marker_is_never_written_through_a_link() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim.txt");
        std::fs::write(&victim, "keep").unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        std::os::unix::fs::symlink(&victim, s.journal.base_path().with_extension("redo-mark"))
            .unwrap();
        let a = proj.path().join("a.txt");
        let pre = vec![s.capture(&a).unwrap()];
        std::fs::write(&a, "agent\n").unwrap();
        s.record_batch("s", &pre, &|_| None).unwrap().unwrap();
        s.undo().unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let guard = s.peek(|j| j.redo_fingerprint.clone()).unwrap();
        assert!(!guard.starts_with(CHANGED_SINCE), "{guard}");
        s.redo().unwrap().unwrap();
        assert!(a.exists());
    }

    /// The agent deletes `src/a.txt`, then replaces `src` with a link to a folder outside:
    /// /undo must not restore the file there.
    #[test]
    fn undo_never_writes_through_a_folder_replaced_with_a_link() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        std::fs::create_dir(proj.path().join("src")).unwrap();
        let a = proj.path().join("src/a.txt");
        std::fs::write(&a, "payload\n").unwrap();
        let pre = vec![s.capture(&a).unwrap()];
        std::fs::remove_file(&a).unwrap();
        s.record_batch("s1", &pre, &|_| None).unwrap().unwrap();
        std::fs::remove_dir(proj.path().join("src")).unwrap();
        std::os::unix::fs::symlink(outside.path(), proj.path().join("src")).unwrap();
        let e = s.undo().unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!outside.path().join("a.txt").exists());
    }

    /// Images in the chunked store (manifests), and the bytes of its chunks.
    fn cas_usage(home: &Path) -> (usize, u64) {
        let mut manifests = 0;
        let mut bytes = 0;
        for e in std::fs::read_dir(home.join("snapshots")).unwrap().flatten() {
            let root = e.path().join(cas::DIR);
            if let Ok(d) = std::fs::read_dir(root.join("m")) {
                manifests += d.count();
            }
            for fan in std::fs::read_dir(root.join("c"))
                .into_iter()
                .flatten()
                .flatten()
            {
                for c in std::fs::read_dir(fan.path()).unwrap().flatten() {
                    bytes += c.metadata().unwrap().len();
                }
            }
        }
        (manifests, bytes)
    }

    /// Text that compresses like source code does, and whose cut points follow its content.
    fn text(lines: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut out = Vec::new();
        for i in 0..lines {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(
                format!("    let v{i} = compute({}, \"{:x}\");\n", x % 1000, x >> 40).as_bytes(),
            );
        }
        out
    }

    #[test]
    fn a_large_file_is_stored_once_and_undo_redo_stay_exact() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let big = proj.path().join("big.txt");
        let v1: Vec<u8> = (0..3_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut v2 = v1.clone();
        v2[1_500_000] = b'#';
        let mut v3 = v2.clone();
        v3.truncate(2_000_000);
        std::fs::write(&big, &v1).unwrap();
        // Batch 1: one byte changed (same size). Only the pre-image is stored.
        let pre = vec![s.capture(&big).unwrap()];
        assert!(pre[0].blob.as_deref().unwrap().starts_with(cas::PREFIX));
        std::fs::write(&big, &v2).unwrap();
        let b1 = s.record_batch("s", &pre, &|_| None).unwrap().unwrap();
        assert_eq!(b1.files[0].after, None);
        assert_eq!(
            b1.files[0].after_sha256.as_deref(),
            Some(hex(&Sha256::digest(&v2)).as_str())
        );
        assert_eq!(cas_usage(home.path()).0, 1);
        // Batch 2 on the same file, its post-image hash handed over by the tool.
        let pre = vec![s.capture(&big).unwrap()];
        std::fs::write(&big, &v3).unwrap();
        let h3: [u8; 32] = Sha256::digest(&v3).into();
        s.record_batch("s", &pre, &|_| Some(h3)).unwrap().unwrap();
        // A file captured and left alone is no batch.
        let pre = vec![s.capture(&big).unwrap()];
        assert!(s.record_batch("s", &pre, &|_| None).unwrap().is_none());
        // v1, v2, and v3 (captured, unchanged: kept until the retention pass).
        assert_eq!(cas_usage(home.path()).0, 3);
        // Undo twice: v3 -> v2 -> v1, each post-image stored on the way for /redo.
        s.undo().unwrap().unwrap();
        assert_eq!(std::fs::read(&big).unwrap(), v2);
        let (_, r) = s.undo().unwrap().unwrap();
        assert_eq!(r.restored, vec![big.clone()]);
        assert_eq!(std::fs::read(&big).unwrap(), v1);
        // The post-images the undos stored are v3 and v2, already there by content.
        assert_eq!(cas_usage(home.path()).0, 3);
        s.redo().unwrap().unwrap();
        assert_eq!(std::fs::read(&big).unwrap(), v2);
        s.redo().unwrap().unwrap();
        assert_eq!(std::fs::read(&big).unwrap(), v3);
        // Undo once more, then a change the user made: redo refuses, nothing written.
        s.undo().unwrap().unwrap();
        std::fs::write(&big, b"user").unwrap();
        assert!(s.redo().unwrap_err().contains("changed after the undo"));
        assert_eq!(std::fs::read(&big).unwrap(), b"user");
    }

    #[test]
    fn a_post_image_the_undo_left_alone_is_never_redone_blindly() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let f = proj.path().join("f.txt");
        std::fs::write(&f, "v1\n").unwrap();
        let pre = vec![s.capture(&f).unwrap()];
        std::fs::write(&f, "agent\n").unwrap();
        s.record_batch("s", &pre, &|_| None).unwrap().unwrap();
        // The user put v1 back by hand: undo has nothing to do for it and stores nothing.
        std::fs::write(&f, "v1\n").unwrap();
        let (_, r) = s.undo().unwrap().unwrap();
        assert!(r.restored.is_empty() && r.skipped.is_empty());
        let e = s.redo().unwrap_err();
        assert!(e.contains("was not kept"), "{e}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "v1\n");
    }

    #[test]
    fn journals_with_stored_post_images_still_undo() {
        // The format before post-images were recorded by hash: `after` is a blob id.
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let f = proj.path().join("f.txt");
        std::fs::write(&f, "two\n").unwrap();
        let before = s.repo.blob(b"one\n").unwrap().to_string();
        let after = s.repo.blob(b"two\n").unwrap().to_string();
        let journal = serde_json::json!({
            "project": proj.path(), "next_batch": 2, "next_checkpoint": 1, "checkpoints": [],
            "redo": [], "redo_fingerprint": null,
            "batches": [{"id": 1, "session": "old", "checkpoint": null, "time": "t",
                         "undone": false,
                         "files": [{"path": f, "before": before, "after": after}]}]
        });
        std::fs::write(s.journal.base_path(), journal.to_string()).unwrap();
        s.undo().unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "one\n");
        s.redo().unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "two\n");
    }

    #[test]
    fn seven_edits_of_a_large_file_store_about_one_compressed_copy() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let big = proj.path().join("big.rs");
        let mut content = text(200_000, 7);
        std::fs::write(&big, &content).unwrap();
        let one_copy = zstd::bulk::compress(&content, 3).unwrap().len() as u64;
        assert!(one_copy * 3 < content.len() as u64, "text compresses");
        let mut versions = vec![content.clone()];
        for k in 0..7 {
            let pre = vec![s.capture(&big).unwrap()];
            // A one-line edit somewhere in the file, changing its length.
            let at = content.len() / 9 * (k + 1);
            let at = at + content[at..].iter().position(|&b| b == b'\n').unwrap() + 1;
            content.splice(at..at, format!("// edit {k}\n").into_bytes());
            std::fs::write(&big, &content).unwrap();
            s.record_batch("s", &pre, &|_| None).unwrap().unwrap();
            versions.push(content.clone());
        }
        let (images, bytes) = cas_usage(home.path());
        assert_eq!(images, 7);
        assert!(
            bytes < one_copy + one_copy / 2,
            "7 pre-images take {bytes} bytes, one compressed copy {one_copy}"
        );
        // Every version comes back byte for byte.
        for k in (0..7).rev() {
            s.undo().unwrap().unwrap();
            assert!(std::fs::read(&big).unwrap() == versions[k], "version {k}");
        }
    }

    #[test]
    fn the_same_content_is_one_object_across_files_and_batches() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let content = text(60_000, 3);
        let (a, b) = (proj.path().join("a.rs"), proj.path().join("b.rs"));
        std::fs::write(&a, &content).unwrap();
        std::fs::write(&b, &content).unwrap();
        let pre = vec![s.capture(&a).unwrap()];
        std::fs::write(&a, b"short").unwrap();
        s.record_batch("s1", &pre, &|_| None).unwrap().unwrap();
        let first = cas_usage(home.path());
        let pre = vec![s.capture(&b).unwrap()];
        std::fs::remove_file(&b).unwrap();
        s.record_batch("s2", &pre, &|_| None).unwrap().unwrap();
        assert_eq!(pre[0].blob, s.batches()[0].files[0].before);
        assert_eq!(cas_usage(home.path()), first);
        assert_eq!(first.0, 1);
        // Compressed, and read back whole.
        assert!(first.1 * 3 < content.len() as u64, "{} bytes", first.1);
        assert!(s.blob(pre[0].blob.as_deref().unwrap()).unwrap() == content);
        s.undo().unwrap().unwrap();
        s.undo().unwrap().unwrap();
        assert!(std::fs::read(&a).unwrap() == content && std::fs::read(&b).unwrap() == content);
    }

    #[test]
    fn large_images_stored_as_plain_copies_by_earlier_versions_still_restore() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let f = proj.path().join("big.bin");
        let old = text(40_000, 5);
        std::fs::write(&f, b"agent's version").unwrap();
        let raw = s.git_dir().join(RAW_DIR);
        std::fs::create_dir_all(&raw).unwrap();
        std::fs::write(raw.join("0123456789abcdef0123456789abcdef"), &old).unwrap();
        let journal = serde_json::json!({
            "project": proj.path(), "next_batch": 2, "next_checkpoint": 1, "checkpoints": [],
            "redo": [], "redo_fingerprint": null,
            "batches": [{"id": 1, "session": "old", "checkpoint": null, "time": "t",
                         "undone": false,
                         "files": [{"path": f, "before": "raw:0123456789abcdef0123456789abcdef",
                                    "after": null,
                                    "after_sha256": hex(&Sha256::digest(b"agent's version"))}]}]
        });
        std::fs::write(s.journal.base_path(), journal.to_string()).unwrap();
        let (_, r) = s.undo().unwrap().unwrap();
        assert_eq!(r.restored, vec![f.clone()]);
        assert!(std::fs::read(&f).unwrap() == old);
        // The agent's version, stored for /redo on the way (small: in a bundle).
        let after = s.batches()[0].files[0].after.clone().unwrap();
        assert!(after.starts_with(cas::PACK_PREFIX), "{after}");
        assert_eq!(s.blob(&after).unwrap(), b"agent's version");
        s.redo().unwrap().unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"agent's version");
    }

    #[test]
    fn a_damaged_object_fails_the_restore_naming_the_file_and_writes_nothing() {
        for damage in ["truncate", "flip"] {
            let home = tempfile::tempdir().unwrap();
            let proj = tempfile::tempdir().unwrap();
            let s = Snapshots::open(home.path(), proj.path()).unwrap();
            let f = proj.path().join("data.rs");
            std::fs::write(&f, text(60_000, 11)).unwrap();
            let pre = vec![s.capture(&f).unwrap()];
            std::fs::write(&f, b"agent").unwrap();
            s.record_batch("s", &pre, &|_| None).unwrap().unwrap();
            let chunks = s.git_dir().join(cas::DIR).join("c");
            let fan = std::fs::read_dir(&chunks).unwrap().next().unwrap().unwrap();
            let victim = std::fs::read_dir(fan.path())
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path();
            let mut bytes = std::fs::read(&victim).unwrap();
            if damage == "truncate" {
                bytes.truncate(bytes.len() / 2);
            } else {
                let mid = bytes.len() / 2;
                bytes[mid] ^= 0x55;
            }
            std::fs::write(&victim, &bytes).unwrap();
            let e = s.undo().unwrap_err();
            assert!(e.contains(&f.display().to_string()), "{damage}: {e}");
            assert!(
                e.contains("damaged") || e.contains("cannot"),
                "{damage}: {e}"
            );
            assert_eq!(std::fs::read(&f).unwrap(), b"agent", "{damage}");
            assert!(!s.batches()[0].undone);
        }
    }

    /// A new file of the batch replaced by a link to a file outside with the same bytes:
    /// /undo reads without following links, so it is not the batch's file and stays.
    #[test]
    fn undo_does_not_read_or_remove_through_a_link_planted_at_a_new_file() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let a = proj.path().join("a.txt");
        let pre = vec![s.capture(&a).unwrap()];
        std::fs::write(&a, "secret\n").unwrap();
        s.record_batch("s", &pre, &|_| None).unwrap().unwrap();
        let target = outside.path().join("secret.txt");
        std::fs::write(&target, "secret\n").unwrap();
        std::fs::remove_file(&a).unwrap();
        std::os::unix::fs::symlink(&target, &a).unwrap();
        let (_, r) = s.undo().unwrap().unwrap();
        assert_eq!(r.skipped, vec![a.clone()]);
        assert!(r.removed.is_empty());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "secret\n");
        assert!(a.symlink_metadata().unwrap().file_type().is_symlink());
    }

    /// The capture hands back what it stored, with the stamp of the descriptor it read and
    /// the SHA-256; with the tool's hash of what it wrote, the batch's end needs no read to
    /// tell a change from a rewrite of the same bytes.
    #[test]
    fn a_capture_gives_back_its_bytes_and_their_hash_decides_the_change() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        for size in [100usize, CHUNKED_FROM as usize + 10] {
            let f = proj.path().join(format!("f{size}.rs"));
            let v1 = text(size / 20 + 1, 9)[..size].to_vec();
            std::fs::write(&f, &v1).unwrap();
            let (pre, bytes) = s.capture_read(&f).unwrap();
            assert!(bytes.as_deref() == Some(&v1[..]));
            let h1: [u8; 32] = Sha256::digest(&v1).into();
            assert_eq!(pre.sha256, Some(h1));
            let (stamp, _) = pre.stamp.unwrap();
            assert_eq!(stamp, Stamp::of_path(&f).unwrap());
            assert!(s.blob(pre.blob.as_deref().unwrap()).unwrap() == v1);
            // The same bytes written again (a new stamp): no change, no batch.
            std::thread::sleep(std::time::Duration::from_millis(20));
            std::fs::write(&f, &v1).unwrap();
            let pre = vec![pre];
            assert!(s.record_batch("s", &pre, &|_| Some(h1)).unwrap().is_none());
            // Other bytes, their hash known: a batch, the post-image recorded by that hash.
            let mut v2 = v1.clone();
            v2[size / 2] ^= 1;
            std::fs::write(&f, &v2).unwrap();
            let h2: [u8; 32] = Sha256::digest(&v2).into();
            let b = s.record_batch("s", &pre, &|_| Some(h2)).unwrap().unwrap();
            assert_eq!(b.files[0].after_sha256.as_deref(), Some(hex(&h2).as_str()));
            s.undo().unwrap().unwrap();
            assert!(std::fs::read(&f).unwrap() == v1);
        }
        // A link at the name is not followed: what it points to is not kept.
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "secret").unwrap();
        let link = proj.path().join("link.rs");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let e = s.capture_read(&link).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        // Absent: nothing read, nothing hashed.
        let (pre, bytes) = s.capture_read(&proj.path().join("new/x.rs")).unwrap();
        assert!(bytes.is_none() && pre.sha256.is_none() && pre.blob.is_none());
        assert_eq!(pre.new_dirs, vec![proj.path().join("new")]);
    }

    /// Folders a batch created are removed once each after all its files, deepest first.
    #[test]
    fn undo_removes_the_nested_folders_a_batch_created() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let s = Snapshots::open(home.path(), proj.path()).unwrap();
        let kept = proj.path().join("x/keep");
        let paths: Vec<PathBuf> = ["x/y/z/1.txt", "x/y/2.txt", "x/3.txt", "w/4.txt"]
            .iter()
            .map(|p| proj.path().join(p))
            .collect();
        let pre: Vec<PreImage> = paths.iter().map(|p| s.capture(p).unwrap()).collect();
        for p in &paths {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "n\n").unwrap();
        }
        s.record_batch("s", &pre, &|_| None).unwrap().unwrap();
        let (_, r) = s.undo().unwrap().unwrap();
        assert_eq!(r.removed.len(), 4);
        for d in ["x", "w"] {
            assert!(!proj.path().join(d).exists(), "{d}");
        }
        // A folder holding something else stays.
        let pre = vec![s.capture(&proj.path().join("x/5.txt")).unwrap()];
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(proj.path().join("x/5.txt"), "n\n").unwrap();
        s.record_batch("s", &pre, &|_| None).unwrap().unwrap();
        s.undo().unwrap().unwrap();
        assert!(kept.is_dir() && !proj.path().join("x/5.txt").exists());
    }

    /// The fingerprint /redo compares, stat'ed relative to each folder: the same digest as a
    /// walk that stats every path whole (what journals written before hold), and it moves
    /// with any size, time, new or deleted file, never with an ignored one or a link.
    #[test]
    fn the_fingerprint_sees_every_file_change_and_matches_a_whole_path_walk() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let root = proj.path();
        let s = Snapshots::open(home.path(), root).unwrap();
        let whole_path = || {
            let mut entries: Vec<String> = Vec::new();
            let walker = ignore::WalkBuilder::new(root)
                .hidden(false)
                .require_git(false)
                .filter_entry(|e| !matches!(e.file_name().to_str(), Some(".git" | ".trajectory")))
                .build();
            for e in walker.filter_map(Result::ok) {
                if let Ok(m) = e.metadata()
                    && m.is_file()
                {
                    let t = m.modified().unwrap().duration_since(std::time::UNIX_EPOCH);
                    let mtime = t.unwrap().as_nanos();
                    entries.push(format!("{}\0{}\0{mtime}", e.path().display(), m.len()));
                }
            }
            entries.sort();
            let mut h = Sha256::new();
            for e in &entries {
                h.update(e.as_bytes());
                h.update(b"\n");
            }
            hex(&h.finalize())
        };
        for d in ["a/b", "c", ".git", ".trajectory"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "x.txt",
            "a/y.txt",
            "a/b/z.txt",
            "c/w.txt",
            ".hidden",
            ".git/HEAD",
        ] {
            std::fs::write(root.join(f), f).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "ignored.log\n").unwrap();
        std::os::unix::fs::symlink(root.join("x.txt"), root.join("link")).unwrap();
        let first = s.fingerprint();
        assert_eq!(first, whole_path());
        let mut seen = vec![first];
        let changes: [&dyn Fn(); 6] = [
            &|| std::fs::write(root.join("a/b/z.txt"), "longer").unwrap(),
            &|| {
                let f = std::fs::File::options()
                    .write(true)
                    .open(root.join("c/w.txt"));
                let t = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
                f.unwrap().set_modified(t).unwrap();
            },
            &|| std::fs::write(root.join("a/new.txt"), "n").unwrap(),
            &|| std::fs::remove_file(root.join("x.txt")).unwrap(),
            &|| std::fs::write(root.join(".hidden"), "other").unwrap(),
            &|| std::fs::write(root.join(".trajectory/t.jsonl"), "t").unwrap(),
        ];
        for (k, change) in changes.iter().enumerate() {
            change();
            let now = s.fingerprint();
            assert_eq!(now, whole_path(), "change {k}");
            // The trace folder (last change) is left out; everything else moves it.
            assert_eq!(seen.contains(&now), k == 5, "change {k}");
            seen.push(now);
        }
        let before = s.fingerprint();
        std::fs::write(root.join("ignored.log"), "x").unwrap();
        std::fs::write(root.join(".git/HEAD"), "changed").unwrap();
        assert_eq!(s.fingerprint(), before);
    }

    /// The journal kept in memory is used only while its base is the same file, unchanged
    /// (inode, size, modification and change times), and its log has only grown: another
    /// session's change is always read.
    #[test]
    fn a_journal_changed_by_another_session_is_read_again() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let (s1, s2) = (
            Snapshots::open(home.path(), proj.path()).unwrap(),
            Snapshots::open(home.path(), proj.path()).unwrap(),
        );
        let f = proj.path().join("f.txt");
        let pre = vec![s1.capture(&f).unwrap()];
        std::fs::write(&f, "one\n").unwrap();
        s1.record_batch("s1", &pre, &|_| None).unwrap().unwrap();
        assert_eq!(s1.batches().len(), 1);
        // The other session undoes it: the first one sees the batch undone.
        s2.undo().unwrap().unwrap();
        assert!(!f.exists());
        assert!(s1.batches()[0].undone);
        assert!(s1.undo().unwrap().is_none());
        // A checkpoint added by the other session is there for the first one's next write.
        s2.add_checkpoint("s2", "p", 0).unwrap();
        s1.add_checkpoint("s1", "q", 0).unwrap();
        assert_eq!(s2.checkpoints().len(), 2);
        // The same length, other bytes (written in place): read again, not taken from memory.
        s1.settle().unwrap();
        let text = std::fs::read_to_string(s1.journal.base_path()).unwrap();
        let edited = text.replace("\"p\"", "\"P\"");
        assert_eq!(edited.len(), text.len());
        std::fs::write(s1.journal.base_path(), edited).unwrap();
        assert_eq!(s1.checkpoints()[0].prompt, "P");
    }
}
