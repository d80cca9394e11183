//! File tools: read, write, edit, multi-edit. Read-before-write is enforced with the file's
//! stamp (inode, size, mtime, ctime) seen at read time, and the content hash when the stamp
//! cannot vouch alone (`freshness`), so an external change since the read is detected.
//! Text is read page by page (`page`).

use crate::args::{EditItem, EditParams, MultiEditParams, ReadParams, ToolArgs, WriteParams};
use crate::edit_engine::{EditSpec, apply_edits};
use crate::freshness::{FileKnowledge, Stale, Stamp, verify_hashed};
use crate::{Tool, ToolContext, ToolOutput, content_hash};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::ffi::CString;
use std::io::{BufRead, Read as _, Seek as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

const DEFAULT_LIMIT: usize = 2000;
/// Largest slice of a file one read returns, in bytes; past it the read is paginated. A page
/// is the model's own request (offset/limit) and ends with an exact continuation hint, so the
/// result cap (`tools.output_chars`) does not cut it again (the core's final cap leaves read's results alone).
pub const READ_BYTES_CAP: usize = 29_000;

pub struct Read;
pub struct Write;
pub struct Edit;
pub struct MultiEdit;

fn path_schema() -> Value {
    json!({"type": "string"})
}

impl Tool for Read {
    fn name(&self) -> &'static str {
        "read"
    }
    fn description(&self) -> &'static str {
        "Read a file with line numbers (N<TAB>line): 2000 lines by default, offset (1-based line) and limit for more. Images are shown to you; PDFs by pages (at most 20 a call); notebooks with cells and outputs."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": path_schema(),
                "offset": {"type": "integer"},
                "limit": {"type": "integer"},
                "pages": {"type": "string", "description": "PDF pages, e.g. \"1-5\""}
            },
            "required": ["file_path"]
        })
    }
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        match args {
            ToolArgs::Read(a) => read(a, ctx).unwrap_or_else(ToolOutput::err),
            other => mismatched("read", other),
        }
    }
}

/// A tool handed another tool's arguments (a dispatch bug, never the model's doing).
pub(crate) fn mismatched(name: &str, args: &ToolArgs) -> ToolOutput {
    ToolOutput::err(format!(
        "internal error: {name} was given the arguments of {}",
        args.tool()
    ))
}

/// Largest file read whole (images, PDFs, notebooks); text files are streamed page by page.
const WHOLE_READ_CAP: u64 = 64 * 1024 * 1024;

fn read(a: &ReadParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let (offset, limit, pages) = (a.offset, a.limit, a.pages.clone());
    if let Some(o) = offset
        && o < 1
    {
        return Err(format!(
            "offset must be 1 or more (a 1-based line number), got {o}"
        ));
    }
    if let Some(l) = limit
        && l < 1
    {
        return Err(format!("limit must be 1 or more, got {l}"));
    }
    let path = ctx.resolve(&a.file_path);
    let file = open_for_read(&path)?;
    // Taken before reading: a change during the read shows as a different stamp later.
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let stamp = Stamp::of(&meta);
    let racy = stamp.racy_at(std::time::SystemTime::now());
    let size = meta.len();
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    // The first block decides what the file is; only text is streamed.
    let head = reader
        .fill_buf()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .to_vec();
    let ext = extension(&path);
    if pages.is_some() && ext != "pdf" {
        return Err(format!(
            "pages applies to PDF files only; {} is not a PDF. Use offset and limit for text files.",
            path.display()
        ));
    }
    let image = crate::media::is_image(&path, &head);
    let pdf = ext == "pdf" || head.starts_with(b"%PDF-");
    let notebook = ext == "ipynb" && offset.is_none() && limit.is_none();
    if image || pdf || notebook {
        if size > WHOLE_READ_CAP {
            return Err(format!(
                "{} is too large to read whole ({size} bytes, at most {WHOLE_READ_CAP})",
                path.display()
            ));
        }
        let mut bytes = Vec::with_capacity(size as usize);
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let out = if image {
            crate::media::read_image(&path, &bytes)?
        } else if pdf {
            crate::media::read_pdf(&path, &bytes, pages.as_deref())?
        } else {
            let shown = path.display().to_string();
            ToolOutput::ok(crate::notebook::render_notebook(&bytes, &shown)?)
        };
        ctx.know(
            &path,
            FileKnowledge::new(stamp, Some(content_hash(&bytes)), true),
        );
        return Ok(out);
    }
    if head.iter().take(8192).any(|&b| b == 0) {
        return Err(format!(
            "{} is a binary file ({size} bytes); its bytes are not text. Inspect it with bash (file, xxd | head) if needed.",
            path.display(),
        ));
    }
    let start = offset.unwrap_or(1) as usize;
    let want = limit.map(|l| l as usize).unwrap_or(DEFAULT_LIMIT);
    // A racy stamp cannot vouch for the content later: then the page comes from a pass over
    // the whole file that also hashes it (see `freshness`). Otherwise the read starts at the
    // nearest line start an earlier read learnt and stops after the page.
    let at = if racy {
        (1, 0)
    } else {
        ctx.line_marks
            .lock()
            .map(|m| m.nearest(&path, &stamp, start))
            .unwrap_or((1, 0))
    };
    if at.1 > 0 {
        reader
            .seek(std::io::SeekFrom::Start(at.1))
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    }
    let q = crate::page::Request {
        start,
        want,
        byte_cap: match ctx
            .read_page_bytes
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            0 => READ_BYTES_CAP,
            n => n.min(READ_BYTES_CAP),
        },
        at,
        size,
        whole: racy,
    };
    let page = crate::page::stream_page(&mut reader, &q)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !racy && let Ok(mut m) = ctx.line_marks.lock() {
        m.add(&path, stamp, &page.marks);
    }
    let full = start == 1 && page.total.is_some_and(|t| page.end == t);
    ctx.know(
        &path,
        FileKnowledge {
            stamp,
            racy,
            hash: page.hash,
            read_in_full: full,
        },
    );
    if page.total == Some(0) {
        if let Some(o) = offset
            && o > 1
        {
            return Err(format!(
                "offset {o} is past the end: {} is empty (0 lines)",
                path.display()
            ));
        }
        return Ok(ToolOutput::ok(format!(
            "(file {} is empty: 0 lines)",
            path.display()
        )));
    }
    if let Some(total) = page.total
        && start > total
    {
        return Err(format!(
            "offset {start} is past the end: {} has {total} line{}",
            path.display(),
            if total == 1 { "" } else { "s" }
        ));
    }
    let (mut out, end) = (page.text, page.end);
    match page.total {
        Some(total) if end < total => out.push_str(&format!(
            "\n(lines {start}–{end} of {total}; continue with offset={})\n",
            end + 1
        )),
        Some(_) => {}
        None => {
            // Counting every line would cost a read of the whole file: estimated instead.
            let estimate = (page.lines_seen as u64).saturating_mul(size) / page.bytes.max(1);
            out.push_str(&format!(
                "\n(lines {start}–{end} of about {estimate}, estimated from the file's {size} bytes; continue with offset={})\n",
                end + 1
            ));
        }
    }
    Ok(ToolOutput::ok(out))
}

/// Opens a resolved path for reading with no symlink followed anywhere on the way (a link
/// swapped in after the path was resolved and judged makes the open fail), with errors that
/// say what to do.
pub fn open_for_read(path: &Path) -> Result<std::fs::File, String> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(format!(
                "{} is a directory, not a file; list it with glob or bash ls",
                path.display()
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "{} does not exist.{}",
                path.display(),
                suggest_near(path)
            ));
        }
        Err(e) => return Err(format!("cannot access {}: {e}", path.display())),
    }
    // O_NONBLOCK: opening a named pipe for reading would otherwise wait for a writer that
    // may never come (a model can plant one with `mkfifo`); what is opened is then checked to
    // be a regular file, so neither a pipe nor a device (`/dev/zero`: endless) is read.
    let file = match nofollow::open(path, libc::O_RDONLY | libc::O_NONBLOCK, 0) {
        Ok(fd) => std::fs::File::from(fd),
        Err(e) => return Err(open_error(path, "reading", &e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot access {}: {e}", path.display()))?;
    if !meta.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        let what = if t.is_fifo() {
            "a named pipe"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(format!(
            "{} is {what}; only regular files are read",
            path.display()
        ));
    }
    // Back to blocking reads (the flag means nothing for a regular file, but is not kept).
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl on a descriptor this function owns; no memory is passed.
    unsafe {
        let fd = file.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

fn open_error(path: &Path, doing: &str, e: &std::io::Error) -> String {
    // The fallback walk meets a swapped-in folder link as "not a directory".
    let link_on_path = || {
        path.ancestors()
            .any(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()))
    };
    match e.raw_os_error() {
        Some(libc::ENOTDIR) if link_on_path() => format!(
            "{} changed while it was being opened (a symbolic link appeared on its path); refusing to follow it",
            path.display()
        ),
        Some(libc::ELOOP) | Some(libc::EXDEV) => format!(
            "{} changed while it was being opened (a symbolic link appeared on its path); refusing to follow it",
            path.display()
        ),
        Some(libc::EACCES) | Some(libc::EPERM) => {
            format!("permission denied {doing} {}", path.display())
        }
        _ => format!("cannot open {} for {doing}: {e}", path.display()),
    }
}

/// SHA-256 of a file's content, streamed (memory stays small whatever the size).
pub fn hash_file(path: &Path) -> Option<[u8; 32]> {
    let f = open_for_read(path).ok()?;
    let mut r = std::io::BufReader::with_capacity(64 * 1024, f);
    let mut h = Sha256::new();
    loop {
        let chunk = r.fill_buf().ok()?;
        if chunk.is_empty() {
            break;
        }
        h.update(chunk);
        let n = chunk.len();
        r.consume(n);
    }
    Some(h.finalize().into())
}

/// Reads a whole file (resolved path, no symlink followed) with errors that say what to do.
pub fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    read_file_stamped(path).map(|(b, _)| b)
}

/// [`read_file`] with the file's stamp, taken on the descriptor before reading.
pub fn read_file_stamped(path: &Path) -> Result<(Vec<u8>, Stamp), String> {
    let f = open_for_read(path)?;
    let meta = f
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    read_opened(f, &meta, path)
}

/// The content of an existing file a tool is about to change, with its stamp and, when known,
/// its SHA-256.
pub(crate) struct Current {
    pub bytes: std::sync::Arc<Vec<u8>>,
    pub stamp: Stamp,
    pub sha256: Option<[u8; 32]>,
}

impl Current {
    /// Whether the session may change it (read before, unchanged since: [`check_fresh`]).
    pub fn check_fresh(&self, ctx: &ToolContext, path: &Path) -> Result<(), String> {
        check_fresh_hashed(ctx, path, &self.stamp, &self.bytes, self.sha256)
    }
}

/// [`read_file_stamped`], or the bytes the snapshot read just before this call
/// ([`crate::PreRead`]) when they are provably the file's content: the file, opened here
/// without following links, has the very stamp they were read under, and that stamp was not
/// racy (any change since would have moved its ctime; `freshness.rs`). Otherwise the file is
/// read from the descriptor opened here. One read of a large file per edit (seed 002 §3).
pub(crate) fn read_current(ctx: &ToolContext, path: &Path) -> Result<Current, String> {
    let pre = ctx.take_pre_read(path);
    let f = open_for_read(path)?;
    let meta = f
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let stamp = Stamp::of(&meta);
    if let Some(pre) = pre
        && !pre.racy
        && pre.stamp == stamp
    {
        return Ok(Current {
            bytes: pre.bytes.clone(),
            stamp,
            sha256: pre.sha256,
        });
    }
    let (bytes, stamp) = read_opened(f, &meta, path)?;
    Ok(Current {
        bytes: std::sync::Arc::new(bytes),
        stamp,
        sha256: None,
    })
}

fn read_opened(
    mut f: std::fs::File,
    meta: &std::fs::Metadata,
    path: &Path,
) -> Result<(Vec<u8>, Stamp), String> {
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.read_to_end(&mut bytes).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => {
            format!("permission denied reading {}", path.display())
        }
        _ => format!("cannot read {}: {e}", path.display()),
    })?;
    Ok((bytes, Stamp::of(meta)))
}

/// Opening beneath `/` with no symlink followed: `openat2(RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` where the kernel has it (5.6+), else a walk
/// from the root directory, one `openat(O_NOFOLLOW)` per component. Paths given here are
/// already resolved (absolute, no `..`, no symlink), so any symlink met is one that appeared
/// after the check: the open fails instead of following it.
pub mod nofollow {
    use super::*;
    use std::io;
    use std::path::Component;

    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
    const RESOLVE_NO_SYMLINKS: u64 = 0x04;
    const RESOLVE_BENEATH: u64 = 0x08;

    pub(crate) fn cstr(s: &std::ffi::OsStr) -> io::Result<CString> {
        CString::new(s.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    }

    fn check(fd: libc::c_int) -> io::Result<OwnedFd> {
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            // SAFETY: a fresh descriptor the kernel just returned, owned by nobody else.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        }
    }

    fn root() -> io::Result<OwnedFd> {
        // SAFETY: a valid NUL-terminated path; the result is checked.
        check(unsafe {
            libc::open(
                c"/".as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })
    }

    /// The components of a resolved absolute path (refuses `..` and relative paths).
    fn parts(path: &Path) -> io::Result<Vec<CString>> {
        if !path.is_absolute() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut v = Vec::new();
        for c in path.components() {
            match c {
                Component::RootDir | Component::CurDir => {}
                Component::Normal(n) => v.push(cstr(n)?),
                _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
            }
        }
        Ok(v)
    }

    /// `openat2` beneath `dir`; `Ok(None)` when the kernel (or a seccomp filter) lacks it.
    fn openat2(dir: &OwnedFd, rel: &CString, flags: i32, mode: u32) -> io::Result<Option<OwnedFd>> {
        let how = OpenHow {
            flags: (flags | libc::O_CLOEXEC) as u64,
            mode: if flags & libc::O_CREAT != 0 {
                u64::from(mode)
            } else {
                0
            },
            resolve: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        // SAFETY: valid fd, NUL-terminated path and a properly sized open_how.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                rel.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::E2BIG) => Ok(None),
                _ => Err(e),
            };
        }
        check(fd as libc::c_int).map(Some)
    }

    /// `openat(dir, name, flags | O_NOFOLLOW)`.
    pub(crate) fn openat(
        dir: &OwnedFd,
        name: &CString,
        flags: i32,
        mode: u32,
    ) -> io::Result<OwnedFd> {
        // SAFETY: valid fd and NUL-terminated name; the result is checked.
        check(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        })
    }

    /// Opens `path` with `flags`, no symlink followed on any component.
    pub fn open(path: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
        let parts = parts(path)?;
        let dir = root()?;
        if parts.is_empty() {
            return openat(&dir, &cstr(std::ffi::OsStr::new("."))?, flags, mode);
        }
        let rel = cstr(path.strip_prefix("/").unwrap_or(path).as_os_str())?;
        if let Some(fd) = openat2(&dir, &rel, flags, mode)? {
            return Ok(fd);
        }
        walk(dir, &parts, flags, mode, false)
    }

    /// Opens the folder `path` (O_PATH), creating missing folders on the way, no symlink
    /// followed.
    pub fn open_dir(path: &Path, create: bool) -> io::Result<OwnedFd> {
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        match open(path, flags, 0) {
            Err(e) if create && e.raw_os_error() == Some(libc::ENOENT) => {
                walk(root()?, &parts(path)?, flags, 0, true)
            }
            other => other,
        }
    }

    /// The fallback walk alone (tests: the kernel here may have `openat2`).
    #[cfg(test)]
    pub fn open_walk(path: &Path, flags: i32) -> io::Result<OwnedFd> {
        walk(root()?, &parts(path)?, flags, 0, false)
    }

    fn walk(
        mut dir: OwnedFd,
        parts: &[CString],
        flags: i32,
        mode: u32,
        create: bool,
    ) -> io::Result<OwnedFd> {
        let dflags = libc::O_PATH | libc::O_DIRECTORY;
        for (k, name) in parts.iter().enumerate() {
            let last = k + 1 == parts.len();
            let f = if last { flags } else { dflags };
            let next = match openat(&dir, name, f, mode) {
                Err(e) if create && e.raw_os_error() == Some(libc::ENOENT) => {
                    // SAFETY: valid fd and name.
                    let r = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o777) };
                    if r < 0 {
                        let e = io::Error::last_os_error();
                        if e.raw_os_error() != Some(libc::EEXIST) {
                            return Err(e);
                        }
                    }
                    openat(&dir, name, f, mode)?
                }
                other => other?,
            };
            dir = next;
        }
        Ok(dir)
    }
}

fn suggest_near(path: &Path) -> String {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return String::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return format!(" (the folder {} does not exist either)", dir.display());
    };
    let lower = name.to_lowercase();
    let stem = lower.split('.').next().unwrap_or(&lower).to_string();
    let mut near: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        // `.git` is git's, never a file the model meant; a dot-file's empty stem matches
        // nothing (it used to match every name).
        .filter(|n| n != ".git")
        .filter(|n| {
            let l = n.to_lowercase();
            let their_stem = l.split('.').next().unwrap_or("");
            (!stem.is_empty() && l.contains(&stem))
                || (!their_stem.is_empty() && lower.contains(their_stem))
        })
        .take(5)
        .collect();
    near.sort();
    if near.is_empty() {
        String::new()
    } else {
        format!(" Did you mean: {}?", near.join(", "))
    }
}

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default()
}

/// Refuses to change an existing file the session has not read, or that changed since.
/// `now` is the stamp of the descriptor `current` was read from, taken before reading.
pub(crate) fn check_fresh(
    ctx: &ToolContext,
    path: &Path,
    now: &Stamp,
    current: &[u8],
) -> Result<(), String> {
    check_fresh_hashed(ctx, path, now, current, None)
}

/// [`check_fresh`] with the SHA-256 of `current` when the caller already has it.
fn check_fresh_hashed(
    ctx: &ToolContext,
    path: &Path,
    now: &Stamp,
    current: &[u8],
    hash: Option<[u8; 32]>,
) -> Result<(), String> {
    let Some(k) = ctx.knowledge(path) else {
        return Err(format!(
            "{} exists and has not been read in this session; read it first, then retry",
            path.display()
        ));
    };
    match verify_hashed(&k, now, || hash.unwrap_or_else(|| content_hash(current))) {
        Ok(()) => Ok(()),
        Err(Stale::Content) => Err(format!(
            "{} changed on disk since it was last read (by the user or another process); read it again before changing it",
            path.display()
        )),
        Err(Stale::Metadata) => Err(format!(
            "{} changed on disk since it was last read (its size, times or inode differ; only part of it was read, so the change cannot be ruled out); read it again before changing it",
            path.display()
        )),
    }
}

/// A new file's content written to a temporary file beside its target, in the target's
/// folder opened without following symlinks; [`Staged::commit`] renames it over the target
/// in that same folder (`renameat`), so the write is atomic and cannot be redirected.
pub struct Staged {
    dir: std::sync::Arc<OwnedFd>,
    tmp: CString,
    name: CString,
    pub path: PathBuf,
    /// The temporary file, open with an exclusive `flock` until the staged write ends: the
    /// kernel drops the lock when the process dies, which is how a sweep tells a killed
    /// write's leftover from a live one ([`clean_stale_temps`]). `None` past
    /// [`MAX_HELD_LOCKS`] staged files at once (the age grace of the sweep covers those).
    _held: Option<HeldLock>,
}

/// Staged writes that keep their lock open at once: a batch of thousands of files must not
/// run out of file descriptors (a 1024 limit is common).
const MAX_HELD_LOCKS: usize = 256;
static HELD_LOCKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One held temporary-file lock, counted against [`MAX_HELD_LOCKS`].
struct HeldLock(#[allow(dead_code)] std::fs::File);

impl HeldLock {
    fn take(f: &std::fs::File) -> Option<HeldLock> {
        use std::sync::atomic::Ordering::SeqCst;
        if HELD_LOCKS.fetch_add(1, SeqCst) >= MAX_HELD_LOCKS {
            HELD_LOCKS.fetch_sub(1, SeqCst);
            return None;
        }
        match f.try_clone() {
            Ok(c) => Some(HeldLock(c)),
            Err(_) => {
                HELD_LOCKS.fetch_sub(1, SeqCst);
                None
            }
        }
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        HELD_LOCKS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Staged {
    /// Puts the new content in place.
    pub fn commit(&self) -> Result<(), String> {
        // SAFETY: valid fd and NUL-terminated names.
        let r = unsafe {
            libc::renameat(
                self.dir.as_raw_fd(),
                self.tmp.as_ptr(),
                self.dir.as_raw_fd(),
                self.name.as_ptr(),
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            self.discard();
            return Err(format!(
                "cannot write {}: {e} (the file is unchanged)",
                self.path.display()
            ));
        }
        Ok(())
    }

    /// Removes the temporary file.
    pub fn discard(&self) {
        // SAFETY: valid fd and name; unlinkat never follows a symlink.
        unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.tmp.as_ptr(), 0) };
    }
}

/// The temporary name yuyao writes `name` through: `.<name>.yuyao-<12 hex>.tmp`.
fn temp_name(name: &str) -> String {
    format!(
        ".{name}.yuyao-{}.tmp",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// Whether `name` is one of yuyao's temporary names.
pub fn is_temp_name(name: &str) -> bool {
    yuyao_protocol::temp_names::is_temp_name(name)
}

/// Splits a resolved path into its folder (opened no-follow, created when missing) and its
/// file name.
fn open_parent(path: &Path, create: bool) -> Result<(OwnedFd, CString), String> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("{} is not a file path", path.display()));
    };
    let fd = nofollow::open_dir(dir, create).map_err(|e| open_error(dir, "writing", &e))?;
    let name =
        nofollow::cstr(name).map_err(|e| format!("bad file name {}: {e}", path.display()))?;
    Ok((fd, name))
}

/// Folders opened for staging, shared by the files of one batch: one descriptor per folder, so
/// a patch adding thousands of files in one folder neither opens it per file nor runs into the
/// open-file limit (1024 on many systems) while its temporary files wait for the renames.
#[derive(Default)]
pub struct StageDirs(std::collections::HashMap<PathBuf, std::sync::Arc<OwnedFd>>);

/// Writes `bytes` to a new temporary file beside `path` (a resolved path: same folder, so the
/// rename is atomic), with `path`'s permissions when it exists.
pub fn stage_temp(path: &Path, bytes: &[u8]) -> Result<Staged, String> {
    stage_temp_in(&mut StageDirs::default(), path, bytes)
}

/// [`stage_temp`] with the folder's descriptor taken from (or added to) `dirs`.
pub fn stage_temp_in(dirs: &mut StageDirs, path: &Path, bytes: &[u8]) -> Result<Staged, String> {
    use std::io::Write as _;
    let parent = path.parent().unwrap_or(Path::new(""));
    let (dir, name) = match dirs.0.get(parent) {
        Some(d) => {
            let name = path.file_name().unwrap_or_default();
            let name = nofollow::cstr(name)
                .map_err(|e| format!("bad file name {}: {e}", path.display()))?;
            (d.clone(), name)
        }
        None => {
            let (fd, name) = open_parent(path, true)?;
            let d = std::sync::Arc::new(fd);
            dirs.0.insert(parent.to_path_buf(), d.clone());
            (d, name)
        }
    };
    // What is there now, without following it.
    // SAFETY: a zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, name and out-pointer.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    let mode = if r == 0 {
        match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Some(st.st_mode & 0o7777),
            libc::S_IFLNK => {
                return Err(format!(
                    "{} became a symbolic link after it was checked; refusing to write through it",
                    path.display()
                ));
            }
            _ => {
                return Err(format!(
                    "{} is not a regular file; refusing to replace it",
                    path.display()
                ));
            }
        }
    } else {
        None
    };
    let shown = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file")
        .to_string();
    let tmp = nofollow::cstr(std::ffi::OsStr::new(&temp_name(&shown)))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let fd = nofollow::openat(
        &dir,
        &tmp,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
        0o666,
    )
    .map_err(|e| {
        format!(
            "cannot write {}: {e} (the file is unchanged)",
            path.display()
        )
    })?;
    let mut f = std::fs::File::from(fd);
    // SAFETY: valid fd. A lock that cannot be taken only costs the age grace of the sweep.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    let staged = Staged {
        dir,
        tmp,
        name,
        path: path.to_path_buf(),
        _held: HeldLock::take(&f),
    };
    let result = (|| -> std::io::Result<()> {
        f.write_all(bytes)?;
        if let Some(m) = mode {
            // Replacing existing content: make the new bytes durable before the rename, so
            // a crash cannot leave an empty file where the old one was. New files skip it.
            f.sync_all()?;
            // SAFETY: valid fd.
            if unsafe { libc::fchmod(f.as_raw_fd(), m) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(staged),
        Err(e) => {
            staged.discard();
            Err(format!(
                "cannot write {}: {e} (the file is unchanged)",
                path.display()
            ))
        }
    }
}

/// Writes atomically (temp file + `renameat` in the same folder fd), keeping the permissions.
/// `path` must be resolved: a symlink anywhere on it makes the write fail.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    stage_temp(path, bytes)?.commit()
}

/// Content from this size on is hashed on a second thread while it is being written.
const HASH_ALONGSIDE_FROM: usize = 1024 * 1024;

/// [`write_atomic`], then the session knows the file as these bytes (read-before-write for
/// the next edit, and the post-image's hash for the snapshot). The hash of a large content is
/// computed while the write and its fsync run, so it adds no time of its own.
pub fn write_known(ctx: &ToolContext, path: &Path, bytes: &[u8]) -> Result<(), String> {
    let hash = if bytes.len() < HASH_ALONGSIDE_FROM {
        write_atomic(path, bytes)?;
        content_hash(bytes)
    } else {
        std::thread::scope(|s| {
            let hashing = s.spawn(|| content_hash(bytes));
            let written = write_atomic(path, bytes);
            let hash = hashing.join().unwrap_or_else(|_| content_hash(bytes));
            written.map(|()| hash)
        })?
    };
    ctx.remember_digest(path, hash, true);
    Ok(())
}

/// Deletes a file (resolved path) without following a symlink on the way.
pub fn remove_file(path: &Path) -> Result<(), String> {
    let (dir, name) = open_parent(path, false)?;
    // SAFETY: valid fd and name; unlinkat removes the entry itself, never a link's target.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } < 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("cannot delete {}: {e}", path.display()));
    }
    Ok(())
}

/// How old an unlocked temporary file must be to count as left by a killed write: a live
/// write holds a `flock` on it from a moment after it is created until the rename (the
/// grace covers that moment).
pub const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether a live write holds the temporary file at `path` (its `flock`, which the kernel
/// drops when the writing process dies). A file that cannot be opened counts as held.
fn temp_in_use(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return true;
    };
    // SAFETY: valid fd; the lock is released when `f` closes.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) != 0 }
}

/// [`clean_stale_temps`] on a background thread (a session opening does not wait for it).
pub fn clean_stale_temps_later(root: PathBuf) {
    let _ = std::thread::Builder::new()
        .name("yuyao-temp-clean".into())
        .spawn(move || clean_stale_temps(&root, STALE_TEMP_AGE));
}

/// Removes yuyao's own temporary files (`.<name>.yuyao-<hex>.tmp`) left under `root` by a
/// write that was killed: no live write holds them and they are older than `min_age`.
/// Called when a session opens (before anything else for an unattended run).
/// Returns the files removed. Symlinks are not followed; `.git`, dependency and build
/// folders are skipped; the walk is bounded.
pub fn clean_stale_temps(root: &Path, min_age: std::time::Duration) -> Vec<PathBuf> {
    const SKIP: &[&str] = &[
        ".git",
        "node_modules",
        "target",
        ".venv",
        "venv",
        "__pycache__",
    ];
    let mut removed = Vec::new();
    let now = std::time::SystemTime::now();
    let walk = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .follow_links(false)
        .max_depth(Some(16))
        .filter_entry(|e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && e.file_name().to_str().is_some_and(|n| SKIP.contains(&n)))
        })
        .build();
    for entry in walk.filter_map(Result::ok).take(200_000) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(name) = entry.file_name().to_str() else {
            continue;
        };
        if !is_temp_name(name) {
            continue;
        }
        let old = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= min_age);
        if old
            && !temp_in_use(entry.path())
            && remove_file(&crate::resolve_path(entry.path())).is_ok()
        {
            removed.push(entry.path().to_path_buf());
        }
    }
    removed
}

impl Tool for Write {
    fn name(&self) -> &'static str {
        "write"
    }
    fn description(&self) -> &'static str {
        "Create a file or replace its whole content (an existing file must have been read first). Prefer edit to change a file."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": path_schema(),
                "content": {"type": "string"}
            },
            "required": ["file_path", "content"]
        })
    }
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        match args {
            ToolArgs::Write(a) => write(a, ctx).unwrap_or_else(ToolOutput::err),
            other => mismatched("write", other),
        }
    }
}

fn write(a: &WriteParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let content = &a.content;
    let path = ctx.resolve_for_write(&a.file_path)?;
    if path.is_dir() {
        return Err(format!(
            "{} is a directory; give a file path",
            path.display()
        ));
    }
    let existed = path.exists();
    if existed {
        read_current(ctx, &path)?.check_fresh(ctx, &path)?;
    }
    write_known(ctx, &path, content.as_bytes())?;
    let lines = content.lines().count();
    // Relative to the working directory, as grep shows paths: the result is sent on every
    // later request, and the model knows its directory.
    Ok(ToolOutput::ok(format!(
        "{} {} ({lines} line{}, {} bytes)",
        if existed { "Overwrote" } else { "Created" },
        crate::search::shown_path(&path, &ctx.cwd()),
        if lines == 1 { "" } else { "s" },
        content.len()
    )))
}

impl Tool for Edit {
    fn name(&self) -> &'static str {
        "edit"
    }
    fn description(&self) -> &'static str {
        "Replace old_string with new_string in a file: an exact match (whitespace included), unique unless replace_all. Read the file first; an empty old_string creates a missing or empty file."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": path_schema(),
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"}
            },
            "required": ["file_path", "old_string", "new_string"]
        })
    }
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        match args {
            ToolArgs::Edit(a) => {
                edit_file(ctx, &a.file_path, vec![edit_spec_of(a)]).unwrap_or_else(ToolOutput::err)
            }
            other => mismatched("edit", other),
        }
    }
}

/// The replacement an edit call asks for.
pub fn edit_spec_of(a: &EditParams) -> EditSpec {
    EditSpec {
        old: a.old_string.clone(),
        new: a.new_string.clone(),
        replace_all: a.replace_all.unwrap_or(false),
    }
}

/// The replacement one item of a multi-edit call asks for.
pub fn edit_item_spec(e: &EditItem) -> EditSpec {
    EditSpec {
        old: e.old_string.clone(),
        new: e.new_string.clone(),
        replace_all: e.replace_all.unwrap_or(false),
    }
}

/// Whether a file call would fail on its own preconditions (an existing file not read in this
/// session or changed since, an edit whose text is not there, an edit of a missing file), so
/// the user is never asked to approve a call that cannot run (seed 000 #7). `Ok` for other
/// tools; the tool checks again when it runs (the file may change between the two).
pub fn precheck(args: &ToolArgs, ctx: &ToolContext, path: &Path) -> Result<(), String> {
    let creates = match args {
        ToolArgs::Write(_) => true,
        ToolArgs::Edit(a) => a.old_string.is_empty(),
        ToolArgs::MultiEdit(_) | ToolArgs::NotebookEdit(_) => false,
        _ => return Ok(()),
    };
    if path.is_dir() {
        return Ok(());
    }
    if !path.exists() {
        if creates {
            return Ok(());
        }
        return Err(format!(
            "{} does not exist; create it with write (or edit with an empty old_string)",
            path.display()
        ));
    }
    let (current, stamp) = read_file_stamped(path)?;
    if creates && matches!(args, ToolArgs::Edit(_)) {
        // An empty old_string fills an empty file; the tool says why otherwise.
        return Ok(());
    }
    check_fresh(ctx, path, &stamp, &current)?;
    match args {
        ToolArgs::Edit(a) => apply_edits(&current, &[edit_spec_of(a)]).map(|_| ()),
        ToolArgs::MultiEdit(a) => {
            let specs: Vec<EditSpec> = a.edits.iter().map(edit_item_spec).collect();
            apply_edits(&current, &specs).map(|_| ())
        }
        _ => Ok(()),
    }
}

/// The content a write, edit or multi-edit call would leave in a file now holding `current`
/// (for the approval prompt's diff); `None` for other tools or an edit that does not apply.
pub fn preview(args: &ToolArgs, current: &[u8]) -> Option<Vec<u8>> {
    match args {
        ToolArgs::Write(a) => Some(a.content.as_bytes().to_vec()),
        ToolArgs::Edit(a) if a.old_string.is_empty() => Some(a.new_string.as_bytes().to_vec()),
        ToolArgs::Edit(a) => apply_edits(current, &[edit_spec_of(a)])
            .ok()
            .map(|(b, _)| b),
        ToolArgs::MultiEdit(a) => {
            let specs: Vec<EditSpec> = a.edits.iter().map(edit_item_spec).collect();
            apply_edits(current, &specs).ok().map(|(b, _)| b)
        }
        ToolArgs::NotebookEdit(a) => crate::notebook::preview(a, current).ok(),
        _ => None,
    }
}

impl Tool for MultiEdit {
    fn name(&self) -> &'static str {
        "multi-edit"
    }
    fn description(&self) -> &'static str {
        "Several exact replacements in one file, applied in order as one atomic operation: if any edit fails, nothing is written."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": path_schema(),
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_string": {"type": "string"},
                            "new_string": {"type": "string"},
                            "replace_all": {"type": "boolean", "default": false}
                        },
                        "required": ["old_string", "new_string"]
                    }
                }
            },
            "required": ["file_path", "edits"]
        })
    }
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        match args {
            ToolArgs::MultiEdit(a) => multi_edit(a, ctx).unwrap_or_else(ToolOutput::err),
            other => mismatched("multi-edit", other),
        }
    }
}

fn multi_edit(a: &MultiEditParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    if a.edits.is_empty() {
        return Err("edits is empty; give at least one edit".to_string());
    }
    let specs = a.edits.iter().map(edit_item_spec).collect();
    edit_file(ctx, &a.file_path, specs)
}

/// Validates every edit against the current content, then writes once.
fn edit_file(ctx: &ToolContext, raw: &str, specs: Vec<EditSpec>) -> Result<ToolOutput, String> {
    let path = ctx.resolve_for_write(raw)?;
    let exists = path.exists();
    // An empty old_string creates a missing or empty file.
    if specs.len() == 1 && specs[0].old.is_empty() {
        if specs[0].new.is_empty() {
            return Err(
                "old_string and new_string are both empty; nothing would change".to_string(),
            );
        }
        let current = if exists {
            read_file(&path)?
        } else {
            Vec::new()
        };
        if !current.is_empty() {
            return Err(format!(
                "{} is not empty; an empty old_string only creates a missing or empty file. Give the exact text to replace.",
                path.display()
            ));
        }
        write_known(ctx, &path, specs[0].new.as_bytes())?;
        return Ok(ToolOutput::ok(format!("Created {}", path.display())));
    }
    if !exists {
        return Err(format!(
            "{} does not exist; create it with write (or edit with an empty old_string)",
            path.display()
        ));
    }
    let current = read_current(ctx, &path)?;
    current.check_fresh(ctx, &path)?;
    let (next, counts) = apply_edits(&current.bytes, &specs)?;
    drop(current);
    write_known(ctx, &path, &next)?;
    let total: usize = counts.iter().sum();
    Ok(ToolOutput::ok(format!(
        "Edited {}: {} edit{} applied, {total} replacement{}",
        path.display(),
        counts.len(),
        if counts.len() == 1 { "" } else { "s" },
        if total == 1 { "" } else { "s" }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_pipe_or_a_device_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("trap");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t0 = std::time::Instant::now();
        let e = open_for_read(&fifo).unwrap_err();
        assert!(e.contains("named pipe"), "{e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
        let e = open_for_read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("a device"), "{e}");
        let f = dir.path().join("plain.txt");
        std::fs::write(&f, "x").unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(&mut open_for_read(&f).unwrap(), &mut s).unwrap();
        assert_eq!(s, "x");
    }

    #[test]
    fn stale_temp_files_of_our_pattern_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        let stale = root.join("a/b/.big.log.yuyao-0123456789ab.tmp");
        let other = root.join("a/.notes.yuyao-xyz.tmp");
        let mine = root.join("keep.tmp");
        for p in [&stale, &other, &mine] {
            std::fs::write(p, "x").unwrap();
        }
        assert!(is_temp_name(".big.log.yuyao-0123456789ab.tmp"));
        assert!(!is_temp_name(".notes.yuyao-xyz.tmp"));
        assert!(!is_temp_name("big.log.yuyao-0123456789ab.tmp"));
        // Fresh ones may belong to a live write: kept.
        assert!(clean_stale_temps(&root, std::time::Duration::from_secs(60)).is_empty());
        let removed = clean_stale_temps(&root, std::time::Duration::ZERO);
        assert_eq!(removed, vec![stale.clone()]);
        assert!(!stale.exists() && other.exists() && mine.exists());
        // A temp name made by yuyao is of the pattern.
        assert!(is_temp_name(&temp_name("x.txt")));
    }

    #[test]
    fn a_live_write_keeps_its_temp_and_a_dead_one_loses_it_at_any_age() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let staged = stage_temp(&root.join("out.txt"), b"new").unwrap();
        let temp = || {
            std::fs::read_dir(&root)
                .unwrap()
                .filter_map(Result::ok)
                .find(|e| is_temp_name(&e.file_name().to_string_lossy()))
                .map(|e| e.path())
        };
        let held = temp().expect("the staged temp file");
        // Held by this (live) writer: kept whatever its age.
        assert!(clean_stale_temps(&root, std::time::Duration::ZERO).is_empty());
        // The writer is gone (its lock with it) but not the file, as after `kill -9`.
        drop(staged);
        assert_eq!(temp(), Some(held.clone()));
        assert_eq!(
            clean_stale_temps(&root, std::time::Duration::ZERO),
            vec![held]
        );
        assert_eq!(temp(), None);
    }

    fn read_call(ctx: &ToolContext, args: serde_json::Value) -> ToolOutput {
        let args = ToolArgs::from_value("read", &args).unwrap();
        Read.run_args(&args, ctx, &CancellationToken::new())
    }

    /// A file last changed long enough ago for its stamp to vouch for it.
    fn settled(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
        std::thread::sleep(crate::freshness::RACY_WINDOW * 2);
    }

    #[test]
    fn read_pages_a_large_file_without_hashing_it() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let text: String = (1..=200_000).map(|i| format!("row {i}\n")).collect();
        settled(&root.join("huge.log"), &text);
        let ctx = ToolContext::new(root.clone(), root.clone(), root.join("spill"));
        let out = read_call(
            &ctx,
            json!({"file_path": "huge.log", "offset": "1", "limit": 5}),
        );
        assert!(out.ok, "{}", out.text);
        assert!(out.text.starts_with("1\trow 1\n2\trow 2\n"));
        assert!(out.text.contains("(lines 1–5 of about "), "{}", out.text);
        assert!(out.text.contains("continue with offset=6)"));
        let k = ctx.knowledge(&root.join("huge.log")).unwrap();
        assert_eq!(k.hash, None);
        assert!(!k.racy && !k.read_in_full);
        // The next page starts where this one ended; a far one is found by scanning.
        let next = read_call(
            &ctx,
            json!({"file_path": "huge.log", "offset": 6, "limit": 2}),
        );
        assert!(
            next.text.starts_with("6\trow 6\n7\trow 7\n"),
            "{}",
            next.text
        );
        let far = read_call(
            &ctx,
            json!({"file_path": "huge.log", "offset": 150_000, "limit": 1}),
        );
        assert!(far.text.starts_with("150000\trow 150000\n"), "{}", far.text);
        let end = read_call(&ctx, json!({"file_path": "huge.log", "offset": 199_999}));
        assert!(end.text.ends_with("200000\trow 200000\n"), "{}", end.text);
        let past = read_call(&ctx, json!({"file_path": "huge.log", "offset": 200_001}));
        assert!(past.text.contains("has 200000 lines"), "{}", past.text);
    }

    #[test]
    fn a_page_read_then_an_out_of_band_change_blocks_the_edit() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let path = root.join("huge.log");
        let text: String = (1..=200_000).map(|i| format!("row {i}\n")).collect();
        settled(&path, &text);
        let old_mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        let ctx = ToolContext::new(root.clone(), root.clone(), root.join("spill"));
        assert!(read_call(&ctx, json!({"file_path": "huge.log", "limit": 3})).ok);
        // Same size, same inode, mtime put back: only ctime tells.
        let changed = text.replacen("row 150000", "row 15000X", 1);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, changed.as_bytes()))
            .unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old_mtime)
            .unwrap();
        let edit = ToolArgs::from_value(
            "edit",
            &json!({"file_path": "huge.log", "old_string": "row 2\n", "new_string": "ROW 2\n"}),
        )
        .unwrap();
        let out = Edit.run_args(&edit, &ctx, &CancellationToken::new());
        assert!(
            !out.ok && out.text.contains("changed on disk"),
            "{}",
            out.text
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), changed);
        // Read again: the edit goes through, and edits after it need no new read.
        assert!(read_call(&ctx, json!({"file_path": "huge.log", "limit": 3})).ok);
        assert!(Edit.run_args(&edit, &ctx, &CancellationToken::new()).ok);
        let again = ToolArgs::from_value(
            "edit",
            &json!({"file_path": "huge.log", "old_string": "ROW 2\n", "new_string": "Row 2\n"}),
        )
        .unwrap();
        let out = Edit.run_args(&again, &ctx, &CancellationToken::new());
        assert!(out.ok, "{}", out.text);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .starts_with("row 1\nRow 2\n")
        );
    }

    #[test]
    fn a_racy_read_hashes_the_whole_file() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let text: String = (1..=200_000).map(|i| format!("row {i}\n")).collect();
        std::fs::write(root.join("fresh.log"), &text).unwrap();
        let ctx = ToolContext::new(root.clone(), root.clone(), root.join("spill"));
        let out = read_call(&ctx, json!({"file_path": "fresh.log", "limit": 2}));
        assert!(out.text.contains("(lines 1–2 of 200000;"), "{}", out.text);
        let k = ctx.knowledge(&root.join("fresh.log")).unwrap();
        assert!(k.racy);
        assert_eq!(k.hash, Some(content_hash(text.as_bytes())));
    }

    /// What the snapshot read just before the call, offered as the file's content.
    fn offer(ctx: &ToolContext, path: &Path, bytes: &[u8], racy: bool) {
        let read = crate::PreRead {
            stamp: Stamp::of_path(path).unwrap(),
            racy,
            bytes: std::sync::Arc::new(bytes.to_vec()),
            sha256: Some(content_hash(bytes)),
        };
        ctx.offer_pre_read(path, read);
    }

    fn edit_args(old: &str, new: &str) -> ToolArgs {
        ToolArgs::from_value(
            "edit",
            &json!({"file_path": "data.txt", "old_string": old, "new_string": new}),
        )
        .unwrap()
    }

    /// Seed 002 §3: the edit uses the bytes the snapshot read when the file still has the
    /// stamp they were read under, instead of reading it again. Shown with offered bytes that
    /// differ from the disk, which only a reuse can produce.
    #[test]
    fn an_edit_uses_the_bytes_read_for_its_snapshot_while_the_stamp_vouches() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let path = root.join("data.txt");
        settled(&path, "alpha\nbeta\n");
        let ctx = ToolContext::new(root.clone(), root.clone(), root.join("spill"));
        assert!(read_call(&ctx, json!({"file_path": "data.txt"})).ok);
        offer(&ctx, &path, b"alpha\nBETA\n", false);
        let out = Edit.run_args(&edit_args("BETA", "gamma"), &ctx, &CancellationToken::new());
        assert!(out.ok, "{}", out.text);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "alpha\ngamma\n");
        // Taken once: the next call reads the disk.
        assert!(ctx.take_pre_read(&path).is_none());
        // A racy stamp vouches for nothing: the disk is read.
        std::thread::sleep(crate::freshness::RACY_WINDOW * 2);
        offer(&ctx, &path, b"alpha\nDELTA\n", true);
        let out = Edit.run_args(&edit_args("DELTA", "x"), &ctx, &CancellationToken::new());
        assert!(!out.ok && out.text.contains("not found"), "{}", out.text);
    }

    /// A change behind the agent's back after the snapshot read the file (same size, mtime
    /// put back): the stamp no longer matches, the disk is read, and the stale check refuses.
    #[test]
    fn a_change_after_the_snapshot_read_still_blocks_the_edit() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let path = root.join("data.txt");
        settled(&path, "alpha\nbeta\n");
        let ctx = ToolContext::new(root.clone(), root.clone(), root.join("spill"));
        assert!(read_call(&ctx, json!({"file_path": "data.txt"})).ok);
        offer(&ctx, &path, b"alpha\nbeta\n", false);
        let old_mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"alpha\nBETA\n"))
            .unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old_mtime)
            .unwrap();
        let out = Edit.run_args(&edit_args("beta", "gamma"), &ctx, &CancellationToken::new());
        assert!(
            !out.ok && out.text.contains("changed on disk"),
            "{}",
            out.text
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "alpha\nBETA\n");
    }
}
